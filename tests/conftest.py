"""Fixtures shared by the test files."""
import pytest

from ember._src.config import config


@pytest.fixture
def check_compiled():
  """Every compiled call is also compared with the reference HLO evaluator (checked mode).
  Use with `pytestmark = pytest.mark.usefixtures("check_compiled")`."""
  with config._override("ember_check_compiled", True):
    yield

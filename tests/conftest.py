"""Fixtures shared by the test files."""
import os
import threading

import pytest

from ember._src.driver import compilation
from ember._src.base.config import config

# This thread's nice value before any test ran (so before ember's tier-up worker existed):
# the suite may run niced as a whole (`nice make test`).
_START_NICE = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else None


@pytest.fixture
def start_nice():
  """The nice value the test process started with."""
  return _START_NICE


@pytest.fixture
def two_core_cost_model(monkeypatch):
  """The cost model sees 2 threads (a CI runner's), whatever this host has: the tests of its
  tier decisions then hold on a many-core host too (on 13 cores the quick code of a
  3000x3000 module runs short enough to pay)."""
  from ember._src.backends.cpu import host   # (the backend loads with the first compile)
  monkeypatch.setattr(host, "num_threads", lambda: 2)


@pytest.fixture
def check_compiled():
  """Every compiled call is also compared with the reference HLO evaluator (checked mode).
  Use with `pytestmark = pytest.mark.usefixtures("check_compiled")`."""
  with config._override("ember_check_compiled", True):
    yield


@pytest.fixture
def cache(tmp_path):
  """A persistent compilation cache directory that caches every compile; the in-memory executable cache is
  cleared so each compile reaches the persistent cache."""
  names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
           "jax_persistent_cache_min_entry_size_bytes", "ember_persistent_cache_max_size_bytes",
           "jax_compilation_cache_max_size", "jax_compilation_cache_include_metadata_in_key",
           "jax_log_compiles", "jax_explain_cache_misses")
  old = {n: config.read(n) for n in names}
  config.update("jax_compilation_cache_dir", str(tmp_path))
  config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  compilation._executables.clear()
  yield tmp_path
  for n, v in old.items():
    config.update(n, v)
  compilation._executables.clear()


@pytest.fixture
def gate():
  """Occupy the executor thread until the yielded event is set: calls dispatched meanwhile
  are pending."""
  from ember._src.runtime import executor
  ev = threading.Event()
  p = executor.Pending()
  executor.get_executor().submit(lambda: (ev.wait(30), ())[1], p)
  yield ev
  ev.set()
  p.wait()

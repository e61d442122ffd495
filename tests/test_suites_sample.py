"""The JAX libraries' own test suites on ember (issue 32): a fixed sample of chex's, optax's,
flax's and equinox's tests must have the outcomes JAX 0.12 has (the whole suites: `make
test-ecosystem`, tests/suites/run.py, docs/ecosystem.md); and the harness itself: its outcome
plugin (a test that kills the interpreter is `crashed`) and its comparison with JAX's outcomes."""
import argparse
import textwrap

import pytest

from tests.suites import run


def _args(**kw):
  base = dict(sample=False, ids=None, workers="1", out=None, verbose=False)
  return argparse.Namespace(**{**base, **kw})


@pytest.mark.parametrize("name", sorted(run.SUITES))
def test_sample_of_suite_passes_as_on_jax(name):
  suite = run.SUITES[name]
  try:
    root = run.source_root(suite)  # equinox's tests are on GitHub only; make test-oldest has no libraries
  except run.SourceUnavailable as e:
    pytest.skip(str(e))
  c = run.check(suite, root, _args(sample=True), run.load_known())
  assert c.ran == len(run.sample(run.load_jax(suite)["outcomes"]))
  assert c.ok, f"{len(c.new)} tests pass on JAX and fail on ember:\n" + "\n".join(
      f"{t}: {m}" for t, m in sorted(c.new.items()))


def test_sample_is_fixed_and_a_part_of_the_passing_tests():
  outcomes = {f"a_test.py::T::test_{i}": "passed" if i % 3 else "failed" for i in range(600)}
  picked = run.sample(outcomes)
  assert picked == run.sample(dict(reversed(outcomes.items())))
  assert all(outcomes[t] == "passed" for t in picked)
  assert 0.5 * 400 / run.SAMPLE_EVERY < len(picked) < 2 * 400 / run.SAMPLE_EVERY


_TESTS = """
import os
import pytest

def test_passes(): pass
def test_fails(): assert 1 == 2, "one is not two"
def test_skips(): pytest.skip("not here")
@pytest.mark.xfail
def test_xfails(): assert False
@pytest.fixture
def broken(): raise RuntimeError("fixture broke")
def test_setup_error(broken): pass
def test_crashes_the_interpreter(): os.abort()
def test_uses_ember_as_jax():
  import jax
  assert jax.numpy.add(1, 2) == 3 and jax.jit.__module__.startswith("ember")
"""


def test_plugin_records_each_outcome_and_an_interpreter_crash(tmp_path):
  (tmp_path / "tests").mkdir()
  (tmp_path / "tests" / "some_test.py").write_text(textwrap.dedent(_TESTS))
  suite = run.Suite("toy", "0", "sdist", ("tests",))
  res = run.run_pytest(suite, str(tmp_path), ["tests"], on_ember=True, workers="1")
  got = {t.split("::")[1]: o for t, o in res["outcomes"].items()}
  assert got == {"test_passes": "passed", "test_fails": "failed", "test_skips": "skipped",
                 "test_xfails": "xfailed", "test_setup_error": "error",
                 "test_crashes_the_interpreter": "crashed", "test_uses_ember_as_jax": "passed"}
  messages = {t.split("::")[1]: m for t, m in res["messages"].items()}
  assert "one is not two" in messages["test_fails"]
  assert "crashed" in messages["test_crashes_the_interpreter"]


def test_compare_sorts_failures_into_new_and_known():
  jax = {"f.py::a": "passed", "f.py::b": "passed", "f.py::c": "passed", "f.py::d": "failed",
         "g.py::e": "passed", "h.py::f": "passed"}
  ember = {"outcomes": {"f.py::a": "passed", "f.py::b": "failed", "f.py::c": "failed",
                        "f.py::d": "passed", "g.py": "collect-error", "h.py::z": "passed"},
           "messages": {"f.py::b": "AssertionError: b", "f.py::c": "c", "g.py": "ImportError"}}
  c = run.compare(run.Suite("toy", "0", "sdist", ()), jax, ember, {"f.py::c": "open: c's cause"})
  assert (c.ran, c.jax_passed, c.both_passed) == (5, 4, 1)
  assert c.new == {"f.py::b": "AssertionError: b", "g.py::e": "ImportError"}
  assert c.known_failing == {"f.py::c": "open: c's cause"}
  assert c.ember_only == 2 and not c.ok


def test_a_suite_whose_library_is_not_the_pinned_version_is_unavailable():
  with pytest.raises(run.SourceUnavailable, match="pinned at 0.0.1"):
    run.source_root(run.Suite("pytest", "0.0.1", "wheel", ("pytest",)))


def test_known_failures_name_tests_jax_passes_with_a_reason():
  for name, failures in run.load_known().items():
    passing = {t for t, o in run.load_jax(run.SUITES[name])["outcomes"].items() if o == "passed"}
    for test_id, reason in failures.items():
      assert test_id in passing, f"{name}: {test_id} does not pass on JAX: not a known failure"
      assert reason.startswith(("open: ", "exception: ")) and len(reason) > 12, (test_id, reason)


def test_unknown_suite_is_a_usage_error():
  with pytest.raises(SystemExit, match="unknown suite"):
    run.main(["chexx"])

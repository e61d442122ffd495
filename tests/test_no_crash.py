"""No input crashes the process: the whole no-crash table (tests/no_crash_table.py, ~760
cases over every dtype, 0-size, scalar and rank-8 shapes) runs eagerly and under jit in child
processes (four shards, so the pytest workers share it), and every case's two results agree.
A crash (segfault, abort) or a hang fails the test naming the last case started, with the
child's fault traceback."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "no_crash_table.py")
TIMEOUT_S = 300   # the whole table; one case past no_crash_table.CASE_DEADLINE_S dumps stacks


def _run_table(*argv) -> tuple[subprocess.CompletedProcess, list[str]]:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [os.path.dirname(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                 if p]))
  env.pop("JAX_ENABLE_X64", None)
  try:
    r = subprocess.run([sys.executable, "-X", "faulthandler", TABLE, *argv], env=env,
                       capture_output=True, text=True, timeout=TIMEOUT_S)
  except subprocess.TimeoutExpired as e:
    out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
    started = [ln for ln in out.splitlines() if ln.startswith("START ")]
    pytest.fail(f"the no-crash table hung for {TIMEOUT_S} s in "
                f"{started[-1][6:] if started else 'startup'!r}")
  return r, r.stdout.splitlines()


SHARDS = 4   # the table in 4 child processes, so pytest-xdist spreads it over the workers


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_case_runs_eagerly_and_under_jit_with_the_same_result(shard):
  r, lines = _run_table(f"--shard={shard}/{SHARDS}")
  started = [ln[6:] for ln in lines if ln.startswith("START ")]
  if r.returncode != 0 or not any(ln.startswith("DONE ") for ln in lines):
    pytest.fail(f"the no-crash table died or hung (exit status {r.returncode}) in case "
                f"{started[-1] if started else '(before the first case)'!r}:\n"
                f"{r.stderr[-6000:]}")
  mismatches = [ln for ln in lines if ln.startswith("MISMATCH ")]
  assert not mismatches, "eager and jit disagree:\n" + "\n".join(mismatches)
  fixed = [ln[6:] for ln in lines if ln.startswith("FIXED ")]
  assert not fixed, f"known disagreements now agree: remove their `known=` marker: {fixed}"
  assert len(started) >= 300 // SHARDS, f"only {len(started)} cases ran"


def test_a_crash_is_reported_with_the_case_that_caused_it(tmp_path):
  """The harness itself: a case that kills the process is named by the last START line."""
  script = tmp_path / "crash.py"
  script.write_text(
      "import os, signal, sys\n"
      f"sys.path.insert(0, {HERE!r})\n"
      "import no_crash_table as t\n"
      "t.CASES[:] = [t.Case('fine', lambda: 1, ()),\n"
      "              t.Case('boom', lambda: os.kill(os.getpid(), signal.SIGSEGV), ())]\n"
      "t.main([])\n")
  env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
  r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                     timeout=120)
  assert r.returncode != 0
  started = [ln[6:] for ln in r.stdout.splitlines() if ln.startswith("START ")]
  assert started == ["fine", "boom"]
  assert "Fatal Python error" in r.stderr   # faulthandler's report of the crash

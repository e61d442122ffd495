"""runtime_cache.once: the builders of the process's runtime functions (the thread pool, the
BLAS chunk runner, the loop driver, the cache-hit prologue) run once even when several
threads ask at the same moment. Before, `functools.cache` let each of them build a copy; the
copies that lost the race were freed with their engines while code they had handed out (a
step table's runner) was still called: 4 devices' first calls on a 13-core machine crashed
(segfault) one run in two."""
import os
import subprocess
import sys
import textwrap
import threading
import time

from ember._src.backends.cpu import runtime_cache


def results_of_callers_arriving_together(fn, n: int = 8) -> list:
  """fn() called by `n` threads released at the same moment: their results."""
  got, start = [], threading.Barrier(n)

  def caller():
    start.wait()
    got.append(fn())

  threads = [threading.Thread(target=caller) for _ in range(n)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  return got


def test_once_runs_the_builder_once_for_callers_arriving_together():
  calls = []

  @runtime_cache.once
  def build():
    calls.append(1)
    time.sleep(0.05)          # long enough for every thread to arrive while it runs
    return object()

  got = results_of_callers_arriving_together(build)
  assert len(calls) == 1
  assert len(got) == 8 and all(g is got[0] for g in got)
  assert build() is got[0]


def test_a_failed_build_is_tried_again():
  attempts = []

  @runtime_cache.once
  def build():
    attempts.append(1)
    if len(attempts) == 1:
      raise RuntimeError("no target")
    return "built"

  try:
    build()
  except RuntimeError:
    pass
  assert build() == "built" and build() == "built" and len(attempts) == 2


def test_the_runtime_builders_give_every_thread_the_same_copy():
  """In a fresh process (nothing built yet), 8 threads ask each builder at once."""
  code = textwrap.dedent("""
      from ember._src.backends.cpu import blas_pool, control_flow, executable, threadpool
      from test_runtime_once import results_of_callers_arriving_together
      for build in [threadpool._native, blas_pool._native, blas_pool._gram_native,
                    control_flow._driver, executable._hit_prologue]:
        got = results_of_callers_arriving_together(build)
        assert len(got) == 8 and all(g is got[0] for g in got), build.__name__
      print("ok")
  """)
  here = os.path.dirname(os.path.abspath(__file__))
  env = dict(os.environ, EMBER_RUNTIME_CACHE_DIR="",   # compile: the widest race window
             PYTHONPATH=os.pathsep.join([here, os.path.dirname(here),
                                         os.environ.get("PYTHONPATH", "")]))
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
  assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]

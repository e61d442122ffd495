"""Concurrency under load: threads calling, tracing and running eagerly at once while
tier-ups, persistent-cache writes and clear_caches happen (tests/stress_worker.py), in two
processes sharing one cache directory; plus the pieces it relies on, tested directly:
per-thread tracing state and one overall deadline in `tiering.wait_idle`."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src import core
from ember._src.core import trace as trace_lib
from ember._src.base import flags, persistent_cache
from ember._src.backends.cpu import tiering

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "stress_worker.py")
HANG_S = 120   # the worker's own deadline (stacks dumped); the parent waits a little longer


def _env():
  path = [os.path.dirname(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                                    if p]
  # a small cap on the cache directory: entries are evicted while the other process reads
  return dict(os.environ, PYTHONPATH=os.pathsep.join(path),
              EMBER_PERSISTENT_CACHE_MAX_SIZE_BYTES=str(400_000))


def test_two_processes_of_threads_share_one_cache_dir(tmp_path):
  cache = tmp_path / "cache"
  procs = [subprocess.Popen([sys.executable, WORKER, "--cache-dir", str(cache), "--seconds", "4",
                             "--seed", str(seed), "--deadline", str(HANG_S)],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
           for seed in (1, 2)]
  results = []
  for p in procs:
    try:
      out, err = p.communicate(timeout=HANG_S + 30)
    except subprocess.TimeoutExpired:
      p.kill()
      out, err = p.communicate()
      pytest.fail(f"stress worker hung past its own deadline:\n{out[-3000:]}\n{err[-6000:]}")
    results.append((p.returncode, out, err))
  for rc, out, err in results:
    assert rc == 0, f"stress worker exited with {rc}:\n{out[-6000:]}\n{err[-6000:]}"
    assert out.splitlines()[-1].startswith("OK "), out[-3000:]
  if flags.get().tiered_compilation:   # (EMBER_FLAGS may turn it off)
    assert any(int(out.split("tier_ups=")[1]) > 0 for _, out, _ in results), \
        "no tier-up happened: the stress run did not exercise the background compiler"
  names = os.listdir(cache)
  assert not [n for n in names if n.startswith(persistent_cache._TMP_PREFIX)], names
  entries = [n for n in names if n.startswith("jit_")]
  assert entries, "no persistent cache entry was written"
  for n in entries:   # whatever the two processes left is whole
    assert persistent_cache.read_entry(str(cache / n)) is not None, n


def test_eager_ops_in_one_thread_while_another_traces():
  """The trace stack is per thread: an op run eagerly in one thread while another thread is
  inside a jit trace stays eager (it used to be staged into the other thread's jaxpr)."""
  inside, release = threading.Event(), threading.Event()
  got = {}

  def traced(x):
    inside.set()
    release.wait(30)
    return x * 2

  t = threading.Thread(target=lambda: got.setdefault("jit", ember.jit(traced)(np.ones(3))))
  t.start()
  try:
    assert inside.wait(30)
    y = jnp.cos(np.zeros(3, np.float32)) + 1
    jaxpr = ember.make_jaxpr(lambda v: v + 1)(1.0)
    with ember.named_scope("mine"):
      scope = core.current_source_info().name_stack
  finally:
    release.set()
    t.join(30)
  assert not isinstance(y, core.Tracer)
  np.testing.assert_array_equal(np.asarray(y), [2.0, 2.0, 2.0])
  assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = add a 1.0:f32[] in (b,) }"
  assert scope == ("mine",)
  np.testing.assert_array_equal(np.asarray(got["jit"]), [2.0, 2.0, 2.0])


def test_a_new_thread_starts_at_the_eval_trace():
  seen = []

  def inner(x):
    th = threading.Thread(target=lambda: seen.append(
        (len(trace_lib.trace_stack), trace_lib.dynamic_trace)))
    th.start()
    th.join()
    return x + 1

  ember.make_jaxpr(inner)(1.0)
  assert seen == [(1, None)]


class _SlowTierUp:
  """A tier-up that finishes 1.5 s (of a fake clock) after it is first waited for."""

  def __init__(self, clock):
    self.clock, self.waits, self.done = clock, [], False

  def is_set(self):
    return self.done

  def wait(self, timeout):
    self.waits.append(timeout)
    self.done = timeout is None or timeout >= 1.5
    self.clock[0] += 1.5 if self.done else timeout
    return self.done


class _Exe:
  def __init__(self, clock):
    self.tier_up_pending = self.tier_up_settled = _SlowTierUp(clock)


def test_wait_idle_has_one_deadline_for_all_tier_ups(monkeypatch):
  clock = [100.0]
  monkeypatch.setattr(tiering, "time", type("FakeTime", (), {
      "monotonic": staticmethod(lambda: clock[0]), "perf_counter": staticmethod(lambda: clock[0])}))
  exes = [_Exe(clock) for _ in range(5)]
  monkeypatch.setattr(tiering, "_outstanding", set(exes))
  assert tiering.wait_idle(timeout=2.0) is False   # 5 x 1.5 s of work does not fit in 2 s
  assert clock[0] == 102.0          # it gave up at the deadline (not 2 s per tier-up)
  assert sum(len(e.tier_up_pending.waits) for e in exes) == 2
  assert tiering.wait_idle(timeout=None) is True    # no deadline: waits for all of them
  assert all(e.tier_up_pending.done for e in exes)


def test_memory_profile_while_another_thread_builds_tuples():
  """device_memory_profile used to list every gc-tracked object (gc.get_objects), among
  them a tuple another thread was still building from a generator: that thread then raised
  SystemError (CPython grows such a tuple in place only while it holds the sole reference)."""
  keep = [jnp.ones(3), ember.jit(lambda x: x * 2)(np.ones(4, np.float32))]
  stop, errors = threading.Event(), []

  def build_tuples():
    try:
      while not stop.is_set():
        tuple(i for i in range(200))
    except SystemError as e:
      errors.append(e)

  interval = sys.getswitchinterval()
  sys.setswitchinterval(1e-5)   # switch threads often: inside the generator, mid-tuple
  t = threading.Thread(target=build_tuples)
  t.start()
  try:
    for _ in range(20):
      ember.profiler.device_memory_profile()
  finally:
    stop.set()
    t.join(30)
    sys.setswitchinterval(interval)
  assert errors == []
  from ember._src.runtime.profiler import memory
  live = memory._live_arrays()
  assert all(any(a is k for a in live) for k in keep)

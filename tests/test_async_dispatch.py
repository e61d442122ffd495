"""Asynchronous dispatch (seed 002 §2.7): readiness, implicit sync points, the repr rule,
error propagation, FIFO order, back-pressure, the sync switch and thread safety."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.runtime import executor
from ember._src.core.array import Array

N = 600  # a 600x600 f32 matmul chain takes tens of ms: still running right after dispatch


@pytest.fixture
def mats():
  rng = np.random.default_rng(0)
  m = (rng.standard_normal((N, N)) / np.sqrt(N)).astype(np.float32)
  return m, jnp.asarray(m)


@ember.jit
def _heavy(m):
  for _ in range(6):
    m = jnp.tanh(m @ m)
  return m


def _heavy_np(m):
  m = m.astype(np.float64)
  for _ in range(6):
    m = np.tanh(m @ m)
  return m


def test_readiness_and_block_until_ready(mats, gate):
  m, x = mats
  r = _heavy(x)
  assert not r.is_ready()
  assert r.shape == (N, N) and r.dtype == np.float32 and not r.weak_type  # no wait needed
  assert not r.is_ready()
  gate.set()
  assert r.block_until_ready() is r and r.is_ready()
  np.testing.assert_allclose(np.asarray(r), _heavy_np(m), rtol=1e-4, atol=1e-5)


SYNC_OPS = {
    "item": lambda r: r[0, 0].item(),
    "float": lambda r: float(r[0, 0]),
    "asarray": lambda r: np.asarray(r),
    "bool": lambda r: bool(r[0, 0] > 0),
    "tolist": lambda r: r[:2, :2].tolist(),
    "int": lambda r: int(r[0, 0] > 0),
}


@pytest.mark.parametrize("op", SYNC_OPS)
def test_implicit_sync_points(mats, gate, op):
  m, x = mats
  r = _heavy(x)
  assert not r.is_ready()
  gate.set()
  SYNC_OPS[op](r)
  assert r.is_ready()


@pytest.mark.parametrize("direct", [True, False])
def test_implicit_sync_of_a_direct_output(gate, direct):
  f = ember.jit(lambda a: (a * 2.0, a.sum()))
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  f(x)  # compiled
  big = np.ones((300, 300), np.float32)  # too big for the inline path
  y, s = f(big)
  assert not y.is_ready() and not s.is_ready()
  gate.set()
  if direct:
    assert s.item() == 90000.0 and y.is_ready()  # one call fills all its outputs
  else:
    np.testing.assert_array_equal(np.asarray(y), big * 2)
  assert float(s) == 90000.0 and s.weak_type is False


def test_repr_rule(mats, gate):
  m, x = mats
  big = _heavy(x)                                        # 600*600*4 bytes >= 1 MiB
  small = ember.jit(lambda a: _heavy(a)[:2, :2])(x)      # 16 bytes
  assert repr(big) == f"Array(shape=({N}, {N}), dtype=float32)"
  assert not big.is_ready()                              # repr did not wait
  gate.set()
  s = repr(small)
  assert small.is_ready() and s.startswith("Array([[") and s.endswith("dtype=float32)")
  np.testing.assert_allclose(np.asarray(small), _heavy_np(m)[:2, :2], rtol=1e-4, atol=1e-5)


def test_repr_threshold_is_one_mib(gate):
  f = ember.jit(lambda a: a + 1)
  below = f(np.zeros((1 << 18) - 1, np.float32))  # 1 MiB - 4 bytes: prints values
  at = f(np.zeros(1 << 18, np.float32))           # exactly 1 MiB: shape and dtype only
  assert repr(at) == "Array(shape=(262144,), dtype=float32)" and not at.is_ready()
  gate.set()
  assert repr(below).startswith("Array([1., 1., 1., ...") and below.is_ready()


class _Boom(RuntimeError):
  pass


Failed = ember.errors.JaxRuntimeError  # JAX 0.12: a failure while running raises this class


def _failing_compiled(monkeypatch, f, *args):
  comp = f.lower(*args).compile()

  class Failing:
    def __getattr__(self, name):
      return getattr(real, name)

    def execute(self, np_args):
      raise _Boom("kernel failed: out of cheese")
  real = comp._computation.executable
  monkeypatch.setattr(comp._computation, "executable", Failing())
  return comp


@pytest.mark.parametrize("wait", ["block", "asarray", "item", "repr", "pytree", "other_output"])
def test_error_surfaces_at_the_wait(monkeypatch, wait):
  f = ember.jit(lambda a: (a + 1.0, a.sum()))
  x = np.ones((4, 4), np.float32)
  comp = _failing_compiled(monkeypatch, f, x)
  y, s = comp(x)  # no error at dispatch
  ops = {"block": lambda: y.block_until_ready(), "asarray": lambda: np.asarray(y),
         "item": lambda: y[0, 0].item(), "repr": lambda: repr(y),
         "pytree": lambda: ember.block_until_ready({"a": [y], "n": 3}),
         "other_output": lambda: float(s)}
  with pytest.raises(Failed, match="out of cheese"):
    ops[wait]()
  with pytest.raises(Failed, match="out of cheese"):  # and again at every later wait
    y.block_until_ready()
  assert y.is_ready()  # finished (with an error)


def _aot(fun, x):
  """A compiled function (`jit(f).lower(x).compile()`): its call dispatches straight away,
  also when an argument is still pending."""
  return ember.jit(fun).lower(x).compile()


def test_error_propagates_to_dependent_calls_and_spares_others(monkeypatch, gate):
  x = np.ones((300, 300), np.float32)
  g = _aot(lambda a: a * 3.0, x)
  comp = _failing_compiled(monkeypatch, ember.jit(lambda a: a - 1.0), x)
  bad = comp(x)
  downstream = g(bad)  # consumes the failed output: fails with the same error
  fine = g(x)
  gate.set()
  with pytest.raises(Failed, match="out of cheese"):
    downstream.block_until_ready()
  np.testing.assert_array_equal(np.asarray(fine), 3 * x)


def test_error_in_another_thread_is_raised_in_the_waiting_thread(monkeypatch):
  x = np.ones((4,), np.float32)
  comp = _failing_compiled(monkeypatch, ember.jit(lambda a: a + 2.0), x)
  y = comp(x)
  caught = []

  def waiter():
    try:
      y.block_until_ready()
    except Failed as e:
      caught.append((str(e), type(e.__cause__)))
  t = threading.Thread(target=waiter)
  t.start()
  t.join()
  assert caught == [("INTERNAL: running jit__lambda failed: _Boom: kernel failed: out of cheese",
                     _Boom)]


def test_fifo_order_with_chained_calls(gate):
  x = np.zeros((300, 300), np.float32)
  inc, dbl = _aot(lambda a: a + 1.0, x), _aot(lambda a: a * 2.0, x)
  v = jnp.asarray(x)
  expect = x.astype(np.float64)
  chain = []
  for i in range(20):  # all queued behind the gate, each consuming the previous pending output
    v = (inc if i % 2 else dbl)(v)
    expect = expect + 1.0 if i % 2 else expect * 2.0
    chain.append(v)
  assert not any(a.is_ready() for a in chain)
  gate.set()
  np.testing.assert_array_equal(np.asarray(v), expect)
  assert all(a.is_ready() for a in chain)


def test_chained_jitted_calls():
  inc = ember.jit(lambda a: a + 1.0)
  dbl = ember.jit(lambda a: a * 2.0)
  v, expect = jnp.zeros((300, 300)), np.zeros((300, 300))
  for i in range(10):
    v = (inc if i % 2 else dbl)(v)
    expect = expect + 1.0 if i % 2 else expect * 2.0
  np.testing.assert_array_equal(np.asarray(v), expect)


def test_block_until_ready_function():
  with pytest.raises(TypeError, match="missing 1 required positional argument"):
    ember.block_until_ready()
  f = ember.jit(lambda a: a @ a)
  x = np.eye(300, dtype=np.float32)
  tree = {"a": f(x), "b": [f(x)[0]], "step": 7}
  assert ember.block_until_ready(tree) is tree and tree["step"] == 7
  assert all(leaf.is_ready() for leaf in ember.tree_util.tree_leaves(tree)
             if isinstance(leaf, Array))


def test_back_pressure_bounds_calls_in_flight():
  ex = executor.Executor("test", max_in_flight=3)
  release = threading.Event()
  started = threading.Semaphore(0)
  seen = []

  def slow(i):
    def run():
      started.release()
      release.wait(30)
      seen.append(i)
      return ()
    return run

  pendings = [executor.Pending() for _ in range(8)]
  submitted = []

  def producer():
    for i, p in enumerate(pendings):
      ex.submit(slow(i), p)
      submitted.append(i)
  t = threading.Thread(target=producer)
  t.start()
  assert started.acquire(timeout=30)  # the first call is running ...
  for _ in range(3000):
    if len(submitted) == 3:
      break
    time.sleep(0.01)
  t.join(0.2)
  assert t.is_alive() and len(submitted) == 3 and ex.in_flight() == 3  # ... the 4th blocks
  release.set()
  t.join(30)
  for p in pendings:
    p.wait()
  assert seen == list(range(8)) and ex.in_flight() == 0
  ex.shutdown()


def test_default_bound():
  assert executor.get_executor().max_in_flight == executor.MAX_IN_FLIGHT > 0


def test_sync_mode_switch(mats):
  m, x = mats
  with ember.config._override("jax_cpu_enable_async_dispatch", False):
    r = _heavy(x)
    assert r.is_ready()  # ran in the call
    comp = ember.jit(lambda a: a + 1.0).lower(x).compile()
    real = comp._computation.executable

    class Failing:
      def execute(self, np_args):
        raise _Boom("sync failure")
    comp._computation.executable = Failing()
    try:
      with pytest.raises(Failed, match="sync failure"):  # synchronous: raised by the call
        comp(x)
    finally:
      comp._computation.executable = real
  np.testing.assert_allclose(np.asarray(r), _heavy_np(m), rtol=1e-4, atol=1e-5)


def test_numpy_argument_is_copied_at_dispatch(gate):
  f = ember.jit(lambda a: a * 1.0)
  x = np.ones((300, 300), np.float32)
  y = f(x)
  x[:] = 5.0  # mutating the caller's array after the call does not change the result
  gate.set()
  np.testing.assert_array_equal(np.asarray(y), np.ones((300, 300)))


def test_eager_ops_are_synchronous_and_wait_for_inputs(gate):
  f = ember.jit(lambda a: a + 1.0)
  y = f(np.zeros((300, 300), np.float32))
  assert not y.is_ready()
  gate.set()
  z = jnp.sin(y)  # eager: waits for y, returns a ready array
  assert y.is_ready() and z.is_ready()
  np.testing.assert_allclose(np.asarray(z), np.sin(np.ones((300, 300))), rtol=1e-6)


def test_small_calls_on_idle_executor_match_async_semantics(monkeypatch):
  f = ember.jit(lambda a: a * 2.0)
  x = np.arange(3, dtype=np.float32)
  y = f(x)
  assert y.weak_type is False and y.dtype == np.float32
  np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0])
  s = ember.jit(lambda: 1.0)()  # weak-typed scalar output
  assert s.weak_type is True and float(s) == 1.0


def test_threads_calling_one_jitted_function():
  f = ember.jit(lambda a, b: jnp.tanh(a @ b) + 1.0)
  rng = np.random.default_rng(1)
  inputs = [(rng.standard_normal((64, 64)).astype(np.float32),
             rng.standard_normal((64, 64)).astype(np.float32)) for _ in range(6)]
  f(*inputs[0]).block_until_ready()
  errors, results = [], {}

  def worker(k):
    try:
      a, b = inputs[k]
      outs = [f(a, b) for _ in range(15)]
      chained = f(outs[-1], b)  # a pending argument from this thread
      results[k] = (outs, chained)
    except Exception as e:  # noqa: BLE001
      errors.append(e)
  threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors
  for k, (outs, chained) in results.items():
    a, b = (v.astype(np.float64) for v in inputs[k])
    want = np.tanh(a @ b) + 1.0
    for o in outs:
      np.testing.assert_allclose(np.asarray(o), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(chained), np.tanh(want @ b) + 1.0, rtol=1e-4, atol=1e-4)


def test_threads_waiting_on_one_pending_array(gate):
  y = ember.jit(lambda a: a + 1.0)(np.zeros((300, 300), np.float32))
  got = []
  threads = [threading.Thread(target=lambda: got.append(float(y[0, 0]))) for _ in range(4)]
  for t in threads:
    t.start()
  gate.set()
  for t in threads:
    t.join()
  assert got == [1.0] * 4


def test_runtime_error_is_jax_runtime_error(monkeypatch):
  """JAX 0.12 raises jax.errors.JaxRuntimeError (a RuntimeError) for a failure while running;
  ember keeps the original exception as its __cause__."""
  assert issubclass(Failed, RuntimeError)
  x = np.ones((3,), np.float32)
  comp = _failing_compiled(monkeypatch, ember.jit(lambda a: a * 3.0), x)
  with pytest.raises(Failed) as info:
    comp(x).block_until_ready()
  assert str(info.value).startswith("INTERNAL: ")
  assert isinstance(info.value.__cause__, _Boom)


def test_small_calls_from_many_threads():
  """Small calls run inline on the calling threads, concurrently: each either takes the
  executable's cached frame or builds its own."""
  f = ember.jit(lambda a, k: jnp.sin(a) * k + a)
  xs = [np.full((5,), float(t), np.float32) for t in range(8)]
  f(xs[0], 1.0)
  errors, results = [], {}

  def worker(t):
    try:
      results[t] = [np.asarray(f(xs[t], float(i))) for i in range(100)]
    except Exception as e:  # noqa: BLE001 -- reported below
      errors.append(e)
  threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
  for th in threads:
    th.start()
  for th in threads:
    th.join()
  assert not errors
  for t, outs in results.items():
    x = xs[t].astype(np.float64)
    for i, o in enumerate(outs):
      np.testing.assert_allclose(o, np.sin(x) * i + x, rtol=1e-6, atol=1e-6)


def _wait_child(pid, timeout=60.0) -> int:
  deadline = time.monotonic() + timeout
  while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
      return os.waitstatus_to_exitcode(status)
    if time.monotonic() > deadline:
      os.kill(pid, signal.SIGKILL)
      os.waitpid(pid, 0)
      pytest.fail("the forked child hung")
    time.sleep(0.02)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_does_not_hang_on_the_parents_executor(gate):
  f = ember.jit(lambda a: a * 2.0)
  big = np.ones((300, 300), np.float32)
  y = f(big)                             # queued behind the gate: pending in the parent
  assert not y.is_ready()
  pid = os.fork()
  if pid == 0:                           # the child: exit codes say what happened
    code = 3
    try:
      try:
        y.block_until_ready()
        code = 1                         # the parent's pending call cannot finish here
      except RuntimeError as e:
        code = 2 if "fork" not in str(e) else 4
      if code == 4:
        z = f(big * 3)                   # a fresh executor in the child runs new calls
        code = 0 if np.array_equal(np.asarray(z), big * 6) else 5
    finally:
      os._exit(code)
  gate.set()
  assert _wait_child(pid) == 0
  np.testing.assert_array_equal(np.asarray(y), big * 2)   # the parent's call is unaffected


def test_hit_path_keys_tell_signatures_apart():
  """The hit path's flat keys (structure, leaf types, trace config, static values) pick the
  same compiled signature the full CacheKey would."""
  import functools

  @functools.partial(ember.jit, static_argnums=1)
  def scale(x, k, bias=0.0):
    return x * k + bias
  x = jnp.arange(3.0)
  for _ in range(2):                                    # second round: all hits
    for k in (1, 2, 1, 3.5):
      np.testing.assert_allclose(np.asarray(scale(x, k)), np.arange(3.0) * k)
    np.testing.assert_allclose(np.asarray(scale(x, 2, bias=1.0)), np.arange(3.0) * 2 + 1)
    np.testing.assert_allclose(np.asarray(scale(np.arange(3.0), 2)), np.arange(3.0) * 2)
  assert scale(x, 2).dtype == np.float32 and not scale(x, 2).weak_type
  with ember.enable_x64():                              # config is part of the key
    y = scale(np.arange(3.0), 2)
    assert y.dtype == np.float64
  assert scale(np.arange(3.0), 2).dtype == np.float32
  f = ember.jit(lambda t, s: {"a": t["a"] + s, "b": [v * s for v in t["b"]]})
  t = {"a": jnp.ones(2), "b": [jnp.ones(2), jnp.full(2, 2.0)]}
  for s in (1.0, 2, True, 1.0):                         # weak float / int / bool scalars
    out = f(t, s)
    np.testing.assert_allclose(np.asarray(out["b"][1]), np.full(2, 2.0 * s))
    assert out["a"].dtype == np.float32
  assert f({"a": jnp.ones(3), "b": []}, 1.0)["b"] == []  # another structure, another entry
  ember.clear_caches()
  np.testing.assert_allclose(np.asarray(scale(x, 2)), np.arange(3.0) * 2)
  with pytest.raises(TypeError, match="Non-hashable static arguments"):
    scale(x, [2])


def test_interpreter_exits_while_a_daemon_thread_keeps_dispatching():
  # atexit shuts the executor down; later calls from the still-running daemon thread run in
  # that thread instead of starting a new worker (which used to make exit hang on join)
  import subprocess
  import sys
  code = """
import threading, numpy as np, ember, ember.numpy as jnp
f = ember.jit(lambda x: jnp.sin(x) * 2 + 1)
x = np.ones((256, 256), np.float32)
f(x).block_until_ready()
started = threading.Event()
def loop():
  while True:
    f(x)
    started.set()
threading.Thread(target=loop, daemon=True).start()
started.wait()
"""
  for _ in range(3):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()[-2000:]

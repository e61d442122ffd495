"""The cache-hit path of a jitted call (driver/jit.py `_fast_key`, driver/dispatch.py `hit_runner`,
executable.py `execute_direct`): a small call on ready Arrays runs inline with one direct
kernel call. Results must equal NumPy's, and every condition the fast path checks (deleted,
pending or non-contiguous inputs, donation, a busy executor, the sync switch, checked mode,
x64, disable_jit, a tier-up) must still give the general path's behaviour. The native
builtin made in front of this path after a few hits is kept out (its tests:
test_native_hit.py)."""
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.driver import check_compiled, jit as jit_mod
from ember._src.backends.cpu import executable as exe_mod
from ember._src.base.errors import JaxRuntimeError
from ember._src.core import array as array_mod
from ember._src.runtime import executor
from ember._src.core.array import Array


@pytest.fixture(autouse=True)
def python_path(monkeypatch):
  """These tests are of the Python hit path: no native builtin (test_native_hit.py) is made
  in front of it."""
  monkeypatch.setattr(jit_mod, "NATIVE_TRIES", 0)


@pytest.fixture
def direct(monkeypatch):
  """Counts the calls that took the direct path (patched before the jitted functions of a
  test make their hit runners, which bind the method)."""
  calls = []
  real = exe_mod.Executable.execute_direct

  def counting(self, addrs):
    out = real(self, addrs)
    calls.append(out is not None)
    return out
  monkeypatch.setattr(exe_mod.Executable, "execute_direct", counting)
  return calls


def _arr(x):
  return jnp.asarray(np.asarray(x))


CASES = [  # (name, function, NumPy reference, argument arrays)
    ("add1_f32", lambda x: x + 1, lambda x: x + 1, [np.arange(3, dtype=np.float32)]),
    ("scalar", lambda x: x * 2.5, lambda x: x * 2.5, [np.array(3.0, np.float32)]),
    ("3d_bcast", lambda x, y: x * y - 1, lambda x, y: x * y - 1,
     [np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.arange(4, dtype=np.float32)]),
    ("int32", lambda x, y: x * y + 7, lambda x, y: x * y + 7,
     [np.arange(6, dtype=np.int32), np.full(6, -3, np.int32)]),
    ("bool", lambda x, y: x & ~y, lambda x, y: x & ~y,
     [np.array([True, False, True]), np.array([False, False, True])]),
    ("tuple_out", lambda x: (x + 1, x * x, -x), lambda x: (x + 1, x * x, -x),
     [np.linspace(-1, 1, 5, dtype=np.float32)]),
    ("dict_out", lambda x: {"b": x - 1, "a": x * 3}, lambda x: {"b": x - 1, "a": x * 3},
     [np.arange(4, dtype=np.float32)]),
    ("nested_out", lambda x: ({"s": x.sum()}, [x + 1]),
     lambda x: ({"s": x.sum()}, [x + 1]), [np.arange(5, dtype=np.float32)]),
    ("sort", jnp.sort, np.sort, [np.array([3, 1, 2, 0], np.float32)]),   # not a direct call
    ("empty", lambda x: x + 1, lambda x: x + 1, [np.zeros((0, 3), np.float32)]),
    ("bf16", lambda x: x * 2, lambda x: x * 2, [np.arange(4).astype(jnp.bfloat16)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_hits_equal_numpy(case):
  _, fn, ref, np_args = case
  f = ember.jit(fn)
  args = [_arr(a) for a in np_args]
  want = ref(*[a.astype(np.float64) if a.dtype.kind == "f" or a.dtype == jnp.bfloat16
               else a for a in np_args])
  for _ in range(3):   # the miss, the hit that builds the direct call, later hits
    got = f(*args)
    assert ember.tree_util.tree_structure(got) == ember.tree_util.tree_structure(want)
    for g, w in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(want)):
      assert isinstance(g, Array) and g.is_ready() and not g.weak_type
      assert g.dtype == np_args[0].dtype and g.shape == np.shape(w)
      np.testing.assert_allclose(np.asarray(g).astype(np.float64), w,
                                 rtol=1e-2 if g.dtype == jnp.bfloat16 else 1e-6)
      with pytest.raises(ValueError):   # an Array's memory is read-only
        np.asarray(g)[...] = 0


def test_the_direct_path_is_taken_and_is_correct(direct):
  f = ember.jit(lambda x, y: x * 2 + y)
  x, y = _arr(np.arange(3, dtype=np.float32)), _arr(np.ones(3, np.float32))
  outs = [f(x, y) for _ in range(5)]
  assert sum(direct) >= 3
  for o in outs:
    np.testing.assert_array_equal(np.asarray(o), [1, 3, 5])
  chained = x
  for _ in range(10):   # each output feeds the next call: the pointers change every call
    chained = f(chained, y)
  np.testing.assert_array_equal(np.asarray(chained), np.arange(3) * 1024 + 1023)


def test_captured_constants_and_keyword_and_pytree_arguments(direct):
  c = _arr(np.array([10, 20, 30], np.float32))
  f = ember.jit(lambda t, *, s: {"u": t["a"] + c, "v": t["b"] * s})
  t = {"b": _arr(np.full(3, 2, np.float32)), "a": _arr(np.arange(3, dtype=np.float32))}
  s = _arr(np.float32(4))
  for _ in range(3):
    r = f(t, s=s)
    np.testing.assert_array_equal(np.asarray(r["u"]), [10, 21, 32])
    np.testing.assert_array_equal(np.asarray(r["v"]), [8, 8, 8])
  assert any(direct)
  # f((x,), {"a": y}) and f(x, a=y) flatten to the same leaves but are different signatures
  g = ember.jit(lambda *a, **k: (len(a), sorted(k)) and jnp.float32(len(a) * 10 + len(k)))
  x = _arr(np.float32(1))
  assert float(g((x,), {"a": x})) == 20.0 and float(g(x, a=x)) == 11.0
  assert float(g((x,), {"a": x})) == 20.0 and float(g(x, a=x)) == 11.0


def test_weak_types_follow_the_signature():
  f = ember.jit(lambda x: x * 2)
  weak, strong = f(2.0), _arr(np.float32(2.0))
  for _ in range(3):
    assert f(weak).weak_type and not f(strong).weak_type
    assert float(f(weak)) == 8.0 and float(f(strong)) == 4.0


def test_deleted_and_donated_arguments():
  f = ember.jit(lambda x: x + 1)
  x = _arr(np.arange(3, dtype=np.float32))
  f(x), f(x)
  x.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    f(x)
  g = ember.jit(lambda x: x * 3, donate_argnums=0)
  a = f(_arr(np.arange(3, dtype=np.float32)))
  for _ in range(3):
    b = g(a)
    assert a.is_deleted() and not b.is_deleted()
    with pytest.raises(RuntimeError, match="deleted"):
      g(a)
    np.testing.assert_array_equal(np.asarray(b), np.arange(1, 4) * 3)
    a = f(_arr(np.arange(3, dtype=np.float32)))


def test_non_contiguous_array_argument():
  v = np.arange(12, dtype=np.float32).reshape(3, 4)
  v.flags.writeable = False
  a = Array(v.T)   # a read-only transposed view: kept as is, not C-contiguous
  assert not np.asarray(a).flags.c_contiguous
  f = ember.jit(lambda x: x * 10 + 1)
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(f(a)), v.T * 10 + 1)


def test_small_views_are_made_contiguous_once_large_ones_copied_per_call(direct):
  """A ready Array's non-contiguous buffer (an eager broadcast, a transposed view) up to
  MATERIALIZE_BYTES becomes a contiguous copy at its first jitted call, which then runs
  the direct path; its address never moves after; a larger one stays a view."""
  f = ember.jit(lambda x: x * 10 + 1)
  v = np.arange(12, dtype=np.float32).reshape(3, 4)
  v.flags.writeable = False
  small = [jnp.ones((5, 3)), Array(v.T)]   # (a read-only view is kept as is)
  assert not any(a._buf.flags.c_contiguous for a in small)
  for a in small:
    want = np.asarray(a) * 10 + 1
    direct.clear()
    for _ in range(3):
      np.testing.assert_array_equal(np.asarray(f(a)), want)
    assert a._buf.flags.c_contiguous and all(direct)
    assert a.unsafe_buffer_pointer() == a._ptr
  np.testing.assert_array_equal(np.asarray(small[0]), np.ones((5, 3)))
  big = jnp.zeros((array_mod.MATERIALIZE_BYTES // 4 + 1,))
  g = ember.jit(lambda x: x[::4097] + 2)
  for _ in range(2):
    np.testing.assert_array_equal(np.asarray(g(big)), np.full(64, 2.0))
  assert not big._buf.flags.c_contiguous


def test_numpy_constants_run_inline_with_the_traces_value(direct):
  """A captured NumPy array is passed as an Array made once (as NumPy it would send every
  call down the asynchronous path); the caller's array stays writable and, as in JAX, its
  later changes do not reach the compiled function."""
  c = np.arange(4, dtype=np.float32) * 10
  f = ember.jit(lambda x: x * np.float32(0.5) + c)
  x = _arr(np.ones(4, np.float32))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(f(x)), np.arange(4) * 10 + 0.5)
  assert direct and all(direct) and c.flags.writeable
  c[:] = -1
  np.testing.assert_array_equal(np.asarray(f(x)), np.arange(4) * 10 + 0.5)
  idx = np.array([3, 0, 3], np.int64)    # int32 in the trace (no x64): passed as int32
  g = ember.jit(lambda x: x[idx] * 2)
  y = _arr(np.arange(4, dtype=np.float32))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(g(y)), [6, 0, 6])


def test_python_and_numpy_leaves_run_inline(direct):
  """Python and NumPy scalars and NumPy arrays (any dtype the signature canonicalizes, any
  strides) are converted by the inline path itself: the direct kernel call, not the
  asynchronous path."""
  f = ember.jit(lambda a, s: a * s)
  x = _arr(np.arange(4, dtype=np.float32))
  cases = [(2.5, np.float32), (3, np.float32), (True, np.float32), (np.float32(2), np.float32),
           (np.float64(0.1), np.float32), (np.int32(-2), np.float32)]
  for s, dt in cases:
    direct.clear()
    for _ in range(3):
      r = f(x, s)
      np.testing.assert_array_equal(np.asarray(r), np.arange(4, dtype=np.float32) * dt(s))
    assert direct and all(direct), s
  g = ember.jit(lambda a, b: a - b)
  big = np.arange(8, dtype=np.float64) / 3          # float32 in the trace (no x64)
  for b in (big, big[::2], big[::2]):                # the strided view: made contiguous
    direct.clear()
    for _ in range(2):
      r = g(b, np.float32(1))
      assert r.dtype == np.float32
      np.testing.assert_allclose(np.asarray(r), b.astype(np.float32) - 1, rtol=1e-6)
    assert direct and all(direct)
  h = ember.jit(lambda a, n: a * n)
  i = _arr(np.ones(2, np.int32))
  for n in (7, -(2 ** 31), 2 ** 31 - 1):
    np.testing.assert_array_equal(np.asarray(h(i, n)), [n, n])
  with pytest.raises(OverflowError, match="too large to convert to int32"):
    h(i, 2 ** 31)


def test_numpy_and_scalar_arguments_share_the_entry():
  f = ember.jit(lambda x, s: x + s)
  x = np.arange(3, dtype=np.float32)
  for arg in (x, _arr(x), x, _arr(x)):
    np.testing.assert_array_equal(np.asarray(f(arg, 2)), x + 2)
  assert f._cache_size() == 1


def test_busy_executor_and_pending_inputs_keep_fifo_order(gate, direct):
  f = ember.jit(lambda x: x + 1)
  x = _arr(np.arange(3, dtype=np.float32))
  gate.set()
  executor.get_executor().drain()
  f(x), f(x)                      # compiled, its direct call built
  ev = threading.Event()
  p = executor.Pending()
  executor.get_executor().submit(lambda: (ev.wait(30), ())[1], p)
  n = len(direct)
  y = f(x)                        # ready input, busy executor: queued behind the blocker
  z = f(y)                        # a pending input
  assert not y.is_ready() and not z.is_ready() and len(direct) == n
  ev.set()
  np.testing.assert_array_equal(np.asarray(z), np.arange(3) + 2)
  p.wait()


def test_errors_are_deferred_inline_and_raised_when_synchronous(monkeypatch):
  f = ember.jit(lambda x: x - 1)
  x = _arr(np.arange(3, dtype=np.float32))
  f(x), f(x)

  def no_memory(*a, **k):
    raise MemoryError("no memory for the outputs")
  monkeypatch.setattr(exe_mod, "_empty", no_memory)
  r = f(x)                        # inline: the error waits for the result's reader
  assert r.shape == (3,) and r.dtype == np.float32
  with pytest.raises(JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
    np.asarray(r)
  ember.config.update("jax_cpu_enable_async_dispatch", False)
  try:
    with pytest.raises(JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
      f(x)                        # synchronous dispatch: raised by the call itself
  finally:
    ember.config.update("jax_cpu_enable_async_dispatch", True)
  monkeypatch.undo()
  np.testing.assert_array_equal(np.asarray(f(x)), np.arange(3) - 1)


def test_checked_mode_is_honoured_on_the_next_call(monkeypatch, direct):
  f = ember.jit(lambda x: jnp.sin(x) * 2)
  x = _arr(np.linspace(0, 1, 4, dtype=np.float32))
  f(x), f(x)
  checked = []
  real = check_compiled.check_against_reference
  monkeypatch.setattr(check_compiled, "check_against_reference",
                      lambda *a: (checked.append(1), real(*a))[1])
  n = len(direct)
  with ember.config._override("ember_check_compiled", True):
    r = f(x)
  assert checked == [1] and len(direct) == n
  np.testing.assert_allclose(np.asarray(r), np.sin(np.linspace(0, 1, 4)) * 2, rtol=1e-6)


def test_x64_and_disable_jit_switch_between_calls():
  traced = []

  def fn(x):
    traced.append(1)
    return jnp.arange(3) + x
  f = ember.jit(fn)
  x = _arr(np.array([1, 2, 3], np.int32))
  assert f(x).dtype == np.int32 and f(x).dtype == np.int32 and len(traced) == 1
  with ember.enable_x64():
    r = f(x)
    assert r.dtype == np.int64 and f(x).dtype == np.int64
    np.testing.assert_array_equal(np.asarray(r), [1, 3, 5])
  assert f(x).dtype == np.int32 and len(traced) == 2
  with ember.disable_jit():
    f(x)
    f(x)
  assert len(traced) == 4     # the Python function ran each time
  np.testing.assert_array_equal(np.asarray(f(x)), [1, 3, 5])


def test_transforms_of_a_jitted_function_do_not_take_the_hit_path():
  f = ember.jit(lambda x: jnp.sin(x) * x)
  x = _arr(np.linspace(0, 1, 3, dtype=np.float32))
  f(x), f(x)
  g = ember.grad(lambda x: f(x).sum())(x)
  xd = np.linspace(0, 1, 3)
  np.testing.assert_allclose(np.asarray(g), np.cos(xd) * xd + np.sin(xd), rtol=1e-6)
  v = ember.vmap(f)(jnp.stack([x, x + 1]))
  np.testing.assert_allclose(np.asarray(v)[1], np.sin(xd + 1) * (xd + 1), rtol=1e-6)
  h = ember.jit(lambda x: f(x) + 1)
  np.testing.assert_allclose(np.asarray(h(x)), np.sin(xd) * xd + 1, rtol=1e-6)


def test_threads_share_a_jitted_function(direct):
  f = ember.jit(lambda x: x * 2 + 1)
  xs = [_arr(np.full(8, i, np.float32)) for i in range(4)]
  f(xs[0]), f(xs[0])
  errors = []

  def work(i):
    try:
      for _ in range(300):
        np.testing.assert_array_equal(np.asarray(f(xs[i])), np.full(8, 2 * i + 1))
    except Exception as e:  # noqa: BLE001
      errors.append(e)
  threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors and any(direct)


def test_tier_up_rebuilds_the_direct_call():
  from ember._src.base import flags
  with flags.override(tiered_compilation=True):
    f = ember.jit(lambda v: jnp.exp(-v * v) + 0.5)
    x = _arr(np.linspace(-2, 2, 64, dtype=np.float32))
    want = np.exp(-np.linspace(-2, 2, 64) ** 2) + 0.5
    f(x), f(x)
    ex = f.lower(x).compile()._computation.executable
    assert ex.tier_up_pending is not None   # started at the quick tier
    before = [np.asarray(f(x)) for _ in range(3)]
    ex.tier_up_pending.wait()
    after = np.asarray(f(x))
    assert ex._direct[0] is ex._cached   # made for the optimized code's frame
  for o in before + [after]:
    np.testing.assert_allclose(o, want, rtol=1e-6, atol=1e-7)


def test_a_profile_records_the_hits_kernels(tmp_path, direct):
  import gzip
  import json
  import os
  f = ember.jit(lambda x: x * 3 + 1)
  x = _arr(np.arange(4, dtype=np.float32))
  f(x), f(x)
  n = len(direct)
  with ember.profiler.trace(str(tmp_path)):
    r = f(x)
  assert len(direct) == n
  np.testing.assert_array_equal(np.asarray(r), np.arange(4) * 3 + 1)
  paths = [os.path.join(d, n) for d, _, ns in os.walk(tmp_path) for n in ns
           if n.endswith(".trace.json.gz")]
  with gzip.open(paths[0], "rt") as fh:
    events = json.load(fh)["traceEvents"]
  names = [e["name"] for e in events if e["ph"] == "X"]
  assert names.count("PjitFunction(<lambda>)") == 1
  assert any(e["ph"] == "X" and e.get("args", {}).get("kind") == "kernel" for e in events)


def test_argument_structures_with_equal_leaves_are_different_signatures():
  f = ember.jit(lambda t: ember.tree_util.tree_map(lambda v: v * 2, t))
  x, y = _arr(np.float32(1)), _arr(np.arange(2, dtype=np.float32))
  trees = [((x,), y), (x, (y,)), [x, y], (x, y), {"a": x, "b": y}, {"b": x, "a": y},
           {"a": [x], "b": y}, ([x, 3.0], {"k": (y,)})]
  for _ in range(2):
    for tree in trees:
      got = f(tree)
      assert ember.tree_util.tree_structure(got) == ember.tree_util.tree_structure(tree)
      for g, v in zip(ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(tree)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(v) * 2)


def _executable(f, *args):
  return f.lower(*args).compile()._computation.executable


def test_multi_step_executables_take_the_native_prologue(direct):
  # a sort (a NumPy thunk reading the frame) between two kernels: the prologue patches the
  # kernels' pointer arrays, the steps then run on the frame it filled
  f = ember.jit(lambda x, y: (jnp.sort(x * 2) + y, x - y))
  xs = [np.array([3, -1, 2, 0, 5], np.float32) * k for k in (1, 2, 3)]
  y = _arr(np.arange(5, dtype=np.float32))
  f(_arr(xs[0]), y)
  ex = _executable(f, _arr(xs[0]), y)
  for x in xs * 2:
    s, d = f(_arr(x), y)
    np.testing.assert_array_equal(np.asarray(s), np.sort(x * 2) + np.arange(5))
    np.testing.assert_array_equal(np.asarray(d), x - np.arange(5))
  assert ex._direct[1] is not None and ex._direct[6]   # the prologue, then steps
  assert sum(direct) >= 5
  chained = _arr(xs[0])
  for _ in range(4):   # outputs as the next arguments: their recorded addresses are right
    chained, _ = f(chained, y)
  want = xs[0]
  for _ in range(4):
    want = np.sort(want * 2) + np.arange(5)
  np.testing.assert_array_equal(np.asarray(chained), want)


def test_without_the_prologue_the_hit_falls_back(monkeypatch, direct):
  # (where the process's object layouts are not the ones the prologue reads)
  monkeypatch.setattr(exe_mod, "_hit_prologue", lambda: None)
  f = ember.jit(lambda x: x * 4 - 1)
  x = _arr(np.arange(3, dtype=np.float32))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(f(x)), np.arange(3) * 4 - 1)
  assert direct and not any(direct)
  monkeypatch.undo()
  assert exe_mod._hit_prologue() is not None   # this process's layouts pass its check


def test_a_changed_signature_misses_the_hit_cache():
  traced = []
  f = ember.jit(lambda x: (traced.append(1), x * 2)[1])
  base = _arr(np.arange(3, dtype=np.float32))
  calls = [base, _arr(np.arange(3, dtype=np.int32)), _arr(np.arange(4, dtype=np.float32)),
           _arr(np.arange(3, dtype=np.float32).reshape(3, 1)), 2.0, np.float32(2.0), 2]
  for _ in range(2):
    for x in calls:
      r = f(x)
      assert r.dtype == (np.asarray(x).dtype if not isinstance(x, (float, int)) else
                         (np.float32 if isinstance(x, float) else np.int32))
      assert r.shape == np.shape(x) and r.weak_type == isinstance(x, (float, int))
      np.testing.assert_array_equal(np.asarray(r), np.asarray(x) * 2)
  assert len(traced) == len(calls) == f._cache_size()


def test_flag_changes_reach_the_hit_path():
  from ember._src.base.config import config
  f = ember.jit(lambda x: x + 1)
  x = _arr(np.arange(3, dtype=np.float32))
  f(x), f(x)
  assert config._jit_trace_key is not None and config._jit_inline
  for name, value, derived in [("jax_disable_jit", True, "_jit_trace_key"),
                               ("ember_jit_backend", "interpreter", "_jit_trace_key"),
                               ("ember_check_compiled", True, "_jit_inline"),
                               ("jax_cpu_enable_async_dispatch", False, "_jit_inline")]:
    with config._override(name, value):
      assert not getattr(config, derived)
      np.testing.assert_array_equal(np.asarray(f(x)), np.arange(3) + 1)
    assert getattr(config, derived)
    config.update(name, value)
    try:
      assert not getattr(config, derived)
    finally:
      config.update(name, config._defaults[name]() if name != "jax_disable_jit" else False)
    assert getattr(config, derived)
  with ember.enable_x64():
    assert config._jit_trace_key[0] is True
  assert config._jit_trace_key[0] is False


def test_open_traces_are_counted_across_threads_and_errors():
  from ember._src import core
  from ember._src.core import trace as trace_lib
  f = ember.jit(lambda x: x * 3)
  x = _arr(np.arange(3, dtype=np.float32))
  f(x)
  assert trace_lib._open_traces == 0
  with pytest.raises(ZeroDivisionError):
    ember.jit(lambda x: x + 1 // 0)(x)   # raises while tracing
  assert trace_lib._open_traces == 0
  inside, release = threading.Event(), threading.Event()

  def trace_and_wait(v):   # holds a trace open in another thread
    inside.set()
    release.wait(30)
    return v + 1
  t = threading.Thread(target=lambda: ember.make_jaxpr(trace_and_wait)(1.0))
  t.start()
  inside.wait(30)
  try:
    assert trace_lib._open_traces > 0 and core.cur_level_is_eval()   # this thread: eval
    r = f(x)   # runs here, not staged into the other thread's trace
    assert isinstance(r, Array)
    np.testing.assert_array_equal(np.asarray(r), np.arange(3) * 3)
  finally:
    release.set()
    t.join()
  assert trace_lib._open_traces == 0

"""The native cache hit (backends/cpu/native_hit.py, made by jit.PjitFunction._hit_then_native
from dispatch.hit_runner's `native`): one builtin runs a small call of a cached signature.
Its results must equal NumPy's and the Python path's (values, dtypes, weak types, read-only
memory, allocation stacks), and every call it does not check for itself must reach the
Python path unchanged: other shapes, dtypes or weak types, NumPy arguments, deleted or
pending Arrays, flags, the profiler, traces, other threads holding the executable."""
import gc
import sys
import threading
import weakref

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.driver import dispatch
from ember._src.backends.cpu import native_hit
from ember._src.core import array as array_mod
from ember._src.core.array import Array

pytestmark = pytest.mark.skipif(not native_hit.available(array_mod),
                                reason="no native hit path in this interpreter")


def _arr(x):
  return jnp.asarray(np.asarray(x))


def _warm(f, *args):
  """Calls until the builtin exists (the miss, then the hits that make it)."""
  for _ in range(2 + ember._src.driver.jit.NATIVE_TRIES):
    out = f(*args)
    if f._native is not None:
      return out
  raise AssertionError("no native hit was made")


def _native_only(f, *args):
  """The builtin's own result (fails if it left the call to the Python path)."""
  out = f._native(*args)
  assert out is not dispatch.NATIVE_MISS
  return out


CASES = [  # (name, function, NumPy reference, arguments)
    ("add1", lambda x: x + 1, lambda x: x + 1, [np.arange(3, dtype=np.float32)]),
    ("scalar", lambda x: x * 2.5, lambda x: x * 2.5, [np.array(3.0, np.float32)]),
    ("int32_two_args", lambda x, y: x * y + 7, lambda x, y: x * y + 7,
     [np.arange(6, dtype=np.int32), np.full(6, -3, np.int32)]),
    ("tuple_out", lambda x, y: (x + y, x * y, -x), lambda x, y: (x + y, x * y, -x),
     [np.linspace(-1, 1, 5, dtype=np.float32), np.arange(5, dtype=np.float32)]),
    ("list_out", lambda x: [x - 1, x.sum()], lambda x: [x - 1, x.sum()],
     [np.arange(4, dtype=np.float64).astype(np.float32)]),
    ("bool", lambda x, y: x & ~y, lambda x, y: x & ~y,
     [np.array([True, False, True]), np.array([False, False, True])]),
    ("gemv", lambda g, v: jnp.tanh(g @ v), lambda g, v: np.tanh(g @ v),
     [np.random.default_rng(0).standard_normal((100, 100)).astype(np.float32),
      np.random.default_rng(1).standard_normal(100).astype(np.float32)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_native_hits_equal_numpy_and_the_python_path(case):
  _, fn, ref, np_args = case
  f = ember.jit(fn)
  args = [_arr(a) for a in np_args]
  python = _warm(f, *args)
  want = ref(*[a.astype(np.float64) if a.dtype.kind == "f" else a for a in np_args])
  for got in (_native_only(f, *args), f(*args)):
    assert type(got) is type(want) if isinstance(want, (tuple, list)) else True
    gl, wl, pl = (ember.tree_util.tree_leaves(t) for t in (got, want, python))
    assert len(gl) == len(wl) == len(pl)
    for g, w, p in zip(gl, wl, pl):
      assert type(g) is Array and g.is_ready() and g.shape == np.shape(w) == p.shape
      assert g.dtype == p.dtype and g.weak_type == p.weak_type
      # (gemv: 100-term float32 sums, then tanh: a few ulps of float32 apart)
      np.testing.assert_allclose(np.asarray(g).astype(np.float64), w,
                                 rtol=2e-5 if case[0] == "gemv" else 1e-6)
      np.testing.assert_array_equal(np.asarray(g), np.asarray(p))
      assert g._ptr == np.asarray(g).ctypes.data
      with pytest.raises(ValueError):   # an Array's memory is read-only
        np.asarray(g)[...] = 0


def test_captured_constants_are_inputs_too():
  c = _arr(np.arange(4, dtype=np.float32) * 10)
  f = ember.jit(lambda x: x + c)
  x = _arr(np.ones(4, np.float32))
  _warm(f, x)
  np.testing.assert_array_equal(np.asarray(_native_only(f, x)), np.arange(4) * 10 + 1)
  c.delete()   # the Python path's error, not a read of freed memory
  assert f._native(x) is dispatch.NATIVE_MISS
  with pytest.raises(RuntimeError, match="deleted"):
    f(x)


def test_numpy_constants_and_broadcast_arguments_run_natively():
  """Captured NumPy values are made Arrays once, and an eager broadcast argument (not
  C-contiguous) is made contiguous at its first call: both then take the builtin."""
  c = np.arange(4, dtype=np.float32) * 10
  f = ember.jit(lambda x: x * np.float32(0.5) + c)
  x = jnp.ones((4,))
  _warm(f, x)
  np.testing.assert_array_equal(np.asarray(_native_only(f, x)), np.arange(4) * 10 + 0.5)


def test_weak_types_and_other_signatures_miss():
  f = ember.jit(lambda x: x * 2)
  strong, weak = _arr(np.float32(3)), jnp.asarray(3.0)   # f32[], f32[] weakly typed
  assert not strong.weak_type and weak.weak_type
  for other in (weak, _arr(np.ones(4, np.float32)), _arr(np.int32(3)), np.float32(3), 3.0):
    _warm(f, strong)
    assert f._native(other) is dispatch.NATIVE_MISS
    r = f(other)                        # compiled for its own signature
    assert r.weak_type == (other is weak or type(other) is float)
    np.testing.assert_array_equal(np.asarray(r), np.asarray(other) * 2)
  _warm(f, strong)
  assert f._native(strong, strong) is dispatch.NATIVE_MISS    # the wrong count
  with pytest.raises(TypeError):
    f(strong, strong)


def test_deleted_pending_and_non_contiguous_arguments_miss():
  f = ember.jit(lambda x: x - 1)
  x = _arr(np.arange(6, dtype=np.float32))
  _warm(f, x)
  y = _arr(np.arange(6, dtype=np.float32))
  y.delete()
  assert f._native(y) is dispatch.NATIVE_MISS
  with pytest.raises(RuntimeError, match="deleted"):
    f(y)
  view = Array(np.arange(12, dtype=np.float32)[::2])   # ready, not C-contiguous
  assert f._native(view) is dispatch.NATIVE_MISS
  np.testing.assert_array_equal(np.asarray(f(view)), np.arange(0, 12, 2) - 1)


def test_flags_profiler_and_traces_reach_the_python_path(tmp_path):
  f = ember.jit(lambda x: x + 1)
  x = _arr(np.arange(3, dtype=np.float32))
  states = [_flag("jax_disable_jit", True), _flag("jax_enable_x64", True),
            _flag("jax_cpu_enable_async_dispatch", False), _flag("ember_check_compiled", True),
            ember.profiler.trace(str(tmp_path))]
  for state in states:
    _warm(f, x)
    with state:
      assert f._native(x) is dispatch.NATIVE_MISS
      np.testing.assert_array_equal(np.asarray(f(x)), [1, 2, 3])
  _warm(f, x)
  g = ember.jit(lambda y: f(y) * 2)     # traced inside another jit: a tracer, not an Array
  np.testing.assert_array_equal(np.asarray(g(x)), [2, 4, 6])
  np.testing.assert_array_equal(np.asarray(ember.grad(lambda y: f(y).sum())(x)), [1, 1, 1])
  np.testing.assert_array_equal(np.asarray(ember.vmap(f)(x)), [1, 2, 3])
  assert f._native(x) is not dispatch.NATIVE_MISS   # all switched back


class _flag:
  def __init__(self, name, value):
    self.name, self.value = name, value

  def __enter__(self):
    self.old = ember.config._values[self.name]
    ember.config.update(self.name, self.value)

  def __exit__(self, *exc):
    ember.config.update(self.name, self.old)


def test_donation_and_static_arguments_make_no_builtin():
  x = _arr(np.ones(3, np.float32))
  f = ember.jit(lambda x: x + 1, donate_argnums=0)
  for _ in range(5):
    x = f(x)
  assert f._native is None
  g = ember.jit(lambda x, n: x * n, static_argnums=1)
  for _ in range(5):
    g(x, 3)
  assert g._native is None


def test_clear_caches_and_a_new_signature_drop_the_builtin():
  f = ember.jit(lambda x: x * 3)
  x3, x4 = _arr(np.ones(3, np.float32)), _arr(np.ones(4, np.float32))
  _warm(f, x3)
  _warm(f, x4)     # the newest signature's builtin
  assert f._native(x3) is dispatch.NATIVE_MISS
  np.testing.assert_array_equal(np.asarray(_native_only(f, x4)), 3 * np.ones(4))
  ember.clear_caches()
  assert f._native is None
  np.testing.assert_array_equal(np.asarray(f(x3)), 3 * np.ones(3))


def _line_of(stack):
  code, lasti = stack[0], stack[1]
  for start, end, line in code.co_lines():
    if start <= lasti < end:
      return code.co_name, line
  return code.co_name, None


def test_allocation_stacks_are_the_python_paths(monkeypatch):
  f = ember.jit(lambda x: x + 2)
  x = _arr(np.arange(3, dtype=np.float32))
  _warm(f, x)

  def user_call():
    return f(x)            # the line each stack's first frame names
  line = user_call.__code__.co_firstlineno + 1
  out = user_call()
  assert f._native is not None and _line_of(out._stack) == ("user_call", line)
  assert out._stack[2] is sys._getframe().f_code         # its caller: this test
  for frames, length in ((0, 0), (1, 2), (3, 6)):
    monkeypatch.setattr(array_mod, "ALLOC_STACK_FRAMES", frames)
    s = user_call()._stack
    assert len(s) == length
    if length:
      assert _line_of(s) == ("user_call", line)


def test_a_caller_inside_ember_walks_to_the_user_frame(monkeypatch):
  f = ember.jit(lambda x: x + 2)
  x = _arr(np.arange(3, dtype=np.float32))
  _warm(f, x)
  name = "<ember-internal-caller>"
  monkeypatch.setitem(array_mod._internal, name, True)   # as if ember's own file
  scope = {"f": f}
  exec(compile("def internal(x):\n  return f(x)\n", name, "exec"), scope)

  def user():
    return scope["internal"](x)
  s = user()._stack
  assert s[0] is user.__code__ and _line_of(s)[1] == user.__code__.co_firstlineno + 1


def test_outputs_are_freed_and_references_balance():
  f = ember.jit(lambda x, y: (x + y, x * y))
  x, y = _arr(np.ones(5, np.float32)), _arr(np.ones(5, np.float32))
  r = _warm(f, x, y)
  spec = r[0]._shape
  gc.collect()
  before = [sys.getrefcount(o) for o in (x, y, spec, x._buf)]
  refs = []
  for _ in range(200):
    a, b = f(x, y)
    refs.append(weakref.ref(a))
    del a, b
  gc.collect()
  assert all(ref() is None for ref in refs)
  after = [sys.getrefcount(o) for o in (x, y, spec, x._buf)]   # (a dtype is everyone's)
  assert after == before


def test_threads_calling_at_once_get_their_own_results():
  f = ember.jit(lambda x: jnp.sin(x) * 2 + x)
  xs = [_arr(np.full(64, i, np.float32)) for i in range(6)]
  _warm(f, xs[0])
  errors = []

  def work(i):
    want = np.sin(np.float32(i)) * 2 + i
    try:
      for _ in range(400):
        np.testing.assert_allclose(np.asarray(f(xs[i])), np.full(64, want), rtol=1e-6)
    except Exception as e:  # noqa: BLE001
      errors.append(e)
  threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors


def test_a_busy_executable_or_executor_leaves_the_call_to_python():
  f = ember.jit(lambda x: x * 5)
  x = _arr(np.ones(3, np.float32))
  _warm(f, x)
  ex = next(iter(f._cache.values())).compiled.executable
  with ex._frame_lock:                         # another thread's call on its frame
    assert f._native(x) is dispatch.NATIVE_MISS
    np.testing.assert_array_equal(np.asarray(f(x)), [5, 5, 5])   # (its own frame)
  assert f._native(x) is not dispatch.NATIVE_MISS


def test_kernels_past_the_gil_threshold_release_it(monkeypatch):
  monkeypatch.setattr(dispatch, "NATIVE_HOLDS_GIL_NS", 0)
  f = ember.jit(lambda a: jnp.tanh(a @ a) + 1)
  a = _arr(np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32) / 8)
  _warm(f, a)
  want = np.tanh(np.asarray(a, np.float64) @ np.asarray(a, np.float64)) + 1
  stop = threading.Event()
  ticks = []

  def other():   # runs Python while the kernels run without the GIL
    while not stop.is_set():
      ticks.append(1)
  t = threading.Thread(target=other)
  t.start()
  try:
    for _ in range(200):
      np.testing.assert_allclose(np.asarray(_native_only(f, a)), want, rtol=1e-5)
  finally:
    stop.set()
    t.join()
  assert ticks


def test_a_failed_output_allocation_frees_what_it_made_and_misses():
  f = ember.jit(lambda x, y: (x + y, x - y, x * y))
  x, y = _arr(np.ones(4, np.float32)), _arr(np.full(4, 2, np.float32))
  _warm(f, x, y)
  table = native_hit._native()[1][1]
  slot = native_hit._API["np_empty"]
  calls = []

  def empty_then_fail(dims, dtype):   # the second output's allocation fails
    if calls:
      raise MemoryError("no memory for the outputs")
    out = np.empty(dims, dtype)
    calls.append(weakref.ref(out))
    return out
  before = sys.getrefcount(x._buf)
  table[slot] = id(empty_then_fail)
  try:
    assert f._native(x, y) is dispatch.NATIVE_MISS
  finally:
    table[slot] = id(np.empty)
  after = sys.getrefcount(x._buf)   # (not inside the assert: pytest's rewriting holds it)
  assert calls[0]() is None and after == before   # the first output was freed
  np.testing.assert_array_equal(np.asarray(_native_only(f, x, y)[2]), np.full(4, 2))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_makes_its_own_builtins():
  import os
  f = ember.jit(lambda x: x * 7)
  x = _arr(np.ones(3, np.float32))
  _warm(f, x)
  r, w = os.pipe()
  pid = os.fork()
  if pid == 0:   # the child: its executables' frame locks are new
    ok = f._native is None and np.array_equal(np.asarray(f(x)), [7, 7, 7])
    out = _warm(f, x)
    ok = ok and np.array_equal(np.asarray(_native_only(f, x)), [7, 7, 7]) and \
        np.array_equal(np.asarray(out), [7, 7, 7])
    os.write(w, b"1" if ok else b"0")
    os._exit(0)
  os.close(w)
  got = os.read(r, 1)
  os.waitpid(pid, 0)
  assert got == b"1"

"""Donated arguments (issue 4): an output computed into a donated parameter reuses the donated
Array's memory in place when nothing else can reach it (no NumPy array or view of it alive);
otherwise the runtime copies first, so results and the user's views stay right. Donated
Arrays are deleted either way; NumPy arguments are never overwritten. A donation no output
can use (JAX's rule) deletes nothing and warns, as JAX."""
import functools
import gc
import threading
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.runtime import executor


@functools.partial(ember.jit, donate_argnums=0)
def _step(state, g):
  return state - 0.5 * g


SHAPES = {"small": (4, 3), "pooled": (300, 300)}   # np.empty'd / buffer-pool outputs


@pytest.mark.parametrize("size", SHAPES)
def test_donated_buffer_is_reused_in_place(size):
  shape = SHAPES[size]
  x, g = jnp.asarray(np.full(shape, 3.0, np.float32)), jnp.ones(shape)
  ptr = x.unsafe_buffer_pointer()
  out = _step(x, g)
  assert x.is_deleted()
  assert out.unsafe_buffer_pointer() == ptr
  np.testing.assert_array_equal(np.asarray(out), np.full(shape, 2.5))
  out.block_until_ready()
  for _ in range(3):                    # a training-loop style chain stays in one buffer
    out = _step(out, g)
    assert out.unsafe_buffer_pointer() == ptr
  np.testing.assert_array_equal(np.asarray(out), np.full(shape, 1.0))


@pytest.mark.parametrize("size", SHAPES)
@pytest.mark.parametrize("view", ["asarray", "slice", "reshape"])
def test_a_live_numpy_view_forces_a_copy(size, view):
  shape = SHAPES[size]
  x = jnp.asarray(np.full(shape, 3.0, np.float32))
  ptr = x.unsafe_buffer_pointer()
  v = {"asarray": lambda a: np.asarray(a), "slice": lambda a: np.asarray(a)[1:],
       "reshape": lambda a: np.asarray(a).reshape(-1)}[view](x)
  out = _step(x, jnp.ones(shape))
  assert x.is_deleted()
  assert out.unsafe_buffer_pointer() != ptr
  np.testing.assert_array_equal(np.asarray(out), np.full(shape, 2.5))
  assert (v == 3.0).all()               # the user's view still sees the old values
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(x)


def test_the_view_dies_before_the_call():
  x = jnp.asarray(np.full((300, 300), 3.0, np.float32))
  v = np.asarray(x)[5:]
  ptr = x.unsafe_buffer_pointer()
  del v
  gc.collect()
  assert _step(x, jnp.ones((300, 300))).unsafe_buffer_pointer() == ptr


def test_pending_donated_argument_is_taken_on_the_executor_thread():
  shape = (300, 300)
  inc = ember.jit(lambda a: a + 1.0)
  zeros = ember.device_put(np.zeros(shape, np.float32))  # (a NumPy argument takes a block)
  y0 = inc(zeros)
  ptr = y0.unsafe_buffer_pointer()
  del y0                                     # its pooled block is the next one handed out
  gc.collect()
  ev = threading.Event()
  p = executor.Pending()
  executor.get_executor().submit(lambda: (ev.wait(30), ())[1], p)
  try:
    x = inc(zeros)                           # pending: the executor is busy
    assert not x.is_ready()
    out = _step(x, jnp.ones(shape))          # donated while still pending
    assert x.is_deleted() and not out.is_ready()
  finally:
    ev.set()
    p.wait()
  np.testing.assert_array_equal(np.asarray(out), np.full(shape, 0.5))
  assert out.unsafe_buffer_pointer() == ptr  # computed in x's memory: no copy


def test_pending_donation_while_the_user_holds_a_view():
  shape = (300, 300)
  inc = ember.jit(lambda a: a + 1.0)
  x = inc(np.zeros(shape, np.float32))
  v = np.asarray(x)                          # waits; the user now shares the memory
  out = _step(x, jnp.ones(shape))
  assert out.unsafe_buffer_pointer() != v.ctypes.data
  np.testing.assert_array_equal(v, np.ones(shape))
  np.testing.assert_array_equal(np.asarray(out), np.full(shape, 0.5))


def test_donated_numpy_argument_is_never_written():
  s = np.full((300, 300), 4.0, np.float32)
  out = _step(s, jnp.ones((300, 300)))
  np.testing.assert_array_equal(s, np.full((300, 300), 4.0))
  np.testing.assert_array_equal(np.asarray(out), np.full((300, 300), 3.5))
  assert out.unsafe_buffer_pointer() != s.ctypes.data


def _unusable_warnings(record) -> list[str]:
  return [str(w.message) for w in record
          if str(w.message).startswith("Some donated buffers were not usable")]


def test_donation_without_a_usable_output_warns_and_keeps_the_argument():
  """JAX 0.12.1: a donated argument no output can reuse is not donated (not deleted), and
  the signature's first lowering warns."""
  f = ember.jit(lambda x: x.sum(), donate_argnums=0)   # no output of x's shape or size
  x = jnp.ones((4, 4))
  with pytest.warns(UserWarning) as record:
    assert float(f(x)) == 16.0
  assert _unusable_warnings(record) == [
      "Some donated buffers were not usable: float32[4,4].\nSee an explanation at "
      "https://docs.jax.dev/en/latest/201/jit.html#jax-201-buffer-donation."]
  assert not x.is_deleted()
  with warnings.catch_warnings():
    warnings.simplefilter("error")     # the same signature again: no second warning
    assert float(f(x)) == 16.0
    f.lower(x)
  with pytest.warns(UserWarning, match="Some donated buffers were not usable: float32"):
    comp = ember.jit(lambda x: x.sum(), donate_argnums=0).lower(jnp.ones(3))   # lowering
  comp.compile()(x := jnp.ones(3))
  assert not x.is_deleted()


# (function, arguments, donate_argnums, keep_unused) -> JAX 0.12.1's unusable avals; which
# arguments it deleted
DONATION_CASES = {
    "identity": (lambda a: a, (jnp.ones(3),), 0, False, [], [True]),
    "twice_out": (lambda a: (a, a), (jnp.ones(3),), 0, False, [], [True]),
    "scalar_weak": (lambda a: a * 2, (1.0,), 0, False, [], [None]),
    "reduced": (lambda a: (a * 2).sum(), (jnp.ones(2),), 0, False, ["float32[2]"], [False]),
    "unused": (lambda a, b: a, (jnp.ones(3), jnp.ones(4)), 1, False, [], [None, False]),
    "unused_kept": (lambda a, b: a, (jnp.ones(3), jnp.ones(4)), 1, True, ["float32[4]"],
                    [None, False]),
    "two_args": (lambda a, b: (a + b).sum(), (jnp.ones(3), jnp.ones(3, np.int32)), (0, 1),
                 False, ["float32[3]", "int32[3]"], [False, False]),
    "one_output": (lambda a, b: a + b, (jnp.ones(3), jnp.ones(3)), (0, 1), False,
                   ["float32[3]"], [True, False]),
    # an output left over takes a donated argument of as many elements
    "by_size": (lambda a: a.reshape(6).astype(np.int32), (jnp.ones((2, 3)),), 0, False, [],
                [True]),
    # ... not donated (deleted) when their bytes differ (int32[] -> bfloat16[]), unreported
    "bf16_and_scalar": (lambda a, b: a.sum() + b.sum(), (jnp.ones((2, 3), jnp.bfloat16),
                                                         jnp.ones((), np.int32)), (0, 1),
                        False, ["bfloat16[2,3]"], [False, False]),
    # a typed key output is one element to JAX (its data, 8 bytes, takes no float32[])
    "key_output": (lambda k, c: ember.random.fold_in(k, 1), (ember.random.key(0),
                                                             jnp.float32(1)), 1, False, [],
                   [None, False]),
    "pytree": (lambda d: d["a"].sum() + d["b"].sum(), ({"a": jnp.ones(2),
                                                        "b": jnp.ones((2, 2))},), 0, False,
               ["float32[2]", "float32[2,2]"], [None]),
    "numpy": (lambda a: a.sum(), (np.ones(3, np.float32),), 0, False, ["float32[3]"], [None]),
}


@pytest.mark.parametrize("case", DONATION_CASES)
def test_unusable_donations_as_jax(case):
  fn, args, donate, keep_unused, unusable, deleted = DONATION_CASES[case]
  args = [ember.tree.map(lambda x: x.copy() if isinstance(x, ember.Array) else x, a)
          for a in args]
  with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always")
    ember.jit(fn, donate_argnums=donate, keep_unused=keep_unused)(*args)
  want = [f"Some donated buffers were not usable: {', '.join(unusable)}.\nSee an explanation "
          "at https://docs.jax.dev/en/latest/201/jit.html#jax-201-buffer-donation."]
  assert _unusable_warnings(record) == (want if unusable else [])
  for a, d in zip(args, deleted):
    if d is not None:
      assert a.is_deleted() == d


def test_aot_compiled_call_donates_too():
  x, g = jnp.asarray(np.full((4, 3), 3.0, np.float32)), jnp.ones((4, 3))
  comp = _step.lower(x, g).compile()
  ptr = x.unsafe_buffer_pointer()
  out = comp(x, g)
  assert x.is_deleted() and out.unsafe_buffer_pointer() == ptr
  np.testing.assert_array_equal(np.asarray(out), np.full((4, 3), 2.5))


def test_unsafe_buffer_pointer():
  a = np.arange(6, dtype=np.float32)
  x = jnp.asarray(a)
  assert x.unsafe_buffer_pointer() == np.asarray(x).ctypes.data
  y = ember.jit(lambda t: t * 2)(x)
  assert y.unsafe_buffer_pointer() == np.asarray(y).ctypes.data
  x.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    x.unsafe_buffer_pointer()


def test_a_donated_array_passed_twice_is_an_error():
  """JAX 0.12: JaxRuntimeError INVALID_ARGUMENT ... `f(donate(a), a)`; nothing is deleted."""
  f = ember.jit(lambda a, b: a + b, donate_argnums=0)
  x = jnp.ones(3)
  with pytest.raises(ember.errors.JaxRuntimeError,
                     match=r"INVALID_ARGUMENT: Attempt to use a buffer that was previously "
                           r"donated .*flattened argument 1.*first use: 0"):
    f(x, x)
  assert not x.is_deleted()
  np.testing.assert_array_equal(np.asarray(f(x, jnp.ones(3))), [2.0, 2.0, 2.0])

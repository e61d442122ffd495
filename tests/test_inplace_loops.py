"""Loop-carried buffers updated in place: a single-index scatter becomes a
dynamic-update-slice (passes/simple_scatter.py), a vmapped while loop's select moves into the
update window (passes/algsimp.py), the update's fusion stays in place (passes/fusion.py,
passes/buffer_assignment.window_update_in_place), and the generated loop runs conditionals
and their rare Python branches (backends/cpu/control_flow.py). Expected values are JAX
0.12.1's (equinox's test_speed_while pattern: a carry of 100000 elements updated one per
iteration took ~30 s, copied or selected whole each iteration)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.backends.cpu import control_flow
from ember._src.backends.cpu import executable as ex


def compiled_text(f, *args):
  return ember.jit(f).lower(*args).compile().as_text()


def loop_thunk(f, *args):
  [t] = [t for t in ember.jit(f).lower(*args).compile().runtime_executable().thunks
         if isinstance(t, control_flow.ControlFlowThunk)]
  return t


X10 = np.arange(10, dtype=np.float32)
M34 = np.arange(12, dtype=np.int32).reshape(3, 4)

# (function, operand, index, JAX 0.12.1's result)
SINGLE_WINDOW = [
    (lambda x, i: x.at[i].set(-1.0), X10, -12, list(range(10))),
    (lambda x, i: x.at[i].set(-1.0), X10, -1, list(range(9)) + [-1]),
    (lambda x, i: x.at[i].set(-1.0), X10, 0, [-1] + list(range(1, 10))),
    (lambda x, i: x.at[i].set(-1.0), X10, 10, list(range(10))),
    (lambda x, i: x.at[i].set(-1.0), X10.astype(ember.numpy.bfloat16), 3,
     [0, 1, 2, -1] + list(range(4, 10))),
    (lambda x, i: x.at[i].add(5.0, mode="clip"), X10, -3, [0, 1, 2, 3, 4, 5, 6, 12, 8, 9]),
    (lambda x, i: x.at[i].add(5.0, mode="clip"), X10, 12, list(range(9)) + [14]),
    (lambda m, i: m.at[i, :].mul(3), M34, 1, [[0, 1, 2, 3], [12, 15, 18, 21], [8, 9, 10, 11]]),
    (lambda m, i: m.at[i, :].mul(3), M34, 3, M34.tolist()),
    (lambda m, j: m.at[:, j].set(jnp.array([7, 8, 9], jnp.int32)), M34, 0,
     [[7, 1, 2, 3], [8, 5, 6, 7], [9, 9, 10, 11]]),
    (lambda m, j: m.at[:, j].set(jnp.array([7, 8, 9], jnp.int32)), M34, -5, M34.tolist()),
]


@pytest.mark.parametrize("f, x, i, expected", SINGLE_WINDOW)
def test_single_window_scatter_becomes_dynamic_update_slice(f, x, i, expected):
  """Out-of-bounds windows are dropped (clip mode clamps them first), as JAX's scatter."""
  got = ember.jit(f)(x, i)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(expected, x.dtype))
  np.testing.assert_array_equal(np.asarray(f(jnp.asarray(x), i)), np.asarray(expected, x.dtype))
  text = compiled_text(f, x, i)
  assert " scatter(" not in text and "dynamic-update-slice(" in text


def test_scatter_of_several_windows_or_a_min_combiner_stays_a_scatter():
  x = np.arange(6, dtype=np.float32)
  several = lambda x: x.at[jnp.array([1, 4])].set(jnp.array([-1.0, -2.0]))
  smallest = lambda x, i: x.at[i].min(-3.0)
  np.testing.assert_array_equal(np.asarray(ember.jit(several)(x)), [0, -1, 2, 3, -2, 5])
  np.testing.assert_array_equal(np.asarray(ember.jit(smallest)(x, 2)), [0, 1, -3, 3, 4, 5])
  assert " scatter(" in compiled_text(several, x)
  assert " scatter(" in compiled_text(smallest, x, 2)


@pytest.mark.parametrize("p, i, expected", [
    (True, 1, [[0, 1, 2], [-1, -1, -1], [-1, -1, -1], [9, 10, 11]]),
    (False, 1, np.arange(12).reshape(4, 3).tolist()),
    (True, 3, [[0, 1, 2], [3, 4, 5], [-1, -1, -1], [-1, -1, -1]]),   # start clamped to 2
])
def test_select_of_an_update_moves_into_the_window(p, i, expected):
  f = lambda p, x, u, i: jnp.where(p, lax.dynamic_update_slice(x, u, (i, 0)), x)
  x = np.arange(12, dtype=np.float32).reshape(4, 3)
  u = np.full((2, 3), -1.0, np.float32)
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(p, x, u, i)), expected)
  np.testing.assert_array_equal(np.asarray(f(p, x, u, i)), expected)
  text = compiled_text(f, p, x, u, i)
  assert "f32[4,3]{1,0} select(" not in text and "f32[2,3]{1,0} select(" in text


def _read_previous(init_step, init_xs):
  def body(c):
    step, xs = c
    return step + 1, xs.at[step].set(xs[step - 1] + 1.0)
  return lax.while_loop(lambda c: c[0] < c[1].size, body, (init_step, init_xs))


def _write_step(init_step, init_xs):
  def body(c):
    step, xs = c
    return step + 1, lax.dynamic_update_index_in_dim(xs, 2.0 * step, step, 0)
  return lax.while_loop(lambda c: c[0] < c[1].size, body, (init_step, init_xs))


@pytest.mark.parametrize("f, steps, xs, expected", [
    (_read_previous, [3], np.zeros((1, 6), np.float32), [[0, 0, 0, 1, 2, 3]]),
    (_write_step, [2], np.ones((1, 5), np.float32), [[1, 1, 4, 6, 8]]),
])
def test_vmapped_while_updates_its_carry_in_place(f, steps, xs, expected):
  """equinox's test_speed_while: the batched predicate's select no longer spans the carry,
  and the batch-of-one scatter is a dynamic-update-slice: the body writes one window into
  the carry's own buffer (state mode `in_place`), no copy, in the generated loop."""
  g = ember.vmap(f)
  steps = np.asarray(steps, np.int32)
  n, got = ember.jit(g)(steps, xs)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(expected, np.float32))
  assert np.asarray(n).tolist() == [xs.shape[1]]
  t = loop_thunk(g, steps, xs)
  assert t.loop is not None and t.state_modes[1] == "in_place"
  assert not [th for th in t.subs[1].exe.thunks if type(th) is ex.CopyThunk]
  text = compiled_text(g, steps, xs)
  assert " scatter(" not in text and f"f32{list(xs.shape)}{{1,0}} select(".replace(" ", "") \
      not in text.replace(" ", "")


@pytest.mark.parametrize("f, steps, xs, expected", [
    (_read_previous, [1, 3], np.zeros((2, 6), np.float32),
     [[0, 1, 2, 3, 4, 5], [0, 0, 0, 1, 2, 3]]),
    (_write_step, [2, 4, 0], np.ones((3, 5), np.float32),
     [[1, 1, 4, 6, 8], [1, 1, 1, 1, 8], [0, 2, 4, 6, 8]]),
])
def test_vmapped_while_of_several_batches(f, steps, xs, expected):
  """Several batch elements: one window each (a scatter), in the generated loop."""
  g = ember.vmap(f)
  steps = np.asarray(steps, np.int32)
  n, got = ember.jit(g)(steps, xs)
  np.testing.assert_array_equal(np.asarray(got), np.asarray(expected, np.float32))
  assert np.asarray(n).tolist() == [xs.shape[1]] * len(steps)
  assert loop_thunk(g, steps, xs).loop is not None


def test_update_reading_another_element_of_the_carry_stays_in_place():
  """`xs[i - 1]` read by the update of `xs[i]`: the read is a fusion of its own, run before
  the update, which stays in place."""
  def f(xs):
    return lax.fori_loop(1, xs.shape[0], lambda i, xs: xs.at[i].set(xs[i - 1] * 2.0 + 1.0), xs)
  xs = np.zeros(7, np.float32)
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(xs)), [0, 1, 3, 7, 15, 31, 63])
  t = loop_thunk(f, xs)
  assert t.loop is not None and t.state_modes[2] == "in_place"


def _branching(x, n):
  def body(c):
    i, v, k = c
    v = lax.cond(i % 3 == 0, lambda v: v * 2.0, lambda v: v - 1.0, v)
    k = lax.switch(i % 4, [lambda k: k + 1, lambda k: k * 2, lambda k: k - 3], k)
    return i + 1, v, k
  return lax.while_loop(lambda c: c[0] < n, body, (0, x, 1))


def _branching_ref(x, n):
  v, k = x.astype(np.float64), 1
  for i in range(n):
    v = v * 2.0 if i % 3 == 0 else v - 1.0
    k = [k + 1, k * 2, k - 3][min(i % 4, 2)]     # lax.switch clamps the index
  return v, k


@pytest.mark.parametrize("n", [0, 1, 7])
def test_generated_loop_branches_over_conditionals(n):
  x = np.linspace(-1, 1, 5).astype(np.float32)
  i, v, k = ember.jit(_branching)(x, n)
  rv, rk = _branching_ref(x, n)
  assert int(i) == n and int(k) == rk
  np.testing.assert_allclose(np.asarray(v), rv, rtol=1e-6)
  assert loop_thunk(_branching, x, n).loop is not None


def _checked(x, n, host):
  def body(c):
    i, v = c
    v = lax.cond(i % 2 == 0,
                 lambda v: ember.pure_callback(host, ember.ShapeDtypeStruct((), jnp.float32), v),
                 lambda v: v + 1.0, v)
    return i + 1, v
  return lax.while_loop(lambda c: c[0] < n, body, (0, x))


def test_generated_loop_runs_a_python_branch_and_raises_its_error():
  """A branch with a host callback runs through Python inside the generated loop; an
  exception it raises ends the loop and surfaces as JAX's runtime error."""
  calls = []

  def host(v):
    calls.append(float(v))
    if v > 3:
      raise ValueError(f"too big: {v}")
    return np.float32(v * 2)
  f = ember.jit(lambda x, n: _checked(x, n, host))
  i, v = f(np.float32(0.5), 3)
  assert int(i) == 3 and float(v) == 4.0 and calls == [0.5, 2.0]
  assert loop_thunk(lambda x, n: _checked(x, n, host), np.float32(0.5), 3).loop is not None
  calls.clear()
  with pytest.raises(ember.errors.JaxRuntimeError, match="too big: 4.0"):
    ember.block_until_ready(f(np.float32(1.5), 5))
  assert calls == [1.5, 4.0]
  calls.clear()
  i, v = f(np.float32(0.25), 4)          # the loop runs again after an error
  assert int(i) == 4 and float(v) == 4.0 and calls == [0.25, 1.5]


def test_python_branch_calling_the_same_loop_again():
  """A branch's Python call that runs the same jitted loop (nested, recursively) takes the
  sub-executables' path while the generated loop's buffers are busy: no deadlock, and the
  outer loop's state is intact."""
  depth = []

  def host(v):
    depth.append(float(v))
    if len(depth) < 3:
      return np.asarray(f(np.float32(v), 2)[1], np.float32)
    return np.float32(v + 100)

  def body(c):
    i, v = c
    v = lax.cond(i == 0,
                 lambda v: ember.pure_callback(host, ember.ShapeDtypeStruct((), jnp.float32), v),
                 lambda v: v + 1.0, v)
    return i + 1, v
  f = ember.jit(lambda x, n: lax.while_loop(lambda c: c[0] < n, body, (0, x)))
  i, v = f(np.float32(1.0), 2)
  assert int(i) == 2 and float(v) == 104.0 and depth == [1.0, 1.0, 1.0]

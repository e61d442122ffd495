"""Regressions of issue 15 ("never a wrong answer") in autodiff and lax typing: scatter
max/min gradients at NaN/inf/ties, cumulative-reduction gradients, grad through while
loops that pass the differentiated carry through, loop result weak types, and lax binary
ops with mismatched dtypes.

Every expected value is a literal printed by JAX 0.12 (the oracle) or computed with NumPy;
each case runs eagerly and under jit.
"""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

nan, inf = np.nan, np.inf
MODES = ["eager", "jit"]


def _maybe_jit(fn, mode):
  return ember.jit(fn) if mode == "jit" else fn


def _close(got, want, rtol=1e-6):
  np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32), rtol=rtol,
                             atol=1e-6)


# --- 1. scatter max/min gradients ------------------------------------------------------------
# x, the .at[] index, the update; then JAX's (grad x, grad update) of
# sum(x.at[i].max(u) * [1..5]) and the same for .min.

_X = np.array([0., 0., 1., 3., 2.], np.float32)
SCATTER_CASES = {
    "nan_elsewhere": (np.array([nan, 0., .5, nan, 2.], np.float32), 2, 1.,
                      ([1, 2, 0, 4, 5], 3), ([1, 2, 3, 4, 5], 0)),
    "nan_at_index": (np.array([nan, 0., nan, nan, 2.], np.float32), 2, 1.,
                     ([1, 2, 0, 4, 5], 0), ([1, 2, 0, 4, 5], 0)),
    "inf_at_index": (np.array([0., 0., inf, -inf, 2.], np.float32), 2, 1.,
                     ([1, 2, 3, 4, 5], 0), ([1, 2, 0, 4, 5], 3)),
    "neg_inf_at_index": (np.array([0., 0., -inf, inf, 2.], np.float32), 2, 1.,
                         ([1, 2, 0, 4, 5], 3), ([1, 2, 3, 4, 5], 0)),
    "tie": (_X, 2, 1., ([1, 2, 1.5, 4, 5], 1.5), ([1, 2, 1.5, 4, 5], 1.5)),
    "nan_update": (_X, 2, nan, ([1, 2, 0, 4, 5], 0), ([1, 2, 0, 4, 5], 0)),
    "inf_update": (_X, 2, inf, ([1, 2, 0, 4, 5], 3), ([1, 2, 3, 4, 5], 0)),
    "repeated": (_X, np.array([2, 2, 4]), np.array([1., 1., 5.], np.float32),
                 ([1, 2, 1, 4, 0], [1, 1, 5]), ([1, 2, 1, 4, 5], [1, 1, 0])),
    "repeated_three_way_tie": (_X, np.array([2, 2, 0]), np.array([1., 1., -1.], np.float32),
                               ([1, 2, 1, 4, 5], [1, 1, 0]), ([0, 2, 1, 4, 5], [1, 1, 1])),
    "out_of_bounds_dropped": (_X, np.array([2, 7]), np.array([4., 1.], np.float32),
                              ([1, 2, 0, 4, 5], [3, 0]), ([1, 2, 3, 4, 5], [0, 0])),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("case", list(SCATTER_CASES))
def test_scatter_extremal_grad_matches_jax(case, op, mode):
  x, idx, u, want_max, want_min = SCATTER_CASES[case]
  want_x, want_u = want_max if op == "max" else want_min

  def f(x, u):
    return jnp.sum(getattr(x.at[idx], op)(u) * jnp.arange(1., 6.))
  gx, gu = _maybe_jit(ember.grad(f, argnums=(0, 1)), mode)(x, jnp.asarray(u, jnp.float32))
  _close(gx, want_x)
  _close(gu, want_u)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,want_gx,want_gu,want_jvp", [
    ("max", [[1, 2, 3, 4], [5, 0, 7, 0], [9, 10, 5.5, 12]], [0, 0, 5.5, 0], 495.),
    ("min", [[1, 2, 0, 4], [0, 0, 0, 0], [9, 10, 5.5, 12]], [8, 0, 12.5, 0], 427.),
])
def test_scatter_extremal_windows_grad_and_jvp(op, want_gx, want_gu, want_jvp, mode):
  """Row and column windows over NaN, -inf and ties; forward mode agrees with reverse."""
  x = np.array([[nan, 1., 2., 3.], [4., nan, 6., -inf], [1., 1., 1., 1.]], np.float32)
  u = np.array([0., 5., 1., nan], np.float32)
  w = np.arange(12, dtype=np.float32).reshape(3, 4) + 1

  def f(x, u):
    y = getattr(x.at[1], op)(u)
    return jnp.sum(getattr(y.at[:, 2], op)(u[:3]) * w)
  gx, gu = _maybe_jit(ember.grad(f, argnums=(0, 1)), mode)(x, u)
  _close(gx, want_gx)
  _close(gu, want_gu)
  jvp = _maybe_jit(lambda x, u: ember.jvp(f, (x, u), (w, np.ones(4, np.float32)))[1], mode)
  _close(jvp(x, u), want_jvp)


# --- 2. cumulative reductions: JAX differentiates the associative scan of the combining op ----
# grad of sum(lax.<op>(x, axis=0, reverse) * [1..n]) printed by JAX 0.12.

CUM_VECTORS = {
    "ties": [1, 3, 3, 2, 5, 5, 0],
    "with_nan": [1, nan, 3, 2, nan, 5, 0],
    "with_inf": [-inf, 1, inf, 2, inf, -inf, 0],
    "zeros": [2, 0, 3, 0, 0, -1, 4],
    "long_ties": [2] * 11 + [1] * 3 + [5] * 4,
}
CUM_GRADS = {
    ('cummax', 'ties', False): [1, 5.5, 3.5, 0, 11.5, 6.5, 0],
    ('cummax', 'ties', True): [0, 0, 0, 0, 7.5, 13.5, 7],
    ('cummax', 'with_nan', False): [1, 0, 0, 0, 0, 0, 0],
    ('cummax', 'with_nan', True): [0, 0, 0, 0, 0, 6, 7],
    ('cummax', 'with_inf', False): [1, 2, 16, 0, 9, 0, 0],
    ('cummax', 'with_inf', True): [0, 0, 3, 0, 12, 0, 13],
    ('cummax', 'zeros', False): [3, 0, 18, 0, 0, 0, 7],
    ('cummax', 'zeros', True): [0, 0, 0, 0, 0, 0, 28],
    ('cummax', 'long_ties', False): [
        10.53125, 9.53125, 9.28125, 7.78125, 9.84375, 7.34375, 8.46875, 4.96875, 13.25, 8.75,
        15.25, 0, 0, 0, 31.75, 16.75, 13, 4.5
    ],
    ('cummax', 'long_ties', True): [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 30, 38, 42.5, 60.5],
    ('cummin', 'ties', False): [21, 0, 0, 0, 0, 0, 7],
    ('cummin', 'ties', True): [0, 0, 0, 0, 0, 0, 28],
    ('cummin', 'with_nan', False): [1, 0, 0, 0, 0, 0, 0],
    ('cummin', 'with_nan', True): [0, 0, 0, 0, 0, 0, 13],
    ('cummin', 'with_inf', False): [21.5, 0, 0, 0, 0, 6.5, 0],
    ('cummin', 'with_inf', True): [0.5, 0, 0, 0, 0, 20.5, 7],
    ('cummin', 'zeros', False): [1, 8.25, 0, 3.25, 2.5, 13, 0],
    ('cummin', 'zeros', True): [0, 0, 0, 0, 0, 21, 7],
    ('cummin', 'long_ties', False): [
        8.09375, 7.09375, 6.84375, 5.34375, 7.40625, 4.90625, 6.03125, 2.53125, 8.375, 3.875, 5.5,
        58.5, 26.5, 20, 0, 0, 0, 0
    ],
    ('cummin', 'long_ties', True): [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 39, 26, 40, 3.75, 11.75, 16.25, 34.25
    ],
    ('cumprod', 'ties', False): [3256, 1085, 1083, 1611, 630, 540, 3150],
    ('cumprod', 'ties', True): [0, 0, 0, 0, 0, 0, 2162],
    ('cumprod', 'with_inf', False): [nan, nan, nan, nan, nan, -inf, inf],
    ('cumprod', 'with_inf', True): [nan, nan, nan, nan, nan, nan, nan],
    ('cumprod', 'zeros', False): [1, 22, 0, 0, 0, 0, 0],
    ('cumprod', 'zeros', True): [0, 0, 0, 0, -20, 24, 1],
    ('cumlogsumexp', 'ties', False): [
        1.814855, 6.021009, 4.2594156, 1.0501059, 9.284634, 5.5498714, 0.020108894
    ],
    ('cumlogsumexp', 'ties', True): [
        0.0078088017, 0.17400725, 0.35924065, 0.2289945, 7.091084, 13.050926, 7.0879364
    ],
    ('cumlogsumexp', 'with_inf', False): [1, 69.95704650878906, 25, 162.55923461914062, 18, 0, 7],
    ('cumlogsumexp', 'with_inf', True): [0, 8.154845237731934, 6, 73.89056396484375, 15, 0, 28],
    ('cumlogsumexp', 'zeros', False): [
        7.798, 0.9200092, 13.690369, 0.57624626, 0.44053623, 0.10170584, 4.4731307
    ],
    ('cumlogsumexp', 'zeros', True): [
        0.08648177, 0.037328117, 1.531785, 0.14648038, 0.2358203, 0.12691054, 25.835196
    ],
    ('cumlogsumexp', 'long_ties', False): [
        15.521724, 14.521724, 13.521724, 12.521724, 11.521724, 10.521724, 9.521724, 8.521724,
        7.5217237, 6.5217237, 5.5217237, 1.6634492, 1.2751133, 0.867604, 24.137093, 14.777329,
        8.629639, 3.9108295
    ],
    ('cumlogsumexp', 'long_ties', True): [
        0.0108171515, 0.03268803, 0.06585707, 0.11057689, 0.16710868, 0.23572265, 0.31669825,
        0.4103249, 0.5169022, 0.6367405, 0.7701615, 0.3375289, 0.39651453, 0.4603271, 28.883007,
        34.21634, 42.71634, 60.71634
    ],
}
MAT_GRADS = {
    ('cummax', 0, False): [0, 6, 2, 10, 12, 0, 0, 0, 0, 9, 0, 11],
    ('cummax', 0, True): [0, 0, 0, 0, 4, 0, 0, 0, 8, 15, 10, 21],
    ('cummax', 1, False): [0, 3.5, 2.5, 0, 6.5, 2.5, 0, 0, 8, 19.5, 7.75, 2.75],
    ('cummax', 1, True): [0, 0.5, 2.5, 3, 0, 0, 0, 7, 0, 8.5, 9.25, 20.25],
    ('cummin', 0, False): [4, 1, 2, 3, 0, 14, 0, 18, 8, 0, 0, 0],
    ('cummin', 0, True): [0, 0, 0, 0, 0, 6, 0, 10, 12, 9, 10, 11],
    ('cummin', 1, False): [6, 0, 0, 0, 6.5, 2.5, 0, 0, 38, 0, 0, 0],
    ('cummin', 1, True): [0, 0, 0, 6, 0, 0, 0, 7, 8, 4.5, 7.25, 18.25],
    ('cumprod', 0, False): [8, 101, nan, 65, 4, 150, 168, 124, 16, 54, nan, 22],
    ('cumprod', 0, True): [0, 10, nan, 15, 0, 40, 60, 65, 16, 25, nan, 24],
    ('cumprod', 1, False): [75, 25, 24, 27, nan, nan, 52, nan, 1678, 0, 0, 0],
    ('cumprod', 1, True): [0, 6, 10, 18, nan, nan, 32, nan, 1000, 225, 275, 286],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,vec,reverse", list(CUM_GRADS))
def test_cumulative_grad_matches_jax(op, vec, reverse, mode):
  x = np.array(CUM_VECTORS[vec], np.float32)

  def f(x):
    return jnp.sum(getattr(lax, op)(x, axis=0, reverse=reverse) * jnp.arange(1., x.shape[0] + 1))
  rtol = 2e-6 if op == "cumlogsumexp" else 1e-6
  _close(_maybe_jit(ember.grad(f), mode)(x), CUM_GRADS[op, vec, reverse], rtol=rtol)


def test_cummax_grad_breaks_ties_as_jax():
  """The issue's example: JAX's scan tree splits tied maxima in halves."""
  x = np.array([1, 3, 3, 2, 5, 5, 0], np.float32)
  g = ember.grad(lambda x: jnp.sum(lax.cummax(x)))
  for fn in (g, ember.jit(g)):
    _close(fn(x), [1, 2, 1, 0, 2, 1, 0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,axis,reverse", list(MAT_GRADS))
def test_cumulative_grad_along_axis_matches_jax(op, axis, reverse, mode):
  x = np.array([[1, 3, 3, 2], [2, 2, nan, 1], [0, 5, 5, 5]], np.float32)

  def f(x):
    y = getattr(lax, op)(x, axis=axis, reverse=reverse)
    return jnp.sum(y * jnp.arange(12.).reshape(3, 4))
  _close(_maybe_jit(ember.grad(f), mode)(x), np.reshape(MAT_GRADS[op, axis, reverse], (3, 4)))


@pytest.mark.parametrize("mode", MODES)
def test_cumulative_jvp_matches_jax(mode):
  """Forward mode: the tangent of cummax at ties (halves), cumprod through zeros."""
  x = np.array([1, 3, 3, 2, 5, 5, 0], np.float32)
  t = np.arange(1, 8, dtype=np.float32)
  jvp = lambda op, x: ember.jvp(lambda v: op(v), (x,), (t,))[1]
  _close(_maybe_jit(lambda x: jvp(lax.cummax, x), mode)(x), [1, 2, 2.5, 2.5, 5, 5.5, 5.5])
  z = np.array([2, 0, 3, 0, 0, -1, 4], np.float32)
  _close(_maybe_jit(lambda x: jvp(lax.cumprod, x), mode)(z), [1, 4, 12, 0, 0, 0, 0])


# XLA orders -0.0 < +0.0 in max/min: reductions, scans and scatters agree with lax.max.
SIGNED_ZERO_CASES = [  # x, then JAX's max, min, cummax, cummin, scatter max, scatter min
    ([0., -0., 0.], 0., -0., [0., 0., 0.], [0., -0., -0.], [0., -0., 0.], [-0., -0., 0.]),
    ([-0., 0., -0.], 0., -0., [-0., 0., 0.], [-0., -0., -0.], [0., 0., -0.], [-0., 0., -0.]),
    ([-0., -0.], -0., -0., [-0., -0.], [-0., -0.], [0., -0.], [-0., -0.]),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [np.float32, jnp.bfloat16])
@pytest.mark.parametrize("case", range(len(SIGNED_ZERO_CASES)))
def test_max_min_order_signed_zeros_as_xla(case, dtype, mode):
  x, *want = SIGNED_ZERO_CASES[case]
  ids = np.array([0, 0, 1])
  fns = [jnp.max, jnp.min, lax.cummax, lax.cummin,
         lambda v: v.at[ids].max(np.array([0., -0., -0.], dtype)),
         lambda v: v.at[ids].min(np.array([0., -0., 0.], dtype))]
  bits = lambda v: np.signbit(np.asarray(v, np.float32)).tolist()
  for fn, w in zip(fns, want):
    got = _maybe_jit(fn, mode)(jnp.asarray(np.array(x, dtype)))
    assert bits(got) == bits(w) and np.all(np.asarray(got, np.float32) == 0)
  assert bits(_maybe_jit(lax.max, mode)(dtype(0.), dtype(-0.))) == bits(0.)
  assert bits(_maybe_jit(lax.min, mode)(dtype(0.), dtype(-0.))) == bits(-0.)


# --- 3. grad through while loops whose body passes the differentiated carry through ---------
# JAX moves such carries (unread by the condition) out of the loop as body consts: their
# results are their inits, so reverse mode works; a carry whose tangent the loop changes
# still raises JAX's error.

def _passthrough(x):
  return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1), (x, 0))[0]


def _accumulating(x):
  return lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1, c[2] + c[0]), (x, 0, 0.))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn,want", [
    (_passthrough, 1.),
    (lambda x: _accumulating(x)[0], 1.),
    (lambda x: lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0], c[1] + 1, c[2] * 2.),
                              (x, 0, 1.))[0] * 3., 3.),
    (lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2., x), 8.),   # a scan: static trip count
    (lambda x: lax.fori_loop(0, 3, lambda i, c: (c[0] * 2., c[1]), (x, x))[1], 1.),
])
def test_grad_through_while_with_passthrough_carry(fn, want, mode):
  _close(_maybe_jit(ember.grad(fn), mode)(2.), want)
  _close(_maybe_jit(lambda x: ember.vjp(fn, x)[1](1.)[0], mode)(2.), want)


@pytest.mark.parametrize("mode", MODES)
def test_grad_through_fori_loop_with_traced_bound_passthrough(mode):
  """A traced trip count makes fori_loop a while loop; the passed-through carry differentiates
  in reverse mode, vmapped too."""
  def f(x, n):
    return lax.fori_loop(0, n, lambda i, c: (c[0], c[1] + i), (x, 0))[0]
  g = ember.jit(ember.grad(f)) if mode == "jit" else ember.grad(f)
  _close(g(2., jnp.int32(5)), 1.)
  _close(_maybe_jit(ember.vmap(ember.grad(_passthrough)), mode)(jnp.arange(3.)), [1., 1., 1.])
  _close(_maybe_jit(lambda x: ember.linearize(_passthrough, x)[1](3.), mode)(2.), 3.)


def test_passthrough_carry_is_a_body_const_in_the_jaxpr():
  """The jaxpr JAX 0.12 prints: the passed-through carry is a body const, the output is
  the input itself."""
  assert str(ember.make_jaxpr(_passthrough)(2.)) == """\
{ lambda ; a:f32[]. let
    _:i32[] = while[
      body_jaxpr={ lambda ; b:f32[] c:i32[]. let
          d:i32[] = add c 1:i32[]
        in (d,) }
      body_nconsts=1
      cond_jaxpr={ lambda ; e:i32[]. let f:bool[] = lt e 3:i32[] in (f,) }
      cond_nconsts=0
    ] a 0:i32[]
  in (a,) }"""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", [
    lambda x: _accumulating(x)[2],      # the loop changes the tangent
    lambda x: lax.while_loop(lambda c: c[1] < 3 + 0 * c[0], lambda c: (c[0], c[1] + 1),
                             (x, 0.))[0],   # read by the condition: stays a carry
])
def test_grad_through_while_still_rejects_loop_dependent_tangents(fn, mode):
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    _maybe_jit(ember.grad(fn), mode)(2.)


def test_grad_through_fori_loop_whose_bound_is_concrete_only_eagerly():
  """As JAX: eagerly the bound (computed from the differentiated input) is concrete, so
  fori_loop is a scan; under jit it is traced, a while loop, and reverse mode raises."""
  def f(x):
    return lax.fori_loop(0, jnp.int32(3) + 0 * x.astype(jnp.int32), lambda i, c: c * 2., x)
  _close(ember.grad(f)(2.), 8.)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
    ember.jit(ember.grad(f))(2.)


# --- 4. loop result dtypes and weak types ------------------------------------------------------
# fori_loop with concrete bounds is a scan over a Python-int counter (weak, the default int);
# with a traced bound it is a while loop whose counter takes the bounds' dtype. Each case:
# the loop of `a` (an int32 argument), then JAX 0.12's (dtype, weak_type) eagerly and under
# jit, without and with x64.
_FIVE = jnp.int32(5)   # a bound made outside the traced function: concrete under jit
LOOP_TYPES = {
    "while_promotes_weak_init": (lambda a: lax.while_loop(lambda c: c < 5, lambda c: c + a, 0),
                                 ("int32", False), ("int32", False), ("int32", False),
                                 ("int32", False)),
    "scan_promotes_weak_init": (lambda a: lax.scan(lambda c, x: (c + x, None), 0,
                                                   jnp.full(3, a))[0],
                                ("int32", False), ("int32", False), ("int32", False),
                                ("int32", False)),
    "scan_weak_ys": (lambda a: lax.scan(lambda c, x: (c, c + 1), 0, None, length=3)[1],
                     ("int32", True), ("int32", True), ("int64", True), ("int64", True)),
    "fori_traced_bounds": (lambda a: lax.fori_loop(a - a, a + 4, lambda i, c: c + i, 0),
                           ("int32", True), ("int32", False), ("int64", True),
                           ("int32", False)),
    "fori_traced_upper_counter": (lambda a: lax.fori_loop(0, a + 4, lambda i, c: i, 0),
                                  ("int32", True), ("int32", True), ("int64", True),
                                  ("int32", False)),
    "fori_float_carry": (lambda a: lax.fori_loop(0, a + 4, lambda i, c: c + 0.5, 0.),
                         ("float32", True), ("float32", True), ("float64", True),
                         ("float64", True)),
    "fori_numpy_bounds_counter": (lambda a: lax.fori_loop(np.int16(0), np.int16(5),
                                                          lambda i, c: i, 0),
                                  ("int32", True), ("int32", True), ("int64", True),
                                  ("int64", True)),
    # Bounds by kind; (dtype, weak_type, value). A jnp scalar built inside jit is a tracer
    # (JAX binds every constructor to the current trace), so the loop is a while loop whose
    # counter is that strong int32; eagerly, or built outside, the bound is concrete and the
    # loop a scan whose counter is a weak Python int (int64 under x64).
    "fori_py_bounds": (lambda a: lax.fori_loop(0, 5, lambda i, c: c + i, 0),
                       ("int32", True, 10), ("int32", True, 10), ("int64", True, 10),
                       ("int64", True, 10)),
    "fori_np_int32_bounds": (lambda a: lax.fori_loop(np.int32(0), np.int32(5),
                                                     lambda i, c: c + i, 0),
                             ("int32", True, 10), ("int32", True, 10), ("int64", True, 10),
                             ("int64", True, 10)),
    "fori_jnp_bound_made_outside": (lambda a: lax.fori_loop(0, _FIVE, lambda i, c: c + i, 0),
                                    ("int32", True, 10), ("int32", True, 10),
                                    ("int64", True, 10), ("int64", True, 10)),
    "fori_jnp_int32_bound_made_inside": (
        lambda a: lax.fori_loop(0, jnp.int32(5), lambda i, c: c + i, 0),
        ("int32", True, 10), ("int32", True, 10), ("int64", True, 10), ("int32", False, 10)),
    "fori_jnp_int32_bound_made_inside_counter": (
        lambda a: lax.fori_loop(0, jnp.int32(5), lambda i, c: i, 0),
        ("int32", True, 4), ("int32", True, 4), ("int64", True, 4), ("int32", False, 4)),
    "fori_jnp_array_bounds_made_inside": (   # jnp.array(5) is weak: a weak while counter
        lambda a: lax.fori_loop(jnp.array(0), jnp.array(5), lambda i, c: c + i, 0),
        ("int32", True, 10), ("int32", True, 10), ("int64", True, 10), ("int64", True, 10)),
    "fori_jnp_asarray_bound_made_inside": (
        lambda a: lax.fori_loop(0, jnp.asarray(5), lambda i, c: i, 0),
        ("int32", True, 4), ("int32", True, 4), ("int64", True, 4), ("int64", True, 4)),
}


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", list(LOOP_TYPES))
def test_loop_result_dtype_and_weak_type_match_jax(case, mode, x64):
  fn, *want = LOOP_TYPES[case]
  dtype, weak, *value = want[2 * x64 + (mode == "jit")]
  ctx = ember.enable_x64() if x64 else ember.enable_x64(False)
  with ctx:
    out = _maybe_jit(fn, mode)(jnp.int32(1))
    assert (str(out.dtype), out.weak_type) == (dtype, weak)
    assert not value or [int(out)] == value


# Constructors called inside jit give values of the trace, as in JAX 0.12 (not concrete
# Arrays): converting them to Python / NumPy values raises JAX's errors.
@pytest.mark.parametrize("fn,err,msg", [
    (lambda: float(jnp.asarray(2.)), ember.errors.ConcretizationTypeError,
     "traced array with shape float32"),
    (lambda: np.asarray(jnp.array([1, 2])), ember.errors.TracerArrayConversionError,
     "traced array with shape int32\\[2\\]"),
    (lambda: bool(jnp.array(True)), ember.errors.TracerBoolConversionError,
     "traced array with shape bool"),
    (lambda: np.asarray(jnp.float32(np.ones(2))), ember.errors.TracerArrayConversionError,
     "traced array with shape float32\\[2\\]"),
])
def test_constructors_inside_jit_are_traced(fn, err, msg):
  with pytest.raises(err, match=msg):
    ember.jit(fn)()
  fn()  # eagerly they are concrete


def test_asarray_of_a_concrete_array_inside_jit_is_that_array():
  """JAX returns the operand itself when asarray has nothing to convert."""
  seen = []
  ember.jit(lambda: seen.append(jnp.asarray(_FIVE) is _FIVE) or seen.append(
      jnp.int32(_FIVE) is _FIVE))()
  assert seen == [True, True]


# make_jaxpr of constructors and of a fori_loop bounded by one, printed by JAX 0.12.
CONSTRUCTOR_JAXPRS = [
    (lambda: lax.fori_loop(0, jnp.int32(5), lambda i, c: c + i, 0),
     "{ lambda ; . let\n"
     "    _:i32[] _:i32[] a:i32[] = while[\n"
     "      body_jaxpr={ lambda ; b:i32[] c:i32[] d:i32[]. let\n"
     "          e:i32[] = add b 1:i32[]\n"
     "          f:i32[] = add d b\n"
     "        in (e, c, f) }\n"
     "      body_nconsts=0\n"
     "      cond_jaxpr={ lambda ; g:i32[] h:i32[] i:i32[]. let\n"
     "          j:bool[] = lt g h\n"
     "        in (j,) }\n"
     "      cond_nconsts=0\n"
     "    ] 0:i32[] 5:i32[] 0:i32[]\n"
     "  in (a,) }"),
    (lambda: jnp.array([1., 2.]) * jnp.float32(3) + jnp.asarray(np.arange(2.)),
     "{ lambda a:f32[2] b:f32[2]; . let\n"
     "    c:f32[2] = mul a 3.0:f32[]\n"
     "    d:f32[2] = add c b\n"
     "  in (d,) }"),
    (lambda: jnp.zeros(3) + 1,
     "{ lambda ; . let\n"
     "    a:f32[3] = broadcast_in_dim 0.0:f32[]\n"
     "    b:f32[3] = add a 1.0:f32[]\n"
     "  in (b,) }"),
    (lambda: jnp.int32(5) * 2, "{ lambda ; . let a:i32[] = mul 5:i32[] 2:i32[] in (a,) }"),
]


@pytest.mark.parametrize("i", range(len(CONSTRUCTOR_JAXPRS)))
def test_constructor_jaxprs_match_jax(i):
  fn, want = CONSTRUCTOR_JAXPRS[i]
  assert str(ember.make_jaxpr(fn)()) == want


# --- 5. lax binary ops with mismatched dtypes -------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,jnp_fn", [
    ("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("div", "divide"),
    ("max", "maximum"), ("min", "minimum"), ("eq", "equal"), ("lt", "less"),
])
def test_lax_binary_mismatched_array_dtypes_raise(op, jnp_fn, mode):
  """lax does not promote (JAX's TypeError naming both dtypes and the jnp function that
  does); the jnp function promotes."""
  x, y = jnp.array([1., 2.], jnp.float32), jnp.array([1, 2], jnp.int32)
  tip = "$" if op == "lt" else rf" \(Tip: jnp\.{jnp_fn} is a similar function"  # JAX: none
  with pytest.raises(TypeError, match=rf"lax\.{op} requires arguments to have the same "
                                      rf"dtypes, got float32, int32\.{tip}"):
    _maybe_jit(getattr(lax, op), mode)(x, y)
  want = getattr(np, jnp_fn)(np.array([1., 2.], np.float32), np.array([1, 2], np.int32))
  got = _maybe_jit(getattr(jnp, jnp_fn), mode)(x, y)
  np.testing.assert_array_equal(np.asarray(got), want.astype(np.asarray(got).dtype))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op,want", [
    ("shift_right_logical", [0, 1, 127]), ("shift_left", [2, 4, 254]),
    ("shift_right_arithmetic", [0, 1, 255]),
])
def test_lax_shifts_of_same_dtype_and_jnp_shifts(op, want, mode):
  x = jnp.array([1, 2, 255], jnp.uint8)
  out = _maybe_jit(lambda x: getattr(lax, op)(x, np.uint8(1)), mode)(x)
  assert out.dtype == np.uint8 and np.asarray(out).tolist() == want
  with pytest.raises(TypeError, match=rf"lax\.{op} requires arguments to have the same "
                                      "dtypes, got uint8, int32"):
    _maybe_jit(lambda x: getattr(lax, op)(x, jnp.int32(1)), mode)(x)
  jnp_fn, np_fn = ((jnp.left_shift, np.left_shift) if op == "shift_left" else
                    (jnp.right_shift, np.right_shift))
  out = _maybe_jit(lambda x: jnp_fn(x, 1), mode)(x)   # jnp promotes the Python int
  assert out.dtype == np.uint8
  assert np.asarray(out).tolist() == np_fn(np.array([1, 2, 255], np.uint8), 1).tolist()


# fuzz seed 106444 (10,000-program campaign): grad of a length-33 cummax never finished
# compiling (LLVM, 6 GB): the associative scan's levels were fused into each other and each
# reads the level below twice. Each level is now a fusion boundary (optimization_barrier).
@pytest.mark.parametrize("op", ["cummax", "cummin", "cumprod", "cumlogsumexp"])
def test_grad_of_long_cumulative_ops_compiles(op):
  x = np.random.default_rng(7).uniform(0.5, 1.5, (65, 3)).astype(np.float32)
  x[10:20] = x[10]            # ties
  f = lambda x: jnp.sum(getattr(lax, op)(x, axis=0) * jnp.arange(3.0))
  eager = np.asarray(ember.grad(f)(x))
  got = np.asarray(ember.jit(ember.grad(f))(x))
  np.testing.assert_allclose(got, eager, rtol=2e-5, atol=1e-6)   # orders of f32 sums differ
  assert "optimization_barrier" in str(ember.make_jaxpr(ember.grad(f))(x))

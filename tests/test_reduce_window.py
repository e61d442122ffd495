"""lax.reduce_window and pooling (ember/_src/primitives/windows.py).

Values against a float64 NumPy reference written here from XLA's ReduceWindow semantics
(a loop over output elements and window offsets; padding and base-dilation holes hold the
init value), eager and jitted on the same cases: 1-D, 2-D and 4-D (NHWC pooling) windows,
strides, SAME/VALID/explicit (also negative) padding, base and window dilation, floats and
ints; the generic form (product, a two-operand reduction); derivatives checked against
finite differences (max pooling on distinct values, so no ties); vmap; the errors users hit.
"""
import itertools

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember.test_util import check_grads

rng = np.random.default_rng(0)


def naive(x, init, op, window, strides, padding, base, wdil):
  """XLA's ReduceWindow, one output element and one window offset at a time (float64)."""
  x = np.asarray(x, np.float64)
  if isinstance(padding, str):
    spans = [(w - 1) * d + 1 for w, d in zip(window, wdil)]
    padding = lax.padtype_to_pads(x.shape, spans, strides, padding)
  dil = [(n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base)]
  out_shape = [max((d + lo + hi - ((w - 1) * wd + 1)) // s + 1, 0)
               for d, (lo, hi), w, wd, s in zip(dil, padding, window, wdil, strides)]
  out = np.empty(out_shape)
  for o in np.ndindex(*out_shape):
    acc = float(init)
    for k in np.ndindex(*window):
      v = float(init)
      pos = [oi * s + ki * wd - lo for oi, s, ki, wd, (lo, _) in
             zip(o, strides, k, wdil, padding)]
      if all(0 <= p < d and p % b == 0 for p, d, b in zip(pos, dil, base)):
        v = x[tuple(p // b for p, b in zip(pos, base))]
      acc = op(acc, v)
    out[o] = acc
  return out


OPS = {"sum": (lax.add, 0.0, lambda a, b: a + b),
       "max": (lax.max, -np.inf, max),
       "min": (lax.min, np.inf, min)}

# (operand shape, window, strides, padding, base_dilation, window_dilation)
GEOMETRIES = [
    ((9,), (3,), (1,), "VALID", (1,), (1,)),
    ((10,), (4,), (3,), "SAME", (1,), (1,)),
    ((7,), (2,), (2,), ((2, 1),), (2,), (2,)),
    ((5, 6), (2, 3), (1, 2), "SAME", (1, 1), (1, 1)),
    ((5, 6), (3, 2), (2, 1), ((1, -1), (2, 0)), (1, 2), (2, 1)),
    ((6, 5), (1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((2, 7, 6, 3), (1, 2, 2, 1), (1, 2, 2, 1), "VALID", None, None),
    ((2, 7, 6, 3), (1, 3, 3, 1), (1, 1, 1, 1), "SAME", None, None),
    ((2, 5, 6, 2), (1, 3, 2, 1), (1, 2, 1, 1), "SAME_LOWER", (1, 2, 1, 1), (1, 1, 2, 1)),
]


def _ones(v, n):
  return (1,) * n if v is None else v


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("geom", GEOMETRIES, ids=lambda g: f"{g[0]}w{g[1]}")
def test_monoids_against_the_float64_reference(op, geom):
  shape, window, strides, padding, base, wdil = geom
  fn, init, pyop = OPS[op]
  x = rng.normal(size=shape).astype(np.float32)
  want = naive(x, init, pyop, window, strides, padding, _ones(base, len(shape)),
               _ones(wdil, len(shape)))
  f = lambda v: lax.reduce_window(v, init, fn, window, strides, padding, base, wdil)
  for got in (f(x), ember.jit(f)(x)):
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int16])
def test_integer_pools(dtype):
  x = rng.integers(0, 40, (4, 7, 5)).astype(dtype)   # window sums stay below 256
  info = np.iinfo(dtype)
  for fn, init, pyop in ((lax.add, 0, lambda a, b: a + b), (lax.max, info.min, max),
                         (lax.min, info.max, min)):
    args = ((2, 3, 2), (1, 2, 1), "SAME", (1, 1, 2), (2, 1, 1))
    want = naive(x, init, pyop, *args[:3], (1, 1, 2), (2, 1, 1)).astype(dtype)
    f = lambda v: lax.reduce_window(v, dtype(init), fn, *args)
    for got in (f(x), ember.jit(f)(x)):
      assert np.asarray(got).dtype == x.dtype
      np.testing.assert_array_equal(np.asarray(got), want)


def test_monoid_init_binds_the_specialized_primitives():
  x = np.ones((4, 4), np.float32)
  for fn, init, name in ((lax.add, 0.0, "reduce_window_sum"), (lax.max, -np.inf,
                                                               "reduce_window_max"),
                         (lax.min, np.inf, "reduce_window_min"), (lax.add, 1.0, "reduce_window"),
                         (lax.mul, 1.0, "reduce_window")):
    jaxpr = ember.make_jaxpr(lambda v: lax.reduce_window(v, init, fn, (2, 2), (1, 1),
                                                         "VALID"))(x)
    assert [e.primitive.name for e in jaxpr.eqns] == [name]
  # a non-identity init folds in (and fills the padding) as in XLA
  got = lax.reduce_window(np.arange(4.0, dtype=np.float32), 1.0, lax.add, (2,), (1,), "SAME")
  np.testing.assert_array_equal(np.asarray(got), [2.0, 4.0, 6.0, 5.0])


def test_generic_product_and_two_operand_reductions():
  x = rng.uniform(0.5, 1.5, (3, 6, 5)).astype(np.float32)
  y = rng.normal(size=(3, 6, 5)).astype(np.float32)
  args = ((1, 2, 3), (1, 2, 1), "SAME", (1, 1, 1), (1, 1, 2))
  prod = lambda v: lax.reduce_window(v, 1.0, lax.mul, *args)
  pair = lambda a, b: lax.reduce_window((a, b), (0.0, -np.inf),
                                        lambda s, t: (s[0] + t[0], lax.max(s[1], t[1])), *args)
  want_p = naive(x, 1.0, lambda a, b: a * b, *args)
  want_s = naive(x, 0.0, lambda a, b: a + b, *args)
  want_m = naive(y, -np.inf, max, *args)
  for got in (prod(x), ember.jit(prod)(x)):
    np.testing.assert_allclose(np.asarray(got), want_p, rtol=2e-6)
  for s, m in (pair(x, y), ember.jit(pair)(x, y)):
    np.testing.assert_allclose(np.asarray(s), want_s, rtol=2e-6, atol=2e-6)
    np.testing.assert_array_equal(np.asarray(m), want_m.astype(np.float32))


def test_pytree_operands_keep_their_structure():
  x = np.arange(6.0, dtype=np.float32)
  out = lax.reduce_window({"a": x, "b": x}, {"a": 0.0, "b": 1.0},
                          lambda s, t: {"a": s["a"] + t["a"], "b": s["b"] * t["b"]}, (2,))
  assert set(out) == {"a", "b"}
  np.testing.assert_array_equal(np.asarray(out["a"]), x[:-1] + x[1:])
  np.testing.assert_array_equal(np.asarray(out["b"]), x[:-1] * x[1:])


# --------------------------------------------------------------------------------------
# Derivatives
# --------------------------------------------------------------------------------------

def _distinct(shape):
  """Values far enough apart that finite differences never swap a window's max."""
  n = int(np.prod(shape))
  return (rng.permutation(n).reshape(shape) * 0.1).astype(np.float64)


GRAD_GEOMETRIES = [
    ((2, 6, 5, 2), (1, 2, 2, 1), (1, 2, 2, 1), "VALID", None, None),
    ((2, 5, 5, 1), (1, 3, 3, 1), (1, 1, 1, 1), "SAME", None, None),
    ((7, 6), (3, 2), (2, 1), ((1, -1), (2, 1)), (2, 1), (1, 2)),
]


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("geom", GRAD_GEOMETRIES, ids=lambda g: f"{g[0]}w{g[1]}")
def test_jvp_and_vjp_against_finite_differences(op, geom):
  shape, window, strides, padding, base, wdil = geom
  fn, init, _ = OPS[op]
  with ember.enable_x64():
    x = _distinct(shape)
    f = lambda v: lax.reduce_window(v, init, fn, window, strides, padding, base, wdil)
    check_grads(f, (x,), order=1, modes=("fwd", "rev"))
    check_grads(ember.jit(f), (x,), order=1, modes=("fwd", "rev"))
    if op == "sum":
      check_grads(f, (x,), order=2, modes=("fwd", "rev"))


def test_max_pool_gradient_goes_to_each_window_winner():
  x = np.array([[1.0, 5.0, 2.0, 2.0], [3.0, 4.0, 2.0, 2.0]], np.float32)
  pool = lambda v: jnp.sum(lax.reduce_window(v, -np.inf, lax.max, (2, 2), (2, 2), "VALID"))
  want = np.array([[0, 1, 1, 0], [0, 0, 0, 0]], np.float32)  # a tie: the first element
  for g in (ember.grad(pool)(x), ember.jit(ember.grad(pool))(x)):
    np.testing.assert_array_equal(np.asarray(g), want)
  jaxpr = ember.make_jaxpr(ember.grad(pool))(x)
  assert "select_and_scatter_add" in [e.primitive.name for e in jaxpr.eqns]


def test_generic_jvp_and_init_tangent_error():
  x = rng.uniform(0.5, 1.5, (6,)).astype(np.float32)
  t = rng.normal(size=6).astype(np.float32)
  f = lambda v: lax.reduce_window(v, 1.0, lax.mul, (3,), (1,), "SAME")
  _, got = ember.jvp(f, (x,), (t,))
  xp = np.pad(x.astype(np.float64), 1, constant_values=1)
  tp = np.pad(t.astype(np.float64), 1)
  want = [sum(tp[i + k] * np.prod([xp[i + j] for j in range(3) if j != k]) for k in range(3))
          for i in range(6)]
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5)
  g = lambda v, i: lax.reduce_window(v, i, lax.mul, (3,), (1,), "SAME")
  with pytest.raises(TypeError, match="init_value tangents"):
    ember.jvp(g, (x, np.float32(2.0)), (t, np.float32(1.0)))


# --------------------------------------------------------------------------------------
# vmap
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["sum", "max", "mul"])
def test_vmap_adds_a_unit_window_dim(op):
  x = rng.normal(size=(3, 5, 4)).astype(np.float32)
  fn, init = {"sum": (lax.add, 0.0), "max": (lax.max, -np.inf), "mul": (lax.mul, 1.0)}[op]
  f = lambda v: lax.reduce_window(v, init, fn, (2, 3), (1, 2), "SAME", (2, 1), (1, 1))
  want = np.stack([np.asarray(f(v)) for v in x])
  for axis in (0, 1, 2):
    got = ember.vmap(f, in_axes=axis)(np.moveaxis(x, 0, axis))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(ember.jit(ember.vmap(f))(x)), want, rtol=1e-6)


def test_vmap_of_the_max_pool_gradient():
  x = _distinct((3, 4, 6)).astype(np.float32)
  g = ember.grad(lambda v: jnp.sum(lax.reduce_window(v, -np.inf, lax.max, (2, 3), (2, 1),
                                                     "SAME") ** 2))
  want = np.stack([np.asarray(g(v)) for v in x])
  np.testing.assert_allclose(np.asarray(ember.vmap(g)(x)), want, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(ember.vmap(g, in_axes=2)(np.moveaxis(x, 0, 2))), want,
                             rtol=1e-6)


# --------------------------------------------------------------------------------------
# Compiled form and errors
# --------------------------------------------------------------------------------------

def test_text_and_fusion_with_elementwise_producers_and_consumers():
  x = rng.normal(size=(2, 8, 8, 4)).astype(np.float32)
  f = lambda v: lax.reduce_window(jnp.maximum(v, 0), 0.0, lax.add, (1, 3, 3, 1),
                                  (1, 1, 1, 1), "SAME") / 9.0
  lowered = ember.jit(f).lower(x)
  assert '"stablehlo.reduce_window"' in lowered.as_text()
  compiled = lowered.compile().as_text()
  assert "window={size=1x3x3x1 pad=0_0x1_1x1_1x0_0}" in compiled
  assert compiled.count("fusion(") == 1        # relu, the windowed sum and the scale
  want = naive(np.maximum(x, 0), 0.0, lambda a, b: a + b, (1, 3, 3, 1), (1,) * 4, "SAME",
               (1,) * 4, (1,) * 4) / 9
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), want, rtol=2e-6, atol=2e-6)


def test_large_windows_are_loops():
  x = rng.normal(size=(3, 40)).astype(np.float32)
  f = lambda v: lax.reduce_window(v, -np.inf, lax.max, (2, 35), (1, 3), "SAME")
  want = naive(x, -np.inf, max, (2, 35), (1, 3), "SAME", (1, 1), (1, 1))
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(x)), want.astype(np.float32))


def test_rank_0_and_empty_operands():
  f0 = lambda v: lax.reduce_window(v, -np.inf, lax.max, (), (), ())
  for got in (f0(np.float32(3)), ember.jit(f0)(np.float32(3))):
    assert got.shape == () and float(got) == 3.0
  e = np.zeros((0, 4), np.float32)   # every window holds only padding: the init value
  for fn, init, want in ((lax.add, 1.0, 5.0), (lax.max, -np.inf, -np.inf)):
    f = lambda v: lax.reduce_window(v, init, fn, (2, 2), (1, 1), ((1, 2), (0, 0)))
    for got in (f(e), ember.jit(f)(e)):
      np.testing.assert_array_equal(np.asarray(got), np.full((2, 3), want, np.float32))


def test_reduce_window_shape_tuple():
  assert lax.reduce_window_shape_tuple((7, 6), (3, 2), (2, 1), ((1, -1), (2, 0)), (1, 2),
                                       (2, 1)) == (2, 12)
  assert lax.reduce_window_shape_tuple((4,), (5,), (1,), ((0, 0),)) == (0,)


@pytest.mark.parametrize("call,exc,match", [
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2,), (1,)), TypeError,
     r"wrong number of window_dimensions for operand: got operand shape \(4, 5\)"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1,)), TypeError,
     "wrong number of window_strides"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (0, 1)), ValueError,
     r"window_strides must be positive, got \(0, 1\)"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), ((0, 0),)), TypeError,
     "padding must be one"),
    (lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL"), TypeError,
     "Unknown padding type"),
    (lambda x: lax.reduce_window(x, np.int32(1), lax.mul, (2, 2)), TypeError,
     "inconsistent dtypes for operands and init_values"),
    (lambda x: lax.reduce_window(x, np.ones(2, np.float32), lax.mul, (2, 2)), TypeError,
     "init_values to be scalars"),
    (lambda x: lax.reduce_window((x, x), (0.0,), lax.add, (2, 2)), ValueError,
     "same tree structure"),
    (lambda x: lax.reduce_window(x, 0.0, lambda a, b: (a, b), (2, 2)), TypeError,
     "same tree structure as the operands"),
    (lambda x: lax.reduce_window(x > 0, False, lax.add, (2, 2)), TypeError,
     "reduce_window_sum does not accept dtype bool"),
])
def test_errors(call, exc, match):
  x = np.ones((4, 5), np.float32)
  with pytest.raises(exc, match=match):
    call(x)


def test_tiers_give_the_same_bits():
  """Window reductions fold in a fixed order with no reassociation: the quick tier, its
  tier-up and an opt_level=0 compile compute the same bits (backends/cpu/tiering.py)."""
  from ember._src.base import flags
  x = rng.normal(size=(2, 9, 8, 32)).astype(np.float32)
  x[0, 0, 0, :4] = [np.inf, -np.inf, -0.0, 1e-40]
  f = lambda v: (lax.reduce_window(v, -np.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                 lax.reduce_window(v, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9,
                 ember.grad(lambda u: jnp.sum(lax.reduce_window(
                     u, -np.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")))(v))
  executable = lambda: ember.jit(f).lower(x).compile()._computation.executable
  exe = executable()
  quick = [np.array(o) for o in exe.execute([x])]
  if exe.tier_up_pending is not None:
    exe.tier_up_pending.wait()
  optimized = exe.execute([x])
  with flags.override(opt_level=0):
    low = executable().execute([x])
  for outs in (optimized, low):
    for q, o in zip(quick, outs):
      np.testing.assert_array_equal(np.asarray(o).view(np.uint32), q.view(np.uint32))

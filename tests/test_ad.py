"""Autodiff: gradients of every differentiable primitive against central finite differences
in float64 (eager grad, jit(grad) with the compiled result checked against the reference
interpreter, grad(jit)), analytic derivatives, jvp / linearize / vjp, higher order
(grad(grad), jacfwd(jacrev), hessian), JAX's values at non-differentiable points,
printed jaxprs (copied from JAX 0.12), weak types, the errors users hit, checkpoint, and
the seed-001 MLP training step (value_and_grad inside jit)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

f32, f64 = np.float32, np.float64


pytestmark = pytest.mark.usefixtures("check_compiled")


def fd_grad(f, x, eps=1e-6):
  """Central differences of scalar f at float64 x."""
  x = np.array(x, f64)
  g = np.zeros_like(x)
  for i in np.ndindex(x.shape):
    xp, xm = x.copy(), x.copy()
    xp[i] += eps
    xm[i] -= eps
    g[i] = (float(f(jnp.asarray(xp))) - float(f(jnp.asarray(xm)))) / (2 * eps)
  return g


def rand(shape, seed=0, lo=None, hi=None):
  rng = np.random.default_rng(seed)
  if lo is not None:
    return rng.uniform(lo, hi, shape)
  return rng.standard_normal(shape)


def _weights(shape):
  size = int(np.prod(shape, dtype=np.int64))
  return np.linspace(0.5, 1.5, size).reshape(shape) if shape else 1.3


def scalarize(fn):
  """sum(fn(x) * w) with fixed weights, so every output element matters differently."""
  def f(x):
    out = fn(x)
    outs = out if isinstance(out, (list, tuple)) else [out]
    total = 0.0
    for o in outs:
      o = jnp.real(o) if jnp.iscomplexobj(o) else o
      total = total + jnp.sum(o * _weights(o.shape))
    return total
  return f


I = lambda *idx: np.array(idx)
GDN = lax.GatherDimensionNumbers
SDN = lax.ScatterDimensionNumbers
_SDN_ROWS = SDN(update_window_dims=(1,), inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0,))

# name -> (fn of one float64 array, input shape, input domain (lo, hi) or None)
PRIMITIVES = {
    # elementwise unary
    "exp": (lax.exp, (2, 3), None), "exp2": (lax.exp2, (2, 3), None),
    "log": (lax.log, (2, 3), (0.5, 2)), "log2": (lax.log2, (2, 3), (0.5, 2)),
    "expm1": (lax.expm1, (2, 3), None), "log1p": (lax.log1p, (2, 3), (-0.5, 2)),
    "tanh": (lax.tanh, (2, 3), None), "logistic": (lax.logistic, (2, 3), None),
    "sin": (lax.sin, (2, 3), None), "cos": (lax.cos, (2, 3), None),
    "tan": (lax.tan, (2, 3), (-1, 1)), "sqrt": (lax.sqrt, (2, 3), (0.5, 2)),
    "rsqrt": (lax.rsqrt, (2, 3), (0.5, 2)), "cbrt": (lax.cbrt, (2, 3), (0.5, 2)),
    "asin": (lax.asin, (2, 3), (-0.8, 0.8)), "acos": (lax.acos, (2, 3), (-0.8, 0.8)),
    "atan": (lax.atan, (2, 3), None), "sinh": (lax.sinh, (2, 3), None),
    "cosh": (lax.cosh, (2, 3), None), "asinh": (lax.asinh, (2, 3), None),
    "acosh": (lax.acosh, (2, 3), (1.5, 3)), "atanh": (lax.atanh, (2, 3), (-0.8, 0.8)),
    "erf": (lax.erf, (2, 3), None), "erfc": (lax.erfc, (2, 3), None),
    "erf_inv": (lax.erf_inv, (2, 3), (-0.8, 0.8)), "lgamma": (lax.lgamma, (2, 3), (0.5, 4)),
    "digamma": (lax.digamma, (2, 3), (0.5, 4)),
    "digamma_negative": (lax.digamma, (2,), (-0.8, -0.2)),
    "bessel_i0e": (lax.bessel_i0e, (2, 4), (-20, 20)),
    "neg": (lax.neg, (2, 3), None), "abs": (lax.abs, (2, 3), None),
    "square": (lax.square, (2, 3), None),
    "integer_pow": (lambda x: lax.integer_pow(x, 3), (2, 3), None),
    "integer_pow_neg": (lambda x: lax.integer_pow(x, -2), (2, 3), (0.5, 2)),
    "reciprocal": (lax.reciprocal, (2, 3), (0.5, 2)),
    "convert_element_type": (lambda x: lax.convert_element_type(
        lax.convert_element_type(x, f32), f64) * x, (3,), None),
    "reduce_precision": (lambda x: lax.reduce_precision(x, 11, 52), (3,), None),
    "sign_floor_ceil_round": (lambda x: x * (lax.sign(x) + lax.floor(x) + lax.ceil(x)
                                            + lax.round(x)), (2, 3), None),
    "stop_gradient": (lambda x: x * lax.stop_gradient(x) + x ** 2, (3,), None),
    "optimization_barrier": (lambda x: lax.optimization_barrier((x, 2 * x))[1], (3,), None),
    # elementwise binary (second operand derived from x, broadcasting 0-d and size 1)
    "add": (lambda x: lax.add(x, x[0:1] ** 2), (4,), None),
    "sub": (lambda x: lax.sub(x[0, 0] * 2, x), (2, 2), None),
    "mul": (lambda x: lax.mul(x, lax.sin(x)), (2, 3), None),
    "div": (lambda x: lax.div(lax.sin(x), x[0:1, :] + 3), (2, 3), None),
    "rem": (lambda x: lax.rem(x * 3, x * 0 + 1.3), (2, 3), (0.1, 2)),
    "max": (lambda x: lax.max(x, lax.cos(x)), (2, 3), None),
    "min": (lambda x: lax.min(x, lax.cos(x)), (2, 3), None),
    "atan2": (lambda x: lax.atan2(x, lax.cos(x) + 2), (2, 3), None),
    "pow": (lambda x: lax.pow(x, lax.cos(x)), (2, 3), (0.5, 2)),
    "pow_int_exponent": (lambda x: lax.pow(x, np.int32(3)), (2, 3), None),
    # JAX 0.12: d nextafter(x, y) = dx (a one-ulp step is locally the identity), 0 for y
    "nextafter": (lambda x: x * lax.nextafter(x, x + 1), (3,), None),
    "select_n": (lambda x: lax.select_n(x > 0, x ** 2, lax.sin(x)), (2, 3), None),
    "select_n_int": (lambda x: lax.select_n(np.array([0, 1, 2]), x, x ** 2, x ** 3), (3,), None),
    "clamp": (lambda x: lax.clamp(x[0, 0] * 0.3, x, x * 0.5 + 1), (2, 3), None),
    "complex_real_imag": (lambda x: lax.real(lax.complex(x, x ** 2) * lax.complex(x, 1.0))
                          + lax.imag(lax.conj(lax.complex(x, lax.sin(x)))), (2, 3), None),
    "complex_abs": (lambda x: lax.abs(lax.complex(x, lax.cos(x))), (2, 3), None),
    # structural
    "broadcast_in_dim": (lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (0, 2)) ** 2, (2, 1), None),
    "reshape": (lambda x: lax.reshape(x, (3, 2)) * np.arange(6.).reshape(3, 2), (2, 3), None),
    "transpose": (lambda x: lax.transpose(x, (2, 0, 1)) ** 2, (2, 3, 2), None),
    "squeeze": (lambda x: lax.squeeze(x, (1,)) ** 2, (3, 1), None),
    "rev": (lambda x: lax.rev(x, (0,)) * np.arange(6.).reshape(2, 3), (2, 3), None),
    "slice_strided": (lambda x: lax.slice(x, (0, 1), (3, 4), (2, 2)) ** 2, (3, 4), None),
    "concatenate": (lambda x: lax.concatenate([x, x ** 2, x[:1]], 0), (2, 3), None),
    "stack_split": (lambda x: jnp.stack(jnp.split(x ** 2, 3, axis=1), axis=0), (2, 6), None),
    "tile": (lambda x: jnp.tile(x, (2, 3)) ** 3, (2, 2), None),
    "pad": (lambda x: lax.pad(x, np.float64(1.5), [(1, -1, 1), (2, 0, 0)]) ** 2, (3, 2), None),
    "pad_value": (lambda x: lax.pad(x[1:], x[0] ** 2, [(1, 2, 1)]) ** 2, (4,), None),
    # indexing
    "dynamic_slice": (lambda x: lax.dynamic_slice(x, (1, 5), (2, 2)) ** 2, (3, 4), None),  # clamped
    "dynamic_update_slice": (lambda x: lax.dynamic_update_slice(x, x[:2, :2] ** 2, (1, 1)),
                             (3, 4), None),
    "gather": (lambda x: x[I(0, 2, 2), 1:3] ** 2, (3, 4), None),
    "gather_fill": (lambda x: x.at[I(0, 5, 1)].get(mode="fill", fill_value=2.0) ** 2, (3, 2), None),
    "scatter": (lambda x: x.at[I(0, 0, 1)].set(x[1:] * 3), (4, 2), None),
    "scatter_add": (lambda x: (x.at[I(0, 0, 2)].add(x[1:] ** 2)) ** 2, (4, 2), None),
    "scatter_sub": (lambda x: (x.at[I(0, 0, 2)].subtract(x[1:] ** 2)) ** 2, (4, 2), None),
    "scatter_mul": (lambda x: x.at[I(0, 2)].multiply(x[1:3] + 2, unique_indices=True), (4, 2), None),
    "scatter_max": (lambda x: x.at[I(0, 0, 1)].max(x[1:] * 2), (4, 2), None),
    "scatter_min": (lambda x: x.at[I(0, 0, 1)].min(x[1:] * 2), (4, 2), None),
    "lax_scatter": (lambda x: lax.scatter(x, I([1], [3]), x[:2] * 5, _SDN_ROWS), (4, 2), None),
    # reductions
    "reduce_sum": (lambda x: lax.reduce_sum(x ** 2, (0, 2)), (2, 3, 2), None),
    "reduce_prod": (lambda x: lax.reduce_prod(x, (1,)), (2, 3), None),
    "reduce_prod_with_zero": (lambda x: lax.reduce_prod(x * np.array([1., 0, 1]), (0,)), (3,), None),
    "reduce_max": (lambda x: lax.reduce_max(x, (1,)), (2, 3), None),
    "reduce_min": (lambda x: lax.reduce_min(x, (0, 1)), (2, 3), None),
    "cumsum": (lambda x: lax.cumsum(x, 1, reverse=True) ** 2, (2, 5), None),
    "cumprod": (lambda x: lax.cumprod(x, 1), (2, 5), None),
    "cumprod_reverse": (lambda x: lax.cumprod(x, 0, reverse=True), (5, 2), None),
    "cummax": (lambda x: lax.cummax(x, 1), (2, 5), None),
    "cummin": (lambda x: lax.cummin(x, 0, reverse=True), (5, 2), None),
    "cumlogsumexp": (lambda x: lax.cumlogsumexp(x, 1), (2, 5), None),
    "argmax_times": (lambda x: x * lax.argmax(x, 0, np.int32), (3,), None),
    # sorting
    "sort": (lambda x: lax.sort(x, dimension=1), (2, 4), None),
    "sort_multi": (lambda x: lax.sort((x[0], x[1] ** 2), num_keys=1)[1], (2, 4), None),
    "top_k": (lambda x: lax.top_k(x, 2)[0], (3, 4), None),
    # dot_general with various dimension numbers
    "dot_matmul": (lambda x: lax.dot(x, x.T), (2, 3), None),
    "dot_vec": (lambda x: lax.dot(x[0], x[1]), (2, 3), None),
    "dot_general_batch": (lambda x: lax.dot_general(x, lax.sin(x), (((2,), (1,)), ((0,), (0,)))),
                          (2, 3, 3), None),
    "dot_general_odd": (lambda x: lax.dot_general(x, x ** 2, (((0, 2), (2, 0)), ((1,), (1,)))),
                        (2, 3, 2), None),
    "dot_preferred": (lambda x: lax.dot(x, x.T, preferred_element_type=f64), (2, 3), None),
}


# Where finite differences see a different function than the derivative rules do: the
# gradient written out (w: the weights `scalarize` applies).
_ANALYTIC = {
    # rounding x to float32 makes finite differences useless; d/dx round32(x) * x ~ 2x
    "convert_element_type": lambda x, w: w * (x.astype(f32).astype(f64) + x),
    "stop_gradient": lambda x, w: w * 3 * x,      # the stopped factor counts as a constant
    "nextafter": lambda x, w: w * (np.nextafter(x, x + 1) + x),
}


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_grad_matches_finite_differences(name):
  fn, shape, dom = PRIMITIVES[name]
  f = scalarize(fn)
  with ember.enable_x64():
    x = rand(shape, seed=len(name)) if dom is None else rand(shape, len(name), *dom)
    expected = (_ANALYTIC[name](x, _weights(shape)) if name in _ANALYTIC else fd_grad(f, x))
    for g in (ember.grad(f), ember.jit(ember.grad(f)), ember.grad(ember.jit(f))):
      out = g(jnp.asarray(x))
      assert out.dtype == f64 and out.shape == x.shape
      np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("fn, deriv", [
    (jnp.sin, np.cos), (jnp.cos, lambda x: -np.sin(x)), (jnp.exp, np.exp),
    (jnp.tanh, lambda x: 1 - np.tanh(x) ** 2), (jnp.log1p, lambda x: 1 / (1 + x)),
    (jnp.arctan, lambda x: 1 / (1 + x ** 2)), (lambda x: x ** 3, lambda x: 3 * x ** 2),
    (jnp.sqrt, lambda x: 0.5 / np.sqrt(x)), (ember.nn.sigmoid,
                                              lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
])
def test_grad_matches_analytic_float32(fn, deriv):
  x = np.array([0.3, 0.7, 1.1, 2.5], f32)
  for g in (ember.vmap(ember.grad(fn)), ember.jit(ember.vmap(ember.grad(fn)))):
    out = g(x)
    assert out.dtype == f32
    np.testing.assert_allclose(out, deriv(x.astype(f64)), rtol=2e-6)


def test_grad_of_sin_squared_jaxpr_as_jax():
  f = lambda x: jnp.sum(jnp.sin(x) ** 2)
  jaxpr = ember.make_jaxpr(ember.grad(f))(jnp.ones(3))
  assert str(jaxpr) == """\
{ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos a
    d:f32[3] = integer_pow[y=2] b
    e:f32[3] = mul 2.0:f32[] b
    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] d
    f:f32[3] = broadcast_in_dim 1.0:f32[]
    g:f32[3] = mul f e
    h:f32[3] = mul g c
  in (h,) }"""
  names = [e.primitive.name for e in jaxpr.eqns]
  assert names.count("sin") == 1 and names.count("cos") == 1


def test_grad_of_jit_keeps_two_jit_equations_as_jax():
  f = lambda x: jnp.sum(jnp.sin(x) ** 2)
  assert str(ember.make_jaxpr(ember.grad(ember.jit(f)))(jnp.ones(3))) == """\
{ lambda ; a:f32[3]. let
    _:f32[] b:f32[3] c:f32[3] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[3]. let
          d:f32[3] = sin a
          b:f32[3] = cos a
          e:f32[3] = integer_pow[y=2] d
          c:f32[3] = mul 2.0:f32[] d
          _:f32[] = reduce_sum[axes=(0,) out_sharding=None] e
        in (_, b, c) }
    ] a
    f:f32[3] = jit[
      name=<lambda>
      jaxpr={ lambda ; b:f32[3] c:f32[3] g:f32[]. let
          h:f32[3] = broadcast_in_dim g
          i:f32[3] = mul h c
          f:f32[3] = mul i b
        in (f,) }
    ] b c 1.0:f32[]
  in (f,) }"""


def test_jvp_and_linearize_jaxprs_as_jax():
  assert str(ember.make_jaxpr(lambda x: ember.jvp(jnp.sin, (x,), (x,)))(1.)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = sin a
    c:f32[] = cos a
    d:f32[] = mul a c
  in (b, d) }"""
  assert str(ember.make_jaxpr(lambda x: ember.linearize(jnp.sin, x)[1](x))(1.)) == """\
{ lambda ; a:f32[]. let
    _:f32[] = sin a
    b:f32[] = cos a
    c:f32[] = mul a b
  in (c,) }"""
  assert str(ember.make_jaxpr(ember.grad(lambda x, y: x * y + x))(1., 2.)) == """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = mul a b
    _:f32[] = add c a
    d:f32[] = mul 1.0:f32[] b
    e:f32[] = add_any 1.0:f32[] d
  in (e,) }"""


def test_checkpoint_jaxprs_as_jax():
  assert str(ember.make_jaxpr(ember.checkpoint(jnp.sin))(jnp.ones(3))) == """\
{ lambda ; a:f32[3]. let
    b:f32[3] = remat2[
      differentiated=False
      jaxpr={ lambda ; c:f32[3]. let d:f32[3] = sin c in (d,) }
      policy=None
      prevent_cse=True
    ] a
  in (b,) }"""
  g = ember.grad(lambda x: ember.checkpoint(jnp.sin)(x).sum())
  assert str(ember.make_jaxpr(g)(jnp.ones(3))) == """\
{ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] b
    c:f32[3] = broadcast_in_dim 1.0:f32[]
    d:f32[3] = remat2[
      differentiated=True
      jaxpr={ lambda ; e:f32[3] f:f32[3]. let
          g:f32[3] = cos e
          h:f32[3] = mul f g
        in (h,) }
      policy=None
      prevent_cse=True
    ] a c
  in (d,) }"""


@pytest.mark.parametrize("remat", [ember.checkpoint, ember.remat])
def test_checkpoint_values(remat):
  def f(x, w):
    h = remat(lambda x: jnp.tanh(jnp.dot(x, w)) * jnp.sin(x))(x)
    return jnp.sum(h ** 2)
  rng = np.random.default_rng(3)
  x, w = rng.standard_normal((3, 3)).astype(f32), rng.standard_normal((3, 3)).astype(f32)
  plain = lambda x, w: jnp.sum((jnp.tanh(jnp.dot(x, w)) * jnp.sin(x)) ** 2)
  expected = ember.grad(plain, argnums=(0, 1))(x, w)
  for g in (ember.grad(f, argnums=(0, 1)), ember.jit(ember.grad(f, argnums=(0, 1)))):
    for a, b in zip(g(x, w), expected):
      np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)
  np.testing.assert_allclose(remat(jnp.sin)(x), np.sin(x), rtol=1e-6)  # eager: runs f
  static = ember.checkpoint(lambda x, n: x ** n, static_argnums=(1,))
  assert float(ember.grad(static)(2.0, 3)) == 12.0


# --- jvp, linearize, vjp ------------------------------------------------------------------


def test_jvp_linearize_vjp_agree_with_finite_differences():
  f = lambda x, y: (jnp.sin(x) * y, jnp.sum(x ** 2) + y[0])
  with ember.enable_x64():
    x, y = rand((3,), 1), rand((3,), 2)
    tx, ty = rand((3,), 3), rand((3,), 4)
    out, tan = ember.jvp(f, (x, y), (tx, ty))
    eps = 1e-6
    plus, minus = f(x + eps * tx, y + eps * ty), f(x - eps * tx, y - eps * ty)
    for t, p, m in zip(tan, plus, minus):
      np.testing.assert_allclose(t, (np.asarray(p) - np.asarray(m)) / (2 * eps), rtol=1e-6)
    out2, f_jvp = ember.linearize(f, x, y)
    for a, b in zip(f_jvp(tx, ty), tan):
      np.testing.assert_allclose(a, b, rtol=1e-12)
    out3, vjp_fn = ember.vjp(f, x, y)
    ct = (rand((3,), 5), 0.7)
    gx, gy = vjp_fn(ct)
    # <ct, J t> == <J^T ct, t>
    lhs = np.dot(ct[0], tan[0]) + ct[1] * float(tan[1])
    np.testing.assert_allclose(lhs, np.dot(gx, tx) + np.dot(gy, ty), rtol=1e-10)
    for a, b in zip(out, out3):
      np.testing.assert_allclose(a, b)


def test_jvp_of_integer_inputs_and_outputs_uses_float0():
  out, t = ember.jvp(lambda x, n: (x * n, n * 2), (2.0, 3), (1.0, np.zeros((), ember.dtypes.float0)))
  assert float(t[0]) == 3.0 and t[1].dtype == ember.dtypes.float0
  _, vjp_fn = ember.vjp(lambda x, n: x * n, 2.0, 3)
  gx, gn = vjp_fn(1.0)
  assert float(gx) == 3.0 and gn.dtype == ember.dtypes.float0
  assert ember.grad(lambda x, n: x * n, allow_int=True, argnums=1)(2.0, 3).dtype == ember.dtypes.float0


def test_pytrees_argnums_has_aux():
  def loss(params, x):
    w, b = params["w"], params["b"]
    y = jnp.dot(x, w) + b
    return jnp.sum(y ** 2), {"y": y}
  params = {"w": np.ones((2, 3), f32), "b": np.zeros(3, f32)}
  x = np.arange(4, dtype=f32).reshape(2, 2)
  (val, aux), g = ember.value_and_grad(loss, has_aux=True)(params, x)
  y = x @ params["w"] + params["b"]
  np.testing.assert_allclose(val, np.sum(y ** 2))
  np.testing.assert_allclose(aux["y"], y)
  np.testing.assert_allclose(g["w"], x.T @ (2 * y))
  np.testing.assert_allclose(g["b"], np.sum(2 * y, 0))
  gx, aux2 = ember.grad(loss, argnums=1, has_aux=True)(params, x)
  np.testing.assert_allclose(gx, 2 * y @ params["w"].T)
  gp, gx2 = ember.grad(lambda p, x: loss(p, x)[0], argnums=(0, 1))(params, x)
  np.testing.assert_allclose(gx2, gx)
  assert ember.grad(lambda xs: xs[0] * xs[1])([1., 2.])[0].weak_type


# --- higher order and composition with jit ---------------------------------------------------


def test_higher_order():
  f = lambda x: jnp.sin(x) * x ** 2
  x = 0.7
  d1 = lambda x: np.cos(x) * x ** 2 + 2 * x * np.sin(x)
  d2 = lambda x: -np.sin(x) * x ** 2 + 4 * x * np.cos(x) + 2 * np.sin(x)
  d3 = lambda x: -np.cos(x) * x ** 2 - 6 * x * np.sin(x) + 6 * np.cos(x)
  g = ember.grad
  for fn, ref in ((g(f), d1), (g(g(f)), d2), (g(g(g(f))), d3), (ember.jit(g(g(f))), d2),
                  (g(ember.jit(g(f))), d2), (g(g(ember.jit(f))), d2)):
    np.testing.assert_allclose(float(fn(x)), ref(x), rtol=2e-5)


def test_jacobians_and_hessian():
  def f(x):
    return jnp.stack([jnp.sum(x ** 3), x[0] * x[1], jnp.sin(x[2])])
  with ember.enable_x64():
    x = rand((3,), 7)
    jac = np.stack([3 * x ** 2, [x[1], x[0], 0], [0, 0, np.cos(x[2])]])
    for fn in (ember.jacfwd(f), ember.jacrev(f), ember.jit(ember.jacrev(f))):
      np.testing.assert_allclose(fn(x), jac, rtol=1e-12)
    s = lambda x: jnp.sum(x ** 3) + x[0] * x[1] * x[2]
    hess = np.diag(6 * x) + np.array([[0, x[2], x[1]], [x[2], 0, x[0]], [x[1], x[0], 0]])
    for fn in (ember.hessian(s), ember.jacfwd(ember.jacrev(s)), ember.jacrev(ember.jacfwd(s)),
               ember.jit(ember.hessian(s))):
      np.testing.assert_allclose(fn(x), hess, rtol=1e-12, atol=1e-12)
  # pytree outputs and argnums tuples: jac[out][in]
  j = ember.jacrev(lambda x, y: {"a": x * y, "b": jnp.sum(x)}, argnums=(0, 1))(
      np.array([1., 2.], f32), 3.0)
  np.testing.assert_allclose(j["a"][0], 3 * np.eye(2))
  np.testing.assert_allclose(j["a"][1], [1., 2.])
  np.testing.assert_allclose(j["b"][0], [1., 1.])
  assert j["a"][0].shape == (2, 2) and j["b"][1].shape == ()
  jf = ember.jacfwd(lambda x: x[:, None] * x[None, :])(np.array([1., 2.], f32))
  assert jf.shape == (2, 2, 2)
  np.testing.assert_allclose(jf, ember.jacrev(lambda x: x[:, None] * x[None, :])(
      np.array([1., 2.], f32)))


# --- values at non-differentiable points follow JAX ------------------------------------------


def test_edge_points_follow_jax():
  grad = ember.grad
  assert float(grad(jnp.sqrt)(0.0)) == np.inf
  # the double-where trick keeps the gradient finite
  safe_sqrt = lambda x: jnp.sqrt(jnp.where(x > 0, x, 1.0))
  assert float(grad(lambda x: jnp.where(x > 0, safe_sqrt(x), 0.0))(0.0)) == 0.0
  assert np.isnan(float(grad(lambda x: jnp.where(x > 0, jnp.sqrt(x), 0.0))(0.0)))
  assert float(grad(jnp.abs)(0.0)) == 1.0
  assert float(grad(ember.nn.relu)(0.0)) == 0.0 and float(grad(ember.nn.relu)(2.0)) == 1.0
  assert float(grad(jnp.maximum, argnums=(0, 1))(1.0, 1.0)[0]) == 0.5   # ties split
  assert float(grad(lambda x: jnp.max(jnp.array([x, x, 0.0])))(1.0)) == 1.0
  assert np.isnan(float(grad(jnp.logaddexp)(-np.inf, -np.inf)))
  assert float(grad(jnp.logaddexp)(np.inf, 1.0)) == 1.0
  assert float(grad(lambda x: x ** 2.0)(0.0)) == 0.0
  assert float(grad(lambda x: 2.0 ** x)(0.0)) == pytest.approx(np.log(2), rel=1e-6)
  assert float(grad(lambda x: jnp.round(x) + jnp.floor(x))(1.5)) == 0.0
  assert float(grad(lambda x: lax.pow(x, np.int32(0)))(0.0)) == 0.0
  x = 2.0  # Python control flow on values works under grad (concrete primals)
  assert float(grad(lambda x: x ** 2 if x > 0 else -x)(x)) == 4.0


def test_dtypes_and_weak_types_of_gradients():
  g = ember.grad(lambda x: x * 2.0)
  out = g(1.0)
  assert out.dtype == f32 and out.weak_type
  out = g(np.float32(1.0))
  assert out.dtype == f32 and not out.weak_type
  assert ember.grad(lambda x: x ** 2)(3.0).weak_type
  with ember.enable_x64():
    assert ember.grad(jnp.sin)(np.float64(1.0)).dtype == f64
    x16 = jnp.asarray(np.float16(0.5))
    assert ember.grad(lambda x: jnp.sin(x) * 2)(x16).dtype == np.float16
  c = ember.grad(lambda z: jnp.real(z * z), holomorphic=False)
  with pytest.raises(TypeError, match="requires real- or complex-valued inputs"):
    ember.grad(lambda x: x)(1)
  assert complex(ember.grad(lambda z: z * z, holomorphic=True)(np.complex64(1 + 2j))) == 2 + 4j
  assert complex(c(np.complex64(1 + 2j))) == 2 + 4j  # as JAX: df/dx - i df/dy


# --- errors users hit ------------------------------------------------------------------------


@pytest.mark.parametrize("call, cls, msg", [
    (lambda: ember.grad(lambda x: x * 2)(1), TypeError,
     "grad requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
     "np.inexact), but got int32. If you want to use Boolean- or integer-valued inputs, use "
     "vjp or set allow_int to True."),
    (lambda: ember.grad(lambda x: x * 2)(jnp.ones(3)), TypeError,
     "Gradient only defined for scalar-output functions. Output had shape: (3,)."),
    (lambda: ember.grad(lambda x: (x * 2).astype(int))(1.), TypeError,
     "grad requires real-valued outputs (output dtype that is a sub-dtype of np.floating), "
     "but got int32. For differentiation of functions with integer outputs, use jax.vjp "
     "directly."),
    (lambda: ember.grad(lambda x: jnp.sin(x) + 1j)(1.), TypeError,
     "For holomorphic differentiation, pass holomorphic=True."),
    (lambda: ember.grad(lambda x, y: x * y, argnums=2)(1., 2.), TypeError,
     "differentiating with respect to argnums=2 requires at least 3 positional arguments to "
     "be passed by the caller, but got only 2 positional arguments."),
    (lambda: ember.jvp(jnp.sin, (1.,), (jnp.ones(2),)), ValueError,
     "jvp called with different primal and tangent shapes; Got primal shape () and tangent "
     "shape as (2,)"),
    (lambda: ember.jvp(jnp.sin, 1., 1.), TypeError,
     "primal and tangent arguments to jax.jvp must be tuples or lists; found float and float."),
    (lambda: ember.jvp(jnp.sin, (1.,), (np.int32(1),)), TypeError,
     "primal and tangent arguments to jax.jvp do not match; dtypes must be equal"),
    (lambda: ember.vjp(jnp.sin, 1.)[1](jnp.ones(2)), ValueError,
     "unexpected JAX type (e.g. shape/dtype) for argument to VJP function: got float32[2], but "
     "expected float32[] because the corresponding output of the differentiated function had "
     "JAX type float32[]"),
    (lambda: ember.vjp(jnp.sin, 1.)[1]((1., 2.)), ValueError, "unexpected tree structure."),
    (lambda: ember.grad(lambda x: x, has_aux=True)(1.), TypeError,
     "expected function with aux output to return a two-element tuple"),
    (lambda: ember.jacfwd(lambda x: x)(1), TypeError, "jacfwd requires real-valued inputs"),
    (lambda: ember.jacrev(lambda x: x)(1), TypeError, "jacrev requires real- or complex-valued"),
    (lambda: ember.grad(1.0), TypeError, "grad requires a callable"),
])
def test_errors(call, cls, msg):
  with pytest.raises(cls) as e:
    call()
  assert msg in str(e.value)


def test_missing_rules_raise_jax_errors():
  from ember._src import core
  from ember._src.primitives import declare
  p = declare("no_rules", lambda x: x, lambda x: x)
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'no_rules' not "
                                                "implemented"):
    ember.grad(lambda x: p.bind(x))(1.0)
  q = declare("no_transpose", lambda x: x, lambda x: x)
  q.jvp = lambda primals, tangents: (q.bind(*primals), q.bind(*tangents))
  assert float(ember.jvp(lambda x: q.bind(x), (1.0,), (2.0,))[1]) == 2.0
  with pytest.raises(NotImplementedError, match="Transpose rule .* for 'no_transpose'"):
    ember.grad(lambda x: q.bind(x))(1.0)
  assert isinstance(core.Primitive, type)


def test_scatter_mul_with_duplicate_indices_raises_as_jax():
  f = lambda x: jnp.sum(x.at[np.array([0, 0])].multiply(x[1:3]))
  with pytest.raises(NotImplementedError, match="scatter_mul gradients are only implemented"):
    ember.grad(f)(jnp.ones(4))


# --- the seed-001 MLP training step ----------------------------------------------------------

def _mlp(loss_kind):
  rng = np.random.default_rng(0)
  sizes = [784, 512, 512, 10]
  params = [(rng.standard_normal((m, n)).astype(f32) * np.sqrt(2 / m).astype(f32),
             np.zeros(n, f32)) for m, n in zip(sizes[:-1], sizes[1:])]
  x = rng.standard_normal((16, 784)).astype(f32)
  y = np.eye(10, dtype=f32)[rng.integers(0, 10, 16)]

  def predict(params, x):
    for w, b in params[:-1]:
      x = ember.nn.relu(jnp.dot(x, w) + b)
    w, b = params[-1]
    return jnp.dot(x, w) + b

  def loss(params, x, y):
    logits = predict(params, x)
    if loss_kind == "mse":
      return jnp.mean((logits - y) ** 2)
    return -jnp.mean(jnp.sum(ember.nn.log_softmax(logits) * y, axis=1))

  def update(params, x, y, epoch_number):
    loss_value, grads = ember.value_and_grad(loss)(params, x, y)
    lr = 0.01 * 0.99 ** (epoch_number / 10)
    return [(w - lr * dw, b - lr * db) for (w, b), (dw, db) in zip(params, grads)], loss_value
  return params, x, y, update


@pytest.mark.parametrize("loss_kind", ["mse", "cross_entropy"])
def test_seed001_mlp_training_step(loss_kind):
  params, x, y, update = _mlp(loss_kind)
  jupdate = ember.jit(update)
  eager_params, eager_loss = update(params, x, y, 0)
  jit_params, jit_loss = jupdate(params, x, y, 0)
  # float32 sums over 784/512 terms in a different order: a few ulps
  np.testing.assert_allclose(float(jit_loss), float(eager_loss), rtol=1e-5)
  for (w1, b1), (w2, b2) in zip(eager_params, jit_params):
    np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b2, b1, rtol=1e-5, atol=1e-6)
  losses = [float(jit_loss)]
  p = jit_params
  for epoch in range(1, 4):
    p, l = jupdate(p, x, y, epoch)
    losses.append(float(l))
  assert all(b < a for a, b in zip(losses, losses[1:])), losses
  assert jupdate._cache_size() == 1  # one trace: epochs are dynamic arguments


def test_linear_transpose():
  t = ember.linear_transpose(lambda x, y: (x * 2 + y[0], jnp.sum(y)), 1.0,
                             np.ones(3, f32))
  gx, gy = t((1.0, 2.0))
  assert float(gx) == 2.0
  np.testing.assert_allclose(gy, [3., 2., 2.])


def test_composition_with_vmap():
  w = np.array([[1., 2.], [3., 4.], [5., 6.]], f32)
  x = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], f32)
  loss = lambda w, x: jnp.sum(jnp.tanh(jnp.dot(x, w)) ** 2)
  per_example = ember.vmap(ember.grad(loss), in_axes=(None, 0))(w, x)
  for i in range(2):
    np.testing.assert_allclose(per_example[i], ember.grad(loss)(w, x[i]), rtol=1e-6)
  total = ember.grad(lambda w: jnp.sum(ember.vmap(loss, in_axes=(None, 0))(w, x)))(w)
  np.testing.assert_allclose(total, per_example.sum(0), rtol=1e-5)
  np.testing.assert_allclose(ember.jit(ember.vmap(ember.grad(loss), in_axes=(None, 0)))(w, x),
                             per_example, rtol=1e-6)


def test_psum_is_linear_under_vmap_and_grad():
  x = jnp.arange(3.)
  inner = ember.vmap(ember.grad(lambda x: lax.psum(x ** 2, "i")), axis_name="i")(x)
  outer = ember.grad(lambda x: ember.vmap(lambda v: lax.psum(v ** 2, "i"), axis_name="i")(x)
                     .sum())(x)
  np.testing.assert_allclose(inner, [0., 6., 12.])   # JAX 0.12's values
  np.testing.assert_allclose(outer, [0., 6., 12.])
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'pmax'"):
    ember.vmap(ember.grad(lambda x: lax.pmax(x ** 2, "i")), axis_name="i")(x)


def test_checkpoint_name_and_policies():
  from ember.ad_checkpoint import checkpoint_name
  f = lambda x: checkpoint_name(jnp.sin(x), "foo")
  assert str(ember.make_jaxpr(ember.grad(f))(1.)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = sin a
    c:f32[] = cos a
    _:f32[] = name[name=foo] b
    d:f32[] = mul 1.0:f32[] c
  in (d,) }"""
  policy = ember.checkpoint_policies.save_only_these_names("foo")
  g = ember.grad(lambda x: ember.checkpoint(lambda y: f(y) * y, policy=policy)(x))
  for fn in (g, ember.jit(g)):
    np.testing.assert_allclose(float(fn(0.4)), np.cos(0.4) * 0.4 + np.sin(0.4), rtol=1e-6)


def test_digamma_gradient_is_inf_at_its_poles():
  # JAX 0.12: grad(digamma) at 0, -1, -3 is inf (not the 1e16 that sin(pi x) ~ 1e-8 gives)
  for fn in (ember.grad(lax.digamma), ember.jit(ember.grad(lax.digamma))):
    for x in (0.0, -1.0, -3.0):
      assert float(fn(x)) == np.inf
    np.testing.assert_allclose(float(fn(-2.5)), 9.539247, rtol=1e-6)   # JAX's value


@pytest.mark.parametrize("name,f,expected", [
    ("real", jnp.real, 1 + 0j), ("imag", jnp.imag, -1j),
    ("real_mul", lambda z: jnp.real(z * z), 2 + 2j),
    ("real_times_imag", lambda z: jnp.real(z) * jnp.imag(z), 1 - 1j)])
def test_grad_of_a_python_complex_is_strongly_typed(name, f, expected):
  # JAX 0.12: the transposes of real/imag build the cotangent with strong zeros, so the
  # gradient of a function of a (weak) Python complex is a strong complex64
  for x in (1.0 + 1.0j, jnp.complex64(1 + 1j)):
    g = ember.grad(f)(x)
    assert g.dtype == np.complex64 and not g.weak_type, (name, x)
    np.testing.assert_allclose(np.asarray(g), expected, rtol=1e-6)
    gj = ember.jit(ember.grad(f))(x)
    assert gj.dtype == np.complex64 and not gj.weak_type, (name, x)
    np.testing.assert_allclose(np.asarray(gj), expected, rtol=1e-6)

"""jax.experimental.jet: Taylor-mode derivatives against nested jvp and analytic Taylor
coefficients (float64), the zero series, calls inlined (jit, custom_jvp), jit of jet, the
rule builders and the errors."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import config, lax
from ember.experimental import jet as jet_mod
from ember.experimental.jet import jet, jet2

ORDER = 3


@pytest.fixture(autouse=True)
def x64():
  with config._override("jax_enable_x64", True):
    yield


def path_derivatives(f, x, v, order=ORDER):
  """d^k/dt^k f(x + t v) at t = 0, k = 1..order, by nested jvp."""
  def along(t):
    return f(x + t * v)
  fns = [along]
  for _ in range(order):
    prev = fns[-1]
    fns.append(lambda t, prev=prev: ember.jvp(prev, (t,), (jnp.ones_like(t),))[1])
  t0 = jnp.zeros((), x.dtype)
  return [np.asarray(fn(t0)) for fn in fns[1:]]


def check_against_jvp(f, x, v=None, rtol=1e-10):
  x = jnp.asarray(x, jnp.float64)
  v = jnp.ones_like(x) if v is None else jnp.asarray(v, jnp.float64)
  zeros = [jnp.zeros_like(x)] * (ORDER - 1)
  primal, terms = jet(f, (x,), ((v, *zeros),))
  np.testing.assert_allclose(primal, f(x), rtol=1e-14)
  for got, want in zip(terms, path_derivatives(f, x, v)):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)


UNARY = {
  "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "exp": jnp.exp, "log": jnp.log,
  "tanh": jnp.tanh, "logistic": lax.logistic, "sqrt": jnp.sqrt, "rsqrt": lax.rsqrt,
  "erf": lax.erf, "erfc": lax.erfc, "erf_inv": lax.erf_inv, "sinh": jnp.sinh,
  "cosh": jnp.cosh, "expm1": jnp.expm1, "log1p": jnp.log1p, "exp2": jnp.exp2,
  "log2": jnp.log2, "asin": jnp.arcsin, "acos": jnp.arccos, "atan": jnp.arctan,
  "asinh": jnp.arcsinh, "acosh": lambda x: jnp.arccosh(x + 1.5), "atanh": jnp.arctanh,
  "cbrt": jnp.cbrt, "square": jnp.square, "abs": jnp.abs,
  "integer_pow": lambda x: x ** 3 - x ** -2, "pow": lambda x: x ** 2.5,
  "recip": lambda x: 1.0 / x,
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rules_match_nested_jvp(name):
  check_against_jvp(UNARY[name], [0.3, -0.45, 0.6] if name not in
                    ("log", "sqrt", "rsqrt", "pow", "log2", "cbrt") else [0.3, 1.45, 0.6])


def test_binary_and_structural_rules():
  a = jnp.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
  w = jnp.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.6]])

  def f(x):
    y = jnp.dot(x, w) * x[:, :2] / (2.0 + jnp.cos(x[:, 1:]))
    z = jnp.concatenate([y, x.T.reshape(2, 3)], axis=1)[:, ::-1]
    z = jnp.maximum(z, 0.1 * z) + jnp.minimum(z, -z) + jnp.where(z > 0, z ** 2, jnp.sin(z))
    z = jnp.arctan2(z, 1.5 + z ** 2) + jnp.clip(z, -0.5, 0.5) + jnp.sum(z, axis=0)
    return jnp.max(z, axis=1) + jnp.cumprod(z[:, :3], axis=1)[:, -1] + jnp.mean(z ** 2)
  check_against_jvp(f, a, v=jnp.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.7]]))


def test_indexing_rules():
  def f(x):
    y = x[jnp.array([2, 0, 1])] * x[1:3].sum()
    y = y.at[jnp.array([0, 0])].add(x[:2]) + lax.dynamic_slice(x, (1,), (3,))
    return lax.dynamic_update_slice(y, jnp.exp(x[:1]), (2,))
  check_against_jvp(f, jnp.array([0.4, -0.3, 0.8, 1.1]))


def test_exp_analytic_coefficients():
  # every derivative of exp is exp; unscaled (jet2) coefficients are exp(x) / k!
  x = jnp.float64(0.3)
  p, terms = jet(jnp.exp, (x,), ((1.0, 0.0, 0.0, 0.0),))
  np.testing.assert_allclose(terms, [np.exp(0.3)] * 4, rtol=1e-14)
  p, terms = jet2(jnp.exp, (x,), ((1.0, 0.0, 0.0, 0.0),))
  np.testing.assert_allclose(terms, [np.exp(0.3) / math.factorial(k) for k in range(1, 5)],
                             rtol=1e-14)


def test_faa_di_bruno_docstring_example():
  # sin(h(z)) with h = z^3 at z = 0.5
  h0, h1, h2 = 0.5 ** 3., 3. * 0.5 ** 2., 6. * 0.5
  f0, (f1, f2) = jet(jnp.sin, (h0,), ((h1, h2),))
  np.testing.assert_allclose([f0, f1, f2], [np.sin(h0), np.cos(h0) * h1,
                                            -np.sin(h0) * h1 ** 2 + np.cos(h0) * h2],
                             rtol=1e-14)


def test_calls_custom_jvp_two_arguments_and_pytree_output():
  def f(x, y):
    inner = ember.jit(lambda u: jnp.tanh(u) * y)
    return {"a": inner(x) + ember.nn.relu(x - 0.1), "b": x * y, "c": jnp.float64(2.0)}
  x, y = jnp.float64(0.4), jnp.float64(-1.2)
  primal, terms = jet(f, (x, y), ((1.0, 0.0), (0.5, 0.0)))
  assert set(primal) == {"a", "b", "c"}
  assert [float(t) for t in terms["c"]] == [0.0, 0.0]   # a zero series comes back as zeros
  # along (x + t, y + t/2): d/dt (x y) = y + x/2, d2/dt2 = 2 * 1 * 0.5
  np.testing.assert_allclose(terms["b"], [y + x / 2, 1.0], rtol=1e-14)
  th = np.tanh(0.4)
  np.testing.assert_allclose(terms["a"][0], (1 - th ** 2) * -1.2 + th * 0.5 + 1.0, rtol=1e-13)


def test_jet_under_jit_and_float32():
  with config._override("jax_enable_x64", False):
    f = ember.jit(lambda x: jet(lambda u: jnp.exp(jnp.sin(u)), (x,), ((1.0, 0.0),)))
    p, (t1, t2) = f(jnp.float32(0.5))
    s, c = np.sin(0.5), np.cos(0.5)
    np.testing.assert_allclose([p, t1, t2], [np.exp(s), np.exp(s) * c,
                                             np.exp(s) * (c * c - s)], rtol=2e-6)
    assert t1.dtype == np.float32


def test_rule_builders():
  assert lax.sin_p in jet_mod.jet_rules and lax.dot_general_p in jet_mod.jet_rules
  p, terms = jet_mod.deriv_prop(lax.erf_p, lambda x: 2 / np.sqrt(np.pi) * jnp.exp(-x * x),
                                (jnp.float64(0.2),), ([jnp.float64(1.0), jnp.float64(0.0)],))
  np.testing.assert_allclose(terms[0], 2 / np.sqrt(np.pi) * np.exp(-0.04), rtol=1e-14)
  p, terms = jet_mod.linear_prop(lax.neg_p, (jnp.float64(1.0),), ([jnp.float64(2.0)],))
  assert float(p) == -1.0 and float(terms[0]) == -2.0
  p, terms = jet_mod.zero_prop(lax.floor_p, (jnp.float64(1.5),), ([jnp.float64(2.0)],))
  assert float(p) == 1.0 and terms is jet_mod.zero_series
  np.testing.assert_allclose(jet_mod.fact(4), 24.0, rtol=1e-12)
  assert isinstance(jet_mod.zero_term, jet_mod.ZeroTerm)
  assert isinstance(jet_mod.zero_series, jet_mod.ZeroSeries)


def test_jet_fun_traceable_and_tracer():
  seen = []

  def f(x):
    seen.append(type(x))
    return [jnp.sin(x)]
  run = jet_mod.jet_fun(jet_mod.jet_subtrace(f), 2)
  (p,), ((t1, t2),) = run([jnp.float64(0.0)], [[jnp.float64(1.0), jnp.float64(0.0)]])
  assert seen == [jet_mod.JetTracer]
  np.testing.assert_allclose([p, t1, t2], [0.0, 1.0, 0.0], atol=1e-15)
  flat, out_tree = jet_mod.traceable(run, ember.tree_util.tree_structure(
      ([0.], [[0., 0.]])))
  outs = flat(jnp.float64(0.0), jnp.float64(1.0), jnp.float64(0.0))
  assert len(outs) == 3 and out_tree().num_leaves == 3


def test_errors():
  with pytest.raises(ValueError, match="inconsistent lengths"):
    jet(lambda x, y: x * y, (1.0, 2.0), ((1.0,), (1.0, 2.0)))
  with pytest.raises(ValueError, match="primal value at position 0 is not an array"):
    jet(lambda x: x, ((1.0, 2.0),), ((1.0,),))
  with pytest.raises(ValueError, match="term 0 for argument 0 is not an array"):
    jet(lambda x: x, (1.0,), (((1.0, 2.0),),))
  with pytest.raises(NotImplementedError, match="Jet rule for 'while' not implemented"):
    jet(lambda x: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] * 2), (0, x)),
        (1.0,), ((1.0,),))

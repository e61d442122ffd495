"""ember.nn and ember.scipy.special vs float64 NumPy/math references, eager and under
ember.jit. Result dtypes and weak types were checked against JAX 0.12."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.numpy as jnp
import ember.scipy
import ember.scipy.special as sp

RNG = np.random.RandomState(3)
X = RNG.randn(2, 3, 4).astype(np.float32)
X64 = X.astype(np.float64)


def both(f, *args):
  return [f(*args), ember.jit(f)(*args)]


def check(out, expected, dtype="float32", rtol=1e-5, atol=1e-6, weak=False):
  assert out.dtype == np.dtype(dtype), (out.dtype, dtype)
  assert out.weak_type == weak
  assert out.shape == np.shape(expected), (out.shape, np.shape(expected))
  np.testing.assert_allclose(np.asarray(out, np.float64), np.asarray(expected, np.float64),
                             rtol=rtol, atol=atol, equal_nan=True)


def np_logsumexp(x, axis=None, keepdims=False, b=1.0):
  with np.errstate(divide="ignore"):
    return np.log(np.sum(b * np.exp(x), axis=axis, keepdims=keepdims))


def np_softmax(x, axis=-1):
  e = np.exp(x - np.max(x, axis=axis, keepdims=True))
  return e / np.sum(e, axis=axis, keepdims=True)


# --- logsumexp / softmax ---------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp(axis, keepdims):
  for out in both(lambda x: sp.logsumexp(x, axis=axis, keepdims=keepdims), X):
    check(out, np_logsumexp(X64, axis, keepdims))
  b = np.abs(X) + 0.5
  for out in both(lambda x, b: sp.logsumexp(x, axis=axis, b=b, keepdims=keepdims), X, b):
    check(out, np_logsumexp(X64, axis, keepdims, b.astype(np.float64)))


def test_logsumexp_stability_signs_and_masks():
  big = np.array([1000., 1000., -np.inf], np.float32)
  check(sp.logsumexp(big), 1000 + math.log(2))                 # no overflow
  check(sp.logsumexp(np.full(3, -np.inf, np.float32)), -np.inf)  # all -inf stays -inf
  check(sp.logsumexp(np.zeros(0, np.float32)), -np.inf)
  x, b = X[0], np.where(X[1] > 0, 1.0, -1.0).astype(np.float32)
  out, sign = sp.logsumexp(x, axis=1, b=b, return_sign=True)
  s = np.sum(b * np.exp(x.astype(np.float64)), axis=1)
  check(out, np.log(np.abs(s)))
  check(sign, np.sign(s))
  # without return_sign a negative sum is NaN
  check(sp.logsumexp(x, axis=1, b=b), np.where(s < 0, np.nan, np.log(np.abs(s))))
  # b == 0 removes the term even where a is inf
  check(sp.logsumexp(np.array([np.inf, 0.], np.float32), b=np.array([0., 1.], np.float32)), 0.)
  mask = X > 0
  for out in both(lambda x, m: sp.logsumexp(x, axis=2, where=m), X, mask):
    check(out, np_logsumexp(np.where(mask, X64, -np.inf), 2))
  check(sp.logsumexp(np.arange(3)), np_logsumexp(np.arange(3.0)))  # ints promote
  assert nn.logsumexp is sp.logsumexp


@pytest.mark.parametrize("axis", [-1, 0, (0, 1)])
def test_softmax_log_softmax(axis):
  for out in both(lambda x: nn.softmax(x, axis=axis), X):
    check(out, np_softmax(X64, axis))
  for out in both(lambda x: nn.log_softmax(x, axis=axis), X):
    check(out, np.log(np_softmax(X64, axis)), rtol=1e-5, atol=2e-6)
  check(sp.softmax(X, axis=axis), np_softmax(X64, axis))
  check(sp.log_softmax(X, axis=axis), np.log(np_softmax(X64, axis)), atol=2e-6)


def test_softmax_details():
  check(sp.softmax(X), np_softmax(X64, axis=(0, 1, 2)))  # scipy: all axes by default
  check(nn.softmax(np.array([1000., 0.], np.float32)), [1., 0.])
  mask = X > -0.5
  for out in both(lambda x, m: nn.softmax(x, where=m), X, mask):
    e = np.where(mask, np.exp(X64), 0)
    check(out, e / e.sum(-1, keepdims=True))
  out = nn.log_softmax(X, where=mask)
  e = np.where(mask, np.exp(X64), 1.0)
  e_sum = np.sum(e, -1, where=mask, keepdims=True)
  check(out, np.where(mask, np.log(e / e_sum), -np.inf), atol=2e-6)
  check(nn.softmax(np.arange(3)), np_softmax(np.arange(3.0)))
  with ember.softmax_custom_jvp(False):   # JAX's former softmax (tests/test_config_states.py)
    jaxpr = str(ember.make_jaxpr(nn.softmax)(np.ones((2, 3), np.float32)))
  assert jaxpr == """\
{ lambda ; a:f32[2,3]. let
    b:f32[2] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[2] = max -inf:f32[] b
    d:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] c
    e:f32[2,1] = stop_gradient d
    f:f32[2,3] = sub a e
    g:f32[2,3] = exp f
    h:f32[2] = reduce_sum[axes=(1,) out_sharding=None] g
    i:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] h
    j:f32[2,3] = div g i
  in (j,) }"""


# --- scipy.special elementwise functions --------------------------------------------------------

def _digamma64(x):  # central difference of lgamma, accurate to ~1e-9 in float64
  h = 1e-5
  lg = np.vectorize(math.lgamma)
  return (lg(x + h) - lg(x - h)) / (2 * h)


POS = np.abs(X) + 0.05
UNIT = np.tanh(X).astype(np.float32) * 0.99
PROB = (1 / (1 + np.exp(-X64))).astype(np.float32)
SPECIAL_CASES = [  # name, fn, input, float64 reference, rtol
    ("erf", sp.erf, X, np.vectorize(math.erf)(X64), 1e-5),
    ("erfc", sp.erfc, X, np.vectorize(math.erfc)(X64), 1e-5),
    ("expit", sp.expit, X, 1 / (1 + np.exp(-X64)), 1e-5),
    ("logit", sp.logit, PROB, np.log(PROB / (1.0 - PROB.astype(np.float64))), 1e-4),
    ("gammaln", sp.gammaln, POS, np.vectorize(math.lgamma)(POS.astype(np.float64)), 1e-5),
    ("digamma", sp.digamma, POS, _digamma64(POS.astype(np.float64)), 1e-4),
]


@pytest.mark.parametrize("name,fn,x,expected,rtol", SPECIAL_CASES,
                         ids=[c[0] for c in SPECIAL_CASES])
def test_special_functions(name, fn, x, expected, rtol):
  # logit/digamma: float32 inputs near 0/1 (logit) and the pole at 0 (digamma) amplify
  # the input rounding, hence the looser rtol
  for out in both(fn, x):
    check(out, expected, rtol=rtol, atol=rtol)


def test_erfinv_and_x_logs():
  for out in both(sp.erfinv, UNIT):
    # invert with float64 math.erf: erf(erfinv(y)) == y
    np.testing.assert_allclose(np.vectorize(math.erf)(np.asarray(out, np.float64)), UNIT,
                               rtol=2e-6, atol=2e-6)
  check(sp.erfinv(np.array([0., 1., -1.], np.float32)), [0., np.inf, -np.inf])
  y = np.abs(X[1]) + 0.1
  for out in both(sp.xlogy, X[0], y):
    check(out, X64[0] * np.log(y.astype(np.float64)))
  for out in both(sp.xlog1py, X[0], y):
    check(out, X64[0] * np.log1p(y.astype(np.float64)))
  # 0 * log(0) is 0, unless y is NaN
  check(sp.xlogy(np.float32(0), np.float32(0)), 0.)
  check(sp.xlogy(np.float32(0), np.float32(np.nan)), np.nan)
  check(sp.xlog1py(np.float32(0), np.float32(-1)), 0.)
  check(sp.xlogy(2, np.e), 2., weak=True)  # Python scalars: weak float32


SPECIAL_WEAK = {  # JAX 0.12: (result weak for a weak float input)
    "erf": True, "erfc": True, "erfinv": True, "expit": True, "gammaln": True,
    "digamma": True, "logit": False,
}


@pytest.mark.parametrize("name", sorted(SPECIAL_WEAK))
def test_special_dtypes(name):
  fn = getattr(sp, name)
  w = ember.lax.broadcast(0.5, (2,))
  wi = ember.lax.broadcast(1, (2,))
  assert fn(w).weak_type == SPECIAL_WEAK[name] and fn(w).dtype == np.float32
  assert fn(wi).dtype == np.float32 and fn(wi).weak_type == SPECIAL_WEAK[name]
  assert fn(np.ones(2, np.int8)).dtype == np.float32
  assert fn(np.full(2, 0.5, np.float16)).dtype == np.float16
  assert not fn(np.full(2, 0.5, np.float32)).weak_type


# --- ember.nn activations ------------------------------------------------------------------------

SELU_A, SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
x64 = X64


def _gelu_tanh(x):
  return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = [  # name, fn, float64 reference, weak result for a weak input (JAX 0.12)
    ("relu", nn.relu, np.maximum(x64, 0), True),
    ("relu6", lambda x: nn.relu6(x * 4), np.clip(x64 * 4, 0, 6), True),
    ("sigmoid", nn.sigmoid, 1 / (1 + np.exp(-x64)), True),
    ("silu", nn.silu, x64 / (1 + np.exp(-x64)), True),
    ("swish", nn.swish, x64 / (1 + np.exp(-x64)), True),
    ("gelu", nn.gelu, _gelu_tanh(x64), False),
    ("gelu_exact", lambda x: nn.gelu(x, approximate=False),
     0.5 * x64 * np.vectorize(math.erfc)(-x64 / np.sqrt(2)), False),
    ("softplus", nn.softplus, np.log1p(np.exp(x64)), True),
    ("log_sigmoid", nn.log_sigmoid, -np.log1p(np.exp(-x64)), True),
    ("elu", nn.elu, np.where(x64 > 0, x64, np.expm1(x64)), True),
    ("elu_alpha", lambda x: nn.elu(x, 0.3), np.where(x64 > 0, x64, 0.3 * np.expm1(x64)), True),
    ("selu", nn.selu, SELU_S * np.where(x64 > 0, x64, SELU_A * np.expm1(x64)), True),
    ("celu", lambda x: nn.celu(x, 0.5),
     np.maximum(x64, 0) + 0.5 * np.expm1(np.minimum(x64, 0) / 0.5), True),
    ("leaky_relu", nn.leaky_relu, np.where(x64 >= 0, x64, 0.01 * x64), True),
    ("leaky_relu_slope", lambda x: nn.leaky_relu(x, 0.2), np.where(x64 >= 0, x64, 0.2 * x64),
     True),
    ("hard_tanh", nn.hard_tanh, np.clip(x64, -1, 1), True),
    ("identity", nn.identity, x64, True),
    ("tanh", nn.tanh, np.tanh(x64), True),
    ("squareplus", nn.squareplus, (x64 + np.sqrt(x64 ** 2 + 4)) / 2, True),
    ("squareplus_b", lambda x: nn.squareplus(x, 0.5), (x64 + np.sqrt(x64 ** 2 + .5)) / 2, True),
    ("sparse_plus", lambda x: nn.sparse_plus(x * 2),
     np.where(x64 * 2 <= -1, 0, np.where(x64 * 2 >= 1, x64 * 2, (x64 * 2 + 1) ** 2 / 4)), True),
    ("soft_sign", nn.soft_sign, x64 / (np.abs(x64) + 1), True),
    ("sparse_sigmoid", lambda x: nn.sparse_sigmoid(x * 2), np.clip((x64 * 2 + 1) / 2, 0, 1),
     True),
    ("mish", nn.mish, x64 * np.tanh(np.log1p(np.exp(x64))), True),
    ("hard_sigmoid", lambda x: nn.hard_sigmoid(x * 4), np.clip(x64 * 4 + 3, 0, 6) / 6, True),
    ("hard_silu", lambda x: nn.hard_silu(x * 4), x64 * 4 * np.clip(x64 * 4 + 3, 0, 6) / 6,
     True),
    ("hard_swish", lambda x: nn.hard_swish(x * 4), x64 * 4 * np.clip(x64 * 4 + 3, 0, 6) / 6,
     True),
    ("log1mexp", lambda x: nn.log1mexp(jnp.abs(x) + 0.01),
     np.log(-np.expm1(-(np.abs(x64) + 0.01))), True),
]


@pytest.mark.parametrize("name,fn,expected,weak", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations(name, fn, expected, weak):
  for out in both(fn, X):
    check(out, expected, rtol=2e-6 if name != "gelu_exact" else 1e-5, atol=2e-6)
  w = ember.lax.broadcast(0.5, (3,))
  out = fn(w)
  assert out.dtype == np.float32 and out.weak_type == weak
  assert fn(X.astype(np.float16)).dtype == np.float16


def test_activation_dtypes_on_ints():
  i = np.array([-2, 0, 3], np.int32)
  check(nn.relu(i), [0, 0, 3], "int32")
  check(nn.hard_tanh(i), [-1, 0, 1], "int32")
  check(nn.relu6(i * 3), [0, 0, 6], "float32", weak=True)  # min with 6.0: weak float
  check(nn.gelu(i), _gelu_tanh(i.astype(np.float64)), "float32", rtol=2e-6)
  check(nn.softplus(i), np.log1p(np.exp(i.astype(np.float64))), "float32")
  # JAX 0.12: weak results where a Python float constant decides the dtype
  check(nn.sparse_plus(i), [0., 0.25, 3.], "float32", weak=True)
  check(nn.hard_sigmoid(i), [1 / 6, .5, 1.], "float32", weak=True)
  check(nn.elu(i), [math.expm1(-2), 0, 3], "float32", weak=True)
  check(nn.squareplus(i), (i + np.sqrt(i ** 2 + 4.)) / 2, "float32")
  check(nn.identity(i), i, "int32")
  check(nn.identity(2.0), 2.0, weak=True)
  with pytest.raises(TypeError, match="logistic does not accept dtype int32"):
    nn.sigmoid(i)  # lax.logistic, as in JAX


def test_one_hot():
  labels = np.array([[0, 2], [5, -1]], np.int32)
  eye = np.eye(3, dtype=np.float32)
  expected = np.zeros((2, 2, 3), np.float32)
  for (i, j), k in np.ndenumerate(labels):
    if 0 <= k < 3:
      expected[i, j] = eye[k]
  for out in both(lambda x: nn.one_hot(x, 3), labels):
    check(out, expected)                                 # out of range: all zeros
  check(nn.one_hot(labels, 3, axis=0), np.moveaxis(expected, -1, 0))
  check(nn.one_hot(labels, 3, axis=1), np.moveaxis(expected, -1, 1))
  check(nn.one_hot(labels, 3, dtype=jnp.int8), expected, "int8")
  check(nn.one_hot(np.array([0., 1.5, 2.]), 3), [[1, 0, 0], [0, 0, 0], [0, 0, 1]])
  check(nn.one_hot(2, 4), [0, 0, 1, 0])
  with pytest.raises(ValueError, match="axis 3 is out of bounds"):
    nn.one_hot(labels, 3, axis=3)
  with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
    nn.one_hot(labels, 2.5)
  with pytest.raises(TypeError, match="'float' object cannot be interpreted as an integer"):
    nn.one_hot(labels, 2.0)   # as JAX: integral floats are refused too
  with pytest.raises(TypeError, match="iota shape must have every element be nonnegative"):
    nn.one_hot(labels, -1)
  with pytest.raises(ember.errors.ConcretizationTypeError, match="num_classes"):
    ember.jit(nn.one_hot)(labels, 3)


def test_standardize():
  for axis in (-1, (0, 2)):
    mean = X64.mean(axis=axis, keepdims=True)
    var = X64.var(axis=axis, keepdims=True)
    expected = (X64 - mean) / np.sqrt(var + 1e-5)
    for out in both(lambda x: nn.standardize(x, axis=axis), X):
      check(out, expected, rtol=1e-5, atol=1e-5)
    check(nn.standardize(X, axis=axis, algorithm="stable"), expected, rtol=1e-5, atol=1e-5)
  check(nn.standardize(X, mean=0.0, variance=1.0, epsilon=0.0), X64)
  mask = X > -1
  m = np.mean(X64, -1, where=mask, keepdims=True)
  v = np.var(X64, -1, where=mask, keepdims=True)
  check(nn.standardize(X, where=mask), (X64 - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-4)
  assert not nn.standardize(ember.lax.broadcast(0.5, (2, 3))).weak_type
  with pytest.raises(ValueError, match="Unknown algorithm 'foo'"):
    nn.standardize(X, algorithm="foo")


def test_namespaces():
  assert ember.scipy.special is sp
  for name in ("relu", "relu6", "sigmoid", "silu", "swish", "gelu", "softplus", "log_sigmoid",
               "elu", "selu", "celu", "leaky_relu", "hard_tanh", "softmax", "log_softmax",
               "logsumexp", "one_hot", "standardize"):
    assert callable(getattr(nn, name)), name
  for name in ("logsumexp", "softmax", "log_softmax", "erf", "erfc", "erfinv", "expit",
               "logit", "gammaln", "digamma", "xlogy", "xlog1py"):
    assert callable(getattr(sp, name)), name


# --- more of jax.nn: glu, logmeanexp, edge values, gradients ---------------------------------

def test_glu_logmeanexp():
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 10 - 1
  x64_ = x.astype(np.float64)
  for out in both(nn.glu, x):
    check(out, x64_[..., :2] / (1 + np.exp(-x64_[..., 2:])))
  check(nn.glu(x[:, :2], axis=1), x64_[:, :1] / (1 + np.exp(-x64_[:, 1:2])))
  with pytest.raises(ValueError, match="glu: the size of axis 1 must be divisible by 2"):
    nn.glu(x, axis=1)
  for axis, keepdims in ((None, False), (1, False), ((0, 2), True)):
    ref = np_logsumexp(x64_, axis, keepdims) - np.log(
        x.size / np.size(np_logsumexp(x64_, axis, keepdims)))
    for out in both(lambda x: nn.logmeanexp(x, axis=axis, keepdims=keepdims), x):
      check(out, ref)
  mask = x > -0.5  # the first row is all masked out: -inf - log(0) is NaN, as in JAX
  with np.errstate(divide="ignore", invalid="ignore"):
    ref = np_logsumexp(np.where(mask, x64_, -np.inf), 2) - np.log(mask.sum(2))
  check(nn.logmeanexp(x, axis=2, where=mask), ref)
  check(nn.logmeanexp(np.arange(4)), np.log(np.mean(np.exp(np.arange(4.)))))


def test_edge_values():
  big = np.array([-1e4, -80., 0., 80., 1e4, np.inf, -np.inf, np.nan], np.float32)
  b64 = big.astype(np.float64)
  with np.errstate(over="ignore", invalid="ignore"):
    check(nn.softplus(big), np.logaddexp(b64, 0))       # no overflow: 1e4, not inf
    check(nn.log_sigmoid(big), -np.logaddexp(-b64, 0))   # -1e4 far left, not -inf
    check(nn.sigmoid(big), [0, math.exp(-80), .5, 1, 1, 1, 0, np.nan], atol=1e-45)
    check(nn.silu(big), [-0., -80 * math.exp(-80), 0, 80, 1e4, np.inf, np.nan, np.nan],
          atol=1e-45)
  check(nn.gelu(big[:5]), [-0., -0., 0, 80, 1e4])
  check(nn.gelu(big[:5], approximate=False), [-0., -0., 0, 80, 1e4])
  check(nn.elu(big[:5]), [-1, -1, 0, 80, 1e4])
  # -exp(-100) is a float32 subnormal: flushed to -0 (as JAX 0.12.1: XLA:CPU flushes them)
  check(nn.log1mexp(np.array([0., 1e-30, 0.5, 100., np.inf], np.float32)),
        [-np.inf, np.log(1e-30), np.log(-np.expm1(-0.5)), -0., 0.], rtol=2e-6, atol=1e-45)
  check(nn.softmax(np.array([-np.inf, 0., 1.], np.float32)), [0, 1 / (1 + math.e),
                                                              math.e / (1 + math.e)])
  check(nn.softmax(np.array([-np.inf, -np.inf], np.float32)), [np.nan, np.nan])
  check(sp.logsumexp(np.array([np.inf, 1.], np.float32)), np.inf)
  check(sp.logsumexp(np.array([1e30, 1e30, -1e30], np.float32)), 1e30)


def _fd64(f, x, h=1e-6):
  return (f(x + h) - f(x - h)) / (2 * h)


GRAD_POINTS = np.array([-3., -1.2, -0.4, 0.3, 0.9, 2.5, 7.], np.float64)
GRADS = [  # name, fn, float64 derivative (analytic where short)
    ("sigmoid", nn.sigmoid, lambda x: np.exp(-x) / (1 + np.exp(-x)) ** 2),
    ("softplus", nn.softplus, lambda x: 1 / (1 + np.exp(-x))),
    ("log_sigmoid", nn.log_sigmoid, lambda x: 1 / (1 + np.exp(x))),
    ("silu", nn.silu, lambda x: (1 + np.exp(-x) + x * np.exp(-x)) / (1 + np.exp(-x)) ** 2),
    ("elu", lambda x: nn.elu(x, 0.5), lambda x: np.where(x > 0, 1, 0.5 * np.exp(x))),
    ("celu", lambda x: nn.celu(x, 0.5), lambda x: np.where(x > 0, 1, np.exp(x / 0.5))),
    ("selu", nn.selu, lambda x: SELU_S * np.where(x > 0, 1, SELU_A * np.exp(x))),
    ("gelu_exact", lambda x: nn.gelu(x, approximate=False),
     lambda x: 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
     + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    ("gelu", nn.gelu, lambda x: _fd64(_gelu_tanh, x)),
    ("mish", nn.mish, lambda x: _fd64(lambda v: v * np.tanh(np.log1p(np.exp(v))), x)),
    ("squareplus", nn.squareplus, lambda x: (1 + x / np.sqrt(x * x + 4)) / 2),
    ("soft_sign", nn.soft_sign, lambda x: 1 / (1 + np.abs(x)) ** 2),
    ("sparse_plus", nn.sparse_plus, lambda x: np.clip((x + 1) / 2, 0, 1)),
    ("hard_silu", nn.hard_silu, lambda x: np.where(x <= -3, 0, np.where(x >= 3, 1,
                                                                         (2 * x + 3) / 6))),
    ("log1mexp", lambda x: nn.log1mexp(jnp.abs(x)), lambda x: np.sign(x) / np.expm1(np.abs(x))),
    ("tanh", nn.tanh, lambda x: 1 - np.tanh(x) ** 2),
]


@pytest.mark.parametrize("name,fn,dfn", GRADS, ids=[g[0] for g in GRADS])
def test_activation_gradients(name, fn, dfn):
  with ember.enable_x64():
    g = ember.vmap(ember.grad(fn))(GRAD_POINTS)
    check(g, dfn(GRAD_POINTS), "float64", rtol=1e-8, atol=1e-9)
  g32 = ember.jit(ember.vmap(ember.grad(fn)))(GRAD_POINTS.astype(np.float32))
  check(g32, dfn(GRAD_POINTS), rtol=2e-5, atol=2e-6)


def test_gradients_at_kinks_and_extremes():
  grad = lambda f, v: float(ember.grad(f)(np.float32(v)))
  assert grad(nn.relu, 0.) == 0. and grad(nn.relu, 1e-30) == 1.   # JAX: relu'(0) = 0
  assert grad(nn.relu6, 0.) == 0. and grad(nn.relu6, 6.) == 0. and grad(nn.relu6, 5.) == 1.
  assert grad(nn.hard_tanh, 0.5) == 1. and grad(nn.hard_tanh, 2.) == 0.
  assert grad(nn.leaky_relu, -1.) == np.float32(0.01) and grad(nn.leaky_relu, 0.) == 1.
  assert grad(nn.softplus, 1e4) == 1. and grad(nn.softplus, -1e4) == 0.
  assert grad(nn.log_sigmoid, -1e4) == 1. and grad(nn.log_sigmoid, 1e4) == 0.
  assert grad(nn.elu, -200.) == 0. and grad(nn.gelu, -50.) == 0.
  np.testing.assert_allclose(grad(nn.log1mexp, 1e-3), 1 / math.expm1(1e-3), rtol=1e-6)


def test_softmax_gradients():
  x = np.array([[0.5, -1., 2.], [3., 0., 0.1]])
  with ember.enable_x64():
    for axis in (-1, 0):
      jac = ember.jacrev(lambda v: nn.softmax(v, axis=axis))(x)
      y = np_softmax(x, axis)
      # d softmax_i / d x_j = y_i (delta_ij - y_j) along the axis, 0 across it
      for idx in np.ndindex(*x.shape):
        for jdx in np.ndindex(*x.shape):
          other = [d for d in range(2) if d != axis % 2][0]
          same = idx[other] == jdx[other]
          expected = y[idx] * ((idx == jdx) - y[jdx]) if same else 0.
          np.testing.assert_allclose(float(jac[idx + jdx]), expected, atol=1e-12)
      # d log_softmax(x)[0, 1] = e_01 - softmax(x) on the slice through (0, 1)
      g = ember.grad(lambda v: nn.log_softmax(v, axis=axis)[0, 1])(x)
      sel = np.zeros_like(x)
      sel[0, 1] = 1
      in_slice = np.broadcast_to(sel.sum(axis, keepdims=True), x.shape)
      check(g, sel - in_slice * np_softmax(x, axis), "float64", rtol=1e-10, atol=1e-12)
    # masked-out entries get zero gradient, even when they hold inf
    g = ember.grad(lambda v: nn.softmax(v, where=np.array([True, False, True]))[2])(
        np.array([1., np.inf, 2.]))
    y = np_softmax(np.array([1., 2.]))
    check(g, [-y[0] * y[1], 0., y[1] * (1 - y[1])], "float64", rtol=1e-10)


def test_logsumexp_gradients():
  x = np.array([1., 2., -np.inf, 0.5])
  with ember.enable_x64():
    check(ember.grad(sp.logsumexp)(x), np_softmax(np.where(np.isinf(x), -1e300, x)),
          "float64", rtol=1e-12)
    b = np.array([1., 0., 2., 3.])
    g = ember.grad(lambda x: sp.logsumexp(x, b=b))(np.array([1., 2., 3., 0.5]))
    e = b * np.exp([1., 2., 3., 0.5])
    check(g, e / e.sum(), "float64", rtol=1e-12)
    gb = ember.grad(lambda b: sp.logsumexp(np.array([1., 2., 3.]), b=b))(np.array([1., .5, 2.]))
    check(gb, np.exp([1., 2., 3.]) / np.sum(np.array([1., .5, 2.]) * np.exp([1., 2., 3.])),
          "float64", rtol=1e-12)
    # where= masks an inf out of both the value and the gradient
    mask = np.array([True, False, True])
    g = ember.grad(lambda x: sp.logsumexp(x, where=mask))(np.array([1., np.inf, 2.]))
    check(g, [np_softmax(np.array([1., 2.]))[0], 0., np_softmax(np.array([1., 2.]))[1]],
          "float64", rtol=1e-12)
    out, sign = sp.logsumexp(np.array([1., 2.]), b=np.array([1., -1.]), return_sign=True)
    check(out, np.log(np.e ** 2 - np.e), "float64")
    check(sign, -1., "float64")


# --- scipy.special: the normal distribution, gamma family, entropies ----------------------------

def np_ndtr(x):
  return 0.5 * np.vectorize(math.erfc)(-np.asarray(x, np.float64) / math.sqrt(2))


def np_log_ndtr(x):
  x = np.asarray(x, np.float64)
  with np.errstate(divide="ignore"):  # the branch not taken
    return np.where(x > 0, np.log1p(-np_ndtr(-x)), np.log(np_ndtr(x)))


XN = np.array([-38., -12., -6., -1.5, -0.3, 0., 0.3, 1., 4., 5.5, 9., np.inf, -np.inf, np.nan],
              np.float32)


def test_ndtr_log_ndtr():
  # relative condition number of Phi in the lower tail is ~x^2: float32 rounding of x / sqrt(2)
  # (6e-8) becomes ~x^2 * 6e-8 relative in ndtr; log_ndtr takes log(ndtr(x)) ~ log(1 - tiny)
  # for x in (0, 5], which carries float32's absolute 6e-8
  x64_ = XN.astype(np.float64)
  rtol = 2e-6 + 1.2e-7 * np.square(np.nan_to_num(x64_, posinf=0, neginf=0))
  for out in both(sp.ndtr, XN):
    got = np.asarray(out, np.float64)
    want = np_ndtr(x64_)
    # np.isclose by hand: NumPy 1.26's cannot take an array rtol alongside infinities
    with np.errstate(invalid="ignore"):
      close = (np.abs(got - want) <= 1e-45 + rtol * np.abs(want)) | (got == want)
    assert np.all(close | (np.isnan(got) & np.isnan(want))), got
  for out in both(sp.log_ndtr, XN):
    check(out, np_log_ndtr(x64_), rtol=2e-6, atol=6e-8)
  check(sp.log_ndtr(np.float32(-38.), series_order=0), np_log_ndtr(-38.), rtol=2e-6)
  with ember.enable_x64():
    x = np.array([-35., -21., -19., -3., 0.5, 7.9, 8.1, 30.])
    # condition number ~x^2 again: 35^2 * 1.1e-16 ~ 1.4e-13
    check(sp.ndtr(x), np_ndtr(x), "float64", rtol=5e-13, atol=1e-300)
    tail = x < -20  # float64's asymptotic-series segment: truncated after `series_order`
    check(sp.log_ndtr(x[~tail]), np_log_ndtr(x[~tail]), "float64", rtol=1e-13, atol=2e-16)
    # the first omitted term, (2n+1)!! / x^(2n+2), bounds the truncation error
    check(sp.log_ndtr(x[tail]), np_log_ndtr(x[tail]), "float64", rtol=0,
          atol=105 / 21. ** 8)
    check(sp.log_ndtr(x[tail], series_order=10), np_log_ndtr(x[tail]), "float64", rtol=1e-13)
    # d/dx log Phi(x) = phi(x) / Phi(x) = exp(logpdf - log_ndtr), also far in the lower
    # tail (there it inherits the series truncation, 3e-9 at x = -21)
    g = ember.vmap(ember.grad(sp.log_ndtr))(x)
    check(g, np.exp(-x * x / 2 - np_log_ndtr(x)) / math.sqrt(2 * math.pi), "float64",
          rtol=5e-9, atol=1e-300)


def test_ndtri():
  q = np.array([1e-30, 1e-10, 0.01, 0.135, 0.4, 0.5, 0.7, 0.99, 1 - 1e-7], np.float32)
  for out in both(sp.ndtri, q):
    # Phi(ndtri(q)) == q: the float64 ndtr of the float32 result, within the result's
    # rounding (|x| * phi(x) / Phi(x) * 6e-8 relative)
    x = np.asarray(out, np.float64)
    assert np.all(np.isclose(np_ndtr(x), q, rtol=2e-6 * (1 + x * x), atol=0)), x
  check(sp.ndtri(np.array([0., 1., -0.1, 1.5, np.nan], np.float32)),
        [-np.inf, np.inf, np.nan, np.nan, np.nan])
  check(sp.ndtri(np.float32(0.975)), 1.959963984540054)
  with ember.enable_x64():
    x = sp.ndtri(np.array([1e-300, 1e-20, 0.3, 0.97]))
    np.testing.assert_allclose(np_ndtr(np.asarray(x)), [1e-300, 1e-20, 0.3, 0.97], rtol=1e-13)
    # the derivative is 1 / phi(ndtri(q))
    g = ember.vmap(ember.grad(sp.ndtri))(np.array([1e-10, 0.3, 0.5, 0.97]))
    check(g, math.sqrt(2 * math.pi) * np.exp(np.square(np.asarray(
        sp.ndtri(np.array([1e-10, 0.3, 0.5, 0.97])))) / 2), "float64", rtol=1e-12)


NEG = np.array([-3.5, -2., -1., -0.5, -0.0, 0., np.nan, 1.5, 4.25], np.float32)


def test_gamma_family():
  n64 = NEG.astype(np.float64)
  poles = (n64 <= 0) & (n64 == np.floor(n64))

  def vmath(f):
    return np.vectorize(lambda v: np.nan if np.isnan(v) or (v <= 0 and v == int(v)) else f(v))

  sgn = np.where(poles | np.isnan(n64), np.nan,
                 np.where((n64 < 0) & (np.floor(n64) % 2 != 0), -1., 1.))
  sgn[4] = -1.  # gammasgn(-0.0) is -1 (gamma(-0.0) is -inf)
  sgn[5] = 1.
  for out in both(sp.gammasgn, NEG):
    check(out, sgn)
  for out in both(sp.gamma, NEG):
    check(out, [math.gamma(-3.5), np.nan, np.nan, math.gamma(-0.5), -np.inf, np.inf, np.nan,
                math.gamma(1.5), math.gamma(4.25)], rtol=2e-6)
  for out in both(sp.loggamma, NEG):  # real loggamma: NaN for x <= 0
    check(out, np.where(n64 > 0, vmath(math.lgamma)(n64), np.nan), rtol=2e-6)
  check(sp.factorial(NEG), [0, 0, 0, 0, 1, 1, np.nan, math.gamma(2.5), math.gamma(5.25)],
        rtol=2e-6)
  check(sp.factorial(np.arange(6)), [1, 1, 2, 6, 24, 120], rtol=2e-6)
  a = np.array([0.5, 1., 3., 9., 100., 1e5, 2.5], np.float32)
  b = np.array([2., 0.5, 10., 9., 1e5, 3., 30.], np.float32)
  lg = np.vectorize(math.lgamma)
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  ref = lg(a64) + lg(b64) - lg(a64 + b64)
  for out in both(sp.betaln, a, b):  # algdiv keeps large arguments accurate in float32
    check(out, ref, rtol=2e-6, atol=2e-6)
  check(sp.beta(a[:4], b[:4]), np.exp(ref[:4]), rtol=4e-6)
  check(sp.beta(np.float32(-0.5), np.float32(2.)), math.gamma(-0.5) * 1 / math.gamma(1.5),
        rtol=2e-6)
  for d in (1, 2, 3):
    x = np.array([2.5, 4., 10.], np.float32)
    ref = d * (d - 1) / 4 * math.log(math.pi) + sum(lg(x.astype(np.float64) - j / 2)
                                                    for j in range(d))
    for out in both(lambda x: sp.multigammaln(x, d), x):
      check(out, ref, rtol=2e-6)
  with ember.enable_x64():
    g = ember.grad(lambda a: sp.multigammaln(a, 2))(3.)
    np.testing.assert_allclose(float(g), _digamma64(3.) + _digamma64(2.5), rtol=1e-8)


P = np.array([0., 0., 0., -1., 2., 0.3, 1e-3, 5., np.inf], np.float32)
Q2 = np.array([0., -1., np.nan, 0., -1., 0.3001, 2., 1e-20, 1.], np.float32)


def test_entropies():
  p, q = P.astype(np.float64), Q2.astype(np.float64)
  # scipy: p log(p/q) for p, q > 0; 0 for p == 0 <= q; inf otherwise; NaN for NaN inputs
  with np.errstate(divide="ignore", invalid="ignore"):
    rel = np.where(np.isnan(p) | np.isnan(q), np.nan,
                   np.where((p > 0) & (q > 0), p * np.log(p / q),
                            np.where((p == 0) & (q >= 0), 0., np.inf)))
    kl = np.where((p > 0) & (q > 0), rel - p + q, np.where((p == 0) & (q >= 0), q, rel))
  kl[-1] = np.nan  # p = inf: inf * log(inf) - inf + 1 is NaN (rel_entr stays inf)
  for out in both(sp.rel_entr, P, Q2):
    check(out, rel, rtol=2e-6)
  for out in both(sp.kl_div, P, Q2):
    # near p == q the series keeps relative accuracy where rel - p + q cancels
    check(out, kl, rtol=1e-5)
  # kl ~ (p - q)^2 / 2q = 1.7e-8 here: the naive rel - p + q would lose every digit in float32
  p1, q1 = float(np.float32(0.3)), float(np.float32(0.3001))
  check(sp.kl_div(np.float32(p1), np.float32(q1)), p1 * math.log(p1 / q1) - p1 + q1, rtol=1e-5,
        atol=0)
  x = np.array([-1., 0., 1e-30, 0.5, 1., 3., np.inf, np.nan], np.float32)
  with np.errstate(divide="ignore", invalid="ignore"):
    ref = np.where(x < 0, -np.inf, np.where(x == 0, 0, -x.astype(np.float64) * np.log(x)))
  for out in both(sp.entr, x):
    check(out, ref, rtol=2e-6)
  with ember.enable_x64():
    g = ember.vmap(ember.grad(sp.entr))(np.array([0., 0.5, 2.]))
    check(g, [np.inf, -math.log(0.5) - 1, -math.log(2.) - 1], "float64")
    gp, gq = ember.grad(sp.rel_entr, (0, 1))(0.5, 2.)
    np.testing.assert_allclose([float(gp), float(gq)], [math.log(0.25) + 1, -0.25])
    gp, gq = ember.grad(sp.kl_div, (0, 1))(0.5, 2.)
    np.testing.assert_allclose([float(gp), float(gq)], [math.log(0.25), 0.75])


def test_xlogy_gradients_and_boxcox():
  # JAX's custom JVPs: d/dx = log(y), d/dy = x / y, so (0, 0) gives (-inf, nan)
  for fn, y0 in ((sp.xlogy, 0.), (sp.xlog1py, -1.)):
    gx, gy = ember.grad(fn, (0, 1))(0., y0)
    assert float(gx) == -np.inf and np.isnan(float(gy))
    assert gx.weak_type and gy.weak_type
  with ember.enable_x64():
    x, y = np.array([0.5, 2., -1.]), np.array([3., 0.25, 1.5])
    gx, gy = ember.vmap(ember.grad(sp.xlogy, (0, 1)))(x, y)
    check(gx, np.log(y), "float64")
    check(gy, x / y, "float64")
    gx, gy = ember.vmap(ember.grad(sp.xlog1py, (0, 1)))(x, y)
    check(gx, np.log1p(y), "float64")
    check(gy, x / (1 + y), "float64")
  x = np.array([0.5, 1., 2., 10.], np.float32)
  lm = np.array([0., 0.5, -1., 2.], np.float32)
  x64_, l64 = x.astype(np.float64), lm.astype(np.float64)
  safe = np.where(l64 == 0, 1, l64)
  for out in both(sp.boxcox, x, lm):
    check(out, np.where(l64 == 0, np.log(x64_), np.expm1(safe * np.log(x64_)) / safe))
  for out in both(sp.boxcox1p, x, lm):
    check(out, np.where(l64 == 0, np.log1p(x64_), np.expm1(safe * np.log1p(x64_)) / safe))


SPECIAL_EXTRA_WEAK = {  # JAX 0.12, for a weak float32 input of shape (2,)
    "ndtr": False, "log_ndtr": False, "ndtri": False, "entr": True, "loggamma": True,
    "gamma": False, "gammasgn": False, "factorial": True,
}


@pytest.mark.parametrize("name", sorted(SPECIAL_EXTRA_WEAK))
def test_special_extra_dtypes(name):
  fn = getattr(sp, name)
  out = fn(ember.lax.broadcast(0.3, (2,)))
  assert out.dtype == np.float32 and out.weak_type == SPECIAL_EXTRA_WEAK[name]
  assert not fn(np.full(2, 0.3, np.float32)).weak_type
  with ember.enable_x64():
    assert fn(np.full(2, 0.3)).dtype == np.float64
  if name in ("ndtr", "log_ndtr", "ndtri"):  # float32/float64 only, as JAX
    with pytest.raises(TypeError, match="x.dtype=float16 is not supported"):
      fn(np.full(2, 0.3, np.float16))
  else:
    assert fn(np.full(2, 0.3, np.float16)).dtype == np.float16


def test_special_weak_pairs():
  w = ember.lax.broadcast(0.3, (2,))
  for name, weak in (("betaln", True), ("beta", False), ("xlogy", True), ("xlog1py", True),
                     ("rel_entr", False), ("kl_div", False), ("boxcox", True),
                     ("boxcox1p", True)):
    out = getattr(sp, name)(w, 2.0)
    assert out.dtype == np.float32 and out.weak_type == weak, name
  assert sp.logit(0.3).weak_type and not sp.logit(w).weak_type  # JAX 0.12, as observed


SPECIAL_ERRORS = [
    (lambda: sp.log_ndtr(np.ones(2, np.float32), series_order=31), ValueError,
     "series_order must be <= 30"),
    (lambda: sp.log_ndtr(np.ones(2, np.float32), series_order=-1), ValueError,
     "series_order must be non-negative"),
    (lambda: sp.log_ndtr(np.ones(2, np.float32), series_order=2.0), TypeError,
     "series_order must be a Python integer"),
    (lambda: sp.log_ndtr(np.ones(2, np.int32)), TypeError, r"x.dtype=int32 is not supported\."),
    (lambda: sp.ndtri(np.array([0, 1])), TypeError, "x.dtype=int32 is not supported"),
    (lambda: sp.factorial(3, exact=True), ValueError, "factorial with exact=True"),
    (lambda: sp.gamma(np.ones(2, np.complex64)), ValueError, "does not support complex"),
    (lambda: sp.entr(np.ones(2, np.complex64)), ValueError,
     "entr does not support complex-valued inputs"),
    (lambda: ember.jit(sp.multigammaln)(2.5, 2), ember.errors.ConcretizationTypeError,
     "d argument of multigammaln"),
    (lambda: nn.softmax(np.ones((2, 3), np.float32), axis=2), ValueError,
     "axis 2 is out of bounds for array of dimension 2"),
    (lambda: sp.logsumexp(np.ones((2, 3), np.float32), axis=-3), ValueError,
     "axis -3 is out of bounds for array of dimension 2"),
]


@pytest.mark.parametrize("thunk,cls,msg", SPECIAL_ERRORS)
def test_special_errors(thunk, cls, msg):
  with pytest.raises(cls, match=msg):
    thunk()


def test_more_namespaces():
  for name in ("identity", "squareplus", "sparse_plus", "soft_sign", "sparse_sigmoid", "mish",
               "glu", "hard_sigmoid", "hard_silu", "hard_swish", "log1mexp", "tanh",
               "logmeanexp"):
    assert callable(getattr(nn, name)), name
    assert name in nn.__all__
  assert nn.tanh is jnp.tanh and nn.swish is nn.silu and nn.hard_swish is nn.hard_silu
  for name in sp.__all__:
    assert callable(getattr(sp, name)), name

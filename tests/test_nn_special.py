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
  assert str(ember.make_jaxpr(nn.softmax)(np.ones((2, 3), np.float32))) == """\
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
  with pytest.raises(TypeError):
    nn.one_hot(labels, 2.5)


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

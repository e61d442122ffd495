"""ember.scipy.stats.norm against float64 formulas (math.erfc), eager and under ember.jit;
loc/scale broadcasting, tails, gradients, and dtypes/weak types checked against JAX 0.12."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.scipy
import ember.scipy.stats
from ember.scipy.stats import norm

_erfc = np.vectorize(math.erfc)


def np_cdf(z):
  return 0.5 * _erfc(-np.asarray(z, np.float64) / math.sqrt(2))


def np_logcdf(z):
  z = np.asarray(z, np.float64)  # log1p(-Phi(-z)) keeps the ~-1e-19 of the upper tail
  with np.errstate(divide="ignore"):  # the branch not taken
    return np.where(z > 0, np.log1p(-np_cdf(-z)), np.log(np_cdf(z)))


def np_logpdf(z):
  return -0.5 * np.square(z) - 0.5 * math.log(2 * math.pi)


def _bisect_ppf(q):
  """The float64 quantile by bisection on math.erfc (q in (0, 1))."""
  lo, hi = -40.0, 40.0
  for _ in range(200):
    mid = 0.5 * (lo + hi)
    if 0.5 * math.erfc(-mid / math.sqrt(2)) < q:
      lo = mid
    else:
      hi = mid
  return 0.5 * (lo + hi)


np_ppf = np.vectorize(_bisect_ppf)


def both(f, *args):
  return [f(*args), ember.jit(f)(*args)]


def check(out, expected, dtype="float32", rtol=2e-6, atol=1e-7, weak=False):
  assert out.dtype == np.dtype(dtype) and out.weak_type == weak, (out.dtype, out.weak_type)
  assert out.shape == np.shape(expected), (out.shape, np.shape(expected))
  got = np.asarray(out, np.float64)
  ok = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)  # rtol may be an array
  assert ok.all(), (got[~ok], np.broadcast_to(expected, got.shape)[~ok],
                    np.broadcast_to(rtol, got.shape)[~ok])


X = np.array([-9., -3., -1.5, -0.3, 0., 0.3, 1., 4., 5.5], np.float32)
X64 = X.astype(np.float64)
LOC = np.array([0., 1., -2.], np.float32)
SCALE = np.array([[0.5], [3.]], np.float32)[:, :, None]   # (2, 1, 1)
XB = X[:, None]                                          # (9, 1): broadcasts to (2, 9, 3)
ZB = (XB.astype(np.float64) - LOC) / SCALE.astype(np.float64)

CASES = [  # name, float64 reference of z = (x - loc) / scale and of scale
    ("pdf", lambda z, s: np.exp(np_logpdf(z)) / s),
    ("logpdf", lambda z, s: np_logpdf(z) - np.log(s)),
    ("cdf", lambda z, s: np_cdf(z)),
    ("logcdf", lambda z, s: np_logcdf(z)),
    ("sf", lambda z, s: np_cdf(-z)),
    ("logsf", lambda z, s: np_logcdf(-z)),
]


def _rtol(z):
  # the relative condition number of exp(-z^2/2) and of Phi(z) in the lower tail is ~z^2:
  # the float32 rounding of z (1 ulp ~ 6e-8) becomes ~z^2 * 6e-8 in the result
  return 2e-6 + 1.2e-7 * np.square(z)


@pytest.mark.parametrize("name,ref", CASES, ids=[c[0] for c in CASES])
def test_values_and_broadcasting(name, ref):
  f = getattr(norm, name)
  # tiny tail values are relative-accurate (no absolute floor), except that log_ndtr takes
  # log(ndtr(z)) for z in (0, 5] (as JAX), where ndtr(z) ~ 1 carries float32's 6e-8
  # absolute rounding
  atol = 6e-8 if name in ("logcdf", "logsf") else 1e-30
  for out in both(f, X):
    check(out, ref(X64, 1.0), rtol=_rtol(X64), atol=atol)
  for out in both(f, XB, LOC, SCALE):
    check(out, ref(ZB, SCALE.astype(np.float64)), rtol=_rtol(ZB), atol=atol)
  with ember.enable_x64():
    x = np.linspace(-30, 8, 11)
    check(f(x, 0.5, 2.0), ref((x - 0.5) / 2.0, 2.0), "float64", rtol=1e-12,
          atol=2e-16 if name in ("logcdf", "logsf") else 1e-300)


def test_tails():
  # far tails are exact in log space (log_ndtr's asymptotic series), and sf has no
  # 1 - cdf cancellation
  x = np.array([-38., -30., -20., -12.], np.float32)
  ref = np_logcdf(x)
  check(norm.logcdf(x), ref, rtol=2e-6)
  check(norm.logsf(-x), ref, rtol=2e-6)
  check(norm.sf(np.float32(9.0)), np_cdf(-9.0), rtol=_rtol(9.0), atol=0)
  check(norm.cdf(np.float32(-9.0)), np_cdf(-9.0), rtol=_rtol(9.0), atol=0)
  inf = np.array([-np.inf, np.inf, np.nan], np.float32)
  check(norm.cdf(inf), [0., 1., np.nan])
  check(norm.logcdf(inf), [-np.inf, 0., np.nan])
  check(norm.pdf(inf), [0., 0., np.nan])
  check(norm.logpdf(inf), [-np.inf, -np.inf, np.nan])


Q = np.array([1e-30, 1e-10, 0.01, 0.1, 0.135, 0.4, 0.5, 0.7, 0.9, 0.99, 1 - 1e-7], np.float32)
Q64 = Q.astype(np.float64)


def test_ppf_isf():
  # ember's ndtri is Cephes' rational approximation (JAX 0.12 uses erf_inv_core): a few
  # float32 ulps, hence rtol 5e-7 relative to the float64 quantile of the float32 q
  for out in both(norm.ppf, Q):
    check(out, np_ppf(Q64), rtol=5e-7, atol=1e-6)
  for out in both(norm.isf, Q):   # isf = -ppf(q): exact in the upper tail too
    check(out, -np_ppf(Q64), rtol=5e-7, atol=1e-6)
  check(norm.ppf(Q[:, None], LOC, 2.), np_ppf(Q64)[:, None] * 2 + LOC, rtol=5e-7, atol=2e-6)
  check(norm.isf(Q[:, None], LOC, 2.), -np_ppf(Q64)[:, None] * 2 + LOC, rtol=5e-7, atol=2e-6)
  edge = np.array([0., 1., -0.1, 1.5, np.nan], np.float32)
  check(norm.ppf(edge), [-np.inf, np.inf, np.nan, np.nan, np.nan])
  check(norm.isf(edge), [np.inf, -np.inf, np.nan, np.nan, np.nan])
  with ember.enable_x64():
    q = np.array([1e-300, 1e-20, 0.3, 0.97])
    check(norm.ppf(q), np_ppf(q), "float64", rtol=1e-13)
  # ppf inverts cdf
  check(norm.cdf(norm.ppf(Q[2:-1])), Q64[2:-1], rtol=2e-6)


def _fd(f, x, h=1e-6):
  return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("name", ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"])
def test_gradients(name):
  f = getattr(norm, name)
  with ember.enable_x64():
    args = (0.3, 0.2, 1.5) if name in ("ppf", "isf") else (0.7, 0.2, 1.5)
    grads = ember.grad(lambda *a: f(*a), (0, 1, 2))(*(np.float64(a) for a in args))
    for i in range(3):
      def g(v):
        a = list(args)
        a[i] = v
        return float(f(*a))
      np.testing.assert_allclose(float(grads[i]), _fd(g, args[i]), rtol=1e-6, atol=1e-9)
  # float32 gradients far in the lower tail stay finite and relative-accurate
  if name == "logcdf":
    g = ember.vmap(ember.grad(norm.logcdf))(np.array([-30., -12., 0., 12.], np.float32))
    # d/dx log Phi(x) = phi(x) / Phi(x) ~ -x for x -> -inf, formed as exp(logpdf - logcdf):
    # both are ~-x^2/2 = -450 at x = -30, so float32 rounding (450 * 6e-8) gives ~3e-5
    z = np.array([-30., -12., 0., 12.])
    check(g, np.exp(np_logpdf(z)) / np_cdf(z), rtol=5e-5)


def test_dtypes_and_weak_types():
  w = ember.lax.broadcast(0.5, ())   # weak float32 scalar
  for name in ("pdf", "logpdf"):     # JAX 0.12: weak in, weak out (Python-scalar constants)
    f = getattr(norm, name)
    assert f(w).weak_type and f(0.3).weak_type and f(0.3, 0, 1).weak_type
    assert f(np.float16(0.3)).dtype == np.float16
    assert f(jnp.bfloat16(0.3)).dtype == jnp.bfloat16
  for name in ("cdf", "logcdf", "sf", "logsf", "ppf", "isf"):
    out = getattr(norm, name)(w)
    assert out.dtype == np.float32 and not out.weak_type
  for name in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "isf"):
    out = getattr(norm, name)(np.array([1, 0]))
    assert out.dtype == np.float32 and not out.weak_type
  assert not norm.pdf(np.float32(0.3)).weak_type
  with ember.enable_x64():
    assert norm.cdf(0.3).dtype == np.float64 and norm.ppf(0.3).dtype == np.float64


ERRORS = [
    (lambda: norm.cdf(np.float16(0.3)), TypeError,
     "x.dtype=float16 is not supported, see docstring"),
    (lambda: norm.logcdf(jnp.bfloat16(0.3)), TypeError, r"x.dtype=bfloat16 is not supported\."),
    (lambda: norm.ppf(np.array([0, 1])), TypeError, "x.dtype=int32 is not supported"),
    (lambda: norm.ppf(np.float16(0.3)), TypeError, "x.dtype=float16 is not supported"),
    (lambda: norm.cdf(np.ones(2), np.ones(3)), ValueError,
     r"Incompatible shapes for broadcasting: shapes=\[\(2,\), \(3,\)"),
]


@pytest.mark.parametrize("thunk,cls,msg", ERRORS)
def test_errors(thunk, cls, msg):
  with pytest.raises(cls, match=msg):
    thunk()


def test_namespaces():
  import ember.scipy.stats.norm as norm_module
  assert ember.scipy.stats.norm is norm_module is norm
  assert sorted(norm.__all__) == ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def test_gradients_of_the_cdfs_keep_a_python_floats_weak_type():
  # JAX 0.12: ndtr's `x * c` makes a weak x strong (a convert whose transpose makes the
  # cotangent weak again), so grad at a Python float is weak
  for f, want in ((norm.cdf, 0.31225395), (norm.sf, -0.31225395)):
    for g in (ember.grad(f), ember.jit(ember.grad(f))):
      out = g(0.7)
      assert out.dtype == np.float32 and out.weak_type
      np.testing.assert_allclose(float(out), want, rtol=1e-6)

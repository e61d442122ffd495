"""ember.random's gamma family, discrete and linear-algebra samplers (random/gamma.py,
gamma_family.py, discrete.py, linalg.py).

1. Values: each case of data/random_distributions_cases.py against JAX 0.12's draws
   (data/random_distributions.npz, from make_random_distributions.py): dtype and shape
   exactly; integer-valued draws (poisson, binomial, multinomial) exactly; float32 draws
   of the gamma family, wald, generalized_normal and ball bit for bit; the rest to a few
   ulps (see `_INEXACT` for which and why).
2. The same under `ember.jit` (representative cases: compiling the rejection loops is
   slow) and `ember.vmap` (per-key draws, exactly the unbatched ones).
3. Distributions: large samples against analytic moments, Kolmogorov-Smirnov statistics
   where the CDF has a closed form in NumPy, pmf frequencies for the discrete samplers.
4. d sample / d a of gamma (implicit reparameterization) against JAX and against finite
   differences of the regularized incomplete gamma function.
5. The errors users hit.
"""
import math
import os
import sys
import types

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import random
# jax.lax.random_gamma_grad; defined beside gamma (ember.lax may re-export it)
from ember._src.library.random.gamma import random_gamma_grad

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from random_distributions_cases import CASES, grad_cases  # noqa: E402

DATA = np.load(os.path.join(os.path.dirname(__file__), "data", "random_distributions.npz"))
CASE = {c[0]: c for c in CASES}


def _key(seed, typed=True):
  return random.key(seed) if typed else random.PRNGKey(seed)


def _run(name, jit=False):
  _, seed, typed, x64, call = CASE[name]
  with ember.enable_x64(x64):
    if jit:   # the key is an argument, so the draws are computed by the compiled code
      return ember.jit(lambda k: call(random, jnp, k))(_key(seed, typed))
    return call(random, jnp, _key(seed, typed))


# float32 draws are XLA:CPU's bits: the samplers repeat XLA's log / exp / pow /
# rsqrt formulas and its fused multiply-adds. These cases stay a few ulps off:
_INEXACT = {
    # XLA's kernel for a (40, 5) output vectorizes across rows (5 interleaved lanes) and
    # LLVM then drops the fused multiply-adds of log / log1p in some columns only; which
    # ones depends on LLVM's SLP vectorizer (the same happens to random.normal). Outputs
    # with a long last axis, as in loggamma_vec, keep them and are exact.
    "loggamma_rows",
    # method='approximate': the fused kernel adds the 4 boost terms in an order (or with a
    # contraction) not pinned down yet; the chi-square series itself is exact
    "gamma_approx", "loggamma_approx", "beta_approx", "chisquare_approx",
    # LAPACK-based factorizations: ember's NumPy/LAPACK calls differ from XLA's in the
    # last bits, amplified by the matrix products
    "mvn_cholesky", "mvn_eigh", "mvn_svd", "mvn_batch",
    "orthogonal", "orthogonal_wide", "orthogonal_tall", "orthogonal_f64",
}
# ... and float16 / bfloat16 (XLA:CPU computes them with the CPU's native half-precision
# arithmetic, not emulated) and float64 (XLA's float64 log / pow / exp are not emulated):
# differences of a few ulps; a flipped accept/reject decision would differ at O(1).
_TOL = {"float16": (4e-3, 2e-3), "bfloat16": (2e-2, 1e-2), "float32": (1e-5, 2e-6),
        "float64": (1e-13, 1e-14)}


def _assert_close(got, want, dtype):
  rtol, atol = _TOL[dtype]
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  assert got.shape == want.shape
  finite = np.isfinite(want)
  np.testing.assert_array_equal(np.isfinite(got), finite)
  np.testing.assert_array_equal(got[~finite], want[~finite])   # nan / inf positions
  if finite.any():
    scale = np.max(np.abs(want[finite]))
    err = np.abs(got[finite] - want[finite])
    bound = rtol * np.abs(want[finite]) + atol * scale
    assert np.all(err <= bound), f"max error {np.max(err - bound) + 0:.3g} over bound"


def _assert_same_bits(got, want):
  """float32 arrays with the same bit patterns (any nan payload where both are nan)."""
  got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
  assert got.shape == want.shape
  nan = np.isnan(want)
  np.testing.assert_array_equal(np.isnan(got), nan)
  np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


def _assert_matches_jax(name, got):
  want, dtype = DATA[name], str(DATA[name + "__dtype"])
  assert str(got.dtype) == dtype and not got.weak_type
  got = np.asarray(got.astype(jnp.float32) if dtype == "bfloat16" else got)
  assert got.shape == want.shape
  if dtype.startswith(("int", "uint")) or name.startswith(("poisson", "binomial", "multinom")):
    np.testing.assert_array_equal(got, want)   # counts: exactly JAX's
  elif dtype == "float32" and name not in _INEXACT:
    _assert_same_bits(got, want)
  else:
    _assert_close(got, want, dtype)



@pytest.mark.parametrize("name", list(CASE))
def test_matches_jax(name):
  _assert_matches_jax(name, _run(name))


@pytest.mark.parametrize("name", ["gamma_vec", "loggamma_vec", "wald", "generalized_normal_p",
                                  "poisson", "multinomial", "mvn_cholesky", "orthogonal"])
def test_jit_matches_jax(name):
  _assert_matches_jax(name, _run(name, jit=True))


def test_typed_and_raw_keys_agree():
  a = jnp.array([0.5, 2.0])
  np.testing.assert_array_equal(random.gamma(random.key(7), a, (3, 2)),
                                random.gamma(random.PRNGKey(7), a, (3, 2)))
  np.testing.assert_array_equal(random.poisson(random.key(7), 5.0, (4,)),
                                random.poisson(random.PRNGKey(7), 5.0, (4,)))


# --- vmap: a batch of keys (or parameters) draws what each unbatched call draws ----------

_VMAP = {
    "gamma": lambda k: random.gamma(k, jnp.array([0.3, 4.0]), (3, 2)),
    "poisson": lambda k: random.poisson(k, jnp.array([2.0, 30.0]), (3, 2)),
    "binomial": lambda k: random.binomial(k, jnp.array([5.0, 100.0]), 0.4, (3, 2)),
    "multinomial": lambda k: random.multinomial(k, 10.0, jnp.array([0.2, 0.8]), shape=(2,)),
    "mvn": lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2) * 2.0, (3,)),
    "orthogonal": lambda k: random.orthogonal(k, 3),
    "loggamma": lambda k: random.loggamma(k, jnp.array([0.01, 3.0]), (3, 2)),
    "wald": lambda k: random.wald(k, jnp.array([0.5, 2.0]), (3, 2)),
    "generalized_normal": lambda k: random.generalized_normal(k, 1.5, (4,)),
}


@pytest.mark.parametrize("name", list(_VMAP))
def test_vmap_over_keys(name):
  fn = _VMAP[name]
  keys = random.split(random.key(11), 3)
  batched = ember.vmap(fn)(keys)
  for i in range(3):
    np.testing.assert_array_equal(batched[i], fn(keys[i]))


def test_vmap_over_gamma_parameter_and_jit_of_vmap():
  k = random.key(12)
  a = jnp.array([0.2, 1.0, 6.0])
  fn = lambda a: random.gamma(k, a, (2,))
  batched = ember.vmap(fn)(a)
  for i in range(3):
    np.testing.assert_array_equal(batched[i], fn(a[i]))
  # the compiled draws are the same bits
  _assert_same_bits(ember.jit(ember.vmap(fn))(a), batched)


# --- XLA:CPU's float32 pow and rsqrt (xla_math.pow._xla_pow_f32 / gamma._xla_rsqrt_f32) ---

def _ulps(got, want):
  got, want = np.asarray(got, np.float32), np.asarray(want, np.float64).astype(np.float32)
  return np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))


@pytest.mark.parametrize("jit", [False, True])
def test_xla_pow_f32(jit):
  from ember._src.library.random.xla_math.pow import _xla_pow_f32
  f = ember.jit(_xla_pow_f32) if jit else _xla_pow_f32
  # special cases (glibc powf's IEEE semantics): exact
  xs = np.array([0, -0., 1, -1, 2, -2, 0.5, np.inf, -np.inf, np.nan, 1e-40], np.float32)
  ys = np.array([0, 1, -1, 2, 3, -3, 0.5, np.inf, -np.inf, np.nan, 200, -200], np.float32)
  x, y = (v.ravel() for v in np.meshgrid(xs, ys))
  with np.errstate(all="ignore"):
    want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
  want[np.abs(want) < np.finfo(np.float32).tiny] *= 0   # XLA flushes subnormals to zero
  got = np.asarray(f(x, y))
  _assert_same_bits(np.where(x == 1e-40, want, got), want)   # subnormal x: normalized
  # elsewhere within an ulp of the float64 power (glibc: < 0.82 ulp)
  rng = np.random.RandomState(0)
  x = np.exp(rng.uniform(-30, 30, 2000)).astype(np.float32)
  y = rng.uniform(-3, 3, 2000).astype(np.float32)
  assert np.max(_ulps(f(x, y), np.power(x.astype(np.float64), y.astype(np.float64)))) <= 1


def test_xla_rsqrt_f32():
  from ember._src.library.random.gamma import _xla_rsqrt_f32
  x = np.exp(np.random.RandomState(1).uniform(-80, 80, 4000)).astype(np.float32)
  for f in (_xla_rsqrt_f32, ember.jit(_xla_rsqrt_f32)):
    assert np.max(_ulps(f(x), 1 / np.sqrt(x.astype(np.float64)))) <= 1
    np.testing.assert_array_equal(f(np.float32([np.inf, np.nan])), [0, np.nan])


# --- distributions ----------------------------------------------------------------------

N = 8000


def _ks(samples, cdf):
  """The Kolmogorov-Smirnov statistic sup |F_n - F|."""
  x = np.sort(np.asarray(samples, np.float64).ravel())
  n, F = len(x), cdf(x)
  return max(np.max(np.arange(1, n + 1) / n - F), np.max(F - np.arange(n) / n))


def _assert_ks(samples, cdf):
  # 1.95 / sqrt(n) is the Kolmogorov distribution's 0.1% critical value
  assert _ks(samples, cdf) < 1.95 / math.sqrt(np.size(samples))


_erf = np.vectorize(math.erf)
_ndtr = lambda x: 0.5 * (1 + _erf(x / math.sqrt(2)))


def _erlang_cdf(a):   # Gamma(a) for integer a
  return lambda x: 1 - np.exp(-x) * sum(x ** j / math.factorial(j) for j in range(a))


def _wald_cdf(mu):    # inverse Gaussian with mean mu and shape 1
  def cdf(x):
    s = np.sqrt(1 / x)
    return _ndtr(s * (x / mu - 1)) + np.exp(2 / mu) * _ndtr(-s * (x / mu + 1))
  return cdf


_KS = {
    "gamma_1": (lambda k: random.gamma(k, 1.0, (N,)), lambda x: 1 - np.exp(-x)),
    "gamma_3": (lambda k: random.gamma(k, 3.0, (N,)), _erlang_cdf(3)),
    "gamma_half": (lambda k: random.gamma(k, 0.5, (N,)), lambda x: _erf(np.sqrt(x))),
    "gamma_approx_3": (lambda k: random.gamma(k, 3.0, (N,), method="approximate"),
                       _erlang_cdf(3)),
    "beta_1_3": (lambda k: random.beta(k, 1.0, 3.0, (N,)), lambda x: 1 - (1 - x) ** 3),
    "beta_arcsine": (lambda k: random.beta(k, 0.5, 0.5, (N,)),
                     lambda x: 2 / np.pi * np.arcsin(np.sqrt(x))),
    "dirichlet_marginal": (lambda k: random.dirichlet(k, jnp.array([1.0, 2.0, 3.0]), (N,))[:, 0],
                           lambda x: 1 - (1 - x) ** 5),   # Beta(1, 5)
    "chisquare_2": (lambda k: random.chisquare(k, 2.0, (N,)), lambda x: 1 - np.exp(-x / 2)),
    "t_1": (lambda k: random.t(k, 1.0, (N,)), lambda x: 0.5 + np.arctan(x) / np.pi),
    "t_2": (lambda k: random.t(k, 2.0, (N,)), lambda x: 0.5 + x / (2 * np.sqrt(2 + x * x))),
    "f_2_2": (lambda k: random.f(k, 2.0, 2.0, (N,)), lambda x: x / (1 + x)),
    "wald": (lambda k: random.wald(k, 1.5, (N,)), _wald_cdf(1.5)),
    "generalized_normal_1": (lambda k: random.generalized_normal(k, 1.0, (N,)),   # Laplace
                             lambda x: np.where(x < 0, 0.5 * np.exp(x), 1 - 0.5 * np.exp(-x))),
    "generalized_normal_2": (lambda k: random.generalized_normal(k, 2.0, (N,)),   # N(0, 1/2)
                             lambda x: _ndtr(x * math.sqrt(2))),
    "ball_radius": (lambda k: jnp.linalg.norm(random.ball(k, 2, 2, (N,)), axis=-1),
                    lambda r: r ** 2),
    "ball_l1_radius": (lambda k: jnp.sum(jnp.abs(random.ball(k, 3, 1, (N,))), -1),
                       lambda r: r ** 3),
}


@pytest.mark.parametrize("name", list(_KS))
def test_ks(name):
  sample, cdf = _KS[name]
  _assert_ks(sample(random.key(100)), cdf)


def _digamma(x):   # recurrence to x + 10, then the asymptotic series
  s = sum(1.0 / (x + j) for j in range(10))
  z = x + 10
  return math.log(z) - 1 / (2 * z) - 1 / (12 * z ** 2) + 1 / (120 * z ** 4) - s


def _trigamma(x):
  s = sum(1.0 / (x + j) ** 2 for j in range(10))
  z = x + 10
  return 1 / z + 1 / (2 * z ** 2) + 1 / (6 * z ** 3) - 1 / (30 * z ** 5) + s


@pytest.mark.parametrize("a", [0.05, 0.7, 25.0])
def test_gamma_moments(a):
  x = np.asarray(random.gamma(random.key(101), a, (N,)), np.float64)
  assert np.all(x >= 0)
  se = math.sqrt(a / N)   # standard error of the mean; variance a
  assert abs(x.mean() - a) < 5 * se
  assert abs(x.var() / a - 1) < 0.1


def test_loggamma_small_a_moments():
  # log Gamma(a) has mean digamma(a) and variance trigamma(a); at a = 0.01 gamma itself
  # underflows float32 in a large fraction of draws, its log does not
  a = 0.01
  x = np.asarray(random.loggamma(random.key(102), a, (N,)), np.float64)
  assert np.all(np.isfinite(x))
  assert abs(x.mean() - _digamma(a)) < 5 * math.sqrt(_trigamma(a) / N)
  assert abs(x.var() / _trigamma(a) - 1) < 0.1
  g = np.asarray(random.gamma(random.key(102), a, (N,)))
  assert np.mean(g == 0) > 0.2   # the underflow loggamma avoids


def _pmf_check(samples, pmf):
  """Each value's frequency against its probability, within 5 standard errors."""
  samples = np.asarray(samples).ravel()
  n = samples.size
  for k, p in pmf.items():
    if p > 1e-3:
      assert abs(np.mean(samples == k) - p) < 5 * math.sqrt(p * (1 - p) / n) + 1e-4, k


def _poisson_pmf(lam):
  return {k: math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1)) for k in range(200)}


def _binomial_pmf(n, p):
  return {k: math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)}


@pytest.mark.parametrize("lam", [3.0, 30.0])   # Knuth's method, transformed rejection
@pytest.mark.parametrize("method", ["exact", "approximate"])
def test_poisson_frequencies(lam, method):
  x = np.asarray(random.poisson(random.key(103), lam, (N,), method=method))
  assert x.dtype == np.int32
  _pmf_check(x, _poisson_pmf(lam))
  assert abs(x.mean() - lam) < 5 * math.sqrt(lam / N)


@pytest.mark.parametrize("n,p", [(20, 0.3), (100, 0.7)])   # inversion, BTRS (of 1 - p)
def test_binomial_frequencies(n, p):
  x = np.asarray(random.binomial(random.key(104), float(n), p, (N,)))
  assert x.dtype == np.float32 and np.all(x == np.round(x))
  _pmf_check(x, _binomial_pmf(n, p))


def test_multinomial_counts():
  p = np.array([0.2, 0.3, 0.5])
  x = np.asarray(random.multinomial(random.key(105), 50.0, jnp.array(p, jnp.float32),
                                    shape=(N // 4,)))
  assert x.shape == (N // 4, 3) and np.all(x.sum(-1) == 50) and np.all(x >= 0)
  se = np.sqrt(50 * p * (1 - p) / x.shape[0])
  assert np.all(np.abs(x.mean(0) - 50 * p) < 5 * se)
  np.testing.assert_allclose(x.var(0), 50 * p * (1 - p), rtol=0.1)
  _pmf_check(x[:, 0], _binomial_pmf(50, 0.2))


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_moments(method):
  mean = np.array([1.0, -2.0, 0.5])
  cov = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])
  x = np.asarray(random.multivariate_normal(random.key(106), jnp.array(mean, jnp.float32),
                                            jnp.array(cov, jnp.float32), (N,), method=method),
                 np.float64)
  assert x.shape == (N, 3)
  np.testing.assert_allclose(x.mean(0), mean, atol=5 * math.sqrt(2.0 / N))
  np.testing.assert_allclose(np.cov(x.T), cov, atol=0.06)


def test_orthogonal_is_orthogonal_and_haar():
  q = np.asarray(random.orthogonal(random.key(107), 3, (2000,)), np.float64)
  np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(np.eye(3), q.shape),
                             atol=2e-6)
  # Haar: every entry has mean 0 and variance 1/n; det is +-1 with equal odds
  np.testing.assert_allclose(q.mean(0), 0, atol=5 * math.sqrt(1 / 3 / 2000))
  np.testing.assert_allclose((q ** 2).mean(0), 1 / 3, atol=0.03)
  assert abs(np.mean(np.linalg.det(q) > 0) - 0.5) < 0.05
  w = np.asarray(random.orthogonal(random.key(108), 2, (5,), m=4), np.float64)
  assert w.shape == (5, 2, 4)
  np.testing.assert_allclose(w @ w.transpose(0, 2, 1), np.broadcast_to(np.eye(2), (5, 2, 2)),
                             atol=2e-6)


# --- d sample / d a: implicit reparameterization ---------------------------------------

def test_gamma_grad_matches_jax():
  lax = types.SimpleNamespace(random_gamma_grad=random_gamma_grad)
  got = grad_cases(random, lax, ember.grad, random.key(50))
  for name, v in got.items():
    # the derivative involves lgamma / digamma / log and a series or continued fraction
    np.testing.assert_allclose(np.asarray(v), DATA[name], rtol=1e-5, err_msg=name)


def _igamma(a, x):
  """P(a, x) in float64: power series below a + 1, Lentz's continued fraction above."""
  lead = math.exp(a * math.log(x) - x - math.lgamma(a))
  if x < a + 1:
    term = total = 1.0 / a
    for n in range(1, 1000):
      term *= x / (a + n)
      total += term
    return total * lead
  b, c, d = x + 1 - a, 1e300, 1 / (x + 1 - a)
  h = d
  for i in range(1, 1000):
    an = -i * (i - a)
    b += 2
    d = 1 / (an * d + b)
    c = b + an / c
    h *= d * c
  return 1 - lead * h


def test_random_gamma_grad_against_cdf_finite_differences():
  # x(a) solves P(a, x) = u, so dx/da = -(dP/da) / (dP/dx), dP/dx the gamma density
  a = np.array([0.1, 0.5, 1.0, 2.0, 7.5, 30.0, 3.0])
  x = np.array([0.02, 0.3, 1.7, 0.9, 9.0, 27.0, 12.0])
  want = []
  for ai, xi in zip(a, x):
    h = 1e-5 * ai
    dpda = (_igamma(ai + h, xi) - _igamma(ai - h, xi)) / (2 * h)
    dpdx = math.exp((ai - 1) * math.log(xi) - xi - math.lgamma(ai))
    want.append(-dpda / dpdx)
  got = random_gamma_grad(jnp.array(a, jnp.float32), jnp.array(x, jnp.float32))
  # float32 evaluation of a float64 reference (finite differences good to ~1e-8)
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-4)
  with ember.enable_x64(True):
    got64 = random_gamma_grad(jnp.array(a), jnp.array(x))
  np.testing.assert_allclose(np.asarray(got64), want, rtol=1e-6)


def test_gamma_grad_is_the_reparameterization_gradient():
  # E[x] = a for x ~ Gamma(a), so d/da of the sample mean is 1 on average
  a = jnp.full((1000,), 2.5)
  g = np.asarray(ember.grad(lambda a: random.gamma(random.key(109), a).sum())(a))
  assert abs(g.mean() - 1) < 0.1 and np.all(g > 0)   # the std of g is about 0.6
  g = ember.jit(ember.grad(lambda a: random.gamma(random.key(109), a, (3,)).sum()))(2.5)
  gs = ember.grad(lambda a: random.gamma(random.key(109), a, (3,)).sum())(2.5)
  _assert_close(g, gs, "float32")


# --- errors -----------------------------------------------------------------------------

_ERRORS = [
    (lambda k: random.gamma(1.0, 2.0), TypeError, "PRNG key"),
    (lambda k: random.gamma(random.split(k), 2.0), ValueError, "single key"),
    (lambda k: random.gamma(k, jnp.ones(3), (2,)), ValueError, "Incompatible shapes"),
    (lambda k: random.beta(k, jnp.ones(3), 1.0, (2, 2)), ValueError, "broadcast"),
    (lambda k: random.gamma(k, 1.0, (2.5,)), TypeError, "integer"),
    (lambda k: random.gamma(k, 1.0, (2,), jnp.int32), ValueError, "must be a float dtype"),
    (lambda k: random.gamma(k, 1.0, method="fast"), ValueError, "'exact', 'approximate'"),
    (lambda k: random.poisson(k, 1.0, (2,), jnp.float32), ValueError, "integer dtype"),
    (lambda k: random.poisson(k, jnp.ones(3), (2,), method="approximate"), ValueError,
     "Incompatible shapes"),
    (lambda k: random.binomial(k, 5.0, 0.5, dtype=jnp.int32), ValueError, "float dtype"),
    (lambda k: random.binomial(k, [5.0], 0.5), TypeError, "ndarray or scalar"),
    (lambda k: random.multinomial(k, 5, [0.5, 0.5]), TypeError, "ndarray or scalar"),
    (lambda k: random.beta(k, jnp.float32(2.0), 1.0, dtype=jnp.float16), ValueError,
     "cannot safely cast argument of type float32 to float16"),
    (lambda k: random.dirichlet(k, 1.0), ValueError, "alpha.ndim >= 1"),
    (lambda k: random.multivariate_normal(k, jnp.zeros(3), jnp.eye(2)), ValueError,
     r"cov.shape == \(..., n, n\) for n=3, but got cov.shape == \(2, 2\)"),
    (lambda k: random.multivariate_normal(k, 0.0, jnp.eye(2)), ValueError, "mean.ndim >= 1"),
    (lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.ones(2)), ValueError,
     "cov.ndim >= 2"),
    (lambda k: random.multivariate_normal(k, jnp.zeros(2), jnp.eye(2), method="qr"),
     ValueError, "method must be one of"),
    (lambda k: random.multivariate_normal(k, jnp.zeros((3, 2)), jnp.eye(2), shape=(4,)),
     ValueError, "Incompatible shapes"),
    (lambda k: random.ball(k, 2, [2.0]), TypeError, "ndarray or scalar"),
    (lambda k: ember.jit(lambda n: random.orthogonal(k, n))(3),
     ember.errors.ConcretizationTypeError, "orthogonal"),
    (lambda k: ember.jit(lambda d: random.ball(k, d))(3), ember.errors.ConcretizationTypeError,
     "ball"),
]


@pytest.mark.parametrize("i", range(len(_ERRORS)))
def test_errors(i):
  call, cls, match = _ERRORS[i]
  with pytest.raises(cls, match=match):
    call(random.key(0))


def test_negative_shape_error():
  # JAX raises TypeError here; ember's shared shape canonicalization raises ValueError
  with pytest.raises((TypeError, ValueError), match="negative"):
    random.gamma(random.key(0), 1.0, (-1,))

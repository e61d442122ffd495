"""ember.scipy.stats distributions beyond norm against scipy.stats in float64, eager and
under ember.jit; loc/scale/shape broadcasting, out-of-support inputs, gradients (finite
differences), vmap, and dtypes/weak types as JAX 0.12.1 gives them."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.scipy.stats as stats

sps = pytest.importorskip("scipy.stats")   # (the oldest-dependencies venv has no SciPy)

# module -> (shape parameters of the float32 broadcasting test, of the float64 test, functions)
CONTINUOUS = {
    "t": ((np.float32(2.5),), (7.0,), ["logpdf", "pdf"]),
    "expon": ((), (), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "laplace": ((), (), ["logpdf", "pdf", "cdf"]),
    "logistic": ((), (), ["logpdf", "pdf", "cdf", "sf"]),
    "cauchy": ((), (), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "uniform": ((), (), ["logpdf", "pdf", "cdf"]),
    "gamma": ((np.float32(2.5),), (0.7,), ["logpdf", "pdf"]),
    "chi2": ((np.float32(3.),), (5.,), ["logpdf", "pdf"]),
    "beta": ((np.float32(2.), np.float32(3.)), (0.5, 1.5), ["logpdf", "pdf"]),
    "pareto": ((np.float32(2.5),), (1.5,), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "gumbel_r": ((), (), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "gumbel_l": ((), (), ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
    "truncnorm": ((np.float32(-1.), np.float32(2.)), (-2., 1.5),
                  ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]),
}
QUANTILES = {  # module -> functions of q
    "expon": ["ppf"], "logistic": ["ppf", "isf"], "cauchy": ["ppf", "isf"], "uniform": ["ppf"],
    "pareto": ["ppf"], "gumbel_r": ["ppf"], "gumbel_l": ["ppf"],
}
CASES = [(m, f) for m, (_, _, fs) in CONTINUOUS.items() for f in fs]
Q_CASES = [(m, f) for m, fs in QUANTILES.items() for f in fs]

X = np.array([-9., -3., -1.5, -0.3, 0., 0.3, 1., 4., 5.5], np.float32)
XB = X[:, None]                                         # (9, 1)
LOC = np.array([0., 1., -2.], np.float32)               # (3,)
SCALE = np.array([[0.5], [3.]], np.float32)[:, :, None]  # (2, 1, 1): broadcasts to (2, 9, 3)
Q = np.array([0., 1e-6, 0.01, 0.2, 0.3, 0.5, 0.7, 0.9, 0.999, 1.], np.float32)

# float32: each op rounds to ~6e-8 relative; z = (x - loc) / scale takes two roundings and the
# log-densities are sums of terms up to ~30 in size (z^2 / 2-like terms, |z| up to 22 here),
# so the absolute error of a log-quantity is a few ulps of 30 (~2e-6 each), which exp turns
# into the same relative error: rtol 2e-5 with atol 1e-5 covers that with margin. The scipy
# reference is evaluated at the float32 inputs themselves, so input rounding is not counted.
RTOL32, ATOL32 = 2e-5, 1e-5
# float64: the same argument with ulp 1.1e-16 (cauchy's cdf = 1/2 + arctan(z)/pi cancels in
# the lower tail, ~1e-14 relative at z = -30, as in JAX and scipy)
RTOL64, ATOL64 = 1e-12, 1e-13


def both(f, *args):
  return [f(*args), ember.jit(f)(*args)]


def check(out, expected, dtype="float32", rtol=RTOL32, atol=ATOL32):
  assert out.dtype == np.dtype(dtype), out.dtype
  assert out.shape == np.shape(expected), (out.shape, np.shape(expected))
  got = np.asarray(out, np.float64)
  ok = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
  assert ok.all(), (got[~ok], np.broadcast_to(expected, got.shape)[~ok])


def ref(module, name, *args):
  """scipy.stats' float64 value (its argument order is ember's: x, shapes, loc, scale)."""
  with np.errstate(all="ignore"):
    return getattr(getattr(sps, module), name)(*(np.asarray(a, np.float64) for a in args))


@pytest.mark.parametrize("module,name", CASES, ids=[f"{m}.{f}" for m, f in CASES])
def test_values_and_broadcasting(module, name):
  f = getattr(getattr(stats, module), name)
  shapes32, shapes64, _ = CONTINUOUS[module]
  for out in both(f, X, *shapes32):
    check(out, ref(module, name, X, *shapes32))
  for out in both(f, XB, *shapes32, LOC, SCALE):
    check(out, ref(module, name, XB, *shapes32, LOC, SCALE))
  with ember.enable_x64():
    x = np.linspace(-30, 8, 13)
    for out in both(f, x, *shapes64, 0.5, 2.0):
      check(out, ref(module, name, x, *shapes64, 0.5, 2.0), "float64", RTOL64, ATOL64)


def quantile_ref(module, name, q, *args):
  """scipy's quantile, except that JAX 0.12.1's gumbel_r/gumbel_l.ppf give NaN at q = 0 and 1
  (scipy: -+inf)."""
  out = ref(module, name, q, *args)
  if module.startswith("gumbel"):
    out = np.where((np.asarray(q) == 0) | (np.asarray(q) == 1), np.nan, out)
  return out


@pytest.mark.parametrize("module,name", Q_CASES, ids=[f"{m}.{f}" for m, f in Q_CASES])
def test_quantiles(module, name):
  f = getattr(getattr(stats, module), name)
  # the quantile's condition number in q is q f'/f ~ 1/(1-q) near 1 (log1p(-q), logit), so the
  # float32 rounding error of q = 0.999 gives ~6e-5 relative: rtol 1e-4 there
  rtol = np.where(Q > 0.99, 1e-4, RTOL32)
  shapes32, shapes64, _ = CONTINUOUS[module]
  for out in both(f, Q, *shapes32):
    check(out, quantile_ref(module, name, Q, *shapes32), rtol=rtol)
  for out in both(f, Q[:, None], *shapes32, LOC, np.float32(2.)):
    check(out, quantile_ref(module, name, Q[:, None], *shapes32, LOC, 2.), rtol=rtol[:, None])
  with ember.enable_x64():
    q = np.array([0., 1e-300, 1e-20, 0.1, 0.3, 0.5, 0.7, 0.999, 1 - 1e-15, 1.])
    for out in both(f, q, *shapes64, 0.5, 2.0):
      # near q = 1, 1 - q carries q's rounding (the relative error of 1 - 1e-15 is 1e-1):
      # scipy and ember see the same float64 q, so only rounding inside the formula counts
      check(out, quantile_ref(module, name, q, *shapes64, 0.5, 2.0), "float64", RTOL64, ATOL64)


def test_quantiles_outside_zero_one_are_nan():
  bad = np.array([-0.1, 1.1, np.nan], np.float32)
  for module, name in Q_CASES:
    if module == "logistic":  # JAX's logistic.ppf is logit(q) * scale + loc: NaN by logit
      continue
    out = getattr(getattr(stats, module), name)(bad, *CONTINUOUS[module][0])
    assert np.isnan(np.asarray(out)).all(), (module, name, out)
  assert np.isnan(np.asarray(stats.logistic.ppf(bad))).all()


def test_cauchy_ppf_is_relative_accurate_near_the_median():
  # tan(pi (q - 1/2)) with q - 1/2 exact: JAX's tanpi keeps this; tan(pi * q') with
  # q' ~ 1/2 would lose ~4 digits at q = 0.4999
  q = np.array([0.4999, 0.49999, 0.5001, 0.25, 0.75, 0.2499], np.float32)
  check(stats.cauchy.ppf(q), ref("cauchy", "ppf", q), rtol=2e-6, atol=0)


def test_support_edges():
  inf = np.inf
  below = np.array([-1., -1e-30, -inf], np.float32)
  check(stats.expon.logpdf(below), [-inf] * 3)
  check(stats.expon.pdf(below), [0.] * 3)
  check(stats.expon.cdf(below), [0.] * 3)
  check(stats.expon.logcdf(below), [-inf] * 3)
  check(stats.expon.sf(below), [1.] * 3)
  check(stats.expon.logsf(below), [0.] * 3)
  check(stats.expon.logcdf(np.float32([0., 1e-30, 30., inf])),
        [-inf, np.log(1e-30), -np.exp(-30.), 0.], rtol=1e-6, atol=0)
  check(stats.expon.ppf(np.float32([0., 1.])), [0., inf])
  # uniform: both ends belong to the support; NaN stays NaN; scale 0 leaves x = loc only
  x = np.array([-0.5, 0., 1., 1.5, np.nan], np.float32)
  check(stats.uniform.logpdf(x), [-inf, 0., 0., -inf, np.nan])
  check(stats.uniform.pdf(x), [0., 1., 1., 0., np.nan])
  check(stats.uniform.cdf(x), [0., 0., 1., 1., np.nan])
  check(stats.uniform.logpdf(np.float32([0.5, 1.]), 0., 0.), [-inf, -inf])
  # the infinite ends of the others
  ends = np.array([-inf, inf], np.float32)
  check(stats.laplace.cdf(ends), [0., 1.])
  check(stats.logistic.cdf(ends), [0., 1.])
  check(stats.cauchy.cdf(ends), [0., 1.])
  check(stats.cauchy.logsf(ends), [0., -inf])
  check(stats.t.logpdf(ends, 3.), [-inf, -inf])
  for module in ("logistic", "cauchy"):
    m = getattr(stats, module)
    check(m.ppf(np.float32([0., 1.])), [-inf, inf])
    check(m.isf(np.float32([0., 1.])), [inf, -inf])


def test_t_tends_to_the_normal():
  with ember.enable_x64():
    x = np.linspace(-4, 4, 9)
    check(stats.t.logpdf(x, 1e8), sps.norm.logpdf(x), "float64", rtol=1e-7, atol=1e-7)


def _fd(f, x, h=1e-6):
  return (f(x + h) - f(x - h)) / (2 * h)


# (x, *shapes, loc, scale) inside the support; (x, loc, scale) = (0.7, 0.2, 1.5) for the rest
GRAD_POINTS = {"t": (0.7, 3.5, 0.2, 1.5), "gamma": (0.7, 2.5, 0.2, 1.5),
               "chi2": (0.7, 3., 0.2, 1.5), "beta": (0.7, 2., 3., 0.2, 1.5),
               "pareto": (2.7, 2.5, 0.2, 1.5), "truncnorm": (0.7, -1., 2., 0.2, 1.5)}
GRAD_CASES = CASES + Q_CASES


@pytest.mark.parametrize("module,name", GRAD_CASES, ids=[f"{m}.{f}" for m, f in GRAD_CASES])
def test_gradients(module, name):
  f = getattr(getattr(stats, module), name)
  args = GRAD_POINTS.get(module, (0.7, 0.2, 1.5))
  if name in ("ppf", "isf"):
    args = (0.3,) + args[1:]
  with ember.enable_x64():
    argnums = tuple(range(len(args)))
    for g in (ember.grad(f, argnums), ember.jit(ember.grad(f, argnums))):
      grads = g(*(np.float64(a) for a in args))
      for i in argnums:
        def along(v):
          a = list(args)
          a[i] = v
          return float(f(*a))
        np.testing.assert_allclose(float(grads[i]), _fd(along, args[i]), rtol=1e-6, atol=1e-9)


def test_gradients_stay_finite_in_the_tails():
  # JAX 0.12: laplace.cdf forms exp(-|z|) only, expon.logcdf's log1mexp has the custom
  # derivative 1/expm1(z) (inf at z = 0, 0 below loc)
  x = np.array([-100., -1., 0.5, 100.], np.float32)
  g = ember.vmap(ember.grad(stats.laplace.cdf))(x)
  # exp(-100) / 2 is a float32 subnormal, flushed to 0 as XLA's CPU backend does: atol 1e-37
  check(g, 0.5 * np.exp(-np.abs(x.astype(np.float64))), rtol=1e-6, atol=1e-37)
  g = ember.vmap(ember.grad(stats.expon.logcdf))(np.float32([-1., 0., 1., 50.]))
  check(g, [0., np.inf, 1 / np.expm1(1.), 1 / np.expm1(50.)], rtol=1e-6, atol=0)
  g = ember.vmap(ember.grad(stats.logistic.logpdf))(np.float32([-200., 0., 200.]))
  check(g, [1., 0., -1.], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("module,name", CASES, ids=[f"{m}.{f}" for m, f in CASES])
def test_vmap(module, name):
  f = getattr(getattr(stats, module), name)
  shapes32 = CONTINUOUS[module][0]
  # x and loc mapped together, scale broadcast
  out = ember.vmap(lambda x, loc: f(x, *shapes32, loc, np.float32(2.)))(X, X[::-1])
  check(out, ref(module, name, X, *shapes32, X[::-1], 2.))


# JAX 0.12.1's (dtype, weak_type) for a Python float, a float16, an int32 array and a bfloat16
_JAX_DTYPES = [("float32", True), ("float16", False), ("float32", False), ("bfloat16", False)]


@pytest.mark.parametrize("module,name", CASES + Q_CASES,
                         ids=[f"{m}.{f}" for m, f in CASES + Q_CASES])
def test_dtypes_and_weak_types(module, name):
  f = getattr(getattr(stats, module), name)
  shapes = tuple(float(a) for a in CONTINUOUS.get(module, ((),))[0])
  want = list(_JAX_DTYPES)
  if module in ("t", "beta"):
    # JAX's betaln returns a strong float32 for weak inputs (ember's keeps the weak type),
    # so JAX's t.logpdf(0.3, 2.5) is strong; ember follows its own betaln here
    want[0] = ("float32", True)
  if module == "truncnorm":
    # JAX 0.12.1 (and ember): ndtr/log_ndtr reject float16 and bfloat16, and ndtr makes a weak
    # input strong, so a Python float gives a strong float32
    want[0] = ("float32", False)
    want[1] = want[3] = "TypeError"
  got = []
  for x in (0.3, np.float16(0.3), np.array([0, 1]), jnp.bfloat16(0.3)):
    try:
      out = f(x, *shapes)
      got.append((str(out.dtype), bool(out.weak_type)))
    except TypeError as e:
      assert "is not supported" in str(e)
      got.append("TypeError")
  assert got == want
  with ember.enable_x64():
    assert f(np.array([0, 1]), *shapes).dtype == np.float64
    assert f(np.float32(0.3), *shapes).dtype == np.float32


def test_errors_and_namespaces():
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    stats.cauchy.cdf(np.ones(2), np.ones(3))
  with pytest.raises(TypeError):
    stats.t.logpdf(0.3)  # df is required, as in JAX
  import ember.scipy.stats.t as t_module
  assert stats.t is t_module
  for module, (_, _, names) in CONTINUOUS.items():
    m = getattr(stats, module)
    extra = ["cdf", "logcdf", "sf", "logsf"] if module in ("gamma", "chi2", "beta") else []
    assert sorted(m.__all__) == sorted(names + QUANTILES.get(module, []) + extra), module


# ---- discrete distributions: module -> (float32 parameters, broadcasting parameters, float64
# parameters, functions); k is an integer grid with a non-integer and out-of-support points
DISCRETE = {
    "poisson": ((np.float32(3.5),), (np.array([[0.5], [4.]], np.float32),), (11.,),
                ["logpmf", "pmf"]),
    "binom": ((np.float32(8.), np.float32(0.3)),
              (np.float32(8.), np.array([[0.1], [0.5], [0.9]], np.float32)), (20., 0.7),
              ["logpmf", "pmf"]),
    "bernoulli": ((np.float32(0.3),), (np.array([[0.2], [0.7]], np.float32),), (0.6,),
                  ["logpmf", "pmf"]),
    "geom": ((np.float32(0.3),), (np.array([[0.2], [0.7]], np.float32),), (0.05,),
             ["logpmf", "pmf"]),
    "nbinom": ((np.float32(3.5), np.float32(0.3)),
               (np.float32(3.5), np.array([[0.1], [0.5], [0.9]], np.float32)), (20., 0.7),
               ["logpmf", "pmf"]),
    "betabinom": ((np.float32(10.), np.float32(2.), np.float32(3.)),
                  (np.float32(10.), np.array([[0.5], [4.]], np.float32), np.float32(3.)),
                  (30., 0.7, 4.), ["logpmf", "pmf"]),
}
D_CASES = [(m, f) for m, (_, _, _, fs) in DISCRETE.items() for f in fs]
K = np.array([-2., -1., 0., 1., 2., 2.5, 3., 5., 8., 9., 12.], np.float32)
KLOC = np.array([0., 1., -1.], np.float32)


@pytest.mark.parametrize("module,name", D_CASES, ids=[f"{m}.{f}" for m, f in D_CASES])
def test_discrete_values_and_broadcasting(module, name):
  f = getattr(getattr(stats, module), name)
  params32, params_b, params64, _ = DISCRETE[module]
  # the log-pmfs are sums of lgamma/log terms below ~30: the RTOL32/ATOL32 argument above
  for out in both(f, K, *params32):
    check(out, ref(module, name, K, *params32))
  kb = K[:, None, None]   # (11, 1, 1) against (p or mu: (m, 1)) and loc (3,)
  for out in both(f, kb, *params_b, KLOC):
    check(out, ref(module, name, kb, *params_b, KLOC))
  # ember's betaln takes cdflib's algdiv path for max(a, b) >= 8, which is good to ~1e-7
  # absolute in float64 (JAX 0.12.1 rewrote betaln to ~1e-15): nbinom and betabinom with
  # large n inherit that, hence 2e-7 for them
  tol64 = 2e-7 if module in ("nbinom", "betabinom") else RTOL64
  with ember.enable_x64():
    k = np.arange(-3., 40.)
    for out in both(f, k, *params64, 2.):
      check(out, ref(module, name, k, *params64, 2.), "float64", tol64, max(tol64, ATOL64))


def test_discrete_edges_as_jax():
  # JAX 0.12.1's values (scipy agrees on all but bernoulli.ppf(0), where scipy gives -1)
  inf = np.inf
  f32 = np.float32
  check(stats.binom.logpmf(f32([0, 5, 2, 2.5, -1, 6, 0, 5]), f32([5, 5, 5, 5, 5, 5, 0, 5]),
                           f32([0, 1, 0.5, 0.5, 0.5, 0.5, 0.3, 0.])),
        [0., 0., -1.1631508, -inf, -inf, -inf, 0., -inf], atol=0, rtol=1e-6)
  check(stats.poisson.logpmf(f32([0, 0, 3, 2.5, -1]), f32([0, 1, 0, 1, 1])),
        [0., -1., -inf, -inf, -inf], atol=0, rtol=1e-6)
  check(stats.bernoulli.logpmf(f32([0, 1, 0.5, 2, -1, 0, 1]), f32([0.3] * 5 + [0, 1])),
        [np.log(0.7), np.log(0.3), -inf, -inf, -inf, 0., 0.], atol=0, rtol=1e-6)
  check(stats.geom.logpmf(f32([1, 0, 1.5, 3, 1, 2]), f32([0.3] * 4 + [1, 1])),
        [np.log(0.3), -inf, -inf, np.log(0.3 * 0.49), 0., -inf], atol=0, rtol=1e-6)
  check(stats.bernoulli.cdf(f32([-1, 0, 0.5, 1, 2, np.nan, 0]), f32([0.3] * 6 + [1.5])),
        [0., 0.7, 0.7, 1., 1., np.nan, np.nan], atol=0, rtol=1e-7)
  check(stats.bernoulli.ppf(f32([0, 0.7, 0.71, 1, -0.1, 0.5]), f32([0.3] * 5 + [np.nan])),
        [0., 0., 1., 1., np.nan, np.nan], atol=0)
  # continuous edges: the support's ends, a = 1 / b = 1 (xlogy's 0 log 0 = 0), bad parameters
  check(stats.beta.logpdf(f32([0, 1, 0, 1, -0.1, 1.1, 0.5, 0.5, 0.5]),
                          f32([1, 2, 0.5, 1, 2, 2, 0, 2, 2]), f32([2, 1, 2, 0.5, 2, 2, 1, -1, 2]),
                          0, f32([1] * 8 + [0])),
        [np.log(2), np.log(2), inf, inf, -inf, -inf, np.nan, np.nan, np.nan], atol=0, rtol=1e-6)
  check(stats.gamma.logpdf(f32([0, 0, 0, -1]), f32([1, 2, 0.5, 2])), [0., -inf, inf, -inf])
  check(stats.chi2.logpdf(f32([0, 0, 0, -1]), f32([2, 4, 1, 2])),
        [-np.log(2), -inf, inf, -inf], atol=0, rtol=1e-6)


def test_bernoulli_cdf_ppf():
  k = np.array([-1., 0., 0.5, 1., 3.], np.float32)
  p = np.array([[0.], [0.25], [1.]], np.float32)
  for out in both(stats.bernoulli.cdf, k, p):
    check(out, sps.bernoulli.cdf(k, p), atol=0, rtol=1e-7)
  q = np.array([1e-6, 0.3, 0.75, 0.76, 1.], np.float32)
  for out in both(stats.bernoulli.ppf, q, np.float32(0.25)):
    check(out, sps.bernoulli.ppf(q, 0.25), atol=0)


DISCRETE_GRADS = [  # (module, name, args (k, *params, loc), which args to differentiate)
    ("poisson", "logpmf", (3., 2.5, 0.), (1,)),
    ("poisson", "pmf", (3., 2.5, 0.), (1,)),
    ("binom", "logpmf", (3., 8., 0.3, 0.), (2,)),
    ("binom", "pmf", (3., 8., 0.3, 0.), (1, 2)),  # n enters through gammaln: smooth
    ("bernoulli", "logpmf", (1., 0.3, 0.), (1,)),
    ("bernoulli", "pmf", (0., 0.3, 0.), (1,)),
    ("bernoulli", "cdf", (0., 0.3), (1,)),
    ("geom", "logpmf", (4., 0.3, 0.), (1,)),
    ("geom", "pmf", (4., 0.3, 0.), (1,)),
    ("nbinom", "logpmf", (4., 3.5, 0.3, 0.), (1, 2)),
    ("nbinom", "pmf", (0., 3.5, 0.3, 0.), (1, 2)),
    ("betabinom", "logpmf", (4., 10., 2., 3., 0.), (1, 2, 3)),
    ("betabinom", "pmf", (4., 10., 2., 3., 0.), (2, 3)),
]


@pytest.mark.parametrize("module,name,args,argnums", DISCRETE_GRADS,
                         ids=[f"{c[0]}.{c[1]}" for c in DISCRETE_GRADS])
def test_discrete_gradients(module, name, args, argnums):
  f = getattr(getattr(stats, module), name)
  with ember.enable_x64():
    for g in (ember.grad(f, argnums), ember.jit(ember.grad(f, argnums))):
      grads = g(*(np.float64(a) for a in args))
      for i, gi in zip(argnums, grads):
        def along(v):
          a = list(args)
          a[i] = v
          return float(f(*a))
        np.testing.assert_allclose(float(gi), _fd(along, args[i]), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("module,name", D_CASES, ids=[f"{m}.{f}" for m, f in D_CASES])
def test_discrete_vmap(module, name):
  f = getattr(getattr(stats, module), name)
  params32 = DISCRETE[module][0]
  out = ember.vmap(lambda k: f(k, *params32))(K)
  check(out, ref(module, name, K, *params32))


@pytest.mark.parametrize("module,name", D_CASES + [("bernoulli", "cdf"), ("bernoulli", "ppf")],
                         ids=[f"{m}.{f}" for m, f in D_CASES] + ["bernoulli.cdf",
                                                                  "bernoulli.ppf"])
def test_discrete_dtypes(module, name):
  f = getattr(getattr(stats, module), name)
  params = tuple(float(a) for a in DISCRETE[module][0])
  got = [(str(o.dtype), bool(o.weak_type)) for o in
         (f(x, *params) for x in (0.3, np.float16(0.3), np.array([0, 1]), jnp.bfloat16(0.3)))]
  want = list(_JAX_DTYPES)
  if module in ("nbinom", "betabinom"):
    # JAX's betaln is strong for weak inputs (see test_dtypes_and_weak_types); ember's is weak
    want[0] = ("float32", True)
  if module in ("poisson", "binom"):
    # JAX 0.12.1 gives a weak float32 for an int32 k with Python-float parameters (the promoted
    # k is weak, and its lax._const keeps weak arrays weak); ember's _const keeps only weak
    # scalars weak, so gammaln(k + 1) and the result are strong here
    want[2] = ("float32", False)
  assert got == want


def test_discrete_namespaces():
  for module, (_, _, _, names) in DISCRETE.items():
    extra = {"bernoulli": ["cdf", "ppf"], "poisson": ["cdf", "entropy"]}.get(module, [])
    assert sorted(getattr(stats, module).__all__) == sorted(names + extra), module
  for module in ("gamma", "chi2", "beta"):   # their cdf/sf: test_cdfs_by_incomplete_functions
    assert sorted(getattr(stats, module).__all__) == sorted(
        ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"])


# ---- distributions without loc/scale: gennorm, vonmises; multivariate: multivariate_normal,
# dirichlet

def test_gennorm_and_vonmises_values():
  x = np.array([-3., -1., -0.2, 0., 0.5, 2., 7.], np.float32)
  beta = np.array([[0.5], [1.], [2.], [8.]], np.float32)
  # |x|^beta reaches 7^8 ~ 5.8e6 in the log-density: float32 keeps it to ~1 ulp relative
  for name in ("logpdf", "pdf"):
    for out in both(getattr(stats.gennorm, name), x, beta):
      check(out, ref("gennorm", name, x, beta), rtol=RTOL32, atol=1e-30)
  kappa = np.array([[0.], [0.5], [4.], [60.]], np.float32)
  # kappa (cos x - 1) is up to ~120 at kappa = 60: ~1e-5 absolute in the log, hence 5e-5;
  # x = 7 is off [-pi, pi]: the density is 2 pi periodic, as scipy's
  for name in ("logpdf", "pdf"):
    for out in both(getattr(stats.vonmises, name), x, kappa):
      check(out, ref("vonmises", name, x, kappa), rtol=5e-5, atol=1e-30)
  with ember.enable_x64():
    x64 = np.linspace(-3, 3, 7)
    check(stats.gennorm.logpdf(x64, 1.7), sps.gennorm.logpdf(x64, 1.7), "float64", RTOL64,
          ATOL64)
    check(stats.vonmises.logpdf(x64, 2.5), sps.vonmises.logpdf(x64, 2.5), "float64", RTOL64,
          ATOL64)
  # JAX 0.12.1: a negative kappa gives NaN; weak in, weak out
  assert np.isnan(np.asarray(stats.vonmises.logpdf(np.float32([0., 1.]), -1.))).all()
  assert stats.vonmises.logpdf(0.3, 2.).weak_type and stats.gennorm.logpdf(0.3, 2.).weak_type
  assert stats.gennorm.pdf(np.array([0, 1]), 2.).dtype == np.float32


@pytest.mark.parametrize("module,args,argnums", [
    ("gennorm", (0.7, 1.7), (0, 1)), ("vonmises", (0.7, 2.5), (0, 1))])
def test_gennorm_and_vonmises_gradients(module, args, argnums):
  f = getattr(stats, module).logpdf
  with ember.enable_x64():
    grads = ember.jit(ember.grad(f, argnums))(*(np.float64(a) for a in args))
    for i, gi in zip(argnums, grads):
      def along(v):
        a = list(args)
        a[i] = v
        return float(f(*a))
      np.testing.assert_allclose(float(gi), _fd(along, args[i]), rtol=1e-6, atol=1e-9)
  out = ember.vmap(lambda x: f(x, np.float32(2.)))(np.float32([0., 1., 2.]))
  check(out, ref(module, "logpdf", np.float32([0., 1., 2.]), 2.), rtol=5e-5)


COV = np.array([[2., 0.5, 0.1], [0.5, 1., 0.2], [0.1, 0.2, 3.]], np.float32)
MEAN = np.array([0.5, 0., 1.], np.float32)
XS = np.array([[0.3, 1., -1.], [2., -1., 0.], [0.5, 0., 1.]], np.float32)


def test_multivariate_normal_values():
  mvn = stats.multivariate_normal
  # a (3, 3) solve and log-det in float32: the quadratic form is ~2, its error a few ulps of
  # the condition number (~3.5) times that: RTOL32/ATOL32 hold
  for out in both(mvn.logpdf, XS, MEAN, COV):
    check(out, sps.multivariate_normal.logpdf(XS, MEAN, COV))
  for out in both(mvn.pdf, XS, MEAN, COV):
    check(out, sps.multivariate_normal.pdf(XS, MEAN, COV))
  # a batch of covariances broadcasts against a batch of points
  covs = np.stack([COV, 2 * COV])[:, None]   # (2, 1, 3, 3) against XS (3, 3): (2, 3)
  want = [sps.multivariate_normal.logpdf(XS, MEAN, c) for c in (COV, 2 * COV)]
  check(mvn.logpdf(XS, MEAN, covs), np.array(want))
  # a scalar mean: univariate with variance cov; a vector mean with scalar cov: cov * I
  check(mvn.logpdf(XS[0], np.float32(0.5), np.float32(2.)),
        sps.norm.logpdf(XS[0], 0.5, np.sqrt(2.)))
  check(mvn.logpdf(XS, MEAN, np.float32(2.)),
        sps.multivariate_normal.logpdf(XS, MEAN, 2 * np.eye(3)))
  with ember.enable_x64():
    x64, c64 = XS.astype(np.float64), COV.astype(np.float64)
    check(mvn.logpdf(x64, MEAN, c64), sps.multivariate_normal.logpdf(x64, MEAN, c64), "float64",
          RTOL64, ATOL64)
  # dtypes as JAX 0.12.1: ints promote to float32, Python scalars stay weak
  out = mvn.pdf(np.array([1, 2]), np.array([0, 0]), np.eye(2, dtype=np.int32))
  check(out, sps.multivariate_normal.pdf([1, 2], [0, 0], np.eye(2)))
  assert mvn.logpdf(0.3, 0., 1.).weak_type


def test_multivariate_normal_errors_grad_vmap():
  mvn = stats.multivariate_normal
  with pytest.raises(ValueError, match="incompatible shapes"):
    mvn.logpdf(np.zeros(2, np.float32), np.zeros(2, np.float32), np.eye(3, dtype=np.float32))
  with pytest.raises(NotImplementedError, match="allow_singular"):
    mvn.logpdf(XS, MEAN, COV, allow_singular=True)
  with ember.enable_x64():
    x, m = XS[0].astype(np.float64), MEAN.astype(np.float64)
    c = COV.astype(np.float64)
    gx = ember.jit(ember.grad(lambda x: mvn.logpdf(x, m, c)))(x)
    np.testing.assert_allclose(np.asarray(gx), -np.linalg.solve(c, x - m), rtol=1e-12)
    gc = ember.grad(lambda c: mvn.logpdf(x, m, c))(c)
    # d/dC = (C^-1 y y^T C^-1 - C^-1) / 2 for a symmetric C; grad takes C's lower triangle
    # through cholesky, so compare the symmetric part's action: C^-1 y y^T C^-1 - C^-1
    ci = np.linalg.inv(c)
    y = ci @ (x - m)
    want = 0.5 * (np.outer(y, y) - ci)
    np.testing.assert_allclose(np.asarray(gc + gc.T) / 2, want, rtol=1e-9, atol=1e-12)
  out = ember.vmap(lambda x: mvn.logpdf(x, MEAN, COV))(XS)
  check(out, sps.multivariate_normal.logpdf(XS, MEAN, COV))


ALPHA = np.array([1., 2., 3.5], np.float32)
ALPHA64 = ALPHA.astype(np.float64)   # scipy's gammaln of a float32 array rounds to float32


def test_dirichlet():
  x = np.array([[0.2, 0.1, 0.6], [0.3, 0.6, 0.3], [0.5, 0.3, 0.1]], np.float32)  # columns
  # scipy wants sums within 1e-9 of 1: renormalize the float32 points (a ~1e-8 change)
  x_ref = x.astype(np.float64) / x.astype(np.float64).sum(0)
  for name in ("logpdf", "pdf"):
    f = getattr(stats.dirichlet, name)
    want = getattr(sps.dirichlet, name)(x_ref, ALPHA64)  # scipy: components along axis 0
    for out in both(f, x, ALPHA):
      check(out, want)
    # the last component may be left out (1 - the sum of the others)
    check(f(x[:2], ALPHA), want)
  # off the simplex (a zero component, a sum off 1 by more than 1e-6): -inf (JAX 0.12.1)
  off = np.array([[0.2, 0.0], [0.3, 0.6], [0.6, 0.4]], np.float32)
  check(stats.dirichlet.logpdf(off, ALPHA), [-np.inf, -np.inf])
  with ember.enable_x64():
    x64 = np.array([0.25, 0.35, 0.4])
    check(stats.dirichlet.logpdf(x64, ALPHA), sps.dirichlet.logpdf(x64, ALPHA64), "float64",
          RTOL64, ATOL64)
    g = ember.grad(stats.dirichlet.logpdf, (0, 1))(x64, ALPHA.astype(np.float64))
    np.testing.assert_allclose(np.asarray(g[0]), (ALPHA - 1) / x64, rtol=1e-12)
    from scipy.special import digamma
    a = ALPHA.astype(np.float64)
    np.testing.assert_allclose(np.asarray(g[1]), np.log(x64) - digamma(a) + digamma(a.sum()),
                               rtol=1e-9)
  out = ember.vmap(lambda x: stats.dirichlet.logpdf(x, ALPHA), in_axes=1)(x)
  check(out, sps.dirichlet.logpdf(x_ref, ALPHA64))
  with pytest.raises(ValueError, match="`alpha` must be one-dimensional"):
    stats.dirichlet.logpdf(x, ALPHA[None])
  with pytest.raises(ValueError, match="one entry fewer"):
    stats.dirichlet.logpdf(np.ones(5, np.float32), ALPHA)
  assert stats.dirichlet.logpdf(np.array([0, 1, 0]), ALPHA).dtype == np.float32


def test_gumbel_scale_must_be_positive():
  # JAX 0.12.1: NaN wherever scale <= 0, for every function of x
  for module in ("gumbel_r", "gumbel_l"):
    for name in CONTINUOUS[module][2]:
      out = getattr(getattr(stats, module), name)(np.float32([0., 1.]), 0., np.float32(-1.))
      assert np.isnan(np.asarray(out)).all(), (module, name)


def test_wrapcauchy():
  # not float32(2 pi): it rounds above 2 pi, so scipy (float64) puts it outside the support
  # while the float32 comparison with 2 pi (rounded the same way) keeps it inside, as JAX's
  x = np.array([-0.1, 0., 1., 3., 6.2, 6.28, 7.], np.float32)
  c = np.array([[0.1], [0.5], [0.9]], np.float32)
  # scipy's wrapcauchy is 0 off [0, 2 pi]; c near 1 makes 1 + c^2 - 2c cos(x) cancel near
  # x = 0: ~1/(1-c)^2 = 100 times float32's rounding, hence 1e-4 relative
  for name in ("logpdf", "pdf"):
    for out in both(getattr(stats.wrapcauchy, name), x, c):
      check(out, ref("wrapcauchy", name, x, c), rtol=1e-4, atol=1e-30)
  with ember.enable_x64():
    x64 = np.linspace(0, 2 * np.pi, 9)
    check(stats.wrapcauchy.logpdf(x64, 0.4), sps.wrapcauchy.logpdf(x64, 0.4), "float64",
          RTOL64, ATOL64)
    g = ember.grad(stats.wrapcauchy.logpdf, (0, 1))(1.0, 0.4)
    for i, args in ((0, (1.0, 0.4)), (1, (1.0, 0.4))):
      def along(v):
        a = list(args)
        a[i] = v
        return float(stats.wrapcauchy.logpdf(*a))
      np.testing.assert_allclose(float(g[i]), _fd(along, args[i]), rtol=1e-6)
  # c outside (0, 1): NaN (JAX 0.12.1)
  assert np.isnan(np.asarray(stats.wrapcauchy.logpdf(np.float32([1.]), np.float32([0.])))).all()
  assert np.isnan(np.asarray(stats.wrapcauchy.logpdf(np.float32([1.]), np.float32([1.])))).all()
  assert stats.wrapcauchy.logpdf(0.3, 0.5).weak_type


def test_multinomial():
  x = np.array([[1, 2, 3], [0, 0, 6], [1, 1, 1]])
  p = np.array([0.2, 0.3, 0.5], np.float32)
  # scipy wants probabilities summing to 1 within 2e-15: renormalize (a ~1e-8 change)
  p_ref = p.astype(np.float64) / p.astype(np.float64).sum()
  for name in ("logpmf", "pmf"):
    f = getattr(stats.multinomial, name)
    for out in both(f, x, 6, p):
      # the counts that do not sum to n give -inf (0), as scipy
      check(out, getattr(sps.multinomial, name)(x, 6, p_ref))
  # a zero probability with a zero count is fine (xlogy's 0 log 0 = 0)
  check(stats.multinomial.logpmf(np.array([0, 2, 3]), 5, np.float32([0., 0.5, 0.5])),
        sps.multinomial.logpmf([0, 2, 3], 5, [0., 0.5, 0.5]))
  with ember.enable_x64():
    # probabilities that sum to 1 exactly: scipy replaces the last by 1 - the others' sum
    p64 = np.array([0.2, 0.3, 0.5])
    check(stats.multinomial.logpmf(x, 6, p64), sps.multinomial.logpmf(x, 6, p64), "float64",
          RTOL64, ATOL64)
    g = ember.grad(lambda p: stats.multinomial.logpmf(x[0], 6, p))(p64)
    np.testing.assert_allclose(np.asarray(g), x[0] / p64, rtol=1e-12)
  out = ember.vmap(lambda x: stats.multinomial.logpmf(x, 6, p))(x)
  check(out, sps.multinomial.logpmf(x, 6, p_ref))
  with pytest.raises(ValueError, match="x and n must be of integer type"):
    stats.multinomial.logpmf(np.float32([1, 2, 3]), 6, p)
  with pytest.raises(TypeError, match="requires ndarray or scalar arguments"):
    stats.multinomial.pmf(x, 6, [0.2, 0.3, 0.5])


def test_module_names_match_jax():
  # JAX 0.12.1's public functions per module (jax/scipy/stats/*.py)
  jax_names = {
      "gumbel_r": ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"],
      "gumbel_l": ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"],
      "wrapcauchy": ["logpdf", "pdf"], "multinomial": ["logpmf", "pmf"],
      "vonmises": ["logpdf", "pdf"], "dirichlet": ["logpdf", "pdf"],
      "multivariate_normal": ["logpdf", "pdf"], "nbinom": ["logpmf", "pmf"],
      "betabinom": ["logpmf", "pmf"],
      "pareto": ["logcdf", "logpdf", "logsf", "cdf", "pdf", "ppf", "sf"],
      "gennorm": ["logpdf", "pdf", "cdf"], "poisson": ["logpmf", "pmf", "cdf", "entropy"],
      "gamma": ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"],
      "chi2": ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"],
      "beta": ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"],
  }
  for module, names in jax_names.items():
    m = getattr(stats, module)
    assert sorted(m.__all__) == sorted(names), module
    assert all(callable(getattr(m, n)) for n in names)


def test_truncnorm_tails_and_bad_bounds():
  # intervals far in either tail stay accurate (the mass is taken in log space from the tail)
  with ember.enable_x64():
    for a, b in ((8., 20.), (-20., -8.), (-np.inf, np.inf), (-0.5, 0.25)):
      lo, hi = max(a, -30.), min(b, 30.)
      x = np.linspace(lo + 1e-3, hi - 1e-3, 7)
      for name in ("logpdf", "logcdf", "logsf"):
        # near the ends log(cdf) and log(sf) are differences of nearby log-masses (x 50 here);
        # ember's log_ndtr is the asymptotic series below -20 (2e-11 relative at -20; JAX
        # 0.12.1 rewrote log_ndtr to ~1e-16), so the interval ending at |20| gets 1e-6
        atol = 1e-6 if max(abs(a), abs(b)) == 20 else 1e-9
        check(getattr(stats.truncnorm, name)(x, a, b), ref("truncnorm", name, x, a, b),
              "float64", rtol=1e-9, atol=atol)
  # JAX 0.12.1: a >= b gives NaN everywhere; off [a, b], logpdf is -inf and the cdf 0 or 1
  x = np.float32([-2., 0., 2.])
  for name in ("logpdf", "cdf", "logsf"):
    f = getattr(stats.truncnorm, name)
    assert np.isnan(np.asarray(f(x, np.float32(1.), np.float32(1.)))).all()
    assert np.isnan(np.asarray(f(x, np.float32(2.), np.float32(1.)))).all()
  check(stats.truncnorm.logpdf(np.float32([-2., 3.]), -1., 2.), [-np.inf, -np.inf])
  check(stats.truncnorm.cdf(np.float32([-2., 3.]), -1., 2.), [0., 1.])


# ---- mode, rankdata, sem against scipy.stats

A_INT = np.array([[3, 1, 2, 3], [1, 1, 4, 4], [2, 5, 2, 2]])


@pytest.mark.parametrize("method", ["average", "min", "max", "dense", "ordinal"])
def test_rankdata(method):
  for axis in (None, 0, 1):
    want = sps.rankdata(A_INT, method, axis=axis)
    for out in (stats.rankdata(A_INT, method, axis=axis),
                ember.jit(lambda a: stats.rankdata(a, method, axis=axis))(A_INT)):
      check(out, want.reshape(out.shape) if axis is None else want, atol=0, rtol=0)
  # JAX 0.12.1: a NaN anywhere makes every rank NaN (nan_policy='propagate')
  check(stats.rankdata(np.float32([3., 1., np.nan])), [np.nan] * 3)
  out = ember.vmap(lambda r: stats.rankdata(r, method))(A_INT)
  check(out, sps.rankdata(A_INT, method, axis=1), atol=0, rtol=0)


def test_rankdata_errors():
  with pytest.raises(ValueError, match="unknown method 'foo'"):
    stats.rankdata(A_INT, "foo")
  with pytest.raises(NotImplementedError, match="omit is not implemented"):
    stats.rankdata(A_INT, nan_policy="omit")
  with pytest.raises(ValueError, match="Illegal nan_policy value 'x'"):
    stats.rankdata(A_INT, nan_policy="x")


def test_mode():
  for axis, keepdims in ((0, False), (1, True), (None, False), (-1, False)):
    want = sps.mode(A_INT, axis=axis, keepdims=keepdims)
    got = stats.mode(A_INT, axis=axis, keepdims=keepdims)
    assert type(got).__name__ == "ModeResult"
    np.testing.assert_array_equal(np.asarray(got.mode), want.mode)
    np.testing.assert_array_equal(np.asarray(got.count), want.count)
    assert got.mode.dtype == np.int32 and got.count.dtype == np.int32   # JAX 0.12.1
  got = stats.mode(np.float32([1.5, 2.5, 2.5]))
  assert float(got.mode) == 2.5 and int(got.count) == 2 and got.mode.dtype == np.float32
  with pytest.raises(NotImplementedError, match="best JIT compile `mode`"):
    stats.mode(A_INT, nan_policy="raise")


def test_sem():
  x = np.array([[1., 2., 4.], [3., 5., 9.]], np.float32)
  # std over 2-3 elements and a square root: a few float32 ulps
  for axis in (0, 1, None):
    for out in (stats.sem(x, axis=axis), ember.jit(lambda x: stats.sem(x, axis=axis))(x)):
      check(out, sps.sem(x.astype(np.float64), axis=axis), rtol=1e-6, atol=0)
  check(stats.sem(x, axis=1, ddof=0, keepdims=True),
        sps.sem(x.astype(np.float64), axis=1, ddof=0)[:, None], rtol=1e-6, atol=0)
  y = np.float32([1., 2., np.nan, 4.])
  check(stats.sem(y, nan_policy="omit"), sps.sem(y.astype(np.float64), nan_policy="omit"),
        rtol=1e-6, atol=0)
  assert np.isnan(float(stats.sem(y)))
  assert stats.sem(A_INT).dtype == np.float32   # integers promote as JAX's
  with pytest.raises(ValueError, match="raise is not supported"):
    stats.sem(y, nan_policy="raise")
  with ember.enable_x64():
    z = np.linspace(0, 1, 7)
    check(stats.sem(z), sps.sem(z), "float64", RTOL64, ATOL64)


def _poisson_entropy_ref(mu):
  """-sum p log p in float64 over k < mu + 20 sqrt(mu) + 50 (scipy's poisson.entropy is off
  by 2.5e-3 at mu = 1e4)."""
  out = []
  for m in np.asarray(mu, np.float64).ravel():
    k = np.arange(0, int(m + 20 * np.sqrt(m) + 50))
    logp = sps.poisson.logpmf(k, m)
    out.append(0.0 if m == 0 else -np.sum(np.exp(logp) * logp))
  return np.array(out).reshape(np.shape(mu))


def test_poisson_entropy():
  mu = np.array([0., 0.5, 3., 9.9, 10., 50., 99., 100., 1e4], np.float32)
  want = _poisson_entropy_ref(mu)
  # float32: up to 250 summed terms, each a few ulps: 2e-5 relative. mu >= 100 uses
  # log(2 pi e mu) / 2 - 1 / (12 mu), whose next term is -1 / (24 mu^2) (4e-6 at mu = 100)
  rtol = np.where(mu >= 100, 2e-5 + 1 / (24 * np.maximum(mu, 1) ** 2), 2e-5)
  for out in both(stats.poisson.entropy, mu):
    check(out, want, rtol=rtol, atol=0)
  # loc only broadcasts
  check(stats.poisson.entropy(mu[:, None], np.float32([0., 3.])),
        np.broadcast_to(want[:, None], (9, 2)), rtol=rtol[:, None], atol=0)
  with ember.enable_x64():
    m = np.array([0.2, 4., 30., 99.5, 150.])
    # the small-mu sum stops at k = mu + 20 (as JAX's): the tail left out is ~1e-10 at mu = 4
    rtol64 = np.where(m >= 100, 1 / (24 * m ** 2), 1e-9)
    check(stats.poisson.entropy(m), _poisson_entropy_ref(m), "float64", rtol64, 0)
    # d/dmu of the sum form against finite differences, away from integer mu (where the
    # summation bound ceil(mu + 20) steps and a difference quotient sees the jump)
    g = float(ember.grad(stats.poisson.entropy)(3.3))
    fd = _fd(lambda v: float(stats.poisson.entropy(v)), 3.3)
    np.testing.assert_allclose(g, fd, rtol=1e-6)
  assert stats.poisson.entropy(np.array([1, 20])).dtype == np.float32


# ---- cdfs and survival functions through gammainc/gammaincc/betainc (ember.scipy.special)
INCOMPLETE = [("gamma", (2.5,), (0.5, 1.5)), ("chi2", (3.,), (0.2, 1.1)),
              ("beta", (2., 3.), (0.1, 5.))]


@pytest.mark.parametrize("module,shapes,locscale", INCOMPLETE, ids=[m for m, _, _ in INCOMPLETE])
@pytest.mark.parametrize("name", ["cdf", "logcdf", "sf", "logsf"])
def test_cdfs_by_incomplete_functions(module, shapes, locscale, name):
  f = getattr(getattr(stats, module), name)
  x = np.linspace(-1, 6, 29)
  with ember.enable_x64():   # float64: the series/continued fractions converge to ~1e-13
    for out in both(f, x, *shapes, *locscale):
      check(out, ref(module, name, x, *shapes, *locscale), "float64", 1e-11, 1e-13)
  # float32: gammainc's and betainc's own float32 error (a few 1e-6 relative, up to ~1e-4
  # where the continued fraction takes over), and log of a tail value near 1e-7
  x32 = x.astype(np.float32)
  args32 = [np.float32(a) for a in (*shapes, *locscale)]
  for out in both(f, x32, *args32):
    check(out, ref(module, name, x32, *args32), "float32", 3e-4, 3e-6)


def test_poisson_cdf():
  k = np.array([-2., -0.5, 0., 1., 2.5, 3., 7., 20.])
  with ember.enable_x64():
    for out in both(stats.poisson.cdf, k, 3.5, 0.5):
      check(out, ref("poisson", "cdf", k, 3.5, 0.5), "float64", 1e-11, 1e-13)
  for out in both(stats.poisson.cdf, k.astype(np.float32), np.float32(3.5)):
    check(out, ref("poisson", "cdf", k.astype(np.float32), 3.5), "float32", 3e-4, 3e-6)
  assert float(stats.poisson.cdf(-1.0, 2.0)) == 0.0    # below the support, as JAX


def test_cdf_gradients_in_x():
  # d cdf / dx is the density (gammainc's and betainc's x-derivatives, as JAX defines them)
  with ember.enable_x64():
    for module, shapes, (loc, scale) in INCOMPLETE:
      m = getattr(stats, module)
      for x in (0.7, 2.0):
        g = ember.grad(lambda v: m.cdf(v, *shapes, loc, scale))(x)
        np.testing.assert_allclose(g, m.pdf(x, *shapes, loc, scale), rtol=1e-9)


def test_gennorm_cdf():
  x = np.linspace(-3, 3, 25)
  with ember.enable_x64():
    for beta in (0.7, 2.0, 5.0):
      for out in both(stats.gennorm.cdf, x, beta):
        check(out, ref("gennorm", "cdf", x, beta), "float64", 1e-11, 1e-13)
  for out in both(stats.gennorm.cdf, x.astype(np.float32), np.float32(1.5)):
    check(out, ref("gennorm", "cdf", x.astype(np.float32), 1.5), "float32", 3e-4, 3e-6)

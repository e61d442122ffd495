"""The sampler calls whose values tests/test_random_distributions.py checks against JAX.

Shared by the test (run with `ember.random`, `ember.numpy`) and by the generator
make_random_distributions.py (run with real JAX 0.12, which wrote
random_distributions.npz): each case is (name, seed, typed, x64, call), where
`call(random, jnp, key)` draws one array from `random.key(seed)` (typed) or
`random.PRNGKey(seed)` (raw key data), under `enable_x64(x64)`.
"""
import numpy as np

_A = np.array([0.05, 0.3, 1.0, 2.5, 40.0], np.float32)
_COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]], np.float32)
_MEAN = np.array([1.0, -2.0, 0.5], np.float32)
_COVS = np.stack([_COV, np.diag([1.0, 4.0, 0.25]).astype(np.float32)])  # a batch of two


def _cases():
  c = []

  def add(name, seed, typed, call, x64=False):
    c.append((name, seed, typed, x64, call))

  arr = lambda jnp, v, dt=None: jnp.array(v, dt)
  # gamma family: shapes (scalar, broadcast, >= 3-D, empty), dtypes, both key kinds
  add("gamma_vec", 0, True, lambda R, jnp, k: R.gamma(k, arr(jnp, _A), (40, 5)))
  add("gamma_scalar", 1, False, lambda R, jnp, k: R.gamma(k, 3.0))
  add("gamma_3d", 2, True, lambda R, jnp, k: R.gamma(k, arr(jnp, [[0.7], [5.0]]), (3, 2, 4)))
  add("gamma_empty", 3, True, lambda R, jnp, k: R.gamma(k, 1.5, (0, 3)))
  add("gamma_f16", 4, True, lambda R, jnp, k: R.gamma(k, 2.0, (30,), jnp.float16))
  add("gamma_bf16", 5, True, lambda R, jnp, k: R.gamma(k, 0.5, (30,), jnp.bfloat16))
  add("gamma_f64", 6, True, lambda R, jnp, k: R.gamma(
      k, arr(jnp, _A, jnp.float64), (20, 5), jnp.float64), x64=True)
  add("gamma_approx", 7, True, lambda R, jnp, k: R.gamma(
      k, arr(jnp, _A), (40, 5), method="approximate"))
  add("gamma_approx_f16", 7, True, lambda R, jnp, k: R.gamma(
      k, 3.0, (20,), jnp.float16, method="approximate"))
  edge = [0.0, -1.0, np.nan, np.inf, 1e-30, 1e10]   # no infinite loops; JAX's nan / inf / 0
  add("gamma_edge", 44, True, lambda R, jnp, k: R.gamma(k, arr(jnp, edge)))
  add("loggamma_edge", 44, True, lambda R, jnp, k: R.loggamma(k, arr(jnp, edge)))
  add("loggamma_vec", 8, True, lambda R, jnp, k: R.loggamma(
      k, arr(jnp, [[1e-3], [0.02], [0.5], [1.0], [9.0]]), (5, 40)))
  # a short last axis: XLA vectorizes across rows and drops some fused multiply-adds
  add("loggamma_rows", 8, True, lambda R, jnp, k: R.loggamma(
      k, arr(jnp, [1e-3, 0.02, 0.5, 1.0, 9.0]), (40, 5)))
  add("loggamma_approx", 9, False, lambda R, jnp, k: R.loggamma(
      k, arr(jnp, [1e-3, 0.5, 9.0]), (30, 3), method="approximate"))
  add("beta", 10, True, lambda R, jnp, k: R.beta(k, arr(jnp, [0.2, 1.0, 3.0]), 2.0, (50, 3)))
  add("beta_approx", 11, True, lambda R, jnp, k: R.beta(
      k, 0.5, arr(jnp, [0.5, 4.0]), (30, 2), method="approximate"))
  add("beta_f64", 12, True, lambda R, jnp, k: R.beta(k, 2.0, 3.0, (40,), jnp.float64), x64=True)
  add("dirichlet", 13, True, lambda R, jnp, k: R.dirichlet(k, arr(jnp, [0.3, 1.0, 4.0]), (40,)))
  add("dirichlet_2d", 14, False, lambda R, jnp, k: R.dirichlet(
      k, arr(jnp, [[0.5, 0.5], [2.0, 6.0]])))
  add("chisquare", 15, True, lambda R, jnp, k: R.chisquare(
      k, arr(jnp, [[1.0], [3.0], [10.0]]), (3, 40)))
  add("chisquare_approx", 16, True, lambda R, jnp, k: R.chisquare(
      k, 4.0, (30,), method="approximate"))
  add("t", 17, True, lambda R, jnp, k: R.t(k, arr(jnp, [[1.0], [2.5], [30.0]]), (3, 40)))
  add("f", 18, True, lambda R, jnp, k: R.f(k, arr(jnp, [1.0, 5.0]), 7.0, (40, 2)))
  add("wald", 19, True, lambda R, jnp, k: R.wald(k, arr(jnp, [[0.5], [1.0], [3.0]]), (3, 40)))
  add("wald_f64", 20, True, lambda R, jnp, k: R.wald(k, 2.0, (30,), jnp.float64), x64=True)
  add("generalized_normal", 21, True, lambda R, jnp, k: R.generalized_normal(k, 1.5, (60,)))
  add("generalized_normal_p", 22, True, lambda R, jnp, k: R.generalized_normal(
      k, arr(jnp, [0.5, 2.0, 8.0]), (20, 3)))
  add("generalized_normal_f64", 23, True, lambda R, jnp, k: R.generalized_normal(
      k, 3.0, (30,), jnp.float64), x64=True)
  add("ball", 24, True, lambda R, jnp, k: R.ball(k, 3, 2, (30,)))
  add("ball_p1", 25, False, lambda R, jnp, k: R.ball(k, 4, 1.0, (5, 3)))
  # discrete samplers: exact integers / float counts
  add("poisson", 26, True, lambda R, jnp, k: R.poisson(
      k, arr(jnp, [0.0, 0.4, 3.0, 9.9, 10.0, 55.0, 1e4]), (60, 7)))
  add("poisson_edge", 45, True, lambda R, jnp, k: R.poisson(k, arr(jnp, [0.0, np.nan, 1e7, 9.99])))
  add("poisson_scalar", 27, False, lambda R, jnp, k: R.poisson(k, 4.0))
  add("poisson_i16", 28, True, lambda R, jnp, k: R.poisson(k, 25.0, (50,), jnp.int16))
  add("poisson_x64", 29, True, lambda R, jnp, k: R.poisson(k, arr(jnp, [2.0, 40.0]), (30, 2)),
      x64=True)
  add("poisson_approx", 30, True, lambda R, jnp, k: R.poisson(
      k, arr(jnp, [0.5, 3.0, 6.9, 7.0, 50.0, 1e4]), (40, 6), method="approximate"))
  add("binomial", 31, True, lambda R, jnp, k: R.binomial(
      k, arr(jnp, [5.0, 30.0, 100.0, 1000.0]), arr(jnp, [0.3, 0.6, 0.05, 0.5]), (50, 4)))
  add("binomial_edge", 32, True, lambda R, jnp, k: R.binomial(   # nan / inf / invalid p
      k, arr(jnp, [-1.0, np.nan, np.inf, 10.0, 10.0, 7.5, 0.0]),
      arr(jnp, [0.5, 0.5, 0.5, np.nan, -0.1, 1.0, 0.5])))
  add("binomial_f64", 33, True, lambda R, jnp, k: R.binomial(k, 40.0, 0.7, (40,), jnp.float64),
      x64=True)
  add("multinomial", 34, True, lambda R, jnp, k: R.multinomial(
      k, 20.0, arr(jnp, [0.2, 0.3, 0.5]), shape=(30,)))
  add("multinomial_batch", 35, False, lambda R, jnp, k: R.multinomial(
      k, arr(jnp, [10.0, 200.0]), arr(jnp, [[0.1, 0.0, 0.9], [0.25, 0.25, 0.5]]),
      dtype=jnp.int32))
  # linear algebra
  add("mvn_cholesky", 36, True, lambda R, jnp, k: R.multivariate_normal(k, _MEAN, _COV, (30,)))
  add("mvn_eigh", 37, True, lambda R, jnp, k: R.multivariate_normal(
      k, _MEAN, _COV, (30,), method="eigh"))
  add("mvn_svd", 38, True, lambda R, jnp, k: R.multivariate_normal(
      k, _MEAN, _COV, (30,), method="svd"))
  add("mvn_batch", 39, False, lambda R, jnp, k: R.multivariate_normal(k, _MEAN, _COVS, (4, 2)))
  add("orthogonal", 40, True, lambda R, jnp, k: R.orthogonal(k, 4, (3,)))
  add("orthogonal_wide", 41, True, lambda R, jnp, k: R.orthogonal(k, 2, (2,), m=5))
  add("orthogonal_tall", 42, True, lambda R, jnp, k: R.orthogonal(k, 5, m=3))
  add("orthogonal_f64", 43, True, lambda R, jnp, k: R.orthogonal(k, 3, (2,), jnp.float64),
      x64=True)
  return c


CASES = _cases()

# d sample / d a of Gamma(a) samples: grad of gamma / loggamma / beta at GRAD_A (seed 50),
# and lax.random_gamma_grad(GRAD_A, GRAD_X)
GRAD_A = np.array([0.2, 0.9, 1.0, 3.5, 20.0], np.float32)
GRAD_X = np.array([0.01, 0.5, 2.0, 3.0, 25.0], np.float32)


def grad_cases(random, lax, grad, k):
  return {"grad_gamma": grad(lambda a: random.gamma(k, a).sum())(GRAD_A),
          "grad_loggamma": grad(lambda a: random.loggamma(k, a).sum())(GRAD_A),
          "grad_beta": grad(lambda a: random.beta(k, a, 2.0).sum())(GRAD_A),
          "random_gamma_grad": lax.random_gamma_grad(GRAD_A, GRAD_X)}

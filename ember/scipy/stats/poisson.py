"""ember.scipy.stats.poisson (jax.scipy.stats.poisson): the Poisson distribution with mean
`mu`. Provided: logpmf, pmf, cdf, entropy."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember._src.driver.jit import jit
from ember.scipy import special

__all__ = ["logpmf", "pmf", "cdf", "entropy"]


def logpmf(k, mu, loc=0):
  """k log(mu) - lgamma(k + 1) - mu at integers k - loc >= 0 (0 log 0 = 0 at mu = 0),
  -inf elsewhere."""
  k, mu, loc = util.promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  log_probs = lax.sub(lax.sub(special.xlogy(x, mu), special.gammaln(lax.add(x, _const(x, 1)))),
                      mu)
  off_support = jnp.logical_or(lax.lt(x, _const(x, 0)), lax.ne(jnp.round(x), x))
  return jnp.where(off_support, -np.inf, log_probs)


def pmf(k, mu, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, mu, loc))


def _entropy_by_sum(mu, max_k, upper_bound):
  """-sum p log p over k < min(max_k, upper_bound(mu)): the terms beyond are below float64's
  resolution for the mu this is used on."""
  k = jnp.arange(max_k, dtype=mu.dtype)[:, None]
  log_probs = logpmf(k, mu, 0)
  terms = jnp.where(k < jnp.ceil(upper_bound(mu))[None, :], -jnp.exp(log_probs) * log_probs, 0.0)
  return jnp.sum(terms, axis=0)


def _entropy_large_mu(mu):
  """The asymptotic expansion log(2 pi e mu) / 2 - 1 / (12 mu) (mu >= 100)."""
  return 0.5 * jnp.log(2 * np.pi * np.e * mu) - 1.0 / (12 * mu)


@jit
def entropy(mu, loc=0):
  """The entropy -sum p log p: summed exactly for mu < 10 (35 terms) and mu < 100 (250
  terms, up to mu + 10 sqrt(mu) + 20), by its asymptotic expansion above; 0 at mu = 0. The
  result has the broadcast shape of mu and loc (loc does not change it)."""
  util.check_arraylike("poisson.entropy", mu, loc)
  mu, loc = util.promote_dtypes_inexact(mu, loc)
  shape = util.broadcast_shapes(mu.shape, loc.shape)
  flat = jnp.ravel(mu)
  small = jnp.where((flat == 0) | (flat >= 10), 1, flat)       # safe stand-ins keep every
  medium = jnp.where((flat < 10) | (flat >= 100), 10, flat)    # branch finite under grad
  large = jnp.where(flat < 100, 100, flat)
  result = jnp.where(
      flat == 0, jnp.zeros_like(flat),
      jnp.where(flat < 10, _entropy_by_sum(small, 35, lambda m: m + 20),
                jnp.where(flat < 100,
                          _entropy_by_sum(medium, 250, lambda m: m + 10 * jnp.sqrt(m) + 20),
                          _entropy_large_mu(large))))
  return jnp.broadcast_to(jnp.reshape(result, mu.shape), shape)


def cdf(k, mu, loc=0):
  """P(K <= k) = gammaincc(floor(k - loc) + 1, mu); 0 below loc."""
  k, mu, loc = util.promote_args_inexact("poisson.logpmf", k, mu, loc)   # (JAX's name)
  x = lax.sub(k, loc)
  p = special.gammaincc(jnp.floor(lax.add(_const(x, 1), x)), mu)
  return jnp.where(lax.lt(x, _const(x, 0)), _const(x, 0), p)

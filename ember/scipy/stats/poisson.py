"""ember.scipy.stats.poisson (jax.scipy.stats.poisson): the Poisson distribution with mean
`mu`. Provided: logpmf, pmf. Not yet: cdf (it needs gammaincc), entropy."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpmf", "pmf"]


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

"""ember.scipy.stats.binom (jax.scipy.stats.binom): the binomial distribution of `n`
trials with success probability `p`."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """log C(n, y) + y log(p) + (n - y) log1p(-p), y = k - loc, at integers 0 <= y <= n
  (-inf elsewhere). Where the linear part is exactly 0 (p = 0 with y = 0, p = 1 with y = n,
  or n = y = 0) the result is exactly 0, not the rounding residue of the gammaln terms."""
  k, n, p, loc = util.promote_args_inexact("binom.logpmf", k, n, p, loc)
  one = _const(k, 1)
  y = lax.sub(k, loc)
  zero = _const(y, 0)
  log_comb = lax.sub(special.gammaln(lax.add(n, one)),
                     lax.add(special.gammaln(lax.add(y, one)),
                             special.gammaln(lax.add(lax.sub(n, y), one))))
  log_linear = lax.add(special.xlogy(y, p), special.xlog1py(lax.sub(n, y), lax.neg(p)))
  certain = jnp.logical_or(jnp.logical_and(lax.eq(y, zero), lax.eq(n, zero)),
                           lax.eq(log_linear, zero))
  log_probs = jnp.where(certain, 0.0, lax.add(log_comb, log_linear))
  in_support = (lax.ge(k, loc) & lax.lt(k, lax.add(lax.add(loc, n), one))
                & lax.eq(lax.rem(y, one), zero))
  return jnp.where(in_support, log_probs, -np.inf)


def pmf(k, n, p, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, n, p, loc))

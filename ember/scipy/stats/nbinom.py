"""ember.scipy.stats.nbinom (jax.scipy.stats.nbinom): the number of failures before the
`n`-th success, success probability `p`."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpmf", "pmf"]


def logpmf(k, n, p, loc=0):
  """-(betaln(n, y) + log(y)) + n log(p) + y log1p(-p) at integers y = k - loc >= 0 (the
  binomial coefficient is 1 at y = 0, where betaln is not evaluated); -inf elsewhere."""
  k, n, p, loc = util.promote_args_inexact("nbinom.logpmf", k, n, p, loc)
  zero, one = _const(k, 0), _const(k, 1)
  y = lax.sub(k, loc)
  positive = lax.gt(y, zero)
  safe_y = jnp.where(positive, y, one)
  log_comb = jnp.where(positive, lax.neg(lax.add(special.betaln(n, safe_y), lax.log(safe_y))),
                       zero)
  log_linear = lax.add(special.xlogy(n, p), special.xlog1py(y, lax.neg(p)))
  off_support = jnp.logical_or(lax.lt(k, loc), lax.ne(lax.rem(y, one), zero))
  return jnp.where(off_support, -np.inf, lax.add(log_comb, log_linear))


def pmf(k, n, p, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, n, p, loc))

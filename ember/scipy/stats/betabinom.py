"""ember.scipy.stats.betabinom (jax.scipy.stats.betabinom): the binomial distribution whose
success probability is Beta(a, b) distributed."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember._src.driver.jit import jit
from ember.scipy import special

__all__ = ["logpmf", "pmf"]


@jit
def logpmf(k, n, a, b, loc=0):
  """-log1p(n) - betaln(n - y + 1, y + 1) + betaln(y + a, n - y + b) - betaln(a, b) at
  integers 0 <= y = k - loc <= n (0 at n = y = 0), -inf elsewhere, NaN for n < 0 or a or b
  not positive."""
  k, n, a, b, loc = util.promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
  y = lax.sub(k, loc)
  zero, one = _const(y, 0), _const(y, 1)
  n_minus_y = lax.sub(n, y)
  log_comb = lax.neg(lax.add(lax.log1p(n),
                             special.betaln(lax.add(n_minus_y, one), lax.add(y, one))))
  log_beta_ratio = lax.sub(special.betaln(lax.add(y, a), lax.add(n_minus_y, b)),
                           special.betaln(a, b))
  log_probs = jnp.where(jnp.logical_and(lax.eq(y, zero), lax.eq(n, zero)), 0.0,
                        lax.add(log_comb, log_beta_ratio))
  off_support = (lax.lt(y, zero) | lax.gt(y, n)) | lax.ne(jnp.round(y), y)
  bad_params = (lax.lt(n, zero) | lax.le(a, zero)) | lax.le(b, zero)
  return jnp.where(bad_params, np.nan, jnp.where(off_support, -np.inf, log_probs))


def pmf(k, n, a, b, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, n, a, b, loc))

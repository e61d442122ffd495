"""ember.scipy.stats.bernoulli (jax.scipy.stats.bernoulli): one trial with success
probability `p`."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
  """x log(p) + (1 - x) log1p(-p) at x = k - loc in {0, 1}, -inf elsewhere."""
  k, p, loc = util.promote_args_inexact("bernoulli.logpmf", k, p, loc)
  zero, one = _const(k, 0), _const(k, 1)
  x = lax.sub(k, loc)
  log_probs = lax.add(special.xlogy(x, p), special.xlog1py(lax.sub(one, x), lax.neg(p)))
  off_support = (lax.lt(x, zero) | lax.gt(x, one)) | lax.ne(lax.rem(x, one), zero)
  return jnp.where(off_support, -np.inf, log_probs)


def pmf(k, p, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, p, loc))


def _bad_p(p):
  return jnp.isnan(p) | lax.lt(p, _const(p, 0)) | lax.gt(p, _const(p, 1))


def cdf(k, p):
  """0 below 0, 1 - p on [0, 1), 1 from 1 on; NaN for a NaN k or p outside [0, 1]."""
  k, p = util.promote_args_inexact("bernoulli.cdf", k, p)
  zero, one = _const(k, 0), _const(k, 1)
  conditions = [jnp.isnan(k) | _bad_p(p), lax.lt(k, zero),
                jnp.logical_and(lax.ge(k, zero), lax.lt(k, one)), lax.ge(k, one)]
  return jnp.select(conditions, [np.nan, zero, lax.sub(one, p), one])


def ppf(q, p):
  """0 for q <= 1 - p, else 1; NaN for q or p outside [0, 1] (or NaN)."""
  q, p = util.promote_args_inexact("bernoulli.ppf", q, p)
  zero, one = _const(q, 0), _const(q, 1)
  bad = _bad_p(p) | jnp.isnan(q) | lax.lt(q, zero) | lax.gt(q, one)
  return jnp.where(bad, np.nan, jnp.where(lax.le(q, lax.sub(one, p)), zero, one))

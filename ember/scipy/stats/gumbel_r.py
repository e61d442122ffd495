"""ember.scipy.stats.gumbel_r (jax.scipy.stats.gumbel_r): the right-skewed Gumbel (maximum
extreme value) distribution; NaN for a non-positive scale."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy.stats._common import log1mexp, nan_unless_positive, standardize

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"]


def logpdf(x, loc=0, scale=1):
  """-log(scale) - (z + exp(-z))."""
  z, _, _, scale = standardize("gumbel_r.logpdf", x, loc, scale)
  log_probs = lax.sub(lax.neg(lax.log(scale)), lax.add(z, lax.exp(lax.neg(z))))
  return nan_unless_positive(scale, log_probs)


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """-exp(-z)."""
  z, _, _, scale = standardize("gumbel_r.logcdf", x, loc, scale)
  return nan_unless_positive(scale, lax.neg(lax.exp(lax.neg(z))))


def cdf(x, loc=0, scale=1):
  """exp(-exp(-z))."""
  return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """loc - scale log(-log(p)) for p in (0, 1), NaN elsewhere (the ends included, as JAX)."""
  p, loc, scale = util.promote_args_inexact("gumbel_r.ppf", p, loc, scale)
  inside = jnp.logical_and(lax.gt(p, _const(p, 0)), lax.lt(p, _const(p, 1)))
  quantile = lax.sub(loc, lax.mul(scale, lax.log(lax.neg(lax.log(p)))))
  return jnp.where(inside, quantile, np.nan)


def sf(x, loc=0, scale=1):
  """1 - exp(-exp(-z))."""
  z, x, _, scale = standardize("gumbel_r.sf", x, loc, scale)
  return nan_unless_positive(scale, lax.sub(_const(x, 1), lax.exp(lax.neg(lax.exp(lax.neg(z))))))


def logsf(x, loc=0, scale=1):
  """log(1 - exp(-exp(-z))) through log1mexp (accurate in the upper tail)."""
  z, _, _, scale = standardize("gumbel_r.logsf", x, loc, scale)
  return nan_unless_positive(scale, log1mexp(lax.exp(lax.neg(z))))

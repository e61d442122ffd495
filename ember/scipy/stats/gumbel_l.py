"""ember.scipy.stats.gumbel_l (jax.scipy.stats.gumbel_l): the left-skewed Gumbel (minimum
extreme value) distribution; NaN for a non-positive scale."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy.stats._common import nan_unless_positive, standardize

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "ppf", "sf", "logsf"]


def logpdf(x, loc=0, scale=1):
  """-log(scale) + z - exp(z)."""
  z, _, _, scale = standardize("gumbel_l.logpdf", x, loc, scale)
  return nan_unless_positive(scale, lax.add(lax.neg(lax.log(scale)), lax.sub(z, lax.exp(z))))


def pdf(x, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  """log(-expm1(-exp(z))) (accurate in the lower tail)."""
  z, _, _, scale = standardize("gumbel_l.logcdf", x, loc, scale)
  return nan_unless_positive(scale, lax.log(lax.neg(lax.expm1(lax.neg(lax.exp(z))))))


def cdf(x, loc=0, scale=1):
  """exp(logcdf)."""
  return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  """loc + scale log(-log1p(-p)) for p in (0, 1), NaN elsewhere (the ends included, as
  JAX)."""
  p, loc, scale = util.promote_args_inexact("gumbel_l.ppf", p, loc, scale)
  inside = jnp.logical_and(lax.gt(p, _const(p, 0)), lax.lt(p, _const(p, 1)))
  quantile = lax.add(loc, lax.mul(scale, lax.log(lax.neg(lax.log1p(lax.neg(p))))))
  return jnp.where(inside, quantile, np.nan)


def logsf(x, loc=0, scale=1):
  """-exp(z)."""
  z, _, _, scale = standardize("gumbel_l.logsf", x, loc, scale)
  return nan_unless_positive(scale, lax.neg(lax.exp(z)))


def sf(x, loc=0, scale=1):
  """exp(-exp(z))."""
  return lax.exp(logsf(x, loc, scale))

"""ember.scipy.stats.expon (jax.scipy.stats.expon): the exponential distribution on
[loc, inf)."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy.stats._common import log1mexp

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """-(x - loc) / scale - log(scale) for x >= loc, -inf below."""
  x, loc, scale = util.promote_args_inexact("expon.logpdf", x, loc, scale)
  log_probs = lax.neg(lax.add(lax.div(lax.sub(x, loc), scale), lax.log(scale)))
  return jnp.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
  """The exponential density, exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """-expm1(-(x - loc) / scale) (accurate near loc), 0 below loc."""
  x, loc, scale = util.promote_args_inexact("expon.cdf", x, loc, scale)
  neg_z = lax.div(lax.sub(loc, x), scale)
  return jnp.where(lax.lt(x, loc), jnp.zeros_like(neg_z), lax.neg(lax.expm1(neg_z)))


def logcdf(x, loc=0, scale=1):
  """log(1 - exp(-z)), -inf below loc (where z is replaced by 1 so log1mexp gives no NaN that a
  gradient would pick up)."""
  x, loc, scale = util.promote_args_inexact("expon.logcdf", x, loc, scale)
  below = lax.lt(x, loc)
  safe_z = jnp.where(below, 1, lax.div(lax.sub(x, loc), scale))
  return jnp.where(below, -np.inf, log1mexp(safe_z))


def logsf(x, loc=0, scale=1):
  """-(x - loc) / scale, 0 below loc."""
  x, loc, scale = util.promote_args_inexact("expon.logsf", x, loc, scale)
  neg_z = lax.div(lax.sub(loc, x), scale)
  return jnp.where(lax.lt(x, loc), jnp.zeros_like(neg_z), neg_z)


def sf(x, loc=0, scale=1):
  """exp(logsf)."""
  return lax.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  """loc - scale * log1p(-q), NaN for q outside [0, 1]."""
  q, loc, scale = util.promote_args_inexact("expon.ppf", q, loc, scale)
  bad = jnp.isnan(q) | lax.lt(q, _const(q, 0)) | lax.gt(q, _const(q, 1))
  return jnp.where(bad, np.nan, lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))

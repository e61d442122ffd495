"""ember.scipy.stats.norm (jax.scipy.stats.norm): the normal distribution with `loc` and
`scale` broadcasting against `x`, written as jax/_src/scipy/stats/norm.py writes it."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember.scipy import special
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """log N(x; loc, scale^2) = -(log(2 pi scale^2) + ((x - loc) / scale)^2) / 2."""
  x, loc, scale = util.promote_args_inexact("norm.logpdf", x, loc, scale)
  scale_sqrd = lax.square(scale)
  log_normalizer = lax.log(lax.mul(_const(x, 2 * np.pi), scale_sqrd))
  quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_sqrd)
  return lax.div(lax.add(log_normalizer, quadratic), _const(x, -2))


def pdf(x, loc=0, scale=1):
  """The normal density, exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """P(X <= x) = ndtr((x - loc) / scale)."""
  x, loc, scale = util.promote_args_inexact("norm.cdf", x, loc, scale)
  return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
  """log P(X <= x) = log_ndtr((x - loc) / scale), accurate in the far lower tail."""
  x, loc, scale = util.promote_args_inexact("norm.logcdf", x, loc, scale)
  return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def sf(x, loc=0, scale=1):
  """P(X > x) = cdf(-x, -loc, scale) (no 1 - cdf cancellation)."""
  x, loc, scale = util.promote_args_inexact("norm.sf", x, loc, scale)
  return cdf(lax.neg(x), lax.neg(loc), scale)


def logsf(x, loc=0, scale=1):
  """log P(X > x) = logcdf(-x, -loc, scale)."""
  x, loc, scale = util.promote_args_inexact("norm.logsf", x, loc, scale)
  return logcdf(lax.neg(x), lax.neg(loc), scale)


def ppf(q, loc=0, scale=1):
  """The quantile function, ndtri(q) * scale + loc, in the default float dtype (as JAX)."""
  return jnp.asarray(jnp.add(jnp.multiply(special.ndtri(q), scale), loc),
                     dtypes.default_float_dtype())


def isf(q, loc=0, scale=1):
  """The inverse survival function, -ppf(q, -loc, scale) (exact for tiny q, unlike
  ppf(1 - q))."""
  q, loc, scale = util.promote_args_inexact("norm.isf", q, loc, scale)
  return jnp.negative(ppf(q, lax.neg(loc), scale))

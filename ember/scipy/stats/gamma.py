"""ember.scipy.stats.gamma (jax.scipy.stats.gamma): the gamma distribution with shape `a`.
Provided: logpdf, pdf, cdf, logcdf, sf, logsf."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special
from ember.scipy.stats._common import clamped

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
  """(a - 1) log(y) - y - lgamma(a) - log(scale), y = (x - loc) / scale; -inf below loc
  (y is replaced by 1 there so the unused branch stays finite under grad)."""
  x, a, loc, scale = util.promote_args_inexact("gamma.logpdf", x, a, loc, scale)
  in_support = lax.ge(x, loc)
  one = _const(x, 1)
  y = jnp.where(in_support, lax.div(lax.sub(x, loc), scale), one)
  log_kernel = lax.sub(special.xlogy(lax.sub(a, one), y), y)
  log_probs = lax.sub(log_kernel, lax.add(special.gammaln(a), lax.log(scale)))
  return jnp.where(in_support, log_probs, -np.inf)


def pdf(x, a, loc=0, scale=1):
  """The gamma density, exp(logpdf)."""
  return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  """P(X <= x): gammainc(a, y), y = (x - loc) / scale clamped to [0, inf)."""
  x, a, loc, scale = util.promote_args_inexact("gamma.cdf", x, a, loc, scale)
  return special.gammainc(a, clamped(x, loc, scale, 0, np.inf))


def logcdf(x, a, loc=0, scale=1):
  return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  """P(X > x): gammaincc(a, y), 1 below loc."""
  x, a, loc, scale = util.promote_args_inexact("gamma.sf", x, a, loc, scale)
  y = lax.div(lax.sub(x, loc), scale)
  return jnp.where(lax.lt(y, _const(y, 0)), _const(y, 1), special.gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
  return lax.log(sf(x, a, loc, scale))

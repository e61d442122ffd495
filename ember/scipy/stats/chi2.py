"""ember.scipy.stats.chi2 (jax.scipy.stats.chi2): the chi-squared distribution with `df`
degrees of freedom. Provided: logpdf, pdf, cdf, logcdf, sf, logsf."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special
from ember.scipy.stats._common import clamped

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, df, loc=0, scale=1):
  """(df/2 - 1) log(y) - y/2 - lgamma(df/2) - (df/2) log 2 - log(scale), y = (x - loc) /
  scale; -inf below loc."""
  x, df, loc, scale = util.promote_args_inexact("chi2.logpdf", x, df, loc, scale)
  one, two = _const(x, 1), _const(x, 2)
  y = lax.div(lax.sub(x, loc), scale)
  half_df = lax.div(df, two)
  kernel = lax.sub(special.xlogy(lax.sub(half_df, one), y), lax.div(y, two))
  log_normalizer = lax.add(lax.lgamma(half_df), lax.mul(half_df, _const(x, np.log(2))))
  log_probs = lax.add(lax.sub(lax.neg(log_normalizer), lax.log(scale)), kernel)
  return jnp.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, df, loc=0, scale=1):
  """The chi-squared density, exp(logpdf)."""
  return lax.exp(logpdf(x, df, loc, scale))


def cdf(x, df, loc=0, scale=1):
  """P(X <= x): gammainc(df / 2, y / 2), y = (x - loc) / scale clamped to [0, inf)."""
  x, df, loc, scale = util.promote_args_inexact("chi2.cdf", x, df, loc, scale)
  return special.gammainc(lax.div(df, _const(df, 2)), clamped(x, loc, scale, 0, np.inf, 2))


def logcdf(x, df, loc=0, scale=1):
  return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  """P(X > x): gammaincc(df / 2, y / 2)."""
  x, df, loc, scale = util.promote_args_inexact("chi2.sf", x, df, loc, scale)
  return special.gammaincc(lax.div(df, _const(df, 2)), clamped(x, loc, scale, 0, np.inf, 2))


def logsf(x, df, loc=0, scale=1):
  return lax.log(sf(x, df, loc, scale))

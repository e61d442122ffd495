"""ember.scipy.stats.beta (jax.scipy.stats.beta): the beta distribution on [loc, loc +
scale]. Provided: logpdf, pdf, cdf, logcdf, sf, logsf."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special
from ember.scipy.stats._common import clamped

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
  """(a - 1) log(y) + (b - 1) log1p(-y) - betaln(a, b) - log(scale), y = (x - loc) / scale;
  -inf off [loc, loc + scale], NaN unless a, b and scale are positive. xlogy/xlog1py give
  0 * log(0) = 0, so a = 1 (or b = 1) is finite at its end of the support."""
  x, a, b, loc, scale = util.promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
  one, zero = _const(x, 1), _const(a, 0)
  y = lax.div(lax.sub(x, loc), scale)
  log_kernel = lax.add(special.xlogy(lax.sub(a, one), y),
                       special.xlog1py(lax.sub(b, one), lax.neg(y)))
  log_probs = lax.sub(lax.sub(log_kernel, special.betaln(a, b)), lax.log(scale))
  outside = jnp.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
  bad_params = lax.le(a, zero) | lax.le(b, zero) | lax.le(scale, zero)
  return jnp.where(bad_params, np.nan, jnp.where(outside, -np.inf, log_probs))


def pdf(x, a, b, loc=0, scale=1):
  """The beta density, exp(logpdf)."""
  return lax.exp(logpdf(x, a, b, loc, scale))


def cdf(x, a, b, loc=0, scale=1):
  """P(X <= x): betainc(a, b, y), y = (x - loc) / scale clamped to [0, 1]."""
  x, a, b, loc, scale = util.promote_args_inexact("beta.cdf", x, a, b, loc, scale)
  return special.betainc(a, b, clamped(x, loc, scale, 0, 1))


def logcdf(x, a, b, loc=0, scale=1):
  return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  """P(X > x): betainc(b, a, 1 - y) (the upper tail by symmetry, accurate near 1)."""
  x, a, b, loc, scale = util.promote_args_inexact("beta.sf", x, a, b, loc, scale)
  return special.betainc(b, a, lax.sub(_const(x, 1), clamped(x, loc, scale, 0, 1)))


def logsf(x, a, b, loc=0, scale=1):
  return lax.log(sf(x, a, b, loc, scale))

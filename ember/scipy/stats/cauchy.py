"""ember.scipy.stats.cauchy (jax.scipy.stats.cauchy): the Cauchy distribution."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def logpdf(x, loc=0, scale=1):
  """-log(pi scale) - log1p(z^2)."""
  x, loc, scale = util.promote_args_inexact("cauchy.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  normalizer = lax.log(lax.mul(_const(x, np.pi), scale))
  return lax.neg(lax.add(normalizer, lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
  """The Cauchy density, exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """1/2 + arctan(z) / pi."""
  x, loc, scale = util.promote_args_inexact("cauchy.cdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return lax.add(_const(x, 0.5), lax.mul(_const(x, 1 / np.pi), jnp.arctan(z)))


def logcdf(x, loc=0, scale=1):
  """log(cdf)."""
  return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  """cdf(-x, -loc, scale) (no 1 - cdf cancellation)."""
  x, loc, scale = util.promote_args_inexact("cauchy.sf", x, loc, scale)
  return cdf(lax.neg(x), lax.neg(loc), scale)


def logsf(x, loc=0, scale=1):
  """logcdf(-x, -loc, scale)."""
  x, loc, scale = util.promote_args_inexact("cauchy.logsf", x, loc, scale)
  return logcdf(lax.neg(x), lax.neg(loc), scale)


def _standard_ppf(q):
  """tan(pi (q - 1/2)): formed directly in [1/4, 3/4], where q - 1/2 is exact, and as
  -+1 / tan(pi min(q, 1 - q)) in the tails, so the argument of tan stays in [-pi/4, pi/4]
  and the tails reach -+inf at q = 0 and 1 exactly."""
  half, one = _const(q, 0.5), _const(q, 1)
  central = jnp.logical_and(lax.ge(q, _const(q, 0.25)), lax.le(q, _const(q, 0.75)))
  upper = lax.gt(q, half)
  pi = _const(q, np.pi)
  mid_value = lax.tan(lax.mul(pi, jnp.where(central, lax.sub(q, half), 0)))
  tail_arg = jnp.where(central, 0.25, jnp.where(upper, lax.sub(one, q), q))
  tail_value = lax.div(jnp.where(upper, one, -one), lax.tan(lax.mul(pi, tail_arg)))
  return jnp.where(central, mid_value, tail_value)


def ppf(q, loc=0, scale=1):
  """loc + scale tan(pi (q - 1/2)), NaN for q outside [0, 1]."""
  q, loc, scale = util.promote_args_inexact("cauchy.ppf", q, loc, scale)
  bad = jnp.logical_or(lax.lt(q, _const(q, 0)), lax.gt(q, _const(q, 1)))
  return jnp.where(bad, np.nan, lax.add(lax.mul(_standard_ppf(q), scale), loc))


def isf(q, loc=0, scale=1):
  """-ppf(q, -loc, scale) (exact for tiny q)."""
  q, loc, scale = util.promote_args_inexact("cauchy.isf", q, loc, scale)
  return lax.neg(ppf(q, lax.neg(loc), scale))

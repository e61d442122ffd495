"""ember.scipy.stats.uniform (jax.scipy.stats.uniform): the uniform distribution on
[loc, loc + scale]."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
  """-log(scale) on the support (both ends included), -inf off it, NaN for a NaN z."""
  x, loc, scale = util.promote_args_inexact("uniform.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  zero, one = _const(z, 0), _const(z, 1)
  outside = jnp.logical_or(lax.lt(z, zero), lax.gt(z, one))
  inside = jnp.logical_and(lax.ge(z, zero), lax.le(z, one))
  return jnp.select([outside, inside], [-np.inf, lax.neg(lax.log(scale))], np.nan)


def pdf(x, loc=0, scale=1):
  """The uniform density, exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """(x - loc) / scale clipped to [0, 1]."""
  x, loc, scale = util.promote_args_inexact("uniform.cdf", x, loc, scale)
  return jnp.clip(lax.div(lax.sub(x, loc), scale), 0, 1)


def ppf(q, loc=0, scale=1):
  """loc + scale * q, NaN for q outside [0, 1]."""
  q, loc, scale = util.promote_args_inexact("uniform.ppf", q, loc, scale)
  bad = jnp.isnan(q) | lax.lt(q, _const(q, 0)) | lax.gt(q, _const(q, 1))
  return jnp.where(bad, np.nan, lax.add(loc, lax.mul(scale, q)))

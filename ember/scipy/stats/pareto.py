"""ember.scipy.stats.pareto (jax.scipy.stats.pareto): the Pareto distribution with shape
`b` on [loc + scale, inf)."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf"]


def _standardize(name, x, b, loc, scale):
  """(z, below, z with the points below the support replaced by 1, b, scale)."""
  x, b, loc, scale = util.promote_args_inexact(name, x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  below = lax.lt(z, _const(z, 1))
  return z, below, jnp.where(below, _const(z, 1), z), b, scale


def logpdf(x, b, loc=0, scale=1):
  """log(b / scale) - (b + 1) log(z) for z >= 1, -inf below."""
  _, below, safe_z, b, scale = _standardize("pareto.logpdf", x, b, loc, scale)
  one = _const(safe_z, 1)
  log_probs = lax.neg(lax.add(lax.log(lax.div(scale, b)),
                              lax.mul(lax.add(b, one), lax.log(safe_z))))
  return jnp.where(below, -np.inf, log_probs)


def pdf(x, b, loc=0, scale=1):
  """The Pareto density, exp(logpdf)."""
  return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  """1 - z^-b for z >= 1, 0 below."""
  _, below, safe_z, b, _ = _standardize("pareto.cdf", x, b, loc, scale)
  one = _const(safe_z, 1)
  return jnp.where(below, _const(safe_z, 0), lax.sub(one, lax.pow(safe_z, lax.neg(b))))


def logcdf(x, b, loc=0, scale=1):
  """log1p(-z^-b) for z >= 1, -inf below (z = 2 stands in there: no log(0) under grad)."""
  z, below, _, b, _ = _standardize("pareto.logcdf", x, b, loc, scale)
  safe_z = jnp.where(below, _const(z, 2), z)
  return jnp.where(below, -np.inf, lax.log1p(lax.neg(lax.pow(safe_z, lax.neg(b)))))


def logsf(x, b, loc=0, scale=1):
  """-b log(z) for z >= 1, 0 below."""
  _, below, safe_z, b, _ = _standardize("pareto.logsf", x, b, loc, scale)
  return jnp.where(below, _const(safe_z, 0), lax.neg(lax.mul(b, lax.log(safe_z))))


def sf(x, b, loc=0, scale=1):
  """exp(logsf)."""
  return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
  """loc + scale (1 - q)^(-1/b), NaN for q outside [0, 1]."""
  q, b, loc, scale = util.promote_args_inexact("pareto.ppf", q, b, loc, scale)
  one = _const(q, 1)
  bad = jnp.isnan(q) | lax.lt(q, _const(q, 0)) | lax.gt(q, one)
  safe_q = jnp.where(bad, _const(q, 0.5), q)
  quantile = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, safe_q), lax.neg(lax.div(one, b)))))
  return jnp.where(bad, np.nan, quantile)

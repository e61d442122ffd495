"""ember.scipy.stats.truncnorm (jax.scipy.stats.truncnorm): the normal distribution truncated
to [a, b] in standardized units ((x - loc) / scale)."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember.scipy import special
from ember.scipy.stats import norm

__all__ = ["logpdf", "pdf", "logcdf", "cdf", "logsf", "sf"]


def _log_diff(x, y):
  """log(exp(x) - exp(y)) for x >= y, without leaving log space."""
  return special.logsumexp(jnp.array([x, y]), axis=0,
                           b=jnp.array([jnp.ones_like(x), -jnp.ones_like(y)]))


def _log_gauss_mass(a, b):
  """log(Phi(b) - Phi(a)) for a <= b: in log space from the tail on the same side of 0 as
  the interval (mirrored for a > 0), as log1p(-Phi(a) - Phi(-b)) for an interval around 0."""
  a, b = jnp.broadcast_arrays(jnp.asarray(a), jnp.asarray(b))
  left, right = b <= 0, a > 0
  central = ~(left | right)
  lo, hi = jnp.where(right, -b, a), jnp.where(right, -a, b)
  tail_mass = _log_diff(special.log_ndtr(hi), special.log_ndtr(lo))
  central_mass = jnp.log1p(-special.ndtr(a) - special.ndtr(-b))
  return jnp.where(central, central_mass, tail_mass)


@jit
def logpdf(x, a, b, loc=0, scale=1):
  """norm.logpdf(x, loc, scale) - log(Phi(b) - Phi(a)) on [a, b], -inf off it, NaN unless
  a < b."""
  x, a, b, loc, scale = util.promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
  val = lax.sub(norm.logpdf(x, loc, scale), _log_gauss_mass(a, b))
  z = lax.div(lax.sub(x, loc), scale)
  val = jnp.where((z < a) | (z > b), -np.inf, val)
  return jnp.where(a < b, val, np.nan)


def pdf(x, a, b, loc=0, scale=1):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, a, b, loc, scale))


@jit
def logcdf(x, a, b, loc=0, scale=1):
  """log((Phi(z) - Phi(a)) / (Phi(b) - Phi(a))); near 1 (above -0.1) as log1p(-sf), which
  keeps the upper tail's precision; 0 from b on, -inf up to a, NaN unless a < b."""
  x, a, b, loc, scale = util.promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = jnp.broadcast_arrays(x, a, b)
  z = lax.div(lax.sub(x, loc), scale)
  log_mass = _log_gauss_mass(a, b)
  log_cdf = _log_gauss_mass(a, z) - log_mass
  log_sf = _log_gauss_mass(z, b) - log_mass
  out = jnp.select([z >= b, z <= a, log_cdf > -0.1, z > a],
                   [0, -np.inf, jnp.log1p(-jnp.exp(log_sf)), log_cdf], np.nan)
  return jnp.where(a < b, out, np.nan)


@jit
def cdf(x, a, b, loc=0, scale=1):
  """exp(logcdf)."""
  return lax.exp(logcdf(x, a, b, loc, scale))


@jit
def logsf(x, a, b, loc=0, scale=1):
  """logcdf of the mirrored distribution: logcdf(-x, -b, -a, -loc, scale)."""
  x, a, b, loc, scale = util.promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


@jit
def sf(x, a, b, loc=0, scale=1):
  """exp(logsf)."""
  return lax.exp(logsf(x, a, b, loc, scale))

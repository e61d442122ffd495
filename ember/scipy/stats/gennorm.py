"""ember.scipy.stats.gennorm (jax.scipy.stats.gennorm): the generalized normal distribution
with shape `beta`. Provided: logpdf, pdf, cdf."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, beta):
  """log(beta / 2) - lgamma(1 / beta) - |x|^beta."""
  x, beta = util.promote_args_inexact("gennorm.logpdf", x, beta)
  log_normalizer = lax.sub(lax.log(lax.mul(_const(x, 0.5), beta)),
                           lax.lgamma(lax.div(_const(x, 1), beta)))
  return lax.sub(log_normalizer, lax.pow(lax.abs(x), beta))


def pdf(x, beta):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, beta))


def cdf(x, beta):
  """(1 + sign(x) gammainc(1 / beta, |x|^beta)) / 2."""
  x, beta = util.promote_args_inexact("gennorm.cdf", x, beta)
  p = special.gammainc(lax.div(_const(x, 1), beta), lax.pow(lax.abs(x), beta))
  return lax.mul(_const(x, 0.5), lax.add(_const(x, 1), lax.mul(lax.sign(x), p)))

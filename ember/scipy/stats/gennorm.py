"""ember.scipy.stats.gennorm (jax.scipy.stats.gennorm): the generalized normal distribution
with shape `beta`. Provided: logpdf, pdf. Not yet: cdf (it needs the regularized
incomplete gamma function)."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf"]


def logpdf(x, beta):
  """log(beta / 2) - lgamma(1 / beta) - |x|^beta."""
  x, beta = util.promote_args_inexact("gennorm.logpdf", x, beta)
  log_normalizer = lax.sub(lax.log(lax.mul(_const(x, 0.5), beta)),
                           lax.lgamma(lax.div(_const(x, 1), beta)))
  return lax.sub(log_normalizer, lax.pow(lax.abs(x), beta))


def pdf(x, beta):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, beta))

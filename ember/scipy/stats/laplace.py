"""ember.scipy.stats.laplace (jax.scipy.stats.laplace): the Laplace (double exponential)
distribution; JAX 0.12 provides logpdf, pdf and cdf."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf", "cdf"]


def logpdf(x, loc=0, scale=1):
  """-|x - loc| / scale - log(2 scale)."""
  x, loc, scale = util.promote_args_inexact("laplace.logpdf", x, loc, scale)
  linear = lax.div(lax.abs(lax.sub(x, loc)), scale)
  return lax.neg(lax.add(linear, lax.log(lax.mul(_const(x, 2), scale))))


def pdf(x, loc=0, scale=1):
  """The Laplace density, exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """exp(-|z|) / 2 below loc, 1 - exp(-|z|) / 2 above: only exp(-|z|) is formed, so
  neither branch overflows (no NaN gradients in the tails)."""
  x, loc, scale = util.promote_args_inexact("laplace.cdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  half_tail = lax.mul(_const(x, 0.5), lax.exp(lax.neg(lax.abs(z))))
  return lax.select(lax.lt(z, _const(z, 0)), half_tail, lax.sub(_const(x, 1), half_tail))

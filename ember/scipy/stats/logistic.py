"""ember.scipy.stats.logistic (jax.scipy.stats.logistic): the logistic distribution, built
on expit/logit."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpdf", "pdf", "cdf", "sf", "ppf", "isf"]


def _standardize(name, x, loc, scale):
  x, loc, scale = util.promote_args_inexact(name, x, loc, scale)
  return lax.div(lax.sub(x, loc), scale), loc, scale


def logpdf(x, loc=0, scale=1):
  """-2 logaddexp(z/2, -z/2) - log(scale): symmetric in z, so neither tail overflows."""
  z, _, scale = _standardize("logistic.logpdf", x, loc, scale)
  half_z = lax.div(z, _const(z, 2))
  return lax.sub(lax.mul(_const(z, -2), jnp.logaddexp(half_z, lax.neg(half_z))),
                 lax.log(scale))


def pdf(x, loc=0, scale=1):
  """The logistic density, exp(logpdf)."""
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  """expit(z)."""
  z, _, _ = _standardize("logistic.cdf", x, loc, scale)
  return special.expit(z)


def sf(x, loc=0, scale=1):
  """expit(-z) (no 1 - cdf cancellation)."""
  z, _, _ = _standardize("logistic.sf", x, loc, scale)
  return special.expit(lax.neg(z))


def ppf(x, loc=0, scale=1):
  """logit(q) * scale + loc (the argument is named x, as in JAX)."""
  q, loc, scale = util.promote_args_inexact("logistic.ppf", x, loc, scale)
  return lax.add(lax.mul(special.logit(q), scale), loc)


def isf(x, loc=0, scale=1):
  """-logit(q) * scale + loc."""
  q, loc, scale = util.promote_args_inexact("logistic.isf", x, loc, scale)
  return lax.add(lax.mul(lax.neg(special.logit(q)), scale), loc)

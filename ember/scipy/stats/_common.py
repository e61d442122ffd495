"""Helpers shared by the distribution modules."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember._src.transforms.custom_derivatives import custom_jvp


@custom_jvp
def log1mexp(z):
  """log(1 - exp(-z)) for z >= 0 (Maechler 2012, as jax.nn.log1mexp): log(-expm1(-z)) below
  log 2, log1p(-exp(-z)) above. (ember.nn imports ember.scipy, so it is not imported here.)"""
  small = lax.lt(z, _const(z, np.log(2)))
  return jnp.where(small, lax.log(lax.neg(lax.expm1(lax.neg(z)))),
                   lax.log1p(lax.neg(lax.exp(lax.neg(z)))))


# d/dz = 1 / expm1(z): inf at z = 0 as in JAX (the chain rule through both branches gives NaN)
log1mexp.defjvps(lambda g, ans, z: lax.div(g, lax.expm1(z)))


def standardize(name, x, loc, scale):
  """Promote as JAX does and return (z = (x - loc) / scale, x, loc, scale)."""
  x, loc, scale = util.promote_args_inexact(name, x, loc, scale)
  return lax.div(lax.sub(x, loc), scale), x, loc, scale


def nan_unless_positive(scale, value):
  """value where scale > 0, NaN elsewhere."""
  return jnp.where(lax.gt(scale, _const(scale, 0)), value, np.nan)


def clamped(x, loc, scale, lo, hi, divisor=1):
  """(x - loc) / (scale * divisor) clamped to [lo, hi] (the argument of a cdf or sf)."""
  den = scale if divisor == 1 else lax.mul(scale, _const(scale, divisor))
  return lax.clamp(_const(x, lo), lax.div(lax.sub(x, loc), den), _const(x, hi))

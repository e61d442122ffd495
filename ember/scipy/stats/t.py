"""ember.scipy.stats.t (jax.scipy.stats.t): Student's t with `df` degrees of freedom, `loc`
and `scale` broadcasting against `x`. JAX 0.12 provides logpdf and pdf only."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpdf", "pdf"]


def logpdf(x, df, loc=0, scale=1):
  """-(B(df/2, 1/2) + log(df)/2 + log(scale)) - (df + 1)/2 * log1p(z^2 / df), z the
  standardized x (log1p keeps the tails of large df accurate)."""
  x, df, loc, scale = util.promote_args_inexact("t.logpdf", x, df, loc, scale)
  half, two = _const(x, 0.5), _const(x, 2)
  z = lax.div(lax.sub(x, loc), scale)
  half_df = lax.div(df, two)
  normalizer = lax.add(special.betaln(half_df, half),
                       lax.add(lax.div(lax.log(df), two), lax.log(scale)))
  tail = lax.mul(lax.add(half_df, half), lax.log1p(lax.div(lax.mul(z, z), df)))
  return lax.neg(lax.add(normalizer, tail))


def pdf(x, df, loc=0, scale=1):
  """The t density, exp(logpdf)."""
  return lax.exp(logpdf(x, df, loc, scale))

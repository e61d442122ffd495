"""ember.scipy.stats.multinomial (jax.scipy.stats.multinomial): counts `x` (last axis) of
`n` trials over categories with probabilities `p`."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpmf", "pmf"]


def logpmf(x, n, p):
  """lgamma(n + 1) + sum(x log p - lgamma(x + 1)) where the counts sum to n, -inf elsewhere.
  x and n must be integers (JAX's rule)."""
  util.check_arraylike("multinomial.logpmf", x, n, p)
  p, = util.promote_dtypes_inexact(p)
  x, n = util.promote_dtypes_numeric(x, n)
  if not np.issubdtype(x.dtype, np.integer):
    raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                     f"n.dtype={n.dtype}")
  in_support = jnp.equal(jnp.sum(x, axis=-1, dtype=x.dtype), n)
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  log_probs = special.gammaln(n + 1) + jnp.sum(special.xlogy(x, p) - special.gammaln(x + 1),
                                               axis=-1)
  return jnp.where(in_support, log_probs, -np.inf)


def pmf(x, n, p):
  """exp(logpmf)."""
  return lax.exp(logpmf(x, n, p))

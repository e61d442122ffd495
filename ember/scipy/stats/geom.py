"""ember.scipy.stats.geom (jax.scipy.stats.geom): the number of trials up to and including
the first success, success probability `p`."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpmf", "pmf"]


def logpmf(k, p, loc=0):
  """(x - 1) log1p(-p) + log(p) at integers x = k - loc >= 1, -inf elsewhere."""
  k, p, loc = util.promote_args_inexact("geom.logpmf", k, p, loc)
  zero, one = _const(k, 0), _const(k, 1)
  x = lax.sub(k, loc)
  log_probs = lax.add(special.xlog1py(lax.sub(x, one), lax.neg(p)), lax.log(p))
  off_support = jnp.logical_or(lax.le(x, zero), lax.ne(lax.rem(x, one), zero))
  return jnp.where(off_support, -np.inf, log_probs)


def pmf(k, p, loc=0):
  """exp(logpmf)."""
  return lax.exp(logpmf(k, p, loc))

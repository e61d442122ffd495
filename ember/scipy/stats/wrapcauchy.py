"""ember.scipy.stats.wrapcauchy (jax.scipy.stats.wrapcauchy): the wrapped Cauchy
distribution on [0, 2 pi] with shape `c` in (0, 1)."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf"]


def logpdf(x, c):
  """log(1 - c^2) - log(2 pi) - log(1 + c^2 - 2 c cos x) on [0, 2 pi], -inf off it, NaN for
  c outside (0, 1)."""
  x, c = util.promote_args_inexact("wrapcauchy.logpdf", x, c)
  one = _const(c, 1)
  c2 = lax.mul(c, c)
  log_probs = lax.sub(lax.sub(lax.log(lax.sub(one, c2)), _const(x, np.log(2 * np.pi))),
                      lax.log(lax.sub(lax.add(one, c2),
                                      lax.mul(lax.mul(_const(c, 2), c), lax.cos(x)))))
  on_circle = lax.ge(x, _const(x, 0)) & lax.le(x, _const(x, 2 * np.pi))
  good_c = lax.gt(c, _const(c, 0)) & lax.lt(c, one)
  return jnp.where(good_c, jnp.where(on_circle, log_probs, -np.inf), np.nan)


def pdf(x, c):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, c))

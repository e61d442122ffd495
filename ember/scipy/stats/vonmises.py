"""ember.scipy.stats.vonmises (jax.scipy.stats.vonmises): the von Mises distribution on the
circle with concentration `kappa`."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const

__all__ = ["logpdf", "pdf"]


def logpdf(x, kappa):
  """kappa (cos(x) - 1) - log(2 pi) - log(i0e(kappa)) for kappa >= 0 (i0e, the scaled
  Bessel function, keeps large kappa finite), NaN for negative kappa."""
  x, kappa = util.promote_args_inexact("vonmises.logpdf", x, kappa)
  log_probs = lax.sub(lax.sub(lax.mul(kappa, lax.sub(lax.cos(x), lax.sign(kappa))),
                              _const(x, np.log(2 * np.pi))),
                      lax.log(lax.bessel_i0e(kappa)))
  return jnp.where(lax.ge(kappa, _const(kappa, 0)), log_probs, np.nan)


def pdf(x, kappa):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, kappa))

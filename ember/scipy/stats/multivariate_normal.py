"""ember.scipy.stats.multivariate_normal (jax.scipy.stats.multivariate_normal): the normal
distribution of vectors along the last axis, with a scalar `mean`/`cov`, a scalar variance
for vector means, or a full covariance matrix (Cholesky-factored; batch axes broadcast)."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.lax.linalg import cholesky
from ember._src.primitives.decompositions import triangular_solve
from ember._src.library.numpy import util

__all__ = ["logpdf", "pdf"]

_LOG_2PI = float(np.log(2 * np.pi))


def _whiten(chol, y):
  """L^-1 y for the lower Cholesky factor L, over the broadcast batch axes of both."""
  batch = util.broadcast_shapes(chol.shape[:-2], y.shape[:-1])
  chol = jnp.broadcast_to(chol, batch + chol.shape[-2:])
  y = jnp.broadcast_to(y, batch + y.shape[-1:])
  return triangular_solve(chol, y[..., None], left_side=True, lower=True)[..., 0]


def _full_cov_logpdf(x, mean, cov):
  n = mean.shape[-1]
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes")
  chol = cholesky(cov)
  y = _whiten(chol, x - mean)
  half_log_det = jnp.sum(jnp.log(jnp.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
  return -0.5 * jnp.sum(y * y, axis=-1) - n / 2 * _LOG_2PI - half_log_det


def logpdf(x, mean, cov, allow_singular=None):
  """log N(x; mean, cov). A scalar `mean` makes it univariate (`cov` the variance); a vector
  mean with a scalar `cov` means cov * I; else `cov` is (..., n, n), factored by Cholesky
  (-log det / 2 = -sum log diag L). allow_singular is not supported, as in JAX."""
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
  x, mean, cov = util.promote_dtypes_inexact(x, mean, cov)
  if not mean.shape:
    return -0.5 * jnp.square(x - mean) / cov - 0.5 * (_LOG_2PI + jnp.log(cov))
  if not cov.shape:
    n = mean.shape[-1]
    y = x - mean
    return -0.5 * jnp.sum(y * y, axis=-1) / cov - n / 2 * (_LOG_2PI + jnp.log(cov))
  return _full_cov_logpdf(x, mean, cov)


def pdf(x, mean, cov):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, mean, cov))

"""ember.scipy.stats.dirichlet (jax.scipy.stats.dirichlet): the Dirichlet distribution on the
simplex; the components of x run along its first axis."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.ufuncs import _const
from ember.scipy import special

__all__ = ["logpdf", "pdf"]


def _on_simplex(x):
  """All components positive and summing to 1 within 1e-6 (JAX's tolerance)."""
  return jnp.all(x > 0, axis=0) & (jnp.abs(jnp.sum(x, axis=0) - 1) < 1e-6)


def _check_shapes(x, alpha):
  if alpha.ndim != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
  if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` or one "
                     f"entry fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")


def logpdf(x, alpha):
  """sum((alpha - 1) log x) - (sum lgamma(alpha) - lgamma(sum alpha)) on the simplex, -inf
  off it. x may leave out its last component (taken as 1 - the sum of the others)."""
  x, alpha = util.promote_dtypes_inexact(x, alpha)
  _check_shapes(x, alpha)
  one = _const(x, 1)
  if x.shape[0] != alpha.shape[0]:
    x = jnp.concatenate([x, lax.sub(one, jnp.sum(x, axis=0, keepdims=True))], axis=0)
  log_normalizer = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
  alpha = jnp.reshape(alpha, alpha.shape + (1,) * (x.ndim - 1))
  log_probs = lax.sub(jnp.sum(special.xlogy(lax.sub(alpha, one), x), axis=0), log_normalizer)
  return jnp.where(_on_simplex(x), log_probs, -np.inf)


def pdf(x, alpha):
  """exp(logpdf)."""
  return lax.exp(logpdf(x, alpha))

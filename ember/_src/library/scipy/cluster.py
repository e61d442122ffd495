"""jax.scipy.cluster.vq: vq, each observation's nearest code-book entry and its distance."""
from __future__ import annotations

from ember._src.library.numpy import util
from ember._src.library.scipy import _jnp as jnp

__all__ = ["vq"]


def vq(obs, code_book, check_finite=True):
  """(code, distance): the index of the code-book row nearest to each row of obs (Euclidean)
  and that distance (scipy.cluster.vq.vq). 1-d inputs are rows of one feature."""
  del check_finite   # no effect, as in JAX
  util.check_arraylike("scipy.cluster.vq.vq", obs, code_book)
  obs, book = util.promote_dtypes_inexact(jnp.asarray(obs), jnp.asarray(code_book))
  if obs.ndim != book.ndim:
    raise ValueError("Observation and code_book should have the same rank")
  if obs.ndim == 1:
    obs, book = obs[:, None], book[:, None]
  if obs.ndim != 2:
    raise ValueError("ndim different than 1 or 2 are not supported")
  dist = jnp.linalg.norm(obs[:, None, :] - book[None, :, :], axis=-1)
  code = jnp.argmin(dist, axis=-1)
  return code, jnp.take_along_axis(dist, code[:, None], axis=-1)[:, 0]

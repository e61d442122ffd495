"""The parts of lax.linalg written with jnp: `cholesky`/`eigh`, which symmetrize their
input (their derivative rules: library/lax/linalg_derivatives.py). A library above the primitives
(they cannot import jnp).
"""
from __future__ import annotations

import operator

from ember._src.base.dtypes import dtype_kind
from ember._src.library.numpy import util
from ember._src.library.numpy.creation import asarray, tril
from ember._src.library.numpy.shape import swapaxes
from ember._src.library.numpy.ufuncs import conj
from ember._src.primitives.decompositions import cholesky_p, eigh_p

__all__ = ["cholesky", "eigh", "symmetrize"]


def _H(x):
  return conj(swapaxes(x, -1, -2))


def _promote_float(x):
  """lax.linalg's cholesky/eigh accept integer input (symmetrize divides by 2.0, which
  promotes them to the default float type in JAX)."""
  x = asarray(x)
  if dtype_kind(x.dtype) in "biu":
    x, = util.promote_dtypes_inexact(x)
  return x


def symmetrize(x):
  """(x + x^H) / 2: the matrices' Hermitian part."""
  return (x + _H(x)) / 2


def cholesky(x, *, symmetrize_input: bool = True):
  """The lower Cholesky factor L (x = L L^H) of each matrix; NaN where x is not positive
  definite."""
  x = _promote_float(x)
  if symmetrize_input:
    x = symmetrize(x)
  return tril(cholesky_p.bind(x))


def eigh(x, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index=None):
  """(v, w): eigenvectors (columns) and ascending eigenvalues of Hermitian matrices."""
  x = _promote_float(x)
  if symmetrize_input:
    x = symmetrize(x)
  if subset_by_index is not None:
    subset_by_index = tuple(operator.index(i) for i in subset_by_index)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=subset_by_index, algorithm=None)
  return v, w

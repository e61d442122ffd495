"""The parts of lax.linalg written with jnp: `cholesky`/`eigh`, which symmetrize their
input (their derivative rules: library/lax/linalg_derivatives.py), and `symmetric_product`,
which may symmetrize its output. A library above the primitives (they cannot import jnp).
"""
from __future__ import annotations

import operator

from ember._src.base.dtypes import dtype_kind
from ember._src.library.numpy import util
from ember._src.library.numpy.creation import asarray, tril
from ember._src.library.numpy.shape import swapaxes
from ember._src.library.numpy.ufuncs import conj
from ember._src.primitives.decompositions import EighImplementation, cholesky_p, eigh_p
from ember._src.primitives.linalg_forms import symmetric_product_p

__all__ = ["cholesky", "eigh", "symmetrize", "symmetric_product"]


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
         sort_eigenvalues: bool = True, subset_by_index=None, implementation=None):
  """(v, w): eigenvectors (columns) and ascending eigenvalues of Hermitian matrices
  (`implementation`: None or QR, LAPACK's syevd on the CPU)."""
  if implementation == EighImplementation.JACOBI:   # JAX's CPU errors
    raise NotImplementedError("Jacobi implementation is not supported on CPU")
  if implementation == EighImplementation.QDWH:
    raise NotImplementedError("QDWH implementation is only supported on TPU")
  if implementation not in (None, EighImplementation.QR):
    raise ValueError(f"eigh: unknown implementation {implementation!r}")
  x = _promote_float(x)
  if symmetrize_input:
    x = symmetrize(x)
  if subset_by_index is not None:
    subset_by_index = tuple(operator.index(i) for i in subset_by_index)
  v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                     subset_by_index=subset_by_index, algorithm=implementation)
  return v, w


def symmetric_product(a_matrix, c_matrix, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False):
  """alpha a a^T + beta c for symmetric c; `symmetrize_output`: the lower triangle mirrored
  into the upper one, so the result is exactly symmetric."""
  out = symmetric_product_p.bind(a_matrix, c_matrix, alpha=alpha, beta=beta)
  if symmetrize_output:
    out = tril(out) + swapaxes(tril(out, -1), -1, -2)
  return out

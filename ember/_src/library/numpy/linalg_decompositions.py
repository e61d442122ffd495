"""ember.numpy.linalg's matrix decompositions (jax/_src/numpy/linalg.py), on the primitives
of ember/_src/primitives/decompositions.py: cholesky, qr, eigh, eig, eigvals, eigvalsh, svd
and svdvals, with the result types of ember.numpy.linalg (EigResult, EighResult, QRResult,
SVDResult, SlogdetResult), the argument checks every jnp.linalg function shares
(`_inexact_arg`, `_square_arg`) and the conjugate transpose `_H` with the matrix_transpose
it is built on. linalg_norms.py and linalg_solvers.py are built on these.
"""
from __future__ import annotations

import collections
from functools import partial

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.lax import linalg as lax_linalg
from ember._src.driver.jit import jit
from ember._src.library.numpy import indexing, sorting, ufuncs, util
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.primitives import decompositions


def matrix_transpose(x, /):
  """Swap the last two axes."""
  x = asarray_arg("jnp.linalg.matrix_transpose", x)
  ndim = aval(x).ndim
  if ndim < 2:
    raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={ndim}")
  return lax.transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


class EigResult(collections.namedtuple("EigResult", ["eigenvalues", "eigenvectors"])):
  __slots__ = ()


class EighResult(collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])):
  __slots__ = ()


class QRResult(collections.namedtuple("QRResult", ["Q", "R"])):
  __slots__ = ()


class SVDResult(collections.namedtuple("SVDResult", ["U", "S", "Vh"])):
  __slots__ = ()


class SlogdetResult(collections.namedtuple("SlogdetResult", ["sign", "logabsdet"])):
  __slots__ = ()


def _inexact_arg(fun_name, a):
  a, = util.promote_dtypes_inexact(asarray_arg(f"jnp.linalg.{fun_name}", a))
  return a


def _square_arg(fun_name, a, label=None):
  """a as an inexact array of shape [..., n, n] (JAX's message names `label`)."""
  a = _inexact_arg(fun_name, a)
  shape = aval(a).shape
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to {label or fun_name} must have shape [..., n, n], got "
                     f"{shape}.")
  return a


def _H(x):
  return lax.conj(matrix_transpose(x)) if dtypes.is_complex(aval(x).dtype) else \
      matrix_transpose(x)


@partial(jit, static_argnames=("upper", "symmetrize_input"))
def cholesky(a, *, upper=False, symmetrize_input=True):
  """The Cholesky factor of Hermitian positive-definite matrices: L (a = L L^H), or U =
  L^H with upper=True; NaN where a is not positive definite."""
  a = _square_arg("cholesky", a, "linalg.cholesky")
  L = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return _H(L) if upper else L


@partial(jit, static_argnames=("mode",))
def qr(a, mode="reduced"):
  """QRResult(Q, R) (mode 'reduced' or 'complete'), or R alone (mode 'r')."""
  a = _inexact_arg("qr", a)
  if mode not in ("reduced", "complete", "r"):
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'" +
                     (": ember does not provide mode='raw'" if mode == "raw" else ""))
  q, r = decompositions.qr(a, full_matrices=mode == "complete")
  return r if mode == "r" else QRResult(q, r)


@partial(jit, static_argnames=("UPLO", "symmetrize_input"))
def eigh(a, UPLO=None, symmetrize_input=True):
  """EighResult(eigenvalues ascending, eigenvectors as columns) of Hermitian matrices."""
  a = _square_arg("eigh", a, "linalg.eigh")
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


@jit
def eig(a):
  """EigResult(eigenvalues, right eigenvectors as unit columns) of general square
  matrices, complex. Only the eigenvalues can be differentiated (as JAX by default)."""
  a = _square_arg("eig", a, "linalg.eig")
  w, v = decompositions.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


@jit
def eigvals(a):
  """The (complex) eigenvalues of general square matrices."""
  a = _square_arg("eigvals", a, "linalg.eig")
  return decompositions.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


@partial(jit, static_argnames=("UPLO", "symmetrize_input"))
def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
  """The ascending eigenvalues of Hermitian matrices."""
  return eigh(a, UPLO, symmetrize_input).eigenvalues


@partial(jit, static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"))
def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
  """SVDResult(U, S descending, Vh) with a = U diag(S) Vh, or S alone."""
  a = _inexact_arg("svd", a)
  if hermitian:   # JAX's route: eigh, |w| descending, the eigenvalues' signs in Vh
    w, v = eigh(a)
    order = sorting.argsort(-lax.abs(w), axis=-1)
    s = indexing.take_along_axis(lax.abs(w), order, axis=-1)
    if not compute_uv:
      return s
    sign = indexing.take_along_axis(ufuncs.sign(w), order, axis=-1)
    u = indexing.take_along_axis(v, order[..., None, :], axis=-1)
    vh = _H(u * sign[..., None, :].astype(u.dtype))
    return SVDResult(u, s, vh)
  out = decompositions.svd(a, full_matrices=full_matrices, compute_uv=compute_uv,
                   subset_by_index=subset_by_index)
  return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
  """The singular values, descending."""
  return svd(x, compute_uv=False)

"""jax.experimental.sparse.linalg: `lobpcg_standard` (the top-k eigenpairs of a Hermitian
operator by LOBPCG, JAX's variant: SVQB orthonormalization, an orthonormal block basis,
Householder-extended starting directions) and `spsolve` (a CSR linear solve; JAX's CPU path
calls SciPy's direct solver, ember solves the dense system, which gives the same solution).
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, logic, reductions, shape as shape_ops
from ember._src.library.numpy.linalg_decompositions import eigh, qr, svd
from ember._src.library.numpy.linalg_norms import norm
from ember._src.library.numpy.linalg_solvers import solve
from ember._src.library.sparse.coo_csr import COOInfo, _coo_todense, csr_rows
from ember._src.primitives.control import while_loop

_HIGHEST = lax.Precision.HIGHEST


def _mm(a, b):
  return lax.dot(a, b, precision=(_HIGHEST, _HIGHEST))


def _col_norms(x):
  return norm(x, ord=2, axis=0, keepdims=True)


def _eigh_descending(a):
  w, v = eigh(a)
  return w[::-1], v[:, ::-1]


def _svqb(x):
  """Orthonormal columns spanning x (SVQB: eigenbasis of x.T x); directions of numerical
  rank deficiency come out as zero columns."""
  norms = _col_norms(x)
  x = x / logic.where(norms == 0, 1.0, norms)
  inner = _mm(x.T, x)
  w, v = _eigh_descending(inner)
  tau = np.finfo(x.dtype).eps * w[0]
  scale = logic.where(tau > 0, reductions.max(shape_ops.stack(
      [w, shape_ops.broadcast_to(tau, w.shape)]), axis=0), 1.0) ** -0.5
  ortho = _mm(x, v * scale[None, :])
  keep = ((w > tau) & (reductions.diagonal(inner) > 0.0))[None, :]
  ortho = ortho * keep.astype(ortho.dtype)
  norms = _col_norms(ortho)
  keep = keep & (norms > 0.0)
  return ortho / logic.where(keep, norms, 1.0)


def _orthonormalize(basis):
  return _svqb(_svqb(basis))


def _project_out(basis, u):
  """u's component orthogonal to the (orthonormal) basis, orthonormalized; columns that
  mostly lay in the basis are zeroed (orthogonality wins over rank)."""
  for _ in range(2):
    u = u - _mm(basis, _mm(basis.T, u))
    u = _orthonormalize(u)
  for _ in range(2):
    u = u - _mm(basis, _mm(basis.T, u))
  return u * (_col_norms(u) >= 0.99).astype(u.dtype)


def _extend_basis(x, m):
  """m orthonormal directions orthogonal to the orthonormal x, from a block Householder
  reflector (deterministic, no overlap with x)."""
  n, k = x.shape
  upper, lower = x[:k], x[k:]
  u, s, vt = svd(upper)
  y = shape_ops.concatenate([upper + _mm(u, vt), lower], axis=0)
  other = shape_ops.concatenate([creation.eye(m, dtype=x.dtype),
                                 creation.zeros((n - k - m, m), x.dtype)], axis=0)
  w = _mm(y, vt.T * ((2 * (1 + s)) ** -0.5)[None, :])
  h = -2 * _mm(_mm(w, w[k:, :].T), other)
  return h.at[k:].add(other)


def _check_inputs(A, X):
  n, k = X.shape
  if k == 0:
    raise ValueError(f"must have search dim > 0, got {k}")
  if k * 5 >= n:
    raise ValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})")
  probe = A(creation.zeros((n, 1), X.dtype))
  if probe.dtype != X.dtype:
    raise ValueError(f"A, X must have same dtypes (were {probe.dtype}, {X.dtype})")
  if tuple(probe.shape) != (n, 1):
    raise ValueError(f"A must be ({n}, {n}) matrix A, got output {tuple(probe.shape)}")


def lobpcg_standard(A, X, m: int = 100, tol=None):
  """The k largest eigenvalues `theta` and eigenvectors `U` of the Hermitian `A` (an (n, n)
  array or a function applying it) from the starting block X (n, k), and the iteration
  count: `theta, U, i`. Converged when every residual |A u - theta u| is below
  tol * 10 * n * (theta + |A u|) (tol: the dtype's epsilon by default), or after m steps."""
  if callable(A) and not hasattr(A, "shape"):
    return _lobpcg_callable(A, X, m, tol)
  A = creation.asarray(A)
  return _lobpcg_matrix(A, X, m, tol)


@functools.partial(jit, static_argnames=("m",))
def _lobpcg_matrix(A, X, m, tol):
  return _lobpcg(functools.partial(_mm, A), X, m, tol)


@functools.partial(jit, static_argnames=("A", "m"))
def _lobpcg_callable(A, X, m, tol):
  return _lobpcg(A, X, m, tol)


def _lobpcg(A, X, m, tol):
  X = creation.asarray(X)
  n, k = X.shape
  _check_inputs(A, X)
  tol = float(np.finfo(X.dtype).eps) if tol is None else tol
  X = _orthonormalize(X)
  P = _extend_basis(X, k)
  AX = A(X)
  theta = reductions.sum(X * AX, axis=0, keepdims=True)
  R = AX - theta * X

  def cond(state):
    i, _, _, _, converged, _ = state
    return (i < m) & (converged < k)

  def body(state):
    i, X, P, R, _, theta = state
    R = _project_out(shape_ops.concatenate((X, P), axis=1), R)
    XPR = shape_ops.concatenate((X, P, R), axis=1)
    theta, Q = _eigh_descending(_mm(XPR.T, A(XPR)))    # Rayleigh-Ritz in the basis
    B = Q[:, :k]
    B = B / _col_norms(B)
    X = _mm(XPR, B)
    X = X / _col_norms(X)
    q, _ = qr(Q[:k, k:].T)
    P = _mm(XPR, _mm(Q[:, k:], q))
    normP = _col_norms(P)
    P = P / logic.where(normP == 0, 1.0, normP)
    AX = A(X)
    R = AX - theta[None, :k] * X
    reltol = (norm(AX, ord=2, axis=0) + theta[:k]) * n * 10
    converged = reductions.sum(norm(R, ord=2, axis=0) < tol * reltol).astype(np.int32)
    return i + 1, X, P, R, converged, theta[None, :k]

  state = (np.int32(0), X, P, R, np.int32(0), theta)
  i, X, _, _, _, theta = while_loop(cond, body, state)
  return theta[0, :], X, i


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
  """The solution x of A x = b for the square CSR matrix A = (data, indices, indptr)."""
  data, indices, indptr, b = (creation.asarray(a) for a in (data, indices, indptr, b))
  if data.dtype != b.dtype:
    raise ValueError(f"data types do not match: data.dtype={data.dtype} b.dtype={b.dtype}")
  if not data.ndim == indices.ndim == indptr.ndim == b.ndim == 1:
    raise ValueError("Arrays must be one-dimensional. Got data.shape="
                     f"{tuple(data.shape)} indices.shape={tuple(indices.shape)} indptr.shape="
                     f"{tuple(indptr.shape)} b.shape={tuple(b.shape)}")
  if indptr.size != b.size + 1 or data.shape != indices.shape:
    raise ValueError(f"Invalid CSR buffer sizes: data.shape={tuple(data.shape)} "
                     f"indices.shape={tuple(indices.shape)} indptr.shape={tuple(indptr.shape)}")
  if reorder not in (0, 1, 2, 3):
    raise ValueError(f"reorder={reorder} not valid, must be one of [0, 1, 2, 3]")
  n = b.size
  dense = _coo_todense(data, csr_rows(indices, indptr), indices, spinfo=COOInfo((n, n)))
  return solve(dense, b)

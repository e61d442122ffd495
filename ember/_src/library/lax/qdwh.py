"""lax.linalg.qdwh: the polar decomposition x = u h by the QR-based dynamically weighted
Halley iteration (Nakatsukasa, Bai and Gygi 2010; Nakatsukasa and Higham 2013), as JAX's
(jax/_src/tpu/linalg/qdwh.py): the iteration's weights are computed in Python ahead of
time from the lower bound l on the smallest singular value; iterations whose weight c is
large use the QR form, the others the Cholesky form, then plain Halley steps (a, b, c) =
(3, 1, 3) run until u stops moving or `max_iterations` is spent.
"""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation, logic, ufuncs
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.linalg_norms import norm
from ember._src.primitives.control import while_loop
from ember._src.primitives.decompositions import qr, triangular_solve
from ember._src.library.lax.linalg import cholesky

__all__ = ["qdwh"]

_CHOLESKY_CUTOFF = 100      # weights c above this use the (stabler) QR form


def _H(x):
  return ufuncs.conj(x.T)


def _qr_step(u, params):
  a_minus_e_by_sqrt_c, sqrt_c, e = params
  m, n = u.shape
  y = shape_ops.concatenate([sqrt_c * u, creation.eye(n, dtype=u.dtype)], axis=0)
  q, _ = qr(y, full_matrices=False)
  return e * u + a_minus_e_by_sqrt_c * (q[:m] @ _H(q[m:]))


def _cholesky_step(u, params):
  a_minus_e, c, e = params
  n = u.shape[1]
  x = c * (_H(u) @ u) + creation.eye(n, dtype=u.dtype)
  y = cholesky(x, symmetrize_input=False)
  z = ufuncs.conj(triangular_solve(y, u.T, left_side=True, lower=True, conjugate_a=True))
  z = _H(triangular_solve(y, z, left_side=True, lower=True, transpose_a=True,
                          conjugate_a=True))
  return e * u + a_minus_e * z


def _weights(eps: float, max_iterations: int):
  """The (QR, Cholesky) step parameters of the weighted iterations, from l = eps."""
  l, tol_l = eps, 10.0 * eps / 2.0
  qr_params, chol_params = [], []
  while l + tol_l < 1 and len(qr_params) + len(chol_params) < max_iterations:
    l2 = l * l
    dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    sqd = (1.0 + dd) ** (1 / 2)
    a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    l = l * (a + b * l2) / (1 + c * l2)
    e = b / c
    if c > _CHOLESKY_CUTOFF:
      qr_params.append(((a - e) / c ** 0.5, c ** 0.5, e))
    else:
      chol_params.append((a - e, c, e))
  return qr_params, chol_params


def _polar_iterations(x, max_iterations: int, eps: float):
  one_norm, inf_norm = norm(x, ord=1), norm(x, ord=np.inf)
  scale = logic.where(one_norm == 0, 1, 1 / ufuncs.sqrt(one_norm * inf_norm))
  u = x * scale.astype(x.dtype)
  tol_norm = (10.0 * eps / 2.0) ** (1 / 3)
  qr_params, chol_params = _weights(eps, max_iterations)
  for p in qr_params:
    u = _qr_step(u, p)
  moving = np.bool_(True)
  for p in chol_params:
    u_prev, u = u, _cholesky_step(u, p)
    moving = norm(u - u_prev) > tol_norm

  def keep_going(state):
    k, _, moving = state
    return ufuncs.logical_and(moving, k < max_iterations)

  def halley(state):
    k, u, _ = state
    u_next = _cholesky_step(u, (3 - 1 / 3, 3.0, 1 / 3))   # (a, b, c) = (3, 1, 3)
    return k + 1, u_next, norm(u_next - u) > tol_norm

  k0 = len(qr_params) + len(chol_params)
  k, u, moving = while_loop(keep_going, halley,
                            (creation.asarray(k0, dtypes.default_int_dtype()), u,
                             creation.asarray(moving)))
  u = 1.5 * u - 0.5 * u @ (_H(u) @ u)
  h = _H(u) @ x
  return u, (h + _H(h)) / 2, k, ufuncs.logical_not(moving)


def qdwh(x, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None):
  """(u, h, num_iters, is_converged): x = u h with u's columns orthonormal and h Hermitian
  positive semi-definite, for an M x N x with M >= N. `dynamic_shape` (m, n): only x's
  leading m x n block is decomposed; u and h are zero outside it."""
  x = creation.asarray(x)
  if x.ndim != 2:
    raise ValueError(f"qdwh requires a matrix, got shape {x.shape}")
  m_all, n_all = x.shape
  if m_all < n_all:
    raise ValueError("The input matrix of shape M x N must have M >= N.")
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  return _qdwh(x, bool(is_hermitian), max_iterations, eps,
               None if dynamic_shape is None else tuple(int(d) for d in dynamic_shape))


@jit(static_argnames=("is_hermitian", "max_iterations", "eps", "dynamic_shape"))
def _qdwh(x, is_hermitian, max_iterations, eps, dynamic_shape):
  if not dtypes.is_inexact(x.dtype):
    x = x.astype(dtypes.default_float_dtype())
  eps = float(np.finfo(x.dtype).eps) if eps is None else float(eps)
  m_all, n_all = x.shape
  m, n = dynamic_shape or (m_all, n_all)
  u, h, k, ok = _polar_iterations(x[:m, :n], max_iterations, eps)
  if (m, n) != (m_all, n_all):     # JAX's masked form: zeros outside the m x n block
    u = shape_ops.pad(u, ((0, m_all - m), (0, n_all - n)))
    h = shape_ops.pad(h, ((0, n_all - n), (0, n_all - n)))
  return u, h, k, ok

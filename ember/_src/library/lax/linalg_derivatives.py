"""JAX's derivative rules of the matrix decompositions (jax/_src/lax/linalg.py), written
with jnp and registered on the primitives of primitives/decompositions.py when ember is
imported (ember/__init__.py). A library above the primitives (they cannot import jnp) and
above numpy/products and numpy/linalg_solvers (the rules multiply and solve with their
matmul and solve).
"""
from __future__ import annotations

from ember._src import core
from ember._src.library.lax.linalg import symmetrize
from ember._src.library.numpy.creation import eye, tril, triu
from ember._src.library.numpy.indexing import take_along_axis
from ember._src.library.numpy.linalg_solvers import solve
from ember._src.library.numpy.products import matmul as _mm
from ember._src.library.numpy.reductions import diagonal
from ember._src.library.numpy.scalar_types import iscomplexobj
from ember._src.library.numpy.shape import pad, swapaxes
from ember._src.library.numpy.ufuncs import conj, real
from ember._src.primitives.decompositions import (
    cholesky_p, eig_p, eigh_p, lu_p, qr_p, svd_p, triangular_solve, triangular_solve_p)
from ember._src.primitives.linalg_forms import tridiagonal_solve_p
from ember._src.transforms import ad


# --------------------------------------------------------------------------------------
# Differentiation
# --------------------------------------------------------------------------------------

def _T(x):
  return swapaxes(x, -1, -2)


def _H(x):
  return conj(_T(x))


def _eye_like(x, n):
  return eye(n, dtype=core.get_aval(x).dtype)


def _cholesky_jvp(primals, tangents):
  (x,), (sigma_dot,) = primals, tangents
  L = tril(cholesky_p.bind(x))
  sigma_dot = ad.instantiate_zeros(sigma_dot)
  n = core.get_aval(x).shape[-1]

  def phi(X):   # lower triangle with the diagonal halved
    return tril(X) / (1 + _eye_like(X, n))
  tmp = triangular_solve(L, sigma_dot, left_side=False, transpose_a=True, conjugate_a=True,
                         lower=True)
  L_dot = _mm(L, phi(triangular_solve(L, tmp, left_side=True, transpose_a=False,
                                      lower=True)))
  return L, L_dot


cholesky_p.jvp = _cholesky_jvp


def _trsm_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                unit_diagonal):
  m, n = core.get_aval(b).shape[-2:]
  k = 1 if unit_diagonal else 0
  g_a = tril(g_a, k=-k) if lower else triu(g_a, k=k)
  g_a = -g_a
  g_a = _T(g_a) if transpose_a else g_a
  g_a = conj(g_a) if conjugate_a else g_a

  def a_inverse(rhs):
    return triangular_solve(a, rhs, left_side=left_side, lower=lower, transpose_a=transpose_a,
                            conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  if left_side:
    return a_inverse(_mm(g_a, ans)) if m > n else _mm(a_inverse(g_a), ans)
  return a_inverse(_mm(ans, g_a)) if m < n else _mm(ans, a_inverse(g_a))


def _trsm_jvp_b(g_b, ans, a, b, **params):
  return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
  """Linear in b (as `div` in its numerator): the cotangent of b solves the transposed
  system."""
  if ad.is_undefined_primal(a):
    raise ValueError("triangular_solve is not linear in its first argument a")
  if type(ct) is ad.Zero:
    return [None, ad.Zero(b.aval)]
  ct_b = triangular_solve_p.bind(a, ad.instantiate_zeros(ct), left_side=left_side,
                                 lower=lower, transpose_a=not transpose_a,
                                 conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  return [None, ct_b]


ad.defjvp2(triangular_solve_p, _trsm_jvp_a, _trsm_jvp_b)
triangular_solve_p.transpose = _triangular_solve_transpose


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
  (x,), (dx,) = primals, tangents
  q, r = qr_p.bind(x, pivoting=pivoting, full_matrices=False, use_magma=use_magma)
  *_, m, n = core.get_aval(x).shape
  if m < n or (full_matrices and m != n):
    raise NotImplementedError(
        f"The derivative of qr is defined for m >= n with full_matrices=False (or square "
        f"inputs), got a {m}x{n} matrix with full_matrices={full_matrices} (as in JAX)")
  dx = ad.instantiate_zeros(dx)
  dx_rinv = triangular_solve(r, dx)     # right side solve by default
  qt_dx_rinv = _mm(_H(q), dx_rinv)
  qt_dx_rinv_lower = tril(qt_dx_rinv, -1)
  do = qt_dx_rinv_lower - _H(qt_dx_rinv_lower)   # skew-symmetric
  if iscomplexobj(qt_dx_rinv):               # the correction complex inputs need
    eye = _eye_like(do, n)
    do = do + eye * (qt_dx_rinv - real(qt_dx_rinv).astype(qt_dx_rinv.dtype))
  dq = _mm(q, do - qt_dx_rinv) + dx_rinv
  dr = _mm(qt_dx_rinv - do, r)
  return [q, r], [dq, dr]


qr_p.jvp = _qr_jvp


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  (a,), (a_dot,) = primals, tangents
  n = core.get_aval(a).shape[-1]
  if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
    raise NotImplementedError("eigh's derivative is defined only for the full decomposition: "
                              f"subset_by_index={subset_by_index} (as in JAX)")
  v, w_real = eigh_p.bind(symmetrize(a), lower=lower, sort_eigenvalues=sort_eigenvalues,
                          subset_by_index=subset_by_index, algorithm=algorithm)
  a_dot = ad.instantiate_zeros(a_dot)
  dt = core.get_aval(a).dtype
  w = w_real.astype(dt)
  eye_n = _eye_like(a, n)
  # the reciprocal eigenvalue-difference matrix, 0 on the diagonal (no NaNs there)
  Fmat = 1 / (eye_n + w[..., None, :] - w[..., :, None]) - eye_n
  vdag_adot_v = _mm(_mm(_H(v), a_dot), v)
  dv = _mm(v, Fmat * vdag_adot_v)
  dw = real(diagonal(vdag_adot_v, axis1=-2, axis2=-1))
  return [v, w_real], [dv, dw]


eigh_p.jvp = _eigh_jvp


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
  (A,), (dA,) = primals, tangents
  s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True,
                        subset_by_index=subset_by_index, algorithm=algorithm)
  if compute_uv and full_matrices:
    raise NotImplementedError(
        "The derivative of svd with compute_uv=True needs full_matrices=False (as in JAX); "
        "use jnp.linalg.svd(x, full_matrices=False)")
  dA = ad.instantiate_zeros(dA)
  dt = core.get_aval(A).dtype
  Ut, V = _H(U), _H(Vt)
  s_dim = s[..., None, :]
  dS = _mm(_mm(Ut, dA), V)
  ds = real(diagonal(dS, 0, -2, -1))
  if not compute_uv:
    return [s], [ds]
  k = core.get_aval(s).shape[-1]
  s_diffs = (s_dim + _T(s_dim)) * (s_dim - _T(s_dim))
  s_diffs_zeros = eye(k, dtype=core.get_aval(s).dtype)
  F = 1 / (s_diffs + s_diffs_zeros) - s_diffs_zeros
  dSS = s_dim.astype(dt) * dS
  SdS = _T(s_dim.astype(dt)) * dS
  s_zeros = (s == 0).astype(s.dtype)
  s_inv = 1 / (s + s_zeros) - s_zeros
  s_inv_mat = s_inv[..., None, :] * eye(k, dtype=s.dtype)
  dUdV_diag = .5 * (dS - _H(dS)) * s_inv_mat.astype(dt)
  dU = _mm(U, F.astype(dt) * (dSS + _H(dSS)) + dUdV_diag)
  dV = _mm(V, F.astype(dt) * (SdS + _H(SdS)))
  m, n = core.get_aval(A).shape[-2:]
  if m > n:
    dAV = _mm(dA, V)
    dU = dU + (dAV - _mm(U, _mm(Ut, dAV))) / s_dim.astype(dt)
  if n > m:
    dAHU = _mm(_H(dA), U)
    dV = dV + (dAHU - _mm(V, _mm(Vt, dAHU))) / s_dim.astype(dt)
  return [s, U, Vt], [ds, dU, _H(dV)]


svd_p.jvp = _svd_jvp


def _lu_jvp(primals, tangents):
  (a,), (a_dot,) = primals, tangents
  lu_, pivots, permutation = lu_p.bind(a)
  a_dot = ad.instantiate_zeros(a_dot)
  *batch, m, n = core.get_aval(a).shape
  dt = core.get_aval(a).dtype
  k = min(m, n)
  x = take_along_axis(a_dot, permutation[..., :, None], axis=-2)
  l = tril(lu_[..., :, :k], -1)
  l = pad(l, [(0, 0)] * len(batch) + [(0, 0), (0, m - k)]) + eye(m, dtype=dt)
  u = pad(triu(lu_[..., :k, :]), [(0, 0)] * len(batch) + [(0, n - k), (0, 0)])
  u = u + pad(eye(n - k, dtype=dt), ((k, 0), (k, 0)))
  la = triangular_solve(l, x, left_side=True, transpose_a=False, lower=True,
                        unit_diagonal=True)
  lau = triangular_solve(u, la, left_side=False, transpose_a=False, lower=False)
  lu_dot = _mm(l, tril(lau, -1)) + _mm(triu(lau), u)
  return [lu_, pivots, permutation], [lu_dot, ad.Zero.from_value(pivots),
                                      ad.Zero.from_value(permutation)]


lu_p.jvp = _lu_jvp


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs, implementation):
  """Eigenvalues only: dw = diag(V^-1 dA V) (JAX's rule)."""
  if compute_left_eigenvectors or compute_right_eigenvectors:
    raise NotImplementedError(
        "Derivatives of non-symmetric eigenvectors are not implemented in ember; only the "
        "eigenvalues (jnp.linalg.eigvals) can be differentiated.")
  (a,), (da,) = primals, tangents
  w, v = eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True,
                    enable_eigvec_derivs=False, implementation=implementation)
  da = ad.instantiate_zeros(da).astype(core.get_aval(v).dtype)
  dw = diagonal(_mm(solve(v, da), v), axis1=-2, axis2=-1)
  return [w], [dw]


eig_p.jvp = _eig_jvp


# --------------------------------------------------------------------------------------
# tridiagonal_solve: linear in b (transpose: the transposed system); its jvp in the
# diagonals solves against the product of their tangents with the answer
# --------------------------------------------------------------------------------------

def _tridiagonal_product(dl, d, du, x):
  """A x for the tridiagonal A (dl[..., 0] and du[..., -1] unused), x [..., m, k]."""
  y = d[..., :, None] * x
  below = dl[..., 1:, None] * x[..., :-1, :]
  above = du[..., :-1, None] * x[..., 1:, :]
  nb = x.ndim - 2
  zero_row = [(0, 0)] * nb
  return (y + pad(below, zero_row + [(1, 0), (0, 0)])
          + pad(above, zero_row + [(0, 1), (0, 0)]))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
  dl, d, du, b = primals
  *diag_dots, b_dot = tangents
  ans = tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=perturb_singular)
  rhs = b_dot
  if not all(type(t) is ad.Zero for t in diag_dots):
    product = _tridiagonal_product(*map(ad.instantiate_zeros, diag_dots), ans)
    rhs = -product if type(b_dot) is ad.Zero else b_dot - product
  if type(rhs) is ad.Zero:
    return ans, rhs
  return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
  if any(ad.is_undefined_primal(x) for x in (dl, d, du)):
    raise ValueError("tridiagonal_solve is linear only in its last argument b")
  if type(ct) is ad.Zero:
    return [None, None, None, ad.Zero(b.aval)]
  nb = d.ndim - 1
  # A^T's sub-diagonal is A's super-diagonal shifted down one, and the reverse
  dl_t = pad(du[..., :-1], [(0, 0)] * nb + [(1, 0)])
  du_t = pad(dl[..., 1:], [(0, 0)] * nb + [(0, 1)])
  return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                      perturb_singular=perturb_singular)]


tridiagonal_solve_p.jvp = _tridiagonal_solve_jvp
tridiagonal_solve_p.transpose = _tridiagonal_solve_transpose

"""jax.scipy.linalg's functions built on the condensed forms: schur, rsf2csf, hessenberg,
sqrtm, funm, solve_sylvester (on the Schur form), eigh_tridiagonal, qr_multiply.

The triangular recurrences (sqrtm's square root of a triangular matrix, funm's Parlett
recurrence) fill the result one superdiagonal at a time: every entry of the d-th
superdiagonal needs only entries of lower ones, so each step is a few whole-array
operations (a Python loop of n - 1 steps, traced once), where JAX loops over entries.
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation, logic, reductions, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.linalg_decompositions import eigh, eigvals, eigvalsh, eig
from ember._src.library.numpy.linalg_norms import diagonal, norm
from ember._src.library.numpy.linalg_solvers import inv, solve
from ember._src.library.numpy.vectorize import vectorize
from ember._src.primitives import decompositions, linalg_forms

__all__ = ["schur", "rsf2csf", "hessenberg", "sqrtm", "funm", "solve_sylvester",
           "eigh_tridiagonal", "qr_multiply"]


def _H(x):
  return ufuncs.conj(shape_ops.swapaxes(x, -1, -2))


def _complex(dt) -> np.dtype:
  return np.result_type(dt, np.complex64)


def _on_superdiagonal(values, d: int, n: int):
  """The n x n matrices (batched) holding `values` [..., n - d] on their d-th
  superdiagonal and zeros elsewhere."""
  nb = values.ndim - 1
  full = shape_ops.pad(values, [(0, 0)] * nb + [(0, d)])
  return logic.where(creation.asarray(np.eye(n, k=d, dtype=bool)), full[..., :, None], 0)


# --------------------------------------------------------------------------------------
# schur, rsf2csf, hessenberg
# --------------------------------------------------------------------------------------

def schur(a, output="real"):
  """(T, Z) with a = Z T Z^H: T quasi-upper triangular ('real', for real a) or upper
  triangular ('complex': a is made complex first), Z unitary."""
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got "
                     f"output={output!r}.")
  util.check_arraylike("scipy.schur", a)
  return _schur(creation.asarray(a), output)


@functools.partial(jit, static_argnames=("output",))
def _schur(a, output):
  if output == "complex":
    a = a.astype(dtypes.canonicalize_dtype(_complex(a.dtype)))
  return linalg_forms.schur(a)


def rsf2csf(T, Z, check_finite=True):
  """The complex Schur form (T', Z') of the real Schur form (T, Z): each 2x2 block of T
  triangularized by a complex Givens rotation, applied to Z too."""
  T, Z = creation.asarray(T), creation.asarray(Z)
  if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
    raise ValueError("Input 'T' must be square.")
  if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
    raise ValueError("Input 'Z' must be square.")
  if T.shape[-1] != Z.shape[-1]:
    raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
  return _rsf2csf(T, Z)


@jit
def _rsf2csf(T, Z):
  T, Z = util.promote_dtypes_inexact(T, Z)
  dt = dtypes.canonicalize_dtype(_complex(T.dtype))
  T, Z = T.astype(dt), Z.astype(dt)
  return vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


def _rsf2csf_2d(T, Z):
  n = T.shape[0]
  eps = float(dtypes.finfo(T.dtype).eps)
  rows = np.arange(n)
  for m in range(n - 1, 0, -1):
    a, b, c, d = T[m - 1, m - 1], T[m - 1, m], T[m, m - 1], T[m, m]
    # the block's eigenvalue with the larger imaginary part (LAPACK's first), less d
    half = (a - d) / 2
    mu = half + ufuncs.sqrt(half * half + b * c)
    r = ufuncs.sqrt(ufuncs.abs(mu) ** 2 + ufuncs.abs(c) ** 2).astype(T.dtype)
    cs, sn = mu / r, c / r
    g = shape_ops.stack([shape_ops.stack([ufuncs.conj(cs), sn]), shape_ops.stack([-sn, cs])])
    g_h = _H(g)
    cols_from = creation.asarray(rows >= m - 1)
    pair = T[m - 1:m + 1]
    rotated_rows = logic.where(cols_from, g @ pair, pair)
    T2 = T.at[m - 1:m + 1].set(rotated_rows)
    rows_to = creation.asarray(rows[:, None] <= m)
    cols = T2[:, m - 1:m + 1]
    T2 = T2.at[:, m - 1:m + 1].set(logic.where(rows_to, cols @ g_h, cols))
    Z2 = Z.at[:, m - 1:m + 1].set(Z[:, m - 1:m + 1] @ g_h)
    big = ufuncs.abs(c) > eps * (ufuncs.abs(a) + ufuncs.abs(d))
    T, Z = logic.where(big, T2, T), logic.where(big, Z2, Z)
    T = T.at[m, m - 1].set(0)
  return T, Z


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
  """The upper Hessenberg form H of a (a = Q H Q^H), and Q with `calc_q`."""
  util.check_arraylike("hessenberg", a)
  return _hessenberg(creation.asarray(a), bool(calc_q))


@functools.partial(jit, static_argnames=("calc_q",))
def _hessenberg(a, calc_q):
  n = a.shape[-1]
  if n == 0:
    zeros = creation.zeros_like(a)
    return (zeros, zeros) if calc_q else zeros
  packed, taus = linalg_forms.hessenberg(a)
  h = creation.triu(packed, -1)
  if not calc_q:
    return h
  q = decompositions.householder_product(packed[..., 1:, :-1], taus)
  nb = a.ndim - 2
  q = shape_ops.pad(q, [(0, 0)] * nb + [(1, 0), (1, 0)])
  corner = np.zeros((n, n), bool)
  corner[0, 0] = True
  return h, logic.where(creation.asarray(corner), 1, q).astype(packed.dtype)


# --------------------------------------------------------------------------------------
# sqrtm, funm
# --------------------------------------------------------------------------------------

def _sqrtm_triu(t):
  """The upper triangular square root U of upper triangular t (U U = t), by superdiagonal:
  U[i, j] = (t[i, j] - sum_{i<k<j} U[i, k] U[k, j]) / (U[i, i] + U[j, j])."""
  n = t.shape[-1]
  root = ufuncs.sqrt(diagonal(t))
  strict = creation.zeros_like(t)
  for d in range(1, n):
    s = diagonal(strict @ strict, offset=d)
    t_d = diagonal(t, offset=d)
    val = logic.where(t_d == s, 0, (t_d - s) / (root[..., :-d] + root[..., d:]))
    strict = strict + _on_superdiagonal(val, d, n)
  return strict + _on_superdiagonal(root, 0, n)


def sqrtm(A, blocksize=1):
  """The principal square root of A (complex): the Schur method of Björck and Hammarling."""
  if blocksize > 1:
    # JAX raises the same (SciPy's blocked variant only changes the speed)
    raise NotImplementedError(f"sqrtm: blocksize={blocksize}: the blocked version is not "
                              "supported (as in JAX); use blocksize=1 (the same result)")
  util.check_arraylike("scipy.sqrtm", A)
  return _sqrtm(creation.asarray(A))


@jit
def _sqrtm(A):
  _check_square("sqrtm", A)
  T, Z = _schur(A, "complex")
  return Z @ _sqrtm_triu(T) @ _H(Z)


def _check_square(name, a):
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"{name}: expected a square matrix (shape [..., n, n]), got shape "
                     f"{a.shape}")


def _parlett(F, T):
  """F's strictly upper part from its diagonal (f of T's diagonal), by the Parlett
  recurrence (Golub and Van Loan, Algorithm 11.1.1): (minden: the smallest |T[j,j] -
  T[i,i]| met, starting from |T[0, 0]| as JAX's)."""
  n = T.shape[-1]
  t_strict = creation.triu(T, 1)
  fd = diagonal(F)
  td = diagonal(T)
  f_strict = creation.zeros_like(F)
  minden = ufuncs.abs(T[0, 0])
  for d in range(1, n):
    s = diagonal(T, offset=d) * (fd[d:] - fd[:-d])
    s = s + diagonal(t_strict @ f_strict - f_strict @ t_strict, offset=d)
    den = td[d:] - td[:-d]
    val = logic.where(den != 0, s / logic.where(den != 0, den, 1), s)
    f_strict = f_strict + _on_superdiagonal(val, d, n)
    minden = ufuncs.minimum(minden, reductions.min(ufuncs.abs(den)))
  return f_strict + _on_superdiagonal(fd, 0, n), minden


def funm(A, func, disp=True):
  """f(A) for a function f of arrays, elementwise on A's eigenvalues: the complex Schur
  form with Parlett's recurrence. With `disp=False`: (f(A), an estimate of its relative
  error)."""
  A = creation.asarray(A)
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected square array_like input")
  T, Z = linalg_forms.schur(A)
  T, Z = rsf2csf(T, Z)
  F = reductions.diag(func(reductions.diag(T))).astype(T.dtype)
  F, minden = _parlett(F, T)
  F = Z @ F @ _H(Z)
  if disp:
    return F
  tol = float(np.finfo(np.float32 if F.dtype == np.complex64 else np.float64).eps)
  minden = logic.where(minden == 0.0, tol, minden)
  err = logic.where(reductions.any(ufuncs.isinf(F)), np.inf, ufuncs.minimum(
      1, ufuncs.maximum(tol, (tol / minden) * norm(creation.triu(T, 1), 1))))
  return F, err


# --------------------------------------------------------------------------------------
# solve_sylvester
# --------------------------------------------------------------------------------------

def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):
  """X with A X + X B = C (Bartels-Stewart on the complex Schur forms, or the
  eigendecompositions with method='eigen'); NaN where some eigenvalues of A and -B are
  within `tol` (the equation has no unique solution)."""
  util.check_arraylike("solve_sylvester", A, B, C)
  A, B, C = util.promote_dtypes_inexact(*(creation.asarray(x) for x in (A, B, C)))
  if method not in ("schur", "eigen"):
    raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                     "\"schur\" or \"eigen\".")
  if C.ndim < 2:
    raise ValueError(f"solve_sylvester: C must be a matrix, got shape {C.shape}")
  m, n = C.shape[-2:]
  if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
    raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\n"
                     f"B: {B.shape}\nC: {C.shape}")
  return _solve_sylvester(A, B, C, method, float(tol))


@functools.partial(jit, static_argnames=("method", "tol"))
def _solve_sylvester(A, B, C, method, tol):
  fn = functools.partial(_solve_sylvester_2d, method=method, tol=tol)
  return vectorize(fn, signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)


def _triangular_sylvester(R, S, F):
  """Y with R Y + Y S = F for upper triangular R and lower triangular S, a column at a
  time from the last: (R + S[j, j] I) Y[:, j] = F[:, j] - sum_{k>j} Y[:, k] S[k, j]."""
  m, n = F.shape
  eye = creation.eye(m, dtype=F.dtype)
  cols = [None] * n
  for j in reversed(range(n)):
    rhs = F[:, j]
    for k in range(j + 1, n):
      rhs = rhs - cols[k] * S[k, j]
    cols[j] = decompositions.triangular_solve(R + S[j, j] * eye, rhs[:, None], left_side=True,
                                              lower=False)[:, 0]
  return shape_ops.stack(cols, axis=1)


def _solve_sylvester_2d(A, B, C, *, method, tol):
  if method == "schur":
    R, U = _schur(A, "complex")
    S, V = _schur(_H(B), "complex")
    F = _H(U) @ C.astype(R.dtype) @ V
    X = U @ _triangular_sylvester(R, _H(S), F) @ _H(V)
  else:
    ra, ua = eig(A)
    rb, ub = eig(B)
    F = solve(ua, C.astype(ra.dtype) @ ub)
    X = ua @ (F / (ra[:, None] + rb[None, :])) @ inv(ub)
  if dtypes.dtype_kind(C.dtype) != "c":
    X = ufuncs.real(X)
  near = ufuncs.abs(eigvals(A)[:, None] + eigvals(B)[None, :]) < tol
  return logic.where(reductions.any(near), np.nan, X).astype(X.dtype)


# --------------------------------------------------------------------------------------
# eigh_tridiagonal
# --------------------------------------------------------------------------------------

def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
  """The eigenvalues (ascending; and with eigvals_only=False, the eigenvectors as columns)
  of the Hermitian tridiagonal matrix with diagonal d and off-diagonal e: all (select
  'a') or those of indices select_range[0]..select_range[1] (select 'i')."""
  d, e = creation.asarray(d), creation.asarray(e)
  supported = (np.float32, np.float64, np.complex64, np.complex128)
  if d.dtype != e.dtype:
    raise TypeError("diagonal and off-diagonal values must have same dtype, got "
                    f"{d.dtype} and {e.dtype}")
  if d.dtype not in supported:
    raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                    f"jax.scipy.linalg.eigh_tridiagonal, got {d.dtype} and {e.dtype}")
  if d.ndim != 1 or e.shape != (max(d.shape[0] - 1, 0),):
    raise ValueError(f"eigh_tridiagonal: d must be [n] and e [n - 1], got {d.shape} and "
                     f"{e.shape}")
  n = d.shape[0]
  if select == "a":
    lo, hi = 0, n
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    if select_range[0] > select_range[1]:
      raise ValueError("Got empty index range in select_range.")
    lo, hi = int(select_range[0]), int(select_range[1]) + 1
  elif select == "v":
    # as JAX: the number of eigenvalues in a value range is not static
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")
  return _eigh_tridiagonal(d, e, bool(eigvals_only), lo, hi)


@functools.partial(jit, static_argnames=("eigvals_only", "lo", "hi"))
def _eigh_tridiagonal(d, e, eigvals_only, lo, hi):
  n = d.shape[0]
  if n <= 1:
    w = ufuncs.real(d)
    return w if eigvals_only else (w, creation.eye(n, dtype=d.dtype))
  t = (reductions.diag(ufuncs.real(d).astype(d.dtype)) + reductions.diag(e, -1)
       + reductions.diag(ufuncs.conj(e), 1))
  if eigvals_only:
    return eigvalsh(t)[lo:hi]
  w, v = eigh(t)
  return w[lo:hi], v[:, lo:hi]


# --------------------------------------------------------------------------------------
# qr_multiply
# --------------------------------------------------------------------------------------

def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
  """(c Q, R) (mode 'right') or (Q c, R) ('left') for the QR decomposition a = Q R (Q's
  first min(m, n) columns, R reduced); `conjugate`: with conj(Q)."""
  util.check_arraylike("qr_multiply", a, c)
  a, c = util.promote_dtypes_inexact(creation.asarray(a), creation.asarray(c))
  if mode not in ("right", "left"):
    raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
  if pivoting:
    raise ValueError("ember's qr_multiply does not support pivoting=True (column-pivoted "
                     "QR); call it with pivoting=False.")
  if a.ndim < 2:
    raise ValueError(f"qr_multiply: a must be a matrix, got shape {a.shape}")
  onedim = c.ndim == 1
  if onedim:
    c = c[:, None] if mode == "left" else c[None, :]
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "left" and c.shape[-2] != k:
    raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                     f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} rows "
                     f"(expected {k}).")
  if mode == "right" and c.shape[-1] != m:
    raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                     f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} columns "
                     f"(expected {m}).")
  return _qr_multiply(a, c, mode, bool(conjugate), onedim)


@functools.partial(jit, static_argnames=("mode", "conjugate", "onedim"))
def _qr_multiply(a, c, mode, conjugate, onedim):
  q, r = decompositions.qr(a, full_matrices=False)
  if conjugate:
    q = ufuncs.conj(q)
  out = q @ c if mode == "left" else c @ q
  return (out.ravel() if onedim else out), r

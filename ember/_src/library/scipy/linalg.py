"""jax.scipy.linalg: SciPy's linear-algebra API on ember arrays. The factorizations are
lax.linalg's (LAPACK-style primitives); SciPy's conventions are kept: `cholesky` is upper
unless `lower=True`, `lu` returns a permutation matrix, `lu_factor`'s pivots are LAPACK's
0-based row swaps."""
from __future__ import annotations

from ember._src.library.lax import linalg as lax_linalg
from ember._src.driver.jit import jit
import numpy as np

from ember._src.library.numpy import (
    creation, indexing, logic, shape as shape_ops, sorting, ufuncs, util)
from ember._src.library.numpy import linalg_norms, linalg_solvers
from ember._src.primitives import decompositions
from ember._src.primitives.control import cond as lax_cond, fori_loop, switch
from ember._src.transforms.ad import jvp
from ember._src.transforms.batching import vmap

__all__ = ["solve_triangular", "cholesky", "cho_factor", "cho_solve", "lu", "lu_factor",
           "lu_solve", "solve", "inv", "det", "eigh", "qr", "svd", "block_diag", "polar",
           "expm", "expm_frechet"]

_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def _inexact(name, *xs):
  util.check_arraylike(name, *xs)
  return util.promote_dtypes_inexact(*(creation.asarray(x) for x in xs))


def _H(x):
  return ufuncs.conj(shape_ops.swapaxes(x, -1, -2))


@jit(static_argnames=("trans", "lower", "unit_diagonal", "overwrite_b", "debug",
                      "check_finite"))
def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
  """x with op(a) x = b for triangular a (op per `trans`: 0/'N' a, 1/'T' a^T, 2/'C' a^H);
  b is [..., n] (one vector) or [..., n, k]."""
  if trans not in _TRANS:
    raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
  a, b = _inexact("solve_triangular", a, b)
  transpose, conjugate = _TRANS[trans]
  vector = b.ndim == a.ndim - 1
  x = decompositions.triangular_solve(a, b[..., None] if vector else b, left_side=True,
                                      lower=lower, transpose_a=transpose,
                                      conjugate_a=conjugate, unit_diagonal=unit_diagonal)
  return x[..., 0] if vector else x


@jit(static_argnames=("lower", "overwrite_a", "check_finite"))
def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
  """The Cholesky factor of a Hermitian positive-definite a: upper U (a = U^H U), or lower
  L (a = L L^H) with `lower=True`; NaN where a is not positive definite."""
  a, = _inexact("cholesky", a)
  l = lax_linalg.cholesky(a if lower else _H(a), symmetrize_input=False)
  return l if lower else _H(l)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
  """(c, lower) for `cho_solve`: c the Cholesky factor (`cholesky`)."""
  return cholesky(a, lower=lower), lower


@jit(static_argnames=("lower", "overwrite_b", "check_finite"))
def _cho_solve(c, b, lower, overwrite_b=False, check_finite=True):
  if lower:   # L L^H x = b
    return solve_triangular(c, solve_triangular(c, b, lower=True), trans="C", lower=True)
  return solve_triangular(c, solve_triangular(c, b, trans="C", lower=False), lower=False)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
  """x with a x = b, from `cho_factor(a)`."""
  c, lower = c_and_lower
  return _cho_solve(c, b, lower=bool(lower))


def lu_factor(a, overwrite_a=False, check_finite=True):
  """(lu, piv): L (unit lower, implicit diagonal) and U packed in `lu`, and the row swaps
  (row i was swapped with row piv[i], 0-based)."""
  a, = _inexact("lu_factor", a)
  lu_, piv, _ = decompositions.lu(a)
  return lu_, piv


def _pivots_to_permutation(piv, n: int):
  """The row order the swaps make: a[perm] = L U."""
  def one(p):
    def swap(i, perm):
      j = p[i]
      pi, pj = perm[i], perm[j]
      return perm.at[i].set(pj).at[j].set(pi)
    return fori_loop(0, p.shape[0], swap, creation.arange(n, dtype=p.dtype))
  for _ in range(piv.ndim - 1):
    one = vmap(one)
  return one(piv)


@jit(static_argnames=("trans", "overwrite_b", "check_finite"))
def _lu_solve(lu_, piv, b, trans=0, overwrite_b=False, check_finite=True):
  n = lu_.shape[-1]
  vector = b.ndim == lu_.ndim - 1
  b = b[..., None] if vector else b
  perm = _pivots_to_permutation(piv, n)
  transpose, conjugate = _TRANS[trans]
  if not transpose:   # L U x = b[perm]
    x = indexing.take_along_axis(b, perm[..., :, None], axis=-2)
    x = decompositions.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
    x = decompositions.triangular_solve(lu_, x, left_side=True, lower=False)
  else:               # U^T L^T (x[perm]) = b
    z = decompositions.triangular_solve(lu_, b, left_side=True, lower=False, transpose_a=True,
                                        conjugate_a=conjugate)
    z = decompositions.triangular_solve(lu_, z, left_side=True, lower=True, transpose_a=True,
                                        conjugate_a=conjugate, unit_diagonal=True)
    x = indexing.take_along_axis(z, _inverse(perm)[..., :, None], axis=-2)
  return x[..., 0] if vector else x


def _inverse(perm):
  """The inverse permutation: inverse[perm[i]] = i."""
  n = perm.shape[-1]
  one = lambda p: creation.zeros((n,), p.dtype).at[p].set(creation.arange(n, dtype=p.dtype))  # noqa: E731
  for _ in range(perm.ndim - 1):
    one = vmap(one)
  return one(perm)


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
  """x with a x = b (trans 0), a^T x = b (1) or a^H x = b (2), from `lu_factor(a)`."""
  if trans not in _TRANS:
    raise ValueError(f"lu_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
  lu_, piv = lu_and_piv
  lu_, b = _inexact("lu_solve", lu_, b)
  return _lu_solve(lu_, piv, b, trans=trans)


@jit(static_argnames=("permute_l", "overwrite_a", "check_finite"))
def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
  """(p, l, u) with a = p @ l @ u (p a permutation matrix, l unit lower, u upper), or
  (p @ l, u) with `permute_l`."""
  a, = _inexact("lu", a)
  lu_, _, perm = decompositions.lu(a)
  m, n = a.shape[-2:]
  k = min(m, n)
  l = creation.tril(lu_[..., :, :k], -1) + creation.eye(m, k, dtype=a.dtype)
  u = creation.triu(lu_[..., :k, :])
  p = shape_ops.swapaxes(creation.eye(m, dtype=a.dtype)[perm], -1, -2)   # a[perm] = l u
  return (p @ l, u) if permute_l else (p, l, u)


# --------------------------------------------------------------------------------------
# solve, inv, det, eigh, qr, svd: SciPy's signatures over ember.numpy.linalg
# --------------------------------------------------------------------------------------

_ASSUME_A = ("gen", "general", "sym", "symmetric", "her", "hermitian", "pos",
             "positive definite")


@jit(static_argnames=("lower", "overwrite_a", "overwrite_b", "debug", "check_finite",
                      "assume_a"))
def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
  """x with a x = b; assume_a 'pos' solves by Cholesky (reading the `lower` triangle), the
  others by LU (as JAX: 'sym'/'her' use the general solver)."""
  if assume_a not in _ASSUME_A:
    raise ValueError(f"solve: expected assume_a in {_ASSUME_A}, got {assume_a!r}")
  a, b = _inexact("solve", a, b)
  if assume_a in ("pos", "positive definite"):
    return _cho_solve(cholesky(a, lower=lower), b, lower=lower)
  vector = b.ndim == 1
  x = linalg_solvers.solve(a, b[:, None] if vector else b)
  return x[:, 0] if vector else x


def inv(a, overwrite_a=False, check_finite=True):
  """The inverse of a square matrix (stack)."""
  a, = _inexact("inv", a)
  return linalg_solvers.inv(a)


def det(a, overwrite_a=False, check_finite=True):
  """The determinant of a square matrix (stack)."""
  a, = _inexact("det", a)
  return linalg_solvers.det(a)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):  # noqa: A002 - SciPy's name
  """Eigenvalues (ascending) [and eigenvectors as columns] of a Hermitian matrix, read from
  its `lower` (or upper) triangle. The generalized problem (b) is not supported (JAX)."""
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  a, = _inexact("eigh", a)
  v, w = decompositions.eigh_p.bind(a, lower=bool(lower), sort_eigenvalues=True,
                                    subset_by_index=None, algorithm=None)
  return w if eigvals_only else (w, v)


_QR_MODES = ("full", "r", "economic")


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
  """SciPy's qr: mode 'full' (q m x m), 'economic' (q m x k), 'r' (only r, as a 1-tuple).
  Column pivoting is not supported."""
  if mode not in _QR_MODES:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'; expected one of "
                     f"{_QR_MODES}")
  if pivoting:
    raise NotImplementedError("qr: pivoting=True (column-pivoted QR) is not supported by "
                              "ember; call it with pivoting=False.")
  a, = _inexact("qr", a)
  q, r = decompositions.qr(a, full_matrices=mode != "economic")
  return (r,) if mode == "r" else (q, r)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
  """(u, s, vh) with a = u diag(s) vh (s descending), or only s with compute_uv=False."""
  a, = _inexact("svd", a)
  return decompositions.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def block_diag(*arrs):
  """The block-diagonal matrix of the arguments (scalars and vectors are 1 x n blocks)."""
  if not arrs:
    return creation.zeros((1, 0))
  util.check_arraylike("block_diag", *arrs)
  blocks = util.promote_dtypes(*(shape_ops.atleast_2d(creation.asarray(x)) for x in arrs))
  if any(x.ndim != 2 for x in blocks):
    raise ValueError("block_diag: arguments must have dimension <= 2, got shapes "
                     f"{[creation.asarray(x).shape for x in arrs]}")
  cols = sum(x.shape[1] for x in blocks)
  rows, left = [], 0
  for x in blocks:
    rows.append(shape_ops.pad(x, ((0, 0), (left, cols - left - x.shape[1]))))
    left += x.shape[1]
  return shape_ops.concatenate(rows, axis=0)


def polar(a, side="right", *, method="svd", eps=None, max_iterations=None):
  """(u, p): a = u p (side 'right') or a = p u ('left'), u unitary, p Hermitian positive
  semi-definite, from the SVD (method 'svd'; JAX's default 'qdwh' iteration is not
  implemented here, and gives the same factors)."""
  if side not in ("left", "right"):
    raise ValueError(f"polar: side must be 'left' or 'right', got {side!r}")
  if method not in ("svd", "qdwh"):
    raise ValueError(f"polar: unknown method {method!r}; expected 'svd' or 'qdwh'")
  a, = _inexact("polar", a)
  u_svd, s, vh = decompositions.svd(a, full_matrices=False)
  u = u_svd @ vh
  if side == "right":
    p = _H(vh) @ (s[..., :, None] * vh)
  else:
    p = u_svd @ (s[..., :, None] * _H(u_svd))
  return u, p


# --------------------------------------------------------------------------------------
# expm: Pade approximation with scaling and squaring (Higham 2005, as JAX)
# --------------------------------------------------------------------------------------

# Pade coefficients b_0..b_m of degree m, and the 1-norm up to which degree m is accurate
# in the dtype's precision (Higham's theta_m); float32 uses degrees 3, 5, 7
_PADE = {3: (120., 60., 12., 1.),
         5: (30240., 15120., 3360., 420., 30., 1.),
         7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
         9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160.,
             110880., 3960., 90., 1.),
         13: (64764752532480000., 32382376266240000., 7771770303897600.,
              1187353796428800., 129060195264000., 10559470521600., 670442572800.,
              33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)}
_THETA = {"single": ((3, 0.4258730016922831), (5, 1.880152677804762), (7, 3.925724783138660)),
          "double": ((3, 0.01495585217958292), (5, 0.2539398330063230),
                     (7, 0.9504178996162932), (9, 2.097847961257068),
                     (13, 5.371920351148152))}


def _pade_uv(a, degree: int):
  """(U, V): the odd and even parts of the degree-`degree` Pade numerator, p = V + U,
  q = V - U."""
  b = _PADE[degree]
  eye = creation.eye(a.shape[0], dtype=a.dtype)
  a2 = a @ a
  if degree == 13:   # Higham's evaluation with A^2, A^4, A^6 only
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 +
             b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + \
        b[0] * eye
    return u, v
  powers = [eye, a2]
  while len(powers) <= degree // 2:
    powers.append(powers[-1] @ a2)
  odd = sum(b[2 * k + 1] * p for k, p in enumerate(powers))
  even = sum(b[2 * k] * p for k, p in enumerate(powers))
  return a @ odd, even


def _expm_2d(a, upper_triangular: bool, max_squarings: int):
  single = a.dtype in (np.float32, np.complex64)
  table = _THETA["single" if single else "double"]
  norm1 = linalg_norms.norm(a, 1)
  squarings = ufuncs.maximum(0, ufuncs.floor(ufuncs.log2(norm1 / table[-1][1])))
  a = a / (2 ** squarings).astype(a.dtype)
  which = sorting.digitize(norm1, creation.asarray([t for _, t in table[:-1]], norm1.dtype))
  u, v = switch(which, [lambda x, d=d: _pade_uv(x, d) for d, _ in table], a)
  p, q = v + u, v - u
  r = solve_triangular(q, p) if upper_triangular else linalg_solvers.solve(q, p)

  def square(i, r):
    return lax_cond(i < squarings, lambda m: m @ m, lambda m: m, r)
  r = fori_loop(0, max_squarings, square, r)
  return logic.where(squarings > max_squarings, np.nan, r).astype(r.dtype)


@jit(static_argnames=("upper_triangular", "max_squarings"))
def expm(A, *, upper_triangular=False, max_squarings=16):
  """The matrix exponential (of each matrix of a stack): a Pade approximant of the matrix
  scaled by 2^-s, squared s times; NaN when s would exceed `max_squarings`."""
  a, = _inexact("expm", A)
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={a.shape}.")
  fn = lambda m: _expm_2d(m, upper_triangular, max_squarings)  # noqa: E731
  for _ in range(a.ndim - 2):
    fn = vmap(fn)
  return fn(a)


def expm_frechet(A, E, *, method=None, compute_expm=True):
  """The Frechet derivative of expm at A in the direction E (a jvp of expm), with expm(A)
  first when compute_expm."""
  if method is not None and method != "SPS":
    raise ValueError(f"expm_frechet: only method=None or 'SPS' is supported, got "
                     f"{method!r}")
  a, e = _inexact("expm_frechet", A, E)
  if a.ndim != 2 or a.shape[0] != a.shape[1] or e.shape != a.shape:
    raise ValueError(f"expm_frechet: expected A and E to be square matrices of the same "
                     f"shape, got A.shape={a.shape}, E.shape={e.shape}")
  expm_a, frechet = jvp(expm, (a,), (e,))
  return (expm_a, frechet) if compute_expm else frechet

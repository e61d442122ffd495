"""jax.scipy.linalg: SciPy's linear-algebra API on ember arrays. The factorizations are
lax.linalg's (LAPACK-style primitives); SciPy's conventions are kept: `cholesky` is upper
unless `lower=True`, `lu` returns a permutation matrix, `lu_factor`'s pivots are LAPACK's
0-based row swaps."""
from __future__ import annotations

from ember._src import lax_linalg
from ember._src.jit import jit
from ember._src.numpy import creation, indexing, shape as shape_ops, ufuncs, util
from ember._src.primitives import decompositions
from ember._src.primitives.control import fori_loop
from ember._src.transforms.batching import vmap

__all__ = ["solve_triangular", "cholesky", "cho_factor", "cho_solve", "lu", "lu_factor",
           "lu_solve"]

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

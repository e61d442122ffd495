"""Condensed forms and their helpers (jax.lax.linalg): schur, hessenberg, tridiagonal,
tridiagonal_solve, ormqr, cholesky_update, symmetric_product.

As decompositions.py's primitives, each works on the last two dimensions (leading ones are
batch dimensions) and lowers as JAX does on CPU: a `custom-call` of LAPACK's FFI target
(`lapack_dgees_ffi`, `lapack_sgehrd_ffi`, `lapack_chetrd_ffi`, `lapack_dgtsv_ffi`,
`lapack_sormqr_ffi`) with NaN where `info` reports a failure; the CPU backend, hlo_eval
and the impls here all run the target's NumPy routine (reference/lapack_condensed.py).
cholesky_update (unbatched, as JAX's) is one custom call `ember_cholesky_update` of the
same Givens routine JAX's CPU lowering unrolls; symmetric_product lowers as its
composition alpha a a^T + beta c (JAX's CPU lowering). tridiagonal_solve's derivative rules
sit in library/lax/linalg_derivatives.py (they multiply by tridiagonal matrices with jnp).
"""
from __future__ import annotations

import numpy as np

from ember._src.core import ShapedArray
from ember._src.hlo.graph import Shape
from ember._src.lower import lower_fun
from ember._src.primitives import declare
from ember._src.primitives.decompositions import (
    _LAPACK_DTYPES, _check_operand, _custom_call, _nan_where_failed)
from ember._src.reference import lapack, lapack_condensed
from ember._src.transforms import batching

__all__ = ["schur", "hessenberg", "tridiagonal", "tridiagonal_solve", "ormqr",
           "cholesky_update", "schur_p", "hessenberg_p", "tridiagonal_p",
           "tridiagonal_solve_p", "ormqr_p", "cholesky_update_p", "symmetric_product_p"]

_V, _N = 86, 78     # LAPACK job characters 'V' and 'N'


def _info_shape(x) -> Shape:
  return Shape(np.dtype(np.int32), tuple(x.dims[:-2]))


# --------------------------------------------------------------------------------------
# schur (LAPACK gees)
# --------------------------------------------------------------------------------------

def _schur_abstract_eval(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  _check_operand("schur", x)
  if x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape}.")
  out = x.update(weak_type=False)
  return [out, out] if compute_schur_vectors else [out]


def _schur_config(compute_schur_vectors):
  return (("mode", _V if compute_schur_vectors else _N), ("sort", _N))


def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  t, vs, *_, info = lapack_condensed.gees(_schur_config(compute_schur_vectors), x)
  return [t, vs] if compute_schur_vectors else [t]


schur_p = declare("schur", _schur_abstract_eval, _schur_impl, multiple_results=True)
schur_p.batch = batching.all_at_front(schur_p)


def _schur_lower(ctx, x, *, compute_schur_vectors, sort_eig_vals, select_callable):
  w = Shape(x.dtype, tuple(x.dims[:-1]))
  eigvals = [w] if np.dtype(x.dtype).kind == "c" else [w, w]
  outs = _custom_call(ctx, "gees", [x], [x.shape, x.shape] + eigvals
                      + [_info_shape(x), _info_shape(x)], _schur_config(compute_schur_vectors))
  t, vs, info = outs[0], outs[1], outs[-1]
  t = _nan_where_failed(ctx, t, info)
  return [t, _nan_where_failed(ctx, vs, info)] if compute_schur_vectors else [t]


schur_p.lower = _schur_lower


def schur(x, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable=None):
  """(T, Z) with x = Z T Z^H, Z unitary, T upper triangular (complex x) or quasi-upper
  triangular with 2x2 blocks for complex eigenvalue pairs (real x); only (T,) without
  Schur vectors."""
  if sort_eig_vals:
    # JAX's CPU lowering rejects it the same way (LAPACK's gees sorting is not wired up)
    raise NotImplementedError("The sort feature of LAPACK's gees routine is not "
                              "implemented.")
  out = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                     sort_eig_vals=False, select_callable=select_callable)
  return tuple(out)


# --------------------------------------------------------------------------------------
# hessenberg (LAPACK gehrd)
# --------------------------------------------------------------------------------------

def _hessenberg_abstract_eval(a):
  _check_operand("hessenberg", a)
  if a.shape[-1] != a.shape[-2]:
    raise ValueError("Argument to Hessenberg reduction must have shape [..., n, n], got "
                     f"shape {a.shape}")
  return [a.update(weak_type=False),
          ShapedArray(a.shape[:-2] + (max(a.shape[-1] - 1, 0),), a.dtype)]


def _hessenberg_impl(a):
  h, taus, _ = lapack_condensed.gehrd((), a)
  return [h, taus]


hessenberg_p = declare("hessenberg", _hessenberg_abstract_eval, _hessenberg_impl,
                       multiple_results=True)
hessenberg_p.batch = batching.all_at_front(hessenberg_p)


def _hessenberg_lower(ctx, a):
  n = a.dims[-1]
  taus = Shape(a.dtype, tuple(a.dims[:-2]) + (max(n - 1, 0),))
  h, t, info = _custom_call(ctx, "gehrd", [a], [a.shape, taus, _info_shape(a)],
                            (("high", n), ("low", 1)))
  return [_nan_where_failed(ctx, h, info), _nan_where_failed(ctx, t, info)]


hessenberg_p.lower = _hessenberg_lower


def hessenberg(a):
  """(a, taus): the upper Hessenberg form of a on and above its subdiagonal, the
  Householder vectors of Q (a = Q H Q^H) below it, and their scale factors taus (LAPACK
  gehrd's packing)."""
  h, taus = hessenberg_p.bind(a)
  return h, taus


# --------------------------------------------------------------------------------------
# tridiagonal (LAPACK sytrd / hetrd)
# --------------------------------------------------------------------------------------

def _tridiagonal_abstract_eval(a, *, lower):
  _check_operand("tridiagonal", a)
  n = a.shape[-1]
  if a.shape[-2] != n or n == 0:
    raise ValueError(f"The input to tridiagonal must be a square matrix. Got shape "
                     f"{a.shape}.")
  batch, rdt = a.shape[:-2], lapack.real_dtype(a.dtype)
  return [a.update(weak_type=False), ShapedArray(batch + (n,), rdt),
          ShapedArray(batch + (n - 1,), rdt), ShapedArray(batch + (n - 1,), a.dtype)]


def _uplo(lower):
  return (("uplo", 76 if lower else 85),)


def _tridiagonal_impl(a, *, lower):
  return lapack_condensed.sytrd(_uplo(lower), a)[:4]


tridiagonal_p = declare("tridiagonal", _tridiagonal_abstract_eval, _tridiagonal_impl,
                        multiple_results=True)
tridiagonal_p.batch = batching.all_at_front(tridiagonal_p)


def _tridiagonal_lower(ctx, a, *, lower):
  n, batch = a.dims[-1], tuple(a.dims[:-2])
  rdt = lapack.real_dtype(a.dtype)
  name = "sytrd" if np.dtype(a.dtype).kind == "f" else "hetrd"
  shapes = [a.shape, Shape(rdt, batch + (n,)), Shape(rdt, batch + (n - 1,)),
            Shape(a.dtype, batch + (n - 1,)), _info_shape(a)]
  *results, info = _custom_call(ctx, name, [a], shapes, _uplo(lower))
  return [_nan_where_failed(ctx, r, info) for r in results]


tridiagonal_p.lower = _tridiagonal_lower


def tridiagonal(a, *, lower: bool = True):
  """(a, d, e, taus): Q^H a Q = T tridiagonal for Hermitian a (its `lower` or upper
  triangle read): T's diagonal d and off-diagonal e (real), with a holding them and the
  Householder vectors of Q in that triangle and taus their scale factors (LAPACK sytrd's
  packing)."""
  out = tridiagonal_p.bind(a, lower=bool(lower))
  return tuple(out)


# --------------------------------------------------------------------------------------
# tridiagonal_solve (LAPACK gtsv)
# --------------------------------------------------------------------------------------

def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
  for i, x in enumerate((dl, d, du, b)):
    if np.dtype(x.dtype) not in _LAPACK_DTYPES:
      raise TypeError(f"tridiagonal_solve does not accept dtype {np.dtype(x.dtype).name} at "
                      f"position {i}. Accepted dtypes at position {i} are subtypes of "
                      "float32, complex128, complex64, float64.")
  if b.ndim < 2:
    raise TypeError(f"Input 3 to tridiagonal_solve must have rank at least 2, but got "
                    f"shape={b.shape}")
  if dl.shape != d.shape or dl.shape != du.shape:
    raise TypeError("tridiagonal_solve requires that all diagonal arguments have the same "
                    "shape.")
  if dl.shape != b.shape[:-1]:
    raise TypeError("tridiagonal_solve requires that the leading ndim-1 dimensions of b "
                    "equal the dimensions of the diagonal arguments.")
  if len({np.dtype(x.dtype) for x in (dl, d, du, b)}) != 1:
    raise TypeError("tridiagonal_solve requires all arguments to have the same dtype, got "
                    f"{[np.dtype(x.dtype).name for x in (dl, d, du, b)]}")
  return b.update(weak_type=False)


def _tridiagonal_solve_impl(dl, d, du, b, *, perturb_singular):
  return lapack_condensed.gtsv_solve(dl, d, du, b, perturb=perturb_singular)[0]


tridiagonal_solve_p = declare("tridiagonal_solve", _tridiagonal_solve_abstract_eval,
                              _tridiagonal_solve_impl)
tridiagonal_solve_p.batch = batching.all_at_front(tridiagonal_solve_p)


def _tridiagonal_solve_lower(ctx, dl, d, du, b, *, perturb_singular):
  if perturb_singular:
    out = ctx.emit("custom-call", b.shape, [dl, d, du, b],
                   {"target": "tridiagonal_solve_perturbed_ffi", "backend_config": ()})
    return out
  *_, x, info = _custom_call(ctx, "gtsv", [dl, d, du, b],
                             [dl.shape, d.shape, du.shape, b.shape, _info_shape(b)],
                             dtype=b.dtype)
  return _nan_where_failed(ctx, x, info)


tridiagonal_solve_p.lower = _tridiagonal_solve_lower


def tridiagonal_solve(dl, d, du, b, *, perturb_singular: bool = False):
  """x with A x = b for the tridiagonal A with sub-diagonal dl (dl[..., 0] unused),
  diagonal d and super-diagonal du (du[..., -1] unused), b of shape [..., m, k]; NaN for a
  singular A unless `perturb_singular` (tiny pivots perturbed to eps * max|U|)."""
  return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


# --------------------------------------------------------------------------------------
# ormqr (LAPACK ormqr / unmqr)
# --------------------------------------------------------------------------------------

def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
  for i, x in enumerate((a, c)):
    _check_operand("ormqr", x, (0, 2)[i])
  if taus.ndim < 1 or taus.shape[:-1] != a.shape[:-2] or c.shape[:-2] != a.shape[:-2]:
    raise ValueError(f"ormqr requires a [..., m, n], taus [..., k] and c [..., p, q] with "
                     f"the same batch dimensions; got {a.shape}, {taus.shape}, {c.shape}")
  if len({np.dtype(x.dtype) for x in (a, taus, c)}) != 1:
    raise TypeError("ormqr requires a, taus and c to have the same dtype")
  m = a.shape[-2]
  if left and c.shape[-2] != m:
    raise ValueError("ormqr with left=True expects c to have the same number of rows as "
                     f"the Householder matrix a. Got a shape {a.shape} and c shape "
                     f"{c.shape}.")
  if not left and c.shape[-1] != m:
    raise ValueError("ormqr with left=False expects c to have the same number of columns as "
                     f"the Householder matrix a has rows. Got a shape {a.shape} and c shape "
                     f"{c.shape}.")
  return c.update(weak_type=False)


def _ormqr_config(left, transpose):
  return (("left", int(left)), ("transpose", int(transpose)))


ormqr_p = declare("ormqr", _ormqr_abstract_eval,
                  lambda a, taus, c, *, left, transpose: lapack_condensed.ormqr(
                      _ormqr_config(left, transpose), a, taus, c)[0])
ormqr_p.batch = batching.all_at_front(ormqr_p)


def _ormqr_lower(ctx, a, taus, c, *, left, transpose):
  name = "ormqr" if np.dtype(a.dtype).kind == "f" else "unmqr"
  return _custom_call(ctx, name, [a, taus, c], [c.shape], _ormqr_config(left, transpose))[0]


ormqr_p.lower = _ormqr_lower


def ormqr(a, taus, c, *, left: bool = True, transpose: bool = False):
  """Q c (left), c Q (right), or with Q^H (`transpose`), for Q = H_1 ... H_k the product
  of the Householder reflectors in a's columns below the diagonal with scale factors taus
  (geqrf's packing), without forming Q."""
  return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


# --------------------------------------------------------------------------------------
# cholesky_update
# --------------------------------------------------------------------------------------

def _cholesky_update_abstract_eval(r, w):
  for i, x in enumerate((r, w)):
    if np.dtype(x.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
      raise TypeError(f"cholesky_update does not accept dtype {np.dtype(x.dtype).name} at "
                      f"position {i}. Accepted dtypes at position {i} are subtypes of "
                      "float32, float64.")
  if r.ndim != 2 or w.ndim != 1 or r.shape[0] != r.shape[1] or w.shape[0] != r.shape[1]:
    raise ValueError("Rank-1 update to Cholesky decomposition takes a square matrix and a "
                     f"vector of the same size as input. Got shapes {r.shape} and "
                     f"{w.shape} instead")
  if r.dtype != w.dtype:
    raise TypeError("cholesky_update requires r_matrix and w_vector of the same dtype")
  return r.update(weak_type=False)


cholesky_update_p = declare("cholesky_update", _cholesky_update_abstract_eval,
                            lambda r, w: lapack_condensed.cholesky_update((), r, w)[0])
cholesky_update_p.lower = lambda ctx, r, w: ctx.emit(
    "custom-call", r.shape, [r, w], {"target": "ember_cholesky_update", "backend_config": ()})


def cholesky_update(r_matrix, w_vector):
  """The upper Cholesky factor of r^T r + w w^T, given the upper factor r of a matrix and
  a vector w (unbatched, as JAX's)."""
  return cholesky_update_p.bind(r_matrix, w_vector)


# --------------------------------------------------------------------------------------
# symmetric_product
# --------------------------------------------------------------------------------------

def _symmetric_product_abstract_eval(a, c, *, alpha, beta):
  for i, x in enumerate((a, c)):
    if np.dtype(x.dtype).kind not in "f" or x.ndim < 2:
      raise TypeError(f"symmetric_product requires floating matrices (rank >= 2); got "
                      f"{x.str_short()} at position {i}")
  if a.shape[-2] != c.shape[-1] or c.shape[-2] != c.shape[-1] or \
     a.shape[:-2] != c.shape[:-2] or a.dtype != c.dtype:
    raise ValueError("symmetric_update expects a rectangular matrix of shape (m, n) and a "
                     f"square matrix of shape (n, n). Got shapes {a.shape} and {c.shape}.")
  return c.update(weak_type=False)


def _symmetric_product_impl(a, c, *, alpha, beta):
  out = alpha * np.matmul(a, np.swapaxes(a, -1, -2)) + beta * c
  return np.asarray(out).astype(c.dtype, copy=False)


def _symmetric_product_composed(a, c, *, alpha, beta):
  # deferred: cycle among the primitive families (linalg imports structural/elementwise)
  from ember._src.primitives.linalg import dot_general
  nb = a.ndim - 2
  batch = tuple(range(nb))
  aat = dot_general(a, a, (((nb + 1,), (nb + 1,)), (batch, batch)))
  return aat * alpha + c * beta


symmetric_product_p = declare("symmetric_product", _symmetric_product_abstract_eval,
                              _symmetric_product_impl)
symmetric_product_p.batch = batching.all_at_front(symmetric_product_p)
symmetric_product_p.lower = lower_fun(_symmetric_product_composed, multiple_results=False)

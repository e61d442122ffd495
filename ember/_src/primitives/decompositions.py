"""Matrix decompositions (jax.lax.linalg): cholesky, triangular_solve, qr, eigh, eig, svd,
lu, lu_pivots_to_permutation, householder_product.

Each primitive works on the last two dimensions; leading dimensions are batch dimensions
(NumPy's linalg routines broadcast over them, so batching a primitive only moves the batch
dimension to the front). Params, outputs and printed forms are JAX 0.12's.

Compilation follows JAX on CPU: each primitive lowers to `custom-call`s of LAPACK's FFI
targets (`lapack_spotrf_ffi`, `lapack_dgesdd_ffi`, ...), plus the HLO ops JAX wraps
around them (NaN where LAPACK reports a failure through `info`, the triangular masks of
qr's R). Passes never fuse, fold or CSE a custom call; the CPU backend runs each as a
thunk (backends/cpu/linalg_thunks.py: LAPACK itself for potrf, trsm, getrf; else the NumPy
routine of its target), the
reference evaluator (hlo_eval) runs the same NumPy function, and so do the impls here:
reference/lapack.py has each target's routine (`CUSTOM_CALL_TARGETS`).
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from ember._src import core
from ember._src.core import ShapedArray
from ember._src.hlo.graph import Shape, TupleShape
from ember._src.primitives import declare, dtype_kind
from ember._src.reference import lapack
from ember._src.transforms import batching

__all__ = ["EigImplementation", "EighImplementation", "SvdAlgorithm",
           "triangular_solve", "qr", "eig", "svd", "lu",
           "lu_pivots_to_permutation", "householder_product",
           "cholesky_p", "triangular_solve_p", "qr_p", "eigh_p", "eig_p", "svd_p", "lu_p",
           "lu_pivots_to_permutation_p", "householder_product_p"]

_LAPACK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                  np.dtype(np.complex128))
_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


class EigImplementation(enum.Enum):
  """eig's implementation: on the CPU only LAPACK's (the others are GPU libraries)."""
  CUSOLVER = "cusolver"
  MAGMA = "magma"
  LAPACK = "lapack"


class EighImplementation(enum.Enum):
  """eigh's implementation: QR (LAPACK's syevd on the CPU); Jacobi and QDWH are GPU/TPU
  algorithms."""
  QR = "qr"
  JACOBI = "jacobi"
  QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
  """svd's algorithm: DEFAULT, QR and DIVIDE_AND_CONQUER run LAPACK on the CPU (ember: gesdd
  for all three); Jacobi and polar are GPU/TPU algorithms."""
  DEFAULT = "default"
  QR = "QR"
  JACOBI = "Jacobi"
  POLAR = "polar"
  DIVIDE_AND_CONQUER = "divide_and_conquer"


_CPU_SVD_ALGORITHMS = (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.QR,
                       SvdAlgorithm.DIVIDE_AND_CONQUER)


def _check_operand(name: str, x: ShapedArray, pos: int = 0, square: bool = False) -> None:
  """JAX's checks: a LAPACK dtype, rank >= 2, and (for square routines) n x n."""
  if np.dtype(x.dtype) not in _LAPACK_DTYPES:
    raise TypeError(f"{name} does not accept dtype {np.dtype(x.dtype).name} at position "
                    f"{pos}. Accepted dtypes at position {pos} are subtypes of float32, "
                    "complex128, complex64, float64.")
  if x.ndim < 2:
    raise TypeError(f"Input {pos} to {name} must have rank at least 2, but got "
                    f"shape={x.shape}")
  if square and x.shape[-1] != x.shape[-2]:
    raise ValueError(f"The input to linalg.{name} must have shape [..., n, n], got shape "
                     f"{x.shape}")


def _batch(x):
  return core.get_aval(x).shape[:-2]


# --------------------------------------------------------------------------------------
# Lowering helpers
# --------------------------------------------------------------------------------------

def _target(name: str, dtype) -> str:
  p = _PREFIX[np.dtype(dtype).name]
  if p in "cz":
    name = {"syevd": "heevd", "orgqr": "ungqr"}.get(name, name)
  return f"lapack_{p}{name}_ffi"


def _custom_call(ctx, name: str, operands, shapes, config=(), dtype=None) -> list:
  """One custom call of LAPACK target `name` (dtype-prefixed); its results unpacked."""
  dtype = operands[0].dtype if dtype is None else dtype
  target = name if name == "lu_pivots_to_permutation" else _target(name, dtype)
  shape = shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))
  out = ctx.emit("custom-call", shape, list(operands),
                 {"target": target, "backend_config": tuple(config)})
  return ctx.unpack(out)


def _nan_where_failed(ctx, x, info, ok_direction="EQ"):
  """x where info == 0 (info >= 0 with ok_direction 'GE'), else NaN (JAX's wrapper)."""
  ok = ctx.compare(info, ctx.constant(0, np.int32), ok_direction)
  nb = info.shape.rank
  ok = ctx.broadcast_in_dim(ok, x.dims, tuple(range(nb)))
  return ctx.select(ok, x, ctx.full(np.nan, x.dtype, x.dims))


def _tri_mask(ctx, dims, lower: bool, k: int = 0):
  """bool mask of the lower (row + k >= col) or upper (row + k <= col) triangle."""
  r = ctx.iota(np.int32, dims, len(dims) - 2)
  c = ctx.iota(np.int32, dims, len(dims) - 1)
  if k:
    r = ctx.add(r, ctx.full(k, np.int32, dims))
  return ctx.compare(r, c, "GE" if lower else "LE")


def _conj(ctx, x):
  if np.dtype(x.dtype).kind != "c":
    return x
  rdt = lapack.real_dtype(x.dtype)
  re = ctx.elementwise("real", x, dtype=rdt)
  im = ctx.elementwise("negate", ctx.elementwise("imag", x, dtype=rdt))
  return ctx.elementwise("complex", re, im, dtype=x.dtype)


# --------------------------------------------------------------------------------------
# cholesky
# --------------------------------------------------------------------------------------

def _cholesky_abstract_eval(x):
  _check_operand("cholesky", x, square=True)
  return x.update(weak_type=False)


def _cholesky_impl(x):
  return lapack.potrf((("uplo", 76),), x)[0]


cholesky_p = declare("cholesky", _cholesky_abstract_eval, _cholesky_impl)
cholesky_p.batch = batching.all_at_front(cholesky_p)


def _cholesky_lower(ctx, x):
  f, info = _custom_call(ctx, "potrf", [x], [x.shape, Shape(np.dtype(np.int32), x.dims[:-2])],
                         (("uplo", 76),))
  return _nan_where_failed(ctx, f, info)


cholesky_p.lower = _cholesky_lower


# --------------------------------------------------------------------------------------
# triangular_solve
# --------------------------------------------------------------------------------------

def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
  for i, x in enumerate((a, b)):
    _check_operand("triangular_solve", x, i)
  if a.dtype != b.dtype:
    raise TypeError(f"triangular_solve requires a and b to have the same dtype, got "
                    f"{np.dtype(a.dtype).name} and {np.dtype(b.dtype).name}")
  if a.shape[-1] != a.shape[-2]:
    raise TypeError(f"triangular_solve requires the last two dimensions of a to be equal "
                    f"in size, got a.shape of {a.shape}.")
  if a.ndim != b.ndim:
    raise TypeError(f"All inputs to triangular_solve must have the same number of batch "
                    f"dimensions, but got {[a.ndim - 2, b.ndim - 2]} batch dimensions for "
                    "the inputs.")
  common = b.shape[-2] if left_side else b.shape[-1]
  if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != common:
    raise ValueError(f"Incompatible shapes for arguments to triangular_solve: {a.shape} and "
                     f"{b.shape}.")
  return b.update(weak_type=False)


def _trsm_config(left_side, lower, transpose_a, conjugate_a, unit_diagonal):
  trans = (67 if conjugate_a else 84) if transpose_a else 78   # 'C' / 'T' / 'N'
  return (("diag", 85 if unit_diagonal else 78), ("side", 76 if left_side else 82),
          ("trans_x", trans), ("uplo", 76 if lower else 85))


def _triangular_solve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a,
                           unit_diagonal):
  if conjugate_a and not transpose_a:
    a = np.conj(a)
  cfg = _trsm_config(left_side, lower, transpose_a, conjugate_a, unit_diagonal)
  return lapack.trsm(cfg, a, b)[0]


triangular_solve_p = declare("triangular_solve", _triangular_solve_abstract_eval,
                             _triangular_solve_impl)
triangular_solve_p.batch = batching.all_at_front(triangular_solve_p)


def _triangular_solve_lower(ctx, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
  if conjugate_a and not transpose_a:
    a = _conj(ctx, a)
  cfg = _trsm_config(left_side, lower, transpose_a, conjugate_a, unit_diagonal)
  return _custom_call(ctx, "trsm", [a, b], [b.shape], cfg)[0]


triangular_solve_p.lower = _triangular_solve_lower


# --------------------------------------------------------------------------------------
# qr
# --------------------------------------------------------------------------------------

def _qr_shapes(shape, full_matrices):
  *batch, m, n = shape
  k = m if full_matrices else min(m, n)
  return tuple(batch) + (m, k), tuple(batch) + (k, n)


def _qr_abstract_eval(x, *, pivoting, full_matrices, use_magma):
  _check_operand("qr", x)
  if pivoting:
    raise ValueError("ember's qr does not support pivoting=True (column-pivoted QR); "
                     "call lax.linalg.qr with pivoting=False.")
  q, r = _qr_shapes(x.shape, full_matrices)
  return [ShapedArray(q, x.dtype), ShapedArray(r, x.dtype)]


def _qr_impl(x, *, pivoting, full_matrices, use_magma):
  if 0 in x.shape:
    q, r = _qr_shapes(x.shape, full_matrices)
    eye = np.broadcast_to(np.eye(*q[-2:], dtype=x.dtype), q).copy()
    return [eye, np.zeros(r, x.dtype)]
  q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
  return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


qr_p = declare("qr", _qr_abstract_eval, _qr_impl, multiple_results=True)
qr_p.batch = batching.all_at_front(qr_p)


def _qr_lower(ctx, x, *, pivoting, full_matrices, use_magma):
  *batch, m, n = x.dims
  k = min(m, n)
  batch = tuple(batch)
  a, taus = _custom_call(ctx, "geqrf", [x], [x.shape, Shape(x.dtype, batch + (k,))])
  if full_matrices and m > n:     # Q's last m - n columns come from the identity
    zero = ctx.constant(0, x.dtype)
    nb = len(batch)
    padded = ctx.pad(a, zero, (0,) * (nb + 2), (0,) * (nb + 1) + (m - n,))
    q = _custom_call(ctx, "orgqr", [padded, taus], [Shape(x.dtype, batch + (m, m))])[0]
    r = a
  else:
    cols = ctx.slice_in_dim(a, 0, k, len(x.dims) - 1)
    q = _custom_call(ctx, "orgqr", [cols, taus], [Shape(x.dtype, batch + (m, k))])[0]
    r = ctx.slice_in_dim(a, 0, k, len(x.dims) - 2) if not full_matrices else a
  # zero below the diagonal (JAX's select on iota(row) - 1 >= iota(col))
  below = _tri_mask(ctx, r.dims, lower=True, k=-1)
  r = ctx.select(below, ctx.full(0, r.dtype, r.dims), r)
  return [q, r]


qr_p.lower = _qr_lower


# --------------------------------------------------------------------------------------
# eigh
# --------------------------------------------------------------------------------------

def _eigh_subset(n, subset_by_index):
  if subset_by_index is None:
    return 0, n
  lo, hi = subset_by_index
  if not 0 <= lo < hi <= n:
    raise ValueError(f"subset_by_index must satisfy 0 <= lo < hi <= n, got "
                     f"{subset_by_index} for n={n}")
  return lo, hi


def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  _check_operand("eigh", x, square=True)
  n = x.shape[-1]
  lo, hi = _eigh_subset(n, subset_by_index)
  return [ShapedArray(x.shape[:-1] + (hi - lo,), x.dtype),
          ShapedArray(x.shape[:-2] + (hi - lo,), lapack.real_dtype(x.dtype))]


def _eigh_config(lower):
  return (("mode", 86), ("uplo", 76 if lower else 85))


def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  v, w, info = lapack.syevd(_eigh_config(lower), x)
  bad = (info != 0)
  v = np.where(bad[..., None, None], np.nan, v).astype(x.dtype)
  w = np.where(bad[..., None], np.nan, w).astype(w.dtype)
  lo, hi = _eigh_subset(x.shape[-1], subset_by_index)
  return [v[..., lo:hi], w[..., lo:hi]]


eigh_p = declare("eigh", _eigh_abstract_eval, _eigh_impl, multiple_results=True)
eigh_p.batch = batching.all_at_front(eigh_p)


def _eigh_lower(ctx, x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
  *batch, n, _ = x.dims
  batch = tuple(batch)
  v, w, info = _custom_call(ctx, "syevd", [x],
                            [x.shape, Shape(lapack.real_dtype(x.dtype), batch + (n,)),
                             Shape(np.dtype(np.int32), batch)], _eigh_config(lower))
  v, w = _nan_where_failed(ctx, v, info), _nan_where_failed(ctx, w, info)
  lo, hi = _eigh_subset(n, subset_by_index)
  if (lo, hi) != (0, n):
    v = ctx.slice_in_dim(v, lo, hi, len(x.dims) - 1)
    w = ctx.slice_in_dim(w, lo, hi, len(x.dims) - 2)
  return [v, w]


eigh_p.lower = _eigh_lower


# --------------------------------------------------------------------------------------
# svd
# --------------------------------------------------------------------------------------

def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  _check_operand("svd", x)
  if subset_by_index is not None and tuple(subset_by_index) != (0, min(x.shape[-2:])):
    raise ValueError("ember's svd does not support subset_by_index; compute all singular "
                     "values and slice them.")
  if algorithm not in _CPU_SVD_ALGORITHMS:
    # JAX's CPU lowering rejects them with this error
    raise NotImplementedError("The SVD Jacobi and Polar algorithms are not implemented on "
                              "CPU.")
  *batch, m, n = x.shape
  k = min(m, n)
  s = ShapedArray(tuple(batch) + (k,), lapack.real_dtype(x.dtype))
  if not compute_uv:
    return [s]
  ku = m if full_matrices else k
  kv = n if full_matrices else k
  return [s, ShapedArray(tuple(batch) + (m, ku), x.dtype),
          ShapedArray(tuple(batch) + (kv, n), x.dtype)]


def _svd_mode(full_matrices, compute_uv):
  return 78 if not compute_uv else (65 if full_matrices else 83)   # 'N' / 'A' / 'S'


def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  _, s, u, vt, info = lapack.gesdd((("mode", _svd_mode(full_matrices, compute_uv)),), x)
  bad = info != 0
  s = np.where(bad[..., None], np.nan, s).astype(s.dtype)
  if not compute_uv:
    return [s]
  nan = lambda y: np.where(bad[..., None, None], np.nan, y).astype(x.dtype)
  return [s, nan(u), nan(vt)]


svd_p = declare("svd", _svd_abstract_eval, _svd_impl, multiple_results=True)
svd_p.batch = batching.all_at_front(svd_p)


def _svd_lower(ctx, x, *, full_matrices, compute_uv, subset_by_index, algorithm):
  *batch, m, n = x.dims
  batch, k = tuple(batch), min(m, n)
  mode = _svd_mode(full_matrices, compute_uv)
  us, vs = ((m, k), (k, n)) if mode == 83 else ((m, m), (n, n))
  _, s, u, vt, info = _custom_call(
      ctx, "gesdd", [x], [x.shape, Shape(lapack.real_dtype(x.dtype), batch + (k,)),
                          Shape(x.dtype, batch + us), Shape(x.dtype, batch + vs),
                          Shape(np.dtype(np.int32), batch)], (("mode", mode),))
  s = _nan_where_failed(ctx, s, info)
  if not compute_uv:
    return [s]
  return [s, _nan_where_failed(ctx, u, info), _nan_where_failed(ctx, vt, info)]


svd_p.lower = _svd_lower


# --------------------------------------------------------------------------------------
# lu and lu_pivots_to_permutation
# --------------------------------------------------------------------------------------

def _lu_abstract_eval(x):
  _check_operand("lu", x)
  *batch, m, n = x.shape
  k = min(m, n)
  return [x.update(weak_type=False), ShapedArray(tuple(batch) + (k,), np.int32),
          ShapedArray(tuple(batch) + (m,), np.int32)]


def _lu_impl(x):
  lu_, ipiv, info = lapack.getrf((), x)
  lu_ = np.where((info < 0)[..., None, None], np.nan, lu_).astype(x.dtype)
  piv = (ipiv - 1).astype(np.int32)
  return [lu_, piv, lapack.pivots_to_permutation(piv, x.shape[-2])]


lu_p = declare("lu", _lu_abstract_eval, _lu_impl, multiple_results=True)
lu_p.batch = batching.all_at_front(lu_p)


def _lu_lower(ctx, x):
  *batch, m, n = x.dims
  batch, k = tuple(batch), min(m, n)
  i32 = np.dtype(np.int32)
  lu_, ipiv, info = _custom_call(ctx, "getrf", [x], [x.shape, Shape(i32, batch + (k,)),
                                                     Shape(i32, batch)])
  piv = ctx.sub(ipiv, ctx.full(1, np.int32, ipiv.dims))
  lu_ = _nan_where_failed(ctx, lu_, info, "GE")
  perm = _custom_call(ctx, "lu_pivots_to_permutation", [piv], [Shape(i32, batch + (m,))],
                      (("permutation_size", m),))[0]
  return [lu_, piv, perm]


lu_p.lower = _lu_lower


def _p2p_abstract_eval(pivots, *, permutation_size):
  if np.dtype(pivots.dtype) != np.int32:
    raise TypeError(f"lu_pivots_to_permutation requires int32 pivots, got "
                    f"{np.dtype(pivots.dtype).name}")
  if pivots.ndim < 1:
    raise ValueError("Argument to lu_pivots_to_permutation must have rank >= 1, got "
                     f"shape {pivots.shape}")
  if permutation_size < pivots.shape[-1]:
    raise ValueError(f"Output permutation size {permutation_size} has to exceed the trailing "
                     f"dimension of the pivots. Got pivots size {pivots.shape[-1]}")
  return ShapedArray(pivots.shape[:-1] + (permutation_size,), np.int32)


lu_pivots_to_permutation_p = declare(
    "lu_pivots_to_permutation", _p2p_abstract_eval,
    lambda p, *, permutation_size: lapack.pivots_to_permutation(p, permutation_size))
lu_pivots_to_permutation_p.batch = batching.all_at_front(lu_pivots_to_permutation_p)
lu_pivots_to_permutation_p.lower = lambda ctx, p, *, permutation_size: _custom_call(
    ctx, "lu_pivots_to_permutation", [p],
    [Shape(np.dtype(np.int32), p.dims[:-1] + (permutation_size,))],
    (("permutation_size", permutation_size),))[0]


# --------------------------------------------------------------------------------------
# householder_product (LAPACK orgqr/ungqr)
# --------------------------------------------------------------------------------------

def _hp_abstract_eval(a, taus):
  _check_operand("householder_product", a)
  if taus.dtype != a.dtype or taus.shape != a.shape[:-2] + (taus.shape[-1],) or \
     taus.shape[-1] > min(a.shape[-2:]) or a.shape[-2] < a.shape[-1]:
    raise ValueError(f"householder_product requires a of shape [..., m, n] with m >= n and "
                     f"taus of shape [..., k] (k <= n) and the same dtype; got {a.str_short()}"
                     f" and {taus.str_short()}")
  return a.update(weak_type=False)


householder_product_p = declare("householder_product", _hp_abstract_eval,
                                lambda a, t: lapack.orgqr((), a, t)[0])
householder_product_p.batch = batching.all_at_front(householder_product_p)
householder_product_p.lower = lambda ctx, a, t: _custom_call(ctx, "orgqr", [a, t], [a.shape])[0]


# --------------------------------------------------------------------------------------
# eig (general square matrices; complex results)
# --------------------------------------------------------------------------------------

def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                       enable_eigvec_derivs, implementation):
  _check_operand("eig", x, square=True)
  cdt = lapack.complex_dtype(x.dtype)
  w = ShapedArray(x.shape[:-1], cdt)
  v = ShapedArray(x.shape, cdt)
  return [w] + [v] * (bool(compute_left_eigenvectors) + bool(compute_right_eigenvectors))


def _eig_config(left, right):
  return (("compute_left", 86 if left else 78), ("compute_right", 86 if right else 78))


def _eig_impl(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
              enable_eigvec_derivs, implementation):
  w, vl, vr, info = lapack.geev_complex(_eig_config(compute_left_eigenvectors,
                                                    compute_right_eigenvectors), x)
  bad = info != 0
  outs = [np.where(bad[..., None], np.nan, w).astype(w.dtype)]
  for want, v in ((compute_left_eigenvectors, vl), (compute_right_eigenvectors, vr)):
    if want:
      outs.append(np.where(bad[..., None, None], np.nan, v).astype(v.dtype))
  return outs


eig_p = declare("eig", _eig_abstract_eval, _eig_impl, multiple_results=True)
eig_p.batch = batching.all_at_front(eig_p)


def _eig_lower(ctx, x, *, compute_left_eigenvectors, compute_right_eigenvectors,
               enable_eigvec_derivs, implementation):
  *batch, n, _ = x.dims
  batch, cdt = tuple(batch), lapack.complex_dtype(x.dtype)
  cfg = _eig_config(compute_left_eigenvectors, compute_right_eigenvectors)
  vs = [Shape(cdt, x.dims), Shape(cdt, x.dims), Shape(np.dtype(np.int32), batch)]
  if np.dtype(x.dtype).kind == "c":
    w, vl, vr, info = _custom_call(ctx, "geev", [x], [Shape(cdt, batch + (n,))] + vs, cfg)
  else:   # sgeev/dgeev return w's real and imaginary parts apart (JAX joins them)
    part = Shape(x.dtype, batch + (n,))
    wr, wi, vl, vr, info = _custom_call(ctx, "geev", [x], [part, part] + vs, cfg)
    w = ctx.elementwise("complex", wr, wi, dtype=cdt)
  outs = [_nan_where_failed(ctx, w, info)]
  for want, v in ((compute_left_eigenvectors, vl), (compute_right_eigenvectors, vr)):
    if want:
      outs.append(_nan_where_failed(ctx, v, info))
  return outs


eig_p.lower = _eig_lower


# --------------------------------------------------------------------------------------
# lax.linalg functions
# --------------------------------------------------------------------------------------

def triangular_solve(a, b, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False):
  """Solve op(a) x = b (left_side) or x op(a) = b for triangular a."""
  conjugate_a = conjugate_a and dtype_kind(core.get_aval(a).dtype) == "c"
  return triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                 transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                 unit_diagonal=bool(unit_diagonal))


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
  """(q, r) with x = q r, q orthonormal columns, r upper triangular."""
  q, r = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                   use_magma=use_magma)
  return q, r


def svd(x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None,
        algorithm=None):
  """(u, s, vh) with x = u diag(s) vh (s descending); only s when compute_uv=False."""
  out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                   subset_by_index=subset_by_index, algorithm=algorithm)
  if compute_uv:
    s, u, vh = out
    return u, s, vh
  return out[0]


def lu(x):
  """(lu, pivots, permutation): x[permutation] = L U with unit-lower L and upper U packed
  in `lu`; pivots are LAPACK's row swaps (0-based)."""
  lu_, piv, perm = lu_p.bind(x)
  return lu_, piv, perm


def lu_pivots_to_permutation(pivots, permutation_size: int):
  """The permutation that applying the row swaps `pivots` in order makes of arange."""
  return lu_pivots_to_permutation_p.bind(pivots,
                                         permutation_size=operator.index(permutation_size))


def householder_product(a, taus):
  """The product of the Householder reflectors stored in a's columns (LAPACK orgqr)."""
  return householder_product_p.bind(a, taus)


def eig(x, *, compute_left_eigenvectors: bool = True, compute_right_eigenvectors: bool = True,
        enable_eigvec_derivs: bool = False, implementation=None, use_magma=None):
  """Eigenvalues [, left eigenvectors] [, right eigenvectors] of general square matrices
  (complex results; eigenvectors as unit columns, as LAPACK's geev)."""
  if implementation not in (None, EigImplementation.LAPACK):
    raise ValueError("Only the lapack implementation is supported on CPU.")
  return eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                    compute_right_eigenvectors=bool(compute_right_eigenvectors),
                    enable_eigvec_derivs=bool(enable_eigvec_derivs), implementation=None)

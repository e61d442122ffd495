"""BCOO, the batched-coordinate sparse array, and its operations (jax.experimental.sparse's
bcoo_* functions). The primitives are bcoo_core's; the structural operations (slice,
reshape, concatenate, ...) rewrite data and indices with jnp ops directly."""
from __future__ import annotations

import math
import operator
import warnings
from typing import Sequence

import numpy as np

from ember._src.base import tree_util
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, logic, reductions, shape as shape_ops
from ember._src.library.sparse import bcoo_core as core
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.util import (
    SparseEfficiencyError, SparseEfficiencyWarning, SparseInfo, broadcast_batch,
    count_stored_elements, linear_index, nfold_vmap,
    static_int, unravel_index)

bcoo_todense_p = core.bcoo_todense_p
bcoo_fromdense_p = core.bcoo_fromdense_p
bcoo_extract_p = core.bcoo_extract_p
bcoo_transpose_p = core.bcoo_transpose_p
bcoo_sort_indices_p = core.bcoo_sort_indices_p
bcoo_sum_duplicates_p = core.bcoo_sum_duplicates_p
bcoo_dot_general_p = core.bcoo_dot_general_p
bcoo_dot_general_sampled_p = core.bcoo_dot_general_sampled_p
bcoo_spdot_general_p = core.bcoo_spdot_general_p


@tree_util.register_pytree_node_class
class BCOO(JAXSparse):
  """A batched-COO sparse array: `data` (batch + (nse,) + dense) and `indices`
  (batch + (nse, n_sparse)) for an array of `shape` = batch + sparse + dense."""

  def __init__(self, args, *, shape, indices_sorted: bool = False,
               unique_indices: bool = False):
    self.data, self.indices = (creation.asarray(a) for a in args)
    self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
    super().__init__(args, shape=shape)
    core.layout(self.data, self.indices, self.shape)

  @property
  def _info(self) -> SparseInfo:
    return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

  @property
  def _bufs(self):
    return self.data, self.indices

  nse = property(lambda self: self.indices.shape[-2])
  dtype = property(lambda self: self.data.dtype)
  n_batch = property(lambda self: self.indices.ndim - 2)
  n_sparse = property(lambda self: self.indices.shape[-1])
  n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)

  def tree_flatten(self):
    # n_batch lets tree_unflatten see the axes vmap took off or put on (None: the leaves
    # are not arrays, as in a vmap in_axes tree)
    n_batch = getattr(self.indices, "ndim", 1) - 2
    return (self.data, self.indices), {**self._info._asdict(),
                                       "n_batch": n_batch if n_batch >= 0 else None}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    obj.shape = vmapped_shape(aux_data, obj.data, obj.indices, 2)
    obj.indices_sorted = aux_data["indices_sorted"]
    obj.unique_indices = aux_data["unique_indices"]
    return obj

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """The BCOO of a scipy.sparse matrix (its COO form)."""
    mat = mat.tocoo()
    indices = np.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
    canonical = bool(mat.has_canonical_format)
    out = cls((creation.asarray(mat.data), creation.asarray(indices)), shape=mat.shape,
              indices_sorted=canonical, unique_indices=canonical)
    return bcoo_update_layout(out, n_batch=n_batch, n_dense=n_dense)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
    shape = tuple(shape)
    n_sparse = len(shape) - n_dense - n_batch
    if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
      raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, "
                       f"nse={nse}")
    batch, sparse, dense = (shape[:n_batch], shape[n_batch:n_batch + n_sparse],
                            shape[n_batch + n_sparse:])
    data = creation.zeros((*batch, nse, *dense), dtype)
    indices = shape_ops.broadcast_to(creation.asarray(sparse, index_dtype),
                                     (*batch, nse, n_sparse))
    return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
    if n_batch or n_dense:
      dense = creation.eye(N, M, k, dtype=dtype)
      return bcoo_fromdense(dense, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    diag = max(0, min(N + min(k, 0), M - max(k, 0)))
    rows = creation.arange(diag, dtype=index_dtype) - min(k, 0)
    cols = creation.arange(diag, dtype=index_dtype) + max(k, 0)
    indices = shape_ops.stack([rows, cols], axis=-1)
    data = creation.ones((diag,), dtype)
    return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)

  def todense(self):
    return bcoo_todense(self)

  def transpose(self, axes=None):
    axes = tuple(reversed(range(self.ndim))) if axes is None else tuple(axes)
    return bcoo_transpose(self, permutation=axes)

  def sum_duplicates(self, nse=None, remove_zeros=True):
    return bcoo_sum_duplicates(self, nse=nse)

  def sort_indices(self):
    return bcoo_sort_indices(self)

  def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
    return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                              on_inefficient=on_inefficient)

  def reshape(self, *args, **kwargs):
    new = args[0] if len(args) == 1 and not isinstance(args[0], int) else args
    return bcoo_reshape(self, new_sizes=tuple(kwargs.get("new_sizes", new)))

  def astype(self, dtype):
    return BCOO((self.data.astype(dtype), self.indices), shape=self.shape,
                indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

  def sum(self, axis=None):
    axes = range(self.ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    out = bcoo_reduce_sum(self, axes=[a % self.ndim for a in axes])
    return reductions.sum(out.data) if out.shape == () else out   # a 0-d sum is dense

  def __neg__(self):
    return BCOO((-self.data, self.indices), shape=self.shape,
                indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)

  def __pos__(self):
    return self

  def __matmul__(self, other):
    return _matmul(self, other)

  def __rmatmul__(self, other):
    return _matmul(other, self)

  def __mul__(self, other):
    if isinstance(other, BCOO):
      return bcoo_multiply_sparse(self, other)
    other = creation.asarray(other)
    if other.ndim == 0 or tuple(other.shape) == self.shape or \
       np.broadcast_shapes(tuple(other.shape), self.shape) == self.shape:
      return BCOO((bcoo_multiply_dense(self, other), self.indices), shape=self.shape,
                  indices_sorted=self.indices_sorted, unique_indices=self.unique_indices)
    return self.todense() * other

  __rmul__ = __mul__

  def __truediv__(self, other):
    return self * (1 / creation.asarray(other))

  def __add__(self, other):
    if isinstance(other, BCOO):
      return _add_sparse(self, other)
    return self.todense() + other

  __radd__ = __add__

  def __sub__(self, other):
    return self + (-other)

  def __rsub__(self, other):
    return (-self) + other


def vmapped_shape(aux_data, data, indices, index_rank):
  """The shape for buffers that vmap took apart or stacked: each leading axis vmap removed
  (in_axes=0) or added (out_axes=0) is a batch axis, dropped from or put before the shape."""
  shape = tuple(aux_data["shape"])
  n_batch = aux_data.get("n_batch")
  ndim = getattr(indices, "ndim", None)
  if n_batch is None or ndim is None or ndim - index_rank == n_batch:
    return shape
  extra = ndim - index_rank - n_batch
  if extra < 0:
    return shape[-extra:]
  lead = [max(a, b) for a, b in zip(data.shape[:extra], indices.shape[:extra])]
  return tuple(lead) + shape


def _matmul(lhs, rhs):
  """`@` with NumPy's rules for 1-D and 2-D operands (stacked matrices: the sparse
  operand's leading axes must be batch axes)."""
  lshape, rshape = tuple(lhs.shape), tuple(rhs.shape)
  if not lshape or not rshape:
    raise ValueError("matmul: a 0-d operand has no matrix dimensions")
  lc = len(lshape) - 1
  rc = max(len(rshape) - 2, 0)
  nb = min(len(lshape), len(rshape)) - 2
  if nb > 0:
    if lshape[:nb] != rshape[:nb]:
      raise ValueError(f"matmul: batch shapes {lshape[:nb]} and {rshape[:nb]} differ")
    dims = (((lc,), (rc,)), (tuple(range(nb)), tuple(range(nb))))
  else:
    dims = (((lc,), (rc,)), ((), ()))
  return bcoo_dot_general(lhs, rhs, dimension_numbers=dims)


def _add_sparse(a: BCOO, b: BCOO) -> BCOO:
  """a + b as one BCOO holding both's stored elements (duplicates add up in todense)."""
  if a.shape != b.shape:
    raise ValueError(f"add: BCOO shapes {a.shape} and {b.shape} differ")
  if (a.n_batch, a.n_dense) != (b.n_batch, b.n_dense):
    raise ValueError(f"add: BCOO layouts differ (n_batch {a.n_batch} vs {b.n_batch}, n_dense "
                     f"{a.n_dense} vs {b.n_dense}); use bcoo_update_layout first")
  if a.indices is b.indices:
    return BCOO((a.data + b.data, a.indices), shape=a.shape,
                indices_sorted=a.indices_sorted, unique_indices=a.unique_indices)
  return _concat_nse([a, b])


def _concat_nse(mats):
  """The stored elements of same-shape, same-layout BCOOs side by side."""
  shape, nb = mats[0].shape, mats[0].n_batch
  bshape = tuple(max(s) for s in zip(*(m.data.shape[:nb] for m in mats),
                                     *(m.indices.shape[:nb] for m in mats))) if nb else ()
  dtype = np.result_type(*(m.dtype for m in mats))
  data = shape_ops.concatenate(
      [broadcast_batch(m.data.astype(dtype), bshape, nb) for m in mats], axis=nb)
  idx = shape_ops.concatenate([broadcast_batch(m.indices, bshape, nb) for m in mats], axis=nb)
  return BCOO((data, idx), shape=shape)


# --- conversions ------------------------------------------------------------------------

def bcoo_todense(mat: BCOO):
  """The dense array of a BCOO (duplicates add up, padding is dropped)."""
  return bcoo_todense_p.bind(mat.data, mat.indices, spinfo=mat._info)


def bcoo_fromdense(mat, *, nse=None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype=np.int32) -> BCOO:
  """The BCOO of a dense array: `nse` defaults to the largest count of nonzero elements
  over the batches (a concrete value: under jit pass `nse`)."""
  mat = creation.asarray(mat)
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > mat.ndim:
    raise ValueError(f"bcoo_fromdense: invalid n_batch={n_batch}, n_dense={n_dense} for an "
                     f"array of shape {tuple(mat.shape)}")
  if nse is None:
    nse = count_stored_elements(mat, n_batch, n_dense)
  nse = static_int(nse, "the nse argument of bcoo_fromdense")
  data, indices = bcoo_fromdense_p.bind(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                        index_dtype=np.dtype(index_dtype))
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr: BCOO, arr, *, assume_unique=None) -> BCOO:
  """A BCOO with `sparr`'s indices holding the values of the dense `arr` there (a duplicated
  index gets the value once unless `assume_unique`)."""
  arr = creation.asarray(arr)
  if tuple(arr.shape) != sparr.shape:
    raise ValueError(f"bcoo_extract: sparr.shape={sparr.shape} and arr.shape="
                     f"{tuple(arr.shape)} differ")
  if assume_unique is None:
    assume_unique = sparr.unique_indices
  data = bcoo_extract_p.bind(sparr.indices, arr, assume_unique=bool(assume_unique))
  return BCOO((data, sparr.indices), shape=sparr.shape, indices_sorted=sparr.indices_sorted,
              unique_indices=sparr.unique_indices)


# --- primitives' front ends ---------------------------------------------------------------

def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
  """Permutes the axes; batch, sparse and dense axes each permute among themselves."""
  permutation = tuple(operator.index(p) for p in permutation)
  if sorted(permutation) != list(range(mat.ndim)):
    raise ValueError(f"bcoo_transpose: permutation {permutation} is not a permutation of "
                     f"the {mat.ndim} axes")
  nb, ns = mat.n_batch, mat.n_sparse
  parts = (permutation[:nb], permutation[nb:nb + ns], permutation[nb + ns:])
  if (sorted(parts[0]) != list(range(nb)) or sorted(parts[1]) != list(range(nb, nb + ns))):
    raise NotImplementedError(
        "bcoo_transpose: permutation must not mix batch, sparse and dense dimensions, got "
        f"permutation={permutation} with n_batch={nb}, n_sparse={ns}")
  data, indices = bcoo_transpose_p.bind(mat.data, mat.indices, permutation=permutation,
                                        spinfo=mat._info)
  return BCOO((data, indices), shape=tuple(mat.shape[p] for p in permutation))


def bcoo_sort_indices(mat: BCOO) -> BCOO:
  """The same array with each batch's indices in lexicographic order."""
  data, indices = bcoo_sort_indices_p.bind(mat.data, mat.indices, spinfo=mat._info)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
              unique_indices=mat.unique_indices)


def bcoo_sum_duplicates(mat: BCOO, nse=None) -> BCOO:
  """Sorted, unique indices, duplicates summed; padding to `nse` (default: the true count,
  a concrete value) uses the sentinel index `shape`."""
  if nse is None:
    nse = core.count_unique(mat.indices, mat._info)
  nse = static_int(nse, "the nse argument of bcoo_sum_duplicates")
  data, indices = bcoo_sum_duplicates_p.bind(mat.data, mat.indices, spinfo=mat._info, nse=nse)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """lax.dot_general with a BCOO operand: dense result, or BCOO when both are sparse."""
  del precision, out_sharding
  (lc, rc), (lb, rb) = dimension_numbers
  dims = ((tuple(map(int, lc)), tuple(map(int, rc))), (tuple(map(int, lb)), tuple(map(int, rb))))
  pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    out_shape, _ = core.spdot_layout(lhs.data, lhs.indices, rhs.data, rhs.indices, lhs._info,
                                     rhs._info, dims)
    data, indices = bcoo_spdot_general_p.bind(
        lhs.data, lhs.indices, rhs.data, rhs.indices, lhs_spinfo=lhs._info,
        rhs_spinfo=rhs._info, dimension_numbers=dims, preferred_element_type=pet)
    return BCOO((data, indices), shape=out_shape)
  if isinstance(lhs, BCOO):
    return bcoo_dot_general_p.bind(lhs.data, lhs.indices, creation.asarray(rhs),
                                   dimension_numbers=dims, preferred_element_type=pet,
                                   lhs_spinfo=lhs._info)
  if isinstance(rhs, BCOO):
    lhs = creation.asarray(lhs)
    out = bcoo_dot_general_p.bind(rhs.data, rhs.indices, lhs,
                                  dimension_numbers=((dims[0][1], dims[0][0]),
                                                     (dims[1][1], dims[1][0])),
                                  preferred_element_type=pet, lhs_spinfo=rhs._info)
    nb = len(lb)
    n_rfree = rhs.ndim - nb - len(rc)
    perm = [*range(nb), *range(nb + n_rfree, out.ndim), *range(nb, nb + n_rfree)]
    return out.transpose(*perm)
  return lax.dot_general(lhs, rhs, dims, preferred_element_type=pet)


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
  """The data of dot_general(A, B) at `indices` (an SDDMM)."""
  (lc, rc), (lb, rb) = dimension_numbers
  dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
  return bcoo_dot_general_sampled_p.bind(creation.asarray(A), creation.asarray(B),
                                         creation.asarray(indices), dimension_numbers=dims)


# --- elementwise ---------------------------------------------------------------------------

def bcoo_multiply_dense(sp_mat: BCOO, v):
  """The data of sp_mat * v (v dense, broadcasting to sp_mat's shape)."""
  v = creation.asarray(v)
  if v.ndim == 0:
    return sp_mat.data * v
  shape = sp_mat.shape
  if np.broadcast_shapes(tuple(v.shape), shape) != shape:
    raise NotImplementedError(
        "multiplication between sparse and dense is only implemented for cases where the "
        f"output shape matches the sparse matrix shape. Got shape={shape}, v.shape="
        f"{tuple(v.shape)}")
  v = shape_ops.broadcast_to(v, shape)
  return sp_mat.data * bcoo_extract_p.bind(sp_mat.indices, v, assume_unique=True)


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
  """lhs * rhs elementwise, both sparse of one shape: a stored element per pair of stored
  elements with equal indices (nse = lhs.nse * rhs.nse, as JAX)."""
  if lhs.shape != rhs.shape:
    raise ValueError(f"bcoo_multiply_sparse: shapes {lhs.shape} and {rhs.shape} differ")
  if lhs.n_dense != rhs.n_dense:
    raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of dense "
                              f"dimensions: {lhs}, {rhs}")
  nb = min(lhs.n_batch, rhs.n_batch)
  lhs = bcoo_update_layout(lhs, n_batch=nb, on_inefficient=None)
  rhs = bcoo_update_layout(rhs, n_batch=nb, on_inefficient=None)
  nse = lhs.nse * rhs.nse
  ld, li = _full(lhs)
  rd, ri = _full(rhs)

  def one(ld, li, rd, ri):
    mask = reductions.all(li[:, None] == ri[None, :], axis=-1)
    il, ir = _nonzero2(mask, nse)
    data = (ld.at[il].get(mode="fill", fill_value=0) * rd.at[ir].get(mode="fill", fill_value=0))
    idx = li.at[il].get(mode="fill", fill_value=max(lhs.shape, default=0))
    return data, idx
  data, indices = nfold_vmap(one, nb)(ld, li, rd, ri)
  return BCOO((data, indices), shape=lhs.shape)


def _nonzero2(mask, size):
  """Row and column of the first `size` True entries of a 2-D mask in row-major order,
  padded with (rows, cols)."""
  n, m = mask.shape
  key = creation.arange(n * m)
  key = creation.asarray(lax.sort(logic.where(mask.ravel(), key, n * m)))
  key = key[:size] if size <= n * m else shape_ops.concatenate(
      [key, creation.full((size - n * m,), n * m, key.dtype)])
  pad = key >= n * m
  return logic.where(pad, n, key // max(m, 1)), logic.where(pad, m, key % max(m, 1))


def _full(mat: BCOO):
  nb = mat.n_batch
  return (broadcast_batch(mat.data, mat.shape[:nb], nb),
          broadcast_batch(mat.indices, mat.shape[:nb], nb))



# --- sums and layout ------------------------------------------------------------------

def _valid(mat: BCOO):
  """True for stored elements whose indices are in bounds (not padding)."""
  nb, ns = mat.n_batch, mat.n_sparse
  bound = creation.asarray(mat.shape[nb:nb + ns], mat.indices.dtype)
  return reductions.all(mat.indices < bound, axis=-1) & reductions.all(mat.indices >= 0,
                                                                        axis=-1)


def _mask_data(data, valid):
  return logic.where(valid.reshape(valid.shape + (1,) * (data.ndim - valid.ndim)), data, 0)


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
  """Sums over `axes`: dense axes sum the data, sparse axes drop their index column,
  batch axes fold into the stored elements."""
  axes = sorted({operator.index(a) % mat.ndim for a in axes})
  nb, ns = mat.n_batch, mat.n_sparse
  data, indices = _full(mat)
  dense_axes = tuple(a - ns + 1 for a in axes if a >= nb + ns)
  data = reductions.sum(data, axis=dense_axes) if dense_axes else data
  if ns:
    data = _mask_data(data, _valid(BCOO((data, indices), shape=mat.shape[:nb + ns]
                                        + tuple(data.shape[nb + 1:]))))
  keep = [i for i in range(ns) if i + nb not in axes]
  indices = indices[..., np.array(keep, dtype=np.int32)] if keep else \
      creation.zeros(indices.shape[:-1] + (0,), indices.dtype)
  batch_axes = [a for a in axes if a < nb]
  kept_b = [a for a in range(nb) if a not in batch_axes]
  if batch_axes:
    nse = mat.nse * math.prod(mat.shape[a] for a in batch_axes)
    bshape = tuple(mat.shape[a] for a in kept_b)
    data = data.transpose(*kept_b, *batch_axes, *range(nb, data.ndim))
    data = data.reshape(bshape + (nse,) + tuple(data.shape[nb + 1:]))
    indices = indices.transpose(*kept_b, *batch_axes, nb, nb + 1)
    indices = indices.reshape(bshape + (nse, indices.shape[-1]))
  out_shape = tuple(s for i, s in enumerate(mat.shape) if i not in axes)
  return BCOO((data, indices), shape=out_shape)


def bcoo_update_layout(mat: BCOO, *, n_batch=None, n_dense=None, on_inefficient="error"):
  """The same array with `n_batch` batch and `n_dense` dense dimensions, moved structurally
  (as JAX): fewer batch/dense dimensions fold into the stored elements; more of them
  spread each stored element over the new axes (masked data: inefficient storage, which
  `on_inefficient` ('error', 'warn' or None) reports)."""
  n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
  n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
  if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
    return mat
  if on_inefficient not in ("error", "warn", None):
    raise ValueError(f"on_inefficient={on_inefficient!r}; expected one of ['error', 'warn', "
                     "None].")
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > mat.ndim:
    raise ValueError(f"bcoo_update_layout: invalid n_batch={n_batch}, n_dense={n_dense} for "
                     f"shape {mat.shape}")
  grows = ((n_dense > mat.n_dense and any(d > 1 for d in mat.shape[mat.ndim - n_dense:
                                                                    mat.ndim - mat.n_dense]))
           or (n_batch > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch:n_batch])))
  if grows:
    msg = (f"For matrix of shape {mat.shape}, changing (n_batch, n_dense) from "
           f"{(mat.n_batch, mat.n_dense)} to {(n_batch, n_dense)} results in inefficient "
           "storage.")
    if on_inefficient == "error":
      raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient "
                                  "argument of bcoo_update_layout to 'warn' or None.")
    if on_inefficient == "warn":
      warnings.warn(msg, SparseEfficiencyWarning, stacklevel=2)
  data, indices = _full(mat)
  if n_batch < mat.n_batch:
    data, indices = _batch_to_sparse(data, indices, mat.shape, mat.n_batch, n_batch)
  nb = min(n_batch, mat.n_batch)
  if n_dense < mat.n_dense:
    data, indices = _dense_to_sparse(data, indices, mat.shape, nb, mat.n_dense, n_dense)
  if n_dense > mat.n_dense:
    data, indices = _sparse_to_dense(data, indices, mat.shape, nb, n_dense)
  if n_batch > mat.n_batch:
    data, indices = _sparse_to_batch(data, indices, mat.shape, nb, n_batch)
  return BCOO((data, indices), shape=mat.shape)


def _batch_to_sparse(data, indices, shape, nb, nb2):
  """Batch axes nb2..nb become leading sparse axes: their coordinates join the indices."""
  moved = shape[nb2:nb]
  nse = indices.shape[-2]
  coords = [lax.broadcasted_iota(indices.dtype, moved + (nse,), k) for k in range(len(moved))]
  coords = shape_ops.broadcast_to(shape_ops.stack(coords, axis=-1),
                                  shape[:nb] + (nse, len(moved)))
  indices = shape_ops.concatenate([coords, indices], axis=-1)
  n = math.prod(moved) * nse
  data = data.reshape(shape[:nb2] + (n,) + tuple(data.shape[nb + 1:]))
  return data, indices.reshape(shape[:nb2] + (n, indices.shape[-1]))


def _dense_to_sparse(data, indices, shape, nb, nd, nd2):
  """Dense axes (the first nd - nd2) become trailing sparse axes: each stored element
  spreads over their places."""
  moved = shape[len(shape) - nd:len(shape) - nd2]
  nse = indices.shape[-2]
  k = math.prod(moved)
  data = data.reshape(data.shape[:nb] + (nse * k,) + tuple(data.shape[data.ndim - nd2:]))
  coords = [lax.broadcasted_iota(indices.dtype, moved, j).reshape(k)
            for j in range(len(moved))]
  coords = shape_ops.stack(coords, axis=-1) if coords else creation.zeros((k, 0),
                                                                           indices.dtype)
  old = shape_ops.broadcast_to(indices[..., None, :],
                               indices.shape[:-1] + (k, indices.shape[-1]))
  new = shape_ops.broadcast_to(coords, indices.shape[:-1] + coords.shape)
  indices = shape_ops.concatenate([old, new], axis=-1)
  return data, indices.reshape(indices.shape[:nb] + (nse * k, indices.shape[-1]))


def _sparse_to_dense(data, indices, shape, nb, nd2):
  """The last sparse axes become dense: each stored element becomes a one-hot block."""
  ns = indices.shape[-1]
  k = nd2 - (data.ndim - nb - 1)
  moved = shape[nb + ns - k:nb + ns]
  hot = None
  for j, size in enumerate(moved):
    col = indices[..., ns - k + j]
    axis = (col[..., None] == creation.arange(size, dtype=col.dtype))
    axis = axis.reshape(axis.shape[:-1] + (1,) * j + (size,) + (1,) * (k - j - 1))
    hot = axis if hot is None else hot & axis
  dense = tuple(data.shape[nb + 1:])
  data = data.reshape(data.shape[:nb + 1] + (1,) * k + dense)
  data = logic.where(hot.reshape(hot.shape + (1,) * len(dense)), data, 0)
  return data, indices[..., :ns - k]


def _sparse_to_batch(data, indices, shape, nb, nb2):
  """The first sparse axes become batch axes: every new batch holds all stored elements,
  with data kept only where its index matches the batch."""
  moved = shape[nb:nb2]
  k = len(moved)
  match = None
  for j, size in enumerate(moved):
    col = indices[..., j]
    here = lax.broadcasted_iota(col.dtype, shape[:nb] + moved + (col.shape[-1],), nb + j)
    hit = here == col.reshape(col.shape[:nb] + (1,) * k + col.shape[nb:])
    match = hit if match is None else match & hit
  data = data.reshape(data.shape[:nb] + (1,) * k + tuple(data.shape[nb:]))
  data = _mask_data(data, match) if match is not None else data
  indices = indices[..., k:]
  indices = shape_ops.broadcast_to(indices.reshape(indices.shape[:nb] + (1,) * k
                                                   + tuple(indices.shape[nb:])),
                                   shape[:nb] + moved + tuple(indices.shape[nb:]))
  return data, indices


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions=None,
                 sharding=None) -> BCOO:
  """Reshape that keeps batch sizes among the batch dimensions and the dense ones."""
  if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
    raise NotImplementedError("bcoo_reshape: nontrivial dimensions (a transposition) not "
                              "yet supported")
  new_sizes = tuple(operator.index(s) for s in new_sizes)
  if math.prod(new_sizes) != mat.size:
    raise TypeError(f"bcoo_reshape: cannot reshape {mat.shape} to {new_sizes}")
  nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
  bsize = math.prod(mat.shape[:nb])
  cut = next((k for k in range(len(new_sizes) + 1) if math.prod(new_sizes[:k]) == bsize
              and (k == nb or new_sizes[k - 1:k] != (1,) or nb == 0)), None)
  dense_shape = mat.shape[mat.ndim - nd:]
  if cut is None or new_sizes[len(new_sizes) - nd:] != dense_shape and nd:
    raise ValueError(f"bcoo_reshape: {mat.shape} -> {new_sizes} mixes batch, sparse and "
                     f"dense dimensions (n_batch={nb}, n_dense={nd})")
  new_b, new_s = new_sizes[:cut], new_sizes[cut:len(new_sizes) - nd]
  data, indices = _full(mat)
  lin = linear_index(indices, mat.shape[nb:nb + ns])
  lin = logic.where(lin >= math.prod(mat.shape[nb:nb + ns]), math.prod(new_s), lin)
  indices = unravel_index(lin, new_s, indices.dtype)
  data = data.reshape(new_b + tuple(data.shape[nb:]))
  indices = indices.reshape(new_b + tuple(indices.shape[nb:]))
  return BCOO((data, indices), shape=new_sizes)

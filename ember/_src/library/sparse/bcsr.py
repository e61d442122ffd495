"""BCSR, the batched compressed-sparse-row array (jax.experimental.sparse.bcsr): `data`
(batch + (nse,) + dense), `indices` (column of each stored element, batch + (nse,)) and
`indptr` (batch + (rows + 1,)). Its primitives expand indptr to rows and run BCOO's
compositions; the other operations go through BCOO, as JAX's do."""
from __future__ import annotations

import numpy as np

from ember._src.base import tree_util
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, reductions, shape as shape_ops
from ember._src.library.sparse import bcoo_core
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.bcoo import BCOO, bcoo_sum_duplicates, vmapped_shape
from ember._src.library.sparse.coo_csr import csr_rows
from ember._src.library.sparse.ops import bcoo_broadcast_in_dim, bcoo_concatenate
from ember._src.library.sparse.util import (
    SparseInfo, broadcast_batch, composite_primitive, count_stored_elements, nfold_vmap,
    static_int)


def coo_indices(indices, indptr, shape):
  """BCOO indices (batch + (nse, 2)) of BCSR's (indices, indptr)."""
  n_batch = indices.ndim - 1
  if indptr.shape[n_batch:] != (shape[n_batch] + 1,):
    raise ValueError(f"BCSR: indptr of shape {tuple(indptr.shape)} does not match "
                     f"{shape[n_batch]} rows (shape {tuple(shape)})")
  indices = broadcast_batch(indices, shape[:n_batch], n_batch)
  indptr = broadcast_batch(indptr, shape[:n_batch], n_batch)
  rows = nfold_vmap(csr_rows, n_batch)(indices, indptr)
  return shape_ops.stack([rows, indices], axis=-1)


def indptr_of_rows(rows, n_rows, index_dtype):
  """indptr of sorted row numbers (rows >= n_rows, padding, are not counted)."""
  def one(r):
    counts = creation.zeros((n_rows,), index_dtype).at[r].add(1, mode="drop")
    return creation.zeros((n_rows + 1,), index_dtype).at[1:].set(reductions.cumsum(counts))
  return nfold_vmap(one, rows.ndim - 1)(rows)


def _todense(data, indices, indptr, *, spinfo):
  return bcoo_core._todense(data, coo_indices(indices, indptr, spinfo.shape), spinfo=spinfo)


def _fromdense(mat, *, nse, n_batch, n_dense, index_dtype):
  data, idx = bcoo_core._fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                   index_dtype=index_dtype)
  return data, idx[..., 1], indptr_of_rows(idx[..., 0], mat.shape[n_batch], index_dtype)


def _extract(indices, indptr, mat):
  return bcoo_core._extract(coo_indices(indices, indptr, mat.shape), mat, assume_unique=True)


def _dot_general(lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers,
                 preferred_element_type, lhs_spinfo):
  return bcoo_core._dot_general(
      lhs_data, coo_indices(lhs_indices, lhs_indptr, lhs_spinfo.shape), rhs,
      dimension_numbers=dimension_numbers, preferred_element_type=preferred_element_type,
      lhs_spinfo=lhs_spinfo)


bcsr_todense_p = composite_primitive("bcsr_todense", _todense, multiple_results=False)
bcsr_fromdense_p = composite_primitive("bcsr_fromdense", _fromdense, multiple_results=True)
bcsr_extract_p = composite_primitive("bcsr_extract", _extract, multiple_results=False)
bcsr_dot_general_p = composite_primitive("bcsr_dot_general", _dot_general,
                                         multiple_results=False)


@tree_util.register_pytree_node_class
class BCSR(JAXSparse):
  """A batched CSR array: two sparse dimensions after `n_batch` batch dimensions."""

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    self.data, self.indices, self.indptr = (creation.asarray(a) for a in args)
    self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
    super().__init__(args, shape=shape)
    if len(self.shape) - self.n_batch - self.n_dense != 2 or self.n_dense < 0:
      raise ValueError("BCSR array must have 2 sparse dimensions; got data "
                       f"{tuple(self.data.shape)}, indices {tuple(self.indices.shape)} for "
                       f"shape {self.shape}")
    coo_indices(self.indices, self.indptr, self.shape)   # checks indptr's shape

  _bufs = property(lambda self: (self.data, self.indices, self.indptr))
  _info = property(lambda self: SparseInfo(self.shape, self.indices_sorted,
                                           self.unique_indices))
  nse = property(lambda self: self.indices.shape[-1])
  dtype = property(lambda self: self.data.dtype)
  n_batch = property(lambda self: self.indices.ndim - 1)
  n_sparse = property(lambda self: 2)
  n_dense = property(lambda self: self.data.ndim - self.indices.ndim)

  def tree_flatten(self):
    n_batch = getattr(self.indices, "ndim", 0) - 1   # None: not arrays (vmap's in_axes)
    return (self.data, self.indices, self.indptr), {**self._info._asdict(),
                                                    "n_batch": n_batch if n_batch >= 0 else None}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    obj.shape = vmapped_shape(aux_data, obj.data, obj.indices, 1)
    obj.indices_sorted = aux_data["indices_sorted"]
    obj.unique_indices = aux_data["unique_indices"]
    return obj

  def transpose(self, axes=None):
    """A BCSR's transpose is not a BCSR of the same rows: go through BCOO."""
    return self.to_bcoo().transpose(axes)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
    shape = tuple(shape)
    if len(shape) - n_dense - n_batch != 2 or min(n_dense, n_batch, nse) < 0:
      raise ValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
    batch, (rows, cols), dense = shape[:n_batch], shape[n_batch:n_batch + 2], shape[
        n_batch + 2:]
    return cls((creation.zeros(batch + (nse,) + dense, dtype),
                creation.full(batch + (nse,), cols, index_dtype),
                creation.zeros(batch + (rows + 1,), index_dtype)), shape=shape)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
    return cls.from_bcoo(BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype,
                                   n_batch=n_batch, n_dense=n_dense))

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  def todense(self):
    return bcsr_todense(self)

  def sum_duplicates(self, nse=None, remove_zeros=True):
    return bcsr_sum_duplicates(self, nse=nse)

  def to_bcoo(self) -> BCOO:
    return BCOO((self.data, coo_indices(self.indices, self.indptr, self.shape)),
                shape=self.shape, indices_sorted=self.indices_sorted,
                unique_indices=self.unique_indices)

  @classmethod
  def from_bcoo(cls, arr: BCOO) -> "BCSR":
    if arr.n_sparse != 2:
      raise ValueError(f"BCSR.from_bcoo requires n_sparse=2; got n_sparse={arr.n_sparse}")
    if not arr.indices_sorted:
      arr = arr.sort_indices()
    idx = broadcast_batch(arr.indices, arr.shape[:arr.n_batch], arr.n_batch)
    data = broadcast_batch(arr.data, arr.shape[:arr.n_batch], arr.n_batch)
    indptr = indptr_of_rows(idx[..., 0], arr.shape[arr.n_batch], idx.dtype)
    return cls((data, idx[..., 1], indptr), shape=arr.shape, indices_sorted=True,
               unique_indices=arr.unique_indices)

  def __matmul__(self, other):
    nd = creation.asarray(other).ndim
    dims = (((self.ndim - 1,), (0,)), ((), ()))
    if self.n_batch or nd not in (1, 2):
      raise ValueError("BCSR @: only 2-D BCSR @ 1-D or 2-D arrays")
    return bcsr_dot_general(self, other, dimension_numbers=dims)


def bcsr_todense(mat: BCSR):
  """The dense array of a BCSR."""
  return bcsr_todense_p.bind(mat.data, mat.indices, mat.indptr, spinfo=mat._info)


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32) -> BCSR:
  """The BCSR of a dense array (nse as in bcoo_fromdense)."""
  mat = creation.asarray(mat)
  if mat.ndim - n_batch - n_dense != 2:
    raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
  if nse is None:
    nse = count_stored_elements(mat, n_batch, n_dense)
  nse = static_int(nse, "the nse argument of bcsr_fromdense")
  bufs = bcsr_fromdense_p.bind(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                               index_dtype=np.dtype(index_dtype))
  return BCSR(bufs, shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcsr_extract(indices, indptr, mat):
  """The values of the dense `mat` at BCSR's (indices, indptr): a data array."""
  return bcsr_extract_p.bind(creation.asarray(indices), creation.asarray(indptr),
                             creation.asarray(mat))


def bcsr_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """lax.dot_general with a BCSR left operand and a dense right one."""
  del precision, out_sharding
  if isinstance(rhs, JAXSparse):
    raise TypeError("bcsr_dot_general: the right operand must be a dense array")
  pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
  (lc, rc), (lb, rb) = dimension_numbers
  dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
  if not isinstance(lhs, BCSR):
    return lax.dot_general(lhs, rhs, dims, preferred_element_type=pet)
  return bcsr_dot_general_p.bind(lhs.data, lhs.indices, lhs.indptr, creation.asarray(rhs),
                                 dimension_numbers=dims, preferred_element_type=pet,
                                 lhs_spinfo=lhs._info)


def bcsr_sum_duplicates(mat: BCSR, nse=None) -> BCSR:
  """Duplicates summed, indices sorted (see bcoo_sum_duplicates)."""
  return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat: BCSR, *, shape, broadcast_dimensions, sharding=None) -> BCSR:
  """lax.broadcast_in_dim of a BCSR (through BCOO)."""
  return BCSR.from_bcoo(bcoo_broadcast_in_dim(mat.to_bcoo(), shape=shape,
                                              broadcast_dimensions=broadcast_dimensions))


def bcsr_concatenate(operands, *, dimension: int) -> BCSR:
  """lax.concatenate of BCSRs of one layout (through BCOO)."""
  return BCSR.from_bcoo(bcoo_concatenate([m.to_bcoo() for m in operands],
                                         dimension=dimension))

"""The 2-D COO, CSR and CSC matrices (jax.experimental.sparse.coo / .csr): the formats
before BCOO, with fromdense/todense/matvec/matmat primitives built from scatter-adds and
gathers. CSC is CSR of the transpose."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ember._src.base import tree_util
from ember._src.library.numpy import creation, logic, reductions, sorting
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.util import composite_primitive, static_int


class COOInfo(NamedTuple):
  shape: tuple
  rows_sorted: bool = False
  cols_sorted: bool = False


def _check_2d(name, shape):
  if len(shape) != 2:
    raise ValueError(f"{name} must have ndim=2; got shape={tuple(shape)}")


def _nonzero_2d(mat, nse):
  """Row and column of the first `nse` nonzeros (row-major), padded with (0, 0) as
  jnp.nonzero pads; the data there is zeroed. Also the true count."""
  n, m = mat.shape
  flat = (mat != 0).reshape(n * m)
  key = sorting.sort(logic.where(flat, creation.arange(n * m), n * m))
  if nse <= n * m:
    key = key[:nse]
  else:
    key = _pad(key, nse, n * m)
  pad = key >= n * m
  key = logic.where(pad, 0, key)
  row, col = key // max(m, 1), key % max(m, 1)
  data = logic.where(pad, 0, mat[row, col])
  return data, row, col, pad


def _pad(key, nse, fill):
  out = creation.full((nse,), fill, key.dtype)
  return out.at[:key.shape[0]].set(key)


# --- COO --------------------------------------------------------------------------------

def _coo_todense(data, row, col, *, spinfo):
  return creation.zeros(spinfo.shape, data.dtype).at[row, col].add(data, mode="drop")


def _coo_fromdense(mat, *, nse, index_dtype):
  data, row, col, _ = _nonzero_2d(mat, nse)
  return data, row.astype(index_dtype), col.astype(index_dtype)


def _coo_matvec(data, row, col, v, *, spinfo, transpose):
  if transpose:
    row, col = col, row
  n_out = spinfo.shape[1] if transpose else spinfo.shape[0]
  prod = data * v.at[col].get(mode="fill", fill_value=0)
  return creation.zeros((n_out,) + tuple(v.shape[1:]), prod.dtype).at[row].add(prod,
                                                                               mode="drop")


def _coo_matmat(data, row, col, B, *, spinfo, transpose):
  if transpose:
    row, col = col, row
  n_out = spinfo.shape[1] if transpose else spinfo.shape[0]
  prod = data[:, None] * B.at[col].get(mode="fill", fill_value=0)
  return creation.zeros((n_out, B.shape[1]), prod.dtype).at[row].add(prod, mode="drop")


coo_todense_p = composite_primitive("coo_todense", _coo_todense, multiple_results=False)
coo_fromdense_p = composite_primitive("coo_fromdense", _coo_fromdense, multiple_results=True)
coo_matvec_p = composite_primitive("coo_matvec", _coo_matvec, multiple_results=False)
coo_matmat_p = composite_primitive("coo_matmat", _coo_matmat, multiple_results=False)


def _promote(data, other):
  other = creation.asarray(other)
  dtype = np.result_type(data.dtype, other.dtype)
  return data.astype(dtype), other.astype(dtype)


def _matmul_checked(name, shape, other, transpose=False):
  other = creation.asarray(other)
  if isinstance(other, JAXSparse):
    raise NotImplementedError("matmul between two sparse objects.")
  if other.ndim not in (1, 2):
    raise NotImplementedError(f"matmul with object of shape {tuple(other.shape)}")
  inner = shape[0] if transpose else shape[1]
  if other.shape[0] != inner:
    raise ValueError(f"{name}: matrix of shape {tuple(shape)}{'.T' if transpose else ''} "
                     f"cannot multiply an operand of shape {tuple(other.shape)}")
  return other


@tree_util.register_pytree_node_class
class COO(JAXSparse):
  """A 2-D coordinate-format matrix: `data`, `row`, `col`, each of length nse."""

  def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
    self.data, self.row, self.col = (creation.asarray(a) for a in args)
    self._rows_sorted, self._cols_sorted = rows_sorted, cols_sorted
    super().__init__(args, shape=shape)
    _check_2d("COO", self.shape)

  _info = property(lambda self: COOInfo(self.shape, self._rows_sorted, self._cols_sorted))
  _bufs = property(lambda self: (self.data, self.row, self.col))
  nse = property(lambda self: self.data.size)
  dtype = property(lambda self: self.data.dtype)

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    _check_2d("COO", shape)
    empty = creation.zeros((0,), index_dtype)
    return cls((creation.zeros((0,), dtype), empty, empty), shape=tuple(shape),
               rows_sorted=True, cols_sorted=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    row, col = _diagonal(N, M, k, index_dtype)
    return cls((creation.ones(row.shape, dtype), row, col), shape=(N, M), rows_sorted=True,
               cols_sorted=True)

  def _sort_indices(self):
    if self._rows_sorted:
      return self
    perm = sorting.lexsort((self.col, self.row))
    return COO((self.data[perm], self.row[perm], self.col[perm]), shape=self.shape,
               rows_sorted=True)

  def todense(self):
    return coo_todense(self)

  def transpose(self, axes=None):
    if axes is not None and tuple(axes) != (1, 0):
      raise ValueError(f"COO.transpose: axes must be None or (1, 0), got {axes}")
    return COO((self.data, self.col, self.row), shape=self.shape[::-1],
               rows_sorted=self._cols_sorted, cols_sorted=self._rows_sorted)

  def tree_flatten(self):
    return (self.data, self.row, self.col), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.row, obj.col = children
    obj.shape = tuple(aux_data["shape"])
    obj._rows_sorted, obj._cols_sorted = aux_data["rows_sorted"], aux_data["cols_sorted"]
    return obj

  def __matmul__(self, other):
    other = _matmul_checked("COO", self.shape, other)
    data, other = _promote(self.data, other)
    mat = COO((data, self.row, self.col), **self._info._asdict())
    return coo_matvec(mat, other) if other.ndim == 1 else coo_matmat(mat, other)


def _diagonal(N, M, k, index_dtype):
  size = max(0, min(N, M - k) if k > 0 else min(N + k, M))
  idx = creation.arange(size, dtype=index_dtype)
  return idx - min(k, 0), idx + max(k, 0)


def _dense_and_nse(name, mat, nse):
  """The 2-D dense operand of `name` and its static nse (default: its count of nonzeros)."""
  mat = creation.asarray(mat)
  _check_2d(f"{name}: mat", mat.shape)
  if nse is None:
    nse = reductions.sum(mat != 0)
  return mat, static_int(nse, f"the nse argument of {name}")


def coo_todense(mat: COO):
  """The dense matrix of a COO (duplicates add up)."""
  return coo_todense_p.bind(mat.data, mat.row, mat.col, spinfo=mat._info)


def coo_fromdense(mat, *, nse=None, index_dtype=np.int32) -> COO:
  """The COO of a dense matrix; `nse` defaults to the number of nonzeros (concrete)."""
  mat, nse = _dense_and_nse("coo_fromdense", mat, nse)
  bufs = coo_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
  return COO(bufs, shape=mat.shape, rows_sorted=True)


def coo_matvec(mat: COO, v, transpose: bool = False):
  """mat @ v (mat.T @ v when `transpose`)."""
  v = _matmul_checked("coo_matvec", mat.shape, v, transpose)
  return coo_matvec_p.bind(mat.data, mat.row, mat.col, v, spinfo=mat._info,
                           transpose=bool(transpose))


def coo_matmat(mat: COO, B, *, transpose: bool = False):
  """mat @ B (mat.T @ B when `transpose`)."""
  B = _matmul_checked("coo_matmat", mat.shape, B, transpose)
  return coo_matmat_p.bind(mat.data, mat.row, mat.col, B, spinfo=mat._info,
                           transpose=bool(transpose))


# --- CSR / CSC --------------------------------------------------------------------------

def csr_rows(indices, indptr):
  """The row of each stored element (CSR's indptr expanded)."""
  marks = creation.zeros(indices.shape, indptr.dtype).at[indptr[1:]].add(1, mode="drop")
  return reductions.cumsum(marks).astype(indices.dtype)


def _csr_todense(data, indices, indptr, *, shape):
  return _coo_todense(data, csr_rows(indices, indptr), indices, spinfo=COOInfo(shape))


def _csr_fromdense(mat, *, nse, index_dtype):
  data, row, col, pad = _nonzero_2d(mat, nse)
  m = mat.shape[0]
  row = logic.where(pad, m, row)
  counts = creation.zeros((m,), index_dtype).at[row].add(1, mode="drop")
  indptr = creation.zeros((m + 1,), index_dtype).at[1:].set(reductions.cumsum(counts))
  return data, col.astype(index_dtype), indptr


def _csr_matvec(data, indices, indptr, v, *, shape, transpose):
  return _coo_matvec(data, csr_rows(indices, indptr), indices, v, spinfo=COOInfo(shape),
                     transpose=transpose)


def _csr_matmat(data, indices, indptr, B, *, shape, transpose):
  return _coo_matmat(data, csr_rows(indices, indptr), indices, B, spinfo=COOInfo(shape),
                     transpose=transpose)


csr_todense_p = composite_primitive("csr_todense", _csr_todense, multiple_results=False)
csr_fromdense_p = composite_primitive("csr_fromdense", _csr_fromdense, multiple_results=True)
csr_matvec_p = composite_primitive("csr_matvec", _csr_matvec, multiple_results=False)
csr_matmat_p = composite_primitive("csr_matmat", _csr_matmat, multiple_results=False)


class _CompressedBase(JAXSparse):
  """CSR and CSC: `data` and `indices` of length nse, `indptr` of length n + 1."""

  def __init__(self, args, *, shape):
    self.data, self.indices, self.indptr = (creation.asarray(a) for a in args)
    super().__init__(args, shape=shape)
    _check_2d(type(self).__name__, self.shape)

  _bufs = property(lambda self: (self.data, self.indices, self.indptr))
  nse = property(lambda self: self.data.size)
  dtype = property(lambda self: self.data.dtype)

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), {"shape": self.shape}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    obj.shape = tuple(aux_data["shape"])
    return obj

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    _check_2d(cls.__name__, shape)
    n = shape[0] if cls is CSR else shape[1]
    return cls((creation.zeros((0,), dtype), creation.zeros((0,), index_dtype),
                creation.zeros((n + 1,), index_dtype)), shape=tuple(shape))


@tree_util.register_pytree_node_class
class CSR(_CompressedBase):
  """A compressed-sparse-row matrix."""

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    row, col = _diagonal(N, M, k, index_dtype)
    counts = creation.zeros((N,), index_dtype).at[row].add(1)
    indptr = creation.zeros((N + 1,), index_dtype).at[1:].set(reductions.cumsum(counts))
    return cls((creation.ones(row.shape, dtype), col, indptr), shape=(N, M))

  def todense(self):
    return csr_todense(self)

  def transpose(self, axes=None):
    if axes is not None and tuple(axes) != (1, 0):
      raise ValueError(f"CSR.transpose: axes must be None or (1, 0), got {axes}")
    return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    other = _matmul_checked("CSR", self.shape, other)
    data, other = _promote(self.data, other)
    fn = csr_matvec_p if other.ndim == 1 else csr_matmat_p
    return fn.bind(data, self.indices, self.indptr, other, shape=self.shape, transpose=False)


@tree_util.register_pytree_node_class
class CSC(_CompressedBase):
  """A compressed-sparse-column matrix (the CSR of its transpose)."""

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    return csr_fromdense(creation.asarray(mat).T, nse=nse, index_dtype=index_dtype).T

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

  def todense(self):
    return csr_todense(self.T).T

  def transpose(self, axes=None):
    if axes is not None and tuple(axes) != (1, 0):
      raise ValueError(f"CSC.transpose: axes must be None or (1, 0), got {axes}")
    return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    other = _matmul_checked("CSC", self.shape, other)
    data, other = _promote(self.data, other)
    fn = csr_matvec_p if other.ndim == 1 else csr_matmat_p
    return fn.bind(data, self.indices, self.indptr, other, shape=self.shape[::-1],
                   transpose=True)


def csr_todense(mat: CSR):
  """The dense matrix of a CSR."""
  return csr_todense_p.bind(mat.data, mat.indices, mat.indptr, shape=mat.shape)


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32) -> CSR:
  """The CSR of a dense matrix; `nse` defaults to the number of nonzeros (concrete)."""
  mat, nse = _dense_and_nse("csr_fromdense", mat, nse)
  return CSR(csr_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype)),
             shape=mat.shape)


def csr_matvec(mat: CSR, v, transpose: bool = False):
  """mat @ v (mat.T @ v when `transpose`)."""
  v = _matmul_checked("csr_matvec", mat.shape, v, transpose)
  return csr_matvec_p.bind(mat.data, mat.indices, mat.indptr, v, shape=mat.shape,
                           transpose=bool(transpose))


def csr_matmat(mat: CSR, B, *, transpose: bool = False):
  """mat @ B (mat.T @ B when `transpose`)."""
  B = _matmul_checked("csr_matmat", mat.shape, B, transpose)
  return csr_matmat_p.bind(mat.data, mat.indices, mat.indptr, B, shape=mat.shape,
                           transpose=bool(transpose))

"""The format-generic functions of jax.experimental.sparse (api.py, random.py): todense and
its primitive, empty, eye, random_bcoo."""
from __future__ import annotations

import math

import numpy as np

from ember._src.base import tree_util
from ember._src.library.numpy import creation
from ember._src.library.random import keys as random_keys, samplers
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.bcoo import BCOO
from ember._src.library.sparse.bcsr import BCSR
from ember._src.library.sparse.coo_csr import COO, CSC, CSR
from ember._src.library.sparse.util import composite_primitive, nfold_vmap

_FORMATS = {"bcoo": BCOO, "bcsr": BCSR, "coo": COO, "csr": CSR, "csc": CSC}


def _todense_bufs(*bufs, tree):
  arr = tree_util.tree_unflatten(tree, bufs)
  return arr.todense() if isinstance(arr, JAXSparse) else arr


todense_p = composite_primitive("todense", _todense_bufs, multiple_results=False)


def todense(arr):
  """The dense array of a sparse one; a dense array passes through."""
  bufs, tree = tree_util.tree_flatten(arr)
  return todense_p.bind(*bufs, tree=tree)


def _format(sparse_format):
  if sparse_format not in _FORMATS:
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                     f"{list(_FORMATS)}")
  return _FORMATS[sparse_format]


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """An all-zero sparse array with no stored elements."""
  return _format(sparse_format)._empty(shape, dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """The sparse identity (ones on diagonal `k`)."""
  N = int(N)
  M = N if M is None else int(M)
  return _format(sparse_format)._eye(N, M, int(k), dtype=dtype, index_dtype=index_dtype,
                                     **kwds)


def random_bcoo(key, shape, *, dtype=np.float32, indices_dtype=np.int32, nse=0.2, n_batch=0,
                n_dense=0, unique_indices=True, sorted_indices=False, generator=None, **kwds):
  """A random BCOO: `nse` stored elements per batch (a fraction of the sparse size when
  below 1), at random (unique) indices, data drawn by `generator` (uniform)."""
  shape = tuple(int(s) for s in shape)
  n_sparse = len(shape) - n_batch - n_dense
  if n_sparse < 0 or n_batch < 0 or n_dense < 0:
    raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape {shape}")
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  size = math.prod(sparse_shape)
  if 0 <= nse < 1:
    nse = int(math.ceil(nse * size))
  nse = int(nse)
  if unique_indices and nse > size:
    raise ValueError(f"nse={nse} is larger than the {size} elements of the sparse dimensions")
  generator = samplers.uniform if generator is None else generator
  data_key, index_key = random_keys.split(key)
  data = generator(data_key, shape[:n_batch] + (nse,) + shape[n_batch + n_sparse:], dtype,
                   **kwds)
  keys = random_keys.split(index_key, math.prod(shape[:n_batch]))
  keys = keys.reshape(shape[:n_batch] + keys.shape[1:])

  def one(k):
    flat = samplers.choice(k, size, shape=(nse,), replace=not unique_indices)
    if sorted_indices:
      flat = flat.sort()
    cols, rest = [], flat
    for s in reversed(sparse_shape):
      cols.append(rest % s)
      rest = rest // s
    return creation.asarray(cols[::-1], indices_dtype).T.reshape(nse, n_sparse)
  indices = nfold_vmap(one, n_batch)(keys)
  return BCOO((data, indices), shape=shape, indices_sorted=sorted_indices,
              unique_indices=unique_indices)

"""The format-generic functions of jax.experimental.sparse (api.py, random.py): todense and
its primitive, empty, eye, random_bcoo."""
from __future__ import annotations

import math
import operator

import numpy as np

from ember._src.base import tree_util
from ember._src.library.numpy import creation
from ember._src.library.random import keys as random_keys, samplers
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.bcoo import BCOO
from ember._src.library.sparse.bcsr import BCSR
from ember._src.library.sparse.coo_csr import COO, CSC, CSR
from ember._src.library.sparse.util import composite_primitive, unravel_index
from ember._src.transforms.batching import vmap

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


def random_bcoo(key, shape, *, dtype=np.float32, indices_dtype=None, nse=0.2, n_batch=0,
                n_dense=0, unique_indices=True, sorted_indices=False, generator=None, **kwds):
  """A random BCOO, drawn as JAX draws it: `nse` stored elements per batch (a fraction of
  the sparse size when below 1), at indices chosen (without replacement when
  `unique_indices`) with one key per batch, data from `generator` (uniform) with the first
  key of `split(key, batches + 1)`."""
  shape = tuple(operator.index(s) for s in shape)
  n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
    raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
  n_sparse = len(shape) - n_batch - n_dense
  batch_shape = shape[:n_batch]
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense_shape = shape[n_batch + n_sparse:]
  sparse_size = math.prod(sparse_shape)
  if not 0 <= nse < sparse_size:
    raise ValueError(f"got nse={nse}, expected to be between 0 and {sparse_size}")
  if 0 < nse < 1:
    nse = math.ceil(nse * sparse_size)
  nse = operator.index(nse)
  indices_dtype = np.dtype(np.int32 if indices_dtype is None else indices_dtype)
  if sparse_size > np.iinfo(indices_dtype).max:
    raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to "
                     f"generate sparse indices of size {sparse_size}.")
  generator = samplers.uniform if generator is None else generator
  keys = random_keys.split(key, math.prod(batch_shape) + 1)
  data = generator(keys[0], shape=batch_shape + (nse,) + dense_shape, dtype=dtype, **kwds)

  def one(k):
    flat = samplers.choice(k, sparse_size, shape=(nse,),
                           replace=not unique_indices).astype(indices_dtype)
    return unravel_index(flat, sparse_shape, indices_dtype)
  indices = vmap(one)(keys[1:]).reshape(batch_shape + (nse, n_sparse))
  mat = BCOO((data, indices), shape=shape)
  return mat.sort_indices() if sorted_indices else mat

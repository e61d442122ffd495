"""`sparsify` (jnp code run on BCOO operands: the function's jaxpr is evaluated with sparse
rules for the operations that keep sparsity, densifying the operands of any other), and the
format-generic helpers todense, empty, eye, random_bcoo."""
from __future__ import annotations

import functools
import math

import numpy as np

from ember._src.base import tree_util
from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.core.jaxpr import Literal
from ember._src.driver.jit import make_jaxpr
from ember._src.library.random import keys as random_keys, samplers
from ember._src.library.numpy import creation
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.bcoo import (
    BCOO, _add_sparse, bcoo_dot_general, bcoo_multiply_sparse, bcoo_todense, bcoo_transpose)
from ember._src.library.sparse.ops import bcoo_reduce_sum
from ember._src.library.sparse.util import nfold_vmap


def todense(arr):
  """The dense array of a sparse one; a dense array is returned as it is."""
  return arr.todense() if isinstance(arr, JAXSparse) else creation.asarray(arr)


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """An all-zero sparse array with no stored elements."""
  if sparse_format != "bcoo":
    raise ValueError(f"sparse_format must be 'bcoo' in ember, got {sparse_format!r}")
  return BCOO._empty(shape, dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """The sparse identity (ones on diagonal `k`)."""
  if sparse_format != "bcoo":
    raise ValueError(f"sparse_format must be 'bcoo' in ember, got {sparse_format!r}")
  return BCOO._eye(N, N if M is None else M, k, dtype=dtype, index_dtype=index_dtype, **kwds)


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


# --- sparsify -------------------------------------------------------------------------------

def _dense(x):
  return x.todense() if isinstance(x, JAXSparse) else x


def _mul(eqn, a, b):
  if isinstance(a, BCOO) and isinstance(b, BCOO):
    return bcoo_multiply_sparse(a, b)
  return a * b if isinstance(a, BCOO) else b * a


def _add(eqn, a, b):
  if isinstance(a, BCOO) and isinstance(b, BCOO):
    return _add_sparse(a, b)
  return _dense(a) + _dense(b)


def _sub(eqn, a, b):
  if isinstance(a, BCOO) and isinstance(b, BCOO):
    return _add_sparse(a, -b)
  return _dense(a) - _dense(b)


def _dot_general(eqn, a, b):
  p = eqn.params
  return bcoo_dot_general(a, b, dimension_numbers=p["dimension_numbers"],
                          preferred_element_type=p.get("preferred_element_type"))


_RULES = {
    "mul": _mul, "add": _add, "add_any": _add, "sub": _sub,
    "neg": lambda eqn, a: -a,
    "dot_general": _dot_general,
    "reduce_sum": lambda eqn, a: bcoo_reduce_sum(a, axes=eqn.params["axes"]),
    "transpose": lambda eqn, a: bcoo_transpose(a, permutation=eqn.params["permutation"]),
    "convert_element_type": lambda eqn, a: a.astype(eqn.params["new_dtype"]),
}


def _eval_sparse(jaxpr, consts, args):
  env = {}
  read = lambda v: v.val if isinstance(v, Literal) else env[v]
  for var, val in zip(jaxpr.constvars, consts):
    env[var] = val
  for var, val in zip(jaxpr.invars, args):
    env[var] = val
  for eqn in jaxpr.eqns:
    vals = [read(v) for v in eqn.invars]
    rule = _RULES.get(eqn.primitive.name)
    if rule is not None and any(isinstance(v, BCOO) for v in vals):
      outs = [rule(eqn, *vals)]
    else:
      outs = eqn.primitive.bind(*map(_dense, vals), **eqn.params)
      outs = outs if eqn.primitive.multiple_results else [outs]
    for var, val in zip(eqn.outvars, outs):
      env[var] = val
  return [read(v) for v in jaxpr.outvars]


def sparsify(f, use_tracer=False):
  """`f` made to accept BCOO arrays wherever it takes arrays: elementwise products, sums,
  differences, negation, dot products, reductions and transposes stay sparse; other
  operations see the operands' dense values."""
  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    leaves, tree = tree_util.tree_flatten((args, kwargs),
                                          is_leaf=lambda x: isinstance(x, JAXSparse))
    stand_ins = [ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, JAXSparse) else x
                 for x in leaves]
    out_tree = []

    def flat_fun(*xs):
      a, k = tree_util.tree_unflatten(tree, xs)
      outs, t = tree_util.tree_flatten(f(*a, **k))
      out_tree.append(t)
      return outs
    closed = make_jaxpr(flat_fun)(*stand_ins)
    jaxpr = getattr(closed, "jaxpr", closed)
    outs = _eval_sparse(jaxpr, getattr(closed, "consts", []), leaves)
    return tree_util.tree_unflatten(out_tree[0], outs)
  return wrapped

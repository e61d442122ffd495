"""`ravel_pytree` (jax.flatten_util): a pytree of arrays as one flat vector and back."""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, shape as shape_ops

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree):
  """(flat, unravel): the leaves raveled and concatenated into one 1-D array of their
  promoted dtype (float32 when there are none), and the function that rebuilds a pytree
  of the same structure, shapes and dtypes from such a vector."""
  leaves, treedef = tree_util.tree_flatten(pytree)
  flat, unravel_leaves = _ravel_leaves([creation.asarray(x) for x in leaves])
  return flat, lambda v: tree_util.tree_unflatten(treedef, unravel_leaves(v))


def _ravel_leaves(leaves):
  if not leaves:
    return creation.zeros((0,), np.float32), lambda v: []
  avals = [core.get_aval(x) for x in leaves]
  to_dtype = dtypes.result_type(*leaves)
  sizes = [int(np.prod(a.shape, dtype=np.int64)) for a in avals]
  flat = shape_ops.concatenate([lax.reshape(lax.convert_element_type(x, to_dtype), (n,))
                                for x, n in zip(leaves, sizes)])

  def unravel(v):
    v = creation.asarray(v)
    if core.get_aval(v).shape != (sum(sizes),):
      raise ValueError(f"The unravel function expected an array of shape ({sum(sizes)},), "
                       f"got shape {core.get_aval(v).shape}.")
    if core.get_aval(v).dtype != to_dtype:
      raise TypeError(f"The unravel function expected an array of dtype {to_dtype}, got "
                      f"dtype {core.get_aval(v).dtype}: ravel_pytree's flat vector has the "
                      "leaves' promoted dtype.")
    out, start = [], 0
    for a, n in zip(avals, sizes):
      part = lax.slice(v, (start,), (start + n,))
      out.append(lax.convert_element_type(lax.reshape(part, a.shape), a.dtype))
      start += n
    return out
  return flat, unravel

"""Small public helpers of the API surface: ShapeDtypeStruct, eval_shape."""
from __future__ import annotations

import numpy as np

from ember._src import core, dtypes, tree_util


class ShapeDtypeStruct:
  """A shape and dtype without a value (`jax.ShapeDtypeStruct`)."""
  __slots__ = ("shape", "dtype", "weak_type", "sharding")

  def __init__(self, shape, dtype, *, weak_type: bool = False, sharding=None):
    self.shape = tuple(shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    self.weak_type, self.sharding = weak_type, sharding

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @property
  def aval(self):
    return core.ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

  def __repr__(self):
    w = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{w})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))


def eval_shape(fun, *args, **kwargs):
  """The output shapes/dtypes of `fun(*args)` as ShapeDtypeStructs, without computing."""
  from ember._src.jit import make_jaxpr
  leaves, tree = tree_util.tree_flatten((args, kwargs))
  avals = [x.aval if isinstance(x, ShapeDtypeStruct) else core.get_aval(x) for x in leaves]

  def flat(*xs):
    a, k = tree.unflatten(xs)
    return fun(*a, **k)
  _, shapes = make_jaxpr(flat, return_shape=True)(*[_Abstract(a) for a in avals])
  return shapes


class _Abstract:
  """An argument that only has an aval (traced by make_jaxpr, never computed)."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

"""ShapeDtypeStruct: a shape and dtype without a value (eval_shape is in jit.py)."""
from __future__ import annotations

import numpy as np

from ember._src import core, dtypes


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


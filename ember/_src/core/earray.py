"""EArray: a concrete array of a user's extended dtype (jax.dtypes.ExtendedDType with `_rules`,
as flax's fp8 meta dtype), JAX's `jax._src.earray.EArray`.

It pairs the logical type (`aval`: shape and the extended dtype) with the stored data, an
Array of the physical type (core.physical_aval: the shape followed by the physical element's
shape, of its dtype). Eager primitives, `jit` arguments and results of such a dtype are
EArrays; inside transformations the values are tracers of the extended type, and lowering
stores them as their physical type (hlo Shape.of). Typed PRNG keys are not EArrays: they
wrap their data (library/random/keys.py).
"""
from __future__ import annotations

import math

import numpy as np

from ember._src.base import basearray
from ember._src.core import trace as trace_lib
from ember._src.core.array import Array
from ember._src.core.avals import ShapedArray, physical_aval


class EArray(basearray.Array):
  """An array of a user's extended dtype over its physical data (an Array)."""
  __slots__ = ("_aval", "_data")
  __array_priority__ = 100
  __hash__ = None

  def __init__(self, aval: ShapedArray, data):
    want = physical_aval(aval)
    got = (tuple(data.shape), data.dtype)
    if got != (want.shape, want.dtype):
      raise TypeError(f"EArray of type {aval.str_short()} needs data of type "
                      f"{want.str_short()}, got {np.dtype(got[1]).name}{list(got[0])}")
    self._aval, self._data = aval, data

  aval = property(lambda self: self._aval)
  shape = property(lambda self: self._aval.shape)
  dtype = property(lambda self: self._aval.dtype)
  weak_type = property(lambda self: self._aval.weak_type)
  ndim = property(lambda self: len(self._aval.shape))
  size = property(lambda self: math.prod(self._aval.shape))
  itemsize = property(lambda self: self._data.dtype.itemsize)

  @property
  def _value(self) -> np.ndarray:
    """The stored (physical) values: what eager impls and compiled calls read."""
    return trace_lib.to_numpy(self._data)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    raise NotImplementedError(f"iteration over an array of extended dtype {self.dtype}: "
                              "convert it to its representation dtype first")

  def block_until_ready(self):
    self._data.block_until_ready()
    return self

  def copy(self) -> "EArray":
    return EArray(self._aval, self._data.copy())

  def __repr__(self):
    return "E" + repr(self._data)

  # forwarded to the stored data
  devices = property(lambda self: self._data.devices)
  device = property(lambda self: self._data.device)
  sharding = property(lambda self: self._data.sharding)
  committed = property(lambda self: self._data.committed)
  is_deleted = property(lambda self: self._data.is_deleted)
  delete = property(lambda self: self._data.delete)
  is_fully_addressable = property(lambda self: self._data.is_fully_addressable)
  is_fully_replicated = property(lambda self: self._data.is_fully_replicated)


def wrap(aval: ShapedArray, data) -> EArray:
  """The EArray of type `aval` over `data` (an Array, or a NumPy array of the physical type)."""
  if not isinstance(data, Array):
    data = trace_lib.new_array(np.asarray(data, physical_aval(aval).dtype))
  return EArray(aval, data)


trace_lib.extended_array_type[0] = wrap

"""ember.numpy's bit packing: packbits and unpackbits (truth values to and from uint8
bytes, big- or little-endian bit order), ported from jax/_src/numpy/lax_numpy.py.
"""
from __future__ import annotations

import builtins
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.reductions import asarray_arg, aval

__all__ = ["packbits", "unpackbits"]

_range = builtins.range


def _check_bitorder(bitorder):
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")


@partial(jit, static_argnames=("axis", "bitorder"))
def packbits(a, axis=None, bitorder: str = "big"):
  """Pack the truth values of `a` into uint8 bytes along `axis` (flattened when None),
  zero-padding the last byte."""
  arr = asarray_arg("packbits", a)
  if not (dtypes.is_integer(aval(arr).dtype) or aval(arr).dtype == np.bool_):
    raise TypeError("Expected an input array of integer or boolean data type")
  _check_bitorder(bitorder)
  arr = lax.ne(arr, lax.full_like(arr, 0, shape=())).astype("uint8")
  bits = creation.arange(8, dtype="uint8")
  if bitorder == "big":
    bits = bits[::-1]
  if axis is None:
    arr, axis = shape_ops.ravel(arr), 0
  arr = shape_ops.swapaxes(arr, axis, -1)
  remainder = aval(arr).shape[-1] % 8
  if remainder:
    arr = lax.pad(arr, np.uint8(0), (aval(arr).ndim - 1) * [(0, 0, 0)] + [(0, 8 - remainder, 0)])
  arr = arr.reshape(aval(arr).shape[:-1] + (aval(arr).shape[-1] // 8, 8))
  bits = lax.expand_dims(bits, tuple(_range(aval(arr).ndim - 1)))
  packed = (arr << bits).sum(-1).astype("uint8")
  return shape_ops.swapaxes(packed, axis, -1)


@partial(jit, static_argnames=("axis", "count", "bitorder"))
def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
  """Unpack uint8 bytes into bits (uint8 0/1) along `axis`; `count` keeps (or zero-pads
  to) that many bits."""
  arr = asarray_arg("unpackbits", a)
  if aval(arr).dtype != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  _check_bitorder(bitorder)
  bits = creation.asarray(1) << creation.arange(8, dtype="uint8")
  if bitorder == "big":
    bits = bits[::-1]
  if axis is None:
    arr, axis = shape_ops.ravel(arr), 0
  arr = shape_ops.swapaxes(arr, axis, -1)
  unpacked = ((arr[..., None] & lax.expand_dims(bits, tuple(_range(aval(arr).ndim)))) > 0
              ).astype("uint8")
  unpacked = unpacked.reshape(aval(unpacked).shape[:-2] + (-1,))
  if count is not None:
    n = aval(unpacked).shape[-1]
    if count > n:
      unpacked = shape_ops.pad(unpacked, [(0, 0)] * (aval(unpacked).ndim - 1) + [(0, count - n)])
    else:
      unpacked = unpacked[..., :count]
  return shape_ops.swapaxes(unpacked, axis, -1)

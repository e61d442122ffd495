"""sort and top_k in XLA/JAX's orders: the sort and top_k primitives' impls, hlo_eval's
`sort` (without a comparator) and `top-k`, and the CPU backend's sort/top-k thunks.

sort is ascending with every NaN last and -0.0 == 0.0 (stable, so they keep their input
order); complex keys sort by (real, imag). top_k is descending and stable (lower index
first on ties), with NaN largest and -0.0 below 0.0.
"""
from __future__ import annotations

import numpy as np

from ember._src.base.dtypes import dtype_kind


def sort_keys(x) -> list:
  """np.lexsort keys (most significant first) that order `x` as XLA's sort does."""
  kind = dtype_kind(x.dtype)
  if kind == "c":
    return sort_keys(x.real) + sort_keys(x.imag)
  if kind == "f":
    x = x.astype(np.float64)
    return [np.isnan(x), np.where(np.isnan(x) | (x == 0), 0.0, x)]  # NaNs last; -0 == 0
  return [x]


def sort(*xs, dimension, is_stable, num_keys):
  if xs[0].ndim == 0:
    return list(xs)
  if num_keys == 1 and _radix_ok(xs[0].dtype):
    perm = _radix_argsort(np.moveaxis(_ordered_uint32(xs[0]), dimension, -1))
    perm = np.moveaxis(perm, -1, dimension)
  else:
    keys = [k for x in xs[:num_keys] for k in sort_keys(x)]
    perm = np.lexsort(keys[::-1], axis=dimension)  # lexsort is stable; last key is primary
  return [np.take_along_axis(x, perm, axis=dimension) for x in xs]


def _radix_ok(dtype) -> bool:
  """One key of 32 bits or fewer, real: sorted by `_radix_argsort` (lexsort's order)."""
  return dtype_kind(dtype) in "biuf" and np.dtype(dtype).itemsize <= 4


def _ordered_uint32(x) -> np.ndarray:
  """uint32 values whose unsigned order is XLA's sort order of `x`: signed ints with the
  sign bit flipped; floats with -0.0 as 0.0, every NaN as one NaN above +inf, then the
  IEEE bits of negatives inverted and of the others with the sign bit set."""
  kind = dtype_kind(x.dtype)
  if kind in "bu":
    return x.astype(np.uint32)
  if kind == "i":
    return x.astype(np.int32).view(np.uint32) ^ np.uint32(0x80000000)
  f = x.astype(np.float32)
  f = np.where(np.isnan(f), np.float32(np.nan), f + np.float32(0.0))   # (-0 + 0 = +0)
  bits = f.view(np.uint32)
  return np.where(bits >> 31, ~bits, bits | np.uint32(0x80000000))


def _radix_argsort(keys: np.ndarray) -> np.ndarray:
  """The stable argsort of uint32 `keys` along the last axis in two 16-bit passes (least
  significant first), each NumPy's stable sort of uint16, a radix sort: 4-5x lexsort's
  speed at 1e4 elements, 2x at 1e6."""
  perm = np.argsort((keys & 0xFFFF).astype(np.uint16), axis=-1, kind="stable")
  high = np.take_along_axis((keys >> 16).astype(np.uint16), perm, axis=-1)
  return np.take_along_axis(perm, np.argsort(high, axis=-1, kind="stable"), axis=-1)


def _descending_keys(x) -> list:
  """np.lexsort keys (most significant first) for a descending, stable top_k order."""
  kind = dtype_kind(x.dtype)
  if kind == "f":
    x = x.astype(np.float64)
    nan = np.isnan(x)
    return [~nan, -np.where(nan, 0.0, x), np.signbit(x)]  # NaN first; +0 before -0
  return [~x]  # bitwise not reverses the order of ints (no overflow) and bools


def top_k(x, *, k, axis, is_stable):
  keys = _descending_keys(x)
  perm = np.lexsort(keys[::-1], axis=axis)
  idx = np.take(perm, np.arange(k), axis=axis)
  return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int32)]

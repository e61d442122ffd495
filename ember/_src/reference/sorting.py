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
  keys = [k for x in xs[:num_keys] for k in sort_keys(x)]
  perm = np.lexsort(keys[::-1], axis=dimension)  # lexsort is stable; last key is primary
  return [np.take_along_axis(x, perm, axis=dimension) for x in xs]


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

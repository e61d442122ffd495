"""Reductions with XLA's semantics: the accumulation dtype and the order of signed zeros.

The reduction primitives' impls, the indexing primitives' scatter-min/max and hlo_eval's
`reduce` and `scatter` share these, so eager and compiled results round alike.
"""
from __future__ import annotations

import numpy as np

from ember._src.base.dtypes import dtype_kind


def compute_dtype(dt):
  """NumPy accumulates 16-bit floats in 16 bits; the reference accumulates in float32."""
  return np.dtype(np.float32) if dtype_kind(dt) == "f" and np.dtype(dt).itemsize < 4 else dt


def is_zero_winner(ufunc, x):
  """Where `x` is the zero XLA's max (+0.0) or min (-0.0) prefers: XLA orders -0.0 < +0.0,
  NumPy's maximum/minimum reductions keep whichever zero comes first."""
  return (x == 0) & (np.signbit(x) == (ufunc is np.minimum))


def xla_zero_order(ufunc, out, has_winner):
  """`out` (a NumPy max/min reduction) with XLA's zero: where it is a zero and
  `has_winner` (some reduced input `is_zero_winner`), that winning zero."""
  if dtype_kind(out.dtype) != "f":
    return out
  zero = np.array(-0.0 if ufunc is np.minimum else 0.0, out.dtype)
  return np.where((out == 0) & has_winner, zero, out)


def identity(ufunc, dt):
  """The identity of a max/min reduction in dtype `dt` (what an empty reduction returns)."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return ufunc is np.minimum
  if dt.kind in "iu":
    info = np.iinfo(dt)
    return info.min if ufunc is np.maximum else info.max
  inf = np.inf if ufunc is np.minimum else -np.inf
  return complex(inf, 0) if dt.kind == "c" else inf

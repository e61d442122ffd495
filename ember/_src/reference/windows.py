"""Windowed reductions with XLA's semantics (ReduceWindow), on NumPy arrays.

A window op sees the operand base-dilated (`base_dilation - 1` holes between elements),
padded (`padding` (low, high) per dim, negative crops), and reads windows of
`window_dimensions` elements spaced `window_dilation` apart, every `window_strides`
positions. Holes and padding hold the init value. `patches` gathers every window's elements
as the last axis (row-major window order: within a window, flat operand positions increase),
so a reduction is a NumPy reduction of that axis. The reduce_window primitives' impls, the
generic reduce_window's fold and hlo_eval's `reduce-window` share these, so eager and
compiled results agree.

The max/min derivatives pick, per window, the element that wins the reduction: the largest
(smallest) value, a NaN beating every number, and among equal values the first in window
order (the lowest flat operand position); padding never wins over an operand element
(`window_argindex`). select_and_gather_add reads the tangent there, select_and_scatter_add
adds each window's cotangent there.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from ember._src.base.dtypes import dtype_kind
from ember._src.reference.reductions import (compute_dtype, identity, is_zero_winner,
                                             xla_zero_order)


def dilate_dim(d: int, k: int) -> int:
  """The size of `d` elements with `k - 1` holes between neighbours."""
  return 0 if d == 0 else (d - 1) * k + 1


def output_shape(in_shape, window_dimensions, window_strides, padding, base_dilation,
                 window_dilation) -> tuple:
  """The shape of a window op's result (XLA's ReduceWindow shape rule)."""
  out = []
  for d, w, s, (lo, hi), bd, wd in zip(in_shape, window_dimensions, window_strides, padding,
                                       base_dilation, window_dilation):
    span = dilate_dim(d, bd) + lo + hi - dilate_dim(w, wd)
    out.append(span // s + 1 if span >= 0 else 0)
  return tuple(out)


def _padded(x: np.ndarray, fill, padding, base_dilation) -> np.ndarray:
  """`x` base-dilated and padded, holes and padding holding `fill`."""
  sizes = [dilate_dim(d, bd) + max(lo, 0) + max(hi, 0)
           for d, (lo, hi), bd in zip(x.shape, padding, base_dilation)]
  out = np.full(sizes, fill, dtype=x.dtype)
  out[tuple(slice(max(lo, 0), max(lo, 0) + dilate_dim(d, bd), bd)
            for d, (lo, _), bd in zip(x.shape, padding, base_dilation))] = x
  return out[tuple(slice(max(-lo, 0), n - max(-hi, 0))
                   for n, (lo, hi) in zip(sizes, padding))]


def patches(x, fill, window_dimensions, window_strides, padding, base_dilation,
            window_dilation) -> np.ndarray:
  """Every window's elements: shape output_shape + (prod(window_dimensions),)."""
  x = np.asarray(x)
  out = output_shape(x.shape, window_dimensions, window_strides, padding, base_dilation,
                     window_dilation)
  n = int(np.prod(window_dimensions, dtype=np.int64))
  if 0 in out:
    return np.full(out + (n,), fill, dtype=x.dtype)
  p = _padded(x, fill, padding, base_dilation)
  spans = [dilate_dim(w, wd) for w, wd in zip(window_dimensions, window_dilation)]
  view = sliding_window_view(p, spans)
  view = view[tuple(slice(None, o * s, s) for o, s in zip(out, window_strides)) +
              tuple(slice(None, None, wd) for wd in window_dilation)]
  return np.ascontiguousarray(view).reshape(out + (n,))


def _window_params(params: dict) -> tuple:
  return (params["window_dimensions"], params["window_strides"], params["padding"],
          params["base_dilation"], params["window_dilation"])


def reduce_window_sum(x, **params):
  with np.errstate(all="ignore"):   # inf + -inf is NaN silently, as compiled code does
    p = patches(x, 0, *_window_params(params))
    return np.sum(p, axis=-1, dtype=compute_dtype(p.dtype)).astype(x.dtype)


def _reduce_window_extremum(ufunc):
  def impl(x, **params):
    cdt = compute_dtype(x.dtype)
    p = patches(np.asarray(x).astype(cdt), identity(ufunc, x.dtype), *_window_params(params))
    out = np.asarray(ufunc.reduce(p, axis=-1))
    if dtype_kind(cdt) == "f":
      out = xla_zero_order(ufunc, out, np.any(is_zero_winner(ufunc, p), axis=-1))
    return out.astype(x.dtype)
  return impl


reduce_window_max = _reduce_window_extremum(np.maximum)
reduce_window_min = _reduce_window_extremum(np.minimum)


def window_argindex(x, is_max: bool, **params) -> np.ndarray:
  """Per window, the flat position in `x` of the element the max (`is_max`) or min
  reduction picks (see the module docstring); -1 where only padding or holes are in it."""
  x = np.asarray(x)
  ufunc = np.maximum if is_max else np.minimum
  wp = _window_params(params)
  vals = patches(x.astype(compute_dtype(x.dtype)), identity(ufunc, x.dtype), *wp)
  none = np.iinfo(np.int64).max
  pos = patches(np.arange(x.size, dtype=np.int64).reshape(x.shape), none, *wp)
  nan = np.isnan(vals) if dtype_kind(vals.dtype) == "f" else np.zeros(vals.shape, bool)
  any_nan = nan.any(axis=-1, keepdims=True)
  with np.errstate(invalid="ignore"):
    best = ufunc.reduce(np.where(nan, identity(ufunc, x.dtype), vals), axis=-1,
                        keepdims=True) if vals.shape[-1] else vals[..., :1]
    winners = np.where(any_nan, nan, vals == best)
  idx = np.min(np.where(winners, pos, none), axis=-1, initial=none)
  return np.where(idx == none, -1, idx)


def select_and_gather_add(tangents, operand, is_max: bool, **params) -> np.ndarray:
  """The tangent at each window's max (min) element: the max (min) pool's derivative."""
  idx = window_argindex(operand, is_max, **params)
  t = np.asarray(tangents).reshape(-1)
  if t.size == 0:
    return np.zeros(idx.shape, np.asarray(tangents).dtype)
  return np.where(idx >= 0, t[np.clip(idx, 0, None)], 0).astype(t.dtype)


def select_and_scatter_add(source, operand, is_max: bool, **params) -> np.ndarray:
  """Each window's `source` value added at the window's max (min) element of `operand`
  (the transpose of select_and_gather_add)."""
  operand = np.asarray(operand)
  source = np.asarray(source)
  idx = window_argindex(operand, is_max, **params).reshape(-1)
  keep = idx >= 0
  out = np.zeros(operand.size, compute_dtype(source.dtype))
  with np.errstate(all="ignore"):
    np.add.at(out, idx[keep], source.reshape(-1)[keep].astype(out.dtype))
  return out.astype(source.dtype).reshape(operand.shape)

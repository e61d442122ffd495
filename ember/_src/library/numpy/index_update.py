"""`x.at[idx].set/add/subtract/multiply/divide/power/min/max/apply/get`: the pure forms of
`x[idx] op= y` (JAX's _IndexUpdateHelper / _IndexUpdateRef). An update is the transposed
path of getitem.py's gather: one `scatter*` over the same index map (`_index_to_gather`),
whose out-of-bounds updates are dropped by default; `get` is `x[idx]` with gather options.
"""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, ufuncs, util
from ember._src.library.numpy.getitem import _index_to_gather, rewriting_take
from ember._src.library.numpy.index_parser import NDIndexer, _asarray, _aval, _full


def _safe_to_cast(y, x_dtype) -> bool:
  return dtypes.result_type(y, x_dtype) == x_dtype


def _scatter_update(x, idx, y, scatter_op: Callable, *, indices_are_sorted, unique_indices,
                    mode, normalize_indices=True):
  """`x[idx] op= y` without mutation: one scatter of the broadcast `y`."""
  x = _asarray(x)
  xa = _aval(x)
  if (isinstance(y, int) and not isinstance(y, bool) and dtypes.is_integer(xa.dtype)
      and np.iinfo(xa.dtype).min <= y <= np.iinfo(xa.dtype).max):
    y = lax.convert_element_type(y, xa.dtype)
  elif not core.is_arraylike(y):
    y = creation.asarray(y)   # lists and tuples of values
  ix = NDIndexer.from_raw(idx, xa.shape).expand_bool_indices()
  g = _index_to_gather(ix, normalize_indices)
  if 0 in g.slice_shape:
    return x
  if not _safe_to_cast(y, xa.dtype):
    warnings.warn(f"scatter inputs have incompatible types: cannot safely cast value from "
                  f"dtype={_aval(y).dtype.name} to dtype={xa.dtype.name}. In future JAX "
                  "releases this will result in an error.", FutureWarning, stacklevel=3)
  x, y = util.promote_dtypes(x, y)
  y = util.broadcast_to_shape(y, tuple(g.slice_shape))
  if g.newaxis_dims:
    y = lax.squeeze(y, g.newaxis_dims)
  if g.reversed_y_dims:
    y = lax.rev(y, g.reversed_y_dims)
  if g.scalar_bool_dims:
    x = lax.expand_dims(x, g.scalar_bool_dims)
  dnums = lax.ScatterDimensionNumbers(
      update_window_dims=g.dnums.offset_dims,
      inserted_window_dims=g.dnums.collapsed_slice_dims,
      scatter_dims_to_operand_dims=g.dnums.start_index_map,
      operand_batching_dims=g.dnums.operand_batching_dims,
      scatter_indices_batching_dims=g.dnums.start_indices_batching_dims)
  out = scatter_op(x, g.gather_indices, y, dnums,
                   indices_are_sorted=g.indices_are_sorted or indices_are_sorted,
                   unique_indices=g.unique_indices or unique_indices, mode=mode)
  if g.scalar_bool_dims:
    out = lax.squeeze(out, g.scalar_bool_dims)
  return lax.convert_element_type(out, xa.dtype, xa.weak_type)


class _IndexUpdateRef:
  """`x.at[idx]`: the methods return updated copies of `x` (JAX's _IndexUpdateRef)."""
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array, self.index = array, index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
          fill_value=None, out_sharding=None, wrap_negative_indices=True, strategy="auto"):
    """`x[idx]`, with `mode` ('clip' default-like, 'fill' with `fill_value`)."""
    return rewriting_take(self.array, self.index, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                          normalize_indices=wrap_negative_indices, strategy=strategy)

  def _update(self, values, op, indices_are_sorted, unique_indices, mode,
              wrap_negative_indices, array=None):
    return _scatter_update(self.array if array is None else array, self.index, values, op,
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode,
                           normalize_indices=wrap_negative_indices)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] = values`; out-of-bounds updates are dropped unless mode='clip'."""
    return self._update(values, lax.scatter, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] += values`, accumulating over repeated indices."""
    return self._update(values, lax.scatter_add, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """`x[idx] -= values`, accumulating over repeated indices."""
    return self._update(values, lax.scatter_sub, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """`x[idx] *= values`, accumulating over repeated indices."""
    return self._update(values, lax.scatter_mul, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  mul = multiply

  def _ones(self):
    a = _aval(self.array)
    return _full(a.shape, 1, a.dtype, a.weak_type)

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
             out_sharding=None, wrap_negative_indices=True):
    """`x[idx] /= values` (as jnp.divide(x, scattered product of values))."""
    return ufuncs.divide(self.array, self._update(
        values, lax.scatter_mul, indices_are_sorted, unique_indices, mode,
        wrap_negative_indices, array=self._ones()))

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
    """`x[idx] **= values` (as jnp.power(x, scattered product of values))."""
    return ufuncs.power(self.array, self._update(
        values, lax.scatter_mul, indices_are_sorted, unique_indices, mode,
        wrap_negative_indices, array=self._ones()))

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] = minimum(x[idx], values)`."""
    return self._update(values, lax.scatter_min, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] = maximum(x[idx], values)`."""
    return self._update(values, lax.scatter_max, indices_are_sorted, unique_indices, mode,
                        wrap_negative_indices)

  def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """`func.at(x, idx)`: apply the unary `func` at idx (repeatedly for repeats)."""
    def scatter_apply(x, indices, y, dnums, **kw):
      return lax.scatter_apply(x, indices, func, dnums, update_shape=_aval(y).shape, **kw)
    a = _aval(self.array)
    return self._update(lax.convert_element_type(0, a.dtype, a.weak_type), scatter_apply,
                        indices_are_sorted, unique_indices, mode, wrap_negative_indices)


class IndexUpdateHelper:
  """The `x.at` property: `x.at[idx].set(y)` is the pure form of `x[idx] = y`
  (also add, subtract, multiply, divide, power, min, max, apply, get)."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index) -> _IndexUpdateRef:
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"

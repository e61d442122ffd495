"""`x[idx]` (and `x.at[idx].get(...)`): the parsed index (index_parser.py) lowered with
JAX's strategy (jax/_src/numpy/indexing.py):
1. static ints / slices / None / Ellipsis with in-bounds ints -> `slice`, `rev`,
   `squeeze`, `expand_dims`;
2. otherwise, scalar (possibly traced) ints and unit-step slices -> `dynamic_slice`
   (which clamps: `x[10]` on a length-4 axis reads the last element);
3. everything else (integer arrays, strided slices with arrays, boolean masks) ->
   one `gather` (clamping by default; `mode="fill"` fills instead).
Strategy 3's index map (`_index_to_gather`) is also the scatter's of `x.at[idx]` updates
(index_update.py), the transposed path.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.core.array import Array
from ember._src.library.numpy import creation, util
from ember._src.library.numpy.index_parser import (
    IndexType, NDIndexer, _asarray, _aval, _concrete_value, _full)
from ember._src.primitives import eager_jit
from ember._src.primitives.indexing import GatherScatterMode


def _int_dtype_for_shape(shape) -> np.dtype:
  """int32 unless an axis is too long for it (JAX's `int_dtype_for_shape`)."""
  return dtypes.int64 if any(d > np.iinfo(np.int32).max for d in shape) else dtypes.int32


# --- strategy 1: static slice --------------------------------------------------------

class _StaticSlice(NamedTuple):
  start: list
  limit: list
  strides: list | None
  rev_axes: list
  squeeze_axes: list
  newaxis_dims: list


def _to_static_slice(ix: NDIndexer, mode, normalize: bool) -> _StaticSlice | None:
  """The static-slice form of the index, or None when it needs a dynamic strategy."""
  if mode not in (GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP):
    return None
  if any(p.typ not in (IndexType.INTEGER, IndexType.ELLIPSIS, IndexType.SLICE,
                       IndexType.NONE) for p in ix.indices):
    return None
  if mode == GatherScatterMode.PROMISE_IN_BOUNDS and not ix.static_ints_in_bounds(normalize):
    return None   # out-of-bounds ints clamp through dynamic_slice, as in JAX
  ix.validate_slices()
  start, limit, strides, rev_axes, squeeze_axes, newaxis = [], [], [], [], [], []
  for p in ix.expand_ellipses().indices:
    if p.typ == IndexType.NONE:
      newaxis.append(len(start) - len(squeeze_axes) + len(newaxis))
    elif p.typ == IndexType.INTEGER:
      axis, = p.consumed_axes
      size = ix.shape[axis]
      if size == 0:
        raise IndexError(f"index is out of bounds for axis {axis} with size 0")
      i = int(p.index)
      i = i + size if normalize and i < 0 else i
      i = min(max(i, 0), size - 1)
      start.append(i), limit.append(i + 1), strides.append(1), squeeze_axes.append(axis)
    else:
      axis, = p.consumed_axes
      size = ix.shape[axis]
      lo, hi, step = p.index.indices(size)
      if step < 0:
        new_lo = min(size, hi + 1 + abs(lo - hi - 1) % abs(step))
        start.append(new_lo), limit.append(max(new_lo, lo + 1)), strides.append(-step)
        rev_axes.append(axis)
      else:
        start.append(lo), limit.append(max(lo, hi)), strides.append(step)
  return _StaticSlice(start, limit, None if all(s == 1 for s in strides) else strides,
                      rev_axes, squeeze_axes, newaxis)


def _static_slice(arr, s: _StaticSlice):
  shape = _aval(arr).shape
  trivial = s.strides is None and all((a, b) == (0, n) for a, b, n in
                                      zip(s.start, s.limit, shape))
  y = arr if trivial else lax.slice(arr, s.start, s.limit, s.strides)
  if s.rev_axes:
    y = lax.rev(y, s.rev_axes)
  if s.squeeze_axes:
    y = lax.squeeze(y, s.squeeze_axes)
  if s.newaxis_dims:
    y = lax.expand_dims(y, s.newaxis_dims)
  return y


# --- strategy 2: dynamic slice -------------------------------------------------------

class _DynamicSlice(NamedTuple):
  starts: list
  sizes: list
  rev_axes: list
  squeeze_axes: list
  newaxis_dims: list
  trivial: bool


def _to_dynamic_slice(ix: NDIndexer, mode) -> _DynamicSlice | None:
  if mode not in (GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP):
    return None
  for p in ix.indices:
    if p.typ == IndexType.SLICE and p.index.step not in (None, 1, -1):
      return None
    if p.typ == IndexType.ARRAY and _aval(p.index).ndim != 0:
      return None
    if p.typ == IndexType.BOOLEAN:
      return None
  ix.validate_slices()
  starts, sizes, rev_axes, squeeze_axes, newaxis = [], [], [], [], []
  trivial = True
  for p in ix.expand_ellipses().indices:
    if p.typ == IndexType.NONE:
      newaxis.append(len(starts) - len(squeeze_axes) + len(newaxis))
    elif p.typ in (IndexType.INTEGER, IndexType.ARRAY):
      axis, = p.consumed_axes
      if ix.shape[axis] == 0:
        raise IndexError(f"index is out of bounds for axis {axis} with size 0")
      trivial = False
      starts.append(_asarray(p.index) if p.typ == IndexType.ARRAY
                    else creation.asarray(p.index))
      sizes.append(1)
      squeeze_axes.append(axis)
    else:
      axis, = p.consumed_axes
      size = ix.shape[axis]
      if p.index != slice(None):
        trivial = False
      lo, hi, step = p.index.indices(size)
      if step < 0:
        new_lo = hi + 1 + abs(lo - hi - 1) % abs(step)
        starts.append(new_lo), sizes.append(max(0, lo + 1 - new_lo)), rev_axes.append(axis)
      else:
        starts.append(lo), sizes.append(max(0, hi - lo))
  if len(starts) > 1:   # dynamic_slice needs one index dtype
    dt = _int_dtype_for_shape(ix.shape)
    starts = [lax.convert_element_type(i, dt) for i in starts]
  return _DynamicSlice(starts, sizes, rev_axes, squeeze_axes, newaxis, trivial)


def _dynamic_slice(arr, d: _DynamicSlice, normalize: bool):
  y = arr if d.trivial else lax.dynamic_slice(arr, d.starts, d.sizes,
                                              allow_negative_indices=normalize)
  if d.rev_axes:
    y = lax.rev(y, d.rev_axes)
  if d.squeeze_axes:
    y = lax.squeeze(y, d.squeeze_axes)
  if d.newaxis_dims:
    y = lax.expand_dims(y, d.newaxis_dims)
  return y


# --- strategy 3: gather (and, transposed, scatter) ------------------------------------

class _GatherIndexer(NamedTuple):
  slice_shape: list          # shape of x[idx]
  gather_slice_shape: list   # slice_sizes of the gather
  gather_indices: Any        # int array (..., n) of start indices
  dnums: lax.GatherDimensionNumbers
  unique_indices: bool       # no advanced indices: windows cannot overlap
  indices_are_sorted: bool
  reversed_y_dims: list      # negative-step slices, reversed after the gather
  newaxis_dims: list         # None axes, inserted after the gather
  scalar_bool_dims: list     # axes added for scalar boolean indices


def _index_to_gather(ix: NDIndexer, normalize: bool = True) -> _GatherIndexer:
  ix.validate_slices()
  is_adv = [k for k, p in enumerate(ix.indices)
            if p.typ in (IndexType.ARRAY, IndexType.INTEGER)]
  # NumPy: advanced indices separated by a slice/None/Ellipsis go to the front
  adv_contiguous = bool(np.all(np.diff(is_adv) == 1))
  ix = ix.expand_ellipses()
  scalar_bool_dims = [k for k, p in enumerate(ix.indices) if p.typ == IndexType.BOOLEAN]
  ix = ix.expand_scalar_bool_indices()
  if normalize:
    ix = ix.normalize_indices()

  adv_arrays, idx_adv_axes, x_adv_axes = [], [], []
  if ix.has_advanced():
    j = 0
    for k, p in enumerate(ix.indices):
      if p.typ == IndexType.NONE:
        continue
      if p.typ in (IndexType.ARRAY, IndexType.INTEGER):
        adv_arrays.append(_asarray(p.index))
        idx_adv_axes.append(k)
        x_adv_axes.append(j)
      j += 1

  index_dtype = _int_dtype_for_shape(ix.shape)
  offset_dims, collapsed, start_index_map = [], [], []
  gather_indices, gather_indices_shape = [], []   # (array, first dim in the index shape)
  slice_shape, newaxis_dims, reversed_y_dims, gather_slice_shape = [], [], [], []
  x_axis = y_axis = collapsed_y_axis = 0

  for k, p in enumerate(ix.indices):
    if adv_arrays and (k == idx_adv_axes[0] if adv_contiguous else k == 0):
      shape = util.broadcast_shapes(*(_aval(a).shape for a in adv_arrays))
      start = len(gather_indices_shape)
      gather_indices += [(lax.convert_element_type(util.broadcast_to_shape(a, shape),
                                                   index_dtype), start)
                         for a in adv_arrays]
      gather_indices_shape += shape
      start_index_map += x_adv_axes
      collapsed += x_adv_axes
      slice_shape += shape
      y_axis += len(shape)
      collapsed_y_axis += len(shape)
    if k in idx_adv_axes:
      x_axis += 1
      gather_slice_shape.append(1)
      continue
    if p.typ in (IndexType.INTEGER, IndexType.ARRAY):   # scalar int, no advanced indices
      if ix.shape[x_axis] == 0:
        raise IndexError(f"index is out of bounds for axis {x_axis} with size 0")
      gather_indices.append((lax.convert_element_type(p.index, index_dtype),
                             len(gather_indices_shape)))
      collapsed.append(x_axis)
      gather_slice_shape.append(1)
      start_index_map.append(x_axis)
      x_axis += 1
    elif p.typ == IndexType.NONE:
      slice_shape.append(1)
      newaxis_dims.append(y_axis)
      y_axis += 1
    else:   # slice
      lo, hi, step = p.index.indices(ix.shape[x_axis])
      size = len(range(lo, hi, step))
      slice_shape.append(size)
      if step == 1:
        if size != ix.shape[x_axis]:   # a full slice needs no index
          gather_indices.append((lax.convert_element_type(lo, index_dtype),
                                 len(gather_indices_shape)))
          start_index_map.append(x_axis)
        gather_slice_shape.append(size)
        offset_dims.append(collapsed_y_axis)
      else:
        idx = lax.add(lax.convert_element_type(lo, index_dtype),
                      lax.mul(lax.convert_element_type(step, index_dtype),
                              lax.iota(index_dtype, size)))
        if step < 0:
          reversed_y_dims.append(collapsed_y_axis)
          idx = lax.rev(idx, (0,))
        gather_slice_shape.append(1)
        gather_indices.append((idx, len(gather_indices_shape)))
        start_index_map.append(x_axis)
        gather_indices_shape.append(size)
        collapsed.append(x_axis)
      collapsed_y_axis += 1
      y_axis += 1
      x_axis += 1

  if not gather_indices:
    gather_indices_array = np.zeros((0,), index_dtype)
  elif len(gather_indices) == 1:
    g, _ = gather_indices[0]
    gather_indices_array = lax.expand_dims(g, (_aval(g).ndim,))
  else:
    last = len(gather_indices_shape)
    full = tuple(gather_indices_shape) + (1,)
    gather_indices_array = lax.concatenate(
        [lax.broadcast_in_dim(g, full, tuple(range(i, i + _aval(g).ndim)))
         for g, i in gather_indices], last)

  dnums = lax.GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                     collapsed_slice_dims=tuple(sorted(collapsed)),
                                     start_index_map=tuple(start_index_map))
  return _GatherIndexer(slice_shape, gather_slice_shape, gather_indices_array, dnums,
                        not adv_arrays, not adv_arrays, reversed_y_dims, newaxis_dims,
                        scalar_bool_dims)


def _gather(arr, ix: NDIndexer, *, indices_are_sorted, unique_indices, mode, fill_value,
            normalize):
  g = _index_to_gather(ix, normalize)
  if fill_value is not None:
    fv = _concrete_value(fill_value)
    if fv is None:
      raise errors.ConcretizationTypeError(
          "fill_value argument to indexed get() must be a concrete (non-traced) scalar.")
    if fv.ndim != 0:
      raise ValueError("fill_value argument to indexed get() must be a scalar")
    fill_value = fv.item()
  y = arr
  if g.scalar_bool_dims:
    y = lax.expand_dims(y, g.scalar_bool_dims)
  a = _aval(arr)
  if 0 in g.slice_shape:   # nothing to gather (also covers zeros(0)[array([], int)])
    return _full(g.slice_shape, 0, a.dtype, a.weak_type)
  if _aval(g.gather_indices).size:
    y = lax.gather(y, g.gather_indices, g.dnums, tuple(g.gather_slice_shape),
                   unique_indices=unique_indices or g.unique_indices,
                   indices_are_sorted=indices_are_sorted or g.indices_are_sorted,
                   mode=mode, fill_value=fill_value)
  if g.reversed_y_dims:
    y = lax.rev(y, g.reversed_y_dims)
  if g.newaxis_dims:
    y = lax.expand_dims(y, g.newaxis_dims)
  return y


_STRATEGIES = ("auto", "gather", "static_slice", "dynamic_slice")


def rewriting_take(arr, idx, *, indices_are_sorted=False, unique_indices=False, mode=None,
                   fill_value=None, normalize_indices=True, strategy="auto"):
  """`arr[idx]` (and `arr.at[idx].get(...)`) with JAX's strategy: static slice, then
  dynamic slice, then gather."""
  if strategy not in _STRATEGIES:
    raise ValueError(f"Unknown indexing strategy: {strategy!r}; expected one of "
                     f"{_STRATEGIES}")
  arr = _asarray(arr)
  ix = NDIndexer.from_raw(idx, _aval(arr).shape)
  slice_mode = (GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
                else GatherScatterMode.from_any(mode))
  if strategy in ("auto", "static_slice"):
    s = _to_static_slice(ix, slice_mode, normalize_indices)
    if s is not None:
      return _static_slice(arr, s)
    if strategy == "static_slice":
      raise TypeError("static_slice strategy: indices must be static, in-bounds scalars or "
                      "slices (with mode 'promise_in_bounds' or 'clip').")
  if strategy in ("auto", "dynamic_slice"):
    d = _to_dynamic_slice(ix, slice_mode if mode is not None
                          else GatherScatterMode.PROMISE_IN_BOUNDS)
    if d is not None:
      return _dynamic_slice(arr, d, normalize_indices)
    if strategy == "dynamic_slice":
      raise TypeError("dynamic_slice strategy: indices must be scalars or unit-step slices "
                      "(with mode 'promise_in_bounds' or 'clip').")
  return _gather(arr, ix.expand_bool_indices(), indices_are_sorted=indices_are_sorted,
                 unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                 normalize=normalize_indices)


def getitem(arr, idx):
  """`arr[idx]` for ember arrays and tracers. Outside jit, an Array indexed by one integer
  Array (`x[idx]`: a gather, its indices normalized first) runs as one compiled call once
  its op-by-op runs for those shapes have cost a compile, as JAX runs its jitted indexing."""
  if type(idx) is Array and type(arr) is Array and idx.dtype.kind in "iu":
    return _take_by_array(arr=arr, idx=idx)
  return rewriting_take(arr, idx)


@eager_jit.compiled(per_shape=True)
def _take_by_array(arr, idx):
  return rewriting_take(arr, idx)

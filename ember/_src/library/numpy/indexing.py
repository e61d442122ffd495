"""ember.numpy: NumPy indexing (`x[idx]`, `x.at[idx].op(...)`) and the index functions.

`x[idx]` follows JAX's strategy (jax/_src/numpy/indexing.py):
1. static ints / slices / None / Ellipsis with in-bounds ints -> `slice`, `rev`,
   `squeeze`, `expand_dims`;
2. otherwise, scalar (possibly traced) ints and unit-step slices -> `dynamic_slice`
   (which clamps: `x[10]` on a length-4 axis reads the last element);
3. everything else (integer arrays, strided slices with arrays, boolean masks) ->
   one `gather` (clamping by default; `mode="fill"` fills instead).
`x.at[idx].set/add/...` is the transposed path: one `scatter*` whose out-of-bounds
updates are dropped by default.

Boolean masks need concrete values (the result shape depends on them): under tracing
they raise NonConcreteBooleanIndexError. The same holds for `nonzero` & co. without
`size=`.
"""
from __future__ import annotations

import enum
import operator
import warnings
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, ufuncs, util
from ember._src.primitives.indexing import GatherScatterMode
from ember._src.core.array import Array

__all__ = [
    "take", "take_along_axis", "put_along_axis", "put", "place", "nonzero", "flatnonzero",
    "argwhere", "compress", "extract", "choose", "select", "diag_indices",
    "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
    "triu_indices_from", "indices", "ix_", "unravel_index", "ravel_multi_index",
]


def _aval(x) -> core.ShapedArray:
  return core.get_aval(x)


def _concrete_value(x):
  """The NumPy value of `x`, or None when `x` is an abstract (traced) value."""
  if isinstance(x, core.Tracer):
    v = x.to_concrete_value()
    return None if v is None else np.asarray(v)
  return np.asarray(x)


def _asarray(x):
  if isinstance(x, (Array, core.Tracer)):
    return x
  return creation.asarray(x)


def _const_like(x, value):
  """`value` as a 0-d array of x's dtype and weak type (a literal in jaxprs)."""
  a = _aval(x)
  return lax.convert_element_type(value, a.dtype, a.weak_type)


def _full(shape, value, dtype, weak_type=False):
  return lax.broadcast_in_dim(lax.convert_element_type(value, dtype, weak_type),
                              tuple(shape), ())


def _where(cond, x, y):
  """select with NumPy broadcasting and dtype promotion (`jnp.where(cond, x, y)`)."""
  x, y = util.promote_dtypes(x, y)
  shape = util.broadcast_shapes(_aval(cond).shape, _aval(x).shape, _aval(y).shape)
  cond, x, y = (util.broadcast_to_shape(a, shape) for a in (cond, x, y))
  return lax.select_n(cond, y, x)


def _int_dtype_for_shape(shape) -> np.dtype:
  """int32 unless an axis is too long for it (JAX's `int_dtype_for_shape`)."""
  return dtypes.int64 if any(d > np.iinfo(np.int32).max for d in shape) else dtypes.int32


# ======================================================================================
# Index parsing
# ======================================================================================

class IndexType(enum.Enum):
  NONE = "none"
  SLICE = "slice"
  ELLIPSIS = "ellipsis"
  INTEGER = "integer"
  BOOLEAN = "boolean"
  ARRAY = "array"


def _is_integer_index(idx) -> bool:
  return isinstance(idx, (int, np.integer)) and not isinstance(idx, (bool, np.bool_))


def _is_array(idx) -> bool:
  return isinstance(idx, (Array, core.Tracer, np.ndarray))


def _index_type(idx) -> IndexType:
  if idx is None:
    return IndexType.NONE
  if idx is Ellipsis:
    return IndexType.ELLIPSIS
  if isinstance(idx, slice):
    return IndexType.SLICE
  if _is_integer_index(idx):
    return IndexType.INTEGER
  if isinstance(idx, (bool, np.bool_)):
    return IndexType.BOOLEAN
  if _is_array(idx):
    dt = _aval(idx).dtype
    if dt == np.bool_:
      return IndexType.BOOLEAN
    if dtypes.is_integer(dt):
      return IndexType.ARRAY
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{dt.name}. (Tip: convert float indices with .astype(int).)")
  if isinstance(idx, str):
    raise TypeError(f"JAX does not support string indexing; got idx={idx!r}")
  if isinstance(idx, (float, complex, np.generic)):
    raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                    f"{np.dtype(type(idx)).name}. (Tip: convert float indices with int().)")
  raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and "
                   f"integer or boolean arrays are valid indices. Got {idx!r}")


class ParsedIndex(NamedTuple):
  index: Any
  typ: IndexType
  consumed_axes: tuple


def _should_unpack_list_index(x) -> bool:
  return ((_is_array(x) and _aval(x).ndim != 0) or isinstance(x, (Sequence, slice))
          or x is Ellipsis or x is None)


def _index_tuple(idx) -> tuple:
  """The index as a tuple; a non-tuple sequence is rejected as JAX does (NumPy's
  heuristics for lists are ambiguous)."""
  if isinstance(idx, tuple):
    return idx
  if isinstance(idx, Sequence) and not isinstance(idx, str):
    what = "tuple(seq)" if any(_should_unpack_list_index(i) for i in idx) else "array(seq)"
    raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                    f"allowed; use `arr[{what}]` instead of `arr[seq]`. See "
                    "https://github.com/jax-ml/jax/issues/4564 for more information.")
  return (idx,)


def _is_bool_data(seq) -> bool:
  """A (nested) list/tuple of Python/NumPy booleans only (no arrays, no tracers)."""
  return all(_is_bool_data(e) if isinstance(e, (list, tuple)) else
             isinstance(e, (bool, np.bool_)) for e in seq)


def _convert_sequence(idx):
  """A list/tuple inside an index tuple becomes an integer or boolean array."""
  if isinstance(idx, (list, tuple)):
    if not idx:
      return np.zeros((0,), dtypes.int32)
    if _is_bool_data(idx):
      return np.asarray(idx)   # a mask of Python/NumPy bools stays concrete under jit
    arr = creation.asarray(idx)
    if not (dtypes.is_integer(_aval(arr).dtype) or _aval(arr).dtype == np.bool_):
      raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                      f"{_aval(arr).dtype.name}")
    return arr
  return idx


class NDIndexer(NamedTuple):
  """An index parsed against an array shape: one ParsedIndex per index element."""
  shape: tuple
  indices: list

  @classmethod
  def from_raw(cls, idx, shape) -> "NDIndexer":
    idx = tuple(_convert_sequence(i) for i in _index_tuple(idx))
    types = [_index_type(i) for i in idx]
    consumed = [(_aval(i).ndim if _is_array(i) else 0) if t == IndexType.BOOLEAN
                else 0 if t in (IndexType.NONE, IndexType.ELLIPSIS) else 1
                for i, t in zip(idx, types)]
    ellipses = [k for k, t in enumerate(types) if t == IndexType.ELLIPSIS]
    if len(ellipses) > 1:
      raise IndexError("an index can only have a single ellipsis ('...')")
    if sum(consumed) > len(shape):
      raise IndexError(f"Too many indices: array is {len(shape)}-dimensional (shape "
                       f"{tuple(shape)}), but {sum(consumed)} were indexed")
    if ellipses:
      consumed[ellipses[0]] = len(shape) - sum(consumed)
    out, dim = [], 0
    for i, t, n in zip(idx, types, consumed):
      out.append(ParsedIndex(i, t, tuple(range(dim, dim + n))))
      dim += n
    return cls(tuple(shape), out)

  # --- validation ---------------------------------------------------------------------

  def static_ints_in_bounds(self, normalize: bool) -> bool:
    for p in self.indices:
      if p.typ == IndexType.INTEGER:
        i, size = operator.index(p.index), self.shape[p.consumed_axes[0]]
        i = i + size if normalize and i < 0 else i
        if not 0 <= i < size:
          return False
    return True

  def validate_slices(self) -> None:
    """Slice bounds must be static: a traced start/stop/step has no static size."""
    for pos, p in enumerate(self.indices):
      if p.typ != IndexType.SLICE:
        continue
      elts = (p.index.start, p.index.stop, p.index.step)
      tracer = next((e for e in elts if isinstance(e, core.Tracer)
                     and e.to_concrete_value() is None), None)
      if tracer is not None:
        raise IndexError(
            "Array slice indices must have static start/stop/step to be used with NumPy "
            f"indexing syntax. Got {p.index} at position {pos}. To index an array at a "
            "dynamic position with a static slice size, use lax.dynamic_slice / "
            "lax.dynamic_update_slice instead (ember does not support dynamically sized "
            "arrays within traced functions).\n" + tracer._origin_msg())

  def has_advanced(self) -> bool:
    return any(p.typ in (IndexType.ARRAY, IndexType.BOOLEAN) and _is_array(p.index)
               and _aval(p.index).ndim > 0 for p in self.indices)

  # --- rewrites -----------------------------------------------------------------------

  def expand_ellipses(self) -> "NDIndexer":
    """Ellipsis and the implicit trailing axes become explicit full slices."""
    out, consumed = [], 0
    for p in self.indices:
      consumed += len(p.consumed_axes)
      if p.typ == IndexType.ELLIPSIS:
        out += [ParsedIndex(slice(None), IndexType.SLICE, (a,)) for a in p.consumed_axes]
      else:
        out.append(p)
    out += [ParsedIndex(slice(None), IndexType.SLICE, (a,))
            for a in range(consumed, len(self.shape))]
    return NDIndexer(self.shape, out)

  def expand_bool_indices(self) -> "NDIndexer":
    """Boolean masks (concrete only) become the integer arrays of their nonzeros;
    scalar booleans stay (they add a length-1 or length-0 axis)."""
    out = []
    for pos, p in enumerate(self.indices):
      if p.typ != IndexType.BOOLEAN:
        out.append(p)
        continue
      val = _concrete_value(p.index)
      if val is None:
        raise errors.NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got {_aval(p.index).str_short()}. "
            "A boolean mask makes the result shape depend on the mask's values, which "
            "are unknown while tracing. Use jnp.where(mask, x, fill) to keep the shape, "
            "or jnp.nonzero(mask, size=N) / jnp.where(mask, size=N) to get a static "
            "number of indices.\n" + p.index._origin_msg())
      if val.ndim == 0:
        out.append(ParsedIndex(bool(val), IndexType.BOOLEAN, ()))
        continue
      expected = [self.shape[a] for a in p.consumed_axes]
      if not all(s in (0, e) for s, e in zip(val.shape, expected)):
        raise IndexError(f"boolean index did not match shape of indexed array in index "
                         f"{pos}: got {val.shape}, expected {tuple(expected)}")
      out += [ParsedIndex(i.astype(dtypes.int32) if i.size < 2**31 else i,
                          IndexType.ARRAY, (a,))
              for i, a in zip(np.nonzero(val), p.consumed_axes)]
    return NDIndexer(self.shape, out)

  def expand_scalar_bool_indices(self) -> "NDIndexer":
    """A scalar boolean indexes a new length-1 axis with arange(1) or arange(0)."""
    shape, out, dim = list(self.shape), [], 0
    for k, p in enumerate(self.indices):
      if p.typ == IndexType.BOOLEAN:
        shape.insert(k, 1)
        out.append(ParsedIndex(np.arange(int(p.index), dtype=dtypes.int32),
                               IndexType.ARRAY, (dim,)))
        dim += 1
      else:
        out.append(p._replace(consumed_axes=tuple(range(dim, dim + len(p.consumed_axes)))))
        dim += len(p.consumed_axes)
    return NDIndexer(tuple(shape), out)

  def normalize_indices(self) -> "NDIndexer":
    """Negative indices count from the end of their axis."""
    out = []
    for p in self.indices:
      if p.typ == IndexType.INTEGER:
        size = self.shape[p.consumed_axes[0]]
        i = p.index
        out.append(p._replace(index=i + size if (not isinstance(i, np.unsignedinteger)
                                                 and i < 0) else i))
      elif p.typ == IndexType.ARRAY and not dtypes.is_unsigned(_aval(p.index).dtype):
        size = self.shape[p.consumed_axes[0]]
        i = p.index
        out.append(p._replace(index=lax.select_n(lax.lt(i, _const_like(i, 0)), i,
                                                 lax.add(i, _const_like(i, size)))))
      else:
        out.append(p)
    return NDIndexer(self.shape, out)


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
  """`arr[idx]` for ember arrays and tracers."""
  return rewriting_take(arr, idx)


# --- indexed updates ----------------------------------------------------------------

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


# ======================================================================================
# jnp index functions
# ======================================================================================

def _canonicalize_axis(axis, ndim, name):
  return util.canonicalize_axis(axis, ndim, name)


def _ravel(x):
  a = _aval(x)
  return x if a.ndim == 1 else lax.reshape(x, (a.size,))


def _static_int(x, what: str) -> int:
  v = _concrete_value(x) if not isinstance(x, int) else np.asarray(x)
  if v is None:
    raise errors.ConcretizationTypeError(
        f"{what} must be a static integer, but it depends on a traced value. Mark it "
        "static with static_argnums / static_argnames.")
  return operator.index(v.item() if isinstance(v, np.ndarray) else v)


def _floor_divmod(a, n: int):
  """(a // n, a % n) with Python's floor semantics for a static positive `n`."""
  q, r = lax.div(a, _const_like(a, n)), lax.rem(a, _const_like(a, n))
  if dtypes.is_unsigned(_aval(a).dtype):
    return q, r
  neg = lax.lt(r, _const_like(r, 0))
  return (lax.select_n(neg, q, lax.sub(q, _const_like(q, 1))),
          lax.select_n(neg, r, lax.add(r, _const_like(r, n))))


def _mod(a, n: int):
  return _floor_divmod(a, n)[1]


def _clip(a, lo: int, hi: int):
  return lax.clamp(_const_like(a, lo), a, _const_like(a, hi))


def take(a, indices, axis: int | None = None, out=None, mode: str | None = None,
         unique_indices: bool = False, indices_are_sorted: bool = False, fill_value=None):
  """Elements of `a` at `indices` along `axis` (flattened when axis is None).

  mode: None/'fill' (out-of-bounds read NaN / `fill_value`; negatives wrap once),
  'clip', or 'wrap'.
  """
  if out is not None:
    raise TypeError("The 'out' argument to jnp.take is not supported: ember arrays are "
                    "immutable; use the returned value.")
  util.check_arraylike("take", a, indices)
  a, indices = _asarray(a), _asarray(indices)
  if not dtypes.is_integer(_aval(indices).dtype):
    raise TypeError(f"take: indices must be of integer type, got "
                    f"{_aval(indices).dtype.name}")
  if axis is None:
    a, axis_idx = _ravel(a), 0
  else:
    axis_idx = _canonicalize_axis(axis, _aval(a).ndim, "take")
  shape = _aval(a).shape
  axis_size = shape[axis_idx]
  if mode is None or mode == "fill":
    gather_mode = GatherScatterMode.FILL_OR_DROP
    if not dtypes.is_unsigned(_aval(indices).dtype):   # gather has no negative indices
      indices = lax.select_n(lax.lt(indices, _const_like(indices, 0)), indices,
                             lax.add(indices, _const_like(indices, axis_size)))
  elif mode == "raise":
    raise ValueError("The 'raise' mode to jnp.take is not supported (ember cannot raise "
                     "on out-of-bounds indices at run time); use 'fill', 'clip' or 'wrap'.")
  elif mode == "wrap":
    indices = _mod(indices, axis_size) if axis_size else indices
    gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
  elif mode == "clip":
    gather_mode = GatherScatterMode.CLIP
  else:
    raise ValueError(f"Invalid mode '{mode}' for np.take")
  ishape = _aval(indices).shape
  if axis_size == 0:
    if _aval(indices).size != 0:
      raise IndexError("Cannot do a non-empty jnp.take() from an empty axis.")
    return a
  if _aval(indices).size == 0:
    out_shape = shape[:axis_idx] + ishape + shape[axis_idx + 1:]
    return _full(out_shape, 0, _aval(a).dtype, _aval(a).weak_type)
  slice_sizes = list(shape)
  slice_sizes[axis_idx] = 1
  nd = len(ishape)
  dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(range(axis_idx)) + tuple(range(axis_idx + nd, len(shape) + nd - 1)),
      collapsed_slice_dims=(axis_idx,), start_index_map=(axis_idx,))
  return lax.gather(a, lax.expand_dims(indices, (nd,)), dnums, tuple(slice_sizes),
                    mode=gather_mode, unique_indices=unique_indices,
                    indices_are_sorted=indices_are_sorted, fill_value=fill_value)


def take_along_axis(arr, indices, axis: int | None = -1, mode=None, fill_value=None, *,
                    wrap_negative_indices: bool = True):
  """`arr` gathered with `indices` along `axis`, the other axes matched (broadcast)
  elementwise. Out-of-bounds indices read NaN / `fill_value` (mode 'fill', default)."""
  util.check_arraylike("take_along_axis", arr, indices)
  a, indices = _asarray(arr), _asarray(indices)
  ia = _aval(indices)
  if not dtypes.is_integer(ia.dtype):
    raise TypeError(f"take_along_axis indices must be of integer type, got {ia.dtype.name}")
  if axis is None:
    if ia.ndim != 1:
      raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                       f"{ia.shape}")
    a, axis = _ravel(a), 0
  rank = _aval(a).ndim
  if rank != ia.ndim:
    raise ValueError(f"indices and arr must have the same number of dimensions; "
                     f"{ia.ndim} vs. {rank}")
  axis_int = _canonicalize_axis(axis, rank, "take_along_axis")
  idx_shape = ia.shape
  axis_size = _aval(a).shape[axis_int]
  arr_shape = tuple(1 if i == axis_int else d for i, d in enumerate(_aval(a).shape))
  out_shape = util.broadcast_shapes(idx_shape, arr_shape)
  if axis_size == 0:
    return _full(out_shape, 0, _aval(a).dtype)
  if wrap_negative_indices and not dtypes.is_unsigned(ia.dtype):
    indices = lax.select_n(lax.lt(indices, _const_like(indices, 0)), indices,
                           lax.add(indices, _const_like(indices, axis_size)))
  index_dims = [i for i, d in enumerate(idx_shape) if i == axis_int or d != 1]
  gather_indices = lax.reshape(
      util.broadcast_to_shape(indices, tuple(out_shape[i] if i in index_dims else 1
                                             for i in range(rank))),
      tuple(out_shape[i] for i in index_dims) + (1,))
  slice_sizes, offset_dims, start_index_map, collapsed = [], [], [], []
  op_batch, idx_batch, squeeze_dims = [], [], []
  new_i = j = 0
  for i in range(rank):
    if i == axis_int:
      slice_sizes.append(1), start_index_map.append(new_i), collapsed.append(new_i)
      new_i += 1
      j += 1
    elif idx_shape[i] == 1:   # take the whole arr axis, no index needed
      offset_dims.append(i), slice_sizes.append(arr_shape[i])
      new_i += 1
    elif arr_shape[i] == 1:   # arr broadcasts along this axis: drop it
      squeeze_dims.append(i)
      j += 1
    else:                     # matched axes: batching dims of the gather
      slice_sizes.append(0 if arr_shape[i] == 0 else 1)
      op_batch.append(new_i), idx_batch.append(j)
      new_i += 1
      j += 1
  if squeeze_dims:
    a = lax.squeeze(a, squeeze_dims)
  dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(offset_dims), collapsed_slice_dims=tuple(collapsed),
      start_index_map=tuple(start_index_map), operand_batching_dims=tuple(op_batch),
      start_indices_batching_dims=tuple(idx_batch))
  return lax.gather(a, gather_indices, dnums, tuple(slice_sizes),
                    mode="fill" if mode is None else mode, fill_value=fill_value)


def _make_along_axis_idx(shape, indices, axis):
  idx = list(indices_fn(shape, sparse=True))
  idx[axis] = indices
  return tuple(idx)


def put_along_axis(arr, indices, values, axis: int | None, inplace: bool = True, *,
                   mode=None):
  """A copy of `arr` with `values` written at `indices` along `axis`."""
  if inplace:
    raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because JAX "
                     "arrays are immutable. Pass inplace=False to instead return an "
                     "updated array.")
  util.check_arraylike("put_along_axis", arr, indices, values)
  arr, indices, values = _asarray(arr), _asarray(indices), _asarray(values)
  original_shape = _aval(arr).shape
  if axis is None:
    arr, indices, axis = _ravel(arr), _ravel(indices), 0
  if _aval(arr).ndim != _aval(indices).ndim:
    raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. "
                     f"Got arr.ndim={_aval(arr).ndim} and indices.ndim={_aval(indices).ndim}.")
  try:
    values = util.broadcast_to_shape(values, _aval(indices).shape)
  except ValueError:
    raise ValueError(f"put_along_axis argument 'values' must be broadcastable to "
                     f"'indices'. Got values.shape={_aval(values).shape} and "
                     f"indices.shape={_aval(indices).shape}.") from None
  axis = _canonicalize_axis(axis, _aval(arr).ndim, "put_along_axis")
  idx = _make_along_axis_idx(_aval(arr).shape, indices, axis)
  result = IndexUpdateHelper(arr)[idx].set(values, mode=mode)
  return lax.reshape(result, original_shape) if _aval(result).shape != original_shape \
      else result


def _tile_to_size(x, n: int):
  """`x` (1-D, non-empty) repeated cyclically to length n."""
  size = _aval(x).size
  if size == n:
    return x
  return take(x, lax.iota(dtypes.int32, n), mode="wrap")


def put(a, ind, v, mode: str | None = None, *, inplace: bool = True):
  """A copy of `a` with flat positions `ind` set to `v` (cycled to len(ind))."""
  if inplace:
    raise ValueError("jax.numpy.put cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("put", a, ind, v)
  arr, ind_arr, v_arr = _asarray(a), _ravel(_asarray(ind)), _ravel(_asarray(v))
  size = _aval(arr).size
  if not size or not _aval(ind_arr).size or not _aval(v_arr).size:
    return arr
  v_arr = _tile_to_size(v_arr, _aval(ind_arr).size)
  if mode is None:
    scatter_mode = "drop"
  elif mode == "clip":
    ind_arr, scatter_mode = _clip(ind_arr, 0, size - 1), "promise_in_bounds"
  elif mode == "wrap":
    ind_arr, scatter_mode = _mod(ind_arr, size), "promise_in_bounds"
  elif mode == "raise":
    raise ValueError("The 'raise' mode to jnp.put is not supported (ember cannot raise on "
                     "out-of-bounds indices at run time); use 'clip', 'wrap' or None.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  return IndexUpdateHelper(arr)[unravel_index(ind_arr, _aval(arr).shape)].set(
      v_arr, mode=scatter_mode)


def place(arr, mask, vals, *, inplace: bool = True):
  """A copy of `arr` with the positions where `mask` is true set to `vals` (cycled)."""
  if inplace:
    raise ValueError("jax.numpy.place cannot modify arrays in-place, because JAX arrays are "
                     "immutable. Pass inplace=False to instead return an updated array.")
  util.check_arraylike("place", arr, mask, vals)
  data, mask_arr, vals_arr = _asarray(arr), _ravel(_asarray(mask)), _ravel(_asarray(vals))
  n = _aval(mask_arr).size
  if _aval(data).size != n:
    raise ValueError(f"place: mask and data must be the same size, got mask of size {n} and "
                     f"arr of shape {_aval(data).shape}")
  if n == 0 or _aval(vals_arr).size == 0:
    return data
  idx, = nonzero(mask_arr, size=n, fill_value=n)
  flat = IndexUpdateHelper(_ravel(data))[idx].set(_tile_to_size(vals_arr, n), mode="drop")
  return lax.reshape(flat, _aval(data).shape)


def _nonzero_size(mask, size, fun_name):
  if size is not None:
    return _static_int(size, f"The size argument of jnp.{fun_name}")
  val = _concrete_value(mask)
  if val is None:
    raise errors.ConcretizationTypeError(
        f"The size argument of jnp.{fun_name} must be statically specified to use "
        f"jnp.{fun_name} within JAX transformations: its result shape depends on the "
        f"values of the traced array {_aval(mask).str_short()}. Pass size=N (and "
        "optionally fill_value=) for a fixed-size result.\n" + mask._origin_msg())
  return int(np.count_nonzero(val))


def nonzero(a, *, size: int | None = None, fill_value=None) -> tuple:
  """Indices of the nonzero elements, one array per dimension.

  With `size`, exactly `size` entries are returned (padded with `fill_value`, default
  0, or truncated); without it the call needs a concrete (non-traced) `a`.
  """
  util.check_arraylike("nonzero", a)
  arr = _asarray(a)
  aa = _aval(arr)
  if aa.ndim == 0:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                     "jnp.atleast_1d(scalar).nonzero() instead.")
  mask = arr if aa.dtype == np.bool_ else lax.ne(arr, _const_like(arr, 0))
  n = _nonzero_size(mask, size, "nonzero")
  fills = (fill_value if isinstance(fill_value, (tuple, list))
           else (fill_value,) * aa.ndim)
  if len(fills) != aa.ndim:
    raise ValueError(f"fill_value must be a scalar or a tuple of length {aa.ndim}; got "
                     f"{fill_value!r}")
  int_dt = dtypes.default_int_dtype()
  dtype = dtypes.result_type(int_dt, *[f for f in fills if f is not None])
  if aa.size == 0 or n == 0:
    return tuple(_full((n,), 0 if f is None else f, dtype) for f in fills)
  # flat position of the k-th nonzero = #{j : cumsum(mask)[j] <= k} (JAX's bincount trick)
  flat_mask = lax.convert_element_type(_ravel(mask), int_dt)
  csum = lax.cumsum(flat_mask)
  counts = lax.scatter_add(
      _full((n,), 0, int_dt), lax.expand_dims(csum, (1,)), _full((aa.size,), 1, int_dt),
      lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), mode="drop")
  flat_indices = lax.cumsum(counts)
  strides = np.cumprod(aa.shape[::-1])[::-1] // np.array(aa.shape)
  outs = []
  for stride, dim_size in zip(strides, aa.shape):
    q = lax.div(flat_indices, _const_like(flat_indices, int(stride)))
    outs.append(lax.rem(q, _const_like(q, dim_size)) if dim_size else q)
  if any(f is not None for f in fills):
    total = lax.reduce_sum(flat_mask, (0,))
    fill_mask = lax.ge(lax.iota(int_dt, n), total)
    outs = [o if f is None else _where(fill_mask, lax.convert_element_type(f, dtype), o)
            for o, f in zip(outs, fills)]
  return tuple(lax.convert_element_type(o, dtype) for o in outs)


def flatnonzero(a, *, size: int | None = None, fill_value=None):
  """Indices of the nonzero elements of the flattened `a`."""
  util.check_arraylike("flatnonzero", a)
  return nonzero(_ravel(_asarray(a)), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size: int | None = None, fill_value=None):
  """Indices of the nonzero elements as an (N, a.ndim) array."""
  util.check_arraylike("argwhere", a)
  arr = _asarray(a)
  if _aval(arr).ndim == 0:
    r = argwhere(lax.reshape(arr, (1,)), size=size, fill_value=fill_value)
    return lax.slice(r, (0, 0), (_aval(r).shape[0], 0))
  cols = nonzero(arr, size=size, fill_value=fill_value)
  return lax.concatenate([lax.expand_dims(c, (1,)) for c in cols], 1)


def compress(condition, a, axis: int | None = None, *, size: int | None = None,
             fill_value=0, out=None):
  """The slices of `a` along `axis` where the 1-D `condition` is true."""
  if out is not None:
    raise TypeError("The 'out' argument to jnp.compress is not supported: ember arrays "
                    "are immutable; use the returned value.")
  util.check_arraylike("compress", condition, a)
  cond = _asarray(condition)
  if _aval(cond).ndim != 1:
    raise ValueError(f"condition must be a 1D array, got shape {_aval(cond).shape}")
  if _aval(cond).dtype != np.bool_:
    cond = lax.ne(cond, _const_like(cond, 0))
  arr = _asarray(a)
  if axis is None:
    axis, arr = 0, _ravel(arr)
  axis = _canonicalize_axis(axis, _aval(arr).ndim, "compress")
  n_arr, n_cond = _aval(arr).shape[axis], _aval(cond).shape[0]
  if n_cond > n_arr:
    extra = _concrete_value(lax.slice(cond, (n_arr,), (n_cond,)))
    if extra is None or extra.any():
      raise ValueError("condition contains entries that are out of bounds")
    cond = lax.slice(cond, (0,), (n_arr,))
  elif n_cond < n_arr:
    arr = lax.slice_in_dim(arr, 0, n_cond, axis=axis)
  if size is None:
    idx = (slice(None),) * axis + (cond,)
    return getitem(arr, idx)
  keep, = nonzero(cond, size=size, fill_value=_aval(cond).shape[0])
  return take(arr, keep, axis=axis, mode="fill", fill_value=fill_value)


def extract(condition, arr, *, size: int | None = None, fill_value=0):
  """The elements of `arr` where `condition` is true (both flattened)."""
  util.check_arraylike("extract", condition, arr)
  return compress(_ravel(_asarray(condition)), _ravel(_asarray(arr)), size=size,
                  fill_value=fill_value)


def choose(a, choices, out=None, mode: str = "raise"):
  """`choices[a[i]][i]` elementwise, with `a`, the choices broadcast together."""
  if out is not None:
    raise TypeError("The 'out' argument to jnp.choose is not supported: ember arrays are "
                    "immutable; use the returned value.")
  util.check_arraylike("choose", a, *choices)
  a = _asarray(a)
  if not dtypes.is_integer(_aval(a).dtype):
    raise TypeError(f"choose: a must be an integer array, got {_aval(a).dtype.name}")
  n = len(choices)
  if mode == "raise":
    val = _concrete_value(a)
    if val is None:
      raise errors.ConcretizationTypeError(
          "jnp.choose with mode='raise' needs a concrete `a` to check its range; use "
          "mode='wrap' or mode='clip' under jit.\n" + a._origin_msg())
    if np.any((val < 0) | (val >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    a = _mod(a, n)
  elif mode == "clip":
    a = _clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  choices = util.promote_dtypes(*choices)
  shape = util.broadcast_shapes(_aval(a).shape, *(_aval(c).shape for c in choices))
  a = util.broadcast_to_shape(a, shape)
  choices = [util.broadcast_to_shape(c, shape) for c in choices]
  stacked = lax.concatenate([lax.expand_dims(c, (0,)) for c in choices], 0)
  return getitem(stacked, (a,) + indices_fn(shape, sparse=True))


def select(condlist, choicelist, default=0):
  """`choicelist[k]` where `condlist[k]` is the first true condition, else `default`."""
  if len(condlist) != len(choicelist):
    raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                     f"{len(choicelist)})")
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  util.check_arraylike("select", *condlist, *choicelist, default)
  default, *choices = util.promote_dtypes(default, *choicelist)
  conds = [_asarray(c) for c in condlist]
  conds = [c if _aval(c).dtype == np.bool_ else lax.ne(c, _const_like(c, 0)) for c in conds]
  shape = util.broadcast_shapes(*(_aval(x).shape for x in (*conds, default, *choices)))
  out = util.broadcast_to_shape(default, shape)
  for c, v in reversed(list(zip(conds, choices))):   # earlier conditions win
    out = lax.select_n(util.broadcast_to_shape(c, shape), out,
                       util.broadcast_to_shape(v, shape))
  return out


def diag_indices(n: int, ndim: int = 2) -> tuple:
  """Indices of the main diagonal of an n x n x ... array of rank `ndim`."""
  n = _static_int(n, "n argument of jnp.diag_indices")
  ndim = _static_int(ndim, "ndim argument of jnp.diag_indices")
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  return (lax.iota(dtypes.default_int_dtype(), n),) * ndim


def diag_indices_from(arr) -> tuple:
  """diag_indices for a square array `arr`."""
  util.check_arraylike("diag_indices_from", arr)
  shape = _aval(arr).shape
  if len(shape) < 2:
    raise ValueError(f"input array must be at least 2-d, got shape {shape}")
  if len(set(shape)) != 1:
    raise ValueError(f"All dimensions of input must be of equal length, got shape {shape}")
  return diag_indices(shape[0], ndim=len(shape))


def _tri_indices(np_fn, n, k, m, name):
  n = _static_int(n, f"n argument of jnp.{name}")
  k = _static_int(k, f"k argument of jnp.{name}")
  m = n if m is None else _static_int(m, f"m argument of jnp.{name}")
  dt = dtypes.default_int_dtype()
  return tuple(Array(i.astype(dt)) for i in np_fn(n, k, m))


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
  """Indices of the lower triangle (on and below diagonal k) of an (n, m) array."""
  return _tri_indices(np.tril_indices, n, k, m, "tril_indices")


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple:
  """Indices of the upper triangle (on and above diagonal k) of an (n, m) array."""
  return _tri_indices(np.triu_indices, n, k, m, "triu_indices")


def _tri_from(fn, arr, k, name):
  util.check_arraylike(name, arr)
  shape = _aval(arr).shape
  if len(shape) != 2:
    raise ValueError(f"input array must be 2-d, got shape {shape}")
  return fn(shape[0], k=k, m=shape[1])


def tril_indices_from(arr, k: int = 0) -> tuple:
  return _tri_from(tril_indices, arr, k, "tril_indices_from")


def triu_indices_from(arr, k: int = 0) -> tuple:
  return _tri_from(triu_indices, arr, k, "triu_indices_from")


def indices(dimensions: Sequence[int], dtype=None, sparse: bool = False):
  """An index grid: array of shape (len(dimensions), *dimensions), or with
  sparse=True a tuple of broadcastable 1-per-axis arrays."""
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype, "indices")
  dims = tuple(_static_int(d, "dimensions argument of jnp.indices") for d in dimensions)
  out = []
  for i, d in enumerate(dims):
    s = (1,) * i + (d,) + (1,) * (len(dims) - i - 1) if sparse else dims
    out.append(lax.broadcast_in_dim(lax.iota(dtype, d), s, (i,)))
  if sparse:
    return tuple(out)
  if not out:
    return Array(np.zeros((0,), dtype))
  return lax.concatenate([lax.expand_dims(o, (0,)) for o in out], 0)


indices_fn = indices   # `indices` is shadowed by parameters named `indices` above


def ix_(*args) -> tuple:
  """Open mesh from 1-D integer sequences: arg i gets shape (1, ..., n_i, ..., 1)."""
  util.check_arraylike("ix", *args)
  args = [_asarray(a) for a in args]
  out = []
  for i, a in enumerate(args):
    aa = _aval(a)
    if aa.ndim != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                       f"{aa.shape}")
    if aa.dtype == np.bool_:
      raise TypeError("Boolean arguments to jax.numpy.ix_ are not supported; convert "
                      "them with jnp.nonzero(mask)[0] first.")
    shape = [1] * len(args)
    shape[i] = aa.shape[0]
    if aa.size == 0:   # NumPy uses an integer index type for empty arrays
      out.append(_full(shape, 0, dtypes.canonicalize_dtype(np.intp)))
    else:
      out.append(lax.broadcast_in_dim(a, tuple(shape), (i,)))
  return tuple(out)


def unravel_index(indices, shape) -> tuple:
  """The multi-index of flat `indices` in an array of `shape`. Out-of-bounds indices
  are clamped (JAX's behaviour; NumPy raises)."""
  util.check_arraylike("unravel_index", indices)
  idx = _asarray(indices)
  if not dtypes.is_integer(_aval(idx).dtype):
    raise TypeError(f"unravel_index: indices must be integers, got {_aval(idx).dtype.name}")
  try:
    shape = list(shape)
  except TypeError:
    shape = [shape]
  if any(np.ndim(s) != 0 for s in shape):
    raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
  shape = [_static_int(s, "shape argument of jnp.unravel_index") for s in shape]
  outs = [None] * len(shape)
  rest = idx
  for i, s in reversed(list(enumerate(shape))):
    rest, outs[i] = _floor_divmod(rest, s) if s else (rest, rest)
  oob_pos = lax.gt(rest, _const_like(rest, 0))
  oob_neg = (None if dtypes.is_unsigned(_aval(rest).dtype)
             else lax.lt(rest, _const_like(rest, -1)))
  res = []
  for s, o in zip(shape, outs):
    if oob_neg is not None:
      o = lax.select_n(oob_neg, o, _full(_aval(o).shape, 0, _aval(o).dtype))
    res.append(lax.select_n(oob_pos, o, _full(_aval(o).shape, s - 1, _aval(o).dtype)))
  return tuple(res)


def ravel_multi_index(multi_index, dims, mode: str = "raise", order: str = "C", *,
                      dtype=None):
  """Flat indices of the multi-index tuple in an array of shape `dims`."""
  if len(multi_index) != len(dims):
    raise ValueError(f"ravel_multi_index: len(multi_index)={len(multi_index)} != "
                     f"len(dims)={len(dims)}")
  dims = tuple(_static_int(d, "dims argument of ravel_multi_index") for d in dims)
  util.check_arraylike("ravel_multi_index", *multi_index)
  mi = [_asarray(i) for i in multi_index]
  dtype = (dtypes.result_type(int, *mi) if dtype is None
           else dtypes.check_user_dtype(dtype, "ravel_multi_index"))
  if not dtypes.is_integer(dtype):
    raise ValueError(f"dtype={dtype} is not an integer type.")
  if int(np.prod(dims, dtype=np.int64)) - 1 > np.iinfo(dtype).max:
    raise ValueError(f"jnp.ravel_multi_index: dtype={dtype} not large enough to hold "
                     f"flattened index for dims={dims}. Use the dtype argument to pass a "
                     "suitable dtype.")
  for i in mi:
    if not dtypes.is_integer(_aval(i).dtype):
      raise TypeError("only int indices permitted")
  if mode == "raise":
    for i, d in zip(mi, dims):
      val = _concrete_value(i)
      if val is None:
        raise errors.ConcretizationTypeError(
            "ravel_multi_index with mode='raise' needs concrete indices to check their "
            "range; use mode='wrap' or mode='clip' under jit.\n" + i._origin_msg())
      if np.any((val < 0) | (val >= d)):
        raise ValueError("invalid entry in coordinates array")
  elif mode == "clip":
    mi = [_clip(i, 0, d - 1) for i, d in zip(mi, dims)]
  elif mode == "wrap":
    mi = [_mod(i, d) for i, d in zip(mi, dims)]
  elif mode != "ignore":
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or "
                     "'ignore'.")
  if order == "F":
    strides = np.cumprod((1,) + dims[:-1])
  elif order == "C":
    strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
  else:
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
  mi = [lax.convert_element_type(i, dtype) for i in mi]
  shape = util.broadcast_shapes(*(_aval(i).shape for i in mi))
  result = _full(shape, 0, dtype)
  for i, s in zip(mi, strides):
    result = lax.add(result, util.broadcast_to_shape(
        lax.mul(i, lax.convert_element_type(int(s), dtype)), shape))
  return result

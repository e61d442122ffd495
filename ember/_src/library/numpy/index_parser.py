"""The index parser of ember.numpy's indexing: the index of `x[idx]` / `x.at[idx]` (ints,
slices, None, Ellipsis, integer and boolean arrays, lists of them) parsed against x's shape
into an `NDIndexer`, one `ParsedIndex` per index element (as jax/_src/numpy/indexing.py's
NDIndexer), with the rewrites the lowering strategies need: explicit full slices for the
Ellipsis, boolean masks to the integer arrays of their nonzeros, scalar booleans to a new
axis, negative indices counted from the end.

It is what `x[idx]` (getitem.py) and `x.at[idx]` (index_update.py) share, so it sits below
both, together with the small array helpers of the indexing modules (`_aval`, `_asarray`,
`_const_like`, `_full`, `_concrete_value`).

Boolean masks need concrete values (the result shape depends on them): under tracing
they raise NonConcreteBooleanIndexError.
"""
from __future__ import annotations

import enum
import operator
from typing import Any, NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation
from ember._src.core.array import Array


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

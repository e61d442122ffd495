"""ember.numpy sorting, searching and counting: sort/argsort/lexsort/sort_complex, partition,
searchsorted/digitize, unique (with `size=` under jit), bincount and histogram.

Everything is built from lax.sort (variadic, stable) so it stages under jit: gathers and
compactions are done by sorting companion operands along with a key (e.g. unique moves the
first element of every run to the front by sorting on `not is_first`).
"""
from __future__ import annotations

import math
import operator
from functools import partial
from typing import NamedTuple

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import logic, util
from ember._src.library.numpy.reductions import (
    asarray_arg, asarray_args, aval, isnan, moveaxes, static_axes)
from ember._src.library.numpy import reductions
from ember._src.library.numpy.indexing import take_along_axis
from ember._src.primitives.elementwise import convert_element_type
from ember._src.primitives.sorting import approx_top_k_p, sort_p, top_k_p
from ember._src.transforms import ad

__all__ = ["sort", "argsort", "lexsort", "sort_complex", "partition", "argpartition",
           "searchsorted", "digitize", "unique", "unique_values", "unique_counts",
           "unique_inverse", "unique_all", "bincount", "histogram", "histogram_bin_edges", "top_k"]


def _order_reversing_invert(x):
  """A map that reverses the sort order: bitwise not for ints and bools, negation else."""
  kind = np.dtype(aval(x).dtype).kind
  return lax.bitwise_not(x) if kind in "biu" else lax.neg(x)


@partial(jit, static_argnums=1, static_argnames=("axis", "mode", "sorted"))
def top_k(a, k: int, /, *, axis: int = -1, mode: str = "largest", sorted: bool = True):
  """(values, int32 indices) of the k largest (mode='largest') or smallest entries along
  `axis`, in that order; ties keep the lower index first. `sorted` is accepted as in JAX
  (the entries always come sorted)."""
  arr = asarray_arg("top_k", a)
  if dtypes.is_complex(aval(arr).dtype):
    raise ValueError("top_k is not compatible with complex inputs.")
  if mode not in ("largest", "smallest"):
    raise ValueError(f"mode must be 'largest' or 'smallest', got {mode!r}")
  axis = util.canonicalize_axis(axis, aval(arr).ndim)
  if mode == "largest":
    return lax.top_k(arr, k, axis=axis)   # a list, as JAX
  vals, idx = lax.top_k(_order_reversing_invert(arr), k, axis=axis)
  return _order_reversing_invert(vals), idx


def _check_sort_args(name, kind, order):
  if kind is not None:
    raise TypeError(f"'kind' argument to {name} is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError(f"'order' argument to {name} is not supported.")


def _flatten_for_axis(arr, axis):
  """(array, canonical axis): axis=None sorts the flattened array."""
  if axis is None:
    shape = aval(arr).shape
    if len(shape) != 1:
      arr = lax.reshape(arr, (math.prod(shape),))
    return arr, 0
  return arr, util.canonicalize_axis(axis, aval(arr).ndim)


@partial(jit, static_argnames=("axis", "kind", "order", "stable", "descending"))
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
  """Sorted copy along `axis` (NaNs last); `descending=True` reverses it."""
  arr = asarray_arg("sort", a)
  _check_sort_args("sort", kind, order)
  arr, dim = _flatten_for_axis(arr, axis)
  result = lax.sort(arr, dimension=dim, is_stable=stable)
  return lax.rev(result, (dim,)) if descending else result


@partial(jit, static_argnames=("axis", "kind", "order", "stable", "descending", "dtype"))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False,
            dtype=None):
  """Indices that sort `a` along `axis`; stable descending keeps equal elements in order."""
  arr = asarray_arg("argsort", a)
  _check_sort_args("argsort", kind, order)
  arr, dim = _flatten_for_axis(arr, axis)
  idx_dtype = (dtypes.check_user_dtype(dtype, "argsort") if dtype is not None
               else dtypes.default_int_dtype())
  iota = lax.broadcasted_iota(idx_dtype, aval(arr).shape, dim)
  if descending and stable:
    arr, iota = lax.rev(arr, (dim,)), lax.rev(iota, (dim,))
  _, indices = lax.sort_key_val(arr, iota, dimension=dim, is_stable=stable)
  return lax.rev(indices, (dim,)) if descending else indices


@partial(jit, static_argnames=("axis",))
def lexsort(keys, axis=-1):
  """Indirect stable sort by several keys; the LAST key is the primary one."""
  if isinstance(keys, (list, tuple)):
    keys = asarray_args("lexsort", *keys)
  else:
    keys = asarray_arg("lexsort", keys)
    if aval(keys).ndim == 0 or aval(keys).shape[0] == 0:
      raise TypeError("need sequence of keys with len > 0 in lexsort")
    keys = [lax.index_in_dim(keys, i, 0, keepdims=False) for i in range(aval(keys).shape[0])]
  if not keys:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  if len({aval(k).shape for k in keys}) > 1:
    raise ValueError(f"all keys need to be the same shape, got shapes "
                     f"{[aval(k).shape for k in keys]}")
  shape = aval(keys[0]).shape
  if not shape:
    return lax.full((), 0, dtypes.default_int_dtype())
  axis = util.canonicalize_axis(axis, len(shape))
  iota = lax.broadcasted_iota(dtypes.default_int_dtype(), shape, axis)
  return lax.sort((*keys[::-1], iota), dimension=axis, num_keys=len(keys))[-1]


def _to_complex_dtype(dt):
  """JAX's to_complex_dtype: via the inexact dtype; 16-bit floats -> complex64."""
  dt = np.dtype(util.to_inexact_dtype(dt))
  if dt.kind == "c":
    return dt
  return np.dtype(np.complex128 if dt == np.float64 else np.complex64)


@jit
def sort_complex(a):
  """`a` sorted (real part first, then imaginary part) as a complex array."""
  a = lax.sort(asarray_arg("sort_complex", a))
  return convert_element_type(a, _to_complex_dtype(aval(a).dtype))


def _partition_prep(name, a, kth, axis):
  arr = asarray_arg(name, a)
  if dtypes.is_complex(aval(arr).dtype):
    raise ValueError(f"jnp.{name} does not support complex inputs.")
  axis = util.canonicalize_axis(axis, aval(arr).ndim)
  kth = util.canonicalize_axis(kth, aval(arr).shape[axis])
  return moveaxes(arr, [axis], [-1]), kth, axis


@partial(jit, static_argnames=("kth", "axis"))
def partition(a, kth, axis=-1):
  """Partial sort: element `kth` lands in its sorted place, the (kth) smaller ones before
  it (ascending) and the larger ones after it (descending), as JAX orders them."""
  arr, kth, axis = _partition_prep("partition", a, kth, axis)
  n = aval(arr).shape[-1]
  bottom = _order_reversing_invert(lax.top_k(_order_reversing_invert(arr), kth + 1)[0])
  top = lax.top_k(arr, n - kth - 1)[0]
  return moveaxes(lax.concatenate([bottom, top], aval(arr).ndim - 1), [-1], [axis])


@partial(jit, static_argnames=("kth", "axis"))
def argpartition(a, kth, axis=-1):
  """Indices that partition `a` (see `partition`); the indices after `kth` come in
  increasing order."""
  arr, kth, axis = _partition_prep("argpartition", a, kth, axis)
  shape = aval(arr).shape
  n = shape[-1]
  bottom_ind = lax.top_k(_order_reversing_invert(arr), kth + 1)[1]
  # mark the bottom positions (compare against every kept index), then take the others
  # in index order: top_k of a 0/1 proxy is stable
  iota = lax.broadcasted_iota(aval(bottom_ind).dtype, shape + (kth + 1,), len(shape) - 1)
  hit = lax.eq(iota, lax.expand_dims(bottom_ind, (len(shape) - 1,)))
  in_bottom = reductions.any(hit, axis=-1)
  proxy = lax.select(in_bottom, lax.full(shape, 0.0, np.float32),
                     lax.full(shape, 1.0, np.float32))
  top_ind = lax.top_k(proxy, n - kth - 1)[1]
  out = lax.concatenate([bottom_ind, top_ind], len(shape) - 1)
  return convert_element_type(moveaxes(out, [-1], [axis]), dtypes.default_int_dtype())


# ---------------------------------------------------------------------------------------
# Searching
# ---------------------------------------------------------------------------------------

_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")
_COMPARE_ALL_MAX_PAIRS = 1 << 16


def _sort_lt(x, y):
  """x < y in sort order (NaN largest; complex by real part, then imaginary, as lax.sort)."""
  if dtypes.is_complex(aval(x).dtype):
    return _complex_order(x, y, _sort_lt)
  if not dtypes.is_inexact(aval(x).dtype):
    return lax.lt(x, y)
  return lax.bitwise_or(lax.lt(x, y), lax.bitwise_and(isnan(y), lax.bitwise_not(isnan(x))))


def _sort_le(x, y):
  """x <= y in sort order (NaN largest; complex lexicographic)."""
  if dtypes.is_complex(aval(x).dtype):
    return _complex_order(x, y, _sort_le)
  if not dtypes.is_inexact(aval(x).dtype):
    return lax.le(x, y)
  return lax.bitwise_or(lax.le(x, y), isnan(y))


def _complex_order(x, y, last):
  """Lexicographic (real, imag) order: real parts before, or equal (NaNs equal) and
  `last` (< or <=) on the imaginary parts."""
  xr, yr = lax.real(x), lax.real(y)
  same_real = lax.bitwise_or(lax.eq(xr, yr), lax.bitwise_and(isnan(xr), isnan(yr)))
  return lax.bitwise_or(_sort_lt(xr, yr),
                        lax.bitwise_and(same_real, last(lax.imag(x), lax.imag(y))))


def _searchsorted_compare_all(a, v, side, dtype):
  """Count, for every query, the sorted elements before it: O(len(a) * size(v))."""
  v_shape = aval(v).shape
  a_b = lax.broadcast_in_dim(a, v_shape + aval(a).shape, (len(v_shape),))
  v_b = lax.broadcast_in_dim(v, v_shape + aval(a).shape, tuple(range(len(v_shape))))
  before = _sort_lt(a_b, v_b) if side == "left" else _sort_le(a_b, v_b)
  return reductions.sum(before, axis=-1, dtype=dtype)


def _rank(x, dtype):
  """Position of each element of 1-D x in its stable sorted order (argsort of argsort)."""
  iota = lax.iota(dtype, aval(x).shape[0])
  _, perm = lax.sort_key_val(x, iota)
  _, rank = lax.sort_key_val(perm, iota)
  return rank


def _searchsorted_sort(a, v, side, dtype):
  """Rank the queries among the sorted elements with three sorts: O((n + m) log)."""
  v_flat = reductions._ravel(v) if aval(v).ndim else lax.reshape(v, (1,))
  n, m = aval(a).shape[0], aval(v_flat).shape[0]
  work = np.dtype(np.int32) if n + m < np.iinfo(np.int32).max else np.dtype(np.int64)
  if side == "left":  # queries first: ties put the query before equal elements
    index = lax.slice(_rank(lax.concatenate([v_flat, a], 0), work), (0,), (m,))
  else:
    index = lax.slice(_rank(lax.concatenate([a, v_flat], 0), work), (n,), (n + m,))
  out = lax.reshape(lax.sub(index, _rank(v_flat, work)), aval(v).shape)
  return convert_element_type(out, dtype)


@partial(jit, static_argnames=("side", "method"))
def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Indices where the elements of `v` would be inserted into the sorted 1-D `a` (or
  a[sorter]). method='sort' ranks by sorting, 'compare_all' compares every pair, and
  'scan' / 'scan_unrolled' (no loop primitive yet) pick one of the two by size."""
  if sorter is None:
    a, v = asarray_args("searchsorted", a, v)
  else:
    a, v, sorter = asarray_args("searchsorted", a, v, sorter)
  if aval(a).ndim != 1:
    raise ValueError(f"a should be 1-dimensional, got shape {aval(a).shape}")
  if side not in ("left", "right"):
    raise ValueError(f"side={side!r} is not supported; use 'left' or 'right'.")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"method={method!r} is not supported; use one of {_SEARCH_METHODS}.")
  a, v = util.promote_dtypes(a, v)
  if sorter is not None and aval(sorter).shape != aval(a).shape:
    raise ValueError(f"sorter must have the shape of a, got {aval(sorter).shape} and "
                     f"{aval(a).shape}")
  # Both methods count the elements of `a` below each query, which does not depend on the
  # order of `a`: a[sorter] would give the same counts, so no gather is needed.
  dtype = np.dtype(np.int32) if aval(a).shape[0] <= np.iinfo(np.int32).max else \
      np.dtype(np.int64)
  # 'scan' (the default) picks by size: comparing all pairs is one fused pass but needs
  # len(a) * size(v) booleans; ranking by sorting is O((n + m) log(n + m)).
  pairs = aval(a).size * aval(v).size
  if method == "sort" or (method.startswith("scan") and pairs > _COMPARE_ALL_MAX_PAIRS):
    return _searchsorted_sort(a, v, side, dtype)
  return _searchsorted_compare_all(a, v, side, dtype)


@partial(jit, static_argnames=("right", "method"))
def digitize(x, bins, right=False, *, method=None):
  """Index of the bin (of monotonic `bins`) each element of `x` falls in."""
  x, bins = asarray_args("digitize", x, bins)
  if aval(bins).ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got shape "
                     f"{aval(bins).shape}")
  n = aval(bins).shape[0]
  if n == 0:
    return lax.full(aval(x).shape, 0, np.int32)
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  increasing = lax.ge(lax.index_in_dim(bins, n - 1, 0, False),
                      lax.index_in_dim(bins, 0, 0, False))
  up = searchsorted(bins, x, side=side, **kw)
  down = lax.sub(convert_element_type(n, aval(up).dtype),
                 searchsorted(lax.rev(bins, (0,)), x, side=side, **kw))
  return logic.where(increasing, up, down)


# ---------------------------------------------------------------------------------------
# unique
# ---------------------------------------------------------------------------------------


class _UniqueAllResult(NamedTuple):
  values: object
  indices: object
  inverse_indices: object
  counts: object


class _UniqueCountsResult(NamedTuple):
  values: object
  counts: object


class _UniqueInverseResult(NamedTuple):
  values: object
  inverse_indices: object


def _concrete_size_error(ar):
  return errors.ConcretizationTypeError(
      f"Abstract tracer value encountered where concrete value is expected: traced array "
      f"with shape {aval(ar).str_short(False)}\nThe error arose for the first argument of "
      "jnp.unique(). To make jnp.unique() compatible with JIT and other transforms, you can "
      "specify a concrete value for the size argument, which will determine the output "
      "size (e.g. jnp.unique(x, size=n, fill_value=...)).")


def _count_unique_np(rows: np.ndarray, equal_nan: bool) -> int:
  """Number of distinct rows of a concrete (n, c) array, with ember's NaN rule."""
  if rows.shape[0] == 0:
    return 0
  keys = [rows[:, j] for j in range(rows.shape[1])][::-1]
  s = rows[np.lexsort(keys)] if keys else rows
  neq = s[1:] != s[:-1]
  if equal_nan and s.dtype.kind in "fc":
    neq &= ~(np.isnan(s[1:]) & np.isnan(s[:-1]))
  return 1 + int(np.count_nonzero(neq.any(axis=1)))


def _shift_pad(x, fill_first):
  """x[i-1] along axis 0 with `fill_first` at position 0 (same shape)."""
  n = aval(x).shape[0]
  if n == 0:
    return x
  head = lax.full((1,) + aval(x).shape[1:], fill_first, aval(x).dtype)
  return lax.concatenate([head, lax.slice_in_dim(x, 0, n - 1, axis=0)], 0)


def _pad_to(x, size, fill):
  """x[:size] along axis 0, padded with `fill` up to `size`."""
  n = aval(x).shape[0]
  if size <= n:
    return lax.slice_in_dim(x, 0, size, axis=0)
  pad = lax.full((size - n,) + aval(x).shape[1:], fill, aval(x).dtype)
  return lax.concatenate([x, pad], 0)


def _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
            fill_value):
  ar = asarray_arg("unique", ar)
  if size is None and isinstance(ar, core.Tracer):
    # as JAX's concrete_or_error: without a size the values must be known, and they are
    # used as constants (under grad the results carry no tangent: JAX's gradient is 0)
    val = ar.to_concrete_value()
    if val is None:
      raise _concrete_size_error(ar)
    ar = np.asarray(val)
  axis = static_axes(axis, "unique")
  if axis is None:
    in_shape = aval(ar).shape
    rows = lax.reshape(ar, (math.prod(in_shape), 1))
  else:
    axis = util.canonicalize_axis(axis, aval(ar).ndim)
    moved = moveaxes(ar, [axis], [0])
    rest = aval(moved).shape[1:]
    rows = lax.reshape(moved, (aval(moved).shape[0], math.prod(rest)))
  n, c = aval(rows).shape
  if size is None:
    val = core.to_numpy(ar)
    np_rows = np.asarray(val).reshape(n, c) if axis is None else \
        np.moveaxis(np.asarray(val), axis, 0).reshape(n, c)
    size = _count_unique_np(np_rows, equal_nan)
  size = operator.index(size)
  idx_dtype = dtypes.default_int_dtype()

  # 1. sort the rows lexicographically (column 0 most significant), carrying their index
  cols = [lax.index_in_dim(rows, j, 1, keepdims=False) for j in range(c)]
  iota = lax.iota(idx_dtype, n)
  if c:
    *sorted_cols, perm = lax.sort((*cols, iota), dimension=0, num_keys=c)
  else:  # rows of zero length are all equal
    sorted_cols, perm = [], iota
  # 2. first element of every run of equal rows (NaNs equal each other if equal_nan)
  is_first = lax.full((n,), False, np.bool_)
  for col in sorted_cols:
    prev = _shift_pad(col, 0)
    neq = lax.ne(col, prev)
    if equal_nan and dtypes.is_inexact(aval(col).dtype):
      neq = lax.bitwise_and(neq, lax.bitwise_not(lax.bitwise_and(isnan(col), isnan(prev))))
    is_first = lax.bitwise_or(is_first, neq)
  is_first = lax.bitwise_or(is_first, lax.eq(iota, convert_element_type(0, idx_dtype)))
  num_unique = reductions.sum(is_first, dtype=idx_dtype)
  # 3. compaction: a stable sort on `not is_first` moves the runs' first rows to the front
  key = convert_element_type(lax.bitwise_not(is_first), np.int32)
  _, first_pos, first_perm, *first_cols = lax.sort((key, iota, perm, *sorted_cols),
                                                   dimension=0, num_keys=1)
  k = lax.iota(idx_dtype, size)
  valid = lax.lt(k, num_unique)

  if n == 0 and size > 0 and fill_value is None:
    raise ValueError("jnp.unique: an empty array with size > 0 needs a fill_value.")
  vals = []
  for col in first_cols:
    col = _pad_to(col, size, 0)
    if fill_value is not None:
      fill = convert_element_type(fill_value, aval(col).dtype)
    else:  # the smallest unique value (0 for an empty result)
      fill = (lax.index_in_dim(col, 0, 0, keepdims=False) if size
              else convert_element_type(0, aval(col).dtype))
    vals.append(lax.select(valid, col, lax.broadcast_in_dim(fill, (size,), ())))
  if axis is None:
    values = vals[0] if vals else lax.full((size,), 0, aval(ar).dtype)
  else:
    values = (lax.concatenate([lax.expand_dims(v, (1,)) for v in vals], 1) if vals
              else lax.full((size, 0), 0, aval(ar).dtype))
    values = moveaxes(lax.reshape(values, (size,) + rest), [0], [axis])
  outs = [values]
  if return_index:
    ind = _pad_to(first_perm, size, 0)
    first = (lax.index_in_dim(ind, 0, 0, keepdims=False) if size
             else convert_element_type(0, idx_dtype))
    outs.append(lax.select(valid, ind, lax.broadcast_in_dim(first, (size,), ())))
  if return_inverse:
    group = lax.sub(reductions.cumsum(is_first, dtype=idx_dtype),
                    convert_element_type(1, idx_dtype))
    _, inverse = lax.sort_key_val(perm, group)  # group id back in input order
    outs.append(lax.reshape(inverse, in_shape) if axis is None else inverse)
  if return_counts:  # run length = next run's first position - this run's
    nxt = lax.concatenate([lax.slice_in_dim(first_pos, min(n, 1), n, axis=0),
                           lax.full((min(n, 1),), n, idx_dtype)], 0)
    is_last = lax.eq(iota, lax.sub(num_unique, convert_element_type(1, idx_dtype)))
    nxt = lax.select(is_last, lax.full((n,), n, idx_dtype), nxt)
    counts = _pad_to(lax.sub(nxt, first_pos), size, 0)
    outs.append(lax.select(valid, counts, lax.full((size,), 0, idx_dtype)))
  return outs[0] if len(outs) == 1 else tuple(outs)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, size=None, fill_value=None, sorted=True):
  """Sorted unique elements (rows along `axis`), optionally with the index of their first
  occurrence, the inverse indices and the counts. Under jit pass a static `size=`: the
  result is padded with `fill_value` (default: the smallest unique value)."""
  return _unique(ar, return_index, return_inverse, return_counts, axis, equal_nan, size,
                 fill_value)


def unique_values(x, /, *, size=None, fill_value=None):
  """Array-API unique values."""
  return _unique(x, False, False, False, None, True, size, fill_value)


def unique_counts(x, /, *, size=None, fill_value=None):
  """Array-API unique values and counts."""
  return _UniqueCountsResult(*_unique(x, False, False, True, None, True, size, fill_value))


def unique_inverse(x, /, *, size=None, fill_value=None):
  """Array-API unique values and inverse indices (in the shape of x)."""
  return _UniqueInverseResult(*_unique(x, False, True, False, None, True, size, fill_value))


def unique_all(x, /, *, size=None, fill_value=None):
  """Array-API unique values, first indices, inverse indices and counts."""
  return _UniqueAllResult(*_unique(x, True, True, True, None, True, size, fill_value))


# ---------------------------------------------------------------------------------------
# Counting
# ---------------------------------------------------------------------------------------


def bincount(x, weights=None, minlength=0, *, length=None):
  """Count (or sum `weights`) per non-negative integer value; under jit pass `length`.
  Negative values count in bin 0 and values >= length are dropped, as in JAX."""
  x = asarray_arg("bincount", x)
  if aval(x).dtype == np.bool_:
    x = convert_element_type(x, np.int32)
  if not dtypes.is_integer(aval(x).dtype):
    raise TypeError(f"x argument to bincount must have an integer type; got "
                    f"{aval(x).dtype}")
  if aval(x).ndim != 1:
    raise ValueError(f"only 1-dimensional input supported; got shape {aval(x).shape}")
  minlength = operator.index(minlength)
  if length is None:
    val = x.to_concrete_value() if isinstance(x, core.Tracer) else core.to_numpy(x)
    if val is None:
      raise errors.ConcretizationTypeError(
          f"Abstract tracer value encountered where concrete value is expected: traced "
          f"array with shape {aval(x).str_short(False)}\nThe error occurred because of "
          "argument 'x' of jnp.bincount. To avoid this error, pass a static `length` "
          "argument.")
    val = np.asarray(val)
    length = max(minlength, val.size and int(max(0, val.max())) + 1)
  else:
    length = operator.index(length)
  if weights is None:
    weights = np.array(1, dtype=dtypes.default_int_dtype())
  else:
    weights = asarray_arg("bincount", weights)
    if aval(weights).shape != aval(x).shape:
      raise ValueError(f"shape of weights must match shape of x, got {aval(weights).shape} "
                       f"and {aval(x).shape}")
  zeros = lax.full((length,), 0, core.get_aval(weights).dtype)
  return zeros.at[lax.max(x, convert_element_type(0, aval(x).dtype))].add(weights,
                                                                         mode="drop")


def _linspace(start, stop, num, dtype):
  """num points from start to stop inclusive (the last one exactly `stop`)."""
  if num == 1:
    return lax.broadcast_in_dim(convert_element_type(start, dtype), (1,), ())
  start, stop = convert_element_type(start, dtype), convert_element_type(stop, dtype)
  steps = lax.div(lax.iota(dtype, num - 1), convert_element_type(num - 1, dtype))
  body = lax.add(start, lax.mul(steps, lax.sub(stop, start)))
  return lax.concatenate([body, lax.broadcast_in_dim(stop, (1,), ())], 0)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
  """Bin edges of `histogram`: `bins` equal bins over `range` (default: data min..max),
  or the given 1-D `bins` array."""
  if isinstance(bins, str):
    raise ValueError(f"jnp.histogram_bin_edges: string bins={bins!r} are not supported; "
                     "pass a number of bins or an array of edges.")
  arr = asarray_arg("histogram_bin_edges", a)
  dtype = util.to_inexact_dtype(aval(arr).dtype)
  if np.ndim(bins) == 1 or (core.is_arraylike(bins) and aval(bins).ndim == 1):
    return convert_element_type(asarray_arg("histogram_bin_edges", bins), dtype)
  bins_int = operator.index(bins)
  if range is None:
    if aval(arr).size == 0:
      lo, hi = convert_element_type(0, dtype), convert_element_type(1, dtype)
    else:
      lo = convert_element_type(reductions.min(arr), dtype)
      hi = convert_element_type(reductions.max(arr), dtype)
  else:
    if len(range) != 2:
      raise ValueError(f"`range` must be either None or a sequence of two scalars, got "
                       f"{range}")
    lo, hi = (convert_element_type(asarray_arg("histogram", r), dtype) for r in range)
  same = lax.eq(lo, hi)
  half = convert_element_type(0.5, dtype)
  lo, hi = (lax.select(same, lax.sub(lo, half), lo), lax.select(same, lax.add(hi, half), hi))
  return _linspace(lo, hi, bins_int + 1, dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):
  """Counts (or summed weights) of `a` in each bin, and the bin edges. The last bin
  includes its right edge."""
  a = asarray_arg("histogram", a)
  if weights is None:
    a, = util.promote_dtypes_inexact(a)
    weights = lax.full(aval(a).shape, 1, aval(a).dtype)
  else:
    weights = asarray_arg("histogram", weights)
    if aval(a).shape != aval(weights).shape:
      raise ValueError("weights should have the same shape as a.")
    a, weights = util.promote_dtypes_inexact(a, weights)
  edges = histogram_bin_edges(a, bins, range, weights)
  n_edges = aval(edges).shape[0]
  a_flat, w_flat = reductions._ravel(a), reductions._ravel(weights)
  bin_idx = searchsorted(edges, a_flat, side="right")
  last = lax.index_in_dim(edges, n_edges - 1, 0, keepdims=False)
  bin_idx = logic.where(lax.eq(a_flat, convert_element_type(last, aval(a_flat).dtype)),
                        n_edges - 1, bin_idx)
  counts = lax.full((n_edges,), 0, aval(weights).dtype).at[bin_idx].add(w_flat)
  counts = lax.slice_in_dim(counts, 1, n_edges, axis=0)
  if density:
    widths = lax.sub(lax.slice_in_dim(edges, 1, n_edges, axis=0),
                     lax.slice_in_dim(edges, 0, n_edges - 1, axis=0))
    counts = lax.div(lax.div(counts, convert_element_type(widths, aval(counts).dtype)),
                     reductions.sum(counts))
  return counts, edges


# --- the derivatives of lax's sort and top_k: the tangents follow the permutation, which
# sorting an iota alongside the operands reveals (JAX's rule); a gather of the tangents
# (take_along_axis, written with jnp, so the rules live here) is linear in them ----------

def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  shape = core.get_aval(primals[0]).shape
  if not shape:
    return (sort_p.bind(*primals, dimension=dimension, is_stable=is_stable, num_keys=num_keys),
            list(tangents))
  iota = lax.broadcasted_iota(np.int32, shape, dimension)
  *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                            num_keys=num_keys)
  return outs, [t if type(t) is ad.Zero else take_along_axis(t, perm, axis=dimension)
                for t in tangents]


def _top_k_jvp(primals, tangents, *, k, axis, is_stable):
  (x,), (t,) = primals, tangents
  values, indices = top_k_p.bind(x, k=k, axis=axis, is_stable=is_stable)
  t_out = (ad.Zero.from_value(values) if type(t) is ad.Zero
           else take_along_axis(t, indices, axis=axis))
  return [values, indices], [t_out, ad.Zero.from_value(indices)]


def _approx_top_k_jvp(primals, tangents, **params):
  (x,), (t,) = primals, tangents
  values, indices = approx_top_k_p.bind(x, **params)
  t_out = (ad.Zero.from_value(values) if type(t) is ad.Zero
           else take_along_axis(t, indices, axis=params["reduction_dimension"]))
  return [values, indices], [t_out, ad.Zero.from_value(indices)]


sort_p.jvp = _sort_jvp
top_k_p.jvp = _top_k_jvp
approx_top_k_p.jvp = _approx_top_k_jvp

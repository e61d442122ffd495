"""ember.numpy's indexing routines (NumPy's "Indexing routines"): take, take_along_axis,
put, put_along_axis, place, nonzero, flatnonzero, argwhere, compress, extract, choose,
select, and the index generators diag_indices(_from), tril/triu_indices(_from), indices,
ix_, unravel_index and ravel_multi_index. Ported from jax/_src/numpy (lax_numpy.py,
indexing.py): each lowers to gather / scatter / iota / select like JAX's.

`x[idx]` itself is getitem.py, `x.at[idx]` index_update.py, the index parser
index_parser.py; mgrid, r_, fill_diagonal & co. are index_tricks.py's. `nonzero` & co.
without `size=` need a concrete array: their result shape depends on its values.
"""
from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.getitem import getitem
from ember._src.library.numpy.index_parser import (
    _asarray, _aval, _concrete_value, _const_like, _full)
from ember._src.library.numpy.index_update import IndexUpdateHelper
from ember._src.primitives.indexing import GatherScatterMode
from ember._src.core.array import Array


__all__ = [
    "take", "take_along_axis", "put_along_axis", "put", "place", "nonzero", "flatnonzero",
    "argwhere", "compress", "extract", "choose", "select", "diag_indices",
    "diag_indices_from", "tril_indices", "triu_indices", "tril_indices_from",
    "triu_indices_from", "indices", "ix_", "unravel_index", "ravel_multi_index",
]


def _where(cond, x, y):
  """select with NumPy broadcasting and dtype promotion (`jnp.where(cond, x, y)`)."""
  x, y = util.promote_dtypes(x, y)
  shape = util.broadcast_shapes(_aval(cond).shape, _aval(x).shape, _aval(y).shape)
  cond, x, y = (util.broadcast_to_shape(a, shape) for a in (cond, x, y))
  return lax.select_n(cond, y, x)


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

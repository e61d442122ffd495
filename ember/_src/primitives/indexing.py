"""Indexing primitives: gather and the scatter family (scatter, scatter-add/sub/mul/min/max),
with the `ember.lax` functions that bind them (gather, scatter*, scatter_apply).

Each primitive is declared once with its shape/dtype rule (ported from XLA's shape
inference, as JAX does), a NumPy reference implementation of XLA's semantics (the
windows, clamping and out-of-bounds modes are reference/indexing.py's) and, beside them,
its batching, lowering and differentiation rules:

- scatter writes (or combines with add/sub/mul/min/max) the update windows at the
  positions of `scatter_indices`. Duplicate indices accumulate for the combining scatters.

gather and scatter-add are each other's transposes. dynamic_slice and dynamic_update_slice
(primitives/slicing.py) batch as a gather / scatter of one window, with the rules here.
"""
from __future__ import annotations

import functools
import operator
from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.core import ShapedArray
from ember._src.primitives import declare, dtype_kind
from ember._src.primitives import elementwise as ew
from ember._src.primitives import structural
from ember._src.reference import indexing as reference_indexing
from ember._src.reference.indexing import (GatherDimensionNumbers, GatherScatterMode,
                                           ScatterDimensionNumbers, default_fill_value)
from ember._src.reference.reductions import is_zero_winner, xla_zero_order
from ember._src.transforms import ad, batching

__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
    "gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
    "scatter_max", "scatter_apply",
]


# --- parameter types (the dimension numbers are reference/indexing.py's) --------------

def _tuple_fields(dnums):
  """Dimension numbers with every field a tuple of ints (params must be hashable)."""
  return type(dnums)(*(tuple(int(d) for d in f) for f in dnums))


def _shape_tuple(shape, what):
  """Static sizes as a tuple of ints (a traced size raises TracerIntegerConversionError)."""
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError as e:
    if isinstance(e, errors.JAXTypeError):
      raise
    raise TypeError(f"{what} must be a sequence of static integers, got {shape!r}") from None


# --- shared checks --------------------------------------------------------------------

def _is_int(aval) -> bool:
  return dtypes.is_integer(aval.dtype)


def _check_sorted(dims, op, name):
  if any(b < a for a, b in zip(dims, dims[1:])):
    raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def _check_no_dups(dims, op, name):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _check_in_range(dims, rank, op, name):
  for d in dims:
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); got: {d}.")


def _check_disjoint(d1, d2, op, n1, n2):
  if set(d1) & set(d2):
    raise TypeError(f"{n1} and {n2} in {op} op must be disjoint; got: {d1} and {d2}.")


def _check_dims(dims, rank, op, name):
  _check_sorted(dims, op, name)
  _check_no_dups(dims, op, name)
  _check_in_range(dims, rank, op, name)


# --- gather ---------------------------------------------------------------------------

def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes,
                          unique_indices, indices_are_sorted, mode, fill_value):
  if not _is_int(indices):
    raise ValueError(f"gather indices must have an integer type, got {indices.dtype.name}")
  dn, op = dimension_numbers, "gather"
  if indices.ndim < 1:
    raise TypeError("gather indices must have rank >= 1: the last dimension is the index "
                    f"vector (add a trailing dimension of size 1); got shape {indices.shape}")
  out_rank = len(dn.offset_dims) + indices.ndim - 1
  _check_sorted(dn.offset_dims, op, "offset_dims")
  _check_no_dups(dn.offset_dims, op, "offset_dims")
  for i, d in enumerate(dn.offset_dims):
    if not 0 <= d < out_rank:
      raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but "
                      f"should have been in [0, {out_rank})")
  if len(dn.start_index_map) != indices.shape[-1]:
    raise TypeError(f"Gather op has {len(dn.start_index_map)} elements in start_index_map "
                    f"and the bound of dimension index_vector_dim={indices.ndim - 1} of "
                    f"indices is {indices.shape[-1]}. These two numbers must be equal.")
  for i, d in enumerate(dn.start_index_map):
    if not 0 <= d < operand.ndim:
      raise TypeError(f"Invalid start_index_map; domain is [0, {operand.ndim}), got: "
                      f"{i}->{d}.")
  _check_no_dups(dn.start_index_map, op, "start_index_map")
  _check_dims(dn.collapsed_slice_dims, operand.ndim, op, "collapsed_slice_dims")
  _check_dims(dn.operand_batching_dims, operand.ndim, op, "operand_batching_dims")
  _check_disjoint(dn.collapsed_slice_dims, dn.operand_batching_dims, op,
                  "collapsed_slice_dims", "operand_batching_dims")
  _check_disjoint(dn.start_index_map, dn.operand_batching_dims, op,
                  "start_index_map", "operand_batching_dims")
  _check_no_dups(dn.start_indices_batching_dims, op, "start_indices_batching_dims")
  _check_in_range(dn.start_indices_batching_dims, indices.ndim, op,
                  "start_indices_batching_dims")
  if indices.ndim - 1 in dn.start_indices_batching_dims:
    raise TypeError("Gather op cannot have the index vector dimension as a batching "
                    f"dimension; got {dn.start_indices_batching_dims}.")
  if len(dn.operand_batching_dims) != len(dn.start_indices_batching_dims):
    raise TypeError(f"Gather op requires equal numbers of operand_batching_dims and "
                    f"start_indices_batching_dims, got {dn.operand_batching_dims} and "
                    f"{dn.start_indices_batching_dims}.")
  ob = tuple(operand.shape[i] for i in dn.operand_batching_dims)
  ib = tuple(indices.shape[i] for i in dn.start_indices_batching_dims)
  if ob != ib:
    raise TypeError(f"Gather op requires operand batching dimensions and indices batching "
                    f"dimensions to have the same shape, got {ob} and {ib}.")
  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"Gather op must have one slice size for every input dimension; got: "
                    f"len(slice_sizes)={len(slice_sizes)}, input_shape.rank={operand.ndim}")
  if len(slice_sizes) != (len(dn.offset_dims) + len(dn.collapsed_slice_dims)
                          + len(dn.operand_batching_dims)):
    raise TypeError(f"All components of the offset index in a gather op must either be a "
                    f"offset dimension or explicitly collapsed/batching; got "
                    f"len(slice_sizes)={len(slice_sizes)}, output_slice_sizes="
                    f"{dn.offset_dims}, collapsed_slice_dims={dn.collapsed_slice_dims}, "
                    f"operand_batching_dims={dn.operand_batching_dims}.")
  if indices.size:
    for i, (n, d) in enumerate(zip(slice_sizes, operand.shape)):
      if not 0 <= n <= d:
        raise TypeError(f"Slice size at index {i} in gather op is out of range, must be "
                        f"within [0, {d} + 1), got {n}.")
  for i, d in enumerate(dn.collapsed_slice_dims):
    if slice_sizes[d] != 1:
      raise TypeError(f"Gather op can only collapse slice dims with bound 1, but bound is "
                      f"{slice_sizes[d]} for index {d} at position {i}.")
  for i, d in enumerate(dn.operand_batching_dims):
    if slice_sizes[d] > 1:
      raise TypeError(f"Gather op can only have operand batching dims with bound 0/1, but "
                      f"bound is {slice_sizes[d]} for index {d} at position {i}.")
  return ShapedArray(reference_indexing.gather_shape(indices.shape, dn, slice_sizes),
                     operand.dtype, operand.weak_type)


gather_p = declare("gather", _gather_abstract_eval, reference_indexing.gather)


def _add1(dims) -> tuple:
  return tuple(np.add(1, dims).astype(np.int64)) if len(dims) else ()  # NumPy ints, as JAX


def _gather_batch(axis_data, vals, dims, *, dimension_numbers, slice_sizes, unique_indices,
                  indices_are_sorted, mode, fill_value):
  """JAX's rule. A batched operand alone: its batch dim becomes a full-size offset (window)
  dim. Batched indices alone: a new leading batch dim of the indices. Both: an operand
  batching dim paired with an indices batching dim (XLA's batched gather)."""
  (operand, indices), (od, idd) = vals, dims
  dn = dimension_numbers
  params = dict(unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                mode=mode, fill_value=fill_value)
  if idd is None:
    operand = batching.moveaxis(operand, od, 0)
    dn = GatherDimensionNumbers(
        offset_dims=(0,) + _add1(dn.offset_dims), collapsed_slice_dims=_add1(
            dn.collapsed_slice_dims), start_index_map=_add1(dn.start_index_map),
        operand_batching_dims=_add1(dn.operand_batching_dims),
        start_indices_batching_dims=dn.start_indices_batching_dims)
    sizes = (batching.shape_of(operand)[0],) + tuple(slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=sizes,
                         **params), 0
  indices = batching.moveaxis(indices, idd, 0)
  if od is None:  # batching accesses into the same array: no longer sorted or unique
    dn = dn._replace(offset_dims=tuple(1 + d for d in dn.offset_dims),
                     start_indices_batching_dims=_add1(dn.start_indices_batching_dims))
    params.update(unique_indices=False, indices_are_sorted=False)
    return gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
                         **params), 0
  operand = batching.moveaxis(operand, od, 0)
  first = 0 if batching.shape_of(operand)[0] == 0 else 1
  dn = GatherDimensionNumbers(
      offset_dims=_add1(dn.offset_dims), collapsed_slice_dims=_add1(dn.collapsed_slice_dims),
      start_index_map=_add1(dn.start_index_map),
      operand_batching_dims=(0,) + _add1(dn.operand_batching_dims),
      start_indices_batching_dims=(0,) + _add1(dn.start_indices_batching_dims))
  return gather_p.bind(operand, indices, dimension_numbers=dn,
                       slice_sizes=(first,) + tuple(slice_sizes), **params), 0


gather_p.batch = _gather_batch


def _index_in_bounds(ctx, indices, dims, operand_shape, window_sizes):
  """Per index vector (the last axis of `indices`): whether 0 <= index[j] <=
  operand_shape[d] - window_sizes[d] for each d = dims[j] (bool, indices.shape[:-1])."""
  dt = indices.dtype
  top = np.iinfo(dt).max
  upper = [min(max(operand_shape[d] - window_sizes[d], 0), top) for d in dims]
  upper = ctx.broadcast_in_dim(ctx.constant(upper, dt), indices.dims, (indices.shape.rank - 1,))
  ok = ctx.compare(indices, upper, "LE")
  if not dtypes.is_unsigned(dt):
    ok = ctx.and_(ok, ctx.compare(indices, ctx.constant(0, dt), "GE"))
  and_comp = ctx.scalar_computation("and", np.bool_)
  return ctx.reduce([ok], [ctx.constant(True, np.bool_)], (indices.shape.rank - 1,), and_comp)[0]


def _gather_lower(ctx, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                  indices_are_sorted, mode, fill_value):
  """XLA's gather (which clamps windows into bounds: CLIP, PROMISE_IN_BOUNDS); with
  FILL_OR_DROP, a select writes `fill_value` where a window was out of bounds (as JAX)."""
  dn = dimension_numbers
  attrs = {"offset_dims": dn.offset_dims, "collapsed_slice_dims": dn.collapsed_slice_dims,
           "start_index_map": dn.start_index_map,
           "operand_batching_dims": dn.operand_batching_dims,
           "start_indices_batching_dims": dn.start_indices_batching_dims,
           "index_vector_dim": indices.shape.rank - 1, "slice_sizes": tuple(slice_sizes),
           "indices_are_sorted": indices_are_sorted}
  out = ctx.emit("gather", ctx.out_shape(), [operand, indices], attrs)
  if GatherScatterMode.from_any(mode) != GatherScatterMode.FILL_OR_DROP or 0 in out.dims:
    return out
  ok = _index_in_bounds(ctx, indices, dn.start_index_map, operand.dims, slice_sizes)
  batch_dims = [i for i in range(out.shape.rank) if i not in dn.offset_dims]
  fill = default_fill_value(operand.dtype) if fill_value is None else fill_value
  return ctx.select(ctx.broadcast_in_dim(ok, out.dims, batch_dims), out,
                    ctx.full(fill, operand.dtype, out.dims))


gather_p.lower = _gather_lower


# linear in the operand (indices are integers: zero tangents); the transpose is a
# scatter-add of the cotangent into zeros

def _gather_jvp(primals, tangents, *, dimension_numbers, slice_sizes, unique_indices,
                indices_are_sorted, mode, fill_value):
  (operand, indices), t = primals, tangents[0]
  params = dict(dimension_numbers=dimension_numbers, slice_sizes=slice_sizes,
                unique_indices=unique_indices, indices_are_sorted=indices_are_sorted, mode=mode)
  out = gather_p.bind(operand, indices, fill_value=fill_value, **params)
  if type(t) is ad.Zero:
    return out, ad.Zero.from_value(out)
  return out, gather_p.bind(t, indices, fill_value=0 if fill_value is not None else None,
                            **params)


def _scatter_dnums_of(dn) -> ScatterDimensionNumbers:
  """The scatter that writes back the windows a gather with `dn` reads."""
  return ScatterDimensionNumbers(
      update_window_dims=tuple(dn.offset_dims), inserted_window_dims=tuple(dn.collapsed_slice_dims),
      scatter_dims_to_operand_dims=tuple(dn.start_index_map),
      operand_batching_dims=tuple(dn.operand_batching_dims),
      scatter_indices_batching_dims=tuple(dn.start_indices_batching_dims))


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                      indices_are_sorted, mode, fill_value):
  a = operand.aval
  zeros = structural.full(a.shape, 0, a.dtype)
  out = scatter_add(zeros, indices, ct, _scatter_dnums_of(dimension_numbers),
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=mode)
  return [out, None]


gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes,
           *, unique_indices: bool = False, indices_are_sorted: bool = False,
           mode=None, fill_value=None):
  """XLA's Gather. `mode=None` means PROMISE_IN_BOUNDS (clamping); with FILL_OR_DROP
  out-of-bounds windows read `fill_value` (default: NaN / most negative int / True)."""
  if not isinstance(dimension_numbers, GatherDimensionNumbers):
    raise TypeError("gather dimension_numbers must be a lax.GatherDimensionNumbers, got "
                    f"{type(dimension_numbers).__name__}")
  parsed = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
                                      else mode)
  if parsed == GatherScatterMode.ONE_HOT:
    raise ValueError("gather mode 'one_hot' is not supported by ember; use 'clip', "
                     "'fill' or 'promise_in_bounds'.")
  if parsed == GatherScatterMode.FILL_OR_DROP:
    if fill_value is None:
      fill_value = default_fill_value(core.get_aval(operand).dtype)
  else:
    fill_value = None
  return gather_p.bind(operand, start_indices,
                       dimension_numbers=_tuple_fields(dimension_numbers),
                       slice_sizes=_shape_tuple(slice_sizes, "slice_sizes"),
                       unique_indices=bool(unique_indices),
                       indices_are_sorted=bool(indices_are_sorted), mode=parsed,
                       fill_value=fill_value)


# --- scatter --------------------------------------------------------------------------

def _scatter_abstract_eval(operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode, update_jaxpr,
                           update_consts, _name="scatter"):
  if not _is_int(indices):
    raise ValueError(f"scatter indices must have an integer type, got {indices.dtype.name}")
  if operand.dtype != updates.dtype:
    raise TypeError(f"lax.{_name.replace('-', '_')} requires arguments to have the same "
                    f"dtypes, got {operand.dtype.name}, {updates.dtype.name}. (Tip: "
                    "jnp's .at[] converts updates; with lax, convert with "
                    "lax.convert_element_type.)")
  dn, op = dimension_numbers, "scatter"
  if indices.ndim < 1:
    raise TypeError("scatter indices must have rank >= 1: the last dimension is the index "
                    f"vector (add a trailing dimension of size 1); got shape {indices.shape}")
  ivd = indices.ndim - 1
  expected = ivd + len(dn.update_window_dims)
  if updates.ndim != expected:
    raise TypeError(f"Updates tensor must be of rank {expected}; got {updates.ndim}.")
  _check_dims(dn.update_window_dims, updates.ndim, op, "update_window_dims")
  _check_dims(dn.inserted_window_dims, operand.ndim, op, "inserted_window_dims")
  _check_dims(dn.operand_batching_dims, operand.ndim, op, "operand_batching_dims")
  _check_disjoint(dn.inserted_window_dims, dn.operand_batching_dims, op,
                  "inserted_window_dims", "operand_batching_dims")
  _check_disjoint(dn.scatter_dims_to_operand_dims, dn.operand_batching_dims, op,
                  "scatter_dims_to_operand_dims", "operand_batching_dims")
  _check_no_dups(dn.scatter_indices_batching_dims, op, "scatter_indices_batching_dims")
  _check_in_range(dn.scatter_indices_batching_dims, indices.ndim, op,
                  "scatter_indices_batching_dims")
  if ivd in dn.scatter_indices_batching_dims:
    raise TypeError("Scatter op cannot have the index vector dimension as a batching "
                    f"dimension; got {dn.scatter_indices_batching_dims}.")
  if len(dn.operand_batching_dims) != len(dn.scatter_indices_batching_dims):
    raise TypeError(f"Scatter op requires equal numbers of operand_batching_dims and "
                    f"scatter_indices_batching_dims, got {dn.operand_batching_dims} and "
                    f"{dn.scatter_indices_batching_dims}.")
  ob = tuple(operand.shape[i] for i in dn.operand_batching_dims)
  ib = tuple(indices.shape[i] for i in dn.scatter_indices_batching_dims)
  if ob != ib:
    raise TypeError(f"Scatter op requires operand batching dimensions and indices batching "
                    f"dimensions to have the same shape, got {ob} and {ib}.")
  window_rank = (len(dn.update_window_dims) + len(dn.inserted_window_dims)
                 + len(dn.operand_batching_dims))
  if operand.ndim != window_rank:
    raise TypeError(f"Scatter op has window of size {window_rank}; doesn't match operand "
                    f"of rank {operand.ndim}.")
  if len(dn.scatter_dims_to_operand_dims) != indices.shape[-1]:
    raise TypeError(f"Scatter op has {len(dn.scatter_dims_to_operand_dims)} elements in "
                    f"scatter_dims_to_operand_dims and the bound of dimension "
                    f"index_vector_dim={ivd} of indices is {indices.shape[-1]}. These two "
                    f"numbers must be equal")
  for i, d in enumerate(dn.scatter_dims_to_operand_dims):
    if not 0 <= d < operand.ndim:
      raise TypeError(f"Invalid scatter_dims_to_operand_dims mapping; domain is "
                      f"[0, {operand.ndim}), got: {i}->{d}.")
  _check_no_dups(dn.scatter_dims_to_operand_dims, op, "scatter_dims_to_operand_dims")
  inserted = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  max_window = [d for i, d in enumerate(operand.shape) if i not in inserted]
  for bound, ud in zip(max_window, dn.update_window_dims):
    if updates.shape[ud] > bound:
      raise TypeError(f"Bounds of the window dimensions of updates must not exceed the "
                      f"bounds of the corresponding dimensions of operand. For dimension "
                      f"{ud}, updates bound is {updates.shape[ud]}, operand bound is {bound}.")
  scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
  for d, n in zip(scatter_dims, indices.shape[:-1]):
    if updates.shape[d] != n:
      raise TypeError(f"Bounds of the scatter dimensions of updates must be the same as the "
                      f"bounds of the corresponding dimensions of scatter indices. For "
                      f"scatter dimension {d}, updates bound is {updates.shape[d]}, indices "
                      f"bound is {n}. (operand {operand.shape}, indices {indices.shape}, "
                      f"updates {updates.shape})")
  return operand


_COMBINE = {"scatter-add": np.add, "scatter-sub": np.subtract, "scatter-mul": np.multiply,
            "scatter-min": np.minimum, "scatter-max": np.maximum}


def _scatter_impl_for(name):
  def impl(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode, update_jaxpr, update_consts):
    out = operand.copy()
    if out.size == 0 or updates.size == 0:
      return out
    pos, vals = reference_indexing.scatter_windows(operand.shape, indices, updates,
                                                   dimension_numbers, mode)
    flat = out.reshape(-1)   # a view: writes land in `out`
    if name in _COMBINE:
      ufunc = _COMBINE[name]
      with np.errstate(all="ignore"):
        ufunc.at(flat, pos, vals)   # .at accumulates duplicate indices
      if ufunc in (np.maximum, np.minimum) and dtype_kind(out.dtype) == "f":
        has = is_zero_winner(ufunc, operand.reshape(-1))
        np.logical_or.at(has, pos, is_zero_winner(ufunc, vals))
        flat[:] = xla_zero_order(ufunc, flat, has)
    elif update_jaxpr is None:
      flat[pos] = vals
    else:   # scatter_apply: the combiner runs once per update, duplicates in sequence
      fn = core.jaxpr_as_fun(update_jaxpr)
      for p, v in zip(pos, vals):
        res, = fn(flat[p], v)
        flat[p] = np.asarray(res)
    return out
  return impl


def _declare_scatter(name):
  def abstract_eval(*avals, **params):
    return _scatter_abstract_eval(*avals, **params, _name=name)
  return declare(name, abstract_eval, _scatter_impl_for(name))


scatter_p = _declare_scatter("scatter")
scatter_add_p = _declare_scatter("scatter-add")
scatter_sub_p = _declare_scatter("scatter-sub")
scatter_mul_p = _declare_scatter("scatter-mul")
scatter_min_p = _declare_scatter("scatter-min")
scatter_max_p = _declare_scatter("scatter-max")


def _scatter_batch_for(prim):
  """JAX's rule: operand and updates get their batch dim in front (broadcast where
  unbatched); unbatched indices scatter whole batch-wide windows, batched indices pair
  an operand batching dim with an indices batching dim."""
  def rule(axis_data, vals, dims, *, dimension_numbers, **params):
    (operand, indices, updates), (od, idd, ud) = vals, dims
    dn = dimension_numbers
    size = batching.batch_size(vals, dims)
    operand = batching.bdim_at_front(operand, od, size)
    updates = batching.bdim_at_front(updates, ud, size)
    if idd is None:
      dn = ScatterDimensionNumbers(
          update_window_dims=(0,) + _add1(dn.update_window_dims),
          inserted_window_dims=_add1(dn.inserted_window_dims),
          scatter_dims_to_operand_dims=_add1(dn.scatter_dims_to_operand_dims),
          operand_batching_dims=_add1(dn.operand_batching_dims),
          scatter_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))
    else:
      indices = batching.bdim_at_front(indices, idd, size)
      dn = ScatterDimensionNumbers(
          update_window_dims=_add1(dn.update_window_dims),
          inserted_window_dims=_add1(dn.inserted_window_dims),
          scatter_dims_to_operand_dims=_add1(dn.scatter_dims_to_operand_dims),
          operand_batching_dims=(0,) + _add1(dn.operand_batching_dims),
          scatter_indices_batching_dims=(0,) + _add1(dn.scatter_indices_batching_dims))
    return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), 0
  return rule


for _p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p, scatter_max_p):
  _p.batch = _scatter_batch_for(_p)


_SCATTER_OPCODES = {"scatter-add": "add", "scatter-sub": "subtract", "scatter-mul": "multiply",
                    "scatter-min": "minimum", "scatter-max": "maximum"}


def _scatter_computation(ctx, name, dtype, update_jaxpr):
  """The scalar update computation (old, new) -> value of a scatter primitive."""
  if name in _SCATTER_OPCODES:
    return ctx.scalar_computation(_SCATTER_OPCODES[name], dtype)
  if update_jaxpr is None:  # plain scatter: the update replaces the old value
    return ctx.region("scatter_update", [dtype, dtype], lambda c, old, new: new)
  return ctx.lower_computation(update_jaxpr, "scatter_apply")  # func(old), from scatter_apply


def _scatter_lowering(name):
  def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
           unique_indices, mode, update_jaxpr, update_consts):
    """XLA's scatter, which skips out-of-bounds windows (FILL_OR_DROP, PROMISE_IN_BOUNDS);
    CLIP clamps the indices so every window is in bounds first (as JAX)."""
    dn = dimension_numbers
    ivd = indices.shape.rank - 1
    if GatherScatterMode.from_any(mode) == GatherScatterMode.CLIP:
      inserted = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
      window = iter(updates.dims[d] for d in dn.update_window_dims)
      sizes = [1 if i in inserted else next(window) for i in range(operand.shape.rank)]
      upper = [min(max(operand.dims[d] - sizes[d], 0), np.iinfo(indices.dtype).max)
               for d in dn.scatter_dims_to_operand_dims]
      hi = ctx.broadcast_in_dim(ctx.constant(upper, indices.dtype), indices.dims, (ivd,))
      indices = ctx.emit("clamp", indices.shape, [ctx.full_like(0, indices), indices, hi])
    attrs = {"update_window_dims": tuple(dn.update_window_dims),
             "inserted_window_dims": tuple(dn.inserted_window_dims),
             "scatter_dims_to_operand_dims": tuple(dn.scatter_dims_to_operand_dims),
             "input_batching_dims": tuple(dn.operand_batching_dims),
             "scatter_indices_batching_dims": tuple(dn.scatter_indices_batching_dims),
             "index_vector_dim": ivd, "indices_are_sorted": indices_are_sorted,
             "unique_indices": unique_indices}
    comp = _scatter_computation(ctx, name, operand.dtype, update_jaxpr)
    return ctx.emit("scatter", operand.shape, [operand, indices, updates], attrs, [comp])
  return rule


for _p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p, scatter_max_p):
  _p.lower = _scatter_lowering(_p.name)


# --- scatter: differentiation rules ---------------------------------------------------
# scatter-add/sub are linear in operand and updates (indices are integers: zero tangents);
# their transposes gather the update windows back. scatter, scatter-mul and
# scatter-min/max get JAX's jvp rules, written with linear primitives so reverse mode
# transposes them.

def _gather_dnums_of(dn) -> GatherDimensionNumbers:
  """The gather that reads back the windows a scatter with `dn` writes."""
  return GatherDimensionNumbers(
      offset_dims=tuple(dn.update_window_dims), collapsed_slice_dims=tuple(dn.inserted_window_dims),
      start_index_map=tuple(dn.scatter_dims_to_operand_dims),
      operand_batching_dims=tuple(dn.operand_batching_dims),
      start_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))


def _window_slice_sizes(operand_shape, updates_shape, dn) -> tuple:
  sizes, pos = [], 0
  for i in range(len(operand_shape)):
    if i in dn.inserted_window_dims or i in dn.operand_batching_dims:
      sizes.append(1)
    else:
      sizes.append(updates_shape[dn.update_window_dims[pos]])
      pos += 1
  return tuple(sizes)


def _gather_back(ct, indices, updates_shape, dn, params):
  """The update windows of `ct` at `indices` (the transpose of a scatter-add's updates)."""
  sizes = _window_slice_sizes(core.get_aval(ct).shape, updates_shape, dn)
  mode = params["mode"]
  return gather_p.bind(ct, indices, dimension_numbers=_gather_dnums_of(dn), slice_sizes=sizes,
                       unique_indices=params["unique_indices"],
                       indices_are_sorted=params["indices_are_sorted"], mode=mode,
                       fill_value=0 if mode == GatherScatterMode.FILL_OR_DROP else None)


def _scatter_add_sub_jvp(prim):
  def rule(primals, tangents, **params):
    operand, indices, updates = primals
    out = prim.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
      return out, ad.Zero.from_value(out)
    return out, prim.bind(ad.instantiate_zeros(t_op), indices, ad.instantiate_zeros(t_up),
                          **params)
  return rule


def _scatter_add_sub_transpose(negate):
  def rule(ct, operand, indices, updates, *, dimension_numbers, **params):
    t_op = ct if ad.is_undefined_primal(operand) else None
    t_up = None
    if ad.is_undefined_primal(updates):
      t_up = _gather_back(ct, indices, updates.aval.shape, dimension_numbers, params)
      t_up = ew.neg(t_up) if negate else t_up
    return [t_op, None, t_up]
  return rule


scatter_add_p.jvp = _scatter_add_sub_jvp(scatter_add_p)
scatter_add_p.transpose = _scatter_add_sub_transpose(negate=False)
scatter_sub_p.jvp = _scatter_add_sub_jvp(scatter_sub_p)
scatter_sub_p.transpose = _scatter_add_sub_transpose(negate=True)


def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode, update_jaxpr, update_consts):
  """JAX's rule: scatter positive ids to learn which update (or the operand) each output
  element comes from, then combine masked values and tangents with scatter-adds."""
  operand, indices, updates = primals
  t_op, _, t_up = tangents
  dn = dimension_numbers
  params = dict(dimension_numbers=dn, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode)
  out = scatter_p.bind(operand, indices, updates, update_jaxpr=update_jaxpr,
                       update_consts=update_consts, **params)
  if update_jaxpr is not None:
    raise NotImplementedError("Differentiation rule for 'scatter' with an update function "
                              "(lax.scatter_apply) not implemented")
  u_shape = core.get_aval(updates).shape
  ids_shape = [1 if i in dn.update_window_dims else d for i, d in enumerate(u_shape)]
  n_ids = int(np.prod(ids_shape, dtype=np.int64))
  id_dtype = np.uint32 if n_ids + 1 < 2 ** 31 else np.uint64
  update_ids = ew.add(structural.reshape(structural.iota(id_dtype, n_ids), ids_shape), id_dtype(1))
  update_ids = structural.broadcast_in_dim(update_ids, u_shape, tuple(range(len(u_shape))))
  o_shape = core.get_aval(operand).shape
  scattered_ids = scatter_p.bind(structural.full(o_shape, 0, id_dtype), indices, update_ids,
                                 update_jaxpr=None, update_consts=(), **params)
  gathered_ids = _gather_back(scattered_ids, indices, u_shape, dn, params)
  keep_operand = ew.eq(scattered_ids, structural.full(o_shape, 0, id_dtype))
  keep_update = ew.eq(update_ids, gathered_ids)
  add_params = dict(params, update_jaxpr=None, update_consts=())
  t_op, t_up = ad.instantiate_zeros(t_op), ad.instantiate_zeros(t_up)
  masked_t_op = ew.select(keep_operand, t_op, structural.full_like(t_op, 0))
  masked_t_up = ew.select(keep_update, t_up, structural.full_like(t_up, 0))
  return out, scatter_add_p.bind(masked_t_op, indices, masked_t_up, **add_params)


scatter_p.jvp = _scatter_jvp


def _scatter_mul_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted,
                     unique_indices, mode, update_jaxpr, update_consts):
  operand, indices, updates = primals
  t_op, _, t_up = tangents
  params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode, update_jaxpr=update_jaxpr,
                update_consts=update_consts)
  out = scatter_mul_p.bind(operand, indices, updates, **params)
  t_out = ad.Zero.from_value(out)
  if type(t_op) is not ad.Zero:  # out = x * (product of the updates at each position)
    factor = scatter_mul_p.bind(structural.full_like(operand, 1), indices, updates, **params)
    t_out = ad.add_tangents(t_out, ew.mul(t_op, factor))
  if type(t_up) is not ad.Zero:
    if not unique_indices:
      raise NotImplementedError("scatter_mul gradients are only implemented if "
                                "`unique_indices=True`")
    add_params = dict(params, update_jaxpr=None, update_consts=())
    spread = scatter_add_p.bind(structural.full_like(operand, 0), indices, t_up, **add_params)
    t_out = ad.add_tangents(t_out, ew.mul(operand, spread))
  return out, t_out


scatter_mul_p.jvp = _scatter_mul_jvp


def _scatter_extremal_jvp(prim):
  """The tangent of whichever of operand and updates attains the result, averaged over
  ties (as max/min average their tangents). As in JAX, an element no update touches keeps
  the operand's tangent (even where it is NaN and so equals nothing), and a touched element
  that neither attains (a NaN result) gets a zero tangent."""
  def rule(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices, mode,
           update_jaxpr, update_consts):
    operand, indices, updates = primals
    params = dict(dimension_numbers=dimension_numbers, indices_are_sorted=indices_are_sorted,
                  unique_indices=unique_indices, mode=mode)
    out = prim.bind(operand, indices, updates, update_jaxpr=update_jaxpr,
                    update_consts=update_consts, **params)
    if type(tangents[0]) is ad.Zero and type(tangents[2]) is ad.Zero:
      return out, ad.Zero.from_value(out)
    t_op, t_up = (ad.instantiate_zeros(t) for t in (tangents[0], tangents[2]))
    dt = core.get_aval(operand).dtype
    u_shape = core.get_aval(updates).shape
    add_params = dict(params, update_jaxpr=None, update_consts=())

    def spread(vals):  # the sum of `vals` (shaped like updates) at each operand position
      return scatter_add_p.bind(structural.full_like(operand, 0), indices, vals, **add_params)

    won_up = ew.convert_element_type(
        ew.eq(updates, _gather_back(out, indices, u_shape, dimension_numbers, params)), dt)
    won_op = ew.convert_element_type(ew.eq(operand, out), dt)
    count = ew.add(won_op, spread(won_up))
    total = ew.add(ew.mul(t_op, won_op), spread(ew.mul(t_up, won_up)))
    zero = structural.full_like(count, 0)
    safe_count = ew.select(ew.eq(count, zero), structural.full_like(count, 1), count)
    touched = ew.gt(spread(structural.full_like(updates, 1)), zero)
    return out, ew.select(touched, ew.div(total, safe_count), t_op)
  return rule


scatter_min_p.jvp = _scatter_extremal_jvp(scatter_min_p)
scatter_max_p.jvp = _scatter_extremal_jvp(scatter_max_p)


# --- scatter: the lax functions -------------------------------------------------------

@functools.cache
def _combiner_jaxpr(fn: Callable, dtype, weak_type: bool):
  """The scalar `update_jaxpr` JAX attaches to scatters: `{ lambda ; a b. let c = op a b }`."""
  aval = ShapedArray((), dtype, False)
  jaxpr, _ = core.trace_to_jaxpr(lambda x, y: ([fn(x, y)], None), [aval, aval])
  return jaxpr


def _scatter_bind(prim, combine, operand, scatter_indices, updates, dimension_numbers,
                  indices_are_sorted, unique_indices, mode):
  if not isinstance(dimension_numbers, ScatterDimensionNumbers):
    raise TypeError("scatter dimension_numbers must be a lax.ScatterDimensionNumbers, got "
                    f"{type(dimension_numbers).__name__}")
  jaxpr = None
  if combine is not None:
    aval = core.get_aval(operand)
    jaxpr = _combiner_jaxpr(combine, aval.dtype, False)
  return prim.bind(operand, scatter_indices, updates, update_jaxpr=jaxpr, update_consts=(),
                   dimension_numbers=_tuple_fields(dimension_numbers),
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))


def _scatter_fn(prim, combine_name, doc):
  def fn(operand, scatter_indices, updates, dimension_numbers, *,
         indices_are_sorted: bool = False, unique_indices: bool = False, mode=None):
    combine = getattr(ew, combine_name) if combine_name else None
    return _scatter_bind(prim, combine, operand, scatter_indices, updates,
                         dimension_numbers, indices_are_sorted, unique_indices, mode)
  fn.__name__ = fn.__qualname__ = prim.name.replace("-", "_")
  fn.__doc__ = (f"XLA's Scatter, {doc}. `mode=None` means FILL_OR_DROP: out-of-bounds "
                "update windows are dropped.")
  return fn


scatter = _scatter_fn(scatter_p, None, "where updates replace operand values")
scatter_add = _scatter_fn(scatter_add_p, "add", "adding updates (duplicates accumulate)")
scatter_sub = _scatter_fn(scatter_sub_p, "sub", "subtracting updates (duplicates accumulate)")
scatter_mul = _scatter_fn(scatter_mul_p, "mul", "multiplying by updates (duplicates accumulate)")
scatter_min = _scatter_fn(scatter_min_p, "min", "taking the minimum with updates")
scatter_max = _scatter_fn(scatter_max_p, "max", "taking the maximum with updates")


def scatter_apply(operand, scatter_indices, func: Callable, dimension_numbers, *,
                  update_shape=(), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode=None):
  """`operand` with `func` applied at the scattered positions (once per occurrence of a
  duplicated index)."""
  if not isinstance(dimension_numbers, ScatterDimensionNumbers):
    raise TypeError("scatter dimension_numbers must be a lax.ScatterDimensionNumbers, got "
                    f"{type(dimension_numbers).__name__}")
  aval = core.get_aval(operand)
  unused = np.zeros(_shape_tuple(update_shape, "update_shape"), aval.dtype)
  jaxpr, _ = core.trace_to_jaxpr(lambda x, _: ([func(x)], None),
                                 [ShapedArray((), aval.dtype, aval.weak_type)] * 2)
  if any(isinstance(c, core.Tracer) for c in jaxpr.consts):
    raise TypeError("scatter_apply: func closes over a traced value; it must be a unary "
                    "function of the element alone (apply other traced values with jnp "
                    "operations on the result instead).")
  return scatter_p.bind(operand, scatter_indices, unused, update_jaxpr=jaxpr,
                        update_consts=(), dimension_numbers=_tuple_fields(dimension_numbers),
                        indices_are_sorted=bool(indices_are_sorted),
                        unique_indices=bool(unique_indices),
                        mode=GatherScatterMode.from_any(mode))


# Gathers and overwriting scatters (accumulating scatters round in index order): the NumPy
# reference computes the compiled bits, so eager calls may switch to compiled code at any
# time (core/primitive.py's `reference_exact`)
for _p in (gather_p, scatter_p):
  _p.reference_exact = True

"""Dynamic slicing primitives: dynamic_slice and dynamic_update_slice, with the `ember.lax`
functions that bind them (dynamic_slice, dynamic_update_slice, the *_in_dim forms and
dynamic_index_in_dim / dynamic_update_index_in_dim).

Each primitive is declared once with all its rules beside it: shape/dtype rule, NumPy
reference implementation (XLA's semantics, clamped starts: reference/indexing.py's),
lowering, batching, jvp and transpose. The two are a unit: each is the other's transpose,
and both take one scalar start index per operand dimension (checked and normalized by the
shared helpers below). Their batching rules batch them as a gather / scatter of one window,
so this module builds on primitives/indexing.py (gather and the scatter family).
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.primitives import declare, eager_jit
from ember._src.primitives import elementwise as ew
from ember._src.primitives import structural
from ember._src.primitives.indexing import (_gather_batch, _is_int, _scatter_batch_for,
                                            _shape_tuple, scatter_p)
from ember._src.reference import indexing as reference_indexing
from ember._src.reference.indexing import (GatherDimensionNumbers, GatherScatterMode,
                                           ScatterDimensionNumbers)
from ember._src.transforms import ad, batching

__all__ = [
    "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim",
]


# --- start indices: one scalar per operand dimension ------------------------------------

def _check_index_dtypes(op, start_avals):
  if any(a.dtype != start_avals[0].dtype or not _is_int(a) for a in start_avals):
    raise TypeError(f"index arguments to {op} must be integers of the same type, got: "
                    f"{', '.join(a.dtype.name for a in start_avals)}. (Tip: convert them "
                    "to one integer dtype with lax.convert_element_type.)")
  if any(a.ndim != 0 for a in start_avals):
    raise TypeError(f"start_indices arguments to {op} must be scalars, got indices of "
                    f"shapes {[a.shape for a in start_avals]}")


def _batch_dynamic_slice_indices(indices, dims):
  """The scalar start indices of dynamic_slice / dynamic_update_slice as one index
  vector (unbatched: shape (n,)) or a batch of them (shape (size, n), batch dim 0)."""
  if not indices:
    return np.array([], np.int32), None
  size = next((batching.shape_of(x)[d] for x, d in zip(indices, dims) if d is not None),
              None)
  if size is None:
    return structural.concatenate([structural.broadcast(i, (1,)) for i in indices], 0), None
  columns = [structural.broadcast_in_dim(x, (size, 1), (0,) if d is not None else ())
             for x, d in zip(indices, dims)]
  return structural.concatenate(columns, 1), 0


def _is_static_int(i) -> bool:
  return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _normalize_starts(operand_shape, start_indices, allow_negative_indices, op):
  """Negative start indices count from the end (as JAX's `_dynamic_slice_indices`):
  static ones are fixed here, traced ones with a `select_n`."""
  if not isinstance(start_indices, (list, tuple)):
    shape = core.get_aval(start_indices).shape
    if len(shape) != 1:
      raise ValueError(f"Slice indices must be a 1D sequence, got {shape}")
    start_indices = [start_indices[i] for i in range(shape[0])]
  if len(start_indices) != len(operand_shape):
    raise ValueError(f"Length of slice indices must match number of operand dimensions "
                     f"({len(start_indices)} vs {operand_shape})")
  if isinstance(allow_negative_indices, bool):
    allow_negative_indices = [allow_negative_indices] * len(start_indices)
  out = []
  for i, d, neg in zip(start_indices, operand_shape, allow_negative_indices):
    if _is_static_int(i):
      if i < 0 and not neg:
        raise ValueError(f"Index {i} is out of bounds for dimension {d} if "
                         "allow_negative_indices=False")
      dt = dtypes.canonicalize_dtype(np.asarray(i).dtype) if isinstance(i, np.integer) \
          else dtypes.default_int_dtype()
      out.append(ew.convert_element_type(i + d if i < 0 else i, dt))
      continue
    aval = core.get_aval(i)
    if not dtypes.is_integer(aval.dtype):
      raise TypeError(f"{op} start indices must be integers, got an index of dtype "
                      f"{aval.dtype.name}.")
    if not neg or dtypes.is_unsigned(aval.dtype):
      out.append(i)
      continue
    out.append(ew.select_n(ew.lt(i, 0), i, ew.add(i, d)))
  return out


# --- dynamic_slice --------------------------------------------------------------------

def _dynamic_slice_abstract_eval(operand, *starts, slice_sizes):
  if len(starts) != operand.ndim:
    raise TypeError(f"dynamic_slice requires one start index per operand dimension, got "
                    f"{len(starts)} start indices for operand shape {operand.shape}.")
  if len(slice_sizes) != operand.ndim or any(
      not 0 <= n <= d for n, d in zip(slice_sizes, operand.shape)):
    raise TypeError(f"dynamic_slice slice_sizes must be non-negative and less than or "
                    f"equal to the operand shape, got slice_sizes {slice_sizes} for "
                    f"operand shape {operand.shape}.")
  if starts:
    _check_index_dtypes("dynamic_slice", starts)
  return ShapedArray(slice_sizes, operand.dtype, operand.weak_type)


dynamic_slice_p = declare("dynamic_slice", _dynamic_slice_abstract_eval,
                          reference_indexing.dynamic_slice)
dynamic_slice_p.lower = lambda ctx, x, *starts, slice_sizes: ctx.emit(  # XLA clamps starts
    "dynamic-slice", ctx.out_shape(), [x, *starts], {"sizes": tuple(slice_sizes)})


def _dynamic_slice_batch(axis_data, vals, dims, *, slice_sizes):
  """A dynamic slice is a gather of one window (clamped starts): batch it as one."""
  (operand, *starts), (od, *sds) = vals, dims
  idx = tuple(range(len(starts)))
  index, index_dim = _batch_dynamic_slice_indices(starts, sds)
  dn = GatherDimensionNumbers(offset_dims=idx, collapsed_slice_dims=(), start_index_map=idx)
  return _gather_batch(axis_data, [operand, index], [od, index_dim], dimension_numbers=dn,
                       slice_sizes=tuple(slice_sizes), unique_indices=True,
                       indices_are_sorted=True, mode=GatherScatterMode.CLIP, fill_value=None)


dynamic_slice_p.batch = _dynamic_slice_batch


# linear in the operand (start indices are integers: zero tangents); the transpose writes
# the cotangent into zeros with dynamic_update_slice

def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  operand, *starts = primals
  out = dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes)
  t = tangents[0]
  if type(t) is ad.Zero:
    return out, ad.Zero.from_value(out)
  return out, dynamic_slice_p.bind(t, *starts, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, operand, *starts, slice_sizes):
  zeros = structural.full(operand.aval.shape, 0, operand.aval.dtype)
  return [dynamic_update_slice_p.bind(zeros, ct, *starts)] + [None] * len(starts)


dynamic_slice_p.jvp = _dynamic_slice_jvp
dynamic_slice_p.transpose = _dynamic_slice_transpose


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """The window of `slice_sizes` starting at `start_indices` (which may be traced).
  Starts are clamped so the window stays inside `operand` (XLA's DynamicSlice)."""
  shape = core.get_aval(operand).shape
  starts = _normalize_starts(shape, start_indices, allow_negative_indices, "dynamic_slice")
  return dynamic_slice_p.bind(operand, *starts,
                              slice_sizes=_shape_tuple(slice_sizes, "slice_sizes"))


# --- dynamic_update_slice -------------------------------------------------------------

def _dynamic_update_slice_abstract_eval(operand, update, *starts):
  if operand.ndim != update.ndim:
    raise TypeError(f"dynamic_update_slice update must have the same rank as operand, "
                    f"got update shape {update.shape} for operand shape {operand.shape}.")
  if len(starts) != operand.ndim:
    raise TypeError(f"dynamic_update_slice start_indices must have length equal to the "
                    f"rank of operand, got {len(starts)} indices for operand shape "
                    f"{operand.shape}.")
  if any(u > d for u, d in zip(update.shape, operand.shape)):
    raise TypeError(f"dynamic_update_slice update shape must be smaller than operand "
                    f"shape, got update shape {update.shape} for operand shape "
                    f"{operand.shape}.")
  if operand.dtype != update.dtype:
    raise TypeError(f"lax.dynamic_update_slice requires arguments to have the same "
                    f"dtypes, got {operand.dtype.name}, {update.dtype.name}. (Tip: "
                    "convert the update with lax.convert_element_type.)")
  if starts:
    _check_index_dtypes("dynamic_update_slice", starts)
  weak = operand.weak_type and update.weak_type and all(s.weak_type for s in starts)
  return operand.update(weak_type=weak)


dynamic_update_slice_p = declare("dynamic_update_slice", _dynamic_update_slice_abstract_eval,
                                 reference_indexing.dynamic_update_slice)
dynamic_update_slice_p.lower = lambda ctx, x, update, *starts: ctx.emit(
    "dynamic-update-slice", x.shape, [x, update, *starts])


def _dynamic_update_slice_batch(axis_data, vals, dims):
  """A dynamic update slice is a scatter of one window (clamped starts): batch it as one."""
  (operand, update, *starts), (od, ud, *sds) = vals, dims
  nd = batching.ndim_of(update) - (ud is not None)
  idx = tuple(range(nd))
  index, index_dim = _batch_dynamic_slice_indices(starts, sds)
  dn = ScatterDimensionNumbers(update_window_dims=idx, inserted_window_dims=(),
                               scatter_dims_to_operand_dims=idx)
  return _scatter_batch_for(scatter_p)(
      axis_data, [operand, index, update], [od, index_dim, ud], dimension_numbers=dn,
      indices_are_sorted=True, unique_indices=True, mode=GatherScatterMode.CLIP,
      update_jaxpr=None, update_consts=())


dynamic_update_slice_p.batch = _dynamic_update_slice_batch


# linear in operand and update; the transpose reads the update's cotangent back with
# dynamic_slice and zeroes that window of the operand's

def _dynamic_update_slice_jvp(primals, tangents):
  operand, update, *starts = primals
  out = dynamic_update_slice_p.bind(operand, update, *starts)
  t_op, t_up = tangents[:2]
  if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
    return out, ad.Zero.from_value(out)
  return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(t_op),
                                          ad.instantiate_zeros(t_up), *starts)


def _dynamic_update_slice_transpose(ct, operand, update, *starts):
  u_aval = update.aval if ad.is_undefined_primal(update) else core.get_aval(update)
  t_op = t_up = None
  if ad.is_undefined_primal(operand):
    t_op = dynamic_update_slice_p.bind(ct, structural.full(u_aval.shape, 0, u_aval.dtype), *starts)
  if ad.is_undefined_primal(update):
    t_up = dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape)
  return [t_op, t_up] + [None] * len(starts)


dynamic_update_slice_p.jvp = _dynamic_update_slice_jvp
dynamic_update_slice_p.transpose = _dynamic_update_slice_transpose


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  """`operand` with `update` written at `start_indices` (clamped like dynamic_slice)."""
  shape = core.get_aval(operand).shape
  starts = _normalize_starts(shape, start_indices, allow_negative_indices,
                             "dynamic_update_slice")
  return dynamic_update_slice_p.bind(operand, update, *starts)


# --- the *_in_dim and index forms -----------------------------------------------------

def _zero_index_like(i):
  """A static 0 with the dtype of index `i` (the start of the untouched dimensions)."""
  if isinstance(i, int):
    return 0
  return np.zeros((), core.get_aval(i).dtype)[()]


def dynamic_slice_in_dim(operand, start_index, slice_size: int, axis: int = 0, *,
                         allow_negative_indices=True):
  """`operand[..., start_index:start_index + slice_size]` along `axis`, dynamically."""
  shape = core.get_aval(operand).shape
  axis = int(axis)
  starts = [_zero_index_like(start_index)] * len(shape)
  sizes = list(shape)
  neg = [False] * len(shape)
  starts[axis], sizes[axis], neg[axis] = start_index, int(slice_size), allow_negative_indices
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=neg)


def dynamic_update_slice_in_dim(operand, update, start_index, axis: int, *,
                                allow_negative_indices=True):
  """dynamic_update_slice with `start_index` along `axis` and 0 elsewhere."""
  ndim = core.get_aval(operand).ndim
  axis = int(axis)
  starts = [_zero_index_like(start_index)] * ndim
  neg = [False] * ndim
  starts[axis], neg[axis] = start_index, allow_negative_indices
  return dynamic_update_slice(operand, update, starts, allow_negative_indices=neg)


def _dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                          allow_negative_indices=True):
  result = dynamic_slice_in_dim(operand, index, 1, axis,
                                allow_negative_indices=allow_negative_indices)
  return result if keepdims else structural.squeeze(result, (axis,))


def _dynamic_update_index_in_dim(operand, update, index, axis, *,
                                 allow_negative_indices=True):
  axis = int(axis)
  if core.get_aval(update).ndim != core.get_aval(operand).ndim:
    update = structural.expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


@functools.cache
def _jitted(fn, name, static_argnames):
  """`fn` under ember.jit, named `name`: JAX jits these two, so their jaxprs hold one
  `jit` equation with that name."""
  fn.__name__ = fn.__qualname__ = name
  return eager_jit.jit(fn, static_argnames=static_argnames)   # (ember.jit, registered there)


def dynamic_index_in_dim(operand, index, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices=True):
  """`operand[..., index]` along `axis` with a dynamic index (kept as a size-1 dim
  when `keepdims`)."""
  fn = _jitted(_dynamic_index_in_dim, "dynamic_index_in_dim",
               ("axis", "keepdims", "allow_negative_indices"))
  return fn(operand, index, axis=int(axis), keepdims=bool(keepdims),
            allow_negative_indices=allow_negative_indices)


def dynamic_update_index_in_dim(operand, update, index, axis: int, *,
                                allow_negative_indices=True):
  """Write `update` (with or without the size-1 `axis`) at `index` along `axis`."""
  fn = _jitted(_dynamic_update_index_in_dim, "dynamic_update_index_in_dim",
               ("axis", "allow_negative_indices"))
  return fn(operand, update, index, axis=int(axis),
            allow_negative_indices=allow_negative_indices)


# Data movement: the NumPy reference computes the compiled bits, so eager calls may switch
# to compiled code at any time (core/primitive.py's `reference_exact`)
for _p in (dynamic_slice_p, dynamic_update_slice_p):
  _p.reference_exact = True

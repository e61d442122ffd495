"""Indexing with XLA's semantics: dynamic_slice, dynamic_update_slice, gather, and the
windows a scatter writes; with the parameter types they take (lax's dimension numbers and
out-of-bounds modes). The indexing primitives' impls and hlo_eval's `dynamic-slice`,
`dynamic-update-slice`, `gather` and `scatter` share them.

- dynamic_slice / dynamic_update_slice clamp each start index into
  [0, operand_dim - slice_size], so the window always lies inside the operand.
- gather takes, for every index vector of `start_indices` (the last dimension is the
  index vector), a window of `slice_sizes` starting at that position. Out-of-bounds
  windows are clamped (CLIP, PROMISE_IN_BOUNDS) or replaced by `fill_value`
  (FILL_OR_DROP).
- a scatter's out-of-bounds windows are dropped whole (FILL_OR_DROP, PROMISE_IN_BOUNDS)
  or clamped (CLIP).
"""
from __future__ import annotations

import enum
from typing import NamedTuple, Sequence

import numpy as np

from ember._src.base import dtypes


# --- parameter types ------------------------------------------------------------------

class GatherScatterMode(enum.Enum):
  """How gather and scatter treat out-of-bounds indices (jax.lax.GatherScatterMode).

  CLIP: indices are clamped so the whole window is in bounds.
  FILL_OR_DROP: a gathered window that is partly out of bounds is filled with
    `fill_value`; a scattered window that is partly out of bounds is dropped.
  PROMISE_IN_BOUNDS: the caller promises in-bounds indices; in practice gathers clamp
    and scatters drop, as XLA does.
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()
  ONE_HOT = enum.auto()

  @staticmethod
  def from_any(s) -> "GatherScatterMode":
    if isinstance(s, GatherScatterMode):
      return s
    if s == "clip":
      return GatherScatterMode.CLIP
    if s is None or s == "fill" or s == "drop":
      return GatherScatterMode.FILL_OR_DROP
    if s == "promise_in_bounds":
      return GatherScatterMode.PROMISE_IN_BOUNDS
    if s == "one_hot":
      return GatherScatterMode.ONE_HOT
    raise ValueError(f'Unknown gather mode "{s}"')


class GatherDimensionNumbers(NamedTuple):
  """XLA's gather dimension numbers; the index vector dimension is always the last
  dimension of `start_indices`."""
  offset_dims: tuple[int, ...]
  collapsed_slice_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
  """XLA's scatter dimension numbers; the index vector dimension is always the last
  dimension of `scatter_indices`."""
  update_window_dims: Sequence[int]
  inserted_window_dims: Sequence[int]
  scatter_dims_to_operand_dims: Sequence[int]
  operand_batching_dims: Sequence[int] = ()
  scatter_indices_batching_dims: Sequence[int] = ()


# --- dynamic_slice, dynamic_update_slice ----------------------------------------------

def _clamped_starts(starts, shape, sizes) -> list[int]:
  """XLA's dynamic-slice rule: each start is clamped so the window stays in bounds."""
  return [int(np.clip(int(s), 0, max(d - n, 0))) for s, d, n in zip(starts, shape, sizes)]


def dynamic_slice(operand, *starts, slice_sizes):
  lo = _clamped_starts(starts, operand.shape, slice_sizes)
  return operand[tuple(slice(s, s + n) for s, n in zip(lo, slice_sizes))]


def dynamic_update_slice(operand, update, *starts):
  lo = _clamped_starts(starts, operand.shape, update.shape)
  out = operand.copy()
  out[tuple(slice(s, s + n) for s, n in zip(lo, update.shape))] = update
  return out


# --- window arithmetic shared by gather and scatter -----------------------------------

def _window_starts(indices, operand_shape, index_map, operand_batching_dims,
                   indices_batching_dims, window_sizes):
  """For each index vector (flattened batch position b): the operand position where its
  window starts, clamped into bounds, and whether the unclamped window was in bounds.

  Returns (starts: int64[nb, operand_rank], in_bounds: bool[nb]).
  """
  batch_shape = indices.shape[:-1]
  nb = int(np.prod(batch_shape, dtype=np.int64))
  idx = indices.reshape(nb, indices.shape[-1])
  if idx.dtype == np.uint64:  # keep huge unsigned indices out of bounds, not negative
    idx = np.minimum(idx, np.iinfo(np.int64).max)
  idx = idx.astype(np.int64)
  starts = np.zeros((nb, len(operand_shape)), np.int64)
  index_map = list(index_map)
  starts[:, index_map] = idx
  if operand_batching_dims:  # batching dims: the window sits at the index's own position
    coords = np.indices(batch_shape).reshape(len(batch_shape), nb)
    for od, idim in zip(operand_batching_dims, indices_batching_dims):
      starts[:, od] = coords[idim]
  upper = np.asarray(operand_shape, np.int64) - np.asarray(window_sizes, np.int64)
  mapped = starts[:, index_map]
  in_bounds = np.all((mapped >= 0) & (mapped <= upper[index_map]), axis=1)
  return np.clip(starts, 0, np.maximum(upper, 0)), in_bounds


def _window_positions(starts, window_sizes):
  """Index arrays (one per operand dim) of shape (nb, *window_sizes) addressing each
  window element: start + offset."""
  nb, rank = starts.shape
  offsets = np.indices(window_sizes, sparse=True) if rank else []
  pos = tuple(starts[:, d].reshape((nb,) + (1,) * rank) + offsets[d][None]
              for d in range(rank))
  full = (nb,) + tuple(window_sizes)
  return tuple(np.broadcast_to(p, full) for p in pos)


# --- gather ---------------------------------------------------------------------------

def gather_shape(indices_shape, dnums, slice_sizes) -> tuple:
  dropped = set(dnums.collapsed_slice_dims) | set(dnums.operand_batching_dims)
  window = iter(s for i, s in enumerate(slice_sizes) if i not in dropped)
  batch = iter(indices_shape[:-1])
  rank = len(dnums.offset_dims) + len(indices_shape) - 1
  return tuple(next(window) if i in dnums.offset_dims else next(batch) for i in range(rank))


def default_fill_value(dtype):
  """JAX's out-of-bounds fill for gathers: NaN for inexact types, the most negative
  value for signed, the largest for unsigned integers, True for bool."""
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtype == np.bool_:
    return True
  return (np.iinfo(dtype).max if dtypes.is_unsigned(dtype) else np.iinfo(dtype).min)


def gather(operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
           indices_are_sorted, mode, fill_value):
  dn = dimension_numbers
  out_shape = gather_shape(indices.shape, dn, slice_sizes)
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  window_shape = tuple(s for i, s in enumerate(slice_sizes) if i not in dropped)
  batch_shape = indices.shape[:-1]
  if 0 in out_shape or any(slice_sizes[d] == 0 for d in dropped):
    return np.zeros(out_shape, operand.dtype)
  starts, in_bounds = _window_starts(indices, operand.shape, dn.start_index_map,
                                     dn.operand_batching_dims,
                                     dn.start_indices_batching_dims, slice_sizes)
  pos = _window_positions(starts, slice_sizes)
  win = operand[pos] if pos else np.broadcast_to(operand, (len(starts),))  # (nb, *slice_sizes)
  win = win.reshape((len(starts),) + window_shape)
  if GatherScatterMode.from_any(mode) == GatherScatterMode.FILL_OR_DROP:
    fill = default_fill_value(operand.dtype) if fill_value is None else fill_value
    win = win.copy()
    win[~in_bounds] = np.asarray(fill).astype(operand.dtype)
  win = win.reshape(batch_shape + window_shape)
  # window dims go to offset_dims, batch dims fill the other output positions in order
  nbatch, batch_iter = len(batch_shape), iter(range(len(batch_shape)))
  perm = [nbatch + dn.offset_dims.index(i) if i in dn.offset_dims else next(batch_iter)
          for i in range(len(out_shape))]
  return win.transpose(perm)


# --- scatter --------------------------------------------------------------------------

def scatter_windows(operand_shape, indices, updates, dn, mode):
  """The flat operand positions and values of every in-bounds scattered element, in
  update order."""
  uw = list(dn.update_window_dims)
  scatter_dims = [d for d in range(updates.ndim) if d not in uw]
  inserted = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  win_iter = iter(updates.shape[d] for d in uw)
  window_sizes = tuple(1 if i in inserted else next(win_iter) for i in range(len(operand_shape)))
  nb = int(np.prod(indices.shape[:-1], dtype=np.int64))
  vals = updates.transpose(scatter_dims + uw).reshape((nb,) + window_sizes)
  starts, in_bounds = _window_starts(indices, operand_shape, dn.scatter_dims_to_operand_dims,
                                     dn.operand_batching_dims,
                                     dn.scatter_indices_batching_dims, window_sizes)
  if GatherScatterMode.from_any(mode) != GatherScatterMode.CLIP:
    starts, vals = starts[in_bounds], vals[in_bounds]   # out-of-bounds windows are dropped
  pos = _window_positions(starts, window_sizes)
  if not pos:   # 0-d operand: every window is its single element
    return np.zeros(vals.size, np.intp), vals.reshape(-1)
  return np.ravel_multi_index(tuple(p.reshape(-1) for p in pos), operand_shape), vals.reshape(-1)

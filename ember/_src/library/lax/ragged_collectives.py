"""`lax.ragged_all_to_all`: the all-to-all of ragged slices along a mapped axis, written with
ember's collectives (all_gather of the operands, all_to_all of the offsets and sizes, as
JAX's docstring defines it) and a masked gather per received slice. Differentiable through
those collectives."""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.library.lax import api as lax

__all__ = ["ragged_all_to_all"]


def _check(name, x, dtype_kinds="iu"):
  aval = core.get_aval(x)
  if aval.ndim != 1 or aval.dtype.kind not in dtype_kinds:
    raise TypeError(f"ragged_all_to_all: {name} must be a 1-d integer array, got "
                    f"{aval.str_short()}")
  return aval.shape[0]


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):
  """`output` with the slices the other indices of `axis_name` send written into it: sender
  s sends operand[input_offsets[i]:+send_sizes[i]] to index i // (K / axis size), which
  writes it at the sender's output_offsets[i] (recv_sizes[i] rows)."""
  lens = {_check(n, v) for n, v in (("input_offsets", input_offsets),
                                    ("send_sizes", send_sizes),
                                    ("output_offsets", output_offsets),
                                    ("recv_sizes", recv_sizes))}
  if len(lens) != 1:
    raise ValueError("ragged_all_to_all: input_offsets, send_sizes, output_offsets and "
                     "recv_sizes must have the same length")
  k = lens.pop()
  op_aval, out_aval = core.get_aval(operand), core.get_aval(output)
  if op_aval.dtype != out_aval.dtype or op_aval.shape[1:] != out_aval.shape[1:]:
    raise TypeError(f"ragged_all_to_all: operand {op_aval.str_short()} and output "
                    f"{out_aval.str_short()} must have the same dtype and trailing shape")
  size = lax.psum(1, axis_name) if axis_index_groups is None else len(axis_index_groups[0])
  if k % size:
    raise ValueError(f"ragged_all_to_all: the offsets' length {k} must be divisible by the "
                     f"axis size {size}")
  per_device = k // size
  kw = dict(axis_index_groups=axis_index_groups)
  senders = lax.all_gather(operand, axis_name, **kw)                  # [P, N, ...]
  # entry j * per_device + t: what sender j sends to this index (its entry r * per + t)
  in_offs = lax.all_to_all(input_offsets, axis_name, 0, 0, tiled=True, **kw)
  out_offs = lax.all_to_all(output_offsets, axis_name, 0, 0, tiled=True, **kw)
  rows = out_aval.shape[0]
  n = op_aval.shape[0]
  dt = core.get_aval(in_offs).dtype
  row = lax.iota(dt, rows)
  result = output
  trailing = out_aval.shape[1:]
  for i in range(k):
    start = lax.dynamic_index_in_dim(out_offs, i, keepdims=False)
    count = lax.dynamic_index_in_dim(recv_sizes, i, keepdims=False).astype(dt)
    src0 = lax.dynamic_index_in_dim(in_offs, i, keepdims=False)
    inside = lax.bitwise_and(lax.le(start, row), lax.lt(row, lax.add(start, count)))
    src = lax.clamp(np.array(0, dt), lax.add(src0, lax.sub(row, start)), np.array(n - 1, dt))
    data = lax.index_in_dim(senders, i // per_device, keepdims=False)  # [N, ...]
    rows_from = _take_rows(data, src)
    mask = lax.broadcast_in_dim(inside, (rows,) + trailing, (0,))
    result = lax.select(mask, rows_from, result)
  return result


def _take_rows(data, idx):
  """data[idx] along the leading axis (idx in range)."""
  shape = core.get_aval(data).shape
  dnums = lax.GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape))),
                                     collapsed_slice_dims=(0,), start_index_map=(0,))
  return lax.gather(data, lax.expand_dims(idx, (1,)), dnums, (1,) + shape[1:])

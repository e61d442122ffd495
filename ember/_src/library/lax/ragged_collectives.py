"""`lax.ragged_all_to_all` and its primitive `ragged_all_to_all_p` (JAX's): the all-to-all
of ragged slices along a mapped axis. The primitive's rules are a composite written with
ember's collectives (all_gather of the operands, all_to_all of the offsets and sizes, as
JAX's docstring defines it) and a masked gather per received slice: its lowering and
evaluation run the composite, its batching rule vmaps it (binding the axis name where the
vmap is over the named axis), and its derivative is the composite's (differentiable through
those collectives)."""
from __future__ import annotations

import functools

import numpy as np

from ember._src import core
from ember._src import lower as lowering
from ember._src.core import ShapedArray
from ember._src.library.lax import api as lax
from ember._src.primitives import declare
from ember._src.transforms import ad, batching

__all__ = ["ragged_all_to_all", "ragged_all_to_all_p"]


def _check(name, x, dtype_kinds="iu"):
  aval = x if isinstance(x, ShapedArray) else core.get_aval(x)   # an aval in abstract_eval
  if aval.ndim != 1 or aval.dtype.kind not in dtype_kinds:
    raise TypeError(f"ragged_all_to_all: {name} must be a 1-d integer array, got "
                    f"{aval.str_short()}")
  return aval.shape[0]


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):
  """`output` with the slices the other indices of `axis_name` send written into it: sender
  s sends operand[input_offsets[i]:+send_sizes[i]] to index i // (K / axis size), which
  writes it at the sender's output_offsets[i] (recv_sizes[i] rows)."""
  axis_name = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
  groups = None if axis_index_groups is None else tuple(map(tuple, axis_index_groups))
  return ragged_all_to_all_p.bind(operand, output, input_offsets, send_sizes, output_offsets,
                                  recv_sizes, axis_name=axis_name, axis_index_groups=groups)


def _abstract_eval(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                   **_):
  """The output's type, after JAX's checks of the operands (lengths, dtypes, shapes)."""
  _offsets_length(input_offsets, send_sizes, output_offsets, recv_sizes)
  if operand.dtype != output.dtype or operand.shape[1:] != output.shape[1:]:
    raise TypeError(f"ragged_all_to_all: operand {operand.str_short()} and output "
                    f"{output.str_short()} must have the same dtype and trailing shape")
  return ShapedArray(output.shape, output.dtype)


def _offsets_length(*offsets_and_sizes) -> int:
  names = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")
  lens = {_check(n, v) for n, v in zip(names, offsets_and_sizes)}
  if len(lens) != 1:
    raise ValueError("ragged_all_to_all: input_offsets, send_sizes, output_offsets and "
                     "recv_sizes must have the same length")
  return lens.pop()


def _composite(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
               *, axis_name, axis_index_groups=None):
  """The primitive's value, from ember's collectives over `axis_name`."""
  k = _offsets_length(input_offsets, send_sizes, output_offsets, recv_sizes)
  op_aval, out_aval = core.get_aval(operand), core.get_aval(output)
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


def _batch(axis_data, vals, dims, *, axis_name, axis_index_groups):
  """Over another axis with unbatched operands it stays one equation; else the composite,
  vmapped (binding this vmap's axis name again, so its collectives over it find the vmap)."""
  params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups)
  if all(d is None for d in dims) and axis_data.name not in axis_name:
    return ragged_all_to_all_p.bind(*vals, **params), None
  fun = functools.partial(_composite, **params)
  return batching.vmap(fun, in_axes=tuple(dims), axis_name=axis_data.name,
                       axis_size=axis_data.size)(*vals), 0


def _jvp(primals, tangents, **params):
  """The composite's derivative (linear in operand and output; offsets and sizes are
  integers)."""
  tangents = [ad.instantiate_zeros(t) for t in tangents[:2]]
  return ad.jvp(lambda x, y: _composite(x, y, *primals[2:], **params), tuple(primals[:2]),
                tuple(tangents))


ragged_all_to_all_p = declare("ragged_all_to_all", _abstract_eval)
ragged_all_to_all_p.eval_rule = _composite   # its collectives find the mapped axis
ragged_all_to_all_p.lower = lowering.lower_fun(_composite, multiple_results=False)
ragged_all_to_all_p.batch = _batch
ragged_all_to_all_p.jvp = _jvp
ragged_all_to_all_p.named_trace = lambda trace, params: batching.named_axis_trace(
    params["axis_name"], "ragged_all_to_all", trace)


def _take_rows(data, idx):
  """data[idx] along the leading axis (idx in range)."""
  shape = core.get_aval(data).shape
  dnums = lax.GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape))),
                                     collapsed_slice_dims=(0,), start_index_map=(0,))
  return lax.gather(data, lax.expand_dims(idx, (1,)), dnums, (1,) + shape[1:])

"""BCOO's structural operations (squeeze, slice, dynamic_slice, rev, broadcast_in_dim,
concatenate, gather, conv_general_dilated; reduce_sum, update_layout and reshape are in
bcoo.py): index arithmetic on the stored elements, written with jnp ops so they trace under
jit, grad and vmap."""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.driver.jit import eval_shape, make_jaxpr
from ember._src.library.lax import api as lax
from ember._src.primitives.indexing import GatherScatterMode
from ember._src.transforms.batching import vmap
from ember._src.library.numpy import creation, logic, shape as shape_ops
from ember._src.library.sparse.bcoo import (
    BCOO, _full, _mask_data, bcoo_reshape, bcoo_sum_duplicates, bcoo_update_layout)



def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
  """Removes the size-1 `dimensions`."""
  dims = sorted({operator.index(d) % arr.ndim for d in dimensions})
  if any(arr.shape[d] != 1 for d in dims):
    raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                     f"one, got shape={arr.shape} and dimensions={tuple(dimensions)}")
  nb, ns = arr.n_batch, arr.n_sparse
  data, indices = arr.data, arr.indices
  b = tuple(d for d in dims if d < nb)
  dd = tuple(d - ns + 1 for d in dims if d >= nb + ns)
  data = lax.squeeze(data, b + dd)
  indices = lax.squeeze(indices, b)
  keep = [i for i in range(ns) if i + nb not in dims]
  indices = indices[..., np.array(keep, dtype=np.int32)] if keep else \
      creation.zeros(indices.shape[:-1] + (0,), indices.dtype)
  shape = tuple(s for i, s in enumerate(arr.shape) if i not in dims)
  return BCOO((data, indices), shape=shape)


def _remap_sparse(indices, nb, old_sizes, fn, new_sizes):
  """Applies `fn(col, k) -> (new col, keep)` to each sparse index column; elements not
  kept (and padding) become the new sentinel. Returns the indices and the kept mask."""
  cols, keep = [], None
  for k in range(indices.shape[-1]):
    col = indices[..., k]
    new, ok = fn(col, k)
    ok = ok & (col >= 0) & (col < old_sizes[k])
    keep = ok if keep is None else keep & ok
    cols.append(new)
  if keep is None:
    return indices, None
  cols = [logic.where(keep, c, s).astype(indices.dtype) for c, s in zip(cols, new_sizes)]
  return shape_ops.stack(cols, axis=-1), keep


def bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
               strides=None) -> BCOO:
  """lax.slice of a BCOO."""
  start = tuple(operator.index(s) for s in start_indices)
  limit = tuple(operator.index(s) for s in limit_indices)
  strides = (1,) * mat.ndim if strides is None else tuple(operator.index(s) for s in strides)
  if not len(start) == len(limit) == len(strides) == mat.ndim:
    raise ValueError(f"bcoo_slice: start_indices, limit_indices and strides must have "
                     f"length {mat.ndim}")
  for s, l_, n in zip(start, limit, mat.shape):
    if not 0 <= s <= l_ <= n:
      raise ValueError(f"bcoo_slice: invalid start_indices={start}, limit_indices={limit} "
                       f"for shape {mat.shape}")
  new_shape = tuple(max(0, -(-(l_ - s) // st)) for s, l_, st in zip(start, limit, strides))
  return _window(mat, start, new_shape, strides, lambda x, ax: lax.slice_in_dim(
      x, start[ax], limit[ax], strides[ax], axis=ax if ax >= 0 else x.ndim + ax))


def _window(mat, start, new_shape, strides, cut_axis):
  nb, ns = mat.n_batch, mat.n_sparse
  data, indices = _full(mat)
  for ax in range(nb):
    data, indices = cut_axis(data, ax), cut_axis(indices, ax)
  for ax in range(nb + ns, mat.ndim):
    data = cut_axis(data, ax - ns + 1)

  def move(col, k):
    off = col - start[nb + k]
    st = strides[nb + k]
    new = off // st
    return new, (off >= 0) & (off % st == 0) & (new < new_shape[nb + k])
  indices, keep = _remap_sparse(indices, nb, mat.shape[nb:nb + ns], move,
                                new_shape[nb:nb + ns])
  if keep is None:
    return BCOO((data, indices), shape=new_shape)
  data = _mask_data(data, keep)
  out = BCOO((data, indices), shape=new_shape)
  size = math.prod(new_shape[nb:nb + ns])
  # as JAX: no more stored elements than the window has places
  return bcoo_sum_duplicates(out, nse=size) if mat.nse > size else out


def bcoo_dynamic_slice(mat: BCOO, start_indices, slice_sizes: Sequence[int]) -> BCOO:
  """lax.dynamic_slice of a BCOO: starts may be traced (clamped as lax clamps them)."""
  sizes = tuple(operator.index(s) for s in slice_sizes)
  if len(start_indices) != mat.ndim or len(sizes) != mat.ndim:
    raise ValueError(f"bcoo_dynamic_slice: start_indices and slice_sizes must have length "
                     f"{mat.ndim}")
  if any(not 0 <= z <= n for z, n in zip(sizes, mat.shape)):
    raise TypeError(f"bcoo_dynamic_slice: slice_sizes {sizes} do not fit shape {mat.shape}")
  start = [creation.asarray(s).astype(np.int32) for s in start_indices]
  start = tuple(lax.clamp(0, logic.where(s < 0, s + n, s), n - z)   # negative: from the end
                for s, z, n in zip(start, sizes, mat.shape))
  return _window(mat, start, sizes, (1,) * mat.ndim, lambda x, ax: lax.dynamic_slice_in_dim(
      x, start[ax], sizes[ax], axis=ax if ax >= 0 else x.ndim + ax))


def bcoo_rev(operand: BCOO, dimensions: Sequence[int]) -> BCOO:
  """lax.rev of a BCOO."""
  dims = sorted({operator.index(d) % operand.ndim for d in dimensions})
  nb, ns = operand.n_batch, operand.n_sparse
  data, indices = _full(operand)
  bdims = [d for d in dims if d < nb]
  if bdims:
    data, indices = lax.rev(data, bdims), lax.rev(indices, bdims)
  ddims = [d - ns + 1 for d in dims if d >= nb + ns]
  if ddims:
    data = lax.rev(data, ddims)
  sizes = operand.shape[nb:nb + ns]
  flip = lambda col, k: ((sizes[k] - 1 - col, col == col) if k + nb in dims
                         else (col, col == col))
  indices, _ = _remap_sparse(indices, nb, sizes, flip, sizes)
  return BCOO((data, indices), shape=operand.shape)


def bcoo_broadcast_in_dim(mat: BCOO, *, shape: Sequence[int],
                          broadcast_dimensions: Sequence[int], sharding=None) -> BCOO:
  """lax.broadcast_in_dim of a BCOO: new leading dimensions become batch dimensions, new
  trailing ones dense dimensions; size-1 batch and dense dimensions may grow."""
  shape = tuple(operator.index(s) for s in shape)
  bdims = tuple(operator.index(d) for d in broadcast_dimensions)
  if len(bdims) != mat.ndim or any(mat.shape[i] not in (1, shape[d])
                                   for i, d in enumerate(bdims)):
    raise ValueError(f"bcoo_broadcast_in_dim: cannot broadcast {mat.shape} to {shape} with "
                     f"broadcast_dimensions={bdims}")
  nb, ns = mat.n_batch, mat.n_sparse
  sparse_out = bdims[nb:nb + ns]
  if ns and (list(sparse_out) != list(range(sparse_out[0], sparse_out[0] + ns))
             or any(mat.shape[nb + k] != shape[d] for k, d in enumerate(sparse_out))):
    raise ValueError("bcoo_broadcast_in_dim: sparse dimensions must stay adjacent and keep "
                     "their sizes")
  first = sparse_out[0] if ns else (bdims[nb] if nb < mat.ndim else len(shape))
  new_nb, new_ns = first, ns
  new_bshape = shape[:new_nb]
  dense_out = shape[new_nb + new_ns:]
  data, indices = mat.data, mat.indices
  data = lax.broadcast_in_dim(
      data, new_bshape + (mat.nse,) + dense_out,
      tuple(bdims[:nb]) + (new_nb,) + tuple(d - ns + 1 for d in bdims[nb + ns:]))
  indices = lax.broadcast_in_dim(
      indices, new_bshape + tuple(indices.shape[nb:]),
      tuple(bdims[:nb]) + (new_nb, new_nb + 1))
  return BCOO((data, indices), shape=shape)


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
  """lax.concatenate of BCOOs of one layout: along a batch dimension the buffers join,
  along a sparse or dense one the stored elements do (offset into place)."""
  ops = list(operands)
  if not ops:
    raise ValueError("bcoo_concatenate: need at least one operand")
  if any(not isinstance(o, BCOO) for o in ops):
    raise TypeError("bcoo_concatenate: operands must be BCOO arrays")
  first = ops[0]
  dim = operator.index(dimension) % first.ndim
  if any((o.n_batch, o.n_dense, o.ndim) != (first.n_batch, first.n_dense, first.ndim)
         or any(a != b for i, (a, b) in enumerate(zip(o.shape, first.shape)) if i != dim)
         for o in ops):
    raise ValueError("bcoo_concatenate: operands must have one layout and equal shapes "
                     "outside `dimension`")
  nb, ns = first.n_batch, first.n_sparse
  total = sum(o.shape[dim] for o in ops)
  shape = first.shape[:dim] + (total,) + first.shape[dim + 1:]
  bufs = [_full(o) for o in ops]
  if dim < nb:
    data = shape_ops.concatenate([b[0] for b in bufs], axis=dim)
    indices = shape_ops.concatenate([b[1] for b in bufs], axis=dim)
    return BCOO((data, indices), shape=shape)
  datas, idxs, offset = [], [], 0
  for o, (d, i) in zip(ops, bufs):
    if dim < nb + ns:
      k = dim - nb
      sizes = o.shape[nb:nb + ns]
      out_sizes = shape[nb:nb + ns]
      i, _ = _remap_sparse(i, nb, sizes, lambda col, j, k=k, off=offset: (
          col + off if j == k else col, col == col), out_sizes)
    else:
      ax = dim - ns + 1
      pad = [(0, 0, 0)] * d.ndim
      pad[ax] = (offset, total - offset - o.shape[dim], 0)
      d = lax.pad(d, creation.zeros((), d.dtype), pad)
    datas.append(d.astype(np.result_type(*(x.dtype for x in ops))))
    idxs.append(i)
    offset += o.shape[dim]
  return BCOO((shape_ops.concatenate(datas, axis=nb), shape_ops.concatenate(idxs, axis=nb)),
              shape=shape)


def bcoo_gather(operand: BCOO, start_indices, dimension_numbers, slice_sizes, *,
                unique_indices=False, indices_are_sorted=False, mode=None,
                fill_value=None) -> BCOO:
  """lax.gather of a BCOO: one bcoo_dynamic_slice per start index (vmapped; the gathered
  axis becomes a batch axis), then the gather's dimension order. Only the default mode
  (promise_in_bounds), as JAX."""
  parsed = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
                                      else mode)
  if parsed != GatherScatterMode.PROMISE_IN_BOUNDS:
    raise NotImplementedError(f"bcoo_gather: mode={mode} not yet supported.")
  start_indices = creation.asarray(start_indices)
  slice_sizes = tuple(operator.index(s) for s in slice_sizes)
  out_aval = eval_shape(lambda x, i: lax.gather(
      x, i, dimension_numbers, slice_sizes, unique_indices=unique_indices,
      indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill_value),
      ShapeDtypeStruct(operand.shape, operand.dtype),
      ShapeDtypeStruct(start_indices.shape, start_indices.dtype))
  offset_dims = tuple(dimension_numbers.offset_dims)
  collapsed = tuple(dimension_numbers.collapsed_slice_dims)
  starts = [creation.zeros((), start_indices.dtype)] * operand.ndim
  in_axes = [None] * operand.ndim
  sizes = list(operand.shape)
  for i, j in enumerate(dimension_numbers.start_index_map):
    starts[j] = start_indices[..., i].ravel()
    sizes[j] = slice_sizes[j]
    in_axes[j] = 0

  def one(idx):
    part = bcoo_squeeze(bcoo_dynamic_slice(operand, idx, sizes), dimensions=collapsed)
    return part.data, part.indices
  inner = tuple(s for d, s in enumerate(sizes) if d not in collapsed)
  n = math.prod(start_indices.shape[:-1])
  data, indices = vmap(one, in_axes=(in_axes,))(starts)
  result = BCOO((data, indices), shape=(n,) + inner)
  result = bcoo_reshape(result, new_sizes=tuple(start_indices.shape[:-1]) + inner)
  if result.ndim:
    batch_dims = tuple(d for d in range(len(out_aval.shape)) if d not in offset_dims)
    perm = np.zeros(result.ndim, dtype=int)
    perm[np.array(batch_dims + offset_dims, dtype=int)] = np.arange(result.ndim)
    if set(perm[:len(batch_dims)]) != set(range(len(batch_dims))):
      result = bcoo_update_layout(result, n_batch=0, on_inefficient=None)
    result = result.transpose(tuple(int(p) for p in perm))
  return result.reshape(tuple(out_aval.shape)).astype(out_aval.dtype)


def bcoo_conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation=None,
                              rhs_dilation=None, dimension_numbers=None,
                              feature_group_count=1, batch_group_count=1, precision=None,
                              preferred_element_type=None, out_sharding=None) -> BCOO:
  """lax.conv_general_dilated with sparse operands, in JAX's scope: one spatial dimension,
  unit strides and dilations, leading dimensions (1, 1). Every pair of stored elements
  contributes at (lhs index + low padding - rhs index)."""
  conv = lambda a, b: lax.conv_general_dilated(
      a, b, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
      feature_group_count=feature_group_count, batch_group_count=batch_group_count,
      precision=precision, preferred_element_type=preferred_element_type)
  closed = make_jaxpr(conv)(ShapeDtypeStruct(lhs.shape, lhs.dtype),
                            ShapeDtypeStruct(rhs.shape, rhs.dtype))
  params = getattr(closed, "jaxpr", closed).eqns[-1].params
  ones = (1,) * (lhs.ndim - 2)
  if params["lhs_dilation"] != ones or params["rhs_dilation"] != ones:
    raise NotImplementedError("bcoo convolution with lhs_dilation or rhs_dilation.")
  if params["window_strides"] != ones:
    raise NotImplementedError("bcoo convolution with non-unit window_strides.")
  if params["batch_group_count"] != 1 or params["feature_group_count"] != 1:
    raise NotImplementedError("bcoo convolution with non-unit group counts.")
  if tuple(lhs.shape[:2]) != (1, 1) or tuple(rhs.shape[:2]) != (1, 1) or lhs.ndim != 3:
    raise NotImplementedError("bcoo convolution with leading dimensions other than (1, 1) "
                              "or more than one spatial dimension")
  index_dtype = next((m.indices.dtype for m in (lhs, rhs) if isinstance(m, BCOO)), np.int32)
  (low, high), = params["padding"]
  (ld, li), (rd, ri) = _as_1d(lhs, index_dtype), _as_1d(rhs, index_dtype)
  dtype = np.result_type(ld.dtype, rd.dtype)
  data = (ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :]).ravel()
  pos = (li[:, None] + (low - ri)[None, :]).ravel()
  data = logic.where(pos < 0, 0, data)
  pos = logic.where(pos < 0, 0, pos)
  size = max(0, lhs.shape[2] + low + high - rhs.shape[2] + 1)
  return BCOO((data.reshape(1, 1, -1), pos.reshape(1, 1, -1, 1)), shape=(1, 1, size))


def _as_1d(mat, index_dtype):
  """(data, index) of the stored elements of a (1, 1, n) operand, sparse or dense."""
  if isinstance(mat, BCOO):
    mat = bcoo_update_layout(mat, n_batch=2, n_dense=0, on_inefficient=None)
    data, idx = mat.data[0, 0], mat.indices[0, 0, :, 0]
    return logic.where(idx < mat.shape[-1], data, 0), idx.astype(index_dtype)
  mat = creation.asarray(mat)
  return mat[0, 0], creation.arange(mat.shape[-1], dtype=index_dtype)

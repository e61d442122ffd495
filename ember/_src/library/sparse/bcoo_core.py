"""The BCOO primitives: each a composition of lax/jnp ops (scatter-adds, gathers, sorts)
written for one batch element and vmapped over the batch dimensions, declared with
`composite_primitive` so jit, grad and vmap see one operation.

A BCOO array of shape `batch + sparse + dense` stores `data` (batch + (nse,) + dense) and
`indices` (batch + (nse, n_sparse)); a batch axis of size 1 in either stands for all. An
index equal to its dimension's size (the sentinel JAX pads with) or otherwise out of bounds
marks padding: todense drops it, extract reads 0 there.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src.library.lax import api as lax
from ember._src.library.numpy import (creation, logic, reductions, scalar_types,
                                      shape as shape_ops, sorting)
from ember._src.library.sparse.util import (
    SparseInfo, broadcast_batch, composite_primitive, linear_index, nfold_vmap,
    unravel_index)


def layout(data, indices, shape):
  """(n_batch, n_sparse, n_dense, nse) of the buffers, checked against `shape`."""
  n_batch = indices.ndim - 2
  if n_batch < 0:
    raise ValueError(f"BCOO: indices must have ndim >= 2, got shape {tuple(indices.shape)}")
  n_sparse, nse = indices.shape[-1], indices.shape[-2]
  n_dense = len(shape) - n_batch - n_sparse
  if n_dense < 0 or data.ndim != n_batch + 1 + n_dense:
    raise ValueError(f"BCOO: data of shape {tuple(data.shape)} and indices of shape "
                     f"{tuple(indices.shape)} do not describe an array of shape {shape}")
  for ax in range(n_batch):
    if {data.shape[ax], indices.shape[ax]} - {1, shape[ax]}:
      raise ValueError(f"BCOO: batch dimension {ax} of data {tuple(data.shape)} / indices "
                       f"{tuple(indices.shape)} does not match shape {shape}")
  if data.shape[n_batch] != nse or tuple(data.shape[n_batch + 1:]) != tuple(shape[len(shape)
                                                                              - n_dense:]):
    raise ValueError(f"BCOO: data of shape {tuple(data.shape)} does not match indices of "
                     f"shape {tuple(indices.shape)} for an array of shape {shape}")
  return n_batch, n_sparse, n_dense, nse


def _full_batch(data, indices, shape):
  n_batch = indices.ndim - 2
  return (broadcast_batch(data, shape[:n_batch], n_batch),
          broadcast_batch(indices, shape[:n_batch], n_batch))


def _first_occurrences(lin):
  """True where `lin[j]` differs from every earlier entry (a stable sort groups equals)."""
  perm = sorting.argsort(lin, stable=True)
  ordered = lin[perm]
  first = shape_ops.concatenate([creation.ones((1,), bool), ordered[1:] != ordered[:-1]])
  return creation.zeros(lin.shape, bool).at[perm].set(first)


def _expand_trailing(mask, ndim):
  return mask.reshape(mask.shape + (1,) * (ndim - mask.ndim))


# --- todense / fromdense / extract ----------------------------------------------------

def _todense(data, indices, *, spinfo):
  shape = spinfo.shape
  n_batch, n_sparse, _, _ = layout(data, indices, shape)
  data, indices = _full_batch(data, indices, shape)
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense_shape = shape[n_batch + n_sparse:]

  def one(d, i):
    if not n_sparse:
      return reductions.sum(d, axis=0, dtype=d.dtype)
    flat = creation.zeros((math.prod(sparse_shape),) + dense_shape, d.dtype)
    flat = flat.at[linear_index(i, sparse_shape)].add(d, mode="drop")
    return flat.reshape(sparse_shape + dense_shape)
  return nfold_vmap(one, n_batch)(data, indices)


def _fromdense(mat, *, nse, n_batch, n_dense, index_dtype):
  n_sparse = mat.ndim - n_batch - n_dense
  sparse_shape = mat.shape[n_batch:n_batch + n_sparse]
  dense_shape = mat.shape[mat.ndim - n_dense:]
  size = math.prod(sparse_shape)

  def one(m):
    mask = m != 0
    if n_dense:
      mask = reductions.any(mask, axis=tuple(range(n_sparse, m.ndim)))
    # nonzero positions in row-major order, padded with the sentinel `size`
    key = sorting.sort(logic.where(mask.reshape(size), creation.arange(size), size))
    if nse <= size:
      key = key[:nse]
    else:
      key = shape_ops.concatenate([key, creation.full((nse - size,), size, key.dtype)])
    data = m.reshape((size,) + dense_shape).at[key].get(mode="fill", fill_value=0)
    return data, unravel_index(key, sparse_shape, index_dtype)
  return nfold_vmap(one, n_batch)(mat)


def _extract(indices, arr, *, assume_unique):
  n_batch, n_sparse = indices.ndim - 2, indices.shape[-1]
  indices = broadcast_batch(indices, arr.shape[:n_batch], n_batch)
  sparse_shape = arr.shape[n_batch:n_batch + n_sparse]
  dense_shape = arr.shape[n_batch + n_sparse:]

  def one(i, a):
    lin = linear_index(i, sparse_shape)
    vals = a.reshape((math.prod(sparse_shape),) + dense_shape)
    vals = vals.at[lin].get(mode="fill", fill_value=0)
    if not assume_unique:   # a duplicated index keeps the value at its first occurrence
      vals = logic.where(_expand_trailing(_first_occurrences(lin), vals.ndim), vals, 0)
    return vals
  return nfold_vmap(one, n_batch)(indices, arr)


bcoo_todense_p = composite_primitive("bcoo_todense", _todense, multiple_results=False)
bcoo_fromdense_p = composite_primitive("bcoo_fromdense", _fromdense, multiple_results=True)
bcoo_extract_p = composite_primitive("bcoo_extract", _extract, multiple_results=False)


# --- transpose / sort_indices / sum_duplicates ----------------------------------------

def _transpose(data, indices, *, permutation, spinfo):
  n_batch, n_sparse, n_dense, _ = layout(data, indices, spinfo.shape)
  batch_perm = permutation[:n_batch]
  sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
  dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
  data = data.transpose(*batch_perm, n_batch, *(n_batch + 1 + p for p in dense_perm))
  indices = indices.transpose(*batch_perm, n_batch, n_batch + 1)
  if n_sparse:
    indices = indices[..., np.array(sparse_perm, dtype=np.int32)]
  return data, indices


def _sort_indices(data, indices, *, spinfo):
  n_batch, n_sparse, _, nse = layout(data, indices, spinfo.shape)
  if not n_sparse:
    return data, indices
  data, indices = _full_batch(data, indices, spinfo.shape)

  def one(d, i):
    cols = [i[:, k] for k in range(n_sparse)]
    *cols, perm = lax.sort((*cols, lax.iota(np.int32, nse)), num_keys=n_sparse)
    return d[perm], shape_ops.stack(cols, axis=-1)
  return nfold_vmap(one, n_batch)(data, indices)


def _sum_duplicates(data, indices, *, spinfo, nse):
  shape = spinfo.shape
  n_batch, n_sparse, _, _ = layout(data, indices, shape)
  data, indices = _full_batch(data, indices, shape)
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  size = math.prod(sparse_shape)

  def one(d, i):
    lin = linear_index(i, sparse_shape)
    perm = sorting.argsort(lin, stable=True)
    ordered = lin[perm]
    starts = shape_ops.concatenate([creation.ones((1,), bool), ordered[1:] != ordered[:-1]])
    run = reductions.cumsum(starts.astype(np.int32)) - 1
    # padding lands in the sentinel's slot, if there is one (as in JAX)
    slot = creation.zeros(lin.shape, np.int32).at[perm].set(run)
    unique = creation.full((nse,), size, lin.dtype).at[run].set(ordered, mode="drop")
    out = creation.zeros((nse,) + d.shape[1:], d.dtype).at[slot].add(d, mode="drop")
    return out, unravel_index(unique, sparse_shape, i.dtype)
  return nfold_vmap(one, n_batch)(data, indices)


def count_unique(indices, spinfo) -> int:
  """The largest number of distinct in-bounds indices over the batches (eager)."""
  n_batch, n_sparse = indices.ndim - 2, indices.shape[-1]
  if not n_sparse:
    return 1
  sparse_shape = spinfo.shape[n_batch:n_batch + n_sparse]
  lin = linear_index(indices, sparse_shape)
  if lin.shape[-1] == 0:
    return 0

  def one(v):
    return reductions.sum(_first_occurrences(v) & (v < math.prod(sparse_shape)))
  return int(reductions.max(nfold_vmap(one, n_batch)(lin), initial=0))


bcoo_transpose_p = composite_primitive("bcoo_transpose", _transpose, multiple_results=True)
bcoo_sort_indices_p = composite_primitive("bcoo_sort_indices", _sort_indices,
                                          multiple_results=True)
bcoo_sum_duplicates_p = composite_primitive("bcoo_sum_duplicates", _sum_duplicates,
                                            multiple_results=True)


# --- dot_general ----------------------------------------------------------------------

def dot_out_dtype(a, b, preferred_element_type):
  if preferred_element_type is not None:
    return np.dtype(preferred_element_type)
  return scalar_types.result_type(a, b)


def _dot_general(lhs_data, lhs_indices, rhs, *, dimension_numbers, preferred_element_type,
                 lhs_spinfo):
  """sparse @ dense: rhs rows gathered at the stored indices of the contracted sparse
  dimensions, multiplied by the data, scatter-added to the free sparse dimensions."""
  shape = lhs_spinfo.shape
  n_batch, n_sparse, n_dense, _ = layout(lhs_data, lhs_indices, shape)
  (lc, rc), (lb, rb) = dimension_numbers
  check_dot_dims(shape, rhs.shape, dimension_numbers, n_batch, n_sparse)
  dtype = dot_out_dtype(lhs_data, rhs, preferred_element_type)
  data, indices = _full_batch(lhs_data.astype(dtype), lhs_indices, shape)
  rhs = rhs.astype(dtype)
  pairs = dict(zip(lc, rc))
  lc_b = [d for d in lc if d < n_batch]
  free_b = [d for d in range(n_batch) if d not in lb and d not in lc_b]
  order = [*lb, *lc_b, *free_b]
  data = data.transpose(*order, *range(n_batch, data.ndim))
  indices = indices.transpose(*order, n_batch, n_batch + 1)
  mapped_r = [*rb, *(pairs[d] for d in lc_b)]
  rest_r = [d for d in range(rhs.ndim) if d not in mapped_r]
  rhs = rhs.transpose(*mapped_r, *rest_r)
  lc_s = [d - n_batch for d in lc if d >= n_batch]
  rc_s = [rest_r.index(pairs[d + n_batch]) for d in lc_s]
  free_s = [d for d in range(n_sparse) if d not in lc_s]
  free_r = [k for k in range(len(rest_r)) if k not in rc_s]
  sparse_shape = shape[n_batch:n_batch + n_sparse]

  def one(d, i, r):
    r = r.transpose(*rc_s, *free_r)
    r_free_shape = r.shape[len(rc_s):]
    if lc_s:
      csizes = tuple(sparse_shape[k] for k in lc_s)
      lin = linear_index(i[:, np.array(lc_s, dtype=np.int32)], csizes)
      g = r.reshape((math.prod(csizes),) + r_free_shape).at[lin].get(mode="fill",
                                                                     fill_value=0)
    else:
      g = r[None]
    prod = (d.reshape(d.shape + (1,) * len(r_free_shape))
            * g.reshape(g.shape[:1] + (1,) * n_dense + r_free_shape))
    if not free_s:
      return reductions.sum(prod, axis=0, dtype=dtype)
    fsizes = tuple(sparse_shape[k] for k in free_s)
    lin = linear_index(i[:, np.array(free_s, dtype=np.int32)], fsizes)
    out = creation.zeros((math.prod(fsizes),) + prod.shape[1:], dtype)
    return out.at[lin].add(prod, mode="drop").reshape(fsizes + prod.shape[1:])

  fun = nfold_vmap(one, len(free_b), in_axes=(0, 0, None))
  fun = nfold_vmap(fun, len(lb) + len(lc_b))
  out = fun(data, indices, rhs)
  if lc_b:
    out = reductions.sum(out, axis=tuple(range(len(lb), len(lb) + len(lc_b))), dtype=dtype)
  return out


def check_dot_dims(lhs_shape, rhs_shape, dimension_numbers, n_batch, n_sparse):
  (lc, rc), (lb, rb) = dimension_numbers
  if len(lc) != len(rc) or len(lb) != len(rb):
    raise TypeError(f"bcoo_dot_general: dimension_numbers {dimension_numbers} pair "
                    "different numbers of dimensions")
  for l_, r_ in (*zip(lc, rc), *zip(lb, rb)):
    if lhs_shape[l_] != rhs_shape[r_]:
      raise TypeError(f"bcoo_dot_general: dimension {l_} of lhs (size {lhs_shape[l_]}) and "
                      f"{r_} of rhs (size {rhs_shape[r_]}) differ; shapes {tuple(lhs_shape)} "
                      f"and {tuple(rhs_shape)}")
  if lb and max(lb) >= n_batch:
    raise NotImplementedError(
        "bcoo_dot_general batch dimensions must be among the batch dimensions in the sparse "
        f"representation.\ngot lhs_batch={lb}, n_batch={n_batch}")
  if any(d >= n_batch + n_sparse for d in lc):
    raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")


def _dot_general_sampled(A, B, indices, *, dimension_numbers):
  """The product A.B read only at `indices` (the dense product, then bcoo_extract)."""
  return _extract(indices, lax.dot_general(A, B, dimension_numbers=dimension_numbers),
                  assume_unique=True)


bcoo_dot_general_p = composite_primitive("bcoo_dot_general", _dot_general,
                                         multiple_results=False)
bcoo_dot_general_sampled_p = composite_primitive("bcoo_dot_general_sampled",
                                                 _dot_general_sampled, multiple_results=False)


# --- sparse @ sparse --------------------------------------------------------------------

def spdot_layout(lhs_data, lhs_indices, rhs_data, rhs_indices, lhs_spinfo, rhs_spinfo,
                 dimension_numbers):
  """The output's nse and batch shape (JAX's rule: every pair of stored elements)."""
  lhs = layout(lhs_data, lhs_indices, lhs_spinfo.shape)
  rhs = layout(rhs_data, rhs_indices, rhs_spinfo.shape)
  (lc, rc), (lb, rb) = dimension_numbers
  check_dot_dims(lhs_spinfo.shape, rhs_spinfo.shape, dimension_numbers, lhs[0], lhs[1])
  if lhs[2] or rhs[2]:
    raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
  if (rb and max(rb) >= rhs[0]):
    raise NotImplementedError("bcoo_spdot_general: batch_dims must correspond to batch "
                              "dimensions of the sparse representation.")
  for c, (nb, ns, _, _) in ((lc, lhs), (rc, rhs)):
    if c and (min(c) < nb or max(c) >= nb + ns):
      raise NotImplementedError("bcoo_spdot_general only supports contraction of sparse "
                                "indices.")
  if rhs[0] > len(rb) and lhs[1] > len(lc):
    raise ValueError("bcoo_spdot_general: cannot have unused batch dims on rhs with unused "
                     "sparse dims on lhs.")
  out_shape = (*(lhs_spinfo.shape[d] for d in lb),
               *(s for d, s in enumerate(lhs_spinfo.shape) if d not in lc and d not in lb),
               *(s for d, s in enumerate(rhs_spinfo.shape) if d not in rc and d not in rb))
  nse = ((lhs[3] if lhs[1] > len(lc) else 1) * (rhs[3] if rhs[1] > len(rc) else 1))
  out_n_batch = lhs[0] + rhs[0] - len(lb)
  return out_shape, min(nse, math.prod(out_shape[out_n_batch:]))


def _spdot_unbatched(ld, li, rd, ri, *, lhs_shape, rhs_shape, lc, rc, out_nse, dtype):
  sel = lambda i, dims: i[:, np.array(dims, dtype=np.int32)]
  l_c, r_c = sel(li, lc), sel(ri, rc)
  l_f = sel(li, [d for d in range(li.shape[-1]) if d not in lc])
  r_f = sel(ri, [d for d in range(ri.shape[-1]) if d not in rc])
  lsz = creation.asarray([lhs_shape[d] for d in lc], li.dtype)
  rsz = creation.asarray([rhs_shape[d] for d in rc], ri.dtype)
  match = reductions.all(l_c[:, None] == r_c[None, :], axis=-1)
  match = match & reductions.all(l_c < lsz, axis=-1)[:, None]
  match = match & reductions.all(r_c < rsz, axis=-1)[None, :]
  data = logic.where(match, ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :], 0).ravel()
  n, m = l_f.shape[0], r_f.shape[0]
  idx = shape_ops.concatenate(
      [shape_ops.broadcast_to(l_f[:, None], (n, m, l_f.shape[-1])),
       shape_ops.broadcast_to(r_f[None, :].astype(l_f.dtype), (n, m, r_f.shape[-1]))], axis=-1)
  out_shape = (*(s for d, s in enumerate(lhs_shape) if d not in lc),
               *(s for d, s in enumerate(rhs_shape) if d not in rc))
  return _sum_duplicates(data, idx.reshape(n * m, idx.shape[-1]),
                         spinfo=SparseInfo(out_shape), nse=out_nse)


def _spdot_general(lhs_data, lhs_indices, rhs_data, rhs_indices, *, lhs_spinfo, rhs_spinfo,
                   dimension_numbers, preferred_element_type):
  _, out_nse = spdot_layout(lhs_data, lhs_indices, rhs_data, rhs_indices, lhs_spinfo,
                            rhs_spinfo, dimension_numbers)
  (lc, rc), (lb, rb) = dimension_numbers
  lnb, rnb = lhs_indices.ndim - 2, rhs_indices.ndim - 2
  lhs_data, lhs_indices = _full_batch(lhs_data, lhs_indices, lhs_spinfo.shape)
  rhs_data, rhs_indices = _full_batch(rhs_data, rhs_indices, rhs_spinfo.shape)
  lperm = [*lb, *(d for d in range(lnb) if d not in lb)]
  rperm = [*rb, *(d for d in range(rnb) if d not in rb)]
  lhs_data = lhs_data.transpose(*lperm, *range(lnb, lhs_data.ndim))
  lhs_indices = lhs_indices.transpose(*lperm, lnb, lnb + 1)
  rhs_data = rhs_data.transpose(*rperm, *range(rnb, rhs_data.ndim))
  rhs_indices = rhs_indices.transpose(*rperm, rnb, rnb + 1)
  fun = lambda ld, li, rd, ri: _spdot_unbatched(
      ld, li, rd, ri, lhs_shape=lhs_spinfo.shape[lnb:], rhs_shape=rhs_spinfo.shape[rnb:],
      lc=[d - lnb for d in lc], rc=[d - rnb for d in rc], out_nse=out_nse,
      dtype=dot_out_dtype(lhs_data, rhs_data, preferred_element_type))
  fun = nfold_vmap(fun, rnb - len(rb), in_axes=(None, None, 0, 0))
  fun = nfold_vmap(fun, lnb - len(lb), in_axes=(0, 0, None, None))
  fun = nfold_vmap(fun, len(lb))
  return fun(lhs_data, lhs_indices, rhs_data, rhs_indices)


bcoo_spdot_general_p = composite_primitive("bcoo_spdot_general", _spdot_general,
                                           multiple_results=True)

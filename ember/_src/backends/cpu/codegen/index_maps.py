"""Structural ops inside a fusion as index maps: rule(em, instr, index) -> value, the
operands read at mapped indices (`ElementalEmitter.emit` dispatches on the opcode). The
leaves: parameters (the kernel's buffers), constants, iota. Broadcast drops dims, transpose
permutes, reshape linearizes and delinearizes per group of dims, slice is start + i*stride,
reverse mirrors, dynamic slices clamp their starts, pad tests the grid, gather reads its start
indices, a bitcast-convert that changes the element size splits or joins elements. Nothing is
copied: a transpose inside a fusion is an index map. Pad and dynamic-update-slice select
between cheap operands (vectorizable) but branch around expensive ones
(`ElementalEmitter.choose`), so each operand element is computed at most once, as the fusion
pass assumes.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
from llvmlite import ir

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu.codegen.ir_types import I1, bits, const_of
from ember._src.backends.cpu.codegen.scalar_ops import convert


def _param(em, instr, idx):
  return em.read_param(instr.attrs["number"], idx)


def _constant(em, instr, idx):
  value = np.asarray(instr.attrs["value"])
  if value.size == 1:
    return const_of(instr.dtype, value.reshape(()))
  g = em.global_array(instr)
  return em.load(g, em.linear(idx, instr.shape.dims), instr.dtype)


def _iota(em, instr, idx):
  i = idx[instr.attrs["iota_dimension"]]
  return convert(em, i, np.int64, instr.dtype)


def _broadcast(em, instr, idx):
  dims = instr.attrs["dimensions"]
  op = instr.operands[0]
  return em.emit(op, tuple(em.i64(0) if op.shape.dims[k] == 1 else idx[d]
                           for k, d in enumerate(dims)))


def _transpose(em, instr, idx):
  perm = instr.attrs["dimensions"]
  src = [None] * len(perm)
  for i, p in enumerate(perm):
    src[p] = idx[i]
  return em.emit(instr.operands[0], tuple(src))


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list, list]]:
  """Split a reshape into consecutive groups of source/destination dims with equal
  products (e.g. [6,4] -> [2,3,4]: ([0],[0,1]), ([1],[2])); a 1-1 group is a pass-through."""
  if 0 in src or 0 in dst:
    return [(list(range(len(src))), list(range(len(dst))))]
  groups, i, j = [], 0, 0
  while i < len(src) or j < len(dst):
    gs, gd, ps, pd = [], [], 1, 1
    if i < len(src):
      gs.append(i); ps *= src[i]; i += 1
    if j < len(dst):
      gd.append(j); pd *= dst[j]; j += 1
    while ps != pd:
      if ps < pd:
        gs.append(i); ps *= src[i]; i += 1
      else:
        gd.append(j); pd *= dst[j]; j += 1
    # absorb trailing size-1 dims into this group so every group is non-empty on one side
    groups.append((gs, gd))
  return groups


def _reshape(em, instr, idx):
  return em.emit(instr.operands[0], reshape_index(em, instr, idx))


def reshape_index(em, instr, idx) -> tuple:
  """The operand's index of a reshape's element `idx`."""
  op = instr.operands[0]
  src, dst = op.shape.dims, instr.shape.dims
  out = [None] * len(src)
  for gs, gd in reshape_groups(src, dst):
    sdims = [src[s] for s in gs]
    ddims = [dst[d] for d in gd]
    if len(gs) == 1 and len(gd) == 1:
      out[gs[0]] = idx[gd[0]]
      continue
    if not gs:
      continue
    lin = em.linear([idx[d] for d in gd], ddims) if gd else em.i64(0)
    for s, v in zip(gs, em.delinear(lin, sdims)):
      out[s] = v
  return tuple(out)


def keeps_minor_dim(reshape: hlo.Instr) -> bool:
  """Whether a reshape passes its operand's minor dim through unchanged (consecutive
  elements along it stay consecutive)."""
  src, dst = reshape.operands[0].shape.dims, reshape.shape.dims
  return bool(src) and bool(dst) and \
      reshape_groups(src, dst)[-1] == ([len(src) - 1], [len(dst) - 1])


def _reverse(em, instr, idx):
  dims = set(instr.attrs["dimensions"])
  shape = instr.shape.dims
  src = tuple(em.b.sub(em.i64(shape[d] - 1), i) if d in dims and shape[d] > 1 else i
              for d, i in enumerate(idx))
  return em.emit(instr.operands[0], src)


def _slice(em, instr, idx):
  return em.emit(instr.operands[0], slice_index(em, instr, idx))


def slice_index(em, instr, idx) -> tuple:
  """The operand's index of a slice's element `idx`."""
  a = instr.attrs
  strides = a.get("strides") or (1,) * len(idx)
  starts = em.slice_starts.get(instr.id) or [em.i64(s) for s in a["start"]]
  return tuple(em.add_idx(s, em.mul_idx(i, st)) for i, s, st in zip(idx, starts, strides))


def _contiguous_slice(instr: hlo.Instr) -> bool:
  """A slice whose consecutive elements along the minor dim are consecutive in its operand
  (stride 1 there): a vector of it is a vector load of the operand."""
  return instr.opcode == "slice" and instr.shape.rank >= 1 and \
      (instr.attrs.get("strides") or (1,) * instr.shape.rank)[-1] == 1


def _dyn_starts(em, starts, operand_dims, sizes):
  """XLA's dynamic-slice rule: each start clamped so the window stays in bounds."""
  out = []
  for s, d, n in zip(starts, operand_dims, sizes):
    v = em.to_index(em.emit(s, ()), s.dtype)
    out.append(em.clamp_idx(v, 0, max(d - n, 0)))
  return out


def _dynamic_slice(em, instr, idx):
  op = instr.operands[0]
  starts = _dyn_starts(em, instr.operands[1:], op.shape.dims, instr.attrs["sizes"])
  return em.emit(op, tuple(em.add_idx(s, i) for s, i in zip(starts, idx)))


def _dynamic_update_slice(em, instr, idx):
  b = em.b
  op, upd = instr.operands[:2]
  udims = upd.shape.dims
  starts = _dyn_starts(em, instr.operands[2:], op.shape.dims, udims)
  base = em.emit(op, idx)
  if 0 in udims:
    return base
  inside = ir.Constant(I1, 1)
  uidx = []
  for i, s, n in zip(idx, starts, udims):
    r = b.sub(i, s)
    inside = b.and_(inside, b.and_(b.icmp_signed(">=", r, em.i64(0)),
                                   b.icmp_signed("<", r, em.i64(n))))
    uidx.append(em.clamp_idx(r, 0, n - 1))
  return em.choose(inside, lambda: em.emit(upd, tuple(uidx)), lambda: base,
                   em.expensive(upd))


def _pad(em, instr, idx):
  b = em.b
  op, pad_value = instr.operands
  a = instr.attrs
  dims = op.shape.dims
  pv = em.emit(pad_value, ())
  if 0 in dims:
    return pv
  inside = ir.Constant(I1, 1)
  src = []
  for i, lo, it, n in zip(idx, a["low"], a["interior"], dims):
    t = b.sub(i, em.i64(lo)) if lo else i
    if it:
      safe = b.select(b.icmp_signed("<", t, em.i64(0)), em.i64(0), t)
      q = b.udiv(safe, em.i64(it + 1))
      on_grid = b.icmp_unsigned("==", b.urem(safe, em.i64(it + 1)), em.i64(0))
      ok = b.and_(b.and_(b.icmp_signed(">=", t, em.i64(0)), on_grid),
                  b.icmp_signed("<", q, em.i64(n)))
      src.append(em.clamp_idx(q, 0, n - 1))
    else:
      ok = b.and_(b.icmp_signed(">=", t, em.i64(0)), b.icmp_signed("<", t, em.i64(n)))
      src.append(em.clamp_idx(t, 0, n - 1))
    inside = b.and_(inside, ok)
  return em.choose(inside, lambda: em.emit(op, tuple(src)), lambda: pv, em.expensive(op))


def _gather(em, instr, idx):
  """XLA Gather: the output's batch dims index the start indices, its offset dims walk the
  slice; starts are clamped so each slice stays in bounds."""
  a = instr.attrs
  op, ind = instr.operands
  offset_dims = tuple(a["offset_dims"])
  collapsed = set(a["collapsed_slice_dims"])
  sim = tuple(a["start_index_map"])
  obd = tuple(a.get("operand_batching_dims", ()))
  sibd = tuple(a.get("start_indices_batching_dims", ()))
  ivd = a["index_vector_dim"]
  sizes = a["slice_sizes"]
  odims = op.shape.dims
  batch = [idx[d] for d in range(len(idx)) if d not in offset_dims]

  def ind_index(k):
    if ivd >= ind.shape.rank:
      return tuple(batch)
    return tuple(batch[:ivd]) + (em.i64(k),) + tuple(batch[ivd:])

  starts = [em.i64(0)] * len(odims)
  for k, od in enumerate(sim):
    v = em.to_index(em.emit(ind, ind_index(k)), ind.dtype)
    starts[od] = em.clamp_idx(v, 0, max(odims[od] - sizes[od], 0))
  for od, sd in zip(obd, sibd):
    starts[od] = batch[sd if sd < ivd else sd - 1]
  window = [d for d in range(len(odims)) if d not in collapsed and d not in obd]
  for k, od in enumerate(window):
    starts[od] = em.add_idx(starts[od], idx[offset_dims[k]])
  return em.emit(op, tuple(starts))


def _bitcast_convert_index(em, instr, idx):
  src, dst = instr.operands[0].dtype, instr.dtype
  sb, db = bits(src), bits(dst)
  if sb == db:
    return em.scalar_op(instr, [em.emit(instr.operands[0], idx)])
  b = em.b
  if sb > db:   # the output has an extra minor dim: piece k of the source (little-endian)
    u = em.to_bits(em.emit(instr.operands[0], idx[:-1]), src)
    sh = b.mul(b.trunc(idx[-1], u.type) if u.type.width < 64 else idx[-1],
               ir.Constant(u.type, db))
    piece = b.trunc(b.lshr(u, sh), ir.IntType(db))
    return em.from_bits(piece, dst)
  acc = ir.Constant(ir.IntType(db), 0)
  for k in range(db // sb):
    piece = em.to_bits(em.emit(instr.operands[0], idx + (em.i64(k),)), src)
    acc = b.or_(acc, b.shl(b.zext(piece, acc.type), ir.Constant(acc.type, k * sb)))
  return em.from_bits(acc, dst)


def _bitcast_dispatch(em, instr, idx):
  if bits(instr.operands[0].dtype) != bits(instr.dtype):
    return _bitcast_convert_index(em, instr, idx)
  return em.scalar_op(instr, [em.emit(instr.operands[0], idx)])


def _get_tuple_element(em, instr, idx):
  return em.emit(instr.operands[0], idx)[instr.attrs["index"]]


def _tuple(em, instr, idx):
  return [em.emit(o, idx) for o in instr.operands]

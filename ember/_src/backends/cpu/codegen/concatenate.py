"""Concatenate, both ways a fusion meets it. Inside a fusion (`_concatenate`, an index
rule): the value of the operand whose range holds the index, by selects when the operands are
few and cheap, else by a balanced tree of branches that computes only that operand. As a
fusion's root (`concat_regions`): no selection at all; the kernel writes each operand's region
of the output with a loop nest of its own (`ConcatNests`, a part of KernelBuilder), and
operands that differ only in where they slice share one nest run over a table of their
offsets and starts (`region_groups`).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu.codegen.abi import outer_extent
from ember._src.backends.cpu.codegen.ir_types import I64, const_of


# A concatenate inside a fusion (not its root: see concat_regions) selects among its operands
# with selects (every operand computed, then one kept: branch-free, vectorizes) only when
# they are few and each is a load or a couple of operations; otherwise with a balanced tree
# of branches that computes only the operand that holds the element (log2(N) comparisons).
CONCAT_SELECT_MAX_OPERANDS = 4
CONCAT_SELECT_MAX_OPS = 2


def _concatenate(em, instr, idx):
  """The operand whose range holds idx[d], read at its local index (clamped in the select
  form, where every operand is read at every index)."""
  d = instr.attrs["dimension"]
  b = em.b
  parts, off = [], 0
  for op in instr.operands:
    if op.shape.dims[d]:
      parts.append((op, off))
    off += op.shape.dims[d]
  if not parts:   # every operand empty along d: so is the output, never read at any index
    return const_of(instr.dtype, 0)
  lazy = len(parts) > CONCAT_SELECT_MAX_OPERANDS or any(
      em.expensive(op) or em.op_count(op) > CONCAT_SELECT_MAX_OPS for op, _ in parts)

  def value(k):   # operand k at idx, its index along d shifted (and clamped if selected)
    op, start = parts[k]
    n = op.shape.dims[d]
    local = b.sub(idx[d], em.i64(start)) if start else idx[d]
    if n < instr.shape.dims[d] and not lazy:
      local = em.clamp_idx(local, 0, n - 1)
    return em.emit(op, idx[:d] + (local,) + idx[d + 1:])

  def from_k(k):  # selects: the value for operands k.. (idx[d] >= start of operand k)
    if k == len(parts) - 1:
      return value(k)
    nxt = parts[k + 1][1]
    return em.choose(b.icmp_signed("<", idx[d], em.i64(nxt)), lambda: value(k),
                     lambda: from_k(k + 1), False)

  def between(lo, hi):   # branches: the value for operands lo..hi-1, halving the range
    if hi - lo == 1:
      return value(lo)
    mid = (lo + hi) // 2
    return em.choose(b.icmp_signed("<", idx[d], em.i64(parts[mid][1])),
                     lambda: between(lo, mid), lambda: between(mid, hi), True)
  return between(0, len(parts)) if lazy else from_k(0)


def region_groups(regions) -> list[list[tuple]]:
  """`concat_regions` grouped by program: regions whose operands compute the same thing
  (same ops, shapes, attributes, parameters) except for the start indices of their slices
  (a grid of images cut from one array) form one group, whose members are
  (operand, offset, its slices in a fixed walk order); the kernel runs one loop nest for
  the whole group (`KernelBuilder._region_table`) instead of one copy per region."""
  groups: dict = {}
  for x, offset in regions:
    key, slices = _program_key(x)
    groups.setdefault(key, []).append((x, offset, slices))
  return list(groups.values())


def _program_key(x: hlo.Instr):
  """(a structural key of the tree below `x` with slice starts left out, the slices)."""
  pos: dict[int, int] = {}
  key, slices = [], []
  stack = [(x, False)]
  while stack:                       # post-order, operands in order
    i, done = stack.pop()
    if i.id in pos:
      continue
    if not done:
      stack.append((i, True))
      stack.extend((o, False) for o in reversed(i.operands) if o.id not in pos)
      continue
    attrs = dict(i.attrs)
    if i.opcode == "slice":
      start = attrs.pop("start")   # kept: the extent (limit - start) and strides
      attrs["limit"] = tuple(l - s for l, s in zip(attrs["limit"], start))
      slices.append(i)
    pos[i.id] = len(pos)
    key.append((i.opcode, i.shape, tuple(pos[o.id] for o in i.operands),
                repr(sorted(attrs.items())), hlo.structure_key(i.called) if i.called else ()))
  return tuple(key), slices


def concat_regions(comp: hlo.Computation) -> list[tuple[hlo.Instr, tuple]] | None:
  """For a fusion whose root is a concatenate: (operand, its offset in the output) for each
  non-empty operand, nested concatenates used only by their parent (a vstack of hstacks)
  expanded into their own operands. The kernel then writes each operand's region with a
  loop nest of its own (`KernelBuilder._concat_nest`): one evaluation per element, no
  selection among operands. None when the root is not a concatenate."""
  root = comp.root
  if root.opcode != "concatenate":
    return None
  users = comp.users()
  out: list[tuple[hlo.Instr, tuple]] = []

  def expand(x, offset):
    d = x.attrs["dimension"]
    at = 0
    for op in x.operands:
      n = op.shape.dims[d]
      if n and 0 not in op.shape.dims:
        here = offset[:d] + (offset[d] + at,) + offset[d + 1:]
        if op.opcode == "concatenate" and len(users.get(op.id, [])) == 1:
          expand(op, here)
        else:
          out.append((op, here))
      at += n
  expand(root, (0,) * root.shape.rank)
  return out


class ConcatNests:
  """KernelBuilder's loop nests for a concatenate root (`concat_regions`); mixed into
  kernels.KernelBuilder, whose `_nest` they run."""

  def _concat_nest(self, em, regions, out_ptr, out: hlo.Shape, start, stop):
    """A concatenate root (`concat_regions`): one loop nest per operand over its own shape,
    writing at its offset in the output; the kernel's [start, stop) of the output's dim 0
    is clipped to each operand's rows there, so a split kernel still writes each element
    once. Operands that differ only in where they slice share one nest (`region_groups`)."""
    for group in region_groups(regions):
      if len(group) == 1:
        x, offset, _ = group[0]
        self._region(em, x, [em.i64(o) for o in offset], out_ptr, out, start, stop)
      else:
        self._region_table(em, group, out_ptr, out, start, stop)

  def _region_table(self, em, group, out_ptr, out: hlo.Shape, start, stop):
    """Regions of one `region_groups` group: one loop over a constant table of their
    offsets and slice starts, around the loop nest of the first (the template)."""
    b = em.b
    x, _, slices = group[0]
    rank = out.rank
    table = np.array([list(off) + [v for sl in sls for v in sl.attrs["start"]]
                      for _, off, sls in group], dtype=np.int64)
    ty = ir.ArrayType(I64, table.size)
    g = ir.GlobalVariable(b.module, ty, b.module.get_unique_name("regions"))
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ir.Constant(ty, [int(v) for v in table.reshape(-1)])
    width = table.shape[1]

    def one(r, _c):
      row = [b.load(b.gep(g, [em.i64(0), b.add(em.mul_idx(r, width), em.i64(k))],
                          inbounds=True, source_etype=ty), typ=I64) for k in range(width)]
      at = rank
      for sl in slices:
        em.slice_starts[sl.id] = row[at:at + sl.shape.rank]
        at += sl.shape.rank
      self._region(em, x, row[:rank], out_ptr, out, start, stop)
      for sl in slices:
        del em.slice_starts[sl.id]
      return []
    em.loop(em.i64(0), em.i64(len(group)), [], one)

  def _region(self, em, x, offset, out_ptr, out: hlo.Shape, start, stop):
    """The loop nest writing operand `x` of a concatenate root at `offset` (values), its
    outer loop clipped to the kernel's [start, stop) of the output's dim 0."""
    b = em.b
    lo, hi = b.sub(start, offset[0]), b.sub(stop, offset[0])
    lo = b.select(b.icmp_signed("<", lo, em.i64(0)), em.i64(0), lo)
    n0 = em.i64(outer_extent(x.shape.dims))
    hi = b.select(b.icmp_signed(">", hi, n0), n0, hi)

    def store(idx):
      at = tuple(em.add_idx(i, o) for i, o in zip(idx, offset))
      em.store(out_ptr, em.linear(at, out.dims), out.dtype, em.emit(x, idx))
    em.push()
    self._nest(em, x.shape.dims, lo, hi, store, hoist_from=[x])
    em.pop()

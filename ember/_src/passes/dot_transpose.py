"""dot_transpose: absorb `transpose` operands of `dot` into its dimension numbers.

    dot(transpose(a, {1,0}), b), lhs_contracting_dims={1}
      -> dot(a, b), lhs_contracting_dims={0}                 (a.T @ b: no transpose left)

A dot's output dimensions are: the batch dimensions (in the order of the `*_batch_dims`
lists), then the lhs free dimensions in increasing lhs order, then the rhs free dimensions
in increasing rhs order. Renaming the transposed operand's dimensions through the
permutation (`d -> perm[d]`) keeps contracting and batch dimensions paired as before (they
are lists, their order is kept); the free dimensions keep their output order only if the
permutation is increasing on them. So the transpose is absorbed exactly when it is, and
otherwise left alone.

Value-preserving: the dot multiplies and sums the same pairs of elements in the same
contraction order, only read through a different index map; nothing is computed
differently. The backend passes the layout to BLAS as a transpose flag instead of copying.
"""
from __future__ import annotations

from ember._src.hlo import graph as hlo

_SIDES = (("lhs_contracting_dims", "lhs_batch_dims"), ("rhs_contracting_dims", "rhs_batch_dims"))


def _absorb(dot: hlo.Instr, side: int) -> bool:
  t = dot.operands[side]
  if t.opcode != "transpose":
    return False
  perm = tuple(t.attrs["dimensions"])          # transposed dim d = operand dim perm[d]
  contracting_key, batch_key = _SIDES[side]
  contracting = tuple(dot.attrs.get(contracting_key, ()))
  batch = tuple(dot.attrs.get(batch_key, ()))
  free = [d for d in range(len(perm)) if d not in contracting and d not in batch]
  mapped_free = [perm[d] for d in free]
  if mapped_free != sorted(mapped_free):
    return False                               # the output's free-dim order would change
  dot.attrs[contracting_key] = tuple(perm[d] for d in contracting)
  dot.attrs[batch_key] = tuple(perm[d] for d in batch)
  dot.operands[side] = t.operands[0]
  return True


def run(module: hlo.Module, flags=None) -> hlo.Module:
  for comp in module.computations:
    changed = False
    for i in comp.instrs:
      if i.opcode == "dot":
        for side in (0, 1):
          while _absorb(i, side):              # transpose(transpose(a)) absorbs twice
            changed = True
    if changed:
      comp.sort_and_prune()                    # the transposes may be dead now
  return module

"""cse: common-subexpression elimination.

Two instructions of one computation are merged when they are the same operation on the same
operands: same opcode, shape, attributes, operands (after merging theirs) and called
computations (compared by structure, so two reduces with separately built `add` regions
match). Constants match by dtype, shape and exact bits (0.0 and -0.0 differ; NaNs with the
same bits match). Operands of `add`, `multiply`, `and`, `or`, `xor` and EQ/NE compares are
compared as a multiset: these are exactly commutative in IEEE arithmetic (maximum/minimum are
not: they may return either zero for max(-0.0, 0.0)).

Value-preserving: every op here is a pure function of its operands and attributes, so the
second computation of the same expression yields the same value as the first. Never merged:
parameters (distinct inputs), custom-calls and random-number generation (may have effects),
optimization barriers (the user asked for them to stay put).
"""
from __future__ import annotations

import numpy as np

from ember._src.hlo import graph as hlo

_NEVER = {"parameter", "custom-call", "rng-bit-generator", "optimization-barrier", "while",
          "conditional"}
_COMMUTATIVE = {"add", "multiply", "and", "or", "xor"}


def _freeze(v):
  """A hashable, exact key for an attribute value."""
  if isinstance(v, np.ndarray) or isinstance(v, np.generic):
    a = np.ascontiguousarray(v)
    return ("array", a.dtype.str, a.shape, a.tobytes())
  if isinstance(v, (list, tuple)):
    return tuple(_freeze(x) for x in v)
  if isinstance(v, dict):
    return tuple(sorted((k, _freeze(x)) for k, x in v.items()))
  if isinstance(v, float) and v != v:
    return ("nan",)
  return v


class _Keys:
  """Structural keys of instructions and (memoized) of computations."""

  def __init__(self):
    self.comp_keys: dict[int, tuple] = {}

  def computation(self, comp: hlo.Computation) -> tuple:
    key = self.comp_keys.get(id(comp))
    if key is None:
      pos = {i.id: n for n, i in enumerate(comp.instrs)}
      key = tuple(self.instr(i, tuple(pos[o.id] for o in i.operands)) for i in comp.instrs)
      key = (key, pos[comp.root.id])
      self.comp_keys[id(comp)] = key
    return key

  def instr(self, i: hlo.Instr, operand_keys: tuple) -> tuple:
    if i.opcode in _COMMUTATIVE or (i.opcode == "compare" and i.attrs.get("direction") in ("EQ", "NE")):
      operand_keys = tuple(sorted(operand_keys))
    # (inside a computation's key, parameters are told apart by their numbers)
    return (i.opcode, i.shape, _freeze(i.attrs), operand_keys,
            tuple(self.computation(c) for c in i.called))


def cse_computation(comp: hlo.Computation, keys: _Keys | None = None) -> int:
  """Merge duplicate instructions of `comp` in place; returns how many were merged."""
  keys = keys or _Keys()
  canon: dict[int, hlo.Instr] = {}       # id -> the instruction that replaces it
  table: dict[tuple, hlo.Instr] = {}
  kept: list[hlo.Instr] = []
  merged = 0
  for i in comp.instrs:
    i.operands = [canon.get(o.id, o) for o in i.operands]
    if i.opcode not in _NEVER:
      key = keys.instr(i, tuple(o.id for o in i.operands))
      first = table.setdefault(key, i)
      if first is not i:
        canon[i.id] = first
        merged += 1
        continue
    kept.append(i)
  comp.instrs = kept
  comp.root = canon.get(comp.root.id, comp.root)
  return merged


def run(module: hlo.Module, flags=None) -> hlo.Module:
  keys = _Keys()
  # Callees first: a caller's key for a computation is taken after the callee is merged.
  for comp in module.called_computations():
    cse_computation(comp, keys)
  return module

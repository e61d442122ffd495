"""Constant folding: replace instructions whose value is known at compile time by
`constant`s.

What it rewrites: in every computation of the module (the entry, call targets, fusions,
reduce/sort/scatter computations), an instruction all of whose operands have known values
(constants, or other foldable instructions) is evaluated with the reference evaluator
(`hlo_eval.eval_instr`) and replaced by a `constant` carrying the folded instruction's
metadata (a uniform array by `broadcast` of a scalar constant, so constants stay small and
fusible); the instructions that only fed it are removed. `v*sin(2.0) + arange(4.).sum()`
keeps no `sine` and no `reduce`.

What it leaves alone:
- large results (more than MAX_CONSTANT_ELEMENTS elements): large constants are not
  materialized into code; and `broadcast` / `iota` of any size, as XLA does (they cost
  nothing to compute and a lot to store). Their values still count as known, so a
  `reduce(iota)` or `reduce(broadcast(c))` with a small result does fold;
- side-effecting or non-deterministic instructions (custom-call, rng-bit-generator, and
  calls of computations containing them), `parameter`, `optimization-barrier` (it exists
  to stop such rewrites), and `while` (its trip count is unbounded);
- anything whose evaluation would touch more than MAX_EVAL_ELEMENTS elements.

Why it is value-preserving: the folded value is the instruction's value under the
reference semantics the evaluator implements (XLA's, the same the backend compiles), in
the instruction's exact dtype and shape; the operands it reads are compile-time constants,
so every run of the program would compute that same value. Except for subnormals: like
XLA's folder (which runs on the compiling thread, outside the runtime's flush-to-zero),
folding computes with IEEE subnormals, where the compiled code would flush them
(base/denormals.py): jit(lambda: f32(2**-126) * 0.5)() is 2**-127 in JAX and here.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ember._src.base import denormals
from ember._src.hlo import graph as hlo, evaluator as hlo_eval

NAME = "constant_folding"
MAX_CONSTANT_ELEMENTS = 1024        # folded results above this stay computed code
MAX_EVAL_ELEMENTS = 1 << 22         # NumPy work the folder may spend on one instruction

_NEVER_MATERIALIZED = {"broadcast", "iota"}
_NOT_FOLDABLE = {"parameter", "constant", "custom-call", "rng-bit-generator", "while",
                 "optimization-barrier"}
_IMPURE = {"custom-call", "rng-bit-generator"}


def _elements(shape) -> int:
  if isinstance(shape, hlo.TupleShape):
    return sum(_elements(e) for e in shape.elements)
  return shape.size


def _calls_impure(instr: hlo.Instr) -> bool:
  return any(i.opcode in _IMPURE or i.opcode == "while"
             for c in instr.called for i in hlo.instructions(c))


def _foldable(instr: hlo.Instr) -> bool:
  if instr.opcode in _NOT_FOLDABLE or _calls_impure(instr):
    return False
  work = _elements(instr.shape) + sum(_elements(o.shape) for o in instr.operands)
  return work <= MAX_EVAL_ELEMENTS


def _materialize(instr: hlo.Instr) -> bool:
  return (isinstance(instr.shape, hlo.Shape) and instr.opcode not in _NEVER_MATERIALIZED
          and instr.shape.size <= MAX_CONSTANT_ELEMENTS)


class _Values:
  """Values of known instructions, computed on demand (a broadcast feeding nothing
  foldable is never evaluated) and iteratively (long chains do not recurse)."""

  def __init__(self):
    self.cache: dict[int, Any] = {}

  def get(self, instr: hlo.Instr):
    stack = [instr]
    while stack:
      top = stack[-1]
      if top.id in self.cache:
        stack.pop()
        continue
      missing = [o for o in top.operands if o.id not in self.cache]
      if missing:
        stack.extend(missing)
        continue
      stack.pop()
      self.cache[top.id] = hlo_eval.eval_instr(top, [self.cache[o.id] for o in top.operands])
    return self.cache[instr.id]


def _fold_computation(comp: hlo.Computation) -> bool:
  known: set[int] = set()
  values = _Values()
  folded: list[hlo.Instr] = []
  for instr in list(comp.instrs):
    if instr.opcode == "constant":
      known.add(instr.id)
      continue
    if not _foldable(instr) or not all(o.id in known for o in instr.operands):
      continue
    known.add(instr.id)
    if not _materialize(instr):
      continue
    try:
      value = values.get(instr)
    except Exception:   # noqa: BLE001 - an instruction the evaluator rejects stays code
      known.discard(instr.id)
      continue
    const = _constant_like(comp, instr, value)
    known.add(const.id)
    values.cache[const.id] = np.asarray(value)
    comp.replace_all_uses(instr, const)
    folded.append(instr)
  if folded:
    _remove_dead(comp, folded)
  return bool(folded)


def _constant_like(comp: hlo.Computation, instr: hlo.Instr, value) -> hlo.Instr:
  """A `constant` with `instr`'s value, shape and metadata, placed where `instr` is; a
  uniform array becomes `broadcast(scalar constant)` (small, and fusible like the
  broadcasts it usually came from)."""
  value = np.array(value, dtype=np.dtype(instr.dtype), order="C")   # (keeps 0-d 0-d)
  flat = value.reshape(-1)
  uniform = value.ndim > 0 and value.size > 1 and (flat.view(np.uint8).reshape(
      flat.size, -1) == flat[:1].view(np.uint8)).all()
  at = comp.instrs.index(instr)
  new = []
  if uniform:
    scalar = _add_at(comp, at, hlo.Instr("constant", hlo.scalar_shape(instr.dtype),
                                         attrs={"value": _frozen(flat[0].copy())},
                                         metadata=instr.metadata))
    new.append(_add_at(comp, at + 1, hlo.Instr("broadcast", instr.shape, [scalar],
                                               attrs={"dimensions": ()},
                                               metadata=instr.metadata)))
  else:
    new.append(_add_at(comp, at, hlo.Instr("constant", instr.shape,
                                           attrs={"value": _frozen(value)},
                                           metadata=instr.metadata)))
  return new[0]


def _frozen(value) -> np.ndarray:
  value = np.array(value)
  value.flags.writeable = False
  return value


def _add_at(comp: hlo.Computation, position: int, instr: hlo.Instr) -> hlo.Instr:
  comp.add(instr)                      # names it uniquely in the module
  comp.instrs.insert(position, comp.instrs.pop())
  return instr


def _remove_dead(comp: hlo.Computation, folded: list[hlo.Instr]) -> None:
  """Drop the folded instructions and whatever only they used (all pure by construction)."""
  candidates: set[int] = set()
  stack = list(folded)
  while stack:
    i = stack.pop()
    if i.id not in candidates and i.opcode != "parameter":
      candidates.add(i.id)
      stack.extend(i.operands)
  live: set[int] = set()
  stack = [comp.root] + [i for i in comp.instrs if i.id not in candidates]
  while stack:
    i = stack.pop()
    if i.id not in live:
      live.add(i.id)
      stack.extend(i.operands)
  comp.instrs = [i for i in comp.instrs if i.id in live or i.id not in candidates]


def run(module: hlo.Module, flags=None) -> hlo.Module:
  """Fold constants in every computation of `module` (in place); returns the module."""
  with denormals.flushed(False):   # IEEE subnormals on any thread (see the docstring)
    for comp in module.called_computations():
      _fold_computation(comp)
  return module

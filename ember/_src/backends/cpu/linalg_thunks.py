"""Custom calls of the CPU backend: LAPACK-style decompositions (`lapack_spotrf_ffi`,
`lapack_dgesdd_ffi`, ...; see reference/lapack.py for each target's semantics)
run as thunks calling NumPy's LAPACK-backed routines on views of their buffers.

`add_to_plan(plan, instr)` is the compiler's hook (backends/cpu/compiler.py): it records
the thunk's factory. Nothing is generated or serialized for a custom call: the persistent
cache replays the plan from the module's instruction, whose target and backend config
are all the thunk needs.
"""
from __future__ import annotations

import numpy as np

from ember._src import hlo
from ember._src.backends.cpu.executable import Frame, Thunk
from ember._src.reference import lapack


class CustomCallThunk(Thunk):
  """Read the operands, run the target's NumPy routine, write each result."""
  kind = "custom-call"

  def __init__(self, instr: hlo.Instr, in_slots, out_slots):
    self.name = instr.name
    self.target = instr.attrs["target"]
    self.fn = lapack.CUSTOM_CALL_TARGETS[self.target]
    self.config = instr.attrs.get("backend_config", ())
    self.in_shapes = [o.shape for o in instr.operands]
    s = instr.shape
    self.out_shapes = list(s.elements) if isinstance(s, hlo.TupleShape) else [s]
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)

  def run(self, frame: Frame) -> None:
    # copies: a result may be computed into a buffer that also holds an operand
    vals = [np.array(frame.view(s, sh)) for s, sh in zip(self.in_slots, self.in_shapes)]
    outs = self.fn(self.config, *vals)
    for s, sh, v in zip(self.out_slots, self.out_shapes, outs):
      np.copyto(frame.view(s, sh), np.asarray(v).astype(sh.dtype, copy=False))


def supported(instr: hlo.Instr) -> bool:
  return instr.attrs.get("target") in lapack.CUSTOM_CALL_TARGETS


def add_to_plan(plan, instr: hlo.Instr) -> None:
  """Record the thunk of a custom call in the compiler's thunk plan."""
  ins = [plan.slot(o) for o in instr.operands]
  s = plan.slot(instr)
  outs = list(s) if type(s) is tuple else [s]
  plan.pending.append(lambda addr: CustomCallThunk(instr, ins, outs))

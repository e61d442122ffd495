"""HLO's `fft` on the CPU backend: a thunk running reference/fft.py's NumPy pocketfft
transform (in the operand's precision: complex64 stays complex64) on views of its
buffers, as the LAPACK custom calls run (linalg_thunks.py).

`add_to_plan(plan, instr)` is the compiler's hook (backends/cpu/compiler.py). Nothing is
generated or serialized: the persistent cache replays the plan from the instruction,
whose fft_type and fft_length are all the thunk needs.
"""
from __future__ import annotations

import numpy as np

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu.executable import Frame, Thunk, flushing
from ember._src.reference import fft


class FftThunk(Thunk):
  """Read the operand, transform it, write the result."""
  kind = "fft"

  def __init__(self, instr: hlo.Instr, in_slot, out_slot):
    self.name = instr.name
    self.fft_type, self.fft_length = instr.attrs["fft_type"], tuple(instr.attrs["fft_length"])
    self.in_shape, self.out_shape = instr.operands[0].shape, instr.shape
    self.in_slots, self.out_slots = (in_slot,), (out_slot,)

  @flushing
  def run(self, frame: Frame) -> None:
    # a copy: the result may be computed into a buffer that also holds the operand
    x = np.array(frame.view(self.in_slots[0], self.in_shape))
    np.copyto(frame.view(self.out_slots[0], self.out_shape),
              fft.fft(x, self.fft_type, self.fft_length))


def add_to_plan(plan, instr: hlo.Instr) -> None:
  """Record the fft thunk in the compiler's thunk plan."""
  x, out = plan.slot(instr.operands[0]), plan.slot(instr)
  plan.pending.append(lambda addr: FftThunk(instr, x, out))

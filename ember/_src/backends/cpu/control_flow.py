"""`while` and `conditional` on the CPU backend.

Each called computation (a while's condition and body, a conditional's branches) is cloned
into a module of its own, optimized by the same pass pipeline (inline, algsimp, CSE, fusion,
...) and compiled to native code with its own buffer assignment: a sub-executable. The
thunk then runs the loop (or picks the branch) inside the executor: per iteration one
call of the condition's and one of the body's thunk lists, no tracing, no Python per
element. Nested control flow nests sub-executables. A called computation the backend cannot
compile (an op without CPU code yet) runs on the reference evaluator instead
(`hlo_eval.evaluate_computation`), with identical results; `ControlFlowThunk.native` says
which computations are native.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ember._src import hlo, hlo_eval
from ember._src.backends.cpu import executable as ex


class _Sub:
  """One called computation, compiled (or, failing that, evaluated by the reference
  evaluator): `__call__(args) -> list of arrays`."""

  def __init__(self, comp: hlo.Computation, name: str, flags):
    self.comp = comp
    self.exe = None
    self.error = None
    try:
      from ember._src.backends.cpu.compiler import compile_module
      from ember._src.passes import pipeline
      module = hlo.module_of(comp, name)
      # bodies the pipeline already optimized (pipeline.optimize_control_flow) compile as
      # they are; others (a module compiled without the pipeline) are optimized here
      module = (pipeline.copy_outputs(module) if getattr(comp, "optimized", False)
                else pipeline.optimize_program(module, flags))
      self.exe = compile_module(module, None, flags)
    except Exception as e:  # noqa: BLE001 - any op the backend lacks: evaluate instead
      self.error = f"{type(e).__name__}: {e}"

  def __call__(self, args):
    if self.exe is not None:
      return self.exe.execute(args)
    out = hlo_eval.evaluate_computation(self.comp, args)
    return [np.asarray(v) for v in out] if isinstance(out, tuple) else [np.asarray(out)]


class _GeneratedLoop:
  """The whole `while` as one generated function: with every buffer of the condition and
  the body at a fixed address (the state, the body's outputs, their temp arenas, owned
  here), each kernel's pointer array is a constant, and the loop

      cond: call the condition's kernels; if !pred goto exit
      body: call the body's kernels; copy the body's outputs onto the state; goto cond

  is a few lines of LLVM IR with the kernels' addresses baked in: one ctypes call runs
  every iteration, no Python in between. Built only when both sub-executables consist of
  single-call kernels and copies (big bodies keep the thread pool: `build` returns None)."""

  def __init__(self, cond_exe, body_exe, state_shapes):
    self.state = [_buffer(s) for s in state_shapes]
    self.body_out = [_buffer(s) for s in body_exe.output_shapes]
    self.pred = _buffer(cond_exe.output_shapes[0])
    self.keep: list = []           # pointer arrays and arenas the generated code points to
    lines = ["declare void @llvm.memcpy.p0i8.p0i8.i64(i8*, i8*, i64, i1)", "",
             "define void @loop() {", "entry:", "  br label %cond", "cond:"]
    lines += self._calls(cond_exe, [self.pred])
    lines += [f"  %p = load i8, i8* {_ptr(self.pred.ctypes.data)}",
              "  %c = icmp ne i8 %p, 0", "  br i1 %c, label %body, label %exit", "body:"]
    lines += self._calls(body_exe, self.body_out)
    lines += [_memcpy(d.ctypes.data, s.ctypes.data, s.nbytes)
              for d, s in zip(self.state, self.body_out) if s.nbytes]
    lines += ["  br label %cond", "exit:", "  ret void", "}"]
    self.ir = "\n".join(lines) + "\n"
    from ember._src.backends.cpu.compiler import _jit
    self.engine, addr, *_ = _jit(self.ir, 2)
    self.fn = ctypes.CFUNCTYPE(None)(addr("loop"))

  @staticmethod
  def build(cond_exe, body_exe, state_shapes):
    for e in (cond_exe, body_exe):
      if e is None or any(not (type(t) is ex.CopyThunk or (type(t) is ex.KernelThunk
                                                              and t.nchunks <= 1))
                          for t in e.thunks):
        return None
      if any(s.kind != "output" or s.index != k for k, s in enumerate(e.output_slots)):
        return None
    return _GeneratedLoop(cond_exe, body_exe, state_shapes)

  def _calls(self, exe, outs) -> list[str]:
    arena = ex._aligned_bytes(max(exe.temp_size, 1))
    self.keep.append(arena)

    def addr(slot) -> int:
      k = slot.kind
      if k == "parameter":
        return self.state[slot.index].ctypes.data
      if k == "output":
        return outs[slot.index].ctypes.data
      if k == "temp":
        return arena.ctypes.data + slot.offset
      return exe.const_ptrs[slot.index]
    self.keep.append(exe)          # its constants and machine code
    lines = []
    for t in exe.thunks:
      if type(t) is ex.CopyThunk:
        if t.src != t.dst and t.shape.nbytes:
          lines.append(_memcpy(addr(t.dst), addr(t.src), t.shape.nbytes))
        continue
      arr = (ctypes.c_void_p * max(len(t.slots), 1))(*[addr(sl) for sl in t.slots])
      self.keep.append(arr)
      if t.outer > 0:
        lines.append(f"  call void inttoptr (i64 {t.address} to void (i8**, i64, i64)*)"
                     f"(i8** inttoptr (i64 {ctypes.addressof(arr)} to i8**), i64 0, "
                     f"i64 {t.outer})")
    return lines

  def run(self, vals) -> list:
    for d, v in zip(self.state, vals):
      np.copyto(d, v)
    self.fn()
    return self.state


def _buffer(shape: hlo.Shape) -> np.ndarray:
  return ex._aligned_bytes(max(shape.nbytes, 1))[:shape.nbytes].view(
      np.dtype(shape.dtype)).reshape(shape.dims)


def _ptr(address: int, ty: str = "i8") -> str:
  return f"inttoptr (i64 {address} to {ty}*)"


def _memcpy(dst: int, src: int, n: int) -> str:
  return (f"  call void @llvm.memcpy.p0i8.p0i8.i64(i8* {_ptr(dst)}, i8* {_ptr(src)}, "
          f"i64 {n}, i1 false)")


class ControlFlowThunk(ex.Thunk):
  """Runs a `while` (condition, then body, until the condition is false) or a
  `conditional` (the branch the index selects; out of range: the last) on compiled
  sub-executables; operands are read from, results written to, the frame's slots."""

  def __init__(self, instr: hlo.Instr, in_slots, out_slots, flags=None):
    self.kind = instr.opcode
    self.name = instr.name
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)
    self.in_shapes = [o.shape for o in instr.operands]
    self.out_shapes = list(instr.shape.elements if isinstance(instr.shape, hlo.TupleShape)
                           else [instr.shape])
    self.subs = [_Sub(c, f"{instr.name}_{c.name}", flags) for c in instr.called]
    self.native = [s.exe is not None for s in self.subs]
    self.loop = None                 # the generated loop, when the while qualifies
    if self.kind == "while":
      try:
        self.loop = _GeneratedLoop.build(self.subs[0].exe, self.subs[1].exe, self.in_shapes)
      except Exception:  # noqa: BLE001 - the sub-executable loop below is always correct
        self.loop = None
    self._lock = threading.Lock()    # the generated loop's buffers serve one run at a time

  def run(self, frame: ex.Frame) -> None:
    vals = [frame.view(s, sh).copy() for s, sh in zip(self.in_slots, self.in_shapes)]
    if self.loop is not None:
      with self._lock:
        outs = self.loop.run(vals)
        for s, sh, v in zip(self.out_slots, self.out_shapes, outs):
          np.copyto(frame.view(s, sh), v)
      return
    if self.kind == "while":
      cond, body = self.subs
      state = vals
      while bool(cond(state)[0]):
        state = body(state)
      outs = state
    else:
      k = int(vals[0]) if vals[0].dtype != np.bool_ else (0 if bool(vals[0]) else 1)
      k = k if 0 <= k < len(self.subs) else len(self.subs) - 1
      outs = self.subs[k](vals[1:])
    for s, sh, v in zip(self.out_slots, self.out_shapes, outs):
      np.copyto(frame.view(s, sh), v)


def add_to_plan(plan, instr: hlo.Instr) -> None:
  """The `_ThunkPlan` hook: one ControlFlowThunk for a `while`/`conditional`."""
  from ember._src import flags as flags_lib
  ins = [plan.slot(o) for o in instr.operands]
  outs = plan.slot(instr)
  outs = list(outs) if type(outs) is tuple else [outs]
  thunk = ControlFlowThunk(instr, ins, outs, flags_lib.get())
  plan.pending.append(lambda addr: thunk)

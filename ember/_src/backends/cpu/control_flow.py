"""`while` and `conditional` on the CPU backend.

Each called computation (a while's condition and body, a conditional's branches) is a
program of its own, which the compile driver optimized with the whole pass pipeline
(inline, algsimp, CSE, fusion, ...: passes/pipeline.optimize_control_flow), copied into a
module and gave its own buffer assignment (compilation.assign_program:
`BufferAssignment.called`); here it is compiled to native code: a sub-executable. The
thunk then runs the loop (or picks the branch) inside the executor: per iteration one
call of the condition's and one of the body's thunk lists, no tracing, no Python per
element. Nested control flow nests sub-executables.

A called computation the backend cannot compile (an op without CPU code yet) runs on the
reference evaluator instead (`hlo_eval.evaluate_computation`), with identical results but
slowly: each such compile is logged (logger "ember") and counted in `REFERENCE_FALLBACKS` by
the opcode the backend's error names; tests/test_reference_fallback.py lists those opcodes,
a list to shrink to zero. `ControlFlowThunk.native` says which computations are native.
"""
from __future__ import annotations

import collections
import ctypes
import logging
import re
import threading

import numpy as np

from ember._src.base import flags as flags_lib, profiler_events as _profiler
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.backends.cpu import profiled
from ember._src.backends.cpu import executable as ex
from ember._src.backends.cpu import denormals, runtime_cache, tiering
from ember._src.backends.cpu.codegen.ir_types import CodegenError

# Opcode -> how many called computations fell back to the reference evaluator because the
# backend could not compile that op (`_Sub`). Every entry is a missing backend feature.
REFERENCE_FALLBACKS: collections.Counter = collections.Counter()
_logger = logging.getLogger("ember")

# The compiler compiles a loop's bodies while it compiles the loop: compiler.py hands its
# functions over at import (`use_compiler`), so the import points one way (compiler -> here).
_compile = _serialize = _deserialize = None


def use_compiler(compile_module, serialize_executable, deserialize_executable) -> None:
  global _compile, _serialize, _deserialize
  _compile, _serialize, _deserialize = compile_module, serialize_executable, deserialize_executable


class _Sub:
  """One called computation, compiled (or, failing that, evaluated by the reference
  evaluator): `__call__(args) -> list of arrays`. `assignment`: the buffer assignment of
  the program the driver made of it (`assignment.module`). `recorded`: the
  sub-executable's bytes from a persistent-cache entry (`compiler.serialize_executable`),
  loaded instead of compiled; `serialized` is what an entry records (None when not
  compiled; made when first asked for: the optimized code's, after a tier-up). `tiered`:
  the compile may start at the quick tier when `runs` calls of the program pay
  (`tiering.pays`: a loop body runs its quick code once per iteration until the swap;
  `runs` None: a trip count not known, never)."""

  def __init__(self, comp: hlo.Computation, assignment, flags, recorded: bytes | None = None,
               tiered: bool = False, runs: int | None = 1):
    self.comp, self.assignment = comp, assignment
    self.exe = None
    self.error = None
    self._serialized = None
    module = assignment.module
    try:
      if recorded is not None:
        try:
          self.exe = _deserialize(module, assignment, recorded)
          self._serialized = recorded
        except Exception:  # noqa: BLE001 - bytes that do not fit this module: compile it
          self.exe = None
      if self.exe is None:
        self.exe = _compile(module, assignment, flags,
                            tiered and tiering.pays(module, flags, runs), tiered)
    except Exception as e:  # noqa: BLE001 - any op the backend lacks: evaluate instead
      self.error = f"{type(e).__name__}: {e}"
      _count_fallback(e, module, comp)

  @property
  def serialized(self) -> bytes | None:
    if self._serialized is None and self.exe is not None:
      self._serialized = _serialize(self.exe)
    return self._serialized

  def __call__(self, args):
    if self.exe is not None:
      if _profiler.active:   # the body's thunks as spans inside the loop's
        return profiled.execute(self.exe, self.comp, self.comp.module.name, args,
                                label=self.comp.name)[0]
      return self.exe.execute(args)
    out = hlo_eval.evaluate_computation(self.comp, args)
    return [np.asarray(v) for v in out] if isinstance(out, tuple) else [np.asarray(out)]


# The loop driver: ONE native function per process (compiled at the first generated loop,
# like the thread pool) that runs a program of i64 words, so a loop needs no LLVM of its own
# (and a persistent-cache hit none at all). Ops: CALL fn bufs outer (a kernel over
# [0, outer)), COPY dst src nbytes, BRZ byte_ptr target (jump when the byte is 0),
# JUMP target, RET value (the function's result), BREQ i32_ptr value target (jump when the
# int32 equals value: a conditional's branch index). The denormal modes (denormals.py) are
# switched once for the whole loop, not by each kernel call.
_CALL, _COPY, _BRZ, _JUMP, _RET, _BREQ = range(6)
_DRIVER_IR = denormals.TEXT_HELPERS + """
declare void @llvm.memcpy.p0i8.p0i8.i64(i8*, i8*, i64, i1)

define i64 @ember_loop_run(i64* %prog) {
entry:
  %fz = call i64 @"ember.fz.on"()
  br label %fetch
fetch:
  %pc = phi i64 [0, %entry], [%pc.call, %call], [%pc.copy, %copy], [%pc.next, %brz.no],
                [%tgt.brz, %brz.yes], [%tgt.jump, %jump], [%pc.eqnext, %breq.no],
                [%tgt.breq, %breq.yes]
  %w0 = getelementptr i64, i64* %prog, i64 %pc
  %op = load i64, i64* %w0
  %pc1 = add i64 %pc, 1
  %w1 = getelementptr i64, i64* %prog, i64 %pc1
  %a1 = load i64, i64* %w1
  switch i64 %op, label %ret [i64 0, label %call
                              i64 1, label %copy
                              i64 2, label %brz
                              i64 3, label %jump
                              i64 5, label %breq]
call:
  %pc2 = add i64 %pc, 2
  %w2 = getelementptr i64, i64* %prog, i64 %pc2
  %bufs.i = load i64, i64* %w2
  %pc3 = add i64 %pc, 3
  %w3 = getelementptr i64, i64* %prog, i64 %pc3
  %outer = load i64, i64* %w3
  %fn = inttoptr i64 %a1 to void (i8**, i64, i64)*
  %bufs = inttoptr i64 %bufs.i to i8**
  call void %fn(i8** %bufs, i64 0, i64 %outer)
  %pc.call = add i64 %pc, 4
  br label %fetch
copy:
  %cp2 = add i64 %pc, 2
  %cw2 = getelementptr i64, i64* %prog, i64 %cp2
  %src.i = load i64, i64* %cw2
  %cp3 = add i64 %pc, 3
  %cw3 = getelementptr i64, i64* %prog, i64 %cp3
  %n = load i64, i64* %cw3
  %dst = inttoptr i64 %a1 to i8*
  %src = inttoptr i64 %src.i to i8*
  call void @llvm.memcpy.p0i8.p0i8.i64(i8* %dst, i8* %src, i64 %n, i1 false)
  %pc.copy = add i64 %pc, 4
  br label %fetch
brz:
  %bp2 = add i64 %pc, 2
  %bw2 = getelementptr i64, i64* %prog, i64 %bp2
  %tgt.brz = load i64, i64* %bw2
  %pp = inttoptr i64 %a1 to i8*
  %p = load i8, i8* %pp
  %z = icmp eq i8 %p, 0
  %pc.next = add i64 %pc, 3
  br i1 %z, label %brz.yes, label %brz.no
brz.yes:
  br label %fetch
brz.no:
  br label %fetch
jump:
  %tgt.jump = add i64 %a1, 0
  br label %fetch
breq:
  %qp2 = add i64 %pc, 2
  %qw2 = getelementptr i64, i64* %prog, i64 %qp2
  %want = load i64, i64* %qw2
  %qp3 = add i64 %pc, 3
  %qw3 = getelementptr i64, i64* %prog, i64 %qp3
  %tgt.breq = load i64, i64* %qw3
  %ip = inttoptr i64 %a1 to i32*
  %iv = load i32, i32* %ip
  %iv64 = sext i32 %iv to i64
  %eq = icmp eq i64 %iv64, %want
  %pc.eqnext = add i64 %pc, 4
  br i1 %eq, label %breq.yes, label %breq.no
breq.yes:
  br label %fetch
breq.no:
  br label %fetch
ret:
  call void @"ember.fz.restore"(i64 %fz)
  ret i64 %a1
}
"""


@runtime_cache.once
def _driver():
  """(engine, ctypes function i64 ember_loop_run(i64* program)), compiled once per machine
  (runtime_cache)."""
  engine, addr = runtime_cache.load_or_compile("ember_loop_run", lambda: _DRIVER_IR,
                                               _DRIVER_IR, 2)
  return engine, ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)(addr("ember_loop_run"))


class _GeneratedLoop:
  """The whole `while` as one native call: with every buffer of the condition and the
  body at a fixed address (owned here), each kernel's pointer array is a constant, and the
  loop is a program for the loop driver (`_DRIVER_IR`). The carry is double-buffered: the
  body reads state A and writes its outputs straight into state B, the next iteration reads
  B and writes A (two copies of the condition's and the body's calls, one per direction),
  so no carry is copied between iterations:

      c0: cond(A); BRZ -> x0;  body(A -> B);  cond(B); BRZ -> x1;  body(B -> A);  JUMP c0
      x0: RET 0 (the result is in A)           x1: RET 1 (in B)
      (RET 2: a thunk run through Python raised)

  A `conditional` inside the body (or inside a branch) becomes branches of the program
  (`_conditional`): a checkpointed loop's body picks its step that way, and a Python call
  per iteration would cost more than the whole step.

  Built only when both sub-executables consist of single-call kernels, copies and such
  conditionals (big bodies keep the thread pool: `build` returns None; see `_straight`)."""

  def __init__(self, cond_exe, body_exe, state_shapes):
    a = [_buffer(s) for s in state_shapes]
    # an element the body computes in place (or returns unchanged) has one buffer
    self.states = (a, [a[k] if slot.kind == "parameter" else _buffer(s) for k, (s, slot)
                       in enumerate(zip(state_shapes, body_exe.output_slots))])
    self.pred = _buffer(cond_exe.output_shapes[0])
    self.keep: list = [cond_exe, body_exe]   # what the program points to stays alive
    self.exes: list = []                     # (sub-executable, its thunk list) emitted
    self.failed = np.zeros(1, np.uint8)      # set by a Python call that raised (`error`)
    self.error: BaseException | None = None
    a, b = self.states
    pa, pb, pp = ([x.ctypes.data for x in xs] for xs in (a, b, [self.pred]))
    prog: list = []
    exits = []                               # positions of the exits' jump targets

    def brz():
      prog.extend([_BRZ, self.pred.ctypes.data, 0])
      exits.append(len(prog) - 1)
    self._calls(prog, cond_exe, pa, pp)
    brz()
    self._calls(prog, body_exe, pa, pb)
    self._calls(prog, cond_exe, pb, pp)
    brz()
    self._calls(prog, body_exe, pb, pa)
    prog.extend([_JUMP, 0])
    for k, pos in enumerate(exits):         # x0: RET 0, x1: RET 1
      prog[pos] = len(prog)
      prog.extend([_RET, k])
    self.program = np.array(prog, np.int64)
    self.engine, self.fn = _driver()

  @staticmethod
  def build(cond_exe, body_exe, state_shapes):
    for e in (cond_exe, body_exe):
      if e is None or not _straight(e):
        return None
      if any(s.index != k or s.kind not in ("output", "parameter")
             for k, s in enumerate(e.output_slots)):
        return None
    return _GeneratedLoop(cond_exe, body_exe, state_shapes)

  def _calls(self, prog: list, exe, params: list, outs: list) -> None:
    """Append `exe`'s thunks reading the parameters at addresses `params` and writing the
    outputs at `outs` to the program."""
    arena = ex._aligned_bytes(max(exe.temp_size, 1))
    self.keep.append(arena)
    self.exes.append((exe, exe.thunks))

    def addr(slot) -> int:
      k = slot.kind
      if k == "parameter":
        return params[slot.index]
      if k == "output":
        return outs[slot.index]
      if k == "temp":
        return arena.ctypes.data + slot.offset
      return exe.const_ptrs[slot.index]
    for t in exe.thunks:
      if type(t) is ex.CopyThunk:
        if t.src != t.dst and t.shape.nbytes:
          prog.extend([_COPY, addr(t.dst), addr(t.src), t.shape.nbytes])
        continue
      if _native_conditional(t):
        self._conditional(prog, t, addr)
        continue
      if type(t) is ex.ScatterThunk and t.kernel.nchunks <= 1:
        for src, dst, shape in t.copies:     # the operand into the output, then scatter
          if src != dst and shape.nbytes:
            prog.extend([_COPY, addr(dst), addr(src), shape.nbytes])
        t = t.kernel
      if not (type(t) is ex.KernelThunk and t.nchunks <= 1):
        self._python_call(prog, t, self._frame(exe, params, outs, arena))
        continue
      arr = (ctypes.c_void_p * max(len(t.slots), 1))(*[addr(sl) for sl in t.slots])
      self.keep.append(arr)
      if t.outer > 0:
        prog.extend([_CALL, t.address, ctypes.addressof(arr), t.outer])

  def _frame(self, exe, params: list, outs: list, arena: np.ndarray) -> ex.Frame:
    """A frame over one emission's fixed buffers, for thunks run through Python."""
    def at(addr: int, shape: hlo.Shape) -> np.ndarray:
      n = shape.nbytes
      return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(addr)) if n and addr \
          else np.zeros(max(n, 1), np.uint8)
    return ex.Frame([at(a, s) for a, s in zip(params, exe.param_shapes)], exe.consts,
                    exe.const_ptrs, [at(a, s) for a, s in zip(outs, exe.output_shapes)], arena,
                    arg_ptrs=list(params), out_ptrs=list(outs), arena_ptr=arena.ctypes.data)

  def _python_call(self, prog: list, t, frame: ex.Frame) -> None:
    """Append thunk `t` run by Python: the program calls back into the interpreter (ctypes
    takes the GIL). An exception it raises ends the loop (RET 2); `run` raises it."""
    def call(_bufs, _start, _stop):
      try:
        t.run(frame)
      except BaseException as e:  # noqa: BLE001 - raised again by `run`, outside the loop
        self.error = e
        self.failed[0] = 1
    fn = ex.KERNEL_CFUNC(call)
    self.keep.append(fn)
    prog.extend([_CALL, ctypes.cast(fn, ctypes.c_void_p).value, 0, 1])
    prog.extend([_BRZ, self.failed.ctypes.data, len(prog) + 5, _RET, 2])

  def _conditional(self, prog: list, t: "ControlFlowThunk", addr) -> None:
    """Append conditional thunk `t`: pick the branch by its index (pred: true -> branch 0;
    int32: k -> branch k, out of range -> the last), run it, continue after all branches.
    The branches read their operands where they live unless an output shares bytes with
    one (a branch writes its outputs before it has read every operand): then from copies."""
    operands = [(addr(s), sh.nbytes) for s, sh in zip(t.in_slots[1:], t.in_shapes[1:])]
    outs = [addr(s) for s in t.out_slots]
    spans = [(o, o + sh.nbytes) for o, sh in zip(outs, t.out_shapes) if sh.nbytes]
    if any(lo < hi2 and lo2 < hi for lo, hi in spans for p, n in operands if n
           for lo2, hi2 in [(p, p + n)]):
      copies = [_buffer(sh) for sh in t.in_shapes[1:]]
      self.keep.extend(copies)
      for c, (p, n) in zip(copies, operands):
        if n:
          prog.extend([_COPY, c.ctypes.data, p, n])
      params = [c.ctypes.data for c in copies]
    else:
      params = [p for p, _ in operands]
    index = addr(t.in_slots[0])
    n = len(t.subs)
    to_branch = []                           # (position of a jump target, branch)
    if t.in_shapes[0].dtype == np.bool_:
      prog.extend([_BRZ, index, 0])          # false -> branch 1; true falls into branch 0
      to_branch.append((len(prog) - 1, 1))
      order = [0, 1]
    else:
      for k in range(n - 1):
        prog.extend([_BREQ, index, k, 0])
        to_branch.append((len(prog) - 1, k))
      order = [n - 1] + list(range(n - 1))   # out of range falls into the last branch
    ends = []
    starts = {}
    for k in order:
      starts[k] = len(prog)
      self._calls(prog, t.subs[k].exe, params, outs)
      prog.extend([_JUMP, 0])
      ends.append(len(prog) - 1)
    for pos, k in to_branch:
      prog[pos] = starts[k]
    for pos in ends:
      prog[pos] = len(prog)

  def run(self, vals, outs) -> None:
    """Run from the carry `vals`, writing the final carry into `outs`."""
    a = self.states[0]
    for d, v in zip(a, vals):
      np.copyto(d, v)
    self.failed[0], self.error = 0, None
    result = self.fn(self.program.ctypes.data)
    if result == 2:
      error, self.error = self.error, None
      raise error
    final = self.states[result]
    for o, v in zip(outs, final):
      np.copyto(o, v)


def _straight(exe, in_branch: bool = False) -> bool:
  """Whether the generated loop can run `exe`: single-call kernels (scatters too), copies,
  conditionals it can branch over (`_native_conditional`), and inside a conditional's
  branch anything else too, through a Python call (`_GeneratedLoop._python_call`: a branch
  that reports an error or prints runs rarely or cheaply enough)."""
  for t in exe.thunks:
    if type(t) is ex.CopyThunk or (type(t) is ex.KernelThunk and t.nchunks <= 1) or \
        (type(t) is ex.ScatterThunk and t.kernel.nchunks <= 1):
      continue
    if not (in_branch or _native_conditional(t)):
      return False
  return True


def _native_conditional(t) -> bool:
  """Whether the generated loop branches over conditional thunk `t` itself: a pred or
  int32 index (two branches for a pred), branches it can run that write their outputs to
  their own output buffers."""
  if type(t) is not ControlFlowThunk or t.kind != "conditional":
    return False
  index = np.dtype(t.in_shapes[0].dtype)
  if index not in (np.dtype(np.bool_), np.dtype(np.int32)) or \
      (index == np.bool_ and len(t.subs) != 2):
    return False
  for sub in t.subs:
    e = sub.exe
    if e is None or not _straight(e, True) or any(s.index != k or s.kind != "output"
                                                  for k, s in enumerate(e.output_slots)):
      return False
  return True


def _count_fallback(error: Exception, module: hlo.Module, comp: hlo.Computation) -> None:
  """Count and log a called computation the backend could not compile, by the opcode of
  the instruction the error names (the backend's errors name it: `(%name)`), else by the
  error's type."""
  by_name = {i.name: i.opcode for c in module.computations for i in c.instrs}
  named = [by_name[n] for n in re.findall(r"%([\w.\-]+)", str(error)) if n in by_name]
  op = named[0] if named else type(error).__name__
  REFERENCE_FALLBACKS[op] += 1
  _logger.warning("ember's CPU backend cannot compile %s in %%%s (%s: %s); it runs on the "
                  "reference evaluator instead, slowly", op, comp.name,
                  type(error).__name__, error)


def _buffer(shape: hlo.Shape) -> np.ndarray:
  return ex._aligned_bytes(max(shape.nbytes, 1))[:shape.nbytes].view(
      np.dtype(shape.dtype)).reshape(shape.dims)


class ControlFlowThunk(ex.Thunk):
  """Runs a `while` (condition, then body, until the condition is false) or a
  `conditional` (the branch the index selects; out of range: the last) on compiled
  sub-executables; operands are read from, results written to, the frame's slots.
  `assignments`: those of the called computations' programs (BufferAssignment.called)."""

  def __init__(self, instr: hlo.Instr, in_slots, out_slots, assignments, flags=None,
               recorded=None, tiered: bool = False):
    self.kind = instr.opcode
    self.name = instr.name
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)
    self.in_shapes = [o.shape for o in instr.operands]
    self.out_shapes = list(instr.shape.elements if isinstance(instr.shape, hlo.TupleShape)
                           else [instr.shape])
    recorded = recorded or [None] * len(instr.called)
    self.trip_count = _trip_count(instr) if self.kind == "while" else 1
    self.subs = [_Sub(c, a, flags, r, tiered, self.trip_count)
                 for c, a, r in zip(instr.called, assignments, recorded)]
    self.native = [s.exe is not None for s in self.subs]
    self.loop = None                 # the generated loop, when the while qualifies
    self.loop_error = None           # why building it failed (debugging)
    self._build_loop()
    self._lock = threading.Lock()    # the generated loop's buffers serve one run at a time
    self.state_modes = _state_modes(self.subs[1]) if self.kind == "while" else None
    self.used = None                 # which outputs the program reads (add_to_plan)
    # an output in another element's operand buffer: written before that is read
    self.clobbers = _overlaps(self.in_slots, self.out_slots)
    self._second: list | None = None  # the second buffers of double-buffered elements

  def _build_loop(self) -> None:
    """The generated loop of a `while` whose condition and body qualify (_GeneratedLoop),
    for the sub-executables' current machine code (`built_for`: their thunk lists)."""
    if self.kind != "while":
      return
    cond, body = self.subs[0].exe, self.subs[1].exe
    self.built_for = (cond and cond.thunks, body and body.thunks)
    try:
      self.loop = _GeneratedLoop.build(cond, body, self.in_shapes)
    except Exception as e:  # noqa: BLE001 - the sub-executable loop below is always correct
      self.loop, self.loop_error = None, f"{type(e).__name__}: {e}"

  def _loop_current(self) -> bool:
    """Whether the generated loop points to the sub-executables' current code (a tier-up
    swaps it: the loop is then built again), its conditionals' branches included."""
    return all(e is None or e.thunks is t
               for e, t in zip((self.subs[0].exe, self.subs[1].exe), self.built_for)) and (
        self.loop is None or all(e.thunks is t for e, t in self.loop.exes))

  @ex.flushing   # (a computation on the reference evaluator computes as the kernels do)
  def run(self, frame: ex.Frame) -> None:
    # copies the carry in once and the result out once; a run already holding the loop's
    # buffers (another thread, or this one from a Python call inside the loop) takes the
    # sub-executables' path instead
    if self.loop is not None and self._lock.acquire(False):
      try:
        if not self._loop_current():
          self._build_loop()
        if self.loop is not None:
          self.loop.run([frame.view(s, sh) for s, sh in zip(self.in_slots, self.in_shapes)],
                        [frame.view(s, sh) for s, sh in zip(self.out_slots, self.out_shapes)])
          return
      finally:
        self._lock.release()
    if self.kind == "while" and all(self.native) and not _profiler.active:
      if not self.clobbers:
        self._run_in_place([frame.view(s, sh) for s, sh in zip(self.in_slots, self.in_shapes)],
                           [frame.view(s, sh) for s, sh in zip(self.out_slots, self.out_shapes)])
        return
    vals = [frame.view(s, sh).copy() for s, sh in zip(self.in_slots, self.in_shapes)]
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

  def _run_in_place(self, ins: list, outs: list) -> None:
    """The while over state buffers it owns, running the body's thunks straight on them
    (`Executable.run_into`: no allocation, no copy per iteration). Per element
    (`state_modes`): `invariant` (the body returns it unchanged: xs, constants) is read
    where the operand lives; `in_place` (the body computes it into its own buffer: ys by
    dynamic-update-slice) lives in the output from the start; `double` lives in the output
    and a second buffer, the body reading one and writing the other, iterations
    alternating. Copied: each updated element in once, and the result out once when it
    ended in the second buffer (or, for an invariant the program reads, from the operand)."""
    cond, body = self.subs[0].exe, self.subs[1].exe
    modes = self.state_modes
    second = self._second_buffers() if self._lock.acquire(False) else None
    try:
      if second is None:               # another run holds the thunk's own buffers
        second = [_buffer(sh) if m == "double" else None
                  for m, sh in zip(modes, self.out_shapes)]
      cur, nxt = [], []
      for m, i, o, b in zip(modes, ins, outs, second):
        if m == "invariant":
          cur.append(i), nxt.append(i)
          continue
        _copy(o, i)
        cur.append(o), nxt.append(o if b is None else b)
      ptr = ex._data_ptr
      cur_p, nxt_p = [ptr(a) for a in cur], [ptr(a) for a in nxt]
      pred = _buffer(cond.output_shapes[0])
      pred_p = [ptr(pred)]
      body_outs = [None if s.kind == "parameter" else 0 for s in body.output_slots]

      def targets(state, state_p):    # the body's outputs: the state not computed in place
        return ([None if o is None else state[k] for k, o in enumerate(body_outs)],
                [0 if o is None else state_p[k] for k, o in enumerate(body_outs)])
      into = (targets(nxt, nxt_p), targets(cur, cur_p))
      turn = 0
      while True:
        state, state_p = (cur, cur_p) if turn == 0 else (nxt, nxt_p)
        cond.run_into(state, state_p, [pred], pred_p)
        if not pred.reshape(-1)[0]:
          break
        body.run_into(state, state_p, *into[turn])
        turn ^= 1
      final = cur if turn == 0 else nxt
      used = self.used
      for k, (o, v) in enumerate(zip(outs, final)):
        if v is not o and (used is None or k in used):
          _copy(o, v)
    finally:
      if second is self._second:
        self._lock.release()

  def _second_buffers(self) -> list:
    if self._second is None:
      self._second = [_buffer(sh) if m == "double" else None
                      for m, sh in zip(self.state_modes, self.out_shapes)]
    return self._second


def _state_modes(body: _Sub) -> list[str] | None:
  """How the loop runner keeps each element of a while's state (see `_run_in_place`):
  from the body program's output slots (donated: `compilation._donate_carry`) and root."""
  if body.exe is None:
    return None
  entry = body.assignment.module.entry
  root = entry.root
  results = list(root.operands) if root.opcode == "tuple" else [root]
  modes = []
  for k, (slot, r) in enumerate(zip(body.exe.output_slots, results)):
    if slot.kind == "output":
      modes.append("double")
    elif r.opcode == "parameter" and r.attrs["number"] == k:
      modes.append("invariant")
    else:
      modes.append("in_place")
  return modes


def _overlaps(in_slots, out_slots) -> bool:
  """Whether an output's buffer overlaps another element's operand, or its own elsewhere
  than exactly (the runner writes the outputs before the loop has read every operand):
  slots of one buffer whose bytes meet."""
  buffers: dict = {}
  for j, s in enumerate(in_slots):
    buffers.setdefault((s.kind, s.index), []).append((j, s.offset, s.offset + s.size))
  return any((j != k or lo != o.offset) and lo < o.offset + o.size and o.offset < hi
             for k, o in enumerate(out_slots) if o.size
             for j, lo, hi in buffers.get((o.kind, o.index), ()))


def _copy(dst: np.ndarray, src: np.ndarray) -> None:
  if dst.size and ex._data_ptr(dst) != ex._data_ptr(src):
    np.copyto(dst, src)


def _trip_count(instr: hlo.Instr) -> int | None:
  """At most how many times a `while` runs its body, when its condition is `state[k] < N`
  (N a constant) and state[k] starts at a constant c (a scan's or a constant-bound
  fori_loop's counter, stepping by 1): N - c; else None (not known)."""
  root, env = instr.called[0].root, {}
  if root.opcode == "fusion":          # the condition's compare, wrapped as a kernel
    env = {id(p): root.operands[p.attrs["number"]] for p in root.called[0].params}
    root = root.called[0].root
  if root.opcode != "compare" or root.attrs.get("direction") != "LT":
    return None
  counter, limit = (env.get(id(o), o) for o in root.operands)
  if counter.opcode != "parameter" or limit.opcode != "constant" or limit.shape.dims:
    return None
  start = instr.operands[counter.attrs["number"]]
  if start.opcode != "constant" or start.shape.dims:
    return None
  return max(int(np.asarray(limit.attrs["value"])) - int(np.asarray(start.attrs["value"])), 0)


class _Serialized:
  """The sub-executables' bytes as a persistent-cache entry records them (None where not
  compiled), made when the entry is written: a tiered body's once its optimized code is in."""

  def __init__(self, subs: list):
    self.subs = subs

  def __iter__(self):
    return (s.serialized for s in self.subs)


def _outputs_read(entry: hlo.Computation, instr: hlo.Instr) -> set[int] | None:
  """The elements of `instr`'s tuple that `entry` reads (None: all of them)."""
  if not isinstance(instr.shape, hlo.TupleShape) or entry.root is instr:
    return None
  users = [u for u in entry.instrs if instr in u.operands]
  if any(u.opcode != "get-tuple-element" for u in users):
    return None
  return {u.attrs["index"] for u in users}


def add_to_plan(plan, instr: hlo.Instr) -> None:
  """The `_ThunkPlan` hook: one ControlFlowThunk for a `while`/`conditional`."""
  ins = [plan.slot(o) for o in instr.operands]
  outs = plan.slot(instr)
  outs = list(outs) if type(outs) is tuple else [outs]
  # plan.subs: instruction -> its sub-executables' bytes, recorded for the persistent cache
  # on a compile and replayed (no LLVM) when the plan is rebuilt from a cache entry
  recorded = getattr(plan, "subs", None)
  called = plan.assignment.called.get(instr.name)
  if called is None:
    raise CodegenError(f"%{instr.name} ({instr.opcode}): the buffer assignment has no programs "
                       "for the computations it calls (assign with compilation.assign_program)")
  thunk = ControlFlowThunk(instr, ins, outs, called, flags_lib.get(),
                           recorded.get(instr.name) if recorded is not None else None,
                           getattr(plan, "tier_loops", False))
  if recorded is not None:
    recorded[instr.name] = _Serialized(thunk.subs)
  thunk.used = _outputs_read(plan.assignment.module.entry, instr)
  plan.pending.append(lambda addr: thunk)

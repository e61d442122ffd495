"""Running an executable with one trace span per thunk, while a profiler trace is active
(the dispatcher's runs, and loop bodies' and branches' sub-executables inside them): each
span is named after its HLO instruction and carries that instruction's cost analysis, text
and op_name metadata (computed when the trace is exported, runtime/profiler/trace.py).
"""
from __future__ import annotations

from typing import Any

from ember._src.passes import analysis
from ember._src.hlo import graph as hlo
from ember._src.base import profiler_events as events


def execute(exe, comp, module_name: str, args, ptrs=None, label: str | None = None
            ) -> tuple[list, list]:
  """`exe.execute_ptrs(args, ptrs)` with one span per thunk, named after its HLO
  instruction in `comp` (the computation the executable runs), inside a span named
  `label` (default: the module's name; a loop body's or branch's computation name), so
  every span the executor records can be found in `Compiled.as_text()`. Runs on a frame
  of its own (the cached frame's direct kernel calls skip the thunk objects); `ptrs` (the
  arguments' known addresses) are not needed there."""
  info = _thunk_args(exe, comp, module_name)
  t_call = events.clock()
  frame = exe._frame(args)
  clock, tid = events.clock, events.tid()
  for thunk, targs in zip(exe.thunks, info):
    t0 = clock()
    thunk.run(frame)
    events.spans.append((tid, thunk.name, t0, clock(), targs))
  outs = exe._results(frame)
  out_ptrs = [frame.out_ptrs[s.index] if s.kind == "output" else frame.arg_ptrs[s.index]
              for s in exe.output_slots]
  events.record(label or module_name, t_call, events.clock(), {"hlo_module": module_name})
  return outs, out_ptrs


def _thunk_args(exe, comp, module_name: str) -> list:
  """Per thunk of `exe`: its span's args, computed when the trace stops (the first traced
  run of an executable does no analysis, so it is timed like the others)."""
  key = (__name__, id(exe), id(comp))
  got = events.per_trace.get(key)
  if got is None:
    by_name: dict = {}      # the computation's instructions by name, filled at first use
    got = events.per_trace[key] = (exe, [_Args(t, comp, by_name, module_name)
                                         for t in exe.thunks])
  return got[1]


class _Args(events.LazyArgs):
  """A thunk span's args, resolved by the export (once per thunk and trace)."""
  __slots__ = ("thunk", "comp", "by_name", "module_name", "value")

  def __init__(self, thunk, comp, by_name: dict, module_name: str):
    self.thunk, self.comp, self.by_name, self.module_name = thunk, comp, by_name, module_name
    self.value = None

  def resolve(self) -> dict:
    if self.value is None:
      if not self.by_name and self.comp is not None:
        self.by_name.update((i.name, i) for i in self.comp.instrs)
      self.value = instr_args(self.thunk, self.by_name.get(self.thunk.name), self.module_name)
    return self.value


def instr_args(thunk, instr, module_name: str) -> dict:
  """What a thunk's span says about its instruction: the cost analysis of that one
  instruction (flops, transcendentals, bytes accessed), its HLO text (`long_name`), its
  `op_name` metadata (named_scope paths) and, for a fusion, the op_names fused into it."""
  args: dict[str, Any] = {"hlo_module": module_name, "hlo_op": thunk.name,
                          "kind": thunk.kind}
  nchunks = getattr(thunk, "nchunks", None)
  if nchunks is not None:
    args["chunks"] = nchunks
  if instr is None:
    return args
  flops, trans = analysis.computation_costs(_One(instr))
  reads, writes = analysis.kernel_bytes(instr)
  args.update(flops=flops, transcendentals=trans,
              bytes_accessed=float(sum(b for b, _ in reads) + sum(writes)),
              long_name=hlo.instr_to_text(instr).strip())
  if instr.metadata.op_name:
    args["op_name"] = instr.metadata.op_name
  if instr.opcode == "fusion" and instr.called:
    fused = []
    for i in instr.called[0].instrs:
      n = i.metadata.op_name
      if n and n not in fused:
        fused.append(n)
    if fused:
      args["fused_op_names"] = ", ".join(fused)
  return args


class _One:
  """A one-instruction stand-in computation for analysis.computation_costs."""
  __slots__ = ("instrs",)

  def __init__(self, instr):
    self.instrs = [instr]

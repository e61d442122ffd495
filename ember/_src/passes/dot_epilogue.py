"""dot_epilogue: fuse a dot with the elementwise fusion that consumes it (an output fusion).

    %dot = f32[128,512] dot(%x, %w), ...
    %fusion = f32[128,512] fusion(%dot, %b), kind=kLoop, calls=%fused_computation    (relu(. + b))
  ->
    %fusion = f32[128,512] fusion(%x, %w, %b), kind=kOutput, calls=%fused_computation.1

where `%fused_computation.1` holds the dot (on its first parameters) and then the consumer's
instructions, the dot's value taking the place of the consumer's parameter (XLA's output
fusion: `kind=kOutput`, the dot inside). The CPU backend runs it as the dot on a block of
output rows followed at once by the epilogue over the same rows, in one call: small dots in
one generated kernel (blocks of ~64 rows, in L1: `backends/cpu/dot_kernels.py`), large ones
by BLAS then the epilogue kernel (`executable.DotEpilogueThunk`), the dot's rows written
into the output and the epilogue run in place there. No temp buffer holds the dot's result,
and `cost_analysis`'s bytes accessed of the fusion count its operands and output only.

When. A float/complex `dot` of the entry computation whose ONLY user is a loop (or input)
fusion that reads it at the same index only: every path from that parameter to the fusion's
root goes through elementwise ops of the root's shape (other operands, such as a bias row
or the pairwise distance's row norms, are read any way, through broadcasts or reductions). Then element i of
the output depends on element i of the dot alone, so any block of rows of the output can be
finished from the same rows of the dot. A dot that is an output, feeds several ops, or is
read through a broadcast/transpose/reduce stays as it is.

Value-preserving: the fused computation evaluates exactly the original dot and exactly the
consumer's instructions on the same operands; only where the dot's value lives changes.
"""
from __future__ import annotations

import re

import numpy as np

from ember._src.hlo import graph as hlo

__all__ = ["run", "DOT_KINDS"]

DOT_KINDS = "fc"       # float and complex dots (BLAS); integer dots are left alone
_SUFFIX = re.compile(r"(\.\d+)+$")      # `tanh.2` -> a fresh `tanh.N` for the clone


def _reads_at_same_index(comp: hlo.Computation, param: hlo.Instr) -> bool:
  """Does `param` reach the root of `comp` only through same-shape elementwise ops?"""
  root = comp.root
  if not isinstance(root.shape, hlo.Shape) or param.shape.dims != root.shape.dims:
    return False
  dims = root.shape.dims
  users = comp.users()
  ok: dict[int, bool] = {}
  for i in reversed(comp.instrs):
    if i is root:
      ok[i.id] = True
      continue
    us = users.get(i.id, [])
    ok[i.id] = bool(us) and all(ok.get(u.id, False) and u.opcode in hlo.ELEMENTWISE
                                and u.shape.dims == dims for u in us)
  return ok.get(param.id, False)


def _candidate(dot: hlo.Instr, users: dict[int, list[hlo.Instr]]) -> hlo.Instr | None:
  us = users.get(dot.id, [])
  if len(us) != 1 or np.dtype(dot.dtype).kind not in DOT_KINDS:
    return None
  f = us[0]
  if f.opcode != "fusion" or f.attrs.get("kind") not in ("kLoop", "kInput"):
    return None
  comp = f.called[0]
  params = [comp.params[k] for k, o in enumerate(f.operands) if o is dot]
  if len(params) != 1 or not _reads_at_same_index(comp, params[0]):
    return None
  return f


def _build(module: hlo.Module, dot: hlo.Instr, f: hlo.Instr) -> hlo.Instr:
  """The kOutput fusion replacing `dot` and its consumer `f`."""
  old = f.called[0]
  comp = module.new_computation("fused_computation")
  comp.is_fusion = True
  operands: list[hlo.Instr] = []
  param_of: dict[int, hlo.Instr] = {}

  def param(o: hlo.Instr) -> hlo.Instr:
    if o.id not in param_of:
      n = len(operands)
      operands.append(o)
      param_of[o.id] = comp.add(hlo.Instr("parameter", o.shape, attrs={"number": n},
                                          name=f"param_{n}"))
    return param_of[o.id]

  lhs, rhs = (param(o) for o in dot.operands)
  inner = comp.add(hlo.Instr("dot", dot.shape, [lhs, rhs], dict(dot.attrs),
                             name=_SUFFIX.sub("", dot.name),
                             metadata=dot.metadata))
  clone: dict[int, hlo.Instr] = {}
  for p in old.params:                       # the consumer's parameters -> new ones / the dot
    o = f.operands[p.attrs["number"]]
    clone[p.id] = inner if o is dot else param(o)
  for i in old.instrs:
    if i.opcode == "parameter":
      continue
    c = hlo.Instr(i.opcode, i.shape, [clone[o.id] for o in i.operands], dict(i.attrs),
                  list(i.called), name=_SUFFIX.sub("", i.name), metadata=i.metadata)
    clone[i.id] = comp.add(c)
  comp.root = clone[old.root.id]
  comp.sort_and_prune()
  return hlo.Instr("fusion", f.shape, operands, {"kind": "kOutput"}, [comp], name=f.name,
                   metadata=f.metadata)


def run(module: hlo.Module, flags=None) -> hlo.Module:
  """Fuse each eligible dot of the entry computation into its consumer (module docstring)."""
  entry = module.entry
  users = entry.users()
  fused: dict[int, hlo.Instr] = {}           # consumer id -> its kOutput replacement
  for i in entry.instrs:
    if i.opcode == "dot":
      f = _candidate(i, users)
      if f is not None:
        fused[f.id] = _build(module, i, f)
  if not fused:
    return module
  entry.instrs = [fused.get(i.id, i) for i in entry.instrs]
  for i in entry.instrs:                     # users of a replaced consumer (new ones too)
    i.operands = [fused.get(o.id, o) for o in i.operands]
  entry.root = fused.get(entry.root.id, entry.root)
  entry.sort_and_prune()                     # the fused dots are dead now
  module.prune_computations()
  return module

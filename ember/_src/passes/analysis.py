"""Cost and memory analysis of a compiled module: what `Compiled.cost_analysis()` and
`Compiled.memory_analysis()` report. Numbers are counted on the module given (the optimized
one for `Compiled`), never estimated from the source.

cost_analysis(module) -> dict, with JAX 0.12's keys:
* `flops`: 1 per element per elementwise op that is neither transcendental nor free
  (`hlo.FREE`: convert, copy, ...), compare/select/clamp included; 2*M*N*K per dot (batch
  dimensions included); a reduce costs (input elements - output elements) * the ops of its
  `to_apply`; sort/top-k n*ceil(log2 n) over the operand's n elements (XLA's formula); scatter
  the update computation's ops per update element; data movement (broadcast, reshape,
  transpose, slice, pad, concatenate, gather, iota, constants) 0. Fusions count the ops inside
  them, each once per element of its shape (as XLA does; a cheap op that a fusion re-evaluates
  through a broadcast is not counted again).
* `transcendentals`: elements produced by `hlo.TRANSCENDENTAL` ops, counted the same way.
* `bytes accessed`: for every kernel of the entry computation (each fusion, dot, sort, copy,
  ...; also each raw op of an unfused module) the bytes it reads from each operand plus the
  bytes it writes. A kernel reads each operand once: the whole operand, or only the part it
  touches when it reads it through slices (`x[:, 10:20]` reads 10 columns); a scalar is 4
  bytes (f32). tuple, get-tuple-element, optimization-barrier, parameters and constants are
  not kernels and access nothing.
* `bytes accessed{i}{}`: the part of that read from operand i of the kernels (summed over
  kernels, as XLA keys it); `bytes accessedout{}` the bytes written, with `bytes
  accessedout{k}` per element of tuple-shaped kernel results; `utilization{i}{}` the
  fraction of operand i's elements the kernels touch, summed over kernels.
  Unlike XLA, which drops zero entries, `flops`, `transcendentals`, `bytes accessed` and
  `bytes accessedout{}` are always present.

memory_analysis(module, assignment, code_size) -> CompiledMemoryStats, JAX's record (same
field names and printed form) filled from the real `BufferAssignment`.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from ember._src.hlo import graph as hlo
from ember._src.passes.fusion import FUSIBLE, ROOT_ONLY, read_factor

__all__ = ["cost_analysis", "computation_costs", "kernel_bytes", "memory_analysis",
           "CompiledMemoryStats"]

_NOT_KERNELS = {"parameter", "constant", "tuple", "get-tuple-element", "optimization-barrier"}


def _n(shape) -> int:
  return shape.size if isinstance(shape, hlo.Shape) else shape.elements[0].size


def computation_costs(comp: hlo.Computation, transcendental=hlo.TRANSCENDENTAL
                      ) -> tuple[float, float]:
  """(flops, transcendentals) of one evaluation of `comp` (fusions and calls included);
  `transcendental`: the elementwise ops counted as transcendentals (the others as flops)."""
  flops = trans = 0.0
  for i in comp.instrs:
    op = i.opcode
    if op in hlo.ELEMENTWISE:
      if op in transcendental:
        trans += _n(i.shape)
      elif op not in hlo.FREE:
        flops += _n(i.shape)
    elif op == "reduce":
      calls = max(_n(i.operands[0].shape) - _n(i.shape), 0)
      f, t = computation_costs(i.called[0], transcendental)
      flops, trans = flops + calls * f, trans + calls * t
    elif op == "reduce-window":            # the computation once per window element
      calls = _n(i.shape) * (1 if hlo.scan_window(i) else  # a scan: once per element
                             math.prod(i.attrs["window_dimensions"]))
      f, t = computation_costs(i.called[0], transcendental)
      flops, trans = flops + calls * f, trans + calls * t
    elif op == "dot":
      flops += _dot_flops(i)
    elif op in ("sort", "top-k"):
      n = _n(i.operands[0].shape)
      flops += n * math.ceil(math.log2(n)) if n > 1 else 0
    elif op == "fft":   # XLA's count: 2 flops per FMA, 4 FMAs per complex multiply
      logs = math.prod(max(n, 1).bit_length() - 1 for n in i.attrs["fft_length"])
      flops += 8 * logs * _n(i.operands[0].shape)
    elif op == "scatter":
      updates = i.operands[len(i.operands) // 2 + 1]     # operands..., indices, updates...
      f, t = computation_costs(i.called[0], transcendental)
      flops, trans = flops + _n(updates.shape) * f, trans + _n(updates.shape) * t
    elif op in ("fusion", "call", "while"):
      for c in i.called:
        f, t = computation_costs(c, transcendental)
        flops, trans = flops + f, trans + t
    elif op == "conditional":
      f, t = max((computation_costs(c, transcendental) for c in i.called), default=(0.0, 0.0))
      flops, trans = flops + f, trans + t
  return flops, trans


def _dot_flops(dot: hlo.Instr) -> float:
  lhs = dot.operands[0].shape.dims
  return 2.0 * _n(dot.shape) * math.prod(lhs[d] for d in dot.attrs.get("lhs_contracting_dims", ()))


def dot_flops(comp: hlo.Computation) -> float:
  """The flops of the dots in `comp` (fusions and calls included, loop bodies once)."""
  return sum(_dot_flops(i) if i.opcode == "dot" else
             sum(dot_flops(c) for c in i.called) if i.opcode in ("fusion", "call", "while") else 0.0
             for i in comp.instrs)


def _fused_fractions(comp: hlo.Computation) -> dict[int, float]:
  """Parameter number -> fraction of its elements the fused computation touches (1.0 unless
  it is read only through slices and the like)."""
  users = comp.users()
  frac = {comp.root.id: 1.0}
  for i in reversed(comp.instrs):
    if i is comp.root:
      continue
    f = 0.0
    for u in users.get(i.id, []):
      for k, o in enumerate(u.operands):
        if o is i and u.id in frac:    # a dot (kOutput fusion) reads its operands whole
          f += 1.0 if u.opcode == "dot" else frac[u.id] * read_factor(u, k)[0]
    frac[i.id] = min(1.0, f)
  return {p.attrs["number"]: frac.get(p.id, 0.0) for p in comp.params}


def kernel_bytes(instr: hlo.Instr) -> tuple[list[tuple[float, float]], list[float]]:
  """What one entry-level kernel accesses: per operand (bytes read, fraction touched), and
  the bytes written per output element."""
  if instr.opcode == "fusion":
    fr = _fused_fractions(instr.called[0])
    fractions = [fr.get(k, 0.0) for k in range(len(instr.operands))]
  elif instr.opcode in FUSIBLE or instr.opcode in ROOT_ONLY:
    fractions = [min(1.0, read_factor(instr, k)[0]) for k in range(len(instr.operands))]
  else:
    fractions = [1.0] * len(instr.operands)
  reads = [(f * o.shape.nbytes, f) for f, o in zip(fractions, instr.operands)]
  s = instr.shape
  writes = [e.nbytes for e in s.elements] if isinstance(s, hlo.TupleShape) else [s.nbytes]
  return reads, writes


def cost_analysis(module: hlo.Module) -> dict[str, float]:
  """JAX's `cost_analysis()` dict for `module` (see the module docstring)."""
  entry = module.entry
  flops, trans = computation_costs(entry)
  out: dict[str, float] = {"flops": float(flops), "transcendentals": float(trans)}
  per_operand: dict[int, float] = {}
  utilization: dict[int, float] = {}
  written: dict[int, float] = {}
  total_out = 0.0
  for i in entry.instrs:
    if i.opcode in _NOT_KERNELS:
      continue
    reads, writes = kernel_bytes(i)
    for k, (b, f) in enumerate(reads):
      per_operand[k] = per_operand.get(k, 0.0) + b
      utilization[k] = utilization.get(k, 0.0) + f
    total_out += sum(writes)
    if isinstance(i.shape, hlo.TupleShape):
      for k, w in enumerate(writes):
        written[k] = written.get(k, 0.0) + w
  out["bytes accessed"] = float(sum(per_operand.values()) + total_out)
  for k in sorted(per_operand):
    out[f"bytes accessed{k}{{}}"] = float(per_operand[k])
    out[f"utilization{k}{{}}"] = float(utilization[k])
  out["bytes accessedout{}"] = float(total_out)
  for k in sorted(written):
    out[f"bytes accessedout{{{k}}}"] = float(written[k])
  return out


class CompiledMemoryStats(NamedTuple):
  """JAX's `Compiled.memory_analysis()` record (its printed form is JAX's str())."""
  generated_code_size_in_bytes: int = 0
  argument_size_in_bytes: int = 0
  output_size_in_bytes: int = 0
  alias_size_in_bytes: int = 0
  temp_size_in_bytes: int = 0
  host_generated_code_size_in_bytes: int = 0
  host_argument_size_in_bytes: int = 0
  host_output_size_in_bytes: int = 0
  host_alias_size_in_bytes: int = 0
  host_temp_size_in_bytes: int = 0

  @property
  def total_allocation_bytes(self) -> int:
    """Arguments + outputs + temps, aliased bytes counted once (JAX's field of that name)."""
    return (self.argument_size_in_bytes + self.output_size_in_bytes + self.temp_size_in_bytes
            - self.alias_size_in_bytes)


def memory_analysis(module: hlo.Module, assignment, code_size: int = 0) -> CompiledMemoryStats:
  """Sizes from the buffer assignment of `module`; `code_size` is the machine code's size."""
  del module   # the assignment already describes it
  return CompiledMemoryStats(
      generated_code_size_in_bytes=int(code_size),
      argument_size_in_bytes=int(assignment.argument_size),
      output_size_in_bytes=int(assignment.output_size),
      alias_size_in_bytes=int(assignment.alias_size),
      temp_size_in_bytes=int(assignment.temp_size))

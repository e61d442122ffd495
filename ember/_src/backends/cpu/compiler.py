"""compile_module: an optimized HLO module + its buffer assignment -> an Executable.

All kernels of the module (one per fusion, one per scatter) go into ONE LLVM module, which
is optimized and compiled (llvm_jit.py) at the LLVM tier of `flags.opt_level`
(`llvm_jit.LLVM_TIERS`; default 3: O1 simplification then the loop and SLP vectorizers; 0,
the quick tier of `jax_disable_most_optimizations`: no IR optimization, fast instruction
selection) once for the host CPU (its name and features, so AVX2/AVX-512 are used where
present). The object code is loaded into an MCJIT engine kept alive by the Executable. Dots
run through NumPy (BLAS), small float dots through generated kernels (dot_kernels.py); dot
output fusions run the dot block by block, each block followed by its epilogue kernel;
sorts and top-k run through NumPy, copies through np.copyto.

With `--dump_to=DIR` the compile driver writes what `artifacts(exe)` lists:
`ir-no-opt.ll` (the generated IR), `ir-with-opt.ll`, `s` (assembly) and
`cpu_after_optimizations-buffer-assignment.txt`, for the module and each loop body/branch.
"""
from __future__ import annotations

import base64
import functools
import glob
import hashlib
import json
import os
import re
import time
from typing import Iterator, Sequence

import numpy as np
from llvmlite import ir

from ember._src.base import dtypes, flags as flags_lib
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.backends.cpu import denormals, dot_kernels
from ember._src.backends.cpu.codegen import ir_types
from ember._src.backends.cpu.codegen.abi import KernelInfo
from ember._src.backends.cpu.codegen.ir_types import CodegenError
from ember._src.backends.cpu.codegen.kernels import KernelBuilder, in_place_update, wrap_as_fusion
from ember._src.backends.cpu import executable as ex
from ember._src.backends.cpu import (control_flow, cost_model, fft_thunks, host, linalg_thunks,
                                     llvm_jit, mathlib)
from ember._src.backends.cpu import libcalls  # noqa: F401 -- its float16 helpers, for llvm_jit
from ember._src.backends.cpu import runtime_cache, tiering
from ember._src.passes.buffer_assignment import Slot
from ember._src.reference import sorting

__all__ = ["compile_module", "CodegenError", "serialize_executable", "deserialize_executable",
           "artifacts"]

# Opcodes the entry computation may hold that need no code (views of other buffers or data).
_NO_CODE = {"parameter", "constant", "tuple", "get-tuple-element", "optimization-barrier"}
# Opcodes a fusion may contain: a lone one in the entry is wrapped into a kernel of its own.
_FUSIBLE = hlo.ELEMENTWISE | {"broadcast", "reshape", "transpose", "reverse", "slice",
                              "dynamic-slice", "dynamic-update-slice", "concatenate", "pad",
                              "iota", "gather", "reduce", "reduce-window"}
# Ops with no code when their result is float0 (a kernel cannot load or store it).
_FLOAT0_OK = _FUSIBLE | {"fusion", "copy"}

# --------------------------------------------------------------------------------------
# Slots and aliasing
# --------------------------------------------------------------------------------------

def _slots(assignment, instr: hlo.Instr) -> list:
  s = assignment.slot(instr)
  return list(s) if type(s) is tuple else [s]


def _in_place(in_slots: list, out_slots: list) -> dict[int, int]:
  """Operands whose buffer IS an output's (the buffer assignment computes in place): the
  kernel reads them through the output pointer, so LLVM sees one pointer read then written
  at the same index (vectorizable) instead of two pointers that might overlap."""
  same = {}
  for k, s in enumerate(in_slots):
    for j, o in enumerate(out_slots):
      if s.size and s.kind == o.kind and s.index == o.index and s.offset == o.offset:
        same[k] = j
  return same


# Once a kernel's body is inlined, each noalias argument is a scope that every access
# through the other arguments lists: n noalias arguments cost n^2 metadata (3,000 inputs:
# ~20 MB of IR and seconds of LLVM). Read-only inputs gain little once the outputs are
# noalias, so a kernel with more inputs than this marks only its outputs.
_MAX_NOALIAS_INPUTS = 16


def _noalias(in_slots: list, out_slots: list, in_place: dict[int, int] | None = None
             ) -> list[bool]:
  """`noalias` is valid for a pointer whose memory no other used pointer of the call
  touches while one of them writes: inputs may share (they are only read); outputs may not
  overlap anything else. Inputs read through an output pointer (`in_place`) are unused."""
  in_place = in_place or {}
  used_in = [s for k, s in enumerate(in_slots) if k not in in_place]
  many = len(in_slots) > _MAX_NOALIAS_INPUTS
  flags = [not many and k not in in_place and not any(s.overlaps(o) for o in out_slots)
           for k, s in enumerate(in_slots)]
  for k, s in enumerate(out_slots):
    others = used_in + out_slots[:k] + out_slots[k + 1:]
    flags.append(not any(s.overlaps(o) for o in others))
  return flags


# --------------------------------------------------------------------------------------
# Sort: recognise JAX's comparator (lexicographic total order over the first keys)
# --------------------------------------------------------------------------------------

def _probe(dt, n: int, rng) -> np.ndarray:
  dt = np.dtype(dt)
  kind = ir_types.kind(dt)
  if kind == "f":
    pool = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0],
                    np.float64)
    return pool[rng.integers(0, len(pool), n)].astype(dt)
  if kind == "c":
    re = _probe(np.float64, n, rng)
    im = _probe(np.float64, n, rng)
    with np.errstate(invalid="ignore"):   # 1j * inf: a NaN real part, a fine probe
      return (re + 0j).astype(dt) + (1j * np.where(np.isnan(im), 0, im)).astype(dt)
  if kind == "b":
    return rng.integers(0, 2, n).astype(bool)
  info = np.iinfo(dt)
  pool = np.array([info.min, info.max, 0, 1, 2, info.max // 2], dtype=dt)
  return pool[rng.integers(0, len(pool), n)]


def sort_num_keys(instr: hlo.Instr) -> int | None:
  """The number of leading key operands when the sort's comparator orders exactly as
  lax.sort's (checked bit for bit on probe data against the reference evaluator); None
  otherwise (the thunk then runs the reference evaluator's comparator sort)."""
  if not instr.called:
    return instr.attrs.get("num_keys", 1)
  comp = instr.called[0]
  used = {o.attrs["number"] // 2 for i in comp.instrs for o in i.operands
          if o.opcode == "parameter"}
  if comp.root.opcode == "parameter":
    used.add(comp.root.attrs["number"] // 2)
  k = len(used)
  if not k or sorted(used) != list(range(k)):
    return None
  n = 48
  rng = np.random.default_rng(0)
  probes = [_probe(o.dtype, n, rng) if j < k else (np.arange(n) % 2 == 1 if o.dtype == bool
                                                   else np.arange(n).astype(o.dtype))
            for j, o in enumerate(instr.operands)]
  shapes = [hlo.Shape(np.dtype(o.dtype), (n,)) for o in instr.operands]
  params = [hlo.Instr("parameter", s, attrs={"number": j}) for j, s in enumerate(shapes)]
  tupled = isinstance(instr.shape, hlo.TupleShape)
  fake = hlo.Instr("sort", hlo.TupleShape(tuple(shapes)) if tupled else shapes[0], params,
                   dict(instr.attrs, dimension=0), [comp])
  try:
    ref = hlo_eval.eval_instr(fake, probes)
  except Exception:   # noqa: BLE001 - any failure: the reference path decides at run time
    return None
  ref = list(ref) if tupled else [ref]
  fast = sorting.sort(*probes, dimension=0, is_stable=True, num_keys=k)
  same = all(np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8))
             for a, b in zip(ref, fast))
  return k if same else None


# --------------------------------------------------------------------------------------
# Thunks of the entry computation's instructions
# --------------------------------------------------------------------------------------

class _ThunkPlan:
  """Walks the entry computation in schedule order: emits kernels into the LLVM module and
  records, per instruction, a factory that builds its thunk once the symbols have
  addresses (`pending`: callables taking `addr(symbol) -> int`)."""

  def __init__(self, assignment, kernels: KernelBuilder, sort_keys=None, subs=None):
    self.assignment, self.kernels = assignment, kernels
    self.pending: list = []
    self.sort_keys: dict = dict(sort_keys or {})   # sort name -> num_keys (recorded/replayed)
    # while/conditional name -> its sub-executables' serialized bytes (control_flow.py;
    # recorded/replayed, so a persistent-cache hit compiles no loop body)
    self.subs: dict = dict(subs or {})
    self.kernel_infos: list = []                   # every KernelInfo, for serialization
    self.tier_loops = False     # whether loop bodies and branches may be tiered (compile_module)

  def slot(self, instr: hlo.Instr):
    return self.assignment.slot(instr)

  def add(self, instr: hlo.Instr) -> None:
    op = instr.opcode
    if op in _NO_CODE or (op in _FLOAT0_OK and _all_float0(instr.shape)):
      return      # float0 values (tangents of integers) have no bytes to compute
    if op == "fusion" and instr.attrs.get("kind") == "kOutput":
      self.output_fusion(instr)
    elif op in ("fusion", "dot", "copy", "sort", "top-k", "scatter"):
      getattr(self, op.replace("-", "_"))(instr)
    elif op in _FUSIBLE:
      self.fusion(instr, wrap_as_fusion(instr))
    elif op in ("while", "conditional"):   # loops over sub-executables (control_flow.py)
      control_flow.add_to_plan(self, instr)
    elif op == "custom-call" and linalg_thunks.supported(instr):   # LAPACK-style targets
      linalg_thunks.add_to_plan(self, instr)
    elif op == "fft":                                              # NumPy's pocketfft
      fft_thunks.add_to_plan(self, instr)
    else:
      raise CodegenError(f"ember's CPU backend cannot compile {op} (%{instr.name}) yet"
                         + (f" (custom call target {instr.attrs.get('target')!r})"
                            if op == "custom-call" else ""))

  def fusion(self, instr: hlo.Instr, comp: hlo.Computation | None = None) -> None:
    ins = [self.slot(o) for o in instr.operands]
    if any(type(s) is tuple for s in ins):
      raise CodegenError(f"fusion %{instr.name} has a tuple-shaped operand; the CPU "
                         "backend expects array operands")
    outs = _slots(self.assignment, instr)
    same = _in_place(ins, outs)
    comp = comp or instr.called[0]
    info = self.kernels.fusion(instr.name, comp, _noalias(ins, outs, same), same)
    self.kernel_infos.append(info)
    cost = cost_model.kernel_cost(instr, comp)   # recomputed on replay, never serialized
    window = in_place_update(comp, same)
    if window is not None:     # the kernel moves the update window's bytes only
      cost = cost._replace(bytes=cost.bytes * window.operands[1].shape.nbytes
                           / max(window.shape.nbytes, 1))
    self.pending.append(lambda addr: ex.KernelThunk(instr.name, addr(info.name), ins + outs,
                                                    info.outer, info.splittable, cost))

  def _dot_kernel(self, name: str, emit, key: tuple) -> KernelInfo:
    """A kernel emitted by `emit(llvm_module)` (dot_kernels; shared by the dots whose
    `key` (layout, operand positions, epilogue symbol) is equal), or its recorded facts when
    replaying a serialized plan."""
    if isinstance(self.kernels, KernelBuilder):
      info = self.kernels.shared(("dot",) + key, name, lambda: emit(self.kernels.module))
    else:
      info = self.kernels.fusion(name, None, None)
    self.kernel_infos.append(info)
    return info

  def dot(self, instr: hlo.Instr) -> None:
    """Float dots BLAS runs slower (dot_kernels.generated_kernel_ok): a generated
    register-blocked kernel; the others: BLAS."""
    l, r = (self.slot(o) for o in instr.operands)
    out = self.slot(instr)
    lay = dot_kernels.dot_layout(instr)
    if not dot_kernels.generated_kernel_ok(lay, gram=dot_kernels.is_gram(instr)):
      self.pending.append(lambda addr: ex.DotThunk(instr, l, r, out))
      return
    self._generated_dot(instr.name, lay, [l, r, out])

  def _generated_dot(self, name: str, lay: dot_kernels.DotLayout, slots: list) -> None:
    """A generated dot kernel without epilogue on `slots` (A, B, C), split across threads by
    rows or by column panels (dot_kernels.split_by_columns, a function of the layout, so
    the kernel is shared by every such dot of the module whatever the caller)."""
    cols = dot_kernels.split_by_columns(lay)
    info = self._dot_kernel(name, lambda m: dot_kernels.emit_dot_kernel(
        m, name, lay, 0, 1, 2, by_columns=cols), (lay,))
    cost = cost_model.KernelCost(dot_kernels.dot_bytes(lay), 0.0, 0.0,
                                 dot_flops=dot_kernels.dot_flops(lay), dot_by_columns=cols)
    self.pending.append(lambda addr: ex.KernelThunk(name, addr(info.name), slots,
                                                    info.outer, info.splittable, cost))

  def output_fusion(self, instr: hlo.Instr) -> None:
    """A dot output fusion (passes/dot_epilogue.py): the epilogue becomes a kernel of its
    own (parameters: the operands it reads, then the dot's value); the dot runs block by
    block, each block followed by the epilogue over it, either inside one generated kernel
    (dot_kernels.generated_kernel_ok) or by BLAS (DotEpilogueThunk). The dot's value is
    computed in the output buffer when the dtypes agree and read in place."""
    dot, epi, used = dot_kernels.split_output_fusion(instr.called[0])
    ins = [self.slot(o) for o in instr.operands]
    out = self.slot(instr)
    if type(out) is tuple or any(type(s) is tuple for s in ins):
      raise CodegenError(f"output fusion %{instr.name} must have array operands and result")
    lay = dot_kernels.dot_layout(dot)
    in_place = np.dtype(dot.dtype) == np.dtype(instr.dtype)
    dot_slot = out if in_place else _scratch_slot(dot.shape)
    epi_ins = [ins[k] for k in used] + [dot_slot]
    same = {len(used): 0} if in_place else {}
    epi_name = instr.name + ".epilogue"
    einfo = self.kernels.fusion(epi_name, epi, _noalias(epi_ins, [out], same), same)
    self.kernel_infos.append(einfo)
    if not einfo.splittable or einfo.outer != lay.outer:   # no row blocks: one block
      lay = lay._replace(rows_per_unit=None, cols_per_unit=None)
    lhs, rhs = (o.attrs["number"] for o in dot.operands)
    # a stack tile of C holds a block of units; without units of rows or columns the
    # generated kernel does not apply and BLAS computes the whole dot at once
    units = lay.rows_per_unit is not None or lay.cols_per_unit is not None
    tile = 0 if in_place or not units else (
        dot_kernels.block_units(lay) * dot_kernels.unit_elements(lay) * lay.dtype.itemsize)
    cost = cost_model.kernel_cost(instr, epi)   # recomputed on replay, never serialized
    if dot_kernels.generated_kernel_ok(lay, tile, fused=True, gram=dot_kernels.is_gram(dot)):
      if dot_kernels.split_by_columns(lay, epilogue=True, in_place=in_place):
        # threads split the dot by columns, so the epilogue runs after it, as a fusion
        self._generated_dot(instr.name, lay, [ins[lhs], ins[rhs], out])
        self.pending.append(lambda addr: ex.KernelThunk(
            epi_name, addr(einfo.name), epi_ins + [out], einfo.outer, einfo.splittable, cost))
        return
      n = len(ins)
      e = dot_kernels.Epilogue(einfo.name, tuple(used), in_place)
      info = self._dot_kernel(instr.name, lambda m: dot_kernels.emit_dot_kernel(
          m, instr.name, lay, lhs, rhs, n, e), (lay, lhs, rhs, n, e))
      cost = cost._replace(dot_flops=dot_kernels.dot_flops(lay))
      self.pending.append(lambda addr: ex.KernelThunk(instr.name, addr(info.name),
                                                      ins + [out], info.outer,
                                                      info.splittable, cost))
      return
    shift_name = instr.name + ".shifted"     # the epilogue on a block, for the thread pool
    shift = self._dot_kernel(shift_name, lambda m: dot_kernels.emit_range_shift(
        m, shift_name, einfo.name, len(epi_ins) + 1), (einfo.name, len(epi_ins) + 1))
    dslots = (ins[lhs], ins[rhs], out if in_place else None)
    self.pending.append(lambda addr: ex.DotEpilogueThunk(
        instr.name, ex.DotThunk(dot, *dslots),
        ex.KernelThunk(einfo.name, addr(einfo.name), epi_ins + [out], einfo.outer,
                       einfo.splittable, cost),
        len(used), out if in_place else None, lay.rows_per_unit, addr(shift.name)))

  def copy(self, instr: hlo.Instr) -> None:
    src, dst = self.slot(instr.operands[0]), self.slot(instr)
    self.pending.append(lambda addr: ex.CopyThunk(instr.name, src, dst, instr.shape))

  def sort(self, instr: hlo.Instr) -> None:
    ins = [self.slot(o) for o in instr.operands]
    outs = _slots(self.assignment, instr)
    nk = self.sort_keys[instr.name] if instr.name in self.sort_keys else sort_num_keys(instr)
    self.sort_keys[instr.name] = nk
    self.pending.append(lambda addr: ex.SortThunk(instr, ins, outs, nk))

  def top_k(self, instr: hlo.Instr) -> None:
    x = self.slot(instr.operands[0])
    outs = _slots(self.assignment, instr)
    self.pending.append(lambda addr: ex.TopKThunk(instr, x, outs))

  def scatter(self, instr: hlo.Instr) -> None:
    """The outputs start as copies of the operands (unless in place); the kernel then
    read-modify-writes them from the indices and updates."""
    ins = [self.slot(o) for o in instr.operands]
    outs = _slots(self.assignment, instr)
    n = len(outs)
    info = self.kernels.scatter(instr.name, instr, _noalias(ins, outs))
    self.kernel_infos.append(info)
    copies = [(s, d, o.shape) for s, d, o in zip(ins[:n], outs, instr.operands[:n])]
    cost = cost_model.kernel_cost(instr, wrap_as_fusion(instr))
    self.pending.append(lambda addr: ex.ScatterThunk(
        instr, ex.KernelThunk(info.name, addr(info.name), ins + outs, info.outer,
                              info.splittable, cost), copies))


def _all_float0(shape) -> bool:
  elements = shape.elements if isinstance(shape, hlo.TupleShape) else (shape,)
  return all(np.dtype(e.dtype) == dtypes.float0 for e in elements)


def _scratch_slot(shape: hlo.Shape):
  """A stand-in slot for a dot value that lives in a thunk's own scratch memory (never a
  buffer of the assignment: it overlaps none of them)."""
  return Slot("scratch", -1, 0, shape.nbytes)


# --------------------------------------------------------------------------------------
# compile_module
# --------------------------------------------------------------------------------------

def _shape_leaves(shape) -> list:
  return [shape] if isinstance(shape, hlo.Shape) else [s for x in shape for s in _shape_leaves(x)]


# What the backend compiles of the 8-bit floats (codegen/float8.py: float32 registers, each
# result rounded): elementwise ops and moving elements; not reductions, dots, sorts, ...
_FLOAT8_OPCODES = (hlo.ELEMENTWISE - {"next-after", "reduce-precision"}) | {
    "parameter", "constant", "broadcast", "reshape", "transpose", "slice", "dynamic-slice",
    "dynamic-update-slice", "concatenate", "pad", "reverse", "tuple", "get-tuple-element",
    "bitcast", "fusion", "iota"}


def _check_dtypes(module: hlo.Module) -> None:
  """The backend has no code for ml_dtypes' 4-bit floats and narrow integers (int2, int4,
  ...), nor for the 8-bit floats beyond _FLOAT8_OPCODES: a module that uses one fails here,
  with the fix, not deep in codegen."""
  for comp in module.computations:
    for instr in comp.instrs:
      narrow = [s.dtype for s in _shape_leaves(instr.shape) if s.dtype in dtypes.narrow_dtypes]
      narrow += [o.dtype for o in instr.operands if isinstance(o.shape, hlo.Shape)
                 and o.dtype in ir_types.FLOAT8]
      if narrow and (instr.opcode not in _FLOAT8_OPCODES
                     or any(np.dtype(d) not in ir_types.FLOAT8 for d in narrow)):
        dt = narrow[0]
        raise NotImplementedError(
            f"jit: ember's CPU backend does not compile {dt} (the {instr.opcode} {instr.name} "
            f"of {module.name} makes or reads one): of the 8- and 4-bit floats and 2- and "
            "4-bit integers it compiles only the 8-bit floats' elementwise operations and "
            "moves. Convert them outside the jitted function (x.astype(jnp.float32) in, "
            f".astype(jnp.{dt}) out), run without jit, or set "
            "ember.config.update('ember_jit_backend', 'interpreter') to run jitted functions "
            "on the reference interpreter.")


def compile_module(module: hlo.Module, assignment, flags=None,
                   tiered: bool | str = False, tier_loops: bool = False) -> ex.Executable:
  """Compile an optimized module (see docs/compiler.md for the contract) to an
  Executable. `assignment`: its buffer assignment, with those of the programs its loops and
  branches call (`BufferAssignment.called`; the compile driver makes it:
  compilation.assign_program); `flags` default to `ember._src.base.flags.get()` (opt_level).
  `tiered`: the tier the caller's run-time estimate lets it start at (tiering.pays:
  tiering.QUICK, or True; tiering.VECTOR_CALLS); a module that qualifies (tiering.py)
  starts there and is upgraded in the background (`exe.first_tier` says where it started,
  None: at the requested tier); with `tier_loops`, so does each loop body or branch that
  qualifies by itself (control_flow.py: a loop runs the first code until the swap)."""
  flags = flags or flags_lib.get()
  _check_dtypes(module)
  opt_level = getattr(flags, "opt_level", 3)
  times = {}
  t0 = time.perf_counter()
  llmod = ir.Module(name=module.name)
  plan = _ThunkPlan(assignment, KernelBuilder(llmod))
  plan.tier_loops = tier_loops
  for instr in module.entry.instrs:
    plan.add(instr)
  t1 = time.perf_counter()
  ir_text = str(llmod)
  times["llvm_ir"] = time.perf_counter() - t1
  times["codegen"] = t1 - t0
  start = tiering.QUICK if tiered is True else tiered
  if not llvm_jit.defines_code(ir_text):
    start = None             # thunks alone (a loop's): no code to start low and upgrade
  quick = _quick_kernels(ir_text, opt_level) if start else []
  if start == tiering.VECTOR_CALLS and (quick is not None or not _has_math(ir_text)):
    quick = []               # every kernel must qualify, and only math gains
  if quick is None:          # every kernel starts below the requested tier
    native = _native_code(plan, ir_text, 0 if start == tiering.QUICK else opt_level, times,
                          start=start)
  else:                      # the listed ones do (a mixed compile), the others are final
    native = _native_code(plan, ir_text, opt_level, times, quick=quick)
  exe = ex.Executable(module, assignment, native.pop("thunks"), native.pop("engine"), ir_text,
                      native.pop("asm_fn"), native.pop("code_size"),
                      optimized_ir=native.pop("optimized_ir"))
  exe.compile_times = times     # seconds per backend stage (see _jit)
  exe.cache_payload = native["cache_payload"]
  exe.first_tier = start if quick is None else tiering.QUICK if quick else None
  if quick is None or quick:
    tiering.submit(exe, lambda: _native_code(plan, ir_text, opt_level, {}, private=True))
  return exe


def artifacts(exe: ex.Executable) -> Iterator[tuple[str, str, str]]:
  """What `--dump_to` writes of a compiled executable, as (module name, file suffix, text):
  its LLVM IR before and after optimization, its assembly and its buffer assignment, then
  the same of the sub-executables its loops and branches run (control_flow.py)."""
  name = exe.module_name
  yield name, "ir-no-opt.ll", exe.llvm_ir
  yield name, "ir-with-opt.ll", exe.llvm_ir_optimized
  yield name, "s", exe.asm
  yield name, "cpu_after_optimizations-buffer-assignment.txt", exe.assignment.to_text()
  for thunk in exe.thunks:
    for sub in getattr(thunk, "subs", ()):     # a ControlFlowThunk's
      if sub.exe is not None:
        yield from artifacts(sub.exe)


def _native_code(plan: _ThunkPlan, ir_text: str, opt_level: int, times: dict,
                 private: bool = False, quick: Sequence[str] = (),
                 start: str | None = None) -> dict:
  """Machine code for the plan's IR at `opt_level` (the kernels `quick` at the quick tier;
  `start`: see `_jit`) and the plan's thunks bound to it: the fields `Executable.upgrade`
  takes."""
  engine, addr, code_size, opt_ir, obj = _jit(ir_text, opt_level, times, private, quick, start)
  # what serialize_executable needs to rebuild the executable without LLVM's passes
  payload = dict(obj=obj, kernels={k.name: (k.outer, k.splittable) for k in plan.kernel_infos},
                 aliases=plan.kernels.aliases, sort_keys=plan.sort_keys, subs=plan.subs,
                 code_size=code_size,
                 ir=ir_text, opt_ir=opt_ir, opt_level=opt_level)
  return dict(thunks=[make(addr) for make in plan.pending], engine=engine,
              asm_fn=functools.partial(llvm_jit.assembly, opt_ir, opt_level),
              code_size=code_size,
              optimized_ir=opt_ir, cache_payload=payload)


def _jit(ir_text: str, opt_level: int, times: dict | None = None, private: bool = False,
         quick: Sequence[str] = (), start: str | None = None):
  """Optimize and compile the module at `llvm_jit.LLVM_TIERS[opt_level]`, the kernels `quick`
  at the quick tier (opt 0), and load it (llvm_jit.load): (engine, symbol -> address, code
  size in bytes, the optimized IR text, the object code). Records seconds per stage in
  `times` (llvm_parse, llvm_optimize, llvm_ir_text, llvm_emit_object, llvm_load). A
  `private` compile is the tier-up worker's (llvm_jit.compile_ir). A large foreground module
  with several kernels is compiled in parts on two threads (`_parallel_parts`), as is a
  mixed-tier one. Tiered first code (`quick`; `start`: tiering.QUICK at opt 0,
  tiering.VECTOR_CALLS at llvm_jit.VECTOR_CALL_TIER) calls the process's optimized copies of
  the math functions (`_library_math`); never code that may be stored (the persistent cache,
  `jax_disable_most_optimizations`): another process lacks those symbols."""
  tier = llvm_jit.LLVM_TIERS[opt_level]
  times = {} if times is None else times
  if quick:
    rest = [k for k in _kernel_closures(ir_text) if k not in quick]
    text, quick_tier, internal = _part_job(ir_text, quick, rest, llvm_jit.LLVM_TIERS[0])
    compiled = llvm_jit.compile_parts(
        [(_library_math(text), quick_tier, internal), _part_job(ir_text, rest, quick, tier)],
        times)
  elif start == tiering.VECTOR_CALLS:
    compiled = llvm_jit.compile_whole(_library_math(ir_text, vector_calls=True), opt_level,
                                      times, private, tier=llvm_jit.VECTOR_CALL_TIER)
  else:
    if start == tiering.QUICK:   # its math calls the library's copies
      ir_text = _library_math(ir_text)
    if parts := None if private else _parallel_parts(ir_text):
      compiled = llvm_jit.compile_parts(
          [_part_job(ir_text, parts[k], parts[1 - k], tier) for k in range(2)], times)
    else:
      compiled = llvm_jit.compile_whole(ir_text, opt_level, times, private)
  return llvm_jit.load(compiled, opt_level, times)


# A module of at least this much IR text with 2+ kernels is compiled as two halves on two
# threads (`_part_job`: each half a module of only what its kernels are made of, a kernel of
# the other half that one of them calls, e.g. a dot kernel's epilogue, as an internal copy).
PARALLEL_MIN_IR_CHARS = 40_000


def _parallel_parts(ir_text: str) -> list[list[str]] | None:
  """The exported functions split in two halves of about equal IR text, or None when the
  module is small, has one kernel, or one core is all there is."""
  if len(ir_text) < PARALLEL_MIN_IR_CHARS or host.num_threads() < 2:
    return None
  fns, closures = _functions(ir_text), _kernel_closures(ir_text)
  if len(closures) < 2:
    return None
  sizes = sorted(((sum(len(fns[n][0]) for n in names), k) for k, names in closures.items()),
                 reverse=True)
  halves, weight = ([], []), [0, 0]
  for size, name in sizes:            # the larger kernels first, each to the lighter half
    k = int(weight[1] < weight[0])
    halves[k].append(name)
    weight[k] += size
  return list(halves) if all(halves) else None


# --- mixed tiers: a module whose reassociated reductions keep the rest from the quick tier

_FUNCTION = re.compile(r'^define (internal )?[^@\n]*@"?([^"(\n]+)"?\(.*?^}(?:\n|\Z)', re.M | re.S)
_REFERENCE = re.compile(r'@"?([\w.$-]+)"?')
# a call's masked vector variants (mathlib.outlined._call_if), named only in its attribute
_VARIANT = re.compile(r'_ZGV[^(,"]*\(([\w.$-]+)\)')


def _references(text: str) -> list[str]:
  """The global names a function's text refers to."""
  return _REFERENCE.findall(text) + _VARIANT.findall(text)


def _closure(fns: dict, roots) -> set[str]:
  """The functions of `fns` (name -> (text, exported)) that `roots` are made of: themselves
  and what they call or name as a call's vector variant, transitively."""
  seen, todo = set(roots), list(roots)
  while todo:
    for ref in _references(fns[todo.pop()][0]):
      if ref in fns and ref not in seen:
        seen.add(ref)
        todo.append(ref)
  return seen


@functools.lru_cache(maxsize=4)   # one module's: deciding and building its parts read it
def _functions(ir_text: str) -> dict[str, tuple[str, bool]]:
  """Function name -> (its definition's text, exported), in module order."""
  return {m.group(2): (m.group(0), not m.group(1)) for m in _FUNCTION.finditer(ir_text)}


@functools.lru_cache(maxsize=4)
def _kernel_closures(ir_text: str) -> dict[str, set[str]]:
  """Each exported function (kernel) -> the functions it is made of: itself and what it
  calls, transitively."""
  fns = _functions(ir_text)
  return {name: _closure(fns, [name]) for name, (_, exported) in fns.items() if exported}


def _quick_kernels(ir_text: str, opt_level: int) -> list[str] | None:
  """Which kernels may start at the quick tier (`tiering.qualifies` on the functions each
  is made of): None when all of them may (one quick compile of the module), else a list,
  empty when none may."""
  if tiering.qualifies(ir_text, opt_level):
    return None
  if opt_level < 2:
    return []
  fns = _functions(ir_text)
  closures = _kernel_closures(ir_text)
  quick = [k for k, names in closures.items()
           if tiering.qualifies("".join(fns[n][0] for n in names), opt_level)]
  return None if quick and len(quick) == len(closures) else quick


def _part_job(ir_text: str, kernels: Sequence[str], others: Sequence[str],
              tier: llvm_jit.LLVMTier):
  """The `llvm_jit.compile_parts` job that compiles `kernels` at `tier`: the module's
  declarations and globals with only the functions those kernels are made of. Another
  kernel one of them calls (a dot's epilogue) comes along as an internal copy."""
  closures = _kernel_closures(ir_text)
  names = set().union(*(closures[k] for k in kernels))
  pruned = _FUNCTION.sub("", ir_text) + "".join(
      text for name, (text, _) in _functions(ir_text).items() if name in names)
  return pruned, tier, [k for k in others if k in names]


# --- math in library calls: copies compiled once per process (quick and vector-call tiers)

# mathlib's scalar functions (ember.<f>.f32/f64): internal and alwaysinline, inlined into
# each kernel. Not its vector ones (fixed-order reductions' prologues, already vector code)
_MATH_NAME = re.compile(r"ember\.\w+\.f(?:32|64)")
_MATH_DEFINE = re.compile(r'define internal (.+?) @"([^"]+)"\(([^)]*)\) alwaysinline nounwind\n')
_PARAM_NAME = re.compile(r' %"?[^,"]*"?')
# the tier of the library copies (llvm_jit.library): the full tier's code, values (tiering.py)
LIBRARY_OPT_LEVEL = 3


def _library_math(ir_text: str, vector_calls: bool = False) -> str:
  """The module with each math-library function's body replaced by a call to its copy in
  the process's library, compiled at the full tier once per process (`_library_copy`), and
  the functions nothing calls any more (sin's huge-argument path and its vector variants)
  dropped. The copies compute the same bits (the same IR, no fast-math flags: tiering.py).

  Quick tier (opt 0): unoptimized inlined math ran ~12 ns an element, most of a quick
  kernel's time; the library's optimized scalar code runs 1.1-3x faster. `vector_calls` (the
  vector-call tier, opt 3): each call names the library's vector copies (one per host vector
  width, `_vector_copies`) as its vector variants, so the loop vectorizer widens the loop
  into calls of them; LLVM then optimizes and emits a loop of calls instead of three inlined
  copies of each function (vector body, vector epilogue, scalar remainder)."""
  if not _has_math(ir_text):
    return ir_text
  fns = _functions(ir_text)
  bodies, declares = {}, []
  for name, (text, exported) in fns.items():
    define = _MATH_DEFINE.match(text)
    if exported or define is None or not _MATH_NAME.fullmatch(name):
      continue
    ret, params = define.group(1), define.group(3)
    symbol = _library_copy(ir_text, fns, name, define)
    declares.append(f'declare {ret} @"{symbol}"({_PARAM_NAME.sub("", params)}) nounwind '
                    'readnone willreturn\n')
    attribute = ""
    if vector_calls:
      arity = params.count(",") + 1
      variants = _vector_copies(name, symbol)
      attribute = ' "vector-function-abi-variant"="%s"' % ",".join(
          f"_ZGV_LLVM_N{w}{'v' * arity}_{symbol}({v})" for w, v in variants)
      for w, v in variants:
        vt = f"<{w} x {ret}>"
        declares.append(f'declare {vt} @"{v}"({", ".join([vt] * arity)}) nounwind readnone willreturn\n')
    bodies[name] = (f'{define.group(0)}{{\nentry:\n  %"r" = call {ret} @"{symbol}"({params})'
                    f'{attribute}\n  ret {ret} %"r"\n}}\n', False)
  if not bodies:
    return ir_text
  variants = [d.split('@"')[1].split('"')[0] for d in declares if d.startswith("declare <")]
  if variants:   # kept until the vectorizer looks them up (GlobalDCE drops unused ones)
    declares.append(f"@llvm.compiler.used = appending global [{len(variants)} x ptr] ["
                    + ", ".join(f'ptr @"{v}"' for v in variants) + '], section "llvm.metadata"\n')
  fns = {**fns, **bodies}
  # the kernels: mathlib's exported functions (ember.*: weak_odr, out of line) are not
  keep = _closure(fns, [n for n, (_, exported) in fns.items()
                        if exported and not n.startswith("ember.")])
  return _FUNCTION.sub("", ir_text) + "".join(declares) + "".join(
      text for name, (text, _) in fns.items() if name in keep)


def _has_math(ir_text: str) -> bool:
  """Whether the module defines a math-library function `_library_math` replaces."""
  return ('float @"ember.' in ir_text or 'double @"ember.' in ir_text) and any(
      _MATH_NAME.fullmatch(d.group(2)) for d in _MATH_DEFINE.finditer(ir_text))


@functools.lru_cache(maxsize=None)
def _vector_copies(name: str, symbol: str) -> tuple[tuple[int, str], ...]:
  """(lanes, symbol) of the library's vector copies of math function `name` (mathlib's
  ember.<f>.v<lanes><type>, lane for lane the scalar function's values), one per vector width
  the host's loop vectorizer can choose, compiled on first use. `symbol`, the scalar copy's,
  names the IR, CPU and tier, and so theirs."""
  _, short, suffix = name.split(".")
  element = ir.FloatType() if suffix == "f32" else ir.DoubleType()
  out = []
  for lanes in mathlib.vector_widths(element):
    vsymbol = f"{symbol}.v{lanes}"

    def module_text(vty=ir.VectorType(element, lanes), vsymbol=vsymbol) -> str:
      scratch = ir.Module()
      fn = mathlib.function(scratch, short, vty)
      text = str(scratch)
      define = next(d for d in _MATH_DEFINE.finditer(text) if d.group(2) == fn.name)
      return text.replace(define.group(0), f'define {define.group(1)} @"{vsymbol}"('
                          f'{define.group(3)}) nounwind\n', 1)
    # (the symbol names the scalar copy's IR: the vector code's own source is in the key)
    _library(vsymbol, module_text, runtime_cache.generator_digest(*_MATHLIB_SOURCES))
    out.append((lanes, vsymbol))
  return tuple(out)


def _library_copy(ir_text: str, fns: dict, name: str, define: re.Match) -> str:
  """The symbol of math function `name`'s copy in the process's library (llvm_jit.library),
  compiled on first use: a module of the function (exported under the symbol, which names
  its IR, the CPU and the tier) and the functions it calls, with the declarations and
  globals they use."""
  closure = sorted(_closure(fns, [name]))
  texts = "".join(fns[n][0] for n in closure)
  digest = hashlib.sha1(f"{host.cpu()}\0{LIBRARY_OPT_LEVEL}\0{texts}".encode()).hexdigest()
  symbol = f"{name}.lib.{digest[:16]}"

  def module_text() -> str:
    refs = set(_references(texts))
    head = [line for line in _FUNCTION.sub("", ir_text).splitlines(True)
            if line.startswith(("declare", "@")) and _REFERENCE.search(line).group(1) in refs]
    ret, params = define.group(1), define.group(3)
    own = fns[name][0].replace(define.group(0), f'define {ret} @"{symbol}"({params}) nounwind\n',
                               1)
    return "".join(head) + own + "".join(fns[n][0] for n in closure if n != name)
  _library(symbol, module_text, "")   # (the symbol names the IR, the CPU and the tier)
  return symbol


_MATHLIB_SOURCES = tuple(sorted(glob.glob(os.path.join(os.path.dirname(mathlib.__file__),
                                                       "*.py"))))


def _library(symbol: str, make_ir, key: str) -> None:
  """llvm_jit.library's copy of a math function, its object kept on disk (runtime_cache,
  under `key` and the symbol): ~30 ms of LLVM each, once per machine instead of per process."""
  llvm_jit.library(symbol, lambda: runtime_cache.load_or_compile(symbol, make_ir, key,
                                                                 LIBRARY_OPT_LEVEL))


# --------------------------------------------------------------------------------------
# Serialization (the persistent compilation cache): object code + the thunk plan's facts
# --------------------------------------------------------------------------------------

_BLOBS = ("obj", "ir", "opt_ir")


def environment() -> bytes:
  """What besides a module decides its compiled code (the persistent compilation cache's
  key): the runtime cache's environment (versions, host CPU), the symbols of the shared
  dot bodies, whose configurations are in their names (objects calling another's would not
  link), and the denormal modes the kernels set (objects from before they did must not load)."""
  return runtime_cache.environment() + dot_kernels.body_symbols().encode() + \
      b"flush-denormals:%d" % denormals.FLUSH_BITS


def serialize_executable(exe: ex.Executable) -> bytes:
  """The executable as bytes: a JSON header (kernel ranges, sort key counts, sizes) then
  the object code and the IR texts. The module and buffer assignment are not included:
  `deserialize_executable` takes the (identical) ones of the loading process."""
  p = exe.cache_payload
  blobs = [p["obj"], p["ir"].encode(), p["opt_ir"].encode()]
  head = json.dumps({"kernels": p["kernels"], "aliases": p["aliases"],
                     "sort_keys": p["sort_keys"], "subs": _subs_text(p.get("subs", {})),
                     "code_size": p["code_size"], "opt_level": p["opt_level"],
                     "sizes": [len(b) for b in blobs]}).encode()
  return len(head).to_bytes(4, "little") + head + b"".join(blobs)


def _subs_text(subs: dict) -> dict:
  """Loop sub-executables' bytes (control_flow.py) as JSON text (base64)."""
  return {k: [None if b is None else base64.b64encode(b).decode() for b in v]
          for k, v in subs.items()}


def deserialize_executable(module: hlo.Module, assignment, data: bytes) -> ex.Executable:
  """Rebuild an Executable from `serialize_executable`'s bytes for the same optimized
  module and assignment: loads the object code and replays the thunk plan with the
  recorded kernel facts (no IR is generated or optimized). Raises ValueError on bytes that
  do not fit the module."""
  n = int.from_bytes(data[:4], "little")
  head = json.loads(data[4:4 + n])
  pos, blobs = 4 + n, {}
  for name, size in zip(_BLOBS, head["sizes"]):
    blobs[name] = data[pos:pos + size]
    pos += size
  if pos != len(data) or any(len(b) != s for b, s in zip(blobs.values(), head["sizes"])):
    raise ValueError("serialized executable has the wrong length")
  kernels = _RecordedKernels({k: KernelInfo(k, o, bool(s))
                              for k, (o, s) in head["kernels"].items()}, head.get("aliases", {}))
  plan = _ThunkPlan(assignment, kernels, head["sort_keys"],
                    {k: [None if b is None else base64.b64decode(b) for b in v]
                     for k, v in head.get("subs", {}).items()})
  for instr in module.entry.instrs:
    plan.add(instr)
  opt_level = head["opt_level"]
  engine, addr = llvm_jit.load_object(blobs["obj"], opt_level)
  thunks = [make(addr) for make in plan.pending]
  ir_text, opt_ir = blobs["ir"].decode(), blobs["opt_ir"].decode()
  exe = ex.Executable(module, assignment, thunks, engine, ir_text,
                      functools.partial(llvm_jit.assembly, opt_ir, opt_level), head["code_size"],
                      optimized_ir=opt_ir)
  exe.cache_payload = dict(head, obj=blobs["obj"], ir=ir_text, opt_ir=opt_ir)
  return exe


class _RecordedKernels:
  """Stands in for codegen.kernels.KernelBuilder when replaying a plan: hands back the recorded
  KernelInfo of each kernel instead of generating it."""

  def __init__(self, infos: dict, aliases: dict):
    self.infos, self.aliases = infos, aliases

  def _info(self, name: str):
    name = self.aliases.get(name, name)   # a kernel shared with an identical fusion
    if name not in self.infos:
      raise ValueError(f"serialized executable has no kernel {name}")
    return self.infos[name]

  def fusion(self, name, comp, noalias, same=None):
    return self._info(name)

  def scatter(self, name, instr, noalias):
    return self._info(name)


control_flow.use_compiler(compile_module, serialize_executable, deserialize_executable)

"""The compile driver: a traced jit signature through its stages, Traced -> Lowered ->
Compiled (JAX's AOT API), and the compile of a lowered module: the HLO pass pipeline,
buffer assignment (of the entry and of every loop body and branch the backend compiles as a
program of its own), then the CPU backend, or the persistent compilation cache in its place
(base/persistent_cache.py: a store of bytes, fed here with the module's key and the backend's
(de)serializer). It times each stage (`Compiled.compile_times`), logs compilations under
`jax_log_compiles` and records them in profiler traces. Its result, a
`dispatch.CompiledComputation`, is what the dispatcher runs.

The backend is handed a finished module: optimized, buffers assigned. It never runs passes.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import hashlib
import logging
import math
import re
import threading
import time
import warnings
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np

from ember._src import core
from ember._src.hlo import graph as hlo
from ember._src.base import (
    errors, flags as flags_lib, monitoring, persistent_cache, profiler_events as _profiler,
    tree_util)
from ember._src.reference import host_callbacks
from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.driver.cache_miss import log, log_enabled, timed
from ember._src.base.config import config
from ember._src.driver import eager_kernels
from ember._src.driver.dispatch import CompiledComputation
from ember._src.lower import lower_jaxpr
from ember._src.transforms.partial_eval import dce_jaxpr_used

# The compiler proper (passes, analysis, the backend and llvmlite) is imported inside the
# functions that use it ("deferred: the compiler loads at the first compile"): `import ember`
# does not load it.


class Staged(NamedTuple):
  """One traced call signature: the const-free jaxpr and what is needed to call it."""
  jaxpr: core.Jaxpr          # consts hoisted into the leading invars
  consts: list               # values for those leading invars
  in_tree: Any               # pytree of (dynamic args, dynamic kwargs)
  out_tree: Any
  name: str
  arg_names: tuple           # one per invar of `jaxpr` (consts first)
  closed_jaxpr: core.Jaxpr   # the jaxpr as traced, consts still closed over (Traced.jaxpr)
  donated: tuple = ()        # per invar of `jaxpr`: donated (its buffer may hold an output)
  trace_secs: float | None = None   # how long tracing took (Compiled.compile_times)
  unusable_donations: tuple = ()    # avals of donated arguments no output can reuse
  donate_requested: tuple = ()      # per argument leaf: donate_argnums/argnames named it


@dataclasses.dataclass(frozen=True, slots=True)
class ArgInfo:
  """One argument of a traced call (`jax.stages.ArgInfo`): its type and whether it is
  donated."""
  _aval: Any
  donated: bool

  @property
  def shape(self):
    if not hasattr(self._aval, "shape"):
      raise TypeError(f"No shape attribute with aval of type {type(self._aval)}")
    return self._aval.shape

  @property
  def dtype(self):
    if not hasattr(self._aval, "dtype"):
      raise TypeError(f"No dtype attribute with aval of type {type(self._aval)}")
    return self._aval.dtype


def _args_info(staged: Staged):
  """The (args, kwargs) pytree of ArgInfo of a staged call's dynamic arguments."""
  n_consts = len(staged.consts)
  n = staged.in_tree.num_leaves
  invars = staged.jaxpr.invars[n_consts:n_consts + n]
  donated = staged.donate_requested or (False,) * n
  return staged.in_tree.unflatten([ArgInfo(v.aval, bool(d)) for v, d in zip(invars, donated)])


class Traced:
  """`jit(f).trace(*args)`: the traced jaxpr of one call signature. `compile_on`: for
  arguments placed on a PJRT device, a function making the Compiled of that device's
  client (driver/jit.py), which `Lowered.compile` uses instead of ember's CPU compiler."""

  def __init__(self, staged: Staged, compile_on: Callable[[], Any] | None = None):
    self._staged, self._compile_on = staged, compile_on

  @property
  def jaxpr(self) -> core.Jaxpr:
    return self._staged.closed_jaxpr

  @property
  def out_info(self):
    return self._staged.out_tree.unflatten(
        [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
         for a in self._staged.jaxpr.out_avals])

  @property
  def fun_name(self) -> str:
    return self._staged.name

  @property
  def args_info(self):
    """An ArgInfo per dynamic argument, in the (args, kwargs) structure of the call."""
    return _args_info(self._staged)

  def lower(self) -> "Lowered":
    t0 = time.perf_counter()
    module = lower_staged(self._staged)
    secs = time.perf_counter() - t0
    monitoring.record_stage(monitoring.JAXPR_TO_MLIR_MODULE_EVENT, t0, secs, self.fun_name)
    return Lowered(module, self._staged, secs, self._compile_on)


def lower_staged(staged: Staged) -> hlo.Module:
  if staged.unusable_donations:
    _warn_unusable_donations(staged)
  return lower_jaxpr(staged.jaxpr, staged.name, arg_names=staged.arg_names,
                     result_names=_result_names(staged.out_tree), donated=staged.donated)


def usable_donations(jaxpr: core.Jaxpr, donated: tuple, keep_unused: bool,
                     key_outputs: tuple = ()) -> tuple[tuple, tuple]:
  """(per invar: donated, the avals of the donated ones no output can use), by JAX's rule:
  an output takes the first donated argument of its shape and dtype, then a donated
  argument left over takes an output left over of as many elements (donated when its
  bytes are as many too, as XLA can then reuse it; else kept, unreported). An argument the
  function never reads (unless `keep_unused`) or of an extended dtype (a typed key) is not
  donated, and not reported: JAX leaves both alone. `key_outputs`: per output, whether it is
  a typed key's data (u32[..., 2]): to JAX a key array of the shape without the last axis,
  which no argument here has the type of."""
  used = [True] * len(jaxpr.invars) if keep_unused else dce_jaxpr_used(jaxpr)[1]
  avals = [v.aval for v in jaxpr.invars]
  wanted = [d and u and isinstance(a.dtype, np.dtype) for d, u, a in zip(donated, used, avals)]
  by_type: dict[tuple, list[int]] = {}
  for i, a in enumerate(avals):
    if wanted[i]:
      by_type.setdefault((a.shape, a.dtype), []).append(i)
  donate, matched, left_outs = set(), set(), []   # left_outs: (elements, bytes)
  keys = list(key_outputs) + [False] * (len(jaxpr.outvars) - len(key_outputs))
  for o, key in zip((v.aval for v in jaxpr.outvars), keys):
    same = None if key else by_type.get((o.shape, getattr(o, "dtype", None)))
    if same:
      donate.add(same.pop(0))
    elif isinstance(getattr(o, "dtype", None), np.dtype):
      n = math.prod(o.shape[:-1] if key else o.shape)
      left_outs.append((n, math.prod(o.shape) * o.dtype.itemsize))
  for i in sorted(i for same in by_type.values() for i in same):
    a = avals[i]
    o = next((o for o in left_outs if o[0] == math.prod(a.shape)), None)
    if o is not None:
      left_outs.remove(o)
      matched.add(i)
      if o[1] == math.prod(a.shape) * a.dtype.itemsize:
        donate.add(i)
  unusable = tuple(core.ShapedArray(avals[i].shape, avals[i].dtype) for i in range(len(avals))
                   if wanted[i] and i not in donate and i not in matched)
  return tuple(i in donate for i in range(len(avals))), unusable


_donations_warned: "weakref.WeakSet[core.Jaxpr]" = weakref.WeakSet()   # one warning each


def _warn_unusable_donations(staged: Staged) -> None:
  """JAX's warning at a signature's first lowering: donated buffers no output could use."""
  if staged.jaxpr in _donations_warned:
    return
  _donations_warned.add(staged.jaxpr)
  warnings.warn("Some donated buffers were not usable: "
                f"{', '.join(map(str, staged.unusable_donations))}.\nSee an explanation at "
                "https://docs.jax.dev/en/latest/201/jit.html#jax-201-buffer-donation.")


def _strong_out_info(staged: Staged):
  """A pytree of ShapeDtypeStruct, one per output of `staged`, without weak types."""
  return staged.out_tree.unflatten(
      [ShapeDtypeStruct(a.shape, a.dtype) for a in staged.jaxpr.out_avals])


def _result_names(out_tree) -> list[str]:
  n = out_tree.num_leaves
  if out_tree.kind == "leaf":
    return ["result"]
  paths = [tree_util.keystr(p) for p, _ in
           tree_util.tree_flatten_with_path(out_tree.unflatten([0] * n))[0]]
  return [f"result{p}" for p in paths]


class Lowered:
  """The lowered (unoptimized) module of one call signature."""

  def __init__(self, module: hlo.Module, staged: Staged, lower_secs: float | None = None,
               compile_on: Callable[[], Any] | None = None):
    self._module, self._staged, self._lower_secs = module, staged, lower_secs
    self._compile_on = compile_on     # see Traced
    self._compiled: Compiled | None = None

  def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
    if dialect not in (None, "stablehlo", "hlo"):
      raise ValueError(f"Lowered.as_text: unknown dialect {dialect!r}; use 'stablehlo' or 'hlo'")
    module = self._module_with_constants()
    if dialect == "hlo":
      return hlo.to_text(module)
    from ember._src.lower.mlir import to_mlir_text   # deferred: the MLIR printer, on request
    return to_mlir_text(module, debug_info=debug_info)

  def _module_with_constants(self) -> hlo.Module:
    """The module with the jaxpr's constants as `constant`s, as JAX prints it (the module
    ember compiles takes them as leading parameters, which a reader of the text could not
    supply)."""
    s = self._staged
    if not s.consts:
      return self._module
    n = len(s.consts)
    return lower_jaxpr(s.closed_jaxpr, s.name, arg_names=s.arg_names[n:],
                       result_names=_result_names(s.out_tree), donated=s.donated[n:])

  @property
  def args_info(self):
    """An ArgInfo per dynamic argument, in the (args, kwargs) structure of the call."""
    return _args_info(self._staged)

  @property
  def out_info(self):
    """The outputs' shapes and dtypes, as JAX's Lowered.out_info: the lowered module's
    types, where weak types are gone."""
    return _strong_out_info(self._staged)

  def compiler_ir(self, dialect: str | None = None) -> hlo.Module:
    """The lowered module (`.as_hlo_text()` prints it). With dialect="hlo" the jaxpr's
    constants are `constant`s, as `as_text("hlo")` prints them."""
    if dialect == "hlo":
      return self._module_with_constants()
    return self._module

  def cost_analysis(self) -> dict:
    """Cost of the unoptimized module (before fusion), as JAX's Lowered.cost_analysis."""
    from ember._src.passes.analysis import cost_analysis  # deferred: loads at the first compile
    return cost_analysis(self._module)

  def compile(self, compiler_options: dict | None = None, *,
              device_assignment=None) -> "Compiled":
    """The compiled signature: a real compilation, logged under `jax_log_compiles` as
    `Compiling jit(f) ...` (once per Lowered). Later calls of the jitted function with this
    signature and the same compiler flags run it instead of compiling again. Arguments on a
    PJRT device: compiled by that device's client (pjrt_dispatch.PjrtCompiled), the
    computation the signature's jitted calls there run.

    `compiler_options`: JAX's dict of XLA options for this compilation
    (flags.with_compiler_options: the ones ember's compiler has apply, other `xla_*` ones
    are accepted, any other name is a JaxRuntimeError as XLA's INVALID_ARGUMENT)."""
    if compiler_options:
      try:
        flags = flags_lib.with_compiler_options(compiler_options, compile_flags())
      except ValueError as e:
        raise errors.JaxRuntimeError(f"INVALID_ARGUMENT: {e}") from None
      if self._compile_on is None:
        comp = compile_staged(self._staged, self._module, self._lower_secs, reuse=False,
                              flags=flags)
        return Compiled(comp, self._staged)
    if self._compiled is None:
      if self._compile_on is not None:
        self._compiled = self._compile_on()
      else:
        comp = compile_staged(self._staged, self._module, self._lower_secs, reuse=False)
        self._compiled = Compiled(comp, self._staged)
    return self._compiled


def _estimated_ns(module: hlo.Module) -> float:
  """A rough single-core run time of the whole module (cost_model.module_ns): calls that
  run under executor.INLINE_NS on the pool's threads run inline when the executor is idle,
  where a hand-off to the executor thread would cost more than it overlaps."""
  from ember._src.backends.cpu import cost_model   # deferred: loads at the first compile
  return cost_model.module_ns(module)


def _tier_up_pays(module: hlo.Module, flags) -> bool | str:
  """The tier below the requested one that may run first, or False (tiering.pays): its slower run must cost less
  than the optimized compile it saves."""
  from ember._src.backends.cpu import tiering   # deferred: loads at the first compile
  return tiering.pays(module, flags)


def compile_flags():
  """The compiler flags of a compilation started now: `EMBER_FLAGS`/`XLA_FLAGS` (or a
  `flags.override`), at opt_level 0 (the quick tier) under `jax_disable_most_optimizations`."""
  flags = flags_lib.get()
  if flags.opt_level and config.read("jax_disable_most_optimizations"):
    flags = flags._replace(opt_level=0)
  return flags


def compile_module(module: hlo.Module, out_avals, flags=None) -> CompiledComputation:
  """Optimize `module` (in place) and generate its native code. The result's
  `compile_times` holds seconds per stage: `hlo_passes`, `buffer_assignment`, `backend`
  (all native code; 0 when an equal module's executable was reused), and when LLVM ran,
  its split (`codegen`: building the IR, `llvm_ir`: its text, `llvm_parse`,
  `llvm_optimize`, `llvm_ir_text`, `llvm_emit_object`, `llvm_load`), or
  `persistent_cache_load` when the native code came from the persistent cache."""
  from ember._src.passes.pipeline import optimize   # deferred: loads at the first compile
  started = time.perf_counter()
  flags = flags or compile_flags()
  module = optimize(module, flags)
  t1 = time.perf_counter()
  assignment = assign_program(module)
  t2 = time.perf_counter()
  times = {"hlo_passes": t1 - started, "buffer_assignment": t2 - t1}
  key = None if flags.dump_to else (structural_key(module), flags)
  estimated_ns = _estimated_ns(module)   # decides inline runs (dispatch._RunPlan)
  executable = _executables.get(key) if key else None
  if executable is None:
    executable = _native_code(module, assignment, flags, started)
    backend = getattr(executable, "compile_times", None)   # None: loaded, not compiled
    if backend is not None:
      times.update(backend)
    else:
      times["persistent_cache_load"] = time.perf_counter() - t2
    if key:
      _executables[key] = executable
  times["backend"] = time.perf_counter() - t2
  comp = CompiledComputation(module, executable, assignment, out_avals, estimated_ns)
  comp.compile_times, comp.flags = times, flags
  return comp


_CONTROL_FLOW = ("while", "conditional")


def assign_program(module: hlo.Module):
  """The buffer assignment of the optimized `module`'s entry, and in its `called` those of
  the computations each `while` (condition, body) and `conditional` (branches) of the entry
  calls: the backend compiles each into a sub-executable (backends/cpu/control_flow.py), a
  program of its own, copied into a module (`hlo.module_of`, outputs copied as the pipeline
  copies them), nested control flow recursively. The one place buffer assignment runs."""
  # deferred: the compiler loads at the first compile
  from ember._src.passes.buffer_assignment import assign_buffers
  # deferred: the compiler loads at the first compile, not with `import ember`
  from ember._src.passes.pipeline import copy_outputs, donate_carry
  assignment = assign_buffers(module)
  for instr in module.entry.instrs:
    if instr.opcode in _CONTROL_FLOW:
      programs = [hlo.module_of(c, f"{instr.name}_{c.name}") for c in instr.called]
      if instr.opcode == "while":
        donate_carry(programs[1])
      assignment.called[instr.name] = tuple(assign_program(copy_outputs(p)) for p in programs)
  return assignment


def compile_executable(module: hlo.Module, flags=None, tiered: bool = False):
  """The backend's executable of an optimized module, by itself: buffer assignment
  (`assign_program`), then the backend (`backend_compile`); no CompiledComputation, no
  persistent cache, no reuse. `flags` default to `flags.get()`."""
  return backend_compile(module, assign_program(module), flags or flags_lib.get(), tiered)


def backend_compile(module: hlo.Module, assignment, flags, tiered: bool | str = False,
                    tier_loops: bool = False):
  """The backend's executable of the optimized, buffer-assigned `module` (tiered, when
  `tiered` and the module qualifies: tiering.py; with `tier_loops`, each loop body or
  branch that pays by itself is tiered too); under `--dump_to` (never tiered) its
  artifacts (LLVM IR, assembly, buffer assignment) are dumped."""
  from ember._src.backends.cpu import compiler as backend   # deferred: llvmlite, 1st compile
  # deferred: the compiler loads at the first compile, not with `import ember`
  from ember._src.passes import dumps
  exe = backend.compile_module(module, assignment, flags, not flags.dump_to and tiered,
                               tier_loops and not flags.dump_to)
  if flags.dump_to:
    for name, suffix, text in backend.artifacts(exe):
      dumps.dump_artifact(name, suffix, text, flags)
  return exe


# driver/eager.py's per-thread state; `busy` while it runs a one-op computation, whose
# compile is then an eager primitive's (kept in eager_kernels' store)
one_op_state = threading.local()


def _native_code(module: hlo.Module, assignment, flags, started: float):
  """The executable of the optimized `module`: from the persistent cache when a directory is
  set (and no dumps are asked for), compiled (and stored) on a miss, else compiled, at the
  quick tier first when that pays (`_tier_up_pays`); with no directory set, an eager
  primitive's one-op module comes from eager_kernels' store. `started`: when the compile
  began (the cache writes entries that took long enough)."""
  from ember._src.backends.cpu import compiler as backend   # deferred: llvmlite, 1st compile
  directory = persistent_cache.cache_dir()   # read once: another thread may change it

  def compile_tiered():
    return backend_compile(module, assignment, flags, _tier_up_pays(module, flags), True)
  if flags.dump_to or _calls_host(module):
    return compile_tiered()
  if directory is None:
    store = eager_kernels.directory() if getattr(one_op_state, "busy", False) else None
    if store is None:
      return compile_tiered()
    return eager_kernels.load_or_compile(store, cache_key(module, flags), module, assignment,
                                         compile_tiered)
  return persistent_cache.load_or_compile(
      directory, module.name, cache_key(module, flags),
      lambda: backend_compile(module, assignment, flags),
      backend.serialize_executable,
      lambda data: backend.deserialize_executable(module, assignment, data), started)


def _calls_host(module: hlo.Module) -> bool:
  """Whether the module calls host callbacks: their ids mean nothing in another process,
  so such a module is never stored in (or read from) the persistent cache."""
  return any(i.opcode == "custom-call" and i.attrs.get("target") == host_callbacks.TARGET
             for c in module.computations for i in c.instrs)


# `, metadata={op_name="..." source_file="..." source_line=N}`: debug info only
_METADATA = re.compile(r', metadata=\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}')


def cache_key(module: hlo.Module, flags) -> str:
  """The persistent cache's key of an optimized module: sha256 over the backend's
  environment (versions, host CPU, dot configuration: compiler.environment), the module's
  text without metadata (moving a function to another line keeps its entry), the bytes of
  every array attribute (the text elides large constants), the other attributes made of
  plain values (the text leaves some out), the input/output aliasing and the flags."""
  from ember._src.backends.cpu import compiler   # deferred: llvmlite, 1st compile
  h = hashlib.sha256(compiler.environment())
  text = hlo.to_text(module)
  if not config.read("jax_compilation_cache_include_metadata_in_key"):
    text = _METADATA.sub("", text)
  h.update(text.encode())
  for comp in module.called_computations():
    for instr in comp.instrs:
      for k, v in sorted(instr.attrs.items()):
        if isinstance(v, (np.ndarray, np.generic)):
          v = np.ascontiguousarray(v)
          h.update(f"{instr.name}.{k}:{v.dtype.str}{v.shape}".encode())
          h.update(v.tobytes())
        elif _plain(v):   # attributes the text leaves out (a custom call's backend_config:
          h.update(f"{instr.name}.{k}={_canonical(v)}".encode())   # a trsm's side, diagonal)
  h.update(repr(sorted(module.input_output_alias.items())).encode())
  h.update(repr((sorted(flags.disable_passes), flags.opt_level)).encode())
  return h.hexdigest()


def _canonical(v) -> str:
  """repr(v), a set's elements sorted (its order changes with the process's hash seed)."""
  return f"frozenset({sorted(map(_canonical, v))})" if isinstance(v, frozenset) else repr(v)


def _plain(v) -> bool:
  """Whether `v` is built of Python scalars, strings and containers of them."""
  if v is None or isinstance(v, (bool, int, float, str, bytes)):
    return True
  if isinstance(v, (tuple, list, frozenset)):
    return all(map(_plain, v))
  if isinstance(v, dict):
    return all(_plain(k) and _plain(x) for k, x in v.items())
  return False


_STAGE_ORDER = ("trace", "lower", "hlo_passes", "buffer_assignment", "backend", "codegen",
                "llvm_ir", "llvm_parse", "llvm_optimize", "llvm_ir_text", "llvm_emit_object",
                "llvm_load", "persistent_cache_load")


def compile_staged(staged: Staged, module: hlo.Module | None = None,
                   lower_secs: float | None = None, reuse: bool = True,
                   flags=None) -> CompiledComputation:
  """A real compilation of a traced signature (lowering it unless `module` is given; the
  module is not modified), logged as JAX logs it under `jax_log_compiles` (`Compiling
  jit(f) ...`, `Finished jaxpr to MLIR module conversion ...` when it lowers, `Finished XLA
  compilation ...`) with ember's per-stage split at DEBUG on `ember._src.compiler`. With
  `reuse`, a signature already compiled with the same flags (by `Lowered.compile`) is
  handed back without a compilation. `flags`: these instead of the current ones."""
  flags = compile_flags() if flags is None else flags
  done = _compiled_by_jaxpr.get(staged.jaxpr) if reuse else None
  if done is not None and done.flags == flags:
    return done
  name = staged.name
  if log_enabled("jax_log_compiles"):
    avals = tuple(v.aval for v in staged.jaxpr.invars[len(staged.consts):])
    log("jax_log_compiles", "Compiling jit(%s) with global shapes and types %r. Argument "
        "mapping: %s.", name, avals, "(" + "UnspecifiedValue, " * (len(avals) - 1)
        + ("UnspecifiedValue,)" if len(avals) == 1 else "UnspecifiedValue)" if avals else ")"))
  with gc_paused():
    if module is None:
      t0 = time.perf_counter()
      with timed("jax_log_compiles", "Finished jaxpr to MLIR module conversion jit(%s) in "
                 "%.9f sec", name):
        module = lower_staged(staged)
      lower_secs = time.perf_counter() - t0
      monitoring.record_stage(monitoring.JAXPR_TO_MLIR_MODULE_EVENT, t0, lower_secs, name)
      if _profiler.active:
        _profiler.record_secs(f"lower jit({name})", t0, lower_secs)
    else:
      module = clone_module(module)
    t0 = time.perf_counter()
    with timed("jax_log_compiles", "Finished XLA compilation of jit(%s) in %.9f sec", name):
      comp = compile_module(module, staged.jaxpr.out_avals, flags)
    monitoring.record_stage(monitoring.BACKEND_COMPILE_EVENT, t0, time.perf_counter() - t0, name)
  times = {"trace": staged.trace_secs, "lower": lower_secs, **comp.compile_times}
  times = {k: v for k, v in times.items() if v is not None}
  times["compile"] = time.perf_counter() - t0
  comp.compile_times = times
  if _profiler.active:
    _record_compile_spans(name, times, t0)
  _log_compile_times(name, times)
  _compiled_by_jaxpr[staged.jaxpr] = comp
  return comp


def _record_compile_spans(name: str, times: dict, start_s: float) -> None:
  """`compile jit(f)` at its real start, its stages (Compiled.compile_times) laid end to
  end inside it in the order they ran (each stage's duration is measured; small gaps
  between stages fall to the end of the parent)."""
  args = {"fun": name}
  _profiler.record_secs(f"compile jit({name})", start_s, times["compile"], args)
  t = start_s
  for stage in ("hlo_passes", "buffer_assignment", "backend"):
    if stage in times:
      _profiler.record_secs(stage, t, times[stage], args)
      if stage == "backend":
        sub = t
        for s in _STAGE_ORDER[_STAGE_ORDER.index("codegen"):]:
          if s in times:
            _profiler.record_secs(s, sub, times[s], args)
            sub += times[s]
      t += times[stage]


def preload_backend() -> None:
  """Import the compiler (passes, LLVM via llvmlite) and initialize LLVM for the host CPU
  now: a process's first jitted call otherwise pays this (~40-90 ms) on top of its own
  compilation. Idempotent."""
  # deferred: what this function loads is the point of calling it
  from ember._src.backends.cpu import compiler, llvm_jit  # noqa: F401
  from ember._src.passes import buffer_assignment, dumps, pipeline  # noqa: F401
  for name in pipeline.PASSES:
    pipeline.get_pass(name)
  llvm_jit.shared_target_machine(llvm_jit.LLVM_TIERS[compile_flags().opt_level].codegen_level)


def start_cpu_backend() -> None:
  """What `import ember` starts, as `import jax` starts XLA: the compiler and LLVM
  (`preload_backend`, ~40 ms) and the runtime functions every process runs (the hit
  prologue, thread pool, loop driver, native hit path and the switches of the denormal
  modes, base/denormals.py: ~8 ms loaded from backends/cpu/runtime_cache's disk entries,
  compiled there once per machine), so that a process's first jitted or eager compiled call
  pays for its own code only; and, on a thread, the digest of the backend's sources that keys
  the store of eager kernels (eager_kernels.warm_digest). Only the switches when the CPU
  backend is not the default
  (EMBER_JIT_BACKEND=interpreter); never fails the import: a missing llvmlite (the TPU
  host's PJRT-only use) or any other failure is left for the first compile to report."""
  if config.read("ember_jit_backend") != "cpu":
    _install_denormal_modes()
    return
  try:
    preload_backend()
    # deferred: what this function loads is the point of calling it
    from ember._src.backends.cpu import control_flow, executable, native_hit, threadpool
    from ember._src.core import array as array_module
    _install_denormal_modes()
    for runtime_function in (executable._hit_prologue, threadpool._native, control_flow._driver):
      runtime_function()
    native_hit.available(array_module)   # (hands it the Array class its checks read)
    eager_kernels.warm_digest()
  except Exception as e:  # noqa: BLE001 -- the import goes on; the first compile says why
    logging.getLogger("ember._src.compiler").debug("CPU backend not started at import: %r", e)


def freeze_startup_objects() -> None:
  """Move every object the garbage collector tracks now (what `import ember` and the imports
  before it made: modules, functions, classes, ~45k objects) to its permanent generation,
  as a server freezes its start-up objects (`gc.freeze`). They live as long as the process,
  yet each full collection walked them all: ~20-30 ms on the 2-core VM, and the import left
  one due, so it fell in the first eager call or compile (`a @ a` 1000^2: the first call
  49-53 ms of CPU, 31-33 with them frozen). Later objects are collected as before; frozen
  ones are not (cyclic garbage among objects made before the import stays)."""
  gc.freeze()


def _install_denormal_modes() -> None:
  """XLA:CPU's flush-to-zero for the NumPy paths too (base/denormals.py), whichever backend
  runs jitted code (the interpreter backend's eager references flush as the CPU's would)."""
  try:
    # deferred: llvmlite, as the backend's
    from ember._src.backends.cpu import denormals, runtime_cache
    denormals.install(runtime_cache.load_or_compile)
  except Exception as e:  # noqa: BLE001 -- no llvmlite: NumPy paths keep subnormals
    logging.getLogger("ember._src.compiler").debug("denormal modes not installed: %r", e)


@contextlib.contextmanager
def gc_paused():
  """Python's cyclic garbage collector off for the block: tracing and compiling allocate
  hundreds of thousands of long-lived objects, and the collections this triggers cost
  30-40% of a long function's compile time. Collection resumes after the block (it stays
  off if it was off before)."""
  was_on = gc.isenabled()
  gc.disable()
  try:
    yield
  finally:
    if was_on:
      gc.enable()


def _log_compile_times(name: str, times: dict) -> None:
  logger = logging.getLogger("ember._src.compiler")
  if logger.isEnabledFor(logging.DEBUG):
    stages = [k for k in _STAGE_ORDER if k in times] + ["compile"]
    logger.debug("Compile times of jit(%s): %s", name,
                 ", ".join(f"{k} {times[k] * 1e3:.3f} ms" for k in stages))


# Native code by structure: two jitted functions whose optimized modules differ only in
# names and metadata (a re-created lambda, another argument name) share one executable.
_executables: dict = {}


def structural_key(module: hlo.Module) -> tuple:
  """The module's program without names and metadata (hlo.structure_key) plus its
  input/output aliasing: equal keys mean interchangeable executables."""
  return (hlo.structure_key(module.called_computations()),
          tuple(sorted(module.input_output_alias.items())))


def clone_module(module: hlo.Module) -> hlo.Module:
  """A copy that passes may rewrite without touching the original (Lowered keeps it):
  new computations and instructions (fresh ids), shapes and metadata shared (immutable),
  mutable attribute values copied. Linear, ~10x faster than copy.deepcopy."""
  new = copy.copy(module)
  new._names, new._counters = set(module._names), {}
  new.input_output_alias = dict(module.input_output_alias)
  new.arg_names, new.result_names = list(module.arg_names), list(module.result_names)
  comps = {}

  def comp(c: hlo.Computation) -> hlo.Computation:
    if id(c) in comps:
      return comps[id(c)]
    c2 = comps[id(c)] = copy.copy(c)
    c2.module = new if c.module is module else c.module
    instrs = {}
    for i in c.instrs:
      i2 = hlo.Instr.__new__(hlo.Instr)
      i2.opcode, i2.shape, i2.name, i2.metadata = i.opcode, i.shape, i.name, i.metadata
      i2.operands = [instrs[id(o)] for o in i.operands]
      i2.attrs = {k: copy.deepcopy(v) if type(v) in _MUTABLE else v for k, v in i.attrs.items()}
      i2.called = [comp(sub) for sub in i.called]
      i2.id = next(hlo._ids)
      instrs[id(i)] = i2
    c2.instrs = list(instrs.values())
    c2.root = instrs[id(c.root)] if c.root is not None else None
    return c2

  new.computations = [comp(c) for c in module.computations]
  new.entry = comp(module.entry) if module.entry is not None else None
  return new


_MUTABLE = (list, dict, set, np.ndarray)


# Compiled computations of staged jit eqns, keyed by the jaxpr object (jit's trace cache
# hands back the same jaxpr for the same signature).
_compiled_by_jaxpr: "weakref.WeakKeyDictionary[core.Jaxpr, CompiledComputation]" = \
    weakref.WeakKeyDictionary()


def compiled_for_jaxpr(jaxpr: core.Jaxpr, name: str, arg_names=None,
                       donated=()) -> CompiledComputation:
  comp = _compiled_by_jaxpr.get(jaxpr)
  if comp is None:
    module = lower_jaxpr(jaxpr, name, arg_names=arg_names, donated=donated)
    comp = _compiled_by_jaxpr[jaxpr] = compile_module(module, jaxpr.out_avals)
  return comp


def call_leaves(staged: Staged, args, kwargs) -> list:
  """The flat arguments of a call of a compiled signature (a Compiled's), which must have
  the structure it was traced with."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  if in_tree != staged.in_tree:
    raise TypeError(f"Compiled function {staged.name} called with a different argument "
                    f"structure: expected {staged.in_tree}, got {in_tree}")
  return leaves


class Compiled:
  """A compiled call signature: optimized HLO text, costs, memory, and callable."""

  def __init__(self, computation: CompiledComputation, staged: Staged):
    self._computation, self._staged = computation, staged

  def as_text(self) -> str:
    return self._computation.as_text()

  def cost_analysis(self) -> dict:
    from ember._src.passes.analysis import cost_analysis  # deferred: loads at the first compile
    return cost_analysis(self._computation.module)

  def memory_analysis(self):
    from ember._src.passes.analysis import memory_analysis  # deferred: as cost_analysis
    c = self._computation
    return memory_analysis(c.module, c.assignment, getattr(c.executable, "code_size", 0))

  def runtime_executable(self):
    return self._computation.executable

  @property
  def args_info(self):
    """An ArgInfo per dynamic argument, in the (args, kwargs) structure of the call."""
    return _args_info(self._staged)

  @property
  def out_info(self):
    """The outputs' shapes and dtypes (no weak types), as Lowered.out_info."""
    return _strong_out_info(self._staged)

  @property
  def compile_times(self) -> dict[str, float]:
    """Seconds per compile stage (ember's; JAX has no counterpart): `trace`, `lower`,
    `compile` (everything after lowering, as `Finished XLA compilation` logs it) and its
    split (see `compile_module`), for the compilation that made this executable."""
    return dict(self._computation.compile_times)

  def __call__(self, *args, **kwargs):
    leaves = call_leaves(self._staged, args, kwargs)
    staged = self._staged
    donate = tuple(i for i, d in enumerate(staged.donated) if d)
    outs = self._computation.run([*staged.consts, *leaves], donate)
    return staged.out_tree.unflatten(outs)


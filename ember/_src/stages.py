"""The stages of a jitted function: Traced -> Lowered -> Compiled (JAX's AOT API).

`jit(f).trace(*args)` gives a `Traced` (the jaxpr), `.lower()` a `Lowered` (the StableHLO
module, `as_text()`), `.compile()` a `Compiled` (the optimized HLO, `as_text()`,
`cost_analysis()`, `memory_analysis()`, callable). A plain call of a jitted function goes
through the same stages; `CompiledComputation` is the part of `Compiled` that `jit_p`'s
eval rule runs, independent of pytrees.
"""
from __future__ import annotations

import contextlib
import copy
import gc
import time
import weakref
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src import core, hlo
from ember._src.config import config
from ember._src.profiler import trace as _profiler
from ember._src.runtime import executor
from ember._src.runtime.array import Array, contiguous_ptr


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


class Traced:
  """`jit(f).trace(*args)`: the traced jaxpr of one call signature."""

  def __init__(self, staged: Staged):
    self._staged = staged

  @property
  def jaxpr(self) -> core.Jaxpr:
    return self._staged.closed_jaxpr

  @property
  def out_info(self):
    from ember._src.api_util import ShapeDtypeStruct
    return self._staged.out_tree.unflatten(
        [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
         for a in self._staged.jaxpr.out_avals])

  @property
  def fun_name(self) -> str:
    return self._staged.name

  def lower(self) -> "Lowered":
    t0 = time.perf_counter()
    module = lower_staged(self._staged)
    return Lowered(module, self._staged, time.perf_counter() - t0)


def lower_staged(staged: Staged) -> hlo.Module:
  from ember._src.lower import lower_jaxpr
  return lower_jaxpr(staged.jaxpr, staged.name, arg_names=staged.arg_names,
                     result_names=_result_names(staged.out_tree), donated=staged.donated)


def _result_names(out_tree) -> list[str]:
  from ember._src import tree_util
  n = out_tree.num_leaves
  if out_tree.kind == "leaf":
    return ["result"]
  paths = [tree_util.keystr(p) for p, _ in
           tree_util.tree_flatten_with_path(out_tree.unflatten([0] * n))[0]]
  return [f"result{p}" for p in paths]


class Lowered:
  """The lowered (unoptimized) module of one call signature."""

  def __init__(self, module: hlo.Module, staged: Staged, lower_secs: float | None = None):
    self._module, self._staged, self._lower_secs = module, staged, lower_secs
    self._compiled: Compiled | None = None

  def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
    if dialect not in (None, "stablehlo", "hlo"):
      raise ValueError(f"Lowered.as_text: unknown dialect {dialect!r}; use 'stablehlo' or 'hlo'")
    module = self._module_with_constants()
    if dialect == "hlo":
      return hlo.to_text(module)
    from ember._src.lower.mlir import to_mlir_text
    return to_mlir_text(module, debug_info=debug_info)

  def _module_with_constants(self) -> hlo.Module:
    """The module with the jaxpr's constants as `constant`s, as JAX prints it (the module
    ember compiles takes them as leading parameters, which a reader of the text could not
    supply)."""
    s = self._staged
    if not s.consts:
      return self._module
    from ember._src.lower import lower_jaxpr
    n = len(s.consts)
    return lower_jaxpr(s.closed_jaxpr, s.name, arg_names=s.arg_names[n:],
                       result_names=_result_names(s.out_tree), donated=s.donated[n:])

  def compiler_ir(self, dialect: str | None = None) -> hlo.Module:
    return self._module

  def cost_analysis(self) -> dict:
    """Cost of the unoptimized module (before fusion), as JAX's Lowered.cost_analysis."""
    from ember._src.analysis import cost_analysis
    return cost_analysis(self._module)

  def compile(self) -> "Compiled":
    """The compiled signature: a real compilation, logged under `jax_log_compiles` as
    `Compiling jit(f) ...` (once per Lowered). Later calls of the jitted function with this
    signature and the same compiler flags run it instead of compiling again."""
    if self._compiled is None:
      comp = compile_staged(self._staged, self._module, self._lower_secs, reuse=False)
      self._compiled = Compiled(comp, self._staged)
    return self._compiled


class CompiledComputation:
  """An optimized module with its executable; `run` executes it on flat arguments."""

  def __init__(self, module: hlo.Module, executable, assignment, out_avals):
    self.module, self.executable, self.assignment = module, executable, assignment
    self.out_avals = list(out_avals)
    self.compile_times: dict[str, float] = {}   # seconds per stage (compile_module)
    self.flags = None                           # the compiler flags it was compiled with
    self.estimated_ns: float | None = None      # single-core run time (cost model)
    self._text: str | None = None
    self._plan: _RunPlan | None = None

  def as_text(self) -> str:
    if self._text is None:
      self._text = hlo.to_text(self.module)
    return self._text

  def run(self, args: Sequence, donate: Sequence[int] = (), trusted: bool = False) -> list:
    """Dispatch the executable on `args` (asynchronous dispatch: see runtime/executor.py);
    arguments that are pending Arrays are resolved on the executor thread.

    `donate`: positions of donated arguments. They are deleted (Arrays) and, where the
    executable computes an output into that parameter, an Array's buffer is handed over
    without a copy when nothing else can reach it (else, and for NumPy arguments, a copy).
    `trusted`: the caller's signature key already fixes every argument's shape and dtype."""
    plan = self._plan
    if plan is None or plan.executable is not self.executable:
      plan = self._plan = _RunPlan(self)
    if donate:
      _check_donated_once(args, donate)
    host, ptrs, user = [], [], []
    for i, a in enumerate(args):
      if type(a) is Array:
        if a._deleted:
          a._check_alive()
        if donate and i in donate:
          host.append(_take_donated(a, i in plan.aliased))
          ptrs.append(a._ptr if type(host[-1]) is np.ndarray else None)
          continue
        buf = a._buf
        if buf is not None:
          p = a._ptr
          if p is None:
            p = a._ptr = contiguous_ptr(buf)
          host.append(buf)
          ptrs.append(p)
        elif a._fut is not None:
          host.append(a)
          ptrs.append(None)
        else:
          a._check_alive()
          raise RuntimeError("ember: an argument Array has no value")
      else:
        x = _to_host(a)
        if x is a:  # the caller's own NumPy array
          if donate and i in donate and x.flags.writeable:
            x = x.copy()  # a NumPy argument is never overwritten
          else:
            user.append(i)
        host.append(x)
        ptrs.append(None)
    if not trusted:
      plan.check(host)
    if plan.sync_only or config._values["ember_check_compiled"]:
      # checked mode reports a mismatch at the call
      return executor.dispatch(plan.checked_call, host, plan.out_specs, ptrs=ptrs, sync=True)
    return executor.dispatch(plan.call, host, plan.out_specs, ptrs=ptrs, small=plan.small,
                             user_arrays=user)

  def hit_runner(self, consts: Sequence, donate: Sequence[int],
                 finish: Callable[[list], Any]) -> Callable[[Sequence], Any]:
    """`finish(run([*consts, *leaves], donate, trusted=True))` as a function of `leaves`, for
    the cache hits of one jit signature (which fixed the leaves' shapes and dtypes). A small
    call whose arguments are all ready, C-contiguous Arrays runs inline here, straight into
    the executable (its one direct kernel call when it has one), unless the configuration
    asks otherwise now (no asynchronous dispatch, the executor busy, checked mode, a
    profile), the executable was swapped, or the call donates: `run` does all of that, and
    is the fallback."""
    run = self.run

    def generic(leaves):
      return finish(run([*consts, *leaves] if consts else leaves, donate, trusted=True))
    from ember._src.backends.cpu.executable import Executable
    plan = self._plan
    if plan is None or plan.executable is not self.executable:
      plan = self._plan = _RunPlan(self)
    ex = self.executable
    if donate or plan.sync_only or not plan.small or type(ex) is not Executable:
      return generic
    direct, execute_ptrs = ex.execute_direct, ex.execute_ptrs
    out_specs, name = plan.out_specs, plan.name
    weak_types = [w for _, _, w in out_specs]
    cv, inline_ok, ready_all = config._values, executor.inline_ok, Array._ready_all

    def runner(leaves):
      args = [*consts, *leaves] if consts else leaves
      if inline_ok() and not cv["ember_check_compiled"] and not _profiler.active \
          and self.executable is ex:
        ptrs = []
        for a in args:
          if type(a) is not Array or a._deleted:
            break
          p = a._ptr
          if p is None:   # not asked yet (a new Array), pending, or not C-contiguous
            buf = a._buf
            if buf is None or (p := contiguous_ptr(buf)) is None:
              break
            a._ptr = p
          ptrs.append(p)
        else:
          try:
            r = direct(ptrs) or execute_ptrs([a._buf for a in args], ptrs)
          except Exception as e:  # noqa: BLE001 -- deferred to the wait, as dispatch does
            return finish(executor.failed(_runtime_error(e, name), out_specs))
          # (allocation stacks: constructor 3, whose user frame is 4 up: _alloc_stack,
          # _ready_all, this runner, JitWrapped.__call__, its only caller)
          return finish(ready_all(r[0], r[1], weak_types, 3, True))
      return generic(leaves)
    return runner


def _check_donated_once(args, donate) -> None:
  """A donated Array may not be passed again in the same call (JAX's error)."""
  first = {}
  for i in donate:
    if type(args[i]) is Array:
      first.setdefault(id(args[i]), i)
  if not first:
    return
  for j, a in enumerate(args):
    i = first.get(id(a))
    if i is not None and i != j:
      from ember._src.errors import JaxRuntimeError
      raise JaxRuntimeError(
          "INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the same "
          f"call to Execute() (flattened argument {j}, replica 0, partition 0, first use: "
          f"{i}). Toy example for this bug: `f(donate(a), a)`.")


def _take_donated(a, aliased: bool):
  """A donated Array's buffer for the call (or the pending Array, wrapped), deleting it."""
  a._check_alive()
  if a._fut is not None:  # still being computed: taken on the executor thread
    a._deleted = True
    return executor.Donated(a) if aliased else a
  buf = a._donate() if aliased else None
  if buf is None:  # shared with a NumPy view (or not needed): the call reads it, may copy
    buf = a._buf
    a._deleted, a._buf = True, None
  return buf


def _estimated_ns(module: hlo.Module) -> float:
  """A rough single-core run time of the whole module (cost_model.module_ns): calls that
  run under executor.INLINE_NS on the pool's threads run inline when the executor is idle,
  where a hand-off to the executor thread would cost more than it overlaps."""
  from ember._src.backends.cpu import cost_model
  return cost_model.module_ns(module)


def _tier_up_pays(module: hlo.Module, flags) -> bool:
  """Whether quick-tier code may run first (cost_model.quick_module_pays): its slower run
  must cost less than the optimized compile it saves."""
  from ember._src.backends.cpu import codegen, cost_model
  if not getattr(flags, "tiered_compilation", False) or flags.opt_level < 2:
    return False
  return cost_model.quick_module_pays(module, codegen.vector_transcendentals(module.entry))


class _RunPlan:
  """What `CompiledComputation.run` needs per call, computed once per executable."""

  def __init__(self, comp: CompiledComputation):
    from ember._src.backends.cpu import host
    from ember._src.backends.cpu.executable import Executable
    self.executable = ex = comp.executable
    self.name = comp.module.name
    self.in_specs = [(np.dtype(p.shape.dtype), tuple(p.shape.dims))
                     for p in comp.module.entry.params]
    self.out_specs = [(av.shape, av.dtype, av.weak_type) for av in comp.out_avals]
    self.sync_only = not all(isinstance(av.dtype, np.dtype) for av in comp.out_avals)
    nbytes = sum(dt.itemsize * int(np.prod(d, dtype=np.int64)) for dt, d in self.in_specs)
    nbytes += sum(av.dtype.itemsize * int(np.prod(av.shape, dtype=np.int64))
                  for av in comp.out_avals if isinstance(av.dtype, np.dtype))
    est = comp.estimated_ns if comp.estimated_ns is not None else _estimated_ns(comp.module)
    self.small = nbytes < executor._INLINE_BYTES or \
        est / host.num_threads() < executor.INLINE_NS
    self.aliased = frozenset(getattr(ex, "donated", ()))
    name = self.name
    if type(ex) is Executable:
      execute_ptrs = ex.execute_ptrs

      def call(np_args, ptrs):
        try:
          outs, optrs = execute_ptrs(np_args, ptrs) if not _profiler.active else \
              _profiler.execute(ex, comp.module.entry, name, np_args, ptrs)
        except Exception as e:  # noqa: BLE001 -- JAX's class for failures while running
          raise _runtime_error(e, name) from e
        for o in outs:
          o.setflags(False)   # write=False: an Array's memory is read-only to everyone
        return outs, optrs
    else:   # another executable object (a test's stand-in): its plain `execute`
      def call(np_args, ptrs):
        try:
          outs = ex.execute(np_args)
        except Exception as e:  # noqa: BLE001
          raise _runtime_error(e, name) from e
        return [_sealed(o) for o in outs], None
    self.call = call

    def checked_call(np_args, ptrs):
      outs, optrs = call(np_args, ptrs)
      check_against_reference(comp, np_args, outs)
      return outs, optrs
    self.checked_call = checked_call

  def check(self, host) -> None:
    if len(host) != len(self.in_specs):
      raise TypeError(f"{self.name} takes {len(self.in_specs)} arguments, got {len(host)}")
    for i, (x, (dt, dims)) in enumerate(zip(host, self.in_specs)):
      if type(x) is executor.Donated:
        x = x.array
      if type(x) is Array:
        xdt, xshape = x._dtype, x._shape
      else:
        xdt, xshape = x.dtype, x.shape
      if xdt != dt or xshape != dims:
        raise TypeError(f"argument {i} of {self.name} has type {xdt.name}{list(xshape)}, "
                        f"but it was compiled for {dt.name}{list(dims)}")


def _sealed(o) -> np.ndarray:
  o = np.asarray(o)
  if o.flags.writeable:
    o = o.copy() if o.base is not None else o
    o.flags.writeable = False
  return o


def _runtime_error(e: Exception, name: str) -> Exception:
  """An error raised while running a computation, as JAX raises it: a JaxRuntimeError whose
  message carries the original's (kept as __cause__)."""
  from ember._src.errors import JaxRuntimeError
  if isinstance(e, JaxRuntimeError):
    return e
  status = "RESOURCE_EXHAUSTED" if isinstance(e, MemoryError) else "INTERNAL"
  return JaxRuntimeError(f"{status}: running {name} failed: {type(e).__name__}: {e}")


def _to_host(a) -> np.ndarray:
  return _contiguous(core.to_numpy(a))


def _contiguous(x: np.ndarray) -> np.ndarray:
  # np.ascontiguousarray would turn a 0-d array into a 1-d one
  return x if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(x.shape)


def compile_flags():
  """The compiler flags of a compilation started now: `EMBER_FLAGS`/`XLA_FLAGS` (or a
  `flags.override`), at opt_level 0 (the quick tier) under `jax_disable_most_optimizations`."""
  from ember._src import flags as flags_mod
  flags = flags_mod.get()
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
  from ember._src import persistent_cache
  from ember._src.passes.buffer_assignment import assign_buffers
  from ember._src.passes.pipeline import optimize
  started = time.perf_counter()
  flags = flags or compile_flags()
  module = optimize(module, flags)
  t1 = time.perf_counter()
  assignment = assign_buffers(module)
  t2 = time.perf_counter()
  times = {"hlo_passes": t1 - started, "buffer_assignment": t2 - t1}
  key = None if flags.dump_to else (structural_key(module), flags)
  estimated_ns = _estimated_ns(module)   # decides inline runs (_RunPlan)
  executable = _executables.get(key) if key else None
  if executable is None:
    # native code from the persistent cache directory when one is set, else codegen
    executable = persistent_cache.compile_or_load(module, assignment, flags, started,
                                                  _tier_up_pays(module, flags))
    backend = getattr(executable, "compile_times", None)   # None: loaded, not compiled
    if backend is not None:
      times.update(backend)
    else:
      times["persistent_cache_load"] = time.perf_counter() - t2
    if key:
      _executables[key] = executable
  times["backend"] = time.perf_counter() - t2
  comp = CompiledComputation(module, executable, assignment, out_avals)
  comp.compile_times, comp.flags, comp.estimated_ns = times, flags, estimated_ns
  return comp


_STAGE_ORDER = ("trace", "lower", "hlo_passes", "buffer_assignment", "backend", "codegen",
                "llvm_ir", "llvm_parse", "llvm_optimize", "llvm_ir_text", "llvm_emit_object",
                "llvm_load", "persistent_cache_load")


def compile_staged(staged: Staged, module: hlo.Module | None = None,
                   lower_secs: float | None = None, reuse: bool = True) -> CompiledComputation:
  """A real compilation of a traced signature (lowering it unless `module` is given; the
  module is not modified), logged as JAX logs it under `jax_log_compiles` (`Compiling
  jit(f) ...`, `Finished jaxpr to MLIR module conversion ...` when it lowers, `Finished XLA
  compilation ...`) with ember's per-stage split at DEBUG on `ember._src.compiler`. With
  `reuse`, a signature already compiled with the same flags (by `Lowered.compile`) is
  handed back without a compilation."""
  from ember._src.cache_miss import log, log_enabled, timed
  flags = compile_flags()
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
      if _profiler.active:
        _profiler.record_secs(f"lower jit({name})", t0, lower_secs)
    else:
      module = clone_module(module)
    t0 = time.perf_counter()
    with timed("jax_log_compiles", "Finished XLA compilation of jit(%s) in %.9f sec", name):
      comp = compile_module(module, staged.jaxpr.out_avals, flags)
  times = {"trace": staged.trace_secs, "lower": lower_secs, **comp.compile_times}
  times = {k: v for k, v in times.items() if v is not None}
  times["compile"] = time.perf_counter() - t0
  comp.compile_times = times
  if _profiler.active:
    _profiler.compile_spans(name, times, t0)
  _log_compile_times(name, times)
  _compiled_by_jaxpr[staged.jaxpr] = comp
  return comp


def preload_backend() -> None:
  """Import the compiler (passes, lowering, LLVM via llvmlite) and initialize LLVM for the
  host CPU now: a process's first jitted call otherwise pays this (~40-90 ms) on top of
  its own compilation. Idempotent."""
  from ember._src import lower, persistent_cache  # noqa: F401
  from ember._src.backends.cpu import compiler, llvm_jit  # noqa: F401
  from ember._src.passes import buffer_assignment, pipeline  # noqa: F401
  for name in pipeline.PASSES:
    pipeline.get_pass(name)
  llvm_jit.shared_target_machine(llvm_jit.LLVM_TIERS[compile_flags().opt_level].codegen_level)


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
  import logging
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
    from ember._src.lower import lower_jaxpr
    module = lower_jaxpr(jaxpr, name, arg_names=arg_names, donated=donated)
    comp = _compiled_by_jaxpr[jaxpr] = compile_module(module, jaxpr.out_avals)
  return comp


class Compiled:
  """A compiled call signature: optimized HLO text, costs, memory, and callable."""

  def __init__(self, computation: CompiledComputation, staged: Staged):
    self._computation, self._staged = computation, staged

  def as_text(self) -> str:
    return self._computation.as_text()

  def cost_analysis(self) -> dict:
    from ember._src.analysis import cost_analysis
    return cost_analysis(self._computation.module)

  def memory_analysis(self):
    from ember._src.analysis import memory_analysis
    c = self._computation
    return memory_analysis(c.module, c.assignment, getattr(c.executable, "code_size", 0))

  def runtime_executable(self):
    return self._computation.executable

  @property
  def compile_times(self) -> dict[str, float]:
    """Seconds per compile stage (ember's; JAX has no counterpart): `trace`, `lower`,
    `compile` (everything after lowering, as `Finished XLA compilation` logs it) and its
    split (see `compile_module`), for the compilation that made this executable."""
    return dict(self._computation.compile_times)

  def __call__(self, *args, **kwargs):
    from ember._src import tree_util
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self._staged.in_tree:
      raise TypeError(f"Compiled function {self._staged.name} called with a different "
                      f"argument structure: expected {self._staged.in_tree}, got {in_tree}")
    staged = self._staged
    donate = tuple(i for i, d in enumerate(staged.donated) if d)
    outs = self._computation.run([*staged.consts, *leaves], donate)
    return staged.out_tree.unflatten(outs)


def check_against_reference(comp: CompiledComputation, np_args, outs) -> None:
  """Checked mode: re-run the optimized module with the reference HLO evaluator and report
  the first top-level instruction whose compiled result differs."""
  from ember._src import hlo_eval
  ref = hlo_eval.evaluate(comp.module, np_args)
  tol = _module_tolerance(comp.module)
  for i, (r, o) in enumerate(zip(ref, outs)):
    if not _close(r, o, tol):
      where = _first_differing_instruction(comp, np_args)
      raise AssertionError(
          f"ember_check_compiled: output {i} of {comp.module.name} differs from the reference "
          f"interpreter (max abs diff {np.max(np.abs(np.asarray(r, np.float64) - np.asarray(o, np.float64)))})"
          + (f"; first differing HLO instruction: {where}" if where else ""))


_TOLERANCE = {2: 1e-2, 4: 1e-5, 8: 1e-12}   # by bytes of a real float (component)


def _is_float(dtype) -> bool:
  """A real or complex float dtype, bfloat16 included (NumPy calls it kind 'V')."""
  dtype = np.dtype(dtype)
  return dtype.kind in "fc" or dtype.name == "bfloat16"


def _float_tolerance(dtype) -> float:
  dtype = np.dtype(dtype)
  return _TOLERANCE.get(dtype.itemsize // (2 if dtype.kind == "c" else 1), 1e-5)


def _module_tolerance(module: hlo.Module) -> float:
  """The tolerance of the least precise float any instruction computes in: a float64 output
  of a complex64 sum differs from the reference by float32's rounding, not float64's."""
  tol = 0.0
  for c in module.computations:
    for instr in c.instrs:
      shapes = instr.shape.elements if isinstance(instr.shape, hlo.TupleShape) else (instr.shape,)
      for shape in shapes:
        dt = getattr(shape, "dtype", None)
        if dt is not None and _is_float(dt):
          tol = max(tol, _float_tolerance(dt))
  return tol


def _close(a, b, tol: float = 0.0) -> bool:
  """Equal, floats within their dtype's tolerance or `tol` if larger (NaN meets NaN)."""
  a, b = np.asarray(a), np.asarray(b)
  if a.shape != b.shape:
    return False
  if _is_float(a.dtype):
    tol = max(tol, _float_tolerance(a.dtype))
    if a.dtype.kind == "c":   # per component: -inf+1j and -inf+(1+ulp)j are close
      return _close(np.stack([a.real, a.imag]), np.stack([b.real, b.imag]), tol)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return bool(np.allclose(a64, b64, rtol=tol, atol=tol, equal_nan=True))
  return bool(np.array_equal(a, b))


def _values_close(ref, got, tol: float) -> bool:
  """`_close` for an instruction's value: an array, or a tuple of them (multi-output
  fusions, multi-operand reduces and sorts)."""
  if isinstance(ref, tuple) or isinstance(got, tuple):
    return isinstance(ref, tuple) and isinstance(got, tuple) and len(ref) == len(got) and \
        all(_values_close(r, g, tol) for r, g in zip(ref, got))
  return _close(ref, got, tol)


def _first_differing_instruction(comp: CompiledComputation, np_args) -> str | None:
  """Compare every top-level instruction's compiled value (when the executable can keep
  intermediates) with the reference evaluator's."""
  run_all = getattr(comp.executable, "execute_keep_intermediates", None)
  if run_all is None:
    return None
  from ember._src import hlo_eval
  compiled_vals = run_all(np_args)            # instruction name -> array
  ref_vals = hlo_eval.evaluate_intermediates(comp.module, np_args)
  tol = _module_tolerance(comp.module)
  for instr in comp.module.entry.instrs:
    if instr.name in compiled_vals and instr.name in ref_vals:
      if not _values_close(ref_vals[instr.name], compiled_vals[instr.name], tol):
        return hlo.instr_to_text(instr).strip()
  return None

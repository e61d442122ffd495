"""The stages of a jitted function: Traced -> Lowered -> Compiled (JAX's AOT API).

`jit(f).trace(*args)` gives a `Traced` (the jaxpr), `.lower()` a `Lowered` (the StableHLO
module, `as_text()`), `.compile()` a `Compiled` (the optimized HLO, `as_text()`,
`cost_analysis()`, `memory_analysis()`, callable). A plain call of a jitted function goes
through the same stages; `CompiledComputation` is the part of `Compiled` that `jit_p`'s
eval rule runs, independent of pytrees.
"""
from __future__ import annotations

import copy
import hashlib
import weakref
from typing import Any, NamedTuple, Sequence

import numpy as np

from ember._src import core, hlo
from ember._src.config import config


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
    return Lowered(lower_staged(self._staged), self._staged)


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

  def __init__(self, module: hlo.Module, staged: Staged):
    self._module, self._staged = module, staged
    self._compiled: Compiled | None = None

  def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
    if dialect not in (None, "stablehlo", "hlo"):
      raise ValueError(f"Lowered.as_text: unknown dialect {dialect!r}; use 'stablehlo' or 'hlo'")
    if dialect == "hlo":
      return hlo.to_text(self._module)
    from ember._src.lower.mlir import to_mlir_text
    return to_mlir_text(self._module, debug_info=debug_info)

  def compiler_ir(self, dialect: str | None = None) -> hlo.Module:
    return self._module

  def cost_analysis(self) -> dict:
    """Cost of the unoptimized module (before fusion), as JAX's Lowered.cost_analysis."""
    from ember._src.analysis import cost_analysis
    return cost_analysis(self._module)

  def compile(self) -> "Compiled":
    if self._compiled is None:
      comp = compile_module(clone_module(self._module), self._staged.jaxpr.out_avals)
      self._compiled = Compiled(comp, self._staged)
    return self._compiled


class CompiledComputation:
  """An optimized module with its executable; `run` executes it on flat arguments."""

  def __init__(self, module: hlo.Module, executable, assignment, out_avals):
    self.module, self.executable, self.assignment = module, executable, assignment
    self.out_avals = list(out_avals)
    self._text: str | None = None

  def as_text(self) -> str:
    if self._text is None:
      self._text = hlo.to_text(self.module)
    return self._text

  def run(self, args: Sequence) -> list:
    """Dispatch the executable on `args` (asynchronous dispatch: see runtime/executor.py);
    arguments that are pending Arrays are resolved on the executor thread."""
    from ember._src.runtime import executor
    in_avals = [p.shape for p in self.module.entry.params]
    host_args = [executor.host_arg(a, _to_host) for a in args]
    for i, (x, s) in enumerate(zip(host_args, in_avals)):
      if x.dtype != s.dtype or x.shape != tuple(s.dims):
        raise TypeError(f"argument {i} of {self.module.name} has type "
                        f"{x.dtype.name}{list(x.shape)}, but it was compiled for "
                        f"{np.dtype(s.dtype).name}{list(s.dims)}")
    if config.read("ember_check_compiled"):  # checked mode reports a mismatch at the call
      def checked(np_args):
        outs = self.executable.execute(np_args)
        check_against_reference(self, np_args, outs)
        return outs
      return executor.dispatch(checked, host_args, self.out_avals, sync=True)
    return executor.dispatch(self.executable.execute, host_args, self.out_avals)


def _to_host(a) -> np.ndarray:
  return _contiguous(core.to_numpy(a))


def _contiguous(x: np.ndarray) -> np.ndarray:
  # np.ascontiguousarray would turn a 0-d array into a 1-d one
  return x if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(x.shape)


def compile_module(module: hlo.Module, out_avals) -> CompiledComputation:
  """Optimize `module` (in place) and generate its native code."""
  import time
  from ember._src import flags as flags_mod
  from ember._src import persistent_cache
  from ember._src.passes.buffer_assignment import assign_buffers
  from ember._src.passes.pipeline import optimize
  started = time.perf_counter()
  flags = flags_mod.get()
  module = optimize(module, flags)
  assignment = assign_buffers(module)
  key = None if flags.dump_to else (structural_key(module), flags)
  executable = _executables.get(key) if key else None
  if executable is None:
    # native code from the persistent cache directory when one is set, else codegen
    executable = persistent_cache.compile_or_load(module, assignment, flags, started)
    if key:
      _executables[key] = executable
  return CompiledComputation(module, executable, assignment, out_avals)


# Native code by structure: two jitted functions whose optimized modules differ only in
# names and metadata (a re-created lambda, another argument name) share one executable.
_executables: dict = {}


def structural_key(module: hlo.Module) -> tuple:
  """Every computation's instructions as (opcode, shape, operand positions, attributes,
  called computation positions), names and metadata left out: equal keys mean
  interchangeable executables."""
  comps = module.called_computations()
  comp_pos = {id(c): n for n, c in enumerate(comps)}

  def attr(v):
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
      v = np.asarray(v)
      return (v.dtype.str, v.shape, hashlib.sha256(np.ascontiguousarray(v).tobytes()).digest())
    try:
      hash(v)
      return v
    except TypeError:
      return repr(v)

  key = []
  for c in comps:
    pos = {i.id: n for n, i in enumerate(c.instrs)}
    key.append(tuple(
        (i.opcode, i.shape, tuple(pos[o.id] for o in i.operands),
         tuple(sorted((k, attr(v)) for k, v in i.attrs.items())),
         tuple(comp_pos[id(sub)] for sub in i.called), i is c.root)
        for i in c.instrs))
  return tuple(key), tuple(sorted(module.input_output_alias.items()))


def clone_module(module: hlo.Module) -> hlo.Module:
  """A deep copy that passes may rewrite without touching the original (Lowered keeps it)."""
  return copy.deepcopy(module)


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

  def __call__(self, *args, **kwargs):
    from ember._src import tree_util
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != self._staged.in_tree:
      raise TypeError(f"Compiled function {self._staged.name} called with a different "
                      f"argument structure: expected {self._staged.in_tree}, got {in_tree}")
    outs = self._computation.run([*self._staged.consts, *leaves])
    return self._staged.out_tree.unflatten(outs)


def check_against_reference(comp: CompiledComputation, np_args, outs) -> None:
  """Checked mode: re-run the optimized module with the reference HLO evaluator and report
  the first top-level instruction whose compiled result differs."""
  from ember._src import hlo_eval
  ref = hlo_eval.evaluate(comp.module, np_args)
  for i, (r, o) in enumerate(zip(ref, outs)):
    if not _close(r, o):
      where = _first_differing_instruction(comp, np_args)
      raise AssertionError(
          f"ember_check_compiled: output {i} of {comp.module.name} differs from the reference "
          f"interpreter (max abs diff {np.max(np.abs(np.asarray(r, np.float64) - np.asarray(o, np.float64)))})"
          + (f"; first differing HLO instruction: {where}" if where else ""))


def _close(a, b) -> bool:
  a, b = np.asarray(a), np.asarray(b)
  if a.shape != b.shape:
    return False
  if a.dtype.kind in "fc" or str(a.dtype) == "bfloat16":
    a64, b64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), \
        b.astype(np.complex128 if b.dtype.kind == "c" else np.float64)
    part = a.dtype.itemsize // (2 if a.dtype.kind == "c" else 1)  # complex: per component
    tol = {2: 1e-2, 4: 1e-5, 8: 1e-12}.get(part, 1e-5)
    return bool(np.allclose(a64, b64, rtol=tol, atol=tol, equal_nan=True))
  return bool(np.array_equal(a, b))


def _first_differing_instruction(comp: CompiledComputation, np_args) -> str | None:
  """Compare every top-level instruction's compiled value (when the executable can keep
  intermediates) with the reference evaluator's."""
  run_all = getattr(comp.executable, "execute_keep_intermediates", None)
  if run_all is None:
    return None
  from ember._src import hlo_eval
  compiled_vals = run_all(np_args)            # instruction name -> array
  ref_vals = hlo_eval.evaluate_intermediates(comp.module, np_args)
  for instr in comp.module.entry.instrs:
    if instr.name in compiled_vals and instr.name in ref_vals:
      if not _close(ref_vals[instr.name], compiled_vals[instr.name]):
        return hlo.instr_to_text(instr).strip()
  return None

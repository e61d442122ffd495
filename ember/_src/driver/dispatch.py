"""The dispatcher: running a compiled computation on flat arguments.

`CompiledComputation` is an optimized module with its executable (what the compile driver,
driver/compilation.py, hands back); `run` checks and converts the arguments, hands donated buffers
over, and dispatches the executable asynchronously on the executor (runtime/executor.py);
`hit_runner` is the cached-call fast path of one jit signature, which runs a small call
inline, straight into the executable. Checked mode (driver/check_compiled.py) and traces
(profiler) are honoured per call.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ember._src.driver import check_compiled
from ember._src import core
from ember._src.hlo import graph as hlo
from ember._src.base.config import config
from ember._src.base.errors import JaxRuntimeError
from ember._src.base import profiler_events as _profiler
from ember._src.core import array as array_module
from ember._src.core import trace as trace_lib
from ember._src.runtime import executor
from ember._src.core.array import Array, ready_ptr
from ember._src.reference import host_callbacks


class CompiledComputation:
  """An optimized module with its executable; `run` executes it on flat arguments."""

  def __init__(self, module: hlo.Module, executable, assignment, out_avals,
               estimated_ns: float):
    self.module, self.executable, self.assignment = module, executable, assignment
    self.out_avals = list(out_avals)
    self.compile_times: dict[str, float] = {}   # seconds per stage (compile_module)
    self.flags = None                           # the compiler flags it was compiled with
    self.estimated_ns = estimated_ns            # single-core run time (cost model)
    self._text: str | None = None
    self._plan: _RunPlan | None = None

  def as_text(self) -> str:
    if self._text is None:
      self._text = hlo.to_text(self.module)
    return self._text

  def run(self, args: Sequence, donate: Sequence[int] = (), trusted: bool = False,
          device: int = 0) -> list:
    """Dispatch the executable on `args` (asynchronous dispatch: see runtime/executor.py);
    arguments that are pending Arrays are resolved on the executor thread.

    `donate`: positions of donated arguments. They are deleted (Arrays) and, where the
    executable computes an output into that parameter, an Array's buffer is handed over
    without a copy when nothing else can reach it (else, and for NumPy arguments, a copy).
    `trusted`: the caller's signature key already fixes every argument's shape and dtype.
    `device`: the id of the device to run on (its executor's queue)."""
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
            p = ready_ptr(a)
            buf = a._buf
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
    if config._values["ember_check_compiled"]:
      # checked mode reports a mismatch at the call
      return executor.dispatch(plan.checked_call, host, plan.out_specs, ptrs=ptrs, sync=True)
    if plan.sync_only:
      return executor.dispatch(plan.call, host, plan.out_specs, ptrs=ptrs, sync=True)
    return executor.dispatch(plan.call, host, plan.out_specs, ptrs=ptrs, small=plan.small,
                             user_arrays=user, device=device)

  def hit_runner(self, consts: Sequence, donate: Sequence[int],
                 finish: Callable[[list], Any], result_kind: int | None = None
                 ) -> Callable[[Sequence], Any]:
    """`finish(run([*consts, *leaves], donate, trusted=True))` as a function of `leaves`, for
    the cache hits of one jit signature (which fixed the leaves' shapes and dtypes). A small
    call whose arguments are all ready Arrays (made C-contiguous once where small: see
    array.ready_ptr), Python or NumPy numbers or NumPy arrays runs inline here, straight into
    the executable (its one direct kernel call when it has one), unless the configuration
    asks otherwise now (no asynchronous dispatch, the executor busy, checked mode, a
    profile), the executable was swapped, or the call donates: `run` does all of that, and
    is the fallback.

    The inline runner has `native(arg_types, trace_key)`: the same call as one builtin
    function (backends/cpu/native_hit.py) for calls whose arguments are all Arrays of
    `arg_types` ((shape, dtype, weak type) each), or None; it returns NATIVE_MISS for a
    call it leaves to the runner. `result_kind` (native_hit.RESULT_*, None: no builtin)
    says what `finish` builds."""
    run = self.run

    def generic(leaves):
      return finish(run([*consts, *leaves] if consts else leaves, donate, trusted=True))
    from ember._src.backends.cpu.executable import Executable   # deferred: backend on first run
    plan = self._plan
    if plan is None or plan.executable is not self.executable:
      plan = self._plan = _RunPlan(self)
    ex = self.executable
    if donate or plan.sync_only or not plan.small or type(ex) is not Executable:
      return generic
    direct, execute_ptrs = ex.execute_direct, ex.execute_ptrs
    out_specs, name = plan.out_specs, plan.name
    weak_types = [w for _, _, w in out_specs]
    idle, ready_all = executor.idle, Array._ready_all
    in_dtypes = [dt for dt, _ in plan.in_specs]

    def runner(leaves):
      args = [*consts, *leaves] if consts else leaves
      # (config._jit_inline: asynchronous dispatch on, checked mode off)
      if config._jit_inline and not _profiler.active and self.executable is ex and idle():
        bufs, ptrs = [], []
        for a, dt in zip(args, in_dtypes):
          t = type(a)
          if t is Array:
            if a._deleted:
              break
            buf = a._buf
            if buf is None or a._ptr is None:   # pending, or a new or non-C-contiguous one
              if buf is None or ready_ptr(a) is None:
                break
              buf = a._buf
            ptrs.append(a._ptr)
          elif t in HOST_LEAF_TYPES:   # read now, synchronously: no copy kept for later
            # (the signature fixed the dtype; a Python int beyond int32 is get_aval's to
            # check, with its error)
            buf = _contiguous(np.asarray(a, dt)) if t is not int or -_I32 <= a < _I32 \
                else _to_host(a)
            ptrs.append(None)
          else:
            break
          bufs.append(buf)
        else:
          try:
            r = direct(bufs) or execute_ptrs(bufs, [
                b.ctypes.data if p is None else p for p, b in zip(ptrs, bufs)])
          except Exception as e:  # noqa: BLE001 -- deferred to the wait, as dispatch does
            return finish(executor.failed(_runtime_error(e, name), out_specs))
          # (allocation stacks: constructor 3, whose user frame is 4 up: _alloc_stack,
          # _ready_all, this runner, PjitFunction.__call__, its only caller)
          return finish(ready_all(r[0], r[1], weak_types, 3, True))
      return generic(leaves)

    def native(arg_types, trace_key):
      if result_kind is None:
        return None
      from ember._src.backends.cpu import native_hit   # (loaded with the backend)
      guards = [(_profiler, "active", False), (config, "_jit_trace_key", trace_key),
                (config, "_jit_inline", True), (trace_lib, "_open_traces", 0),
                (self, "executable", ex), (ex, "_frame_lock", ex._frame_lock)]
      return native_hit.hit_function(
          array_module=array_module, executable=ex, consts=consts, arg_types=arg_types,
          guards=guards, idle=executor.idle, out_specs=out_specs, result=result_kind,
          free_gil=self.estimated_ns > NATIVE_HOLDS_GIL_NS, miss=NATIVE_MISS)
    runner.native = native
    return runner


# Leaves an inline cache hit converts itself to the signature's dtype: Python and NumPy
# numbers, NumPy arrays. (Through the asynchronous path a call with one cost ~15 us, not ~5-8.)
NUMPY_SCALAR_TYPES = frozenset(t for t in set(np.sctypeDict.values())
                               if issubclass(t, (np.bool_, np.number)))
HOST_LEAF_TYPES = frozenset({np.ndarray, float, int, bool, complex}) | NUMPY_SCALAR_TYPES
_I32 = 1 << 31

# What a native cache hit returns for a call it leaves to the Python path
NATIVE_MISS = object()
# A native cache hit keeps the GIL through kernels estimated to run shorter than this
# (releasing and taking it back costs ~0.1 us); longer ones let other threads run
NATIVE_HOLDS_GIL_NS = 20_000


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



class _RunPlan:
  """What `CompiledComputation.run` needs per call, computed once per executable."""

  def __init__(self, comp: CompiledComputation):
    # deferred: the backend loads when a computation first runs, not with `import ember`
    from ember._src.backends.cpu import host, profiled
    # deferred: the compiler loads at the first compile, not with `import ember`
    from ember._src.backends.cpu.executable import Executable
    self.executable = ex = comp.executable
    self.name = comp.module.name
    self.in_specs = [(np.dtype(p.shape.dtype), tuple(p.shape.dims))
                     for p in comp.module.entry.params]
    self.out_specs = [(av.shape, av.dtype, av.weak_type) for av in comp.out_avals]
    # run at the call: results of extended dtypes; a program calling the user's Python,
    # whose exception the call raises (JAX runs such a program synchronously)
    self.sync_only = not all(isinstance(av.dtype, np.dtype) for av in comp.out_avals) or \
        _calls_user_code(comp.module)
    nbytes = sum(dt.itemsize * int(np.prod(d, dtype=np.int64)) for dt, d in self.in_specs)
    nbytes += sum(av.dtype.itemsize * int(np.prod(av.shape, dtype=np.int64))
                  for av in comp.out_avals if isinstance(av.dtype, np.dtype))
    self.small = nbytes < executor._INLINE_BYTES or \
        comp.estimated_ns / host.num_threads() < executor.INLINE_NS
    self.aliased = frozenset(getattr(ex, "donated", ()))
    name = self.name
    if type(ex) is Executable:
      execute_ptrs = ex.execute_ptrs

      def call(np_args, ptrs):
        try:
          outs, optrs = execute_ptrs(np_args, ptrs) if not _profiler.active else \
              profiled.execute(ex, comp.module.entry, name, np_args, ptrs)
        except JaxRuntimeError:   # already JAX's class (its cause kept: no `from` itself)
          raise
        except Exception as e:  # noqa: BLE001 -- JAX's class for failures while running
          raise _runtime_error(e, name) from e
        for o in outs:
          o.setflags(False)   # write=False: an Array's memory is read-only to everyone
        return outs, optrs
    else:   # another executable object (a test's stand-in): its plain `execute`
      def call(np_args, ptrs):
        try:
          outs = ex.execute(np_args)
        except JaxRuntimeError:
          raise
        except Exception as e:  # noqa: BLE001
          raise _runtime_error(e, name) from e
        return [_sealed(o) for o in outs], None
    self.call = call

    def checked_call(np_args, ptrs):
      outs, optrs = call(np_args, ptrs)
      check_compiled.check_against_reference(comp, np_args, outs)
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


def _calls_user_code(module: hlo.Module) -> bool:
  return any(host_callbacks.runs_user_code(i) for c in module.computations for i in c.instrs)


def _sealed(o) -> np.ndarray:
  o = np.asarray(o)
  if o.flags.writeable:
    o = o.copy() if o.base is not None else o
    o.flags.writeable = False
  return o


def _runtime_error(e: Exception, name: str) -> Exception:
  """An error raised while running a computation, as JAX raises it: a JaxRuntimeError whose
  message carries the original's (kept as __cause__)."""
  if isinstance(e, JaxRuntimeError):
    return e
  status = "RESOURCE_EXHAUSTED" if isinstance(e, MemoryError) else "INTERNAL"
  return JaxRuntimeError(f"{status}: running {name} failed: {type(e).__name__}: {e}")


def _to_host(a) -> np.ndarray:
  return _contiguous(core.to_numpy(a))


def _contiguous(x: np.ndarray) -> np.ndarray:
  # np.ascontiguousarray would turn a 0-d array into a 1-d one
  return x if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(x.shape)

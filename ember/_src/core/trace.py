"""The interpreter stack: Trace, eager evaluation, bind, and eval_jaxpr.

This module is the one home of the tracing state: the calling thread's trace stack, dynamic
(staging) trace and named_scope names (`_state`; `trace_stack` and `dynamic_trace` read
it as module attributes), the count of open traces in all threads (`_open_traces`, read by
the jit fast path), the concrete array type that array.py registers (`register_array_type`)
and the eager hook (`eager_hook`, driver/eager.py's). Read them here, never through the
`ember._src.core` namespace (a global rebound after import would be stale there).

Level 0 is the eval trace (EvalTrace: each primitive's NumPy implementation, its results
wrapped as concrete arrays); `new_main` / `new_dynamic` push the others.
`bind(prim, *args, **params)` finds the innermost trace of its arguments and the dynamic
trace, raises the arguments into it and lets it process the primitive. `eval_jaxpr`
re-binds a jaxpr's equations through the same stack, so it interprets under any trace.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src.base import denormals, errors
from ember._src.base.config import config
from ember._src.core import leak_check
from ember._src.core.avals import ShapedArray, get_aval
from ember._src.core.jaxpr import DropVar, Jaxpr, Literal
from ember._src.core.tracers import Tracer

# `bind` is annotated Primitive (primitive.py, which imports this module): annotations stay
# unevaluated strings here (`from __future__ import annotations`).


class MainTrace(NamedTuple):
  level: int
  trace_type: type
  global_data: Any


class Trace:
  """The interface of an interpreter (eval, jaxpr building, jvp, batching): each subclass
  defines `pure`/`lift` and `process_primitive`."""
  def __init__(self, main: MainTrace):
    self.main = main

  def pure(self, val):
    raise NotImplementedError(f"{type(self).__name__} must define pure (an abstract method)")

  lift = pure

  def process_primitive(self, primitive, tracers, params):
    raise NotImplementedError(f"{type(self).__name__} must define process_primitive "
                              "(an abstract method)")


# `run(prim, vals, params) -> outs | None`: driver/eager.py's choice of how an eager
# primitive runs (compiled, or on a PJRT device); None lets EvalTrace run the reference.
eager_hook: list = [None]


class EvalTrace(Trace):
  """Level 0: run each primitive eagerly through its NumPy implementation."""

  def pure(self, val):
    return val

  lift = pure

  def process_primitive(self, primitive, vals, params):
    return eval_primitive(primitive, vals, params)


def eval_primitive(primitive, vals, params) -> list:
  """The eval trace's work: the eager hook (driver/eager.py: compiled or reference), else
  the reference."""
  hook = eager_hook[0]
  if hook is not None:
    outs = hook(primitive, vals, params)
    if outs is not None:
      return outs
  return eval_reference(primitive, vals, params)


def eval_reference(primitive, vals, params) -> list:
  """`primitive` applied to concrete `vals` by its NumPy reference (or its eval rule)."""
  if primitive.eval_rule is not None:
    out = primitive.eval_rule(*vals, **params)
    outs = out if primitive.multiple_results else [out]
    if any(not isinstance(o, Tracer) and getattr(o, "_value", None) is None for o in outs):
      # Literal or passed-through outputs of a sub-jaxpr come back as raw Python/NumPy
      # values (`jit(lambda x: (x, 2.0))(1)`): return them as Arrays of their out avals.
      out_avals = primitive.out_avals([get_aval(v) for v in vals], params)
      outs = [o if isinstance(o, Tracer) or getattr(o, "_value", None) is not None
              else _wrap_result(_raw_value(o, a), a) for o, a in zip(outs, out_avals)]
    return outs
  in_avals = [get_aval(v) for v in vals]
  if primitive.extended_eval is not None and \
      any(not isinstance(a.dtype, np.dtype) for a in in_avals):
    out = primitive.extended_eval(*vals, **params)
    return out if primitive.multiple_results else [out]
  out_avals = primitive.out_avals(in_avals, params)
  np_args = [to_numpy(v, a) for v, a in zip(vals, in_avals)]
  # XLA:CPU computes with subnormals flushed to zero (base/denormals.py): the NumPy code
  # too, so a reference gives the compiled op's bits
  modes = denormals.flush_on()
  try:
    out = primitive.impl(*np_args, **params)
    outs = out if primitive.multiple_results else [out]
    return [_wrap_result(o, a) for o, a in zip(outs, out_avals)]
  finally:
    if modes >= 0:
      denormals.restore(modes)


def to_numpy(v, aval: ShapedArray | None = None) -> np.ndarray:
  """A concrete value as a NumPy array in its (canonical) dtype."""
  val = getattr(v, "_value", None)
  if val is not None:
    return val
  aval = aval or get_aval(v)
  return np.asarray(v, dtype=aval.dtype)


def _raw_value(o, aval: ShapedArray):
  """A raw Python/NumPy output as a NumPy array of its type (of a user's extended dtype:
  as it is, the physical values)."""
  return np.asarray(o, aval.dtype) if isinstance(aval.dtype, np.dtype) else o


def _wrap_result(x, aval: ShapedArray):
  if not isinstance(aval.dtype, np.dtype):   # a user's extended dtype: an EArray of x
    return extended_array_type[0](aval, x)
  x = np.asarray(x)
  if x.dtype != aval.dtype:
    x = x.astype(aval.dtype)
  if x.shape != aval.shape:
    raise AssertionError(f"impl produced shape {x.shape}, abstract_eval said {aval.shape}")
  return new_array(x, weak_type=aval.weak_type)


# The concrete array type (core/array.Array) sits above the tracing modules (it imports
# them) and registers itself here when its module is imported: eager evaluation returns
# arrays of it, and staging writes its 0-d ones inline as literals.
_array_type: type | None = None


# (aval of a user's extended dtype, its physical values) -> its concrete array (an EArray:
# core/earray.py, above this module, sets it)
extended_array_type: list = [None]


def register_array_type(cls: type) -> None:
  global _array_type
  _array_type = cls


def new_array(value: np.ndarray, weak_type: bool = False):
  """A concrete array (of the registered type) holding the NumPy array `value`."""
  return _array_type(value, weak_type=weak_type)


def is_concrete_array(x) -> bool:
  return _array_type is not None and isinstance(x, _array_type)


class _TraceState(threading.local):
  """The interpreter stack and the staging trace of the calling thread. Each thread traces
  on its own (two threads may jit at once); a new thread starts at the eval trace.
  `named_scope`'s stack and the equation eval_jaxpr is re-binding live here too."""

  def __init__(self):
    self.trace_stack: list[MainTrace] = [MainTrace(0, EvalTrace, None)]
    self.dynamic_trace: MainTrace | None = None
    self.name_stack: list[str] = []
    self.replayed = None   # the source of the equation eval_jaxpr is re-binding, if any
    self.ref_frames: list = []   # the staging scopes' views of outer refs (core/refs.py)


_state = _TraceState()
leak_check.open_traces = lambda: _state.trace_stack

# the old module attributes, read as this thread's state (`trace_lib.trace_stack`, ...)
_STATE_ATTRS = {"trace_stack": "trace_stack", "dynamic_trace": "dynamic_trace",
                "_name_stack": "name_stack"}


def __getattr__(name):
  if name in _STATE_ATTRS:
    return getattr(_state, _STATE_ATTRS[name])
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# How many new_main / new_dynamic blocks are open in all threads: while none is, every
# thread is at the eval trace, which cur_level_is_eval (on every jitted call) then knows
# without reading the thread-local state (~0.3 us on a slow box).
_open_traces = 0
_open_lock = threading.Lock()


def _count_open(delta: int) -> None:
  global _open_traces
  with _open_lock:
    _open_traces += delta


@contextlib.contextmanager
def new_main(trace_type: type, global_data=None):
  check_leaks = config._values["jax_check_tracer_leaks"]
  if check_leaks:   # the traces closed before this one: their functions have returned
    leak_check.check()
  stack = _state.trace_stack
  level = len(stack)
  main = MainTrace(level, trace_type, global_data)
  _count_open(1)
  stack.append(main)
  try:
    yield main
  finally:
    stack.pop()
    _count_open(-1)
    if check_leaks:
      leak_check.closed(main)


@contextlib.contextmanager
def new_dynamic(main: MainTrace):
  """Make `main` the staging trace that captures even constant-only computations."""
  state = _state
  _count_open(1)
  prev, state.dynamic_trace = state.dynamic_trace, main
  try:
    yield
  finally:
    state.dynamic_trace = prev
    _count_open(-1)


def _check_alive(val: "Tracer") -> None:
  main, stack = val._trace.main, _state.trace_stack
  if main.level >= len(stack) or stack[main.level] is not main:
    raise errors.UnexpectedTracerError(
        f"Encountered an unexpected tracer ({val!r}): a value computed inside a "
        "transformed function (jit, grad, vmap, ...) was kept after that function "
        "returned (a leaked tracer), e.g. stored in a global, a list or an object "
        "attribute. Return it as an output of the function instead.")


def find_top_trace(xs) -> Trace:
  tracers = [x for x in xs if isinstance(x, Tracer)]
  for t in tracers:
    _check_alive(t)
  state = _state
  top = max((x._trace.main for x in tracers), default=state.trace_stack[0],
            key=lambda m: m.level)
  dynamic = state.dynamic_trace
  if dynamic is not None and dynamic.level > top.level:
    top = dynamic
  return top.trace_type(top)


class OpaqueTraceState:
  """The trace in context, comparable only for identity (what
  jax.extend.core.get_opaque_trace_state gives): libraries check with it that code runs
  under the same transformation as when they set something up (flax's scopes)."""
  __slots__ = ("_main",)
  __hash__ = None  # as JAX's: equality only

  def __init__(self, main: MainTrace):
    self._main = main

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and other._main is self._main


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
  """The innermost trace in context (the eval trace outside every transformation)."""
  del convention  # JAX's argument naming the caller's convention ("flax"); one state here
  return OpaqueTraceState(_state.trace_stack[-1])


class TraceTag:
  """A tag naming a transformation's traces (JAX's): every tag compares equal and hashes
  alike, so a cache keyed by one never misses for the tag alone."""

  def __hash__(self):
    return hash(TraceTag)

  def __eq__(self, other):
    return isinstance(other, TraceTag)


def _innermost_main() -> MainTrace:
  state = _state
  top, dynamic = state.trace_stack[-1], state.dynamic_trace
  return dynamic if dynamic is not None and dynamic.level > top.level else top


@contextlib.contextmanager
def take_current_trace():
  """The innermost trace in context (the eval trace outside every transformation): a
  library's primitive hands its operands to `trace.process_primitive` with it."""
  main = _innermost_main()
  yield main.trace_type(main)


@contextlib.contextmanager
def set_current_trace(trace: Trace, check_leaks: bool = False):
  """Run the block under `trace`. ember finds an operation's trace from its operands (and
  the staging trace), so only the eval trace needs setting: under it, operations on
  concrete values run at once, even while jit traces (JAX's `eval_context`). Any other
  trace is the one the operands already name: nothing changes (values are JAX's: under
  `ensure_compile_time_eval` concrete operations still run at once, as JAX folds them)."""
  del check_leaks   # ember checks leaks when a trace closes (jax_check_tracer_leaks)
  if trace.main.level != 0:
    yield
    return
  with new_dynamic(None):
    yield


def full_raise(trace: Trace, val):
  if not isinstance(val, Tracer):
    return trace.pure(val)
  vmain = val._trace.main
  if vmain is trace.main:
    return val
  if vmain.level < trace.main.level:
    return trace.lift(val)
  raise errors.UnexpectedTracerError(
      f"Different traces at the same level: {val!r} cannot be used in {trace!r}.")


def full_lower(val):
  return val.full_lower() if isinstance(val, Tracer) else val


def bind(prim: Primitive, /, *args, **params):  # positional-only: a param may be named `prim`
  if not _open_traces and prim.named_trace is None:
    # no trace open in any thread: the eval trace's, without finding it (eager code's
    # every op; a Tracer here leaked from a closed trace, for find_top_trace to report)
    for a in args:
      if isinstance(a, Tracer):
        break
    else:
      outs = eval_primitive(prim, args, params)
      return list(outs) if prim.multiple_results else outs[0]
  trace = find_top_trace(args)
  if prim.named_trace is not None:
    trace = prim.named_trace(trace, params)
  tracers = [full_raise(trace, a) for a in args]
  outs = trace.process_primitive(prim, tracers, params)
  if prim.multiple_results:
    return [full_lower(o) for o in outs]
  return full_lower(outs[0])


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Inside this block, operations whose inputs are all concrete run at once, even while
  jit traces: they give concrete arrays rather than staging into the jaxpr. Operations on
  tracers still stage."""
  with new_dynamic(None):
    yield


# jax.core.eval_context: the same thing under JAX's older name
eval_context = ensure_compile_time_eval


@contextlib.contextmanager
def at_eval_level():
  """The calling thread at the eval trace for the block, its open traces set aside: a
  computation on concrete values (driver/eager.py's compiled call of a primitive that a jvp
  or vmap applies to concrete primals) runs as at top level; the traces come back after."""
  state = _state
  stack, dynamic = state.trace_stack, state.dynamic_trace
  state.trace_stack, state.dynamic_trace = stack[:1], None
  try:
    yield
  finally:
    state.trace_stack, state.dynamic_trace = stack, dynamic


def cur_level_is_eval() -> bool:
  if not _open_traces:   # no trace open in any thread
    return True
  state = _state
  return len(state.trace_stack) == 1 and state.dynamic_trace is None


# ------------------------------------------------------------------------------------
# The reference interpreter
# ------------------------------------------------------------------------------------


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence, *args) -> list:
  """Run a jaxpr equation by equation with `bind` (so it also works under any trace)."""
  env: dict[int, Any] = {}

  def read(a):
    if isinstance(a, Literal):
      return literal_value(a)
    return env[id(a)]

  # as JAX's: the consts and the arguments together bind constvars + invars (a jaxpr whose
  # consts were hoisted into leading invars takes them as `consts`)
  binders, values = jaxpr.constvars + jaxpr.invars, [*consts, *args]
  if len(values) != len(binders):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  for v, x in zip(binders, values):
    env[id(v)] = x
  state = _state
  saved = state.replayed
  try:
    for eqn in jaxpr.eqns:
      state.replayed = eqn.source_info if eqn.source_info.file else saved
      outs = bind(eqn.primitive, *map(read, eqn.invars), **eqn.params)
      outs = outs if eqn.primitive.multiple_results else [outs]
      for v, o in zip(eqn.outvars, outs):
        if not isinstance(v, DropVar):
          env[id(v)] = o
  finally:
    state.replayed = saved
  return [read(v) for v in jaxpr.outvars]


def literal_value(lit: Literal):
  """The value a literal stands for; a weakly typed one as an array (a bare NumPy scalar
  would lose the weak type)."""
  if lit.aval.weak_type:
    return new_array(np.asarray(lit.val, lit.aval.dtype), weak_type=True)
  return lit.val


def jaxpr_as_fun(jaxpr: Jaxpr) -> Callable:
  """A Python function that interprets the closed jaxpr (jax.extend.core.jaxpr_as_fun)."""
  def fun(*args):
    return eval_jaxpr(jaxpr, jaxpr.consts, *args)
  return fun

"""Staging: the jaxpr-building trace (make_jaxpr, jit) and what it records.

JaxprTrace stages each primitive as an equation of a JaxprBuilder (scalars as literals,
other constants as constvars) and `trace_to_jaxpr` runs a function under it. Each equation
gets its source: the user's line and the named_scope / named_call names
(`current_source_info`); DebugInfo names a traced function's flattened arguments, so a
tracer error can say which argument a value depends on.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import sys
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src.base import dtypes, traceback_util, tree_util
from ember._src.core.avals import ShapedArray, get_aval
from ember._src.core.jaxpr import Atom, Jaxpr, JaxprEqn, Literal, SourceInfo, Var
from ember._src.core import refs
from ember._src.core.trace import (Trace, _state, full_raise, is_concrete_array, new_dynamic,
                                   new_main, to_numpy)
from ember._src.core.tracers import Tracer


@contextlib.contextmanager
def named_scope(name: str):
  """Prefix the names of the operations traced inside the block (`jax.named_scope`)."""
  if not isinstance(name, str):
    raise TypeError(f"named_scope name must be a str, got {type(name).__name__}")
  stack = _state.name_stack
  stack.append(name)
  try:
    yield
  finally:
    stack.pop()


def named_call(fun, *, name: str | None = None):
  """`fun`, tracing its operations inside `named_scope(name)` (`jax.named_call`; the name
  defaults to `fun.__name__`): they show as `name/...` in lowered text's locations."""
  name = fun.__name__ if name is None else name

  @functools.wraps(fun)
  def named(*args, **kwargs):
    with named_scope(name):
      return fun(*args, **kwargs)
  return named


def current_source_info() -> SourceInfo:
  """The innermost user frame (outside the ember package) and the named_scope stack; while
  eval_jaxpr re-binds an equation (a transformation re-tracing a jaxpr), that equation's
  own source, so transformed jaxprs keep the user's lines as JAX's do."""
  replayed, name_stack = _state.replayed, _state.name_stack
  if replayed is not None:
    return replayed._replace(name_stack=tuple(name_stack) + replayed.name_stack)
  f, excluded = sys._getframe(1), traceback_util.source_info_exclusions
  while f is not None and f.f_code.co_filename.startswith(excluded):
    f = f.f_back
  if f is None:
    return SourceInfo(None, None, None, tuple(name_stack))
  return SourceInfo(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, tuple(name_stack))


class DebugInfo(NamedTuple):
  """Where a traced function came from, and the names of its flattened arguments."""
  traced_for: str            # "jit", "make_jaxpr", ...
  func_name: str
  func_src: str | None       # "file:line"
  arg_names: tuple | None    # one per flat input


def debug_info(traced_for: str, fun: Callable, args, kwargs, static_argnums=(),
               static_argnames=()) -> DebugInfo:
  name = getattr(fun, "__name__", None) or type(fun).__name__
  src = None
  code = getattr(fun, "__code__", None)
  if code is not None:
    src = f"{code.co_filename}:{code.co_firstlineno}"
  try:
    sig = inspect.signature(fun)
    ba = sig.bind(*args, **kwargs)
    names = []
    for i, (pname, val) in enumerate(ba.arguments.items()):
      param = sig.parameters[pname]
      if pname in static_argnames or (param.kind in (param.POSITIONAL_ONLY,
                                      param.POSITIONAL_OR_KEYWORD) and i in static_argnums):
        continue
      if param.kind == param.VAR_POSITIONAL:
        val = {f"{pname}[{j}]": v for j, v in enumerate(val)}
        for k, v in val.items():
          names += [k + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(v)[0]]
        continue
      names += [pname + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(val)[0]]
    arg_names = tuple(names)
  except (TypeError, ValueError):
    arg_names = None
  return DebugInfo(traced_for, name, src, arg_names)


class JaxprBuilder:
  """Records the equations of one staged function."""

  def __init__(self, dbg: DebugInfo | None = None):
    self.eqns: list[JaxprEqn] = []
    self.tracer_to_var: dict[int, Atom] = {}
    self.const_tracers: dict[int, "JaxprTracer"] = {}   # id(const value) -> tracer
    self.constvals: dict[int, Any] = {}                 # id(var) -> const value
    self.invars: list[Var] = []
    self.keep: list = []                                # keep consts alive (ids stay valid)
    self.dbg = dbg

  def new_var(self, tracer) -> Var:
    v = self.tracer_to_var[id(tracer)] = Var(tracer.aval)
    return v

  def getvar(self, tracer) -> Atom:
    return self.tracer_to_var[id(tracer)]

  def add_eqn(self, eqn: JaxprEqn):
    self.eqns.append(eqn)

  def build(self, in_tracers, out_tracers) -> Jaxpr:
    invars = [self.getvar(t) for t in in_tracers]
    outvars = [self.getvar(t) for t in out_tracers]
    used = {id(a) for e in self.eqns for a in e.invars} | {id(a) for a in outvars}
    constvars = [v for v in self.tracer_to_var.values()
                 if id(v) in self.constvals and id(v) in used]
    consts = [self.constvals[id(v)] for v in constvars]
    return Jaxpr(constvars, invars, outvars, self.eqns, consts=consts, debug_info=self.dbg)

  def release(self) -> None:
    """Drop the tracers kept while building (the jaxpr is built): they refer back to this
    builder through their trace, a cycle only a garbage collection would free."""
    self.keep.clear()
    self.const_tracers.clear()

  def origin_of(self, tracer) -> str:
    """Which function arguments a traced value depends on, for error messages."""
    dbg = self.dbg
    if dbg is None:
      return ""
    var = self.tracer_to_var.get(id(tracer))
    where = (f"The error occurred while tracing the function {dbg.func_name}"
             + (f" at {dbg.func_src}" if dbg.func_src else "") + f" for {dbg.traced_for}.")
    if var is None or dbg.arg_names is None:
      return where
    deps = {id(var)}
    for eqn in reversed(self.eqns):
      if any(id(o) in deps for o in eqn.outvars):
        deps |= {id(a) for a in eqn.invars if isinstance(a, Var)}
    names = [n for v, n in zip(self.invars, dbg.arg_names) if id(v) in deps]
    if not names:
      return where
    if len(names) == 1:
      dep = f"the value of the argument {names[0]}"
    else:
      dep = "the values of the arguments " + ", ".join(names)
    return where + f" This concrete value was not available in Python because it depends on {dep}."


class JaxprTracer(Tracer):
  __slots__ = ("_aval", "_literal")
  jax_name = "JitTracer"   # JAX's name for the tracers of jit, make_jaxpr and eval_shape

  def __init__(self, trace, aval, literal=None):
    self._trace, self._aval, self._literal = trace, aval, literal

  @property
  def aval(self):
    return self._aval

  def _origin_msg(self):
    return self._trace.main.global_data.origin_of(self)


def _is_literalable(val) -> bool:
  """Scalars are written inline in jaxprs; larger constants become constvars."""
  if type(val) in (bool, int, float, complex):
    return True
  if isinstance(val, (np.generic, np.ndarray)):
    return val.ndim == 0 and val.dtype in dtypes.jax_dtypes
  return is_concrete_array(val) and val.ndim == 0


class JaxprTrace(Trace):
  """Stages primitives into the equations of a jaxpr (make_jaxpr, jit)."""

  @property
  def builder(self) -> JaxprBuilder:
    return self.main.global_data

  def new_arg(self, aval: ShapedArray) -> JaxprTracer:
    t = JaxprTracer(self, aval)
    self.builder.invars.append(self.builder.new_var(t))
    self.builder.keep.append(t)
    return t

  def pure(self, val):
    b = self.builder
    t = b.const_tracers.get(id(val))
    if t is not None:
      return t
    if hasattr(val, "__jax_array__"):
      # as JAX: staged as a constant, the object (a flax Variable) could hold a tracer
      raise ValueError(_JAX_ARRAY_NOT_ABSTRACTED)
    aval = get_aval(val)
    if _is_literalable(val):
      # A Python scalar keeps its value, as in JAX: a weak `0.1:f32[]` prints as 0.1.
      lit = Literal(val if type(val) in (bool, int, float, complex) else to_numpy(val, aval)[()],
                    aval)
      t = JaxprTracer(self, aval, literal=lit)
      b.tracer_to_var[id(t)] = lit
    else:
      t = JaxprTracer(self, aval)
      var = b.new_var(t)
      b.constvals[id(var)] = val
    b.const_tracers[id(val)] = t
    b.keep += [t, val]
    return t

  lift = pure

  def process_primitive(self, primitive, tracers, params):
    b = self.builder
    in_avals = [t.aval for t in tracers]
    out_avals = primitive.out_avals(in_avals, params)
    if primitive.fold_literals and all(t._literal is not None for t in tracers):
      vals = [np.asarray(t._literal.val, t.aval.dtype) for t in tracers]
      outs = primitive.impl(*vals, **params)
      outs = outs if primitive.multiple_results else [outs]
      return [self.pure_literal(np.asarray(o, a.dtype)[()], a) for o, a in zip(outs, out_avals)]
    out_tracers = [JaxprTracer(self, a) for a in out_avals]
    invars = [b.getvar(t) for t in tracers]
    outvars = [b.new_var(t) for t in out_tracers]
    b.keep.extend(out_tracers)
    b.add_eqn(JaxprEqn(invars, outvars, primitive, params, current_source_info()))
    return out_tracers

  def pure_literal(self, val, aval) -> JaxprTracer:
    lit = Literal(val, aval)
    t = JaxprTracer(self, aval, literal=lit)
    self.builder.tracer_to_var[id(t)] = lit
    self.builder.keep.append(t)
    return t


_JAX_ARRAY_NOT_ABSTRACTED = (
    "Triggering __jax_array__() during abstractification is no longer supported. To avoid "
    "this error, either explicitly convert your object using ember.numpy.array(), or "
    "register your object as a pytree.")


def trace_to_jaxpr(flat_fun: Callable, in_avals: Sequence[ShapedArray],
                   dbg: DebugInfo | None = None, ref_frame: refs.Frame | None = None
                   ) -> tuple[Jaxpr, Any]:
  """Stage `flat_fun(*tracers) -> (flat outputs, aux)` into a closed jaxpr.

  Constants the function closes over (concrete arrays, or tracers of an outer trace)
  are consts of the returned jaxpr; callers that bind the jaxpr as a primitive hoist
  them into explicit arguments (see `hoist_consts`). `ref_frame`: the scope's view of the
  refs from outside it (core/refs.py; a fresh one, which refuses their writes, if None).
  """
  builder = JaxprBuilder(dbg)
  with new_main(JaxprTrace, builder) as main:
    with new_dynamic(main), refs.frame(ref_frame):
      trace = JaxprTrace(main)
      in_tracers = [trace.new_arg(a) for a in in_avals]
      outs, aux = flat_fun(*in_tracers)
      out_tracers = [full_raise(trace, o) for o in outs]
      jaxpr = builder.build(in_tracers, out_tracers)
  builder.release()
  return jaxpr, aux


def hoist_consts(jaxpr: Jaxpr) -> tuple[Jaxpr, list]:
  """Turn constvars into leading invars: returns the const-free jaxpr and the values to
  pass for them. Closed-over values of an outer trace (tracers) must become explicit
  arguments of a staged call; concrete ones are hoisted too, as JAX does for jit."""
  if not jaxpr.constvars:
    return jaxpr, []
  return (jaxpr.replace(constvars=[], consts=[], invars=jaxpr.constvars + jaxpr.invars),
          list(jaxpr.consts))

"""Mutable references (jax.Ref) seen through the staging scopes that trace them.

A Ref (library/state.py) is a cell holding an array: reading gives the value, writing
replaces it. Outside every trace that is all. Inside a trace the cell holds values of that
trace, as any Python variable would, which is right for a ref the traced code created. A ref
created outside a staging scope (a jitted function, a loop body, a branch) must not be
written with that scope's tracers: its writes become outputs of the staged computation
instead, as JAX's state discharge does. So every staging scope (`trace_to_jaxpr`) pushes a
`Frame`; reading or writing a ref created outside the innermost frame goes through that
frame's `entries` (the ref's value as the scope sees it: at first the value outside, a
closed-over constant, then what the scope wrote). A scope whose owner threads refs (jit,
scan, while_loop, cond: `threads=True`) stages again with the refs it touched as extra
inputs and outputs (`seed` gives their inputs), then writes the outputs back outside; any
other scope refuses a write.

A write inside a transformation that pushes no frame (grad, jvp, vmap) of a value carrying
that transformation's tracers into a ref from outside it is JAX's error, unless the value
is constant there (a stop_gradient's, an unbatched one): then its plain value is stored.

The concrete Ref type registers itself here (`register_ref_type`), as Array does in trace.
"""
from __future__ import annotations

import contextlib
from typing import Any

from ember._src.core import trace as trace_lib
from ember._src.core.tracers import Tracer

# library/state.Ref, registered when its module is imported
ref_type: type | None = None


def register_ref_type(cls: type) -> None:
  global ref_type
  ref_type = cls


def is_ref(x) -> bool:
  return ref_type is not None and type(x) is ref_type


class Frame:
  """One staging scope's view of the refs created outside it: id(ref) -> [ref, value,
  written]. `what` names the scope in errors; `threads`: its owner threads the refs it
  touched through the staged computation."""
  __slots__ = ("what", "threads", "main", "entries")

  def __init__(self, what: str = "a traced function", threads: bool = False):
    self.what, self.threads = what, threads
    self.main = None          # the trace the scope stages into, set when pushed
    self.entries: dict[int, list] = {}

  def seed(self, refs, values) -> None:
    """The refs' values inside the scope are `values` (the staged inputs threading them)."""
    for r, v in zip(refs, values):
      self.entries[id(r)] = [r, v, False]

  def touched(self) -> list:
    """The refs from outside that the scope read or wrote, in the order it first did."""
    return [e[0] for e in self.entries.values()]

  def value(self, ref):
    return self.entries[id(ref)][1]


@contextlib.contextmanager
def frame(f: Frame | None = None):
  """Push `f` (a fresh non-threading frame if None) for the staging trace innermost now."""
  f = f if f is not None else Frame()
  f.main = trace_lib._state.trace_stack[-1]
  frames = trace_lib._state.ref_frames
  frames.append(f)
  try:
    yield f
  finally:
    frames.pop()


def scope() -> tuple:
  """Where a ref created now belongs: (the innermost frame or None, the innermost trace)."""
  state = trace_lib._state
  return (state.ref_frames[-1] if state.ref_frames else None), state.trace_stack[-1]


def read(ref):
  """The value of `ref` as the code running now sees it."""
  frames = trace_lib._state.ref_frames
  if not frames or ref._frame is frames[-1]:
    return ref._value
  return _entry(ref, frames)[1]


def write(ref, value, aval) -> None:
  """Make `value` the value of `ref` as the code running now sees it. `aval`: the ref's
  type, for the errors."""
  frames = trace_lib._state.ref_frames
  if not frames or ref._frame is frames[-1]:
    main = ref._main
    level = main.level if _alive(main) else 0
    ref._value = _lowered(value, level, aval)
    return
  f = frames[-1]
  if not f.threads:
    raise NotImplementedError(
        f"writing a jax.Ref created outside {f.what} inside it: ember threads refs through "
        "jit, lax.scan, lax.while_loop / fori_loop and lax.cond / switch only. Pass the "
        "ref's value in and return the new one instead.")
  e = _entry(ref, frames)
  e[1], e[2] = _lowered(value, f.main.level, aval), True


def _entry(ref, frames) -> list:
  """The innermost frame's entry for `ref`, made from the frame around it (or the ref
  itself) at the first access, in every frame the access crosses."""
  start = 0
  for i in range(len(frames) - 1, -1, -1):
    if frames[i] is ref._frame:
      start = i + 1
      break
  e = None
  for f in frames[start:]:
    own = f.entries.get(id(ref))
    if own is None:
      own = f.entries[id(ref)] = [ref, ref._value if e is None else e[1], False]
    e = own
  return e


def _alive(main) -> bool:
  stack = trace_lib._state.trace_stack
  return main.level < len(stack) and stack[main.level] is main


def _lowered(value, level: int, aval):
  """`value` as a value of trace level `level` or below: a tracer of a deeper (not
  staging) trace gives its plain value when it is constant there (`ref_value`), else its
  trace's error."""
  while isinstance(value, Tracer) and value._trace.main.level > level:
    lower = getattr(value, "ref_value", None)
    if lower is None:
      raise NotImplementedError(
          f"writing a value traced by {type(value).__name__} into a jax.Ref of type {aval} "
          "from outside that transformation")
    value = lower(aval)
  return value


def check_not_returned(leaves, what: str, fun: str, args=(), names=()) -> None:
  """JAX's error for a ref among a staged function's outputs. `fun`: the function as JAX
  names it (`f at file:line`); `args`, `names`: its flat arguments and their names."""
  for x in leaves:
    if is_ref(x):
      given = [n for a, n in zip(args, names) if a is x]
      raise ValueError(f"function {fun} traced for {what} returned a mutable array reference "
                       f"of type {x.aval}, but mutable array references cannot be returned."
                       + (f"\n\nThe returned mutable array was passed in as the argument "
                          f"{given[0]}." if given else ""))


def check_distinct(refs, names, what: str, fun: str) -> None:
  """JAX's error for one ref passed twice to a staged function."""
  seen: dict[int, Any] = {}
  for r, n in zip(refs, names):
    if id(r) in seen:
      raise ValueError(f"only one reference to a mutable array may be passed as an argument "
                       f"to a function, but when tracing {fun} for {what} the mutable "
                       f"array reference of type {r.aval} appeared at both {seen[id(r)]} "
                       f"and {n}.")
    seen[id(r)] = n

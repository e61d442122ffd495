"""Tracer-leak checking: `jax_check_tracer_leaks` (JAX_CHECK_TRACER_LEAKS),
`jax.checking_leaks()`, `jax.check_tracer_leaks(flag)`.

A tracer is leaked when it is still reachable after its transformation finished (stored in a
global, a list, an object attribute). Without the check, a leaked tracer fails only when it is
used again (trace.py's UnexpectedTracerError). With it, trace.py's `new_main` records each trace
that closes in this thread (`closed`); `check` runs a garbage collection and looks for tracers
of those traces that are still alive, raising UnexpectedTracerError ("Leaked trace ...")
naming each one and what holds it. The check runs when the next trace opens (the function that
ran the closed trace has returned by then, so its locals no longer hold tracers) and when a
`checking_leaks()` block ends. As in JAX, this costs a full collection per trace: it is for
debugging.
"""
from __future__ import annotations

import contextlib
import gc
import threading

from ember._src.base import errors
from ember._src.base.config import config
from ember._src.core.tracers import Tracer


class _Closed(threading.local):
  def __init__(self):
    # id(main) -> (level, trace type) of the traces this thread closed since the last check;
    # not the MainTraces themselves: a main holds its global data (a jaxpr builder), which
    # may hold tracers
    self.mains: dict[int, tuple] = {}


_closed = _Closed()


def open_traces() -> list:
  """This thread's open traces (trace.py, which imports this module, sets the function)."""
  return []


def closed(main) -> None:
  """Trace `main` has just closed (the check is on): look for its tracers at the next check."""
  _closed.mains[id(main)] = (main.level, main.trace_type)


def check() -> None:
  """Raise UnexpectedTracerError when a tracer of a trace closed since the last check (in this
  thread) is still alive."""
  mains = _closed.mains
  if not mains:
    return
  _closed.mains = {}
  gc.collect()   # tracers that only a dropped reference cycle keeps are no leak
  open_ids = {id(m) for m in open_traces()}
  leaked = []
  for o in gc.get_objects():
    if isinstance(o, Tracer):
      main = getattr(getattr(o, "_trace", None), "main", None)
      key = id(main)
      if (key in mains and key not in open_ids
          and mains[key] == (main.level, main.trace_type)):
        leaked.append(o)
  if leaked:
    raise _leak_error(leaked)


def _leak_error(leaked: list) -> errors.UnexpectedTracerError:
  ignore = {id(leaked)}
  parts = []
  for t in leaked:   # plain loops: a comprehension using `t` would hold it in a cell, a referrer
    held = ""
    for r in gc.get_referrers(t):
      if id(r) not in ignore and held.count("\n") < 3:
        held += f"\n  it is referred to by {_describe(r, t)}"
    parts.append(f"{t!r}{held or chr(10) + '  no referrer visible to the gc module'}")
  kinds = sorted({type(t._trace).__name__ for t in leaked})
  return errors.UnexpectedTracerError(
      f"Leaked trace {', '.join(kinds)}: {len(leaked)} tracer(s) of a finished "
      "transformation (jit, grad, vmap, ...) are still reachable (jax_check_tracer_leaks "
      "is on). Return values computed inside a transformed function as its outputs instead "
      "of storing them in globals, lists or object attributes. Leaked tracer(s):\n\n"
      + "\n\n".join(parts))


def _describe(holder, x) -> str:
  kind = type(holder).__name__
  if isinstance(holder, dict):
    keys = [k for k, v in holder.items() if v is x][:1]
    return f"a dict, at key {keys[0]!r}" if keys else "a dict"
  if isinstance(holder, (list, tuple)):
    at = [i for i, v in enumerate(holder) if v is x][:1]
    return f"a {kind}, at index {at[0]}" if at else f"a {kind}"
  return f"a {kind} object"


@contextlib.contextmanager
def check_tracer_leaks(new_val: bool = True):
  """`jax.check_tracer_leaks(flag)`: the leak check on (or off) inside the block; turned on,
  it also checks the block's last traces when the block ends."""
  with config._override("jax_check_tracer_leaks", bool(new_val)):
    yield
    if new_val:
      check()


def checking_leaks():
  """`jax.checking_leaks()`: the tracer-leak check on inside the block."""
  return check_tracer_leaks(True)

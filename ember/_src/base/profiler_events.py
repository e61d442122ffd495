"""Trace event recording: what the code on the traced paths records into (the driver, the
dispatcher, the backend's executables and its tier-up worker). Below everything: no ember
imports. Collection (sessions) and export live in trace.py, which starts and stops
recording here.

While no trace is active a hook costs one global check (`if events.active:`).
"""
from __future__ import annotations

import threading
import time

active = False          # the one flag every hook reads; True between begin and end

clock = time.perf_counter_ns
spans: list = []        # (tid, name, start_ns, end_ns, args: a dict, LazyArgs or None)
_threads: dict = {}     # native thread id -> thread name
per_trace: dict = {}    # caches of the recorders, valid for one trace (cleared at begin/end)
_tls = threading.local()


class LazyArgs:
  """A span's args computed when the trace is exported (`resolve() -> dict`), not while the
  traced code runs."""
  __slots__ = ()

  def resolve(self) -> dict:
    raise NotImplementedError(f"{type(self).__name__} must define resolve() -> dict: the "
                              "span's args, computed when the trace is exported")


def tid() -> int:
  """The calling thread's native id (its name is kept for the trace's thread rows)."""
  t = threading.get_native_id()
  if t not in _threads:
    _threads[t] = threading.current_thread().name
  return t


def record(name: str, start_ns: int, end_ns: int, args=None) -> None:
  """One complete span on the calling thread (perf_counter_ns times)."""
  spans.append((tid(), name, start_ns, end_ns, args))


def record_secs(name: str, start_s: float, secs: float, args: dict | None = None) -> None:
  """A span from perf_counter() seconds (the compile stages' clock)."""
  t0 = int(start_s * 1e9)
  record(name, t0, t0 + int(secs * 1e9), args)


def begin() -> None:
  """Start recording (a trace session starts)."""
  global active, spans
  spans = []
  _threads.clear()
  per_trace.clear()
  active = True


def end() -> tuple[list, dict]:
  """Stop recording; the recorded events and thread names."""
  global active, spans
  active = False
  recorded, spans = spans, []
  per_trace.clear()
  return recorded, dict(_threads)


# --- hooks on the jit call path -------------------------------------------------------------

def wrap_call() -> bool:
  """PjitFunction.__call__'s hook: True when this call should be wrapped in a dispatch span
  (False for the re-entry `dispatch` makes)."""
  if getattr(_tls, "reentry", False):
    _tls.reentry = False
    return False
  return True


def dispatch(wrapped, args, kwargs):
  """A jitted call as a `PjitFunction(<name>)` span (JAX's name for the same thing)."""
  t0 = clock()
  _tls.reentry = True
  try:
    return wrapped(*args, **kwargs)
  finally:
    _tls.reentry = False
    if active:
      record(f"PjitFunction({wrapped.__name__})", t0, clock())

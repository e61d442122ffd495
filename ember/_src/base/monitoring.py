"""Instrumentation events (jax.monitoring): named events, durations, time spans and scalars
that ember records at the moments JAX records them, and the listeners that receive them.

ember records (the names are JAX's, so dashboards built on JAX's work):
- `/jax/core/compile/jaxpr_trace_duration`: tracing a jitted function to its jaxpr;
- `/jax/core/compile/jaxpr_to_mlir_module_duration`: lowering the jaxpr to StableHLO;
- `/jax/core/compile/backend_compile_duration`: HLO passes, buffer assignment and codegen;
  each as a scalar (its start time) when it starts, then a duration and a time span, all with
  `fun_name=`;
- `/jax/compilation_cache/compile_requests_use_cache`, `.../cache_hits`, `.../cache_misses`
  (when an entry is written, as JAX), `.../cache_retrieval_time_sec`: the persistent cache.

With no listener registered a record costs one loop over an empty list. Below everything:
no ember imports.
"""
from __future__ import annotations

import time
from typing import Protocol

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_REQUESTS_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
CACHE_HITS_EVENT = "/jax/compilation_cache/cache_hits"
CACHE_MISSES_EVENT = "/jax/compilation_cache/cache_misses"
CACHE_RETRIEVAL_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"


class EventListenerWithMetadata(Protocol):
  def __call__(self, event: str, **kwargs: str | int) -> None: ...


class EventDurationListenerWithMetadata(Protocol):
  def __call__(self, event: str, duration_secs: float, **kwargs: str | int) -> None: ...


class EventTimeSpanListenerWithMetadata(Protocol):
  def __call__(self, event: str, start_time: float, end_time: float,
               **kwargs: str | int) -> None: ...


class ScalarListenerWithMetadata(Protocol):
  def __call__(self, event: str, value: float | int, **kwargs: str | int) -> None: ...


_event_listeners: list = []
_duration_listeners: list = []
_time_span_listeners: list = []
_scalar_listeners: list = []


def record_event(event: str, **kwargs: str | int) -> None:
  """Record that `event` happened: every event listener is called with it and `kwargs`."""
  for callback in list(_event_listeners):
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
  """Record that `event` took `duration` seconds."""
  for callback in list(_duration_listeners):
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
  """Record that `event` ran from `start_time` to `end_time` (seconds, time.time())."""
  for callback in list(_time_span_listeners):
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
  """Record a scalar summary value of `event`."""
  for callback in list(_scalar_listeners):
    callback(event, value, **kwargs)


def register_event_listener(callback: EventListenerWithMetadata) -> None:
  """Call `callback(event, **kwargs)` at every record_event()."""
  _event_listeners.append(callback)


def register_event_duration_secs_listener(callback: EventDurationListenerWithMetadata) -> None:
  """Call `callback(event, duration_secs, **kwargs)` at every record_event_duration_secs()."""
  _duration_listeners.append(callback)


def register_event_time_span_listener(callback: EventTimeSpanListenerWithMetadata) -> None:
  """Call `callback(event, start_time, end_time, **kwargs)` at every record_event_time_span()."""
  _time_span_listeners.append(callback)


def register_scalar_listener(callback: ScalarListenerWithMetadata) -> None:
  """Call `callback(event, value, **kwargs)` at every record_scalar()."""
  _scalar_listeners.append(callback)


def _unregister(listeners: list, callback) -> None:
  # as JAX: unregistering a callback that is not registered is an AssertionError
  assert callback in listeners, f"{callback!r} is not a registered listener"
  listeners.remove(callback)


def unregister_event_listener(callback: EventListenerWithMetadata) -> None:
  """Stop calling an event listener."""
  _unregister(_event_listeners, callback)


def unregister_event_duration_listener(callback: EventDurationListenerWithMetadata) -> None:
  """Stop calling an event duration listener."""
  _unregister(_duration_listeners, callback)


def unregister_event_time_span_listener(callback: EventTimeSpanListenerWithMetadata) -> None:
  """Stop calling an event time span listener."""
  _unregister(_time_span_listeners, callback)


def unregister_scalar_listener(callback: ScalarListenerWithMetadata) -> None:
  """Stop calling a scalar listener."""
  _unregister(_scalar_listeners, callback)


def clear_event_listeners() -> None:
  """Remove every listener of every kind."""
  for listeners in (_event_listeners, _duration_listeners, _time_span_listeners,
                    _scalar_listeners):
    listeners.clear()


def get_event_listeners() -> list:
  return list(_event_listeners)


def get_event_duration_listeners() -> list:
  return list(_duration_listeners)


def get_event_time_span_listeners() -> list:
  return list(_time_span_listeners)


def get_scalar_listeners() -> list:
  return list(_scalar_listeners)


def any_listener() -> bool:
  """Whether a timed stage needs to report (the callers skip the clock reads otherwise)."""
  return bool(_duration_listeners or _time_span_listeners or _scalar_listeners)


def record_stage(event: str, start_perf: float, secs: float, fun_name: str) -> None:
  """A compile stage that began at perf_counter() `start_perf` and took `secs`: its start
  (wall clock) as a scalar, its duration and its time span, each with `fun_name`, as JAX's
  log_elapsed_time records them."""
  if not any_listener():
    return
  end_wall = time.time() - (time.perf_counter() - start_perf - secs)
  start_wall = end_wall - secs
  record_scalar(event, start_wall, fun_name=fun_name)
  record_event_duration_secs(event, secs, fun_name=fun_name)
  record_event_time_span(event, start_wall, end_wall, fun_name=fun_name)

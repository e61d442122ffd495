"""Trace collection: host spans, jitted-call dispatch, compile stages and every executed
thunk, written as Chrome Trace Event Format JSON (what Perfetto and chrome://tracing open).

The traced code records into base/profiler_events.py (below everything); while no trace is
active its hooks cost one global check each (`if events.active:`) on the paths they sit on:

    driver/jit.py                 PjitFunction.__call__ -> `PjitFunction(f)` (dispatch span)
                                  PjitFunction._miss   -> `trace jit(f)`
    driver/compilation.py         compile_staged       -> `lower jit(f)`, `compile jit(f)`, stages
    driver/dispatch.py            _RunPlan call        -> one span per thunk (cpu/profiled.py)
    backends/cpu/control_flow.py  _Sub.__call__        -> the thunks of loop bodies/branches, nested
    backends/cpu/tiering.py       the tier-up worker   -> `tier-up <module>`

This module is the session around them: start and stop, then the export. Events are kept
in memory as tuples (thread id, name, start ns, end ns, args) and turned into JSON when the
trace stops: `<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz`,
`<host>.xplane.pb` (the same spans as an XSpace protobuf, xplane.py) and
`perfetto_trace.json.gz` when asked, JAX's layout. See docs/profiler.md.
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import gzip
import json
import os
import socket
import threading
from typing import Callable

from ember._src.base import profiler_events as events
from ember._src.runtime.profiler import xplane
from ember._src.runtime import executor

_state_lock = threading.Lock()
_session: "ProfileSession | None" = None


# --- sessions -------------------------------------------------------------------------------

class ProfileSession:
  """One trace: `start()` begins collecting, `stop()` writes the files under `log_dir` (none
  when `log_dir` is None), keeps the events in `events` (Chrome trace event dicts) and
  returns them as a `ProfileData` (also `profile_data`). `files` lists what was written."""

  def __init__(self, log_dir: os.PathLike | str | None = None,
               create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
               profiler_options=None):
    if profiler_options is not None:
      raise ValueError("ember.profiler has no ProfileOptions (host, Python and device tracer "
                       "levels are XLA profiler settings); pass profiler_options=None")
    self.log_dir = None if log_dir is None else os.fspath(log_dir)
    self.create_perfetto_link = create_perfetto_link
    self.create_perfetto_trace = create_perfetto_trace or create_perfetto_link
    self.events: list[dict] = []
    self.files: list[str] = []
    self.profile_data = None    # the trace as a ProfileData (XSpace) once stopped
    self._is_running = False
    self._start_ns = 0

  @property
  def is_running(self) -> bool:
    return self._is_running

  def start(self) -> "ProfileSession":
    global _session
    with _state_lock:
      if _session is not None or self._is_running:
        raise RuntimeError("Profile has already been started. Only one profile may be run "
                           "at a time.")
      events.begin()
      self._start_ns = events.clock()
      self._is_running, _session = True, self
    return self

  def stop(self):
    """Stop collecting, write the files and return the trace as a `ProfileData`."""
    global _session
    with _state_lock:
      if not self._is_running:
        raise RuntimeError("No profile started")
      _drain_executors()        # work dispatched during the trace ends inside it
      recorded, threads = events.end()
      self._is_running, _session = False, None
    self.events = to_chrome_events(recorded, threads, self._start_ns)
    xspace = xplane.xspace_from_chrome_events(self.events, socket.gethostname())
    self.profile_data = xplane.ProfileData(xspace)
    if self.log_dir is not None:
      self.files = _write(self.log_dir, self.events, xspace, self.create_perfetto_trace)
      if self.create_perfetto_link:
        host_perfetto_trace_file(self.files[-1])
    return self.profile_data

  def __enter__(self) -> "ProfileSession":
    return self.start()

  def __exit__(self, *exc) -> None:
    if self._is_running:
      self.stop()


def _drain_executors() -> None:
  for ex in list(executor._executors.values()):
    ex.drain()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False, profiler_options=None) -> ProfileSession:
  """Start collecting a trace; `stop_trace()` writes it under `log_dir`. Only one trace may
  run at a time (RuntimeError otherwise). Returns the active `ProfileSession`."""
  return ProfileSession(log_dir, create_perfetto_link, create_perfetto_trace,
                        profiler_options).start()


def stop_trace():
  """Stop the trace `start_trace` began, write its files (RuntimeError if none runs) and
  return it as a `ProfileData` (its XSpace, what `<host>.xplane.pb` holds)."""
  with _state_lock:
    session = _session
  if session is None:
    raise RuntimeError("No profile started")
  return session.stop()


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str | None = None, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False, profiler_options=None):
  """Context manager: a trace of the block (see `start_trace`); yields the ProfileSession."""
  with ProfileSession(log_dir, create_perfetto_link, create_perfetto_trace,
                      profiler_options) as session:
    yield session


# --- annotations ----------------------------------------------------------------------------

class _Arg(str):
  """An annotation argument as JAX records it: a string in the JSON trace (bools as 0/1),
  and `stat`, the typed value (int, float or the string) the XSpace keeps (xplane.py)."""

  def __new__(cls, value):
    if isinstance(value, bool):
      value = int(value)
    self = super().__new__(cls, value)
    self.stat = value if type(value) in (int, float) else str(self)
    return self


class TraceAnnotation:
  """A named span on the calling thread's timeline for the duration of the `with` block;
  keyword arguments become the event's args (strings in the JSON trace, typed stats in the
  XSpace, as JAX records them)."""

  def __init__(self, name: str, **kwargs):
    self.name = name
    self.args = {k: _Arg(v) for k, v in kwargs.items()}
    self._starts: list = []

  @staticmethod
  def is_enabled() -> bool:
    return events.active

  def set_metadata(self, **kwargs) -> None:
    self.args.update((k, _Arg(v)) for k, v in kwargs.items())

  def __enter__(self):
    self._starts.append(events.clock() if events.active else None)
    return self

  def __exit__(self, *exc) -> None:
    t0 = self._starts.pop()
    if t0 is not None and events.active:
      events.record(self.name, t0, events.clock(), dict(self.args) or None)


class StepTraceAnnotation(TraceAnnotation):
  """A TraceAnnotation marking one training step: `StepTraceAnnotation("train", step_num=i)`
  records a span named "train" with args {"step_num": "i"}."""


def annotate_function(func: Callable, name: str | None = None, **decorator_kwargs):
  """Decorator: every call of `func` is a TraceAnnotation named `name` (default: the
  function's qualified name)."""
  name = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(name, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


def start_server(port: int, requires_backend: bool = True):
  raise RuntimeError(
      "ember.profiler.start_server: ember has no profiler server, so TensorBoard/XProf "
      "cannot capture from a running process. Take a trace in-process with "
      "ember.profiler.trace(log_dir) (or start_trace/stop_trace) and open the "
      "*.trace.json.gz it writes in https://ui.perfetto.dev.")


def stop_server() -> None:
  raise ValueError("No active profiler server.")


# --- output ---------------------------------------------------------------------------------

def to_chrome_events(recorded: list, threads: dict, start_ns: int) -> list[dict]:
  """Chrome Trace Event Format: process/thread metadata (`ph: "M"`), then complete events
  (`ph: "X"`, `ts`/`dur` in microseconds from the trace's start, ns precision), sorted by
  start time, a parent before the children that start with it."""
  pid = os.getpid()
  used = {e[0] for e in recorded}
  main = threading.main_thread().native_id
  order = sorted(used, key=lambda t: (t != main, not threads.get(t, "").startswith(
      "ember-executor"), t))
  out: list[dict] = [
      {"ph": "M", "pid": pid, "name": "process_name", "args": {"name": "/host:CPU"}},
      {"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": 0}}]
  for k, tid in enumerate(order):
    out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                "args": {"name": "python" if tid == main else threads.get(tid, str(tid))}})
    out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_sort_index",
                "args": {"sort_index": k + 1}})
  spans = []
  # a span that began before the trace (a background tier-up) is clipped to its start
  recorded = [(e[0], e[1], max(e[2], start_ns), *e[3:]) for e in recorded]
  for tid, name, t0, t1, args in sorted(recorded, key=lambda e: (e[2], -e[3])):
    ev = {"ph": "X", "pid": pid, "tid": tid, "ts": (t0 - start_ns) / 1e3,
          "dur": max(t1 - t0, 0) / 1e3, "name": name}
    if isinstance(args, events.LazyArgs):
      args = args.resolve()
    if args:
      ev["args"] = args
    spans.append(ev)
  return out + spans


def export_profile_data(profile_data, log_dir: os.PathLike | str,
                        create_perfetto_link: bool = False, create_perfetto_trace: bool = False,
                        session_id: str | None = None) -> None:
  """Write a finished trace (a stopped ProfileSession, or a ProfileData: JAX's files too)
  under `log_dir`, in the layout `stop_trace` writes (`plugins/profile/<session_id or
  timestamp>/`), `perfetto_trace.json.gz` too when asked (`jax.profiler.
  export_profile_data`)."""
  if isinstance(profile_data, ProfileSession):
    if profile_data.is_running:
      raise RuntimeError("Cannot export a ProfileSession while it is running. Call stop() "
                         "first.")
    if profile_data.profile_data is None:
      raise RuntimeError("No profile data to export. Ensure the session has completed.")
    data, chrome = profile_data.profile_data, profile_data.events
  elif isinstance(profile_data, xplane.ProfileData):
    data, chrome = profile_data, _chrome_events_of(profile_data)
  else:
    raise TypeError(f"Expected ProfileData or ProfileSession, got "
                    f"{type(profile_data).__name__}")
  files = _write(os.fspath(log_dir), chrome, data._data,
                 create_perfetto_trace or create_perfetto_link, session_id)
  if create_perfetto_link:
    host_perfetto_trace_file(files[-1])


def _chrome_events_of(data) -> list[dict]:
  """A ProfileData's events as Chrome trace events: a process per plane, a thread per
  line."""
  out: list[dict] = []
  for pid, plane in enumerate(data.planes, 1):
    out.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": plane.name}})
    for tid, line in enumerate(plane.lines, 1):
      out.append({"ph": "M", "pid": pid, "tid": tid, "name": "thread_name",
                  "args": {"name": line.name}})
      out += [{"ph": "X", "pid": pid, "tid": tid, "ts": e.start_ns / 1e3,
               "dur": e.duration_ns / 1e3, "name": e.name} for e in line.events]
  return out


def _write(log_dir: str, events: list[dict], xspace: bytes, perfetto: bool,
           session_id: str | None = None) -> list[str]:
  """JAX's layout: plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz (with
  `metadata`, as XProf writes it), <host>.xplane.pb (the XSpace, xplane.py) and
  perfetto_trace.json.gz (without `metadata`: Perfetto rejects unknown top-level keys)."""
  stamp = session_id or datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
  folder = os.path.join(os.path.abspath(log_dir), "plugins", "profile", stamp)
  os.makedirs(folder, exist_ok=True)
  doc = {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": events}
  files = [os.path.join(folder, f"{socket.gethostname()}.trace.json.gz")]
  _dump(files[0], doc)
  files.append(os.path.join(folder, f"{socket.gethostname()}.xplane.pb"))
  with open(files[1], "wb") as f:
    f.write(xspace)
  if perfetto:
    files.append(os.path.join(folder, "perfetto_trace.json.gz"))
    _dump(files[2], {"displayTimeUnit": "ns", "traceEvents": events})
  return files


def _dump(path: str, doc: dict) -> None:
  with gzip.open(path, "wt", encoding="utf-8") as f:
    json.dump(doc, f, separators=(",", ":"))


def host_perfetto_trace_file(path: str, port: int = 9001) -> None:
  """Serve `path` on 127.0.0.1:`port`, print the ui.perfetto.dev link that loads it, and
  block until the file has been fetched (JAX's create_perfetto_link behaviour)."""
  # deferred: only this function serves files
  import http.server
  import socketserver
  directory, filename = os.path.split(path)

  class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
      super().__init__(*a, directory=directory, **k)

    def end_headers(self):
      self.send_header("Access-Control-Allow-Origin", "*")
      super().end_headers()

    def do_GET(self):
      self.server.last_request = self.path
      super().do_GET()

    def log_message(self, *a):
      pass

  socketserver.TCPServer.allow_reuse_address = True
  with socketserver.TCPServer(("127.0.0.1", port), Handler) as httpd:
    print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}/"
          f"{filename}", flush=True)
    while getattr(httpd, "last_request", None) != "/" + filename:
      httpd.handle_request()

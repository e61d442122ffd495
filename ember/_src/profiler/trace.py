"""Trace collection: host spans, jitted-call dispatch, compile stages and every executed
thunk, written as Chrome Trace Event Format JSON (what Perfetto and chrome://tracing open).

While no trace is active the hooks cost one global check each (`if trace.active:`) on the
paths they sit on:

    jit.py           JitWrapped.__call__  -> `PjitFunction(f)` (dispatch span, JAX's name)
                     JitWrapped._miss     -> `trace jit(f)`
    stages.py        compile_staged       -> `lower jit(f)`, `compile jit(f)` and its stages
                     _RunPlan call        -> `execute(...)`: one span per thunk
    control_flow.py  _Sub.__call__        -> the thunks of loop bodies/branches, nested

Events are kept in memory as tuples (thread id, name, start ns, end ns, args) and turned into
JSON when the trace stops: `<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz`,
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
import time
from typing import Any, Callable

active = False          # the one flag every hook reads; True between start and stop

_clock = time.perf_counter_ns
_state_lock = threading.Lock()
_session: "ProfileSession | None" = None
_events: list = []      # (tid, name, start_ns, end_ns, args dict or None)
_threads: dict = {}     # native thread id -> thread name
_infos: dict = {}       # (id(executable), id(computation)) -> (exe, per-thunk _Args)
_tls = threading.local()


def _tid() -> int:
  tid = threading.get_native_id()
  if tid not in _threads:
    _threads[tid] = threading.current_thread().name
  return tid


def record(name: str, start_ns: int, end_ns: int, args: dict | None = None) -> None:
  """One complete span on the calling thread (perf_counter_ns times)."""
  _events.append((_tid(), name, start_ns, end_ns, args))


def record_secs(name: str, start_s: float, secs: float, args: dict | None = None) -> None:
  """A span from perf_counter() seconds (the compile stages' clock)."""
  t0 = int(start_s * 1e9)
  record(name, t0, t0 + int(secs * 1e9), args)


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
    global active, _session, _events
    with _state_lock:
      if _session is not None or self._is_running:
        raise RuntimeError("Profile has already been started. Only one profile may be run "
                           "at a time.")
      _events = []
      _threads.clear()
      _infos.clear()
      self._start_ns = _clock()
      self._is_running, _session, active = True, self, True
    return self

  def stop(self):
    """Stop collecting, write the files and return the trace as a `ProfileData`."""
    global active, _session, _events
    with _state_lock:
      if not self._is_running:
        raise RuntimeError("No profile started")
      _drain_executors()        # work dispatched during the trace ends inside it
      active = False
      events, _events = _events, []
      self._is_running, _session = False, None
      _infos.clear()
    self.events = to_chrome_events(events, dict(_threads), self._start_ns)
    from ember._src.profiler import xplane
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
  from ember._src.runtime import executor
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
    return active

  def set_metadata(self, **kwargs) -> None:
    self.args.update((k, _Arg(v)) for k, v in kwargs.items())

  def __enter__(self):
    self._starts.append(_clock() if active else None)
    return self

  def __exit__(self, *exc) -> None:
    t0 = self._starts.pop()
    if t0 is not None and active:
      record(self.name, t0, _clock(), dict(self.args) or None)


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


# --- hooks on the jit paths -----------------------------------------------------------------

def wrap_call() -> bool:
  """JitWrapped.__call__'s hook: True when this call should be wrapped in a dispatch span
  (False for the re-entry `dispatch` makes)."""
  if getattr(_tls, "reentry", False):
    _tls.reentry = False
    return False
  return True


def dispatch(wrapped, args, kwargs):
  """A jitted call as a `PjitFunction(<name>)` span (JAX's name for the same thing)."""
  t0 = _clock()
  _tls.reentry = True
  try:
    return wrapped(*args, **kwargs)
  finally:
    _tls.reentry = False
    if active:
      record(f"PjitFunction({wrapped.__name__})", t0, _clock())


def compile_spans(name: str, times: dict, start_s: float) -> None:
  """`compile jit(f)` at its real start, its stages (Compiled.compile_times) laid end to
  end inside it in the order they ran (each stage's duration is measured; small gaps
  between stages fall to the end of the parent)."""
  from ember._src.stages import _STAGE_ORDER
  args = {"fun": name}
  record_secs(f"compile jit({name})", start_s, times["compile"], args)
  t = start_s
  for stage in ("hlo_passes", "buffer_assignment", "backend"):
    if stage in times:
      record_secs(stage, t, times[stage], args)
      if stage == "backend":
        sub = t
        for s in _STAGE_ORDER[_STAGE_ORDER.index("codegen"):]:
          if s in times:
            record_secs(s, sub, times[s], args)
            sub += times[s]
      t += times[stage]


def execute(exe, comp, module_name: str, args, ptrs=None, label: str | None = None
            ) -> tuple[list, list]:
  """`exe.execute_ptrs(args, ptrs)` with one span per thunk, named after its HLO
  instruction in `comp` (the computation the executable runs), inside a span named
  `label` (default: the module's name; a loop body's or branch's computation name), so
  every span the executor records can be found in `Compiled.as_text()`. Runs on a frame
  of its own (the cached frame's direct kernel calls skip the thunk objects); `ptrs` (the
  arguments' known addresses) are not needed there."""
  info = _thunk_args(exe, comp, module_name)
  t_call = _clock()
  frame = exe._frame(args)
  clock, tid = _clock, _tid()
  for thunk, targs in zip(exe.thunks, info):
    t0 = clock()
    thunk.run(frame)
    _events.append((tid, thunk.name, t0, clock(), targs))
  outs = exe._results(frame)
  out_ptrs = [frame.out_ptrs[s.index] if s.kind == "output" else frame.arg_ptrs[s.index]
              for s in exe.output_slots]
  record(label or module_name, t_call, _clock(), {"hlo_module": module_name})
  return outs, out_ptrs


def _thunk_args(exe, comp, module_name: str) -> list:
  """Per thunk of `exe`: its span's args, computed when the trace stops (the first traced
  run of an executable does no analysis, so it is timed like the others)."""
  key = (id(exe), id(comp))
  got = _infos.get(key)
  if got is None:
    by_name: dict = {}      # the computation's instructions by name, filled at first use
    got = _infos[key] = (exe, [_Args(t, comp, by_name, module_name) for t in exe.thunks])
  return got[1]


class _Args:
  """A thunk span's args, resolved by `to_chrome_events` (once per thunk and trace)."""
  __slots__ = ("thunk", "comp", "by_name", "module_name", "value")

  def __init__(self, thunk, comp, by_name: dict, module_name: str):
    self.thunk, self.comp, self.by_name, self.module_name = thunk, comp, by_name, module_name
    self.value = None

  def get(self) -> dict:
    if self.value is None:
      if not self.by_name and self.comp is not None:
        self.by_name.update((i.name, i) for i in self.comp.instrs)
      self.value = instr_args(self.thunk, self.by_name.get(self.thunk.name), self.module_name)
    return self.value


def instr_args(thunk, instr, module_name: str) -> dict:
  """What a thunk's span says about its instruction: the cost analysis of that one
  instruction (flops, transcendentals, bytes accessed), its HLO text (`long_name`), its
  `op_name` metadata (named_scope paths) and, for a fusion, the op_names fused into it."""
  from ember._src import analysis, hlo
  args: dict[str, Any] = {"hlo_module": module_name, "hlo_op": thunk.name,
                          "kind": thunk.kind}
  nchunks = getattr(thunk, "nchunks", None)
  if nchunks is not None:
    args["chunks"] = nchunks
  if instr is None:
    return args
  flops, trans = analysis.computation_costs(_One(instr))
  reads, writes = analysis.kernel_bytes(instr)
  args.update(flops=flops, transcendentals=trans,
              bytes_accessed=float(sum(b for b, _ in reads) + sum(writes)),
              long_name=hlo.instr_to_text(instr).strip())
  if instr.metadata.op_name:
    args["op_name"] = instr.metadata.op_name
  if instr.opcode == "fusion" and instr.called:
    fused = []
    for i in instr.called[0].instrs:
      n = i.metadata.op_name
      if n and n not in fused:
        fused.append(n)
    if fused:
      args["fused_op_names"] = ", ".join(fused)
  return args


class _One:
  """A one-instruction stand-in computation for analysis.computation_costs."""
  __slots__ = ("instrs",)

  def __init__(self, instr):
    self.instrs = [instr]


# --- output ---------------------------------------------------------------------------------

def to_chrome_events(events: list, threads: dict, start_ns: int) -> list[dict]:
  """Chrome Trace Event Format: process/thread metadata (`ph: "M"`), then complete events
  (`ph: "X"`, `ts`/`dur` in microseconds from the trace's start, ns precision), sorted by
  start time, a parent before the children that start with it."""
  pid = os.getpid()
  used = {e[0] for e in events}
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
  events = [(e[0], e[1], max(e[2], start_ns), *e[3:]) for e in events]
  for tid, name, t0, t1, args in sorted(events, key=lambda e: (e[2], -e[3])):
    ev = {"ph": "X", "pid": pid, "tid": tid, "ts": (t0 - start_ns) / 1e3,
          "dur": max(t1 - t0, 0) / 1e3, "name": name}
    if type(args) is _Args:
      args = args.get()
    if args:
      ev["args"] = args
    spans.append(ev)
  return out + spans


def _write(log_dir: str, events: list[dict], xspace: bytes, perfetto: bool) -> list[str]:
  """JAX's layout: plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz (with
  `metadata`, as XProf writes it), <host>.xplane.pb (the XSpace, xplane.py) and
  perfetto_trace.json.gz (without `metadata`: Perfetto rejects unknown top-level keys)."""
  stamp = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
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

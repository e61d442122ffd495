"""XSpace protobufs: the `<host>.xplane.pb` a trace writes, and `ProfileData`, which reads
any XSpace (ember's or one JAX/XLA wrote) the way `jax.profiler.ProfileData` does.

The message layout (tsl/profiler/protobuf/xplane.proto, package tensorflow.profiler):

    XSpace          planes=1 (XPlane), errors=2, warnings=3, hostnames=4 (strings)
    XPlane          id=1, name=2, lines=3 (XLine), event_metadata=4 and stat_metadata=5
                    (map<int64, XEventMetadata / XStatMetadata>: entries key=1, value=2),
                    stats=6 (XStat)
    XLine           id=1, name=2, timestamp_ns=3, events=4 (XEvent), duration_ps=9,
                    display_id=10, display_name=11
    XEvent          metadata_id=1, offset_ps=2 | num_occurrences=5, duration_ps=3, stats=4
    XStat           metadata_id=1, value: double=2 (fixed64), uint64=3, int64=4, str=5,
                    bytes=6, ref=7 (a stat_metadata id whose name is the string)
    XEventMetadata  id=1, name=2, metadata=3, display_name=4, stats=5, child_id=6
    XStatMetadata   id=1, name=2, description=3

ember writes one plane, `/host:CPU` (plane stat process_id), with one line per thread of the
trace (id = native thread id, named as in the JSON trace: "python" for the main thread) and
each span as an event: metadata by name, offset/duration in ps, its args as stats (int ->
int64, float -> double, anything else -> str; a TraceAnnotation's kwargs keep their type
here, as in JAX, though the JSON trace shows them as strings). As in JAX's CPU traces, times are relative to the trace's
start: a line's timestamp_ns is its first event's start, its events' offset_ps count from
there, and ProfileEvent.start_ns is timestamp_ns + offset_ps / 1000.
"""
from __future__ import annotations

import os
import struct
from typing import Iterator

from ember._src.runtime.profiler.memory import _bytes, _int, _varint
from ember._src.base.errors import JaxRuntimeError

# --- writing ------------------------------------------------------------------------------

def _str(field: int, s: str) -> bytes:
  return _bytes(field, s.encode()) if s else b""


def _stat(metadata_id: int, value) -> bytes:
  """An XStat; the value is a oneof member, so it is written even when zero. A
  TraceAnnotation's args are strings carrying their typed value (trace._Arg.stat)."""
  head = _int(1, metadata_id)
  value = getattr(value, "stat", value)
  if isinstance(value, (bool, int)) and -2**63 <= value < 2**63:
    return head + _varint(4 << 3) + _varint(int(value))
  if isinstance(value, float):
    return head + _varint(2 << 3 | 1) + struct.pack("<d", value)
  return head + _bytes(5, str(value).encode())


def _metadata_map(field: int, ids: dict) -> bytes:
  """map<int64, X*Metadata>: one entry (key=1, value=2) per name, value {id=1, name=2}."""
  return b"".join(_bytes(field, _int(1, i) + _bytes(2, _int(1, i) + _str(2, name)))
                  for name, i in ids.items())


def xspace_from_chrome_events(events: list[dict], hostname: str) -> bytes:
  """The serialized XSpace of a trace's Chrome trace events (trace.to_chrome_events: `M`
  events name the threads, `X` events are spans with ts/dur in microseconds since the
  trace's start)."""
  thread_names = {e["tid"]: e["args"]["name"] for e in events
                  if e.get("ph") == "M" and e.get("name") == "thread_name"}
  event_ids: dict[str, int] = {}
  stat_ids: dict[str, int] = {"process_id": 1}
  per_thread: dict[int, list] = {tid: [] for tid in thread_names}   # the JSON's thread order
  pid = os.getpid()
  for e in events:
    if e.get("ph") == "X":
      pid = e["pid"]
      per_thread.setdefault(e["tid"], []).append(e)
  lines = []
  for tid, spans in per_thread.items():
    if not spans:
      continue
    base = min(round(s["ts"] * 1e3) for s in spans)   # ts/dur: us with ns precision
    body = []
    for s in spans:
      mid = event_ids.setdefault(s["name"], len(event_ids) + 1)
      stats = b"".join(_bytes(4, _stat(stat_ids.setdefault(k, len(stat_ids) + 1), v))
                       for k, v in (s.get("args") or {}).items())
      body.append(_bytes(4, _int(1, mid) + _int(2, (round(s["ts"] * 1e3) - base) * 1000)
                         + _int(3, round(s["dur"] * 1e3) * 1000) + stats))
    name = thread_names.get(tid, str(tid))
    lines.append(_bytes(3, _int(1, tid) + _str(2, name) + _int(3, base) + b"".join(body)
                        + _int(10, tid) + _str(11, name)))
  plane = (_int(1, 1) + _str(2, "/host:CPU") + b"".join(lines)
           + _metadata_map(4, event_ids) + _metadata_map(5, stat_ids)
           + _bytes(6, _stat(stat_ids["process_id"], pid)))
  return _bytes(1, plane) + _str(4, hostname)


# --- reading ------------------------------------------------------------------------------

def _fields(buf: memoryview) -> Iterator[tuple[int, int, object]]:
  """(field number, wire type, value) of each field of one message: varints as ints,
  fixed64/fixed32 as raw bytes, length-delimited fields as memoryviews."""
  i, n = 0, len(buf)
  while i < n:
    key, i = _read_varint(buf, i)
    field, wire = key >> 3, key & 7
    if wire == 0:
      value, i = _read_varint(buf, i)
    elif wire == 1:
      value, i = bytes(buf[i:i + 8]), i + 8
    elif wire == 2:
      size, i = _read_varint(buf, i)
      value, i = buf[i:i + size], i + size
    elif wire == 5:
      value, i = bytes(buf[i:i + 4]), i + 4
    else:
      raise ValueError(f"unsupported wire type {wire}")
    if i > n or field == 0:
      raise ValueError("truncated message")
    yield field, wire, value


def _read_varint(buf: memoryview, i: int) -> tuple[int, int]:
  n = shift = 0
  while True:
    b = buf[i]            # IndexError past the end: a truncated message
    i += 1
    n |= (b & 0x7F) << shift
    if b < 0x80:
      return n, i
    shift += 7
    if shift > 63:
      raise ValueError("varint too long")


def _int64(n: int) -> int:
  return n - (1 << 64) if n >= 1 << 63 else n


def _text(v) -> str:
  return bytes(v).decode("utf-8", "replace")


def _metadata(buf) -> tuple[int, dict]:
  """A map entry of event_metadata/stat_metadata: (key, {field: value})."""
  key, value = 0, {}
  for f, _, v in _fields(buf):
    if f == 1:
      key = _int64(v)
    elif f == 2:
      for g, _, w in _fields(v):
        value.setdefault(g, []).append(w)
  return key, value


class _Plane:
  """One decoded XPlane: names and stats resolved through its metadata maps."""

  def __init__(self, buf):
    self.name, self.lines_raw, stats = "", [], []
    self.event_md: dict = {}
    self.stat_names: dict = {}
    for f, _, v in _fields(buf):
      if f == 2:
        self.name = _text(v)
      elif f == 3:
        self.lines_raw.append(v)
      elif f == 4:
        k, md = _metadata(v)
        self.event_md[k] = md
      elif f == 5:
        k, md = _metadata(v)
        self.stat_names[k] = _text(md.get(2, [b""])[-1])
      elif f == 6:
        stats.append(v)
    self.stats = [self.stat(s) for s in stats]

  def stat(self, buf) -> tuple[str, object]:
    mid, value = 0, None
    for f, _, v in _fields(buf):
      if f == 1:
        mid = _int64(v)
      elif f == 2:
        value = struct.unpack("<d", v)[0]
      elif f == 3:
        value = v
      elif f == 4:
        value = _int64(v)
      elif f in (5, 6):
        value = _text(v)
      elif f == 7:
        value = self.stat_names.get(v, "")
    return self.stat_names.get(mid, ""), value

  def event_name(self, mid: int) -> str:
    md = self.event_md.get(mid, {})
    name = md.get(2) or md.get(4)
    return _text(name[-1]) if name else ""


# --- ProfileData: jax.profiler.ProfileData's API ---------------------------------------------

class ProfileEvent:
  """One event: `name`, `start_ns`/`duration_ns`/`end_ns` (floats, ns since the trace's
  start in ember's and JAX's CPU traces) and `stats`, (name, value) pairs: the event's own,
  then its metadata's."""
  __slots__ = ("name", "start_ns", "duration_ns", "end_ns", "stats")

  def __init__(self, plane: _Plane, buf, line_ns: int):
    mid = offset_ps = duration_ps = 0
    stats = []
    for f, _, v in _fields(buf):
      if f == 1:
        mid = _int64(v)
      elif f == 2:
        offset_ps = _int64(v)
      elif f == 3:
        duration_ps = _int64(v)
      elif f == 4:
        stats.append(plane.stat(v))
    stats += [plane.stat(s) for s in plane.event_md.get(mid, {}).get(5, ())]
    self.name = plane.event_name(mid)
    self.start_ns = line_ns + offset_ps / 1e3
    self.duration_ns = duration_ps / 1e3
    self.end_ns = self.start_ns + self.duration_ns
    self.stats = stats

  def __repr__(self) -> str:
    return f"ProfileEvent({self.name!r}, start_ns={self.start_ns}, duration_ns={self.duration_ns})"


class ProfileLine:
  """One line (a thread, or a device stream): `name` and its `events` (an iterator)."""

  def __init__(self, plane: _Plane, buf):
    self._plane, self._events = plane, []
    name = display = ""
    self._timestamp_ns = 0
    for f, _, v in _fields(buf):
      if f == 2:
        name = _text(v)
      elif f == 3:
        self._timestamp_ns = _int64(v)
      elif f == 4:
        self._events.append(v)
      elif f == 11:
        display = _text(v)
    self.name = display or name

  @property
  def events(self) -> Iterator[ProfileEvent]:
    return (ProfileEvent(self._plane, e, self._timestamp_ns) for e in self._events)

  def __repr__(self) -> str:
    return f"ProfileLine({self.name!r}, {len(self._events)} events)"


class ProfilePlane:
  """One plane (`/host:CPU`, `/device:GPU:0`, ...): `name`, `lines` (an iterator) and
  `stats`, its (name, value) pairs."""

  def __init__(self, buf):
    self._plane = _Plane(buf)
    self.name = self._plane.name
    self.stats = self._plane.stats

  @property
  def lines(self) -> Iterator[ProfileLine]:
    return (ProfileLine(self._plane, ln) for ln in self._plane.lines_raw)

  def __repr__(self) -> str:
    return f"ProfilePlane({self.name!r})"


class ProfileData:
  """A decoded XSpace, as `jax.profiler.ProfileData`: `ProfileData.from_file(path)` (an
  `.xplane.pb`), `ProfileData.from_serialized_xspace(data)` or `ProfileData(data)`;
  `planes` iterates its ProfilePlanes, `find_plane_with_name(name)` finds one (None if
  absent). Planes are decoded when first read."""

  def __init__(self, serialized_xspace: bytes):
    if not isinstance(serialized_xspace, (bytes, bytearray, memoryview)):
      raise TypeError("ProfileData(serialized_xspace): expected bytes (a serialized XSpace "
                      f"protobuf), got {type(serialized_xspace).__name__}")
    self._data = bytes(serialized_xspace)
    try:
      self._raw = [v for f, w, v in _fields(memoryview(self._data)) if f == 1 and w == 2]
    except (ValueError, IndexError):
      raise RuntimeError("Failed to parse XSpace from array") from None
    self._planes: list | None = None

  @classmethod
  def from_serialized_xspace(cls, serialized_xspace: bytes) -> "ProfileData":
    return cls(serialized_xspace)

  @classmethod
  def from_file(cls, proto_file_path: str) -> "ProfileData":
    try:
      with open(proto_file_path, "rb") as f:
        data = f.read()
    except FileNotFoundError as e:   # JAX's error: the status XLA's file reader returns
      raise JaxRuntimeError(f"NOT_FOUND: {proto_file_path}; No such file or directory") from e
    return cls(data)

  def _decoded(self) -> list:
    if self._planes is None:
      try:
        self._planes = [ProfilePlane(p) for p in self._raw]
      except (ValueError, IndexError):
        raise RuntimeError("Failed to parse XSpace from array") from None
    return self._planes

  @property
  def planes(self) -> Iterator[ProfilePlane]:
    return iter(self._decoded())

  def find_plane_with_name(self, name: str) -> ProfilePlane | None:
    return next((p for p in self._decoded() if p.name == name), None)

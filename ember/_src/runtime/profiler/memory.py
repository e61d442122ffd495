"""Device memory profiles: `jax.profiler.device_memory_profile` in pprof's format.

A profile is a snapshot of the device memory held by live `ember.Array`s, each attributed to the
Python stack that created it, written as JAX 0.12 writes it: a gzip-compressed protobuf
`perftools.profiles.Profile` (github.com/google/pprof, proto/profile.proto) with

    sample_type  [allocations/count, space/bytes]
    sample       one per distinct (stack, labels): location_id innermost frame first,
                 value [number of buffers, their bytes], labels kind=buffer, device=cpu:0
    location     one per (function, line); function: one per code object (name, system_name
                 = co_name, filename, start_line = co_firstlineno); string_table[0] == ""

Read it with `pprof -top|-traces|-http=: file.prof` (or any pprof reader).

What counts as a buffer (JAX reports the runtime's live buffers):
- every live, undeleted Array, pending ones included (their memory exists from dispatch on),
  with its `nbytes`; Arrays over the very same memory (same address and size) count once;
- not the buffer pool's idle blocks: they are free memory kept for reuse (like the free part
  of XLA's allocator, which JAX's profile leaves out too); `buffer_pool` stats report them;
- not executables: JAX lists its compiled executables as kind=executable samples of 0 bytes on
  CPU, ember does not (they hold no device memory here).

The stacks come from ember/_src/core/array.py, which records for each Array (code, lasti)
pairs of at most `ALLOC_STACK_FRAMES` frames (environment variable EMBER_MEMORY_PROFILE_FRAMES,
default 2: the allocating line and its caller, what is cheap enough for the jitted-call fast
path), starting at the first frame outside ember. JAX records whole stacks, its own internal
frames included below the user's; ember's start where user code asked for the array, e.g. the
line calling a jitted function for its outputs.
"""
from __future__ import annotations

import gc
import gzip

from ember._src.core import array as _array

# --- protobuf wire format (only what profile.proto needs: varints and length-delimited) -----

def _varint(n: int) -> bytes:
  n &= 0xFFFFFFFFFFFFFFFF  # int64: negatives as their two's complement, ten bytes
  out = bytearray()
  while n > 0x7F:
    out.append((n & 0x7F) | 0x80)
    n >>= 7
  out.append(n)
  return bytes(out)


def _int(field: int, n: int) -> bytes:
  """A varint field; proto3 omits zeros."""
  return _varint(field << 3) + _varint(n) if n else b""


def _bytes(field: int, payload: bytes) -> bytes:
  return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _packed(field: int, ints) -> bytes:
  return _bytes(field, b"".join(map(_varint, ints))) if ints else b""


# --- the Profile message ---------------------------------------------------------------------

class _ProfileBuilder:
  """Interns strings, functions and locations, and merges samples of equal stack and labels."""

  def __init__(self):
    self.strings: dict[str, int] = {}
    self.functions: dict[tuple, int] = {}   # (name, filename, start_line) -> id
    self.locations: dict[tuple, int] = {}   # (function id, line) -> id
    self.samples: dict[tuple, list] = {}    # (location ids, labels) -> [count, bytes]
    # JAX's prelude, in its order ("executable" included: string ids then match JAX's)
    for s in ("", "allocations", "count", "space", "bytes", "kind", "buffer", "executable",
              "device"):
      self.string(s)

  def string(self, s: str) -> int:
    i = self.strings.get(s)
    if i is None:
      i = self.strings[s] = len(self.strings)
    return i

  def location(self, code, line: int) -> int:
    fkey = (code.co_name, code.co_filename, code.co_firstlineno)
    fid = self.functions.get(fkey)
    if fid is None:
      self.string(code.co_name)
      self.string(code.co_filename)
      fid = self.functions[fkey] = len(self.functions) + 1   # ids start at 1 (0: none)
    lkey = (fid, line)
    lid = self.locations.get(lkey)
    if lid is None:
      lid = self.locations[lkey] = len(self.locations) + 1
    return lid

  def add(self, frames, labels: tuple, count: int, nbytes: int) -> None:
    """A sample: `frames` are (code, line) pairs innermost first; `labels` (key, value) strs."""
    locs = tuple(self.location(code, line) for code, line in frames)
    key = (locs, tuple((self.string(k), self.string(v)) for k, v in labels))
    acc = self.samples.setdefault(key, [0, 0])
    acc[0] += count
    acc[1] += nbytes

  def serialize(self) -> bytes:
    out = [_bytes(1, _int(1, self.string(t)) + _int(2, self.string(u)))
           for t, u in (("allocations", "count"), ("space", "bytes"))]
    for (locs, labels), values in self.samples.items():
      out.append(_bytes(2, _packed(1, locs) + _packed(2, values) + b"".join(
          _bytes(3, _int(1, k) + _int(2, v)) for k, v in labels)))
    for (fid, line), lid in self.locations.items():
      out.append(_bytes(4, _int(1, lid) + _bytes(4, _int(1, fid) + _int(2, line))))
    strings = self.strings
    for (name, filename, start), fid in self.functions.items():
      out.append(_bytes(5, _int(1, fid) + _int(2, strings[name]) + _int(3, strings[name])
                        + _int(4, strings[filename]) + _int(5, start)))
    out.extend(_bytes(6, s.encode()) for s in strings)
    return b"".join(out)


# --- collection --------------------------------------------------------------------------------

def _line(code, lasti: int, cache: dict) -> int:
  """The source line of bytecode offset `lasti` in `code` (what frame.f_lineno says)."""
  key = (id(code), lasti)      # the Arrays being profiled keep their code objects alive
  line = cache.get(key)
  if line is None:
    line = code.co_firstlineno
    for start, end, ln in code.co_lines():
      if start <= lasti < end:
        if ln is not None:
          line = ln
        break
    cache[key] = line
  return line


def _tracked_arrays() -> list:
  """The Arrays among the objects gc tracks (every Array is: finding them costs creation
  nothing), as the referrers of the Array class (an instance of a heap type refers to it).
  Not gc.get_objects(): its list references every tracked object, among them a tuple
  another thread may still be building (tuple() of a generator grows it in place, which
  needs the only reference: that thread raised SystemError)."""
  array_type = _array.Array
  return [o for o in gc.get_referrers(array_type) if type(o) is array_type]


def _live_arrays() -> list:
  """The live Arrays that hold device memory, each memory counted once."""
  out, seen = [], set()
  for obj in _tracked_arrays():
    # another thread may be constructing it: _deleted is set after the buffer fields
    if getattr(obj, "_deleted", True):
      continue
    buf = obj._buf
    if buf is not None:
      key = (obj._ptr if obj._ptr is not None else buf.ctypes.data, buf.nbytes)
      if key in seen:
        continue
      seen.add(key)
    elif obj._fut is None:       # deleted meanwhile by another thread
      continue
    out.append(obj)
  return out


def heap_profile() -> bytes:
  """The uncompressed Profile message (what JAX's `client.heap_profile()` returns)."""
  b = _ProfileBuilder()
  lines: dict = {}
  for a in _live_arrays():
    st = getattr(a, "_stack", ())   # () for an Array made without a constructor
    frames = [(st[i], _line(st[i], st[i + 1], lines)) for i in range(0, len(st), 2)]
    b.add(frames, (("kind", "buffer"), ("device", str(a.device))), 1, a.nbytes)
  return b.serialize()


def device_memory_profile(backend: str | None = None) -> bytes:
  """Captures a device memory profile as a gzip-compressed pprof protocol buffer.

  The profile is a snapshot of the live `ember.Array`s and the Python stacks that created them
  (see this module's docstring); read it with `pprof`. `backend` is None or "cpu" (ember's only
  backend; others raise RuntimeError, as JAX's unknown backends do)."""
  _array.devices(backend)
  return gzip.compress(heap_profile())


def save_device_memory_profile(filename, backend: str | None = None) -> None:
  """Writes `device_memory_profile(backend)` to `filename`."""
  profile = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(profile)

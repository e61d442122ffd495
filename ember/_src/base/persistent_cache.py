"""The persistent compilation cache: a store of bytes by key, shared by processes.

    config.update("jax_compilation_cache_dir", "/tmp/ember-cache")   # or JAX_/EMBER_ env var
    config.update("jax_persistent_cache_min_compile_time_secs", 0)   # default 1.0

The compile driver needs one function,
`load_or_compile(directory, module_name, key, compile, serialize, deserialize, started)`:
the key (a hash of the optimized module with everything else that decides its machine
code, computed by the driver with the backend's environment fingerprint) names a file
`jit_<name>-<key>` in the directory holding the serialized executable; `deserialize`
rebuilds it (a hit skips code generation and LLVM entirely), else `compile` makes it and
`serialize` gives the bytes written. The store knows nothing of modules, compilers or
executables.

An entry is `MAGIC | sha256(payload) | payload`, the payload zlib-compressed. Writes go to a temporary file in the same
directory, then `os.replace`: readers see a whole entry or none. An entry that is
truncated, corrupt or from another format is logged, ignored and replaced by the fresh
compile. Hits touch the file's mtime; after each write, the least recently used entries
are removed until the directory is within `jax_compilation_cache_max_size` (when not -1;
0 turns the cache off) or else `ember_persistent_cache_max_size_bytes` (default 1 GiB).
The backend's runtime cache (backends/cpu/runtime_cache.py) keeps its entries in the same
file format (`read_entry`, `write_entry`).

Logs (logger `ember._src.compiler`, or JAX's `jax._src.compiler` when only that one is
enabled; DEBUG, as JAX's; a hit is a WARNING under
`jax_log_compiles`, a miss under `jax_explain_cache_misses`):
`PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key '...'`,
`Persistent compilation cache hit for 'jit_f' with key '...'`.
"""
from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import time
import zlib
from typing import Callable, TypeVar

from ember._src.base import monitoring
from ember._src.base.config import config


class _CompilerLog:
  """Logs on "ember._src.compiler"; when that is not enabled for a record's level but JAX's
  "jax._src.compiler" is (JAX code run as `import ember as jax` that sets that logger's
  level to see HIT/MISS, seed 002 §2.5), logs there instead. Each record goes out once."""

  _loggers = (logging.getLogger("ember._src.compiler"), logging.getLogger("jax._src.compiler"))

  def log(self, level, msg, *args):
    for lg in self._loggers:
      if lg.isEnabledFor(level):
        lg.log(level, msg, *args)
        return

  def debug(self, msg, *args):
    self.log(logging.DEBUG, msg, *args)

  def warning(self, msg, *args):
    self.log(logging.WARNING, msg, *args)


logger = _CompilerLog()

MAGIC = b"EMBER-PCC\x00v1\n"      # format and version of an entry file
_DIGEST = 32                      # sha256 of the payload follows the magic
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECS = 3600            # a temp file this old lost its writer


def cache_dir() -> str | None:
  """The cache directory, or None when the persistent cache is off."""
  if not config.read("jax_enable_compilation_cache") or max_size() == 0:
    return None
  d = config.read("jax_compilation_cache_dir")
  return os.fspath(d) if d else None


def max_size() -> int:
  """The cap on the directory's entries in bytes (-1: none): JAX's option when set."""
  jax_cap = config.read("jax_compilation_cache_max_size")
  return jax_cap if jax_cap != -1 else config.read("ember_persistent_cache_max_size_bytes")


def entry_name(module_name: str, key: str) -> str:
  name = module_name if module_name.startswith("jit_") else f"jit_{module_name}"
  return re.sub(r"[^A-Za-z0-9_.]", "_", name)[:100] + "-" + key


# --------------------------------------------------------------------------------------
# Entries on disk
# --------------------------------------------------------------------------------------

def read_entry(path: str) -> bytes | None:
  """The payload of the entry at `path`; None if absent. A bad entry is logged and
  removed (the caller's compile writes a fresh one)."""
  try:
    with open(path, "rb") as f:
      data = f.read()
  except FileNotFoundError:
    return None
  except OSError as e:
    logger.warning("persistent compilation cache: cannot read %s (%s); compiling", path, e)
    return None
  head = len(MAGIC) + _DIGEST
  payload = data[head:]
  if (len(data) < head or data[:len(MAGIC)] != MAGIC
      or hashlib.sha256(payload).digest() != data[len(MAGIC):head]):
    why = ("truncated" if MAGIC.startswith(data[:len(MAGIC)]) or len(data) < head
           else "not an ember cache entry of this version") if data[:len(MAGIC)] != MAGIC \
        else "checksum mismatch (corrupt or truncated)"
    logger.warning("persistent compilation cache: ignoring bad entry %s: %s", path, why)
    remove(path)
    return None
  try:
    os.utime(path)        # least-recently-used eviction goes by mtime
  except OSError:
    pass
  return payload


def write_entry(directory: str, name: str, payload: bytes, cap: int | None = None) -> bool:
  """Write atomically (temp file in the same directory, then rename), then evict down to
  `cap` bytes (default: `max_size()`). Returns whether it was written: entries under
  `jax_persistent_cache_min_entry_size_bytes` are not."""
  data = MAGIC + hashlib.sha256(payload).digest() + payload
  min_size = config.read("jax_persistent_cache_min_entry_size_bytes")
  if min_size > 0 and len(data) < min_size:
    logger.debug("Not writing persistent cache entry %r since its size (%d bytes) is less "
                 "than threshold (%d bytes)", name, len(data), min_size)
    return False
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=directory)
  try:
    os.fchmod(fd, 0o644)          # like any other file a compile writes, not private
    with os.fdopen(fd, "wb") as f:
      f.write(data)
    os.replace(tmp, os.path.join(directory, name))
  except BaseException:
    remove(tmp)
    raise
  evict(directory, keep=name, cap=cap)
  return True


def evict(directory: str, keep: str | None = None, cap: int | None = None) -> list[str]:
  """Remove least recently used entries (oldest mtime first) until the entries' total
  size is within `cap` (default: `max_size()`); never `keep`. Returns the
  removed names. Also removes temporary files a killed writer left (older than an hour)."""
  cap = max_size() if cap is None else cap
  entries, now = [], time.time()
  for e in os.scandir(directory):
    if e.name.startswith(_TMP_PREFIX):
      try:
        if now - e.stat().st_mtime > _STALE_TMP_SECS:
          remove(e.path)
      except FileNotFoundError:
        pass
      continue
    if e.name.startswith("jit_") and e.is_file():
      try:
        st = e.stat()
      except FileNotFoundError:    # another process evicted it
        continue
      entries.append((st.st_mtime_ns, e.name, st.st_size))
  if cap is None or cap < 0:
    return []
  total = sum(size for _, _, size in entries)
  removed = []
  for _, name, size in sorted(entries):
    if total <= cap:
      break
    if name == keep:
      continue
    remove(os.path.join(directory, name))
    total -= size
    removed.append(name)
  if removed:
    logger.debug("persistent compilation cache: evicted %d entries: %s", len(removed), removed)
  return removed


def remove(path: str) -> None:
  try:
    os.remove(path)
  except OSError:
    pass


# --------------------------------------------------------------------------------------
# The compile path
# --------------------------------------------------------------------------------------

T = TypeVar("T")


def load_or_compile(directory: str, module_name: str, key: str, compile: Callable[[], T],
                    serialize: Callable[[T], bytes], deserialize: Callable[[bytes], T],
                    started: float) -> T:
  """The value (an executable) stored under `key` in `directory` (the caller's reading of
  `cache_dir()`): `deserialize(payload)` of the entry when there is a good one, else
  `compile()`, written as `serialize(value)` when the compile, timed from `started`, took
  at least `jax_persistent_cache_min_compile_time_secs`. A payload `deserialize` rejects
  (raises) is logged, removed and compiled again."""
  name = entry_name(module_name, key)
  path = os.path.join(directory, name)
  monitoring.record_event(monitoring.CACHE_REQUESTS_EVENT)
  t0 = time.perf_counter()
  payload = read_entry(path)
  if payload is not None:
    try:
      value = deserialize(zlib.decompress(payload))
    except Exception as e:   # noqa: BLE001 - a bad entry must never break a compile
      logger.warning("persistent compilation cache: cannot load %s (%s: %s); recompiling",
                     path, type(e).__name__, e)
      remove(path)
    else:
      logger.log(logging.WARNING if config.read("jax_log_compiles") else logging.DEBUG,
                 "Persistent compilation cache hit for '%s' with key %r",
                 name.rsplit("-", 1)[0], key)
      monitoring.record_event(monitoring.CACHE_HITS_EVENT)
      monitoring.record_event_duration_secs(monitoring.CACHE_RETRIEVAL_EVENT,
                                            time.perf_counter() - t0)
      return value
  # as JAX: a miss is a WARNING when the user asked for cache-miss explanations
  logger.log(logging.WARNING if config.read("jax_explain_cache_misses") else logging.DEBUG,
             "PERSISTENT COMPILATION CACHE MISS for '%s' with key %r",
             name.rsplit("-", 1)[0], key)
  value = compile()
  secs = time.perf_counter() - started
  min_secs = config.read("jax_persistent_cache_min_compile_time_secs")
  if secs < min_secs:
    logger.debug("Not writing persistent cache entry for '%s' because it took < %.2f "
                 "seconds to compile (%.2fs)", name.rsplit("-", 1)[0], min_secs, secs)
    return value
  monitoring.record_event(monitoring.CACHE_MISSES_EVENT)   # as JAX: when an entry is written
  try:
    write_entry(directory, name, zlib.compress(serialize(value), 1))
  except OSError as e:       # a read-only or full disk costs the cache, not the compile
    logger.warning("persistent compilation cache: cannot write %s (%s)", path, e)
  return value

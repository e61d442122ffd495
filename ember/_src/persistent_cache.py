"""The persistent compilation cache: native code of optimized modules, shared by processes.

    config.update("jax_compilation_cache_dir", "/tmp/ember-cache")   # or JAX_/EMBER_ env var
    config.update("jax_persistent_cache_min_compile_time_secs", 0)   # default 1.0

On a compile, `compile_or_load` hashes the optimized module with everything else that
decides its machine code (ember, llvmlite and LLVM versions, target triple, host CPU name
and features, compiler flags). A file `jit_<name>-<hash>` in the directory holds the
serialized executable (`backends.cpu.compiler.serialize_executable`: object code plus the
thunk plan's facts), so a hit skips code generation and LLVM entirely.

An entry is `MAGIC | sha256(payload) | payload`, the payload zlib-compressed. Writes go to a temporary file in the same
directory, then `os.replace`: readers see a whole entry or none. An entry that is
truncated, corrupt or from another format is logged, ignored and replaced by the fresh
compile. Hits touch the file's mtime; after each write, the least recently used entries
are removed until the directory is within `jax_compilation_cache_max_size` (when not -1;
0 turns the cache off) or else `ember_persistent_cache_max_size_bytes` (default 1 GiB).

Logs (logger `ember._src.compiler`, or JAX's `jax._src.compiler` when only that one is
enabled; DEBUG, as JAX's; a hit is a WARNING under
`jax_log_compiles`, a miss under `jax_explain_cache_misses`):
`PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key '...'`,
`Persistent compilation cache hit for 'jit_f' with key '...'`.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import tempfile
import time
import zlib

import numpy as np

from ember._src import hlo
from ember._src.config import config


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


@functools.cache
def _environment() -> bytes:
  """What besides the module decides the machine code: versions and the host CPU."""
  import llvmlite
  import llvmlite.binding as llvm
  from ember import __version__
  from ember._src.backends.cpu import dot_kernels, host
  # the shared dot body's symbol names its configuration: objects calling another one
  # would not link
  return repr((MAGIC, __version__, llvmlite.__version__, llvm.llvm_version_info,
               llvm.get_process_triple(), host.cpu(),
               dot_kernels._body_symbol("float32"))).encode()


# `, metadata={op_name="..." source_file="..." source_line=N}`: debug info only
_METADATA = re.compile(r', metadata=\{(?:[^}"]|"(?:[^"\\]|\\.)*")*\}')


def cache_key(module: hlo.Module, flags) -> str:
  """sha256 over the optimized module's text without metadata (moving a function to
  another line keeps its entry), the bytes of every array attribute (the text elides
  large constants), the input/output aliasing, the flags and `_environment()`."""
  h = hashlib.sha256(_environment())
  text = hlo.to_text(module)
  if not config.read("jax_compilation_cache_include_metadata_in_key"):
    text = _METADATA.sub("", text)
  h.update(text.encode())
  for comp in module.called_computations():
    for instr in comp.instrs:
      for k, v in sorted(instr.attrs.items()):
        if isinstance(v, (np.ndarray, np.generic)):
          v = np.ascontiguousarray(v)
          h.update(f"{instr.name}.{k}:{v.dtype.str}{v.shape}".encode())
          h.update(v.tobytes())
  h.update(repr(sorted(module.input_output_alias.items())).encode())
  h.update(repr((sorted(flags.disable_passes), flags.opt_level)).encode())
  return h.hexdigest()


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
    _remove(path)
    return None
  try:
    os.utime(path)        # least-recently-used eviction goes by mtime
  except OSError:
    pass
  return payload


def write_entry(directory: str, name: str, payload: bytes) -> bool:
  """Write atomically (temp file in the same directory, then rename). Returns whether it
  was written: entries under `jax_persistent_cache_min_entry_size_bytes` are not."""
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
    _remove(tmp)
    raise
  evict(directory, keep=name)
  return True


def evict(directory: str, keep: str | None = None) -> list[str]:
  """Remove least recently used entries (oldest mtime first) until the entries' total
  size is within `max_size()`; never `keep`. Returns the
  removed names. Also removes temporary files a killed writer left (older than an hour)."""
  cap = max_size()
  entries, now = [], time.time()
  for e in os.scandir(directory):
    if e.name.startswith(_TMP_PREFIX):
      try:
        if now - e.stat().st_mtime > _STALE_TMP_SECS:
          _remove(e.path)
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
    _remove(os.path.join(directory, name))
    total -= size
    removed.append(name)
  if removed:
    logger.debug("persistent compilation cache: evicted %d entries: %s", len(removed), removed)
  return removed


def _remove(path: str) -> None:
  try:
    os.remove(path)
  except OSError:
    pass


# --------------------------------------------------------------------------------------
# The compile path
# --------------------------------------------------------------------------------------

def compile_or_load(module: hlo.Module, assignment, flags, started: float,
                    tiered: bool = False):
  """The executable of the optimized `module`: loaded from the cache directory when an
  entry exists, else compiled (and written when the compile, timed from `started`, took at
  least `jax_persistent_cache_min_compile_time_secs`). `tiered` (tiering.py) applies
  only without a cache directory: an entry is written once, with the optimized code."""
  from ember._src.backends.cpu import compiler
  directory = cache_dir()
  if directory is None or getattr(flags, "dump_to", None):
    return compiler.compile_module(module, assignment, flags,
                                   tiered and not getattr(flags, "dump_to", None))
  key = cache_key(module, flags)
  name = entry_name(module.name, key)
  path = os.path.join(directory, name)
  payload = read_entry(path)
  if payload is not None:
    try:
      exe = compiler.deserialize_executable(module, assignment, zlib.decompress(payload))
    except Exception as e:   # noqa: BLE001 - a bad entry must never break a compile
      logger.warning("persistent compilation cache: cannot load %s (%s: %s); recompiling",
                     path, type(e).__name__, e)
      _remove(path)
    else:
      logger.log(logging.WARNING if config.read("jax_log_compiles") else logging.DEBUG,
                 "Persistent compilation cache hit for '%s' with key %r",
                 name.rsplit("-", 1)[0], key)
      return exe
  # as JAX: a miss is a WARNING when the user asked for cache-miss explanations
  logger.log(logging.WARNING if config.read("jax_explain_cache_misses") else logging.DEBUG,
             "PERSISTENT COMPILATION CACHE MISS for '%s' with key %r",
             name.rsplit("-", 1)[0], key)
  exe = compiler.compile_module(module, assignment, flags)
  secs = time.perf_counter() - started
  min_secs = config.read("jax_persistent_cache_min_compile_time_secs")
  if secs < min_secs:
    logger.debug("Not writing persistent cache entry for '%s' because it took < %.2f "
                 "seconds to compile (%.2fs)", name.rsplit("-", 1)[0], min_secs, secs)
    return exe
  try:
    write_entry(directory, name, zlib.compress(compiler.serialize_executable(exe), 1))
  except OSError as e:       # a read-only or full disk costs the cache, not the compile
    logger.warning("persistent compilation cache: cannot write %s (%s)", path, e)
  return exe

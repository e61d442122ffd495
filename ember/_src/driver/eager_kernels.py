"""Compiled eager primitives kept on disk: the one-op computations driver/eager.py compiles
(`jnp.sum(x)` of one shape, a dot, a bucket of `sin`) are stored beside the backend's
runtime functions (backends/cpu/runtime_cache.py) and loaded by later processes.

A primitive's one-op module depends on the primitive, its parameters and operand types,
never on a user's program: like the runtime functions it is a piece of ember's runtime
library, built lazily on the machine that runs it. A notebook restarted, a script run again,
a test worker: each first eager call of a signature the machine has compiled before loads
it (~1 ms) instead of compiling it (~10-50 ms; JAX compiles it again in every process).

Where: `<runtime cache dir>/eager`, at most EAGER_CACHE_BYTES, least recently used entries
evicted first; off with `ember_eager_kernel_cache` = False (EMBER_EAGER_KERNEL_CACHE=0) or
with the runtime cache (`ember_runtime_cache_dir` = ""). Entries use the persistent
cache's format and are keyed by its key of the optimized module (`compilation.cache_key`:
versions, host CPU, the module's text and constants, flags) and a hash of the code
generator's source, so an edited backend never loads a stale kernel. When the user's
persistent compilation cache is on, it stores these modules instead
(compilation._native_code). A module that calls host callbacks is never stored. A miss
compiles as any module does (tiered: quick code first) and is written once its final code
is in (tiering.when_final).
"""
from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import threading
import zlib

from ember._src.base import persistent_cache
from ember._src.base.config import config

logger = logging.getLogger("ember._src.compiler")

EAGER_CACHE_BYTES = 256 << 20
stats = {"loaded": 0, "stored": 0}


def directory() -> str | None:
  """The store's directory, None when it or the runtime cache is off."""
  from ember._src.backends.cpu import runtime_cache   # deferred: llvmlite, 1st compile
  d = runtime_cache.cache_dir() if config.read("ember_eager_kernel_cache") else None
  return os.path.join(d, "eager") if d else None


@functools.cache
def _backend_digest() -> str:
  """A hash of the CPU backend's sources (code generator, math library, runtime): the
  machine code of a module text depends on them, and ember's version does not change with
  every edit of them."""
  root = os.path.join(os.path.dirname(os.path.dirname(__file__)), "backends", "cpu")
  from ember._src.backends.cpu import runtime_cache   # deferred: llvmlite, 1st compile
  return runtime_cache.generator_digest(
      *sorted(glob.glob(os.path.join(root, "**", "*.py"), recursive=True)))


def warm_digest() -> None:
  """Start computing `_backend_digest` on a thread of its own (`import ember` calls this,
  compilation.start_cpu_backend), so that the first eager call that loads a kernel finds it:
  globbing, reading and hashing the backend's ~45 sources took 2 ms of that call on the
  2-core VM and 11 ms on the gVisor device host (its file system calls are slow). A caller
  that asks before the thread is done computes it as well (the cache keeps one)."""
  if directory() is not None:
    threading.Thread(target=_backend_digest, name="ember-digest", daemon=True).start()


def load_or_compile(where: str, module_key: str, module, assignment, compile_tiered):
  """The executable of the one-op `module` (`module_key`: the persistent cache's key of
  it): its entry in `where` when there is a good one, else `compile_tiered()`, stored once
  its final code is in."""
  from ember._src.backends.cpu import compiler as backend, tiering   # deferred: llvmlite
  key = hashlib.sha256(f"{module_key}\0{_backend_digest()}".encode())
  name = persistent_cache.entry_name(module.name, key.hexdigest()[:40])
  path = os.path.join(where, name)
  payload = persistent_cache.read_entry(path)
  if payload is not None:
    try:
      exe = backend.deserialize_executable(module, assignment, zlib.decompress(payload))
    except Exception as e:   # noqa: BLE001 -- a bad entry costs a compile, never the call
      logger.debug("eager kernels: cannot load %s (%s: %s); compiling", path,
                   type(e).__name__, e)
      persistent_cache.remove(path)
    else:
      stats["loaded"] += 1
      return exe
  exe = compile_tiered()
  tiering.when_final(exe, lambda exe: _store(where, name, exe))
  return exe


def _store(where: str, name: str, exe) -> None:
  from ember._src.backends.cpu import compiler as backend   # deferred: llvmlite
  try:
    data = zlib.compress(backend.serialize_executable(exe), 1)
    if persistent_cache.write_entry(where, name, data, cap=EAGER_CACHE_BYTES):
      stats["stored"] += 1
  except (OSError, TypeError, KeyError) as e:  # a full disk, an executable that cannot be
    logger.debug("eager kernels: cannot store %s (%s)", name, e)   # serialized: compile again

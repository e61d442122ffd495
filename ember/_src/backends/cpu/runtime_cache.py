"""The machine code of the CPU backend's runtime functions, kept on disk across processes.

Some code is compiled once per process rather than once per module: the dot loops
(dot_kernels' shared bodies, ~0.15 s of LLVM each, paid by the first dot of a process), the
thread pool (~25 ms, by the first kernel split across threads), the loop driver and the
step runners (~7 ms each). Their object code depends only on ember's code generator, LLVM
and the host CPU, never on a user's program: like the precompiled kernels inside jaxlib, it
is a runtime library, here built on the machine that runs it. The first process to need one
compiles it and stores the object; later processes load it (~1-5 ms).

    load_or_compile(symbol, make_ir, key) -> (engine, symbol -> address)
    @once                            # the per-process builder of such code


Where: `ember_runtime_cache_dir` (EMBER_RUNTIME_CACHE_DIR; default $XDG_CACHE_HOME/ember/
runtime, else ~/.cache/ember/runtime; "" = off). An entry is named by a symbol it defines
and a hash of its IR (or of the source of the code generating it) and of the environment
(ember, llvmlite and LLVM versions, the host CPU and its features), so an edit of the code
or another machine selects another entry.
Entries use the persistent cache's file format (a checksum: a bad entry is removed and
compiled again); a directory that cannot be written only costs the compile.

`environment()` is the fingerprint of all that (compiler.environment extends it into the
persistent compilation cache's keys). The module sits at the backend's bottom, beside
llvm_jit: the code generators that use it import it, never the reverse.

Unlike the persistent compilation cache (off unless a directory is configured, and holding
users' programs), this holds a handful of ember's own functions, tens of KB each, and in
its `eager` subdirectory the eager primitives' one-op modules (driver/eager_kernels.py).
"""
from __future__ import annotations

import functools
import hashlib
import os
import threading
from typing import Callable

import llvmlite
import llvmlite.binding as llvm

from ember._src.base import persistent_cache, version
from ember._src.backends.cpu import denormals, host, llvm_jit
from ember._src.base.config import config

stats = {"compiled": 0, "loaded": 0}    # modules compiled / loaded from disk


def cache_dir() -> str | None:
  d = config.read("ember_runtime_cache_dir")
  return os.fspath(d) if d else None


@functools.cache
def environment() -> bytes:
  """What besides a module's own code decides its machine code: ember's, llvmlite's and
  LLVM's versions, the target triple, the host CPU and its features, the denormal mode
  llvm_jit declares (compiler.environment adds what compiled users' modules depend on
  besides)."""
  return repr((persistent_cache.MAGIC, version.__version__, llvmlite.__version__,
               llvm.llvm_version_info, llvm.get_process_triple(), host.cpu(),
               denormals.MODE_ATTRIBUTE)).encode()


@functools.cache
def generator_digest(*paths: str) -> str:
  """A hash of the source files of the code that generates an IR (building the IR itself
  can take ~15 ms of llvmlite: too slow for a key)."""
  h = hashlib.sha256()
  for path in paths:
    with open(path, "rb") as f:
      h.update(f.read())
  return h.hexdigest()


def entry_name(symbol: str, key: str, opt_level: int = 3) -> str:
  h = hashlib.sha256(environment())
  h.update(f"{symbol}\0{opt_level}\0{key}".encode())
  return f"{symbol}-{h.hexdigest()[:32]}"


def once(build: Callable[[], object]) -> Callable[[], object]:
  """`build()` run at most once per process, its result returned to every caller: the
  decorator of the functions that make this process's copy of a runtime function (its
  engine and the ctypes functions calling into it). Unlike `functools.cache`, callers
  arriving together wait for the first instead of each building a copy: a copy that lost
  the race was freed with its engine while code it handed out (a step table's runner) could
  still be called, a crash (4 devices' first calls at once on a 13-core machine)."""
  lock = threading.Lock()
  done: list = []

  @functools.wraps(build)
  def built():
    if not done:
      with lock:
        if not done:
          done.append(build())
    return done[0]

  def after_fork() -> None:   # a parent thread may have held the lock at the fork
    nonlocal lock
    lock = threading.Lock()
  os.register_at_fork(after_in_child=after_fork)
  return built


def load_or_compile(symbol: str, make_ir: Callable[[], str], key: str, opt_level: int = 3):
  """(MCJIT engine, symbol -> address) of the module `make_ir()` compiled at `opt_level`:
  loaded from its disk entry when there is a good one, else compiled (in an LLVM context of
  its own) and stored. `key` names the IR's content: the IR text itself when it is a
  constant, else a hash of the code that generates it (`generator_digest`)."""
  directory = cache_dir()
  path = os.path.join(directory, entry_name(symbol, key, opt_level)) if directory else None
  obj = persistent_cache.read_entry(path) if path else None
  if obj is not None:
    engine, addr = llvm_jit.load_object(obj, opt_level)
    stats["loaded"] += 1
    return engine, addr
  engine, addr, _, _, obj = llvm_jit.jit(make_ir(), opt_level, private=True)
  stats["compiled"] += 1
  if path:
    try:
      persistent_cache.write_entry(directory, os.path.basename(path), obj)
    except OSError as e:    # read-only home, full disk: the next process compiles again
      persistent_cache.logger.debug("runtime cache: cannot write %s (%s)", path, e)
  return engine, addr

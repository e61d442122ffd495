"""The machine code of the CPU backend's runtime functions, kept on disk across processes.

Some functions are compiled once per process rather than once per module: the dot loops
(dot_kernels' shared bodies, ~0.1-0.2 s of LLVM each, paid by the first dot of a process).
Their object code depends only on ember's code generator, LLVM and the host CPU, never on a
user's program: like the precompiled kernels inside jaxlib, it is a runtime library, here
built on the machine that runs it. The first process to need one compiles it and stores the
object; later processes load it (~1 ms).

    load_or_compile(symbol, make_ir) -> (engine, address of symbol)

Where: `ember_runtime_cache_dir` (EMBER_RUNTIME_CACHE_DIR; default $XDG_CACHE_HOME/ember/
runtime, else ~/.cache/ember/runtime; "" = off). An entry is named by the symbol and a hash
of the source of the code generator and of the environment (ember, llvmlite and LLVM
versions, the host CPU and its features), so an edit of the generator or another machine
selects another entry.
Entries use the persistent cache's file format (a checksum: a bad entry is removed and
compiled again); a directory that cannot be written only costs the compile.

Unlike the persistent compilation cache (off unless a directory is configured, and holding
users' programs), this holds a handful of ember's own functions, tens of KB each.
"""
from __future__ import annotations

import functools
import hashlib
import os
from typing import Callable

from ember._src.config import config

stats = {"compiled": 0, "loaded": 0}    # runtime functions compiled / loaded from disk


def cache_dir() -> str | None:
  d = config.read("ember_runtime_cache_dir")
  return os.fspath(d) if d else None


@functools.cache
def _generator_digest() -> bytes:
  """A hash of the environment and of the source of the modules that generate the runtime
  functions' IR (building the IR itself takes ~15 ms of llvmlite: too slow for a key)."""
  from ember._src import persistent_cache
  from ember._src.backends.cpu import codegen, dot_kernels
  h = hashlib.sha256(persistent_cache._environment())
  for mod in (codegen, dot_kernels):
    with open(mod.__file__, "rb") as f:
      h.update(f.read())
  return h.digest()


def entry_name(symbol: str) -> str:
  return f"{symbol}-{hashlib.sha256(_generator_digest() + symbol.encode()).hexdigest()[:32]}"


def load_or_compile(symbol: str, make_ir: Callable[[], str]):
  """(MCJIT engine, address of `symbol`): loaded from its disk entry when there is a good
  one, else compiled (the module `make_ir()`, at the top LLVM tier) and stored."""
  from ember._src import persistent_cache
  from ember._src.backends.cpu import compiler
  import llvmlite.binding as llvm
  directory = cache_dir()
  path = os.path.join(directory, entry_name(symbol)) if directory else None
  obj = persistent_cache.read_entry(path) if path else None
  if obj is not None:
    engine, addr = compiler._load_object(obj, llvm.get_process_triple(), 3)
    stats["loaded"] += 1
    return engine, addr(symbol)
  engine, addr, _, _, obj = compiler._jit(make_ir(), 3, private=True)
  stats["compiled"] += 1
  if path:
    try:
      persistent_cache.write_entry(directory, os.path.basename(path), obj)
    except OSError as e:    # read-only home, full disk: the next process compiles again
      persistent_cache.logger.debug("runtime cache: cannot write %s (%s)", path, e)
  return engine, addr(symbol)

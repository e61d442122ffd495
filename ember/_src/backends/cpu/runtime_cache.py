"""The machine code of the CPU backend's runtime functions, kept on disk across processes.

Some code is compiled once per process rather than once per module: the dot loops
(dot_kernels' shared bodies, ~0.15 s of LLVM each, paid by the first dot of a process), the
thread pool (~25 ms, by the first kernel split across threads), the loop driver and the
step runners (~7 ms each). Their object code depends only on ember's code generator, LLVM
and the host CPU, never on a user's program: like the precompiled kernels inside jaxlib, it
is a runtime library, here built on the machine that runs it. The first process to need one
compiles it and stores the object; later processes load it (~1-5 ms).

    load_or_compile(symbol, make_ir, key) -> (engine, symbol -> address)

Where: `ember_runtime_cache_dir` (EMBER_RUNTIME_CACHE_DIR; default $XDG_CACHE_HOME/ember/
runtime, else ~/.cache/ember/runtime; "" = off). An entry is named by a symbol it defines
and a hash of its IR (or of the source of the code generating it) and of the environment
(ember, llvmlite and LLVM versions, the host CPU and its features), so an edit of the code
or another machine selects another entry.
Entries use the persistent cache's file format (a checksum: a bad entry is removed and
compiled again); a directory that cannot be written only costs the compile.

`environment()` is the fingerprint of all that (the compile driver puts it into the persistent
compilation cache's keys too).

Unlike the persistent compilation cache (off unless a directory is configured, and holding
users' programs), this holds a handful of ember's own functions, tens of KB each.
"""
from __future__ import annotations

import functools
import hashlib
import os
from typing import Callable

import llvmlite
import llvmlite.binding as llvm

from ember._src import persistent_cache, version
from ember._src.backends.cpu import dot_kernels, host, llvm_jit
from ember._src.config import config

stats = {"compiled": 0, "loaded": 0}    # modules compiled / loaded from disk


def cache_dir() -> str | None:
  d = config.read("ember_runtime_cache_dir")
  return os.fspath(d) if d else None


@functools.cache
def environment() -> bytes:
  """What besides a module's own code decides its machine code: ember's, llvmlite's and
  LLVM's versions, the target triple, the host CPU and its features, and the symbol of the
  shared dot body (objects calling another configuration's would not link)."""
  return repr((persistent_cache.MAGIC, version.__version__, llvmlite.__version__,
               llvm.llvm_version_info, llvm.get_process_triple(), host.cpu(),
               dot_kernels._body_symbol("float32"))).encode()


@functools.cache
def generator_digest() -> str:
  """A hash of the source of the modules that generate the dot bodies' IR (building the IR
  itself takes ~15 ms of llvmlite: too slow for a key)."""
  from ember._src.backends.cpu import codegen, dot_kernels
  h = hashlib.sha256()
  for mod in (codegen, dot_kernels):
    with open(mod.__file__, "rb") as f:
      h.update(f.read())
  return h.hexdigest()


def entry_name(symbol: str, key: str, opt_level: int = 3) -> str:
  h = hashlib.sha256(environment())
  h.update(f"{symbol}\0{opt_level}\0{key}".encode())
  return f"{symbol}-{h.hexdigest()[:32]}"


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

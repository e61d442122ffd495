"""Compiler dumps (`--dump_to=DIR` / `XLA_FLAGS=--xla_dump_to=DIR`), named as XLA names them.

Each compiled module gets a number when its first file is written; all its files share it:

    DIR/module_0003.jit_f.before_optimizations.txt        HLO as lowering produced it
    DIR/module_0003.jit_f.cpu_after_optimizations.txt     the optimized HLO (Compiled.as_text())
    DIR/module_0003.jit_f.<suffix>                        backend artifacts via dump_artifact:
        ir-with-opt.ll, s, cpu_after_optimizations-buffer-assignment.txt, ...
"""
from __future__ import annotations

import itertools
import os
import threading

from ember._src.base import flags as flags_lib
from ember._src.hlo import graph as hlo

BEFORE = "before_optimizations.txt"
AFTER = "cpu_after_optimizations.txt"

_lock = threading.Lock()
_next_id = itertools.count()
_ids: dict[str, int] = {}      # module name -> number of its latest compile


def module_id(module_name: str, new: bool = False) -> int:
  """The dump number of `module_name`: a fresh one when `new` (a new compile of it) or when
  it has none yet, else the one its latest compile got."""
  with _lock:
    if new or module_name not in _ids:
      _ids[module_name] = next(_next_id)
    return _ids[module_name]


def dump_path(directory: str, module_name: str, suffix: str) -> str:
  return os.path.join(directory, f"module_{module_id(module_name):04d}.{module_name}.{suffix}")


def dump_artifact(module_name, suffix: str, text: str, flags=None) -> str | None:
  """Write `text` as `module_NNNN.<module_name>.<suffix>` under the dump directory, if one
  is set; returns the path written (None when dumping is off). `module_name` may be an
  `hlo.Module`. The backend calls this for `.ll`, `.s` and the buffer assignment."""
  directory = (flags or flags_lib.get()).dump_to
  if not directory:
    return None
  if isinstance(module_name, hlo.Module):
    module_name = module_name.name
  os.makedirs(directory, exist_ok=True)
  path = dump_path(directory, module_name, suffix.lstrip("."))
  with open(path, "w") as f:
    f.write(text)
  return path


def dump_before(module: hlo.Module, flags) -> str | None:
  """Start a new dump number for `module` and write its unoptimized HLO."""
  if not flags.dump_to:
    return None
  module_id(module.name, new=True)
  return dump_artifact(module.name, BEFORE, hlo.to_text(module), flags)


def dump_after(module: hlo.Module, flags) -> str | None:
  if not flags.dump_to:      # the text costs as much as a pass: only when dumping
    return None
  return dump_artifact(module.name, AFTER, hlo.to_text(module), flags)

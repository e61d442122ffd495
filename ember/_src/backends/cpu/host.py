"""The CPU ember compiles for: the host's LLVM name and features, or an older x86 level.

`EMBER_FLAGS=--cpu_max_isa=AVX2` (XLA's `--xla_cpu_max_isa`) caps the instruction set, as
in XLA: code for a fleet of older machines, or a check that code works without AVX-512,
F16C (float16 conversions then call ember's own helpers, libcalls.py), AVX or FMA. The
levels are XLA's names; each maps to an LLVM CPU with that level's features. A level
above the host's is the host. Like XLA, the flag is read once, at process start: the
choice is baked into every code generator and cache key of the process.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm

from ember._src import flags as flags_lib

# XLA's level names -> the LLVM CPU whose features are that level's, in increasing order.
ISA_CPUS = {"SSE4_2": "nehalem", "AVX": "sandybridge", "AVX2": "haswell",
            "AVX512": "skylake-avx512"}
# the host feature that shows each level
_LEVEL_FEATURE = {"SSE4_2": "sse4.2", "AVX": "avx", "AVX2": "avx2", "AVX512": "avx512f"}


@functools.cache
def _init() -> None:
  llvm.initialize_native_target()
  llvm.initialize_native_asmprinter()


def is_x86() -> bool:
  _init()
  return llvm.get_process_triple().startswith(("x86_64", "i686"))


def _host_level(features: dict) -> int:
  levels = list(ISA_CPUS)
  return max((i for i, lv in enumerate(levels) if features.get(_LEVEL_FEATURE[lv])),
             default=-1)


@functools.cache
def cpu() -> tuple[str, str]:
  """(LLVM CPU name, feature string) of the code ember generates (parsing the host's
  features costs ~0.4 ms: computed once)."""
  _init()
  name, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features()
  cap = flags_lib.get().cpu_max_isa
  if cap and is_x86() and list(ISA_CPUS).index(cap) < _host_level(features):
    return ISA_CPUS[cap], ""
  return name, features.flatten()


def has(feature: str) -> bool:
  """Whether the code may use the LLVM feature `feature` (e.g. "avx512f", "avx")."""
  name, features = cpu()
  if name in _LEVEL_FEATURES and not features:       # a capped level
    return feature in _LEVEL_FEATURES[name]
  return f"+{feature}" in features.split(",")


# the features of each level's CPU that ember's code generators ask about
_LEVEL_FEATURES = {"nehalem": ("sse4.2",), "sandybridge": ("sse4.2", "avx"),
                   "haswell": ("sse4.2", "avx", "avx2", "fma", "f16c"),
                   "skylake-avx512": ("sse4.2", "avx", "avx2", "fma", "f16c", "avx512f")}

"""The machine ember's CPU backend compiles for and runs on, in one place: the CPU and its
instruction set (or an older x86 level), the vector widths ember's generated code uses, and
the cores its kernels may run on. Detection only: what to do with it is decided above
(llvm_jit's target machine, the code generators, the cost model, the thread pool).

`EMBER_FLAGS=--cpu_max_isa=AVX2` (XLA's `--xla_cpu_max_isa`) caps the instruction set, as
in XLA: code for a fleet of older machines, or a check that code works without AVX-512,
F16C (float16 conversions then call ember's own helpers, libcalls.py), AVX or FMA. The
levels are XLA's names; each maps to an LLVM CPU with that level's features. A level
above the host's is the host. Like XLA, the flag is read once, at process start: the
choice is baked into every code generator and cache key of the process.

Cores: `num_threads()` (EMBER_NUM_THREADS, default the CPUs this process may run on; 1
where the thread pool cannot run: it needs Linux's futex on x86_64 or aarch64), read once
per process.

Cache sizes are not detected: the blockings that assume them (dot_kernels' PANEL_BYTES and
MAX_A_BYTES, the fusion pass's ROW_CACHE_MAX) are constants measured on the project's
machines.
"""
from __future__ import annotations

import functools
import os
import platform
import sys

import llvmlite.binding as llvm
import numpy as np

from ember._src.base import flags as flags_lib

# --------------------------------------------------------------------------------------
# The CPU and its instruction set
# --------------------------------------------------------------------------------------

# XLA's level names -> the LLVM CPU whose features are that level's, in increasing order.
ISA_CPUS = {"SSE4_2": "nehalem", "AVX": "sandybridge", "AVX2": "haswell",
            "AVX512": "skylake-avx512"}
# the host feature that shows each level
_LEVEL_FEATURE = {"SSE4_2": "sse4.2", "AVX": "avx", "AVX2": "avx2", "AVX512": "avx512f"}


# A cross-compilation target in force (cross.py: `targeting`), else None: (LLVM triple, CPU
# name, feature string) that the code generators then ask about instead of the host's. Code
# generated under it is never run here; it only shows that every kernel compiles there.
_cross: tuple[str, str, str] | None = None


def triple() -> str:
  """The LLVM target triple ember generates code for."""
  return _cross[0] if _cross else llvm.get_process_triple()


def is_x86() -> bool:
  return triple().startswith(("x86_64", "i686"))


def _host_level(features: dict) -> int:
  levels = list(ISA_CPUS)
  return max((i for i, lv in enumerate(levels) if features.get(_LEVEL_FEATURE[lv])),
             default=-1)


def cpu() -> tuple[str, str]:
  """(LLVM CPU name, feature string) of the code ember generates."""
  return _cross[1:] if _cross else _host_cpu()


@functools.cache
def _host_cpu() -> tuple[str, str]:
  """cpu() for the host (parsing its features costs ~0.4 ms: computed once)."""
  name, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features()
  cap = flags_lib.get().cpu_max_isa
  if cap and llvm.get_process_triple().startswith(("x86_64", "i686")) and \
      list(ISA_CPUS).index(cap) < _host_level(features):
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


# --------------------------------------------------------------------------------------
# Vector widths
# --------------------------------------------------------------------------------------

def vector_bytes() -> int:
  """The vector width of ember's explicit vector code (the generated dot kernels): 64 on
  AVX-512 hosts (zmm registers), else 32 (AVX2; LLVM splits them on narrower targets)."""
  return _vector_bytes(_cross)


@functools.cache
def _vector_bytes(_target) -> int:   # (cached per target)
  return 64 if has("avx512f") else 32


def vector_lanes(dt) -> int:
  """Elements of dtype `dt` in one vector of `vector_bytes()`."""
  return vector_bytes() // np.dtype(dt).itemsize


def vector_register_bits() -> tuple[int, ...]:
  """The widths of the vector registers LLVM's loop vectorizer may choose here: 256 bits
  (128 without AVX) and, with AVX-512, 512 on x86; 128 on other targets."""
  return _vector_register_bits(_cross)


@functools.cache
def _vector_register_bits(_target) -> tuple[int, ...]:   # (cached per target)
  if not is_x86():
    return (128,)
  regs = [256] if has("avx") else [128]
  if has("avx512f"):
    regs.append(512)
  return tuple(regs)


# --------------------------------------------------------------------------------------
# Cores
# --------------------------------------------------------------------------------------

# The futex syscall's number per machine: the thread pool's workers sleep on futexes, so
# kernels run on several threads only on Linux on these machines.
FUTEX_SYSCALL = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}


def threads_supported() -> bool:
  """Whether kernels may run on several threads here (threadpool.py needs Linux's futex)."""
  return sys.platform.startswith("linux") and platform.machine().lower() in FUTEX_SYSCALL


def env_int(name: str, default: int, lo: int) -> int:
  """The environment variable `name` as an integer >= `lo` (`default` when unset or empty);
  a ValueError naming it otherwise."""
  raw = os.environ.get(name, "").strip()
  if not raw:
    return default
  try:
    v = int(raw)
  except ValueError:
    raise ValueError(f"{name}={raw!r}: expected an integer >= {lo}") from None
  if v < lo:
    raise ValueError(f"{name}={raw!r}: expected an integer >= {lo}")
  return v


@functools.cache
def num_threads() -> int:
  """Threads a kernel may use (the caller's included): EMBER_NUM_THREADS, else the CPUs
  this process may run on. 1 where the pool is unsupported."""
  try:
    cpus = len(os.sched_getaffinity(0))
  except (AttributeError, OSError):
    cpus = os.cpu_count() or 1
  n = env_int("EMBER_NUM_THREADS", cpus, 1)
  return min(n, 256) if threads_supported() else 1

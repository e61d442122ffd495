"""The CPU backend's cost model: estimated run times of kernels and modules, from the work
passes/analysis.py counts (bytes, flops, transcendentals) and single-core rates measured on this
project's kernels. It decides

- how many chunks a kernel's range is split into across the thread pool (`plan_chunks`,
  fixed when its thunk is built);
- whether quick-tier code may run first (`quick_pays`, `quick_module_pays`: tiering.py);
- whether a call is small enough to run inline, without a hand-off to the executor thread
  (`module_ns`, driver/compilation.py).

    kernel_cost(instr, comp) -> KernelCost       # one kernel's work
    estimate_ns(cost)                           # its single-core time
    plan_chunks(outer, splittable, cost) -> nchunks   (1 = one core)
    forced_chunks(n)                            # context: tests and benchmarks force a split
"""
from __future__ import annotations

import contextlib
from typing import NamedTuple

from ember._src.passes import analysis
from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import host
from ember._src.passes.fusion import column_reduce_root

__all__ = ["KernelCost", "kernel_cost", "estimate_ns", "plan_chunks", "forced_chunks",
           "quick_pays", "quick_module_pays", "module_ns"]


class KernelCost(NamedTuple):
  """What one whole call of a kernel does (passes/analysis.py's counts)."""
  bytes: float            # bytes read + written
  flops: float
  transcendentals: float
  # a column reduction: each chunk of output columns re-walks every input row, so small
  # chunks turn one streaming pass into many short strided ones: one chunk per thread
  column_reduction: bool = False
  # the multiply-adds of a generated dot kernel (register-blocked: several times the rate
  # of other arithmetic). Each chunk of its rows packs all of B again (dot_kernels.py) and
  # a chunk's rows past a multiple of the micro-kernel's MR run slower: one chunk per thread
  dot_flops: float = 0.0
  # a dot kernel split by column panels (dot_kernels.split_by_columns): chunks share no
  # work, so they are as many as for other kernels (dynamic claiming balances the load)
  dot_by_columns: bool = False


# --------------------------------------------------------------------------------------
# Optimized code: when does splitting pay?
# --------------------------------------------------------------------------------------

# Single-core rates of generated code, measured on this project's kernels (AVX2, warm
# caches: add/row sums ~0.04 ns/byte, exp ~0.3 ns, sin ~0.6 ns) and rounded so that a
# kernel in cache (several times faster per byte) is not split by mistake.
NS_PER_BYTE = 0.05
NS_PER_FLOP = 0.05        # vectorized arithmetic
NS_PER_TRANSCENDENTAL = 0.5
NS_PER_DOT_FLOP = 0.008   # generated dot kernels: ~140 GFLOP/s f32 on one AVX-512 core
MIN_SPLIT_NS = 50_000     # below this a kernel stays on one core: fork/join ~1 us with the
                          # workers spinning, ~5 us to wake them, plus their wake-up latency
MIN_CHUNK_NS = 10_000     # each chunk does at least this much work
CHUNKS_PER_THREAD = 4     # dynamic claiming balances load on a shared machine
MAX_CHUNKS = 1024


def estimate_ns(cost: KernelCost) -> float:
  """Estimated single-core time of one call, in nanoseconds."""
  return (cost.bytes * NS_PER_BYTE + cost.flops * NS_PER_FLOP
          + cost.transcendentals * NS_PER_TRANSCENDENTAL + cost.dot_flops * NS_PER_DOT_FLOP)


def kernel_cost(instr: hlo.Instr, comp: hlo.Computation) -> KernelCost:
  """The cost of the kernel of an entry-level instruction (a fusion, a lone fusible op or a
  scatter) generated from `comp` (the fused computation, or codegen.kernels.wrap_as_fusion's)."""
  reads, writes = analysis.kernel_bytes(instr)
  flops, trans = analysis.computation_costs(comp)
  return KernelCost(float(sum(b for b, _ in reads) + sum(writes)), float(flops), float(trans),
                    column_reduce_root(comp.root))


def plan_chunks(outer: int, splittable: bool, cost: KernelCost | None,
                threads: int | None = None) -> int:
  """How many chunks to split a kernel's [0, outer) into: 1 (one core, a plain call) unless
  it is splittable and its estimated single-core time is well above the pool's fork/join
  and wake-up costs; then at most CHUNKS_PER_THREAD per thread, each >= MIN_CHUNK_NS of
  work and >= 1 outer index. `threads` defaults to host.num_threads() (and then a
  `forced_chunks` context, if any, decides instead)."""
  if threads is None and _forced:
    return max(1, min(_forced[-1], outer)) if splittable else 1
  threads = host.num_threads() if threads is None else threads
  if not splittable or cost is None or threads <= 1 or outer < 2:
    return 1
  t = estimate_ns(cost)
  if t < MIN_SPLIT_NS:
    return 1
  one_each = cost.column_reduction or (cost.dot_flops and not cost.dot_by_columns)
  per_thread = 1 if one_each else CHUNKS_PER_THREAD
  return int(max(2, min(outer, threads * per_thread, t // MIN_CHUNK_NS, MAX_CHUNKS)))


_forced: list[int] = []


@contextlib.contextmanager
def forced_chunks(n: int):
  """Kernels built inside the block split into min(n, outer) chunks whatever their cost
  (splittable ones only; n = 1: every kernel on one core): for tests and benchmarks, which
  compare the same code split and unsplit. Not thread-safe."""
  _forced.append(n)
  try:
    yield
  finally:
    _forced.pop()


# --------------------------------------------------------------------------------------
# Quick-tier code: may it run first? (tiering.py)
# --------------------------------------------------------------------------------------

# Quick code (scalar, -O0), single core, measured on this project's kernels against the
# optimized code: memory traffic costs the same, arithmetic ~6x (layernorm 6.5x, a plain add
# 4.5x), a math-library function ~12 ns (sin 13x, tanh 14x, exp(log(x) + y) 37x the
# optimized time); sqrt and rsqrt are instructions, counted as arithmetic. A first call
# saves ~15-35 ms of LLVM; quick code may cost at most QUICK_MAX_NS of it, on all cores
# (quick kernels split like optimized ones).
QUICK_NS_PER_FLOP = 0.3
QUICK_NS_PER_TRANSCENDENTAL = 12.0
QUICK_NS_PER_VECTOR_TRANSCENDENTAL = 1.0   # in a fixed-order reduction's vector prologue
QUICK_MAX_NS = 8_000_000
QUICK_TRANSCENDENTAL = frozenset(hlo.TRANSCENDENTAL - {"sqrt", "rsqrt"})


def quick_pays(cost: KernelCost, vector_transcendentals: float = 0.0) -> bool:
  """Whether one call of quick code doing `cost`, of whose transcendentals
  `vector_transcendentals` are explicit vector code
  (codegen.reductions.vector_transcendentals), takes at most QUICK_MAX_NS."""
  scalar = max(cost.transcendentals - vector_transcendentals, 0.0)
  ns = cost.bytes * NS_PER_BYTE + cost.flops * QUICK_NS_PER_FLOP + \
      scalar * QUICK_NS_PER_TRANSCENDENTAL + \
      vector_transcendentals * QUICK_NS_PER_VECTOR_TRANSCENDENTAL
  return ns / host.num_threads() < QUICK_MAX_NS


def quick_module_pays(module: hlo.Module, vector_transcendentals: float = 0.0,
                      runs: int = 1) -> bool:
  """`quick_pays` for `runs` calls of the whole module (a loop body: one per iteration):
  its cost analysis, sqrt and rsqrt counted as arithmetic. Dots do not count: their loops
  are compiled once per process (dot_kernels.py) or are BLAS calls, the same code at every
  tier."""
  flops, trans = analysis.computation_costs(module.entry, QUICK_TRANSCENDENTAL)
  return quick_pays(KernelCost(
      runs * analysis.cost_analysis(module).get("bytes accessed", 0.0),
      runs * (flops - analysis.dot_flops(module.entry)), runs * trans),
      runs * vector_transcendentals)


# --------------------------------------------------------------------------------------
# A whole module (driver/compilation.py: inline runs)
# --------------------------------------------------------------------------------------

def module_ns(module: hlo.Module) -> float:
  """A rough single-core run time of the whole module (`estimate_ns` over the module's
  cost analysis, dots at their own rate)."""
  ca = analysis.cost_analysis(module)
  dots = analysis.dot_flops(module.entry)
  return estimate_ns(KernelCost(
      ca.get("bytes accessed", 0.0), ca.get("flops", 0.0) - dots,
      ca.get("transcendentals", 0.0), dot_flops=dots))

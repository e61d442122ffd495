"""Dots on the CPU: the layout of a dot as BLAS sees it, output fusions split into dot +
epilogue, and generated register-blocked kernels for float dots that BLAS would run slower.

Every dot is viewed as a batched matmul `C[b] = A[b] @ B[b]` over (batch, free, contracting)
groups of dimensions (`DotLayout`): A is (B, M, K), B is (B, K, N) and C, the output, is
(B, M, N) row-major, because a dot's output dimensions are the batch dimensions, then the lhs
free ones, then the rhs free ones. The work of an output fusion or dot kernel is split along
the output's dimension 0 (the kernel ABI's [start, stop)): one unit of it is `R` consecutive
rows of C's flattened (B*M, N) matrix (`DotLayout.rows_per_unit`).

Large dots go to BLAS (executable.DotThunk / DotEpilogueThunk: single-threaded OpenBLAS
chunks on ember's pool, transposes as flags). The other float dots (f32/f64,
`generated_kernel_ok`: small ones, whose BLAS call costs more than the arithmetic, on
AVX-512 every dot whose A fits in L2, where the kernel outruns OpenBLAS, and there the large
float32 ones up to MAX_LARGE_A_BYTES of A, `large_dot`, on a body of their own) get a
generated kernel:

* micro-kernel: MR rows x NR vectors of C (`micro_tile`: 6 x 4 zmm on AVX-512, 6 x 2 ymm
  on AVX2; a large dot's body 8 x 3 zmm, `body_config`) accumulate in registers (FMA of a
  broadcast A element with NR vectors of B per row: MR*NR independent FMA chains, NR + 1
  loads per MR*NR FMAs); a panel of at most
  one or two vectors of columns (a classifier's logits, a convolution's 16 or 32
  features) runs MR x 1 or MR x 2 instead, its B panel packed that wide (a kernel
  gradient's [27 x 16] and [144 x 32] products ran 1.4x and 1.6x faster than on MR x NR);
* K is cut in blocks of KC (PANEL_BYTES of B); per column panel and K block, B's KC x (NR*W)
  slice is packed contiguously (zero-padded past N) into a stack panel that stays in L1
  while every row block of A streams past it. The accumulators start from the partial sums
  stored in C, so the blocking changes no bits. With at most MR rows (one row block per
  panel), or B's rows NRW apart (its panel would be a copy of it), a contiguous full panel
  is read in place instead;
* a dot with one vector operand, at any size: a matrix-vector product (`G @ v`, one column
  of C) runs the matrix-vector body (`define_gemv_body`: per row a vector dot product along
  k, GEMV_ROWS rows sharing the vector's loads, as the column-panel body would spend a
  mostly masked panel and a gather per k on it); a vector-matrix product (`v @ G`: C is one
  row whose dimension 0 is an rhs dimension, units of `cols_per_unit` columns) runs the
  vector-matrix body (`define_gevm_body`: G's rows streamed in memory order into a block
  of C in L1). Either runs as its transpose (`transposed`) when that reads memory better:
  `G.T @ v` as `v @ G`, `v @ G.T` as `G @ v`. Both read the matrix once, as BLAS's gemv
  does, and split across threads by rows (columns); a DotThunk would add ~10-25 us of
  Python (NumPy's matmul, OpenBLAS held to one thread) to each call: 1000 x 1000 float32
  on the 2-core AVX-512 machine, `m @ v` 0.038 ms against 0.069, `v @ m` 0.044 against
  0.066 (JAX 0.053 and 0.061; bench/matvec.py, medians of three rounds, loaded machine).
* the loops live in one body function per dtype (`_define_body`), which takes the sizes
  and strides as arguments; it is compiled once per process (`ensure_shared_bodies`, by
  the first load of code that calls it: ~0.1-0.2 s of LLVM, or ~1 ms to load its object
  from the runtime cache on disk that an earlier process wrote, runtime_cache.py) and
  every dot kernel calls it by name (MCJIT resolves the symbol when an object loads, the
  persistent cache's too), so a module with dots compiles none of their loops; each
  kernel's exported entry only gathers its pointers;
* with a fused epilogue (the output fusion's elementwise work, emitted by codegen.kernels'
  KernelBuilder.fusion as a kernel of its own over [start, stop)) the entry produces
  C in blocks of whole units (about BLOCK_ROWS rows) and calls the epilogue on each block
  right after it, while the block is in L1 (not in registers: the epilogue is the ordinary
  fusion kernel, so every op the fusion emitter supports works here), reading the dot's
  value in place from the output (or from a stack tile when the output's dtype differs).

Splitting across threads: by default the pool splits the rows (units of dimension 0) and
every chunk packs all of B again. When A has few rows (`split_by_columns`: one batch of at
most COLUMN_SPLIT_ROWS rows, at least MIN_SPLIT_PANELS column panels) the kernel's range is
its column panels instead: each panel of B is packed once, by the thread that owns it (the
MLP's 128-row dots ran 1.6x rather than 1.9x faster on two cores split by rows). An
epilogue needs whole rows, so it then runs as a second kernel after the dot (compiler.py),
only where C is small enough to stay in L2 (COLUMN_SPLIT_EPILOGUE_BYTES).

`emit_range_shift` lets the thread pool (which splits [0, n)) run an epilogue on a block
[u0, u0 + n) of the BLAS path (executable.DotEpilogueThunk).

Summation order: each C element sums its K products in increasing k with fused multiply-adds
(the vector-matrix body too, adding one row of B at a time; BLAS blocks K and may sum in
another order), except in the matrix-vector body, where lane j of a vector sums the products
of k = j mod W in increasing k and the W lanes are added in a fixed halving tree; either way
a result's bits depend on the shapes only, never on the blocking or the threads' split.
Results differ from NumPy's in the last bits, as any two dot implementations do.
"""
from __future__ import annotations

import functools
import math
import os
import threading
from typing import Callable, NamedTuple, Sequence

import numpy as np
from llvmlite import ir

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import cost_model, denormals, host, llvm_jit, runtime_cache
from ember._src.backends.cpu.codegen import abi, ir_helpers, ir_types
from ember._src.backends.cpu.codegen.abi import KERNEL_TYPE
from ember._src.backends.cpu.codegen.ir_types import I32, I64, PTR, VOID
from ember._src.backends.cpu.vector_dots import (
    GEMV_TYPE, GEVM_TYPE, DotEmitter, define_gemv_body, define_gevm_body, gemv_symbol,
    gevm_symbol)
from ember._src.backends.cpu import vector_dots

__all__ = ["DotLayout", "dot_layout", "split_output_fusion", "generated_kernel_ok", "is_gram",
           "block_units", "column_panels", "split_by_columns", "emit_dot_kernel",
           "emit_range_shift", "Epilogue"]

BLOCK_ROWS = 64         # rows of C per block (then the epilogue runs on them)
BLOCK_COLS = 1024       # columns of a one-row C (a vector-matrix product) per block
PANEL_BYTES = 32 << 10  # a packed KC x (NR*W) slice of B: stays in L1 across row blocks
MAX_TILE_BYTES = 128 << 10     # a stack tile of C (epilogue whose output dtype differs)


def micro_tile() -> tuple[int, int]:
  """(MR, NR): MR rows x NR vectors of C accumulate in registers. AVX-512 has 32 vector
  registers: 6 x 4 accumulators + 4 B vectors + the broadcast (measured on the MLP's
  shapes: 5-15% faster than 8 x 3, 4 x 6 or 5 x 5); AVX2 has 16: 6 x 2."""
  return (6, 4) if host.vector_bytes() == 64 else (6, 2)


class BodyConfig(NamedTuple):
  """What a shared body's code depends on besides its dtype: the register tile (MR rows x
  NR vectors), the bytes of a packed K block of B, and whether it prefetches (the large
  body: LARGE_BODIES)."""
  MR: int
  NR: int
  panel_bytes: int
  prefetch: bool = False


# The body of the large dots (`large_dot`: A past L2, float32), which BLAS ran before: an
# 8 x 3 zmm tile (1000 = 125 x 8 rows; 1008 columns computed for 1000 against 1024 of 6 x 4),
# K blocks of 64 KB (3 passes over C for K = 1000, not 8) and two prefetches the hardware
# does not make: the next row block's A rows (each row of a 1000-wide matrix is a page of its
# own: its first lines missed L3 at every micro-tile) and B's rows PREFETCH_B_ROWS ahead of
# the packing (a page each). Process time of one thread, 1000^3 f32 on the 2-core Zen 4 VM
# (loaded; peak 17.2 ms): 6 x 4 20.5 ms, 8 x 3 19.4, with the prefetches 18.8-19.1, XLA
# 19.0, the OpenBLAS chunks 19.8-20.0; 384^3 (A in L2) ran at 96-97% of peak, 1000^3 88% and
# 1536^3 85% before the prefetches, 90-93% after (A's row blocks kept in L2 by blocking M,
# all of B packed once, ran no faster). On AVX2 (6 x 2 or 4 x 3 ymm) the same loops ran 2.3x
# slower than OpenBLAS at 1000^3, on the VM capped to AVX2 and on the 13-core AVX2 host
# alike: the prefetch's address arithmetic per k outweighs a 6 x 2 tile's 12 FMAs. Without
# it (6 x 2 with 32 or 64 KB blocks, 4 x 3) or prefetching only the next rows' first lines,
# they ran 4-12% slower than OpenBLAS on that host (1000^3, one thread and two): no large
# body on AVX2.
# Vector bytes -> the large body's (MR, NR, panel bytes, prefetch).
LARGE_BODIES = {64: (8, 3, 64 << 10, True)}
PREFETCH_B_ROWS = 8


def large_config() -> BodyConfig | None:
  """The large body's configuration on this host's ISA, None where BLAS keeps large dots."""
  found = LARGE_BODIES.get(host.vector_bytes())
  return None if found is None else BodyConfig(*found)


def body_config(lay: "DotLayout | None" = None) -> BodyConfig:
  """The body a dot runs on: `large_dot`'s, else the default one (micro_tile, PANEL_BYTES)."""
  if lay is not None and large_dot(lay):
    return large_config()
  return BodyConfig(*micro_tile(), PANEL_BYTES)


# Generated kernel vs BLAS (a DotThunk: ~6 us of Python and NumPy dispatch, then OpenBLAS on
# both cores), best of many runs on the 2-core AVX2 machine, f32: 64x64x64 9.3 vs 10.6 us,
# 128x64x128 27 vs 26, 64x256x64 30 vs 29, 96^3 26 vs 20, 128^3 60 vs 41, 32x784x512 570 vs
# 272. The kernel alone runs ~100 GFLOP/s on one core (64x64x64 in 5.3 us; MR x NR = 6x2
# beat 4x2, 4x3 and 8x1 by 5-20%), two-thread OpenBLAS ~170. So: up to ~1.5 MFLOP, ~3 MFLOP
# when an epilogue is fused (the BLAS path then also pays a DotEpilogueThunk and a kernel
# call). Under load the kernel wins by far more: OpenBLAS's threads wait for busy cores.
SMALL_DIM = 64
MAX_SMALL_FLOPS = 3 << 19
MAX_SMALL_FLOPS_FUSED = 3 << 20
# On AVX-512 (6 x 4 zmm tile, K blocks of B packed in L1) the kernel outruns OpenBLAS while
# A stays in L2, f32 on the 2-core Sapphire Rapids machine, ember's pool vs single-threaded
# OpenBLAS chunks on it (blas_pool.py), one core busy with other work: 128x512x784 119 vs 97
# GFLOP/s, 784x512x128 137 vs 113, 256x1024x1024 142 vs 131, 1000x1500x64 145 vs 107,
# 512^3 150 vs 130; 2000^3 128 vs 126 (A 16 MB: BLAS keeps it). Past it, large float32
# dots run the large body (`large_dot`).
MAX_A_BYTES = 2 << 20
# ... up to this size of A (float32, AVX-512, every side at least LARGE_MIN_DIM, both
# operands contiguous along their rows, no epilogue) on the large body: two threads' process
# time against the OpenBLAS chunks, loaded VM, medians of interleaved calls: 768^3 -8%,
# 1000^3 -6%, 1536^3 -3%, 4096x512x512 -10%, 8192x256x1024 -8%, 256x8192x256 -11%,
# 1000x1000x256 -11%, 4 x 1000^3 batched -3%, 512x4096x512 even; past it 2000^3 and 2048^3
# (A 16 MB; A, B and C past the 32 MB L3) even, 2896^3 +5%: BLAS keeps those.
MAX_LARGE_A_BYTES = 12 << 20
LARGE_MIN_DIM = 256
# ... or whatever A's size when C is at most STREAM_A_PANELS column panels wide (N <= NR
# vectors), nearly full (`streams_a`): the kernel then streams A once (no panel re-reads
# it), e.g. a convolution's im2col dot, 16384x288 @ 288x64 f32 (A 19 MB): 4.2-4.3 ms against
# 4.9-7.1 ms for OpenBLAS chunks on the pool (best of 40 calls, three runs each, loaded).
STREAM_A_PANELS = 1
COLUMN_SPLIT_ROWS = 256          # rows of A up to which threads split C by column panels
MIN_SPLIT_PANELS = 4
COLUMN_SPLIT_EPILOGUE_BYTES = 1 << 20   # a separate epilogue pass re-reads C from L2


class DotLayout(NamedTuple):
  """A dot as C[b] = A[b] @ B[b]; strides are in elements, None when a group of dimensions
  does not flatten to one stride (the kernel then does not apply)."""
  B: int
  M: int
  K: int
  N: int
  a_strides: tuple | None      # (batch, row, contracting)
  b_strides: tuple | None      # (batch, contracting, column)
  dtype: np.dtype
  outer: int                   # the output's dimension 0 (the kernel ABI's range)
  rows_per_unit: int | None    # rows of C per unit of `outer`; None: units are not rows
  # columns of C per unit of `outer` when C is one row whose dimension 0 is an rhs free
  # dimension (a vector-matrix product `v @ w`, B = M = 1); else None
  cols_per_unit: int | None = None


def _row_major_strides(dims: Sequence[int]) -> list[int]:
  out, s = [], 1
  for d in reversed(dims):
    out.append(s)
    s *= d
  return out[::-1]


def _group_stride(dims, strides, group) -> int | None:
  """The single stride of dimensions `group` (in order) flattened into one, or None."""
  live = [g for g in group if dims[g] != 1]
  if not live:
    return 0
  for a, b in zip(live, live[1:]):
    if strides[a] != strides[b] * dims[b]:
      return None
  return strides[live[-1]]


def dot_layout(dot: hlo.Instr) -> DotLayout:
  a = dot.attrs
  lhs, rhs = dot.operands
  lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
  lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
  lf = tuple(d for d in range(lhs.shape.rank) if d not in lb + lc)
  rf = tuple(d for d in range(rhs.shape.rank) if d not in rb + rc)
  ld, rd = lhs.shape.dims, rhs.shape.dims
  prod = lambda dims, ds: math.prod(dims[d] for d in ds)
  B, M, K, N = prod(ld, lb), prod(ld, lf), prod(ld, lc), prod(rd, rf)
  ls, rs = _row_major_strides(ld), _row_major_strides(rd)
  sa = tuple(_group_stride(ld, ls, g) for g in (lb, lf, lc))
  sb = tuple(_group_stride(rd, rs, g) for g in (rb, rc, rf))
  out = dot.shape.dims
  outer = out[0] if out else 1
  # Units of dimension 0 are whole rows of C unless dimension 0 is an rhs free dimension.
  row_dims = len(lb) + len(lf)
  rows = B * M
  if not out:
    rpu = rows
  elif row_dims and outer and rows % outer == 0:
    rpu = rows // outer
  else:                          # dimension 0 is an rhs dimension (or empty): no row units
    rpu = None if outer else 0
  # no batch or lhs free dimension (B = M = 1): dimension 0's units are runs of columns
  cpu = N // outer if rpu is None and not row_dims else None
  return DotLayout(B, M, K, N, None if None in sa else sa, None if None in sb else sb,
                   np.dtype(dot.dtype), outer, rpu, cpu)


def split_output_fusion(comp: hlo.Computation):
  """A kOutput fused computation -> (its dot, the epilogue computation, the fusion operand
  numbers the epilogue reads). The epilogue's parameters are those operands (renumbered in
  order) and last the dot's value (same shape as the root, read at the same index)."""
  dots = [i for i in comp.instrs if i.opcode == "dot"]
  if len(dots) != 1:
    raise ir_types.CodegenError(f"output fusion %{comp.name} must contain exactly one dot")
  dot = dots[0]
  epi = hlo.Computation(comp.name + ".epilogue")
  epi.is_fusion = True
  users = comp.users()
  used = [p for p in comp.params if any(u is not dot for u in users.get(p.id, []))
          or p is comp.root]
  clone: dict[int, hlo.Instr] = {}
  for n, p in enumerate(used):
    clone[p.id] = epi.add(hlo.Instr("parameter", p.shape, attrs={"number": n}, name=p.name))
  clone[dot.id] = epi.add(hlo.Instr("parameter", dot.shape, attrs={"number": len(used)},
                                    name="dot_value"))
  for i in comp.instrs:
    if i.id in clone or i.opcode == "parameter":
      continue
    clone[i.id] = epi.add(hlo.Instr(i.opcode, i.shape, [clone[o.id] for o in i.operands],
                                    dict(i.attrs), list(i.called), name=i.name,
                                    metadata=i.metadata))
  epi.root = clone[comp.root.id]
  return dot, epi, [p.attrs["number"] for p in used]


def is_gram(dot: hlo.Instr) -> bool:
  """`m @ m.T` or `m.T @ m`: half the flops of a gemm (blas_pool.Gram, or BLAS's syrk)."""
  a = dot.attrs
  lhs, rhs = dot.operands
  return lhs is rhs and a.get("lhs_contracting_dims") == a.get("rhs_contracting_dims")


def streams_a(lay: DotLayout) -> bool:
  """C at most STREAM_A_PANELS column panels wide, the last at least 3/4 full for the
  micro-kernel that runs it (one, two or NR vectors wide: a partial one masks lanes off
  every multiply-add). Measured 20000x200 @ 200xN f32 against BLAS chunks on the pool:
  N = 64 10-12 ms against 16-19; with the MR x NR kernel alone N = 32 4.6-10.5 against
  3.7-7, N = 16 even; on the one- and two-vector kernels N = 16 1.24-1.27 ms against
  1.19-1.22, N = 32 1.70-2.05 against 1.79-1.81, and a convolution's 4096x144 @ 144x32
  0.21-0.22 against 0.27-0.34."""
  w = host.vector_lanes(lay.dtype)
  nrw = micro_tile()[1] * w         # (the default body's panels: a large dot's are narrower)
  last = lay.N % nrw or nrw
  width = w if last <= w else 2 * w if last <= 2 * w else nrw
  return -(-lay.N // nrw) <= STREAM_A_PANELS and 4 * last >= 3 * width


def generated_kernel_ok(lay: DotLayout, tile_bytes: int = 0, fused: bool = False,
                        gram: bool = False) -> bool:
  """Whether the generated kernel runs this dot (else BLAS): f32/f64, flattenable layouts,
  units of whole rows, and either small enough that BLAS's call overhead dominates
  (`fused`: with an epilogue) or, on AVX-512 and not a Gram product (`gram`), a batch's A
  small enough to stay in L2 while the column panels re-read it (or one panel: A is read
  once); and a C tile of
  `tile_bytes` (if the caller needs one) fits on the stack."""
  if lay.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
    return False
  if lay.a_strides is None or lay.b_strides is None or \
      (lay.rows_per_unit is None and lay.cols_per_unit is None):
    return False
  if 0 in (lay.B, lay.M, lay.N, lay.K):
    return True                   # nothing (or only zeros) to compute: no BLAS call needed
  if _streams_matrix(lay):
    return tile_bytes <= MAX_TILE_BYTES
  if _one_row(lay) and lay.K * max(lay.M, lay.N) * lay.dtype.itemsize > MAX_A_BYTES:
    return False   # the kernel walks the matrix by column panels, BLAS streams its rows
  flops = dot_flops(lay)
  small = min(lay.M, lay.N, lay.K) <= SMALL_DIM and \
      flops <= (MAX_SMALL_FLOPS_FUSED if fused else MAX_SMALL_FLOPS)
  in_l2 = not gram and host.vector_bytes() == 64 and \
      (lay.M * lay.K * lay.dtype.itemsize <= MAX_A_BYTES or streams_a(lay))
  large = not gram and not fused and large_dot(lay)
  return (small or in_l2 or large) and tile_bytes <= MAX_TILE_BYTES


def large_dot(lay: DotLayout) -> bool:
  """A float32 dot on an ISA with a large body (LARGE_BODIES: AVX-512) past the default
  body's domain (A more than MAX_A_BYTES, C several panels wide) up to MAX_LARGE_A_BYTES of
  A, every side at least LARGE_MIN_DIM, A contiguous along k and B along n (what was
  measured): the large body (`body_config`).
  Not with an epilogue: the kernel would run it per block of BLOCK_ROWS rows, packing all
  of B again for each."""
  if large_config() is None or lay.dtype != np.dtype(np.float32) or \
      lay.a_strides is None or lay.b_strides is None or lay.rows_per_unit is None or \
      lay.cols_per_unit is not None:
    return False
  a_bytes = lay.M * lay.K * lay.dtype.itemsize
  return min(lay.M, lay.N, lay.K) >= LARGE_MIN_DIM and \
      MAX_A_BYTES < a_bytes <= MAX_LARGE_A_BYTES and not streams_a(lay) and \
      lay.a_strides[2] == 1 and lay.b_strides[2] == 1


def dot_flops(lay: DotLayout) -> int:
  return 2 * lay.B * lay.M * lay.N * lay.K


def dot_bytes(lay: DotLayout) -> int:
  """Bytes of A, B and C (each read or written once)."""
  return lay.B * (lay.M * lay.K + lay.K * lay.N + lay.M * lay.N) * lay.dtype.itemsize


def column_panels(lay: DotLayout) -> int:
  """Column panels of C (NR vectors wide): the range of a kernel split by columns."""
  return -(-lay.N // (body_config(lay).NR * host.vector_lanes(lay.dtype)))


def split_by_columns(lay: DotLayout, epilogue: bool = False, in_place: bool = True) -> bool:
  """Whether threads split this dot's C by column panels rather than by rows (see the
  module docstring); with an `epilogue`, only when the dot's value is computed in the
  output (`in_place`), C stays in L2 for the epilogue's own pass, and the dot is large
  enough for the pool to split it at all (else one kernel with the epilogue fused is one
  call less, and C's blocks are still in L1 for it)."""
  if lay.B != 1 or lay.M > COLUMN_SPLIT_ROWS or column_panels(lay) < MIN_SPLIT_PANELS \
      or lay.cols_per_unit is not None:   # (units are columns already)
    return False
  if not epilogue:
    return True
  return (in_place and lay.M * lay.N * lay.dtype.itemsize <= COLUMN_SPLIT_EPILOGUE_BYTES
          and dot_flops(lay) * cost_model.NS_PER_DOT_FLOP >= cost_model.MIN_SPLIT_NS)


def block_units(lay: DotLayout) -> int:
  """Units of dimension 0 per block of C (at least one, about BLOCK_ROWS rows or BLOCK_COLS
  columns of a one-row C; one when units are neither: C is one block)."""
  if lay.cols_per_unit is not None:
    return max(1, BLOCK_COLS // max(lay.cols_per_unit, 1))
  return max(1, BLOCK_ROWS // max(lay.rows_per_unit or BLOCK_ROWS, 1))


def unit_elements(lay: DotLayout) -> int:
  """Elements of C per unit of dimension 0 (rows_per_unit rows or cols_per_unit columns)."""
  if lay.cols_per_unit is not None:
    return lay.cols_per_unit
  return lay.rows_per_unit * lay.N


def transposed(lay: DotLayout) -> DotLayout:
  """The layout of C^T = B^T @ A^T for a dot with one vector operand (B = 1 and M = 1 or
  N = 1): C's memory is the same (one row or one column), its row units become column
  units and back, and the operands swap places. Batched (B > 1, M = 1: each C[b] one row,
  e.g. `einsum("bk,bmk->bm")`): each C[b]^T one column, a unit's rows times N rows."""
  if lay.B != 1:
    return DotLayout(lay.B, lay.N, lay.K, 1, lay.b_strides[::2] + lay.b_strides[1:2],
                     (lay.a_strides[0], lay.a_strides[2], 0), lay.dtype, lay.outer,
                     lay.rows_per_unit * lay.N, None)
  return DotLayout(1, lay.N, lay.K, lay.M, (0, *lay.b_strides[:0:-1]),
                   (0, *lay.a_strides[:0:-1]), lay.dtype, lay.outer, lay.cols_per_unit,
                   lay.rows_per_unit)


def _transposes_better(lay: DotLayout) -> bool:
  """Whether a dot with one vector operand runs better as its transpose: `G.T @ v` (A
  contiguous along m, not k) as the vector-matrix `v @ G`, and `v @ G.T` (B contiguous
  along k, not n) as the matrix-vector `G @ v` (is_gemv), batched too (`v[b] @ G[b].T`)."""
  if lay.a_strides is None or lay.b_strides is None:
    return False
  gemv_of_rhs = lay.b_strides[1] == 1 and lay.b_strides[2] != 1 and lay.a_strides[2] == 1
  if lay.B != 1:
    return lay.M == 1 and lay.N > 1 and lay.rows_per_unit is not None and gemv_of_rhs
  if lay.N == 1 and lay.rows_per_unit is not None:
    return lay.a_strides[1] == 1 and lay.a_strides[2] != 1
  return lay.cols_per_unit is not None and gemv_of_rhs


def _one_row(lay: DotLayout) -> bool:
  """Whether the kernel computes this dot as one row of C (a vector-matrix product, or its
  transpose): the column-panel body then reads the matrix a panel of columns at a time, at
  a stride of a whole row (measured, f32 on the AVX-512 machine: 512 x 512 28 us against
  BLAS's 38, 1024 x 1024 630 against 440)."""
  return lay.cols_per_unit is not None or (lay.N == 1 and _transposes_better(lay))


def _streams_matrix(lay: DotLayout) -> bool:
  """Whether the kernel runs this dot with one vector operand by a body that reads the
  matrix once, in its memory order (`define_gemv_body`, `define_gevm_body`): then at any
  size, as BLAS's gemv does (it beat a DotThunk's single-threaded sgemv, which also costs
  ~10 us of Python, on every size measured: bench/matvec.py)."""
  if _transposes_better(lay):
    lay = transposed(lay)
  return is_gemv(lay) or is_gevm(lay)


def is_gevm(lay: DotLayout) -> bool:
  """A vector-matrix product (one row of C in units of columns, B's rows contiguous along
  n): the generated kernel runs it as `define_gevm_body`, B's rows streamed in order."""
  return lay.cols_per_unit is not None and lay.B == 1 and lay.M == 1 and \
      lay.a_strides is not None and lay.b_strides is not None and lay.b_strides[2] == 1


def is_gemv(lay: DotLayout) -> bool:
  """A matrix-vector product (one column of C, row units, A's rows and the vector
  contiguous along k): the generated kernel runs it as row dot products (`define_gemv_body`),
  not as one masked lane of a column panel."""
  return lay.N == 1 and lay.rows_per_unit is not None and lay.a_strides is not None \
      and lay.b_strides is not None and lay.a_strides[2] == 1 and lay.b_strides[1] == 1


class Epilogue(NamedTuple):
  """How a dot kernel calls the epilogue kernel after each block of C."""
  symbol: str                  # the epilogue kernel (codegen.kernels.KernelBuilder.fusion's ABI)
  operands: tuple              # buffer indices (of the dot kernel's) it reads, in order
  in_place: bool               # the dot's value is read from the output (else a stack tile)


def emit_dot_kernel(module: ir.Module, name: str, lay: DotLayout, lhs: int, rhs: int,
                    out: int, epilogue: Epilogue | None = None,
                    by_columns: bool = False) -> abi.KernelInfo:
  """Emit `void name(i8** buffers, i64 start, i64 stop)` computing the dot's units
  [start, stop) of dimension 0 (`by_columns`: its column panels [start, stop), every row):
  A at buffers[lhs], B at buffers[rhs], C (or, with an epilogue, the fusion's output) at
  buffers[out]. The loops live in the dtype's shared body functions; this entry gathers the
  pointers and, with an epilogue, runs the blocks: the body on a block, then the epilogue
  kernel on it. With XLA:CPU's denormal modes (denormals.py)."""
  assert not (by_columns and epilogue), "an epilogue runs on whole rows"
  fn = ir.Function(module, KERNEL_TYPE, name)
  fn.attributes.add("nounwind")
  b = ir.IRBuilder(fn.append_basic_block("entry"))
  modes = denormals.emit_flush_on(b)

  def ret():
    denormals.emit_restore(b, modes)
    b.ret_void()
  e = DotEmitter(b)
  bufs, start, stop = fn.args
  ptr = lambda k: b.load(b.gep(bufs, [e.i64(k)], inbounds=True, source_etype=PTR), typ=PTR)
  A, Bp, O = ptr(lhs), ptr(rhs), ptr(out)
  call_body = _body_caller(module, e, lay, A, Bp)
  if by_columns:
    call_body(O, e.i64(0), e.i64(lay.outer), (start, stop))
    ret()
    return abi.KernelInfo(name, column_panels(lay), True)
  if epilogue is None:
    call_body(O, start, stop)
    ret()
    return abi.KernelInfo(name, lay.outer, True)
  T = ir_types.mem_type(lay.dtype)
  E, U = unit_elements(lay), block_units(lay)
  ptrs = [ptr(k) for k in epilogue.operands]
  # The epilogue's buffer table holds the pointers as i64: llvmlite 0.45's typed IR layer
  # prints an alloca of pointers as `ptr*`, which LLVM rejects.
  ebufs = b.alloca(I64, e.i64(len(ptrs) + 2))
  slot = lambda k: b.gep(ebufs, [e.i64(k)], source_etype=I64)
  for k, p in enumerate(ptrs + [O, O]):       # operands, the dot's value, the output
    b.store(b.ptrtoint(p, I64), slot(k))
  efn = module.globals.get(epilogue.symbol) or ir.Function(module, KERNEL_TYPE,
                                                            epilogue.symbol)
  tile = None
  if not epilogue.in_place:          # C elements i of a block live at tile[i - u0 * E]
    tile = b.alloca(T, e.i64(max(U * E, 1)))
    tile.align = 64

  def block(ub, _c):
    u0 = e.add_idx(start, e.mul_idx(ub, U))
    u1 = b.select(b.icmp_signed("<", e.add_idx(u0, e.i64(U)), stop), e.add_idx(u0, e.i64(U)),
                  stop)
    C = O
    if tile is not None:
      C = b.gep(tile, [b.neg(e.mul_idx(u0, E))], source_etype=T)
      b.store(b.ptrtoint(C, I64), slot(len(ptrs)))
    call_body(C, u0, u1)
    b.call(efn, [ebufs, u0, u1], attrs=("noinline",))   # its code once, in its own symbol
    return []
  nblocks = b.udiv(e.add_idx(b.sub(stop, start), e.i64(U - 1)), e.i64(U))
  e.loop(e.i64(0), nblocks, [], block)
  ret()
  return abi.KernelInfo(name, lay.outer, True)


def _body_caller(module: ir.Module, e: DotEmitter, lay: DotLayout, A, Bp):
  """`call(C, u0, u1, panels=every panel)`: emit the call of the shared body that computes
  C's units [u0, u1) (C indexed as the whole output) in column panels `panels`:
  `define_gemv_body` for a matrix-vector product (is_gemv), `define_gevm_body` for a
  vector-matrix one (is_gevm), else `_define_body`, on units of rows, or of columns of a
  one-row C (its B and C shifted to the block's first column)."""
  b = e.b
  if min(lay.B, lay.M, lay.N) == 0:
    return lambda c, u0, u1, panels=None: None
  if _transposes_better(lay):
    lay, A, Bp = transposed(lay), Bp, A
  if is_gemv(lay):
    body = _shared_body(module, gemv_symbol(lay.dtype), GEMV_TYPE)
    args = [e.i64(v) for v in (lay.M, lay.K, lay.a_strides[0], lay.a_strides[1],
                                 lay.b_strides[0])]
    R = lay.rows_per_unit
    return lambda c, u0, u1, panels=None: b.call(
        body, [A, Bp, c, e.mul_idx(u0, R), e.mul_idx(u1, R), *args])
  if is_gevm(lay):
    body, P = _shared_body(module, gevm_symbol(lay.dtype), GEVM_TYPE), lay.cols_per_unit
    args = [e.i64(v) for v in (lay.K, lay.a_strides[2], lay.b_strides[1])]
    return lambda c, u0, u1, panels=None: b.call(
        body, [A, Bp, c, e.mul_idx(u0, P), e.mul_idx(u1, P), *args])
  body = _shared_body(module, _body_symbol(lay.dtype, body_config(lay)), BODY_TYPE)
  all_panels = (e.i64(0), e.i64(column_panels(lay)))
  if lay.cols_per_unit is None:
    return lambda c, u0, u1, panels=all_panels: b.call(
        body, [A, Bp, c, u0, u1, *_body_args(lay), *panels])
  T, P = ir_types.mem_type(lay.dtype), lay.cols_per_unit
  sbn = lay.b_strides[2]

  def call(c, u0, u1, panels=all_panels):   # one row of N = (u1 - u0) * P columns
    c0 = e.mul_idx(u0, P)
    n = e.mul_idx(b.sub(u1, u0), P)
    sizes = [e.i64(1), n, e.i64(lay.K), e.i64(1), *map(e.i64, lay.a_strides),
             *map(e.i64, lay.b_strides)]
    b.call(body, [A, e.gep(Bp, e.mul_idx(c0, sbn), T), e.gep(c, c0, T), e.i64(0), e.i64(1),
                  *sizes, *panels])
  return call


# The body's arguments after (A, B, C, u0, u1): the layout's sizes and element strides, then
# the column panels [p0, p1) to compute.
_PARAMS = ("M", "N", "K", "R", "sab", "sam", "sak", "sbb", "sbk", "sbn", "p0", "p1")
BODY_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64, I64] + [I64] * len(_PARAMS))


def _body_args(lay: DotLayout) -> list:
  return [ir.Constant(I64, v) for v in
          (lay.M, lay.N, lay.K, lay.rows_per_unit, *lay.a_strides, *lay.b_strides)]


def _body_symbol(dtype, cfg: BodyConfig | None = None) -> str:
  """The shared body's symbol: its dtype and the configuration its code depends on
  (`cfg`, by default the default body's)."""
  MR, NR, panel, prefetch = cfg or body_config()
  return (f"ember_dot_body_{np.dtype(dtype).name}_v{host.vector_bytes()}_{MR}x{NR}_p{panel}"
          f"{'_pf' if prefetch else ''}_a{len(_PARAMS)}")


def body_symbols() -> str:
  """The symbols of the float32 bodies (the persistent cache's key: compiler.environment)."""
  return " ".join(_body_symbol("float32", cfg) for cfg in _configs())


def _configs() -> tuple:
  large = large_config()
  return (body_config(),) + ((large,) if large else ())


def _shared_body(module: ir.Module, name: str, fty: ir.FunctionType):
  """The declaration of a shared body (`_define_body`, `define_gemv_body`) in this module:
  compiled once per process (`ensure_shared_bodies`), so a module with dots compiles none
  of its code."""
  cache = module.__dict__.setdefault("_ember_dot_bodies", {})
  if name not in cache:
    cache[name] = ir.Function(module, fty, name)
  return cache[name]


_shared_bodies: dict = {}       # symbol -> the engine holding its code
_shared_lock = threading.Lock()


def _unlock_after_fork() -> None:   # a parent thread may have held it at the fork
  global _shared_lock
  _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_unlock_after_fork)
_compiling = threading.local()  # set while this thread compiles (and loads) a body


def ensure_shared_bodies(code: bytes) -> None:
  """Compile (or load from the runtime cache on disk, runtime_cache.py) the bodies an object
  file (or IR text) refers to, once per process, and make their symbols resolvable for the
  code about to be loaded (MCJIT links by name, so an object from the persistent cache finds
  them too). Waits for a compile in progress."""
  for name, make_ir in shared_body_makers():
    if name.encode() in code:
      compile_shared_ir(name, make_ir, (vector_dots.__file__,))


def shared_body_makers() -> list[tuple[str, Callable[[], str]]]:
  """(symbol, a function making its module's IR text) of each shared body: per dtype, the
  gemm bodies of this ISA's configurations, the gemv and the gevm body."""
  makers = []
  for dt in (np.float32, np.float64):
    bodies = [(_body_symbol(dt, cfg), functools.partial(_define_body, cfg=cfg))
              for cfg in _configs()]
    for name, define in bodies + [(gemv_symbol(dt), define_gemv_body),
                                  (gevm_symbol(dt), define_gevm_body)]:
      makers.append((name, _body_ir(define, dt, name)))
  return makers


def _body_ir(define, dt, name: str):
  def make_ir():
    module = ir.Module(name="ember_shared_bodies")
    define(module, dt, name)
    return str(module)
  return make_ir


def compile_shared_ir(name: str, make_ir, sources: Sequence[str] = ()) -> None:
  """Compile (or load) the module `make_ir()` that defines the function `name`, once per
  process, and register its symbol. `sources`: the files of the code generating it besides
  codegen's ir_types and ir_helpers and this one (the runtime cache's key). Nothing while
  this thread compiles one (the body's own load asks the symbol providers too)."""
  if name in _shared_bodies or getattr(_compiling, "active", False):
    return
  with _shared_lock:
    if name in _shared_bodies:
      return
    _compiling.active = True
    try:   # a private context: a compile on another thread does not wait for this one
      engine, addr = runtime_cache.load_or_compile(name, make_ir, runtime_cache.generator_digest(
          ir_types.__file__, ir_helpers.__file__, __file__, *sources))
    finally:
      _compiling.active = False
    llvm_jit.add_symbol(name, addr(name))
    _shared_bodies[name] = engine


llvm_jit.symbol_providers.append(lambda obj, undefined: ensure_shared_bodies(obj))


def _define_body(module: ir.Module, dtype, name: str, cfg: BodyConfig | None = None):
  """`void body(A, B, C, u0, u1, M, N, K, R, strides..., p0, p1)`: C's rows of units
  [u0, u1) (R rows each), C indexed by the row of the whole (batch*M, N) output, in column
  panels [p0, p1). Sizes and strides are arguments, so one body per dtype serves every dot.

  Loops: column panels of NR vectors (the last one partial: masked loads and stores); in
  each, blocks of KC values of k (the panel's KC x NRW slice of B packed contiguously, so
  it stays in L1 for every row block; with at most MR rows of A, or rows NRW apart, and
  contiguous columns a full panel is read in place instead); in each, the rows MR at a time, then 4, then one
  at a time. A row block's accumulators start from zero at the first k block and from the
  partial sums stored in C at the next ones, so each element still sums its products in
  increasing k with one fma chain: the blocking changes no bits. `cfg`: the tile, the K
  blocks and the prefetches (`body_config`; by default the default body's)."""
  key = np.dtype(dtype)
  fn = ir.Function(module, BODY_TYPE, name)
  fn.attributes.add("nounwind")
  A, Bp, C, start, stop, *params = fn.args
  for a in (A, Bp, C):
    a.add_attribute("noalias")
  M, N, K, R, sab, sam, sak, sbb, sbk, sbn, p0, p1 = params
  T = ir_types.mem_type(key)
  W = host.vector_lanes(key)
  VT = ir.VectorType(T, W)
  MR, NR, panel_bytes, prefetch = cfg or body_config()
  NRW = NR * W
  isz = key.itemsize
  KC = max(1, panel_bytes // (NRW * isz))
  fma = f"llvm.fmuladd.v{W}{ir_types.float_suffix(T)}"
  vsuf = f"v{W}{ir_types.float_suffix(T)}"
  b = ir.IRBuilder(fn.append_basic_block("entry"))
  e = DotEmitter(b)
  panel = b.alloca(T, e.i64(KC * NRW))
  panel.align = 64
  zero = ir.Constant(VT, [0.0] * W)
  i64v = ir.VectorType(I64, W)
  iota = ir.Constant(i64v, list(range(W)))
  mul = lambda x, y: b.mul(x, y, flags=("nsw",))
  imin = lambda x, y: b.select(b.icmp_signed("<", x, y), x, y)
  imax = lambda x, y: b.select(b.icmp_signed(">", x, y), x, y)
  contiguous_b = b.icmp_signed("==", sbn, e.i64(1))

  def prefetch_line(p):
    """Ask for p's cache line (a read, kept in every level); never faults."""
    e.intrinsic("llvm.prefetch.p0", VOID, [p, ir.Constant(I32, 0), ir.Constant(I32, 3),
                                           ir.Constant(I32, 1)])

  def lanes(n):
    """The mask of lanes l < n (n runtime)."""
    return b.icmp_signed("<", iota, e.splat(n, i64v))

  def micro(mr: int, nr: int, bi, m, n0, masks, crow0, k0, kc, bsrc, bstride):
    """C rows crow0.. (mr of them), columns n0.. (nr vectors, lanes `masks` per vector), +=
    A rows m.. of batch bi, columns [k0, k0 + kc), times B's rows at bsrc (bstride apart)."""
    arow = [e.gep(A, b.add(b.add(mul(bi, sab), mul(b.add(m, e.i64(r)), sam)), mul(k0, sak)),
                  T) for r in range(mr)]
    crow = [e.gep(C, b.add(mul(b.add(crow0, e.i64(r)), N), n0), T) for r in range(mr)]
    first = b.icmp_signed("==", k0, e.i64(0))
    ahead = None
    if prefetch and mr == MR:      # the next row block's rows at k0
      ahead = e.gep(A, b.add(b.add(mul(bi, sab), mul(b.add(m, e.i64(MR)), sam)),
                             mul(k0, sak)), T)
    acc = []
    for r in range(mr):
      for v in range(nr):
        part = e.intrinsic(f"llvm.masked.load.{vsuf}.p0", VT, [
            e.gep(crow[r], e.i64(v * W), T), ir.Constant(I32, isz), masks[v], zero])
        acc.append(b.select(first, zero, part))

    def body(k, acc):
      if ahead is not None:   # a line per k: row k % MR of the next block, its line k / MR
        line = mul(mul(b.udiv(k, e.i64(MR)), e.i64(64 // isz)), sak)
        prefetch_line(e.gep(ahead, b.add(mul(b.urem(k, e.i64(MR)), sam), line), T))
      row = e.gep(bsrc, mul(k, bstride), T)
      bv = [b.load(e.gep(row, e.i64(v * W), T), typ=VT, align=isz) for v in range(nr)]
      ak = mul(k, sak)
      new = []
      for r in range(mr):
        a = e.splat(b.load(e.gep(arow[r], ak, T), typ=T), VT)
        new.extend(e.intrinsic(fma, VT, [a, bv[v], acc[r * nr + v]]) for v in range(nr))
      return new
    acc = e.loop(e.i64(0), kc, acc, body)
    for r in range(mr):
      for v in range(nr):
        e.intrinsic(f"llvm.masked.store.{vsuf}.p0", VOID, [
            acc[r * nr + v], e.gep(crow[r], e.i64(v * W), T), ir.Constant(I32, isz), masks[v]])

  interleave = [ir.Constant(ir.VectorType(I32, W), [h * W // 2 + j // 2 + (W if j % 2 else 0)
                                                     for j in range(W)]) for h in (0, 1)]

  def transpose(rows):
    """The W x W block whose rows are `rows`, transposed: log2(W) rounds of interleaving
    row i with row i + W/2 (low halves, then high halves)."""
    for _ in range(W.bit_length() - 1):
      rows = [b.shuffle_vector(rows[i], rows[i + W // 2], m)
              for i in range(W // 2) for m in interleave]
    return rows

  def pack(bi, n0, valid, k0, kc, nr):
    """B[bi, k0:k0+kc, n0:n0+valid] into the zero-padded kc x (nr*W) panel: masked vector
    loads when B's columns are contiguous; when its rows are (a transposed B, `x @ w.T`),
    W x W blocks loaded along k and transposed in registers (~4x faster than gathers),
    the k's left over and partial panels by one gather per vector. A one-vector panel
    (nr = 1) is packed W wide: a quarter of the stores of an NRW-wide one."""
    width = nr * W
    base = e.gep(Bp, b.add(b.add(mul(bi, sbb), mul(n0, sbn)), mul(k0, sbk)), T)
    by_blocks = b.and_(b.and_(b.icmp_signed("==", sbk, e.i64(1)), b.not_(contiguous_b)),
                       b.icmp_signed("==", valid, e.i64(width)))
    kt = b.select(by_blocks, e.mul_idx(b.udiv(kc, e.i64(W)), W), e.i64(0))

    def block(q, _c):
      kb = e.mul_idx(q, W)
      for v in range(nr):
        rows = [b.load(e.gep(base, b.add(mul(e.i64(v * W + j), sbn), kb), T), typ=VT,
                       align=isz) for j in range(W)]
        for j, col in enumerate(transpose(rows)):
          e.store_vector(col, e.gep(panel, b.add(e.mul_idx(b.add(kb, e.i64(j)), width),
                                                 e.i64(v * W)), T), W * isz)
      return []
    e.loop(e.i64(0), b.udiv(kt, e.i64(W)), [], block)
    masks = [lanes(b.sub(valid, e.i64(v * W))) for v in range(nr)]
    last = e.splat(b.sub(valid, e.i64(1)), i64v)
    offs = []
    for v in range(nr):          # columns past the end read column valid - 1: in bounds
      cols = b.add(iota, e.splat(e.i64(v * W), i64v))
      cols = b.select(b.icmp_signed("<", cols, last), cols, last)
      offs.append(b.mul(cols, e.splat(sbn, i64v)))

    def body(k, _c):
      src = e.gep(base, mul(k, sbk), T)
      dst = e.gep(panel, e.mul_idx(k, width), T)
      if prefetch:              # B's row PREFETCH_B_ROWS ahead (a page of its own)
        ahead = e.gep(src, mul(e.i64(PREFETCH_B_ROWS), sbk), T)
        for v in range(nr):
          prefetch_line(e.gep(ahead, e.mul_idx(sbn, v * W), T))
      for v in range(nr):
        with b.if_else(contiguous_b) as (then, otherwise):
          with then:
            x1 = e.intrinsic(f"llvm.masked.load.{vsuf}.p0", VT, [
                e.gep(src, e.i64(v * W), T), ir.Constant(I32, isz), masks[v], zero])
            bb1 = b.block
          with otherwise:
            ptrs = b.gep(src, [offs[v]], source_etype=T)
            ptrs.type = ir.VectorType(PTR, W)   # (llvmlite types a vector GEP as a scalar)
            x2 = e.intrinsic(f"llvm.masked.gather.{vsuf}.v{W}p0", VT,
                             [ptrs, ir.Constant(I32, isz), masks[v], zero])
            bb2 = b.block
        x = b.phi(VT)
        x.add_incoming(x1, bb1)
        x.add_incoming(x2, bb2)
        e.store_vector(x, e.gep(dst, e.i64(v * W), T), W * isz)
      return []
    e.loop(kt, kc, [], body)

  def row_blocks(nr, bi, m_lo, m_hi, n0, masks, k0, kc, bsrc, bstride):
    """A rows [m_lo, m_hi) of batch bi: MR at a time, then 4 rows if as many are left (a
    thread's 64 rows are 10 x 6 + 4; one row at a time runs at a third of the rate; more
    variants cost more compile time than they save), then one at a time."""
    nfull = b.udiv(b.sub(m_hi, m_lo), e.i64(MR))
    crow = lambda m: b.add(mul(bi, M), m)

    def call(mr, m):
      micro(mr, nr, bi, m, n0, masks, crow(m), k0, kc, bsrc, bstride)

    def blk(q, _c):
      call(MR, b.add(m_lo, e.mul_idx(q, MR)))
      return []
    e.loop(e.i64(0), nfull, [], blk)
    m = b.add(m_lo, e.mul_idx(nfull, MR))
    if MR > 4:
      four = b.icmp_signed(">=", b.sub(m_hi, m), e.i64(4))
      with b.if_then(four):
        call(4, m)
      m = b.select(four, b.add(m, e.i64(4)), m)

    def one(mm, _c):
      call(1, mm)
      return []
    e.loop(m, m_hi, [], one)

  def rows(bi, m_lo, m_hi):
    """C rows of batch bi, A rows [m_lo, m_hi): every column panel, every K block."""
    # B read in place: a panel would serve only one row block (at most MR rows of A), or
    # B's rows are NRW apart already (N = NRW, a 64 x 64 float32 on AVX-512), so its packed
    # panel would be a copy of it: the same loads in the same order, the same bits
    in_place = b.and_(contiguous_b, b.or_(b.icmp_signed("<=", M, e.i64(MR)),
                                          b.icmp_signed("==", sbk, e.i64(NRW))))
    npanels = b.udiv(b.add(N, e.i64(NRW - 1)), e.i64(NRW))
    nkb = imax(b.udiv(b.add(K, e.i64(KC - 1)), e.i64(KC)), e.i64(1))   # K = 0: stores zeros

    def panel_loop(p, _c):
      n0 = e.mul_idx(p, NRW)
      valid = imin(b.sub(N, n0), e.i64(NRW))
      masks = [lanes(b.sub(valid, e.i64(v * W))) for v in range(NR)]
      read_b = b.and_(in_place, b.icmp_signed("==", valid, e.i64(NRW)))

      def kb(j, _c):
        k0 = e.mul_idx(j, KC)
        kc = imin(b.sub(K, k0), e.i64(KC))

        def run(nr):
          with b.if_then(b.not_(read_b)):
            pack(bi, n0, valid, k0, kc, nr)
          bsrc = b.select(read_b, e.gep(Bp, b.add(b.add(mul(bi, sbb), n0), mul(k0, sbk)), T),
                          panel)
          bstride = b.select(read_b, sbk, e.i64(nr * W))
          row_blocks(nr, bi, m_lo, m_hi, n0, masks, k0, kc, bsrc, bstride)
        # a panel of at most one or two vectors of columns (N <= W: a classifier's logits;
        # a convolution's 16 or 32 features) runs a one- or two-vector micro-kernel instead
        # of NR vectors of mostly masked lanes
        with b.if_else(b.icmp_signed("<=", valid, e.i64(W))) as (narrow, wide):
          with narrow:
            run(1)
          with wide:
            if NR > 2:
              with b.if_else(b.icmp_signed("<=", valid, e.i64(2 * W))) as (two, full):
                with two:
                  run(2)
                with full:
                  run(NR)
            else:
              run(NR)
        return []
      e.loop(e.i64(0), nkb, [], kb)
      return []
    e.loop(imin(p0, npanels), imin(p1, npanels), [], panel_loop)

  r0, r1 = mul(start, R), mul(stop, R)

  def batch(bi, _c):            # the batches the rows [r0, r1) of C cover
    base = mul(bi, M)
    rows(bi, imax(b.sub(r0, base), e.i64(0)), imin(b.sub(r1, base), M))
    return []
  e.loop(b.udiv(r0, M), b.udiv(b.add(r1, b.sub(M, e.i64(1))), M), [], batch)
  b.ret_void()
  return fn


def emit_range_shift(module: ir.Module, name: str, target: str, n_buffers: int
                     ) -> abi.KernelInfo:
  """`void name(i8** buffers, i64 start, i64 stop)` calling kernel `target` on
  [start + off, stop + off), with off = (i64) buffers[n_buffers]: the thread pool splits
  [0, n) of a block into chunks; this moves them to the block's units [u0, u0 + n)."""
  fn = ir.Function(module, KERNEL_TYPE, name)
  fn.attributes.add("nounwind")
  b = ir.IRBuilder(fn.append_basic_block("entry"))
  bufs, start, stop = fn.args
  slot = b.gep(bufs, [ir.Constant(I64, n_buffers)], inbounds=True, source_etype=PTR)
  off = b.ptrtoint(b.load(slot, typ=PTR), I64)
  tfn = module.globals.get(target) or ir.Function(module, KERNEL_TYPE, target)
  b.call(tfn, [bufs, b.add(start, off), b.add(stop, off)])
  b.ret_void()
  return abi.KernelInfo(name, 0, True)

"""Large float dots through single-threaded BLAS calls on ember's own thread pool.

NumPy's OpenBLAS parallelizes a matmul with threads of its own that busy-wait for each
other; on a machine with more runnable threads than cores (a shared CI box, or the caller's
executor thread next to ember's pool) a 0.3 ms product then takes 5-50 ms (measured: the
seed-001 MLP epoch 20 s instead of 0.4 s at a load average of 3 on 2 cores). Here a 2-D dot
`C[M,N] = op(A) @ op(B)` runs as chunks of rows (or columns) of C, each one
`cblas_?gemm` call with OpenBLAS's thread count set to 1 while ember's dots run (process-
wide: `openblas_set_num_threads_local` changes the global count in the OpenBLAS NumPy ships,
and chunks setting and restoring it concurrently left NumPy's own matmuls single-threaded
afterwards; the first dot to start saves the count and the last to end restores it), and
the chunks go through `threadpool.run`: the caller
takes part and claims whatever chunks the workers have not started, so a busy machine
degrades to one core instead of stalling. A Gram product `m @ m.T` / `m.T @ m` is split
the same way into row blocks of its lower triangle, each mirrored (`Gram`: half a gemm's
flops, as BLAS's syrk, on every core). A batched dot (batch dims leading in both operands)
is one gemm per batch, the batches split over the pool (`BatchedGemm`, `ember_blas_batches`).
A dot it does not take (batch dims elsewhere, a Gram product of one row block, complex, an
operand that is no matrix without a copy) runs NumPy's matmul with the same count of 1
(`numpy_matmul`), so no ember dot waits on OpenBLAS's own threads.

The native part is one small LLVM function compiled once per process (like the pool's):
`ember_blas_chunk(i8** {A, B, C, descriptor}, i64 start, i64 stop)`, with the addresses of
the BLAS functions baked in (found in the OpenBLAS library this process loaded; none found,
or not OpenBLAS: `gemm_for` returns None and dots keep NumPy's matmul).
`EMBER_BLAS_POOL=0` keeps NumPy's matmul. Nothing of it is in
a serialized executable: a thunk builds its descriptor from the instruction.

Each chunk computes its part of C with the same K-loop as the whole call would (BLAS's
kernels do not reassociate across an M or N split), so results do not depend on the
chunk count beyond BLAS's own blocking. A chunk runs BLAS with XLA:CPU's flush-to-zero
modes on, as a kernel does (denormals.py), on whichever thread claims it.
"""
from __future__ import annotations

import ctypes
import functools
import os
import string
import threading

import numpy as np

from ember._src.backends.cpu import (denormals, dot_kernels, host, llvm_jit, runtime_cache,
                                     threadpool)

# OpenBLAS's functions, called by name: the names resolve to NumPy's OpenBLAS in this process
# (`_register_blas`), so the IR is the same in every process and its object is kept on disk
# (runtime_cache)
_DECLARES = """
declare void @ember_blas_sgemm(i32, i32, i32, $INT, $INT, $INT, float, i8*, $INT, i8*, $INT, float, i8*, $INT)
declare void @ember_blas_dgemm(i32, i32, i32, $INT, $INT, $INT, double, i8*, $INT, i8*, $INT, double, i8*, $INT)
"""
_OMATCOPY_DECLARES = """
declare void @ember_blas_somatcopy(i32, i32, $INT, $INT, float, i8*, $INT, i8*, $INT)
declare void @ember_blas_domatcopy(i32, i32, $INT, $INT, double, i8*, $INT, i8*, $INT)
"""

# The descriptor's i64 words (`_NAMES`): is_f64, transA, transB (CBLAS codes), M, N, K, lda,
# ldb, ldc, split_cols, unit (rows or columns per outer index), bytes to advance A, B, C per
# unit.
_IR = """
define void @ember_blas_chunk(i8** %b, i64 %start, i64 %stop) {
entry:
  %fz = call i64 @"ember.fz.on"()
  %dp = getelementptr i8*, i8** %b, i64 3
  %draw = load i8*, i8** %dp
  %d = bitcast i8* %draw to i64*
$LOADS
  %f64 = icmp ne i64 %isf64, 0
  %cols = icmp ne i64 %split, 0
  %s0 = mul i64 %start, %unit
  %s1 = mul i64 %stop, %unit
  %lim = select i1 %cols, i64 %n, i64 %m
  %lt = icmp slt i64 %s1, %lim
  %e = select i1 %lt, i64 %s1, i64 %lim
  %cnt = sub i64 %e, %s0
  %mm = select i1 %cols, i64 %m, i64 %cnt
  %nn = select i1 %cols, i64 %cnt, i64 %n
  %a0 = load i8*, i8** %b
  %bp = getelementptr i8*, i8** %b, i64 1
  %b0 = load i8*, i8** %bp
  %cp = getelementptr i8*, i8** %b, i64 2
  %c0 = load i8*, i8** %cp
  %ao = mul i64 %start, %astep
  %bo = mul i64 %start, %bstep
  %co = mul i64 %start, %cstep
  %a = getelementptr i8, i8* %a0, i64 %ao
  %bb = getelementptr i8, i8* %b0, i64 %bo
  %c = getelementptr i8, i8* %c0, i64 %co
  %ta = trunc i64 %transa to i32
  %tb = trunc i64 %transb to i32
  %mi = $CONV i64 %mm to $INT
  %ni = $CONV i64 %nn to $INT
  %ki = $CONV i64 %k to $INT
  %ldai = $CONV i64 %lda to $INT
  %ldbi = $CONV i64 %ldb to $INT
  %ldci = $CONV i64 %ldc to $INT
  br i1 %f64, label %dgemm, label %sgemm
sgemm:
  call void @ember_blas_sgemm(i32 101, i32 %ta, i32 %tb, $INT %mi, $INT %ni, $INT %ki, float 1.0, i8* %a, $INT %ldai, i8* %bb, $INT %ldbi, float 0.0, i8* %c, $INT %ldci)
  br label %done
dgemm:
  call void @ember_blas_dgemm(i32 101, i32 %ta, i32 %tb, $INT %mi, $INT %ni, $INT %ki, double 1.0, i8* %a, $INT %ldai, i8* %bb, $INT %ldbi, double 0.0, i8* %c, $INT %ldci)
  br label %done
done:
  call void @"ember.fz.restore"(i64 %fz)
  ret void
}

; units [start, stop) one ember_blas_chunk call each: a batched dot's batches (unit = M rows
; of the B*M, the steps one batch's A, B and C apart)
define void @ember_blas_batches(i8** %b, i64 %start, i64 %stop) {
entry:
  br label %loop
loop:
  %u = phi i64 [ %start, %entry ], [ %u1, %body ]
  %more = icmp slt i64 %u, %stop
  br i1 %more, label %body, label %exit
body:
  %u1 = add i64 %u, 1
  call void @ember_blas_chunk(i8** %b, i64 %u, i64 %u1)
  br label %loop
exit:
  ret void
}
"""
_NAMES = ("isf64", "transa", "transb", "m", "n", "k", "lda", "ldb", "ldc", "split",
          "unit", "astep", "bstep", "cstep")


def _loads(names=_NAMES) -> str:
  lines = []
  for j, name in enumerate(names):
    lines.append(f"  %p{j} = getelementptr i64, i64* %d, i64 {j}")
    lines.append(f"  %{name} = load i64, i64* %p{j}")
  return "\n".join(lines)


@functools.cache
def openblas_library():
  """(library, symbol prefix, symbol suffix, the BLAS integer's IR type) of the OpenBLAS
  that NumPy loaded, or None (none found, or `EMBER_BLAS_POOL=0`). NumPy's wheels ship
  OpenBLAS with LAPACK, under `scipy_` names with a `64_` suffix (64-bit integers)."""
  if os.environ.get("EMBER_BLAS_POOL", "1") == "0":
    return None
  try:
    with open("/proc/self/maps") as f:
      paths = {line.split()[-1] for line in f if "openblas" in line.lower()
               and line.split()[-1].startswith("/")}
  except OSError:
    return None
  for path in sorted(paths):
    try:
      lib = ctypes.CDLL(path)
    except OSError:
      continue
    for prefix, suffix, int_ty in (("scipy_", "64_", "i64"), ("", "64_", "i64"),
                                   ("scipy_", "", "i32"), ("", "", "i32")):
      if all(hasattr(lib, f"{prefix}{name}{suffix}") for name in
             ("cblas_sgemm", "cblas_dgemm", "openblas_get_num_threads",
              "openblas_set_num_threads")):
        return lib, prefix, suffix, int_ty
  return None


@functools.cache
def thread_count_functions():
  """OpenBLAS's process-wide (get, set) thread-count functions, or None."""
  found = openblas_library()
  if found is None:
    return None
  lib, prefix, suffix, _ = found
  get, set_ = (getattr(lib, f"{prefix}openblas_{w}_num_threads{suffix}")
               for w in ("get", "set"))
  get.restype, get.argtypes, set_.argtypes = ctypes.c_int, [], [ctypes.c_int]
  return get, set_


def _openblas():
  """(sgemm address, dgemm address, the process-wide get/set thread-count functions, the
  BLAS integer's IR type) of the OpenBLAS that NumPy loaded, or None."""
  found = openblas_library()
  if found is None:
    return None
  lib, prefix, suffix, int_ty = found
  addr = lambda f: ctypes.cast(f, ctypes.c_void_p).value
  s, d = (addr(getattr(lib, f"{prefix}cblas_{t}gemm{suffix}")) for t in "sd")
  return (s, d, *thread_count_functions(), int_ty)


@runtime_cache.once
def _native():
  """(engine, address of ember_blas_chunk, None or the process-wide (get, set) thread
  count functions when the per-thread one is missing, address of ember_blas_batches), or
  None without a usable OpenBLAS."""
  found = _openblas()
  if found is None:
    return None
  s, d, get, set_, int_ty = found
  _register_blas(sgemm=s, dgemm=d)
  text = denormals.TEXT_HELPERS + string.Template(_DECLARES + _IR).substitute(
      LOADS=_loads(), INT=int_ty, CONV="trunc" if int_ty == "i32" else "bitcast")
  engine, addr = runtime_cache.load_or_compile("ember_blas_chunk", lambda: text, text, 2)
  return engine, addr("ember_blas_chunk"), (get, set_), addr("ember_blas_batches")


def _register_blas(**addresses: int) -> None:
  """Make `ember_blas_<name>` resolve to each OpenBLAS function's address here."""
  for name, address in addresses.items():
    llvm_jit.add_symbol(f"ember_blas_{name}", address)


_count_lock = threading.Lock()
_users = 0                  # ember dots running now
_saved_count = None         # OpenBLAS's thread count before the first of them
_restore = None             # ... and the function that sets it back


def _single_threaded_blas(get, set_) -> None:
  global _users, _saved_count, _restore
  with _count_lock:
    if _users == 0:
      _saved_count, _restore = get(), set_
      set_(1)
    _users += 1


def _restore_blas_threads() -> None:
  global _users
  with _count_lock:
    _users -= 1
    if _users == 0:
      _restore(_saved_count)


def numpy_matmul(l: np.ndarray, r: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
  """np.matmul for the dots `gemm_for` does not take (batched, small Gram, complex, a layout
  that needs a copy, a row block of a dot output fusion), with OpenBLAS on one thread
  while it runs: its own threads stall on a loaded machine just the same."""
  native = _native()
  if native is None:
    return np.matmul(l, r, out=out)
  _single_threaded_blas(*native[2])
  try:
    return np.matmul(l, r, out=out)
  finally:
    _restore_blas_threads()


# A dot below this many flops stays one call (the pool's fork/join and BLAS's per-call
# packing are not worth splitting for).
MIN_SPLIT_FLOPS = 4_000_000
# A unit (one outer index) is ROW_ALIGN rows or COL_ALIGN columns of C, the last one cut at
# M or N: row-major C is BLAS's column-major C^T, whose micro-kernel's long side runs along
# our columns. The pool cuts the units into `threads` nearly equal chunks, so the threads'
# shares differ by a unit at most (1000 rows as 512 + 488, whole chunks of 16 rows, cost
# ~2% on two cores: 1000^3 f32 in 9.87 ms against 9.69 as 500 + 500, best of 25). One
# chunk per thread: two per thread (or 2 x 2 tiles) pack A or B again for each, 3-4% more
# work, which costs more on a loaded machine than the finer claiming wins back.
ROW_ALIGN = 4
COL_ALIGN = 16


class _PooledChunks:
  """A native chunk function `fn(i8** {pointers..., descriptor}, start, stop)` run over
  [0, outer) in `nchunks` chunks on the thread pool (whole here with one chunk), with
  OpenBLAS on one thread while it runs (`_single_threaded_blas`)."""

  def _setup(self, address: int, thread_counts, desc: np.ndarray, pointers: int,
             outer: int, nchunks: int) -> None:
    self.address, self._global, self.desc = address, thread_counts, desc
    self.outer, self.nchunks = outer, nchunks
    self._desc = desc.ctypes.data
    self._array = ctypes.c_void_p * (pointers + 1)
    self.fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(address)

  def _run(self, *pointers: int) -> None:
    bufs = self._array(*pointers, self._desc)      # per call: concurrent calls may run
    _single_threaded_blas(*self._global)
    try:
      if self.nchunks > 1:
        threadpool.run(self.address, bufs, self.outer, self.nchunks)
      else:
        self.fn(bufs, 0, self.outer)
    finally:
      _restore_blas_threads()


class Gemm(_PooledChunks):
  """One 2-D float dot's BLAS call, split across the thread pool: `run(a, b, c)` with the
  operands' and the result's addresses."""

  def __init__(self, native, is_f64: bool, trans_a: bool, trans_b: bool, M: int, N: int,
               K: int, lda: int, ldb: int, itemsize: int, threads: int | None = None):
    self.engine, address, thread_counts, _ = native
    threads = host.num_threads() if threads is None else threads
    cols = N > M                       # split the larger side: its operand is packed once
    dim = N if cols else M
    chunks = 1 if 2 * M * N * K < MIN_SPLIT_FLOPS or threads <= 1 else threads
    unit = min(dim, COL_ALIGN if cols else ROW_ALIGN)
    outer = -(-dim // unit)
    if cols:     # column c of op(B): row c of a transposed B
      steps = (0, (ldb if trans_b else 1) * unit * itemsize, unit * itemsize)
    else:        # row r of op(A): column r of a transposed A
      steps = ((1 if trans_a else lda) * unit * itemsize, 0, N * unit * itemsize)
    desc = np.array([int(is_f64), 112 if trans_a else 111, 112 if trans_b else 111,
                     M, N, K, lda, ldb, N, int(cols), unit, *steps], np.int64)
    self._setup(address, thread_counts, desc, 3, outer, min(chunks, outer))

  def run(self, a: int, b: int, c: int) -> None:
    self._run(a, b, c)


class BatchedGemm(Gemm):
  """A batched float dot (batch dimensions leading in both operands and in the result) as
  one BLAS call per batch, the batches split across the thread pool (NumPy's matmul runs
  them one after the other on one core)."""

  def __init__(self, native, is_f64: bool, trans_a: bool, trans_b: bool, B: int, M: int,
               N: int, K: int, lda: int, ldb: int, itemsize: int, threads: int | None = None):
    self.engine, _, thread_counts, address = native
    threads = host.num_threads() if threads is None else threads
    chunks = 1 if 2 * B * M * N * K < MIN_SPLIT_FLOPS or threads <= 1 else min(threads, B)
    # rows mode with one unit per batch: each call computes M rows at one batch's A, B, C
    desc = np.array([int(is_f64), 112 if trans_a else 111, 112 if trans_b else 111,
                     B * M, N, K, lda, ldb, N, 0, M, M * K * itemsize, K * N * itemsize,
                     M * N * itemsize], np.int64)
    self._setup(address, thread_counts, desc, 3, B, chunks)


# A Gram product C = A A^T (or A^T A) on the pool, in units of C's lower part: unit u is
# `tiles` squares of W x W along row block `block` from tile column `first` (the row block's
# diagonal square whole when the unit reaches it), one gemm against those rows of A; then
# omatcopy mirrors what lies left of the diagonal above it, and a loop the square's lower
# triangle.
# Descriptor words: is_f64, columns (0: C = A A^T, the vectors are A's rows; 1: C = A^T A),
# n, K, lda, W, itemsize, then (block, first, tiles) per unit, in the order they are claimed.
_GRAM_IR = """
define void @ember_gram_chunk(i8** %b, i64 %start, i64 %stop) {
entry:
  %fz = call i64 @"ember.fz.on"()
  %a = load i8*, i8** %b
  %cp = getelementptr i8*, i8** %b, i64 1
  %c = load i8*, i8** %cp
  %dp = getelementptr i8*, i8** %b, i64 2
  %draw = load i8*, i8** %dp
  %d = bitcast i8* %draw to i64*
$LOADS
  %f64 = icmp ne i64 %isf64, 0
  %tr = icmp ne i64 %columns, 0
  %ta = select i1 %tr, i32 112, i32 111
  %tb = select i1 %tr, i32 111, i32 112
  %arow = mul i64 %lda, %size
  %astep = select i1 %tr, i64 %size, i64 %arow
  %crow = mul i64 %n, %size
  %ki = $CONV i64 %k to $INT
  %ldai = $CONV i64 %lda to $INT
  %ldci = $CONV i64 %n to $INT
  br label %head
head:
  %u = phi i64 [%start, %entry], [%u1, %next]
  %more = icmp slt i64 %u, %stop
  br i1 %more, label %body, label %done
body:
  %u3 = mul i64 %u, 3
  %oi = add i64 %u3, 7
  %op = getelementptr i64, i64* %d, i64 %oi
  %blk = load i64, i64* %op
  %fp = getelementptr i64, i64* %op, i64 1
  %first = load i64, i64* %fp
  %tp = getelementptr i64, i64* %op, i64 2
  %tiles = load i64, i64* %tp
  %s0 = mul i64 %blk, %w
  %e = add i64 %s0, %w
  %lt = icmp slt i64 %e, %n
  %s1 = select i1 %lt, i64 %e, i64 %n
  %h = sub i64 %s1, %s0
  %c0 = mul i64 %first, %w
  %span = mul i64 %tiles, %w
  %ce = add i64 %c0, %span
  %clt = icmp slt i64 %ce, %s1
  %c1 = select i1 %clt, i64 %ce, i64 %s1
  %nn = sub i64 %c1, %c0
  %mlt = icmp slt i64 %c1, %s0
  %mend = select i1 %mlt, i64 %c1, i64 %s0
  %wm = sub i64 %mend, %c0
  %ao = mul i64 %s0, %astep
  %ab = getelementptr i8, i8* %a, i64 %ao
  %bo = mul i64 %c0, %astep
  %bb = getelementptr i8, i8* %a, i64 %bo
  %cr = mul i64 %s0, %crow
  %cc = mul i64 %c0, %size
  %co = add i64 %cr, %cc
  %cb = getelementptr i8, i8* %c, i64 %co
  %tr0 = mul i64 %c0, %crow
  %tc0 = mul i64 %s0, %size
  %to = add i64 %tr0, %tc0
  %ct = getelementptr i8, i8* %c, i64 %to
  %hi = $CONV i64 %h to $INT
  %nni = $CONV i64 %nn to $INT
  %wmi = $CONV i64 %wm to $INT
  %mirror = icmp sgt i64 %wm, 0
  %diag = icmp eq i64 %c1, %s1
  br i1 %f64, label %dgemm, label %sgemm
sgemm:
  call void @ember_blas_sgemm(i32 101, i32 %ta, i32 %tb, $INT %hi, $INT %nni, $INT %ki, float 1.0, i8* %ab, $INT %ldai, i8* %bb, $INT %ldai, float 0.0, i8* %cb, $INT %ldci)
  br i1 %mirror, label %scopy, label %square
scopy:
  call void @ember_blas_somatcopy(i32 101, i32 112, $INT %hi, $INT %wmi, float 1.0, i8* %cb, $INT %ldci, i8* %ct, $INT %ldci)
  br label %square
dgemm:
  call void @ember_blas_dgemm(i32 101, i32 %ta, i32 %tb, $INT %hi, $INT %nni, $INT %ki, double 1.0, i8* %ab, $INT %ldai, i8* %bb, $INT %ldai, double 0.0, i8* %cb, $INT %ldci)
  br i1 %mirror, label %dcopy, label %square
dcopy:
  call void @ember_blas_domatcopy(i32 101, i32 112, $INT %hi, $INT %wmi, double 1.0, i8* %cb, $INT %ldci, i8* %ct, $INT %ldci)
  br label %square
square:                 ; the diagonal square's lower triangle copied above it: exactly
  br i1 %diag, label %rows, label %next   ; symmetric (gemm's kernel need not give C[i,j] ==
                                          ; C[j,i] bitwise)
rows:
  %i = phi i64 [1, %square], [%i1, %rowdone]
  %imore = icmp slt i64 %i, %h
  br i1 %imore, label %rowstart, label %next
rowstart:
  %ri = add i64 %s0, %i
  %rin = mul i64 %ri, %n
  br label %cols
cols:
  %j = phi i64 [0, %rowstart], [%j1, %moved]
  %jmore = icmp slt i64 %j, %i
  br i1 %jmore, label %move, label %rowdone
move:
  %cj = add i64 %s0, %j
  %src = add i64 %rin, %cj
  %cjn = mul i64 %cj, %n
  %dst = add i64 %cjn, %ri
  br i1 %f64, label %move8, label %move4
$MOVES
moved:
  %j1 = add i64 %j, 1
  br label %cols
rowdone:
  %i1 = add i64 %i, 1
  br label %rows
next:
  %u1 = add i64 %u, 1
  br label %head
done:
  call void @"ember.fz.restore"(i64 %fz)
  ret void
}
"""
_GRAM_NAMES = ("isf64", "columns", "n", "k", "lda", "w", "size")
# one element of the square moved above the diagonal, as an integer of its width
_GRAM_MOVE = """move{w}:
  %c{w} = bitcast i8* %c to i{b}*
  %src{w} = getelementptr i{b}, i{b}* %c{w}, i64 %src
  %dst{w} = getelementptr i{b}, i{b}* %c{w}, i64 %dst
  %v{w} = load i{b}, i{b}* %src{w}
  store i{b} %v{w}, i{b}* %dst{w}
  br label %moved"""
GRAM_ROWS = 256      # W: rows of C per row block (the gemm's packing of A is amortized)
# Units a Gram product is cut into per thread at least: the pool claims them one at a time,
# largest first, so a thread that starts late or is descheduled leaves its share to the
# others, and on many cores no single row block (a quarter of the flops of n = 2000 in
# 256-row blocks) sets the time (m @ m.T 2000^2 on 13 cores: 21 ms as 8 row blocks).
GRAM_UNITS_PER_THREAD = 3


def gram_units(n: int, threads: int, w: int = GRAM_ROWS) -> list[tuple[int, int, int]]:
  """(row block, first tile, tiles) of C's lower part in W x W tiles, cut into at least
  GRAM_UNITS_PER_THREAD units per thread where there are tiles enough (a unit is never more
  than one row block's), largest first; fewer, longer units pack A less often."""
  blocks = -(-n // w)
  span = max(1, blocks * (blocks + 1) // 2 // (GRAM_UNITS_PER_THREAD * max(1, threads)))
  units = [(b, j, min(span, b + 1 - j)) for b in range(blocks) for j in range(0, b + 1, span)]
  size = lambda u: min(w, n - u[0] * w) * (min((u[1] + u[2]) * w, n) - u[1] * w)
  return sorted(units, key=lambda u: (-size(u), u))


@runtime_cache.once
def _gram_native():
  """(engine, address of ember_gram_chunk) when OpenBLAS has omatcopy too, else None."""
  found, gemms = openblas_library(), _openblas()
  if found is None or gemms is None:
    return None
  lib, prefix, suffix, int_ty = found
  names = [f"{prefix}cblas_{t}omatcopy{suffix}" for t in "sd"]
  if not all(hasattr(lib, n) for n in names):
    return None
  s, d = (ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in names)
  _register_blas(sgemm=gemms[0], dgemm=gemms[1], somatcopy=s, domatcopy=d)
  text = denormals.TEXT_HELPERS + string.Template(
      _DECLARES + _OMATCOPY_DECLARES + _GRAM_IR).substitute(
      LOADS=_loads(_GRAM_NAMES), MOVES="\n".join(_GRAM_MOVE.format(w=w, b=8 * w) for w in (4, 8)),
      INT=int_ty, CONV="trunc" if int_ty == "i32" else "bitcast")
  engine, addr = runtime_cache.load_or_compile("ember_gram_chunk", lambda: text, text, 2)
  return engine, addr("ember_gram_chunk")


class Gram(_PooledChunks):
  """C[n, n] = A A^T (`columns` False: A is n x K, leading dimension lda) or A^T A (A is
  K x n) on the pool, `run(a, _, c)` like Gemm's: half a gemm's flops, as BLAS's syrk, in
  units of C's lower part (`gram_units`), each mirrored above the diagonal, each claimed on
  its own. Every element is one gemm's K-loop whatever the units (BLAS's kernels do not
  reassociate across an M or N split), and C is exactly symmetric."""

  def __init__(self, native, is_f64: bool, columns: bool, n: int, K: int, lda: int,
               itemsize: int, threads: int | None = None):
    self.engine, address = native
    threads = host.num_threads() if threads is None else threads
    units = gram_units(n, threads)
    desc = np.array([int(is_f64), int(columns), n, K, lda, GRAM_ROWS, itemsize,
                     *(w for u in units for w in u)], np.int64)
    chunks = len(units) if threads > 1 else 1
    self._setup(address, _native()[2], desc, 2, len(units), chunks)

  def run(self, a: int, b: int, c: int) -> None:
    self._run(a, c)          # (b is a: the same matrix)


def _matrix_view(dims: tuple, contracting: tuple, contracting_first: bool):
  """(transposed, free size, contracting size, leading dimension) of an operand read as a
  row-major matrix without a copy: its contracting dimensions (in `contracting`'s order)
  one contiguous run at its end (`contracting_first` False: free x contracting) or its
  start (contracting x free), the free dimensions the rest, in order; else None."""
  r, n = len(dims), len(contracting)
  at_start, at_end = tuple(range(n)), tuple(range(r - n, r))
  if n == r or n == 0 or contracting not in (at_start, at_end):
    return None
  prod = lambda ds: int(np.prod(ds, dtype=np.int64))
  K = prod(dims[:n] if contracting == at_start else dims[r - n:])
  free = prod(dims[n:] if contracting == at_start else dims[:r - n])
  if contracting == at_start:     # (contracting, free): rows of length `free`
    return (not contracting_first, free, K, free)
  return (contracting_first, free, K, K)


def gemm_for(instr, out_dtype) -> Gemm | None:
  """A Gemm (a Gram, a BatchedGemm) for a `dot` instruction when it is a float32/float64
  product computed in its output dtype, its batch dimensions (if any) leading in both
  operands, whose operands read per batch as 2-D matrices without a copy (`_matrix_view`: a
  convolution's dot contracts (taps, channels) at once), and OpenBLAS is available; else
  None."""
  lhs, rhs = instr.operands
  a = instr.attrs
  dt = np.dtype(out_dtype)
  lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
  lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
  nb = len(lb)
  if dt not in (np.dtype(np.float32), np.dtype(np.float64)) or \
      np.dtype(lhs.dtype) != dt or np.dtype(rhs.dtype) != dt or \
      lb != tuple(range(nb)) or rb != lb or \
      0 in lhs.shape.dims or 0 in rhs.shape.dims:
    return None
  order = sorted(range(len(lc)), key=lambda i: lc[i])     # pairs in lhs memory order
  lc, rc = tuple(lc[i] - nb for i in order), tuple(rc[i] - nb for i in order)
  left = _matrix_view(tuple(lhs.shape.dims[nb:]), lc, contracting_first=False)
  right = _matrix_view(tuple(rhs.shape.dims[nb:]), rc, contracting_first=True)
  if left is None or right is None:
    return None
  native = _native()
  if native is None:
    return None
  (trans_a, M, K, lda), (trans_b, N, _, ldb) = left, right
  if nb:       # leading batch dims: one gemm per batch
    B = int(np.prod(lhs.shape.dims[:nb], dtype=np.int64))
    return BatchedGemm(native, dt == np.float64, trans_a, trans_b, B, M, N, K, lda, ldb,
                       dt.itemsize)
  if dot_kernels.is_gram(instr):   # half a gemm's flops (NumPy's matmul calls syrk)
    gram = _gram_native()
    if gram is None or M <= GRAM_ROWS or host.num_threads() <= 1 or \
        M * M * K < MIN_SPLIT_FLOPS:
      return None                  # one block, or one thread: NumPy's syrk
    return Gram(gram, dt == np.float64, trans_a, M, K, lda, dt.itemsize)
  return Gemm(native, dt == np.float64, trans_a, trans_b, M, N, K, lda, ldb, dt.itemsize)

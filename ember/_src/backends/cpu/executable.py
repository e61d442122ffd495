"""The CPU executable: a list of thunks run in order over buffers from the buffer assignment.

    Executable.execute(args: list[np.ndarray]) -> list[np.ndarray]

Each call allocates the output arrays (large ones from the runtime's buffer pool, so their
pages are already mapped) and uses one temp arena (`BufferAssignment.temp_size` bytes: kept
by the executable's cached frame, or leased from the pool per call when large), resolves
every slot (`parameter` -> the caller's array, `constant` -> the module's constant data,
`output` -> a fresh output array, `temp` -> bytes of the arena) and runs the thunks in
schedule order (the entry computation's instruction order, which the buffer assignment's
liveness assumes). The cached frame prebuilds each kernel's pointer array once; a call only
rewrites its parameter and output entries (a concurrent call builds a frame of its own):

- KernelThunk: a generated LLVM function called through ctypes (which releases the GIL)
  with its buffer pointers and the outer-loop range [0, n); `splittable` kernels accept any
  sub-range, so a thread pool may split them.
- DotThunk: NumPy matmul (BLAS for float/complex) on views of the buffers, with transposes
  as strided views (BLAS transpose flags) and batch dimensions as a batched matmul. (Small
  float dots run as KernelThunks of generated kernels: dot_kernels.py.)
- DotEpilogueThunk: a dot output fusion on the BLAS path: per block of output rows, the
  dot by BLAS then the epilogue kernel on the same rows while they are in cache.
- SortThunk / TopKThunk: NumPy, in JAX's orders (the lax reference impls).
- ScatterThunk: copy operand -> output (unless in place), then a generated loop.
- CopyThunk: np.copyto.

Outputs are the fresh arrays (or, for donated parameters, the argument's array the output
was computed into). The thunk list is the seam for asynchronous dispatch and the profiler:
each thunk has a `name` (its instruction's) and a `kind`.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
import weakref
from typing import Callable, Sequence

import numpy as np

from ember._src.base import buffer_pool, denormals, dtypes, flags as flags_lib
from ember._src.hlo import evaluator as hlo_eval, graph as hlo
from ember._src.backends.cpu import blas_pool, cost_model, runtime_cache, threadpool
from ember._src.reference import sorting

KERNEL_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def _c_order(a: np.ndarray) -> np.ndarray:
  return a if a.flags.c_contiguous else np.array(a, order="C")


def _bytes_of(a: np.ndarray) -> np.ndarray:
  """A C-contiguous array's memory as a flat uint8 view."""
  return a.reshape(-1).view(np.uint8) if a.ndim else a.reshape(1).view(np.uint8)


class Frame:
  """The buffers of one execution: argument arrays, constants, outputs, the temp arena, and
  their addresses. `prebuilt` (the executable's cached frame only): kernel thunk -> its
  pointer array, whose constant and temp entries are fixed and whose parameter and output
  entries the executable rewrites per call."""
  __slots__ = ("args", "consts", "outs", "arena", "arena_ptr", "arg_ptrs", "out_ptrs",
               "const_ptrs", "prebuilt")

  def __init__(self, args, consts, const_ptrs, outs, arena, arg_ptrs=None, out_ptrs=None,
               arena_ptr=None, prebuilt=None):
    self.args, self.consts, self.outs, self.arena = args, consts, outs, arena
    self.arg_ptrs = [_data_ptr(a) for a in args] if arg_ptrs is None else arg_ptrs
    self.out_ptrs = [_data_ptr(o) if o is not None else 0 for o in outs] \
        if out_ptrs is None else out_ptrs
    self.const_ptrs = const_ptrs
    if arena_ptr is None:
      arena_ptr = _data_ptr(arena) if arena is not None and arena.size else 0
    self.arena_ptr = arena_ptr
    self.prebuilt = prebuilt

  def buffers(self, thunk) -> ctypes.Array:
    """A kernel thunk's array of buffer pointers (one per slot)."""
    pre = self.prebuilt
    if pre is not None:
      arr = pre.get(thunk)
      if arr is not None:
        return arr
    slots = thunk.slots
    return (ctypes.c_void_p * max(len(slots), 1))(*[self.ptr(s) for s in slots])

  def ptr(self, slot) -> int:
    k = slot.kind
    if k == "temp":
      return self.arena_ptr + slot.offset
    if k == "parameter":
      return self.arg_ptrs[slot.index]
    if k == "output":
      return self.out_ptrs[slot.index]
    return self.const_ptrs[slot.index]

  def view(self, slot, shape: hlo.Shape) -> np.ndarray:
    """The slot's memory as an array of `shape` (writes land in the buffer)."""
    k = slot.kind
    if shape.nbytes == 0:   # nothing to read or write (an empty temp may have no arena)
      return np.empty(shape.dims, shape.dtype)
    if k == "temp":
      raw = self.arena[slot.offset:slot.offset + shape.nbytes]
    else:
      base = {"parameter": self.args, "output": self.outs, "constant": self.consts}[k][slot.index]
      if base.dtype == np.dtype(shape.dtype) and base.shape == tuple(shape.dims):
        return base
      raw = _bytes_of(base)[:shape.nbytes]
    return raw.view(shape.dtype).reshape(shape.dims)


# the cached frame's step tables name the pool of the device that built them; with several
# devices, `_run` points them at the running device's pool (threadpool.retarget)
_SEVERAL_DEVICES = False


def _count_devices(n: int) -> None:
  global _SEVERAL_DEVICES
  _SEVERAL_DEVICES = n > 1


flags_lib.on_cpu_backend_start(_count_devices)


def _batch_direct_calls(steps: list) -> list:
  """Replace each run of 2+ direct kernel calls `(fn, buffers, outer, nchunks)` by one
  native call `(runner, table address, rows, table)` (the table is kept alive by the step
  itself): the thread pool's step runner (threadpool.step_table), which splits the kernels
  with nchunks > 1 and runs the others whole. Each call through ctypes costs ~0.5-1 us: a
  chain of small kernels, e.g. 20 x tanh(x @ x) on 64 x 64, paid it per kernel. A lone
  kernel stays a direct call `(fn, buffers, outer)` if it runs whole; a lone split one is a
  one-row table, so that a cache hit still makes one native call (a split 64 x 64 m @ v
  cost 3.9 us a call through its thunk, KernelThunk.run and threadpool.run, 1.4 so; more
  after a large kernel has evicted the interpreter's data), except with several devices:
  there the thunk splits it over the pool of the device running it (a cache hit's native
  call does not retarget a table)."""
  out, run = [], []

  def flush():
    rows = [(ctypes.cast(st[0], ctypes.c_void_p).value, ctypes.addressof(st[1]), st[2], st[3])
            for st in run]
    lone_split = len(run) == 1 and run[0][3] > 1 and not _SEVERAL_DEVICES
    batched = threadpool.step_table(rows) if len(run) > 1 or lone_split else None
    if batched is not None:
      out.append((batched[0], batched[1].ctypes.data, len(rows), batched[1]))
    else:
      out.extend(st[4] if st[3] > 1 else st[:3] for st in run)
    run.clear()
  for st in steps:
    if type(st) is tuple:
      run.append(st)
    else:
      flush()
      out.append(st)
  flush()
  return out


# A jit cache hit's prologue in one native call (Executable.execute_direct): it reads the
# data address of each argument and fresh output out of the NumPy array objects themselves
# (the items of a Python list whose address the descriptor holds), stores each where a
# table entry says (the kernels' pointer arrays, and a table the caller reads the outputs'
# addresses back from), then makes the executable's one direct kernel call, if any.
# Descriptor: [function or 0, its buffer table, its outer range, id(list), n entries,
# (destination address, list index) * n]. In Python each pointer-array entry cost ~0.1 us
# and each output's address ~0.3 us (ctypes' buffer protocol).
_HIT_PROLOGUE_IR = """
define void @ember_hit_prologue(i64* %d) {
entry:
  %lp = getelementptr i64, i64* %d, i64 3
  %lst = load i64, i64* %lp
  %itemsa = add i64 %lst, LIST_ITEMS
  %itemsp = inttoptr i64 %itemsa to i64**
  %items = load i64*, i64** %itemsp
  %np = getelementptr i64, i64* %d, i64 4
  %n = load i64, i64* %np
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %body]
  %done = icmp eq i64 %i, %n
  br i1 %done, label %tail, label %body
body:
  %k = shl i64 %i, 1
  %dpos = add i64 %k, 5
  %dp = getelementptr i64, i64* %d, i64 %dpos
  %dest = load i64, i64* %dp
  %ipos = add i64 %k, 6
  %ip = getelementptr i64, i64* %d, i64 %ipos
  %idx = load i64, i64* %ip
  %itp = getelementptr i64, i64* %items, i64 %idx
  %item = load i64, i64* %itp
  %dataa = add i64 %item, ARRAY_DATA
  %datap = inttoptr i64 %dataa to i64*
  %data = load i64, i64* %datap
  %destp = inttoptr i64 %dest to i64*
  store i64 %data, i64* %destp
  %i1 = add i64 %i, 1
  br label %loop
tail:
  %f = load i64, i64* %d
  %has = icmp ne i64 %f, 0
  br i1 %has, label %call, label %exit
call:
  %pb = getelementptr i64, i64* %d, i64 1
  %bufs = load i64, i64* %pb
  %pn = getelementptr i64, i64* %d, i64 2
  %outer = load i64, i64* %pn
  %fn = inttoptr i64 %f to void (i64, i64, i64)*
  call void %fn(i64 %bufs, i64 0, i64 %outer)
  br label %exit
exit:
  ret void
}
"""
_LIST_ITEMS = 24   # offsetof(PyListObject, ob_item) on 64-bit CPython builds
_ARRAY_DATA = 16   # offsetof(PyArrayObject_fields, data): after the 16-byte object header


@runtime_cache.once
def _hit_prologue():
  """(engine, the prologue taking its descriptor's address), or None where this process's
  object layouts are not the ones it reads (checked once on a real list and array)."""
  if sys.implementation.name != "cpython" or ctypes.sizeof(ctypes.c_void_p) != 8 or \
      object.__basicsize__ != 16 or list.__basicsize__ != 40:   # the offsets' premises
    return None
  ir = _HIT_PROLOGUE_IR.replace("LIST_ITEMS", str(_LIST_ITEMS)).replace(
      "ARRAY_DATA", str(_ARRAY_DATA))
  engine, addr = runtime_cache.load_or_compile("ember_hit_prologue", lambda: ir, ir, 2)
  fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(addr("ember_hit_prologue"))
  probe = [np.empty(3, np.float32), np.empty((2, 2))[1:]]
  got = (ctypes.c_int64 * 2)()
  desc = (ctypes.c_int64 * 9)(0, 0, 0, id(probe), 2, ctypes.addressof(got), 0,
                              ctypes.addressof(got) + 8, 1)
  fn(ctypes.addressof(desc))
  if list(got) != [a.ctypes.data for a in probe]:
    return None
  return engine, fn


class Thunk:
  """One step of an executable: `run(frame)` reads and writes buffers of the frame.
  `name` is its instruction's name (the profiler's label), `kind` says what it runs."""
  kind = "thunk"
  name: str

  def __repr__(self):
    return f"<{type(self).__name__} {self.name}>"


def flushing(run: Callable) -> Callable:
  """A thunk's `run` computing in Python (NumPy, BLAS, LAPACK) what a kernel computes, with
  XLA:CPU's flush-to-zero on as a kernel has it (base/denormals.py)."""
  def flushed_run(self, frame, *args):
    modes = denormals.flush_on()
    try:
      return run(self, frame, *args)
    finally:
      if modes >= 0:
        denormals.restore(modes)
  flushed_run.__name__, flushed_run.__doc__ = run.__name__, run.__doc__
  return flushed_run


class KernelThunk(Thunk):
  """Call a generated kernel: `fn(buffers, start, stop)` over [0, outer).

  `cost` (cost_model.KernelCost: bytes, flops, transcendentals of one whole call) feeds the
  cost model, which decides once, here, how many chunks the whole range is split into
  (`nchunks`; 1 = a plain call on the caller's core)."""
  kind = "kernel"

  def __init__(self, name: str, address: int, slots: Sequence, outer: int, splittable: bool,
               cost=None):
    self.name = name
    self.address = address
    self.fn = KERNEL_CFUNC(address)
    self.slots = tuple(slots)
    self.outer = outer
    self.splittable = splittable
    self.cost = cost
    self.nchunks = cost_model.plan_chunks(outer, splittable, cost)
    self._pool_run = threadpool.run
    self._array_type = ctypes.c_void_p * max(len(self.slots), 1)

  def buffers(self, frame: Frame):
    return frame.buffers(self)   # prebuilt per executable (runtime): see Frame

  def run(self, frame: Frame, start: int = 0, stop: int | None = None) -> None:
    if self.nchunks > 1 and start == 0 and stop is None:
      self._pool_run(self.address, self.buffers(frame), self.outer, self.nchunks)
      return
    stop = self.outer if stop is None else stop
    if stop > start:
      self.fn(self.buffers(frame), start, stop)


class DotThunk(Thunk):
  """dot via NumPy matmul on views: operands transposed to (batch, free, contracting) /
  (batch, contracting, free) as strided views, so BLAS gets transpose flags, not copies."""
  kind = "dot"

  def __init__(self, instr: hlo.Instr, lhs_slot, rhs_slot, out_slot):
    self.name = instr.name
    a = instr.attrs
    lhs, rhs = instr.operands
    self.lhs_shape, self.rhs_shape, self.out_shape = lhs.shape, rhs.shape, instr.shape
    self.slots = (lhs_slot, rhs_slot, out_slot)
    lb, rb = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lc, rc = tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lf = [d for d in range(lhs.shape.rank) if d not in lb + lc]
    rf = [d for d in range(rhs.shape.rank) if d not in rb + rc]
    prod = lambda dims, ds: int(np.prod([dims[d] for d in ds], dtype=np.int64))
    self.lperm, self.rperm = lb + tuple(lf) + lc, rb + rc + tuple(rf)
    self.B = prod(lhs.shape.dims, lb)
    self.M, self.K = prod(lhs.shape.dims, lf), prod(lhs.shape.dims, lc)
    self.N = prod(rhs.shape.dims, rf)
    out_dt = np.dtype(instr.dtype)
    # float16/bfloat16 accumulate in float32 and round once, as XLA's CPU dot does.
    self.compute = np.dtype(np.float32) if out_dt in (dtypes.float16, dtypes.bfloat16) \
        else out_dt
    # 2-D f32/f64 products: single-threaded BLAS calls split over ember's pool (blas_pool.py:
    # OpenBLAS's own threads stall on a loaded machine); None: NumPy's matmul below
    self.gemm = blas_pool.gemm_for(instr, out_dt)

  def operands(self, frame: Frame) -> tuple[np.ndarray, np.ndarray]:
    """The operands as (B, M, K) and (B, K, N) arrays of the compute dtype (views unless a
    reshape of a strided view or a dtype change needs a copy)."""
    l = frame.view(self.slots[0], self.lhs_shape)
    r = frame.view(self.slots[1], self.rhs_shape)
    l = l.transpose(self.lperm).reshape(self.B, self.M, self.K)
    r = r.transpose(self.rperm).reshape(self.B, self.K, self.N)
    if l.dtype != self.compute:
      l = l.astype(self.compute)
    if r.dtype != self.compute:
      r = r.astype(self.compute)
    return l, r

  def matmul(self, l: np.ndarray, r: np.ndarray, o3: np.ndarray) -> None:
    """o3 (b, m, n) = l (b, m, k) @ r (b, k, n), in the compute dtype, rounded once."""
    if o3.dtype == self.compute:
      if o3.shape[0] == 1:
        blas_pool.numpy_matmul(l[0], r[0], out=o3[0])
      else:
        blas_pool.numpy_matmul(l, r, out=o3)
    else:
      o3[...] = blas_pool.numpy_matmul(l, r)

  @flushing
  def run(self, frame: Frame) -> None:
    if self.gemm is not None:
      ptr = frame.ptr
      self.gemm.run(ptr(self.slots[0]), ptr(self.slots[1]), ptr(self.slots[2]))
      return
    l, r = self.operands(frame)
    o = frame.view(self.slots[2], self.out_shape)
    self.matmul(l, r, o.reshape(self.B, self.M, self.N))


class DotEpilogueThunk(Thunk):
  """A dot output fusion (kOutput) on the BLAS path: per block of units of the output's
  dimension 0, the dot's rows by BLAS (`dot.matmul`), then at once the epilogue kernel over
  the same units, reading those rows while they are in cache (split across cores by the
  thread pool through `shifted`, the epilogue called on [start + u0, stop + u0)). The rows
  are computed in place in the output when the dtypes agree (`dot_slot` is then the
  output's slot and the epilogue reads through the output pointer), else into a
  block-sized scratch array whose address, shifted back by the block's first row, is the
  epilogue's dot operand. `rows_per_unit` None (dimension 0 is an rhs dimension): one
  block."""
  kind = "dot"
  # Rows of C per block. Every BLAS call repacks all of B, so blocks small enough for the
  # epilogue to find them in L2 cost more than they save: measured on tanh(m @ m) @ m,
  # 2000^2 f32 (16 MB of C), 1 MB blocks +50% time, 4 MB +10%, 8 MB and one block equal
  # (the machine's L3 makes the epilogue's pass over C cheap). Large blocks bound the
  # scratch of a dtype-changing epilogue and keep each call in BLAS's efficient regime.
  BLOCK_BYTES = 32 << 20

  def __init__(self, name: str, dot: DotThunk, epilogue: KernelThunk, dot_arg: int,
               dot_slot, rows_per_unit: int | None, shifted: int):
    self.name, self.dot, self.epilogue = name, dot, epilogue
    self.dot_arg, self.dot_slot = dot_arg, dot_slot
    self.dtype = np.dtype(dot.out_shape.dtype)
    self.R = rows_per_unit
    self.shifted = shifted
    self._pool_run = threadpool.run
    outer = epilogue.outer
    row_bytes = dot.N * self.dtype.itemsize * (rows_per_unit or 1)
    self.units = outer if rows_per_unit is None else \
        max(1, min(outer, self.BLOCK_BYTES // max(row_bytes, 1)))
    cost = epilogue.cost
    if cost is not None and outer:         # the cost model sees one block's share
      cost = cost._replace(**{f: getattr(cost, f) * self.units / outer for f in cost._fields})
    self.nchunks = cost_model.plan_chunks(self.units, epilogue.splittable, cost)
    self._array_type = ctypes.c_void_p * (len(epilogue.slots) + 1)

  def _epilogue(self, ptrs: list, u0: int, u1: int) -> None:
    buffers = self._array_type(*ptrs, u0)
    n = min(self.nchunks, u1 - u0)
    if n > 1:
      self._pool_run(self.shifted, buffers, u1 - u0, n)
    elif u1 > u0:
      self.epilogue.fn(buffers, u0, u1)

  @flushing
  def run(self, frame: Frame) -> None:
    d = self.dot
    M, N, R, outer = d.M, d.N, self.R, self.epilogue.outer
    if not d.B * M * N:     # an empty dot: so is the output, read at the dot's indices
      return
    ptrs = [0 if s.kind == "scratch" else frame.ptr(s) for s in self.epilogue.slots]
    if self.dot_slot is not None:
      c = frame.view(self.dot_slot, d.out_shape).reshape(d.B * M, N)
    if d.gemm is not None and self.dot_slot is not None and (R is None or self.units >= outer):
      # one block computed in place: the pooled BLAS dot (blas_pool.py), then the epilogue
      d.gemm.run(frame.ptr(d.slots[0]), frame.ptr(d.slots[1]), frame.ptr(self.dot_slot))
      self._epilogue(ptrs, 0, outer)
      return
    l, r = d.operands(frame)
    if R is None:                            # one block: the whole dot, then the epilogue
      if self.dot_slot is None:
        c = np.empty((d.B * M, N), self.dtype)
        ptrs[self.dot_arg] = c.ctypes.data
      d.matmul(l, r, c.reshape(d.B, M, N))
      self._epilogue(ptrs, 0, outer)
      return
    units = self.units
    scratch = None if self.dot_slot is not None else \
        np.empty((min(units, outer) * R, N), self.dtype)
    for u0 in range(0, outer, units):
      u1 = min(u0 + units, outer)
      r0, r1 = u0 * R, u1 * R
      blk = c[r0:r1] if scratch is None else scratch[:r1 - r0]
      if R >= M:                             # whole batches
        d.matmul(l[r0 // M:r1 // M], r[r0 // M:r1 // M], blk.reshape(-1, M, N))
      else:                                  # rows of the only batch
        d.matmul(l[:, r0:r1], r, blk.reshape(1, r1 - r0, N))
      if scratch is not None:
        ptrs[self.dot_arg] = (blk.ctypes.data - r0 * N * self.dtype.itemsize) % (1 << 64)
      self._epilogue(ptrs, u0, u1)


class CopyThunk(Thunk):
  kind = "copy"

  def __init__(self, name: str, src, dst, shape: hlo.Shape):
    self.name, self.src, self.dst, self.shape = name, src, dst, shape

  def run(self, frame: Frame) -> None:
    if self.src != self.dst:
      np.copyto(frame.view(self.dst, self.shape), frame.view(self.src, self.shape))


class SortThunk(Thunk):
  """sort along one dimension in JAX's order (ascending, NaNs last, -0.0 == 0.0, stable),
  lexicographic over the first `num_keys` operands; a comparator of another form is run by
  the reference evaluator's vectorized merge sort."""
  kind = "sort"

  def __init__(self, instr: hlo.Instr, in_slots, out_slots, num_keys: int | None):
    self.name = instr.name
    self.dimension = instr.attrs["dimension"]
    self.in_shapes = [o.shape for o in instr.operands]
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)
    self.num_keys = num_keys
    self.instr = instr

  @flushing
  def run(self, frame: Frame) -> None:
    vals = [frame.view(s, sh) for s, sh in zip(self.in_slots, self.in_shapes)]
    if vals[0].ndim == 0 or vals[0].shape[self.dimension] <= 1:
      outs = vals
    elif self.num_keys is not None:
      outs = sorting.sort(*vals, dimension=self.dimension, is_stable=True,
                          num_keys=self.num_keys)
    else:
      out = hlo_eval.eval_instr(self.instr, vals)
      outs = list(out) if isinstance(out, tuple) else [out]
    for s, sh, v in zip(self.out_slots, self.in_shapes, outs):
      np.copyto(frame.view(s, sh), v)


class TopKThunk(Thunk):
  """top-k along the last (or `axis`) dimension: descending, stable, NaN largest."""
  kind = "top-k"

  def __init__(self, instr: hlo.Instr, in_slot, out_slots):
    self.name = instr.name
    x = instr.operands[0]
    self.in_shape = x.shape
    self.k = instr.attrs["k"]
    self.axis = instr.attrs.get("axis", x.shape.rank - 1)
    self.out_shapes = list(instr.shape.elements)
    self.in_slot, self.out_slots = in_slot, tuple(out_slots)

  @flushing
  def run(self, frame: Frame) -> None:
    x = frame.view(self.in_slot, self.in_shape)
    vals, idx = sorting.top_k(x, k=self.k, axis=self.axis, is_stable=True)
    np.copyto(frame.view(self.out_slots[0], self.out_shapes[0]), vals)
    np.copyto(frame.view(self.out_slots[1], self.out_shapes[1]), idx)


class ScatterThunk(Thunk):
  """Copy the operands into the outputs (unless already in place), then run the generated
  scatter loop over the updates."""
  kind = "scatter"

  def __init__(self, instr: hlo.Instr, kernel: KernelThunk, copies: Sequence[tuple]):
    self.name = instr.name
    self.kernel = kernel
    self.copies = tuple(copies)      # (src slot, dst slot, shape)

  def run(self, frame: Frame) -> None:
    for src, dst, shape in self.copies:
      if src != dst:
        np.copyto(frame.view(dst, shape), frame.view(src, shape))
    self.kernel.run(frame)


class Executable:
  """A compiled module: thunks, buffers, the JIT engine that owns the machine code.

  Attributes: `thunks` (list, in run order), `llvm_ir` (the generated LLVM IR text),
  `llvm_ir_optimized`, `asm` (assembly, computed on first use), `code_size` (bytes of
  machine code), `param_shapes`, `output_shapes`, `output_slots`, `assignment`.
  `tier_up_pending` is an Event while quick-tier code awaits its optimized version
  (tiering.py): the machine-code attributes wait for it, calls do not."""
  tier_up_pending = None

  def __init__(self, module: hlo.Module, assignment, thunks: list[Thunk], engine,
               llvm_ir: str, asm_fn: Callable[[], str], code_size: int,
               optimized_ir: str | None = None):
    flags_lib.num_cpu_devices()   # code for the CPU backend: it has started (its count fixed)
    self.module_name = module.name
    self.assignment = assignment
    self.thunks = thunks
    self.engine = engine          # keeps the machine code alive
    self.llvm_ir = llvm_ir
    self._asm_fn, self._asm = asm_fn, None
    self._llvm_ir_optimized = optimized_ir if optimized_ir is not None else llvm_ir
    self._code_size = code_size
    self._cache_payload = None
    self._retired: list = []      # engines of replaced code a concurrent call may still run
    entry = module.entry
    self.param_shapes = [p.shape for p in entry.params]
    root = entry.root
    outs = list(root.operands) if root.opcode == "tuple" else [root]
    self.output_shapes = [o.shape for o in outs]
    self.output_slots = list(assignment.outputs)
    self.temp_size = assignment.temp_size
    self.consts = [_c_order(np.asarray(c.attrs["value"], dtype=c.dtype).reshape(c.shape.dims))
                   for c in assignment.constants]
    self.const_ptrs = [c.ctypes.data for c in self.consts]
    self.donated = {s.index for s in self.output_slots if s.kind == "parameter"}
    # thunk name -> (its result slots, their shapes, whether the result is a tuple)
    self.defines: dict[str, tuple] = {}
    names = {t.name for t in thunks}
    for i in entry.instrs:
      if i.name in names:
        s = assignment.slot(i)
        tupled = type(s) is tuple
        shapes = list(i.shape.elements) if tupled else [i.shape]
        self.defines[i.name] = (list(s) if tupled else [s], shapes, tupled)
    self._init_runtime()

  def _init_runtime(self) -> None:
    """What every call needs, computed once: argument checks, output allocations, and the
    cached frame (its temp arena and prebuilt kernel pointer arrays) that a call reuses when
    no other call of this executable is running."""
    self._param_specs = [(np.dtype(s.dtype), tuple(s.dims)) for s in self.param_shapes]
    self._out_allocs = [(tuple(s.dims), np.dtype(s.dtype), s.nbytes) if slot.kind == "output"
                        else None for s, slot in zip(self.output_shapes, self.output_slots)]
    self._result_src = [(slot.kind == "output", slot.index) for slot in self.output_slots]
    self._all_fresh = all(slot.kind == "output" and slot.index == k
                          for k, slot in enumerate(self.output_slots))
    self.arg_bytes = sum(s.nbytes for s in self.param_shapes)
    self.out_bytes = sum(s.nbytes for s in self.output_shapes)
    self._frame_lock = threading.Lock()
    self._cached: Frame | None = None
    self._steps: list = []           # the cached frame's thunks or direct kernel calls
    self._param_patch: list = []     # (parameter, pointer array, position)
    self._temp_patch: list = []      # (pointer array, position, arena offset)
    self._out_patch: list = []       # (output, pointer array, position)
    self._lease_arena = False
    _executables.add(self)

  def _kernel_thunks(self):
    for t in self.thunks:
      if isinstance(t, KernelThunk):
        yield t
      elif isinstance(getattr(t, "kernel", None), KernelThunk):   # ScatterThunk
        yield t.kernel

  def _cached_frame(self) -> Frame:
    frame = self._cached
    if frame is None:
      # a small arena stays with the frame; a large one is leased from the pool per call
      # (idle memory is capped there, not held by every executable) and the temp entries
      # are rewritten when the lease lands elsewhere than the last one
      self._lease_arena = self.temp_size >= buffer_pool.POOL_MIN_BYTES
      arena, arena_ptr = buffer_pool.get_pool().empty_bytes(self.temp_size) \
          if self.temp_size and not self._lease_arena else (None, 0)
      prebuilt = {}
      for t in self._kernel_thunks():
        arr = (ctypes.c_void_p * max(len(t.slots), 1))()
        for pos, slot in enumerate(t.slots):
          k = slot.kind
          if k == "constant":
            arr[pos] = self.const_ptrs[slot.index]
          elif k == "temp":
            arr[pos] = arena_ptr + slot.offset
            self._temp_patch.append((arr, pos, slot.offset))
          elif k == "parameter":
            self._param_patch.append((slot.index, arr, pos))
          else:
            self._out_patch.append((slot.index, arr, pos))
        prebuilt[t] = arr
      # kernels are called directly with their arrays (consecutive ones in one native call)
      self._steps = _batch_direct_calls([
          (t.fn, prebuilt[t], t.outer, t.nchunks, t)
          if type(t) is KernelThunk and t.outer > 0 else t for t in self.thunks])
      frame = self._cached = Frame((), self.consts, self.const_ptrs, (), arena, (), (),
                                   arena_ptr, prebuilt)
    return frame

  def upgrade(self, thunks: list, engine, asm_fn, code_size: int, optimized_ir: str,
              cache_payload: dict) -> None:
    """Swap in optimized machine code (the tier-up). Waits for a call running on the
    cached frame; a call running on a frame of its own finishes on the old code, whose
    engine stays alive."""
    with self._frame_lock:
      self._retired.append(self.engine)
      self.thunks, self.engine = thunks, engine
      self._asm_fn, self._asm = asm_fn, None
      self._llvm_ir_optimized, self._code_size = optimized_ir, code_size
      self._cache_payload = cache_payload
      self._drop_cached_frame()

  def _drop_cached_frame(self) -> None:
    """Forget the cached frame and its step tables (rebuilt by the next call)."""
    self._cached, self._steps = None, []
    self._param_patch, self._temp_patch, self._out_patch = [], [], []

  def _machine_code_final(self) -> None:
    pending = self.tier_up_pending
    if pending is not None:
      pending.wait()

  @property
  def asm(self) -> str:
    self._machine_code_final()
    if self._asm is None:
      self._asm = self._asm_fn()
    return self._asm

  @property
  def llvm_ir_optimized(self) -> str:
    self._machine_code_final()
    return self._llvm_ir_optimized

  @property
  def code_size(self) -> int:
    self._machine_code_final()
    return self._code_size

  @property
  def cache_payload(self) -> dict | None:
    """What serialize_executable writes (the optimized code's, once it exists)."""
    self._machine_code_final()
    return self._cache_payload

  @cache_payload.setter
  def cache_payload(self, payload: dict) -> None:
    self._cache_payload = payload

  def _args(self, args: Sequence, ptrs=None) -> tuple[list, list]:
    """The arguments as C-order arrays of the parameters' types (a donated one writable:
    copied unless the caller handed over its buffer), and their addresses."""
    specs = self._param_specs
    if len(args) != len(specs):
      raise TypeError(f"{self.module_name} takes {len(specs)} arguments, got {len(args)}")
    arrays, addrs = list(args), [0] * len(specs)
    donated = self.donated
    for k, (dt, dims) in enumerate(specs):
      a = arrays[k]
      if type(a) is not np.ndarray:
        a = np.asarray(a)
      if a.dtype != dt or a.shape != dims:
        raise TypeError(f"{self.module_name}: argument {k} must be {dt.name}{list(dims)}, "
                        f"got {a.dtype.name}{list(a.shape)}")
      p = None if ptrs is None else ptrs[k]
      if not a.flags.c_contiguous or (donated and k in donated and not a.flags.writeable):
        a, p = np.array(a, order="C"), None
      arrays[k] = a
      addrs[k] = _data_ptr(a) if p is None else p
    return arrays, addrs

  def _outputs(self) -> tuple[list, list]:
    """Fresh output arrays (large ones from the buffer pool) and their addresses."""
    small = self._small_outs
    if small is None:
      small = self._small_outs = self._small_out_specs()
    outs, ptrs = [], []
    if small:   # the common case: every output a small np.empty
      for dims, dt in small:
        o = _empty(dims, dt)
        outs.append(o)
        ptrs.append(_addressof(_char_from_buffer(o)))
      return outs, ptrs
    pool = buffer_pool.get_pool()
    for spec in self._out_allocs:
      if spec is None:
        outs.append(None)
        ptrs.append(0)
        continue
      dims, dt, nbytes = spec
      if nbytes >= buffer_pool.POOL_MIN_BYTES:
        raw, p = pool.empty_bytes(nbytes)
        outs.append(raw.view(dt).reshape(dims))
      else:
        o = np.empty(dims, dt)
        outs.append(o)
        p = _data_ptr(o) if nbytes else 0
      ptrs.append(p)
    return outs, ptrs

  _small_outs = None   # [(dims, dtype)] when every output is fresh, small, non-empty and
                       # its address readable through the buffer protocol; else ()

  def _small_out_specs(self) -> list | tuple:
    specs = []
    for spec in self._out_allocs:
      if spec is None or not 0 < spec[2] < buffer_pool.POOL_MIN_BYTES:
        return ()
      try:   # some dtypes (ml_dtypes') export no buffer format: _data_ptr's slow path
        _addressof(_char_from_buffer(np.empty(1, spec[1])))
      except (TypeError, ValueError):
        return ()
      specs.append(spec[:2])
    return specs

  def _frame(self, args: Sequence):
    """A frame of its own (not the cached one): for concurrent calls and debugging runs."""
    arrays, addrs = self._args(args)
    outs, out_ptrs = self._outputs()
    arena, arena_ptr = buffer_pool.get_pool().empty_bytes(self.temp_size) \
        if self.temp_size else (None, 0)
    return Frame(arrays, self.consts, self.const_ptrs, outs, arena, addrs, out_ptrs, arena_ptr)

  def _results(self, frame: Frame) -> list[np.ndarray]:
    return [frame.outs[k] if s.kind == "output" else frame.args[s.index]
            for k, s in enumerate(self.output_slots)]

  def execute_ptrs(self, args: Sequence, ptrs=None) -> tuple[list, list]:
    """Run on one array per parameter (`ptrs`: their addresses where known, else None);
    returns one array per output and the outputs' addresses."""
    arrays, addrs = self._args(args, ptrs)
    outs, out_ptrs = self._outputs()
    self._run(arrays, addrs, outs, out_ptrs)
    if self._all_fresh:   # every output in a buffer of its own (no donated parameter)
      return outs, out_ptrs
    res, res_ptrs = [], []
    for is_out, i in self._result_src:
      if is_out:
        res.append(outs[i])
        res_ptrs.append(out_ptrs[i])
      else:
        res.append(arrays[i])
        res_ptrs.append(addrs[i])
    return res, res_ptrs

  def run_into(self, args: list, addrs: list, outs: list, out_ptrs: list) -> None:
    """Run on the arrays `args` (C-order, of the parameters' types, at `addrs`; unchecked),
    writing output k into `outs[k]` (at `out_ptrs[k]`; None and 0 where output k is
    computed into its donated parameter's array, which this writes in place): a loop body
    run over buffers its loop owns (control_flow.py), allocating no outputs."""
    self._run(args, addrs, outs, out_ptrs)

  def _run(self, arrays: list, addrs: list, outs: list, out_ptrs: list) -> None:
    """Run the thunks over these arguments and outputs, on the cached frame (or, while
    another call holds it, on a frame of its own)."""
    lock = self._frame_lock
    if not lock.acquire(False):   # another call of this executable is running: own frame
      arena, arena_ptr = buffer_pool.get_pool().empty_bytes(self.temp_size) \
          if self.temp_size else (None, 0)
      frame = Frame(arrays, self.consts, self.const_ptrs, outs, arena, addrs, out_ptrs,
                    arena_ptr)
      for t in self.thunks:
        t.run(frame)
    else:
      try:
        frame = self._cached or self._cached_frame()
      except BaseException:
        lock.release()
        raise
      try:
        frame.args, frame.arg_ptrs, frame.outs, frame.out_ptrs = arrays, addrs, outs, out_ptrs
        if self._lease_arena:
          frame.arena, aptr = buffer_pool.get_pool().empty_bytes(self.temp_size)
          if aptr != frame.arena_ptr:
            frame.arena_ptr = aptr
            for arr, pos, off in self._temp_patch:
              arr[pos] = aptr + off
        for k, arr, pos in self._param_patch:
          arr[pos] = addrs[k]
        for k, arr, pos in self._out_patch:
          arr[pos] = out_ptrs[k]
        for t in self._steps:
          if type(t) is tuple:
            if len(t) == 4 and _SEVERAL_DEVICES:   # a step table, maybe another device's
              threadpool.retarget(t[3])
            t[0](t[1], 0, t[2])
          else:
            t.run(frame)
      finally:  # the cached frame must not keep the call's arrays (or a leased arena) alive
        frame.args = frame.outs = frame.arg_ptrs = frame.out_ptrs = ()
        if self._lease_arena:
          frame.arena = None
        lock.release()

  def execute_direct(self, bufs: list) -> tuple[list, list] | None:
    """execute_ptrs for a jit cache hit, on the cached frame: `bufs` are the arguments'
    arrays, C-order, of the parameters' types, none donated (unchecked). One native call
    (_hit_prologue) patches the arguments' and the fresh outputs' addresses into the
    kernels' pointer arrays and makes the one direct kernel call when the executable is
    one; other steps run here after it. None (nothing ran) when this executable cannot run
    so (a leased arena, an output computed into a parameter, no prologue) or another call
    holds the cached frame."""
    direct = self._direct
    if direct is not None and direct[1] is None and direct[0] is self._cached:
      return None
    lock = self._frame_lock
    if not lock.acquire(False):
      return None
    try:
      if direct is None or direct[0] is not self._cached:   # first call, or a tier-up
        direct = self._direct = self._direct_init()
      frame, prologue, desc_addr, desc, specs, got, steps = direct
      if prologue is None:
        return None
      if specs is not None:   # the common case: every output a small np.empty
        outs = []
        for dims, dt in specs:
          outs.append(_empty(dims, dt))
      else:
        outs = self._outputs()[0]
      objs = bufs + outs
      desc[3] = id(objs)   # (objs lives until the call returns)
      prologue(desc_addr)
      n = len(outs)
      out_ptrs = [got[0]] if n == 1 else got[:n]   # (the slice: a fresh list)
      if steps:
        frame.args, frame.outs, frame.out_ptrs = bufs, outs, out_ptrs
        frame.arg_ptrs = got[n:]
        try:
          for t in steps:
            if type(t) is tuple:
              t[0](t[1], 0, t[2])
            else:
              t.run(frame)
        finally:  # the cached frame must not keep the call's arrays alive
          frame.args = frame.outs = frame.arg_ptrs = frame.out_ptrs = ()
      return outs, out_ptrs
    finally:
      lock.release()

  # (the cached frame it was made for, the prologue or None, its descriptor's address, the
  # descriptor, the outputs' (dims, dtype), the table the prologue writes the outputs' then
  # (when steps run here) the arguments' addresses into, the steps run after the prologue)
  _direct = None

  def _direct_init(self) -> tuple:
    """The hit path's descriptor for the cached frame (built now if needed; under the frame
    lock), when the call needs nothing else (no leased arena; every output a fresh buffer):
    its pointer-array entries, and its only step when that is a kernel call (or the step
    runner's), else the steps run after the prologue."""
    frame = self._cached or self._cached_frame()
    prologue = _hit_prologue()
    if prologue is None or self._lease_arena or not self._all_fresh:
      return frame, None, 0, None, (), None, ()
    steps = self._steps
    single = len(steps) == 1 and type(steps[0]) is tuple
    n_in, n_out = len(self._param_specs), len(self._out_allocs)
    got = (ctypes.c_int64 * (n_out + (0 if single else n_in) or 1))()
    word, at = ctypes.sizeof(ctypes.c_void_p), ctypes.addressof
    entries = [(at(arr) + pos * word, k) for k, arr, pos in self._param_patch]
    entries += [(at(arr) + pos * word, n_in + k) for k, arr, pos in self._out_patch]
    entries += [(at(got) + k * word, n_in + k) for k in range(n_out)]
    if not single:
      entries += [(at(got) + (n_out + k) * word, k) for k in range(n_in)]
    head = [0, 0, 0, 0, len(entries)]
    if single:
      fn, bufs, n = steps[0][:3]
      head[:3] = (ctypes.cast(fn, ctypes.c_void_p).value,
                  bufs if type(bufs) is int else at(bufs), n)
    desc = (ctypes.c_int64 * (5 + 2 * len(entries)))(
        *head, *[v for e in entries for v in e])
    allocs = self._out_allocs   # small ones: np.empty here; else from the pool
    specs = [a[:2] for a in allocs] \
        if all(a[2] < buffer_pool.POOL_MIN_BYTES for a in allocs) else None
    return frame, prologue[1], at(desc), desc, specs, got, () if single else steps

  def execute(self, args: Sequence) -> list[np.ndarray]:
    """Run on one array per parameter; returns one array per output."""
    return self.execute_ptrs(args)[0]

  def execute_keep_intermediates(self, args: Sequence) -> dict:
    """Run, keeping a copy of every thunk's result (instruction name -> array, or tuple of
    arrays for a tuple-shaped instruction) before later thunks reuse its buffer: the
    checked mode's way to find the first instruction that differs from the reference."""
    frame = self._frame(args)
    values = {}
    for t in self.thunks:
      t.run(frame)
      defined = self.defines.get(t.name)
      if defined:
        slots, shapes, tupled = defined
        vals = tuple(frame.view(s, sh).copy() for s, sh in zip(slots, shapes))
        values[t.name] = vals if tupled else vals[0]
    return values

  __call__ = execute


def _aligned_bytes(n: int, align: int = 64) -> np.ndarray:
  raw = np.empty(n + align, np.uint8)
  off = (-raw.ctypes.data) % align
  return raw[off:off + n]


_char_from_buffer, _addressof = ctypes.c_char.from_buffer, ctypes.addressof
_empty = np.empty   # (a module global: a test makes output allocation fail through it)
_executables: "weakref.WeakSet[Executable]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
  # a frame lock held by the parent's executor thread at fork would stay held here forever;
  # the cached frame's step tables name the parent's thread pool: rebuilt with the child's
  for ex in list(_executables):
    ex._frame_lock = threading.Lock()
    ex._drop_cached_frame()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _data_ptr(a: np.ndarray) -> int:
  """The address of an array's data: through ctypes' buffer protocol for writable arrays
  (a fraction of `a.ctypes.data`'s cost), else `a.ctypes.data`."""
  try:
    return _addressof(_char_from_buffer(a))
  except (TypeError, ValueError):  # read-only, empty, or not contiguous
    return a.ctypes.data

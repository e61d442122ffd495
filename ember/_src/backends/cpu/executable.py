"""The CPU executable: a list of thunks run in order over buffers from the buffer assignment.

    Executable.execute(args: list[np.ndarray]) -> list[np.ndarray]

Each call allocates the output arrays and one temp arena (`BufferAssignment.temp_size`
bytes), resolves every slot (`parameter` -> the caller's array, `constant` -> the module's
constant data, `output` -> a fresh output array, `temp` -> bytes of the arena) and runs the
thunks in schedule order (the entry computation's instruction order, which the buffer
assignment's liveness assumes):

- KernelThunk: a generated LLVM function called through ctypes (which releases the GIL)
  with its buffer pointers and the outer-loop range [0, n); `splittable` kernels accept any
  sub-range, so a thread pool may split them.
- DotThunk: NumPy matmul (BLAS for float/complex) on views of the buffers, with transposes
  as strided views (BLAS transpose flags) and batch dimensions as a batched matmul.
- SortThunk / TopKThunk: NumPy, in JAX's orders (the lax reference impls).
- ScatterThunk: copy operand -> output (unless in place), then a generated loop.
- CopyThunk: np.copyto.

Outputs are the fresh arrays (or, for donated parameters, the argument's array the output
was computed into). The thunk list is the seam for asynchronous dispatch and the profiler:
each thunk has a `name` (its instruction's) and a `kind`.
"""
from __future__ import annotations

import ctypes
from typing import Callable, Sequence

import numpy as np

from ember._src import dtypes, hlo
from ember._src.primitives import sorting

KERNEL_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def _c_order(a: np.ndarray) -> np.ndarray:
  return a if a.flags.c_contiguous else np.array(a, order="C")


def _bytes_of(a: np.ndarray) -> np.ndarray:
  """A C-contiguous array's memory as a flat uint8 view."""
  return a.reshape(-1).view(np.uint8) if a.ndim else a.reshape(1).view(np.uint8)


class Frame:
  """The buffers of one execution: argument arrays, constants, outputs, the temp arena."""
  __slots__ = ("args", "consts", "outs", "arena", "arena_ptr", "arg_ptrs", "out_ptrs",
               "const_ptrs")

  def __init__(self, args, consts, const_ptrs, outs, arena):
    self.args, self.consts, self.outs, self.arena = args, consts, outs, arena
    self.arg_ptrs = [a.ctypes.data for a in args]
    self.out_ptrs = [o.ctypes.data if o is not None else 0 for o in outs]
    self.const_ptrs = const_ptrs
    self.arena_ptr = arena.ctypes.data if arena is not None else 0

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
    if k == "temp":
      raw = self.arena[slot.offset:slot.offset + shape.nbytes]
    else:
      base = {"parameter": self.args, "output": self.outs, "constant": self.consts}[k][slot.index]
      if base.dtype == np.dtype(shape.dtype) and base.shape == tuple(shape.dims):
        return base
      raw = _bytes_of(base)[:shape.nbytes]
    return raw.view(shape.dtype).reshape(shape.dims)


class Thunk:
  """One step of an executable: `run(frame)` reads and writes buffers of the frame.
  `name` is its instruction's name (the profiler's label), `kind` says what it runs."""
  kind = "thunk"
  name: str

  def __repr__(self):
    return f"<{type(self).__name__} {self.name}>"


class KernelThunk(Thunk):
  """Call a generated kernel: `fn(buffers, start, stop)` over [0, outer)."""
  kind = "kernel"

  def __init__(self, name: str, address: int, slots: Sequence, outer: int, splittable: bool):
    self.name = name
    self.address = address
    self.fn = KERNEL_CFUNC(address)
    self.slots = tuple(slots)
    self.outer = outer
    self.splittable = splittable
    self._array_type = ctypes.c_void_p * max(len(self.slots), 1)

  def buffers(self, frame: Frame):
    return self._array_type(*[frame.ptr(s) for s in self.slots])

  def run(self, frame: Frame, start: int = 0, stop: int | None = None) -> None:
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

  def run(self, frame: Frame) -> None:
    l = frame.view(self.slots[0], self.lhs_shape)
    r = frame.view(self.slots[1], self.rhs_shape)
    o = frame.view(self.slots[2], self.out_shape)
    B, M, K, N = self.B, self.M, self.K, self.N
    l = l.transpose(self.lperm).reshape(B, M, K)
    r = r.transpose(self.rperm).reshape(B, K, N)
    if l.dtype != self.compute:
      l = l.astype(self.compute)
    if r.dtype != self.compute:
      r = r.astype(self.compute)
    o3 = o.reshape(B, M, N)
    if o3.dtype == self.compute:
      if B == 1:
        np.matmul(l[0], r[0], out=o3[0])
      else:
        np.matmul(l, r, out=o3)
    else:
      o3[...] = np.matmul(l, r)


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

  def run(self, frame: Frame) -> None:
    vals = [frame.view(s, sh) for s, sh in zip(self.in_slots, self.in_shapes)]
    if vals[0].ndim == 0 or vals[0].shape[self.dimension] <= 1:
      outs = vals
    elif self.num_keys is not None:
      outs = sorting._sort_impl(*vals, dimension=self.dimension, is_stable=True,
                                num_keys=self.num_keys)
    else:
      from ember._src import hlo_eval
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

  def run(self, frame: Frame) -> None:
    x = frame.view(self.in_slot, self.in_shape)
    vals, idx = sorting._top_k_impl(x, k=self.k, axis=self.axis, is_stable=True)
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
  machine code), `param_shapes`, `output_shapes`, `output_slots`, `assignment`."""

  def __init__(self, module: hlo.Module, assignment, thunks: list[Thunk], engine,
               llvm_ir: str, asm_fn: Callable[[], str], code_size: int,
               optimized_ir: str | None = None):
    self.module_name = module.name
    self.assignment = assignment
    self.thunks = thunks
    self.engine = engine          # keeps the machine code alive
    self.llvm_ir = llvm_ir
    self._asm_fn, self._asm = asm_fn, None
    self.llvm_ir_optimized = optimized_ir if optimized_ir is not None else llvm_ir
    self.code_size = code_size
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

  @property
  def asm(self) -> str:
    if self._asm is None:
      self._asm = self._asm_fn()
    return self._asm

  def _arg(self, k: int, a) -> np.ndarray:
    shape = self.param_shapes[k]
    a = np.asarray(a)
    if a.dtype != np.dtype(shape.dtype) or a.shape != tuple(shape.dims):
      raise TypeError(f"{self.module_name}: argument {k} must be "
                      f"{np.dtype(shape.dtype).name}{list(shape.dims)}, got "
                      f"{a.dtype.name}{list(a.shape)}")
    a = _c_order(a)
    if k in self.donated and not a.flags.writeable:
      a = a.copy()
    return a

  def _frame(self, args: Sequence):
    if len(args) != len(self.param_shapes):
      raise TypeError(f"{self.module_name} takes {len(self.param_shapes)} arguments, got "
                      f"{len(args)}")
    arrays = [self._arg(k, a) for k, a in enumerate(args)]
    outs = [np.empty(s.dims, s.dtype) if slot.kind == "output" else None
            for s, slot in zip(self.output_shapes, self.output_slots)]
    arena = _aligned_bytes(self.temp_size) if self.temp_size else None
    return Frame(arrays, self.consts, self.const_ptrs, outs, arena)

  def _results(self, frame: Frame) -> list[np.ndarray]:
    return [frame.outs[k] if s.kind == "output" else frame.args[s.index]
            for k, s in enumerate(self.output_slots)]

  def execute(self, args: Sequence) -> list[np.ndarray]:
    """Run on one array per parameter; returns one array per output."""
    frame = self._frame(args)
    for t in self.thunks:
      t.run(frame)
    return self._results(frame)

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

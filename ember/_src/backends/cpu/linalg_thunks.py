"""Custom calls of the CPU backend: LAPACK-style decompositions (`lapack_spotrf_ffi`,
`lapack_dgesdd_ffi`, ...; see reference/lapack.py for each target's semantics).

Real Cholesky (`potrf`) and right-side triangular solves (`trsm`) of order <=
linalg_kernels.MAX_N, LU (`getrf`) and left-side solves of order <=
linalg_kernels.LU_MAX_N, and `lu_pivots_to_permutation` on int32 pivots, run as generated
kernels (linalg_kernels.py: they join their neighbours' native call). Larger or complex
ones run as native thunks: one call of the LAPACK routine per matrix, found in the
OpenBLAS NumPy ships (blas_pool.openblas_library: full LAPACK under `scipy_` names),
through ctypes with every argument but the buffer addresses built once. LAPACK is
column-major and ember's buffers row-major, so a row-major matrix is its transpose to LAPACK:

- potrf (potf2, unblocked, for small matrices): the lower factor L of A (reading A's lower triangle) is, column-major, the upper
  factor U = L^T of A^T (reading A^T's upper triangle): `potrf('U')` in place, no copy.
- trsm: op(A) X = B is X^T op(A)^T = B^T: the other side and the other triangle with the
  same op and diagonal, m and n exchanged, in place on B's copy, no transpose.
- getrf: row pivoting does not survive a transpose, so A is transposed into a scratch
  column-major copy, factored, and transposed back.

Results equal the reference routines' up to rounding (LAPACK's blocked order; pivots the
same but where two candidates tie after rounding); failures read as the reference reports
them (potrf: info 1 and a NaN factor). The other targets, and every target when no OpenBLAS
with LAPACK is loaded (or `EMBER_BLAS_POOL=0`), run `NumpyCustomCallThunk`: the target's
NumPy routine on copies of the operands. Nothing is generated or serialized for a custom
call: the persistent cache replays the plan from the instruction, whose target, shapes and
backend config are all a thunk needs.

`add_to_plan(plan, instr)` is the compiler's hook (backends/cpu/compiler.py).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import blas_pool, cost_model, linalg_kernels
from ember._src.backends.cpu.executable import Frame, KernelThunk, Thunk, flushing
from ember._src.reference import lapack


class NumpyCustomCallThunk(Thunk):
  """Read the operands, run the target's NumPy routine, write each result."""
  kind = "custom-call"

  def __init__(self, instr: hlo.Instr, in_slots, out_slots):
    self.name = instr.name
    self.target = instr.attrs["target"]
    self.fn = lapack.CUSTOM_CALL_TARGETS[self.target]
    self.config = instr.attrs.get("backend_config", ())
    self.in_shapes = [o.shape for o in instr.operands]
    self.out_shapes = _result_shapes(instr)
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)

  @flushing
  def run(self, frame: Frame) -> None:
    # copies: a result may be computed into a buffer that also holds an operand
    vals = [np.array(frame.view(s, sh)) for s, sh in zip(self.in_slots, self.in_shapes)]
    outs = self.fn(self.config, *vals)
    for s, sh, v in zip(self.out_slots, self.out_shapes, outs):
      np.copyto(frame.view(s, sh), np.asarray(v).astype(sh.dtype, copy=False))




def _result_shapes(instr: hlo.Instr) -> list:
  s = instr.shape
  return list(s.elements) if isinstance(s, hlo.TupleShape) else [s]


# --------------------------------------------------------------------------------------
# LAPACK through ctypes
# --------------------------------------------------------------------------------------

@functools.cache
def _lapack():
  """(symbol lookup `routine name -> ctypes function`, the LAPACK integer ctypes type), or
  None without an OpenBLAS that has LAPACK."""
  found = blas_pool.openblas_library()
  if found is None or blas_pool.thread_count_functions() is None:
    return None
  lib, prefix, suffix, int_ty = found
  symbol = lambda name: f"{prefix}{name}_{suffix}"    # Fortran's trailing underscore
  if not all(hasattr(lib, symbol(r)) for r in ("dpotrf", "dpotf2", "dtrsm", "dgetrf")):
    return None
  int_t = ctypes.c_int64 if int_ty == "i64" else ctypes.c_int32

  @functools.cache
  def routine(name: str):
    fn = getattr(lib, symbol(name))
    fn.restype = None
    return fn
  return routine, int_t


def _matrices(shape: hlo.Shape) -> int:
  return int(np.prod(shape.dims[:-2], dtype=np.int64))


class _LapackThunk(Thunk):
  """Shared parts: the routine, the integer type, OpenBLAS on one thread while it runs
  (its own threads stall on a loaded machine, as blas_pool.py explains)."""
  kind = "custom-call"

  def __init__(self, instr: hlo.Instr, routine: str, in_slots, out_slots):
    self.name = instr.name
    self.target = instr.attrs["target"]
    self.config = dict(instr.attrs.get("backend_config", ()))
    lookup, self.int_t = _lapack()
    self.fn = lookup(routine)
    self.in_shapes = [o.shape for o in instr.operands]
    self.out_shapes = _result_shapes(instr)
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)
    self._threads = blas_pool.thread_count_functions()

  def _int(self, v: int):
    return ctypes.byref(self.int_t(v))

  @flushing
  def run(self, frame: Frame) -> None:
    blas_pool._single_threaded_blas(*self._threads)
    try:
      self._run(frame)
    finally:
      blas_pool._restore_blas_threads()


def _char(c: str):
  return ctypes.byref(ctypes.c_char(c.encode()))


_ONE = ctypes.c_size_t(1)   # the hidden length of a Fortran CHARACTER argument


class PotrfThunk(_LapackThunk):
  """Cholesky factors in place in the result buffer; the other triangle zeroed; a matrix
  that is not positive definite: info 1, factor NaN (as reference/lapack.potrf)."""

  # up to this order the unblocked potf2 (measured 15 us against potrf's 28-37 at n = 50,
  # 26 against 40 at 64, float32): potrf's blocking only pays for larger matrices
  UNBLOCKED_MAX_N = 64

  def __init__(self, instr, in_slots, out_slots):
    n = instr.operands[0].shape.dims[-1]
    routine = instr.attrs["target"][7] + ("potf2" if n <= self.UNBLOCKED_MAX_N else "potrf")
    super().__init__(instr, routine, in_slots, out_slots)
    shape = self.in_shapes[0]
    lower = self.config.get("uplo", 76) == 76
    self.count, self.n = _matrices(shape), n
    self.stride = n * n * shape.dtype.itemsize
    self.nbytes = shape.nbytes
    self.info = self.int_t(0)
    # row-major lower = column-major upper
    self.args = (_char("U" if lower else "L"), self._int(n), None, self._int(max(1, n)),
                 ctypes.byref(self.info), _ONE)
    r, c = np.indices((n, n))
    self.other_triangle = (r < c) if lower else (r > c)

  def _run(self, frame: Frame) -> None:
    src, dst = frame.ptr(self.in_slots[0]), frame.ptr(self.out_slots[0])
    if self.nbytes == 0:
      return
    if src != dst:
      ctypes.memmove(dst, src, self.nbytes)
    uplo, n, _, lda, info, one = self.args
    fn, stride = self.fn, self.stride
    infos = frame.view(self.out_slots[1], self.out_shapes[1]).reshape(-1)
    for i in range(self.count):
      fn(uplo, n, ctypes.c_void_p(dst + i * stride), lda, info, one)
      infos[i] = self.info.value != 0
    f = frame.view(self.out_slots[0], self.out_shapes[0])
    np.copyto(f, 0, where=self.other_triangle)
    if infos.any():
      f.reshape((-1, self.n, self.n))[infos != 0] = np.nan


class TrsmThunk(_LapackThunk):
  """op(A) X = B (or X op(A) = B) solved in place in the result buffer, a copy of B."""

  def __init__(self, instr, in_slots, out_slots, a_overlaps_result: bool):
    super().__init__(instr, instr.attrs["target"][7:-4], in_slots, out_slots)
    cfg = self.config
    a, b = self.in_shapes
    k, (m, n) = a.dims[-1], b.dims[-2:]
    self.count = _matrices(b)
    self.a_stride, self.b_stride = k * k * a.dtype.itemsize, m * n * b.dtype.itemsize
    self.a_shape, self.nbytes = a, b.nbytes
    self.copy_a = a_overlaps_result
    self.alpha = np.ones(1, b.dtype)
    left, lower = cfg["side"] == 76, cfg["uplo"] == 76
    # X^T op(A)^T = B^T: the other side, the other triangle, the same op and diagonal
    self.args = (_char("R" if left else "L"), _char("U" if lower else "L"),
                 _char(chr(cfg["trans_x"])), _char(chr(cfg["diag"])),
                 self._int(n), self._int(m), ctypes.c_void_p(self.alpha.ctypes.data))
    self.lds = (self._int(max(1, k)), self._int(max(1, n)))

  def _run(self, frame: Frame) -> None:
    if self.nbytes == 0:
      return
    a_slot, b_slot = self.in_slots
    a, b, x = frame.ptr(a_slot), frame.ptr(b_slot), frame.ptr(self.out_slots[0])
    keep = None
    if self.copy_a:    # the result's buffer holds A: solve against a copy of it
      keep = np.array(frame.view(a_slot, self.a_shape))
      a = keep.ctypes.data
    if b != x:
      ctypes.memmove(x, b, self.nbytes)
    fn, args, (lda, ldb) = self.fn, self.args, self.lds
    for i in range(self.count):
      fn(*args, ctypes.c_void_p(a + i * self.a_stride), lda,
         ctypes.c_void_p(x + i * self.b_stride), ldb, _ONE, _ONE, _ONE, _ONE)
    del keep


class GetrfThunk(_LapackThunk):
  """LU with partial pivoting of each matrix's column-major copy, transposed back."""

  def __init__(self, instr, in_slots, out_slots):
    super().__init__(instr, instr.attrs["target"][7:-4], in_slots, out_slots)
    a = self.in_shapes[0]
    m, n = a.dims[-2:]
    self.count, self.m, self.n, self.k = _matrices(a), m, n, min(m, n)
    self.info = self.int_t(0)
    self.args = (self._int(m), self._int(n))
    self.lda = self._int(max(1, m))
    self.int_dtype = np.dtype(self.int_t)

  def _run(self, frame: Frame) -> None:
    a_shape, (lu_shape, piv_shape, info_shape) = self.in_shapes[0], self.out_shapes
    lu_ = frame.view(self.out_slots[0], lu_shape)
    piv = frame.view(self.out_slots[1], piv_shape).reshape(self.count, self.k)
    infos = frame.view(self.out_slots[2], info_shape).reshape(-1)
    if a_shape.nbytes == 0:
      infos[...] = 0
      return
    a = frame.view(self.in_slots[0], a_shape).reshape(self.count, self.m, self.n)
    col = np.ascontiguousarray(np.swapaxes(a, -1, -2))       # (count, n, m): column-major
    ipiv = np.empty((self.count, max(self.k, 1)), self.int_dtype)
    base, stride = col.ctypes.data, col.strides[0]
    pbase, pstride = ipiv.ctypes.data, ipiv.strides[0]
    fn, (m, n), lda, info = self.fn, self.args, self.lda, self.info
    for i in range(self.count):
      fn(m, n, ctypes.c_void_p(base + i * stride), lda, ctypes.c_void_p(pbase + i * pstride),
         ctypes.byref(info))
      infos[i] = info.value
    np.copyto(lu_.reshape(self.count, self.m, self.n), np.swapaxes(col, -1, -2))
    piv[...] = ipiv[:, :self.k]


class PivotsToPermutationThunk(Thunk):
  """The permutation of row swaps: a Python loop per matrix for few swaps in all (each
  NumPy step of the vectorized reference costs more than the swap it does), else the
  reference's loop over swaps vectorized across the batch."""
  kind = "custom-call"
  _LOOP_MAX_SWAPS = 4096

  def __init__(self, instr, in_slots, out_slots):
    self.name = instr.name
    self.in_shape, self.out_shape = instr.operands[0].shape, instr.shape
    self.size = dict(instr.attrs["backend_config"])["permutation_size"]
    self.in_slots, self.out_slots = tuple(in_slots), tuple(out_slots)

  def run(self, frame: Frame) -> None:
    pivots = frame.view(self.in_slots[0], self.in_shape)
    out = frame.view(self.out_slots[0], self.out_shape)
    if pivots.size > self._LOOP_MAX_SWAPS or self.size == 0:
      out[...] = lapack.pivots_to_permutation(np.array(pivots), self.size)
      return
    flat = out.reshape(-1, self.size)
    for row, piv in zip(flat, pivots.reshape(-1, pivots.shape[-1]).tolist()):
      perm = list(range(self.size))
      for j, p in enumerate(piv):
        perm[j], perm[p] = perm[p], perm[j]
      row[...] = perm


_NATIVE = {"potrf": PotrfThunk, "trsm": TrsmThunk, "getrf": GetrfThunk}


def _native_kind(instr: hlo.Instr) -> str | None:
  """'potrf' / 'trsm' / 'getrf' / 'p2p' when the instruction runs as a native thunk."""
  target = instr.attrs.get("target", "")
  if target == "lu_pivots_to_permutation":
    return "p2p"
  if not (target.startswith("lapack_") and target.endswith("_ffi")) or _lapack() is None:
    return None
  name = target[8:-4]
  return name if name in _NATIVE and target[7] in "sdcz" else None


def supported(instr: hlo.Instr) -> bool:
  return instr.attrs.get("target") in lapack.CUSTOM_CALL_TARGETS


def _generated_ok(kind: str, ins: list, outs: list) -> bool:
  """The generated kernels read the first operand (A) while writing the outputs, and copy
  the last operand into the first output unless it is that output's buffer: they need
  the outputs apart from the other operands and from each other. The permutation's
  kernel reads the pivots while writing: they must be apart."""
  if kind == "p2p":
    return not ins[0].overlaps(outs[0])
  *reads, copied = ins
  if any(r.overlaps(o) for r in reads for o in outs):
    return False
  first, *rest = outs
  if any(copied.overlaps(o) or first.overlaps(o) for o in rest):
    return False
  return not copied.overlaps(first) or copied == first


def _add_generated(plan, instr: hlo.Instr, kind: str, slots: list) -> None:
  """A potrf/getrf/trsm/p2p custom call as a generated kernel (linalg_kernels.py)."""
  emit = {"potrf": linalg_kernels.emit_potrf_kernel, "trsm": linalg_kernels.emit_trsm_kernel,
          "getrf": linalg_kernels.emit_getrf_kernel, "p2p": linalg_kernels.emit_p2p_kernel}
  key = ("linalg", instr.attrs["target"], tuple(sorted(dict(instr.attrs.get("backend_config", ()))
                                                       .items())),
         tuple(tuple(o.shape.dims) for o in instr.operands))
  info = plan._dot_kernel(instr.name, lambda m: emit[kind](m, instr.name, instr), key)
  cost = cost_model.KernelCost(sum(o.shape.nbytes for o in instr.operands) * 2,
                               linalg_kernels.flops(instr), 0.0)
  plan.pending.append(lambda addr: KernelThunk(
      instr.name, addr(info.name), slots, info.outer, info.splittable, cost))


def add_to_plan(plan, instr: hlo.Instr) -> None:
  """Record the thunk of a custom call in the compiler's thunk plan: a generated kernel
  (linalg_kernels.kind), else a LAPACK thunk, else the NumPy reference's."""
  ins = [plan.slot(o) for o in instr.operands]
  s = plan.slot(instr)
  outs = list(s) if type(s) is tuple else [s]
  generated = linalg_kernels.kind(instr)
  if generated and _generated_ok(generated, ins, outs):
    _add_generated(plan, instr, generated, ins + outs)
    return
  kind = _native_kind(instr)
  if kind == "p2p":
    make = lambda: PivotsToPermutationThunk(instr, ins, outs)
  elif kind == "trsm":
    overlap = ins[0].overlaps(outs[0])
    make = lambda: TrsmThunk(instr, ins, outs, overlap)
  elif kind is not None:
    make = lambda: _NATIVE[kind](instr, ins, outs)
  else:
    make = lambda: NumpyCustomCallThunk(instr, ins, outs)
  plan.pending.append(lambda addr: make())

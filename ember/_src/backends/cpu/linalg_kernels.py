"""Generated kernels for small Cholesky and LU factorizations and triangular solves (custom
calls `lapack_{s,d}potrf_ffi` and right-side `lapack_{s,d}trsm_ffi` of order <= MAX_N,
`lapack_{s,d}getrf_ffi` and left-side trsm of order <= LU_MAX_N), and for
`lu_pivots_to_permutation`.

Through LAPACK (linalg_thunks.py) each such call is a Python thunk between the module's
kernels: ~2 us of ctypes and thread-count switching around a few us of arithmetic, and it
splits the executable's run of kernels into separate native calls. As generated kernels
(the kernel ABI `void name(i8** buffers, i64 start, i64 stop)` over the batch's matrices)
they join their neighbours' batched native call (executable._batch_direct_calls), so a
Gaussian-process gradient runs as one native call.

The loops live in one body function per routine and dtype (sizes, strides and flags are
arguments), compiled once per process like the dot bodies (dot_kernels.compile_shared_ir:
the runtime cache on disk keeps the object); a module's kernel only gathers its pointers
and calls the body. Row-major throughout, inner loops along the contiguous dimension
(LLVM's loop vectorizer turns them into vector code):

* potrf (right-looking, in panels of POTRF_PANEL columns (lower) or rows (upper)): the
  input's triangle copied, the other zeroed, in one masked-vector pass; per panel its
  vectors of the factor made contiguous (upper: the factor's own rows; lower: the
  columns transposed into a stack buffer and back), per step k the pivot and the elements
  below (right of) it brought up to date by the panel's earlier vectors, the pivot's
  square root, the elements divided by it, W at a time (left-looking inside the panel);
  then one pass over the trailing triangle applies the panel's POTRF_PANEL rank-1 terms
  `A[i, j] -= c[i] * c[j]` in order, W columns at a time with the panel's chunks in
  registers. Every element sees the unblocked algorithm's fmas in its order: the same
  bits as one pass per column. A pivot that is not > 0 (or NaN) stops it: info 1 and a
  NaN factor, as reference/lapack.potrf.
* trsm, left side, op(A) X = B: JAM rows of X at a time in solving order, each row's
  columns in vector registers (groups of 4 W-lane chunks, masked at the end): the rows
  solved before them subtracted in solving order (each solved chunk loaded once for the
  JAM rows: JAM independent fma chains), then each row of the block from the earlier ones
  and divided by the diagonal, stored once; a single right-hand side the same way,
  SINGLE_JAM rows at a time in scalar registers (a column of a many-column solve has the
  same bits). Right side, X op(A) = B: blocks of X's rows transposed into a stack tile
  and solved there on the left side.
* getrf (right-looking, in panels of GETRF_PANEL columns): per column j the first row of
  largest |a[i, j]| (NaN counting as infinity, as reference/lapack.getrf) is the pivot; the
  rows are swapped whole (contiguous, row-major), the pivot row brought up to date by the
  panel's earlier columns (it is U's row now), the column below divided by the pivot (not
  when it is 0: info names the first such column, the factor goes on as LAPACK's) and, in
  the same pass over the rows, the next column updated by the panel's columns so far and
  searched for its pivot (left-looking inside the panel). Then one pass over the trailing
  rows applies the panel's GETRF_PANEL rank-1 updates, `A[i, c] -= A[i, j] * A[j, c]`
  for j in the panel in order, W columns at a time in masked vectors with U's chunks in
  registers, the next panel's pivot search in the same pass. Every element sees the
  unblocked algorithm's fmas in its order: the same bits, a fraction of the passes.
* lu_pivots_to_permutation: the identity permuted by the row swaps, one row per pivot
  vector; a swap whose pivot lies outside [0, size) is skipped (never a wild write).

Each multiply-subtract is one fused multiply-add and the diagonal divides (LAPACK
multiplies by its reciprocal): results equal the reference's up to rounding, within the
8·n·eps tolerance tests state; bits depend on the shapes only.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import denormals, dot_kernels, host, llvm_jit, vector_dots
from ember._src.backends.cpu.codegen import abi, ir_types
from ember._src.backends.cpu.codegen import transpose as codegen_transpose
from ember._src.backends.cpu.codegen.abi import KERNEL_TYPE
from ember._src.backends.cpu.codegen.ir_types import F32, F64, I1, I32, I64, PTR, VOID

MAX_N = 64          # the order up to which potrf and right-side trsm are generated (stack tiles)
# getrf and left-side trsm need no tile: generated up to this order. Measured on the 2-core
# AVX-512 VM against the single-threaded LAPACK thunks (us, getrf / left trsm of n columns):
# n = 100: 36 / 13 vs 61 / 44; 256: 193 / 162 vs 595 / 372; 384: 500 / 520 vs 953 / 973;
# getrf (rank-8 trailing passes, past L2) loses from ~1024 (29 ms vs 18)
LU_MAX_N = 256
JAM = 4             # rows a triangular solve solves at once (independent fma chains)
SINGLE_JAM = 8      # the same with one right-hand side (scalar chains)
GETRF_PANEL = 8     # columns per getrf panel (one pass of the trailing rows each)
POTRF_PANEL = 8     # columns (rows) per potrf panel (one pass of the trailing triangle each)

_T = {np.dtype(np.float32): F32, np.dtype(np.float64): F64}
# (src, dst, info, n, upper, m0, m1)
POTRF_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR] + [I64] * 4)
# (a, b, x, rows, cols, k, a_row_stride, a_col_stride, left, forward, unit, m0, m1)
TRSM_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR] + [I64] * 10)
# (src, lu, pivots, info, m, n, m0, m1)
GETRF_TYPE = ir.FunctionType(VOID, [PTR] * 4 + [I64] * 4)
# (pivots, permutation, k, size, m0, m1)
P2P_TYPE = ir.FunctionType(VOID, [PTR] * 2 + [I64] * 4)
_TYPES = {"potrf": POTRF_TYPE, "trsm": TRSM_TYPE, "getrf": GETRF_TYPE, "p2p": P2P_TYPE}


def _int32(*shapes) -> bool:
  return all(np.dtype(s.dtype) == np.int32 for s in shapes)


def kind(instr: hlo.Instr) -> str | None:
  """'potrf', 'getrf' or 'trsm' when the custom call runs as a generated kernel: a real
  float routine whose matrices have order <= MAX_N (getrf, left-side trsm: LU_MAX_N) and
  int32 info, pivots; 'p2p' for lu_pivots_to_permutation on int32 pivots."""
  target = instr.attrs.get("target", "")
  if target == "lu_pivots_to_permutation":
    return "p2p" if _int32(instr.operands[0].shape, instr.shape) else None
  if not (target.startswith("lapack_") and target.endswith("_ffi")) or target[7] not in "sd":
    return None
  name = target[8:-4]
  a = instr.operands[0].shape
  if name not in ("potrf", "trsm", "getrf") or a.rank < 2 or max(a.dims[-2:]) > _max_n(instr):
    return None
  if np.dtype(a.dtype) not in _T:
    return None
  if name == "potrf" and not _int32(instr.shape.elements[1]):
    return None
  if name == "getrf" and not _int32(*instr.shape.elements[1:]):
    return None
  if name == "trsm" and instr.operands[0].shape.dims[:-2] != instr.operands[1].shape.dims[:-2]:
    return None
  return name


def _max_n(instr: hlo.Instr) -> int:
  """The largest order generated for this call: potrf and right-side trsm use stack tiles
  of MAX_N; getrf and left-side trsm none."""
  name = instr.attrs["target"][8:-4]
  if name == "getrf" or (name == "trsm" and dict(instr.attrs["backend_config"])["side"] == 76):
    return LU_MAX_N
  return MAX_N


def _symbol(routine: str, dtype) -> str:
  """A body's symbol: the routine, the dtype, the number of arguments."""
  return f"ember_{routine}_body_{np.dtype(dtype).name}_a{len(_TYPES[routine].args)}"


def _matrices(shape: hlo.Shape) -> int:
  return int(np.prod(shape.dims[:-2], dtype=np.int64))


def _entry(module: ir.Module, name: str, body, args, buffers: int = 3) -> None:
  """`void name(buffers, start, stop)`: the body on matrices [start, stop) with the buffers'
  pointers first, then `args` (i64 constants), with XLA:CPU's denormal modes (denormals.py)."""
  fn = ir.Function(module, KERNEL_TYPE, name)
  fn.attributes.add("nounwind")
  b = ir.IRBuilder(fn.append_basic_block("entry"))
  modes = denormals.emit_flush_on(b)
  bufs, start, stop = fn.args
  ptrs = [b.load(b.gep(bufs, [ir.Constant(I64, k)], inbounds=True, source_etype=PTR), typ=PTR)
          for k in range(buffers)]
  b.call(body, ptrs + [ir.Constant(I64, int(v)) for v in args] + [start, stop])
  denormals.emit_restore(b, modes)
  b.ret_void()


def emit_potrf_kernel(module: ir.Module, name: str, instr: hlo.Instr) -> abi.KernelInfo:
  """The kernel of a potrf custom call; buffers: the operand, the factor, the info."""
  a = instr.operands[0].shape
  lower = dict(instr.attrs.get("backend_config", ())).get("uplo", 76) == 76
  body = dot_kernels._shared_body(module, _symbol("potrf", a.dtype), POTRF_TYPE)
  _entry(module, name, body, (a.dims[-1], not lower))
  return abi.KernelInfo(name, _matrices(a), True)


def trsm_args(instr: hlo.Instr) -> tuple:
  """The body's (rows, cols, k, a_row_stride, a_col_stride, left, forward, unit) of a trsm
  custom call: op(A)[i, j] = A[i * a_row_stride + j * a_col_stride]; `forward`: the order
  that solves op(A) (left: lower-effective; right: upper-effective) first to last."""
  cfg = dict(instr.attrs["backend_config"])
  (m, n), k = instr.operands[1].shape.dims[-2:], instr.operands[0].shape.dims[-1]
  left, lower = cfg["side"] == 76, cfg["uplo"] == 76
  trans = cfg["trans_x"] != 78
  strides = (1, k) if trans else (k, 1)
  lower_op = lower != trans
  return (m, n, k, *strides, left, lower_op if left else not lower_op, cfg["diag"] == 85)


def emit_trsm_kernel(module: ir.Module, name: str, instr: hlo.Instr) -> abi.KernelInfo:
  """The kernel of a trsm custom call; buffers: A, B, the result X."""
  b = instr.operands[1].shape
  body = dot_kernels._shared_body(module, _symbol("trsm", b.dtype), TRSM_TYPE)
  _entry(module, name, body, trsm_args(instr))
  return abi.KernelInfo(name, _matrices(b), True)


def emit_getrf_kernel(module: ir.Module, name: str, instr: hlo.Instr) -> abi.KernelInfo:
  """The kernel of a getrf custom call; buffers: the operand, LU, the pivots, the info."""
  a = instr.operands[0].shape
  body = dot_kernels._shared_body(module, _symbol("getrf", a.dtype), GETRF_TYPE)
  _entry(module, name, body, a.dims[-2:], buffers=4)
  return abi.KernelInfo(name, _matrices(a), True)


def emit_p2p_kernel(module: ir.Module, name: str, instr: hlo.Instr) -> abi.KernelInfo:
  """The kernel of lu_pivots_to_permutation; buffers: the pivots, the permutation."""
  piv, perm = instr.operands[0].shape, instr.shape
  body = dot_kernels._shared_body(module, _symbol("p2p", np.int32), P2P_TYPE)
  _entry(module, name, body, (piv.dims[-1], perm.dims[-1]), buffers=2)
  return abi.KernelInfo(name, int(np.prod(piv.dims[:-1], dtype=np.int64)), True)


# --------------------------------------------------------------------------------------
# The bodies
# --------------------------------------------------------------------------------------

class _E(vector_dots.DotEmitter):
  def __init__(self, b: ir.IRBuilder, T):
    super().__init__(b)
    self.T = T

  def at(self, p, idx):
    return self.b.gep(p, [idx], inbounds=True, source_etype=self.T)

  def ld(self, p, idx):
    return self.b.load(self.at(p, idx), typ=self.T)

  def st(self, v, p, idx):
    self.b.store(v, self.at(p, idx))

  def fnma(self, a, x, y):
    """y - a * x, one rounding."""
    return self.intrinsic("llvm.fma", self.T, [self.b.fneg(a), x, y])

  # W-lane vectors of T (the host's widest), masked to a row's first n elements
  @property
  def W(self) -> int:
    return host.vector_lanes(np.float32 if self.T == F32 else np.float64)

  @property
  def VT(self):
    return ir.VectorType(self.T, self.W)

  def _vsuf(self, lanes: int | None = None) -> str:
    return f"v{lanes or self.W}{ir_types.float_suffix(self.T)}"

  def lanes_below(self, c, n, lanes: int | None = None):
    """The mask of lanes c, c + 1, ... that are < n (W lanes unless `lanes`)."""
    i64v = ir.VectorType(I64, lanes or self.W)
    return self.b.icmp_signed("<", self.b.add(self.splat(c, i64v),
                                              ir.Constant(i64v, list(range(i64v.count)))),
                              self.splat(n, i64v))

  def vload(self, p, c, mask):
    """p[c:c + lanes] where mask (zero elsewhere, no access there: a masked load does not
    fault); as many lanes as the mask."""
    w = mask.type.count
    vt = ir.VectorType(self.T, w)
    align = ir.Constant(I32, 4 if self.T == F32 else 8)
    return self.intrinsic(f"llvm.masked.load.{self._vsuf(w)}.p0", vt,
                          [self.at(p, c), align, mask, ir.Constant(vt, [0.0] * w)])

  def vstore(self, v, p, c, mask):
    align = ir.Constant(I32, 4 if self.T == F32 else 8)
    self.intrinsic(f"llvm.masked.store.{self._vsuf(mask.type.count)}.p0", VOID,
                   [v, self.at(p, c), align, mask])

  def vfnma(self, a, x, y):
    """y - splat(a) * x, one rounding per lane."""
    return self.intrinsic(f"llvm.fma.{self._vsuf()}", self.VT,
                          [self.splat(self.b.fneg(a), self.VT), x, y])

  def each(self, lo, hi, body) -> None:
    """`for i in [lo, hi): body(i)`, nothing carried."""
    def step(i, _):
      body(i)
      return []
    self.loop(lo, hi, [], step)

  def copy(self, src, dst, count):
    """dst[:count] = src[:count] unless they are the same buffer (else disjoint)."""
    b = self.b
    with b.if_then(b.icmp_unsigned("!=", src, dst)):
      self.each(self.i64(0), count, lambda i: self.st(self.ld(src, i), dst, i))


def _function(module: ir.Module, name: str, fty: ir.FunctionType, T):
  fn = ir.Function(module, fty, name)
  fn.attributes.add("nounwind")
  b = ir.IRBuilder(fn.append_basic_block("entry"))
  return fn, _E(b, T)


def _define_potrf(module: ir.Module, dtype, name: str) -> None:
  T = _T[np.dtype(dtype)]
  fn, e = _function(module, name, POTRF_TYPE, T)
  b = e.b
  src, dst, info, n, upper, m0, m1 = fn.args
  P, W = POTRF_PANEL, e.W
  # lower: the panel's columns of the factor, contiguous (the s-th at s * MAX_N, indexed
  # by the row); upper: the panel's rows are contiguous already (the factor's own)
  columns = b.alloca(T, e.i64(P * MAX_N))
  columns.align = 64
  ok_slot = b.alloca(I1)
  is_upper = b.icmp_signed("!=", upper, e.i64(0))
  nn = b.mul(n, n)
  zero, nan = ir.Constant(T, 0.0), ir.Constant(T, float("nan"))
  one = e.i64(1)
  i64v = ir.VectorType(I64, W)
  iota = ir.Constant(i64v, list(range(W)))

  def chunks(lo, hi, body):
    """body(c) for c = lo, lo + W, ... < hi."""
    e.each(e.i64(0), b.sdiv(b.add(b.sub(hi, lo), e.i64(W - 1)), e.i64(W)),
           lambda q: body(b.add(lo, b.mul(q, e.i64(W)))))

  def triangle(c, i):
    """The lanes of columns c, c + 1, ... in row i's part of the triangle: lower [0, i],
    upper [i, n)."""
    cols = b.add(e.splat(c, i64v), iota)
    lo = e.splat(b.select(is_upper, i, e.i64(0)), i64v)
    hi = e.splat(b.select(is_upper, n, b.add(i, one)), i64v)
    return b.and_(b.icmp_signed(">=", cols, lo), b.icmp_signed("<", cols, hi))

  def copy_triangle(s, d):
    """d = the triangle of s, zero in the other (s may be d)."""
    def row(i):
      rs, rd = e.at(s, b.mul(i, n)), e.at(d, b.mul(i, n))
      chunks(e.i64(0), n, lambda c: e.vstore(e.vload(rs, c, triangle(c, i)), rd, c,
                                            e.lanes_below(c, n)))
    e.each(e.i64(0), n, row)

  def move_columns(d, j0, count, load):
    """Lower: columns[s][i] = d[i, j0 + s] for s < count, i >= j0 (the other way when
    not `load`; above the diagonal: the zeros there, unchanged), P x P blocks transposed
    in registers."""
    in_panel = e.lanes_below(e.i64(0), count, P)
    none = ir.Constant(in_panel.type, [0] * P)

    def block(q):
      i0 = b.add(j0, b.mul(q, e.i64(P)))
      below_n = e.lanes_below(i0, n, P)
      rows, masks = [], []
      for r in range(P):          # (a row past the last: none of its lanes)
        valid = b.icmp_signed("<", b.add(i0, e.i64(r)), n)
        rows.append(e.at(d, b.mul(b.select(valid, b.add(i0, e.i64(r)), i0), n)))
        masks.append(b.select(valid, in_panel, none))
      vecs = [e.at(columns, e.i64(s * MAX_N)) for s in range(P)]
      if load:
        t = codegen_transpose._transpose_lanes(b, [e.vload(r, j0, m) for r, m in zip(rows, masks)])
        for v, p in zip(t, vecs):
          e.vstore(v, p, i0, below_n)
      else:
        t = codegen_transpose._transpose_lanes(b, [e.vload(p, i0, below_n) for p in vecs])
        for v, r, m in zip(t, rows, masks):
          e.vstore(v, r, j0, m)
    e.each(e.i64(0), b.sdiv(b.add(b.sub(n, j0), e.i64(P - 1)), e.i64(P)), block)

  def step(vec, k, t):
    """Column (row) k, the panel's t-th: its pivot brought up to date by the panel's
    earlier ones, its square root; the elements below (right of) it brought up to date
    the same way and divided by it, W at a time. A pivot not > 0 (or NaN) stops it."""
    pk = vec(t)
    us = [e.ld(vec(s), k) for s in range(t)]
    akk = e.ld(pk, k)
    for u in us:
      akk = e.fnma(u, u, akk)
    good = b.fcmp_ordered(">", akk, zero)
    b.store(good, ok_slot)
    with b.if_then(good):
      r = e.intrinsic("llvm.sqrt", T, [akk])
      e.st(r, pk, k)
      rv = e.splat(r, e.VT)

      def chunk(i):
        mask = e.lanes_below(i, n)
        v = e.vload(pk, i, mask)
        for s, u in enumerate(us):
          v = e.vfnma(u, e.vload(vec(s), i, mask), v)
        e.vstore(b.fdiv(v, rv), pk, i, mask)
      chunks(b.add(k, one), n, chunk)

  def trailing(d, vec, jn):
    """The trailing triangle (rows and columns >= jn) minus the panel's P rank-1 terms in
    order (one fma each: the unblocked order), W columns at a time with the panel's
    chunks in registers across the rows."""
    def chunk(c):
      us = [e.vload(vec(s), c, e.lanes_below(c, n)) for s in range(P)]

      def row(i):
        r, mask = e.at(d, b.mul(i, n)), triangle(c, i)
        v = e.vload(r, c, mask)
        for s, u in enumerate(us):
          v = e.vfnma(e.ld(vec(s), i), u, v)
        e.vstore(v, r, c, mask)
      end = b.add(c, e.i64(W))                 # upper: the rows [jn, c + W), lower [c, n)
      e.each(b.select(is_upper, jn, c),
             b.select(b.and_(is_upper, b.icmp_signed("<", end, n)), end, n), row)
    chunks(jn, n, chunk)

  def panel(d, q):
    j0 = b.mul(q, e.i64(P))
    left = b.sub(n, j0)
    count = b.select(b.icmp_signed("<", left, e.i64(P)), left, e.i64(P))
    base = b.select(is_upper, e.at(d, b.mul(j0, n)), columns)
    stride = b.select(is_upper, n, e.i64(MAX_N))
    vec = lambda s: e.at(base, b.mul(e.i64(s), stride))
    with b.if_then(b.not_(is_upper)):
      move_columns(d, j0, count, True)
    for t in range(P):
      k = b.add(j0, e.i64(t))
      with b.if_then(b.and_(b.load(ok_slot, typ=I1), b.icmp_signed("<", k, n))):
        step(vec, k, t)
    with b.if_then(b.not_(is_upper)):
      move_columns(d, j0, count, False)
    jn = b.add(j0, e.i64(P))
    with b.if_then(b.and_(b.load(ok_slot, typ=I1), b.icmp_signed("<", jn, n))):
      trailing(d, vec, jn)

  def matrix(mi, _):
    d = e.at(dst, b.mul(mi, nn))
    copy_triangle(e.at(src, b.mul(mi, nn)), d)
    b.store(ir.Constant(I1, 1), ok_slot)

    def next_panel(q):
      with b.if_then(b.load(ok_slot, typ=I1)):
        panel(d, q)
    e.each(e.i64(0), b.sdiv(b.add(n, e.i64(P - 1)), e.i64(P)), next_panel)
    ok = b.load(ok_slot, typ=I1)
    with b.if_then(b.not_(ok)):
      e.each(e.i64(0), nn, lambda i: e.st(nan, d, i))
    b.store(b.select(ok, ir.Constant(I32, 0), ir.Constant(I32, 1)),
            b.gep(info, [mi], inbounds=True, source_etype=I32))
    return []
  e.loop(m0, m1, [], matrix)
  b.ret_void()


def _define_trsm(module: ir.Module, dtype, name: str) -> None:
  T = _T[np.dtype(dtype)]
  fn, e = _function(module, name, TRSM_TYPE, T)
  b = e.b
  a, bb, x, rows, cols, k, sai, saj, left, forward, unit, m0, m1 = fn.args
  fwd = b.icmp_signed("!=", forward, e.i64(0))
  has_diag = b.icmp_signed("==", unit, e.i64(0))
  one = e.i64(1)
  # the t-th index in solving order of [0, size)
  nth = lambda t, size: b.select(fwd, t, b.sub(b.sub(size, one), t))

  def left_side(A, X, rows, cols, sai, saj):
    opa = lambda A, i, j: e.ld(A, b.add(b.mul(i, sai), b.mul(j, saj)))
    diag = lambda A, i: b.select(has_diag, opa(A, i, i), ir.Constant(T, 1.0))  # (x / 1 is x)

    def solve_single(t0, R):
      """One right-hand side, the R rows t0, t0 + 1, ... in solving order: R independent
      fma chains in scalar registers over the rows solved before them (in solving order),
      then each row of the block from the earlier ones, divided by the diagonal."""
      rs = [nth(b.add(t0, e.i64(r)), rows) for r in range(R)]

      def eliminate(t, acc):
        j = nth(t, rows)
        xj = e.ld(X, j)
        return [e.fnma(opa(A, i, j), xj, a) for i, a in zip(rs, acc)]
      acc = e.loop(e.i64(0), t0, [e.ld(X, i) for i in rs], eliminate)
      solved = []
      for r, v in enumerate(acc):
        for q in range(r):
          v = e.fnma(opa(A, rs[r], rs[q]), solved[q], v)
        solved.append(b.fdiv(v, diag(A, rs[r])))
        e.st(solved[r], X, rs[r])

    def in_blocks(R, solve):
      """solve(t0, R) for the blocks of R rows in solving order, then solve(t, 1)."""
      blocks = b.sdiv(rows, e.i64(R))
      e.each(e.i64(0), blocks, lambda q: solve(b.mul(q, e.i64(R)), R))
      e.each(b.mul(blocks, e.i64(R)), rows, lambda t: solve(t, 1))

    with b.if_else(b.icmp_signed("==", cols, one)) as (single, many):
      with single:
        in_blocks(SINGLE_JAM, solve_single)
      with many:
        in_blocks(JAM, lambda t0, R: solve_rows(A, X, t0, R, rows, cols, opa, diag))

  def solve_rows(A, X, t0, R, rows, cols, opa, diag):
    """The R rows t0, t0 + 1, ... in solving order, G * W columns at a time in R * G
    vector registers: the rows solved before them subtracted in solving order (one load
    of each solved row's chunks for all R, and R independent fma chains: the latency
    overlaps), then each row of the block from the later ones, divided by the diagonal,
    stored once. Groups of 4 chunks, then single ones for the rest."""
    rs = [nth(b.add(t0, e.i64(r)), rows) for r in range(R)]
    xrs = [e.at(X, b.mul(i, cols)) for i in rs]
    ds = [e.splat(diag(A, i), e.VT) for i in rs]

    def group(c0, G):
      cs = [b.add(c0, e.i64(g * e.W)) for g in range(G)]
      masks = [e.lanes_below(c, cols) for c in cs]

      def eliminate(t, acc):
        xj = e.at(X, b.mul(nth(t, rows), cols))
        xs = [e.vload(xj, c, mk) for c, mk in zip(cs, masks)]
        aij = [opa(A, i, nth(t, rows)) for i in rs]
        return [e.vfnma(aij[r], xs[g], acc[r * G + g]) for r in range(R) for g in range(G)]
      acc = e.loop(e.i64(0), t0, [e.vload(xr, c, mk) for xr in xrs
                                  for c, mk in zip(cs, masks)], eliminate)
      solved = []
      for r in range(R):
        v = acc[r * G:(r + 1) * G]
        for q in range(r):
          aiq = opa(A, rs[r], rs[q])
          v = [e.vfnma(aiq, x, y) for x, y in zip(solved[q], v)]
        solved.append([b.fdiv(y, ds[r]) for y in v])
        for c, mk, y in zip(cs, masks, solved[r]):
          e.vstore(y, xrs[r], c, mk)
    wide = e.i64(4 * e.W)
    full = b.sdiv(cols, wide)
    e.each(e.i64(0), full, lambda q: group(b.mul(q, wide), 4))
    rest0 = b.mul(full, wide)
    e.each(e.i64(0), b.sdiv(b.add(b.sub(cols, rest0), e.i64(e.W - 1)), e.i64(e.W)),
           lambda q: group(b.add(rest0, b.mul(q, e.i64(e.W))), 1))

  def right_side(A, X):
    """X op(A) = B as op(A)^T X^T = B^T: blocks of up to MAX_N rows of X transposed into a
    stack tile, solved there on the left side, transposed back."""
    tile = b.alloca(T, e.i64(MAX_N * MAX_N))
    tile.align = 64

    def block(q):
      r0 = b.mul(q, e.i64(MAX_N))
      r = b.select(b.icmp_signed("<", b.add(r0, e.i64(MAX_N)), rows), e.i64(MAX_N),
                   b.sub(rows, r0))
      xs = e.at(X, b.mul(r0, cols))
      transpose(xs, tile, r, cols)
      left_side(A, tile, cols, r, saj, sai)
      transpose(tile, xs, cols, r)
    e.each(e.i64(0), b.sdiv(b.add(rows, e.i64(MAX_N - 1)), e.i64(MAX_N)), block)

  def transpose(src, dst, nr, nc):
    """dst (nc x nr) = src (nr x nc)^T."""
    e.each(e.i64(0), nc, lambda j: e.each(e.i64(0), nr, lambda i: e.st(
        e.ld(src, b.add(b.mul(i, nc), j)), dst, b.add(b.mul(j, nr), i))))

  def matrix(mi, _):
    A = e.at(a, b.mul(mi, b.mul(k, k)))
    B, X = (e.at(p, b.mul(mi, b.mul(rows, cols))) for p in (bb, x))
    e.copy(B, X, b.mul(rows, cols))
    with b.if_else(b.icmp_signed("!=", left, e.i64(0))) as (is_left, is_right):
      with is_left:
        left_side(A, X, rows, cols, sai, saj)
      with is_right:
        right_side(A, X)
    return []
  e.loop(m0, m1, [], matrix)
  b.ret_void()


def _bodies():
  """(routine, dtype, define) of every body."""
  for dt in _T:
    for routine, define in (("potrf", _define_potrf), ("trsm", _define_trsm),
                            ("getrf", _define_getrf)):
      yield routine, dt, define
  yield "p2p", np.dtype(np.int32), _define_p2p


def _ensure_bodies(code: bytes) -> None:
  """Compile (or load) the bodies an object file (or IR) refers to, once per process."""
  for routine, dt, define in _bodies():
    name = _symbol(routine, dt)
    if name.encode() in code:
      dot_kernels.compile_shared_ir(name, dot_kernels._body_ir(define, dt, name),
                                    (__file__, codegen_transpose.__file__, vector_dots.__file__))


def _define_getrf(module: ir.Module, dtype, name: str) -> None:
  T = _T[np.dtype(dtype)]
  fn, e = _function(module, name, GETRF_TYPE, T)
  b = e.b
  src, lu, piv, info, m, n, m0, m1 = fn.args
  k = b.select(b.icmp_signed("<", m, n), m, n)
  mn = b.mul(m, n)
  zero, one_t, inf = ir.Constant(T, 0.0), ir.Constant(T, 1.0), ir.Constant(T, float("inf"))
  i32 = lambda v: b.trunc(v, I32)
  one = e.i64(1)
  W = host.vector_lanes(dtype)
  VT = ir.VectorType(T, W)
  i64v = ir.VectorType(I64, W)
  iota = ir.Constant(i64v, list(range(W)))
  vsuf = f"v{W}{ir_types.float_suffix(T)}"
  align = ir.Constant(I32, np.dtype(dtype).itemsize)
  # the status (info) and the next column's pivot row, across the panel's guarded steps
  status_slot, pivot_slot = b.alloca(I32), b.alloca(I64)

  def better(x, i, best):
    """(largest magnitude, its first row) with x of row i considered (NaN as infinity:
    LAPACK's pivot search stops at a NaN)."""
    v = e.intrinsic("llvm.fabs", T, [x])
    v = b.select(b.fcmp_unordered("uno", v, v), inf, v)
    gt = b.fcmp_ordered(">", v, best[0])
    return [b.select(gt, v, best[0]), b.select(gt, i, best[1])]

  def swap_rows(d, j, p):
    rj, rp = e.at(d, b.mul(j, n)), e.at(d, b.mul(p, n))

    def swap(c):
      x, y = e.ld(rj, c), e.ld(rp, c)
      e.st(y, rj, c)
      e.st(x, rp, c)
    with b.if_then(b.icmp_signed("!=", p, j)):
      e.each(e.i64(0), n, swap)

  def update(d, lo, hi, c0, j0, nu, search):
    """Rows [lo, hi), columns [c0, n): row[c] -= row[j0 + s] * U[j0 + s, c] for s < nu in
    order (one fma each: the unblocked order, so the same bits), W columns at a time with
    U's chunks in registers across the rows. `search`: returns the row of largest
    |row[c0]| (the next pivot, from the register: no reload after a masked store)."""
    def chunk(c, best):
      mask = b.icmp_signed("<", b.add(e.splat(c, i64v), iota), e.splat(n, i64v))
      load = lambda p: e.intrinsic(f"llvm.masked.load.{vsuf}.p0", VT,
                                   [e.at(p, c), align, mask, ir.Constant(VT, [0.0] * W)])
      us = [load(e.at(d, b.mul(b.add(j0, e.i64(s)), n))) for s in range(nu)]

      def row(i, carried):
        r = e.at(d, b.mul(i, n))
        v = load(r)
        for s, u in enumerate(us):
          v = e.intrinsic(f"llvm.fma.{vsuf}", VT,
                          [e.splat(b.fneg(e.ld(r, b.add(j0, e.i64(s)))), VT), u, v])
        e.intrinsic(f"llvm.masked.store.{vsuf}.p0", VOID, [v, e.at(r, c), align, mask])
        return better(b.extract_element(v, ir.Constant(I32, 0)), i, carried) if carried else []
      return e.loop(lo, hi, best, row)
    start = c0
    if search:
      found = chunk(c0, [ir.Constant(T, -1.0), lo])[1]
      start = b.add(c0, e.i64(W))
    chunks = b.sdiv(b.add(b.sub(n, start), e.i64(W - 1)), e.i64(W))
    e.each(e.i64(0), chunks, lambda q: chunk(b.add(start, b.mul(q, e.i64(W))), []))
    return found if search else None

  def step(d, pv, j0, t):
    """Column j = j0 + t of the panel [j0, j0 + GETRF_PANEL): the swap, the pivot row
    brought up to date (it becomes U's row), the column below divided by the pivot and
    (unless the panel's last) the next column of the rows below updated by the panel's
    columns so far, with its pivot search (left-looking within the panel)."""
    j = b.add(j0, e.i64(t))
    j1 = b.add(j, one)
    p = b.load(pivot_slot, typ=I64)
    b.store(i32(b.add(p, one)), b.gep(pv, [j], inbounds=True, source_etype=I32))
    swap_rows(d, j, p)
    if t:
      update(d, j, j1, j1, j0, t, False)
    pivot = e.ld(d, b.add(b.mul(j, n), j))
    nonzero = b.fcmp_unordered("!=", pivot, zero)
    status = b.load(status_slot, typ=I32)
    first = b.and_(b.not_(nonzero), b.icmp_signed("==", status, ir.Constant(I32, 0)))
    b.store(b.select(first, i32(j1), status), status_slot)
    has_next = b.icmp_signed("<", j1, n)
    nxt = b.select(has_next, j1, j)           # (an index inside the row when there is none)
    us = [e.ld(d, b.add(b.mul(b.add(j0, e.i64(s)), n), nxt)) for s in range(t + 1)]

    def row(i, best):
      r = e.at(d, b.mul(i, n))
      l = e.ld(r, j)
      l = b.select(nonzero, b.fdiv(l, b.select(nonzero, pivot, one_t)), l)
      e.st(l, r, j)
      if t == GETRF_PANEL - 1:
        return []
      x = e.ld(r, nxt)
      for s in range(t):
        x = e.fnma(e.ld(r, b.add(j0, e.i64(s))), us[s], x)
      x = e.fnma(l, us[t], x)
      with b.if_then(has_next):
        e.st(x, r, nxt)
      return better(x, i, best)
    best = e.loop(j1, m, [] if t == GETRF_PANEL - 1 else [ir.Constant(T, -1.0), j1], row)
    if best:
      b.store(best[1], pivot_slot)

  def matrix(mi, _):
    s, d = e.at(src, b.mul(mi, mn)), e.at(lu, b.mul(mi, mn))
    pv = b.gep(piv, [b.mul(mi, k)], inbounds=True, source_etype=I32)
    e.copy(s, d, mn)
    rows = b.select(b.icmp_signed(">", k, e.i64(0)), m, e.i64(0))    # (no column: none)
    b.store(e.loop(e.i64(0), rows, [ir.Constant(T, -1.0), e.i64(0)],
                   lambda i, best: better(e.ld(d, b.mul(i, n)), i, best))[1], pivot_slot)
    b.store(ir.Constant(I32, 0), status_slot)

    def panel(q):
      j0 = b.mul(q, e.i64(GETRF_PANEL))
      for t in range(GETRF_PANEL):
        with b.if_then(b.icmp_signed("<", b.add(j0, e.i64(t)), k)):
          step(d, pv, j0, t)
      # the trailing rows and columns (none after a partial panel, the last), with the
      # next panel's first pivot search
      jn = b.add(j0, e.i64(GETRF_PANEL))
      with b.if_then(b.icmp_signed("<=", jn, k)):
        b.store(update(d, jn, m, jn, j0, GETRF_PANEL, True), pivot_slot)
    e.each(e.i64(0), b.sdiv(b.add(k, e.i64(GETRF_PANEL - 1)), e.i64(GETRF_PANEL)), panel)
    b.store(b.load(status_slot, typ=I32), b.gep(info, [mi], inbounds=True, source_etype=I32))
    return []
  e.loop(m0, m1, [], matrix)
  b.ret_void()


def _define_p2p(module: ir.Module, dtype, name: str) -> None:
  fn, e = _function(module, name, P2P_TYPE, I32)
  b = e.b
  piv, perm, k, size, m0, m1 = fn.args

  def row(r, _):
    pv, out = e.at(piv, b.mul(r, k)), e.at(perm, b.mul(r, size))
    e.each(e.i64(0), size, lambda i: e.st(b.trunc(i, I32), out, i))

    def swap(j):
      p = b.sext(e.ld(pv, j), I64)
      inside = b.and_(b.icmp_signed(">=", p, e.i64(0)),
                      b.and_(b.icmp_signed("<", p, size), b.icmp_signed("<", j, size)))
      with b.if_then(inside):
        x, y = e.ld(out, j), e.ld(out, p)
        e.st(y, out, j)
        e.st(x, out, p)
    e.each(e.i64(0), k, swap)
    return []
  e.loop(m0, m1, [], row)
  b.ret_void()


llvm_jit.symbol_providers.append(lambda obj, undefined: _ensure_bodies(obj))


def flops(instr: hlo.Instr) -> float:
  """Multiply-adds and divides of the whole call (the cost model's estimate)."""
  a = instr.operands[0].shape
  n = a.dims[-1]
  if instr.attrs["target"] == "lu_pivots_to_permutation":
    return 0.0
  if instr.attrs["target"].endswith("potrf_ffi"):
    return _matrices(a) * (n ** 3 / 3 + n * n)
  if instr.attrs["target"].endswith("getrf_ffi"):
    m, k = a.dims[-2], min(a.dims[-2:])
    return _matrices(a) * (m * n * k - (m + n) * k * k / 2 + k ** 3 / 3)
  m, c, k = trsm_args(instr)[:3]
  return _matrices(a) * m * c * k

"""The dot bodies of a vector operand (dot_kernels.py runs them): the matrix-vector body
(`define_gemv_body`: per row a vector dot product along k, GEMV_ROWS rows sharing the
vector's loads) and the vector-matrix body (`define_gevm_body`: the matrix's rows streamed in
memory order into a block of C on the stack, GEVM_ROWS at a time), each a shared runtime
function compiled once per machine (dot_kernels.ensure_shared_bodies), and `DotEmitter`, the
IR helpers every dot body and kernel emits with.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir

from ember._src.backends.cpu import host
from ember._src.backends.cpu.codegen import ir_helpers, ir_types
from ember._src.backends.cpu.codegen.ir_types import I32, I64, PTR, VOID


class DotEmitter(ir_helpers.IRHelpers):
  """The IR helpers every dot body and kernel emits with."""

  def __init__(self, b: ir.IRBuilder):
    self.b = b
    self._i64_cache = {}

  def gep(self, p, idx, t):
    return self.b.gep(p, [idx], source_etype=t)

  def splat(self, v, vt):
    b = self.b
    w = vt.count
    one = b.insert_element(ir.Constant(vt, ir.Undefined), v, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, ir.Undefined),
                            ir.Constant(ir.VectorType(I32, w), [0] * w))

  def store_vector(self, v, p, align: int):
    """`store <W x T> v, ptr p` (llvmlite's IRBuilder.store rejects a vector stored through
    the element-typed pointer a GEP returns; the IR itself has opaque pointers)."""
    st = ir.instructions.StoreInstr(self.b.block, v, p)
    st.align = align
    self.b._insert(st)


# The matrix-vector body's arguments after (A, x, C, r0, r1): A's rows per batch and the
# contracting length, then the strides A's batches and rows and x's batches are apart.
_GEMV_PARAMS = ("M", "K", "sab", "sam", "sxb")
GEMV_ROWS = 8     # rows of A per group of the matrix-vector body
GEMV_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64, I64] + [I64] * len(_GEMV_PARAMS))

# The vector-matrix body's arguments after (x, B, C, c0, c1): the contracting length, then
# the strides of x's elements and of B's rows.
_GEVM_PARAMS = ("K", "sxk", "sbk")
GEVM_ROWS = 4            # rows of B per pass over a block of C
GEVM_BLOCK_BYTES = 4096  # a block of C, accumulated on the stack: stays in L1
GEVM_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, I64, I64] + [I64] * len(_GEVM_PARAMS))


def gemv_symbol(dtype) -> str:
  """The shared matrix-vector body's symbol (`define_gemv_body`)."""
  return (f"ember_gemv_body_{np.dtype(dtype).name}_v{host.vector_bytes()}_r{GEMV_ROWS}"
          f"_a{len(_GEMV_PARAMS)}")


def gevm_symbol(dtype) -> str:
  """The shared vector-matrix body's symbol (`define_gevm_body`)."""
  return (f"ember_gevm_body_{np.dtype(dtype).name}_v{host.vector_bytes()}_r{GEVM_ROWS}"
          f"_b{GEVM_BLOCK_BYTES}_a{len(_GEVM_PARAMS)}")


def _vector_body(module: ir.Module, fty: ir.FunctionType, name: str, dtype) -> tuple:
  """A vector body's function (its three pointer arguments noalias) and what both bodies
  emit with: (function, element type, lanes, vector type, element bytes, the vector fma
  intrinsic, the vector intrinsics' suffix, builder, DotEmitter, nsw multiply, minimum,
  the zero vector, the i64 vector type)."""
  key = np.dtype(dtype)
  fn = ir.Function(module, fty, name)
  fn.attributes.add("nounwind")
  for a in fn.args[:3]:
    a.add_attribute("noalias")
  T, W = ir_types.mem_type(key), host.vector_lanes(key)
  VT = ir.VectorType(T, W)
  vsuf = f"v{W}{ir_types.float_suffix(T)}"
  b = ir.IRBuilder(fn.append_basic_block("entry"))
  return (fn, T, W, VT, key.itemsize, f"llvm.fmuladd.{vsuf}", vsuf, b, DotEmitter(b),
          lambda x, y: b.mul(x, y, flags=("nsw",)),
          lambda x, y: b.select(b.icmp_signed("<", x, y), x, y),
          ir.Constant(VT, [0.0] * W), ir.VectorType(I64, W))


def define_gemv_body(module: ir.Module, dtype, name: str):
  """`void gemv(A, x, C, r0, r1, M, K, sab, sam, sxb)`: C[r] = sum_k A[r, k] x[k] for the
  rows [r0, r1) of the whole (batch*M) output, A's rows and x contiguous along k (a
  matrix-vector product: is_gemv). The column-panel body would compute one masked lane of
  a panel per row, gathering x; this one is a vector dot product per row: W lanes of k at a
  time (the last W masked), one fma chain per lane in increasing k, then the lanes summed in
  a fixed halving tree. Four rows run at a time (four independent chains) and the rest one
  by one, with the same per-row order, so a row's bits depend on K alone, never on the
  range or on which thread computes it."""
  fn, T, W, VT, isz, fma, vsuf, b, e, mul, imin, zero, i64v = _vector_body(
      module, GEMV_TYPE, name, dtype)
  A, X, C, r0, r1, M, K, sab, sam, sxb = fn.args
  imax = lambda x, y: b.select(b.icmp_signed(">", x, y), x, y)
  full = e.mul_idx(b.udiv(K, e.i64(W)), W)        # k's of whole vectors; then a masked one
  tail = b.icmp_signed("<", ir.Constant(i64v, list(range(W))), e.splat(b.sub(K, full), i64v))

  def hsum(v):
    """The lanes' sum: halves added until one lane is left."""
    w = W
    while w > 1:
      h = w // 2
      undef = ir.Constant(v.type, ir.Undefined)
      lo = b.shuffle_vector(v, undef, ir.Constant(ir.VectorType(I32, h), list(range(h))))
      hi = b.shuffle_vector(v, undef, ir.Constant(ir.VectorType(I32, h), list(range(h, w))))
      v, w = b.fadd(lo, hi), h
    return b.extract_element(v, ir.Constant(I32, 0))

  def rows(a_first, x, c_first, n):
    """n rows of one batch: A's rows from a_first (sam apart), C's from c_first, all
    against the batch's vector x (each vector of x loaded once for the n rows)."""
    arows = [e.gep(a_first, mul(e.i64(i), sam), T) for i in range(n)]

    def step(j, acc):
      k = e.mul_idx(j, W)
      xv = b.load(e.gep(x, k, T), typ=VT, align=isz)
      return [e.intrinsic(fma, VT, [b.load(e.gep(a, k, T), typ=VT, align=isz), xv, s])
              for a, s in zip(arows, acc)]
    acc = e.loop(e.i64(0), b.udiv(K, e.i64(W)), [zero] * n, step)
    masked = lambda p: e.intrinsic(f"llvm.masked.load.{vsuf}.p0", VT, [
        e.gep(p, full, T), ir.Constant(I32, isz), tail, zero])
    xt = masked(x)
    for i, (a, s) in enumerate(zip(arows, acc)):
      total = hsum(e.intrinsic(fma, VT, [masked(a), xt, s]))
      b.store(total, e.gep(c_first, e.i64(i), T))

  def batch(bi, _c):
    """The rows of batch bi within [r0, r1): GEMV_ROWS at a time (as many independent fma
    chains, sharing x's loads), then one by one."""
    base = mul(bi, M)
    lo = imax(b.sub(r0, base), e.i64(0))
    hi = imin(b.sub(r1, base), M)
    a0, x = e.gep(A, mul(bi, sab), T), e.gep(X, mul(bi, sxb), T)
    groups = b.udiv(b.sub(hi, lo), e.i64(GEMV_ROWS))

    def group(q, _c):
      m = b.add(lo, e.mul_idx(q, GEMV_ROWS))
      rows(e.gep(a0, mul(m, sam), T), x, e.gep(C, b.add(base, m), T), GEMV_ROWS)
      return []
    e.loop(e.i64(0), groups, [], group)

    def one(m, _c):
      rows(e.gep(a0, mul(m, sam), T), x, e.gep(C, b.add(base, m), T), 1)
      return []
    e.loop(b.add(lo, e.mul_idx(groups, GEMV_ROWS)), hi, [], one)
    return []
  e.loop(b.udiv(r0, M), b.udiv(b.add(r1, b.sub(M, e.i64(1))), M), [], batch)
  b.ret_void()
  return fn


def define_gevm_body(module: ir.Module, dtype, name: str):
  """`void gevm(x, B, C, c0, c1, K, sxk, sbk)`: C[c] = sum_k x[k] B[k, c] for the columns
  [c0, c1), B's rows contiguous along c (a vector-matrix product: is_gevm). The column-panel
  body would walk B a panel of columns at a time, a whole row apart per k (a 4 KiB stride
  puts every row in the same L1 set); this one streams B's rows in memory order, as BLAS's
  gemv: per block of columns (GEVM_BLOCK_BYTES of C, accumulated in a stack buffer, in L1,
  so that the threads' neighbouring column ranges never share a written cache line) and
  per GEVM_ROWS rows of B, each vector of the block takes its GEVM_ROWS fused multiply-adds
  in increasing k, then the rows left over one at a time. Each element of C sums its
  products in increasing k in one fma chain from +0, as the column-panel body does: the
  same bits, whatever the block or the threads' split."""
  fn, T, W, VT, isz, fma, vsuf, b, e, mul, imin, zero, i64v = _vector_body(
      module, GEVM_TYPE, name, dtype)
  X, Bm, C, c0, c1, K, sxk, sbk = fn.args
  NB = max(W, GEVM_BLOCK_BYTES // isz)            # columns per block, whole vectors
  acc = b.alloca(T, e.i64(NB))
  acc.align = 64
  vec = lambda p, j: e.gep(p, e.mul_idx(j, W), T)

  def block(q, _c):
    n0 = b.add(c0, e.mul_idx(q, NB))
    n = imin(b.sub(c1, n0), e.i64(NB))
    nvec = b.udiv(b.add(n, e.i64(W - 1)), e.i64(W))   # the last one past n: ignored below
    brow = e.gep(Bm, n0, T)

    def clear(j, _c):
      e.store_vector(zero, vec(acc, j), 64)
      return []
    e.loop(e.i64(0), nvec, [], clear)
    nfull = b.udiv(n, e.i64(W))
    tail = b.icmp_signed("<", ir.Constant(i64v, list(range(W))),
                         e.splat(b.sub(n, e.mul_idx(nfull, W)), i64v))

    def rows(k, count):
      """B's rows k .. k + count - 1 added to the block."""
      xs = [e.splat(b.load(e.gep(X, mul(b.add(k, e.i64(i)), sxk), T), typ=T), VT)
            for i in range(count)]
      srcs = [e.gep(brow, mul(b.add(k, e.i64(i)), sbk), T) for i in range(count)]

      def update(j, load):
        y = b.load(vec(acc, j), typ=VT, align=64)
        for xv, src in zip(xs, srcs):
          y = e.intrinsic(fma, VT, [xv, load(vec(src, j)), y])
        e.store_vector(y, vec(acc, j), 64)
      e.loop(e.i64(0), nfull, [], lambda j, _c: update(
          j, lambda p: b.load(p, typ=VT, align=isz)) or [])
      with b.if_then(b.icmp_signed("<", nfull, nvec)):
        update(nfull, lambda p: e.intrinsic(f"llvm.masked.load.{vsuf}.p0", VT, [
            p, ir.Constant(I32, isz), tail, zero]))

    groups = b.udiv(K, e.i64(GEVM_ROWS))
    e.loop(e.i64(0), groups, [], lambda g, _c: rows(e.mul_idx(g, GEVM_ROWS), GEVM_ROWS) or [])
    e.loop(e.mul_idx(groups, GEVM_ROWS), K, [], lambda k, _c: rows(k, 1) or [])

    def out(j, _c):            # the block to C, its last vector masked
      lanes = b.icmp_signed("<", ir.Constant(i64v, list(range(W))),
                            e.splat(b.sub(n, e.mul_idx(j, W)), i64v))
      e.intrinsic(f"llvm.masked.store.{vsuf}.p0", VOID, [
          b.load(vec(acc, j), typ=VT, align=64), vec(e.gep(C, n0, T), j),
          ir.Constant(I32, isz), lanes])
      return []
    e.loop(e.i64(0), nvec, [], out)
    return []
  nblocks = b.udiv(b.add(b.sub(c1, c0), e.i64(NB - 1)), e.i64(NB))
  e.loop(e.i64(0), nblocks, [], block)
  b.ret_void()
  return fn

"""LLVM code generation for fusions: loop nests and the elemental emitter.

Each fusion becomes one function with the backend ABI (compiler_design.md):

    void <fusion name>(i8** buffers, i64 start, i64 stop)

`buffers` holds the operands' data pointers in operand order, then one pointer per output
(per tuple element of a tuple root). The function runs the outermost loop over
[start, stop): the first output dimension, or the flat index for outputs of rank <= 1, so
the caller may split that range across threads. The exported function loads the pointers
and calls an `alwaysinline` body whose pointer arguments carry `noalias` where the buffer
assignment allows it; inlining turns that into alias scopes, which is what lets LLVM
vectorize the loops without runtime overlap checks. An operand computed in place (its
buffer is an output's) is read through the output's pointer.

Loop nests (KernelBuilder.fusion):
- pure elementwise fusions: one flat loop over [start * inner, stop * inner);
- a reduce root keeping the input's minor dim (column sums, argmax over axis 0): the
  outputs are initialized, then accumulated with the minor dim innermost, so the input is
  read contiguously and the accumulation vectorizes across output elements;
- a fusion reading an array transposed (its minor dim follows an outer output dim): the
  nest runs in TILE x TILE blocks of those two dims, so the strided reads stay in L1;
- everything else: one loop per output dim, the minor (contiguous) one innermost. Before
  each loop, the values whose index does not involve it (or any loop inside it) are
  computed once (`ElementalEmitter.hoist`): softmax's row max, layernorm's mean and
  variance are computed once per row, not once per element. Before the minor loop, an
  expensive value read at several minor positions of the row (softmax's exp(x - max), read
  by the row sum and by the division) is computed once over the row into a stack buffer
  (`fill_row_caches`, `fusion.row_cached`) that those reads load. The fusion pass counts on
  both (`fusion.symbolic_count`) to fuse such values into their consumers: softmax is one
  kernel reading x from memory once and writing the result once.

Vectorization. Every kernel is marked "prefer-vector-width"="512", so hosts with AVX-512
use zmm registers (others keep their widest vectors); the body's pointers carry `noalias`
where the buffer assignment allows; loops are contiguous in their innermost dim with no
index division (broadcast, transpose and size-1 reshapes map loop variables directly), so
LLVM's loop vectorizer emits a vector body with a scalar tail. tests/test_vectorize.py
reads the assembly of representative fusions and asserts packed instructions.

The ELEMENTAL emitter computes one element of any fusible instruction at a multi-index
(`emit(instr, index)`), recursively: structural ops are index maps (broadcast drops dims,
transpose permutes, reshape linearizes and delinearizes per group of dims, slice is
start + i*stride, pad tests the grid, gather reads its start indices, ...), elementwise ops
are scalar IR with XLA's semantics, a reduce is an inner loop applying its `to_apply`
computation to scalars, a reduce-window folds its window (unrolled when small: pooling's
output loop over channels then vectorizes) with padding and dilation as selects. Element values are memoized per (instruction, index) in scopes that
follow the loop structure (a value computed inside a reduction loop is not reused after
it). Reductions: a float sum/product/max/min over the contiguous minor dim of a short
prologue (`fixed_lanes_prologue`: row sums, x*x, (x - mean)**2, exp(x - max)) is explicit
vector IR, FIXED_LANES vector accumulators in a fixed order: the quick tier's code and the
optimized code compute the same bits, both at vector speed. Other float add/multiply
combiners are marked `reassoc` and max/min use
llvm.maximum/minimum, so LLVM vectorizes them with vector accumulators: the summation order
then depends only on the code (vector width and interleave chosen at compile time for the
host). Either way a compiled module sums each output element in the same order every run,
for any split of the outer loop (threads split only the outer dim); f32 sums of n terms stay
within n*eps of the exact sum (sqrt(n)*eps typical). Other combiners (argmax's variadic reduce,
narrow floats) over the minor dim accumulate VLANES interleaved lanes in stack slots, an
element-wise lane loop LLVM vectorizes, combined in lane order at the end. Concatenate, pad and
dynamic-update-slice select between cheap operands (vectorizable) but branch around
expensive ones, so each operand element is computed at most once, as the fusion pass
assumes.

Registers: bool is i1 (i8 in memory); float16/bfloat16 live in float32 registers holding
a value already rounded to the narrow type (every arithmetic result is rounded back,
round-to-nearest-even, so results match per-op rounding); complex values are `Cx(re, im)`
pairs of float/double. Transcendentals come from ember's math library (`mathlib.emit`),
never from libm: a call in a loop would block vectorization (only float remainder, rare,
lowers to fmod).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np
from llvmlite import ir

from ember._src.base import dtypes
from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import host
from ember._src.base.dtypes import dtype_kind
from ember._src.passes.fusion import (INDEX_MAPS, column_reduce_root, is_expensive,
                                      operand_index, row_cached)

PTR = ir.PointerType()
I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()
KERNEL_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])
VLANES = 16  # lanes (stack slots) of reductions LLVM cannot vectorize itself (argmax)

# Opcodes whose float results need no rounding back to float16/bfloat16: they return one
# of their (already representable) operands or an exact function of it.
_EXACT_FLOAT_OPS = {"negate", "abs", "maximum", "minimum", "select", "clamp", "floor", "ceil",
                    "round-nearest-afz", "round-nearest-even", "copy", "sign", "remainder"}


class CodegenError(ValueError):
  """An instruction or dtype the CPU backend cannot compile (the message names it)."""


# --------------------------------------------------------------------------------------
# Types
# --------------------------------------------------------------------------------------

def kind(dt) -> str:
  """'b' bool, 'i' signed, 'u' unsigned, 'f' float (incl. bfloat16), 'c' complex."""
  return dtype_kind(np.dtype(dt))


def bits(dt) -> int:
  return np.dtype(dt).itemsize * 8


def is_narrow(dt) -> bool:
  return np.dtype(dt) in (dtypes.float16, dtypes.bfloat16)


def mem_type(dt) -> ir.Type:
  """The type of one element in memory (complex: of one part)."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return I8
  if dt == dtypes.float16:
    return F16
  if dt == dtypes.bfloat16:
    return I16
  k = kind(dt)
  if k in "iu":
    return ir.IntType(bits(dt))
  if k == "c":
    return F32 if dt == np.complex64 else F64
  return {4: F32, 8: F64}[dt.itemsize]


def reg_type(dt) -> ir.Type:
  """The type of one element in registers (complex: of one part)."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return I1
  if is_narrow(dt):
    return F32
  return mem_type(dt)


def float_suffix(t: ir.Type) -> str:
  """The type suffix of an overloaded intrinsic: llvm.fabs.f32, llvm.ctpop.i16,
  llvm.maximum.v16f32."""
  if isinstance(t, ir.VectorType):
    return f"v{t.count}{float_suffix(t.element)}"
  if isinstance(t, ir.IntType):
    return f"i{t.width}"
  return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


class Cx(NamedTuple):
  """A complex value in registers."""
  re: ir.Value
  im: ir.Value


def const_of(dt, value) -> ir.Value | Cx:
  """A register constant of dtype `dt` from a Python/NumPy scalar."""
  dt = np.dtype(dt)
  k = kind(dt)
  if k == "c":
    t = reg_type(dt)
    value = complex(value)
    return Cx(ir.Constant(t, value.real), ir.Constant(t, value.imag))
  if k == "b":
    return ir.Constant(I1, int(bool(value)))
  if k in "iu":
    v = int(value) & ((1 << bits(dt)) - 1)
    if v >= 1 << (bits(dt) - 1):   # two's complement spelling: LLVM wants signed literals
      v -= 1 << bits(dt)
    return ir.Constant(reg_type(dt), v)
  return ir.Constant(reg_type(dt), float(np.float64(np.asarray(value).astype(np.float64))))


# --------------------------------------------------------------------------------------
# IR helpers bound to a builder
# --------------------------------------------------------------------------------------

class IRHelpers:
  """Small utilities on `self.b` (an ir.IRBuilder): constants, intrinsics, loops."""
  b: ir.IRBuilder

  def i64(self, n: int) -> ir.Constant:
    c = self._i64_cache.get(n)
    if c is None:
      c = self._i64_cache[n] = ir.Constant(I64, n)
    return c

  def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Value]) -> ir.Value:
    module = self.b.module
    try:
      fn = module.get_global(name)
    except KeyError:
      fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name)
    return self.b.call(fn, list(args))

  def add_idx(self, a, b):
    if isinstance(b, ir.Constant) and b.constant == 0:
      return a
    if isinstance(a, ir.Constant) and a.constant == 0:
      return b
    return self.b.add(a, b, flags=("nsw",))

  def mul_idx(self, a, n: int):
    if n == 1:
      return a
    if isinstance(a, ir.Constant):
      return self.i64(a.constant * n)
    return self.b.mul(a, self.i64(n), flags=("nsw", "nuw"))

  def linear(self, index: Sequence[ir.Value], dims: Sequence[int]) -> ir.Value:
    """Row-major linear offset of a multi-index (size-1 dims contribute nothing)."""
    lin, stride = self.i64(0), 1
    for i, d in reversed(list(zip(index, dims))):
      if d != 1:
        lin = self.add_idx(lin, self.mul_idx(i, stride))
      stride *= d
    return lin

  def delinear(self, lin: ir.Value, dims: Sequence[int]) -> list[ir.Value]:
    """The multi-index of a row-major linear offset."""
    out = []
    stride = int(np.prod(dims, dtype=np.int64)) if dims else 1
    for n, d in enumerate(dims):
      stride //= max(d, 1)
      if d == 1:
        out.append(self.i64(0))
        continue
      q = lin if stride == 1 else self.b.udiv(lin, self.i64(stride))
      if n > 0 and any(e != 1 for e in dims[:n]):
        q = self.b.urem(q, self.i64(d))
      out.append(q)
    return out

  def clamp_idx(self, v: ir.Value, lo: int, hi: int) -> ir.Value:
    b = self.b
    v = b.select(b.icmp_signed("<", v, self.i64(lo)), self.i64(lo), v)
    return b.select(b.icmp_signed(">", v, self.i64(hi)), self.i64(hi), v)

  def loop(self, lo: ir.Value, hi: ir.Value, carried: Sequence[ir.Value],
           body: Callable[[ir.Value, list], list]) -> list[ir.Value]:
    """`for i in [lo, hi)` with loop-carried values; returns their final values.
    `body(i, carried) -> new carried` may create blocks of its own."""
    b = self.b
    fn = b.function
    pre = b.block
    hdr = fn.append_basic_block("loop.hdr")
    bod = fn.append_basic_block("loop.body")
    ext = fn.append_basic_block("loop.exit")
    b.branch(hdr)
    b.position_at_end(hdr)
    i = b.phi(I64, name="i")
    i.add_incoming(lo, pre)
    phis = []
    for c in carried:
      p = b.phi(c.type)
      p.add_incoming(c, pre)
      phis.append(p)
    b.cbranch(b.icmp_signed("<", i, hi), bod, ext)
    b.position_at_end(bod)
    new = body(i, list(phis))
    nxt = b.add(i, self.i64(1), flags=("nsw", "nuw"))
    end = b.block
    i.add_incoming(nxt, end)
    for p, v in zip(phis, new):
      p.add_incoming(v, end)
    b.branch(hdr)
    b.position_at_end(ext)
    return list(phis)


class Inner:
  """A placeholder index value: the variable of a loop not yet entered (see `hoist`)."""
  __slots__ = ()


def _nonempty(shape) -> bool:
  shapes = shape.elements if isinstance(shape, hlo.TupleShape) else (shape,)
  return all(0 not in s.dims for s in shapes)


def _flatten_vals(vals) -> list[ir.Value]:
  out = []
  for v in vals:
    out.extend((v.re, v.im) if isinstance(v, Cx) else (v,))
  return out


def _unflatten_vals(flat: list, like) -> list:
  out, it = [], iter(flat)
  for v in like:
    out.append(Cx(next(it), next(it)) if isinstance(v, Cx) else next(it))
  return out


# --------------------------------------------------------------------------------------
# The elemental emitter
# --------------------------------------------------------------------------------------

class ElementalEmitter(IRHelpers):
  """Emits the value of one element of an instruction at a multi-index.

  `read_param(number, index)` returns parameter `number` of the outermost computation at
  `index` (a tuple of i64 values); nested computations (reduce's to_apply) are emitted on
  scalars by `apply`.
  """

  def __init__(self, builder: ir.IRBuilder, read_param: Callable):
    self.b = builder
    self.read_param = read_param
    self._i64_cache: dict[int, ir.Constant] = {}
    self.scopes: list[dict] = [{}]
    self.globals: dict[int, ir.GlobalVariable] = {}
    self._expensive: dict[int, bool] = {}
    # slice id -> its start indices as values computed at run time (one loop body serving
    # several concatenate regions that differ only in where they slice: _region_groups)
    self.slice_starts: dict[int, list] = {}
    self.row_cache: dict[int, tuple] = {}   # instr id -> (outer index, row buffer, type)
    # (number, index) -> the address of a parameter's element, where the caller reads
    # parameters from buffers (a fusion kernel): vector loads of fixed-order reductions
    self.param_address: Callable | None = None

  # --- expensive operands: computed only where selected ---------------------------------
  def expensive(self, instr: hlo.Instr) -> bool:
    """Whether computing `instr` costs more than a few instructions (a transcendental,
    reduce, gather or integer division somewhere below it, as the fusion pass's
    `is_expensive`): concatenate/pad/dynamic-update-slice then branch to compute such an
    operand only where it is selected, instead of selecting between computed values."""
    hit = self._expensive.get(instr.id)
    if hit is None:
      op = instr.opcode
      own = op in hlo.TRANSCENDENTAL or op in ("reduce", "reduce-window", "gather",
                                                "remainder") or (
          op == "divide" and kind(instr.dtype) in "iu")
      hit = self._expensive[instr.id] = own or any(self.expensive(o) for o in instr.operands)
    return hit

  def op_count(self, instr: hlo.Instr, cap: int = 16) -> int:
    """Operations (not index maps, parameters or constants) evaluated for one element of
    `instr`, counted as a tree (a shared operand once per use) and at most `cap` (the walk
    stops there): how much a select that computes every candidate would waste."""
    count, stack, visits = 0, [instr], 0
    while stack and count < cap and visits < 4 * cap:
      x = stack.pop()
      visits += 1
      count += x.opcode not in INDEX_MAPS
      stack.extend(x.operands)
    return min(count, cap) if not stack else cap

  def choose(self, cond: ir.Value, then_fn: Callable, else_fn: Callable, lazy: bool):
    """`then_fn() if cond else else_fn()`: a select of both values, or (`lazy`) branches
    so only the chosen one is computed (each in its own memo scope)."""
    if not lazy:
      return _select_value(self, cond, then_fn(), else_fn())
    b = self.b
    results = []
    with b.if_else(cond) as (then, otherwise):
      for arm, fn in ((then, then_fn), (otherwise, else_fn)):
        with arm:
          self.push()
          v = fn()
          self.pop()
          results.append((v, b.block))
    (v1, b1), (v2, b2) = results
    flat1, flat2 = _flatten_vals([v1]), _flatten_vals([v2])
    merged = []
    for a, c in zip(flat1, flat2):
      phi = b.phi(a.type)
      phi.add_incoming(a, b1)
      phi.add_incoming(c, b2)
      merged.append(phi)
    return _unflatten_vals(merged, [v1])[0]

  # --- memoization scopes ---------------------------------------------------------------
  def push(self):
    self.scopes.append({})

  def pop(self):
    self.scopes.pop()

  def hoist(self, sites: Sequence[tuple]) -> None:
    """Compute now, into the current scope, the loop invariants below each (instr, index)
    site: the values reached through pure index maps (`fusion.operand_index`) whose index
    involves no `Inner` placeholder (a loop about to run). They are then memo hits inside
    those loops: softmax's row max, layernorm's mean and variance are computed once per
    row. The fusion pass models exactly this (`fusion.symbolic_count`) when it fuses an
    expensive producer read through a broadcast. Never descends into a lazily selected
    operand (concatenate, pad, dynamic-update-slice are not pure maps)."""
    seen = set()
    zero = self.i64(0)

    def walk(x, idx):
      key = (x.id, tuple(map(id, idx)))
      if key in seen:
        return
      seen.add(key)
      if not any(isinstance(v, Inner) for v in idx):
        if x.opcode not in ("parameter", "constant", "iota") and _nonempty(x.shape):
          self.emit(x, idx)
        return
      if x.opcode == "reduce":
        rdims = set(x.attrs["dimensions"])
        kept = iter(idx)
        full = tuple(Inner() if d in rdims else next(kept)
                     for d in range(x.operands[0].shape.rank))
        for inp in x.operands[:len(x.operands) // 2]:
          walk(inp, full)
        return
      for k, o in enumerate(x.operands):
        oi = operand_index(x, k, idx, zero)
        if oi is not None:
          walk(o, oi)
    for x, idx in sites:
      walk(x, tuple(idx))

  def emit(self, instr: hlo.Instr, index: tuple):
    """The value of `instr` at `index` (a list of values for a tuple-shaped instr)."""
    key = (instr.id, tuple(map(id, index)))
    for scope in reversed(self.scopes):
      hit = scope.get(key)
      if hit is not None:
        return hit[1]
    rc = self.cached_row(instr, index)
    rule = _INDEX_RULES.get(instr.opcode)
    if rc is not None:
      outer, buf, t = rc
      value = self.b.load(self.b.gep(buf, [index[-1]], inbounds=True, source_etype=t), typ=t)
    elif rule is not None:
      value = rule(self, instr, tuple(index))
    elif instr.opcode in hlo.ELEMENTWISE:
      vals = [self.emit(o, index if o.shape.dims == instr.shape.dims or o.shape.rank else ())
              for o in instr.operands]
      value = self.scalar_op(instr, vals)
    else:
      raise CodegenError(f"ember's CPU backend cannot compute {instr.opcode} "
                         f"(%{instr.name}) inside a fusion")
    self.scopes[-1][key] = (index, value)   # the index is kept alive with its ids
    return value

  def cached_row(self, instr: hlo.Instr, index: tuple):
    """(outer index, row buffer, type) when the buffer `fill_row_caches` filled holds
    `instr` along the minor dim of `index`, else None."""
    rc = self.row_cache.get(instr.id)
    if rc is not None and len(index) == len(rc[0]) + 1 and \
        all(a is c for a, c in zip(index, rc[0])):
      return rc
    return None

  def fill_row_caches(self, instrs, outer: tuple) -> None:
    """Compute each of `instrs` over the row `outer` (every position of its minor dim) into
    a stack buffer; later reads of it in this row load the buffer (`emit`). Its own
    invariants (softmax's row max) are hoisted first, so they are computed once per row."""
    b = self.b
    for p in instrs:
      t = reg_type(p.dtype)
      m = p.shape.dims[-1]
      cur = b.block
      b.position_at_start(b.function.entry_basic_block)
      buf = b.alloca(t, size=self.i64(m))
      buf.align = 64
      b.position_at_end(cur)
      self.hoist([(p, outer + (Inner(),))])

      def body(j, _c, p=p, buf=buf, t=t):
        self.push()
        b.store(self.emit(p, outer + (j,)), b.gep(buf, [j], inbounds=True, source_etype=t))
        self.pop()
        return []
      n_vec = self._fill_row_vectors(p, outer, buf, t)
      self.loop(self.i64(n_vec), self.i64(m), [], body)
      self.row_cache[p.id] = (outer, buf, t)

  def _fill_row_vectors(self, p: hlo.Instr, outer: tuple, buf, t) -> int:
    """Fill the row buffer of `p` in 64-byte vectors where p is a vector prologue
    (`vector_prologue`: softmax's exp(x - max)), so the math library runs on explicit
    vectors (its zmm forms; the quick tier's code is vector code too) with the same values
    as element by element; returns how many leading elements it filled (the rest: the
    scalar loop)."""
    m = p.shape.dims[-1]
    if self.param_address is None or t not in (F32, F64):
      return 0
    lanes_n = FIXED_LANES_BYTES // np.dtype(p.dtype).itemsize
    if m < lanes_n or vector_prologue(
        p, lambda i: self.cached_row(i, outer + (None,)) is not None) is None:
      return 0
    b, vt = self.b, ir.VectorType(t, lanes_n)

    def body(jb, _c):
      j = self.mul_idx(jb, lanes_n)
      self.push()
      v = _vector_value(self, p, outer + (j,), vt)
      ptr = b.gep(buf, [j], inbounds=True, source_etype=t)
      st = b.store(v, b.bitcast(ptr, vt.as_pointer()) if not getattr(
          ptr.type, "is_opaque", True) else ptr)
      st.align = FIXED_LANES_BYTES
      self.pop()
      return []
    self.loop(self.i64(0), self.i64(m // lanes_n), [], body)
    return m // lanes_n * lanes_n

  # --- scalar computations (reduce's to_apply, scatter's combiner) ----------------------
  def apply(self, comp: hlo.Computation, args: Sequence, reassoc: bool = False) -> list:
    """Emit computation `comp` on scalar register values `args`; returns its root's values
    as a list (one per tuple element). `reassoc` marks float add/multiply reassociable, so
    a reduction loop over them vectorizes (set only for simple combiners)."""
    env: dict[int, object] = {}
    for instr in comp.instrs:
      op = instr.opcode
      if op == "parameter":
        env[instr.id] = args[instr.attrs["number"]]
      elif op == "constant":
        env[instr.id] = const_of(instr.dtype, np.asarray(instr.attrs["value"]).reshape(()))
      elif op == "tuple":
        env[instr.id] = [env[o.id] for o in instr.operands]
      elif op == "get-tuple-element":
        env[instr.id] = env[instr.operands[0].id][instr.attrs["index"]]
      elif op in ("broadcast", "reshape", "copy", "transpose") and \
          not getattr(instr.shape, "dims", None):
        env[instr.id] = env[instr.operands[0].id]     # scalar no-ops
      elif op in hlo.ELEMENTWISE:
        env[instr.id] = self.scalar_op(instr, [env[o.id] for o in instr.operands],
                                       reassoc=reassoc)
      else:
        raise CodegenError(f"ember's CPU backend cannot compile {op} (%{instr.name}) in "
                           f"the scalar computation %{comp.name}")
    root = env[comp.root.id]
    return list(root) if isinstance(root, list) else [root]

  # --- memory --------------------------------------------------------------------------
  def load(self, ptr: ir.Value, lin: ir.Value, dt) -> ir.Value | Cx:
    """Load element `lin` of a buffer of dtype `dt` into a register value."""
    b, t = self.b, mem_type(dt)
    k = kind(dt)
    if k == "c":
      base = self.mul_idx(lin, 2)
      re = b.load(b.gep(ptr, [base], inbounds=True, source_etype=t), typ=t)
      im = b.load(b.gep(ptr, [self.add_idx(base, self.i64(1))], inbounds=True,
                        source_etype=t), typ=t)
      return Cx(re, im)
    v = b.load(b.gep(ptr, [lin], inbounds=True, source_etype=t), typ=t)
    return self.from_mem(v, dt)

  def store(self, ptr: ir.Value, lin: ir.Value, dt, value) -> None:
    b, t = self.b, mem_type(dt)
    if kind(dt) == "c":
      base = self.mul_idx(lin, 2)
      b.store(value.re, b.gep(ptr, [base], inbounds=True, source_etype=t))
      b.store(value.im, b.gep(ptr, [self.add_idx(base, self.i64(1))], inbounds=True,
                              source_etype=t))
      return
    b.store(self.to_mem(value, dt), b.gep(ptr, [lin], inbounds=True, source_etype=t))

  def from_mem(self, v: ir.Value, dt) -> ir.Value:
    dt = np.dtype(dt)
    b = self.b
    if dt == np.bool_:
      return b.icmp_unsigned("!=", v, ir.Constant(I8, 0))
    if dt == dtypes.float16:
      return b.fpext(v, F32)
    if dt == dtypes.bfloat16:
      return b.bitcast(b.shl(b.zext(v, I32), ir.Constant(I32, 16)), F32)
    return v

  def to_mem(self, v: ir.Value, dt) -> ir.Value:
    dt = np.dtype(dt)
    b = self.b
    if dt == np.bool_:
      return b.zext(v, I8)
    if dt == dtypes.float16:
      return b.fptrunc(v, F16)
    if dt == dtypes.bfloat16:   # the register already holds a bfloat16 value: exact
      return b.trunc(b.lshr(b.bitcast(v, I32), ir.Constant(I32, 16)), I16)
    return v

  def global_array(self, instr: hlo.Instr) -> ir.GlobalVariable:
    """A constant array of a fusion as a private global (its bytes, little-endian)."""
    g = self.globals.get(instr.id)
    if g is None:
      module = self.b.module
      data = np.ascontiguousarray(np.asarray(instr.attrs["value"], dtype=instr.dtype))
      raw = bytearray(data.tobytes())
      ty = ir.ArrayType(I8, max(len(raw), 1))
      g = ir.GlobalVariable(module, ty, module.get_unique_name("const"))
      g.global_constant = True
      g.linkage = "private"
      g.align = 64
      g.initializer = ir.Constant(ty, raw or bytearray(1))
      self.globals[instr.id] = g
    return g

  # --- narrow floats -------------------------------------------------------------------
  def round_to(self, dt, v: ir.Value) -> ir.Value:
    """Round a float32 register to float16/bfloat16 (nearest even); other dtypes: as is."""
    dt = np.dtype(dt)
    b = self.b
    if dt == dtypes.float16:
      return b.fpext(b.fptrunc(v, F16), F32)
    if dt == dtypes.bfloat16:
      u = b.bitcast(v, I32)
      lsb = b.and_(b.lshr(u, ir.Constant(I32, 16)), ir.Constant(I32, 1))
      rounded = b.add(u, b.add(lsb, ir.Constant(I32, 0x7FFF)))
      quiet = b.or_(u, ir.Constant(I32, 0x00400000))       # NaN stays NaN (quiet)
      u = b.select(b.fcmp_unordered("uno", v, v), quiet, rounded)
      return b.bitcast(b.and_(u, ir.Constant(I32, -65536)), F32)
    return v

  def to_bits(self, v: ir.Value, dt) -> ir.Value:
    """The bit pattern of a float register value as an integer of the dtype's width."""
    dt = np.dtype(dt)
    b = self.b
    if dt == dtypes.float16:
      return b.bitcast(b.fptrunc(v, F16), I16)
    if dt == dtypes.bfloat16:
      return self.to_mem(v, dt)
    if kind(dt) == "f":
      return b.bitcast(v, ir.IntType(bits(dt)))
    if kind(dt) == "b":
      return b.zext(v, I8)
    return v

  def from_bits(self, u: ir.Value, dt) -> ir.Value:
    dt = np.dtype(dt)
    if dt == dtypes.float16:
      return self.b.fpext(self.b.bitcast(u, F16), F32)
    if kind(dt) == "f" and not is_narrow(dt):
      return self.b.bitcast(u, reg_type(dt))
    return self.from_mem(u, dt)

  # --- index conversion ----------------------------------------------------------------
  def to_index(self, v: ir.Value, dt) -> ir.Value:
    """An integer register as a signed i64 index; uint64 values >= 2**63 saturate."""
    b = self.b
    n = bits(dt)
    if kind(dt) == "b":
      return b.zext(v, I64)
    if n < 64:
      return b.sext(v, I64) if kind(dt) == "i" else b.zext(v, I64)
    if kind(dt) == "u":
      return b.select(b.icmp_signed("<", v, self.i64(0)), self.i64(2**63 - 1), v)
    return v

  # --- scalar ops ----------------------------------------------------------------------
  def scalar_op(self, instr: hlo.Instr, vals: list, reassoc: bool = False):
    op = instr.opcode
    odt = instr.operands[0].dtype if instr.operands else instr.dtype
    if kind(odt) == "c" or kind(instr.dtype) == "c":
      return _complex_op(self, instr, vals)
    rule = _SCALAR_RULES.get(op)
    if rule is None:
      if op in hlo.TRANSCENDENTAL:
        return self.round_to(instr.dtype, self.math(op, vals, instr.dtype))
      raise CodegenError(f"ember's CPU backend cannot compile the elementwise op {op} "
                         f"(%{instr.name}) for dtype {np.dtype(odt).name}")
    out = rule(self, instr, vals, reassoc) if op in _REASSOC_OPS else rule(self, instr, vals)
    if kind(instr.dtype) == "f" and is_narrow(instr.dtype) and op not in _EXACT_FLOAT_OPS \
        and op not in ("convert", "bitcast-convert", "reduce-precision", "next-after"):
      out = self.round_to(instr.dtype, out)
    return out

  def math(self, op: str, vals: list, dt) -> ir.Value:
    """A transcendental from ember's math library, in the register type of `dt`."""
    if kind(dt) != "f":
      raise CodegenError(f"ember's CPU backend: {op} is not defined for dtype "
                         f"{np.dtype(dt).name}")
    if op == "sqrt":
      return self.intrinsic(f"llvm.sqrt.{float_suffix(vals[0].type)}", vals[0].type, vals)
    if op == "rsqrt":
      one = ir.Constant(vals[0].type, 1.0)
      return self.b.fdiv(one, self.intrinsic(f"llvm.sqrt.{float_suffix(vals[0].type)}",
                                             vals[0].type, vals))
    # deferred: mathlib's import (~20 ms) is paid by the first module with a transcendental
    from ember._src.backends.cpu import mathlib
    return mathlib.emit(self.b, op, list(vals), vals[0].type)

  def fmax(self, a, b, is_max: bool):
    """XLA max/min of floats: NaN-propagating, max(-0, +0) = +0 (llvm.maximum)."""
    name = "maximum" if is_max else "minimum"
    return self.intrinsic(f"llvm.{name}.{float_suffix(a.type)}", a.type, [a, b])

  def fmax_number(self, a, b, is_max: bool):
    """max/min of two zmm vectors (`range_lanes_ok`) that drops a quiet NaN (IEEE maxNum:
    the other operand) but orders -0 < +0: one `vrangeps`/`vrangepd` (imm 5: max, 4: min),
    bit-equal to `fmax` wherever neither lane is NaN (llvm.maximum is a six-instruction
    sequence on AVX-512). Callers track NaNs themselves (`_reduce`'s fixed_lanes)."""
    t = a.type
    f64 = t.element == F64
    mask = ir.Constant(ir.IntType(t.count), -1)
    name = f"llvm.x86.avx512.mask.range.{'pd' if f64 else 'ps'}.512"
    return self.intrinsic(name, t, [a, b, ir.Constant(I32, 5 if is_max else 4),
                                    ir.Constant(t, None), mask, ir.Constant(I32, 4)])


# --------------------------------------------------------------------------------------
# Scalar rules: rule(em, instr, operand values) -> value
# --------------------------------------------------------------------------------------

def _fflags(reassoc: bool):
  return ("reassoc",) if reassoc else ()


def _add(em, instr, v, reassoc):
  k = kind(instr.dtype)
  if k == "f":
    return em.b.fadd(v[0], v[1], flags=_fflags(reassoc))
  return em.b.or_(v[0], v[1]) if k == "b" else em.b.add(v[0], v[1])


def _sub(em, instr, v):
  k = kind(instr.dtype)
  if k == "f":
    return em.b.fsub(v[0], v[1])
  return em.b.xor(v[0], v[1]) if k == "b" else em.b.sub(v[0], v[1])


def _mul(em, instr, v, reassoc):
  k = kind(instr.dtype)
  if k == "f":
    return em.b.fmul(v[0], v[1], flags=_fflags(reassoc))
  return em.b.and_(v[0], v[1]) if k == "b" else em.b.mul(v[0], v[1])


def _int_guard(em, instr, y):
  """(y == 0, a divisor that never traps: 1 where y == 0, or where y == -1 (signed))."""
  b = em.b
  zero = ir.Constant(y.type, 0)
  is0 = b.icmp_unsigned("==", y, zero)
  bad = is0
  if kind(instr.dtype) == "i":   # INT_MIN / -1 overflows: x / -1 = -x and x % -1 = 0 anyway
    bad = b.or_(is0, b.icmp_signed("==", y, ir.Constant(y.type, -1)))
  return is0, b.select(bad, ir.Constant(y.type, 1), y)


def _div(em, instr, v):
  b, k = em.b, kind(instr.dtype)
  x, y = v
  if k == "f":
    return b.fdiv(x, y)
  if k == "b":
    return x
  is0, safe = _int_guard(em, instr, y)
  if k == "i":
    q = b.sdiv(x, safe)
    q = b.select(b.icmp_signed("==", y, ir.Constant(y.type, -1)), b.neg(x), q)   # wraps
  else:
    q = b.udiv(x, safe)
  return b.select(is0, ir.Constant(x.type, -1), q)      # x / 0 = -1 (all bits set)


def _rem(em, instr, v):
  b, k = em.b, kind(instr.dtype)
  x, y = v
  if k == "f":
    return _frem(em, x, y)
  if k == "b":
    return ir.Constant(I1, 0)
  is0, safe = _int_guard(em, instr, y)
  r = b.srem(x, safe) if k == "i" else b.urem(x, safe)
  return b.select(is0, x, r)                             # x % 0 = x


def _frem(em, x, y):
  """C's fmod (exact; the result is representable in the operands' format). LLVM lowers
  `frem` to a call of fmod/fmodf: remainder is rare in hot loops and has no cheap exact
  branch-free form."""
  return em.b.frem(x, y)


def _max_min(is_max: bool):
  def rule(em, instr, v, reassoc=False):
    b, k = em.b, kind(instr.dtype)
    x, y = v
    if k == "f":
      return em.fmax(x, y, is_max)
    if k == "b":
      return b.or_(x, y) if is_max else b.and_(x, y)
    cmp = b.icmp_signed if k == "i" else b.icmp_unsigned
    return b.select(cmp(">" if is_max else "<", x, y), x, y)
  return rule


def _compare_rule(em, instr, v):
  b = em.b
  direction = instr.attrs["direction"]
  dt = instr.operands[0].dtype
  k = kind(dt)
  ctype = instr.attrs.get("compare_type") or {"f": "FLOAT", "i": "SIGNED"}.get(k, "UNSIGNED")
  sym = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}[direction]
  x, y = v
  if k == "f":
    if ctype == "TOTALORDER":
      return b.icmp_signed(sym, _total_order(em, x, dt), _total_order(em, y, dt))
    return (b.fcmp_unordered if sym == "!=" else b.fcmp_ordered)(sym, x, y)
  if ctype == "SIGNED" and k != "b":
    return b.icmp_signed(sym, x, y)
  return b.icmp_unsigned(sym, x, y)


def _total_order(em, x, dt):
  """A float as a signed integer ordered like XLA's TOTALORDER compare."""
  b = em.b
  u = em.to_bits(x, dt)
  n = u.type.width
  fill = b.ashr(u, ir.Constant(u.type, n - 1))
  return b.xor(u, b.lshr(fill, ir.Constant(u.type, 1)))


def _select_rule(em, instr, v):
  return em.b.select(v[0], v[1], v[2])


def _clamp_rule(em, instr, v):
  lo, x, hi = v
  mx, mn = _max_min(True), _max_min(False)
  return mn(em, instr, [mx(em, instr, [x, lo]), hi])


def _fma_rule(em, instr, v):
  return em.intrinsic(f"llvm.fma.{float_suffix(v[0].type)}", v[0].type, v)


def _negate(em, instr, v):
  k = kind(instr.dtype)
  if k == "f":
    return em.b.fneg(v[0])
  return v[0] if k == "b" else em.b.neg(v[0])


def _abs_rule(em, instr, v):
  x = v[0]
  k = kind(instr.dtype)
  if k == "f":
    return em.intrinsic(f"llvm.fabs.{float_suffix(x.type)}", x.type, [x])
  if k == "u" or k == "b":
    return x
  return em.intrinsic(f"llvm.abs.i{x.type.width}", x.type, [x, ir.Constant(I1, 0)])


def _sign_rule(em, instr, v):
  b, x = em.b, v[0]
  k = kind(instr.dtype)
  if k == "f":
    one = em.intrinsic(f"llvm.copysign.{float_suffix(x.type)}", x.type,
                       [ir.Constant(x.type, 1.0), x])
    keep = b.fcmp_unordered("==", x, ir.Constant(x.type, 0.0))   # 0, -0 and NaN stay
    return b.select(keep, x, one)
  zero = ir.Constant(x.type, 0)
  if k in "ub":
    return b.zext(b.icmp_unsigned("!=", x, zero), x.type) if k == "u" else x
  return b.sub(b.zext(b.icmp_signed(">", x, zero), x.type),
               b.zext(b.icmp_signed("<", x, zero), x.type))


def _float_intrinsic(name):
  def rule(em, instr, v):
    x = v[0]
    return em.intrinsic(f"llvm.{name}.{float_suffix(x.type)}", x.type, [x])
  return rule


def _is_finite(em, instr, v):
  x = v[0]
  ax = em.intrinsic(f"llvm.fabs.{float_suffix(x.type)}", x.type, [x])
  return em.b.fcmp_ordered("<", ax, ir.Constant(x.type, float("inf")))


def _not(em, instr, v):
  return em.b.not_(v[0])


def _bitwise(name):
  def rule(em, instr, v):
    return getattr(em.b, name)(v[0], v[1])
  return rule


def _shift(which):
  """XLA shifts: the amount is unsigned; amounts >= bits give 0, or the sign fill for
  the arithmetic right shift."""
  def rule(em, instr, v):
    b = em.b
    x, y = v
    n = ir.Constant(x.type, x.type.width)
    oob = b.icmp_unsigned(">=", y, n)
    amt = b.select(oob, ir.Constant(x.type, 0), y)
    if which == "left":
      return b.select(oob, ir.Constant(x.type, 0), b.shl(x, amt))
    if which == "logical":
      return b.select(oob, ir.Constant(x.type, 0), b.lshr(x, amt))
    return b.ashr(x, b.select(oob, ir.Constant(x.type, x.type.width - 1), amt))
  return rule


def _popcnt(em, instr, v):
  x = v[0]
  return em.intrinsic(f"llvm.ctpop.i{x.type.width}", x.type, [x])


def _clz(em, instr, v):
  x = v[0]
  return em.intrinsic(f"llvm.ctlz.i{x.type.width}", x.type, [x, ir.Constant(I1, 0)])


def _copy(em, instr, v):
  return v[0]


def _round_afz(em, instr, v):
  """Round half away from zero: trunc, then step by sign(x) when |x - trunc(x)| >= 0.5
  (x - trunc(x) is exact)."""
  b, x = em.b, v[0]
  t = x.type
  tr = em.intrinsic(f"llvm.trunc.{float_suffix(t)}", t, [x])
  frac = em.intrinsic(f"llvm.fabs.{float_suffix(t)}", t, [b.fsub(x, tr)])
  step = em.intrinsic(f"llvm.copysign.{float_suffix(t)}", t, [ir.Constant(t, 1.0), x])
  up = b.fcmp_ordered(">=", frac, ir.Constant(t, 0.5))
  return b.select(up, b.fadd(tr, step), tr)


def _convert_rule(em, instr, v):
  return convert(em, v[0], instr.operands[0].dtype, instr.dtype)


def convert(em, x, src, dst):
  """XLA convert: float->int truncates and saturates (NaN -> 0); ->bool is `!= 0`."""
  src, dst = np.dtype(src), np.dtype(dst)
  b = em.b
  ks, kd = kind(src), kind(dst)
  if src == dst:
    return x
  if kd == "c":
    part = dtypes.float32 if dst == np.complex64 else dtypes.float64
    if ks == "c":
      return Cx(convert(em, x.re, src_part(src), part), convert(em, x.im, src_part(src), part))
    return Cx(convert(em, x, src, part), ir.Constant(reg_type(part), 0.0))
  if ks == "c":
    return convert(em, x.re, src_part(src), dst)
  if kd == "b":
    if ks == "f":
      return b.fcmp_unordered("!=", x, ir.Constant(x.type, 0.0))
    return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
  rt = reg_type(dst)
  if kd in "iu":
    if ks == "f":
      name = "fptosi" if kd == "i" else "fptoui"
      return em.intrinsic(f"llvm.{name}.sat.i{rt.width}.{float_suffix(x.type)}", rt, [x])
    if ks == "b":
      return b.zext(x, rt)
    if rt.width == x.type.width:
      return x
    if rt.width < x.type.width:
      return b.trunc(x, rt)
    return b.sext(x, rt) if ks == "i" else b.zext(x, rt)
  # float destination
  if ks in "iub":
    if dst == dtypes.float16 and x.type.width > 32:   # one rounding: int64 -> half directly
      h = b.sitofp(x, F16) if ks == "i" else b.uitofp(x, F16)
      return b.fpext(h, F32)
    wide = F64 if dst == dtypes.float16 else rt
    f = b.sitofp(x, wide) if ks == "i" else b.uitofp(x, wide)
    if dst == dtypes.float16:
      return b.fpext(b.fptrunc(f, F16), F32)
    return em.round_to(dst, f)
  # float -> float (registers: f32 for the narrow types; float64 -> float16/bfloat16 rounds
  # to float32 first, as XLA)
  if x.type == F64 and rt == F32:
    x = b.fptrunc(x, F32)
  elif x.type == F32 and rt == F64:
    x = b.fpext(x, F64)
  return em.round_to(dst, x)


def src_part(dt):
  return dtypes.float32 if np.dtype(dt) == np.complex64 else dtypes.float64


def _bitcast_rule(em, instr, v):
  """Same-width bitcast (size-changing bitcasts are index rules below)."""
  src, dst = instr.operands[0].dtype, instr.dtype
  return em.from_bits(em.to_bits(v[0], src), dst)


def _reduce_precision(em, instr, v):
  """XLA's ReducePrecision on the bit pattern: round the mantissa to nearest even, then
  flush exponents outside the reduced range to 0 / inf."""
  b = em.b
  x = v[0]
  dt = np.dtype(instr.dtype)
  info = dtypes.finfo(dt)
  src_mant, src_exp = int(info.nmant), int(info.nexp)
  eb, mb = instr.attrs["exponent_bits"], instr.attrs["mantissa_bits"]
  u = em.to_bits(x, dt)
  t = u.type
  c = lambda n: ir.Constant(t, n)
  if mb < src_mant:
    shift = src_mant - mb
    last = 1 << shift
    x_last = b.and_(b.lshr(u, c(shift)), c(1))
    u = b.and_(b.add(u, b.add(x_last, c((last >> 1) - 1))), c(~(last - 1)))
  if eb < src_exp:
    sign = c(1 << (bits(dt) - 1))
    exp_mask = ((1 << src_exp) - 1) << src_mant
    src_bias = (1 << (src_exp - 1)) - 1
    red_bias = (1 << (eb - 1)) - 1
    x_exp = b.and_(u, c(exp_mask))
    over = b.icmp_unsigned(">", x_exp, c((src_bias + red_bias) << src_mant))
    under = b.icmp_unsigned("<=", x_exp, c((src_bias - red_bias) << src_mant))
    signed_zero = b.and_(u, sign)
    u = b.select(over, b.or_(signed_zero, c(exp_mask)), u)
    u = b.select(under, signed_zero, u)
  out = em.from_bits(u, dt)
  return b.select(b.fcmp_unordered("uno", x, x), x, out)


def _next_after(em, instr, v):
  b = em.b
  x, y = v
  dt = instr.dtype
  ux = em.to_bits(x, dt)
  t = ux.type
  n = t.width
  sign = ir.Constant(t, 1 << (n - 1))
  tiny = b.or_(b.and_(em.to_bits(y, dt), sign), ir.Constant(t, 1))   # +-smallest subnormal
  up = b.xor(b.fcmp_ordered("<", x, y), b.fcmp_ordered("<", x, ir.Constant(x.type, 0.0)))
  # moving away from zero increments the magnitude bits; toward zero decrements them
  stepped = b.select(up, b.add(ux, ir.Constant(t, 1)), b.sub(ux, ir.Constant(t, 1)))
  out = b.select(b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0)), tiny, stepped)
  res = em.from_bits(out, dt)
  res = b.select(b.fcmp_ordered("==", x, y), y, res)
  nan = b.fcmp_unordered("uno", x, y)
  return b.select(nan, b.fadd(x, y), res)


def _real_imag_float(em, instr, v):   # real/imag of a real operand (not produced by JAX)
  return v[0] if instr.opcode == "real" else ir.Constant(v[0].type, 0.0)


_SCALAR_RULES: dict[str, Callable] = {
    "add": _add, "subtract": _sub, "multiply": _mul, "divide": _div, "remainder": _rem,
    "maximum": _max_min(True), "minimum": _max_min(False), "compare": _compare_rule,
    "select": _select_rule, "clamp": _clamp_rule, "fma": _fma_rule, "negate": _negate, "abs": _abs_rule,
    "sign": _sign_rule, "floor": _float_intrinsic("floor"), "ceil": _float_intrinsic("ceil"),
    "round-nearest-even": _float_intrinsic("roundeven"), "round-nearest-afz": _round_afz,
    "is-finite": _is_finite, "not": _not, "and": _bitwise("and_"), "or": _bitwise("or_"),
    "xor": _bitwise("xor"), "shift-left": _shift("left"),
    "shift-right-logical": _shift("logical"), "shift-right-arithmetic": _shift("arith"),
    "popcnt": _popcnt, "count-leading-zeros": _clz, "copy": _copy, "convert": _convert_rule,
    "bitcast-convert": _bitcast_rule, "reduce-precision": _reduce_precision,
    "next-after": _next_after, "real": _real_imag_float, "imag": _real_imag_float,
}
_REASSOC_OPS = {"add", "multiply", "maximum", "minimum"}


# --- complex ---------------------------------------------------------------------------

def _complex_op(em, instr, v):
  rule = _COMPLEX_RULES.get(instr.opcode)
  if rule is None:
    raise CodegenError(f"ember's CPU backend does not compile {instr.opcode} on complex "
                       f"values yet (%{instr.name}); write it with real arithmetic on "
                       "lax.real / lax.imag")
  return rule(em, instr, v)


def _cmul(em, instr, v):
  b = em.b
  (a, c), (d, e) = v
  return Cx(b.fsub(b.fmul(a, d), b.fmul(c, e)), b.fadd(b.fmul(a, e), b.fmul(c, d)))


def _ccompare(em, instr, v):
  b = em.b
  d = instr.attrs["direction"]
  if d not in ("EQ", "NE"):
    raise CodegenError(f"compare {d} is not defined for complex operands (%{instr.name})")
  eq = b.and_(b.fcmp_ordered("==", v[0].re, v[1].re), b.fcmp_ordered("==", v[0].im, v[1].im))
  return eq if d == "EQ" else b.not_(eq)


def _csign(em, instr, v):
  b = em.b
  a = _cabs(em, v[0])
  zero = b.fcmp_ordered("==", a, ir.Constant(a.type, 0.0))
  safe = b.select(zero, ir.Constant(a.type, 1.0), a)
  return Cx(b.select(zero, v[0].re, b.fdiv(v[0].re, safe)),
            b.select(zero, v[0].im, b.fdiv(v[0].im, safe)))


def _cmax_min(is_max):
  """Lexicographic order on (re, im), as XLA's complex max/min."""
  def rule(em, instr, v):
    b = em.b
    (a, c), (d, e) = v
    gt = b.or_(b.fcmp_ordered(">", a, d),
               b.and_(b.fcmp_ordered("==", a, d), b.fcmp_ordered(">", c, e)))
    lt = b.or_(b.fcmp_ordered("<", a, d),
               b.and_(b.fcmp_ordered("==", a, d), b.fcmp_ordered("<", c, e)))
    pick_x = gt if is_max else lt
    return Cx(b.select(pick_x, a, d), b.select(pick_x, c, e))
  return rule


def _cexp(em, instr, v):
  """e^a (cos c + i sin c)."""
  b = em.b
  a, c = v[0]
  dt = _part_dtype(a.type)
  r = em.math("exponential", [a], dt)
  return Cx(b.fmul(r, em.math("cosine", [c], dt)), b.fmul(r, em.math("sine", [c], dt)))


def _clog(em, instr, v):
  """log|z| + i atan2(im, re)."""
  a, c = v[0]
  dt = _part_dtype(a.type)
  return Cx(em.math("log", [_cabs(em, v[0])], dt), em.math("atan2", [c, a], dt))


def _csqrt(em, instr, v):
  """The principal root: s = sqrt((|z| + |re|) / 2); (s, im/2s) for re >= 0, else
  (|im|/2s, copysign(s, im))."""
  b = em.b
  a, c = v[0]
  t = a.type
  fabs = lambda x: em.intrinsic(f"llvm.fabs.{float_suffix(t)}", t, [x])
  s = em.math("sqrt", [b.fmul(b.fadd(_cabs(em, v[0]), fabs(a)), ir.Constant(t, 0.5))],
              _part_dtype(t))
  zero = b.fcmp_ordered("==", s, ir.Constant(t, 0.0))
  q = b.fdiv(c, b.fmul(ir.Constant(t, 2.0), b.select(zero, ir.Constant(t, 1.0), s)))
  q = b.select(zero, c, q)                      # sqrt(0 -+ 0i) = 0 -+ 0i (C99)
  pos = b.fcmp_ordered(">=", a, ir.Constant(t, 0.0))
  re = b.select(pos, s, fabs(q))
  im = b.select(pos, q, em.intrinsic(f"llvm.copysign.{float_suffix(t)}", t, [s, c]))
  inf = ir.Constant(t, float("inf"))
  inf_im = b.fcmp_ordered("==", fabs(c), inf)   # sqrt(x +- inf i) = inf +- inf i (C99)
  return Cx(b.select(inf_im, inf, re), b.select(inf_im, c, im))


_COMPLEX_RULES: dict[str, Callable] = {
    "complex": lambda em, i, v: Cx(v[0], v[1]),
    "real": lambda em, i, v: v[0].re,
    "imag": lambda em, i, v: v[0].im,
    "convert": lambda em, i, v: convert(em, v[0], i.operands[0].dtype, i.dtype),
    "copy": lambda em, i, v: v[0],
    "negate": lambda em, i, v: Cx(em.b.fneg(v[0].re), em.b.fneg(v[0].im)),
    "add": lambda em, i, v: Cx(em.b.fadd(v[0].re, v[1].re), em.b.fadd(v[0].im, v[1].im)),
    "subtract": lambda em, i, v: Cx(em.b.fsub(v[0].re, v[1].re), em.b.fsub(v[0].im, v[1].im)),
    "multiply": _cmul,
    "divide": lambda em, i, v: _cdiv(em, v[0], v[1]),
    "select": lambda em, i, v: _select_value(em, v[0], v[1], v[2]),
    "compare": _ccompare,
    "abs": lambda em, i, v: _cabs(em, v[0]),
    "sign": _csign,
    "maximum": _cmax_min(True),
    "minimum": _cmax_min(False),
    "exponential": _cexp,
    "log": _clog,
    "sqrt": _csqrt,
}


def _part_dtype(t):
  return dtypes.float32 if t == F32 else dtypes.float64


def _cabs(em, z):
  """|z| without overflow: m * sqrt(1 + (n/m)^2), m = max(|re|, |im|); inf wins over NaN."""
  b = em.b
  t = z.re.type
  fabs = lambda x: em.intrinsic(f"llvm.fabs.{float_suffix(t)}", t, [x])
  a, c = fabs(z.re), fabs(z.im)
  m = em.intrinsic(f"llvm.maxnum.{float_suffix(t)}", t, [a, c])
  n = em.intrinsic(f"llvm.minnum.{float_suffix(t)}", t, [a, c])
  zero = b.fcmp_ordered("==", m, ir.Constant(t, 0.0))
  r = b.fdiv(n, b.select(zero, ir.Constant(t, 1.0), m))
  out = b.fmul(m, em.math("sqrt", [b.fadd(ir.Constant(t, 1.0), b.fmul(r, r))], _part_dtype(t)))
  out = b.select(zero, ir.Constant(t, 0.0), out)
  inf = ir.Constant(t, float("inf"))
  is_inf = b.or_(b.fcmp_ordered("==", a, inf), b.fcmp_ordered("==", c, inf))
  nan = b.fcmp_unordered("uno", z.re, z.im)
  out = b.select(nan, ir.Constant(t, float("nan")), out)
  return b.select(is_inf, inf, out)


def _cdiv(em, x, y):
  """Smith's algorithm (as NumPy): scale by the larger part of the divisor."""
  b = em.b
  (a, c), (d, e) = x, y
  t = a.type
  fabs = lambda v: em.intrinsic(f"llvm.fabs.{float_suffix(t)}", t, [v])
  big = b.fcmp_ordered(">=", fabs(d), fabs(e))
  # |d| >= |e|: r = e/d, den = d + e r; re = (a + c r)/den, im = (c - a r)/den
  r1 = b.fdiv(e, d)
  den1 = b.fadd(d, b.fmul(e, r1))
  re1 = b.fdiv(b.fadd(a, b.fmul(c, r1)), den1)
  im1 = b.fdiv(b.fsub(c, b.fmul(a, r1)), den1)
  r2 = b.fdiv(d, e)
  den2 = b.fadd(e, b.fmul(d, r2))
  re2 = b.fdiv(b.fadd(b.fmul(a, r2), c), den2)
  im2 = b.fdiv(b.fsub(b.fmul(c, r2), a), den2)
  # a zero divisor: (a / |d|, c / |d|), as NumPy's divide and XLA (1 / 0j = inf + nanj)
  zero = b.and_(b.fcmp_ordered("==", d, ir.Constant(t, 0.0)),
                b.fcmp_ordered("==", e, ir.Constant(t, 0.0)))
  re = b.select(zero, b.fdiv(a, fabs(d)), b.select(big, re1, re2))
  return Cx(re, b.select(zero, b.fdiv(c, fabs(d)), b.select(big, im1, im2)))


# --------------------------------------------------------------------------------------
# Index rules: rule(em, instr, index) -> value. Operands are read at mapped indices.
# --------------------------------------------------------------------------------------

def _param(em, instr, idx):
  return em.read_param(instr.attrs["number"], idx)


def _constant(em, instr, idx):
  value = np.asarray(instr.attrs["value"])
  if value.size == 1:
    return const_of(instr.dtype, value.reshape(()))
  g = em.global_array(instr)
  return em.load(g, em.linear(idx, instr.shape.dims), instr.dtype)


def _iota(em, instr, idx):
  i = idx[instr.attrs["iota_dimension"]]
  return convert(em, i, np.int64, instr.dtype)


def _broadcast(em, instr, idx):
  dims = instr.attrs["dimensions"]
  op = instr.operands[0]
  return em.emit(op, tuple(em.i64(0) if op.shape.dims[k] == 1 else idx[d]
                           for k, d in enumerate(dims)))


def _transpose(em, instr, idx):
  perm = instr.attrs["dimensions"]
  src = [None] * len(perm)
  for i, p in enumerate(perm):
    src[p] = idx[i]
  return em.emit(instr.operands[0], tuple(src))


def reshape_groups(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list, list]]:
  """Split a reshape into consecutive groups of source/destination dims with equal
  products (e.g. [6,4] -> [2,3,4]: ([0],[0,1]), ([1],[2])); a 1-1 group is a pass-through."""
  if 0 in src or 0 in dst:
    return [(list(range(len(src))), list(range(len(dst))))]
  groups, i, j = [], 0, 0
  while i < len(src) or j < len(dst):
    gs, gd, ps, pd = [], [], 1, 1
    if i < len(src):
      gs.append(i); ps *= src[i]; i += 1
    if j < len(dst):
      gd.append(j); pd *= dst[j]; j += 1
    while ps != pd:
      if ps < pd:
        gs.append(i); ps *= src[i]; i += 1
      else:
        gd.append(j); pd *= dst[j]; j += 1
    # absorb trailing size-1 dims into this group so every group is non-empty on one side
    groups.append((gs, gd))
  return groups


def _reshape(em, instr, idx):
  return em.emit(instr.operands[0], reshape_index(em, instr, idx))


def reshape_index(em, instr, idx) -> tuple:
  """The operand's index of a reshape's element `idx`."""
  op = instr.operands[0]
  src, dst = op.shape.dims, instr.shape.dims
  out = [None] * len(src)
  for gs, gd in reshape_groups(src, dst):
    sdims = [src[s] for s in gs]
    ddims = [dst[d] for d in gd]
    if len(gs) == 1 and len(gd) == 1:
      out[gs[0]] = idx[gd[0]]
      continue
    if not gs:
      continue
    lin = em.linear([idx[d] for d in gd], ddims) if gd else em.i64(0)
    for s, v in zip(gs, em.delinear(lin, sdims)):
      out[s] = v
  return tuple(out)


def keeps_minor_dim(reshape: hlo.Instr) -> bool:
  """Whether a reshape passes its operand's minor dim through unchanged (consecutive
  elements along it stay consecutive)."""
  src, dst = reshape.operands[0].shape.dims, reshape.shape.dims
  return bool(src) and bool(dst) and \
      reshape_groups(src, dst)[-1] == ([len(src) - 1], [len(dst) - 1])


def _reverse(em, instr, idx):
  dims = set(instr.attrs["dimensions"])
  shape = instr.shape.dims
  src = tuple(em.b.sub(em.i64(shape[d] - 1), i) if d in dims and shape[d] > 1 else i
              for d, i in enumerate(idx))
  return em.emit(instr.operands[0], src)


def _slice(em, instr, idx):
  return em.emit(instr.operands[0], slice_index(em, instr, idx))


def slice_index(em, instr, idx) -> tuple:
  """The operand's index of a slice's element `idx`."""
  a = instr.attrs
  strides = a.get("strides") or (1,) * len(idx)
  starts = em.slice_starts.get(instr.id) or [em.i64(s) for s in a["start"]]
  return tuple(em.add_idx(s, em.mul_idx(i, st)) for i, s, st in zip(idx, starts, strides))


def _contiguous_slice(instr: hlo.Instr) -> bool:
  """A slice whose consecutive elements along the minor dim are consecutive in its operand
  (stride 1 there): a vector of it is a vector load of the operand."""
  return instr.opcode == "slice" and instr.shape.rank >= 1 and \
      (instr.attrs.get("strides") or (1,) * instr.shape.rank)[-1] == 1


def _dyn_starts(em, starts, operand_dims, sizes):
  """XLA's dynamic-slice rule: each start clamped so the window stays in bounds."""
  out = []
  for s, d, n in zip(starts, operand_dims, sizes):
    v = em.to_index(em.emit(s, ()), s.dtype)
    out.append(em.clamp_idx(v, 0, max(d - n, 0)))
  return out


def _dynamic_slice(em, instr, idx):
  op = instr.operands[0]
  starts = _dyn_starts(em, instr.operands[1:], op.shape.dims, instr.attrs["sizes"])
  return em.emit(op, tuple(em.add_idx(s, i) for s, i in zip(starts, idx)))


def _dynamic_update_slice(em, instr, idx):
  b = em.b
  op, upd = instr.operands[:2]
  udims = upd.shape.dims
  starts = _dyn_starts(em, instr.operands[2:], op.shape.dims, udims)
  base = em.emit(op, idx)
  if 0 in udims:
    return base
  inside = ir.Constant(I1, 1)
  uidx = []
  for i, s, n in zip(idx, starts, udims):
    r = b.sub(i, s)
    inside = b.and_(inside, b.and_(b.icmp_signed(">=", r, em.i64(0)),
                                   b.icmp_signed("<", r, em.i64(n))))
    uidx.append(em.clamp_idx(r, 0, n - 1))
  return em.choose(inside, lambda: em.emit(upd, tuple(uidx)), lambda: base,
                   em.expensive(upd))


def _select_value(em, cond, a, b_):
  b = em.b
  if isinstance(a, Cx):
    return Cx(b.select(cond, a.re, b_.re), b.select(cond, a.im, b_.im))
  return b.select(cond, a, b_)


# A concatenate inside a fusion (not its root: see concat_regions) selects among its operands
# with selects (every operand computed, then one kept: branch-free, vectorizes) only when
# they are few and each is a load or a couple of operations; otherwise with a balanced tree
# of branches that computes only the operand that holds the element (log2(N) comparisons).
CONCAT_SELECT_MAX_OPERANDS = 4
CONCAT_SELECT_MAX_OPS = 2


def _concatenate(em, instr, idx):
  """The operand whose range holds idx[d], read at its local index (clamped in the select
  form, where every operand is read at every index)."""
  d = instr.attrs["dimension"]
  b = em.b
  parts, off = [], 0
  for op in instr.operands:
    if op.shape.dims[d]:
      parts.append((op, off))
    off += op.shape.dims[d]
  if not parts:   # every operand empty along d: so is the output, never read at any index
    return const_of(instr.dtype, 0)
  lazy = len(parts) > CONCAT_SELECT_MAX_OPERANDS or any(
      em.expensive(op) or em.op_count(op) > CONCAT_SELECT_MAX_OPS for op, _ in parts)

  def value(k):   # operand k at idx, its index along d shifted (and clamped if selected)
    op, start = parts[k]
    n = op.shape.dims[d]
    local = b.sub(idx[d], em.i64(start)) if start else idx[d]
    if n < instr.shape.dims[d] and not lazy:
      local = em.clamp_idx(local, 0, n - 1)
    return em.emit(op, idx[:d] + (local,) + idx[d + 1:])

  def from_k(k):  # selects: the value for operands k.. (idx[d] >= start of operand k)
    if k == len(parts) - 1:
      return value(k)
    nxt = parts[k + 1][1]
    return em.choose(b.icmp_signed("<", idx[d], em.i64(nxt)), lambda: value(k),
                     lambda: from_k(k + 1), False)

  def between(lo, hi):   # branches: the value for operands lo..hi-1, halving the range
    if hi - lo == 1:
      return value(lo)
    mid = (lo + hi) // 2
    return em.choose(b.icmp_signed("<", idx[d], em.i64(parts[mid][1])),
                     lambda: between(lo, mid), lambda: between(mid, hi), True)
  return between(0, len(parts)) if lazy else from_k(0)


def _longer_rows_under_reshape(root: hlo.Instr, dims) -> hlo.Instr | None:
  """The operand of a root reshape when the loop nest should run over its shape instead: a
  reshape only reinterprets the row-major buffer, so the operand's values stored at its own
  linear indices are the output. Worth it when its minor dimension is longer (the
  vectorized inner loop: bernoulli bits reshaped into [100, 28, 28] images then run rows of
  784, not 28) and dim 0, the kernel's range, is the same."""
  if root.opcode != "reshape" or not dims:
    return None
  x = root.operands[0]
  xd = x.shape.dims
  return x if len(xd) >= 1 and xd[0] == dims[0] and xd[-1] > dims[-1] else None


def region_groups(regions) -> list[list[tuple]]:
  """`concat_regions` grouped by program: regions whose operands compute the same thing
  (same ops, shapes, attributes, parameters) except for the start indices of their slices
  (a grid of images cut from one array) form one group, whose members are
  (operand, offset, its slices in a fixed walk order); the kernel runs one loop nest for
  the whole group (`KernelBuilder._region_table`) instead of one copy per region."""
  groups: dict = {}
  for x, offset in regions:
    key, slices = _program_key(x)
    groups.setdefault(key, []).append((x, offset, slices))
  return list(groups.values())


def _program_key(x: hlo.Instr):
  """(a structural key of the tree below `x` with slice starts left out, the slices)."""
  pos: dict[int, int] = {}
  key, slices = [], []
  stack = [(x, False)]
  while stack:                       # post-order, operands in order
    i, done = stack.pop()
    if i.id in pos:
      continue
    if not done:
      stack.append((i, True))
      stack.extend((o, False) for o in reversed(i.operands) if o.id not in pos)
      continue
    attrs = dict(i.attrs)
    if i.opcode == "slice":
      start = attrs.pop("start")   # kept: the extent (limit - start) and strides
      attrs["limit"] = tuple(l - s for l, s in zip(attrs["limit"], start))
      slices.append(i)
    pos[i.id] = len(pos)
    key.append((i.opcode, i.shape, tuple(pos[o.id] for o in i.operands),
                repr(sorted(attrs.items())), hlo.structure_key(i.called) if i.called else ()))
  return tuple(key), slices


def concat_regions(comp: hlo.Computation) -> list[tuple[hlo.Instr, tuple]] | None:
  """For a fusion whose root is a concatenate: (operand, its offset in the output) for each
  non-empty operand, nested concatenates used only by their parent (a vstack of hstacks)
  expanded into their own operands. The kernel then writes each operand's region with a
  loop nest of its own (`KernelBuilder._concat_nest`): one evaluation per element, no
  selection among operands. None when the root is not a concatenate."""
  root = comp.root
  if root.opcode != "concatenate":
    return None
  users = comp.users()
  out: list[tuple[hlo.Instr, tuple]] = []

  def expand(x, offset):
    d = x.attrs["dimension"]
    at = 0
    for op in x.operands:
      n = op.shape.dims[d]
      if n and 0 not in op.shape.dims:
        here = offset[:d] + (offset[d] + at,) + offset[d + 1:]
        if op.opcode == "concatenate" and len(users.get(op.id, [])) == 1:
          expand(op, here)
        else:
          out.append((op, here))
      at += n
  expand(root, (0,) * root.shape.rank)
  return out


def _pad(em, instr, idx):
  b = em.b
  op, pad_value = instr.operands
  a = instr.attrs
  dims = op.shape.dims
  pv = em.emit(pad_value, ())
  if 0 in dims:
    return pv
  inside = ir.Constant(I1, 1)
  src = []
  for i, lo, it, n in zip(idx, a["low"], a["interior"], dims):
    t = b.sub(i, em.i64(lo)) if lo else i
    if it:
      safe = b.select(b.icmp_signed("<", t, em.i64(0)), em.i64(0), t)
      q = b.udiv(safe, em.i64(it + 1))
      on_grid = b.icmp_unsigned("==", b.urem(safe, em.i64(it + 1)), em.i64(0))
      ok = b.and_(b.and_(b.icmp_signed(">=", t, em.i64(0)), on_grid),
                  b.icmp_signed("<", q, em.i64(n)))
      src.append(em.clamp_idx(q, 0, n - 1))
    else:
      ok = b.and_(b.icmp_signed(">=", t, em.i64(0)), b.icmp_signed("<", t, em.i64(n)))
      src.append(em.clamp_idx(t, 0, n - 1))
    inside = b.and_(inside, ok)
  return em.choose(inside, lambda: em.emit(op, tuple(src)), lambda: pv, em.expensive(op))


def _gather(em, instr, idx):
  """XLA Gather: the output's batch dims index the start indices, its offset dims walk the
  slice; starts are clamped so each slice stays in bounds."""
  a = instr.attrs
  op, ind = instr.operands
  offset_dims = tuple(a["offset_dims"])
  collapsed = set(a["collapsed_slice_dims"])
  sim = tuple(a["start_index_map"])
  obd = tuple(a.get("operand_batching_dims", ()))
  sibd = tuple(a.get("start_indices_batching_dims", ()))
  ivd = a["index_vector_dim"]
  sizes = a["slice_sizes"]
  odims = op.shape.dims
  batch = [idx[d] for d in range(len(idx)) if d not in offset_dims]

  def ind_index(k):
    if ivd >= ind.shape.rank:
      return tuple(batch)
    return tuple(batch[:ivd]) + (em.i64(k),) + tuple(batch[ivd:])

  starts = [em.i64(0)] * len(odims)
  for k, od in enumerate(sim):
    v = em.to_index(em.emit(ind, ind_index(k)), ind.dtype)
    starts[od] = em.clamp_idx(v, 0, max(odims[od] - sizes[od], 0))
  for od, sd in zip(obd, sibd):
    starts[od] = batch[sd if sd < ivd else sd - 1]
  window = [d for d in range(len(odims)) if d not in collapsed and d not in obd]
  for k, od in enumerate(window):
    starts[od] = em.add_idx(starts[od], idx[offset_dims[k]])
  return em.emit(op, tuple(starts))


def _bitcast_convert_index(em, instr, idx):
  src, dst = instr.operands[0].dtype, instr.dtype
  sb, db = bits(src), bits(dst)
  if sb == db:
    return em.scalar_op(instr, [em.emit(instr.operands[0], idx)])
  b = em.b
  if sb > db:   # the output has an extra minor dim: piece k of the source (little-endian)
    u = em.to_bits(em.emit(instr.operands[0], idx[:-1]), src)
    sh = b.mul(b.trunc(idx[-1], u.type) if u.type.width < 64 else idx[-1],
               ir.Constant(u.type, db))
    piece = b.trunc(b.lshr(u, sh), ir.IntType(db))
    return em.from_bits(piece, dst)
  acc = ir.Constant(ir.IntType(db), 0)
  for k in range(db // sb):
    piece = em.to_bits(em.emit(instr.operands[0], idx + (em.i64(k),)), src)
    acc = b.or_(acc, b.shl(b.zext(piece, acc.type), ir.Constant(acc.type, k * sb)))
  return em.from_bits(acc, dst)


def _get_tuple_element(em, instr, idx):
  return em.emit(instr.operands[0], idx)[instr.attrs["index"]]


def _tuple(em, instr, idx):
  return [em.emit(o, idx) for o in instr.operands]


def combiner_kind(comp: hlo.Computation) -> str | None:
  """The opcode of a reduce's to_apply when it is `op(p0, p1)` on its two parameters."""
  root = comp.root
  ps = comp.params
  if len(ps) == 2 and root.opcode in ("add", "multiply", "maximum", "minimum", "and", "or") \
      and {o.id for o in root.operands} == {p.id for p in ps} and len(root.operands) == 2:
    return root.opcode
  return None


def _reduce(em, instr, idx):
  n = len(instr.operands) // 2
  inputs, inits = instr.operands[:n], instr.operands[n:]
  rdims = sorted(instr.attrs["dimensions"])
  in_dims = inputs[0].shape.dims
  comp = instr.called[0]
  reassoc = reassociable(instr)
  if reassoc and int(np.prod([in_dims[d] for d in rdims])) <= SEQUENTIAL_MAX:
    reassoc = False           # a few terms: in order (tier-stable) costs next to nothing
  acc0 = [em.emit(i, ()) for i in inits]
  kept = iter(idx)
  full = [None if d in rdims else next(kept) for d in range(len(in_dims))]
  # A float reduction of a short prologue over the contiguous minor dim: explicit vector
  # lanes in a fixed order (`fixed_lanes`), no `reassoc` (its module may start quick)
  lanes_n = _fixed_lanes(em, inputs[0], in_dims, rdims, tuple(full)) \
      if reassoc or _float_max_min(instr) else 0
  reassoc = reassoc and not lanes_n

  def step(carried):
    em.push()
    index = tuple(full)
    vals = [em.emit(x, index) for x in inputs]
    out = em.apply(comp, _unflatten_vals(carried, acc0) + vals, reassoc=reassoc)
    em.pop()
    return _flatten_vals(out)

  # A combiner LLVM cannot vectorize by itself (variadic like argmax, or rounding to a
  # narrow float at every step) over the contiguous minor dim: VLANES independent
  # accumulators take interleaved elements (XLA leaves the reduction order unspecified),
  # breaking the loop-carried dependency chain; they are combined at the end (`lanes`).
  lanes_ok = (combiner_kind(comp) is None or is_narrow(inputs[0].dtype)) and \
      rdims and rdims[-1] == len(in_dims) - 1 and in_dims[-1] >= 2 * VLANES

  def lanes(d, carried):
    """Reduce the minor dim in blocks of VLANES: lane l of every block accumulates into
    slot l of a stack array per accumulator (an element-wise loop over the lanes, which
    LLVM vectorizes like a column reduction); then the lanes are combined in order, then
    the tail."""
    n = in_dims[d]
    blocks = n // VLANES
    b = em.b
    cur_block = b.block
    b.position_at_start(b.function.entry_basic_block)
    slots = [b.alloca(v.type, size=em.i64(VLANES)) for v in carried]
    b.position_at_end(cur_block)

    def at(slot, lane):
      return b.gep(slot, [lane], inbounds=True, source_etype=slot.type.pointee
                   if not getattr(slot.type, "is_opaque", True) else None)

    def init(lane, _c):
      for s_, v in zip(slots, carried):
        b.store(v, at(s_, lane))
      return []
    em.loop(em.i64(0), em.i64(VLANES), [], init)

    def block(jb, _c):
      base = em.mul_idx(jb, VLANES)

      def lane(l, _c2):
        full[d] = em.add_idx(base, l)
        ptrs = [at(s_, l) for s_ in slots]
        cur = [b.load(p_, typ=v.type) for p_, v in zip(ptrs, carried)]
        for p_, v in zip(ptrs, step(cur)):
          b.store(v, p_)
        return []
      em.loop(em.i64(0), em.i64(VLANES), [], lane)
      return []
    em.loop(em.i64(0), em.i64(blocks), [], block)

    def combine(l, acc):
      other = [b.load(at(s_, l), typ=v.type) for s_, v in zip(slots, carried)]
      return _flatten_vals(em.apply(comp, _unflatten_vals(acc, acc0) +
                                    _unflatten_vals(other, acc0)))
    first = [b.load(at(s_, em.i64(0)), typ=v.type) for s_, v in zip(slots, carried)]
    acc = em.loop(em.i64(1), em.i64(VLANES), first, combine)

    def tail(j, c):
      full[d] = j
      return step(c)
    return em.loop(em.i64(blocks * VLANES), em.i64(n), acc, tail)

  def fixed_lanes(d, carried):
    """The minor dim in blocks of FIXED_LANES vectors of `lanes_n` elements, vector u of a
    block into accumulator u (lane 0 of the first starts from the carried value, every other
    lane from the identity), the prologue computed on vectors (`_vector_value`); then the
    accumulators u < FIXED_LANES. The tail: its whole vectors into accumulators 0, 1, ..,
    then one vector ending at n (its lanes before the tail as the identity) into the next;
    then the accumulators and the halves of the vector combine pairwise. Explicit vector IR
    without fast-math flags: quick and optimized code add in this order (max and min, exact
    in any order, take this path for the quick tier's speed). A scalar tail was a chain of
    dependent steps (softmax's 1000-wide rows: 40 of them, a row max took twice the time of
    a 1024-wide one)."""
    b, n = em.b, in_dims[d]

    def op(x, y):
      return em.apply(comp, [x, y])[0]
    vt = ir.VectorType(carried[0].type, lanes_n)
    step_n = lanes_n * FIXED_LANES
    kind_ = combiner_kind(comp)
    ident = const_of(inputs[0].dtype, _IDENTITY[kind_])
    splat = ir.Constant(vt, [ident.constant] * lanes_n)
    first = b.insert_element(splat, carried[0], ir.Constant(I32, 0))
    # max/min on zmm: one vrange per vector, the NaNs in accumulators of their own (the
    # last NaN of each lane), merged back before the lanes combine: same bits, 3 not 6 ops
    ranged = kind_ in ("maximum", "minimum") and range_lanes_ok(vt)
    inits = [first] + [splat] * (FIXED_LANES - 1)

    def add_vectors(base, accs, count, first=0, keep_from=0):
      """Vectors k < count at base + k * lanes_n into accumulators first + k (and their
      NaNs'); lanes below `keep_from` (elements counted already) as the identity."""
      out, nans = list(accs[:FIXED_LANES]), list(accs[FIXED_LANES:])
      for u in range(first, first + count):
        full[d] = em.add_idx(base, em.i64((u - first) * lanes_n))
        em.push()
        x = _vector_value(em, inputs[0], tuple(full), vt)
        if keep_from:
          keep = ir.Constant(ir.VectorType(I1, lanes_n), [k >= keep_from for k in range(lanes_n)])
          x = b.select(keep, x, splat)
        if ranged:
          out[u] = em.fmax_number(out[u], x, kind_ == "maximum")
          nans[u] = b.select(b.fcmp_unordered("uno", x, x), x, nans[u])
        else:
          out[u] = op(out[u], x)
        em.pop()
      return out + nans

    def block(jb, accs):
      return add_vectors(em.mul_idx(jb, step_n), accs, FIXED_LANES)
    accs = em.loop(em.i64(0), em.i64(n // step_n), inits + (inits if ranged else []), block)
    done = n // step_n * step_n
    if done < n:
      # the tail's whole vectors, then one vector ending at n whose lanes seen already count
      # as the identity (max/min: exact in any order and idempotent, so they count twice),
      # into the next accumulators: no scalar loop (a dependent chain of up to 63 steps)
      whole = (n - done) // lanes_n
      accs = add_vectors(em.i64(done), accs, whole)
      rest = n - done - whole * lanes_n
      if rest:
        accs = add_vectors(em.i64(n - lanes_n), accs, 1, whole,
                           0 if kind_ in ("maximum", "minimum") else lanes_n - rest)
    if ranged:
      accs = [b.select(b.fcmp_unordered("uno", q, q), q, v)
              for v, q in zip(accs[:FIXED_LANES], accs[FIXED_LANES:])]
    while len(accs) > 1:
      half = len(accs) // 2
      accs = [op(accs[k], accs[k + half]) for k in range(half)]
    v, width = accs[0], lanes_n
    while width > 1:
      width //= 2
      upper = ir.Constant(ir.VectorType(I32, lanes_n),
                          [width + k if k < width else 0 for k in range(lanes_n)])
      v = op(v, b.shuffle_vector(v, ir.Constant(vt, None), upper))

    return [b.extract_element(v, ir.Constant(I32, 0))]

  def nest(level, carried):
    if level == len(rdims):
      return step(carried)
    d = rdims[level]
    if lanes_ok and level == len(rdims) - 1:
      return lanes(d, carried)
    if lanes_n and level == len(rdims) - 1:
      return fixed_lanes(d, carried)

    def body(i, c):
      full[d] = i
      return nest(level + 1, c)
    return em.loop(em.i64(0), em.i64(in_dims[d]), carried, body)

  em.hoist([(x, tuple(Inner() if v is None else v for v in full)) for x in inputs])

  res = _unflatten_vals(nest(0, _flatten_vals(acc0)), acc0)
  return res if isinstance(instr.shape, hlo.TupleShape) else res[0]


WINDOW_UNROLL = 64   # windows of at most this many elements are straight-line code


def _reduce_window(em, instr, idx):
  """XLA ReduceWindow at one output index: the window's elements folded in window order
  into the init values. Along each dim the operand position is (i * stride + k *
  window_dilation - pad_low) / base_dilation; off the grid of the base dilation or out of
  range the element is the init value (the position read is clamped into range and the
  value replaced by a select, so no branch is taken). Windows of at most WINDOW_UNROLL
  elements are unrolled: the output's minor loop, which usually indexes no window dim
  (pooling over H, W of NHWC), then vectorizes; larger windows are loops."""
  n = len(instr.operands) // 2
  inputs, inits = instr.operands[:n], instr.operands[n:]
  a = instr.attrs
  comp = instr.called[0]
  in_dims = inputs[0].shape.dims
  acc0 = [em.emit(i, ()) for i in inits]
  b = em.b
  windows = list(zip(in_dims, idx, a["window_dimensions"], a["window_strides"], a["padding"],
                     a["base_dilation"], a["window_dilation"], _out_dims(instr)))

  def read(ks):
    """The inputs' values at window offsets `ks` (Python ints or i64 values)."""
    if 0 in in_dims:     # an empty operand: every window holds only padding
      return list(acc0)
    ok, src = None, []
    for (d, i, w, s, (lo, hi), bd, wd, o), k in zip(windows, ks):
      static = isinstance(k, int)
      p = em.add_idx(em.mul_idx(i, s), em.i64(k * wd - lo) if static else
                     em.add_idx(em.mul_idx(k, wd), em.i64(-lo)))
      span = (d - 1) * bd + 1
      top = (o - 1) * s + (w - 1) * wd - lo
      if bd == 1 and lo <= 0 and top < span:      # always inside the operand
        src.append(p)
        continue
      inside = b.and_(b.icmp_signed(">=", p, em.i64(0)), b.icmp_signed("<", p, em.i64(span)))
      if bd != 1:
        safe = em.clamp_idx(p, 0, span - 1)
        inside = b.and_(inside, b.icmp_unsigned("==", b.urem(safe, em.i64(bd)), em.i64(0)))
        src.append(b.udiv(safe, em.i64(bd)))
      else:
        src.append(em.clamp_idx(p, 0, d - 1))
      ok = inside if ok is None else b.and_(ok, inside)
    vals = [em.emit(x, tuple(src)) for x in inputs]
    return vals if ok is None else [_select_value(em, ok, v, i) for v, i in zip(vals, acc0)]

  def step(carried, ks):
    em.push()
    out = em.apply(comp, _unflatten_vals(carried, acc0) + read(ks))
    em.pop()
    return _flatten_vals(out)

  wdims = a["window_dimensions"]
  carried = _flatten_vals(acc0)
  if int(np.prod(wdims, dtype=np.int64)) <= WINDOW_UNROLL:
    for ks in np.ndindex(*wdims):
      carried = step(carried, [int(k) for k in ks])
  else:
    ks = [None] * len(wdims)

    def nest(level, c):
      if level == len(wdims):
        return step(c, list(ks))

      def body(k, c2):
        ks[level] = k
        return nest(level + 1, c2)
      return em.loop(em.i64(0), em.i64(wdims[level]), c, body)
    carried = nest(0, carried)
  res = _unflatten_vals(carried, acc0)
  return res if isinstance(instr.shape, hlo.TupleShape) else res[0]


def _out_dims(instr: hlo.Instr) -> tuple:
  s = instr.shape
  return tuple(s.elements[0].dims if isinstance(s, hlo.TupleShape) else s.dims)


# Fixed-order lanes (`_reduce`'s fixed_lanes): FIXED_LANES vectors of 64 bytes (AVX-512
# zmm) of accumulators, as many independent add chains as LLVM's interleaved loop
# vectorizer kept in flight. Only a short prologue of vector-friendly ops qualifies (row
# sums, x*x, (x - mean)**2, softmax's sum of its row buffer, logsumexp's exp(x - max)):
# parameters read along the minor dim, row buffers (`fill_row_caches`), values invariant
# along it (broadcasts, scalar constants), float add/subtract/multiply/divide/negate and
# the math library's functions (which take vector types).
FIXED_LANES = 4
FIXED_LANES_BYTES = 64
FIXED_LANES_MAX_OPS = 6
SEQUENTIAL_MAX = 16     # float sums of at most this many terms per output: in order
_VECTOR_OPS = {"add", "subtract", "multiply", "divide", "negate"}


def range_lanes_ok(vt: ir.VectorType) -> bool:
  """Whether fixed-lanes max/min may use `fmax_number` (vrange: AVX-512DQ) on vectors of
  type `vt`: one zmm of float32 or float64."""
  el = vt.element
  return host.is_x86() and host.has("avx512dq") and \
      (el == F32 and vt.count == 16 or el == F64 and vt.count == 8)


def fixed_lanes_prologue(x: hlo.Instr, in_dims: Sequence[int], rdims: Sequence[int],
                         is_leaf: Callable = lambda i: False) -> list | None:
  """The ops `_vector_value` computes for a fixed-order float reduction of `x`, or None
  when there is none (reassociate instead): the reduction covers the minor dim, which is
  long enough, and x is made of vector-friendly ops down to values read along the minor dim
  (parameters, through reshapes that keep it; `is_leaf`: the emitter's row buffers) or
  invariant along it (scalars, broadcasts that do not map it)."""
  minor = len(in_dims) - 1
  if not rdims or rdims[-1] != minor or \
      in_dims[minor] < FIXED_LANES * FIXED_LANES_BYTES // np.dtype(x.dtype).itemsize:
    return None
  return vector_prologue(x, is_leaf)


def vector_prologue(x: hlo.Instr, is_leaf: Callable = lambda i: False) -> list | None:
  """The ops `_vector_value` computes for `x` on vectors along the minor dim (at most
  FIXED_LANES_MAX_OPS of them), or None when x is not made of vector-friendly ops down to
  values read along the minor dim (parameters, through reshapes that keep it and slices
  with stride 1 there; `is_leaf`: the emitter's row buffers) or invariant along it
  (scalars, broadcasts that do not map it)."""
  from ember._src.backends.cpu import mathlib   # deferred: its import costs ~20 ms
  ops, todo, seen = [], [(x, False)], set()
  while todo:
    i, reshaped = todo.pop()
    if (i.id, reshaped) in seen:
      continue
    seen.add((i.id, reshaped))
    if not i.shape.dims or i.opcode == "parameter" or \
        i.opcode == "broadcast" and len(i.shape.dims) - 1 not in i.attrs["dimensions"] or \
        is_leaf(i) and not reshaped:
      continue
    if i.opcode == "reshape" and keeps_minor_dim(i) or _contiguous_slice(i):
      todo.append((i.operands[0], True))
      continue
    if i.opcode not in _VECTOR_OPS and i.opcode not in mathlib.OPCODES or i.dtype != x.dtype:
      return None
    ops.append(i)
    todo.extend((o, reshaped) for o in i.operands)
  return ops if len(ops) <= FIXED_LANES_MAX_OPS else None


def _fixed_lanes(em, x: hlo.Instr, in_dims: Sequence[int], rdims: Sequence[int],
                 index: tuple) -> int:
  """The vector width of a fixed-order float reduction of `x` in this kernel (at `index`,
  the reduced dims unset), or 0."""
  if em.param_address is None or fixed_lanes_prologue(
      x, in_dims, rdims, lambda i: em.cached_row(i, index) is not None) is None:
    return 0
  return FIXED_LANES_BYTES // np.dtype(x.dtype).itemsize


_IDENTITY = {"add": -0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def column_lanes(reduce: hlo.Instr) -> int:
  """The vector width (FIXED_LANES_BYTES) at which a column reduction (a kernel root:
  `_column_reduce`) accumulates explicit vectors of output elements, or 0 (scalar code that
  LLVM may vectorize): a float (not narrow) sum, product, max or min of a vector-friendly
  prologue (`vector_prologue`). Each output element is still reduced in order, so the
  values are those of the scalar loop, and quick-tier code is vector code too."""
  x = reduce.operands[0]
  if len(reduce.operands) != 2 or combiner_kind(reduce.called[0]) not in _IDENTITY or \
      is_narrow(x.dtype) or kind(x.dtype) != "f" or x.dtype != reduce.dtype or \
      vector_prologue(x) is None:
    return 0
  return FIXED_LANES_BYTES // np.dtype(x.dtype).itemsize


def _float_max_min(reduce: hlo.Instr) -> bool:
  x = reduce.operands[0]
  return combiner_kind(reduce.called[0]) in ("maximum", "minimum") and \
      not is_narrow(x.dtype) and kind(x.dtype) == "f"


def reassociable(reduce: hlo.Instr) -> bool:
  """A float (not narrow) sum or product: LLVM vectorizes it only with `reassoc`."""
  x = reduce.operands[0]
  return combiner_kind(reduce.called[0]) in ("add", "multiply") and \
      not is_narrow(x.dtype) and kind(x.dtype) == "f"


def vector_transcendentals(comp: hlo.Computation) -> float:
  """The transcendentals fixed-order reductions compute on vectors in `comp` (fusions
  included): the quick tier runs them at vector speed (cost_model.quick_pays)."""
  n = 0.0
  for i in comp.instrs:
    if i.opcode == "reduce" and (reassociable(i) or _float_max_min(i)):
      x = i.operands[0]
      ops = fixed_lanes_prologue(x, x.shape.dims, sorted(i.attrs["dimensions"]))
      n += sum(o.opcode in hlo.TRANSCENDENTAL for o in ops or ()) * x.shape.size
    elif i.opcode in ("fusion", "call"):
      n += sum(vector_transcendentals(c) for c in i.called)
  return n


def _vector_value(em, x: hlo.Instr, index: tuple, vt: ir.VectorType,
                  reshaped: bool = False) -> ir.Value:
  """`x` at `index` and the next vt.count - 1 positions of the minor dim, as one vector
  (`_fixed_lanes` checked that x is made of what this computes)."""
  b = em.b
  cached = None if reshaped else em.cached_row(x, index)   # a row buffer (softmax's exp)
  if x.opcode == "parameter" and x.shape.dims or cached:
    ptr = b.gep(cached[1], [index[-1]], inbounds=True, source_etype=vt.element) if cached \
        else em.param_address(x.attrs["number"], index)
    v = b.load(ptr, typ=vt)
    v.align = np.dtype(x.dtype).itemsize
    return v
  if not x.shape.dims or x.opcode == "broadcast":     # invariant along the minor dim
    s = em.emit(x, index if x.shape.dims else ())
    one = b.insert_element(ir.Constant(vt, None), s, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, None),
                            ir.Constant(ir.VectorType(I32, vt.count), [0] * vt.count))
  if x.opcode == "reshape":
    return _vector_value(em, x.operands[0], reshape_index(em, x, index), vt, True)
  if x.opcode == "slice":   # _contiguous_slice: consecutive along the minor dim
    return _vector_value(em, x.operands[0], slice_index(em, x, index), vt, True)
  return em.scalar_op(x, [_vector_value(em, o, index, vt, reshaped) for o in x.operands])


_INDEX_RULES: dict[str, Callable] = {
    "parameter": _param, "constant": _constant, "iota": _iota, "broadcast": _broadcast,
    "transpose": _transpose, "reshape": _reshape, "reverse": _reverse,
    "slice": _slice, "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice, "concatenate": _concatenate, "pad": _pad,
    "gather": _gather, "reduce": _reduce, "reduce-window": _reduce_window,
    "get-tuple-element": _get_tuple_element,
    "tuple": _tuple,
}


def _bitcast_dispatch(em, instr, idx):
  if bits(instr.operands[0].dtype) != bits(instr.dtype):
    return _bitcast_convert_index(em, instr, idx)
  return em.scalar_op(instr, [em.emit(instr.operands[0], idx)])


_INDEX_RULES["bitcast-convert"] = _bitcast_dispatch


# --------------------------------------------------------------------------------------
# Kernels: one function per fusion
# --------------------------------------------------------------------------------------

class KernelInfo(NamedTuple):
  """What the runtime needs to call a kernel: its symbol and its outer-loop range."""
  name: str               # the LLVM function name (the fusion's name)
  outer: int              # the kernel runs [start, stop) within [0, outer)
  splittable: bool        # whether sub-ranges of [0, outer) may run concurrently


def fusion_outputs(comp: hlo.Computation) -> list[hlo.Shape]:
  s = comp.root.shape
  return list(s.elements) if isinstance(s, hlo.TupleShape) else [s]


def outer_extent(dims: Sequence[int]) -> int:
  if len(dims) >= 2:
    return dims[0]
  return dims[0] if dims else 1


def _is_pure_elementwise(comp: hlo.Computation) -> bool:
  """Every value is read at the output's own index (or is a scalar): the loop nest can be
  one flat loop, which vectorizes even when the minor dimension is short."""
  out_dims = fusion_outputs(comp)[0].dims
  for i in comp.instrs:
    op = i.opcode
    if op == "parameter" or op == "tuple":
      continue
    if op == "constant" and np.asarray(i.attrs["value"]).size == 1:
      continue
    if op == "broadcast" and i.operands[0].shape.rank == 0:
      continue
    if op not in hlo.ELEMENTWISE or op == "bitcast-convert" and \
        bits(i.operands[0].dtype) != bits(i.dtype):
      return False
  for i in comp.instrs:
    if i.opcode == "parameter" and i.shape.dims not in ((), out_dims):
      return False
  return True


# Column reductions add this many input rows per pass over the output row: each output
# element is loaded and stored once per COLUMN_ROWS rows (the order of the terms is the
# same as one row per pass: bit-identical).
COLUMN_ROWS = 4

TILE = 32   # the block edge of a tiled loop nest (_transposed_dim)


def _transposed_dim(comp: hlo.Computation, roots, dims) -> int | None:
  """The output dim `a` to tile together with the minor dim, when the fusion reads an
  array (parameter or constant) whose minor dim follows output dim `a` while the output's
  minor dim indexes another of its dims (a transpose): the row-by-row nest would read that
  array with a stride of a whole row per element. Only for fusions without reductions or
  expensive ops (the tiled nest does not hoist invariants) and big enough to miss cache."""
  n = len(dims)
  if n < 2 or 0 in dims or dims[-1] < 2 * TILE or int(np.prod(dims)) < 1 << 16:
    return None
  if any(is_expensive(i) for i in comp.instrs):
    return None
  syms = tuple(range(n))
  seen, found = set(), []

  def walk(x, idx):
    if (x.id, idx) in seen:
      return
    seen.add((x.id, idx))
    if x.opcode == "parameter" or x.opcode == "constant" and x.shape.rank:
      if idx and idx[-1] is not None and idx[-1] != n - 1 and n - 1 in idx:
        found.append(idx[-1])
      return
    for k, o in enumerate(x.operands):
      oi = operand_index(x, k, idx, None)
      if oi is not None:
        walk(o, oi)
  for r in roots:
    walk(r, syms)
  return found[0] if found else None


def in_place_update(comp: hlo.Computation, in_place: dict[int, int] | None
                    ) -> hlo.Instr | None:
  """The root dynamic-update-slice of a fused computation whose kernel runs in place (its
  operand 0 a parameter read nowhere else, in the output's buffer: `in_place`), so the
  kernel writes only the update window (a scan's ys element per iteration), not the whole
  output; else None."""
  root = comp.root
  if root.opcode != "dynamic-update-slice" or not in_place:
    return None
  base = root.operands[0]
  if base.opcode != "parameter" or in_place != {base.attrs["number"]: 0}:
    return None
  return root if comp.users().get(base.id) == [root] else None


BLOCK = 8   # the edge of a block transposed in registers (_block_transpose)


def block_transpose_param(roots, a: int) -> hlo.Instr | None:
  """The transpose (of a parameter, any element type but complex) that is the whole
  fusion, when the tiled nest over (output dim `a`, minor dim) can move it in BLOCK x BLOCK
  blocks through registers (`_block_transpose`) instead of element by element."""
  if len(roots) != 1:
    return None
  t = roots[0]
  if t.opcode != "transpose" or t.operands[0].opcode != "parameter" or kind(t.dtype) == "c":
    return None
  perm = t.attrs["dimensions"]
  n = len(perm)
  return t if perm[a] == n - 1 and perm[n - 1] != n - 1 else None


def _transpose_lanes(b: ir.IRBuilder, rows: list) -> list:
  """rows[k][l] -> out[l][k] for len(rows) == lanes == BLOCK (a power of two): stage s
  swaps bit s of the row number with bit s of the lane (two-source shuffles)."""
  n = len(rows)
  mask = lambda m: ir.Constant(ir.VectorType(I32, n), m)
  s = 1
  while s < n:
    lo = mask([l if not l & s else n + l - s for l in range(n)])
    hi = mask([l + s if not l & s else n + l for l in range(n)])
    new = list(rows)
    for r in range(n):
      if not r & s:
        new[r] = b.shuffle_vector(rows[r], rows[r + s], lo)
        new[r + s] = b.shuffle_vector(rows[r], rows[r + s], hi)
    rows, s = new, s * 2
  return rows


class KernelBuilder:
  """Emits fusion kernels into one LLVM module."""

  def __init__(self, module: ir.Module):
    self.module = module
    # Fusions with the same program, aliasing and in-place operands share one kernel (a
    # model's repeated layers compile once): key -> KernelInfo, and name -> the symbol used.
    self._kernels: dict[tuple, KernelInfo] = {}
    self.aliases: dict[str, str] = {}

  def _entry(self, name: str, n_ptrs: int, noalias: Sequence[bool]):
    """The exported ABI function and the always-inlined body it calls; returns (body
    builder, pointer args, start, stop)."""
    fn = ir.Function(self.module, KERNEL_TYPE, name)
    fn.attributes.add("nounwind")
    for f in (fn,):
      set.add(f.attributes, '"prefer-vector-width"="512"')
    body = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * n_ptrs + [I64, I64]),
                       self.module.get_unique_name(name + ".body"))
    body.linkage = "internal"
    body.attributes.add("alwaysinline")
    body.attributes.add("nounwind")
    for a, na in zip(body.args[:n_ptrs], noalias):
      if na:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ptrs = []
    for k in range(n_ptrs):
      slot = b.gep(fn.args[0], [ir.Constant(I64, k)], inbounds=True, source_etype=PTR)
      ptrs.append(b.load(slot, typ=PTR))
    b.call(body, ptrs + [fn.args[1], fn.args[2]])
    b.ret_void()
    bb = ir.IRBuilder(body.append_basic_block("entry"))
    return bb, list(body.args[:n_ptrs]), body.args[n_ptrs], body.args[n_ptrs + 1]

  def fusion(self, name: str, comp: hlo.Computation, noalias: Sequence[bool],
             in_place: dict[int, int] | None = None) -> KernelInfo:
    """The kernel of a fused computation (parameters = the fusion's operands), emitted
    unless an identical one exists already (then its KernelInfo, whose `name` is the
    shared symbol). `in_place` maps operands that share an output's buffer to that output:
    they are read through the output's pointer."""
    key = ("fusion", hlo.structure_key(hlo.reachable_computations(comp)), tuple(noalias),
           tuple(sorted((in_place or {}).items())))
    return self.shared(key, name, lambda: self._emit_fusion(name, comp, noalias, in_place))

  def shared(self, key: tuple, name: str, emit: Callable[[], KernelInfo]) -> KernelInfo:
    """The kernel `emit()` would make under `name`, or the one already emitted for `key`
    (then `name` becomes an alias of its symbol)."""
    info = self._kernels.get(key)
    if info is None:
      info = self._kernels[key] = emit()
    elif info.name != name:
      self.aliases[name] = info.name
    return info

  def _emit_fusion(self, name: str, comp: hlo.Computation, noalias: Sequence[bool],
                   in_place: dict[int, int] | None = None) -> KernelInfo:
    params = comp.params
    outs = fusion_outputs(comp)
    n_in = len(params)
    b, ptrs, start, stop = self._entry(name, n_in + len(outs), noalias)
    in_ptrs, out_ptrs = ptrs[:n_in], ptrs[n_in:]
    in_ptrs = [out_ptrs[in_place[k]] if in_place and k in in_place else p
               for k, p in enumerate(in_ptrs)]
    pshapes = [p.shape for p in params]

    def read_param(number, index):
      shape = pshapes[number]
      return em.load(in_ptrs[number], em.linear(index, shape.dims), shape.dtype)

    em = ElementalEmitter(b, read_param)

    def param_address(number, index):   # the address of a parameter's element (vector loads)
      shape = pshapes[number]
      return b.gep(in_ptrs[number], [em.linear(index, shape.dims)], inbounds=True,
                   source_etype=mem_type(shape.dtype))
    em.param_address = param_address
    root = comp.root
    roots = list(root.operands) if root.opcode == "tuple" else [root]
    dims_set = {tuple(s.dims) for s in outs}
    info: KernelInfo
    window = in_place_update(comp, in_place)

    if window is not None:
      # computed in place: the output already holds operand 0, only the window changes
      upd, odims = window.operands[1], outs[0].dims

      def store_window(uidx):
        starts = _dyn_starts(em, window.operands[2:], odims, upd.shape.dims)
        oidx = tuple(em.add_idx(st, u) for st, u in zip(starts, uidx))
        em.store(out_ptrs[0], em.linear(oidx, odims), outs[0].dtype, em.emit(upd, uidx))
      self._nest(em, upd.shape.dims, start, stop, store_window)
      info = KernelInfo(name, outer_extent(upd.shape.dims), True)
    elif len(dims_set) > 1:
      # A tuple root of differently shaped elements: one loop nest per element over its
      # full range, run once (by the call whose range starts at 0).
      with b.if_then(b.icmp_signed("==", start, em.i64(0))):
        for r, p, s in zip(roots, out_ptrs, outs):
          self._nest(em, s.dims, em.i64(0), em.i64(outer_extent(s.dims)),
                     lambda idx, r=r, p=p, s=s: self._store_all(em, [r], [p], [s], idx))
      info = KernelInfo(name, 1, False)
    else:
      dims = outs[0].dims
      col = self._column_reduce_plan(comp)
      if col is not None:
        self._column_reduce(em, col, dims, out_ptrs, outs, start, stop)
      elif _is_pure_elementwise(comp) and len(dims) >= 2:
        inner = int(np.prod(dims[1:], dtype=np.int64))
        lo, hi = em.mul_idx(start, inner), em.mul_idx(stop, inner)

        def flat_body(i, _c):
          em.push()
          vals = self._root_values_flat(em, comp, i, pshapes, in_ptrs)
          for p, s, v in zip(out_ptrs, outs, vals):
            em.store(p, i, s.dtype, v)
          em.pop()
          return []
        em.loop(lo, hi, [], flat_body)
      elif (regions := concat_regions(comp)) is not None:
        self._concat_nest(em, regions, out_ptrs[0], outs[0], start, stop)
      else:
        store = lambda idx: self._store_all(em, roots, out_ptrs, outs, idx)
        tile = _transposed_dim(comp, roots, dims)
        if tile is not None:
          t = block_transpose_param(roots, tile)
          blocks = None if t is None else lambda idx: self._block_transpose(
              em, t, idx, dims, tile, out_ptrs[0])
          self._tiled_nest(em, dims, start, stop, store, tile, blocks)
        else:
          cached = ()
          if 0 not in dims and len(dims) >= 2:
            members = {i.id for i in comp.instrs}
            cached = [i for i in comp.instrs if row_cached(comp.root, members, i)]
          inner = None if cached else _longer_rows_under_reshape(root, dims)
          if inner is not None:   # the nest runs over the reshape's operand
            roots, outs, dims = [inner], [inner.shape], inner.shape.dims
            store = lambda idx: self._store_all(em, roots, out_ptrs, outs, idx)
          self._nest(em, dims, start, stop, store, hoist_from=roots if 0 not in dims else (),
                     row_cache=cached)
      info = KernelInfo(name, outer_extent(dims), True)
    b.ret_void()
    return info

  def _root_values_flat(self, em, comp, i, pshapes, in_ptrs):
    """Pure elementwise fusions: every parameter is read at flat offset i (or is scalar)."""
    saved = em.read_param

    def read_flat(number, index):
      shape = pshapes[number]
      lin = i if shape.dims else em.i64(0)
      return em.load(in_ptrs[number], lin, shape.dtype)
    em.read_param = read_flat
    root = comp.root
    rank = len(fusion_outputs(comp)[0].dims)
    flat_idx = (i,) * rank   # any index tuple works: all reads ignore it but its identity
    vals = [em.emit(r, flat_idx) for r in (root.operands if root.opcode == "tuple" else [root])]
    em.read_param = saved
    return vals

  def _nest(self, em, dims, start, stop, body_fn, hoist_from=(), row_cache=()):
    """Loops over `dims` with the outermost over [start, stop) (flat index for rank <= 1).
    Before each loop, the invariants of `hoist_from` (instructions evaluated at the full
    index) with respect to it and the loops inside it are computed (`em.hoist`); before the
    minor loop, the `row_cache` instructions are computed over the row into buffers
    (`em.fill_row_caches`: softmax's exp, read by the row sum and the division)."""
    def hoist(k):   # loops k.. are about to run
      if hoist_from:
        at = tuple(idx[:k]) + tuple(Inner() for _ in dims[k:])
        em.hoist([(r, at) for r in hoist_from])
    if len(dims) == 0:
      def scalar(i, _c):
        em.push()
        body_fn(())
        em.pop()
        return []
      em.loop(start, stop, [], scalar)
      return
    idx = [None] * len(dims)

    def level(k):
      def body(i, _c):
        idx[k] = i
        em.push()
        if k + 1 == len(dims):
          body_fn(tuple(idx))
        else:
          if k + 2 == len(dims) and row_cache:
            em.fill_row_caches(row_cache, tuple(idx[:k + 1]))
          hoist(k + 1)
          level(k + 1)
        em.pop()
        return []
      lo, hi = (start, stop) if k == 0 else (em.i64(0), em.i64(dims[k]))
      em.loop(lo, hi, [], body)
    hoist(0)
    level(0)

  def _concat_nest(self, em, regions, out_ptr, out: hlo.Shape, start, stop):
    """A concatenate root (`concat_regions`): one loop nest per operand over its own shape,
    writing at its offset in the output; the kernel's [start, stop) of the output's dim 0
    is clipped to each operand's rows there, so a split kernel still writes each element
    once. Operands that differ only in where they slice share one nest (`region_groups`)."""
    for group in region_groups(regions):
      if len(group) == 1:
        x, offset, _ = group[0]
        self._region(em, x, [em.i64(o) for o in offset], out_ptr, out, start, stop)
      else:
        self._region_table(em, group, out_ptr, out, start, stop)

  def _region_table(self, em, group, out_ptr, out: hlo.Shape, start, stop):
    """Regions of one `region_groups` group: one loop over a constant table of their
    offsets and slice starts, around the loop nest of the first (the template)."""
    b = em.b
    x, _, slices = group[0]
    rank = out.rank
    table = np.array([list(off) + [v for sl in sls for v in sl.attrs["start"]]
                      for _, off, sls in group], dtype=np.int64)
    ty = ir.ArrayType(I64, table.size)
    g = ir.GlobalVariable(b.module, ty, b.module.get_unique_name("regions"))
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ir.Constant(ty, [int(v) for v in table.reshape(-1)])
    width = table.shape[1]

    def one(r, _c):
      row = [b.load(b.gep(g, [em.i64(0), b.add(em.mul_idx(r, width), em.i64(k))],
                          inbounds=True, source_etype=ty), typ=I64) for k in range(width)]
      at = rank
      for sl in slices:
        em.slice_starts[sl.id] = row[at:at + sl.shape.rank]
        at += sl.shape.rank
      self._region(em, x, row[:rank], out_ptr, out, start, stop)
      for sl in slices:
        del em.slice_starts[sl.id]
      return []
    em.loop(em.i64(0), em.i64(len(group)), [], one)

  def _region(self, em, x, offset, out_ptr, out: hlo.Shape, start, stop):
    """The loop nest writing operand `x` of a concatenate root at `offset` (values), its
    outer loop clipped to the kernel's [start, stop) of the output's dim 0."""
    b = em.b
    lo, hi = b.sub(start, offset[0]), b.sub(stop, offset[0])
    lo = b.select(b.icmp_signed("<", lo, em.i64(0)), em.i64(0), lo)
    n0 = em.i64(outer_extent(x.shape.dims))
    hi = b.select(b.icmp_signed(">", hi, n0), n0, hi)

    def store(idx):
      at = tuple(em.add_idx(i, o) for i, o in zip(idx, offset))
      em.store(out_ptr, em.linear(at, out.dims), out.dtype, em.emit(x, idx))
    em.push()
    self._nest(em, x.shape.dims, lo, hi, store, hoist_from=[x])
    em.pop()


  def _block_transpose(self, em, t: hlo.Instr, idx: tuple, dims, a: int, out_ptr) -> None:
    """Output elements idx .. idx + BLOCK - 1 along dims `a` and minor (the output being
    transpose `t` of a parameter whose minor dim is output dim `a`): BLOCK vector loads of
    the parameter's rows, a transpose in registers, BLOCK vector stores of output rows."""
    b, x = em.b, t.operands[0]
    perm, n = t.attrs["dimensions"], len(dims)
    vt = ir.VectorType(mem_type(t.dtype), BLOCK)
    src = [None] * n
    for d, p in enumerate(perm):
      src[p] = idx[d]
    in_stride = int(np.prod(x.shape.dims[perm[n - 1] + 1:], dtype=np.int64))
    out_stride = int(np.prod(dims[a + 1:], dtype=np.int64))
    base_in = em.param_address(x.attrs["number"], tuple(src))
    base_out = b.gep(out_ptr, [em.linear(idx, dims)], inbounds=True,
                     source_etype=mem_type(t.dtype))
    align = np.dtype(t.dtype).itemsize
    rows = []
    for k in range(BLOCK):
      v = b.load(b.gep(base_in, [em.i64(k * in_stride)], inbounds=True,
                       source_etype=vt.element), typ=vt)
      v.align = align
      rows.append(v)
    for k, v in enumerate(_transpose_lanes(b, rows)):
      st = b.store(v, b.gep(base_out, [em.i64(k * out_stride)], inbounds=True,
                            source_etype=vt.element))
      st.align = align

  def _tiled_nest(self, em, dims, start, stop, body_fn, a, blocks=None):
    """Loops over `dims` in TILE x TILE blocks of dims (a, minor): the other dims outermost
    (dim 0 over [start, stop) unless it is `a`), then the tiles, then the points of a tile,
    the minor dim innermost. A transposed read then walks TILE rows of its operand that
    stay in the L1 cache while the output is written contiguously (a 2000x2000 transpose
    is ~5x faster than the row-by-row nest). With `blocks` (`_block_transpose`), a tile's
    whole BLOCK x BLOCK blocks are each one call of it, its edges (a tile at the end of a
    dim or of [start, stop)) element by element."""
    n = len(dims)
    minor = n - 1
    idx = [None] * n
    T = TILE

    def bounds(d):
      return (start, stop) if d == 0 else (em.i64(0), em.i64(dims[d]))

    def tiles(d, inner):   # for t0 in range(lo, hi, T): inner(t0, min(t0 + T, hi))
      lo, hi = bounds(d)
      b = em.b
      count = b.udiv(b.add(b.sub(hi, lo), em.i64(T - 1)), em.i64(T))

      def body(t, _c):
        t0 = b.add(lo, b.mul(t, em.i64(T)))
        t1 = b.add(t0, em.i64(T))
        inner(t0, b.select(b.icmp_signed("<", t1, hi), t1, hi))
        return []
      em.loop(em.i64(0), count, [], body)

    def points(ranges):
      (d, lo, hi), rest = ranges[0], ranges[1:]

      def body(i, _c):
        idx[d] = i
        em.push()
        if rest:
          points(rest)
        else:
          body_fn(tuple(idx))
        em.pop()
        return []
      em.loop(lo, hi, [], body)

    def outer(k):
      others = [d for d in range(n) if d not in (a, minor)]
      if k < len(others):
        d = others[k]

        def body(i, _c):
          idx[d] = i
          outer(k + 1)
          return []
        em.loop(*bounds(d), [], body)
        return
      tiles(a, lambda a0, a1: tiles(minor, lambda m0, m1: tile(a0, a1, m0, m1)))

    def tile(a0, a1, m0, m1):
      if blocks is None:
        points([(a, a0, a1), (minor, m0, m1)])
        return
      b = em.b
      whole = lambda lo, hi: b.add(lo, b.and_(b.sub(hi, lo), em.i64(-BLOCK)))
      a_end, m_end = whole(a0, a1), whole(m0, m1)

      # blocks of BLOCK operand rows outermost, walking along them (output dim a) inside:
      # measured ~10% faster on 2000x2000 than the other order, which was 2-3x slower
      (d1, s1, e1), (d2, s2, e2) = (minor, m0, m_end), (a, a0, a_end)

      def block_rows(i, _c):
        idx[d1] = b.add(s1, b.mul(i, em.i64(BLOCK)))

        def block(j, _c2):
          idx[d2] = b.add(s2, b.mul(j, em.i64(BLOCK)))
          blocks(tuple(idx))
          return []
        em.loop(em.i64(0), b.udiv(b.sub(e2, s2), em.i64(BLOCK)), [], block)
        return []
      em.loop(em.i64(0), b.udiv(b.sub(e1, s1), em.i64(BLOCK)), [], block_rows)
      points([(a, a0, a_end), (minor, m_end, m1)])   # the right edge of the blocks
      points([(a, a_end, a1), (minor, m0, m1)])      # the bottom edge, corner included
    outer(0)

  def _store_all(self, em, roots, out_ptrs, outs, idx):
    vals = []
    for r in roots:
      v = em.emit(r, idx)
      vals.extend(v if isinstance(r.shape, hlo.TupleShape) else [v])
    for p, s, v in zip(out_ptrs, outs, vals):
      em.store(p, em.linear(idx, s.dims), s.dtype, v)

  # --- column reductions: accumulate into the output, the kept minor dim innermost ------
  def _column_reduce_plan(self, comp: hlo.Computation):
    """A reduce root (a simple combiner, or variadic like argmax) whose input keeps its
    minor dimension (`fusion.column_reduce_root`): the loop order (kept outer dims, reduced
    dims, minor dim) reads the input contiguously and vectorizes across output elements."""
    return comp.root if column_reduce_root(comp.root) else None

  def _column_reduce(self, em, root, out_dims, out_ptrs, out_shapes, start, stop):
    n_in = len(root.operands) // 2
    xs, inits = root.operands[:n_in], root.operands[n_in:]
    comp = root.called[0]
    rdims = sorted(root.attrs["dimensions"])
    in_dims = xs[0].shape.dims
    reassoc = False   # element-wise accumulation: no reordering needed to vectorize
    outer_dims = list(out_dims[:-1])
    minor = out_dims[-1]
    kept_in = [d for d in range(len(in_dims)) if d not in rdims]   # last is the minor dim
    init_vs = [em.emit(i, ()) for i in inits]
    oidx = [None] * len(out_dims)
    lanes = column_lanes(root) if em.param_address is not None else 0
    vt = ir.VectorType(reg_type(root.dtype), lanes) if lanes else None

    def minor_loop(lo, hi, fn):
      def body(j, _c):
        em.push()
        oidx[-1] = j
        fn(j)
        em.pop()
        return []
      em.loop(lo, hi, [], body)

    def with_outer(level, fn):
      """Loops over the output's non-minor dims (the first over [start, stop))."""
      if level == len(outer_dims):
        fn()
        return

      def body(i, _c):
        oidx[level] = i
        with_outer(level + 1, fn)
        return []
      lo, hi = (start, stop) if level == 0 else (em.i64(0), em.i64(outer_dims[level]))
      em.loop(lo, hi, [], body)

    full = [None] * len(in_dims)

    def work():
      jlo, jhi = ((start, stop) if not outer_dims else (em.i64(0), em.i64(minor)))

      def init_store(j):
        lin = em.linear(oidx, out_dims)
        for p, s, v in zip(out_ptrs, out_shapes, init_vs):
          em.store(p, lin, s.dtype, v)
      minor_loop(jlo, jhi, init_store)

      def rows(firsts, count):
        """Accumulate `count` consecutive indices of the innermost reduced dim from each of
        `firsts` into the output row, in order (one load and store of it per `count`):
        explicit vectors of `lanes` output elements (vt), then the rest one by one."""
        def acc_vector(jb, _c):
          oidx[-1] = em.add_idx(jlo, em.mul_idx(jb, lanes))
          for k, d in enumerate(kept_in):
            full[d] = oidx[k]
          ptr = em.b.gep(out_ptrs[0], [em.linear(oidx, out_dims)], inbounds=True,
                         source_etype=vt.element)
          cur = em.b.load(ptr, typ=vt)
          cur.align = np.dtype(out_shapes[0].dtype).itemsize
          for u in range(count):
            full[rdims[-1]] = em.add_idx(firsts, em.i64(u))
            em.push()
            cur = em.apply(comp, [cur, _vector_value(em, xs[0], tuple(full), vt)])[0]
            em.pop()
          em.b.store(cur, ptr).align = np.dtype(out_shapes[0].dtype).itemsize
          return []

        def acc(j):
          for k, d in enumerate(kept_in):
            full[d] = oidx[k]
          lin = em.linear(oidx, out_dims)
          cur = [em.load(p, lin, s.dtype) for p, s in zip(out_ptrs, out_shapes)]
          for u in range(count):
            full[rdims[-1]] = em.add_idx(firsts, em.i64(u))
            vals = [em.emit(x, tuple(full)) for x in xs]
            cur = em.apply(comp, cur + vals, reassoc=reassoc)
          for p, s, v in zip(out_ptrs, out_shapes, cur):
            em.store(p, lin, s.dtype, v)
        if not lanes:
          minor_loop(jlo, jhi, acc)
          return
        nvec = em.b.udiv(em.b.sub(jhi, jlo), em.i64(lanes))
        em.loop(em.i64(0), nvec, [], acc_vector)
        minor_loop(em.add_idx(jlo, em.mul_idx(nvec, lanes)), jhi, acc)

      def red(level):
        n = in_dims[rdims[level]]
        if level == len(rdims) - 1:
          # COLUMN_ROWS rows per pass over the output row, then the rest one at a time
          em.loop(em.i64(0), em.i64(n // COLUMN_ROWS), [], lambda i, _c: (
              rows(em.mul_idx(i, COLUMN_ROWS), COLUMN_ROWS), [])[1])
          em.loop(em.i64(n // COLUMN_ROWS * COLUMN_ROWS), em.i64(n), [],
                  lambda i, _c: (rows(i, 1), [])[1])
          return

        def body(i, _c):
          full[rdims[level]] = i
          em.push()
          red(level + 1)
          em.pop()
          return []
        em.loop(em.i64(0), em.i64(n), [], body)
      red(0)

    with_outer(0, work)

  # --- scatter -------------------------------------------------------------------------
  def scatter(self, name: str, instr: hlo.Instr, noalias: Sequence[bool]) -> KernelInfo:
    """XLA Scatter as a sequential loop over the update elements (the outputs already hold
    a copy of the operands): out[I] = combiner(out[I], update[U]), where I is the update
    window position; windows not fully in bounds are skipped."""
    a = instr.attrs
    n = (len(instr.operands) - 1) // 2
    operands, ind, updates = instr.operands[:n], instr.operands[n], instr.operands[n + 1:]
    n_ptrs = len(instr.operands) + n
    b, ptrs, start, stop = self._entry(name, n_ptrs, noalias)
    ind_ptr, upd_ptrs, out_ptrs = ptrs[n], ptrs[n + 1:2 * n + 1], ptrs[2 * n + 1:]
    em = ElementalEmitter(b, None)
    odims = operands[0].shape.dims
    udims = updates[0].shape.dims
    uwd = tuple(a["update_window_dims"])
    inserted = set(a["inserted_window_dims"])
    sdod = tuple(a["scatter_dims_to_operand_dims"])
    ibd = tuple(a.get("input_batching_dims", ()))
    sibd = tuple(a.get("scatter_indices_batching_dims", ()))
    ivd = a["index_vector_dim"]
    scatter_dims = [d for d in range(len(udims)) if d not in uwd]
    win_operand_dims = [d for d in range(len(odims)) if d not in inserted and d not in ibd]
    wsize = [1] * len(odims)
    for k, od in enumerate(win_operand_dims):
      wsize[od] = udims[uwd[k]]
    comp = instr.called[0]

    def body(uidx):
      batch = [uidx[d] for d in scatter_dims]

      def ind_index(k):
        if ivd >= ind.shape.rank:
          return tuple(batch)
        return tuple(batch[:ivd]) + (em.i64(k),) + tuple(batch[ivd:])
      starts = [em.i64(0)] * len(odims)
      ok = ir.Constant(I1, 1)
      for k, od in enumerate(sdod):
        v = em.to_index(em.load(ind_ptr, em.linear(ind_index(k), ind.shape.dims), ind.dtype),
                        ind.dtype)
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", v, em.i64(0)),
                               b.icmp_signed("<=", v, em.i64(odims[od] - wsize[od]))))
        starts[od] = v
      for od, sd in zip(ibd, sibd):
        starts[od] = batch[sd if sd < ivd else sd - 1]
      for k, od in enumerate(win_operand_dims):
        starts[od] = em.add_idx(starts[od], uidx[uwd[k]])
      with b.if_then(ok):
        em.push()
        ulin = em.linear(uidx, udims)
        olin = em.linear(starts, odims)
        cur = [em.load(p, olin, o.dtype) for p, o in zip(out_ptrs, operands)]
        upd = [em.load(p, ulin, u.dtype) for p, u in zip(upd_ptrs, updates)]
        new = em.apply(comp, cur + upd)
        for p, o, v in zip(out_ptrs, operands, new):
          em.store(p, olin, o.dtype, v)
        em.pop()

    if 0 not in udims and 0 not in odims:
      first = b.icmp_signed("==", start, em.i64(0))
      with b.if_then(first):
        self._nest(em, udims, em.i64(0), em.i64(outer_extent(udims)), body)
    b.ret_void()
    return KernelInfo(name, 1, False)


def wrap_as_fusion(instr: hlo.Instr) -> hlo.Computation:
  """A fused computation for a lone entry instruction (parameters = its operands), so an
  op the fusion pass left unfused still compiles to a kernel."""
  comp = hlo.Computation(f"wrapped_{instr.opcode}")
  params = [comp.add(hlo.Instr("parameter", o.shape, attrs={"number": k}, name=f"p{k}"))
            for k, o in enumerate(instr.operands)]
  clone = hlo.Instr(instr.opcode, instr.shape, params, dict(instr.attrs), list(instr.called),
                    name=instr.name, metadata=instr.metadata)
  comp.root = comp.add(clone)
  comp.is_fusion = True
  return comp

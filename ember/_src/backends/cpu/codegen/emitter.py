"""The ELEMENTAL emitter: the value of one element of any fusible instruction at a
multi-index (`emit(instr, index)`), recursively, by the rules of the op families: index maps
(index_maps, concatenate), elementwise ops as scalar IR (scalar_ops, complex_ops), reduce and
reduce-window as inner loops (reductions); `_INDEX_RULES` is the dispatch table. Element
values are memoized per (instruction, index) in scopes that follow the loop structure (a value
computed inside a reduction loop is not reused after it). Before a loop, the values whose
index does not involve it are computed once (`hoist`: softmax's row max, layernorm's mean and
variance once per row, not once per element); an expensive value read at several minor
positions of a row (softmax's exp(x - max)) is computed once over the row into a stack buffer
(`fill_row_caches`). The fusion pass counts on both (`fusion.symbolic_count`). Concatenate,
pad and dynamic-update-slice select between cheap operands but branch around expensive ones
(`choose`). Also here: loads and stores of elements (bool, narrow floats, complex), constant
arrays as globals, and transcendentals, which come from ember's math library
(`mathlib.emit`), never from libm: a call in a loop would block vectorization (only float
remainder, rare, lowers to fmod).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ember._src.base import dtypes
from ember._src.hlo import graph as hlo
from ember._src.backends.cpu.codegen import float8
from ember._src.backends.cpu.codegen.complex_ops import _complex_op
from ember._src.backends.cpu.codegen.concatenate import _concatenate
from ember._src.backends.cpu.codegen.index_maps import (
    _bitcast_dispatch, _broadcast, _constant, _dynamic_slice, _dynamic_update_slice, _gather,
    _get_tuple_element, _iota, _pad, _param, _reshape, _reverse, _slice, _transpose, _tuple)
from ember._src.backends.cpu.codegen.ir_helpers import (IRHelpers, Inner, _flatten_vals,
                                                         _select_value, _unflatten_vals)
from ember._src.backends.cpu.codegen.ir_types import (F16, F32, F64, FLOAT8, I8, I16, I32,
                                                       I64, CodegenError, Cx, bits, const_of,
                                                       float_suffix, is_narrow, kind, mem_type,
                                                       reg_type)
from ember._src.backends.cpu.codegen.reductions import (FIXED_LANES_BYTES, _reduce,
                                                         _reduce_window, _vector_value,
                                                         vector_prologue)
from ember._src.backends.cpu.codegen.scalar_ops import (_EXACT_FLOAT_OPS, _REASSOC_OPS,
                                                         _SCALAR_RULES)
from ember._src.passes.fusion import INDEX_MAPS, operand_index


def _nonempty(shape) -> bool:
  shapes = shape.elements if isinstance(shape, hlo.TupleShape) else (shape,)
  return all(0 not in s.dims for s in shapes)


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
    if dt in FLOAT8:
      return float8.from_bits(self, FLOAT8[dt], v)
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
    if dt in FLOAT8:            # so does it a float8 one
      return float8.to_bits(self, FLOAT8[dt], v)
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
    """Round a float32 register to float16/bfloat16/float8 (nearest even); other dtypes: as
    is."""
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
    if dt in FLOAT8:
      return float8.round_to(self, FLOAT8[dt], v)
    return v

  def to_bits(self, v: ir.Value, dt) -> ir.Value:
    """The bit pattern of a float register value as an integer of the dtype's width."""
    dt = np.dtype(dt)
    b = self.b
    if dt == dtypes.float16:
      return b.bitcast(b.fptrunc(v, F16), I16)
    if dt == dtypes.bfloat16 or dt in FLOAT8:
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


_INDEX_RULES: dict[str, Callable] = {
    "parameter": _param, "constant": _constant, "iota": _iota, "broadcast": _broadcast,
    "transpose": _transpose, "reshape": _reshape, "reverse": _reverse,
    "slice": _slice, "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice, "concatenate": _concatenate, "pad": _pad,
    "gather": _gather, "reduce": _reduce, "reduce-window": _reduce_window,
    "get-tuple-element": _get_tuple_element,
    "tuple": _tuple,
}


_INDEX_RULES["bitcast-convert"] = _bitcast_dispatch

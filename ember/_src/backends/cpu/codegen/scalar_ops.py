"""Elementwise ops as scalar IR with XLA's semantics: rule(em, instr, operand values) ->
value, applied by `ElementalEmitter.scalar_op` to one element (inside a fusion, and in scalar
computations such as a reduce's to_apply; the float rules also take vectors). Integer
division never traps (x / 0 = -1, x % 0 = x), shift amounts past the width give 0 or the
sign, float -> int converts saturate, narrow-float results are rounded back (except
`_EXACT_FLOAT_OPS`). Complex operands: complex_ops; transcendentals: the math library
(`ElementalEmitter.math`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from llvmlite import ir

from ember._src.base import dtypes
from ember._src.backends.cpu.codegen.ir_types import (F16, F32, F64, I1, Cx, bits,
                                                       float_suffix, kind, reg_type)


# Opcodes whose float results need no rounding back to float16/bfloat16: they return one
# of their (already representable) operands or an exact function of it.
_EXACT_FLOAT_OPS = {"negate", "abs", "maximum", "minimum", "select", "clamp", "floor", "ceil",
                    "round-nearest-afz", "round-nearest-even", "copy", "sign", "remainder"}


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
    copysign = lambda m: em.intrinsic(f"llvm.copysign.{float_suffix(x.type)}", x.type,
                                      [ir.Constant(x.type, m), x])
    # a zero of x's sign for 0, -0 and (read as zeros: XLA:CPU's flush-to-zero) subnormals;
    # NaN stays
    zero = b.fcmp_ordered("==", x, ir.Constant(x.type, 0.0))
    return b.select(b.fcmp_unordered("uno", x, x), x,
                    b.select(zero, copysign(0.0), copysign(1.0)))
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
  """XLA's next_after (chlo's decomposition), on the bits: a subnormal x that the
  flush-to-zero comparisons read as 0 still steps from its own bits."""
  b = em.b
  x, y = v
  dt = instr.dtype
  ux, uy = em.to_bits(x, dt), em.to_bits(y, dt)
  t = ux.type
  n = t.width
  sign = ir.Constant(t, 1 << (n - 1))
  magnitude = ir.Constant(t, (1 << (n - 1)) - 1)
  ax, ay = b.and_(ux, magnitude), b.and_(uy, magnitude)
  tiny = b.or_(b.and_(uy, sign), ir.Constant(t, 1))   # +-smallest subnormal
  # toward zero (|x| > |y|, or y across zero) decrements the magnitude bits, else increments
  down = b.or_(b.icmp_unsigned(">", ax, ay),
               b.icmp_unsigned("!=", b.and_(ux, sign), b.and_(uy, sign)))
  stepped = b.select(down, b.sub(ux, ir.Constant(t, 1)), b.add(ux, ir.Constant(t, 1)))
  out = b.select(b.icmp_unsigned("==", ax, ir.Constant(t, 0)), tiny, stepped)
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

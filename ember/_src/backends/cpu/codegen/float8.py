"""8-bit floats (ml_dtypes' float8_*) in float32 registers: rounding a float32 to one (nearest
even, with ml_dtypes' overflow: inf where the type has one, else NaN), and its 8-bit code
to and from memory. Every value a register holds is one the type can represent, so the codes
are exact; the IR is scalar, as for float16 and bfloat16 (ir_types.Float8Format)."""
from __future__ import annotations

from llvmlite import ir

from ember._src.backends.cpu.codegen.ir_types import F32, I8, I32, Float8Format


def _f32(x: float) -> ir.Constant:
  return ir.Constant(F32, x)


def _i32(x: int) -> ir.Constant:
  return ir.Constant(I32, x)


def _bias(f: Float8Format) -> int:
  """The exponent bias of the encoding: the smallest normal has exponent field 1."""
  return 1 - f.min_exp


def _quantum(f: Float8Format) -> float:
  """The spacing of the subnormals (and of the normals of the smallest binade)."""
  return 2.0 ** (f.min_exp - f.mant_bits)


def round_to(em, f: Float8Format, v: ir.Value) -> ir.Value:
  """`v` (float32) rounded to the nearest value of the type, ties to even."""
  b = em.b
  shift = 23 - f.mant_bits
  u = b.bitcast(v, I32)
  lsb = b.and_(b.lshr(u, _i32(shift)), _i32(1))
  bumped = b.add(u, b.add(lsb, _i32((1 << (shift - 1)) - 1)))
  normal = b.bitcast(b.and_(bumped, _i32(-(1 << shift))), F32)   # carries into the exponent
  # below the smallest normal the spacing is fixed: scaled by powers of two, exactly
  q = _quantum(f)
  scaled = b.fmul(v, _f32(1.0 / q))
  sub = b.fmul(em.intrinsic("llvm.roundeven.f32", F32, [scaled]), _f32(q))
  a = em.intrinsic("llvm.fabs.f32", F32, [v])
  out = b.select(b.fcmp_ordered("<", a, _f32(2.0 ** f.min_exp)), sub, normal)
  too_big = b.fcmp_ordered(">", em.intrinsic("llvm.fabs.f32", F32, [out]), _f32(f.max_value))
  # past the largest finite value: inf where the type has one, else NaN (signed as `v`,
  # as ml_dtypes' codes are; a NaN keeps its sign too)
  big = float("inf") if f.style == "ieee" else float("nan")
  out = b.select(too_big, em.intrinsic("llvm.copysign.f32", F32, [_f32(big), v]), out)
  if f.style == "fnuz":   # no negative zero
    out = b.select(b.fcmp_ordered("==", out, _f32(0.0)), _f32(0.0), out)
  return b.select(b.fcmp_unordered("uno", v, v), v, out)


def to_bits(em, f: Float8Format, v: ir.Value) -> ir.Value:
  """The 8-bit code of `v`, a float32 register holding a value of the type."""
  b = em.b
  m = f.mant_bits
  sign = b.and_(b.trunc(b.lshr(b.bitcast(v, I32), _i32(24)), I8), ir.Constant(I8, 0x80))
  a = em.intrinsic("llvm.fabs.f32", F32, [v])
  au = b.bitcast(a, I32)
  exp = b.sub(b.lshr(au, _i32(23)), _i32(127 - _bias(f)))
  mant = b.and_(b.lshr(au, _i32(23 - m)), _i32((1 << m) - 1))
  normal = b.trunc(b.or_(b.shl(exp, _i32(m)), mant), I8)
  sub = b.trunc(b.fptoui(b.fmul(a, _f32(1.0 / _quantum(f))), I32), I8)
  code = b.select(b.fcmp_ordered("<", a, _f32(2.0 ** f.min_exp)), sub, normal)
  all_ones = ((1 << f.exp_bits) - 1) << m
  if f.style == "ieee":
    code = b.select(b.fcmp_ordered("==", a, _f32(float("inf"))), ir.Constant(I8, all_ones),
                    code)
  code = b.or_(code, sign)
  if f.style == "fnuz":   # zero is +0 only; the one NaN is 0x80
    code = b.select(b.fcmp_ordered("==", a, _f32(0.0)), ir.Constant(I8, 0), code)
    nan = ir.Constant(I8, 0x80)
  else:
    nan = b.or_(sign, ir.Constant(I8, 0x7F if f.style == "fn" else all_ones | 1 << (m - 1)))
  return b.select(b.fcmp_unordered("uno", v, v), nan, code)


def from_bits(em, f: Float8Format, x: ir.Value) -> ir.Value:
  """The float32 value of the 8-bit code `x` (an i8)."""
  b = em.b
  m = f.mant_bits
  u = b.zext(x, I32)
  sign = b.shl(b.and_(u, _i32(0x80)), _i32(24))
  exp = b.and_(b.lshr(u, _i32(m)), _i32((1 << f.exp_bits) - 1))
  mant = b.and_(u, _i32((1 << m) - 1))
  normal = b.or_(b.shl(b.add(exp, _i32(127 - _bias(f))), _i32(23)), b.shl(mant, _i32(23 - m)))
  sub = b.bitcast(b.fmul(b.uitofp(mant, F32), _f32(_quantum(f))), I32)
  out = b.bitcast(b.or_(sign, b.select(b.icmp_unsigned("==", exp, _i32(0)), sub, normal)), F32)
  nan = b.bitcast(b.or_(sign, _i32(0x7FC00000)), F32)   # signed as the code, as ml_dtypes
  if f.style == "fnuz":
    return b.select(b.icmp_unsigned("==", u, _i32(0x80)), nan, out)
  if f.style == "fn":
    return b.select(b.icmp_unsigned("==", b.and_(u, _i32(0x7F)), _i32(0x7F)), nan, out)
  top = b.icmp_unsigned("==", exp, _i32((1 << f.exp_bits) - 1))
  inf = b.bitcast(b.or_(sign, _i32(0x7F800000)), F32)
  special = b.select(b.icmp_unsigned("==", mant, _i32(0)), inf, nan)
  return b.select(top, special, out)

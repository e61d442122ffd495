"""Elementwise ops on complex values, held as `Cx(re, im)` pairs of float/double registers:
the rules `ElementalEmitter.scalar_op` applies when an operand or the result is complex, with
XLA's definitions (lexicographic max/min, Smith's division, |z| without overflow, the
principal square root). An op without a rule raises CodegenError with the workaround.
"""
from __future__ import annotations

from typing import Callable

from llvmlite import ir

from ember._src.base import dtypes
from ember._src.backends.cpu.codegen.ir_helpers import _select_value
from ember._src.backends.cpu.codegen.ir_types import F32, CodegenError, Cx, float_suffix
from ember._src.backends.cpu.codegen.scalar_ops import convert


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

"""Complex elementary functions, expanded at lowering into real arithmetic on the parts.

XLA has one opcode per function whatever the element type (`sine` on c64), and expands the
complex case inside its elemental emitter. ember expands it here instead, so the passes, the
HLO evaluator, cost analysis and the CPU backend only ever see ordinary ops: `real`, `imag`,
`complex`, real arithmetic and real transcendentals, plus the complex `sqrt`, `log`, `abs`
and `divide` the backend already compiles. `rule(opcode)` is the lowering rule of a
primitive: the plain opcode on real operands, the expansion below on complex ones.

The formulas keep the accuracy and the branch conventions of NumPy (C99 Annex G):
- sin/cos/sinh/cosh: the product formulas (sin(a+ib) = sin a cosh b + i cos a sinh b);
  a zero part stays an exact (signed) zero instead of becoming inf * 0;
- tanh: (sinh a cosh a + i sin b cos b) / (sinh^2 a + cos^2 b): a sum of squares, so no
  cancellation near the poles; for |a| > 20, tanh = sign(a) + 4i sin b cos b e^(-2|a|);
- asin/acos/acosh: Kahan's formulas ("Branch cuts for complex elementary functions",
  1987) on sqrt(1 -+ z) and sqrt(z -+ 1), which never cancel and put the branch cuts and
  signed zeros where C99 does; atanh: 1/4 log1p(4a / ((1-a)^2 + b^2)) + i/2 atan2(2b,
  (1-a)(1+a) - b^2) (odd in a, so log1p's argument is >= 0), 1/z +- i pi/2 for huge |z|;
- tan, sin, asinh, atan are -i f(iz) of tanh, sinh, asin, atanh; cos z = cosh(iz);
- expm1 = expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b; log1p = 1/2 log1p(u) + i atan2(b, 1+a)
  with u = a(2+a) + b^2 = |1+z|^2 - 1 while |u| < 1/2, log|1+z| + i atan2(b, 1+a) beyond;
- logistic: 1/(1+t) for a >= 0 and t/(1+t) for a < 0, t = e^(-sign(a) z) (|t| <= 1, so
  no overflow); rsqrt = 1/sqrt z;
- pow(z, w) = exp(w log z), with NumPy's special cases: z^0 = 1, 0^w = 0 for Re w > 0,
  else NaN. complex64 computes it in float64: the error of w log z is multiplied
  by |w log z|, which float32 parts cannot absorb within a few ulps;
- atan2 (complex operands, as the NumPy impl): -i log((y + ix) / sqrt(x^2 + y^2)).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember._src import lower as lowering
from ember._src.hlo.graph import Instr, Shape

__all__ = ["rule", "expand", "scaled", "EXPANSIONS", "part_dtype"]


def part_dtype(dt) -> np.dtype:
  """The real dtype of a complex dtype's parts."""
  return np.dtype(np.float32 if np.dtype(dt) == np.complex64 else np.float64)


class _Real:
  """Real elementwise arithmetic in one dtype: a thin layer over a LoweringContext so that
  the formulas below read like formulas (Python numbers become scalar constants)."""

  def __init__(self, ctx, dtype):
    self.ctx, self.dt = ctx, np.dtype(dtype)

  def _v(self, x):
    return x if isinstance(x, Instr) else self.ctx.constant(x, self.dt)

  def op(self, opcode, *xs):
    """A real result (also from a complex operand: `abs`)."""
    return self.ctx.elementwise(opcode, *(self._v(x) for x in xs), dtype=self.dt)

  def add(self, x, y): return self.op("add", x, y)
  def sub(self, x, y): return self.op("subtract", x, y)
  def mul(self, x, y): return self.op("multiply", x, y)
  def div(self, x, y): return self.op("divide", x, y)
  def neg(self, x): return self.op("negate", x)
  def abs(self, x): return self.op("abs", x)

  def cmp(self, x, direction, y):
    return self.ctx.compare(self._v(x), self._v(y), direction)

  def sel(self, pred, x, y):
    return self.ctx.select(pred, self._v(x), self._v(y))

  def isnan(self, x): return self.cmp(x, "NE", x)
  def isinf(self, x): return self.cmp(self.abs(x), "EQ", np.inf)
  def isfinite(self, x): return self.cmp(self.abs(x), "LT", np.inf)
  def iszero(self, x): return self.cmp(x, "EQ", 0.0)
  def and_(self, *ps):
    out = ps[0]
    for p in ps[1:]:
      out = self.ctx.and_(out, p)
    return out

  def or_(self, p, q): return self.ctx.or_(p, q)
  def not_(self, p): return self.ctx.not_(p)

  def copysign(self, mag, sign):
    """|mag| with the sign bit of `sign` (NaN's sign bit too)."""
    m = self.abs(self._v(mag))
    return self.sel(self.signbit(sign), self.neg(m), m)

  def signbit(self, x):
    it = np.dtype(np.int32 if self.dt == np.float32 else np.int64)
    bits = self.ctx.emit("bitcast-convert", Shape(it, x.dims), [x])
    return self.ctx.compare(bits, self.ctx.constant(0, it), "LT")

  # complex values as (re, im) pairs of real instructions
  def pack(self, re, im) -> Instr:
    cdt = np.complex64 if self.dt == np.float32 else np.complex128
    return self.ctx.elementwise("complex", self._v(re), self._v(im), dtype=cdt)

  def unpack(self, z: Instr):
    return (self.ctx.elementwise("real", z, dtype=self.dt),
            self.ctx.elementwise("imag", z, dtype=self.dt))

  def csqrt(self, re, im):
    return self.unpack(self.ctx.elementwise("sqrt", self.pack(re, im)))

  def cdiv(self, a, b):
    return self.unpack(self.ctx.elementwise("divide", self.pack(*a), self.pack(*b)))


def _special(R, value, cases):
  """`value` (re, im) with C99 Annex G's special values: `cases` is a list of (mask, re, im),
  the first whose mask holds wins."""
  re, im = value
  for mask, c_re, c_im in reversed(cases):
    re, im = R.sel(mask, c_re, re), R.sel(mask, c_im, im)
  return re, im


def _sin(R, x, y):
  value = _rot(_sinh)(R, x, y)
  return _special(R, value, [
      (R.and_(R.not_(R.isfinite(x)), R.isinf(y)), np.nan, np.inf)])      # sin(inf + inf i)


def _asin(R, x, y):
  value = _rot(_asinh)(R, x, y)
  return _special(R, value, [
      (R.and_(R.isinf(x), R.isnan(y)), np.nan, np.inf)])                  # asin(inf + nan i)


def _atan(R, x, y):
  value = _rot(_atanh)(R, x, y)
  return _special(R, value, [
      (R.and_(R.isinf(x), R.isnan(y)), R.copysign(np.pi / 2, x), 0.0)])   # atan(inf + nan i)


def _rot(f):
  """-i f(iz): sin, tan, asinh and atan from sinh, tanh, asin and atanh."""
  def g(R, x, y):
    re, im = f(R, R.neg(y), x)
    return im, R.neg(re)
  return g


def _exp(R, x, y):
  r = R.op("exponential", x)
  value = R.mul(r, R.op("cosine", y)), R.mul(r, R.op("sine", y))
  inf_y = R.not_(R.isfinite(y))
  return _special(R, value, [
      (R.iszero(y), r, y),                                                 # exp(x +- 0i)
      (R.and_(R.cmp(x, "EQ", -np.inf), inf_y), 0.0, R.copysign(0.0, y)),  # exp(-inf + inf i)
      (R.and_(R.cmp(x, "EQ", np.inf), inf_y), np.inf, np.nan)])


def _sinh(R, x, y):
  value = R.mul(R.op("sinh", x), R.op("cosine", y)), \
      R.sel(R.iszero(y), y, R.mul(R.op("cosh", x), R.op("sine", y)))
  inf_y = R.not_(R.isfinite(y))
  return _special(R, value, [
      (R.and_(R.iszero(x), inf_y), x, np.nan),                            # sinh(0 + inf i)
      (R.and_(R.isinf(x), inf_y), np.inf, np.nan)])


def _cosh(R, x, y):
  value = R.mul(R.op("cosh", x), R.op("cosine", y)), \
      R.sel(R.iszero(y), R.sel(R.isnan(x), y, R.mul(R.copysign(0.0, x), y)),
            R.mul(R.op("sinh", x), R.op("sine", y)))
  inf_y = R.not_(R.isfinite(y))
  return _special(R, value, [
      (R.and_(R.iszero(x), inf_y), np.nan, 0.0),                          # cosh(0 + inf i)
      (R.and_(R.isinf(x), inf_y), np.inf, np.nan)])


def _tanh(R, x, y):
  sh, ch, s, c = R.op("sinh", x), R.op("cosh", x), R.op("sine", y), R.op("cosine", y)
  d = R.add(R.mul(sh, sh), R.mul(c, c))
  sc = R.mul(s, c)
  big = R.cmp(R.abs(x), "GT", 20.0)   # 1 - tanh(20) < 2^-55: the real part is +-1
  re = R.sel(big, R.sel(R.cmp(x, "GT", 0), 1.0, -1.0), R.div(R.mul(sh, ch), d))
  im_big = R.mul(R.mul(sc, 4.0), R.op("exponential", R.mul(R.abs(x), -2.0)))
  inf_y = R.not_(R.isfinite(y))
  return _special(R, (re, R.sel(big, im_big, R.div(sc, d))), [
      (R.and_(R.isnan(x), R.iszero(y)), x, y),                            # tanh(nan + 0i)
      (R.isinf(x), R.copysign(1.0, x), R.copysign(0.0, R.sel(R.isinf(y), y, sc))),
      (R.and_(R.iszero(x), inf_y), x, np.nan),                            # tanh(0 + inf i)
      (inf_y, np.nan, np.nan)])


def _cos(R, x, y):
  return _cosh(R, R.neg(y), x)


def _asin_kahan(R, x, y):
  r1, i1 = R.csqrt(R.sub(1.0, x), R.neg(y))    # sqrt(1 - z)
  r2, i2 = R.csqrt(R.add(1.0, x), y)           # sqrt(1 + z)
  re = R.op("atan2", x, R.sub(R.mul(r1, r2), R.mul(i1, i2)))
  return re, R.op("asinh", R.sub(R.mul(r1, i2), R.mul(i1, r2)))


def _asinh(R, x, y):
  value = _rot(_asin_kahan)(R, x, y)
  inf = R.or_(R.isinf(x), R.isinf(y))
  return _special(R, value, [
      (R.and_(R.isnan(x), R.iszero(y)), x, y),                            # asinh(nan + 0i)
      (R.and_(R.isnan(x), R.isinf(y)), np.inf, np.nan),
      (R.and_(R.isnan(y), R.isinf(x)), x, y),
      (R.or_(R.isnan(x), R.isnan(y)), np.nan, np.nan),
      (inf, R.copysign(np.inf, x), R.copysign(R.op("atan2", R.abs(y), R.abs(x)), y))])


def _acos(R, x, y):
  r1, i1 = R.csqrt(R.sub(1.0, x), R.neg(y))    # sqrt(1 - z)
  r2, i2 = R.csqrt(R.add(1.0, x), y)           # sqrt(1 + z)
  re = R.mul(R.op("atan2", r1, r2), 2.0)
  value = re, R.op("asinh", R.sub(R.mul(r2, i1), R.mul(i2, r1)))
  inf = R.or_(R.isinf(x), R.isinf(y))
  return _special(R, value, [
      (R.and_(R.isnan(x), R.isinf(y)), np.nan, R.neg(y)),               # acos(nan + inf i)
      (R.and_(R.isnan(y), R.iszero(x)), np.pi / 2, y),
      (R.and_(R.isnan(y), R.isinf(x)), np.nan, -np.inf),
      (R.or_(R.isnan(x), R.isnan(y)), np.nan, np.nan),
      (inf, R.op("atan2", R.abs(y), x), R.neg(R.copysign(np.inf, y)))])


def _acosh(R, x, y):
  r1, i1 = R.csqrt(R.sub(x, 1.0), y)           # sqrt(z - 1)
  r2, i2 = R.csqrt(R.add(x, 1.0), y)           # sqrt(z + 1)
  re = R.op("asinh", R.add(R.mul(r1, r2), R.mul(i1, i2)))
  value = re, R.mul(R.op("atan2", i1, r2), 2.0)
  inf = R.or_(R.isinf(x), R.isinf(y))
  return _special(R, value, [
      (R.and_(R.isnan(x), R.isinf(y)), np.inf, np.nan),                 # acosh(nan + inf i)
      (R.and_(R.isnan(y), R.iszero(x)), np.nan, np.pi / 2),
      (R.and_(R.isnan(y), R.isinf(x)), np.inf, np.nan),
      (R.or_(R.isnan(x), R.isnan(y)), np.nan, np.nan),
      (inf, np.inf, R.copysign(R.op("atan2", R.abs(y), x), y))])


def _atanh(R, x, y):
  ax = R.abs(x)                 # Re atanh is odd in x: log1p's argument stays >= 0
  one_m, one_p = R.sub(1.0, ax), R.add(1.0, ax)
  d = R.add(R.mul(one_m, one_m), R.mul(y, y))
  re = R.mul(R.op("log-plus-one", R.div(R.mul(ax, 4.0), d)), 0.25)
  # near the poles +-1 the squares underflow: 1/2 (log|1 + z| - log|1 - z|), exact enough
  near_pole = R.cmp(d, "LT", float(np.finfo(R.dt).eps))
  log_abs = lambda a, b: R.op("log", R.op("abs", R.pack(a, b)))
  re = R.sel(near_pole, R.mul(R.sub(log_abs(one_p, y), log_abs(one_m, y)), 0.5), re)
  im = R.mul(R.op("atan2", R.mul(y, 2.0), R.sub(R.mul(one_m, one_p), R.mul(y, y))), 0.5)
  # |z| > 1/eps (the squares may overflow): atanh z = 1/z +- i pi/2 to within eps |z|^-2
  big = R.cmp(R.op("maximum", ax, R.abs(y)), "GT", 1.0 / np.finfo(R.dt).eps)
  re = R.sel(big, R.abs(R.cdiv((1.0, 0.0), (ax, y))[0]), re)
  im = R.sel(big, R.sel(R.signbit(y), -np.pi / 2, np.pi / 2), im)
  value = R.sel(R.signbit(x), R.neg(re), re), im
  inf = R.or_(R.isinf(x), R.isinf(y))
  return _special(R, value, [
      (R.and_(R.isnan(x), R.isinf(y)), 0.0, R.copysign(np.pi / 2, y)),   # atanh(nan + inf i)
      (R.and_(R.isnan(y), R.iszero(x)), x, np.nan),
      (R.and_(R.isnan(y), R.isinf(x)), R.copysign(0.0, x), np.nan),
      (R.or_(R.isnan(x), R.isnan(y)), np.nan, np.nan),
      (inf, R.copysign(0.0, x), R.copysign(np.pi / 2, y))])


def _expm1(R, x, y):
  h = R.op("sine", R.mul(y, 0.5))
  re = R.sub(R.mul(R.op("exponential-minus-one", x), R.op("cosine", y)),
             R.mul(R.mul(h, h), 2.0))
  value = re, R.sel(R.iszero(y), y, R.mul(R.op("exponential", x), R.op("sine", y)))
  inf_y = R.not_(R.isfinite(y))
  return _special(R, value, [                 # exp(z) - 1's special values
      (R.and_(R.iszero(x), R.iszero(y)), 0.0, y),   # +0 from -0 + 0j too (the standard, JAX)
      (R.and_(R.cmp(x, "EQ", -np.inf), inf_y), -1.0, R.copysign(0.0, y)),
      (R.and_(R.cmp(x, "EQ", np.inf), inf_y), np.inf, np.nan)])


def _log1p(R, x, y):
  one_p = R.add(x, 1.0)
  u = R.add(R.mul(x, R.add(x, 2.0)), R.mul(y, y))  # |1 + z|^2 - 1
  near = R.cmp(R.abs(u), "LT", 0.5)                 # log1p then beats log|1 + z|
  far = R.op("log", R.op("abs", R.pack(one_p, y)))
  return R.sel(near, R.mul(R.op("log-plus-one", u), 0.5), far), R.op("atan2", y, one_p)


def _logistic(R, x, y):
  pos = R.cmp(x, "GE", 0)
  e = R.op("exponential", R.neg(R.abs(x)))
  t_re = R.mul(e, R.op("cosine", y))                # t = e^(-sign(x) z), |t| <= 1
  t_im = R.mul(R.mul(e, R.op("sine", y)), R.sel(pos, -1.0, 1.0))
  num = (R.sel(pos, 1.0, t_re), R.sel(pos, 0.0, t_im))
  return R.cdiv(num, (R.add(t_re, 1.0), t_im))


def _rsqrt(R, x, y):
  return R.cdiv((1.0, 0.0), R.csqrt(x, y))


def _pow(R, x, y, c, d):
  """z^w = exp(w log z), z = x + iy, w = c + id."""
  lg, th = R.op("log", R.op("abs", R.pack(x, y))), R.op("atan2", y, x)
  re, im = R.sub(R.mul(c, lg), R.mul(d, th)), R.add(R.mul(c, th), R.mul(d, lg))
  r = R.op("exponential", re)
  out_re = R.mul(r, R.op("cosine", im))
  out_im = R.sel(R.cmp(im, "EQ", 0), im, R.mul(r, R.op("sine", im)))
  w0 = R.ctx.and_(R.cmp(c, "EQ", 0), R.cmp(d, "EQ", 0))
  z0 = R.ctx.and_(R.cmp(x, "EQ", 0), R.cmp(y, "EQ", 0))
  to_zero = R.cmp(c, "GT", 0)
  special_re = R.sel(w0, 1.0, R.sel(to_zero, 0.0, np.nan))
  special_im = R.sel(w0, 0.0, R.sel(to_zero, 0.0, np.nan))
  special = R.ctx.or_(w0, z0)
  return R.sel(special, special_re, out_re), R.sel(special, special_im, out_im)


def _atan2(R, x, y, c, d):
  """atan2(z, w) = -i log((w + iz) / sqrt(z^2 + w^2)) (z = x + iy, w = c + id)."""
  ctx = R.ctx
  z, w = R.pack(x, y), R.pack(c, d)
  num = R.pack(R.sub(c, y), R.add(d, x))            # w + iz
  den = ctx.elementwise("sqrt", ctx.add(ctx.mul(z, z), ctx.mul(w, w)))
  re, im = R.unpack(ctx.elementwise("log", ctx.div(num, den)))
  return im, R.neg(re)


# opcode -> expansion: (R, re, im[, re2, im2]) -> (re, im) of the result
EXPANSIONS: dict[str, Callable] = {
    "exponential": _exp,
    "sine": _sin, "cosine": _cos, "tan": _rot(_tanh), "sinh": _sinh, "cosh": _cosh,
    "tanh": _tanh, "asin": _asin, "acos": _acos, "atan": _atan, "asinh": _asinh,
    "acosh": _acosh, "atanh": _atanh, "exponential-minus-one": _expm1,
    "log-plus-one": _log1p, "logistic": _logistic, "rsqrt": _rsqrt, "power": _pow,
    "atan2": _atan2,
}
_IN_FLOAT64 = {"power"}   # complex64 computed with float64 parts (see the module docstring)


def expand(ctx, opcode: str, *zs: Instr) -> Instr:
  """`opcode` on complex operands `zs` (broadcast as lax allows), as real arithmetic."""
  dt = np.dtype(zs[0].dtype)
  wide = np.dtype(np.complex128) if opcode in _IN_FLOAT64 else dt
  R = _Real(ctx, part_dtype(wide))
  parts = [p for z in zs for p in R.unpack(ctx.convert(z, wide))]
  return ctx.convert(R.pack(*EXPANSIONS[opcode](R, *parts)), dt)


def scaled(ctx, z: Instr, c: float) -> Instr:
  """Complex `z` with both parts multiplied by the real `c` (never a complex product, whose
  inf * 0 cross terms would turn an infinite part's zero partner into NaN)."""
  R = _Real(ctx, part_dtype(z.dtype))
  re, im = R.unpack(z)
  return R.pack(R.mul(re, c), R.mul(im, c))


def rule(opcode: str) -> Callable:
  """The lowering rule of a primitive that is the elementwise `opcode`: the opcode itself
  on real operands, its expansion above on complex ones."""
  real_rule = lowering.elementwise(opcode)

  def lower(ctx, *xs: Instr, **params):
    if np.dtype(xs[0].dtype).kind == "c" and opcode in EXPANSIONS:
      return expand(ctx, opcode, *xs)
    return real_rule(ctx, *xs, **params)
  lower.__name__ = real_rule.__name__
  return lower

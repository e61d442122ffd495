"""Powers and roots: sqrt, rsqrt, cbrt and pow.

sqrt and rsqrt are llvm.sqrt; cbrt is Newton from an exponent-bits guess with a double-word
residual; pow is exp(y log|x|) with log|x| to ~2**-66 (`_log_dd64`, float64) or in double
(`_pow32_in_f64`, float32), then C99's special cases (`_pow_special`). A unit: x**y and its
fixed-exponent cases.
"""
from __future__ import annotations

import math

from llvmlite import ir

from ember._src.backends.cpu.mathlib.coeffs import COEFFS
from ember._src.backends.cpu.mathlib.doubleword import _const, _fast_two_sum, _two_prod, _two_sum
from ember._src.backends.cpu.mathlib.emitter import _via_f64
from ember._src.backends.cpu.mathlib.explog import (_exp32_in_f64, _exp_core, _exp_limit,
                                                    _ln2_parts, _log_split)


# ------------------------------------------------------------------------------------------------
# sqrt / rsqrt / cbrt.
# ------------------------------------------------------------------------------------------------
def _sqrt(e, x):
  return e.sqrt(x)


def _rsqrt(e, x):
  return e.div(1.0, e.sqrt(x))


def _cbrt(e, x):
  ax = e.abs(x)
  sub, big = e.lt(ax, e.tiny), e.ge(ax, 2.0 ** (e.bias - 1))
  k = 18 if e.f64 else 8                              # subnormals: * 2**(3k), result * 2**-k
  kb = (e.bias - 1) // 3                              # huge: * 2**(-3kb) (y**3 must not overflow)
  a = e.sel(sub, e.mul(ax, 2.0 ** (3 * k)), e.sel(big, e.mul(ax, 2.0 ** (-3 * kb)), ax))
  # Initial guess from the exponent bits / 3 (in 32-bit integers: the high word for f64).
  i32 = e.vec(ir.IntType(32))
  bits = e.bits(a)
  hi = e.b.trunc(e.b.lshr(bits, e.ci(32)), i32) if e.f64 else bits
  magic = round((2 * (e.bias - 0.03)) / 3 * 2 ** (20 if e.f64 else 23))
  g = e.b.add(e.b.udiv(hi, e.ci(3, i32)), e.ci(magic, i32))
  y = e.from_bits(e.b.shl(e.b.zext(g, e.ity), e.ci(32))) if e.f64 else e.from_bits(g)
  for _ in range(3 if e.f64 else 2):                  # Newton: y <- (2y + a/y^2) / 3
    y = e.mul(e.add(e.add(y, y), e.div(a, e.mul(y, y))), 1.0 / 3.0)
  # Last step with the residual a - y^3 computed in double-word arithmetic.
  y2, y2l = _two_prod(e, y, y)
  y3, y3l = _two_prod(e, y2, y)
  y3l = e.fma(y2l, y, y3l)
  resid = e.sub(e.sub(a, y3), y3l)
  y = e.add(y, e.div(resid, e.mul(y2, 3.0)))
  y = e.sel(sub, e.mul(y, 2.0 ** -k), e.sel(big, e.mul(y, 2.0 ** kb), y))
  res = e.copysign(y, x)
  res = e.sel(e.or_(e.eq(ax, 0.0), e.isinf(x)), x, res)
  return e.sel(e.isnan(x), x, res)


# ------------------------------------------------------------------------------------------------
# power.
# ------------------------------------------------------------------------------------------------
def _log_dd64(e, x):
  """log(x) for finite x > 0 in double as hi + lo with ~2**-66 relative error."""
  k, f = _log_split(e, x)
  u = e.add(f, 2.0)
  ul = e.sub(f, e.sub(u, 2.0))                        # 2 + f = u + ul exactly
  inv = e.div(1.0, u)                                 # one division: s = f/(2+f) = sh + sl
  sh = e.mul(f, inv)
  sl = e.mul(e.sub(e.fma(e.neg(sh), u, f), e.mul(sh, ul)), inv)
  sh, sl = _fast_two_sum(e, sh, sl)
  a, al = _two_prod(e, sh, sh)
  s3, s3l = _two_prod(e, a, sh)
  s3l = e.fma(al, sh, e.fma(e.mul(a, 3.0), sl, s3l))
  th, tl = _const("2o3", True)
  c3, c3l = _two_prod(e, s3, th)
  c3l = e.add(c3l, e.fma(s3, tl, e.mul(s3l, th)))
  tail = e.mul(e.mul(s3, a), e.poly(a, COEFFS[("logpow", 64)]))
  h, l = _fast_two_sum(e, e.mul(sh, 2.0), c3)
  h, l = _fast_two_sum(e, h, e.add(l, e.add(e.mul(sl, 2.0), e.add(c3l, tail))))
  kh, kl = _ln2_parts(e)
  lh, err = _two_sum(e, e.mul(k, kh), h)
  return _fast_two_sum(e, lh, e.add(err, e.fma(k, kl, l)))


def _pow_special(e, x, y, mag):
  """C99 pow special cases around mag = |x|**y (computed for finite nonzero |x|)."""
  ax, ay = e.abs(x), e.abs(y)
  yinf = e.eq(ay, math.inf)
  # |x| = 0 or inf, or y = +-inf: inf when (|x| > 1) == (y > 0), else 0; 1 for |x| = 1.
  spec = e.or_(e.or_(e.eq(ax, 0.0), e.eq(ax, math.inf)), yinf)
  mag = e.sel(spec, e.sel(e.b.xor(e.gt(ax, 1.0), e.gt(y, 0.0)), 0.0, math.inf), mag)
  mag = e.sel(e.and_(yinf, e.eq(ax, 1.0)), 1.0, mag)
  # negative x: odd integer y flips the sign (y - 2 floor(y/2) == 1 only for odd integers),
  # a finite x with non-integer y gives NaN (floor(+-inf) == +-inf counts as an integer).
  yodd = e.eq(e.fma(e.floor(e.mul(y, 0.5)), -2.0, y), 1.0)
  res = e.sel(e.and_(e.signbit(x), yodd), e.neg(mag), mag)
  nonint = e.b.fcmp_unordered("!=", e.floor(y), y)
  res = e.sel(e.and_(e.and_(e.lt(x, 0.0), e.gt(x, -math.inf)), nonint), math.nan, res)
  res = e.sel(e.b.fcmp_unordered("uno", x, y), e.add(x, y), res)
  return e.sel(e.or_(e.eq(x, 1.0), e.eq(y, 0.0)), 1.0, res)


def _pow32_in_f64(e, ax, y):
  """|x|**y for float32 |x| in (0, inf) and finite y, in double: log|x| to ~2**-37 relative
  (2 atanh(s) = 2s + s^3 P(s^2), s = f/(2+f)), y log|x| clamped where the float32 result is
  inf or 0 anyway, exp to ~2**-31; only the final float32 rounding is visible."""
  ix = e.bits(ax)                                     # float32 values: normal doubles
  half = e.bits(e.c(math.sqrt(0.5)))
  ki = e.iashr(e.isub(ix, half), 52)
  f = e.sub(e.from_bits(e.isub(ix, e.ishl(ki, 52))), 1.0)     # 1 + f in [sqrt(1/2), sqrt 2)
  s = e.div(f, e.add(f, 2.0))
  z = e.mul(s, s)
  lf = e.fma(e.mul(s, z), e.poly(z, COEFFS[("log32d", 64)]), e.add(s, s))
  lx = e.fma(e.tofloat(ki), _const("ln2", True)[0], lf)
  pk, p = _exp32_in_f64(e, e.clamp(e.mul(y, lx), -110.0, 100.0))
  return e.fma(pk, p, pk)


def _power(e, x, y):
  ax = e.abs(x)
  ok = e.and_(e.gt(ax, 0.0), e.lt(ax, math.inf))
  axs = e.sel(ok, ax, 1.0)
  ys = e.sel(e.or_(e.isnan(y), e.isinf(y)), 0.0, y)
  if e.f64:
    lh, ll = _log_dd64(e, axs)
    ph, pl = _two_prod(e, ys, lh)
    pl = e.fma(ys, ll, pl)
    inrange = e.lt(e.abs(ph), _exp_limit(e))
    k, m = _exp_core(e, ph, e.sel(inrange, pl, 0.0))
    mag = e.scale(m, k)
  else:                                               # float32: log and exp in double
    mag = _via_f64(e, _pow32_in_f64, axs, ys)
  return _pow_special(e, x, y, mag)

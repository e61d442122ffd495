"""The inverse functions: asin, acos, atan, atan2 and asinh, acosh, atanh.

atan and atan2 reduce to |t| <= tan(pi/8) with a double-word quotient; asin and acos share
`_asin_parts`; the inverse hyperbolics are log / log1p of a double-word argument. A unit: the
inverse trigonometric and inverse hyperbolic functions, each a polynomial or a logarithm of a
carefully formed argument.
"""
from __future__ import annotations

import math

from ember._src.backends.cpu.mathlib.coeffs import COEFFS
from ember._src.backends.cpu.mathlib.doubleword import (_const, _div_dw, _fast_two_sum, _two_prod,
                                                        _two_sum)
from ember._src.backends.cpu.mathlib.explog import _log, _log1p_core


def _atan_core(e, t):
  z = e.mul(t, t)
  return e.mul(e.mul(z, t), e.poly(z, COEFFS[("atan", e.key)]))     # atan(t) - t


_TAN_PI8 = 0.41421356237309503


def _atan(e, x):
  ax = e.abs(x)
  r0 = e.le(ax, _TAN_PI8)
  r1 = e.le(ax, 1 / _TAN_PI8)
  nh, nl = _two_sum(e, ax, -1.0)                      # (|x| - 1) / (|x| + 1), exact operands
  dh, dl = _two_sum(e, ax, 1.0)
  t = e.sel(r0, ax, e.sel(r1, _div_dw(e, nh, nl, dh, dl), e.div(-1.0, ax)))
  p4h, p4l = _const("pio4", e.f64)
  p2h, p2l = _const("pio2", e.f64)
  bh = e.sel(r0, 0.0, e.sel(r1, p4h, p2h))
  bl = e.sel(r0, 0.0, e.sel(r1, p4l, p2l))
  res = e.add(bh, e.add(t, e.add(_atan_core(e, t), bl)))
  return e.sel(e.isnan(x), x, e.copysign(res, x))


def _atan2(e, y, x):
  ax, ay = e.abs(x), e.abs(y)
  swap = e.gt(ay, ax)
  hi, lo = e.max(ax, ay), e.min(ax, ay)
  ratio = e.div(lo, hi)
  direct = e.le(ratio, _TAN_PI8)
  h2 = 2.0 ** (e.bias // 2)                           # exact scalings: lo + hi must not
  s = e.sel(e.gt(hi, 1.0), 0.5, e.sel(e.lt(hi, 1 / h2), h2, 1.0))     # overflow, 1/(lo+hi) too
  ls, hs = e.mul(lo, s), e.mul(hi, s)
  nh, nl = _two_sum(e, ls, e.neg(hs))                 # (lo - hi) / (lo + hi), exact operands
  dh, dl = _fast_two_sum(e, hs, ls)
  t = e.sel(direct, ratio, _div_dw(e, nh, nl, dh, dl))
  tp = e.add(t, _atan_core(e, t))                     # atan(t)
  neg_x = e.signbit(x)
  # theta = B + sigma * atan(t), B in {0, pi/4, pi/2, 3pi/4, pi} (hi, lo); sigma = +-1.
  consts = {k: _const(k, e.f64) for k in ("pio4", "pio2", "3pio4", "pi")}
  base = e.sel(direct, 0.0, 1.0)                      # 0 -> angle 0, 1 -> pi/4 (in units pi/4)
  base = e.sel(swap, e.sub(2.0, base), base)
  base = e.sel(neg_x, e.sub(4.0, base), base)
  sigma = e.sel(e.b.xor(swap, neg_x), -1.0, 1.0)

  def pick(part):
    v = e.c(0.0)
    for units, name in ((1.0, "pio4"), (2.0, "pio2"), (3.0, "3pio4"), (4.0, "pi")):
      v = e.sel(e.eq(base, units), consts[name][part], v)
    return v

  theta = e.add(pick(0), e.fma(sigma, tp, pick(1)))
  both0 = e.and_(e.eq(ax, 0.0), e.eq(ay, 0.0))
  theta = e.sel(both0, e.sel(neg_x, consts["pi"][0], 0.0), theta)
  bothinf = e.and_(e.isinf(x), e.isinf(y))
  theta = e.sel(bothinf, e.sel(neg_x, consts["3pio4"][0], consts["pio4"][0]), theta)
  res = e.copysign(theta, y)
  return e.sel(e.or_(e.isnan(x), e.isnan(y)), e.add(x, y), res)


def _asin_parts(e, ax):
  """For ax in [0, 1]: (big, s, tail) with asin(s) = s + tail and
  asin(ax) = s + tail (ax <= 1/2) or pi/2 - 2*(s + tail) (ax > 1/2, s = sqrt((1-ax)/2))."""
  big = e.gt(ax, 0.5)
  z = e.sel(big, e.mul(e.sub(1.0, ax), 0.5), e.mul(ax, ax))
  s = e.sel(big, e.sqrt(z), ax)
  c = e.sel(big, e.div(e.fma(e.neg(s), s, z), e.max(e.add(s, s), e.tiny)), 0.0)  # sqrt's error
  tail = e.fma(e.mul(s, z), e.poly(z, COEFFS[("asin", e.key)]), c)
  return big, s, tail


def _asin(e, x):
  ax = e.abs(x)
  big, s, tail = _asin_parts(e, ax)
  ph, pl = _const("pio2", e.f64)
  far = e.add(e.sub(ph, e.mul(s, 2.0)), e.sub(pl, e.mul(tail, 2.0)))
  res = e.sel(big, far, e.add(s, tail))
  res = e.sel(e.gt(ax, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, e.copysign(res, x))


def _acos(e, x):
  ax = e.abs(x)
  big, s, tail = _asin_parts(e, ax)
  ph, pl = _const("pio2", e.f64)
  pih, pil = _const("pi", e.f64)
  small = e.add(e.sub(ph, x), e.sub(pl, e.copysign(tail, x)))     # pi/2 - asin(x)
  pos = e.mul(e.add(s, tail), 2.0)
  negv = e.add(e.sub(pih, e.mul(s, 2.0)), e.sub(pil, e.mul(tail, 2.0)))
  res = e.sel(big, e.sel(e.lt(x, 0.0), negv, pos), small)
  res = e.sel(e.gt(ax, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _asinh(e, x):
  ax = e.abs(x)
  z = e.mul(ax, ax)
  q = e.div(z, e.add(e.sqrt(e.add(z, 1.0)), 1.0))     # x^2 / (1 + sqrt(1 + x^2)) <= |x|
  small = _log1p_core(e, *_fast_two_sum(e, ax, q))
  mid = _log(e, e.add(e.mul(ax, 2.0), e.div(1.0, e.add(e.sqrt(e.add(z, 1.0)), ax))))
  huge_ = e.add(_log(e, ax), _const("ln2", e.f64)[0])
  lim = 2.0 ** (e.p // 2 + 1)
  res = e.sel(e.lt(ax, 2.0), small, e.sel(e.lt(ax, lim), mid, huge_))
  res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 1)), ax, res)
  return e.sel(e.isnan(x), x, e.copysign(res, x))


def _acosh(e, x):
  t = e.sub(x, 1.0)
  # log1p(t + sqrt(2t + t^2)) with the sqrt's argument and result as double-words
  t2, t2l = _two_prod(e, t, t)
  ah, al = _fast_two_sum(e, e.mul(t, 2.0), t2)        # 2t >= t^2 for t < 2
  sq = e.sqrt(ah)
  sql = e.div(e.add(e.fma(e.neg(sq), sq, ah), e.add(al, t2l)), e.max(e.add(sq, sq), e.tiny))
  gh, gl = _fast_two_sum(e, sq, t)                    # sqrt(2t + t^2) >= t
  small = _log1p_core(e, gh, e.add(gl, sql))
  mid = _log(e, e.sub(e.mul(x, 2.0), e.div(1.0, e.add(x, e.sqrt(e.fma(x, x, -1.0))))))
  huge_ = e.add(_log(e, x), _const("ln2", e.f64)[0])
  lim = 2.0 ** (e.p // 2 + 1)
  res = e.sel(e.lt(x, 2.0), small, e.sel(e.lt(x, lim), mid, huge_))
  res = e.sel(e.lt(x, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _atanh(e, x):
  ax = e.abs(x)
  # (1/2) log1p(2|x| / (1 - |x|)), the quotient as a double-word (1 - |x| = om + oml exactly)
  om, oml = _fast_two_sum(e, 1.0, e.neg(ax))
  inv = e.div(1.0, e.max(om, e.tiny))
  ax2 = e.add(ax, ax)
  q = e.mul(ax2, inv)
  ql = e.mul(e.sub(e.fma(e.neg(q), om, ax2), e.mul(q, oml)), inv)
  res = e.mul(_log1p_core(e, e.sel(e.lt(ax, 1.0), q, 0.0), ql), 0.5)
  res = e.sel(e.eq(ax, 1.0), math.inf, res)
  res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 1)), ax, res)
  res = e.sel(e.gt(ax, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, e.copysign(res, x))

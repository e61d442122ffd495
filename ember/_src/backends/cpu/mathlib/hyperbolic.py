"""The hyperbolic functions sinh, cosh, tanh, and logistic: built on exp.

sinh and cosh from exp / expm1 (halved before scaling near overflow); float64 tanh and logistic
as a corrected quotient of double-words (exp(-2|x|), exp(-|x|): `_exp_neg_dw`); float32 tanh in
float32, float32 logistic in double. A unit: one exponential of |x| and a quotient or
combination of it.
"""
from __future__ import annotations

import math

from ember._src.backends.cpu.mathlib.coeffs import COEFFS
from ember._src.backends.cpu.mathlib.doubleword import _const, _div_dw, _fast_two_sum
from ember._src.backends.cpu.mathlib.emitter import _via_f64
from ember._src.backends.cpu.mathlib.explog import (_exp32_in_f64, _exp_core, _exp_core_dw,
                                                    _exp_limit, _expm1)


def _exp_half_scaled(e, ax):
  """exp(ax) / 2 for ax >= 0 without intermediate overflow (ax up to the overflow limit)."""
  k, m = _exp_core(e, ax)
  return e.scale(m, e.isub(k, 1))


def _hyp_limit(e):
  return 20.0 if e.f64 else 10.0                      # beyond: exp(-2|x|) < 2**-(p+2)


def _sinh(e, x):
  ax = e.abs(x)
  z = e.mul(x, x)
  small = e.fma(e.mul(z, x), e.poly(z, COEFFS[("sinh", e.key)]), x)            # |x| < 1
  em = _expm1(e, e.min(ax, 64.0))
  mid = e.mul(0.5, e.add(em, e.div(em, e.add(em, 1.0))))          # (e - 1/e)/2 via expm1
  large = e.sel(e.lt(ax, _hyp_limit(e)), mid, _exp_half_scaled(e, ax))
  res = e.sel(e.lt(ax, 1.0), small, e.copysign(large, x))
  return e.sel(e.isnan(x), x, res)


def _cosh(e, x):
  ax = e.abs(x)
  k, m = _exp_core(e, e.min(ax, 64.0))
  ex = e.scale(m, k)
  mid = e.mul(0.5, e.add(ex, e.div(1.0, ex)))
  res = e.sel(e.lt(ax, _hyp_limit(e)), mid, _exp_half_scaled(e, ax))
  return e.sel(e.isnan(x), x, res)


def _exp_neg_dw(e, ax, lim):
  """exp(-ax) for ax >= 0 as a double-word (eh, el) (ax clamped at lim)."""
  k, mh, ml = _exp_core_dw(e, e.neg(e.min(ax, lim)))
  if lim / math.log(2) < e.bias - 2:                  # 2**k normal: one exact scaling
    pk = e.pow2i(k)
    return e.mul(mh, pk), e.mul(ml, pk)
  return e.scale(mh, k), e.scale(ml, k)


def _tanh32(e, x):
  """float32 tanh in float32 (~1 ulp, ~28 vector ops): |x| < 0.8: x + x^3 P(x^2) (deg 6,
  ~2**-32); beyond: 1 - 2/(1 + E), E = exp(2|x|), whose rounding errors are scaled down by
  2/(1 + E) <= 0.34 (|x| clamped at 9.5, where float32 tanh is 1); NaN takes the first."""
  ax = e.abs(x)
  z = e.mul(ax, ax)
  small = e.fma(e.mul(z, ax), e.poly(z, COEFFS[("tanh32", 32)]), ax)
  return e.copysign(e.sel(e.ge(ax, 0.8), _tanh32_big(e, e.min(ax, 9.5)), small), x)


def _tanh32_big(e, t):
  """1 - 2/(1 + exp(2t)) for 0 <= t <= 9.5: 2t = k ln2 + r, exp(r) = 1 + r Q(r) (~2**-26,
  plenty once scaled down); k is rounded by adding a magic number whose sum's bits, shifted
  into the exponent field, are 2**k (its +127 is the exponent bias)."""
  magic = 1.5 * 2.0 ** 23 + 127
  tm = e.fma(t, 2 * _const("log2e", False)[0], magic)     # 2t log2(e), rounded to an integer
  k = e.sub(tm, magic)                                        # in [0, 28]
  l2h, l2l = _const("ln2", False)
  r = e.add(e.fma(e.neg(k), l2h, e.add(t, t)), e.mul(e.neg(k), l2l))
  em = e.fma(r, e.poly(r, COEFFS[("expm1q", 32)]), 1.0)
  ex = e.mul(em, e.from_bits(e.ishl(e.bits(tm), 23)))
  return e.sub(1.0, e.div(2.0, e.add(ex, 1.0)))


def _tanh(e, x):
  if not e.f64:
    return _tanh32(e, x)
  # (1 - E) / (1 + E), E = exp(-2|x|) as a double-word: 1 - E has no rounding error to
  # cancel, and the quotient is corrected (~0.6 ulp in all).
  ax = e.abs(x)
  eh, el = _exp_neg_dw(e, e.add(ax, ax), 40.0)
  nh, nl = _fast_two_sum(e, 1.0, e.neg(eh))
  dh, dl = _fast_two_sum(e, 1.0, eh)
  res = _div_dw(e, nh, e.sub(nl, el), dh, e.add(dl, el))
  res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 2)), ax, res)            # x itself: -0, subnormals
  res = e.copysign(res, x)
  return e.sel(e.isnan(x), x, res)


def _logistic32_in_f64(e, x):
  """float32 logistic in double: E = exp(-|x|), 1/(1 + E) or E/(1 + E) (|x| <= 110: beyond,
  the float32 result is 1 or 0 anyway)."""
  pk, p = _exp32_in_f64(e, e.neg(e.min(e.abs(x), 110.0)))
  ex = e.fma(pk, p, pk)
  return e.div(e.sel(e.lt(x, 0.0), ex, 1.0), e.add(ex, 1.0))


def _logistic(e, x):
  if not e.f64:
    return e.sel(e.isnan(x), x, _via_f64(e, _logistic32_in_f64, x))
  # E = exp(-|x|) as a double-word; 1/(1 + E) (x >= 0) or E/(1 + E), corrected quotient.
  ax = e.abs(x)
  eh, el = _exp_neg_dw(e, ax, _exp_limit(e))
  dh, dl = _fast_two_sum(e, 1.0, eh)
  neg = e.lt(x, 0.0)
  res = _div_dw(e, e.sel(neg, eh, 1.0), e.sel(neg, el, 0.0), dh, e.add(dl, el))
  return e.sel(e.isnan(x), x, res)

"""exp, expm1, exp2, log, log1p, log2, log10, and the cores the other families build on.

`_exp_core` / `_exp_core_dw` give exp(x + xl) = m * 2**k with m as one value or a double-word
(sinh, cosh, tanh, logistic, erfc, erfinv, pow); `_exp32_in_f64` is float32's exp evaluated in
double (logistic, float32 pow); `_log_core`, `_log_hl` and `_log1p_core` give the log of a
finite positive value as one value or (hi, lo) (the inverse hyperbolics, erfinv, lgamma,
digamma, pow). A unit: the exponential and the logarithm split off powers of two with ln2 in
parts, and every other family but trigonometry is built on them.
"""
from __future__ import annotations

import math

from ember._src.backends.cpu.mathlib.coeffs import COEFFS
from ember._src.backends.cpu.mathlib.doubleword import _const, _fast_two_sum, _two_prod, _two_sum


# ------------------------------------------------------------------------------------------------
# exp / expm1 / exp2 and the scaled core shared by sinh, cosh, erfc, pow.
# ------------------------------------------------------------------------------------------------
def _expm1_poly(e, r):
  """expm1(r) - r for |r| <= ln2/2 (so expm1(r) = r + _expm1_poly)."""
  r2 = e.mul(r, r)
  return e.fma(e.mul(r2, r), e.poly(r, COEFFS[("expm1", e.key)]), e.mul(r2, 0.5))


def _exp_reduce(e, x, xl=None):
  """x (+ xl) = k*ln2 + (r + rl), |r| <= ~ln2/2, for finite x with |k| <= 2*bias."""
  l2h, l2l = _const("ln2", e.f64)
  k = e.rint(e.mul(x, _const("log2e", e.f64)[0]))
  t = e.fma(e.neg(k), l2h, x)                         # exact (Cody-Waite with a fused fma)
  r = e.fma(e.neg(k), l2l, t)
  rl = e.fma(e.neg(k), l2l, e.sub(t, r))              # the rounding error of r
  if xl is not None:
    rl = e.add(rl, xl)
  return k, r, rl


def _exp_core(e, x, xl=None, in_range=False):
  """(k, m) with exp(x + xl) = m * 2**k, m in [0.7, 1.42] (x clamped: NaN -> finite;
  `in_range`: the caller's x is finite and within the limits already, no clamp to emit)."""
  lim = _exp_limit(e)
  k, r, rl = _exp_reduce(e, x if in_range else e.clamp(x, -lim, lim), xl)
  q = _expm1_poly(e, r)                               # exp(r + rl) = (1 + r + q)(1 + rl)
  m = e.add(1.0, e.add(r, e.add(q, e.fma(rl, e.add(r, q), rl))))
  return e.toint(k), m


def _exp_core_dw(e, x, lim=None, xl=None):
  """(k, mh, ml) with exp(x + xl) = (mh + ml) * 2**k to ~2**-(p+4): m as a double-word."""
  lim = _exp_limit(e) if lim is None else lim
  k, r, rl = _exp_reduce(e, e.clamp(x, -lim, lim), xl)
  q = _expm1_poly(e, r)
  vh, vl = _fast_two_sum(e, r, e.add(q, e.fma(rl, e.add(r, q), rl)))     # expm1(r + rl)
  mh, t = _fast_two_sum(e, 1.0, vh)
  return e.toint(k), mh, e.add(t, vl)


def _exp_limit(e):
  return (e.bias + e.p + 10) * math.log(2)            # beyond: 2**k over/underflows anyway


def _exp(e, x):
  if e.f64:
    k, m = _exp_core(e, x)
  else:     # float32: r's rounding error (<= 2**-27 relative) costs ~0.1 ulp; not worth 4 ops
    lim = _exp_limit(e)
    if e.has_scalef():     # zmm: a NaN flows through every op (no select of x at the end)
      k, r, _ = _exp_reduce(e, e.clamp_keep_nan(x, -lim, lim))
      return e.scalef(e.add(1.0, e.add(r, _expm1_poly(e, r))), k)
    k, r, _ = _exp_reduce(e, e.clamp(x, -lim, lim))
    m = e.add(1.0, e.add(r, _expm1_poly(e, r)))
    k = e.toint(k)
  return e.sel(e.isnan(x), x, e.scale(m, k))


def _exp2(e, x):
  lim = e.bias + e.p + 10
  xc = e.clamp(x, -lim, lim)
  k = e.rint(xc)
  f = e.sub(xc, k)                                    # exact
  l2h, l2l = _const("ln2", e.f64)
  th, tl = _two_prod(e, f, l2h)
  tl = e.fma(f, l2l, tl)
  q = _expm1_poly(e, th)
  m = e.add(1.0, e.add(th, e.add(q, e.fma(tl, e.add(th, q), tl))))
  return e.sel(e.isnan(x), x, e.scale(m, e.toint(k)))


def _expm1(e, x):
  lo, hi = -(e.p + 4) * math.log(2), (e.bias + 2) * math.log(2)
  k, r, rl = _exp_reduce(e, e.clamp(x, lo, hi))
  q = _expm1_poly(e, r)
  em = e.add(r, e.add(q, e.fma(rl, e.add(r, q), rl)))             # expm1(r + rl)
  ki = e.toint(k)
  big = e.gt(k, e.p + 8)                              # 2**k - 1 == 2**k to working precision
  safe_k = e.b.select(big, e.ci(0), ki)
  pk = e.pow2i(safe_k)
  small_res = e.fma(pk, em, e.sub(pk, 1.0))           # 2**k*em + (2**k - 1), one rounding
  res = e.sel(big, e.scale(e.add(em, 1.0), ki), small_res)
  res = e.sel(e.lt(e.abs(x), 2.0 ** -(e.p + 1)), x, res)         # keeps -0 and subnormals
  return e.sel(e.isnan(x), x, res)


def _exp32_in_f64(e, t):
  """(2**k, expm1(r)) with exp(t) = 2**k (1 + expm1(r)) for |t| <= ~1000, in double to
  ~2**-31 (float32 accuracy: a one-part ln2 reduction, a degree-7 polynomial)."""
  k = e.rint(e.mul(t, _const("log2e", True)[0]))
  r = e.fma(e.neg(k), _const("ln2", True)[0], t)     # error <= |k| 2**-54
  p = e.fma(e.mul(r, r), e.fma(r, e.poly(r, COEFFS[("expm1_32d", 64)]), 0.5), r)
  return e.pow2i(e.toint(k)), p


# ------------------------------------------------------------------------------------------------
# log / log1p / log2 / log10.
# ------------------------------------------------------------------------------------------------
def _log_split(e, x):
  """x > 0 (finite, subnormals too) -> (k, f): x = 2**k (1 + f), 1 + f in [sqrt(1/2), sqrt2)."""
  sub = e.lt(x, e.tiny)
  xs = e.sel(sub, e.mul(x, 2.0 ** e.p), x)
  ix = e.bits(xs)
  half = e.bits(e.c(math.sqrt(0.5)))
  k = e.iashr(e.isub(ix, half), e.p - 1)
  m = e.from_bits(e.isub(ix, e.ishl(k, e.p - 1)))
  k = e.b.select(sub, e.isub(k, e.p), k)
  return e.tofloat(k), e.sub(m, 1.0)


def _log1p_kernel(e, f):
  """(hfsq, tail): log(1 + f) = f - (hfsq - tail) for f in [sqrt(1/2) - 1, sqrt2 - 1], with
  s = f/(2+f), hfsq = f*f/2, tail = s*(hfsq + R), 2atanh(s) = 2s + s*R (fdlibm's form)."""
  s = e.div(f, e.add(f, 2.0))
  z = e.mul(s, s)
  hfsq = e.mul(e.mul(f, f), 0.5)
  R = e.mul(z, e.poly(z, COEFFS[("log", e.key)]))     # 2atanh(s) = 2s + s*R
  return hfsq, e.mul(s, e.add(hfsq, R))


def _ln2_parts(e):
  return _const("ln2", e.f64, nbits=e.p - 12)         # k*hi exact for |k| < 2**12


def _log_finish(e, x, res):
  res = e.sel(e.eq(x, math.inf), math.inf, res)
  res = e.sel(e.eq(x, 0.0), -math.inf, res)
  res = e.sel(e.lt(x, 0.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _log_core(e, x):
  """log(x) for finite x > 0."""
  k, f = _log_split(e, x)
  hfsq, t = _log1p_kernel(e, f)
  h, l = _ln2_parts(e)
  return e.fma(k, h, e.sub(f, e.sub(hfsq, e.fma(k, l, t))))


def _log(e, x):
  return _log_finish(e, x, _log_core(e, x))


def _log_hl(e, x):
  """log(x) as (hi, lo), about p + 5 bits (used where log is multiplied by a big number)."""
  k, f = _log_split(e, x)
  hfsq, t = _log1p_kernel(e, f)
  h, l = _ln2_parts(e)
  a = e.mul(k, h)                                     # exact
  s, err = _two_sum(e, a, f)
  b = e.sub(e.fma(k, l, t), hfsq)
  hi, err2 = _two_sum(e, s, b)
  return hi, e.add(err, err2)


def _log1p_core(e, x, xl=None):
  """log(1 + x + xl) for x > -1 (finite; xl a small low part, as from a double-word)."""
  u = e.add(x, 1.0)
  k, f = _log_split(e, e.max(u, e.tiny))
  # c = (1 + x) - u exactly (u's rounding error; Fast2Sum with the larger of 1, |x| first),
  # divided by u: log(1 + x) = log(u) + c/u.
  big = e.gt(e.abs(x), 1.0)
  c = e.sub(e.sel(big, 1.0, x), e.sub(u, e.sel(big, x, 1.0)))
  if xl is not None:
    c = e.add(c, xl)
  c = e.div(c, u)
  hfsq, t = _log1p_kernel(e, f)
  h, l = _ln2_parts(e)
  return e.fma(k, h, e.sub(f, e.sub(hfsq, e.add(t, e.fma(k, l, c)))))


def _log1p(e, x):
  res = _log1p_core(e, x)
  res = e.sel(e.lt(e.abs(x), 2.0 ** -(e.p + 1)), x, res)         # -0, subnormals, tiny
  res = e.sel(e.eq(x, math.inf), math.inf, res)
  res = e.sel(e.eq(x, -1.0), -math.inf, res)
  res = e.sel(e.lt(x, -1.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _log_base(e, x, name):
  """log2 / log10: (log(x) as hi+lo) * constant with the k term kept exact."""
  k, f = _log_split(e, x)
  hfsq, t = _log1p_kernel(e, f)
  hi = e.sub(f, hfsq)
  lo = e.add(e.sub(e.sub(f, hi), hfsq), t)            # log(1+f) = hi + lo
  ch, cl = _const("log2e" if name == "log2" else "log10e", e.f64)
  vh, vl = _two_prod(e, hi, ch)
  vl = e.add(vl, e.fma(lo, ch, e.mul(hi, cl)))
  if name == "log2":
    kh, kl = k, e.c(0.0)
  else:
    kch, kcl = _const("log10_2", e.f64, nbits=e.p - 12)
    kh, kl = e.mul(k, kch), e.mul(k, kcl)
  w, err = _two_sum(e, kh, vh)
  res = e.add(w, e.add(err, e.add(vl, kl)))
  return _log_finish(e, x, res)

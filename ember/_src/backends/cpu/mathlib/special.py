"""The special functions: erf, erfc, erfinv, lgamma and digamma.

erfc(z) = t exp(-z^2 + P(t)) (t = 2/(2+z)) with every rounding that enters the exponent kept;
erfinv in Giles' variables plus a Halley step (float64); lgamma and digamma piecewise
polynomials, a product / sum recurrence, Stirling / the asymptotic series, and the reflection
formula for x < 0 (sin(pi x) from trig). They evaluate in double for float32 (`_via_f64`).
A unit: the functions NumPy lacks, checked against mpmath values (tests/data).
"""
from __future__ import annotations

import math

from ember._src.backends.cpu.mathlib.coeffs import COEFFS
from ember._src.backends.cpu.mathlib.doubleword import (_const, _div_dw2, _fast_two_sum, _two_prod,
                                                        _two_sum)
from ember._src.backends.cpu.mathlib.emitter import _via_f64
from ember._src.backends.cpu.mathlib.explog import _exp_core, _exp_core_dw, _log_core, _log_hl
from ember._src.backends.cpu.mathlib.trig import _sinpi_cospi


# ------------------------------------------------------------------------------------------------
# erf / erfc / erfinv.
# ------------------------------------------------------------------------------------------------
def _erf_small(e, x):
  """erf(x) for |x| <= 1 (odd, keeps -0)."""
  return e.fma(x, e.poly(e.mul(x, x), COEFFS[("erf", e.key)]), x)


def _erfc_pos(e, z):
  """erfc(z) for z >= 0.5 (z up to +inf): t * exp(-z^2 + P(t)), t = 2/(2+z)."""
  return _via_f64(e, _erfc_pos64 if e.f64 else _erfc_pos32, z)


def _erfc_pos_dw(e, z, coeffs=("erfc", 64)):
  """(k, rh, rl): erfc(z) = (rh + rl) * 2**k for z >= 0.5. Every rounding that would enter
  the exponent or the product unscaled is kept: t = 2/(2+z) as tq + tl (P's slope at t
  approximated by its linear coefficient), P = c0 + u Q(u) summed with -z^2 as a
  multi-word, exp's mantissa as a double-word, the product t*m with an fma."""
  zc = e.min(z, 30.0)                                 # erfc underflows to 0 before that
  sh, sl = _two_sum(e, 2.0, zc)
  inv = e.div(1.0, sh)
  tq = e.mul(inv, 2.0)
  tl = e.mul(e.sub(e.fma(e.neg(tq), sh, 2.0), e.mul(tq, sl)), inv)
  c = COEFFS[coeffs]
  u = e.sub(tq, 0.434)
  qh, ql = _two_prod(e, u, e.poly(u, c[1:]))          # u Q(u)
  h, l = _two_prod(e, zc, zc)
  a, b = _two_sum(e, e.neg(h), c[0])
  a, b2 = _two_sum(e, a, qh)
  b = e.add(e.add(b, b2), e.sub(e.fma(tl, c[1], ql), l))
  k, mh, ml = _exp_core_dw(e, a, xl=b)
  ph, pl = _two_prod(e, tq, mh)
  pl = e.add(pl, e.fma(tq, ml, e.mul(tl, mh)))
  return k, ph, pl


def _erfc_pos64(e, z, coeffs=("erfc", 64)):
  k, ph, pl = _erfc_pos_dw(e, z, coeffs)
  return e.scale(e.add(ph, pl), k)


def _erfc_pos32(e, z, coeffs=("erfc32", 64)):
  """erfc(z), z >= 0.5, t exp(-z^2 + P(t)) with only -z^2 kept exact: float32 erfc in double
  with float32's degree (the double roundings vanish in the float32 one), and float64 erf
  (erfc <= 0.16 there: its error shrinks by 1 - erfc)."""
  zc = e.min(z, 30.0)
  t = e.div(2.0, e.add(zc, 2.0))
  p = e.poly(e.sub(t, 0.434), COEFFS[coeffs])
  h, l = _two_prod(e, zc, zc)
  k, m = _exp_core(e, e.sub(p, h), e.neg(l))
  return e.scale(e.mul(m, t), k)


def _erfc_mid32(e, z):
  """float32 erfc(z) for 1 <= z <= 3.93 to ~2**-23 relative, in float32: exp(-z^2 + P(z))
  with -z^2 exact (two_prod) and P ~ log(erfc(z)) + z^2 (only for erf = 1 - erfc, where
  erfc's error shrinks by erfc/erf <= 0.19; beyond 3.93 float32 erf is 1)."""
  zc = e.clamp(z, 1.0, 3.93)
  p = e.poly(e.sub(zc, 2.5), COEFFS[("erf32big", 32)])
  h, l = _two_prod(e, zc, zc)
  a, b = _fast_two_sum(e, e.neg(h), p)                # z^2 > |P|
  k, m = _exp_core(e, a, e.sub(b, l))
  return e.scale(m, k)


def _erf(e, x):
  ax = e.abs(x)
  za = e.max(ax, 0.5)
  big = e.sub(1.0, _erfc_pos32(e, za, ("erfc", 64)) if e.f64 else _erfc_mid32(e, ax))
  res = e.sel(e.le(ax, 1.0), _erf_small(e, e.sel(e.le(ax, 1.0), x, 0.0)), e.copysign(big, x))
  return e.sel(e.isnan(x), x, res)


def _erfc(e, x):
  ax = e.abs(x)
  pos = _erfc_pos(e, e.max(ax, 0.5))
  small = e.sub(1.0, _erf_small(e, e.sel(e.lt(ax, 0.5), x, 0.0)))
  res = e.sel(e.lt(ax, 0.5), small, e.sel(e.lt(x, 0.0), e.sub(2.0, pos), pos))
  return e.sel(e.isnan(x), x, res)


def _erfinv_approx(e, ay):
  """erfinv(ay) for ay in [0, 1) to ~2**-30: ay * P(u), u = w - 2.5 (w < 5), sqrt(w) - 3
  (sqrt(w) < 4.1) or sqrt(w) - 5, w = -log(1 - ay^2) (Giles' variables, our fits)."""
  om = e.sub(1.0, ay)                                 # exact for ay >= 1/2
  w = e.neg(_log_core(e, e.max(e.mul(om, e.add(ay, 1.0)), e.tiny)))
  sw = e.sqrt(w)
  r0, r1 = e.lt(w, 5.0), e.lt(sw, 4.1)
  u = e.sel(r0, e.sub(w, 2.5), e.sub(sw, e.sel(r1, 3.0, 5.0)))
  x0 = e.mul(ay, e.poly_v(u, e.select_coeffs([r0, r1], COEFFS[("erfinv", 64)])))
  if e.acc32:                                         # float32: the approximation suffices
    return x0
  # float64: one Halley step on f(x) = erf(x) - ay, without a rounding error as large as f:
  # x0 <= 1: (x0 - ay) + x0 P(x0^2) (x0 - ay exact: x0/ay in [0.88, 1.2]); x0 > 1 (ay > 1/2):
  # (1 - ay) - erfc(x0) with erfc as a double-word (1 - ay and the first difference exact).
  xs = e.min(x0, 1.0)
  f_small = e.fma(xs, e.poly(e.mul(xs, xs), COEFFS[("erf", 64)]), e.sub(xs, ay))
  k, ch, cl = _erfc_pos_dw(e, e.max(x0, 1.0))
  f_big = e.sub(e.sub(om, e.scale(ch, k)), e.scale(cl, k))
  f = e.sel(e.le(x0, 1.0), f_small, f_big)
  k, m = _exp_core(e, e.neg(e.mul(x0, x0)))
  d = e.div(f, e.mul(e.scale(m, k), _const("2osqrtpi", True)[0]))         # f / f'
  return e.sub(x0, e.div(d, e.fma(x0, d, 1.0)))


def _erfinv(e, y):
  ay = e.abs(y)
  x = _via_f64(e, _erfinv_approx, ay)                 # float32: the approximation, in double
  res = e.copysign(x, y)
  res = e.sel(e.eq(ay, 1.0), e.copysign(e.c(math.inf), y), res)
  res = e.sel(e.gt(ay, 1.0), math.nan, res)
  res = e.sel(e.eq(ay, 0.0), y, res)
  return e.sel(e.isnan(y), y, res)


# ------------------------------------------------------------------------------------------------
# lgamma / digamma.
# ------------------------------------------------------------------------------------------------
_LGAMMA_CENTERS = (1.0, 1.625, 2.5)                  # pieces [0.75, 1.25), [1.25, 2), [2, 3]


def _poly_dw(e, x, coeffs):
  """sum coeffs[k] x**k (per-element coefficients) as (hi, lo): the last Horner step
  c0 + x*Q(x) without rounding, so only Q's rounding (scaled by |x Q / P|) remains."""
  qh, ql = _two_prod(e, x, e.poly_v(x, coeffs[1:]))
  h, l = _two_sum(e, coeffs[0], qh)
  return h, e.add(l, ql)


def _lgamma_pos(e, z):
  """lgamma(z) for z > 0 (finite or +inf).

  lgamma(x) = (x - 1)(x - 2) G(x) on [0.75, 3] (G fitted in 3 pieces: relative accuracy at
  the zeros 1 and 2); z < 0.75 uses lgamma(1 + z) - log z, 3 <= z < 8 lgamma(2 + f) + log of
  the product (z - 1)...(2 + f) (exact factors, double-word product), z >= 8 Stirling."""
  r0, r1, r3 = e.lt(z, 0.75), e.lt(z, 3.0), e.lt(z, 8.0)
  fl = e.floor(z)
  f = e.sub(z, fl)
  off = e.sel(r0, 1.0, e.sel(r1, 0.0, e.sub(2.0, fl)))           # G's argument: z + off
  xg = e.add(z, off)
  p0, p1 = e.lt(xg, 1.25), e.lt(xg, 2.0)
  coeffs = e.select_coeffs([p0, p1], COEFFS[("lgamma", e.key)])
  c0, c1, c2 = _LGAMMA_CENTERS
  u = e.add(e.sub(z, e.sel(p0, c0, e.sel(p1, c1, c2))), off)
  fa = e.sel(r0, z, e.sel(r1, e.sub(z, 1.0), f))                  # (x - 1) and (x - 2) at
  fb_a, fb_b = e.sel(r1, z, f), e.sel(r0, -1.0, e.sel(r1, -2.0, 1.0))        # x = z + off
  if e.acc32:                                         # float32 results: plain double
    core = e.mul(e.mul(fa, e.add(fb_a, fb_b)), e.poly_v(u, coeffs))
  else:                                               # fa exact, fb and fa*fb double-words
    fbh, fbl = _two_sum(e, fb_a, fb_b)
    wh, wl = _two_prod(e, fa, fbh)
    wl = e.fma(fa, fbl, wl)
    gh, gl = _poly_dw(e, u, coeffs)
    core = e.fma(wh, gh, e.fma(wh, gl, e.mul(wl, gh)))
  # log term: -log z (z < 0.75), 0 (z < 3), +log prod_{j=1}^{floor(z)-2} (z - j) (z < 8).
  ph, pl = e.c(1.0), e.c(0.0)
  for j in range(1, 6):
    take = e.and_(e.not_(r1), e.le(j + 2.0, fl))
    fac = e.sel(take, e.sub(z, float(j)), 1.0)         # exact
    nh, nl = _two_prod(e, ph, fac)
    ph, pl = nh, e.fma(pl, fac, nl)
  ph = e.sel(r0, z, ph)
  pl = e.sel(r0, 0.0, pl)
  sg = e.sel(r0, -1.0, 1.0)
  if e.acc32:
    small = e.fma(sg, _log_core(e, ph), core)
  else:
    lgh, lgl = _log_hl(e, ph)                         # log(ph + pl) = lgh + lgl + pl/ph
    lgl = e.add(lgl, e.div(pl, ph))
    sh_, sl_ = _two_sum(e, core, e.mul(sg, lgh))
    small = e.add(sh_, e.fma(sg, lgl, sl_))
  # Stirling for z >= 8: (z - 1/2) log z - z + log(2pi)/2 + S(1/z^2)/z, written as
  # t (log z - 1) - 1/2 + ... with t = z - 1/2 (no overflow before the result does).
  zs = e.max(z, 8.0)
  lh, ll = _log_hl(e, zs)
  t = e.sub(zs, 0.5)
  a, b = _two_prod(e, t, e.sub(lh, 1.0))              # lh - 1 is exact (lh >= 2)
  b = e.fma(t, ll, b)
  v = e.div(1.0, zs)
  corr = e.mul(v, e.poly(e.mul(v, v), COEFFS[("stirling", e.key)]))
  stir = e.add(e.sub(a, 0.5), e.add(b, e.add(_const("hl2pi", e.f64)[0], corr)))
  stir = e.sel(e.isinf(a), math.inf, stir)            # overflow (and z = inf)
  return e.sel(r3, small, stir)


def _lgamma(e, x):
  ax = e.abs(x)
  fin = e.sel(e.or_(e.isnan(x), e.isinf(x)), 1.0, ax)
  pos = _lgamma_pos(e, e.max(fin, 2.0 ** (2 - e.bias - e.p)))
  pos = e.sel(e.isinf(x), math.inf, pos)
  # Reflection for x < 0: lgamma(x) = log(pi / |x sin(pi x)|) - lgamma(-x).
  (sh, sl), _ = _sinpi_cospi(e, fin)
  sp = sh
  if e.acc32:
    q = e.div(_const("pi", True)[0], e.abs(e.mul(ax, sh)))
    refl = e.sub(_log_core(e, q), pos)
  else:
    dh, dl = _two_prod(e, ax, e.abs(sh))              # |x sin(pi x)| as a double-word
    dh, dl = _fast_two_sum(e, dh, e.fma(ax, e.copysign(sl, sh), dl))
    qh, ql = _div_dw2(e, *_const("pi", e.f64), dh, dl)
    lh, ll = _log_hl(e, e.max(qh, e.tiny))
    rh, rl = _two_sum(e, lh, e.neg(pos))              # cancels near the zeros: exact
    refl = e.add(rh, e.add(rl, e.add(ll, e.div(ql, qh))))
  refl = e.sel(e.lt(ax, 2.0 ** -(e.p + 1)), pos, refl)            # tiny: -log|x|
  res = e.sel(e.lt(x, 0.0), refl, pos)
  res = e.sel(e.or_(e.eq(x, 0.0), e.isinf(x)), math.inf, res)
  res = e.sel(e.and_(e.lt(x, 0.0), e.eq(sp, 0.0)), math.inf, res)
  return e.sel(e.isnan(x), x, res)


def _digamma_pos(e, z):
  """digamma(z) for z > 0 (finite)."""
  r0, r1, r2, r3 = e.lt(z, 1.0), e.lt(z, 2.0), e.lt(z, 3.0), e.lt(z, 8.0)
  fl = e.floor(z)
  u = e.sel(r0, z, e.sel(r1, e.sub(z, 1.0), e.sel(r2, e.sub(z, 2.0), e.sub(z, fl))))
  near_root = r1                                      # psi(1 + u) = (u - u0) * D(u)
  lo = e.lt(u, 0.5)
  d1, d2 = COEFFS[("digamma1", e.key)], COEFFS[("digamma2", e.key)]
  coeffs = e.select_coeffs([e.and_(near_root, lo), near_root, lo], [d1[0], d1[1], d2[0], d2[1]])
  ph, pl = _poly_dw(e, e.sub(u, e.sel(lo, 0.25, 0.75)), coeffs)
  x0h, x0l = _const("x0", e.f64)
  du = e.sub(e.sub(u, x0h - 1.0), x0l)                # u - (x0 - 1); x0h - 1 is exact
  base = e.sel(near_root, e.fma(du, ph, e.mul(du, pl)), e.add(ph, pl))
  # z in [3, 8): psi(2 + u) + sum_{j=1}^{floor(z)-2} 1/(z - j);  z < 1: psi(1 + z) - 1/z.
  acc = e.c(0.0)
  for j in range(1, 6):
    take = e.and_(e.not_(r2), e.le(j + 2.0, fl))
    acc = e.add(acc, e.sel(take, e.div(1.0, e.sub(z, float(j))), 0.0))
  small = e.sel(r0, e.sub(base, e.div(1.0, z)), e.add(base, acc))
  # Asymptotic for z >= 8: log z - 1/(2z) - v A(v), v = 1/z^2.
  zs = e.max(z, 8.0)
  iz = e.div(1.0, zs)
  v = e.mul(iz, iz)
  asym = e.sub(e.sub(_log_core(e, zs), e.mul(iz, 0.5)),
               e.mul(v, e.poly(v, COEFFS[("digamma_asym", e.key)])))
  return e.sel(r3, small, asym)


def _digamma(e, x):
  fin = e.sel(e.or_(e.isnan(x), e.isinf(x)), 1.0, x)
  z = e.sel(e.lt(fin, 0.0), e.add(e.neg(fin), 1.0), fin)     # reflection uses psi(1 - x)
  z = e.max(z, 2.0 ** (2 - e.bias - e.p))
  pos = _digamma_pos(e, z)
  (sh, sl), (ch, cl) = _sinpi_cospi(e, e.sel(e.lt(fin, 0.0), e.neg(fin), 0.5))
  pih, pil = _const("pi", e.f64)
  if e.acc32:                                         # psi(1-x) - pi cot(pi x)
    refl = e.add(pos, e.mul(pih, e.div(ch, sh)))
  else:
    nh, nl = _two_prod(e, pih, ch)
    nh, nl = _fast_two_sum(e, nh, e.add(nl, e.fma(pil, ch, e.mul(pih, cl))))
    ch_, cl_ = _div_dw2(e, nh, nl, sh, sl)            # pi cot(pi x) as a double-word
    rh, rl = _two_sum(e, pos, ch_)
    refl = e.add(rh, e.add(rl, cl_))
  res = e.sel(e.lt(fin, 0.0), refl, pos)
  res = e.sel(e.eq(x, math.inf), math.inf, res)
  res = e.sel(e.eq(x, 0.0), -math.inf, res)           # psi(+-0) = -inf (as XLA / ember's eager)
  res = e.sel(e.and_(e.lt(x, 0.0), e.eq(e.floor(x), x)), math.nan, res)     # poles and -inf
  return e.sel(e.isnan(x), x, res)

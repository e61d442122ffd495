"""XLA:CPU's erf and erf_inv, op for op: float32 erf is XLA's rational function (its
coefficients read off the machine code), float64 erf glibc's (fdlibm's s_erf.c, no fused
multiply-adds, with glibc's exp: pow's exp_inline without the tail and sign); erf_inv is
Giles' polynomial from chlo's decomposition in both precisions, on XLA's log1p.
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.random.xla_math.common import (
    _F32, _F64, _U32, _U64, _daz64, _f32bits, _f32c, _f64c)
from ember._src.library.random.xla_math.exp_log import _xla_log1p_f32, _xla_log1p_f64
from ember._src.library.random.xla_math.pow import _pow_exp
from ember._src.primitives.elementwise import fma


_ERF_INV_LO = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
               0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV_HI = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _xla_erf_inv_f32(x):
  """Giles' single-precision erf_inv (XLA's chlo decomposition)."""
  c = _f32c
  w = lax.neg(_xla_log1p_f32(lax.mul(x, lax.neg(x))))
  lt = lax.lt(w, c(5))
  coef = lambda i: lax.select(lt, lax.full_like(w, _ERF_INV_LO[i]),
                              lax.full_like(w, _ERF_INV_HI[i]))
  ww = lax.select(lt, lax.add(w, c(-2.5)), lax.add(lax.sqrt(w), c(-3)))
  p = coef(0)
  for i in range(1, 9):
    p = fma(p, ww, coef(i))
  return lax.select(lax.eq(lax.abs(x), c(1)), lax.mul(x, c(np.inf)), lax.mul(p, x))


# XLA:CPU's float32 erf: x P(x^2) / Q(x^2), and +-1 from |x| >= 3.832; coefficients as
# float32 bit patterns read off its machine code.
_ERF_THRESHOLD = 0x407547CB
_ERF_P = [0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA]
_ERF_Q = [0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000]


def _xla_erf_f32(x):
  bits = _f32bits
  x2 = lax.mul(x, x)

  def horner(coeffs):
    acc = bits(coeffs[0])
    for k in coeffs[1:]:
      acc = fma(acc, x2, bits(k))
    return acc

  r = lax.div(lax.mul(x, horner(_ERF_P)), horner(_ERF_Q))
  one = lax.bitcast_convert_type(lax.bitwise_or(
      lax.bitwise_and(lax.bitcast_convert_type(x, _U32), np.uint32(0x80000000)),
      np.uint32(0x3F800000)), _F32)
  return lax.select(lax.ge(lax.abs(x), bits(_ERF_THRESHOLD)), one, r)


# Giles' double-precision erf_inv (chlo's decomposition): polynomials in w - 3.125 (w < 6.25),
# sqrt(w) - 3.25 (w < 16) and sqrt(w) - 5, w = -log1p(-x * x); highest degree first.
_ERF_INV64_LT625 = [
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356]
_ERF_INV64_LT16 = [
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635]
_ERF_INV64_GE16 = [
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221]


def _xla_erf_inv_f64(x):
  """chlo's float64 erf_inv: one Horner chain whose coefficients are selected per branch
  (the shorter polynomials stop early), each step a fused multiply-add."""
  c = _f64c
  x = _daz64(x)
  w = lax.neg(_xla_log1p_f64(lax.mul(x, lax.neg(x))))
  lt625, lt16 = lax.lt(w, c(6.25)), lax.lt(w, c(16))
  pick = lambda cond, a, b: lax.select(cond, lax.full_like(w, a), lax.full_like(w, b))

  def coef(i):
    v = lax.full_like(w, _ERF_INV64_LT625[i])
    if i < 19:
      v = lax.select(lt625, v, lax.full_like(w, _ERF_INV64_LT16[i]))
    if i < 17:
      v = lax.select(lt16, v, lax.full_like(w, _ERF_INV64_GE16[i]))
    return v

  ww = lax.select(lt625, lax.sub(w, c(3.125)), lax.sub(lax.sqrt(w), pick(lt16, 3.25, 5.0)))
  p = coef(0)
  for i in range(1, 23):
    step = fma(p, ww, coef(i))
    p = step if i < 17 else lax.select(lt16 if i < 19 else lt625, step, p)
  return lax.select(lax.eq(lax.abs(x), c(1)), lax.mul(x, c(np.inf)), _daz64(lax.mul(p, x)))


# --- glibc's float64 erf (fdlibm's s_erf.c, no fused multiply-adds) and the exp it calls ----

_ERF_PP = [1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
           -5.77027029648944159157e-03, -2.37630166566501626084e-05]
_ERF_QQ = [0.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02,
           5.08130628187576562776e-03, 1.32494738004321644526e-04, -3.96022827877536812320e-06]
_ERF_PA = [-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
           3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
           -2.16637559486879084300e-03]
_ERF_QA = [0.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01,
           7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02,
           1.19844998467991074170e-02]
_ERF_RA = [-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
           -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
           -8.12874355063065934246e+01, -9.81432934416914548592e+00]
_ERF_SA = [0.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02,
           4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02,
           1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02]
_ERF_RB = [-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
           -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
           -4.83519191608651397019e+02]
_ERF_SB = [0.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02,
           1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03,
           4.74528541206955367215e+02, -2.24409524465858183362e+01]


def _glibc_exp(x):
  """glibc's exp (`__exp_fma`): pow's exp without the tail and sign."""
  zero = lax.full_like(x, 0)
  out = _pow_exp(x, zero, lax.full_like(x, 0, _U64))
  return lax.select(lax.ne(x, x), x, out)


def _glibc_erf(x):
  """glibc's erf: x + x R/S(x**2) below 0.84375, erx + P/Q(|x| - 1) below 1.25, else
  1 - exp(-z*z - 0.5625) exp((z - x)(z + x) + R/S(1/x**2)) / x (z: x with its low 32 bits
  cleared), 1 from 6 on; the exp is glibc's."""
  c, sel, add, mul = _f64c, lax.select, lax.add, lax.mul
  x = _daz64(x)
  ax = lax.abs(x)
  neg = lax.lt(lax.bitcast_convert_type(x, dtypes.int64), np.int64(0))
  signed = lambda v: sel(neg, lax.neg(v), v)
  # |x| < 0.84375
  z = mul(x, x)
  pp, qq = [c(v) for v in _ERF_PP], [c(v) for v in _ERF_QQ]
  z2 = mul(z, z)
  z4 = mul(z2, z2)
  r = add(add(add(pp[0], mul(z, pp[1])), mul(z2, add(pp[2], mul(z, pp[3])))), mul(z4, pp[4]))
  s = add(add(add(c(1.0), mul(z, qq[1])), mul(z2, add(qq[2], mul(z, qq[3])))),
          mul(z4, add(qq[4], mul(z, qq[5]))))
  small = add(x, mul(x, lax.div(r, s)))
  efx = c(1.28379167095512586316e-01)
  tiny_x = sel(lax.lt(ax, c(2.0 ** -1015)),
               mul(c(0.0625), add(mul(c(16.0), x), mul(mul(c(16.0), efx), x))),
               add(x, mul(efx, x)))
  small = sel(lax.lt(ax, c(2.0 ** -28)), tiny_x, small)
  # 0.84375 <= |x| < 1.25

  def rational(s, p, q):
    """(p0 + s p1) + s2 (p2 + s p3) + ... over (1 + s q1) + s2 (q2 + s q3) + ..., pairwise."""
    s2 = mul(s, s)
    pw = [c(1.0), s2, mul(s2, s2), mul(mul(s2, s2), s2), mul(mul(s2, s2), mul(s2, s2))]
    pair = lambda k, cs: add(c(cs[k]), mul(s, c(cs[k + 1]))) if k + 1 < len(cs) else c(cs[k])
    num = functools.reduce(add, [mul(pw[j], pair(2 * j, p)) if j else pair(0, p)
                                 for j in range((len(p) + 1) // 2)])
    qs = [1.0] + q[1:]
    den = functools.reduce(add, [mul(pw[j], pair(2 * j, qs)) if j else pair(0, qs)
                                 for j in range((len(qs) + 1) // 2)])
    return num, den

  p, q = rational(lax.sub(ax, c(1.0)), _ERF_PA, _ERF_QA)
  erx = c(8.45062911510467529297e-01)
  mid = signed(add(erx, lax.div(p, q)))
  # 1.25 <= |x| < 6
  si = lax.div(c(1.0), mul(ax, ax))
  ra, sa = rational(si, _ERF_RA, _ERF_SA)
  rb, sb = rational(si, _ERF_RB, _ERF_SB)
  first = lax.lt(ax, c(1 / 0.35))
  rr, ss = sel(first, ra, rb), sel(first, sa, sb)
  zz = lax.bitcast_convert_type(lax.bitwise_and(lax.bitcast_convert_type(ax, _U64),
                                                np.uint64(0xFFFFFFFF00000000)), _F64)
  e = mul(_glibc_exp(lax.sub(mul(lax.neg(zz), zz), c(0.5625))),
          _glibc_exp(add(mul(lax.sub(zz, ax), add(zz, ax)), lax.div(rr, ss))))
  q_ = lax.div(e, ax)
  big = sel(neg, lax.sub(q_, c(1.0)), lax.sub(c(1.0), q_))
  big = sel(lax.ge(ax, c(6.0)), signed(lax.full_like(x, 1.0)), big)
  out = sel(lax.lt(ax, c(0.84375)), small, sel(lax.lt(ax, c(1.25)), mid, big))
  return sel(lax.ne(x, x), x, out)

"""jax.scipy.special's bernoulli, comb, poch, spence, dawsn, owens_t, wofz, sici and fresnel,
as jax/_src/scipy/special.py (and its third_party fresnel) computes them: the same
branches, Cephes / Cody / Weideman coefficients, edge values and custom JVPs (the exact
derivative formulas). Differences: fresnel evaluates Cephes' float64 rational forms in
every dtype (JAX uses Cephes' single-precision polynomials for float32; values agree to
float32 rounding); sin/cos(pi x^2 / 2) reduce x^2 / 2 modulo 2 as JAX does, then call
sin/cos (ember has no sinpi)."""
from __future__ import annotations

import math
import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, reductions, util
from ember._src.library.numpy.logic import where
from ember._src.library.numpy.reductions import aval
from ember._src.library.numpy.ufuncs import _const  # JAX's lax._const: weak for weak scalars
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["bernoulli", "comb", "poch", "spence", "dawsn", "owens_t", "wofz", "sici",
           "fresnel"]


def _real_only(name, x):
  if dtypes.is_complex(aval(x).dtype):
    raise ValueError(f"{name} does not support complex-valued inputs.")


def _polyval(coeffs, x):
  """Horner's rule with the coefficients (highest power first) in x's dtype."""
  out = lax.full_like(x, coeffs[0])
  for c in coeffs[1:]:
    out = lax.add(lax.mul(out, x), _const(x, c))
  return out


def _gammasgn(x):
  """sign(gamma(x)) for real x: NaN at the poles, -1 between -2k-1 and -2k."""
  fl = lax.floor(x)
  neg = lax.lt(x, _const(x, 0))
  odd = lax.ne(lax.rem(fl, _const(x, 2)), _const(x, 0))
  sign = where(neg & odd, _const(x, -1.0), _const(x, 1.0))
  return where((neg & lax.eq(x, fl)) | lax.ne(x, x), _const(x, np.nan), sign)


def _gamma(x):
  return lax.mul(_gammasgn(x), lax.exp(lax.lgamma(x)))


# --- bernoulli, comb, poch ----------------------------------------------------------------

def bernoulli(n: int):
  """The Bernoulli numbers B_0 .. B_n (B_1 = -1/2), by Chowla and Hartung's zeta series
  for the even ones (the odd ones past B_1 are 0)."""
  n = core.concrete_or_error(operator.index, n, "Argument n of bernoulli")
  if n < 0:
    raise ValueError("n must be a non-negative integer.")
  first = creation.array([1, -1 / 2, 1 / 6])
  if n < 3:
    return first[:n + 1]
  dt = aval(first).dtype
  m = creation.arange(4, n + 1, 2, dtype=dt)
  q1 = (1. / np.pi ** 2) * reductions.cumprod(-(m - 1) * m / 4 / np.pi ** 2)
  k = creation.arange(2, 50, dtype=dt)   # 2**-50 < 1e-15: the zeta tail is below float64
  q2 = reductions.sum(k[:, None] ** -m[None, :], axis=0)
  return creation.zeros(n + 1, dt).at[:3].set(first).at[4::2].set(q1 * (1 + q2))


def comb(N, k, *, repetition: bool = False):
  """N choose k = exp(lgamma(N+1) - lgamma(k+1) - lgamma(N-k+1)); 0 outside 0 <= k <= N.
  With repetition: comb(N + k - 1, k), and 1 for k == 0."""
  N, k = util.promote_args_inexact("comb", N, k)
  if repetition:
    return where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
  ok = (k <= N) & (N >= 0) & (k >= 0)
  safe_n, safe_k = where(ok, N, 0.0), where(ok, k, 0.0)
  out = lax.exp(lax.lgamma(safe_n + 1) - lax.lgamma(safe_k + 1)
                - lax.lgamma(safe_n + 1 - safe_k))
  return where(ok, out, 0.0)


@custom_jvp
def _poch(z, m):
  return where(m == 0., _const(z, 1.0), _gamma(z + m) / _gamma(z))


def _poch_dz(g, ans, z, m):
  return g * (lax.digamma(z + m) - lax.digamma(z)) * _poch(z, m)


def _poch_dm(g, ans, z, m):
  return g * lax.digamma(z + m) * _poch(z, m)


_poch.defjvps(_poch_dz, _poch_dm)


def poch(z, m):
  """The rising factorial gamma(z + m) / gamma(z) (1 where m == 0)."""
  z, m = util.promote_args_inexact("poch", z, m)
  if dtypes.is_complex(aval(z).dtype):
    raise ValueError("jnp.poch does not support complex-valued inputs.")
  return _poch(z, m)


# --- spence (dilogarithm) -------------------------------------------------------------------

_SPENCE_A = [4.65128586073990045278E-5, 7.31589045238094711071E-3, 1.33847639578309018650E-1,
             8.79691311754530315341E-1, 2.71149851196553469920E0, 4.25697156008121755724E0,
             3.29771340985225106936E0, 1.00000000000000000126E0]
_SPENCE_B = [6.90990488912553276999E-4, 2.54043763932544379113E-2, 2.82974860602568089943E-1,
             1.41172597751831069617E0, 3.63800533345137075418E0, 5.03278880143316990390E0,
             3.54771340985225096217E0, 9.99999999999999998740E-1]


def _spence_positive(x):
  """Cephes' spence for x > 0, x != 1: reflect x > 2 to 1/x, then a rational function of
  w = x - 1 (or 1/x - 1 above 1.5, -x below 0.5) with the matching identities."""
  above_2 = x > 2.0
  x = where(above_2, 1.0 / x, x)
  above_1_5, below_0_5 = x > 1.5, x < 0.5
  reflect = above_2 | above_1_5
  w = where(above_1_5, 1.0 / x - 1.0, where(below_0_5, -x, x - 1.0))
  y = -w * _polyval(_SPENCE_A, w) / _polyval(_SPENCE_B, w)
  y = where(below_0_5, np.pi ** 2 / 6.0 - lax.log(x) * lax.log1p(-x) - y, y)
  return where(reflect, -0.5 * lax.square(lax.log(x)) - y, y)


def spence(x):
  """The dilogarithm -int_1^x log(t) / (t - 1) dt for real x >= 0 (NaN below 0)."""
  x = creation.asarray(x)
  if aval(x).dtype not in (np.float32, np.float64):
    raise TypeError(f"x.dtype={aval(x).dtype} is not supported, see docstring for supported "
                    "types.")
  special = (x < 0.0) | (x == 1.0) | (x == 0.0)
  y = _spence_positive(where(special, _const(x, 2.0), x))
  return where(x < 0.0, np.nan, where(x == 1.0, 0.0, where(x == 0.0, np.pi ** 2 / 6, y)))


# --- dawsn --------------------------------------------------------------------------------

# Cody, Paciorek & Thacher (1970): [0, 3.25) x P(x^2)/Q(x^2); beyond, 0.5/x (1 + t P(t)/Q(t))
# with t = 1/x^2 (one pair of coefficients for [3.25, 6.25), one above)
_DAWSN_AN = [1.13681498971755972054e-11, 8.49262267667473811108e-10, 1.94434204175553054283e-8,
             9.53151741254484363489e-7, 3.07828309874913200438e-6, 3.52513368520288738649e-4,
             -8.50149846724410912031e-4, 4.22618223005546594270e-2,
             -9.17480371773452345351e-2, 9.99999999999999994612e-1]
_DAWSN_AD = [2.40372073066762605484e-11, 1.48864681368493396752e-9, 5.21265281010541664570e-8,
             1.27258478273186970203e-6, 2.32490249820789513991e-5, 3.25524741826057911661e-4,
             3.48805814657162590916e-3, 2.79448531198828973716e-2, 1.58874241960120565368e-1,
             5.74918629489320327824e-1, 1.00000000000000000539e0]
_DAWSN_BN = [5.08955156417900903354e-1, -2.44754418142697847934e-1, 9.41512335303534411857e-2,
             -2.18711255142039025206e-2, 3.66207612329569181322e-3,
             -4.23209114460388756528e-4, 3.59641304793896631888e-5,
             -2.14640351719968974225e-6, 9.10010780076391431042e-8,
             -2.40274520828250956942e-9, 3.59233385440928410398e-11]
_DAWSN_BD = [1.00000000000000000000e0, -6.31839869873368190192e-1, 2.36706788228248691528e-1,
             -5.31806367003223277662e-2, 8.48041718586295374409e-3,
             -9.47996768486665330168e-4, 7.81025592944552338085e-5,
             -4.55875153252442634831e-6, 1.89100358111421846170e-7,
             -4.91324691331920606875e-9, 7.18466403235734541950e-11]
_DAWSN_CN = [-5.90592860534773254987e-1, 6.29235242724368800674e-1, -1.72858975380388136411e-1,
             1.64837047825189632310e-2, -4.86827613020462700845e-4]
_DAWSN_CD = [1.00000000000000000000e0, -2.69820057197544900361e0, 1.73270799045947845857e0,
             -3.93708582281939493482e-1, 3.44278924041233391079e-2,
             -9.73655226040941223894e-4]


def _dawsn_abs(ax):
  """Dawson's integral of ax >= 0; each region evaluated at a safe dummy elsewhere so the
  unused branches never make inf / inf."""
  one = lax.full_like(ax, 1.0)
  r1, r3 = ax < 3.25, ax >= 6.25
  r2 = ~r1 & ~r3
  a1 = where(r1, ax, one)
  v1 = a1 * _polyval(_DAWSN_AN, lax.square(a1)) / _polyval(_DAWSN_AD, lax.square(a1))

  def tail(mask, num, den):
    a = where(mask, ax, one)
    t = 1.0 / lax.square(a)
    return (0.5 / a) * (1.0 + t * _polyval(num, t) / _polyval(den, t))
  v2, v3 = tail(r2, _DAWSN_BN, _DAWSN_BD), tail(r3, _DAWSN_CN, _DAWSN_CD)
  return where(r1, v1, where(r2, v2, v3))


@custom_jvp
def _dawsn(x):
  if aval(x).dtype not in (np.float32, np.float64):   # 16-bit floats: in float32
    return _dawsn(x.astype(np.float32)).astype(aval(x).dtype)
  return lax.sign(x) * _dawsn_abs(lax.abs(x))


_dawsn.defjvps(lambda g, ans, x: g * (1.0 - 2.0 * x * ans))


def dawsn(x):
  """Dawson's integral exp(-x^2) int_0^x exp(t^2) dt (real x)."""
  x, = util.promote_args_inexact("dawsn", x)
  if dtypes.is_complex(aval(x).dtype):
    raise ValueError("dawsn does not support complex-valued inputs.")
  return _dawsn(x)


# --- owens_t ------------------------------------------------------------------------------

_OWENS_T_QUAD_PTS = np.array([
    0.0035082039676451715, 0.031279042338030754, 0.085266826283219451, 0.16245071730812277,
    0.25851196049125435, 0.36807553840697534, 0.48501092905604697, 0.60277514152618577,
    0.71477884217753227, 0.81475510988760099, 0.89711029755948966, 0.95723808085944262,
    0.99178832974629704])
_OWENS_T_QUAD_WTS = np.array([
    0.018831438115323503, 0.018567086243977649, 0.018042093461223386, 0.017263829606398753,
    0.016243219975989857, 0.014994592034116705, 0.013535474469662088, 0.011886351605820165,
    0.010070377242777432, 0.0081130545742299587, 0.0060419009528470239,
    0.0038862217010742058, 0.0016793031084546090])


def _owens_t_quadrature(h, a):
  """a * sum_i w_i exp(-h^2 (1 + a^2 t_i) / 2) / (1 + a^2 t_i): Gauss-Legendre in t."""
  r = lax.square(a)[..., None] * _OWENS_T_QUAD_PTS.astype(aval(a).dtype)
  integrand = lax.exp(-0.5 * lax.square(h)[..., None] * (1. + r)) / (1. + r)
  return a * reductions.sum(integrand * _OWENS_T_QUAD_WTS.astype(aval(a).dtype), axis=-1)


@custom_jvp
def _owens_t(h, a):
  h, abs_a = lax.abs(h), lax.abs(a)
  root_2 = _const(h, np.sqrt(2))
  h_normed = h / root_2
  small_a = abs_a <= 1.
  mod_a = where(small_a, abs_a, 1.0 / abs_a)
  mod_h = where(small_a, h, abs_a * h)
  out = _owens_t_quadrature(mod_h, mod_a)
  out = where(mod_h == 0., lax.atan(mod_a) / (2 * np.pi), out)   # exact at h = 0, a = 1
  out = where(mod_a == 1., 0.125 * lax.erfc(-mod_h / root_2) * lax.erfc(mod_h / root_2), out)
  norm_h, norm_ah = lax.erfc(h_normed), lax.erfc(abs_a * h_normed)   # |a| > 1: reflection
  reflected = where(abs_a * h <= 0.67,
                    0.25 - 0.25 * lax.erf(h_normed) * lax.erf(abs_a * h_normed) - out,
                    0.25 * (norm_h + norm_ah - norm_h * norm_ah) - out)
  out = lax.sign(a) * where(abs_a > 1., reflected, out)
  return where(lax.ne(a, a) | lax.ne(h, h), _const(out, np.nan), out)


@_owens_t.defjvp
def _owens_t_jvp(primals, tangents):
  (h, a), (dh, da) = primals, tangents
  out = _owens_t(h, a)
  d_h = (-lax.exp(-0.5 * lax.square(h)) * lax.erf(a * h / np.sqrt(2))
         / (2. * np.sqrt(2. * np.pi)))
  a2p1 = lax.square(a) + 1.
  d_a = lax.exp(-0.5 * a2p1 * lax.square(h)) / (2. * np.pi * a2p1)
  return out, (d_h * dh + d_a * da).astype(aval(out).dtype)


def owens_t(h, a):
  """Owen's T function T(h, a) = 1/(2 pi) int_0^a exp(-h^2 (1 + x^2) / 2) / (1 + x^2) dx."""
  h, a = util.promote_args_inexact("owens_t", h, a)
  return _owens_t(h, a)


# --- wofz (Faddeeva) ----------------------------------------------------------------------

# Weideman (1994), N = 32: w(z) = 2 p(Z) / (L - iz)^2 + 1 / (sqrt(pi) (L - iz)),
# Z = (L + iz) / (L - iz), valid for Im z >= 0 (coefficients highest power first)
_WOFZ_L = 4.7568284600108841
_WOFZ_C = [
    -1.3034426067909105e-12, 3.7411838373738471e-12, 8.030427700497756e-12,
    -2.1543593557490879e-11, -5.5442449963237932e-11, 1.165824698850374e-10,
    4.1537441121999766e-10, -5.2310202114920615e-10, -3.2080151339721323e-09,
    8.1248864216535907e-10, 2.3797556530014025e-08, 2.2930438438915445e-08,
    -1.4813078929137642e-07, -4.1840763750512053e-07, 4.2558331397138446e-07,
    4.4015317312832251e-06, 6.8210319443575151e-06, -2.1409619201999998e-05,
    -0.00013075449254579421, -0.00024532980270038237, 0.00039259136070109705,
    0.0045195411053493093, 0.019006155784845501, 0.057304403529837282, 0.14060716226893755,
    0.29544451071508743, 0.54601397206393376, 0.9019254893648001, 1.3455441692345449,
    1.8256696296324815, 2.2635372999002676, 2.5722534081245696]


def _wofz_upper(z):
  re = lax.real(z)
  big_l = lax.complex(_const(re, _WOFZ_L), _const(re, 0.))
  iz = lax.complex(lax.neg(lax.imag(z)), re)
  denom = big_l - iz
  p = _polyval(_WOFZ_C, (big_l + iz) / denom)
  inv_sqrt_pi = lax.complex(_const(re, 1. / np.sqrt(np.pi)), _const(re, 0.))
  return 2 * p / (denom * denom) + inv_sqrt_pi / denom


@custom_jvp
def _wofz(z):
  upper = lax.ge(lax.imag(z), _const(lax.real(z), 0.))
  w_upper = _wofz_upper(lax.select(upper, z, lax.neg(z)))
  return lax.select(upper, w_upper, 2 * lax.exp(lax.neg(z * z)) - w_upper)  # w(-z) reflection


_wofz.defjvps(lambda g, ans, z: g * (lax.neg(2 * z * ans) + lax.complex(
    _const(lax.real(z), 0.), _const(lax.real(z), 2. / np.sqrt(np.pi)))))


def wofz(z):
  """The Faddeeva function w(z) = exp(-z^2) erfc(-i z) (complex result)."""
  z, = util.promote_args_inexact("wofz", z)
  dt = aval(z).dtype
  if not dtypes.is_complex(dt):   # as JAX's promote_args_complex: complex64 below float64
    z = z.astype(np.complex128 if dt == np.float64 else np.complex64)
  return _wofz(z)


# --- sici ---------------------------------------------------------------------------------

# Cephes sici.c: rational functions of x^2 up to 4, auxiliary f, g of 1/x^2 beyond
_SI_N = [-8.39167827910303881427E-11, 4.62591714427012837309E-8, -9.75759303843632795789E-6,
         9.76945438170435310816E-4, -4.13470316229406538752E-2, 1.00000000000000000302E0]
_SI_D = [2.03269266195951942049E-12, 1.27997891179943299903E-9, 4.41827842801218905784E-7,
         9.96412122043875552487E-5, 1.42085239326149893930E-2, 9.99999999999999996984E-1]
_CI_N = [2.02524002389102268789E-11, -1.35249504915790756375E-8, 3.59325051419993077021E-6,
         -4.74007206873407909465E-4, 2.89159652607555242092E-2, -1.00000000000000000080E0]
_CI_D = [4.07746040061880559506E-12, 3.06780997581887812692E-9, 1.23210355685883423679E-6,
         3.17442024775032769882E-4, 5.10028056236446052392E-2, 4.00000000000000000080E0]
_FN4 = [4.23612862892216586994E0, 5.45937717161812843388E0, 1.62083287701538329132E0,
        1.67006611831323023771E-1, 6.81020132472518137426E-3, 1.08936580650328664411E-4,
        5.48900223421373614008E-7]
_FD4 = [1, 8.16496634205391016773E0, 7.30828822505564552187E0, 1.86792257950184183883E0,
        1.78792052963149907262E-1, 7.01710668322789753610E-3, 1.10034357153915731354E-4,
        5.48900252756255700982E-7]
_GN4 = [8.71001698973114191777E-2, 6.11379109952219284151E-1, 3.97180296392337498885E-1,
        7.48527737628469092119E-2, 5.38868681462177273157E-3, 1.61999794598934024525E-4,
        1.97963874140963632189E-6, 7.82579040744090311069E-9]
_GD4 = [1, 1.64402202413355338886E0, 6.66296701268987968381E-1, 9.88771761277688796203E-2,
        6.22396345441768420760E-3, 1.73221081474177119497E-4, 2.02659182086343991969E-6,
        7.82579218933534490868E-9]
_FN8 = [4.55880873470465315206E-1, 7.13715274100146711374E-1, 1.60300158222319456320E-1,
        1.16064229408124407915E-2, 3.49556442447859055605E-4, 4.86215430826454749482E-6,
        3.20092790091004902806E-8, 9.41779576128512936592E-11, 9.70507110881952024631E-14]
_FD8 = [1.0, 9.17463611873684053703E-1, 1.78685545332074536321E-1, 1.22253594771971293032E-2,
        3.58696481881851580297E-4, 4.92435064317881464393E-6, 3.21956939101046018377E-8,
        9.43720590350276732376E-11, 9.70507110881952025725E-14]
_GN8 = [6.97359953443276214934E-1, 3.30410979305632063225E-1, 3.84878767649974295920E-2,
        1.71718239052347903558E-3, 3.48941165502279436777E-5, 3.47131167084116673800E-7,
        1.70404452782044526189E-9, 3.85945925430276600453E-12, 3.14040098946363334640E-15]
_GD8 = [1.0, 1.68548898811011640017E0, 4.87852258695304967486E-1, 4.67913194259625806320E-2,
        1.90284426674399523638E-3, 3.68475504442561108162E-5, 3.57043223443740838771E-7,
        1.72693748966316146736E-9, 3.87830166023954706752E-12, 3.14040098946363335242E-15]


def _sici_series(x):
  t = x * x
  si = x * _polyval(_SI_N, t) / _polyval(_SI_D, t)
  ci = np.euler_gamma + lax.log(x) + t * _polyval(_CI_N, t) / _polyval(_CI_D, t)
  return where(x == 0, 0.0, si), where(x == 0, -np.inf, ci)


def _sici_asymptotic(x):
  s, c = lax.sin(x), lax.cos(x)
  z = 1.0 / (x * x)
  below_8 = x < 8.0
  f = where(below_8, _polyval(_FN4, z) / (x * _polyval(_FD4, z)),
            _polyval(_FN8, z) / (x * _polyval(_FD8, z)))
  g = where(below_8, z * _polyval(_GN4, z) / _polyval(_GD4, z),
            z * _polyval(_GN8, z) / _polyval(_GD8, z))
  return (np.pi / 2) - f * c - g * s, f * s - g * c


def _sici_far(x):
  """x > 1e9: the leading asymptotic terms."""
  inf = lax.eq(x, _const(x, np.inf))
  si = where(inf, np.pi / 2, (np.pi / 2) - lax.cos(x) / x)
  return si, where(inf, 0.0, lax.sin(x) / x)


@custom_jvp
def _sici(x):
  ax = lax.abs(x)
  series, asym, far = _sici_series(ax), _sici_asymptotic(ax), _sici_far(ax)
  near, mid = ax <= 4, (ax > 4) & (ax <= 1e9)
  si = where(near, series[0], where(mid, asym[0], far[0]))
  ci = where(near, series[1], where(mid, asym[1], far[1]))
  return lax.sign(x) * si, where(lax.eq(x, _const(x, -np.inf)), np.nan, ci)


@_sici.defjvp
def _sici_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  safe = where(x == 0, _const(x, 1.0), x)
  sinc = where(x == 0, _const(x, 1.0), lax.sin(safe) / safe)
  return _sici(x), (sinc * t, lax.cos(x) / x * t)


def sici(x):
  """(Si(x), Ci(x)): the sine and cosine integrals (Ci is NaN for x < 0 except -inf as
  SciPy's real version: NaN)."""
  x, = util.promote_args_inexact("sici", x)
  if dtypes.is_complex(aval(x).dtype):
    raise ValueError(f"Argument `x` to sici must be real-valued. Got dtype {aval(x).dtype}.")
  return _sici(x)


# --- fresnel ------------------------------------------------------------------------------

_FRESNL_SN = [-2.99181919401019853726e3, 7.08840045257738576863e5, -6.29741486205862506537e7,
              2.54890880573376359104e9, -4.42979518059697779103e10,
              3.18016297876567817986e11]
_FRESNL_SD = [1.0, 2.81376268889994315696e2, 4.55847810806532581675e4,
              5.17343888770096400730e6, 4.19320245898111231129e8, 2.24411795645340920940e10,
              6.07366389490084639049e11]
_FRESNL_CN = [-4.98843114573573548651e-8, 9.50428062829859605134e-6, -6.45191435683965050962e-4,
              1.88843319396703850064e-2, -2.05525900955013891793e-1, 9.99999999999999998822e-1]
_FRESNL_CD = [3.99982968972495980367e-12, 9.15439215774657478799e-10,
              1.25001862479598821474e-7, 1.22262789024179030997e-5, 8.68029542941784300606e-4,
              4.12142090722199792936e-2, 1.00000000000000000118e0]
_FRESNL_FN = [4.21543555043677546506e-1, 1.43407919780758885261e-1, 1.15220955073585758835e-2,
              3.45017939782574027900e-4, 4.63613749287867322088e-6, 3.05568983790257605827e-8,
              1.02304514164907233465e-10, 1.72010743268161828879e-13,
              1.34283276233062758925e-16, 3.76329711269987889006e-20]
_FRESNL_FD = [1.0, 7.51586398353378947175e-1, 1.16888925859191382142e-1,
              6.44051526508858611005e-3, 1.55934409164153020873e-4, 1.84627567348930545870e-6,
              1.12699224763999035261e-8, 3.60140029589371370404e-11,
              5.88754533621578410010e-14, 4.52001434074129701496e-17,
              1.25443237090011264384e-20]
_FRESNL_GN = [5.04442073643383265887e-1, 1.97102833525523411709e-1, 1.87648584092575249293e-2,
              6.84079380915393090172e-4, 1.15138826111884280931e-5, 9.82852443688422223854e-8,
              4.45344415861750144738e-10, 1.08268041139020870318e-12,
              1.37555460633261799868e-15, 8.36354435630677421531e-19,
              1.86958710162783235106e-22]
_FRESNL_GD = [1.0, 1.47495759925128324529e0, 3.37748989120019970451e-1,
              2.53603741420338795122e-2, 8.14679107184306179049e-4, 1.27545075667729118702e-5,
              1.04314589657571990585e-7, 4.60680728146520428211e-10,
              1.10273215066240270757e-12, 1.38796531259578871258e-15,
              8.39158816283118707363e-19, 1.86958710162783236342e-22]


@custom_jvp
def _sincos_pi_x2_half(x):
  """(sin, cos)(pi x^2 / 2) with x^2 / 2 reduced modulo 2 exactly enough: with s = x mod 2,
  x^2 / 2 = s (x - s / 2) modulo 2."""
  x = lax.abs(x)
  s = lax.rem(x, _const(x, 2.0))
  r = lax.rem(s * (x - s / 2), _const(x, 2.0))
  return lax.sin(np.pi * r), lax.cos(np.pi * r)


@_sincos_pi_x2_half.defjvp
def _sincos_pi_x2_half_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  sin, cos = _sincos_pi_x2_half(x)
  scale = (np.pi * x) * t
  return (sin, cos), (cos * scale, -sin * scale)


@custom_jvp
def _fresnel(x):
  ax = lax.abs(x)
  x2 = ax * ax
  t4 = x2 * x2
  s_small = ax * x2 * _polyval(_FRESNL_SN, t4) / _polyval(_FRESNL_SD, t4)
  c_small = ax * _polyval(_FRESNL_CN, t4) / _polyval(_FRESNL_CD, t4)
  sinpi, cospi = _sincos_pi_x2_half(ax)
  c_large = 0.5 + 1 / (np.pi * ax) * sinpi
  s_large = 0.5 - 1 / (np.pi * ax) * cospi
  t = np.pi * x2
  u = 1.0 / (t * t)
  f = 1.0 - u * _polyval(_FRESNL_FN, u) / _polyval(_FRESNL_FD, u)
  g = (1.0 / t) * _polyval(_FRESNL_GN, u) / _polyval(_FRESNL_GD, u)
  c_mid = 0.5 + (f * sinpi - g * cospi) / (np.pi * ax)
  s_mid = 0.5 - (f * cospi + g * sinpi) / (np.pi * ax)
  inf, small, large = lax.eq(ax, _const(ax, np.inf)), x2 < 2.5625, ax > 36974.0
  s = where(inf, 0.5, where(small, s_small, where(large, s_large, s_mid)))
  c = where(inf, 0.5, where(small, c_small, where(large, c_large, c_mid)))
  neg = x < 0.0
  return where(neg, -s, s), where(neg, -c, c)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  sinpi, cospi = _sincos_pi_x2_half(x)
  return _fresnel(x), (sinpi * t, cospi * t)


def fresnel(x):
  """(S(x), C(x)): the Fresnel integrals int_0^x sin / cos(pi t^2 / 2) dt (real x)."""
  x, = util.promote_args_inexact("fresnel", x)
  dt = aval(x).dtype
  if dtypes.is_complex(dt):
    raise NotImplementedError("fresnel: complex-valued inputs are not supported (as in JAX); "
                              "pass a real array")
  if dt not in (np.float32, np.float64, np.float16, dtypes.bfloat16):
    raise NotImplementedError(f"fresnel: dtype {dt} is not supported (as in JAX); pass a "
                              "floating array")
  if dt in (np.float16, dtypes.bfloat16):   # as JAX: in float32
    s, c = _fresnel(x.astype(np.float32))
    return s.astype(dt), c.astype(dt)
  return _fresnel(x)

"""jax.scipy.special's gammaincinv and gammainccinv: the x with gammainc(a, x) = y (or
gammaincc(a, x) = y), as JAX 0.12 computes it: DiDonato & Morris's (1986) initial guess
(equation numbers below are the paper's; JAX adapts TensorFlow Probability's igammainv),
then three Halley steps on the lower or upper regularized gamma function, whichever makes
the target exact. The derivatives are implicit: dx/dy = 1 / (d/dx gammainc), dx/da the
gamma sampler's reparameterization gradient; for huge a, those of the Wilson-Hilferty
approximation."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.lax import special as lax_special
from ember._src.library.numpy import reductions, util
from ember._src.library.numpy.logic import where
from ember._src.library.numpy.reductions import aval
from ember._src.library.numpy.shape import broadcast_arrays
from ember._src.primitives.control.loops import fori_loop, while_loop
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["gammaincinv", "gammainccinv"]


def _poly(x, coeffs):
  """sum_k coeffs[k] x^k (lowest power first; coefficients may be arrays)."""
  out = coeffs[-1] + 0 * x
  for c in reversed(coeffs[:-1]):
    out = out * x + c
  return out


def _xlogy(a, b):
  return where(a == 0, 0.0, a * lax.log(where(a == 0, 1.0, b)))


def _normal_quantile(p):
  """sqrt(2) erfinv(2p - 1): Phi^-1(p), for the Wilson-Hilferty derivatives."""
  return np.sqrt(2.0) * lax.erf_inv(2.0 * p - 1.0)


def _eq23(log_b, v, a):
  return -log_b + _xlogy(a - 1.0, v) - lax.log1p((1.0 - a) / (1.0 + v))


def _eq25(a, y):
  """x = y + c1 + c2/y + ... + c5/y^4, c1 = (a - 1) log y, c_k (a - 1) polynomials in c1."""
  c1 = _xlogy(a - 1.0, y)
  c2 = _poly(c1, [1.0, 1.0])
  c3 = _poly(c1, [_poly(a, [-5 / 2, 3 / 2]), a - 2.0, -1 / 2])
  c4 = _poly(c1, [_poly(a, [47 / 6, -46 / 6, 11 / 6]), _poly(a, [7.0, -6.0, 1.0]),
                  _poly(a, [5 / 2, -3 / 2]), 1 / 3])
  c5 = _poly(c1, [_poly(a, [-379 / 12, 477 / 12, -195 / 12, 25 / 12]),
                  _poly(a, [-61 / 2, 36.0, -25 / 2, 1.0]), _poly(a, [-13.0, 13.0, -3.0]),
                  _poly(a, [-17 / 6, 11 / 6]), -1 / 4])
  return y + c1 + (a - 1.0) * _poly(1.0 / y, [0.0, c2, c3, c4, c5])


def _eq32(p, q):
  """A rational approximation of the normal quantile of p."""
  t = lax.sqrt(-2.0 * lax.log(lax.min(p, q)))
  num = _poly(t, [3.31125922108741, 11.6616720288968, 4.28342155967104, 0.213623493715853])
  den = _poly(t, [1.0, 6.61053765625462, 6.40691597760039, 1.27364489782223,
                  0.36117081018842e-1])
  s = t - num / den
  return where(p < 0.5, -s, s)


_ZETA_2_TO_9 = [1.6449340668482264, 1.2020569031595942, 1.0823232337111382,
                1.0369277551433699, 1.0173430619844491, 1.0083492773819228,
                1.0040773561979443, 1.0020083928260822]


def _lgamma1p(a):
  """lgamma(1 + a), by its Taylor series below 0.01 (where 1 + a rounds)."""
  small = a < 0.01
  a_s = where(small, a, 0.0)
  coeffs = [-np.euler_gamma] + [(-1) ** k * z / k for k, z in enumerate(_ZETA_2_TO_9, 2)]
  return where(small, a_s * _poly(a_s, coeffs), lax.lgamma(1.0 + a))


def _gammaincc_small_x(a, x, lgamma1p_a):
  """gammaincc(a, x) for 0 < x < 1.1 as -expm1(u) - a x e^u sum_n (-x)^(n-1) / (n! (a+n)),
  u = log(x^a / Gamma(a + 1)): accurate when the result is small (Cephes igamc_series)."""
  terms = [(-1) ** n / math.factorial(n) / (a + n) for n in range(1, 21)]
  u = a * lax.log(x) - lgamma1p_a
  return -lax.expm1(u) - a * x * lax.exp(u) * _poly(x, terms)


def _eq34(a, x, enabled):
  """1 + x/(a+1) + x^2/((a+1)(a+2)) + ... up to the first term below 1e-4."""
  def cond(c):
    return (c[0] <= 26) & ~reductions.all(c[1])

  def body(c):
    n, done, term, total = c
    term = term * x / (a + n)
    return n + 1, done | (term < 1e-4), term, where(done, total, total + term)
  one = lax.full_like(x, 1.0)
  return while_loop(cond, body, (lax.full((), 1, aval(x).dtype), ~enabled, one, one))[3]


def _guess_small_a(a, log_b, log_p, log_q, q, lgamma1p_a):
  """a < 1: equations 21-25 (and the a < 0.3 formula), by the size of b = q Gamma(a)."""
  a_lo = where(a < 1.0, a, 0.5)
  log_b_lo = lax.min(log_b, _c(log_b, math.log(0.6)))
  v = -log_b_lo - (1.0 - a_lo) * lax.log(-log_b_lo)
  v_sq = v * v
  eq24 = -log_b_lo - (1.0 - a_lo) * lax.log(v) - lax.log(
      (v_sq + 2.0 * (3.0 - a_lo) * v + (2.0 - a_lo) * (3.0 - a_lo))
      / (v_sq + (5.0 - a_lo) * v + 2.0))
  x = where(log_b_lo >= math.log(0.15), _eq23(log_b_lo, v, a_lo),
            where(log_b_lo > math.log(0.01), eq24, _eq25(a_lo, -log_b_lo)))
  t = lax.exp(-np.euler_gamma - lax.exp(log_b_lo))
  x = where((a_lo < 0.3) & (log_b >= math.log(0.35)), t * lax.exp(t * lax.exp(t)), x)
  u = where((log_b + log_q > math.log(1e-8)) & (q > 1e-5),
            lax.exp((log_p + where(a < 1.0, lgamma1p_a, 0.0)) / a_lo),
            lax.exp(-q / a_lo - np.euler_gamma))   # eq. 21, Taylor expanded for small q
  return where((log_b > math.log(0.6)) | ((log_b >= math.log(0.45)) & (a_lo >= 0.3)),
               u / (1.0 - u / (a_lo + 1.0)), x)


def _c(x, v):
  return lax.full_like(x, v)


def _cornish_fisher(a_hi, s):
  """Eq. 31: w = a + s sqrt(a) + d0 + d1/sqrt(a) + ..., the d_k polynomials in s."""
  sqrt_a = lax.sqrt(a_hi)
  return a_hi + sqrt_a * _poly(1.0 / sqrt_a, [
      s, _poly(s, [-1 / 3, 0.0, 1 / 3]), _poly(s, [0.0, -7 / 36, 0.0, 1 / 36]),
      _poly(s, [16 / 810, 0.0, -7 / 810, 0.0, -3 / 810]),
      _poly(s, [0.0, -433 / 38880, 0.0, 256 / 38880, 0.0, 9 / 38880])])


def _guess_large_p(a, a_hi, w, log_b, p, is_large_a):
  """a >= 1, p > 0.5: w itself, or equation 25 or (twice) 23."""
  small_a = a < 1.0
  use_w = is_large_a | (w < 3.0 * a_hi) | ((a_hi >= 500.0) & (lax.abs(1.0 - w / a_hi) < 1e-6))
  d = lax.max(_c(a_hi, 2.0), a_hi * (a_hi - 1.0))
  use25 = ~small_a & (p > 0.5) & ~use_w & (log_b <= -d * math.log(10.0))
  use23 = ~small_a & (p > 0.5) & ~use_w & ~use25
  x25 = _eq25(where(use25, a_hi, 1.0), where(use25, -log_b, 1.0))
  a23, log_b23 = where(use23, a_hi, 1.0), where(use23, log_b, -1.0)
  x23 = _eq23(log_b23, _eq23(log_b23, where(use23, w, 1.0), a23), a23)
  return where(use_w, w, where(use25, x25, x23))


def _guess_small_p(a, a_hi, w, log_pg, p, is_large_a):
  """a >= 1, p <= 0.5: equation 35's fixed point, then the series of equation 34."""
  common = (a >= 1.0) & ~is_large_a & (p <= 0.5)
  use35 = common & (w <= 0.15 * (a_hi + 1.0))
  a35, lp35 = where(use35, a_hi, 1.0), where(use35, log_pg, 0.0)
  z = lax.exp((lp35 + where(use35, w, 0.0)) / a35)
  for _ in range(2):
    z = lax.exp((lp35 + z - lax.log1p(z / (a35 + 1.0) * (1.0 + z / (a35 + 2.0)))) / a35)
  z = lax.exp((lp35 + z - lax.log1p(z / (a35 + 1.0) * (
      1.0 + z / (a35 + 2.0) * (1.0 + z / (a35 + 3.0))))) / a35)
  z = where(use35, z, w)
  use_s = common & (z > 0.01 * (a_hi + 1.0)) & (z <= 0.7 * (a_hi + 1.0))
  a_s, lp_s, z_s = where(use_s, a_hi, 2.0), where(use_s, log_pg, 0.0), where(use_s, z, 0.0)
  ls = lax.log(_eq34(a_s, z_s, use_s))
  z_mid = lax.exp((lp_s + z_s - ls) / a_s)
  return where(use_s, z_mid * (1.0 - (a_s * lax.log(z_mid) - z_mid - lp_s + ls)
                               / (a_s - z_mid)), z)


def _initial_guess(a, p, q, complement, lgamma_a, lgamma1p_a):
  """Each approximation is evaluated everywhere, on clamped or placeholder inputs outside
  its part of the domain (no NaN or overflow in the unselected ones)."""
  log_p = lax.log1p(-q) if complement else lax.log(p)
  log_q = lax.log(q) if complement else lax.log1p(-p)
  is_large_a = a > 1e5
  log_b = log_q + where(is_large_a, 0.0, lgamma_a)   # log(q Gamma(a))
  x_small_a = _guess_small_a(a, log_b, log_p, log_q, q, lgamma1p_a)
  a_hi = where(a < 1.0, 1.0, a)
  w = _cornish_fisher(a_hi, _eq32(p, q))
  a_hi = lax.min(a_hi, _c(a_hi, 1e5))
  log_pg = log_p + where((a < 1.0) | is_large_a, 0.0, lgamma1p_a)
  x_large_p = _guess_large_p(a, a_hi, w, log_b, p, is_large_a)
  x_small_p = _guess_small_p(a, a_hi, w, log_pg, p, is_large_a)
  x = where(a < 1.0, x_small_a, where(p <= 0.5, x_small_p, x_large_p))
  return where(a == 1.0, -log_q, x)


def _lower_and_upper(a, x):
  """(gammainc, gammaincc)(a, x) for a > 0 and finite x >= 0 from one series and one
  continued fraction (lax's igamma and igammac each run both: twice the loops to compile),
  each where lax's igamma uses it."""
  x0 = x == 0.0
  log_ax, underflow = lax_special._log_ax(a, where(x0, 1.0, x))
  ax = lax.exp(log_ax)
  on = ~(x0 | underflow)
  use_fraction = (x >= 1.0) & (x > a)
  series = lax_special._igamma_series(ax, x, a, on & ~use_fraction, False)
  fraction = lax_special._igammac_fraction(ax, x, a, on & use_fraction, False)
  lower = where(x0, 0.0, where(use_fraction, 1.0 - fraction, series))
  upper = where(x0, 1.0, where(use_fraction, fraction, 1.0 - series))
  return lower, upper


def _halley(a, p, q, x0, refine, lgamma_a, lgamma1p_a):
  """Three Halley steps on gammainc(a, x) - p (p <= 0.5) or q - gammaincc(a, x)."""
  use_lower = p <= 0.5
  a_r = where(refine, a, 1.0)
  lg_r, lg1p_r = where(refine, lgamma_a, 0.0), where(refine, lgamma1p_a, 0.0)

  def step(_, x):
    positive = x > 0.0
    x_pos = where(positive, x, 1.0)
    x_pdf = lax.exp(_xlogy(a_r, x_pos) - x_pos - lg_r)   # x d/dx gammainc
    series = ~use_lower & (x < 1.1)
    # at x = 0 (the elements that use the other function, or are not refined) the loops of
    # the series and the fraction skip them
    lower, upper = _lower_and_upper(a_r, where(refine & (use_lower | ~series), x, 0.0))
    upper = where(series, _gammaincc_small_x(a_r, where(series, x_pos, 1.0), lg1p_r), upper)
    residual = where(use_lower, lower - p, q - upper)
    f_over_df = residual / where(x_pdf > 0.0, x_pdf, 1.0) * x
    d2f_over_df = (a_r - 1.0) / x_pos - 1.0
    halley = lax.is_finite(f_over_df) & lax.is_finite(d2f_over_df)
    denom = 1.0 - 0.5 * where(halley, f_over_df, 0.0) * where(halley, d2f_over_df, 0.0)
    halley = halley & (denom > 0.0)
    x_new = x - f_over_df / where(halley, denom, 1.0)
    x_new = where(x_new > 0.0, x_new, 0.5 * x)   # never past zero
    return where(positive & (x_pdf > 0.0) & lax.is_finite(x_new), x_new, x)
  return fori_loop(0, 3, step, where(refine, x0, 1.0))


@partial(jit, static_argnums=(2,))
def _gammaincinv_impl(a, y, complement: bool):
  p, q = (1.0 - y, y) if complement else (y, 1.0 - y)
  lower_edge = (q == 1.0) if complement else (p == 0.0)
  upper_edge = (q == 0.0) if complement else (p == 1.0)
  is_nan = lax.ne(a, a) | lax.ne(y, y) | (a < 0.0) | (y < 0.0) | (y > 1.0)
  edge = ~is_nan & (lower_edge | upper_edge)
  is_nan = is_nan | (~edge & ((a == 0.0) | (lax.abs(a) == np.inf)))
  safe = ~(is_nan | edge)
  a, p, q = where(safe, a, 1.0), where(safe, p, 0.5), where(safe, q, 0.5)
  a_clamped = lax.min(a, _c(a, 1e6))
  lgamma_a, lgamma1p_a = lax.lgamma(a_clamped), _lgamma1p(a_clamped)
  x0 = _initial_guess(a, p, q, complement, lgamma_a, lgamma1p_a)
  x0 = where(x0 > 0.0, x0, 0.0)   # the guess may underflow for tiny p
  # for large a the guess beats the refinement (gammainc's own cancellation; float64's
  # series needs O(sqrt(a)) terms): kept as is there, as JAX
  refine = a < (200.0 if dtypes.finfo(aval(a).dtype).bits <= 32 else 1e6)
  x = where(refine, _halley(a, p, q, x0, refine, lgamma_a, lgamma1p_a), x0)
  x = where(lower_edge, 0.0, where(upper_edge, np.inf, x))
  return where(is_nan, np.nan, x)


@partial(custom_jvp, nondiff_argnums=(2,))
def _gammaincinv(a, y, complement):
  return _gammaincinv_impl(a, y, complement)


def _grad_masks(a, x):
  interior = (x > 0.0) & (x < np.inf)
  large = a >= (1e4 if dtypes.finfo(aval(a).dtype).bits <= 32 else 1e6)
  return interior & ~large, interior & large


def _wilson_hilferty(a, y, complement, enabled):
  """(dx/dp, dx/da) of x = a c^3, c = 1 - 1/(9a) + s/(3 sqrt(a)), s the normal quantile."""
  a, y = where(enabled, a, 1.0), where(enabled, y, 0.5)
  s = -_normal_quantile(y) if complement else _normal_quantile(y)
  sqrt_a = lax.sqrt(a)
  c = 1.0 - (1.0 / 9.0) / a + s / (3.0 * sqrt_a)
  dx_dp = math.sqrt(2.0 * math.pi) * sqrt_a * c * c * lax.exp(0.5 * s * s)
  return dx_dp, c * c * (c + (1.0 / 3.0) / a - s / (2.0 * sqrt_a))


def _grad_y(a, y, x, complement):
  exact, wh = _grad_masks(a, x)
  a_e, x_e = where(exact, a, 1.0), where(exact, x, 1.0)
  dx_dy = lax.exp(x_e - _xlogy(a_e - 1.0, x_e) + lax.lgamma(a_e))
  dx_dy = where(wh, _wilson_hilferty(a, y, complement, wh)[0], dx_dy)
  at_zero = where(a > 1.0, np.inf, where(a == 1.0, 1.0, 0.0))   # the slope at x = 0
  dx_dy = where(x == 0.0, at_zero, where(x == np.inf, np.inf, dx_dy))
  return where(lax.ne(x, x), x, dx_dy)


def _grad_a(a, y, x, complement):
  exact, wh = _grad_masks(a, x)
  dx_da = lax_special.random_gamma_grad(where(exact, a, 1.0), where(exact, x, 1.0))
  dx_da = where(exact, dx_da, where(wh, _wilson_hilferty(a, y, complement, wh)[1], 0.0))
  return where(lax.ne(x, x), x, dx_da)


@_gammaincinv.defjvp
def _gammaincinv_jvp(complement, primals, tangents):
  (a, y), (a_dot, y_dot) = primals, tangents
  x = _gammaincinv(a, y, complement)
  dx_dy = _grad_y(a, y, x, complement)
  x_dot = (-dx_dy if complement else dx_dy) * y_dot + _grad_a(a, y, x, complement) * a_dot
  return x, x_dot


def _dispatch(name, a, y, complement):
  a, y = util.promote_args_inexact(name, a, y)
  if dtypes.is_complex(aval(a).dtype):
    raise ValueError(f"{name} does not support complex-valued inputs.")
  a, y = broadcast_arrays(a, y)
  dt = aval(a).dtype
  if dtypes.finfo(dt).bits < 32:   # 16-bit floats: in float32, as JAX
    up = np.float32
    return _gammaincinv(a.astype(up), y.astype(up), complement).astype(dt)
  return _gammaincinv(a, y, complement)


def gammaincinv(a, y):
  """The inverse of the regularized lower incomplete gamma function in x."""
  return _dispatch("gammaincinv", a, y, False)


def gammainccinv(a, y):
  """The inverse of the regularized upper incomplete gamma function in x."""
  return _dispatch("gammainccinv", a, y, True)

"""jax.scipy.special.hyp1f1 and hyp2f1, as JAX 0.12 computes them (after Pearson, Olver &
Porter, arXiv:1407.7786).

hyp1f1, Kummer's 1F1(a; b; x): per element the power series for |x| < 100, else the
large-|x| asymptotic series, each summed until a term is below eps of the sum (at most 250
terms); 1 at a == 0, exp(x) at a == b, inf at b == 0. Its a and b derivatives sum the
series' terms times the harmonic sums of the Pochhammer factors; in x, a/b 1F1(a+1; b+1; x).

hyp2f1, Gauss's 2F1(a, b; c; x) for x <= 1, follows JAX's case analysis: the power series,
the terminating sum for a non-positive integer a or b, Euler's transformation for
c - a - b <= -1, Gauss's sum at x = 1, and near x = 1 with an integer c - a - b Abramowitz
& Stegun's 15.3.10-12 digamma expansion."""
from __future__ import annotations

from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.reductions import aval
from ember._src.library.numpy.vectorize import vectorize
from ember._src.primitives.control.conditionals import cond
from ember._src.primitives.control.loops import fori_loop, while_loop
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["hyp1f1", "hyp2f1"]

_MAX_TERMS = 250


def _converging(eps):
  def keep_going(state):
    total, k, term = state[:3]
    return (k < _MAX_TERMS) & (lax.abs(term) / lax.abs(total) > eps)
  return keep_going


def _series(a, b, x):
  """sum_k (a)_k / (b)_k x^k / k!"""
  def step(state):
    total, k, term = state
    return total + term, k + 1, term * (a + k) / (b + k) * x / (k + 1)
  eps = dtypes.finfo(aval(x).dtype).eps
  one = lax.full_like(x, 1.0)
  return while_loop(_converging(eps), step, (one, one, a / b * x))[0]


def _gamma(x):
  sign = lax.select(lax.lt(x, lax.full_like(x, 0.0)) & lax.ne(
      lax.rem(lax.floor(x), lax.full_like(x, 2.0)), lax.full_like(x, 0.0)),
      lax.full_like(x, -1.0), lax.full_like(x, 1.0))
  return sign * lax.exp(lax.lgamma(x))


def _asymptotic(a, b, x):
  """Gamma(b)/Gamma(a) e^x x^(a-b) sum_k (b-a)_k (1-a)_k / k! x^-k"""
  def step(state):
    total, k, term = state
    return total + term, k + 1, term * (b - a + k) * (1 - a + k) / (k + 1) / x
  eps = dtypes.finfo(aval(x).dtype).eps
  one = lax.full_like(x, 1.0)
  total = while_loop(_converging(eps), step, (one, one, (b - a) * (1 - a) / x))[0]
  return _gamma(b) / _gamma(a) * lax.exp(x) * x ** (a - b) * total


@jit
@vectorize
def _hyp1f1(a, b, x):
  out = cond(lax.abs(x) < 100, _series, _asymptotic, a, b, x)
  which = ((a == 0) * 1 + ((a == b) & (a != 0)) * 2 + ((b == 0) & (a != 0)) * 3)
  return lax.select_n(which.astype(np.int32), out, lax.full_like(x, 1.0), lax.exp(x),
                      lax.full_like(x, np.inf))


@partial(jit, static_argnums=(3,))
@partial(vectorize, excluded=(3,))
def _param_derivative(a, b, x, which: int):
  """d/dp of the series in p = a (which 0) or b (which 1, to be negated)."""
  p = a if which == 0 else b

  def step(state):
    total, k, term, h = state
    return total + term * h, k + 1, term * (a + k) / (b + k) * x / (k + 1), h + 1 / (p + k)
  eps = dtypes.finfo(aval(x).dtype).eps
  init = (lax.full_like(x, 0.0), lax.full_like(x, 1.0), a / b * x, 1 / p)
  return while_loop(_converging(eps), step, init)[0]


@custom_jvp
def _hyp1f1_diff(a, b, x):
  return _hyp1f1(a, b, x)


_hyp1f1_diff.defjvps(
    lambda g, ans, a, b, x: _param_derivative(a, b, x, 0) * g,
    lambda g, ans, a, b, x: -_param_derivative(a, b, x, 1) * g,
    lambda g, ans, a, b, x: a / b * _hyp1f1_diff(a + 1, b + 1, x) * g)


def hyp1f1(a, b, x):
  """Kummer's confluent hypergeometric function 1F1(a; b; x) (real arguments)."""
  a, b, x = util.promote_args_inexact("hyp1f1", a, b, x)
  if dtypes.is_complex(aval(x).dtype):
    raise ValueError("hyp1f1 does not support complex-valued inputs.")
  return _hyp1f1_diff(a, b, x)


# --- hyp2f1 -------------------------------------------------------------------------------

def _round(v):
  return lax.round(v, lax.RoundingMethod.TO_NEAREST_EVEN)


def _gammasgn(x):
  neg = x < 0
  odd = lax.rem(lax.floor(x), lax.full_like(x, 2.0)) != 0
  sign = lax.select(neg & odd, lax.full_like(x, -1.0), lax.full_like(x, 1.0))
  return lax.select((neg & (x == lax.floor(x))) | (x != x), lax.full_like(x, np.nan), sign)


def _hyp2f1_terminal(a, b, c, x):
  """The finite sum when a (or b) is a non-positive integer: use the one of larger size
  that is still below |c| when c is a non-positive integer."""
  eps = dtypes.finfo(aval(x).dtype).eps * 50
  swap = (b < a) & (lax.abs(b - _round(b)) < eps) & ~(
      (lax.rem(c, lax.full_like(c, 1.0)) == 0) & (c <= 0) & (c > b))
  a, b = lax.select(swap, b, a), lax.select(swap, a, b)
  a = lax.abs(a)

  def body(i, state):
    total, term = state
    term = term * -(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x
    return total + term, term
  one = lax.full_like(x, 1.0)
  return fori_loop(lax.full_like(a, 1.0), a + 1, body, (one, one))[0]


def _hyp2f1_series(a, b, c, x):
  rtol = dtypes.finfo(aval(x).dtype).eps

  def keep_going(state):
    total, k, term = state
    return (k < _MAX_TERMS) & (lax.abs(term) > rtol * lax.abs(total))

  def step(state):
    total, k, term = state
    return total + term, k + 1, term * (a + k - 1) * (b + k - 1) / (c + k - 1) / k * x
  zero, one = lax.full_like(x, 0.0), lax.full_like(x, 1.0)
  return while_loop(keep_going, step, (zero, one, one))[0]


def _digamma_and_next(z):
  shift = (z > -0.5) & (z < 1.0)
  psi = lax.digamma(lax.select(shift, z + 1.0, z))
  inv_z = 1.0 / lax.select(z == 0, lax.full_like(z, 1.0), z)
  return lax.select(shift, psi - inv_z, psi), lax.select(shift, psi, psi + inv_z)


def _hyp2f1_digamma_transform(a, b, c, x, log_gamma_ratio, sgn_gamma_ratio):
  """Abramowitz & Stegun 15.3.10-12: the expansion around x = 1 when c - a - b is
  (nearly) an integer, with the digamma sums and the finite sum for its integer part."""
  rtol = dtypes.finfo(aval(x).dtype).eps
  d = c - a - b
  s = 1 - x
  rd = _round(d)
  zero, one = lax.full_like(x, 0.0), lax.full_like(x, 1.0)
  pos = rd >= 0
  e = lax.select(pos, d, -d)
  d1, d2 = lax.select(pos, d, zero), lax.select(pos, zero, d)
  ard = lax.select(pos, rd, -rd).astype(np.int32)
  s_safe = lax.select(s > 0, s, one)
  ax = lax.log(s_safe)
  psi_1 = lax.full_like(x, -np.euler_gamma)

  def finite_sum(i, state):
    t, p, y1, log_poch, sgn_poch, log_fact_e, harm_e = state
    y1 = y1 + p
    ab_t = (a + d2 + t) * (b + d2 + t)
    log_poch = log_poch + lax.log(lax.select(ab_t == 0, one, lax.abs(ab_t)))
    sgn_poch = lax.select(ab_t == 0, zero, lax.select(ab_t < 0, -sgn_poch, sgn_poch))
    et = e - t
    log_fact_e, harm_e = log_fact_e + lax.log(et), harm_e + 1.0 / et
    t_next = t + 1.0
    more = i + 1 < ard
    p = lax.select(more, p * s * ab_t / lax.select(more, (1.0 - e + t) * t_next, one), p)
    return t_next, p, y1, log_poch, sgn_poch, log_fact_e, harm_e
  _, _, y1, log_poch, sgn_poch, log_fact_e, harm_e = fori_loop(
      0, ard, finite_sum, (zero, one, zero, zero, one, zero, zero))

  de = e - lax.abs(rd)
  psi_a1, psi_a1_next = _digamma_and_next(a + d1)
  psi_b1, psi_b1_next = _digamma_and_next(b + d1)
  psi_1pe = psi_1 + (np.pi ** 2 / 6) * de + harm_e
  y = psi_1 + psi_1pe - psi_a1 - psi_b1 - ax
  p = (a + d1) * (b + d1) * s / (e + 1.0)

  def keep_going(state):
    t, _, q, y = state[:4]
    return (t < _MAX_TERMS) & (lax.abs(q) >= rtol * lax.abs(y))

  def step(state):
    t, p, _, y, psi_t, psi_et, psi_at, psi_bt = state
    q = p * (psi_t + psi_et - psi_at - psi_bt - ax)
    at, bt = a + d1 + t, b + d1 + t
    t1 = t + 1.0
    t1e = t1 + e
    p = p * (s * at / t1) * (bt / t1e)
    return (t1, p, q, y + q, psi_t + 1.0 / t1, psi_et + 1.0 / t1e,
            psi_at + 1.0 / lax.select(at == 0, one, at),
            psi_bt + 1.0 / lax.select(bt == 0, one, bt))
  init = (one, p, y, y, psi_1 + 1.0, psi_1pe + 1.0 / (1.0 + e), psi_a1_next, psi_b1_next)
  y = while_loop(keep_going, step, init)[3]

  log_ge1 = log_fact_e + psi_1 * de
  log_poch_corr = (psi_a1 + psi_b1) * (d - rd)
  log_y_scale = log_gamma_ratio - log_ge1 + lax.select(rd < 0, log_poch - log_poch_corr, zero)
  sgn_y = lax.select(rd < 0, sgn_gamma_ratio * sgn_poch, sgn_gamma_ratio)
  sgn_y = lax.select((ard & 1) != 0, -sgn_y, sgn_y)
  y = y * sgn_y * lax.exp(log_y_scale)
  log_ge = log_ge1 - lax.log(lax.select(rd == 0, one, e))
  log_y1_scale = log_gamma_ratio + log_ge - lax.select(rd > 0, log_poch + log_poch_corr, zero)
  y1 = y1 * lax.select(rd > 0, sgn_gamma_ratio * sgn_poch, sgn_gamma_ratio) * lax.exp(
      log_y1_scale)
  q = s_safe ** rd
  return lax.select(rd == 0, y, lax.select(rd > 0, y * q + y1, y + y1 * q))


def _hyp2f1_terminal_or_series(a, b, c, x, log_gamma_ratio, sgn_gamma_ratio):
  eps = dtypes.finfo(aval(x).dtype).eps * 50
  d = c - a - b
  neg_int = (((a <= 0) & (lax.abs(a - _round(a)) < eps))
             | ((b <= 0) & (lax.abs(b - _round(b)) < eps)))
  which = lax.select((x > 0.9) & ~neg_int,
                     lax.select(lax.abs(d - _round(d)) >= eps, np.int32(0), np.int32(1)),
                     lax.select(neg_int, np.int32(2), np.int32(0)))
  return lax.select_n(which, _hyp2f1_series(a, b, c, x),
                      _hyp2f1_digamma_transform(a, b, c, x, log_gamma_ratio, sgn_gamma_ratio),
                      _hyp2f1_terminal(a, b, c, x))


@jit
@vectorize
def _hyp2f1(a, b, c, x):
  eps = dtypes.finfo(aval(x).dtype).eps * 50
  d, s, ca, cb = c - a - b, 1 - x, c - a, c - b
  i32 = lambda v: np.int32(v)
  case = lax.select(
      (x == 0) | (((a == 0) | (b == 0)) & (c != 0)), i32(0), lax.select(
          (c == 0) | ((c < 0) & (lax.rem(c, lax.full_like(c, 1.0)) == 0)), i32(1), lax.select(
              (d <= -1) & ~((lax.abs(d - _round(d)) >= eps) & (s < 0)), i32(2), lax.select(
                  (d <= 0) & (x == 1), i32(1), lax.select(
                      (x < 1) & (b == c), i32(3), lax.select(
                          (x < 1) & (a == c), i32(4), lax.select(
                              x > 1, i32(1), lax.select(x == 1, i32(5), i32(6)))))))))
  euler, gauss = case == 2, case == 5   # Euler's transformation; Gauss's sum at x = 1
  a_eff, b_eff = lax.select(euler, ca, a), lax.select(euler, cb, b)
  ga, gb = lax.select(euler | gauss, ca, a), lax.select(euler | gauss, cb, b)
  log_gamma_ratio = lax.lgamma(c) - lax.lgamma(ga) - lax.lgamma(gb)
  sgn_gamma_ratio = _gammasgn(c) * _gammasgn(ga) * _gammasgn(gb)
  series = _hyp2f1_terminal_or_series(a_eff, b_eff, c, x, log_gamma_ratio, sgn_gamma_ratio)
  gauss_value = sgn_gamma_ratio * _gammasgn(d) * lax.exp(log_gamma_ratio + lax.lgamma(d))
  return lax.select_n(case, lax.full_like(x, 1.0), lax.full_like(x, np.inf), s ** d * series,
                      s ** (-a), s ** (-b), gauss_value, series)


@partial(jit, static_argnums=(4,))
@partial(vectorize, excluded=(4,))
def _hyp2f1_param_derivative(a, b, c, x, which: int):
  p = (a, b, c)[which]

  def step(state):
    total, k, term, h = state
    return (total + term * h, k + 1, term * (a + k) * (b + k) / (c + k) / (k + 1) * x,
            h + 1 / (p + k))
  eps = dtypes.finfo(aval(x).dtype).eps
  init = (lax.full_like(x, 0.0), lax.full_like(x, 1.0), a * b / c * x, 1 / p)
  return while_loop(_converging(eps), step, init)[0]


@custom_jvp
def _hyp2f1_diff(a, b, c, x):
  return _hyp2f1(a, b, c, x)


_hyp2f1_diff.defjvps(
    lambda g, ans, a, b, c, x: _hyp2f1_param_derivative(a, b, c, x, 0) * g,
    lambda g, ans, a, b, c, x: _hyp2f1_param_derivative(a, b, c, x, 1) * g,
    lambda g, ans, a, b, c, x: -_hyp2f1_param_derivative(a, b, c, x, 2) * g,
    lambda g, ans, a, b, c, x: a * b / c * _hyp2f1_diff(a + 1, b + 1, c + 1, x) * g)


def hyp2f1(a, b, c, x):
  """Gauss's hypergeometric function 2F1(a, b; c; x) for real arguments and x <= 1 (inf
  beyond, as JAX)."""
  a, b, c, x = util.promote_args_inexact("hyp2f1", a, b, c, x)
  return _hyp2f1_diff(a, b, c, x)

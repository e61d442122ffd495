"""jax.scipy.special's erfcx (real arguments) and exponential integrals exp1, expi, expn:
ember's own algorithms (exact-split exp(x^2) erfc(x), power series, continued fractions
evaluated backwards with a fixed number of terms, Ei's asymptotic series) written as lax
ops, with JAX's edge values and derivatives (custom JVPs: the exact derivative formulas,
not the slope of an approximation). 16-bit floats are computed in float32."""
from __future__ import annotations

import math

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.numpy.reductions import aval
from ember._src.library.numpy.ufuncs import _const  # JAX's lax._const: weak for weak scalars
from ember._src.primitives.elementwise import convert_element_type
from ember._src.transforms.ad import jvp
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["erfcx", "exp1", "expi", "expn"]


def _real_only(name, x):
  if dtypes.is_complex(aval(x).dtype):
    raise ValueError(f"{name} does not support complex-valued inputs.")


# --- erfcx ------------------------------------------------------------------------------------

_ERFCX_SPLIT = 5.0      # below: exp(x^2) erfc(x); above: Laplace's continued fraction
_ERFCX_TERMS = 24       # enough for float64 at x >= 5 (checked against SciPy)


def _erfcx_product(x):
  """exp(x^2) erfc(x) with x^2 = hi^2 + (x - hi)(x + hi), hi = x rounded to 1/64: hi^2 is
  exact (<= 22 bits up to |x| = 27), so exp's argument carries no rounding of x^2."""
  hi = lax.div(lax.floor(lax.mul(x, _const(x, 64.0))), _const(x, 64.0))
  lo = lax.mul(lax.sub(x, hi), lax.add(x, hi))
  return lax.mul(lax.mul(lax.exp(lax.mul(hi, hi)), lax.exp(lo)), lax.erfc(x))


def _erfcx_fraction(x):
  """1 / (sqrt(pi) (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...))))), evaluated backwards."""
  t = x
  for n in range(_ERFCX_TERMS, 0, -1):
    t = lax.add(x, lax.div(_const(x, n / 2), t))
  return lax.div(_const(x, 1 / math.sqrt(math.pi)), t)


def _erfcx_branches(x):
  """(x < split, x for the product branch, x for the fraction branch): each branch sees
  only arguments it handles, so neither produces NaN or overflow where it is not chosen."""
  small = lax.lt(x, _const(x, _ERFCX_SPLIT))
  split = lax.full_like(x, _ERFCX_SPLIT)
  # exp(x^2) overflows below -27 in every dtype: clamp there so -inf gives inf, not NaN
  xs = lax.max(lax.select(small, x, split), _const(x, -30.0))
  return small, xs, lax.select(small, split, x)


@custom_jvp
def _erfcx(x):
  small, xs, xl = _erfcx_branches(x)
  return lax.select(small, _erfcx_product(xs), _erfcx_fraction(xl))


def _erfcx_slope(x, ans):
  """erfcx' = 2 x erfcx - 2 / sqrt(pi) below the split (its cancellation costs at most
  2 x^2 = 50 ulps there); the derivative of the continued fraction above it."""
  small, xs, xl = _erfcx_branches(x)
  formula = lax.sub(lax.mul(lax.mul(_const(x, 2.0), xs), lax.select(small, ans, _erfcx(xs))),
                    _const(x, 2 / math.sqrt(math.pi)))
  _, fraction_slope = jvp(_erfcx_fraction, (xl,), (lax.full_like(xl, 1),))
  return lax.select(small, formula, fraction_slope)


_erfcx.defjvps(lambda g, ans, x: lax.mul(g, _erfcx_slope(x, ans)))


def erfcx(x):
  """The scaled complementary error function exp(x^2) erfc(x), accurate where erfc
  underflows (real arguments; 16-bit floats are computed in float32)."""
  x, = util.promote_args_inexact("erfcx", x)
  dt = aval(x).dtype
  if dtypes.is_complex(dt):
    raise NotImplementedError("erfcx of complex arguments (the Faddeeva function) is not "
                              "implemented in ember.")
  if dtypes.finfo(dt).bits < 32:
    return convert_element_type(_erfcx(convert_element_type(x, np.float32)), dt)
  return _erfcx(x)


# --- exponential integrals ---------------------------------------------------------------------

_EULER_GAMMA = 0.5772156649015329
_E1_SPLIT = 1.5         # E1: the series below (it cancels ~20 ulps at 1.5), the fraction above
_E1_FRACTION_TERMS = 80     # float64-accurate at x >= 1.5 (checked against SciPy)
_EI_SPLIT = 40.0        # Ei(x > 0): the series below, the asymptotic series above
_EI_SERIES_TERMS = 150      # x^k / (k k!) is below eps * Ei(x) by then for x <= 40
_EI_ASYMPTOTIC_TERMS = 40   # the smallest term k! / x^k sits near k = x >= 40: ~1e-17


def _ein_series(x, terms):
  """sum_{k>=1} x^k / (k k!) (Ei(x) - gamma - log|x|; for -x, -(E1(x) + gamma + log x))."""
  term, total = lax.full_like(x, 1), lax.full_like(x, 0)
  for k in range(1, terms + 1):
    term = lax.mul(term, lax.div(x, _const(x, k)))
    total = lax.add(total, lax.div(term, _const(x, k)))
  return total


def _e1_fraction(x):
  """E1(x) = e^-x / (x + 1 - 1 / (x + 3 - 4 / (x + 5 - ...))), evaluated backwards."""
  n_max = _E1_FRACTION_TERMS
  t = lax.add(x, _const(x, 2 * n_max + 1))
  for n in range(n_max, 0, -1):
    t = lax.sub(lax.add(x, _const(x, 2 * n - 1)), lax.div(_const(x, n * n), t))
  return lax.div(lax.exp(lax.neg(x)), t)


def _exp1_value(x):
  small = lax.lt(x, _const(x, _E1_SPLIT))
  use_series = lax.bitwise_and(small, lax.gt(x, _const(x, 0)))   # log(0), log(-x) aside
  xs = lax.select(use_series, x, lax.full_like(x, 1))
  xl = lax.select(small, lax.full_like(x, _E1_SPLIT), x)
  series = lax.neg(lax.add(lax.add(_const(x, _EULER_GAMMA), lax.log(xs)),
                           _ein_series(lax.neg(xs), 40)))
  out = lax.select(small, series, _e1_fraction(xl))
  out = lax.select(lax.eq(x, _const(x, 0)), lax.full_like(x, np.inf), out)
  return lax.select(lax.lt(x, _const(x, 0)), lax.full_like(x, np.nan), out)


def _ei_positive(x):
  """Ei(x) for x > 0: gamma + log x + the series up to 40; e^x / x sum k! / x^k beyond."""
  small = lax.le(x, _const(x, _EI_SPLIT))
  xs = lax.select(small, x, lax.full_like(x, 1))
  xl = lax.select(small, lax.full_like(x, 2 * _EI_SPLIT), x)
  series = lax.add(lax.add(_const(x, _EULER_GAMMA), lax.log(xs)),
                   _ein_series(xs, _EI_SERIES_TERMS))
  term, total, inv = lax.full_like(x, 1), lax.full_like(x, 1), lax.reciprocal(xl)
  for k in range(1, _EI_ASYMPTOTIC_TERMS + 1):
    term = lax.mul(term, lax.mul(inv, _const(x, k)))
    total = lax.add(total, term)
  asymptotic = lax.mul(lax.exp(lax.sub(xl, lax.log(xl))), total)   # e^x / x, overflow-late
  return lax.select(small, series, asymptotic)


def _expi_value(x):
  positive = lax.gt(x, _const(x, 0))
  xp = lax.select(positive, x, lax.full_like(x, 1))
  xn = lax.select(positive, lax.full_like(x, 1), lax.neg(x))
  out = lax.select(positive, _ei_positive(xp), lax.neg(_exp1_value(xn)))
  return lax.select(lax.eq(x, _const(x, np.inf)), x, out)


@custom_jvp
def _exp1(x):
  return _exp1_value(x)


@custom_jvp
def _expi(x):
  return _expi_value(x)


# E1'(x) = -e^-x / x, Ei'(x) = e^x / x
_exp1.defjvps(lambda g, ans, x: lax.mul(g, lax.neg(lax.div(lax.exp(lax.neg(x)), x))))
_expi.defjvps(lambda g, ans, x: lax.mul(g, lax.div(lax.exp(x), x)))


def _real_float_unary(name, fn, doc):
  def wrapped(x):
    x, = util.promote_args_inexact(name, x)
    _real_only(name, x)
    dt = aval(x).dtype
    if dtypes.finfo(dt).bits < 32:   # the series' constants need float32
      return convert_element_type(fn(convert_element_type(x, np.float32)), dt)
    return fn(x)
  wrapped.__name__ = wrapped.__qualname__ = name
  wrapped.__doc__ = doc
  return wrapped


exp1 = _real_float_unary("exp1", _exp1, "The exponential integral E1(x) = int_x^inf e^-t / t "
                         "dt (NaN for x < 0, inf at 0).")
expi = _real_float_unary("expi", _expi, "The exponential integral Ei(x) = -E1(-x) (the "
                         "principal value for x > 0; -inf at 0).")


_EN_SERIES_TERMS = 40   # E_n(x <= 1.5): (-x)^k / k! is < 1e-22 by k = 40


def _expn_series(n, x):
  """E_n(x) = (-x)^(n-1) / (n-1)! (psi(n) - log x) - sum_{k != n-1} (-x)^k / ((k-n+1) k!)
  (n >= 1, 0 < x <= 1.5)."""
  total, power = lax.full_like(x, 0), lax.full_like(x, 1)   # power: (-x)^k / k!
  for k in range(_EN_SERIES_TERMS + 1):
    if k:
      power = lax.mul(power, lax.div(lax.neg(x), _const(x, k)))
    denom = lax.sub(_const(n, k + 1), n)
    skip = lax.eq(denom, _const(n, 0))
    term = lax.div(power, lax.select(skip, lax.full_like(n, 1), denom))
    total = lax.sub(total, lax.select(skip, lax.full_like(x, 0), term))
  m = lax.sub(n, _const(n, 1))
  sign = lax.select(lax.eq(lax.rem(m, _const(m, 2)), _const(m, 0)), lax.full_like(x, 1),
                    lax.full_like(x, -1))
  special = lax.mul(sign, lax.exp(lax.sub(lax.mul(m, lax.log(x)), lax.lgamma(n))))
  return lax.add(total, lax.mul(special, lax.sub(lax.digamma(n), lax.log(x))))


def _expn_fraction(n, x):
  """E_n(x) = e^-x / (x + n - 1 n / (x + n + 2 - 2 (n+1) / (x + n + 4 - ...))) (x > 1.5)."""
  terms = _E1_FRACTION_TERMS
  xn = lax.add(x, n)
  t = lax.add(xn, _const(x, 2 * terms))
  for k in range(terms, 0, -1):
    a_k = lax.mul(_const(n, k), lax.add(n, _const(n, k - 1)))
    t = lax.sub(lax.add(xn, _const(x, 2 * (k - 1))), lax.div(a_k, t))
  return lax.div(lax.exp(lax.neg(x)), t)


def _expn_value(n, x):
  zero, one = _const(x, 0), _const(x, 1)
  max_log = _const(x, math.log(dtypes.finfo(aval(x).dtype).max))
  invalid = _any_of(lax.lt(n, zero), lax.lt(x, zero), lax.ne(n, n), lax.ne(x, x),
                    lax.eq(n, _const(n, np.inf)))
  positive = lax.bitwise_and(lax.gt(x, zero), lax.le(x, max_log))
  x_safe = lax.select(positive, x, lax.full_like(x, 1))
  n_safe = lax.select(lax.bitwise_or(invalid, lax.lt(n, one)), lax.full_like(n, 1), n)
  small = lax.le(x_safe, _const(x, _E1_SPLIT))
  xs = lax.select(small, x_safe, lax.full_like(x, 1))
  xl = lax.select(small, lax.full_like(x, 2), x_safe)
  out = lax.select(small, _expn_series(n_safe, xs), _expn_fraction(n_safe, xl))
  out = lax.select(lax.eq(n, zero), lax.div(lax.exp(lax.neg(x_safe)), x_safe), out)
  out = lax.select(lax.gt(x, max_log), lax.full_like(x, 0), out)
  at_zero = lax.select(lax.lt(n, _const(n, 2)), lax.full_like(x, np.inf),
                       lax.reciprocal(lax.sub(n, one)))
  out = lax.select(lax.eq(x, zero), at_zero, out)
  return lax.select(invalid, lax.full_like(x, np.nan), out)


def _any_of(*preds):
  out = preds[0]
  for p in preds[1:]:
    out = lax.bitwise_or(out, p)
  return out


@custom_jvp
def _expn(n, x):
  return _expn_value(lax.floor(n), x)


def _expn_dx(g, ans, n, x):
  """dE_n/dx = -E_{n-1}(x); for n = 0, d(e^-x / x) = -(x + 1) e^-x / x^2."""
  n = lax.floor(n)
  zero, one = _const(x, 0), _const(x, 1)
  big = lax.gt(x, _const(x, math.log(dtypes.finfo(aval(x).dtype).max)))
  x_safe = lax.select(lax.bitwise_and(lax.gt(x, zero), lax.bitwise_not(big)), x,
                      lax.full_like(x, 1))
  d0 = lax.neg(lax.div(lax.mul(lax.add(x_safe, one), lax.exp(lax.neg(x_safe))),
                       lax.mul(x_safe, x_safe)))
  d0 = lax.select(big, lax.full_like(x, 0), d0)
  d0 = lax.select(lax.eq(x, zero), lax.full_like(x, -np.inf), d0)
  previous = lax.neg(_expn(lax.max(lax.sub(n, one), zero), x))
  out = lax.select(lax.eq(n, zero), d0, previous)
  return lax.mul(g, lax.select(lax.ne(ans, ans), lax.full_like(x, np.nan), out))


_expn.defjvps(None, _expn_dx)   # n is an integer order: no derivative (JAX: zero)


def expn(n, x):
  """The generalized exponential integral E_n(x) = int_1^inf e^(-x t) / t^n dt, n >= 0 (a
  non-integer n is truncated, as JAX does); NaN for n < 0 or x < 0."""
  n, x = util.promote_args_inexact("expn", n, x)
  _real_only("expn", x)
  shape = util.broadcast_shapes(aval(n).shape, aval(x).shape)   # elementwise selects below
  n, x = util.broadcast_to_shape(n, shape), util.broadcast_to_shape(x, shape)
  dt = aval(x).dtype
  if dtypes.finfo(dt).bits < 32:   # the series' constants need float32
    up = lambda v: convert_element_type(v, np.float32)
    return convert_element_type(_expn(up(n), up(x)), dt)
  return _expn(n, x)

"""jax.scipy.special.hyp1f1, Kummer's confluent hypergeometric function 1F1(a; b; x), as JAX
0.12 computes it (after Pearson, Olver & Porter, arXiv:1407.7786): per element, the power
series for |x| < 100, else the large-|x| asymptotic series, each summed until a term is
below eps of the sum (at most 250 terms); 1 at a == 0, exp(x) at a == b, inf at b == 0. The
derivatives in a and b sum the series' terms times the harmonic sums of the Pochhammer
factors; in x, a/b 1F1(a+1; b+1; x)."""
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
from ember._src.primitives.control.loops import while_loop
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["hyp1f1"]

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

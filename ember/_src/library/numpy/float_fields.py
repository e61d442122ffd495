"""ember.numpy's frexp and ldexp: they work on the bit pattern of the float (its sign, exponent
and mantissa fields), as JAX's (subnormal inputs and results flush to 0), and differentiate
as JAX's: d ldexp(x, n) = dx * 2**n, d frexp(x)'s mantissa = dx * 2**-exponent.
"""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy.ufuncs import _const, _dtype, _ensure, _full_like, _is, _shape
from ember._src.library.numpy.util import (broadcast_shapes, broadcast_to_shape,
                                           promote_dtypes_inexact)
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["frexp", "ldexp"]


def _float_bits(x):
  info = dtypes.finfo(_dtype(x))
  ut = np.dtype(f"uint{info.bits}")
  u = lax.bitcast_convert_type(x, ut)
  c = lambda v: np.array(v, ut)[()]
  nexp, nmant = int(info.nexp), int(info.nmant)
  return info, u, c, nexp, nmant


def _flush_subnormals(x):
  info, u, c, nexp, nmant = _float_bits(x)
  exp_mask = c(((1 << nexp) - 1) << nmant)
  sign_mask = c(1 << (info.bits - 1))
  is_zero_or_sub = lax.eq(lax.bitwise_and(u, exp_mask), c(0))
  return lax.bitcast_convert_type(
      lax.select(is_zero_or_sub, lax.bitwise_and(u, sign_mask), u), _dtype(x))


def _exponent_fields(x):
  info, u, c, nexp, nmant = _float_bits(_flush_subnormals(x))
  exp_mask = c((1 << nexp) - 1)
  sign = lax.bitwise_and(u, c(1 << (info.bits - 1)))
  exp = lax.bitwise_and(lax.shift_right_logical(u, c(nmant)), exp_mask)
  mant = lax.bitwise_and(u, c((1 << nmant) - 1))
  return (info, u, c, nmant, exp_mask, sign, exp, mant,
          lax.eq(exp, c(0)), lax.eq(exp, exp_mask))


def frexp(x, /):
  """(mantissa, exponent) with x = mantissa * 2**exponent, 0.5 <= |mantissa| < 1."""
  x, = _ensure("frexp", x)
  x, = promote_dtypes_inexact(x)
  if _is(x, np.complexfloating):
    raise TypeError("frexp does not support complex-valued inputs")
  return _frexp(lax.convert_element_type(x, _dtype(x), weak_type=False))


@custom_jvp
def _frexp(x):
  info, u, c, nmant, exp_mask, sign, exp, mant, is_zero_or_sub, is_inf_or_nan = \
      _exponent_fields(x)
  bias = int(info.maxexp) - 1
  m_norm_bits = lax.bitwise_or(lax.bitwise_or(sign, c((bias - 1) << nmant)), mant)
  m_bits = lax.select(is_inf_or_nan, u, lax.select(is_zero_or_sub, sign, m_norm_bits))
  e = lax.select(lax.bitwise_or(is_inf_or_nan, is_zero_or_sub),
                 _full_like(u, 0, dtype=np.int32),
                 lax.sub(lax.convert_element_type(exp, np.int32), np.int32(bias - 1)))
  return lax.bitcast_convert_type(m_bits, _dtype(x)), e


def ldexp(x1, x2, /):
  """x1 * 2**x2 for an integer x2, exactly (by adding to the exponent field)."""
  x1, x2 = _ensure("ldexp", x1, x2)
  if _is(x1, np.complexfloating) or _is(x2, np.inexact):
    raise ValueError(f"ldexp not supported for input types {(_dtype(x1), _dtype(x2))}")
  x1, = promote_dtypes_inexact(x1)
  if _is(x2, np.bool_):
    x2 = lax.convert_element_type(x2, np.int32)
  shape = broadcast_shapes(_shape(x1), _shape(x2))
  x1 = lax.convert_element_type(broadcast_to_shape(x1, shape), _dtype(x1), weak_type=False)
  n = lax.convert_element_type(broadcast_to_shape(x2, shape), _dtype(x2), weak_type=False)
  return _ldexp(x1, n)


@custom_jvp
def _ldexp(x1, n):
  info, u, c, nmant, exp_mask, sign, exp, mant, is_zero_or_sub, is_inf_or_nan = \
      _exponent_fields(x1)
  max_shift = 1 << (int(info.nexp) + 1)
  signed = _is(n, np.signedinteger)
  if dtypes.iinfo(_dtype(n)).bits < 32:
    n = lax.convert_element_type(n, np.int32 if signed else np.uint32)
  n_i32 = lax.convert_element_type(
      lax.clamp(_const(n, -max_shift if signed else 0), n, _const(n, max_shift)), np.int32)
  new_exp = lax.add(lax.convert_element_type(exp, np.int32), n_i32)
  inf_bits = lax.bitwise_or(sign, lax.shift_left(exp_mask, c(nmant)))
  norm_exp_bits = lax.shift_left(lax.convert_element_type(new_exp, _dtype(u)), c(nmant))
  norm_bits = lax.bitwise_or(lax.bitwise_or(sign, norm_exp_bits), mant)
  res_bits = lax.select(lax.le(new_exp, np.int32(0)), sign,
                        lax.select(lax.ge(new_exp, np.int32((1 << int(info.nexp)) - 1)),
                                   inf_bits, norm_bits))
  out_bits = lax.select(is_inf_or_nan, u, lax.select(is_zero_or_sub, sign, res_bits))
  return lax.bitcast_convert_type(out_bits, _dtype(x1))


# the tangents scale by exact powers of two, 2**n as ldexp(1, n): linear in the tangent, so
# reverse mode transposes them (JAX's Ldexp of the tangent, up to overflow and flushing)

def _pow2(x, n):
  return _ldexp(lax.full_like(x, 1), n)


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
  mantissa, exponent = _frexp(*primals)
  return (mantissa, exponent), (lax.mul(tangents[0], _pow2(mantissa, lax.neg(exponent))),
                                np.zeros(np.shape(exponent), dtypes.float0))


@_ldexp.defjvp
def _ldexp_jvp(primals, tangents):
  x1, n = primals
  return _ldexp(x1, n), lax.mul(tangents[0], _pow2(x1, n))

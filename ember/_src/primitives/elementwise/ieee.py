"""The elementwise operations JAX 0.12 added: IEEE 754-2019's sinpi, cospi, tanpi, asinpi,
acospi, atanpi, atan2pi, exp2m1 and log2p1; one_minus_square (1 - x^2 with JAX's -2x
derivative); mulhi (the high half of an integer product); fmuladd (x * y + z, fused where
the CPU has an fma: float32/float64, narrower floats through float32) and the public form of
ember's fma; polynomial (Horner, with JAX's derivative rules); and the total-order
comparisons eq_to_p, le_to_p, lt_to_p (primitives only, as in JAX).

The NumPy impls evaluate the floating functions in float64 after an exact argument reduction
and round; the lowerings are the same algorithms in lax operations (float64 for every float
dtype, so float32 results round once), traced by `lower_fun`.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src import core
from ember._src import lower as lowering
from ember._src.base.config import enable_x64
from ember._src.transforms import ad
from ember._src.primitives import (BOOL, FLOAT, INTS, NUMERIC, bind_elementwise, dtype_kind,
                                   naryop, strict_scalars, unary)
from ember._src.primitives.elementwise.common import _binary_fn, _unary_fn, _zeros
from ember._src.primitives.elementwise.arithmetic import (  # noqa: A004 - lax.abs, lax.round
    abs, add, div, fma, fma_p, is_finite, mul, neg, round, square, sub)
from ember._src.primitives.elementwise.convert import (bitcast_convert_type,
                                                       convert_element_type)
from ember._src.primitives.elementwise.logical import (
    bitwise_and, bitwise_xor, eq, le, lt, select, shift_right_arithmetic, shift_right_logical)
from ember._src.primitives.elementwise.transcendental import (
    acos, asin, atan, atan2, cos, exp2, expm1, log1p, rsqrt, sin)
from ember._src.reference import elementwise as reference_elementwise

__all__ = ["sinpi", "cospi", "tanpi", "asinpi", "acospi", "atanpi", "atan2pi", "exp2m1",
           "log2p1", "one_minus_square", "mulhi", "fma", "fmuladd", "polynomial"]

_LN2 = math.log(2.0)


def _rounded(fn, nargs=1):
  """A NumPy impl evaluating `fn` in float64 and rounding to the operands' dtype."""
  def impl(*args, **_):
    with np.errstate(all="ignore"):
      wide = [np.asarray(a, np.float64) for a in args[:nargs]]
      return np.asarray(fn(*wide)).astype(args[0].dtype)
  impl.rounds_from_float64 = True
  return impl


# --- sinpi, cospi, tanpi: exact reduction to t in [-1/4, 1/4] and a quarter turn k -------

def _np_quarters(x):
  r = np.fmod(x, 2.0)                 # exact
  k = np.round(2.0 * r)               # r = k/2 + t
  t = r - 0.5 * k                     # exact
  return np.sin(np.pi * t), np.cos(np.pi * t), np.mod(k, 4.0)


def _np_sinpi(x):
  s, c, k = _np_quarters(x)
  v = np.select([k == 0, k == 1, k == 2], [s, c, -s], -c)
  integer = np.isfinite(x) & (x == np.trunc(x))
  return np.where(integer, np.copysign(0.0, x), v)   # sinpi(n) = +-0, as x


def _np_cospi(x):
  s, c, k = _np_quarters(x)
  v = np.select([k == 0, k == 1, k == 2], [c, -s, -c], s)
  return np.where(v == 0, 0.0, v)     # cospi(n + 1/2) = +0


def _np_tanpi(x):
  return _np_sinpi(x) / _np_cospi(x)


def _lax_quarters(x):
  r = sub(x, mul(round(mul(x, 0.5), 1), 2.0))  # x - 2 round(x/2): exact, in [-1, 1]
  k = round(mul(r, 2.0), 1)
  t = sub(r, mul(k, 0.5))
  pt = mul(t, math.pi)
  k = sub(k, mul(round(mul(k, 0.25), 1), 4.0))  # k mod 4 in {-2..2}
  return sin(pt), cos(pt), k


def _pick(k, a0, a1, a2, a3):
  """The value of quarter turn k (k in -2..2; -1 is 3, -2 is 2)."""
  kf = lambda v: _full(k, v)
  return select(eq(k, kf(0.0)), a0, select(eq(k, kf(1.0)), a1,
                select(eq(k, kf(-1.0)), a3, a2)))


def _full(x, v):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, v)


def _lax_sinpi(x):
  s, c, k = _lax_quarters(x)
  v = _pick(k, s, c, neg(s), neg(c))
  integer = bitwise_and(is_finite(x), eq(x, round(x, 1)))
  return select(integer, _signed_zero(x), v)   # sinpi(n) = +-0, as x


def _signed_zero(x):
  """+-0 carrying x's sign bit (float64)."""
  bits = bitcast_convert_type(x, np.uint64)
  return bitcast_convert_type(bitwise_and(bits, np.uint64(1 << 63)), np.float64)


def _lax_cospi(x):
  s, c, k = _lax_quarters(x)
  v = _pick(k, c, neg(s), neg(c), s)
  return select(eq(v, _full(v, 0.0)), _full(v, 0.0), v)   # cospi(n + 1/2) = +0


def _lax_tanpi(x):
  return div(_lax_sinpi(x), _lax_cospi(x))


def _in_float64(fn):
  """`fn` evaluated in float64 and rounded to the operands' dtype (a lowering)."""
  def lowered(*xs):
    dt = core.get_aval(xs[0]).dtype
    with enable_x64(True):   # float64 whatever the caller's mode (as lower/standard_ops.py)
      out = fn(*(convert_element_type(x, np.float64) for x in xs))
      return convert_element_type(out, dt)
  lowered.__name__ = fn.__name__.lstrip("_").replace("lax_", "")
  return lowered


def _float_unary(name, np_fn, lax_fn):
  p = unary(name, _rounded(np_fn), FLOAT)
  p.lower = lowering.lower_fun(_in_float64(lax_fn), multiple_results=False)
  return p, _unary_fn(p, name)


sinpi_p, sinpi = _float_unary("sinpi", _np_sinpi, _lax_sinpi)
cospi_p, cospi = _float_unary("cospi", _np_cospi, _lax_cospi)
tanpi_p, tanpi = _float_unary("tanpi", _np_tanpi, _lax_tanpi)

# --- the inverse functions over pi ---------------------------------------------------------

_INV_PI = 1.0 / math.pi
asinpi_p, asinpi = _float_unary("asinpi", lambda x: np.arcsin(x) / np.pi,
                                lambda x: mul(asin(x), _INV_PI))
acospi_p, acospi = _float_unary("acospi", lambda x: np.arccos(x) / np.pi,
                                lambda x: mul(acos(x), _INV_PI))
atanpi_p, atanpi = _float_unary("atanpi", lambda x: np.arctan(x) / np.pi,
                                lambda x: mul(atan(x), _INV_PI))

atan2pi_p = naryop("atan2pi", _rounded(lambda x, y: np.arctan2(x, y) / np.pi, 2), FLOAT)
atan2pi_p.lower = lowering.lower_fun(_in_float64(lambda x, y: mul(atan2(x, y), _INV_PI)),
                                     multiple_results=False)
atan2pi = _binary_fn(atan2pi_p, "atan2pi")

# --- exp2m1, log2p1 ---------------------------------------------------------------------------

def _np_exp2m1(x):
  # expm1(x ln 2) is accurate for |x| < 1; beyond, 2**x - 1 loses nothing and x ln 2 would
  return np.where(np.abs(x) < 1, np.expm1(x * _LN2), np.exp2(x) - 1.0)


def _lax_exp2m1(x):
  small = lt(abs(x), _full(x, 1.0))
  return select(small, expm1(mul(x, _LN2)), sub(exp2(x), 1.0))


exp2m1_p, exp2m1 = _float_unary("exp2m1", _np_exp2m1, _lax_exp2m1)
log2p1_p, log2p1 = _float_unary("log2p1", lambda x: np.log1p(x) / _LN2,
                                lambda x: mul(log1p(x), 1.0 / _LN2))

# --- one_minus_square ---------------------------------------------------------------------------

def _np_one_minus_square(x, **_):
  with np.errstate(all="ignore"):
    one = np.ones((), x.dtype)
    return np.asarray((one + x) * (one - x)).astype(x.dtype)


one_minus_square_p = unary("one_minus_square", _np_one_minus_square, NUMERIC.replace(BOOL, ""))
one_minus_square_p.lower = lowering.lower_fun(
    lambda x: mul(add(x, 1), sub(_full(x, 1), x)), multiple_results=False)
one_minus_square = _unary_fn(one_minus_square_p, "one_minus_square")

# --- mulhi ------------------------------------------------------------------------------------

def _np_mulhi(x, y, **_):
  x, y = np.broadcast_arrays(x, y)
  dt, nbits = x.dtype, x.dtype.itemsize * 8
  if nbits < 64:
    wide = np.int64 if dtype_kind(dt) == "i" else np.uint64
    return ((x.astype(wide) * y.astype(wide)) >> nbits).astype(dt)
  prod = x.astype(object) * y.astype(object)        # exact 128-bit products
  hi = np.asarray(prod // (1 << 64) if prod.shape else prod // (1 << 64))
  if dtype_kind(dt) == "i":
    return hi.astype(np.int64)
  return hi.astype(np.uint64)


def _lax_mulhi(x, y):
  with enable_x64(True):   # the 64-bit product whatever the caller's mode
    return _lax_mulhi_x64(x, y)


def _lax_mulhi_x64(x, y):
  dt = core.get_aval(x).dtype
  nbits = dt.itemsize * 8
  if nbits < 64:
    wide = np.int64 if dtype_kind(dt) == "i" else np.uint64
    prod = mul(convert_element_type(x, wide), convert_element_type(y, wide))
    shift = shift_right_arithmetic if dtype_kind(dt) == "i" else shift_right_logical
    return convert_element_type(shift(prod, _full(prod, nbits)), dt)
  return _mulhi64(x, y, dt)


def _mulhi64(x, y, dt):
  """The high 64 bits from 32-bit halves (the unsigned product, then the two's complement
  corrections for negative operands)."""
  u64 = np.uint64
  ux, uy = bitcast_convert_type(x, u64), bitcast_convert_type(y, u64)
  mask = _full(ux, 0xFFFFFFFF)
  s32 = _full(ux, 32)
  xl, xh = bitwise_and(ux, mask), shift_right_logical(ux, s32)
  yl, yh = bitwise_and(uy, mask), shift_right_logical(uy, s32)
  ll, lh, hl, hh = mul(xl, yl), mul(xl, yh), mul(xh, yl), mul(xh, yh)
  mid = add(add(shift_right_logical(ll, s32), bitwise_and(lh, mask)), bitwise_and(hl, mask))
  hi = add(add(add(hh, shift_right_logical(lh, s32)), shift_right_logical(hl, s32)),
           shift_right_logical(mid, s32))
  if dtype_kind(dt) == "i":
    zero = _zeros(x)
    hi = sub(hi, select(lt(x, zero), uy, _zeros(uy)))
    hi = sub(hi, select(lt(y, zero), ux, _zeros(ux)))
    return bitcast_convert_type(hi, dt)
  return hi


mulhi_p = naryop("mulhi", _np_mulhi, INTS)
mulhi_p.lower = lowering.lower_fun(_lax_mulhi, multiple_results=False)
mulhi = _binary_fn(mulhi_p, "mulhi")
ad.defjvp_zero(mulhi_p)

# --- fma (public form of ember's primitive), fmuladd -------------------------------------------

strict_scalars(fma_p, fma)


def _np_fmuladd(x, y, z, **_):
  dt = x.dtype
  if dt in (np.float32, np.float64):
    return reference_elementwise.fma(x, y, z)
  f32 = [np.asarray(v, np.float32) for v in (x, y, z)]
  return np.asarray(reference_elementwise.fma(*f32)).astype(dt)


def _lax_fmuladd(x, y, z):
  dt = core.get_aval(x).dtype
  if dt in (np.float32, np.float64):
    return fma_p.bind(x, y, z)
  return convert_element_type(fma_p.bind(*(convert_element_type(v, np.float32)
                                           for v in (x, y, z))), dt)


fmuladd_p = naryop("fmuladd", _np_fmuladd, FLOAT)
fmuladd_p.lower = lowering.lower_fun(_lax_fmuladd, multiple_results=False)


def fmuladd(x, y, z):
  """x * y + z, fused on the CPU (float32/float64; narrower floats through float32)."""
  return bind_elementwise(fmuladd_p, x, y, z)


strict_scalars(fmuladd_p, fmuladd)
ad.defjvp(fmuladd_p, lambda g, x, y, z: mul(g, y), lambda g, x, y, z: mul(x, g),
          lambda g, x, y, z: g)

# --- polynomial ---------------------------------------------------------------------------------

def _horner(x, coeffs, step):
  acc = coeffs[-1]
  for c in reversed(coeffs[:-1]):
    acc = step(acc, x, c)
  return acc


def _np_polynomial(x, *coeffs, unroll=None):
  if not coeffs:
    raise TypeError("polynomial requires at least one coefficient.")
  if dtype_kind(x.dtype) == "f":
    out = _horner(x, coeffs, _np_fmuladd)
  else:
    with np.errstate(all="ignore"):
      out = _horner(x, coeffs, lambda a, x, c: a * x + c)
  shape = np.broadcast_shapes(*(np.shape(v) for v in (x, *coeffs)))
  return np.broadcast_to(np.asarray(out).astype(x.dtype), shape)


def _lax_polynomial(x, *coeffs, unroll=None):
  step = fmuladd if dtype_kind(core.get_aval(x).dtype) == "f" else (
      lambda a, x, c: add(mul(a, x), c))
  out = _horner(x, coeffs, step)
  shape = polynomial_p.abstract_eval(*map(core.get_aval, (x, *coeffs))).shape
  return _bcast(out, shape)


def _bcast(v, shape):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import broadcast_in_dim
  vs = core.get_aval(v).shape
  if vs == shape:
    return v
  return broadcast_in_dim(v, shape, tuple(range(len(shape))) if vs else ())


polynomial_p = naryop("polynomial", _np_polynomial, NUMERIC.replace(BOOL, ""))
polynomial_p.lower = lowering.lower_fun(_lax_polynomial, multiple_results=False)
polynomial_p.pp_rule = lambda eqn, ctx: core._pp_eqn(
    eqn, ctx, {k: v for k, v in eqn.params.items() if v is not None})


def polynomial(x, coeffs, *, unroll=None):
  """sum_k coeffs[k] x**k by Horner's rule (`fmuladd` steps for floats)."""
  coeffs = list(coeffs)
  if not coeffs:
    raise ValueError("polynomial requires at least one coefficient.")
  if unroll is not None and (not isinstance(unroll, int) or unroll < 1):
    raise ValueError(f"polynomial: unroll must be a positive integer or None, got {unroll!r}")
  params = {} if unroll is None else {"unroll": unroll}
  return bind_elementwise(polynomial_p, x, *coeffs, **params)


def _polynomial_jvp(primals, tangents, unroll=None):
  """JAX's rule: d/dx is the derivative polynomial; the coefficients' tangents enter as the
  polynomial with those coefficients (written as Horner in mul/add: linear in them)."""
  x, *coeffs = primals
  dx, *dcs = tangents
  params = {} if unroll is None else {"unroll": unroll}
  y = polynomial_p.bind(x, *coeffs, **params)
  shape = core.get_aval(y).shape
  dy = None
  if not isinstance(dx, ad.Zero) and len(coeffs) > 1:
    deriv = [mul(c, float(k)) if dtype_kind(core.get_aval(c).dtype) == "f" else
             mul(c, _full(c, k)) for k, c in enumerate(coeffs[1:], 1)]
    dy = mul(dx, polynomial_p.bind(x, *deriv, **params))
  if any(not isinstance(d, ad.Zero) for d in dcs):
    ds = [_zeros(c) if isinstance(d, ad.Zero) else d for c, d in zip(coeffs, dcs)]
    dc = _horner(x, ds, lambda a, x, c: add(mul(a, x), c))
    dy = dc if dy is None else add(_bcast(dy, shape), _bcast(dc, shape))
  if dy is None:
    return y, ad.Zero.from_value(y)
  return y, _bcast(dy, shape)


polynomial_p.jvp = _polynomial_jvp

# --- total-order comparisons (eq_to, le_to, lt_to) ---------------------------------------------

def _np_total_key(x):
  """Floats mapped to signed integers that sort as IEEE's totalOrder: -NaN < -inf < ... <
  -0 < +0 < ... < inf < NaN (negative patterns flip their magnitude bits)."""
  x = np.asarray(x)
  if dtype_kind(x.dtype) != "f":
    return x
  s = reference_elementwise.as_signed(x)
  return np.where(s < 0, s ^ np.array(np.iinfo(s.dtype).max, s.dtype), s)


def _lax_total_key(x):
  dt = core.get_aval(x).dtype
  if dtype_kind(dt) != "f":
    return x
  sdt = {2: np.int16, 4: np.int32, 8: np.int64}[dt.itemsize]
  s = bitcast_convert_type(x, sdt)
  flipped = bitwise_xor(s, _full(s, np.iinfo(sdt).max))
  return select(lt(s, _zeros(s)), flipped, s)


def _total_order_compare(name, np_op, lax_op, kinds):
  p = naryop(name, lambda x, y, **_: np_op(_np_total_key(x), _np_total_key(y)), kinds,
             out_dtype=lambda _: np.dtype(np.bool_))
  p.lower = lowering.lower_fun(lambda x, y: lax_op(_lax_total_key(x), _lax_total_key(y)),
                               multiple_results=False)
  ad.defjvp_zero(p)
  return p


eq_to_p = _total_order_compare("eq_to", np.equal, eq, BOOL + NUMERIC)
le_to_p = _total_order_compare("le_to", np.less_equal, le, INTS + FLOAT + BOOL)
lt_to_p = _total_order_compare("lt_to", np.less, lt, INTS + FLOAT + BOOL)

# --- derivatives (JAX's rules) ------------------------------------------------------------------

ad.defjvp(sinpi_p, lambda g, x: mul(g, mul(cospi(x), math.pi)))
ad.defjvp(cospi_p, lambda g, x: neg(mul(g, mul(sinpi(x), math.pi))))
ad.defjvp2(tanpi_p, lambda g, ans, x: mul(g, mul(add(square(ans), 1.0), math.pi)))
ad.defjvp(asinpi_p, lambda g, x: mul(g, mul(rsqrt(one_minus_square(x)), _INV_PI)))
ad.defjvp(acospi_p, lambda g, x: neg(mul(g, mul(rsqrt(one_minus_square(x)), _INV_PI))))
ad.defjvp(atanpi_p, lambda g, x: div(mul(g, _INV_PI), add(square(x), 1.0)))
ad.defjvp(atan2pi_p,
          lambda g, x, y: div(mul(mul(g, y), _INV_PI), add(square(x), square(y))),
          lambda g, x, y: div(mul(mul(g, neg(x)), _INV_PI), add(square(x), square(y))))
ad.defjvp(exp2m1_p, lambda g, x: mul(g, mul(exp2(x), _LN2)))
ad.defjvp(log2p1_p, lambda g, x: div(g, mul(add(x, 1.0), _LN2)))
ad.defjvp(one_minus_square_p, lambda g, x: mul(g, mul(x, _full(x, -2))))

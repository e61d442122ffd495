"""Elementwise ops with XLA's semantics in NumPy: the impls of the elementwise primitives
(primitives/elementwise/ declares them) and of hlo_eval's elementwise opcodes, so eager
mode and the HLO evaluator agree by construction. Each kernel is named after its lax
function (`max` is lax.max's) and takes its primitive's params (a transcendental's
`accuracy` does not change the reference value).

- values follow XLA: integer div/rem truncate toward zero (x/0 = -1, x%0 = x), shifts by
  amounts outside [0, bits) give 0 (or the sign fill), float->int conversion saturates,
  max/min propagate NaN, complex max/min compare lexicographically;
- transcendental functions compute in float64/complex128 and round to the input dtype
  (so float16/bfloat16/float32 results are as accurate as the dtype allows);
- the special functions (erf, erfc, erf_inv, lgamma, digamma, bessel_i0e) are our own
  float64 implementations on top of `math`: no SciPy at runtime.
"""
from __future__ import annotations

import builtins
import enum
import math

import numpy as np

from ember._src.base import dtypes
from ember._src.base.dtypes import dtype_kind

_abs = builtins.abs  # `abs` below is lax.abs's kernel


# --- helpers --------------------------------------------------------------------------

def _quiet(fn):
  """NumPy impls follow IEEE/XLA semantics silently (overflow -> inf, 0/0 -> nan)."""
  def impl(*args, **params):
    with np.errstate(all="ignore"):
      return fn(*args, **params)
  impl.__name__ = getattr(fn, "__name__", "impl")
  return impl


def _wide(dt) -> np.dtype:
  """The dtype transcendental impls compute in: float64 / complex128."""
  return np.dtype(np.complex128) if np.dtype(dt).kind == "c" else np.dtype(np.float64)


def _math(fn):
  """Impl of a floating unary function: evaluate `fn` in float64/complex128, then round
  to the input dtype. Params (accuracy, ...) do not change the reference value."""
  def impl(x, **_):
    return np.asarray(fn(x.astype(_wide(x.dtype)))).astype(x.dtype)
  return _rounds_from_float64(_quiet(impl))


def _rounds_from_float64(impl):
  """Mark an impl that evaluates in float64 and rounds: its bits are not the compiled
  code's (primitives' `reference_exact`)."""
  impl.rounds_from_float64 = True
  return impl


def _math2(fn):
  def impl(x, y, **_):
    wide = _wide(x.dtype)
    return np.asarray(fn(x.astype(wide), y.astype(wide))).astype(x.dtype)
  return _rounds_from_float64(_quiet(impl))


def _same(fn):
  """Impl computed by NumPy in the operands' own dtype (exact IEEE ops, integer wrap)."""
  def impl(*args, **_):
    return np.asarray(fn(*args)).astype(args[0].dtype, copy=False)
  return _quiet(impl)


def _pyvec(fn):
  """A float64 NumPy function from a `math` scalar function."""
  uf = np.frompyfunc(fn, 1, 1)
  return lambda x: np.asarray(uf(x), dtype=np.float64) if np.ndim(x) else np.float64(fn(float(x)))


_UINT_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_INT_OF_SIZE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _c_order(x):
  """A C-contiguous copy when needed (unlike np.ascontiguousarray, keeps 0-d arrays 0-d)."""
  x = np.asarray(x)
  return x if x.flags.c_contiguous else np.array(x, order="C")


def as_unsigned(x):
  return _c_order(x).view(_UINT_OF_SIZE[x.dtype.itemsize])


def as_signed(x):
  return _c_order(x).view(_INT_OF_SIZE[x.dtype.itemsize])


def bits(dt) -> int:
  return np.dtype(dt).itemsize * 8


def _cpack(re, im, dtype):
  """A complex array from its parts (never re + 1j * im: inf * 0j would be NaN)."""
  out = np.empty(np.shape(re), dtype)
  out.real, out.imag = re, im
  return out


# --- convert_element_type, bitcast_convert_type, reduce_precision ---------------------

def convert_element_type(x, *, new_dtype, weak_type):
  new_dtype = np.dtype(new_dtype)
  if np.iscomplexobj(x) and new_dtype.kind != "c":
    x = x.real
  if new_dtype.kind in "iu" and x.dtype.kind in "fc" or (
      new_dtype.kind in "iu" and x.dtype == dtypes.bfloat16):
    # XLA semantics: NaN -> 0, out-of-range values saturate.
    info = np.iinfo(new_dtype)
    xf = np.asarray(x, np.float64)
    xf = np.where(np.isnan(xf), 0, np.clip(np.trunc(xf), info.min, info.max))
    with np.errstate(invalid="ignore"):
      out = xf.astype(new_dtype)
    out = np.where(xf >= float(info.max), info.max, out).astype(new_dtype)
    return out
  if new_dtype == np.bool_:
    return x != 0
  with np.errstate(over="ignore", invalid="ignore"):
    if new_dtype in _NARROW_FLOATS and x.dtype not in _NARROW_FLOATS + (np.dtype(np.float32),):
      x = x.astype(np.float32)   # as XLA: float64 and integers round to float32 first
    return x.astype(new_dtype)


_NARROW_FLOATS = (np.dtype(dtypes.float16), np.dtype(dtypes.bfloat16))


def bitcast_convert_type(x, *, new_dtype):
  new = np.dtype(new_dtype)
  x = _c_order(x)
  if x.dtype.itemsize > new.itemsize:
    return x.reshape(*x.shape, 1).view(new)
  if x.dtype.itemsize < new.itemsize:
    return x.view(new).reshape(x.shape[:-1])
  return x.view(new)


@_quiet
def reduce_precision(x, *, exponent_bits, mantissa_bits):
  """XLA's ReducePrecision on the bit pattern: round the mantissa to nearest even, then
  flush values outside the reduced exponent range to 0 / inf (denormals become 0)."""
  info = dtypes.finfo(x.dtype)
  src_mant, src_exp = int(info.nmant), int(info.nexp)
  ut = _UINT_OF_SIZE[x.dtype.itemsize]
  one = ut(1)
  u = as_unsigned(x).copy()
  if mantissa_bits < src_mant:
    last_bit = ut(1 << (src_mant - mantissa_bits))
    bias = (last_bit >> one) - one
    x_last = (u & last_bit) >> ut(src_mant - mantissa_bits)
    u = (u + x_last + bias) & ~(last_bit - one)
  if exponent_bits < src_exp:
    sign_mask = ut(1 << (bits(x.dtype) - 1))
    exp_mask = ut(((1 << src_exp) - 1) << src_mant)
    src_bias = (1 << (src_exp - 1)) - 1
    reduced_bias = (1 << (exponent_bits - 1)) - 1
    x_exp = u & exp_mask
    overflow = x_exp > ut((src_bias + reduced_bias) << src_mant)
    underflow = x_exp <= ut((src_bias - reduced_bias) << src_mant)
    signed_zero = u & sign_mask
    u = np.where(overflow, signed_zero | exp_mask, u)
    u = np.where(underflow, signed_zero, u)
  out = u.astype(ut).view(x.dtype)
  return np.where(np.isnan(x), x, out)  # NaNs stay NaN (rounding could carry into the sign)


# --- arithmetic -----------------------------------------------------------------------

def _int_rem(x, y):
  """XLA integer remainder: sign of the dividend; x % 0 = x; INT_MIN % -1 = 0."""
  x, y = np.broadcast_arrays(x, y)
  zero = y == 0
  return np.where(zero, x, np.fmod(x, np.where(zero, 1, y).astype(y.dtype)))


@_quiet
def div(x, y):
  if x.dtype.kind not in "iu":
    return np.true_divide(x, y).astype(x.dtype, copy=False)
  x, y = np.broadcast_arrays(x, y)
  zero = y == 0
  ysafe = np.where(zero, 1, y).astype(y.dtype)
  q = np.floor_divide(x - np.fmod(x, ysafe), ysafe)  # exact: truncating division
  return np.where(zero, np.array(-1).astype(x.dtype), q)  # x / 0 = -1 (all bits set)


@_quiet
def rem(x, y):
  if x.dtype.kind in "iu":
    return _int_rem(x, y)
  if x.dtype in _NARROW_FLOATS:   # in float32, as the compiled code (exact: fmod rounds
    # nothing); ml_dtypes' bfloat16 fmod reads a subnormal divisor under flush-to-zero as
    # itself, not as the zero XLA:CPU reads (sub % sub: nan)
    return np.fmod(x.astype(np.float32), y.astype(np.float32)).astype(x.dtype)
  return np.fmod(x, y).astype(x.dtype, copy=False)


def _lex_gt(x, y):
  """Lexicographic complex order, as XLA's complex max/min."""
  return (x.real > y.real) | ((x.real == y.real) & (x.imag > y.imag))


@_quiet
def max(x, y):
  if x.dtype.kind == "c":
    return np.where(_lex_gt(x, y), x, y)
  out = np.maximum(x, y)
  if dtype_kind(x.dtype) == "f":  # max(-0.0, +0.0) = +0.0, as XLA
    out = _flushed(np.where((x == 0) & (y == 0), np.where(np.signbit(x), y, x), out))
  return out


@_quiet
def min(x, y):
  if x.dtype.kind == "c":
    return np.where(_lex_gt(y, x), x, y)
  out = np.minimum(x, y)
  if dtype_kind(x.dtype) == "f":  # min(-0.0, +0.0) = -0.0, as XLA
    out = _flushed(np.where((x == 0) & (y == 0), np.where(np.signbit(x), x, y), out))
  return out


def _flushed(x):
  """x with its subnormals as zeros of their sign where this thread flushes them (x * 1
  under flush-to-zero, base/denormals.py; unchanged otherwise): the compiled max/min
  return an operand as the processor's max reads it (maxps: a subnormal is a zero), where
  NumPy's scalar loops return an operand's bits."""
  return np.multiply(x, x.dtype.type(1))


def _nextafter(x, y):
  """XLA's next_after (chlo's decomposition) on the bits, as the compiled code: y where
  x == y (nextafter(0, -0) = -0; a subnormal x equals 0 under flush-to-zero); from a zero
  of the bits the smallest subnormal of y's sign; else the magnitude bits one down when
  |x| > |y| or the signs differ, one up otherwise; NaN when either is."""
  x, y = np.broadcast_arrays(x, y)
  ux, uy = as_unsigned(x), as_unsigned(y)
  ut = ux.dtype.type
  sign = ut(1 << (bits(x.dtype) - 1))
  ax, ay = ux & ~sign, uy & ~sign
  down = (ax > ay) | ((ux & sign) != (uy & sign))
  stepped = np.where(down, ux - ut(1), ux + ut(1))
  out = np.where(ax == 0, (uy & sign) | ut(1), stepped).astype(ut).view(x.dtype)
  out = np.where(x == y, y, out)
  return np.where(np.isnan(x) | np.isnan(y), x + y, out)


add = _same(np.add)
sub = _same(np.subtract)
nextafter = _same(_nextafter)


def _atan2(x, y):
  if x.dtype.kind == "c":  # atan2(x, y) = -i log((y + i x) / sqrt(x^2 + y^2))
    return -1j * np.log((y + 1j * x) / np.sqrt(x * x + y * y))
  return np.arctan2(x, y)


atan2 = _math2(_atan2)


@_quiet
def mul(x, y, *, out_dtype=None):
  dt = x.dtype if out_dtype is None else np.dtype(out_dtype)
  return np.multiply(x.astype(dt, copy=False), y.astype(dt, copy=False)).astype(dt, copy=False)


@_quiet
def pow(x, y):
  # The exponent as a contiguous array of the result's shape (at least 1-d): NumPy's power
  # loop turns a broadcast (stride-0) exponent of 0.5 into sqrt, giving sqrt(-inf) = nan
  # and sqrt(-0) = -0 where C pow (and XLA) give +inf and +0.
  wide = _wide(x.dtype)
  shape = np.broadcast_shapes(np.shape(x), np.shape(y))
  full = lambda a: np.array(np.broadcast_to(a.astype(wide), shape), ndmin=1)
  return np.power(full(x), full(y)).reshape(shape).astype(x.dtype)


@_quiet
def integer_pow(x, *, y):
  """Repeated squaring in the operand dtype, exactly as XLA lowers integer_pow."""
  if y == 0:
    return np.ones_like(x)
  n, acc = _abs(y), None
  while n:
    if n & 1:
      acc = x if acc is None else acc * x
    n >>= 1
    if n:
      x = x * x
  return (np.ones_like(acc) / acc).astype(acc.dtype) if y < 0 else acc


# fma: one rounding of x * y + z (ember's own; JAX's lax has none)

@_quiet
def fma(x, y, z):
  """RN32(x * y + z): the product is exact in float64 (2 x 24 significand bits), the sum is
  rounded to odd there (TwoSum's error says whether it was exact), and 53 >= 24 + 2 bits
  make the final rounding to float32 correct (Boldo & Melquiond 2008). float64: _fma64."""
  if np.result_type(x, y, z) == np.float64:
    return _fma64(*(np.asarray(v, np.float64) for v in (x, y, z)))
  a, b, c = (np.asarray(v, np.float64) for v in (x, y, z))
  return np.asarray(_round_to_odd64(*_two_sum64(a * b, c)).astype(np.float32))


def _two_sum64(a, b):
  """s = RN(a + b) and the exact error a + b - s (Knuth's TwoSum)."""
  s = a + b
  bb = s - a
  return s, (a - (s - bb)) + (b - bb)


def _round_to_odd64(v, err):
  """v moved one ulp towards the true value v + err where that is inexact and v even (its
  rounding to odd); non-finite v as it is."""
  even = (v.view(np.uint64) & np.uint64(1)) == 0
  return np.where((err != 0) & even & np.isfinite(v), np.nextafter(v, np.copysign(np.inf, err)), v)


def _veltkamp_split(v):
  """v = hi + lo with hi, lo of at most 26 significant bits each."""
  t = v * 134217729.0   # 2**27 + 1
  hi = t - (t - v)
  return hi, v - hi


def _fma64(a, b, c):
  """RN64(a * b + c): Dekker's exact product p + e, (th, tl) = TwoSum(c, p), then
  RN(th + RO(tl + e)) with RO rounding to odd (Boldo & Melquiond 2008). Elements where the
  splitting could overflow or e underflow take exact rational arithmetic instead."""
  shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
  a, b, c = (np.broadcast_to(v, shape).reshape(-1) for v in (a, b, c))
  (ah, al), (bh, bl) = _veltkamp_split(a), _veltkamp_split(b)
  p = a * b
  e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
  th, tl = _two_sum64(c, p)
  out = th + _round_to_odd64(*_two_sum64(tl, e))
  big = 2.0 ** 995
  safe = ((np.abs(a) < big) & (np.abs(b) < big) & (np.abs(c) < big) & np.isfinite(out)
          & (np.abs(p) >= 2.0 ** -960))
  # a or b zero, or an operand inf/nan: a * b + c rounds once already (a finite product
  # that overflows does not matter when c is inf/nan: the result is c)
  ab_finite = np.isfinite(a) & np.isfinite(b)
  direct = (a == 0) | (b == 0) | ~ab_finite | ~np.isfinite(c)
  out = np.where(safe & ~direct, out, np.where(ab_finite & ~np.isfinite(c), c, a * b + c))
  for i in np.flatnonzero(~safe & ~direct):
    out[i] = _exact_fma(float(a[i]), float(b[i]), float(c[i]))
  return out.reshape(shape)


def _exact_fma(a: float, b: float, c: float) -> float:
  from fractions import Fraction  # noqa: PLC0415 - only for the rare extreme operands
  v = Fraction(a) * Fraction(b) + Fraction(c)
  try:
    return float(v)   # int / int: correctly rounded, subnormals included
  except OverflowError:
    return math.inf if v > 0 else -math.inf


def _sign(x):
  if x.dtype.kind == "c":   # each part over |x| (as XLA: sign(inf + 0j) = nan + 0j); 0 kept
    a = np.abs(x)
    safe = np.where(a == 0, 1, a)
    return np.where(a == 0, x, _cpack(x.real / safe, x.imag / safe, x.dtype))
  if x.dtype.kind == "u":
    return (x != 0).astype(x.dtype)
  if x.dtype.kind == "i":
    return np.sign(x)
  # a zero of x's sign for +-0 (and subnormals, zeros under flush-to-zero); NaN stays
  return np.where(x == 0, np.copysign(np.zeros_like(x), x), np.sign(x))


@_quiet
def sign(x, **_):
  return np.asarray(_sign(x)).astype(x.dtype)


@_quiet
def abs(x, **_):  # noqa: A001 - lax.abs
  return np.abs(x)


def _square(x):
  if x.dtype.kind != "c":
    return np.square(x)
  a, b = x.real, x.imag   # z * z as the compiled complex product (NumPy's loops fuse or not)
  return _cpack(a * a - b * b, a * b + b * a, x.dtype)


neg = _same(np.negative)
square = _same(_square)


# --- rounding -------------------------------------------------------------------------

class RoundingMethod(enum.IntEnum):
  """How `lax.round` rounds halfway values."""
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


@_quiet
def round(x, *, rounding_method):
  if rounding_method == RoundingMethod.TO_NEAREST_EVEN:
    return np.rint(x)
  t = np.trunc(x)  # x - t is exact, so the halfway test is too
  return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


def is_finite(x, **_):
  return np.isfinite(x)


floor = _same(np.floor)
ceil = _same(np.ceil)


# --- transcendental -------------------------------------------------------------------

def _logistic(x):
  if x.dtype.kind == "c":
    return 1 / (1 + np.exp(-x))
  e = np.exp(-np.abs(x))  # never overflows
  return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _rsqrt(x):
  return 1 / np.sqrt(x)


def _expm1(x):
  """NumPy's complex expm1 loses exp(z) - 1's special values (expm1(inf + 0j) = inf + nanj):
  the formula and special values of lower/complex_math.py's expansion instead."""
  if x.dtype.kind != "c":
    return np.expm1(x)
  a, b = x.real, x.imag
  h = np.sin(b / 2)
  re = np.expm1(a) * np.cos(b) - 2 * h * h
  re = np.where((a == 0) & (b == 0), 0.0, re)   # +0 from -0 + 0j too (the standard, JAX)
  im = np.where(b == 0, b, np.exp(a) * np.sin(b))
  inf_b = ~np.isfinite(b)
  re = np.where(inf_b & (a == -np.inf), -1.0, np.where(inf_b & (a == np.inf), np.inf, re))
  im = np.where(inf_b & (a == -np.inf), np.copysign(0.0, b),
                np.where(inf_b & (a == np.inf), np.nan, im))
  return _cpack(re, im, x.dtype)


def _log1p(x):
  """NumPy's complex log1p is log(1 + z), which loses all of a tiny z: 1/2 log1p(|1+z|^2 - 1)
  while that is small, as lower/complex_math.py's expansion."""
  if x.dtype.kind != "c":
    return np.log1p(x)
  a, b = x.real, x.imag
  u = a * (a + 2) + b * b
  re = np.where(np.abs(u) < 0.5, np.log1p(u) * 0.5, np.log(np.abs(_cpack(a + 1, b, x.dtype))))
  return _cpack(re, np.arctan2(b, a + 1), x.dtype)


exp = _math(np.exp)
exp2 = _math(np.exp2)
log = _math(np.log)
log2 = _math(np.log2)
expm1 = _math(_expm1)
log1p = _math(_log1p)
tanh = _math(np.tanh)
logistic = _math(_logistic)
sin = _math(np.sin)
cos = _math(np.cos)
tan = _math(np.tan)
sqrt = _math(np.sqrt)
rsqrt = _math(_rsqrt)
cbrt = _math(np.cbrt)
asin = _math(np.arcsin)
acos = _math(np.arccos)
atan = _math(np.arctan)
sinh = _math(np.sinh)
cosh = _math(np.cosh)
asinh = _math(np.arcsinh)
acosh = _math(np.arccosh)
atanh = _math(np.arctanh)


# --- special functions (float64 reference implementations) ----------------------------

def _lgamma_scalar(v: float) -> float:
  try:
    return math.lgamma(v)
  except (ValueError, OverflowError):  # poles at 0, -1, -2, ...
    return math.inf


_erf64, _erfc64, _lgamma64 = _pyvec(math.erf), _pyvec(math.erfc), _pyvec(_lgamma_scalar)


def _digamma64(x):
  """psi(x): reflection for x < 0, recurrence up to x >= 10, then the asymptotic series."""
  x = np.asarray(x, np.float64)
  neg = x < 0
  r = x - np.rint(x)  # tan(pi x) has period 1: reduce first for accuracy
  with np.errstate(all="ignore"):
    reflect = np.where(neg, np.pi / np.tan(np.pi * r), 0.0)
  z = np.where(neg, 1 - x, x)
  acc = np.zeros_like(z)
  for _ in range(10):
    small = z < 10
    acc -= np.where(small, 1 / np.where(small, z, 1), 0)
    z = np.where(small, z + 1, z)
  w = 1 / (z * z)
  series = w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (1 / 240 - w * (
      1 / 132 - w * (691 / 32760 - w / 12))))))
  out = np.log(z) - 0.5 / z - series + acc - reflect
  out = np.where(x == 0, -np.inf, out)                          # psi(+-0) = -inf (XLA)
  out = np.where(neg & (x == np.floor(x)), np.nan, out)         # poles, and -inf
  return np.where(x == np.inf, np.inf, out)


def _erf_inv64(y):
  """erf^-1 by Newton's method from Giles' approximation; for |y| > 0.5 it solves
  log(erfc(x)) = log(1 - |y|) (1 - |y| is exact), so it stays accurate up to |y| -> 1."""
  y = np.asarray(y, np.float64)
  a = np.abs(y)
  inside = a < 1
  a_in = np.where(inside, a, 0.5)
  w = -(np.log1p(-a_in) + np.log1p(a_in))
  w1, w2 = w - 2.5, np.sqrt(w) - 3.0
  p1 = 2.81022636e-08
  for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
    p1 = c + p1 * w1
  p2 = -0.000200214257
  for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
            0.00943887047, 1.00167406, 2.83297682):
    p2 = c + p2 * w2
  x = np.where(w < 5, p1, p2) * a_in
  tail = a_in > 0.5
  target = np.where(tail, 1 - a_in, a_in)
  for _ in range(5):  # Newton on erf(x) = a, and on log(erfc(x)) = log(1 - a) in the tail
    d = (2 / math.sqrt(math.pi)) * np.exp(-x * x)
    ec = _erfc64(np.where(tail, x, 0.0))
    step_tail = (np.log(ec) - np.log(target)) * ec / d
    x = x + np.where(tail, step_tail, (a_in - _erf64(x)) / d)
  out = np.where(inside, x, np.where(a == 1, np.inf, np.nan))
  return np.copysign(out, y)


def _bessel_i0e64(x):
  """exp(-|x|) I0(x): the power series up to |x| = 20, the asymptotic series beyond."""
  x = np.abs(np.asarray(x, np.float64))
  small = x <= 20
  xs = np.where(small, x, 0.0)
  q = xs * xs / 4
  term, total = np.ones_like(xs), np.ones_like(xs)
  for k in range(1, 80):
    term = term * q / (k * k)
    total = total + term
  series = total * np.exp(-xs)
  xl = np.where(small, 21.0, x)
  term, total = np.ones_like(xl), np.ones_like(xl)
  for k in range(1, 30):
    term = term * (2 * k - 1) ** 2 / (8 * k * xl)
    total = total + term
  asym = total / np.sqrt(2 * np.pi * xl)
  return np.where(np.isnan(x), np.nan, np.where(small, series, asym))


erf = _math(_erf64)
erfc = _math(_erfc64)
erf_inv = _math(_erf_inv64)
lgamma = _math(_lgamma64)
digamma = _math(_digamma64)
bessel_i0e = _math(_bessel_i0e64)


# --- complex --------------------------------------------------------------------------

def complex_dtype(dt):
  return np.dtype(np.complex128 if np.dtype(dt) in (np.float64, np.complex128) else np.complex64)


def complex(x, y):
  x, y = np.broadcast_arrays(x, y)
  out = np.empty(x.shape, complex_dtype(x.dtype))
  out.real, out.imag = x, y  # not x + 1j*y: that turns inf parts into nan
  return out


def conj(x, **_):
  return np.conj(x).astype(complex_dtype(x.dtype))


def real(x, **_):
  return np.real(x)


def imag(x, **_):
  return np.imag(x)


# --- bitwise --------------------------------------------------------------------------

def _shift(kind):
  """XLA shifts: the amount is taken as unsigned; amounts >= bits give 0 (left, logical)
  or the sign fill (arithmetic, also for unsigned operands: it shifts the bit pattern)."""
  def impl(x, y):
    x, y = np.broadcast_arrays(x, y)
    ut = _UINT_OF_SIZE[x.dtype.itemsize]
    amount = as_unsigned(y)
    oob = amount >= bits(x.dtype)
    s = np.where(oob, 0, amount).astype(ut)
    if kind == "arith":
      sx = as_signed(x)
      out = np.where(oob, np.where(sx < 0, -1, 0), sx >> s.astype(sx.dtype)).astype(sx.dtype)
    else:
      ux = as_unsigned(x)
      out = np.where(oob, 0, ux << s if kind == "left" else ux >> s).astype(ut)
    return out.view(x.dtype)
  return _quiet(impl)


_POPCOUNT_TABLE = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def population_count(x, **_):
  b = _c_order(x).reshape(*x.shape, 1).view(np.uint8)
  return _POPCOUNT_TABLE[b].sum(axis=-1, dtype=np.int64).astype(x.dtype)


def clz(x, **_):
  u = as_unsigned(x).astype(np.uint64)
  nbits = bits(x.dtype)
  n = np.zeros(u.shape, np.int64)
  for s in (32, 16, 8, 4, 2, 1):
    if s < nbits:
      big = (u >> np.uint64(s)) != 0
      n += np.where(big, s, 0)
      u = np.where(big, u >> np.uint64(s), u)
  n += (u != 0)
  return (nbits - n).astype(x.dtype)


def bitwise_not(x, **_):
  return np.invert(x)


bitwise_and = _same(np.bitwise_and)
bitwise_or = _same(np.bitwise_or)
bitwise_xor = _same(np.bitwise_xor)
shift_left = _shift("left")
shift_right_arithmetic = _shift("arith")
shift_right_logical = _shift("logical")


# --- comparison and selection ---------------------------------------------------------

eq = _quiet(np.equal)
ne = _quiet(np.not_equal)
lt = _quiet(np.less)
le = _quiet(np.less_equal)
gt = _quiet(np.greater)
ge = _quiet(np.greater_equal)


def select_n(which, *cases):
  """Out-of-range indices clamp (XLA lowers select_n to a tree of `which < k` tests)."""
  out = cases[0]
  for k in range(1, len(cases)):
    out = np.where(which >= k, cases[k], out)
  return np.broadcast_to(out, cases[0].shape)


@_quiet
def clamp(lo, x, hi):
  return np.broadcast_to(min(max(x, lo), hi), x.shape)

"""Elementwise ember.numpy functions (ufuncs): promotion + broadcasting, then lax.

Each function follows jax.numpy: the same dtype promotion (`promote_args*`), weak types
and special cases, built from lax operations only, so it runs eagerly and under tracing.
"""
from __future__ import annotations

import inspect
import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy.util import (
    broadcast_arrays_rank, broadcast_shapes, broadcast_to_shape, check_arraylike, promote_args,
    promote_args_inexact, promote_args_numeric, promote_dtypes, promote_dtypes_inexact,
    promote_dtypes_numeric)
from ember._src.primitives import dtype_kind
from ember._src.primitives.reductions import _scan_jvp, cumlogsumexp_p
from ember._src.core.array import Array
from ember._src.library.random.keys import PRNGKeyArray
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder",
    "mod", "fmod", "divmod", "power", "pow", "float_power", "negative", "positive", "abs",
    "absolute", "fabs", "sign", "reciprocal", "square", "sqrt", "cbrt",
    # rounding
    "floor", "ceil", "trunc", "rint", "round", "around", "fix",
    # exponents and logarithms
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "logaddexp", "logaddexp2",
    # trigonometric and hyperbolic
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "asin", "acos", "atan", "atan2", "asinh", "acosh",
    "atanh", "deg2rad", "rad2deg", "degrees", "radians", "hypot", "sinc",
    # extrema and clipping
    "maximum", "minimum", "fmax", "fmin", "clip",
    # floating point
    "heaviside", "copysign", "nextafter", "spacing", "signbit", "isnan", "isinf",
    "isfinite", "isneginf", "isposinf", "modf", "nan_to_num", "i0",
    # complex
    "real", "imag", "conj", "conjugate", "angle",
    # comparison and logic
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "logical_not",
    # bitwise
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_invert", "invert",
    "left_shift", "right_shift", "bitwise_left_shift", "bitwise_right_shift",
    "bitwise_count", "gcd", "lcm",
]

# --- helpers ------------------------------------------------------------------------------


def _dtype(x) -> np.dtype:
  return core.get_aval(x).dtype


def _shape(x) -> tuple:
  return core.get_aval(x).shape


def _is(x, kind) -> bool:
  return dtypes.issubdtype(_dtype(x), kind)


def _asarray(x):
  """An ember array (or tracer) for any array-like, keeping dtype and weak type."""
  if isinstance(x, (Array, core.Tracer)):
    return x
  aval = core.get_aval(x)
  return lax.convert_element_type(x, aval.dtype, aval.weak_type)


def _ensure(fun_name, *args):
  check_arraylike(fun_name, *args)
  return [_asarray(a) for a in args]


_PY_SCALAR_TYPES = {"b": bool, "i": int, "f": float, "c": complex}


def _const(x, value):
  """`value` as a constant like x (JAX's lax._const): a Python scalar when x is a weakly
  typed scalar, so results stay weak; otherwise a NumPy scalar of x's dtype (a strongly
  typed literal in jaxprs)."""
  aval = core.get_aval(x)
  if aval.weak_type and not aval.shape:
    py = _PY_SCALAR_TYPES.get(dtype_kind(aval.dtype))
    if py is not None and dtypes.dtype(py) == aval.dtype:
      return py(value)
  return np.array(value, dtype=aval.dtype)[()]


def _strong_const(x, value):
  """`value` as a NumPy scalar of x's dtype, strongly typed even for a weak x (JAX's
  jnp-level `_constant_like`)."""
  return np.array(value, dtype=_dtype(x))[()]


def _full_like(x, value, dtype=None):
  """lax.full_like: `value` broadcast to x's shape, in x's dtype (keeping x's weak type)
  or in `dtype`."""
  aval = core.get_aval(x)
  dt = aval.dtype if dtype is None else np.dtype(dtype)
  fill = lax.convert_element_type(np.array(value, dt)[()], dt,
                                  weak_type=dtype is None and aval.weak_type)
  return lax.broadcast_in_dim(fill, aval.shape, ()) if aval.shape else fill


def _isnan(x):
  return lax.ne(x, x)


def _where(condition, x, y):
  """jnp.where(condition, x, y): promote x and y, broadcast all three, lax.select."""
  if not _is(condition, np.bool_):
    condition = lax.ne(condition, _const(condition, 0))
  x, y = promote_dtypes(x, y)
  shape = broadcast_shapes(_shape(condition), _shape(x), _shape(y))
  if _shape(condition):
    condition = broadcast_to_shape(condition, shape)
  return lax.select(condition, broadcast_to_shape(x, shape), broadcast_to_shape(y, shape))


def _named(name, fn):
  fn.__name__ = fn.__qualname__ = name
  return fn


def _unary_inexact(name, lax_fn):
  return _named(name, lambda x, /: lax_fn(*promote_args_inexact(name, x)))


def _alias(name, fn):
  """Array-API spelling (`acos` for `arccos`): same function under its own name, with
  its positional signature (`inspect.signature(jnp.atan2)` is `(x1, x2, /)`)."""
  alias = _named(name, lambda *args: fn(*args))
  alias.__signature__ = inspect.signature(fn)
  return alias


# --- arithmetic -----------------------------------------------------------------------------


def add(x, y, /):
  x, y = promote_args("add", x, y)
  return lax.bitwise_or(x, y) if _dtype(x) == np.bool_ else lax.add(x, y)


def subtract(x, y, /):
  return lax.sub(*promote_args("subtract", x, y))


def multiply(x, y, /):
  x, y = promote_args("multiply", x, y)
  return lax.bitwise_and(x, y) if _dtype(x) == np.bool_ else lax.mul(x, y)


def true_divide(x1, x2, /):
  return lax.div(*promote_args_inexact("true_divide", x1, x2))


def divide(x1, x2, /):
  return true_divide(x1, x2)


def _float_divmod(x1, x2):
  mod = lax.rem(x1, x2)
  div = lax.div(_where(lax.eq(x2, _const(x2, 0)), x1, lax.sub(x1, mod)), x2)
  ind = lax.bitwise_and(lax.ne(mod, _const(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
  mod = lax.select(ind, lax.add(mod, x2), mod)
  div = lax.select(ind, lax.sub(div, 1.0), div)  # a Python 1.0 keeps div's weak type
  return lax.round(div), mod


def floor_divide(x1, x2, /):
  """Python's // : rounds toward -inf (lax.div truncates, so integers are corrected)."""
  x1, x2 = promote_args_numeric("floor_divide", x1, x2)
  dt = _dtype(x1)
  if dtypes.issubdtype(dt, np.unsignedinteger):
    return lax.div(x1, x2)
  if dtypes.issubdtype(dt, np.integer):
    quotient = lax.div(x1, x2)
    fix = logical_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                      lax.ne(lax.rem(x1, x2), _const(x1, 0)))
    return _where(fix, lax.sub(quotient, 1), quotient)
  if dtypes.issubdtype(dt, np.complexfloating):
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)[0]


def remainder(x1, x2, /):
  """Python's % : the result has the sign of the divisor."""
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  if _is(x1, np.complexfloating):
    raise TypeError("remainder does not support complex-valued inputs")
  zero = _strong_const(x1, 0)
  if _is(x2, np.integer):  # x % 0 is 0 here; full_like keeps x2's weak type
    x2 = _where(lax.eq(x2, _const(x2, 0)), _full_like(x2, 1), x2)
  trunc_mod = lax.rem(x1, x2)
  trunc_mod_not_zero = lax.ne(trunc_mod, zero)
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                            trunc_mod_not_zero)
  return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


def mod(x1, x2, /):
  return remainder(x1, x2)


def fmod(x1, x2, /):
  """C's fmod: the result has the sign of the dividend."""
  x1, x2 = _ensure("fmod", x1, x2)
  if dtypes.issubdtype(dtypes.result_type(x1, x2), np.integer):
    x2 = _where(lax.eq(x2, _const(x2, 0)), _full_like(x2, 1), x2)
  x1, x2 = promote_args_numeric("fmod", x1, x2)
  if _is(x1, np.complexfloating):
    raise TypeError("fmod does not support complex-valued inputs")
  return lax.rem(x1, x2)


def divmod(x1, x2, /):  # noqa: A001 - jnp.divmod
  x1, x2 = promote_args_numeric("divmod", x1, x2)
  if _is(x1, np.integer):
    return floor_divide(x1, x2), remainder(x1, x2)
  if _is(x1, np.complexfloating):
    raise TypeError("divmod does not support complex-valued inputs")
  return _float_divmod(x1, x2)


def _concrete_int(x):
  """x as a Python int when it is a concrete integer scalar (jnp.power's fast path)."""
  if isinstance(x, core.Tracer):
    x = x.to_concrete_value()
    if x is None:
      return None
  try:
    return operator.index(x)
  except TypeError:
    return None


def _pow_int_int(x1, x2):
  """Integer power by repeated squaring over the low 6 bits of the exponent (as JAX)."""
  zero, one = _strong_const(x2, 0), _strong_const(x2, 1)
  acc = _where(lax.bitwise_and(lax.eq(x1, _strong_const(x1, 0)), lax.ne(x2, zero)),
               _strong_const(x1, 0), _strong_const(x1, 1))
  for _ in range(6):
    acc = _where(lax.ne(lax.bitwise_and(x2, one), zero), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


def power(x1, x2, /):
  """x1 ** x2. A concrete integer exponent gives `integer_pow` (exact repeated squaring);
  a float base with an integer-array exponent keeps the exponent's dtype (`pow a b`)."""
  check_arraylike("power", x1, x2)
  y = _concrete_int(x2)
  if y is not None:
    x1, = promote_dtypes_numeric(x1)
    return lax.integer_pow(x1, y)
  if _is(x1, np.inexact) and _is(x2, np.integer):
    if dtypes.is_python_scalar(x1):  # keeps its own weak float dtype, not the exponent's
      return lax.pow_p.bind(x1, x2)
    return lax.pow(*broadcast_arrays_rank(x1, x2))
  x1, x2 = promote_args_numeric("power", x1, x2)
  if _is(x1, np.integer) or _is(x1, np.bool_):
    return _pow_int_int(x1, x2)
  return lax.pow(x1, x2)


def pow(x1, x2, /):  # noqa: A001 - jnp.pow
  return power(x1, x2)


def float_power(x, y, /):
  return lax.pow(*promote_args_inexact("float_power", x, y))


def negative(x, /):
  return lax.neg(*promote_args("negative", x))


def positive(x, /):
  return _asarray(*promote_args("positive", x))


def absolute(x, /):
  x, = _ensure("absolute", x)
  return x if _is(x, np.bool_) or _is(x, np.unsignedinteger) else lax.abs(x)


def abs(x, /):  # noqa: A001 - jnp.abs
  return absolute(x)


def fabs(x, /):
  x, = _ensure("fabs", x)
  if _is(x, np.complexfloating):
    raise TypeError("ufunc 'fabs' does not support complex dtypes")
  return lax.abs(*promote_args_inexact("fabs", x))


def sign(x, /):
  return lax.sign(*promote_args("sign", x))


def reciprocal(x, /):
  x, = _ensure("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


def square(x, /):
  x, = _ensure("square", x)
  x, = promote_dtypes_numeric(x)
  return lax.square(x)


sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)


# --- rounding ---------------------------------------------------------------------------------


def floor(x, /):
  x, = _ensure("floor", x)
  if _is(x, np.integer) or _is(x, np.bool_):
    return x
  return lax.floor(*promote_args_inexact("floor", x))


def ceil(x, /):
  x, = _ensure("ceil", x)
  if _is(x, np.integer) or _is(x, np.bool_):
    return x
  return lax.ceil(*promote_args_inexact("ceil", x))


def trunc(x, /):
  x, = _ensure("trunc", x)
  if _is(x, np.integer) or _is(x, np.bool_):
    return x
  return _where(lax.lt(x, _const(x, 0)), ceil(x), floor(x))


def fix(x, /, out=None):
  """Round toward zero (NumPy's np.fix; JAX 0.12 dropped it): floats keep their dtype."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.fix is not supported.")
  x, = _ensure("fix", x)
  return _where(lax.ge(x, _const(x, 0)), floor(x), ceil(x))


def rint(x, /):
  x, = _ensure("rint", x)
  if _is(x, np.integer) or _is(x, np.bool_):
    return lax.convert_element_type(x, dtypes.default_float_dtype())
  if _is(x, np.complexfloating):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals=0, out=None):  # noqa: A001 - jnp.round
  """Round half to even, to `decimals` decimal places (a static int)."""
  a, = _ensure("round", a)
  try:
    decimals = operator.index(decimals)
  except TypeError:
    raise TypeError(f"'decimals' argument of jnp.round must be a static integer, got "
                    f"{decimals!r}") from None
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  dt = _dtype(a)
  if dt == np.bool_:
    raise ValueError("jnp.round does not support boolean inputs; convert them with "
                     "astype() first.")
  if dtypes.issubdtype(dt, np.integer):
    if decimals < 0:
      raise NotImplementedError(f"jnp.round of an integer array with decimals={decimals} < 0 "
                                "is not supported (as in JAX); round a float copy instead")
    return a

  def round_float(x):
    if decimals == 0:
      return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    x = lax.convert_element_type(x, np.float32) if dt == np.float16 else x
    factor = _const(x, 10.0 ** decimals)
    out = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax.convert_element_type(out, dt) if dt == np.float16 else out

  if decimals > np.log10(float(dtypes.finfo(dt).max)):
    return a
  if dtypes.issubdtype(dt, np.complexfloating):
    return lax.complex(round_float(lax.real(a)), round_float(lax.imag(a)))
  return round_float(a)


def around(a, decimals=0, out=None):
  return round(a, decimals, out)


# --- exponents and logarithms -------------------------------------------------------------

exp = _unary_inexact("exp", lax.exp)
exp2 = _unary_inexact("exp2", lax.exp2)
expm1 = _unary_inexact("expm1", lax.expm1)
log = _unary_inexact("log", lax.log)
log2 = _unary_inexact("log2", lax.log2)
log1p = _unary_inexact("log1p", lax.log1p)


def log10(x, /):
  x, = promote_args_inexact("log10", x)
  one_over_log10 = np.array(0.4342944819032518, dtype=dtypes.finfo(_dtype(x)).dtype)[()]
  if _is(x, np.complexfloating):
    r = lax.log(x)
    return lax.complex(lax.mul(lax.real(r), one_over_log10), lax.mul(lax.imag(r), one_over_log10))
  return lax.mul(lax.log(x), one_over_log10)


def _wrap_between(x, a):
  """Wrap x into [-a, a)."""
  two_a = _const(x, 2 * a)
  rem = lax.rem(lax.add(x, _const(x, a)), two_a)
  rem = lax.select(lax.lt(rem, _const(x, 0)), lax.add(rem, two_a), rem)
  return lax.sub(rem, _const(x, a))


def _logaddexp(x1, x2, exp_fn, scale):
  """log(exp(x1) + exp(x2)) without overflow; `scale` converts natural log to the base."""
  amax = lax.max(x1, x2)
  mul = (lambda v: lax.mul(_const(v, scale), v)) if scale != 1 else (lambda v: v)
  if _is(x1, np.floating):
    delta = lax.sub(x1, x2)
    return lax.select(_isnan(delta), lax.add(x1, x2),  # NaNs, or infinities of one sign
                      lax.add(amax, mul(lax.log1p(exp_fn(lax.neg(lax.abs(delta)))))))
  delta = lax.sub(lax.add(x1, x2), lax.mul(amax, _const(amax, 2)))
  out = lax.add(amax, mul(lax.log1p(exp_fn(delta))))
  return lax.complex(lax.real(out), _wrap_between(lax.imag(out), np.pi * scale))


def logaddexp(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  return _logaddexp_custom(x1, x2)


def logaddexp2(x1, x2, /):
  x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
  return _logaddexp2_custom(x1, x2)


# As JAX: custom_jvp functions (on promoted operands), whose derivatives stay finite where
# an operand is +inf: d/dx1 = exp(x1 - out) with +inf replaced by 0.

def _replace_inf(x):
  return lax.select(isposinf(lax.real(x) if _is(x, np.complexfloating) else x),
                    lax.full_like(x, 0), x)


def _custom_logaddexp(name, exp_fn, scale):

  def primal(x1, x2):
    return _logaddexp(x1, x2, exp_fn, scale)
  primal.__name__ = primal.__qualname__ = name
  fn = custom_jvp(primal)

  def jvp(primals, tangents):
    x1, x2 = primals
    t1, t2 = tangents
    out = fn(x1, x2)
    weight = lambda x: exp_fn(lax.sub(_replace_inf(x), _replace_inf(out)))
    return out, lax.add(lax.mul(_bcast(t1, out), weight(x1)), lax.mul(_bcast(t2, out), weight(x2)))
  jvp.__name__ = jvp.__qualname__ = f"_{name}_jvp"
  fn.defjvp(jvp)
  return fn


def _bcast(t, like):
  return broadcast_to_shape(t, _shape(like)) if _shape(t) != _shape(like) else t


_logaddexp_custom = _custom_logaddexp("logaddexp", lax.exp, 1)
_logaddexp2_custom = _custom_logaddexp("logaddexp2", lax.exp2, 1 / np.log(2))
# lax.cumlogsumexp's jvp: the associative scan of this logaddexp (JAX's rule), registered
# here as primitives cannot import jnp
cumlogsumexp_p.jvp = _scan_jvp(lambda: logaddexp)


# --- trigonometric and hyperbolic ---------------------------------------------------------

sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tan = _unary_inexact("tan", lax.tan)
arcsin = _unary_inexact("arcsin", lax.asin)
arccos = _unary_inexact("arccos", lax.acos)
arctan = _unary_inexact("arctan", lax.atan)
sinh = _unary_inexact("sinh", lax.sinh)
cosh = _unary_inexact("cosh", lax.cosh)
tanh = _unary_inexact("tanh", lax.tanh)
arcsinh = _unary_inexact("arcsinh", lax.asinh)
arctanh = _unary_inexact("arctanh", lax.atanh)


def arccosh(x, /):
  result = lax.acosh(*promote_args_inexact("arccosh", x))
  if _is(result, np.complexfloating):  # NumPy's branch: non-negative real part
    result = _where(lax.lt(lax.real(result), _const(lax.real(result), 0)),
                    lax.neg(result), result)
  return result


def arctan2(x1, x2, /):
  return lax.atan2(*promote_args_inexact("arctan2", x1, x2))


asin, acos, atan = _alias("asin", arcsin), _alias("acos", arccos), _alias("atan", arctan)
asinh, acosh = _alias("asinh", arcsinh), _alias("acosh", arccosh)
atanh, atan2 = _alias("atanh", arctanh), _alias("atan2", arctan2)


def deg2rad(x, /):
  x, = promote_args_inexact("deg2rad", x)
  return lax.mul(x, _const(x, np.pi / 180))


def rad2deg(x, /):
  x, = promote_args_inexact("rad2deg", x)
  return lax.mul(x, _const(x, 180 / np.pi))


degrees, radians = _alias("degrees", rad2deg), _alias("radians", deg2rad)


def hypot(x1, x2, /):
  """sqrt(x1**2 + x2**2), rescaled by a power of two so that the squares can neither
  overflow nor underflow (JAX's lax.hypot)."""
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  if _is(x1, np.complexfloating):
    raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                     "convert to real values first, such as by using abs(x)")
  shape = broadcast_shapes(_shape(x1), _shape(x2))
  x1, x2 = broadcast_to_shape(x1, shape), broadcast_to_shape(x2, shape)
  a1, a2 = lax.abs(x1), lax.abs(x2)
  m = lax.max(a1, a2)
  info = dtypes.finfo(_dtype(x1))
  k = (int(info.nmant) - int(info.minexp) + 1) // 2
  e_hi = (int(info.maxexp) - 1) // 2
  hi = lax.ge(m, _const(x1, 2.0 ** e_hi))
  lo = lax.le(m, _const(x1, 2.0 ** (e_hi - k)))
  s_down, s_up, one = (_full_like(x1, v) for v in (2.0 ** -k, 2.0 ** k, 1.0))
  y1 = lax.select(hi, lax.mul(x1, s_down), lax.select(lo, lax.mul(x1, s_up), x1))
  y2 = lax.select(hi, lax.mul(x2, s_down), lax.select(lo, lax.mul(x2, s_up), x2))
  inv_scale = lax.select(hi, s_up, lax.select(lo, s_down, one))
  r = lax.mul(lax.sqrt(lax.add(lax.square(y1), lax.square(y2))), inv_scale)
  inf = _full_like(x1, np.inf)
  return lax.select(lax.bitwise_or(lax.eq(a1, inf), lax.eq(a2, inf)), inf, r)


def sinc(x, /):
  """sin(pi x) / (pi x), with sin(pi x) evaluated as (-1)^n sin(pi (x - n)), n = round(x),
  so it is accurate near the integers; sinc(0) = 1, sinc(+-inf) = 0."""
  x, = _ensure("sinc", x)
  x, = promote_dtypes_inexact(x)
  dt = _dtype(x)
  if _is(x, np.complexfloating):
    eq_zero = lax.eq(x, _const(x, 0))
    pi_x = lax.mul(_const(x, np.pi), x)
    safe = _where(eq_zero, _const(x, 1), pi_x)
    return _where(eq_zero, _const(x, 1), lax.div(lax.sin(safe), safe))
  if dtypes.finfo(dt).bits < 32:
    x = lax.convert_element_type(x, np.float32)
  n = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
  is_inf = lax.eq(lax.abs(x), _const(x, np.inf))
  r = _where(is_inf, _const(x, 0), lax.sub(x, n))
  s = lax.sin(lax.mul(_const(x, np.pi), r))
  half_n = lax.mul(n, _const(n, 0.5))
  is_odd = lax.ne(lax.round(half_n, lax.RoundingMethod.TO_NEAREST_EVEN), half_n)
  s = _where(is_odd, lax.neg(s), s)
  eq_zero = lax.eq(x, _const(x, 0))
  pi_x = lax.mul(_const(x, np.pi), _where(eq_zero, _const(x, 1), x))
  result = lax.div(s, pi_x)
  # exact values at the integers: 1 at 0, +0.0 at the others
  result = _where(lax.eq(r, _const(r, 0)), _where(eq_zero, _const(x, 1), _const(x, 0)), result)
  return lax.convert_element_type(result, dt) if _dtype(result) != dt else result


# --- extrema and clipping -------------------------------------------------------------------


def maximum(x, y, /):
  return lax.max(*promote_args("maximum", x, y))


def minimum(x, y, /):
  return lax.min(*promote_args("minimum", x, y))


def fmax(x1, x2):
  """Elementwise maximum ignoring NaNs (NaN only where both are NaN)."""
  return _where(logical_or(greater(x1, x2), isnan(x2)), x1, x2)


def fmin(x1, x2):
  """Elementwise minimum ignoring NaNs (NaN only where both are NaN)."""
  return _where(logical_or(less(x1, x2), isnan(x2)), x1, x2)


def clip(arr=None, /, min=None, max=None):  # noqa: A002 - NumPy's argument names
  """Limit the values of `arr` to [min, max] (either bound may be None)."""
  if arr is None:
    raise ValueError("No input was provided to the clip function.")
  check_arraylike("clip", arr)
  if any(t is not None and _is(t, np.complexfloating) for t in (arr, min, max)):
    raise ValueError("Clip received a complex value either through the input or the "
                     "min/max keywords. Complex values have no ordering and cannot be "
                     "clipped. Please convert to a real value or array by taking the real "
                     "or imaginary components via jax.numpy.real/imag respectively.")
  if min is not None:
    arr = maximum(min, arr)
  if max is not None:
    arr = minimum(max, arr)
  return _asarray(arr)


# --- floating point -------------------------------------------------------------------------


def heaviside(x1, x2, /):
  """0 for x1 < 0, x2 for x1 == 0, 1 for x1 > 0 (NaN stays NaN)."""
  x1, x2 = _ensure("heaviside", x1, x2)
  x1, x2 = promote_dtypes_inexact(x1, x2)
  zero = _const(x1, 0)
  return _where(lax.lt(x1, zero), zero,
                _where(lax.gt(x1, zero), _const(x1, 1), _where(_isnan(x1), x1, x2)))


def signbit(x, /):
  """Whether the sign bit is set (so signbit(-0.0) and signbit(-nan) are True)."""
  x, = promote_args("signbit", x)
  dt = _dtype(x)
  if dtypes.issubdtype(dt, np.integer):
    return lax.lt(x, _strong_const(x, 0))
  if dt == np.bool_:
    return _full_like(x, False, dtype=np.bool_)
  if not dtypes.issubdtype(dt, np.floating):
    raise ValueError(f"jax.numpy.signbit is not well defined for {dt}")
  info = dtypes.finfo(dt)
  as_int = lax.bitcast_convert_type(x, np.dtype(f"int{info.bits}"))
  shift = np.array(int(info.nexp) + int(info.nmant), as_int.dtype)[()]
  return lax.convert_element_type(lax.shift_right_arithmetic(as_int, shift), np.bool_)


def copysign(x1, x2, /):
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  if _is(x1, np.complexfloating):
    raise TypeError("copysign does not support complex-valued inputs")
  return _where(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


def nextafter(x, y, /):
  return lax.nextafter(*promote_args_inexact("nextafter", x, y))


def spacing(x, /):
  """The distance from x to the next representable number away from zero."""
  x, = promote_args_inexact("spacing", x)
  if _is(x, np.complexfloating):
    raise ValueError("jnp.spacing is not defined for complex inputs.")
  inf = _const(x, np.inf)
  if _dtype(x) == np.float16:
    return lax.sub(lax.nextafter(x, inf), x)
  result = lax.sub(lax.nextafter(x, copysign(inf, x)), x)
  smallest_subnormal = dtypes.finfo(_dtype(x)).smallest_subnormal  # a strong NumPy scalar
  return _where(lax.eq(result, _const(result, 0)), copysign(smallest_subnormal, x), result)


def isnan(x, /):
  x, = _ensure("isnan", x)
  return _isnan(x)


def isfinite(x, /):
  x, = _ensure("isfinite", x)
  if _is(x, np.floating):
    return lax.is_finite(x)
  if _is(x, np.complexfloating):
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  return _full_like(x, True, dtype=np.bool_)


def isinf(x, /):
  x, = _ensure("isinf", x)
  if _is(x, np.floating):
    return lax.eq(lax.abs(x), _strong_const(x, np.inf))
  if _is(x, np.complexfloating):
    re, im = lax.real(x), lax.imag(x)
    return lax.bitwise_or(lax.eq(lax.abs(re), _strong_const(re, np.inf)),
                          lax.eq(lax.abs(im), _strong_const(im, np.inf)))
  return _full_like(x, False, dtype=np.bool_)


def _isposneginf(infinity, x, out):
  if out is not None:
    raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
  if _is(x, np.floating):
    return lax.eq(x, _strong_const(x, infinity))
  if _is(x, np.complexfloating):
    raise ValueError("isposinf/isneginf are not well defined for complex types")
  return _full_like(x, False, dtype=np.bool_)


def isposinf(x, /, out=None):
  x, = _ensure("isposinf", x)
  return _isposneginf(np.inf, x, out)


def isneginf(x, /, out=None):
  x, = _ensure("isneginf", x)
  return _isposneginf(-np.inf, x, out)


def modf(x, /, out=None):
  """(fractional part, integral part), both with the sign of x."""
  x, = _ensure("modf", x)
  x, = promote_dtypes_inexact(x)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  whole = _where(lax.ge(x, _const(x, 0)), floor(x), ceil(x))
  return lax.sub(x, whole), whole


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """Replace NaN with `nan`, +inf with `posinf` (default: the largest finite value) and
  -inf with `neginf` (default: the most negative finite value)."""
  del copy
  x, = _ensure("nan_to_num", x)
  dt = _dtype(x)
  if not dtypes.issubdtype(dt, np.inexact):
    return x
  if dtypes.issubdtype(dt, np.complexfloating):
    return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                       nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
  info = dtypes.finfo(dt)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  as_dt = lambda v: lax.convert_element_type(v, dt)
  out = _where(isnan(x), as_dt(nan), x)
  out = _where(isposinf(out), as_dt(posinf), out)
  return _where(isneginf(out), as_dt(neginf), out)


def i0(x):
  """Modified Bessel function of the first kind, order 0: exp(|x|) * bessel_i0e(x)."""
  x, = promote_args_inexact("i0", x)
  if not _is(x, np.floating):
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {_dtype(x)}")
  abs_x = lax.abs(x)
  return lax.mul(lax.exp(abs_x), lax.bessel_i0e(abs_x))


# --- complex --------------------------------------------------------------------------------


def real(val, /):
  val, = _ensure("real", val)
  return lax.real(val) if _is(val, np.complexfloating) else val


def imag(val, /):
  val, = _ensure("imag", val)
  return lax.imag(val) if _is(val, np.complexfloating) else _full_like(val, 0)


def conjugate(x, /):
  x, = _ensure("conjugate", x)
  return lax.conj(x) if _is(x, np.complexfloating) else x


def conj(x, /):
  return conjugate(x)


def angle(z, deg=False):
  """The argument of complex z (radians, or degrees with deg=True)."""
  z, = _ensure("angle", z)
  re, im = real(z), imag(z)
  dt = _dtype(re)
  if not dtypes.issubdtype(dt, np.inexact) or (_is(z, np.floating) and not _shape(z)):
    dt = dtypes.default_float_dtype()
    re, im = lax.convert_element_type(re, dt), lax.convert_element_type(im, dt)
  result = lax.atan2(im, re)
  return degrees(result) if deg else result


# --- comparison and logic ---------------------------------------------------------------


def _comparison(name, lax_fn, complex_order=False, keys_fn=None):
  """`keys_fn`: how typed PRNG keys compare (equality only, as in JAX)."""
  def fn(x, y, /):
    x, y = promote_args(name, x, y)
    if complex_order and _is(x, np.complexfloating):  # lexicographic, as NumPy
      return lax.select(lax.eq(lax.real(x), lax.real(y)), lax_fn(lax.imag(x), lax.imag(y)),
                        lax_fn(lax.real(x), lax.real(y)))
    if keys_fn is not None and isinstance(x, PRNGKeyArray):
      return keys_fn(x, y)
    return lax_fn(x, y)
  return _named(name, fn)


equal = _comparison("equal", lax.eq, keys_fn=operator.eq)
not_equal = _comparison("not_equal", lax.ne, keys_fn=operator.ne)
less = _comparison("less", lax.lt, complex_order=True)
less_equal = _comparison("less_equal", lax.le, complex_order=True)
greater = _comparison("greater", lax.gt, complex_order=True)
greater_equal = _comparison("greater_equal", lax.ge, complex_order=True)


def _to_bool(x):
  return x if _dtype(x) == np.bool_ else lax.ne(x, _const(x, 0))


def _logical(name, lax_fn):
  return _named(name, lambda x, y, /: lax_fn(*map(_to_bool, promote_args(name, x, y))))


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x, /):
  return lax.bitwise_not(*map(_to_bool, promote_args("logical_not", x)))


# --- bitwise ----------------------------------------------------------------------------------


def _bitwise(name, lax_fn):
  return _named(name, lambda x, y, /: lax_fn(*promote_args(name, x, y)))


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor)


def bitwise_not(x, /):
  return lax.bitwise_not(*promote_args("bitwise_not", x))


invert, bitwise_invert = _alias("invert", bitwise_not), _alias("bitwise_invert", bitwise_not)


def left_shift(x, y, /):
  return lax.shift_left(*promote_args_numeric("left_shift", x, y))


def right_shift(x1, x2, /):
  """Arithmetic shift for signed integers, logical for unsigned (as NumPy)."""
  x1, x2 = promote_args_numeric("right_shift", x1, x2)
  if _is(x1, np.unsignedinteger):
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


bitwise_left_shift = _alias("bitwise_left_shift", left_shift)
bitwise_right_shift = _alias("bitwise_right_shift", right_shift)


def bitwise_count(x, /):
  """The number of 1 bits in |x|, as uint8."""
  x, = promote_args_numeric("bitwise_count", x)
  return lax.convert_element_type(lax.population_count(absolute(x)), np.uint8)


def _euclid_steps(dt) -> int:
  """An upper bound on the steps of Euclid's algorithm for values of dtype `dt`: the
  index of the first Fibonacci number above the largest value (Lame's theorem)."""
  limit, a, b, k = 1 << dtypes.iinfo(dt).bits, 1, 1, 1
  while b <= limit:
    a, b, k = b, a + b, k + 1
  return k


def gcd(x1, x2):
  """Greatest common divisor of |x1| and |x2| (gcd(0, 0) = 0).

  Euclid's algorithm unrolled over its worst-case step count for the dtype (JAX uses a
  while_loop; a loop primitive can replace this once control flow lands)."""
  x1, x2 = _ensure("gcd", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  if not _is(x1, np.integer):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  shape = broadcast_shapes(_shape(x1), _shape(x2))
  a, b = (broadcast_to_shape(absolute(v), shape) for v in (x1, x2))
  zero = _const(a, 0)
  for _ in range(_euclid_steps(_dtype(a))):
    nonzero = lax.ne(b, zero)
    a, b = lax.select(nonzero, b, a), _where(nonzero, lax.rem(a, b), zero)
  return a


def lcm(x1, x2):
  """Least common multiple of |x1| and |x2| (0 if either is 0)."""
  x1, x2 = _ensure("lcm", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  x1, x2 = absolute(x1), absolute(x2)
  if not _is(x1, np.integer):
    raise ValueError("Arguments to jax.numpy.lcm must be integers.")
  d = gcd(x1, x2)
  return _where(lax.eq(d, _const(d, 0)), _const(d, 0), multiply(x1, floor_divide(x2, d)))

"""Arithmetic primitives: add, sub, mul (with JAX's `out_dtype`), div, rem, max, min,
nextafter, fma (ember's own), integer_pow, neg, sign, abs, square, reciprocal; rounding
(floor, ceil, round, is_finite); and the parts of complex numbers (complex, real, imag,
conj). Each with its jvp and, where linear, its transpose (JAX's lax.py rules).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src import lower as lowering
from ember._src.lower import complex_math
from ember._src.core import ShapedArray
from ember._src.transforms import ad, batching, custom_derivatives
from ember._src.primitives import (ANY, COMPLEX, FLOAT, INEXACT, INT, INTS, NUMERIC,
                                   bind_elementwise, broadcasting_shape, check_dtype,
                                   check_same_dtypes, declare, dtype_kind, naryop,
                                   strict_scalars, unary)
from ember._src.primitives.elementwise.common import (_abs_dtype, _bcast_like, _binary_fn,
                                                      _strong_zeros, _unary_fn, _zeros,
                                                      unbroadcast)
from ember._src.primitives.elementwise.convert import convert_element_type
from ember._src.primitives.elementwise.logical import eq, ge, gt, select
from ember._src.reference import elementwise as reference_elementwise
from ember._src.reference.elementwise import RoundingMethod

__all__ = [
    "add", "sub", "mul", "div", "rem", "integer_pow", "max", "min", "neg", "abs", "sign",
    "square", "reciprocal", "nextafter",
    # rounding
    "floor", "ceil", "round", "RoundingMethod", "is_finite",
    # complex
    "real", "imag", "conj", "complex",
]

_abs = builtins.abs  # `abs` below is lax.abs


# --- arithmetic ---------------------------------------------------------------------------

add_p = naryop("add", reference_elementwise.add, NUMERIC)
sub_p = naryop("sub", reference_elementwise.sub, NUMERIC)
div_p = naryop("div", reference_elementwise.div, NUMERIC)
rem_p = naryop("rem", reference_elementwise.rem, INTS + FLOAT)
max_p = naryop("max", reference_elementwise.max, ANY)
min_p = naryop("min", reference_elementwise.min, ANY)
nextafter_p = naryop("nextafter", reference_elementwise.nextafter, FLOAT)
for _p, _op in ((add_p, "add"), (sub_p, "subtract"), (div_p, "divide"), (rem_p, "remainder"),
                (max_p, "maximum"), (min_p, "minimum"), (nextafter_p, "next-after")):
  _p.lower = complex_math.rule(_op)  # integer div/rem: XLA's (truncating; x/0 = -1)

add = _binary_fn(add_p, "add")
custom_derivatives.lax_add = add   # custom_jvp.defjvps sums its terms with it
sub = _binary_fn(sub_p, "sub")
div = _binary_fn(div_p, "div")
rem = _binary_fn(rem_p, "rem")
max = _binary_fn(max_p, "max")  # noqa: A001 - lax.max
min = _binary_fn(min_p, "min")  # noqa: A001 - lax.min
nextafter = _binary_fn(nextafter_p, "nextafter")


# --- differentiation rules of the arithmetic primitives (JAX's lax.py rules) ---------------

def _add_sub_jvp(prim, sign_y):
  def rule(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = prim.bind(x, y)
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
      return out, ad.Zero.from_value(out)
    if type(ty) is ad.Zero:
      return out, _bcast_like(tx, out)
    if type(tx) is ad.Zero:
      return out, _bcast_like(sign_y(ty), out)
    return out, prim.bind(tx, ty)
  return rule


def _add_sub_transpose(sign_y):
  def rule(ct, x, y):
    return [unbroadcast(x.aval, ct) if ad.is_undefined_primal(x) else None,
            unbroadcast(y.aval, sign_y(ct)) if ad.is_undefined_primal(y) else None]
  return rule


add_p.jvp = _add_sub_jvp(add_p, lambda t: t)
add_p.transpose = _add_sub_transpose(lambda t: t)
sub_p.jvp = _add_sub_jvp(sub_p, lambda t: neg(t))
sub_p.transpose = _add_sub_transpose(lambda t: neg(t))
ad.defjvp(div_p, lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), integer_pow(y, -2)))


def _div_transpose(ct, x, y):
  if ad.is_undefined_primal(y):
    raise ValueError("div is not linear in its divisor: cannot transpose it")
  return [unbroadcast(x.aval, div(ct, y)), None]


div_p.transpose = _div_transpose
ad.defjvp(rem_p, lambda g, x, y: _bcast_like(g, rem(x, y)),
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))


def _balanced_cmp(a, b):
  """1 where a > b, 1/2 where a == b, else 0 (NaN too): the share of max(a, b)'s derivative
  that goes to a (JAX 0.12's rule). Its constants are strongly typed, so the cotangent of a
  weakly typed operand is strong, as JAX's."""
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  a_wins = gt(a, b)
  one, half, zero = (full_like(a_wins, v, dtype=core.get_aval(a).dtype) for v in (1, 0.5, 0))
  return select(a_wins, one, select(eq(a, b), half, zero))


def _balanced_eq(x, z, y):
  """1 where x alone attains the max/min z, 1/2 where x and y both do, else 0: complex
  operands' share (JAX cannot compare them and raises; ember differentiates them)."""
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return select(eq(x, z), select(eq(y, z), full_like(z, 0.5), full_like(z, 1)), _zeros(z))


def _share(x, y, ans, a, b):
  """x's share of the derivative of ans = max(x, y) or min(x, y): `_balanced_cmp(a, b)`."""
  if dtypes.dtype_kind(core.get_aval(x).dtype) == "c":
    return _balanced_eq(x, ans, y)
  return _balanced_cmp(a, b)


ad.defjvp2(max_p, lambda g, ans, x, y: mul(g, _share(x, y, ans, x, y)),
           lambda g, ans, x, y: mul(g, _share(y, x, ans, y, x)))
ad.defjvp2(min_p, lambda g, ans, x, y: mul(g, _share(x, y, ans, y, x)),
           lambda g, ans, x, y: mul(g, _share(y, x, ans, x, y)))
# as JAX 0.12: the step's tangent is x's (a one-ulp move is locally the identity), none for y
ad.defjvp2(nextafter_p, lambda g, ans, x, y: _bcast_like(g, ans), None)

# --- fma: one rounding of x * y + z (ember's own; JAX's lax has none) ------------------
# ember's random samplers reproduce XLA:CPU's float32 log/exp/erf_inv op for op, and XLA's
# code contracts multiply-adds; one primitive (llvm.fma when compiled) keeps those
# formulas a few equations long instead of an error-free emulation of ~40 each.

def _fma_abstract_eval(*avals):
  check_same_dtypes("fma", avals)
  if avals[0].dtype not in (np.float32, np.float64):
    raise TypeError(f"fma is defined for float32 and float64 operands (ember's samplers use "
                    f"it), got {avals[0].dtype}")
  return ShapedArray(broadcasting_shape("fma", avals), avals[0].dtype,
                     all(a.weak_type for a in avals))


fma_p = declare("fma", _fma_abstract_eval, reference_elementwise.fma)
fma_p.batch = batching.broadcasting(fma_p)
fma_p.lower = lowering.elementwise("fma")


def fma(x, y, z):
  """x * y + z rounded once, for float32 or float64 operands of one shape (or scalars)."""
  return bind_elementwise(fma_p, x, y, z)


ad.defjvp(fma_p, lambda g, x, y, z: mul(g, y), lambda g, x, y, z: mul(x, g),
          lambda g, x, y, z: g)


# mul carries JAX's `out_dtype` param (hidden when None): with a dtype, the operands are
# cast to it before multiplying.

def _mul_pp(eqn, ctx):
  params = {k: v for k, v in eqn.params.items() if not (k == "out_dtype" and v is None)}
  return core._pp_eqn(eqn, ctx, params)


mul_p = naryop("mul", reference_elementwise.mul, NUMERIC)
mul_p.pp_rule = _mul_pp
_mul_same_dtype_rule = mul_p.abstract_eval


def _mul_abstract_eval(x, y, *, out_dtype=None):
  if out_dtype is None:
    return _mul_same_dtype_rule(x, y)
  for i, a in enumerate((x, y)):
    check_dtype("mul", a, NUMERIC, argname=f"operand {i}")
  return ShapedArray(broadcasting_shape("mul", (x, y)), out_dtype,
                     x.weak_type and y.weak_type)


mul_p.abstract_eval = _mul_abstract_eval
mul_p.lower = lambda ctx, x, y, *, out_dtype=None: ctx.mul(
    ctx.convert(x, ctx.avals_out[0].dtype), ctx.convert(y, ctx.avals_out[0].dtype))


def mul(x, y, *, out_dtype=None):
  if out_dtype is not None:
    out_dtype = dtypes.check_user_dtype(out_dtype, "mul")
    return mul_p.bind(x, y, out_dtype=out_dtype)
  return bind_elementwise(mul_p, x, y, out_dtype=None)


strict_scalars(mul_p, mul)


ad.defjvp(mul_p, lambda g, x, y, *, out_dtype=None: mul_p.bind(g, y, out_dtype=out_dtype),
          lambda g, x, y, *, out_dtype=None: mul_p.bind(x, g, out_dtype=out_dtype))


def _mul_transpose(ct, x, y, *, out_dtype=None):
  if ad.is_undefined_primal(x) and ad.is_undefined_primal(y):
    raise ValueError("mul of two linear values is not linear: cannot transpose it")
  if ad.is_undefined_primal(x):
    return [_convert_like(unbroadcast(x.aval, mul_p.bind(ct, y, out_dtype=out_dtype)),
                          x.aval), None]
  return [None, _convert_like(unbroadcast(y.aval, mul_p.bind(x, ct, out_dtype=out_dtype)),
                              y.aval)]


def _convert_like(v, aval):
  """`v` in the dtype of `aval` (mul with out_dtype computes in another dtype)."""
  if core.get_aval(v).dtype == aval.dtype:
    return v
  return convert_element_type(v, aval.dtype, aval.weak_type)


mul_p.transpose = _mul_transpose


def _integer_pow_abstract_eval(x, *, y):
  check_dtype("integer_pow", x, NUMERIC)
  if y < 0 and dtype_kind(x.dtype) in INTS:
    raise TypeError(f"Integers cannot be raised to negative powers, got "
                    f"integer_pow({x.str_short()}, {y})")
  return x


integer_pow_p = declare("integer_pow", _integer_pow_abstract_eval,
                        reference_elementwise.integer_pow)
integer_pow_p.batch = batching.vectorized(integer_pow_p)


def _integer_pow_lower(ctx, x, *, y):
  """Repeated squaring (the same multiplications as the impl); 1/x**|y| for y < 0."""
  if y == 0:
    return ctx.full_like(1, x)
  n, acc = _abs(y), None
  while n:
    if n & 1:
      acc = x if acc is None else ctx.mul(acc, x)
    n >>= 1
    if n:
      x = ctx.mul(x, x)
  return ctx.div(ctx.full_like(1, acc), acc) if y < 0 else acc


integer_pow_p.lower = _integer_pow_lower


def integer_pow(x, y: int):
  """x ** y for a static Python int y (`integer_pow[y=3]`)."""
  try:
    y = operator.index(y)
  except TypeError:
    raise TypeError(f"lax.integer_pow requires an integer exponent y, got {y!r} of type "
                    f"{type(y).__name__}; use lax.pow for non-integer exponents.") from None
  return integer_pow_p.bind(x, y=y)


def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return _zeros(g)
  return mul(g, mul(y, x if y == 2 else integer_pow(x, y - 1)))  # as JAX: `mul 2.0 x`


ad.defjvp(integer_pow_p, _integer_pow_jvp)


neg_p = unary("neg", reference_elementwise.neg, NUMERIC)
sign_p = unary("sign", reference_elementwise.sign, NUMERIC)
abs_p = unary("abs", reference_elementwise.abs, INT + INEXACT, out_dtype=_abs_dtype)
square_p = unary("square", reference_elementwise.square, NUMERIC)
for _p, _op in ((neg_p, "negate"), (abs_p, "abs")):
  _p.lower = lowering.elementwise(_op)
sign_p.lower = lambda ctx, x: (  # StableHLO's sign takes no unsigned ints: x != 0 then
    ctx.convert(ctx.compare(x, ctx.constant(0, x.dtype), "NE"), x.dtype)
    if dtype_kind(x.dtype) == "u" else ctx.elementwise("sign", x))
square_p.lower = lambda ctx, x: ctx.mul(x, x)

neg = _unary_fn(neg_p, "neg")
sign = _unary_fn(sign_p, "sign")
abs = _unary_fn(abs_p, "abs")  # noqa: A001 - lax.abs
square = _unary_fn(square_p, "square")


def _replace_zero(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return select(eq(x, _zeros(x)), full_like(x, 1), x)


def _abs_jvp(g, ans, x):
  if dtype_kind(core.get_aval(x).dtype) == COMPLEX:  # d|x| = Re(conj(x) dx) / |x|
    return real(mul(g, div(conj(x), convert_element_type(_replace_zero(ans),
                                                         core.get_aval(x).dtype))))
  return select(ge(x, _zeros(x)), g, neg(g))


ad.deflinear(neg_p, lambda ct: [neg(ct)])
ad.defjvp_zero(sign_p)
ad.defjvp2(abs_p, _abs_jvp)
ad.defjvp(square_p, lambda g, x: mul(g, mul(2, x)))


def reciprocal(x):
  """1 / x, as JAX: `integer_pow[y=-1]`."""
  return integer_pow(x, -1)


# --- rounding --------------------------------------------------------------------------------

floor_p = unary("floor", reference_elementwise.floor, FLOAT)
ceil_p = unary("ceil", reference_elementwise.ceil, FLOAT)
round_p = unary("round", reference_elementwise.round, FLOAT)
is_finite_p = unary("is_finite", reference_elementwise.is_finite, FLOAT,
                    out_dtype=lambda _: np.dtype(np.bool_))
floor_p.lower = lowering.elementwise("floor")
ceil_p.lower = lowering.elementwise("ceil")
is_finite_p.lower = lowering.elementwise("is-finite")
round_p.lower = lambda ctx, x, *, rounding_method: ctx.elementwise(
    "round-nearest-even" if rounding_method == RoundingMethod.TO_NEAREST_EVEN
    else "round-nearest-afz", x)

floor = _unary_fn(floor_p, "floor")
ceil = _unary_fn(ceil_p, "ceil")
is_finite = _unary_fn(is_finite_p, "is_finite")


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001 - lax.round
  """Round to the nearest integer; halfway values away from zero unless
  `rounding_method=RoundingMethod.TO_NEAREST_EVEN`."""
  return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


for _p in (floor_p, ceil_p, round_p):  # piecewise constant
  ad.defjvp_zero(_p)


# --- complex ---------------------------------------------------------------------------------

def _complex_abstract_eval(x, y):
  for i, a in enumerate((x, y)):
    if a.dtype not in (np.float32, np.float64):
      raise TypeError(f"complex does not accept dtype {a.dtype.name} at position {i}. "
                      f"Accepted dtypes at position {i} are subtypes of float32, float64.")
  check_same_dtypes("complex", (x, y))
  return ShapedArray(broadcasting_shape("complex", (x, y)),
                     reference_elementwise.complex_dtype(x.dtype), x.weak_type and y.weak_type)


def _conj_abstract_eval(x, *, input_dtype):
  if x.dtype not in (np.float32, np.float64) and dtype_kind(x.dtype) != "c":
    raise TypeError(f"conj does not accept dtype {x.dtype.name}. Accepted dtypes are "
                    "subtypes of float32, float64, complexfloating.")
  return x.update(dtype=reference_elementwise.complex_dtype(x.dtype))


complex_p = declare("complex", _complex_abstract_eval, reference_elementwise.complex)
conj_p = declare("conj", _conj_abstract_eval, reference_elementwise.conj)
complex_p.batch = batching.broadcasting(complex_p)
conj_p.batch = batching.vectorized(conj_p)
real_p = unary("real", reference_elementwise.real, COMPLEX, out_dtype=_abs_dtype)
imag_p = unary("imag", reference_elementwise.imag, COMPLEX, out_dtype=_abs_dtype)
complex_p.lower = lowering.elementwise("complex")
real_p.lower = lowering.elementwise("real")
imag_p.lower = lowering.elementwise("imag")


def _conj_lower(ctx, x, *, input_dtype):
  out = ctx.avals_out[0].dtype
  if dtype_kind(x.dtype) != COMPLEX:
    return ctx.convert(x, out)
  re, im = (ctx.elementwise(op, x, dtype=_abs_dtype(x.dtype)) for op in ("real", "imag"))
  return ctx.elementwise("complex", re, ctx.elementwise("negate", im), dtype=out)


conj_p.lower = _conj_lower

real = _unary_fn(real_p, "real")
imag = _unary_fn(imag_p, "imag")
complex = _binary_fn(complex_p, "complex")  # noqa: A001 - lax.complex


def conj(x):
  """Complex conjugate; a real operand gives a complex result (`conj[input_dtype=...]`)."""
  return conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


# the zeros are strongly typed (JAX's are np.zeros), so the complex cotangent is not weak:
# grad of a function of a Python complex returns a strongly typed complex64, as in JAX
ad.deflinear(real_p, lambda ct: [complex(ct, _strong_zeros(ct))])
ad.deflinear(imag_p, lambda ct: [complex(_strong_zeros(ct), neg(ct))])
ad.deflinear2(complex_p, lambda ct, x, y: [
    unbroadcast(x.aval, real(ct)) if ad.is_undefined_primal(x) else None,
    unbroadcast(y.aval, neg(imag(ct))) if ad.is_undefined_primal(y) else None])
ad.deflinear(conj_p, lambda ct, *, input_dtype: [
    conj(ct) if dtype_kind(input_dtype) == COMPLEX else real(ct)])


# fma rounds once both ways: the NumPy reference computes the compiled bits, so eager calls
# may switch to compiled code at any time (core/primitive.py's `reference_exact`)
fma_p.reference_exact = True

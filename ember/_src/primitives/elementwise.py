"""Elementwise primitives: arithmetic, transcendental, comparison, bitwise, select, convert.

Each primitive: its declaration (shape/dtype rule + NumPy impl) and the `lax` function.
Names, params and printed forms follow JAX 0.12 (`sin a`, `integer_pow[y=2] a`,
`round[rounding_method=0] a`, `select_n p a b`, `and a b`, `not a`).

The NumPy impls, XLA's semantics of each op, are reference/elementwise.py's kernels (eager
mode and the HLO evaluator share them).
"""
from __future__ import annotations

import builtins
import enum
import math
import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src import lower as lowering
from ember._src.lower import complex_math
from ember._src.core import ShapedArray
from ember._src.transforms import ad, batching, custom_derivatives, remat
from ember._src.primitives import (ANY, BOOL, COMPLEX, FLOAT, INEXACT, INT, INTS, NUMERIC,
                                   bind_elementwise, broadcasting_shape, check_dtype,
                                   check_same_dtypes, declare, dtype_kind, naryop,
                                   strict_scalars, unary)
from ember._src.reference import elementwise as reference_elementwise
from ember._src.reference.elementwise import RoundingMethod

__all__ = [
    "convert_element_type", "bitcast_convert_type", "reduce_precision",
    # arithmetic
    "add", "sub", "mul", "div", "rem", "pow", "integer_pow", "max", "min", "neg", "abs",
    "sign", "square", "reciprocal", "nextafter",
    # rounding
    "floor", "ceil", "round", "RoundingMethod", "is_finite",
    # transcendental
    "exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "sqrt",
    "rsqrt", "cbrt", "Tolerance", "AccuracyMode",
    # special functions
    "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e",
    # complex
    "real", "imag", "conj", "complex",
    # bitwise
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "population_count", "clz",
    # comparison and selection
    "eq", "ne", "lt", "le", "gt", "ge", "select", "select_n", "clamp",
]

_abs = builtins.abs  # `abs` below is lax.abs


# --- accuracy (API compatibility: ember's reference impls are always most accurate) -----

class Tolerance:
  """Requested tolerances for a unary function (`lax.Tolerance`); at most two of them."""

  def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
    if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
      raise ValueError("Tolerances must be non-negative.")
    if atol == 0.0 and rtol == 0.0 and ulps == 0:
      raise ValueError("At least one of atol, rtol, or ulps must be set.")
    self.atol, self.rtol, self.ulps = atol, rtol, ulps


class AccuracyMode(enum.Enum):
  HIGHEST = 1
  DEFAULT = 2


def _check_accuracy(accuracy):
  if accuracy is not None and not isinstance(accuracy, (Tolerance, AccuracyMode)):
    raise TypeError(f"accuracy must be None, a lax.Tolerance or a lax.AccuracyMode, got "
                    f"{accuracy!r}")
  return accuracy


def _hide_none_accuracy_pp(eqn, ctx):
  """JAX prints `sin a`, not `sin[accuracy=None] a`."""
  params = {k: v for k, v in eqn.params.items() if not (k == "accuracy" and v is None)}
  return core._pp_eqn(eqn, ctx, params)


def _unary_with_accuracy(name, impl, kinds=INEXACT):
  p = unary(name, impl, kinds)
  p.pp_rule = _hide_none_accuracy_pp

  def lax_fn(x, *, accuracy=None):
    return p.bind(x, accuracy=_check_accuracy(accuracy))
  lax_fn.__name__ = lax_fn.__qualname__ = name
  return p, lax_fn


def _unary_fn(p, name):
  def lax_fn(x):
    return p.bind(x)
  lax_fn.__name__ = lax_fn.__qualname__ = name
  return lax_fn


def _binary_fn(p, name):
  def lax_fn(x, y):
    return bind_elementwise(p, x, y)
  lax_fn.__name__ = lax_fn.__qualname__ = name
  return strict_scalars(p, lax_fn)


# --- convert_element_type -------------------------------------------------------------

def _convert_abstract_eval(x, *, new_dtype, weak_type):
  return x.update(dtype=new_dtype, weak_type=weak_type)


convert_element_type_p = declare("convert_element_type", _convert_abstract_eval,
                                 reference_elementwise.convert_element_type)
convert_element_type_p.fold_literals = True  # converting a Python scalar stays a Literal
convert_element_type_p.batch = batching.vectorized(convert_element_type_p)


def _convert_lower(ctx, x, *, new_dtype, weak_type):
  if dtype_kind(x.dtype) == COMPLEX and dtype_kind(new_dtype) != COMPLEX:
    x = ctx.elementwise("real", x, dtype=_abs_dtype(x.dtype))  # drop the imaginary part
  return ctx.convert(x, new_dtype)


convert_element_type_p.lower = _convert_lower


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
  (x,), (t,) = primals, tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
  if type(t) is ad.Zero or not ad.is_differentiable(new_dtype):
    return out, ad.Zero.from_value(out)
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = lambda ct, x, *, new_dtype, weak_type: [
    convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type)]


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Elementwise cast to `new_dtype` (canonicalized for the x64 flag)."""
  new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type")
  aval = core.get_aval(operand)
  if (aval.dtype, aval.weak_type) == (new_dtype, bool(weak_type)) and not dtypes.is_python_scalar(operand) \
      and not isinstance(operand, (np.ndarray, np.generic)):
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


# --- bitcast_convert_type ----------------------------------------------------------------

def _bitcast_abstract_eval(x, *, new_dtype):
  old, new = x.dtype, np.dtype(new_dtype)
  if (dtype_kind(old) in BOOL + COMPLEX or dtype_kind(new) in BOOL + COMPLEX) and old != new:
    raise TypeError("lax.bitcast_convert_type does not support bool or complex values "
                    "unless the operand and destination types match. Got operand "
                    f"dtype={old}, new_dtype={new}. Consider using the arr.view() method "
                    "instead.")
  old_bits, new_bits = reference_elementwise.bits(old), reference_elementwise.bits(new)
  if old_bits == new_bits:
    shape = x.shape
  elif old_bits > new_bits:
    shape = (*x.shape, old_bits // new_bits)
  else:
    last = x.shape[-1] if x.shape else 1
    if last * old_bits != new_bits:
      raise ValueError(f"Attempting to convert array of shape {x.shape} from {old} of size "
                       f"{old_bits} bits to {new} of size {new_bits}, bits but {last} * "
                       f"{old_bits} != {new_bits}")
    shape = x.shape[:-1]
  return ShapedArray(shape, new, weak_type=False)


bitcast_convert_type_p = declare("bitcast_convert_type", _bitcast_abstract_eval,
                                 reference_elementwise.bitcast_convert_type)


def _bitcast_batch(axis_data, vals, dims, *, new_dtype):
  """A width change adds/removes the LAST dimension: keep the batch dimension off it."""
  (x,), (d,) = vals, dims
  bits = reference_elementwise.bits
  if d == batching.ndim_of(x) - 1 and bits(core.get_aval(x).dtype) != bits(new_dtype):
    x, d = batching.moveaxis(x, d, 0), 0
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p.batch = _bitcast_batch
ad.defjvp_zero(bitcast_convert_type_p)  # a reinterpretation of bits: not differentiable
bitcast_convert_type_p.lower = lambda ctx, x, *, new_dtype: (
    x if x.dtype == np.dtype(new_dtype) else ctx.emit("bitcast-convert", ctx.out_shape(), [x]))


def bitcast_convert_type(operand, new_dtype):
  """Reinterpret the bits of `operand` as `new_dtype` (a size change adds/removes a last
  dimension, as in XLA)."""
  new_dtype = dtypes.check_user_dtype(new_dtype, "bitcast_convert_type")
  return bitcast_convert_type_p.bind(operand, new_dtype=new_dtype)


# --- reduce_precision ----------------------------------------------------------------------

def _reduce_precision_abstract_eval(x, *, exponent_bits, mantissa_bits):
  check_dtype("reduce_precision", x, FLOAT)
  if exponent_bits < 1:
    raise ValueError(f"reduce_precision: exponent_bits must be positive; got {exponent_bits}")
  if mantissa_bits < 0:
    raise ValueError(f"reduce_precision: mantissa_bits must be non-negative; got "
                     f"{mantissa_bits}")
  return x


reduce_precision_p = declare("reduce_precision", _reduce_precision_abstract_eval,
                             reference_elementwise.reduce_precision)
reduce_precision_p.batch = batching.vectorized(reduce_precision_p)
ad.deflinear(reduce_precision_p, lambda ct, **params: [reduce_precision_p.bind(ct, **params)])
reduce_precision_p.lower = lambda ctx, x, *, exponent_bits, mantissa_bits: ctx.emit(
    "reduce-precision", x.shape, [x],
    {"exponent_bits": exponent_bits, "mantissa_bits": mantissa_bits})
remat.reduce_precision_p = reduce_precision_p   # remat rounds residuals with it


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """Round `operand` to a float format with the given exponent and mantissa bits."""
  return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                 mantissa_bits=operator.index(mantissa_bits))


# --- arithmetic ---------------------------------------------------------------------------

add_p = naryop("add", reference_elementwise.add, NUMERIC)
sub_p = naryop("sub", reference_elementwise.sub, NUMERIC)
div_p = naryop("div", reference_elementwise.div, NUMERIC)
rem_p = naryop("rem", reference_elementwise.rem, INTS + FLOAT)
max_p = naryop("max", reference_elementwise.max, ANY)
min_p = naryop("min", reference_elementwise.min, ANY)
nextafter_p = naryop("nextafter", reference_elementwise.nextafter, FLOAT)
atan2_p = naryop("atan2", reference_elementwise.atan2, INEXACT)
for _p, _op in ((add_p, "add"), (sub_p, "subtract"), (div_p, "divide"), (rem_p, "remainder"),
                (max_p, "maximum"), (min_p, "minimum"), (nextafter_p, "next-after"),
                (atan2_p, "atan2")):
  _p.lower = complex_math.rule(_op)  # integer div/rem: XLA's (truncating; x/0 = -1)

add = _binary_fn(add_p, "add")
custom_derivatives.lax_add = add   # custom_jvp.defjvps sums its terms with it
sub = _binary_fn(sub_p, "sub")
div = _binary_fn(div_p, "div")
rem = _binary_fn(rem_p, "rem")
max = _binary_fn(max_p, "max")  # noqa: A001 - lax.max
min = _binary_fn(min_p, "min")  # noqa: A001 - lax.min
nextafter = _binary_fn(nextafter_p, "nextafter")
atan2 = _binary_fn(atan2_p, "atan2")


# --- differentiation rules of the arithmetic primitives (JAX's lax.py rules) ---------------

def _zeros(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, 0)


def _strong_zeros(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, 0, dtype=x.dtype)


def _bcast_like(t, out):
  """`t` broadcast to the shape of `out` (lax operands are 0-d or size-1 broadcasting)."""
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import broadcast_in_dim
  ts, shape = core.get_aval(t).shape, core.get_aval(out).shape
  if ts == shape:
    return t
  return broadcast_in_dim(t, shape, tuple(range(len(shape))) if ts else ())


def unbroadcast(aval: ShapedArray, x):
  """Sum `x` (the cotangent of an elementwise result) down to the operand's shape: lax
  operands are 0-d or of the result's rank with size-1 dimensions broadcast."""
  # deferred: cycle (structural and reductions build on elementwise)
  from ember._src.primitives.reductions import reduce_sum
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import reshape
  shape = core.get_aval(x).shape
  if shape == aval.shape:
    return x
  if not aval.shape:
    return reduce_sum(x, tuple(range(len(shape))))
  dims = tuple(i for i, (a, b) in enumerate(zip(aval.shape, shape)) if a == 1 and b != 1)
  return reshape(reduce_sum(x, dims), aval.shape)


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


def _balanced_eq(x, z, y):
  """1 where x alone attains the max/min z, 1/2 where x and y both do, else 0 (JAX)."""
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return select(eq(x, z), select(eq(y, z), full_like(z, 0.5), full_like(z, 1)), _zeros(z))


ad.defjvp2(max_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
ad.defjvp2(min_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
           lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))
ad.defjvp_zero(nextafter_p)
ad.defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
          lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))

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


# pow: float/complex base; exponent of the same dtype or any integer dtype.

def _pow_abstract_eval(x, y):
  check_dtype("pow", x, INEXACT, argname="operand 0")
  check_dtype("pow", y, INTS + INEXACT, argname="operand 1")
  if x.dtype != y.dtype and dtype_kind(y.dtype) not in INTS:
    raise TypeError("the first argument to pow must have an inexact dtype (float or "
                    "complex), and the second argument must have an inexact or integer "
                    "dtype, and two inexact dtypes must match, but got "
                    f"{x.dtype} and {y.dtype} respectively.")
  return ShapedArray(broadcasting_shape("pow", (x, y)), x.dtype,
                     x.weak_type and y.weak_type)


pow_p = declare("pow", _pow_abstract_eval, reference_elementwise.pow)
pow_p.batch = batching.broadcasting(pow_p)
_power_rule = complex_math.rule("power")
pow_p.lower = lambda ctx, x, y: _power_rule(ctx, x, ctx.convert(y, x.dtype))


def pow(x, y):  # noqa: A001 - lax.pow
  """x ** y for a float/complex x; y of the same dtype or an integer dtype."""
  if type(y) is int:  # JAX keeps a Python int exponent as a weak int32: `pow a 2:i32[]`
    return pow_p.bind(x, y)
  return bind_elementwise(pow_p, x, y)


strict_scalars(pow_p, pow)


def _replace_zero(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return select(eq(x, _zeros(x)), full_like(x, 1), x)


def _pow_jvp_lhs(g, ans, x, y):
  """d(x**y)/dx = y x**(y-1); 0 where an integer y is 0 (no 0 * inf at x = 0)."""
  xdt = core.get_aval(x).dtype
  jac = mul(convert_element_type(y, xdt), pow_p.bind(x, sub(y, _one_like(y))))
  if dtype_kind(core.get_aval(y).dtype) in INTS:
    jac = select(_bcast_like(eq(y, _zeros(y)), jac), _zeros(jac), jac)
  return mul(g, jac)


def _one_like(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, 1)


def _pow_jvp_rhs(g, ans, x, y):
  return mul(g, mul(log(_replace_zero(x)), ans))


ad.defjvp2(pow_p, _pow_jvp_lhs, _pow_jvp_rhs)


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


def _abs_dtype(dt):
  return np.dtype(np.float32 if dt == np.complex64 else np.float64) if dtype_kind(dt) == "c" else dt


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


# --- transcendental ---------------------------------------------------------------------

exp_p, exp = _unary_with_accuracy("exp", reference_elementwise.exp)
exp2_p, exp2 = _unary_with_accuracy("exp2", reference_elementwise.exp2)
log_p, log = _unary_with_accuracy("log", reference_elementwise.log)
log2_p, log2 = _unary_with_accuracy("log2", reference_elementwise.log2)
expm1_p, expm1 = _unary_with_accuracy("expm1", reference_elementwise.expm1)
log1p_p, log1p = _unary_with_accuracy("log1p", reference_elementwise.log1p)
tanh_p, tanh = _unary_with_accuracy("tanh", reference_elementwise.tanh)
logistic_p, logistic = _unary_with_accuracy("logistic", reference_elementwise.logistic)
sin_p, sin = _unary_with_accuracy("sin", reference_elementwise.sin)
cos_p, cos = _unary_with_accuracy("cos", reference_elementwise.cos)
tan_p, tan = _unary_with_accuracy("tan", reference_elementwise.tan)
sqrt_p, sqrt = _unary_with_accuracy("sqrt", reference_elementwise.sqrt)
rsqrt_p, rsqrt = _unary_with_accuracy("rsqrt", reference_elementwise.rsqrt)
cbrt_p, cbrt = _unary_with_accuracy("cbrt", reference_elementwise.cbrt, FLOAT)

asin_p = unary("asin", reference_elementwise.asin, INEXACT)
acos_p = unary("acos", reference_elementwise.acos, INEXACT)
atan_p = unary("atan", reference_elementwise.atan, INEXACT)
sinh_p = unary("sinh", reference_elementwise.sinh, INEXACT)
cosh_p = unary("cosh", reference_elementwise.cosh, INEXACT)
asinh_p = unary("asinh", reference_elementwise.asinh, INEXACT)
acosh_p = unary("acosh", reference_elementwise.acosh, INEXACT)
atanh_p = unary("atanh", reference_elementwise.atanh, INEXACT)

for _p, _op in ((exp_p, "exponential"), (log_p, "log"), (expm1_p, "exponential-minus-one"),
                (log1p_p, "log-plus-one"), (tanh_p, "tanh"), (logistic_p, "logistic"),
                (sin_p, "sine"), (cos_p, "cosine"), (tan_p, "tan"), (sqrt_p, "sqrt"),
                (rsqrt_p, "rsqrt"), (cbrt_p, "cbrt"), (asin_p, "asin"), (acos_p, "acos"),
                (atan_p, "atan"), (sinh_p, "sinh"), (cosh_p, "cosh"), (asinh_p, "asinh"),
                (acosh_p, "acosh"), (atanh_p, "atanh")):
  _p.lower = complex_math.rule(_op)  # complex operands: expanded into real arithmetic


def _exp2_lower(ctx, x, **_):
  """2**x as `power` (exact base, so as accurate as power); complex: exp(x ln 2), as NumPy."""
  if dtype_kind(x.dtype) == COMPLEX:
    return complex_math.expand(ctx, "exponential", complex_math.scaled(ctx, x, np.log(2.0)))
  return ctx.elementwise("power", ctx.full_like(2, x), x)


def _log2_lower(ctx, x, **_):
  """log(x) / ln 2; complex: both parts of log(x) times log2(e), as NumPy."""
  if dtype_kind(x.dtype) == COMPLEX:
    return complex_math.scaled(ctx, complex_math.rule("log")(ctx, x), 1 / np.log(2.0))
  return ctx.div(ctx.elementwise("log", x), ctx.constant(np.log(2.0), x.dtype))


exp2_p.lower = _exp2_lower
log2_p.lower = _log2_lower

asin = _unary_fn(asin_p, "asin")
acos = _unary_fn(acos_p, "acos")
atan = _unary_fn(atan_p, "atan")
sinh = _unary_fn(sinh_p, "sinh")
cosh = _unary_fn(cosh_p, "cosh")
asinh = _unary_fn(asinh_p, "asinh")
acosh = _unary_fn(acosh_p, "acosh")
atanh = _unary_fn(atanh_p, "atanh")

# Derivatives as JAX writes them: g * f'(x), from x and the result `ans`.
_TRANSCENDENTAL_JVPS = {
    exp_p: lambda g, ans, x, **_: mul(g, ans),
    exp2_p: lambda g, ans, x, **_: mul(g, mul(math.log(2.0), ans)),
    log_p: lambda g, ans, x, **_: div(g, x),
    log2_p: lambda g, ans, x, **_: div(g, mul(math.log(2.0), x)),
    expm1_p: lambda g, ans, x, **_: mul(g, add(ans, 1)),
    log1p_p: lambda g, ans, x, **_: div(g, add(x, 1)),
    tanh_p: lambda g, ans, x, **_: mul(add(g, mul(g, ans)), sub(1, ans)),
    logistic_p: lambda g, ans, x, **_: mul(g, mul(ans, sub(1, ans))),
    sin_p: lambda g, ans, x, **_: mul(g, cos(x)),
    cos_p: lambda g, ans, x, **_: neg(mul(g, sin(x))),
    tan_p: lambda g, ans, x, **_: mul(g, add(1, square(ans))),
    sqrt_p: lambda g, ans, x, **_: mul(g, div(0.5, ans)),   # inf at 0, as JAX
    rsqrt_p: lambda g, ans, x, **_: mul(g, mul(-0.5, div(ans, x))),
    cbrt_p: lambda g, ans, x, **_: mul(g, mul(1 / 3, integer_pow(ans, -2))),
    asin_p: lambda g, ans, x: mul(g, rsqrt(sub(1, square(x)))),
    acos_p: lambda g, ans, x: mul(g, neg(rsqrt(sub(1, square(x))))),
    atan_p: lambda g, ans, x: div(g, add(1, square(x))),
    sinh_p: lambda g, ans, x: mul(g, cosh(x)),
    cosh_p: lambda g, ans, x: mul(g, sinh(x)),
    asinh_p: lambda g, ans, x: mul(g, rsqrt(add(square(x), 1))),
    acosh_p: lambda g, ans, x: mul(g, rsqrt(mul(sub(x, 1), add(x, 1)))),
    atanh_p: lambda g, ans, x: mul(reciprocal(add(1, x)), div(g, sub(1, x))),
}
for _p, _fn in _TRANSCENDENTAL_JVPS.items():
  ad.defjvp2(_p, _fn)


# --- special functions (float64 reference kernels: reference/elementwise.py) -----------

erf_p = unary("erf", reference_elementwise.erf, FLOAT)
erf_inv_p = unary("erf_inv", reference_elementwise.erf_inv, FLOAT)
lgamma_p = unary("lgamma", reference_elementwise.lgamma, FLOAT)
digamma_p = unary("digamma", reference_elementwise.digamma, FLOAT)
bessel_i0e_p = unary("bessel_i0e", reference_elementwise.bessel_i0e, FLOAT)
erfc_p, erfc = _unary_with_accuracy("erfc", reference_elementwise.erfc, FLOAT)
for _p, _op in ((erf_p, "erf"), (erf_inv_p, "erf-inv"), (lgamma_p, "lgamma"),
                (digamma_p, "digamma"), (erfc_p, "erfc")):
  _p.lower = lowering.elementwise(_op)

# Cephes' Chebyshev coefficients for exp(-|x|) I0(x), on [0, 8] and (8, inf) (as JAX).
_I0E_A32 = (-1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
            1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
            -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
            1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
            -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
            1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B32 = (3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
            2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
            8.04490411014108831608E-1)
_I0E_A64 = (-4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
            1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
            -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
            9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9
            ) + _I0E_A32
_I0E_B64 = (-7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
            3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
            1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
            -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
            7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
            -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10
            ) + _I0E_B32


def _bessel_i0e_lower(ctx, x):
  """Cephes' i0e as elementwise ops (XLA has no opcode for it); 16-bit floats are
  computed in float32, whose coefficients they would not resolve."""
  dt = x.dtype
  if dt != np.float64:
    x = ctx.convert(x, np.float32)
  a_coef, b_coef = (_I0E_A64, _I0E_B64) if dt == np.float64 else (_I0E_A32, _I0E_B32)

  def chebyshev(t, coefs):  # Clenshaw's recurrence, then 0.5 * (b0 - b2)
    b0 = b1 = b2 = ctx.full_like(0, t)
    for c in coefs:
      b2, b1 = b1, b0
      b0 = ctx.add(ctx.sub(ctx.mul(t, b1), b2), ctx.constant(c, t.dtype))
    return ctx.mul(ctx.sub(b0, b2), ctx.constant(0.5, t.dtype))

  a = ctx.elementwise("abs", x)
  c = lambda v: ctx.constant(v, a.dtype)
  small = chebyshev(ctx.sub(ctx.mul(a, c(0.5)), c(2.0)), a_coef)
  large = ctx.div(chebyshev(ctx.sub(ctx.div(c(32.0), a), c(2.0)), b_coef),
                  ctx.elementwise("sqrt", a))
  return ctx.convert(ctx.select(ctx.compare(a, c(8.0), "LE"), small, large), dt)


bessel_i0e_p.lower = _bessel_i0e_lower

erf = _unary_fn(erf_p, "erf")
erf_inv = _unary_fn(erf_inv_p, "erf_inv")
lgamma = _unary_fn(lgamma_p, "lgamma")
digamma = _unary_fn(digamma_p, "digamma")
bessel_i0e = _unary_fn(bessel_i0e_p, "bessel_i0e")


def _trigamma(x):
  """psi'(x) from lax ops (the derivative of digamma): six recurrence steps, then the
  asymptotic series at x + 6 (error < 1e-9); the reflection formula for x < 0."""
  negative = lt(x, _zeros(x))
  xr = select(negative, sub(1, x), x)
  acc = _zeros(x)
  for k in range(6):
    acc = add(acc, integer_pow(add(xr, float(k)), -2))
  z = add(xr, 6.0)
  w = integer_pow(z, -2)
  tail = mul(integer_pow(z, -3), sub(1 / 6, mul(w, sub(1 / 30, mul(w, sub(1 / 42, div(w, 30.0)))))))
  psi1 = add(acc, add(add(reciprocal(z), mul(w, 0.5)), tail))
  reflected = sub(div(math.pi ** 2, square(sin(mul(math.pi, x)))), psi1)
  # the poles 0, -1, -2, ...: sin(pi x) rounds to a tiny nonzero there; JAX gives inf
  pole = bitwise_and(le(x, _zeros(x)), eq(x, floor(x)))
  return select(pole, _full(x, np.inf), select(negative, reflected, psi1))


def _bessel_i1e(x):
  """exp(-|x|) I1(x) from lax ops (d i0e = i1e - sign(x) i0e): the power series, its terms
  by recurrence (no overflow), up to |x| = 15; the asymptotic series beyond."""
  a = abs(x)
  small = le(a, _full(a, 15.0))
  xs = select(small, a, _zeros(a))
  q = mul(mul(xs, xs), 0.25)
  term = mul(xs, 0.5)
  total = term
  for k in range(1, 60):
    term = div(mul(term, q), float(k * (k + 1)))
    total = add(total, term)
  series = mul(total, exp(neg(xs)))
  xl = select(small, _full(a, 16.0), a)
  coef, asym, inv = 1.0, _full(a, 1.0), reciprocal(xl)
  power = _full(a, 1.0)
  for k in range(1, 12):  # a_k = prod_{j<=k} (4 - (2j-1)^2) / (k! 8^k), with (-1)^k
    coef *= -(4 - (2 * k - 1) ** 2) / (k * 8)
    power = mul(power, inv)
    asym = add(asym, mul(power, coef))
  asym = mul(asym, rsqrt(mul(xl, 2 * math.pi)))
  return mul(sign(x), select(small, series, asym))


def _full(x, v):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, v)


_SPECIAL_JVPS = {
    bessel_i0e_p: lambda g, ans, x: mul(g, sub(_bessel_i1e(x), mul(sign(x), ans))),
    erf_p: lambda g, ans, x: mul(g, mul(2 / math.sqrt(math.pi), exp(neg(square(x))))),
    erfc_p: lambda g, ans, x, **_: mul(g, mul(-2 / math.sqrt(math.pi), exp(neg(square(x))))),
    erf_inv_p: lambda g, ans, x: mul(g, mul(math.sqrt(math.pi) / 2, exp(square(ans)))),
    lgamma_p: lambda g, ans, x: mul(g, digamma(x)),
    digamma_p: lambda g, ans, x: mul(g, _trigamma(x)),
}
for _p, _fn in _SPECIAL_JVPS.items():
  ad.defjvp2(_p, _fn)


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


# --- bitwise ---------------------------------------------------------------------------------

and_p = naryop("and", reference_elementwise.bitwise_and, BOOL + INTS)
or_p = naryop("or", reference_elementwise.bitwise_or, BOOL + INTS)
xor_p = naryop("xor", reference_elementwise.bitwise_xor, BOOL + INTS)
not_p = unary("not", reference_elementwise.bitwise_not, BOOL + INTS)
shift_left_p = naryop("shift_left", reference_elementwise.shift_left, INTS)
shift_right_arithmetic_p = naryop("shift_right_arithmetic",
                                  reference_elementwise.shift_right_arithmetic, INTS)
shift_right_logical_p = naryop("shift_right_logical", reference_elementwise.shift_right_logical,
                               INTS)
population_count_p = unary("population_count", reference_elementwise.population_count, INTS)
clz_p = unary("clz", reference_elementwise.clz, INTS)
for _p, _op in ((and_p, "and"), (or_p, "or"), (xor_p, "xor"), (not_p, "not"),
                (shift_left_p, "shift-left"), (shift_right_arithmetic_p, "shift-right-arithmetic"),
                (shift_right_logical_p, "shift-right-logical"), (population_count_p, "popcnt"),
                (clz_p, "count-leading-zeros")):
  _p.lower = lowering.elementwise(_op)

bitwise_and = _binary_fn(and_p, "bitwise_and")
bitwise_or = _binary_fn(or_p, "bitwise_or")
bitwise_xor = _binary_fn(xor_p, "bitwise_xor")
bitwise_not = _unary_fn(not_p, "bitwise_not")
shift_left = _binary_fn(shift_left_p, "shift_left")
shift_right_arithmetic = _binary_fn(shift_right_arithmetic_p, "shift_right_arithmetic")
shift_right_logical = _binary_fn(shift_right_logical_p, "shift_right_logical")
population_count = _unary_fn(population_count_p, "population_count")
clz = _unary_fn(clz_p, "clz")


# --- comparison ------------------------------------------------------------------------------

_to_bool = lambda _: np.dtype(np.bool_)
ORDERED = BOOL + INTS + FLOAT

eq_p = naryop("eq", reference_elementwise.eq, ANY, out_dtype=_to_bool)
ne_p = naryop("ne", reference_elementwise.ne, ANY, out_dtype=_to_bool)
lt_p = naryop("lt", reference_elementwise.lt, ORDERED, out_dtype=_to_bool)
le_p = naryop("le", reference_elementwise.le, ORDERED, out_dtype=_to_bool)
gt_p = naryop("gt", reference_elementwise.gt, ORDERED, out_dtype=_to_bool)
ge_p = naryop("ge", reference_elementwise.ge, ORDERED, out_dtype=_to_bool)
for _p, _dir in ((eq_p, "EQ"), (ne_p, "NE"), (lt_p, "LT"), (le_p, "LE"), (gt_p, "GT"),
                 (ge_p, "GE")):
  _p.lower = (lambda d: lambda ctx, x, y: ctx.compare(x, y, d))(_dir)

eq = _binary_fn(eq_p, "eq")
ne = _binary_fn(ne_p, "ne")
lt = _binary_fn(lt_p, "lt")
le = _binary_fn(le_p, "le")
gt = _binary_fn(gt_p, "gt")
ge = _binary_fn(ge_p, "ge")


# --- selection -------------------------------------------------------------------------------

def _select_n_abstract_eval(which, *cases):
  if not cases:
    raise TypeError("select must have at least one case")
  if any(c.shape != cases[0].shape for c in cases[1:]):
    raise TypeError(f"select cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError(f"select `which` must be scalar or have the same shape as cases, got "
                    f"`which` shape {which.shape} but case shape {cases[0].shape}.")
  check_same_dtypes("select", cases)
  if dtype_kind(which.dtype) not in BOOL + INTS:
    raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
  if which.dtype == np.bool_ and len(cases) > 2:
    raise TypeError("select with boolean `which` cannot have > 2 cases.")
  return cases[0].update(weak_type=all(c.weak_type for c in cases))


select_n_p = declare("select_n", _select_n_abstract_eval, reference_elementwise.select_n)


def _select_n_batch(axis_data, vals, dims):
  """JAX's rule: `which` is a scalar or has the cases' shape, so a batched scalar `which`
  is broadcast to the cases' shape; otherwise everything moves its batch dim to the front."""
  (which, *cases), (wd, *cds) = vals, dims
  ndim = batching.ndim_of
  if all(wd == d for d in cds):
    if batching.shape_of(which) == batching.shape_of(cases[0]):
      return select_n_p.bind(which, *cases), wd
    which = batching.broadcast_in_dim(which, batching.shape_of(cases[0]), [wd])
    return select_n_p.bind(which, *cases), wd
  if ndim(which) == 0 and all(d is not None for d in cds):
    if all(cds[0] == d for d in cds[1:]):
      return select_n_p.bind(which, *cases), cds[0]
    if all(batching.shape_of(cases[0]) == batching.shape_of(c) for c in cases):
      others = [batching.moveaxis(c, d, cds[0]) for c, d in zip(cases[1:], cds[1:])]
      return select_n_p.bind(which, cases[0], *others), cds[0]
  size = batching.batch_size(vals, dims)
  which = batching.bdim_at_front(which, wd, size) if batching.shape_of(which) else which
  if not all(ndim(c) == 0 for c in cases):
    cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, cds)]
  if 0 < ndim(which) < ndim(cases[0]):
    which = batching.broadcast_in_dim(which, batching.shape_of(cases[0]), [0])
  if ndim(which) > ndim(cases[0]):
    cases = [batching.broadcast_in_dim(c, batching.shape_of(which), ()) for c in cases]
  return select_n_p.bind(which, *cases), 0


select_n_p.batch = _select_n_batch


def _select_n_lower(ctx, which, *cases):
  """`select` for a bool `which`; otherwise a balanced tree of `which < k` tests (out-of-range
  indices pick the first or last case, as the impl clamps)."""
  if which.dtype == np.bool_ and len(cases) == 2:
    return ctx.select(which, cases[1], cases[0])

  def tree(offset, cs):
    if len(cs) == 1:
      return cs[0]
    mid = len(cs) // 2
    pred = ctx.compare(which, ctx.constant(offset + mid, which.dtype), "LT")
    return ctx.select(pred, tree(offset, cs[:mid]), tree(offset + mid, cs[mid:]))
  return tree(0, list(cases))


select_n_p.lower = _select_n_lower


def _bind_cases(prim, first, *cases):
  """Python scalar cases take the dtype of the array cases (weakly typed)."""
  strong = [c for c in cases if not dtypes.is_python_scalar(c)]
  if strong and len(strong) < len(cases):
    dt = core.get_aval(strong[0]).dtype
    cases = [convert_element_type(c, dt, weak_type=True) if dtypes.is_python_scalar(c) else c
             for c in cases]
  return prim.bind(first, *cases)


def select_n(which, *cases):
  """cases[which], elementwise: `which` is bool (two cases) or an integer index; it is a
  scalar or has the cases' shape."""
  return _bind_cases(select_n_p, *_select_n_operands(which, *cases))


def _select_n_operands(which, *cases):
  if not cases:
    raise ValueError("select_n() must have at least one case")
  return (which, *cases)


def select(pred, on_true, on_false):
  """`on_true` where `pred` else `on_false` (binds select_n with the cases swapped)."""
  return _bind_cases(select_n_p, pred, on_false, on_true)


strict_scalars(select_n_p, select_n, _select_n_operands)
strict_scalars(select_n_p, select, lambda pred, on_true, on_false: (pred, on_false, on_true))


def _select_n_jvp(primals, tangents):
  (which, *cases), (_, *tcases) = primals, tangents
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in tcases):
    return out, ad.Zero.from_value(out)
  return out, select_n_p.bind(which, *map(ad.instantiate_zeros, tcases))


def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n is not linear in its predicate: cannot transpose it")
  zeros = _zeros(ct)
  return [None] + [select_n_p.bind(which, *[ct if j == i else zeros for j in range(len(cases))])
                   if ad.is_undefined_primal(c) else None for i, c in enumerate(cases)]


select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose


def _clamp_abstract_eval(lo, x, hi):
  for name, a in (("min", lo), ("max", hi)):
    if a.shape and a.shape != x.shape:
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), "
                      f"got {name}.shape={a.shape}, operand.shape={x.shape}.")
  for i, a in enumerate((lo, x, hi)):
    check_dtype("clamp", a, ANY, argname=f"operand {i}")
  check_same_dtypes("clamp", (lo, x, hi))
  return x.update(weak_type=lo.weak_type and x.weak_type and hi.weak_type)


clamp_p = declare("clamp", _clamp_abstract_eval, reference_elementwise.clamp)


def _clamp_batch(axis_data, vals, dims):
  """`min`/`max` are scalars or have x's shape: unbatched scalar bounds bind directly;
  otherwise all three go batch-dim-first at x's full shape (JAX's rule, simplified)."""
  (lo, x, hi), (ld, xd, hd) = vals, dims
  ndim = batching.ndim_of
  if ld == xd == hd and batching.shape_of(lo) == batching.shape_of(x) == batching.shape_of(hi):
    return clamp_p.bind(lo, x, hi), xd
  if ndim(lo) == 0 and ndim(hi) == 0 and xd is not None:
    return clamp_p.bind(lo, x, hi), xd
  size = batching.batch_size(vals, dims)
  lo, x, hi = (batching.bdim_at_front(v, d, size) if batching.shape_of(v) else v
               for v, d in zip(vals, dims))
  shape = builtins.max((batching.shape_of(v) for v in (lo, x, hi)), key=len)
  # a per-example scalar that is batched is now 1-D: broadcast it along the batch dim
  lo, x, hi = (batching.broadcast_in_dim(v, shape, [0] if ndim(v) else []) if ndim(v) < len(shape)
               else v for v in (lo, x, hi))
  return clamp_p.bind(lo, x, hi), 0


clamp_p.batch = _clamp_batch
clamp_p.lower = lambda ctx, lo, x, hi: ctx.emit(
    "clamp", x.shape, [ctx.broadcast_to(lo, x.dims), x, ctx.broadcast_to(hi, x.dims)])


def clamp(min, x, max):  # noqa: A002 - JAX's argument names
  """min(max(x, min), max), elementwise; `min`/`max` are scalars or have x's shape."""
  return bind_elementwise(clamp_p, min, x, max)


strict_scalars(clamp_p, clamp)


ad.defjvp(  # JAX's rules: the tangent of whichever operand the result is
    clamp_p,
    lambda g, lo, x, hi: select(bitwise_and(gt(lo, x), lt(lo, hi)), _bcast_like(g, x), _zeros(x)),
    lambda g, lo, x, hi: select(bitwise_and(gt(x, lo), lt(x, hi)), g, _zeros(x)),
    lambda g, lo, x, hi: select(lt(hi, x), _bcast_like(g, x), _zeros(x)))

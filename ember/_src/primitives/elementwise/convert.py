"""Conversions of the element type: convert_element_type (a cast), bitcast_convert_type (the
bits reinterpreted; a width change adds or removes a last dimension, as in XLA) and
reduce_precision (rounded to a narrower float format, kept in the operand's dtype).
"""
from __future__ import annotations

import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.core.array import Array
from ember._src.core import earray  # noqa: F401 (eager results of extended dtypes: EArrays)
from ember._src.transforms import ad, batching, remat
from ember._src.primitives import BOOL, COMPLEX, FLOAT, check_dtype, declare, dtype_kind
from ember._src.primitives.elementwise.common import _abs_dtype
from ember._src.reference import elementwise as reference_elementwise

__all__ = ["convert_element_type", "bitcast_convert_type", "reduce_precision"]


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
# a cotangent already of x's type passes as it is (JAX forwards a no-op conversion)
convert_element_type_p.transpose = lambda ct, x, *, new_dtype, weak_type: [
    convert_element_type(ct, x.aval.dtype, x.aval.weak_type)]


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Elementwise cast to `new_dtype` (canonicalized for the x64 flag)."""
  if type(operand) is Array and not weak_type and not operand._weak_type and \
      operand._dtype == new_dtype and operand._dtype.itemsize <= 4:
    return operand   # (no x64 flag turns a 32-bit or narrower dtype into another)
  new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type")
  if isinstance(new_dtype, dtypes.ExtendedDType):
    return _convert_extended(operand, new_dtype)
  if type(operand) in (float, int) and core.cur_level_is_eval():
    return _number_array(operand, new_dtype, bool(weak_type))
  if not isinstance(operand, Array):   # (jnp's promotion reads flax's Variables, as JAX)
    operand = core.unwrap_jax_array(operand)
  aval = core.get_aval(operand)
  if isinstance(aval.dtype, dtypes.ExtendedDType):
    return _convert_extended(operand, new_dtype)
  if (aval.dtype, aval.weak_type) == (new_dtype, bool(weak_type)) and not dtypes.is_python_scalar(operand) \
      and not isinstance(operand, (np.ndarray, np.generic)):
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


def _number_array(number, new_dtype, weak_type: bool):
  """A Python number made an array, as jnp's promotion does in every `x + 1.0`: no eager
  dispatch, and the reference's steps (the number's own dtype first, then the cast)."""
  with np.errstate(over="ignore"):   # 1e40 -> float32 is inf, quietly (as XLA)
    value = np.asarray(number, core.get_aval(number).dtype)
  return core.new_array(reference_elementwise.convert_element_type(
      value, new_dtype=new_dtype, weak_type=weak_type), weak_type=weak_type)


# --- to_edtype / from_edtype: to and from a user's extended dtype -----------------------
# A value of a user's extended dtype (jax.dtypes.ExtendedDType with `_rules`) is stored as an
# array of its physical element (core.physical_aval): both conversions keep the stored
# values, so their impls and lowerings are the identity; the rules say which are allowed.

def _convert_extended(operand, new_dtype):
  old_dtype = core.get_aval(operand).dtype
  if isinstance(old_dtype, dtypes.ExtendedDType) and isinstance(new_dtype, dtypes.ExtendedDType):
    if old_dtype == new_dtype:
      return operand
    old_rep, new_rep = (_representation(dt) for dt in (old_dtype, new_dtype))
    raise ValueError(f"cannot directly convert between extended dtypes: from {old_dtype} to "
                     f"{new_dtype}. Instead, convert to and from their representation dtypes, "
                     f"e.g.:\n{old_dtype} -> {old_rep} -> {new_rep} -> {new_dtype}")
  if isinstance(new_dtype, dtypes.ExtendedDType):
    return to_edtype_p.bind(operand, edtype=new_dtype)
  return from_edtype_p.bind(operand, dtype=np.dtype(new_dtype))


def _representation(dt) -> str:
  return dtypes.physical_element(dt)[1].name if dtypes.has_rules(dt) else "uint32"


def _check_allowed(src, dst, edtype, rule: str) -> None:
  """The rules of `edtype` (src or dst) allow converting src to dst (JAX's error if not)."""
  rules = getattr(edtype, "_rules", None)
  if rules is not None:
    check = getattr(rules, rule, None)
    allowed = check(src, dst) if check is not None else getattr(rules, "allow_conversion", False)
    if allowed:
      return
  hint = "" if rules is not None else \
      " (PRNG keys: use random.key_data and random.wrap_key_data)"
  raise ValueError(f"Cannot convert_element_type from {_name(src)} to {_name(dst)}{hint}")


def _name(dt) -> str:
  return str(dt) if isinstance(dt, dtypes.ExtendedDType) else dtypes.dtype_name(dt)


def _to_edtype_abstract_eval(x, *, edtype):
  _check_allowed(x.dtype, edtype, edtype, "convert_to")
  elt_shape, elt_dtype = dtypes.physical_element(edtype)
  if x.dtype != elt_dtype:
    raise ValueError(f"can only convert to extended dtype from its representation dtype, but "
                     f"tried to convert from {_name(x.dtype)} to {edtype} which "
                     f"doesn't match the representation type {elt_dtype.name}.")
  n = x.ndim - len(elt_shape)
  if n < 0 or x.shape[n:] != elt_shape:
    raise ValueError(f"can only convert to extended dtype from an array of its representation "
                     f"type, but the extended dtype {edtype} has a representation shape "
                     f"{elt_shape} while the given representation array has shape {x.shape}.")
  return ShapedArray(x.shape[:n], edtype, x.weak_type)


def _from_edtype_abstract_eval(x, *, dtype):
  _check_allowed(x.dtype, dtype, x.dtype, "convert_from")
  elt_shape, elt_dtype = dtypes.physical_element(x.dtype)
  if dtype != elt_dtype:
    raise ValueError(f"can only convert from extended dtype to its representation dtype, but "
                     f"tried to convert from {x.dtype} to {_name(dtype)} which "
                     f"doesn't match the representation type {elt_dtype.name}.")
  return ShapedArray((*x.shape, *elt_shape), dtype, x.weak_type)


to_edtype_p = declare("to_edtype", _to_edtype_abstract_eval, lambda x, *, edtype: x)
from_edtype_p = declare("from_edtype", _from_edtype_abstract_eval, lambda x, *, dtype: x)
for _p in (to_edtype_p, from_edtype_p):
  _p.lower = lambda ctx, x, **_: x       # the same stored values (hlo Shape.of: physical)
  _p.batch = batching.vectorized(_p)


def _to_edtype_jvp(primals, tangents, *, edtype):
  (x,), (t,) = primals, tangents
  out = to_edtype_p.bind(x, edtype=edtype)
  if type(t) is ad.Zero:
    return out, ad.Zero.from_value(out)
  return out, convert_element_type(t, ad.primal_dtype_to_tangent_dtype(edtype))


def _from_edtype_jvp(primals, tangents, *, dtype):
  (x,), (t,) = primals, tangents
  out = from_edtype_p.bind(x, dtype=dtype)
  if type(t) is ad.Zero or not ad.is_differentiable(dtype):
    return out, ad.Zero.from_value(out)
  return out, convert_element_type(t, dtype)


to_edtype_p.jvp, from_edtype_p.jvp = _to_edtype_jvp, _from_edtype_jvp
to_edtype_p.transpose = lambda ct, x, *, edtype: [from_edtype_p.bind(ct, dtype=x.aval.dtype)]
from_edtype_p.transpose = lambda ct, x, *, dtype: [to_edtype_p.bind(ct, edtype=x.aval.dtype)]


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


# Casts (round to nearest, saturating as XLA): the NumPy reference computes the compiled
# bits, so eager calls may switch to compiled code at any time (core/primitive.py's
# `reference_exact`)
for _p in (convert_element_type_p, bitcast_convert_type_p):
  _p.reference_exact = True

"""Elementwise primitives: arithmetic, transcendental, comparison, bitwise, select, convert.

Each primitive: its declaration (shape/dtype rule + NumPy impl) and the `lax` function.
"""
from __future__ import annotations

import numpy as np

from ember._src import core, dtypes
from ember._src.primitives import (ANY, INEXACT, NUMERIC, bind_elementwise, declare,
                                   naryop, unary, with_dtype_of)

__all__ = ["convert_element_type", "add", "sub", "mul", "max", "sin", "cos"]


# --- convert_element_type -------------------------------------------------------------

def _convert_impl(x, *, new_dtype, weak_type):
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
    return x.astype(new_dtype)


def _convert_abstract_eval(x, *, new_dtype, weak_type):
  return x.update(dtype=new_dtype, weak_type=weak_type)


convert_element_type_p = declare("convert_element_type", _convert_abstract_eval, _convert_impl)
convert_element_type_p.fold_literals = True  # converting a Python scalar stays a Literal


def convert_element_type(operand, new_dtype, weak_type: bool = False):
  """Elementwise cast to `new_dtype` (canonicalized for the x64 flag)."""
  new_dtype = dtypes.check_user_dtype(new_dtype, "convert_element_type")
  aval = core.get_aval(operand)
  if (aval.dtype, aval.weak_type) == (new_dtype, bool(weak_type)) and not dtypes.is_python_scalar(operand) \
      and not isinstance(operand, (np.ndarray, np.generic)):
    return operand
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type))


# --- arithmetic -------------------------------------------------------------------------

add_p = naryop("add", np.add, NUMERIC)
sub_p = naryop("sub", np.subtract, NUMERIC)
mul_p = naryop("mul", np.multiply, NUMERIC)
max_p = naryop("max", np.maximum, ANY)

add = lambda x, y: bind_elementwise(add_p, x, y)
sub = lambda x, y: bind_elementwise(sub_p, x, y)
mul = lambda x, y: bind_elementwise(mul_p, x, y)
max = lambda x, y: bind_elementwise(max_p, x, y)  # noqa: A001 - lax.max

# --- transcendental ---------------------------------------------------------------------

sin_p = unary("sin", with_dtype_of(np.sin), INEXACT)
cos_p = unary("cos", with_dtype_of(np.cos), INEXACT)

sin = lambda x: sin_p.bind(x)
cos = lambda x: cos_p.bind(x)

"""Primitive families. Each module declares its primitives ONCE, with every rule beside
the declaration (shape/dtype rule, NumPy impl; jvp, transpose, batching and lowering
rules are added beside them by later stages), and the `ember.lax` function that binds
it. The helpers here are the factories those declarations share.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import Primitive, ShapedArray, declare  # noqa: F401 (the families')
from ember._src.base.dtypes import dtype_kind
from ember._src.transforms import batching

# dtype classes accepted by a primitive, by NumPy kind letter
BOOL, INT, UINT, FLOAT, COMPLEX = "b", "i", "u", "f", "c"
INTS = INT + UINT
NUMERIC = INTS + FLOAT + COMPLEX
INEXACT = FLOAT + COMPLEX
ANY = BOOL + NUMERIC

_KIND_NAMES = {"b": "bool", "i": "signed integer", "u": "unsigned integer",
               "f": "floating", "c": "complex"}


def check_dtype(opname: str, aval: ShapedArray, kinds: str, argname: str = "x") -> None:
  if dtype_kind(aval.dtype) not in kinds:
    accepted = ", ".join(_KIND_NAMES[k] for k in kinds)
    raise TypeError(f"{opname} does not accept dtype {aval.dtype.name} for argument "
                    f"{argname}. Accepted dtypes are subtypes of: {accepted}.")


# lax primitive name -> the jnp function that promotes dtypes: JAX's table (its error tip
# names only these; `and`, `clamp`, ... get no tip)
_JNP_EQUIVALENTS = {
    "abs": "fabs", "acos": "arccos", "acosh": "arccosh", "add": "add", "asin": "arcsin",
    "asinh": "arcsinh", "atan": "arctan", "atan2": "arctan2", "atanh": "arctanh",
    "bitwise_and": "bitwise_and", "bitwise_not": "bitwise_not", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor", "cbrt": "cbrt", "ceil": "ceil", "concatenate": "concatenate",
    "cos": "cos", "cosh": "cosh", "div": "divide", "eq": "equal", "exp": "exp",
    "expm1": "expm1", "floor": "floor", "greater": "greater", "greater_equal": "greater_equal",
    "less": "less", "less_equal": "less_equal", "log": "log", "logical_and": "logical_and",
    "logical_not": "logical_not", "logical_or": "logical_or", "logical_xor": "logical_xor",
    "log1p": "log1p", "max": "maximum", "min": "minimum", "mul": "multiply",
    "ne": "not_equal", "neg": "negative", "nextafter": "nextafter", "pow": "float_power",
    "round": "round", "select": "where", "shift_left": "left_shift",
    "shift_right_logical": "right_shift", "shift_right_arithmetic": "right_shift",
    "sign": "sign", "sin": "sin", "sinh": "sinh", "sqrt": "sqrt", "sub": "subtract",
    "tan": "tan", "tanh": "tanh"}


def check_same_dtypes(opname: str, avals: Sequence[ShapedArray]) -> None:
  """JAX's check and message (a Python scalar operand counts with its default dtype)."""
  if len({a.dtype for a in avals}) > 1:
    msg = (f"lax.{opname} requires arguments to have the same dtypes, got "
           f"{', '.join(a.dtype.name for a in avals)}.")
    if opname in _JNP_EQUIVALENTS:
      msg += (f" (Tip: jnp.{_JNP_EQUIVALENTS[opname]} is a similar function that does "
              "automatic type promotion on inputs).")
    raise TypeError(msg)


def broadcasting_shape(opname: str, avals: Sequence[ShapedArray]) -> tuple:
  """lax's elementwise shape rule: 0-d operands broadcast; the others must have equal
  rank, and each dimension is equal or 1 (size-1 dimensions broadcast)."""
  shapes = [a.shape for a in avals if a.shape]
  if not shapes:
    return ()
  if len({len(s) for s in shapes}) > 1:
    raise TypeError(f"{opname}: arrays must have the same number of dimensions (0-d "
                    f"arrays broadcast), got shapes "
                    f"{', '.join(str(a.shape) for a in avals)}.")
  out = []
  for dims in zip(*shapes):
    non1 = {d for d in dims if d != 1}
    if len(non1) > 1:
      raise TypeError(f"{opname} got incompatible shapes for broadcasting: "
                      f"{', '.join(str(a.shape) for a in avals)}.")
    out.append(non1.pop() if non1 else 1)
  return tuple(out)


def unary(name: str, impl: Callable, kinds: str = INEXACT, out_dtype: Callable | None = None):
  """An elementwise unary primitive: same shape, dtype checked against `kinds`."""
  def abstract_eval(x: ShapedArray, **_):
    check_dtype(name, x, kinds)
    return x.update(dtype=out_dtype(x.dtype)) if out_dtype else x
  p = declare(name, abstract_eval, impl, exact=_exact(impl))
  p.batch = batching.vectorized(p)
  p.elementwise = True
  return p


def naryop(name: str, impl: Callable, kinds: str = NUMERIC, out_dtype: Callable | None = None):
  """An elementwise primitive of equal-dtype operands (shapes: `broadcasting_shape`). The
  result is weakly typed only when every operand is (also with `out_dtype`, as JAX:
  `lax.eq(1.0, 2.0)` is a weak bool)."""
  def abstract_eval(*avals: ShapedArray, **_):
    for i, a in enumerate(avals):
      check_dtype(name, a, kinds, argname=f"operand {i}")
    check_same_dtypes(name, avals)
    shape = broadcasting_shape(name, avals)
    dt = out_dtype(avals[0].dtype) if out_dtype else avals[0].dtype
    weak = all(a.weak_type for a in avals)
    return ShapedArray(shape, dt, weak)
  p = declare(name, abstract_eval, impl, exact=_exact(impl))
  p.batch = batching.broadcasting(p)
  p.elementwise = True
  return p


def _exact(impl) -> bool:
  """An elementwise reference computes the compiled bits unless it evaluates in float64
  and rounds (reference/elementwise.py's transcendentals: the compiled math library is
  within 2 ulp, not correctly rounded)."""
  return not getattr(impl, "rounds_from_float64", False)


def with_dtype_of(fn: Callable) -> Callable:
  """Wrap a NumPy impl so its result keeps the input dtype (NumPy upcasts float16 etc.)."""
  def impl(*args, **params):
    out = fn(*args, **params)
    return np.asarray(out).astype(args[0].dtype, copy=False)
  return impl


def bind_elementwise(prim: Primitive, *args, **params):
  """Bind an elementwise primitive for ember's own code: Python scalars take the dtype of
  the array operands (weakly typed), as JAX's internal `lax._const` does. The public
  `ember.lax` functions are `strict_scalars` forms that never convert."""
  scalar = dtypes.is_python_scalar
  if not any(map(scalar, args)):
    return prim.bind(*args, **params)
  # deferred: cycle among the primitive families
  from ember._src.primitives.elementwise import convert_element_type
  strong = [x for x in args if not scalar(x)]
  if strong:
    dt = core.get_aval(strong[0]).dtype
    args = [convert_element_type(x, dt, weak_type=True) if scalar(x) else x for x in args]
  return prim.bind(*args, **params)


# name -> the public `ember.lax` form of an elementwise function (see `strict_scalars`)
public_lax_fns: dict[str, Callable] = {}


def strict_scalars(prim: Primitive, fn: Callable,
                   operands: Callable = lambda *args: args) -> Callable:
  """Register the public `ember.lax` form of `fn` (an internal function that binds `prim`
  converting Python scalars): as in JAX, a Python scalar operand keeps its own default
  dtype (weak int32/float32; 64-bit with x64), so `lax.add(f32_array, 1)` and
  `lax.shift_right_logical(uint8_array, 0)` raise `prim`'s dtype error. `operands` maps
  `fn`'s arguments to `prim`'s operands (select swaps its cases). Returns `fn`."""
  def lax_fn(*args, **params):
    if any(map(dtypes.is_python_scalar, args)):
      prim.abstract_eval(*(core.get_aval(x) for x in operands(*args)), **params)
    return fn(*args, **params)
  functools.update_wrapper(lax_fn, fn)  # sets __wrapped__: `fn` itself
  public_lax_fns[fn.__name__] = lax_fn
  return fn

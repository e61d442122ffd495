"""ember.numpy scalar types (`jnp.float32`, ...), constants and dtype helpers.

A JAX scalar type is not a NumPy scalar class: calling it builds a 0-d (or n-d) ember
array of that dtype (`jnp.float32(1.0)` is `jnp.asarray(1.0, dtype=float32)`), it compares
and hashes equal to the NumPy scalar type, and it carries a `dtype` attribute so that
`np.dtype(jnp.float32)` and `dtype=jnp.float32` work everywhere.
"""
from __future__ import annotations

import builtins

import numpy as np
import ml_dtypes

from ember._src.base import basearray, dtypes
from ember._src.core.array import Array
from ember._src import core
from ember._src.library.numpy.creation import asarray

__all__ = [
    # scalar types
    "bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "int_", "uint", "float_", "complex_", "single", "double", "csingle", "cdouble",
    # ml_dtypes' narrow types (dtypes.narrow_dtypes): 8- and 4-bit floats, 2- and 4-bit ints
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
    "float6_e2m3fn", "float6_e3m2fn", "int1", "int2", "int4", "uint1", "uint2", "uint4",
    "complex32", "bcomplex32",
    # abstract NumPy scalar classes (for issubdtype / isinstance)
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact",
    "floating", "complexfloating", "character", "flexible", "object_",
    # constants
    "pi", "e", "euler_gamma", "inf", "nan", "newaxis",
    # types and dtype helpers
    "ndarray", "dtype", "finfo", "iinfo", "result_type", "promote_types", "issubdtype",
    "can_cast", "isdtype", "iscomplexobj", "isrealobj", "isscalar", "iterable",
    "printoptions", "set_printoptions", "get_printoptions", "array_repr", "array_str",
    "ComplexWarning",
]


class _ScalarMeta(type):
  """The metaclass of `jnp.float32` & co (JAX's `_ScalarMeta`)."""
  dtype: np.dtype

  @property
  def __numpy_dtype__(cls) -> np.dtype:  # NumPy >= 2.4 protocol
    return cls.dtype

  def __hash__(cls) -> int:
    return hash(cls.dtype.type)

  def __eq__(cls, other) -> bool:
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other) -> bool:
    return not cls == other

  def __call__(cls, x):
    return asarray(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance) -> bool:
    # JAX: NumPy scalars are instances; ember arrays (even 0-d) are not.
    return isinstance(instance, cls.dtype.type)


def _make_scalar_type(np_type) -> _ScalarMeta:
  dt = np.dtype(np_type)
  name = dt.name  # 'bool' as in JAX (NumPy 1's np.bool_.__name__ is 'bool_')
  return _ScalarMeta(name, (object,), {
      "dtype": dt, "__module__": "ember.numpy",
      "__doc__": f"An ember scalar constructor of type {name}.\n\nWhile NumPy defines "
                 "scalar types for each data type, ember represents scalars as "
                 "zero-dimensional arrays."})


bool_ = _make_scalar_type(np.bool_)
bool = bool_  # noqa: A001 - jnp.bool is jnp.bool_
int8, int16, int32, int64 = map(_make_scalar_type, (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(_make_scalar_type, (np.uint8, np.uint16, np.uint32, np.uint64))
bfloat16 = _make_scalar_type(ml_dtypes.bfloat16)
float16 = _make_scalar_type(np.float16)  # no jnp.half in JAX 0.12
float8_e3m4 = _make_scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _make_scalar_type(ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = _make_scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = _make_scalar_type(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = _make_scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = _make_scalar_type(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = _make_scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = _make_scalar_type(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = _make_scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _make_scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _make_scalar_type(ml_dtypes.float6_e3m2fn)
int2 = _make_scalar_type(ml_dtypes.int2)
int4 = _make_scalar_type(ml_dtypes.int4)
uint2 = _make_scalar_type(ml_dtypes.uint2)
uint4 = _make_scalar_type(ml_dtypes.uint4)
# ml_dtypes' 16-bit complex types: JAX 0.12 names them but has no arrays of them (XLA
# rejects the element type); here too every array constructor raises TypeError for them.
# ml_dtypes' newer types (int1, uint1, complex32, bcomplex32: not in 0.5.0, the oldest tested):
# jnp has those its ml_dtypes has
for _name in ("int1", "uint1", "complex32", "bcomplex32"):
  if hasattr(ml_dtypes, _name):
    globals()[_name] = _make_scalar_type(getattr(ml_dtypes, _name))
  else:
    __all__.remove(_name)
float32 = single = _make_scalar_type(np.float32)
float64 = double = _make_scalar_type(np.float64)
complex64 = csingle = _make_scalar_type(np.complex64)
complex128 = cdouble = _make_scalar_type(np.complex128)
int_, uint, float_, complex_ = int64, uint64, float64, complex128

generic, number, integer, signedinteger = np.generic, np.number, np.integer, np.signedinteger
unsignedinteger, inexact, floating = np.unsignedinteger, np.inexact, np.floating
complexfloating, character, flexible, object_ = (np.complexfloating, np.character,
                                                 np.flexible, np.object_)

pi, e, euler_gamma, inf, nan = np.pi, np.e, np.euler_gamma, np.inf, np.nan
newaxis = None

ndarray = basearray.Array   # the abstract `jax.Array`: arrays, tracers and key arrays
dtype = np.dtype
finfo = ml_dtypes.finfo   # not canonicalized: jnp.finfo(float).dtype is float64, as in JAX
iinfo = ml_dtypes.iinfo


def can_cast(from_, to, casting="safe"):
  """np.can_cast with NumPy 2's rules on every supported NumPy (NEP 50): by dtype only,
  never by value (NumPy 1 looked at the values of Python and 0-d NumPy scalars)."""
  if isinstance(from_, (np.ndarray, np.generic)):  # before: np.float64 is a Python float
    from_ = from_.dtype
  elif isinstance(from_, (builtins.int, builtins.float, builtins.complex)):
    raise TypeError("can_cast() does not support Python ints, floats, and complex because "
                    "the result used to depend on the value.")
  return np.can_cast(from_, to, casting)


iterable = np.iterable
printoptions, set_printoptions, get_printoptions = (np.printoptions, np.set_printoptions,
                                                    np.get_printoptions)
# Straight from NumPy, as in jax.numpy: they only read shape/dtype/values of their input.
array_repr, array_str = np.array_repr, np.array_str
ComplexWarning = np.exceptions.ComplexWarning


issubdtype = dtypes.issubdtype


def result_type(*args):
  """The dtype JAX's promotion rules give `args` (arrays, scalars, dtypes), canonicalized."""
  return dtypes.result_type(*args)


promote_types = dtypes.promote_types


_signed = [dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64]
_unsigned = [dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64]
_floats = [dtypes.bfloat16, dtypes.float16, dtypes.float32, dtypes.float64]
_complexes = [dtypes.complex64, dtypes.complex128]
_DTYPE_KINDS = {
    "bool": {dtypes.bool_},
    "signed integer": set(_signed),
    "unsigned integer": set(_unsigned),
    "integral": set(_signed + _unsigned),
    "real floating": set(_floats),
    "complex floating": set(_complexes),
    "numeric": set(_signed + _unsigned + _floats + _complexes),
}


def isdtype(dtype, kind) -> builtins.bool:  # noqa: F811 - shadows the `dtype` alias, as in JAX
  """Array-API dtype classification: `kind` is a dtype, one of the kind names, or a tuple."""
  the_dtype = np.dtype(dtype)
  options = set()
  for k in kind if isinstance(kind, tuple) else (kind,):
    if isinstance(k, str) and k in _DTYPE_KINDS:
      options |= _DTYPE_KINDS[k]
      continue
    try:
      options.add(np.dtype(k))
    except TypeError as err:
      if isinstance(k, str):
        raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_DTYPE_KINDS)}, "
                         "or a compatible input for jnp.dtype()") from None
      raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}") from err
  return the_dtype in options


def iscomplexobj(x) -> bool:
  """True when `x` has a complex dtype (or is a complex Python/NumPy scalar)."""
  if isinstance(x, (complex, np.complexfloating)):
    return True
  if x is None or isinstance(x, (int, float, str, np.generic)):  # bool is an int
    return False
  try:
    typ = x.dtype.type
  except AttributeError:
    typ = asarray(x).dtype.type
  return issubdtype(typ, np.complexfloating)


def isrealobj(x) -> bool:
  return not iscomplexobj(x)


def isscalar(element) -> bool:
  """NumPy scalars, Python scalars and strings, and 0-d arrays (ember's scalars)."""
  if np.isscalar(element):
    return True
  if isinstance(element, (np.ndarray, Array, core.Tracer)):
    return element.ndim == 0
  if getattr(element, "__jax_array__", None) is not None:
    return np.ndim(element.__jax_array__()) == 0
  return False

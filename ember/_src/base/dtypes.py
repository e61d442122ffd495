"""dtypes: canonicalization (the x64 flag), JAX's type-promotion lattice and weak types.

A value is *weakly typed* when its dtype came from a Python scalar (`1`, `2.0`, `1j`): it
adopts the dtype of whatever it meets (`f16_array * 2.0` stays float16). JAX's lattice
(https://docs.jax.dev/en/latest/type_promotion.html) is reproduced below node for node.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

from ember._src.base.basearray import Array
from ember._src.base.config import config, x64_enabled

bfloat16 = np.dtype(ml_dtypes.bfloat16)
float0 = np.dtype([("float0", np.void, 0)])  # tangent dtype of integer inputs (used by autodiff)

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

# ml_dtypes' narrow types, as JAX 0.12's jnp exposes them: 8-, 6- and 4-bit floats, 1-, 2- and
# 4-bit integers. None promotes implicitly to another (JAX's lattice puts each just above
# the weak type), and the CPU backend does not compile them (eager code and the reference
# interpreter run them; jit raises an error that says so).
_small_float_names = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                      "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                      "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"]
# (int1 and uint1 came in ml_dtypes 0.5.2: with an older one jnp has neither)
_narrow_int_names = [n for n in ("int1", "int2", "int4", "uint1", "uint2", "uint4")
                     if hasattr(ml_dtypes, n)]
_small_float_types = [np.dtype(getattr(ml_dtypes, n)) for n in _small_float_names]
_narrow_int_types = [np.dtype(getattr(ml_dtypes, n)) for n in _narrow_int_names]
narrow_dtypes = frozenset(_small_float_types + _narrow_int_types)

_bool_types = [bool_]
_int_types = [uint8, uint16, uint32, uint64, int8, int16, int32, int64]
_float_types = [bfloat16, float16, float32, float64]
_complex_types = [complex64, complex128]
jax_dtypes = frozenset(_bool_types + _int_types + _float_types + _complex_types
                       + _small_float_types + _narrow_int_types)
# ml_dtypes' types have NumPy kind "V": their real kind letter
_custom_kinds = {bfloat16: "f", **{t: "f" for t in _small_float_types},
                 **{t: ("u" if t.name.startswith("u") else "i") for t in _narrow_int_types}}
_custom_float_dtypes = frozenset(t for t, k in _custom_kinds.items() if k == "f")

# The three weak nodes of the lattice: the types of Python int, float and complex scalars.
_weak_types = (int, float, complex)

_64_to_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}


class ExtendedDType:
  """Base for dtypes that are not NumPy dtypes (PRNG key types)."""
  type: type
  name: str


class extended:  # noqa: N801
  """Abstract scalar type of all extended dtypes."""


class prng_key(extended):  # noqa: N801 - JAX's spelling; `issubdtype(k.dtype, dtypes.prng_key)`
  """Abstract scalar type of typed PRNG keys."""


class KeyTy(ExtendedDType):
  """The dtype of typed PRNG keys of one implementation: `key<fry>` for threefry2x32.
  Each key element is `key_shape` uint32 words (see ember._src.library.random.keys)."""
  type = prng_key

  def __init__(self, impl: str = "threefry2x32", tag: str = "fry", key_shape=(2,)):
    self.impl, self.tag, self.key_shape = impl, tag, tuple(key_shape)

  name = property(lambda self: f"key<{self.tag}>")
  itemsize = property(lambda self: 4 * int(np.prod(self.key_shape)))
  __repr__ = __str__ = lambda self: self.name

  def __eq__(self, other):
    return type(other) is KeyTy and other.impl == self.impl

  def __hash__(self):
    return hash(("KeyTy", self.impl))


def has_rules(dt) -> bool:
  """Whether `dt` is a user's extended dtype (jax.dtypes.ExtendedDType with `_rules`), whose
  values ember stores as arrays of its physical element (typed keys have no rules: they are
  wrappers of their data, library/random/keys.py)."""
  return isinstance(dt, ExtendedDType) and getattr(dt, "_rules", None) is not None


def physical_element(dt) -> tuple[tuple, np.dtype]:
  """(shape, dtype) of one element of a user's extended dtype as stored: its rules'
  `physical_element_aval`."""
  elt = dt._rules.physical_element_aval(dt)
  return tuple(elt.shape), np.dtype(elt.dtype)


def canonicalize_dtype(dtype, allow_extended: bool = True) -> np.dtype:
  """The dtype ember computes in: 64-bit types become 32-bit ones unless x64 is on."""
  if isinstance(dtype, ExtendedDType):
    return dtype
  if isinstance(dtype, type) and dtype in _python_scalar_default:
    return default_dtype_for(dtype)
  dt = np.dtype(dtype)
  if not x64_enabled():
    dt = _64_to_32.get(dt, dt)
  return dt


_python_scalar_default = {bool: "b", int: "i", float: "f", complex: "c"}


def default_dtype_for(kind) -> np.dtype:
  """Default dtype of a Python scalar type or dtype kind letter ('b', 'i', 'u', 'f', 'c')."""
  kind = _python_scalar_default.get(kind, kind)
  x64 = x64_enabled()
  return {"b": bool_, "i": int64 if x64 else int32, "u": uint64 if x64 else uint32,
          "f": float64 if x64 else float32, "c": complex128 if x64 else complex64}[kind]


def default_float_dtype() -> np.dtype:
  return default_dtype_for("f")


def default_int_dtype() -> np.dtype:
  return default_dtype_for("i")


def is_python_scalar(x) -> bool:
  return type(x) in _python_scalar_default


def is_weakly_typed(x) -> bool:
  if type(x) in (int, float, complex):
    return True
  return bool(getattr(x, "weak_type", False) or getattr(getattr(x, "aval", None), "weak_type", False))


def check_user_dtype(dtype, fun_name: str | None = None) -> np.dtype:
  """Validate a dtype argument a user passed and return its canonical form."""
  if dtype is None:
    raise ValueError("dtype must be specified.")
  if isinstance(dtype, ExtendedDType):
    return dtype
  if hasattr(dtype, "shape") and hasattr(dtype, "dtype") and not isinstance(dtype, type):
    raise ValueError("Passing an array as a dtype argument is not supported; "
                     "instead of dtype=arr use dtype=arr.dtype.")
  if isinstance(dtype, type) and dtype in _python_scalar_default:
    return default_dtype_for(dtype)
  try:
    dt = np.dtype(dtype)
  except TypeError as e:
    raise TypeError(f"{fun_name or 'ember'}: {dtype!r} is not a valid dtype") from e
  if dt not in jax_dtypes:
    raise TypeError(f"ember only supports number and bool dtypes, got dtype {dt}"
                    + (f" in {fun_name}" if fun_name else ""))
  return canonicalize_dtype(dt)


def dtype(x, canonicalize: bool = False) -> np.dtype:
  """The dtype of a value, array, scalar type or dtype-like (jax.dtypes.dtype)."""
  if x is None:
    raise ValueError(f"Invalid argument to dtype: {x}.")
  if isinstance(x, ExtendedDType):
    return x
  if isinstance(x, type) and x in _python_scalar_default:
    dt = default_dtype_for(x)
  elif type(x) in _python_scalar_default:
    dt = default_dtype_for(type(x))
  elif hasattr(x, "dtype") and not isinstance(x, (type, np.dtype)):
    dt = x.dtype
    if isinstance(dt, ExtendedDType):
      return dt
    dt = np.dtype(dt)
  else:
    try:
      dt = np.dtype(x)
    except TypeError as e:
      raise TypeError(f"Cannot determine dtype of {x!r}") from e
  if dt not in jax_dtypes:
    raise TypeError(f"Value '{x!r}' with dtype {dt} is not a valid ember array type. "
                    "Only arrays of numeric types are supported.")
  return canonicalize_dtype(dt) if canonicalize else dt


# --- the promotion lattice -------------------------------------------------------------

def _lattice(x64: bool) -> dict:
  b1 = bool_
  u8, u16, u32, u64, i8, i16, i32, i64 = _int_types
  bf16, f16, f32, f64 = _float_types
  c64, c128 = _complex_types
  i_, f_, c_ = _weak_types
  return {
      b1: [i_],
      i_: [u8, i8, *_narrow_int_types],
      **{t: [] for t in _narrow_int_types + _small_float_types},
      u8: [i16, u16], u16: [i32, u32], u32: [i64, u64] if x64 else [i32, u64], u64: [f_],
      i8: [i16], i16: [i32], i32: [i64], i64: [f_],
      f_: [*_small_float_types, bf16, f16, c_],
      bf16: [f32], f16: [f32], f32: [f64, c64], f64: [c128],
      c_: [c64], c64: [c128], c128: [],
  }


@functools.lru_cache(None)
def _upper_bounds(x64: bool) -> dict:
  lattice = _lattice(x64)
  ubs = {n: {n} for n in lattice}
  for n in lattice:
    while True:
      new = set().union(*(lattice[b] for b in ubs[n]))
      if new <= ubs[n]:
        break
      ubs[n] |= new
  return ubs


class TypePromotionError(ValueError, TypeError):
  """No implicit promotion joins these dtypes (jax.dtypes.TypePromotionError, a ValueError;
  also a TypeError, which ember raised before)."""


def _least_upper_bound(*nodes):
  UB = _upper_bounds(x64_enabled())
  N = set(nodes)
  if config._values["jax_numpy_dtype_promotion"] == "strict":
    return _strict_least_upper_bound(N, nodes)
  return _least_upper_bound_standard(UB, N, nodes)


def _least_upper_bound_standard(UB, N, nodes):
  CUB = set.intersection(*(UB[n] for n in N))
  LUB = (CUB & N) or {c for c in CUB if CUB <= UB[c]}
  if len(LUB) != 1:
    names = tuple(_node_name(n) for n in nodes)
    if N & set(_small_float_types):
      why = ("8-bit floats do not support implicit promotion", "float32")
    elif N & set(_narrow_int_types):
      why = ("1-bit, 2-bit and 4-bit integers do not support implicit promotion", "int32")
    else:
      raise TypePromotionError(f"Input dtypes {names} have no implicit promotion.")
    raise TypePromotionError(
        f"Input dtypes {names} have no available implicit dtype promotion path. To avoid "
        f"unintended promotion, {why[0]}. If you'd like your inputs to be promoted to another "
        f"type, you can do so explicitly using e.g. x.astype('{why[1]}')")
  return LUB.pop()


@functools.lru_cache(None)
def _strict_upper_bounds() -> dict:
  """JAX's strict lattice: every dtype stands alone (no two distinct dtypes join); the weak
  nodes sit below their kind's dtypes and below each other (int < float < complex), so a
  weak int joins a float dtype or a weak float, but a weak float does not join int32."""
  ints = [t for t in jax_dtypes if dtype_kind(t) in "iu"]
  floats = [t for t in jax_dtypes if dtype_kind(t) == "f"]
  cplx = [t for t in jax_dtypes if dtype_kind(t) == "c"]
  i_, f_, c_ = _weak_types
  ubs = {t: {t} for t in jax_dtypes}
  ubs[c_] = {c_, *cplx}
  ubs[f_] = {f_, *floats} | ubs[c_]
  ubs[i_] = {i_, *ints} | ubs[f_]
  return ubs


def _strict_least_upper_bound(N, nodes):
  UB = _strict_upper_bounds()
  CUB = set.intersection(*(UB[n] for n in N))
  LUB = (CUB & N) or {c for c in CUB if CUB <= UB[c]}
  if len(LUB) == 1:
    return LUB.pop()
  names = tuple(_node_name(n) for n in nodes)
  raise TypePromotionError(
      f"Input dtypes {names} have no available implicit dtype promotion path when "
      "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired output "
      "type, or set jax_numpy_dtype_promotion=standard.")


def _node_name(n) -> str:
  return str(n)  # as JAX: "<class 'int'>" for the weak nodes


def _dtype_and_weaktype(x):
  if isinstance(x, type) and x in _python_scalar_default:  # int, float, complex as dtypes
    return default_dtype_for(x), x is not bool
  if type(x) in _python_scalar_default:
    return dtype(x), type(x) is not bool
  # As JAX 0.12: an ember array (or tracer) keeps its dtype (a float64 array made under x64
  # stays float64); NumPy arrays, scalars and dtypes join as their canonical dtype, so
  # np.float64(1) with a float32 array is float32 in strict mode too.
  if isinstance(x, Array):
    return dtype(x), is_weakly_typed(x)
  return dtype(x, canonicalize=True), is_weakly_typed(x)


def _jax_node(dt, weak: bool):
  if weak:
    return {"b": bool_, "i": int, "u": int, "f": float, "c": complex}[
        dtype_kind(dt)]
  return dt


# (dtype, weak) pairs and the x64 flag -> lattice_result_type's answer: tracing promotes
# the same few pairs thousands of times, and the lattice walk costs ~40 us.
_lattice_memo: dict = {}


def lattice_result_type(*args) -> tuple:
  pairs = tuple([_dtype_and_weaktype(a) for a in args])
  key = (pairs, x64_enabled(), config._values["jax_numpy_dtype_promotion"])
  try:
    return _lattice_memo[key]
  except (KeyError, TypeError):   # TypeError: an unhashable extended dtype
    pass
  out = _lattice_result_type(pairs)
  if len(_lattice_memo) < 4096:
    try:
      _lattice_memo[key] = out
    except TypeError:
      pass
  return out


def _lattice_result_type(pairs) -> tuple:
  dts = [d for d, _ in pairs]
  weaks = [w for _, w in pairs]
  if len(pairs) == 1:
    out, weak = dts[0], weaks[0]
  elif len(set(map(str, dts))) == 1 and not all(weaks):
    out, weak = dts[0], False
  elif all(weaks) and config._values["jax_numpy_dtype_promotion"] != "strict":
    # weak values only: the bound of their strong dtypes, made weak (standard mode); strict
    # mode joins the weak nodes themselves (weak int with weak float is a weak float)
    out = _least_upper_bound(*dict.fromkeys(_jax_node(d, False) for d in dts))
    weak = True
  else:
    out = _least_upper_bound(*dict.fromkeys(_jax_node(d, w) for d, w in zip(dts, weaks)))
    weak = any(out is t for t in _weak_types)  # identity: np.dtype("float64") == float
  if isinstance(out, type):
    out = default_dtype_for(out)
  weak = weak and out != bool_
  return out, weak


def result_type(*args, return_weak_type_flag: bool = False):
  """JAX's dtype promotion of arrays, scalars and dtypes (ember.numpy.result_type)."""
  if not args:
    raise ValueError("at least one array or dtype is required")
  if any(isinstance(getattr(a, "dtype", a), ExtendedDType) for a in args):
    dts = {str(getattr(a, "dtype", a)) for a in args}
    if len(dts) != 1:
      raise TypeError(f"Cannot promote extended dtypes {sorted(dts)}")
    dt = getattr(args[0], "dtype", args[0])
    return (dt, False) if return_weak_type_flag else dt
  dt, weak = lattice_result_type(*(default_float_dtype() if a is None else a for a in args))
  dt = canonicalize_dtype(dt)
  return (dt, weak) if return_weak_type_flag else dt


def _promotion_node(t):
  if any(t is w for w in _weak_types):  # Python int/float/complex are the weak nodes
    return t
  dt = np.dtype(t)
  if dt not in jax_dtypes:
    raise ValueError(f"dtype={dt!r} is not a valid dtype for JAX type promotion.")
  return dt


def promote_types(a, b) -> np.dtype:
  """The promoted dtype of two dtypes (jnp.promote_types). As in JAX it is not
  canonicalized (int32 with int64 is int64 even with x64 off)."""
  out = _least_upper_bound(_promotion_node(a), _promotion_node(b))
  return np.dtype(out)  # a weak node (Python int/float/complex) means its 64-bit type, as in JAX


# --- dtype predicates -----------------------------------------------------------------

def _issubclass(a, b) -> bool:
  return isinstance(a, type) and issubclass(a, b)


def issubdtype(arg1, arg2) -> bool:
  """np.issubdtype on JAX's terms: Python types mean np.dtype(type) (`float` is float64,
  so float32 is not a subdtype of it), bfloat16 is a floating type, and the extended
  (PRNG key) dtypes are subtypes of `extended` / `prng_key`."""
  if isinstance(arg1, ExtendedDType) or _issubclass(arg1, extended):
    a_t = arg1.type if isinstance(arg1, ExtendedDType) else arg1
    if isinstance(arg2, ExtendedDType):
      return str(arg1) == str(arg2)
    return _issubclass(arg2, extended) and issubclass(a_t, arg2)
  if isinstance(arg2, ExtendedDType) or _issubclass(arg2, extended):
    return False
  a, b = (t if _issubclass(t, np.generic) else np.dtype(t).type for t in (arg1, arg2))
  kind = _custom_kinds.get(np.dtype(a)) if a is not np.generic and _issubclass(
      a, np.generic) and np.dtype(a) in _custom_kinds else None
  if kind is not None:   # ml_dtypes' types sit under NumPy's abstract types as in JAX
    return b in (a, *_ABSTRACT_OF_KIND[kind])
  return bool(np.issubdtype(a, b))


_ABSTRACT_OF_KIND = {"f": (np.floating, np.inexact, np.number, np.generic),
                     "i": (np.signedinteger, np.integer, np.number, np.generic),
                     "u": (np.unsignedinteger, np.integer, np.number, np.generic)}


def dtype_kind(dt) -> str:
  """The NumPy kind letter of `dt` ("b", "i", "u", "f", "c"); bfloat16 is "f", int4 "i"; an
  extended dtype (keys, a user's) is "V", no numeric kind, so ops that check kinds reject it."""
  try:
    return _custom_kinds.get(dt) or np.dtype(dt).kind
  except TypeError:
    if isinstance(dt, ExtendedDType):
      return "V"
    raise


def is_inexact(dt) -> bool:
  return issubdtype(dt, np.inexact)


def is_float(dt) -> bool:
  return issubdtype(dt, np.floating)


def is_complex(dt) -> bool:
  return issubdtype(dt, np.complexfloating)


def is_integer(dt) -> bool:
  return issubdtype(dt, np.integer)


def is_unsigned(dt) -> bool:
  return issubdtype(dt, np.unsignedinteger)


def finfo(dt):
  dt = np.dtype(dt) if not isinstance(dt, type) or dt not in _python_scalar_default else default_dtype_for(dt)
  return ml_dtypes.finfo(dt)


def supports_inf(dt) -> bool:
  """Whether the dtype can hold an infinity (False for integers and for the finite-only
  narrow floats, e.g. float8_e4m3fn, where inf becomes NaN)."""
  dt = np.dtype(dt)
  if not issubdtype(dt, np.inexact):
    return False
  return bool(np.isinf(np.array(np.inf, np.float32).astype(dt).astype(np.float32)))


def iinfo(dt):
  dt = np.dtype(dt) if not isinstance(dt, type) or dt not in _python_scalar_default else default_dtype_for(dt)
  return ml_dtypes.iinfo(dt)


def itemsize_bits(dtype) -> int:
  """Bits per element (jax.dtypes.itemsize_bits): bool is 8 (its storage), the sub-byte
  integers and floats their true width, complex twice its parts'."""
  if dtype is None:
    raise ValueError("dtype cannot be None.")
  if np.dtype(dtype) == bool_:
    return 8
  if issubdtype(dtype, np.integer):
    return int(iinfo(dtype).bits)
  if issubdtype(dtype, np.floating):
    return int(finfo(dtype).bits)
  if issubdtype(dtype, np.complexfloating):
    return 2 * int(finfo(dtype).bits)
  raise ValueError(f"unexpected input: {dtype=}")


def scalar_type_of(x) -> type:
  """The Python scalar type (bool, int, float, complex) of a value's dtype
  (jax.dtypes.scalar_type_of)."""
  kind = dtype_kind(dtype(x))
  if kind in ("i", "u"):
    return int
  types = {"b": bool, "f": float, "c": complex}
  if kind not in types:
    raise TypeError(f"Invalid scalar value {x}")
  return types[kind]


def dtype_name(dt) -> str:
  """A dtype's name as JAX prints it: NumPy's, and "float0" for float0 (NumPy says "void")."""
  return "float0" if dt == float0 else dt.name


def short_dtype_name(dt) -> str:
  """f32, i32, u8, bf16, c64, bool: the spelling jaxprs use."""
  if isinstance(dt, ExtendedDType) or dt == float0:
    return str(dt) if dt != float0 else "float0"
  return (np.dtype(dt).name.replace("float", "f").replace("uint", "u")
          .replace("int", "i").replace("complex", "c"))

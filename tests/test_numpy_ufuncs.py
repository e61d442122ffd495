"""ember.numpy elementwise functions (ufuncs): values against NumPy float64, result
dtypes and weak types against JAX 0.12 (tables below, produced with JAX and stored as
data), broadcasting, scalars, empty and 3-D arrays, eager and jit, errors."""
import math
import zlib

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": BF16, "i32": np.int32, "u8": np.uint8,
          "i8": np.int8, "bool": np.bool_, "c64": np.complex64}
# relative tolerance of a result (a few ulps: jnp functions chain several rounded ops)
RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.complex64): 2e-6, np.dtype(np.float16): 2e-3,
        BF16: 1.6e-2, np.dtype(np.float64): 1e-13}


def arr(x, dtype=np.float32):
  return ember.device_put(np.asarray(x, dtype))


def both(f):
  """The function eagerly and under ember.jit: every check runs on both."""
  return [f, ember.jit(f)]


def short(a) -> str:
  """'f32', 'i32w' (weakly typed), ... as in the JAX tables."""
  names = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32",
           "uint8": "u8", "int8": "i8", "int16": "i16", "bool": "bool", "complex64": "c64"}
  return names[np.dtype(a.dtype).name] + ("w" if a.weak_type else "")


def wide(a):
  a = np.asarray(a)
  if a.dtype.kind == "c":
    return a.astype(np.complex128)
  return a.astype(np.float64) if a.dtype.kind in "fV" else a


def assert_close(got, want, dtype):
  rtol = RTOL.get(np.dtype(dtype), 2e-6)
  np.testing.assert_allclose(wide(got), want, rtol=rtol, atol=rtol)


# --- result dtypes and weak types, checked against JAX ------------------------------------

# The argument behind each key of the tables.
VALUES = {
    "f32": lambda: arr([-2.5, -1., -0., 0.5, 1.5, 3.], np.float32),
    "f16": lambda: arr([-2.5, -1., -0., 0.5, 1.5, 3.], np.float16),
    "bf16": lambda: arr([-2.5, -1., -0., 0.5, 1.5, 3.], BF16),
    "i32": lambda: arr([-3, -1, 0, 1, 2, 7], np.int32),
    "u8": lambda: arr([0, 1, 2, 3, 200, 255], np.uint8),
    "i8": lambda: arr([-128, -1, 0, 1, 2, 127], np.int8),
    "bool": lambda: arr([True, False, True, False, True, True], np.bool_),
    "c64": lambda: arr([1 + 2j, -1j, 0, 0.5, -2 + 0.5j, 3], np.complex64),
    "pyint": lambda: 3, "pyfloat": lambda: 2.5,
    "wf": lambda: ember.device_put(0.75),  # a weakly typed float32 scalar array
}

UNARY_KEYS = 'f32 f16 bf16 i32 u8 i8 bool c64 pyint pyfloat wf'
UNARY_DTYPES = {  # produced by JAX 0.12.0.1 (result dtype; w = weak_type)
    'negative': 'f32 f16 bf16 i32 u8 i8 !TypeError c64 i32w f32w f32w',
    'positive': 'f32 f16 bf16 i32 u8 i8 bool c64 i32w f32w f32w',
    'abs': 'f32 f16 bf16 i32 u8 i8 bool f32 i32w f32w f32w',
    'absolute': 'f32 f16 bf16 i32 u8 i8 bool f32 i32w f32w f32w',
    'fabs': 'f32 f16 bf16 f32 f32 f32 f32 !TypeError f32w f32w f32w',
    'sign': 'f32 f16 bf16 i32 u8 i8 !TypeError c64 i32w f32w f32w',
    'floor': 'f32 f16 bf16 i32 u8 i8 bool !TypeError i32w f32w f32w',
    'ceil': 'f32 f16 bf16 i32 u8 i8 bool !TypeError i32w f32w f32w',
    'trunc': 'f32 f16 bf16 i32 u8 i8 bool !TypeError i32w f32w f32w',
    'rint': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32 f32w f32w',
    'round': 'f32 f16 bf16 i32 u8 i8 !ValueError c64 i32w f32w f32w',
    'around': 'f32 f16 bf16 i32 u8 i8 !ValueError c64 i32w f32w f32w',
    'sqrt': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'cbrt': 'f32 f16 bf16 f32 f32 f32 f32 !TypeError f32w f32w f32w',
    'square': 'f32 f16 bf16 i32 u8 i8 i32 c64 i32w f32w f32w',
    'reciprocal': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'exp': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'exp2': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'expm1': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'log': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'log2': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'log10': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32 f32 f32',
    'log1p': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'sin': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'cos': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'tan': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'arcsin': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'arccos': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'arctan': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'sinh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'cosh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'tanh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'arcsinh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'arccosh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'arctanh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'asin': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'acos': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'atan': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'asinh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'acosh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'atanh': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'deg2rad': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'rad2deg': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'degrees': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'radians': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'sinc': 'f32 f16 bf16 f32 f32 f32 f32 c64 f32w f32w f32w',
    'signbit': 'bool bool bool bool bool bool bool !ValueError bool bool bool',
    'isnan': 'bool bool bool bool bool bool bool bool boolw boolw boolw',
    'isinf': 'bool bool bool bool bool bool bool bool bool bool bool',
    'isfinite': 'bool bool bool bool bool bool bool bool bool boolw boolw',
    'isneginf': 'bool bool bool bool bool bool bool !ValueError bool bool bool',
    'isposinf': 'bool bool bool bool bool bool bool !ValueError bool bool bool',
    'real': 'f32 f16 bf16 i32 u8 i8 bool f32 i32w f32w f32w',
    'imag': 'f32 f16 bf16 i32 u8 i8 bool f32 i32w f32w f32w',
    'conj': 'f32 f16 bf16 i32 u8 i8 bool c64 i32w f32w f32w',
    'conjugate': 'f32 f16 bf16 i32 u8 i8 bool c64 i32w f32w f32w',
    'angle': 'f32 f16 bf16 f32 f32 f32 f32 f32 f32 f32 f32',
    'logical_not': 'bool bool bool bool bool bool bool bool boolw boolw boolw',
    'bitwise_not': '!TypeError !TypeError !TypeError i32 u8 i8 bool !TypeError i32w !TypeError !TypeError',
    'invert': '!TypeError !TypeError !TypeError i32 u8 i8 bool !TypeError i32w !TypeError !TypeError',
    'bitwise_invert': '!TypeError !TypeError !TypeError i32 u8 i8 bool !TypeError i32w !TypeError !TypeError',
    'bitwise_count': '!TypeError !TypeError !TypeError u8 u8 u8 u8 !TypeError u8 !TypeError !TypeError',
    'frexp': 'f32,i32 f16,i32 bf16,i32 f32,i32 f32,i32 f32,i32 f32,i32 !TypeError f32,i32 f32,i32 f32,i32',
    'modf': 'f32,f32 f16,f16 bf16,bf16 f32,f32 f32,f32 f32,f32 f32,f32 !TypeError f32w,f32w f32w,f32w f32w,f32w',
    'nan_to_num': 'f32 f16 bf16 i32 u8 i8 bool c64 i32w f32 f32',
    'i0': 'f32 f16 bf16 f32 f32 f32 f32 !ValueError f32w f32w f32w',
    'spacing': 'f32 f16 bf16 f32 f32 f32 f32 !ValueError f32 f32 f32',
}
BINARY_KEYS = 'f32/f32 f32/pyfloat pyint/f32 i32/pyfloat i32/pyint u8/pyint i8/u8 bool/bool bool/pyint f16/pyfloat bf16/f16 bf16/i32 c64/f32 c64/pyfloat f32/i32 i32/i32 u8/u8 wf/pyint pyfloat/pyfloat pyint/pyint i32/i8'
BINARY_DTYPES = {  # produced by JAX 0.12.0.1
    'add': 'f32 f32 f32 f32w i32 u8 i16 bool i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'subtract': 'f32 f32 f32 f32w i32 u8 i16 !TypeError i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'multiply': 'f32 f32 f32 f32w i32 u8 i16 bool i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'divide': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'true_divide': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'floor_divide': 'f32 f32 f32 f32w i32 u8 i16 i32 i32w f16 f32 bf16 !TypeError !TypeError f32 i32 u8 f32w f32w i32w i32',
    'remainder': 'f32 f32 f32 f32w i32 u8 i16 i32 i32w f16 f32 bf16 !TypeError !TypeError f32 i32 u8 f32w f32w i32w i32',
    'mod': 'f32 f32 f32 f32w i32 u8 i16 i32 i32w f16 f32 bf16 !TypeError !TypeError f32 i32 u8 f32w f32w i32w i32',
    'fmod': 'f32 f32 f32 f32w i32 u8 i16 i32 i32w f16 f32 bf16 !TypeError !TypeError f32 i32 u8 f32w f32w i32w i32',
    'divmod': 'f32,f32 f32,f32 f32,f32 f32w,f32w i32,i32 u8,u8 i16,i16 i32,i32 i32w,i32w f16,f16 f32,f32 bf16,bf16 !TypeError !TypeError f32,f32 i32,i32 u8,u8 f32w,f32w f32w,f32w i32w,i32w i32,i32',
    'power': 'f32 f32 f32 f32w i32 u8 i16 i32 i32 f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'pow': 'f32 f32 f32 f32w i32 u8 i16 i32 i32 f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'float_power': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'arctan2': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'atan2': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'hypot': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 !ValueError !ValueError f32 f32 f32 f32w f32w f32w f32',
    'maximum': 'f32 f32 f32 f32w i32 u8 i16 bool i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'minimum': 'f32 f32 f32 f32w i32 u8 i16 bool i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'fmax': 'f32 f32 f32 f32w i32 u8 i16 bool i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'fmin': 'f32 f32 f32 f32w i32 u8 i16 bool i32w f16 f32 bf16 c64 c64 f32 i32 u8 f32w f32w i32w i32',
    'heaviside': 'f32 f32 f32 f32 f32 f32 f32 f32 f32 f16 f32 bf16 !TypeError !TypeError f32 f32 f32 f32w f32w f32w f32',
    'copysign': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 !TypeError !TypeError f32 f32 f32 f32w f32w f32w f32',
    'nextafter': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 !TypeError !TypeError f32 f32 f32 f32w f32w f32w f32',
    'equal': 'bool bool bool boolw bool bool bool bool boolw bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'not_equal': 'bool bool bool boolw bool bool bool bool boolw bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'less': 'bool bool bool boolw bool bool bool bool boolw bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'less_equal': 'bool bool bool boolw bool bool bool bool boolw bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'greater': 'bool bool bool boolw bool bool bool bool boolw bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'greater_equal': 'bool bool bool boolw bool bool bool bool boolw bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'logical_and': 'bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'logical_or': 'bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'logical_xor': 'bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool bool boolw boolw boolw bool',
    'bitwise_and': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 bool i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'bitwise_or': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 bool i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'bitwise_xor': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 bool i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'left_shift': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 i32 i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'right_shift': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 i32 i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'bitwise_left_shift': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 i32 i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'bitwise_right_shift': '!TypeError !TypeError !TypeError !TypeError i32 u8 i16 i32 i32w !TypeError !TypeError !TypeError !TypeError !TypeError !TypeError i32 u8 !TypeError !TypeError i32w i32',
    'gcd': '!ValueError !ValueError !ValueError !ValueError i32 u8 i16 !ValueError i32 !ValueError !ValueError !ValueError !ValueError !ValueError !ValueError i32 u8 !ValueError !ValueError i32w i32',
    'lcm': '!ValueError !ValueError !ValueError !ValueError i32 u8 i16 !ValueError i32 !ValueError !ValueError !ValueError !ValueError !ValueError !ValueError i32 u8 !ValueError !ValueError i32w i32',
    'logaddexp': 'f32 f32 f32 f32w f32 f32 f32 f32 f32w f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'logaddexp2': 'f32 f32 f32 f32 f32 f32 f32 f32 f32 f16 f32 bf16 c64 c64 f32 f32 f32 f32w f32w f32w f32',
    'ldexp': '!ValueError !ValueError !ValueError !ValueError f32 f32 f32 f32 f32 !ValueError !ValueError bf16 !ValueError !ValueError f32 f32 f32 f32 !ValueError f32 f32',
}


@pytest.mark.parametrize("name", sorted(UNARY_DTYPES))
def test_unary_result_dtype_and_weak_type_match_jax(name):
  for key, expected in zip(UNARY_KEYS.split(), UNARY_DTYPES[name].split()):
    fn = getattr(jnp, name)
    for f in both(fn):
      if expected.startswith("!"):
        with pytest.raises((TypeError, ValueError)) as e:
          f(VALUES[key]())
        assert type(e.value).__name__ == expected[1:], (name, key)
        continue
      out = f(VALUES[key]())
      got = ",".join(short(o) for o in (out if isinstance(out, tuple) else (out,)))
      assert got == expected, (name, key, got, expected)


# jnp.power with a concrete integer exponent is `integer_pow` eagerly but the general
# path under jit (where the exponent is traced), exactly as in JAX; only these differ.
_JIT_DIFFERS = {("power", "bool/pyint"), ("pow", "bool/pyint"), ("power", "pyint/pyint"),
                ("pow", "pyint/pyint")}


@pytest.mark.parametrize("name", sorted(BINARY_DTYPES))
def test_binary_result_dtype_and_weak_type_match_jax(name):
  for key, expected in zip(BINARY_KEYS.split(), BINARY_DTYPES[name].split()):
    a, b = key.split("/")
    fn = getattr(jnp, name)
    for f in both(fn):
      if expected.startswith("!"):
        with pytest.raises((TypeError, ValueError)) as e:
          f(VALUES[a](), VALUES[b]())
        assert type(e.value).__name__ == expected[1:], (name, key)
        continue
      out = f(VALUES[a](), VALUES[b]())
      got = ",".join(short(o) for o in (out if isinstance(out, tuple) else (out,)))
      if f is not fn and (name, key) in _JIT_DIFFERS:
        continue
      assert got == expected, (name, key, got, expected)


def test_weak_type_examples_from_the_jax_docs():
  i32 = arr([1, 2, 3], np.int32)
  f16 = arr([1, 2, 3], np.float16)
  for f in both(lambda x: jnp.add(x, 1.0)):
    out = f(i32)
    assert (out.dtype, out.weak_type) == (np.float32, True)
  for f in both(lambda x: x * 2.0):
    out = f(f16)
    assert (out.dtype, out.weak_type) == (np.float16, False)
  out = jnp.multiply(2, 3.0)
  assert (out.dtype, out.weak_type) == (np.float32, True)
  with ember.enable_x64():
    out = jnp.sqrt(arr([4], np.int32))   # integers up to 32 bits go to float32 even with x64
    assert out.dtype == np.float32
    out = jnp.sqrt(ember.device_put(np.array([4], np.int64)))
    assert out.dtype == np.float64
    assert jnp.add(arr([1.], np.float32), 1.0).dtype == np.float32
    assert jnp.square(arr([True], np.bool_)).dtype == np.int32


# --- values against NumPy -------------------------------------------------------------------

def _sample(domain, dtype, shape):
  """Deterministic test values of `shape` in `domain`, representable in `dtype`."""
  rng = np.random.default_rng(zlib.crc32(repr((domain, shape)).encode()))
  n = int(np.prod(shape))
  lo, hi = {"real": (-3, 3), "pos": (0.05, 4), "unit": (-0.95, 0.95), "ge1": (1.05, 4),
            "nonzero": (0.25, 3), "pow_base": (0.1, 3), "pow_exp": (-2, 2)}[domain]
  kind = np.dtype(dtype).kind
  if kind in "iu":
    lo, hi = {"unit": (-1, 2), "pos": (0, 20), "ge1": (1, 20)}.get(domain, (-20, 20))
    v = rng.integers(0 if kind == "u" else lo, hi, n)
    if domain in ("pos", "ge1", "nonzero"):
      v = np.maximum(v, 1)
  elif kind == "b":
    v = rng.integers(0, 2, n).astype(bool)
  else:
    v = rng.uniform(lo, hi, n)
    if domain == "nonzero":
      v = v * rng.choice([-1, 1], n)
    if kind == "c":
      v = v + 1j * rng.uniform(lo, hi, n) * 0.5
  return np.asarray(v).astype(dtype).reshape(shape)


# name -> (NumPy reference, domain, dtypes to test)
F, FC = ("f32", "f16", "bf16", "i32"), ("f32", "f16", "bf16", "i32", "c64")
UNARY = {
    "negative": (np.negative, "real", FC), "positive": (np.positive, "real", FC),
    "abs": (np.abs, "real", FC + ("u8", "bool")), "absolute": (np.abs, "real", FC),
    "fabs": (np.fabs, "real", F), "sign": (np.sign, "real", F + ("u8",)),
    "floor": (np.floor, "real", F), "ceil": (np.ceil, "real", F),
    "trunc": (np.trunc, "real", F), "fix": (np.fix, "real", F), "rint": (np.rint, "real", FC),
    "round": (np.round, "real", FC), "around": (np.round, "real", F),
    "sqrt": (np.sqrt, "pos", FC), "cbrt": (np.cbrt, "real", F), "square": (np.square, "real", FC),
    "reciprocal": (lambda v: 1 / v, "nonzero", FC), "exp": (np.exp, "real", FC),
    "exp2": (np.exp2, "real", FC), "expm1": (np.expm1, "real", FC), "log": (np.log, "pos", FC),
    "log2": (np.log2, "pos", FC), "log10": (np.log10, "pos", FC), "log1p": (np.log1p, "pos", FC),
    "sin": (np.sin, "real", FC), "cos": (np.cos, "real", FC), "tan": (np.tan, "unit", FC),
    "arcsin": (np.arcsin, "unit", FC), "arccos": (np.arccos, "unit", FC),
    "arctan": (np.arctan, "real", FC), "sinh": (np.sinh, "real", FC),
    "cosh": (np.cosh, "real", FC), "tanh": (np.tanh, "real", FC),
    "arcsinh": (np.arcsinh, "real", FC), "arccosh": (np.arccosh, "ge1", FC),
    "arctanh": (np.arctanh, "unit", FC), "asin": (np.arcsin, "unit", F),
    "acos": (np.arccos, "unit", F), "atan": (np.arctan, "real", F),
    "asinh": (np.arcsinh, "real", F), "acosh": (np.arccosh, "ge1", F),
    "atanh": (np.arctanh, "unit", F), "deg2rad": (np.deg2rad, "real", F),
    "rad2deg": (np.rad2deg, "real", F), "degrees": (np.degrees, "real", F),
    "radians": (np.radians, "real", F), "sinc": (np.sinc, "real", FC),
    "signbit": (np.signbit, "real", F), "isnan": (np.isnan, "real", FC),
    "isinf": (np.isinf, "real", FC), "isfinite": (np.isfinite, "real", FC),
    "isneginf": (np.isneginf, "real", F), "isposinf": (np.isposinf, "real", F),
    "real": (np.real, "real", FC), "imag": (np.imag, "real", FC), "conj": (np.conj, "real", FC),
    "conjugate": (np.conjugate, "real", FC), "angle": (np.angle, "real", FC),
    "logical_not": (np.logical_not, "real", FC + ("bool",)),
    "bitwise_not": (np.invert, "real", ("i32", "u8", "i8", "bool")),
    "invert": (np.invert, "real", ("i32", "u8", "bool")),
    "bitwise_invert": (np.invert, "real", ("i32", "u8")),
    "nan_to_num": (np.nan_to_num, "real", FC), "i0": (np.i0, "real", F),
    "spacing": (np.spacing, "real", ("f32", "f16")),
}
SHAPES = [(), (0,), (2, 3, 4)]


_EXACT_INT_OPS = (np.invert, np.negative, np.positive, np.abs, np.square, np.sign, np.add,
                  np.subtract, np.multiply, np.floor_divide, np.remainder, np.mod, np.fmod,
                  np.maximum, np.minimum, np.fmax, np.fmin, np.equal, np.not_equal, np.less,
                  np.less_equal, np.greater, np.greater_equal, np.logical_and, np.logical_or,
                  np.logical_xor, np.logical_not, np.bitwise_and, np.bitwise_or,
                  np.bitwise_xor, np.isnan, np.isinf, np.isfinite, np.real, np.imag, np.conj,
                  np.conjugate, np.floor, np.ceil, np.trunc, np.nan_to_num)


def _ref_input(x, ref):
  """The float64/complex128 value NumPy computes the reference on (integers and bools stay
  as they are for the operations that keep integer dtypes)."""
  if x.dtype.kind in "biu":
    return x if ref in _EXACT_INT_OPS else x.astype(np.float64)
  return wide(x)


def _reference(ref, x):
  with np.errstate(all="ignore"):
    return ref(_ref_input(x, ref))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_numpy(name):
  ref, domain, dtype_keys = UNARY[name]
  fn = getattr(jnp, name)
  for key in dtype_keys:
    dt = DTYPES[key]
    for shape in SHAPES:
      x = _sample(domain, dt, shape)
      want = _reference(ref, x)
      for f in both(fn):
        got = f(ember.device_put(x))
        assert got.shape == shape
        rtol_dtype = got.dtype if np.dtype(got.dtype).kind in "fcV" else np.float32
        assert_close(got, want, rtol_dtype)


def test_tuple_valued_unary_functions_match_numpy():
  x = _sample("real", np.float32, (2, 3, 4)) * 100
  for f in both(jnp.frexp):
    m, e = f(arr(x))
    wm, we = np.frexp(x)
    np.testing.assert_array_equal(np.asarray(m), wm)
    np.testing.assert_array_equal(np.asarray(e), we)
    assert e.dtype == np.int32
  for f in both(jnp.modf):
    frac, whole = f(arr(x))
    wf, ww = np.modf(x)
    np.testing.assert_array_equal(np.asarray(frac), wf)
    np.testing.assert_array_equal(np.asarray(whole), ww)
  special = np.array([0., -0., np.inf, -np.inf, np.nan, 1.5, -3.0], np.float32)
  m, e = jnp.frexp(arr(special))
  wm, we = np.frexp(special)
  np.testing.assert_array_equal(np.asarray(m), wm)
  np.testing.assert_array_equal(np.asarray(e), we)


# name -> (NumPy reference, domain of x, domain of y, dtypes to test)
FF = ("f32", "f16", "bf16")
BINARY = {
    "add": (np.add, "real", "real", FF + ("i32", "c64", "u8")),
    "subtract": (np.subtract, "real", "real", FF + ("i32", "c64")),
    "multiply": (np.multiply, "real", "real", FF + ("i32", "c64", "bool")),
    "divide": (np.divide, "real", "nonzero", FF + ("i32", "c64")),
    "true_divide": (np.true_divide, "real", "nonzero", FF + ("i32",)),
    "floor_divide": (np.floor_divide, "real", "nonzero", FF + ("i32", "u8")),
    "remainder": (np.remainder, "real", "nonzero", FF + ("i32", "u8")),
    "mod": (np.mod, "real", "nonzero", ("f32", "i32")),
    "fmod": (np.fmod, "real", "nonzero", FF + ("i32",)),
    "power": (np.power, "pow_base", "pow_exp", FF + ("c64",)),
    "pow": (np.power, "pow_base", "pow_exp", ("f32",)),
    "float_power": (np.float_power, "pow_base", "pow_exp", ("f32", "f16")),
    "arctan2": (np.arctan2, "real", "real", FF + ("i32",)),
    "atan2": (np.arctan2, "real", "real", ("f32",)),
    "hypot": (np.hypot, "real", "real", FF + ("i32",)),
    "maximum": (np.maximum, "real", "real", FF + ("i32", "u8", "bool")),
    "minimum": (np.minimum, "real", "real", FF + ("i32", "u8", "bool")),
    "fmax": (np.fmax, "real", "real", FF + ("i32",)),
    "fmin": (np.fmin, "real", "real", FF + ("i32",)),
    "heaviside": (np.heaviside, "real", "real", ("f32", "f16")),
    "copysign": (np.copysign, "real", "real", FF),
    "equal": (np.equal, "real", "real", FF + ("i32", "c64", "bool")),
    "not_equal": (np.not_equal, "real", "real", ("f32", "i32", "c64")),
    "less": (np.less, "real", "real", ("f32", "i32", "c64", "bool")),
    "less_equal": (np.less_equal, "real", "real", ("f32", "i32", "c64")),
    "greater": (np.greater, "real", "real", ("f32", "i32", "c64")),
    "greater_equal": (np.greater_equal, "real", "real", ("f32", "i32", "c64", "u8")),
    "logical_and": (np.logical_and, "real", "real", ("f32", "i32", "bool", "c64")),
    "logical_or": (np.logical_or, "real", "real", ("f32", "i32", "bool")),
    "logical_xor": (np.logical_xor, "real", "real", ("f32", "i32", "bool")),
    "bitwise_and": (np.bitwise_and, "real", "real", ("i32", "u8", "i8", "bool")),
    "bitwise_or": (np.bitwise_or, "real", "real", ("i32", "u8", "bool")),
    "bitwise_xor": (np.bitwise_xor, "real", "real", ("i32", "u8", "bool")),
    "logaddexp": (np.logaddexp, "real", "real", FF + ("i32",)),
    "logaddexp2": (np.logaddexp2, "real", "real", FF + ("i32",)),
}
SHAPE_PAIRS = [((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (3, 4)), ((), (2, 3)), ((0, 3), (3,)),
               ((), ())]


def _binary_reference(ref, x, y):
  with np.errstate(all="ignore"):
    return ref(_ref_input(x, ref), _ref_input(y, ref))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_match_numpy(name):
  ref, dom_x, dom_y, dtype_keys = BINARY[name]
  fn = getattr(jnp, name)
  for key in dtype_keys:
    dt = DTYPES[key]
    for sx, sy in SHAPE_PAIRS:
      x, y = _sample(dom_x, dt, sx), _sample(dom_y, dt, sy)
      want = _binary_reference(ref, x, y)
      for f in both(fn):
        got = f(ember.device_put(x), ember.device_put(y))
        assert got.shape == np.broadcast_shapes(sx, sy)
        rtol_dtype = got.dtype if np.dtype(got.dtype).kind in "fcV" else np.float32
        assert_close(got, want, rtol_dtype)


def test_nextafter_is_exact_in_each_float_dtype():
  for dt in (np.float32, np.float16, BF16):
    x = np.array([0., 1., -1., 1e-3, 3.], dt)
    y = np.array([1., 0., -2., -1., np.inf], dt)
    for f in both(jnp.nextafter):
      got = f(arr(x, dt), arr(y, dt))
      assert got.dtype == dt
      np.testing.assert_array_equal(wide(got), wide(np.nextafter(x, y)))


def test_integer_bitwise_and_shifts_match_numpy():
  x = np.array([[-7, 0, 5], [100, -1, 2**20]], np.int32)
  s = np.array([0, 1, 3], np.int32)
  u = np.array([1, 128, 255], np.uint8)
  for f, ref in [(jnp.left_shift, np.left_shift), (jnp.right_shift, np.right_shift),
                 (jnp.bitwise_left_shift, np.left_shift),
                 (jnp.bitwise_right_shift, np.right_shift)]:
    for g in both(f):
      np.testing.assert_array_equal(np.asarray(g(arr(x, np.int32), arr(s, np.int32))),
                                    ref(x, s))
      got = g(arr(u, np.uint8), arr([1, 2, 7], np.uint8))
      assert got.dtype == np.uint8  # unsigned: logical shift right
      np.testing.assert_array_equal(np.asarray(got), ref(u, np.array([1, 2, 7], np.uint8)))
  for g in both(jnp.bitwise_count):
    got = g(arr(x, np.int32))
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(np.asarray(got),
                                  [[bin(abs(int(v))).count("1") for v in row] for row in x])


def test_gcd_and_lcm_match_numpy():
  rng = np.random.default_rng(0)
  for dt in (np.int32, np.int8, np.uint8):
    lo = 0 if dt == np.uint8 else -100
    x = rng.integers(lo, 100, (3, 4)).astype(dt)
    y = rng.integers(lo, 100, (4,)).astype(dt)
    x[0, 0], y[1] = 0, 0
    for f in both(jnp.gcd):
      got = f(arr(x, dt), arr(y, dt))
      assert got.dtype == dt
      np.testing.assert_array_equal(np.asarray(got), np.gcd(x, y))
    for f in both(jnp.lcm):
      small_x, small_y = x % 12, y % 12   # keep lcm inside int8
      np.testing.assert_array_equal(np.asarray(f(arr(small_x, dt), arr(small_y, dt))),
                                    np.lcm(small_x, small_y))
  # worst case of Euclid's algorithm: consecutive Fibonacci numbers
  assert int(jnp.gcd(1836311903, 1134903170)) == 1
  assert int(jnp.gcd(arr(-(2**31) + 1, np.int32), 7)) == math.gcd(2**31 - 1, 7)


def test_ldexp_matches_numpy_and_rejects_float_exponents():
  x = _sample("real", np.float32, (2, 3, 4))
  n = np.arange(-12, 12, dtype=np.int32).reshape(2, 3, 4)
  for f in both(jnp.ldexp):
    np.testing.assert_array_equal(np.asarray(f(arr(x), arr(n, np.int32))), np.ldexp(x, n))
    got = f(arr([1.5, -2., np.inf, 0.], np.float16), arr([3], np.int8))
    assert got.dtype == np.float16
    np.testing.assert_array_equal(wide(got), [12., -16., np.inf, 0.])
  assert jnp.ldexp(3, 2).dtype == np.float32 and float(jnp.ldexp(3, 2)) == 12.0
  with pytest.raises(ValueError, match="ldexp not supported"):
    jnp.ldexp(arr([1.0]), arr([1.0]))


# --- semantics ------------------------------------------------------------------------------

def test_floor_divide_and_remainder_follow_python_signs():
  xs = [7, -7, 7, -7, 0, 6, -6]
  ys = [2, 2, -2, -2, 3, -3, 3]
  for dt in (np.int32, np.float32):
    for f in both(jnp.floor_divide):
      np.testing.assert_array_equal(np.asarray(f(arr(xs, dt), arr(ys, dt))),
                                    [x // y for x, y in zip(xs, ys)])
    for f in both(jnp.remainder):
      np.testing.assert_array_equal(np.asarray(f(arr(xs, dt), arr(ys, dt))),
                                    [x % y for x, y in zip(xs, ys)])
    for f in both(jnp.fmod):
      np.testing.assert_array_equal(np.asarray(f(arr(xs, dt), arr(ys, dt))),
                                    [math.fmod(x, y) for x, y in zip(xs, ys)])
    for f in both(jnp.divmod):
      q, r = f(arr(xs, dt), arr(ys, dt))
      np.testing.assert_array_equal(np.asarray(q), [x // y for x, y in zip(xs, ys)])
      np.testing.assert_array_equal(np.asarray(r), [x % y for x, y in zip(xs, ys)])
  # x % 0 for integers: 0 (no trap), as JAX
  np.testing.assert_array_equal(np.asarray(jnp.remainder(arr([5, -5], np.int32), 0)), [0, 0])
  np.testing.assert_array_equal(np.asarray(jnp.remainder(arr([5.], np.float32), 0.)), [np.nan])


def test_power_integer_exponent_paths():
  x = arr([[-2., 0.5, 3.]])
  assert [e.primitive.name for e in ember.make_jaxpr(lambda x: x ** 2)(x).eqns] == \
      ["integer_pow"]
  assert str(ember.make_jaxpr(lambda x: jnp.power(x, 3))(x)) == \
      "{ lambda ; a:f32[1,3]. let b:f32[1,3] = integer_pow[y=3] a in (b,) }"
  assert str(ember.make_jaxpr(lambda x: x ** 2.5)(x)) == \
      "{ lambda ; a:f32[1,3]. let b:f32[1,3] = pow a 2.5:f32[] in (b,) }"
  # a float base with an integer array exponent: lax.pow with the int32 exponent as it is
  eqns = ember.make_jaxpr(jnp.power)(x, arr([1, 2, 3], np.int32)).eqns
  assert [e.primitive.name for e in eqns] == ["broadcast_in_dim", "pow"]
  assert eqns[1].invars[1].aval.dtype == np.int32
  np.testing.assert_allclose(np.asarray(jnp.power(x, -1)), [[-0.5, 2., 1 / 3]], rtol=1e-6)
  base = np.array([-3, -1, 0, 1, 2, 5], np.int32)
  expo = np.array([0, 3, 5, 0, 10, 3], np.int32)
  for f in both(jnp.power):
    got = f(arr(base, np.int32), arr(expo, np.int32))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), base ** expo)
  assert int(jnp.power(2, 10)) == 1024
  with pytest.raises(TypeError, match="negative powers"):
    jnp.power(arr([2], np.int32), -1)



def test_power_python_float_base_integer_exponent():
  # optax's `beta ** count` with an int32 count (JAX 0.12: `pow 0.9:f32[] j` under jit, a
  # weak f32 eagerly where the concrete exponent takes the integer_pow path)
  c = arr(3, np.int32)
  for f, weak in zip(both(lambda c: (0.9 ** c, jnp.power(0.5, c))), [True, False]):
    a, b = f(c)
    assert a.dtype == np.float32 and b.dtype == np.float32 and a.weak_type == weak
    np.testing.assert_allclose([float(a), float(b)], [0.9 ** 3, 0.125], rtol=1e-6)
  assert str(ember.make_jaxpr(lambda c: 0.9 ** c)(c)) == \
      "{ lambda ; a:i32[]. let b:f32[] = pow 0.9:f32[] a in (b,) }"

def test_bool_arithmetic_is_logical():
  t, f_ = arr([True, True, False], np.bool_), arr([True, False, False], np.bool_)
  for g in both(jnp.add):
    out = g(t, f_)
    assert out.dtype == np.bool_ and np.asarray(out).tolist() == [True, True, False]
  for g in both(jnp.multiply):
    assert np.asarray(g(t, f_)).tolist() == [True, False, False]
  with pytest.raises(TypeError, match="sub does not accept dtype bool"):
    jnp.subtract(t, f_)


def test_round_with_decimals():
  x = np.array([[1.2345, -2.5, 0.125, 12345.678]], np.float32)
  for dec in (0, 1, 2, -1, -2):
    for f in both(lambda a, d=dec: jnp.round(a, d)):
      np.testing.assert_allclose(np.asarray(f(arr(x))), np.round(x.astype(np.float64), dec),
                                 rtol=1e-6, atol=1e-6)
  # float16 rounds through float32 (x * 10 would overflow float16), then back
  want16 = np.round(x.astype(np.float16).astype(np.float32), 1).astype(np.float16)
  np.testing.assert_array_equal(wide(jnp.round(arr(x, np.float16), 1)), wide(want16))
  assert np.asarray(jnp.round(arr([0.5, 1.5, 2.5, -0.5]))).tolist() == [0., 2., 2., -0.]
  ints = arr([15, -25], np.int32)
  assert jnp.round(ints, 2) is ints or np.asarray(jnp.round(ints, 2)).tolist() == [15, -25]
  assert np.asarray(jnp.around(arr([1 + 2.5j], np.complex64))).tolist() == [1 + 2j]
  assert round(arr(2.567), 1).dtype == np.float32   # Array.__round__
  np.testing.assert_allclose(float(round(arr(2.567), 1)), 2.6, rtol=1e-6)
  with pytest.raises(TypeError, match="decimals"):
    jnp.round(arr([1.0]), 1.5)
  with pytest.raises(NotImplementedError):
    jnp.round(ints, -1)


def test_clip():
  x = _sample("real", np.float32, (2, 3, 4))
  for f in both(lambda a: jnp.clip(a, -1, 1.5)):
    np.testing.assert_array_equal(np.asarray(f(arr(x))), np.clip(x, -1, 1.5))
  lo = np.linspace(-2, 0, 4).astype(np.float32)
  for f in both(lambda a, l: jnp.clip(a, min=l)):
    np.testing.assert_array_equal(np.asarray(f(arr(x), arr(lo))), np.maximum(x, lo))
  for f in both(lambda a: jnp.clip(a, max=0)):
    np.testing.assert_array_equal(np.asarray(f(arr(x))), np.minimum(x, 0))
  out = jnp.clip(arr([1, 5, 9], np.int32), 2, 6)
  assert out.dtype == np.int32 and np.asarray(out).tolist() == [2, 5, 6]
  assert arr([1., 5.]).clip(2, 3).tolist() == [2., 3.]
  assert np.isnan(np.asarray(jnp.clip(arr([np.nan]), 0, 1))).all()
  with pytest.raises(ValueError, match="Complex values have no ordering"):
    jnp.clip(arr([1j], np.complex64), 0, 1)
  with pytest.raises(ValueError, match="No input"):
    jnp.clip()


def test_nan_and_inf_handling():
  x = np.array([np.nan, np.inf, -np.inf, 1., -0.], np.float32)
  for f in both(jnp.nan_to_num):
    np.testing.assert_array_equal(np.asarray(f(arr(x))), np.nan_to_num(x))
  for f in both(lambda a: jnp.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0)):
    np.testing.assert_array_equal(np.asarray(f(arr(x))), [1., 2., -2., 1., 0.])
  c = np.array([complex(np.nan, np.inf)], np.complex64)
  np.testing.assert_array_equal(np.asarray(jnp.nan_to_num(arr(c, np.complex64))),
                                np.nan_to_num(c))
  for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"):
    for f in both(getattr(jnp, name)):
      np.testing.assert_array_equal(np.asarray(f(arr(x))), getattr(np, name)(x))
  cx = np.array([complex(np.inf, 0), complex(0, np.nan), 1 + 1j], np.complex64)
  for name in ("isnan", "isinf", "isfinite"):
    np.testing.assert_array_equal(np.asarray(getattr(jnp, name)(arr(cx, np.complex64))),
                                  getattr(np, name)(cx))
  with pytest.raises(ValueError, match="not well defined for complex"):
    jnp.isposinf(arr(cx, np.complex64))
  for f in both(jnp.maximum):   # maximum/minimum propagate NaN, fmax/fmin ignore it
    np.testing.assert_array_equal(np.asarray(f(arr([np.nan, 1.]), arr([0., np.nan]))),
                                  [np.nan, np.nan])
  for f in both(jnp.fmax):
    np.testing.assert_array_equal(np.asarray(f(arr([np.nan, 1., np.nan]), arr([0., np.nan, np.nan]))),
                                  [0., 1., np.nan])
  for f in both(jnp.fmin):
    np.testing.assert_array_equal(np.asarray(f(arr([np.nan, 1.]), arr([0., np.nan]))), [0., 1.])
  for f in both(jnp.heaviside):
    np.testing.assert_array_equal(np.asarray(f(arr([-1., 0., 2., np.nan]), arr(0.5))),
                                  [0., 0.5, 1., np.nan])
  np.testing.assert_array_equal(np.asarray(jnp.signbit(arr([-0., 0., -np.nan], np.float32))),
                                [True, False, True])


def test_numerically_careful_functions():
  for f in both(jnp.logaddexp):
    np.testing.assert_allclose(np.asarray(f(arr([1000., -np.inf, np.inf, 0.]),
                                            arr([1000., -np.inf, np.inf, -np.inf]))),
                               [1000 + np.log(2), -np.inf, np.inf, 0.], rtol=1e-6)
  for f in both(jnp.logaddexp2):
    np.testing.assert_allclose(np.asarray(f(arr([500.]), arr([500.]))), [501.], rtol=1e-6)
  for f in both(jnp.hypot):   # no overflow/underflow of the squares
    got = np.asarray(f(arr([1e30, 3e-30, np.inf, 3.]), arr([1e30, 4e-30, np.nan, 4.])))
    np.testing.assert_allclose(got, [np.sqrt(2) * 1e30, 5e-30, np.inf, 5.], rtol=1e-6)
  for f in both(jnp.sinc):   # exact at the integers, accurate near them
    x = np.array([0., 1., -2., 1e-4, 2.5, 1000.25], np.float32)
    want = np.sinc(x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(f(arr(x))), want, rtol=2e-6, atol=1e-12)
    assert float(f(arr(np.inf))) == 0.0
  for f in both(jnp.i0):
    x = np.array([-3., 0., 0.5, 2., 10., 50.], np.float32)
    np.testing.assert_allclose(np.asarray(f(arr(x))), np.i0(x.astype(np.float64)), rtol=2e-6)
  for f in both(jnp.copysign):
    np.testing.assert_array_equal(np.asarray(f(arr([1., -2., 3.]), arr([-0., 1., -np.inf]))),
                                  [-1., 2., -3.])
  for f in both(lambda z: jnp.angle(z, deg=True)):
    np.testing.assert_allclose(np.asarray(f(arr([1j, -1, 1 + 1j], np.complex64))),
                               [90., 180., 45.], rtol=1e-6)
  for f in both(jnp.arccosh):   # complex branch: non-negative real part, as NumPy
    z = np.array([-2 + 0j, 0.5 + 0j, 3 - 1j], np.complex64)
    np.testing.assert_allclose(np.asarray(f(arr(z, np.complex64))), np.arccosh(z.astype(complex)),
                               rtol=2e-6)


def test_complex_comparisons_are_lexicographic():
  x = np.array([1 + 2j, 1 + 1j, 2 + 0j, 1 + 1j], np.complex64)
  y = np.array([1 + 1j, 1 + 1j, 1 + 5j, 2 + 0j], np.complex64)
  for name in ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum"):
    for f in both(getattr(jnp, name)):
      np.testing.assert_array_equal(np.asarray(f(arr(x, np.complex64), arr(y, np.complex64))),
                                    getattr(np, name)(x, y))


def test_broadcasting_scalars_and_operators():
  x = _sample("real", np.float32, (2, 3, 4))
  for f in both(lambda a: (a + 1, 2 * a, a / 2, 1 / (a + 10), -a, abs(a), a ** 2, a % 1.5,
                           a // 2, a > 0, a <= 1)):
    outs = f(arr(x))
    wants = (x + 1, 2 * x, x / 2, 1 / (x + 10), -x, abs(x), x ** 2, x % 1.5, x // 2, x > 0,
             x <= 1)
    for got, want in zip(outs, wants):
      assert got.shape == want.shape and got.dtype == want.dtype
      np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
  i = np.arange(6, dtype=np.int32).reshape(2, 3)
  for f in both(lambda a: (a & 3, a | 8, a ^ 1, ~a, a << 2, a >> 1)):
    for got, want in zip(f(arr(i, np.int32)), (i & 3, i | 8, i ^ 1, ~i, i << 2, i >> 1)):
      np.testing.assert_array_equal(np.asarray(got), want)
  assert jnp.add(1, 2).shape == () and int(jnp.add(1, 2)) == 3
  assert jnp.sin(arr(np.zeros((0, 3)))).shape == (0, 3)
  assert jnp.add(arr(np.zeros((0, 1))), arr(np.ones(3))).shape == (0, 3)


def test_jaxprs_are_built_from_lax_primitives():
  x = arr(np.ones(3))
  assert str(ember.make_jaxpr(jnp.sin)(x)) == \
      "{ lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) }"
  assert str(ember.make_jaxpr(jnp.isfinite)(arr([1, 2], np.int32))) == \
      "{ lambda ; a:i32[2]. let b:bool[2] = broadcast_in_dim True:bool[] in (b,) }"
  # the same equations as JAX's jnp.remainder (JAX wraps them in a jit equation)
  assert str(ember.make_jaxpr(jnp.remainder)(x, 2)) == """\
{ lambda ; a:f32[3] b:i32[]. let
    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    d:f32[3] = rem a c
    e:bool[3] = ne d 0.0:f32[]
    f:bool[3] = lt d 0.0:f32[]
    g:bool[] = lt c 0.0:f32[]
    h:bool[3] = ne f g
    i:bool[3] = and h e
    j:f32[3] = add d c
    k:f32[3] = select_n i d j
  in (k,) }"""
  assert str(ember.make_jaxpr(jnp.square)(arr([1, 2], np.int32))) == \
      "{ lambda ; a:i32[2]. let b:i32[2] = square a in (b,) }"


# --- errors ------------------------------------------------------------------------------

def test_errors_name_the_function_and_the_problem():
  with pytest.raises(TypeError, match="add requires ndarray or scalar arguments"):
    jnp.add([1, 2], 1)
  with pytest.raises(TypeError, match="sin requires ndarray or scalar arguments"):
    jnp.sin("a")
  with pytest.raises(ValueError, match=r"Incompatible shapes for broadcasting.*\(2, 3\).*\(4,\)"):
    jnp.add(arr(np.ones((2, 3))), arr(np.ones(4)))
  with pytest.raises(TypeError, match="floor_divide does not support complex"):
    jnp.floor_divide(arr([1j], np.complex64), 2)
  with pytest.raises(ValueError, match="hypot is not well defined for complex"):
    jnp.hypot(arr([1j], np.complex64), 1)
  with pytest.raises(ValueError, match="gcd must be integers"):
    jnp.gcd(arr([1.]), 2)
  with pytest.raises(TypeError, match="frexp does not support complex"):
    jnp.frexp(arr([1j], np.complex64))
  with pytest.raises(TypeError, match="fabs' does not support complex"):
    jnp.fabs(arr([1j], np.complex64))
  with pytest.raises(TypeError, match="and does not accept dtype float32"):
    jnp.bitwise_and(arr([1.]), 1)
  with pytest.raises(TypeError, match="cbrt does not accept dtype complex64"):
    jnp.cbrt(arr([1j], np.complex64))

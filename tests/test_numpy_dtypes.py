"""ember.numpy scalar types, dtype helpers and JAX's type-promotion tables.

The tables below were produced with JAX 0.12 (`jnp.promote_types`, `x + scalar` and
`jnp.result_type`, in 32- and 64-bit mode); the tests compare ember against them.
"""
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp

NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "bfloat16", "float16", "float32", "float64", "complex64", "complex128"]
SHORT = {"b1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
         "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bf16": "bfloat16",
         "f16": "float16", "f32": "float32", "f64": "float64", "c64": "complex64",
         "c128": "complex128"}
PY_TYPES = [bool, int, float, complex]
MODES = [False, True]  # x64 off / on

# --- JAX 0.12's answers ------------------------------------------------------------------

PROMOTE_X32 = '''
b1 i8 i16 i32 i64 u8 u16 u32 u64 bf16 f16 f32 f64 c64 c128
i8 i8 i16 i32 i64 i16 i32 i32 f64 bf16 f16 f32 f64 c64 c128
i16 i16 i16 i32 i64 i16 i32 i32 f64 bf16 f16 f32 f64 c64 c128
i32 i32 i32 i32 i64 i32 i32 i32 f64 bf16 f16 f32 f64 c64 c128
i64 i64 i64 i64 i64 i64 i64 i64 f64 bf16 f16 f32 f64 c64 c128
u8 i16 i16 i32 i64 u8 u16 u32 u64 bf16 f16 f32 f64 c64 c128
u16 i32 i32 i32 i64 u16 u16 u32 u64 bf16 f16 f32 f64 c64 c128
u32 i32 i32 i32 i64 u32 u32 u32 u64 bf16 f16 f32 f64 c64 c128
u64 f64 f64 f64 f64 u64 u64 u64 u64 bf16 f16 f32 f64 c64 c128
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 f32 f64 c64 c128
f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f16 f32 f64 c64 c128
f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f64 c64 c128
f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 c128 c128
c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c128 c64 c128
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
'''
WEAK_X32 = {  # dtype: results of x + True, x + 1, x + 1.0, x + 1j (dtype, weak)
    'bool': 'b1 i32* f32* c64*',
    'int8': 'i8 i8 f32* c64*',
    'int16': 'i16 i16 f32* c64*',
    'int32': 'i32 i32 f32* c64*',
    'int64': 'i32 i32 f32* c64*',
    'uint8': 'u8 u8 f32* c64*',
    'uint16': 'u16 u16 f32* c64*',
    'uint32': 'u32 u32 f32* c64*',
    'uint64': 'u32 u32 f32* c64*',
    'bfloat16': 'bf16 bf16 bf16 c64',
    'float16': 'f16 f16 f16 c64',
    'float32': 'f32 f32 f32 c64',
    'float64': 'f32 f32 f32 c64',
    'complex64': 'c64 c64 c64 c64',
    'complex128': 'c64 c64 c64 c64',
}
PY_RESULT_X32 = [['b1', 'i32*', 'f32*', 'c64*'], ['i32*', 'i32*', 'f32*', 'c64*'], ['f32*', 'f32*', 'f32*', 'c64*'], ['c64*', 'c64*', 'c64*', 'c64*']]
PROMOTE_X64 = '''
b1 i8 i16 i32 i64 u8 u16 u32 u64 bf16 f16 f32 f64 c64 c128
i8 i8 i16 i32 i64 i16 i32 i64 f64 bf16 f16 f32 f64 c64 c128
i16 i16 i16 i32 i64 i16 i32 i64 f64 bf16 f16 f32 f64 c64 c128
i32 i32 i32 i32 i64 i32 i32 i64 f64 bf16 f16 f32 f64 c64 c128
i64 i64 i64 i64 i64 i64 i64 i64 f64 bf16 f16 f32 f64 c64 c128
u8 i16 i16 i32 i64 u8 u16 u32 u64 bf16 f16 f32 f64 c64 c128
u16 i32 i32 i32 i64 u16 u16 u32 u64 bf16 f16 f32 f64 c64 c128
u32 i64 i64 i64 i64 u32 u32 u32 u64 bf16 f16 f32 f64 c64 c128
u64 f64 f64 f64 f64 u64 u64 u64 u64 bf16 f16 f32 f64 c64 c128
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32 f32 f64 c64 c128
f16 f16 f16 f16 f16 f16 f16 f16 f16 f32 f16 f32 f64 c64 c128
f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f32 f64 c64 c128
f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 f64 c128 c128
c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c64 c128 c64 c128
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128
'''
WEAK_X64 = {  # dtype: results of x + True, x + 1, x + 1.0, x + 1j (dtype, weak)
    'bool': 'b1 i64* f64* c128*',
    'int8': 'i8 i8 f64* c128*',
    'int16': 'i16 i16 f64* c128*',
    'int32': 'i32 i32 f64* c128*',
    'int64': 'i64 i64 f64* c128*',
    'uint8': 'u8 u8 f64* c128*',
    'uint16': 'u16 u16 f64* c128*',
    'uint32': 'u32 u32 f64* c128*',
    'uint64': 'u64 u64 f64* c128*',
    'bfloat16': 'bf16 bf16 bf16 c64',
    'float16': 'f16 f16 f16 c64',
    'float32': 'f32 f32 f32 c64',
    'float64': 'f64 f64 f64 c128',
    'complex64': 'c64 c64 c64 c64',
    'complex128': 'c128 c128 c128 c128',
}
PY_RESULT_X64 = [['b1', 'i64*', 'f64*', 'c128*'], ['i64*', 'i64*', 'f64*', 'c128*'], ['f64*', 'f64*', 'f64*', 'c128*'], ['c128*', 'c128*', 'c128*', 'c128*']]
PY_PROMOTE = [['b1', 'i64', 'f64', 'c128'], ['i64', 'i64', 'f64', 'c128'], ['f64', 'f64', 'f64', 'c128'], ['c128', 'c128', 'c128', 'c128']]
PY_DTYPE_PROMOTE = [['i64', 'i8', 'i16', 'i32', 'i64', 'u8', 'u16', 'u32', 'u64', 'bf16', 'f16', 'f32', 'f64', 'c64', 'c128'], ['f64', 'f64', 'f64', 'f64', 'f64', 'f64', 'f64', 'f64', 'f64', 'bf16', 'f16', 'f32', 'f64', 'c64', 'c128'], ['c128', 'c128', 'c128', 'c128', 'c128', 'c128', 'c128', 'c128', 'c128', 'c64', 'c64', 'c64', 'c128', 'c64', 'c128']]


def _x64(on):
  return ember.enable_x64(on)


def _name(code):  # "f32*" -> ("float32", True)
  return SHORT[code.rstrip("*")], code.endswith("*")


# --- promotion tables ----------------------------------------------------------------------

@pytest.mark.parametrize("x64", MODES)
def test_promote_types_table(x64):
  table = [row.split() for row in (PROMOTE_X64 if x64 else PROMOTE_X32).strip().splitlines()]
  with _x64(x64):
    got = [[jnp.promote_types(a, b).name for b in NAMES] for a in NAMES]
    # scalar types and np.dtype objects are accepted alike
    assert jnp.promote_types(jnp.uint32, np.dtype("int8")) == SHORT[table[7][1]]
  want = [[SHORT[c] for c in row] for row in table]
  assert got == want


def test_promote_types_python_types():
  # Python int/float/complex are the weak lattice nodes; results are not canonicalized.
  for x64 in MODES:
    with _x64(x64):
      got = [[jnp.promote_types(a, b).name for b in PY_TYPES] for a in PY_TYPES]
      assert got == [[SHORT[c] for c in row] for row in PY_PROMOTE]
      got = [[jnp.promote_types(a, b).name for b in NAMES] for a in (int, float, complex)]
      assert got == [[SHORT[c] for c in row] for row in PY_DTYPE_PROMOTE]


def test_promote_types_errors():
  with pytest.raises(ValueError, match="not a valid dtype for JAX type promotion"):
    jnp.promote_types("float32", "U8")


@pytest.mark.parametrize("x64", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_weak_scalar_promotion(name, x64):
  expected = [_name(c) for c in (WEAK_X64 if x64 else WEAK_X32)[name].split()]
  with warnings.catch_warnings(), _x64(x64):
    warnings.simplefilter("ignore")  # int64 etc. are truncated with x64 off
    x = jnp.zeros(2, name)
    for scalar, (dt, weak) in zip((True, 1, 1.0, 1j), expected):
      for fn in (lambda x: x + scalar, ember.jit(lambda x: x + scalar)):
        r = fn(x)
        assert (r.dtype.name, r.weak_type) == (dt, weak), (name, scalar)
      assert jnp.result_type(x, scalar) == np.dtype(dt)
      assert jnp.result_type(x.dtype, type(scalar)) == np.dtype(dt)


@pytest.mark.parametrize("x64", MODES)
def test_result_type_python_scalars(x64):
  want = [[_name(c) for c in row] for row in (PY_RESULT_X64 if x64 else PY_RESULT_X32)]
  with _x64(x64):
    for a, row in zip(PY_TYPES, want):
      for b, (dt, weak) in zip(PY_TYPES, row):
        assert jnp.result_type(a(1), b(1)) == np.dtype(dt)
        r = jnp.asarray(a(1)) + b(1)
        assert (r.dtype.name, r.weak_type) == (dt, weak)


def test_result_type_misc():
  assert jnp.result_type(1.0) == np.float32 and jnp.result_type(1) == np.int32
  assert jnp.result_type(None) == np.float32 and jnp.result_type(float) == np.float32
  assert jnp.result_type(jnp.int64) == np.int32  # canonicalized, unlike promote_types
  assert jnp.result_type("float16", 1j) == np.complex64
  assert jnp.result_type(jnp.ones(2, jnp.int8), 1) == np.int8
  assert jnp.result_type(np.ones(2, np.int64), 1) == np.int32
  with _x64(True):
    assert jnp.result_type(jnp.int64) == np.int64 and jnp.result_type(1.0) == np.float64
  with pytest.raises(ValueError, match="at least one"):
    jnp.result_type()


# --- scalar types ---------------------------------------------------------------------------

SCALAR_TYPES = {
    "bool_": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32,
    "int64": np.int64, "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32,
    "uint64": np.uint64, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
    "float32": np.float32, "float64": np.float64, "complex64": np.complex64,
    "complex128": np.complex128,
}
ALIASES = {"bool": "bool_", "int_": "int64", "uint": "uint64", "float_": "float64",
           "complex_": "complex128", "single": "float32", "double": "float64",
           "csingle": "complex64", "cdouble": "complex128"}


@pytest.mark.parametrize("name", SCALAR_TYPES)
def test_scalar_type_protocol(name):
  t, np_t = getattr(jnp, name), SCALAR_TYPES[name]
  assert t.dtype == np.dtype(np_t) and np.dtype(t) == np.dtype(np_t)
  assert jnp.dtype(t) == np_t and t == np_t and t == np.dtype(np_t) and not t != np_t
  assert hash(t) == hash(np_t) and {np_t: 1}[t] == 1
  assert t.__name__ == np.dtype(np_t).name and t.__module__ == "ember.numpy"
  assert isinstance(np.zeros((), np_t)[()], t)  # NumPy scalars are instances ...
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # 64-bit types truncate with x64 off
    assert not isinstance(t(1), t) and not isinstance(1, t)  # ... ember arrays are not
  assert np.zeros(2, t).dtype == np_t


@pytest.mark.parametrize("alias", ALIASES)
def test_scalar_type_aliases(alias):
  assert getattr(jnp, alias) is getattr(jnp, ALIASES[alias])
  assert not hasattr(jnp, "half")  # JAX 0.12 has none


@pytest.mark.parametrize("name", SCALAR_TYPES)
@pytest.mark.parametrize("x64", MODES)
def test_scalar_type_call(name, x64):
  t = getattr(jnp, name)
  want = np.dtype(SCALAR_TYPES[name])
  if not x64 and want.itemsize == 8 and want.kind != "c" or want == np.complex128 and not x64:
    want = {"int64": np.dtype("int32"), "uint64": np.dtype("uint32"),
            "float64": np.dtype("float32"), "complex128": np.dtype("complex64")}[want.name]
  with warnings.catch_warnings(), _x64(x64):
    warnings.simplefilter("ignore")
    for fn in (lambda v: t(v), ember.jit(lambda v: t(v))):
      for v in (1, True, np.arange(3)):
        r = fn(v)
        assert isinstance(r, ember.Array) and r.dtype == want and not r.weak_type
        np.testing.assert_array_equal(np.asarray(r).astype(np.float64),
                                      np.asarray(v).astype(want).astype(np.float64))


def test_scalar_type_values_and_errors():
  r = jnp.float32(1.5)
  assert r.shape == () and r.dtype == np.float32 and not r.weak_type and float(r) == 1.5
  assert jnp.float32("1.5") == 1.5
  np.testing.assert_array_equal(jnp.int8(np.array([300, 1.5, -2.5])), [44, 1, -2])
  with pytest.warns(UserWarning, match="Explicitly requested dtype int64"):
    assert jnp.int64(1).dtype == np.int32
  with pytest.raises(OverflowError, match="300"):
    jnp.uint8(300)
  with pytest.raises(OverflowError):
    jnp.int32(2**31)
  with pytest.raises(ValueError, match="None is not a valid value"):
    jnp.float32(None)
  with pytest.raises(TypeError):
    jnp.float32(1 + 2j)
  with pytest.raises(TypeError):
    jnp.float32()
  with pytest.raises(TypeError):
    jnp.asarray(jnp.float32)


def test_scalar_type_staging():
  jaxpr = ember.make_jaxpr(lambda x: jnp.float32(x))(1)
  assert str(jaxpr) == ("{ lambda ; a:i32[]. let\n"
                        "    b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
                        "  in (b,) }")
  assert str(ember.make_jaxpr(lambda x: jnp.float32(2))(1)) == "{ lambda ; a:i32[]. let  in (2.0:f32[],) }"


def test_scalar_types_as_dtype_arguments():
  for t in (jnp.int16, jnp.bfloat16, jnp.bool_, jnp.complex64):
    assert jnp.zeros(2, t).dtype == t.dtype
    assert jnp.arange(3).astype(t).dtype == t.dtype
    assert jnp.asarray([1, 0], dtype=t).dtype == t.dtype
  with pytest.raises(ValueError, match="dtype=arr.dtype"):
    jnp.zeros(2, dtype=jnp.float32(1))


# --- abstract types, constants, helpers ---------------------------------------------------

def test_abstract_types_and_constants():
  assert jnp.floating is np.floating and jnp.generic is np.generic
  assert jnp.number is np.number and jnp.inexact is np.inexact
  assert jnp.integer is np.integer and jnp.signedinteger is np.signedinteger
  assert jnp.unsignedinteger is np.unsignedinteger and jnp.complexfloating is np.complexfloating
  assert isinstance(np.float64(1), jnp.floating) and not isinstance(jnp.float32(1), jnp.floating)
  assert not issubclass(jnp.float32, jnp.floating)
  assert (jnp.pi, jnp.e, jnp.euler_gamma) == (np.pi, np.e, np.euler_gamma)
  assert jnp.inf == np.inf and np.isnan(jnp.nan) and jnp.newaxis is None
  assert jnp.ndarray is ember.Array and isinstance(jnp.ones(2), jnp.ndarray)
  assert not isinstance(np.ones(2), jnp.ndarray)
  assert jnp.dtype is np.dtype and jnp.dtype("bfloat16") == ml_dtypes.bfloat16


@pytest.mark.parametrize("a, b, want", [
    (jnp.bfloat16, jnp.floating, True), (jnp.bfloat16, jnp.float16, False),
    (jnp.bfloat16, jnp.bfloat16, True), ("bfloat16", jnp.inexact, True),
    (jnp.float32, float, False), (jnp.float64, float, True), (jnp.int32, int, False),
    (jnp.int8, jnp.signedinteger, True), (jnp.uint8, jnp.signedinteger, False),
    (float, jnp.floating, True), (bool, jnp.bool_, True), (jnp.complex64, jnp.inexact, True),
    (np.dtype("int16"), jnp.integer, True), ("float32", "float32", True),
])
def test_issubdtype(a, b, want):
  assert jnp.issubdtype(a, b) is want


@pytest.mark.parametrize("dtype, kind, want", [
    (jnp.float32, "real floating", True), (jnp.bfloat16, "real floating", True),
    (jnp.int8, ("integral", "bool"), True), (jnp.complex64, "numeric", True),
    (jnp.bool_, "numeric", False), (jnp.float32, jnp.float32, True),
    (jnp.float32, np.float64, False), (np.float32, "signed integer", False),
    (np.uint8, "unsigned integer", True), (np.complex64, "complex floating", True),
    (jnp.float32, float, False), ("float32", "real floating", True),
    (jnp.uint16, "integral", True), (jnp.int64, "signed integer", True),
])
def test_isdtype(dtype, kind, want):
  assert jnp.isdtype(dtype, kind) is want


def test_isdtype_errors():
  with pytest.raises(ValueError, match="Unrecognized kind='foo'"):
    jnp.isdtype(jnp.float32, "foo")
  with pytest.raises(TypeError, match="Expected kind"):
    jnp.isdtype(jnp.float32, object())


def test_can_cast():
  assert not jnp.can_cast(jnp.int32, jnp.float32) and not jnp.can_cast(jnp.float32, jnp.int32)
  assert jnp.can_cast(jnp.int64, jnp.int32, "same_kind")
  assert jnp.can_cast(jnp.bfloat16, jnp.float32) and not jnp.can_cast(jnp.float32, jnp.bfloat16)
  assert jnp.can_cast(jnp.float32, jnp.bfloat16, "same_kind")
  with pytest.raises(TypeError, match="does not support Python ints, floats, and complex"):
    jnp.can_cast(1, jnp.int8)
  # by dtype, never by value (NEP 50), on NumPy 1.26 too
  assert not jnp.can_cast(np.float64(1.0), jnp.float32) and not jnp.can_cast(np.array(3), jnp.uint8)


def test_object_predicates():
  assert jnp.iscomplexobj(1j) and jnp.iscomplexobj(jnp.ones(2, jnp.complex64))
  assert jnp.iscomplexobj([1j]) and jnp.iscomplexobj(np.complex64(1))
  assert not jnp.iscomplexobj(None) and not jnp.iscomplexobj("a") and not jnp.iscomplexobj(1.0)
  assert not jnp.iscomplexobj(jnp.ones(2)) and not jnp.iscomplexobj(True)
  assert jnp.isrealobj(1.0) and jnp.isrealobj(jnp.ones(2)) and not jnp.isrealobj(1j)
  for x, want in [(1.0, True), (jnp.array(1.0), True), (jnp.ones(2), False),
                  (np.float32(1), True), (np.array(1.0), True), ("a", True), ([1], False),
                  (None, False)]:
    assert jnp.isscalar(x) is want, x
  assert jnp.iterable([1]) and not jnp.iterable(1)
  assert jnp.iterable(jnp.ones(2)) and not jnp.iterable(jnp.array(1))


def test_object_predicates_traced():
  def f(x):
    assert jnp.isscalar(x) and not jnp.iscomplexobj(x)
    return x
  ember.jit(f)(1.0)
  ember.make_jaxpr(f)(np.float32(1))


def test_finfo_iinfo():
  assert jnp.finfo(jnp.float32).eps == np.finfo(np.float32).eps
  assert jnp.finfo(jnp.bfloat16).eps == 0.0078125
  assert jnp.finfo(float).dtype == np.float64  # not canonicalized, as in JAX
  assert jnp.finfo(jnp.complex64).dtype == np.float32
  assert jnp.finfo(jnp.ones(2)).dtype == np.float32
  assert jnp.iinfo(jnp.int8).max == 127 and jnp.iinfo(int).dtype == np.int64
  assert jnp.iinfo(jnp.arange(2)).bits == 32


def test_printoptions():
  assert jnp.get_printoptions() == np.get_printoptions()
  with jnp.printoptions(precision=2):
    assert "1.23" in repr(jnp.array([1.23456])) and "1.234" not in repr(jnp.array([1.23456]))


NARROW = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn",
          "int2", "int4", "uint2", "uint4"]


@pytest.mark.parametrize("name", NARROW)
def test_narrow_dtypes_create_convert_and_compute_eagerly(name):
  import ml_dtypes
  t = getattr(jnp, name)
  assert t.dtype == np.dtype(getattr(ml_dtypes, name)) and t.dtype.name == name
  x = jnp.ones(2, t)
  assert x.dtype == t.dtype and (x + x).dtype == t.dtype
  ref = np.ones(2, t.dtype) + np.ones(2, t.dtype)   # ml_dtypes' arithmetic (int2 wraps to -2)
  np.testing.assert_array_equal(np.asarray(x + x).astype(np.float32), ref.astype(np.float32))
  assert np.asarray(x.astype(jnp.float32)).tolist() == [1.0, 1.0]
  floating = name.startswith("float")
  assert jnp.issubdtype(t, jnp.floating) == floating
  assert jnp.issubdtype(t, jnp.integer) == (not floating)
  info = jnp.finfo(t) if floating else jnp.iinfo(t)
  assert info.dtype == t.dtype


def test_narrow_dtypes_values_and_promotion_as_jax():
  # values and messages recorded from JAX 0.12
  f8 = jnp.float8_e4m3fn
  x = jnp.arange(4, dtype=f8)
  assert repr(x * 2) == "Array([0, 2, 4, 6], dtype=float8_e4m3fn)"
  assert repr(x * 1.5) == "Array([0, 1.5, 3, 4.5], dtype=float8_e4m3fn)"
  assert repr(x + jnp.int8(1)) == "Array([1, 2, 3, 4], dtype=float8_e4m3fn)"
  assert repr(jnp.asarray([1.7], jnp.float32).astype(f8)) == (
      "Array([1.75], dtype=float8_e4m3fn)")
  assert repr(jnp.asarray([1, 2], jnp.int4) * 2) == "Array([2, 4], dtype=int4)"
  assert jnp.finfo(f8).eps == 0.125 and jnp.finfo(jnp.float4_e2m1fn).max == 6.0
  assert (jnp.iinfo(jnp.int4).min, jnp.iinfo(jnp.int4).max) == (-8, 7)
  assert jnp.promote_types(f8, jnp.int8) == f8.dtype
  with pytest.raises(ValueError, match=r"Input dtypes \('float8_e4m3fn', 'float16'\) have no "
                     r"available implicit dtype promotion path. To avoid unintended promotion, "
                     r"8-bit floats do not support implicit promotion.*x.astype\('float32'\)"):
    jnp.promote_types(f8, jnp.float16)
  with pytest.raises(ember.dtypes.TypePromotionError, match=r"Input dtypes \('int4', 'int8'\).*"
                     r"1-bit, 2-bit and 4-bit integers do not support implicit promotion"):
    jnp.ones(2, jnp.int4) + jnp.ones(2, jnp.int8)
  g = ember.grad(lambda a: (a.astype(jnp.float32) ** 2).sum())(x)
  assert repr(g) == "Array([0, 2, 4, 6], dtype=float8_e4m3fn)"


def test_narrow_dtypes_under_jit_say_the_backend_does_not_compile_them():
  # the 8-bit floats' elementwise ops compile (codegen/float8.py); the 4-bit types do not
  x = jnp.arange(4, dtype=jnp.float8_e4m3fn)
  f = ember.jit(lambda a: a * a + 1)
  assert repr(f(x)) == "Array([1, 2, 5, 10], dtype=float8_e4m3fn)"
  x4 = jnp.arange(3, dtype=jnp.int4)
  with pytest.raises(NotImplementedError, match=r"CPU backend does not compile int4.*"
                     r"Convert them outside the jitted function"):
    f(x4)
  with ember._src.base.config.config._override("ember_jit_backend", "interpreter"):
    assert repr(f(x4)) == "Array([1, 2, 5], dtype=int4)"
  y = ember.jit(lambda a: a * a + 1)(x4.astype(jnp.float32)).astype(jnp.int4)
  assert repr(y) == "Array([1, 2, 5], dtype=int4)"


def test_strict_dtype_promotion_context():
  # jax.numpy_dtype_promotion("strict"): distinct dtypes do not join; a weak scalar joins a
  # dtype above it in the standard lattice (JAX 0.12's results)
  f32, i32 = jnp.float32(1), jnp.int32(1)
  with ember.numpy_dtype_promotion("strict"):
    assert (f32 + 2.0).dtype == jnp.float32 and (f32 + 2).dtype == jnp.float32
    assert (jnp.bfloat16(1) + 2.0).dtype == jnp.bfloat16
    assert (i32 + i32).dtype == jnp.int32
    for a, b, names in [(i32, 2.0, "'int32', \"<class 'float'>\""),
                        (i32, f32, "'int32', 'float32'"),
                        (jnp.int8(1), i32, "'int8', 'int32'"), (i32, True, "'int32', 'bool'"),
                        (jnp.float16(1), f32, "'float16', 'float32'"),
                        (f32, 1j, "'float32', \"<class 'complex'>\"")]:
      for add in (lambda a, b: a + b, ember.jit(lambda a, b: a + b)):
        with pytest.raises(ember.dtypes.TypePromotionError,
                           match=rf"Input dtypes \({re.escape(names)}\) have no available implicit dtype "
                                 "promotion path when jax_numpy_dtype_promotion=strict"):
          add(a, b)
  assert ember.config.jax_numpy_dtype_promotion == "standard"
  assert (i32 + 2.0).dtype == jnp.float32 and (i32 + f32).dtype == jnp.float32
  with ember.numpy_dtype_promotion("standard"):
    assert (i32 + f32).dtype == jnp.float32
  with pytest.raises(ValueError, match="jax_numpy_dtype_promotion must be 'standard' or "
                                       "'strict', got 'loose'"):
    ember.config.update("jax_numpy_dtype_promotion", "loose")


_STRICT_OK = [  # (thunk, dtype, weak_type) recorded from JAX 0.12.1 in strict mode
    (lambda: jnp.asarray(1.0) + jnp.asarray(1), "float32", True),
    (lambda: jnp.asarray(1j) + jnp.asarray(1.0), "complex64", True),
    (lambda: ember.jit(lambda a, b: a + b)(1.0, 1), "float32", True),
    (lambda: jnp.ones(2, jnp.complex64) + 1.0, "complex64", False),
    (lambda: jnp.ones(2, jnp.uint8) + 1, "uint8", False),
    (lambda: jnp.ones(2, jnp.float8_e4m3fn) + 1.0, "float8_e4m3fn", False),
    (lambda: jnp.ones(2, jnp.int4) + 1, "int4", False),
    (lambda: jnp.array([1, 2.0]), "float32", False),
    (lambda: jnp.arange(0, 1.0, 0.5), "float32", False),
    (lambda: jnp.ones(2) + np.float64(1), "float32", False),   # NumPy values: canonical dtype
    (lambda: np.ones(2) + jnp.ones(2), "float32", False),
    (lambda: jnp.result_type(np.float64, np.float32), "float32", None),
    (lambda: jnp.result_type(1, 1.0), "float32", None),
]


@pytest.mark.parametrize("i", range(len(_STRICT_OK)))
def test_strict_promotion_joins_weak_values_as_jax(i):
  thunk, dt, weak = _STRICT_OK[i]
  with ember.numpy_dtype_promotion("strict"):
    out = thunk()
  assert str(getattr(out, "dtype", out)) == dt
  if weak is not None:
    assert out.weak_type == weak


def test_strict_promotion_errors_as_jax():
  with ember.numpy_dtype_promotion("strict"):
    for thunk in [lambda: jnp.ones(2, bool) + 1, lambda: jnp.ones(2, jnp.int32) + jnp.asarray(1.0),
                  lambda: jnp.promote_types(jnp.float64, jnp.float32),
                  lambda: jnp.result_type(jnp.int32, 1.0),
                  lambda: jnp.clip(jnp.ones(2, jnp.int32), 0.0, 1.0),
                  lambda: jnp.concatenate([jnp.ones(2), jnp.ones(2, jnp.int32)])]:
      with pytest.raises(ember.dtypes.TypePromotionError, match="when jax_numpy_dtype_promotion="
                         "strict. Try explicitly casting inputs to the desired output type"):
        thunk()
    assert jnp.promote_types(int, float) == np.float64   # the weak nodes' 64-bit types


def test_rank_promotion_context():
  with ember.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match="rank"):
      jnp.ones(3) + jnp.ones((2, 3))
  assert (jnp.ones(3) + jnp.ones((2, 3))).shape == (2, 3)

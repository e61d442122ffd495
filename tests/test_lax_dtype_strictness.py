"""Public `ember.lax` elementwise functions never convert Python scalars (JAX 0.12): a
Python scalar keeps its default dtype (weak int32/float32; int64/float64 with x64) and
lax's same-dtype check applies. Expected values and messages were recorded from JAX 0.12,
eager and under jit (the same in both)."""
import re

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax


def _tip(op, jnp_name):
  return f" (Tip: jnp.{jnp_name} is a similar function that does automatic type promotion on inputs)."


def _same_dtypes(op, dtypes, jnp_name=None):
  msg = f"lax.{op} requires arguments to have the same dtypes, got {dtypes}."
  return msg + (_tip(op, jnp_name) if jnp_name else "")


def _arr(dt):
  return jnp.asarray(np.arange(3).astype(dt))


F32, BF16, F16, C64 = np.float32, ml_dtypes.bfloat16, np.float16, np.complex64
I32, U8 = np.int32, np.uint8

# (name, lax function, argument builders, (dtype, weak, values) or the JAX error message)
CASES = [
    ("add f32 1", lax.add, (F32, 1), _same_dtypes("add", "float32, int32", "add")),
    ("add f32 1.0", lax.add, (F32, 1.0), (F32, False, [1.0, 2.0, 3.0])),
    ("add 1.0 f32", lax.add, (1.0, F32), (F32, False, [1.0, 2.0, 3.0])),
    ("add bf16 1.0", lax.add, (BF16, 1.0), _same_dtypes("add", "bfloat16, float32", "add")),
    ("add f16 1.0", lax.add, (F16, 1.0), _same_dtypes("add", "float16, float32", "add")),
    ("add c64 1.0", lax.add, (C64, 1.0), _same_dtypes("add", "complex64, float32", "add")),
    ("add c64 1j", lax.add, (C64, 1j), (C64, False, [1j, 1 + 1j, 2 + 1j])),
    ("add i32 1", lax.add, (I32, 1), (I32, False, [1, 2, 3])),
    ("add u8 1", lax.add, (U8, 1), _same_dtypes("add", "uint8, int32", "add")),
    ("sub bf16 1", lax.sub, (BF16, 1), _same_dtypes("sub", "bfloat16, int32", "subtract")),
    ("shift_left u8 1", lax.shift_left, (U8, 1),
     _same_dtypes("shift_left", "uint8, int32", "left_shift")),
    ("shift_right_logical u8 0", lax.shift_right_logical, (U8, 0),
     _same_dtypes("shift_right_logical", "uint8, int32", "right_shift")),
    ("shift_right_logical i32 1", lax.shift_right_logical, (I32, 1), (I32, False, [0, 0, 1])),
    ("bitwise_and u8 1", lax.bitwise_and, (U8, 1), _same_dtypes("and", "uint8, int32")),
    ("add 1 2", lax.add, (1, 2), (I32, True, 3)),
    ("add 1.0 2.0", lax.add, (1.0, 2.0), (F32, True, 3.0)),
    ("add 1 2.0", lax.add, (1, 2.0), _same_dtypes("add", "int32, float32", "add")),
    ("add f32 np.float32(1)", lax.add, (F32, np.float32(1)), (F32, False, [1.0, 2.0, 3.0])),
    ("add f32 np.float64(1)", lax.add, (F32, np.float64(1)), (F32, False, [1.0, 2.0, 3.0])),
    ("add i32 np.int32(1)", lax.add, (I32, np.int32(1)), (I32, False, [1, 2, 3])),
    ("add f32 weak f32", lax.add, (F32, lambda: lax.add(1.0, 2.0)),
     (F32, False, [3.0, 4.0, 5.0])),
    ("mul f32 2.0", lax.mul, (F32, 2.0), (F32, False, [0.0, 2.0, 4.0])),
    ("max f32 0.0", lax.max, (F32, 0.0), (F32, False, [0.0, 1.0, 2.0])),
    ("lt f32 1.0", lax.lt, (F32, 1.0), (np.bool_, False, [True, False, False])),
    ("pow f32 2", lax.pow, (F32, 2), (F32, False, [0.0, 1.0, 4.0])),
    ("pow f32 2.0", lax.pow, (F32, 2.0), (F32, False, [0.0, 1.0, 4.0])),
    ("clamp 0.0 f32 1.0", lax.clamp, (0.0, F32, 1.0), (F32, False, [0.0, 1.0, 1.0])),
    ("clamp 0 f32 1", lax.clamp, (0, F32, 1), _same_dtypes("clamp", "int32, float32, int32")),
    ("clamp 0 i32 1", lax.clamp, (0, I32, 1), (I32, False, [0, 1, 1])),
    ("rem f32 2.0", lax.rem, (F32, 2.0), (F32, False, [0.0, 1.0, 0.0])),
    ("div i32 2", lax.div, (I32, 2), (I32, False, [0, 0, 1])),
    # select reports its cases in select_n order (on_false first)
    ("select True 1.0 f32[]", lambda p, x: lax.select(p, 1.0, x), (True, np.float32(2.0)),
     (F32, False, 1.0)),
    ("select True f32[] 1", lambda p, x: lax.select(p, x, 1), (True, np.float32(2.0)),
     _same_dtypes("select", "int32, float32", "where")),
    ("select_n True u8[] 0", lambda p, x: lax.select_n(p, x, 0), (True, np.uint8(3)),
     _same_dtypes("select", "uint8, int32", "where")),
    ("select True 1 2", lambda p: lax.select(p, 1, 2), (True,), (I32, True, 1)),
]

# under x64 a Python float is float64 and a Python int is int64
CASES_X64 = [
    ("add f32 1.0", lax.add, (F32, 1.0), _same_dtypes("add", "float32, float64", "add")),
    ("add i32 1", lax.add, (I32, 1), _same_dtypes("add", "int32, int64", "add")),
    ("add f64 1.0", lax.add, (np.float64, 1.0), (np.float64, False, [1.0, 2.0, 3.0])),
    ("add 1.0 2.0", lax.add, (1.0, 2.0), (np.float64, True, 3.0)),
    ("add f32 np.float32(1)", lax.add, (F32, np.float32(1)), (F32, False, [1.0, 2.0, 3.0])),
    ("shift_right_logical u8 0", lax.shift_right_logical, (U8, 0),
     _same_dtypes("shift_right_logical", "uint8, int64", "right_shift")),
]


def _args(spec):
  return [_arr(a) if isinstance(a, type) else a() if callable(a) else a for a in spec]


def _check(fn, spec, expected, use_jit):
  f = ember.jit(fn) if use_jit else fn
  args = _args(spec)
  if isinstance(expected, str):
    with pytest.raises(TypeError, match=re.escape(expected) + "$"):
      f(*args)
    return
  dt, weak, values = expected
  out = f(*args)
  assert out.dtype == np.dtype(dt)
  assert out.weak_type == weak
  np.testing.assert_array_equal(np.asarray(out), np.asarray(values, dtype=dt))


@pytest.mark.parametrize("use_jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name,fn,spec,expected", CASES, ids=[c[0] for c in CASES])
def test_python_scalars_keep_default_dtype(name, fn, spec, expected, use_jit):
  _check(fn, spec, expected, use_jit)


@pytest.mark.parametrize("use_jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("name,fn,spec,expected", CASES_X64, ids=[c[0] for c in CASES_X64])
def test_python_scalars_keep_default_dtype_x64(name, fn, spec, expected, use_jit):
  with ember.enable_x64():
    _check(fn, spec, expected, use_jit)


def test_jnp_promotes_where_lax_is_strict():
  """The functions the tips name accept the same operands (jnp promotes)."""
  x = _arr(U8)
  out = jnp.right_shift(x, 0)
  assert out.dtype == np.uint8
  np.testing.assert_array_equal(np.asarray(out), [0, 1, 2])
  out = jnp.add(_arr(BF16), 1.0)
  assert out.dtype == ml_dtypes.bfloat16
  np.testing.assert_array_equal(np.asarray(out, np.float32), [1.0, 2.0, 3.0])

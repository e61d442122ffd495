"""The CPU backend compiles ml_dtypes' 8-bit floats (codegen/float8.py): converts and
elementwise ops compute in float32 and round each result to the type, nearest even, with
ml_dtypes' overflow (inf where the type has one, else NaN) and signs. Expected values are
ml_dtypes' (what JAX 0.12 computes eagerly; JAX's jit gives the same codes for converts and
the arithmetic checked here: checked against JAX 0.12.1 when written). Dots, reductions and
the 4-bit floats still raise the error that says how to run them."""
import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp

NAMES = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3",
         "float8_e3m4", "float8_e4m3b11fnuz"]


def _same(got, want) -> np.ndarray:
  """Equal values with equal signs, or NaN on both sides (payloads aside)."""
  a, b = np.asarray(got, np.float32), np.asarray(want, np.float32)
  return ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))


def _samples() -> np.ndarray:
  rng = np.random.default_rng(0)
  x = np.concatenate([rng.standard_normal(500).astype(np.float32) * s
                      for s in (1e-4, 1e-2, 1, 30, 300, 1e4, 1e5)])
  # ties, the largest values and just past them, infinities, NaNs of both signs, zeros
  edges = [0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 448, 464, 480, -464, 240, 248, 15.5,
           15.75, 30, 31, 57344, 61440, -61440, 2.0**-9, 1.5 * 2**-10, 1e-30, -1e-30]
  return np.concatenate([x, np.float32(edges)])


@pytest.mark.parametrize("name", NAMES)
def test_float32_to_float8_codes_as_ml_dtypes(name):
  dt = np.dtype(getattr(ml_dtypes, name))
  x = _samples()
  got = np.asarray(ember.jit(lambda v: v.astype(dt))(x))
  assert got.dtype == dt
  np.testing.assert_array_equal(got.view(np.uint8), x.astype(dt).view(np.uint8))


@pytest.mark.parametrize("name", NAMES)
def test_float8_codes_to_float32_exhaustive(name):
  dt = np.dtype(getattr(ml_dtypes, name))
  codes = np.arange(256, dtype=np.uint8).view(dt)
  got = np.asarray(ember.jit(lambda v: v.astype(jnp.float32))(codes))
  assert _same(got, codes.astype(np.float32)).all()


@pytest.mark.parametrize("name", NAMES)
def test_float8_elementwise_is_float32_rounded_once(name):
  dt = np.dtype(getattr(ml_dtypes, name))
  codes = np.arange(256, dtype=np.uint8).view(dt)
  a, b = np.repeat(codes, 256), np.tile(codes, 256)   # every pair of codes
  outs = ember.jit(lambda a, b: (a + b, a - b, a * b, a / b, -a, jnp.abs(a),
                                 jnp.sqrt(jnp.abs(a)), a < b, (a * 2).astype(jnp.int32)))(a, b)
  af, bf = a.astype(np.float32), b.astype(np.float32)
  with np.errstate(all="ignore"):
    want = [af + bf, af - bf, af * bf, af / bf, -af, np.abs(af), np.sqrt(np.abs(af))]
  for got, w in zip(outs, want):
    assert got.dtype == dt
    assert _same(got, w.astype(dt)).all()
  np.testing.assert_array_equal(outs[-2], af < bf)
  # float8 -> int32 of finite values: the float32 value's conversion
  doubled = (af * 2).astype(dt).astype(np.float32)
  fin = np.isfinite(doubled)
  np.testing.assert_array_equal(np.asarray(outs[-1])[fin], doubled[fin].astype(np.int32))


def test_float8_rounding_examples():
  # JAX 0.12.1's jit: 464 is the tie between 448 and 480 (NaN in e4m3fn): to even, 448;
  # 61440 ties 57344 and 65536: to even, inf in e5m2; past the largest: NaN or inf
  x = np.float32([464.0, 470.0, -500.0, 61440.0, 2.0**-10, 1.5 * 2**-9, 0.1])
  f = ember.jit(lambda v: (v.astype(jnp.float8_e4m3fn), v.astype(jnp.float8_e5m2),
                           v.astype(jnp.float8_e4m3fnuz)))
  e4, e5, fnuz = (np.asarray(o).astype(np.float32) for o in f(x))
  np.testing.assert_array_equal(e4[[0, 4, 5, 6]], [448.0, 0.0, 3.90625e-03, 1.015625e-01])
  assert np.isnan(e4[1:4]).all() and np.signbit(e4[2])
  np.testing.assert_array_equal(e5, np.float32([448, 448, -512, np.inf, 9.765625e-4,
                                                2.9296875e-3, 0.09375]))
  assert np.isnan(fnuz[:4]).all()
  np.testing.assert_array_equal(fnuz[4:], np.float32([0.0009765625, 0.0029296875, 0.1015625]))
  tiny = np.asarray(f(np.float32([-1e-9]))[2]).astype(np.float32)
  assert tiny[0] == 0 and not np.signbit(tiny[0])   # JAX: 0. (fnuz has no -0)


def test_what_jit_still_refuses():
  # (dots and sums compute in float32 from the lowering on: they compile, as in JAX)
  f8 = np.ones((2, 2), ml_dtypes.float8_e4m3fn)
  np.testing.assert_array_equal(np.asarray(ember.jit(lambda a: a @ a)(f8), np.float32), 2.0)
  with pytest.raises(NotImplementedError, match="does not compile float8_e4m3fn"):
    ember.jit(jnp.sort)(f8)
  with pytest.raises(NotImplementedError, match="does not compile float8_e4m3fn"):
    ember.jit(jnp.max)(f8)
  with pytest.raises(NotImplementedError, match="does not compile float4_e2m1fn"):
    ember.jit(lambda a: a * 2)(np.ones(2, ml_dtypes.float4_e2m1fn))

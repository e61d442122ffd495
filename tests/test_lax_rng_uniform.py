"""lax.rng_uniform / rng_uniform_p (primitives/prng.py): XLA's stateful uniform RNG, drawn
from ember's process-wide threefry stream (values differ from XLA's, so only JAX's contract
is tested: [a, b), a's dtype, the shape, new values on every call, eager and compiled)."""
import ml_dtypes
import numpy as np
import pytest

import ember
from ember import lax


@pytest.mark.parametrize("a, b", [(np.float32(2), np.float32(3)), (np.float16(-1), np.float16(1)),
                                  (ml_dtypes.bfloat16(0), ml_dtypes.bfloat16(1)),
                                  (np.int32(-5), np.int32(5)), (np.uint8(3), np.uint8(7))])
def test_range_dtype_shape(a, b):
  x = np.asarray(lax.rng_uniform(a, b, (50, 40)))
  assert x.shape == (50, 40) and x.dtype == np.asarray(a).dtype
  assert (x >= a).all() and (x < b).all()
  if x.dtype.kind in "iu":   # every value of the range is drawn
    assert set(np.unique(x)) == set(range(int(a), int(b)))
  else:   # roughly uniform: mean within a few standard errors of (a + b) / 2
    mid, sd = (float(a) + float(b)) / 2, (float(b) - float(a)) / np.sqrt(12 * x.size)
    assert abs(x.astype(np.float64).mean() - mid) < 6 * sd


def test_successive_calls_differ_eager_and_jit():
  a, b = np.float32(0), np.float32(1)
  assert not np.array_equal(lax.rng_uniform(a, b, (8,)), lax.rng_uniform(a, b, (8,)))
  f = ember.jit(lambda a, b: (lax.rng_uniform(a, b, (8,)), lax.rng_uniform(a, b, (8,))))
  x1, y1 = f(a, b)
  x2, _ = f(a, b)
  assert not np.array_equal(x1, y1)   # two draws in one program: not merged
  assert not np.array_equal(x1, x2)   # each run draws anew
  for v in (x1, y1, x2):
    assert v.dtype == np.float32 and ((0 <= np.asarray(v)) & (np.asarray(v) < 1)).all()
  assert lax.rng_uniform(np.float32(0), np.float32(1), ()).shape == ()


def test_jaxpr_and_weak_type():
  jaxpr = ember.make_jaxpr(lambda a, b: lax.rng_uniform(a, b, (4,)))(1.0, 2.0)
  assert str(jaxpr) == ("{ lambda ; a:f32[] b:f32[]. let c:f32[4] = rng_uniform[shape=(4,)] a b "
                        "in (c,) }")   # JAX's print
  assert [e.primitive for e in jaxpr.eqns] == [lax.rng_uniform_p]
  assert lax.rng_uniform(0.0, 1.0, (2,)).weak_type
  assert not lax.rng_uniform(np.float32(0), np.float32(1), (2,)).weak_type


def test_errors():
  with pytest.raises(ValueError, match="identical dtypes, got float32 and int32"):
    lax.rng_uniform(np.float32(0), np.int32(1), (3,))
  with pytest.raises(ValueError, match="must be scalars; got shapes"):
    lax.rng_uniform(np.zeros(2, np.float32), np.float32(1), (3,))
  with pytest.raises(TypeError, match="integer or floating"):
    lax.rng_uniform(np.bool_(False), np.bool_(True), (3,))
  with pytest.raises(NotImplementedError, match="rng_uniform"):   # as JAX: no batching rule
    ember.vmap(lambda a: lax.rng_uniform(a, np.float32(2), ()))(np.zeros(2, np.float32))
  with pytest.raises(NotImplementedError, match="Differentiation rule for 'rng_uniform'"):
    ember.grad(lambda a: lax.rng_uniform(a, np.float32(2), ()))(np.float32(1))

"""Eager float math on large native arrays runs compiled (pjrt_dispatch.eager,
`_costly_native_math`), as JAX's eager mode does: the values of jit, within the math
library's accuracy of NumPy in float64; small arrays, other dtypes, traced values and
disable_jit keep the NumPy reference path."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.scipy.special as special
from ember._src.driver import pjrt_dispatch
from ember._src.primitives.elementwise import fma

BIG = (pjrt_dispatch.EAGER_COMPILE_ELEMENTS // 64, 64)

CASES = [("tanh", jnp.tanh, np.tanh, (-4, 4)),
         ("exp", jnp.exp, np.exp, (-20, 20)),
         ("log1p", jnp.log1p, np.log1p, (-0.9, 50)),
         ("sin", jnp.sin, np.sin, (-100, 100)),
         ("erf", special.erf, None, (-3, 3)),
         ("pow", lambda x: jnp.power(x, 2.5), lambda x: np.power(x, 2.5), (0, 10))]


def _data(lo, hi, shape, dtype):
  return np.random.default_rng(0).uniform(lo, hi, shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref,dom", CASES, ids=[c[0] for c in CASES])
def test_large_eager_math_equals_jit(name, fn, ref, dom, dtype):
  x = _data(*dom, BIG, dtype)
  with ember.enable_x64(dtype == np.float64):
    eager, jitted = np.asarray(fn(jnp.asarray(x))), np.asarray(ember.jit(fn)(x))
  assert eager.dtype == dtype and eager.shape == BIG
  np.testing.assert_array_equal(eager, jitted)          # the compiled one-op computation
  if ref is not None:
    # the math library is within 2 ulp of the correctly rounded value
    np.testing.assert_allclose(eager, ref(x.astype(np.float64)),
                               rtol=4 * np.finfo(dtype).eps, atol=np.finfo(dtype).tiny)


def test_eager_compiled_math_is_synchronous():
  z = jnp.tanh(jnp.asarray(_data(-1, 1, BIG, np.float32)))
  assert z.is_ready()          # as every eager op (tests/test_async_dispatch.py)


def test_compiled_once_per_shape():
  x = jnp.asarray(_data(-1, 1, BIG, np.float32))
  jnp.tanh(x)
  key = next(k for k in pjrt_dispatch._one_op_fns if k[0].name == "tanh")
  fn = pjrt_dispatch._one_op_fns[key]
  size = fn._cache_size()
  for _ in range(3):
    jnp.tanh(x * 2)
  assert fn._cache_size() == size


def test_small_arrays_other_dtypes_and_traces_keep_the_reference():
  small = _data(-4, 4, (100,), np.float32)
  want = np.tanh(small.astype(np.float64)).astype(np.float32)   # float64, rounded once
  np.testing.assert_array_equal(np.asarray(jnp.tanh(small)), want)
  half = _data(-4, 4, BIG, np.float16)
  np.testing.assert_array_equal(np.asarray(jnp.tanh(half)),
                                np.tanh(half.astype(np.float64)).astype(np.float16))
  x = _data(-4, 4, BIG, np.float32)
  with ember.disable_jit():
    np.testing.assert_array_equal(np.asarray(jnp.tanh(x)),
                                  np.tanh(x.astype(np.float64)).astype(np.float32))
  g = ember.grad(lambda v: jnp.tanh(v).sum())(x)     # traced: the rules, not the hook
  np.testing.assert_allclose(np.asarray(g), 1 - np.tanh(x.astype(np.float64)) ** 2,
                             rtol=1e-5, atol=1e-6)



@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_eager_fma_equals_jit_and_the_reference(dtype):
  # fma rounds once: compiled (llvm.fma) and the NumPy reference (error-free
  # transformations, what disable_jit runs) give the same bits
  rng = np.random.default_rng(1)
  x, y, z = (rng.standard_normal(BIG).astype(dtype) for _ in range(3))
  with ember.enable_x64(dtype == np.float64):
    eager = np.asarray(fma(*map(jnp.asarray, (x, y, z))))
    assert any(k[0].name == "fma" for k in pjrt_dispatch._one_op_fns)   # it ran compiled
    np.testing.assert_array_equal(eager, np.asarray(ember.jit(fma)(x, y, z)))
    with ember.disable_jit():
      np.testing.assert_array_equal(eager, np.asarray(fma(*map(jnp.asarray, (x, y, z)))))


def test_eager_normal_draws_the_jitted_bits():
  # random.normal's XLA:CPU arithmetic (fma, erf_inv, log) runs compiled eagerly on a large
  # draw: the same bits as jit(normal)
  key = ember.random.key(7)
  draw = lambda k: ember.random.normal(k, BIG)     # noqa: E731
  np.testing.assert_array_equal(np.asarray(draw(key)), np.asarray(ember.jit(draw)(key)))

"""Bugs found by the differential fuzzer (tests/fuzz, docs/fuzzing.md): each minimized
program, eager and jitted, against JAX 0.12's values stored as literals."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.config import config


def _eager_and_jit(fn, *args):
  return [np.asarray(fn(*args)), np.asarray(ember.jit(fn)(*args))]


# fuzz seed 5165 (x64): a product of uint32 and int8 multiplied in uint32 (the "larger" kind)
# and converted to int64 afterwards: -2 became 4294967294. JAX converts both operands to the
# promoted dtype first.
@pytest.mark.parametrize("x64", [True, False])
def test_dot_of_unsigned_and_signed_multiplies_in_the_promoted_dtype(x64):
  with config._override("jax_enable_x64", x64):
    big = 4000000000 if x64 else 4
    a = jnp.asarray(np.array([[2, 3], [big, 1]], np.uint32))
    b = jnp.asarray(np.array([[-2, 1], [1, -128]], np.int8))
    want_ab = [[-1, -382], [-7999999999, 3999999872]] if x64 else [[-1, -382], [-7, -124]]
    for got in _eager_and_jit(jnp.matmul, a, b):
      assert got.dtype == (np.int64 if x64 else np.int32)
      np.testing.assert_array_equal(got, want_ab)
    if x64:
      for got in _eager_and_jit(lambda b, a: jnp.einsum("ij,jk->ik", b, a), b, a):
        np.testing.assert_array_equal(got, [[3999999996, -5], [-511999999998, -125]])
    x = jnp.asarray(np.array([2], np.uint32))
    y = jnp.asarray(np.array([-2], np.int8))
    for got in _eager_and_jit(jnp.dot, x, y):
      assert int(got) == -4


def test_dot_of_uint16_and_int8():
  a = jnp.asarray(np.array([[60000, 3]], np.uint16))
  b = jnp.asarray(np.array([[-1], [2]], np.int8))
  for got in _eager_and_jit(jnp.matmul, a, b):
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [[-59994]])

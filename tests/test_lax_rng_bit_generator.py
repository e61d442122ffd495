"""lax.rng_bit_generator: XLA:CPU's RngBitGenerator bit for bit (Philox4x32-10 by default,
ThreeFry-2x32), every unsigned dtype, the key's counter update (with its carry), against the
values jax 0.12.1 produced; eager, jit, vmap and the errors."""
import numpy as np
import pytest

import ember
from ember import lax

A = lax.RandomAlgorithm
_KEY = np.array([1, 2, 3, 4], np.uint32)
# jax 0.12.1: (new key, bits) of rng_bit_generator(_KEY, (5,), dtype, algorithm)
_JAX = {
    (A.RNG_PHILOX, np.uint8): ([1, 2, 5, 4], [100, 215, 190, 1, 123]),
    (A.RNG_PHILOX, np.uint16): ([1, 2, 5, 4], [59492, 3031, 51646, 37377, 18555]),
    (A.RNG_PHILOX, np.uint32): ([1, 2, 5, 4], [512747620, 1298009047, 1267190206, 761827841,
                                               1383286907]),
    (A.RNG_PHILOX, np.uint64): ([1, 2, 6, 4], [5574906407289874532, 3272025663544478142,
                                               7043725020835825787, 9254853183523022196,
                                               14929923424383677111]),
    (A.RNG_THREE_FRY, np.uint8): ([1, 2, 6, 4], [236, 142, 168, 94, 67]),
    (A.RNG_THREE_FRY, np.uint32): ([1, 2, 6, 4], [1576285164, 2249660814, 740599976,
                                                  2425682526, 2436392515]),
    (A.RNG_THREE_FRY, np.uint64): ([1, 2, 8, 4], [9662219624799024108, 10418227120389269672,
                                                  6433701140276733507, 9707638358252452699,
                                                  16980371968582007637]),
}


@pytest.mark.parametrize("alg,dt", list(_JAX))
def test_bits_match_jax(alg, dt):
  want_key, want_bits = _JAX[alg, dt]
  with ember.enable_x64(dt == np.uint64):
    key, bits = lax.rng_bit_generator(_KEY, (5,), dtype=dt, algorithm=alg)
    assert bits.dtype == dt
    np.testing.assert_array_equal(key, want_key)
    np.testing.assert_array_equal(bits, np.array(want_bits, dt))


def test_default_jit_vmap_shape_and_carry():
  want = [512747620, 1298009047, 1267190206, 761827841, 1383286907, 1639995030]
  key, bits = ember.jit(lambda k: lax.rng_bit_generator(k, (2, 3)))(_KEY)
  np.testing.assert_array_equal(bits, np.reshape(want, (2, 3)))
  np.testing.assert_array_equal(key, [1, 2, 5, 4])
  batched = ember.vmap(lambda k: lax.rng_bit_generator(k, (2,))[1])(np.stack([_KEY, _KEY]))
  np.testing.assert_array_equal(batched, [want[:2]] * 2)
  full = np.array([1, 2, 0xFFFFFFFF, 0xFFFFFFFF], np.uint32)     # the counter wraps
  key, bits = lax.rng_bit_generator(full, (8,), algorithm=A.RNG_PHILOX)
  np.testing.assert_array_equal(key, [1, 2, 1, 0])
  np.testing.assert_array_equal(bits, [875035680, 2457449792, 952865925, 536199321, 67759320,
                                       265751716, 222428074, 2049345928])
  key, bits = lax.rng_bit_generator(full, (4,), algorithm=A.RNG_THREE_FRY)
  np.testing.assert_array_equal(bits, [3850963268, 2619805951, 629071667, 2343584484])
  assert "algorithm=RNG_DEFAULT" in str(ember.make_jaxpr(
      lambda k: lax.rng_bit_generator(k, (3,)))(_KEY))


def test_errors():
  with pytest.raises(TypeError, match="unsupported dtype float32"):
    lax.rng_bit_generator(_KEY, (2,), dtype=np.float32)
  with pytest.raises(TypeError, match="key must be a uint32\\[4\\]"):
    lax.rng_bit_generator(_KEY[:2], (2,))
  with pytest.raises(ValueError, match="unknown algorithm"):
    lax.rng_bit_generator(_KEY, (2,), algorithm=7)

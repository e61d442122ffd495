"""float64 (and int64) -> bfloat16 / float16 round to float32 first, as XLA on CPU (JAX 0.12):
twice rounding, which differs from one direct rounding just above a tie. Eager, jit and
constant folding agree; the expected bits are JAX 0.12's, stored as literals.

Subnormals: XLA's CPU runtime flushes float32 subnormals, so JAX converts float64 1e-40 to
bfloat16 0x0000, and so does ember now (tests/test_denormals.py)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.base import flags

F64 = [1 + 2**-8 + 2**-40, 1 + 2**-8, 1 + 2**-8 - 2**-40, 1 + 3 * 2**-8 + 2**-35,
       1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-40), 3.3895313892515355e38, 3.4e38,
       65520.0 + 2**-30, 65520.0, 65520.0 - 2**-20, 2**-25 + 2**-60, 1.5 * 2**-24 + 2**-50]
# jax.jit(lambda v: v.astype(dt))(np.array(F64)) under jax_enable_x64, as uint16 bits
JAX_BF16 = [0x3f80, 0x3f80, 0x3f80, 0x3f82, 0x3f80, 0xbf80, 0x7f7f, 0x7f80, 0x4780, 0x4780,
            0x4780, 0x3300, 0x33c0]
JAX_F16 = [0x3c04, 0x3c04, 0x3c04, 0x3c0c, 0x3c04, 0xbc04, 0x7c00, 0x7c00, 0x7c00, 0x7c00,
           0x7c00, 0x0000, 0x0002]
I64 = [2**11 + 1, 65519, 65520, 2**24 + 1, 2**40 + 2**29 + 1, 257 * 2**8 + 1,
       2**62 + 2**39 + 1, 2**24 + 2**16 + 1]
JAX_I64_BF16 = [0x4500, 0x4780, 0x4780, 0x4b80, 0x5380, 0x4781, 0x5e80, 0x4b80]
JAX_I64_F16 = [0x6800, 0x7bff, 0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00, 0x7c00]


def _bits(a):
  return np.asarray(a).view(np.uint16).tolist()


@pytest.mark.parametrize("src,dst,want", [
    (F64, jnp.bfloat16, JAX_BF16), (F64, jnp.float16, JAX_F16),
    (I64, jnp.bfloat16, JAX_I64_BF16), (I64, jnp.float16, JAX_I64_F16)],
    ids=["f64-bf16", "f64-f16", "i64-bf16", "i64-f16"])
def test_conversions_round_as_jax(src, dst, want):
  with ember.enable_x64(True):
    x = np.array(src, np.float64 if isinstance(src[0], float) else np.int64)
    convert = lambda v: v.astype(dst)
    assert _bits(convert(jnp.asarray(x))) == want                        # eager
    assert _bits(ember.jit(convert)(x)) == want                          # compiled
    assert _bits(ember.jit(lambda: convert(jnp.asarray(x)))()) == want   # constant-folded
    with flags.override(opt_level=0):
      assert _bits(ember.jit(convert)(x)) == want                        # quick tier


def test_float32_to_narrow_is_one_rounding():
  x = np.array([1e-40, 1.1754942e-38, -1e-45, 3.3961776e38, 1.0039062, 1.00390625], np.float32)
  for dst, want in ((jnp.bfloat16, [0x1, 0x80, 0x8000, 0x7f80, 0x3f80, 0x3f80]),
                    (jnp.float16, [0x0, 0x0, 0x8000, 0x7c00, 0x3c04, 0x3c04])):
    assert _bits(jnp.asarray(x).astype(dst)) == want
    assert _bits(ember.jit(lambda v: v.astype(dst))(x)) == want

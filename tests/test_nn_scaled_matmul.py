"""jax.nn.scaled_matmul, get_scaled_dot_general_config and scaled_dot_general (block-scaled
microscaling matmuls) against NumPy and values real JAX 0.12.1 produced on CPU."""
import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import nn

_RNG = np.random.RandomState(0)
_X = jnp.asarray(np.round(_RNG.randn(32, 32), 3).astype(np.float32))
_Y = jnp.asarray(np.round(_RNG.randn(32, 32), 3).astype(np.float32))
_DN = (((1,), (0,)), ((), ()))

# JAX 0.12.1 (CPU): out[:2, :3], d(out[:, :2].sum())/dx [0, :3] and /dy [:3, :2]
_JAX = {
    "mxfp8": ([[0.00286865234375, 0.032958984375, -8.0335693359375],
               [-6.4796142578125, 4.403648376464844, 4.6263427734375]],
              [0.9375, -0.125, 0.73828125], [[-1.2939453125] * 2, [-3.0546875] * 2,
                                             [0.6796875] * 2]),
    "mxfp4": ([[0.3125, -0.1875, -8.0], [-7.125, 3.5625, 4.25]], [0.5, 0.0, 0.75],
              [[-0.75] * 2, [-2.5] * 2, [1.5] * 2]),
    "nvfp4": ([[0.6650390625, -0.474609375, -9.0],
               [-5.681884765625, 5.115234375, 5.4542236328125]],
              [0.9200000166893005, -0.0830000638961792, 0.7289999723434448],
              [[-1.11899995803833] * 2, [-3.1590003967285156] * 2,
               [0.7539995908737183] * 2]),
}


def test_scaled_matmul_matches_numpy():
  rng = np.random.RandomState(1)
  a, b = rng.randn(2, 3, 64).astype(np.float32), rng.randn(2, 4, 64).astype(np.float32)
  sa, sb = rng.rand(2, 3, 2).astype(np.float32), rng.rand(2, 4, 2).astype(np.float32)
  want = np.einsum("bmk,bnk->bmn", a * np.repeat(sa, 32, -1), b * np.repeat(sb, 32, -1))
  for out in (nn.scaled_matmul(a, b, sa, sb), ember.jit(nn.scaled_matmul)(a, b, sa, sb)):
    assert out.dtype == np.float32 and out.shape == (2, 3, 4)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
  f8 = lambda v: v.astype(ml_dtypes.float8_e4m3fn)
  e8 = lambda v: v.astype(ml_dtypes.float8_e8m0fnu)
  out = nn.scaled_matmul(f8(a), f8(b), e8(sa), e8(sb), preferred_element_type=jnp.bfloat16)
  assert out.dtype == jnp.bfloat16
  ref = np.einsum("bmk,bnk->bmn", f8(a).astype(np.float32) * np.repeat(e8(sa).astype(
      np.float32), 32, -1), f8(b).astype(np.float32) * np.repeat(e8(sb).astype(np.float32),
                                                                  32, -1))
  np.testing.assert_allclose(np.asarray(out, np.float32), ref, rtol=1e-2, atol=1e-2)
  with pytest.raises(ValueError, match="3-dimensional"):
    nn.scaled_matmul(a[0], b, sa, sb)
  with pytest.raises(ValueError, match="match non-contract"):
    nn.scaled_matmul(a, b, sa[:, :2], sb)


def test_configs():
  c = nn.get_scaled_dot_general_config("nvfp4")
  assert (c.mode, c.block_size, c.data_type, c.scale_type) == (
      "nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn)
  assert float(c.global_scale) == 1.0 and not c.infer_only
  c = nn.get_scaled_dot_general_config("mxfp8")
  assert (c.block_size, c.data_type, c.scale_type, c.global_scale) == (
      32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu, None)
  with pytest.raises(ValueError, match="global_scale"):
    nn.get_scaled_dot_general_config("mxfp4", global_scale=jnp.float32(2.))
  with pytest.raises(ValueError, match="Unsupported mode"):
    nn.get_scaled_dot_general_config("int8")


@pytest.mark.parametrize("mode", ["mxfp8", "mxfp4", "nvfp4"])
def test_scaled_dot_general_matches_jax(mode):
  cs = [nn.get_scaled_dot_general_config(mode)] * 3
  out = nn.scaled_dot_general(_X, _Y, _DN, configs=cs)
  want_out, want_gx, want_gy = _JAX[mode]
  np.testing.assert_array_equal(np.asarray(out)[:2, :3], np.float32(want_out))
  gx, gy = ember.grad(lambda x, y: nn.scaled_dot_general(x, y, _DN, configs=cs)[:, :2].sum(),
                      argnums=(0, 1))(_X, _Y)
  np.testing.assert_allclose(np.asarray(gx)[0, :3], want_gx, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(gy)[:3, :2], want_gy, rtol=1e-6)


def test_scaled_dot_general_plain_jit_and_errors():
  np.testing.assert_allclose(nn.scaled_dot_general(_X, _Y, _DN), np.asarray(_X) @ np.asarray(_Y),
                             rtol=1e-5, atol=1e-5)
  c = nn.get_scaled_dot_general_config("mxfp8")
  dn = (((2,), (1,)), ((0,), (0,)))
  xb, yb = jnp.stack([_X, _Y]), jnp.stack([_Y, _X])
  out = ember.jit(lambda x, y: nn.scaled_dot_general(x, y, dn, configs=[c] * 3))(xb, yb)
  np.testing.assert_array_equal(out[0], nn.scaled_dot_general(_X, _Y, _DN, configs=[c] * 3))
  with pytest.raises(TypeError, match="preferred_element_type"):
    nn.scaled_dot_general(_X, _Y, _DN, preferred_element_type=jnp.int32, configs=[c] * 3)
  with pytest.raises(ValueError, match="multiple of the block size"):
    nn.scaled_dot_general(_X[:, :8], _Y[:8], _DN, configs=[c] * 3)

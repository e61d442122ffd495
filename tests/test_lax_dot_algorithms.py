"""lax.DotAlgorithmPreset / DotAlgorithm as dot_general's `precision`, with XLA:CPU's
semantics (the errors jax 0.12.1 reports, jax's values for the presets the CPU runs); and
lax.scaled_dot (block-scaled operands, against jax 0.12.1's values and NumPy)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

_X = np.random.RandomState(0).randn(4, 4).astype(np.float32)
_EXACT = _X.astype(np.float64) @ _X
P = lax.DotAlgorithmPreset


def _err(x, precision):
  out = lax.dot(x, x, precision=precision)
  assert out.dtype == x.dtype
  return float(np.abs(np.asarray(out, np.float64) - _EXACT).max())


def test_presets_round_operands_as_xla_cpu():
  # jax 0.12.1's maximum errors against the float64 product
  assert _err(_X, P.F16_F16_F32) == pytest.approx(0.002580455934150905, rel=1e-6)
  assert _err(_X.astype(np.float16), P.BF16_BF16_F32) == pytest.approx(0.015662827533481583,
                                                                       rel=1e-6)
  assert _err(_X, P.BF16_BF16_F32) < 1e-6          # float32 is a type it takes: unchanged
  assert _err(_X, P.F64_F64_F64) == pytest.approx(1.867660444077046e-07, rel=1e-6)
  assert _err(_X, P.F32_F32_F32) == _err(_X, None)
  jitted = ember.jit(lambda x: lax.dot(x, x, precision=P.F16_F16_F32))(_X)
  np.testing.assert_array_equal(jitted, lax.dot(_X, _X, precision=P.F16_F16_F32))
  g = ember.grad(lambda x: lax.dot(x, x, precision=P.F64_F64_F64).sum())(_X)
  np.testing.assert_allclose(g, ember.grad(lambda x: (x @ x).sum())(_X), rtol=1e-6)


def test_preset_properties_and_rejections():
  assert repr(P.DEFAULT) == "DotAlgorithmPreset.DEFAULT" and str(P.F32_F32_F32) == "F32_F32_F32"
  assert P.F16_F16_F32.supported_lhs_types == (np.float16,)
  assert P.F16_F16_F32.accumulation_type == np.float32
  assert P.DEFAULT.accumulation_type is None
  for preset in (P.BF16_BF16_BF16, P.TF32_TF32_F32, P.ANY_F8_ANY_F8_F32):
    with pytest.raises(ValueError, match=f"The precision '{preset.name}' is not supported"):
      lax.dot(_X, _X, precision=preset)
  algorithm = lax.DotAlgorithm(jnp.float32, jnp.float32, jnp.float32)
  assert algorithm.lhs_component_count == 1
  with pytest.raises(ValueError, match="is not supported by dot_general on CPU"):
    lax.dot_general(_X, _X, (([1], [0]), ([], [])), precision=algorithm)


def test_scaled_dot():
  r = np.random.RandomState(0)
  lhs = r.randn(2, 3, 8).astype(np.float32)
  rhs = r.randn(2, 8, 4).astype(np.float32)
  ls = r.rand(2, 3, 2).astype(np.float32) + 0.5
  rs = r.rand(2, 2, 4).astype(np.float32) + 0.5
  out = lax.scaled_dot(lhs, rhs, lhs_scale=ls, rhs_scale=rs, preferred_element_type=np.float32)
  jax_first6 = [-1.9362411499023438, -4.496734619140625, -7.098202705383301,
                -4.223140716552734, -0.7850227355957031, -3.0182647705078125]  # jax 0.12.1
  np.testing.assert_array_equal(np.asarray(out).ravel()[:6], jax_first6)
  want = np.einsum("bmk,bkn->bmn", lhs * np.repeat(ls, 4, axis=2), rhs * np.repeat(rs, 4, axis=1))
  np.testing.assert_allclose(out, want, rtol=0.05, atol=0.05)   # bfloat16 operands
  default = ember.jit(lambda *a: lax.scaled_dot(a[0], a[1], lhs_scale=a[2], rhs_scale=a[3]))(
      lhs, rhs, ls, rs)
  assert default.dtype == jnp.bfloat16 and default.shape == (2, 3, 4)
  assert lax.scaled_dot(lhs[0], rhs[0]).shape == (3, 4)
  with pytest.raises(TypeError, match="same rank"):
    lax.scaled_dot(lhs, rhs, lhs_scale=ls[0])
  with pytest.raises(TypeError, match="does not support 0-rank and 1-rank"):
    lax.scaled_dot(lhs[0, 0], rhs[0, :, 0])

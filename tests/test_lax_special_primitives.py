"""jax.lax's special-function primitives (igamma_p, igammac_p, igamma_grad_a_p,
regularized_incomplete_beta_p, polygamma_p, zeta_p, bessel_i1e_p): the functions bind them
(the jaxprs JAX prints), and binding them works eager, under jit, vmap and grad with the
values jax 0.12.1 produced."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

_A = np.array([0.5, 1.0, 3.0], np.float32)
_X = np.array([0.3, 2.0, 5.0], np.float32)
# jax 0.12.1: lax.igamma(_A, _X), its grads in a and x
_IGAMMA = [0.561422, 0.86466473, 0.875348]
_IGAMMA_DA = [-0.7705704, -0.22082537, -0.11369285]
_IGAMMA_DX = [0.7630906, 0.13533528, 0.08422434]


def test_functions_bind_the_primitives():
  assert str(ember.make_jaxpr(lax.igamma)(1., 2.)) == (
      "{ lambda ; a:f32[] b:f32[]. let c:f32[] = igamma a b in (c,) }")
  for fn, p, n in ((lax.igammac, lax.igammac_p, 2), (lax.igamma_grad_a, lax.igamma_grad_a_p, 2),
                   (lax.betainc, lax.regularized_incomplete_beta_p, 3),
                   (lax.polygamma, lax.polygamma_p, 2), (lax.zeta, lax.zeta_p, 2),
                   (lax.bessel_i1e, lax.bessel_i1e_p, 1)):
    jaxpr = ember.make_jaxpr(fn)(*[2.0] * n)
    assert [e.primitive for e in jaxpr.jaxpr.eqns] == [p]


def test_primitives_eager_jit_vmap_grad():
  for f in (lax.igamma_p.bind, ember.jit(lax.igamma_p.bind), ember.vmap(lax.igamma_p.bind)):
    np.testing.assert_allclose(f(_A, _X), _IGAMMA, rtol=2e-6)
  np.testing.assert_allclose(lax.igammac_p.bind(_A, _X), 1 - np.array(_IGAMMA), rtol=1e-5)
  da, dx = ember.grad(lambda a, x: lax.igamma_p.bind(a, x).sum(), (0, 1))(_A, _X)
  np.testing.assert_allclose(da, _IGAMMA_DA, rtol=2e-6)
  np.testing.assert_allclose(dx, _IGAMMA_DX, rtol=2e-6)
  np.testing.assert_allclose(lax.igamma_grad_a_p.bind(_A, _X), _IGAMMA_DA, rtol=2e-6)
  # jax 0.12.1's values
  np.testing.assert_allclose(lax.regularized_incomplete_beta_p.bind(
      np.float32(2), np.float32(3), np.array([0.2, 0.5], np.float32)), [0.1808, 0.6875],
      rtol=1e-6)
  np.testing.assert_allclose(ember.grad(lambda x: lax.betainc(2., 3., x))(0.5), 1.5, rtol=1e-6)
  np.testing.assert_allclose(lax.polygamma_p.bind(np.float32(1), np.float32(2)), 0.64493406,
                             rtol=1e-6)
  np.testing.assert_allclose(ember.grad(lambda x: lax.polygamma(1., x))(2.), -0.40411392,
                             rtol=2e-6)
  np.testing.assert_allclose(ember.jit(lax.zeta_p.bind)(np.float32(2), np.float32(1)),
                             1.644934, rtol=1e-6)
  np.testing.assert_allclose(lax.bessel_i1e_p.bind(np.array([0.5, -2., 40.], np.float32)),
                             [0.1564208, -0.21526928, 0.06248223], rtol=2e-6)
  np.testing.assert_allclose(ember.grad(lax.bessel_i1e_p.bind)(0.5), 0.17577288, rtol=1e-6)
  with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
    ember.grad(lambda a: lax.betainc(a, 3., 0.5))(2.)
  with pytest.raises(TypeError, match="igamma does not accept dtype int32"):
    lax.igamma(1, jnp.int32(2))

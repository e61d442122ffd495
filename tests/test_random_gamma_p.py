"""jax.random.random_gamma_p: the gamma sampler's primitive (library/random/gamma.py), bound
as JAX binds it (typed or raw keys, keys batched over a's leading axes), eager and under
jit, grad (implicit reparameterization) and vmap, against values JAX 0.12.1 produced."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import random
from ember.random import random_gamma_p

# XLA vectorizes a short last axis across rows and then drops some fused multiply-adds
# (library/random/gamma.py's docstring): a few draws differ from JAX's in the last ulp
RTOL = 1e-6

_A = np.array([0.5, 2.0, 3.0], np.float32)
_A2 = np.array([[0.5, 2.0, 7.0], [3., 4., 0.1]], np.float32)
# JAX 0.12.1: random_gamma_p.bind(key(0), _A, log_space=..., out_sharding=None)
_JAX_DRAWS = np.array([0.8845648, 1.7599413, 1.9683671], np.float32)
_JAX_LOG_DRAWS = np.array([-0.12265953, 0.5652805, 0.6772043], np.float32)
# keys split(key(0), 2) batched over _A2's rows
_JAX_BATCHED_KEYS = np.array([[9.1064328e-01, 6.9274008e-01, 8.2571087e+00],
                              [5.0589304e+00, 1.2485822e+00, 2.3810326e-05]], np.float32)
# d/da sum(draws), in linear and in log space
_JAX_GRAD = np.array([1.7750094, 1.0179106, 0.84927124], np.float32)
_JAX_LOG_GRAD = np.array([2.006647, 0.57837754, 0.43145978], np.float32)
# vmap over _A2's rows with one unbatched key
_JAX_VMAP_A = np.array([[8.8456482e-01, 1.7599413e+00, 5.5217390e+00],
                        [2.5691018e+00, 3.8041971e+00, 4.7918240e-07]], np.float32)


def _draw(key, a, log_space=False):
  return random_gamma_p.bind(key, a, log_space=log_space, out_sharding=None)


def test_bind_matches_jax():
  k = random.key(0)
  np.testing.assert_allclose(_draw(k, _A, False), _JAX_DRAWS, rtol=RTOL)
  np.testing.assert_allclose(_draw(k, _A, True), _JAX_LOG_DRAWS, rtol=RTOL)
  np.testing.assert_allclose(_draw(random.split(k, 2), _A2), _JAX_BATCHED_KEYS, rtol=RTOL)
  # compiled (one case: each compile of the nested rejection loops costs ~2 s)
  np.testing.assert_allclose(ember.jit(_draw)(random.split(k, 2), _A2), _JAX_BATCHED_KEYS,
                             rtol=RTOL)


def test_sampler_binds_it_and_raw_keys_agree():
  k = random.key(0)
  jaxpr = ember.make_jaxpr(lambda a: random.gamma(k, a))(_A)
  assert [e.primitive for e in jaxpr.eqns] == [random_gamma_p]
  assert jaxpr.eqns[0].params == {"log_space": False, "out_sharding": None}
  np.testing.assert_array_equal(_draw(k, _A), random.gamma(k, _A))
  np.testing.assert_array_equal(_draw(random.key_data(k), _A), random.gamma(k, _A))
  assert random_gamma_p.bind(k, _A, log_space=False).dtype == np.float32  # out_sharding optional


def test_grad_is_implicit_reparameterization():
  k = random.key(0)
  np.testing.assert_allclose(ember.grad(lambda a: _draw(k, a).sum())(_A), _JAX_GRAD, rtol=RTOL)
  np.testing.assert_allclose(ember.grad(lambda a: _draw(k, a, True).sum())(_A), _JAX_LOG_GRAD,
                             rtol=2e-6)   # through exp(log x) / x: a few ulps
  # the same gradient as ember.random.gamma's
  np.testing.assert_array_equal(ember.grad(lambda a: _draw(k, a).sum())(_A),
                                ember.grad(lambda a: random.gamma(k, a).sum())(_A))


def test_vmap():
  k = random.key(0)
  np.testing.assert_allclose(ember.vmap(lambda a: _draw(k, a))(_A2), _JAX_VMAP_A, rtol=RTOL)
  keys = random.key_data(random.split(k, 2))
  np.testing.assert_allclose(ember.vmap(_draw)(keys, _A2), _JAX_BATCHED_KEYS, rtol=RTOL)


def test_errors():
  k = random.key(0)
  with pytest.raises(ValueError, match="leading shape of a"):
    _draw(random.split(k, 2), _A)
  with pytest.raises(TypeError, match="a must be floating"):
    _draw(k, np.array([1, 2], np.int32))
  with pytest.raises(TypeError, match="key"):
    _draw(jnp.zeros((3,), jnp.uint32), _A)

"""pmap on ember's one device: the leading axis (size 1) maps with its name bound for
collectives, compiled once per signature; in_axes/out_axes/static_broadcasted_argnums/
donate_argnums as JAX's; an axis longer than the devices is JAX's error. Values as real
JAX 0.12 gives them on one CPU device."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

f32 = np.float32
X = np.array([[0.5, -1.0, 2.0]], f32)


def test_pmap_maps_the_leading_axis_with_collectives():
  out = ember.pmap(lambda x: x - lax.psum(x, "i"), axis_name="i")(X)
  assert isinstance(out, ember.Array) and out.shape == (1, 3)
  np.testing.assert_array_equal(out, np.zeros((1, 3), f32))
  np.testing.assert_array_equal(
      ember.pmap(lambda x: lax.axis_index("i"), axis_name="i")(X), np.array([0], np.int32))
  np.testing.assert_array_equal(
      ember.jit(ember.pmap(lambda x: lax.pmean(x, "i"), axis_name="i"))(X), X)
  np.testing.assert_allclose(ember.pmap(lambda x: x.sum())(X), [1.5])


def test_pmap_axes_static_and_donated_arguments():
  np.testing.assert_array_equal(
      ember.pmap(lambda x, y: x * y, in_axes=(0, None))(X, f32(2.0)), X * 2)
  assert ember.pmap(lambda x: x, out_axes=1)(X).shape == (3, 1)
  scale = ember.pmap(lambda x, n: x * n, static_broadcasted_argnums=(1,))
  np.testing.assert_array_equal(scale(X, 3), X * 3)
  np.testing.assert_array_equal(scale(X, 4), X * 4)   # a new static value: a new compile
  # a tuple in_axes names every positional argument, the static one too (JAX)
  np.testing.assert_array_equal(
      ember.pmap(lambda n, x: x + n, in_axes=(None, 0), static_broadcasted_argnums=0)(1, X),
      X + 1)
  np.testing.assert_array_equal(ember.pmap(lambda x: x * 2, donate_argnums=0)(jnp.asarray(X)),
                                X * 2)
  np.testing.assert_array_equal(ember.pmap(lambda x, k: x + k)(X, k=X), X + X)  # kwargs map


def test_pmap_composes_with_grad_and_vmap():
  g = ember.grad(lambda x: ember.pmap(jnp.sin)(x).sum())(X)
  np.testing.assert_allclose(g, np.cos(X), rtol=1e-6)
  assert ember.vmap(ember.pmap(lambda x: x * 2))(np.ones((3, 1, 2), f32)).shape == (3, 1, 2)


def test_pmap_errors():
  with pytest.raises(ValueError, match=r"compiling computation `pmap_<lambda>` that requires 2 "
                     r"logical devices, but only 1 XLA devices are available \(num_replicas=2\)"):
    ember.pmap(lambda x: x)(np.ones((2, 3), f32))
  with pytest.raises(ValueError, match="requires 2 logical devices"):
    ember.pmap(lambda x: x, in_axes=None, axis_size=2)(f32(1.0))
  with pytest.raises(ValueError, match="pmap requires at least one argument with a mapped axis"):
    ember.pmap(lambda x: x, in_axes=None)(f32(1.0))
  with pytest.raises(ValueError, match="rank should be at least 1, but is only 0"):
    ember.pmap(lambda x: x)(f32(1.0))
  with pytest.raises(TypeError, match="pmap expects a callable"):
    ember.pmap(3)

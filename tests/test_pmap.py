"""ember.pmap on ember's one CPU device: jit(vmap(...)) with the named axis; values as real
JAX 0.12 gives on one device."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

X = np.arange(3, dtype=np.float32).reshape(1, 3)


def test_maps_the_leading_axis():
  np.testing.assert_array_equal(np.asarray(ember.pmap(lambda x: x * 2)(X)), X * 2)


def test_axis_name_for_collectives():
  out = ember.pmap(lambda x: lax.psum(x, "i"), axis_name="i")(X)
  np.testing.assert_array_equal(np.asarray(out), X)


def test_static_broadcasted_argnums_and_in_axes():
  f = ember.pmap(lambda x, n: x * n, static_broadcasted_argnums=1)
  np.testing.assert_array_equal(np.asarray(f(X, 3)), X * 3)
  g = ember.pmap(lambda x, y: x + y, in_axes=(0, None))
  np.testing.assert_array_equal(np.asarray(g(X, np.ones(3, np.float32))), X + 1)


def test_compiles_once():
  traces = []
  f = ember.pmap(lambda x: traces.append(1) or x + 1)
  f(X)
  f(X + 1)
  assert len(traces) == 1


def test_more_examples_than_devices():
  with pytest.raises(ValueError, match="requires 2 logical devices, but only 1 XLA devices "
                                       "are available.*use vmap"):
    ember.pmap(lambda x: x)(jnp.ones((2, 3)))

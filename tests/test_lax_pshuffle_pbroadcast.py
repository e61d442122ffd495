"""lax.pshuffle (ppermute by sources) and lax.pbroadcast (every index gets the source's
value) under vmap and pmap with a named axis, their derivatives and errors (semantics from
JAX 0.12's docstrings: pbroadcast == psum(where(axis_index == source, x, 0)))."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

_X = np.arange(8., dtype=np.float32).reshape(4, 2)


def test_pshuffle():
  out = ember.vmap(lambda v: lax.pshuffle(v, "i", [3, 0, 1, 2]), axis_name="i")(_X)
  np.testing.assert_array_equal(out, _X[[3, 0, 1, 2]])
  out = ember.jit(ember.vmap(lambda v: lax.pshuffle(v, "i", [1, 2, 3, 0]), axis_name="i"))(_X)
  np.testing.assert_array_equal(out, _X[[1, 2, 3, 0]])
  with pytest.raises(ValueError, match="does not represent a permutation"):
    ember.vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]), axis_name="i")(_X)


def test_pbroadcast():
  out = ember.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(_X)
  np.testing.assert_array_equal(out, np.broadcast_to(_X[2], (4, 2)))
  out = ember.vmap(lambda v: lax.pbroadcast({"a": v}, "i", jnp.int32(1)), axis_name="i")(_X)
  np.testing.assert_array_equal(out["a"], np.broadcast_to(_X[1], (4, 2)))
  np.testing.assert_array_equal(
      ember.pmap(lambda v: lax.pbroadcast(v, "i", 0), axis_name="i")(_X[:1]), _X[:1])
  g = ember.grad(lambda x: ember.vmap(lambda v: lax.pbroadcast(v, "i", 2),
                                      axis_name="i")(x).sum())(_X)
  want = np.zeros_like(_X)
  want[2] = 4.0
  np.testing.assert_array_equal(g, want)
  with pytest.raises(ValueError, match="source 5 is outside the axis"):
    ember.vmap(lambda v: lax.pbroadcast(v, "i", 5), axis_name="i")(_X)

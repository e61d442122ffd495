"""jax.Ref / jax.new_ref (eager mutable arrays, typed AbstractRef; refs in traced code:
tests/test_refs.py) and `hijax.AbstractRef`, their type; values and messages as real JAX
0.12's (the rest of jax.experimental.hijax: tests/test_hijax.py)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental import hijax


def test_new_ref_reads_and_writes_in_place():
  r = ember.new_ref(jnp.arange(3.0))
  assert isinstance(r, ember.Ref) and not isinstance(r, ember.Array)
  r[...] = jnp.ones(3)
  r[0] = 5   # a weakly typed Python scalar takes the ref's dtype
  np.testing.assert_array_equal(np.asarray(r[...]), [5.0, 1.0, 1.0])
  assert float(r[1]) == 1.0
  assert r.shape == (3,) and r.dtype == np.float32 and r.ndim == 1
  assert repr(r) == "Ref([5., 1., 1.], dtype=float32)"


def test_typeof_a_ref_is_an_abstract_ref():
  r = ember.new_ref(jnp.zeros(3))
  ty = ember.typeof(r)
  assert isinstance(ty, hijax.AbstractRef) and isinstance(ty, ember.core.AbstractValue)
  assert str(ty) == "Ref{float32[3]}"
  assert ty.inner_aval == ember.typeof(jnp.zeros(3))
  assert ty == ember.typeof(ember.new_ref(jnp.ones(3)))
  assert ty != ember.typeof(ember.new_ref(jnp.ones(4)))


def test_writes_must_keep_dtype_and_shape():
  r = ember.new_ref(jnp.arange(3.0))
  with pytest.raises(ValueError, match="Invalid dtype for `swap`. Ref dtype: float32. Value "
                                       "dtype: int32"):
    r[...] = jnp.ones(3, jnp.int32)
  with pytest.raises(ValueError, match=r"Invalid shape for `swap`. Ref shape: \(3,\).*Value "
                                       r"shape: \(4,\)"):
    r[...] = jnp.ones(4)

"""jnp.save / jnp.savez / jnp.load: NumPy's .npy/.npz files, as JAX 0.12 reads and writes
them (save and savez are NumPy's; load gives an Array for .npy, restoring bfloat16)."""
import io

import numpy as np
import pytest

import ember
import ember.numpy as jnp


def _round_trip(x, **kw):
  f = io.BytesIO()
  jnp.save(f, x)
  f.seek(0)
  return jnp.load(f, **kw)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "bfloat16", "complex64"])
def test_save_load_round_trip(dtype):
  x = jnp.arange(6).reshape(2, 3).astype(dtype)
  y = _round_trip(x)
  assert isinstance(y, ember.Array) and y.dtype == x.dtype and y.shape == (2, 3)
  np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


def test_save_of_a_computed_array_and_numpy_reads_it():
  f = io.BytesIO()
  jnp.save(f, ember.jit(lambda a: a * 2)(jnp.arange(3.0)))
  f.seek(0)
  np.testing.assert_array_equal(np.load(f), [0.0, 2.0, 4.0])


def test_savez_and_load_give_numpys_npzfile():
  f = io.BytesIO()
  jnp.savez(f, a=jnp.arange(3), b=jnp.ones(2))
  f.seek(0)
  z = jnp.load(f)
  assert isinstance(z, np.lib.npyio.NpzFile)   # JAX 0.12: NumPy arrays inside
  assert isinstance(z["a"], np.ndarray) and z["a"].dtype == np.int32
  np.testing.assert_array_equal(z["b"], np.ones(2, np.float32))


def test_load_of_a_dtype_ember_has_no_arrays_of_is_numpys():
  f = io.BytesIO()
  np.save(f, np.array(["a", "b"]))
  f.seek(0)
  out = jnp.load(f)
  assert isinstance(out, np.ndarray) and out.dtype == np.dtype("<U1")


def test_load_under_jit_is_not_traced():
  # load reads a file at trace time: its Array is a constant of the jitted function
  f = io.BytesIO()
  np.save(f, np.arange(3.0, dtype=np.float32))

  @ember.jit
  def g(x):
    f.seek(0)
    return x + jnp.load(f)
  np.testing.assert_array_equal(g(jnp.ones(3)), [1.0, 2.0, 3.0])

"""ember.Array: metadata, conversions, repr, devices, immutability, x64 canonicalization."""
import pickle

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp


def arr(x, dtype=None):
  return jax.device_put(np.asarray(x, dtype))


def test_metadata():
  x = arr(np.arange(6).reshape(2, 3), np.float32)
  assert isinstance(x, jax.Array)
  assert x.shape == (2, 3) and x.dtype == np.float32 and x.ndim == 2
  assert x.size == 6 and x.nbytes == 24 and not x.weak_type
  assert x.T.shape == (3, 2) and x.mT.shape == (3, 2)
  assert x.format.layout.major_to_minor == (0, 1)
  assert x.block_until_ready() is x and x.is_ready()
  assert x.device == jax.devices()[0] and str(x.device) == "cpu:0" and jax.devices()[0].platform == "cpu"


def test_conversions():
  x = arr([[1.5, 2.0], [3.0, 4.0]], np.float32)
  assert x.tolist() == [[1.5, 2.0], [3.0, 4.0]]
  assert x[0, 0].item() == 1.5 and float(x[0, 0]) == 1.5 and int(x[1, 1]) == 4
  assert bool(arr(1.0, np.float32)) and not bool(arr(0, np.int32))
  assert [1, 2, 3][arr(1, np.int32)] == 2  # __index__
  assert len(x) == 2 and [r.tolist() for r in x] == [[1.5, 2.0], [3.0, 4.0]]
  np.testing.assert_array_equal(np.asarray(x), [[1.5, 2.0], [3.0, 4.0]])
  with pytest.raises(ValueError, match="ambiguous"):
    bool(x)
  with pytest.raises(TypeError, match="only length-1"):
    float(x)
  with pytest.raises(TypeError, match="unsized"):
    len(arr(1.0))
  with pytest.raises(TypeError, match="integer scalar"):
    [1, 2][arr(1.0, np.float32)]


def test_repr_matches_jax():
  assert repr(arr([1.0, 1.0, 1.0], np.float32)) == "Array([1., 1., 1.], dtype=float32)"
  assert repr(arr([0, 1, 2], np.int32)) == "Array([0, 1, 2], dtype=int32)"
  assert repr(arr(True)) == "Array(True, dtype=bool)"
  assert repr(jnp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
  assert repr(arr(np.ones((2, 2)), jnp.bfloat16)) == "Array([[1, 1],\n       [1, 1]], dtype=bfloat16)"
  assert repr(arr(np.ones((2000, 2000), np.float32))) == "Array(shape=(2000, 2000), dtype=float32)"
  assert repr(arr(np.zeros((0, 3), np.float32))) == "Array([], shape=(0, 3), dtype=float32)"
  assert str(arr([1.0, 2.0], np.float32)) == "[1. 2.]"
  assert f"{arr(1.25, np.float32):.1f}" == "1.2"


def test_immutable():
  x = arr([1.0, 2.0], np.float32)
  with pytest.raises(TypeError, match=r"\.at\[idx\]\.set"):
    x[0] = 3.0
  with pytest.raises(ValueError):
    np.asarray(x)[0] = 3.0  # the NumPy view is read-only too


def test_unhashable_and_pickle():
  x = arr([1.0, 2.0], np.float32)
  with pytest.raises(TypeError, match="unhashable"):
    hash(x)
  y = pickle.loads(pickle.dumps(x))
  assert isinstance(y, jax.Array) and y.tolist() == [1.0, 2.0]


def test_device_put_get_block_until_ready():
  tree = {"a": np.ones(2, np.float32), "b": (1.0, np.arange(3))}
  on_dev = jax.device_put(tree)
  assert isinstance(on_dev["a"], jax.Array) and on_dev["b"][1].dtype == np.int32
  back = jax.device_get(on_dev)
  assert isinstance(back["a"], np.ndarray)
  assert jax.block_until_ready(on_dev) is on_dev
  with pytest.raises(TypeError):
    jax.block_until_ready()


def test_deleted_array_raises():
  x = arr([1.0], np.float32)
  x.delete()
  assert x.is_deleted()
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(x)


def test_x32_canonicalizes_64_bit_inputs():
  x = jax.device_put(np.ones(3, np.float64))
  assert x.dtype == np.float32
  assert jax.device_put(np.arange(3, dtype=np.int64)).dtype == np.int32
  assert jnp.asarray(1).dtype == np.int32 and jnp.asarray(1.0).dtype == np.float32
  j = jax.make_jaxpr(lambda v: v)(np.ones(2, np.float64))
  assert str(j.in_avals[0]) == "float32[2]" and j.in_avals[0].str_short(short_dtypes=True) == "f32[2]"


def test_x64_switch():
  with jax.enable_x64():
    assert jax.device_put(np.ones(3, np.float64)).dtype == np.float64
    assert jnp.asarray(1.0).dtype == np.float64 and jnp.asarray(1).dtype == np.int64
    assert str(jax.make_jaxpr(lambda v: v * 2)(1.0)) == \
        "{ lambda ; a:f64[]. let b:f64[] = mul a 2.0:f64[] in (b,) }"
  assert jnp.asarray(1.0).dtype == np.float32


def test_x64_environment_variable(tmp_path):
  import subprocess
  import sys
  code = "import ember.numpy as jnp; print(jnp.asarray(1.0).dtype)"
  env = dict(__import__("os").environ, JAX_ENABLE_X64="1")
  out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
  assert out.stdout.strip() == "float64", out.stderr


def test_python_int_overflow():
  with pytest.raises(OverflowError, match="int32"):
    jnp.asarray(2**40)


def test_tracers_have_array_copy_and_device_methods():
  # JAX 0.12's tracers have copy / __copy__ / __deepcopy__ / to_device / itemsize (optax
  # calls `x.copy()` under jit); values as JAX's
  import copy as copy_mod
  x = jnp.arange(3.)
  f = lambda x: (x.copy() * 2, copy_mod.copy(x), copy_mod.deepcopy(x), x.itemsize,
                 x.to_device(None), x.to_device(jax.devices()[0]))
  for out in (f(x), jax.jit(f)(x)):
    np.testing.assert_array_equal(np.asarray(out[0]), [0., 2., 4.])
    for a in out[1:3] + out[4:]:
      np.testing.assert_array_equal(np.asarray(a), [0., 1., 2.])
    assert int(out[3]) == 4
  np.testing.assert_array_equal(
      np.asarray(jax.grad(lambda y: (y.copy() ** 2).sum())(x)), [0., 2., 4.])
  np.testing.assert_array_equal(np.asarray(jax.vmap(lambda y: y.copy() + 1)(x)), [1., 2., 3.])

"""The array API standard's namespace pieces of ember.numpy (values recorded from JAX
0.12): __array_api_version__, __array_namespace_info__(), Array.__array_namespace__,
DLPack interchange (through NumPy), to_device/device, positional signatures."""
import inspect

import numpy as np
import pytest

import ember
import ember.numpy as jnp


def test_version_and_namespace():
  assert jnp.__array_api_version__ == "2025.12"
  x = jnp.arange(3.0)
  assert x.__array_namespace__() is jnp
  assert x.__array_namespace__(api_version="2025.12") is jnp
  with pytest.raises(ValueError, match="api_version='2019.01' is not available"):
    x.__array_namespace__(api_version="2019.01")
  seen = []
  ember.jit(lambda v: seen.append(v.__array_namespace__()) or v)(x)   # tracers too
  assert seen == [jnp]


def test_namespace_info():
  info = jnp.__array_namespace_info__()
  assert info.capabilities() == {"boolean indexing": False, "data-dependent shapes": False,
                                 "max dimensions": 64}
  assert info.default_device() is None
  assert info.devices() == (None, *ember.devices())
  assert info.default_dtypes() == {"real floating": np.dtype("float32"),
                                   "complex floating": np.dtype("complex64"),
                                   "integral": np.dtype("int32"),
                                   "indexing": np.dtype("int32")}
  assert set(info.dtypes()) == {"bool", "int8", "int16", "int32", "uint8", "uint16",
                                "uint32", "float32", "complex64"}
  assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "uint8", "uint16",
                                               "uint32"}
  assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64"}
  with ember.enable_x64():
    assert info.default_dtypes()["real floating"] == np.float64
    assert "uint64" in info.dtypes(kind="unsigned integer")
  with pytest.raises(ValueError, match="Unrecognized data type kind: 'text'"):
    info.dtypes(kind="text")


def test_dlpack_round_trips():
  x = jnp.arange(6.0).reshape(2, 3)
  assert x.__dlpack_device__() == (1, 0)
  np.testing.assert_array_equal(np.from_dlpack(x), np.asarray(x))
  y = jnp.from_dlpack(np.arange(4, dtype=np.int16))
  assert isinstance(y, ember.Array) and y.dtype == np.int16
  np.testing.assert_array_equal(y, [0, 1, 2, 3])
  z = jnp.from_dlpack(x)
  np.testing.assert_array_equal(z, x)
  jnp.from_dlpack(x, device=x.device)
  x.__dlpack__(max_version=(1, 0))       # DLPack 1.0 marks the buffer read-only
  with pytest.raises(BufferError, match="read-only"):
    x.__dlpack__(copy=False)


def test_device_and_to_device():
  x = jnp.ones(3)
  assert x.device == ember.devices()[0]
  assert x.to_device(None) is x
  for where in (x.device, x.sharding):   # as JAX 0.12: a new array, committed there
    y = x.to_device(where)
    assert y is not x and y.committed and not x.committed and y.device == x.device
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))
  with pytest.raises(ValueError, match="to_device: unknown device 'gpu:0'"):
    x.to_device("gpu:0")


@pytest.mark.parametrize("name,params", [
    ("atan2", "(x1, x2, /)"), ("arctan2", "(x1, x2, /)"), ("left_shift", "(x, y, /)"),
    ("right_shift", "(x1, x2, /)"), ("bitwise_left_shift", "(x, y, /)"),
    ("bitwise_right_shift", "(x1, x2, /)"), ("acos", "(x, /)"),
    ("bitwise_invert", "(x, /)")])
def test_positional_signatures(name, params):   # JAX 0.12's, without annotations
  sig = inspect.signature(getattr(jnp, name))
  assert str(sig.replace(return_annotation=inspect.Signature.empty)) == params


def test_meshgrid_and_broadcast_arrays_return_tuples():   # as JAX 0.12
  assert type(jnp.meshgrid(jnp.ones(2), jnp.ones(3))) is tuple
  assert type(jnp.broadcast_arrays(jnp.ones(2), jnp.ones(1))) is tuple


@pytest.mark.parametrize("fn,z,want", [
    (jnp.expm1, complex(np.inf, 0), complex(np.inf, 0)),
    (jnp.log1p, complex(-1, 0), complex(-np.inf, 0)),
    (jnp.exp, complex(0, 0), complex(1, 0)),
])
def test_complex_special_values_match_jax(fn, z, want):
  got = complex(fn(np.complex64(z)))
  assert got == want


# pow(-inf, y) = +inf and pow(-0, y) = +0 for y > 0 not an odd integer (the standard, C pow,
# JAX 0.12). NumPy's power loop takes sqrt for a broadcast exponent of 0.5 (nan, -0), which
# ember's reference impl must not inherit: 0-d operands and scalar exponents broadcast.
_POW_BASES = [-np.inf, -0.0, 4.0, -np.inf, -0.0, 2.0]
_POW_EXPS = [0.5, 0.5, 0.5, 2.5, 0.25, 3.0]
_POW_WANT = [np.inf, 0.0, 2.0, np.inf, 0.0, 8.0]   # JAX 0.12 (and np.power on 1-d arrays)


def _same_floats(got, want):
  got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("jit", [False, True])
def test_pow_special_values_0d_and_broadcast_exponent(x64, jit):
  with ember.enable_x64(x64):
    dt = jnp.float64 if x64 else jnp.float32
    power = ember.jit(jnp.power) if jit else jnp.power
    np.testing.assert_array_equal(
        np.power(np.asarray(_POW_BASES), np.asarray(_POW_EXPS)), _POW_WANT)
    for x, y, want in zip(_POW_BASES, _POW_EXPS, _POW_WANT):
      _same_floats(power(jnp.asarray(x, dt), jnp.asarray(y, dt)), want)     # 0-d, 0-d
      _same_floats(power(jnp.full((2, 3), x, dt), jnp.asarray(y, dt)), np.full((2, 3), want))
      _same_floats(jnp.full((2,), x, dt) ** y, np.full((2,), want))          # Python scalar
    _same_floats(power(jnp.asarray(_POW_BASES, dt), jnp.asarray(_POW_EXPS, dt)), _POW_WANT)


# expm1(+-0 + 0j) = +0 + 0j (the standard; JAX 0.12 gives 0j for all four signed zeros). The
# imaginary zero keeps its sign (conj symmetry), where JAX's is always +0.
@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("jit", [False, True])
def test_expm1_of_complex_zero_has_positive_real_zero(dt, jit):
  with ember.enable_x64(dt == np.complex128):
    expm1 = ember.jit(jnp.expm1) if jit else jnp.expm1
    for z, want_im in [(complex(-0.0, 0.0), 0.0), (complex(0.0, 0.0), 0.0),
                       (complex(-0.0, -0.0), -0.0), (complex(0.0, -0.0), -0.0)]:
      got = np.asarray(expm1(jnp.asarray(np.full((2,), z, dt))))
      assert got.dtype == dt
      _same_floats(got.real, [0.0, 0.0])
      _same_floats(got.imag, [want_im, want_im])
      _same_floats(np.asarray(expm1(jnp.asarray(z, dt))).real, 0.0)

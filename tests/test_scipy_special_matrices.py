"""jax.scipy.linalg's special-matrix constructors against SciPy in float64, eagerly and
under jit; their result dtypes without x64 (JAX 0.12.1's, recorded), batching over
leading axes, and the errors users hit. The values are exact (integer or correctly
rounded entries), so the float64 comparisons are tight."""
import numpy as np
import pytest

import ember
import ember.scipy.linalg as L

sl = pytest.importorskip("scipy.linalg")   # the reference

C = np.array([1.0, 2 + 1j, 3.0])
R = np.array([4.0, 5.0, 6.0, 7.0])
POLY = np.array([2.0, 3.0, 4.0, 5.0])


@pytest.fixture
def x64():
  with ember.enable_x64():
    yield


FROM_ARRAYS = [
    ("toeplitz", (C, R)), ("toeplitz", (C,)), ("hankel", (C, R)), ("hankel", (C,)),
    ("circulant", (R,)), ("leslie", (np.array([1.0, 2, 3]), np.array([0.5, 0.6]))),
    ("companion", (POLY,)), ("fiedler", (R,)),
]


@pytest.mark.parametrize("name,args", FROM_ARRAYS)
def test_from_arrays_match_scipy(x64, name, args):
  want = getattr(sl, name)(*args)
  np.testing.assert_allclose(getattr(L, name)(*args), want, rtol=1e-14)


def test_from_arrays_under_jit(x64):
  for name, args in FROM_ARRAYS[::2]:
    np.testing.assert_allclose(ember.jit(getattr(L, name))(*args), getattr(sl, name)(*args),
                               rtol=1e-14)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_fiedler_companion(x64, n):
  a = np.arange(1.0, n + 1)
  np.testing.assert_allclose(L.fiedler_companion(a), sl.fiedler_companion(a), rtol=1e-14)


def test_fiedler_companion_of_a_constant():
  # JAX's (0, 0) matrix, where SciPy returns shape (0,)
  assert L.fiedler_companion(np.array([2.0])).shape == (0, 0)


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolution_matrix(x64, mode):
  a = np.array([1.0, 2, 3, 4])
  for n in (2, 5):
    got = ember.jit(L.convolution_matrix, static_argnames=("n", "mode"))(a, n=n, mode=mode)
    np.testing.assert_allclose(got, sl.convolution_matrix(a, n, mode), rtol=1e-14)
    v = np.arange(1.0, n + 1)
    np.testing.assert_allclose(np.asarray(got) @ v, np.convolve(a, v, mode), rtol=1e-14)


@pytest.mark.parametrize("name,args", [
    ("hilbert", (5,)), ("invhilbert", (6,)), ("helmert", (5,)), ("helmert", (5, True)),
    ("hadamard", (8,)), ("dft", (5,)), ("dft", (5, "sqrtn")), ("dft", (5, "n")),
    ("pascal", (5, "symmetric")), ("pascal", (5, "lower")), ("pascal", (5, "upper")),
    ("invpascal", (5, "symmetric")), ("invpascal", (5, "lower")), ("invpascal", (5, "upper")),
])
def test_from_size_match_scipy(x64, name, args):
  np.testing.assert_allclose(getattr(L, name)(*args), getattr(sl, name)(*args), rtol=1e-13,
                             atol=1e-13)


def test_dtypes_without_x64():
  # JAX 0.12.1's result dtypes (pascal is float32 always; hadamard's default int)
  f32 = np.array([1.0, 2, 3], np.float32)
  ints = np.array([1, 2, 3])
  want = {
      "toeplitz": (L.toeplitz(ints), "int32"), "hankel": (L.hankel(f32), "float32"),
      "companion": (L.companion(ints), "float32"), "fiedler": (L.fiedler(ints), "int32"),
      "fiedler_companion": (L.fiedler_companion(ints), "float32"),
      "convolution_matrix": (L.convolution_matrix(ints, 4), "int32"),
      "hilbert": (L.hilbert(3), "float32"), "invhilbert": (L.invhilbert(3), "float32"),
      "pascal": (L.pascal(3), "float32"), "invpascal": (L.invpascal(3), "float32"),
      "helmert": (L.helmert(3), "float32"), "hadamard": (L.hadamard(4), "int32"),
      "dft": (L.dft(3), "complex64"),
  }
  for name, (got, dt) in want.items():
    assert str(got.dtype) == dt, name
  assert L.convolution_matrix(ints, 4).shape == (6, 4)
  assert L.companion(ints).shape == (2, 2)


def test_batched_over_leading_axes(x64):
  c, r = np.arange(6.0).reshape(2, 3), np.arange(8.0).reshape(2, 4)
  got = L.toeplitz(c, r)
  assert got.shape == (2, 3, 4)
  for i in range(2):
    np.testing.assert_allclose(got[i], sl.toeplitz(c[i], r[i]))
  np.testing.assert_allclose(ember.vmap(L.circulant)(r)[1], sl.circulant(r[1]))
  np.testing.assert_allclose(L.companion(np.stack([POLY, 2 * POLY]))[1], sl.companion(POLY))


def test_errors():
  with pytest.raises(ValueError, match="length of f"):
    L.leslie(np.array([1.0]), np.array([]))
  with pytest.raises(ValueError, match="one less than the length of f"):
    L.leslie(np.array([1.0, 2, 3]), np.array([1.0]))
  with pytest.raises(ValueError, match="at least 2"):
    L.companion(np.array([1.0]))
  with pytest.raises(ValueError, match="scalar"):
    L.hankel(np.float32(1))
  with pytest.raises(ValueError, match="mode"):
    L.convolution_matrix(np.array([1.0, 2]), 3, mode="bad")
  with pytest.raises(ValueError, match="positive"):
    L.convolution_matrix(np.array([1.0, 2]), 0)
  with pytest.raises(ValueError, match="power of 2"):
    L.hadamard(6)
  with pytest.raises(ValueError, match="kind"):
    L.pascal(3, "diagonal")
  with pytest.raises(ValueError, match="complex"):
    L.dft(3, dtype=np.float32)
  with pytest.raises(ValueError, match="scale"):
    L.dft(3, scale="bad")
  with pytest.raises(TypeError, match="toeplitz requires ndarray"):
    L.toeplitz([1.0, 2.0])

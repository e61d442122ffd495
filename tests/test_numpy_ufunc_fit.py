"""jnp.ufunc / frompyfunc, top_k, minmax, piecewise, roots, polyfit, einsum_path, the
string/iterator/file readers, the 1-bit/6-bit/16-bit-complex dtype names and
jax.dtypes.itemsize_bits / scalar_type_of. Expected values: NumPy float64, or what real
JAX 0.12.1 printed for the same calls (quoted)."""
import ml_dtypes
import numpy as np
import pytest

import ember
import ember.dtypes as edtypes
import ember.numpy as jnp


def _close(a, b, rtol=1e-6, atol=1e-6):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


# --- ufunc / frompyfunc -----------------------------------------------------------------

_F = jnp.frompyfunc(lambda x, y: x * y + 1, 2, 1, identity=0)
_A = jnp.arange(12.).reshape(3, 4)


def test_frompyfunc_object():
  assert isinstance(_F, jnp.ufunc) and repr(_F) == "<jnp.ufunc '<lambda>'>"
  assert (_F.nin, _F.nout, _F.nargs, _F.identity) == (2, 1, 2, 0)
  assert _F == jnp.frompyfunc(_F._func, 2, 1, identity=0) and hash(_F) == hash(
      jnp.frompyfunc(_F._func, 2, 1, identity=0))
  with pytest.raises(AttributeError):
    _F.nin = 3   # read-only: a ufunc can be a static argument


def test_ufunc_methods_match_jax():
  _close(_F(_A, 2.), _A * 2 + 1)
  _close(_F.reduce(_A), [41., 55., 71., 89.])                     # JAX 0.12.1
  _close(_F.reduce(_A, axis=1), [16., 260., 1112.])
  _close(_F.reduce(_A, axis=None, keepdims=True), [[1.0850511e+08]])
  _close(_F.reduce(_A, axis=1, where=_A > 3, initial=2.), [2., 1940., 16952.])
  _close(_F.accumulate(_A, axis=1), [[0, 1, 3, 10], [4, 21, 127, 890], [8, 73, 731, 8042]])
  _close(_F.at(jnp.zeros(5), jnp.array([0, 1, 1]), 2., inplace=False), [1, 3, 0, 0, 0])
  _close(_F.reduceat(jnp.arange(8.), jnp.array([0, 4, 1, 5])), [10., 4., 41., 218.])
  _close(_F.outer(jnp.arange(3.), jnp.arange(2.)), [[1, 1], [1, 2], [1, 3]])
  _close(ember.jit(lambda a: _F.reduce(a))(_A), [41., 55., 71., 89.])
  pair = jnp.frompyfunc(lambda x: (x, x * 2), 1, 2)(jnp.arange(3))
  _close(pair[0], [0, 1, 2])
  _close(pair[1], [0, 2, 4])


def test_ufunc_errors():
  with pytest.raises(ValueError, match="reduce only supported for binary ufuncs"):
    jnp.frompyfunc(lambda x: x, 1, 1).reduce(_A)
  with pytest.raises(NotImplementedError, match="inplace=False"):
    _F.at(_A, 0, 1.)
  with pytest.raises(ValueError, match="no identity"):
    jnp.frompyfunc(lambda x, y: x, 2, 1).reduce(jnp.zeros((0,)))
  assert float(_F.reduce(jnp.zeros((0,)), axis=0)) == 0.0   # the identity


# --- top_k, minmax, piecewise -------------------------------------------------------------

def test_top_k():
  v, i = jnp.top_k(jnp.array([3, 1, 4, 1, 5.]), 2)
  _close(v, [5, 4])
  _close(i, [4, 2])
  v, i = jnp.top_k(jnp.array([[3, 1, 4], [1, 5., 0]]), 2, axis=0, mode="smallest")
  _close(v, [[1, 1, 0], [3, 5, 4]])
  _close(i, [[1, 0, 1], [0, 1, 0]])
  v, i = jnp.top_k(jnp.array([3, 1, 4, 1, 5]), 3, mode="smallest")
  assert v.dtype == np.int32 and list(v) == [1, 1, 3] and list(i) == [1, 3, 0]
  v, i = ember.jit(jnp.top_k, static_argnums=1)(jnp.arange(5.), 2)
  _close(v, [4, 3])
  _close(i, [4, 3])
  with pytest.raises(ValueError, match="complex"):
    jnp.top_k(jnp.ones(3, complex), 1)
  with pytest.raises(ValueError, match="mode must be"):
    jnp.top_k(jnp.ones(3), 1, mode="x")


def test_minmax():
  lo, hi = jnp.minmax(jnp.array([[2, 5], [3, -7]]), axis=1, keepdims=True)
  assert lo.tolist() == [[2], [-7]] and hi.tolist() == [[5], [3]]
  lo, hi = jnp.minmax(jnp.array([2., 3]), initial=(0., 10), where=jnp.array([True, False]))
  assert (float(lo), float(hi)) == (0.0, 10.0)
  lo, hi = ember.jit(jnp.minmax)(jnp.arange(6.).reshape(2, 3))
  assert (float(lo), float(hi)) == (0.0, 5.0)
  assert [float(v) for v in jnp.minmax(jnp.zeros((0,)), initial=1.)] == [1.0, 1.0]
  with pytest.raises(ValueError, match="zero-size array"):
    jnp.minmax(jnp.zeros((0,)))
  with pytest.raises(ValueError, match="initial"):
    jnp.minmax(jnp.ones(3), where=jnp.ones(3, bool))


def _pw(x):
  return jnp.piecewise(x, [x < 0, x > 1], [lambda x: -x, 2., lambda x: x * 3])


def test_piecewise():
  x = jnp.arange(-2, 3.)
  _close(_pw(x), [2, 1, 0, 3, 2])                                 # JAX 0.12.1
  _close(ember.jit(_pw)(x), [2, 1, 0, 3, 2])
  _close(ember.grad(lambda x: _pw(x).sum())(x), [-1, -1, 3, 3, 0])
  xi = jnp.arange(-2, 3)
  out = jnp.piecewise(xi, [xi < 0], [lambda x: -x * 1.5])
  assert out.dtype == np.int32 and out.tolist() == [3, 1, 0, 0, 0]
  assert float(jnp.piecewise(jnp.float32(2.), [True], [lambda x, a: x + a], 4.)) == 6.0
  with pytest.raises(ValueError, match="either 1 or 2 functions"):
    jnp.piecewise(jnp.ones(3), [True], [1, 2, 3])


# --- roots, polyfit, poly ------------------------------------------------------------------

def test_roots():
  _close(jnp.roots(jnp.array([1., -3, 2])), [2, 1])
  _close(np.sort_complex(np.asarray(jnp.roots(jnp.array([1, 2, 3])))),
         np.sort_complex(np.roots([1, 2, 3])))
  _close(jnp.roots(jnp.array([0, 0, 1., -3, 2])), [2, 1])
  r = jnp.roots(jnp.array([0, 0, 1., -3, 2]), strip_zeros=False)   # JAX: [1, 2, nan, nan]
  _close(r[:2], [1, 2])
  np.testing.assert_array_equal(np.isnan(r), [0, 0, 1, 1])
  r = ember.jit(lambda p: jnp.roots(p, strip_zeros=False))(jnp.array([0, 1., -3, 2, 0]))
  _close(r[:3], [1, 2, 0])
  np.testing.assert_array_equal(np.isnan(r), [0, 0, 0, 1])
  assert jnp.roots(jnp.array([5.])).shape == (0,)
  assert jnp.roots(jnp.array(5.)).dtype == np.complex64
  with pytest.raises(ValueError, match="rank-1"):
    jnp.roots(jnp.ones((2, 2)))


def test_polyfit_matches_numpy():
  x = np.linspace(0, 1, 10)
  y = x ** 2 + 0.1 * np.sin(7 * x)
  _close(jnp.polyfit(x, y, 2), np.polyfit(x, y, 2), rtol=2e-5, atol=2e-6)
  _close(ember.jit(jnp.polyfit, static_argnames="deg")(x, y, deg=2), np.polyfit(x, y, 2),
         rtol=2e-5, atol=2e-6)
  got, want = jnp.polyfit(x, y, 2, w=x + 1, full=True), np.polyfit(x, y, 2, w=x + 1, full=True)
  for g, w in zip(got[:4], want[:4]):
    _close(g, w, rtol=2e-5, atol=2e-6)
  yy = np.stack([y, 2 * y], 1)
  c, cov = jnp.polyfit(x, yy, 1, cov=True)
  c_np, cov_np = np.polyfit(x, yy, 1, cov=True)
  # the covariance divides small residuals: float32 keeps ~5 digits of it
  _close(c, c_np, rtol=1e-5)
  _close(cov, cov_np, rtol=1e-4, atol=1e-7)
  with pytest.raises(TypeError, match="same length"):
    jnp.polyfit(x, y[:5], 1)
  with pytest.raises(ValueError, match="deg >= 0"):
    jnp.polyfit(x, y, -1)


def test_poly_of_square_matrix():
  m = np.array([[1., 2], [3, 4]])
  _close(jnp.poly(m), np.poly(m), rtol=1e-5)


# --- einsum_path, readers ------------------------------------------------------------------

def test_einsum_path():
  a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
  path, text = jnp.einsum_path("ij,jk,kl->il", a, b, c)
  assert path == [(0, 1), (0, 1)] and "ij,jk,kl->il" in text      # JAX 0.12.1's path
  assert jnp.einsum_path("ij,kl,jk", a, c, b)[0] == [(0, 2), (0, 1)]
  assert jnp.einsum_path("ii->i", np.ones((3, 3)))[0] == [(0,)]
  shapes = [(2, 30), (30, 40), (40, 3), (3, 5)]
  assert jnp.einsum_path("ab,bc,cd,de->ae", *map(np.ones, shapes))[0] == [(0, 1), (0, 2), (0, 1)]
  assert jnp.einsum_path("ij,jk,kl->il", a, b, c, optimize=[(1, 2), (0, 1)])[0] == [(1, 2), (0, 1)]


def test_readers():
  out = jnp.fromstring("1 2 3", sep=" ")
  assert out.dtype == np.float32 and out.tolist() == [1, 2, 3]
  assert jnp.fromstring("1,2", dtype=int, sep=",").tolist() == [1, 2]
  for name in ("fromiter", "fromfile"):
    with pytest.raises(NotImplementedError, match=f"np.{name}"):
      getattr(jnp, name)(iter([1]))


# --- dtypes ----------------------------------------------------------------------------------

# int1, uint1, complex32, bcomplex32 need a newer ml_dtypes than the oldest tested (0.5.0):
# jnp has them when its ml_dtypes has them
_HAS_INT1 = hasattr(jnp, "int1")


def test_narrow_dtype_names():
  assert _HAS_INT1 == hasattr(ml_dtypes, "int1") == hasattr(jnp, "uint1")
  assert hasattr(jnp, "complex32") == hasattr(ml_dtypes, "complex32")
  optional = [getattr(jnp, n) for n in ("int1", "uint1") if hasattr(jnp, n)]
  for t in optional + [jnp.float6_e2m3fn, jnp.float6_e3m2fn]:
    x = jnp.zeros(3, t)
    assert x.dtype == np.dtype(t) and x.astype(jnp.float32).tolist() == [0, 0, 0]
  assert float(jnp.float6_e2m3fn(1.3).astype(jnp.float32)) == 1.25
  with pytest.raises(edtypes.TypePromotionError):
    jnp.promote_types(jnp.int2, jnp.int8)
  for t in [getattr(jnp, n) for n in ("complex32", "bcomplex32") if hasattr(jnp, n)]:
    # JAX names them but makes no arrays of them
    assert np.dtype(t).itemsize == 4
    with pytest.raises(TypeError):
      jnp.zeros(2, t)


def test_itemsize_bits_and_scalar_type_of():
  dts = ["bool", "int4", "float32", "complex64", jnp.bfloat16, jnp.float6_e2m3fn,
         jnp.float8_e5m2, "uint64"]
  assert [edtypes.itemsize_bits(t) for t in dts] == [8, 4, 32, 64, 16, 6, 8, 64]
  if _HAS_INT1:
    assert edtypes.itemsize_bits(jnp.int1) == 1
  with pytest.raises(ValueError, match="cannot be None"):
    edtypes.itemsize_bits(None)
  vals = [3, 3.0, 1j, True, jnp.float32(3), jnp.ones(2, "int8"), np.uint8(3),
          jnp.zeros(2, jnp.bfloat16), jnp.zeros(2, bool), jnp.zeros(2, jnp.int4)]
  assert [edtypes.scalar_type_of(v) for v in vals] == [
      int, float, complex, bool, float, int, int, float, bool, int]

"""ember.scipy.fft (dct family), integrate, ndimage, interpolate and cluster.vq against
SciPy in float64 (eager and under jit), float32 dtypes and tolerances, and the errors JAX
raises."""
import numpy as np
import pytest

import ember
import ember.scipy.cluster.vq as evq
import ember.scipy.fft as ef
import ember.scipy.integrate as eint
import ember.scipy.interpolate as ei
import ember.scipy.ndimage as end

sf = pytest.importorskip("scipy.fft")   # (the oldest-dependencies venv has no SciPy)
nd = pytest.importorskip("scipy.ndimage")
si = pytest.importorskip("scipy.interpolate")
sint = pytest.importorskip("scipy.integrate")
svq = pytest.importorskip("scipy.cluster.vq")

RNG = np.random.default_rng(0)


def close(a, b, tol=1e-12):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape
  np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.nanmax(np.abs(b))))


def test_dct_idct():
  with ember.enable_x64():
    for size, norm in ((1, None), (2, "ortho"), (5, None), (8, "ortho"), (7, "backward")):
      x = RNG.normal(size=(3, size))
      for n in (None, size + 2, max(1, size - 1)):
        close(ef.dct(x, n=n, norm=norm), sf.dct(x, n=n, norm=norm))
        close(ef.idct(x, n=n, norm=norm), sf.idct(x, n=n, norm=norm))
      close(ef.dct(x.T, norm=norm, axis=0), sf.dct(x.T, norm=norm, axis=0))
    z = RNG.normal(size=6) + 1j * RNG.normal(size=6)
    close(ef.dct(z), sf.dct(z))
    close(ember.jit(ef.idct)(x), sf.idct(x))
  x32 = RNG.normal(size=7).astype(np.float32)
  assert ef.dct(x32).dtype == np.float32 and ef.dct(np.arange(4)).dtype == np.float32
  close(ember.jit(ef.dct)(x32), sf.dct(x32.astype(np.float64)), 1e-5)


def test_dctn_idctn():
  x = RNG.normal(size=(4, 5, 3))
  with ember.enable_x64():
    for norm in (None, "ortho"):
      for kw in ({}, dict(axes=(0, 2)), dict(s=(6, 2)), dict(axes=[1], s=[7])):
        close(ef.dctn(x, norm=norm, **kw), sf.dctn(x, norm=norm, **kw))
        close(ef.idctn(x, norm=norm, **kw), sf.idctn(x, norm=norm, **kw))
    close(ember.jit(ef.dctn)(x), sf.dctn(x))


def test_dct_errors():
  with pytest.raises(NotImplementedError, match="type 2"):
    ef.dct(np.ones(4), type=3)
  with pytest.raises(ValueError, match="norm"):
    ef.idctn(np.ones(4), norm="forward")
  with pytest.raises(TypeError, match="dct"):
    ef.dct([1.0, 2.0])


def test_trapezoid():
  y, x = RNG.normal(size=(3, 7)), np.sort(RNG.normal(size=7))
  with ember.enable_x64():
    close(eint.trapezoid(y, x), sint.trapezoid(y, x))
    close(eint.trapezoid(y, dx=0.3, axis=0), sint.trapezoid(y, dx=0.3, axis=0))


MODES = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
         "mirror": "mirror", "reflect": "reflect"}


def test_map_coordinates():
  img = RNG.normal(size=(5, 6))
  coords = [RNG.uniform(-2, 7, size=(4, 3)), RNG.uniform(-2, 8, size=(4, 3))]
  with ember.enable_x64():
    for order in (0, 1):
      for mode, scipy_mode in MODES.items():
        close(end.map_coordinates(img, coords, order, mode=mode, cval=1.5),
              nd.map_coordinates(img, np.array(coords), order=order, mode=scipy_mode,
                                 cval=1.5))
    jitted = ember.jit(lambda im, c: end.map_coordinates(im, c, 1, mode="reflect"))
    close(jitted(img, coords), nd.map_coordinates(img, np.array(coords), order=1,
                                                  mode="reflect"))
  ints = np.arange(12).reshape(3, 4)
  out = end.map_coordinates(ints, [np.array([0.5, 1.2]), np.array([0.5, 2.5])], 1)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(out, [3, 7])   # rounded half away from zero, as JAX
  with pytest.raises(NotImplementedError, match="order"):
    end.map_coordinates(img, coords, 3)
  with pytest.raises(NotImplementedError, match="mode"):
    end.map_coordinates(img, coords, 1, mode="grid-wrap")
  with pytest.raises(ValueError, match="length input.ndim"):
    end.map_coordinates(img, coords[:1], 1)


def test_vq():
  obs, book = RNG.normal(size=(10, 3)), RNG.normal(size=(4, 3))
  with ember.enable_x64():
    for o, b in ((obs, book), (obs[:, 0], book[:, 0])):
      code, dist = evq.vq(o, b)
      ref_code, ref_dist = svq.vq(o, b)
      np.testing.assert_array_equal(code, ref_code)
      close(dist, ref_dist)
  with pytest.raises(ValueError, match="same rank"):
    evq.vq(obs, book[0])


def test_regular_grid_interpolator():
  grid = (np.sort(RNG.uniform(0, 1, 5)), np.sort(RNG.uniform(0, 2, 6)))
  values = RNG.normal(size=(5, 6, 2))
  pts = np.stack([RNG.uniform(-0.1, 1.1, 20), RNG.uniform(-0.1, 2.1, 20)], -1)
  with ember.enable_x64():
    for method in ("linear", "nearest"):
      for fill in (np.nan, None, 3.0):
        ours = ei.RegularGridInterpolator(grid, values, method=method, fill_value=fill)
        ref = si.RegularGridInterpolator(grid, values, method=method, fill_value=fill,
                                         bounds_error=False)
        close(ours(pts), ref(pts))
    interp = ei.RegularGridInterpolator(grid, values[..., 0], fill_value=None)
    ref = si.RegularGridInterpolator(grid, values[..., 0], fill_value=None, bounds_error=False)
    close(ember.jit(lambda f, p: f(p))(interp, pts), ref(pts))   # a pytree argument
    close(interp((pts[:, 0], pts[:, 1])), ref(pts))
  with pytest.raises(NotImplementedError, match="bounds_error"):
    ei.RegularGridInterpolator(grid, values, bounds_error=True)
  with pytest.raises(ValueError, match="method"):
    ei.RegularGridInterpolator(grid, values, method="cubic")
  with pytest.raises(ValueError, match="dimension"):
    ei.RegularGridInterpolator(grid, values)(np.ones((3, 3)))

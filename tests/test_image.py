"""ember.image (jax.image) against values real JAX 0.12.1 produced (tests/data/
jax_image_resize.npz, written by make_jax_image.py), float32 and float64, eager and jit;
ResizeMethod names, and the errors JAX raises."""
import os
import sys

import numpy as np
import pytest

import ember
import ember.image as image

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from jax_image_cases import RESIZE, SCALE_TRANSLATE, image as make_image  # noqa: E402

EXPECTED = np.load(os.path.join(os.path.dirname(__file__), "data", "jax_image_resize.npz"))
IMG = make_image()
TOL = {"float32": 2e-6, "float64": 1e-12}
STEP = {"float32": 1, "float64": 3}   # float64 on every third case: each case is a compile


def check(ours, key, dt):
  ref = EXPECTED[key]
  assert ours.shape == ref.shape and ours.dtype == ref.dtype
  np.testing.assert_allclose(ours, ref, rtol=TOL[dt], atol=TOL[dt] * 4)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_resize_matches_jax(dt):
  with ember.enable_x64(dt == "float64"):
    x = IMG.astype(dt)
    for i, (shape, method, aa) in list(enumerate(RESIZE))[::STEP[dt]]:
      check(image.resize(x, shape, method, antialias=aa), f"resize_{i}_{dt}", dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_scale_and_translate_matches_jax(dt):
  with ember.enable_x64(dt == "float64"):
    x = IMG.astype(dt)
    for i, (shape, dims, s, t, method, aa) in list(enumerate(SCALE_TRANSLATE))[::STEP[dt]]:
      out = image.scale_and_translate(x, shape, dims, np.asarray(s, dt), np.asarray(t, dt),
                                      method, antialias=aa)
      check(out, f"st_{i}_{dt}", dt)


def test_under_jit():
  x = IMG.astype(np.float32)
  shape, method, aa = RESIZE[4]   # lanczos3 with antialias
  check(ember.jit(lambda x: image.resize(x, shape, method, antialias=aa))(x),
        "resize_4_float32", "float32")
  shape, dims, s, t, method, aa = SCALE_TRANSLATE[0]
  fn = ember.jit(lambda x, s, t: image.scale_and_translate(x, shape, dims, s, t, method))
  check(fn(x, np.float32(s), np.float32(t)), "st_0_float32", "float32")
  g = ember.grad(lambda x: image.resize(x, (2, 9, 4, 3), "linear").sum())(x)
  assert g.shape == x.shape and np.isfinite(np.asarray(g)).all()


def test_resize_method_and_errors():
  assert image.ResizeMethod.from_string("bilinear") is image.ResizeMethod.LINEAR
  assert image.ResizeMethod.from_string("tricubic") is image.ResizeMethod.CUBIC
  out = image.resize(IMG.astype(np.float32), (2, 3, 8, 3), image.ResizeMethod.LINEAR)
  check(out, "resize_14_float32", "float32")
  assert image.resize(np.arange(6).reshape(2, 3), (4, 3), "nearest").dtype == np.int32
  with pytest.raises(ValueError, match="Unknown resize method"):
    image.resize(IMG, (2, 3, 3, 3), "bogus")
  with pytest.raises(ValueError, match="shape must have length"):
    image.resize(IMG.astype(np.float32), (3, 3), "linear")
  with pytest.raises(ValueError, match="Nearest neighbor"):
    image.scale_and_translate(IMG.astype(np.float32), (2, 3, 3, 3), (1,), np.ones(1),
                              np.zeros(1), "nearest")


def test_jax_imports_of_the_new_modules_through_compat(tmp_path):
  """`python -m ember` resolves jax.image and the jax.scipy submodules this family adds."""
  import subprocess
  import textwrap
  repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  script = tmp_path / "prog.py"
  script.write_text(textwrap.dedent("""
      import jax, jax.numpy as jnp
      import jax.image, jax.scipy.signal, jax.scipy.fft, jax.scipy.integrate
      import jax.scipy.interpolate, jax.scipy.ndimage, jax.scipy.cluster.vq
      import jax.scipy.spatial.transform, jax.scipy.optimize, jax.scipy.sparse.linalg
      from jax.scipy.stats import gaussian_kde
      import ember
      print(jax.image is ember.image, jax.scipy.signal is ember.scipy.signal,
            jax.scipy.sparse.linalg.cg is ember.scipy.sparse.linalg.cg,
            jax.scipy.fft.dct(jnp.ones(2)).tolist())
      """))
  env = dict(os.environ, PYTHONPATH=repo)
  env.pop("EMBER_AS_JAX", None)
  r = subprocess.run([sys.executable, "-m", "ember", str(script)], capture_output=True,
                     text=True, env=env, cwd=tmp_path, timeout=300)
  assert r.returncode == 0, r.stderr[-3000:]
  assert r.stdout.split() == ["True", "True", "True", "[4.0,", "0.0]"]

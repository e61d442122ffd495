"""Writes jax_image_resize.npz: real JAX's jax.image.resize / scale_and_translate outputs for
jax_image_cases.py in float32 and float64. Run with JAX 0.12.1:
  /work/jaxvenv/bin/python tests/data/make_jax_image.py"""
import os

import jax
import jax.numpy as jnp
import numpy as np

from jax_image_cases import RESIZE, SCALE_TRANSLATE, image

jax.config.update("jax_enable_x64", True)
img = image()
out = {}
for i, (shape, method, aa) in enumerate(RESIZE):
  for dt in ("float32", "float64"):
    out[f"resize_{i}_{dt}"] = np.asarray(
        jax.image.resize(jnp.asarray(img, dt), shape, method, antialias=aa))
for i, (shape, dims, s, t, method, aa) in enumerate(SCALE_TRANSLATE):
  for dt in ("float32", "float64"):
    out[f"st_{i}_{dt}"] = np.asarray(jax.image.scale_and_translate(
        jnp.asarray(img, dt), shape, dims, jnp.asarray(s, dt), jnp.asarray(t, dt), method,
        antialias=aa))
np.savez_compressed(os.path.join(os.path.dirname(__file__), "jax_image_resize.npz"), **out)
print(len(out), "arrays from JAX", jax.__version__)

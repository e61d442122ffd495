"""jax.image cases shared by make_jax_image.py (real JAX 0.12.1) and tests/test_image.py
(ember): the input image and the resize / scale_and_translate arguments."""
import numpy as np

METHODS = ["nearest", "linear", "lanczos3", "lanczos5", "cubic", "cubic-pytorch", "area"]
# (output shape, method, antialias)
RESIZE = ([((2, 9, 4, 3), m, aa) for m in METHODS for aa in (True, False)]
          + [((2, 3, 8, 3), "linear", True), ((2, 3, 8, 3), "lanczos3", True),
             ((2, 4, 2, 3), "cubic-pytorch", False), ((2, 4, 2, 3), "cubic", True),
             ((2, 11, 5, 3), "nearest", True)])
# (output shape, spatial dims, scale, translation, method, antialias)
SCALE_TRANSLATE = ([((2, 7, 6, 3), (1, 2), [1.3, 0.7], [0.4, -1.2], m, aa)
                    for m in ["linear", "lanczos3", "cubic", "area"] for aa in (True, False)]
                   + [((2, 7, 6, 3), (1, 2), [1.3, 0.7], [0.4, -1.2], "cubic-pytorch", False)])


def image():
  return np.random.default_rng(42).normal(size=(2, 6, 5, 3))

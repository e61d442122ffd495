"""ember.image (jax.image): image resizing."""
from ember._src.library.image import ResizeMethod, resize, scale_and_translate  # noqa: F401

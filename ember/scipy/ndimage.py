"""ember.scipy.ndimage (jax.scipy.ndimage)."""
from ember._src.library.scipy.ndimage import map_coordinates  # noqa: F401

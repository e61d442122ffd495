"""ember.scipy.interpolate (jax.scipy.interpolate)."""
from ember._src.library.scipy.interpolate import RegularGridInterpolator  # noqa: F401

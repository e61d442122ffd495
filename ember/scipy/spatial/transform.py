"""ember.scipy.spatial.transform (jax.scipy.spatial.transform)."""
from ember._src.library.scipy.spatial_transform import Rotation, Slerp  # noqa: F401

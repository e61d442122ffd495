"""ember.scipy.spatial (jax.scipy.spatial): transform."""
from ember.scipy.spatial import transform  # noqa: F401

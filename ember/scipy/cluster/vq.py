"""ember.scipy.cluster.vq (jax.scipy.cluster.vq)."""
from ember._src.library.scipy.cluster import vq  # noqa: F401

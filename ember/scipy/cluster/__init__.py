"""ember.scipy.cluster (jax.scipy.cluster): vq."""
from ember.scipy.cluster import vq  # noqa: F401

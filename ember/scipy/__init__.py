"""ember.scipy (jax.scipy): special, stats (norm) and linalg."""
from ember.scipy import linalg, special, stats  # noqa: F401

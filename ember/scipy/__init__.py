"""ember.scipy (jax.scipy): special and stats (norm)."""
from ember.scipy import special, stats  # noqa: F401

"""ember.scipy (jax.scipy)."""
from ember.scipy import special  # noqa: F401

"""ember.extend: interfaces for libraries built on ember (jax.extend)."""
from ember.extend import core  # noqa: F401

"""ember.experimental: JAX's `jax.experimental` names that libraries import."""
from ember._src.config import disable_x64, enable_x64  # noqa: F401

"""ember.lax: the primitive operations (jax.lax)."""
from ember._src.lax_api import *  # noqa: F401,F403
from ember.lax import linalg  # noqa: E402,F401  (jax.lax.linalg)

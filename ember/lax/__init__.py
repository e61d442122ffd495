"""ember.lax: the primitive operations (jax.lax)."""
from ember._src.lax_api import *  # noqa: F401,F403

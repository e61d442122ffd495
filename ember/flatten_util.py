"""ember.flatten_util (jax.flatten_util)."""
from ember._src.library.flatten_util import ravel_pytree  # noqa: F401

"""ember.experimental.sparse.random: random_bcoo (jax.experimental.sparse.random)."""
from ember._src.library.sparse.api import random_bcoo  # noqa: F401

"""ember.experimental: JAX's `jax.experimental` names that libraries import."""
from ember._src.primitives.callbacks import io_callback  # noqa: F401
from ember.experimental import checkify  # noqa: F401,E402

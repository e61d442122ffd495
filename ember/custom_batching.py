"""ember.custom_batching (jax.custom_batching): functions with vmap rules of their own."""
from ember._src.transforms.custom_batching import custom_vmap  # noqa: F401
from ember._src.library.custom_batching import sequential_vmap  # noqa: F401

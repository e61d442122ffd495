"""ember.random: JAX's PRNG API (jax.random), bit for bit JAX 0.12's default threefry2x32
(partitionable) numbers. See ember._src.prng for the design and its one deviation: typed
keys are pytrees wrapping their uint32 data rather than arrays with an extended dtype."""
from ember._src.prng import (  # noqa: F401
    PRNGKey, PRNGKeyArray, bits, fold_in, key, key_data, key_dtype, key_impl, normal, split,
    uniform, wrap_key_data)

"""jax._src.state: only its `types` module has a stand-in (flax.nnx imports AbstractRef)."""

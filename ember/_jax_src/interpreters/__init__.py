"""jax._src.interpreters: only its `pxla` module has a stand-in (flax's fp8_ops)."""

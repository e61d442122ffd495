"""`jax.lib`: in JAX 0.12 it holds only `__version__`, jaxlib's version (libraries compare it
to pick code paths). ember has no jaxlib: it reports the JAX release whose API it follows, as
`jax.__version__` does under the alias (ember.compat)."""
from ember._src.base.version import JAX_API_VERSION as __version__  # noqa: F401

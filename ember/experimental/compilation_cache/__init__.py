"""ember.experimental.compilation_cache (jax.experimental.compilation_cache): the persistent
compilation cache's switches, in its `compilation_cache` module."""
from ember.experimental.compilation_cache import compilation_cache  # noqa: F401

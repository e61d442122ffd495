"""ember.memory (jax.memory): the memory spaces values may live in (`Space`)."""
from ember._src.core.avals import MemorySpace as Space  # noqa: F401

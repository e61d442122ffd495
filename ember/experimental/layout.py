"""ember.experimental.layout (jax.experimental.layout): an array's Format (its Layout and
its sharding), as `Array.format` reports it."""
from ember._src.core.array import Format, Layout  # noqa: F401

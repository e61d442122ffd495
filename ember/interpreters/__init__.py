"""ember.interpreters: the transformations' rule registries, for primitives defined outside
ember (jax.interpreters)."""
from ember.interpreters import ad, batching, mlir, partial_eval  # noqa: F401

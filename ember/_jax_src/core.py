"""jax._src.core's names that libraries use (flax's fp8_ops: ShapedArray): ember's core."""
from ember._src.core import ShapedArray  # noqa: F401

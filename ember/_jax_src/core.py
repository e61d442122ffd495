"""jax._src.core's names that libraries use (flax's fp8_ops: ShapedArray, physical_aval):
ember's core."""
from ember._src.core import ShapedArray, physical_aval  # noqa: F401

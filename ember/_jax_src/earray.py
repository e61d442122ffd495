"""jax._src.earray's name that libraries use (flax's fp8_ops: EArray, the arrays of its fp8
meta dtype): ember's arrays of a user's extended dtype."""
from ember._src.core.earray import EArray  # noqa: F401

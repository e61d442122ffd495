"""ember.ops (jax.ops): segment reductions."""
from ember._src.library.ops import (  # noqa: F401
    segment_max, segment_min, segment_prod, segment_sum)

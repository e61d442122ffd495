"""jax._src.traceback_util's names that libraries use (flax: api_boundary, register_exclusion,
and _exclude_paths, the registry it edits directly): ember's traceback filtering."""
from ember._src.traceback_util import _exclude_paths, api_boundary, register_exclusion  # noqa: F401

"""jax._src.traceback_util's names that libraries use (flax: api_boundary, register_exclusion,
and _exclude_paths, the registry it edits directly; equinox: include_frame, to keep only the
user's frames in error_if's stack): ember's traceback filtering."""
from ember._src.base.traceback_util import (  # noqa: F401
    _exclude_paths, api_boundary, include_frame, register_exclusion)

"""ember.extend.source_info_util (jax.extend.source_info_util): where traced operations come
from. `register_exclusion(path)`: frames of files under `path` (a library's own) are skipped
when finding the user's line that a jaxpr equation and its `loc(...)` name."""
from ember._src.core import SourceInfo  # noqa: F401
from ember._src.core import current_source_info as current  # noqa: F401
from ember._src.base.traceback_util import (  # noqa: F401
    register_source_info_exclusion as register_exclusion)

"""ember.debug: printing and callbacks from inside compiled code (jax.debug)."""
from ember._src.primitives.callbacks import debug_callback as callback  # noqa: F401
from ember._src.primitives.callbacks import debug_print as print  # noqa: F401,A001
from ember._src.library.debugger import breakpoint  # noqa: F401,A001
from ember._src.primitives.callbacks import debug_log as log  # noqa: F401
from ember._src.primitives.callbacks import DebugEffect, OrderedDebugEffect  # noqa: F401
from ember._src.library.sharding_view import (  # noqa: F401
    visualize_array_sharding, visualize_sharding)

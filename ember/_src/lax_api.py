"""Every `ember.lax` function, gathered from the primitive families (ember.lax re-exports
this module; ember.numpy's implementation imports it as `lax`)."""
from ember._src.primitives.elementwise import *  # noqa: F401,F403
from ember._src.primitives.structural import *  # noqa: F401,F403
from ember._src.primitives.reductions import *  # noqa: F401,F403
from ember._src.primitives.linalg import *  # noqa: F401,F403
from ember._src.primitives.sorting import *  # noqa: F401,F403
from ember._src.primitives.indexing import *  # noqa: F401,F403
from ember._src.primitives.control import *  # noqa: F401,F403

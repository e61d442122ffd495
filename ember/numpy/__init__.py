"""ember.numpy: the NumPy API on ember arrays (jax.numpy)."""
from ember._src.numpy.scalar_types import *  # noqa: F401,F403
from ember._src.numpy.ufuncs import *  # noqa: F401,F403
from ember._src.numpy.creation import *  # noqa: F401,F403
from ember._src.numpy.shape import *  # noqa: F401,F403
from ember._src.numpy.reductions import *  # noqa: F401,F403
from ember._src.numpy.linalg import *  # noqa: F401,F403
from ember._src.numpy.sorting import *  # noqa: F401,F403
from ember._src.numpy.logic import *  # noqa: F401,F403
from ember._src.numpy.comparison import *  # noqa: F401,F403
from ember._src.numpy.indexing import *  # noqa: F401,F403
from ember._src.numpy.misc import *  # noqa: F401,F403
from ember._src.numpy.vectorize import *  # noqa: F401,F403
from ember._src.numpy.io import *  # noqa: F401,F403
from ember.numpy import linalg  # noqa: F401,E402
from ember.numpy import fft  # noqa: F401,E402
from ember._src.numpy.array_api import *  # noqa: F401,F403,E402
from ember._src.numpy import array_api as _array_api  # noqa: E402
import sys as _sys  # noqa: E402

_array_api.register_namespace(_sys.modules[__name__])   # what x.__array_namespace__() returns
del _sys

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
from ember.numpy import linalg  # noqa: F401,E402
from ember.numpy import fft  # noqa: F401,E402

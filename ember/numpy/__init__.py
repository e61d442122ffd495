"""ember.numpy: the NumPy API on ember arrays (jax.numpy)."""
from ember._src.library.numpy.scalar_types import *  # noqa: F401,F403
from ember._src.library.numpy.ufuncs import *  # noqa: F401,F403
from ember._src.library.numpy.float_fields import *  # noqa: F401,F403
from ember._src.library.numpy.creation import *  # noqa: F401,F403
from ember._src.library.numpy.shape import *  # noqa: F401,F403
from ember._src.library.numpy.reductions import *  # noqa: F401,F403
from ember._src.library.numpy.products import *  # noqa: F401,F403
from ember._src.library.numpy.einsum import *  # noqa: F401,F403
from ember._src.library.numpy.sorting import *  # noqa: F401,F403
from ember._src.library.numpy.logic import *  # noqa: F401,F403
from ember._src.library.numpy.comparison import *  # noqa: F401,F403
from ember._src.library.numpy.indexing import *  # noqa: F401,F403
from ember._src.library.numpy.differences import *  # noqa: F401,F403
from ember._src.library.numpy.signal import *  # noqa: F401,F403
from ember._src.library.numpy.statistics import *  # noqa: F401,F403
from ember._src.library.numpy.set_ops import *  # noqa: F401,F403
from ember._src.library.numpy.polynomial import *  # noqa: F401,F403
from ember._src.library.numpy.bit_packing import *  # noqa: F401,F403
from ember._src.library.numpy.index_tricks import *  # noqa: F401,F403
from ember._src.library.numpy.vectorize import *  # noqa: F401,F403
from ember._src.library.numpy.io import *  # noqa: F401,F403
from ember._src.library.numpy.polynomial_fit import *  # noqa: F401,F403
from ember._src.library.numpy.ufunc_class import *  # noqa: F401,F403
from ember.numpy import linalg  # noqa: F401,E402
from ember.numpy import fft  # noqa: F401,E402
from ember._src.library.numpy.array_api import *  # noqa: F401,F403,E402
from ember._src.library.numpy import array_api as _array_api  # noqa: E402
import sys as _sys  # noqa: E402

_array_api.register_namespace(_sys.modules[__name__])   # what x.__array_namespace__() returns
del _sys

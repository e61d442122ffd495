"""The jax.numpy namespace for library code below the public package: ember/_src may not
import `ember.numpy` (tests/test_layers.py), so the SciPy submodules built on the NumPy API
(signal, fft, interpolate, ndimage, optimize, sparse, spatial, stats.gaussian_kde) and
jax.image take `jnp` from here: the same modules ember.numpy re-exports, plus `fft` and
`linalg` as namespaces."""
import types

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
from ember._src.library.numpy import fft as _fft
from ember._src.library.numpy import linalg_decompositions, linalg_norms, linalg_solvers

fft = _fft
linalg = types.SimpleNamespace(
    **{n: getattr(m, n) for m in (linalg_decompositions, linalg_norms, linalg_solvers)
       for n in getattr(m, "__all__", dir(m)) if not n.startswith("_")})

"""Every `ember.lax` function, gathered from the primitive families (ember.lax re-exports
this module; ember.numpy's implementation imports it as `lax`)."""
import importlib

from ember._src import core
from ember._src.primitives.elementwise import *  # noqa: F401,F403
from ember._src.primitives.structural import *  # noqa: F401,F403
from ember._src.primitives.reductions import *  # noqa: F401,F403
from ember._src.primitives.windows import *  # noqa: F401,F403
from ember._src.primitives.linalg import *  # noqa: F401,F403
from ember._src.primitives.convolution import *  # noqa: F401,F403
from ember._src.primitives.sorting import *  # noqa: F401,F403
from ember._src.primitives.slicing import *  # noqa: F401,F403
from ember._src.primitives.indexing import *  # noqa: F401,F403
from ember._src.primitives.control import *  # noqa: F401,F403
from ember._src.primitives.parallel import *  # noqa: F401,F403
from ember._src.primitives.fft import FftType, fft_p  # noqa: F401
from ember._src.primitives import fft as _fft
from ember._src.primitives.prng import rng_bit_generator, rng_bit_generator_p  # noqa: F401
from ember._src.primitives.prng import rng_uniform, rng_uniform_p  # noqa: F401


def _export_primitives():
  """`jax.lax` exposes the primitive objects (`lax.add_p`, `lax.reduce_sum_p`, ...): copy
  every Primitive found in the family modules under its variable name."""
  names = {}
  for fam in ("elementwise", "structural", "reductions", "windows", "linalg", "convolution",
              "sorting", "slicing", "indexing", "control", "parallel", "fft"):
    mod = importlib.import_module(f"ember._src.primitives.{fam}")
    names.update({k: v for k, v in vars(mod).items()
                  if k.endswith("_p") and not k.startswith("_") and isinstance(v, core.Primitive)})
  return names


globals().update(_export_primitives())
del _export_primitives

from ember._src.library.numpy.util import broadcast_shapes  # noqa: E402,F401 - lax.broadcast_shapes
from ember._src.base import dtypes
from ember._src.driver.jit import jit


def dtype(x):
  """The canonical dtype of a value or dtype-like (`jax.lax.dtype`): Python scalars take
  the default dtypes, 64-bit types become 32-bit unless x64 is enabled."""
  return dtypes.dtype(x, canonicalize=True)


# lax.fft is jitted in JAX (static fft_type and fft_lengths): its jaxprs show `jit[name=fft]`
fft = jit(_fft.fft, static_argnums=(1, 2))

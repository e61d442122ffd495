"""ember.numpy: the NumPy API on ember arrays (jax.numpy)."""
from ember._src.numpy.ufuncs import *  # noqa: F401,F403

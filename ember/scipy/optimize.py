"""ember.scipy.optimize (jax.scipy.optimize)."""
from ember._src.library.scipy.optimize import OptimizeResults, minimize  # noqa: F401

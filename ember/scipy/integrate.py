"""ember.scipy.integrate (jax.scipy.integrate)."""
from ember._src.library.scipy.integrate import trapezoid  # noqa: F401

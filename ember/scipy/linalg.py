"""ember.scipy.linalg (jax.scipy.linalg)."""
from ember._src.scipy_linalg import (  # noqa: F401
    cho_factor, cho_solve, cholesky, lu, lu_factor, lu_solve, solve_triangular)

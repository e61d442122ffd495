"""ember.experimental.sparse.util: the sparse error and warning classes (jax...sparse.util)."""
from ember._src.library.sparse.util import (  # noqa: F401
    CuSparseEfficiencyWarning, SparseEfficiencyError, SparseEfficiencyWarning)

"""ember.experimental.sparse.linalg: lobpcg_standard, spsolve (jax.experimental.sparse.linalg)."""
from ember._src.library.sparse.linalg import lobpcg_standard, spsolve  # noqa: F401

"""ember.scipy.sparse.linalg (jax.scipy.sparse.linalg)."""
from ember._src.library.scipy.sparse_linalg import bicgstab, cg, gmres  # noqa: F401

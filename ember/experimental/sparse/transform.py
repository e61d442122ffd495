"""ember.experimental.sparse.transform: sparsify (jax.experimental.sparse.transform)."""
from ember._src.library.sparse.transform import SparseTracer, sparsify  # noqa: F401

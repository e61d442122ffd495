"""ember.experimental.sparse.coo: the 2-D COO matrix (jax.experimental.sparse.coo)."""
from ember._src.library.sparse.coo_csr import (  # noqa: F401
    COO, coo_fromdense, coo_fromdense_p, coo_matmat, coo_matmat_p, coo_matvec, coo_matvec_p,
    coo_todense, coo_todense_p)

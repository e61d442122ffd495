"""ember.experimental.sparse.csr: the 2-D CSR and CSC matrices (jax.experimental.sparse.csr)."""
from ember._src.library.sparse.coo_csr import (  # noqa: F401
    CSC, CSR, csr_fromdense, csr_fromdense_p, csr_matmat, csr_matmat_p, csr_matvec,
    csr_matvec_p, csr_todense, csr_todense_p)

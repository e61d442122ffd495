"""ember.experimental.sparse: sparse arrays (jax.experimental.sparse): BCOO and BCSR with
their bcoo_*/bcsr_* operations and primitives, the 2-D COO/CSR/CSC formats, sparsify,
sparse-aware grad/jacobians, todense/empty/eye/random_bcoo, and sparse.linalg."""
from ember._src.library.sparse.util import (  # noqa: F401
    CuSparseEfficiencyWarning, SparseEfficiencyError, SparseEfficiencyWarning)
from ember._src.library.sparse.base import JAXSparse  # noqa: F401
from ember.experimental.sparse.bcoo import *  # noqa: F401,F403 (BCOO and its bcoo_*)
from ember._src.library.sparse.transform import SparseTracer, sparsify  # noqa: F401
from ember._src.library.sparse.api import (  # noqa: F401
    empty, eye, random_bcoo, todense, todense_p)
from ember._src.library.sparse.coo_csr import (  # noqa: F401
    COO, CSC, CSR, coo_fromdense, coo_fromdense_p, coo_matmat, coo_matmat_p, coo_matvec,
    coo_matvec_p, coo_todense, coo_todense_p, csr_fromdense, csr_fromdense_p, csr_matmat,
    csr_matmat_p, csr_matvec, csr_matvec_p, csr_todense, csr_todense_p)
from ember._src.library.sparse.bcsr import (  # noqa: F401
    BCSR, bcsr_broadcast_in_dim, bcsr_concatenate, bcsr_dot_general, bcsr_dot_general_p,
    bcsr_extract, bcsr_extract_p, bcsr_fromdense, bcsr_fromdense_p, bcsr_sum_duplicates,
    bcsr_todense, bcsr_todense_p)
from ember._src.library.sparse.ad import (  # noqa: F401
    grad, jacfwd, jacobian, jacrev, value_and_grad)
from ember.experimental.sparse import (  # noqa: F401,E402 (JAX's submodules)
    ad, api, bcoo, bcsr, coo, csr, linalg, random, transform, util)

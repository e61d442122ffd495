"""ember.lax.linalg (jax.lax.linalg): matrix decompositions and triangular solves."""
from ember._src.library.lax.linalg import cholesky, eigh, symmetrize  # noqa: F401
from ember._src.primitives.decompositions import (  # noqa: F401
    cholesky_p, eig, eig_p, eigh_p, householder_product, householder_product_p, lu, lu_p,
    lu_pivots_to_permutation, lu_pivots_to_permutation_p, qr, qr_p, svd, svd_p,
    triangular_solve, triangular_solve_p)

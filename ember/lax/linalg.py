"""ember.lax.linalg (jax.lax.linalg): matrix decompositions and triangular solves."""
from ember._src.primitives.decompositions import (  # noqa: F401
    cholesky, cholesky_p, eig, eig_p, eigh, eigh_p, householder_product, householder_product_p, lu,
    lu_p, lu_pivots_to_permutation, lu_pivots_to_permutation_p, qr, qr_p, svd, svd_p,
    symmetrize, triangular_solve, triangular_solve_p)

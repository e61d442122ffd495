"""ember.lax.linalg (jax.lax.linalg): matrix decompositions and triangular solves."""
from ember._src.library.lax.linalg import (  # noqa: F401
    cholesky, eigh, symmetric_product, symmetrize)
from ember._src.library.lax.qdwh import qdwh  # noqa: F401
from ember._src.primitives.decompositions import (  # noqa: F401
    EigImplementation, EighImplementation, SvdAlgorithm, cholesky_p, eig, eig_p, eigh_p,
    householder_product, householder_product_p, lu, lu_p, lu_pivots_to_permutation,
    lu_pivots_to_permutation_p, qr, qr_p, svd, svd_p, triangular_solve, triangular_solve_p)
from ember._src.primitives.linalg_forms import (  # noqa: F401
    cholesky_update, cholesky_update_p, hessenberg, hessenberg_p, ormqr, ormqr_p, schur,
    schur_p, symmetric_product_p, tridiagonal, tridiagonal_p, tridiagonal_solve,
    tridiagonal_solve_p)

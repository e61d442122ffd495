"""ember.scipy.linalg (jax.scipy.linalg)."""
from ember._src.library.scipy.linalg import (  # noqa: F401
    block_diag, cho_factor, cho_solve, cholesky, det, eigh, expm, expm_frechet, inv, lu, lu_factor,
    lu_solve, polar, qr, solve, solve_triangular, svd)
from ember._src.library.scipy.special_matrices import (  # noqa: F401
    circulant, companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard,
    hankel, helmert, hilbert, invhilbert, invpascal, leslie, pascal, toeplitz)
from ember._src.library.scipy.linalg_schur import (  # noqa: F401
    eigh_tridiagonal, funm, hessenberg, qr_multiply, rsf2csf, schur, solve_sylvester, sqrtm)

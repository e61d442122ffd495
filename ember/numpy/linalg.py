"""ember.numpy.linalg (jax.numpy.linalg). matmul, tensordot, vecdot, outer and cross are the
ember.numpy functions (their signatures accept the array-API calls); trace and diagonal are
the linalg versions (last two axes): ember.numpy's (axes 0 and 1 by default) are
reductions.py's."""
from ember._src.library.numpy.linalg_decompositions import (  # noqa: F401
    EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, eig, eigh, eigvals,
    eigvalsh, matrix_transpose, qr, svd, svdvals)
from ember._src.library.numpy.linalg_norms import (  # noqa: F401
    diagonal, matrix_norm, norm, trace, vector_norm)
from ember._src.library.numpy.linalg_solvers import (  # noqa: F401
    cond, det, inv, lstsq, matrix_power, matrix_rank, multi_dot, pinv, slogdet, solve,
    tensorinv, tensorsolve)
from ember._src.library.numpy.products import (  # noqa: F401
    cross, matmul, outer, tensordot, vecdot)

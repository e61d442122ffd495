"""ember.experimental.sparse.ad: sparse-aware differentiation (jax.experimental.sparse.ad)."""
from ember._src.library.sparse.ad import (  # noqa: F401
    grad, jacfwd, jacobian, jacrev, value_and_grad)

"""ember.experimental.sparse.bcsr: BCSR and its operations (jax.experimental.sparse.bcsr)."""
from ember._src.library.sparse.bcsr import (  # noqa: F401
    BCSR, bcsr_broadcast_in_dim, bcsr_concatenate, bcsr_dot_general, bcsr_dot_general_p,
    bcsr_extract, bcsr_extract_p, bcsr_fromdense, bcsr_fromdense_p, bcsr_sum_duplicates,
    bcsr_todense, bcsr_todense_p)

"""ember.experimental.sparse.bcoo: BCOO and its operations (jax.experimental.sparse.bcoo)."""
from ember._src.library.sparse.bcoo import (  # noqa: F401
    BCOO, bcoo_dot_general, bcoo_dot_general_p, bcoo_dot_general_sampled,
    bcoo_dot_general_sampled_p, bcoo_extract, bcoo_extract_p, bcoo_fromdense,
    bcoo_fromdense_p, bcoo_multiply_dense, bcoo_multiply_sparse, bcoo_reduce_sum,
    bcoo_reshape, bcoo_sort_indices, bcoo_sort_indices_p, bcoo_spdot_general_p,
    bcoo_sum_duplicates, bcoo_sum_duplicates_p, bcoo_todense, bcoo_todense_p,
    bcoo_transpose, bcoo_transpose_p, bcoo_update_layout)
from ember._src.library.sparse.ops import (  # noqa: F401
    bcoo_broadcast_in_dim, bcoo_concatenate, bcoo_conv_general_dilated, bcoo_dynamic_slice,
    bcoo_gather, bcoo_rev, bcoo_slice, bcoo_squeeze)

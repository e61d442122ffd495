"""ember.extend.core.primitives (jax.extend.core.primitives): the primitives of ember's
operations, for interpreters of jaxprs that dispatch on `eqn.primitive`.

JAX's that ember has no primitive of (a missing operation, or one built from others):
acospi_p asinpi_p atanpi_p atan2pi_p cospi_p sinpi_p tanpi_p exp2m1_p log2p1_p fmuladd_p
one_minus_square_p polynomial_p eq_to_p le_to_p lt_to_p after_all_p create_token_p copy_p
device_put_p empty2_p get_p swap_p call_p closed_call_p linear_solve_p hessenberg_p schur_p
tridiagonal_p tridiagonal_solve_p igamma_p igammac_p igamma_grad_a_p polygamma_p zeta_p
regularized_incomplete_beta_p bessel_i1e_p approx_top_k_p
random_bits_p random_fold_in_p random_seed_p random_split_p
rng_bit_generator_p select_and_scatter_p.
"""
from ember._src.library.lax.api import (  # noqa: F401
    abs_p, acos_p, acosh_p, add_p, all_gather_p, all_to_all_p, and_p, argmax_p, argmin_p,
    asin_p, asinh_p, atan2_p, atan_p, atanh_p, axis_index_p, bessel_i0e_p,
    bitcast_convert_type_p, broadcast_in_dim_p, cbrt_p, ceil_p, clamp_p, clz_p, complex_p,
    concatenate_p, cond_p, conj_p, conv_general_dilated_p, convert_element_type_p, cos_p,
    cosh_p, cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p, digamma_p, div_p,
    dot_general_p, dynamic_slice_p, dynamic_update_slice_p, eq_p, erf_inv_p, erf_p, erfc_p,
    exp2_p, exp_p, expm1_p, fft_p, floor_p, fma_p, gather_p, ge_p, gt_p, imag_p,
    integer_pow_p, iota_p, is_finite_p, le_p, lgamma_p, log1p_p, log2_p, log_p, logistic_p,
    lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p, pad_p, pmax_p, pmin_p,
    population_count_p, pow_p, ppermute_p, psum_p, real_p, reduce_and_p, reduce_max_p,
    reduce_min_p, reduce_or_p, reduce_p, reduce_precision_p, reduce_prod_p, reduce_sum_p,
    reduce_window_max_p, reduce_window_min_p, reduce_window_p, reduce_window_sum_p,
    reduce_xor_p, rem_p, reshape_p, rev_p, round_p, rsqrt_p, scan_p, scatter_add_p,
    scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p, select_and_gather_add_p,
    select_and_scatter_add_p, select_n_p, sharding_constraint_p, shift_left_p,
    shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p, sinh_p, slice_p, sort_p,
    sqrt_p, square_p, squeeze_p, stop_gradient_p, sub_p, tan_p, tanh_p, top_k_p,
    transpose_p, while_p, xor_p)
from ember._src.library.lax.ragged_collectives import ragged_all_to_all_p  # noqa: F401
from ember._src.library.random.gamma import random_gamma_p  # noqa: F401
from ember._src.primitives.prng import rng_uniform_p  # noqa: F401
from ember._src.library.lax.linalg import (  # noqa: F401
    cholesky_p, eigh_p)
from ember._src.library.lax.linalg_derivatives import (  # noqa: F401
    eig_p, lu_p, qr_p, svd_p, triangular_solve_p)
from ember._src.primitives.decompositions import (  # noqa: F401
    householder_product_p)
from ember._src.primitives.prng import (  # noqa: F401
    threefry2x32_p)
from ember._src.transforms.ad_api import (  # noqa: F401
    add_jaxvals_p)
from ember._src.transforms.custom_derivatives import (  # noqa: F401
    custom_jvp_call_p, custom_lin_p, custom_vjp_call_p)
from ember._src.transforms.remat import (  # noqa: F401
    name_p, remat_p)
from ember._src.driver.jit import (  # noqa: F401
    jit_p)
from ember._src.transforms.call_primitives import (  # noqa: F401
    create_call_primitive, eval_jaxpr_transpose, register_call_primitive_rules)

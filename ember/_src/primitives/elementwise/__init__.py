"""Elementwise primitives, one module per family, each primitive declared once with its rules
beside it (shape/dtype rule, NumPy impl, jvp, transpose, batching, lowering):

- convert.py: convert_element_type, bitcast_convert_type, reduce_precision
- arithmetic.py: add, sub, mul, div, rem, max, min, nextafter, fma, integer_pow, neg, sign,
  abs, square, reciprocal; rounding; the parts of complex numbers (complex, real, imag, conj)
- transcendental.py: exp, log, trigonometric and hyperbolic functions, sqrt, rsqrt, cbrt,
  atan2, pow; special functions (erf, erfc, erf_inv, lgamma, digamma, bessel_i0e)
- logical.py: bitwise and logical ops, shifts, comparisons, select_n/select, clamp
- ieee.py: sinpi ... atan2pi, exp2m1, log2p1, one_minus_square, mulhi, fmuladd, polynomial,
  the total-order comparisons (eq_to, le_to, lt_to)
- common.py: the factories of their `lax` functions and the helpers of their derivatives

Names, params and printed forms follow JAX 0.12 (`sin a`, `integer_pow[y=2] a`,
`round[rounding_method=0] a`, `select_n p a b`, `and a b`, `not a`). The NumPy impls, XLA's
semantics of each op, are reference/elementwise.py's kernels (eager mode and the HLO
evaluator share them).

This package is the family's namespace, on purpose: ember reads the elementwise family as
one (`ew.add` and `ew.ge_p` in the other primitive families, `lax.select` in checkify, every
elementwise primitive in driver/sharding_propagation.py, the `*_p` that ember.lax exports,
`import *` in library/lax/api.py), so it gathers each module's `lax` functions (its
`__all__`) and its primitives. The modules are named for families, never for a function, so
no gathered name hides a module.
"""
from ember._src.primitives.elementwise.convert import *  # noqa: F401,F403
from ember._src.primitives.elementwise.arithmetic import *  # noqa: F401,F403
from ember._src.primitives.elementwise.transcendental import *  # noqa: F401,F403
from ember._src.primitives.elementwise.logical import *  # noqa: F401,F403
from ember._src.primitives.elementwise.ieee import *  # noqa: F401,F403
from ember._src.primitives.elementwise import arithmetic, convert, ieee, logical, transcendental

# the primitives
from ember._src.primitives.elementwise.convert import (  # noqa: F401
    bitcast_convert_type_p, convert_element_type_p, reduce_precision_p)
from ember._src.primitives.elementwise.arithmetic import (  # noqa: F401
    abs_p, add_p, ceil_p, complex_p, conj_p, div_p, floor_p, fma, fma_p, imag_p, integer_pow_p,
    is_finite_p, max_p, min_p, mul_p, neg_p, nextafter_p, real_p, rem_p, round_p, sign_p,
    square_p, sub_p)
from ember._src.primitives.elementwise.transcendental import (  # noqa: F401
    acos_p, acosh_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p, bessel_i0e_p, cbrt_p, cos_p,
    cosh_p, digamma_p, erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p, lgamma_p, log1p_p,
    log2_p, log_p, logistic_p, pow_p, rsqrt_p, sin_p, sinh_p, sqrt_p, tan_p, tanh_p)
from ember._src.primitives.elementwise.logical import (  # noqa: F401
    and_p, clamp_p, clz_p, eq_p, ge_p, gt_p, le_p, lt_p, ne_p, not_p, or_p, population_count_p,
    select_n_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, xor_p)

from ember._src.primitives.elementwise.ieee import (  # noqa: F401
    acospi_p, asinpi_p, atan2pi_p, atanpi_p, cospi_p, eq_to_p, exp2m1_p, fmuladd_p, le_to_p,
    log2p1_p, lt_to_p, mulhi_p, one_minus_square_p, polynomial_p, sinpi_p, tanpi_p)

__all__ = (convert.__all__ + arithmetic.__all__ + transcendental.__all__ + logical.__all__
           + ieee.__all__)

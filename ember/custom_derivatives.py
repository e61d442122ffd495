"""ember.custom_derivatives (jax.custom_derivatives): functions with custom derivative rules."""
from ember._src.transforms.custom_derivatives import (  # noqa: F401
    CustomVJPPrimal, SymbolicZero, closure_convert, custom_gradient, custom_jvp,
    custom_jvp_call_p, custom_lin_p, custom_vjp, custom_vjp_call_p,
    custom_vjp_primal_tree_values, zero_from_primal)
from ember._src.transforms.linear_call import linear_call  # noqa: F401

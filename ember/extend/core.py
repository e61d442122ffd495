"""ember.extend.core: jaxpr data structures and helpers (jax.extend.core).

JAX 0.12's names that ember has. `Effect` is the base of the effects a primitive reports
(`def_effectful_abstract_eval`): ember keeps effectful equations alive and in order.
"""
from ember._src.core import (  # noqa: F401
    ClosedJaxpr, DebugInfo, DropVar, Effect, Jaxpr, JaxprEqn, Literal, Primitive, ShapedArray,
    Var, array_types, concrete_or_error, eval_jaxpr, find_top_trace, gensym,
    get_opaque_trace_state, jaxpr_as_fun, jaxprs_in_params, mapped_aval, new_jaxpr_eqn,
    no_effects, subjaxprs, unmapped_aval,
    valid_jaxtype)
from ember._src.transforms.ad import primal_dtype_to_tangent_dtype  # noqa: F401

"""ember.extend.core: jaxpr data structures and helpers (jax.extend.core).

JAX 0.12's names that ember has. `Effect` is the base of the effects a primitive reports
(`def_effectful_abstract_eval`): ember keeps effectful equations alive and in order.
`check_jaxpr` type-checks a jaxpr (JaxprTypeError); `create_call_primitive` makes a call
primitive (`p.bind(*args, call_jaxpr=jaxpr)`); `take_current_trace` / `set_current_trace`
read and set the innermost trace.

Left out: `Token` and `AbstractToken` (ember orders effects by program order: its IR has
no token values)."""
from ember._src.base.errors import (  # noqa: F401
    InconclusiveDimensionOperation, JaxprTypeError)
from ember._src.core import (  # noqa: F401
    ClosedJaxpr, DebugInfo, DropVar, Effect, Effects, Jaxpr, JaxprEqn, Literal, Primitive,
    ShapedArray, TraceTag, Var, array_types, check_jaxpr, concrete_or_error, eval_jaxpr,
    find_top_trace, gensym, get_opaque_trace_state, jaxpr_as_fun, jaxprs_in_params,
    mapped_aval, new_jaxpr_eqn, no_effects, set_current_trace, subjaxprs,
    take_current_trace, unmapped_aval, valid_jaxtype)
from ember._src.transforms.ad import primal_dtype_to_tangent_dtype  # noqa: F401
from ember._src.transforms.batching import (  # noqa: F401
    nonempty_axis_env as nonempty_axis_env_DO_NOT_USE,
    unsafe_am_i_under_a_jit as unsafe_am_i_under_a_jit_DO_NOT_USE,
    unsafe_am_i_under_a_vmap as unsafe_am_i_under_a_vmap_DO_NOT_USE,
    unsafe_get_axis_names as unsafe_get_axis_names_DO_NOT_USE)
from ember._src.transforms.call_primitives import (  # noqa: F401
    create_call_primitive, eval_jaxpr_transpose, register_call_primitive_rules)
from ember.extend.core import primitives  # noqa: F401

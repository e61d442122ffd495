"""The tracing core: abstract values, jaxprs, primitives, tracers and the interpreter stack.

The design is JAX's "Autodidax": `bind(prim, *args, **params)` finds the innermost
interpreter (trace) among its arguments and the dynamic (staging) trace, raises every
argument into it, and lets that trace process the primitive. Level 0 is the eval trace
(eager execution through each primitive's NumPy implementation); `make_jaxpr` / `jit`
push a `JaxprTrace` that records equations; jvp, batching and partial evaluation push
their own traces on the same stack.

`ember._src.core` is the layer's one namespace, as JAX's `jax._src.core` is: callers write
`from ember._src import core; core.ShapedArray`, `core.bind`, ... This package re-exports
those names from the modules that hold them, bottom first:

- tracers.py: Tracer and the errors of its misuse (`bool()` of a traced value, ...)
- avals.py: ShapedArray and get_aval
- jaxpr.py: Var, Literal, JaxprEqn, Jaxpr and their printing
- trace.py: Trace, the trace stack, eager evaluation, bind, eval_jaxpr
- primitive.py: Primitive, its rule registries, effects
- staging.py: the jaxpr-building trace, named scopes, source and debug info
- array.py, earray.py, api_util.py, sharding.py: Array, EArray (arrays of a user's extended
  dtype), the flattening helpers, shardings (imported by their own module names)

Mutable state is not re-exported: the trace stack, the dynamic trace, the count of open
traces, the registered array type and `eager_hook` live in trace.py, and are read
there (`from ember._src.core import trace as trace_lib; trace_lib.dynamic_trace`); a global
rebound after import would be stale here.
"""
from ember._src.core.tracers import Tracer, concrete_or_error
from ember._src.core.avals import (
    AbstractValue, ParamDict, ShapedArray, Value, array_types, canonicalize_shape, get_aval,
    is_arraylike, mapped_aval, max_dim, min_dim, physical_aval, real_jax_mixing_note,
    unmapped_aval, unwrap_jax_array, valid_jaxtype)
from ember._src.core.jaxpr import (
    Atom, ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, SourceInfo, Var, _pp_eqn, gensym,
    jaxprs_in_params, new_jaxpr_eqn, pp_eqn, pp_jaxpr, pp_toplevel_jaxpr, subjaxprs)
from ember._src.core.trace import (
    EvalTrace, MainTrace, OpaqueTraceState, Trace, TraceTag, bind, cur_level_is_eval,
    ensure_compile_time_eval, eval_context, eval_jaxpr, find_top_trace, full_lower, full_raise,
    get_opaque_trace_state, is_concrete_array, jaxpr_as_fun, literal_value, new_array,
    new_dynamic, new_main, register_array_type, set_current_trace, take_current_trace,
    to_numpy)
from ember._src.core.primitive import (
    Effect, Effects, Primitive, RuleRegistry, declare, eqn_effects, jaxpr_effects, no_effects)
from ember._src.core.staging import (
    DebugInfo, JaxprBuilder, JaxprTrace, JaxprTracer, current_source_info, debug_info,
    hoist_consts, named_call, named_scope, trace_to_jaxpr)
from ember._src.core.typecheck import check_jaxpr

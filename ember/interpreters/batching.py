"""ember.interpreters.batching: batching (vmap) rules of primitives
(jax.interpreters.batching).

`primitive_batchers[p] = rule(vals, dims, **params)`, `fancy_primitive_batchers[p] =
rule(axis_data, vals, dims, **params)` and `axis_primitive_batchers[p] = rule(axis_size,
axis_name, trace_type, vals, dims, **params)` set the rule vmap reads (`Primitive.batch`);
each returns (out, out_dims), `not_mapped` for an unbatched result. `batch_jaxpr_axes`
vmaps a closed jaxpr."""
from ember._src.transforms.batching import (  # noqa: F401
    AxisData, BatchTrace, BatchTracer, axis_primitive_batchers, batch_jaxpr_axes,
    bdim_at_front, broadcast, defbroadcasting, defreducer, defvectorized,
    fancy_primitive_batchers, moveaxis, not_mapped, primitive_batchers, zero_if_mapped)
from ember._src.transforms.batching import (  # noqa: F401 (JAX's WrappedFun form)
    batch_subtrace_wrapped as batch_subtrace)

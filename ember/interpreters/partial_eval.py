"""ember.interpreters.partial_eval (jax.interpreters.partial_eval): staging a WrappedFun
into a jaxpr and dead-code elimination, as libraries call them (flax's nn.scan)."""
from ember._src.transforms.partial_eval import trace_to_jaxpr_dynamic  # noqa: F401
from ember._src.transforms.partial_eval import dce_jaxpr_used as dce_jaxpr  # noqa: F401

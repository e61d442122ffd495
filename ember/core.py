"""ember.core (jax.core): the names JAX 0.12's jax.core still exports.

The jaxpr data structures and helpers for libraries live in ember.extend.core.
"""
from ember._src.core import (  # noqa: F401
    AbstractValue, Atom, ParamDict, ShapedArray, Trace, Tracer, Value,
    ensure_compile_time_eval, eval_context, eval_jaxpr, max_dim, min_dim)

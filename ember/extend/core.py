"""ember.extend.core: jaxpr data structures and helpers (jax.extend.core)."""
from ember._src.core import (  # noqa: F401
    ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, Primitive, ShapedArray, Var,
    eval_jaxpr, jaxpr_as_fun, jaxprs_in_params)

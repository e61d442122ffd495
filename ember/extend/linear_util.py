"""ember.extend.linear_util (jax.extend.linear_util): functions wrapped for staging.

`wrap_init(f, debug_info=...)` gives a WrappedFun; `ember.api_util.flatten_fun_nokwargs`
flattens it; `ember.interpreters.partial_eval.trace_to_jaxpr_dynamic` stages it.
"""
from ember._src.core.api_util import Store, StoreException, WrappedFun, wrap_init  # noqa: F401

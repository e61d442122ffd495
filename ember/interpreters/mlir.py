"""ember.interpreters.mlir: lowering rules of primitives (jax.interpreters.mlir).

`register_lowering(p, lower_fun(fun))` lowers `p` as ember's lowering of `fun`; a rule
that builds JAX's MLIR cannot run in ember, so compiled code calls `p`'s impl on the host
instead (as it does for a primitive with no lowering at all) — unless all the rule emits
is `emit_python_callback`: that one ember runs (a host call of the callback)."""
from ember._src.lower import LowerFun, lower_fun, register_lowering  # noqa: F401
from ember._src.primitives.callbacks import emit_python_callback  # noqa: F401

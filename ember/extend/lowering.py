"""ember.extend.lowering (jax.extend.lowering): the context a lowering rule receives
(see ember.interpreters.mlir). Left out: `JaxIrContext` and `upstream_dialects`, MLIR's
Python bindings, which ember does not use (its IR is its own: ember/_src/hlo)."""
from ember._src.lower.rule_api import LoweringRuleContext  # noqa: F401

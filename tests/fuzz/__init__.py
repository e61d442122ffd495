"""A differential fuzzer: random jnp/lax programs run eagerly, jitted (default, optimized
and quick tiers, checked against the HLO evaluator), under grad, vmap and jit(vmap(grad)),
and with real JAX when it is installed. docs/fuzzing.md describes it."""

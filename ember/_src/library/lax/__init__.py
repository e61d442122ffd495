"""ember.lax: every lax function gathered from the primitive families (`api`), and the parts
of lax written with jnp (`linalg`, the decompositions' derivative rules in
`linalg_derivatives`, the lowering expansions in `expansions`)."""

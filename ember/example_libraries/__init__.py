"""ember.example_libraries: JAX's small example libraries (jax.example_libraries), over
ember's public API: `stax` (neural-network layers as (init_fun, apply_fun) pairs) and
`optimizers` (first-order optimizers as (init_fn, update_fn, get_params) triples)."""

"""jax.experimental.sparse: batched sparse arrays (BCOO, BCSR) and the older COO/CSR/CSC
formats, built from lax/jnp ops (gathers, scatter-adds, sorts), as JAX computes them on
the CPU; `sparsify` runs jnp code on sparse operands."""

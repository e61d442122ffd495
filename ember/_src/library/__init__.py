"""The user-level libraries, written with lax and the primitives: ember.numpy (`numpy/`),
ember.lax's gathered namespace and its jnp-written parts (`lax/`), ember.random (`random/`),
ember.scipy (`scipy/`), and jacobians, ravel_pytree, check_grads, checkify, Refs, hijax
and the debugger."""

"""ember.scipy's implementation (jax.scipy): `linalg`."""

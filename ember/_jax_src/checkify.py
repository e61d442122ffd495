"""jax._src.checkify's names that libraries use (flax.nnx's nnx.checkify: checkify, Error,
JaxException, user_checks): ember's checkify."""
from ember._src.library.checkify import Error, JaxException, checkify, user_checks  # noqa: F401

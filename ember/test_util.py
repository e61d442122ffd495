"""ember.test_util (jax.test_util): gradient checks against finite differences."""
from ember._src.library.test_util import check_grads, check_jvp, check_vjp  # noqa: F401

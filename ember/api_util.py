"""ember.api_util (jax.api_util): what libraries that stage their own functions use."""
from ember._src.core.api_util import flatten_fun_nokwargs  # noqa: F401
from ember._src.core import debug_info  # noqa: F401

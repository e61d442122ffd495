"""ember.lax: the primitive operations (jax.lax)."""
from ember._src.library.lax.api import *  # noqa: F401,F403
from ember._src.primitives import public_lax_fns as _public_lax_fns

# elementwise functions that, as in JAX, never convert Python scalars (ember's own code
# calls the converting forms in ember._src.library.lax.api)
globals().update(_public_lax_fns)
del _public_lax_fns
from ember._src.library.lax.special import *  # noqa: E402,F401,F403
from ember.lax import linalg  # noqa: E402,F401  (jax.lax.linalg)
from ember._src.core.sharding import with_sharding_constraint  # noqa: E402,F401
from ember._src.library.lax.conveniences import *  # noqa: E402,F401,F403
from ember._src.library.lax.ragged import *  # noqa: E402,F401,F403
from ember._src.library.lax.solves import *  # noqa: E402,F401,F403
from ember._src.library.lax.ragged_collectives import *  # noqa: E402,F401,F403

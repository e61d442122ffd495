"""ember.experimental.sparse.api: todense, empty, eye (jax.experimental.sparse.api)."""
from ember._src.library.sparse.api import (  # noqa: F401
    empty, eye, todense, todense_p)

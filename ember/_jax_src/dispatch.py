"""jax._src.dispatch's names that libraries use (equinox's _jit: wait_for_tokens, which it
re-registers at exit): ember's barrier for dispatched computations' host side effects."""
from ember._src.runtime.executor import effects_barrier as wait_for_tokens  # noqa: F401

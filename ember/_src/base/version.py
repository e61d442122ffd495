"""ember's version: here, below everything, so that code inside ember/_src (a cache key's
environment) reads it without importing the public package."""

__version__ = "0.1.0"

# The JAX release whose API ember follows. Under ember.compat's alias (`python -m ember`),
# `jax.__version__` reports this, so libraries that read it take their current-JAX code paths.
JAX_API_VERSION = "0.12.0"


def version_info(version: str) -> tuple[int, ...]:
  """`"0.12.0"` -> `(0, 12, 0)`: JAX's `__version_info__` form."""
  return tuple(int(p) for p in version.split(".") if p.isdigit())

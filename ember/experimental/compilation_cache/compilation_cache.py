"""jax.experimental.compilation_cache.compilation_cache: where the persistent compilation
cache keeps its entries (ember/_src/base/persistent_cache.py holds the cache)."""
from ember._src.base.config import config


def set_cache_dir(path) -> None:
  """Save jitted functions' compiled code under `path` and look there before compiling
  (the `jax_compilation_cache_dir` option). The cache is trusted: never share the
  directory with users you do not trust."""
  config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
  """Back to the uninitialized state. ember's cache reads the options at each compile and
  holds no state of its own, so the next compile already sees the options as they are."""

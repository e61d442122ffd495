"""ember.version: ember's version, by jax.version's names (under ember.compat, `jax.version`
reports the JAX release whose API ember follows instead)."""
from ember._src.base.version import JAX_API_VERSION, __version__, version_info

_version = __version__
__version_info__ = version_info(__version__)
_version_as_tuple = version_info   # "0.12.1" -> (0, 12, 1)
jax_api_version = JAX_API_VERSION

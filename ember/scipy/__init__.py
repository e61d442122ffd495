"""ember.scipy (jax.scipy): special, stats and linalg, imported at once; signal, fft,
integrate, interpolate, ndimage, cluster, optimize, sparse and spatial load on first use
(attribute access or import), as JAX's lazy loader does."""
import importlib as _importlib

from ember.scipy import linalg, special, stats  # noqa: F401

_LAZY = ("cluster", "fft", "integrate", "interpolate", "ndimage", "optimize", "signal",
         "sparse", "spatial")


def __getattr__(name):
  if name in _LAZY:
    return _importlib.import_module(f"{__name__}.{name}")
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(_LAZY))

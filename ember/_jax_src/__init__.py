"""Stand-ins for the few JAX internals (`jax._src.X`) that libraries import unguarded.

Under ember's jax alias (ember.compat), `import jax._src.X` gives `ember._jax_src.X` when
this package has it; every other `jax._src` module raises ImportError (libraries that try
one inside try/except, as flax does for jax._src.pjit, take their fallback). Each module
here holds exactly the names a library uses, each one ember's real equivalent, not a
placeholder; docs/ecosystem.md lists them with the library that needs each.

ember._src never imports this package.
"""
from ember.compat import _private_message


def __getattr__(name):
  # `jax._src.xla_bridge` read as an attribute (chex does) before anything imported it: JAX
  # imports its internals with jax, so a stand-in this package has is imported now
  import importlib
  import importlib.util
  if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
    return importlib.import_module(f"{__name__}.{name}")
  raise AttributeError(_private_message(f"jax._src.{name}"))

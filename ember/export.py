"""ember.export (jax.export): export a jitted function, serialize it, deserialize and call
it (ember/_src/library/export.py says what the artifact holds). ember has no shape
polymorphism, so there is no symbolic_shape / symbolic_args_specs / symbolic_dim_bounds /
SymbolicScope."""
from ember._src.library.export import (  # noqa: F401
  DisabledSafetyCheck, Exported, default_export_platform, deserialize, export,
  is_symbolic_dim, maximum_supported_calling_convention_version,
  minimum_supported_calling_convention_version, register_namedtuple_serialization,
  register_pytree_node_serialization,
)

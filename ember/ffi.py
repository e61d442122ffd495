"""ember.ffi (jax.ffi): call foreign functions written against XLA's FFI C API (handlers
compiled for JAX run unchanged), eagerly and under jit and vmap; the FFI headers to build
them against (include_dir()). ember/_src/primitives/ffi.py and runtime/ffi_api.py hold the
implementation."""
from ember._src.primitives.ffi import (  # noqa: F401
  build_ffi_lowering_function, ffi_call, ffi_lowering, include_dir, pycapsule,
  register_ffi_target, register_ffi_target_as_batch_partitionable, register_ffi_type,
  register_ffi_type_id,
)

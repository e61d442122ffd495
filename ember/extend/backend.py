"""ember.extend.backend (jax.extend.backend): the backends and the default device.

ember's own CPU backend is its one backend (`backends()` is `{'cpu': ...}`); it is not
XLA, so `backend_xla_version()` is None (as JAX's is on its CPU backend).
`clear_in_memory_compilation_cache()` drops the compiled programs jit cached.

Left out: `clear_backends` (ember's CPU backend does not restart),
`get_compile_options` (XLA's CompileOptions), `register_backend_factory`,
`register_backend_cache` and `ifrt_proxy` (XLA/PJRT client plumbing)."""
from ember._jax_src.xla_bridge import backends, get_backend  # noqa: F401
from ember._src.base.config import config
from ember._src.core.sharding import devices, local_devices
from ember._src.driver.jit import clear_caches as clear_in_memory_compilation_cache  # noqa: F401


def get_default_device():
  """The device computations go to: `jax_default_device` when set, else the first."""
  device = config.read("jax_default_device")
  if device is None:
    return local_devices()[0]
  return devices(device)[0] if isinstance(device, str) else device


def backend_xla_version(platform=None):
  """The XLA version of the backend: None, ember's backend is not XLA."""
  get_backend(platform)   # an unknown platform is an error, as in JAX
  return None

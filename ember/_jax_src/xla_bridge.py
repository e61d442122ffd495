"""jax._src.xla_bridge's names that libraries use: whether the CPU backend has started, for
chex.set_n_cpu_devices (`xla_bridge._backends.get('cpu')`: set XLA_FLAGS' device count only
before the first use), and the device queries.

`_backends` is `{'cpu': <ember's CPU backend>}` once the CPU backend has started (its device
count fixed: base/flags.py), else empty."""
from __future__ import annotations

from ember._src.base import flags
from ember._src.core.sharding import (  # noqa: F401
    default_backend, devices, local_devices)
from ember._src.parallel.distributed import process_count, process_index  # noqa: F401


class CpuBackend:
  """ember's native CPU backend, as `xla_bridge._backends['cpu']` shows it."""
  platform = "cpu"

  def devices(self):
    return devices()

  def local_devices(self):
    return local_devices()

  def device_count(self) -> int:
    return len(devices())

  def local_device_count(self) -> int:
    return len(local_devices())

  def __repr__(self):
    return f"<ember CPU backend: {flags.num_cpu_devices()} device(s)>"


_CPU = CpuBackend()


def backends_are_initialized() -> bool:
  """Whether the CPU backend has started (jax_num_cpu_devices and XLA_FLAGS' device count
  no longer change it)."""
  return flags.cpu_backend_started()


def backends() -> dict:
  """The backends by platform name (starts the CPU backend)."""
  flags.num_cpu_devices()
  return {"cpu": _CPU}


def get_backend(platform=None) -> CpuBackend:
  if platform not in (None, "cpu"):
    raise RuntimeError(f"Unknown backend {platform!r}: ember's xla_bridge has the native "
                       "'cpu' backend only (PJRT devices: ember.devices(platform))")
  flags.num_cpu_devices()
  return _CPU


def device_count(backend=None) -> int:
  return len(devices(backend))


def local_device_count(backend=None) -> int:
  return len(local_devices(backend=backend))


def __getattr__(name):
  if name == "_backends":   # read when asked: the backend starts at its first use
    return {"cpu": _CPU} if flags.cpu_backend_started() else {}
  from ember.compat import _private_message
  raise AttributeError(f"{_private_message('jax._src.xla_bridge')} (it has no {name!r})")

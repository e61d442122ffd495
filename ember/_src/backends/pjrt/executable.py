"""Compile StableHLO text with a PJRT client and move arrays to and from its devices.

Buffers are jaxlib's single-device arrays (`ArrayImpl`); execution is PJRT's own
asynchronous dispatch (execute returns at once, a buffer is ready when its computation
has run), so ember adds no executor thread here.
"""
from __future__ import annotations

import types

import numpy as np

_sharding_types: dict = {}    # jaxlib device -> the sharding device_put wants for it


def _sharding(jax_device):
  """A single-device sharding jaxlib's batched_device_put accepts for `jax_device`."""
  s = _sharding_types.get(jax_device)
  if s is None:
    # optional dependency (ember[tpu]): only PJRT arrays reach here
    from jaxlib import _jax, xla_client

    class _Placement(_jax.SingleDeviceSharding):   # the attributes device_put reads
      memory_kind = None
      _device_assignment = property(lambda self: (self._device,))
      is_fully_replicated = lambda self: True  # noqa: E731
      _to_xla_hlo_sharding = lambda self, ndim: xla_client.HloSharding.replicate()  # noqa: E731
    s = _sharding_types[jax_device] = _Placement(jax_device)
  return s


def put(value: np.ndarray, jax_device):
  """A device buffer holding a copy of the host array `value` (its dtype kept as is)."""
  from jaxlib import _jax   # optional dependency (ember[tpu]): only PJRT arrays reach here
  value = np.ascontiguousarray(value)
  aval = types.SimpleNamespace(shape=value.shape, dtype=value.dtype, weak_type=False,
                               ndim=value.ndim)
  return _jax.batched_device_put(
      aval, _sharding(jax_device), [value], [jax_device], committed=True,
      host_buffer_semantics=_jax.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
      enable_x64=True)


def to_host(buf) -> np.ndarray:
  """The buffer's value as a read-only host array (waits for it; raises its error)."""
  value, copied = buf._single_device_array_to_np_array_did_copy()
  if not copied:   # a view of device (host) memory the buffer owns: keep our own copy
    value = np.array(value)
  value.flags.writeable = False
  return value


class Executable:
  """A module compiled for one device: `execute(buffers) -> buffers` (asynchronous)."""

  def __init__(self, client, jax_device, text: str):
    self.jax_device = jax_device
    self.loaded = client.compile_and_load(text, [jax_device])

  def execute(self, buffers: list) -> list:
    return self.loaded.execute(buffers)

  def hlo_text(self) -> str:
    """XLA's optimized HLO of the module (what `Compiled.as_text()` shows on a PJRT device)."""
    return "\n".join(m.to_string() for m in self.loaded.hlo_modules())

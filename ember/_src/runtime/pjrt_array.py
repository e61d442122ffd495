"""Arrays on PJRT devices (backends/pjrt): an ember Array whose value is a PJRT buffer.

`PjrtArray` is an `Array` (the same methods, operators, printing, pytree handling) whose
device value is `_pjrt` (a jaxlib single-device buffer, possibly still being computed:
PJRT dispatches asynchronously). Reading it on the host (`np.asarray`, `.item()`, printing,
an eager op) copies it back once and keeps the copy in `_buf`. `block_until_ready` waits on
the device without copying.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.backends.pjrt import executable as pjrt_exe
from ember._src.core import array as array_lib
from ember._src.core.array import Array
from ember._src.core.sharding import PjrtDevice, SingleDeviceSharding


class PjrtArray(Array):
  __slots__ = ("_pjrt", "_device")

  @classmethod
  def _wrap(cls, buf, device: PjrtDevice, shape, dtype, weak_type: bool,
            committed: bool) -> "PjrtArray":
    self = object.__new__(cls)
    self._buf, self._fut, self._ptr, self._pjrt, self._device = None, None, None, buf, device
    self._shape, self._dtype, self._weak_type = tuple(shape), np.dtype(dtype), bool(weak_type)
    self._deleted, self._committed = False, committed
    self._stack = array_lib._alloc_stack(0)
    array_lib.placements_made[0] = True
    return self

  @property
  def _value(self) -> np.ndarray:
    buf = self._buf
    if buf is None:
      self._check_alive()
      buf = self._buf = pjrt_exe.to_host(self._pjrt)
    return buf

  def _donate(self, held: int = 0):
    return None   # the host copy is not this array's storage: nothing to hand over

  @property
  def sharding(self):
    return SingleDeviceSharding(self._device)

  def devices(self):
    return {self._device}

  device = property(lambda self: self._device)

  def to_device(self, device, *, stream=None):
    if stream is not None:
      raise ValueError("to_device: PJRT arrays take stream=None.")
    return array_lib.device_put(self, device)

  def block_until_ready(self) -> "PjrtArray":
    self._check_alive()
    self._pjrt.block_until_ready()   # raises the computation's error
    return self

  def is_ready(self) -> bool:
    return self._buf is not None or self._pjrt.is_ready()

  def delete(self):
    if not self._deleted:
      self._deleted, self._buf = True, None
      self._pjrt.delete()

  def copy(self) -> "PjrtArray":
    return put(self, self._device, self.committed)

  def on_device_size_in_bytes(self) -> int:
    return self._pjrt.on_device_size_in_bytes()

  def __dlpack_device__(self):
    raise BufferError(f"__dlpack__: ember's PJRT arrays ({self._device}) do not export "
                      "DLPack; use np.asarray(x) for a host copy.")


def put(leaf, device: PjrtDevice, committed: bool):
  """`leaf` (an Array of any backend, a NumPy array or a scalar) as a PjrtArray on
  `device`; a PjrtArray already there (with the same commitment) is returned as is."""
  if isinstance(leaf, core.Tracer):
    return leaf
  if isinstance(leaf, Array):
    leaf._check_alive()
    if type(leaf) is PjrtArray and leaf._device == device and leaf.committed == committed:
      return leaf
    value, weak = np.asarray(leaf), leaf._weak_type   # other backends: through the host
  else:
    aval = core.get_aval(leaf)
    value, weak = np.asarray(leaf, dtype=aval.dtype), aval.weak_type
  if type(leaf) is PjrtArray and leaf._device == device:
    buf = leaf._pjrt   # the same buffer, re-committed
  else:
    buf = pjrt_exe.put(value, device.jax_device)
  return PjrtArray._wrap(buf, device, value.shape, value.dtype, weak, committed)


array_lib.device_placers[PjrtDevice] = put

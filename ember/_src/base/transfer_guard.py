"""JAX's transfer guard (`jax.transfer_guard*`) for host-to-device transfers: a NumPy or
Python value made an Array by `jnp.asarray`/`jnp.array` or a jit call's arguments
(implicit transfers), or by `device_put` (explicit), logs or raises as the level of
`jax_transfer_guard_host_to_device` says:

  allow / None     nothing
  log              implicit ones log a warning
  disallow         implicit ones raise JaxRuntimeError
  log_explicit     every one logs a warning
  disallow_explicit  every one raises

On CPU the host's memory is the device's, so device-to-host and device-to-device transfers
never fire, as in JAX. Callers check `config._values["jax_transfer_guard_host_to_device"]
is not None` first so that the default costs one dict read.
"""
from __future__ import annotations

import logging

from ember._src.base.config import config
from ember._src.base.errors import JaxRuntimeError

_logger = logging.getLogger("ember.transfer_guard")
_DST = "dst_sharding=SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"


def _describe(aval) -> str:
  weak = ", weak_type=True" if getattr(aval, "weak_type", False) else ""
  return f"aval=ShapedArray({aval.str_short()}{weak}), {_DST}"


def host_to_device(aval, explicit: bool) -> None:
  """Apply the host-to-device level to one transfer of a value of type `aval`."""
  level = config._values["jax_transfer_guard_host_to_device"]
  if level is None or level == "allow" or (explicit and level in ("log", "disallow")):
    return
  if level in ("log", "log_explicit"):
    _logger.warning("host-to-device transfer: %s", _describe(aval))
    return
  raise JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed host-to-device transfer: "
                        f"{_describe(aval)}")

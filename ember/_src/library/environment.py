"""The process and its arrays, as JAX's top level reports them: `print_environment_info`,
`live_arrays`, `copy_to_host_async`, and the old host_* names of the process functions."""
from __future__ import annotations

import gc
import platform
import sys

import numpy as np

from ember._src.base import tree_util
from ember._src.base.version import JAX_API_VERSION, __version__
from ember._src.core import sharding
from ember._src.core.array import Array
from ember._src.parallel.distributed import process_count, process_index


def print_environment_info(return_string: bool = False) -> str | None:
  """Print (or return) the versions of ember, the JAX API it follows, NumPy and Python, and
  the devices and processes it runs on (`jax.print_environment_info`)."""
  devs = sharding.local_devices()
  info = "\n".join([
      f"ember:  {__version__}",
      f"jax:    {JAX_API_VERSION} (the API ember follows)",
      f"numpy:  {np.__version__}",
      f"python: {sys.version}",
      f"device info: {sharding.default_backend()}-{len(sharding.devices())}, "
      f"{len(devs)} local devices\"",
      f"process_count: {process_count()}",
      f"platform: {platform.uname()}",
  ]) + "\n"
  if return_string:
    return info
  print(info)
  return None


def live_arrays(platform: str | None = None) -> list:
  """Every Array of this process not yet deleted (`jax.live_arrays`); `platform`: only those
  on that backend's devices (None: the default backend)."""
  backend = platform or sharding.default_backend()
  arrays = [x for x in gc.get_objects() if isinstance(x, Array) and not x.is_deleted()]
  return [x for x in arrays if all(d.platform == backend for d in x.devices())]


def copy_to_host_async(x):
  """Start copying each Array leaf of the pytree `x` to the host (`jax.copy_to_host_async`);
  returns `x`. ember's CPU arrays already live in host memory."""
  for leaf in tree_util.tree_leaves(x):
    start = getattr(leaf, "copy_to_host_async", None)
    if start is not None:
      start()
  return x


def host_count(backend=None) -> int:
  """The number of processes (`jax.host_count`, the old name of `jax.process_count`)."""
  return process_count()


def host_id(backend=None) -> int:
  """This process's index (`jax.host_id`, the old name of `jax.process_index`)."""
  return process_index()


def process_indices(backend=None) -> list[int]:
  """The indices of every process (`jax.process_indices`)."""
  return list(range(process_count()))


def host_ids(backend=None) -> list[int]:
  """`jax.host_ids`, the old name of `jax.process_indices`."""
  return process_indices(backend)

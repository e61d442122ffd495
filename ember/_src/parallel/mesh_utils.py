"""`jax.experimental.mesh_utils`: arrays of devices, shaped for `jax.sharding.Mesh`.

ember's devices have no network topology to optimise for (CPU devices share one host; PJRT
devices come in the client's order), so a mesh is the devices in order, reshaped, as JAX
does for CPU devices. `device_kind_handler_dict` maps a device kind to a function that
builds the mesh instead (JAX's hook for hardware with a known topology).
"""
from __future__ import annotations

import collections
import math
from typing import Any, Callable, Sequence

import numpy as np

from ember._src.core import sharding

device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _object_array(items: Sequence[Any]) -> np.ndarray:
  out = np.empty(len(items), dtype=object)
  out[:] = list(items)
  return out


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
  """An object array of `devices` (default: all devices) of shape `mesh_shape`.

  Raises ValueError when `mesh_shape` is not a sequence of integers or its product is not the
  number of devices. `allow_split_physical_axes` has no effect (no physical axes here);
  `contiguous_submeshes` holds trivially: each process's devices are consecutive."""
  del allow_split_physical_axes
  devices = sharding.devices() if devices is None else list(devices)
  try:
    shape = tuple(int(s) for s in mesh_shape)
  except (TypeError, ValueError):
    raise ValueError("`mesh_shape` passed to `create_device_mesh` should be a sequence of "
                     f"ints. Got {mesh_shape}") from None
  if math.prod(shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of "
                     f"mesh_shape {shape}")
  handler = device_kind_handler_dict.get(devices[-1].device_kind) if devices else None
  if handler is not None:
    mesh = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
    if mesh is not None:
      return mesh
  return _object_array(devices).reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
  """A mesh for two networks: the devices grouped into granules (slices, or processes when
  `process_is_granule`), each granule a `mesh_shape` mesh, the granules laid out as
  `dcn_mesh_shape`; the result's shape is the two multiplied axis by axis.

  ember's devices have no `slice_index`: pass `process_is_granule=True` (each process's
  devices are one granule), as JAX needs on CPU."""
  devices = sharding.devices() if devices is None else list(devices)
  attr = "process_index" if process_is_granule else "slice_index"
  if not devices or not hasattr(devices[0], attr):
    raise ValueError(f"Device {devices[0] if devices else None} does not have attribute "
                     f"{attr}. See `process_is_granule` option.")
  groups: dict[Any, list] = collections.defaultdict(list)
  for d in devices:
    groups[getattr(d, attr)].append(d)
  keys = sorted(groups) if should_sort_granules_by_key else list(groups)
  granules = [groups[k] for k in keys]
  if math.prod(dcn_mesh_shape) != len(granules):
    raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                     f"dcn_mesh_shape {tuple(dcn_mesh_shape)}")
  meshes = [create_device_mesh(mesh_shape, g,
                               allow_split_physical_axes=allow_split_physical_axes)
            for g in granules]
  layout = np.arange(len(granules)).reshape(tuple(dcn_mesh_shape))
  return np.block(np.vectorize(lambda i: meshes[i], otypes=[object])(layout).tolist())

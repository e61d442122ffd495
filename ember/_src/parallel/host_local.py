"""Host-local and global arrays (jax.experimental.multihost_utils): a process's block of a
global array and back, for code that feeds each process its own part of the data."""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import tree_util
from ember._src.core import sharding as sharding_lib
from ember._src.core.array import device_put, make_array_from_process_local_data
from ember._src.parallel import distributed


class ProcessFailureError(Exception):
  """Some processes failed (JAX's live_devices raises it): `failed_devices`, their devices."""

  def __init__(self, failed_devices: set):
    self.failed_devices = failed_devices
    super().__init__(f"Devices failed: {failed_devices}")


def _pspecs_for(tree, pspecs):
  """One PartitionSpec per leaf of `tree`: `pspecs` is a prefix of it (a lone spec serves
  every leaf)."""
  if isinstance(pspecs, sharding_lib.PartitionSpec):
    return [pspecs] * len(tree_util.tree_leaves(tree))
  return tree_util.public.tree_broadcast(
      pspecs, tree, is_leaf=lambda x: isinstance(x, sharding_lib.PartitionSpec) or x is None)


def _check_traced(x, name: str):
  """Under a trace with one process, the block is the whole array: the value itself (JAX's
  lowering is the identity); with more, the block's type is not the array's."""
  if distributed.process_count() > 1:
    raise TypeError(f"multihost_utils.{name} of a traced value with "
                    f"{distributed.process_count()} processes: call it outside jit (the "
                    "global and host-local arrays have different shapes)")
  return x


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
  """The global arrays whose blocks on this process's devices are `local_inputs` (a pytree),
  laid out over `global_mesh` as `pspecs` (a prefix pytree of PartitionSpecs) says: with one
  process, the inputs placed that way."""
  leaves, tree = tree_util.tree_flatten(local_inputs)
  specs = tree_util.tree_leaves(_pspecs_for(local_inputs, pspecs),
                                is_leaf=lambda x: isinstance(x, sharding_lib.PartitionSpec))

  def one(x, spec):
    if isinstance(x, core.Tracer):
      return _check_traced(x, "host_local_array_to_global_array")
    return make_array_from_process_local_data(
        sharding_lib.NamedSharding(global_mesh, spec), x)
  return tree_util.tree_unflatten(tree, [one(x, s) for x, s in zip(leaves, specs)])


def _local_mesh(mesh):
  """The sub-mesh of this process's devices (a block of the mesh, as JAX's local_mesh)."""
  me = distributed.process_index()
  mine = np.vectorize(lambda d: d.process_index == me, otypes=[bool])(mesh.devices)
  if mine.all():
    return mesh
  where = np.argwhere(mine)
  lo, hi = where.min(axis=0), where.max(axis=0) + 1
  return sharding_lib.Mesh(mesh.devices[tuple(slice(a, b) for a, b in zip(lo, hi))],
                           mesh.axis_names, mesh.axis_types)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """This process's blocks of the global arrays `global_inputs`, each an array laid out as
  `pspecs` says over the mesh of this process's devices: with one process, the arrays
  themselves placed that way."""
  leaves, tree = tree_util.tree_flatten(global_inputs)
  specs = tree_util.tree_leaves(_pspecs_for(global_inputs, pspecs),
                                is_leaf=lambda x: isinstance(x, sharding_lib.PartitionSpec))
  local_mesh = _local_mesh(global_mesh)

  def one(x, spec):
    if isinstance(x, core.Tracer):
      return _check_traced(x, "global_array_to_host_local_array")
    local = sharding_lib.NamedSharding(local_mesh, spec)
    if local_mesh is global_mesh:
      return device_put(x, local)
    shards = x.addressable_shards
    shape = x.shape
    starts = [min(s.index[k].indices(n)[0] for s in shards) for k, n in enumerate(shape)]
    stops = [max(s.index[k].indices(n)[1] for s in shards) for k, n in enumerate(shape)]
    block = np.empty([b - a for a, b in zip(starts, stops)], x.dtype)
    for s in shards:
      block[tuple(slice(i.indices(n)[0] - a, i.indices(n)[1] - a)
                  for i, n, a in zip(s.index, shape, starts))] = np.asarray(s.data)
    return device_put(block, local)
  return tree_util.tree_unflatten(tree, [one(x, s) for x, s in zip(leaves, specs)])


def reached_preemption_sync_point(step_id: int) -> bool:
  """Whether every process reached the sync point after a preemption notice: False without
  a distributed runtime, as JAX; ember's (MPI) has no preemption service."""
  del step_id
  if not distributed.is_initialized():
    return False
  raise RuntimeError("Preemption sync manager has not been initialized: ember's distributed "
                     "runtime (MPI) has no preemption service.")

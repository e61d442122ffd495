"""Collectives between devices: the communicator interface the compiled per-device programs
of pmap and shard_map call, its in-process implementation, and the per-device context that
tells a running program which device it is on.

A `Communicator` joins the `size` participants (ranks) of one collective group; every
participant calls the same method with the same arguments' shapes, in the same order. The
in-process `ThreadCommunicator` is a rendezvous of the device executor threads: each rank
leaves its buffer, one of them computes the result from all of them in rank order (so a
reduction is bit-identical from run to run and on every rank), and each rank takes its part.
`cross_process_communicator` (filled by a multi-process runtime, e.g. MPI) gives a
communicator for a group that spans devices of other processes.

In a compiled program a collective is a host call (primitives/parallel.py lowers it) that
reads `current()`: the `DeviceContext` the pmap/shard_map runner set on the executor thread
before it ran the program for one device. The optimized program splits it into `start` and
`done` (passes/async_collectives.py): the call then runs on the device's communication
thread, as that device, while the program computes on.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import math
import os
import queue
import threading
from typing import Callable, Sequence

import numpy as np

_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum, "prod": np.multiply}
# a rendezvous waits this long for the other ranks before giving up (a rank that never
# comes: a failed device program aborts the group sooner, see DeviceContext.abort)
RENDEZVOUS_TIMEOUT_S = 600.0


class Communicator:
  """The participants of one collective group: `size` ranks (the interface pmap's compiled
  collectives call; ThreadCommunicator here, an MPI one for many processes)."""
  size: int

  def all_reduce(self, rank: int, x: np.ndarray, op: str) -> np.ndarray:
    """op(x_0, ..., x_{size-1}) elementwise; op in "sum", "max", "min", "prod"."""
    raise NotImplementedError(f"{type(self).__name__} must define all_reduce")

  def all_gather(self, rank: int, x: np.ndarray) -> np.ndarray:
    """The ranks' x stacked along a new axis 0, in rank order."""
    raise NotImplementedError(f"{type(self).__name__} must define all_gather")

  def reduce_scatter(self, rank: int, x: np.ndarray, op: str) -> np.ndarray:
    """x.shape[0] == size: returns op(x_0, ..., x_{size-1})[rank]."""
    raise NotImplementedError(f"{type(self).__name__} must define reduce_scatter")

  def permute(self, rank: int, x: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """(src, dst) pairs: rank dst receives src's x; zeros where no pair sends to it."""
    raise NotImplementedError(f"{type(self).__name__} must define permute")

  def all_to_all(self, rank: int, x: np.ndarray) -> np.ndarray:
    """x.shape[0] == size: out[j] = x_j[rank]."""
    raise NotImplementedError(f"{type(self).__name__} must define all_to_all")


def _reduce(xs: Sequence[np.ndarray], op: str) -> np.ndarray:
  """op over xs in rank order (a fixed order: the same bits every run)."""
  fn = _REDUCE.get(op)
  if fn is None:
    raise ValueError(f"collective reduction op {op!r}: expected one of {sorted(_REDUCE)}")
  acc = np.array(xs[0], copy=True)
  for x in xs[1:]:
    fn(acc, x, out=acc)
  return acc


class ThreadCommunicator(Communicator):
  """A group of `size` threads of this process (the device executors): each call is a
  rendezvous; the last rank to arrive computes every rank's result from all the inputs."""

  def __init__(self, size: int):
    if size < 1:
      raise ValueError(f"ThreadCommunicator: size must be >= 1, got {size}")
    self.size = size
    self._barrier = threading.Barrier(size, timeout=RENDEZVOUS_TIMEOUT_S)
    self._slots: list = [None] * size
    self._results: list = [None] * size

  def abort(self) -> None:
    """Wake the ranks waiting here with an error (a participant failed)."""
    self._barrier.abort()

  def _exchange(self, rank: int, x, combine: Callable[[list], list]) -> np.ndarray:
    """Every rank leaves `x`; one computes `combine(all x in rank order)`, a list with one
    result per rank; each rank gets its own."""
    if not 0 <= rank < self.size:
      raise ValueError(f"rank {rank} is outside the group of {self.size}")
    if self.size == 1:
      return combine([x])[0]
    if self._barrier.broken:   # an earlier call was aborted: start a fresh rendezvous
      self._barrier.reset()
    self._slots[rank] = x
    try:
      if self._barrier.wait() == 0:
        self._results = combine(list(self._slots))
        self._slots = [None] * self.size
      self._barrier.wait()   # results ready; nobody writes slots of the next call before
      return self._results[rank]
    except threading.BrokenBarrierError:
      raise RuntimeError(f"collective over {self.size} devices aborted: another device's "
                         "program failed or did not reach the collective") from None

  def all_reduce(self, rank, x, op):
    return self._exchange(rank, x, lambda xs: [_reduce(xs, op)] * self.size).copy()

  def all_gather(self, rank, x):
    return self._exchange(rank, x, lambda xs: [np.stack(xs)] * self.size).copy()

  def reduce_scatter(self, rank, x, op):
    if x.shape[:1] != (self.size,):
      raise ValueError(f"reduce_scatter: operand shape {x.shape} must have leading "
                       f"dimension {self.size} (the group size)")
    return self._exchange(rank, x, lambda xs: list(_reduce(xs, op))).copy()

  def permute(self, rank, x, pairs):
    def combine(xs):
      out = [np.zeros_like(xs[0]) for _ in xs]
      for src, dst in pairs:
        out[dst] = xs[src]
      return out
    return np.array(self._exchange(rank, x, combine), copy=True)

  def all_to_all(self, rank, x):
    if x.shape[:1] != (self.size,):
      raise ValueError(f"all_to_all: operand shape {x.shape} must have leading dimension "
                       f"{self.size} (the group size)")
    return self._exchange(rank, x, lambda xs: [np.stack([xj[r] for xj in xs])
                                                for r in range(self.size)])


# Filled by a multi-process runtime: global device ids of a group -> its Communicator.
cross_process_communicator: Callable[[list], Communicator] | None = None

_thread_comms: dict[tuple, ThreadCommunicator] = {}
_comms_lock = threading.Lock()


def communicator(device_ids: Sequence[int], local_ids: frozenset) -> Communicator:
  """The communicator of the group of devices `device_ids` (global ids, rank order): the
  in-process one when all are `local_ids`, else the cross-process hook's."""
  key = tuple(device_ids)
  if not set(key) <= local_ids:
    if cross_process_communicator is None:
      raise RuntimeError(f"a collective over devices {list(key)} spans other processes, "
                         "but no multi-process runtime is initialized "
                         "(collectives.cross_process_communicator is None)")
    return cross_process_communicator(list(key))
  with _comms_lock:
    comm = _thread_comms.get(key)
    if comm is None:
      comm = _thread_comms[key] = ThreadCommunicator(len(key))
  return comm


# --- which device a running program is on ---------------------------------------------------

class DeviceContext:
  """One multi-device run's layout: the mesh of global device ids (an array whose axes are
  `axis_names`) and this thread's device. Groups of a collective are the devices that differ
  only along its axes (within one of `axis_index_groups`, when given)."""

  def __init__(self, device_ids: np.ndarray, axis_names: Sequence, local_ids: frozenset):
    self.device_ids = np.asarray(device_ids)
    self.axis_names = tuple(axis_names)
    self.local_ids = local_ids
    self.used: set = set()   # communicators this run called (aborted if a device fails)

  def coords(self, device_id: int) -> tuple:
    pos = np.argwhere(self.device_ids == device_id)
    return tuple(int(c) for c in pos[0])

  def axis_index(self, device_id: int, names: Sequence) -> int:
    """The row-major index of `device_id` over the mesh axes `names`."""
    coords = self.coords(device_id)
    index = 0
    for n in names:
      k = self.axis_names.index(n)
      index = index * self.device_ids.shape[k] + coords[k]
    return index

  def members(self, device_id: int, names: Sequence, axis_index_groups=None) -> list[int]:
    """The global ids of the group of `device_id` for a collective over `names`, in rank
    order."""
    coords = list(self.coords(device_id))
    axes = [self.axis_names.index(n) for n in names]
    members = []
    for sub in np.ndindex(*(self.device_ids.shape[k] for k in axes)):
      c = list(coords)
      for k, s in zip(axes, sub):
        c[k] = s
      members.append(int(self.device_ids[tuple(c)]))
    if axis_index_groups is not None:   # indices along `names` -> the group holding mine
      mine = members.index(device_id)
      grp = next(g for g in axis_index_groups if mine in g)
      members = [members[i] for i in grp]
    return members

  def group(self, device_id: int, names: Sequence, axis_index_groups=None
            ) -> tuple[Communicator, int]:
    """(communicator, rank) of the group of `device_id` for a collective over `names`."""
    members = self.members(device_id, names, axis_index_groups)
    comm = communicator(members, self.local_ids)
    self.used.add(comm)
    return comm, members.index(device_id)

  def prepare(self, uses: Sequence[tuple]) -> None:
    """Make, now and on this thread, the communicators of the groups holding this process's
    devices for each collective in `uses` ((axis names, axis_index_groups) pairs).

    A group spanning processes gets its cross-process communicator here rather than on the
    device threads when the collective first runs: making one is a collective call of the
    group's processes, so every process must make them in the same order. Each process walks
    the same uses and the same grid in the same order and makes the groups it belongs to, so
    the first group not yet made has all its processes at it (none can wait elsewhere)."""
    if self.local_ids >= set(int(d) for d in self.device_ids.flat):
      return   # all devices are this process's: thread rendezvous, made on first use
    seen = set()
    for names, groups in uses:
      for d in self.device_ids.flat:
        members = tuple(self.members(int(d), names, groups))
        if members not in seen and not self.local_ids.isdisjoint(members):
          seen.add(members)
          communicator(members, self.local_ids)

  def abort(self) -> None:
    for comm in self.used:
      if isinstance(comm, ThreadCommunicator):
        comm.abort()


class _Current(threading.local):
  ctx: DeviceContext | None = None
  device_id: int = 0


_current = _Current()


@contextlib.contextmanager
def on_device(ctx: DeviceContext, device_id: int):
  """Run the block as device `device_id` of the multi-device run `ctx`."""
  prev = _current.ctx, _current.device_id
  _current.ctx, _current.device_id = ctx, device_id
  try:
    yield
  except BaseException:
    ctx.abort()   # the other devices must not wait for this one at a collective
    raise
  finally:
    _current.ctx, _current.device_id = prev


def current() -> tuple[DeviceContext, int]:
  """(the run's context, this thread's device id) for a collective running now."""
  ctx = _current.ctx
  if ctx is None:
    raise RuntimeError("a compiled collective ran outside a multi-device pmap/shard_map run "
                       "(no device context on this thread)")
  return ctx, _current.device_id


def group_size(names: Sequence, sizes: dict, axis_index_groups=None) -> int:
  """How many devices a collective over `names` joins (mesh axis `sizes` by name)."""
  if axis_index_groups is not None:
    return len(axis_index_groups[0])
  return math.prod(sizes[n] for n in names)


# --- collectives in flight ------------------------------------------------------------------
# passes/async_collectives.py splits a collective's host call into a start, which hands the
# call to its device's communication thread and returns a ticket, and a done, which waits for
# the ticket's result; the device's program runs on between the two. One thread per device
# runs that device's collectives one after the other in the order they were started, which is
# program order on every device: the groups still meet in the same order everywhere.

class _CommThread:
  """A daemon thread running one device's collectives in the order they were handed over
  (daemon: one waiting at a rendezvous of a failed run does not hold up the exit)."""

  def __init__(self, device_id: int):
    self.queue: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=self._loop, name=f"ember-collectives-{device_id}",
                     daemon=True).start()

  def _loop(self) -> None:
    while True:
      future, fn = self.queue.get()
      try:
        future.set_result(fn())
      except BaseException as e:   # surfaces at the done that waits for it
        future.set_exception(e)

  def submit(self, fn: Callable) -> concurrent.futures.Future:
    future: concurrent.futures.Future = concurrent.futures.Future()
    self.queue.put((future, fn))
    return future


_comm_threads: dict[int, _CommThread] = {}
_in_flight: dict[int, concurrent.futures.Future] = {}
_tickets = itertools.count(1)
_async_lock = threading.Lock()


def _comm_thread(device_id: int) -> _CommThread:
  thread = _comm_threads.get(device_id)
  if thread is None:
    with _async_lock:
      thread = _comm_threads.get(device_id)
      if thread is None:
        thread = _comm_threads[device_id] = _CommThread(device_id)
  return thread


def _forget_threads_after_fork() -> None:   # a forked child has none of its parent's threads
  global _async_lock
  _comm_threads.clear()
  _in_flight.clear()
  _async_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_threads_after_fork)


def start(run: Callable, arrays: Sequence[np.ndarray]) -> int:
  """Start the collective host call `run(*arrays)` (arrays of its own: the caller's copies)
  on this device's communication thread, as this device of this run; its ticket."""
  ctx, device_id = current()

  def on_comm_thread():
    with on_device(ctx, device_id):   # aborts the run's groups if the collective fails
      return run(*arrays)
  ticket = next(_tickets) & 0x7FFFFFFF   # an s32 in the program (wraps after 2**31 calls)
  _in_flight[ticket] = _comm_thread(device_id).submit(on_comm_thread)
  return ticket


def done(ticket: int) -> list:
  """Wait for the collective `ticket` names and return its results."""
  return _in_flight.pop(ticket).result(timeout=RENDEZVOUS_TIMEOUT_S)

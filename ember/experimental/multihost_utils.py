"""`jax.experimental.multihost_utils`: moving host data between the processes of a
multi-process program (`ember.distributed.initialize`), over MPI's collectives. Results are
NumPy arrays, as in JAX; with one process they are the inputs as NumPy arrays."""
from __future__ import annotations

import zlib

import numpy as np

from ember._src.parallel import distributed
from ember._src.base.tree_util import public as _tree
from ember._src.core.sharding import PartitionSpec as P  # noqa: F401
from ember._src.parallel.host_local import (  # noqa: F401
    ProcessFailureError, global_array_to_host_local_array, host_local_array_to_global_array,
    reached_preemption_sync_point)

tree_all, tree_map = _tree.tree_all, _tree.tree_map  # as users' pytrees (keys are leaves)


def process_allgather(in_tree, tiled: bool = False):
  """Every process's leaves: stacked on a new axis 0 (process order), or concatenated along
  axis 0 when `tiled` (scalars are stacked either way)."""
  comm = distributed.process_communicator()

  def gather(x):
    x = np.asarray(x)
    if comm is None:
      return x if tiled else x[None]
    if x.ndim == 0 or not tiled:
      x = x[None]
    rows = comm.all_gather(distributed.process_index(), x)
    return rows.reshape((-1,) + x.shape[1:])
  return tree_map(gather, in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
  """The source process's leaves on every process (process 0 is the source unless
  `is_source` says otherwise); each leaf must have the same shape on every process. As in JAX
  it is a sum over processes of the source's values and the others' zeros."""
  comm = distributed.process_communicator()
  if comm is None:
    return tree_map(np.asarray, in_tree)
  me = distributed.process_index()
  if is_source is None:
    is_source = me == 0

  def broadcast(x):
    x = np.asarray(x)
    return comm.all_reduce(me, x if is_source else np.zeros_like(x), "sum")
  return tree_map(broadcast, in_tree)


def sync_global_devices(name: str) -> None:
  """A barrier across all processes; raises if they passed different `name`s."""
  h = np.uint32(zlib.crc32(name.encode()))
  assert_equal(h, f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree, fail_message: str = "") -> None:
  """Raise AssertionError unless every process passed the same tree of values."""
  if distributed.process_communicator() is None:
    return  # one process agrees with itself
  gathered = process_allgather(in_tree, tiled=True)

  def expected(x):
    x = np.asarray(x)
    return np.concatenate([x[None] if x.ndim == 0 else x] * distributed.process_count())
  same = tree_map(lambda e, g: bool(np.array_equal(e, g)), tree_map(expected, in_tree),
                  gathered)
  if not tree_all(same):
    raise AssertionError(f"{fail_message}. Expected: {gathered}; got: {in_tree}.")

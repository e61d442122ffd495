"""Running one program on several devices: the runner under multi-device pmap and shard_map.

The per-device function is traced once (per signature) with the mesh axes bound as device
axes (batching.spmd_axes), so its collectives stay collectives; it is compiled once, and
each device's executor runs the same executable on that device's arguments, concurrently,
inside a `collectives.DeviceContext` that tells each collective which device it runs for.
The calls of one run are queued on all the devices' executors under one lock, so every
executor sees the multi-device runs in the same order and their collectives always meet.

After ember.distributed.initialize() the grid may hold other processes' devices: each process
runs the program on its own devices of the grid (every process makes the same calls, as in
JAX's multi-controller model), and a collective whose group spans processes goes through
`collectives.cross_process_communicator`; those groups' communicators are made before the
devices start (DeviceContext.prepare), in the same order on every process.
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

import numpy as np

from ember._src import core, tree_util
from ember._src.jit import JitWrapped, _compile_locked
from ember._src.runtime import collectives, executor
from ember._src.runtime.array import Array, PlacedArray, place
from ember._src.sharding import _DEVICES
from ember._src.transforms import batching

_submit_lock = threading.Lock()


class SpmdFunction:
  """`fun(*flat per-device arguments) -> pytree`, compiled as one device's program of a
  mesh with `axis_sizes` (name -> size), run on every device of a device grid."""

  def __init__(self, fun: Callable, axis_sizes: dict, name: str):
    self.axis_sizes = dict(axis_sizes)
    self.jitted = JitWrapped(fun)
    self.jitted.__name__ = name

  def run(self, device_grid: np.ndarray, axis_names: Sequence, per_device: dict
          ) -> tuple[dict, object]:
    """Run on each device d of `device_grid` (an array of Devices, one axis per name of
    `axis_names`) that is this process's, with flat arguments `per_device[d]`; returns
    ({device: [output Arrays committed to it]} for those devices, the outputs' tree)."""
    local_ids = frozenset(d.id for d in _DEVICES)
    devices = [d for d in device_grid.flat if d.id in local_ids]
    if not devices:
      raise ValueError(f"{self.jitted.__name__}: none of the devices {list(device_grid.flat)} "
                       f"is this process's ({list(_DEVICES)})")
    with batching.spmd_axes(self.axis_sizes):
      entry, _ = self.jitted._lookup(tuple(per_device[devices[0]]), {})
      comp = entry.compiled or _compile_locked(entry)
    consts = list(entry.staged.consts)
    out_specs = [(a.shape, a.dtype, a.weak_type) for a in comp.out_avals]
    ids = np.vectorize(lambda d: d.id, otypes=[int])(device_grid)
    ctx = collectives.DeviceContext(ids, axis_names, local_ids)
    outs = {}
    with _submit_lock:
      ctx.prepare(collective_uses(entry.staged.jaxpr, axis_names))
      for dev in devices:
        pending = executor.Pending()
        executor.get_executor(dev.id).submit(
            _device_call(comp, ctx, dev.id, [*consts, *per_device[dev]]), pending)
        outs[dev] = [place(Array._pending(sh, dt, w, pending, k), dev)
                     for k, (sh, dt, w) in enumerate(out_specs)]
    return outs, entry.staged.out_tree


def _device_call(comp, ctx, device_id: int, args: list) -> Callable[[], list]:
  def call():
    with collectives.on_device(ctx, device_id):
      res = comp.run(args, device=device_id)   # on the executor thread: runs now
      return [np.asarray(r._value) for r in res]
  return call


# the collectives a device program runs through a communicator, and where their axes are
_COLLECTIVE_AXES = {"psum": "axes", "pmax": "axes", "pmin": "axes", "all_gather": "axis_name",
                    "reduce_scatter": "axis_name", "all_to_all": "axis_name",
                    "ppermute": "axis_name"}


def collective_uses(jaxpr: core.Jaxpr, axis_names: Sequence) -> list[tuple]:
  """The (mesh axis names, axis_index_groups) of each distinct collective over device axes in
  `jaxpr` and its sub-jaxprs, in program order."""
  uses = []
  for j in (jaxpr, *core.subjaxprs(jaxpr)):
    for eqn in j.eqns:
      key = _COLLECTIVE_AXES.get(eqn.primitive.name)
      if key is None:
        continue
      axes = eqn.params[key]
      names = tuple(a for a in (axes if isinstance(axes, tuple) else (axes,))
                    if a in axis_names)
      use = (names, eqn.params.get("axis_index_groups"))
      if names and use not in uses:
        uses.append(use)
  return uses


def host_args(leaves: Sequence) -> list:
  """Arguments for a device call: an Array committed to one device as itself (its own
  device's executor runs it in order), anything else as its host value."""
  out = []
  for x in leaves:
    if type(x) is PlacedArray and x._shards is None:
      out.append(x)
    elif isinstance(x, Array):
      out.append(x._value)
    else:
      out.append(x)
  return out


def device_piece(x, index: tuple, device) -> object:
  """The piece `index` of `x` for `device`: its shard when `x` is split so that device
  holds exactly that piece, else a slice of its host value."""
  if type(x) is PlacedArray and x._shards is not None and device in x._shards:
    if x._sharding.devices_indices_map(x.shape).get(device) == index:
      return x._shards[device]
  return np.ascontiguousarray(np.asarray(x)[index])


def unflatten_outputs(tree, outs: list):
  return tree_util.tree_unflatten(tree, outs)

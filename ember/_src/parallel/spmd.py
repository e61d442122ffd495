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
import weakref
from typing import Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import tree_util
from ember._src.parallel.all_reduce_grouping import group_all_reduces
from ember._src.driver import jit as jit_lib
from ember._src.base.config import config
from ember._src.driver.jit import PjitFunction, _compile_locked
from ember._src.runtime import collectives, executor
from ember._src.core.array import Array, PlacedArray, from_shards, place
from ember._src.core.sharding import _DEVICES, NamedSharding, PartitionSpec, _as_sharding, _context
from ember._src.driver.sharding_propagation import (
    Partitioner, constraint_sharding, replicated, spec_of)
from ember._src.transforms import batching

_submit_lock = threading.Lock()


class SpmdFunction:
  """`fun(*flat per-device arguments) -> pytree`, compiled as one device's program of a
  mesh with `axis_sizes` (name -> size), run on every device of a device grid."""

  def __init__(self, fun: Callable, axis_sizes: dict, name: str):
    self.axis_sizes = dict(axis_sizes)
    self.jitted = PjitFunction(fun)
    self.jitted.__name__ = name

  def run(self, device_grid: np.ndarray, axis_names: Sequence, per_device: dict
          ) -> tuple[dict, object]:
    """Run on each device d of `device_grid` (an array of Devices, one axis per name of
    `axis_names`) that is this process's, with flat arguments `per_device[d]`; returns
    ({device: [output Arrays committed to it]} for those devices, the outputs' tree)."""
    launch = self.launch(device_grid, axis_names, per_device)
    return launch(per_device), launch.out_tree

  def launch(self, device_grid: np.ndarray, axis_names: Sequence, per_device: dict
             ) -> "DeviceLaunch":
    """The compiled program for arguments like `per_device`'s, ready to run on the grid."""
    local_ids = frozenset(d.id for d in _DEVICES)
    devices = [d for d in device_grid.flat if d.id in local_ids]
    if not devices:
      raise ValueError(f"{self.jitted.__name__}: none of the devices {list(device_grid.flat)} "
                       f"is this process's ({list(_DEVICES)})")
    with batching.spmd_axes(self.axis_sizes):
      entry, _ = self.jitted._lookup(tuple(per_device[devices[0]]), {})
      comp = entry.compiled or _compile_locked(entry)
    return DeviceLaunch(entry, comp, device_grid, axis_names, local_ids, devices)


class DeviceLaunch:
  """One compiled per-device program on a device grid, with what each run needs worked out
  once: its constants, output avals, this process's devices, the collectives' groups."""
  __slots__ = ("comp", "consts", "out_specs", "ids", "axis_names", "local_ids", "devices",
               "uses", "out_tree")

  def __init__(self, entry, comp, device_grid, axis_names, local_ids, devices):
    self.comp, self.consts = comp, list(entry.staged.consts)
    self.out_specs = [(a.shape, a.dtype, a.weak_type) for a in comp.out_avals]
    self.ids = np.vectorize(lambda d: d.id, otypes=[int])(device_grid)
    self.axis_names, self.local_ids, self.devices = axis_names, local_ids, devices
    self.uses = collective_uses(entry.staged.jaxpr, axis_names)
    self.out_tree = entry.staged.out_tree

  def __call__(self, per_device: dict) -> dict:
    """{device: [output Arrays committed to it]} of a run on flat arguments `per_device[d]`
    (the types and shapes the program was compiled for)."""
    ctx = collectives.DeviceContext(self.ids, self.axis_names, self.local_ids)
    comp, consts, out_specs = self.comp, self.consts, self.out_specs
    outs = {}
    with _submit_lock:
      ctx.prepare(self.uses)
      for dev in self.devices:
        pending = executor.Pending()
        executor.get_executor(dev.id).submit(
            _device_call(comp, ctx, dev.id, [*consts, *per_device[dev]]), pending)
        outs[dev] = [place(Array._pending(sh, dt, w, pending, k), dev)
                     for k, (sh, dt, w) in enumerate(out_specs)]
    return outs


def _device_call(comp, ctx, device_id: int, args: list) -> Callable[[], list]:
  def call():
    with collectives.on_device(ctx, device_id):
      res = comp.run(args, device=device_id)   # on the executor thread: runs now
      return [np.asarray(r._value) for r in res]
  return call


# the collectives a device program runs through a communicator, and where their axes are
_COLLECTIVE_AXES = {"psum": "axes", "pmax": "axes", "pmin": "axes", "all_reduce_group": "axes",
                    "all_gather": "axis_name",
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
  return [_host_arg(x) for x in leaves]


def _host_arg(x):
  if type(x) is PlacedArray and x._shards is None:
    return x
  if isinstance(x, Array):
    return x._value
  return x


def device_piece(x, index: tuple, device) -> object:
  """The piece `index` of `x` for `device`: its shard when `x` is split so that device
  holds exactly that piece, else a slice of its host value."""
  if type(x) is PlacedArray and x._shards is not None and device in x._shards:
    if x._sharding.devices_indices_map(x.shape).get(device) == index:
      return x._shards[device]
  return np.asarray(np.asarray(x)[index], order="C")   # (0-d stays 0-d)


def unflatten_outputs(tree, outs: list):
  return tree_util.tree_unflatten(tree, outs)


# --- jit over committed and split arrays --------------------------------------------------
# A top-level jit call whose arguments are committed (device_put to a device or a sharding),
# or whose jit names in_shardings/out_shardings or constrains values inside over several
# devices, runs where those say: on the one device all its committed arguments are on, or
# partitioned over a mesh (driver/sharding_propagation.py) and run on every device of it.

def _plan_key(wrapped: PjitFunction, leaves: list, shardings) -> tuple:
  return (id(wrapped), tuple([x._sharding if type(x) is PlacedArray else None for x in leaves]),
          None if shardings is None else _context.mesh,
          config._values["ember_group_all_reduces"])


def placed_runner(wrapped: PjitFunction, entry, leaves: list) -> Callable | None:
  """For jit's fast path: flat leaves -> the result, by the plan call_placed made for calls
  placed like `leaves` (without in/out_shardings) under the all-reduce grouping flag of now
  (another setting takes call_placed's way); None if there is no such plan."""
  values = config._values
  grouped = values["ember_group_all_reduces"]
  plan = (entry.plans or {}).get(_plan_key(wrapped, leaves, None))
  if plan is None or plan[0]() is not wrapped:
    return None
  run = plan[1]

  def runner(leaves):
    if values["ember_group_all_reduces"] == grouped:
      return run(leaves)
    return call_placed(wrapped, entry, leaves, None)
  return runner


def call_placed(wrapped: PjitFunction, entry, leaves: list, shardings) -> object:
  """The result of the jitted call `entry` on flat `leaves`, run where they are placed
  (`shardings`: the jit's (in_shardings, out_shardings) or None); None when nothing places
  the call (the caller runs it as usual).

  Where a call runs depends only on its arguments' placements (and the mesh in context,
  which in/out_shardings' PartitionSpecs name, and the all-reduce grouping), so that is
  worked out once per placement (`_plan`: the checks, the mesh, how each device takes its
  pieces, the compiled program, the outputs' shardings) and later calls only run it."""
  key = _plan_key(wrapped, leaves, shardings)
  plans = entry.plans
  if plans is None:
    plans = entry.plans = {}
  plan = plans.get(key)
  if plan is not None and plan[0]() is wrapped:   # (not a dead jit's plan of the same id)
    return plan[1](leaves)
  run, first = _plan(wrapped, entry, leaves, shardings)
  plans[key] = (weakref.ref(wrapped), run)
  plans_made[0] += 1
  return first


# how many placement plans call_placed has made (tests: later calls take the cached one)
plans_made = [0]


def _no_placement(leaves):
  return None


def _plan(wrapped, entry, leaves, shardings) -> tuple[Callable, object]:
  """(how calls placed like `leaves` run: flat leaves -> the result, or None when nothing
  places them; the result of this call)."""
  staged = entry.staged
  in_sh = out_sh = None
  if shardings is not None:
    in_sh = _flat_shardings("in_shardings", shardings[0], staged.in_tree, kws=True)
    out_tree = staged.out_tree
    if entry.refs is not None:   # the shardings name the outputs, not the refs' new values
      out_tree = out_tree.children[0]
      in_sh += [None] * len(entry.refs.captured)
    out_sh = _flat_shardings("out_shardings", shardings[1], out_tree)
    out_sh += [None] * (staged.out_tree.num_leaves - out_tree.num_leaves)
  mesh = _call_mesh(wrapped, staged, leaves, in_sh, out_sh)
  if mesh is not None:
    return _partitioned_plan(wrapped, entry, leaves, mesh, in_sh, out_sh)
  device = _committed_device(wrapped, staged, leaves)
  if device is None:
    single = {next(iter(s.device_set)) for s in (in_sh or []) + (out_sh or []) if s is not None}
    if len(single) != 1:
      return _no_placement, None
    device = single.pop()
  run = _one_device_plan(staged, entry.compiled or _compile_locked(entry), device, out_sh)
  return run, run(leaves)


def _one_device_plan(staged, comp, device, out_sh) -> Callable:
  """Calls run on `device`, their outputs committed to it (one device's out_shardings
  reported as given)."""
  consts, dev_id, out_tree = staged.consts, device.id, staged.out_tree
  given = [(k, s) for k, s in enumerate(out_sh or []) if s is not None]

  def run(leaves):
    outs = [place(o, device) for o in comp.run([*consts, *leaves], device=dev_id)]
    for k, s in given:
      outs[k] = from_shards(outs[k].shape, outs[k].dtype, outs[k].weak_type, s,
                            {device: outs[k]})
    return out_tree.unflatten(outs)
  return run


def _flat_shardings(what: str, tree_prefix, tree, kws: bool = False) -> list:
  """One Sharding (or None) per flat leaf of `tree`, from a jit's in_/out_shardings (one
  sharding for all, or a tree prefix; PartitionSpecs over the mesh in context)."""
  if tree_prefix is None:
    return [None] * tree.num_leaves
  if isinstance(tree_prefix, list):
    tree_prefix = tuple(tree_prefix)
  flat = batching.flatten_axes(f"jit {what}", tree, (tree_prefix, None) if kws else
                               tree_prefix, kws=kws)
  return [None if s is None else _as_sharding(s, f"jit {what}") for s in flat]


def _arg_desc(staged, leaves, k: int) -> str:
  names = staged.arg_names[len(staged.consts):]
  aval = core.get_aval(leaves[k])
  name = names[k] if k < len(names) else f"args[{k}]"
  return f"argument {name} of {staged.name} with shape {aval.str_short()}"


def _ids(devs) -> str:
  return f"with device ids {sorted(d.id for d in devs)} on platform CPU"


def _incompatible(first: str, second: str) -> ValueError:
  return ValueError(f"Received incompatible devices for jitted computation. Got {first} and "
                    f"{second}")


def _committed_device(wrapped, staged, leaves):
  """The one device the committed (single-device) arguments are on, None without any; JAX's
  incompatible-devices error when they are on different devices."""
  device, first = None, None
  for k, x in enumerate(leaves):
    if type(x) is PlacedArray and x._shards is None:
      d = x.device
      if device is None:
        device, first = d, k
      elif d != device:
        raise _incompatible(f"{_arg_desc(staged, leaves, first)} and {_ids([device])}",
                            f"{_arg_desc(staged, leaves, k)} and {_ids([d])}")
  return device


def _call_mesh(wrapped, staged, leaves, in_sh, out_sh):
  """The mesh of several devices the call is partitioned over (from in_/out_shardings, the
  arguments split over devices, the sharding constraints inside), or None."""
  found = []   # (what, mesh)
  for k, s in enumerate(in_sh or []):
    if s is not None and len(s.device_set) > 1:
      found.append((f"in_shardings of {_arg_desc(staged, leaves, k)}", s))
  for k, x in enumerate(leaves):
    if type(x) is PlacedArray and len(x._sharding.device_set) > 1:
      found.append((_arg_desc(staged, leaves, k), x._sharding))
  found += [("out_shardings", s) for s in out_sh or [] if s is not None
            and len(s.device_set) > 1]
  inner = constraint_sharding(staged.jaxpr)
  if inner is not None:
    found.append(("a sharding constraint inside", inner))
  if not found:
    return None
  what, s0 = found[0]
  for what_k, s in found[1:]:
    if not (isinstance(s, NamedSharding) and isinstance(s0, NamedSharding)
            and s.mesh == s0.mesh):
      raise _incompatible(f"{what} {_ids(s0.device_set)}", f"{what_k} {_ids(s.device_set)}")
  if not isinstance(s0, NamedSharding):
    raise NotImplementedError(f"jit over {s0}: ember partitions jit over NamedShardings")
  for k, x in enumerate(leaves):   # a committed argument must be on the mesh too
    if type(x) is PlacedArray and x._shards is None:
      raise _incompatible(f"{_arg_desc(staged, leaves, k)} and {_ids([x.device])}",
                          f"{what} {_ids(s0.device_set)}")
  return s0.mesh


def _arg_spec(x, mesh, ndim: int, sizes: dict) -> tuple:
  """How a flat argument arrives: split as its own sharding when it is split over `mesh`
  (each device takes its own piece as it is, also of an array spanning processes), else
  whole (every process passes the whole value; each device slices its piece)."""
  if type(x) is PlacedArray and x._shards is not None and \
      getattr(x._sharding, "mesh", None) == mesh:
    return spec_of(x._sharding, ndim, sizes)
  return replicated(ndim)


def _want_spec(x, s, mesh, ndim: int, sizes: dict) -> tuple:
  """How the program takes a flat argument: its in_sharding's split, else as it arrives."""
  return _arg_spec(x, mesh, ndim, sizes) if s is None else spec_of(s, ndim, sizes)


def _pspec(spec: tuple):
  """A partition spec of the propagation's Spec (trailing whole dims dropped)."""
  entries = [None if not a else a[0] if len(a) == 1 else a for a in spec]
  while entries and entries[-1] is None:
    entries.pop()
  return PartitionSpec(*entries)


def _partitioned_plan(wrapped, entry, leaves, mesh, in_sh, out_sh) -> tuple[Callable, object]:
  """Calls partitioned over `mesh` (sharding propagation), run on this process's devices of
  it (the mesh may span processes: each runs its own, collectives between): (the runner,
  this call's result)."""
  staged = entry.staged
  sizes = dict(mesh.shape)
  in_avals = [core.get_aval(c) for c in staged.consts] + [core.get_aval(x) for x in leaves]
  in_sh = [None] * len(staged.consts) + list(in_sh or [None] * len(leaves))
  args = [*staged.consts, *leaves]
  arrives = tuple(_arg_spec(x, mesh, a.ndim, sizes) for x, a in zip(args, in_avals))
  specs = tuple(_want_spec(x, s, mesh, a.ndim, sizes)
                for x, s, a in zip(args, in_sh, in_avals))
  out_avals = staged.jaxpr.out_avals
  wants = tuple(None if s is None else spec_of(s, a.ndim, sizes)
                for s, a in zip(out_sh or [None] * len(out_avals), out_avals))
  group = bool(config.read("ember_group_all_reduces"))
  key = (mesh, arrives, specs, wants, group)
  programs = entry.programs if entry.programs is not None else {}
  entry.programs = programs
  prog = programs.get(key)
  if prog is None:
    prog = programs[key] = _partitioned_program(staged, sizes, arrives, specs, wants, group,
                                                wrapped.__name__)
  fun, out_specs = prog
  mine = frozenset(d.id for d in _DEVICES)
  devices = [dev for dev in mesh.devices.flat if dev.id in mine]
  takes = [_piece_takes(x, NamedSharding(mesh, _pspec(spec)).devices_indices_map(a.shape),
                        devices)
           for x, spec, a in zip(args, arrives, in_avals)]
  n_consts = len(staged.consts)
  const_pieces = [[_host_arg(device_piece(c, take[i][0], dev))
                   for c, take in zip(staged.consts, takes)] for i, dev in enumerate(devices)]
  leaf_takes = takes[n_consts:]

  def pieces(leaves) -> dict:
    """Each device's flat arguments: the constants' pieces, then each leaf's: the shard it
    holds when split as the program takes it, else a slice of its host value."""
    per_device = {}
    for i, dev in enumerate(devices):
      args = list(const_pieces[i])
      for x, take in zip(leaves, leaf_takes):
        index, own = take[i]
        shard = x._shards.get(dev) if own else None
        args.append(_host_arg(shard) if shard is not None
                    else np.asarray(np.asarray(x)[index], order="C"))
      per_device[dev] = args
    return per_device

  first = pieces(leaves)
  launch = fun.launch(mesh.devices, mesh.axis_names, first)   # traced on the first call:
  outs_as = []                                                 # out_specs known from here
  for k, (aval, spec) in enumerate(zip(out_avals, out_specs)):
    s = (out_sh[k] if out_sh and out_sh[k] is not None
         else NamedSharding(mesh, _pspec(spec)))
    outs_as.append((aval.shape, aval.dtype, aval.weak_type, s,
                    s.devices_indices_map(tuple(aval.shape))))
  out_tree = staged.out_tree

  def assemble(outs: dict):
    return out_tree.unflatten([from_shards(shape, dtype, weak, s,
                                           {dev: o[k] for dev, o in outs.items()}, indices)
                               for k, (shape, dtype, weak, s, indices) in enumerate(outs_as)])

  def run(leaves):
    return assemble(launch(pieces(leaves)))
  return run, assemble(launch(first))


def _piece_takes(x, index_map: dict, devices: list) -> list[tuple]:
  """For each device: (the index of its piece of `x`, whether `x` is split so that the
  device's own shard is exactly that piece)."""
  own = (x._sharding.devices_indices_map(x.shape)
         if type(x) is PlacedArray and x._shards is not None else {})
  return [(index_map[dev], own.get(dev) == index_map[dev]) for dev in devices]


def _partitioned_program(staged, sizes, arrives, specs, wants, group, name):
  """(the SpmdFunction of one device's program of `staged`, its arguments' pieces split as
  `arrives` and brought to `specs`; the outputs' specs: `wants` where given, else what
  propagation gives, filled when it is traced). `group`: independent all-reduces grouped."""
  out_specs: list = []

  def partitioned(*flat):
    p = Partitioner(sizes)
    flat = [p.reshard(x, a, s) for x, a, s in zip(flat, arrives, specs)]
    outs, got = p.run(staged.jaxpr, (), flat, specs)
    final = [g if w is None else w for g, w in zip(got, wants)]
    outs = [p.reshard(o, g, f) for o, g, f in zip(outs, got, final)]
    out_specs[:] = final
    return outs

  def per_device(*flat):   # traced once more, to group its all-reduces
    jaxpr, _ = core.trace_to_jaxpr(lambda *xs: (partitioned(*xs), None),
                                   [core.get_aval(x) for x in flat])
    return core.eval_jaxpr(group_all_reduces(jaxpr), jaxpr.consts, *flat)
  return SpmdFunction(per_device if group else partitioned, sizes, name), out_specs


jit_lib.call_placed[0] = call_placed
jit_lib.placed_runner[0] = placed_runner

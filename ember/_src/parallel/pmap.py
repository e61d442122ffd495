"""pmap and shard_map: run a function once per device, over slices of its inputs.

With several devices (ember.devices(), see core/sharding.py) a top-level call runs one compiled
program per device, concurrently on the devices' executors, with the collectives
(`lax.psum(x, axis_name)`, all_gather, ppermute, ...) exchanged between the devices
(parallel/spmd.py, runtime/collectives.py); the results are arrays split over the devices.

On one device, and inside a trace (jit of a pmap), `pmap(f)` is
`jit(vmap(f, in_axes, out_axes, axis_name))`: the same values, computed on one device; a
multi-device shard_map inside a trace is likewise a vmap over the mesh axes.
Either way a mapped axis longer than the devices available is an error, as in JAX.

After ember.distributed.initialize() (many processes) pmap works as JAX's multi-process pmap:
each process passes the leading axis of its own devices (local_device_count(), or fewer), the
mapped axis spans every process's devices (`psum(x, 'i')` sums over all of them), and the
outputs are this process's part. shard_map takes a mesh over all processes' devices
(jax.make_mesh's default), each process passing arrays whose pieces on its devices it holds.
"""
from __future__ import annotations

import functools
import math
from typing import Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.parallel import spmd
from ember._src.base import tree_util
from ember._src.driver.jit import jit
from ember._src.primitives import structural
from ember._src.core.array import from_shards
from ember._src.core.sharding import (
    AbstractMesh, Mesh, NamedSharding, PartitionSpec, check_placeable, context_mesh)
from ember._src.core.sharding import devices as all_devices
from ember._src.core.sharding import local_devices
from ember._src.parallel.distributed import process_count
from ember._src.transforms.batching import flatten_axes, shape_of, vmap


def _as_tuple(nums) -> tuple:
  return (nums,) if isinstance(nums, int) else tuple(nums)


def _split_static(args: tuple, static_argnums: tuple) -> tuple[tuple, tuple]:
  """(the static arguments as (index, value) pairs, the dynamic arguments)."""
  n = len(args)
  static = sorted({i % n for i in static_argnums if -n <= i < n})
  return (tuple((i, args[i]) for i in static),
          tuple(a for i, a in enumerate(args) if i not in static))


def _rebuild(static: tuple, dyn: tuple) -> list:
  """All the arguments, in order, from _split_static's parts."""
  fixed, rest = dict(static), iter(dyn)
  return [fixed[i] if i in fixed else next(rest) for i in range(len(static) + len(dyn))]


def _check_devices(name: str, dyn: tuple, kwargs: dict, in_axes, axis_size, ndev: int):
  """The mapped axis must exist and fit on the devices (JAX's check before compiling)."""
  leaves, tree = tree_util.tree_flatten((dyn, kwargs))
  dims = flatten_axes("pmap in_axes", tree, (in_axes, 0), kws=True)
  mapped = [(shape_of(x), d) for x, d in zip(leaves, dims) if d is not None]
  if not mapped and axis_size is None:
    raise ValueError("pmap requires at least one argument with a mapped axis.")
  # an axis out of range is vmap's error, reported when it maps
  sizes = {shape[d] for shape, d in mapped if -len(shape) <= d < len(shape)}
  sizes |= {axis_size} if axis_size is not None else set()
  if not sizes:
    return
  n = max(sizes)
  if n > ndev:
    raise ValueError(f"compiling computation `{name}` that requires {n} logical devices, "
                     f"but only {ndev} XLA devices are available (num_replicas={n}); "
                     "ask for more with jax.config.update('jax_num_cpu_devices', N) "
                     "right after importing (or EMBER_NUM_CPU_DEVICES=N, or XLA_FLAGS="
                     "--xla_force_host_platform_device_count=N), or use vmap.")


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums: int | Sequence[int] = (), devices=None, backend=None,
         axis_size: int | None = None, donate_argnums: int | Sequence[int] = (),
         global_arg_shapes=None):
  """Parallel map over the leading axis (size at most the number of devices, here 1).

  `in_axes`/`out_axes` as in vmap (a tuple `in_axes` has an entry for every positional
  argument, static ones included); `static_broadcasted_argnums` are hashable arguments
  passed to every slice unchanged (a new value recompiles); `donate_argnums` as in jit.
  `global_arg_shapes` is unused, as in JAX.
  """
  if not callable(fun):
    raise TypeError(f"pmap expects a callable, got {type(fun).__name__}: {fun!r}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  static_nums = _as_tuple(static_broadcasted_argnums)
  if devices is None and backend not in (None, "cpu"):
    all_devices(backend)   # the error for an unknown backend, now (not starting the CPU one)
  name = getattr(fun, "__name__", "pmap_fun")

  def dyn_in_axes(static: tuple):
    if not isinstance(in_axes, tuple):
      return in_axes
    skip = {i for i, _ in static}
    return tuple(a for i, a in enumerate(in_axes) if i not in skip)

  def layout():
    """(the devices, this process's, how many of them, whether others' are among them), read
    at each call: ember.distributed.initialize() may come after pmap()."""
    devs = list(devices) if devices is not None else all_devices(backend)
    mine = set(local_devices())
    ndev = sum(d in mine for d in devs)   # the mapped axis is at most this process's devices
    return devs, mine, ndev, len(devs) > ndev

  def mapped(static, *dyn, **kwargs):
    axes = dyn_in_axes(static)
    _check_devices(f"pmap_{name}", dyn, kwargs, axes, axis_size, layout()[2])
    per_slice = lambda *d, **kw: fun(*_rebuild(static, d), **kw)
    return vmap(per_slice, axes, out_axes, axis_name, axis_size)(*dyn, **kwargs)

  compiled = {}  # the jit of `mapped`, per donated positions (they depend on len(args))
  programs = {}  # multi-device: (static args, tree, axes, size) -> its SpmdFunction

  def on_devices(static, dyn, kwargs, devs, mine, ndev, multi_process):
    """The multi-device run: one program per device, collectives between them."""
    axes = dyn_in_axes(static)
    _check_devices(f"pmap_{name}", dyn, kwargs, axes, axis_size, ndev)
    leaves, tree = tree_util.tree_flatten((dyn, kwargs))
    dims = flatten_axes("pmap in_axes", tree, (axes, 0), kws=True)
    sizes = {shape_of(x)[d] for x, d in zip(leaves, dims) if d is not None}
    n = axis_size if axis_size is not None else sizes.pop()
    if sizes - {n}:
      raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                       f"{sorted(sizes | {n})}")
    grid = _device_grid(devs, n, devices is not None) if multi_process else devs[:n]
    key = (static, tree, tuple(dims), len(grid))
    prog = programs.get(key)
    if prog is None:
      def per_device(*flat):
        d_args, d_kwargs = tree_util.tree_unflatten(tree, list(flat))
        return fun(*_rebuild(static, d_args), **d_kwargs)
      prog = programs[key] = spmd.SpmdFunction(per_device, {axis_name: len(grid)},
                                               f"pmap_{name}")
    here = [dev for dev in grid if dev in mine]   # this process's, in grid order
    if len(here) != n:
      raise ValueError(f"pmap over devices={devs} of several processes: each process maps "
                       f"an axis of its own devices among them ({len(here)} here), got {n}")
    grid = _object_array(grid)
    per_device_args = {dev: spmd.host_args([_slice(x, d, i, dev) for x, d in zip(leaves, dims)])
                       for i, dev in enumerate(here)}
    outs, out_tree = prog.run(grid, (axis_name,), per_device_args)
    out_dims = flatten_axes("pmap out_axes", out_tree, out_axes)
    mesh = Mesh(_object_array(here), (_mesh_name(axis_name),))
    results = [_stack(mesh, [outs[dev][k] for dev in here], d)
               for k, d in enumerate(out_dims)]
    return tree_util.tree_unflatten(out_tree, results)

  @functools.wraps(fun, updated=())
  def pmap_f(*args, **kwargs):
    static, dyn = _split_static(args, static_nums)
    devs, mine, ndev, multi_process = layout()
    if (ndev > 1 or multi_process) and core.cur_level_is_eval() and not any(
        isinstance(x, core.Tracer) for x in tree_util.tree_leaves((dyn, kwargs))):
      return on_devices(static, dyn, kwargs, devs, mine, ndev, multi_process)
    if multi_process:   # vmap on one device would reduce over this process's slices only
      raise NotImplementedError(
          f"pmap of {name} over the devices of {process_count()} processes inside jit (or "
          "another transformation): ember runs a pmap spanning processes only at top level; "
          "call it outside jit")
    return one_program(len(args), static)(static, *dyn, **kwargs)

  def one_program(nargs: int, static: tuple):
    """The jit of `mapped` (the whole mapped axis as one program) for `nargs` arguments."""
    donate = _donated_positions(nargs, static, _as_tuple(donate_argnums))
    if donate not in compiled:
      compiled[donate] = jit(mapped, static_argnums=0, donate_argnums=donate)
    return compiled[donate]

  def lower(*args, **kwargs):
    """JAX's `pmap(f).lower(*args)`: the whole mapped axis lowered as one program; its
    Compiled takes the dynamic arguments only (static_broadcasted_argnums left out), as
    JAX's, and computes on one device."""
    static, dyn = _split_static(args, static_nums)
    if layout()[3]:
      raise NotImplementedError(f"pmap({name}).lower over the devices of {process_count()} "
                                "processes: ember lowers a pmap of one process's devices")
    return one_program(len(args), static).lower(static, *dyn, **kwargs)

  pmap_f.lower = lower
  return pmap_f


def _device_grid(devs: list, n: int, given: bool) -> list:
  """The devices of a pmap spanning processes: `devs` itself when the user gave them (this
  process's among them take the `n` slices), else the first `n` devices of every process, in
  process order (every process passes `n` slices, as in JAX)."""
  if given:
    return devs
  grid = []
  for p in sorted({d.process_index for d in devs}):
    theirs = [d for d in devs if d.process_index == p]
    if len(theirs) < n:
      raise ValueError(f"pmap over {n} devices of each process: process {p} has only "
                       f"{len(theirs)} ({theirs}); every process passes the same leading "
                       "axis size, at most its local_device_count()")
    grid += theirs[:n]
  return grid


def _object_array(devs: list) -> np.ndarray:
  out = np.empty(len(devs), dtype=object)
  out[:] = devs
  return out


def _mesh_name(axis_name) -> str:
  return "_pmap" if axis_name is None else axis_name


def _slice(x, d, i: int, dev):
  """Device `dev`'s argument: slice `i` of `x` along its mapped axis `d` (all of `x` when
  `d` is None); the array's own piece when it is already split that way over the devices."""
  if d is None:
    return x
  nd = len(shape_of(x))
  d %= nd
  index = tuple(slice(i, i + 1) if k == d else slice(None) for k in range(nd))
  piece = spmd.device_piece(x, index, dev)
  if isinstance(piece, np.ndarray):
    return piece.reshape(piece.shape[:d] + piece.shape[d + 1:])
  want = tuple(s for k, s in enumerate(shape_of(x)) if k != d)
  return piece if tuple(piece.shape) == want else np.asarray(piece).reshape(want)


def _stack(mesh: Mesh, per_device: list, d):
  """One pmap output from each device's: stacked along `d` (an array split over the mesh's
  one axis, each device's piece its own output), or, `d` None, replicated."""
  first = per_device[0]
  if d is None:
    return from_shards(first.shape, first.dtype, first.weak_type,
                       NamedSharding(mesh, PartitionSpec()), dict(zip(mesh.devices.flat,
                                                                      per_device)))
  shape = list(first.shape)
  d %= len(shape) + 1
  shape.insert(d, len(per_device))
  spec = PartitionSpec(*([None] * d), mesh.axis_names[0])
  return from_shards(tuple(shape), first.dtype, first.weak_type, NamedSharding(mesh, spec),
                     dict(zip(mesh.devices.flat, per_device)))


def _donated_positions(nargs: int, static: tuple, donate_argnums: tuple) -> tuple:
  """donate_argnums (positions among all arguments) as positions in `mapped`'s arguments
  (static, *dynamic)."""
  donated = {i % nargs for i in donate_argnums if -nargs <= i < nargs}
  skip = {i for i, _ in static}
  dyn_positions = [i for i in range(nargs) if i not in skip]
  return tuple(1 + j for j, i in enumerate(dyn_positions) if i in donated)


# --- shard_map --------------------------------------------------------------------------

def shard_map(f: Callable | None = None, /, *, out_specs, in_specs=None, mesh=None,
              axis_names=frozenset(), check_vma: bool = True):
  """Run `f` once per device of `mesh` on the block of each input that `in_specs` gives it
  (a PartitionSpec per input, or a tree prefix of them), with the mesh axes bound as named
  axes for collectives (`lax.psum(x, 'x')`, `lax.axis_index`); `out_specs` says how the
  per-device results make the outputs (`jax.shard_map`; a decorator when `f` is omitted).

  On a mesh whose axes all have size 1 the block is the whole array, so `f` runs once on
  its inputs with each of the mesh axes (or just `axis_names`) bound at size 1, as vmap
  binds them. On a mesh of several devices a top-level call runs `f` per device
  (parallel/spmd.py); inside jit `f` is vmapped over the mesh axes on the stacked blocks.
  `mesh` defaults to the one `jax.set_mesh` put in context. `check_vma` is accepted; ember does not infer which values vary over the
  mesh axes, so it does not reject an `out_specs` of P() for a varying value as JAX does.
  """
  if f is None:
    return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                               axis_names=axis_names, check_vma=check_vma)
  if not callable(f):
    raise TypeError(f"shard_map requires a callable for its first argument, got {f!r}")
  programs: dict = {}   # multi-device: (mesh, tree, specs) -> its SpmdFunction

  @functools.wraps(f)
  def shard_mapped(*args, **kwargs):
    if kwargs:
      raise TypeError(f"shard_map'd function {_fun_name(f)} was called with keyword "
                      f"arguments {sorted(kwargs)}: pass its inputs positionally (in_specs "
                      "gives one spec per positional argument)")
    m = _shard_map_mesh(mesh)
    manual = tuple(n for n in m.axis_names if not axis_names or n in axis_names)
    leaves, tree = tree_util.tree_flatten(args)
    specs = [None] * len(leaves)   # without in_specs: every device gets the whole input
    if in_specs is not None:
      specs = flatten_axes("shard_map in_specs", tree, tuple(in_specs) if isinstance(
          in_specs, list) else in_specs)
      for x, spec in zip(leaves, specs):
        _check_spec(spec, shape_of(x), manual, "in_specs", m)
    if m.size > 1:
      return _shard_map_on_devices(f, m, manual, leaves, tree, specs, out_specs, programs)
    run = f
    for name in reversed(manual):
      run = vmap(run, in_axes=None, out_axes=0, axis_name=name, axis_size=1)
    outs = tree_util.tree_map(lambda y: y[(0,) * len(manual)], run(*args))
    out_leaves, out_tree = tree_util.tree_flatten(outs)
    for y, spec in zip(out_leaves, flatten_axes("shard_map out_specs", out_tree, out_specs)):
      _check_spec(spec, shape_of(y), manual, "out_specs", m)
    return outs

  return shard_mapped


def _fun_name(f) -> str:
  return repr(getattr(f, "__name__", f))


def _shard_map_mesh(mesh) -> Mesh | AbstractMesh:
  m = context_mesh() if mesh is None else mesh
  if m is None:
    raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter "
                     "into a mesh context, or pass shard_map(..., mesh=mesh)")
  if not isinstance(m, (Mesh, AbstractMesh)):
    raise TypeError(f"shard_map requires a jax.sharding.Mesh or AbstractMesh for mesh, "
                    f"got {m!r}")
  if m.size > 1 and not isinstance(m, Mesh):
    raise NotImplementedError(f"shard_map over the abstract mesh {m}: pass a Mesh of "
                              "devices (jax.make_mesh) to run on several devices")
  return m


def _shard_map_on_devices(f, m: Mesh, manual: tuple, leaves, tree, specs, out_specs,
                          programs: dict):
  """shard_map over a mesh of several devices: each device runs `f` on its blocks (one
  compiled program, collectives over the mesh axes between the devices); the outputs are
  arrays split over the mesh as `out_specs` say."""
  check_placeable(NamedSharding(m, PartitionSpec()), f"shard_map over {m}")
  if manual != m.axis_names:
    raise NotImplementedError(f"shard_map with axis_names={set(manual)} (a part of the mesh "
                              f"axes {m.axis_names}): ember maps over all of them")
  if not core.cur_level_is_eval() or any(isinstance(x, core.Tracer) for x in leaves):
    return _shard_map_vmapped(f, m, leaves, tree, specs, out_specs)
  key = (m, tree, tuple(specs))
  prog = programs.get(key)
  if prog is None:
    def per_device(*flat):
      return f(*tree_util.tree_unflatten(tree, list(flat)))
    prog = programs[key] = spmd.SpmdFunction(per_device, dict(m.shape), _fun_name(f))
  in_maps = [NamedSharding(m, spec or PartitionSpec()).devices_indices_map(shape_of(x))
             for x, spec in zip(leaves, specs)]
  mine = set(local_devices())   # the mesh may span processes: this process runs its own
  per_device_args = {dev: spmd.host_args([spmd.device_piece(x, im[dev], dev)
                                          for x, im in zip(leaves, in_maps)])
                     for dev in m.devices.flat if dev in mine}
  outs, out_tree = prog.run(m.devices, m.axis_names, per_device_args)
  first = next(iter(outs.values()))
  results = []
  for k, spec in enumerate(flatten_axes("shard_map out_specs", out_tree, out_specs)):
    y = first[k]
    _check_spec(spec, y.shape, manual, "out_specs", m)
    spec = spec or PartitionSpec()
    shape = list(y.shape)
    for dim, entry in enumerate(spec):
      for a in (entry if isinstance(entry, tuple) else (entry,)):
        if a is not None and a is not PartitionSpec.UNCONSTRAINED:
          shape[dim] *= m.shape[a]
    results.append(from_shards(tuple(shape), y.dtype, y.weak_type, NamedSharding(m, spec),
                               {dev: out[k] for dev, out in outs.items()}))
  return tree_util.tree_unflatten(out_tree, results)


def _shard_map_vmapped(f, m: Mesh, leaves, tree, specs, out_specs):
  """shard_map over several devices inside jit (or another transformation): each input's
  blocks stacked along new leading axes, one per mesh axis it is split over, and `f`
  vmapped over every mesh axis with that axis's name (so its collectives are reductions
  over the stacked blocks); the outputs reassembled from their blocks as `out_specs` say.
  The same values as the per-device run, computed in the one traced program (which jit
  may partition in its turn)."""
  names, sizes = m.axis_names, dict(m.shape)
  blocked = [_to_blocks(x, spec, names, sizes) for x, spec in zip(leaves, specs)]
  run = lambda *flat: f(*tree_util.tree_unflatten(tree, list(flat)))
  for name in reversed(names):
    axes = [0 if name in used else None for _, used in blocked]
    run = vmap(run, in_axes=tuple(axes), out_axes=0, axis_name=name, axis_size=sizes[name])
  out_leaves, out_tree = tree_util.tree_flatten(run(*[b for b, _ in blocked]))
  results = []
  for y, spec in zip(out_leaves, flatten_axes("shard_map out_specs", out_tree, out_specs)):
    _check_spec(spec, shape_of(y)[len(names):], names, "out_specs", m)
    results.append(_from_blocks(y, spec, names, sizes))
  return tree_util.tree_unflatten(out_tree, results)


def _spec_axes(spec, ndim: int) -> list:
  """Per dim of a value, the mesh axes `spec` splits it over (major first)."""
  out = []
  for d in range(ndim):
    entry = spec[d] if spec is not None and d < len(spec) else None
    if entry is None or entry is PartitionSpec.UNCONSTRAINED:
      out.append(())
    else:
      out.append(entry if isinstance(entry, tuple) else (entry,))
  return out


def _to_blocks(x, spec, names: tuple, sizes: dict) -> tuple:
  """(x with each split dim cut into (axis sizes..., block) and the mesh axes moved to the
  front in mesh order, the names of those axes)."""
  shape = shape_of(x)
  split, pos, local = [], {}, []
  for d, axes in enumerate(_spec_axes(spec, len(shape))):
    for a in axes:
      pos[a] = len(split)
      split.append(sizes[a])
    local.append(len(split))
    split.append(shape[d] // math.prod(sizes[a] for a in axes))
  used = tuple(a for a in names if a in pos)
  if not used:
    return x, used
  x = structural.reshape(x, tuple(split))
  return structural.transpose(x, tuple(pos[a] for a in used) + tuple(local)), used


def _from_blocks(y, spec, names: tuple, sizes: dict):
  """The output from `y` (one block per mesh position along leading axes in mesh order):
  blocks joined along the dims `spec` splits, the first block taken along the other
  axes."""
  local = shape_of(y)[len(names):]
  dims = _spec_axes(spec, len(local))
  used = [a for axes in dims for a in axes]
  unused = [k for k, a in enumerate(names) if a not in used]
  lead = [k for k, a in enumerate(names) if a in used]
  y = structural.transpose(y, tuple(unused + lead + list(range(len(names), len(names) +
                                                               len(local)))))
  for _ in unused:
    y = structural.index_in_dim(y, 0, 0, keepdims=False)
  at = {names[k]: i for i, k in enumerate(lead)}
  perm = [p for d, axes in enumerate(dims) for p in [at[a] for a in axes] + [len(lead) + d]]
  y = structural.transpose(y, tuple(perm))
  return structural.reshape(y, tuple(n * math.prod(sizes[a] for a in axes)
                                     for n, axes in zip(local, dims)))


def _check_spec(spec, shape: tuple, manual: tuple, what: str, mesh) -> None:
  """A PartitionSpec (or None) naming manual mesh axes, no longer than the value's rank."""
  if spec is None:
    return
  if not isinstance(spec, PartitionSpec):
    raise TypeError(f"shard_map {what} must be PartitionSpecs (or a tree prefix of them), "
                    f"got {spec!r}")
  for entry in spec:
    for a in (entry if isinstance(entry, tuple) else (entry,)):
      if a is not None and a is not PartitionSpec.UNCONSTRAINED and a not in manual:
        raise ValueError(f"shard_map {what} argument must refer to an axis marked as manual "
                         f"({set(manual)}) of mesh {mesh}, but {spec} refers to {a!r}")
  if len(spec) > len(shape):
    raise ValueError(f"shard_map {what} {spec} has {len(spec)} entries, more than the rank "
                     f"of its value of shape {tuple(shape)}")

"""Devices and shardings (`jax.sharding`): where an array's pieces live.

ember runs on one CPU device unless asked for more: `jax.config.update("jax_num_cpu_devices",
N)`, `EMBER_NUM_CPU_DEVICES=N`, or `XLA_FLAGS=--xla_force_host_platform_device_count=N`, read
when the CPU backend is first used (base/flags.py: ember.devices(), an executor starting),
gives N CPU devices, each with its own executor (runtime/executor.py). `Mesh`,
`NamedSharding` and `PartitionSpec` are real objects with JAX's attributes, equality, hashing
and printing; `device_put` with a sharding splits an array over the devices
(core/array.py's PlacedArray), and pmap/shard_map run one program per device with
collectives between them (parallel/pmap.py, runtime/collectives.py).
"""
from __future__ import annotations

import collections
import enum
import functools
import math
import threading
from typing import Any, Sequence

import numpy as np

from ember._src import core
from ember._src.base import flags as flags_lib, tree_util
from ember._src.backends.pjrt import client as pjrt_client


class Device:
  """A device arrays live on (`jax.Device`): its `id`, `platform`, `device_kind`,
  `process_index`."""
  platform: str
  device_kind: str
  process_index = 0
  client = None


class CpuDevice(Device):
  platform = "cpu"
  device_kind = "cpu"

  def __init__(self, id: int = 0, process_index: int = 0):
    self.id = id
    self.process_index = process_index  # the process that owns it (ember.distributed)

  def __repr__(self):
    return f"CpuDevice(id={self.id})"

  def __str__(self):
    return f"cpu:{self.id}"

  def __eq__(self, other):
    return isinstance(other, CpuDevice) and other.id == self.id

  def __hash__(self):
    return hash(("cpu", self.id))


num_cpu_devices = flags_lib.num_cpu_devices


# this process's CPU devices: device 0 until the CPU backend starts (base/flags.py), which
# fixes the count; functions that list devices start it first (_all_devices)
_DEVICES = [CpuDevice(0)]


def _make_devices(n: int) -> None:
  _DEVICES[1:] = [CpuDevice(i) for i in range(1, n)]


flags_lib.on_cpu_backend_start(_make_devices)
# every process's devices, in global id order, after ember.distributed.initialize(); empty when
# this process runs alone (then they are _DEVICES)
_GLOBAL_DEVICES: list[CpuDevice] = []


class PjrtDevice(Device):
  """A device of a PJRT client (backends/pjrt): `platform` is ember's backend name ("tpu",
  "pjrt_cpu", a plug-in's name), `device_kind` the client's ("TPU v5 lite", "cpu")."""

  def __init__(self, platform: str, jax_device):
    self.platform, self.jax_device = platform, jax_device
    self.id = jax_device.id
    self.device_kind = jax_device.device_kind
    self.process_index = jax_device.process_index

  client = property(lambda self: self.jax_device.client)

  def __repr__(self):
    if self.platform == pjrt_client.CPU:   # not CpuDevice(...): that is ember's native one
      return f"PjrtCpuDevice(id={self.id})"
    return repr(self.jax_device)

  def __str__(self):
    return f"{self.platform}:{self.id}"

  def __eq__(self, other):
    return isinstance(other, PjrtDevice) and (other.platform, other.id) == (self.platform,
                                                                            self.id)

  def __hash__(self):
    return hash((self.platform, self.id))


_pjrt_devices: dict[str, list[PjrtDevice]] = {}   # platform -> its devices, made once


def devices(backend: str | None = None) -> list[Device]:
  """The devices of `backend`: ember's native "cpu" (the default), or a PJRT platform
  (backends/pjrt/client.py: "pjrt_cpu", "tpu", ...)."""
  if backend in (None, "cpu"):
    return _all_devices()
  if backend == "gpu":   # JAX's generic name: whichever GPU plug-in is installed
    backend = next((p for p in pjrt_client.available_platforms() if p in ("cuda", "rocm")),
                   backend)
  devs = _pjrt_devices.get(backend)
  if devs is None:
    if backend not in pjrt_client.available_platforms():
      raise RuntimeError(f"Unknown backend {backend}. Available backends are "
                         f"{['cpu'] + pjrt_client.available_platforms()} (PJRT backends "
                         "need jaxlib, and libtpu for 'tpu': pip install ember[tpu]).")
    client = pjrt_client.client(backend)
    devs = _pjrt_devices.setdefault(backend, [PjrtDevice(backend, d)
                                              for d in client.local_devices()])
  return list(devs)


def _all_devices() -> list[CpuDevice]:
  """Every process's devices (this process's when it runs alone); starts the CPU backend."""
  num_cpu_devices()
  return list(_GLOBAL_DEVICES or _DEVICES)


def _local_devices() -> list[CpuDevice]:
  """This process's devices; starts the CPU backend."""
  num_cpu_devices()
  return list(_DEVICES)


def local_devices(process_index: int | None = None, backend: str | None = None):
  """The devices of process `process_index` (this process when None)."""
  devs = devices(backend)
  if process_index is None:
    return _local_devices()
  return [d for d in devs if d.process_index == process_index]


def default_backend() -> str:
  return "cpu"


# --- partition specs and meshes ---------------------------------------------------------

class _Unconstrained:
  def __repr__(self):
    return "UNCONSTRAINED"


class PartitionSpec:
  """`P('x', None)`: for each array dimension, the mesh axis (or tuple of axes, or None for
  replicated) it is split over. Unlike a tuple it is its own type: `P('x') != ('x',)`, and
  trailing Nones count (`P('x') != P('x', None)`), as in JAX."""
  UNCONSTRAINED = _Unconstrained()
  __slots__ = ("_partitions",)

  def __init__(self, *partitions):
    for p in partitions:
      if not (p is None or p is PartitionSpec.UNCONSTRAINED or isinstance(p, (str, tuple))):
        raise TypeError(f"PartitionSpec entries must be a mesh axis name, a tuple of names, "
                        f"None or P.UNCONSTRAINED; got {p!r}")
    self._partitions = tuple(tuple(p) if isinstance(p, list) else p for p in partitions)

  unreduced = property(lambda self: frozenset())
  reduced = property(lambda self: frozenset())

  def __len__(self):
    return len(self._partitions)

  def __getitem__(self, i):
    return self._partitions[i]

  def __iter__(self):
    return iter(self._partitions)

  def index(self, value):
    return self._partitions.index(value)

  def count(self, value):
    return self._partitions.count(value)

  def __add__(self, other):
    other = other._partitions if isinstance(other, PartitionSpec) else tuple(other)
    return PartitionSpec(*self._partitions, *other)

  def __eq__(self, other):
    return isinstance(other, PartitionSpec) and other._partitions == self._partitions

  def __hash__(self):
    return hash((PartitionSpec, self._partitions))

  def __repr__(self):
    body = ", ".join(map(repr, self._partitions))
    return f"P({body}{',' if len(self._partitions) == 1 else ''})"

  __str__ = __repr__

  def __reduce__(self):
    return (PartitionSpec, self._partitions)


class AxisType(enum.Enum):
  """How a mesh axis is sharded: by the compiler (`Auto`), in the types (`Explicit`), or by
  hand inside shard_map (`Manual`)."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name

  __str__ = __repr__


class Mesh:
  """A named grid of devices: `Mesh(np.array(devices).reshape(2, 4), ('data', 'model'))`."""

  def __init__(self, devices: np.ndarray | Sequence[Device], axis_names,
               axis_types: tuple[AxisType, ...] | None = None):
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    devs = np.array(devices, dtype=object) if not isinstance(devices, np.ndarray) else devices
    if devs.ndim != len(axis_names):
      raise ValueError(
          "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
          f"second argument (`axis_names`), but got devices.ndim == {devs.ndim} and "
          f"len(axis_names) == {len(axis_names)}.")
    if len(set(axis_names)) != len(axis_names):
      raise ValueError(f"Mesh axis names must be unique, got {axis_names}")
    axis_types = (AxisType.Auto,) * len(axis_names) if axis_types is None else tuple(axis_types)
    if len(axis_types) != len(axis_names) or not all(isinstance(t, AxisType) for t in axis_types):
      raise ValueError(f"Mesh: axis_types must be one AxisType per axis name {axis_names}, "
                       f"got {axis_types}")
    devs = devs.copy()
    devs.flags.writeable = False
    self.devices = devs
    self.axis_names = axis_names
    self.axis_types = axis_types
    # what equality and hashing compare (meshes key the partitioned jit calls' plans)
    self._key_cached = (tuple(d.id for d in devs.flat), devs.shape, axis_names, axis_types)

  shape = property(lambda self: collections.OrderedDict(zip(self.axis_names, self.devices.shape)))
  axis_sizes = property(lambda self: tuple(self.devices.shape))
  shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.devices.shape)))
  size = property(lambda self: int(self.devices.size))
  empty = property(lambda self: self.devices.ndim == 0 or self.devices.size == 0)
  device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))
  local_devices = property(lambda self: list(self.devices.flat))
  _flat_devices_tuple = property(lambda self: tuple(self.devices.flat))

  def _key(self):
    return self._key_cached

  def __eq__(self, other):
    return isinstance(other, Mesh) and other._key() == self._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
            f"axis_types={_types_str(self.axis_types)})")

  def __str__(self):
    axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)
    return f"Mesh({axes}, axis_types={_types_str(self.axis_types)})"

  @property
  def abstract_mesh(self) -> AbstractMesh:
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types)

  # which axes are of which type (`mesh.are_all_axes_explicit`, ...), as AbstractMesh's
  are_all_axes_auto = property(lambda self: _all_of(self, AxisType.Auto))
  are_all_axes_explicit = property(lambda self: _all_of(self, AxisType.Explicit))
  are_all_axes_manual = property(lambda self: _all_of(self, AxisType.Manual))
  auto_axes = property(lambda self: _axes_of(self, AxisType.Auto))
  explicit_axes = property(lambda self: _axes_of(self, AxisType.Explicit))
  manual_axes = property(lambda self: _axes_of(self, AxisType.Manual))

  def __enter__(self):  # JAX's older `with mesh:` form (JAX now prefers jax.set_mesh)
    return self

  def __exit__(self, *exc):
    return False


class AbstractMesh:
  """A mesh's axis names, sizes and types without devices (`jax.sharding.AbstractMesh`):
  what tracing sees of the mesh in context."""

  def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str],
               axis_types: tuple[AxisType, ...] | None = None):
    self.axis_sizes, self.axis_names = tuple(axis_sizes), tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"AbstractMesh: one size per axis name, got axis_sizes "
                       f"{self.axis_sizes} and axis_names {self.axis_names}")
    self.axis_types = ((AxisType.Explicit,) * len(self.axis_names) if axis_types is None
                       else tuple(axis_types))

  shape = property(lambda self: collections.OrderedDict(zip(self.axis_names, self.axis_sizes)))
  shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
  empty = property(lambda self: not self.axis_names)
  # JAX's: an empty abstract mesh has size 0
  size = property(lambda self: int(np.prod(self.axis_sizes)) if self.axis_names else 0)

  are_all_axes_auto = Mesh.are_all_axes_auto
  are_all_axes_explicit = Mesh.are_all_axes_explicit
  are_all_axes_manual = Mesh.are_all_axes_manual
  auto_axes = Mesh.auto_axes
  explicit_axes = Mesh.explicit_axes
  manual_axes = Mesh.manual_axes
  abstract_mesh = property(lambda self: self)

  def _key(self):
    return (self.axis_sizes, self.axis_names, self.axis_types)

  def __eq__(self, other):
    return isinstance(other, AbstractMesh) and other._key() == self._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    if self.empty:
      return "AbstractMesh((), axis_types=())"
    axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape_tuple)
    return f"AbstractMesh({axes}, axis_types={_types_str(self.axis_types)})"


_EMPTY_ABSTRACT_MESH = AbstractMesh((), ())


def _all_of(mesh, kind: AxisType) -> bool:
  """Whether every axis of `mesh` is of type `kind`: False for the empty mesh, as JAX's."""
  return bool(mesh.axis_types) and all(t == kind for t in mesh.axis_types)


def _axes_of(mesh, kind: AxisType) -> tuple:
  return tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == kind)


class _MeshContext(threading.local):
  mesh: Mesh | None = None   # what jax.set_mesh put in context, per thread as in JAX
  abstract: "AbstractMesh | None" = None   # what use_abstract_mesh put in context


_context = _MeshContext()


def get_abstract_mesh() -> AbstractMesh:
  """The abstract mesh in context (`jax.sharding.get_abstract_mesh`): that of the mesh
  `jax.set_mesh` set, else the empty one (`with mesh:` sets none, as in JAX 0.12)."""
  if _context.abstract is not None:
    return _context.abstract
  mesh = _context.mesh
  return _EMPTY_ABSTRACT_MESH if mesh is None else mesh.abstract_mesh


class use_abstract_mesh:  # noqa: N801  (JAX's name)
  """`with use_abstract_mesh(abstract_mesh):` makes it the abstract mesh in context for this
  thread (what `get_abstract_mesh()` and the types' shardings report); the concrete mesh
  (`get_mesh()`) is unchanged. The mesh's size may not change."""
  __slots__ = ("mesh", "prev")

  def __init__(self, mesh: AbstractMesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                       f"{type(mesh)}")
    self.mesh = mesh

  def __enter__(self):
    prev = get_abstract_mesh()
    if prev.size and self.mesh.size and prev.size != self.mesh.size:
      raise ValueError(f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                       f"{self.mesh} with size={self.mesh.size} and prev mesh: {prev} with "
                       f"size={prev.size}")
    self.prev, _context.abstract = _context.abstract, self.mesh

  def __exit__(self, *exc):
    _context.abstract = self.prev
    return False


def _empty_mesh() -> Mesh:
  """The mesh of no axes and no devices (JAX's `Mesh(np.empty((), object), ())`)."""
  mesh = object.__new__(Mesh)
  devs = np.empty((), dtype=object)
  devs.flags.writeable = False
  mesh.devices, mesh.axis_names, mesh.axis_types = devs, (), ()
  mesh._key_cached = ((), (), (), ())
  return mesh


def get_mesh() -> Mesh:
  """The concrete mesh `jax.set_mesh` put in context, else the empty mesh (`jax.get_mesh`);
  outside `jit` only, as in JAX."""
  if not core.cur_level_is_eval():
    raise ValueError("`get_mesh` can only be used outside of `jax.jit`. Maybe you want "
                     "`jax.sharding.get_abstract_mesh()`?")
  mesh = _context.mesh
  return _empty_mesh() if mesh is None else mesh


def context_mesh() -> Mesh | None:
  """The concrete mesh `jax.set_mesh` put in context, or None."""
  return _context.mesh


class set_mesh:  # noqa: N801  (JAX's name: a function to call and a context manager)
  """Put `mesh` in context for this thread (`jax.set_mesh`): called on its own it sets it
  until the next call; as `with jax.set_mesh(mesh):` it restores the previous mesh on exit.
  With a mesh in context, PartitionSpecs stand for NamedShardings over it
  (`with_sharding_constraint(x, P('x'))`, `shard_map` without `mesh=`)."""
  __slots__ = ("prev_mesh",)

  def __init__(self, mesh: Mesh | None):
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
    if not core.cur_level_is_eval():
      raise ValueError("`set_mesh` can only be used outside of `jax.jit`.")
    if mesh is not None and AxisType.Manual in mesh.axis_types:
      raise ValueError(f"mesh {mesh} contains manual axes which is not allowed when using "
                       "`jax.set_mesh`. Please use `jax.shard_map` to enter into `Manual` "
                       "mode instead.")
    self.prev_mesh, _context.mesh = _context.mesh, mesh

  def __enter__(self):
    return None

  def __exit__(self, *exc):
    _context.mesh = self.prev_mesh
    return False


def _types_str(types) -> str:
  return f"({', '.join(map(repr, types))}{',' if len(types) == 1 else ''})"


def make_mesh(axis_sizes: Sequence[int], axis_names: Sequence[str],
              axis_types: tuple[AxisType, ...] | None = None, *,
              devices: Sequence[Device] | None = None) -> Mesh:
  """A mesh of `axis_sizes` over the first devices (`jax.make_mesh`; by default all
  processes' devices, `devices()`); axes are `Explicit` unless `axis_types` says otherwise, as
  in JAX 0.12."""
  axis_sizes = tuple(axis_sizes)
  devs = _all_devices() if devices is None else list(devices)
  if len(devs) < math.prod(axis_sizes):
    raise ValueError(f"Number of devices {len(devs)} must be >= the product of mesh_shape "
                     f"{axis_sizes}")
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(axis_sizes)
  grid = np.empty(math.prod(axis_sizes), dtype=object)
  grid[:] = devs[:math.prod(axis_sizes)]
  return Mesh(grid.reshape(axis_sizes), tuple(axis_names), axis_types)


# --- shardings ----------------------------------------------------------------------------

class Sharding:
  """How an array is laid out over devices (`jax.sharding.Sharding`)."""
  memory_kind: str = "device"

  def _abstract(self, name: str):
    raise NotImplementedError(f"{type(self).__name__} does not define {name}: "
                              "jax.sharding.Sharding is an abstract base class; use "
                              "NamedSharding or SingleDeviceSharding, or define it.")

  device_set = property(lambda self: self._abstract("device_set"))
  _device_assignment = property(lambda self: self._abstract("_device_assignment"))

  def devices_indices_map(self, global_shape: tuple) -> dict:
    self._abstract("devices_indices_map")

  def shard_shape(self, global_shape: tuple) -> tuple:
    self._abstract("shard_shape")

  num_devices = property(lambda self: len(self.device_set))
  # this process's devices among them (all of them unless ember.distributed joined processes)
  addressable_devices = property(lambda self: self.device_set & set(_DEVICES))
  is_fully_addressable = property(lambda self: self.device_set <= set(_DEVICES))

  @property
  def is_fully_replicated(self) -> bool:
    return True

  def addressable_devices_indices_map(self, global_shape: tuple) -> dict:
    local = set(_DEVICES)
    return {d: i for d, i in self.devices_indices_map(global_shape).items() if d in local}

  def is_equivalent_to(self, other: "Sharding", ndim: int) -> bool:
    # the same pieces on the same devices, for a shape each sharding splits evenly (the
    # number of pieces along a dimension divides the number of devices)
    shape = (self.num_devices * other.num_devices,) * ndim
    return (self.device_set == other.device_set and self.memory_kind == other.memory_kind
            and self.devices_indices_map(shape) == other.devices_indices_map(shape))


class SingleDeviceSharding(Sharding):
  """The whole array on one device: what every ember Array reports as its `.sharding`."""

  def __init__(self, device: Device, *, memory_kind: str | None = None):
    self._device = device
    self.memory_kind = "device" if memory_kind is None else memory_kind

  device_set = property(lambda self: {self._device})
  _device_assignment = property(lambda self: (self._device,))

  def devices_indices_map(self, global_shape):
    return {self._device: (slice(None),) * len(global_shape)}

  def shard_shape(self, global_shape):
    return tuple(global_shape)

  def with_memory_kind(self, kind: str) -> "SingleDeviceSharding":
    return SingleDeviceSharding(self._device, memory_kind=kind)

  def __eq__(self, other):
    return (isinstance(other, SingleDeviceSharding) and other._device == self._device
            and other.memory_kind == self.memory_kind)

  def __hash__(self):
    return hash((SingleDeviceSharding, self._device, self.memory_kind))

  def __repr__(self):
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


def is_single_device_sharding(sharding: Sharding) -> bool:
  """Whether `sharding` places the whole array on one device (`jax.sharding.
  is_single_device_sharding`): a SingleDeviceSharding, not a NamedSharding over one."""
  return isinstance(sharding, SingleDeviceSharding)


def make_single_device_sharding(device: Device, *, memory_kind: str | None = None
                                ) -> SingleDeviceSharding:
  """`SingleDeviceSharding(device, memory_kind=...)` (`jax.sharding.
  make_single_device_sharding`)."""
  return SingleDeviceSharding(device, memory_kind=memory_kind)


class NamedSharding(Sharding):
  """An array split over a `Mesh` as `spec` says: `NamedSharding(mesh, P('data', None))`."""

  def __init__(self, mesh: Mesh | AbstractMesh, spec: PartitionSpec, *,
               memory_kind: str | None = None):
    if not isinstance(mesh, (Mesh, AbstractMesh)):
      raise TypeError(f"NamedSharding: mesh must be a jax.sharding.Mesh or AbstractMesh, "
                      f"got {mesh!r}")
    if not isinstance(spec, PartitionSpec):
      raise TypeError(f"NamedSharding: spec must be a PartitionSpec, got {spec!r}: write "
                      f"P{tuple(spec)!r} (from jax.sharding import PartitionSpec as P)"
                      if isinstance(spec, (tuple, list)) else
                      f"NamedSharding: spec must be a PartitionSpec, got {spec!r}")
    _check_spec(mesh, spec)
    self.mesh = mesh
    self.spec = spec
    # over an abstract mesh, none unless given (JAX's); over devices, theirs
    self.memory_kind = ("device" if memory_kind is None and isinstance(mesh, Mesh)
                        else memory_kind)

  @property
  def device_set(self) -> set:
    self._concrete("device_set")
    return set(self.mesh.devices.flat)

  @property
  def _device_assignment(self) -> tuple:
    self._concrete("_device_assignment")
    return self.mesh._flat_devices_tuple

  @property
  def is_fully_addressable(self) -> bool:
    self._concrete("is_fully_addressable")
    return self.device_set <= set(_DEVICES)

  @property
  def num_devices(self) -> int:
    """The mesh's size; an abstract mesh's (the empty one's is 0), as JAX's."""
    return self.mesh.size if isinstance(self.mesh, AbstractMesh) else len(self.device_set)

  def _concrete(self, name: str) -> None:
    if isinstance(self.mesh, AbstractMesh):
      raise ValueError(f"{name} is not implemented for `jax.sharding.AbstractMesh`.")

  @property
  def is_fully_replicated(self) -> bool:
    return all(self.mesh.shape[a] == 1 for a in _spec_axes(self.spec))

  def shard_shape(self, global_shape):
    out = list(global_shape)
    for dim, entry in enumerate(self.spec):
      n = math.prod(self.mesh.shape[a] for a in _entry_axes(entry))
      if dim < len(out) and n > 1:
        if out[dim] % n:
          raise ValueError(f"One of the dimensions of shape {tuple(global_shape)} (dim {dim} of "
                           f"size {out[dim]}) is not divisible by {n}, the size of mesh axes "
                           f"{_entry_axes(entry)} that {self.spec} splits it over")
        out[dim] //= n
    return tuple(out)

  def devices_indices_map(self, global_shape):
    self._concrete("devices_indices_map")
    shard = self.shard_shape(global_shape)
    out = {}
    for pos in np.ndindex(*self.mesh.devices.shape):
      coords = dict(zip(self.mesh.axis_names, pos))
      index = []
      for dim in range(len(global_shape)):
        axes = _entry_axes(self.spec[dim]) if dim < len(self.spec) else ()
        if math.prod(self.mesh.shape[a] for a in axes) == 1:
          index.append(slice(None))
          continue
        k = 0
        for a in axes:  # the first axis is the major one
          k = k * self.mesh.shape[a] + coords[a]
        index.append(slice(k * shard[dim], (k + 1) * shard[dim]))
      out[self.mesh.devices[pos]] = tuple(index)
    return out

  def with_memory_kind(self, kind: str) -> "NamedSharding":
    return NamedSharding(self.mesh, self.spec, memory_kind=kind)

  def update(self, *, mesh=None, spec=None, memory_kind=None) -> "NamedSharding":
    """This sharding with the given mesh, spec (a PartitionSpec or a sequence of its
    entries) or memory kind in place of its own (`NamedSharding.update`)."""
    spec = self.spec if spec is None else spec
    return NamedSharding(self.mesh if mesh is None else mesh,
                         spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec),
                         memory_kind=self.memory_kind if memory_kind is None else memory_kind)

  def is_equivalent_to(self, other: Sharding, ndim: int) -> bool:
    if isinstance(self.mesh, AbstractMesh) or isinstance(getattr(other, "mesh", None),
                                                         AbstractMesh):
      # no devices to compare: the same mesh, and specs equal but for trailing Nones
      def padded(spec):
        return tuple(spec) + (None,) * (ndim - len(spec))
      return (isinstance(other, NamedSharding) and other.mesh == self.mesh
              and padded(other.spec) == padded(self.spec))
    return super().is_equivalent_to(other, ndim)

  def __eq__(self, other):
    return (isinstance(other, NamedSharding) and other.mesh == self.mesh
            and other.spec == self.spec and other.memory_kind == self.memory_kind)

  def __hash__(self):
    return hash((NamedSharding, self.mesh, self.spec, self.memory_kind))

  def __repr__(self):
    kind = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
    return f"NamedSharding(mesh={self.mesh}, spec={self.spec}{kind})"


def _type_sharding(aval) -> NamedSharding:
  """An aval's `.sharding`: ember's types record none, so JAX's for an array that no explicit
  mesh axis splits: over the abstract mesh in context, a None per dimension."""
  return NamedSharding(get_abstract_mesh(), PartitionSpec(*(None,) * len(aval.shape)))


core.avals.type_sharding[0] = _type_sharding


def _check_type_sharding(sharding, shape: tuple) -> None:
  """A sharding given to `ShapedArray(..., sharding=)` is one JAX takes into a type: a
  NamedSharding over an AbstractMesh, without a memory kind, whose spec (padded with Nones)
  has one entry per dimension and splits each evenly."""
  if not isinstance(sharding, NamedSharding):
    raise TypeError(f"ShapedArray: sharding must be a NamedSharding, got {sharding!r}")
  if len(sharding.spec) > len(shape):
    raise ValueError(
        f"Length of sharding.spec ({len(sharding.spec)}) must be equal to aval's ndim "
        f"({len(shape)}). Got sharding.spec {sharding.spec}, aval.ndim {len(shape)} and "
        f"sharding {sharding}")
  if not isinstance(sharding.mesh, AbstractMesh):
    raise ValueError("Mesh of an aval must be an AbstractMesh. "
                     f"Got {sharding.mesh} of type {type(sharding.mesh)}")
  for dim, (entry, size) in enumerate(zip(sharding.spec, shape)):
    axes = _entry_axes(entry)
    n = math.prod(sharding.mesh.shape[a] for a in axes)
    if size % n:
      raise ValueError(
          f"Sharding spec {axes} implies that array axis {dim} is partitioned {n} times, but "
          f"does not evenly divide the dimension size {size}. Got shape: {shape} and "
          f"sharding {sharding}")
  if sharding.memory_kind is not None:
    raise ValueError("sharding with memory_kind is not allowed. Please use `jax.device_put` "
                     f"to transfer to different memory spaces. Got sharding={sharding}")


core.avals.check_type_sharding[0] = _check_type_sharding


def _entry_axes(entry) -> tuple:
  if entry is None or entry is PartitionSpec.UNCONSTRAINED:
    return ()
  return entry if isinstance(entry, tuple) else (entry,)


def _spec_axes(spec: PartitionSpec) -> list:
  return [a for entry in spec for a in _entry_axes(entry)]


def _check_spec(mesh: Mesh, spec: PartitionSpec) -> None:
  axes = _spec_axes(spec)
  for a in axes:
    if a not in mesh.axis_names:
      raise ValueError(f"Resource axis: {a} of {spec} is not found in mesh: {mesh.axis_names}.")
  dups = sorted({a for a in axes if axes.count(a) > 1})
  if dups:
    raise ValueError(
        "A single NamedSharding spec specification can map every mesh axis to at most one "
        f"positional dimension, but {spec} has duplicate entries for "
        f"{', '.join(f'`{a}`' for a in dups)}")


def check_placeable(sharding: Any, what: str) -> None:
  """Raise unless `sharding` names only devices ember has: a device of this process, or a
  Sharding over any processes' devices (each process then holds its own devices' pieces)."""
  if isinstance(sharding, Device):
    devs, have, whose = {sharding}, set(_DEVICES), "this process"
  elif isinstance(sharding, Sharding):
    devs, have = sharding.device_set, set(_all_devices())
    whose = "any process" if _GLOBAL_DEVICES else "this process"
  else:
    raise TypeError(f"{what}: expected a device from ember.devices() or a "
                    f"jax.sharding.Sharding, got {sharding!r}")
  missing = {d for d in devs if not isinstance(d, PjrtDevice)} - have
  if missing:
    raise ValueError(f"{what}: {sorted(map(str, missing))} are not devices of {whose} "
                     f"({sorted(have, key=lambda d: d.id)})")


# --- with_sharding_constraint ---------------------------------------------------------------

def _as_sharding(s, what: str) -> Sharding:
  """A Sharding, or a PartitionSpec over the mesh `jax.set_mesh` put in context."""
  if isinstance(s, Sharding):
    return s
  if isinstance(s, PartitionSpec):
    mesh = _context.mesh
    if mesh is None:
      raise RuntimeError(
          f"{what} requires a non-empty mesh in context if you are passing `PartitionSpec`s "
          "to shardings. You can define a context mesh via `jax.set_mesh(mesh)`. "
          "Alternatively, provide `Sharding`s to shardings and then the mesh context "
          "manager is not required.")
    return NamedSharding(mesh, s)
  raise TypeError(f"{what}: shardings leaf specifications are expected to be PartitionSpec "
                  f"instances or None, but got {s}")


def _check_rank(sharding: Sharding, aval, what: str) -> None:
  """A spec shorter than the rank leaves the trailing dimensions whole; a longer one fails."""
  spec = getattr(sharding, "spec", None)
  if spec is not None and len(spec) > aval.ndim:
    raise ValueError(
        f"One of {what} arguments is incompatible with its sharding annotation {sharding}: "
        f"Sharding {sharding} is only valid for values of rank at least {len(spec)}, but "
        f"was applied to a value of rank {aval.ndim}"
        + (". For scalars the PartitionSpec should be P()" if aval.ndim == 0 else ""))


def _check_shardings(what: str, x, shardings) -> None:
  """`shardings` (one, or a pytree with one per leaf of `x`; None skips a leaf) fit `x`."""
  leaves = tree_util.tree_leaves(x)
  per_leaf = _per_leaf(x, shardings)
  if len(per_leaf) != len(leaves):
    raise ValueError(f"{what}: shardings must be one sharding or a pytree with one per "
                     f"array of x ({len(leaves)}), got {len(per_leaf)}: {shardings!r}")
  for leaf, s in zip(leaves, per_leaf):
    if s is not None:
      _check_rank(_as_sharding(s, what), core.get_aval(leaf), what)


def _per_leaf(x, shardings) -> list:
  """One sharding (or None) per leaf of `x`."""
  leaves = tree_util.tree_leaves(x)
  if isinstance(shardings, (Sharding, PartitionSpec)):
    return [shardings] * len(leaves)
  return tree_util.tree_flatten(
      shardings, is_leaf=lambda s: s is None or isinstance(s, (Sharding, PartitionSpec)))[0]


# sharding_constraint_p.bind, filled by primitives/parallel.py (primitives sit above this layer),
# and core/array.py's device_put (arrays import this module), filled there
stage_constraint: list = [None]
put_on_devices: list = [None]


def _constrain(what: str, x, shardings):
  """`x` laid out as `shardings` say, over several devices: inside jit a
  `sharding_constraint` equation per leaf (where sharding propagation lays it out), at top
  level the leaf put there (device_put). One-device shardings change nothing."""
  leaves, tree = tree_util.tree_flatten(x)
  out = []
  for leaf, s in zip(leaves, _per_leaf(x, shardings)):
    s = None if s is None else _on_devices(_as_sharding(s, what), leaf)
    if s is None or s.num_devices == 1:
      out.append(leaf)
    elif isinstance(leaf, core.Tracer):
      out.append(stage_constraint[0](leaf, sharding=s))
    else:
      out.append(put_on_devices[0](leaf, s))
  return tree_util.tree_unflatten(tree, out)


def _on_devices(s: Sharding, leaf) -> Sharding | None:
  """`s`, where it is a NamedSharding over an AbstractMesh, over devices as JAX makes it:
  over the mesh `jax.set_mesh` put in context, else over that of the array's own
  NamedSharding, which must have the same mesh shape. Arrays made under `jax.set_mesh` are
  NamedSharding'd over its mesh in JAX and on one device in ember, so ember takes any array
  there. A traced value has no sharding of its own: without a mesh in context, None (the
  constraint is left out; the values are the same)."""
  if not isinstance(s, NamedSharding) or not isinstance(s.mesh, AbstractMesh):
    return s
  if _context.mesh is not None:
    return NamedSharding(_context.mesh, s.spec, memory_kind=s.memory_kind)
  if isinstance(leaf, core.Tracer):
    return None
  aval = core.get_aval(leaf)
  own = getattr(leaf, "sharding", None)
  if own is None:
    raise ValueError("Target sharding contains a `jax.sharding.AbstractMesh` which requires "
                     f"the input passed should be a `jax.Array`. Got {type(leaf)} with shape "
                     f"{aval.str_short()}")
  if not isinstance(own, NamedSharding) or isinstance(own.mesh, AbstractMesh):
    raise TypeError("The sharding on the input must be a `NamedSharding` since the target "
                    "sharding has an `AbstractMesh` in it. Got sharding type "
                    f"{type(own)} for shape {aval.str_short()}")
  if own.mesh.shape_tuple != s.mesh.shape_tuple:
    raise ValueError(f"Mesh shape of the input {own.mesh.shape_tuple} does not match the mesh "
                     f"shape of the target sharding {s.mesh.shape_tuple} for shape "
                     f"{aval.str_short()}")
  return NamedSharding(own.mesh, s.spec, memory_kind=s.memory_kind)


def with_sharding_constraint(x, shardings):
  """Ask for `x` (a pytree of arrays) to be laid out as `shardings` says
  (`jax.lax.with_sharding_constraint`): one sharding (or PartitionSpec, over the mesh in
  context) for all leaves or a matching pytree of them. The shardings are checked against
  the leaves' ranks. Inside jit a sharding over several devices stages a
  `sharding_constraint` (the identity on values; jit's sharding propagation lays the
  value out so); one over a single device, where every layout is the whole array, stages
  nothing, and at top level the leaves are put on the devices."""
  _check_shardings("with_sharding_constraint", x, shardings)
  return _constrain("with_sharding_constraint", x, shardings)


def reshard(xs, out_shardings):
  """`xs` (a pytree of arrays) laid out as `out_shardings` says (`jax.sharding.reshard`):
  checked and applied as with_sharding_constraint. JAX also records an explicit sharding
  in the result's type (`f32[4@x]`); ember's types carry no sharding yet."""
  _check_shardings("reshard", xs, out_shardings)
  return _constrain("reshard", xs, out_shardings)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """`f` run with mesh `axes` (default: all) Explicit, its arguments first laid out as
  `in_sharding` says (given here or as `f`'s keyword `in_sharding=`), `jax.sharding.
  explicit_axes`; a mesh must be in context (`jax.set_mesh`). ember's types carry no
  sharding, so `f` then runs as it is (a decorator when `f` is omitted)."""
  if f is None:
    return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

  @functools.wraps(f)
  def run(*args, **kwargs):
    sharding = in_sharding
    if sharding is None:
      if "in_sharding" not in kwargs:
        raise TypeError("Missing required keyword argument: 'in_sharding'")
      sharding = kwargs.pop("in_sharding")
    if get_abstract_mesh().empty:
      raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to enter "
                       "into a mesh context when using `explicit_axes` API.")
    return f(*reshard(args, sharding), **kwargs)
  return run


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """`f` run with mesh `axes` (default: all) sharded by the compiler, its results then laid
  out as `out_sharding` says (`jax.sharding.auto_axes`). On one device `f` runs as it is and
  the results are checked against `out_sharding` (a decorator when `f` is omitted)."""
  if f is None:
    return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

  @functools.wraps(f)
  def run(*args, **kwargs):
    out = f(*args, **kwargs)
    if out_sharding is not None:
      _check_shardings("auto_axes out_sharding", out, out_sharding)
    return out
  return run

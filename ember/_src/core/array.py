"""ember.Array: an immutable array on a device, with JAX's dtype and weak-type semantics.

The value is held as a read-only NumPy array. Operators and methods are shared with
tracers and attached by `ember._src.library.numpy.array_methods`.
"""
from __future__ import annotations

import enum
import math
import os
import sys
import threading
from typing import NamedTuple

import numpy as np

from ember._src.base import basearray, buffer_pool, dtypes, tree_util
from ember._src import core
from ember._src.base.config import config
from ember._src.base import transfer_guard
from ember._src.core import sharding as sharding_lib
from ember._src.core.sharding import (  # noqa: F401 (devices are re-exported from here)
    CpuDevice, Device, NamedSharding, Sharding, SingleDeviceSharding, _DEVICES, _entry_axes,
    check_placeable, default_backend, devices)

_REPR_VALUES_LIMIT = 1 << 20  # arrays of 1 MiB and more print only shape and dtype

# --- allocation stacks (for ember.profiler.device_memory_profile) ---------------------------
# Every Array records the Python stack that created it, as JAX does for its buffers: a flat
# tuple (code, lasti, code, lasti, ...) of at most ALLOC_STACK_FRAMES frames, innermost first,
# starting at the first frame outside ember. Lines and names are worked out only when a profile
# is written (ember/_src/runtime/profiler/memory.py). This runs on the jitted-call fast path, where
# each frame walked in Python costs ~80 ns, so: no ember frame is walked (the depth of the first
# user frame is the last one seen by the same constructor, checked with two sys._getframe jumps,
# which walk in C), the outputs of one dispatched call share one capture, and the default depth
# is 2 frames (the allocating line and its caller): ~0.5 us per Array on a slow 2-core box.
# EMBER_MEMORY_PROFILE_FRAMES=N (or setting this attribute) records deeper stacks at ~0.1 us
# per extra frame and Array; 0 records none.
ALLOC_STACK_FRAMES = int(os.environ.get("EMBER_MEMORY_PROFILE_FRAMES", 2))
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
_getframe = sys._getframe
_internal: dict = {}      # co_filename -> whether it is ember's (a str caches its hash; a code
                          # object's hash is recomputed from its bytecode on every lookup)
_user_depth = [3, 3, 3, 4, 3]  # per constructor (__init__, _ready_all from the executor,
                               # _pending, _ready_all from a jit cache hit, native_hit_stack):
                               # the last depth found
# ... and the least it can be: the frames above are ember's by construction (_alloc_stack, the
# constructor; for a jit cache hit also its runner and PjitFunction.__call__), so at that depth
# the frame below needs no check (materializing it costs ~0.4 us per call)
_min_depth = (2, 2, 2, 4, 3)
_pending_stack = [None]   # (id of a Pending, the stack of its output 0): shared by outputs 1..n


def _alloc_stack(ctor: int) -> tuple:
  """The creating stack, for a constructor (`ctor` indexes _user_depth) calling this."""
  n = ALLOC_STACK_FRAMES
  if n < 1:
    return ()
  k = _user_depth[ctor]
  try:
    f = _getframe(k)
    if _internal.get(f.f_code.co_filename, True) or \
        (k > _min_depth[ctor] and not _internal.get(_getframe(k - 1).f_code.co_filename)):
      f = _find_user_frame(ctor)  # another path: find the first user frame again
  except ValueError:              # the stack is shallower than k
    f = _find_user_frame(ctor)
  if f is None:
    return ()
  b = f.f_back
  if n == 1 or b is None:         # the common depths unrolled: a loop costs more
    return (f.f_code, f.f_lasti)
  if n == 2 or b.f_back is None:
    return (f.f_code, f.f_lasti, b.f_code, b.f_lasti)
  out = [f.f_code, f.f_lasti]
  while b is not None and n > 1:
    out.append(b.f_code)
    out.append(b.f_lasti)
    b = b.f_back
    n -= 1
  return tuple(out)


def native_hit_stack() -> tuple:
  """The allocation stack of the outputs of a jit cache hit run by native code
  (backends/cpu/native_hit.py), which calls this where the caller of PjitFunction.__call__ is
  not a user frame it knows: the frames above are PjitFunction.__call__ and its caller."""
  return _alloc_stack(4)


def _find_user_frame(ctor: int):
  k, f = 2, _getframe(3)  # the constructor's caller: depth 2 as seen from _alloc_stack
  internal = _internal
  while f is not None:
    name = f.f_code.co_filename
    i = internal.get(name)
    if i is None:
      i = internal[name] = name.startswith(_EMBER_DIR)
    if not i:
      _user_depth[ctor] = k
      return f
    f, k = f.f_back, k + 1
  return None


# NumPy's ndarray.__dlpack__ takes max_version, dl_device and copy (DLPack 1.0) from 2.1 on
_NUMPY_DLPACK_1 = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


class DLDeviceType(enum.IntEnum):
  """DLPack's device types (those NumPy knows): the first entry of __dlpack_device__."""
  kDLCPU = 1


class Layout(NamedTuple):
  major_to_minor: tuple
  tiling: tuple = ()
  sub_byte_element_size_in_bits: int = 0


class Format(NamedTuple):
  layout: Layout
  sharding: Sharding


# (shape, dtype, weak type) -> its ShapedArray, shared: an eager op reads its operands' avals
# several times, and a ShapedArray is never changed once made
_avals: dict = {}
_AVALS_LIMIT = 4096


class Array:
  """An immutable n-dimensional array (`jax.Array`).

  Its value is `_buf` (a read-only NumPy array) once ready; an output of a jitted call under
  asynchronous dispatch starts with `_fut` (the call's `executor.Pending`) and `_idx`, and
  reading `_value` waits for it. Shape, dtype and weak type are known at once. `_ptr`, once
  set, is the address of `_buf`, which is then ready and C-contiguous (kernels may read it
  as is: a jit cache hit checks only `_deleted` and `_ptr`)."""
  __slots__ = ("_buf", "_fut", "_idx", "_ptr", "_shape", "_dtype", "_weak_type", "_deleted",
               "_stack", "_committed", "__weakref__")   # _committed: set by device_put only
  __array_priority__ = 100

  def __init__(self, value, weak_type: bool = False):
    value = _freeze(np.asarray(value))
    self._buf, self._fut, self._ptr = value, None, None
    self._shape, self._dtype = value.shape, value.dtype
    self._weak_type = bool(weak_type)
    self._deleted = False
    self._stack = _alloc_stack(0)

  @classmethod
  def _ready_all(cls, values, ptrs, weak_types, ctor: int, seal: bool = False) -> list:
    """Arrays of a call's output NumPy arrays (`seal`: made read-only here, else already
    frozen) at addresses `ptrs` (None: unknown), sharing one allocation stack (`ctor`: the
    caller's index in _user_depth)."""
    stack = _alloc_stack(ctor)
    new = object.__new__
    out = []
    for i in range(len(values)):   # (indexing: cheaper than zip for the usual 1-3 outputs)
      value = values[i]
      if seal:
        value.setflags(False)   # write=False (positional: half the cost)
      self = new(cls)
      self._buf, self._fut, self._ptr = value, None, ptrs[i]
      self._shape, self._dtype = value.shape, value.dtype
      self._weak_type, self._deleted, self._stack = weak_types[i], False, stack
      out.append(self)
    return out

  @classmethod
  def _pending(cls, shape, dtype, weak_type, fut, idx: int) -> "Array":
    """Output `idx` of a dispatched call, filled later into `fut` (an executor.Pending)."""
    self = object.__new__(cls)
    self._buf, self._fut, self._idx, self._ptr = None, fut, idx, None
    self._shape, self._dtype = shape, dtype
    self._weak_type, self._deleted = weak_type, False
    # outputs are made in order 0..n-1 while `fut` lives, so an entry with its id written
    # after output 0 is this call's own (no other live object has that id)
    memo = _pending_stack[0]
    if idx and memo is not None and memo[0] == id(fut):
      self._stack = memo[1]
    else:
      self._stack = _alloc_stack(2)
      _pending_stack[0] = (id(fut), self._stack)
    return self

  @property
  def _value(self) -> np.ndarray:
    """The NumPy value, waiting for the computation that produces it (re-raising its error)."""
    buf = self._buf
    if buf is not None:
      return buf
    fut = self._fut
    if fut is None:  # resolved by another thread between the two reads, or donated
      if self._buf is None:
        self._check_alive()
      return self._buf
    outs = fut.wait()
    idx = self._idx
    buf = outs[idx]
    if buf is None:  # another thread took it (it sets _buf before clearing the slot)
      return self._buf
    self._buf = buf   # before _ptr: a set _ptr means a ready buffer (see _ptr)
    if fut.ptrs is not None:
      self._ptr = fut.ptrs[idx]
    outs[idx] = None  # the call's record no longer holds it: donation sees true ownership
    self._fut = None  # (set after _buf: readers check _fut)
    return buf

  def _data_ptr(self) -> int:
    """The address of the (ready) buffer, cached (`ready_ptr`: a small non-contiguous one is
    made contiguous first): once handed out, an Array's memory never moves."""
    ptr = self._ptr
    if ptr is None:
      self._value
      ptr = ready_ptr(self)
      if ptr is None:
        return self._buf.ctypes.data
    return ptr

  def unsafe_buffer_pointer(self) -> int:
    """The address of this array's memory (waits for it), as jax.Array's."""
    self._check_alive()
    self._value
    return self._data_ptr()

  def _donate(self, held: int = 0) -> np.ndarray | None:
    """Give this ready array's buffer to a call that computes an output in place: returns it
    writable and deletes this Array when nothing else can reach the memory (no NumPy array
    or view of it alive anywhere but the `held` references of the caller); None when
    something can (the call then copies)."""
    buf = self._buf
    if buf is None or self._fut is not None:
      return None
    if sys.getrefcount(buf) != 3 + held:  # self._buf, `buf`, getrefcount's argument
      return None
    base = buf.base
    if base is not None:  # only a pool lease (views of `buf` keep it alive) can be checked
      if not buffer_pool.is_pooled(buf) or sys.getrefcount(base) != 3:  # buf.base, base, arg
        return None
    self._deleted, self._buf = True, None
    buf.flags.writeable = True
    return buf

  # --- metadata -----------------------------------------------------------------
  @property
  def aval(self) -> core.ShapedArray:
    key = (self._shape, self._dtype, self._weak_type)
    aval = _avals.get(key)
    if aval is None:
      if len(_avals) >= _AVALS_LIMIT:
        _avals.clear()
      aval = _avals[key] = core.ShapedArray(*key)
    return aval

  shape = property(lambda self: self._shape)
  dtype = property(lambda self: self._dtype)
  weak_type = property(lambda self: self._weak_type)
  ndim = property(lambda self: len(self._shape))
  size = property(lambda self: math.prod(self._shape))
  nbytes = property(lambda self: self.size * self._dtype.itemsize)
  itemsize = property(lambda self: self._dtype.itemsize)

  @property
  def sharding(self):
    return SingleDeviceSharding(_DEVICES[0])

  @property
  def format(self) -> Format:
    return Format(Layout(tuple(range(self.ndim))), self.sharding)

  def devices(self):
    return {_DEVICES[0]}

  @property
  def device(self):
    return _DEVICES[0]

  committed = property(lambda self: getattr(self, "_committed", False))

  @property
  def addressable_shards(self) -> list:
    return [Shard(_DEVICES[0], (slice(None),) * self.ndim, self)]

  is_fully_replicated = property(lambda self: True)

  def to_device(self, device, *, stream=None):
    """The array on `device` (the array API's spelling of device_put): committed there, as a
    new array; `None` is this array itself."""
    if stream is not None:
      raise ValueError("to_device: ember's CPU device has no streams; pass stream=None.")
    if device is not None and device not in _DEVICES and \
       not (getattr(device, "device_set", None) or {None}) <= set(_DEVICES):
      raise ValueError(f"to_device: unknown device {device!r}; ember's devices are "
                       f"{_DEVICES} (ember.devices()).")
    return self if device is None else device_put(self, device)

  # --- DLPack (the array API's interchange): through NumPy's, on the host buffer -------
  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    if stream is not None:
      raise BufferError("__dlpack__: ember's CPU arrays take stream=None.")
    if not _NUMPY_DLPACK_1:
      max_version = None  # this NumPy exports pre-1.0 capsules only
    v = np.asarray(self)
    if not v.flags.writeable and (max_version is None or tuple(max_version) < (1, 0)):
      # DLPack before 1.0 cannot mark a tensor read-only: hand out a copy (ember's
      # buffers are immutable), unless the caller forbids copying
      if copy is False:
        raise BufferError("__dlpack__(copy=False): ember's buffer is read-only and DLPack "
                          "< 1.0 cannot say so; pass max_version=(1, 0) or allow a copy.")
      v, copy = v.copy(), None
    if not _NUMPY_DLPACK_1:
      if dl_device not in (None, (DLDeviceType.kDLCPU, 0)):
        raise BufferError(f"__dlpack__: ember's arrays live on the CPU, not on {dl_device}.")
      return v.__dlpack__()
    kw = {} if max_version is None else {"max_version": max_version}
    return v.__dlpack__(dl_device=dl_device, copy=copy, **kw)

  def __dlpack_device__(self):
    return DLDeviceType.kDLCPU, 0

  # --- synchronization and conversion ---------------------------------------------
  def _check_alive(self):
    if self._deleted:
      raise RuntimeError("Array has been deleted (it was donated to a jitted function or "
                         "deleted with .delete()); it can no longer be used.")

  def block_until_ready(self) -> "Array":
    self._check_alive()
    if self._buf is None:
      self._value  # waits; raises the computation's error
    return self

  def is_ready(self) -> bool:
    """True once the computation producing this array has finished (or failed)."""
    fut = self._fut
    return fut is None or fut.done()

  def delete(self):
    self._deleted = True
    if self._fut is None:
      self._buf = None  # the memory goes back (to the pool) once no view of it is left

  def is_deleted(self) -> bool:
    return self._deleted

  def __array__(self, dtype=None, copy=None):
    self._check_alive()
    v = self._value
    if dtype is not None and np.dtype(dtype) != v.dtype:
      return v.astype(dtype)
    return v.copy() if copy else v

  def item(self, *args):
    self._check_alive()
    return self._value.item(*args)

  def tolist(self):
    self._check_alive()
    return self._value.tolist()

  def _scalar(self, conv, what):
    self._check_alive()
    if self.size != 1:
      raise TypeError(f"only length-1 arrays can be converted to Python scalars "
                      f"({what}() of an array of shape {self.shape})")
    return conv(self._value.reshape(()).item() if self.ndim else self._value.item())

  def __float__(self):
    return self._scalar(float, "float")

  def __complex__(self):
    return self._scalar(complex, "complex")

  def __int__(self):
    return self._scalar(int, "int")

  def __bool__(self):
    self._check_alive()
    if self.size != 1:
      raise ValueError(f"The truth value of an array with more than one element is "
                       f"ambiguous (shape {self.shape}). Use a.any() or a.all().")
    return bool(self._value.reshape(()))

  def __index__(self):
    self._check_alive()
    if self.ndim != 0 or not dtypes.is_integer(self.dtype):
      raise TypeError("only integer scalar arrays can be converted to a scalar index")
    return int(self._value)

  def __len__(self):
    if self.ndim == 0:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if self.ndim == 0:
      raise TypeError("iteration over a 0-d array")
    return (Array(v, self._weak_type) for v in self._value)

  def __setitem__(self, idx, value):
    raise TypeError("ember arrays are immutable and do not support item assignment. "
                    "Instead of x[idx] = y, use x = x.at[idx].set(y).")

  def __hash__(self):
    raise TypeError("unhashable type: 'ember.Array'. Use a tuple or a Python scalar as a "
                    "dict key or static argument.")

  def __reduce__(self):
    return (_reconstruct, (self._value, self._weak_type))

  def copy(self) -> "Array":
    return Array(self._value.copy(), self._weak_type)

  __copy__ = copy

  def __deepcopy__(self, memo):
    return self.copy()

  def copy_to_host_async(self):
    pass

  # --- printing -------------------------------------------------------------------
  def __repr__(self):
    if self._deleted:
      return "Array(<deleted>)"
    dtype_str = f"dtype={self.dtype.name}" + (", weak_type=True" if self._weak_type else "") + ")"
    if self.nbytes >= _REPR_VALUES_LIMIT:
      return f"Array(shape={self.shape}, {dtype_str}"
    prefix = "Array("
    line_width = np.get_printoptions()["linewidth"]
    if self.size == 0:
      s = f"[], shape={self.shape}"
    else:
      s = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                          max_line_width=line_width)
    last_line_len = len(s) - s.rfind("\n") + 1
    sep = " " * len(prefix) if last_line_len + len(dtype_str) + 1 > line_width else " "
    if "\n" in s and sep != " ":
      sep = "\n" + sep
    return f"{prefix}{s},{sep}{dtype_str}"

  def __str__(self):
    self._check_alive()
    if self.nbytes >= _REPR_VALUES_LIMIT:  # JAX 0.12: shape and dtype only, without waiting
      return repr(self)
    return str(self._value)

  def __format__(self, spec):
    self._check_alive()
    if self.ndim == 0:
      return format(self._value.item(), spec)
    return format(self._value, spec)


core.register_array_type(Array)   # core's eval trace makes Arrays; it cannot import them
basearray.Array.register(Array)


# A ready Array's buffer that is not C-contiguous (an eager broadcast: jnp.ones((3,)) is a
# view of one element) is made contiguous once, when a jitted call first reads it, up to this
# size; a larger one is copied by each call instead (its copy could be huge).
MATERIALIZE_BYTES = 1 << 20
_materialize_lock = threading.Lock()


def ready_ptr(a: "Array") -> int | None:
  """The address kernels read ready Array `a` at, recorded in `a._ptr` (None: a large
  non-C-contiguous buffer, which the caller copies). A small non-contiguous buffer is first
  replaced by a contiguous copy of it (same value: Arrays are immutable), under a lock so
  that `_ptr` always points into the `_buf` that stays."""
  buf = a._buf
  if not buf.flags.c_contiguous:
    if buf.nbytes > MATERIALIZE_BYTES:
      return None
    with _materialize_lock:
      buf = a._buf
      if not buf.flags.c_contiguous:
        buf = a._buf = _freeze(np.array(buf, order="C"))
  p = a._ptr = buf.ctypes.data
  return p


def _freeze(value: np.ndarray) -> np.ndarray:
  """`value` as a read-only array that nothing else can write (views are copied)."""
  if value.flags.writeable:
    value = value.copy() if value.base is not None else value
    value.flags.writeable = False
  return value


def _reconstruct(value, weak_type):
  return Array(value, weak_type)


# Device type -> put(leaf, device, committed) for the devices of other backends than the
# native CPU (runtime/pjrt_array.py registers PjrtDevice's): device_put hands leaves to it.
device_placers: dict = {}
placements_made = [False]   # True once an array was committed or put on another backend


def target_device(device):
  """The Device a placement names: a Device, a SingleDeviceSharding's device, or None (the
  default device, config jax_default_device, a Device or a backend name such as 'tpu' for
  its first device; None when unset: ember's native CPU)."""
  if device is None:
    device = config._values["jax_default_device"]
    if device is None:
      return None
    if isinstance(device, str):   # jax.default_device('tpu'); device_put takes no names
      return devices(device)[0]
  if isinstance(device, SingleDeviceSharding):
    return device._device
  return device


# --- arrays placed on devices -----------------------------------------------------------------

class Shard:
  """One device's piece of an array (`jax.Shard`): `device`, `index` (the slices of the
  global array it holds), `data` (an Array on that device), `replica_id`."""
  __slots__ = ("device", "index", "data", "replica_id")

  def __init__(self, device, index, data, replica_id: int = 0):
    self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, "
            f"data={self.data!r})")


class _Gather:
  """The value of an array split over devices, gathered from its shards on first read (it
  stands where an Array's `executor.Pending` does: see Array._value). `shards` holds this
  process's devices' pieces; when they do not cover the array (the rest lives in other
  processes) reading it is an error."""
  __slots__ = ("shards", "indices", "shape", "dtype", "ptrs", "covered")

  def __init__(self, shards: dict, indices: dict, shape, dtype):
    self.shards, self.shape, self.dtype = shards, shape, dtype
    self.indices = {d: i for d, i in indices.items() if d in shards}
    self.ptrs = None
    self.covered = _covers(self.indices.values(), shape)

  def wait(self) -> list:
    if not self.covered:
      raise RuntimeError(
          f"Fetching the value of an array of shape {self.shape} that spans devices of other "
          f"processes is not possible: this process holds the pieces "
          f"{sorted(set(map(_index_key, self.indices.values())))}. Read its "
          "`addressable_shards`, or gather it first (multihost_utils.process_allgather).")
    out = np.empty(self.shape, self.dtype)
    for dev, index in self.indices.items():
      piece = out[index + (...,)]   # a view also of a 0-d array
      piece[...] = np.asarray(self.shards[dev]._value).reshape(piece.shape)
    out.flags.writeable = False
    return [out]

  def done(self) -> bool:
    return all(a.is_ready() for a in self.shards.values())


def _index_key(index) -> tuple:
  return tuple((s.start, s.stop) for s in index)


def _covers(indices, shape) -> bool:
  """Whether the pieces `indices` (slices of a sharding's grid: distinct ones never overlap)
  make up the whole array of `shape`."""
  size = 0
  for key in set(map(_index_key, indices)):
    size += math.prod((stop if stop is not None else n) - (start or 0)
                      for (start, stop), n in zip(key, shape))
  return size == math.prod(shape)


class PlacedArray(Array):
  """An Array committed to devices (`device_put(x, device_or_sharding)`, pmap and shard_map
  results): on one device, or split over several as its `sharding` says, each device's
  piece a PlacedArray of its own (`addressable_shards`) and the whole value gathered from
  them when read. jit runs on the device its committed arguments are on."""
  __slots__ = ("_sharding", "_shards")

  sharding = property(lambda self: self._sharding)
  committed = property(lambda self: True)
  is_fully_replicated = property(lambda self: self._sharding.is_fully_replicated)

  def devices(self):
    return set(self._sharding.device_set)

  @property
  def device(self):
    devs = self._sharding.device_set
    if len(devs) != 1:
      raise ValueError("Length of devices is greater than 1. Please use `.devices()`.")
    return next(iter(devs))

  @property
  def addressable_shards(self) -> list:
    if self._shards is None:   # on one device: the array itself
      return [Shard(self.device, (slice(None),) * self.ndim, self)]
    seen: dict = {}
    out = []
    for dev, index in self._sharding.devices_indices_map(self._shape).items():
      key = _index_key(index)   # replica ids count every process's devices, as in JAX
      if dev in self._shards:
        out.append(Shard(dev, index, self._shards[dev], seen.get(key, 0)))
      seen[key] = seen.get(key, 0) + 1
    return out

  @property
  def is_fully_addressable(self) -> bool:
    return self._shards is None or self._sharding.is_fully_addressable

  def copy(self) -> "PlacedArray":
    return _placed_value(self._value.copy(), self._weak_type, self._sharding)

  __copy__ = copy


def place(a: Array, device) -> PlacedArray:
  """`a` (an Array this call owns: it is consumed) as committed to `device`."""
  p = object.__new__(PlacedArray)
  p._buf, p._fut, p._ptr = a._buf, a._fut, a._ptr
  if a._fut is not None:
    p._idx = a._idx
  p._shape, p._dtype, p._weak_type = a._shape, a._dtype, a._weak_type
  p._deleted, p._stack = a._deleted, a._stack
  p._sharding, p._shards = SingleDeviceSharding(device), None
  placements_made[0] = True
  return p


def from_shards(shape, dtype, weak_type: bool, sharding: Sharding, shards: dict,
                indices: dict | None = None) -> PlacedArray:
  """The array of global `shape` split as `sharding` says, device d's piece `shards[d]`
  (an Array on d, of the shard shape or that shape without its size-1 dims); `indices`:
  `sharding.devices_indices_map(shape)` when the caller has it."""
  p = object.__new__(PlacedArray)
  if indices is None:
    indices = sharding.devices_indices_map(tuple(shape))
  p._buf, p._ptr, p._idx = None, None, 0
  p._fut = _Gather(shards, indices, tuple(shape), np.dtype(dtype))
  p._shape, p._dtype, p._weak_type = tuple(shape), np.dtype(dtype), weak_type
  p._deleted, p._stack = False, _alloc_stack(0)
  p._sharding, p._shards = sharding, dict(shards)
  return p


def _placed_value(value: np.ndarray, weak_type: bool, sharding: Sharding) -> PlacedArray:
  """`value` put on the devices of `sharding`: one copy of its piece per device (of this
  process: every process holds the whole `value` and keeps its devices' pieces)."""
  devs = sharding.device_set
  if len(devs) == 1:
    return place(Array(value, weak_type), next(iter(devs)))
  sharding.shard_shape(value.shape)   # the error when a dimension does not split evenly
  shards = {d: place(Array(np.asarray(value[index], order="C"), weak_type), d)   # (0-d: 0-d)
            for d, index in sharding.addressable_devices_indices_map(value.shape).items()}
  return from_shards(value.shape, value.dtype, weak_type, sharding, shards)


def _as_sharding(device) -> Sharding:
  return SingleDeviceSharding(device) if isinstance(device, Device) else device


def make_array_from_callback(shape, sharding: Sharding, data_callback) -> PlacedArray:
  """The array of `shape` split as `sharding` says, device d's piece
  `data_callback(index of d's piece)` (`jax.make_array_from_callback`; called for this
  process's devices only)."""
  check_placeable(sharding, "make_array_from_callback")
  shape = tuple(shape)
  want = sharding.shard_shape(shape)
  shards, dtype, weak = {}, None, False
  for dev, index in sharding.addressable_devices_indices_map(shape).items():
    piece = data_callback(index)
    aval = core.get_aval(piece)
    if aval.shape != want:
      raise ValueError(f"make_array_from_callback: the callback returned shape {aval.shape} "
                       f"for index {index}, expected the shard shape {want}")
    dtype, weak = aval.dtype, aval.weak_type
    shards[dev] = place(Array(np.array(np.asarray(piece), dtype=aval.dtype)), dev)
  return from_shards(shape, dtype, weak, sharding, shards)


def make_array_from_single_device_arrays(shape, sharding: Sharding, arrays) -> PlacedArray:
  """The array of `shape` split as `sharding` says from one array per device of this process
  (each placed on its device, `jax.make_array_from_single_device_arrays`)."""
  check_placeable(sharding, "make_array_from_single_device_arrays")
  shape, arrays = tuple(shape), list(arrays)
  want = sharding.shard_shape(shape)
  shards = {}
  for a in arrays:
    dev = a.device if isinstance(a, Array) else None
    if dev not in sharding.device_set:
      raise ValueError(f"make_array_from_single_device_arrays: array on {dev} is not on a "
                       f"device of {sharding}")
    if tuple(a.shape) != want:
      raise ValueError(f"make_array_from_single_device_arrays: array of shape {a.shape} "
                       f"on {dev}, expected the shard shape {want}")
    shards[dev] = a if isinstance(a, PlacedArray) else place(Array(a._value), dev)
  missing = sharding.addressable_devices - set(shards)
  if missing:
    raise ValueError(f"make_array_from_single_device_arrays: no array for devices "
                     f"{sorted(map(str, missing))} of {sharding}")
  return from_shards(shape, arrays[0].dtype, arrays[0].weak_type, sharding, shards)


def make_array_from_process_local_data(sharding: Sharding, local_data, global_shape=None
                                       ) -> PlacedArray:
  """The array split as `sharding` says from this process's part of it
  (`jax.make_array_from_process_local_data`): `local_data` is the block of the global array
  that this process's devices hold (with one process, all of it). `global_shape` defaults to
  `local_data`'s shape scaled, along each dimension, by how many of the sharding's pieces
  along it lie in other processes."""
  check_placeable(sharding, "make_array_from_process_local_data")
  data = np.asarray(local_data, dtype=core.get_aval(local_data).dtype)
  if global_shape is None:
    global_shape = _global_shape(sharding, data.shape)
  global_shape = tuple(global_shape)
  imap = sharding.addressable_devices_indices_map(global_shape)
  if not imap:
    raise ValueError(f"make_array_from_process_local_data: {sharding} has no device of this "
                     "process")
  starts = [min(ix[k].indices(n)[0] for ix in imap.values()) for k, n in enumerate(global_shape)]
  stops = [max(ix[k].indices(n)[1] for ix in imap.values()) for k, n in enumerate(global_shape)]
  box = tuple(b - a for a, b in zip(starts, stops))

  def in_box(index):   # a piece's slices of the global array -> of this process's block
    return tuple(slice(i.indices(n)[0] - a, i.indices(n)[1] - a)
                 for i, n, a in zip(index, global_shape, starts))
  if box != data.shape or not _covers([in_box(ix) for ix in imap.values()], box):
    raise ValueError(f"make_array_from_process_local_data: local_data of shape {data.shape} "
                     f"is not the block of the global shape {global_shape} that this "
                     f"process's devices hold under {sharding} (that block has shape {box})")

  return make_array_from_callback(global_shape, sharding, lambda index: data[in_box(index)])


def _global_shape(sharding: Sharding, local_shape: tuple) -> tuple:
  """`local_shape` times, per dimension, (pieces along it) / (this process's pieces)."""
  spec = getattr(sharding, "spec", ())
  mesh_shape = sharding.mesh.shape if hasattr(sharding, "mesh") else {}
  pieces = [math.prod(mesh_shape[a] for a in _entry_axes(spec[k]))
            if k < len(spec) else 1 for k in range(len(local_shape))]
  # each piece of size 1: this process's distinct positions along each dimension
  probe = sharding.addressable_devices_indices_map(tuple(pieces))
  out = []
  for k, n in enumerate(local_shape):
    mine = len({ix[k].indices(pieces[k])[0] for ix in probe.values()}) or 1
    if n % mine:
      raise ValueError(f"make_array_from_process_local_data: dimension {k} of local_data "
                       f"(size {n}) does not split into this process's {mine} pieces of "
                       f"{sharding}; pass global_shape")
    out.append(n // mine * pieces[k])
  return tuple(out)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Put each leaf of a pytree on a device as an Array: with `device` None, on the default
  device (uncommitted; an Array stays where it is); with a device or a Sharding, committed
  to it (split over its devices as a NamedSharding says). Devices of other backends (PJRT)
  go through their `device_placers`."""
  target = target_device(device)
  placer = device_placers.get(type(target))
  if placer is not None:
    committed = device is not None
    return tree_util.tree_map(lambda leaf: placer(leaf, target, committed), x)
  sharding = None
  if device is not None:
    check_placeable(device, "device_put")
    sharding = _as_sharding(device)

  def put(leaf):
    if isinstance(leaf, core.Tracer):
      return leaf
    if isinstance(leaf, Array):
      leaf._check_alive()
      if sharding is None or (type(leaf) is PlacedArray and leaf._sharding == sharding):
        return leaf
      return _placed_value(leaf._value, leaf._weak_type, sharding)
    aval = core.get_aval(leaf)
    if config._values["jax_transfer_guard_host_to_device"] is not None:
      transfer_guard.host_to_device(aval, explicit=True)
    value = np.array(leaf, dtype=aval.dtype)
    if sharding is None:
      return Array(value, aval.weak_type)
    return _placed_value(value, aval.weak_type, sharding)
  return tree_util.tree_map(put, x)



sharding_lib.put_on_devices[0] = device_put

def guard_host_arguments(leaves) -> None:
  """A top-level jitted call's NumPy and Python arguments are implicit host-to-device
  transfers (jax_transfer_guard_host_to_device)."""
  if config._values["jax_transfer_guard_host_to_device"] is None or not core.cur_level_is_eval():
    return
  for x in leaves:
    if not isinstance(x, (Array, core.Tracer)) and core.is_arraylike(x):
      transfer_guard.host_to_device(core.get_aval(x), explicit=False)


def device_get(x):
  """Fetch each Array leaf of a pytree to a NumPy array (other leaves pass through)."""

  def get(leaf):
    if isinstance(leaf, Array):
      leaf._check_alive()
      return leaf._value
    return leaf
  return tree_util.tree_map(get, x)


def block_until_ready(x):
  """Wait for every Array in a pytree; returns the same pytree."""
  for leaf in tree_util.tree_leaves(x):
    if hasattr(leaf, "block_until_ready"):
      leaf.block_until_ready()
  return x

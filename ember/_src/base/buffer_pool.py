"""The buffer pool: output and temp memory for executables, reused across calls.

    pool.empty(shape, dtype) -> (array, address)      # a writable C-order array
    pool.empty_bytes(n)      -> (uint8 array, address)

Arrays of `POOL_MIN_BYTES` and more come from pooled blocks (smaller ones from np.empty:
malloc's small-block caches are faster than any bookkeeping here). A block is an anonymous
mmap (page aligned, so 64-byte aligned) rounded up to its size class: four classes per
power of two below 2 MiB, multiples of 2 MiB from there, with `madvise(MADV_HUGEPAGE)` on
those where the OS allows. A jitted call on large arrays therefore reuses memory whose pages
are already mapped instead of paying a page fault per 4 KiB page on every call.

Lifetime: a lease is a uint8 array over the block (`np.frombuffer`); its base is the mmap, not
an array, so NumPy's view collapsing stops at the lease: every view made from the handed-out
array (np.asarray of an ember.Array, slices, reshapes) keeps the lease alive. When the last of
them dies, a weakref callback returns the block to its class's free list, unless that would
keep more than `idle_limit` bytes idle (`EMBER_BUFFER_POOL_BYTES`, default 512 MiB), in which
case the block is unmapped. Memory a user can still reach is therefore never reused.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import threading
import weakref

import numpy as np

POOL_MIN_BYTES = 1 << 16          # below: np.empty
HUGE_BYTES = 2 << 20              # from here: multiples of 2 MiB, transparent huge pages
_PAGE = mmap.PAGESIZE
_MADV_HUGEPAGE = getattr(mmap, "MADV_HUGEPAGE", None)


def size_class(n: int) -> int:
  """The block size that serves an `n`-byte request (at most 25% slack below 2 MiB)."""
  if n >= HUGE_BYTES:
    return -(-n // HUGE_BYTES) * HUGE_BYTES
  top = 1 << max(n - 1, 1).bit_length()        # the power of two >= n
  step = top // 8                               # classes at 5/8, 6/8, 7/8, 8/8 of it
  c = -(-n // step) * step
  return -(-c // _PAGE) * _PAGE


def _address(buf) -> int:
  return ctypes.addressof(ctypes.c_char.from_buffer(buf))


class _Block:
  __slots__ = ("mem", "size", "ptr")

  def __init__(self, size: int):
    # private: a forked child gets copy-on-write pages, never the parent's memory
    self.mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE)
    if size >= HUGE_BYTES and _MADV_HUGEPAGE is not None:
      try:
        self.mem.madvise(_MADV_HUGEPAGE)
      except OSError:   # THP disabled or unsupported: ordinary pages
        pass
    self.size, self.ptr = size, _address(self.mem)


class BufferPool:
  """Size-classed free lists of blocks; see the module docstring."""

  def __init__(self, idle_limit: int | None = None):
    if idle_limit is None:
      idle_limit = int(os.environ.get("EMBER_BUFFER_POOL_BYTES", 512 << 20))
    self.idle_limit = idle_limit
    self._free: dict[int, list[_Block]] = {}
    self._live: dict[int, tuple] = {}   # id(weakref to a lease) -> (the weakref, its block)
    self._classes: dict[int, int] = {}  # request size -> size class (the same sizes recur)
    self._lock = threading.RLock()   # re-entrant: a release may run inside an acquire
    self.idle_bytes = 0
    self.hits = self.misses = self.released = self.unmapped = 0

  @property
  def stats(self) -> dict:
    return {"hits": self.hits, "misses": self.misses, "released": self.released,
            "unmapped": self.unmapped}

  def empty_bytes(self, n: int) -> tuple[np.ndarray, int]:
    """A writable uint8 array of `n` bytes (pooled when large) and its address."""
    if n < POOL_MIN_BYTES:
      a = np.empty(max(n, 1), np.uint8)[:n]
      return a, (_address(a) if n else 0)
    cls = self._classes.get(n)
    if cls is None:
      cls = self._classes[n] = size_class(n)
    block = None
    with self._lock:
      free = self._free.get(cls)
      if free:
        block = free.pop()
        self.idle_bytes -= cls
        self.hits += 1
      else:
        self.misses += 1
    if block is None:
      block = _Block(cls)
    lease = np.frombuffer(block.mem, np.uint8, n)
    ref = weakref.ref(lease, self._release)     # arrays are unhashable: key by the ref's id
    self._live[id(ref)] = (ref, block)
    return lease, block.ptr

  def empty(self, shape: tuple, dtype: np.dtype) -> tuple[np.ndarray, int]:
    """A writable C-order array of `shape` and `dtype`, and its address."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < POOL_MIN_BYTES:
      a = np.empty(shape, dtype)
      return a, (_address(a) if nbytes else 0)
    raw, ptr = self.empty_bytes(nbytes)
    return raw.view(dtype).reshape(shape), ptr

  def _release(self, ref) -> None:
    # the lease died: no array can reach the block any more
    entry = self._live.pop(id(ref), None)
    if entry is None:
      return
    block = entry[1]
    size = block.size
    with self._lock:
      self.released += 1
      if self.idle_bytes + size > self.idle_limit:
        self.unmapped += 1
        return                                   # dropped: the mmap unmaps when collected
      self._free.setdefault(size, []).append(block)
      self.idle_bytes += size

  def live_bytes(self) -> int:
    return sum(b.size for _, b in list(self._live.values()))

  def trim(self, keep: int = 0) -> None:
    """Unmap idle blocks until at most `keep` bytes stay idle."""
    with self._lock:
      for cls in sorted(self._free, reverse=True):
        free = self._free[cls]
        while free and self.idle_bytes > keep:
          free.pop()
          self.idle_bytes -= cls

  def _after_fork(self) -> None:
    self._lock = threading.RLock()


_pool = BufferPool()
os.register_at_fork(after_in_child=_pool._after_fork)


def get_pool() -> BufferPool:
  return _pool


def is_pooled(a: np.ndarray) -> bool:
  """Whether `a`'s memory is a pool lease (its base is the lease array)."""
  base = a.base
  if type(base) is not np.ndarray:
    return False
  mem = base.base   # np.frombuffer keeps a memoryview of the mmap (older NumPy: the mmap)
  return type(mem) is mmap.mmap or (type(mem) is memoryview and type(mem.obj) is mmap.mmap)

"""The runtime's buffer pool (issue 4): size classes, reuse across calls, the lifetime rule (a
NumPy view that outlives its Array keeps the memory), the idle cap, and executables' outputs
and temp arenas drawn from it (also from several threads at once)."""
import gc
import os
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.base import buffer_pool
from ember._src.base.buffer_pool import BufferPool, size_class

MiB = 1 << 20


@pytest.mark.parametrize("n", [1 << 16, 70000, 100000, MiB - 1, MiB, MiB + 1, 2 * MiB - 1,
                               2 * MiB, 2 * MiB + 1, 100_000_000])
def test_size_classes(n):
  c = size_class(n)
  assert c >= n and c % 4096 == 0
  if n >= 2 * MiB:
    assert c % (2 * MiB) == 0 and c - n < 2 * MiB   # huge-page multiples
  else:
    assert c <= max(1.25 * n, n + 4096)               # at most 25% slack (or one page)
  assert size_class(c) == c                           # a class serves itself


def test_small_requests_are_not_pooled():
  pool = BufferPool()
  a, ptr = pool.empty((3, 4), np.dtype(np.float32))
  assert a.shape == (3, 4) and a.dtype == np.float32 and a.flags.writeable
  assert ptr == a.ctypes.data and not buffer_pool.is_pooled(a)
  assert pool.stats["misses"] == 0


def test_reuse_after_the_last_reference_dies():
  pool = BufferPool()
  a, ptr = pool.empty((512, 512), np.dtype(np.float32))
  assert buffer_pool.is_pooled(a) and a.ctypes.data == ptr and ptr % 64 == 0
  a[...] = 1.0
  del a
  gc.collect()
  assert pool.stats["released"] == 1 and pool.idle_bytes == size_class(512 * 512 * 4)
  b, ptr2 = pool.empty((512, 512), np.dtype(np.float32))
  assert ptr2 == ptr and pool.stats["hits"] == 1 and pool.idle_bytes == 0
  c, ptr3 = pool.empty((256, 1024), np.dtype(np.float32))   # same class, b still alive
  assert ptr3 != ptr and c.shape == (256, 1024)


def test_a_surviving_view_keeps_the_memory():
  pool = BufferPool()
  a, ptr = pool.empty((400, 100), np.dtype(np.float64))
  a[...] = np.arange(40000.0).reshape(400, 100)
  v = a[3:5, ::2].reshape(-1)       # a view of a view: still pins the lease
  w = a.view(np.uint8)
  del a
  gc.collect()
  assert pool.stats["released"] == 0
  b, ptr2 = pool.empty((400, 100), np.dtype(np.float64))
  assert ptr2 != ptr                  # not handed out again while v, w live
  b[...] = -1.0
  np.testing.assert_array_equal(v, np.arange(40000.0).reshape(400, 100)[3:5, ::2].reshape(-1))
  del v
  assert pool.stats["released"] == 0
  del w
  assert pool.stats["released"] == 1


def test_idle_limit_unmaps_the_excess():
  pool = BufferPool(idle_limit=3 * MiB)
  arrays = [pool.empty((MiB,), np.dtype(np.uint8))[0] for _ in range(5)]
  del arrays
  assert pool.stats["released"] == 5 and pool.stats["unmapped"] == 2
  assert pool.idle_bytes == 3 * MiB
  pool.trim()
  assert pool.idle_bytes == 0


def test_huge_blocks():
  pool = BufferPool()
  a, _ = pool.empty((3 * MiB // 4,), np.dtype(np.float32))   # 3 MiB: a 4 MiB huge-page block
  a[::1024] = 7.0
  assert a[::1024].sum() == 7.0 * len(a[::1024])
  del a
  assert pool.idle_bytes == 4 * MiB


def test_jitted_outputs_reuse_pooled_memory():
  f = ember.jit(lambda x: x * 2.0 + 1.0)
  x = np.ones((300, 300), np.float32)            # 360 KB: pooled
  y = f(x)
  assert buffer_pool.is_pooled(np.asarray(y))
  ptr = y.unsafe_buffer_pointer()
  del y
  gc.collect()
  y2 = f(x)                                      # the dropped output's block comes back
  assert y2.unsafe_buffer_pointer() == ptr
  np.testing.assert_array_equal(np.asarray(y2), np.full((300, 300), 3.0))


def test_a_numpy_view_outlives_its_array():
  f = ember.jit(lambda x, k: x * k)
  x = np.arange(90000, dtype=np.float32).reshape(300, 300)
  y = f(x, 2.0)
  view = np.asarray(y)[10:20]
  ptr = y.unsafe_buffer_pointer()
  del y
  gc.collect()
  others = [f(x, float(k)) for k in range(3, 6)]  # must not land in view's memory
  assert all(o.unsafe_buffer_pointer() != ptr for o in others)
  np.testing.assert_array_equal(view, 2.0 * x[10:20])
  assert not view.flags.writeable                 # an ember Array's memory stays read-only
  for k, o in zip(range(3, 6), others):
    np.testing.assert_array_equal(np.asarray(o), k * x.astype(np.float64))


def _with_temps(x):
  h = jnp.tanh(x @ x)          # a dot result consumed twice: kept in the temp arena
  return jnp.sin(h @ x) + h


@pytest.mark.parametrize("n", [64, 160])   # the arena stays with the executable / is leased
def test_temp_arena_is_reused_and_correct(n):
  x = (np.random.default_rng(0).standard_normal((n, n)) / np.sqrt(n)).astype(np.float32)
  f = ember.jit(_with_temps)
  exe = f.lower(x).compile().runtime_executable()
  assert (exe.temp_size >= buffer_pool.POOL_MIN_BYTES) == (n == 160)
  x64 = x.astype(np.float64)
  h = np.tanh(x64 @ x64)
  want = np.sin(h @ x64) + h
  for _ in range(3):
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(np.asarray(f(-x)), np.sin(h @ -x64) + h, rtol=2e-5, atol=2e-5)


def test_concurrent_calls_of_one_executable():
  """Calls from several threads: one uses the executable's cached frame, the others frames
  of their own; every result is right."""
  rng = np.random.default_rng(1)
  f = ember.jit(_with_temps)
  xs = [(rng.standard_normal((64, 64)) / 8).astype(np.float32) for _ in range(4)]
  f(xs[0]).block_until_ready()
  with ember.config._override("jax_cpu_enable_async_dispatch", False):  # run in each thread
    errors, results = [], {}

    def worker(k):
      try:
        results[k] = [np.asarray(f(xs[k])) for _ in range(10)]
      except Exception as e:  # noqa: BLE001 -- reported below
        errors.append(e)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
      t.start()
    for t in threads:
      t.join()
  assert not errors
  for k, outs in results.items():
    x64 = xs[k].astype(np.float64)
    h = np.tanh(x64 @ x64)
    for o in outs:
      np.testing.assert_allclose(o, np.sin(h @ x64) + h, rtol=2e-5, atol=2e-5)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_pool_memory_is_private_to_a_forked_child():
  """Blocks are private mappings: a child that reuses a block the parent also reuses (both
  pools' free lists are the same after fork) writes its own copy-on-write pages."""
  pool = buffer_pool.get_pool()
  a, ptr = pool.empty((300, 300), np.dtype(np.float32))
  a[...] = 0.0
  del a
  gc.collect()
  pid = os.fork()
  if pid == 0:
    code = 1
    try:
      b, ptr_b = pool.empty((300, 300), np.dtype(np.float32))
      b[...] = 6.0
      code = 0 if ptr_b == ptr else 2
    finally:
      os._exit(code)
  _, status = os.waitpid(pid, 0)          # the child has written its block and exited
  assert os.waitstatus_to_exitcode(status) == 0
  c, ptr_c = pool.empty((300, 300), np.dtype(np.float32))
  assert ptr_c == ptr and (c == 0.0).all()

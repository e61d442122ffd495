"""Asynchronous dispatch: a per-device executor thread runs jitted calls in call order.

`dispatch(call, args, out_specs, ptrs=..., small=...)` (called by
`dispatch.CompiledComputation.run`) returns pending `Array`s at once; the device's executor
thread later resolves the arguments, runs the executable (native kernels release the GIL, so
host work overlaps) and fills the call's `Pending`. Reading a pending Array's value
(`_value`, hence np.asarray/.item()/float/...) waits for it; an error raised while running
(a JaxRuntimeError, see driver/dispatch.py) is stored and re-raised at every wait on any output
of that call. A donated argument that is still pending travels as `Donated`: its buffer is
taken over (or copied) on the executor thread once its producer has run.

Ordering: one FIFO queue per device and one thread, so a call that takes a pending Array
runs after its producer (whose task was enqueued before the Array was returned to anyone).
Back-pressure: at most `max_in_flight` calls queued or running per device; `submit` blocks.
Small calls (few bytes, or estimated to run under INLINE_NS on the pool's threads) on an
idle executor run inline (the thread hand-off costs more than the overlap gains);
their errors are still deferred to the wait, so the semantics do not depend on the path.
`config.update("jax_cpu_enable_async_dispatch", False)` runs every call synchronously.

Fork: a child process has no executor thread; the calls the parent had queued or running
fail with a RuntimeError at their wait in the child (they never finish there), and the
child's own calls start a fresh executor.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
from typing import Callable, Sequence

import numpy as np

from ember._src.core import sharding
from ember._src.base.config import config
from ember._src.base import buffer_pool, flags
from ember._src.core.array import Array

MAX_IN_FLIGHT = 64          # calls queued or running per device before `submit` blocks
_INLINE_BYTES = 1 << 14     # idle executor + arguments and results under this: run inline
# ... or estimated to run (on all the pool's threads) under 2 ms. The hand-off to the
# executor thread and back costs ~0.1 ms on a busy 2-core machine, and the caller's Python
# that it would overlap competes for the same cores as the kernels: at 1 ms (single-core
# estimate) row sums, logsumexp, layernorm and transposes of 4-16 MB ran 5-10% slower than
# inline. A longer call still returns at once, its work overlapping the caller's.
INLINE_NS = 2_000_000


class Pending:
  """The outputs of one dispatched call, filled once (values or error) by the executor;
  `ptrs` (optional) are the outputs' addresses."""
  __slots__ = ("event", "outs", "ptrs", "error", "tb")

  def __init__(self):
    self.event = threading.Event()
    self.outs = self.ptrs = self.error = self.tb = None

  def set_result(self, outs: Sequence[np.ndarray]) -> None:
    self.outs = list(outs)
    self.event.set()

  def set_error(self, e: BaseException) -> None:
    self.error, self.tb = e, e.__traceback__
    self.event.set()

  def done(self) -> bool:
    return self.event.is_set()

  def wait(self) -> list:
    if not self.event.is_set():
      if _on_executor_thread():
        raise RuntimeError("ember: a computation running on the executor thread waited for a "
                           "result dispatched after it (this would deadlock).")
      self.event.wait()
    if self.error is not None:
      raise self.error.with_traceback(self.tb)  # the original exception, in this thread
    return self.outs


class Executor:
  """One device's FIFO queue and worker thread (started on first use)."""

  def __init__(self, name: str = "cpu:0", max_in_flight: int = MAX_IN_FLIGHT,
               device_id: int | None = None):
    self.name, self.max_in_flight, self.device_id = name, max_in_flight, device_id
    self._queue: queue.SimpleQueue = queue.SimpleQueue()
    self._slots = threading.BoundedSemaphore(max_in_flight)
    self._lock = threading.Lock()
    self._thread: threading.Thread | None = None
    self._submitted = 0   # under _lock
    self._completed = 0   # written by the worker only
    self._unfinished: dict[int, Pending] = {}   # id -> Pending of calls queued or running
    self._closed = False  # after shutdown (interpreter exit): calls run in the caller

  def pool_index(self) -> int:
    """Which kernel pool this device's split kernels run on: its index among this process's
    CPU devices (threadpool.share: each device has its share of the cores)."""
    if self._pool_index is None:
      local = [d.id for d in sharding.local_devices()]
      self._pool_index = local.index(self.device_id) if self.device_id in local else 0
    return self._pool_index

  _pool_index = None

  def in_flight(self) -> int:
    """Calls queued or running now."""
    return self._submitted - self._completed

  def idle(self) -> bool:
    return self._submitted == self._completed

  def submit(self, fn: Callable[[], Sequence[np.ndarray]], pending: Pending) -> None:
    """Enqueue `fn` (blocking while `max_in_flight` calls are in flight); its result or
    error fills `pending`."""
    if self._closed:   # a daemon thread still calling at exit: no new worker thread
      _run_into(fn, pending)
      return
    self._slots.acquire()
    with self._lock:
      self._submitted += 1
      self._unfinished[id(pending)] = pending
      if self._thread is None:
        self._thread = threading.Thread(target=self._work, name=f"ember-executor-{self.name}",
                                        daemon=True)
        self._thread.start()
      self._queue.put((fn, pending))

  def _work(self) -> None:
    ident = threading.get_ident()
    _executor_threads.add(ident)
    if self.device_id:
      _bind_pool(self.pool_index())
    try:
      self._serve()
    finally:   # idents are reused by later threads
      _executor_threads.discard(ident)

  def _serve(self) -> None:
    while True:
      item = self._queue.get()
      if item is None:
        return
      fn, pending = item
      try:
        _run_into(fn, pending)
      finally:
        self._unfinished.pop(id(pending), None)
        del fn, item, pending
        self._completed += 1
        self._slots.release()

  def drain(self) -> None:
    """Wait for everything submitted so far."""
    if self._thread is None or _on_executor_thread():
      return
    p = Pending()
    self.submit(lambda: (), p)
    p.event.wait()

  def shutdown(self) -> None:
    self.drain()
    with self._lock:   # no submit can start a new worker after this
      self._closed = True
      t, self._thread = self._thread, None
      if t is not None:
        self._queue.put(None)
    if t is not None:
      t.join()

  def _fail_after_fork(self) -> None:
    """In a forked child: the parent's worker thread does not exist here, so the calls it had
    queued or running never finish; fail them (a wait raises instead of hanging)."""
    err = RuntimeError(
        "ember: this array was being computed asynchronously in the parent process when it "
        "forked; the computation does not continue in the child. Call block_until_ready() "
        "(or ember.block_until_ready on a pytree) on the arrays a child needs before forking.")
    for p in list(self._unfinished.values()):
      p.event = threading.Event()   # its lock may have been held by the parent's thread
      p.set_error(err)


def _bind_pool(index: int) -> int:
  """Run this thread's split kernels on kernel pool `index` from now on; the index before."""
  # deferred: the CPU backend loads llvmlite, which `import ember` does not
  from ember._src.backends.cpu import threadpool
  return threadpool.bind_thread(index)


def _inline(ex: Executor, call, args, ptrs):
  """call(args, ptrs) on this thread for `ex`'s device, on that device's kernel pool."""
  index = ex.pool_index() if ex.device_id else 0
  if not index:
    return call(args, ptrs)
  before = _bind_pool(index)
  try:
    return call(args, ptrs)
  finally:
    _bind_pool(before)


def _run_into(fn: Callable[[], Sequence[np.ndarray]], pending: Pending) -> None:
  try:
    pending.set_result(fn())
  except BaseException as e:  # noqa: BLE001 -- delivered at the wait, never lost here
    pending.set_error(e)


_executors: dict[int, Executor] = {}
_executors_lock = threading.Lock()
_executor_threads: set[int] = set()   # thread idents of the executors' workers


def get_executor(device_id: int = 0) -> Executor:
  ex = _executors.get(device_id)
  if ex is None:
    flags.num_cpu_devices()   # a device runs: the CPU backend has started
    with _executors_lock:
      ex = _executors.setdefault(device_id, Executor(f"cpu:{device_id}",
                                                     device_id=device_id))
  return ex


def effects_barrier() -> None:
  """Wait until every call dispatched so far has run, so the side effects of its host
  callbacks (debug.print, io_callback) have happened (jax.effects_barrier)."""
  for ex in list(_executors.values()):
    ex.drain()


def _on_executor_thread() -> bool:
  return threading.get_ident() in _executor_threads


def _reset_after_fork() -> None:
  # the child has no worker threads: fail what the parent's executors had in flight and
  # start fresh executors (and locks) on first use
  global _executors_lock
  _executors_lock = threading.Lock()
  for ex in list(_executors.values()):
    ex._fail_after_fork()
  _executors.clear()
  _executor_threads.clear()


os.register_at_fork(after_in_child=_reset_after_fork)
# finish queued work before the interpreter tears down what the kernels use
atexit.register(lambda: [ex.shutdown() for ex in list(_executors.values())])


# --- the dispatch path used by CompiledComputation.run -------------------------------------

class Donated:
  """A donated argument that is still pending at dispatch: its buffer is taken (or copied)
  on the executor thread once its producer has run."""
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array


def _resolve(args) -> list:
  out = []
  for a in args:
    if type(a) is Donated:
      arr = a.array
      buf = arr._value
      a = arr._donate(held=1)
      if a is None:
        a = buf
      del buf
    elif not isinstance(a, np.ndarray):
      a = a._value
    out.append(a)
  return out


def _ready_arrays(outs, ptrs, out_specs) -> list:
  return Array._ready_all(outs, ptrs or [None] * len(outs), [w for _, _, w in out_specs], 1)


def _pending_arrays(pending, out_specs) -> list:
  return [Array._pending(sh, dt, w, pending, i) for i, (sh, dt, w) in enumerate(out_specs)]


def failed(e: Exception, out_specs) -> list:
  """Outputs of a call that raised `e` while running inline: pending Arrays whose wait
  raises it (the same semantics as a call run on the executor thread)."""
  pending = Pending()
  pending.set_error(e)
  return _pending_arrays(pending, out_specs)


def idle() -> bool:
  """Whether the device's executor is idle: nothing queued must run before a small call
  that runs inline, and this is not its thread (a call running there keeps it busy)."""
  ex = _executors.get(0)
  return ex is None or ex._submitted == ex._completed


def _snapshot(a: np.ndarray) -> tuple[np.ndarray, int]:
  """A copy of a caller's array in a pooled buffer (a fresh large one would page-fault on
  every call: ~0.15 ms for the MLP's 400 KB batch) and its address."""
  out, addr = buffer_pool.get_pool().empty(a.shape, a.dtype)
  np.copyto(out, a)
  return out, addr


def dispatch(call: Callable, args: list, out_specs: Sequence[tuple], *, ptrs=None,
             small: bool = False, user_arrays: Sequence[int] = (), sync: bool = False,
             device: int = 0) -> list:
  """Run `call(np_args, ptrs) -> (outputs, their addresses or None)` on `args` and return one
  Array per `out_specs` entry (shape, dtype, weak_type): pending ones under asynchronous
  dispatch, ready ones when the call ran now.

  `args` holds NumPy arrays, pending Arrays and `Donated` wrappers; `ptrs` their addresses
  (None where unknown). `small` says the call's arguments and results are few bytes: on an
  idle executor with every argument ready it runs inline, with the same deferred-error
  semantics. `user_arrays` are positions of the caller's own NumPy arrays: copied before an
  asynchronous run, so mutating them after the call cannot change what the kernels read
  (JAX copies at dispatch too). `device`: the id of the device whose executor runs it."""
  if sync or threading.get_ident() in _executor_threads \
      or not config._values["jax_cpu_enable_async_dispatch"]:
    outs, optrs = call(_resolve(args), ptrs)
    return _ready_arrays(outs, optrs, out_specs)
  ex = _executors.get(device) or get_executor(device)
  if small and ex._submitted == ex._completed:
    for a in args:
      if type(a) is not np.ndarray:
        break                    # a pending input: keep FIFO order behind its producer
    else:
      try:
        outs, optrs = _inline(ex, call, args, ptrs)
      except Exception as e:  # noqa: BLE001 -- same semantics as the executor: at the wait
        return failed(e, out_specs)
      return _ready_arrays(outs, optrs, out_specs)
  if user_arrays:
    args, ptrs = list(args), None if ptrs is None else list(ptrs)
    for i in user_arrays:
      if args[i].flags.writeable:
        args[i], addr = _snapshot(args[i])
        if ptrs is not None:
          ptrs[i] = addr
  pending = Pending()

  def run():
    outs, pending.ptrs = call(_resolve(args), ptrs)
    return outs
  ex.submit(run, pending)
  return _pending_arrays(pending, out_specs)

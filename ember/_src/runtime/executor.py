"""Asynchronous dispatch: a per-device executor thread runs jitted calls in call order.

`dispatch(execute, args, out_avals)` (called by `CompiledComputation.run`) returns pending
`Array`s at once; the device's executor thread later resolves the arguments, runs the
executable (native kernels release the GIL, so host work overlaps) and fills the call's
`Pending`. Reading a pending Array's value (`_value`, hence np.asarray/.item()/float/...)
waits for it; an error raised while running is stored and re-raised at every wait on any
output of that call.

Ordering: one FIFO queue per device and one thread, so a call that takes a pending Array
runs after its producer (whose task was enqueued before the Array was returned to anyone).
Back-pressure: at most `max_in_flight` calls queued or running per device; `submit` blocks.
Small calls on an idle executor run inline (the thread hand-off costs more than the work);
their errors are still deferred to the wait, so the semantics do not depend on the path.
`config.update("jax_cpu_enable_async_dispatch", False)` runs every call synchronously.
"""
from __future__ import annotations

import atexit
import os
import queue
import threading
from typing import Callable, Sequence

import numpy as np

from ember._src.config import config

MAX_IN_FLIGHT = 64          # calls queued or running per device before `submit` blocks
_INLINE_BYTES = 1 << 14     # idle executor + arguments and results under this: run inline


class Pending:
  """The outputs of one dispatched call, filled once (values or error) by the executor."""
  __slots__ = ("event", "outs", "error", "tb")

  def __init__(self):
    self.event = threading.Event()
    self.outs = self.error = self.tb = None

  def set_result(self, outs: Sequence[np.ndarray]) -> None:
    from ember._src.runtime.array import _freeze
    self.outs = [_freeze(o) for o in outs]
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

  def __init__(self, name: str = "cpu:0", max_in_flight: int = MAX_IN_FLIGHT):
    self.name, self.max_in_flight = name, max_in_flight
    self._queue: queue.SimpleQueue = queue.SimpleQueue()
    self._slots = threading.BoundedSemaphore(max_in_flight)
    self._lock = threading.Lock()
    self._thread: threading.Thread | None = None
    self._submitted = 0   # under _lock
    self._completed = 0   # written by the worker only

  def in_flight(self) -> int:
    """Calls queued or running now."""
    return self._submitted - self._completed

  def idle(self) -> bool:
    return self._submitted == self._completed

  def submit(self, fn: Callable[[], Sequence[np.ndarray]], pending: Pending) -> None:
    """Enqueue `fn` (blocking while `max_in_flight` calls are in flight); its result or
    error fills `pending`."""
    self._slots.acquire()
    with self._lock:
      self._submitted += 1
      if self._thread is None:
        self._thread = threading.Thread(target=self._work, name=f"ember-executor-{self.name}",
                                        daemon=True)
        self._thread.start()
      self._queue.put((fn, pending))

  def _work(self) -> None:
    while True:
      item = self._queue.get()
      if item is None:
        return
      fn, pending = item
      try:
        pending.set_result(fn())
      except BaseException as e:  # noqa: BLE001 -- delivered at the wait, never lost here
        pending.set_error(e)
      finally:
        del fn, item
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
    with self._lock:
      t, self._thread = self._thread, None
    if t is not None:
      self._queue.put(None)
      t.join()


_executors: dict[int, Executor] = {}
_executors_lock = threading.Lock()


def get_executor(device_id: int = 0) -> Executor:
  ex = _executors.get(device_id)
  if ex is None:
    with _executors_lock:
      ex = _executors.setdefault(device_id, Executor(f"cpu:{device_id}"))
  return ex


def _on_executor_thread() -> bool:
  return threading.current_thread().name.startswith("ember-executor-")


def _reset_after_fork() -> None:
  # the child has no worker threads: forget the parent's executors and their queues
  _executors.clear()


os.register_at_fork(after_in_child=_reset_after_fork)
# finish queued work before the interpreter tears down what the kernels use
atexit.register(lambda: [ex.shutdown() for ex in list(_executors.values())])


# --- the dispatch path used by CompiledComputation.run -------------------------------------

def host_arg(a, convert: Callable) -> object:
  """An argument as it travels to the executor: a NumPy array, or a pending Array (resolved
  on the executor thread)."""
  from ember._src.runtime.array import Array
  if type(a) is Array:
    fut = a._fut  # read before _buf: a waiter sets _buf, then clears _fut
    if fut is None:
      return a._buf
    return a._value if fut.done() and fut.error is None else a
  return convert(a)


def _resolve(args) -> list[np.ndarray]:
  return [a if isinstance(a, np.ndarray) else a._value for a in args]


def dispatch(execute: Callable[[list], Sequence[np.ndarray]], args: Sequence, out_avals,
             sync: bool = False) -> list:
  """Run `execute` on `args` (NumPy arrays or pending Arrays) and return one Array per
  output aval: pending ones under async dispatch, ready ones otherwise."""
  from ember._src.runtime.array import Array
  if (sync or not config.read("jax_cpu_enable_async_dispatch") or _on_executor_thread()
      or not all(isinstance(av.dtype, np.dtype) for av in out_avals)):
    outs = execute(_resolve(args))
    return [Array(o, weak_type=av.weak_type) for o, av in zip(outs, out_avals)]
  ex = get_executor()
  if ex.idle() and _small(args, out_avals):
    try:
      outs = execute(_resolve(args))
    except Exception as e:  # noqa: BLE001 -- same semantics as the executor: at the wait
      pending = Pending()
      pending.set_error(e)
      return [Array._pending(av, pending, i) for i, av in enumerate(out_avals)]
    return [Array(o, weak_type=av.weak_type) for o, av in zip(outs, out_avals)]
  # a caller's writable NumPy array is copied now, so mutating it after the call cannot
  # change what the kernel reads (JAX copies at dispatch too); Arrays' buffers are read-only
  args = [a.copy() if isinstance(a, np.ndarray) and a.flags.writeable else a for a in args]
  pending = Pending()
  ex.submit(lambda: execute(_resolve(args)), pending)
  return [Array._pending(av, pending, i) for i, av in enumerate(out_avals)]


def _small(args, out_avals) -> bool:
  n = 0
  for a in args:
    if not isinstance(a, np.ndarray):
      return False  # a pending input: keep FIFO order behind its producer
    n += a.nbytes
  for av in out_avals:
    n += av.size * av.dtype.itemsize
  return n < _INLINE_BYTES

"""Benchmark: the kernel thread pool (ember/_src/backends/cpu/threadpool.py).

Prints
- the fork/join cost of an empty job (a no-op kernel split into one chunk per thread):
  the native pool with its workers spinning (back-to-back jobs) and after they fell asleep
  (EMBER_SPIN_US apart), vs a fork/join through Python's threading.Event;
- 1-thread vs N-thread times of whole calls (selu 5000x5000, sin(x)*2+1 1000x1000, row
  sums, softmax 1000x1000), as ratios (> 1: the pool is faster). "1 thread" is the same
  module compiled under cost_model.forced_chunks(1), so only the split differs.

    .venv/bin/python bench/threadpool.py
    EMBER_NUM_THREADS=4 .venv/bin/python bench/threadpool.py

The machine is shared and noisy: read the medians and ratios, not single times.
"""
from __future__ import annotations

import ctypes
import statistics
import sys
import threading
import time

import numpy as np

import ember
import ember.numpy as jnp
from ember._src.backends.cpu import cost_model, host, threadpool


def median_us(fn, repeat: int) -> float:
  fn()
  ts = []
  for _ in range(repeat):
    t = time.perf_counter_ns()
    fn()
    ts.append(time.perf_counter_ns() - t)
  return statistics.median(ts) / 1e3


class EventPool:
  """Fork/join through threading.Event: what a pure-Python pool costs per job."""

  def __init__(self, n: int):
    self.go = [threading.Event() for _ in range(n)]
    self.done = [threading.Event() for _ in range(n)]
    self.stop = False
    self.threads = [threading.Thread(target=self._loop, args=(k,), daemon=True)
                    for k in range(n)]
    for t in self.threads:
      t.start()

  def _loop(self, k):
    while True:
      self.go[k].wait()
      self.go[k].clear()
      if self.stop:
        return
      self.done[k].set()

  def run(self):
    for e in self.go:
      e.set()
    for e in self.done:
      e.wait()
      e.clear()

  def close(self):
    self.stop = True
    for e in self.go:
      e.set()


def fork_join(n: int) -> None:
  noop = threadpool.noop_kernel_address()
  bufs = (ctypes.c_void_p * 1)()
  pool = threadpool._get_pool()
  spin = threadpool.spin_us()

  def job():
    pool.run(noop, bufs, n, n)

  def job_after_sleep():
    time.sleep((spin + 200) / 1e6)   # the workers stopped spinning and sleep on the futex
    t = time.perf_counter_ns()
    pool.run(noop, bufs, n, n)
    return time.perf_counter_ns() - t

  spinning = median_us(job, 5000)
  asleep = statistics.median(job_after_sleep() for _ in range(300)) / 1e3
  ev = EventPool(max(n - 1, 1))
  py = median_us(ev.run, 2000)
  ev.close()
  print(f"fork/join of an empty job, {n} threads (median us): pool {spinning:.2f} "
        f"(workers spinning), {asleep:.2f} (workers asleep); threading.Event {py:.1f} "
        f"(x{py / spinning:.0f})")


def selu(x, alpha=1.67, lmbda=1.05):
  return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def softmax(x):
  e = jnp.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


WORKLOADS = {
    "selu 5000x5000": (selu, (5000, 5000), 15),
    "sin(x)*2+1 1000x1000": (lambda x: jnp.sin(x) * 2 + 1, (1000, 1000), 201),
    "row sums 4000x1000": (lambda x: x.sum(axis=1), (4000, 1000), 201),
    "row sums 1000x1000": (lambda x: x.sum(axis=1), (1000, 1000), 401),
    "softmax 1000x1000": (softmax, (1000, 1000), 101),
}


def kernel_thunks(exe):
  return [t.kernel if t.kind == "scatter" else t for t in exe.thunks
          if t.kind in ("kernel", "scatter")]


def executable(f, x, chunks=None):
  """A fresh executable of f (not the jit cache's); chunks=1: every kernel on one core."""
  from ember._src.driver.compilation import compile_executable
  from ember._src.lower import lower_jaxpr
  from ember._src.passes.pipeline import optimize
  module = optimize(lower_jaxpr(ember.make_jaxpr(f)(x), "f"))
  if chunks is None:
    return compile_executable(module)
  with cost_model.forced_chunks(chunks):
    return compile_executable(module)


def interleaved_ms(a, b, repeat: int) -> tuple[float, float]:
  """Medians (ms) of a and b timed alternately, so both see the same machine load."""
  a(), b()
  ta, tb = [], []
  for _ in range(repeat):
    for f, ts in ((a, ta), (b, tb)):
      t = time.perf_counter_ns()
      f()
      ts.append(time.perf_counter_ns() - t)
  return statistics.median(ta) / 1e6, statistics.median(tb) / 1e6


def speedups(names) -> None:
  n = host.num_threads()
  print(f"\n{'workload':24s} {'chunks':>8s} {'1 thread ms':>12s} {f'{n} threads ms':>13s} "
        f"{'ratio':>6s} {'workers':>8s}")
  for name in names:
    f, shape, repeat = WORKLOADS[name]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    one, split = executable(f, x, 1), executable(f, x)
    planned = "/".join(str(k.nchunks) for k in kernel_thunks(split))
    split.execute([x])
    jobs0, chunks0 = threadpool.stats()
    t1, tn = interleaved_ms(lambda: one.execute([x]), lambda: split.execute([x]), repeat)
    jobs1, chunks1 = threadpool.stats()
    total = sum(k.nchunks for k in kernel_thunks(split) if k.nchunks > 1) * (repeat + 1)
    share = (chunks1 - chunks0) / total if total and jobs1 > jobs0 else float("nan")
    print(f"{name:24s} {planned:>8s} {t1:12.3f} {tn:13.3f} {t1 / tn:6.2f} {share:8.0%}")
  print("(whole calls, fresh outputs every call, the two timed alternately; chunks: the cost "
        "model's split per kernel;\n ratio > 1: the split run is faster; workers: the share "
        "of chunks the pool's workers ran, the caller ran the rest)")


def main(argv) -> None:
  n = host.num_threads()
  print(f"threads: {n} (EMBER_NUM_THREADS), spin: {threadpool.spin_us()} us (EMBER_SPIN_US)")
  if n > 1:
    fork_join(n)
  speedups([a for a in argv if a in WORKLOADS] or list(WORKLOADS))


if __name__ == "__main__":
  main(sys.argv[1:])

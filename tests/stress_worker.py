"""Concurrency under load: one process, many threads (tests/test_stress.py runs two of these
at once on one persistent cache directory).

For `--seconds`, at the same time:
  * callers: threads calling shared jitted functions (same `jit` objects) on varying shapes,
    so compiles, quick-tier code, background tier-ups and cache hits interleave; results are
    checked against NumPy, some kept pending and read later;
  * tracers: threads tracing fresh functions (jit, make_jaxpr, grad, vmap, named_scope)
    while eager threads run ops that must stay eager (a trace leaking from another thread
    would turn their results into tracers);
  * a thread switching the persistent cache directory on and off (compiles alternately
    write entries and tier up), one calling `clear_caches`, one calling
    `tiering.wait_idle`, one starting and stopping profiler traces.
Any wrong result or exception is reported; a thread that does not finish, or a whole run
past `--deadline`, dumps every thread's stack (faulthandler) and exits non-zero. Prints
`OK calls=<n> tier_ups=<n>` on success.

    python tests/stress_worker.py --cache-dir DIR [--seconds 4] [--seed 0]
"""
from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import threading
import time
import traceback

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax
from ember._src import core
from ember._src.backends.cpu import tiering
from ember._src.base.config import config

errors: list[str] = []
calls = [0]
tier_ups = [0]   # background tier-ups started (tiering.submit)


def _count_tier_ups() -> None:
  submit = tiering.submit

  def counting_submit(exe, job):
    tier_ups[0] += 1
    return submit(exe, job)
  tiering.submit = counting_submit
_errors_lock = threading.Lock()


def record_failure(where: str) -> None:
  with _errors_lock:
    errors.append(f"[{where}] {traceback.format_exc()}")


def close(got, want, what: str, rtol=2e-5, atol=1e-5) -> None:
  got = np.asarray(got)
  if got.shape != np.shape(want) or not np.allclose(got, want, rtol=rtol, atol=atol):
    raise AssertionError(f"{what}: got {got.ravel()[:5]} (shape {got.shape}), want "
                         f"{np.ravel(want)[:5]} (shape {np.shape(want)})")


# --- shared jitted functions and their NumPy references -------------------------------

def _np_loop(x):
  for _ in range(4):
    x = x * 0.5 + np.sin(x)
  return x


SHARED = [
    ("elementwise", ember.jit(lambda x: jnp.tanh(x) * 2.0 + jnp.exp(-x * x)),
     lambda x: np.tanh(x) * 2 + np.exp(-x * x)),
    ("reductions", ember.jit(lambda x: (jnp.sum(x, axis=-1), jnp.max(x))),
     lambda x: (x.sum(-1), x.max())),
    ("matmul", ember.jit(lambda x: x @ x.T + 1.0), lambda x: x @ x.T + 1),
    ("fori_loop", ember.jit(lambda x: lax.fori_loop(0, 4, lambda i, c: c * 0.5 + jnp.sin(c), x)),
     _np_loop),
    ("softmax", ember.jit(lambda x: ember.nn.softmax(x, axis=-1)),
     lambda x: np.exp(x - x.max(-1, keepdims=True)) /
     np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)),
]
SHAPES = [(3, 5), (8, 33), (17, 64), (64, 129), (2, 257), (40, 300)]


def caller(k: int, stop: threading.Event, seed: int) -> None:
  rng = np.random.default_rng(seed * 100 + k)
  pending = []
  try:
    while not stop.is_set():
      name, fn, ref = SHARED[rng.integers(len(SHARED))]
      x = rng.standard_normal(SHAPES[rng.integers(len(SHAPES))]).astype(np.float32)
      out = fn(x)
      pending.append((name, out, ref(x.astype(np.float64))))
      if len(pending) > 3 or rng.random() < 0.5:   # read some results later: async chains
        name, out, want = pending.pop(0)
        for g, w in zip(ember.tree_util.tree_leaves(out), ember.tree_util.tree_leaves(want)):
          close(g, w, f"caller {k}: {name}", rtol=1e-4, atol=1e-4)
      calls[0] += 1
  except Exception:  # noqa: BLE001 - reported by the main thread
    record_failure(f"caller {k}")


def _yield(v):
  """Let other threads run in the middle of a trace (as a traced function doing I/O does)."""
  time.sleep(0.001)
  return v


def tracer(k: int, stop: threading.Event, seed: int) -> None:
  """Fresh functions, traced here while other threads trace and run eagerly."""
  x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
  i = 0
  try:
    while not stop.is_set():
      c = float(k * 1000 + i)
      i += 1
      with ember.named_scope(f"t{k}"):
        g = ember.jit(lambda v: jnp.sin(v) * _yield(c) + c)
        close(g(x), np.sin(x) * c + c, f"tracer {k}: jit")
      jaxpr = ember.make_jaxpr(lambda v: v * c)(x)
      if f"{c}" not in str(jaxpr) or len(jaxpr.eqns) != 1:
        raise AssertionError(f"tracer {k}: make_jaxpr picked up another thread's trace:\n"
                             f"{jaxpr}")
      close(ember.grad(lambda v: jnp.sum(v ** 3) * c)(x), 3 * x.astype(np.float64) ** 2 * c,
            f"tracer {k}: grad", rtol=1e-5, atol=1e-3)
      close(ember.vmap(lambda r: jnp.dot(r, r) + c)(x), (x * x).sum(1) + c,
            f"tracer {k}: vmap")
      calls[0] += 1
  except Exception:  # noqa: BLE001
    record_failure(f"tracer {k}")


def eager(k: int, stop: threading.Event, seed: int) -> None:
  """Un-jitted ops: their results are concrete Arrays whatever other threads trace."""
  x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
  try:
    while not stop.is_set():
      y = jnp.cos(x) + jnp.sum(x, axis=0)
      if not isinstance(y, ember.Array) or isinstance(y, core.Tracer):
        raise AssertionError(f"eager {k}: an eager op returned {type(y).__name__}: a trace "
                             "of another thread captured it")
      close(y, np.cos(x) + x.sum(0), f"eager {k}")
      calls[0] += 1
  except Exception:  # noqa: BLE001
    record_failure(f"eager {k}")


def cache_switcher(cache_dir: str, stop: threading.Event) -> None:
  """The persistent cache on (compiles write entries, never tier) and off (they tier)."""
  try:
    on = True
    while not stop.wait(0.03):
      config.update("jax_compilation_cache_dir", cache_dir if on else None)
      on = not on
  except Exception:  # noqa: BLE001
    record_failure("cache switcher")


def cache_clearer(stop: threading.Event) -> None:
  try:
    while not stop.wait(0.15):
      ember.clear_caches()
  except Exception:  # noqa: BLE001
    record_failure("clear_caches")


def profiler_toggler(trace_dir: str, stop: threading.Event) -> None:
  """Traces start and stop (and write their files) while the others call and compile;
  a device memory profile is taken in between."""
  try:
    while not stop.wait(0.1):
      ember.profiler.start_trace(trace_dir)
      with ember.profiler.TraceAnnotation("stress"):
        stop.wait(0.05)
      ember.profiler.stop_trace()
      ember.profiler.device_memory_profile()
  except Exception:  # noqa: BLE001
    record_failure("profiler")


def idle_waiter(stop: threading.Event) -> None:
  try:
    while not stop.wait(0.2):
      if not tiering.wait_idle(timeout=60.0):
        raise AssertionError("tiering.wait_idle: tier-ups not done after 60 s")
  except Exception:  # noqa: BLE001
    record_failure("wait_idle")


def main() -> int:
  p = argparse.ArgumentParser()
  p.add_argument("--cache-dir", required=True)
  p.add_argument("--seconds", type=float, default=4.0)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--deadline", type=float, default=90.0,
                 help="seconds after which a run that has not finished is a hang")
  args = p.parse_args()
  faulthandler.enable(all_threads=True)
  faulthandler.dump_traceback_later(args.deadline, exit=True)   # a hang: stacks, exit 1
  config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  _count_tier_ups()

  stop = threading.Event()
  threads = [threading.Thread(target=caller, args=(k, stop, args.seed), name=f"caller{k}")
             for k in range(4)]
  threads += [threading.Thread(target=tracer, args=(k, stop, args.seed), name=f"tracer{k}")
              for k in range(3)]
  threads += [threading.Thread(target=eager, args=(k, stop, args.seed), name=f"eager{k}")
              for k in range(2)]
  threads += [threading.Thread(target=cache_switcher, args=(args.cache_dir, stop)),
              threading.Thread(target=cache_clearer, args=(stop,)),
              threading.Thread(target=idle_waiter, args=(stop,)),
              threading.Thread(target=profiler_toggler,
                               args=(os.path.join(args.cache_dir, os.pardir,
                                                  f"trace{args.seed}"), stop))]
  for t in threads:
    t.daemon = True
    t.start()
  stop.wait(args.seconds)
  stop.set()
  join_by = time.monotonic() + 60.0
  for t in threads:
    t.join(max(join_by - time.monotonic(), 0.0))
  stuck = [t.name for t in threads if t.is_alive()]
  if stuck:
    print(f"HANG threads did not finish: {stuck}", flush=True)
    faulthandler.dump_traceback(all_threads=True)
    return 3
  config.update("jax_compilation_cache_dir", None)
  if not tiering.wait_idle(timeout=60.0):
    print("HANG tier-ups not done 60 s after the last call", flush=True)
    faulthandler.dump_traceback(all_threads=True)
    return 3
  faulthandler.cancel_dump_traceback_later()
  if errors:
    print("FAILED\n" + "\n".join(errors), flush=True)
    return 1
  print(f"OK calls={calls[0]} tier_ups={tier_ups[0]}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())

"""Benchmark of issue 6 (transformations and control flow): ember vs JAX 0.12, one sitting.

- the seed-001 training step (784-512-512-10, batch 128; examples/mlp.py): one epoch of 100
  steps, eager (extrapolated from a few steps) and jitted;
- a 1000-step `lax.scan` of `x = 0.99 * x + sin(x)` on a 1000-vector;
- a `lax.while_loop` Newton iteration for sqrt(a) on a 1000-vector, to convergence.

Steady-state medians over BENCH_ROUNDS rounds (default 9; after a first call that compiles
and a warm-up), ember and JAX taking turns within each round so that the load of a shared
machine slows both alike; ratios JAX/ember (> 1: ember faster). `--no-eager` skips the
eager epoch.

    .venv/bin/python bench/transforms.py
    PYTHONPATH=. /path/to/jax-venv/bin/python bench/transforms.py     # with JAX beside it
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import mlp  # noqa: E402  (examples/mlp.py: the model, written against the JAX API)

import ember  # noqa: E402

try:
  import jax as real_jax
except ImportError:  # pragma: no cover - depends on the machine
  real_jax = None


def control_flow(lib):
  lax, jnp = lib.lax, lib.numpy

  def scan_loop(x):
    return lax.scan(lambda c, _: (0.99 * c + jnp.sin(c), None), x, None, length=1000)[0]

  def newton_sqrt(a):
    def body(s):
      x, _ = s
      return 0.5 * (x + a / x), x
    def cond(s):
      x, prev = s
      return jnp.max(jnp.abs(x - prev)) > 1e-6 * jnp.max(x)
    return lax.while_loop(cond, body, (a, a + 1.0))[0]
  return {"scan 1000 steps": scan_loop, "while Newton sqrt": newton_sqrt}


def call_time(f, *args, repeat=15):
  """Median seconds of `repeat` calls of `f` (each waiting for its result)."""
  def run():
    out = f(*args)
    for leaf in (out if isinstance(out, (tuple, list)) else [out]):
      np.asarray(leaf)
  times = []
  for _ in range(repeat):
    t0 = time.perf_counter()
    run()
    times.append(time.perf_counter() - t0)
  return statistics.median(times)


def epoch_runner(lib, steps=100):
  """A function timing one jitted epoch of `steps` training steps (compiled beforehand)."""
  step = lib.jit(mlp.update_with(lib))
  params = mlp.init_params(np.random.default_rng(0))
  data = list(mlp.batches(steps))
  float(step(params, *data[0], 0)[1])

  def epoch():
    p = params
    t0 = time.perf_counter()
    for n, (x, y) in enumerate(data):
      p, l = step(p, x, y, n)
    float(l)
    return time.perf_counter() - t0
  epoch()                        # warm-up: the first epoch pays for page faults and pools
  return epoch


def eager_epoch_time(steps=100, timed=5, warmup=2):
  """An eager epoch extrapolated from `timed` steps after `warmup` untimed ones (the first
  steps compile each operation's kernels: ~0.75 s, once per process)."""
  params = mlp.init_params(np.random.default_rng(0))
  data = list(mlp.batches(warmup + timed))
  for n, (x, y) in enumerate(data[:warmup]):
    params, l = mlp.update(params, x, y, n)
  float(l)
  t0 = time.perf_counter()
  for n, (x, y) in enumerate(data[warmup:], warmup):
    params, l = mlp.update(params, x, y, n)
  float(l)
  return (time.perf_counter() - t0) / timed * steps


def settle() -> None:
  """Wait for ember's background tier-ups (backends/cpu/tiering.py): the steady state runs
  the optimized code, and a background compile must not overlap the timed rounds."""
  from ember._src.backends.cpu import tiering
  tiering.wait_idle(60)


def interleaved(runners: dict, rounds: int) -> dict:
  """Median over `rounds` of each runner's time, the libraries taking turns within a round
  (a shared, noisy machine slows both alike)."""
  settle()
  times = {k: [] for k in runners}
  for _ in range(rounds):
    for k, r in runners.items():
      times[k].append(r())
  return {k: statistics.median(v) for k, v in times.items()}


def main():
  rounds = int(os.environ.get("BENCH_ROUNDS", "9"))
  libs = {"ember": ember} | ({"jax": real_jax} if real_jax else {})
  print(f"{'workload':28s}" + "".join(f"{k:>12s}" for k in libs) + ("  jax/ember" if real_jax else ""))
  if "--no-eager" not in sys.argv:
    print(f"{'mlp epoch, eager (ember)':28s}{eager_epoch_time():11.2f}s")
  t = interleaved({k: epoch_runner(lib) for k, lib in libs.items()}, rounds)
  print(f"{'mlp epoch (100 steps), jit':28s}" + "".join(f"{v:11.3f}s" for v in t.values())
        + (f"{t['jax'] / t['ember']:11.2f}" if real_jax else ""))
  x = (np.random.default_rng(0).random(1000) + 0.5).astype(np.float32)
  fns = {k: control_flow(lib) for k, lib in libs.items()}
  for name in fns["ember"]:
    jitted = {k: lib.jit(fns[k][name]) for k, lib in libs.items()}
    for f in jitted.values():
      call_time(f, x, repeat=2)  # compile and warm up
    t = interleaved({k: (lambda f=f: call_time(f, x)) for k, f in jitted.items()}, rounds)
    print(f"{name:28s}" + "".join(f"{v * 1e3:10.3f}ms" for v in t.values())
          + (f"{t['jax'] / t['ember']:11.2f}" if real_jax else ""))


if __name__ == "__main__":
  main()

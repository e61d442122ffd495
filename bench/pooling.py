"""Pooling: ember vs JAX on a (16, 32, 32, 64) f32 NHWC batch, side by side.

    PYTHONPATH=. .venv/bin/python bench/pooling.py                       # ember alone
    PYTHONPATH=. .venv/bin/python bench/pooling.py --jax-python /path/to/jax-venv/bin/python

Max-pool 2x2 stride 2 'VALID', average-pool 3x3 stride 1 'SAME' (a windowed sum scaled),
and their gradients (the max pool's through select_and_scatter_add). Each library runs in
a worker process of its own (`--worker ember|jax`; JAX 0.12 needs Python >= 3.12, so its
venv need not have ember's dependencies), one after the other, so their thread pools do
not compete. Times: the median of repeated jitted calls after a warm-up, in microseconds;
ratio = ember / JAX (below 1: ember is faster). The workers' results are compared (sums).
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

SHAPE = (16, 32, 32, 64)


def _cases(jax, lax, jnp):
  def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")

  def avg_pool(x):
    return lax.reduce_window(x, 0.0, lax.add, (1, 3, 3, 1), (1, 1, 1, 1), "SAME") / 9.0

  return {
      "max_pool 2x2/2": max_pool,
      "avg_pool 3x3/1 SAME": avg_pool,
      "grad max_pool 2x2/2": jax.grad(lambda x: jnp.sum(max_pool(x) ** 2)),
      "grad avg_pool 3x3/1": jax.grad(lambda x: jnp.sum(avg_pool(x) ** 2)),
  }


def _settle(lib: str) -> None:
  """Wait for ember's background tier-ups (backends/cpu/tiering.py): the steady state runs
  the optimized code."""
  if lib == "ember":
    from ember._src.backends.cpu import tiering
    tiering.wait_idle(60)


def _time(fn, x, reps: int, lib: str) -> float:
  fn(x).block_until_ready()
  _settle(lib)
  fn(x).block_until_ready()
  ts = []
  for _ in range(reps):
    t0 = time.perf_counter()
    fn(x).block_until_ready()
    ts.append(time.perf_counter() - t0)
  return statistics.median(ts) * 1e6


def _worker(lib: str, reps: int) -> dict:
  jax = importlib.import_module(lib)
  lax = importlib.import_module(lib + ".lax")
  jnp = importlib.import_module(lib + ".numpy")
  x = jnp.asarray(np.random.default_rng(0).normal(size=SHAPE).astype(np.float32))
  out = {}
  for name, f in _cases(jax, lax, jnp).items():
    jf = jax.jit(f)
    out[name] = (_time(jf, x, reps, lib), float(np.sum(np.asarray(jf(x), np.float64))))
  return out


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--jax-python", help="a Python whose environment has jax 0.12")
  ap.add_argument("--reps", type=int, default=50)
  ap.add_argument("--worker", choices=("ember", "jax"), help=argparse.SUPPRESS)
  args = ap.parse_args()
  if args.worker:
    print(json.dumps(_worker(args.worker, args.reps)))
    return
  run = lambda py, lib: json.loads(subprocess.run(
      [py, os.path.abspath(__file__), "--worker", lib, "--reps", str(args.reps)], check=True,
      capture_output=True, text=True).stdout)
  ember = run(sys.executable, "ember")
  jax = run(args.jax_python, "jax") if args.jax_python else {}
  print(f"{'case':24s} {'ember us':>10s} {'jax us':>10s} {'ember/jax':>9s}")
  for name, (t, total) in ember.items():
    if name in jax:
      tj, total_j = jax[name]
      assert abs(total - total_j) <= 1e-4 * max(1.0, abs(total_j)), (name, total, total_j)
      print(f"{name:24s} {t:10.1f} {tj:10.1f} {t / tj:9.2f}")
    else:
      print(f"{name:24s} {t:10.1f} {'-':>10s} {'-':>9s}")


if __name__ == "__main__":
  main()

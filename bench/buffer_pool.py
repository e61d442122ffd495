"""Steady-state time of jitted calls whose output is dropped every iteration, with output
buffers from the runtime's buffer pool vs plain np.empty (malloc; from 32 MiB up every call
maps fresh pages and pays a page fault per 4 KiB page).

Rows: `x * 2` on float32 arrays of growing size and SELU on 5000x5000 (issue 4's case:
`f(x).block_until_ready()` in a loop). Each figure is the median over rounds that alternate
the two modes (a shared machine drifts). Run: `.venv/bin/python bench/buffer_pool.py`.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--rounds", type=int, default=3)
  a = ap.parse_args()

  import ember
  import ember.numpy as jnp
  from ember._src.base import buffer_pool
  pooled_min = buffer_pool.POOL_MIN_BYTES

  def steady_ms(f, x, calls):
    for _ in range(3):
      f(x).block_until_ready()
    ts = []
    for _ in range(calls):
      t0 = time.perf_counter()
      f(x).block_until_ready()
      ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)

  double = ember.jit(lambda x: x * 2.0)
  selu = ember.jit(lambda x: 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67))
  rng = np.random.default_rng(0)
  cases = [(f"x*2 on {kib} KiB", double, jnp.ones((kib * 256,), jnp.float32),
            max(5, min(200, 200_000 // kib))) for kib in (256, 2048, 16384, 65536)]
  cases.append(("selu on 5000x5000", selu,
                jnp.asarray(rng.standard_normal((5000, 5000)).astype(np.float32)), 7))
  print(f"{'steady state (ms, median)':28s}{'pool':>10s}{'np.empty':>10s}")
  for name, f, x, calls in cases:
    res = {True: [], False: []}
    for _ in range(a.rounds):
      for pooled in (True, False):
        buffer_pool.POOL_MIN_BYTES = pooled_min if pooled else 1 << 62
        res[pooled].append(steady_ms(f, x, calls))
    buffer_pool.POOL_MIN_BYTES = pooled_min
    print(f"{name:28s}{statistics.median(res[True]):10.3f}{statistics.median(res[False]):10.3f}")
  xn = np.asarray(cases[-1][2])
  out = np.empty_like(xn)
  np.copyto(out, xn)
  ts = []
  for _ in range(7):
    t0 = time.perf_counter()
    np.copyto(out, xn)
    ts.append((time.perf_counter() - t0) * 1e3)
  print(f"{'(copy 5000x5000 f32, floor)':28s}{statistics.median(ts):10.3f}")


if __name__ == "__main__":
  main()

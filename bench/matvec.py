"""Matrix-vector products, steady state: `m @ v`, `v @ m`, a fused `tanh(m @ v + b)` and a
batched `bmk,bk->bm`, float32 and float64, for ember, NumPy and (when importable) JAX.

    taskset -c 0,1 .venv/bin/python bench/matvec.py [ember|numpy|jax ...] [--sizes 100,1000]
    # JAX needs Python >= 3.12: a venv with jax and numpy, ember from the source tree
    PYTHONPATH=. taskset -c 0,1 /path/to/jax-venv/bin/python bench/matvec.py jax

Each time is the median over rounds of the per-call time of a batch of calls (the last one
waited on), after a warm-up and, for ember, its background tier-ups (tiering.wait_idle). The
machine is shared and noisy: compare medians from one sitting, never single times.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def cases(np_, n: int, dt):
  """name -> (function of the library's numpy, arguments as NumPy arrays)."""
  rng = np.random.default_rng(0)
  m = rng.standard_normal((n, n)).astype(dt)
  v = rng.standard_normal(n).astype(dt)
  bm = rng.standard_normal((8, n // 4, n)).astype(dt)
  bv = rng.standard_normal((8, n)).astype(dt)
  return {
      "m @ v": (lambda m, v: m @ v, (m, v)),
      "v @ m": (lambda m, v: v @ m, (m, v)),
      "tanh(m@v+b)": (lambda m, v: np_.tanh(m @ v + v), (m, v)),
      "m.T @ v": (lambda m, v: m.T @ v, (m, v)),
      "bmk,bk->bm": (lambda m, v: np_.einsum("bmk,bk->bm", m, v), (bm, bv)),
  }


def batch_time(f, args, calls: int) -> float:
  t = time.perf_counter()
  for _ in range(calls):
    out = f(*args)
  if hasattr(out, "block_until_ready"):
    out.block_until_ready()
  return (time.perf_counter() - t) / calls


def steady(f, args, budget_s: float = 0.6) -> float:
  for _ in range(3):
    batch_time(f, args, 1)
  est = max(batch_time(f, args, 5), 1e-7)
  calls = max(1, min(500, int(0.01 / est)))
  rounds = max(7, min(60, int(budget_s / (est * calls))))
  return statistics.median(batch_time(f, args, calls) for _ in range(rounds))


def library(lib: str):
  """(jit or None, numpy namespace, settle) of one library."""
  if lib == "numpy":
    return None, np, lambda: None
  if lib == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    return jax.jit, jax.numpy, lambda: None
  import ember
  from ember._src.backends.cpu import tiering
  ember.config.update("jax_enable_x64", True)
  return ember.jit, ember.numpy, lambda: tiering.wait_idle(60)


def main() -> None:
  p = argparse.ArgumentParser()
  p.add_argument("libs", nargs="*", default=["ember", "numpy"])
  p.add_argument("--sizes", default="100,1000,4000")
  p.add_argument("--dtypes", default="float32,float64")
  p.add_argument("--only", default="", help="comma-separated substrings of case names")
  a = p.parse_args()
  print(f"{'case':>14} {'n':>5} {'dtype':>8} " + " ".join(f"{l:>10}" for l in a.libs)
        + "   (ms, median per call)")
  libs = {l: library(l) for l in a.libs}
  for n in map(int, a.sizes.split(",")):
    for dt in a.dtypes.split(","):
      names = cases(np, n, dt)
      for name in names:
        if not any(part in name for part in a.only.split(",")):
          continue
        row = []
        for lib, (jit, np_, settle) in libs.items():
          f, args = cases(np_, n, dt)[name]
          if jit is not None:
            f = jit(f)
            args = tuple(np_.asarray(x) for x in args)
            f(*args)
            settle()
          row.append(steady(f, args) * 1e3)
        print(f"{name:>14} {n:>5} {dt:>8} " + " ".join(f"{t:10.4f}" for t in row), flush=True)


if __name__ == "__main__":
  main()

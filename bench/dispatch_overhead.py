"""Per-call overhead of a jitted call on the cache-hit path (issue 5, item 7).

Times `f(x)` for a jitted `x + 1` on a 3-element array, the same call chained (`x = f(x)`:
every call's argument is the previous call's fresh output), and `x + 1` over a 10-leaf pytree
argument, side by side with NumPy's `x + 1` (no jit: the floor) and JAX's jitted call when
JAX is importable (`PYTHONPATH=. /work/jaxvenv/bin/python bench/dispatch_overhead.py`). Each
figure is the median over batches of `--batch` back-to-back calls of the mean time per call
(the median resists the preemptions of a shared machine; a tight loop's mean does not).
Run: `.venv/bin/python bench/dispatch_overhead.py [--calls N] [--batch B]`.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def per_call_us(fn, arg, calls: int, batch: int, sync=None) -> float:
  for _ in range(50):                       # warm up: trace and compile happen here
    out = fn(arg)
  if sync:
    sync(out)
  samples = []
  clock = time.perf_counter_ns
  for _ in range(max(calls // batch, 1)):
    t0 = clock()
    for _ in range(batch):
      out = fn(arg)
    samples.append((clock() - t0) / batch / 1e3)
  if sync:
    sync(out)
  return statistics.median(samples)


def chained(f):
  """`x = f(x)` as a function of its (ignored) argument: the state lives in a closure."""
  state = []

  def step(x):
    y = f(state.pop() if state else x)
    state.append(y)
    return y
  return step


def cases(jit, asarray, tree_map):
  x3 = asarray(np.arange(3, dtype=np.float32))
  tree = {f"w{i}": asarray(np.full(3, i, np.float32)) for i in range(10)}
  add1 = jit(lambda x: x + 1)
  tree_add1 = jit(lambda t: tree_map(lambda v: v + 1, t))
  return {"x+1 on f32[3]": (add1, x3), "x = x+1 chained, f32[3]": (chained(add1), x3),
          "x+1 on a 10-leaf pytree": (tree_add1, tree)}


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--calls", type=int, default=20000)
  ap.add_argument("--batch", type=int, default=20)
  a = ap.parse_args()

  import ember
  import ember.numpy as ejnp
  rows = {}
  for name, (f, arg) in cases(ember.jit, ejnp.asarray, ember.tree_util.tree_map).items():
    rows.setdefault(name, {})["ember.jit"] = per_call_us(
        f, arg, a.calls, a.batch, ember.block_until_ready)
  np_cases = {"x+1 on f32[3]": (lambda x: x + 1, np.arange(3, dtype=np.float32)),
              "x = x+1 chained, f32[3]": (chained(lambda x: x + 1),
                                          np.arange(3, dtype=np.float32)),
              "x+1 on a 10-leaf pytree": (
                  lambda t: {k: v + 1 for k, v in t.items()},
                  {f"w{i}": np.full(3, i, np.float32) for i in range(10)})}
  for name, (f, arg) in np_cases.items():
    rows[name]["numpy"] = per_call_us(f, arg, a.calls, a.batch)
  try:
    import jax
    import jax.numpy as jjnp
    for name, (f, arg) in cases(jax.jit, jjnp.asarray, jax.tree_util.tree_map).items():
      rows[name]["jax.jit"] = per_call_us(f, arg, a.calls, a.batch, jax.block_until_ready)
  except ImportError:
    pass

  cols = ["ember.jit", "numpy"] + (["jax.jit"] if "jax.jit" in next(iter(rows.values())) else [])
  print(f"{'per-call time (us, median)':28s}" + "".join(f"{c:>12s}" for c in cols)
        + ("   ember/jax" if "jax.jit" in cols else ""))
  for name, r in rows.items():
    line = f"{name:28s}" + "".join(f"{r[c]:12.2f}" for c in cols)
    if "jax.jit" in r:
      line += f"{r['ember.jit'] / r['jax.jit']:12.1f}x"
    print(line)


if __name__ == "__main__":
  main()

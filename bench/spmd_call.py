"""Per-call time of a cached partitioned jit over several CPU devices in one process
(EMBER_NUM_CPU_DEVICES): the data-parallel MLP step
`jit(step, in_shardings=(P(), P('data'), P('data')), out_shardings=P())` and
`jit(lambda a, b: a @ b)` on arguments split over the mesh ('data' rows / replicated).

    python bench/spmd_call.py                     # 1, 2 and 4 devices, one process each
    python bench/spmd_call.py --devices 2 --profile   # cProfile of the cached MLP step

Each figure: the median over batches of `--batch` back-to-back calls of the mean time per
call (each call waits for its result), in a worker process per device count.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _per_call(fn, batches: int, batch: int) -> float:
  fn()
  times = []
  for _ in range(batches):
    t0 = time.perf_counter()
    for _ in range(batch):
      fn()
    times.append((time.perf_counter() - t0) / batch)
  return statistics.median(times)


def cases():
  import ember as jax
  import ember.numpy as jnp
  from ember.sharding import NamedSharding, PartitionSpec as P
  n = len(jax.devices())
  mesh = jax.make_mesh((n,), ("data",))
  data, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
  r = np.random.default_rng(0)

  def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.mean((h @ w2 + b2 - y) ** 2)

  def step(p, xb, yb):
    g = jax.grad(loss)(p, xb, yb)
    return jax.tree.map(lambda a, b: a - 0.1 * b, p, g)
  params = [(r.standard_normal((8, 16)).astype(np.float32), np.zeros(16, np.float32)),
            (r.standard_normal((16, 1)).astype(np.float32), np.zeros(1, np.float32))]
  x = r.standard_normal((32, 8)).astype(np.float32)
  y = r.standard_normal((32, 1)).astype(np.float32)
  jstep = jax.jit(step, in_shardings=(repl, data, data), out_shardings=repl)
  state = [jstep(params, x, y)]

  def mlp():
    state[0] = jstep(state[0], x, y)
    jax.block_until_ready(state[0])
  a = jax.device_put(r.standard_normal((64, 32)).astype(np.float32), data)
  b = jax.device_put(r.standard_normal((32, 16)).astype(np.float32), repl)
  mm = jax.jit(lambda a, b: a @ b)
  return {"mlp step": mlp, "a @ b split": lambda: jax.block_until_ready(mm(a, b))}


def worker(args) -> None:
  fns = cases()
  if args.profile:
    import cProfile
    import pstats
    fn = fns["mlp step"]
    for _ in range(20):
      fn()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(200):
      fn()
    pr.disable()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(45)
    return
  print(json.dumps({k: _per_call(f, args.batches, args.batch) for k, f in fns.items()}))


def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--devices", type=int, nargs="*", default=[1, 2, 4])
  ap.add_argument("--batches", type=int, default=15)
  ap.add_argument("--batch", type=int, default=20)
  ap.add_argument("--profile", action="store_true")
  ap.add_argument("--worker", action="store_true")
  args = ap.parse_args()
  if args.worker:
    return worker(args)
  for n in args.devices:
    env = dict(os.environ, EMBER_NUM_CPU_DEVICES=str(n))
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--batches",
           str(args.batches), "--batch", str(args.batch)] + (["--profile"] if args.profile
                                                             else [])
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    if args.profile:
      print(f"--- {n} devices\n{out}")
    else:
      res = json.loads(out)
      print(f"{n} devices: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in res.items()))


if __name__ == "__main__":
  main()

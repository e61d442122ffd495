"""A data-parallel MLP training step as `jit(step, in_shardings=(P(), P('data'), P('data')))`
over every process's devices, in three variants timed interleaved in the same processes (in
rotating order; median of the slowest process's step time):

  per-weight  one blocking all-reduce per gradient (`ember_group_all_reduces` off);
  one group   the gradients' all-reduces grouped into one blocking collective at the end of
              the backward pass (the grouping of before: no buckets, no overlap);
  overlapped  the default: buckets of all_reduce_grouping.BUCKET_BYTES, each started as
              soon as its gradients are made and waited for where the update reads them
              (passes/async_collectives.py), so they fly while the backward pass computes.

    python bench/mpi_jit_step.py                   # mpirun -n 2 and -n 4 (1 device each)
    python bench/mpi_jit_step.py --nprocs 2 --devices 2   # 2 processes x 2 devices
    python bench/mpi_jit_step.py --local --devices 4      # one process, 4 devices
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

from allreduce import launch

# (name, layer widths, global batch)
MODELS = [("mlp 8-16-2, batch 32", (8, 16, 2), 32),
          ("mlp 64-128x4-10, batch 256", (64, 128, 128, 128, 128, 10), 256),
          ("mlp 256-512x3-10, batch 512", (256, 512, 512, 512, 10), 512),
          ("mlp 1024-1024x3-10, batch 256", (1024, 1024, 1024, 1024, 10), 256)]
VARIANTS = ("per-weight", "one group", "overlapped")
REPS = 30


def worker(mpi: bool = True) -> None:
  """One process's part (`mpi`: one of mpirun's; else the only process, its devices the
  mesh)."""
  import ember as jax
  import ember.numpy as jnp
  from ember._src.parallel import all_reduce_grouping, distributed
  from ember._src.base import flags
  from ember._src.backends.cpu import tiering
  from ember.sharding import NamedSharding, PartitionSpec as P
  if mpi:
    jax.distributed.initialize()
  n, me = jax.process_count(), jax.process_index()
  raw = distributed._STATE.comm if mpi else _OneProcess()
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  split, rep = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())

  def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
      h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return jnp.mean((h @ w + b - y) ** 2)

  def step(params, x, y):
    grads = jax.grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)

  rows = []
  for name, widths, batch in MODELS:
    rng = np.random.default_rng(0)
    params = [(rng.standard_normal((a, b)).astype(np.float32) / np.sqrt(a),
               np.zeros(b, np.float32)) for a, b in zip(widths[:-1], widths[1:])]
    x = rng.standard_normal((batch, widths[0])).astype(np.float32)
    y = rng.standard_normal((batch, widths[-1])).astype(np.float32)
    lo, hi = me * batch // n, (me + 1) * batch // n
    xs = jax.make_array_from_process_local_data(split, x[lo:hi])
    ys = jax.make_array_from_process_local_data(split, y[lo:hi])
    p0 = jax.device_put(params, rep)

    @contextlib.contextmanager
    def variant(name):   # the settings a variant's first call (its compile) runs under
      jax.config.update("ember_group_all_reduces", name != "per-weight")
      saved = all_reduce_grouping.BUCKET_BYTES
      if name == "one group":
        all_reduce_grouping.BUCKET_BYTES = 1 << 62
      with flags.override(disable_passes=() if name == "overlapped" else
                          ("async_collectives",)):
        yield
      all_reduce_grouping.BUCKET_BYTES = saved
    # a function of its own per variant: jit caches the partitioned program by function
    # (and grouping flag), not by the pass flags or bucket size the variants change
    steps = {v: jax.jit(lambda p, x, y: step(p, x, y), in_shardings=(rep, split, split),
                        out_shardings=rep) for v in VARIANTS}
    times = {v: [] for v in VARIANTS}
    outs = {}
    for i in range(REPS + 2):
      if i == 2:   # compiled: the optimized tiers of the first calls' code are in place
        tiering.wait_idle(120)
      k = 0 if i == 0 else i % len(VARIANTS)   # rotated: no variant always runs first
      for v in VARIANTS[k:] + VARIANTS[:k]:
        with variant(v) if i == 0 else contextlib.nullcontext():
          jax.config.update("ember_group_all_reduces", v != "per-weight")
          raw.Barrier()
          t0 = time.perf_counter()
          outs[v] = jax.block_until_ready(steps[v](p0, xs, ys))
          dt = raw.allreduce(time.perf_counter() - t0, op=_max() if mpi else None)
        if i >= 2:   # warm-up: compiles
          times[v].append(dt)
    for v in VARIANTS[1:]:   # the same step: grouping reorders the program, so its fusions
      for a, b in zip(jax.tree_util.tree_leaves(outs[v]),   # (and f32 rounding) may differ
                      jax.tree_util.tree_leaves(outs[VARIANTS[0]])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    rows.append((name, *(np.median(times[v]) for v in VARIANTS)))
  if me == 0:
    print(f"\njit data-parallel step, {n} processes x {jax.local_device_count()} devices "
          f"(ms, median of {REPS}, slowest process)")
    print(f"{'model':>31} " + " ".join(f"{v:>11}" for v in VARIANTS) + "  one group/overlapped")
    for name, *ts in rows:
      print(f"{name:>31} " + " ".join(f"{t * 1e3:11.2f}" for t in ts) +
            f"  {ts[1] / ts[2]:20.2f}", flush=True)
  if mpi:
    jax.distributed.shutdown()


def _max():
  from mpi4py import MPI
  return MPI.MAX


class _OneProcess:
  """The two MPI calls the timing makes, for a run without mpirun."""
  def Barrier(self):
    pass

  def allreduce(self, x, op):
    return x


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--worker", action="store_true", help="run as one of mpirun's processes")
  ap.add_argument("--nprocs", type=int, action="append", help="process counts (2 and 4)")
  ap.add_argument("--devices", type=int, default=1, help="CPU devices per process")
  ap.add_argument("--local", action="store_true",
                  help="one process, no mpirun: its --devices devices (collectives in-process)")
  args = ap.parse_args()
  if args.worker:
    worker()
    return
  os.environ["EMBER_NUM_CPU_DEVICES"] = str(args.devices)
  if args.local:
    worker(mpi=False)
    return
  for n in args.nprocs or [2, 4]:
    if launch(n, __file__):
      sys.exit(f"mpirun -n {n} failed")


if __name__ == "__main__":
  main()

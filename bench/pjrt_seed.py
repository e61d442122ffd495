"""The seed programs on a PJRT device: ember (its StableHLO run by the device's PJRT client)
beside the machine's own JAX, same results and side-by-side times (issue 19, step 3).

Programs: selu on 2^20 floats, one SGD step of a 784-512-10 MLP (value_and_grad of a
softmax cross-entropy, batch 128), pairwise Euclidean distances of 1000 points in 64-d; and
two calls whose time is all per-call overhead: `jit(lambda x: x + 1)` on 16 floats
("add_one") and the un-jitted `x + 1` on the device array ("eager_add": one op run on the
device, as JAX's eager mode runs it).
Each library runs in a worker process of its own (`--worker ember|jax`; a TPU chip takes one
client at a time, so the two never hold it together), on the same inputs; the parent
prints the largest difference between their results and the median time per call (after a
first call that compiles: `first` is that call's time) of each.

  python bench/pjrt_seed.py --platform tpu        # the TPU host: jax + jaxlib + libtpu
  python bench/pjrt_seed.py --platform cpu        # here: jaxlib's XLA CPU client

`--platform cpu` means jaxlib's CPU client (ember's "pjrt_cpu"; JAX's "cpu"). JAX runs under
`--jax-python` (default: this interpreter when it imports jax, else
/work/jaxvenv312/bin/python when present); without it only ember's column is printed.
ember needs neither llvmlite nor installation: the repository root is put on sys.path.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FALLBACK_JAX_PYTHON = "/work/jaxvenv312/bin/python"
NAMES = ("selu", "mlp_step", "pairwise_distances", "add_one", "eager_add")


def seed_programs(jax, jnp):
  """name -> (function, host arguments), written against a JAX-compatible `jax`/`jnp`."""
  r = np.random.default_rng(0)

  def selu(x):
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return scale * jnp.where(x > 0, x, alpha * jnp.expm1(x))

  def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jnp.maximum(x @ w1 + b1, 0.0)
    logits = h @ w2 + b2
    logp = logits - jax.scipy.special.logsumexp(logits, axis=1, keepdims=True)
    return -jnp.mean(jnp.sum(logp * y, axis=1))

  def mlp_step(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    new = jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
    return new, value

  def pairwise_distances(a):
    sq = jnp.sum(a * a, axis=1)
    d2 = sq[:, None] - 2.0 * (a @ a.T) + sq[None, :]
    return jnp.sqrt(jnp.maximum(d2, 0.0))

  f32 = np.float32
  params = [(r.normal(0, 0.05, (784, 512)).astype(f32), np.zeros(512, f32)),
            (r.normal(0, 0.05, (512, 10)).astype(f32), np.zeros(10, f32))]
  x = r.normal(size=(128, 784)).astype(f32)
  y = np.eye(10, dtype=f32)[r.integers(0, 10, 128)]
  return {
      "selu": (selu, (r.normal(size=1 << 20).astype(f32),)),
      "mlp_step": (mlp_step, (params, x, y)),
      "pairwise_distances": (pairwise_distances, (r.normal(size=(1000, 64)).astype(f32),)),
      "add_one": (lambda x: x + 1, (np.arange(16, dtype=f32),)),
      "eager_add": (lambda x: x + 1, (np.arange(16, dtype=f32),)),   # names "eager*": no jit
  }


def _time(call, block, repeats: int) -> dict:
  t0 = time.perf_counter()
  out = block(call())
  first = time.perf_counter() - t0
  samples = []
  for _ in range(repeats):
    t0 = time.perf_counter()
    block(call())
    samples.append(time.perf_counter() - t0)
  return {"first": first, "steady": statistics.median(samples)}, out


def worker(lib: str, platform: str, repeats: int, out_dir: str) -> None:
  """Run the programs with `lib` on `platform`; results to out_dir/<lib>.npz, times as JSON."""
  if lib == "ember":
    sys.path.insert(0, ROOT)
    import ember as jax
    import ember.numpy as jnp
    import ember.scipy.special  # noqa: F401  (jax.scipy.special.logsumexp)
    device = jax.devices("pjrt_cpu" if platform == "cpu" else platform)[0]
  else:
    import jax
    import jax.numpy as jnp
    import jax.scipy.special  # noqa: F401
    device = jax.devices(platform)[0]
  times, results = {}, {}
  for name, (fn, args) in seed_programs(jax, jnp).items():
    on_dev = jax.device_put(args, device)
    f = fn if name.startswith("eager") else jax.jit(fn)
    n = repeats * 10 if name in ("add_one", "eager_add") else repeats   # microseconds: more
    times[name], out = _time(lambda: f(*on_dev), jax.block_until_ready, n)
    leaves = jax.tree_util.tree_leaves(out)
    where = {str(d) for leaf in leaves for d in leaf.devices()}
    times[name]["devices"] = sorted(where)   # eager_add's too: it stays on the device
    for i, leaf in enumerate(leaves):
      results[f"{name}.{i}"] = np.asarray(leaf)
  np.savez(os.path.join(out_dir, f"{lib}.npz"), **results)
  print(json.dumps({"device": str(device), "times": times}))


def _jax_python(arg: str | None) -> str | None:
  if arg:
    return arg
  try:
    import jax  # noqa: F401  (only asks whether this interpreter has JAX)
    return sys.executable
  except ImportError:
    return FALLBACK_JAX_PYTHON if os.path.exists(FALLBACK_JAX_PYTHON) else None


def _run_worker(python: str, lib: str, args, out_dir: str) -> dict:
  cmd = [python, os.path.abspath(__file__), "--worker", lib, "--platform", args.platform,
         "--repeats", str(args.repeats), "--out", out_dir]
  proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
  if proc.returncode != 0:
    raise SystemExit(f"the {lib} worker failed ({' '.join(cmd)}):\n{proc.stderr[-4000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--platform", default="cpu", help="PJRT platform: cpu (jaxlib's), tpu, ...")
  p.add_argument("--repeats", type=int, default=30)
  p.add_argument("--jax-python", default=None)
  p.add_argument("--worker", choices=("ember", "jax"))
  p.add_argument("--out")
  args = p.parse_args()
  if args.worker:
    return worker(args.worker, args.platform, args.repeats, args.out)
  with tempfile.TemporaryDirectory() as out_dir:
    ember_row = _run_worker(sys.executable, "ember", args, out_dir)
    jax_python = _jax_python(args.jax_python)
    jax_row = _run_worker(jax_python, "jax", args, out_dir) if jax_python else None
    mine = dict(np.load(os.path.join(out_dir, "ember.npz")))
    theirs = dict(np.load(os.path.join(out_dir, "jax.npz"))) if jax_row else {}
  print(f"ember on {ember_row['device']}"
        + (f"; JAX ({jax_python}) on {jax_row['device']}" if jax_row else "; JAX: not run"))
  print(f"{'program':20s} {'max |ember-jax|':>16s} {'max |jax|':>10s} "
        f"{'ember first':>12s} {'jax first':>10s} {'ember ms':>9s} {'jax ms':>8s} {'ratio':>6s}")
  for name in NAMES:
    e = ember_row["times"][name]
    diff = scale = float("nan")
    if theirs:
      keys = [k for k in mine if k.startswith(name + ".")]
      diff = max(float(np.max(np.abs(mine[k].astype(np.float64) - theirs[k]))) for k in keys)
      scale = max(float(np.max(np.abs(theirs[k]))) for k in keys)
    j = jax_row["times"][name] if jax_row else None
    print(f"{name:20s} {diff:16.3g} {scale:10.3g} {e['first'] * 1e3:10.1f}ms "
          + (f"{j['first'] * 1e3:8.1f}ms {e['steady'] * 1e3:9.4f} {j['steady'] * 1e3:8.4f} "
             f"{e['steady'] / j['steady']:6.2f}" if j else
             f"{'-':>10s} {e['steady'] * 1e3:9.4f} {'-':>8s} {'-':>6s}"))


if __name__ == "__main__":
  main()

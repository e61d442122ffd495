"""Convolution benchmark (issue 17, item 5): ember vs JAX 0.12 (and the NumPy reference).

- conv2d: lax.conv_general_dilated, NHWC 16x32x32x32 -> 64 channels, 3x3 kernel, SAME,
  jitted; NumPy: ember's reference kernel (the eager impl: im2col + np.matmul);
- cnn step: one SGD training step of a small CNN under jit (conv3x3-relu-conv3x3/2-relu-
  mean over space-dense, softmax cross-entropy; grad of both convolutions and the dense
  layer), batch 16 of 32x32x3 images.

Each library runs in a worker process of its own (`--worker ember|jax`), one after the
other, so their thread pools never compete. JAX needs Python >= 3.12 and ember needs
llvmlite: the JAX worker runs under JAX_PYTHON (default /work/jaxvenv312/bin/python where
it exists), the ember worker under this interpreter. Medians of BENCH_ROUNDS (default 15)
calls after a compile and a warm-up; the machine is shared and noisy: read the ratios.

    PYTHONPATH=. .venv/bin/python bench/cnn.py
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT_JAX_PYTHON = "/work/jaxvenv312/bin/python"
NHWC = ("NHWC", "HWIO", "NHWC")


def cnn(lib):
  """The model's SGD step (params, x, labels) -> (params, loss), written against the JAX
  API of `lib` (bench/cpu_workloads.py jits it too)."""
  lax, jnp = lib.lax, lib.numpy

  def forward(params, x):
    w1, w2, wd, bd = params
    h = jnp.maximum(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=NHWC), 0)
    h = jnp.maximum(lax.conv_general_dilated(h, w2, (2, 2), "SAME", dimension_numbers=NHWC), 0)
    return jnp.mean(h, axis=(1, 2)) @ wd + bd

  def loss(params, x, labels):
    logits = forward(params, x)
    logp = logits - jnp.log(jnp.sum(jnp.exp(logits - logits.max(-1, keepdims=True)), -1,
                                    keepdims=True)) - logits.max(-1, keepdims=True)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

  def step(params, x, labels):
    value, grads = lib.value_and_grad(loss)(params, x, labels)
    return [p - 0.05 * g for p, g in zip(params, grads)], value
  return step


def cnn_inputs():
  rng = np.random.default_rng(0)
  params = [rng.normal(0, 0.3, (3, 3, 3, 16)), rng.normal(0, 0.1, (3, 3, 16, 32)),
            rng.normal(0, 0.2, (32, 10)), np.zeros(10)]
  x = rng.normal(size=(16, 32, 32, 3))
  labels = rng.integers(0, 10, 16).astype(np.int32)
  return [p.astype(np.float32) for p in params], x.astype(np.float32), labels


def conv_inputs():
  rng = np.random.default_rng(1)
  return (rng.normal(size=(16, 32, 32, 32)).astype(np.float32),
          rng.normal(size=(3, 3, 32, 64)).astype(np.float32))


def median_time(run, rounds: int) -> float:
  run()
  run()                      # compile, then warm up
  times = []
  for _ in range(rounds):
    t0 = time.perf_counter()
    run()
    times.append(time.perf_counter() - t0)
  return statistics.median(times)


def worker(name: str, rounds: int) -> dict:
  if name == "ember":
    import ember as lib
    from ember._src.backends.cpu import tiering
  else:
    import jax as lib
    tiering = None
  wait = lambda out: lib.block_until_ready(out)
  x, w = (lib.device_put(a) for a in conv_inputs())
  conv = lib.jit(lambda x, w: lib.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                           dimension_numbers=NHWC))
  step = lib.jit(cnn(lib))
  params, images, labels = cnn_inputs()
  params = [lib.device_put(p) for p in params]
  images, labels = lib.device_put(images), lib.device_put(labels)
  wait(conv(x, w))
  wait(step(params, images, labels))
  if tiering is not None:
    tiering.wait_idle(60)    # the steady state runs the tiered-up code
  out = {"conv2d": median_time(lambda: wait(conv(x, w)), rounds),
         "cnn step": median_time(lambda: wait(step(params, images, labels)), rounds)}
  if name == "ember":
    from ember._src.reference.convolution import conv_general_dilated as reference
    xn, wn = conv_inputs()
    dn = lib.lax.conv_dimension_numbers(xn.shape, wn.shape, NHWC)
    out["conv2d numpy"] = median_time(lambda: reference(
        xn, wn, window_strides=(1, 1), padding=((1, 1), (1, 1)), lhs_dilation=(1, 1),
        rhs_dilation=(1, 1), dimension_numbers=dn, feature_group_count=1,
        batch_group_count=1), max(3, rounds // 3))
  return out


def run_worker(name: str, python: str, rounds: int) -> dict | None:
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  r = subprocess.run([python, os.path.abspath(__file__), "--worker", name, str(rounds)],
                     capture_output=True, text=True, env=env)
  if r.returncode:
    print(f"{name} worker failed:\n{r.stderr[-2000:]}", file=sys.stderr)
    return None
  return json.loads(r.stdout.strip().splitlines()[-1])


def main():
  rounds = int(os.environ.get("BENCH_ROUNDS", "15"))
  jax_python = os.environ.get("JAX_PYTHON") or (
      DEFAULT_JAX_PYTHON if os.path.exists(DEFAULT_JAX_PYTHON) else None)
  ember_t = run_worker("ember", sys.executable, rounds)
  jax_t = run_worker("jax", jax_python, rounds) if jax_python else None
  if ember_t is None:
    sys.exit(1)
  print(f"{'workload':12s}{'ember':>12s}{'jax':>12s}{'numpy':>12s}  jax/ember")
  for name in ("conv2d", "cnn step"):
    e, j = ember_t[name], (jax_t or {}).get(name)
    n = ember_t.get(f"{name} numpy")
    cell = lambda v: f"{v * 1e3:10.2f}ms" if v is not None else f"{'-':>12s}"
    print(f"{name:12s}{cell(e)}{cell(j)}{cell(n)}" + (f"{j / e:11.2f}" if j else ""))


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == "--worker":
    print(json.dumps(worker(sys.argv[2], int(sys.argv[3]))))
  else:
    main()

"""Benchmark: ember's jit vs NumPy (and JAX when installed) on the compiler issue's workloads.

Prints, from one run, for each workload: steady-state time (median of repeated calls after
warm-up, each waited on with block_until_ready), first-call time (trace + compile + run),
and ember's compile-stage split (trace / lower / optimize / codegen), plus ratios.

    .venv/bin/python bench/compile_workloads.py            # all workloads
    .venv/bin/python bench/compile_workloads.py selu mlp   # a subset by name

The machine is shared and noisy: read the ratios, not single times.
"""
from __future__ import annotations

import sys
import time

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax

ember.config.update("ember_jit_backend", "cpu")

try:  # JAX is optional (it needs Python >= 3.12 for 0.11+)
  import jax as real_jax
  import jax.numpy as real_jnp
except ImportError:  # pragma: no cover - depends on the machine
  real_jax = None


def median_time(f, *args, repeat=7):
  f(*args)
  times = []
  for _ in range(repeat):
    t0 = time.perf_counter()
    out = f(*args)
    if hasattr(out, "block_until_ready"):
      out.block_until_ready()
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def workloads(np_mod, lax_mod):
  """name -> (function written against the `np_mod` namespace, argument shapes)."""
  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np_mod.where(x > 0, x, alpha * np_mod.exp(x) - alpha)

  def sin21(x):
    return np_mod.sin(x) * 2 + 1

  def explog(x, y):
    return np_mod.exp(np_mod.log(x) + y)

  def softmax(x):
    e = np_mod.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

  def pairwise_v1(X, Y):
    return np_mod.sqrt(np_mod.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1))

  def pairwise_v2(X, Y):
    x2 = np_mod.sum(X * X, axis=1)[:, None]
    y2 = np_mod.sum(Y * Y, axis=1)[None, :]
    return np_mod.sqrt(np_mod.maximum(x2 + y2 - 2 * X @ Y.T, 0.0))

  def pairwise_v3(X, Y):
    d2 = np_mod.sum(X * X, 1)[:, None] + np_mod.sum(Y * Y, 1)[None, :] - 2 * (X @ Y.T)
    return np_mod.sqrt(np_mod.clip(d2, 0.0, None))

  def mlp(x, w1, w2, w3):
    h = np_mod.maximum(x @ w1, 0.0)
    h = np_mod.maximum(h @ w2, 0.0)
    return h @ w3

  def tanh_chain(x):
    for _ in range(20):
      x = np_mod.tanh(x @ x) + 0.1
    return x

  def mmT(m):
    return m @ m.T

  def rowsum(m):
    return m.sum(axis=1)

  def colsum(m):
    return m.sum(axis=0)

  return {
      "selu": (selu, [(5000, 5000)]),
      "sin*2+1": (sin21, [(1000, 1000)]),
      "exp(log(x)+y)": (explog, [(1000, 1000), (1000, 1000)]),
      "softmax": (softmax, [(1000, 1000)]),
      "pairwise_v1": (pairwise_v1, [(1000, 64), (1500, 64)]),
      "pairwise_v2": (pairwise_v2, [(1000, 64), (1500, 64)]),
      "pairwise_v3": (pairwise_v3, [(1000, 64), (1500, 64)]),
      "mlp": (mlp, [(128, 784), (784, 512), (512, 512), (512, 10)]),
      "20x tanh(x@x)+0.1": (tanh_chain, [(64, 64)]),
      "m @ m.T": (mmT, [(2000, 2000)]),
      "row sums": (rowsum, [(2000, 2000)]),
      "column sums": (colsum, [(2000, 2000)]),
  }


def main(selected):
  rng = np.random.default_rng(0)
  ours = workloads(jnp, lax)
  theirs = workloads(np, None)
  jaxw = workloads(real_jnp, None) if real_jax else {}
  print(f"{'workload':20s} {'numpy':>9s} {'ember':>9s} {'np/ember':>8s} {'first':>9s} "
        f"{'trace':>7s} {'lower':>7s} {'optim':>7s} {'codegen':>8s}"
        + (f" {'jax':>9s} {'jax/ember':>9s}" if real_jax else ""))
  for name, (f, shapes) in ours.items():
    if selected and not any(s in name for s in selected):
      continue
    args_np = [np.abs(rng.standard_normal(s)).astype(np.float32) + 0.1 for s in shapes]
    args = [jnp.asarray(a) for a in args_np]
    t_np = median_time(theirs[name][0], *args_np)
    jf = ember.jit(f)
    t0 = time.perf_counter()
    jf(*args).block_until_ready() if hasattr(jf(*args), "block_until_ready") else None
    t_first = time.perf_counter() - t0
    t_ember = median_time(jf, *args)
    split = _stage_split(f, args)
    line = (f"{name:20s} {t_np*1e3:8.2f}ms {t_ember*1e3:8.2f}ms {t_np/t_ember:8.2f} "
            f"{t_first*1e3:8.1f}ms " + " ".join(f"{split[k]*1e3:6.1f}ms" for k in
                                                 ("trace", "lower", "optimize", "codegen")))
    if real_jax:
      jj = real_jax.jit(jaxw[name][0])
      jargs = [real_jnp.asarray(a) for a in args_np]
      t_jax = median_time(jj, *jargs)
      line += f" {t_jax*1e3:8.2f}ms {t_jax/t_ember:9.2f}"
    print(line, flush=True)


def _stage_split(f, args):
  """Time each compile stage once, on a fresh jit of the same function."""
  from ember._src import flags as flags_mod
  from ember._src.backends.cpu.compiler import compile_module as codegen
  from ember._src.passes.buffer_assignment import assign_buffers
  from ember._src.passes.pipeline import optimize
  jf = ember.jit(f)
  t0 = time.perf_counter()
  traced = jf.trace(*args)
  t1 = time.perf_counter()
  lowered = traced.lower()
  t2 = time.perf_counter()
  module = optimize(lowered.compiler_ir(), flags_mod.get())
  t3 = time.perf_counter()
  codegen(module, assign_buffers(module), flags_mod.get())
  t4 = time.perf_counter()
  return {"trace": t1 - t0, "lower": t2 - t1, "optimize": t3 - t2, "codegen": t4 - t3}


if __name__ == "__main__":
  main(sys.argv[1:])

"""The CPU benchmark of issue 4: ember vs JAX (and NumPy) on one machine, in one sitting.

For each workload it prints the steady-state median time (batches of calls, the last waited on
with block_until_ready), the first-call time (trace + lower + compile + run of a function neither has seen:
the median of FIRST_CALLS, each after clear_caches()), the ratio
JAX/ember and its geometric mean, and the achieved GB/s (minimal bytes: inputs read once,
outputs written once) and GFLOP/s (dots: 2*M*N*K) against the machine's measured copy
bandwidth and sgemm rate (NumPy's np.copyto and float32 matmul, measured at start).

    # ember alone (NumPy beside it):
    .venv/bin/python bench/cpu_workloads.py [name-substring ...]
    # ember and JAX 0.12 side by side (JAX needs Python >= 3.12: a separate venv that has
    # jax, numpy, llvmlite and, for --png, matplotlib; ember runs from the source tree):
    PYTHONPATH=. /path/to/jax-venv/bin/python bench/cpu_workloads.py \
        --markdown bench/results.md --png docs/bench.png

Modes (issue 33: fast on every machine, not only a quiet one), combinable:
    --history     each library's worker, after measuring a workload, compiles it a second time
                  (`jit(f).lower(*args).compile()`) and calls it eagerly, as a notebook does:
                  every later workload is measured after all of that in the same process
    --fresh       the opposite: each workload in new worker processes (nothing before it)
    --load N      N busy processes (a Python spin loop each; `--load cores`: one per core the
                  run may use) compete for the cores during the whole run
    --cores 0,1   the workers (and the load) run on these cores only (as `taskset -c 0,1`:
                  both libraries size their thread pools from the affinity)
The header and the Markdown name the machine: cores, instruction set, load average, mode.

Each library runs in a worker process of its own (`--worker ember|jax|numpy`), one measuring
at a time (ember's and JAX's thread pools would otherwise compete for the cores), taking turns
workload by workload: first calls alternate, then ROUNDS steady-state rounds alternate, so a
drift of the machine's speed (seconds long on this shared VM) hits both libraries alike. The
machine is shared and noisy: read ratios and medians, never a single time.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import zlib
from types import SimpleNamespace

import numpy as np

import ember
import ember.numpy as jnp
import ember.nn

try:  # JAX is optional (0.11+ needs Python >= 3.12)
  import jax as real_jax
  import jax.numpy as real_jnp
  import jax.nn as real_nn
except ImportError:  # pragma: no cover - depends on the machine
  real_jax = None


# --------------------------------------------------------------------------------------
# Workloads: each written once against a (numpy-like, nn-like, grad) namespace triple
# --------------------------------------------------------------------------------------

def workloads(lib):
  """name -> (function, argument specs, flops or 0, options). `lib` holds the library's
  `np`, `nn`, `grad`, `jit`, `lax`, `random`, `linalg` (scipy.linalg); NumPy has only `np`,
  and the workloads that need the rest are left out of its table. An argument spec is a
  shape (positive float32 data) or a function of a NumPy Generator that makes the argument.
  Options: `jit=False` for a workload that is a Python loop over jitted calls (timed as
  called; its first call is the first epoch after clear_caches)."""
  np_, nn_, grad_, lax = lib.np, lib.nn, lib.grad, lib.lax

  def selu(x, alpha=1.67, lmbda=1.05):
    return lmbda * np_.where(x > 0, x, alpha * np_.exp(x) - alpha)

  def softmax(x):
    e = np_.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

  def pairwise_v1(X, Y):
    return np_.sqrt(np_.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1))

  def pairwise_v2(X, Y):
    x2 = np_.sum(X * X, axis=1)[:, None]
    y2 = np_.sum(Y * Y, axis=1)[None, :]
    return np_.sqrt(np_.maximum(x2 + y2 - 2 * X @ Y.T, 0.0))

  def pairwise_v3(X, Y):
    d2 = np_.sum(X * X, 1)[:, None] + np_.sum(Y * Y, 1)[None, :] - 2 * (X @ Y.T)
    return np_.sqrt(np_.clip(d2, 0.0, None))

  def mlp(x, w1, w2, w3):
    h = np_.maximum(x @ w1, 0.0)
    h = np_.maximum(h @ w2, 0.0)
    return h @ w3

  def mlp_loss(params, x, y):
    return np_.mean((mlp(x, *params) - y) ** 2)

  def mlp_sgd(params, x, y):
    grads = grad_(mlp_loss)(params, x, y)
    return tuple(w - 0.01 * g for w, g in zip(params, grads))

  def mlp_train_step(x, y, w1, w2, w3):
    return mlp_sgd((w1, w2, w3), x, y)

  def tanh_chain(x):
    for _ in range(20):
      x = np_.tanh(x @ x) + 0.1
    return x

  def layernorm(x, g, b):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np_.sqrt(var + 1e-5) * g + b

  def logsumexp_np(x):   # NumPy has no logsumexp: the stable formula
    m = x.max(axis=-1, keepdims=True)
    return (np_.log(np_.exp(x - m).sum(axis=-1, keepdims=True)) + m)[..., 0]

  n, d, k = 1000, 1500, 64
  mlp_flops = 2 * 128 * (784 * 512 + 512 * 512 + 512 * 10)
  table = {
      "selu 5000²": (selu, [(5000, 5000)], 0),
      "sin(x)*2+1": (lambda x: np_.sin(x) * 2 + 1, [(1000, 1000)], 0),
      "exp(log(x)+y)": (lambda x, y: np_.exp(np_.log(x) + y), [(1000, 1000)] * 2, 0),
      "softmax": (softmax, [(1000, 1000)], 0),
      "pairwise v1": (pairwise_v1, [(n, k), (d, k)], 3 * n * d * k),
      "pairwise v2": (pairwise_v2, [(n, k), (d, k)], 2 * n * d * k),
      "pairwise v3": (pairwise_v3, [(n, k), (d, k)], 2 * n * d * k),
      "mlp forward": (mlp, [(128, 784), (784, 512), (512, 512), (512, 10)], mlp_flops),
      "20x tanh(x@x)+0.1": (tanh_chain, [(64, 64)], 20 * 2 * 64 ** 3),
      "m @ m.T": (lambda m: m @ m.T, [(2000, 2000)], 2 * 2000 ** 3),
      "tanh(m@m)@m": (lambda m: np_.tanh(m @ m) @ m, [(2000, 2000)], 4 * 2000 ** 3),
      "row sums": (lambda m: m.sum(axis=1), [(2000, 2000)], 0),
      "column sums": (lambda m: m.sum(axis=0), [(2000, 2000)], 0),
      "column sums 3001x1999": (lambda m: m.sum(axis=0), [(3001, 1999)], 0),
      "transpose": (lambda m: np_.transpose(m) + 0, [(2000, 2000)], 0),
      "a.T": (lambda m: np_.array(m.T), [(2000, 2000)], 0),
      "a.T*2+1": (lambda m: m.T * 2 + 1, [(2000, 2000)], 0),
      "a.T 1531x2417": (lambda m: np_.array(m.T), [(1531, 2417)], 0),
      "logsumexp": (nn_.logsumexp if nn_ is not None else logsumexp_np,
                    [(4096, 1024)], 0),
      "layernorm": (layernorm, [(4096, 1024), (1024,), (1024,)], 0),
      "cumsum 1e6": (lambda x: np_.cumsum(x), [(1_000_000,)], 0),
      "cumsum 1000² axis 0": (lambda m: np_.cumsum(m, axis=0), [(1000, 1000)], 0),
      "cumsum 1000² axis 1": (lambda m: np_.cumsum(m, axis=1), [(1000, 1000)], 0),
      "dispatch x+1": (lambda x: x + 1, [(3,)], 0),
      "dispatch 4 args": (lambda a, b, c, e: (a * b + c, e - 1), [(3,), (3,), (3,), (2, 2)],
                          0),
  }
  if grad_ is not None:
    table.update(training_workloads(lib, mlp_sgd, mlp_flops))
  return {name: spec if len(spec) == 4 else (*spec, {}) for name, spec in table.items()}


EPOCH_STEPS, BATCH = 50, 128


def spd(n):
  """A random well-conditioned symmetric positive-definite n x n float32 matrix."""
  def make(rng):
    a = rng.standard_normal((n, n))
    return (a @ a.T / n + np.eye(n)).astype(np.float32)
  return make


def key_data(rng):
  return rng.integers(0, 2 ** 32, 2, dtype=np.uint32)


def training_workloads(lib, mlp_sgd, mlp_flops):
  """The workloads of issue 18: training loops, small steps, small linear algebra, a
  sampled image grid and a CNN step (they need grad, jit, lax and random)."""
  np_, lax, jit, grad_ = lib.np, lib.lax, lib.jit, lib.grad
  step = jit(mlp_sgd)

  def epoch_loop(xs, ys, w1, w2, w3):
    params = (w1, w2, w3)
    for i in range(EPOCH_STEPS):
      params = step(params, xs[i], ys[i])
    return params

  def epoch_scan(xs, ys, w1, w2, w3):
    def body(params, batch):
      return mlp_sgd(params, *batch), None
    return lax.scan(body, (w1, w2, w3), (xs, ys))[0]

  def momentum_step(G, y, v, m):
    g = grad_(lambda v: 0.5 * np_.sum((G @ v - y) ** 2))(v)
    m = 0.9 * m + g
    return v - 0.01 * m, m

  def gp_nll(p, X, y):
    ls, var, noise = np_.exp(p[0]), np_.exp(p[1]), np_.exp(p[2])
    d2 = np_.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = var * np_.exp(-0.5 * d2 / ls ** 2) + (noise + 1e-3) * np_.eye(X.shape[0])
    L = np_.linalg.cholesky(K)
    alpha = lib.linalg.cho_solve((L, True), y)
    return 0.5 * y @ alpha + np_.sum(np_.log(np_.diag(L)))

  def gp_step(p, X, y):
    return p - 0.01 * grad_(gp_nll)(p, X, y)

  def image_grid(key):   # JAX's mnist_vae example: 100 sampled images as a 10x10 grid
    imgs = iter(lib.random.bernoulli(key, 0.5, (100, 784)).reshape(-1, 28, 28))
    return np_.vstack([np_.hstack([next(imgs).T for _ in range(10)]) for _ in range(10)])

  epoch = [(EPOCH_STEPS, BATCH, 784), (EPOCH_STEPS, BATCH, 10), (784, 512), (512, 512),
           (512, 10)]
  cnn_step = cnn_sgd_step(lib)
  return {
      "mlp train step": (lambda x, y, *w: mlp_sgd(w, x, y),
                         [(BATCH, 784), (BATCH, 10), (784, 512), (512, 512), (512, 10)],
                         3 * mlp_flops),
      "mlp epoch, loop": (epoch_loop, epoch, 3 * mlp_flops * EPOCH_STEPS, {"jit": False}),
      "mlp epoch, scan": (epoch_scan, epoch, 3 * mlp_flops * EPOCH_STEPS),
      "momentum step": (momentum_step, [(100, 100), (100,), (100,), (100,)], 0),
      "gp step": (gp_step, [(3,), (50, 3), (50,)], 0),
      "image grid": (image_grid, [key_data], 0),
      "cholesky 64": (np_.linalg.cholesky, [spd(64)], 0),
      "triangular solve 64": (
          lambda a, b: lib.linalg.solve_triangular(a, b, lower=True),
          [lambda rng: np.tril(spd(64)(rng)), (64, 16)], 0),
      "inv 64": (np_.linalg.inv, [spd(64)], 0),
      "cnn step": (cnn_step, [lambda r: r.normal(0, .3, (3, 3, 3, 16)).astype(np.float32),
                              lambda r: r.normal(0, .1, (3, 3, 16, 32)).astype(np.float32),
                              lambda r: r.normal(0, .2, (32, 10)).astype(np.float32),
                              lambda r: np.zeros(10, np.float32),
                              lambda r: r.normal(size=(16, 32, 32, 3)).astype(np.float32),
                              lambda r: r.integers(0, 10, 16).astype(np.int32)], 0),
  }


def cnn_sgd_step(lib):
  """bench/cnn.py's small CNN (conv3x3-relu-conv3x3/2-relu-mean-dense): one SGD step with
  the parameters as separate arguments."""
  from cnn import cnn   # bench/ is this script's directory, first on sys.path
  step = cnn(lib.module)
  return lambda w1, w2, wd, bd, x, labels: step([w1, w2, wd, bd], x, labels)


def minimal_bytes(fn_np, args) -> int:
  """Bytes a perfect implementation moves: every input read once, every output written."""
  outs = fn_np(*args)
  outs = outs if isinstance(outs, tuple) else (outs,)
  return sum(a.nbytes for a in args) + sum(np.asarray(o).nbytes for o in outs)


# --------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------

def _wait(out):
  if isinstance(out, (tuple, list)):
    for leaf in out:
      _wait(leaf)
  elif hasattr(out, "block_until_ready"):
    out.block_until_ready()


def batch_time(f, args, calls: int) -> float:
  """Mean seconds per call over `calls` back-to-back calls (the last one waited on)."""
  t0 = time.perf_counter()
  for _ in range(calls):
    out = f(*args)
  _wait(out)
  return (time.perf_counter() - t0) / calls


FIRST_CALLS = 3


def first_call(lib: str, f, args, jitted: bool = True) -> float:
  """Median over FIRST_CALLS of a first call of `f` jitted afresh, every jit and compile
  cache cleared before it (`clear_caches`, both libraries): one first call moved by +-50%
  from run to run on this shared machine."""
  jit, clear = (ember.jit, ember.clear_caches) if lib == "ember" else \
      (real_jax.jit, real_jax.clear_caches)
  times = []
  for _ in range(FIRST_CALLS):
    clear()
    jf = jit(f) if jitted else f
    t0 = time.perf_counter()
    _wait(jf(*args))
    times.append(time.perf_counter() - t0)
    settle(lib)
  return statistics.median(times)


def steady_median(f, args, budget_s: float) -> float:
  """Median per-call time over batches (calls per batch sized to ~20 ms)."""
  est = max(batch_time(f, args, 1), 1e-7)
  calls = max(1, min(1000, int(0.02 / est)))
  rounds = max(5, min(30, int(budget_s / (est * calls))))
  return statistics.median(batch_time(f, args, calls) for _ in range(rounds))


def machine_rates() -> tuple[float, float]:
  """(copy bandwidth in GB/s counting read + write, float32 matmul GFLOP/s) via NumPy: the
  copy on all cores at once (one thread per core copying its part; np.copyto releases the
  GIL), as ember's and JAX's kernels use every core."""
  from concurrent.futures import ThreadPoolExecutor
  src = np.ones(32 << 20, np.float32)           # 128 MiB
  dst = np.empty_like(src)
  n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
  parts = [(d, s) for d, s in zip(np.array_split(dst, n), np.array_split(src, n))]
  with ThreadPoolExecutor(n) as pool:
    def copy_all():
      list(pool.map(lambda p: np.copyto(*p), parts))
    copy_all()
    t_copy = statistics.median(batch_time(copy_all, (), 1) for _ in range(9))
  m = np.random.default_rng(0).standard_normal((2000, 2000)).astype(np.float32)
  t_mm = statistics.median(batch_time(np.matmul, (m, m), 1) for _ in range(7))
  return 2 * src.nbytes / t_copy / 1e9, 2 * 2000 ** 3 / t_mm / 1e9


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------

def namespace(lib: str) -> SimpleNamespace:
  """What the workloads use of one library (NumPy: only `np`)."""
  if lib == "numpy":
    return SimpleNamespace(np=np, nn=None, grad=None, jit=None, lax=None)
  j = ember if lib == "ember" else real_jax
  import importlib
  return SimpleNamespace(module=j, np=j.numpy, nn=j.nn, grad=j.grad, jit=j.jit, lax=j.lax,
                         random=j.random, linalg=importlib.import_module(
                             j.__name__ + ".scipy.linalg"))


def _library(lib: str):
  """(jit, asarray, the workload table) of one library."""
  ns = namespace(lib)
  return ns.jit, (ns.np.asarray if ns.jit else None), workloads(ns)


def jax_like_exp(lib: str):
  return jnp.exp if lib == "ember" else real_jnp.exp


def settle(lib: str) -> None:
  """Wait for ember's background tier-ups (backends/cpu/tiering.py): the steady state is
  the optimized code's, and no background compile overlaps a measurement."""
  if lib == "ember":
    from ember._src.backends.cpu import tiering
    tiering.wait_idle(60)


class Worker:
  """One library in a process of its own (`--worker LIB`), kept alive for the whole run and
  asked for one measurement at a time (JSON lines on its stdin and stdout), so that the
  driver can interleave the libraries workload by workload."""

  def __init__(self, lib: str, selected):
    self.lib = lib
    self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", lib,
                                  *selected], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True)

  def ask(self, **request):
    self.proc.stdin.write(json.dumps(request) + "\n")
    self.proc.stdin.flush()
    return self.answer()

  def answer(self):
    while True:        # a library may print to stdout too: answers start with the marker
      line = self.proc.stdout.readline()
      if not line:
        raise RuntimeError(f"the {self.lib} worker ended (see its stderr above)")
      if line.startswith(ANSWER):
        return json.loads(line[len(ANSWER):])

  def close(self):
    self.proc.stdin.close()
    self.proc.wait()


ANSWER = "@bench "


def serve(lib: str, selected) -> None:
  """The worker's loop: prepare each selected workload's arguments, then answer the
  driver's requests {"name", "what": "first" | "steady" | "bytes", "budget"}."""
  jit, asarray, table = _library(lib)
  if jit is not None:   # pay the one-time start-up (backend, LLVM, math library imports:
    # without .pyc files, e.g. under PYTHONDONTWRITEBYTECODE, those cost ~20 ms) first
    _wait(jit(lambda v: jax_like_exp(lib)(v) * 3 - 1)(np.arange(7, dtype=np.float32)))
    settle(lib)
  prepared = {}
  for name, (f, specs, _, opts) in table.items():
    if selected and not any(sel in name for sel in selected):
      continue
    rng = np.random.default_rng(zlib.crc32(name.encode()))   # same data in every worker
    args = [spec(rng) if callable(spec) else
            (np.abs(rng.standard_normal(spec)) + 0.1).astype(np.float32) for spec in specs]
    jitted = opts.get("jit", True)
    if jit is not None:
      args = [asarray(x) for x in args]
    prepared[name] = [f, args, jitted, None]
  print(ANSWER + json.dumps(sorted(prepared)), flush=True)
  for line in sys.stdin:
    req = json.loads(line)
    f, args, jitted, compiled = entry = prepared[req["name"]]
    if req["what"] == "bytes":
      out = minimal_bytes(f, args)
    elif req["what"] == "history":
      out = history(lib, f, args, jitted)
    elif req["what"] == "first":
      out = first_call(lib, f, args, jitted)
    else:
      if jit is not None and compiled is None:
        entry[3] = compiled = jit(f) if jitted else f
      out = steady_median(compiled or f, args, req["budget"])
      settle(lib)
    print(ANSWER + json.dumps(out), flush=True)


def history(lib: str, f, args, jitted: bool) -> float:
  """What a session does with a function besides calling it (--history): a second compile
  through the AOT API, then EAGER_CALLS calls of it outside jit. Returns the time taken."""
  t0 = time.perf_counter()
  if jitted:
    jit = ember.jit if lib == "ember" else real_jax.jit
    _wait(jit(f).lower(*args).compile()(*args))
  for _ in range(EAGER_CALLS):
    _wait(f(*args))
  settle(lib)
  return time.perf_counter() - t0


EAGER_CALLS = 2
ROUNDS = 3   # steady-state rounds per workload, the libraries taking turns


def measure_workload(name: str, workers: dict, budget_s: float, with_history: bool = False
                     ) -> dict:
  """One row: first calls and steady-state rounds of the jit libraries taking turns (the
  machine's speed drifts over seconds: each library sees the same drift), medians of each;
  NumPy once, with the whole budget. `with_history`: then each jit library's `history`."""
  jits = [w for lib, w in workers.items() if lib != "numpy"]
  row = {}
  firsts = {w.lib: [] for w in jits}
  for _ in range(FIRST_CALLS):
    for w in jits:
      firsts[w.lib].append(w.ask(name=name, what="first"))
  steady = {w.lib: [] for w in jits}
  for _ in range(ROUNDS):
    for w in jits:
      steady[w.lib].append(w.ask(name=name, what="steady", budget=budget_s / ROUNDS))
  for lib in firsts:
    row[lib + "_first"] = statistics.median(firsts[lib])
    row[lib] = statistics.median(steady[lib])
  if "numpy" in workers:
    row["bytes"] = workers["numpy"].ask(name=name, what="bytes")
    row["numpy"] = workers["numpy"].ask(name=name, what="steady", budget=budget_s)
  if with_history:
    for w in jits:
      w.ask(name=name, what="history")
  return row


def run(selected, budget_s: float, mode=None) -> tuple[list[dict], float, float]:
  """Every library's worker started at once (each idle while another measures), then one
  row per workload, printed as it is measured. `mode.fresh`: new workers for each workload;
  `mode.history`: each workload's `history` after it."""
  mode = mode or SimpleNamespace(fresh=False, history=False)
  copy_gbs, sgemm = machine_rates()
  libs = ["ember"] + (["jax"] if real_jax else []) + ["numpy"]
  flops = {n: spec[2] for n, spec in workloads(namespace("ember")).items()}
  names = [n for n in flops if not selected or any(sel in n for sel in selected)]
  rows = []
  for group in ([[n] for n in names] if mode.fresh else [names]):
    workers = {lib: Worker(lib, group) for lib in libs}
    try:
      ready = {lib: set(w.answer()) for lib, w in workers.items()}    # the workloads it has
      for name in group:                                 # every workload, in table order
        present = {lib: w for lib, w in workers.items() if name in ready[lib]}
        if not present:
          continue
        row = {"name": name, "flops": flops[name],
               **measure_workload(name, present, budget_s, mode.history)}
        rows.append(row)
        print(format_row(row, copy_gbs, sgemm), flush=True)
    finally:
      for w in workers.values():
        w.close()
  return rows, copy_gbs, sgemm


def _ms(t):
  return "-" if t is None else (f"{t * 1e6:.1f} µs" if t < 1e-3 else f"{t * 1e3:.2f} ms")


def _ratio(a, b):
  return "-" if a is None or b is None else f"{a / b:.2f}"


def throughput(row, copy_gbs, sgemm) -> str:
  t = row.get("ember")
  if t is None:
    return "-"
  if row["flops"]:
    g = row["flops"] / t / 1e9
    return f"{g:.0f} GFLOP/s ({100 * g / sgemm:.0f}% sgemm)"
  if row.get("bytes") and row["bytes"] > 1 << 20:
    g = row["bytes"] / t / 1e9
    return f"{g:.1f} GB/s ({100 * g / copy_gbs:.0f}% copy)"
  return "-"


COLUMNS = ("workload", "ember", "JAX", "NumPy", "JAX/ember", "first: ember", "first: JAX",
           "first JAX/ember", "ember throughput")


def cells(row, copy_gbs, sgemm) -> list[str]:
  g = row.get
  return [row["name"], _ms(g("ember")), _ms(g("jax")), _ms(g("numpy")),
          _ratio(g("jax"), g("ember")), _ms(g("ember_first")), _ms(g("jax_first")),
          _ratio(g("jax_first"), g("ember_first")), throughput(row, copy_gbs, sgemm)]


def format_row(row, copy_gbs, sgemm) -> str:
  widths = (18, 10, 10, 10, 9, 12, 12, 8, 28)
  return " ".join(c.rjust(w) if i else c.ljust(w)
                  for i, (c, w) in enumerate(zip(cells(row, copy_gbs, sgemm), widths)))


def geomean(xs):
  xs = [x for x in xs if x and x > 0]
  return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(rows) -> dict:
  both = [r for r in rows if "ember" in r and "jax" in r]
  return {"speedup": geomean([r["jax"] / r["ember"] for r in both]),
          "first": geomean([r["jax_first"] / r["ember_first"] for r in both
                            if "jax_first" in r and "ember_first" in r])}


def markdown(rows, copy_gbs, sgemm) -> str:
  s = summary(rows)
  lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
  lines += ["| " + " | ".join(cells(r, copy_gbs, sgemm)) + " |" for r in rows]
  lines += ["", f"Geometric mean JAX/ember: steady state {s['speedup']:.2f}x, first call "
                f"{s['first']:.2f}x. Machine: copy bandwidth {copy_gbs:.1f} GB/s (read + "
                f"write), NumPy sgemm {sgemm:.0f} GFLOP/s."]
  return "\n".join(lines) + "\n"


def bar_chart(rows, path: str) -> None:
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  both = [r for r in rows if "ember" in r and "jax" in r]
  names = [r["name"] for r in both]
  steady = [r["jax"] / r["ember"] for r in both]
  first = [r.get("jax_first", float("nan")) / r.get("ember_first", float("nan"))
           for r in both]
  y = np.arange(len(names))
  fig, ax = plt.subplots(figsize=(8, 0.35 * len(names) + 1.5))
  ax.barh(y - 0.2, steady, 0.4, label="steady state", color="#d9480f")
  ax.barh(y + 0.2, first, 0.4, label="first call", color="#868e96")
  ax.axvline(1.0, color="black", lw=0.8)
  ax.set_xscale("log")
  ax.set_yticks(y, names)
  ax.invert_yaxis()
  ax.set_xlabel("speed-up over JAX 0.12 (JAX time / ember time, log scale; > 1: ember faster)")
  ax.legend(loc="lower right")
  fig.tight_layout()
  fig.savefig(path, dpi=110)


def start_load(n: int) -> list:
  """n processes spinning in Python (a competing load, one per core for `--load cores`);
  they inherit the run's core affinity."""
  return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def describe_machine(cores: int, mode: str) -> str:
  """The machine as the results must name it: cores, instruction set, load, mode."""
  flags = ""
  try:
    with open("/proc/cpuinfo") as f:
      flags = next((l for l in f if l.startswith("flags")), "")
  except OSError:
    pass
  isa = next((name for feat, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"),
                                      ("asimd", "NEON")) if f" {feat}" in flags), "unknown ISA")
  load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
  return (f"Machine: {cores} cores ({os.cpu_count()} in all), {isa}, load average "
          f"{load:.1f} at start; mode: {mode}.")


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("names", nargs="*", help="substrings of workload names to run")
  p.add_argument("--budget", type=float, default=1.5,
                 help="seconds of steady-state timing per workload (default 1.5)")
  p.add_argument("--markdown", help="write the table as Markdown to this file")
  p.add_argument("--png", help="write a bar chart of the JAX/ember ratios (needs matplotlib)")
  p.add_argument("--worker", choices=("ember", "jax", "numpy"),
                 help="(internal) measure one library and print its results as JSON")
  p.add_argument("--history", action="store_true",
                 help="after each workload, compile it again and call it eagerly (a session)")
  p.add_argument("--fresh", action="store_true",
                 help="each workload in new worker processes (nothing run before it)")
  p.add_argument("--load", default="0",
                 help="busy processes competing for the cores: a number, or 'cores'")
  p.add_argument("--cores", help="run on these cores only, e.g. 0,1 (as taskset -c)")
  a = p.parse_args()
  if a.worker:
    serve(a.worker, a.names)
    return
  if a.cores:
    os.sched_setaffinity(0, {int(c) for c in a.cores.split(",")})   # workers inherit it
  cores = len(os.sched_getaffinity(0))
  spinners = start_load(cores if a.load == "cores" else int(a.load))
  try:
    mode = ", ".join(name for name, on in (("history", a.history), ("fresh", a.fresh),
                                           (f"load {len(spinners)}", spinners)) if on)
    machine = describe_machine(cores, mode or "plain")
    print(machine)
    print(" ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in
                   enumerate(zip(COLUMNS, (18, 10, 10, 10, 9, 12, 12, 8, 28)))))
    rows, copy_gbs, sgemm = run(a.names, a.budget, a)
  finally:
    for sp in spinners:
      sp.kill()
  s = summary(rows)
  print(f"\ncopy bandwidth {copy_gbs:.1f} GB/s, sgemm {sgemm:.0f} GFLOP/s")
  if real_jax:
    print(f"geometric mean JAX/ember: steady {s['speedup']:.2f}x, first call {s['first']:.2f}x")
  if a.markdown:
    with open(a.markdown, "w") as f:
      f.write(machine + "\n\n" + markdown(rows, copy_gbs, sgemm))
  if a.png:
    bar_chart(rows, a.png)


if __name__ == "__main__":
  main()

"""Per-call overhead of a jitted call on the cache-hit path (issue 5, item 7; issue 18).

Two tables:

1. Whole calls, ember vs NumPy (the floor, where the case has a NumPy form) vs JAX 0.12:
   `x + 1` on a 3-element array, the same call chained (`x = f(x)`: every argument is the
   previous call's fresh output), `x + 1` over a 10-leaf pytree, a 4-argument call, calls
   with a captured NumPy array, a Python float, a NumPy array or an eager broadcast
   (`jnp.ones(3)`, a view of one element in ember) as arguments, the
   momentum step of bench/cpu_workloads.py (two matrix-vector products, one of them
   transposed, plus elementwise work), and small dots: a 100x100 matrix-vector product, its
   transposed form (`v @ G`) and a 128x128 matmul.
2. ember's Python call path stage by stage for a few cases: each stage timed in isolation by
   calling the internal function it runs in a loop (argument flattening and the signature
   key, the cache lookup, argument checks, output allocation, the native prologue (it reads
   the arguments' and outputs' addresses from the array objects, patches them into the
   kernels' pointer tables and makes the direct kernel call, if the executable is one
   kernel; other steps run after it), output wrapping, result unflattening), their sum
   against the whole call on that path (the rest: Python call frames between the stages),
   the whole call through the native builtin that runs the same hits after the first few
   (backends/cpu/native_hit.py; table 1 times it), and, beside them, the asynchronous
   path a small call skips (hand-off to the executor thread and the wait).

Each library runs in a worker process of its own (`--worker ember|jax`): ember under this
interpreter, JAX under JAX_PYTHON (default /work/jaxvenv312/bin/python where it exists: JAX
needs Python >= 3.12, ember needs llvmlite, so neither venv imports the other). Each figure
is the median over batches of `--batch` back-to-back calls of the mean time per call (the
median resists the preemptions of a shared machine; a tight loop's mean does not).
Run: `PYTHONPATH=. .venv/bin/python bench/dispatch_overhead.py [--calls N] [--batch B]`.
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
DEFAULT_JAX_PYTHON = "/work/jaxvenv312/bin/python"
BREAKDOWN = ("x+1 on f32[3]", "4 args", "momentum step", "gemv 100x100")


def per_call_us(fn, args, calls: int, batch: int, sync=None) -> float:
  """Median over batches of the mean time per call of `fn(*args)`, in microseconds."""
  for _ in range(50):                       # warm up: trace and compile happen here
    out = fn(*args)
  if sync:
    sync(out)
  samples = []
  clock = time.perf_counter_ns
  for _ in range(max(calls // batch, 1)):
    t0 = clock()
    for _ in range(batch):
      out = fn(*args)
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


def momentum_step(grad, np_):
  def step(G, y, v, m):
    g = grad(lambda v: 0.5 * np_.sum((G @ v - y) ** 2))(v)
    m = 0.9 * m + g
    return v - 0.01 * m, m
  return step


def inputs():
  rng = np.random.default_rng(0)
  f32 = lambda *s: (np.abs(rng.standard_normal(s)) + 0.1).astype(np.float32)
  return {"x3": np.arange(3, dtype=np.float32),
          "tree": {f"w{i}": np.full(3, i, np.float32) for i in range(10)},
          "four": [f32(3), f32(3), f32(3), f32(2, 2)],
          "momentum": [f32(100, 100), f32(100), f32(100), f32(100)],
          "G": f32(100, 100), "v": f32(100), "A": f32(128, 128), "B": f32(128, 128)}


def cases(lib, jit, asarray):
  """name -> (function, argument list, NumPy's function or None) for `lib` (ember or jax)."""
  x = inputs()
  put = lambda a: asarray(a)
  tree_map = lib.tree_util.tree_map
  add1 = jit(lambda x: x + 1)
  four = lambda a, b, c, e: (a * b + c, e - 1)
  return {
      "x+1 on f32[3]": (add1, [put(x["x3"])], lambda x: x + 1),
      "x = x+1 chained, f32[3]": (chained(add1), [put(x["x3"])], chained(lambda x: x + 1)),
      "x+1 on a 10-leaf pytree": (jit(lambda t: tree_map(lambda v: v + 1, t)),
                                  [{k: put(v) for k, v in x["tree"].items()}],
                                  lambda t: {k: v + 1 for k, v in t.items()}),
      "4 args": (jit(four), [put(a) for a in x["four"]], four),
      # arguments and captures other than Arrays (each once sent ember's hits down the
      # asynchronous path)
      "x * captured NumPy array": (jit(lambda v: v * x["x3"]), [put(x["x3"])],
                                   lambda v: v * x["x3"]),
      "x * s, s a Python float": (jit(lambda v, s: v * s), [put(x["x3"]), 2.0],
                                  lambda v, s: v * s),
      "x+1 on a NumPy array": (jit(lambda x: x + 1), [x["x3"]], lambda x: x + 1),
      "x+1 on jnp.ones(3)": (jit(lambda x: x + 1), [lib.numpy.ones(3)], lambda x: x + 1),
      "momentum step": (jit(momentum_step(lib.grad, lib.numpy)),
                        [put(a) for a in x["momentum"]], None),
      "gemv 100x100": (jit(lambda G, v: G @ v), [put(x["G"]), put(x["v"])],
                       lambda G, v: G @ v),
      "gemv transposed (v @ G)": (jit(lambda G, v: v @ G), [put(x["G"]), put(x["v"])],
                                  lambda G, v: v @ G),
      "matmul 128x128": (jit(lambda a, b: a @ b), [put(x["A"]), put(x["B"])],
                         lambda a, b: a @ b),
  }


def numpy_args(args):
  return [{k: np.asarray(v) for k, v in a.items()} if isinstance(a, dict) else np.asarray(a)
          for a in args]


# --------------------------------------------------------------------------------------
# ember's call path, stage by stage
# --------------------------------------------------------------------------------------

def stage_breakdown(jf, args, calls: int, batch: int) -> list[tuple[str, float]]:
  """(stage, us per call) of ember's cache-hit path for jitted `jf` on `args`, each stage
  timed alone by calling what the path calls; then their sum, the whole call, and the
  asynchronous path's hand-off (not part of an inline call)."""
  import ember
  from ember._src import core
  from ember._src.core import trace as trace_lib
  from ember._src.driver import jit as jit_mod
  from ember._src.backends.cpu import tiering
  from ember._src.base.config import config
  from ember._src.base import profiler_events as profiler
  from ember._src.runtime import executor
  from ember._src.core.array import Array
  tk = config._jit_trace_key
  for _ in range(5):
    ember.block_until_ready(jf(*args))
  tiering.wait_idle(60)
  whole_native = per_call_us(jf, args, calls, batch, ember.block_until_ready) \
      if jf._native is not None else None
  saved = jf._native, jf._native_tries
  jf._native, jf._native_tries = None, 0    # the Python path, which the stages make up
  whole = per_call_us(jf, args, calls, batch, ember.block_until_ready)
  jf._native, jf._native_tries = saved
  key, leaves = jit_mod._fast_key(args, {}, tk)
  hit = jf._fast[key]
  entry = next(e for e in jf._cache.values() if e.hit is hit)
  comp, finish = entry.compiled, jit_mod._unflattener(entry.staged.out_tree)
  ex = comp.executable
  bufs = [a._buf for a in leaves]
  ptrs = [a._ptr for a in leaves]
  outs, out_ptrs = ex.execute_direct(bufs) or ex.execute_ptrs(bufs, ptrs)
  weak = [w for _, _, w in comp._plan.out_specs]
  direct = ex._direct
  t = lambda fn, *a: per_call_us(fn, a, calls, batch)
  stages = [
      ("call prelude (profiler, config, trace level)",
       t(lambda: (profiler.active, config._jit_trace_key is not None
                  and (not trace_lib._open_traces or core.cur_level_is_eval())))),
      ("argument flattening + signature key", t(jit_mod._fast_key, args, {}, tk)),
      ("signature cache lookup", t(jf._fast.get, key)),
      ("argument checks (flags, executor, buffers)",
       t(lambda: (config._jit_inline and executor.idle(),
                  [a._buf for a in leaves if type(a) is Array and a._ptr is not None]))),
  ]
  if direct is not None and direct[1] is not None:
    _, prologue, desc_addr, desc, specs, _, steps = direct
    empty = np.empty
    stages.append(("output allocation", t(lambda: [empty(d, dt) for d, dt in specs])
                   if specs is not None else t(ex._outputs)))
    stages.append(("native prologue (pointers) + kernels" + (" + steps" if steps else ""),
                   t(ex.execute_direct, bufs) - stages[-1][1]))
    live = bufs + list(outs)
    desc[3] = id(live)

    def native():
      prologue(desc_addr)
    stages.append(("  of which the native call alone", t(native)))
  else:
    stages.append(("output allocation", t(ex._outputs)))
    stages.append(("thunks (execute_ptrs, outputs included)",
                   t(ex.execute_ptrs, bufs, ptrs) - stages[-1][1]))
  stages.append(("output wrapping (Arrays)",
                 t(Array._ready_all, outs, out_ptrs, weak, 0, True)))   # (constructor 0:
  # a depth of its own, so the hit path's remembered depth stays as it is)
  stages.append(("result unflattening", t(finish, list(outs))))
  total = sum(v for name, v in stages if not name.startswith(" "))
  stages += [("sum of the stages", total), ("whole call, Python path", whole),
             ("rest (Python frames between stages)", whole - total)]
  if whole_native is not None:
    stages.append(("whole call, native builtin", whole_native))
  plan = comp._plan

  def handed_off():   # what a call that is not small runs: the executor thread, then a wait
    ember.block_until_ready(executor.dispatch(plan.call, bufs, plan.out_specs, ptrs=ptrs))
  stages.append(("(not inline: executor hand-off + wait)", t(handed_off)))
  return stages


# --------------------------------------------------------------------------------------
# Workers and the tables
# --------------------------------------------------------------------------------------

def worker(lib_name: str, calls: int, batch: int) -> dict:
  if lib_name == "ember":
    import ember as lib
    import ember.numpy as jnp
    from ember._src.backends.cpu import tiering
  else:
    import jax as lib
    import jax.numpy as jnp
    tiering = None
  out = {"calls": {}, "numpy": {}, "stages": {}}
  table = cases(lib, lib.jit, jnp.asarray)
  for name, (f, args, _) in table.items():
    f(*args)
    if tiering is not None:
      tiering.wait_idle(60)   # the steady state runs the tiered-up code
    out["calls"][name] = per_call_us(f, args, calls, batch, lib.block_until_ready)
  if lib_name == "ember":
    for name, (_, args, f_np) in table.items():
      if f_np is not None:
        out["numpy"][name] = per_call_us(f_np, numpy_args(args), calls, batch)
    for name in BREAKDOWN:
      f, args, _ = table[name]
      out["stages"][name] = stage_breakdown(f, args, calls, batch)
  return out


def run_worker(name: str, python: str, calls: int, batch: int) -> dict | None:
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  r = subprocess.run([python, os.path.abspath(__file__), "--worker", name, "--calls",
                      str(calls), "--batch", str(batch)], capture_output=True, text=True,
                     env=env)
  if r.returncode:
    print(f"{name} worker failed:\n{r.stderr[-2000:]}", file=sys.stderr)
    return None
  return json.loads(r.stdout.strip().splitlines()[-1])


def main():
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--calls", type=int, default=20000)
  ap.add_argument("--batch", type=int, default=20)
  ap.add_argument("--worker", choices=("ember", "jax"))
  a = ap.parse_args()
  if a.worker:
    print(json.dumps(worker(a.worker, a.calls, a.batch)))
    return
  jax_python = os.environ.get("JAX_PYTHON") or (
      DEFAULT_JAX_PYTHON if os.path.exists(DEFAULT_JAX_PYTHON) else None)
  ember_r = run_worker("ember", sys.executable, a.calls, a.batch)
  if ember_r is None:
    sys.exit(1)
  jax_r = run_worker("jax", jax_python, a.calls, a.batch) if jax_python else None
  cell = lambda v: f"{v:12.2f}" if v is not None else f"{'-':>12s}"
  print(f"{'per-call time (us, median)':30s}{'ember.jit':>12s}{'numpy':>12s}{'jax.jit':>12s}"
        f"{'jax/ember':>11s}")
  for name, e in ember_r["calls"].items():
    j = (jax_r or {}).get("calls", {}).get(name)
    print(f"{name:30s}{cell(e)}{cell(ember_r['numpy'].get(name))}{cell(j)}"
          + (f"{j / e:10.2f}x" if j else ""))
  names = list(ember_r["stages"])
  print(f"\nember's cache-hit path by stage (us per call, each stage timed alone)")
  print(f"{'stage':46s}" + "".join(f"{n[:16]:>17s}" for n in names))
  by_case = {n: dict(ember_r["stages"][n]) for n in names}
  rows = list(dict.fromkeys(s for n in names for s, _ in ember_r["stages"][n]))
  for stage in rows:
    print(f"{stage:46s}" + "".join(
        f"{by_case[n][stage]:17.2f}" if stage in by_case[n] else f"{'-':>17s}" for n in names))


if __name__ == "__main__":
  main()

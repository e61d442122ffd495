"""Benchmark: compile latency of ember's jit vs JAX (issue 4 item 6).

Prints, each measured in fresh processes (medians over `--repeat` processes):
  1. first call (trace + lower + compile + run) of small functions, in a process that
     already compiled another function ("warm": the per-function cost) and in a brand-new
     process ("cold": + lazy imports and one-time LLVM/XLA set-up), ember vs JAX;
  2. ember's per-stage split of that first call (`Compiled.compile_times`);
  3. the quick tier (`jax_disable_most_optimizations`) vs the default tier;
  4. trace + lower and the first call of 3,000-equation functions (a chain of elementwise
     ops, and one adding 3,000 small constants), with 1,000 and 10,000 for linearity.

    .venv/bin/python bench/compile_latency.py                      # ember only
    PYTHONPATH=/work/main /work/jaxvenv/bin/python bench/compile_latency.py   # + JAX

Child processes get a private bytecode cache (PYTHONPYCACHEPREFIX) so imports cost what an
installed package costs even where PYTHONDONTWRITEBYTECODE is set. The machine is shared:
read the ratios, not single times.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The child: one measurement, printed as JSON on the last line.
CHILD = r'''
import json, sys, time
lib, kind, name, warm, quick = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5] == "1"
t_import = time.perf_counter()
import numpy as np
if lib == "jax":
  import jax, jax.numpy as jnp
else:
  import ember as jax, ember.numpy as jnp
t_import = time.perf_counter() - t_import
if quick:
  jax.config.update("jax_disable_most_optimizations", True)

def selu(x):
  return 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67)
def sin21(x):
  return jnp.sin(x) * 2 + 1
def plus1(x):
  return x + 1
def softmax(x):
  e = jnp.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)
def mlp(x, w1, w2, w3):
  h = jnp.maximum(x @ w1, 0.0)
  h = jnp.maximum(h @ w2, 0.0)
  return h @ w3
def chain(n):
  def f(x):
    for i in range(n):
      x = x * 1.0001 + 0.5 if i % 2 else (jnp.sin(x) if i % 7 == 0 else x - 0.25)
    return x
  return f, [(16,)]
def consts(n):
  cs = [np.full((4,), i % 97, np.float32) for i in range(n)]
  def f(x):
    for c in cs:
      x = x + c
    return x
  return f, [(4,)]
SMALL = {"x+1": (plus1, [(100, 100)]), "sin(x)*2+1": (sin21, [(100, 100)]),
         "selu": (selu, [(100, 100)]), "softmax": (softmax, [(100, 100)]),
         "mlp fwd": (mlp, [(128, 784), (784, 512), (512, 512), (512, 10)])}
if kind == "small":
  f, shapes = SMALL[name]
else:
  f, shapes = (chain if kind == "chain" else consts)(int(name))
rng = np.random.default_rng(0)
args = [jax.device_put(rng.standard_normal(s).astype(np.float32)) for s in shapes]
for a in args:
  a.block_until_ready()
if warm:   # another function first: what remains is this function's own cost
  jax.jit(lambda x: jnp.tanh(x) * 3)(jax.device_put(np.ones(7, np.float32))).block_until_ready()
out = {"import": t_import}
jf = jax.jit(f)
if kind != "small":
  t0 = time.perf_counter()
  lowered = jf.lower(*args)
  out["trace+lower"] = time.perf_counter() - t0
  jf = jax.jit(f if kind == "small" else (chain if kind == "chain" else consts)(int(name))[0])
t0 = time.perf_counter()
jf(*args).block_until_ready()
out["first"] = time.perf_counter() - t0
if lib == "ember":   # the stages of the same compilation again, everything cleared
  jax.clear_caches()
  out["stages"] = jax.jit(f).lower(*args).compile().compile_times
print(json.dumps(out))
'''


def run_child(lib: str, kind: str, name: str, warm: bool, quick: bool, python: str) -> dict:
  env = dict(os.environ)
  env.pop("PYTHONDONTWRITEBYTECODE", None)
  env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "ember-bench-pycache")
  env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
  r = subprocess.run([python, "-c", CHILD, lib, kind, name, "1" if warm else "0",
                      "1" if quick else "0"], capture_output=True, text=True, env=env,
                     timeout=600)
  if r.returncode:
    return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
  return json.loads(r.stdout.strip().splitlines()[-1])


def median_of(results: list[dict], key: str) -> float | None:
  vals = [r[key] for r in results if key in r]
  return float(np.median(vals)) if vals else None


def measure(lib, kind, name, warm, quick, repeat, python):
  rs = [run_child(lib, kind, name, warm, quick, python) for _ in range(repeat)]
  errors = [r["error"] for r in rs if "error" in r]
  return rs, errors


def ms(v):
  return f"{v * 1e3:8.1f}ms" if v is not None else f"{'-':>10s}"


def ratio(a, b):
  return f"{a / b:6.2f}" if a is not None and b else f"{'-':>6s}"


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--repeat", type=int, default=3, help="processes per measurement")
  p.add_argument("--no-jax", action="store_true", help="skip JAX even when importable")
  p.add_argument("--sizes", default="1000,3000,10000", help="long-function sizes")
  a = p.parse_args()
  py = sys.executable
  try:
    import jax  # noqa: F401
    have_jax = not a.no_jax
  except ImportError:
    have_jax = False
  print("== first call of a small function (median of %d processes each) ==" % a.repeat)
  print(f"{'function':12s} {'mode':5s} {'ember':>10s} {'quick tier':>10s} {'jax':>10s} "
        f"{'ember/jax':>9s} {'quick/default':>13s}")
  split = {}
  for name in ("x+1", "sin(x)*2+1", "selu", "softmax", "mlp fwd"):
    for warm in (True, False):
      er, ee = measure("ember", "small", name, warm, False, a.repeat, py)
      qr, qe = measure("ember", "small", name, warm, True, a.repeat, py)
      jr, je = measure("jax", "small", name, warm, False, a.repeat, py) if have_jax else ([], [])
      e, q, j = (median_of(r, "first") for r in (er, qr, jr))
      print(f"{name:12s} {'warm' if warm else 'cold':5s} {ms(e)} {ms(q)} {ms(j)} "
            f"{ratio(e, j):>9s} {ratio(q, e):>13s}" + (f"  errors: {ee + qe + je}" if ee + qe + je else ""),
            flush=True)
      if warm and er and "stages" in er[0]:
        split[name] = {k: float(np.median([r["stages"][k] for r in er if k in r.get("stages", {})]))
                       for k in er[0]["stages"]}
  print("\n== ember's stages of that first call (warm process; ms) ==")
  cols = ("trace", "lower", "hlo_passes", "codegen", "llvm_ir", "llvm_parse", "llvm_optimize",
          "llvm_emit_object", "llvm_load", "compile")
  print(f"{'function':12s} " + " ".join(f"{c[:11]:>11s}" for c in cols))
  for name, st in split.items():
    print(f"{name:12s} " + " ".join(f"{st[c] * 1e3:11.1f}" if c in st else f"{'-':>11s}"
                                    for c in cols))
  print("\n== long functions: trace + lower, and the whole first call (one process each) ==")
  print(f"{'function':22s} {'ember t+l':>10s} {'jax t+l':>10s} {'ratio':>6s} "
        f"{'ember 1st':>10s} {'quick 1st':>10s} {'jax 1st':>10s} {'ratio':>6s}")
  for kind in ("chain", "consts"):
    for n in a.sizes.split(","):
      er, ee = measure("ember", kind, n, True, False, 1, py)
      qr, qe = measure("ember", kind, n, True, True, 1, py)
      jr, je = measure("jax", kind, n, True, False, 1, py) if have_jax else ([], [])
      etl, jtl = median_of(er, "trace+lower"), median_of(jr, "trace+lower")
      e1, q1, j1 = median_of(er, "first"), median_of(qr, "first"), median_of(jr, "first")
      label = f"{kind} of {n} eqns" if kind == "chain" else f"{n} small constants"
      print(f"{label:22s} {ms(etl)} {ms(jtl)} {ratio(etl, jtl)} {ms(e1)} {ms(q1)} {ms(j1)} "
            f"{ratio(e1, j1)}" + (f"  errors: {ee + qe + je}" if ee + qe + je else ""),
            flush=True)


if __name__ == "__main__":
  main()

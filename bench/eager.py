"""Eager (un-jitted) calls, ember vs JAX side by side: the first call and the steady state.

Each case is one eager call (a PRNG draw, a lax control-flow primitive, an elementwise op, a
reduction, a dot, a data movement, a transformation such as grad or vmap), written once
against a library namespace and run in a FRESH worker process per library and case, so that
"first" is the first call of that case in a process that has only started its backend (what
a user's script pays: tracing, op-by-op compiles, caches filling) and "steady" is the median
per-call time over batches of back-to-back calls (~20 ms each, the last result waited on with
block_until_ready, ~1 s per case), after 0.3 s of calls and ember's background tier-ups.
The table gives both times for both libraries, the ratios JAX/ember (> 1: ember faster),
their geometric means and how many cases are below 1.0x, and each library's import time
(both start their compiler there: JAX its XLA client, ember LLVM and its runtime functions).
ember keeps its eager one-op compiles on disk (driver/eager_kernels.py), so a case run
before on this machine loads them in its first call; `--cold` turns that store off for the
run, and the first calls compile, as on a machine that never ran the case.

    # ember alone:
    .venv/bin/python bench/eager.py [name-substring ...]
    # ember and JAX side by side (JAX needs Python >= 3.12: a separate venv with jax and
    # numpy; ember's workers run with ember's own interpreter, from this source tree):
    PYTHONPATH=. /path/to/jax-venv/bin/python bench/eager.py --ember-python .venv/bin/python

Workers inherit the parent's CPU affinity: run under `taskset -c 0,1` to pin both libraries
to the same 2 cores, as issue 31's table was measured. The libraries take turns case by case
(ember's worker, then JAX's), so a drift of a shared machine's speed hits both alike; still,
read the ratios of one run, not times compared across runs.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------------------
# Cases: each written once against `lib` (jnp, lax, random, jax)
# --------------------------------------------------------------------------------------

def cases(lib) -> dict:
  """name -> zero-argument thunk making one eager call. Inputs are made here, before any
  timing, from NumPy data with a fixed seed; functions handed to lax/transformations are
  defined once, so their identity (which caches may key on) is the same on every call."""
  jnp, lax, random, jax = lib.jnp, lib.lax, lib.random, lib.jax
  rng = np.random.default_rng(0)

  def data(*shape):
    return jnp.asarray(rng.random(shape, dtype=np.float32))

  key = random.key(0)
  x6, x4, y4, z4, x100 = data(10 ** 6), data(10 ** 4), data(10 ** 4), data(10 ** 4), data(100)
  m, v, m100 = data(1000, 1000), data(1000), data(100, 100)
  s = jnp.asarray((rng.random((100, 100)) + 100 * np.eye(100)).astype(np.float32))
  b = data(100)
  idx = jnp.asarray(rng.integers(0, 10 ** 6, 10 ** 5, dtype=np.int32))
  X, w = data(256, 64), data(64)
  c0 = jnp.asarray(np.float32(0.5))
  p = jnp.asarray(np.bool_(True))

  scan_body = lambda c, _: (c * 0.999 + jnp.sin(c), None)
  fori_body = lambda i, u: u * 0.999 + 0.001
  newton_cond = lambda carry: carry[0] < 50
  newton_body = lambda carry: (carry[0] + 1, 0.5 * (carry[1] + 2.0 / carry[1]))
  cond_f, cond_g = (lambda u: jnp.sin(u)), (lambda u: jnp.cos(u))
  row_sum_sin = lambda r: jnp.sum(jnp.sin(r))
  loss = lambda w: jnp.sum(jnp.tanh(X @ w) ** 2)
  row_dot = lambda r: jnp.dot(r, r)

  return {
      # PRNG
      "random.normal 1000x1000": lambda: random.normal(key, (1000, 1000)),
      "random.uniform 1000x1000": lambda: random.uniform(key, (1000, 1000)),
      "random.split 1000": lambda: random.split(key, 1000),
      "random.bits 1000x1000": lambda: random.bits(key, (1000, 1000)),
      "random.fold_in": lambda: random.fold_in(key, 7),
      "random.normal 100": lambda: random.normal(key, (100,)),
      "random.gamma 1e4": lambda: random.gamma(key, 2.0, (10000,)),
      "random.permutation 1e4": lambda: random.permutation(key, 10000),
      "random.choice 1000 of 1e4": lambda: random.choice(key, 10000, (1000,)),
      "random.bernoulli 1000x1000": lambda: random.bernoulli(key, 0.3, (1000, 1000)),
      # control flow
      "lax.scan 1000 steps": lambda: lax.scan(scan_body, c0, None, length=1000),
      "lax.fori_loop 1000 steps": lambda: lax.fori_loop(0, 1000, fori_body, v),
      "lax.while_loop newton 50": lambda: lax.while_loop(newton_cond, newton_body, (0, c0)),
      "lax.cond 1000": lambda: lax.cond(p, cond_f, cond_g, v),
      "lax.map 100x100": lambda: lax.map(row_sum_sin, m100),
      "lax.associative_scan 1e4": lambda: lax.associative_scan(jnp.add, x4),
      # elementwise
      "x + 1.0 (100)": lambda: x100 + 1.0,
      "x * y + z 1e4": lambda: x4 * y4 + z4,
      "tanh 1e6": lambda: jnp.tanh(x6),
      "exp(x) - x 1e6": lambda: jnp.exp(x6) - x6,
      "where 1e6": lambda: jnp.where(x6 > 0.5, x6, 0.0),
      # reductions
      "sum 1e6": lambda: jnp.sum(x6),
      "sum axis=0 1000x1000": lambda: jnp.sum(m, axis=0),
      "max axis=1 1000x1000": lambda: jnp.max(m, axis=1),
      "argmax 1e6": lambda: jnp.argmax(x6),
      "cumsum 1e6": lambda: jnp.cumsum(x6),
      # linalg / dot
      "a @ a 1000x1000": lambda: m @ m,
      "a @ v 1000": lambda: m @ v,
      "linalg.solve 100": lambda: jnp.linalg.solve(s, b),
      "linalg.inv 100": lambda: jnp.linalg.inv(s),
      # data movement
      "transpose 1000x1000": lambda: jnp.transpose(m, (1, 0)) + 0.0,
      "concatenate 2x1000x1000": lambda: jnp.concatenate([m, m]),
      "gather 1e5 of 1e6": lambda: x6[idx],
      "scatter-add 1e5 into 1e6": lambda: x6.at[idx].add(1.0),
      "sort 1e6": lambda: jnp.sort(x6),
      # transformations
      "grad tanh loss 256x64": lambda: jax.grad(loss)(w),
      "vmap dot 100x100": lambda: jax.vmap(row_dot)(m100),
      "jvp sin 1e4": lambda: jax.jvp(jnp.sin, (x4,), (x4,)),
      "nn.softmax 1000x1000": lambda: jax.nn.softmax(m),
  }


def namespace(lib: str) -> SimpleNamespace:
  """What the cases use of one library. Imported here, not at the top: the JAX worker
  must not pay for (or be perturbed by) importing ember, nor the parent for either."""
  mod = importlib.import_module(lib)
  return SimpleNamespace(jnp=mod.numpy, lax=mod.lax, random=mod.random, jax=mod)


# --------------------------------------------------------------------------------------
# Worker: one library, one case, one fresh process
# --------------------------------------------------------------------------------------

def batch_time(lib, thunk, calls: int) -> float:
  """Mean seconds per call over `calls` back-to-back calls (the last one waited on)."""
  t0 = time.perf_counter()
  for _ in range(calls):
    out = thunk()
  lib.jax.block_until_ready(out)
  return (time.perf_counter() - t0) / calls


def steady_median(lib, thunk, budget_s: float) -> float:
  """Median per-call time over batches (calls per batch sized to ~20 ms, >= 5 batches)."""
  est = max(batch_time(lib, thunk, 1), 1e-7)
  calls = max(1, min(10000, int(0.02 / est)))
  batches = max(5, min(50, int(budget_s / (est * calls))))
  return statistics.median(batch_time(lib, thunk, calls) for _ in range(batches))


WARM_UP_S = 0.3


def warm_up(lib, thunk) -> None:
  """Calls for WARM_UP_S (both libraries alike): ember compiles an eager signature after its
  reference runs add up to a compile's cost (driver/eager.py's rent-or-buy), JAX at its
  first call; steady state is what follows."""
  t0 = time.perf_counter()
  while time.perf_counter() - t0 < WARM_UP_S:
    lib.jax.block_until_ready(thunk())


def settle(name: str) -> None:
  """Let ember's background tier-ups finish (backends/cpu/tiering.py) so that no compile
  overlaps the steady-state batches; JAX compiles synchronously and has nothing to wait for."""
  if name == "ember":
    from ember._src.backends.cpu import tiering
    tiering.wait_idle(60)


def worker(name: str, case: str, budget_s: float) -> dict:
  t0 = time.perf_counter()
  lib = namespace(name)
  imported = time.perf_counter() - t0
  # Start the backend (client, one transfer) without compiling any op a case might share.
  lib.jax.block_until_ready(lib.jnp.asarray(np.ones(3, np.float32)))
  try:
    thunk = cases(lib)[case]
    t0 = time.perf_counter()
    lib.jax.block_until_ready(thunk())
    first = time.perf_counter() - t0
    warm_up(lib, thunk)
    settle(name)
    return {"first": first, "steady": steady_median(lib, thunk, budget_s), "import": imported}
  except Exception as e:  # reported in the table, not dropped
    msg = (str(e).strip().splitlines() or [""])[0]
    return {"error": f"{type(e).__name__}: {msg}"}


# --------------------------------------------------------------------------------------
# Parent: run the workers, print the table
# --------------------------------------------------------------------------------------

def run_worker(python: str, lib: str, case: str, budget_s: float, cold: bool = False) -> dict:
  """One case in a fresh process of `python`; its last stdout line is the JSON answer
  (a library may print before it). `cold`: ember's eager one-op compiles not loaded from
  its disk store (driver/eager_kernels.py), as on a machine that never ran the case."""
  env = dict(os.environ)
  if cold:
    env["EMBER_EAGER_KERNEL_CACHE"] = "0"
  # as on a user's machine, Python's bytecode is cached (pip compiles JAX's at install; a
  # shell that sets PYTHONDONTWRITEBYTECODE would charge ember's first compile, which
  # imports the compiler's modules, for compiling them from source every time)
  env.pop("PYTHONDONTWRITEBYTECODE", None)
  if lib == "ember":
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
  else:
    env["JAX_PLATFORMS"] = "cpu"
  cmd = [python, os.path.abspath(__file__), "--worker", lib, "--case", case,
         "--budget", str(budget_s)]
  try:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
  except subprocess.TimeoutExpired:
    return {"error": "timed out after 300 s"}
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode == 0 and lines:
    return json.loads(lines[-1])
  tail = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
  return {"error": f"worker died: {tail}"}


def ms(t: float) -> str:
  """Milliseconds to 3 significant digits, without an exponent."""
  v = t * 1e3
  return f"{v:.{max(0, 2 - math.floor(math.log10(v)))}f}" if v > 0 else "0"


def ratio(a: dict | None, b: dict | None, key: str) -> float | None:
  """JAX/ember of one column, None where either is missing or errored."""
  if not a or not b or key not in a or key not in b:
    return None
  return a[key] / b[key]


def cells(name: str, e: dict, j: dict | None) -> list[str]:
  def times(r):
    if r is None:
      return ["-", "-"]
    if "error" in r:
      return [r["error"][:60], "-"]
    return [ms(r["first"]), ms(r["steady"])]
  (ef, es), (jf, js) = times(e), times(j)
  rs, rf = ratio(j, e, "steady"), ratio(j, e, "first")
  fmt = lambda r: "-" if r is None else f"{r:.3g}x"
  return [name, ef, jf, es, js, fmt(rs), fmt(rf)]


COLUMNS = ["case", "ember first (ms)", "JAX first (ms)", "ember steady (ms)",
           "JAX steady (ms)", "JAX/ember steady", "JAX/ember first"]
WIDTHS = [27, 17, 15, 18, 16, 17, 16]


def text_row(cs: list[str]) -> str:
  return " ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                  enumerate(zip(cs, WIDTHS)))


def geomean(xs):
  return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(rows) -> list[str]:
  """Geomeans of both ratio columns and the cases below 1.0x, over the cases both ran."""
  out = []
  for key in ("steady", "first"):
    rs = [r for r in (ratio(j, e, key) for _, e, j in rows) if r is not None]
    if rs:
      out.append(f"JAX/ember {key}: geomean {geomean(rs):.3g}x over {len(rs)} cases, "
                 f"{sum(r < 1.0 for r in rs)} below 1.0x")
  if not out:
    out.append("no ratios (JAX did not run, or no case ran on both)")
  # what every first call comes after: each library starts its compiler at import (XLA's
  # client; ember's LLVM and runtime functions), which the first-call column leaves out
  imports = [f"{lib} {ms(statistics.median(ts))} ms" for lib, ts in
             (("ember", [e["import"] for _, e, _ in rows if e and "import" in e]),
              ("JAX", [j["import"] for _, _, j in rows if j and "import" in j])) if ts]
  if imports:
    out.append("import (median over the workers): " + ", ".join(imports))
  errors = [f"{name} ({lib}): {r['error']}" for name, e, j in rows
            for lib, r in (("ember", e), ("JAX", j)) if r and "error" in r]
  return out + (["errors:"] + ["  " + err for err in errors] if errors else [])


def markdown(rows) -> str:
  esc = lambda c: c.replace("|", "\\|")
  lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
  lines += ["| " + " | ".join(map(esc, cells(*row))) + " |" for row in rows]
  return "\n".join(lines + [""] + [esc(s) + "  " for s in summary(rows)]) + "\n"


def jax_python_default() -> str | None:
  return sys.executable if importlib.util.find_spec("jax") is not None else None


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("names", nargs="*", help="substrings of case names to run (default: all)")
  p.add_argument("--markdown", help="also write the table as Markdown to this file")
  p.add_argument("--no-jax", action="store_true", help="ember alone")
  p.add_argument("--jax-python", help="interpreter that has jax (default: this one if it "
                 "can import jax, else none)")
  p.add_argument("--ember-python", default=sys.executable,
                 help="interpreter for ember's workers (default: this one)")
  p.add_argument("--budget", type=float, default=1.0,
                 help="seconds of steady-state timing per case and library (default 1)")
  p.add_argument("--cold", action="store_true",
                 help="ember's first calls compile (its store of eager one-op compiles off, "
                      "as on a machine that never ran the case; default: the store as it is)")
  p.add_argument("--worker", choices=("ember", "jax"), help=argparse.SUPPRESS)
  p.add_argument("--case", help=argparse.SUPPRESS)
  a = p.parse_args()
  if a.worker:
    print(json.dumps(worker(a.worker, a.case, a.budget)), flush=True)
    return

  jax_python = None if a.no_jax else (a.jax_python or jax_python_default())
  # The case list without importing either library: names only, from a stand-in namespace.
  names = [n for n in cases(stub_namespace()) if not a.names or any(s in n for s in a.names)]
  print(f"ember: {a.ember_python}; JAX: {jax_python or 'none'}; "
        f"{len(os.sched_getaffinity(0))} cores in this process's affinity; ember's eager "
        f"store of one-op compiles {'off (--cold)' if a.cold else 'as it is'}")
  print(text_row(COLUMNS), flush=True)
  rows = []
  for name in names:   # the libraries take turns, case by case
    e = run_worker(a.ember_python, "ember", name, a.budget, a.cold)
    j = run_worker(jax_python, "jax", name, a.budget) if jax_python else None
    rows.append((name, e, j))
    print(text_row(cells(name, e, j)), flush=True)
  print("\n" + "\n".join(summary(rows)))
  if a.markdown:
    with open(a.markdown, "w") as f:
      f.write(markdown(rows))


class _Stub:
  """Accepts any attribute access or call: lets cases() run to list the names without a
  library (the parent may lack ember's or JAX's dependencies)."""
  def __getattr__(self, _):
    return self

  def __call__(self, *args, **kwargs):
    return self


def stub_namespace() -> SimpleNamespace:
  s = _Stub()
  return SimpleNamespace(jnp=s, lax=s, random=s, jax=s)


if __name__ == "__main__":
  main()

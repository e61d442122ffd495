"""Generate tests/data/jax_cpu.xplane.pb and tests/data/jax_xplane.json: an XSpace real JAX
wrote, and what real JAX's `jax.profiler.ProfileData` reads from XSpaces, for
tests/test_profiler_xplane.py. Run with the oracle interpreter, from the repository root:

    PYTHONPATH=. /work/jaxvenv/bin/python tests/data/make_jax_xplane.py

jax_xplane.json holds
  jax_trace           JAX's reading of jax_cpu.xplane.pb (a CPU trace of one small jitted
                      call inside a TraceAnnotation)
  synthetic_events    Chrome trace events covering what ember's encoder must handle (several
                      threads, an unnamed one, zero/fractional times, int/float/str/other args)
  synthetic_jax_view  JAX's reading of the XSpace ember's encoder makes from them: JAX's C++
                      reader is the oracle for the encoder
A reading is [{name, stats, lines: [{name, events: [{name, start_ns, duration_ns, end_ns,
stats}]}]}], stats as [name, value] pairs.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp

from ember._src.runtime.profiler import (  # ember's encoder (the repository root on PYTHONPATH)
    xplane)

HERE = os.path.dirname(os.path.abspath(__file__))


def reading(pdata) -> list:
  return [{"name": p.name, "stats": [list(s) for s in p.stats],
           "lines": [{"name": ln.name,
                      "events": [{"name": e.name, "start_ns": e.start_ns,
                                  "duration_ns": e.duration_ns, "end_ns": e.end_ns,
                                  "stats": [list(s) for s in e.stats]} for e in ln.events]}
                     for ln in p.lines]}
          for p in pdata.planes]


def jax_trace() -> list:
  f = jax.jit(lambda x: jnp.sin(x) @ x)    # a dot: its thunks run on a tf_XLAExecute thread
  x = jnp.ones((8, 8))
  f(x).block_until_ready()
  log_dir = tempfile.mkdtemp()
  with jax.profiler.trace(log_dir):
    with jax.profiler.TraceAnnotation("step_0", n=3):
      f(x).block_until_ready()
  (path,) = glob.glob(log_dir + "/**/*.xplane.pb", recursive=True)
  shutil.copy(path, os.path.join(HERE, "jax_cpu.xplane.pb"))
  shutil.rmtree(log_dir)
  return reading(jax.profiler.ProfileData.from_file(os.path.join(HERE, "jax_cpu.xplane.pb")))


SYNTHETIC = [
    {"ph": "M", "pid": 7, "name": "process_name", "args": {"name": "/host:CPU"}},
    {"ph": "M", "pid": 7, "tid": 11, "name": "thread_name", "args": {"name": "python"}},
    {"ph": "M", "pid": 7, "tid": 22, "name": "thread_name", "args": {"name": "ember-executor-0"}},
    {"ph": "X", "pid": 7, "tid": 11, "ts": 0.0, "dur": 100.5, "name": "outer",
     "args": {"step_num": "0", "zero": 0, "neg": -5, "big": 2 ** 62, "min": -2 ** 63,
              "flag": True}},
    {"ph": "X", "pid": 7, "tid": 11, "ts": 1.25, "dur": 0.0, "name": "h\u00e9llo \u2713",
     "args": {"x": 0.1, "z": 0.0, "n": -2.5, "huge": 1e300, "s": "", "u": "\u00e9t\u00e9"}},
    {"ph": "X", "pid": 7, "tid": 22, "ts": 12.345, "dur": 3.001, "name": "fusion"},
    {"ph": "X", "pid": 7, "tid": 22, "ts": 20.0, "dur": 1.0, "name": "fusion",
     "args": {"hlo_op": "fusion", "shape": [2, 3], "huge_int": 2 ** 70}},
    {"ph": "X", "pid": 7, "tid": 33, "ts": 50.0, "dur": 2.0, "name": "outer"},
]


def main() -> None:
  synthetic = xplane.xspace_from_chrome_events(SYNTHETIC, "testhost")
  data = {"jax_trace": jax_trace(), "synthetic_events": SYNTHETIC,
          "synthetic_jax_view": reading(jax.profiler.ProfileData.from_serialized_xspace(
              synthetic))}
  with open(os.path.join(HERE, "jax_xplane.json"), "w") as f:
    json.dump(data, f, indent=1, ensure_ascii=False)
    f.write("\n")


if __name__ == "__main__":
  main()

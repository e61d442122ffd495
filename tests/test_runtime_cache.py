"""The runtime cache (backends/cpu/runtime_cache.py): the shared dot loops' object code is
compiled by the first process that needs it, stored on disk and loaded by later ones."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a process computing a dot with a generated kernel; prints the cache's counters and a value
SCRIPT = """
import json, numpy as np, ember, ember.numpy as jnp
from ember._src.backends.cpu import dot_kernels, executable, runtime_cache
dot_kernels.generated_kernel_ok = lambda *a, **k: True   # whatever the host's ISA
executable._hit_prologue()   # the inline call's prologue, cached alike: counted apart
runtime_cache.stats.update(compiled=0, loaded=0)
a = np.arange(12.0, dtype=np.float32).reshape(3, 4)
b = np.arange(20.0, dtype=np.float32).reshape(4, 5)
out = np.asarray(ember.jit(lambda a, b: a @ b)(a, b))
print(json.dumps({"stats": runtime_cache.stats, "ok": bool((out == a @ b).all())}))
"""


def run(cache_dir: str) -> dict:
  env = dict(os.environ, EMBER_RUNTIME_CACHE_DIR=cache_dir, PYTHONPATH=ROOT)
  r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                     timeout=120)
  assert r.returncode == 0, r.stderr
  return json.loads(r.stdout.strip().splitlines()[-1])


def entries(d) -> list:
  return sorted(n for n in os.listdir(d) if n.startswith("ember_dot_body_float32"))


def test_first_process_compiles_later_ones_load(tmp_path):
  first = run(str(tmp_path))
  assert first == {"stats": {"compiled": 1, "loaded": 0}, "ok": True}
  (name,) = entries(tmp_path)
  second = run(str(tmp_path))
  assert second == {"stats": {"compiled": 0, "loaded": 1}, "ok": True}
  assert entries(tmp_path) == [name]


def test_a_corrupt_entry_is_compiled_again(tmp_path):
  run(str(tmp_path))
  (name,) = entries(tmp_path)
  path = tmp_path / name
  data = bytearray(path.read_bytes())
  data[-100] ^= 0xFF                       # the checksum no longer matches
  path.write_bytes(bytes(data))
  assert run(str(tmp_path)) == {"stats": {"compiled": 1, "loaded": 0}, "ok": True}
  assert run(str(tmp_path))["stats"] == {"compiled": 0, "loaded": 1}   # rewritten


def test_off_and_unwritable_directories_only_cost_the_compile(tmp_path):
  assert run("")["stats"] == {"compiled": 1, "loaded": 0}
  blocked = tmp_path / "file"
  blocked.write_text("not a directory")
  for _ in range(2):
    assert run(str(blocked / "sub")) == {"stats": {"compiled": 1, "loaded": 0}, "ok": True}


def test_entry_name_depends_on_symbol_key_and_tier():
  from ember._src.backends.cpu import runtime_cache
  names = {runtime_cache.entry_name(s, k, o) for s, k, o in
           [("f", "ir", 3), ("g", "ir", 3), ("f", "ir2", 3), ("f", "ir", 2)]}
  assert len(names) == 4 and all(n.split("-")[0] in "fg" for n in names)


# `import ember` starts the CPU backend (driver/compilation.py's start_cpu_backend): the
# runtime functions every process runs come with it, and a first call finds them loaded
IMPORT_SCRIPT = """
import json, numpy as np, ember, ember.numpy as jnp
from ember._src.backends.cpu import runtime_cache
at_import = dict(runtime_cache.stats)
ember.jit(lambda x: x * 2)(np.ones(3, np.float32)).block_until_ready()
print(json.dumps([at_import, runtime_cache.stats]))
"""
RUNTIME_FUNCTIONS = ["ember_fz", "ember_hit_prologue", "ember_loop_run", "ember_native_hit",
                     "ember_pool_run"]


def _run_twice(script, directory):
  env = dict(os.environ, EMBER_RUNTIME_CACHE_DIR=str(directory), PYTHONPATH=ROOT,
             EMBER_NUM_THREADS="2")
  return [json.loads(subprocess.run([sys.executable, "-c", script], env=env,
                                    capture_output=True, text=True, timeout=120,
                                    check=True).stdout) for _ in range(2)]


def test_import_ember_loads_the_runtime_functions(tmp_path):
  n = len(RUNTIME_FUNCTIONS)
  got = _run_twice(IMPORT_SCRIPT, tmp_path)
  assert got == [[{"compiled": n, "loaded": 0}] * 2, [{"compiled": 0, "loaded": n}] * 2]
  assert sorted(p.split("-")[0] for p in os.listdir(tmp_path)) == RUNTIME_FUNCTIONS


# a program whose compile uses the other runtime functions: the OpenBLAS pool's chunk (a
# large matmul) and the math library's out-of-line copies (a conditional's branches)
LIBRARY_SCRIPT = """
import json, numpy as np, ember, ember.numpy as jnp
from ember._src.backends.cpu import dot_kernels, runtime_cache
dot_kernels.LARGE_BODIES.clear()   # the dot on BLAS chunks on every host
runtime_cache.stats.update(compiled=0, loaded=0)
m = np.linspace(-1, 1, 1000 * 1000, dtype=np.float32).reshape(1000, 1000)
v = np.linspace(-3, 3, 1000, dtype=np.float32)
mm = np.asarray(ember.jit(lambda a: a @ a)(m))
c = np.asarray(ember.lax.cond(True, jnp.sin, jnp.cos, v))
# (1000-term float32 sums whose partial sums reach ~330 round to ~5e-4 absolute)
ok = np.allclose(mm, m.astype(np.float64) @ m, rtol=1e-5, atol=2e-3) and \\
    np.allclose(c, np.sin(v.astype(np.float64)), rtol=1e-6, atol=1e-7)
print(json.dumps([runtime_cache.stats, ok]))
"""


def test_blas_chunks_and_math_library_copies_are_cached(tmp_path):
  (first, ok1), (second, ok2) = _run_twice(LIBRARY_SCRIPT, tmp_path)
  names = {p.split("-")[0] for p in os.listdir(tmp_path)}
  assert ok1 and ok2
  assert "ember_blas_chunk" in names and any(".lib." in n for n in names), names
  assert first["compiled"] >= 2 and second == {"compiled": 0, "loaded": first["compiled"]}

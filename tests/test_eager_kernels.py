"""Compiled eager primitives kept on disk (driver/eager_kernels.py): the first process to call
a signature eagerly compiles it and stores it; later processes load it, with the same bits;
the user's persistent cache, when on, takes them instead; jitted functions never land here."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# eager calls of three signatures (a reduction, a dot, a bucketed transcendental) and a
# jitted function; prints the store's counters and the results' bytes
SCRIPT = """
import json, numpy as np, ember, ember.numpy as jnp
from ember._src.driver import eager_kernels
from ember._src.backends.cpu import tiering
x = jnp.asarray(np.linspace(-2, 2, 3003, dtype=np.float32))
m = jnp.asarray(np.linspace(-1, 1, 77 * 39, dtype=np.float32).reshape(77, 39))
outs = [jnp.sum(x), m @ m[0], jnp.sin(x), ember.jit(lambda v: jnp.cos(v) * 2)(x)]
tiering.wait_idle()   # (a store is written once its final code is in)
print(json.dumps({"stats": eager_kernels.stats,
                  "bits": [np.asarray(o).tobytes().hex() for o in outs]}))
"""


def run(cache_dir: str, **env_extra) -> dict:
  env = {k: v for k, v in os.environ.items() if not k.endswith("COMPILATION_CACHE_DIR")}
  env.update(EMBER_RUNTIME_CACHE_DIR=cache_dir, PYTHONPATH=ROOT, **env_extra)
  r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                     timeout=120)
  assert r.returncode == 0, r.stderr
  return json.loads(r.stdout.strip().splitlines()[-1])


def entries(d) -> list:
  path = os.path.join(d, "eager")
  return sorted(os.listdir(path)) if os.path.isdir(path) else []


def test_first_process_stores_later_ones_load_the_same_bits(tmp_path):
  first = run(str(tmp_path))
  assert first["stats"] == {"loaded": 0, "stored": 3}
  names = entries(tmp_path)
  assert len(names) == 3 and all(n.startswith("jit_") for n in names)
  assert not any("cos" in n or "lambda" in n for n in names)   # a user's jit is not stored
  second = run(str(tmp_path))
  assert second == {"stats": {"loaded": 3, "stored": 0}, "bits": first["bits"]}
  assert entries(tmp_path) == names


def test_a_corrupt_entry_is_compiled_and_stored_again(tmp_path):
  first = run(str(tmp_path))
  victim = tmp_path / "eager" / [n for n in entries(tmp_path) if "reduce_sum" in n][0]
  data = bytearray(victim.read_bytes())
  data[-50] ^= 0xFF                                   # the checksum no longer matches
  victim.write_bytes(bytes(data))
  again = run(str(tmp_path))
  assert again == {"stats": {"loaded": 2, "stored": 1}, "bits": first["bits"]}
  assert run(str(tmp_path))["stats"] == {"loaded": 3, "stored": 0}


def test_off_with_the_runtime_cache_and_under_the_persistent_cache(tmp_path):
  assert run("")["stats"] == {"loaded": 0, "stored": 0}
  assert run(str(tmp_path / "off"), EMBER_EAGER_KERNEL_CACHE="0")["stats"] == {
      "loaded": 0, "stored": 0}
  assert entries(tmp_path / "off") == []
  persistent = tmp_path / "persistent"
  out = run(str(tmp_path / "runtime"), EMBER_COMPILATION_CACHE_DIR=str(persistent),
            JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0")
  assert out["stats"] == {"loaded": 0, "stored": 0}
  assert entries(tmp_path / "runtime") == []
  assert any("reduce_sum" in n for n in os.listdir(persistent))   # the user's cache has it


def test_the_store_evicts_least_recently_used_past_its_cap(tmp_path, monkeypatch):
  from ember._src.base import persistent_cache
  for i, name in enumerate(["jit_a-1", "jit_b-2", "jit_c-3"]):
    assert persistent_cache.write_entry(str(tmp_path), name, bytes(1000), cap=2500)
    os.utime(tmp_path / name, (i, i))      # written in this order, oldest first
  assert sorted(os.listdir(tmp_path)) == ["jit_b-2", "jit_c-3"]

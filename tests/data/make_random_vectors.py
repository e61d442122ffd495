"""Generate tests/data/random_jax_vectors.json: reference outputs of real JAX's jax.random.

Run with the oracle interpreter (JAX 0.12, default config: threefry2x32 with
jax_threefry_partitionable=True), from the repository root:

    /work/jaxvenv/bin/python tests/data/make_random_vectors.py

The x64 cases are produced in a child process started with JAX_ENABLE_X64=1 (the flag must
be set before JAX creates any array), so one command writes the whole file.

Each case is a record the test replays with ember.random:
  x64        whether jax_enable_x64 was on
  seed       the integer seed
  typed      True: start from random.key(seed); False: from random.PRNGKey(seed)
  path       key derivation applied first: [["split", num, index], ["fold_in", data], ...]
  op         "PRNGKey" | "key_data" | "split" | "fold_in" | "bits" | "uniform" | "normal"
  kwargs     the op's arguments (shape as a list; dtype as a name; num may be a list)
  dtype      result dtype name; shape: result shape (key data for key-valued ops)
  data       the result, flattened, as integers: unsigned ints as they are, floats as
             their bit patterns (uint16/32/64), so the test compares bit for bit.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_jax_vectors.json")
SEEDS = [0, 1, 42, -1, 2**31 + 5]
SEEDS_X64 = SEEDS + [2**32 + 7, -2**40, 2**63 - 1]


def cases(x64: bool) -> list[dict]:
  out = []

  def add(op, seed=0, typed=True, path=(), **kwargs):
    out.append(dict(x64=x64, seed=seed, typed=typed, path=[list(p) for p in path], op=op,
                    kwargs=kwargs))

  for seed in (SEEDS_X64 if x64 else SEEDS):
    add("PRNGKey", seed, typed=False)
    add("key_data", seed, typed=True)
  if x64:
    for dt in ("uint64", "uint32", "uint8"):
      add("bits", 7, shape=[5], dtype=dt)
    for dt in ("float64", "float32", "float16", "bfloat16"):
      add("uniform", 3, shape=[7], dtype=dt)
      add("uniform", 3, shape=[2, 3], dtype=dt, minval=-2.0, maxval=3.0)
      add("normal", 5, shape=[9], dtype=dt)
    add("split", 42, typed=False, num=3)
    add("fold_in", 42, data=7)
    return out

  for seed in (0, 42, -1):
    for typed in (True, False):
      add("split", seed, typed)
      add("split", seed, typed, num=3)
      add("split", seed, typed, num=[2, 2])
      add("fold_in", seed, typed, data=7)
  add("split", 1, num=1)
  add("split", 1, num=0)
  add("split", 1, num=[2, 1, 3])
  add("fold_in", 1, data=0)
  add("fold_in", 1, data=2**32 - 1)
  add("fold_in", 1, data=2**31 + 3)
  add("split", 0, path=[["split", 2, 1], ["fold_in", 5]], num=4)

  shapes = [[], [1], [7], [8], [3, 5], [2, 3, 4], [0], [2, 0]]
  for dt in ("uint32", "uint16", "uint8"):
    for shape in shapes:
      add("bits", 0, shape=shape, dtype=dt)
  add("bits", 42, typed=False, shape=[7])
  add("bits", 42, typed=False, shape=[4])  # a prefix of the [7] draw (partitionable)
  add("bits", 42, path=[["split", 3, 2]], shape=[3, 5], dtype="uint32")

  for dt in ("float32", "float16", "bfloat16"):
    for shape in ([], [7], [3, 5]):
      add("uniform", 1, shape=shape, dtype=dt)
    add("uniform", 1, shape=[2, 3, 4], dtype=dt, minval=-2.0, maxval=3.0)
    add("uniform", 42, typed=False, shape=[6], dtype=dt, minval=0.5, maxval=0.75)
    add("uniform", 42, shape=[3, 2], dtype=dt, minval=[[-1.0], [0.0], [10.0]],
        maxval=[1.0, 2.0])
    add("uniform", 42, shape=[4], dtype=dt, minval=1.0, maxval=1.0)
    for shape in ([], [7], [3, 5], [4, 4, 4]):
      add("normal", 2, shape=shape, dtype=dt)
    add("normal", 42, typed=False, shape=[10], dtype=dt)
  add("uniform", 0, path=[["split", 2, 0]], shape=[3])
  add("normal", 0, path=[["fold_in", 3], ["split", 4, 3]], shape=[3])
  add("normal", 7, shape=[4096])  # wide range of erf_inv inputs, both branches
  return out


def run(case: dict) -> dict:
  import jax
  import jax.numpy as jnp
  key = jax.random.key(case["seed"]) if case["typed"] else jax.random.PRNGKey(case["seed"])
  for step, *args in case["path"]:
    if step == "split":
      key = jax.random.split(key, args[0])[args[1]]
    else:
      key = jax.random.fold_in(key, args[0])
  op, kw = case["op"], dict(case["kwargs"])
  if "dtype" in kw:
    kw["dtype"] = jnp.dtype(kw["dtype"])
  if "shape" in kw:
    kw["shape"] = tuple(kw["shape"])
  if op == "PRNGKey":
    res = key
  elif op == "key_data":
    res = jax.random.key_data(key)
  elif op == "split":
    num = kw.get("num", 2)
    res = jax.random.key_data(jax.random.split(key, tuple(num) if isinstance(num, list) else num))
  elif op == "fold_in":
    res = jax.random.key_data(jax.random.fold_in(key, kw["data"]))
  else:
    for k in ("minval", "maxval"):
      if k in kw:
        kw[k] = np.asarray(kw[k], dtype=np.float64 if case["x64"] else np.float32)
    res = getattr(jax.random, op)(key, **kw)
  res = np.asarray(res)
  flat = res.reshape(-1)
  if flat.dtype.kind != "u":
    flat = flat.view(f"uint{flat.dtype.itemsize * 8}")
  return dict(case, dtype=str(res.dtype), shape=list(res.shape),
              data=[int(v) for v in flat])


def main():
  x64 = os.environ.get("JAX_ENABLE_X64") == "1"
  import jax
  results = [run(c) for c in cases(x64)]
  if x64:
    json.dump(results, sys.stdout)
    return
  child = subprocess.run([sys.executable, __file__], env=dict(os.environ, JAX_ENABLE_X64="1"),
                         check=True, capture_output=True, text=True)
  results += json.loads(child.stdout)
  with open(OUT, "w") as f:
    f.write('{"jax_version": %s, "cases": [\n' % json.dumps(jax.__version__))
    f.write(",\n".join(json.dumps(r) for r in results))
    f.write("\n]}\n")
  print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
  main()

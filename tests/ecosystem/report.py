"""Shared by the ecosystem programs: turn results into JSON records and write them.

Each program builds a dict {section: {name: value}} and calls `emit(results)`, which writes
JSON to the path given as the program's first argument (stdout without one). Arrays become
{"dtype", "shape", "values" (flattened)}; the test compares dtype and shape exactly and the
values with the tolerance of their section (tests/test_ecosystem.py).
"""
import json
import sys

import numpy as np


def record(x):
  """One array (or a Python/NumPy scalar) as a JSON record."""
  a = np.asarray(x)
  if a.dtype.kind in "biu":
    values = a.ravel().tolist()
  else:
    values = [float(v) for v in a.astype(np.float64).ravel()]
  return {"dtype": a.dtype.name, "shape": list(a.shape), "values": values}


def record_tree(tree):
  """Every array leaf of a pytree, keyed by its path (jax.tree_util.keystr)."""
  import jax
  leaves = jax.tree_util.tree_flatten_with_path(tree)[0]
  return {jax.tree_util.keystr(path): record(leaf) for path, leaf in leaves}


def library_versions(*names):
  """The versions the results depend on (the test skips when the installed ones differ)."""
  from importlib import metadata
  return {n: metadata.version(n) for n in names}


def emit(results):
  text = json.dumps(results, indent=1, sort_keys=True)
  if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
      f.write(text + "\n")
  else:
    print(text)

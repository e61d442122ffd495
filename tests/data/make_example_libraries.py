"""Generate tests/data/example_libraries.json: real JAX's jax.example_libraries (stax,
optimizers) on the cases of example_libraries_cases.py.

Run with the oracle interpreter (JAX 0.12), from the repository root:

    /work/jaxvenv312/bin/python tests/data/make_example_libraries.py

Each case's result is stored as its pytree's leaves in order, each {"dtype", "shape",
"values" (flattened)}.
"""
import json
import os
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, random
from jax.example_libraries import optimizers, stax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from example_libraries_cases import CASES  # noqa: E402


def leaf_record(x):
  a = np.asarray(x)
  return {"dtype": a.dtype.name, "shape": list(a.shape),
          "values": a.ravel().tolist() if a.dtype.kind in "biu" else
          [float(v) for v in a.astype(np.float64).ravel()]}


def main():
  ns = types.SimpleNamespace(jax=jax, jnp=jnp, lax=lax, random=random, stax=stax,
                             optimizers=optimizers)
  out = {name: [leaf_record(x) for x in jax.tree_util.tree_leaves(call(ns))]
         for name, _, call in CASES}
  out["recorded_with"] = {"jax": jax.__version__}
  with open(os.path.join(HERE, "example_libraries.json"), "w") as f:
    json.dump(out, f, indent=0, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main()

"""Generate tests/data/all_to_all.json: real JAX's lax.all_to_all / pswapaxes under vmap on
the cases of all_to_all_cases.py. Run with the oracle interpreter (JAX 0.12), from the
repository root:  /work/jaxvenv312/bin/python tests/data/make_all_to_all.py
"""
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from all_to_all_cases import CASES  # noqa: E402

out = {"recorded_with": f"jax {jax.__version__}"}
for name, call in CASES.items():
  a = np.asarray(call(jax, lax, jnp))
  out[name] = {"dtype": a.dtype.name, "shape": list(a.shape), "values": a.ravel().tolist()}
with open(os.path.join(HERE, "all_to_all.json"), "w") as f:
  json.dump(out, f)

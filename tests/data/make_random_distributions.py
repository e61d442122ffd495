"""Regenerate random_distributions.npz with real JAX 0.12 (threefry2x32, partitionable):
  /work/jaxvenv/bin/python tests/data/make_random_distributions.py
Writes one array per case of random_distributions_cases (plus `<name>__dtype`)."""
import os
import sys

import numpy as np

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(__file__))
from random_distributions_cases import CASES, grad_cases  # noqa: E402

out = {}
for name, seed, typed, x64, call in CASES:
  with jax.enable_x64(x64):
    v = call(jax.random, jnp, jax.random.key(seed) if typed else jax.random.PRNGKey(seed))
  out[name] = np.asarray(v).astype(np.float64) if v.dtype == jnp.bfloat16 else np.asarray(v)
  out[name + "__dtype"] = np.array(str(v.dtype))
out.update({n: np.asarray(v) for n, v in
            grad_cases(jax.random, jax.lax, jax.grad, jax.random.key(50)).items()})
np.savez_compressed(os.path.join(os.path.dirname(__file__), "random_distributions.npz"), **out)
print(f"wrote {len(out)} arrays")

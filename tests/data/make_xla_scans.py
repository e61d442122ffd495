"""Regenerate xla_scans_jax.npz with real JAX 0.12:
  /work/jaxvenv/bin/python tests/data/make_xla_scans.py
Writes jax.lax's cumulative op for each case of xla_scan_cases (eager; JAX's jit gives the
same bits), as float32 (every dtype of the cases converts to it exactly)."""
import os
import sys

import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, os.path.dirname(__file__))
from xla_scan_cases import CASES, operand  # noqa: E402

out = {}
for i, (name, (fn, dt, shape, axis, rev)) in enumerate(CASES.items()):
  x = jnp.asarray(operand(fn, dt, shape, i)).astype(dt)
  out[name] = np.asarray(getattr(lax, fn)(x, axis=axis, reverse=rev)).astype(np.float32)
np.savez_compressed(os.path.join(os.path.dirname(__file__), "xla_scans_jax.npz"), **out)
print(f"wrote {len(out)} arrays")

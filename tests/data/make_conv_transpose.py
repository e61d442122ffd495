"""Regenerate conv_transpose_jax.npz with real JAX 0.12:
  /work/jaxvenv312/bin/python tests/data/make_conv_transpose.py
Writes lax.conv_transpose's result for each case of conv_transpose_cases."""
import os
import sys

import numpy as np

from jax import lax

sys.path.insert(0, os.path.dirname(__file__))
from conv_transpose_cases import CASES, operand  # noqa: E402

out = {name: np.asarray(lax.conv_transpose(operand(ls, 0), operand(rs, 1), **kw))
       for name, (ls, rs, kw) in CASES.items()}
np.savez_compressed(os.path.join(os.path.dirname(__file__), "conv_transpose_jax.npz"), **out)
print(f"wrote {len(out)} arrays")

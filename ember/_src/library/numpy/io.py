"""Reading and writing arrays in NumPy's .npy / .npz files (jax.numpy.save, savez, load)."""
from __future__ import annotations

import numpy as np

from ember._src.library.numpy.creation import asarray

__all__ = ["load", "save", "savez"]

# NumPy's own writers, as in JAX: they read an Array through __array__
save = np.save
savez = np.savez


def load(file, *args, **kwargs):
  """`numpy.load`, with a .npy file's array as an ember Array (`jax.numpy.load`): bfloat16
  arrays, which NumPy writes as raw 2-byte records ('V2'), come back as bfloat16. An .npz
  file gives NumPy's NpzFile of NumPy arrays, as in JAX."""
  out = np.load(file, *args, **kwargs)
  if not isinstance(out, np.ndarray):
    return out
  if out.dtype == np.dtype("V2"):
    out = out.view(np.dtype("bfloat16"))
  try:
    return asarray(out)
  except TypeError:  # a dtype ember has no arrays of (strings, objects): NumPy's array
    return out

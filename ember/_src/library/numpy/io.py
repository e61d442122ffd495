"""Reading and writing arrays in NumPy's .npy / .npz files (jax.numpy.save, savez, load), and
the text/iterator/file readers: fromstring parses a string as NumPy does; fromiter and
fromfile refuse, as in JAX (they consume an iterator or a file: not pure, so unsafe under
jit), with the NumPy call to use instead."""
from __future__ import annotations

import numpy as np

from ember._src.library.numpy.creation import asarray

__all__ = ["load", "save", "savez", "fromstring", "fromiter", "fromfile"]

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


def fromstring(string: str, dtype=float, count: int = -1, *, sep: str):
  """The numbers in a text string separated by `sep`, as an array (NumPy's parser)."""
  return asarray(np.fromstring(string=string, dtype=dtype, count=count, sep=sep))


def _impure_reader(name: str):
  def reader(*args, **kwargs):
    raise NotImplementedError(
        f"jnp.{name}() is not implemented because it may be non-pure and thus unsafe for use "
        f"with JIT and other transformations (as in JAX). Consider using "
        f"jnp.asarray(np.{name}(...)) instead, outside transformed functions: it consumes "
        f"its {'iterable' if name == 'fromiter' else 'file'}.")
  reader.__name__ = reader.__qualname__ = name
  reader.__doc__ = f"Not provided, as in JAX: use jnp.asarray(np.{name}(...))."
  return reader


fromiter = _impure_reader("fromiter")
fromfile = _impure_reader("fromfile")

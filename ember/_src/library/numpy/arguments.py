"""Argument conversion shared by the ember.numpy modules ported from jax/_src/numpy's
lax_numpy.py, setops.py, polynomial.py, window_functions.py and index_tricks.py
(differences, signal, statistics, set_ops, polynomial, index_tricks): the one home of the
helpers they all call.

`asarray_args` checks every argument before converting any, so that an error names the
argument's position (JAX's ensure_arraylike); reductions.asarray_args converts them one by
one. `_static_int` and `_concrete_np` read arguments that must be known while tracing.
"""
from __future__ import annotations

import operator

import numpy as np

from ember._src.library.numpy import creation, util
from ember._src.library.numpy.reductions import asarray_arg


def asarray_args(fun_name: str, *xs):
  """JAX's ensure_arraylike for several arguments (errors name the argument position)."""
  util.check_arraylike(fun_name, *xs)
  return [asarray_arg(fun_name, x) for x in xs]


def _static_int(x, what: str) -> int:
  """A Python int from an int-like argument that must be known while tracing."""
  return operator.index(creation._concrete_or_error(x, f"The error arose for {what}."))


def _concrete_np(x, what: str) -> np.ndarray:
  """The NumPy value of an array argument that must be concrete (eager or static)."""
  return np.asarray(creation._concrete_or_error(x, f"The error arose in {what}."))

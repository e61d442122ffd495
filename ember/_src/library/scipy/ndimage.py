"""jax.scipy.ndimage: map_coordinates with order 0 (nearest) or 1 (linear) and SciPy's
boundary modes constant, nearest, wrap, mirror and reflect (JAX 0.12's set; higher orders
raise NotImplementedError as in JAX). Each output is the weighted sum of the 2^ndim (order 1)
or single (order 0) neighbouring input values, gathered with boundary-fixed indices."""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.scipy import _jnp as jnp

__all__ = ["map_coordinates"]


def _mirror(index, size: int):
  period = size - 1   # a triangular wave of half-period size - 1
  return jnp.abs((index + period) % (2 * period) - period) if period else index * 0


def _reflect(index, size: int):
  return jnp.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_FIX_INDEX = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round_half_away(a):
  """Round half away from zero (lax.round's default; jnp.round rounds half to even)."""
  if dtypes.issubdtype(a.dtype, np.integer):
    return a
  return jnp.sign(a) * jnp.floor(jnp.abs(a) + 0.5)


def _nodes(coordinate, order: int):
  """[(index, weight)] of the input points one coordinate draws from."""
  if order == 0:
    return [(_round_half_away(coordinate).astype(np.int32), 1)]
  lower = jnp.floor(coordinate)
  upper_weight = coordinate - lower
  index = lower.astype(np.int32)
  return [(index, 1 - upper_weight), (index + 1, upper_weight)]


@jit(static_argnums=(2, 3))
def _map_coordinates(input, coordinates, order, mode, cval):
  input = jnp.asarray(input)
  coordinates = [jnp.asarray(c) for c in coordinates]
  cval = jnp.asarray(cval, input.dtype)
  fix = _FIX_INDEX[mode]
  per_axis = []
  for coordinate, size in zip(coordinates, input.shape):
    nodes = []
    for index, weight in _nodes(coordinate, order):
      valid = (index >= 0) & (index < size) if mode == "constant" else None
      nodes.append((fix(index, size), valid, weight))
    per_axis.append(nodes)
  terms = []
  for corner in itertools.product(*per_axis):
    indices, valids, weights = zip(*corner)
    value = input[tuple(indices)]
    if mode == "constant":
      value = jnp.where(functools.reduce(operator.and_, valids), value, cval)
    terms.append(functools.reduce(operator.mul, weights) * value)
  result = functools.reduce(operator.add, terms)
  if dtypes.issubdtype(input.dtype, np.integer):
    result = _round_half_away(result)
  return result.astype(input.dtype)


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):
  """input interpolated at `coordinates` (one array per input axis), as
  scipy.ndimage.map_coordinates with order 0 or 1."""
  if len(coordinates) != np.ndim(input):
    raise ValueError("coordinates must be a sequence of length input.ndim, but "
                     f"{len(coordinates)} != {np.ndim(input)}")
  if mode not in _FIX_INDEX:
    raise NotImplementedError(
        f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
        f"supported modes are {set(_FIX_INDEX)}.")
  if order not in (0, 1):
    raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
  return _map_coordinates(input, list(coordinates), order, mode, cval)

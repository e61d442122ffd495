"""jax.scipy.interpolate: RegularGridInterpolator (methods 'linear' and 'nearest') on a
rectilinear grid, a pytree as in JAX. bounds_error=True raises NotImplementedError (JAX:
the check cannot run under jit); out-of-grid points get fill_value, or are extrapolated
when fill_value is None."""
from __future__ import annotations

import itertools

import numpy as np

from ember._src.base.tree_util import register_pytree_node
from ember._src.library.numpy import util
from ember._src.library.scipy import _jnp as jnp

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _points_array(xi, ndim: int):
  """xi as an (..., ndim) array: a tuple of coordinate arrays is stacked on a last axis."""
  if isinstance(xi, tuple) and len(xi) == 1:
    xi = xi[0]
  if isinstance(xi, tuple):
    parts = jnp.broadcast_arrays(*[jnp.asarray(p) for p in xi])
    return jnp.stack(parts, axis=-1).astype(jnp.result_type(float))
  util.check_arraylike("RegularGridInterpolator", xi)
  xi = jnp.asarray(xi)
  return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
  """Interpolation on a regular (rectilinear) grid in any number of dimensions
  (scipy.interpolate.RegularGridInterpolator)."""

  def __init__(self, points, values, method="linear", bounds_error=False,
               fill_value=np.nan):
    if method not in _METHODS:
      raise ValueError(f"method {method!r} is not defined")
    self.method = method
    self.bounds_error = bounds_error
    if bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    util.check_arraylike("RegularGridInterpolator", values)
    if len(points) > np.ndim(values):
      raise ValueError(f"there are {len(points)} point arrays, but values has "
                       f"{np.ndim(values)} dimensions")
    (values,) = util.promote_dtypes_inexact(jnp.asarray(values))
    if fill_value is not None:
      util.check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = jnp.asarray(fill_value)
      if not np.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
        raise ValueError("fill_value must be either 'None' or of a type compatible with "
                         "values")
    self.fill_value = fill_value
    util.check_arraylike("RegularGridInterpolator", *points)
    self.grid = tuple(jnp.asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    method = self.method if method is None else method
    if method not in _METHODS:
      raise ValueError(f"method {method!r} is not defined")
    ndim = len(self.grid)
    xi = _points_array(xi, ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"the requested sample points xi have dimension {xi.shape[-1]}, but "
                       f"this RegularGridInterpolator has dimension {ndim}")
    lead = xi.shape[:-1]
    xi = xi.reshape(-1, ndim)
    indices, distances, outside = self._locate(xi)
    if method == "linear":
      result = self._linear(indices, distances)
    else:
      result = self._nearest(indices, distances)
    if self.fill_value is not None:
      mask = outside.reshape(outside.shape + (1,) * (result.ndim - 1))
      result = jnp.where(mask, self.fill_value, result)
    return result.reshape(lead + self.values.shape[ndim:])

  def _locate(self, xi):
    """Per axis the cell index, the distance into the cell (0..1), and out-of-grid flags."""
    indices, distances = [], []
    outside = jnp.zeros((xi.shape[0],), bool)
    for d, g in enumerate(self.grid):
      x = xi[:, d]
      i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
      indices.append(i)
      distances.append((x - g[i]) / (g[i + 1] - g[i]))
      outside = outside | (x < g[0]) | (x > g[-1])
    return indices, distances, outside

  def _linear(self, indices, distances):
    trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
    total = 0.0
    for corner in itertools.product((0, 1), repeat=len(indices)):
      weight = 1.0
      for up, t in zip(corner, distances):
        weight = weight * (t if up else 1 - t)
      value = self.values[tuple(i + up for i, up in zip(indices, corner))]
      total = total + value * weight[trailing]
    return total

  def _nearest(self, indices, distances):
    return self.values[tuple(jnp.where(t <= 0.5, i, i + 1)
                             for i, t in zip(indices, distances))]


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]))


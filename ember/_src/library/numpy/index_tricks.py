"""ember.numpy's index tricks (NumPy's lib/_index_tricks_impl.py, JAX's
jax/_src/numpy/index_tricks.py): the grids mgrid and ogrid, the concatenators r_ and c_,
NumPy's own s_ and index_exp, and two helpers built on the indexing routines: mask_indices
and fill_diagonal. Slice bounds must be concrete: they give the result's shape.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ember._src.library.numpy import creation, indexing, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.arguments import asarray_args
from ember._src.library.numpy.reductions import aval

__all__ = ["mask_indices", "fill_diagonal", "mgrid", "ogrid", "r_", "c_", "s_", "index_exp"]

_min, _range = builtins.min, builtins.range

# Straight from NumPy, as in jax.numpy.
s_, index_exp = np.s_, np.index_exp


def _grid_from_slice(s: slice, op_name: str):
  """arange(start, stop, step), or linspace(start, stop, |step|) for an imaginary step."""
  ctx = f"The error arose for a slice bound of jnp.{op_name}."
  start = creation._concrete_or_error(s.start, ctx) or 0
  stop = creation._concrete_or_error(s.stop, ctx)
  step = creation._concrete_or_error(s.step, ctx) or 1
  if np.iscomplex(step):
    return creation.linspace(start, stop, int(abs(step)))
  return creation.arange(start, stop, step)


class _Mgrid:
  """Dense multi-dimensional grid: `jnp.mgrid[0:4, 0:1:5j]` (imaginary step: number of
  points, endpoint included)."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_from_slice(key, "mgrid")
    out = util.promote_dtypes(*(_grid_from_slice(k, "mgrid") for k in key))
    out = creation.meshgrid(*out, indexing="ij", sparse=False)
    return shape_ops.stack(out, 0) if out else creation.arange(0)


class _Ogrid:
  """Open (sparse) multi-dimensional grid: a list of arrays that broadcast together."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_from_slice(key, "ogrid")
    out = util.promote_dtypes(*(_grid_from_slice(k, "ogrid") for k in key))
    return list(creation.meshgrid(*out, indexing="ij", sparse=True))


class _AxisConcat:
  """Concatenate slices (as aranges), scalars and arrays along an axis, with NumPy's
  optional leading directive string 'axis,ndmin,trans1d' or 'r' / 'c'."""
  axis: int
  ndmin: int
  trans1d: int
  op_name: str

  def __getitem__(self, key):
    key = key if isinstance(key, tuple) else (key,)
    params = [self.axis, self.ndmin, self.trans1d, -1]
    if key and isinstance(key[0], str):
      directive, key = key[0], key[1:]
      if directive in ("r", "c"):
        params[-1] = 0 if directive == "r" else 1
      else:
        vec = directive.split(",")
        vec = vec + params[len(vec):] if len(vec) < 4 else vec[:3] + [params[-1]]
        try:
          params = [int(v) for v in vec]
        except ValueError as err:
          raise ValueError(f"could not understand directive {directive!r}") from err
    axis, ndmin, trans1d, matrix = params
    out = []
    for item in key:
      if isinstance(item, slice):
        newobj, item_ndim = _grid_from_slice(item, self.op_name), 0
      elif isinstance(item, str):
        raise ValueError("string directive must be placed at the beginning")
      else:
        newobj = creation.array(item, copy=False)
        item_ndim = aval(newobj).ndim
      newobj = creation.array(newobj, copy=False, ndmin=ndmin)
      if trans1d != -1 and ndmin - item_ndim > 0:
        order = tuple(_range(ndmin))
        shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
        newobj = shape_ops.transpose(newobj, order[shift:] + order[:shift])
      out.append(newobj)
    res = shape_ops.concatenate(tuple(out), axis=axis)
    if matrix != -1 and aval(res).ndim == 1:
      res = shape_ops.expand_dims(res, matrix)
    return res

  def __len__(self):
    return 0


class _RClass(_AxisConcat):
  """Concatenate along the first axis (numpy.r_): `jnp.r_[1:4, 0, [7, 8]]`."""
  axis, ndmin, trans1d, op_name = 0, 1, -1, "r_"


class _CClass(_AxisConcat):
  """Concatenate along the last axis, 1-D inputs as columns (numpy.c_)."""
  axis, ndmin, trans1d, op_name = -1, 2, 0, "c_"


mgrid, ogrid, r_, c_ = _Mgrid(), _Ogrid(), _RClass(), _CClass()


def mask_indices(n: int, mask_func, k: int = 0, *, size=None):
  """The (row, column) indices where mask_func(ones((n, n)), k) is nonzero (e.g. jnp.triu);
  under jit pass a static `size`."""
  return tuple(indexing.nonzero(mask_func(creation.ones((n, n)), k), size=size))


def fill_diagonal(a, val, wrap: bool = False, *, inplace: bool = True):
  """A copy of `a` (all dimensions equal when ndim > 2) with its main diagonal set to
  `val` (cycled). JAX arrays are immutable: pass inplace=False. `wrap` restarts the
  diagonal after every ncols+1 rows of a tall 2-D matrix, as NumPy."""
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  a, val = asarray_args("fill_diagonal", a, val)
  shape = aval(a).shape
  if len(shape) < 2:
    raise ValueError("array must be at least 2-d")
  if len(shape) > 2 and not builtins.all(n == shape[0] for n in shape[1:]):
    raise ValueError("All dimensions of input must be of equal length")
  if wrap and len(shape) == 2 and shape[0] > shape[1]:
    # NumPy's flat rule: every (ncols + 1)-th element of the flattened matrix
    idx = np.arange(0, math.prod(shape), shape[1] + 1)
    flat = shape_ops.ravel(a)
    n = idx.size
    vals = val if aval(val).ndim == 0 else indexing._tile_to_size(shape_ops.ravel(val), n)
    return flat.at[idx].set(vals).reshape(shape)
  n = _min(shape)
  idx = indexing.diag_indices(n, len(shape))
  return a.at[idx].set(val if aval(val).ndim == 0 else
                       indexing._tile_to_size(shape_ops.ravel(val), n))

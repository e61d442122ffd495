"""ember.numpy's discrete differences and integration: diff, ediff1d, gradient, trapezoid
and unwrap.

Ported from jax/_src/numpy/lax_numpy.py so dtypes, weak types and errors match JAX 0.12;
functions JAX wraps in a named `jit` are wrapped the same way (jaxprs show
`jit[name=diff]`).
"""
from __future__ import annotations

import builtins
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation, logic, reductions, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.arguments import _static_int, asarray_args
from ember._src.library.numpy.reductions import asarray_arg, aval

__all__ = ["diff", "ediff1d", "gradient", "trapezoid", "unwrap"]

_min, _range = builtins.min, builtins.range


def _broadcast_edge(v, arr, axis):
  """A scalar `prepend`/`append` value broadcast to arr's shape with size 1 along axis."""
  v = asarray_arg("diff", v)
  if aval(v).ndim:
    return v
  shape = list(aval(arr).shape)
  shape[axis] = 1
  return shape_ops.broadcast_to(v, tuple(shape))


@partial(jit, static_argnames=("n", "axis"))
def diff(a, n=1, axis=-1, prepend=None, append=None):
  """The n-th discrete difference along `axis` (`!=` for booleans), after concatenating
  `prepend` and `append` (scalars are broadcast to one slice)."""
  arr = asarray_arg("diff", a)
  n = _static_int(n, "the 'n' argument of jnp.diff")
  axis = _static_int(axis, "the 'axis' argument of jnp.diff")
  if n == 0:
    return arr
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  if aval(arr).ndim == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  axis = util.canonicalize_axis(axis, aval(arr).ndim, "diff")
  parts = [_broadcast_edge(prepend, arr, axis)] if prepend is not None else []
  parts.append(arr)
  if append is not None:
    parts.append(_broadcast_edge(append, arr, axis))
  if len(parts) > 1:
    arr = shape_ops.concatenate(parts, axis)
  head = tuple(slice(1, None) if i == axis else slice(None) for i in _range(aval(arr).ndim))
  tail = tuple(slice(None, -1) if i == axis else slice(None) for i in _range(aval(arr).ndim))
  op = lax.ne if aval(arr).dtype == np.bool_ else lax.sub
  for _ in _range(n):
    arr = op(arr[head], arr[tail])
  return arr


@jit
def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of consecutive elements of the flattened array, with `to_begin` and
  `to_end` (cast to its dtype) concatenated at the ends."""
  arr = shape_ops.ravel(asarray_arg("ediff1d", ary))
  result = lax.sub(arr[1:], arr[:-1])
  if to_begin is not None:
    to_begin = shape_ops.ravel(asarray_arg("ediff1d", to_begin).astype(aval(arr).dtype))
    result = shape_ops.concatenate((to_begin, result))
  if to_end is not None:
    to_end = shape_ops.ravel(asarray_arg("ediff1d", to_end).astype(aval(arr).dtype))
    result = shape_ops.concatenate((result, to_end))
  return result


def _gradient_along_axis(a, h, axis, edge_order):
  """Central differences inside, one-sided differences (first or second order) at the
  edges, for a scalar spacing `h` or 1-D coordinates `h` (NumPy's formulas; the first-order
  path stages JAX's equations in JAX's order)."""
  sliced = partial(lax.slice_in_dim, a, axis=axis)
  n = aval(a).shape[axis]
  second = edge_order == 2
  if not second:
    upper = sliced(1, 2) - sliced(0, 1)
    lower = sliced(-1, None) - sliced(-2, -1)
  if aval(h).ndim == 0:
    inner = (sliced(2, None) - sliced(None, -2)) * 0.5 / h
    if second:
      upper = -1.5 * sliced(0, 1) + 2.0 * sliced(1, 2) - 0.5 * sliced(2, 3)
      lower = 0.5 * sliced(-3, -2) - 2.0 * sliced(-2, -1) + 1.5 * sliced(-1, None)
    lower, upper = lower / h, upper / h
  elif aval(h).ndim == 1:
    if aval(h).shape[0] != n:
      raise ValueError("Spacing arrays must have the same length as the dimension along "
                       "which the gradient is calculated.")
    shape = [1] * aval(a).ndim
    shape[axis] = n
    h = h.reshape(shape)
    hs = partial(lax.slice_in_dim, h, axis=axis)
    if second:
      d1, d2 = hs(1, 2) - hs(0, 1), hs(2, 3) - hs(1, 2)
      upper = (-(2. * d1 + d2) / (d1 * (d1 + d2)) * sliced(0, 1)
               + (d1 + d2) / (d1 * d2) * sliced(1, 2) - d1 / (d2 * (d1 + d2)) * sliced(2, 3))
      d1, d2 = hs(-2, -1) - hs(-3, -2), hs(-1, None) - hs(-2, -1)
      lower = (d2 / (d1 * (d1 + d2)) * sliced(-3, -2) - (d2 + d1) / (d1 * d2) * sliced(-2, -1)
               + (2. * d2 + d1) / (d2 * (d1 + d2)) * sliced(-1, None))
    else:
      upper = upper / (hs(1, 2) - hs(0, 1))
      lower = lower / (hs(-1, None) - hs(-2, -1))
    dx1, dx2 = hs(1, -1) - hs(0, -2), hs(2, None) - hs(1, -1)
    wa = -dx2 / (dx1 * (dx1 + dx2))
    wb = (dx2 - dx1) / (dx1 * dx2)
    wc = dx1 / (dx2 * (dx1 + dx2))
    inner = wa * sliced(0, -2) + wb * sliced(1, -1) + wc * sliced(2, None)
  else:
    raise ValueError("Spacing arrays must be 1D arrays or scalars.")
  return shape_ops.concatenate((upper, inner, lower), axis=axis)


@partial(jit, static_argnames=("axis", "edge_order"))
def gradient(f, *varargs, axis=None, edge_order=None):
  """The gradient of `f` by central differences, along each axis in `axis` (default all);
  `varargs`: one spacing for all axes, or one per axis (a scalar step or 1-D coordinates).
  `edge_order` 1 (default, JAX's and NumPy's) or 2 (NumPy's second-order edges; JAX 0.12
  rejects edge_order)."""
  if edge_order not in (None, 1, 2):
    raise ValueError(f"jnp.gradient: edge_order must be 1 or 2, got {edge_order!r}")
  a, *spacing = util.promote_dtypes_inexact(*asarray_args("gradient", f, *varargs))
  nd = aval(a).ndim
  if axis is None:
    axes = tuple(_range(nd))
  else:
    axes = tuple(util.canonicalize_axis(i, nd, "gradient")
                 for i in (axis if isinstance(axis, (tuple, list)) else (axis,)))
  if not axes:
    return []
  if _min(aval(a).shape[i] for i in axes) < 2:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                     "2 elements are required.")
  if edge_order == 2 and _min(aval(a).shape[i] for i in axes) < 3:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                     "(edge_order + 1) elements are required.")
  if not spacing:
    dx = [asarray_arg("gradient", 1.0)] * len(axes)
  elif len(spacing) == 1:
    dx = spacing * len(axes)
  elif len(spacing) == len(axes):
    dx = spacing
  else:
    raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
  grads = [_gradient_along_axis(a, h, ax, edge_order or 1) for ax, h in zip(axes, dx)]
  return grads[0] if len(axes) == 1 else grads


@partial(jit, static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis: int = -1):
  """Integral of `y` along `axis` by the trapezoidal rule, at sample points `x` (1-D, or
  the shape of y) or with uniform spacing `dx`."""
  if x is None:
    y_arr, = util.promote_dtypes_inexact(asarray_arg("trapezoid", y))
    dx_arr = creation.asarray(dx)
    if aval(dx_arr).ndim > 0:
      dx_arr = lax.expand_dims(dx_arr, tuple(_range(aval(y_arr).ndim - aval(dx_arr).ndim)))
      dx_arr = shape_ops.moveaxis(dx_arr, axis, -1)
  else:
    y_arr, x_arr = util.promote_dtypes_inexact(*asarray_args("trapezoid", y, x))
    if aval(x_arr).ndim == 1:
      dx_arr = diff(x_arr)
    else:
      dx_arr = shape_ops.moveaxis(diff(x_arr, axis=axis), axis, -1)
  y_arr = shape_ops.moveaxis(y_arr, axis, -1)
  if aval(dx_arr).ndim == 0 or aval(dx_arr).shape[-1] == 1:  # constant spacing
    dx_r = dx_arr if aval(dx_arr).ndim == 0 else dx_arr[..., 0]
    return dx_r * (y_arr.sum(-1) - 0.5 * (y_arr[..., 0] + y_arr[..., -1]))
  return 0.5 * (dx_arr * (y_arr[..., 1:] + y_arr[..., :-1])).sum(-1)


@partial(jit, static_argnames=("axis",))
def unwrap(p, discont=None, axis: int = -1, period=2 * np.pi):
  """Unwrap `p` along `axis`: jumps larger than `discont` (default period/2) are replaced
  by their complement modulo `period`."""
  p = asarray_arg("unwrap", p)
  p, period = util.promote_dtypes(p, period)
  if dtypes.is_complex(aval(p).dtype):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  if aval(p).shape[axis] == 0:
    return p
  if discont is None:
    discont = period / 2
  interval = period // 2 if dtypes.is_integer(aval(p).dtype) else period / 2
  dd = diff(p, axis=axis)
  ddmod = ufuncs.mod(dd + interval, period) - interval
  ddmod = logic.where((ddmod == -interval) & (dd > 0), interval, ddmod)
  ph_correct = logic.where(ufuncs.abs(dd) < discont, 0, ddmod - dd)
  return shape_ops.concatenate((lax.slice_in_dim(p, 0, 1, axis=axis),
                                lax.slice_in_dim(p, 1, None, axis=axis)
                                + reductions.cumsum(ph_correct, axis=axis)), axis=axis)

"""ember.numpy.linalg's norms and the array API's functions of the matrices in the last two
axes: norm, vector_norm, matrix_norm, trace and diagonal (ember.numpy's trace and diagonal,
over axes 0 and 1 by default, are reductions.py's). The 2, -2 and 'nuc' matrix norms come
from the singular values (linalg_decompositions.svd), as in JAX.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import reductions, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.linalg_decompositions import svd
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.primitives.elementwise import convert_element_type


def _abs2(x):
  """|x|^2 elementwise, real-valued."""
  if dtypes.is_complex(aval(x).dtype):
    return lax.real(lax.mul(x, lax.conj(x)))
  return lax.mul(x, x)


@partial(jit, static_argnames=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims=False):
  """Vector norms (one axis, or all axes with ord=None) and matrix norms (two axes)."""
  x, = util.promote_dtypes_inexact(asarray_arg("jnp.linalg.norm", x))
  ndim = aval(x).ndim
  if axis is None:
    if ord is None:
      return lax.sqrt(reductions.sum(_abs2(x), keepdims=keepdims))
    axis = tuple(range(ndim))
  elif isinstance(axis, tuple):
    axis = tuple(util.canonicalize_axis(a, ndim) for a in axis)
  else:
    axis = (util.canonicalize_axis(axis, ndim),)
  if len(axis) == 1:
    return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
  if len(axis) != 2:
    raise ValueError(f"Improper number of axes for norm: axis={axis}. Pass one axis to "
                     "compute a vector-norm, or two axes to compute a matrix-norm.")
  row_axis, col_axis = axis
  amax, amin, sum_ = reductions.max, reductions.min, reductions.sum
  if ord is None or (isinstance(ord, str) and ord in ("f", "fro")):
    return lax.sqrt(sum_(_abs2(x), axis=axis, keepdims=keepdims))
  if isinstance(ord, str):
    if ord == "nuc":
      return _svd_norm(x, ord, axis, keepdims)
    raise ValueError(f"Invalid order '{ord}' for matrix norm.")
  if ord in (1, -1):
    if not keepdims and col_axis > row_axis:
      col_axis -= 1
    col_sums = sum_(lax.abs(x), axis=row_axis, keepdims=keepdims)
    return (amax(col_sums, axis=col_axis, keepdims=keepdims, initial=0) if ord == 1
            else amin(col_sums, axis=col_axis, keepdims=keepdims))
  if ord in (np.inf, -np.inf):
    if not keepdims and row_axis > col_axis:
      row_axis -= 1
    row_sums = sum_(lax.abs(x), axis=col_axis, keepdims=keepdims)
    return (amax(row_sums, axis=row_axis, keepdims=keepdims, initial=0) if ord == np.inf
            else amin(row_sums, axis=row_axis, keepdims=keepdims))
  if ord in (2, -2):
    return _svd_norm(x, ord, axis, keepdims)
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """sum(|x|**ord)**(1/ord) over `axis` (all axes when None); also ord=inf, -inf, 0.
  Written with the ember.numpy ufuncs, as JAX does, so integer inputs follow their rules
  (ord=2 gives a float, ord=1 keeps the integer dtype)."""
  x = asarray_arg("jnp.linalg.vector_norm", x)
  amax, amin, sum_ = reductions.max, reductions.min, reductions.sum
  if isinstance(ord, str):
    msg = f"Invalid order '{ord}' for vector norm."
    if ord in ("inf", "-inf"):
      msg += f"Use '{ord[:-3]}jax.numpy.inf' instead."
    raise ValueError(msg)
  if ord is None or ord == 2:
    return ufuncs.sqrt(sum_(ufuncs.real(ufuncs.multiply(x, ufuncs.conj(x))), axis=axis,
                            keepdims=keepdims))
  if ord == np.inf:
    return amax(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return amin(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if ord == 0:
    real_dtype = np.array(0, util.to_inexact_dtype(aval(x).dtype)).real.dtype
    return sum_(lax.ne(x, convert_element_type(0, aval(x).dtype)), dtype=real_dtype,
                axis=axis, keepdims=keepdims)
  if ord == 1:
    return sum_(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  abs_x = ufuncs.abs(x)
  dt = aval(abs_x).dtype
  out = sum_(ufuncs.power(abs_x, np.array(ord, dt)), axis=axis, keepdims=keepdims)
  return ufuncs.power(out, np.array(1. / ord, dt))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """Norm of the matrices in the last two axes."""
  x = asarray_arg("jnp.linalg.matrix_norm", x)
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


def trace(x, /, *, offset=0, dtype=None):
  """Trace of the matrices in the last two axes (jnp.linalg.trace)."""
  return reductions.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x, /, *, offset=0):
  """Diagonals of the matrices in the last two axes (jnp.linalg.diagonal)."""
  return reductions.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def _svd_norm(x, ord, axis, keepdims):
  """Matrix norms from singular values: 2 (largest), -2 (smallest), 'nuc' (sum)."""
  row, col = axis
  nd = aval(x).ndim
  y = shape_ops.moveaxis(x, (row, col), (nd - 2, nd - 1))
  s = svd(y, compute_uv=False)
  out = (reductions.max(s, axis=-1) if ord == 2 else reductions.min(s, axis=-1) if ord == -2
         else reductions.sum(s, axis=-1))
  if keepdims:
    out = shape_ops.expand_dims(out, tuple(sorted((row, col))))
  return out

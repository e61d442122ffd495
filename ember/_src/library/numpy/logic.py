"""ember.numpy logic helpers: where, isclose/allclose, array_equal/array_equiv,
iscomplex/isreal, isin.

As in jax.numpy 0.12, the 3-argument `where` runs inside a nested `jit` named `_where`,
and isclose/allclose/iscomplex/isreal are jitted under their own names, so staged
jaxprs show the same `jit[name=...]` equations.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import util
from ember._src.library.numpy.creation import _zero, asarray
from ember._src.library.numpy import indexing, ufuncs
from ember._src.library.random.keys import KEY_SHAPE, PRNGKeyArray

__all__ = ["where", "isclose", "iscomplex", "isreal"]


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """`where(c, x, y)`: elementwise choice, with promotion and broadcasting.
  `where(c)`: the indices of the nonzero elements (`nonzero(c, size=, fill_value=)`)."""
  if x is None and y is None:
    util.check_arraylike("where", condition)
    return indexing.nonzero(condition, size=size, fill_value=fill_value)
  util.check_arraylike("where", condition, x, y)
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value arguments cannot be used in three-term where "
                     "function.")
  if isinstance(x, PRNGKeyArray) or isinstance(y, PRNGKeyArray):
    return _where_keys(condition, x, y)
  return _where(condition, x, y)


def _where_keys(condition, x, y):
  """where over typed PRNG keys, as JAX's: a key array of each chosen key's data (keys
  mixed with numbers are an error, as in JAX's type promotion)."""
  if not (isinstance(x, PRNGKeyArray) and isinstance(y, PRNGKeyArray)):
    key = x if isinstance(x, PRNGKeyArray) else y
    raise ValueError(f"dtype={key.dtype} is not a valid dtype for JAX type promotion.")
  c = asarray(condition)
  if c.dtype != np.bool_:
    c = lax.ne(c, _zero(c))
  shape = util.broadcast_shapes(c.shape, x.shape, y.shape)
  full = (*shape, *KEY_SHAPE)
  n = len(shape)

  def data(k):
    return lax.broadcast_in_dim(k._data, full, tuple(range(n - k.ndim, n + len(KEY_SHAPE))))
  pred = lax.broadcast_in_dim(c, full, tuple(range(n - c.ndim, n)))
  return PRNGKeyArray(lax.select(pred, data(x), data(y)))


def _broadcast_arrays(*args):
  shapes = [core.get_aval(a).shape for a in args]
  if all(s == shapes[0] for s in shapes):
    return list(args)
  shape = util.broadcast_shapes(*shapes)
  return [util.broadcast_to_shape(a, shape) for a in args]


@jit
def _where(condition, x, y):
  condition, x, y = (asarray(a) for a in (condition, x, y))
  if condition.dtype != np.bool_:
    condition = lax.ne(condition, _zero(condition))
  x, y = util.promote_dtypes(x, y)
  if condition.ndim == 0:  # lax.select takes a scalar predicate as it is
    x, y = _broadcast_arrays(x, y)
  else:
    condition, x, y = _broadcast_arrays(condition, x, y)
  if 0 in x.shape:
    return x
  return lax.select(condition, x, y)


@jit(static_argnames=("equal_nan",))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Elementwise |a - b| <= atol + rtol * |b|; infinities are close to themselves, NaNs
  only with equal_nan."""
  a, b = util.promote_args("isclose", a, b)
  if isinstance(a, PRNGKeyArray):   # keys have no distance: close means equal, as in JAX
    return a == b
  a, b = util.promote_args_inexact("isclose", a, b)
  dtype = a.dtype
  if dtypes.is_complex(dtype):
    dtype = dtypes.finfo(dtype).dtype
  rtol = lax.convert_element_type(rtol, dtype)
  atol = lax.convert_element_type(atol, dtype)
  both_nan = ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b))
  check_fin = ufuncs.isfinite(b)
  in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  out = ufuncs.logical_or(lax.eq(a, b), ufuncs.logical_and(check_fin, in_range))
  return ufuncs.logical_or(out, both_nan) if equal_nan else out


@jit
def iscomplex(x):
  """Elementwise: is the imaginary part nonzero?"""
  i = ufuncs.imag(x)
  return lax.ne(i, _zero(i))


@jit
def isreal(x):
  """Elementwise: is the imaginary part zero?"""
  i = ufuncs.imag(x)
  return lax.eq(i, _zero(i))

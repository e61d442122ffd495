"""ember.numpy logic helpers: where, isclose/allclose, array_equal/array_equiv,
iscomplex/isreal, isin.

As in jax.numpy 0.12, the 3-argument `where` runs inside a nested `jit` named `_where`,
and isclose/allclose/iscomplex/isreal are jitted under their own names, so staged
jaxprs show the same `jit[name=...]` equations.
"""
from __future__ import annotations

import importlib

import numpy as np

from ember._src import core, dtypes
from ember._src import lax_api as lax
from ember._src.jit import jit
from ember._src.numpy import util
from ember._src.numpy.creation import _zero, array, asarray, ones, zeros
from ember._src.numpy import indexing

__all__ = ["where", "isclose", "allclose", "array_equal", "array_equiv", "iscomplex",
           "isreal", "isin"]


def _jnp():
  """ember.numpy, for functions other modules provide (looked up at call time)."""
  return importlib.import_module("ember.numpy")


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
  return _where(condition, x, y)


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
  jnp = _jnp()
  a, b = util.promote_args("isclose", a, b)
  a, b = util.promote_args_inexact("isclose", a, b)
  dtype = a.dtype
  if dtypes.is_complex(dtype):
    dtype = dtypes.finfo(dtype).dtype
  rtol = lax.convert_element_type(rtol, dtype)
  atol = lax.convert_element_type(atol, dtype)
  both_nan = jnp.logical_and(jnp.isnan(a), jnp.isnan(b))
  check_fin = jnp.isfinite(b)
  in_range = lax.le(lax.abs(lax.sub(a, b)), lax.add(atol, lax.mul(rtol, lax.abs(b))))
  out = jnp.logical_or(lax.eq(a, b), jnp.logical_and(check_fin, in_range))
  return jnp.logical_or(out, both_nan) if equal_nan else out


@jit(static_argnames=("equal_nan",))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """True (a 0-d bool array, as in JAX) when isclose(a, b) holds everywhere."""
  util.check_arraylike("allclose", a, b)
  return _jnp().all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
  """True when a1 and a2 have the same shape and elements (a 0-d bool array)."""
  jnp = _jnp()
  a1, a2 = asarray(a1), asarray(a2)
  if a1.shape != a2.shape:
    return array(False, dtype=np.bool_)
  eq = asarray(a1 == a2)
  if equal_nan:
    eq = jnp.logical_or(eq, jnp.logical_and(jnp.isnan(a1), jnp.isnan(a2)))
  return jnp.all(eq)


def array_equiv(a1, a2):
  """True when a1 and a2 broadcast to each other and are equal (a 0-d bool array)."""
  jnp = _jnp()
  a1, a2 = asarray(a1), asarray(a2)
  try:
    util.broadcast_shapes(a1.shape, a2.shape)
  except ValueError:  # NumPy's answer (JAX 0.12 raises lax.eq's TypeError here)
    return array(False)
  return jnp.all(jnp.equal(a1, a2))


@jit
def iscomplex(x):
  """Elementwise: is the imaginary part nonzero?"""
  i = _jnp().imag(x)
  return lax.ne(i, _zero(i))


@jit
def isreal(x):
  """Elementwise: is the imaginary part zero?"""
  i = _jnp().imag(x)
  return lax.eq(i, _zero(i))


_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


@jit(static_argnames=("assume_unique", "invert", "method"))
def _in1d(ar1, ar2, invert, method, assume_unique):
  jnp = _jnp()
  arr1, arr2 = util.promote_dtypes(asarray(ar1), asarray(ar2))
  arr1 = lax.reshape(arr1, (arr1.size,))
  arr2 = lax.reshape(arr2, (arr2.size,))
  if arr1.size == 0 or arr2.size == 0:
    return (ones if invert else zeros)(arr1.shape, dtype=np.bool_)
  # Every method gives the same answer; ember compares all pairs.
  pairs1, pairs2 = lax.expand_dims(arr1, (1,)), lax.expand_dims(arr2, (0,))
  if invert:
    return jnp.all(jnp.not_equal(pairs1, pairs2), axis=-1)
  return jnp.any(jnp.equal(pairs1, pairs2), axis=-1)



def isin(element, test_elements, assume_unique: bool = False, invert: bool = False, *,
         method="auto"):
  """Elementwise: is each element of `element` in `test_elements`? (shape of `element`)"""
  util.check_arraylike("isin", element, test_elements)
  if method not in _ISIN_METHODS:
    raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                     "'binary_search', 'sort', and 'auto'")
  element, test_elements = asarray(element), asarray(test_elements)
  result = _in1d(element, test_elements, invert=invert, method=method,
                 assume_unique=assume_unique)
  return lax.reshape(result, element.shape)

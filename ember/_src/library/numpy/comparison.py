"""Whole-array comparisons and membership: allclose, array_equal, array_equiv, isin (the
elementwise tests of logic.py and ufuncs.py reduced with reductions' all/any)."""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import ufuncs, util
from ember._src.library.numpy.creation import array, asarray, ones, zeros
from ember._src.library.numpy.logic import isclose
from ember._src.library.numpy.reductions import all, any  # noqa: A004 - jnp.all/any

__all__ = ["allclose", "array_equal", "array_equiv", "isin"]


@jit(static_argnames=("equal_nan",))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """True (a 0-d bool array, as in JAX) when isclose(a, b) holds everywhere."""
  util.check_arraylike("allclose", a, b)
  return all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
  """True when a1 and a2 have the same shape and elements (a 0-d bool array)."""
  a1, a2 = asarray(a1), asarray(a2)
  if a1.shape != a2.shape:
    return array(False, dtype=np.bool_)
  eq = asarray(a1 == a2)
  if equal_nan and _inexact(a1.dtype) and _inexact(a2.dtype):  # keys, ints: no NaNs
    eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
  return all(eq)


def _inexact(dt) -> bool:
  return not isinstance(dt, dtypes.ExtendedDType) and dtypes.dtype_kind(dt) in "fc"


def array_equiv(a1, a2):
  """True when a1 and a2 broadcast to each other and are equal (a 0-d bool array)."""
  a1, a2 = asarray(a1), asarray(a2)
  try:
    util.broadcast_shapes(a1.shape, a2.shape)
  except ValueError:  # NumPy's answer (JAX 0.12 raises lax.eq's TypeError here)
    return array(False)
  return all(ufuncs.equal(a1, a2))


_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


@jit(static_argnames=("assume_unique", "invert", "method"))
def _in1d(ar1, ar2, invert, method, assume_unique):
  arr1, arr2 = util.promote_dtypes(asarray(ar1), asarray(ar2))
  arr1 = lax.reshape(arr1, (arr1.size,))
  arr2 = lax.reshape(arr2, (arr2.size,))
  if arr1.size == 0 or arr2.size == 0:
    return (ones if invert else zeros)(arr1.shape, dtype=np.bool_)
  # Every method gives the same answer; ember compares all pairs.
  pairs1, pairs2 = lax.expand_dims(arr1, (1,)), lax.expand_dims(arr2, (0,))
  if invert:
    return all(ufuncs.not_equal(pairs1, pairs2), axis=-1)
  return any(ufuncs.equal(pairs1, pairs2), axis=-1)


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

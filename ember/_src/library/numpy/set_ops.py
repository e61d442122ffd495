"""ember.numpy's set operations on 1-D arrays: intersect1d, union1d, setdiff1d and setxor1d
(unique is sorting.py's, isin comparison.py's).

Ported from jax/_src/numpy/setops.py so dtypes, weak types and errors match JAX 0.12. The
result shape depends on the values: with a static `size=` they stage under jit (padded with
`fill_value`); without it they need concrete inputs, as in JAX, and unlike JAX concrete
(closed-over) inputs also work inside jit: `_concrete_eval` runs them eagerly there.
"""
from __future__ import annotations

import contextlib
from functools import partial

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import (
    comparison, creation, indexing, logic, reductions, sorting, util)
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.arguments import _static_int, asarray_args
from ember._src.library.numpy.reductions import aval

__all__ = ["intersect1d", "union1d", "setdiff1d", "setxor1d"]


@contextlib.contextmanager
def _concrete_eval(fun_name, *arrays):
  """For results whose shape depends on values: the inputs must be concrete (else a
  ConcretizationTypeError suggesting `size=`), and the block then runs eagerly even inside
  a jit trace, where the result becomes a constant (as jnp.unique of a constant does)."""
  for a in arrays:
    creation._concrete_or_error(a, f"The error arose in {fun_name}(). To use it under jit, "
                                "pass a static size= argument.")
  with core.new_dynamic(None):
    yield


def _unique_padded(arr, return_index=False):
  """Sorted unique values of 1-D `arr` padded with 0 to arr.size, [first indices padded
  with 0], and the number of unique values (JAX's `_unique(..., return_true_size=True)`)."""
  n = aval(arr).shape[0]
  out = sorting._unique(arr, return_index, False, True, None, True, n, 0)
  counts = out[-1]
  return (*out[:-1], reductions.sum(lax.gt(counts, lax.full((), 0, aval(counts).dtype)),
                                    dtype=dtypes.default_int_dtype()))


def _pad_fill(vals, num_results, fill_value):
  """vals[k] for k < num_results, else fill_value (default: the smallest valid value)."""
  if aval(vals).size == 0:
    return vals
  valid = creation.arange(aval(vals).shape[0]) < num_results
  if fill_value is None:  # through max() first so padding can't win the min()
    vals = logic.where(valid, vals, vals.max())
    return logic.where(valid, vals, vals.min())
  return logic.where(valid, vals, fill_value)


def setdiff1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
  """Sorted unique values of ar1 that are not in ar2. Under jit pass a static `size`; the
  result is padded with `fill_value` (default 0)."""
  ar1, ar2 = asarray_args("setdiff1d", ar1, ar2)
  if size is None:
    with _concrete_eval("setdiff1d", ar1, ar2):
      return _setdiff1d(ar1, ar2, assume_unique, None, fill_value)
  return _setdiff1d(ar1, ar2, assume_unique,
                    _static_int(size, "the size argument of setdiff1d()"), fill_value)


def _setdiff1d(arr1, arr2, assume_unique, size, fill_value):
  arr1, arr2 = shape_ops.ravel(arr1), shape_ops.ravel(arr2)
  fill_value = creation.full_like(arr1, 0 if fill_value is None else fill_value, shape=())
  if aval(arr1).size == 0 or size == 0:
    return creation.full_like(arr1, fill_value, shape=size or 0)
  if not assume_unique:
    arr1 = sorting.unique(arr1, size=size and aval(arr1).size)
  mask = comparison.isin(arr1, arr2, invert=True, assume_unique=assume_unique)
  if size is None:
    return arr1[mask]
  if not assume_unique:  # unique()'s padding repeats arr1[0]: mask it out
    n_unique = aval(arr1).size + 1 - (arr1 == arr1[0]).sum()
    mask = logic.where(creation.arange(aval(arr1).size) < n_unique, mask, False)
  return logic.where(creation.arange(size) < mask.sum(), arr1[logic.where(mask, size=size)],
                     fill_value)


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """Sorted unique values in ar1 or ar2 (`size=`/`fill_value=` as in jnp.unique)."""
  ar1, ar2 = asarray_args("union1d", ar1, ar2)
  if size is None:
    with _concrete_eval("union1d", ar1, ar2):
      return sorting.unique(shape_ops.concatenate((ar1, ar2), axis=None), fill_value=fill_value)
  size = _static_int(size, "the size argument of union1d()")
  return sorting.unique(shape_ops.concatenate((ar1, ar2), axis=None), size=size,
                        fill_value=fill_value)


@partial(jit, static_argnames=("assume_unique", "size"))
def _setxor1d_size(arr1, arr2, fill_value, *, assume_unique, size):
  if assume_unique:
    aux = sorting.sort(shape_ops.concatenate([arr1, arr2]))
    flag = shape_ops.concatenate((bool(aval(aux).size), aux[1:] != aux[:-1], True), axis=None)
  else:
    v1, n1 = _unique_padded(arr1)
    v2, n2 = _unique_padded(arr2)
    arr = creation.zeros(aval(v1).size + aval(v2).size, aval(v1).dtype)
    arr = lax.dynamic_update_slice(arr, v1, (0,))
    arr = lax.dynamic_update_slice(arr, v2, (n1,))
    num_unique = n1 + n2
    mask = creation.arange(aval(arr).size + 1) < num_unique + 1
    _, aux = lax.sort([~mask[1:], arr], is_stable=True, num_keys=2)
    flag = mask & shape_ops.concatenate((bool(aval(aux).size), aux[1:] != aux[:-1], False),
                                        axis=None).at[num_unique].set(True)
  aux_mask = flag[1:] & flag[:-1]
  if aval(aux).size:
    indices = indexing.nonzero(aux_mask, size=size, fill_value=aval(aux).size)[0]
    vals = aux.at[indices].get(mode="fill", fill_value=0)
  else:
    vals = creation.zeros(size, aval(aux).dtype)
  return _pad_fill(vals, aux_mask.sum(), fill_value)


def setxor1d(ar1, ar2, assume_unique: bool = False, *, size=None, fill_value=None):
  """Sorted unique values in exactly one of ar1 and ar2 (`size=` for jit, padded with
  `fill_value`, default the smallest result)."""
  ar1, ar2 = asarray_args("setxor1d", ar1, ar2)
  if size is not None:
    arr1, arr2 = util.promote_dtypes(shape_ops.ravel(ar1), shape_ops.ravel(ar2))
    return _setxor1d_size(arr1, arr2, fill_value, assume_unique=assume_unique,
                          size=_static_int(size, "the size argument of setxor1d()"))
  with _concrete_eval("setxor1d", ar1, ar2):
    ar1, ar2 = util.promote_dtypes(shape_ops.ravel(ar1), shape_ops.ravel(ar2))
    return _setxor1d(ar1, ar2, assume_unique)


def _setxor1d(arr1, arr2, assume_unique):
  if not assume_unique:
    arr1, arr2 = sorting.unique(arr1), sorting.unique(arr2)
  aux = shape_ops.concatenate((arr1, arr2))
  if aval(aux).size == 0:
    return aux
  aux = sorting.sort(aux)
  flag = shape_ops.concatenate((True, aux[1:] != aux[:-1], True), axis=None)
  return aux[flag[1:] & flag[:-1]]


@partial(jit, static_argnames=("return_indices",))
def _intersect1d_sorted_mask(arr1, arr2, return_indices):
  arr = shape_ops.concatenate((arr1, arr2))
  if return_indices:
    aux, indices = lax.sort_key_val(arr, lax.iota(np.int32, aval(arr).shape[0]))
  else:
    aux, indices = sorting.sort(arr), None
  return aux, aux[1:] == aux[:-1], indices


@partial(jit, static_argnames=("fill_value", "assume_unique", "size", "return_indices"))
def _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices):
  n1, n2 = aval(arr1).size, aval(arr2).size
  if assume_unique:
    ind1, num_unique1 = creation.arange(n1), creation.full((), n1)
    ind2 = creation.arange(n2)
    arr = shape_ops.concatenate([arr1, arr2])
    aux, aux_sort_indices = lax.sort([arr, creation.arange(aval(arr).size)], is_stable=True,
                                     num_keys=1)
    mask = creation.ones(aval(arr).size, dtype=bool)
  else:
    arr1, ind1, num_unique1 = _unique_padded(arr1, return_index=True)
    arr2, ind2, num_unique2 = _unique_padded(arr2, return_index=True)
    arr = creation.zeros(n1 + n2, dtype=aval(arr1).dtype)
    arr = lax.dynamic_update_slice(arr, arr1, (0,))
    arr = lax.dynamic_update_slice(arr, arr2, (num_unique1,))
    mask = creation.arange(aval(arr).size) < num_unique1 + num_unique2
    _, aux, aux_sort_indices = lax.sort([~mask, arr, creation.arange(aval(arr).size)],
                                        is_stable=True, num_keys=2)
  # sorted unique values of both: equal neighbours are the intersection
  aux_mask = (aux[1:] == aux[:-1]) & mask[1:]
  num_results = aux_mask.sum()
  if aval(aux).size:
    val_indices = indexing.nonzero(aux_mask, size=size, fill_value=aval(aux).size)[0]
    vals = aux.at[val_indices].get(mode="fill", fill_value=0)
  else:
    val_indices = creation.arange(0)
    vals = creation.zeros(size, aval(aux).dtype)
  vals = _pad_fill(vals, num_results, fill_value)
  if not return_indices:
    return vals
  valid = creation.arange(size) < num_results
  i1 = aux_sort_indices.at[val_indices].get(mode="fill", fill_value=n1)
  i1 = logic.where(valid, i1, n1)
  i2 = aux_sort_indices.at[val_indices + 1].get(mode="fill", fill_value=n2) - num_unique1
  i2 = logic.where(valid, i2, n2)
  if not assume_unique:
    i1 = ind1.at[i1].get(mode="fill", fill_value=aval(ind1).size)
    i2 = ind2.at[i2].get(mode="fill", fill_value=aval(ind2).size)
  return vals, i1, i2


def intersect1d(ar1, ar2, assume_unique: bool = False, return_indices: bool = False, *,
                size=None, fill_value=None):
  """Sorted unique values in both ar1 and ar2, optionally with the indices of their first
  occurrences in each. Under jit pass a static `size`."""
  ar1, ar2 = asarray_args("intersect1d", ar1, ar2)
  if size is not None:
    arr1, arr2 = (shape_ops.ravel(a) for a in util.promote_dtypes(ar1, ar2))
    return _intersect1d_size(arr1, arr2, fill_value=fill_value, assume_unique=assume_unique,
                             size=_static_int(size, "the size argument of intersect1d()"),
                             return_indices=return_indices)
  with _concrete_eval("intersect1d", ar1, ar2):
    return _intersect1d(*(shape_ops.ravel(a) for a in util.promote_dtypes(ar1, ar2)), assume_unique,
                        return_indices)


def _intersect1d(arr1, arr2, assume_unique, return_indices):
  ind1 = ind2 = None
  if not assume_unique:
    if return_indices:
      arr1, ind1 = sorting.unique(arr1, return_index=True)
      arr2, ind2 = sorting.unique(arr2, return_index=True)
    else:
      arr1, arr2 = sorting.unique(arr1), sorting.unique(arr2)
  aux, mask, aux_sort_indices = _intersect1d_sorted_mask(arr1, arr2, return_indices)
  int1d = aux[:-1][mask]
  if not return_indices:
    return int1d
  i1 = aux_sort_indices[:-1][mask]
  i2 = aux_sort_indices[1:][mask] - aval(arr1).size
  if not assume_unique:
    i1, i2 = ind1[i1], ind2[i2]
  return int1d, i1, i2

"""ember.numpy's statistics of samples: cov and corrcoef, and the multidimensional
histograms histogramdd and histogram2d (histogram, histogram_bin_edges and bincount are
sorting.py's; mean, var, quantile and the other reductions are reductions.py's).

Ported from jax/_src/numpy (lax_numpy.py, reductions.py) so dtypes, weak types and errors
match JAX 0.12; cov and corrcoef are wrapped in a named `jit`, as in JAX.
"""
from __future__ import annotations

import builtins
import math
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import (
    creation, indexing, logic, products, reductions, sorting, ufuncs, util)
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.arguments import asarray_args
from ember._src.library.numpy.differences import diff
from ember._src.library.numpy.reductions import asarray_arg, aval

__all__ = ["cov", "corrcoef", "histogram2d", "histogramdd"]

_range = builtins.range


@partial(jit, static_argnames=("rowvar", "bias", "ddof", "dtype"))
def cov(m, y=None, rowvar: bool = True, bias: bool = False, ddof=None, fweights=None,
        aweights=None, dtype=None):
  """Covariance matrix of the variables in the rows (or columns, rowvar=False) of m (and
  y), optionally with integer frequency weights and observation weights."""
  if y is not None:
    m, y = util.promote_args_inexact("cov", m, y)
    if aval(y).ndim > 2:
      raise ValueError("y has more than 2 dimensions")
  else:
    m, = util.promote_args_inexact("cov", m)
  if aval(m).ndim > 2:
    raise ValueError("m has more than 2 dimensions")
  if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
  X = shape_ops.atleast_2d(m)
  if not rowvar and aval(m).ndim != 1:
    X = X.T
  if aval(X).shape[0] == 0:
    return creation.array([]).reshape(0, 0)
  if y is not None:
    y_arr = shape_ops.atleast_2d(y)
    if not rowvar and aval(y_arr).shape[0] != 1:
      y_arr = y_arr.T
    X = shape_ops.concatenate((X, y_arr), axis=0)
  nvar, nobs = aval(X).shape
  if nobs == 0:
    return creation.full(() if nvar == 1 else (nvar, nvar), np.nan, dtype=aval(X).dtype)
  if ddof is None:
    ddof = 1 if bias == 0 else 0
  w = None
  if fweights is not None:
    fweights = asarray_arg("cov", fweights)
    if aval(fweights).ndim > 1:
      raise RuntimeError("cannot handle multidimensional fweights")
    if aval(fweights).shape[0] != nobs:
      raise RuntimeError("incompatible numbers of samples and fweights")
    if not dtypes.is_integer(aval(fweights).dtype):
      raise TypeError("fweights must be integer.")
    w = ufuncs.abs(fweights)  # NumPy raises on negative weights; JAX takes |w|
  if aweights is not None:
    aweights = asarray_arg("cov", aweights)
    if aval(aweights).ndim > 1:
      raise RuntimeError("cannot handle multidimensional aweights")
    if aval(aweights).shape[0] != nobs:
      raise RuntimeError("incompatible numbers of samples and aweights")
    aweights = ufuncs.abs(aweights)
    w = aweights if w is None else w * aweights
  if dtype is not None:
    X = X.astype(dtype)
    w = w.astype(dtype) if w is not None else w
  avg, w_sum = reductions.average(X, axis=1, weights=w, returned=True)
  w_sum = w_sum[0]
  if w is None:
    f = nobs - ddof
  elif ddof == 0:
    f = w_sum
  elif aweights is None:
    f = w_sum - ddof
  else:
    f = w_sum - ddof * reductions.sum(w * aweights) / w_sum
  X = X - avg[:, None]
  X_T = X.T if w is None else (X * lax.broadcast_to_rank(w, aval(X).ndim)).T
  return shape_ops.squeeze(ufuncs.true_divide(products.dot(X, ufuncs.conj(X_T)), f))


@partial(jit, static_argnames=("rowvar", "dtype"))
def corrcoef(x, y=None, rowvar: bool = True, dtype=None):
  """Pearson correlation coefficients (cov normalized by the standard deviations, real and
  imaginary parts clipped to [-1, 1])."""
  util.check_arraylike("corrcoef", x)
  if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                     f"dtype={dtype}")
  c = cov(x, y, rowvar, dtype=dtype)
  if aval(c).ndim == 0:  # one variable: nan for nan/inf/zero variance, else 1
    return ufuncs.divide(c, c)
  stddev = ufuncs.sqrt(ufuncs.real(reductions.diag(c))).astype(aval(c).dtype)
  c = c / stddev[:, None] / stddev[None, :]
  real = ufuncs.clip(ufuncs.real(c), -1, 1)
  if dtypes.is_complex(aval(c).dtype):
    return lax.complex(real, ufuncs.clip(ufuncs.imag(c), -1, 1))
  return real


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """Multidimensional histogram of an (N, D) sample: counts (or summed weights) per bin,
  and the D arrays of bin edges. `bins`: an int, or one int / edge array per dimension."""
  if weights is None:
    sample, = util.promote_dtypes_inexact(asarray_arg("histogramdd", sample))
  else:
    sample, weights = asarray_args("histogramdd", sample, weights)
    if aval(weights).shape != aval(sample).shape[:1]:
      raise ValueError("should have one weight for each sample.")
    sample, weights = util.promote_dtypes_inexact(sample, weights)
  if aval(sample).ndim != 2:
    raise ValueError(f"histogramdd: sample must be a 2-D array of shape (N, D), got shape "
                     f"{aval(sample).shape}")
  N, D = aval(sample).shape
  if range is not None and (len(range) != D or builtins.any(
      r is not None and np.shape(r)[0] != 2 for r in range)):
    raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or "
                     f"Nones; got range={range}")
  try:
    bins_per_dim = list(bins)
  except TypeError:  # one bin count for every dimension
    bins_per_dim = D * [bins]
  else:
    if len(bins_per_dim) != D:
      raise ValueError("should be a bin for each dimension.")
  idx_by_dim, edges_by_dim = [], []
  for i in _range(D):
    col = sample[:, i]
    edges = sorting.histogram_bin_edges(col, bins_per_dim[i], None if range is None else range[i],
                                        weights)
    idx = sorting.searchsorted(edges, col, side="right")
    idx = logic.where(col == edges[-1], idx - 1, idx)  # the last bin includes its right edge
    idx_by_dim.append(idx)
    edges_by_dim.append(edges)
  nbins = tuple(aval(e).shape[0] + 1 for e in edges_by_dim)
  xy = indexing.ravel_multi_index(tuple(idx_by_dim), nbins, mode="clip")
  hist = sorting.bincount(xy, weights, length=math.prod(nbins)).reshape(nbins)
  hist = hist[D * (slice(1, -1),)]  # drop the under/overflow bins
  if density:
    hist = hist.astype(aval(sample).dtype)
    hist = hist / hist.sum()
    for norm in indexing.ix_(*(diff(e) for e in edges_by_dim)):
      hist = hist / norm
  return hist, edges_by_dim


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """2-D histogram of the points (x[i], y[i]): counts, x edges, y edges."""
  x, y = asarray_args("histogram2d", x, y)
  try:
    nb = len(bins)
  except TypeError:
    nb = 1
  if nb not in (1, 2):  # one edge array shared by both dimensions
    edges = creation.asarray(bins)
    bins = [edges, edges]
  hist, edges = histogramdd(shape_ops.transpose(creation.asarray([x, y])), bins, range,
                            weights, density)
  return hist, edges[0], edges[1]

"""ember.numpy's roots (eigenvalues of the companion matrix) and polyfit (least squares on
the column-scaled Vandermonde matrix), as jax/_src/numpy/polynomial.py computes them: same
steps, dtypes, errors and NaN placement for roots' leading zeros under jit."""
from __future__ import annotations

from functools import partial

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, logic, reductions, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.linalg_decompositions import eigvals
from ember._src.library.numpy.linalg_solvers import inv, lstsq
from ember._src.library.numpy.polynomial import vander
from ember._src.library.numpy.products import matmul
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.primitives.sorting import sort_key_val

__all__ = ["roots", "polyfit"]


def _complex_of(dt) -> np.dtype:
  return np.result_type(dt, np.complex64)


@jit
def _roots_no_zeros(p):
  """Eigenvalues of the companion matrix of p (p[0] != 0)."""
  n = aval(p).shape[0]
  if n < 2:
    return creation.array([], dtype=_complex_of(aval(p).dtype))
  companion = reductions.diag(creation.ones((n - 2,), aval(p).dtype), -1)
  companion = companion.at[0, :].set(-p[1:] / p[0])
  return eigvals(companion)


@jit
def _roots_with_zeros(p, num_leading_zeros):
  """roots under jit: the leading zeros rolled to the end; their roots are NaN."""
  n = aval(p).shape[0]
  p = logic.where(n == num_leading_zeros, creation.array(1.0, aval(p).dtype), p)
  r = _roots_no_zeros(shape_ops.roll(p, -num_leading_zeros))
  r = sort_key_val(r == 0, r)[1]   # the zero roots last, stably
  keep = creation.arange(aval(r).shape[0]) < aval(r).shape[0] - num_leading_zeros
  return logic.where(keep, r, complex(np.nan, np.nan))


def roots(p, *, strip_zeros: bool = True):
  """The roots of the polynomial with coefficients p (highest power first), complex. With
  strip_zeros (needs a concrete p) leading zeros are dropped; with strip_zeros=False (works
  under jit) each leading zero gives a NaN root instead."""
  p, = util.promote_dtypes_inexact(asarray_arg("roots", p))
  p = shape_ops.atleast_1d(p)
  if aval(p).ndim != 1:
    raise ValueError("Input must be a rank-1 array.")
  n = aval(p).shape[0]
  if n < 2:
    return creation.array([], dtype=_complex_of(aval(p).dtype))
  is_zero = p == 0
  num_leading_zeros = logic.where(reductions.all(is_zero), n, reductions.argmin(is_zero))
  if not strip_zeros:
    return _roots_with_zeros(p, num_leading_zeros)
  num_leading_zeros = core.concrete_or_error(
      int, num_leading_zeros,
      "The error occurred in the jnp.roots() function. To use this within a JIT-compiled "
      "context, pass strip_zeros=False, but be aware that leading zeros will result in some "
      "returned roots being set to NaN.")
  return _roots_no_zeros(p[num_leading_zeros:])


def _check_polyfit_args(x, y, deg, w):
  if deg < 0:
    raise ValueError("expected deg >= 0")
  if aval(x).ndim != 1:
    raise TypeError("expected 1D vector for x")
  if aval(x).shape[0] == 0:
    raise TypeError("expected non-empty vector for x")
  if aval(y).ndim not in (1, 2):
    raise TypeError("expected 1D or 2D array for y")
  if aval(x).shape[0] != aval(y).shape[0]:
    raise TypeError("expected x and y to have same length")
  if w is not None:
    if aval(w).ndim != 1:
      raise TypeError("expected a 1-d array for weights")
    if aval(w).shape[0] != aval(y).shape[0]:
      raise TypeError("expected w and y to have the same length")


@partial(jit, static_argnames=("deg", "rcond", "full", "cov"))
def polyfit(x, y, deg: int, rcond=None, full: bool = False, w=None, cov=False):
  """Least-squares polynomial fit of degree `deg` (coefficients highest power first; y may
  hold several columns). full=True adds (residuals, rank, singular values, rcond);
  cov=True (or "unscaled") adds the coefficients' covariance."""
  x, y = asarray_arg("polyfit", x), asarray_arg("polyfit", y)
  w = None if w is None else util.promote_dtypes_inexact(asarray_arg("polyfit", w))[0]
  deg = core.concrete_or_error(int, deg, "deg must be int")
  _check_polyfit_args(x, y, deg, w)
  order = deg + 1
  n = aval(x).shape[0]
  if rcond is None:
    rcond = n * float(dtypes.finfo(aval(x).dtype).eps)
  rcond = core.concrete_or_error(float, rcond, "rcond must be float")
  lhs, rhs = vander(x, order), y
  if w is not None:
    lhs = lhs * w[:, None]
    rhs = rhs * (w[:, None] if aval(rhs).ndim == 2 else w)
  scale = lax.sqrt(reductions.sum(lhs * lhs, axis=0))   # unit columns: better conditioned
  lhs = lhs / scale[None, :]
  c, resids, rank, s = lstsq(lhs, rhs, rcond)
  c = (c.T / scale[None, :]).T if aval(c).ndim > 1 else c / scale
  if full:
    return c, resids, rank, s, creation.asarray(rcond)
  if not cov:
    return c
  vbase = inv(matmul(lhs.T, lhs)) / (scale[:, None] * scale[None, :])
  if cov == "unscaled":
    fac = creation.array(1.0)
  else:
    if n <= order:
      raise ValueError("the number of data points must exceed order to scale the "
                       "covariance matrix")
    fac = resids / (n - order)
  if aval(y).ndim == 1:
    return c, vbase * shape_ops.atleast_1d(fac)[None]
  return c, vbase[:, :, None] * shape_ops.atleast_1d(fac)[None, None, :]

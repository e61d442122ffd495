"""ember.numpy's remaining NumPy functions: differences and integration (diff, gradient,
trapezoid, unwrap), 1-D signal helpers (convolve, correlate, interp, windows), statistics
(cov, corrcoef, histogram2d/dd), set operations on 1-D arrays, polynomials, bit packing,
index tricks (mgrid, ogrid, r_, c_, s_) and small utilities.

Ported from jax/_src/numpy (lax_numpy.py, setops.py, polynomial.py, window_functions.py,
index_tricks.py) so dtypes, weak types and errors match JAX 0.12; everything is built from
lax and ember.numpy operations, so it runs eagerly and under `ember.jit` alike. Functions JAX
wraps in a named `jit` are wrapped the same way (jaxprs show `jit[name=diff]`). Functions
whose output shape depends on values (set operations without `size=`, trim_zeros) need
concrete inputs, as in JAX; unlike JAX, concrete (closed-over) inputs also work inside jit.

Differences from JAX's lowering (values are the same): convolve/correlate build the sliding
windows with pad/reshape/slice and contract them with one dot_general (ember has no
conv_general_dilated), and polyval is Horner's rule with mul/add (no polynomial primitive).
"""
from __future__ import annotations

import builtins
import contextlib
import math
import operator
from functools import partial

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import (
    comparison, creation, indexing, linalg, logic, reductions, sorting, ufuncs, util)
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.primitives.elementwise import convert_element_type

__all__ = [
    "diff", "ediff1d", "gradient", "trapezoid", "unwrap", "convolve", "correlate", "interp",
    "cov", "corrcoef", "histogram2d", "histogramdd",
    "intersect1d", "union1d", "setdiff1d", "setxor1d",
    "poly", "polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder", "polyint",
    "vander", "packbits", "unpackbits", "trim_zeros", "sort_complex", "mask_indices",
    "fill_diagonal", "bartlett", "blackman", "hamming", "hanning", "kaiser",
    "mgrid", "ogrid", "r_", "c_", "s_", "index_exp", "array_repr", "array_str",
    "ComplexWarning",
]

_min, _max, _range = builtins.min, builtins.max, builtins.range

# Straight from NumPy, as in jax.numpy: they only read shape/dtype/values of their input.
array_repr, array_str = np.array_repr, np.array_str
s_, index_exp = np.s_, np.index_exp
ComplexWarning = np.exceptions.ComplexWarning


# --- helpers ------------------------------------------------------------------------------

def asarray_args(fun_name: str, *xs):
  """JAX's ensure_arraylike for several arguments (errors name the argument position)."""
  util.check_arraylike(fun_name, *xs)
  return [asarray_arg(fun_name, x) for x in xs]


def _static_int(x, what: str) -> int:
  """A Python int from an int-like argument that must be known while tracing."""
  return operator.index(creation._concrete_or_error(x, f"The error arose for {what}."))


def _concrete_np(x, what: str) -> np.ndarray:
  """The NumPy value of an array argument that must be concrete (eager or static)."""
  return np.asarray(creation._concrete_or_error(x, f"The error arose in {what}."))


def _broadcast_edge(v, arr, axis):
  """A scalar `prepend`/`append` value broadcast to arr's shape with size 1 along axis."""
  v = asarray_arg("diff", v)
  if aval(v).ndim:
    return v
  shape = list(aval(arr).shape)
  shape[axis] = 1
  return shape_ops.broadcast_to(v, tuple(shape))


# --- differences, integration -------------------------------------------------------------

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


# --- convolution, interpolation -----------------------------------------------------------

def _sliding_windows(x, m: int, lo: int, hi: int):
  """W of shape (m, L) with W[j, i] = xpad[i + j], xpad = x zero-padded by (lo, hi) and
  L = len(xpad) - m + 1. Built without a gather: m copies of xpad laid end to end and
  re-read with row stride P + 1 shift each row by one (i + j < P keeps reads in bounds)."""
  zero = lax.full_like(x, 0, shape=())  # keeps x's weak type
  xpad = lax.pad(x, zero, [(lo, hi, 0)])
  p = aval(xpad).shape[0]
  length = p - m + 1
  if m == 1:
    return lax.reshape(xpad, (1, p))
  flat = lax.reshape(lax.broadcast_in_dim(xpad, (m, p), (1,)), (m * p,))
  flat = lax.pad(flat, zero, [(0, m, 0)])
  return lax.slice(lax.reshape(flat, (m, p + 1)), (0, 0), (m, length))


@partial(jit, static_argnames=("mode", "op", "precision", "preferred_element_type"))
def _conv(x, y, mode, op, precision, preferred_element_type=None):
  if aval(x).ndim != 1 or aval(y).ndim != 1:
    raise ValueError(f"{op}() only support 1-dimensional inputs.")
  if preferred_element_type is None:  # NumPy's default: convolutions are inexact
    x, y = util.promote_dtypes_inexact(x, y)
  else:
    x, y = util.promote_dtypes(x, y)
  if aval(x).shape[0] == 0 or aval(y).shape[0] == 0:
    raise ValueError(f"{op}: inputs cannot be empty, got shapes {aval(x).shape} and "
                     f"{aval(y).shape}.")
  reverse_out = False
  if op == "correlate":
    y = ufuncs.conj(y)
    if aval(x).shape[0] < aval(y).shape[0]:
      x, y, reverse_out = y, x, True
  else:
    if aval(x).shape[0] < aval(y).shape[0]:
      x, y = y, x
    y = lax.rev(y, (0,))
  m = aval(y).shape[0]
  pads = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}
  if mode not in pads:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  out = lax.dot_general(_sliding_windows(x, m, *pads[mode]), y, (((0,), (0,)), ((), ())),
                        precision=precision, preferred_element_type=preferred_element_type)
  return lax.rev(out, (0,)) if reverse_out else out


@partial(jit, static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
  """1-D convolution `c[k] = sum_j a[k - j] v[j]`; mode 'full' (default), 'same' (the
  length of the longer input, centred) or 'valid' (full overlap only)."""
  a, v = asarray_args("convolve", a, v)
  return _conv(a, v, mode=mode, op="convolve", precision=precision,
               preferred_element_type=preferred_element_type)


@partial(jit, static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
  """1-D cross-correlation `c[k] = sum_j a[k + j] conj(v[j])`; mode 'valid' (default),
  'same' or 'full'."""
  a, v = asarray_args("correlate", a, v)
  return _conv(a, v, mode=mode, op="correlate", precision=precision,
               preferred_element_type=preferred_element_type)


def _interp(x, xp, fp, left=None, right=None, period=None):
  x, xp, fp = asarray_args("interp", x, xp, fp)
  if aval(xp).shape != aval(fp).shape or aval(xp).ndim != 1:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  x_arr, xp_arr = util.promote_dtypes_inexact(x, xp)
  fp_arr, = util.promote_dtypes_inexact(fp)
  extrapolate = []
  for name, side in (("left", left), ("right", right)):
    if isinstance(side, str) and side != "extrapolate":
      raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but got: "
                       f"{side!r}")
    extrapolate.append(isinstance(side, str))
  if dtypes.is_complex(aval(x_arr).dtype):
    raise ValueError("jnp.interp: complex x values not supported.")
  if period is not None:
    if np.ndim(period) != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = ufuncs.abs(period)
    x_arr, xp_arr = x_arr % period, xp_arr % period
    xp_arr, fp_arr = lax.sort_key_val(xp_arr, fp_arr)
    xp_arr = shape_ops.concatenate([xp_arr[-1:] - period, xp_arr, xp_arr[:1] + period])
    fp_arr = shape_ops.concatenate([fp_arr[-1:], fp_arr, fp_arr[:1]])
  i = ufuncs.clip(sorting.searchsorted(xp_arr, x_arr, side="right"), 1, aval(xp_arr).shape[0] - 1)
  df = fp_arr[i] - fp_arr[i - 1]
  dx = xp_arr[i] - xp_arr[i - 1]
  delta = x_arr - xp_arr[i - 1]
  epsilon = np.spacing(dtypes.finfo(aval(xp_arr).dtype).eps)
  dx0 = lax.abs(dx) <= epsilon  # equal neighbours: take the left value (no 0/0)
  f = logic.where(dx0, fp_arr[i - 1], fp_arr[i - 1] + (delta / logic.where(dx0, 1, dx)) * df)
  if period is None:
    if not extrapolate[0]:
      f = logic.where(x_arr < xp_arr[0], fp_arr[0] if left is None else left, f)
    if not extrapolate[1]:
      f = logic.where(x_arr > xp_arr[-1], fp_arr[-1] if right is None else right, f)
  return f


def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of (xp, fp) at x; `left`/`right` (default fp[0],
  fp[-1], or 'extrapolate') outside, or `period` for periodic xp."""
  static = tuple(n for n, v in (("left", left), ("right", right), ("period", period))
                 if isinstance(v, str) or v is None)
  if static not in _INTERP_JITS:  # one jitted variant (and trace cache) per static set
    _INTERP_JITS[static] = jit(_interp, static_argnames=static)
  return _INTERP_JITS[static](x, xp, fp, left, right, period)


_INTERP_JITS: dict = {}


# --- statistics ---------------------------------------------------------------------------

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
  return shape_ops.squeeze(ufuncs.true_divide(linalg.dot(X, ufuncs.conj(X_T)), f))


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


# --- set operations -----------------------------------------------------------------------

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


# --- polynomials --------------------------------------------------------------------------

@jit
def poly(seq_of_zeros):
  """Coefficients (highest power first) of the monic polynomial with the given roots."""
  z, = util.promote_dtypes_inexact(asarray_arg("poly", seq_of_zeros))
  z = shape_ops.atleast_1d(z)
  sh = aval(z).shape
  if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
    raise ValueError("jnp.poly of a square matrix (its characteristic polynomial) needs "
                     "eigenvalues, which ember does not compute yet; pass the roots as a 1-D "
                     "array.")
  if aval(z).ndim != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  dt = aval(z).dtype
  if sh[0] == 0:
    return creation.ones((), dtype=dt)
  a = creation.ones((1,), dtype=dt)
  for k in _range(sh[0]):
    a = convolve(a, creation.array([1, -z[k]], dtype=dt), mode="full")
  return a


@partial(jit, static_argnames=("unroll",))
def polyval(p, x, *, unroll=None):
  """p[0] * x**(n-1) + ... + p[n-1] by Horner's rule (p: coefficients along axis 0,
  highest power first; leading dims broadcast against x)."""
  p, x = util.promote_dtypes(*asarray_args("polyval", p, x))
  shape = util.broadcast_shapes(aval(p).shape[1:], aval(x).shape)
  if aval(p).shape[0] == 0:
    return lax.full_like(x, 0, shape=shape, dtype=aval(x).dtype)
  y = None
  for i in _range(aval(p).shape[0]):
    c = lax.index_in_dim(p, i, 0, keepdims=False)
    y = c if y is None else y * x + c
  # JAX's polynomial primitive returns a strongly typed result even for weak inputs
  return shape_ops.broadcast_to(convert_element_type(y, aval(y).dtype, weak_type=False), shape)


@jit
def polyadd(a1, a2):
  """The sum of two polynomials (coefficients highest power first)."""
  a1, a2 = util.promote_dtypes(*asarray_args("polyadd", a1, a2))
  if aval(a2).shape[0] <= aval(a1).shape[0]:
    return a1.at[-aval(a2).shape[0]:].add(a2)
  return a2.at[-aval(a1).shape[0]:].add(a1)


@jit
def polysub(a1, a2):
  """The difference of two polynomials."""
  a1, a2 = util.promote_dtypes(*asarray_args("polysub", a1, a2))
  return polyadd(a1, -a2)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
  """The product of two polynomials (their full convolution)."""
  a1, a2 = util.promote_dtypes_inexact(*asarray_args("polymul", a1, a2))
  if trim_leading_zeros and (aval(a1).shape[0] > 1 or aval(a2).shape[0] > 1):
    a1, a2 = trim_zeros(a1, trim="f"), trim_zeros(a2, trim="f")
  if aval(a1).shape[0] == 0:
    a1 = creation.zeros(1, dtype=aval(a2).dtype)
  if aval(a2).shape[0] == 0:
    a2 = creation.zeros(1, dtype=aval(a1).dtype)
  return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros: bool = False):
  """Quotient and remainder of polynomial division u / v (remainder as long as u unless
  `trim_leading_zeros`, which needs concrete values)."""
  u, v = util.promote_dtypes_inexact(*asarray_args("polydiv", u, v))
  m, n = aval(u).shape[0] - 1, aval(v).shape[0] - 1
  scale = 1. / v[0]
  q = creation.zeros(_max(m - n + 1, 1), dtype=aval(u).dtype)
  for k in _range(0, m - n + 1):
    d = scale * u[k]
    q = q.at[k].set(d)
    u = u.at[k:k + n + 1].add(-d * v)
  if trim_leading_zeros:  # NumPy's tolerance, approximated by sqrt(eps) as in JAX
    val = _concrete_np(u, "polydiv()")
    nz = np.abs(val) < np.sqrt(dtypes.finfo(aval(u).dtype).eps)
    u = u[int(np.argmin(nz)):] if not nz.all() else creation.zeros(0, aval(u).dtype)
  return q, u


@partial(jit, static_argnames=("m",))
def polyder(p, m: int = 1):
  """The m-th derivative of a polynomial."""
  p = asarray_arg("polyder", p)
  m = _static_int(m, "the 'm' argument of jnp.polyder")
  p, = util.promote_dtypes_inexact(p)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  if m == 0:
    return p
  n = aval(p).shape[0]
  dt = aval(p).dtype
  coeff = (creation.arange(m, n, dtype=dt)[np.newaxis]
           - creation.arange(m, dtype=dt)[:, np.newaxis]).prod(0)
  return p[:-m] * coeff[::-1]


@partial(jit, static_argnames=("m",))
def polyint(p, m: int = 1, k=None):
  """The m-th antiderivative of a polynomial, with integration constants k (a scalar or
  one per integration, lowest order last)."""
  m = _static_int(m, "the 'm' argument of jnp.polyint")
  p, k = util.promote_dtypes_inexact(*asarray_args("polyint", p, 0 if k is None else k))
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  k = shape_ops.atleast_1d(k)
  if aval(k).shape[0] == 1:
    k = creation.full((m,), k[0])
  if aval(k).shape != (m,):
    raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0:
    return p
  dt = aval(p).dtype
  grid = (creation.arange(aval(p).shape[0] + m, dtype=dt)[np.newaxis]
          - creation.arange(m, dtype=dt)[:, np.newaxis])
  coeff = ufuncs.maximum(1, grid).prod(0)[::-1]
  return ufuncs.true_divide(shape_ops.concatenate((p, k)), coeff)


@partial(jit, static_argnames=("N", "increasing"))
def vander(x, N=None, increasing: bool = False):
  """Vandermonde matrix: columns x**(N-1), ..., x**0 (reversed when `increasing`)."""
  x = asarray_arg("vander", x)
  if aval(x).ndim != 1:
    raise ValueError("x must be a one-dimensional array")
  N = aval(x).shape[0] if N is None else _static_int(N, "the 'N' argument of jnp.vander()")
  if N < 0:
    raise ValueError("N must be nonnegative")
  powers = lax.iota(aval(x).dtype, N)
  if not increasing:
    powers = lax.sub(np.array(N - 1, aval(x).dtype), powers)
  return ufuncs.power(x[..., None], lax.expand_dims(powers, (0,)))


# --- bits, trimming, sorting, indices -----------------------------------------------------

def _check_bitorder(bitorder):
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")


@partial(jit, static_argnames=("axis", "bitorder"))
def packbits(a, axis=None, bitorder: str = "big"):
  """Pack the truth values of `a` into uint8 bytes along `axis` (flattened when None),
  zero-padding the last byte."""
  arr = asarray_arg("packbits", a)
  if not (dtypes.is_integer(aval(arr).dtype) or aval(arr).dtype == np.bool_):
    raise TypeError("Expected an input array of integer or boolean data type")
  _check_bitorder(bitorder)
  arr = lax.ne(arr, lax.full_like(arr, 0, shape=())).astype("uint8")
  bits = creation.arange(8, dtype="uint8")
  if bitorder == "big":
    bits = bits[::-1]
  if axis is None:
    arr, axis = shape_ops.ravel(arr), 0
  arr = shape_ops.swapaxes(arr, axis, -1)
  remainder = aval(arr).shape[-1] % 8
  if remainder:
    arr = lax.pad(arr, np.uint8(0), (aval(arr).ndim - 1) * [(0, 0, 0)] + [(0, 8 - remainder, 0)])
  arr = arr.reshape(aval(arr).shape[:-1] + (aval(arr).shape[-1] // 8, 8))
  bits = lax.expand_dims(bits, tuple(_range(aval(arr).ndim - 1)))
  packed = (arr << bits).sum(-1).astype("uint8")
  return shape_ops.swapaxes(packed, axis, -1)


@partial(jit, static_argnames=("axis", "count", "bitorder"))
def unpackbits(a, axis=None, count=None, bitorder: str = "big"):
  """Unpack uint8 bytes into bits (uint8 0/1) along `axis`; `count` keeps (or zero-pads
  to) that many bits."""
  arr = asarray_arg("unpackbits", a)
  if aval(arr).dtype != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  _check_bitorder(bitorder)
  bits = creation.asarray(1) << creation.arange(8, dtype="uint8")
  if bitorder == "big":
    bits = bits[::-1]
  if axis is None:
    arr, axis = shape_ops.ravel(arr), 0
  arr = shape_ops.swapaxes(arr, axis, -1)
  unpacked = ((arr[..., None] & lax.expand_dims(bits, tuple(_range(aval(arr).ndim)))) > 0
              ).astype("uint8")
  unpacked = unpacked.reshape(aval(unpacked).shape[:-2] + (-1,))
  if count is not None:
    n = aval(unpacked).shape[-1]
    if count > n:
      unpacked = shape_ops.pad(unpacked, [(0, 0)] * (aval(unpacked).ndim - 1) + [(0, count - n)])
    else:
      unpacked = unpacked[..., :count]
  return shape_ops.swapaxes(unpacked, axis, -1)


def trim_zeros(filt, trim: str = "fb", axis=None):
  """`filt` without its leading ('f') and/or trailing ('b') all-zero slices along each
  axis in `axis` (default all). Needs a concrete array: the result shape depends on it."""
  filt = asarray_arg("trim_zeros", filt)
  val = _concrete_np(filt, "the `filt` argument of trim_zeros()")
  with core.new_dynamic(None):  # concrete: slice eagerly, also inside a jit trace
    return _trim_zeros(filt, val, trim, axis)


def _trim_zeros(filt, val, trim, axis):
  nd = val.ndim
  if axis is None:
    axes = set(_range(nd))
  else:
    axes = {util.canonicalize_axis(i, nd, "trim_zeros")
            for i in (axis if isinstance(axis, (tuple, list)) else (axis,))}
  trim = trim.lower()
  if not axes or ("f" not in trim and "b" not in trim):
    return filt

  def axis_slice(ax):
    if ax not in axes:
      return slice(None)
    mask = val.any(axis=tuple(i for i in _range(nd) if i != ax))
    if not mask.any():
      return slice(0, 0)
    start = int(mask.argmax()) if "f" in trim else None
    stop = val.shape[ax] - int(mask[::-1].argmax()) if "b" in trim else None
    return slice(start, stop)
  return filt[tuple(axis_slice(ax) for ax in _range(nd))]


def _to_complex_dtype(dt):
  """JAX's to_complex_dtype: via the inexact dtype; 16-bit floats -> complex64."""
  dt = np.dtype(util.to_inexact_dtype(dt))
  if dt.kind == "c":
    return dt
  return np.dtype(np.complex128 if dt == np.float64 else np.complex64)


@jit
def sort_complex(a):
  """`a` sorted (real part first, then imaginary part) as a complex array."""
  a = lax.sort(asarray_arg("sort_complex", a))
  return convert_element_type(a, _to_complex_dtype(aval(a).dtype))


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


# --- window functions ---------------------------------------------------------------------

def _window(name, fn):
  """A window of M points in the default float dtype (ones for M <= 1)."""
  def window(M, *args):
    M = _static_int(M, f"the M argument of jnp.{name}")
    dtype = dtypes.default_float_dtype()
    if M <= 1:
      return lax.full((M,), 1, dtype)
    return fn(lax.iota(dtype, M), M, *args)
  window.__name__ = window.__qualname__ = name
  window.__doc__ = f"The {name.capitalize()} window of M points (NumPy's formula)."
  return window


bartlett = _window("bartlett", lambda n, M: 1 - ufuncs.abs(2 * n + 1 - M) / (M - 1))
blackman = _window("blackman", lambda n, M: 0.42 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1))
                   + 0.08 * ufuncs.cos(4 * np.pi * n / (M - 1)))
hamming = _window("hamming", lambda n, M: 0.54 - 0.46 * ufuncs.cos(2 * np.pi * n / (M - 1)))
hanning = _window("hanning", lambda n, M: 0.5 * (1 - ufuncs.cos(2 * np.pi * n / (M - 1))))


def _kaiser(n, M, beta):
  alpha = 0.5 * (M - 1)
  return ufuncs.i0(beta * ufuncs.sqrt(1 - ((n - alpha) / alpha) ** 2)) / ufuncs.i0(beta)


kaiser = _window("kaiser", _kaiser)
kaiser.__doc__ = "The Kaiser window of M points with shape parameter beta (NumPy's formula)."


# --- index tricks -------------------------------------------------------------------------

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

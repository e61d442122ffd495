"""ember.numpy's 1-D signal helpers: convolve and correlate, piecewise-linear interpolation
(interp) and the window functions (bartlett, blackman, hamming, hanning, kaiser).

Ported from jax/_src/numpy (lax_numpy.py, window_functions.py) so dtypes, weak types and
errors match JAX 0.12. Difference from JAX's lowering (values are the same): convolve and
correlate build the sliding windows with pad/reshape/slice and contract them with one
dot_general (ember has no conv_general_dilated).
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import logic, sorting, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.arguments import _static_int, asarray_args
from ember._src.library.numpy.reductions import aval

__all__ = ["convolve", "correlate", "interp", "bartlett", "blackman", "hamming", "hanning",
           "kaiser"]


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

"""ember.numpy's polynomials, coefficients highest power first: poly, polyval, polyadd,
polysub, polymul, polydiv, polyder, polyint, the Vandermonde matrix vander, and trim_zeros
(here because polymul and polydiv trim leading zero coefficients with it; JAX and NumPy
keep it with their general functions).

Ported from jax/_src/numpy (polynomial.py, lax_numpy.py) so dtypes, weak types and errors
match JAX 0.12. Difference from JAX's lowering (values are the same): polyval is Horner's
rule with mul/add (ember has no polynomial primitive). trim_zeros needs a concrete array:
the result shape depends on it.
"""
from __future__ import annotations

import builtins
from functools import partial

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.linalg_decompositions import eigvals
from ember._src.library.numpy.arguments import _concrete_np, _static_int, asarray_args
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.library.numpy.signal import convolve
from ember._src.primitives.elementwise import convert_element_type

__all__ = ["poly", "polyval", "polyadd", "polysub", "polymul", "polydiv", "polyder",
           "polyint", "vander", "trim_zeros"]

_max, _range = builtins.max, builtins.range


@jit
def poly(seq_of_zeros):
  """Coefficients (highest power first) of the monic polynomial with the given roots (or
  the characteristic polynomial of a square matrix)."""
  z, = util.promote_dtypes_inexact(asarray_arg("poly", seq_of_zeros))
  z = shape_ops.atleast_1d(z)
  sh = aval(z).shape
  if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
    z = eigvals(z)   # a square matrix: its characteristic polynomial (complex, as JAX)
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

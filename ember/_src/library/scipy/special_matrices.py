"""jax.scipy.linalg's special-matrix constructors: toeplitz, hankel, circulant, leslie,
companion, fiedler, fiedler_companion, convolution_matrix (built from their arrays, batched
over leading axes as JAX's are) and hilbert, invhilbert, pascal, invpascal, helmert,
hadamard, dft (built from a static size n; their values are computed once in NumPy float64
and rounded to JAX's result dtype, so they are exact where JAX's float32 recipes round).
"""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ember._src.base import dtypes
from ember._src.library.numpy import creation, logic, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.vectorize import vectorize

__all__ = ["toeplitz", "hankel", "circulant", "leslie", "companion", "fiedler",
           "fiedler_companion", "convolution_matrix", "hilbert", "invhilbert", "pascal",
           "invpascal", "helmert", "hadamard", "dft"]


def _vector(name, x):
  """x as an array of rank >= 1 (SciPy's constructors take a scalar as a length-1 vector)."""
  util.check_arraylike(name, x)
  return shape_ops.atleast_1d(creation.asarray(x))


def _take_matrix(v, index: np.ndarray):
  """The matrix v[..., index] for a static integer index matrix."""
  return v[..., creation.asarray(index)]


# --------------------------------------------------------------------------------------
# Constructors from arrays
# --------------------------------------------------------------------------------------

def toeplitz(c, r=None):
  """The Toeplitz matrix with first column c and first row r (r defaults to conj(c);
  r[0] is ignored). Leading axes of c and r are batch axes."""
  c = _vector("toeplitz", c)
  r = ufuncs.conjugate(c) if r is None else _vector("toeplitz", r)
  return _toeplitz(c, r)


@functools.partial(vectorize, signature="(m),(n)->(m,n)")
def _toeplitz(c, r):
  m, n = c.shape[0], r.shape[0]
  dt = dtypes.promote_types(c.dtype, r.dtype)
  if m == 0 or n == 0:
    return creation.empty((m, n), dt)
  elems = shape_ops.concatenate((c[::-1], r[1:])).astype(dt)
  return _take_matrix(elems, m - 1 - np.arange(m)[:, None] + np.arange(n)[None, :])


def hankel(c, r=None):
  """The Hankel matrix with first column c and last row r (zeros by default; r[0] is
  ignored)."""
  util.check_arraylike("hankel", c, *(() if r is None else (r,)))
  c = creation.asarray(c)
  r = creation.zeros_like(c) if r is None else creation.asarray(r)
  if c.ndim == 0 or r.ndim == 0:
    raise ValueError(f"hankel: {'c' if c.ndim == 0 else 'r'} must be at least "
                     "1-dimensional, got a scalar.")
  return _hankel(c, r)


@functools.partial(vectorize, signature="(m),(n)->(m,n)")
def _hankel(c, r):
  m, n = c.shape[0], r.shape[0]
  dt = dtypes.promote_types(c.dtype, r.dtype)
  if m == 0 or n == 0:
    return creation.empty((m, n), dt)
  v = shape_ops.concatenate((c, r[1:])).astype(dt)
  return _take_matrix(v, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c):
  """The circulant matrix whose first column is c."""
  return _circulant(_vector("circulant", c))


@functools.partial(vectorize, signature="(n)->(n,n)")
def _circulant(c):
  n = c.shape[0]
  return _take_matrix(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % n)


def leslie(f, s):
  """The Leslie matrix: fecundities f in the first row, survival rates s below the
  diagonal."""
  util.check_arraylike("leslie", f, s)
  f, s = shape_ops.atleast_1d(creation.asarray(f)), shape_ops.atleast_1d(creation.asarray(s))
  if f.shape[-1] < 2:
    raise ValueError(f"The length of f along the last axis must be at least 2; got shape "
                     f"{f.shape}.")
  if s.shape[-1] != f.shape[-1] - 1:
    raise ValueError("Incorrect lengths for f and s. The length of s along the last axis "
                     f"must be one less than the length of f; got f shape {f.shape} and s "
                     f"shape {s.shape}.")
  return _leslie(f, s)


@functools.partial(vectorize, signature="(n),(m)->(n,n)")
def _leslie(f, s):
  f, s = util.promote_dtypes(f, s)
  n = f.shape[0]
  i, j = np.arange(n)[:, None], np.arange(n)[None, :]
  s_j = _take_matrix(s, np.broadcast_to(np.minimum(j, n - 2), (n, n)))
  below = logic.where(creation.asarray(j == i - 1), s_j, 0)
  return logic.where(creation.asarray(i == 0), f[None, :], below).astype(f.dtype)


def companion(a):
  """The companion matrix of the polynomial with coefficients a (highest degree first)."""
  a, = util.promote_args_inexact("companion", a)
  a = shape_ops.atleast_1d(a)
  if a.shape[-1] < 2:
    raise ValueError(f"The length of `a` along the last axis must be at least 2; got shape "
                     f"{a.shape}.")
  return _companion(a)


@functools.partial(vectorize, signature="(n)->(m,m)")
def _companion(a):
  first_row = -a[1:] / a[0]
  m = a.shape[0] - 1
  sub = creation.asarray(np.eye(m, k=-1, dtype=first_row.dtype))
  return logic.where(creation.asarray(np.arange(m)[:, None] == 0), first_row[None, :], sub)


def fiedler(a):
  """The symmetric Fiedler matrix |a_i - a_j|."""
  a = _vector("fiedler", a)
  return ufuncs.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
  """Fiedler's pentadiagonal companion matrix of the polynomial with coefficients a."""
  a, = util.promote_args_inexact("fiedler_companion", a)
  a = shape_ops.atleast_1d(a)
  if a.shape[-1] == 0:
    raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero "
                     f"length, but got an array of shape {a.shape}.")
  return _fiedler_companion(a)


def _fiedler_layout(n: int):
  """(index into a, sign) per cell of Fiedler's companion matrix of order n (SciPy's
  layout); index -1: the cell is 1, index -2: 0."""
  idx = np.full((n, n), -2)
  idx[0, 0] = 1
  if n > 1:
    idx[1, 0] = -1
  for i in range(0, n, 2):
    if i + 1 < n:
      idx[i, i + 1] = i + 2
    if i + 2 < n:
      idx[i, i + 2] = -1
    if i >= 2:
      idx[i, i - 1] = i + 1
  for i in range(3, n, 2):
    idx[i, i - 2] = -1
  return idx


@functools.partial(vectorize, signature="(n)->(m,m)")
def _fiedler_companion(a):
  n = a.shape[0] - 1
  if n == 0:
    return creation.empty((0, 0), a.dtype)
  a = a / a[0]
  idx = _fiedler_layout(n)
  vals = -_take_matrix(a, np.maximum(idx, 0))
  out = logic.where(creation.asarray(idx == -1), 1, vals)
  return logic.where(creation.asarray(idx == -2), 0, out).astype(a.dtype)


def convolution_matrix(a, n, mode="full"):
  """The matrix A with A @ v == convolve(a, v, mode) for every v of length n."""
  n = operator.index(n)
  if n <= 0:
    raise ValueError(f"n must be a positive integer; got {n}.")
  util.check_arraylike("convolution_matrix", a)
  a = creation.asarray(a)
  if a.ndim == 0:
    raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
  m = a.shape[-1]
  if m < 1:
    raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
  if mode not in ("full", "valid", "same"):
    raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
  pad = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
  az = shape_ops.pad(a, pad)
  raz = shape_ops.pad(shape_ops.flip(a, axis=-1), pad)
  length = m + n - 1
  trim = min(n, m) - 1
  tb, te = {"full": (0, 0), "valid": (trim, trim),
            "same": (trim // 2, trim - trim // 2)}[mode]
  return toeplitz(az[..., tb:length - te], raz[..., length - n - tb:length - tb])


# --------------------------------------------------------------------------------------
# Constructors from a size
# --------------------------------------------------------------------------------------

def _static_size(name, n) -> int:
  try:
    return operator.index(n)
  except TypeError:
    raise TypeError(f"{name}: n must be a static Python integer, got {type(n).__name__}; "
                    "mark it static (jit's static_argnums).") from None


def _binomial(n, k):
  return np.vectorize(lambda a, b: math.comb(int(a), int(b)) if 0 <= b <= a else 0,
                      otypes=[object])(n, k)


def hilbert(n):
  """The Hilbert matrix 1 / (i + j + 1) of order n."""
  n = _static_size("hilbert", n)
  i = np.arange(n, dtype=np.float64)
  return creation.asarray((1 / (i[:, None] + i[None, :] + 1)).astype(
      dtypes.default_float_dtype()))


def invhilbert(n):
  """The inverse of the Hilbert matrix of order n (integer entries, computed exactly)."""
  n = _static_size("invhilbert", n)
  i, j = np.arange(n)[:, None], np.arange(n)[None, :]
  s = i + j
  exact = ((-1) ** s * (s + 1) * _binomial(n + i, n - j - 1) * _binomial(n + j, n - i - 1)
           * _binomial(s, i) ** 2)
  return creation.asarray(exact.astype(np.float64).astype(dtypes.default_float_dtype()))


def _pascal_lower(n: int, inverse: bool):
  i, j = np.arange(n)[:, None], np.arange(n)[None, :]
  low = _binomial(i, j)
  return low * np.where((i - j) % 2, -1, 1) if inverse else low


def _pascal_kind(kind, name):
  kind = "symmetric" if kind is None else kind
  valid = ["symmetric", "lower", "upper"]
  if kind not in valid:
    raise ValueError(f"{name}: expected kind to be one of {valid}; got {kind!r}")
  return kind


def _pascal(n, kind, inverse):
  low = _pascal_lower(n, inverse)
  return {"lower": low, "upper": low.T,
          "symmetric": low.T @ low if inverse else low @ low.T}[kind].astype(np.float64)


def pascal(n, kind=None):
  """The Pascal matrix of order n: 'symmetric' (default), 'lower' or 'upper' (float32,
  as JAX's)."""
  kind = _pascal_kind(kind, "pascal")
  return creation.asarray(_pascal(_static_size("pascal", n), kind, False).astype(np.float32))


def invpascal(n, kind=None):
  """The inverse of the Pascal matrix of order n."""
  kind = _pascal_kind(kind, "invpascal")
  exact = _pascal(_static_size("invpascal", n), kind, True)
  return creation.asarray(exact.astype(dtypes.default_float_dtype()))


def helmert(n, full=False):
  """The Helmert matrix of order n: (n-1) x n, or n x n with the constant first row
  (`full=True`)."""
  n = _static_size("helmert", n)
  if n < 1:
    raise ValueError(f"n must be a positive integer; got {n}.")
  k = np.arange(1, n, dtype=np.float64)[:, None]
  j = np.arange(n)[None, :]
  denom = np.sqrt(k * (k + 1))
  h = np.where(j < k, 1 / denom, np.where(j == k, -k / denom, 0.0))
  if full:
    h = np.concatenate([np.full((1, n), 1 / np.sqrt(n)), h])
  return creation.asarray(h.astype(dtypes.default_float_dtype()))


def hadamard(n, dtype=int):
  """The Sylvester-Hadamard matrix of order n (a power of 2)."""
  n = _static_size("hadamard", n)
  if n < 1 or n & (n - 1):
    raise ValueError(f"n must be a positive power of 2; got {n}.")
  dt = dtypes.canonicalize_dtype(dtypes.check_user_dtype(dtype, "hadamard"))
  h = np.ones((1, 1))
  while h.shape[0] < n:
    h = np.block([[h, h], [h, -h]])
  return creation.asarray(h.astype(dt))


def dft(n, scale=None, *, dtype=None):
  """The n x n discrete Fourier transform matrix exp(-2 pi i j k / n), scaled by
  1/sqrt(n) ('sqrtn') or 1/n ('n')."""
  n = _static_size("dft", n)
  if scale is not None and scale not in ("sqrtn", "n"):
    raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
  if dtype is None:
    dt = dtypes.default_dtype_for("c")
  else:
    dt = dtypes.canonicalize_dtype(dtypes.check_user_dtype(dtype, "dft"))
    if dt.kind != "c":
      raise ValueError(f"dtype must be a complex floating-point type; got {dt}.")
  a = np.arange(n)
  w = np.exp(-2j * np.pi * ((a[:, None] * a[None, :]) % max(n, 1)) / max(n, 1))
  w = w / {None: 1, "sqrtn": np.sqrt(n), "n": n}[scale] if n else w
  return creation.asarray(w.astype(dt))

"""ember.numpy.linalg's functions built on a factorization (jax/_src/numpy/linalg.py):
through LU, slogdet, det, solve and inv; through the SVD, pinv, lstsq, matrix_rank and
cond; and matrix_power, by repeated squaring (the inverse's for negative powers).
"""
from __future__ import annotations

import math
import operator
from functools import partial

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import creation, indexing, logic, reductions, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.einsum import einsum
from ember._src.library.numpy.linalg_decompositions import (
    SlogdetResult, _H, _inexact_arg, _square_arg, matrix_transpose, svd, svdvals)
from ember._src.library.numpy.linalg_norms import norm, vector_norm
from ember._src.library.numpy.products import matmul
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.primitives import decompositions


def _lu_factor(a):
  return decompositions.lu(a)


@jit
def slogdet(a, *, method=None):
  """SlogdetResult(sign, log|det|) through an LU factorization."""
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method '{method}'. ember supports 'lu'.")
  a = _square_arg("slogdet", a, "slogdet()")
  n = aval(a).shape[-1]
  lu_, pivot, _ = _lu_factor(a)
  diag = reductions.diagonal(lu_, axis1=-2, axis2=-1)
  is_zero = reductions.any(diag == 0, axis=-1)
  parity = reductions.count_nonzero(pivot != creation.arange(n, dtype=pivot.dtype), axis=-1)
  if dtypes.is_complex(aval(a).dtype):
    unit = diag / lax.convert_element_type(ufuncs.abs(diag), aval(diag).dtype)
    sign = reductions.prod(unit, axis=-1)
  else:
    sign = creation.array(1, aval(a).dtype)
    parity = parity + reductions.count_nonzero(diag < 0, axis=-1)
  sign = logic.where(is_zero, creation.array(0, aval(a).dtype),
                     sign * creation.array(-2 * (parity % 2) + 1, aval(a).dtype))
  logdet = logic.where(is_zero, creation.array(-np.inf, ufuncs.real(diag).dtype),
                       reductions.sum(ufuncs.log(ufuncs.abs(diag)), axis=-1))
  return SlogdetResult(sign, ufuncs.real(logdet))


@jit
def det(a):
  """The determinant: sign * exp(log|det|) of an LU factorization (0 when singular)."""
  a = _square_arg("det", a, "_det()")
  n = aval(a).shape[-1]
  lu_, pivot, _ = _lu_factor(a)
  diag = reductions.diagonal(lu_, axis1=-2, axis2=-1)
  parity = reductions.count_nonzero(pivot != creation.arange(n, dtype=pivot.dtype), axis=-1)
  sign = creation.array(-2 * (parity % 2) + 1, aval(a).dtype)
  return sign * reductions.prod(diag, axis=-1)


def _lu_solve(lu_, perm, b):
  """x with a x = b for b [..., n, k], from a's LU factors (batch dims equal)."""
  x = indexing.take_along_axis(b, perm[..., :, None], axis=-2)
  x = decompositions.triangular_solve(lu_, x, left_side=True, lower=True, unit_diagonal=True)
  return decompositions.triangular_solve(lu_, x, left_side=True, lower=False)


@jit
def solve(a, b):
  """x with a @ x = b: b of shape [..., n] (one vector) when 1-D, else [..., n, k] with
  batch dims broadcast against a's."""
  a = _square_arg("solve", a, "solve")
  b = asarray_arg("jnp.linalg.solve", b)
  a, b = util.promote_dtypes_inexact(a, b)
  ash, bsh = aval(a).shape, aval(b).shape
  n = ash[-1]
  if len(bsh) == 1:
    if bsh[0] != n:
      raise ValueError(f"solve: inconsistent size for core dimension 'm': {bsh[0]} vs {n} "
                       f"on signature '(m,m),(m)->(m)'")
    batch = ash[:-2]
    b2 = shape_ops.broadcast_to(b[:, None], batch + (n, 1))
    lu_, _, perm = _lu_factor(a)
    return _lu_solve(lu_, perm, b2)[..., 0]
  if bsh[-2] != n:
    raise ValueError(f"Invalid shapes for solve: {ash}, {bsh}. b must have shape [..., n] "
                     f"or [..., n, k] for a of shape [..., n, n]; to solve for a batch of "
                     f"vectors use solve(a, b[..., None])[..., 0].")
  batch = util.broadcast_shapes(ash[:-2], bsh[:-2])
  a = shape_ops.broadcast_to(a, batch + ash[-2:])
  b = shape_ops.broadcast_to(b, batch + bsh[-2:])
  lu_, _, perm = _lu_factor(a)
  return _lu_solve(lu_, perm, b)


@jit
def inv(a):
  """The inverse of square matrices (solve against the identity)."""
  a = _square_arg("inv", a, "inv")
  shape = aval(a).shape
  eye = shape_ops.broadcast_to(creation.eye(shape[-1], dtype=aval(a).dtype), shape)
  return solve(a, eye)


@partial(jit, static_argnames=("hermitian",))
def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """The Moore-Penrose pseudo-inverse through the SVD; singular values at or below
  rtol * max(s) (default 10 * max(m, n) * eps) are treated as zero."""
  a = _inexact_arg("pinv", a)
  if rcond is not None:
    rtol = rcond
  m, n = aval(a).shape[-2:]
  dt = aval(a).dtype
  if rtol is None:
    rtol = 10. * max(m, n) * float(np.finfo(np.empty(0, dt).real.dtype).eps)
  rtol = creation.asarray(rtol)
  if m == 0 or n == 0:
    return creation.zeros(aval(a).shape[:-2] + (n, m), dt)
  u, s, vh = svd(ufuncs.conj(a), full_matrices=False, hermitian=hermitian)
  cutoff = rtol[..., None] * reductions.max(s, axis=-1, keepdims=True, initial=-np.inf)
  s = logic.where(s > cutoff, s, np.inf).astype(u.dtype)
  return matmul(matrix_transpose(vh), matrix_transpose(u) / s[..., :, None])


@partial(jit, static_argnames=("numpy_resid",))
def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """(x, residuals, rank, s): the least-squares solution of a @ x = b through the SVD."""
  a = asarray_arg("jnp.linalg.lstsq", a)
  b = asarray_arg("jnp.linalg.lstsq", b)
  a, b = util.promote_dtypes_inexact(a, b)
  ash, bsh = aval(a).shape, aval(b).shape
  if len(ash) != 2:
    raise TypeError(f"{len(ash)}-dimensional array given. Array must be two-dimensional")
  b_orig_ndim = len(bsh)
  if b_orig_ndim == 1:
    b = b[:, None]
  if len(aval(b).shape) != 2:
    raise TypeError(f"{len(bsh)}-dimensional array given. Array must be one or "
                    "two-dimensional")
  m, n = ash
  if m != aval(b).shape[0]:
    raise ValueError("Leading dimensions of input arrays must match")
  dt = aval(a).dtype
  eps = float(np.finfo(np.empty(0, dt).real.dtype).eps)
  if rcond is None:
    rcond = eps * max(n, m)
  else:
    rcond = logic.where(rcond < 0, eps, rcond)
  u, s, vt = svd(a, full_matrices=False)
  mask = s >= creation.array(rcond, dtype=s.dtype) * s[0]
  rank = mask.sum()
  safe_s = logic.where(mask, s, 1).astype(dt)
  s_inv = logic.where(mask, 1 / safe_s, 0)[:, None]
  uTb = matmul(_H(u), b)
  x = matmul(_H(vt), s_inv * uTb)
  if numpy_resid and (rank < n or m <= n):
    resid = creation.asarray([])
  else:
    b_estimate = matmul(a, x)
    resid = vector_norm(b - b_estimate, axis=0) ** 2
  if b_orig_ndim == 1:
    x = x.ravel()
  return x, resid, rank, s


def matrix_power(a, n):
  """a @ a @ ... @ a (n times; the inverse's powers for n < 0; the identity for 0) by
  repeated squaring."""
  a = asarray_arg("jnp.linalg.matrix_power", a)
  shape = aval(a).shape
  if len(shape) < 2:
    raise TypeError(f"{len(shape)}-dimensional array given. Array must be at least "
                    "two-dimensional")
  if shape[-2] != shape[-1]:
    raise TypeError("Last 2 dimensions of the array must be square")
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  if n == 0:
    return shape_ops.broadcast_to(creation.eye(shape[-1], dtype=aval(a).dtype), shape)
  if n < 0:
    a, n = inv(a), -n
  result = None
  while n > 0:
    if n & 1:
      result = a if result is None else matmul(result, a)
    n >>= 1
    if n:
      a = matmul(a, a)
  return result


@jit
def matrix_rank(M, rtol=None, *, tol=None):
  """The number of singular values above rtol * max(s) (default max(m, n) * eps); a 1-D
  input has rank 1 unless it is all zeros."""
  M = _inexact_arg("matrix_rank", M)
  if tol is not None:
    rtol = tol
  shape = aval(M).shape
  if len(shape) < 2:
    return reductions.any(M != 0).astype(np.int32)
  s = svd(M, full_matrices=False, compute_uv=False)
  if rtol is None:
    rtol = reductions.max(s, axis=-1, keepdims=True) * (
        max(shape[-2:]) * float(np.finfo(aval(s).dtype).eps))
  else:
    rtol = shape_ops.expand_dims(creation.asarray(rtol), -1)
  return reductions.sum(s > rtol, axis=-1, dtype=np.int32)


def cond(x, p=None):
  """The condition number in norm `p` (None/2/-2: ratio of singular values)."""
  x = _inexact_arg("cond", x)
  shape = aval(x).shape
  if len(shape) < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got "
                     f"arr.shape={shape}")
  if p is None or p == 2:
    s = svdvals(x)
    return s[..., 0] / s[..., -1]
  if p == -2:
    s = svdvals(x)
    r = s[..., -1] / s[..., 0]
  else:
    if shape[-2] != shape[-1]:
      raise ValueError(f"jnp.linalg.cond: for p={p!r}, array must be square; got "
                       f"x.shape={shape}")
    r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
  # NaNs from singular matrices become inf, as NumPy and JAX do
  return logic.where(ufuncs.isnan(r) & ~ufuncs.isnan(x).any(axis=(-2, -1)), np.inf, r)


def tensorinv(a, ind=2):
  """The tensor inverse: b with tensordot(b, a, ind) the identity over a's first `ind`
  axes (inv of a reshaped to a square matrix)."""
  util.check_arraylike("tensorinv", a)
  a = creation.asarray(a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer; got ind={ind}")
  head, tail = a.shape[:ind], a.shape[ind:]
  rows, cols = math.prod(head), math.prod(tail)
  if rows != cols:
    raise ValueError("tensorinv is only possible when the product of the first `ind` "
                     f"dimensions equals that of the remaining dimensions. got "
                     f"a.shape={a.shape} with ind={ind}.")
  return inv(a.reshape(rows, cols)).reshape(*tail, *head)


def tensorsolve(a, b, axes=None):
  """x with tensordot(a, x, x.ndim) == b; `axes`: axes of a moved to the end first."""
  util.check_arraylike("tensorsolve", a, b)
  a, b = creation.asarray(a), creation.asarray(b)
  if axes is not None:
    a = shape_ops.moveaxis(a, axes, len(axes) * (a.ndim - 1,))
  out_shape = a.shape[b.ndim:]
  if a.shape[:b.ndim] != b.shape:
    raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                     f"got a.shape={a.shape}, b.shape={b.shape}")
  if b.size != math.prod(out_shape):
    raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == "
                     f"prod(a.shape[b.ndim:]); got a.shape={a.shape}, b.ndim={b.ndim}.")
  return solve(a.reshape(b.size, math.prod(out_shape)), b.ravel()).reshape(out_shape)


def multi_dot(arrays, *, precision=None):
  """The product of a chain of matrices (the first and last may be vectors), contracted in
  an order that keeps the intermediates small (einsum's)."""
  arrs = list(arrays)
  util.check_arraylike("jnp.linalg.multi_dot", *arrs)
  arrs = [creation.asarray(x) for x in arrs]
  if len(arrs) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
  shapes = [x.shape for x in arrs]
  if not (arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2)
          and all(x.ndim == 2 for x in arrs[1:-1])):
    raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                     "first and last array which may be 1 or 2 dimensional. Got array "
                     f"shapes {shapes}")
  if any(x.shape[-1] != y.shape[0] for x, y in zip(arrs[:-1], arrs[1:])):
    raise ValueError("multi_dot: last dimension of each array must match first dimension of "
                     f"following array. Got array shapes {shapes}")
  axes = [(i, i + 1) for i in range(len(arrs))]
  if arrs[0].ndim == 1:
    axes[0] = axes[0][1:]
  if arrs[-1].ndim == 1:
    axes[-1] = axes[-1][:1]
  interleaved = [item for pair in zip(arrs, axes) for item in pair]
  return einsum(*interleaved, optimize="auto", precision=precision)

"""The samplers of `ember.random` built on linear algebra: multivariate_normal (a Cholesky,
eigen or singular value factor of cov times normal draws) and orthogonal (the Q of a
normal matrix's QR). In float32, for small matrices, the factorizations and the product
replay the roundings of JAX's CPU LAPACK and dot kernels op for op (`_mvn_cholesky32`,
`_mvn_matvec32`, `_orth_qr32`); otherwise they use ember's jnp.linalg.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src.primitives import eager_jit
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.lax.expansions import two_sum
from ember._src.library.lax.linalg import symmetrize
from ember._src.library.numpy import (
    creation, einsum, linalg_decompositions, linalg_norms, logic, ufuncs)
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.util import broadcast_shapes, promote_dtypes_inexact
from ember._src.primitives.elementwise import fma
from ember._src.library.random.samplers import _check_shape, _concrete_int, _sample_dtype, normal
from ember._src.library.random.util import _canon_shape, _dtype, _key, _shape
from ember._src.library.random.xla_math.common import _cst as _c   # a constant of x's dtype


# JAX 0.12 on CPU takes multivariate_normal's Cholesky factor from LAPACK's spotrf in the
# OpenBLAS that scipy ships (jaxlib reads its kernels from scipy.linalg.cython_lapack:
# OpenBLAS 0.3.31, SkylakeX/Haswell kernels), NumPy (ember's LAPACK) from a newer OpenBLAS
# whose kernels round differently. For n <= 32 that spotrf is OpenBLAS's unblocked potf2_L:
# per column j, ajj = a[j, j] - sdot(L[j, :j], L[j, :j]) (pairs fused: fma(l0, l0, l1 * l1),
# summed in double), L[j, j] = sqrt(ajj), then sgemv y = a[j+1:, j] - L[j+1:, :j] @ L[j, :j]
# (SkylakeX kernel: one fma chain over k, then y - acc; with exactly 4 columns the Haswell
# 4x4 kernel: (fma(a2, x2, a0 x0) + fma(a3, x3, a1 x1)) for the leading 4- and 8-row blocks)
# and sscal by 1 / ajj. `_mvn_cholesky32` replays those roundings op for op (checked bit for
# bit against JAX for n = 1..32, thousands of random SPD matrices); larger n (OpenBLAS's
# blocked recursion) and float64 (other kernels) use ember's LAPACK, equal to a few ulps.
_MVN_POTF2_MAX_N = 32


def _mvn_sum32(terms):
  """RN32 of the exact sum of float32 terms (sdot's double accumulator, rounded once):
  TwoSum accumulation, exact but for sums within ~2^-21 ulp of a rounding boundary."""
  s, e = terms[0], None
  for t in terms[1:]:
    s, err = two_sum(lax, s, t)
    e = err if e is None else lax.add(e, err)
  return s if e is None else lax.add(s, e)


def _mvn_cholesky32(a):
  """jnp.linalg.cholesky(a) (lower) of a float32 (..., n, n) stack, n <= 32, bit for bit
  as JAX's CPU LAPACK call computes it (see above); non-positive-definite stacks: all nan."""
  a = symmetrize(a)   # JAX's symmetrize_input=True
  n = _shape(a)[-1]
  rows = np.arange(n)
  cols, bad = [], None
  for j in range(n):
    x = [cols[k][..., j] for k in range(j)]   # row j of L
    terms = [fma(x[i], x[i], lax.mul(x[i + 1], x[i + 1])) for i in range(0, j - 1, 2)]
    terms += [lax.mul(x[j - 1], x[j - 1])] if j % 2 else []
    ajj = a[..., j, j] if j == 0 else lax.sub(a[..., j, j], _mvn_sum32(terms))
    bad = lax.le(ajj, _c(ajj, 0)) if bad is None else lax.bitwise_or(bad, lax.le(ajj, _c(ajj, 0)))
    d = lax.sqrt(ajj)
    y = a[..., :, j]
    if j:
      xs = [shape_ops.expand_dims(v, -1) for v in x]
      acc = lax.mul(cols[0], shape_ops.broadcast_to(xs[0], _shape(y)))
      for k in range(1, j):
        acc = fma(cols[k], shape_ops.broadcast_to(xs[k], _shape(y)), acc)
      y_new = lax.sub(y, acc)
      if j == 4:   # Haswell 4x4 kernel on the leading (m & 12) of m - m % 4 rows
        m = n - j - 1
        lead = (m - m % 4) & 12
        b = lambda v: shape_ops.broadcast_to(v, _shape(y))
        p = lax.add(fma(cols[2], b(xs[2]), lax.mul(cols[0], b(xs[0]))),
                    fma(cols[3], b(xs[3]), lax.mul(cols[1], b(xs[1]))))
        y_new = logic.where((rows > j) & (rows <= j + lead), lax.sub(y, p), y_new)
      y = y_new
    recip = lax.div(_c(d, 1), d)
    col = logic.where(rows > j, lax.mul(y, shape_ops.expand_dims(recip, -1)),
                      logic.where(rows == j, shape_ops.expand_dims(d, -1), _c(d, 0)))
    cols.append(col)
  L = shape_ops.stack(cols, axis=-1)
  lower = rows[:, None] >= rows[None, :]   # JAX's failed factor: nan below the diagonal
  return logic.where(shape_ops.expand_dims(bad, (-1, -2)) & lower, _c(L, np.nan), L)


# The product factor @ z: JAX's einsum is one dot_general (batch dimensions: the broadcast
# dimensions of cov's stack; m: the rows of z per stack entry), which XLA:CPU computes
# (a) through YNNPACK when n >= 2 and m >= 8 (m >= 2 for n >= 8): two fma chains (even /
# odd j) over the even part of j, added, plus the last product (rounded) when n is odd; for
# n == 9 and n > 32 one fma chain; (b) otherwise with its own loop: n < 8, one fma chain;
# n >= 8, eight fma chains (lane s: j = s mod 8, over the multiple-of-8 part), summed
# pairwise ((l0 + l1) + (l2 + l3)) + ... for output rows in full groups of 8 and by halves
# ((l0 + l4) + (l2 + l6)) + ... for the last n % 8 rows, plus an fma chain over the rest.
# Checked bit for bit against JAX for n = 1..48, 1 to 1000 rows, with and without stacks.
def _mvn_matvec32(factor, z):
  """einsum('...ij,...j->...i', factor, z) rounded as XLA:CPU rounds it (float32)."""
  n = _shape(z)[-1]
  zb, fb = _shape(z)[:-1], _shape(factor)[:-2]
  out = broadcast_shapes(zb, fb) + (n,)
  r = len(out) - 1
  zb, fb = (1,) * (r - len(zb)) + zb, (1,) * (r - len(fb)) + fb
  m = math.prod(a for a, b in zip(zb, fb) if b == 1)   # z's rows per stack entry
  t = [(shape_ops.broadcast_to(factor[..., :, j], out),
        shape_ops.broadcast_to(z[..., j:j + 1], out)) for j in range(n)]

  def chain(ts):
    acc = lax.mul(*ts[0])
    for f, v in ts[1:]:
      acc = fma(f, v, acc)
    return acc

  if n >= 2 and m >= (8 if n < 8 else 2):   # YNNPACK
    if n == 9 or n > 32:
      return chain(t)
    even = n - n % 2
    acc = lax.add(chain(t[0:even:2]), chain(t[1:even:2])) if even else None
    return lax.add(acc, lax.mul(*t[-1])) if n % 2 else acc
  if n < 8:
    return chain(t)
  body = n - n % 8
  lanes = [chain(t[s:body:8]) for s in range(8)]
  pair, half = list(lanes), list(lanes)
  while len(pair) > 1:
    pair = [lax.add(pair[i], pair[i + 1]) for i in range(0, len(pair), 2)]
    half = [lax.add(half[i], half[i + len(half) // 2]) for i in range(len(half) // 2)]
  acc = logic.where(np.arange(n) < n - n % 8, pair[0], half[0])
  return lax.add(chain(t[body:]), acc) if body < n else acc


@eager_jit.compiled(("shape", "dtype", "method"))
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky",
                        *, out_sharding=None):
  """N(mean, cov) samples: mean + factor @ z with cov = factor factor^T from a Cholesky
  ('cholesky'), eigen ('eigh') or singular value ('svd') decomposition."""
  data = _key("multivariate_normal", key)
  mean, cov = promote_dtypes_inexact(mean, cov)
  if method not in ("svd", "eigh", "cholesky"):
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  dt = _dtype(mean) if dtype is None else _sample_dtype("multivariate_normal", dtype)
  if not dtypes.is_float(dt):
    raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got {dt}")
  shape = _canon_shape("multivariate_normal", shape)
  if not np.ndim(mean) >= 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{np.ndim(mean)}")
  if not np.ndim(cov) >= 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{np.ndim(cov)}")
  n = _shape(mean)[-1]
  if _shape(cov)[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                     f"but got cov.shape == {_shape(cov)}.")
  if shape is None:
    shape = broadcast_shapes(_shape(mean)[:-1], _shape(cov)[:-2])
  else:
    _check_shape("normal", shape, _shape(mean)[:-1], _shape(cov)[:-2])
  if method == "svd":
    u, s, _ = linalg_decompositions.svd(cov)
    factor = u * ufuncs.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = linalg_decompositions.eigh(cov)
    factor = v * ufuncs.sqrt(w[..., None, :])
  elif _dtype(cov) == np.float32 and 0 < n <= _MVN_POTF2_MAX_N:
    factor = _mvn_cholesky32(cov)
  else:
    factor = linalg_decompositions.cholesky(cov)
  normal_samples = normal(data, shape + _shape(mean)[-1:], dt)
  if n and _dtype(factor) == np.float32 and _dtype(normal_samples) == np.float32:
    return mean + _mvn_matvec32(factor, normal_samples)
  return mean + einsum.einsum("...ij,...j->...i", factor, normal_samples)


# JAX 0.12's CPU QR is LAPACK's sgeqrf + sorgqr from scipy's OpenBLAS (0.3.31, SkylakeX
# kernels); NumPy's (ember's LAPACK) is another OpenBLAS build that rounds differently. For
# matrices of at most 8 rows those are the unblocked sgeqr2 / sorg2r of the reference LAPACK:
# per column a Householder reflector (slarfg: snrm2 summing squares in double, slapy2,
# tau = (beta - alpha) / beta, x * (1 / (alpha - beta))) applied by slarf as
# w = C^T v (sgemv_t) and C += (-tau w_j) v (sger: one fma per element). `_orth_gemv_t`
# replays sgemv_t's kernels for these sizes (the AVX-512 kernel of each height m <= 8 for a
# full-height C, else the generic one: a 4-row block, then 1..3 leftover rows in contracted
# C; summation trees read from OpenBLAS's kernels, or found by search over all trees). Checked
# bit for bit against JAX's jnp.linalg.qr for every (m, n), n <= m <= 8. snrm2 is exact but
# when the sum of squares lies within ~2^-24 ulp of a rounding boundary of its square root.
# Scalar (per element) code on purpose: a matrix form rebuilt by slices and concatenations
# each step makes ember's compiler duplicate work through the fused chains.
_ORTH_MAX_ROWS = 8


def _orth_nrm2(xs):
  """snrm2: RN32(sqrt(sum of x^2)), the squares summed exactly (fma-split products, TwoSum)
  and the square root corrected by the residual (what double precision gives OpenBLAS)."""
  hi = lo = None
  for x in xs:
    p = lax.mul(x, x)
    e = fma(x, x, lax.neg(p))
    if hi is None:
      hi, lo = p, e
    else:
      hi, err = two_sum(lax, hi, p)
      lo = lax.add(lo, lax.add(err, e))
  hi, lo = two_sum(lax, hi, lo)
  r = lax.sqrt(hi)
  t = lax.add(fma(lax.neg(r), r, hi), lo)   # S - r^2
  safe = logic.where(lax.gt(r, _c(r, 0)), r, _c(r, 1))
  return logic.where(lax.gt(r, _c(r, 0)), lax.add(r, lax.div(t, lax.add(safe, safe))), r)


def _orth_larfg(alpha, xs):
  """slarfg: (beta, v's tail, tau) of the reflector taking [alpha, xs] to [beta, 0...]."""
  if not xs:
    return alpha, xs, creation.zeros_like(alpha)
  xn = _orth_nrm2(xs)
  a = lax.abs(alpha)
  w, z = lax.max(a, xn), lax.min(a, xn)
  q = lax.div(z, w)
  lapy2 = lax.mul(w, lax.sqrt(lax.add(_c(q, 1), lax.mul(q, q))))
  beta = lax.neg(ufuncs.copysign(lapy2, alpha))
  tau = lax.div(lax.sub(beta, alpha), beta)
  scale = lax.div(_c(beta, 1), lax.sub(alpha, beta))
  zero = lax.eq(xn, _c(xn, 0))
  return (logic.where(zero, alpha, beta), [logic.where(zero, x, lax.mul(x, scale)) for x in xs],
          logic.where(zero, creation.zeros_like(tau), tau))


def _orth_gemv_t(cols, v, full_height):
  """OpenBLAS sgemv_t (alpha 1, beta 0): [sum_i c[i] v[i] for c in cols], each rounded as
  its kernel rounds (m = len(v) <= 8 rows, at most 7 columns)."""
  m, n = len(v), len(cols)
  add, mul = lax.add, lax.mul
  e2 = lambda c, i, j: fma(c[i], v[i], mul(c[j], v[j]))   # GCC's contraction of a*x + b*y
  out = []
  for j, c in enumerate(cols):
    p = [mul(ci, vi) for ci, vi in zip(c, v)]
    if full_height and m == 1:
      y = p[0]
    elif full_height and m == 2:
      y = add(p[0], p[1])
    elif full_height and m == 3:
      if j < n & ~7:
        y = fma(c[2], v[2], fma(c[1], v[1], p[0]))
      elif j < n & ~3:
        y = fma(c[2], v[2], fma(c[0], v[0], p[1]))
      elif j < n & ~1:
        y = add(add(p[0], p[1]), p[2])
      else:
        y = fma(c[2], v[2], e2(c, 0, 1))
    elif full_height and m == 4:
      y = (add(add(p[0], p[1]), add(p[2], p[3])) if j < n & ~1
           else add(add(add(p[0], p[1]), p[2]), p[3]))
    elif full_height and m == 5 and j < n & ~3:
      y = p[0]
      for i in range(1, 5):
        y = fma(c[i], v[i], y)
    elif full_height and m == 6 and j < n & ~3:
      y = add(add(p[0], add(p[1], p[2])), add(p[3], add(p[4], p[5])))
    elif full_height and m == 7 and j < n & ~3:
      y = add(add(add(p[0], p[1]), add(p[4], p[5])), add(add(p[2], p[3]), p[6]))
    elif full_height and m == 8:
      q = lambda i, k: add(p[i], p[k])
      if j < n & ~3:
        y = add(add(q(0, 1), q(2, 3)), add(q(4, 5), q(6, 7)))
      elif j < n & ~1:
        y = add(add(q(0, 1), q(4, 5)), add(q(2, 3), q(6, 7)))
      else:
        y = add(add(add(q(0, 4), q(1, 5)), q(2, 6)), q(3, 7))
    elif full_height:   # m = 5, 6, 7 outside the 4-column blocks: left to right
      y = p[0]
      for pi in p[1:]:
        y = add(y, pi)
    else:   # the generic kernel: a 4-row block (lanes summed pairwise), then the rest
      y = add(add(p[0], p[1]), add(p[2], p[3])) if m >= 4 else None
      k = m - m % 4
      rest = m % 4
      if rest == 1:
        y = fma(c[k], v[k], _c(c[k], 0) if y is None else y)
      elif rest:
        s = e2(c, k, k + 1) if rest == 2 else fma(c[k + 2], v[k + 2], e2(c, k, k + 1))
        y = s if y is None else add(y, s)
    out.append(y)
  return out


def _orth_larf(a, i, j0, tau, rows):
  """slarf('Left'): a[i:, j0:] -= tau v (v^T a[i:, j0:]), v = a[i:, i] (a[i][i] set to 1)."""
  v = [a[r][i] for r in range(i, rows)]
  cols = [[a[r][j] for r in range(i, rows)] for j in range(j0, len(a[0]))]
  if not cols:
    return
  w = _orth_gemv_t(cols, v, len(v) == rows)
  for j, wj in zip(range(j0, len(a[0])), w):
    t = lax.mul(lax.neg(tau), wj)
    for r in range(i, rows):
      a[r][j] = fma(t, v[r - i], a[r][j])


def _orth_qr32(z):
  """(Q, diag R) of the reduced QR of a float32 (..., m, n) stack, n <= m <= 8, bit for bit
  as JAX's CPU LAPACK calls compute them."""
  rows, ncols = _shape(z)[-2:]
  a = [[z[..., r, c] for c in range(ncols)] for r in range(rows)]
  one = creation.ones_like(a[0][0])
  taus = []
  for i in range(ncols):   # sgeqr2
    beta, x, tau = _orth_larfg(a[i][i], [a[r][i] for r in range(i + 1, rows)])
    a[i][i] = beta
    for r, xr in zip(range(i + 1, rows), x):
      a[r][i] = xr
    taus.append(tau)
    if i < ncols - 1:
      a[i][i] = one
      _orth_larf(a, i, i + 1, tau, rows)
      a[i][i] = beta
  diag = shape_ops.stack([a[i][i] for i in range(ncols)], axis=-1)
  for i in reversed(range(ncols)):   # sorg2r
    tau = taus[i]
    if i < ncols - 1:
      a[i][i] = one
      _orth_larf(a, i, i + 1, tau, rows)
    for r in range(i + 1, rows):
      a[r][i] = lax.mul(a[r][i], lax.neg(tau))
    a[i][i] = lax.sub(one, tau)
    for r in range(i):
      a[r][i] = creation.zeros_like(one)
  q = shape_ops.stack([shape_ops.stack(row, axis=-1) for row in a], axis=-2)
  return q, diag


@eager_jit.compiled(("n", "shape", "dtype", "m"))
def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
  """A (semi-)orthogonal n x m matrix, uniform (Haar) on O(n) when m == n: the Q of the
  QR decomposition of a normal matrix, its columns' signs fixed by R's diagonal
  (Mezzadri 2007)."""
  _m = n if m is None else m
  shape = _canon_shape("orthogonal", shape)
  data = _key("orthogonal", key)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "orthogonal")
  if not dtypes.is_float(dt):
    raise ValueError(f"dtype argument to `orthogonal` must be a float dtype, got {dt}")
  n, _m = (_concrete_int(v, "The error occurred in jax.random.orthogonal()") for v in (n, _m))
  z = normal(data, (*shape, max(n, _m), min(n, _m)), dt)
  if dt == np.float32 and 0 < min(n, _m) and max(n, _m) <= _ORTH_MAX_ROWS:
    q, d = _orth_qr32(z)   # JAX's LAPACK roundings, replayed
  else:
    q, r = linalg_decompositions.qr(z)
    d = linalg_norms.diagonal(r)
  x = q * shape_ops.expand_dims(ufuncs.sign(d), -2)
  return shape_ops.swapaxes(x, -1, -2) if n < _m else x

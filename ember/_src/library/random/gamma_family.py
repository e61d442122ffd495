"""The samplers of `ember.random` built on gamma draws: beta, dirichlet, chisquare, t, f,
generalized_normal and ball; and wald, which shares their float32 arithmetic. Each ports
JAX 0.12's; in float32 they draw XLA:CPU's bits with gamma's float32 arithmetic
(`gamma._f32_arith`), XLA:CPU's exp and powf (`xla_math`) and XLA's algebraic rewrites
(see `gamma`'s docstring). One module, apart from `gamma`'s rejection loops and gradient:
these are thin compositions of gamma draws.
"""
from __future__ import annotations

import numpy as np

from ember._src.primitives import eager_jit
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import ufuncs
from ember._src.library.numpy.util import check_arraylike
from ember._src.library.random.gamma import _f32_arith, _gamma, _plain_arith, gamma, loggamma
from ember._src.library.random.samplers import (
    _bcast, _broadcast_shape, _check_safe_cast, _check_shape, _concrete_int, _exponential,
    _sample_dtype, _split_data as _keys, normal, rademacher, uniform)
from ember._src.library.random.util import _canon_shape, _dtype, _key, _method, _shape
from ember._src.library.random.xla_math import _exp, _powf
from ember._src.library.random.xla_math.common import _cst as _c   # a constant of x's dtype


@eager_jit.compiled(("shape", "dtype", "method"))
def beta(key, a, b, shape=None, dtype=None, *, method="exact", out_sharding=None):
  """Beta(a, b) samples: G_a / (G_a + G_b), from log-gammas scaled by their max."""
  data = _key("beta", key)
  _method("beta", method)
  dt = _sample_dtype("beta", dtype)
  _check_safe_cast("beta", dt, a, b)
  shape = _broadcast_shape("beta", shape, a, b)
  a = _bcast(lax.convert_element_type(a, dt), shape)
  b = _bcast(lax.convert_element_type(b, dt), shape)
  key_a, key_b = _keys(data, 2)
  log_gamma_a = loggamma(key_a, a, shape, dt, method=method)
  log_gamma_b = loggamma(key_b, b, shape, dt, method=method)
  log_max = lax.max(log_gamma_a, log_gamma_b)
  gamma_a_scaled = _exp(lax.sub(log_gamma_a, log_max))   # float32: XLA's exp
  gamma_b_scaled = _exp(lax.sub(log_gamma_b, log_max))
  return lax.div(gamma_a_scaled, lax.add(gamma_a_scaled, gamma_b_scaled))


@eager_jit.compiled(("shape", "dtype"))
def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
  """Dirichlet(alpha) samples over alpha's last axis: the softmax of log-gammas."""
  data = _key("dirichlet", key)
  dt = _sample_dtype("dirichlet", dtype)
  shape = _canon_shape("dirichlet", shape)
  if not np.ndim(alpha) >= 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  a_shape = tuple(np.shape(alpha))
  if shape is None:
    shape = a_shape[:-1]
  else:
    _check_shape("dirichlet", shape, a_shape[:-1])
  alpha = lax.convert_element_type(alpha, dt)
  log_gamma_samples = loggamma(data, alpha, shape + a_shape[-1:], dt)
  return _softmax_last(log_gamma_samples)


def _row_sum(x):
  """x summed over its last axis; a short row left to right, as XLA:CPU adds it."""
  shape = _shape(x)
  r, k = len(shape) - 1, shape[-1]
  if not 0 < k <= 16:
    return lax.reduce_sum(x, (r,))
  total = lax.reshape(lax.slice_in_dim(x, 0, 1, axis=r), shape[:-1])
  for i in range(1, k):
    total = lax.add(total, lax.reshape(lax.slice_in_dim(x, i, i + 1, axis=r), shape[:-1]))
  return total


def _softmax_last(x):
  """jax.nn.softmax(x, -1): exp(x - max) / sum(exp(x - max))."""
  shape = _shape(x)
  r = len(shape) - 1
  x_max = lax.broadcast_in_dim(lax.reduce_max(x, (r,)), shape, tuple(range(r)))
  unnormalized = _exp(lax.sub(x, x_max))
  total = _row_sum(unnormalized)
  # XLA's simplifier: a / broadcast(b) -> a * broadcast(1 / b)
  inv = lax.div(_c(total, 1), total)
  return lax.mul(unnormalized, lax.broadcast_in_dim(inv, shape, tuple(range(r))))


@eager_jit.compiled(("shape", "dtype", "method"))
def chisquare(key, df, shape=None, dtype=None, *, method="exact", out_sharding=None):
  """Chi-square(df) samples: 2 * Gamma(df / 2), drawn in log space."""
  data = _key("chisquare", key)
  _method("chisquare", method)
  dt = _sample_dtype("chisquare", dtype)
  shape = _broadcast_shape("chisquare", shape, df)
  _check_safe_cast("chisquare", dt, df)
  return _chisquare(data, df, method, shape, dt)


def _chisquare(data, df, method, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  two = _c(df, 2)
  log_g = loggamma(data, lax.div(df, two), shape, dtype, method=method)
  return lax.mul(_exp(log_g), two)


@eager_jit.compiled(("shape", "dtype"))
def t(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Student's t(df) samples: N * sqrt((df / 2) / Gamma(df / 2))."""
  data = _key("t", key)
  dt = _sample_dtype("t", dtype)
  shape = _broadcast_shape("t", shape, df)
  _check_safe_cast("t", dt, df)
  df = lax.convert_element_type(df, dt)
  key_n, key_g = _keys(data, 2)
  n = normal(key_n, shape, dt)
  half_df = lax.div(df, _c(n, 2))
  g = gamma(key_g, half_df, shape, dt)
  return lax.mul(n, lax.sqrt(lax.div(_bcast(half_df, shape), g)))


@eager_jit.compiled(("shape", "dtype"))
def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
  """F(dfnum, dfden) samples: (chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)."""
  data = _key("f", key)
  dt = _sample_dtype("f", dtype)
  shape = _broadcast_shape("f", shape, dfnum, dfden)
  _check_safe_cast("f", dt, dfnum, dfden)
  dfden = lax.convert_element_type(dfden, dt)
  dfnum = lax.convert_element_type(dfnum, dt)
  key_dfd, key_dfn = _keys(data, 2)
  chi2_dfn = _chisquare(key_dfn, dfnum, "exact", shape, dt)
  chi2_dfd = _chisquare(key_dfd, dfden, "exact", shape, dt)
  # (chi2_dfn / dfnum) / (chi2_dfd / dfden) as XLA's simplifier rewrites it: dividing by a
  # broadcast dfnum becomes * (1 / dfnum), then one division is left
  ftz = _f32_arith.ftz if dt == dtypes.float32 else _plain_arith.ftz
  if _shape(dfnum) != shape:
    num = ftz(lax.mul(chi2_dfn, _bcast(lax.div(_c(dfnum, 1), dfnum), shape)))
    return lax.div(ftz(lax.mul(num, _bcast(dfden, shape))), chi2_dfd)
  return lax.div(ftz(lax.mul(chi2_dfn, _bcast(dfden, shape))),
                 ftz(lax.mul(_bcast(dfnum, shape), chi2_dfd)))


@eager_jit.compiled(("shape", "dtype"))
def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
  """Samples with density proportional to exp(-|x|^p): +-Gamma(1/p)^(1/p)."""
  shape = _canon_shape("generalized_normal", shape)
  data = _key("generalized_normal", key)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "generalized_normal")
  k0, k1 = _keys(data, 2)
  inv_p = ufuncs.true_divide(1, p)   # JAX traces p: 1 / p in p's (weak) float dtype
  # gamma's boost exponent 1 / (1 / p) is p to XLA's simplifier (unless a cast intervenes)
  g = _gamma("gamma", k0, inv_p, shape, dt, "exact", False,
             inv_a=p if _dtype(inv_p) == dt else None)
  r = rademacher(k1, shape, dt)
  return ufuncs.multiply(r, _power(g, inv_p))


def _power(x, y):
  """jnp.power(x, y) for a float array x and a float exponent, with XLA's float32 pow."""
  if _dtype(x) != dtypes.float32:
    return ufuncs.power(x, y)
  y = lax.convert_element_type(y, dtypes.float32)
  if _shape(y) != _shape(x):
    y = _bcast(y, _shape(x))
  return _powf(x, y)


@eager_jit.compiled(("d", "p", "shape", "dtype"))
def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
  """Uniform samples from the unit Lp ball in d dimensions (Barthe et al. 2005)."""
  check_arraylike("ball", p)
  shape = _canon_shape("ball", shape)
  data = _key("ball", key)
  dt = _sample_dtype("ball", dtype)
  d = _concrete_int(d, "The error occurred in jax.random.ball()")
  k1, k2 = _keys(data, 2)
  g = generalized_normal(k1, p, (*shape, d), dt)
  e = _exponential(k2, shape, dt)
  # JAX traces p, so |g| ** p is a float pow; XLA's simplifier turns g / s ** (1 / p) into
  # g * s ** -(1 / p)
  inv_p = ufuncs.true_divide(1, p)
  s = lax.add(_row_sum(_power(ufuncs.abs(g), p)), e)
  return ufuncs.multiply(g, _power(s, ufuncs.negative(inv_p))[..., None])


@eager_jit.compiled(("shape", "dtype"))
def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
  """Wald (inverse Gaussian) samples with mean `mean` (Michael, Schucany & Haas)."""
  data = _key("wald", key)
  dt = _sample_dtype("wald", dtype)
  shape = _broadcast_shape("wald", shape, mean)
  _check_safe_cast("wald", dt, mean)
  k1, k2 = _keys(data, 2)
  mean = _bcast(lax.convert_element_type(mean, dt), shape)
  v = normal(k1, shape, dt)
  z = uniform(k2, shape, dt)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  four, half = _c(y, 4), _c(y, 0.5)
  A = _f32_arith if dt == dtypes.float32 else _plain_arith
  # XLA divides by 2 as * 0.5 and fuses 4 mean y + ... and ... - mean/2 sqrt_term
  sqrt_term = lax.sqrt(A.fma(lax.mul(four, mean), y, lax.mul(mean_sq, y_sq)))
  x = A.fma(lax.neg(lax.mul(mean, half)), sqrt_term,
            lax.add(mean, lax.mul(lax.mul(mean_sq, y), half)))
  return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))

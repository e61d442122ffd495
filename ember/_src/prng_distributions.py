"""The gamma family, the discrete rejection samplers and the linear-algebra-based samplers
of `ember.random`.

Each sampler ports JAX 0.12's (jax/_src/random/core.py) with the same key splits and the
same sequence of operations, so with the default threefry2x32 (partitionable) PRNG it
draws the same numbers. Values built from transcendentals (log, exp, pow, lgamma) can
differ from XLA:CPU's by an ulp, and on rare draws such an ulp flips a rejection decision
(then that element differs, the rest still agree).

Gamma draws use Marsaglia & Tsang's rejection method, one `while_loop` per element (each
element owns one key of `split(key, a.size)`) vmapped over the elements: under vmap a
batched loop runs until every element is accepted and keeps each finished element's
carry, so every element's draws are those of its own scalar loop, as in JAX. The
derivative with respect to `a` is the implicit reparameterization gradient
(`random_gamma_grad`): dsample/da = -(dF/da) / (dF/dsample), F the gamma CDF.
"""
from __future__ import annotations

import functools
import math
from functools import partial

import numpy as np

from ember._src import core, dtypes
from ember._src.core import ShapedArray
from ember._src import lax_api as lax
from ember._src.prng import (KEY_SHAPE, _as_key_data, _bcast, _broadcast_shape, _check_safe_cast,
                             _check_shape, _concrete_int, _exponential, _jnp, _sample_dtype,
                             _shape_arg, _split_data as _keys, normal, rademacher, split,
                             uniform)
from ember._src.transforms.batching import vmap
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["gamma", "loggamma", "beta", "dirichlet", "chisquare", "t", "f", "poisson",
           "binomial", "multinomial", "multivariate_normal", "orthogonal", "wald",
           "generalized_normal", "ball"]


def _key(name: str, key):
  return _as_key_data(name, key)[0]


def _method(name: str, method: str) -> None:
  if method not in ("exact", "approximate"):
    raise ValueError(f"method argument to `{name}` must be one of "
                     f"{{'exact', 'approximate'}}, got {method!r}")


def _canon_shape(name: str, shape):
  return None if shape is None else _shape_arg(name, shape)


def _c(x, v):
  """A constant `v` of x's dtype (lax._const)."""
  return np.array(v, core.get_aval(x).dtype)


def _dtype(x):
  return core.get_aval(x).dtype


def _shape(x):
  return tuple(core.get_aval(x).shape)


# --------------------------------------------------------------------------------------
# Gamma: Marsaglia & Tsang, one rejection loop per element
# --------------------------------------------------------------------------------------

def _gamma_one(key, alpha, log_space: bool):
  """One Gamma(alpha) draw (or its log) from one key. For alpha < 1 it draws
  Gamma(alpha + 1) * U**(1 / alpha) (in log space: + log(U) / alpha, log U = -Exp)."""
  dt = _dtype(alpha)
  zero, one, two, minus_one = (np.array(v, dt) for v in (0, 1, 2, -1))
  half, third, squeeze = (np.array(v, dt) for v in (0.5, 1. / 3., 0.0331))
  boost_mask = lax.ge(alpha, one)
  alpha_orig = alpha
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, third)
  c = lax.div(third, lax.sqrt(d))

  def cond_fn(kXVU):
    _, X, V, U = kXVU
    return lax.bitwise_and(
        lax.ge(U, lax.sub(one, lax.mul(squeeze, lax.mul(X, X)))),
        lax.ge(lax.log(U), lax.add(lax.mul(X, half),
                                   lax.mul(d, lax.add(lax.sub(one, V), lax.log(V))))))

  def next_kxv(kxv):
    key, subkey = _keys(kxv[0], 2)
    x = normal(subkey, (), dt)
    return key, x, lax.add(one, lax.mul(x, c))

  def body_fn(kXVU):
    key, x_key, u_key = _keys(kXVU[0], 3)
    _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_kxv,
                             (x_key, zero, minus_one))
    X = lax.mul(x, x)
    V = lax.mul(lax.mul(v, v), v)
    U = uniform(u_key, (), dt)
    return key, X, V, U

  key, subkey = _keys(key, 2)
  _, _, V, _ = lax.while_loop(cond_fn, body_fn, (key, zero, one, two))  # starts rejected
  if log_space:
    log_samples = lax.neg(_exponential(subkey, (), dt))
    log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_samples, zero)), zero,
                           lax.mul(log_samples, lax.div(one, alpha_orig)))
    return lax.add(lax.add(lax.log(d), lax.log(V)), log_boost)
  samples = lax.sub(one, uniform(subkey, (), dt))
  boost = lax.select(boost_mask, one, lax.pow(samples, lax.div(one, alpha_orig)))
  return lax.mul(lax.mul(d, V), boost)


def _gamma_impl(key, a, log_space: bool):
  """Gamma draws of a's shape: element i uses key i of split(key, a.size)."""
  shape, n = _shape(a), math.prod(_shape(a))
  if n == 0:
    return a
  keys = split(key, n)
  samples = vmap(partial(_gamma_one, log_space=log_space))(keys, lax.reshape(a, (n,)))
  return lax.reshape(samples, shape)


@functools.lru_cache(maxsize=256)
def _gamma_jaxpr(shape: tuple, dtype, log_space: bool, x64: bool):
  """`_gamma_impl` staged once per (shape, dtype): tracing the vmapped nested rejection
  loops costs far more than running them on small inputs (JAX caches its jit the same
  way). Running the jaxpr binds its equations under whatever trace is current."""
  avals = [ShapedArray(KEY_SHAPE, dtypes.uint32), ShapedArray(shape, dtype)]
  jaxpr, _ = core.trace_to_jaxpr(lambda k, a: ([_gamma_impl(k, a, log_space)], None), avals)
  return jaxpr


@partial(custom_jvp, nondiff_argnums=(2,))
def _random_gamma(key, a, log_space):
  x64 = dtypes.canonicalize_dtype(dtypes.int64) == dtypes.int64
  jaxpr = _gamma_jaxpr(_shape(a), np.dtype(_dtype(a)), log_space, x64)
  return core.eval_jaxpr(jaxpr, jaxpr.consts, key, a)[0]


@_random_gamma.defjvp
def _random_gamma_jvp(log_space, primals, tangents):
  key, a = primals
  _, a_dot = tangents
  ans = _random_gamma(key, a, log_space)
  return ans, lax.mul(a_dot, _gamma_grad(ans, a, log_space))


def _gamma_grad(sample, a, log_space: bool):
  if log_space:   # d log(x) = dx / x; exp(log x) may underflow to 0: use the tiniest float
    x = lax.exp(sample)
    x = lax.select(lax.eq(x, _c(x, 0)), lax.full_like(x, dtypes.finfo(_dtype(x)).tiny), x)
    return lax.div(random_gamma_grad(a, x), x)
  return random_gamma_grad(a, sample)


def _gamma(name, key, a, shape, dtype, method, log_space):
  data = _key(name, key)
  _method(name, method)
  dt = _sample_dtype("gamma" if name == "loggamma" else name, dtype)
  shape = _canon_shape(name, shape)
  if method == "approximate":
    return _gamma_approx(data, a, shape, dt, log_space)
  shape = tuple(np.shape(a)) if shape is None else shape
  _check_shape("gamma", shape, tuple(np.shape(a)))
  a = lax.convert_element_type(a, dt)
  if _shape(a) != shape:
    a = _bcast(a, shape)
  return _random_gamma(data, a, log_space)


def gamma(key, a, shape=None, dtype=None, *, method="exact"):
  """Standard Gamma(a) samples (unit scale). method: 'exact' (Marsaglia-Tsang rejection,
  differentiable in `a`) or 'approximate' (loop-free, slightly biased)."""
  return _gamma("gamma", key, a, shape, dtype, method, False)


def loggamma(key, a, shape=None, dtype=None, *, method="exact"):
  """log of Gamma(a) samples, accurate where the samples underflow (a << 1)."""
  return _gamma("loggamma", key, a, shape, dtype, method, True)


# Chi-square quantile series of the approximate sampler (JAX's _CHI2_QUANTILE_COEF):
# row k holds the coefficients of x^k nu^(-k/2) as a quadratic in 1 / nu.
_CHI2_QUANTILE_COEF = (
    (1.0, -0.2237368, -0.01513904),
    (0.4713941, 0.02607083, -0.008986007),
    (0.0001348028, 0.01128186, 0.02277679),
    (-0.008553069, -0.01153761, -0.01323293),
    (0.00312558, 0.005169654, -0.006950356),
    (-0.0008426812, 0.00253001, 0.001060438),
    (0.00009780499, -0.001450117, 0.001565326),
)
_LOGGAMMA_NUM_BOOSTS = 4


def _polynomial(x, coeffs):
  """lax.polynomial: Horner's rule, highest coefficient first."""
  coeffs = [_c(x, c) if np.ndim(c) == 0 and not isinstance(c, core.Tracer) else c
            for c in coeffs]
  out = coeffs[-1]
  for c in coeffs[-2::-1]:
    out = lax.add(lax.mul(out, x), c)
  return out


def _loggamma_chisquare(key, a):
  """log Gamma(a) = log(a) + 3 log(poly(x / sqrt(2a))), x normal (Goldstein's series)."""
  nu = lax.mul(_c(a, 2), a)
  x = normal(key, _shape(a), _dtype(a))
  u = lax.div(_c(a, 1), nu)
  t_ = lax.mul(x, lax.rsqrt(nu))
  poly = _polynomial(t_, [_polynomial(u, row) for row in _CHI2_QUANTILE_COEF])
  poly = lax.max(poly, _c(a, dtypes.finfo(_dtype(a)).tiny))
  return lax.add(lax.log(a), lax.mul(_c(a, 3), lax.log(poly)))


def _gamma_approx(data, a, shape, dtype, log_space):
  """Loop-free Gamma: a chi-square quantile series draw at a + 4, boosted back with
  Stuart's identity log G_a = log G_{a+n} + sum_k log(U_k) / (a + k). Computes in at
  least float32."""
  cdt = dtypes.float32 if dtypes.finfo(dtype).bits < 32 else dtype
  shape = _broadcast_shape("gamma", shape, a)
  a = lax.convert_element_type(a, cdt)
  if _shape(a) != shape:
    a = _bcast(a, shape)
  key_base, key_boost = _keys(data, 2)
  n = _LOGGAMMA_NUM_BOOSTS
  log_base = _loggamma_chisquare(key_base, lax.add(a, _c(a, n)))
  k = lax.broadcast_in_dim(lax.iota(cdt, n), (n,) + (1,) * len(shape), (0,))
  log_u = lax.neg(_exponential(key_boost, (n, *shape), cdt))
  a1 = lax.reshape(a, (1, *shape))
  ratio = lax.div(log_u, lax.add(_bcast(a1, (n, *shape)), _bcast(k, (n, *shape))))
  log_sample = lax.add(log_base, lax.reduce_sum(ratio, (0,)))
  out = log_sample if log_space else lax.exp(log_sample)
  return lax.convert_element_type(out, dtype)


# --- the implicit reparameterization gradient of Gamma(a) w.r.t. a -------------------
# A port of JAX's random_gamma_grad_impl (XLA's RandomGammaGrad): with P(a, x) the
# regularized lower incomplete gamma, dx/da = -(dP/da) / (dP/dx), where dP/da comes from
# P's power series (x <= 1 or x <= a) or Q = 1 - P's continued fraction (Lentz), each run
# as a whole-array loop in which an element stops updating once it has converged.

def random_gamma_grad(a, x):
  """d sample / d a of a Gamma(a, 1) sample x (`jax.lax.random_gamma_grad`)."""
  from ember._src.numpy.util import promote_args_inexact
  a, x = promote_args_inexact("random_gamma_grad", a, x)
  shape = _shape(lax.add(a, x))
  a, x = _bcast(a, shape), _bcast(x, shape)
  dt = _dtype(a)
  if dt in (dtypes.float16, dtypes.bfloat16):   # computed in float32, as JAX does
    up = lambda v: lax.convert_element_type(v, dtypes.float32)
    return lax.convert_element_type(_random_gamma_grad_impl(up(a), up(x)), dt)
  return _random_gamma_grad_impl(a, x)


def _random_gamma_grad_impl(a, x):
  dt = _dtype(a)
  is_nan = lax.bitwise_or(lax.ne(a, a), lax.ne(x, x))
  x_is_zero = lax.eq(x, _c(x, 0))
  domain_error = lax.bitwise_or(lax.lt(x, _c(x, 0)), lax.le(a, _c(a, 0)))
  use_igammac = lax.bitwise_and(lax.gt(x, _c(x, 1)), lax.gt(x, a))
  ax = lax.sub(lax.sub(lax.mul(a, lax.log(x)), x), lax.lgamma(a))
  underflow = lax.lt(ax, _c(ax, -np.log(dtypes.finfo(dt).max)))
  ax = lax.exp(ax)
  enabled = lax.bitwise_not(lax.bitwise_or(lax.bitwise_or(lax.bitwise_or(
      x_is_zero, domain_error), underflow), is_nan))
  output = lax.select(
      use_igammac,
      lax.neg(_igammac_continued_fraction(x, a, lax.bitwise_and(enabled, use_igammac))),
      _igamma_series(x, a, lax.bitwise_and(enabled, lax.bitwise_not(use_igammac))))
  output = lax.select(x_is_zero, lax.full_like(output, 0), output)
  return lax.select(lax.bitwise_or(domain_error, is_nan), lax.full_like(a, np.nan), output)


def _igamma_series(x, a, enabled):
  """-(dP/da) / (dP/dx) from P = e^log_ax / a * sum_n x^n / ((a+1)...(a+n))."""
  eps = _c(a, dtypes.finfo(_dtype(a)).eps)

  def body_fn(vals):
    enabled, r, c, ans, x, dc_da, dans_da = vals
    r = lax.add(r, _c(r, 1.))
    dc_da = lax.sub(lax.mul(dc_da, lax.div(x, r)), lax.div(lax.mul(c, x), lax.mul(r, r)))
    dans_da = lax.add(dans_da, dc_da)
    c = lax.mul(c, lax.div(x, r))
    ans = lax.add(ans, c)
    conditional = lax.bitwise_and(enabled, lax.gt(lax.abs(lax.div(dc_da, dans_da)), eps))
    new = (r, c, ans, x, dc_da, dans_da)
    return (conditional,) + tuple(lax.select(enabled, n, o) for n, o in zip(new, vals[1:]))

  init = (enabled, a, lax.full_like(a, 1), lax.full_like(a, 1), x, lax.full_like(a, 0),
          lax.full_like(a, 0))
  vals = lax.while_loop(lambda v: _any(v[0]), body_fn, init)
  ans, dans_da = vals[3], vals[6]
  dlogax_da = lax.sub(lax.log(x), lax.digamma(lax.add(a, _c(a, 1))))
  return lax.div(lax.mul(lax.neg(lax.add(dans_da, lax.mul(ans, dlogax_da))), x), a)


def _igammac_continued_fraction(x, a, enabled):
  """(dQ/da) / (dP/dx) by Lentz's continued fraction of Q(a, x)."""
  eps = dtypes.finfo(_dtype(a)).eps

  def cond_fn(vals):
    return lax.bitwise_and(lax.lt(vals[5], _c(vals[5], 2000)), _any(vals[0]))

  def body_fn(vals):
    (enabled, ans, t_, y, z, c, pkm1, qkm1, pkm2, qkm2,
     dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = vals
    c = lax.add(c, _c(c, 1))
    y = lax.add(y, _c(y, 1))
    z = lax.add(z, _c(z, 2))
    yc = lax.mul(y, c)
    pk = lax.sub(lax.mul(pkm1, z), lax.mul(pkm2, yc))
    qk = lax.sub(lax.mul(qkm1, z), lax.mul(qkm2, yc))
    qk_is_nonzero = lax.ne(qk, _c(qk, 0))
    r = lax.div(pk, qk)
    t_ = lax.select(qk_is_nonzero, lax.abs(lax.div(lax.sub(ans, r), r)), lax.full_like(r, 1))
    ans = lax.select(qk_is_nonzero, r, ans)
    dpk_da = lax.add(lax.sub(lax.sub(lax.mul(dpkm1_da, z), pkm1), lax.mul(dpkm2_da, yc)),
                     lax.mul(pkm2, c))
    dqk_da = lax.add(lax.sub(lax.sub(lax.mul(dqkm1_da, z), qkm1), lax.mul(dqkm2_da, yc)),
                     lax.mul(qkm2, c))
    dans_da_new = lax.select(qk_is_nonzero,
                             lax.div(lax.sub(dpk_da, lax.mul(ans, dqk_da)), qk), dans_da)
    grad_conditional = lax.select(qk_is_nonzero, lax.abs(lax.sub(dans_da_new, dans_da)),
                                  lax.full_like(dans_da, 1))
    pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
    dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = dpkm1_da, dqkm1_da, dpk_da, dqk_da
    rescale = lax.gt(lax.abs(pk), lax.div(_c(pk, 1), _c(pk, eps)))
    sc = lambda v: lax.select(rescale, lax.mul(v, _c(v, eps)), v)
    pkm2, pkm1, qkm2, qkm1 = sc(pkm2), sc(pkm1), sc(qkm2), sc(qkm1)
    dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = (sc(dpkm2_da), sc(dqkm2_da), sc(dpkm1_da),
                                              sc(dqkm1_da))
    conditional = lax.bitwise_and(enabled, lax.gt(grad_conditional, _c(grad_conditional, eps)))
    new = (ans, t_, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da,
           dqkm1_da, dans_da_new)
    return (conditional,) + tuple(n if i == 4 else lax.select(enabled, n, o)   # c: shared
                                  for i, (n, o) in enumerate(zip(new, vals[1:])))

  y = lax.sub(_c(a, 1), a)
  z = lax.add(lax.add(x, y), _c(x, 1))
  pkm1 = lax.add(x, _c(x, 1))
  qkm1 = lax.mul(z, x)
  ans = lax.div(pkm1, qkm1)
  zeros = lax.full_like(x, 0)
  dqkm1_da = lax.neg(x)
  dans_da = lax.div(lax.sub(zeros, lax.mul(ans, dqkm1_da)), qkm1)
  init = (enabled, ans, lax.full_like(x, 1), y, z, _c(x, 0), pkm1, qkm1,
          lax.full_like(x, 1), x, zeros, zeros, zeros, dqkm1_da, dans_da)
  vals = lax.while_loop(cond_fn, body_fn, init)
  ans, dans_da = vals[1], vals[14]
  dlogax_da = lax.sub(lax.log(x), lax.digamma(a))
  return lax.neg(lax.mul(lax.add(dans_da, lax.mul(ans, dlogax_da)), x))


# --------------------------------------------------------------------------------------
# Samplers built on gamma
# --------------------------------------------------------------------------------------

def beta(key, a, b, shape=None, dtype=None, *, method="exact"):
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
  gamma_a_scaled = lax.exp(lax.sub(log_gamma_a, log_max))
  gamma_b_scaled = lax.exp(lax.sub(log_gamma_b, log_max))
  return lax.div(gamma_a_scaled, lax.add(gamma_a_scaled, gamma_b_scaled))


def dirichlet(key, alpha, shape=None, dtype=None):
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


def _softmax_last(x):
  """jax.nn.softmax(x, -1): exp(x - max) / sum(exp(x - max))."""
  shape = _shape(x)
  r = len(shape) - 1
  x_max = lax.broadcast_in_dim(lax.reduce_max(x, (r,)), shape, tuple(range(r)))
  unnormalized = lax.exp(lax.sub(x, x_max))
  total = lax.broadcast_in_dim(lax.reduce_sum(unnormalized, (r,)), shape, tuple(range(r)))
  return lax.div(unnormalized, total)


def chisquare(key, df, shape=None, dtype=None, *, method="exact"):
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
  return lax.mul(lax.exp(log_g), two)


def t(key, df, shape=None, dtype=None):
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


def f(key, dfnum, dfden, shape=None, dtype=None):
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
  num = lax.div(chi2_dfn, _bcast(dfnum, shape))
  den = lax.div(chi2_dfd, _bcast(dfden, shape))
  return lax.div(num, den)


def generalized_normal(key, p, shape=(), dtype=None):
  """Samples with density proportional to exp(-|x|^p): +-Gamma(1/p)^(1/p)."""
  jnp = _jnp()
  shape = _canon_shape("generalized_normal", shape)
  data = _key("generalized_normal", key)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "generalized_normal")
  k0, k1 = _keys(data, 2)
  inv_p = jnp.true_divide(1, p)
  g = gamma(k0, inv_p, shape, dt)
  r = rademacher(k1, shape, dt)
  return jnp.multiply(r, jnp.power(g, jnp.true_divide(1, p)))


def ball(key, d, p=2, shape=(), dtype=None):
  """Uniform samples from the unit Lp ball in d dimensions (Barthe et al. 2005)."""
  jnp = _jnp()
  from ember._src.numpy.util import check_arraylike
  check_arraylike("ball", p)
  shape = _canon_shape("ball", shape)
  data = _key("ball", key)
  dt = _sample_dtype("ball", dtype)
  d = _concrete_int(d, "The error occurred in jax.random.ball()")
  k1, k2 = _keys(data, 2)
  g = generalized_normal(k1, p, (*shape, d), dt)
  e = _exponential(k2, shape, dt)
  norm = jnp.power(jnp.add(jnp.sum(jnp.power(jnp.abs(g), p), -1), e), jnp.true_divide(1, p))
  return jnp.divide(g, norm[..., None])


def wald(key, mean, shape=None, dtype=None):
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
  four, two = _c(y, 4), _c(y, 2)
  sqrt_term = lax.sqrt(lax.add(lax.mul(lax.mul(four, mean), y), lax.mul(mean_sq, y_sq)))
  x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), two)),
              lax.mul(lax.div(mean, two), sqrt_term))
  return lax.select(lax.le(z, lax.div(mean, lax.add(mean, x))), x, lax.div(mean_sq, x))


# --------------------------------------------------------------------------------------
# Poisson, binomial, multinomial: whole-array rejection loops on one key
# --------------------------------------------------------------------------------------

def _below(i, max_iters):
  """i < max_iters with JAX's promotion of the weak loop counter to max_iters' dtype."""
  mdt = np.asarray(max_iters).dtype
  return lax.lt(lax.convert_element_type(i, mdt), np.asarray(max_iters))


def _any(mask):
  return lax.reduce_or(mask, tuple(range(len(_shape(mask)))))


def _poisson_knuth(key, lam, shape, dtype, max_iters):
  """Knuth: count uniforms until their product drops below e^-lam."""
  neg_lam = lax.neg(lam)

  def body_fn(carry):
    i, k, rng, log_prod = carry
    rng, subkey = _keys(rng, 2)
    k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, np.array(1, dtype)), k)
    u = uniform(subkey, shape, dtypes.float32)
    return lax.add(i, np.int32(1)), k, rng, lax.add(log_prod, lax.log(u))

  def cond_fn(carry):
    i, log_prod = carry[0], carry[3]
    return lax.bitwise_and(_any(lax.gt(log_prod, neg_lam)), _below(i, max_iters))

  init = (np.int32(0), lax.full(shape, 0, dtype), key, lax.full(shape, 0, dtypes.float32))
  k = lax.while_loop(cond_fn, body_fn, init)[1]
  return lax.sub(k, np.array(1, dtype))


def _poisson_rejection(key, lam, shape, dtype, max_iters):
  """Hormann's transformed rejection (PTRS) for lam >= 10."""
  f32 = lambda v: _c(lam, v)
  log_lam = lax.log(lam)
  b = lax.add(f32(0.931), lax.mul(f32(2.53), lax.sqrt(lam)))
  a = lax.add(f32(-0.059), lax.mul(f32(0.02483), b))
  inv_alpha = lax.add(f32(1.1239), lax.div(f32(1.1328), lax.sub(b, f32(3.4))))
  v_r = lax.sub(f32(0.9277), lax.div(f32(3.6224), lax.sub(b, f32(2))))

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _keys(key, 3)
    u = lax.sub(uniform(subkey_0, shape, _dtype(lam)), f32(0.5))
    v = uniform(subkey_1, shape, _dtype(lam))
    u_shifted = lax.sub(f32(0.5), lax.abs(u))
    k = lax.floor(lax.add(lax.add(lax.mul(lax.add(lax.div(lax.mul(f32(2), a), u_shifted), b),
                                          u), lam), f32(0.43)))
    s = lax.log(lax.div(lax.mul(v, inv_alpha),
                        lax.add(lax.div(a, lax.mul(u_shifted, u_shifted)), b)))
    t_ = lax.sub(lax.add(lax.neg(lam), lax.mul(k, log_lam)), lax.lgamma(lax.add(k, f32(1))))
    accept1 = lax.bitwise_and(lax.ge(u_shifted, f32(0.07)), lax.le(v, v_r))
    reject = lax.bitwise_or(lax.lt(k, f32(0)), lax.bitwise_and(lax.lt(u_shifted, f32(0.013)),
                                                               lax.gt(v, u_shifted)))
    accept2 = lax.le(s, t_)
    accept = lax.bitwise_or(accept1, lax.bitwise_and(lax.bitwise_not(reject), accept2))
    k_out = lax.select(accept, k, k_out)
    return lax.add(i, np.int32(1)), k_out, lax.bitwise_or(accepted, accept), key

  def cond_fn(carry):
    i, _, accepted, _ = carry
    return lax.bitwise_and(_any(lax.bitwise_not(accepted)), _below(i, max_iters))

  init = (np.int32(0), lax.full(shape, -1, _dtype(lam)), lax.full(shape, False, dtypes.bool_),
          key)
  k = lax.while_loop(cond_fn, body_fn, init)[1]
  return lax.convert_element_type(k, dtype)


def poisson(key, lam, shape=None, dtype=None, *, method="exact"):
  """Poisson(lam) counts of an integer dtype: Knuth's method for lam < 10, transformed
  rejection above ('exact', float32 arithmetic), or a loop-free normal-quantile
  inversion ('approximate', total variation below 1e-4)."""
  data = _key("poisson", key)
  _method("poisson", method)
  dt = dtypes.check_user_dtype(int if dtype is None else dtype, "poisson")
  if not dtypes.is_integer(dt):
    raise ValueError(f"dtype argument to `poisson` must be an integer dtype, got {dt}")
  shape = tuple(np.shape(lam)) if shape is None else _canon_shape("poisson", shape)
  if method == "approximate":
    from ember._src.numpy.util import broadcast_shapes
    if broadcast_shapes(tuple(np.shape(lam)), shape) != shape:
      raise ValueError("lam shape must be broadcastable to shape argument; "
                       f"got lam.shape {tuple(np.shape(lam))}, shape {shape}")
    return _poisson_approx(data, lam, shape, dt)
  lam = lax.convert_element_type(_bcast(lam, shape), dtypes.float32)
  use_knuth = lax.bitwise_or(lax.ne(lam, lam), lax.lt(lam, np.float32(10)))
  lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
  lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
  max_iters = dt.type(dtypes.iinfo(dt).max)
  result = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dt, max_iters),
                      _poisson_rejection(data, lam_rejection, shape, dt, max_iters))
  return lax.select(lax.eq(lam, np.float32(0)), lax.full_like(result, 0), result)


_POISSON_SPLIT = 7.0
_POISSON_NUM_TERMS = 20
_PEIZER_PRATT_EPS = 0.02


def _poisson_approx(data, lam, shape, dtype):
  """A normal draw mapped to a count by inverting an approximate CDF: the truncated
  exact CDF below lam = 7, Peizer & Pratt's normal approximation above."""
  lam_dt = core.get_aval(lam).dtype if core.is_arraylike(lam) else np.asarray(lam).dtype
  wide = (dtypes.is_float(lam_dt) and dtypes.finfo(lam_dt).bits > 32) \
      or np.dtype(dtype).itemsize > 4
  cdt = dtypes.float64 if wide else dtypes.float32
  lam = lax.convert_element_type(lam, cdt)
  lam = lax.reshape(lam, (1,) * (len(shape) - len(_shape(lam))) + _shape(lam))
  z = normal(data, shape, cdt)
  return lax.convert_element_type(_poisson_from_normal(z, lam), dtype)


def _ndtr(x):
  """The standard normal CDF from erf / erfc (jax.scipy.special.ndtr)."""
  half_sqrt_2 = _c(x, 0.5 * np.sqrt(2.0))
  w = lax.mul(x, half_sqrt_2)
  z = lax.abs(w)
  y = lax.select(lax.lt(z, half_sqrt_2), lax.add(_c(x, 1), lax.erf(w)),
                 lax.select(lax.gt(w, _c(x, 0)), lax.sub(_c(x, 2), lax.erfc(z)), lax.erfc(z)))
  return lax.mul(_c(x, 0.5), y)


def _poisson_from_normal(z, lam):
  jnp = _jnp()
  small = _poisson_cdf_inversion(_ndtr(z), lam)
  large = _poisson_peizer_pratt(z, lam)
  return jnp.where(jnp.less(lam, _POISSON_SPLIT), small, large)


def _poisson_cdf_inversion(u, lam):
  jnp = _jnp()
  pmf = jnp.exp(jnp.negative(lam))
  cdf = pmf
  count = jnp.less(cdf, u).astype(_dtype(u))
  for k in range(1, _POISSON_NUM_TERMS - 1):
    pmf = pmf * (lam / k)
    cdf = cdf + pmf
    count = count + jnp.less(cdf, u).astype(_dtype(u))
  return count


def _poisson_peizer_pratt(z, lam):
  jnp = _jnp()
  x = _peizer_pratt_root(z, lam) + 0.6
  c = jnp.ceil(x)

  def zint(c):
    return jnp.where(c < 0, -np.inf, _peizer_pratt_z(jnp.maximum(c, 0.0), lam))

  def root_ge(c):
    return (zint(c) >= z).astype(_dtype(x))

  return jnp.maximum(c + 1 - root_ge(c) - root_ge(c - 1), 0.0)


def _peizer_pratt_root(z, lam):
  jnp = _jnp()
  s = jnp.sqrt(lam)
  return lam + s * z - 2 / 3 + jnp.square(z) / 6 + z * (1 - jnp.square(z)) / (72 * s)


def _peizer_pratt_z(x, lam):
  jnp = _jnp()
  y = (x + 0.5) / lam
  t_ = _peizer_pratt_t(y)
  return (x - lam + 2 / 3 + _PEIZER_PRATT_EPS / (x + 1)) * jnp.sqrt((1 + t_) / lam)


def _peizer_pratt_t(y):
  """(1 - y^2 + 2 y log y) / (1 - y)^2, by its series near y = 1."""
  jnp = _jnp()
  d = y - 1
  small = jnp.abs(d) < 0.25
  series = jnp.zeros_like(d)
  for k in reversed(range(1, 10)):
    series = d * (2 * (-1) ** k / ((k + 1) * (k + 2)) + series)
  y_safe = jnp.where(small, 2.0, y)
  d_safe = jnp.where(small, 1.0, d)
  direct = (1 - jnp.square(y_safe) + 2 * y_safe * jnp.log(y_safe)) / jnp.square(d_safe)
  return jnp.where(small, series, direct)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
  """log(k!) - Stirling's approximation: tabulated for k <= 9, a series above."""
  jnp = _jnp()
  vals = jnp.array(_STIRLING_TAIL, dtype=_dtype(k))
  use_tail_values = k <= 9
  k = lax.clamp(_c(k, 0.0), k, _c(k, 9.0))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  k = jnp.floor(k)
  return lax.select(use_tail_values, vals[jnp.asarray(k, dtype="int32")], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
  """Sum geometric waiting times until they exceed `count` (for count * p <= 10)."""
  jnp = _jnp()
  log1minusprob = jnp.log1p(-prob)

  def body_fn(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = _keys(key, 2)
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = uniform(subkey, shape, _dtype(prob))
    geom = jnp.ceil(jnp.log(u) / log1minusprob)
    return i + np.int32(1), num_geom_out, geom_sum + geom, key

  def cond_fn(carry):
    i, geom_sum = carry[0], carry[2]
    return lax.bitwise_and(_any(geom_sum <= count), _below(i, max_iters))

  zeros = lax.full(shape, 0, _dtype(prob))
  k = lax.while_loop(cond_fn, body_fn, (np.int32(0), zeros, zeros, key))[1]
  return lax.convert_element_type(k - 1, dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
  """Hormann's transformed rejection with squeeze (BTRS) for count * p > 10."""
  jnp = _jnp()
  stddev = jnp.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = jnp.floor((count + 1) * prob)

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _keys(key, 3)
    u = uniform(subkey_0, shape, _dtype(prob))
    v = uniform(subkey_1, shape, _dtype(prob))
    u = u - 0.5
    us = 0.5 - jnp.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = jnp.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = jnp.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * jnp.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * jnp.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * jnp.log(r * (count - k + 1) / (k + 1))
          + _stirling_approx_tail(m)
          + _stirling_approx_tail(count - m)
          - _stirling_approx_tail(k)
          - _stirling_approx_tail(count - k))
    accept2 = v <= ub
    accept = accept1 | (~reject & accept2)
    return i + np.int32(1), lax.select(accept, k, k_out), accepted | accept, key

  def cond_fn(carry):
    i, accepted = carry[0], carry[2]
    return lax.bitwise_and(_any(~accepted), _below(i, max_iters))

  init = (np.int32(0), lax.full(shape, -1, _dtype(prob)), lax.full(shape, False, dtypes.bool_),
          key)
  return lax.convert_element_type(lax.while_loop(cond_fn, body_fn, init)[1], dtype)


def binomial(key, n, p, shape=None, dtype=None):
  """Binomial(n, p) counts as floats of `dtype`: inversion for n * min(p, 1-p) <= 10,
  BTRS above; NaN for n < 0, NaN n or invalid p, inf for n = inf."""
  jnp = _jnp()
  from ember._src.numpy.util import broadcast_shapes, check_arraylike, promote_dtypes_inexact
  data = _key("binomial", key)
  check_arraylike("binomial", n, p)
  dt = _sample_dtype("binomial", dtype)
  shape = _canon_shape("binomial", shape)
  if shape is None:
    shape = broadcast_shapes(tuple(np.shape(n)), tuple(np.shape(p)))
  else:
    _check_shape("binomial", shape, tuple(np.shape(n)), tuple(np.shape(p)))
  (prob,) = promote_dtypes_inexact(p)
  count = _bcast(lax.convert_element_type(n, _dtype(prob)), shape)
  prob = _bcast(prob, shape)
  p_lt_half = prob < 0.5
  q = lax.select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = jnp.isnan(count) | (count < 0.0)
  count_inf = jnp.isinf(count)
  q_is_nan = jnp.isnan(q)
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = jnp.floor(count)
  count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
  max_iters = dt.type(dtypes.finfo(dt).max)
  samples = lax.select(use_inversion,
                       _binomial_inversion(data, count_inv, q, shape, dt, max_iters),
                       _btrs(data, count_btrs, q_btrs, shape, dt, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, jnp.full_like(samples, np.nan, dt), samples)
  samples = lax.select(count_inf & (~invalid), jnp.full_like(samples, np.inf, dt), samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                    lax.convert_element_type(count, dt) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Multinomial(n, p) counts over p's last axis, as a scan of conditional binomials."""
  jnp = _jnp()
  from ember._src.numpy.util import check_arraylike, promote_dtypes_inexact
  data = _key("multinomial", key)
  check_arraylike("multinomial", n, p)
  n, p = promote_dtypes_inexact(n, p)
  if shape is None:
    shape = _shape(p)[:-1]
  else:
    shape = _canon_shape("multinomial", shape)
    _check_shape("multinomial", shape, _shape(n), _shape(p)[:-1])
  n = _bcast(n, shape)
  p = _bcast(p, (*shape, _shape(p)[-1]))

  def step(remainder, ratio_key):
    ratio, key = ratio_key
    count = binomial(key, remainder, jnp.clip(ratio, 0, 1), dtype=_dtype(remainder))
    return remainder - count, count

  p = jnp.moveaxis(p, -1, 0)
  remaining_probs = lax.cumsum(p, 0, reverse=True)
  ratios = p / jnp.where(remaining_probs == 0, 1, remaining_probs)
  keys = split(data, _shape(ratios)[0])
  _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "multinomial")
  return lax.convert_element_type(jnp.moveaxis(counts, 0, -1), dt)   # JAX: .astype(dtype)


# --------------------------------------------------------------------------------------
# Samplers built on linear algebra
# --------------------------------------------------------------------------------------

def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
  """N(mean, cov) samples: mean + factor @ z with cov = factor factor^T from a Cholesky
  ('cholesky'), eigen ('eigh') or singular value ('svd') decomposition."""
  jnp = _jnp()
  from ember._src.numpy.util import promote_dtypes_inexact
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
  from ember._src.numpy.util import broadcast_shapes
  if shape is None:
    shape = broadcast_shapes(_shape(mean)[:-1], _shape(cov)[:-2])
  else:
    _check_shape("normal", shape, _shape(mean)[:-1], _shape(cov)[:-2])
  if method == "svd":
    u, s, _ = jnp.linalg.svd(cov)
    factor = u * jnp.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = jnp.linalg.eigh(cov)
    factor = v * jnp.sqrt(w[..., None, :])
  else:
    factor = jnp.linalg.cholesky(cov)
  normal_samples = normal(data, shape + _shape(mean)[-1:], dt)
  return mean + jnp.einsum("...ij,...j->...i", factor, normal_samples)


def orthogonal(key, n, shape=(), dtype=None, m=None):
  """A (semi-)orthogonal n x m matrix, uniform (Haar) on O(n) when m == n: the Q of the
  QR decomposition of a normal matrix, its columns' signs fixed by R's diagonal
  (Mezzadri 2007)."""
  jnp = _jnp()
  _m = n if m is None else m
  shape = _canon_shape("orthogonal", shape)
  data = _key("orthogonal", key)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "orthogonal")
  if not dtypes.is_float(dt):
    raise ValueError(f"dtype argument to `orthogonal` must be a float dtype, got {dt}")
  n, _m = (_concrete_int(v, "The error occurred in jax.random.orthogonal()") for v in (n, _m))
  z = normal(data, (*shape, max(n, _m), min(n, _m)), dt)
  q, r = jnp.linalg.qr(z)
  d = jnp.linalg.diagonal(r)
  x = q * jnp.expand_dims(jnp.sign(d), -2)
  return jnp.swapaxes(x, -1, -2) if n < _m else x

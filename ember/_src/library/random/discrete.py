"""The discrete samplers of `ember.random`: poisson, binomial and multinomial. Each ports
JAX 0.12's with the same key splits and operations: poisson and binomial are whole-array
rejection loops on one key (Knuth's method / Hormann's PTRS, inversion / BTRS), poisson's
'approximate' method a loop-free normal-quantile inversion, multinomial a scan of
conditional binomials.
"""
from __future__ import annotations

import numpy as np

from ember._src.primitives import eager_jit
from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, logic, ufuncs
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.util import (
    broadcast_shapes, check_arraylike, promote_dtypes_inexact)
from ember._src.library.random.samplers import (
    _bcast, _check_shape, _sample_dtype, _split_data as _keys, normal, uniform)
from ember._src.library.random.keys import split
from ember._src.library.random.util import _any, _canon_shape, _dtype, _key, _method, _shape
from ember._src.library.random.xla_math.common import _cst as _c   # a constant of x's dtype


def _below(i, max_iters):
  """i < max_iters with JAX's promotion of the weak loop counter to max_iters' dtype."""
  mdt = np.asarray(max_iters).dtype
  return lax.lt(lax.convert_element_type(i, mdt), np.asarray(max_iters))


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


@eager_jit.compiled(("shape", "dtype", "method"))
def poisson(key, lam, shape=None, dtype=None, *, method="exact", out_sharding=None):
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
  small = _poisson_cdf_inversion(_ndtr(z), lam)
  large = _poisson_peizer_pratt(z, lam)
  return logic.where(ufuncs.less(lam, _POISSON_SPLIT), small, large)


def _poisson_cdf_inversion(u, lam):
  pmf = ufuncs.exp(ufuncs.negative(lam))
  cdf = pmf
  count = ufuncs.less(cdf, u).astype(_dtype(u))
  for k in range(1, _POISSON_NUM_TERMS - 1):
    pmf = pmf * (lam / k)
    cdf = cdf + pmf
    count = count + ufuncs.less(cdf, u).astype(_dtype(u))
  return count


def _poisson_peizer_pratt(z, lam):
  x = _peizer_pratt_root(z, lam) + 0.6
  c = ufuncs.ceil(x)

  def zint(c):
    return logic.where(c < 0, -np.inf, _peizer_pratt_z(ufuncs.maximum(c, 0.0), lam))

  def root_ge(c):
    return (zint(c) >= z).astype(_dtype(x))

  return ufuncs.maximum(c + 1 - root_ge(c) - root_ge(c - 1), 0.0)


def _peizer_pratt_root(z, lam):
  s = ufuncs.sqrt(lam)
  return lam + s * z - 2 / 3 + ufuncs.square(z) / 6 + z * (1 - ufuncs.square(z)) / (72 * s)


def _peizer_pratt_z(x, lam):
  y = (x + 0.5) / lam
  t_ = _peizer_pratt_t(y)
  return (x - lam + 2 / 3 + _PEIZER_PRATT_EPS / (x + 1)) * ufuncs.sqrt((1 + t_) / lam)


def _peizer_pratt_t(y):
  """(1 - y^2 + 2 y log y) / (1 - y)^2, by its series near y = 1."""
  d = y - 1
  small = ufuncs.abs(d) < 0.25
  series = creation.zeros_like(d)
  for k in reversed(range(1, 10)):
    series = d * (2 * (-1) ** k / ((k + 1) * (k + 2)) + series)
  y_safe = logic.where(small, 2.0, y)
  d_safe = logic.where(small, 1.0, d)
  direct = (1 - ufuncs.square(y_safe) + 2 * y_safe * ufuncs.log(y_safe)) / ufuncs.square(d_safe)
  return logic.where(small, series, direct)


_STIRLING_TAIL = (0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287)


def _stirling_approx_tail(k):
  """log(k!) - Stirling's approximation: tabulated for k <= 9, a series above."""
  vals = creation.array(_STIRLING_TAIL, dtype=_dtype(k))
  use_tail_values = k <= 9
  k = lax.clamp(_c(k, 0.0), k, _c(k, 9.0))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  k = ufuncs.floor(k)
  return lax.select(use_tail_values, vals[creation.asarray(k, dtype="int32")], approx)


def _binomial_inversion(key, count, prob, shape, dtype, max_iters):
  """Sum geometric waiting times until they exceed `count` (for count * p <= 10)."""
  log1minusprob = ufuncs.log1p(-prob)

  def body_fn(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = _keys(key, 2)
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = uniform(subkey, shape, _dtype(prob))
    geom = ufuncs.ceil(ufuncs.log(u) / log1minusprob)
    return i + np.int32(1), num_geom_out, geom_sum + geom, key

  def cond_fn(carry):
    i, geom_sum = carry[0], carry[2]
    return lax.bitwise_and(_any(geom_sum <= count), _below(i, max_iters))

  zeros = lax.full(shape, 0, _dtype(prob))
  k = lax.while_loop(cond_fn, body_fn, (np.int32(0), zeros, zeros, key))[1]
  return lax.convert_element_type(k - 1, dtype)


def _btrs(key, count, prob, shape, dtype, max_iters):
  """Hormann's transformed rejection with squeeze (BTRS) for count * p > 10."""
  stddev = ufuncs.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = ufuncs.floor((count + 1) * prob)

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _keys(key, 3)
    u = uniform(subkey_0, shape, _dtype(prob))
    v = uniform(subkey_1, shape, _dtype(prob))
    u = u - 0.5
    us = 0.5 - ufuncs.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = ufuncs.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = ufuncs.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * ufuncs.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * ufuncs.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * ufuncs.log(r * (count - k + 1) / (k + 1))
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


@eager_jit.compiled(("shape", "dtype"))
def binomial(key, n, p, shape=None, dtype=None):
  """Binomial(n, p) counts as floats of `dtype`: inversion for n * min(p, 1-p) <= 10,
  BTRS above; NaN for n < 0, NaN n or invalid p, inf for n = inf."""
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
  count_nan_or_neg = ufuncs.isnan(count) | (count < 0.0)
  count_inf = ufuncs.isinf(count)
  q_is_nan = ufuncs.isnan(q)
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = ufuncs.floor(count)
  count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
  max_iters = dt.type(dtypes.finfo(dt).max)
  samples = lax.select(use_inversion,
                       _binomial_inversion(data, count_inv, q, shape, dt, max_iters),
                       _btrs(data, count_btrs, q_btrs, shape, dt, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, creation.full_like(samples, np.nan, dt), samples)
  samples = lax.select(count_inf & (~invalid), creation.full_like(samples, np.inf, dt), samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                    lax.convert_element_type(count, dt) - samples)


@eager_jit.compiled(("shape", "dtype", "unroll"))
def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Multinomial(n, p) counts over p's last axis, as a scan of conditional binomials."""
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
    count = binomial(key, remainder, ufuncs.clip(ratio, 0, 1), dtype=_dtype(remainder))
    return remainder - count, count

  p = shape_ops.moveaxis(p, -1, 0)
  remaining_probs = lax.cumsum(p, 0, reverse=True)
  ratios = p / logic.where(remaining_probs == 0, 1, remaining_probs)
  keys = split(data, _shape(ratios)[0])
  _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "multinomial")
  return lax.convert_element_type(shape_ops.moveaxis(counts, 0, -1), dt)   # JAX: .astype(dtype)

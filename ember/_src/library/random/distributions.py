"""The gamma family, the discrete rejection samplers and the linear-algebra-based samplers
of `ember.random`.

Each sampler ports JAX 0.12's (jax/_src/random/core.py) with the same key splits and the
same sequence of operations, so with the default threefry2x32 (partitionable) PRNG it
draws the same numbers. In float32 the gamma family (gamma, loggamma, beta, dirichlet,
chisquare, t, f), wald, generalized_normal and ball draw XLA:CPU's bits: they evaluate
log / exp / log1p / erf_inv and pow (glibc's powf: prng.py) and rsqrt (`_xla_rsqrt_f32`)
with XLA:CPU's own formulas, fuse the multiply-adds LLVM fuses (`_f32_arith`), flush
subnormal results to zero, and apply XLA's algebraic rewrites (1/3 / sqrt(d) ->
1/3 * rsqrt(d), a / broadcast(b) -> a * (1 / b), (a/b)/(c/d) -> (a d)/(b c),
1 / (1 / p) -> p, g / s**q -> g * s**-q). Not bit for bit: other dtypes (float16 /
bfloat16 use the CPU's native half-precision arithmetic under XLA, float64 XLA's own
float64 functions), method='approximate' (an ulp on ~7% of draws), and outputs whose
short last axis XLA vectorizes across rows (it then drops some fused multiply-adds in
some columns; see tests/test_random_distributions.py `_INEXACT`).

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

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.library.lax import api as lax
from ember._src.library.lax.expansions import two_sum
from ember._src.library.lax.linalg import symmetrize
from ember._src.library.numpy import (
    creation, einsum, indexing, linalg_decompositions, linalg_norms, logic, ufuncs)
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.util import (
    broadcast_shapes, check_arraylike, promote_args_inexact, promote_dtypes_inexact)
from ember._src.primitives.elementwise import fma
from ember._src.library.random.samplers import (
    _bcast, _broadcast_shape, _check_safe_cast, _check_shape, _concrete_int, _exponential,
    _sample_dtype, _split_data as _keys, normal, rademacher, uniform)
from ember._src.library.random.keys import KEY_SHAPE, _as_key_data, _shape_arg, split
from ember._src.library.random.xla_math import (
    _F32, _differentiable, _exp, _ftz, _log, _powf, _xla_pow_f32)
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

def _gamma_one(key, alpha, inv_alpha, log_space: bool):
  """One Gamma(alpha) draw (or its log) from one key. For alpha < 1 it draws
  Gamma(alpha + 1) * U**(1 / alpha) (in log space: + log(U) / alpha, log U = -Exp);
  `inv_alpha` is 1 / alpha (see `_gamma`).

  float32 follows XLA:CPU's compiled code (see `_f32_arith`): 1/3 / sqrt(d) is
  rewritten to 1/3 * rsqrt(d), and the single-use products feeding an add are fused."""
  dt = _dtype(alpha)
  A = _f32_arith if dt == dtypes.float32 else _plain_arith
  zero, one, two, minus_one = (np.array(v, dt) for v in (0, 1, 2, -1))
  half, third, squeeze = (np.array(v, dt) for v in (0.5, 1. / 3., 0.0331))
  boost_mask = lax.ge(alpha, one)
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, third)
  c = A.third_over_sqrt(d)

  def cond_fn(kXVU):
    _, X, V, U = kXVU
    return lax.bitwise_and(
        lax.ge(U, A.fma(lax.neg(lax.mul(X, X)), squeeze, one)),       # 1 - 0.0331 X^2
        # X/2 + d (1 - V + log V): LLVM fuses the first operand's product, X/2 (exact)
        lax.ge(A.log(U), lax.add(lax.mul(X, half),
                                 lax.mul(d, lax.add(lax.sub(one, V), A.log(V))))))

  def next_kxv(kxv):
    key, subkey = _keys(kxv[0], 2)
    x = normal(subkey, (), dt)
    return key, x, A.fma(x, c, one)

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
                           lax.mul(log_samples, inv_alpha))
    return lax.add(lax.add(A.log(d), A.log(V)), log_boost)
  samples = lax.sub(one, uniform(subkey, (), dt))
  boost = lax.select(boost_mask, one, A.pow(samples, inv_alpha))
  return A.ftz(lax.mul(lax.mul(d, V), boost))


class _plain_arith:
  """lax's own operations (dtypes other than float32)."""
  fma = staticmethod(lambda a, b, c: lax.add(lax.mul(a, b), c))
  log = staticmethod(lax.log)
  pow = staticmethod(lax.pow)
  ftz = staticmethod(lambda x: x)
  third_over_sqrt = staticmethod(lambda d: lax.div(_c(d, 1. / 3.), lax.sqrt(d)))


class _f32_arith:
  """float32 as XLA:CPU computes it: LLVM fuses a product with one use into the add or
  subtract it feeds (one rounding), log / pow are XLA's own formulas, and XLA's
  simplifier turns c / sqrt(d) into c * rsqrt(d) (see `_xla_rsqrt_f32`); subnormal
  results are flushed to zero."""
  fma = staticmethod(fma)
  log = staticmethod(_log)
  pow = staticmethod(lambda x, y: _xla_pow_f32(x, y))
  ftz = staticmethod(lambda x: _ftz(x))
  third_over_sqrt = staticmethod(lambda d: lax.mul(_c(d, 1. / 3.), _xla_rsqrt_f32(d)))


# XLA:CPU's float32 rsqrt: the hardware estimate (x86 `rsqrtps`, 12 bits) refined by two
# Newton steps y <- y - y/2 (x y y - 1) with fused multiply-adds. The estimate depends
# only on the exponent's parity and the top 10 mantissa bits of x: its bits for x in
# [1, 4) (exponent 126, 12 mantissa bits, the rest zero) start at 520190 << 11 and fall
# by these steps (read off an Intel Xeon; AMD's estimate differs, and JAX draws differ
# with it). x = 4^j m scales the estimate by 2^-j exactly.
_RSQRTPS_STEPS = (
    "444444444444344444444434444443444434444344434443444344344344344344344343443434434343443434"
    "343434343434343343434334343343433433434334334333433433433343334333433334333343333343333343"
    "333333433333333334333333333333333333333333333333333333233333333333233333332333333233333233"
    "332333323333233323332333233323323332332332332332332332332332323323323233232323323232332323"
    "232323323232323232323232323223232323232232323223232232322323223232232232232322322322322322"
    "322232232232223222322322232223222322223222322223222232222322223222223222222322222232222222"
    "322222222322222222223222222222222222232222222222222222222222222222222222222222222222122222"
    "222222222221222222222221222222222122222222122222212222221222222122222122222122221222212222"
    "122221222212221222212221222122212221222122212221221222122122212212221221221221222122122122"
    "122122122122121221221221212212212212122121221221212212122121212212122121212212121221212121"
    "221212121212122121212121212121212212121212121212121212112121212121212121212112121212121211"
    "212121211212121121212112121211212232333323333233323333233233323323332332332332332332323323"
    "233232332323233232323232332323232323223232323232322323232232322323223223232232232232232232"
    "232232223223222322232223222322232222322223222232222232222232222223222222232222222223222222"
    "222222223222222222222222222222222222222222222222222122222222222222122222222221222222212222"
    "222122222212222212222212222122221222212222122221222122212221222122212221221222122122212212"
    "212221221221221221221221221221212212212212122121221221212212122121212212121221212122121212"
    "121221212121212121221212121212121212121212121121212121212121211212121212112121211212121121"
    "212112121121211212112121121211211212112112121121121121211211211211211211211211211211211121"
    "121121121112112111211211121121112112111211121112111211121112111211121112111121112111121112"
    "111121111211112111121111211111211112111112111112111112111112111111211111121111112111111211"
    "111112111111112111111112111111112111111111121111111111121111111111112111111111111111211111"
    "1111111111111112111111111111111111111111111111111111111111111111111"
)
_RSQRTPS = np.left_shift(np.cumsum([520190] + [-int(ch) for ch in "".join(_RSQRTPS_STEPS)]),
                         11).astype(np.uint32)


def _xla_rsqrt_f32(x):
  """1 / sqrt(x) for float32 x > 0 (also inf -> 0, nan -> nan), as XLA:CPU computes it."""
  u32, i32 = dtypes.uint32, dtypes.int32
  bits = lax.bitcast_convert_type(x, u32)
  e = lax.shift_right_logical(bits, np.uint32(23))
  idx = lax.bitwise_or(lax.shift_left(lax.bitwise_and(lax.add(e, np.uint32(1)), np.uint32(1)),
                                      np.uint32(10)),
                       lax.bitwise_and(lax.shift_right_logical(bits, np.uint32(13)),
                                       np.uint32(0x3FF)))
  est = indexing.take(_RSQRTPS, lax.convert_element_type(idx, i32), mode="clip")
  j = lax.shift_right_arithmetic(lax.sub(lax.convert_element_type(e, i32), np.int32(127)),
                                 np.int32(1))
  y = lax.bitcast_convert_type(
      lax.sub(est, lax.convert_element_type(lax.shift_left(j, np.int32(23)), u32)), _F32)
  for _ in range(2):
    y = fma(lax.mul(y, np.float32(-0.5)), fma(lax.mul(x, y), y, np.float32(-1)), y)
  return lax.select(lax.eq(x, np.float32(np.inf)), lax.full_like(x, 0), y)


_rsqrt_d = _differentiable(lambda x: _xla_rsqrt_f32(x),
                           lambda g, ans, x: lax.mul(g, lax.mul(_c(x, -0.5), lax.div(ans, x))))


def _gamma_impl(key, a, inv_a, log_space: bool):
  """Gamma draws of a's shape: element i uses key i of split(key, a.size)."""
  shape, n = _shape(a), math.prod(_shape(a))
  if n == 0:
    return a
  keys = split(key, n)
  samples = vmap(partial(_gamma_one, log_space=log_space))(keys, lax.reshape(a, (n,)),
                                                           lax.reshape(inv_a, (n,)))
  return lax.reshape(samples, shape)


@functools.lru_cache(maxsize=256)
def _gamma_jaxpr(shape: tuple, dtype, log_space: bool, x64: bool):
  """`_gamma_impl` staged once per (shape, dtype): tracing the vmapped nested rejection
  loops costs far more than running them on small inputs (JAX caches its jit the same
  way). Running the jaxpr binds its equations under whatever trace is current."""
  avals = [ShapedArray(KEY_SHAPE, dtypes.uint32), ShapedArray(shape, dtype),
           ShapedArray(shape, dtype)]
  jaxpr, _ = core.trace_to_jaxpr(
      lambda k, a, inv_a: ([_gamma_impl(k, a, inv_a, log_space)], None), avals)
  return jaxpr


@partial(custom_jvp, nondiff_argnums=(3,))
def _random_gamma(key, a, inv_a, log_space):
  x64 = dtypes.canonicalize_dtype(dtypes.int64) == dtypes.int64
  jaxpr = _gamma_jaxpr(_shape(a), np.dtype(_dtype(a)), log_space, x64)
  return core.eval_jaxpr(jaxpr, jaxpr.consts, key, a, inv_a)[0]


@_random_gamma.defjvp
def _random_gamma_jvp(log_space, primals, tangents):
  key, a, inv_a = primals   # the draws depend on a alone (inv_a is 1 / a)
  _, a_dot, _ = tangents
  ans = _random_gamma(key, a, inv_a, log_space)
  return ans, lax.mul(a_dot, _gamma_grad(ans, a, log_space))


def _gamma_grad(sample, a, log_space: bool):
  if log_space:   # d log(x) = dx / x; exp(log x) may underflow to 0: use the tiniest float
    x = lax.exp(sample)
    x = lax.select(lax.eq(x, _c(x, 0)), lax.full_like(x, dtypes.finfo(_dtype(x)).tiny), x)
    return lax.div(random_gamma_grad(a, x), x)
  return random_gamma_grad(a, sample)


def _gamma(name, key, a, shape, dtype, method, log_space, inv_a=None):
  """`inv_a`: 1 / a when the caller has it as a value XLA would fold 1 / a into: JAX's
  generalized_normal draws Gamma(1 / p), and XLA simplifies 1 / (1 / p) to p."""
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
  inv_a = lax.div(_c(a, 1), a) if inv_a is None else _bcast(lax.convert_element_type(inv_a, dt),
                                                            shape)
  return _random_gamma(data, a, inv_a, log_space)


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


def _polynomial(x, coeffs, fma):
  """lax.polynomial: Horner's rule, highest coefficient first (XLA fuses each step)."""
  coeffs = [_c(x, c) if np.ndim(c) == 0 and not isinstance(c, core.Tracer) else c
            for c in coeffs]
  out = coeffs[-1]
  for c in coeffs[-2::-1]:
    out = fma(out, x, c)
  return out


def _loggamma_chisquare(key, a):
  """log Gamma(a) = log(a) + 3 log(poly(x / sqrt(2a))), x normal (Goldstein's series)."""
  A = _f32_arith if _dtype(a) == dtypes.float32 else _plain_arith
  nu = lax.mul(_c(a, 2), a)
  x = normal(key, _shape(a), _dtype(a))
  u = lax.div(_c(a, 1), nu)
  t_ = lax.mul(x, _rsqrt_d(nu) if _dtype(a) == dtypes.float32 else lax.rsqrt(nu))
  poly = _polynomial(t_, [_polynomial(u, row, A.fma) for row in _CHI2_QUANTILE_COEF], A.fma)
  poly = lax.max(poly, _c(a, dtypes.finfo(_dtype(a)).tiny))
  # not fused: LLVM folds the * 3 into log's special-case selects first
  return lax.add(_log(a), lax.mul(_log(poly), _c(a, 3)))


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
  log_u = lax.neg(_exponential(key_boost, (n, *shape), cdt))
  # sum_k log(U_k) / (a + k), k = 0 .. n-1, added in order
  total = None
  for i in range(n):
    term = lax.div(lax.reshape(lax.slice_in_dim(log_u, i, i + 1, axis=0), shape),
                   lax.add(a, _c(a, i)))
    total = term if total is None else lax.add(total, term)
  log_sample = lax.add(log_base, total)
  out = log_sample if log_space else _exp(log_sample)
  return lax.convert_element_type(out, dtype)


# --- the implicit reparameterization gradient of Gamma(a) w.r.t. a -------------------
# A port of JAX's random_gamma_grad_impl (XLA's RandomGammaGrad): with P(a, x) the
# regularized lower incomplete gamma, dx/da = -(dP/da) / (dP/dx), where dP/da comes from
# P's power series (x <= 1 or x <= a) or Q = 1 - P's continued fraction (Lentz), each run
# as a whole-array loop in which an element stops updating once it has converged.

def random_gamma_grad(a, x):
  """d sample / d a of a Gamma(a, 1) sample x (`jax.lax.random_gamma_grad`)."""
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
  gamma_a_scaled = _exp(lax.sub(log_gamma_a, log_max))   # float32: XLA's exp
  gamma_b_scaled = _exp(lax.sub(log_gamma_b, log_max))
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
  return lax.mul(_exp(log_g), two)


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
  # (chi2_dfn / dfnum) / (chi2_dfd / dfden) as XLA's simplifier rewrites it: dividing by a
  # broadcast dfnum becomes * (1 / dfnum), then one division is left
  ftz = _f32_arith.ftz if dt == dtypes.float32 else _plain_arith.ftz
  if _shape(dfnum) != shape:
    num = ftz(lax.mul(chi2_dfn, _bcast(lax.div(_c(dfnum, 1), dfnum), shape)))
    return lax.div(ftz(lax.mul(num, _bcast(dfden, shape))), chi2_dfd)
  return lax.div(ftz(lax.mul(chi2_dfn, _bcast(dfden, shape))),
                 ftz(lax.mul(_bcast(dfnum, shape), chi2_dfd)))


def generalized_normal(key, p, shape=(), dtype=None):
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


def ball(key, d, p=2, shape=(), dtype=None):
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
  four, half = _c(y, 4), _c(y, 0.5)
  A = _f32_arith if dt == dtypes.float32 else _plain_arith
  # XLA divides by 2 as * 0.5 and fuses 4 mean y + ... and ... - mean/2 sqrt_term
  sqrt_term = lax.sqrt(A.fma(lax.mul(four, mean), y, lax.mul(mean_sq, y_sq)))
  x = A.fma(lax.neg(lax.mul(mean, half)), sqrt_term,
            lax.add(mean, lax.mul(lax.mul(mean_sq, y), half)))
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


# --------------------------------------------------------------------------------------
# Samplers built on linear algebra
# --------------------------------------------------------------------------------------

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


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
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


def orthogonal(key, n, shape=(), dtype=None, m=None):
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

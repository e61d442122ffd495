"""Gamma and loggamma draws of `ember.random`, and their derivative in `a`.

Each sampler ports JAX 0.12's (jax/_src/random/core.py) with the same key splits and the
same sequence of operations, so with the default threefry2x32 (partitionable) PRNG it draws
the same numbers. In float32 gamma and the samplers built on it (`gamma_family`: beta,
dirichlet, chisquare, t, f, generalized_normal, ball; and wald) draw XLA:CPU's bits: they
evaluate log / exp / log1p / erf_inv and pow (glibc's powf: `xla_math`) and rsqrt
(`_xla_rsqrt_f32`) with XLA:CPU's own formulas, fuse the multiply-adds LLVM fuses
(`_f32_arith`), flush subnormal results to zero, and apply XLA's algebraic rewrites
(1/3 / sqrt(d) -> 1/3 * rsqrt(d), a / broadcast(b) -> a * (1 / b), (a/b)/(c/d) -> (a d)/(b c),
1 / (1 / p) -> p, g / s**q -> g * s**-q). Not bit for bit:
other dtypes (float16 / bfloat16 use the CPU's native half-precision arithmetic under XLA,
float64 XLA's own float64 functions), method='approximate' (an ulp on ~7% of draws), and
outputs whose short last axis XLA vectorizes across rows (it then drops some fused
multiply-adds in some columns; see tests/test_random_distributions.py `_INEXACT`).

Gamma draws use Marsaglia & Tsang's rejection method, one `while_loop` per element (each
element owns one key of `split(key, a.size)`) vmapped over the elements: under vmap a
batched loop runs until every element is accepted and keeps each finished element's
carry, so every element's draws are those of its own scalar loop, as in JAX. The
derivative with respect to `a` is the implicit reparameterization gradient
(`random_gamma_grad`): dsample/da = -(dF/da) / (dF/dsample), F the gamma CDF.

The exact sampler binds `random_gamma_p` (JAX's primitive: `random_gamma[log_space
out_sharding] key a`): its lowering and eager evaluation run the draws above as a composite,
its jvp is that gradient, and its batching rule is JAX's (batch axes first; keys batched
over a's leading axes each split over their slice of a).
"""
from __future__ import annotations

import functools
import math
from functools import partial

import numpy as np

from ember._src.primitives import eager_jit
from ember._src import core
from ember._src.base import dtypes
from ember._src import lower as lowering
from ember._src.core import ShapedArray
from ember._src.core.primitive import Primitive
from ember._src.library.lax import api as lax
from ember._src.library.lax.special import random_gamma_grad
from ember._src.library.numpy import indexing
from ember._src.library.numpy.util import promote_args_inexact
from ember._src.primitives.elementwise import fma
from ember._src.library.random.samplers import (
    _bcast, _broadcast_shape, _check_shape, _exponential, _sample_dtype, _split_data as _keys,
    normal, uniform)
from ember._src.library.random.keys import KEY_SHAPE, PRNGKeyArray, key_data, split
from ember._src.library.random.util import _any, _canon_shape, _dtype, _key, _method, _shape
from ember._src.library.random.xla_math import _differentiable, _exp, _log
from ember._src.library.random.xla_math.common import _F32, _ftz
from ember._src.library.random.xla_math.common import _cst as _c   # a constant of x's dtype
from ember._src.library.random.xla_math.pow import _xla_pow_f32
from ember._src.transforms import ad
from ember._src.transforms.batching import bdim_at_front, vmap


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
  """Gamma draws of a's shape. `key` is one key's data, or keys of shape `lead + (2,)`
  with `lead` a prefix of a's shape: each key is split into one key per element of its
  slice of `a` (JAX's `_gamma_impl_local`); for one key element i uses key i of
  split(key, a.size)."""
  shape, n = _shape(a), math.prod(_shape(a))
  if n == 0:
    return a
  lead = _shape(key)[:-1]
  if lead:
    per_key = math.prod(shape[len(lead):])
    flat_keys = lax.reshape(key, (math.prod(lead), *KEY_SHAPE))
    keys = lax.reshape(vmap(lambda k: split(k, per_key))(flat_keys), (n, *KEY_SHAPE))
  else:
    keys = split(key, n)
  samples = vmap(partial(_gamma_one, log_space=log_space))(keys, lax.reshape(a, (n,)),
                                                           lax.reshape(inv_a, (n,)))
  return lax.reshape(samples, shape)


@functools.lru_cache(maxsize=256)
def _gamma_jaxpr(key_shape: tuple, shape: tuple, dtype, log_space: bool, x64: bool):
  """`_gamma_impl` staged once per (shapes, dtype): tracing the vmapped nested rejection
  loops costs far more than running them on small inputs (JAX caches its jit the same
  way). Running the jaxpr binds its equations under whatever trace is current."""
  avals = [ShapedArray(key_shape, dtypes.uint32), ShapedArray(shape, dtype),
           ShapedArray(shape, dtype)]
  jaxpr, _ = core.trace_to_jaxpr(
      lambda k, a, inv_a: ([_gamma_impl(k, a, inv_a, log_space)], None), avals)
  return jaxpr


def _random_gamma_composite(key, a, *inv_a, log_space, out_sharding=None):
  """random_gamma_p's value: the draws as a composite of lax ops (its lowering and eager
  evaluation). `inv_a` (ember's optional third operand) is 1 / a as the caller computed it."""
  del out_sharding   # one device: the draws are the same however they would be sharded
  _random_gamma_abstract_eval(*map(core.get_aval, (key, a, *inv_a)), log_space=log_space)
  inv_a = inv_a[0] if inv_a else lax.div(_c(a, 1), a)
  x64 = dtypes.canonicalize_dtype(dtypes.int64) == dtypes.int64
  jaxpr = _gamma_jaxpr(_shape(key), _shape(a), np.dtype(_dtype(a)), log_space, x64)
  return core.eval_jaxpr(jaxpr, jaxpr.consts, key, a, inv_a)[0]


def _random_gamma_abstract_eval(key, a, *inv_a, log_space, out_sharding=None):
  if key.dtype != dtypes.uint32 or key.shape[-1:] != KEY_SHAPE:
    raise TypeError(f"random_gamma: key must be a PRNG key or its uint32[..., 2] data, got "
                    f"{key.str_short()}")
  if not dtypes.issubdtype(a.dtype, np.floating):
    raise TypeError(f"random_gamma: a must be floating, got {a.str_short()}")
  if a.shape[:key.ndim - 1] != key.shape[:-1]:
    raise ValueError(f"random_gamma leading shape of a {a.shape} must match key shape "
                     f"{key.shape[:-1]}.")
  if inv_a and (len(inv_a) > 1 or (inv_a[0].shape, inv_a[0].dtype) != (a.shape, a.dtype)):
    raise TypeError("random_gamma: the optional third operand (1 / a) must be like a")
  return ShapedArray(a.shape, a.dtype)


class _KeyedPrimitive(Primitive):
  """A primitive whose first operand is a PRNG key: a typed key binds as its data (ember's
  typed keys wrap it), so JAX's `random_gamma_p.bind(key, a, ...)` works as written."""

  def bind(self, key, /, *args, **params):
    return super().bind(key_data(key) if isinstance(key, PRNGKeyArray) else key, *args,
                        **params)


def _random_gamma_batch(axis_data, vals, dims, **params):
  """JAX's rule: the batch axis first on every operand (a key per batch element)."""
  if all(d is None for d in dims):
    return random_gamma_p.bind(*vals, **params), None
  vals = [bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
  return random_gamma_p.bind(*vals, **params), 0


# JAX's random_gamma_p (`random_gamma[log_space out_sharding] key a`): the sampler's one
# equation; differentiable in `a` by the implicit reparameterization gradient
random_gamma_p = _KeyedPrimitive("random_gamma")
random_gamma_p.abstract_eval = _random_gamma_abstract_eval
random_gamma_p.eval_rule = _random_gamma_composite   # op by op, as the sampler ran before
random_gamma_p.impl = lambda *xs, **params: np.asarray(_random_gamma_composite(*xs, **params))
random_gamma_p.lower = lowering.lower_fun(_random_gamma_composite, multiple_results=False)
random_gamma_p.batch = _random_gamma_batch


def _gamma_grad(sample, a, log_space: bool):
  if log_space:   # d log(x) = dx / x; exp(log x) may underflow to 0: use the tiniest float
    x = lax.exp(sample)
    x = lax.select(lax.eq(x, _c(x, 0)), lax.full_like(x, dtypes.finfo(_dtype(x)).tiny), x)
    return lax.div(random_gamma_grad(a, x), x)
  return random_gamma_grad(a, sample)


ad.defjvp2(random_gamma_p, None,   # the draws depend on a alone (inv_a is 1 / a)
           lambda g, ans, key, a, *inv_a, log_space, out_sharding=None:
           lax.mul(g, _gamma_grad(ans, a, log_space)))


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
  inv_a = () if inv_a is None else (_bcast(lax.convert_element_type(inv_a, dt), shape),)
  return random_gamma_p.bind(data, a, *inv_a, log_space=log_space, out_sharding=None)


@eager_jit.compiled(("shape", "dtype", "method"))
def gamma(key, a, shape=None, dtype=None, *, method="exact", out_sharding=None):
  """Standard Gamma(a) samples (unit scale). method: 'exact' (Marsaglia-Tsang rejection,
  differentiable in `a`) or 'approximate' (loop-free, slightly biased)."""
  return _gamma("gamma", key, a, shape, dtype, method, False)


@eager_jit.compiled(("shape", "dtype", "method"))
def loggamma(key, a, shape=None, dtype=None, *, method="exact", out_sharding=None):
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

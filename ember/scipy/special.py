"""ember.scipy.special (jax.scipy.special): logsumexp, softmax, and the special functions
built on lax's erf/lgamma/digamma/logistic primitives, written as
jax/_src/scipy/special.py writes them (same branches, constants and custom JVPs).

The incomplete gamma and beta functions, polygamma, zeta and the order 0/1 modified Bessel
functions call the lax composites of ember/_src/library/lax/special.py (lax.igamma, ...).

erfcx is real-valued only (JAX's complex erfcx goes through the Faddeeva function, not
provided here). exp1 and expi are power series near 0, a continued fraction (E1) or the
asymptotic series (Ei) beyond; expn the same series and continued fraction for E_n (these
and erfcx are ember's own algorithms, with JAX's edge values and derivatives). erfcinv and
ndtri_exp (here, beside ndtri and log_ndtr) go through ndtri. The others live in
ember/_src/library/scipy: special_misc (bernoulli, comb, poch, spence, dawsn, owens_t,
wofz, sici, fresnel), gammaincinv, hypergeometric (hyp1f1, hyp2f1), spherical
(sph_harm_y). Not provided yet: the Bessel functions jn, yn, iv, kn."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

import ember.numpy as jnp
from ember._src import core
from ember._src.base import dtypes
from ember._src.base.config import config
from ember._src.library.lax import api as lax
from ember._src.library.lax import special as lax_special
from ember._src.driver.jit import jit
from ember._src.library.numpy import util
from ember._src.library.scipy.expint import erfcx, exp1, expi, expn  # noqa: F401
from ember._src.library.scipy.gammaincinv import gammainccinv, gammaincinv  # noqa: F401
from ember._src.library.scipy.hypergeometric import hyp1f1, hyp2f1  # noqa: F401
from ember._src.library.scipy.spherical import sph_harm_y  # noqa: F401
from ember._src.library.scipy.special_misc import (  # noqa: F401
    bernoulli, comb, dawsn, fresnel, owens_t, poch, sici, spence, wofz)
from ember._src.library.numpy.reductions import aval, reduction_dims, static_axes
from ember._src.library.numpy.ufuncs import _const  # JAX's lax._const: weak for weak scalars
from ember._src.primitives.elementwise import convert_element_type
from ember._src.transforms.custom_derivatives import custom_jvp

__all__ = ["logsumexp", "softmax", "log_softmax", "erf", "erfc", "erfinv", "expit",
           "logit", "gammaln", "loggamma", "gammasgn", "gamma", "digamma", "betaln", "beta",
           "factorial", "multigammaln", "xlogy", "xlog1py", "entr", "rel_entr", "kl_div",
           "boxcox", "boxcox1p", "ndtr", "ndtri", "log_ndtr", "gammainc", "gammaincc",
           "betainc", "polygamma", "zeta", "i0", "i0e", "i1", "i1e", "erfcx", "exp1", "expi",
           "expn", "bernoulli", "comb", "dawsn", "fresnel", "owens_t", "poch", "sici", "spence",
           "wofz", "gammaincinv", "gammainccinv", "erfcinv", "ndtri_exp", "hyp1f1", "hyp2f1",
           "sph_harm_y"]


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log(sum(b * exp(a))) over `axis`, computed stably by subtracting the (gradient-
  stopped) max. With `return_sign=True` returns (log|sum|, sign(sum)); otherwise a
  negative sum gives NaN."""
  if where is not None:  # masked-out entries must not reach exp (NaN gradients otherwise)
    a = jnp.where(where, a, 0)
  if b is not None:
    a_arr, b_arr = util.promote_args_inexact("logsumexp", a, b)
    a_arr = jnp.where(lax.ne(b_arr, _const(b_arr, 0)), a_arr, -np.inf)
  else:
    a_arr, = util.promote_args_inexact("logsumexp", a)
    b_arr = None
  dims = reduction_dims(aval(a_arr).ndim, static_axes(axis, "logsumexp"))
  real = lax.real(a_arr) if dtypes.is_complex(aval(a_arr).dtype) else a_arr
  amax = jnp.max(real, axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
  amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax, lax.full_like(amax, 0)))
  amax_with_dims = amax if keepdims else lax.expand_dims(amax, dims)
  exp_a = lax.exp(lax.sub(a_arr, convert_element_type(amax_with_dims, aval(a_arr).dtype)))
  if b_arr is not None:
    exp_a = lax.mul(exp_a, b_arr)
  sumexp = jnp.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
  sign = lax.sign(sumexp)
  if return_sign or not dtypes.is_complex(aval(a_arr).dtype):
    sumexp = lax.abs(sumexp)
  out = lax.add(lax.log(sumexp), convert_element_type(amax, aval(sumexp).dtype))
  if return_sign:
    return out, sign
  if b_arr is not None and not dtypes.is_complex(aval(out).dtype):
    out = jnp.where(lax.lt(sign, _const(sign, 0)), np.array(np.nan, aval(out).dtype), out)
  return out


def _softmax_by_flag(x, axis, where):
  """softmax with JAX's custom_jvp rule when jax_softmax_custom_jvp is on (the default),
  else the rule autodiff derives (JAX's former softmax); the flag is part of jit's key."""
  if config._values["jax_softmax_custom_jvp"]:
    return _softmax(x, axis, where)
  return _softmax_autodiff(x, axis, where)


def _softmax_autodiff(x, axis, where):
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  unnormalized = jnp.exp(jnp.subtract(x_safe, lax.stop_gradient(x_max)))
  result = jnp.divide(unnormalized, jnp.sum(unnormalized, axis, where=where, keepdims=True))
  return result if where is None else jnp.where(where, result, 0)


@partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis, where):
  """JAX's softmax: no stop_gradient on the max, the rule below is its derivative."""
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  unnormalized = jnp.exp(jnp.subtract(x_safe, x_max))
  result = jnp.divide(unnormalized, jnp.sum(unnormalized, axis, where=where, keepdims=True))
  return result if where is None else jnp.where(where, result, 0)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  """d softmax = y * (dx - sum(y * dx)), masked positions kept at zero."""
  (x, where), (x_dot, _) = primals, tangents
  y = _softmax(x, axis, where)
  if where is not None:
    x_dot = jnp.where(where, x_dot, 0)
  inner = jnp.sum(jnp.multiply(y, x_dot), axis, where=where, keepdims=True)
  y_dot = jnp.multiply(y, jnp.subtract(x_dot, inner))
  return y, (y_dot if where is None else jnp.where(where, y_dot, 0))


def _log_softmax(x, axis, where):
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  shifted = jnp.subtract(x_safe, lax.stop_gradient(x_max))
  shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  result = jnp.subtract(shifted, shifted_logsumexp)
  return result if where is None else jnp.where(where, result, -np.inf)


def softmax(x, /, *, axis=None):
  """exp(x) / sum(exp(x)) over `axis` (all axes by default)."""
  return _softmax_by_flag(x, axis, None)


def log_softmax(x, /, *, axis=None):
  """x - logsumexp(x) over `axis` (all axes by default)."""
  return _log_softmax(x, axis, None)


def _inexact_unary(name, lax_fn):
  def fn(x):
    x, = util.promote_args_inexact(name, x)
    return lax_fn(x)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"{name}(x) elementwise (integers promote to the default float dtype)."
  return fn


erf = _inexact_unary("erf", lambda x: lax.erf(x))
erfc = _inexact_unary("erfc", lambda x: lax.erfc(x))
erfinv = _inexact_unary("erfinv", lambda x: lax.erf_inv(x))
expit = _inexact_unary("expit", lambda x: lax.logistic(x))
gammaln = _inexact_unary("gammaln", lambda x: lax.lgamma(x))
digamma = _inexact_unary("digamma", lambda x: lax.digamma(x))


@custom_jvp
def logit(x):
  """log(x / (1 - x)), the inverse of expit."""
  x, = util.promote_args_inexact("logit", x)
  return lax.log(lax.div(x, lax.sub(_const(x, 1), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_const(x, 1), x))))


def _real_only(name, x):
  if dtypes.is_complex(aval(x).dtype):
    raise ValueError(f"{name} does not support complex-valued inputs.")


def gammasgn(x):
  """The sign of gamma(x): NaN at the poles (non-positive integers) and for NaN, -1 where
  gamma is negative (and at -0.0), else 1."""
  x, = util.promote_args_inexact("gammasgn", x)
  _real_only("gammasgn", x)
  typ = aval(x).dtype.type
  floor_x = lax.floor(x)
  x_negative = lax.lt(x, _const(x, 0))
  nan_mask = jnp.logical_or(jnp.logical_and(x_negative, lax.eq(x, floor_x)), jnp.isnan(x))
  neg_mask = jnp.logical_or(
      jnp.logical_and(x_negative, jnp.not_equal(jnp.remainder(floor_x, 2), 0)),
      jnp.logical_and(lax.eq(x, _const(x, 0)), jnp.signbit(x)))
  return jnp.select([nan_mask, neg_mask], [typ(np.nan), typ(-1.0)], typ(1.0))


def loggamma(x):
  """log(gamma(x)) for real x > 0, NaN elsewhere (complex inputs are not supported)."""
  x, = util.promote_args_inexact("loggamma", x)
  _real_only("loggamma (in ember)", x)
  return jnp.where(lax.gt(x, _const(x, 0)), lax.lgamma(x), np.nan)


def gamma(x):
  """The gamma function, sign(gamma(x)) * exp(lgamma(x)) (real inputs only)."""
  x, = util.promote_args_inexact("gamma", x)
  _real_only("gamma (in ember)", x)
  return jnp.multiply(gammasgn(x), lax.exp(lax.lgamma(x)))


def _algdiv(a, b):
  """log(gamma(b) / gamma(a + b)) for b >= 8 (and a <= b), from scipy's cdflib algdiv."""
  c0, c1, c2 = 0.833333333333333e-01, -0.277777777760991e-02, 0.793650666825390e-03
  c3, c4, c5 = -0.595202931351870e-03, 0.837308034031215e-03, -0.165322962780713e-02
  h = a / b
  c = x = h / (1 + h)
  d = b + (a - 0.5)
  x2 = x * x  # s_n = (1 - x**n) / (1 - x)
  s3 = 1.0 + (x + x2)
  s5 = 1.0 + (x + x2 * s3)
  s7 = 1.0 + (x + x2 * s5)
  s9 = 1.0 + (x + x2 * s7)
  s11 = 1.0 + (x + x2 * s9)
  t = (1.0 / b) ** 2  # w = del(b) - del(a + b), del the Stirling remainder of lgamma
  w = ((((c5 * s11 * t + c4 * s9) * t + c3 * s7) * t + c2 * s5) * t + c1 * s3) * t + c0
  w = w * (c / b)
  u = d * lax.log1p(a / b)
  v = a * (lax.log(b) - 1.0)
  return jnp.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
  """log|B(a, b)|; for max(a, b) >= 8 through algdiv, which keeps the precision that
  lgamma(a) + lgamma(b) - lgamma(a + b) loses to cancellation."""
  a, b = util.promote_args_inexact("betaln", a, b)
  a, b = jnp.minimum(a, b), jnp.maximum(a, b)
  small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
  large_b = lax.lgamma(a) + _algdiv(a, b)
  return jnp.where(b < 8, small_b, large_b)


def beta(a, b):
  """The beta function B(a, b) = gamma(a) gamma(b) / gamma(a + b)."""
  a, b = util.promote_args_inexact("beta", a, b)
  _real_only("beta", a)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * lax.exp(betaln(a, b))


def factorial(n, exact: bool = False):
  """n! = gamma(n + 1) (0 for n < 0); exact=True is not supported, as in JAX."""
  if exact:
    raise ValueError("factorial with exact=True is not supported (as in JAX); use "
                     "exact=False.")
  n, = util.promote_args_inexact("factorial", n)
  return jnp.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def multigammaln(a, d):
  """log of the multivariate gamma function of dimension d (a static int)."""
  d = core.concrete_or_error(
      int, d, "The error arose in the d argument of multigammaln, which must be a static int.")
  a, d_ = util.promote_args_inexact("multigammaln", a, d)
  constant = lax.mul(lax.mul(lax.mul(_const(a, 0.25), d_), lax.sub(d_, _const(a, 1))),
                     lax.log(_const(a, np.pi)))
  b = lax.div(jnp.arange(d, dtype=aval(d_).dtype), _const(a, 2))
  res = jnp.sum(gammaln(jnp.expand_dims(a, axis=-1)
                        - jnp.expand_dims(b, axis=tuple(range(aval(a).ndim)))), axis=-1)
  return res + constant


def _x_log(name, log_fn, dy_fn):
  """x * log_fn(y), 0 where x == 0 unless y is NaN (scipy); a custom JVP gives
  d/dx = log_fn(y), d/dy = dy_fn(x, y) (JAX's rule: (-inf, NaN) at x == y == 0)."""
  @custom_jvp
  def fn(x, y):
    x, y = util.promote_args_inexact(name, x, y)
    x_ok = lax.ne(x, _const(x, 0))
    return jnp.where(jnp.logical_or(x_ok, jnp.isnan(y)), lax.mul(x, log_fn(y)),
                     jnp.zeros_like(x))

  def jvp(primals, tangents):
    (x, y), (x_dot, y_dot) = primals, tangents
    result = fn(x, y)
    x, y = jnp.asarray(x), jnp.asarray(y)
    t = jnp.add(jnp.multiply(x_dot, log_fn(y)), jnp.multiply(y_dot, dy_fn(x, y)))
    return result, t.astype(aval(result).dtype)

  jvp.__name__ = jvp.__qualname__ = f"_{name}_jvp"  # as JAX's jaxprs print it
  fn.defjvp(jvp)
  fn.__name__ = fn.__qualname__ = fn.fun.__name__ = fn.fun.__qualname__ = name
  return fn


xlogy = _x_log("xlogy", lambda y: lax.log(y), lambda x, y: jnp.divide(x, y))
xlogy.__doc__ = "x * log(y), and 0 where x == 0 (unless y is NaN)."
xlog1py = _x_log("xlog1py", lambda y: lax.log1p(y), lambda x, y: jnp.divide(x, 1 + y))
xlog1py.__doc__ = "x * log1p(y), and 0 where x == 0 (unless y is NaN)."


@custom_jvp
def _xlogx(x):
  """x log(x), with the derivative log(x) + 1 (xlogy's rule would give NaN at 0 * inf)."""
  return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x):
  """-x log(x) for x > 0, 0 at 0, -inf for x < 0."""
  x, = util.promote_args_inexact("entr", x)
  _real_only("entr", x)
  return lax.select(lax.lt(x, _const(x, 0)), lax.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def _log_p_over_q(safe_p, safe_q):
  """log(p / q) three ways: log1p((p - q) / q) for p/q in (0.5, 2) (no cancellation),
  log(p / q) while the ratio is a normal number, else log(p) - log(q) (no over/underflow)."""
  ratio = lax.div(safe_p, safe_q)
  near_one = lax.bitwise_and(lax.gt(ratio, _const(safe_p, 0.5)), lax.lt(ratio, _const(safe_p, 2.0)))
  tiny = _const(safe_p, dtypes.finfo(aval(safe_p).dtype).tiny)
  normal_ratio = lax.bitwise_and(lax.gt(ratio, tiny), lax.lt(ratio, _const(safe_p, np.inf)))
  near_one_p = jnp.where(near_one, safe_p, 1)
  near_one_q = jnp.where(near_one, safe_q, 1)
  near_one_delta = lax.sub(near_one_p, near_one_q)
  safe_rel_diff = lax.div(near_one_delta, near_one_q)
  safe_ratio = jnp.where(normal_ratio, ratio, 1)
  log_p_over_q = jnp.where(
      near_one, lax.log1p(safe_rel_diff),
      jnp.where(normal_ratio, lax.log(safe_ratio), lax.sub(lax.log(safe_p), lax.log(safe_q))))
  return log_p_over_q, ratio, near_one, near_one_delta, safe_rel_diff


def _rel_entr_masks(p, q):
  zero = _const(p, 0.0)
  nan_mask = lax.bitwise_or(jnp.isnan(p), jnp.isnan(q))
  both_gt_zero_mask = lax.bitwise_and(lax.gt(p, zero), lax.gt(q, zero))
  one_zero_mask = lax.bitwise_and(lax.eq(p, zero), lax.ge(q, zero))
  return (zero, nan_mask, both_gt_zero_mask, one_zero_mask,
          jnp.where(both_gt_zero_mask, p, 1), jnp.where(both_gt_zero_mask, q, 1))


def _rel_entr_impl(p, q, kl):
  """p log(p/q) (kl: p log(p/q) - p + q, by a series near p == q); NaN in, NaN out."""
  zero, nan_mask, both_gt_zero_mask, one_zero_mask, safe_p, safe_q = _rel_entr_masks(p, q)
  log_p_over_q, _, near_one, near_one_delta, u = _log_p_over_q(safe_p, safe_q)
  log_val = lax.mul(safe_p, log_p_over_q)
  if kl:  # (p - q) u (1/2 - u/6 + u^2/12 - ...), u = (p - q)/q: no cancellation near p == q
    c1, c2, c3, c4, c5 = (_const(p, c) for c in (1 / 2, 1 / 6, 1 / 12, 1 / 20, 1 / 30))
    poly = c1 - u * (c2 - u * (c3 - u * (c4 - u * c5)))
    series_val = lax.mul(lax.mul(near_one_delta, u), poly)
    small_u = lax.bitwise_and(near_one, lax.lt(lax.abs(u), _const(p, 0.05)))
    pos_val = jnp.where(small_u, series_val, lax.sub(log_val, lax.sub(safe_p, safe_q)))
  else:
    pos_val = log_val
  return jnp.where(nan_mask, _const(p, np.nan),
                   jnp.where(both_gt_zero_mask, pos_val,
                             jnp.where(one_zero_mask, q if kl else zero, _const(p, np.inf))))


_rel_entr_impl.__name__ = _rel_entr_impl.__qualname__ = "_rel_entr"
_rel_entr = custom_jvp(jit(_rel_entr_impl, static_argnums=(2,)), nondiff_argnums=(2,))


@_rel_entr.defjvp
def _rel_entr_jvp(kl, primals, tangents):
  (p, q), (p_dot, q_dot) = primals, tangents
  ans = _rel_entr(p, q, kl)
  zero, nan_mask, both_gt_zero_mask, one_zero_mask, safe_p, safe_q = _rel_entr_masks(p, q)
  log_p_over_q, ratio, _, _, _ = _log_p_over_q(safe_p, safe_q)
  if kl:  # d/dp = log(p/q), d/dq = 1 - p/q
    not_posinf_q = lax.lt(safe_q, _const(p, np.inf))
    finite_p = jnp.where(not_posinf_q, safe_p, 1)
    finite_q = jnp.where(not_posinf_q, safe_q, 1)
    rel_diff = jnp.where(not_posinf_q, lax.div(lax.sub(finite_p, finite_q), finite_q),
                         _const(p, -1.0))
    dp_pos, dq_pos = log_p_over_q, lax.neg(rel_diff)
  else:  # d/dp = log(p/q) + 1, d/dq = -p/q
    dp_pos, dq_pos = lax.add(log_p_over_q, _const(p, 1.0)), lax.neg(ratio)
  nan = _const(p, np.nan)
  dp = jnp.where(nan_mask, nan, jnp.where(both_gt_zero_mask, dp_pos, zero))
  dq = jnp.where(nan_mask, nan, jnp.where(both_gt_zero_mask, dq_pos,
                                          jnp.where(one_zero_mask, _const(p, 1.0 if kl else 0.0),
                                                    zero)))
  ans_dot = lax.add(lax.mul(p_dot, dp), lax.mul(q_dot, dq))
  return ans, ans_dot.astype(aval(ans).dtype)


def rel_entr(p, q):
  """p log(p / q) for p, q > 0; 0 for p == 0 <= q; inf otherwise; NaN for NaN inputs."""
  p, q = util.promote_args_inexact("rel_entr", p, q)
  _real_only("rel_entr", p)
  return _rel_entr(p, q, False)


def kl_div(p, q):
  """p log(p / q) - p + q (q for p == 0 <= q), accurate near p == q."""
  p, q = util.promote_args_inexact("kl_div", p, q)
  _real_only("kl_div", p)
  return _rel_entr(p, q, True)


def _boxcox(name, log_fn):
  def fn(x, lmbda):
    x, lmbda = util.promote_args_inexact(name, x, lmbda)
    lmbda_is_zero = lax.eq(lmbda, _const(lmbda, 0))
    safe_lmbda = jnp.where(lmbda_is_zero, jnp.ones_like(lmbda), lmbda)
    log_x = log_fn(x)
    power_branch = jnp.expm1(safe_lmbda * log_x) / safe_lmbda
    return jnp.where(lmbda_is_zero, log_x, power_branch)
  fn.__name__ = fn.__qualname__ = name
  return fn


boxcox = _boxcox("boxcox", jnp.log)
boxcox.__doc__ = "(x**lmbda - 1) / lmbda, or log(x) where lmbda == 0."
boxcox1p = _boxcox("boxcox1p", jnp.log1p)
boxcox1p.__doc__ = "((1 + x)**lmbda - 1) / lmbda, or log1p(x) where lmbda == 0."


def _float_only(x, suffix=", see docstring for supported types"):
  dt = aval(x).dtype
  if dt not in (np.float32, np.float64):  # JAX's messages (float32/float64 only)
    raise TypeError(f"x.dtype={dt} is not supported{suffix}.")


def _ndtr(x):
  """Phi(x) through erf near 0 and erfc in the tails (no cancellation either side)."""
  dtype = aval(x).dtype.type
  half_sqrt_2 = dtype(0.5) * np.sqrt(2.0, dtype=dtype)
  w = jnp.multiply(x, half_sqrt_2)   # jnp, as JAX's `x * c`: a weak x is made strong
  z = lax.abs(w)
  y = lax.select(lax.lt(z, half_sqrt_2), lax.add(dtype(1.0), lax.erf(w)),
                 lax.select(lax.gt(w, dtype(0.0)), lax.sub(dtype(2.0), lax.erfc(z)),
                            lax.erfc(z)))
  return lax.mul(dtype(0.5), y)


def ndtr(x):
  """The standard normal CDF, Phi(x) (float32/float64 only, as JAX)."""
  x = jnp.asarray(x)
  _float_only(x)
  return _ndtr(x)


# Cephes ndtri: rational approximations on [exp(-2), 1 - exp(-2)] and two tail ranges.
_NDTRI_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0]
_NDTRI_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0]
_NDTRI_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2,
             -8.57456785154685413611E-4]
_NDTRI_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4]
_NDTRI_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
_NDTRI_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9]


def ndtri(p):
  """The inverse of ndtr: the x with Phi(x) == p (-inf at 0, inf at 1, NaN outside)."""
  p = jnp.asarray(p)
  _float_only(p)
  return _ndtri(p)


@custom_jvp
def _ndtri(p):
  """Cephes' ndtri (JAX 0.12 evaluates the same function through erf_inv_core)."""
  dtype = aval(p).dtype.type
  shape = aval(p).shape
  polyval = lambda c, v: jnp.polyval(np.array(c, dtype), v)
  maybe_complement_p = jnp.where(p > dtype(-np.expm1(-2.0)), dtype(1.0) - p, p)
  sanitized_mcp = jnp.where(maybe_complement_p == dtype(0.0),
                            jnp.full(shape, dtype(0.5)), maybe_complement_p)
  w = sanitized_mcp - dtype(0.5)  # central range: w + w^3 R(w^2)
  ww = lax.square(w)
  x_for_big_p = w + w * ww * (polyval(_NDTRI_P0, ww) / polyval(_NDTRI_Q0, ww))
  x_for_big_p = x_for_big_p * -dtype(np.sqrt(2.0 * np.pi))
  z = lax.sqrt(dtype(-2.0) * lax.log(sanitized_mcp))  # tails: z - log(z)/z - R(1/z)/z
  first_term = z - lax.log(z) / z
  second_term_small_p = polyval(_NDTRI_P2, 1 / z) / polyval(_NDTRI_Q2, 1 / z) / z
  second_term_otherwise = polyval(_NDTRI_P1, 1 / z) / polyval(_NDTRI_Q1, 1 / z) / z
  x_for_small_p = first_term - second_term_small_p
  x_otherwise = first_term - second_term_otherwise
  x = jnp.where(sanitized_mcp > dtype(np.exp(-2.0)), x_for_big_p,
                jnp.where(z >= dtype(8.0), x_for_small_p, x_otherwise))
  x = jnp.where(p > dtype(1.0 - np.exp(-2.0)), x, -x)
  infinity = jnp.full(shape, dtype(np.inf))
  return jnp.where(p == dtype(0.0), -infinity, jnp.where(p == dtype(1.0), infinity, x))


_ndtri.__name__ = _ndtri.fun.__name__ = _ndtri.fun.__qualname__ = "ndtri"


@_ndtri.defjvp
def _ndtri_jvp(primals, tangents):
  (p,), (p_dot,) = primals, tangents  # 1 / phi(x) = sqrt(2 pi) exp(x^2 / 2)
  x = _ndtri(p)
  return x, p_dot * (np.sqrt(2 * np.pi).astype(aval(x).dtype) * lax.exp(0.5 * lax.square(x)))


# log_ndtr switches to log(1 - Phi(-x)) above UPPER and to an asymptotic series below LOWER.
_LOGNDTR_SEGMENTS = {np.dtype(np.float64): (np.array(-20, np.float64), np.array(8, np.float64)),
                     np.dtype(np.float32): (np.array(-10, np.float32), np.array(5, np.float32))}
_NORM_LOGPDF_CONSTANT = np.log(np.sqrt(2 * np.pi))


def _norm_logpdf(x):
  return lax.sub(lax.mul(_const(x, -0.5), lax.square(x)), _const(x, _NORM_LOGPDF_CONSTANT))


def _log_ndtr_asymptotic_series(x, series_order):
  dtype = aval(x).dtype.type
  if series_order <= 0:
    return np.array(1, dtype)
  x_2 = lax.square(x)
  even_sum = jnp.zeros_like(x)
  odd_sum = jnp.zeros_like(x)
  x_2n = x_2
  for n in range(1, series_order + 1):
    y = np.array(np.prod(np.arange(2 * n - 1, 1, -2)), dtype) / x_2n  # (2n-1)!! / x^2n
    if n % 2:
      odd_sum = odd_sum + y
    else:
      even_sum = even_sum + y
    x_2n = x_2n * x_2
  return dtype(1.0) + even_sum - odd_sum


def _log_ndtr_lower(x, series_order):
  dtype = aval(x).dtype.type
  log_scale = -dtype(0.5) * lax.square(x) - lax.log(-x) - dtype(0.5 * np.log(2.0 * np.pi))
  return log_scale + lax.log(_log_ndtr_asymptotic_series(x, series_order))


def log_ndtr(x, series_order: int = 3):
  """log(Phi(x)), accurate far into both tails (float32/float64 only, as JAX)."""
  if not isinstance(series_order, int):
    raise TypeError("series_order must be a Python integer.")
  if series_order < 0:
    raise ValueError("series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("series_order must be <= 30.")
  x = jnp.asarray(x)
  _float_only(x, "")
  # series_order is passed explicitly: ember's custom_jvp does not fill in defaults of
  # nondiff arguments
  return _log_ndtr(x, series_order)


def _log_ndtr_impl(x, series_order):
  lower_segment, upper_segment = _LOGNDTR_SEGMENTS[aval(x).dtype]
  x_gt_upper = lax.gt(x, upper_segment)
  ndtr_res = _ndtr(jnp.where(x_gt_upper, -x, lax.max(x, lower_segment)))
  return jnp.where(x_gt_upper, -ndtr_res,  # log(1 - e) ~ -e for the tiny upper tail
                   jnp.where(lax.gt(x, lower_segment), lax.log(ndtr_res),
                             _log_ndtr_lower(lax.min(x, lower_segment), series_order)))


_log_ndtr_impl.__name__ = _log_ndtr_impl.__qualname__ = "log_ndtr"  # the jaxpr name
_log_ndtr = custom_jvp(_log_ndtr_impl, nondiff_argnums=(1,))


@_log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
  (x,), (t,) = primals, tangents  # d log Phi = phi / Phi, formed in log space
  ans = _log_ndtr(x, series_order)
  return ans, lax.mul(t, lax.exp(lax.sub(_norm_logpdf(x), ans)))


def _in_float32_if_narrow(fn, x):
  if dtypes.finfo(aval(x).dtype).bits < 32:
    return fn(x.astype(np.float32)).astype(aval(x).dtype)
  return fn(x)


def erfcinv(y):
  """The inverse of erfc on [0, 2]: inf at 0, -inf at 2, NaN outside. Computed as
  -ndtri(y / 2) / sqrt(2) (y / 2 is exact, and so is ndtri's 1 - p above 1/2: no loss in
  either tail)."""
  y, = util.promote_args_inexact("erfcinv", y)
  _real_only("erfcinv", y)
  return _in_float32_if_narrow(_erfcinv, y)


@custom_jvp
def _erfcinv(y):
  bad = (y < 0.0) | (y > 2.0) | jnp.isnan(y)
  edge = (y == 0.0) | (y == 2.0)
  z = -_ndtri(jnp.where(bad | edge, 1.0, y) * 0.5) * np.float64(1 / np.sqrt(2)).astype(
      aval(y).dtype)
  z = jnp.where(y == 0.0, np.inf, jnp.where(y == 2.0, -np.inf, z))
  return jnp.where(bad, np.nan, z)


@_erfcinv.defjvp
def _erfcinv_jvp(primals, tangents):
  """erfcinv'(y) = -sqrt(pi)/2 exp(z^2); past |z| = 1 as -sqrt(pi)/2 erfcx(|z|) / min(y, 2-y)
  (exact identity; exp(z^2) would amplify z's rounding by 2 z^2)."""
  (y,), (y_dot,) = primals, tangents
  z = _erfcinv(y)
  q = jnp.where(y > 1.0, 2.0 - y, y)
  tail = lax.abs(z) > 1.0
  central = -0.5 * np.sqrt(np.pi) * lax.exp(lax.square(jnp.where(tail, 0.0, z)))
  finite_tail = tail & (q > 0.0)
  far = -0.5 * np.sqrt(np.pi) * erfcx(jnp.where(finite_tail, lax.abs(z), 1.0)) / jnp.where(
      finite_tail, q, 1.0)
  grad = jnp.where(tail, jnp.where(q == 0.0, -np.inf, far), central)
  return z, y_dot * grad


def ndtri_exp(y):
  """The inverse of log_ndtr: the x with log(Phi(x)) == y (y <= 0; inf at 0, -inf at
  -inf, NaN above 0). ndtri(exp(y)), or -ndtri(-expm1(y)) near 0; below y = -2 three Newton
  steps on log_ndtr from there (or, where exp(y) underflows, from the asymptote
  -x^2/2 - log(-x) - log(2 pi)/2 = y)."""
  y, = util.promote_args_inexact("ndtri_exp", y)
  _real_only("ndtri_exp", y)
  return _in_float32_if_narrow(_ndtri_exp, y)


_LN2_HI = 0.693145751953125            # log(2) to 15 bits (exact in float32) ...
_LN2_LO = 1.4286068203094172321e-06   # ... and the rest


def _ndtri_exp_newton(y):
  tiny = float(np.log(np.finfo(aval(y).dtype).tiny)) + 1.0
  t = -2.0 * lax.min(y, _const(y, -1.0))
  asymptote = -lax.sqrt(lax.max(t - lax.log(t) - np.log(2 * np.pi), _const(y, 1.0)))
  x = jnp.where(y > tiny, _ndtri(lax.exp(lax.max(y, _const(y, tiny)))), asymptote)
  for _ in range(3):
    log_phi = _log_ndtr(x, 3)
    x = x - (log_phi - y) * lax.exp(log_phi - _norm_logpdf(x))
  return x


@custom_jvp
def _ndtri_exp(y):
  bad = (y > 0.0) | jnp.isnan(y)
  neg_inf = lax.eq(y, _const(y, -np.inf))
  safe = jnp.where(bad | neg_inf | (y == 0.0), _const(y, -0.5), y)
  near_zero = safe > float(np.log1p(-np.exp(-2.0)))
  mid = jnp.where(near_zero, -_ndtri(-lax.expm1(safe)), _ndtri(lax.exp(safe)))
  # near Phi = 1/2 (x ~ 0), through log Phi(x) = log(1/2) + log1p(erf(x / sqrt(2))): y + log 2
  # with log 2 in two parts is exact, where exp(y) - 1/2 would cancel
  half = lax.abs(safe + _LN2_HI) < 0.3
  shifted = jnp.where(half, safe, _const(y, -_LN2_HI)) + _LN2_HI + _LN2_LO
  mid = jnp.where(half, np.sqrt(2.0) * lax.erf_inv(lax.expm1(shifted)), mid)
  far = _ndtri_exp_newton(jnp.where(safe < -2.0, safe, _const(y, -3.0)))
  x = jnp.where(safe < -2.0, far, mid)
  x = jnp.where(y == 0.0, np.inf, jnp.where(neg_inf, -np.inf, x))
  return jnp.where(bad, np.nan, x)


@_ndtri_exp.defjvp
def _ndtri_exp_jvp(primals, tangents):
  """dx/dy = Phi(x) / phi(x), formed without cancellation as JAX does: sqrt(pi/2)
  erfcx(|x|/sqrt(2)) left of -sqrt(2), the same over expm1(-y) right of sqrt(2),
  sqrt(2 pi) exp(y + x^2/2) between (0 at y = -inf, inf at y = 0)."""
  (y,), (y_dot,) = primals, tangents
  x = _ndtri_exp(y)
  finite = jnp.isfinite(x)
  cut = np.sqrt(2.0)
  left, right = finite & (x < -cut), finite & (x > cut)
  u = jnp.where(left | right, lax.abs(x) * np.sqrt(0.5), 1.0)
  tail = np.sqrt(0.5 * np.pi) * erfcx(u)
  neg_y = jnp.where(right, -y, 1.0)
  g_right = tail / lax.expm1(neg_y)
  xs, ys = jnp.where(finite, x, 0.0), jnp.where(finite, y, -0.5)
  g_mid = np.sqrt(2 * np.pi) * lax.exp(ys + 0.5 * lax.square(xs))
  g = jnp.where(left, tail, jnp.where(right, g_right, g_mid))
  g = jnp.where(finite, g, jnp.where(x == np.inf, np.inf, 0.0))
  return x, y_dot * jnp.where(jnp.isnan(x), np.nan, g).astype(aval(x).dtype)


# --- incomplete gamma and beta, polygamma, zeta -------------------------------------------

def gammainc(a, x):
  """The regularized lower incomplete gamma function P(a, x) (lax.igamma)."""
  a, x = util.promote_args_inexact("gammainc", a, x)
  return lax_special.igamma(a, x)


def gammaincc(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) (lax.igammac)."""
  a, x = util.promote_args_inexact("gammaincc", a, x)
  return lax_special.igammac(a, x)


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b); differentiable in x only."""
  a, b, x = util.promote_args_inexact("betainc", a, b, x)
  _real_only("betainc", x)
  return lax_special.betainc(a, b, x)


def polygamma(n, x):
  """The n-th derivative of digamma; `n` must have an integer dtype."""
  if not dtypes.issubdtype(lax.dtype(n), np.integer):
    raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype "
                     f"{lax.dtype(n)}.")
  n, x = util.promote_args_inexact("polygamma", n, x)
  _real_only("polygamma", x)
  return lax_special.polygamma(n, x)


def zeta(x, q=None):
  """The Hurwitz zeta function sum_{k>=0} (q + k)^-x (the Riemann one, q=None, is not
  provided, as in JAX)."""
  if q is None:
    raise NotImplementedError("Riemann zeta function not implemented; pass q != None to "
                              "compute the Hurwitz Zeta function.")
  x, q = util.promote_args_inexact("zeta", x, q)
  return lax_special.zeta(x, q)


# --- modified Bessel functions of orders 0 and 1 ------------------------------------------

def i0e(x):
  """exp(-|x|) I0(x)."""
  x, = util.promote_args_inexact("i0e", x)
  return lax.bessel_i0e(x)


def i1e(x):
  """exp(-|x|) I1(x)."""
  x, = util.promote_args_inexact("i1e", x)
  return lax_special.bessel_i1e(x)


def _exp_times(abs_x, scaled):
  """exp(|x|) * scaled without overflowing exp where the product is finite: past log(max)
  the exponential is applied in two halves."""
  max_log = _const(abs_x, math.floor(math.log(dtypes.finfo(aval(abs_x).dtype).max)))
  halve = lax.gt(abs_x, max_log)
  e = lax.exp(lax.select(halve, lax.mul(abs_x, _const(abs_x, 0.5)), abs_x))
  return lax.mul(lax.select(halve, lax.mul(e, scaled), scaled), e)


@custom_jvp
def _i0(x):
  abs_x = lax.abs(x)
  return _exp_times(abs_x, lax.bessel_i0e(abs_x))


@custom_jvp
def _i1(x):
  return _exp_times(lax.abs(x), lax_special.bessel_i1e(x))


def _i1_slope(x, ans):
  """I1'(x) = I0(x) - I1(x) / x; near 0 (0/0) its series 1/2 + 3 x^2 / 16."""
  near_zero = lax.le(lax.abs(x), _const(x, math.sqrt(dtypes.finfo(aval(x).dtype).eps)))
  safe_x = lax.select(near_zero, lax.full_like(x, 1), x)
  series = lax.add(_const(x, 0.5), lax.mul(_const(x, 3 / 16), lax.mul(x, x)))
  return lax.select(near_zero, series, lax.sub(_i0(safe_x), lax.div(ans, safe_x)))


_i0.defjvps(lambda g, ans, x: lax.mul(g, _i1(x)))
_i1.defjvps(lambda g, ans, x: lax.mul(g, _i1_slope(x, ans)))


def _bessel_float(name, fn):
  def wrapped(x):
    x, = util.promote_args_inexact(name, x)
    if not dtypes.issubdtype(aval(x).dtype, np.floating):
      raise ValueError(f"Unsupported input type to jax.scipy.special.{name}: {aval(x).dtype}")
    return fn(x)
  wrapped.__name__ = wrapped.__qualname__ = name
  return wrapped


i0 = _bessel_float("i0", _i0)
i0.__doc__ = "The modified Bessel function of the first kind of order 0, I0(x)."
i1 = _bessel_float("i1", _i1)
i1.__doc__ = "The modified Bessel function of the first kind of order 1, I1(x)."


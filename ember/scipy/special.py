"""ember.scipy.special (jax.scipy.special): logsumexp, softmax, and the special functions
that map onto one lax primitive after promotion to an inexact dtype."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src import dtypes
from ember._src import lax_api as lax
from ember._src.numpy import util
from ember._src.numpy.reductions import aval, reduction_dims, static_axes
from ember._src.primitives.elementwise import convert_element_type

__all__ = ["logsumexp", "softmax", "log_softmax", "erf", "erfc", "erfinv", "expit",
           "logit", "gammaln", "digamma", "xlogy", "xlog1py"]


def _const(x, value):
  """A strongly typed scalar of x's dtype (JAX's `lax._const`)."""
  return np.array(value, aval(x).dtype)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
  """log(sum(b * exp(a))) over `axis`, computed stably by subtracting the (gradient-
  stopped) max. With `return_sign=True` returns (log|sum|, sign(sum)); otherwise a
  negative sum gives NaN."""
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


def _softmax(x, axis, where):
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  unnormalized = jnp.exp(jnp.subtract(x_safe, lax.stop_gradient(x_max)))
  result = jnp.divide(unnormalized, jnp.sum(unnormalized, axis, where=where, keepdims=True))
  return result if where is None else jnp.where(where, result, 0)


def _log_softmax(x, axis, where):
  x_max = jnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else jnp.where(where, x, -np.inf)
  shifted = jnp.subtract(x_safe, lax.stop_gradient(x_max))
  shifted_logsumexp = jnp.log(jnp.sum(jnp.exp(shifted), axis, where=where, keepdims=True))
  result = jnp.subtract(shifted, shifted_logsumexp)
  return result if where is None else jnp.where(where, result, -np.inf)


def softmax(x, /, *, axis=None):
  """exp(x) / sum(exp(x)) over `axis` (all axes by default)."""
  return _softmax(x, axis, None)


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
logit = _inexact_unary("logit", lambda x: lax.log(lax.div(x, lax.sub(_const(x, 1), x))))


def _x_log(name, log_fn):
  def fn(x, y):
    x, y = util.promote_args_inexact(name, x, y)
    x_ok = lax.bitwise_or(lax.ne(x, 0.), lax.ne(y, y))  # 0 * log(y) is 0 unless y is NaN
    return jnp.where(x_ok, lax.mul(x, log_fn(y)), lax.full_like(x, 0))
  fn.__name__ = fn.__qualname__ = name
  return fn


xlogy = _x_log("xlogy", lambda y: lax.log(y))
xlogy.__doc__ = "x * log(y), and 0 where x == 0 (unless y is NaN)."
xlog1py = _x_log("xlog1py", lambda y: lax.log1p(y))
xlog1py.__doc__ = "x * log1p(y), and 0 where x == 0 (unless y is NaN)."

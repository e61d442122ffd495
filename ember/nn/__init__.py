"""ember.nn (jax.nn): activation functions, softmax, one_hot and standardize.

Written as jax/_src/nn/functions.py writes them (same jit names, same constants and
dtype rules), on ember.numpy and ember.lax.
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

import ember.numpy as jnp
from ember._src import core, dtypes
from ember._src import lax_api as lax
from ember._src.jit import jit
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.numpy import util
from ember._src.numpy.reductions import asarray_arg, aval
from ember._src.primitives.elementwise import convert_element_type
from ember.scipy.special import _log_softmax, _softmax, logsumexp  # noqa: F401

__all__ = ["relu", "relu6", "sigmoid", "silu", "swish", "gelu", "softplus", "log_sigmoid",
           "elu", "selu", "celu", "leaky_relu", "hard_tanh", "softmax", "log_softmax",
           "logsumexp", "one_hot", "standardize"]


@custom_jvp
@jit
def relu(x):
  """max(x, 0)."""
  return jnp.maximum(x, 0)


# As JAX: a custom_jvp around the jitted function, with derivative 0 at 0.
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@jit
def relu6(x):
  """min(max(x, 0), 6)."""
  return jnp.minimum(jnp.maximum(x, 0), 6.)


def sigmoid(x):
  """1 / (1 + exp(-x)) (lax.logistic)."""
  return lax.logistic(x)


@jit
def silu(x):
  """x * sigmoid(x) (also called swish)."""
  x = asarray_arg("silu", x)
  return jnp.multiply(x, sigmoid(x))


swish = silu


def gelu(x, approximate: bool = True):
  """Gaussian error linear unit: the tanh approximation by default, or x * Phi(x)."""
  x, = util.promote_args_inexact("gelu", x)
  dt = aval(x).dtype
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(dt)
    inner = jnp.multiply(sqrt_2_over_pi,
                         jnp.add(x, jnp.multiply(0.044715, lax.integer_pow(x, 3))))
    cdf = jnp.multiply(0.5, jnp.add(1.0, jnp.tanh(inner)))
    return jnp.multiply(x, cdf)
  sqrt_half = np.sqrt(0.5).astype(dt)
  out = jnp.multiply(jnp.multiply(0.5, x), lax.erfc(jnp.multiply(lax.neg(x), sqrt_half)))
  return jnp.array(out, dtype=dt)


@jit
def softplus(x):
  """log(1 + exp(x)), computed as logaddexp(x, 0)."""
  return jnp.logaddexp(x, 0)


@jit
def log_sigmoid(x):
  """log(sigmoid(x)) = -softplus(-x)."""
  x = asarray_arg("log_sigmoid", x)
  return jnp.negative(softplus(jnp.negative(x)))


@jit
def elu(x, alpha=1.0):
  """x for x > 0, alpha * (exp(x) - 1) otherwise."""
  x = asarray_arg("elu", x)
  return jnp.where(jnp.greater(x, 0), x,
                   jnp.multiply(alpha, jnp.expm1(jnp.where(jnp.greater(x, 0), 0., x))))


@jit
def selu(x):
  """Scaled ELU with the self-normalizing constants."""
  alpha = 1.6732632423543772848170429916717
  scale = 1.0507009873554804934193349852946
  return jnp.multiply(scale, elu(x, alpha))


@jit
def celu(x, alpha=1.0):
  """max(x, 0) + alpha * expm1(min(x, 0) / alpha)."""
  return jnp.add(jnp.maximum(x, 0.0),
                 jnp.multiply(alpha, jnp.expm1(jnp.divide(jnp.minimum(x, 0.0), alpha))))


@jit
def leaky_relu(x, negative_slope=1e-2):
  """x for x >= 0, negative_slope * x otherwise."""
  x = asarray_arg("leaky_relu", x)
  return jnp.where(jnp.greater_equal(x, 0), x, jnp.multiply(negative_slope, x))


@jit
def hard_tanh(x):
  """x clipped to [-1, 1]."""
  x = asarray_arg("hard_tanh", x)
  return jnp.where(jnp.greater(x, 1), 1, jnp.where(jnp.less(x, -1), -1, x))


def softmax(x, axis=-1, where=None):
  """exp(x - max) / sum(exp(x - max)) along `axis`."""
  return _softmax(x, axis, where)


@partial(jit, static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  """x - max - log(sum(exp(x - max))) along `axis`."""
  x = asarray_arg("log_softmax", x)
  return _log_softmax(x, axis, where)


def one_hot(x, num_classes, *, dtype=None, axis=-1, out_sharding=None):
  """One-hot encoding: `x == k` for k in range(num_classes) along a new `axis` (values
  outside [0, num_classes) give all-zero rows)."""
  if isinstance(num_classes, core.Tracer):
    num_classes = num_classes.to_concrete_value()
    if num_classes is None:
      from ember._src import errors
      raise errors.ConcretizationTypeError(
          "Abstract tracer value encountered where concrete value is expected: the error "
          "arose in jax.nn.one_hot argument `num_classes`, which must be a static int.")
  num_classes = operator.index(num_classes)
  x = asarray_arg("one_hot", x)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  return _one_hot(x, num_classes, dtype=dtype, axis=operator.index(axis))


@partial(jit, static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
  ndim = aval(x).ndim
  out_axis = util.canonicalize_axis(axis, ndim + 1)
  lhs = lax.expand_dims(x, (axis,))
  rhs_shape = [1] * ndim
  rhs_shape.insert(out_axis, num_classes)
  rhs = lax.broadcasted_iota(aval(x).dtype, rhs_shape, out_axis)
  return convert_element_type(lax.eq(lhs, rhs), dtype)


@partial(jit, static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm="fast"):
  """(x - mean) / sqrt(variance + epsilon), with the statistics over `axis` unless
  given. algorithm='fast' uses E[x^2] - E[x]^2, 'stable' uses E[(x - mean)^2]."""
  util.check_arraylike("standardize", x)
  if mean is None:
    mean = jnp.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":
      variance = jnp.mean(jnp.square(jnp.subtract(x, mean)), axis, keepdims=True,
                          where=where)
    elif algorithm == "fast":
      variance = jnp.subtract(jnp.mean(jnp.square(x), axis, keepdims=True, where=where),
                              jnp.square(mean))
      variance = jnp.clip(variance, 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return jnp.multiply(jnp.subtract(x, mean), lax.rsqrt(jnp.add(variance, epsilon)))

"""ember.nn (jax.nn): activation functions, softmax, one_hot, standardize, and the
`initializers` submodule.

Written as jax/_src/nn/functions.py writes them (same jit names, same constants and
dtype rules, the same custom_jvp rules where JAX fixes a derivative), on ember.numpy and
ember.lax. Not provided: dot_product_attention and the scaled_matmul family.
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

import ember.numpy as jnp
from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.transforms.custom_derivatives import custom_jvp
from ember._src.library.numpy import util
from ember._src.library.numpy.reductions import _count, asarray_arg, aval
from ember._src.primitives.elementwise import convert_element_type
from ember.scipy.special import _log_softmax, logsumexp, _softmax_by_flag  # noqa: F401

__all__ = ["dot_product_attention", "identity", "relu", "relu6", "squareplus", "softplus", "sparse_plus", "soft_sign",
           "sigmoid", "sparse_sigmoid", "silu", "swish", "mish", "log_sigmoid", "elu",
           "leaky_relu", "hard_tanh", "celu", "selu", "gelu", "glu", "hard_sigmoid",
           "hard_silu", "hard_swish", "log1mexp", "tanh", "softmax", "log_softmax",
           "logsumexp", "logmeanexp", "one_hot", "standardize", "initializers"]

tanh = jnp.tanh  # jax.nn.tanh is jax.numpy.tanh


@jit
def identity(x):
  """x, unchanged (as an array)."""
  return asarray_arg("identity", x)


@custom_jvp
@jit
def relu(x):
  """max(x, 0)."""
  return jnp.maximum(x, 0)


# As JAX: a custom_jvp around the jitted function, with derivative 0 at 0.
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, lax.full_like(g, 0)))


@custom_jvp
@jit
def relu6(x):
  """min(max(x, 0), 6), with derivative 0 at 0 and at 6 (as JAX)."""
  return jnp.minimum(jnp.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x:
              lax.select(jnp.logical_and(x > 0, x < 6), g, lax.full_like(g, 0)))


@jit
def squareplus(x, b=4):
  """(x + sqrt(x^2 + b)) / 2, a smooth relu (arXiv:2112.11687)."""
  x, b = asarray_arg("squareplus", x), asarray_arg("squareplus", b)
  return jnp.divide(jnp.add(x, jnp.sqrt(jnp.add(jnp.square(x), b))), 2)


@jit
def sparse_plus(x):
  """0 for x <= -1, (x + 1)^2 / 4 on (-1, 1), x for x >= 1."""
  x = asarray_arg("sparse_plus", x)
  return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, jnp.divide((x + 1.0) ** 2, 4)))


@jit
def soft_sign(x):
  """x / (|x| + 1)."""
  x = asarray_arg("soft_sign", x)
  return jnp.divide(x, jnp.add(jnp.abs(x), 1))


def sigmoid(x):
  """1 / (1 + exp(-x)) (lax.logistic)."""
  return lax.logistic(x)


@jit
def sparse_sigmoid(x):
  """clip((x + 1) / 2, 0, 1), the derivative of sparse_plus."""
  return jnp.multiply(0.5, jnp.clip(jnp.add(x, 1.0), 0.0, 2.0))


@jit
def silu(x):
  """x * sigmoid(x) (also called swish)."""
  x = asarray_arg("silu", x)
  return jnp.multiply(x, sigmoid(x))


swish = silu


@jit
def mish(x):
  """x * tanh(softplus(x)) (arXiv:1908.08681)."""
  x = asarray_arg("mish", x)
  return jnp.multiply(x, jnp.tanh(softplus(x)))


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


@partial(jit, static_argnames=("axis",))
def glu(x, axis=-1):
  """Gated linear unit: x1 * sigmoid(x2) for the two halves of x along `axis`."""
  x = asarray_arg("glu", x)
  size = aval(x).shape[axis]
  if size % 2:
    raise ValueError(f"glu: the size of axis {axis} must be divisible by 2, got shape "
                     f"{aval(x).shape}.")
  x1, x2 = jnp.split(x, 2, axis)
  return jnp.multiply(x1, sigmoid(x2))


@jit
def hard_sigmoid(x):
  """relu6(x + 3) / 6."""
  return jnp.divide(relu6(jnp.add(x, 3.)), 6.)


@jit
def hard_silu(x):
  """x * hard_sigmoid(x) (also called hard_swish)."""
  x = asarray_arg("hard_silu", x)
  return jnp.multiply(x, hard_sigmoid(x))


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x):
  """log(1 - exp(-x)) for x >= 0, stably: log(-expm1(-x)) below log 2, log1p(-exp(-x))
  above (Maechler 2012)."""
  x = asarray_arg("log1mexp", x)
  c = jnp.log(2.0)
  return jnp.where(jnp.less(x, c), jnp.log(jnp.negative(jnp.expm1(jnp.negative(x)))),
                   jnp.log1p(jnp.negative(jnp.exp(jnp.negative(x)))))


log1mexp.defjvps(lambda g, ans, x: jnp.divide(g, jnp.expm1(x)))


@partial(jit, static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims=False):
  """log(mean(exp(x))) over `axis` = logsumexp(x) - log(count)."""
  lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
  count = _count(x, axis=axis, where=where, keepdims=keepdims, dtype=aval(lse).dtype)
  return jnp.subtract(lse, jnp.log(count))


def softmax(x, axis=-1, where=None):
  """exp(x - max) / sum(exp(x - max)) along `axis`."""
  return _softmax_by_flag(x, axis, where)


@partial(jit, static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  """x - max - log(sum(exp(x - max))) along `axis`."""
  x = asarray_arg("log_softmax", x)
  return _log_softmax(x, axis, where)


def one_hot(x, num_classes, *, dtype=None, axis=-1, out_sharding=None):
  """One-hot encoding: `x == k` for k in range(num_classes) along a new `axis` (values
  outside [0, num_classes) give all-zero rows)."""
  num_classes = core.concrete_or_error(
      operator.index, num_classes,
      "The error arose in jax.nn.one_hot argument `num_classes`, which must be a static int.")
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


from ember.nn import initializers  # noqa: E402,F401  (jax.nn.initializers)
from ember.nn._attention import dot_product_attention  # noqa: E402,F401
from ember.nn._scaled_matmul import (  # noqa: E402,F401
    get_scaled_dot_general_config, scaled_dot_general, scaled_matmul)

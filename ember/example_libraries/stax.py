"""Neural-network layers as (init_fun, apply_fun) pairs (jax.example_libraries.stax).

A layer constructor returns
  init_fun(rng, input_shape) -> (output_shape, params)
  apply_fun(params, inputs, **kwargs) -> outputs        (kwargs: rng=, for Dropout)
and the combinators `serial`, `parallel` and `shape_dependent` build networks from layers:

    init_fun, apply_fun = stax.serial(stax.Conv(8, (3, 3)), stax.Relu, stax.MaxPool((2, 2)),
                                      stax.Flatten, stax.Dense(10), stax.LogSoftmax)
    out_shape, params = init_fun(random.key(0), (-1, 28, 28, 1))

A batch dimension of -1 in input_shape stays -1 in output_shape. Layers that take no
arguments are layers already (`Relu`, `Flatten`, `Identity`, `FanInSum`); the others are
constructors (`Dense(10)`, `FanOut(2)`).
"""
from __future__ import annotations

import functools
import operator

import ember
import ember.numpy as jnp
from ember import lax, random
from ember.nn import (  # noqa: F401 (part of stax's namespace, as in JAX)
    elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus, standardize)
from ember.nn.initializers import glorot_normal, normal, ones, zeros

# older names
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
  """A fully-connected layer: inputs @ W + b, W of shape (in_dim, out_dim)."""

  def init_fun(rng, input_shape):
    k1, k2 = random.split(rng)
    W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b

  return init_fun, apply_fun


def _static_shape(fun, shape, batch_axis, out_batch_axis, *operand_shapes, unknown_out=None):
  """fun's output shape for an input of `shape` whose batch dimension may be -1 (unknown):
  traced with a batch of 1, then the unknown size put back (unknown_out, default the
  input's)."""
  unknown = shape[batch_axis] < 0
  known = tuple(1 if unknown and i == batch_axis else d for i, d in enumerate(shape))
  specs = [ember.ShapeDtypeStruct(s, jnp.float32) for s in (known,) + operand_shapes]
  out = list(ember.eval_shape(fun, *specs).shape)
  if unknown:
    out[out_batch_axis] = shape[batch_axis] if unknown_out is None else unknown_out
  return tuple(out)


def _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape):
  """The kernel's shape in rhs_spec's layout: O = out_chan, I = the input's channels,
  spatial dimensions from filter_shape in order."""
  spatial = iter(filter_shape)
  in_chan = input_shape[lhs_spec.index("C")]
  return tuple(out_chan if c == "O" else in_chan if c == "I" else next(spatial)
               for c in rhs_spec)


def _conv_layer(conv, dimension_numbers, out_chan, filter_shape, strides, padding, W_init,
                b_init):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  strides = strides or (1,) * len(filter_shape)
  W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return conv(inputs, W, strides, padding) + b

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(rhs_spec, lhs_spec, input_shape, out_chan, filter_shape)
    output_shape = _static_shape(lambda x, w: conv(x, w, strides, padding), input_shape,
                                 lhs_spec.index("N"), out_spec.index("N"), kernel_shape)
    bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
    k1, k2 = random.split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
  """A convolution (lax.conv_general_dilated) plus a bias; dimension_numbers = (lhs_spec,
  rhs_spec, out_spec), e.g. ('NHWC', 'HWIO', 'NHWC')."""
  one = (1,) * len(filter_shape)

  def conv(x, w, strides, padding):
    return lax.conv_general_dilated(x, w, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers)
  return _conv_layer(conv, dimension_numbers, out_chan, filter_shape, strides, padding,
                     W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1D = functools.partial(GeneralConv, ("NHC", "HIO", "NHC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
  """A transposed convolution (lax.conv_transpose) plus a bias."""

  def conv(x, w, strides, padding):
    return lax.conv_transpose(x, w, strides, padding, dimension_numbers=dimension_numbers)
  return _conv_layer(conv, dimension_numbers, out_chan, filter_shape, strides, padding,
                     W_init, b_init)


ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
  """Normalize over `axis` (the batch statistics, no running averages), then scale by
  gamma and shift by beta (each over the other axes) when scale / center."""
  axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = random.split(rng)
    beta = beta_init(k1, shape) if center else ()
    gamma = gamma_init(k2, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if scale:
      z = gamma[expand] * z
    if center:
      z = z + beta[expand]
    return z

  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """A parameterless layer applying fun(inputs, **fun_kwargs)."""

  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)

  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _window_mean(window_shape, strides, padding):
  """AvgPool's rescaling: divide each output by the number of inputs its window covered
  (padding excluded), counted by the same reduce_window over ones."""

  def rescale(outputs, inputs, spec):
    non_spatial = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
    spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
    counts = lax.reduce_window(jnp.ones(spatial_shape, inputs.dtype), 0.0, lax.add,
                               window_shape, strides, padding)
    for i in sorted(non_spatial):
      counts = jnp.expand_dims(counts, i)
    return outputs / counts

  return rescale


def _pooling_layer(reducer, init_val, rescaler=None):

  def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
    """Pool over window_shape (the spatial dimensions; spec, e.g. 'NCHW', says where N and
    C are, default N first and C last) with lax.reduce_window."""
    strides = strides or (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    batch, chan = (0, len(window_shape) + 1) if spec is None else (spec.index("N"),
                                                                    spec.index("C"))
    window, steps = tuple(window_shape), tuple(strides)
    for i in sorted((batch, chan)):
      window = window[:i] + (1,) + window[i:]
      steps = steps[:i] + (1,) + steps[i:]

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, window, steps, padding)
      return rescale(out, inputs, spec) if rescale else out

    def init_fun(rng, input_shape):
      pool = lambda x: lax.reduce_window(x, init_val, reducer, window, steps, padding)
      # JAX's pooling layers report an unknown (-1) batch as 0: its window arithmetic,
      # max(0, (d - 1) // 1 + 1), clamps the batch dimension there
      return _static_shape(pool, input_shape, batch, batch, unknown_out=0), ()

    return init_fun, apply_fun

  return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)
AvgPool = _pooling_layer(lax.add, 0.0, _window_mean)


def Flatten():
  """Flatten every dimension but the first (the batch)."""

  def init_fun(rng, input_shape):
    return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))

  return init_fun, apply_fun


Flatten = Flatten()


def Identity():

  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return inputs

  return init_fun, apply_fun


Identity = Identity()


def FanOut(num):
  """Copy the input into a list of `num` (for parallel)."""

  def init_fun(rng, input_shape):
    return [input_shape] * num, ()

  def apply_fun(params, inputs, **kwargs):
    return [inputs] * num

  return init_fun, apply_fun


def FanInSum():
  """Sum a list of inputs of one shape."""

  def init_fun(rng, input_shape):
    return input_shape[0], ()

  def apply_fun(params, inputs, **kwargs):
    return sum(inputs)

  return init_fun, apply_fun


FanInSum = FanInSum()


def FanInConcat(axis=-1):
  """Concatenate a list of inputs along `axis`."""

  def init_fun(rng, input_shape):
    ax = axis % len(input_shape[0])
    size = sum(shape[ax] for shape in input_shape)
    first = tuple(input_shape[0])
    return first[:ax] + (size,) + first[ax + 1:], ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)

  return init_fun, apply_fun


def Dropout(rate, mode="train"):
  """In 'train' mode keep each input with probability `rate` (as JAX's stax does: rate is
  the keep probability) and scale the kept ones by 1/rate; otherwise the identity."""

  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get("rng", None)
    if rng is None:
      raise ValueError("Dropout: apply_fun needs a PRNG key: call apply_fun(params, inputs, "
                       "rng=key) with a key from ember.random.key.")
    if mode != "train":
      return inputs
    keep = random.bernoulli(rng, rate, inputs.shape)
    return jnp.where(keep, inputs / rate, 0)

  return init_fun, apply_fun


def _split_or_none(rng, n):
  return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
  """Layers applied one after the other; params is a list, one entry per layer."""
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, param = init(layer_rng, input_shape)
      params.append(param)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rngs = _split_or_none(kwargs.pop("rng", None), len(apply_funs))
    for fun, param, rng in zip(apply_funs, params, rngs):
      inputs = fun(param, inputs, rng=rng, **kwargs)
    return inputs

  return init_fun, apply_fun


def parallel(*layers):
  """Layers applied side by side: the i-th to the i-th of a sequence of inputs (use with
  FanOut and FanInSum / FanInConcat)."""
  init_funs, apply_funs = zip(*layers) if layers else ((), ())

  def init_fun(rng, input_shape):
    rngs = random.split(rng, len(init_funs))
    shapes, params = zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs,
                                                                    input_shape)])
    return shapes, params

  def apply_fun(params, inputs, **kwargs):
    rngs = _split_or_none(kwargs.pop("rng", None), len(apply_funs))
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

  return init_fun, apply_fun


def shape_dependent(make_layer):
  """A layer built from the input's shape: make_layer(shape) -> (init_fun, apply_fun)."""

  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)

  return init_fun, apply_fun

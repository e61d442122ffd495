"""ember.nn.initializers (jax.nn.initializers): neural-network weight initializers.

Each builder returns `init(key, shape, dtype=<builder's dtype>, out_sharding=None)`, as in
jax/_src/nn/initializers.py, drawing with ember.random so the same key gives JAX's numbers.
`out_sharding` is accepted for signature compatibility; ember has one device, so only
None is meaningful.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

import ember.numpy as jnp
from ember import random
from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax

__all__ = ["Initializer", "zeros", "ones", "constant", "uniform", "normal",
           "truncated_normal", "variance_scaling", "glorot_uniform", "glorot_normal",
           "xavier_uniform", "xavier_normal", "lecun_uniform", "lecun_normal", "he_uniform",
           "he_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
           "delta_orthogonal"]


@runtime_checkable
class Initializer(Protocol):
  """What the builders below return: `init(key, shape, dtype=None, out_sharding=None)`."""

  def __call__(self, key, shape, dtype=None, out_sharding=None) -> Any:
    ...


def _dtype(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtype


def _no_sharding(name, out_sharding):
  if out_sharding is not None:
    raise ValueError(f"nn.initializers.{name}: out_sharding={out_sharding!r} is not "
                     "supported (ember runs on one device); pass out_sharding=None.")


def zeros(key, shape, dtype=None, out_sharding=None):
  """An array of zeros (`key` is ignored)."""
  _no_sharding("zeros", out_sharding)
  return jnp.zeros(shape, _dtype(dtype))


def ones(key, shape, dtype=None, out_sharding=None):
  """An array of ones (`key` is ignored)."""
  _no_sharding("ones", out_sharding)
  return jnp.ones(shape, _dtype(dtype))


def constant(value, dtype=None) -> Initializer:
  """Builds an initializer returning arrays full of `value`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("constant", out_sharding)
    return jnp.full(shape, value, dtype=_dtype(dtype))
  return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
  """Builds an initializer drawing uniformly from [0, scale)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("uniform", out_sharding)
    dtype = _dtype(dtype)
    return jnp.multiply(random.uniform(key, shape, dtype), jnp.array(scale, dtype))
  return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
  """Builds an initializer drawing from N(0, stddev^2)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("normal", out_sharding)
    dtype = _dtype(dtype)
    return jnp.multiply(random.normal(key, shape, dtype), jnp.array(stddev, dtype))
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
  """Builds an initializer drawing stddev * (a standard normal truncated to (lower, upper));
  no variance correction is applied (variance_scaling applies one)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("truncated_normal", out_sharding)
    dtype = _dtype(dtype)
    return jnp.multiply(random.truncated_normal(key, lower, upper, shape, dtype),
                        jnp.array(stddev, dtype))
  return init


def _axes_size(shape, axes) -> int:
  return shape[axes] if isinstance(axes, int) else math.prod(shape[i] for i in axes)


def _compute_fans(shape: Sequence[int], in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out) of a dense or convolution kernel: axes in none of in/out/batch are
  the receptive field and multiply both fans."""
  if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
    raise ValueError(
        f"Can't compute input and output sizes of a {len(shape)}-dimensional weights "
        "tensor with default in_axis. Must be at least 2D or specify in_axis explicitly.")
  try:
    in_size = _axes_size(shape, in_axis)
    out_size = _axes_size(shape, out_axis)
    batch_size = _axes_size(shape, batch_axis)
  except IndexError:  # IndexError as JAX's, with a message that names the axes
    raise IndexError(f"variance_scaling: in_axis={in_axis}, out_axis={out_axis}, "
                     f"batch_axis={batch_axis} do not all index a dimension of shape "
                     f"{tuple(shape)}.") from None
  denominator = in_size * out_size * batch_size
  receptive_field_size = math.prod(shape) / denominator if denominator != 0 else 0
  return in_size * receptive_field_size, out_size * receptive_field_size


def _complex_uniform(key, shape, dtype):
  """Uniform on the disk of radius sqrt(2) in the complex plane (zero mean, unit variance)."""
  key_r, key_theta = random.split(key)
  real_dtype = np.array(0, dtype).real.dtype
  r = jnp.sqrt(2 * random.uniform(key_r, shape, real_dtype)).astype(dtype)
  theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * jnp.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
  """A unit-variance complex normal with its modulus truncated to `upper`."""
  key_r, key_theta = random.split(key)
  real_dtype = np.array(0, dtype).real.dtype
  t = ((1 - jnp.exp(jnp.array(-(upper ** 2), dtype)))
       * random.uniform(key_r, shape, real_dtype).astype(dtype))
  r = jnp.sqrt(-jnp.log(1 - t))
  theta = 2 * np.pi * random.uniform(key_theta, shape, real_dtype).astype(dtype)
  return r * jnp.exp(1j * theta)


def _scaled_normal(key, shape, dtype, scale):
  """random.normal(key, shape, dtype) * scale, with the scale applied before erf_inv's
  result is rounded once more (JAX 0.12's variance_scaling order, for equal numbers)."""
  if dtypes.issubdtype(dtype, np.floating):
    lo = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype), dtype=dtype)
    u = random.uniform(key, shape, dtype, lo, np.array(1.0, dtype))
    return jnp.array(np.sqrt(2), dtype) * scale * lax.erf_inv(u)
  return random.normal(key, shape, dtype) * scale


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None) -> Initializer:
  """Builds an initializer with variance scale / n, n from `mode` (fan_in, fan_out, their
  mean, or their geometric mean), drawing from a normal truncated at 2 stddevs (rescaled
  to keep the variance), a normal, or a uniform interval (a disk for complex dtypes)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("variance_scaling", out_sharding)
    shape = core.canonicalize_shape(shape)
    dtype = _dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    if mode == "fan_in": denominator = fan_in
    elif mode == "fan_out": denominator = fan_out
    elif mode == "fan_avg": denominator = (fan_in + fan_out) / 2
    elif mode == "fan_geo_avg": denominator = (fan_in * fan_out) ** 0.5
    else:
      raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
    variance = jnp.array(scale / denominator if denominator != 0 else 0, dtype=dtype)
    floating = dtypes.issubdtype(dtype, np.floating)
    if distribution == "truncated_normal":
      if floating:
        # the stddev of a standard normal truncated to (-2, 2)
        stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dtype)
        return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
      # the stddev of a complex standard normal truncated to modulus 2
      stddev = jnp.sqrt(variance) / jnp.array(.95311164380491208, dtype)
      return _complex_truncated_normal(key, 2, shape, dtype) * stddev
    if distribution == "normal":
      return _scaled_normal(key, shape, dtype, jnp.sqrt(variance))
    if distribution == "uniform":
      if floating:
        return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
      return _complex_uniform(key, shape, dtype) * jnp.sqrt(variance)
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")
  return init


def _specialize(name, scale, mode, distribution, doc):
  def builder(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
    return variance_scaling(scale, mode, distribution, in_axis=in_axis, out_axis=out_axis,
                            batch_axis=batch_axis, dtype=dtype)
  builder.__name__ = builder.__qualname__ = name
  builder.__doc__ = (f"Builds a {doc} initializer: variance_scaling({scale}, {mode!r}, "
                     f"{distribution!r}).")
  return builder


glorot_uniform = xavier_uniform = _specialize(
    "glorot_uniform", 1.0, "fan_avg", "uniform", "Glorot (Xavier) uniform")
glorot_normal = xavier_normal = _specialize(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal", "Glorot (Xavier) normal")
lecun_uniform = _specialize("lecun_uniform", 1.0, "fan_in", "uniform", "LeCun uniform")
lecun_normal = _specialize("lecun_normal", 1.0, "fan_in", "truncated_normal", "LeCun normal")
he_uniform = kaiming_uniform = _specialize(
    "he_uniform", 2.0, "fan_in", "uniform", "He (Kaiming) uniform")
he_normal = kaiming_normal = _specialize(
    "he_normal", 2.0, "fan_in", "truncated_normal", "He (Kaiming) normal")


def orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
  """Builds an initializer of (semi-)orthogonal matrices: the shape flattened to
  (prod(other axes), shape[column_axis]) has orthonormal rows or columns, whichever are
  fewer, times `scale`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("orthogonal", out_sharding)
    shape = core.canonicalize_shape(shape)
    dtype = _dtype(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if any(dim == 0 for dim in shape):
      return jnp.zeros(shape, dtype=dtype)
    n_rows, n_cols = math.prod(shape) // shape[column_axis], shape[column_axis]
    q = random.orthogonal(key, n_rows, (), dtype, n_cols)
    q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (shape[column_axis],))
    q = jnp.moveaxis(q, -1, column_axis)
    return jnp.array(scale, dtype) * q
  return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
  """Builds a delta-orthogonal initializer for 3-D/4-D/5-D convolution kernels: zeros
  except an orthogonal matrix at the spatial centre (arXiv:1806.05393)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    _no_sharding("delta_orthogonal", out_sharding)
    shape = core.canonicalize_shape(shape)
    dtype = _dtype(dtype)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho_matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(
        key, shape[-2:])
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return jnp.zeros(shape, dtype=dtype).at[centre].set(ortho_matrix)
  return init

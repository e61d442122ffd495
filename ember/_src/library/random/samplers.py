"""Pseudo-random numbers: the samplers of jax.random, bit for bit JAX 0.12's.

Every sampler of jax.random is here except the gamma family, the discrete and the
linear-algebra ones (ember._src.library.random.gamma, .gamma_family, .discrete, .linalg):
each is a port of JAX 0.12's with the same key splits and the same sequence of operations,
so the integer and uniform-based draws are the same bits. They are written with lax
operations, so they run eagerly and stage into `ember.jit` jaxprs. The transcendentals are
evaluated exactly as XLA:CPU does (ember._src.library.random.xla_math), so normal,
exponential, gumbel, cauchy, weibull_min, ... are the same bits as JAX's too, in float32,
float64 (x64), float16 and bfloat16.

Keys and the threefry2x32 PRNG that draws their bits: ember._src.library.random.keys; the hash
itself: the `threefry2x32` primitive (ember._src.primitives.prng).
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ember._src.primitives import broadcasting_shape, eager_jit
from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, indexing, linalg_norms, reductions, sorting, ufuncs
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.util import canonicalize_axis, check_arraylike, promote_dtypes_inexact
from ember._src.primitives.elementwise import fma
from ember._src.library.random.keys import (
    _U32, KEY_SHAPE, UINT_DTYPES, _as_key_data, _shape_arg, threefry_random_bits, threefry_split)
from ember._src.library.random.xla_math import _erf, _erf_inv, _exp, _log, _log1p, _pow, _tan
from ember._src.library.random.xla_math.common import _F32


# --------------------------------------------------------------------------------------
# The basic samplers: bits, uniform, normal
# --------------------------------------------------------------------------------------

def _float_dtype(name: str, dtype):
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, name)
  if not dtypes.is_float(dt):
    raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
  return dt


@eager_jit.compiled(("shape", "dtype"))
def bits(key, shape=(), dtype=None, *, out_sharding=None):
  """Uniform random bits as unsigned integers of `dtype` (default uint32, uint64 in x64)."""
  data, _ = _as_key_data("bits", key)
  dt = dtypes.default_dtype_for("u") if dtype is None else dtypes.check_user_dtype(dtype, "bits")
  if not dtypes.is_unsigned(dt):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
  return threefry_random_bits(data, dt.itemsize * 8, _shape_arg("bits", shape))


def _uniform(data, shape, dtype, minval, maxval):
  """Random mantissa bits under the exponent of 1.0 give a float in [1, 2); minus 1."""
  scale = _range(minval, maxval, dtype, len(shape))
  minval = _broadcast_to_rank(lax.convert_element_type(minval, dtype), len(shape))
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  rng_bits = 8 if nmant < 8 else nbits   # bfloat16 (7 mantissa bits) draws 8-bit values
  uint = UINT_DTYPES[nbits]
  rbits = threefry_random_bits(data, rng_bits, shape)
  if rng_bits != nbits:
    rbits = lax.convert_element_type(rbits, uint)
  mant = lax.shift_right_logical(rbits, np.array(rng_bits - nmant, uint))
  one_bits = np.array(1.0, dtype).view(uint)
  floats = lax.sub(lax.bitcast_convert_type(lax.bitwise_or(mant, one_bits), dtype),
                   np.array(1.0, dtype))
  scaled = _scale_and_shift(floats, scale, minval, dtype)
  return lax.max(minval, lax.reshape(scaled, shape))


def _range(minval, maxval, dtype, rank: int):
  """maxval - minval in `dtype` with at least `rank` dims: a NumPy constant when both
  bounds are concrete (so `_scale_and_shift` can see whether it is a power of two)."""
  if any(isinstance(v, core.Tracer) for v in (minval, maxval)):
    bounds = (_broadcast_to_rank(lax.convert_element_type(v, dtype), rank)
              for v in (maxval, minval))
    return lax.sub(*bounds)
  scale = np.asarray(np.asarray(maxval, dtype) - np.asarray(minval, dtype), dtype)
  return scale.reshape((1,) * (rank - scale.ndim) + scale.shape)


# --- x * scale + offset, rounded the way XLA:CPU rounds JAX's uniform -----------------
# XLA contracts the multiply-add of float32/float64 into one fused multiply-add (a single
# rounding: ember's fma primitive), computes float16 in float32 (rounding once at the end)
# and rounds bfloat16 after each operation. Where the product is exact (the default [0, 1)
# and normal's scale of 2: a power-of-two scale) one plain multiply-add is already that.

def _scale_and_shift(x, scale, offset, dtype):
  # traced bounds broadcast explicitly (as JAX's jnp arithmetic does), so that
  # differentiating with respect to them sums over the draws
  shape = core.get_aval(x).shape
  for v in (scale, offset):   # lax's error for bounds of another shape (as JAX's mul raises)
    broadcasting_shape("mul", [core.get_aval(x), core.get_aval(v)])
  scale, offset = (shape_ops.broadcast_to(v, shape) if isinstance(v, core.Tracer) else v
                   for v in (scale, offset))
  if dtype == dtypes.float16:
    f32 = lambda v: lax.convert_element_type(v, dtypes.float32)
    return lax.convert_element_type(lax.add(lax.mul(f32(x), f32(scale)), f32(offset)), dtype)
  if dtype == dtypes.bfloat16 or _is_power_of_two(scale):
    return lax.add(lax.mul(x, scale), offset)
  return fma(x, *(lax.convert_element_type(v, dtype) for v in (scale, offset)))


def _is_power_of_two(v) -> bool:
  if isinstance(v, core.Tracer) or not isinstance(v, np.ndarray):
    return False
  mant, _ = np.frexp(v.astype(np.float64))
  return bool(np.all((np.abs(mant) == 0.5) | (v == 0)))


def _broadcast_to_rank(x, rank: int):
  aval = core.get_aval(x)
  if aval.ndim >= rank:
    return x
  k = rank - aval.ndim
  return lax.broadcast_in_dim(x, (1,) * k + aval.shape, tuple(range(k, rank)))


@eager_jit.compiled(("shape", "dtype"))
def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0, *, out_sharding=None):
  """Uniform floats in [minval, maxval) of `dtype` (default float32, float64 in x64)."""
  data, _ = _as_key_data("uniform", key)
  dt = _float_dtype("uniform", dtype)
  return _uniform(data, _shape_arg("uniform", shape), dt, minval, maxval)


@eager_jit.compiled(("shape", "dtype"))
def normal(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard normal floats: sqrt(2) * erf_inv(u) for u uniform in (-1, 1). Complex dtypes
  as JAX 0.12: real and imaginary parts from the two halves of a split key, each a real
  normal divided by sqrt(2) (variance 1/2 each, so E|z|^2 = 1), with JAX's operations."""
  data, _ = _as_key_data("normal", key)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "normal")
  shape = _shape_arg("normal", shape)
  if dtypes.is_complex(dt):
    key_re, key_im = _split_data(data)
    real_dt = np.array(0, dt).real.dtype
    re, im = _normal_real(key_re, shape, real_dt), _normal_real(key_im, shape, real_dt)
    # JAX computes (re + 1j * im) / sqrt(2) in complex arithmetic; XLA divides complex
    # numbers as ((ac + bd) + (bc - ad)i) / (c^2 + d^2), which with c = sqrt(2), d = 0 is
    # each part times c over c*c (not part / c: they round differently). The same real
    # operations give JAX's bits.
    c = np.array(np.sqrt(2), real_dt)
    cc = lax.mul(c, c)
    return lax.complex(lax.div(lax.mul(re, c), cc), lax.div(lax.mul(im, c), cc))
  if not dtypes.is_float(dt):
    raise ValueError(f"dtype argument to `normal` must be a float or complex dtype, got {dt}")
  return _normal_real(data, shape, dt)


def _normal_real(data, shape, dt):
  lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))   # exclude -1: erf_inv(-1) = -inf
  u = _uniform(data, shape, dt, lo, np.array(1.0, dt))
  return lax.mul(np.array(np.sqrt(2), dt), _erf_inv(u))


# --------------------------------------------------------------------------------------
# The other samplers: ports of jax/_src/random/core.py (JAX 0.12), the same key splits and
# the same sequence of lax operations, so the same bits where the arithmetic is exact.
# --------------------------------------------------------------------------------------

def _split_data(data, num: int = 2):
  """`num` subkeys' data (each u32[2]) of one key's data (JAX's `_split(key)`)."""
  keys = threefry_split(data, (num,))
  return [lax.reshape(lax.slice(keys, (i, 0), (i + 1, 2)), KEY_SHAPE) for i in range(num)]


def _sample_dtype(name: str, dtype, kind: str = "float"):
  """The canonical dtype argument of a sampler (default float / int), with JAX's check."""
  default, test = {"float": (float, dtypes.is_float), "int": (int, dtypes.is_integer)}[kind]
  dt = dtypes.check_user_dtype(default if dtype is None else dtype, name)
  if not test(dt):
    raise ValueError(f"dtype argument to `{name}` must be a{'n' * (kind == 'int')} {kind} "
                     f"dtype, got {dt}")
  return dt


def _check_shape(name: str, shape: tuple, *param_shapes) -> None:
  if param_shapes:
    out = lax.broadcast_shapes(shape, *param_shapes)
    if out != shape:
      raise ValueError(f"{name} parameter shapes must be broadcast-compatible with shape "
                       "argument, and the result of broadcasting the shapes must equal the "
                       f"shape argument, but got result {out} for shape argument {shape}.")


def _broadcast_shape(name: str, shape, *params) -> tuple:
  """`shape` checked against the parameters' shapes, or (None) their broadcast shape."""
  shapes = [np.shape(p) for p in params]
  if shape is None:
    return lax.broadcast_shapes(*shapes) if shapes else ()
  shape = _shape_arg(name, shape)
  _check_shape(name, shape, *shapes)
  return shape


def _check_safe_cast(name: str, dtype, *args) -> None:
  """JAX's _check_all_safe_to_cast: a parameter may not need a wider dtype than `dtype`."""
  for a in args:
    if dtypes.result_type(a, dtype) != dtype:
      raise ValueError(f"In arguments to {name}, cannot safely cast argument of type "
                       f"{lax.dtype(a)} to {dtype}")


def _const(dtype, v):
  return np.array(v, dtype)


def _key_only(name: str, key, shape, dtype):
  """The (data, shape, dtype) of the samplers that take only a key, a shape and a dtype."""
  data, _ = _as_key_data(name, key)
  return data, _shape_arg(name, shape), _sample_dtype(name, dtype)



# --- integers ---------------------------------------------------------------------------

def _convert_and_clip_integer(val, dtype):
  """`val` (integer) converted to integer `dtype`, clipping to its range (no wrapping)."""
  vt = core.get_aval(val).dtype
  lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(vt).min))
  hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(vt).max))
  clipped = lax.clamp(_const(vt, lo), val, _const(vt, hi))
  return lax.convert_element_type(clipped, dtype)


@eager_jit.compiled(("shape", "dtype"))
def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
  """Integers uniform in [minval, maxval) (`jax.random.randint`): 2 * nbits random bits
  per value reduced modulo the span (sampling 8/16-bit types in 32 bits)."""
  data, _ = _as_key_data("randint", key)
  dt = dtypes.check_user_dtype(int if dtype is None else dtype, "randint")
  shape = _shape_arg("randint", shape)
  if not dtypes.is_integer(dt):
    raise TypeError(f"randint only accepts integer dtypes, got {dt}")
  minval, maxval = creation.asarray(minval), creation.asarray(maxval)
  info, sample_dt = dtypes.iinfo(dt), dt
  if info.bits < 32:  # sample in 32 bits to avoid a biased result
    sample_dt = np.dtype(np.int32)
    minval = ufuncs.clip(minval.astype(np.int32), int(info.min), int(info.max))
    maxval = ufuncs.clip(maxval.astype(np.int32), int(info.min), int(info.max) + 1)
  return lax.convert_element_type(_randint(data, minval, maxval, shape, sample_dt), dt)


def _randint(data, minval, maxval, shape, dtype):
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  if not dtypes.is_integer(minval.dtype):
    minval = minval.astype(int)
  if not dtypes.is_integer(maxval.dtype):
    maxval = maxval.astype(int)
  # maxval above dtype's max (randint(k, s, 0, 256, uint8)): the span is one larger.
  top = _convert_and_clip_integer(_const(dtype, dtypes.iinfo(dtype).max), maxval.dtype)
  maxval_out_of_range = lax.gt(maxval, top)
  minval, maxval = (_broadcast_to_rank(_convert_and_clip_integer(v, dtype), len(shape))
                    for v in (minval, maxval))
  nbits = dtypes.iinfo(dtype).bits
  k1, k2 = _split_data(data)
  higher, lower = (threefry_random_bits(k, nbits, shape) for k in (k1, k2))
  udt = UINT_DTYPES[nbits]
  span = lax.convert_element_type(maxval - minval, udt)   # operators broadcast, as JAX's
  span = lax.select(maxval <= minval, lax.full_like(span, 1), span)
  span = lax.select(maxval_out_of_range & (maxval > minval), lax.add(span, _const(udt, 1)),
                    span)
  # (hi * 2**nbits + lo) % span without overflow: 2**nbits % span from (2**(nbits/2))**2.
  mult = lax.rem(_const(udt, 2 ** (nbits // 2)), span)
  mult = lax.rem(lax.mul(mult, mult), span)
  offset = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
  offset = lax.rem(offset, span)
  return lax.add(minval, lax.convert_element_type(offset, dtype))


@eager_jit.compiled(("shape", "dtype"))
def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
  """Uniform signs -1 / +1 of an integer or float `dtype` (default int)."""
  data, _ = _as_key_data("rademacher", key)
  dt = dtypes.check_user_dtype(int if dtype is None else dtype, "rademacher")
  shape = _shape_arg("rademacher", shape)
  half = _const(lax.dtype(0.5), 0.5)  # JAX's p=0.5: the default float (float64 in x64)
  b = lax.convert_element_type(_bernoulli(data, half, shape, "low"), dt)
  return lax.convert_element_type(lax.sub(lax.mul(_const(dt, 2), b), _const(dt, 1)), dt)


@eager_jit.compiled(("shape", "mode"))
def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
  """Booleans that are True with probability `p` (`uniform < p`; mode='high' adds a
  second uniform's worth of resolution for tiny p)."""
  if shape is not None:
    shape = _shape_arg("bernoulli", shape)
  if mode not in ("high", "low"):
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  data, _ = _as_key_data("bernoulli", key)
  dt = lax.dtype(p)
  if not dtypes.is_float(dt):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dt}.")
  return _bernoulli(data, lax.convert_element_type(p, dt), shape, mode)


def _bernoulli(data, p, shape, mode):
  shape = np.shape(p) if shape is None else shape
  _check_shape("bernoulli", shape, np.shape(p))
  dt = core.get_aval(p).dtype
  if mode == "high":
    u = _uniform(data, (2, *shape), dt, 0.0, 1.0)
    u1, u2 = (lax.reshape(lax.slice_in_dim(u, i, i + 1, axis=0), shape) for i in (0, 1))
    u2 = lax.mul(u2, _const(dt, 2.0 ** -dtypes.finfo(dt).nmant))
    return u2 < p - u1
  return _uniform(data, shape, dt, 0.0, 1.0) < p


@eager_jit.compiled(("shape", "dtype"))
def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
  """Number of Bernoulli(p) trials up to the first success: floor(log u / log1p(-p)) + 1."""
  data, _ = _as_key_data("geometric", key)
  dt = _sample_dtype("geometric", dtype, "int")
  shape = _broadcast_shape("geometric", shape, p)
  p, = promote_dtypes_inexact(p)
  pdt = core.get_aval(p).dtype
  u = _uniform(data, shape, pdt, 0.0, 1.0)
  u = lax.select(lax.eq(u, _const(pdt, 0)), lax.full_like(u, 1), u)  # keep log(u) finite
  log_q = _bcast(_log1p(lax.neg(p)), shape)
  g = lax.add(lax.floor(lax.div(_log(u), log_q)), _const(pdt, 1))
  return lax.convert_element_type(g, dt)


def _bcast(x, shape):
  return shape_ops.broadcast_to(x, shape)


# --- permutations and choices -----------------------------------------------------------

def _shuffle(data, x, axis: int):
  """Sort by fresh 32-bit keys, ceil(3 ln n / ln(2**32 - 1)) times (one round below
  ~1600 elements): whenever all keys differ the permutation is uniform (tjablin@)."""
  size = math.prod(core.get_aval(x).shape)
  rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
  for _ in range(rounds):
    data, sub = _split_data(data)
    sort_keys = threefry_random_bits(sub, 32, tuple(core.get_aval(x).shape))
    _, x = lax.sort_key_val(sort_keys, x, axis)
  return x


@eager_jit.compiled(("axis", "independent"), static_if_int=("x",))
def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
  """A random permutation of `arange(x)` (x an int) or of `x` along `axis` (every slice
  shuffled alike, or each independently)."""
  data, _ = _as_key_data("permutation", key)
  check_arraylike("permutation", x)
  axis = canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.is_integer(lax.dtype(x)):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = _concrete_int(x, "argument x of jax.random.permutation()")
    return _shuffle(data, creation.arange(r), axis)
  x = creation.asarray(x)
  if independent or x.ndim == 1:
    return _shuffle(data, x, axis)
  ind = _shuffle(data, creation.arange(x.shape[axis]), 0)
  return indexing.take(x, ind, axis, unique_indices=True)


@eager_jit.compiled(("shape", "replace", "axis", "mode"), static_if_int=("a",))
def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Samples of `a` (an array along `axis`, or arange(a)): with replacement by randint or
  inverse CDF of `p`; without, by a permutation prefix or the Gumbel top-k trick."""
  data, _ = _as_key_data("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  check_arraylike("choice", a)
  arr = creation.asarray(a)
  if arr.ndim == 0:
    n_inputs = operator.index(_concrete_int(a, "The error occurred in jax.random.choice()"))
  else:
    axis = canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  shape = _shape_arg("choice", shape)
  n_draws = math.prod(shape)
  if n_draws == 0:
    return creation.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                     f"(size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(data, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else indexing.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      result = permutation(data, n_inputs if arr.ndim == 0 else arr, axis)[slices]
  else:
    check_arraylike("choice", p)
    p_arr, = promote_dtypes_inexact(p)
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = reductions.cumsum(p_arr)
      r = p_cuml[-1] * (1 - uniform(data, shape, dtype=p_cuml.dtype))
      ind = sorting.searchsorted(p_cuml, r).astype(int)
    else:  # Gumbel top-k
      g = gumbel(data, (n_inputs,), dtype=p_arr.dtype, mode=mode) + ufuncs.log(p_arr)
      ind = lax.top_k(g, n_draws)[1].astype(int)
    result = ind if arr.ndim == 0 else indexing.take(arr, ind, axis)
  return result.reshape(shape if arr.ndim == 0 else
                        arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


def _concrete_int(x, context: str):
  if isinstance(x, core.Tracer):
    value = x.to_concrete_value()
    if value is None:
      raise errors.ConcretizationTypeError(
          f"Abstract tracer value encountered where concrete value is expected: {x}\n"
          f"{context}. Pass it as a static argument (static_argnums).")
    x = value
  return int(np.asarray(x))


@eager_jit.compiled(("axis", "shape", "replace", "mode"))
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None, *, out_sharding=None):
  """Category indices drawn from softmax(logits) along `axis`: the Gumbel-max trick (with
  replacement) or Gumbel top-k (without)."""
  data, _ = _as_key_data("categorical", key)
  check_arraylike("categorical", logits)
  logits = creation.asarray(logits)
  batch_shape = tuple(np.delete(logits.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _shape_arg("categorical", shape)
    _check_shape("categorical", shape, batch_shape)
  prefix = shape[:len(shape) - len(batch_shape)]
  if replace:
    if axis >= 0:
      axis -= logits.ndim
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % logits.ndim, logits.shape[axis])
    g = gumbel(data, (*prefix, *logits_shape), logits.dtype, mode=mode)
    return reductions.argmax(g + lax.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
  logits = logits + gumbel(data, logits.shape, logits.dtype, mode=mode)
  k = math.prod(prefix)
  if k > logits.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                     f"categories ({logits.shape[axis]}).")
  _, indices = lax.top_k(shape_ops.moveaxis(logits, axis, -1), k)
  return lax.reshape(indices, shape, (indices.ndim - 1, *range(indices.ndim - 1)))


# --- continuous samplers: transforms of one uniform or normal draw ------------------------

def _finfo_const(dt, attr):
  return _const(dt, getattr(dtypes.finfo(dt), attr))


@eager_jit.compiled(("shape", "dtype"))
def exponential(key, shape=(), dtype=None, *, out_sharding=None):
  """Exponential(1): -log1p(-u), u uniform in [0, 1)."""
  data, shape, dt = _key_only("exponential", key, shape, dtype)
  return _exponential(data, shape, dt)


def _exponential(data, shape, dt):
  u = _uniform(data, shape, dt, 0.0, 1.0)
  return lax.neg(_log1p(lax.neg(u)))


@eager_jit.compiled(("shape", "dtype", "mode"))
def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
  """Gumbel(0, 1): -log(-log(u)). mode 'low' (default) draws u in [tiny, 1); 'high'
  adds a second uniform's bits below 0.5; 'highest' (float32) builds u from 64 bits."""
  data, shape, dt = _key_only("gumbel", key, shape, dtype)
  mode = "low" if mode is None else mode
  if mode not in ("highest", "high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _gumbel(data, shape, dt, mode)


def _gumbel(data, shape, dt, mode):
  info = dtypes.finfo(dt)
  nlog = lambda v: lax.neg(_log(v))
  if dt == dtypes.float32 and mode == "highest":
    return _gumbel_highest(data, shape)
  if mode in ("high", "highest"):
    u = _uniform(data, (2, *shape), dt, 0.0, 1.0)
    high, low = (lax.reshape(lax.slice_in_dim(u, i, i + 1, axis=0), shape) for i in (0, 1))
    floor = max(2.0 ** -(2 * info.nmant + 1), float(info.tiny))
    fine = lax.add(lax.add(high, lax.mul(_const(dt, 2.0 ** -info.nmant), low)), _const(dt, floor))
    x = lax.select(lax.ge(high, _const(dt, 0.5)), high, fine)
    return nlog(lax.neg(_log1p(lax.neg(x))))
  return nlog(nlog(_uniform(data, shape, dt, info.tiny, 1.0)))


def _gumbel_highest(data, shape):
  """JAX's float32 'highest' mode: 64 random bits as a fixed-point u in (0, 1), converted
  to float32 exactly (leading zeros set the exponent); log1p for u < 1/2, log above."""
  u32 = _U32
  c = lambda v: _const(u32, v)
  b = threefry_random_bits(data, 32, (2, *shape))
  hi, lo = (lax.reshape(lax.slice_in_dim(b, i, i + 1, axis=0), shape) for i in (0, 1))
  nhi, nlo = lax.bitwise_not(hi), lax.bitwise_not(lo)
  # 1 - bits in 64-bit fixed point: the low word +1, carrying into the high word.
  nhi = lax.add(nhi, lax.convert_element_type(lax.eq(nlo, c(0xFFFFFFFF)), u32))
  nlo = lax.add(nlo, c(1))
  flip = lax.lt(hi, c(1 << 31))
  x = _safe_int_to_float(lax.select(flip, hi, nhi), lax.select(flip, lo, nlo))
  f1 = lax.neg(_log(lax.neg(_log1p(lax.neg(x)))))
  f2 = lax.neg(_log(lax.neg(_log(x))))
  return lax.select(flip, f1, f2)


def _safe_int_to_float(hi, lo):
  """The 64-bit fixed-point fraction (hi, lo) as float32, truncating (JAX's helper)."""
  u32, info = _U32, dtypes.finfo(dtypes.float32)
  c = lambda v: _const(u32, v)
  hiclz, loclz = lax.clz(hi), lax.clz(lo)
  hi_zero = lax.eq(hiclz, c(32))
  mant = lax.bitwise_or(lax.shift_left(hi, hiclz),
                        lax.select(hi_zero, lax.shift_left(lo, loclz),
                                   lax.shift_right_logical(lo, lax.sub(c(32), hiclz))))
  mant = lax.shift_right_logical(mant, c(info.bits - info.nmant - 1))
  mant = lax.bitwise_and(mant, c((1 << info.nmant) - 1))
  zeros = lax.select(hi_zero, lax.add(c(32), loclz), hiclz)
  exp = lax.shift_left(lax.sub(c(-info.minexp), zeros), c(info.nmant))
  exp = lax.bitwise_and(exp, c((1 << (info.bits - 2)) - (1 << (info.nmant - 1))))
  return lax.bitcast_convert_type(lax.bitwise_or(exp, mant), dtypes.float32)


@eager_jit.compiled(("shape", "dtype"))
def laplace(key, shape=(), dtype=None, *, out_sharding=None):
  """Laplace(0, 1): sign(u) * log1p(-|u|), u uniform in (-1, 1)."""
  data, shape, dt = _key_only("laplace", key, shape, dtype)
  u = _uniform(data, shape, dt, -1.0 + float(dtypes.finfo(dt).epsneg), 1.0)
  return lax.mul(lax.sign(u), _log1p(lax.neg(lax.abs(u))))


@eager_jit.compiled(("shape", "dtype"))
def logistic(key, shape=(), dtype=None, *, out_sharding=None):
  """Logistic(0, 1): log(u) - log1p(-u), u uniform in [tiny, 1)."""
  data, shape, dt = _key_only("logistic", key, shape, dtype)
  x = _uniform(data, shape, dt, dtypes.finfo(dt).tiny, 1.0)
  return lax.sub(_log(x), _log1p(lax.neg(x)))


@eager_jit.compiled(("shape", "dtype"))
def cauchy(key, shape=(), dtype=None, *, out_sharding=None):
  """Cauchy(0, 1): tan(pi * (u - 1/2)), u uniform in [eps, 1)."""
  data, shape, dt = _key_only("cauchy", key, shape, dtype)
  u = _uniform(data, shape, dt, dtypes.finfo(dt).eps, 1.0)
  return _tan(lax.mul(_const(dt, np.pi), lax.sub(u, _const(dt, 0.5))))


@eager_jit.compiled(("shape", "dtype"))
def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
  """Standard normals restricted to (lower, upper): sqrt(2) erf_inv of a uniform between
  erf(lower / sqrt 2) and erf(upper / sqrt 2), clipped into the open interval."""
  if shape is not None:
    shape = _shape_arg("truncated_normal", shape)
  data, _ = _as_key_data("truncated_normal", key)
  dt = _sample_dtype("truncated_normal", dtype)
  if shape is None:
    shape = lax.broadcast_shapes(np.shape(lower), np.shape(upper))
  else:
    _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
  sqrt2 = _const(dt, np.sqrt(2))
  lower, upper = (lax.convert_element_type(v, dt) for v in (lower, upper))
  # v / sqrt2: XLA:CPU multiplies by the reciprocal (LLVM's allow-reciprocal flag)
  scaled = ((lambda v: lax.mul(v, lax.div(_const(dt, 1), sqrt2))) if dt in (_F32, dtypes.float64)
            else (lambda v: lax.div(v, sqrt2)))
  a, b = (_erf(scaled(v)) for v in (lower, upper))
  out = lax.mul(sqrt2, _erf_inv(_uniform(data, shape, dt, a, b)))
  lo = lax.nextafter(lower, lax.full_like(lower, np.inf))
  hi = lax.nextafter(upper, lax.full_like(upper, -np.inf))
  return ufuncs.clip(out, lo, hi)


@eager_jit.compiled(("shape", "dtype"))
def lognormal(key, sigma=np.float32(1), shape=None, dtype=None, *, out_sharding=None):
  """exp(sigma * N(0, 1))."""
  data, _ = _as_key_data("lognormal", key)
  dt = _sample_dtype("lognormal", dtype)
  shape = _broadcast_shape("lognormal", shape, sigma)
  _check_safe_cast("lognormal", dt, sigma)
  return _exp(lax.mul(normal(data, shape, dt), lax.convert_element_type(sigma, dt)))


@eager_jit.compiled(("shape", "dtype"))
def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
  """Pareto(b) on [1, inf): exp(E / b), E exponential."""
  data, _ = _as_key_data("pareto", key)
  dt = _sample_dtype("pareto", dtype)
  shape = _broadcast_shape("pareto", shape, b)
  _check_safe_cast("pareto", dt, b)
  b = lax.convert_element_type(b, dt)
  e = _exponential(data, shape, dt)
  # XLA:CPU compiles e / b with LLVM's allow-reciprocal flag, e * (1 / b) (bfloat16,
  # rounded after each operation, divides)
  e_over_b = lax.div(e, b) if dt == dtypes.bfloat16 else lax.mul(e, lax.div(_const(dt, 1), b))
  return _exp(e_over_b)


@eager_jit.compiled(("shape", "dtype"))
def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
  """Rayleigh(scale): scale * sqrt(-2 log u)."""
  data, _ = _as_key_data("rayleigh", key)
  dt = _sample_dtype("rayleigh", dtype)
  shape = _broadcast_shape("rayleigh", shape, scale)
  _check_safe_cast("rayleigh", dt, scale)
  u = _uniform(data, shape, dt, 0.0, 1.0)
  scale = _bcast(lax.convert_element_type(scale, dt), shape)
  return lax.mul(scale, lax.sqrt(lax.mul(_log(u), _const(dt, -2))))


@eager_jit.compiled(("shape", "dtype"))
def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull(scale, concentration): scale * (-log1p(-u)) ** (1 / concentration)."""
  data, shape, dt = _key_only("weibull_min", key, shape, dtype)
  u = _uniform(data, shape, dt, 0.0, 1.0)
  return _pow(lax.neg(_log1p(lax.neg(u))), 1.0 / concentration) * scale


@eager_jit.compiled(("shape", "dtype"))
def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
  """Triangular(left, mode, right) by inverting its piecewise-quadratic CDF."""
  data, _ = _as_key_data("triangular", key)
  dt = _sample_dtype("triangular", dtype)
  shape = _broadcast_shape("triangular", shape, left, mode, right)
  _check_safe_cast("triangular", dt, left, mode, right)
  left, right, mode = (_bcast(lax.convert_element_type(v, dt), shape)
                       for v in (left, right, mode))
  width = lax.sub(right, left)
  fc = lax.div(lax.sub(mode, left), width)
  u = _uniform(data, shape, dt, 0.0, 1.0)
  out1 = lax.add(left, lax.sqrt(lax.mul(lax.mul(u, width), lax.sub(mode, left))))
  out2 = lax.sub(right, lax.sqrt(lax.mul(lax.mul(lax.sub(_const(dt, 1), u), width),
                                         lax.sub(right, mode))))
  return lax.select(lax.lt(u, fc), out1, out2)


@eager_jit.compiled(("shape", "dtype"))
def maxwell(key, shape=(), dtype=None, *, out_sharding=None):
  """One-sided Maxwell: the length of a 3-vector of standard normals."""
  data, shape, dt = _key_only("maxwell", key, shape, dtype)
  return _maxwell(data, shape, dt)


def _maxwell(data, shape, dt):
  n = normal(data, (*shape, 3), dt)
  if dt not in (_F32, dtypes.float64, dtypes.bfloat16):
    return linalg_norms.norm(n, axis=-1)
  # XLA:CPU's reduce of n*n contracts to sqrt(fma(x2, x2, fma(x0, x0, x1*x1))) in float32,
  # to sqrt(fma(x2, x2, fma(x1, x1, x0*x0))) in float64 (its vectorized loop's order);
  # bfloat16 is squared and summed in float32 (excess precision), the sum rounded to
  # bfloat16, its square root taken in float32 and rounded.
  wide = _F32 if dt == dtypes.bfloat16 else dt
  x0, x1, x2 = (lax.convert_element_type(lax.reshape(lax.slice_in_dim(n, i, i + 1, axis=-1),
                                                     shape), wide) for i in range(3))
  if wide == dtypes.float64:
    x0, x1 = x1, x0
  ss = lax.convert_element_type(fma(x2, x2, fma(x0, x0, lax.mul(x1, x1))), dt)
  return lax.convert_element_type(lax.sqrt(lax.convert_element_type(ss, wide)), dt)


@eager_jit.compiled(("shape", "dtype"))
def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """loc + scale * (a Maxwell sample with a Rademacher sign); the result shape is
  `shape + broadcast(loc, scale).shape` (JAX's convention)."""
  data, shape, dt = _key_only("double_sided_maxwell", key, shape, dtype)
  params_shape = lax.broadcast_shapes(np.shape(loc), np.shape(scale))
  shape = (shape or params_shape) + params_shape
  kmax, ksign = _split_data(data)
  rvs = _maxwell(kmax, shape, dt)
  sign = rademacher(ksign, shape, dt)
  return sign * rvs * scale + loc

"""Pseudo-random numbers: the threefry2x32 hash, PRNG keys and the basic samplers.

Bit for bit the same numbers as JAX 0.12 in its default configuration: the threefry2x32
PRNG with `jax_threefry_partitionable=True`, under which a draw of n values hashes the
counters 0..n-1 (as the 64-bit pair (hi, lo) = (0, i)) with the key, so a prefix of a
larger draw equals the smaller draw, and `split` is a draw of key-shaped values.

Only the hash itself is a primitive (`threefry2x32`, with a NumPy uint32 reference
implementation); seeding, splitting, folding in, bit generation and the samplers are
written with lax operations, so they run eagerly and stage into `ember.jit` jaxprs; under
`vmap` they need only the lax batching rules plus a broadcasting one for threefry2x32;
the compiler lowers it to its uint32 rounds (native code, no runtime call).

Every sampler of jax.random is here except the gamma family and the linear-algebra ones
(ember._src.prng_distributions): each is a port of JAX 0.12's with the same key splits
and the same sequence of operations, so the integer and uniform-based draws are the same
bits. For float32, the samplers evaluate log, log1p, exp, erf and erf_inv with XLA:CPU's
own formulas (`_xla_log_f32` & co., end of file), so normal, exponential, gumbel, ... are
the same bits as JAX's too; tan (cauchy), pow (weibull_min) and float64 transcendentals
are within an ulp or so (see tests/test_random.py `_ULP`).

Typed keys (`random.key`) deviate from JAX in representation, not in values: JAX keys are
`jax.Array`s with an extended dtype that flow through jaxprs as `key<fry>[...]` values;
an ember key is a `PRNGKeyArray` that wraps its uint32 key data (shape `(*shape, 2)`)
and is a pytree node whose only child is that data. So keys pass through `jit`,
`tree_map` and friends, but a jaxpr shows their data (`u32[2]`) where JAX shows
`key<fry>[]`, and `tree_leaves(key)` returns the data array rather than the key.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from ember._src import core, dtypes, tree_util
from ember._src import lax_api as lax
from ember._src.core import ShapedArray
from ember._src.numpy.util import broadcast_arrays_rank
from ember._src.primitives import broadcasting_shape, declare
from ember._src.runtime.array import Array
from ember._src.transforms import batching

IMPL_NAME = "threefry2x32"
KEY_SHAPE = (2,)
KEY_DTYPE = dtypes.KeyTy(IMPL_NAME, "fry", KEY_SHAPE)
UINT_DTYPES = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_U32 = dtypes.uint32

# --------------------------------------------------------------------------------------
# The threefry2x32 primitive: Threefry-2x32 with 20 rounds (Salmon et al. 2011)
# --------------------------------------------------------------------------------------

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = np.uint32(0x1BD11BDA)


def _threefry2x32_abstract_eval(k1, k2, x1, x2):
  avals = (k1, k2, x1, x2)
  if any(a.dtype != _U32 for a in avals):
    raise TypeError("threefry2x32 requires uint32 arguments (key words k1, k2 and counters "
                    f"x1, x2), got dtypes {', '.join(str(a.dtype) for a in avals)}.")
  shape = broadcasting_shape("threefry2x32", avals)
  return [ShapedArray(shape, _U32)] * 2


def _threefry2x32_impl(k1, k2, x1, x2):
  """The hash on NumPy uint32 arrays (all arithmetic wraps mod 2**32)."""
  k1, k2, x1, x2 = (np.asarray(a, _U32) for a in (k1, k2, x1, x2))
  shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
  ks = (k1, k2, k1 ^ k2 ^ _KS_PARITY)
  with np.errstate(over="ignore"):
    x = [np.array(np.broadcast_to(x1 + ks[0], shape)), np.array(np.broadcast_to(x2 + ks[1], shape))]
    for i in range(5):  # 5 groups of 4 rounds, each followed by a key injection
      for r in _ROTATIONS[i % 2]:
        x[0] += x[1]
        x[1] = ((x[1] << np.uint32(r)) | (x[1] >> np.uint32(32 - r))) ^ x[0]
      x[0] += ks[(i + 1) % 3]
      x[1] += ks[(i + 2) % 3] + np.uint32(i + 1)
  return x


threefry2x32_p = declare("threefry2x32", _threefry2x32_abstract_eval, _threefry2x32_impl,
                         multiple_results=True)


def _threefry2x32_lower(ctx, k1, k2, x1, x2):
  """The 20 rounds as uint32 elementwise ops (add wraps; rotl = shl | shr), as JAX
  lowers the hash on CPU."""
  dims = ctx.out_shape().dims
  k1, k2, x1, x2 = (ctx.broadcast_to(v, dims) for v in (k1, k2, x1, x2))
  u32 = lambda v: ctx.full(v, _U32, dims)
  rotl = lambda v, r: ctx.or_(ctx.elementwise("shift-left", v, u32(r)),
                              ctx.elementwise("shift-right-logical", v, u32(32 - r)))
  ks = (k1, k2, ctx.elementwise("xor", ctx.elementwise("xor", k1, k2), u32(_KS_PARITY)))
  x = [ctx.add(x1, ks[0]), ctx.add(x2, ks[1])]
  for i in range(5):
    for r in _ROTATIONS[i % 2]:
      x[0] = ctx.add(x[0], x[1])
      x[1] = ctx.elementwise("xor", rotl(x[1], r), x[0])
    x[0] = ctx.add(x[0], ks[(i + 1) % 3])
    x[1] = ctx.add(x[1], ctx.add(ks[(i + 2) % 3], u32(i + 1)))
  return x


threefry2x32_p.lower = _threefry2x32_lower
threefry2x32_p.batch = batching.broadcasting(threefry2x32_p)  # elementwise in all four


def threefry2x32(k1, k2, x1, x2):
  """Hash the counter pairs (x1, x2) with the key (k1, k2); all uint32, broadcasting as lax
  elementwise operations do. Returns the two uint32 output words."""
  return threefry2x32_p.bind(k1, k2, x1, x2)


# --------------------------------------------------------------------------------------
# Key data (uint32[..., 2]) operations: the threefry2x32 PRNG implementation
# --------------------------------------------------------------------------------------

def _key_words(data):
  """The two words of key data `u32[*s, 2]`, each `u32[*s]`."""
  shape = tuple(core.get_aval(data).shape)
  n = len(shape) - 1
  return [lax.reshape(lax.slice(data, (0,) * n + (i,), shape[:-1] + (i + 1,)), shape[:-1])
          for i in range(2)]


def _stack_words(w1, w2):
  """Two uint32 arrays of shape s -> one of shape (*s, 2)."""
  shape = tuple(core.get_aval(w1).shape)
  return lax.concatenate([lax.reshape(w, (*shape, 1)) for w in (w1, w2)], len(shape))


def _counters(shape):
  """The partitionable counters of a draw of `shape`: the 64-bit row-major index i of each
  element as the pair (hi, lo) of uint32 words; hi is 0 below 2**32 elements."""
  size = math.prod(shape)
  if size >= 2 ** 32:
    raise ValueError(f"random draws of 2**32 or more values are not supported, got shape "
                     f"{shape} ({size} values).")
  if not shape:
    return np.uint32(0), np.uint32(0)
  return np.uint32(0), lax.reshape(lax.iota(_U32, size), shape)


def threefry_seed(seed):
  """Key data u32[2] of an integer scalar seed: (high, low) 32-bit words of the seed."""
  dt = core.get_aval(seed).dtype
  lo = lax.convert_element_type(seed, _U32)   # wraps: the low 32 bits, sign-extended
  if np.dtype(dt).itemsize == 8:
    hi = lax.convert_element_type(lax.shift_right_logical(seed, np.array(32, dt)), _U32)
  else:
    hi = np.uint32(0)                          # a shift by 32 of a 32-bit seed is 0 in XLA
  return _stack_words(hi, lo)


def threefry_split(data, shape: tuple):
  k1, k2 = _key_words(data)
  return _stack_words(*threefry2x32(k1, k2, *_counters(shape)))


def threefry_fold_in(data, msg):
  """msg: a uint32 scalar, hashed as the counter pair (0, msg)."""
  k1, k2 = _key_words(data)
  return _stack_words(*threefry2x32(k1, k2, np.uint32(0), msg))


def threefry_random_bits(data, bit_width: int, shape: tuple):
  k1, k2 = _key_words(data)
  b1, b2 = threefry2x32(k1, k2, *_counters(shape))
  dt = UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi, lo = (lax.convert_element_type(b, dt) for b in (b1, b2))
    return lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
  bits = lax.bitwise_xor(b1, b2)
  return bits if bit_width == 32 else lax.convert_element_type(bits, dt)


# --------------------------------------------------------------------------------------
# Typed keys
# --------------------------------------------------------------------------------------

def _key_arith_error(op):
  def method(self, *args, **kwargs):
    raise TypeError(f"{op} is not defined on PRNG keys (dtype {self.dtype}): keys are not "
                    "numbers. Derive new keys with random.split / random.fold_in, or operate "
                    "on the raw uint32 data from random.key_data(key).")
  method.__name__ = op
  return method


class PRNGKeyArray:
  """An array of typed PRNG keys (`random.key`): shape `shape`, dtype `key<fry>`.

  Wraps the uint32 key data of shape `(*shape, 2)` (an Array, or a tracer inside
  transformations). Deviation from JAX: this is a pytree node whose one child is that
  data, not an Array with an extended dtype, so keys cross `jit` boundaries as their data
  and jaxprs show `u32[..., 2]` where JAX prints `key<fry>[...]`. Values are identical.
  Keys support indexing, iteration, `reshape` and `T`, `==`/`!=`, `jnp.stack` and
  `jnp.concatenate` (numpy/shape.py), but no arithmetic.
  """
  __slots__ = ("_data",)
  __array_priority__ = 2000  # beat Array / Tracer so `array + key` reaches __radd__ here

  def __init__(self, data):
    _check_key_data(data)
    self._data = data

  @classmethod
  def _unchecked(cls, data) -> "PRNGKeyArray":
    self = object.__new__(cls)
    self._data = data
    return self

  dtype = property(lambda self: KEY_DTYPE)
  shape = property(lambda self: tuple(self._data.shape[:-1]))
  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: math.prod(self.shape))
  itemsize = property(lambda self: KEY_DTYPE.itemsize)
  nbytes = property(lambda self: self.size * KEY_DTYPE.itemsize)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d key array")
    return (self[i] for i in range(self.shape[0]))

  def __getitem__(self, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    out = _static_getitem(self._data, self.shape, idx)
    if out is None:  # arrays, tracers, negative steps: ember.numpy's general indexing
      if not any(i is Ellipsis for i in idx):
        idx = (*idx, Ellipsis)
      out = self._data[(*idx, slice(None))]  # keep the trailing key-word axis
    return PRNGKeyArray(out)

  def reshape(self, *shape, order="C"):
    if order != "C":
      raise ValueError(f"PRNGKeyArray.reshape supports only order='C', got {order!r}")
    shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    shape = _resolve_reshape(tuple(shape), self.size)
    return PRNGKeyArray(lax.reshape(self._data, (*shape, *KEY_SHAPE)))

  def ravel(self):
    return self.reshape(self.size)

  flatten = ravel

  def transpose(self, *axes):
    axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
    perm = tuple(range(self.ndim))[::-1] if not axes else tuple(
        operator.index(a) % self.ndim for a in axes)
    return PRNGKeyArray(lax.transpose(self._data, (*perm, self.ndim)))

  T = property(lambda self: self.transpose())

  def _eq(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    pairs = zip(_key_words(self._data), _key_words(other._data))
    return lax.bitwise_and(*(lax.eq(*broadcast_arrays_rank(a, b)) for a, b in pairs))

  def __eq__(self, other):
    return self._eq(other)

  def __ne__(self, other):
    out = self._eq(other)
    return out if out is NotImplemented else lax.bitwise_not(out)

  __hash__ = None

  def block_until_ready(self):
    if hasattr(self._data, "block_until_ready"):
      self._data.block_until_ready()
    return self

  def __array__(self, dtype=None, copy=None):
    raise TypeError("A PRNG key array (dtype key<fry>) cannot be converted to a NumPy "
                    "array. Use random.key_data(keys) to get its uint32 data.")

  def __bool__(self):
    raise TypeError("The truth value of a PRNG key is not defined.")

  def __repr__(self):
    if isinstance(self._data, core.Tracer):
      trace = type(self._data._trace).__name__
      return f"Traced<{self.dtype}[{','.join(map(str, self.shape))}]>with<{trace}>"
    return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._data)}"

  __str__ = __repr__


for _op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
            "lshift", "rshift", "and", "or", "xor", "lt", "le", "gt", "ge"):
  setattr(PRNGKeyArray, f"__{_op}__", _key_arith_error(f"__{_op}__"))
  if _op not in ("lt", "le", "gt", "ge"):
    setattr(PRNGKeyArray, f"__r{_op}__", _key_arith_error(f"__r{_op}__"))
for _op in ("neg", "pos", "abs", "invert", "int", "float", "complex", "index"):
  setattr(PRNGKeyArray, f"__{_op}__", _key_arith_error(f"__{_op}__"))
for _op in ("sum", "mean", "astype", "max", "min", "prod", "cumsum", "round", "clip"):
  setattr(PRNGKeyArray, _op, _key_arith_error(_op))

tree_util.register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), None),
                               lambda _, children: PRNGKeyArray._unchecked(children[0]))


def _static_getitem(data, shape, idx):
  """Basic indexing of the key axes (ints, slices with step > 0, Ellipsis, None) as one
  lax.slice and a reshape; None when `idx` needs general indexing."""
  n_axes = sum(1 for i in idx if i is not None and i is not Ellipsis)
  if n_axes > len(shape):
    raise IndexError(f"too many indices for key array: array is {len(shape)}-dimensional, "
                     f"but {n_axes} were indexed")
  ell = [k for k, i in enumerate(idx) if i is Ellipsis]
  if len(ell) > 1:
    raise IndexError("an index can only have a single ellipsis ('...')")
  fill = (slice(None),) * (len(shape) - n_axes)
  idx = idx[:ell[0]] + fill + idx[ell[0] + 1:] if ell else idx + fill
  starts, limits, strides, out_shape, dim = [], [], [], [], 0
  for i in idx:
    if i is None:
      out_shape.append(1)
      continue
    n = shape[dim]
    if isinstance(i, slice):
      start, stop, step = i.indices(n)
      if step < 0:
        return None
      starts.append(start), limits.append(max(start, stop)), strides.append(step)
      out_shape.append(len(range(start, stop, step)))
    elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
      if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
      starts.append(int(i) % n), limits.append(int(i) % n + 1), strides.append(1)
    else:
      return None
    dim += 1
  sliced = lax.slice(data, (*starts, 0), (*limits, 2),
                     None if set(strides) <= {1} else (*strides, 1))
  return lax.reshape(sliced, (*out_shape, *KEY_SHAPE))


def _resolve_reshape(shape, size):
  shape = tuple(operator.index(d) for d in shape)
  if shape.count(-1) > 1:
    raise ValueError(f"can only specify one unknown dimension, got shape {shape}")
  if -1 in shape:
    known = math.prod(d for d in shape if d != -1)
    if known == 0 or size % known:
      raise ValueError(f"cannot reshape a key array of size {size} into shape {shape}")
    shape = tuple(size // known if d == -1 else d for d in shape)
  if math.prod(shape) != size:
    raise TypeError(f"cannot reshape a key array of size {size} into shape {shape}")
  return shape


def _check_key_data(data) -> None:
  if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
    raise TypeError("invalid PRNG key data: expected an array of uint32 key data, got "
                    f"{type(data).__name__} {data!r}.")
  if data.ndim < 1 or tuple(data.shape[-1:]) != KEY_SHAPE:
    raise TypeError(f"invalid PRNG key data: expected key data shape to end with "
                    f"{KEY_SHAPE} ({IMPL_NAME}), got shape {tuple(data.shape)}.")
  if data.dtype != _U32:
    raise TypeError(f"invalid PRNG key data: expected dtype uint32, got {data.dtype}.")


def _as_key_data(name: str, key, allow_batched: bool = False):
  """(uint32 key data, was it a typed key) of a key argument, typed or raw."""
  if isinstance(key, PRNGKeyArray):
    data, typed = key._data, True
  elif core.is_arraylike(key) and not dtypes.is_python_scalar(key):
    if isinstance(key, (np.ndarray, np.generic)):
      key = Array(np.asarray(key))
    _check_key_data(key)
    data, typed = key, False
  else:
    raise TypeError(f"{name} expects a PRNG key (from random.key or random.PRNGKey) as its "
                    f"first argument, got {type(key).__name__}: {key!r}.")
  if not allow_batched and data.ndim != 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{tuple(data.shape[:-1])} != (). Use vmap for batching.")
  return data, typed


def _ret(data, typed: bool):
  return PRNGKeyArray._unchecked(data) if typed else data


def _check_impl(impl, fun: str) -> None:
  if impl is None or impl == IMPL_NAME or impl == KEY_DTYPE:
    return
  if impl in ("rbg", "unsafe_rbg", "threefry_partitionable"):
    raise ValueError(f"{fun}: PRNG implementation {impl!r} is not supported by ember; "
                     f"only {IMPL_NAME!r} is.")
  raise ValueError(f"{fun}: unrecognized PRNG implementation {impl!r}. Did you mean "
                   f"{IMPL_NAME!r}?")


# --------------------------------------------------------------------------------------
# Public API (re-exported by ember.random)
# --------------------------------------------------------------------------------------

def _seed_data(ctor: str, seed):
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
  if type(seed) in (int, bool):
    if not -2 ** 63 <= seed < 2 ** 63:
      raise OverflowError(f"{ctor}: seed {seed} does not fit in a 64-bit signed integer.")
    # JAX takes Python ints as int64; without x64 that wraps to int32 (so 2**32 + 7 -> 7).
    seed = np.int64(seed).astype(dtypes.canonicalize_dtype(dtypes.int64))
  elif not core.is_arraylike(seed):
    seed = np.asarray(seed)
  aval = core.get_aval(seed)
  if aval.ndim:
    raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                    f"{aval.shape} != (). Use vmap for batching.")
  if not dtypes.is_integer(aval.dtype):
    raise TypeError(f"{ctor}: PRNG key seed must be an integer, got a value of dtype "
                    f"{aval.dtype}.")
  return threefry_seed(seed)


def key(seed, *, impl=None, dtype=None):
  """A typed PRNG key (shape (), dtype key<fry>) from an integer seed (`jax.random.key`)."""
  if impl is not None and dtype is not None:
    raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.key")
  _check_impl(impl if dtype is None else dtype, "key")
  return PRNGKeyArray._unchecked(_seed_data("key", seed))


def PRNGKey(seed, *, impl=None):  # noqa: N802 - JAX's name
  """A legacy raw key: the uint32[2] key data of an integer seed (`jax.random.PRNGKey`)."""
  _check_impl(impl, "PRNGKey")
  return _seed_data("PRNGKey", seed)


def key_data(keys):
  """The uint32 data (shape `(*keys.shape, 2)`) underlying typed or raw keys."""
  data, _ = _as_key_data("key_data", keys, allow_batched=True)
  return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """Typed keys of shape `key_bits_array.shape[:-1]` from uint32 key data `(..., 2)`."""
  if impl is not None and dtype is not None:
    raise ValueError("Cannot specify both `impl` and `dtype` arguments to random.wrap_key_data")
  _check_impl(impl if dtype is None else dtype, "wrap_key_data")
  if isinstance(key_bits_array, (np.ndarray, np.generic, list, tuple)):
    key_bits_array = Array(np.asarray(key_bits_array))
  return PRNGKeyArray(key_bits_array)


def key_impl(keys):
  _as_key_data("key_impl", keys, allow_batched=True)
  return IMPL_NAME


def key_dtype(impl=None):
  _check_impl(impl, "key_dtype")
  return KEY_DTYPE


def _shape_arg(name: str, shape) -> tuple:
  if isinstance(shape, (str, bytes)):
    raise TypeError(f"{name}: shape must be a tuple of integers, got {shape!r}.")
  return core.canonicalize_shape(shape, f"{name}: ")


def split(key, num=2):
  """`num` new keys (an int, or a shape tuple) from one key; typed in, typed out."""
  data, typed = _as_key_data("split", key)
  shape = tuple(num) if isinstance(num, Sequence) and not isinstance(num, str) else (num,)
  return _ret(threefry_split(data, _shape_arg("split", shape)), typed)


def fold_in(key, data):
  """A new key from a key and a 32-bit integer `data` (taken modulo uint32, like JAX)."""
  kdata, typed = _as_key_data("fold_in", key)
  if type(data) in (int, bool):
    if not 0 <= data < 2 ** 32:
      raise OverflowError(f"Python integer {data} out of bounds for uint32")
    data = np.uint32(data)
  elif not core.is_arraylike(data):
    data = np.asarray(data)
  shape = core.get_aval(data).shape
  if shape:
    raise TypeError(f"fold_in accepts a scalar, but was given an array of shape {shape} "
                    "!= (). Use vmap for batching.")
  msg = lax.convert_element_type(data, _U32)
  return _ret(threefry_fold_in(kdata, msg), typed)


def _float_dtype(name: str, dtype):
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, name)
  if not dtypes.is_float(dt):
    raise ValueError(f"dtype argument to `{name}` must be a float dtype, got {dt}")
  return dt


def bits(key, shape=(), dtype=None):
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
# rounding), computes float16 in float32 (rounding once at the end) and rounds bfloat16
# after each operation. Where the product is exact (the default [0, 1) and normal's
# scale of 2: a power-of-two scale) one plain multiply-add is already that; otherwise
# the fused multiply-add is emulated exactly with error-free transformations.

def _scale_and_shift(x, scale, offset, dtype):
  if dtype == dtypes.float16:
    f32 = lambda v: lax.convert_element_type(v, dtypes.float32)
    return lax.convert_element_type(lax.add(lax.mul(f32(x), f32(scale)), f32(offset)), dtype)
  if dtype == dtypes.bfloat16 or _is_power_of_two(scale):
    return lax.add(lax.mul(x, scale), offset)
  return _fma(x, scale, offset, dtype)


def _is_power_of_two(v) -> bool:
  if isinstance(v, core.Tracer) or not isinstance(v, np.ndarray):
    return False
  mant, _ = np.frexp(v.astype(np.float64))
  return bool(np.all((np.abs(mant) == 0.5) | (v == 0)))


def _fma(x, y, z, dtype):
  """RN(x * y + z) for x a uniform variate in [0, 1) (at most nmant significant bits):
  Boldo & Melquiond's emulation (IEEE Trans. Computers 57(4), 2008): x * y = p + e
  exactly (Dekker's product, split by masking mantissa bits), then
  RN(th + RO(tl + e)) with (th, tl) = TwoSum(z, p) and RO rounding to odd."""
  if dtype == _F32:   # the fma primitive (llvm.fma); float64 keeps the emulation below
    return _fma32(x, y, z)
  uint = UINT_DTYPES[dtypes.finfo(dtype).bits]
  # Halves whose pairwise products fit the significand (24 / 53 bits); x's last bit is 0.
  x_low, y_low = {dtypes.float32: (12, 12), dtypes.float64: (27, 26)}[dtype]
  xh, xl = _split(x, x_low, uint, dtype)
  yh, yl = _split(y, y_low, uint, dtype)
  mul, add, sub = lax.mul, lax.add, lax.sub
  p = mul(x, y)
  e = add(add(add(sub(mul(xh, yh), p), mul(xh, yl)), mul(xl, yh)), mul(xl, yl))
  th, tl = _two_sum(z, p)
  return add(th, _add_round_to_odd(tl, e, uint))


def _split(v, nlow: int, uint, dtype):
  """v = hi + lo exactly, hi keeping the mantissa bits above the `nlow` lowest."""
  mask = np.array(~np.array((1 << nlow) - 1, uint), uint)
  hi = lax.bitcast_convert_type(lax.bitwise_and(lax.bitcast_convert_type(v, uint), mask), dtype)
  return hi, lax.sub(v, hi)


def _two_sum(a, b):
  """s = RN(a + b) and the exact error e = a + b - s (Knuth)."""
  s = lax.add(a, b)
  bb = lax.sub(s, a)
  return s, lax.add(lax.sub(a, lax.sub(s, bb)), lax.sub(b, bb))


def _add_round_to_odd(a, b, uint):
  """a + b rounded to odd: when inexact and RN gave an even mantissa, step one ulp toward
  the exact sum (up in magnitude if the error has the sum's sign, else down)."""
  s, e = _two_sum(a, b)
  dtype = core.get_aval(s).dtype
  sbits, ebits = (lax.bitcast_convert_type(v, uint) for v in (s, e))
  one = np.array(1, uint)
  inexact = lax.convert_element_type(lax.ne(e, np.array(0, dtype)), uint)
  step = lax.bitwise_and(inexact, lax.bitwise_xor(lax.bitwise_and(sbits, one), one))
  opposite = lax.shift_right_logical(lax.bitwise_xor(sbits, ebits),
                                     np.array(8 * np.dtype(uint).itemsize - 1, uint))
  down = lax.shift_left(lax.bitwise_and(step, opposite), one)
  return lax.bitcast_convert_type(lax.sub(lax.add(sbits, step), down), dtype)


def _broadcast_to_rank(x, rank: int):
  aval = core.get_aval(x)
  if aval.ndim >= rank:
    return x
  k = rank - aval.ndim
  return lax.broadcast_in_dim(x, (1,) * k + aval.shape, tuple(range(k, rank)))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
  """Uniform floats in [minval, maxval) of `dtype` (default float32, float64 in x64)."""
  data, _ = _as_key_data("uniform", key)
  dt = _float_dtype("uniform", dtype)
  return _uniform(data, _shape_arg("uniform", shape), dt, minval, maxval)


def normal(key, shape=(), dtype=None):
  """Standard normal floats: sqrt(2) * erf_inv(u) for u uniform in (-1, 1)."""
  data, _ = _as_key_data("normal", key)
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "normal")
  if not dtypes.is_float(dt):
    msg = "complex normal samples are not supported by ember yet" if dtypes.is_complex(dt) \
        else "dtype argument to `normal` must be a float or complex dtype"
    raise ValueError(f"{msg}, got {dt}")
  lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))   # exclude -1: erf_inv(-1) = -inf
  u = _uniform(data, _shape_arg("normal", shape), dt, lo, np.array(1.0, dt))
  return lax.mul(np.array(np.sqrt(2), dt), _erf_inv(u))


# --------------------------------------------------------------------------------------
# The other samplers: ports of jax/_src/random/core.py (JAX 0.12), the same key splits and
# the same sequence of lax operations, so the same bits where the arithmetic is exact.
# --------------------------------------------------------------------------------------

def _jnp():
  import ember.numpy as jnp  # noqa: PLC0415 - ember.numpy imports this module's users
  return jnp


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


def clone(key):
  """A copy of `key` (`jax.random.clone`); keys are immutable values here, so itself."""
  _as_key_data("clone", key, allow_batched=True)
  return key


# --- integers ---------------------------------------------------------------------------

def _convert_and_clip_integer(val, dtype):
  """`val` (integer) converted to integer `dtype`, clipping to its range (no wrapping)."""
  vt = core.get_aval(val).dtype
  lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(vt).min))
  hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(vt).max))
  clipped = lax.clamp(_const(vt, lo), val, _const(vt, hi))
  return lax.convert_element_type(clipped, dtype)


def randint(key, shape, minval, maxval, dtype=None):
  """Integers uniform in [minval, maxval) (`jax.random.randint`): 2 * nbits random bits
  per value reduced modulo the span (sampling 8/16-bit types in 32 bits)."""
  data, _ = _as_key_data("randint", key)
  dt = dtypes.check_user_dtype(int if dtype is None else dtype, "randint")
  shape = _shape_arg("randint", shape)
  if not dtypes.is_integer(dt):
    raise TypeError(f"randint only accepts integer dtypes, got {dt}")
  jnp = _jnp()
  minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
  info, sample_dt = dtypes.iinfo(dt), dt
  if info.bits < 32:  # sample in 32 bits to avoid a biased result
    sample_dt = np.dtype(np.int32)
    minval = jnp.clip(minval.astype(np.int32), int(info.min), int(info.max))
    maxval = jnp.clip(maxval.astype(np.int32), int(info.min), int(info.max) + 1)
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


def rademacher(key, shape=(), dtype=None):
  """Uniform signs -1 / +1 of an integer or float `dtype` (default int)."""
  data, _ = _as_key_data("rademacher", key)
  dt = dtypes.check_user_dtype(int if dtype is None else dtype, "rademacher")
  shape = _shape_arg("rademacher", shape)
  half = _const(lax.dtype(0.5), 0.5)  # JAX's p=0.5: the default float (float64 in x64)
  b = lax.convert_element_type(_bernoulli(data, half, shape, "low"), dt)
  return lax.convert_element_type(lax.sub(lax.mul(_const(dt, 2), b), _const(dt, 1)), dt)


def bernoulli(key, p=0.5, shape=None, mode="low"):
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


def geometric(key, p, shape=None, dtype=None):
  """Number of Bernoulli(p) trials up to the first success: floor(log u / log1p(-p)) + 1."""
  data, _ = _as_key_data("geometric", key)
  dt = _sample_dtype("geometric", dtype, "int")
  shape = _broadcast_shape("geometric", shape, p)
  p, = _promote_inexact(p)
  pdt = core.get_aval(p).dtype
  u = _uniform(data, shape, pdt, 0.0, 1.0)
  u = lax.select(lax.eq(u, _const(pdt, 0)), lax.full_like(u, 1), u)  # keep log(u) finite
  log_q = _bcast(_log1p(lax.neg(p)), shape)
  g = lax.add(lax.floor(lax.div(_log(u), log_q)), _const(pdt, 1))
  return lax.convert_element_type(g, dt)


def _promote_inexact(*args):
  from ember._src.numpy.util import promote_dtypes_inexact
  return promote_dtypes_inexact(*args)


def _bcast(x, shape):
  return _jnp().broadcast_to(x, shape)


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


def permutation(key, x, axis=0, independent=False):
  """A random permutation of `arange(x)` (x an int) or of `x` along `axis` (every slice
  shuffled alike, or each independently)."""
  from ember._src.numpy.util import canonicalize_axis, check_arraylike
  data, _ = _as_key_data("permutation", key)
  check_arraylike("permutation", x)
  jnp = _jnp()
  axis = canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.is_integer(lax.dtype(x)):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = _concrete_int(x, "argument x of jax.random.permutation()")
    return _shuffle(data, jnp.arange(r), axis)
  x = jnp.asarray(x)
  if independent or x.ndim == 1:
    return _shuffle(data, x, axis)
  ind = _shuffle(data, jnp.arange(x.shape[axis]), 0)
  return jnp.take(x, ind, axis, unique_indices=True)


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Samples of `a` (an array along `axis`, or arange(a)): with replacement by randint or
  inverse CDF of `p`; without, by a permutation prefix or the Gumbel top-k trick."""
  from ember._src.numpy.util import canonicalize_axis, check_arraylike
  data, _ = _as_key_data("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  check_arraylike("choice", a)
  jnp = _jnp()
  arr = jnp.asarray(a)
  if arr.ndim == 0:
    n_inputs = operator.index(_concrete_int(a, "The error occurred in jax.random.choice()"))
  else:
    axis = canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  shape = _shape_arg("choice", shape)
  n_draws = math.prod(shape)
  if n_draws == 0:
    return jnp.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population "
                     f"(size {n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(data, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      result = permutation(data, n_inputs if arr.ndim == 0 else arr, axis)[slices]
  else:
    check_arraylike("choice", p)
    p_arr, = _promote_inexact(p)
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = jnp.cumsum(p_arr)
      r = p_cuml[-1] * (1 - uniform(data, shape, dtype=p_cuml.dtype))
      ind = jnp.searchsorted(p_cuml, r).astype(int)
    else:  # Gumbel top-k
      g = gumbel(data, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
      ind = lax.top_k(g, n_draws)[1].astype(int)
    result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis)
  return result.reshape(shape if arr.ndim == 0 else
                        arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


def _concrete_int(x, context: str):
  if isinstance(x, core.Tracer):
    value = x.to_concrete_value()
    if value is None:
      from ember._src import errors
      raise errors.ConcretizationTypeError(
          f"Abstract tracer value encountered where concrete value is expected: {x}\n"
          f"{context}. Pass it as a static argument (static_argnums).")
    x = value
  return int(np.asarray(x))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
  """Category indices drawn from softmax(logits) along `axis`: the Gumbel-max trick (with
  replacement) or Gumbel top-k (without)."""
  from ember._src.numpy.util import check_arraylike
  data, _ = _as_key_data("categorical", key)
  check_arraylike("categorical", logits)
  jnp = _jnp()
  logits = jnp.asarray(logits)
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
    return jnp.argmax(g + lax.expand_dims(logits, tuple(range(len(prefix)))), axis=axis)
  logits = logits + gumbel(data, logits.shape, logits.dtype, mode=mode)
  k = math.prod(prefix)
  if k > logits.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                     f"categories ({logits.shape[axis]}).")
  _, indices = lax.top_k(jnp.moveaxis(logits, axis, -1), k)
  return lax.reshape(indices, shape, (indices.ndim - 1, *range(indices.ndim - 1)))


# --- continuous samplers: transforms of one uniform or normal draw ------------------------

def _finfo_const(dt, attr):
  return _const(dt, getattr(dtypes.finfo(dt), attr))


def exponential(key, shape=(), dtype=None):
  """Exponential(1): -log1p(-u), u uniform in [0, 1)."""
  data, shape, dt = _key_only("exponential", key, shape, dtype)
  return _exponential(data, shape, dt)


def _exponential(data, shape, dt):
  u = _uniform(data, shape, dt, 0.0, 1.0)
  return lax.neg(_log1p(lax.neg(u)))


def gumbel(key, shape=(), dtype=None, mode=None):
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


def laplace(key, shape=(), dtype=None):
  """Laplace(0, 1): sign(u) * log1p(-|u|), u uniform in (-1, 1)."""
  data, shape, dt = _key_only("laplace", key, shape, dtype)
  u = _uniform(data, shape, dt, -1.0 + float(dtypes.finfo(dt).epsneg), 1.0)
  return lax.mul(lax.sign(u), _log1p(lax.neg(lax.abs(u))))


def logistic(key, shape=(), dtype=None):
  """Logistic(0, 1): log(u) - log1p(-u), u uniform in [tiny, 1)."""
  data, shape, dt = _key_only("logistic", key, shape, dtype)
  x = _uniform(data, shape, dt, dtypes.finfo(dt).tiny, 1.0)
  return lax.sub(_log(x), _log1p(lax.neg(x)))


def cauchy(key, shape=(), dtype=None):
  """Cauchy(0, 1): tan(pi * (u - 1/2)), u uniform in [eps, 1)."""
  data, shape, dt = _key_only("cauchy", key, shape, dtype)
  u = _uniform(data, shape, dt, dtypes.finfo(dt).eps, 1.0)
  return lax.tan(lax.mul(_const(dt, np.pi), lax.sub(u, _const(dt, 0.5))))


def truncated_normal(key, lower, upper, shape=None, dtype=None):
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
  return _jnp().clip(out, lo, hi)


def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):
  """exp(sigma * N(0, 1))."""
  data, _ = _as_key_data("lognormal", key)
  dt = _sample_dtype("lognormal", dtype)
  shape = _broadcast_shape("lognormal", shape, sigma)
  _check_safe_cast("lognormal", dt, sigma)
  return _exp(lax.mul(normal(data, shape, dt), lax.convert_element_type(sigma, dt)))


def pareto(key, b, shape=None, dtype=None):
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


def rayleigh(key, scale, shape=None, dtype=None):
  """Rayleigh(scale): scale * sqrt(-2 log u)."""
  data, _ = _as_key_data("rayleigh", key)
  dt = _sample_dtype("rayleigh", dtype)
  shape = _broadcast_shape("rayleigh", shape, scale)
  _check_safe_cast("rayleigh", dt, scale)
  u = _uniform(data, shape, dt, 0.0, 1.0)
  scale = _bcast(lax.convert_element_type(scale, dt), shape)
  return lax.mul(scale, lax.sqrt(lax.mul(_log(u), _const(dt, -2))))


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull(scale, concentration): scale * (-log1p(-u)) ** (1 / concentration)."""
  data, shape, dt = _key_only("weibull_min", key, shape, dtype)
  u = _uniform(data, shape, dt, 0.0, 1.0)
  jnp = _jnp()
  return jnp.power(lax.neg(_log1p(lax.neg(u))), 1.0 / concentration) * scale


def triangular(key, left, mode, right, shape=None, dtype=None):
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


def maxwell(key, shape=(), dtype=None):
  """One-sided Maxwell: the length of a 3-vector of standard normals."""
  data, shape, dt = _key_only("maxwell", key, shape, dtype)
  return _maxwell(data, shape, dt)


def _maxwell(data, shape, dt):
  n = normal(data, (*shape, 3), dt)
  if dt != _F32:
    return _jnp().linalg.norm(n, axis=-1)
  # float32: XLA:CPU's reduce of n*n contracts to sqrt(fma(x2, x2, fma(x0, x0, x1*x1)))
  x0, x1, x2 = (lax.reshape(lax.slice_in_dim(n, i, i + 1, axis=-1), shape) for i in range(3))
  return lax.sqrt(_fma32(x2, x2, _fma32(x0, x0, lax.mul(x1, x1))))


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


# --------------------------------------------------------------------------------------
# XLA:CPU's float32 log, log1p, exp, erf and erf_inv, op for op, so the samplers built on
# them draw JAX's bits (read off the machine code XLA:CPU emits for JAX 0.12: Eigen's
# Cephes-style `plog`/`pexp` with LLVM-contracted fused multiply-adds; XLA's Cephes
# rational log1p for small |x|; its rational erf; Giles' erf_inv polynomial from the chlo
# decomposition; subnormals flushed to zero). lax.log etc. stay as they are; only the
# samplers use these. float16/bfloat16 are computed by XLA in float32 and rounded, which
# lax's functions already match; float64 keeps lax's functions (a few ulp from XLA's).
# --------------------------------------------------------------------------------------

_F32 = dtypes.float32


def _fma32(a, b, c):
  """RN(a * b + c) in float32 (what LLVM's contraction computes): ember's fma primitive."""
  from ember._src.primitives.elementwise import fma
  return fma(a, b, c)


def _f32c(v):
  return np.array(v, np.float32)


_LOG_P = [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1]


def _xla_log_f32(x):
  """Eigen's plog_float as XLA:CPU compiles it (frexp, Cephes degree-8 polynomial)."""
  u32, c = _U32, _f32c
  xm = lax.max(x, c(np.finfo(np.float32).tiny))
  bits = lax.bitcast_convert_type(xm, u32)
  e = lax.add(lax.convert_element_type(
      lax.sub(lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(23)),
                                       dtypes.int32), np.int32(127)), _F32), c(1.0))
  m = lax.bitcast_convert_type(lax.bitwise_or(lax.bitwise_and(bits, np.uint32(0x807FFFFF)),
                                              np.uint32(0x3F000000)), _F32)
  small = lax.lt(m, c(0.707106781186547524))
  zero = lax.full_like(m, 0)
  y = lax.add(lax.sub(m, c(1.0)), lax.select(small, m, zero))
  e = lax.sub(e, lax.select(small, lax.full_like(e, 1), zero))
  x2 = lax.mul(y, y)
  x3 = lax.mul(x2, y)
  p = [c(v) for v in _LOG_P]
  q0 = _fma32(_fma32(p[0], y, p[1]), y, p[2])
  q1 = _fma32(_fma32(p[3], y, p[4]), y, p[5])
  q2 = _fma32(_fma32(p[6], y, p[7]), y, p[8])
  poly = _fma32(_fma32(q0, x3, q1), x3, q2)
  t = _fma32(poly, x3, lax.mul(c(-2.12194440e-4), e))
  r = lax.add(_fma32(c(-0.5), x2, y), t)
  r = _fma32(c(0.693359375), e, r)
  nan, inf = c(np.nan), c(np.inf)
  r = lax.select(lax.lt(x, c(0)), lax.full_like(r, nan), r)
  # XLA:CPU flushes subnormals to zero: log of [0, tiny) is -inf
  r = lax.select(lax.bitwise_and(lax.ge(x, c(0)), lax.lt(x, c(np.finfo(np.float32).tiny))),
                 lax.full_like(r, -inf), r)
  r = lax.select(lax.eq(x, inf), x, r)
  return lax.select(lax.ne(x, x), x, r)


_LOG1P_DEN = [1., 1.5062909083469192043167E1, 8.3047565967967209469434E1,
              2.2176239823732856465394E2, 3.0909872225312059774938E2,
              2.1642788614495947685003E2, 6.0118660497603843919306E1]
_LOG1P_NUM = [4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
              6.5787325942061044846969E0, 2.9911919328553073277375E1,
              6.0949667980987787057556E1, 5.7112963590585538103336E1,
              2.0039553499201281259648E1]


def _xla_log1p_f32(x):
  """XLA's log1p: a Cephes rational function for |x| < sqrt(2) - 1, else log(1 + x)."""
  c = _f32c

  def horner(coeffs):
    acc = lax.add(lax.mul(x, c(0)), c(coeffs[0]))
    for k in coeffs[1:]:
      acc = _fma32(acc, x, c(k))
    return acc

  x2 = lax.mul(x, x)
  ratio = lax.div(horner(_LOG1P_NUM), horner(_LOG1P_DEN))
  small = lax.add(x, _fma32(c(-0.5), x2, lax.mul(lax.mul(x2, x), ratio)))
  large = _xla_log_f32(lax.add(x, c(1.0)))
  return lax.select(lax.lt(lax.abs(x), c(0.41421356237309504880)), small, large)


_ERF_INV_LO = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
               0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV_HI = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _xla_erf_inv_f32(x):
  """Giles' single-precision erf_inv (XLA's chlo decomposition)."""
  c = _f32c
  w = lax.neg(_xla_log1p_f32(lax.mul(x, lax.neg(x))))
  lt = lax.lt(w, c(5))
  coef = lambda i: lax.select(lt, lax.full_like(w, _ERF_INV_LO[i]),
                              lax.full_like(w, _ERF_INV_HI[i]))
  ww = lax.select(lt, lax.add(w, c(-2.5)), lax.add(lax.sqrt(w), c(-3)))
  p = coef(0)
  for i in range(1, 9):
    p = _fma32(p, ww, coef(i))
  return lax.select(lax.eq(lax.abs(x), c(1)), lax.mul(x, c(np.inf)), lax.mul(p, x))


_EXP_P = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
          1.6666665459e-1, 0.5]


def _xla_exp_f32(x):
  """Eigen's pexp_float as XLA:CPU compiles it: 2**m * exp(r), m = floor(x log2 e + 1/2),
  a degree-6 polynomial in r, and 2**m applied as two factors (integer exponent add)."""
  c, u32 = _f32c, _U32
  x = lax.min(c(88.8), lax.max(c(-87.8), x))
  m = lax.floor(_fma32(x, c(1.442695), c(0.5)))
  m = lax.min(c(128.0), lax.max(c(-127.0), m))
  r = _fma32(m, c(-0.69314575), x)
  r = _fma32(m, c(-1.4286068e-06), r)
  p = c(_EXP_P[0])
  for k in _EXP_P[1:]:
    p = _fma32(p, r, c(k))
  y = lax.add(_fma32(p, lax.mul(r, r), r), c(1.0))
  e = lax.add(lax.bitcast_convert_type(lax.shift_left(
      lax.convert_element_type(m, dtypes.int32), np.int32(23)), u32), np.uint32(0x3F800000))
  t = lax.min(e, np.uint32(0x7F000000))
  y = lax.bitcast_convert_type(lax.add(lax.bitcast_convert_type(y, u32), lax.sub(e, t)), _F32)
  out = lax.mul(y, lax.bitcast_convert_type(t, _F32))
  # XLA:CPU flushes subnormal results to zero
  return lax.select(lax.lt(out, c(np.finfo(np.float32).tiny)), lax.full_like(out, 0), out)


# XLA:CPU's float32 erf: x P(x^2) / Q(x^2), and +-1 from |x| >= 3.832; coefficients as
# float32 bit patterns read off its machine code.
_ERF_THRESHOLD = 0x407547CB
_ERF_P = [0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA]
_ERF_Q = [0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000]


def _xla_erf_f32(x):
  bits = lambda b: np.array(b, np.uint32).view(np.float32)
  x2 = lax.mul(x, x)

  def horner(coeffs):
    acc = bits(coeffs[0])
    for k in coeffs[1:]:
      acc = _fma32(acc, x2, bits(k))
    return acc

  r = lax.div(lax.mul(x, horner(_ERF_P)), horner(_ERF_Q))
  one = lax.bitcast_convert_type(lax.bitwise_or(
      lax.bitwise_and(lax.bitcast_convert_type(x, _U32), np.uint32(0x80000000)),
      np.uint32(0x3F800000)), _F32)
  return lax.select(lax.ge(lax.abs(x), bits(_ERF_THRESHOLD)), one, r)


def _erf(x):
  return _xla_erf_f32(x) if core.get_aval(x).dtype == _F32 else lax.erf(x)


def _exp(x):
  return _xla_exp_f32(x) if core.get_aval(x).dtype == _F32 else lax.exp(x)


def _log(x):
  return _xla_log_f32(x) if core.get_aval(x).dtype == _F32 else lax.log(x)


def _log1p(x):
  return _xla_log1p_f32(x) if core.get_aval(x).dtype == _F32 else lax.log1p(x)


def _erf_inv(x):
  return _xla_erf_inv_f32(x) if core.get_aval(x).dtype == _F32 else lax.erf_inv(x)

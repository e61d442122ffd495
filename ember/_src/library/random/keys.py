"""PRNG keys: the threefry2x32 PRNG implementation on key data and the typed key arrays.

Key data is uint32 of shape `(*shape, 2)`: seeding, splitting, folding in and drawing bits
hash it with the `threefry2x32` primitive (ember._src.primitives.prng) in JAX 0.12's
partitionable mode (`jax_threefry_partitionable=True`): a draw of n values hashes the
counters 0..n-1 (as the 64-bit pair (hi, lo) = (0, i)) with the key, so a prefix of a
larger draw equals the smaller draw, and `split` is a draw of key-shaped values.

Typed keys (`random.key`) deviate from JAX in representation, not in values: JAX keys are
`jax.Array`s with an extended dtype that flow through jaxprs as `key<fry>[...]` values;
an ember key is a `PRNGKeyArray` that wraps its uint32 key data (shape `(*shape, 2)`).
To users it is a pytree leaf, as in JAX (`jax.tree_util.tree_structure(key)` is
`PyTreeDef(*)`); to ember's transformations it is a node whose only child is that data
(tree_util.register_transform_node), so keys pass through `jit`, `vmap`, `scan` and friends
as their data, and a jaxpr shows `u32[2]` where JAX shows `key<fry>[]`.
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from ember._src.primitives import eager_jit
from ember._src.base import basearray, dtypes, tree_util
from ember._src.base.config import config
from ember._src import core
from ember._src.library.lax import api as lax
from ember._src.library.numpy.util import broadcast_arrays_rank
from ember._src.primitives.prng import threefry2x32
from ember._src.core.array import Array
from ember._src.driver import jit as jit_lib
from ember._src.transforms import partial_eval as pe

IMPL_NAME = "threefry2x32"
KEY_SHAPE = (2,)
KEY_DTYPE = dtypes.KeyTy(IMPL_NAME, "fry", KEY_SHAPE)
UINT_DTYPES = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}
_U32 = dtypes.uint32


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
  if not config._values["jax_threefry_partitionable"]:
    return _split_original(data, shape)
  k1, k2 = _key_words(data)
  return _stack_words(*threefry2x32(k1, k2, *_counters(shape)))


def _split_original(data, shape: tuple):
  """JAX's original (jax_threefry_partitionable=False) split: the hash of the counts
  0..2n-1 as one flat stream, n key-data pairs."""
  n = math.prod(shape)
  return lax.reshape(_hash_counts(data, _iota_counts(2 * n)), (*shape, 2))


def _iota_counts(n: int):
  if n >= 2 ** 32:
    raise ValueError(f"random draws of 2**32 or more 32-bit words are not supported with "
                     f"jax_threefry_partitionable=False, got {n}.")
  return lax.iota(_U32, n)


def _hash_counts(data, counts):
  """threefry_2x32 of a flat count vector under key data u32[2]."""
  return threefry_2x32(tuple(_key_words(data)), counts)


def threefry_fold_in(data, msg):
  """msg: a uint32 scalar, hashed as the counter pair (0, msg)."""
  k1, k2 = _key_words(data)
  return _stack_words(*threefry2x32(k1, k2, np.uint32(0), msg))


def threefry_random_bits(data, bit_width: int, shape: tuple):
  if not config._values["jax_threefry_partitionable"]:
    return _random_bits_original(data, bit_width, shape)
  k1, k2 = _key_words(data)
  b1, b2 = threefry2x32(k1, k2, *_counters(shape))
  dt = UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi, lo = (lax.convert_element_type(b, dt) for b in (b1, b2))
    return lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
  bits = lax.bitwise_xor(b1, b2)
  return bits if bit_width == 32 else lax.convert_element_type(bits, dt)


def _random_bits_original(data, bit_width: int, shape: tuple):
  """JAX's original (jax_threefry_partitionable=False) bits: ceil(bits / 32) words hashed
  from the counts 0..n-1 as one stream; 64-bit values join the stream's first half (high
  words) with its second, 8/16-bit values are its words' pieces, low bits first."""
  size = math.prod(shape)
  words = _hash_counts(data, _iota_counts(-(-bit_width * size // 32)))
  dt = UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi, lo = (lax.convert_element_type(w, dt) for w in (words[:size], words[size:]))
    bits = lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
  elif bit_width == 32:
    bits = words
  else:
    per_word = 32 // bit_width
    shifts = lax.mul(np.uint32(bit_width), lax.broadcasted_iota(_U32, (1, per_word), 1))
    pieces = lax.shift_right_logical(lax.broadcast_in_dim(words, (words.shape[0], per_word),
                                                          (0,)), shifts)
    pieces = lax.bitwise_and(pieces, np.uint32(np.iinfo(dt).max))
    bits = lax.convert_element_type(lax.reshape(pieces, (words.shape[0] * per_word,)), dt)
    bits = bits[:size]
  return lax.reshape(bits, shape)


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
  transformations). As in JAX it is a `jax.Array` (`isinstance(key, jnp.ndarray)`) and
  `jax.typeof(key)` is `key<fry>[...]`, and to `jax.tree_util` it is a leaf. Deviation
  from JAX: it is not an Array with an extended dtype; ember's transformations flatten it
  to that data, so keys cross `jit` boundaries as their data and jaxprs show `u32[..., 2]`
  where JAX prints `key<fry>[...]`. Values are identical.
  Keys support indexing, iteration, `reshape` and `T`, `==`/`!=`, `jnp.stack` and
  `jnp.concatenate` (library/numpy/shape.py), but no arithmetic.
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
  aval = property(lambda self: core.ShapedArray(self.shape, KEY_DTYPE))  # `key<fry>[2]`
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

  at = property(lambda self: _KeyIndexer(self))   # `keys.at[i].set(k)`, `.get()`

  def reshape(self, *shape, order="C"):
    if order != "C":
      raise ValueError(f"PRNGKeyArray.reshape supports only order='C', got {order!r}")
    shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
    shape = _resolve_reshape(tuple(shape), self.size)
    return PRNGKeyArray(lax.reshape(self._data, (*shape, *KEY_SHAPE)))

  def ravel(self):
    return self.reshape(self.size)

  def copy(self):
    """The same keys over a copy of the data (`key.copy()`), as JAX's."""
    data = self._data
    return PRNGKeyArray._unchecked(data.copy() if hasattr(data, "copy") else data)

  __copy__ = copy

  def __deepcopy__(self, memo):
    return self.copy()

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
      return f"{self._data.jax_name}({self.dtype}[{','.join(map(str, self.shape))}])"
    return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._data)}"

  __str__ = __repr__


def _data_index(idx) -> tuple:
  """The index of key data (`u32[..., 2]`) that `idx` is of the keys: the trailing
  key-word axis kept whole."""
  idx = idx if isinstance(idx, tuple) else (idx,)
  if not any(i is Ellipsis for i in idx):
    idx = (*idx, Ellipsis)
  return (*idx, slice(None))


class _KeyIndexer:
  """`keys.at`: `keys.at[idx]` names the keys to get or replace."""
  __slots__ = ("keys",)

  def __init__(self, keys: PRNGKeyArray):
    self.keys = keys

  def __getitem__(self, idx) -> "_KeyIndexRef":
    return _KeyIndexRef(self.keys, idx)


class _KeyIndexRef:
  """`keys.at[idx]`: `.get()` the keys there, `.set(new_keys)` a copy with them replaced.
  Keys have no arithmetic, so the other updates (add, min, ...) are errors, as in JAX."""
  __slots__ = ("keys", "idx")

  def __init__(self, keys: PRNGKeyArray, idx):
    self.keys, self.idx = keys, idx

  def get(self, **kwargs) -> PRNGKeyArray:
    return PRNGKeyArray(self.keys._data.at[_data_index(self.idx)].get(**kwargs))

  def set(self, values, **kwargs) -> PRNGKeyArray:
    if not isinstance(values, PRNGKeyArray):
      raise TypeError(f"keys.at[...].set: the new values must be PRNG keys (dtype "
                      f"{KEY_DTYPE}), got {getattr(values, 'dtype', type(values).__name__)}")
    return PRNGKeyArray(self.keys._data.at[_data_index(self.idx)].set(values._data, **kwargs))

  def __getattr__(self, name):
    if name in ("add", "subtract", "multiply", "divide", "power", "min", "max", "apply"):
      raise TypeError(f"keys.at[...].{name}: PRNG keys (dtype {KEY_DTYPE}) have no "
                      "arithmetic; only .get() and .set(keys) apply to them")
    raise AttributeError(name)


for _op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "divmod", "pow",
            "lshift", "rshift", "and", "or", "xor", "lt", "le", "gt", "ge"):
  setattr(PRNGKeyArray, f"__{_op}__", _key_arith_error(f"__{_op}__"))
  if _op not in ("lt", "le", "gt", "ge"):
    setattr(PRNGKeyArray, f"__r{_op}__", _key_arith_error(f"__r{_op}__"))
for _op in ("neg", "pos", "abs", "invert", "int", "float", "complex", "index"):
  setattr(PRNGKeyArray, f"__{_op}__", _key_arith_error(f"__{_op}__"))
for _op in ("sum", "mean", "astype", "max", "min", "prod", "cumsum", "round", "clip"):
  setattr(PRNGKeyArray, _op, _key_arith_error(_op))

basearray.Array.register(PRNGKeyArray)   # isinstance(key, jax.Array) is True, as in JAX
def _abstract_key(aval, abstract):
  """A key of type `aval` over abstract data (`abstract(data aval)`), for eval_shape."""
  if aval.dtype != KEY_DTYPE:
    raise TypeError(f"eval_shape: unsupported extended dtype {aval.dtype}")
  return PRNGKeyArray._unchecked(abstract(core.ShapedArray((*aval.shape, *KEY_SHAPE), _U32)))


jit_lib.abstract_extended[0] = pe.abstract_extended[0] = _abstract_key
# a leaf of users' pytrees, as in JAX; a node over its data to ember's transformations
tree_util.register_transform_node(PRNGKeyArray, lambda k: ((k._data,), None),
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


def _as_key_data(name: str, key, allow_batched: bool = False, check_legacy: bool = True):
  """(uint32 key data, was it a typed key) of a key argument, typed or raw (`check_legacy`:
  apply jax_legacy_prng_key to a raw one; False where a later call does)."""
  if isinstance(key, PRNGKeyArray):
    data, typed = key._data, True
  elif core.is_arraylike(key) and not dtypes.is_python_scalar(key):
    if isinstance(key, (np.ndarray, np.generic)):
      key = Array(np.asarray(key))
    _check_key_data(key)
    if check_legacy:
      _check_legacy_key()
    data, typed = key, False
  else:
    raise TypeError(f"{name} expects a PRNG key (from random.key or random.PRNGKey) as its "
                    f"first argument, got {type(key).__name__}: {key!r}.")
  if not allow_batched and data.ndim != 1:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{tuple(data.shape[:-1])} != (). Use vmap for batching.")
  return data, typed


_LEGACY_KEY_MESSAGE = (
    "Legacy uint32 key array passed as key to jax.random function. Please create keys using "
    "jax.random.key(). If use of a raw key array was intended, set "
    'jax_legacy_prng_key="allow".')


def _check_legacy_key() -> None:
  """A raw uint32 key given to a jax.random function: as jax_legacy_prng_key says."""
  mode = config._values["jax_legacy_prng_key"]
  if mode == "error":
    raise ValueError(_LEGACY_KEY_MESSAGE)
  if mode == "warn":
    warnings.warn(_LEGACY_KEY_MESSAGE, stacklevel=4)


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
# Public key API (re-exported by ember.random)
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


@eager_jit.compiled(("num",))
def split(key, num=2):
  """`num` new keys (an int, or a shape tuple) from one key; typed in, typed out."""
  data, typed = _as_key_data("split", key)
  shape = tuple(num) if isinstance(num, Sequence) and not isinstance(num, str) else (num,)
  return _ret(threefry_split(data, _shape_arg("split", shape)), typed)


def fold_in(key, data):
  """A new key from a key and a 32-bit integer `data` (taken modulo uint32, like JAX)."""
  _as_key_data("fold_in", key, check_legacy=False)   # (_fold_in checks it)
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
  return _fold_in(key, data)


@eager_jit.compiled()
def _fold_in(key, data):   # (checked by fold_in: a uint32-convertible scalar)
  kdata, typed = _as_key_data("fold_in", key)
  return _ret(threefry_fold_in(kdata, lax.convert_element_type(data, _U32)), typed)


def clone(key):
  """A copy of `key` (`jax.random.clone`); keys are immutable values here, so itself."""
  _as_key_data("clone", key, allow_batched=True)
  return key


def threefry_2x32(keypair, count):
  """The threefry2x32 hash of the uint32 array `count` under the key `keypair` (two uint32
  scalars), as JAX's: the flattened counts (padded to even length) split in halves that
  are hashed as pairs; the result has `count`'s shape."""
  key1, key2 = keypair
  got = [np.dtype(core.get_aval(x).dtype) for x in (key1, key2, count)]
  if any(d != _U32 for d in got):
    raise TypeError(f"threefry_2x32 requires uint32 arguments, got {got}")
  shape = core.get_aval(count).shape
  flat = lax.reshape(count, (math.prod(shape),))
  odd = flat.shape[0] % 2
  if odd:
    flat = lax.concatenate([flat, lax.full((1,), 0, _U32)], 0)
  half = flat.shape[0] // 2
  x1, x2 = threefry2x32(key1, key2, flat[:half], flat[half:])
  out = lax.concatenate([x1, x2], 0)
  return lax.reshape(out[:out.shape[0] - odd], shape)

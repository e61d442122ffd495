"""The PRNG primitives: `threefry2x32`, the hash the threefry2x32 PRNG (ember._src.
prng_keys) builds keys and random bits from, with its rules: the shape rule, the NumPy
impl (reference/threefry.py), a broadcasting batching rule and the lowering to its uint32
rounds (native code, no runtime call); and `rng_bit_generator` (`lax.rng_bit_generator`),
XLA:CPU's RngBitGenerator bit for bit: Philox4x32-10 (the default) or ThreeFry-2x32 over a
counter, the key u32[4] read as two u64 words (key, counter); and `rng_uniform`
(`lax.rng_uniform`), XLA's stateful uniform RNG, drawn from a process-wide threefry state."""
from __future__ import annotations

import enum
import operator
import threading

import numpy as np

from ember._src import core
from ember._src import lower as lowering
from ember._src.base import dtypes
from ember._src.base.config import enable_x64
from ember._src.core import ShapedArray
from ember._src.primitives import broadcasting_shape, declare, eager_jit
from ember._src.primitives import callbacks
from ember._src.primitives import elementwise as ew
from ember._src.primitives.structural import (broadcast_in_dim, concatenate, full_like, iota,
                                              reshape, slice_in_dim)
from ember._src.reference import threefry as threefry_ref
from ember._src.transforms import ad, batching

_U32 = dtypes.uint32


def _threefry2x32_abstract_eval(k1, k2, x1, x2):
  avals = (k1, k2, x1, x2)
  if any(a.dtype != _U32 for a in avals):
    raise TypeError("threefry2x32 requires uint32 arguments (key words k1, k2 and counters "
                    f"x1, x2), got dtypes {', '.join(str(a.dtype) for a in avals)}.")
  shape = broadcasting_shape("threefry2x32", avals)
  return [ShapedArray(shape, _U32)] * 2


threefry2x32_p = declare("threefry2x32", _threefry2x32_abstract_eval, threefry_ref.threefry2x32,
                         multiple_results=True)


def _threefry2x32_lower(ctx, k1, k2, x1, x2):
  """The 20 rounds as uint32 elementwise ops (add wraps; rotl = shl | shr), as JAX
  lowers the hash on CPU."""
  dims = ctx.out_shape().dims
  k1, k2, x1, x2 = (ctx.broadcast_to(v, dims) for v in (k1, k2, x1, x2))
  u32 = lambda v: ctx.full(v, _U32, dims)
  rotl = lambda v, r: ctx.or_(ctx.elementwise("shift-left", v, u32(r)),
                              ctx.elementwise("shift-right-logical", v, u32(32 - r)))
  ks = (k1, k2, ctx.elementwise("xor", ctx.elementwise("xor", k1, k2),
                                u32(threefry_ref.KS_PARITY)))
  x = [ctx.add(x1, ks[0]), ctx.add(x2, ks[1])]
  for i in range(5):
    for r in threefry_ref.ROTATIONS[i % 2]:
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


# --- rng_bit_generator ------------------------------------------------------------------

class RandomAlgorithm(enum.IntEnum):
  """The bit generator algorithm of `rng_bit_generator` (XLA's RandomAlgorithm)."""
  RNG_DEFAULT = 0
  RNG_THREE_FRY = 1
  RNG_PHILOX = 2

  def __str__(self):
    return self.name


_BITS_DTYPES = tuple(map(np.dtype, (np.uint8, np.uint16, np.uint32, np.uint64)))
# Philox4x32-10's multipliers and Weyl key increments (Salmon et al. 2011)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)


def _rbg_abstract_eval(key, *, shape, dtype, algorithm, out_sharding=None):
  if key.shape != (4,) or key.dtype != _U32:
    raise TypeError(f"rng_bit_generator: key must be a uint32[4] array, got "
                    f"{key.str_short()}")
  return [key.update(weak_type=False), ShapedArray(shape, dtype)]


def _philox_rounds(k0, k1, c):
  c = list(c)
  for _ in range(10):
    m0, m1 = (_full_u32(c[0], m) for m in _PHILOX_M)
    hi0, lo0 = ew.mulhi(m0, c[0]), ew.mul(m0, c[0])
    hi1, lo1 = ew.mulhi(m1, c[2]), ew.mul(m1, c[2])
    c = [ew.bitwise_xor(ew.bitwise_xor(hi1, c[1]), k0), lo1,
         ew.bitwise_xor(ew.bitwise_xor(hi0, c[3]), k1), lo0]
    k0 = ew.add(k0, _full_u32(k0, _PHILOX_W[0]))
    k1 = ew.add(k1, _full_u32(k1, _PHILOX_W[1]))
  return c


def _full_u32(like, v):
  return full_like(like, np.uint32(v))


def _add_with_carry(words, i):
  """The multi-word little-endian counter `words` plus the uint32 vector `i`."""
  out, carry = [], i
  for w in words:
    s = ew.add(w, carry)
    carry = ew.convert_element_type(ew.lt(s, carry), _U32)
    out.append(s)
  return out


def _rbg_words(key, n32, algorithm):
  """The first `n32` uint32 words of the generator's stream, and the new key."""
  word = lambda j: reshape(slice_in_dim(key, j, j + 1), ())
  k0, k1, s0, s1 = (word(j) for j in range(4))
  threefry = RandomAlgorithm(algorithm) == RandomAlgorithm.RNG_THREE_FRY
  per_block = 2 if threefry else 4
  blocks = -(-n32 // per_block)
  i = iota(_U32, blocks)
  b = lambda v: broadcast_in_dim(v, (blocks,), ())
  if threefry:
    c0, c1 = _add_with_carry([b(s0), b(s1)], i)
    outs = threefry2x32(b(k0), b(k1), c0, c1)
  else:   # the 128-bit counter: the counter word, then the key word
    c = _add_with_carry([b(s0), b(s1), b(k0), b(k1)], i)
    outs = _philox_rounds(b(k0), b(k1), c)
  stream = reshape(concatenate([reshape(o, (blocks, 1)) for o in outs], 1),
                   (blocks * per_block,))
  n0, n1 = (reshape(v, ()) for v in _add_with_carry(
      [reshape(s0, (1,)), reshape(s1, (1,))], full_like(reshape(s0, (1,)), np.uint32(blocks))))
  new_key = concatenate([reshape(v, (1,)) for v in (k0, k1, n0, n1)], 0)
  return slice_in_dim(stream, 0, n32), new_key


def _rbg_composite(key, *, shape, dtype, algorithm, out_sharding=None):
  n = int(np.prod(shape, dtype=np.int64))
  wide = dtype == np.uint64
  words, new_key = _rbg_words(key, n * (2 if wide else 1), algorithm)
  if wide:   # consecutive words, the low one first
    pairs = reshape(words, (n, 2))
    lo, hi = (ew.convert_element_type(reshape(slice_in_dim(pairs, j, j + 1, axis=1), (n,)),
                                      np.uint64) for j in (0, 1))
    bits = ew.bitwise_or(lo, ew.shift_left(hi, full_like(hi, np.uint64(32))))
  else:      # narrower types keep each word's low bits
    bits = ew.convert_element_type(words, dtype)
  return [new_key, reshape(bits, tuple(shape))]


def _rbg_impl(key, **params):
  """The composite, compiled once per parameters (primitives/eager_jit.py)."""
  static = tuple(sorted((k, v) for k, v in params.items() if k != "out_sharding"))
  with enable_x64(True):   # the uint64 outputs need 64-bit types whatever the mode
    return [np.asarray(v) for v in eager_jit.call(_rbg_composite, static, _rbg_body, key)]


def _rbg_body(fun, static, key):
  return fun(key, **dict(static))


def _rbg_lower_fun(key, **params):
  with enable_x64(True):
    return _rbg_composite(key, **params)


rng_bit_generator_p = declare("rng_bit_generator", _rbg_abstract_eval, _rbg_impl,
                              multiple_results=True)
rng_bit_generator_p.lower = lowering.lower_fun(_rbg_lower_fun)
ad.defjvp_zero(rng_bit_generator_p)


def _rbg_batch(axis_data, vals, dims, **params):
  """One generator per key of the batch (the keys are independent streams)."""
  key = batching.bdim_at_front(vals[0], dims[0], axis_data.size)
  outs = [rng_bit_generator_p.bind(reshape(slice_in_dim(key, b, b + 1), (4,)), **params)
          for b in range(axis_data.size)]
  return [concatenate([reshape(o[j], (1,) + core.get_aval(o[j]).shape) for o in outs], 0)
          for j in (0, 1)], [0, 0]


rng_bit_generator_p.batch = _rbg_batch


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=None, *, out_sharding=None):
  """(new key, random bits of `shape` and unsigned `dtype`) from a uint32[4] key, with
  XLA:CPU's algorithms (`lax.RandomAlgorithm`; the default is Philox)."""
  try:
    algorithm = RandomAlgorithm(RandomAlgorithm.RNG_DEFAULT if algorithm is None else algorithm)
  except ValueError:
    raise ValueError(f"rng_bit_generator: unknown algorithm {algorithm!r}") from None
  dtype = dtypes.check_user_dtype(dtype, "rng_bit_generator")
  if dtype not in _BITS_DTYPES:
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
  shape = tuple(operator.index(d) for d in shape)
  return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm,
                                        out_sharding=out_sharding))


# --- rng_uniform: a stateful uniform RNG -----------------------------------------------
# XLA's RngUniform draws from a generator state hidden in the backend. ember's is one
# process-wide threefry2x32 stream: a fixed key and a 64-bit block counter that every draw
# advances, read by the eager impl and by compiled code alike (a host call marked as having
# a side effect, so it is neither folded, merged nor reordered). Values differ from XLA's.

class _UniformState:
  """The process-wide threefry stream: `words(n)` returns its next n uint32 words."""
  KEY = (np.uint32(0x0E3BE12), np.uint32(0x5EED))

  def __init__(self):
    self._lock = threading.Lock()
    self._counter = 0

  def words(self, n: int) -> np.ndarray:
    blocks = (n + 1) // 2
    with self._lock:
      start, self._counter = self._counter, self._counter + blocks
    count = np.arange(start, start + blocks, dtype=np.uint64)
    hi, lo = (count >> np.uint64(32)).astype(np.uint32), count.astype(np.uint32)
    x1, x2 = threefry_ref.threefry2x32(*self.KEY, hi, lo)
    return np.stack([x1, x2], axis=-1).reshape(-1)[:n]


_uniform_state = _UniformState()


def _uniform_values(a, b, shape: tuple) -> np.ndarray:
  """Draws in [a, b) of a's dtype: floats as a + (b - a) u with u on the dtype's mantissa
  grid in [0, 1), kept below b; integers as a + bits mod (b - a) (a when b <= a: XLA
  leaves that case undefined)."""
  dt = np.dtype(a.dtype)
  n = int(np.prod(shape, dtype=np.int64))
  if dtypes.issubdtype(dt, np.floating):
    fi = dtypes.finfo(dt)
    if fi.bits > 32:
      w = _uniform_state.words(2 * n).reshape(n, 2).astype(np.uint64)
      bits, width = (w[:, 0] << np.uint64(32)) | w[:, 1], 64
    else:
      bits, width = _uniform_state.words(n).astype(np.uint64), 32
    mant = fi.nmant + 1   # u = k 2^-mant, k < 2^mant: exact in dt
    u = ((bits >> np.uint64(width - mant)).astype(np.float64) * 2.0 ** -mant).astype(dt)
    out = (a + (b - a) * u).astype(dt)
    if b > a:   # rounding may reach b
      out = np.minimum(out, np.nextafter(b, a).astype(dt)).astype(dt)
    return out.reshape(shape)
  wide = dt.itemsize > 4
  w = _uniform_state.words(2 * n if wide else n)
  bits = ((w[0::2].astype(np.uint64) << np.uint64(32)) | w[1::2]) if wide else w
  span = int(b) - int(a)
  if span <= 0:
    return np.full(shape, a, dt)
  offset = np.mod(bits.astype(np.uint64), np.uint64(span))
  return (np.int64(a) + offset.astype(np.int64) if dt.kind == "i" or span < 2 ** 63
          else offset + np.uint64(a)).astype(dt).reshape(shape)


def _rng_uniform_abstract_eval(a, b, *, shape):
  if a.dtype != b.dtype:
    raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} "
                     f"and {b.dtype}.")
  if a.shape != () or b.shape != ():
    raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                     f"{b.shape}.")
  if not (dtypes.issubdtype(a.dtype, np.floating) or dtypes.issubdtype(a.dtype, np.integer)):
    raise TypeError(f"rng_uniform: a and b must be integer or floating, got {a.dtype}")
  return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


def _rng_uniform_impl(a, b, *, shape):
  return _uniform_values(a, b, shape)


def _rng_uniform_lower(ctx, a, b, *, shape):
  run = lambda x, y: [_uniform_values(x, y, shape)]
  return callbacks.emit_host_call(ctx, run, [a, b], ctx.avals_out, side_effect=True,
                                  user_code=False)[0]


rng_uniform_p = declare("rng_uniform", _rng_uniform_abstract_eval, _rng_uniform_impl)
rng_uniform_p.lower = _rng_uniform_lower   # no jvp and no batching rule, as in JAX


def rng_uniform(a, b, shape):
  """Uniform draws in [a, b) of `shape` and a's dtype (a, b: scalars of one dtype) from a
  process-wide generator state: each call, eager or compiled, draws new values (ember's
  threefry stream; XLA's values differ). Use `ember.random` for reproducible draws."""
  shape = tuple(operator.index(d) for d in shape)
  if any(d < 0 for d in shape):
    raise ValueError(f"rng_uniform: shape must have no negative dimensions, got {shape}")
  return rng_uniform_p.bind(a, b, shape=shape)

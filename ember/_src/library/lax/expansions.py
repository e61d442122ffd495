"""The two ops of a lowered module that XLA does not know, written with standard lax
operations for `Lowered.as_text()` (lower/standard_ops.py says how, and traces, lowers
and inlines these; they are registered in its tables here, as lax sits above lowering).
The helpers take `lax` as an argument: ember.random's linear-algebra samplers
(random/linalg.py) use `two_sum` too.
"""
from __future__ import annotations

import numpy as np

from ember._src.library.lax import api as lax
from ember._src.lower import standard_ops


# --------------------------------------------------------------------------------------
# fma
# --------------------------------------------------------------------------------------

def two_sum(lax, a, b):
  """s = RN(a + b) and the exact error e = a + b - s (Knuth's TwoSum), in `lax` operations
  (the samplers of random/linalg.py use it too)."""
  s = lax.add(a, b)
  bb = lax.sub(s, a)
  return s, lax.add(lax.sub(a, lax.sub(s, bb)), lax.sub(b, bb))


def _round_to_odd(lax, v, err):
  """v moved one ulp towards the true value v + err when that is inexact and v even."""
  u64 = np.uint64
  bits = lax.bitcast_convert_type(v, u64)
  even = lax.eq(lax.bitwise_and(bits, u64(1)), u64(0))
  move = lax.bitwise_and(lax.bitwise_and(lax.ne(err, 0.0), even), lax.is_finite(v))
  away = lax.eq(lax.gt(err, 0.0), lax.gt(v, 0.0))   # towards a larger magnitude
  step = lax.select(away, lax.add(bits, u64(1)), lax.sub(bits, u64(1)))
  return lax.bitcast_convert_type(lax.select(move, step, bits), np.float64)


def fma_float32(x, y, z):
  a, b, c = (lax.convert_element_type(v, np.float64) for v in (x, y, z))
  p = lax.mul(a, b)                 # exact: 2 x 24 significant bits
  s, err = two_sum(lax, p, c)
  return lax.convert_element_type(_round_to_odd(lax, s, err), np.float32)


def _split(lax, v):
  """v = hi + lo, hi rounded to 26 significant bits by its bit pattern, |lo| <= half an
  ulp of hi (26 bits with the sign)."""
  u64 = np.uint64
  bits = lax.add(lax.bitcast_convert_type(v, u64), u64(1 << 26))
  hi = lax.bitcast_convert_type(lax.bitwise_and(bits, u64(~((1 << 27) - 1) & (2**64 - 1))),
                                np.float64)
  return hi, lax.sub(v, hi)


def fma_float64(a, b, c):
  (ah, al), (bh, bl) = _split(lax, a), _split(lax, b)
  p = lax.optimization_barrier(lax.mul(a, b))
  e = lax.add(lax.add(lax.add(lax.sub(lax.mul(ah, bh), p), lax.mul(ah, bl)),
                      lax.mul(al, bh)), lax.mul(al, bl))
  th, tl = two_sum(lax, c, p)
  v, err = two_sum(lax, tl, e)
  dekker = lax.add(th, _round_to_odd(lax, v, err))
  ab_finite = lax.bitwise_and(lax.is_finite(a), lax.is_finite(b))
  direct = lax.bitwise_or(lax.bitwise_or(lax.eq(a, 0.0), lax.eq(b, 0.0)),
                          lax.bitwise_not(lax.bitwise_and(ab_finite, lax.is_finite(c))))
  plain = lax.select(lax.bitwise_and(ab_finite, lax.bitwise_not(lax.is_finite(c))), c,
                     lax.add(lax.mul(a, b), c))
  return lax.select(direct, plain, dekker)


standard_ops.fma_expansions.update(float32=fma_float32, float64=fma_float64)


# --------------------------------------------------------------------------------------
# lu_pivots_to_permutation
# --------------------------------------------------------------------------------------

def _pivots_to_permutation(permutation_size, pivots):
  """perm = iota; for i < k: swap perm[..., i] and perm[..., pivots[..., i]] (a fori_loop,
  as JAX lowers it on CPU)."""
  *batch, k = pivots.shape
  nb = len(batch)
  dims = (*batch, permutation_size)
  cols = lax.broadcasted_iota(np.int32, dims, nb)

  def swap(i, perm):
    j = lax.dynamic_index_in_dim(pivots, i, nb, keepdims=True)         # (*batch, 1)
    at_i = lax.dynamic_index_in_dim(perm, i, nb, keepdims=True)
    at_j = lax.reduce_sum(lax.select(lax.eq(cols, lax.broadcast_in_dim(j, dims, range(nb + 1))),
                                     perm, lax.full_like(perm, 0)), (nb,))
    at_j = lax.broadcast_in_dim(at_j, dims, range(nb))
    at_i = lax.broadcast_in_dim(at_i, dims, range(nb + 1))
    is_i = lax.eq(cols, lax.broadcast_in_dim(i, dims, ()))
    is_j = lax.eq(cols, lax.broadcast_in_dim(j, dims, range(nb + 1)))
    return lax.select(is_i, at_j, lax.select(is_j, at_i, perm))

  return lax.fori_loop(np.int32(0), np.int32(k), swap, cols)


standard_ops.custom_call_expansions["lu_pivots_to_permutation"] = _pivots_to_permutation

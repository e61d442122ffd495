"""StableHLO spellings of the two ops of a lowered module that XLA does not know, used by
`Lowered.as_text()` only (ember's own compile keeps the ops as they are):

- `fma` (ember's x * y + z rounded once; the samplers use it to reproduce XLA:CPU's
  contracted multiply-adds) becomes ordinary arithmetic with exactly the same result.
  float32: the product of two float32 is exact in float64; the float64 sum is rounded to
  odd (TwoSum's error says whether it was exact and on which side the true sum lies), and
  53 >= 24 + 2 bits make the final rounding to float32 correct (Boldo & Melquiond 2008).
  float64: Dekker's exact product p + e (operands split into 26-bit halves by integer
  rounding of their bits, so no split is a multiply an optimizer could contract),
  (th, tl) = TwoSum(z, p), then RN(th + RO(tl + e)). Every product here is exact except p,
  which passes through an optimization barrier so no compiler fuses it into an fma.
  Zeros, infinities and NaNs take x * y + z (one rounding already); z infinite with x * y
  finite gives z. Outside |x|, |y|, |z| < 2**995 and |x * y| >= 2**-960 (where e can
  overflow or underflow) the text computes Dekker's faithful value, which can differ from
  the exactly rounded fma in the last bit.
- `custom-call @lu_pivots_to_permutation` (a target XLA's CPU client does not register)
  becomes the `stablehlo.while` loop of row swaps JAX emits for it.

Each expansion is an ember function traced and lowered like any other, its module cached
per shape; the printer inlines its ops in place of the op.
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src import hlo

__all__ = ["expansion"]


def expansion(instr: hlo.Instr) -> hlo.Module | None:
  """The module computing `instr` with standard ops, or None when it is standard."""
  if instr.opcode == "fma":
    return _lowered(_FMA[np.dtype(instr.dtype).name], (instr.shape,) * 3, x64=True)
  if instr.opcode == "custom-call" and instr.attrs["target"] == "lu_pivots_to_permutation":
    size = dict(instr.attrs.get("backend_config", ()))["permutation_size"]
    return _lowered(functools.partial(_pivots_to_permutation, size),
                    (instr.operands[0].shape,))
  return None


@functools.lru_cache(maxsize=256)
def _lowered(fn, shapes, x64: bool = False) -> hlo.Module:
  import ember  # noqa: PLC0415 - the API is built on this package
  from ember._src import core  # noqa: PLC0415
  from ember._src.lower import lower_jaxpr  # noqa: PLC0415
  specs = [ember.ShapeDtypeStruct(s.dims, s.dtype) for s in shapes]
  with ember.enable_x64(x64):   # float32's fma works in float64 whatever the caller's mode
    jaxpr = ember.make_jaxpr(fn)(*specs)
  if jaxpr.constvars:
    jaxpr = core.hoist_consts(jaxpr)[0]   # not expected: the functions use literals only
  return lower_jaxpr(jaxpr, getattr(fn, "__name__", "expansion"))


# --------------------------------------------------------------------------------------
# fma
# --------------------------------------------------------------------------------------

def two_sum(lax, a, b):
  """s = RN(a + b) and the exact error e = a + b - s (Knuth's TwoSum), in `lax` operations
  (the samplers of prng_distributions use it too)."""
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
  from ember._src import lax_api as lax  # noqa: PLC0415
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
  from ember._src import lax_api as lax  # noqa: PLC0415
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


_FMA = {"float32": fma_float32, "float64": fma_float64}


# --------------------------------------------------------------------------------------
# lu_pivots_to_permutation
# --------------------------------------------------------------------------------------

def _pivots_to_permutation(permutation_size, pivots):
  """perm = iota; for i < k: swap perm[..., i] and perm[..., pivots[..., i]] (a fori_loop,
  as JAX lowers it on CPU)."""
  from ember._src import lax_api as lax  # noqa: PLC0415
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

"""The PRNG's one primitive: `threefry2x32`, the hash the threefry2x32 PRNG (ember._src.
prng_keys) builds keys and random bits from, with its rules: the shape rule, the NumPy
impl (reference/threefry.py), a broadcasting batching rule and the lowering to its uint32
rounds (native code, no runtime call)."""
from __future__ import annotations

from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.primitives import broadcasting_shape, declare
from ember._src.reference import threefry as threefry_ref
from ember._src.transforms import batching

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

"""What the elementwise families share: the factories of their `lax` functions (a binary
one is registered by `strict_scalars` as the public form that never converts Python scalars),
the helpers of their differentiation rules (zeros, a tangent broadcast to the result, a
cotangent summed down to an operand's shape) and the real dtype of a complex one.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.core import ShapedArray
from ember._src.primitives import bind_elementwise, dtype_kind, strict_scalars


def _unary_fn(p, name):
  def lax_fn(x):
    return p.bind(x)
  lax_fn.__name__ = lax_fn.__qualname__ = name
  return lax_fn


def _binary_fn(p, name):
  def lax_fn(x, y):
    return bind_elementwise(p, x, y)
  lax_fn.__name__ = lax_fn.__qualname__ = name
  return strict_scalars(p, lax_fn)


# --- helpers of the differentiation rules ---------------------------------------------------

def _zeros(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, 0)


def _strong_zeros(x):
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import full_like
  return full_like(x, 0, dtype=x.dtype)


def _bcast_like(t, out):
  """`t` broadcast to the shape of `out` (lax operands are 0-d or size-1 broadcasting)."""
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import broadcast_in_dim
  ts, shape = core.get_aval(t).shape, core.get_aval(out).shape
  if ts == shape:
    return t
  return broadcast_in_dim(t, shape, tuple(range(len(shape))) if ts else ())


def unbroadcast(aval: ShapedArray, x):
  """Sum `x` (the cotangent of an elementwise result) down to the operand's shape: lax
  operands are 0-d or of the result's rank with size-1 dimensions broadcast."""
  # deferred: cycle (structural and reductions build on elementwise)
  from ember._src.primitives.reductions import reduce_sum
  # deferred: cycle among the primitive families
  from ember._src.primitives.structural import reshape
  shape = core.get_aval(x).shape
  if shape == aval.shape:
    return x
  if not aval.shape:
    return reduce_sum(x, tuple(range(len(shape))))
  dims = tuple(i for i, (a, b) in enumerate(zip(aval.shape, shape)) if a == 1 and b != 1)
  return reshape(reduce_sum(x, dims), aval.shape)


def _abs_dtype(dt):
  return np.dtype(np.float32 if dt == np.complex64 else np.float64) if dtype_kind(dt) == "c" else dt

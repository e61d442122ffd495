"""The identity-valued primitives: stop_gradient (its operand, a constant to
differentiation; the identity once lowered) and optimization_barrier (its operands unchanged,
a fusion boundary the compiler may not move work across).
"""
from __future__ import annotations

from ember._src.base import dtypes, tree_util
from ember._src.core import get_aval
from ember._src.hlo.graph import TupleShape
from ember._src.primitives import declare
from ember._src.primitives.control.common import _map
from ember._src.transforms import ad, batching, custom_derivatives

__all__ = ["stop_gradient", "optimization_barrier"]


stop_gradient_p = declare("stop_gradient", lambda x: x, lambda x: x)
stop_gradient_p.lower = lambda ctx, x: x  # the identity once differentiation is done
stop_gradient_p.batch = batching.vectorized(stop_gradient_p)
ad.defjvp_zero(stop_gradient_p)


def stop_gradient(x):
  """The value of `x` (a pytree), treated as a constant by differentiation."""
  def leaf(v):
    if isinstance(get_aval(v).dtype, dtypes.ExtendedDType):
      return v  # keys carry no gradient
    return stop_gradient_p.bind(v)
  return tree_util.tree_map(leaf, x)


custom_derivatives.stop_gradient = stop_gradient   # a custom_jvp's traced nondiff arguments


optimization_barrier_p = declare("optimization_barrier", lambda *xs: list(xs),
                                 lambda *xs: list(xs), multiple_results=True)
optimization_barrier_p.batch = lambda axis_data, vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))
optimization_barrier_p.lower = lambda ctx, *xs: ctx.unpack(ctx.emit(  # a fusion boundary
    "optimization-barrier", TupleShape(tuple(x.shape for x in xs)), [ctx.tuple(xs)]))
ad.deflinear(optimization_barrier_p, lambda cts: optimization_barrier_p.bind(
    *_map(ad.instantiate_zeros, cts)))


def optimization_barrier(operand, /):
  """The values of `operand` (a pytree), unchanged; the compiler may not move work across."""
  leaves, treedef = tree_util.tree_flatten(operand)
  return tree_util.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))

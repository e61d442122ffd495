"""Identity-valued primitives that matter to transformations and the compiler:
stop_gradient (zero derivative) and optimization_barrier (blocks reordering/fusion
across it). Both take pytrees in their `lax` functions, as in JAX.
"""
from __future__ import annotations

from ember._src import dtypes, tree_util
from ember._src.core import get_aval
from ember._src.hlo import TupleShape
from ember._src.primitives import declare

__all__ = ["stop_gradient", "optimization_barrier"]


stop_gradient_p = declare("stop_gradient", lambda x: x, lambda x: x)
stop_gradient_p.lower = lambda ctx, x: x  # the identity once differentiation is done


def stop_gradient(x):
  """The value of `x` (a pytree), treated as a constant by differentiation."""
  def leaf(v):
    if isinstance(get_aval(v).dtype, dtypes.ExtendedDType):
      return v  # keys carry no gradient
    return stop_gradient_p.bind(v)
  return tree_util.tree_map(leaf, x)


optimization_barrier_p = declare("optimization_barrier", lambda *xs: list(xs),
                                 lambda *xs: list(xs), multiple_results=True)
optimization_barrier_p.lower = lambda ctx, *xs: ctx.unpack(ctx.emit(  # a fusion boundary
    "optimization-barrier", TupleShape(tuple(x.shape for x in xs)), [ctx.tuple(xs)]))


def optimization_barrier(operand, /):
  """The values of `operand` (a pytree), unchanged; the compiler may not move work across."""
  leaves, treedef = tree_util.tree_flatten(operand)
  return tree_util.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))

"""The identity-valued primitives: stop_gradient (its operand, a constant to
differentiation; the identity once lowered), optimization_barrier (its operands unchanged,
a fusion boundary the compiler may not move work across), copy (`lax.copy_p`: a fresh
buffer with the operand's value) and stage (`lax.stage_p`: a value lifted into the trace).
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import get_aval
from ember._src.hlo.graph import TupleShape
from ember._src.primitives import declare
from ember._src.primitives.control.common import _map
from ember._src.transforms import ad, batching, custom_derivatives

__all__ = ["stop_gradient", "optimization_barrier", "stage"]


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


def _identity_primitive(name, impl):
  """A linear identity primitive (its cotangent passes through; vmap maps it)."""
  p = declare(name, lambda x: x, impl)
  p.lower = lambda ctx, x: x          # buffers are immutable once lowered: no copy needed
  p.batch = batching.vectorized(p)
  ad.deflinear(p, lambda ct: [ct])
  return p


copy_p = _identity_primitive("copy", lambda x: np.array(x, copy=True))
stage_p = _identity_primitive("stage", lambda x: np.asarray(x))


def stage(x):
  """The identity (`lax.stage`): lifts a Python scalar or NumPy array into the active trace,
  or into an ember Array outside any; a traced value is returned as is."""
  if isinstance(x, core.Tracer):
    return x
  return stage_p.bind(x)

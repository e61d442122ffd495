"""Structural primitives: broadcast, reshape, transpose, slicing, concatenation, padding."""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.core import ShapedArray
from ember._src.primitives import declare

__all__ = ["broadcast_in_dim"]


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions, sharding=None):
  if len(broadcast_dimensions) != x.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                    f"operand ndim; got broadcast_dimensions {broadcast_dimensions} for "
                    f"operand ndim {x.ndim}.")
  for i, d in enumerate(broadcast_dimensions):
    if not 0 <= d < len(shape) or x.shape[i] not in (1, shape[d]):
      raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                      f"equal to their corresponding dimensions in the target broadcast "
                      f"shape; got operand of shape {x.shape}, target broadcast shape "
                      f"{shape}, broadcast_dimensions {broadcast_dimensions}")
  return x.update(shape=shape)


def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions, sharding=None):
  expanded = [1] * len(shape)
  for i, d in enumerate(broadcast_dimensions):
    expanded[d] = x.shape[i]
  return np.broadcast_to(x.reshape(expanded), shape)


def _broadcast_in_dim_pp(eqn, ctx):
  params = {k: v for k, v in eqn.params.items() if k not in ("shape", "sharding")}
  if not params["broadcast_dimensions"]:
    del params["broadcast_dimensions"]
  return core._pp_eqn(eqn, ctx, params)


broadcast_in_dim_p = declare("broadcast_in_dim", _broadcast_in_dim_abstract_eval,
                             _broadcast_in_dim_impl)
broadcast_in_dim_p.pp_rule = _broadcast_in_dim_pp


def broadcast_in_dim(operand, shape, broadcast_dimensions, out_sharding=None):
  shape, bd = tuple(int(d) for d in shape), tuple(int(d) for d in broadcast_dimensions)
  aval = core.get_aval(operand)
  if aval.shape == shape and bd == tuple(range(len(shape))) and not isinstance(operand, (int, float, complex, bool)):
    return operand
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bd, sharding=None)

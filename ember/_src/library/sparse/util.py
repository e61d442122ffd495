"""Helpers shared by the sparse formats: the error and warning classes, SparseInfo, the
batch-dimension vmaps, index linearization, and `composite_primitive`, which makes a
primitive whose every rule is that of a composition of lax/jnp ops."""
from __future__ import annotations

import functools
import math
import operator
from typing import Callable, NamedTuple

import numpy as np

from ember._src.base import dtypes
from ember._src.base.errors import ConcretizationTypeError
from ember._src.core.primitive import Primitive
from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.core.tracers import Tracer
from ember._src.driver.jit import eval_shape
from ember._src.lower import lower_fun
from ember._src.transforms import ad
from ember._src.transforms.batching import not_mapped, primitive_batchers, vmap
from ember._src.library.numpy import creation, logic, reductions, shape as shape_ops


class SparseEfficiencyError(ValueError):
  pass


class SparseEfficiencyWarning(UserWarning):
  pass


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
  """Warned by JAX's cuSPARSE lowerings; ember's CPU code never warns it."""


Shape = tuple[int, ...]


class SparseInfo(NamedTuple):
  shape: Shape
  indices_sorted: bool = False
  unique_indices: bool = False


def static_int(x, what: str) -> int:
  """`x` as a Python int; a traced value raises ConcretizationTypeError naming `what`."""
  if isinstance(x, Tracer):
    raise ConcretizationTypeError(
        f"{what} must be static (a Python int), got a traced value: under jit/vmap, "
        "pass it explicitly as a Python int.")
  return operator.index(int(x)) if not isinstance(x, int) else x


def nfold_vmap(fun: Callable, n: int, in_axes=0) -> Callable:
  """`fun` vmapped `n` times over the leading axes (all operands batched unless
  `in_axes` says None)."""
  for _ in range(n):
    fun = vmap(fun, in_axes=in_axes)
  return fun


def broadcast_batch(x, batch_shape: Shape, n_batch: int):
  """`x` with its leading `n_batch` axes broadcast to `batch_shape` (size-1 batch axes of
  data or indices stand for every batch)."""
  target = tuple(batch_shape) + tuple(x.shape[n_batch:])
  return x if tuple(x.shape) == target else shape_ops.broadcast_to(x, target)


def linear_index(indices, sizes: Shape):
  """Row-major flat positions of `indices[..., n_sparse]` in a block of `sizes`; an index
  out of bounds (the padding sentinel `sizes[i]`, or anything else) maps to prod(sizes)."""
  size = math.prod(sizes)
  lin = creation.zeros(indices.shape[:-1], np.int64 if size >= 2**31 else np.int32)
  oob = creation.zeros(indices.shape[:-1], bool)
  for i, s in enumerate(sizes):
    col = indices[..., i].astype(lin.dtype)
    lin = lin * s + col
    oob = oob | (col < 0) | (col >= s)
  return logic.where(oob, size, lin) if size else lin


def unravel_index(lin, sizes: Shape, dtype):
  """The inverse of `linear_index`: positions >= prod(sizes) become the sentinel `sizes`."""
  size = math.prod(sizes)
  cols = []
  rest = lin
  for s in reversed(sizes):
    cols.append(rest % s if s else rest)
    rest = rest // s if s else rest
  cols = cols[::-1]
  pad = lin >= size
  cols = [logic.where(pad, s, c).astype(dtype) for c, s in zip(cols, sizes)]
  if not cols:
    return creation.zeros(lin.shape + (0,), dtype)
  return shape_ops.stack(cols, axis=-1)


def _avals_like(avals):
  return [ShapeDtypeStruct(a.shape, a.dtype) for a in avals]


def composite_primitive(name: str, fun: Callable, multiple_results: bool) -> Primitive:
  """A primitive `name` whose impl, shape rule, jvp, batching rule and lowering are those of
  `fun(*operands, **params)`, a composition of ember's ops: jit shows one equation, and
  grad differentiates the composition (its ops carry their own transposes)."""
  p = Primitive(name)
  p.multiple_results = multiple_results
  p.def_impl(fun)
  p.def_abstract_eval(lambda *avals, **params: _shape_rule(fun, multiple_results,
                                                           avals, params))
  ad.primitive_jvps[p] = functools.partial(_composite_jvp, p, fun)
  primitive_batchers[p] = functools.partial(_composite_batch, fun, multiple_results)
  p.lower = lower_fun(fun, multiple_results)   # compiled as ember's lowering of `fun`
  return p


def _shape_rule(fun, multiple_results, avals, params):
  out = eval_shape(functools.partial(fun, **params), *_avals_like(avals))
  return list(out) if multiple_results else out


def _differentiable(x) -> bool:
  return dtypes.issubdtype(np.dtype(getattr(x, "dtype", np.float32)), np.inexact)


def _composite_jvp(p, fun, primals, tangents, **params):
  live = [i for i, (x, t) in enumerate(zip(primals, tangents))
          if type(t) is not ad.Zero and _differentiable(x)]
  if not live:
    out = p.bind(*primals, **params)
    zeros = [ad.Zero.from_value(o) for o in out] if p.multiple_results else ad.Zero.from_value(out)
    return out, zeros

  def on_live(*xs):
    args = list(primals)
    for i, x in zip(live, xs):
      args[i] = x
    return fun(*args, **params)
  out, t_out = ad.jvp(on_live, [primals[i] for i in live], [tangents[i] for i in live])
  if p.multiple_results:
    t_out = [t if _differentiable(o) else ad.Zero.from_value(o) for o, t in zip(out, t_out)]
  return out, t_out


def _composite_batch(fun, multiple_results, vals, dims, **params):
  in_axes = tuple(None if d is not_mapped or d is None else d for d in dims)
  out = vmap(functools.partial(fun, **params), in_axes=in_axes)(*vals)
  return (list(out), [0] * len(out)) if multiple_results else (out, 0)


def count_stored_elements(mat, n_batch: int = 0, n_dense: int = 0):
  """The largest number of nonzero (sparse-index) entries over the batches of `mat`."""
  mask = mat != 0
  if n_dense:
    mask = reductions.any(mask, axis=tuple(range(mask.ndim - n_dense, mask.ndim)))
  per_batch = reductions.sum(mask, axis=tuple(range(n_batch, mask.ndim)))
  return reductions.max(per_batch, initial=0)

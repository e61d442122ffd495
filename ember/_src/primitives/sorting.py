"""sort (variadic, lexicographic over the first `num_keys` operands), top_k, and
approx_max_k/approx_min_k (`approx_top_k_p`: exact on the CPU, as JAX's CPU fallback).

Orders follow XLA/JAX: sort is ascending with every NaN last and -0.0 == 0.0 (stable, so
they keep their input order); complex keys sort by (real, imag). top_k is descending and
stable (lower index first on ties), with NaN largest and -0.0 below 0.0.
"""
from __future__ import annotations

import operator

import numpy as np

from ember._src import core
from ember._src import lower as lowering
from ember._src.core import ShapedArray
from ember._src.hlo.graph import Shape, TupleShape
from ember._src.primitives import ANY, BOOL, FLOAT, INTS, check_dtype, declare, dtype_kind
from ember._src.reference import sorting as reference_sorting
from ember._src.transforms import batching

__all__ = ["sort", "sort_key_val", "top_k", "approx_max_k", "approx_min_k"]


def _canonicalize_axis(axis, ndim: int) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


# --- sort -------------------------------------------------------------------------------

def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
  if any(a.shape != avals[0].shape for a in avals[1:]):
    raise TypeError(f"Arguments to sort must have equal shapes, got: "
                    f"{' '.join(str(a.shape) for a in avals)}")
  if not 0 <= dimension < max(avals[0].ndim, 1):
    raise ValueError(f"axis {dimension} is out of bounds for array of dimension "
                     f"{avals[0].ndim}")
  if not 1 <= num_keys <= len(avals):
    raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(avals)}")
  for i, a in enumerate(avals):
    check_dtype("sort", a, ANY, f"operand {i}")
  return list(avals)


sort_p = declare("sort", _sort_abstract_eval, reference_sorting.sort, multiple_results=True)


def _sort_batch(axis_data, vals, dims, *, dimension, **params):
  """Every operand at the batch dim of the first batched one (unbatched ones broadcast);
  the sort dimension shifts past it (JAX's rule)."""
  proto, bdim = next((x, d) for x, d in zip(vals, dims) if d is not None)
  shape = core.get_aval(proto).shape
  keep = [int(i) for i in np.delete(np.arange(len(shape)), bdim)]
  args = [batching.broadcast_in_dim(x, shape, keep) if d is None
          else batching.moveaxis(x, d, bdim) for x, d in zip(vals, dims)]
  outs = sort_p.bind(*args, dimension=dimension + (bdim <= dimension), **params)
  return outs, [bdim] * len(outs)


sort_p.batch = _sort_batch


def _sort_comparator(key_dtypes):
  """XLA's comparator for `sort`: params (lhs_i, rhs_i) per operand, true when lhs sorts
  first: lexicographic over the keys, each ordered as the impl orders it (NaNs last and
  equal to each other, -0.0 == 0.0; complex by real then imaginary part)."""
  def key_order(c, a, b):  # [(lt, eq)] for one key, most significant first
    kind = dtype_kind(a.dtype)
    if kind == "c":
      part = lambda op, v: c.elementwise(op, v, dtype=np.float32 if v.dtype.itemsize == 8
                                         else np.float64)
      return key_order(c, part("real", a), part("real", b)) + \
          key_order(c, part("imag", a), part("imag", b))
    lt, eq = c.compare(a, b, "LT"), c.compare(a, b, "EQ")
    if kind == "f":
      a_nan, b_nan = c.is_nan(a), c.is_nan(b)
      lt = c.or_(lt, c.and_(b_nan, c.not_(a_nan)))
      eq = c.or_(eq, c.and_(a_nan, b_nan))
    return [(lt, eq)]

  def body(c, *params):
    order = [o for i in range(len(key_dtypes))
             for o in key_order(c, params[2 * i], params[2 * i + 1])]
    out = order[-1][0]
    for lt, eq in reversed(order[:-1]):
      out = c.or_(lt, c.and_(eq, out))
    return out

  return body


def _sort_lower(ctx, *xs, dimension, is_stable, num_keys):
  if xs[0].shape.rank == 0:
    return list(xs)
  shapes = [dt for x in xs for dt in (x.dtype, x.dtype)]
  comp = ctx.region("sort_comparator", shapes, _sort_comparator([x.dtype for x in xs[:num_keys]]))
  shape = xs[0].shape if len(xs) == 1 else TupleShape(tuple(x.shape for x in xs))
  out = ctx.emit("sort", shape, list(xs), {"dimension": dimension, "is_stable": is_stable,
                                           "num_keys": num_keys}, [comp])
  return ctx.unpack(out)


sort_p.lower = _sort_lower


def sort(operand, dimension: int = -1, is_stable: bool = True, num_keys: int = 1):
  """Sort along `dimension`; a sequence of operands is sorted by its first `num_keys`."""
  if isinstance(operand, (list, tuple)):
    if not operand:
      raise TypeError("Sort requires at least one operand")
    if not 1 <= num_keys <= len(operand):
      raise ValueError(f"num_keys={num_keys} must be between 1 and "
                       f"len(operand)={len(operand)}")
    dimension = _canonicalize_axis(dimension, core.get_aval(operand[0]).ndim)
    return tuple(sort_p.bind(*operand, dimension=dimension, is_stable=bool(is_stable),
                             num_keys=operator.index(num_keys)))
  if num_keys != 1:
    raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
  dimension = _canonicalize_axis(dimension, core.get_aval(operand).ndim)
  return sort_p.bind(operand, dimension=dimension, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension: int = -1, is_stable: bool = True):
  """Sort `keys` along `dimension` and apply the same permutation to `values`."""
  dimension = _canonicalize_axis(dimension, core.get_aval(keys).ndim)
  k, v = sort_p.bind(keys, values, dimension=dimension, is_stable=bool(is_stable),
                     num_keys=1)
  return k, v


# --- top_k ------------------------------------------------------------------------------

def _top_k_abstract_eval(x, *, k, axis, is_stable):
  if dtype_kind(x.dtype) == "c":
    raise ValueError("top_k is not compatible with complex inputs.")
  check_dtype("top_k", x, BOOL + INTS + FLOAT, "operand")
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if x.ndim == 0:
    raise TypeError(f"top_k operand must have >= 1 dimension, got {x.shape}")
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis argument out of range: axis={axis} for operand.shape={x.shape}")
  if x.shape[axis] < k:
    raise ValueError(f"k argument to top_k must be no larger than size along axis; got "
                     f"k={k} with shape={list(x.shape)} and axis={axis}")
  shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
  # JAX builds the index aval with operand.update(...), so it keeps the weak type.
  return [x.update(shape=shape), ShapedArray(shape, np.int32, x.weak_type)]


top_k_p = declare("top_k", _top_k_abstract_eval, reference_sorting.top_k,
                  multiple_results=True)
top_k_p.batch = lambda axis_data, vals, dims, *, axis, **params: (top_k_p.bind(
    vals[0], axis=axis + (dims[0] <= axis), **params), [dims[0]] * 2)


def _top_k_lower(ctx, x, *, k, axis, is_stable):
  """XLA's TopK works on the last dimension: move `axis` there and back (as JAX)."""
  perm = list(range(x.shape.rank))
  perm[axis], perm[-1] = perm[-1], perm[axis]
  x = ctx.transpose(x, perm)
  dims = x.dims[:-1] + (k,)
  out = ctx.emit("top-k", TupleShape((Shape(x.dtype, dims), Shape(np.dtype(np.int32), dims))),
                 [x], {"k": k})
  return [ctx.transpose(r, perm) for r in ctx.unpack(out)]


top_k_p.lower = _top_k_lower


def top_k(operand, k: int, *, axis: int = -1, is_stable: bool = True):
  """The `k` largest entries along `axis` (descending) and their int32 indices."""
  k = operator.index(k)
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  axis = _canonicalize_axis(axis, core.get_aval(operand).ndim)
  return top_k_p.bind(operand, k=k, axis=axis, is_stable=bool(is_stable))  # a list, as JAX


# Sorting moves values: the NumPy reference computes the compiled bits, so eager calls may
# switch to compiled code at any time (core/primitive.py's `reference_exact`)
for _p in (sort_p, top_k_p):
  _p.reference_exact = True


# --- approx_max_k, approx_min_k: on the CPU XLA computes them exactly (a sort) -----------

def _approx_abstract_eval(x, *, k, reduction_dimension, recall_target, is_max_k,
                          reduction_input_size_override, aggregate_to_topk):
  check_dtype("approx_top_k", x, BOOL + INTS + FLOAT, "operand")
  if not 0 <= reduction_dimension < x.ndim:
    raise ValueError(f"Invalid reduction dimension {reduction_dimension} for operand of "
                     f"shape {x.shape}")
  if not 0 < k <= x.shape[reduction_dimension]:
    raise ValueError(f"k must be positive and no larger than the reduction dimension's size "
                     f"{x.shape[reduction_dimension]}, got k={k}")
  shape = x.shape[:reduction_dimension] + (k,) + x.shape[reduction_dimension + 1:]
  return [x.update(shape=shape), ShapedArray(shape, np.int32)]


def _approx_impl(x, *, k, reduction_dimension, is_max_k, **_):
  if is_max_k:
    return reference_sorting.top_k(x, k=k, axis=reduction_dimension, is_stable=True)
  d = reduction_dimension
  others = tuple(i for i in range(x.ndim) if i != d)
  iota = np.broadcast_to(np.expand_dims(np.arange(x.shape[d], dtype=np.int32), others), x.shape)
  vals, idx = reference_sorting.sort(x, iota, dimension=reduction_dimension, is_stable=True,
                                     num_keys=1)
  first = (slice(None),) * reduction_dimension + (slice(0, k),)
  return [vals[first], idx[first]]


def _approx_lowered(x, *, k, reduction_dimension, is_max_k, **_):
  """top_k for the largest; for the smallest, a stable ascending sort (NaN last) cut at k."""
  # deferred: structural builds on this family
  from ember._src.primitives.structural import broadcasted_iota, slice_in_dim
  if is_max_k:
    return top_k_p.bind(x, k=k, axis=reduction_dimension, is_stable=True)
  aval = core.get_aval(x)
  iota = broadcasted_iota(np.int32, aval.shape, reduction_dimension)
  vals, idx = sort_p.bind(x, iota, dimension=reduction_dimension, is_stable=True, num_keys=1)
  return [slice_in_dim(v, 0, k, axis=reduction_dimension) for v in (vals, idx)]


approx_top_k_p = declare("approx_top_k", _approx_abstract_eval, _approx_impl,
                         multiple_results=True)
approx_top_k_p.reference_exact = True
approx_top_k_p.lower = lowering.lower_fun(_approx_lowered)
approx_top_k_p.batch = lambda axis_data, vals, dims, *, reduction_dimension, **params: (
    approx_top_k_p.bind(vals[0], reduction_dimension=reduction_dimension + (
        dims[0] <= reduction_dimension), **params), [dims[0]] * 2)


def _approx_k(operand, k, reduction_dimension, recall_target, reduction_input_size_override,
              aggregate_to_topk, is_max_k):
  ndim = core.get_aval(operand).ndim
  if ndim == 0:
    raise ValueError("approx_top_k requires an operand of at least one dimension.")
  if not 0 < recall_target <= 1:
    raise ValueError(f"recall_target must be in (0, 1], got {recall_target}")
  return approx_top_k_p.bind(
      operand, k=operator.index(k),
      reduction_dimension=_canonicalize_axis(reduction_dimension, ndim),
      recall_target=float(recall_target), is_max_k=is_max_k,
      reduction_input_size_override=int(reduction_input_size_override),
      aggregate_to_topk=bool(aggregate_to_topk))


def approx_max_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
  """The k largest entries along `reduction_dimension` and their indices: exact on the CPU
  (XLA's fallback sorts), so the recall is 1."""
  return _approx_k(operand, k, reduction_dimension, recall_target,
                   reduction_input_size_override, aggregate_to_topk, True)


def approx_min_k(operand, k: int, reduction_dimension: int = -1, recall_target: float = 0.95,
                 reduction_input_size_override: int = -1, aggregate_to_topk: bool = True):
  """The k smallest entries along `reduction_dimension` (ascending) and their indices."""
  return _approx_k(operand, k, reduction_dimension, recall_target,
                   reduction_input_size_override, aggregate_to_topk, False)

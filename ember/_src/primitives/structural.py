"""Structural primitives: broadcast, reshape, transpose, squeeze, rev, slice, concatenate,
pad, iota; and the `lax` functions built on them (broadcast, expand_dims, full, ...).

Each primitive: shape rule (errors as JAX raises them), NumPy impl, then the `lax`
function. Params, param names and printing follow JAX 0.12.
"""
from __future__ import annotations

import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.primitives import check_same_dtypes, declare
from ember._src.primitives.elementwise import convert_element_type, select_n_p, sub
from ember._src.reference import structural as reference_structural
from ember._src.transforms import ad, batching
from ember._src.primitives.reductions import reduce_sum
from ember._src.core.array import Array

__all__ = ["broadcast_in_dim", "broadcast", "broadcast_to_rank", "reshape", "transpose",
           "squeeze", "expand_dims", "rev", "slice", "slice_in_dim", "index_in_dim",
           "concatenate", "stack", "unstack", "split", "tile", "pad", "iota", "broadcasted_iota", "full", "full_like", "collapse",
           "asarray", "padtype_to_pads"]


# --- shared helpers ---------------------------------------------------------------------

def canonicalize_shape(shape, context: str = "") -> tuple:
  """A shape argument as a tuple of Python ints; JAX's TypeError for anything else."""
  if isinstance(shape, (int, np.integer)) or (
      hasattr(shape, "__index__") and getattr(shape, "ndim", 1) == 0):
    shape = (shape,)
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError:
    pass
  msg = ("Shapes must be 1D sequences of concrete values of integer type, "
         f"got {tuple(shape) if isinstance(shape, (list, tuple)) else shape!r}.")
  if any(isinstance(d, core.Tracer) for d in (shape if isinstance(shape, (list, tuple)) else ())):
    msg += (" If using `jit`, try using `static_argnums` or applying `jit` to smaller "
            "subfunctions.")
  raise TypeError(f"{context}{': ' if context else ''}{msg}")


def _index_tuple(xs, what: str) -> tuple:
  try:
    return tuple(operator.index(d) for d in xs)
  except TypeError:
    raise TypeError(f"{what} must be a sequence of integers, got {xs!r}") from None


def _is_array(x) -> bool:
  """jax.Array in JAX's sense: concrete Arrays and tracers (not NumPy or Python values)."""
  return isinstance(x, (Array, core.Tracer))


def _ndim(x) -> int:
  return core.get_aval(x).ndim


def _shape(x) -> tuple:
  return core.get_aval(x).shape


def _canonicalize_axis(axis, ndim: int) -> int:
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


def _check_nonneg(opname: str, argname: str, xs) -> None:
  if any(d < 0 for d in xs):
    raise TypeError(f"{opname} {argname} must have every element be nonnegative, got {xs}.")


def _weak_if_all(avals) -> bool:
  return all(a.weak_type for a in avals)


def asarray(x):
  """lax.asarray: an Array (or tracer) for any array-like; Python scalars stay weak."""
  if _is_array(x):
    return x
  if hasattr(x, "__jax_array__"):   # (the jnp functions' ensure_arraylike, as in JAX)
    return asarray(core.unwrap_jax_array(x))
  aval = core.get_aval(x)
  return convert_element_type(x, aval.dtype, weak_type=aval.weak_type)


# --- broadcast_in_dim -------------------------------------------------------------------

def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions, sharding=None):
  _check_nonneg("broadcast_in_dim", "shape", shape)
  if len(broadcast_dimensions) != x.ndim:
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must have length equal to "
                    f"operand ndim; got broadcast_dimensions {broadcast_dimensions} for "
                    f"operand ndim {x.ndim}.")
  if len(shape) < x.ndim:
    raise TypeError(f"broadcast_in_dim target broadcast shape must have equal or higher "
                    f"rank to the operand shape; got operand ndim {x.ndim} and target "
                    f"broadcast ndim {len(shape)}.")
  for i, d in enumerate(broadcast_dimensions):
    if not 0 <= d < len(shape):
      raise TypeError(f"broadcast_in_dim broadcast_dimensions must be in range [0, "
                      f"{len(shape)}) for target shape {shape}; got broadcast_dimensions "
                      f"{broadcast_dimensions}.")
    if x.shape[i] not in (1, shape[d]) or len(set(broadcast_dimensions)) != x.ndim:
      raise TypeError(f"broadcast_in_dim operand dimension sizes must either be 1, or be "
                      f"equal to their corresponding dimensions in the target broadcast "
                      f"shape; got operand of shape {x.shape}, target broadcast shape "
                      f"{shape}, broadcast_dimensions {broadcast_dimensions}")
  return x.update(shape=shape)


def _broadcast_in_dim_pp(eqn, ctx):
  params = {k: v for k, v in eqn.params.items() if k not in ("shape", "sharding")}
  if not params["broadcast_dimensions"]:
    del params["broadcast_dimensions"]
  return core._pp_eqn(eqn, ctx, params)


broadcast_in_dim_p = declare("broadcast_in_dim", _broadcast_in_dim_abstract_eval,
                             reference_structural.broadcast_in_dim)
broadcast_in_dim_p.pp_rule = _broadcast_in_dim_pp


def _broadcast_in_dim_batch(axis_data, vals, dims, *, shape, broadcast_dimensions,
                            sharding=None):
  (x,), (d,) = vals, dims
  x = batching.moveaxis(x, d, 0)
  bd = (0,) + tuple(np.add(1, broadcast_dimensions))  # NumPy ints, as JAX prints them
  return broadcast_in_dim_p.bind(x, shape=(batching.shape_of(x)[0],) + tuple(shape),
                                 broadcast_dimensions=bd, sharding=sharding), 0


broadcast_in_dim_p.batch = _broadcast_in_dim_batch
broadcast_in_dim_p.lower = lambda ctx, x, *, shape, broadcast_dimensions, sharding=None: (
    ctx.broadcast_in_dim(x, shape, broadcast_dimensions))


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Broadcast `operand` to `shape`; operand dim i goes to `broadcast_dimensions[i]`."""
  shape = canonicalize_shape(shape, "broadcast_in_dim")
  bd = _index_tuple(broadcast_dimensions, "broadcast_in_dim broadcast_dimensions")
  if _is_array(operand) and _shape(operand) == shape and bd == tuple(range(len(shape))):
    return operand  # the identity broadcast (JAX stages nothing for it either)
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=bd, sharding=None)


def broadcast(operand, sizes, *, out_sharding=None):
  """Add leading dimensions of `sizes`."""
  sizes = canonicalize_shape(sizes, "broadcast")
  if not sizes:
    return asarray(operand)
  nd = _ndim(operand)
  return broadcast_in_dim(operand, sizes + _shape(operand),
                          tuple(range(len(sizes), len(sizes) + nd)))


def broadcast_to_rank(x, rank: int):
  """Prepend size-1 dimensions until `x` has `rank` dimensions."""
  nd = _ndim(x)
  if nd == rank:
    return asarray(x)
  return broadcast(x, (1,) * (rank - nd))


# --- reshape ----------------------------------------------------------------------------

def _reshape_abstract_eval(x, *, new_sizes, dimensions, sharding=None):
  if not all(d >= 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must all be positive, got {new_sizes}.")
  if dimensions is not None and set(dimensions) != set(range(x.ndim)):
    raise TypeError(f"reshape dimensions must be a permutation of operand dimensions, got "
                    f"dimensions {dimensions} for shape {x.shape}.")
  size = int(np.prod(new_sizes, dtype=np.int64))
  if size != x.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} (of "
                    f"total size {size}) for shape {x.shape} (of total size {x.size}).")
  return x.update(shape=new_sizes)


def _reshape_impl(x, *, new_sizes, dimensions, sharding=None):
  if dimensions is not None:
    x = np.transpose(x, dimensions)
  return np.reshape(x, new_sizes)


reshape_p = declare("reshape", _reshape_abstract_eval, _reshape_impl)


def _reshape_batch(axis_data, vals, dims, *, new_sizes, dimensions, sharding=None):
  (x,), (d,) = vals, dims
  x = batching.moveaxis(x, d, 0)
  if dimensions is not None:
    dimensions = (0,) + tuple(np.add(1, dimensions))
  return reshape_p.bind(x, new_sizes=(batching.shape_of(x)[0],) + tuple(new_sizes),
                        dimensions=dimensions, sharding=sharding), 0


reshape_p.batch = _reshape_batch
reshape_p.lower = lambda ctx, x, *, new_sizes, dimensions, sharding=None: ctx.reshape(
    x if dimensions is None else ctx.transpose(x, dimensions), new_sizes)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Reshape (row-major); `dimensions` first transposes the operand."""
  new_sizes = canonicalize_shape(new_sizes, "reshape")
  shape = _shape(operand)
  dims = None if dimensions is None else _index_tuple(dimensions, "reshape dimensions")
  same_dims = dims is None or dims == tuple(range(len(shape)))
  if shape and shape == new_sizes and same_dims and _is_array(operand):
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes,
                        dimensions=None if same_dims else dims, sharding=None)


def collapse(operand, start_dimension: int, stop_dimension: int | None = None):
  """Merge dimensions [start_dimension, stop_dimension) into one."""
  shape = _shape(operand)
  lo = _canonicalize_axis(start_dimension, len(shape) + 1)
  hi = len(shape) if stop_dimension is None else _canonicalize_axis(stop_dimension,
                                                                    len(shape) + 1)
  size = int(np.prod(shape[lo:hi], dtype=np.int64))
  return reshape(operand, shape[:lo] + (size,) + shape[hi:])


# --- transpose --------------------------------------------------------------------------

def _transpose_abstract_eval(x, *, permutation):
  if tuple(sorted(permutation)) != tuple(range(x.ndim)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {permutation} for operand shape {x.shape}.")
  return x.update(shape=tuple(x.shape[i] for i in permutation))


transpose_p = declare("transpose", _transpose_abstract_eval,
                      lambda x, *, permutation: np.transpose(x, permutation))
transpose_p.lower = lambda ctx, x, *, permutation: ctx.transpose(x, permutation)


def _transpose_batch(axis_data, vals, dims, *, permutation):
  (x,), (d,) = vals, dims
  perm = (d,) + tuple(i if i < d else i + 1 for i in permutation)
  return transpose_p.bind(x, permutation=perm), 0


transpose_p.batch = _transpose_batch


def transpose(operand, permutation):
  """Permute dimensions: output dim i is operand dim `permutation[i]`."""
  perm = _index_tuple(permutation, "transpose permutation")
  if perm == tuple(range(_ndim(operand))) and _is_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=perm)


# --- squeeze / expand_dims --------------------------------------------------------------

def _squeeze_abstract_eval(x, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"dimensions are not unique: {dimensions}")
  if not all(0 <= d < x.ndim for d in dimensions):
    raise ValueError(f"dimensions outside range [0, ndim): {dimensions}")
  if any(x.shape[d] != 1 for d in dimensions):
    raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                     f"one, got shape={x.shape} and dimensions={dimensions}")
  return x.update(shape=tuple(s for i, s in enumerate(x.shape) if i not in dimensions))


squeeze_p = declare("squeeze", _squeeze_abstract_eval,
                    lambda x, *, dimensions: np.squeeze(x, tuple(dimensions)))
squeeze_p.lower = lambda ctx, x, *, dimensions: ctx.reshape(x, ctx.out_shape().dims)
squeeze_p.batch = lambda axis_data, vals, dims, *, dimensions: (squeeze_p.bind(
    batching.moveaxis(vals[0], dims[0], 0), dimensions=tuple(int(d) + 1 for d in dimensions)), 0)


def squeeze(array, dimensions):
  """Remove the size-1 `dimensions`."""
  nd = _ndim(array)
  dims = tuple(sorted(_canonicalize_axis(d, nd) for d in dimensions))
  if not dims and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dims)


def expand_dims(array, dimensions):
  """Insert size-1 dimensions at `dimensions` (positions in the result)."""
  dimensions = _index_tuple(dimensions, "expand_dims dimensions")
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"repeated axis in lax.expand_dims: {dimensions}")
  ndim_out = _ndim(array) + len(dimensions)
  dims = [_canonicalize_axis(d, ndim_out) for d in dimensions]
  if len(set(dims)) != len(dims):
    raise ValueError(f"repeated axis in lax.expand_dims: {dims}")
  shape = list(_shape(array))
  for d in sorted(dims):
    shape.insert(d, 1)
  return broadcast_in_dim(array, shape, [i for i in range(ndim_out) if i not in set(dims)])


# --- rev --------------------------------------------------------------------------------

def _rev_abstract_eval(x, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise TypeError(f"rev dimensions must be unique, got {dimensions}.")
  if dimensions and not (min(dimensions) >= 0 and max(dimensions) < x.ndim):
    raise TypeError(f"rev dimensions must all be less than operand ndim, got dimensions "
                    f"{dimensions} for operand ndim {x.ndim}.")
  return x


rev_p = declare("rev", _rev_abstract_eval,
                lambda x, *, dimensions: np.flip(x, tuple(dimensions)) if dimensions else x)
rev_p.lower = lambda ctx, x, *, dimensions: ctx.rev(x, dimensions)
rev_p.batch = lambda axis_data, vals, dims, *, dimensions: (rev_p.bind(
    vals[0], dimensions=tuple(i + 1 if i >= dims[0] else i for i in dimensions)), dims[0])


def rev(operand, dimensions):
  """Reverse the order of elements along `dimensions`."""
  return rev_p.bind(operand, dimensions=_index_tuple(dimensions, "rev dimensions"))


# --- slice ------------------------------------------------------------------------------

def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
  if x.ndim != len(start_indices):
    raise TypeError(f"slice start_indices must have length equal to the number of "
                    f"dimensions of the operand, got indices {start_indices} for operand "
                    f"shape {x.shape}.")
  if len(start_indices) != len(limit_indices):
    raise TypeError(f"slice limit_indices must have the same length as start_indices, got "
                    f"start_indices {start_indices} and limit_indices {limit_indices}.")
  if not all(l <= d for l, d in zip(limit_indices, x.shape)):
    raise TypeError(f"slice limit_indices must be less than or equal to operand shape, got "
                    f"limit_indices {limit_indices} for operand shape {x.shape}.")
  if not all(s >= 0 for s in start_indices):
    raise TypeError(f"slice start_indices must be greater than or equal to zero, got "
                    f"start_indices of {start_indices}.")
  if not all(l >= s for s, l in zip(start_indices, limit_indices)):
    raise TypeError(f"slice limit_indices must be greater than or equal to start_indices, "
                    f"got start_indices {start_indices} and limit_indices {limit_indices}.")
  diff = tuple(l - s for s, l in zip(start_indices, limit_indices))
  if strides is None:
    return x.update(shape=diff)
  if len(strides) != x.ndim:
    raise TypeError(f"slice strides must have length equal to the number of dimensions of "
                    f"the operand, got strides {strides} for operand shape {x.shape}.")
  if not all(s > 0 for s in strides):
    raise TypeError(f"slice strides must be positive, got {strides}")
  return x.update(shape=tuple(0 if d == 0 else (d - 1) // s + 1
                              for d, s in zip(diff, strides)))


slice_p = declare("slice", _slice_abstract_eval, reference_structural.slice)
slice_p.lower = lambda ctx, x, *, start_indices, limit_indices, strides: ctx.slice(
    x, start_indices, limit_indices, strides)


def _slice_batch(axis_data, vals, dims, *, start_indices, limit_indices, strides):
  (x,), (d,) = vals, dims
  ins = lambda seq, v: tuple(seq[:d]) + (v,) + tuple(seq[d:])
  return slice_p.bind(x, start_indices=ins(start_indices, 0),
                      limit_indices=ins(limit_indices, batching.shape_of(x)[d]),
                      strides=None if strides is None else ins(strides, 1)), d


slice_p.batch = _slice_batch


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001 - lax.slice
  """Static slice `operand[start:limit:stride]` in every dimension."""
  return slice_p.bind(
      operand, start_indices=_index_tuple(start_indices, "slice start_indices"),
      limit_indices=_index_tuple(limit_indices, "slice limit_indices"),
      strides=None if strides is None else _index_tuple(strides, "slice strides"))


def slice_in_dim(operand, start_index, limit_index, stride: int = 1, axis: int = 0):
  """lax.slice along one axis; None and negative indices count as in Python."""
  shape = _shape(operand)
  axis = operator.index(axis)
  n = shape[axis]
  start = 0 if start_index is None else operator.index(start_index)
  limit = n if limit_index is None else operator.index(limit_index)
  start, limit = start + n if start < 0 else start, limit + n if limit < 0 else limit
  starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
  starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
  return slice(operand, starts, limits, strides)


def index_in_dim(operand, index: int, axis: int = 0, keepdims: bool = True):
  """The slice at `index` along `axis` (kept as a size-1 dim unless keepdims=False)."""
  index, axis = operator.index(index), operator.index(axis)
  n = _shape(operand)[axis]
  wrapped = index + n if index < 0 else index
  if not 0 <= wrapped < n:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
  out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return out if keepdims else squeeze(out, (axis,))


# --- concatenate ------------------------------------------------------------------------

def _concatenate_abstract_eval(*xs, dimension):
  if not xs:
    raise TypeError("concatenate expects at least one operand, got 0.")
  shapes = ", ".join(str(x.shape) for x in xs)
  if len({x.ndim for x in xs}) != 1:
    raise TypeError(f"Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{shapes}.")
  if not 0 <= dimension < xs[0].ndim:
    raise TypeError(f"concatenate dimension out of bounds: dimension {dimension} for "
                    f"shapes {shapes}.")
  others = {x.shape[:dimension] + x.shape[dimension + 1:] for x in xs}
  if len(others) != 1:
    raise TypeError(f"Cannot concatenate arrays with shapes that differ in dimensions other "
                    f"than the one being concatenated: concatenating along dimension "
                    f"{dimension} for shapes {shapes}.")
  check_same_dtypes("concatenate", xs)
  shape = list(xs[0].shape)
  shape[dimension] = sum(x.shape[dimension] for x in xs)
  return ShapedArray(shape, xs[0].dtype, _weak_if_all(xs))


concatenate_p = declare("concatenate", _concatenate_abstract_eval,
                        lambda *xs, dimension: np.concatenate(xs, axis=dimension))
concatenate_p.lower = lambda ctx, *xs, dimension: ctx.concatenate(xs, dimension)
concatenate_p.batch = batching.all_at_front(concatenate_p, "dimension")


def concatenate(operands, dimension: int):
  """Join arrays of equal dtype along an existing `dimension` (no negative dims)."""
  operands = list(operands)
  if not operands:
    raise ValueError("concatenate requires a non-empty sequences of arrays")
  if len(operands) == 1 and _is_array(operands[0]):
    return operands[0]
  return concatenate_p.bind(*operands, dimension=operator.index(dimension))


# --- stack / unstack / split / tile (JAX 0.12 primitives behind jnp.stack, jnp.split, ...) -

def _stack_abstract_eval(*xs, axis):
  if not xs:
    raise ValueError("stack expects at least one operand, got 0.")
  shapes = ", ".join(str(x.shape) for x in xs)
  if len({x.ndim for x in xs}) != 1:
    raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                     f"{shapes}.")
  if len({x.shape for x in xs}) != 1:
    raise ValueError(f"All input arrays must have the same shape. Got {shapes}.")
  check_same_dtypes("stack", xs)
  if not 0 <= axis <= xs[0].ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {xs[0].ndim + 1}")
  shape = list(xs[0].shape)
  shape.insert(axis, len(xs))
  return ShapedArray(shape, xs[0].dtype, _weak_if_all(xs))


stack_p = declare("stack", _stack_abstract_eval, lambda *xs, axis: np.stack(xs, axis))


def _stack_batch(axis_data, vals, dims, *, axis):
  """Operands batched alike stack around their batch dim; otherwise all go in front."""
  d = dims[0]
  if d is not None and all(b == d for b in dims):
    return stack_p.bind(*vals, axis=axis if axis <= d else axis + 1), d + (axis <= d)
  return _stack_at_front(axis_data, vals, dims, axis=axis)


_stack_at_front = batching.all_at_front(stack_p, "axis")
stack_p.batch = _stack_batch
stack_p.lower = lambda ctx, *xs, axis: ctx.concatenate(  # each gets a size-1 axis
    [ctx.reshape(x, x.dims[:axis] + (1,) + x.dims[axis:]) for x in xs], axis)


def stack(operands, axis: int = 0):
  """Join equal-shape, equal-dtype arrays along a new `axis`."""
  operands = [asarray(x) for x in operands]
  if not operands:
    raise ValueError("stack expects at least one operand, got 0.")
  return stack_p.bind(*operands, axis=_canonicalize_axis(axis, _ndim(operands[0]) + 1))


def _unstack_abstract_eval(x, *, axis):
  if x.ndim == 0:
    raise ValueError(f"unstack requires arrays with rank > 0, however a scalar array of "
                     f"shape {x.shape} was passed.")
  shape = x.shape[:axis] + x.shape[axis + 1:]
  return [x.update(shape=shape)] * x.shape[axis]


unstack_p = declare("unstack", _unstack_abstract_eval,
                    lambda x, *, axis: [np.take(x, i, axis) for i in range(x.shape[axis])],
                    multiple_results=True)


def _unstack_batch(axis_data, vals, dims, *, axis):
  (x,), (d,) = vals, dims
  axis, d = (axis, d - 1) if axis < d else (axis + 1, d)
  outs = unstack_p.bind(x, axis=axis)
  return outs, [d] * len(outs)


unstack_p.batch = _unstack_batch
unstack_p.lower = lambda ctx, x, *, axis: [
    ctx.reshape(ctx.slice_in_dim(x, i, i + 1, axis), x.dims[:axis] + x.dims[axis + 1:])
    for i in range(x.dims[axis])]


def unstack(x, axis: int = 0):
  """The slices of `x` along `axis`, as a tuple."""
  x = asarray(x)
  return tuple(unstack_p.bind(x, axis=_canonicalize_axis(axis, _ndim(x))))


def _split_abstract_eval(x, *, sizes, axis):
  if any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {list(sizes)}")
  if not 0 <= axis < x.ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
  if x.shape[axis] != sum(sizes):
    raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                     f"operand shape {list(x.shape)}")
  return [x.update(shape=x.shape[:axis] + (n,) + x.shape[axis + 1:]) for n in sizes]


def _split_impl(x, *, sizes, axis):
  return np.split(x, np.cumsum(sizes)[:-1], axis) if sizes else []


split_p = declare("split", _split_abstract_eval, _split_impl, multiple_results=True)
split_p.batch = lambda axis_data, vals, dims, *, sizes, axis: (split_p.bind(
    vals[0], sizes=sizes, axis=axis + 1 if axis >= dims[0] else axis), [dims[0]] * len(sizes))
split_p.lower = lambda ctx, x, *, sizes, axis: [
    ctx.slice_in_dim(x, int(start), int(start) + n, axis)
    for start, n in zip(np.cumsum((0,) + tuple(sizes))[:-1], sizes)]


def split(operand, sizes, axis: int = 0):
  """Split `operand` along `axis` into consecutive chunks of the given `sizes`."""
  operand = asarray(operand)
  return split_p.bind(operand, sizes=_index_tuple(sizes, "split sizes"),
                      axis=_canonicalize_axis(axis, _ndim(operand)))


def _tile_abstract_eval(x, *, reps):
  if x.ndim != len(reps):
    raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                    f"and x.ndim={x.ndim}.")
  _check_nonneg("tile", "reps", reps)
  return x.update(shape=tuple(d * r for d, r in zip(x.shape, reps)))


tile_p = declare("tile", _tile_abstract_eval, lambda x, *, reps: np.tile(x, reps))


def _tile_lower(ctx, x, *, reps):
  """Broadcast to (r0, d0, r1, d1, ...), then merge each pair (as JAX lowers tile)."""
  wide = tuple(v for r, d in zip(reps, x.dims) for v in (r, d))
  y = ctx.broadcast_in_dim(x, wide, tuple(range(1, 2 * len(reps), 2)))
  return ctx.reshape(y, tuple(r * d for r, d in zip(reps, x.dims)))


tile_p.lower = _tile_lower
tile_p.batch = lambda axis_data, vals, dims, *, reps: (tile_p.bind(
    vals[0], reps=tuple(reps[:dims[0]]) + (1,) + tuple(reps[dims[0]:])), dims[0])


def tile(operand, reps):
  """Repeat `operand` `reps[i]` times along each dimension i (len(reps) == ndim)."""
  return tile_p.bind(operand, reps=_index_tuple(reps, "tile reps"))


# --- pad --------------------------------------------------------------------------------

def _pad_abstract_eval(x, padding_value, *, padding_config):
  if padding_value.ndim != 0:
    raise ValueError(f"padding_value must be a scalar; got "
                     f"np.shape(padding_value)={padding_value.shape}")
  if x.dtype != padding_value.dtype:
    raise TypeError(f"pad operand and padding_value must be same dtype: got "
                    f"{x.dtype.name} and {padding_value.dtype.name}.")
  if len(padding_config) != x.ndim:
    raise ValueError(f"length of padding_config must equal the number of axes of operand, "
                     f"got padding_config {padding_config} for operand shape {x.shape}")
  if not all(i >= 0 for _, _, i in padding_config):
    raise ValueError(f"interior padding in padding_config must be nonnegative, got "
                     f"padding_config {padding_config}")
  shape = tuple(lo + hi + (0 if d == 0 else (d - 1) * (i + 1) + 1)
                for (lo, hi, i), d in zip(padding_config, x.shape))
  if not all(d >= 0 for d in shape):
    raise ValueError(f"Dimension size after padding is not at least 0, got result shape "
                     f"{shape}, for padding_config {padding_config} and operand shape "
                     f"{x.shape}")
  return ShapedArray(shape, x.dtype, x.weak_type and padding_value.weak_type)


pad_p = declare("pad", _pad_abstract_eval, reference_structural.pad)
pad_p.lower = lambda ctx, x, value, *, padding_config: ctx.pad(
    x, value, [c[0] for c in padding_config], [c[1] for c in padding_config],
    [c[2] for c in padding_config])


def _pad_batch(axis_data, vals, dims, *, padding_config):
  """A batched padding value: pad with zeros, then select the per-example value where a
  mask of the padding says so (JAX's rule)."""
  (x, value), (xd, vd) = vals, dims
  if xd is None:
    x, xd = batching.broadcast(x, axis_data.size, 0), 0
  config = tuple(padding_config[:xd]) + ((0, 0, 0),) + tuple(padding_config[xd:])
  if vd is None:
    return pad_p.bind(x, value, padding_config=config), xd
  aval = core.get_aval(x)
  out = pad_p.bind(x, np.zeros((), aval.dtype), padding_config=config)
  mask = pad_p.bind(full(aval.shape, True), False, padding_config=config)
  fill = broadcast_in_dim(value, core.get_aval(out).shape, (xd,))
  return select_n_p.bind(mask, fill, out), xd


pad_p.batch = _pad_batch


def pad(operand, padding_value, padding_config):
  """Pad with (low, high, interior) per dimension; negative low/high crop."""
  config = tuple(tuple(_index_tuple(c, "pad padding_config")) for c in padding_config)
  if any(len(c) != 3 for c in config):
    raise TypeError(f"pad padding_config must be a sequence of (low, high, interior) "
                    f"triples, got {padding_config}")
  return pad_p.bind(operand, padding_value, padding_config=config)


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """Explicit (low, high) pads for 'SAME' / 'SAME_LOWER' / 'VALID' window padding."""
  if isinstance(padding, str):
    mode = padding.upper()
    if mode == "VALID":
      return [(0, 0)] * len(in_shape)
    if mode in ("SAME", "SAME_LOWER"):
      out = [-(-d // s) for d, s in zip(in_shape, window_strides)]
      total = [max((o - 1) * s + w - d, 0)
               for o, s, w, d in zip(out, window_strides, window_shape, in_shape)]
      if mode == "SAME":
        return [(t // 2, t - t // 2) for t in total]
      return [(t - t // 2, t // 2) for t in total]
    raise TypeError(f"Unknown padding type: {padding}.")
  return [tuple(p) for p in padding]


# --- iota -------------------------------------------------------------------------------

def _iota_abstract_eval(*, dtype, shape, dimension, sharding=None):
  _check_nonneg("iota", "shape", shape)
  if np.dtype(dtype) == np.bool_:
    raise TypeError("iota does not accept dtype bool. Accepted dtypes are subtypes of "
                    "integer, floating, complexfloating.")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension must be between 0 and len(shape), got "
                     f"dimension={dimension} for shape={shape}")
  return ShapedArray(shape, dtype, False)


def _iota_impl(*, dtype, shape, dimension, sharding=None):
  idx = np.arange(shape[dimension]).reshape([-1 if i == dimension else 1
                                             for i in range(len(shape))])
  return np.broadcast_to(idx, shape).astype(dtype)


iota_p = declare("iota", _iota_abstract_eval, _iota_impl)
iota_p.lower = lambda ctx, *, dtype, shape, dimension, sharding=None: ctx.iota(
    dtype, shape, dimension)


def broadcasted_iota(dtype, shape, dimension: int, *, out_sharding=None):
  """0, 1, 2, ... along `dimension` of an array of `shape`."""
  dtype = dtypes.check_user_dtype(dtype, "broadcasted_iota")
  shape = canonicalize_shape(shape, "broadcasted_iota")
  return iota_p.bind(dtype=dtype, shape=shape, dimension=operator.index(dimension),
                     sharding=None)


def iota(dtype, size: int):
  """0, 1, ..., size-1."""
  return broadcasted_iota(dtype, (size,), 0)


# --- full -------------------------------------------------------------------------------

def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of `shape` filled with the scalar `fill_value` (weak if it is and no dtype)."""
  shape = canonicalize_shape(shape, "full")
  if core.get_aval(fill_value).shape:
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{core.get_aval(fill_value).shape}.")
  if dtype is None:
    weak, dt = dtypes.is_weakly_typed(fill_value), core.get_aval(fill_value).dtype
  else:
    weak, dt = False, dtypes.check_user_dtype(dtype, "full")
  if dtypes.has_rules(dt):   # a user's extended dtype fills by its rules
    return dt._rules.full(shape, fill_value, dt)
  return broadcast(convert_element_type(fill_value, dt, weak), shape)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """`full` with the shape and dtype (and weak type) of `x` unless given."""
  aval = core.get_aval(x) if core.is_arraylike(x) else ShapedArray(x.shape, x.dtype)
  fill_shape = aval.shape if shape is None else canonicalize_shape(shape, "full_like")
  weak = dtype is None and dtypes.is_weakly_typed(x)
  dt = aval.dtype if dtype is None else dtypes.check_user_dtype(dtype, "full_like")
  return full(fill_shape, convert_element_type(fill_value, dt, weak))


def _zeros_like_shaped_array(aval: ShapedArray):
  """The zeros AD instantiates for a symbolic zero of type `aval` (a user's extended dtype:
  its rules' zero)."""
  if dtypes.has_rules(aval.dtype):
    return broadcast(aval.dtype._rules.zero(aval.dtype), aval.shape)
  return full(aval.shape, convert_element_type(0, aval.dtype, aval.weak_type))


# hooks of the transforms (a layer below, so they cannot import these)
ad.aval_zeros_likers[ShapedArray] = _zeros_like_shaped_array
batching.dimension_ops.update(transpose_p=transpose_p, broadcast_in_dim_p=broadcast_in_dim_p,
                              broadcast_in_dim=broadcast_in_dim, reduce_sum=reduce_sum)


# --- differentiation rules: every structural primitive is linear (jvp: the primitive on
# the tangents); the transposes route cotangents back (JAX's lax rules) ----------------------

def _reduce_sum(x, axes):
  return reduce_sum(x, tuple(axes)) if axes else x


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions, sharding=None):
  in_shape = x.aval.shape
  unit = [i for i, d in enumerate(in_shape) if d == 1 and shape[broadcast_dimensions[i]] != 1]
  kept = {d for i, d in enumerate(broadcast_dimensions) if i not in unit}
  out = _reduce_sum(ct, [i for i in range(len(shape)) if i not in kept])
  return [reshape(out, in_shape) if unit else out]


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
  shape, ct_shape = x.aval.shape, core.get_aval(ct).shape
  if strides is None or all(s == 1 for s in strides):
    config = [(lo, n - hi, 0) for lo, hi, n in zip(start_indices, limit_indices, shape)]
  else:
    real_limits = [lo + (0 if c == 0 else (c - 1) * s + 1)
                   for lo, c, s in zip(start_indices, ct_shape, strides)]
    config = [(lo, n - hi, s - 1) for lo, hi, n, s in zip(start_indices, real_limits, shape,
                                                          strides)]
  return [pad(ct, np.zeros((), x.aval.dtype), config)]


def _concatenate_transpose(ct, *xs, dimension):
  out, start = [], 0
  for x in xs:
    size = x.aval.shape[dimension] if ad.is_undefined_primal(x) else core.get_aval(x).shape[dimension]
    out.append(slice_in_dim(ct, start, start + size, axis=dimension)
               if ad.is_undefined_primal(x) else None)
    start += size
  return out


def _tile_transpose(ct, x, *, reps):
  wide = tuple(v for r, d in zip(reps, x.aval.shape) for v in (r, d))
  return [reshape(_reduce_sum(reshape(ct, wide), range(0, 2 * len(reps), 2)), x.aval.shape)]


def _pad_transpose(ct, x, padding_value, *, padding_config):
  if not padding_config:  # a 0-d operand: the result is the operand
    return [ct if ad.is_undefined_primal(x) else None,
            np.zeros((), core.get_aval(ct).dtype) if ad.is_undefined_primal(padding_value) else None]
  lo, hi, interior = zip(*padding_config)
  unpadded = pad(ct, np.zeros((), core.get_aval(ct).dtype), [(-a, -b, 0) for a, b in zip(lo, hi)])
  t_operand = slice(unpadded, [0] * len(lo), core.get_aval(unpadded).shape,
                    [i + 1 for i in interior])
  total = lambda v: _reduce_sum(v, range(core.get_aval(v).ndim))
  return [t_operand if ad.is_undefined_primal(x) else None,
          sub(total(ct), total(t_operand)) if ad.is_undefined_primal(padding_value) else None]


ad.deflinear2(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _reshape_transpose(ct, x, *, new_sizes, dimensions, sharding=None):
  if dimensions is None:
    return [reshape(ct, x.aval.shape)]
  # the forward op transposed first: undo the reshape into that order, then the transpose
  ct = reshape(ct, tuple(x.aval.shape[d] for d in dimensions))
  return [transpose(ct, tuple(int(i) for i in np.argsort(dimensions)))]


ad.deflinear2(reshape_p, _reshape_transpose)
ad.deflinear(transpose_p, lambda ct, *, permutation: [
    transpose(ct, tuple(int(i) for i in np.argsort(permutation)))])
ad.deflinear2(squeeze_p, lambda ct, x, **_: [reshape(ct, x.aval.shape)])
ad.deflinear(rev_p, lambda ct, *, dimensions: [rev(ct, dimensions)])
ad.deflinear2(slice_p, _slice_transpose)
ad.deflinear2(concatenate_p, _concatenate_transpose)
ad.deflinear(stack_p, lambda ct, *, axis: unstack_p.bind(ct, axis=axis))
ad.deflinear(unstack_p, lambda cts, *, axis: [
    stack_p.bind(*map(ad.instantiate_zeros, cts), axis=axis)])
ad.deflinear(split_p, lambda cts, *, sizes, axis: [
    concatenate_p.bind(*map(ad.instantiate_zeros, cts), dimension=axis)])
ad.deflinear2(tile_p, _tile_transpose)
ad.deflinear2(pad_p, _pad_transpose)


# Data movement: the NumPy reference computes the compiled bits, so eager calls may switch
# to compiled code at any time (core/primitive.py's `reference_exact`)
for _p in (broadcast_in_dim_p, concatenate_p, iota_p, pad_p, reshape_p, rev_p, slice_p,
           split_p, squeeze_p, stack_p, tile_p, transpose_p, unstack_p):
  _p.reference_exact = True

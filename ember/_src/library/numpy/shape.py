"""ember.numpy shape manipulation: reshape, transpose, joining, splitting, tiling,
flipping, rolling, padding, ... all built from the structural lax primitives.

Shapes, axes, split points, repeats and pad widths are static (Python values), as in
JAX; they are validated here with NumPy's/JAX's messages.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, indexing
from ember._src.library.numpy.util import (
    broadcast_shapes as _broadcast_shapes, canonicalize_axis, check_arraylike, promote_dtypes)
from ember._src.primitives.structural import canonicalize_shape
from ember._src.library.random.keys import PRNGKeyArray

__all__ = [
    "reshape", "ravel", "transpose", "permute_dims", "matrix_transpose", "swapaxes",
    "moveaxis", "rollaxis", "expand_dims", "squeeze", "concatenate", "concat", "stack",
    "hstack", "vstack", "dstack", "column_stack", "split", "array_split", "hsplit", "vsplit",
    "dsplit", "unstack", "broadcast_to", "broadcast_arrays", "broadcast_shapes", "tile",
    "repeat", "flip", "fliplr", "flipud", "roll", "rot90", "pad", "atleast_1d", "atleast_2d",
    "atleast_3d", "append", "insert", "delete", "resize", "block", "shape", "ndim", "size",
    "_reshape_method", "_transpose_method",
]

_range = builtins.range


def _asarray(fun_name: str, x):
  check_arraylike(fun_name, x)
  return lax.asarray(x)


def _shape(x) -> tuple:
  return core.get_aval(x).shape


def _ndim(x) -> int:
  return core.get_aval(x).ndim


def _axes_tuple(axis) -> tuple:
  return (operator.index(axis),) if np.ndim(axis) == 0 else tuple(map(operator.index, axis))


def _is_concrete(x) -> bool:
  return not isinstance(x, core.Tracer) or x.to_concrete_value() is not None


def _static_ints(x, fun_name: str, what: str) -> np.ndarray:
  """A concrete integer argument (int, sequence or array) as a NumPy array."""
  if isinstance(x, core.Tracer):
    v = x.to_concrete_value()
    if v is None:
      raise errors.ConcretizationTypeError(
          f"jnp.{fun_name}: {what} must be static (a Python int, sequence or concrete "
          f"array), got a traced array {x.aval.str_short()}. Mark the argument static with "
          "static_argnums / static_argnames.")
    x = v
  arr = np.asarray(x)
  if arr.dtype.kind not in "iub":
    raise TypeError(f"jnp.{fun_name}: {what} must be integers, got {x!r}")
  return arr.astype(np.int64)


# --- reshape / ravel / transpose ---------------------------------------------------------

def _compute_newshape(a_shape, shape) -> tuple:
  size = math.prod(a_shape)
  neg = [i for i, d in enumerate(shape) if d == -1]
  if len(neg) > 1:
    raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {shape}")
  if neg:
    known = math.prod(d for d in shape if d != -1)
    if known == 0 or size % known:
      why = ("the unknown size of a -1 is ambiguous with the other sizes multiplying to 0"
             if known == 0 else f"the product of specified axis sizes ({known}) does not "
             f"evenly divide {size}")
      raise TypeError(f"cannot reshape array of shape {a_shape} (size {size}) into shape "
                      f"{shape} because {why}")
    return tuple(size // known if d == -1 else d for d in shape)
  if math.prod(shape) != size or any(d < 0 for d in shape):
    raise TypeError(f"cannot reshape array of shape {a_shape} (size {size}) into shape "
                    f"{shape} (size {math.prod(shape)})")
  return shape


def reshape(a, shape=None, order: str = "C", *, copy=None, out_sharding=None):
  """Give `a` a new shape (one dim may be -1); order 'C' (row-major) or 'F'."""
  a = _asarray("reshape", a)
  if shape is None:
    raise TypeError("jnp.reshape() missing required argument 'shape'")
  shape = canonicalize_shape(shape, "reshape")
  new = _compute_newshape(_shape(a), shape)
  if order == "C":
    return lax.reshape(a, new)
  if order == "F":
    nd = _ndim(a)
    return lax.transpose(lax.reshape(a, new[::-1], tuple(_range(nd - 1, -1, -1))),
                         tuple(_range(len(new) - 1, -1, -1)))
  raise ValueError(f"jnp.reshape: order={order!r} is not supported; use 'C' (row-major) or "
                   "'F' (column-major).")


def ravel(a, order: str = "C", *, out_sharding=None):
  """`a` flattened to one dimension."""
  a = _asarray("ravel", a)
  if order not in ("C", "F"):
    raise ValueError(f"jnp.ravel: order={order!r} is not supported; use 'C' or 'F'.")
  return reshape(a, (core.get_aval(a).size,), order)


def _reshape_method(a, *args, order: str = "C", out_sharding=None):
  """Array.reshape: a.reshape(2, 3) and a.reshape((2, 3)) both work."""
  if len(args) == 1 and not isinstance(args[0], (int, np.integer)) and np.ndim(args[0]) != 0:
    args = args[0]
  return reshape(a, args, order=order)


def _transpose_method(a, *args):
  """Array.transpose: a.transpose(), a.transpose(1, 0) and a.transpose((1, 0))."""
  if len(args) == 1 and (args[0] is None or np.ndim(args[0]) != 0):
    args = args[0]
  return transpose(a, args or None)


def transpose(a, axes=None):
  """Permute the dimensions (reverse them when `axes` is None)."""
  a = _asarray("transpose", a)
  nd = _ndim(a)
  perm = tuple(_range(nd - 1, -1, -1)) if axes is None else tuple(
      canonicalize_axis(i, nd, "transpose") for i in axes)
  return lax.transpose(a, perm)


def permute_dims(a, /, axes):
  """Array API spelling of transpose (axes required)."""
  check_arraylike("permute_dims", a)
  return transpose(a, axes)


def matrix_transpose(x, /):
  """Swap the last two dimensions."""
  x = _asarray("matrix_transpose", x)
  nd = _ndim(x)
  if nd < 2:
    raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
  return lax.transpose(x, (*_range(nd - 2), nd - 1, nd - 2))


def swapaxes(a, axis1: int, axis2: int):
  """Interchange two axes."""
  a = _asarray("swapaxes", a)
  nd = _ndim(a)
  perm = list(_range(nd))
  i, j = canonicalize_axis(axis1, nd, "swapaxes"), canonicalize_axis(axis2, nd, "swapaxes")
  perm[i], perm[j] = perm[j], perm[i]
  return lax.transpose(a, perm)


def moveaxis(a, source, destination):
  """Move axes `source` to positions `destination`; the others keep their order."""
  a = _asarray("moveaxis", a)
  nd = _ndim(a)
  src = tuple(canonicalize_axis(i, nd, "moveaxis") for i in _axes_tuple(source))
  dst = tuple(canonicalize_axis(i, nd, "moveaxis") for i in _axes_tuple(destination))
  if len(src) != len(dst):
    raise ValueError(f"Inconsistent number of elements: {len(src)} vs {len(dst)}")
  if len(set(src)) != len(src) or len(set(dst)) != len(dst):
    raise ValueError(f"moveaxis: repeated axis in source {src} or destination {dst}")
  perm = [i for i in _range(nd) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return lax.transpose(a, perm)


def rollaxis(a, axis: int, start: int = 0):
  """NumPy's older spelling of moveaxis: move `axis` to before position `start`."""
  a = _asarray("rollaxis", a)
  nd = _ndim(a)
  axis = canonicalize_axis(axis, nd, "rollaxis")
  if not -nd <= start <= nd:
    raise ValueError(f"rollaxis: start={start} must satisfy {-nd} <= start <= {nd}")
  start = start + nd if start < 0 else start
  if axis < start:
    start -= 1
  return moveaxis(a, axis, start)


def expand_dims(a, axis):
  """Insert size-1 dimensions at the positions `axis` (of the result)."""
  a = _asarray("expand_dims", a)
  return lax.expand_dims(a, _axes_tuple(axis))


def squeeze(a, axis=None):
  """Remove size-1 dimensions (all of them, or those in `axis`)."""
  a = _asarray("squeeze", a)
  shape = _shape(a)
  if axis is None:
    dims = tuple(i for i, d in enumerate(shape) if d == 1)
  else:
    dims = tuple(canonicalize_axis(i, len(shape), "squeeze") for i in _axes_tuple(axis))
    if len(set(dims)) != len(dims):
      raise ValueError(f"dimensions are not unique: {dims}")
  return lax.squeeze(a, dims)


# --- joining -----------------------------------------------------------------------------

def _promote_to(arrays, dtype, fun_name):
  if dtype is None:
    return promote_dtypes(*arrays) if len(arrays) > 1 else [lax.asarray(arrays[0])]
  dt = dtypes.check_user_dtype(dtype, fun_name)
  return [lax.convert_element_type(x, dt) for x in arrays]


def _is_array_input(x) -> bool:
  return hasattr(x, "shape") and hasattr(x, "dtype") and core.is_arraylike(x)


def _all_keys(name: str, arrays) -> bool:
  """Whether `arrays` are all typed PRNG keys; a mixture of keys and numbers is an error."""
  keys = [isinstance(a, PRNGKeyArray) for a in arrays]
  if any(keys) and not all(keys):
    dts = ", ".join(str(getattr(a, "dtype", type(a).__name__)) for a in arrays)
    raise TypeError(f"{name}: cannot join PRNG key arrays with other arrays (dtypes {dts}); "
                    "join keys with keys, or their raw data from random.key_data(keys)")
  return all(keys)


def concatenate(arrays, axis: int | None = 0, dtype=None):
  """Join arrays along an existing axis (flattened first when axis is None)."""
  if _is_array_input(arrays):  # an array: concatenate its rows
    arr = lax.asarray(arrays)
    if _ndim(arr) == 0:
      raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    if axis is None:
      out = ravel(arr)
    else:
      shape = _shape(arr)
      ax = canonicalize_axis(axis, len(shape) - 1, "concatenate")
      new = list(shape[1:])
      new[ax] *= shape[0]
      dims = [*_range(1, ax + 1), 0, *_range(ax + 1, len(shape))]
      out = lax.reshape(arr, new, dims)
    return out if dtype is None else lax.convert_element_type(
        out, dtypes.check_user_dtype(dtype, "concatenate"))
  arrays = list(arrays)
  if not arrays:
    raise ValueError("Need at least one array to concatenate.")
  if _all_keys("concatenate", arrays):   # typed PRNG keys: join their data (key axis last)
    if axis is None:
      arrays, axis = [k.reshape(-1) for k in arrays], 0
    axis = canonicalize_axis(axis, arrays[0].ndim, "concatenate")
    return type(arrays[0])(concatenate([k._data for k in arrays], axis))
  check_arraylike("concatenate", *arrays)
  if axis is None:
    arrays, axis = [ravel(a) for a in arrays], 0
  if _ndim(arrays[0]) == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = canonicalize_axis(axis, _ndim(arrays[0]), "concatenate")
  return lax.concatenate(_promote_to(arrays, dtype, "concatenate"), axis)


def concat(arrays, /, *, axis: int | None = 0):
  """Array API spelling of concatenate."""
  return concatenate(arrays, axis=axis)


def stack(arrays, axis: int = 0, out=None, dtype=None):
  """Join equal-shape arrays along a new axis."""
  if out is not None:
    raise ValueError("The 'out' argument to jnp.stack is not supported.")
  if _is_array_input(arrays):
    arr = lax.asarray(arrays)
    if _ndim(arr) == 0:
      raise ValueError("Need at least one array to stack.")
    axis = canonicalize_axis(axis, _ndim(arr), "stack")
    out_ = moveaxis(arr, 0, axis)
    return out_ if dtype is None else lax.convert_element_type(
        out_, dtypes.check_user_dtype(dtype, "stack"))
  arrays = list(arrays)
  if not arrays:
    raise ValueError("Need at least one array to stack.")
  if _all_keys("stack", arrays):   # typed PRNG keys: stack their data (key axis last)
    axis = canonicalize_axis(axis, arrays[0].ndim + 1, "stack")
    return type(arrays[0])(stack([k._data for k in arrays], axis))
  check_arraylike("stack", *arrays)
  shapes = [_shape(a) for a in arrays]
  if len({len(s) for s in shapes}) != 1:
    raise ValueError(f"Cannot stack arrays with different numbers of dimensions: got "
                     f"{', '.join(map(str, shapes))}.")
  if len(set(shapes)) != 1:
    raise ValueError(f"All input arrays must have the same shape. Got "
                     f"{', '.join(map(str, shapes))}.")
  axis = canonicalize_axis(axis, len(shapes[0]) + 1, "stack")
  return lax.stack(_promote_to(arrays, dtype, "stack"), axis)


def _rows(tup, fun_name):
  if _is_array_input(tup):
    return list(lax.unstack(lax.asarray(tup))) if _ndim(tup) else [tup]
  tup = list(tup)
  check_arraylike(fun_name, *tup)
  return tup


def hstack(tup, dtype=None):
  """Concatenate along axis 1 (axis 0 for 1-D inputs)."""
  arrs = [atleast_1d(a) for a in _rows(tup, "hstack")]
  if not arrs:
    raise ValueError("Need at least one array to concatenate.")
  return concatenate(arrs, axis=0 if _ndim(arrs[0]) == 1 else 1, dtype=dtype)


def vstack(tup, dtype=None):
  """Concatenate along axis 0, after promoting inputs to 2-D."""
  return concatenate([atleast_2d(a) for a in _rows(tup, "vstack")], axis=0, dtype=dtype)


def dstack(tup, dtype=None):
  """Concatenate along axis 2, after promoting inputs to 3-D."""
  return concatenate([atleast_3d(a) for a in _rows(tup, "dstack")], axis=2, dtype=dtype)


def column_stack(tup):
  """Stack 1-D arrays as columns (2-D arrays are joined as they are)."""
  arrs = [lax.asarray(a) for a in _rows(tup, "column_stack")]
  arrs = [transpose(atleast_2d(a)) if _ndim(a) < 2 else a for a in arrs]
  return concatenate(arrs, axis=1)


def append(arr, values, axis: int | None = None):
  """`arr` with `values` appended along `axis` (both flattened when axis is None)."""
  check_arraylike("append", arr, values)
  if axis is None:
    return concatenate([ravel(arr), ravel(values)], 0)
  return concatenate([arr, values], axis)


def block(arrays):
  """Assemble an array from nested lists of blocks (innermost lists join on the last axis)."""
  def depth(x):
    if isinstance(x, tuple):
      raise ValueError(f"jax.numpy.block does not allow tuples, got {x}")
    if isinstance(x, list):
      if not x:
        raise ValueError("jax.numpy.block does not allow empty list arguments")
      ds = {depth(e) for e in x}
      if len(ds) != 1:
        raise ValueError("Mismatched list depths in jax.numpy.block")
      return 1 + ds.pop()
    check_arraylike("block", x)
    return 0

  def leaves(x):
    return [l for e in x for l in leaves(e)] if isinstance(x, list) else [x]

  d = depth(arrays)
  nd = builtins.max([d] + [_ndim(l) for l in leaves(arrays)])

  def build(x, level):
    if not isinstance(x, list):
      x = lax.asarray(x)
      return lax.broadcast_to_rank(x, nd)
    return concatenate([build(e, level + 1) for e in x], axis=-(d - level))
  return build(arrays, 0)


# --- splitting ---------------------------------------------------------------------------

def _split(op: str, ary, indices_or_sections, axis: int) -> list:
  ary = _asarray(op, ary)
  axis = canonicalize_axis(axis, _ndim(ary), op)
  size = _shape(ary)[axis]
  if isinstance(indices_or_sections, (tuple, list)) or np.ndim(indices_or_sections) > 0:
    idx = _static_ints(indices_or_sections, op, "indices_or_sections")
    idx = np.clip(np.where(idx < 0, idx + size, idx), 0, size)
    sizes = list(np.diff(np.concatenate([[0], idx, [size]])))
  else:
    n = operator.index(_static_ints(indices_or_sections, op, "indices_or_sections")[()])
    if n <= 0:
      raise ValueError(f"jnp.{op}: number sections must be larger than 0, got {n}")
    part, r = divmod(size, n)
    if r and op != "array_split":
      raise ValueError(f"array split does not result in an equal division: rest is {r}")
    sizes = [part + 1] * r + [part] * (n - r)
  return list(lax.split(ary, [int(s) for s in sizes], axis))


def split(ary, indices_or_sections, axis: int = 0) -> list:
  """Split into equal sections, or at the given indices."""
  return _split("split", ary, indices_or_sections, axis)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
  """Like split, but the sections may differ in size by one."""
  return _split("array_split", ary, indices_or_sections, axis)


def _split_on(op, axis_fn):
  def fn(ary, indices_or_sections):
    a = _asarray(op, ary)
    axis = axis_fn(_ndim(a))
    if axis >= _ndim(a):
      raise ValueError(f"jnp.{op} requires an array of at least {axis + 1} dimensions, "
                       f"got shape {_shape(a)}")
    return _split(op, a, indices_or_sections, axis)
  fn.__name__ = fn.__qualname__ = op
  fn.__doc__ = f"Split along axis {axis_fn(2)} (see numpy.{op})."
  return fn


hsplit = _split_on("hsplit", lambda nd: 0 if nd == 1 else 1)
vsplit = _split_on("vsplit", lambda nd: 0)
dsplit = _split_on("dsplit", lambda nd: 2)


def unstack(x, /, *, axis: int = 0) -> tuple:
  """The slices of `x` along `axis`."""
  x = _asarray("unstack", x)
  if _ndim(x) == 0:
    raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                     "passed.")
  return lax.unstack(x, canonicalize_axis(axis, _ndim(x), "unstack"))


# --- broadcasting ------------------------------------------------------------------------

def broadcast_shapes(*shapes) -> tuple:
  """The NumPy broadcast of shapes."""
  return _broadcast_shapes(*(canonicalize_shape(s, "broadcast_shapes") for s in shapes))


def broadcast_to(array, shape, *, out_sharding=None):
  """`array` broadcast to `shape` with NumPy's rules (typed keys too: their data, with its
  trailing key-word axis kept)."""
  shape = canonicalize_shape(shape, "broadcast_to")
  if isinstance(array, PRNGKeyArray):
    _check_broadcast_to(array.aval, shape)
    return PRNGKeyArray(broadcast_to(array._data, (*shape, *_shape(array._data)[-1:])))
  arr = _asarray("broadcast_to", array)
  if _shape(arr) == shape:
    return arr
  _check_broadcast_to(core.get_aval(arr), shape)
  nlead = len(shape) - _ndim(arr)
  return lax.broadcast_in_dim(arr, shape, tuple(_range(nlead, len(shape))))


def _check_broadcast_to(aval, shape: tuple) -> None:
  a_shape = aval.shape
  if len(shape) < len(a_shape):
    raise ValueError(f"Cannot broadcast to shape with fewer dimensions: arr_shape={a_shape} "
                     f"shape={shape}")
  nlead = len(shape) - len(a_shape)
  if any(d < 0 for d in shape) or any(d not in (1, s)
                                      for d, s in zip(a_shape, shape[nlead:])):
    raise ValueError(f"Incompatible types for broadcasting: input type={aval.str_short()} and "
                     f"requested type={aval.update(shape=()).str_short()[:-2]}"
                     f"[{','.join(map(str, shape))}]")


def broadcast_arrays(*args) -> tuple:
  """The arguments broadcast against each other."""
  check_arraylike("broadcast_arrays", *args)
  shape = _broadcast_shapes(*(_shape(a) for a in args))
  return tuple(broadcast_to(a, shape) for a in args)


# --- tiling / repeating ------------------------------------------------------------------

def tile(A, reps):
  """Repeat the whole array `reps` times per dimension."""
  A = _asarray("tile", A)
  reps = _axes_tuple(reps)
  shape = _shape(A)
  nd = builtins.max(len(reps), len(shape))
  A = lax.broadcast_to_rank(A, nd)
  return lax.tile(A, (1,) * (nd - len(reps)) + reps)


# Above this many pieces, a static take uses gather instead of slices + concatenate.
_MAX_STATIC_PIECES = 32


def _take_static(x, idx: np.ndarray, axis: int):
  """x[..., idx, ...] along `axis` for a static index vector, as slices of runs."""
  pieces, i = [], 0
  while i < len(idx):  # runs of consecutive (i, i+1, ...) or equal (i, i, ...) indices
    j = i + 1
    if j < len(idx) and idx[j] == idx[i]:
      while j < len(idx) and idx[j] == idx[i]:
        j += 1
      pieces.append(("bcast", idx[i], j - i))
    else:
      while j < len(idx) and idx[j] == idx[j - 1] + 1:
        j += 1
      pieces.append(("slice", idx[i], j - i))
    i = j
  if len(pieces) > _MAX_STATIC_PIECES:
    return indexing.take(x, np.asarray(idx, dtype=np.int32), axis=axis)
  shape = list(_shape(x))
  parts = []
  for kind, start, n in pieces:
    part = lax.slice_in_dim(x, int(start), int(start) + (1 if kind == "bcast" else n),
                            axis=axis)
    if kind == "bcast":
      shape[axis] = n
      part = lax.broadcast_in_dim(part, tuple(shape), tuple(_range(len(shape))))
    parts.append(part)
  if not parts:
    return lax.slice_in_dim(x, 0, 0, axis=axis)
  return lax.concatenate(parts, axis)


def repeat(a, repeats, axis: int | None = None, *, total_repeat_length: int | None = None,
           out_sharding=None):
  """Repeat each element `repeats` times (an int, or one count per element)."""
  check_arraylike("repeat", a, repeats)
  a = lax.asarray(a)
  if axis is None:
    a, axis = ravel(a), 0
  axis = canonicalize_axis(axis, _ndim(a), "repeat")
  shape = _shape(a)
  n = shape[axis]
  if np.ndim(repeats) == 0 and _is_concrete(repeats) and total_repeat_length is None:
    r = operator.index(_static_ints(repeats, "repeat", "repeats")[()])
    # Insert a new axis after `axis`, broadcast it to r, and merge the two.
    bshape = shape[:axis + 1] + (r,) + shape[axis + 1:]
    dims = tuple(i for i in _range(len(bshape)) if i != axis + 1)
    out = lax.broadcast_in_dim(a, bshape, dims)
    return lax.reshape(out, shape[:axis] + (n * r,) + shape[axis + 1:])
  if _is_concrete(repeats):
    reps = np.broadcast_to(_static_ints(repeats, "repeat", "repeats"), (n,)) \
        if np.ndim(repeats) == 0 or np.shape(repeats) == (1,) else \
        _static_ints(repeats, "repeat", "repeats")
    if reps.shape != (n,):
      raise ValueError(f"jnp.repeat: repeats must be a scalar or have one entry per element "
                       f"along axis {axis}; got repeats of shape {reps.shape} for an axis "
                       f"of size {n}.")
    if (reps < 0).any():
      raise ValueError(f"jnp.repeat: repeats may not contain negative values, got {reps}")
    idx = np.repeat(np.arange(n), reps)
    if total_repeat_length is not None:
      total = operator.index(total_repeat_length)
      idx = np.concatenate([idx[:total], np.full(builtins.max(total - len(idx), 0),
                                                 builtins.max(n - 1, 0))]).astype(np.int64)
    return _take_static(a, idx, axis)
  if total_repeat_length is None:
    raise errors.ConcretizationTypeError(
        "When jit-compiling jnp.repeat, the total number of repeats must be static. To fix "
        "this, either specify a static value for `repeats`, or pass a static value to "
        "`total_repeat_length`.")
  # Traced repeats: output position j takes element #{k : cumsum(repeats)[k] <= j}.
  total = operator.index(total_repeat_length)
  reps = broadcast_to(repeats, (n,))
  csum = lax.cumsum(lax.convert_element_type(reps, dtypes.default_int_dtype()), 0)
  pos = lax.broadcasted_iota(dtypes.default_int_dtype(), (total, n), 0)
  hits = lax.convert_element_type(lax.le(lax.broadcast_in_dim(csum, (total, n), (1,)), pos),
                                  dtypes.default_int_dtype())
  idx = lax.min(lax.reduce_sum(hits, (1,)), lax.full((total,), builtins.max(n - 1, 0),
                                                     dtypes.default_int_dtype()))
  return indexing.take(a, idx, axis=axis)


def resize(a, new_shape):
  """`a` flattened, repeated cyclically, and reshaped to `new_shape`."""
  a = _asarray("resize", a)
  new_shape = canonicalize_shape(new_shape, "resize")
  if any(d < 0 for d in new_shape):
    raise ValueError(f"all elements of `new_shape` must be non-negative, got {new_shape}")
  flat = ravel(a)
  new_size, size = math.prod(new_shape), core.get_aval(flat).size
  if size == 0 or new_size == 0:
    return lax.full(new_shape, 0, core.get_aval(a).dtype)
  flat = lax.tile(flat, (-(-new_size // size),))
  return lax.reshape(lax.slice(flat, (0,), (new_size,)), new_shape)


# --- flips and rotations -----------------------------------------------------------------

def flip(m, axis=None):
  """Reverse the order of elements along `axis` (all axes when None)."""
  m = _asarray("flip", m)
  nd = _ndim(m)
  dims = tuple(_range(nd)) if axis is None else tuple(
      canonicalize_axis(i, nd, "flip") for i in _axes_tuple(axis))
  return lax.rev(m, dims)


def fliplr(m):
  """Reverse along axis 1."""
  return flip(_asarray("fliplr", m), 1)


def flipud(m):
  """Reverse along axis 0."""
  return flip(_asarray("flipud", m), 0)


def rot90(m, k: int = 1, axes: tuple[int, int] = (0, 1)):
  """Rotate by 90 degrees `k` times in the plane of `axes` (from the first toward the second)."""
  m = _asarray("rot90", m)
  nd = _ndim(m)
  if nd < 2:
    raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                     f"first argument of shape {_shape(m)}, which has ndim {nd}")
  if len(axes) != 2:
    raise ValueError(f"len(axes) must be 2, got {axes}")
  ax1, ax2 = (canonicalize_axis(a, nd, "rot90") for a in axes)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  k = operator.index(k) % 4
  if k == 0:
    return m
  if k == 2:
    return flip(flip(m, ax1), ax2)
  perm = list(_range(nd))
  perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
  return lax.transpose(flip(m, ax2), perm) if k == 1 else flip(lax.transpose(m, perm), ax2)


def roll(a, shift, axis=None):
  """Shift elements cyclically along `axis` (of the flattened array when None)."""
  a = _asarray("roll", a)
  if axis is None:
    return reshape(roll(ravel(a), shift, 0), _shape(a))
  nd = _ndim(a)
  axes = _axes_tuple(axis)
  if not _is_concrete(shift):
    return _roll_dynamic(a, shift, axes)
  shifts = _static_ints(shift, "roll", "shift")
  shifts, axes = np.broadcast_arrays(shifts, np.asarray(axes))
  for s, ax in zip(shifts.ravel(), axes.ravel()):
    ax = canonicalize_axis(ax, nd, "roll")
    n = _shape(a)[ax]
    if n == 0:
      continue
    s = int(s) % n
    if s:
      a = lax.concatenate([lax.slice_in_dim(a, n - s, n, axis=ax),
                           lax.slice_in_dim(a, 0, n - s, axis=ax)], ax)
  return a


def _roll_dynamic(a, shift, axes):
  """roll by traced shifts: slice a window out of [a, a] (JAX's _roll_dynamic)."""
  nd = _ndim(a)
  shift = lax.asarray(shift)
  if not dtypes.is_integer(core.get_aval(shift).dtype):
    raise TypeError(f"jnp.roll: shift must be integer, got {core.get_aval(shift).dtype}")
  shifts = broadcast_to(shift, np.broadcast_shapes(np.shape(shift), (len(axes),)))
  n_pairs = _shape(shifts)[0] if _ndim(shifts) else 1
  axes = np.broadcast_to(np.asarray(axes), (n_pairs,))
  for i, ax in enumerate(axes):
    ax = canonicalize_axis(ax, nd, "roll")
    n = _shape(a)[ax]
    if n == 0:
      continue
    s = lax.index_in_dim(shifts, i, keepdims=False) if _ndim(shifts) else shifts
    s = lax.convert_element_type(s, dtypes.default_int_dtype())
    start = lax.sub(n, lax.rem(lax.add(lax.rem(s, n), n), n))
    a = lax.dynamic_slice_in_dim(lax.concatenate([a, a], ax), start, n, axis=ax)
  return a


# --- atleast_nd --------------------------------------------------------------------------

def _atleast(name, nd, placement):
  def fn(*arys):
    outs = []
    for x in arys:
      x = _asarray(name, x)
      shape = _shape(x)
      if len(shape) < nd:
        new = placement[len(shape)](shape)
        x = lax.broadcast_in_dim(x, new, _kept_dims(shape, new))
      outs.append(x)
    return outs[0] if len(outs) == 1 else tuple(outs)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"The inputs as arrays with at least {nd} dimensions."
  return fn


def _kept_dims(shape, new):
  """Where the dims of `shape` go in `new` (the added dims are the extra size-1 ones)."""
  if not shape:
    return ()
  if len(shape) == 1:
    return (1,) if len(new) > 1 else (0,)
  return (0, 1)  # a 2-D input only reaches atleast_3d, which appends the new axis


atleast_1d = _atleast("atleast_1d", 1, {0: lambda s: (1,)})
atleast_2d = _atleast("atleast_2d", 2, {0: lambda s: (1, 1), 1: lambda s: (1,) + s})
atleast_3d = _atleast("atleast_3d", 3, {0: lambda s: (1, 1, 1), 1: lambda s: (1,) + s + (1,),
                                        2: lambda s: s + (1,)})


# --- pad ---------------------------------------------------------------------------------

def _pad_width(array, pad_width) -> np.ndarray:
  nd = _ndim(array)
  if isinstance(pad_width, core.Tracer):
    pad_width = _static_ints(pad_width, "pad", "pad_width")
  pw = np.asarray(pad_width)
  if pw.dtype.kind not in "iu":
    if pw.dtype == object or pw.dtype.kind != "b":
      raise TypeError("`pad_width` must be of integral type.")
  if pw.shape not in ((nd, 2), (1, 2), (2,), (1,), ()):
    raise ValueError(f"jnp.pad: pad_width with nd={nd} has unsupported shape {pw.shape}. "
                     f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")
  pw = np.broadcast_to(pw, (nd, 2)).astype(np.int64)
  if (pw < 0).any():
    raise ValueError("index can't contain negative values")
  return pw


def _check_no_padding(axis_padding, mode):
  if axis_padding[0] > 0 or axis_padding[1] > 0:
    raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _per_axis_values(values, nd, what, dtype_of):
  """A scalar or a (nd, 2)-broadcastable table of pad values, as a function (i, side)."""
  if _ndim(values) == 0:
    v = lax.convert_element_type(values, core.get_aval(dtype_of).dtype,
                                 dtypes.is_weakly_typed(dtype_of))
    return lambda i, side: v
  vals = broadcast_to(values, (nd, 2))
  vals = lax.convert_element_type(vals, core.get_aval(dtype_of).dtype,
                                  dtypes.is_weakly_typed(dtype_of))
  return lambda i, side: lax.reshape(lax.slice(vals, (i, side), (i + 1, side + 1)), ())


def _pad_constant(array, pw, constant_values):
  nd = _ndim(array)
  if _ndim(constant_values) == 0:
    value = _per_axis_values(constant_values, nd, "constant_values", array)(0, 0)
    return lax.pad(array, value, [(int(lo), int(hi), 0) for lo, hi in pw])
  value = _per_axis_values(constant_values, nd, "constant_values", array)
  for i in _range(nd):
    for side in (0, 1):
      if pw[i, side]:
        config = [(0, 0, 0)] * nd
        config[i] = (int(pw[i, 0]), 0, 0) if side == 0 else (0, int(pw[i, 1]), 0)
        array = lax.pad(array, value(i, side), config)
  return array


def _pad_edge(array, pw):
  for i in _range(_ndim(array)):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding(pw[i], "edge")
      continue
    lo, hi = int(pw[i, 0]), int(pw[i, 1])
    shape = list(_shape(array))
    dims = tuple(_range(len(shape)))

    def edge(start, count):
      shape[i] = count
      return lax.broadcast_in_dim(lax.slice_in_dim(array, start, start + 1, axis=i),
                                  tuple(shape), dims)
    parts = ([edge(0, lo)] if lo else []) + [array] + ([edge(n - 1, hi)] if hi else [])
    array = lax.concatenate(parts, i)
  return array


def _pad_wrap(array, pw):
  for i in _range(_ndim(array)):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding(pw[i], "wrap")
      continue
    lreps, lrem = divmod(int(pw[i, 0]), n)
    rreps, rrem = divmod(int(pw[i, 1]), n)
    parts = [lax.slice_in_dim(array, n - lrem, n, axis=i)] if lrem else []
    parts += [array] * (lreps + rreps + 1)
    parts += [lax.slice_in_dim(array, 0, rrem, axis=i)] if rrem else []
    array = lax.concatenate(parts, i)
  return array


def _pad_symmetric_or_reflect(array, pw, mode, reflect_type):
  """NumPy's reflect/symmetric padding, extended repeatedly when the pad exceeds the axis."""
  for i in _range(_ndim(array)):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding(pw[i], mode)
      continue
    offset = 1 if (mode == "reflect" and n > 1) else 0

    def build(array, padding, before):
      edge = lax.slice_in_dim(array, 0 if before else -1, 1 if before else None, axis=i)
      while padding > 0:
        cur = builtins.min(padding, n - offset)
        padding -= cur
        if before:
          x = lax.slice_in_dim(array, offset, offset + cur, axis=i)
        else:
          stop = None if (mode == "symmetric" or n == 1) else -1
          x = lax.slice_in_dim(array, -(cur + offset), stop, axis=i)
        x = lax.rev(x, (i,))
        if reflect_type == "odd":
          x = lax.sub(lax.mul(edge, 2), x)
          if n > 1:
            edge = lax.slice_in_dim(x, 0 if before else -1, 1 if before else None, axis=i)
        array = lax.concatenate([x, array] if before else [array, x], i)
      return array
    array = build(array, int(pw[i, 0]), True)
    array = build(array, int(pw[i, 1]), False)
  return array


def _pad_linear_ramp(array, pw, end_values):
  nd = _ndim(array)
  aval = core.get_aval(array)
  cdt = aval.dtype if dtypes.is_inexact(aval.dtype) else dtypes.default_float_dtype()
  end = _per_axis_values(end_values, nd, "end_values", lax.convert_element_type(array, cdt))
  for i in _range(nd):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding(pw[i], "linear_ramp")
      continue
    parts = [array]
    for side, count in ((0, int(pw[i, 0])), (1, int(pw[i, 1]))):
      if not count:
        continue
      edge = lax.convert_element_type(
          lax.slice_in_dim(array, 0 if side == 0 else n - 1, 1 if side == 0 else n, axis=i),
          cdt)
      shape = list(_shape(array))
      shape[i] = count
      dims = tuple(_range(nd))
      # position k of `count` goes from the end value (k=0) toward the edge (exclusive)
      frac = lax.div(lax.broadcasted_iota(cdt, shape, i), lax.full((), count, cdt))
      if side == 1:
        frac = lax.rev(frac, (i,))
      e = lax.broadcast_in_dim(edge, tuple(shape), dims)
      v = lax.broadcast_in_dim(end(i, side), tuple(shape), ())
      ramp = lax.add(v, lax.mul(lax.sub(e, v), frac))
      if not dtypes.is_inexact(aval.dtype):
        ramp = lax.floor(ramp)  # NumPy's linspace floors for integer dtypes
      ramp = lax.convert_element_type(ramp, aval.dtype, aval.weak_type)
      parts = [ramp] + parts if side == 0 else parts + [ramp]
    array = lax.concatenate(parts, i)
  return array


_PAD_KWARGS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}, "linear_ramp": {"end_values"},
}


def pad(array, pad_width, mode: str = "constant", **kwargs):
  """Pad an array (NumPy's modes constant, empty, edge, wrap, reflect, symmetric,
  linear_ramp; pad widths are static)."""
  array = _asarray("pad", array)
  if not isinstance(mode, str) or mode not in _PAD_KWARGS:
    raise ValueError(f"jnp.pad: mode {mode!r} is not supported by ember; supported modes are "
                     f"{', '.join(map(repr, _PAD_KWARGS))}.")
  unsupported = set(kwargs) - _PAD_KWARGS[mode]
  if unsupported:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
  pw = _pad_width(array, pad_width)
  if mode in ("constant", "empty"):
    return _pad_constant(array, pw, _pad_values(kwargs.get("constant_values", 0)))
  if mode == "edge":
    return _pad_edge(array, pw)
  if mode == "wrap":
    return _pad_wrap(array, pw)
  if mode in ("reflect", "symmetric"):
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
      raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    return _pad_symmetric_or_reflect(array, pw, mode, reflect_type)
  return _pad_linear_ramp(array, pw, _pad_values(kwargs.get("end_values", 0)))


def _pad_values(values):
  """constant_values / end_values: a scalar, an array, or nested (before, after) pairs."""
  if isinstance(values, (list, tuple)):
    return creation.asarray(values)
  check_arraylike("pad", values)
  return values


# --- insert / delete ---------------------------------------------------------------------

def _static_obj(fun_name, obj, n):
  """The static positions named by `obj` (an int, a slice, or integer indices)."""
  if isinstance(obj, builtins.slice):
    return np.arange(n)[obj], False
  check_arraylike(fun_name, obj)
  idx = _static_ints(obj, fun_name, "obj")
  return idx, idx.ndim == 0


def delete(arr, obj, axis: int | None = None, *, assume_unique_indices: bool = False):
  """`arr` without the entries `obj` along `axis` (flattened when None); obj is static."""
  arr = _asarray("delete", arr)
  if axis is None:
    arr, axis = ravel(arr), 0
  axis = canonicalize_axis(axis, _ndim(arr), "delete")
  n = _shape(arr)[axis]
  idx, _ = _static_obj("delete", obj, n)
  idx = np.atleast_1d(idx)
  if ((idx < -n) | (idx >= n)).any():
    raise IndexError(f"jnp.delete: index {idx[(idx < -n) | (idx >= n)][0]} is out of bounds "
                     f"for axis {axis} with size {n}")
  keep = np.ones(n, bool)
  keep[idx % n if n else idx] = False
  return _take_static(arr, np.nonzero(keep)[0], axis)


def insert(arr, obj, values, axis: int | None = None):
  """`arr` with `values` inserted before the positions `obj` along `axis`; obj is static."""
  check_arraylike("insert", arr, values)
  arr = lax.asarray(arr)
  if axis is None:
    arr, axis = ravel(arr), 0
  nd = _ndim(arr)
  axis = canonicalize_axis(axis, nd, "insert")
  n = _shape(arr)[axis]
  idx, scalar = _static_obj("insert", obj, n)
  if ((idx < -n) | (idx > n)).any():
    raise IndexError(f"jnp.insert: index {obj} is out of bounds for axis {axis} with size {n}")
  idx = np.where(idx < 0, idx + n, idx)
  aval = core.get_aval(arr)
  vals = lax.convert_element_type(values, aval.dtype, aval.weak_type)
  vals = lax.broadcast_to_rank(vals, nd)
  if scalar:  # NumPy moves the values' first axis to `axis`
    vals = moveaxis(vals, 0, axis)
    idx = np.full(_shape(vals)[axis], idx)
  shape = list(_shape(arr))
  shape[axis] = len(idx)
  vals = broadcast_to(vals, shape)
  # Final position of each inserted value: stable order of idx, shifted by its rank.
  new_pos = np.empty(len(idx), np.int64)
  order = np.argsort(idx, kind="stable")
  new_pos[order] = idx[order] + np.arange(len(idx))
  total = n + len(idx)
  src = np.empty(total, np.int64)
  is_new = np.zeros(total, bool)
  is_new[new_pos] = True
  src[new_pos] = n + np.arange(len(idx))   # values come after arr in the joined array
  src[~is_new] = np.arange(n)
  return _take_static(lax.concatenate([arr, vals], axis), src, axis)


# --- shape / ndim / size -----------------------------------------------------------------

def shape(a) -> tuple:
  """The shape of an array-like."""
  return _shape(a) if core.is_arraylike(a) else np.shape(a)


def ndim(a) -> int:
  """The number of dimensions of an array-like."""
  return len(shape(a))


def size(a, axis=None) -> int:
  """The number of elements (along `axis` when given)."""
  s = shape(a)
  if axis is None:
    return math.prod(s)
  return math.prod(s[canonicalize_axis(i, len(s), "size")] for i in _axes_tuple(axis))

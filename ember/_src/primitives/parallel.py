"""Collectives over named axes: psum, pmax, pmin (and pmean), all_gather, psum_scatter,
all_to_all (and pswapaxes), axis_index.

A named axis is bound by `vmap(..., axis_name='i')` (ember has no pmap / shard_map). Each
collective is a primitive whose `axes` / `axis_name` param names the axes it works over;
under vmap its batching rule turns the named axis into a positional one (JAX 0.12 prints
`psum[axes=(0,) axis_index_groups=None]`), so after vmap only positional reductions remain,
which evaluate and lower as the matching reduce_* primitive. `named_trace` routes each bind
to the vmap that binds the name, also when the value does not depend on that vmap's
inputs (a psum of an unbatched value is `size * x`). An unbound name is a NameError, as in
JAX.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from ember._src import core
from ember._src.base import tree_util
from ember._src.core import sharding as sharding_lib
from ember._src.core import ShapedArray
from ember._src.primitives import declare
from ember._src.primitives import reductions, structural
from ember._src.transforms import batching
from ember._src.transforms import ad
from ember._src.primitives.structural import iota
from ember._src.primitives.structural import (broadcast_in_dim, expand_dims, full_like, reshape,
                                              squeeze)
from ember._src.primitives.elementwise import convert_element_type, eq, select
from ember._src.runtime import collectives

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "psum_scatter", "all_to_all",
           "pswapaxes", "ppermute", "axis_index", "axis_size", "pshuffle", "pbroadcast"]


def _as_tuple(axis_name) -> tuple:
  return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def _named(axes) -> tuple:
  return tuple(a for a in axes if not isinstance(a, (int, np.integer)))


# --- collectives between devices ------------------------------------------------------------
# In the program of one device of a multi-device pmap/shard_map (traced under
# batching.spmd_axes), a collective over device axes stays in the jaxpr and lowers to a host
# call that runs it through the run's communicator (runtime/collectives.py) on this device's
# buffer. One that communicates is marked as having side effects (every device must reach
# every collective) and carries its start and done halves, so passes/async_collectives.py can
# split it into two calls that overlap the computation between them; axis_index only reads
# which device runs it.

def _host_collective(ctx, args, body, collective: str | None):
  """Lower a collective to a host call of `body(device context, device id, *arrays)`;
  `collective`: its kind ("all-reduce", ...), None for one that does not communicate."""
  from ember._src.primitives import callbacks   # a layer above: imported when lowering

  def run(*arrays):
    dctx, dev = collectives.current()
    return [body(dctx, dev, *arrays)]
  if collective is None:
    return callbacks.emit_host_call(ctx, run, list(args), ctx.avals_out, False,
                                    user_code=False)[0]
  return _emit_collective(ctx, run, list(args), ctx.avals_out, collective)[0]


def _emit_collective(ctx, run, args, avals, kind: str) -> list:
  """The host call of a collective `run`, with the start/done halves it may run as
  (runtime/collectives.py `start` and `done`)."""
  from ember._src.primitives import callbacks   # a layer above: imported when lowering

  def start(*arrays):
    return [np.int32(collectives.start(run, arrays))]

  def done(ticket):
    return collectives.done(int(ticket))
  return callbacks.emit_host_call(ctx, run, args, avals, True, collective=(kind, start, done),
                                  user_code=False)


def _out_dtype(ctx):
  return ctx.avals_out[0].dtype


# --- psum / pmax / pmin -------------------------------------------------------------------

def _allreduce_abstract_eval(x, *, axes, axis_index_groups):
  """Positional (int) axes are reduced; named axes keep the shape."""
  pos = [a for a in axes if isinstance(a, (int, np.integer))]
  for a in pos:
    if not 0 <= a < x.ndim:
      raise ValueError(f"axis {a} is out of bounds for array of dimension {x.ndim}")
  return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in pos))


def _allreduce(name, reduce_p, if_unmapped, op):
  """A collective reduction: impl/lowering of its positional form are `reduce_p`'s; over
  device axes it is an all-reduce between the devices (`op` names it for Communicator)."""
  def impl(x, *, axes, axis_index_groups):
    return reduce_p.impl(x, axes=tuple(axes))

  def lower(ctx, x, *, axes, axis_index_groups):
    names = _named(axes)
    if not names:
      return reduce_p.lower(ctx, x, axes=tuple(axes))
    pos = tuple(int(a) for a in axes if isinstance(a, (int, np.integer)))
    dt = _out_dtype(ctx)

    def body(dctx, dev, v):
      if pos:
        v = collectives._REDUCE[op].reduce(v, axis=pos, dtype=v.dtype)
      comm, rank = dctx.group(dev, names, axis_index_groups)
      return np.asarray(comm.all_reduce(rank, np.ascontiguousarray(v), op), dt)
    return _host_collective(ctx, [x], body, "all-reduce")

  prim = declare(name, _allreduce_abstract_eval, impl)
  prim.lower = lower
  prim.named_trace = lambda trace, params: batching.named_axis_trace(
      params["axes"], name, trace)
  prim.batch = _reduction_batcher(prim, if_unmapped)
  return prim


def _reduction_batcher(prim, if_unmapped):
  """JAX's `_batched_reduction_collective`: this vmap's axis name becomes positional axis
  0 (the batch dim moved in front) and the result is unbatched; other names pass on."""
  def bind(v, axes):
    return prim.bind(v, axes=tuple(axes), axis_index_groups=None)

  def rule(axis_data, vals, dims, *, axes, axis_index_groups):
    (v,), (d,) = vals, dims
    if axis_index_groups is not None:
      raise NotImplementedError("axis_index_groups not supported in vmap collectives. "
                                "Please open a feature request!")
    name = axis_data.name
    mine = any(a == name and not isinstance(a, (int, np.integer)) for a in axes)
    if d is None:
      if not mine:
        return bind(v, axes), None
      rest = tuple(a for a in axes if not (a == name and not isinstance(a, int)))
      return if_unmapped(bind(v, rest) if rest else v, axis_data.size), None
    if not mine and not any(isinstance(a, (int, np.integer)) for a in axes):
      return bind(v, axes), d
    v = batching.moveaxis(v, d, 0)
    new_axes = tuple(a + 1 if isinstance(a, (int, np.integer)) else (0 if a == name else a)
                     for a in axes)
    return bind(v, new_axes), (None if mine else 0)
  return rule


psum_p = _allreduce("psum", reductions.reduce_sum_p, lambda v, size: v * size, "sum")
pmax_p = _allreduce("pmax", reductions.reduce_max_p, lambda v, size: v, "max")
pmin_p = _allreduce("pmin", reductions.reduce_min_p, lambda v, size: v, "min")


def _check_groups(axis_index_groups, names=()):
  """axis_index_groups (a partition of one device axis into equal groups) as a tuple of
  tuples; only collectives between devices (pmap, shard_map over several devices) take them."""
  if axis_index_groups is None:
    return None
  named = _named(_as_tuple(names))
  sizes = [batching.spmd_axis_size(n) for n in named]
  if not named or None in sizes:
    raise NotImplementedError("axis_index_groups not supported in vmap collectives. "
                              "Please open a feature request!")
  groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
  n = math.prod(sizes)
  if sorted(i for g in groups for i in g) != list(range(n)) or \
      len({len(g) for g in groups}) != 1:
    raise ValueError(f"axis_index_groups must partition the {n} indices of axis {named} into "
                     f"groups of equal size, got {axis_index_groups}")
  return groups


def _group_size(names, groups) -> int:
  return len(groups[0]) if groups is not None else _axis_size(names)


def psum(x, axis_name, *, axis_index_groups=None):
  """The sum of `x` (a pytree) over the mapped axis `axis_name` (or a tuple of names;
  int entries are positional axes). Bool inputs are summed as int32."""
  axes = _as_tuple(axis_name)
  groups = _check_groups(axis_index_groups, axes)
  if not axes:
    return x

  def leaf(v):
    if core.get_aval(v).dtype == np.bool_:
      v = convert_element_type(v, np.int32)
    if not isinstance(v, core.Tracer):  # a constant: size * value, computed here
      named = [a for a in axes if not isinstance(a, int)]
      pos = [a for a in axes if isinstance(a, int)]
      size = len(groups[0]) if groups else math.prod(batching.axis_size(n) for n in named)
      if pos:
        v = reductions.reduce_sum(v, [a % np.ndim(v) for a in pos])
      return size * v
    return psum_p.bind(v, axes=axes, axis_index_groups=groups)
  return tree_util.tree_map(leaf, x)


def _axis_size(axis_name) -> int:
  return psum(1, axis_name)


def axis_size(axis_name) -> int:
  """The size of the mapped axis `axis_name` (a Python int)."""
  return _axis_size(axis_name)


def pmean(x, axis_name, *, axis_index_groups=None):
  """The mean of `x` (a pytree) over the mapped axis `axis_name`."""
  x = psum(x, axis_name, axis_index_groups=axis_index_groups)
  n = _group_size(_as_tuple(axis_name), _check_groups(axis_index_groups, axis_name))
  return tree_util.tree_map(lambda v: v / n, x)


def _pminmax(prim):
  def fn(x, axis_name, *, axis_index_groups=None):
    axes = _as_tuple(axis_name)
    groups = _check_groups(axis_index_groups, axes)
    if not axes:
      return x
    return tree_util.tree_map(lambda v: prim.bind(v, axes=axes, axis_index_groups=groups), x)
  fn.__name__ = fn.__qualname__ = prim.name
  fn.__doc__ = f"The {prim.name[1:]}imum of `x` (a pytree) over the mapped axis `axis_name`."
  return fn


pmax = _pminmax(pmax_p)
pmin = _pminmax(pmin_p)


# --- grouped all-reduce --------------------------------------------------------------------
# Several independent all-reduces over the same device axes, with the same op and dtype, run as
# one: their operands flattened into one buffer, one communicator call, the result split back.
# One message instead of many (each a rendezvous of the devices, an MPI call across processes):
# driver/sharding_propagation.py issues the gradient psums of a partitioned jit this way. Only in
# the programs of devices (its axes are device axes); it has no vmap or AD rules.

_GROUP_OPS = {"sum": psum_p, "max": pmax_p, "min": pmin_p}


def _all_reduce_group_abstract_eval(*xs, op, axes, axis_index_groups):
  if op not in _GROUP_OPS:
    raise ValueError(f"all_reduce_group: op must be one of {sorted(_GROUP_OPS)}, got {op!r}")
  if len({x.dtype for x in xs}) > 1:
    raise TypeError(f"all_reduce_group: operands must share one dtype, got "
                    f"{[str(x.dtype) for x in xs]}")
  return list(xs)


def _all_reduce_group_impl(*xs, op, axes, axis_index_groups):
  return [_GROUP_OPS[op].impl(x, axes=axes, axis_index_groups=axis_index_groups) for x in xs]


def _all_reduce_group_lower(ctx, *xs, op, axes, axis_index_groups):
  avals = ctx.avals_out
  sizes = [math.prod(a.shape) for a in avals]
  ends = np.cumsum(sizes)[:-1]

  def run(*arrays):
    dctx, dev = collectives.current()
    comm, rank = dctx.group(dev, axes, axis_index_groups)
    flat = np.concatenate([np.ravel(a) for a in arrays]) if len(arrays) > 1 else \
        np.ravel(arrays[0])
    out = comm.all_reduce(rank, np.ascontiguousarray(flat, avals[0].dtype), op)
    return [piece.reshape(a.shape) for piece, a in zip(np.split(out, ends), avals)]
  return _emit_collective(ctx, run, list(xs), avals, "all-reduce")


all_reduce_group_p = declare("all_reduce_group", _all_reduce_group_abstract_eval,
                             _all_reduce_group_impl, multiple_results=True)
all_reduce_group_p.lower = _all_reduce_group_lower
# (made by all_reduce_grouping over device axes only, so a vmap over a positional axis sees
# per-operand elementwise all-reduces: each operand keeps its batch dim)
all_reduce_group_p.batch = lambda axis_data, vals, dims, **params: (
    all_reduce_group_p.bind(*vals, **params), list(dims))
all_reduce_group_p.named_trace = lambda trace, params: batching.named_axis_trace(
    params["axes"], "all_reduce_group", trace)


def all_reduce_group(xs: list, op: str, axes: tuple, axis_index_groups=None) -> list:
  """[op over the device axes `axes` of x for x in xs] as one collective (xs: one dtype)."""
  return all_reduce_group_p.bind(*xs, op=op, axes=tuple(axes),
                                 axis_index_groups=axis_index_groups)


# --- all_gather ---------------------------------------------------------------------------

def _all_gather_abstract_eval(x, *, all_gather_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  shape = list(x.shape)
  if tiled:
    shape[all_gather_dimension] *= axis_size
  else:
    shape.insert(all_gather_dimension, axis_size)
  return x.update(shape=tuple(shape))


def _foldaxis(axis, x):
  shape = list(batching.shape_of(x))
  shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
  return reshape(x, tuple(shape))


def _all_gather_batch(axis_data, vals, dims, *, all_gather_dimension, axis_name,
                      axis_index_groups, axis_size, tiled):
  """JAX's rule: over this vmap's axis, the gathered value IS the batched value (its
  batch dim moved to `all_gather_dimension`, folded into it when tiled), unbatched."""
  (x,), (d,) = vals, dims
  params = dict(all_gather_dimension=all_gather_dimension, axis_name=axis_name,
                axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  if axis_data.name not in axis_name:
    if d is None:
      return all_gather_p.bind(x, **params), None
    if d <= all_gather_dimension:
      params["all_gather_dimension"] += 1
    elif not tiled:
      d += 1
    return all_gather_p.bind(x, **params), d
  _check_groups(axis_index_groups)
  if len(axis_name) > 1:
    raise NotImplementedError("all_gather over several axis names inside vmap is not "
                              "supported; gather over one name at a time.")
  if d is None:
    shape = list(batching.shape_of(x))
    shape.insert(all_gather_dimension, axis_size)
    keep = [i for i in range(len(shape)) if i != all_gather_dimension]
    y = batching.broadcast_in_dim(x, tuple(shape), keep)
  else:
    y = batching.moveaxis(x, d, all_gather_dimension)
  return (_foldaxis(all_gather_dimension, y) if tiled else y), None


def _all_gather_lower(ctx, x, *, all_gather_dimension, axis_name, axis_index_groups,
                      axis_size, tiled):
  def body(dctx, dev, v):
    comm, rank = dctx.group(dev, axis_name, axis_index_groups)
    g = comm.all_gather(rank, np.ascontiguousarray(v))
    return (np.concatenate(list(g), axis=all_gather_dimension) if tiled
            else np.moveaxis(g, 0, all_gather_dimension))
  return _host_collective(ctx, [x], body, "all-gather")


all_gather_p = declare("all_gather", _all_gather_abstract_eval)
all_gather_p.lower = _all_gather_lower
all_gather_p.batch = _all_gather_batch
all_gather_p.named_trace = lambda trace, params: batching.named_axis_trace(
    params["axis_name"], "all_gather", trace)


def all_gather(x, axis_name, *, axis_index_groups=None, axis: int = 0, tiled: bool = False):
  """The values of `x` (a pytree) from every index of the mapped axis `axis_name`,
  stacked along a new `axis` (or concatenated along `axis` when `tiled`)."""
  names = _as_tuple(axis_name)
  groups = _check_groups(axis_index_groups, names)
  if not names:
    return x
  size = _group_size(names, groups)

  def leaf(v):
    nd = np.ndim(v) if not isinstance(v, core.Tracer) else v.ndim
    rank = nd if tiled else nd + 1
    ax = operator.index(axis)
    if not -rank <= ax < rank:
      raise ValueError(f"axis {ax} is out of bounds for array of dimension {rank}")
    if tiled and nd == 0:
      raise ValueError("all_gather with tiled=True requires an operand of rank >= 1")
    return all_gather_p.bind(v, all_gather_dimension=ax % rank, axis_name=names,
                             axis_index_groups=groups, axis_size=size, tiled=bool(tiled))
  return tree_util.tree_map(leaf, x)


# --- psum_scatter (reduce_scatter) ------------------------------------------------------------

def _reduce_scatter_abstract_eval(x, *, axis_name, scatter_dimension, axis_index_groups,
                                  axis_size, tiled):
  shape = list(x.shape)
  n = shape[scatter_dimension]
  if tiled:
    if n % axis_size != 0:
      raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} must be "
                       f"divisible by shard_count {axis_size}")
    shape[scatter_dimension] = n // axis_size
  else:
    if n != axis_size:
      raise ValueError(f"reduce_scatter operand scatter dimension size {n} must match "
                       f"shard count {axis_size}")
    del shape[scatter_dimension]
  return x.update(shape=tuple(shape))


def _reduce_scatter_batch(axis_data, vals, dims, *, scatter_dimension, axis_name,
                          axis_index_groups, axis_size, tiled):
  """JAX's `_reduce_scatter_collective`: over this vmap's axis, the sum over the batch
  dim, whose `scatter_dimension` becomes the batch dim (split in two when tiled)."""
  (x,), (d,) = vals, dims
  params = dict(scatter_dimension=scatter_dimension, axis_name=axis_name,
                axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  if axis_data.name not in axis_name:
    if d is None:
      return reduce_scatter_p.bind(x, **params), None
    if d <= scatter_dimension:
      params["scatter_dimension"] += 1
    elif not tiled:  # the scatter dimension is removed before the batch dim
      d -= 1
    return reduce_scatter_p.bind(x, **params), d
  _check_groups(axis_index_groups)
  if len(axis_name) > 1:
    raise NotImplementedError("psum_scatter over several axis names inside vmap is not "
                              "supported; scatter over one name at a time.")
  y = x * axis_size if d is None else reductions.reduce_sum(x, (d,))
  if tiled:
    shape = list(batching.shape_of(y))
    shape[scatter_dimension:scatter_dimension + 1] = [axis_size,
                                                      shape[scatter_dimension] // axis_size]
    y = reshape(y, tuple(shape))
  return y, scatter_dimension


def _reduce_scatter_lower(ctx, x, *, scatter_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  dt = _out_dtype(ctx)

  def body(dctx, dev, v):
    comm, rank = dctx.group(dev, axis_name, axis_index_groups)
    v = np.moveaxis(v, scatter_dimension, 0)
    if tiled:
      v = v.reshape(axis_size, v.shape[0] // axis_size, *v.shape[1:])
    r = comm.reduce_scatter(rank, np.ascontiguousarray(v), "sum")
    return np.asarray(np.moveaxis(r, 0, scatter_dimension) if tiled else r, dt)
  return _host_collective(ctx, [x], body, "reduce-scatter")


reduce_scatter_p = declare("reduce_scatter", _reduce_scatter_abstract_eval)
reduce_scatter_p.lower = _reduce_scatter_lower
reduce_scatter_p.batch = _reduce_scatter_batch
reduce_scatter_p.named_trace = lambda trace, params: batching.named_axis_trace(
    params["axis_name"], "reduce_scatter", trace)


def psum_scatter(x, axis_name, *, scatter_dimension: int = 0, axis_index_groups=None,
                 tiled: bool = False):
  """psum(x, axis_name)[axis_index(axis_name)] along `scatter_dimension` (a pytree `x`):
  each example keeps its slice of the sum (its block of it, `tiled`)."""
  names = _as_tuple(axis_name)
  groups = _check_groups(axis_index_groups, names)
  if not names:
    return x
  size = _group_size(names, groups)

  def leaf(v):
    nd = np.ndim(v) if not isinstance(v, core.Tracer) else v.ndim
    ax = operator.index(scatter_dimension)
    if not -nd <= ax < nd:
      raise ValueError(f"scatter_dimension {ax} is out of bounds for array of dimension {nd}")
    return reduce_scatter_p.bind(v, scatter_dimension=ax % nd, axis_name=names,
                                 axis_index_groups=groups, axis_size=size, tiled=bool(tiled))
  return tree_util.tree_map(leaf, x)


# --- all_to_all (and pswapaxes) -------------------------------------------------------------

def _all_to_all_abstract_eval(x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                              axis_size, tiled):
  """The bound (tiled) form: `split_axis` shrinks by the axis size, `concat_axis` grows."""
  shape = list(x.shape)
  shape[split_axis] //= axis_size
  shape[concat_axis] *= axis_size
  return x.update(shape=tuple(shape))


def _exchange_chunks(x, split_axis: int, concat_axis: int, size: int):
  """`x` batched at 0 over the exchanging axis: example j gets chunk j (of `size` along
  `split_axis`) of every example i, concatenated in order of i along `concat_axis`
  (both axes count an example's dimensions)."""
  shape = list(batching.shape_of(x))
  per = shape[1:]
  s, c = split_axis + 1, concat_axis + 1
  chunks = shape[:s] + [size, per[split_axis] // size] + shape[s + 1:]
  x = reshape(x, tuple(chunks))             # axes: i, ..., j, chunk, ...
  x = batching.moveaxis(x, s, 0)            # axes: j, i, ..., chunk, ...
  x = batching.moveaxis(x, 1, c)            # axes: j, ..., i, concat, ...
  out = [size] + per
  out[s] //= size
  out[c] *= size
  return reshape(x, tuple(out))


def _all_to_all_batch(axis_data, vals, dims, *, split_axis, concat_axis, axis_name,
                      axis_index_groups, axis_size, tiled):
  """Over this vmap's axis, the exchange is a reshape/transpose of the batched value
  (JAX's `_all_to_all_batched_collective`); over another name it stays a collective."""
  (x,), (d,) = vals, dims
  params = dict(split_axis=split_axis, concat_axis=concat_axis, axis_name=axis_name,
                axis_index_groups=axis_index_groups, axis_size=axis_size, tiled=tiled)
  if axis_data.name not in axis_name:
    if d is None:
      return all_to_all_p.bind(x, **params), None
    params["split_axis"] += split_axis >= d
    params["concat_axis"] += concat_axis >= d
    return all_to_all_p.bind(x, **params), d
  _check_groups(axis_index_groups)
  if len(axis_name) > 1:
    raise NotImplementedError("all_to_all over several axis names inside vmap is not "
                              "supported; exchange over one name at a time.")
  x = batching.bdim_at_front(x, d, axis_data.size)
  return _exchange_chunks(x, split_axis, concat_axis, axis_size), 0


def _all_to_all_lower(ctx, x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                      axis_size, tiled):
  def body(dctx, dev, v):
    comm, rank = dctx.group(dev, axis_name, axis_index_groups)
    chunks = np.stack(np.split(v, axis_size, axis=split_axis))
    return np.concatenate(list(comm.all_to_all(rank, chunks)), axis=concat_axis)
  return _host_collective(ctx, [x], body, "all-to-all")


all_to_all_p = declare("all_to_all", _all_to_all_abstract_eval)
all_to_all_p.lower = _all_to_all_lower
all_to_all_p.batch = _all_to_all_batch
all_to_all_p.named_trace = lambda trace, params: batching.named_axis_trace(
    params["axis_name"], "all_to_all", trace)


def _check_all_to_all(v_shape, split_axis, concat_axis, size, tiled, names):
  nd = len(v_shape)
  for what, ax in (("split_axis", split_axis), ("concat_axis", concat_axis)):
    if not -nd <= ax < nd:
      raise ValueError(f"all_to_all: {what} {ax} is out of bounds for an operand of shape "
                       f"{tuple(v_shape)}")
  n = v_shape[split_axis]
  if tiled and n % size:
    raise ValueError(f"The size of all_to_all split_axis ({n}) has to be divisible by the "
                     f"size of the named axis {names} ({size})")
  if not tiled and n != size:
    raise ValueError(f"all_to_all requires the size of the mapped axis axis_name to equal "
                     f"x.shape[split_axis], but they are {size} and {n} respectively.")


def all_to_all(x, axis_name, split_axis: int, concat_axis: int, *, axis_index_groups=None,
               tiled: bool = False):
  """Each example of the mapped axis `axis_name` splits `x` (a pytree) along `split_axis`
  into one chunk per example and sends chunk j to example j; the received chunks are
  stacked along a new axis at `concat_axis` (concatenated along `concat_axis` when
  `tiled`), and, untiled, the split axis is removed."""
  names = _as_tuple(axis_name)
  groups = _check_groups(axis_index_groups, names)
  size = _group_size(names, groups)

  def leaf(v):
    shape = core.get_aval(v).shape
    split, concat = operator.index(split_axis), operator.index(concat_axis)
    _check_all_to_all(shape, split, concat, size, tiled, names)
    split, concat = split % len(shape), concat % len(shape)
    if not tiled and split != concat:  # exchange along a new axis of size 1 at concat
      concat += split < concat
      split += concat <= split
      v = expand_dims(v, (concat,))
    out = all_to_all_p.bind(v, split_axis=split, concat_axis=concat, axis_name=names,
                            axis_index_groups=groups, axis_size=size, tiled=bool(tiled))
    return squeeze(out, (split,)) if not tiled and split != concat else out
  return tree_util.tree_map(leaf, x)


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
  """Swaps the mapped axis `axis_name` with the positional `axis` of `x` (a pytree): an
  all_to_all that splits and concatenates along `axis`."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- axis_index ---------------------------------------------------------------------------

axis_index_p = declare("axis_index", lambda *, axis_name: ShapedArray((), np.int32))
axis_index_p.named_trace = lambda trace, params: batching.named_axis_trace(
    _as_tuple(params["axis_name"]), "axis_index", trace)


def _axis_index_batch(axis_data, vals, dims, *, axis_name):
  if axis_data.name not in _as_tuple(axis_name):
    return axis_index_p.bind(axis_name=axis_name), None
  return iota(np.int32, axis_data.size), 0


axis_index_p.batch = _axis_index_batch


def _axis_index_lower(ctx, *, axis_name):
  return _host_collective(ctx, [], lambda dctx, dev: np.int32(
      dctx.axis_index(dev, _as_tuple(axis_name))), None)


axis_index_p.lower = _axis_index_lower


# --- ppermute -------------------------------------------------------------------------------

ppermute_p = declare("ppermute", lambda x, *, axis_name, perm: x)
ppermute_p.named_trace = lambda trace, params: batching.named_axis_trace(
    params["axis_name"], "ppermute", trace)


def _ppermute_batch(axis_data, vals, dims, *, axis_name, perm):
  """Over this vmap's axis: example dst gets example src's value (zeros where no pair
  sends to it), a gather of the batched value along the batch dim."""
  (x,), (d,) = vals, dims
  if axis_data.name not in axis_name:
    return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
  if len(axis_name) > 1:
    raise NotImplementedError("ppermute over several axis names inside vmap is not "
                              "supported; permute over one name at a time.")
  x = batching.bdim_at_front(x, d, axis_data.size)
  src = dict((dst, s) for s, dst in perm)
  zero = None
  rows = []
  for j in range(axis_data.size):
    if j in src:
      rows.append(structural.slice_in_dim(x, src[j], src[j] + 1, axis=0))
    else:
      if zero is None:
        zero = structural.slice_in_dim(x, 0, 1, axis=0) * 0
      rows.append(zero)
  return structural.concatenate(rows, 0), 0


ppermute_p.batch = _ppermute_batch


def _ppermute_lower(ctx, x, *, axis_name, perm):
  def body(dctx, dev, v):
    comm, rank = dctx.group(dev, axis_name)
    return comm.permute(rank, np.ascontiguousarray(v), list(perm))
  return _host_collective(ctx, [x], body, "collective-permute")


ppermute_p.lower = _ppermute_lower


def ppermute(x, axis_name, perm):
  """Send `x` (a pytree) from index src to index dst of the mapped axis `axis_name` for
  each (src, dst) pair of `perm`; an index no pair sends to gets zeros."""
  names = _as_tuple(axis_name)
  size = _axis_size(names)
  perm = tuple((int(s), int(d)) for s, d in perm)
  srcs, dsts = [s for s, _ in perm], [d for _, d in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  if any(not 0 <= i < size for i in srcs + dsts):
    raise ValueError(f"ppermute perm {perm} has indices outside the axis {names} of size "
                     f"{size}")
  return tree_util.tree_map(lambda v: ppermute_p.bind(v, axis_name=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
  """`ppermute` with the permutation given by sources: index i receives perm[i]'s `x`."""
  perm = [int(p) for p in perm]
  if set(perm) != set(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pbroadcast(x, axis_name, source):
  """Every index along `axis_name` gets the `x` (a pytree) of index `source` (an int or an
  int32 scalar): XLA's CollectiveBroadcast, as the psum of `x` masked to the source."""
  if isinstance(source, int):
    size = _axis_size(_as_tuple(axis_name))
    if not 0 <= source < size:
      raise ValueError(f"pbroadcast: source {source} is outside the axis {axis_name!r} of "
                       f"size {size}")
  at_source = eq(axis_index(axis_name), convert_element_type(source, np.int32))

  def leaf(v):
    shape = core.get_aval(v).shape
    pred = broadcast_in_dim(at_source, shape, ()) if shape else at_source
    return psum(select(pred, v, full_like(v, 0)), axis_name)
  return tree_util.tree_map(leaf, x)


def axis_index(axis_name):
  """The index (int32) of the current example along the mapped axis `axis_name`; for a
  tuple of names, the row-major index over all of them."""
  if not isinstance(axis_name, (tuple, list)):
    return axis_index_p.bind(axis_name=axis_name)
  index, inner = 0, 1
  for name in reversed(axis_name):
    index = index + axis_index(name) * inner
    inner *= _axis_size(name)
  return index


def _install_ad_rules():
  """psum is linear, and its own transpose (each example's cotangent is the sum of all the
  examples' cotangents, as JAX's rule); all_gather and psum_scatter are linear and each
  other's transposes (JAX's `_all_gather_transpose_rule`); all_to_all is linear, its
  transpose the exchange back (split and concat axes swapped); pmax/pmin have no rule."""

  def all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                           axis_size, tiled):
    return [reduce_scatter_p.bind(ad.instantiate_zeros(ct), scatter_dimension=all_gather_dimension,
                                  axis_name=axis_name, axis_index_groups=axis_index_groups,
                                  axis_size=axis_size, tiled=tiled)]

  def reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                               axis_size, tiled):
    return [all_gather_p.bind(ad.instantiate_zeros(ct), all_gather_dimension=scatter_dimension,
                              axis_name=axis_name, axis_index_groups=axis_index_groups,
                              axis_size=axis_size, tiled=tiled)]
  def all_to_all_transpose(ct, x, *, split_axis, concat_axis, **params):
    return [all_to_all_p.bind(ad.instantiate_zeros(ct), split_axis=concat_axis,
                              concat_axis=split_axis, **params)]
  ad.deflinear2(all_gather_p, all_gather_transpose)
  ad.deflinear2(all_to_all_p, all_to_all_transpose)
  ad.deflinear2(reduce_scatter_p, reduce_scatter_transpose)
  ad.deflinear2(ppermute_p, lambda ct, x, *, axis_name, perm: [ppermute_p.bind(
      ad.instantiate_zeros(ct), axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])

  def transpose(ct, x, *, axes, axis_index_groups):
    named = tuple(a for a in axes if not isinstance(a, int))
    pos = tuple(a for a in axes if isinstance(a, int))
    if pos:  # positional axes (left by vmap) were summed: broadcast back over them
      shape = x.aval.shape
      ct = structural.broadcast_in_dim(
          ct, shape, tuple(i for i in range(len(shape)) if i not in pos))
    return [psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups) if named else ct]
  ad.deflinear2(psum_p, transpose)


_install_ad_rules()


# --- sharding_constraint ----------------------------------------------------------------
# with_sharding_constraint / reshard inside jit over a mesh of several devices: the identity
# on values, a point where sharding propagation (driver/sharding_propagation.py) lays the
# value out as `sharding` says. Staged only for multi-device shardings (on one device JAX's
# constraint is the identity, and ember stages nothing).

sharding_constraint_p = declare("sharding_constraint", lambda x, *, sharding: x,
                                lambda x, *, sharding: x)
sharding_constraint_p.lower = lambda ctx, x, *, sharding: x
sharding_lib.stage_constraint[0] = sharding_constraint_p.bind
# under vmap the constraint is dropped (the batched value has one more dim it does not
# describe): the values are the same
sharding_constraint_p.batch = lambda axis_data, vals, dims, *, sharding: (vals[0], dims[0])
ad.deflinear(sharding_constraint_p, lambda ct, *, sharding: [
    sharding_constraint_p.bind(ad.instantiate_zeros(ct), sharding=sharding)])

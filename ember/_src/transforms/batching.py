"""Batching (vmap): the BatchTrace interpreter, the rule factories primitives share, and
`vmap` itself.

As in JAX's "Autodidax": a `BatchTracer` carries a value `val` that has one extra
dimension, `batch_dim` (None: the value is the same for every example). `vmap` pushes a
`BatchTrace` on the trace stack; each primitive applied to its tracers runs the
primitive's batching rule, `prim.batch(axis_data, vals, dims, **params) -> (out, out_dim)`
(a list of outs and a list of dims for multiple-result primitives), which binds ordinary
primitives on the batched values, so the result is again a jaxpr of lax primitives (or
eager NumPy work) with no trace of vmap left in it.

The rules sit beside each primitive's declaration (ember/_src/primitives/*); this module
holds the machinery and the factories for whole families: `vectorized` (elementwise
unary), `broadcasting` (elementwise n-ary with lax's size-1 broadcasting), `reducer`
(`axes` param) and `cumulative` (`axis` param). Parameters computed here use NumPy
arithmetic exactly where JAX's rules do, so batched jaxprs print as JAX's do
(`broadcast_dimensions=(0, np.int64(2))`).

Named axes: `vmap(..., axis_name='i')` registers 'i' while it traces; collectives
(`lax.psum(x, 'i')`, ...) are primitives whose batching rule turns the named axis into a
positional one (see ember/_src/primitives/parallel.py), and whose binding is routed to
the trace of the vmap that binds the name (`named_trace`) even when `x` does not depend
on that vmap's inputs.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import threading
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import ShapedArray, api_util, hitypes
from ember._src.core import trace as trace_lib

not_mapped = None


class AxisData(NamedTuple):
  name: Any            # the axis name (None when vmap was not given one)
  size: int
  spmd_axis_name: Any  # accepted for JAX compatibility; ember has no device meshes


# ------------------------------------------------------------------------------------
# The trace
# ------------------------------------------------------------------------------------


class BatchTracer(core.Tracer):
  __slots__ = ("val", "batch_dim")
  jax_name = "VmapTracer"

  def __repr__(self):
    return f"VmapTracer(aval={self.aval}, batched={core.get_aval(self.val)})"

  def __init__(self, trace, val, batch_dim):
    self._trace, self.val, self.batch_dim = trace, val, batch_dim

  @property
  def aval(self) -> ShapedArray:
    a = core.get_aval(self.val)
    d = self.batch_dim
    if d is None:
      return a
    return a.update(shape=a.shape[:d] + a.shape[d + 1:])

  def full_lower(self):
    return core.full_lower(self.val) if self.batch_dim is None else self

  def _origin_msg(self):
    return self.val._origin_msg() if isinstance(self.val, core.Tracer) else ""

  def ref_value(self, ref_aval):
    """The value to store in a ref from outside this vmap (core/refs.py): an unbatched
    one's, else JAX's error."""
    if self.batch_dim is None:
      return self.val
    raise Exception(f"performing a set/swap operation with vmapped value on an unbatched "
                    f"array reference of type {ref_aval}. Move the array reference to be an "
                    "argument to the vmapped function?")


class BatchTrace(core.Trace):
  """Runs each primitive's batching rule on the batched values."""

  @property
  def axis_data(self) -> AxisData:
    return self.main.global_data

  def pure(self, val):
    return BatchTracer(self, val, not_mapped)

  lift = pure

  def process_primitive(self, primitive, tracers, params):
    vals = [t.val for t in tracers]
    dims = [t.batch_dim for t in tracers]
    if primitive.named_trace is None and all(d is None for d in dims):
      out = primitive.bind(*vals, **params)
      out_dims = [None] * len(out) if primitive.multiple_results else None
    else:
      rule = primitive.batch
      if rule is None:
        raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented")
      # check the per-example types first: errors name the shapes the user wrote (as JAX's)
      primitive.out_avals([t.aval for t in tracers], params)
      out, out_dims = rule(self.axis_data, vals, dims, **params)
    if primitive.multiple_results:
      return [BatchTracer(self, o, d) for o, d in zip(out, out_dims)]
    return [BatchTracer(self, out, out_dims)]


# ------------------------------------------------------------------------------------
# JAX's registries (jax.interpreters.batching): views onto `Primitive.batch`
# ------------------------------------------------------------------------------------

def _unmapped(prim, vals, params):
  out = prim.bind(*vals, **params)
  return (out, [not_mapped] * len(out)) if prim.multiple_results else (out, not_mapped)


def _from_jax_batcher(prim, rule):
  """`rule(vals, dims, **params)` (jax.interpreters.batching.primitive_batchers)."""
  def batch(axis_data, vals, dims, **params):
    if all(d is not_mapped for d in dims):
      return _unmapped(prim, vals, params)
    return rule(vals, dims, **params)
  batch.jax_rule = rule
  return batch


def _from_axis_batcher(prim, rule):
  """`rule(axis_size, axis_name, trace_type, vals, dims, **params)` (axis_primitive_batchers)."""
  def batch(axis_data, vals, dims, **params):
    return rule(axis_data.size, axis_data.name, None, vals, dims, **params)
  batch.jax_rule = rule
  return batch


def _to_jax_batcher(prim, batch):
  rule = getattr(batch, "jax_rule", None)
  if rule is not None:
    return rule
  return lambda vals, dims, **params: batch(
      AxisData(None, batch_size(vals, dims), None), vals, dims, **params)


# ember's own signature: `rule(axis_data, vals, dims, **params)` (axis_data.size, .name)
fancy_primitive_batchers = core.RuleRegistry("batch")
primitive_batchers = core.RuleRegistry("batch", _from_jax_batcher, _to_jax_batcher)
axis_primitive_batchers = core.RuleRegistry("batch", _from_axis_batcher, _to_jax_batcher)


# ------------------------------------------------------------------------------------
# Named axes: which vmap binds which axis name
# ------------------------------------------------------------------------------------

class _AxisEnv(threading.local):
  """The axis names bound by the vmaps the calling thread is inside (threads trace apart)."""

  def __init__(self):
    self.stack: list[tuple[Any, core.MainTrace]] = []   # (name, main), innermost last
    self.spmd: dict = {}   # device axes of the per-device program being traced: name -> size


_axis_env = _AxisEnv()


@contextlib.contextmanager
def spmd_axes(sizes: dict):
  """Trace the block as the program of one device of a multi-device pmap/shard_map: the
  names in `sizes` are bound to device axes of those sizes, so a collective over them stays
  a collective (run between the devices) instead of being vmapped away."""
  prev = _axis_env.spmd
  _axis_env.spmd = {**prev, **sizes}
  try:
    yield
  finally:
    _axis_env.spmd = prev


def spmd_axis_size(name) -> int | None:
  """The size of `name` when it is a device axis (see spmd_axes) not shadowed by a vmap."""
  if axis_main(name) is not None:
    return None
  return _axis_env.spmd.get(name)


def axis_main(name) -> core.MainTrace | None:
  for n, main in reversed(_axis_env.stack):
    if n == name:
      return main
  return None


def axis_size(name) -> int:
  main = axis_main(name)
  if main is None:
    size = _axis_env.spmd.get(name)
    if size is not None:
      return size
    raise unbound_axis_error(name)
  return main.global_data.size


def unsafe_get_axis_names() -> list:
  """The axis names bound where this runs (vmaps' and device axes'), outermost first."""
  names = [n for n, _ in _axis_env.stack]
  return names + [n for n in _axis_env.spmd if n not in names]


def nonempty_axis_env() -> bool:
  return bool(_axis_env.stack or _axis_env.spmd)


def unsafe_am_i_under_a_vmap() -> bool:
  """Whether a vmap's trace is open here (an axis name or none)."""
  return any(m.trace_type is BatchTrace for m in trace_lib.trace_stack)


def unsafe_am_i_under_a_jit() -> bool:
  """Whether a jaxpr is being staged here (jit, make_jaxpr, a loop's body, ...)."""
  dynamic = trace_lib.dynamic_trace
  return (dynamic is not None or
          any(issubclass(m.trace_type, core.JaxprTrace) for m in trace_lib.trace_stack))


def unbound_axis_error(name, prim_name: str = "psum") -> NameError:
  """JAX's NameError (its first sentence verbatim), with ember's fix: ember binds axis
  names only with vmap (it has no pmap / shard_map)."""
  fix = (f"Collectives such as {prim_name} must run inside a function mapped with "
         f"`vmap(..., axis_name={name!r})`.")
  if trace_lib.dynamic_trace is not None:  # staging (jit / make_jaxpr) outside any vmap
    return NameError(f"Found an unbound axis name: {name}. {fix}")
  return NameError(f"unbound axis name: {name}. {fix}")


def named_axis_trace(axis_names, prim_name: str, trace: core.Trace) -> core.Trace:
  """The trace a collective over `axis_names` runs in: the innermost of `trace` (found
  from its arguments) and the traces of the vmaps binding those names."""
  for name in axis_names:
    if isinstance(name, (int, np.integer)):  # a positional axis (from the batching rules)
      continue
    main = axis_main(name)
    if main is None:
      if name in _axis_env.spmd:   # a device axis: the collective runs between devices
        continue
      raise unbound_axis_error(name, prim_name)
    if main.level > trace.main.level:
      trace = main.trace_type(main)
  return trace


# ------------------------------------------------------------------------------------
# Moving batch dimensions
# ------------------------------------------------------------------------------------


# What moves, inserts and sums batch dimensions: the primitives `transpose_p` and
# `broadcast_in_dim_p`, lax's `broadcast_in_dim(x, shape, broadcast_dimensions)` and
# `reduce_sum(x, axes)`.
# Primitives sit a layer above transforms: primitives/structural.py registers them here
# when it is imported.
dimension_ops: dict[str, Any] = {}


def moveaxis(x, src: int, dst: int):
  """`x` with its axis `src` moved to position `dst` (a transpose; nothing when equal)."""
  if src == dst:
    return x
  nd = np.ndim(x) if not isinstance(x, core.Tracer) else x.ndim
  src, dst = src % nd, dst % nd
  if src == dst:
    return x
  perm = [i for i in range(nd) if i != src]
  perm.insert(dst, src)
  return dimension_ops["transpose_p"].bind(x, permutation=tuple(perm))


def broadcast(x, size: int, axis: int):
  """`x` with a new axis of `size` inserted at `axis` (every example the same)."""
  aval = core.get_aval(x)
  shape = list(aval.shape)
  shape.insert(axis, size)
  if aval.dtype == dtypes.float0:   # no data (an integer's tangent): a constant, never a
    return np.zeros(shape, dtypes.float0)   # staged broadcast the compiler cannot store
  dims = tuple(np.delete(np.arange(len(shape)), axis))
  return dimension_ops["broadcast_in_dim_p"].bind(x, shape=tuple(shape),
                                                  broadcast_dimensions=dims, sharding=None)


def broadcast_in_dim(x, shape, broadcast_dimensions):
  return dimension_ops["broadcast_in_dim"](x, shape, broadcast_dimensions)


def sum_batch_dim(x, bdim):
  """`x` summed over its batch dimension (itself when unbatched): a cotangent of a value
  every example shares."""
  return x if bdim is None else dimension_ops["reduce_sum"](x, (bdim,))


def bdim_at_front(x, bdim, size: int):
  """`x` with its batch dimension first (created by broadcasting when unbatched)."""
  if bdim is None:
    return broadcast(x, size, 0)
  return moveaxis(x, bdim, 0)


def shape_of(x) -> tuple:
  return core.get_aval(x).shape


def ndim_of(x) -> int:
  return len(core.get_aval(x).shape)


def batch_size(vals, dims) -> int:
  return next(shape_of(x)[d] for x, d in zip(vals, dims) if d is not None)


# ------------------------------------------------------------------------------------
# Rule factories for primitive families
# ------------------------------------------------------------------------------------


def vectorized(prim):
  """Elementwise unary primitives (and any shape-preserving one with a single operand):
  the batch dimension passes straight through."""
  def rule(axis_data, vals, dims, **params):
    return prim.bind(*vals, **params), dims[0]
  return rule


def defvectorized(prim) -> None:
  prim.batch = vectorized(prim)


def defbroadcasting(prim) -> None:
  prim.batch = broadcasting(prim)


def _handle_scalar_broadcasting(nd, x, d):
  """`x` with trailing size-1 dimensions up to rank `nd` (lax.expand_dims)."""
  if d is None or nd == ndim_of(x):
    return x
  shape = shape_of(x)
  return broadcast_in_dim(x, shape + (1,) * (nd - len(shape)), tuple(range(len(shape))))


def broadcasting(prim):
  """Elementwise n-ary primitives (JAX's `broadcast_batcher`): equal shapes and batch
  dims bind directly; otherwise every operand gets its batch dimension in front (size 1
  for unbatched ones) and lax's size-1 broadcasting does the rest."""
  def rule(axis_data, vals, dims, **params):
    shape, dim = next((shape_of(x), d) for x, d in zip(vals, dims) if d is not None)
    if all(shape_of(x) == shape and d == dim for x, d in zip(vals, dims) if ndim_of(x)):
      out = prim.bind(*vals, **params)
      return (out, [dim] * len(out)) if prim.multiple_results else (out, dim)
    vals = [bdim_at_front(x, d, 1) if ndim_of(x) else x for x, d in zip(vals, dims)]
    nd = max(ndim_of(x) for x in vals)
    vals = [_handle_scalar_broadcasting(nd, x, d) for x, d in zip(vals, dims)]
    out = prim.bind(*vals, **params)
    return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
  return rule


def reducer(prim):
  """Reductions over `axes` (reduce_*, argmax/argmin): shift the axes past the batch
  dimension; the batch dimension stays, at its place among the kept dimensions."""
  def rule(axis_data, vals, dims, *, axes, **params):
    (x,), (bdim,) = vals, dims
    axes = tuple(np.where(np.less(axes, bdim), axes, np.add(axes, 1)))
    bdim_out = int(list(np.delete(np.arange(ndim_of(x)), axes)).index(bdim))
    return prim.bind(x, axes=axes, **params), bdim_out
  return rule


def defreducer(prim) -> None:
  """JAX's: `prim` reduces its one operand over the dimensions in its `axes` parameter."""
  prim.batch = reducer(prim)


def cumulative(prim):
  """Cumulative reductions along `axis` (cumsum, ...): shift the axis past the batch dim."""
  def rule(axis_data, vals, dims, *, axis, **params):
    (x,), (bdim,) = vals, dims
    axis = axis if axis < bdim else axis + 1
    return prim.bind(x, axis=axis, **params), bdim
  return rule


def _broadcast_front(x, size: int):
  """lax.broadcast(x, (size,)): a new leading axis of `size`."""
  shape = shape_of(x)
  return broadcast_in_dim(x, (size,) + shape, tuple(range(1, len(shape) + 1)))


def all_at_front(prim, *shifted: str):
  """Primitives whose operands must all be batched alike (concatenate, stack): every
  operand gets its batch dimension in front (unbatched ones are broadcast, with lax's
  `broadcast` as JAX's rules do), and the axis params named in `shifted` move up by one."""
  def rule(axis_data, vals, dims, **params):
    size = batch_size(vals, dims)
    vals = [_broadcast_front(x, size) if d is None else moveaxis(x, d, 0)
            for x, d in zip(vals, dims)]
    params = {k: (v + 1 if k in shifted else v) for k, v in params.items()}
    out = prim.bind(*vals, **params)
    return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
  return rule


# ------------------------------------------------------------------------------------
# Batching a jaxpr (the rule of higher-order primitives: jit)
# ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _batch_main(axis_data: AxisData):
  with core.new_main(BatchTrace, axis_data) as main:
    if axis_data.name is not None:
      _axis_env.stack.append((axis_data.name, main))
    try:
      yield main
    finally:
      if axis_data.name is not None:
        _axis_env.stack.pop()


def _is_innermost(main: core.MainTrace) -> bool:
  """Whether `main` is the trace ops go to when no argument names a higher one."""
  dynamic = trace_lib.dynamic_trace
  return trace_lib.trace_stack[-1] is main and (dynamic is None or dynamic.level < main.level)


def batch_subtrace(fun: Callable, axis_data: AxisData, vals, in_dims, trace=None):
  """`fun(*xs) -> list` run on `vals` batched at `in_dims` (None: unbatched; a None value
  passes as it is): (the batched values of its outputs, their batch dims). It runs under
  `trace` while that is still the innermost trace (its vmap is running, so values `fun`
  closes over belong to it), else under a new vmap of `axis_data` (a rule run later: by a
  transpose, or by the jvp of a staged equation)."""
  if trace is not None and _is_innermost(trace.main):
    return _run_batched(fun, trace, vals, in_dims)
  with _batch_main(axis_data) as main:
    return _run_batched(fun, BatchTrace(main), vals, in_dims)


def batch_subtrace_wrapped(fun: api_util.WrappedFun, tag, axis_data: AxisData, in_dims):
  """JAX's `batch_subtrace` (jax.interpreters.batching): `fun` (a WrappedFun on flat
  values) as one run on values batched at `in_dims` (None: unbatched; a thunk giving them
  is accepted), returning its outputs' batched values; the second value is a thunk giving
  their batch dims once it has run."""
  del tag   # ember's vmap is identified by its trace
  out_dims = api_util.Store()

  def layer(inner):
    def run(*vals):
      dims = in_dims() if callable(in_dims) else in_dims
      outs, dims_out = batch_subtrace(lambda *xs: list(inner(*xs)), axis_data, vals, dims)
      out_dims.store(tuple(dims_out))
      return tuple(outs)
    return run
  return fun.wrap("batch_subtrace", layer), lambda: out_dims.val


def _run_batched(fun, trace, vals, in_dims):
  xs = [v if d is None or v is None else BatchTracer(trace, v, d)
        for v, d in zip(vals, in_dims)]
  # outputs that are not tracers (constants, symbolic zeros) are the same for every example
  outs = [core.full_raise(trace, o) if isinstance(o, core.Tracer) else o for o in fun(*xs)]
  return ([o.val if isinstance(o, BatchTracer) else o for o in outs],
          [o.batch_dim if isinstance(o, BatchTracer) else None for o in outs])


_jaxpr_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def batch_jaxpr(jaxpr: core.Jaxpr, axis_data: AxisData, in_dims) -> tuple[core.Jaxpr, list]:
  """The jaxpr of `vmap(jaxpr_as_fun(jaxpr))` with inputs batched at `in_dims` (None:
  unbatched), and the batch dims of its outputs (None where an output is unbatched)."""
  key = (tuple(in_dims), axis_data.size, axis_data.name)
  per_jaxpr = _jaxpr_cache.setdefault(jaxpr, {})
  hit = per_jaxpr.get(key)
  if hit is not None:
    return hit
  size = axis_data.size

  def insert(a, d):
    return a if d is None else a.update(shape=a.shape[:d] + (size,) + a.shape[d:])

  in_avals = [insert(v.aval, d) for v, d in zip(jaxpr.invars, in_dims)]

  def batched(*args):
    with _batch_main(axis_data) as main:
      trace = BatchTrace(main)
      tracers = [x if d is None else BatchTracer(trace, x, d) for x, d in zip(args, in_dims)]
      outs = core.eval_jaxpr(jaxpr, jaxpr.consts, *tracers)
      outs = [core.full_raise(trace, o) for o in outs]
      return [o.val for o in outs], [o.batch_dim for o in outs]

  out = core.trace_to_jaxpr(batched, in_avals, jaxpr.debug_info)
  per_jaxpr[key] = out
  return out


_hoisted: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def batch_jaxpr_hoisted(jaxpr: core.Jaxpr, axis_data: AxisData, in_dims):
  """`batch_jaxpr` with the constants the batching rules introduced hoisted into leading
  invars (for call primitives whose sub-jaxpr has none): (jaxpr, consts, out_dims). The
  same batched jaxpr object comes back for the same inputs, so compiled code is reused."""
  closed, out_dims = batch_jaxpr(jaxpr, axis_data, in_dims)
  hit = _hoisted.get(closed)
  if hit is None:
    hit = _hoisted[closed] = core.hoist_consts(closed)
  return hit[0], hit[1], out_dims


class ZeroIfMapped:
  """An out_axes_dest of batch_jaxpr_axes: batched at axis 0 when the output is batched,
  left unbatched when it is not."""

  def __repr__(self):
    return "zero_if_mapped"


zero_if_mapped = ZeroIfMapped()


def _match_axis(axis_data: AxisData, x, src, dst):
  if src == dst:
    return x
  if src is None:
    return broadcast(x, axis_data.size, dst % (ndim_of(x) + 1))
  if dst is None:
    raise ValueError(f"vmap has mapped output (axis_name={axis_data.name}) but out_axes "
                     "is None")
  return moveaxis(x, src, dst)


def batch_jaxpr_axes(jaxpr: core.Jaxpr, axis_data: AxisData, in_axes, out_axes_dest
                     ) -> tuple[core.Jaxpr, list[bool]]:
  """JAX's: the closed jaxpr of `jaxpr` vmapped over `axis_data` with inputs batched at
  `in_axes` (None: unbatched) and outputs moved to `out_axes_dest` (an axis, None, or
  `zero_if_mapped`; one entry serves all outputs); with which outputs are batched."""
  in_dims = [None if a is None else a % (len(v.aval.shape) + 1)
             for v, a in zip(jaxpr.invars, in_axes)]
  inner, out_dims = batch_jaxpr(jaxpr, axis_data, in_dims)
  dests = list(out_axes_dest)
  if len(dests) == 1 and len(out_dims) != 1:
    dests = dests * len(out_dims)
  dests = [(None if src is None else 0) if dst is zero_if_mapped else dst
           for src, dst in zip(out_dims, dests)]

  def matched(*args):
    outs = core.eval_jaxpr(inner, inner.consts, *args)
    return [_match_axis(axis_data, x, s, d) for x, s, d in zip(outs, out_dims, dests)], None
  out, _ = core.trace_to_jaxpr(matched, list(inner.in_avals), jaxpr.debug_info)
  return out, [d is not None for d in dests]


# ------------------------------------------------------------------------------------
# vmap
# ------------------------------------------------------------------------------------


def _is_axis_spec(x) -> bool:
  return x is None or type(x) is int


def flatten_axes(name: str, treedef, axis_tree, *, kws: bool = False,
                 loose: bool = False) -> list:
  """The axis spec `axis_tree` (a tree prefix of the value's structure, with ints and
  Nones as leaves) broadcast to one entry per leaf of `treedef`. `loose` (vmap's axes, as
  JAX 0.12's): its containers need only match the value's in number of children (and
  keys, where both are dicts), so a list spec fits a tuple value and the reverse."""
  axis_leaves, axis_treedef = tree_util.tree_flatten(axis_tree, is_leaf=lambda x: x is None)
  try:
    counts = axis_treedef.leaf_counts_under(treedef, loose)
  except ValueError:
    spec, val = (axis_tree[0], treedef.children[0]) if kws else (axis_tree, treedef)
    raise ValueError(
        f"{name} specification must be a tree prefix of the corresponding value; "
        f"\n  Mismatch details: the specification {spec!r} does not match the structure of "
        f"the arguments {val} (each entry of {name} applies to the "
        "whole subtree at its position).") from None
  out = []
  for ax, n in zip(axis_leaves, counts):
    out.extend([ax] * n)
  return out


def _check_hi_unmapped(args, kwargs, in_axes) -> None:
  """JAX maps a hi value (core/hitypes.py) only along a MappingSpec, which ember does not
  have: one given an integer axis raises JAX's error (unmapped ones pass through)."""
  leaves, tree = tree_util.public.tree_flatten((args, kwargs))
  dims = flatten_axes("vmap in_axes", tree, (in_axes, 0), kws=True, loose=True)
  for x, d in zip(leaves, dims):
    if d is not None and hitypes.is_hi(x):
      raise ValueError(
          f"vmap was requested to map a value of non-array type {hitypes.hitype_of(x)} along "
          f"axis {d}, but non-array types can't be mapped along an integer axis. Instead pass "
          "a mapping spec (a MappingSpec instance) as this argument's in_axes entry, and "
          "pass axis_size explicitly.")


def _arg_names(fun, args, kwargs) -> list[str]:
  """'argument a', "argument b['p']", ... for each flat leaf (JAX's mismatch message)."""
  try:
    params = list(inspect.signature(fun).bind(*args, **kwargs).signature.parameters)
  except (TypeError, ValueError):
    params = None
  names = []
  for i, a in enumerate(args):
    base = (f"argument {params[i]}" if params is not None and i < len(params)
            else f"args[{i}]")
    for path, _ in tree_util.tree_flatten_with_path(a)[0]:
      names.append(base + tree_util.keystr(path))
  for k, v in kwargs.items():
    for path, _ in tree_util.tree_flatten_with_path(v)[0]:
      names.append(f"kwargs['{k}']" + tree_util.keystr(path))
  return names


def _mapped_axis_size(fun, args, kwargs, vals, dims, axis_size) -> int:
  if not vals:
    if axis_size is not None:
      return axis_size
    raise ValueError("vmap wrapped function must be passed at least one argument "
                     "containing an array or axis_size must be specified, got empty "
                     f"*args={args} and **kwargs={kwargs}")
  sizes = []
  for x, d in zip(vals, dims):
    if d is None:
      sizes.append(None)
      continue
    shape = shape_of(x)
    if not -len(shape) <= d < len(shape):
      min_rank = d + 1 if d >= 0 else -d
      raise ValueError(f"vmap was requested to map its argument along axis {d}, which "
                       f"implies that its rank should be at least {min_rank}, but is only "
                       f"{len(shape)} (its shape is {shape})")
    sizes.append(shape[d])
  distinct = {s for s in sizes if s is not None}
  if axis_size is not None:
    distinct.add(axis_size)
  if len(distinct) == 1:
    return distinct.pop()
  if not distinct:
    raise ValueError("vmap must have at least one non-None value in in_axes or axis_size "
                     "must be specified")
  names = _arg_names(fun, args, kwargs)
  counts = collections.Counter(s for s in sizes if s is not None).most_common()
  msg = ["vmap got inconsistent sizes for array axes to be mapped:\n"]
  if axis_size is not None:
    msg.append(f"  * the `axis_size` argument was {axis_size};\n")
  for n, (sz, ct) in enumerate(counts):
    i = sizes.index(sz)
    what = f"axis {dims[i]} of {names[i]} of type {core.get_aval(vals[i]).str_short()}"
    if ct == 1:
      msg.append(f"  * one axis had size {sz}: {what};\n")
    else:
      msg.append(f"  * {'most' if n == 0 else 'some'} axes ({ct} of them) had size {sz}, "
                 f"e.g. {what};\n")
  raise ValueError("".join(msg)[:-2])


def _check_out(fun, x):
  try:
    core.get_aval(x)
  except TypeError:
    raise TypeError(f"Output from batched function {x!r} with type {type(x)} is not a "
                    "valid JAX type") from None


def _match_out_axis(axis_data: AxisData, x, src, dst, path: str):
  if src == dst:
    return x
  if src is None:
    nd = ndim_of(x) + 1
    if not -nd <= dst < nd:
      raise ValueError(f"axis {dst} is out of bounds for array of dimension {nd}")
    return broadcast(x, axis_data.size, dst % nd)
  if dst is None:
    if axis_data.name is not None:
      raise ValueError(f"vmap has mapped output (axis_name={axis_data.name}) but out_axes "
                       f"is {dst}")
    raise ValueError(f"at vmap out_axes{path}, got axis spec {dst} but output was batched "
                     f"on axis {src}")
  nd = ndim_of(x)
  if not -nd <= dst < nd:
    raise ValueError(f"axis {dst} is out of bounds for array of dimension {nd}")
  return moveaxis(x, src, dst)


_VMAP_DOC = ("Vectorized version of {fun}. Takes similar arguments as {fun} but with "
             "additional array axes over which {fun} is mapped.")


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size: int | None = None,
         spmd_axis_name=None):
  """Vectorizing map: `vmap(f)(xs)` applies `f` to each slice of `xs` along `in_axes` and
  stacks the results along `out_axes`, as one batched computation (no Python loop).

  `in_axes`: an int, None, or a tuple with one entry per positional argument, each an
  int, None or a pytree of them matching that argument (keyword arguments map along
  axis 0). `out_axes`: likewise for the outputs. `axis_name` names the mapped axis for
  collectives (`lax.psum(x, axis_name)`, ...); `axis_size` gives the size when no input
  is mapped. `spmd_axis_name` is accepted and ignored (ember has no device meshes).
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun!r}")
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)  # JAX treats lists like tuples here
  if not (in_axes is None or type(in_axes) in (int, tuple)):
    raise TypeError("vmap in_axes must be an int, None, or a tuple of entries corresponding "
                    f"to the positional arguments passed to the function, but got {in_axes}.")
  if not all(_is_axis_spec(l) for l in tree_util.tree_leaves(in_axes)):
    raise TypeError("vmap in_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {in_axes}.")
  if not all(_is_axis_spec(l) for l in tree_util.tree_leaves(out_axes)):
    raise TypeError("vmap out_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {out_axes}.")
  if axis_size is not None:
    axis_size = core.canonicalize_shape((axis_size,), "vmap axis_size: ")[0]

  doc = _VMAP_DOC + ("\n\nOriginal documentation:\n\n{doc}" if getattr(fun, "__doc__", None)
                     else "")

  @api_util.wraps(fun, docstr=doc)
  def vmap_f(*args, **kwargs):
    if isinstance(in_axes, tuple) and len(in_axes) != len(args):
      raise ValueError("vmap in_axes must be an int, None, or a tuple of entries "
                       "corresponding to the positional arguments passed to the function, "
                       f"but got len(in_axes)={len(in_axes)}, len(args)={len(args)}.")
    args_flat, in_tree = tree_util.tree_flatten((args, kwargs))
    in_dims = flatten_axes("vmap in_axes", in_tree, (in_axes, 0), kws=True, loose=True)
    if hitypes.any_registered() and any(tree_util.leaves_of_transform_nodes(in_tree)):
      _check_hi_unmapped(args, kwargs, in_axes)
    for x, d in zip(args_flat, in_dims):
      # an unmapped (None) argument may be anything (a function, a string): passed as is
      if d is not None and not core.is_arraylike(x):
        note = core.real_jax_mixing_note(x)
        what = (f"{x!r} of type {type(x)}" if isinstance(x, str)   # JAX's two spellings
                else f"'{x!r}' of type '{type(x)}'")
        raise TypeError(f"Argument {what} is not a valid JAX type"
                        + (f": {note}" if note else ""))
    size = _mapped_axis_size(fun, args, kwargs, args_flat, in_dims, axis_size)
    in_dims = [None if d is None else d % ndim_of(x) for x, d in zip(args_flat, in_dims)]
    axis_data = AxisData(axis_name, size, spmd_axis_name)
    with _batch_main(axis_data) as main:
      trace = BatchTrace(main)
      in_tracers = [x if d is None else BatchTracer(trace, x, d)
                    for x, d in zip(args_flat, in_dims)]
      args_t, kwargs_t = in_tree.unflatten(in_tracers)
      out = fun(*args_t, **kwargs_t)
      out_flat, out_tree = tree_util.tree_flatten(out)
      for o in out_flat:
        _check_out(fun, o)
      out_tracers = [core.full_raise(trace, o) for o in out_flat]
    out_dims = flatten_axes("vmap out_axes", out_tree, out_axes, loose=True)
    paths = [tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(
        out_tree.unflatten(out_dims), is_leaf=lambda x: x is None)[0]]
    outs = [_match_out_axis(axis_data, t.val, t.batch_dim, d, p)
            for t, d, p in zip(out_tracers, out_dims, paths)]
    return out_tree.unflatten([core.full_lower(o) for o in outs])

  return vmap_f

"""Sharding propagation: partition a jitted program over a device mesh, SPMD-style.

Input: the jaxpr of a jit, the mesh's axis sizes, and how each input is split (a spec: per
dimension, the tuple of mesh axes it is split over, major first). Output: one device's
program, built by binding primitives on that device's blocks while tracing under
batching.spmd_axes (parallel/spmd.py compiles it once and runs it on every device, the collectives
exchanged for real between them).

Walking the equations forward, each value gets a spec, and each device holds the block of
the value that the spec gives it. Each rule binds the same primitive on the blocks, with
shape params made local, and adds a collective where a block alone does not give the
device's block of the result:
  - elementwise ops: the operands brought to one spec (the first split operand's, dim by
    dim), the op applied to the blocks;
  - broadcast_in_dim, transpose, reshape (for dims whose size it keeps): the spec carried
    to the output dims;
  - dot_general: batch and free dims keep their split; a contraction over a split dim is
    the local dot of the blocks (a partial sum) followed by an all-reduce (psum);
  - reduce_sum / reduce_max / reduce_min over a split dim: local reduce + psum/pmax/pmin;
  - sharding_constraint (with_sharding_constraint, reshard): the operand brought to the
    asked spec;
  - nested jit, custom_jvp/custom_vjp calls: their bodies partitioned in place;
  - any other op: the operands all-gathered to whole values and the op computed on every
    device (replicated): correct, just not parallel.
Bringing a value to another spec ("resharding") all-gathers the dims whose split changes
and then slices (at the device's axis_index) the dims the new spec splits.

Why values are unchanged: every rule computes exactly the device's block of the global
result. Elementwise ops, transposes and broadcasts commute with taking a block; a dot or a
reduction over a split dim is the sum (max, min) over the devices of the results of their
blocks, which the all-reduce forms; an all-gather rebuilds the whole value from the
blocks and a slice takes a block of it. Only the order in which a split sum is added
changes (per-block partial sums, then rank order), so f32 sums may round differently
within a few ulps; max/min and everything else are bit-identical.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from ember._src import core
from ember._src.primitives import elementwise, parallel, reductions, slicing

Spec = tuple   # per dimension: a tuple of mesh axis names (empty: not split)

# Primitives that apply one scalar function to each element (size-1 and 0-d operands
# broadcast): everything of primitives/elementwise/ but the bitcast that may change rank.
_ELEMENTWISE = ({p.name for p in vars(elementwise).values() if isinstance(p, core.Primitive)}
                - {"bitcast_convert_type"}) | {"add_any", "copy", "copy_p"}
_ALL_REDUCE = {"reduce_sum": parallel.psum, "reduce_max": parallel.pmax,
               "reduce_min": parallel.pmin}


def replicated(ndim: int) -> Spec:
  return ((),) * ndim


class Partitioner:
  """Partitions jaxprs over a mesh of axis `sizes` (name -> size), inside a trace of one
  device's program (the mesh axes bound as device axes)."""

  def __init__(self, sizes: dict):
    self.sizes = dict(sizes)

  # --- blocks and resharding ----------------------------------------------------------

  def count(self, axes: tuple) -> int:
    return math.prod(self.sizes[a] for a in axes)

  def local_shape(self, shape: Sequence[int], spec: Spec) -> tuple:
    return tuple(s // self.count(axes) for s, axes in zip(shape, spec))

  def gather(self, x, spec: Spec, dims) -> object:
    """The blocks of `x` joined along `dims` (those dims whole afterwards): an all-gather
    over each of the dim's axes, the minor one first."""
    for d in dims:
      for a in reversed(spec[d]):
        x = parallel.all_gather(x, a, axis=d, tiled=True)
    return x

  def take_block(self, x, dim: int, axes: tuple) -> object:
    """This device's block of the whole dim `dim` of `x` when it is split over `axes`."""
    n = self.count(axes)
    if n == 1:
      return x
    size = core.get_aval(x).shape[dim] // n
    index = parallel.axis_index(axes if len(axes) > 1 else axes[0])
    return slicing.dynamic_slice_in_dim(x, index * size, size, dim)

  def reshard(self, x, src: Spec, dst: Spec) -> object:
    """`x` (split as `src`) split as `dst`: gather the dims whose split changes, then take
    this device's block of the dims `dst` splits."""
    if src == dst:
      return x
    changed = [d for d in range(len(src)) if src[d] != dst[d]]
    x = self.gather(x, src, [d for d in changed if src[d]])
    for d in changed:
      if dst[d]:
        x = self.take_block(x, d, dst[d])
    return x

  # --- the walk -----------------------------------------------------------------------

  def run(self, jaxpr: core.Jaxpr, consts: Sequence, args: Sequence, specs: Sequence[Spec]
          ) -> tuple[list, list]:
    """(this device's blocks of the outputs of `jaxpr`, their specs), from the blocks
    `args` of the inputs split as `specs` (consts are whole)."""
    env: dict = {}

    def read(v):
      if isinstance(v, core.Literal):
        return core.literal_value(v), replicated(len(v.aval.shape))
      return env[id(v)]

    for v, c in zip(jaxpr.constvars, consts):
      env[id(v)] = c, replicated(len(v.aval.shape))
    for v, x, s in zip(jaxpr.invars, args, specs):
      env[id(v)] = x, tuple(s)
    for eqn in jaxpr.eqns:
      vals, in_specs = zip(*map(read, eqn.invars)) if eqn.invars else ((), ())
      outs, out_specs = self.rule(eqn)(self, eqn, list(vals), list(in_specs))
      for v, o, s in zip(eqn.outvars, outs, out_specs):
        if not isinstance(v, core.DropVar):
          env[id(v)] = o, s
    res = [read(v) for v in jaxpr.outvars]
    return [r[0] for r in res], [r[1] for r in res]

  @staticmethod
  def rule(eqn) -> Callable:
    name = eqn.primitive.name
    if name in _RULES:
      return _RULES[name]
    if name in _ELEMENTWISE:
      return _elementwise
    return _replicated


def _bind(eqn, vals, **params) -> list:
  out = eqn.primitive.bind(*vals, **{**eqn.params, **params})
  return list(out) if eqn.primitive.multiple_results else [out]


def _replicated(p: Partitioner, eqn, vals, specs):
  """An op without a rule: computed on the whole operands, on every device."""
  whole = [p.gather(x, s, range(len(s))) for x, s in zip(vals, specs)]
  outs = _bind(eqn, whole)
  return outs, [replicated(len(v.aval.shape)) for v in eqn.outvars]


def _claim(spec: list, used: set, d: int, axes: tuple) -> None:
  """Split dim d of a result over `axes` unless it is split already or an axis is taken."""
  if axes and not spec[d] and not used & set(axes):
    spec[d] = axes
    used.update(axes)


def _elementwise(p: Partitioner, eqn, vals, specs):
  shape = eqn.outvars[0].aval.shape
  spec, used = [()] * len(shape), set()
  for v, s in zip(eqn.invars, specs):
    vshape = v.aval.shape
    if vshape:
      for d in range(len(shape)):
        if vshape[d] == shape[d]:
          _claim(spec, used, d, s[d])
  args = []
  for v, x, s in zip(eqn.invars, vals, specs):
    vshape = v.aval.shape
    want = tuple(spec[d] if vshape[d] == shape[d] else () for d in range(len(vshape))) \
        if vshape else ()
    args.append(p.reshard(x, s, want) if vshape else x)
  return _bind(eqn, args), [tuple(spec)]


def _broadcast_in_dim(p: Partitioner, eqn, vals, specs):
  (x,), (s,) = vals, specs
  shape, bdims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
  xshape = eqn.invars[0].aval.shape
  out = [()] * len(shape)
  for i, d in enumerate(bdims):
    if xshape[i] == shape[d]:
      out[d] = s[i]
  keep = tuple(s[i] if xshape[i] == shape[bdims[i]] else () for i in range(len(xshape)))
  x = p.reshard(x, s, keep)
  outs = _bind(eqn, [x], shape=p.local_shape(shape, out))
  return outs, [tuple(out)]


def _transpose(p: Partitioner, eqn, vals, specs):
  (s,) = specs
  return _bind(eqn, vals), [tuple(s[k] for k in eqn.params["permutation"])]


def _reshape(p: Partitioner, eqn, vals, specs):
  """A split dim survives when it is in the leading (or trailing) run of dims the reshape
  leaves as they are; other split dims are gathered first."""
  (x,), (s,) = vals, specs
  old, new = eqn.invars[0].aval.shape, tuple(eqn.params["new_sizes"])
  if eqn.params.get("dimensions") is not None:
    return _replicated(p, eqn, vals, specs)
  lead = 0
  while lead < min(len(old), len(new)) and old[lead] == new[lead]:
    lead += 1
  trail = 0
  while trail < min(len(old), len(new)) - lead and old[-1 - trail] == new[-1 - trail]:
    trail += 1
  out = [()] * len(new)
  keep = [()] * len(old)
  for d in range(len(old)):
    if d < lead:
      out[d] = keep[d] = s[d]
    elif d >= len(old) - trail:
      out[d - len(old) + len(new)] = keep[d] = s[d]
  x = p.reshard(x, s, tuple(keep))
  return _bind(eqn, [x], new_sizes=p.local_shape(new, out)), [tuple(out)]


def _dot_general(p: Partitioner, eqn, vals, specs):
  """Batch and contracting dim pairs take one split (the lhs's, else the rhs's); free dims
  keep theirs unless an axis is taken; a split contraction is completed by a psum."""
  (x, y), (sx, sy) = vals, specs
  (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
  used: set = set()
  wx, wy = [()] * len(sx), [()] * len(sy)
  for i, j in [*zip(lb, rb), *zip(lc, rc)]:
    for axes in (sx[i], sy[j]):
      if axes and not wx[i] and not used & set(axes):
        wx[i] = wy[j] = axes
        used.update(axes)
  xfree = [d for d in range(len(sx)) if d not in lc and d not in lb]
  yfree = [d for d in range(len(sy)) if d not in rc and d not in rb]
  for d in xfree:
    _claim(wx, used, d, sx[d])
  for d in yfree:
    _claim(wy, used, d, sy[d])
  out = _bind(eqn, [p.reshard(x, sx, tuple(wx)), p.reshard(y, sy, tuple(wy))])[0]
  summed = tuple(a for i in lc for a in wx[i])
  if summed:
    out = parallel.psum(out, summed)
  spec = [wx[i] for i in lb] + [wx[d] for d in xfree] + [wy[d] for d in yfree]
  return [out], [tuple(spec)]


def _reduce(p: Partitioner, eqn, vals, specs):
  """Local reduce of the blocks, then the matching all-reduce over the reduced dims'
  axes."""
  (x,), (s,) = vals, specs
  axes = eqn.params["axes"]
  out = _bind(eqn, [x])[0]
  split = tuple(a for d in axes for a in s[d])
  if split:
    out = _ALL_REDUCE[eqn.primitive.name](out, split)
  return [out], [tuple(s[d] for d in range(len(s)) if d not in axes)]


def _sharding_constraint(p: Partitioner, eqn, vals, specs):
  (x,), (s,) = vals, specs
  want = spec_of(eqn.params["sharding"], len(s), p.sizes)
  return [p.reshard(x, s, want)], [want]


def _call(param: str) -> Callable:
  """A call-like primitive: its body partitioned in place."""
  def rule(p: Partitioner, eqn, vals, specs):
    body = eqn.params[param]
    return p.run(body, body.consts, vals, specs)
  return rule


_RULES: dict[str, Callable] = {
    "broadcast_in_dim": _broadcast_in_dim, "transpose": _transpose, "reshape": _reshape,
    "dot_general": _dot_general, "reduce_sum": _reduce, "reduce_max": _reduce,
    "reduce_min": _reduce, "sharding_constraint": _sharding_constraint,
    "jit": _call("jaxpr"), "custom_jvp_call": _call("call_jaxpr"),
    "custom_vjp_call": _call("call_jaxpr"),
}


def spec_of(sharding, ndim: int, sizes: dict | None = None) -> Spec:
  """The Spec of a NamedSharding (or PartitionSpec) for a value of rank `ndim`; axes of
  size 1 are dropped (they split nothing)."""
  from ember._src.core.sharding import PartitionSpec, _entry_axes  # sharding imports passes
  pspec = sharding if isinstance(sharding, PartitionSpec) else sharding.spec
  out = []
  for d in range(ndim):
    axes = _entry_axes(pspec[d]) if d < len(pspec) else ()
    if sizes is not None:
      axes = tuple(a for a in axes if sizes[a] > 1)
    out.append(axes)
  return tuple(out)


def constraint_sharding(jaxpr: core.Jaxpr):
  """The sharding of the first sharding_constraint in `jaxpr` (or a jaxpr nested in its
  params), None without any: a jit whose body constrains values over several devices is
  partitioned over that mesh."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "sharding_constraint":
      return eqn.params["sharding"]
    for v in eqn.params.values():
      for sub in (v if isinstance(v, (tuple, list)) else (v,)):
        if isinstance(sub, core.Jaxpr):
          found = constraint_sharding(sub)
          if found is not None:
            return found
  return None

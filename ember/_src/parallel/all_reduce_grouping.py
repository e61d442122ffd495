"""Grouping a device program's independent all-reduces into one collective each.

A data-parallel step partitioned by driver/sharding_propagation.py ends its backward pass with one
psum per weight gradient, each a collective of its own: a rendezvous of the device threads,
an MPI call across processes, each paying the latency of a message. They do not depend on
each other, so they can go as one message (`parallel.all_reduce_group`: the operands
flattened into one buffer, one all-reduce, split back), as XLA's all-reduce combiner does.

The rewrite reorders the equations of one device's jaxpr by "level": an all-reduce's level
is one more than the highest level its operand depends on, any other equation's the highest
level of its inputs (the program's inputs are level 0). The program becomes: the level-0
equations in their order, with the level-1 all-reduces grouped by (op, axes, groups, dtype)
into buckets of about BUCKET_BYTES in program order, each bucket right after the equation
that makes the last of its operands; then the level-1 equations with the level-2 buckets,
and so on. Every equation still follows what it reads (an equation of level L reads only
values of level <= L, made before it; an all-reduce of level L+1 reads a value of level L),
so values are unchanged; only the number of collectives drops, and a bucket is in flight
while the rest of its phase computes (passes/async_collectives.py). Every device runs the
same rewritten program, so the collectives still meet in the same order everywhere (across
processes too). A program with effects other than collectives (callbacks, prints) is left
as it is: their order is kept.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.primitives import parallel
from ember._src.transforms.partial_eval import dce_jaxpr

_GROUPABLE = {"psum": "sum", "pmax": "max", "pmin": "min"}

# An all-reduce group closes once its operands hold this many bytes: a data-parallel backward
# pass then hands its later layers' gradients to the collective while it computes the earlier
# ones' (passes/async_collectives.py overlaps them), rather than all of them at its end.
BUCKET_BYTES = 1 << 20


def _group_key(eqn) -> tuple | None:
  """(op, axes, groups, dtype) of an all-reduce over device axes only, else None."""
  op = _GROUPABLE.get(eqn.primitive.name)
  axes = eqn.params.get("axes", ())
  if op is None or any(isinstance(a, (int, np.integer)) for a in axes):
    return None
  return op, tuple(axes), eqn.params["axis_index_groups"], eqn.invars[0].aval.dtype


def group_all_reduces(jaxpr: core.Jaxpr, bucket_bytes: int | None = None) -> core.Jaxpr:
  """`jaxpr` with its all-reduces of each level issued together, in buckets of about
  `bucket_bytes` (default BUCKET_BYTES) each issued as soon as its operands are made (see
  the module doc); dead equations dropped first (a dead all-reduce would live on in a
  group)."""
  if any(core.eqn_effects(e) for e in jaxpr.eqns):
    return jaxpr
  bucket_bytes = BUCKET_BYTES if bucket_bytes is None else bucket_bytes
  jaxpr = dce_jaxpr(jaxpr)
  level: dict[int, int] = {}
  made_at: dict[int, int] = {}        # var -> index of its equation within its phase
  phases: dict[int, list] = {}        # level -> its other equations, in program order
  reduces: dict[int, dict] = {}       # level -> group key -> its all-reduces, in order

  def level_of(atoms) -> int:
    return max((level.get(id(a), 0) for a in atoms if isinstance(a, core.Var)), default=0)

  for eqn in jaxpr.eqns:
    key = _group_key(eqn)
    lvl = level_of(eqn.invars) + (key is not None)
    for v in eqn.outvars:
      level[id(v)] = lvl
    if key is None:
      phase = phases.setdefault(lvl, [])
      for v in eqn.outvars:
        made_at[id(v)] = len(phase)
      phase.append(eqn)
    else:
      reduces.setdefault(lvl, {}).setdefault(key, []).append(eqn)
  if all(len(g) == 1 for by_key in reduces.values() for g in by_key.values()):
    return jaxpr   # nothing to group
  eqns = []
  for lvl in range(max([*phases, *reduces]) + 1):
    # the all-reduces of the next level read this phase's values: each bucket goes right
    # after the equation that makes the last of its operands
    phase = phases.get(lvl, [])
    after: dict[int, list] = {}
    for key, group in reduces.get(lvl + 1, {}).items():
      for bucket in _buckets(group, bucket_bytes):
        ready = max((made_at.get(id(e.invars[0]), -1) for e in bucket), default=-1)
        after.setdefault(ready, []).append(
            bucket[0] if len(bucket) == 1 else _grouped(key, bucket))
    eqns += after.get(-1, [])
    for k, eqn in enumerate(phase):
      eqns.append(eqn)
      eqns += after.get(k, [])
  return jaxpr.replace(eqns=eqns)


def _buckets(group: list, bucket_bytes: int) -> list[list]:
  """`group` (all-reduces in program order) cut into runs of at least `bucket_bytes` (the
  last one may hold less); an operand that big goes alone (flattening it into a shared
  buffer would copy more than the message it saves costs)."""
  out, run, size = [], [], 0
  for eqn in group:
    aval = eqn.invars[0].aval
    nbytes = int(np.prod(aval.shape)) * aval.dtype.itemsize
    if nbytes >= bucket_bytes:
      out.append([eqn])
      continue
    run.append(eqn)
    size += nbytes
    if size >= bucket_bytes:
      out.append(run)
      run, size = [], 0
  return out + ([run] if run else [])


def _grouped(key: tuple, group: list) -> core.JaxprEqn:
  op, axes, groups, _ = key
  return core.new_jaxpr_eqn([e.invars[0] for e in group], [e.outvars[0] for e in group],
                            parallel.all_reduce_group_p,
                            dict(op=op, axes=axes, axis_index_groups=groups),
                            source_info=group[0].source_info)

"""Jaxpr-level partial evaluation and dead-code elimination.

`partial_eval_jaxpr` splits a jaxpr, given which inputs are unknown, into a known jaxpr
(computable now: the known outputs plus the residuals the rest needs) and an unknown
jaxpr (residuals + unknown inputs -> unknown outputs). Autodiff uses it to split the jvp
of a call (jit) into its primal part and its linear tangent part; an equation is unknown
as soon as one of its inputs is.

`partial_eval_jaxpr_custom` is the version with a rematerialization policy used by
checkpoint: known equations the policy does not save are recomputed on the unknown side.

`trace_to_jaxpr_dynamic` stages a WrappedFun the way libraries do it through
jax.interpreters.partial_eval (flax's nn.scan).
"""
from __future__ import annotations

import weakref
from typing import NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core.api_util import WrappedFun
from ember._src.core import Jaxpr, Var, eqn_effects


def partial_eval_jaxpr(jaxpr: Jaxpr, unknowns: Sequence[bool],
                       instantiate: Sequence[bool] | None = None):
  """Returns (known, unknown, out_unknowns, residuals) for a const-free `jaxpr`.

  known:   known invars -> known outvars + residuals
  unknown: residuals + unknown invars -> unknown outvars
  Outputs marked in `instantiate` are unknown even when computable now (they reach the
  unknown jaxpr as residuals). `residuals` are the known vars the unknown side reads."""
  if jaxpr.constvars:
    raise ValueError("partial_eval_jaxpr expects a jaxpr without constvars (hoist them)")
  instantiate = instantiate or [False] * len(jaxpr.outvars)
  unk = {id(v) for v, u in zip(jaxpr.invars, unknowns) if u}
  known_eqns, unknown_eqns = [], []
  for eqn in jaxpr.eqns:
    if any(isinstance(v, Var) and id(v) in unk for v in eqn.invars):
      unknown_eqns.append(eqn)
      unk.update(id(v) for v in eqn.outvars)
    else:
      known_eqns.append(eqn)
  out_unknowns = [(isinstance(v, Var) and id(v) in unk) or inst
                  for v, inst in zip(jaxpr.outvars, instantiate)]
  residuals, seen = [], set()
  read_by_unknown = [v for eqn in unknown_eqns for v in eqn.invars]
  read_by_unknown += [v for v, u in zip(jaxpr.outvars, out_unknowns) if u]
  for v in read_by_unknown:
    if isinstance(v, Var) and id(v) not in unk and id(v) not in seen:
      seen.add(id(v))
      residuals.append(v)
  known_outs = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
  known = dce_jaxpr(Jaxpr([], [v for v, u in zip(jaxpr.invars, unknowns) if not u],
                          known_outs + residuals, known_eqns))
  unknown = Jaxpr([], residuals + [v for v, u in zip(jaxpr.invars, unknowns) if u],
                  [v for v, u in zip(jaxpr.outvars, out_unknowns) if u], unknown_eqns)
  return known, dce_jaxpr(unknown), out_unknowns, residuals


def dce_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
  """Drop the equations none of whose outputs is used, unless they have effects (host
  callbacks: a print is its own use)."""
  live = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
  kept = []
  for eqn in reversed(jaxpr.eqns):
    if any(id(v) in live for v in eqn.outvars) or eqn_effects(eqn):
      kept.append(eqn)
      live.update(id(v) for v in eqn.invars if isinstance(v, Var))
  if len(kept) == len(jaxpr.eqns):
    return jaxpr
  return jaxpr.replace(eqns=kept[::-1])


def dce_jaxpr_used(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None):
  """DCE keeping only the `used_outputs`, and dropping the inputs nothing reads:
  (jaxpr, used_inputs)."""
  outvars = jaxpr.outvars if used_outputs is None else \
      [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  j = dce_jaxpr(jaxpr.replace(outvars=outvars))
  read = {id(v) for e in j.eqns for v in e.invars} | {id(v) for v in j.outvars}
  used_inputs = [id(v) in read for v in j.invars]
  return j.replace(invars=[v for v, u in zip(j.invars, used_inputs) if u]), used_inputs


# (aval of an extended dtype, data aval -> value) -> that dtype's value over the value;
# filled by library/random/keys.py (typed keys over their uint32 data)
abstract_extended: list = [None]


def dce_deep(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None):
  """DCE that also prunes inside higher-order equations (JAX's `dce_jaxpr` with its
  `dce_rules`): an equation whose primitive has a `dce` rule (jit, checkpoint, cond, scan,
  while) keeps only the outputs something reads and, in its sub-jaxprs, only the work they
  need, so the values only the dropped outputs read die in turn. Autodiff runs it on linear
  jaxprs (JAX's tangent trace does as it stages: `auto_dce`): a tangent no output needs
  never reaches a transpose, so its cotangent stays a symbolic zero and is never multiplied
  by a residual (an infinity in a branch not taken would make it NaN).

  Returns (the jaxpr with the used outputs and all its invars, used_inputs); the jaxpr is
  `jaxpr` itself when nothing goes."""
  outvars = jaxpr.outvars if used_outputs is None else \
      [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  live = {id(v) for v in outvars if isinstance(v, Var)}
  kept, changed = [], len(outvars) != len(jaxpr.outvars)
  for eqn in reversed(jaxpr.eqns):
    used = [id(v) in live for v in eqn.outvars]
    if not any(used) and not eqn_effects(eqn):
      changed = True
      continue
    used_in, new = [True] * len(eqn.invars), eqn
    if eqn.primitive.dce is not None:
      used_in, new = eqn.primitive.dce(used, eqn)
      if new is None:
        changed = True
        continue
    changed = changed or new is not eqn
    kept.append(new)
    live.update(id(v) for v, u in zip(eqn.invars, used_in) if u and isinstance(v, Var))
  used_inputs = [id(v) in live for v in jaxpr.invars]
  if not changed:
    return jaxpr, used_inputs
  return jaxpr.replace(outvars=outvars, eqns=kept[::-1]), used_inputs


_dce_sub_cache: "weakref.WeakKeyDictionary[Jaxpr, dict]" = weakref.WeakKeyDictionary()


def dce_sub(jaxpr: Jaxpr, used_outputs: Sequence[bool], keep_inputs: Sequence[bool] = ()):
  """For `dce` rules: a sub-jaxpr with only its `used_outputs`, the work they need, and the
  invars they read (or `keep_inputs` marks): (jaxpr, used_inputs). Memoized, so a call
  pruned alike twice keeps one jaxpr (the transpose and compile caches key on it); `jaxpr`
  itself when nothing goes."""
  per = _dce_sub_cache.setdefault(jaxpr, {})
  key = (tuple(used_outputs), tuple(keep_inputs))
  if key not in per:
    j, used = dce_deep(jaxpr, used_outputs)
    used = [u or k for u, k in zip(used, list(keep_inputs) + [False] * len(used))]
    if not all(used):
      j = j.replace(invars=[v for v, u in zip(j.invars, used) if u])
    per[key] = None if j is jaxpr else j, used   # a value holding its key would never go
  j, used = per[key]
  return jaxpr if j is None else j, used


def call_dce(per_input: Sequence[str] = ()):
  """The `dce` rule of a call primitive (jit, checkpoint) holding its sub-jaxpr as
  `jaxpr`; `per_input` names the params holding one entry per input (pruned with them)."""
  def rule(used_outputs, eqn):
    j, used_in = dce_sub(eqn.params["jaxpr"], used_outputs)
    if j is eqn.params["jaxpr"]:
      return used_in, eqn
    params = dict(eqn.params, jaxpr=j)
    for name in per_input:
      if isinstance(params[name], tuple):
        params[name] = tuple(x for x, u in zip(params[name], used_in) if u)
    return used_in, eqn.replace(invars=[v for v, u in zip(eqn.invars, used_in) if u],
                                outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
                                params=params)
  return rule


def trace_to_jaxpr_dynamic(fun: WrappedFun, in_avals: Sequence[core.ShapedArray]):
  """Stage `fun` (flat arguments -> flat outputs) into (jaxpr, out_avals, consts), as
  JAX's: the values it closes over are leading invars of the jaxpr and `consts` holds them
  (`core.eval_jaxpr(jaxpr, consts, *args)` runs it). An argument of an extended dtype (a
  typed key, flax's scan carries them) is a key over traced data: as everywhere in ember,
  the jaxpr's inputs and outputs are the keys' data (`u32[..., 2]`, where JAX's show
  `key<fry>[...]`)."""
  if any(isinstance(a.dtype, dtypes.ExtendedDType) for a in in_avals):
    return _trace_over_extended(fun, in_avals)
  jaxpr, _ = core.trace_to_jaxpr(lambda *args: (fun.call_wrapped(*args), None), in_avals,
                                 fun.debug_info)
  jaxpr, consts = core.hoist_consts(jaxpr)
  return jaxpr, [v.aval for v in jaxpr.outvars], consts


def _trace_over_extended(fun: WrappedFun, in_avals: Sequence[core.ShapedArray]):
  stand_ins = [abstract_extended[0](a, lambda data: data)
               if isinstance(a.dtype, dtypes.ExtendedDType) else a for a in in_avals]
  data_avals, in_tree = tree_util.tree_flatten(stand_ins)

  def flat(*tracers):
    outs = fun.call_wrapped(*tree_util.tree_unflatten(in_tree, tracers))
    return tree_util.tree_flatten(list(outs))[0], None
  jaxpr, _ = core.trace_to_jaxpr(flat, data_avals, fun.debug_info)
  jaxpr, consts = core.hoist_consts(jaxpr)
  return jaxpr, [v.aval for v in jaxpr.outvars], consts


# --- partial evaluation with a rematerialization policy (checkpoint) ---------------------

class RecomputeType:
  """A policy's answer: recompute this value on the backward pass (same as False)."""
  def __repr__(self):
    return "Recompute"


class SaveableType:
  """A policy's answer: save this value as a residual (same as True)."""
  def __repr__(self):
    return "Saveable"


Recompute, Saveable = RecomputeType(), SaveableType()


class Offloadable(NamedTuple):
  """A policy's answer: save this value in memory space `dst` (ember's CPU backend has
  one memory space, so an offloaded residual is a saved one)."""
  src: str
  dst: str


def _saveable(policy, eqn) -> bool:
  ans = policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)
  if isinstance(ans, (bool, np.bool_)):
    return bool(ans)
  if isinstance(ans, (SaveableType, Offloadable)):
    return True
  if isinstance(ans, RecomputeType):
    return False
  raise TypeError(f"checkpoint policy {getattr(policy, '__name__', policy)!r} returned "
                  f"{ans!r} for primitive {eqn.primitive.name}; a policy must return a bool, "
                  "checkpoint_policies' Saveable / Recompute, or an Offloadable.")


def partial_eval_jaxpr_custom(jaxpr: Jaxpr, unknowns: Sequence[bool], saveable):
  """JAX's `partial_eval_jaxpr_custom` with every input available to the staged side.

  Returns (known, staged, out_unknowns, num_res):
    known:  known invars -> known outvars + residuals
    staged: residuals + all invars -> unknown outvars
  A known equation runs in `known`; if `saveable(prim, *in_avals, **params)` says no, it
  is also copied into `staged` (recomputed there from its own inputs), otherwise its
  outputs the staged side reads become residuals. Inputs are never residuals."""
  if jaxpr.constvars:
    raise ValueError("partial_eval_jaxpr_custom expects a jaxpr without constvars")
  unk = {id(v) for v, u in zip(jaxpr.invars, unknowns) if u}
  avail = {id(v) for v in jaxpr.invars}       # values the staged side has (JAX's `inst`)
  residuals: dict[int, Var] = {}
  known_eqns, staged_eqns = [], []

  def stage(eqn):
    for v in eqn.invars:
      if isinstance(v, Var) and id(v) not in avail:
        residuals.setdefault(id(v), v)
    staged_eqns.append(eqn)
    avail.update(id(v) for v in eqn.outvars)

  for eqn in jaxpr.eqns:
    if any(isinstance(v, Var) and id(v) in unk for v in eqn.invars):
      stage(eqn)
      unk.update(id(v) for v in eqn.outvars)
    else:
      known_eqns.append(eqn)
      if not _saveable(saveable, eqn):
        stage(eqn)
  out_unknowns = [isinstance(v, Var) and id(v) in unk for v in jaxpr.outvars]
  res = list(residuals.values())
  known = Jaxpr([], [v for v, u in zip(jaxpr.invars, unknowns) if not u],
                [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u] + res, known_eqns)
  staged = Jaxpr([], res + list(jaxpr.invars),
                 [v for v, u in zip(jaxpr.outvars, out_unknowns) if u], staged_eqns)
  return known, staged, out_unknowns, len(res)

"""Jaxpr-level partial evaluation and dead-code elimination.

`partial_eval_jaxpr` splits a jaxpr, given which inputs are unknown, into a known jaxpr
(computable now: the known outputs plus the residuals the rest needs) and an unknown
jaxpr (residuals + unknown inputs -> unknown outputs). Autodiff uses it to split the jvp
of a call (jit) into its primal part and its linear tangent part; an equation is unknown
as soon as one of its inputs is.
"""
from __future__ import annotations

from typing import Sequence

from ember._src.core import Jaxpr, Var


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
  """Drop the equations none of whose outputs is used (primitives are pure)."""
  live = {id(v) for v in jaxpr.outvars if isinstance(v, Var)}
  kept = []
  for eqn in reversed(jaxpr.eqns):
    if any(id(v) in live for v in eqn.outvars):
      kept.append(eqn)
      live.update(id(v) for v in eqn.invars if isinstance(v, Var))
  if len(kept) == len(jaxpr.eqns):
    return jaxpr
  return jaxpr.replace(eqns=kept[::-1])

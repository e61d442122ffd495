"""Differentiating call-like primitives (jit, checkpoint, and the sub-jaxprs of cond and
scan) as wholes: the jvp of a jaxpr as a jaxpr (`jvp_jaxpr`), split by partial evaluation
into a known and an unknown call (`call_jvp`), and the transpose of a jaxpr as a jaxpr
(`transpose_jaxpr`, `call_transpose`), so a nested jit stays one `jit` equation in the
differentiated jaxpr (ad.py's docstring tells the whole design). They build on ad.py's
jvp trace and backward pass.
"""
from __future__ import annotations

import weakref
from typing import Callable, Sequence

from ember._src import core
from ember._src.transforms.ad import (UndefinedPrimal, Zero, backward_pass, instantiate_zeros,
                                      is_linearizing, is_undefined_primal, jvp_flat,
                                      tangent_aval, tracing_jvp_jaxpr)
from ember._src.transforms.partial_eval import partial_eval_jaxpr


_jvp_cache: "weakref.WeakKeyDictionary[core.Jaxpr, dict]" = weakref.WeakKeyDictionary()
_transpose_cache: "weakref.WeakKeyDictionary[core.Jaxpr, dict]" = weakref.WeakKeyDictionary()


def trace_closed(fun, in_avals):
  """Stage `fun(*tracers) -> outs` into a const-free jaxpr: (jaxpr, hoisted consts)."""
  closed, _ = core.trace_to_jaxpr(lambda *xs: (fun(*xs), None), in_avals)
  return core.hoist_consts(closed)


def jvp_jaxpr(jaxpr: core.Jaxpr, nonzeros: Sequence[bool]):
  """The jvp of a const-free `jaxpr` as a jaxpr: invars (hoisted consts, primals, nonzero
  tangents), outvars (primal outs, nonzero tangent outs). Returns (jaxpr, consts,
  out_nonzeros)."""
  n = len(jaxpr.invars)
  in_avals = list(jaxpr.in_avals) + [tangent_aval(a) for a, nz in zip(jaxpr.in_avals, nonzeros)
                                     if nz]
  out_nz = []

  def fun(*args):
    primals, nz_tangents = args[:n], iter(args[n:])
    tangents = [next(nz_tangents) if nz else Zero(tangent_aval(a))
                for a, nz in zip(jaxpr.in_avals, nonzeros)]
    p_out, t_out, _ = jvp_flat(lambda *xs: (core.eval_jaxpr(jaxpr, jaxpr.consts, *xs), None),
                               primals, tangents)
    out_nz[:] = [type(t) is not Zero for t in t_out]
    return p_out + [t for t in t_out if type(t) is not Zero]
  with tracing_jvp_jaxpr():
    jaxpr_out, consts = trace_closed(fun, in_avals)
  return jaxpr_out, consts, out_nz


class _CallJvp:
  """The jvp of one call jaxpr, split into a known call (consts + primals -> known outs +
  residuals) and an unknown call (residuals + nonzero tangents -> unknown outs)."""

  def __init__(self, jaxpr, nonzeros):
    j, consts, self.out_nz = jvp_jaxpr(jaxpr, nonzeros)
    self.jvp, self.consts = j, consts
    unknowns = [False] * (len(consts) + len(jaxpr.invars)) + [True] * sum(nonzeros)
    self.known, self.unknown, self.out_unknown, res = partial_eval_jaxpr(j, unknowns)
    self.num_res = len(res)


def _call_jvp_split(jaxpr, nonzeros) -> _CallJvp:
  per = _jvp_cache.setdefault(jaxpr, {})
  key = tuple(nonzeros)
  if key not in per:
    per[key] = _CallJvp(jaxpr, nonzeros)
  return per[key]


def call_jvp(prim, params_for: Callable):
  """The jvp rule of a call primitive holding `jaxpr` in its params: a known call on the
  primals (primal outputs and residuals) and an unknown call (the tangents), each bound
  as `prim` with `params_for(params, new_jaxpr)`. Under linearize the known call runs
  (or is staged) with the primals and the unknown one lands in the linear jaxpr."""
  def rule(primals, tangents, *, jaxpr, **params):
    nonzeros = [type(t) is not Zero for t in tangents]
    s = _call_jvp_split(jaxpr, nonzeros)
    n_out = len(jaxpr.outvars)
    nz_tangents = [t for t in tangents if type(t) is not Zero]
    if not is_linearizing(primals, nz_tangents):
      # forward mode, as JAX: one call of the jvp jaxpr (primals and tangents)
      outs = prim.bind(*s.consts, *primals, *nz_tangents, **params_for(params, s.jvp))
      nz_t_out = iter(outs[n_out:])
      return outs[:n_out], [next(nz_t_out) if nz else Zero(tangent_aval(a))
                            for a, nz in zip(jaxpr.out_avals, s.out_nz)]
    known_outs = prim.bind(*s.consts, *primals, **params_for(params, s.known))
    res = known_outs[len(known_outs) - s.num_res:]
    known_outs = iter(known_outs[:len(known_outs) - s.num_res])
    unknown_outs = iter(prim.bind(*res, *nz_tangents, **params_for(params, s.unknown))
                        if s.unknown.outvars else [])
    outs = [next(unknown_outs) if u else next(known_outs) for u in s.out_unknown]
    p_out, nz_t_out = outs[:n_out], iter(outs[n_out:])
    t_out = [next(nz_t_out) if nz else Zero(tangent_aval(a))
             for a, nz in zip(jaxpr.out_avals, s.out_nz)]
    return p_out, t_out
  return rule


def transpose_jaxpr(jaxpr: core.Jaxpr, undefined: Sequence[bool], ct_nonzero: Sequence[bool],
                    lin_avals: Sequence | None = None):
  """The transpose of `jaxpr` (linear in the `undefined` inputs) as a jaxpr: invars
  (hoisted consts, defined inputs, nonzero cotangents), outvars (cotangents of the
  undefined inputs, zeros instantiated). `lin_avals` (one per input, None: its own) gives
  the cotangent type an undefined input's transpose aims for (a loop carry's: the incoming
  cotangent's, whose weak type may differ from the body's input). Returns (jaxpr, consts)."""
  per = _transpose_cache.setdefault(jaxpr, {})
  lin_avals = lin_avals or [None] * len(jaxpr.invars)
  key = (tuple(undefined), tuple(ct_nonzero), tuple(lin_avals))
  if key in per:
    return per[key]
  defined_avals = [a for a, u in zip(jaxpr.in_avals, undefined) if not u]
  ct_avals = [tangent_aval(a) for a, nz in zip(jaxpr.out_avals, ct_nonzero) if nz]
  nd = len(defined_avals)

  def fun(*vals):
    defined, cts = iter(vals[:nd]), iter(vals[nd:])
    args = [UndefinedPrimal(la or a) if u else next(defined)
            for a, la, u in zip(jaxpr.in_avals, lin_avals, undefined)]
    cts_out = [next(cts) if nz else Zero(tangent_aval(a))
               for a, nz in zip(jaxpr.out_avals, ct_nonzero)]
    cts_in = backward_pass(jaxpr, jaxpr.consts, args, cts_out)
    return [instantiate_zeros(c) for c, u in zip(cts_in, undefined) if u]
  per[key] = trace_closed(fun, defined_avals + ct_avals)
  return per[key]


def call_transpose(prim, params_for: Callable):
  """The transpose rule of a call primitive: one call of the transposed sub-jaxpr."""
  def rule(cts, *args, jaxpr, **params):
    undefined = [is_undefined_primal(a) for a in args]
    ct_nonzero = [type(c) is not Zero for c in cts]
    tj, consts = transpose_jaxpr(jaxpr, undefined, ct_nonzero)
    defined = [a for a, u in zip(args, undefined) if not u]
    outs = iter(prim.bind(*consts, *defined, *[c for c in cts if type(c) is not Zero],
                          **params_for(params, tj)))
    return [next(outs) if u else None for u in undefined]
  return rule

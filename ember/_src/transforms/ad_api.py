"""jax.interpreters.ad's entry points for code outside ember: the jvp of a function on
flat sequences (`jvp`) and of a jaxpr (`jvp_jaxpr`, as JAX's: primals and nonzero tangents
in, primal and nonzero tangent outs out), JAX's `defbilinear(prim, lhs_rule, rhs_rule)`,
and `add_jaxvals` (the tangent accumulation `add_any`)."""
from __future__ import annotations

from typing import Callable, Sequence

from ember._src import core
from ember._src.transforms import ad_calls
from ember._src.transforms.ad import (
    Zero, add_any_p, defjvp, instantiate_zeros, is_undefined_primal, jvp_flat, tangent_aval)

add_jaxvals_p = add_any_p


def add_jaxvals(x, y):
  """x + y as tangents accumulate (`add_any`: both of one type)."""
  return add_any_p.bind(x, y)


def defbilinear(prim, lhs_rule: Callable, rhs_rule: Callable) -> None:
  """JAX's: `prim(x, y)` is linear in each operand. Its jvp binds it with each tangent in
  its operand's place; its transpose is `lhs_rule(ct, x, y, **params)` (the cotangent of
  x, when x is the linear input) or `rhs_rule(ct, x, y, **params)` (of y)."""
  defjvp(prim, lambda g, x, y, **params: prim.bind(g, y, **params),
         lambda g, x, y, **params: prim.bind(x, g, **params))

  def transpose(ct, x, y, **params):
    lhs = is_undefined_primal(x)
    if lhs == is_undefined_primal(y):
      raise ValueError(f"transpose of the bilinear {prim.name}: exactly one operand must "
                       "be the linear input")
    if type(ct) is Zero:
      return (Zero(x.aval), None) if lhs else (None, Zero(y.aval))
    return (lhs_rule(ct, x, y, **params), None) if lhs else (None, rhs_rule(ct, x, y, **params))
  prim.transpose = transpose


def jvp(fun: Callable, primals: Sequence, tangents: Sequence, has_aux: bool = False,
        instantiate: bool | Sequence[bool] = True, transform_stack: bool = True):
  """`fun(*primals)` and its tangent along `tangents` (Zero: a symbolic zero), on flat
  sequences: (primal outs, tangent outs[, aux]). A zero tangent out stays `Zero` unless
  `instantiate` (one flag, or one per output) asks for zeros."""
  del transform_stack   # ember's name stack does not record transformations
  primals = list(primals)
  tangents = [Zero(tangent_aval(core.get_aval(p))) if t is None else t
              for p, t in zip(primals, tangents)]

  def flat(*xs):
    out = fun(*xs)
    out, aux = out if has_aux else (out, None)
    return list(out), aux
  p_out, t_out, aux = jvp_flat(flat, primals, tangents)
  flags = [instantiate] * len(t_out) if isinstance(instantiate, bool) else list(instantiate)
  t_out = [instantiate_zeros(t) if inst else t for t, inst in zip(t_out, flags)]
  return (p_out, t_out, aux) if has_aux else (p_out, t_out)


def jvp_jaxpr(jaxpr: core.Jaxpr, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool]) -> tuple[core.Jaxpr, list[bool]]:
  """The jvp of a closed jaxpr as a closed jaxpr taking (primals, the nonzero tangents) and
  returning (primal outs, the tangent outs that are nonzero or instantiated); with which
  tangent outs it returns."""
  n_out = len(jaxpr.outvars)
  inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
  hoisted, jconsts = core.hoist_consts(jaxpr)   # its consts: leading primals, no tangents
  inner, consts, out_nz = ad_calls.jvp_jaxpr(hoisted, [False] * len(jconsts) + list(nonzeros))
  avals = list(inner.in_avals)[len(consts) + len(jconsts):]

  def fun(*args):
    outs = core.eval_jaxpr(inner, [], *consts, *jconsts, *args)
    primals_out, nz_t = outs[:n_out], iter(outs[n_out:])
    t_out = []
    for a, nz, want in zip(jaxpr.out_avals, out_nz, inst):
      if nz:
        t_out.append(next(nz_t))
      elif want:
        t_out.append(instantiate_zeros(Zero(tangent_aval(a))))
    return primals_out + t_out
  out, _ = core.trace_to_jaxpr(lambda *xs: (fun(*xs), None), avals, jaxpr.debug_info)
  return out, [nz or want for nz, want in zip(out_nz, inst)]

"""Call primitives defined outside ember (jax.extend.core.create_call_primitive): a
primitive bound as `p.bind(*args, call_jaxpr=closed_jaxpr, **params)` that computes
`call_jaxpr` on `args`, with the rules of a call: eager evaluation of the jaxpr, its
output avals, jvp (the jvp of the jaxpr, bound as `p` again), transpose (a `p` of the
transposed jaxpr), vmap (a `p` of the batched jaxpr), and lowering as a `call` of a
computation named after the primitive."""
from __future__ import annotations

from typing import Callable

from ember._src import core
from ember._src.transforms import ad_calls, batching


def _call_params(params: dict, jaxpr: core.Jaxpr) -> dict:
  return dict(params, call_jaxpr=jaxpr)


def eval_jaxpr_transpose(prim, ct, *args, call_jaxpr, **params):
  """The transpose rule of a call primitive: one `prim` of the transposed `call_jaxpr`;
  returns one cotangent per argument (None for the defined, non-linear ones), as ember's
  transpose rules do."""
  rule = ad_calls.call_transpose(prim, _call_params)
  return rule(ct, *args, jaxpr=call_jaxpr, **params)


def _batch(prim):
  def rule(axis_data, vals, dims, *, call_jaxpr, **params):
    new_jaxpr, consts, out_dims = batching.batch_jaxpr_hoisted(call_jaxpr, axis_data, dims)
    return prim.bind(*consts, *vals, call_jaxpr=new_jaxpr, **params), out_dims
  return rule


def register_call_primitive_rules(prim: core.Primitive, name: str | None = None,
                                  transpose_rule: Callable | None = None,
                                  inline_jax_late: bool = True) -> None:
  """Give `prim` the rules of a call primitive (its `call_jaxpr` param is the program).
  `transpose_rule(ct, *args, call_jaxpr, **params)`, if given, replaces the transpose."""
  del inline_jax_late   # ember's inline pass inlines every call
  prim.multiple_results = True
  prim.abstract_eval = lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals)
  prim.eval_rule = lambda *args, call_jaxpr, **_: core.eval_jaxpr(
      call_jaxpr, call_jaxpr.consts, *args)
  jvp = ad_calls.call_jvp(prim, _call_params)
  prim.jvp = lambda primals, tangents, *, call_jaxpr, **params: jvp(
      primals, tangents, jaxpr=call_jaxpr, **params)
  prim.transpose = transpose_rule or (
      lambda ct, *args, **params: eval_jaxpr_transpose(prim, ct, *args, **params))
  prim.batch = _batch(prim)
  comp_name = name or prim.name
  prim.lower = lambda ctx, *args, call_jaxpr, **_: ctx.call(call_jaxpr, comp_name, args)


def create_call_primitive(name: str, inline_jax_late: bool = True) -> core.Primitive:
  """A new call primitive named `name` (see register_call_primitive_rules)."""
  prim = core.Primitive(name)
  register_call_primitive_rules(prim, name=name, inline_jax_late=inline_jax_late)
  return prim

"""Type-checking a jaxpr (jax.extend.core.check_jaxpr): each variable bound once before it
is used, literals of their annotated type, and each equation's result types, as its
primitive's abstract evaluation gives them, equal to its binders' annotations; sub-jaxprs
in the equations' params are checked too. A failure is a JaxprTypeError naming the
equation and printing the jaxpr, as JAX's."""
from __future__ import annotations

import numpy as np

from ember._src.base.errors import JaxprTypeError
from ember._src.core.jaxpr import (
    DropVar, Jaxpr, Literal, _PpContext, jaxprs_in_params, pp_eqn, pp_jaxpr)


def _same_type(a, b) -> bool:
  """Equal shape and dtype (weak types match strong ones, as JAX's typecompat)."""
  return tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype


def _short(aval) -> str:
  return aval.str_short(short_dtypes=True)


def _source(eqn) -> str:
  si = eqn.source_info
  if si is None or si.file is None:
    return "unknown"
  return f"{si.file}:{si.line} ({si.function})"


def _check_atom(env: dict, ctx: _PpContext, x) -> object:
  if isinstance(x, Literal):
    if np.shape(x.val) != tuple(x.aval.shape):
      raise JaxprTypeError(f"Literal value {x.val} does not match its type annotation "
                           f"{_short(x.aval)}")
    return x.aval
  if id(x) not in env:
    raise JaxprTypeError(f"Variable '{ctx.name(x)}' not defined")
  return env[id(x)]


def _bind(env: dict, ctx: _PpContext, v, aval) -> None:
  if isinstance(v, DropVar):
    return
  if id(v) in env:
    raise JaxprTypeError(f"Variable '{ctx.name(v)}' already bound")
  if not _same_type(aval, v.aval):
    raise JaxprTypeError(f"Value for variable '{ctx.name(v)}' inconsistently typed as "
                         f"{_short(aval)} for let-binder of type {_short(v.aval)}")
  env[id(v)] = v.aval


def _check_eqn(env: dict, ctx: _PpContext, eqn) -> None:
  in_avals = [_check_atom(env, ctx, x) for x in eqn.invars]
  for sub in jaxprs_in_params(eqn.params):
    check_jaxpr(sub)
  try:
    out_avals = eqn.primitive.out_avals(in_avals, eqn.params)
  except JaxprTypeError:
    raise
  except (TypeError, ValueError) as e:
    raise JaxprTypeError(f"{eqn.primitive.name} does not accept its operands' types "
                         f"({', '.join(map(_short, in_avals))}): {e}") from None
  if len(out_avals) != len(eqn.outvars):
    raise JaxprTypeError(f"{eqn.primitive.name} gives {len(out_avals)} results for "
                         f"{len(eqn.outvars)} binders")
  for v, aval in zip(eqn.outvars, out_avals):
    _bind(env, ctx, v, aval)


def check_jaxpr(jaxpr: Jaxpr) -> None:
  """Raise JaxprTypeError if `jaxpr` is ill-typed; return None if it checks."""
  ctx = _PpContext()
  text = pp_jaxpr(jaxpr, ctx).format()   # names the vars as the jaxpr prints them
  env: dict = {}
  try:
    for v in [*jaxpr.constvars, *jaxpr.invars]:
      _bind(env, ctx, v, v.aval)
    for i, eqn in enumerate(jaxpr.eqns):
      try:
        _check_eqn(env, ctx, eqn)
      except JaxprTypeError as e:
        eqn_text = pp_eqn(eqn, ctx).format()
        raise JaxprTypeError("\n\n".join([e.args[0], "in equation:", eqn_text,
                                          f"from source: {_source(eqn)}"]), i) from None
    for v in jaxpr.outvars:
      _check_atom(env, ctx, v)
  except JaxprTypeError as e:
    raise JaxprTypeError(f"{e.args[0]}\n\nwhile checking jaxpr:\n\n{text}\n") from None

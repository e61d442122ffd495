"""checkpoint / remat: recompute a function's intermediate values in the backward pass
instead of storing them.

`checkpoint(f)` stages one `remat2` equation holding f's jaxpr (JAX 0.12 prints it so:
`remat2[differentiated=False jaxpr={...} policy=None prevent_cse=True]`). Its jvp computes
the primal outputs inline and the tangents in a second `remat2` equation
(differentiated=True) whose jaxpr holds the jvp of f, primal computations included.
Under linearize that equation lands in the linear jaxpr with only f's *inputs* as
residuals; its transpose (`ad.call_transpose`) re-evaluates the non-linear equations of the
jaxpr before transposing the linear ones, so f's intermediates are recomputed on the
backward pass. `policy` is accepted and recorded; ember saves nothing (every policy
recomputes, which gives the same values).
"""
from __future__ import annotations

import functools
import weakref
from typing import Callable

from ember._src import core, tree_util
from ember._src.primitives import declare
from ember._src.transforms import ad
from ember._src.transforms.partial_eval import dce_jaxpr

__all__ = ["checkpoint", "remat", "remat_p", "checkpoint_policies", "checkpoint_name", "name_p"]

remat_p = declare("remat2", lambda *avals, jaxpr, **_: jaxpr.out_avals, multiple_results=True)
remat_p.eval_rule = lambda *args, jaxpr, **_: core.eval_jaxpr(jaxpr, (), *args)
remat_p.lower = lambda ctx, *args, jaxpr, **_: ctx.call(jaxpr, "checkpoint", args)

_tangent_jaxprs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _tangent_jaxpr(jaxpr, nonzeros):
  """The jvp of `jaxpr` with only its nonzero tangent outputs: (jaxpr, consts, out_nz)."""
  per = _tangent_jaxprs.setdefault(jaxpr, {})
  key = tuple(nonzeros)
  if key not in per:
    j, consts, out_nz = ad.jvp_jaxpr(jaxpr, nonzeros)
    j = dce_jaxpr(j.replace(outvars=j.outvars[len(jaxpr.outvars):]))
    per[key] = (j, consts, out_nz)
  return per[key]


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  p_out = core.eval_jaxpr(jaxpr, (), *primals)
  tj, consts, out_nz = _tangent_jaxpr(jaxpr, nonzeros)
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  t_nz = iter(remat_p.bind(*consts, *primals, *nz_tangents, jaxpr=tj, prevent_cse=prevent_cse,
                           differentiated=True, policy=policy) if tj.outvars else [])
  t_out = [next(t_nz) if nz else ad.Zero(ad.tangent_aval(a))
           for a, nz in zip(jaxpr.out_avals, out_nz)]
  return p_out, t_out


def _remat_params(params, jaxpr):
  return dict(params, jaxpr=jaxpr, differentiated=True)


def _remat_batch(axis_data, vals, dims, *, jaxpr, **params):
  from ember._src.transforms import batching
  bj, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  bj, consts = core.hoist_consts(bj)
  return remat_p.bind(*consts, *vals, jaxpr=bj, **params), out_dims


remat_p.jvp = _remat_jvp
remat_p.transpose = ad.call_transpose(remat_p, _remat_params)
remat_p.batch = _remat_batch


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy=None,
               static_argnums: int | tuple = ()) -> Callable:
  """`fun`, with its intermediate values recomputed (not stored) for differentiation."""
  if not callable(fun):
    raise TypeError(f"checkpoint requires a callable, got {type(fun).__name__}")
  static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

  @functools.wraps(fun, updated=())  # not __dict__ (a jit or custom_vjp object keeps state there)
  def fun_remat(*args, **kwargs):
    n = len(args)
    snums = {i % n for i in static if -n <= i < n}
    dyn = tuple(a for i, a in enumerate(args) if i not in snums)
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    if core.find_top_trace(leaves).main.level == 0:
      return fun(*args, **kwargs)  # nothing is differentiated: just run it
    store = {}

    def flat(*xs):
      d, kw = tree_util.tree_unflatten(in_tree, xs)
      it = iter(d)
      full = [args[i] if i in snums else next(it) for i in range(n)]
      out_leaves, store["out_tree"] = tree_util.tree_flatten(fun(*full, **kw))
      return out_leaves, None
    closed, _ = core.trace_to_jaxpr(flat, [core.get_aval(x) for x in leaves])
    jaxpr, consts = core.hoist_consts(closed)
    outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=bool(prevent_cse),
                        differentiated=False, policy=policy)
    return tree_util.tree_unflatten(store["out_tree"], outs)
  return fun_remat


remat = checkpoint


def _policy(name):
  def policy(*_, **__):  # whether a value may be saved (ember recomputes regardless)
    return name == "everything_saveable"
  policy.__name__ = policy.__qualname__ = name
  return policy


class checkpoint_policies:
  """`jax.checkpoint_policies`: accepted (and recorded in the equation); ember recomputes
  everything whatever the policy."""
  everything_saveable = staticmethod(_policy("everything_saveable"))
  nothing_saveable = staticmethod(_policy("nothing_saveable"))
  dots_saveable = staticmethod(_policy("dots_saveable"))
  checkpoint_dots = dots_saveable
  dots_with_no_batch_dims_saveable = staticmethod(_policy("dots_with_no_batch_dims_saveable"))

  @staticmethod
  def save_only_these_names(*names):
    return _policy("save_only_these_names")

  @staticmethod
  def save_anything_except_these_names(*names):
    return _policy("save_anything_except_these_names")


# `checkpoint_name(x, name)`: the identity, tagged so that (JAX's) save policies can name
# residuals; printed `name[name=foo] a`. Its tangent passes through untagged, as in JAX.
name_p = declare("name", lambda x, *, name: x, lambda x, *, name: x)
name_p.lower = lambda ctx, x, *, name: x
name_p.jvp = lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0])
name_p.batch = lambda axis_data, vals, dims, *, name: (name_p.bind(vals[0], name=name), dims[0])


def checkpoint_name(x, name):
  """`x` (a pytree), tagged with `name` for checkpoint policies."""
  return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)

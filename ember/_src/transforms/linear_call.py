"""linear_call (jax.custom_derivatives.linear_call): a call of a function linear in some of
its arguments, with its transpose given by the user.

`linear_call(fun, fun_transpose, residual_args, linear_args)` is `fun(residual_args,
linear_args)`; its jvp is the same call on the linear arguments' tangents (it is linear in
them; residuals are not differentiated), and its transpose (reverse mode) is the call of
`fun_transpose(residual_args, cotangents)`, whose transpose is `fun` again. The call is the
primitive `linear_call`, holding both functions' jaxprs (the transpose's traced when first
needed).
"""
from __future__ import annotations

from typing import Callable

from ember._src import core
from ember._src.base import tree_util
from ember._src.core import declare
from ember._src.transforms import ad, ad_calls


def _traced(fun: Callable, trees: tuple, avals: list, what: str):
  """`fun(*[trees unflattened from the flat args])` staged: (jaxpr, consts, out tree)."""
  out_trees = []

  def flat(*xs):
    args, i = [], 0
    for tree in trees:
      args.append(tree_util.tree_unflatten(tree, xs[i:i + tree.num_leaves]))
      i += tree.num_leaves
    leaves, out_tree = tree_util.tree_flatten(fun(*args))
    out_trees.append(out_tree)
    return leaves
  if not callable(fun):
    raise TypeError(f"linear_call {what} must be callable, got {fun!r}")
  jaxpr, consts = ad_calls.trace_closed(flat, avals)
  return jaxpr, consts, out_trees[0]


class _TransposeThunk:
  """The transpose's (jaxpr, consts), traced on first use (JAX's memoized thunk)."""

  def __init__(self, fun_transpose, res_tree, res_avals, out_tree, out_avals, lin_tree):
    self._args = (fun_transpose, res_tree, res_avals, out_tree, out_avals, lin_tree)
    self._traced = None

  def __call__(self):
    if self._traced is None:
      fun_t, res_tree, res_avals, out_tree, out_avals, lin_tree = self._args
      jaxpr, consts, t_tree = _traced(fun_t, (res_tree, out_tree),
                                      list(res_avals) + list(out_avals), "fun_transpose")
      if t_tree != lin_tree:
        raise TypeError(f"transpose output pytree structure must match that of linear "
                        f"inputs, got output structure {t_tree} and input structure "
                        f"{lin_tree}.")
      self._traced = (jaxpr, consts)
    return self._traced


class _Known:
  """A thunk whose answer is known (the transpose of a transpose: the original call)."""

  def __init__(self, jaxpr, consts):
    self._traced = (jaxpr, consts)

  def __call__(self):
    return self._traced


def linear_call(fun: Callable, fun_transpose: Callable, residual_args, linear_args):
  """`fun(residual_args, linear_args)`, where `fun` is linear in `linear_args` and
  `fun_transpose(residual_args, cotangents)` is its transpose: reverse-mode derivatives go
  through `fun_transpose` instead of transposing `fun`'s operations."""
  res, res_tree = tree_util.tree_flatten(residual_args)
  lin, lin_tree = tree_util.tree_flatten(linear_args)
  res_avals = [core.get_aval(x) for x in res]
  lin_avals = [core.get_aval(x) for x in lin]
  callee, consts, out_tree = _traced(fun, (res_tree, lin_tree), res_avals + lin_avals, "fun")
  thunk = _TransposeThunk(fun_transpose, res_tree, res_avals, out_tree, callee.out_avals,
                          lin_tree)
  outs = linear_call_p.bind(*consts, *res, *lin, callee=callee, transpose_thunk=thunk,
                            num_callee_consts=len(consts), num_res=len(res))
  return tree_util.tree_unflatten(out_tree, outs)


def _eval(*args, callee, **_):
  return core.eval_jaxpr(callee, (), *args)


def _jvp(primals, tangents, *, callee, transpose_thunk, num_callee_consts, num_res):
  n = num_callee_consts + num_res
  if any(type(t) is not ad.Zero for t in tangents[:n]):
    raise ValueError("linear_call is not differentiable with respect to its residual_args "
                     "(or the values fun closes over): differentiate only its linear_args")
  params = dict(callee=callee, transpose_thunk=transpose_thunk,
                num_callee_consts=num_callee_consts, num_res=num_res)
  primals_out = linear_call_p.bind(*primals, **params)
  tangents_out = linear_call_p.bind(*primals[:n],
                                    *[ad.instantiate_zeros(t) for t in tangents[n:]], **params)
  return primals_out, tangents_out


def _transpose(cts, *args, callee, transpose_thunk, num_callee_consts, num_res):
  jaxpr, t_consts = transpose_thunk()
  f_consts = args[:num_callee_consts]
  res = args[num_callee_consts:num_callee_consts + num_res]
  if any(ad.is_undefined_primal(x) for x in (*f_consts, *res)):
    raise ValueError("linear_call transposed with respect to its residual_args: only its "
                     "linear_args are linear")
  cts = [ad.instantiate_zeros(c) for c in cts]
  cts_out = linear_call_p.bind(*t_consts, *res, *cts, callee=jaxpr,
                               transpose_thunk=_Known(callee, list(f_consts)),
                               num_callee_consts=len(t_consts), num_res=len(res))
  return [None] * (num_callee_consts + num_res) + list(cts_out)


def _lower(ctx, *args, callee, **_):
  return ctx.call(callee, "linear_call", args)


linear_call_p = declare("linear_call", lambda *avals, callee, **_: callee.out_avals,
                        multiple_results=True)
linear_call_p.eval_rule = _eval
linear_call_p.jvp = _jvp
linear_call_p.transpose = _transpose
linear_call_p.lower = _lower

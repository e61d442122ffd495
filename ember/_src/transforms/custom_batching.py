"""custom_vmap (jax.custom_batching.custom_vmap): a function whose vmap is a rule of its own.

`f = custom_vmap(fun)`, `@f.def_vmap def rule(axis_size, in_batched, *args)`: outside vmap
`f` is `fun`; under vmap the rule gets the arguments with their batch dimension first and
which of them are batched (a pytree of bools like the arguments), and returns the outputs and
which of them are batched. Under a trace, a call is the primitive `custom_vmap_call`, holding
`fun`'s jaxpr (what it computes, lowers and evaluates to) and the rule (what its batching rule
calls). Its jvp is another custom_vmap_call: the jvp of the jaxpr, whose rule is the jvp of
the rule, so vmap of jvp keeps the custom rule, as in JAX. Reverse mode is not supported
(as in JAX: wrap the function in a custom_vjp for that).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from ember._src import core
from ember._src.base import tree_util
from ember._src.core import declare
from ember._src.transforms import ad, ad_calls, batching
from ember._src.transforms.custom_derivatives import _resolve_kwargs, forward_def_attr


def _fun_name(fun) -> str:
  return getattr(fun, "__name__", "<unnamed function>")


class custom_vmap:  # noqa: N801  (JAX's name)
  """Customize how a function is batched by vmap (`jax.custom_batching.custom_vmap`)."""

  def __init__(self, fun: Callable[..., Any]):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule = None

  __getattr__ = forward_def_attr

  def def_vmap(self, vmap_rule: Callable[..., tuple[Any, Any]]):
    """Set the rule `vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)`;
    returns it unchanged."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __call__(self, *args, **kwargs):
    args = _resolve_kwargs(self.fun, args, kwargs)
    name = _fun_name(self.fun)
    if not self.vmap_rule:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                           "using def_vmap.")
    leaves, in_tree = tree_util.tree_flatten(args)
    if core.find_top_trace(leaves).main.level == 0:   # no trace above: the function itself
      return self.fun(*args)
    out_trees = []

    def flat_fun(*xs):
      out = self.fun(*tree_util.tree_unflatten(in_tree, xs))
      out_leaves, out_tree = tree_util.tree_flatten(out)
      out_trees.append(out_tree)
      return out_leaves
    jaxpr, consts = ad_calls.trace_closed(flat_fun, [core.get_aval(x) for x in leaves])
    out_tree = out_trees[0]
    rule = _UserRule(self.vmap_rule, len(consts), in_tree, out_tree)
    all_in_tree = tree_util.tree_structure((list(consts), tree_util.tree_unflatten(in_tree,
                                                                                   leaves)))
    outs = custom_vmap_call_p.bind(*consts, *leaves, call=jaxpr, rule=rule,
                                   in_tree=all_in_tree, out_tree=out_tree)
    return tree_util.tree_unflatten(out_tree, outs)


class _UserRule:
  """A user's vmap rule as the primitive calls it: flat (batched flags, args) in, flat
  (outs, out batched flags) out, checked against the function's output structure."""

  def __init__(self, rule, num_consts: int, in_tree, out_tree):
    self.rule, self.num_consts, self.in_tree, self.out_tree = rule, num_consts, in_tree, out_tree
    self.__name__ = _fun_name(rule)

  def __call__(self, axis_size: int, in_batched: list, args: list):
    n = self.num_consts
    if any(in_batched[:n]):
      raise ValueError(f"custom_vmap function batched over a value it closes over: pass the "
                       f"batched value as an argument of the function (rule {self.__name__})")
    batched = tree_util.tree_unflatten(self.in_tree, in_batched[n:])
    out, out_batched = self.rule(axis_size, list(batched), *tree_util.tree_unflatten(
        self.in_tree, args[n:]))
    outs, tree = tree_util.tree_flatten(out)
    flags, flags_tree = tree_util.tree_flatten(out_batched)
    if tree != flags_tree:
      raise ValueError(f"structure of output value and output batching specification returned "
                       f"by custom vmap rule ({self.__name__}) do not match.\n"
                       f"Output values: {tree}\nBatching spec: {flags_tree}")
    if tree != self.out_tree:
      raise ValueError(f"structure of output returned by custom vmap rule ({self.__name__}) "
                       f"does not match that of original custom-vmapped function.\n"
                       f"Original output: {self.out_tree}\nRule output: {tree}")
    return outs, [bool(b) for b in flags]

  def __str__(self):
    return str(self.rule)


class _JvpOfRule:
  """The vmap rule of a jvp'd custom_vmap_call (args: primals then tangents): each primal and
  its tangent batched alike (the unbatched one broadcast), then the jvp of the rule; the
  output tangents are batched as their primals."""

  def __init__(self, rule):
    self.rule = rule
    self.__name__ = f"jvp({getattr(rule, '__name__', 'rule')})"

  def __call__(self, axis_size: int, in_batched: list, args: list):
    n = len(args) // 2
    # the rule sees as batched what is batched in both a primal and its tangent; the rest
    # (batched in only one of the two) is vmapped over around the jvp of the rule, as JAX does
    mutual = [pb and tb for pb, tb in zip(in_batched[:n], in_batched[n:])]
    extra = [b and not m for b, m in zip(in_batched, mutual * 2)]
    out_batched = []

    def primal_rule(*ps):
      outs, flags = self.rule(axis_size, mutual, list(ps))
      out_batched[:] = flags
      return outs

    def jvp_of_rule(*xs):
      p_out, t_out = ad.jvp(primal_rule, xs[:n], xs[n:])
      return [*p_out, *t_out]
    if not any(extra):
      return jvp_of_rule(*args), out_batched * 2
    outs = batching.vmap(jvp_of_rule, in_axes=[0 if e else None for e in extra])(*args)
    return outs, [True] * len(outs)   # (all batched: vmap puts every output's axis first)

  def __str__(self):
    return self.__name__


def _eval(*args, call, **_):
  return core.eval_jaxpr(call, (), *args)


def _batch(axis_data, vals, dims, *, call, rule, in_tree, out_tree):
  size = axis_data.size
  vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
  outs, flags = rule(size, [d is not None for d in dims], vals)
  return outs, [0 if b else None for b in flags]


def _jvp(primals, tangents, *, call, rule, in_tree, out_tree):
  tangents = [ad.instantiate_zeros(t) for t in tangents]
  n = len(primals)

  def jvp_of_call(*xs):
    p_out, t_out = ad.jvp(lambda *ps: core.eval_jaxpr(call, (), *ps), xs[:n], xs[n:])
    return [*p_out, *t_out]
  avals = [core.get_aval(x) for x in (*primals, *tangents)]
  jaxpr, consts = ad_calls.trace_closed(jvp_of_call, avals)
  if consts:   # (the jaxpr was const-free; the jvp of one closes over nothing new)
    raise AssertionError("jvp of a custom_vmap call closed over values")
  outs = custom_vmap_call_p.bind(
      *primals, *tangents, call=jaxpr, rule=_JvpOfRule(rule),
      in_tree=tree_util.tree_structure((in_tree.unflatten(primals),) * 2),
      out_tree=tree_util.tree_structure((out_tree.unflatten([0] * out_tree.num_leaves),) * 2))
  k = len(outs) // 2
  return outs[:k], outs[k:]


def _lower(ctx, *args, call, rule, **_):
  return ctx.call(call, getattr(rule, "__name__", "custom_vmap"), args)


custom_vmap_call_p = declare("custom_vmap_call", lambda *avals, call, **_: call.out_avals,
                             multiple_results=True)
custom_vmap_call_p.eval_rule = _eval
custom_vmap_call_p.batch = _batch
custom_vmap_call_p.jvp = _jvp
custom_vmap_call_p.lower = _lower


def _no_transpose(*_, **__):
  raise ValueError("custom_vmap functions do not support reverse-mode autodiff (grad, vjp): "
                   "wrap the custom_vmap function in a jax.custom_vjp to give it a backward "
                   "rule, as JAX asks.")


custom_vmap_call_p.transpose = _no_transpose

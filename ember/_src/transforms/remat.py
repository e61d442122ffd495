"""checkpoint / remat: recompute a function's intermediate values in the backward pass
instead of storing them.

`checkpoint(f)` stages one `remat2` equation holding f's jaxpr (JAX 0.12 prints it so:
`remat2[differentiated=False jaxpr={...} policy=None prevent_cse=True]`).

- jvp (forward mode): one `remat2` of f's jvp jaxpr, as JAX.
- linearize / grad / vjp: JAX's `remat_partial_eval`. The jvp jaxpr is split under the
  policy (`partial_eval.partial_eval_jaxpr_custom`): the primal outputs and the values
  the policy saves are computed inline (where the primals live); the tangents are a
  `remat2[differentiated=True]` equation of the rest, reading the saved residuals and f's
  inputs and recomputing every unsaved value it needs. That equation lands in the linear
  jaxpr; its transpose (`ad_calls.call_transpose`) is one `remat2` whose jaxpr re-evaluates the
  non-linear equations before transposing the linear ones, so the unsaved intermediates
  are recomputed on the backward pass. Policy None saves nothing (only f's inputs).
"""
from __future__ import annotations

import functools
import types
import weakref
from typing import Callable

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import declare
from ember._src.base.dtypes import dtype_kind
from ember._src.hlo.graph import TupleShape
from ember._src.transforms import ad, ad_calls, batching
from ember._src.transforms import partial_eval as pe
from ember._src.transforms.partial_eval import dce_jaxpr

__all__ = ["checkpoint", "remat", "remat_p", "checkpoint_policies", "checkpoint_name", "name_p"]

remat_p = declare("remat2", lambda *avals, jaxpr, **_: jaxpr.out_avals, multiple_results=True)
remat_p.eval_rule = lambda *args, jaxpr, **_: core.eval_jaxpr(jaxpr, (), *args)


def _remat_lower(ctx, *args, jaxpr, prevent_cse, differentiated, policy):
  """A call of the jaxpr; a differentiated remat's inputs pass an optimization barrier
  first (JAX's lowering), so the recomputation is not merged with the forward pass."""
  pcse = prevent_cse if isinstance(prevent_cse, tuple) else (prevent_cse,) * len(args)
  if differentiated and any(pcse):
    barred = [a for a, p in zip(args, pcse) if p]
    out = iter(ctx.unpack(ctx.emit("optimization-barrier",
                                   TupleShape(tuple(a.shape for a in barred)),
                                   [ctx.tuple(barred)])))
    args = [next(out) if p else a for a, p in zip(args, pcse)]
  return ctx.call(jaxpr, "checkpoint", args)


remat_p.lower = _remat_lower

_jvp_jaxprs: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_splits: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _jvp_jaxpr(jaxpr, nonzeros):
  """The jvp of `jaxpr`: (jaxpr (consts, primals, nonzero tangents) -> (primal outs,
  nonzero tangent outs), consts, out_nz), cached per jaxpr and tangent pattern."""
  per = _jvp_jaxprs.setdefault(jaxpr, {})
  key = tuple(nonzeros)
  if key not in per:
    per[key] = ad_calls.jvp_jaxpr(jaxpr, nonzeros)
  return per[key]


class _Split:
  """JAX's `remat_partial_eval` of one jvp jaxpr under a policy: `known` computes the
  primal outputs and the saved residuals (with reduce_precision on residuals that other
  equations also read, JAX's guard against excess precision), `staged` computes the
  tangents from the residuals and the inputs it uses, recomputing what is not saved."""

  def __init__(self, jvp_jaxpr, unknowns, policy):
    known, staged, self.out_unknowns, num_res = pe.partial_eval_jaxpr_custom(
        jvp_jaxpr, unknowns, policy)
    self.staged, used = pe.dce_jaxpr_used(staged)
    used_res, self.used_inputs = used[:num_res], used[num_res:]
    n_known_out = len(known.outvars) - num_res
    known = known.replace(outvars=known.outvars[:n_known_out] + [
        v for v, u in zip(known.outvars[n_known_out:], used_res) if u])
    self.num_res = sum(used_res)
    self.known = _insert_reduce_precision(dce_jaxpr(known), self.num_res)


def _split(jvp_jaxpr, unknowns, policy) -> _Split:
  per = _splits.setdefault(jvp_jaxpr, {})
  key = (tuple(unknowns), policy)
  if key not in per:
    per[key] = _Split(jvp_jaxpr, unknowns, policy)
  return per[key]


# lax's reduce_precision primitive, which rounds the saved residuals. Primitives sit a
# layer above transforms: primitives/elementwise/convert.py registers it here at its import.
reduce_precision_p: core.Primitive | None = None


def _insert_reduce_precision(jaxpr, num_res):
  """`x = reduce_precision(x)` after the producer of each float residual that another
  equation of `jaxpr` also reads (JAX's `_insert_reduce_precision`)."""
  res = jaxpr.outvars[len(jaxpr.outvars) - num_res:]
  read = {id(v) for e in jaxpr.eqns for v in e.invars}
  eqns = list(jaxpr.eqns)
  for v in res:
    if not isinstance(v, core.Var) or dtype_kind(v.aval.dtype) != "f" or id(v) not in read:
      continue
    i, eqn = next((i, e) for i, e in enumerate(eqns) if any(o is v for o in e.outvars))
    info = dtypes.finfo(v.aval.dtype)
    params = dict(exponent_bits=int(info.nexp), mantissa_bits=int(info.nmant))
    if eqn.primitive is reduce_precision_p and eqn.params == params:
      continue
    new = core.Var(v.aval)
    eqns[i] = eqn.replace(outvars=[new if o is v else o for o in eqn.outvars])
    eqns.insert(i + 1, core.JaxprEqn([new], [v], reduce_precision_p, params, eqn.source_info))
  return jaxpr.replace(eqns=eqns)


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  nonzeros = [type(t) is not ad.Zero for t in tangents]
  nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
  jj, consts, out_nz = _jvp_jaxpr(jaxpr, nonzeros)
  n_out = len(jaxpr.outvars)
  if not ad.is_linearizing(primals, nz_tangents):
    # forward mode, as JAX: one remat2 of the jvp jaxpr
    pcse = prevent_cse + (True,) * (len(consts) + len(nz_tangents)) \
        if isinstance(prevent_cse, tuple) else prevent_cse
    outs = remat_p.bind(*consts, *primals, *nz_tangents, jaxpr=jj, prevent_cse=pcse,
                        differentiated=differentiated, policy=policy)
    p_out, nz_out = outs[:n_out], iter(outs[n_out:])
  else:
    # linearize: JAX's remat_partial_eval. The primal outputs and saved residuals are
    # computed here (inline, where the primals live); the tangents by a
    # remat2[differentiated=True] of the staged jaxpr, which lands in the linear jaxpr
    # and whose transpose recomputes the unsaved values on the backward pass.
    n_known_in = len(consts) + len(primals)
    s = _split(jj, [False] * n_known_in + [True] * len(nz_tangents),
               policy or nothing_saveable)
    known_outs = core.eval_jaxpr(s.known, (), *consts, *primals)
    res = known_outs[len(known_outs) - s.num_res:]
    known_outs = iter(known_outs[:len(known_outs) - s.num_res])
    ins = [x for x, u in zip([*consts, *primals, *nz_tangents], s.used_inputs) if u]
    pcse = prevent_cse
    if isinstance(prevent_cse, tuple):
      full = (True,) * len(consts) + prevent_cse + (True,) * len(nz_tangents)
      pcse = (True,) * len(res) + tuple(c for c, u in zip(full, s.used_inputs) if u)
    staged = iter(remat_p.bind(*res, *ins, jaxpr=s.staged, prevent_cse=pcse,
                               differentiated=True, policy=policy)
                  if s.staged.outvars else [])
    outs = [next(staged) if u else next(known_outs) for u in s.out_unknowns]
    p_out, nz_out = outs[:n_out], iter(outs[n_out:])
  t_out = [next(nz_out) if nz else ad.Zero(ad.tangent_aval(a))
           for a, nz in zip(jaxpr.out_avals, out_nz)]
  return p_out, t_out


def _remat_params(params, jaxpr):
  return dict(params, jaxpr=jaxpr, differentiated=True)


def _remat_batch(axis_data, vals, dims, *, jaxpr, **params):
  bj, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  bj, consts = core.hoist_consts(bj)
  return remat_p.bind(*consts, *vals, jaxpr=bj, **params), out_dims


remat_p.jvp = _remat_jvp
remat_p.transpose = ad_calls.call_transpose(remat_p, _remat_params)
remat_p.dce = pe.call_dce(("prevent_cse",))
remat_p.batch = _remat_batch


def _static_argnums(static_argnums, nargs) -> frozenset:
  if type(static_argnums) is int:
    static_argnums = (static_argnums,)
  elif not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
    raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must be "
                    f"an int, tuple of ints or, bool, but got value {static_argnums}")
  if not all(-nargs <= d < nargs for d in static_argnums):
    raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can "
                     "only take integer values greater than or equal to `-len(args)` and "
                     f"less than `len(args)`, but got {static_argnums}, while `len(args)` = "
                     f"{nargs}")
  return frozenset(d % nargs for d in static_argnums)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple = ()) -> Callable:
  """`fun`, with its intermediate values recomputed for differentiation instead of saved,
  except those `policy(prim, *in_avals, **params)` says may be saved (see
  `checkpoint_policies`). Arguments in `static_argnums` are Python values fixed at
  trace time (so Python control flow may depend on them)."""
  if not callable(fun):
    raise TypeError(f"checkpoint requires a callable, got {type(fun).__name__}")
  if policy is not None and not callable(policy):
    raise TypeError(f"checkpoint policy must be a callable (prim, *avals, **params) -> bool, "
                    f"got {policy!r}")

  @functools.wraps(fun, updated=())  # not __dict__ (a jit or custom_vjp object keeps state there)
  def fun_remat(*args, **kwargs):
    n = len(args)
    snums = _static_argnums(static_argnums, n)
    dyn = tuple(a for i, a in enumerate(args) if i not in snums)
    leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
    # traced even at top level, as in JAX: `fun` sees tracers for its non-static arguments
    # (a Python bool among them is a bool array, not True), never the values themselves
    store = {}

    def flat(*xs):
      d, kw = tree_util.tree_unflatten(in_tree, xs)
      it = iter(d)
      full = [args[i] if i in snums else next(it) for i in range(n)]
      out_leaves, store["out_tree"] = tree_util.tree_flatten(fun(*full, **kw))
      return out_leaves, None
    closed, _ = core.trace_to_jaxpr(flat, [core.get_aval(x) for x in leaves])
    jaxpr, consts = core.hoist_consts(closed)
    pcse = tuple(map(bool, prevent_cse)) if isinstance(prevent_cse, (tuple, list)) \
        else bool(prevent_cse)
    if isinstance(pcse, tuple):
      if len(pcse) != len(leaves):
        raise ValueError(f"checkpoint: prevent_cse has {len(pcse)} entries but the function "
                         f"takes {len(leaves)} array arguments (flattened)")
      pcse = (True,) * len(consts) + pcse
    outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=pcse,
                        differentiated=False, policy=policy)
    return tree_util.tree_unflatten(store["out_tree"], outs)
  return fun_remat


remat = checkpoint


# --- policies (jax.checkpoint_policies): which primal values may be saved -------------------
# Each is called as policy(prim, *in_avals, **params) on the equation producing a value.

def everything_saveable(*_, **__) -> bool:
  """Save everything (as if checkpoint were not used)."""
  return True


def nothing_saveable(*_, **__) -> bool:
  """Recompute everything (checkpoint's default)."""
  return False


def dots_saveable(prim, /, *_, **__) -> bool:
  """Save the results of matrix multiplications and convolutions."""
  return prim.name in ("dot_general", "conv_general_dilated", "scaled_matmul_wrapper")


checkpoint_dots = dots_saveable


def dots_with_no_batch_dims_saveable(prim, /, *args, **params) -> bool:
  """Save the results of dot_generals without batch dimensions (a transformer heuristic)."""
  if prim.name == "dot_general":
    (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
    return not lhs_b and not rhs_b
  return False


def offload_dot_with_no_batch_dims(offload_src, offload_dst):
  """As dots_with_no_batch_dims_saveable, the residuals offloaded to `offload_dst` (one
  memory space on ember's CPU backend: they are saved)."""
  def policy(prim, /, *_, **params):
    if prim.name == "dot_general":
      (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
      if not lhs_b and not rhs_b:
        return pe.Offloadable(src=offload_src, dst=offload_dst)
    return pe.Recompute
  return policy


def save_anything_except_these_names(*names_not_to_save):
  """JAX 0.12's version saves every value (its own TODO says it does not work); ember
  does the same so that programs behave alike."""
  return lambda *_, **__: True


def save_any_names_but_these(*names_not_to_save):
  """Save only values named with `checkpoint_name`, except the names given."""
  names_not_to_save = frozenset(names_not_to_save)

  def policy(prim, /, *_, **params):
    if prim is name_p:
      return params["name"] not in names_not_to_save
    return False
  return policy


def save_only_these_names(*names_which_can_be_saved):
  """Save only values named with `checkpoint_name`, and only the names given."""
  names_which_can_be_saved = set(names_which_can_be_saved)

  def policy(prim, /, *_, **params):
    if prim is name_p:
      return params["name"] in names_which_can_be_saved
    return False
  return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                      names_which_can_be_offloaded, offload_src, offload_dst):
  """As save_only_these_names, with some names offloaded (saved, on ember's CPU)."""
  names_which_can_be_saved = set(names_which_can_be_saved)
  names_which_can_be_offloaded = set(names_which_can_be_offloaded)
  intersection = names_which_can_be_saved.intersection(names_which_can_be_offloaded)
  if intersection:
    raise ValueError(
        "The names should be exclusive and should not intersect in "
        "`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
        f"names_which_can_be_saved={names_which_can_be_saved}, "
        f"names_which_can_be_offloaded={names_which_can_be_offloaded} and "
        f"the intersection={intersection}")

  def policy(prim, /, *_, **params):
    if prim is name_p and params["name"] in names_which_can_be_saved:
      return pe.Saveable
    if prim is name_p and params["name"] in names_which_can_be_offloaded:
      return pe.Offloadable(src=offload_src, dst=offload_dst)
    return pe.Recompute
  return policy


def save_from_both_policies(policy_1, policy_2):
  """Logical OR of two policies: a value is saveable if either policy saves it."""
  if policy_1 is everything_saveable or policy_2 is everything_saveable:
    return everything_saveable
  if policy_1 is nothing_saveable:
    return policy_2
  if policy_2 is nothing_saveable:
    return policy_1

  def policy(prim, /, *args, **params):
    out1 = policy_1(prim, *args, **params)
    out2 = policy_2(prim, *args, **params)
    if not (isinstance(out1, bool) and isinstance(out2, bool)):
      raise ValueError("The return value of the policies should be a boolean. Got: "
                       f"{out1} and {out2}. Please write a custom policy function directly, "
                       "rather than using this helper function.")
    return out1 or out2
  return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    save_and_offload_only_these_names=save_and_offload_only_these_names)


# `checkpoint_name(x, name)`: the identity, tagged so that (JAX's) save policies can name
# residuals; printed `name[name=foo] a`. Its tangent passes through untagged, as in JAX.
name_p = declare("name", lambda x, *, name: x, lambda x, *, name: x)
name_p.lower = lambda ctx, x, *, name: x
name_p.jvp = lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0])
name_p.batch = lambda axis_data, vals, dims, *, name: (name_p.bind(vals[0], name=name), dims[0])


def checkpoint_name(x, name):
  """`x` (a pytree), tagged with `name` for checkpoint policies."""
  return tree_util.tree_map(lambda v: name_p.bind(v, name=name), x)


# --------------------------------------------------------------------------------------
# What a linearization saves (jax.ad_checkpoint.print_saved_residuals)
# --------------------------------------------------------------------------------------

def saved_residuals(f: Callable, *args, **kwargs) -> list[tuple[core.ShapedArray, str]]:
  """(aval, where it comes from) for each value `linearize(f, *args)` keeps for the
  backward pass: an argument, a constant, a `checkpoint_name`d value or a primitive's
  output (with its source line), so policies can be checked by eye."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))

  def flat_fun(*flat):
    a, kw = tree_util.tree_unflatten(in_tree, flat)
    return f(*a, **kw)

  def residuals(*flat):   # the linearization's residuals: the leaves of its Partial
    return tree_util.tree_flatten(ad.linearize(flat_fun, *flat)[1])
  dbg = core.debug_info("saved_residuals", f, args, kwargs)
  jaxpr, _ = core.trace_to_jaxpr(residuals, [core.get_aval(x) for x in leaves], dbg)
  names = dbg.arg_names or ()
  lits = [v for v in jaxpr.outvars if isinstance(v, core.Literal)]
  # a reduce_precision (inserted by remat's partial eval) is looked through, as JAX does
  through = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns
             if e.primitive.name == "reduce_precision"}
  res = {through.get(v, v) for v in jaxpr.outvars if not isinstance(v, core.Literal)}
  out = [(v.aval, "from a literal") for v in lits]
  out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res]
  out += [(v.aval, f"from the argument {names[i]}" if i < len(names) and names[i]
           else f"from the argument at flattened index {i}")
          for i, v in enumerate(jaxpr.invars) if v in res]
  for e in jaxpr.eqns:
    si = e.source_info
    src = f"{si.file}:{si.line} ({si.function})" if si.file else "an unknown location"
    for v in e.outvars:
      if v not in res:
        continue
      if e.primitive is name_p:
        out.append((v.aval, f"named '{e.params['name']}' from {src}"))
      elif e.primitive.name == "jit":
        out.append((v.aval, f"output of jitted function '{e.params['name']}' from {src}"))
      else:
        out.append((v.aval, f"output of {e.primitive.name} from {src}"))
  return out


def print_saved_residuals(f: Callable, *args, **kwargs) -> None:
  """Print `saved_residuals(f, *args, **kwargs)`, one residual per line (JAX's format)."""
  for aval, where in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {where}")

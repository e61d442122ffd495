"""`cond`, the higher-order primitive of branches, and the `lax` functions that bind it:
cond and switch. With its rules: abstract eval, eager evaluation (the chosen branch's jaxpr
run by `eval_jaxpr`), jvp (under linearize, as JAX's partial evaluation: a known cond of the
primals and residuals, an unknown one of the tangents), transpose, batching (a batched
predicate runs every branch and selects) and lowering (`conditional`, stablehlo.case).

Convention (JAX's): `cond[branches=(b0, b1, ...)] index *consts *operands`: every branch
takes all consts (of all branches) and operands; `lax.cond(pred, t, f)` binds
`branches=(f, t)` with `index = convert_element_type(pred, int32)`.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import tree_util
from ember._src.core import Var, get_aval
from ember._src.primitives import eager_jit
from ember._src.primitives.control.common import (
    Zero, _batch_jaxpr_front, _concrete, _disable_jit, _forwarding, _fun_loc, _join_consts,
    _jvp_jaxpr, _map, _mismatch, _new_refs, _nonzero, _outs, _prune_outputs, _ref_values,
    _result_shape, _set_ref_values, _to_front, _trace_jaxpr_fn, _trace_pytree, _typematch,
    _with_avals)
from ember._src.primitives.elementwise import clamp, convert_element_type, select_n
from ember._src.primitives.structural import broadcast_in_dim
from ember._src.transforms import ad, ad_calls, batching
from ember._src.transforms.partial_eval import dce_sub, partial_eval_jaxpr

__all__ = ["cond", "switch"]


# ------------------------------------------------------------------------------------
# cond
# ------------------------------------------------------------------------------------

cond_p = core.Primitive("cond", multiple_results=True)


def _cond_abstract_eval(index, *args, branches):
  if index.shape != () or index.dtype != np.int32:
    raise TypeError(f"cond: the branch index must be an int32 scalar, got "
                    f"{index.str_short()}")
  want = branches[0].in_avals
  if len(args) != len(want) or not all(_typematch(a, b) for a, b in zip(args, want)):
    raise TypeError(f"cond: operands {[a.str_short() for a in args]} do not match the "
                    f"branches' inputs {[a.str_short() for a in want]}")
  return branches[0].out_avals   # JAX's: the weak types of the first branch (false_fun's)


def _cond_eval(index, *args, branches):
  i = int(np.clip(int(core.to_numpy(index)), 0, len(branches) - 1))
  avals = _cond_abstract_eval(core.get_aval(index), *_map(core.get_aval, args),
                              branches=branches)
  return _with_avals(core.eval_jaxpr(branches[i], [], *args), avals)


cond_p.abstract_eval = _cond_abstract_eval
cond_p.eval_rule = _cond_eval


class _NoOperand:
  pass


_no_operand = _NoOperand()


def _check_branch_outputs(what, name0, name1, f0, f1, tree0, avals0, tree1, avals1):
  head = f"\n\n{name0} is {_fun_loc(f0)}\n{name1} is {_fun_loc(f1)}\n\n"
  if tree0 != tree1:
    raise TypeError(f"{what} branch outputs must have the same pytree structure, but they "
                    f"differ:{head}{name0} output has structure {tree0} but {name1} output "
                    f"has structure {tree1}.\n\nRevise {name0} and/or {name1} so that they "
                    "have the same pytree structure.")
  paths = [p for p, _ in tree_util.tree_flatten_with_path(
      tree_util.tree_unflatten(tree0, list(range(tree0.num_leaves))))[0]]
  diffs = []
  for p, a, b in zip(paths, avals0, avals1):
    if not _typematch(a, b):
      at = f" at path {tree_util.keystr(p)}" if p else ""
      diffs.append(f"the output of {name0}{at} has type {a.str_short()} but the "
                   f"corresponding output of {name1} has type {b.str_short()}, so "
                   f"{_mismatch(a, b)}")
  if diffs:
    text = (diffs[0][0].upper() + diffs[0][1:] + "." if len(diffs) == 1 else
            "\n".join(f"  * {d};" for d in diffs))
    raise TypeError(f"{what} branches must have equal output types but they differ.{head}"
                    f"{text}\n\nRevise {name0} and/or {name1} so that all output types "
                    "match.")


def _switch_internal(index, branches, operands, what, names, threaded: tuple = ()):
  """The cond equation of `branches[index](*operands)`. Refs from outside that a branch
  reads or writes are extra operands and outputs of every branch (`threaded`: those
  already threaded)."""
  leaves, in_tree = tree_util.tree_flatten((tuple(operands), {}))
  avals = [get_aval(x) for x in leaves]
  frames: list = []
  traced = _trace_branches(branches, in_tree, avals, what, frames)
  new_refs = _new_refs(frames, threaded)
  if new_refs:
    return _switch_threading(index, branches, operands, what, names, (*threaded, *new_refs))
  jaxprs, consts = _join_consts([(j, c) for j, c, _ in traced])
  first = len(branches) - 1 if what == "cond" else 0   # cond names true_fun first (JAX)
  for k in range(len(branches)):
    if k != first:
      _check_branch_outputs(what, names(first), names(k), branches[first], branches[k],
                            traced[first][2], jaxprs[first].out_avals, traced[k][2],
                            jaxprs[k].out_avals)
  # outputs every branch forwards from the same input are not outputs of the cond (JAX)
  fwds = [_forwarding(j) for j in jaxprs]
  in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
  keep = [f is None for f in in_fwd]
  jaxprs = [_prune_outputs(j, keep) for j in jaxprs]
  # weak types: an output weak in one branch only is strong in all (JAX joins them)
  outs = iter(cond_p.bind(index, *consts, *leaves, branches=tuple(jaxprs)))
  inputs = [*consts, *leaves]
  flat = [next(outs) if f is None else inputs[f] for f in in_fwd]
  return tree_util.tree_unflatten(traced[0][2], flat)


def _trace_branches(branches, in_tree, avals, what, frames) -> list:
  """(jaxpr, consts, out_tree) per branch; a function given as several branches is traced
  once (as JAX, whose trace cache flax's cond/switch wrappers count on)."""
  by_fun: dict[int, tuple] = {}
  for b in branches:
    if id(b) not in by_fun:
      by_fun[id(b)] = _trace_pytree(lambda ak, b=b: b(*ak[0], **ak[1]), in_tree, avals,
                                    f"{what} branch", frames)
  return [by_fun[id(b)] for b in branches]


def _switch_threading(index, branches, operands, what, names, rs):
  """The cond of `branches`, the refs `rs` (from outside) threaded through every branch."""
  def threading(b):
    def branch(ops, values):
      _set_ref_values(rs, values)
      out = b(*ops)
      return out, _ref_values(rs)
    return branch
  wrapped = {id(b): threading(b) for b in branches}   # (a function given twice: once)
  out, values = _switch_internal(index, [wrapped[id(b)] for b in branches],
                                 (tuple(operands), _ref_values(rs)), what, names, rs)
  _set_ref_values(rs, values)
  return out


def switch(index, branches: Sequence[Callable], *operands, operand=_no_operand):
  """Apply `branches[index](*operands)`; `index` is clamped into range."""
  if operand is not _no_operand:
    if operands:
      raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                      f"passed, got operand={operand} and positional operands {operands}")
    operands = (operand,)
  if np.ndim(index) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  idx_dtype = get_aval(index).dtype
  if np.dtype(idx_dtype).kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {np.dtype(idx_dtype)}")
  branches = tuple(branches)
  if not branches:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  if eager_jit.applies((index, operands)):   # one compiled call, as JAX runs it
    return eager_jit.call(branches[0], ("switch",) + branches[1:], _switch_compiled, index,
                          *operands)
  if _disable_jit() and _concrete(index) is not None:   # run the branch in Python (JAX)
    return branches[int(np.clip(int(_concrete(index)), 0, len(branches) - 1))](*operands)
  index = convert_element_type(index, np.int32)
  index = clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
  return _switch_internal(index, branches, operands, "switch",
                          lambda k: "branch 0" if k == 0 else f"branch{k}")


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_no_operand):
  """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, staged as one `cond`."""
  if not (callable(true_fun) and callable(false_fun)):
    if callable(false_fun) and len(operands) == 2 and callable(operands[1]):  # old form
      x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
      return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  if operand is not _no_operand:
    if operands:
      raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                      f"passed, got operand={operand} and positional operands {operands}")
    operands = (operand,)
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    raise TypeError(f"Pred must be a scalar, got {pred} of " +
                    (f"type {type(pred)}" if isinstance(pred, Sequence)
                     else f"shape {np.shape(pred)}."))
  kind = np.dtype(get_aval(pred).dtype).kind
  if kind != "b":
    if kind not in "iuf":
      raise TypeError(f"Pred type must be either boolean or number, got "
                      f"{np.dtype(get_aval(pred).dtype)}.")
    pred = pred != 0
  if _disable_jit() and _concrete(pred) is not None:    # run the branch in Python (JAX)
    return (true_fun if bool(_concrete(pred)) else false_fun)(*operands)
  if eager_jit.applies((pred, operands)):   # one compiled call, as JAX runs it
    return eager_jit.call(true_fun, ("cond", false_fun), _cond_compiled, pred, *operands)
  index = convert_element_type(pred, np.int32)
  return _switch_internal(index, (false_fun, true_fun), operands, "cond",
                          lambda k: ("false_fun", "true_fun")[k])


def _switch_compiled(first, static, index, *operands):
  return switch(index, (first,) + static[1:], *operands)


def _cond_compiled(true_fun, static, pred, *operands):
  return cond(pred, true_fun, static[1], *operands)


# ------------------------------------------------------------------------------------
# Differentiation
# ------------------------------------------------------------------------------------


def _cond_jvp(primals, tangents, *, branches):
  index, ops = primals[0], primals[1:]
  nz = [_nonzero(t) for t in tangents[1:]]
  nout = len(branches[0].outvars)
  out_nz = [False] * nout
  for b in branches:
    out_nz = [x or y for x, y in zip(out_nz, _jvp_jaxpr(b, nz, [False] * nout)[2])]
  jvps, consts = _join_consts([_jvp_jaxpr(b, nz, out_nz)[:2] for b in branches])
  nt = sum(a for a, b in zip(nz, branches[0].in_avals) if ad.is_differentiable(b.dtype))
  ntout = sum(out_nz)
  nz_t = [t for t, a in zip(tangents[1:], branches[0].in_avals)
          if _nonzero(t) and ad.is_differentiable(a.dtype)]
  if not ad.is_linearizing(primals, nz_t):
    # forward mode, as JAX: one cond whose branches compute primals and tangents
    outs = cond_p.bind(index, *consts, *ops, *nz_t, branches=tuple(jvps))
    t_nz = iter(outs[nout:])
    return outs[:nout], [next(t_nz) if nz_ else Zero(ad.tangent_aval(a))
                         for nz_, a in zip(out_nz, branches[0].out_avals)]
  unknowns = [False] * (len(consts) + len(ops)) + [True] * nt
  splits = [partial_eval_jaxpr(j, unknowns, [False] * nout + [True] * ntout) for j in jvps]
  # residual slots shared by the branches where their types agree (JAX's
  # `_merge_branch_residuals`); a branch fills the slots it does not use with zeros
  all_res, slots = _merge_branch_residuals([[v.aval for v in s[3]] for s in splits])

  def known_fn(k):
    known = splits[k][0]

    def fn(*args):
      outs = core.eval_jaxpr(known, [], *args)
      res = [None] * len(all_res)
      for i, r in zip(slots[k], outs[nout:]):
        res[i] = r
      return list(outs[:nout]) + [ad.zeros_like_aval(a) if r is None else r
                                  for a, r in zip(all_res, res)]
    return fn
  in_avals = [v.aval for v in jvps[0].invars[:len(consts) + len(ops)]]
  knowns, kconsts = _join_consts([_trace_jaxpr_fn(known_fn(k), in_avals)
                                  for k in range(len(branches))])
  unknowns_j = []
  for k, s in enumerate(splits):
    u = s[1]
    mine = dict(zip(slots[k], u.invars[:len(slots[k])]))
    head = [mine.get(i) or Var(a) for i, a in enumerate(all_res)]
    unknowns_j.append(u.replace(invars=head + u.invars[len(slots[k]):]))
  outs = cond_p.bind(index, *kconsts, *consts, *ops, branches=tuple(knowns))
  p_out, res = outs[:nout], outs[nout:]
  t_nz = iter(cond_p.bind(index, *res, *nz_t, branches=tuple(unknowns_j)) if ntout else [])
  return p_out, [next(t_nz) if nz_ else Zero(ad.tangent_aval(a))
                 for nz_, a in zip(out_nz, branches[0].out_avals)]


def _merge_branch_residuals(branch_res_avals):
  """(merged residual avals, per branch the slot of each of its residuals): the i-th
  residual of a given type in each branch shares one slot."""
  key = lambda a: (a.shape, np.dtype(a.dtype), a.weak_type)
  all_avals, index, slots = [], {}, []
  for avals in branch_res_avals:
    seen: dict = {}
    mine = []
    for a in avals:
      n = seen[key(a)] = seen.get(key(a), -1) + 1
      tag = (key(a), n)
      if tag not in index:
        index[tag] = len(all_avals)
        all_avals.append(a)
      mine.append(index[tag])
    slots.append(mine)
  return all_avals, slots


def _cond_transpose(cts, index, *args, branches):
  if ad.is_undefined_primal(index):
    raise ValueError("cond: cannot transpose with respect to the branch index")
  undefined = [ad.is_undefined_primal(a) for a in args]
  ct_nz = [_nonzero(c) for c in cts]
  tjs, consts = _join_consts([ad_calls.transpose_jaxpr(b, undefined, ct_nz) for b in branches])
  defined = [a for a, u in zip(args, undefined) if not u]
  outs = iter(cond_p.bind(index, *consts, *defined, *[c for c in cts if _nonzero(c)],
                          branches=tuple(tjs)))
  return [None] + [next(outs) if u else None for u in undefined]


def _cond_dce(used_outputs, eqn):
  """Every branch keeps the used outputs and what they need; the cond keeps the operands
  some branch still reads (JAX's `_cond_dce_rule`)."""
  branches = eqn.params["branches"]
  used_in = [False] * len(branches[0].invars)
  for b in branches:
    used_in = [x or y for x, y in zip(used_in, dce_sub(b, used_outputs)[1])]
  new = tuple(dce_sub(b, used_outputs, used_in)[0] for b in branches)
  if all(n is b for n, b in zip(new, branches)):
    return [True] * len(eqn.invars), eqn
  return [True] + used_in, eqn.replace(
      invars=eqn.invars[:1] + [v for v, u in zip(eqn.invars[1:], used_in) if u],
      outvars=[v for v, u in zip(eqn.outvars, used_outputs) if u],
      params=dict(eqn.params, branches=new))


cond_p.jvp = _cond_jvp
cond_p.transpose = _cond_transpose
cond_p.dce = _cond_dce


# ------------------------------------------------------------------------------------
# Batching
# ------------------------------------------------------------------------------------


def _cond_batch(axis_data, vals, dims, *, branches):
  index, ops = vals[0], list(vals[1:])
  idim, odims = dims[0], list(dims[1:])
  size = axis_data.size
  nout = len(branches[0].outvars)
  if idim is None:
    batched = [False] * nout
    for b in branches:
      batched = [x or d is not None for x, d in
                 zip(batched, batching.batch_jaxpr(b, axis_data, odims)[1])]
    bjs = [_batch_jaxpr_front(b, axis_data, odims, batched) for b in branches]
    jaxprs, consts = _join_consts([(j, c) for j, c, _ in bjs])
    return cond_p.bind(index, *consts, *ops, branches=tuple(jaxprs)), bjs[0][2]
  # a batched predicate: every branch runs on every example, then a select picks
  index = batching.bdim_at_front(index, idim, size)
  ops = [_to_front(x, d, size, d is not None) for x, d in zip(ops, odims)]
  in_dims = [0 if d is not None else None for d in odims]
  outs = []
  for b in branches:
    j, consts, _ = _batch_jaxpr_front(b, axis_data, in_dims, [True] * nout)
    outs.append(core.eval_jaxpr(j, [], *consts, *ops))
  res = []
  for cases in zip(*outs):
    shape = core.get_aval(cases[0]).shape
    which = broadcast_in_dim(index, shape, (0,)) if len(shape) > 1 else index
    res.append(select_n(which, *cases) if len(cases) > 2 else
               select_n(convert_element_type(which, np.bool_), *cases))
  return res, [0] * nout


cond_p.batch = _cond_batch


# ------------------------------------------------------------------------------------
# Lowering
# ------------------------------------------------------------------------------------


def _cond_lower(ctx, index, *args, branches):
  comps = [ctx.lower_computation(b, f"branch_{k}_fun") for k, b in enumerate(branches)]
  avals = branches[0].out_avals
  out = ctx.emit("conditional", _result_shape(avals), [index, *args], called=comps)
  return _outs(ctx, out, len(avals))


cond_p.lower = _cond_lower

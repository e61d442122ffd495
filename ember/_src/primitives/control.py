"""Control flow: the higher-order primitives `cond`, `while` and `scan` (each holding
sub-jaxprs in its params, printed as JAX 0.12 prints them) and the `lax` functions built on
them (cond, switch, while_loop, fori_loop, scan, map, associative_scan); plus the
identity-valued primitives stop_gradient and optimization_barrier.

Conventions (JAX's):
- `cond[branches=(b0, b1, ...)] index *consts *operands`: every branch takes all consts
  (of all branches) and operands; `lax.cond(pred, t, f)` binds `branches=(f, t)` with
  `index = convert_element_type(pred, int32)`.
- `while[cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts] *cconsts *bconsts *init`.
- `scan[jaxpr, length, reverse, unroll, ft_in, ft_out] *consts *init *xs`: the body maps
  (consts, carry, x) -> (carry, y); `ft_in`/`ft_out` record the counts of consts, carry, xs
  and which ys the body computes (JAX forwards ys that are xs unchanged).
Rules beside each primitive: abstract eval, eager evaluation (a Python loop running the body
jaxpr with `eval_jaxpr`), jvp, transpose (cond, scan), batching, lowering (`conditional`,
`while`). Differentiation splits each jvp into a known (primal) and an unknown (tangent)
equation, as JAX's partial evaluation of these primitives does, so linearize/grad keep the
primal loop out of the linear jaxpr.
"""
from __future__ import annotations

import inspect
from typing import Callable, NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors, tree_util
from ember._src.core import Jaxpr, ShapedArray, Var, get_aval
from ember._src.hlo.graph import Shape, TupleShape
from ember._src.primitives import declare, indexing
from ember._src.primitives.elementwise import (add, bitwise_or, clamp, convert_element_type,
                                               lt, select, select_n, sub)
from ember._src.primitives.reductions import reduce_or
from ember._src.primitives.structural import (broadcast_in_dim, concatenate, expand_dims,
                                              index_in_dim, pad, reshape, rev, slice_in_dim)
from ember._src.transforms import ad, batching
from ember._src.transforms.partial_eval import partial_eval_jaxpr
from ember._src.transforms.batching import vmap
from ember._src.core.array import Array
from ember._src.transforms.partial_eval import dce_jaxpr
from ember._src.base.config import config

_map = map   # `map` below is lax.map

__all__ = ["stop_gradient", "optimization_barrier", "cond", "switch", "while_loop",
           "fori_loop", "scan", "map", "associative_scan"]


stop_gradient_p = declare("stop_gradient", lambda x: x, lambda x: x)
stop_gradient_p.lower = lambda ctx, x: x  # the identity once differentiation is done
stop_gradient_p.batch = batching.vectorized(stop_gradient_p)
ad.defjvp_zero(stop_gradient_p)


def stop_gradient(x):
  """The value of `x` (a pytree), treated as a constant by differentiation."""
  def leaf(v):
    if isinstance(get_aval(v).dtype, dtypes.ExtendedDType):
      return v  # keys carry no gradient
    return stop_gradient_p.bind(v)
  return tree_util.tree_map(leaf, x)


optimization_barrier_p = declare("optimization_barrier", lambda *xs: list(xs),
                                 lambda *xs: list(xs), multiple_results=True)
optimization_barrier_p.batch = lambda axis_data, vals, dims: (
    optimization_barrier_p.bind(*vals), list(dims))
optimization_barrier_p.lower = lambda ctx, *xs: ctx.unpack(ctx.emit(  # a fusion boundary
    "optimization-barrier", TupleShape(tuple(x.shape for x in xs)), [ctx.tuple(xs)]))
ad.deflinear(optimization_barrier_p, lambda cts: optimization_barrier_p.bind(
    *_map(ad.instantiate_zeros, cts)))


def optimization_barrier(operand, /):
  """The values of `operand` (a pytree), unchanged; the compiler may not move work across."""
  leaves, treedef = tree_util.tree_flatten(operand)
  return tree_util.tree_unflatten(treedef, optimization_barrier_p.bind(*leaves))


def _disable_jit() -> bool:
  return bool(config.read("jax_disable_jit"))


def _concrete(x):
  """The value of `x` when it is known now (not a tracer of an abstract value)."""
  return x.to_concrete_value() if isinstance(x, core.Tracer) else core.to_numpy(x)


# ------------------------------------------------------------------------------------
# Tracing functions into sub-jaxprs
# ------------------------------------------------------------------------------------


def _trace(fun: Callable, in_avals: Sequence[ShapedArray], what: str = "function"):
  """Stage `fun(*flat) -> (flat outs, aux)` into a const-free jaxpr: (jaxpr, consts, aux).
  Closed-over values (outer tracers, arrays) become leading invars whose values are
  `consts`."""
  def flat(*xs):
    outs, aux = fun(*xs)
    for o in outs:
      if not core.is_arraylike(o):
        raise TypeError(f"{what} returned a value of type {type(o).__name__} ({o!r}), "
                        "which is not a valid JAX type.")
    return outs, aux
  closed, aux = core.trace_to_jaxpr(flat, list(in_avals))
  jaxpr, consts = core.hoist_consts(closed)
  return jaxpr, consts, aux


def _trace_pytree(fun: Callable, in_tree, in_avals, what: str):
  """`fun` takes one pytree (`in_tree`, of `in_avals`): (jaxpr, consts, out_tree)."""
  def flat(*xs):
    out = fun(tree_util.tree_unflatten(in_tree, list(xs)))
    leaves, out_tree = tree_util.tree_flatten(out)
    return leaves, out_tree
  return _trace(flat, in_avals, what)


def _trace_jaxpr_fn(fun: Callable, in_avals):
  """A const-free jaxpr of `fun(*tracers) -> list`, consts hoisted: (jaxpr, consts)."""
  jaxpr, consts, _ = _trace(lambda *xs: (list(fun(*xs)), None), in_avals)
  return jaxpr, consts


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
  return a.shape == b.shape and a.dtype == b.dtype


def _mismatch(a: ShapedArray, b: ShapedArray) -> str:
  if a.shape != b.shape and a.dtype != b.dtype:
    return "the shapes and dtypes do not match"
  return "the dtypes do not match" if a.shape == b.shape else "the shapes do not match"


def _fun_loc(fun) -> str:
  name = getattr(fun, "__name__", type(fun).__name__)
  code = getattr(fun, "__code__", None)
  return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _carry_name(fun) -> str | None:
  try:
    return next(iter(inspect.signature(fun).parameters))
  except (TypeError, ValueError, StopIteration):
    return None


def _check_carry_type(name: str, fun, in_tree, in_avals, out_tree, out_avals) -> None:
  """JAX's errors for a loop body whose carry output differs from its carry input."""
  carry = _carry_name(fun)

  def component(path):
    if carry:
      return f"the input carry component {carry}{tree_util.keystr(path)}" if path \
          else f"the input carry {carry}"
    return f"the input carry at path {tree_util.keystr(path)}" if path else "the input carry"
  if in_tree != out_tree:
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree "
        f"structure, but they differ:\n\nthe input tree structure is:\n{in_tree}\nthe "
        f"output tree structure is:\n{out_tree}\n\nRevise the function so that the carry "
        "output has the same pytree structure as the carry input.")
  paths = [p for p, _ in tree_util.tree_flatten_with_path(
      tree_util.tree_unflatten(in_tree, list(range(in_tree.num_leaves))))[0]]
  diffs = [f"{component(p)} has type {a.str_short()} but the corresponding output carry "
           f"component has type {b.str_short()}, so {_mismatch(a, b)}"
           for p, a, b in zip(paths, in_avals, out_avals) if not _typematch(a, b)]
  if diffs:
    text = (diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1 else
            "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n")
    raise TypeError(f"{name} function carry input and carry output must have equal types, "
                    f"but they differ:\n\n{text}\nRevise the function so that all output "
                    "types match the corresponding input types.")


def _promote_weak(vals, in_avals, out_avals):
  """Weakly typed carry inits (Python scalars) whose body output has another type take
  the output's dtype (JAX's `_promote_weak_typed_input`): (new values, changed)."""
  new, changed = [], False
  for v, a, b in zip(vals, in_avals, out_avals):
    if a.weak_type and not _typematch(a, b) and a.shape == b.shape:
      v = convert_element_type(v, dtypes.result_type(v, b.dtype))
      changed = True
    new.append(v)
  return new, changed


# ------------------------------------------------------------------------------------
# Small jaxpr surgery
# ------------------------------------------------------------------------------------


def _forwarding(jaxpr: Jaxpr) -> list:
  """For each outvar, the index of the invar it is (unchanged), else None."""
  pos = {id(v): i for i, v in enumerate(jaxpr.invars)}
  return [pos.get(id(v)) if isinstance(v, Var) else None for v in jaxpr.outvars]


def _prune_outputs(jaxpr: Jaxpr, keep: Sequence[bool]) -> Jaxpr:
  if all(keep):
    return jaxpr
  return dce_jaxpr(jaxpr.replace(outvars=[v for v, k in zip(jaxpr.outvars, keep) if k]))


def _with_leading_invars(jaxpr: Jaxpr, avals: Sequence[ShapedArray], pos: int = 0) -> Jaxpr:
  """`jaxpr` with unused invars of `avals` inserted at `pos`."""
  new = [Var(a) for a in avals]
  return jaxpr.replace(invars=jaxpr.invars[:pos] + new + jaxpr.invars[pos:])


def _join_consts(jaxprs_consts):
  """[(jaxpr_i, consts_i)] -> ([jaxpr_i taking all consts first], all consts), consts
  merged by identity (JAX's `_merge_common_consts`)."""
  all_consts: list = []
  index: dict[int, int] = {}
  for _, cs in jaxprs_consts:
    for c in cs:
      if id(c) not in index:
        index[id(c)] = len(all_consts)
        all_consts.append(c)
  avals = [get_aval(c) for c in all_consts]
  out = []
  for j, cs in jaxprs_consts:
    mine = {index[id(c)]: v for c, v in zip(cs, j.invars[:len(cs)])}
    head = [mine.get(k) or Var(a) for k, a in enumerate(avals)]
    out.append(j.replace(invars=head + j.invars[len(cs):]))
  return out, all_consts


def _split(xs, *sizes):
  out, i = [], 0
  for n in sizes:
    out.append(list(xs[i:i + n]))
    i += n
  out.append(list(xs[i:]))
  return out


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
  outs = [b.out_avals for b in branches]   # weak only where every branch's is (JAX)
  return [a.update(weak_type=all(o[k].weak_type for o in outs))
          for k, a in enumerate(outs[0])]


def _with_avals(outs, avals):
  """Eager results as Arrays of exactly `avals` (dtype and weak type of the equation)."""
  return [o if getattr(o, "aval", None) == a else
          Array(np.asarray(core.to_numpy(o), a.dtype), weak_type=a.weak_type)
          for o, a in zip(outs, avals)]


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


def _switch_internal(index, branches, operands, what, names):
  leaves, in_tree = tree_util.tree_flatten((tuple(operands), {}))
  avals = [get_aval(x) for x in leaves]
  traced = [_trace_pytree(lambda ak, b=b: b(*ak[0], **ak[1]), in_tree, avals,
                          f"{what} branch") for b in branches]
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
  index = convert_element_type(pred, np.int32)
  return _switch_internal(index, (false_fun, true_fun), operands, "cond",
                          lambda k: ("false_fun", "true_fun")[k])


# ------------------------------------------------------------------------------------
# while
# ------------------------------------------------------------------------------------

while_p = core.Primitive("while", multiple_results=True)


def _while_abstract_eval(*avals, cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts):
  carry = avals[cond_nconsts + body_nconsts:]
  outs = body_jaxpr.out_avals
  if len(carry) != len(outs) or not all(_typematch(a, b) for a, b in zip(carry, outs)):
    raise TypeError(f"while: the body maps carry {[a.str_short() for a in carry]} to "
                    f"{[a.str_short() for a in outs]}; they must have equal types")
  return [a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(carry, outs)]


def _while_eval(*args, cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts):
  cconsts, bconsts, carry = _split(args, cond_nconsts, body_nconsts)
  while bool(core.to_numpy(core.eval_jaxpr(cond_jaxpr, [], *cconsts, *carry)[0])):
    carry = core.eval_jaxpr(body_jaxpr, [], *bconsts, *carry)
  return _with_avals(carry, _while_abstract_eval(
      *_map(core.get_aval, args), cond_jaxpr=cond_jaxpr, cond_nconsts=cond_nconsts,
      body_jaxpr=body_jaxpr, body_nconsts=body_nconsts))


while_p.abstract_eval = _while_abstract_eval
while_p.eval_rule = _while_eval


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
  """`while cond_fun(val): val = body_fun(val)`, staged as one `while`."""
  if not (callable(cond_fun) and callable(body_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if _disable_jit():   # a Python loop (JAX)
    val = init_val
    while cond_fun(val):
      val = body_fun(val)
    return val
  init_flat, in_tree = tree_util.tree_flatten(init_val)

  def create(vals):
    avals = [get_aval(v) for v in vals]
    cj, cc, ctree = _trace_pytree(cond_fun, in_tree, avals, "cond_fun")
    if (ctree.num_leaves != 1 or len(cj.out_avals) != 1 or cj.out_avals[0].shape != ()
        or cj.out_avals[0].dtype != np.bool_):
      raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                      f"{cj.out_avals}.")
    bj, bc, btree = _trace_pytree(body_fun, in_tree, avals, "body_fun")
    return avals, cj, cc, bj, bc, btree
  avals, cj, cc, bj, bc, btree = create(init_flat)
  if btree == in_tree:
    init_flat, changed = _promote_weak(init_flat, avals, bj.out_avals)
    if changed:
      avals, cj, cc, bj, bc, btree = create(init_flat)
  _check_carry_type("while_loop body", body_fun, in_tree, avals, btree, bj.out_avals)
  move = _loop_invariant_carries(cj, len(cc), bj, len(bc))
  if any(move):  # as JAX: they become body consts, and their results are their inits
    cj, bj = _carries_to_consts(cj, len(cc), bj, len(bc), move)
    init_flat, invariant = _partition(init_flat, move)
    bc = invariant + list(bc)
  outs = while_p.bind(*cc, *bc, *init_flat, cond_jaxpr=cj, cond_nconsts=len(cc),
                      body_jaxpr=bj, body_nconsts=len(bc))
  if any(move):
    outs = _merge(move, outs, invariant)
  return tree_util.tree_unflatten(in_tree, outs)


def _loop_invariant_carries(cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts) -> list:
  """The carries the body passes through unchanged and the condition does not read. JAX
  makes them body consts, so their results are their inits: differentiating through
  them works in reverse mode, and vmap does not batch them with the predicate."""
  cj = dce_jaxpr(cond_jaxpr)
  read = {id(v) for e in cj.eqns for v in e.invars} | {id(v) for v in cj.outvars}
  ncar = len(body_jaxpr.invars) - body_nconsts
  fwd = _forwarding(body_jaxpr)
  return [fwd[i] == body_nconsts + i and id(cj.invars[cond_nconsts + i]) not in read
          for i in range(ncar)]


def _carries_to_consts(cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts, move):
  """The cond and body jaxprs with the `move` carries dropped from the cond's inputs and
  the body's outputs, and made the body's first consts (JAX's order)."""
  cc_vars, c_car = _split(cond_jaxpr.invars, cond_nconsts)
  cj = dce_jaxpr(cond_jaxpr).replace(invars=cc_vars + _partition(c_car, move)[0])
  bc_vars, b_car = _split(body_jaxpr.invars, body_nconsts)
  kept, moved = _partition(b_car, move)
  bj = body_jaxpr.replace(invars=moved + bc_vars + kept,
                          outvars=_partition(body_jaxpr.outvars, move)[0])
  return cj, bj


def _partition(xs, which):
  """(the xs where not `which`, the xs where `which`)."""
  return [x for x, w in zip(xs, which) if not w], [x for x, w in zip(xs, which) if w]


def _merge(which, falses, trues):
  """Undo `_partition`."""
  falses, trues = iter(falses), iter(trues)
  return [next(trues) if w else next(falses) for w in which]


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll=None):
  """`for i in range(lower, upper): val = body_fun(i, val)`: a `scan` when the trip count
  is static (so reverse-mode works), a `while` otherwise (as JAX)."""
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  ld, ud = dtypes.dtype(lower, canonicalize=True), dtypes.dtype(upper, canonicalize=True)
  if ld == ud:
    dt = ld
  else:
    dt = None
    if np.dtype(ld).kind == "i" and np.dtype(ud).kind == "i":
      lw, uw = get_aval(lower).weak_type, get_aval(upper).weak_type
      dt = ud if lw and not uw else ld if uw and not lw else None
    if dt is None:
      raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                      f"{np.dtype(ld).name} and {np.dtype(ud).name}")
  concrete = [v if not isinstance(v, core.Tracer) else v.to_concrete_value()
              for v in (lower, upper)]
  if all(c is not None for c in concrete):
    lo, hi = int(concrete[0]), int(concrete[1])
    if unroll is None:
      unroll = False

    def scanned(carry, _):
      i, x = carry
      return (i + 1, body_fun(i, x)), None
    (_, result), _ = scan(scanned, (lo, init_val), None, length=max(hi - lo, 0),
                          unroll=unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are "
                     "statically known.")
  if ld != dt:
    lower = convert_element_type(lower, dt)
  if ud != dt:
    upper = convert_element_type(upper, dt)

  def body(carry):
    i, hi, x = carry
    return add(i, convert_element_type(1, get_aval(i).dtype)), hi, body_fun(i, x)
  _, _, result = while_loop(lambda c: lt(c[0], c[1]), body, (lower, upper, init_val))
  return result


# ------------------------------------------------------------------------------------
# scan
# ------------------------------------------------------------------------------------


def _nones(n: int) -> str:
  return str((None,) * n)


class ScanIn(NamedTuple):
  """Counts of scan's operands: consts, carry, xs (JAX prints its flat tree `ft_in`)."""
  consts: int
  carry: int
  xs: int

  def __repr__(self):
    return f"({_nones(self.consts)}, {_nones(self.carry)}, {_nones(self.xs)})"

  __str__ = __repr__


class ScanOut(NamedTuple):
  """Scan's outputs: the number of carries and, per ys of the body, whether the scan
  computes it (True) or it is forwarded from an xs by `lax.scan` (False)."""
  carry: int
  ys: tuple

  def __repr__(self):
    ys = [f"RightsOnly({'Right' if k else 'Left'}(None))" for k in self.ys]
    ys_s = "(" + ", ".join(ys) + ("," if len(ys) == 1 else "") + ")"
    return f"({_nones(self.carry)}, {ys_s})"

  __str__ = __repr__


scan_p = core.Primitive("scan", multiple_results=True)


def _scan_abstract_eval(*avals, jaxpr, length, reverse, unroll, ft_in, ft_out):
  nc, ncar, nxs = ft_in
  if len(avals) != nc + ncar + nxs:
    raise TypeError(f"scan: expected {nc + ncar + nxs} operands, got {len(avals)}")
  want = jaxpr.in_avals
  got = list(avals[:nc + ncar]) + [a.update(shape=a.shape[1:]) for a in avals[nc + ncar:]]
  for a, b in zip(got, want):
    if not _typematch(a, b):
      raise TypeError(f"scan: operand of type {a.str_short()} where the body takes "
                      f"{b.str_short()}")
  outs = jaxpr.out_avals
  carry = [a.update(weak_type=a.weak_type and b.weak_type)
           for a, b in zip(avals[nc:nc + ncar], outs[:ncar])]
  return carry + [a.update(shape=(length,) + a.shape) for a in outs[ncar:]]


def _scan_eval(*args, jaxpr, length, reverse, unroll, ft_in, ft_out):
  nc, ncar, nxs = ft_in
  consts, carry, xs = _split(args, nc, ncar)
  x_avals = jaxpr.in_avals[nc + ncar:]
  xs = [core.to_numpy(x) for x in xs]
  ys = []
  for t in range(length):
    i = length - 1 - t if reverse else t
    outs = core.eval_jaxpr(jaxpr, [], *consts, *carry,
                           *[Array(x[i], weak_type=a.weak_type) for x, a in zip(xs, x_avals)])
    carry, y = outs[:ncar], outs[ncar:]
    ys.append([core.to_numpy(v, a) for v, a in zip(y, jaxpr.out_avals[ncar:])])
  if reverse:
    ys.reverse()
  y_avals = jaxpr.out_avals[ncar:]
  stacked = [np.stack([y[k] for y in ys]) if ys else np.zeros((0,) + a.shape, a.dtype)
             for k, a in enumerate(y_avals)]
  return list(carry) + stacked


scan_p.abstract_eval = _scan_abstract_eval
scan_p.eval_rule = _scan_eval


def _bind_scan(consts, carry, xs, jaxpr, length, reverse, unroll):
  """scan_p.bind with every ys computed (what the rules bind)."""
  ncar = len(carry)
  return scan_p.bind(*consts, *carry, *xs, jaxpr=jaxpr, length=length, reverse=reverse,
                     unroll=unroll, ft_in=ScanIn(len(consts), ncar, len(xs)),
                     ft_out=ScanOut(ncar, (True,) * (len(jaxpr.outvars) - ncar)))


def _infer_length(xs_flat, length):
  lengths = []
  for x in xs_flat:
    shape = np.shape(x) if not hasattr(x, "shape") else x.shape
    if not shape:
      raise ValueError(f"scan got value with no leading axis to scan over: "
                       f"{get_aval(x).str_short()}.")
    lengths.append(shape[0])
  if length is not None:
    try:
      length = int(length)
    except (TypeError, errors.ConcretizationTypeError):
      raise errors.ConcretizationTypeError(
          "The `length` argument to `scan` expects a concrete `int` value. For scan-like "
          "iteration with a dynamic length, use `while_loop` or `fori_loop`.") from None
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with "
                       f"leading axis sizes {lengths}.")
    return length
  if len(set(lengths)) > 1:
    raise ValueError("scan got values with different leading axis sizes: "
                     + ", ".join(f"{get_aval(x).str_short()}" for x in xs_flat) + ".")
  if not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def scan(f: Callable, init, xs=None, length=None, reverse: bool = False, unroll=1,
         _split_transpose: bool = False):
  """Loop `carry, y = f(carry, x)` over the leading axis of `xs` (pytrees), stacking the
  ys: one `scan` equation (JAX's `lax.scan`)."""
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  init_flat, init_tree = tree_util.tree_flatten(init)
  xs_flat, xs_tree = tree_util.tree_flatten(xs)
  length = _infer_length(xs_flat, length)
  if _disable_jit():   # a Python loop (JAX)
    if length == 0:
      raise ValueError("zero-length scan is not supported in disable_jit() mode because "
                       "the output type is unknown.")
    carry, ys = init, []
    for i in (range(length - 1, -1, -1) if reverse else range(length)):
      carry, y = f(carry, tree_util.tree_map(lambda x: index_in_dim(x, i, keepdims=False),
                                             xs))
      ys.append(y)
    ys = ys[::-1] if reverse else ys
    return carry, tree_util.tree_map(lambda *ys: concatenate(
        [expand_dims(y, (0,)) for y in ys], 0), *ys)
  _, in_tree = tree_util.tree_flatten((init, xs))
  x_avals = [get_aval(x) for x in xs_flat]
  x_avals = [a.update(shape=a.shape[1:]) for a in x_avals]

  def body(*flat):
    carry, x = tree_util.tree_unflatten(in_tree, list(flat))
    out = f(carry, x)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      shown = tree_util.tree_map(lambda v: get_aval(v).str_short()
                                 if core.is_arraylike(v) else v, out)
      raise TypeError(f"scan body output must be a pair, got {shown}.")
    c_leaves, c_tree = tree_util.tree_flatten(out[0])
    y_leaves, y_tree = tree_util.tree_flatten(out[1])
    return c_leaves + y_leaves, (c_tree, y_tree)

  def create(vals):
    avals = [get_aval(v) for v in vals]
    jaxpr, consts, (c_tree, y_tree) = _trace(body, avals + x_avals, "scan body")
    return avals, jaxpr, consts, c_tree, y_tree
  avals, jaxpr, consts, c_tree, y_tree = create(init_flat)
  ncar = len(init_flat)
  if c_tree == init_tree:
    init_flat, changed = _promote_weak(init_flat, avals,
                                       jaxpr.out_avals[:ncar])
    if changed:
      avals, jaxpr, consts, c_tree, y_tree = create(init_flat)
  _check_carry_type("scan body", f, init_tree, avals, c_tree, jaxpr.out_avals[:ncar])
  if isinstance(unroll, (bool, np.bool_)):
    unroll = max(length, 1) if unroll else 1
  unroll = int(unroll)
  if unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  nc, nys = len(consts), len(jaxpr.outvars) - ncar
  # a carry the body returns unchanged is read-only: it becomes a (leading) const (JAX)
  move = [f == nc + i for i, f in enumerate(_forwarding(jaxpr)[:ncar])]
  init_all = list(init_flat)
  if any(move):
    jaxpr = _prune_outputs(jaxpr, [not m for m in move] + [True] * nys)
    cinv = jaxpr.invars[nc:nc + ncar]
    jaxpr = jaxpr.replace(invars=[v for v, m in zip(cinv, move) if m] + jaxpr.invars[:nc]
                          + [v for v, m in zip(cinv, move) if not m] + jaxpr.invars[nc + ncar:])
    consts = [x for x, m in zip(init_flat, move) if m] + list(consts)
    init_flat = [x for x, m in zip(init_flat, move) if not m]
    nc, ncar = len(consts), len(init_flat)
  # ys the body returns unchanged from xs are forwarded, not stacked again (JAX)
  fwd = _forwarding(jaxpr)[ncar:]
  ext = [i - nc - ncar if i is not None and i >= nc + ncar else None for i in fwd]
  keep = [e is None for e in ext]
  jaxpr = _prune_outputs(jaxpr, [True] * ncar + keep)
  outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=jaxpr, length=length,
                     reverse=bool(reverse), unroll=unroll,
                     ft_in=ScanIn(nc, ncar, len(xs_flat)), ft_out=ScanOut(ncar, tuple(keep)))
  carry, ys = iter(outs[:ncar]), iter(outs[ncar:])
  carry = [x if m else next(carry) for x, m in zip(init_all, move)]
  ys = [next(ys) if e is None else xs_flat[e] for e in ext]
  return tree_util.tree_unflatten(c_tree, carry), tree_util.tree_unflatten(y_tree, ys)


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - JAX's name
  """`f` applied to each slice of `xs` along axis 0 (a scan with no carry); with
  `batch_size`, `vmap(f)` over batches of that many slices (the remainder separately)."""
  if batch_size is not None:
    leaves, tree = tree_util.tree_flatten(xs)
    n = leaves[0].shape[0] if leaves else 0
    nb, rem = divmod(n, batch_size)
    batched = [reshape(slice_in_dim(x, 0, nb * batch_size, axis=0),
                           (nb, batch_size) + tuple(x.shape[1:])) for x in leaves]
    _, ys = scan(lambda _, x: ((), vmap(f)(x)), (), tree_util.tree_unflatten(tree, batched))
    ys = tree_util.tree_map(lambda y: reshape(y, (nb * batch_size,) + tuple(y.shape[2:])),
                            ys)
    if rem:
      tail = vmap(f)(tree_util.tree_unflatten(
          tree, [slice_in_dim(x, nb * batch_size, n, axis=0) for x in leaves]))
      ys = tree_util.tree_map(lambda a, b: concatenate([a, b], 0), ys, tail)
    return ys
  _, ys = scan(lambda _, x: ((), f(x)), (), xs)
  return ys


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
  """All prefix combinations `fn(..., fn(e0, e1), ...)` of `elems` along `axis`, by the
  parallel (Blelloch-style) recursion JAX uses: O(log n) levels of vectorized `fn` calls."""
  elems_flat, tree = tree_util.tree_flatten(elems)
  if not elems_flat:
    raise ValueError("associative_scan: elems must contain at least one array")
  ndim = len(get_aval(elems_flat[0]).shape)
  axis = axis + ndim if axis < 0 else axis
  if reverse:
    elems_flat = [rev(e, (axis,)) for e in elems_flat]
  n = get_aval(elems_flat[0]).shape[axis]
  if any(get_aval(e).shape[axis] != n for e in elems_flat):
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[get_aval(e).shape for e in elems_flat]})")

  def combine(a, b):
    out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
    out_flat, out_tree = tree_util.tree_flatten(out)
    if out_tree != tree:
      raise ValueError(f"The structure of the output of `fn` ({out_tree}) does not match "
                       f"the structure of the input ({tree}).")
    return out_flat

  def sl(x, start, stop=None, step=1):
    size = get_aval(x).shape[axis]
    stop = size if stop is None else stop
    return slice_in_dim(x, start, stop, stride=step, axis=axis)

  def interleave(a, b):
    # a has ceil(n/2) entries, b floor(n/2): pad both with interior zeros, then add
    na, nb = get_aval(a).shape[axis], get_aval(b).shape[axis]
    zero = convert_element_type(0, get_aval(a).dtype)
    cfg_a = [(0, 0, 0)] * ndim
    cfg_b = [(0, 0, 0)] * ndim
    cfg_a[axis] = (0, 1 if na == nb else 0, 1)
    cfg_b[axis] = (1, 0 if na == nb else 1, 1)
    if np.dtype(get_aval(a).dtype) == np.bool_:
      return bitwise_or(pad(a, zero, cfg_a), pad(b, zero, cfg_b))
    return add(pad(a, zero, cfg_a), pad(b, zero, cfg_b))

  def scan_rec(xs):
    num = get_aval(xs[0]).shape[axis]
    if num < 2:
      return xs
    reduced = combine([sl(x, 0, num - 1, 2) for x in xs], [sl(x, 1, None, 2) for x in xs])
    # a fusion boundary per level: fused, each level reads the one below twice (even and odd
    # elements), so a gradient's kernels grew exponentially with the depth (grad of a
    # length-33 cummax: minutes and gigabytes in LLVM)
    odd = optimization_barrier(scan_rec(reduced))
    if num % 2 == 0:
      even = combine([sl(e, 0, -1) for e in odd], [sl(x, 2, None, 2) for x in xs])
    else:
      even = combine(odd, [sl(x, 2, None, 2) for x in xs])
    even = [concatenate([sl(x, 0, 1), e], axis) for x, e in zip(xs, even)]
    return [interleave(e, o) for e, o in zip(even, odd)]

  out = scan_rec(elems_flat)
  if reverse:
    out = [rev(e, (axis,)) for e in out]
  return tree_util.tree_unflatten(tree, out)


# ------------------------------------------------------------------------------------
# Differentiation
# ------------------------------------------------------------------------------------

Zero = ad.Zero


def _nonzero(t) -> bool:
  return type(t) is not Zero


def _jvp_jaxpr(jaxpr: Jaxpr, nonzeros, instantiate):
  """The jvp of const-free `jaxpr`: invars (hoisted consts, primals, nonzero tangents),
  outvars (primals, tangents that are nonzero or `instantiate`d). (jaxpr, consts, out_nz)"""
  n = len(jaxpr.invars)
  nonzeros = [nz and ad.is_differentiable(a.dtype) for nz, a in zip(nonzeros, jaxpr.in_avals)]
  in_avals = list(jaxpr.in_avals) + [a for a, nz in zip(jaxpr.in_avals, nonzeros) if nz]
  out_nz: list = []

  def fun(*args):
    primals, nzt = args[:n], iter(args[n:])
    tangents = [next(nzt) if nz else Zero(ad.tangent_aval(a))
                for a, nz in zip(jaxpr.in_avals, nonzeros)]
    p_out, t_out, _ = ad.jvp_flat(lambda *xs: (core.eval_jaxpr(jaxpr, [], *xs), None),
                                  primals, tangents)
    out_nz[:] = [ad.is_differentiable(a.dtype) and (_nonzero(t) or inst)
                 for t, a, inst in zip(t_out, jaxpr.out_avals, instantiate)]
    return list(p_out) + [ad.instantiate_zeros(t) for t, nz in zip(t_out, out_nz) if nz]
  with ad.tracing_jvp_jaxpr():
    j, consts = _trace_jaxpr_fn(fun, in_avals)
  return j, consts, out_nz


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
  tjs, consts = _join_consts([ad.transpose_jaxpr(b, undefined, ct_nz) for b in branches])
  defined = [a for a, u in zip(args, undefined) if not u]
  outs = iter(cond_p.bind(index, *consts, *defined, *[c for c in cts if _nonzero(c)],
                          branches=tuple(tjs)))
  return [None] + [next(outs) if u else None for u in undefined]


cond_p.jvp = _cond_jvp
cond_p.transpose = _cond_transpose


def _carry_fixpoint(body: Jaxpr, const_nz, carry_nz, rest_nz, n_out):
  """Which carries have nonzero tangents: start from the inits', add what the body makes
  nonzero, until nothing changes."""
  ncar = len(carry_nz)
  for _ in range(ncar + 1):
    out_nz = _jvp_jaxpr(body, const_nz + carry_nz + rest_nz, [False] * n_out)[2]
    new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
    if new == carry_nz:
      break
    carry_nz = new
  return carry_nz


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, unroll, ft_in, ft_out):
  nc, ncar, nxs = ft_in
  nys = len(jaxpr.outvars) - ncar
  nz = [_nonzero(t) and ad.is_differentiable(a.dtype)
        for t, a in zip(tangents, jaxpr.in_avals)]
  c_nz, car_nz, x_nz = _split(nz, nc, ncar)
  car_nz = _carry_fixpoint(jaxpr, c_nz, car_nz, x_nz, ncar + nys)
  j, jconsts, out_nz = _jvp_jaxpr(jaxpr, c_nz + car_nz + x_nz, car_nz + [False] * nys)
  nk = len(jconsts) + nc + ncar + nxs
  n_t = sum(c_nz) + sum(car_nz) + sum(x_nz)
  n_tout = sum(out_nz)
  out_avals = scan_p.out_avals([core.get_aval(p) for p in primals],
                               dict(jaxpr=jaxpr, length=length, reverse=reverse, unroll=unroll,
                                    ft_in=ft_in, ft_out=ft_out))
  tc = [t for t, z in zip(tangents[:nc], c_nz) if z]
  tcar = [ad.instantiate_zeros(t) for t, z in zip(tangents[nc:nc + ncar], car_nz) if z]
  tx = [t for t, z in zip(tangents[nc + ncar:], x_nz) if z]
  if not ad.is_linearizing(primals, tc + tcar + tx):
    # forward mode, as JAX: one scan over (consts, their tangents), (carry, tangents),
    # (xs, tangents), giving (carry, tangents) and (ys, tangents)
    jc, pc, pcar, pxs, jtc, jtcar, jtx = _split(j.invars, len(jconsts), nc, ncar, nxs,
                                                sum(c_nz), sum(car_nz))
    ocar, oys, otcar, otys = _split(j.outvars, ncar, nys, sum(car_nz))
    jf = j.replace(invars=jc + pc + jtc + pcar + jtcar + pxs + jtx,
                   outvars=ocar + otcar + oys + otys)
    outs = _bind_scan([*jconsts, *primals[:nc], *tc], [*primals[nc:nc + ncar], *tcar],
                      [*primals[nc + ncar:], *tx], jf, length, reverse, unroll)
    ncart = sum(car_nz)
    p_out = outs[:ncar] + outs[ncar + ncart:ncar + ncart + nys]
    t_nz = iter(outs[ncar:ncar + ncart] + outs[ncar + ncart + nys:])
    return p_out, [next(t_nz) if z else Zero(ad.tangent_aval(a))
                   for z, a in zip(out_nz, out_avals)]
  # linearize: hoist the loop-invariant primal work (equations reading consts only) out
  # of the loop, as JAX's scan partial eval; its results are the consts of both scans
  n_inv = len(jconsts) + nc
  hoist, j, _, h_res = partial_eval_jaxpr(j, [False] * n_inv + [True] * (len(j.invars) - n_inv),
                                          [True] * len(j.outvars))
  const_vals = core.eval_jaxpr(hoist, [], *jconsts, *primals[:nc])
  n_inv = len(h_res)
  nk = n_inv + ncar + nxs
  known, unknown, _, res = partial_eval_jaxpr(j, [False] * nk + [True] * n_t,
                                         [False] * (ncar + nys) + [True] * n_tout)
  # residuals: loop invariants (consts) and xs go to the tangent scan as they are; the
  # others are stacked per iteration by the primal scan
  pos = {id(v): i for i, v in enumerate(j.invars[:nk])}
  xs_vals = primals[nc + ncar:]
  kind = []
  for v in res:
    i = pos.get(id(v))
    kind.append("const" if i is not None and i < n_inv else
                "xs" if i is not None and i >= n_inv + ncar else "stack")
  n_known_out = ncar + nys
  keep = [True] * n_known_out + [k == "stack" for k in kind]
  known = _prune_outputs(known, keep)
  outs = _bind_scan(const_vals, primals[nc:nc + ncar], xs_vals, known, length, reverse, unroll)
  p_out, stacked = outs[:n_known_out], iter(outs[n_known_out:])
  nres = len(res)
  u_res, u_t = unknown.invars[:nres], unknown.invars[nres:]
  t_c, t_car, t_x = _split(u_t, sum(c_nz), sum(car_nz))
  by = {"const": [], "stack": [], "xs": []}
  vals = {"const": [], "stack": [], "xs": []}
  for v, k, r in zip(u_res, kind, res):
    by[k].append(v)
    if k == "const":
      vals[k].append(const_vals[pos[id(r)]])
    elif k == "xs":
      vals[k].append(xs_vals[pos[id(r)] - n_inv - ncar])
    else:
      vals[k].append(next(stacked))
  unknown = unknown.replace(invars=by["const"] + t_c + t_car + by["stack"] + by["xs"] + t_x)
  t_outs = iter(_bind_scan(vals["const"] + tc, tcar, vals["stack"] + vals["xs"] + tx,
                           unknown, length, reverse, unroll) if n_tout else [])
  return p_out, [next(t_outs) if z else Zero(ad.tangent_aval(a))
                 for z, a in zip(out_nz, out_avals)]


def _scan_transpose(cts, *args, jaxpr, length, reverse, unroll, ft_in, ft_out):
  nc, ncar, nxs = ft_in
  consts, carry, xs = _split(args, nc, ncar)
  c_lin = [ad.is_undefined_primal(a) for a in consts]
  x_lin = [ad.is_undefined_primal(a) for a in xs]
  # the scan is linear in every carry (a defined one is an instantiated zero tangent)
  car_lin = [ad.is_undefined_primal(a) for a in carry]
  ct_carry = [ad.instantiate_zeros(c) for c in cts[:ncar]]
  ct_ys = [ad.instantiate_zeros(c) for c in cts[ncar:]]
  res_c = [a for a, l in zip(consts, c_lin) if not l]
  res_x = [a for a, l in zip(xs, x_lin) if not l]
  lin_c_avals = [ad.tangent_aval(a.aval) for a, l in zip(consts, c_lin) if l]
  nys = len(ct_ys)
  tj, tconsts = ad.transpose_jaxpr(jaxpr, c_lin + [True] * ncar + x_lin, [True] * (ncar + nys))
  nlc = len(lin_c_avals)

  def body(*a):
    tc, rc, acc, cc, rx, cy = _split(a, len(tconsts), len(res_c), nlc, ncar, len(res_x))
    outs = core.eval_jaxpr(tj, [], *tc, *rc, *rx, *cc, *cy)
    d_c, d_car, d_x = _split(outs, nlc, ncar)
    return [ad.add_any_p.bind(s, d) for s, d in zip(acc, d_c)] + d_car + d_x
  sliced = lambda v: core.get_aval(v).update(shape=core.get_aval(v).shape[1:])
  avals = ([core.get_aval(v) for v in (*tconsts, *res_c)] + lin_c_avals
           + [core.get_aval(c) for c in ct_carry] + [sliced(x) for x in (*res_x, *ct_ys)])
  bj, bconsts = _trace_jaxpr_fn(body, avals)
  acc0 = [ad.zeros_like_aval(a) for a in lin_c_avals]
  outs = _bind_scan([*bconsts, *tconsts, *res_c], [*acc0, *ct_carry], [*res_x, *ct_ys], bj,
                    length, not reverse, unroll)
  d_c, d_car, d_x = iter(outs[:nlc]), outs[nlc:nlc + ncar], iter(outs[nlc + ncar:])
  return ([next(d_c) if l else None for l in c_lin]
          + [d if l else None for d, l in zip(d_car, car_lin)]
          + [next(d_x) if l else None for l in x_lin])


scan_p.jvp = _scan_jvp
scan_p.transpose = _scan_transpose


def _while_jvp(primals, tangents, *, cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts):
  """One loop over primal and tangent carries together (forward mode, as JAX). Under
  linearize, as JAX's partial evaluation of while: the primal loop gives the primal
  outputs, and the joined loop, which recomputes the primals, lands in the linear jaxpr
  for the tangents (its transpose is JAX's error)."""
  params = dict(cond_jaxpr=cond_jaxpr, cond_nconsts=cond_nconsts, body_jaxpr=body_jaxpr,
                body_nconsts=body_nconsts)
  cc, bc, init = _split(primals, cond_nconsts, body_nconsts)
  _, bt, it = _split(tangents, cond_nconsts, body_nconsts)
  ncar = len(init)
  diff = [ad.is_differentiable(a.dtype) for a in body_jaxpr.in_avals]
  bc_nz = [_nonzero(t) and d for t, d in zip(bt, diff[:body_nconsts])]
  car_nz = [_nonzero(t) and d for t, d in zip(it, diff[body_nconsts:])]
  car_nz = _carry_fixpoint(body_jaxpr, bc_nz, car_nz, [], ncar)
  nz_t = [t for t, z in zip([*bt, *it], [*bc_nz, *car_nz]) if z]
  linearizing = ad.is_linearizing(primals, nz_t)
  if linearizing or not any(car_nz):
    p_out = while_p.bind(*primals, **params)
  if not any(car_nz):
    return p_out, [Zero(ad.tangent_aval(a)) for a in body_jaxpr.out_avals]
  bj, bjc, _ = _jvp_jaxpr(body_jaxpr, bc_nz + car_nz, car_nz)
  nbj = len(bjc)
  jc, jb, jcar, jbt, jct = _split(bj.invars, nbj, body_nconsts, ncar, sum(bc_nz))
  bj = bj.replace(invars=jc + jb + jbt + jcar + jct)
  t_avals = [a for a, z in zip(body_jaxpr.out_avals, car_nz) if z]
  nci = len(cond_jaxpr.invars)  # retraced: fresh variables, as JAX prints them
  cj, _ = _trace_jaxpr_fn(lambda *xs: core.eval_jaxpr(cond_jaxpr, [], *xs[:nci]),
                          cond_jaxpr.in_avals + t_avals)
  bts = [t for t, z in zip(bt, bc_nz) if z]
  its = [ad.instantiate_zeros(t) for t, z in zip(it, car_nz) if z]
  outs = while_p.bind(*cc, *bjc, *bc, *bts, *init, *its, cond_jaxpr=cj,
                      cond_nconsts=cond_nconsts, body_jaxpr=bj,
                      body_nconsts=nbj + body_nconsts + len(bts))
  if not linearizing:
    p_out = outs[:ncar]
  t_out = iter(outs[ncar:])
  return p_out, [next(t_out) if z else Zero(ad.tangent_aval(a))
                 for z, a in zip(car_nz, body_jaxpr.out_avals)]


def _while_transpose_error(*_, **__):
  raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                   "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or "
                   "using fori_loop with static start/stop.")


while_p.jvp = _while_jvp
while_p.transpose = _while_transpose_error


# ------------------------------------------------------------------------------------
# Batching
# ------------------------------------------------------------------------------------


def _batch_jaxpr_front(jaxpr: Jaxpr, axis_data, in_dims, force):
  """`jaxpr` batched at `in_dims`, its outputs batched at 0 (or unbatched where the body
  leaves them so and `force` is False): (jaxpr, consts, out_dims)."""
  closed, out_dims = batching.batch_jaxpr(jaxpr, axis_data, in_dims)
  dims = [0 if (d is not None or f) else None for d, f in zip(out_dims, force)]

  def fn(*args):
    outs = core.eval_jaxpr(closed, closed.consts, *args)
    return [batching.bdim_at_front(o, d, axis_data.size) if nd == 0 else o
            for o, d, nd in zip(outs, out_dims, dims)]
  j, consts = _trace_jaxpr_fn(fn, closed.in_avals)
  return j, consts, dims


def _to_front(x, d, size, batched):
  return batching.bdim_at_front(x, d, size) if batched else x


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


def _while_batch(axis_data, vals, dims, *, cond_jaxpr, cond_nconsts, body_jaxpr,
                 body_nconsts):
  size = axis_data.size
  cc, bc, init = _split(vals, cond_nconsts, body_nconsts)
  ccd, bcd, initd = _split(dims, cond_nconsts, body_nconsts)
  car_b = [d is not None for d in initd]
  for _ in range(len(init) + 1):
    _, out_dims = batching.batch_jaxpr(body_jaxpr, axis_data,
                                       bcd + [0 if b else None for b in car_b])
    new = [b or d is not None for b, d in zip(car_b, out_dims)]
    if new == car_b:
      break
    car_b = new
  _, pd = batching.batch_jaxpr(cond_jaxpr, axis_data, ccd + [0 if b else None for b in car_b])
  pred_b = pd[0] is not None
  if pred_b:
    car_b = [True] * len(init)
  init = [_to_front(x, d, size, b) for x, d, b in zip(init, initd, car_b)]
  cdims = [0 if b else None for b in car_b]
  bj, bjc, _ = _batch_jaxpr_front(body_jaxpr, axis_data, bcd + cdims, car_b)
  cj, cjc, _ = _batch_jaxpr_front(cond_jaxpr, axis_data, ccd + cdims, [pred_b])
  if not pred_b:
    outs = while_p.bind(*cjc, *cc, *bjc, *bc, *init, cond_jaxpr=cj,
                        cond_nconsts=len(cjc) + len(cc), body_jaxpr=bj,
                        body_nconsts=len(bjc) + len(bc))
    return outs, cdims
  # a batched predicate: loop while any example continues; finished ones keep their carry
  ccv, bcv = [*cjc, *cc], [*bjc, *bc]
  c_avals = [core.get_aval(x) for x in ccv]
  b_avals = [core.get_aval(x) for x in bcv]
  carry_avals = [core.get_aval(x) for x in init]

  def new_cond(*a):
    return [reduce_or(core.eval_jaxpr(cj, [], *a)[0], (0,))]

  def new_body(*a):
    c_consts, b_consts, carry = _split(a, len(ccv), len(bcv))
    p = core.eval_jaxpr(cj, [], *c_consts, *carry)[0]
    new = core.eval_jaxpr(bj, [], *b_consts, *carry)
    return [select(broadcast_in_dim(p, core.get_aval(c).shape, (0,)), n, c)
            for n, c in zip(new, carry)]
  ncj, ncjc = _trace_jaxpr_fn(new_cond, c_avals + carry_avals)
  nbj, nbjc = _trace_jaxpr_fn(new_body, c_avals + b_avals + carry_avals)
  outs = while_p.bind(*ncjc, *ccv, *nbjc, *ccv, *bcv, *init, cond_jaxpr=ncj,
                      cond_nconsts=len(ncjc) + len(ccv), body_jaxpr=nbj,
                      body_nconsts=len(nbjc) + len(ccv) + len(bcv))
  return outs, [0] * len(outs)


while_p.batch = _while_batch


def _scan_batch(axis_data, vals, dims, *, jaxpr, length, reverse, unroll, ft_in, ft_out):
  size = axis_data.size
  nc, ncar, nxs = ft_in
  nys = len(jaxpr.outvars) - ncar
  consts, init, xs = _split(vals, nc, ncar)
  cd, initd, xd = _split(dims, nc, ncar)
  xs = [batching.moveaxis(x, d, 1) if d is not None else x for x, d in zip(xs, xd)]
  x_in = [0 if d is not None else None for d in xd]
  car_b = [d is not None for d in initd]
  for _ in range(ncar + 1):
    _, out_dims = batching.batch_jaxpr(jaxpr, axis_data,
                                       cd + [0 if b else None for b in car_b] + x_in)
    new = [b or d is not None for b, d in zip(car_b, out_dims[:ncar])]
    if new == car_b:
      break
    car_b = new
  init = [_to_front(x, d, size, b) for x, d, b in zip(init, initd, car_b)]
  bj, bjc, out_dims = _batch_jaxpr_front(
      jaxpr, axis_data, cd + [0 if b else None for b in car_b] + x_in,
      car_b + [False] * nys)
  outs = _bind_scan([*bjc, *consts], init, xs, bj, length, reverse, unroll)
  return outs, out_dims[:ncar] + [1 if d == 0 else None for d in out_dims[ncar:]]


scan_p.batch = _scan_batch


# ------------------------------------------------------------------------------------
# Lowering: cond -> `conditional` (stablehlo.case), while and scan -> `while`
# ------------------------------------------------------------------------------------


def _result_shape(avals):
  shapes = tuple(Shape.of(a) for a in avals)
  return shapes[0] if len(shapes) == 1 else TupleShape(shapes)


def _outs(ctx, instr, n):
  return ctx.unpack(instr) if n != 1 else [instr]


def _cond_lower(ctx, index, *args, branches):
  comps = [ctx.lower_computation(b, f"branch_{k}_fun") for k, b in enumerate(branches)]
  avals = branches[0].out_avals
  out = ctx.emit("conditional", _result_shape(avals), [index, *args], called=comps)
  return _outs(ctx, out, len(avals))


cond_p.lower = _cond_lower


def _staged(fn, avals) -> Jaxpr:
  """The closed jaxpr of `fn(*tracers) -> list` (its consts become HLO constants)."""
  closed, _ = core.trace_to_jaxpr(lambda *xs: (list(fn(*xs)), None), list(avals))
  return closed


def _emit_while(ctx, cond_fn, body_fn, state, avals, name):
  """A `while` over `state` (HLO instrs of `avals`): condition and body computations are
  lowered from `cond_fn(*state) -> [pred]` / `body_fn(*state) -> state`."""
  cond_c = ctx.lower_computation(_staged(cond_fn, avals), f"{name}_cond")
  body_c = ctx.lower_computation(_staged(body_fn, avals), f"{name}_body")
  out = ctx.emit("while", _result_shape(avals), list(state), called=[cond_c, body_c])
  return _outs(ctx, out, len(avals))


def _while_lower(ctx, *args, cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts):
  nc = cond_nconsts + body_nconsts
  avals = ctx.avals_in

  def cond_fn(*s):
    return core.eval_jaxpr(cond_jaxpr, [], *s[:cond_nconsts], *s[nc:])

  def body_fn(*s):
    return list(s[:nc]) + list(core.eval_jaxpr(body_jaxpr, [], *s[cond_nconsts:]))
  return _emit_while(ctx, cond_fn, body_fn, args, avals, "while")[nc:]


while_p.lower = _while_lower


def _scan_lower(ctx, *args, jaxpr, length, reverse, unroll, ft_in, ft_out):
  """scan as JAX lowers it: a `while` over (i, consts, carry, xs, ys buffers) whose body
  reads x_i with a dynamic slice and writes y_i with a dynamic update slice."""
  nc, ncar, nxs = ft_in
  y_avals = [a.update(shape=(length,) + a.shape) for a in jaxpr.out_avals[ncar:]]
  i32 = ShapedArray((), np.int32)
  avals = [i32] + list(ctx.avals_in) + y_avals
  n_in = nc + ncar + nxs

  if length == 0:   # no iteration: the carry as given, empty ys
    return list(args[nc:nc + ncar]) + [ctx.full(0, a.dtype, a.shape) for a in y_avals]

  def cond_fn(limit):
    return lambda i, *_: [lt(i, np.int32(limit))]

  def body_fn(steps):   # `steps` iterations of the scan per iteration of the while
    def fn(i, *s):
      consts, carry, xs, ys = _split(s, nc, ncar, nxs)
      zeros = lambda n: [np.int32(0)] * n
      for _ in range(steps):
        t = sub(np.int32(length - 1), i) if reverse else i
        x = [reshape(indexing.dynamic_slice(v, [t] + zeros(v.ndim - 1),
                                                (1,) + tuple(v.shape[1:]),
                                                allow_negative_indices=False), v.shape[1:])
             for v in xs]
        outs = core.eval_jaxpr(jaxpr, [], *consts, *carry, *x)
        carry = outs[:ncar]
        ys = [indexing.dynamic_update_slice(
            buf, reshape(y, (1,) + tuple(buf.shape[1:])), [t] + zeros(buf.ndim - 1),
            allow_negative_indices=False) for buf, y in zip(ys, outs[ncar:])]
        i = add(i, np.int32(1))
      return [i, *consts, *carry, *xs, *ys]
    return fn
  # unroll: blocks of `unroll` iterations in one loop body, then the remaining iterations
  u = length if unroll == 0 else max(1, min(int(unroll), length))
  state = ([ctx.constant(np.int32(0))] + list(args)
           + [ctx.full(0, a.dtype, a.shape) for a in y_avals])
  blocks, rem = divmod(length, u)
  state = _emit_while(ctx, cond_fn(blocks * u), body_fn(u), state, avals, "scan")
  if rem:
    state = _emit_while(ctx, cond_fn(length), body_fn(1), state, avals, "scan")
  return state[1 + nc:1 + nc + ncar] + state[1 + n_in:]


scan_p.lower = _scan_lower

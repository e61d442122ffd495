"""`while`, the higher-order loop primitive, and the `lax` functions that bind it:
while_loop and fori_loop (a `scan` when its trip count is static, so that reverse-mode
differentiation works, as JAX). With its rules: abstract eval, eager evaluation (a Python
loop running the jaxprs with `eval_jaxpr`), jvp (one loop over primal and tangent carries;
its transpose is JAX's error), batching (a batched predicate loops while any example
continues) and lowering (`while`).

Convention (JAX's): `while[cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts] *cconsts
*bconsts *init`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import get_aval
from ember._src.primitives import eager_jit
from ember._src.primitives.control.common import (
    Zero, _batch_jaxpr_front, _carry_fixpoint, _check_carry_type, _disable_jit, _emit_while,
    _forwarding, _jvp_jaxpr, _map, _new_refs, _nonzero, _promote_weak, _ref_values,
    _set_ref_values, _split, _to_front, _trace_jaxpr_fn, _trace_pytree, _typematch,
    _with_avals)
from ember._src.primitives.control.scans import scan
from ember._src.primitives.elementwise import add, convert_element_type, lt, select
from ember._src.primitives.reductions import reduce_or
from ember._src.primitives.structural import broadcast_in_dim
from ember._src.transforms import ad, batching
from ember._src.transforms.partial_eval import dce_jaxpr, dce_sub

__all__ = ["while_loop", "fori_loop"]


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
  return list(outs)   # JAX's: the body's output types (a strong init may come out weak)


def _while_eval(*args, cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts):
  cconsts, bconsts, carry = _split(args, cond_nconsts, body_nconsts)
  while bool(core.to_numpy(core.eval_jaxpr(cond_jaxpr, [], *cconsts, *carry)[0])):
    carry = core.eval_jaxpr(body_jaxpr, [], *bconsts, *carry)
  return _with_avals(carry, _while_abstract_eval(
      *_map(core.get_aval, args), cond_jaxpr=cond_jaxpr, cond_nconsts=cond_nconsts,
      body_jaxpr=body_jaxpr, body_nconsts=body_nconsts))


while_p.abstract_eval = _while_abstract_eval
while_p.eval_rule = _while_eval


def while_loop(cond_fun: Callable, body_fun: Callable, init_val, _threaded_refs: tuple = ()):
  """`while cond_fun(val): val = body_fun(val)`, staged as one `while`. Refs from outside
  that the functions read or write are extra carries (`_threaded_refs`: those already
  threaded)."""
  if not (callable(cond_fun) and callable(body_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if _disable_jit():   # a Python loop (JAX)
    val = init_val
    while cond_fun(val):
      val = body_fun(val)
    return val
  if eager_jit.applies(init_val):   # one compiled call per (functions, types), as JAX runs it
    return eager_jit.call(body_fun, ("while", cond_fun), _while_compiled, init_val)
  init_flat, in_tree = tree_util.tree_flatten(init_val)
  frames: list = []

  def create(vals):
    avals = [get_aval(v) for v in vals]
    cj, cc, ctree = _trace_pytree(cond_fun, in_tree, avals, "cond_fun", frames)
    if (ctree.num_leaves != 1 or len(cj.out_avals) != 1 or cj.out_avals[0].shape != ()
        or cj.out_avals[0].dtype != np.bool_):
      raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                      f"{cj.out_avals}.")
    bj, bc, btree = _trace_pytree(body_fun, in_tree, avals, "body_fun", frames)
    return avals, cj, cc, bj, bc, btree
  avals, cj, cc, bj, bc, btree = create(init_flat)
  new_refs = _new_refs(frames, _threaded_refs)
  if new_refs:
    return _while_threading(cond_fun, body_fun, init_val, (*_threaded_refs, *new_refs))
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


def _while_threading(cond_fun, body_fun, init_val, rs):
  """while_loop of the functions, the refs `rs` (from outside) threaded as carries."""
  def cond(state):
    val, values = state
    _set_ref_values(rs, values)
    return cond_fun(val)

  def body(state):
    val, values = state
    _set_ref_values(rs, values)
    val = body_fun(val)
    return val, _ref_values(rs)
  val, values = while_loop(cond, body, (init_val, _ref_values(rs)), _threaded_refs=rs)
  _set_ref_values(rs, values)
  return val


def _while_compiled(body_fun, static, init_val):
  return while_loop(static[1], body_fun, init_val)


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
    if eager_jit.applies(init_val):   # the bounds static, of their own types
      bounds = [b if type(b) is int else np.dtype(dt or ld).type(c)
                for b, c in zip((lower, upper), (lo, hi))]
      return eager_jit.call(body_fun, ("fori", *bounds, *map(type, bounds), unroll),
                            _fori_compiled, init_val)

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
# Differentiation
# ------------------------------------------------------------------------------------


def _fori_compiled(body_fun, static, init_val):
  _, lo, hi, _, _, unroll = static
  return fori_loop(lo, hi, body_fun, init_val, unroll=unroll)


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


def _while_dce(used_outputs, eqn):
  """The loop with only the live carries: used after it, read by the condition, or read by
  the body for a live carry (a fixpoint), and the consts those read (JAX's
  `_while_dce_rule`). A linear loop whose tangents nothing needs goes, with its error."""
  p = eqn.params
  cj, bj, cn, bn = p["cond_jaxpr"], p["body_jaxpr"], p["cond_nconsts"], p["body_nconsts"]
  ncar = len(eqn.outvars)
  live = [u or r for u, r in zip(used_outputs, dce_sub(cj, [True])[1][cn:])]
  for _ in range(ncar + 1):
    new = [a or b for a, b in zip(live, dce_sub(bj, live)[1][bn:])]
    if new == live:
      break
    live = new
  nbj, b_used = dce_sub(bj, live, [False] * bn + live)
  ncj, c_used = dce_sub(cj, [True], [False] * cn + live)
  if nbj is bj and ncj is cj:
    return [True] * len(eqn.invars), eqn
  used_in = c_used[:cn] + b_used[:bn] + live
  params = dict(p, cond_jaxpr=ncj, body_jaxpr=nbj, cond_nconsts=sum(c_used[:cn]),
                body_nconsts=sum(b_used[:bn]))
  return used_in, eqn.replace(invars=[v for v, u in zip(eqn.invars, used_in) if u],
                              outvars=[v for v, u in zip(eqn.outvars, live) if u],
                              params=params)


while_p.jvp = _while_jvp
while_p.transpose = _while_transpose_error
while_p.dce = _while_dce


# ------------------------------------------------------------------------------------
# Batching
# ------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------
# Lowering
# ------------------------------------------------------------------------------------


def _while_lower(ctx, *args, cond_jaxpr, cond_nconsts, body_jaxpr, body_nconsts):
  nc = cond_nconsts + body_nconsts
  avals = ctx.avals_in

  def cond_fn(*s):
    return core.eval_jaxpr(cond_jaxpr, [], *s[:cond_nconsts], *s[nc:])

  def body_fn(*s):
    return list(s[:nc]) + list(core.eval_jaxpr(body_jaxpr, [], *s[cond_nconsts:]))
  return _emit_while(ctx, cond_fn, body_fn, args, avals, "while")[nc:]


while_p.lower = _while_lower

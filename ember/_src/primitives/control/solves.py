"""`linear_solve`, the higher-order primitive of `lax.custom_linear_solve`: x = solve(b) for
a linear map `matvec`, differentiated without differentiating `solve` (which may iterate).

Convention (JAX's): `linear_solve[const_lengths=..., jaxprs=...] *consts b...`, the consts
of matvec, vecmat, solve and transpose_solve in that order, each sub-jaxpr taking its consts
then the vector's leaves. Rules: eager evaluation and lowering run the solve jaxpr; jvp:
x' = solve(b' - matvec'(x)) (matvec' the derivative in matvec's consts), itself a
linear_solve; transpose: b_ct = transpose_solve(x_ct) with matvec and vecmat swapped;
batching: every sub-jaxpr batched, the vector batched at 0. With `has_aux`, solve's extra
outputs follow the solution and carry no derivative.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ember._src import core
from ember._src.base import tree_util
from ember._src.primitives.control.common import (
    Zero, _batch_jaxpr_front, _to_front, _trace_jaxpr_fn)
from ember._src.transforms import ad

__all__ = ["custom_linear_solve"]


class _LinearSolveTuple(NamedTuple):
  matvec: object
  vecmat: object
  solve: object
  transpose_solve: object

  def transpose(self):
    return type(self)(self.vecmat, self.matvec, self.transpose_solve, self.solve)


linear_solve_p = core.Primitive("linear_solve", multiple_results=True)


def _split(args, const_lengths):
  out, i = [], 0
  for n in const_lengths:
    out.append(list(args[i:i + n]))
    i += n
  return _LinearSolveTuple(*out), list(args[i:])


def _abstract_eval(*args, const_lengths, jaxprs):
  _, b = _split(args, const_lengths)
  want = jaxprs.solve.in_avals[const_lengths.solve:]
  if [(a.shape, a.dtype) for a in b] != [(a.shape, a.dtype) for a in want]:
    raise TypeError(f"linear_solve: b {[a.str_short() for a in b]} does not match solve's "
                    f"input {[a.str_short() for a in want]}")
  return list(jaxprs.solve.out_avals)


def _eval(*args, const_lengths, jaxprs):
  consts, b = _split(args, const_lengths)
  return core.eval_jaxpr(jaxprs.solve, [], *consts.solve, *b)


linear_solve_p.abstract_eval = _abstract_eval
linear_solve_p.eval_rule = _eval
linear_solve_p.lower = lambda ctx, *args, const_lengths, jaxprs: ctx.call(
    jaxprs.solve, "solve", list(_split(args, const_lengths)[0].solve)
    + list(_split(args, const_lengths)[1]))


def _jvp(primals, tangents, *, const_lengths, jaxprs):
  params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
  out = linear_solve_p.bind(*primals, **params)
  consts, b = _split(primals, const_lengths)
  consts_dot, b_dot = _split(tangents, const_lengths)
  x = out[:len(b)]
  rhs = [ad.instantiate_zeros(t) if type(t) is Zero else t for t in b_dot]
  if any(type(t) is not Zero for t in consts_dot.matvec):
    _, mv_dot, _ = ad.jvp_flat(
        lambda *c: (core.eval_jaxpr(jaxprs.matvec, [], *c, *x), None),
        consts.matvec, consts_dot.matvec)
    rhs = [r if type(m) is Zero else ad.add_tangents(r, _neg(m)) for r, m in zip(rhs, mv_dot)]
  if all(type(t) is Zero for t in rhs) or not any(
      type(t) is not Zero for t in list(b_dot) + list(consts_dot.matvec)):
    return out, [Zero.from_value(o) for o in out]
  rhs = [ad.instantiate_zeros(t) for t in rhs]
  x_dot = linear_solve_p.bind(*_flat_consts(consts), *rhs, **params)[:len(b)]
  return out, list(x_dot) + [Zero.from_value(o) for o in out[len(b):]]


def _neg(x):
  # deferred: the elementwise family sits beside this one
  from ember._src.primitives.elementwise import neg
  return neg(x)


def _flat_consts(consts):
  return [c for group in consts for c in group]


def _transpose(cts, *args, const_lengths, jaxprs):
  if jaxprs.transpose_solve is None:
    raise TypeError("transpose_solve required for backwards mode automatic differentiation "
                    "of custom_linear_solve")
  consts, b = _split(args, const_lengths)
  if any(ad.is_undefined_primal(c) for c in _flat_consts(consts)):
    raise TypeError("custom_linear_solve is linear in b only: its consts cannot be "
                    "transposed")
  ct_x = [ad.instantiate_zeros(c) for c in cts[:len(b)]]
  ct_b = linear_solve_p.bind(*_flat_consts(consts.transpose()), *ct_x,
                             const_lengths=const_lengths.transpose(),
                             jaxprs=jaxprs.transpose())[:len(b)]
  return [None] * len(_flat_consts(consts)) + list(ct_b)


linear_solve_p.jvp = _jvp
linear_solve_p.transpose = _transpose


def _batch(axis_data, vals, dims, *, const_lengths, jaxprs):
  size = axis_data.size
  consts, b = _split(vals, const_lengths)
  cdims, bdims = _split(dims, const_lengths)
  b = [_to_front(v, d, size, True) for v, d in zip(b, bdims)]   # x is batched: so is b
  new_consts, new_jaxprs = [], []
  for j, cs, ds in zip(jaxprs, consts, cdims):
    if j is None:
      new_consts.append([])
      new_jaxprs.append(None)
      continue
    cs = [_to_front(v, d, size, d is not None) for v, d in zip(cs, ds)]
    in_dims = [0 if d is not None else None for d in ds] + [0] * len(b)
    bj, hoisted, _ = _batch_jaxpr_front(j, axis_data, in_dims, [True] * len(j.outvars))
    new_consts.append(list(hoisted) + cs)
    new_jaxprs.append(bj)
  lengths = _LinearSolveTuple(*map(len, new_consts))
  out = linear_solve_p.bind(*_flat_consts(new_consts), *b, const_lengths=lengths,
                            jaxprs=_LinearSolveTuple(*new_jaxprs))
  return out, [0] * len(out)


linear_solve_p.batch = _batch


# --- custom_linear_solve ----------------------------------------------------------------

def _trace_vector_fn(fn: Callable, tree, avals, what: str, n_aux_out: list | None = None):
  """`fn` of a vector (a pytree of `tree`) as a const-free jaxpr over its leaves."""
  def flat(*leaves):
    out = fn(tree_util.tree_unflatten(tree, leaves))
    if n_aux_out is not None:
      sol, aux = out
      aux_leaves = tree_util.tree_leaves(aux)
      n_aux_out[:] = [tree_util.tree_structure(aux), len(aux_leaves)]
      out = sol
    else:
      aux_leaves = []
    if tree_util.tree_structure(out) != tree:
      raise TypeError(f"{what}() output pytree structure must match b, got "
                      f"{tree_util.tree_structure(out)} and {tree}.")
    return tree_util.tree_leaves(out) + aux_leaves
  return _trace_jaxpr_fn(flat, avals)


def custom_linear_solve(matvec: Callable, b, solve: Callable, transpose_solve=None,
                        symmetric: bool = False, has_aux: bool = False):
  """`solve(matvec, b)`, differentiated implicitly: forward mode solves again for the
  tangent; reverse mode uses `transpose_solve(vecmat, b)` (or `solve` when `symmetric`)."""
  b_leaves, tree = tree_util.tree_flatten(b)
  avals = [core.get_aval(x) for x in b_leaves]
  matvec_j, matvec_c = _trace_vector_fn(matvec, tree, avals, "matvec")
  aux_info: list = []
  solve_j, solve_c = _trace_vector_fn(lambda v: solve(matvec, v), tree, avals, "solve",
                                      aux_info if has_aux else None)
  if symmetric:
    vecmat_j, vecmat_c = matvec_j, matvec_c
    tsolve_j, tsolve_c = solve_j, solve_c
  else:
    vecmat_j, vecmat_c = None, []
    tsolve_j, tsolve_c = None, []
    if transpose_solve is not None:
      vecmat = _transpose_of(matvec, b)
      vecmat_j, vecmat_c = _trace_vector_fn(vecmat, tree, avals, "vecmat")
      tsolve_j, tsolve_c = _trace_vector_fn(lambda v: transpose_solve(vecmat, v), tree, avals,
                                            "transpose_solve")
  consts = _LinearSolveTuple(matvec_c, vecmat_c, solve_c, tsolve_c)
  out = linear_solve_p.bind(
      *_flat_consts(consts), *b_leaves,
      const_lengths=_LinearSolveTuple(*map(len, consts)),
      jaxprs=_LinearSolveTuple(matvec_j, vecmat_j, solve_j, tsolve_j))
  x = tree_util.tree_unflatten(tree, out[:len(b_leaves)])
  if has_aux:
    return x, tree_util.tree_unflatten(aux_info[0], out[len(b_leaves):])
  return x


def _transpose_of(matvec, b):
  """vecmat: the transpose of the linear map `matvec` (at b's shapes)."""
  transposed = ad.linear_transpose(matvec, b)
  return lambda v: transposed(v)[0]

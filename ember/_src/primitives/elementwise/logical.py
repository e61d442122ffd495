"""Bitwise and logical primitives (and, or, xor, not: logical on booleans), shifts,
population_count and clz; comparisons (eq, ne, lt, le, gt, ge); and selection by a predicate
or an index (select_n, select, clamp), with their jvp, transpose and batching rules.
"""
from __future__ import annotations

import builtins

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src import lower as lowering
from ember._src.transforms import ad, batching
from ember._src.primitives import (ANY, BOOL, FLOAT, INTS, bind_elementwise, check_dtype,
                                   check_same_dtypes, declare, dtype_kind, naryop,
                                   strict_scalars, unary)
from ember._src.primitives.elementwise.common import _bcast_like, _binary_fn, _unary_fn, _zeros
from ember._src.primitives.elementwise.convert import convert_element_type
from ember._src.reference import elementwise as reference_elementwise

__all__ = [
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left",
    "shift_right_arithmetic", "shift_right_logical", "population_count", "clz",
    # comparison and selection
    "eq", "ne", "lt", "le", "gt", "ge", "select", "select_n", "clamp",
]


# --- bitwise ---------------------------------------------------------------------------------

and_p = naryop("and", reference_elementwise.bitwise_and, BOOL + INTS)
or_p = naryop("or", reference_elementwise.bitwise_or, BOOL + INTS)
xor_p = naryop("xor", reference_elementwise.bitwise_xor, BOOL + INTS)
not_p = unary("not", reference_elementwise.bitwise_not, BOOL + INTS)
shift_left_p = naryop("shift_left", reference_elementwise.shift_left, INTS)
shift_right_arithmetic_p = naryop("shift_right_arithmetic",
                                  reference_elementwise.shift_right_arithmetic, INTS)
shift_right_logical_p = naryop("shift_right_logical", reference_elementwise.shift_right_logical,
                               INTS)
population_count_p = unary("population_count", reference_elementwise.population_count, INTS)
clz_p = unary("clz", reference_elementwise.clz, INTS)
for _p, _op in ((and_p, "and"), (or_p, "or"), (xor_p, "xor"), (not_p, "not"),
                (shift_left_p, "shift-left"), (shift_right_arithmetic_p, "shift-right-arithmetic"),
                (shift_right_logical_p, "shift-right-logical"), (population_count_p, "popcnt"),
                (clz_p, "count-leading-zeros")):
  _p.lower = lowering.elementwise(_op)

bitwise_and = _binary_fn(and_p, "bitwise_and")
bitwise_or = _binary_fn(or_p, "bitwise_or")
bitwise_xor = _binary_fn(xor_p, "bitwise_xor")
bitwise_not = _unary_fn(not_p, "bitwise_not")
shift_left = _binary_fn(shift_left_p, "shift_left")
shift_right_arithmetic = _binary_fn(shift_right_arithmetic_p, "shift_right_arithmetic")
shift_right_logical = _binary_fn(shift_right_logical_p, "shift_right_logical")
population_count = _unary_fn(population_count_p, "population_count")
clz = _unary_fn(clz_p, "clz")


# --- comparison ------------------------------------------------------------------------------

_to_bool = lambda _: np.dtype(np.bool_)
ORDERED = BOOL + INTS + FLOAT

eq_p = naryop("eq", reference_elementwise.eq, ANY, out_dtype=_to_bool)
ne_p = naryop("ne", reference_elementwise.ne, ANY, out_dtype=_to_bool)
lt_p = naryop("lt", reference_elementwise.lt, ORDERED, out_dtype=_to_bool)
le_p = naryop("le", reference_elementwise.le, ORDERED, out_dtype=_to_bool)
gt_p = naryop("gt", reference_elementwise.gt, ORDERED, out_dtype=_to_bool)
ge_p = naryop("ge", reference_elementwise.ge, ORDERED, out_dtype=_to_bool)
for _p, _dir in ((eq_p, "EQ"), (ne_p, "NE"), (lt_p, "LT"), (le_p, "LE"), (gt_p, "GT"),
                 (ge_p, "GE")):
  _p.lower = (lambda d: lambda ctx, x, y: ctx.compare(x, y, d))(_dir)

eq = _binary_fn(eq_p, "eq")
ne = _binary_fn(ne_p, "ne")
lt = _binary_fn(lt_p, "lt")
le = _binary_fn(le_p, "le")
gt = _binary_fn(gt_p, "gt")
ge = _binary_fn(ge_p, "ge")


# --- selection -------------------------------------------------------------------------------

def _select_n_abstract_eval(which, *cases):
  if not cases:
    raise TypeError("select must have at least one case")
  if any(c.shape != cases[0].shape for c in cases[1:]):
    raise TypeError(f"select cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError(f"select `which` must be scalar or have the same shape as cases, got "
                    f"`which` shape {which.shape} but case shape {cases[0].shape}.")
  check_same_dtypes("select", cases)
  if dtype_kind(which.dtype) not in BOOL + INTS:
    raise TypeError(f"select `which` must be boolean or integer type, got {which.dtype}.")
  if which.dtype == np.bool_ and len(cases) > 2:
    raise TypeError("select with boolean `which` cannot have > 2 cases.")
  return cases[0].update(weak_type=all(c.weak_type for c in cases))


select_n_p = declare("select_n", _select_n_abstract_eval, reference_elementwise.select_n)


def _select_n_batch(axis_data, vals, dims):
  """JAX's rule: `which` is a scalar or has the cases' shape, so a batched scalar `which`
  is broadcast to the cases' shape; otherwise everything moves its batch dim to the front."""
  (which, *cases), (wd, *cds) = vals, dims
  ndim = batching.ndim_of
  if all(wd == d for d in cds):
    if batching.shape_of(which) == batching.shape_of(cases[0]):
      return select_n_p.bind(which, *cases), wd
    which = batching.broadcast_in_dim(which, batching.shape_of(cases[0]), [wd])
    return select_n_p.bind(which, *cases), wd
  if ndim(which) == 0 and all(d is not None for d in cds):
    if all(cds[0] == d for d in cds[1:]):
      return select_n_p.bind(which, *cases), cds[0]
    if all(batching.shape_of(cases[0]) == batching.shape_of(c) for c in cases):
      others = [batching.moveaxis(c, d, cds[0]) for c, d in zip(cases[1:], cds[1:])]
      return select_n_p.bind(which, cases[0], *others), cds[0]
  size = batching.batch_size(vals, dims)
  which = batching.bdim_at_front(which, wd, size) if batching.shape_of(which) else which
  if not all(ndim(c) == 0 for c in cases):
    cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, cds)]
  if 0 < ndim(which) < ndim(cases[0]):
    which = batching.broadcast_in_dim(which, batching.shape_of(cases[0]), [0])
  if ndim(which) > ndim(cases[0]):
    cases = [batching.broadcast_in_dim(c, batching.shape_of(which), ()) for c in cases]
  return select_n_p.bind(which, *cases), 0


select_n_p.batch = _select_n_batch


def _select_n_lower(ctx, which, *cases):
  """`select` for a bool `which`; otherwise a balanced tree of `which < k` tests (out-of-range
  indices pick the first or last case, as the impl clamps)."""
  if which.dtype == np.bool_ and len(cases) == 2:
    return ctx.select(which, cases[1], cases[0])

  def tree(offset, cs):
    if len(cs) == 1:
      return cs[0]
    mid = len(cs) // 2
    pred = ctx.compare(which, ctx.constant(offset + mid, which.dtype), "LT")
    return ctx.select(pred, tree(offset, cs[:mid]), tree(offset + mid, cs[mid:]))
  return tree(0, list(cases))


select_n_p.lower = _select_n_lower


def _bind_cases(prim, first, *cases):
  """Python scalar cases take the dtype of the array cases (weakly typed)."""
  strong = [c for c in cases if not dtypes.is_python_scalar(c)]
  if strong and len(strong) < len(cases):
    dt = core.get_aval(strong[0]).dtype
    cases = [convert_element_type(c, dt, weak_type=True) if dtypes.is_python_scalar(c) else c
             for c in cases]
  return prim.bind(first, *cases)


def select_n(which, *cases):
  """cases[which], elementwise: `which` is bool (two cases) or an integer index; it is a
  scalar or has the cases' shape."""
  return _bind_cases(select_n_p, *_select_n_operands(which, *cases))


def _select_n_operands(which, *cases):
  if not cases:
    raise ValueError("select_n() must have at least one case")
  return (which, *cases)


def select(pred, on_true, on_false):
  """`on_true` where `pred` else `on_false` (binds select_n with the cases swapped)."""
  return _bind_cases(select_n_p, pred, on_false, on_true)


strict_scalars(select_n_p, select_n, _select_n_operands)
strict_scalars(select_n_p, select, lambda pred, on_true, on_false: (pred, on_false, on_true))


def _select_n_jvp(primals, tangents):
  (which, *cases), (_, *tcases) = primals, tangents
  out = select_n_p.bind(which, *cases)
  if all(type(t) is ad.Zero for t in tcases):
    return out, ad.Zero.from_value(out)
  return out, select_n_p.bind(which, *map(ad.instantiate_zeros, tcases))


def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined_primal(which):
    raise ValueError("select_n is not linear in its predicate: cannot transpose it")
  zeros = _zeros(ct)
  return [None] + [select_n_p.bind(which, *[ct if j == i else zeros for j in range(len(cases))])
                   if ad.is_undefined_primal(c) else None for i, c in enumerate(cases)]


select_n_p.jvp = _select_n_jvp
select_n_p.transpose = _select_n_transpose


def _clamp_abstract_eval(lo, x, hi):
  for name, a in (("min", lo), ("max", hi)):
    if a.shape and a.shape != x.shape:
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), "
                      f"got {name}.shape={a.shape}, operand.shape={x.shape}.")
  for i, a in enumerate((lo, x, hi)):
    check_dtype("clamp", a, ANY, argname=f"operand {i}")
  check_same_dtypes("clamp", (lo, x, hi))
  return x.update(weak_type=lo.weak_type and x.weak_type and hi.weak_type)


clamp_p = declare("clamp", _clamp_abstract_eval, reference_elementwise.clamp)


def _clamp_batch(axis_data, vals, dims):
  """`min`/`max` are scalars or have x's shape: unbatched scalar bounds bind directly;
  otherwise all three go batch-dim-first at x's full shape (JAX's rule, simplified)."""
  (lo, x, hi), (ld, xd, hd) = vals, dims
  ndim = batching.ndim_of
  if ld == xd == hd and batching.shape_of(lo) == batching.shape_of(x) == batching.shape_of(hi):
    return clamp_p.bind(lo, x, hi), xd
  if ndim(lo) == 0 and ndim(hi) == 0 and xd is not None:
    return clamp_p.bind(lo, x, hi), xd
  size = batching.batch_size(vals, dims)
  lo, x, hi = (batching.bdim_at_front(v, d, size) if batching.shape_of(v) else v
               for v, d in zip(vals, dims))
  shape = builtins.max((batching.shape_of(v) for v in (lo, x, hi)), key=len)
  # a per-example scalar that is batched is now 1-D: broadcast it along the batch dim
  lo, x, hi = (batching.broadcast_in_dim(v, shape, [0] if ndim(v) else []) if ndim(v) < len(shape)
               else v for v in (lo, x, hi))
  return clamp_p.bind(lo, x, hi), 0


clamp_p.batch = _clamp_batch
clamp_p.lower = lambda ctx, lo, x, hi: ctx.emit(
    "clamp", x.shape, [ctx.broadcast_to(lo, x.dims), x, ctx.broadcast_to(hi, x.dims)])


def clamp(min, x, max):  # noqa: A002 - JAX's argument names
  """min(max(x, min), max), elementwise; `min`/`max` are scalars or have x's shape."""
  return bind_elementwise(clamp_p, min, x, max)


strict_scalars(clamp_p, clamp)


ad.defjvp(  # JAX's rules: the tangent of whichever operand the result is
    clamp_p,
    lambda g, lo, x, hi: select(bitwise_and(gt(lo, x), lt(lo, hi)), _bcast_like(g, x), _zeros(x)),
    lambda g, lo, x, hi: select(bitwise_and(gt(x, lo), lt(x, hi)), g, _zeros(x)),
    lambda g, lo, x, hi: select(lt(hi, x), _bcast_like(g, x), _zeros(x)))


# Selection: the NumPy reference computes the compiled bits, so eager calls may switch to
# compiled code at any time (core/primitive.py's `reference_exact`)
for _p in (select_n_p, clamp_p):
  _p.reference_exact = True

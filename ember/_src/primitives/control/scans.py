"""`scan`, the higher-order primitive of a loop over the leading axis of arrays, and the
`lax` functions that are scans: scan, map (a scan with no carry) and associative_scan (a
parallel prefix scan of slices and pads, binding no scan). With the rules of `scan`:
abstract eval, eager evaluation (a Python loop running the body jaxpr with `eval_jaxpr`), jvp
(under linearize, as JAX's partial evaluation: the loop-invariant primal work hoisted, a
primal scan stacking residuals, a tangent scan), transpose (a scan in the other direction),
batching and lowering (a `while` over dynamic slices, as JAX lowers it).

Convention (JAX's): `scan[jaxpr, length, reverse, unroll, ft_in, ft_out] *consts *init *xs`:
the body maps (consts, carry, x) -> (carry, y); `ft_in`/`ft_out` record the counts of consts,
carry, xs and which ys the body computes (JAX forwards ys that are xs unchanged).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from ember._src import core
from ember._src.base import errors, tree_util
from ember._src.core import ShapedArray, get_aval
from ember._src.core.array import Array
from ember._src.core import earray
from ember._src.primitives import slicing
from ember._src.primitives.control.barriers import optimization_barrier
from ember._src.primitives import eager_jit
from ember._src.primitives.control.common import (
    Zero, _batch_jaxpr_front, _carry_fixpoint, _check_carry_type, _disable_jit, _emit_while,
    _forwarding, _jvp_jaxpr, _new_refs, _nonzero, _promote_weak, _prune_outputs,
    _ref_values, _set_ref_values, _split, _to_front, _trace, _trace_jaxpr_fn, _typematch)
from ember._src.primitives.elementwise import add, bitwise_or, convert_element_type, lt, sub
from ember._src.primitives.structural import (concatenate, expand_dims, index_in_dim, pad,
                                              reshape, rev, slice_in_dim)
from ember._src.transforms import ad, ad_calls, batching
from ember._src.transforms.batching import vmap
from ember._src.transforms.partial_eval import dce_sub, partial_eval_jaxpr

__all__ = ["scan", "map", "associative_scan"]


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
  outs = jaxpr.out_avals   # JAX's: the body's carry types (a strong init may come out weak)
  return outs[:ncar] + [a.update(shape=(length,) + a.shape) for a in outs[ncar:]]


def _scan_eval(*args, jaxpr, length, reverse, unroll, ft_in, ft_out):
  nc, ncar, nxs = ft_in
  consts, carry, xs = _split(args, nc, ncar)
  x_avals = jaxpr.in_avals[nc + ncar:]
  xs = [core.to_numpy(x) for x in xs]
  ys = []
  for t in range(length):
    i = length - 1 - t if reverse else t
    outs = core.eval_jaxpr(jaxpr, [], *consts, *carry,
                           *[_element(x[i], a) for x, a in zip(xs, x_avals)])
    carry, y = outs[:ncar], outs[ncar:]
    ys.append([core.to_numpy(v, a) for v, a in zip(y, jaxpr.out_avals[ncar:])])
  if reverse:
    ys.reverse()
  y_avals = jaxpr.out_avals[ncar:]
  stacked = [np.stack([y[k] for y in ys]) if ys else _empty_stack(a)
             for k, a in enumerate(y_avals)]
  return list(carry) + stacked


def _element(x: np.ndarray, aval):
  """One step's slice of an xs operand as the body's value of type `aval`."""
  if isinstance(aval.dtype, np.dtype):
    return Array(x, weak_type=aval.weak_type)
  return earray.wrap(aval, x)   # a user's extended dtype: its stored values


def _empty_stack(aval) -> np.ndarray:
  phys = core.physical_aval(aval)   # stored values (an extended dtype's physical ones)
  return np.zeros((0,) + phys.shape, phys.dtype)


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
         _split_transpose: bool = False, _threaded_refs: tuple = ()):
  """Loop `carry, y = f(carry, x)` over the leading axis of `xs` (pytrees), stacking the
  ys: one `scan` equation (JAX's `lax.scan`). Refs from outside that `f` reads or writes
  are extra carries (`_threaded_refs`: those already threaded)."""
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
  if eager_jit.applies((init, xs)):   # one compiled call per (f, types), as JAX runs it
    return eager_jit.call(f, ("scan", length, bool(reverse), unroll, _split_transpose),
                          _scan_compiled, init, xs)
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

  frames: list = []

  def create(vals):
    avals = [get_aval(v) for v in vals]
    jaxpr, consts, (c_tree, y_tree) = _trace(body, avals + x_avals, "scan body", frames)
    return avals, jaxpr, consts, c_tree, y_tree
  avals, jaxpr, consts, c_tree, y_tree = create(init_flat)
  new_refs = _new_refs(frames, _threaded_refs)
  if new_refs:
    return _scan_threading(f, init, xs, (*_threaded_refs, *new_refs), length, reverse, unroll,
                           _split_transpose)
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


def _scan_threading(f, init, xs, rs, length, reverse, unroll, split_transpose):
  """scan of `f`, the refs `rs` (from outside) threaded as carries."""
  def body(carry, x):
    c, values = carry
    _set_ref_values(rs, values)
    c, y = f(c, x)
    return (c, _ref_values(rs)), y
  (carry, values), ys = scan(body, (init, _ref_values(rs)), xs, length, reverse, unroll,
                             split_transpose, _threaded_refs=rs)
  _set_ref_values(rs, values)
  return carry, ys


def _scan_compiled(f, static, init, xs):
  _, length, reverse, unroll, split_transpose = static
  return scan(f, init, xs, length, reverse, unroll, split_transpose)


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - JAX's name
  """`f` applied to each slice of `xs` along axis 0 (a scan with no carry); with
  `batch_size`, `vmap(f)` over batches of that many slices (the remainder separately)."""
  if eager_jit.applies(xs):
    return eager_jit.call(f, ("map", batch_size), _map_compiled, xs)
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


def _map_compiled(f, static, xs):
  return map(f, xs, batch_size=static[1])


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
  """All prefix combinations `fn(..., fn(e0, e1), ...)` of `elems` along `axis`, by the
  parallel (Blelloch-style) recursion JAX uses: O(log n) levels of vectorized `fn` calls."""
  if eager_jit.applies(elems):
    return eager_jit.call(fn, ("associative_scan", bool(reverse), int(axis)),
                          _associative_scan_compiled, elems)
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


def _associative_scan_compiled(fn, static, elems):
  return associative_scan(fn, elems, reverse=static[1], axis=static[2])


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
  # a carry's cotangent keeps the incoming one's type (JAX's accumulators: a weak carry
  # whose body output is strong gets a strong cotangent)
  lin_avals = [None] * nc + [core.get_aval(c) for c in ct_carry] + [None] * nxs
  tj, tconsts = ad_calls.transpose_jaxpr(jaxpr, c_lin + [True] * ncar + x_lin,
                                         [True] * (ncar + nys), lin_avals)
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


def _scan_dce(used_outputs, eqn):
  """The scan with only the used ys and the carries they or a used carry need (a
  fixpoint: a carry the body reads for a live carry is live), and the consts and xs those
  read (JAX's `_scan_dce_rule`)."""
  jaxpr, (nc, ncar, nxs), ft_out = eqn.params["jaxpr"], eqn.params["ft_in"], eqn.params["ft_out"]
  live, used_ys = list(used_outputs[:ncar]), list(used_outputs[ncar:])
  for _ in range(ncar + 1):
    read = dce_sub(jaxpr, live + used_ys)[1][nc:nc + ncar]
    new = [a or b for a, b in zip(live, read)]
    if new == live:
      break
    live = new
  j, used_in = dce_sub(jaxpr, live + used_ys, [False] * nc + live)
  if j is jaxpr:
    return [True] * len(eqn.invars), eqn
  c_used, _, x_used = _split(used_in, nc, ncar)
  params = dict(eqn.params, jaxpr=j, ft_in=ScanIn(sum(c_used), sum(live), sum(x_used)),
                ft_out=ScanOut(sum(live), tuple(k for k, u in zip(ft_out.ys, used_ys) if u)))
  used_in = c_used + live + x_used
  return used_in, eqn.replace(invars=[v for v, u in zip(eqn.invars, used_in) if u],
                              outvars=[v for v, u in zip(eqn.outvars, live + used_ys) if u],
                              params=params)


scan_p.jvp = _scan_jvp
scan_p.transpose = _scan_transpose
scan_p.dce = _scan_dce


# ------------------------------------------------------------------------------------
# Batching
# ------------------------------------------------------------------------------------


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
# Lowering
# ------------------------------------------------------------------------------------


def _scan_lower(ctx, *args, jaxpr, length, reverse, unroll, ft_in, ft_out):
  """scan as JAX lowers it: a `while` over (i, consts, carry, xs, ys buffers) whose body
  reads x_i with a dynamic slice and writes y_i with a dynamic update slice."""
  nc, ncar, nxs = ft_in
  y_avals = [a.update(shape=(length,) + a.shape) for a in jaxpr.out_avals[ncar:]]
  i32 = ShapedArray((), np.int32)
  avals = [i32] + list(ctx.avals_in) + y_avals
  n_in = nc + ncar + nxs

  if length == 0:   # no iteration: the carry as given, empty ys
    return list(args[nc:nc + ncar]) + [ctx.zeros_of(a) for a in y_avals]

  def cond_fn(limit):
    return lambda i, *_: [lt(i, np.int32(limit))]

  def body_fn(steps):   # `steps` iterations of the scan per iteration of the while
    def fn(i, *s):
      consts, carry, xs, ys = _split(s, nc, ncar, nxs)
      zeros = lambda n: [np.int32(0)] * n
      for _ in range(steps):
        t = sub(np.int32(length - 1), i) if reverse else i
        x = [reshape(slicing.dynamic_slice(v, [t] + zeros(v.ndim - 1),
                                           (1,) + tuple(v.shape[1:]),
                                           allow_negative_indices=False), v.shape[1:])
             for v in xs]
        outs = core.eval_jaxpr(jaxpr, [], *consts, *carry, *x)
        carry = outs[:ncar]
        ys = [slicing.dynamic_update_slice(
            buf, reshape(y, (1,) + tuple(buf.shape[1:])), [t] + zeros(buf.ndim - 1),
            allow_negative_indices=False) for buf, y in zip(ys, outs[ncar:])]
        i = add(i, np.int32(1))
      return [i, *consts, *carry, *xs, *ys]
    return fn
  # unroll: blocks of `unroll` iterations in one loop body, then the remaining iterations
  u = length if unroll == 0 else max(1, min(int(unroll), length))
  state = ([ctx.constant(np.int32(0))] + list(args)
           + [ctx.zeros_of(a) for a in y_avals])
  blocks, rem = divmod(length, u)
  state = _emit_while(ctx, cond_fn(blocks * u), body_fn(u), state, avals, "scan")
  if rem:
    state = _emit_while(ctx, cond_fn(length), body_fn(1), state, avals, "scan")
  return state[1 + nc:1 + nc + ncar] + state[1 + n_in:]


scan_p.lower = _scan_lower

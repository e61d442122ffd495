"""Windowed reductions (pooling): reduce_window_sum/max/min, the generic reduce_window
(a jaxpr computation and init values: any monoid, several operands), and the max/min
pooling derivatives select_and_gather_add / select_and_scatter_add, with `lax.reduce_window`.

Params follow JAX 0.12: window_dimensions, window_strides, padding ((low, high) pairs),
base_dilation, window_dilation; the generic form adds `jaxpr` and `consts`. As in JAX,
`lax.reduce_window` binds reduce_window_sum/max/min when the computation is lax.add/max/min
and the init value is its identity, else the generic primitive. The semantics (dilation,
padding with the init value, window order) are XLA's ReduceWindow: reference/windows.py.

Derivatives: reduce_window_sum is linear; its transpose pads the (stride-dilated)
cotangent and sums it over windows again (a reduce_window_sum striding by the base
dilation). max/min pooling's tangent is the tangent at each window's winner
(select_and_gather_add), whose transpose adds each window's cotangent at its winner
(select_and_scatter_add). Both lower as XLA:CPU itself rewrites select-and-scatter: a
variadic reduce-window over (value, flat position) pairs finds each window's winner, the
first in window order among equals (JAX's `ge` selection); the gather carries the tangent
along in the same reduce-window, the scatter adds at the positions with a scatter.
The generic form's jvp reduces (primal, tangent) pairs with the jvp of its computation.
"""
from __future__ import annotations

import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import ShapedArray
from ember._src.transforms import ad, batching
from ember._src.primitives import ANY, FLOAT, NUMERIC, check_dtype, declare, dtype_kind
from ember._src.primitives import elementwise as ew
from ember._src.primitives import reductions, structural
from ember._src.primitives.elementwise import convert_element_type
from ember._src.reference import windows as ref
from ember._src.reference.reductions import compute_dtype, identity

__all__ = ["reduce_window", "reduce_window_shape_tuple"]


# --- shapes and checks -----------------------------------------------------------------

def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None) -> tuple:
  """The result shape of a window reduction (jax.lax.reduce_window_shape_tuple)."""
  ones = (1,) * len(operand_shape)
  return ref.output_shape(operand_shape, window_dimensions, window_strides, padding,
                          base_dilation or ones, window_dilation or ones)


def _window_shape(name: str, shape: tuple, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> tuple:
  """Check the window params against an operand of `shape`; the result shape."""
  for pname, v, least in (("window_dimensions", window_dimensions, 1),
                          ("window_strides", window_strides, 1),
                          ("base_dilation", base_dilation, 1),
                          ("window_dilation", window_dilation, 1)):
    if len(v) != len(shape):
      raise TypeError(f"{name} got the wrong number of {pname} for operand: got operand "
                      f"shape {shape} with {pname} {tuple(v)}; give one per operand "
                      f"dimension ({len(shape)}).")
    if any(d < least for d in v):
      raise ValueError(f"{name}: {pname} must be positive, got {tuple(v)} for operand "
                       f"shape {shape}.")
  if len(padding) != len(shape) or any(len(p) != 2 for p in padding):
    raise TypeError(f"{name}: padding must be one (low, high) pair per operand dimension, "
                    f"got {tuple(padding)} for operand shape {shape}.")
  return ref.output_shape(shape, window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)


def _window_params(window_dimensions, window_strides, padding, base_dilation,
                   window_dilation) -> dict:
  ints = lambda v: tuple(operator.index(d) for d in v)
  return dict(window_dimensions=ints(window_dimensions), window_strides=ints(window_strides),
              padding=tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding),
              base_dilation=ints(base_dilation), window_dilation=ints(window_dilation))


def _with_unit_dim(params: dict, at: int) -> dict:
  """The window params with a window of 1 inserted at dimension `at` (a batch dim)."""
  unit = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
          "base_dilation": 1, "window_dilation": 1}
  return {k: tuple(v[:at]) + (unit[k],) + tuple(v[at:]) for k, v in params.items()}


def _index_dtype(size: int):
  return np.dtype(np.int32) if size < np.iinfo(np.int32).max else np.dtype(np.int64)


# --- reduce_window_sum / max / min -----------------------------------------------------

def _monoid_window(name: str, kinds: str, impl):
  def abstract_eval(x, **params):
    check_dtype(name, x, kinds, "operand")
    return ShapedArray(_window_shape(name, x.shape, **params), x.dtype, x.weak_type)
  prim = declare(name, abstract_eval, impl)

  def batch(axis_data, vals, dims, **params):
    (x,), (d,) = vals, dims
    return prim.bind(x, **_with_unit_dim(params, d)), d
  prim.batch = batch
  return prim


reduce_window_sum_p = _monoid_window("reduce_window_sum", NUMERIC, ref.reduce_window_sum)
reduce_window_max_p = _monoid_window("reduce_window_max", ANY, ref.reduce_window_max)
reduce_window_min_p = _monoid_window("reduce_window_min", ANY, ref.reduce_window_min)


def _monoid_lowering(opcode: str, init, wide: bool = False):
  """A reduce-window with the scalar computation `opcode` and its identity `init(dtype)`;
  `wide`: in the impl's accumulation dtype (float32 for 16-bit floats)."""
  def rule(ctx, x, **params):
    dt = compute_dtype(x.dtype) if wide else x.dtype
    out, = ctx.reduce_window([ctx.convert(x, dt)], [ctx.constant(init(dt), dt)],
                             ctx.scalar_computation(opcode, dt), ctx.avals_out[0].shape, params)
    return ctx.convert(out, x.dtype)
  return rule


reduce_window_sum_p.lower = _monoid_lowering("add", lambda dt: 0, wide=True)
reduce_window_max_p.lower = _monoid_lowering("maximum", lambda dt: identity(np.maximum, dt))
reduce_window_min_p.lower = _monoid_lowering("minimum", lambda dt: identity(np.minimum, dt))


def _reduce_window_sum_transpose(ct, x, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  """Input element i sits at padded position lo + i * bd; it receives ct[j] for every
  window j and offset k with j * s + k * wd = lo + i * bd. So: ct dilated by the stride
  (interior s - 1), padded by span - 1 - lo in front, summed over windows of the same
  size and window dilation, striding by the base dilation."""
  in_shape = x.aval.shape
  ct_shape = core.get_aval(ct).shape
  config = []
  for n, o, w, s, (lo, _), bd, wd in zip(in_shape, ct_shape, window_dimensions,
                                         window_strides, padding, base_dilation,
                                         window_dilation):
    span = ref.dilate_dim(w, wd)
    low = span - 1 - lo
    length = (n - 1) * bd + span if n else span - 1   # windows striding bd: n results
    config.append((low, length - low - ref.dilate_dim(o, s), s - 1))
  zero = np.zeros((), core.get_aval(ct).dtype)
  padded = structural.pad(ct, zero, config)
  rank = len(in_shape)
  out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                 window_strides=tuple(base_dilation), padding=((0, 0),) * rank,
                                 base_dilation=(1,) * rank, window_dilation=window_dilation)
  return [out]


ad.deflinear2(reduce_window_sum_p, _reduce_window_sum_transpose)


# --- the max/min pooling derivatives ---------------------------------------------------

def _is_max(select_prim) -> bool:
  if select_prim is ew.ge_p:
    return True
  if select_prim is ew.le_p:
    return False
  raise ValueError(f"select_prim must be lax.ge_p (max) or lax.le_p (min), got {select_prim}")


def _gather_abstract_eval(t, x, *, select_prim, **params):
  if t.shape != x.shape:
    raise TypeError(f"select_and_gather_add tangents and operand shapes must match, got "
                    f"{t.shape} and {x.shape}.")
  _is_max(select_prim)
  return ShapedArray(_window_shape("select_and_gather_add", x.shape, **params), t.dtype)


def _scatter_abstract_eval(src, x, *, select_prim, **params):
  want = _window_shape("select_and_scatter_add", x.shape, **params)
  if src.shape != want:
    raise TypeError(f"select_and_scatter_add source shape must be the window output shape "
                    f"{want} of operand shape {x.shape}, got {src.shape}.")
  _is_max(select_prim)
  return ShapedArray(x.shape, src.dtype)


select_and_gather_add_p = declare(
    "select_and_gather_add", _gather_abstract_eval,
    lambda t, x, *, select_prim, **params: ref.select_and_gather_add(t, x, _is_max(select_prim),
                                                                     **params))
select_and_scatter_add_p = declare(
    "select_and_scatter_add", _scatter_abstract_eval,
    lambda s, x, *, select_prim, **params: ref.select_and_scatter_add(s, x, _is_max(select_prim),
                                                                      **params))


def _linear_in_first(prim):
  """jvp of a primitive linear in its first operand (the second only selects)."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t = tangents[0]
    if type(t) is ad.Zero:
      return out, ad.Zero.from_value(out)
    return out, prim.bind(t, primals[1], **params)
  return rule


def _transpose_to(other):
  def rule(ct, a, x, **params):
    assert ad.is_undefined_primal(a) and not ad.is_undefined_primal(x)
    return [other.bind(ct, x, **params), None]
  return rule


def _pair_batch(prim):
  def rule(axis_data, vals, dims, **params):
    size = batching.batch_size(vals, dims)
    a, x = (batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims))
    select_prim = params.pop("select_prim")
    return prim.bind(a, x, select_prim=select_prim, **_with_unit_dim(params, 0)), 0
  return rule


for _p, _other in ((select_and_gather_add_p, select_and_scatter_add_p),
                   (select_and_scatter_add_p, select_and_gather_add_p)):
  _p.jvp = _linear_in_first(_p)
  _p.transpose = _transpose_to(_other)
  _p.batch = _pair_batch(_p)


def _winner_region(ctx, vdt, idt, carried, is_max: bool):
  """The combiner of (value, flat position, *carried) tuples: the larger (smaller) value
  wins, a NaN beats a number, and equal values (or two NaNs) go to the lower position;
  the carried values follow the winner. Associative and commutative, so the result does
  not depend on the order of combination."""
  direction = "GT" if is_max else "LT"
  is_float = dtype_kind(vdt) == FLOAT
  k = 2 + len(carried)

  def combine(c, *args):
    a, b = args[:k], args[k:]
    better, tie = c.compare(a[0], b[0], direction), c.compare(a[0], b[0], "EQ")
    if is_float:
      a_nan, b_nan = c.is_nan(a[0]), c.is_nan(b[0])
      better = c.or_(better, c.and_(a_nan, c.not_(b_nan)))
      tie = c.or_(tie, c.and_(a_nan, b_nan))
    pick_a = c.or_(better, c.and_(tie, c.compare(a[1], b[1], "LT")))
    return [c.select(pick_a, u, v) for u, v in zip(a, b)]
  dts = [vdt, idt, *carried]
  return ctx.region("select_winner", dts + dts, combine)


def _winners(ctx, x, carried, is_max: bool, params: dict, out_dims):
  """The variadic reduce-window over (x, flat position of x, *carried): per window the
  winner's tuple. Padding holds (identity, no position: the largest index, so it loses
  every tie) and zeros for the carried values."""
  idt = _index_dtype(x.shape.size)
  pos = ctx.reshape(ctx.iota(idt, (x.shape.size,), 0), x.dims)
  inits = [ctx.constant(identity(np.maximum if is_max else np.minimum, x.dtype), x.dtype),
           ctx.constant(np.iinfo(idt).max, idt)] + [ctx.constant(0, c.dtype) for c in carried]
  comp = _winner_region(ctx, x.dtype, idt, [c.dtype for c in carried], is_max)
  return ctx.reduce_window([x, pos, *carried], inits, comp, out_dims, params)


def _gather_lower(ctx, t, x, *, select_prim, **params):
  return _winners(ctx, x, [t], _is_max(select_prim), params, ctx.avals_out[0].shape)[2]


def _scatter_lower(ctx, src, x, *, select_prim, **params):
  """Each window's source value added at its winner's position (padding winners carry
  an out-of-range position, which XLA's scatter skips)."""
  _, pos = _winners(ctx, x, [], _is_max(select_prim), params, src.dims)
  n, m = x.shape.size, src.shape.size
  zeros = ctx.full(0, src.dtype, (n,))
  attrs = {"update_window_dims": (), "inserted_window_dims": (0,),
           "scatter_dims_to_operand_dims": (0,), "input_batching_dims": (),
           "scatter_indices_batching_dims": (), "index_vector_dim": 1,
           "indices_are_sorted": False, "unique_indices": False}
  flat = ctx.emit("scatter", zeros.shape, [zeros, ctx.reshape(pos, (m, 1)),
                                           ctx.reshape(src, (m,))], attrs,
                  [ctx.scalar_computation("or" if src.dtype == np.bool_ else "add",
                                          src.dtype)])
  return ctx.reshape(flat, x.dims)


select_and_gather_add_p.lower = _gather_lower
select_and_scatter_add_p.lower = _scatter_lower


def _chooser_jvp(select_prim):
  def rule(g, x, **params):
    return select_and_gather_add_p.bind(g, x, select_prim=select_prim, **params)
  return rule


ad.defjvp(reduce_window_max_p, _chooser_jvp(ew.ge_p))
ad.defjvp(reduce_window_min_p, _chooser_jvp(ew.le_p))


# --- the generic reduce_window ---------------------------------------------------------

def _generic_abstract_eval(*avals, jaxpr, consts, **params):
  n = len(avals) // 2
  ops, inits = avals[:n], avals[n:]
  if any(a.shape != ops[0].shape for a in ops):
    raise ValueError(f"reduce_window operands must have the same shape, got "
                     f"{[a.shape for a in ops]}")
  if [a.dtype for a in ops] != [a.dtype for a in inits]:
    raise TypeError(f"reduce_window got inconsistent dtypes for operands and init_values: "
                    f"got operand dtypes {[a.dtype.name for a in ops]} and init_value dtypes "
                    f"{[a.dtype.name for a in inits]}.")
  if any(a.shape != () for a in inits):
    raise TypeError(f"reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[a.shape for a in inits]}.")
  shape = _window_shape("reduce_window", ops[0].shape, **params)
  outs = [v.aval for v in jaxpr.outvars]
  if len(outs) != n or any(o.shape != () or o.dtype != a.dtype for o, a in zip(outs, ops)):
    raise TypeError(f"reduce_window computation must return {n} scalars of the operand "
                    f"dtypes, got {[o.str_short() for o in outs]}")
  return [ShapedArray(shape, a.dtype) for a in ops]


def _generic_impl(*vals, jaxpr, consts, **params):
  """A left fold of the computation over each window's elements in window order (padding
  holds the init values), vectorized over the windows."""
  n = len(vals) // 2
  ops, inits = [np.asarray(v) for v in vals[:n]], vals[n:]
  ps = [ref.patches(x, np.asarray(i).astype(x.dtype), **params) for x, i in zip(ops, inits)]
  out_shape = ps[0].shape[:-1]
  lanes = int(np.prod(out_shape, dtype=np.int64))
  acc = [np.broadcast_to(np.asarray(i, x.dtype), (lanes,)) for i, x in zip(inits, ops)]
  for k in range(ps[0].shape[-1]):
    acc = [np.broadcast_to(np.asarray(core.to_numpy(o)), (lanes,)) for o in core.eval_jaxpr(
        jaxpr, consts, *acc, *[p[..., k].reshape(-1) for p in ps])]
  return [np.asarray(a, x.dtype).reshape(out_shape) for a, x in zip(acc, ops)]


reduce_window_p = declare("reduce_window", _generic_abstract_eval, _generic_impl,
                          multiple_results=True)


def _generic_batch(axis_data, vals, dims, *, jaxpr, consts, **params):
  n = len(vals) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("vmap of lax.reduce_window over batched init_values is not "
                              "supported; pass unbatched init values.")
  size = batching.batch_size(vals, dims)
  ops = [batching.bdim_at_front(x, d, size) for x, d in zip(vals[:n], dims[:n])]
  outs = reduce_window_p.bind(*ops, *vals[n:], jaxpr=jaxpr, consts=consts,
                              **_with_unit_dim(params, 0))
  return outs, [0] * n


def _generic_jvp(primals, tangents, *, jaxpr, consts, **params):
  """Reduce (primal, tangent) pairs with the jvp of the computation (JAX's rule)."""
  n = len(primals) // 2
  if any(type(t) is not ad.Zero for t in tangents[n:]):
    raise TypeError("reduce_window jvp does not support non-zero init_value tangents.")
  ops, inits = list(primals[:n]), list(primals[n:])
  t_ops = [ad.instantiate_zeros(t) for t in tangents[:n]]
  t_inits = [np.zeros((), core.get_aval(i).dtype) for i in inits]

  def comp(acc, x):   # acc, x: n primals then n tangents
    p_out, t_out, _ = ad.jvp_flat(lambda *xs: (core.eval_jaxpr(jaxpr, consts, *xs), None),
                                  acc[:n] + x[:n], acc[n:] + x[n:])
    return list(p_out) + [ad.instantiate_zeros(t) for t in t_out]
  outs = _bind_generic(ops + t_ops, inits + t_inits, comp, params)
  return outs[:n], outs[n:]


def _bind_generic(flat_ops, flat_inits, flat_comp, params):
  """Trace `flat_comp(accumulators, values) -> list` over the init avals and bind the
  generic primitive."""
  avals = [core.get_aval(x).update(weak_type=False) for x in flat_inits]
  n = len(avals)
  jaxpr, _ = core.trace_to_jaxpr(lambda *xs: (list(flat_comp(list(xs[:n]), list(xs[n:]))),
                                              None), avals + avals)
  if any(isinstance(c, core.Tracer) for c in jaxpr.consts):
    raise TypeError("the computation of lax.reduce_window closes over a traced value; pass "
                    "it as an operand instead.")
  flat_inits = [convert_element_type(i, a.dtype) if dtypes.is_python_scalar(i) else i
                for i, a in zip(flat_inits, avals)]
  return reduce_window_p.bind(*flat_ops, *flat_inits, jaxpr=jaxpr, consts=tuple(jaxpr.consts),
                              **params)


def _generic_lower(ctx, *xs, jaxpr, consts, **params):
  n = len(xs) // 2
  comp = ctx.lower_computation(jaxpr, "reducer")
  return ctx.reduce_window(list(xs[:n]), list(xs[n:]), comp, ctx.avals_out[0].shape, params)


reduce_window_p.batch = _generic_batch
reduce_window_p.jvp = _generic_jvp
reduce_window_p.lower = _generic_lower


# --- lax.reduce_window -----------------------------------------------------------------

def _monoid_window_reducers(dt):
  """reduce_window_sum/max/min by the lax op they reduce with, and that op's identity
  (JAX's _get_monoid_window_reducer)."""
  return [(ew.add, reduce_window_sum_p, lambda: 0),
          (ew.max, reduce_window_max_p, lambda: identity(np.maximum, dt)),
          (ew.min, reduce_window_min_p, lambda: identity(np.minimum, dt))]


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduce every window of `operand` (an array or a pytree of arrays) with `computation`
  from `init_value` (jax.lax.reduce_window: XLA's ReduceWindowWithGeneralPadding).
  `padding`: (low, high) pairs or 'VALID' / 'SAME' / 'SAME_LOWER'."""
  flat_ops, op_tree, flat_inits, init_tree = reductions.flatten_operands(operand, init_value)
  if not flat_ops:
    raise ValueError("reduce_window must have at least one operand.")
  window_dimensions = tuple(operator.index(d) for d in window_dimensions)
  rank = len(window_dimensions)
  ones = (1,) * rank
  window_strides = ones if window_strides is None else tuple(window_strides)
  base_dilation = ones if base_dilation is None else tuple(base_dilation)
  window_dilation = ones if window_dilation is None else tuple(window_dilation)
  if isinstance(padding, str):
    spans = [ref.dilate_dim(w, d) for w, d in zip(window_dimensions, window_dilation)]
    padding = structural.padtype_to_pads(core.get_aval(flat_ops[0]).shape, spans,
                                         window_strides, padding)
  params = _window_params(window_dimensions, window_strides, padding, base_dilation,
                          window_dilation)
  monoid = reductions.match_monoid(computation, flat_inits, _monoid_window_reducers)
  if monoid is not None:
    return tree_util.tree_unflatten(op_tree, [monoid.bind(flat_ops[0], **params)])
  n = len(flat_inits)

  def flat_comp(acc, x):
    out = computation(tree_util.tree_unflatten(init_tree, acc),
                      tree_util.tree_unflatten(init_tree, x))
    leaves, out_tree = tree_util.tree_flatten(out)
    if out_tree != init_tree or len(leaves) != n:
      raise TypeError(f"reduce_window output must have the same tree structure as the "
                      f"operands {op_tree} vs. {out_tree}")
    return leaves
  return tree_util.tree_unflatten(op_tree, _bind_generic(flat_ops, flat_inits, flat_comp,
                                                         params))

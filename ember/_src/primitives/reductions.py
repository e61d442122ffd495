"""Reduction primitives (reduce_sum ... reduce_xor, argmax/argmin) and cumulative ones
(cumsum, cumprod, cummax, cummin, cumlogsumexp), with their `lax` functions.

Params follow JAX 0.12 exactly: reduce_sum/max/min carry `axes` and `out_sharding`;
reduce_prod and the logical reductions carry only `axes`; argmax/argmin `axes` (one
axis) and `index_dtype`; the cumulative ops `axis` and `reverse`. Axes must be
non-negative at this level (jnp canonicalizes them).
"""
from __future__ import annotations

import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.base.config import config
from ember._src.core import ShapedArray, get_aval
from ember._src.transforms import ad, batching
from ember._src.primitives import (ANY, BOOL, FLOAT, INTS, NUMERIC, check_dtype, declare,
                                   dtype_kind)
from ember._src.primitives import elementwise as ew
from ember._src.primitives import structural
from ember._src.reference.reductions import compute_dtype, is_zero_winner, xla_zero_order
from ember._src.reference.reductions import identity as _identity
from ember._src.reference.scans import xla_scan
from ember._src.primitives.elementwise import convert_element_type


# --- lowering helpers ------------------------------------------------------------------

def _lower_in_compute_dtype(ctx, x, fn):
  """Run `fn(x)` in the impl's accumulation dtype (float32 for 16-bit floats) and convert
  the result back, so compiled results round like the reference."""
  return ctx.convert(fn(ctx.convert(x, compute_dtype(x.dtype))), x.dtype)


def _reduce_lowering(opcode: str, init, accumulate_wide: bool = False):
  """A single-operand `reduce` with the scalar computation `opcode` and init `init(dtype)`."""
  def rule(ctx, x, *, axes, out_sharding=None):
    if not axes:
      return x
    def reduce(v):
      init_val = ctx.constant(init(v.dtype), v.dtype)
      return ctx.reduce([v], [init_val], axes, ctx.scalar_computation(opcode, v.dtype))[0]
    return _lower_in_compute_dtype(ctx, x, reduce) if accumulate_wide else reduce(x)
  return rule


def _all_ones(dt):
  return True if np.dtype(dt) == np.bool_ else -1  # -1 wraps to all ones in unsigned types

__all__ = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
           "reduce_or", "reduce_xor", "argmax", "argmin", "cumsum", "cumprod", "cummax",
           "cummin", "cumlogsumexp", "reduce"]


def _reduced_shape(x: ShapedArray, axes) -> tuple:
  if len(axes) != len(set(axes)):
    raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
  if not all(0 <= a < x.ndim for a in axes):
    raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for "
                     f"{x.str_short(short_dtypes=False)}.")
  return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _check_logical(name, x):
  if dtype_kind(x.dtype) not in BOOL + INTS:
    raise TypeError(f"logical reduction requires operand dtype bool or int, got "
                    f"{x.dtype.name}.")


def _reduction(name: str, check, impl, *, sharding_param: bool, strip_weak=False,
               check_axes=None):
  """A reduction primitive and its lax function. `check(name, aval)` validates the dtype,
  `check_axes(aval, axes)` (if given) the reduction; `sharding_param`: JAX gives the
  primitive an `out_sharding` param (sum, max, min)."""
  def abstract_eval(x, *, axes, out_sharding=None):
    check(name, x)
    if check_axes is not None:
      check_axes(x, axes)
    return ShapedArray(_reduced_shape(x, axes), x.dtype, x.weak_type and not strip_weak)
  prim = declare(name, abstract_eval, impl)
  prim.batch = batching.reducer(prim)

  if sharding_param:
    def fn(operand, axes, *, out_sharding=None):
      return prim.bind(operand, axes=_axes(axes), out_sharding=None)
  else:
    def fn(operand, axes):
      return prim.bind(operand, axes=_axes(axes))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"lax.{name}: reduce `operand` over `axes` (non-negative)."
  return prim, fn


def _kinds(kinds):
  return lambda name, x: check_dtype(name, x, kinds, "operand")


def _axes(axes) -> tuple:
  return tuple(operator.index(a) for a in axes)


def _sum_impl(x, *, axes, out_sharding=None):
  with np.errstate(all="ignore"):  # inf + -inf is NaN silently, as compiled code does
    return np.sum(x, axis=axes, dtype=compute_dtype(x.dtype)).astype(x.dtype)


def _prod_impl(x, *, axes):
  with np.errstate(all="ignore"):
    return np.prod(x, axis=axes, dtype=compute_dtype(x.dtype)).astype(x.dtype)


def _minmax_impl(ufunc):
  def impl(x, *, axes, out_sharding=None):
    cdt = compute_dtype(x.dtype)
    xc = x.astype(cdt)
    out = np.asarray(ufunc.reduce(xc, axis=axes, initial=_identity(ufunc, x.dtype)))
    if dtype_kind(cdt) == "f":
      out = xla_zero_order(ufunc, out, np.any(is_zero_winner(ufunc, xc), axis=axes))
    return out.astype(x.dtype)
  return impl


def _logical_impl(bool_ufunc, int_ufunc):
  def impl(x, *, axes):
    ufunc = bool_ufunc if x.dtype == np.bool_ else int_ufunc
    return np.asarray(ufunc.reduce(x, axis=axes)).astype(x.dtype)
  return impl


def _check_f16_sum(x, axes):
  """jax_allow_f16_reductions=False: a float16/bfloat16 sum over a non-unit axis raises."""
  if (x.dtype in (np.dtype(np.float16), np.dtype(dtypes.bfloat16))
      and not config._values["jax_allow_f16_reductions"]
      and not all(x.shape[a] == 1 for a in axes)):
    raise ValueError(f"reduce_sum on operand {x.str_short(True)} is not allowed when "
                     "jax_allow_f16_reductions=False.")


reduce_sum_p, reduce_sum = _reduction("reduce_sum", _kinds(NUMERIC), _sum_impl,
                                      sharding_param=True, check_axes=_check_f16_sum)
reduce_prod_p, reduce_prod = _reduction("reduce_prod", _kinds(NUMERIC), _prod_impl,
                                        sharding_param=False)
reduce_max_p, reduce_max = _reduction("reduce_max", _kinds(ANY), _minmax_impl(np.maximum),
                                      sharding_param=True)
reduce_min_p, reduce_min = _reduction("reduce_min", _kinds(ANY), _minmax_impl(np.minimum),
                                      sharding_param=True)
reduce_and_p, reduce_and = _reduction(
    "reduce_and", _check_logical, _logical_impl(np.logical_and, np.bitwise_and),
    sharding_param=False, strip_weak=True)
reduce_or_p, reduce_or = _reduction(
    "reduce_or", _check_logical, _logical_impl(np.logical_or, np.bitwise_or),
    sharding_param=False, strip_weak=True)
reduce_xor_p, reduce_xor = _reduction(
    "reduce_xor", _check_logical, _logical_impl(np.logical_xor, np.bitwise_xor),
    sharding_param=False, strip_weak=True)
reduce_sum_p.lower = _reduce_lowering("add", lambda dt: 0, accumulate_wide=True)
reduce_prod_p.lower = _reduce_lowering("multiply", lambda dt: 1, accumulate_wide=True)
reduce_max_p.lower = _reduce_lowering("maximum", lambda dt: _identity(np.maximum, dt))
reduce_min_p.lower = _reduce_lowering("minimum", lambda dt: _identity(np.minimum, dt))
reduce_and_p.lower = _reduce_lowering("and", _all_ones)
reduce_or_p.lower = _reduce_lowering("or", lambda dt: 0)
reduce_xor_p.lower = _reduce_lowering("xor", lambda dt: 0)


# --- argmax / argmin --------------------------------------------------------------------

def _argminmax(name: str, np_fn):
  def abstract_eval(x, *, axes, index_dtype):
    check_dtype(name, x, BOOL + INTS + FLOAT, "operand")
    if not dtypes.is_integer(index_dtype):
      raise TypeError(f"index_dtype must be an integer type, but got "
                      f"{np.dtype(index_dtype).name}")
    axis, = axes
    if not 0 <= axis < x.ndim:
      raise ValueError(f"Invalid axis {axis} for operand shape {x.shape}")
    if x.shape[axis] < 1:
      raise ValueError(f"argmin and argmax require non-empty reduced dimension. "
                       f"operand.shape={x.shape} axis={axis}")
    return ShapedArray(x.shape[:axis] + x.shape[axis + 1:], index_dtype, False)

  def impl(x, *, axes, index_dtype):
    # np.argmax/argmin return the first NaN when there is one, as JAX does.
    return np_fn(x.astype(compute_dtype(x.dtype)), axis=axes[0]).astype(index_dtype)

  prim = declare(name, abstract_eval, impl)
  prim.batch = batching.reducer(prim)

  def fn(operand, axis: int, index_dtype):
    index_dtype = dtypes.check_user_dtype(index_dtype, name)
    return prim.bind(operand, axes=(operator.index(axis),), index_dtype=index_dtype)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"lax.{name}: index of the {name[3:]}imum along `axis` (first on ties; NaN "
                "counts as the extreme).")
  return prim, fn


argmax_p, argmax = _argminmax("argmax", np.argmax)
argmin_p, argmin = _argminmax("argmin", np.argmin)


def _argminmax_lowering(name: str, direction: str):
  """A variadic reduce over (values, iota): the better value wins, NaN beats any number
  (the impl's first-NaN rule), and equal values or two NaNs go to the lower index, so the
  result does not depend on the order in which the reduction combines elements."""
  def rule(ctx, x, *, axes, index_dtype):
    axis, = axes
    vdt, is_float = x.dtype, dtype_kind(x.dtype) == FLOAT

    def combine(c, av, ai, bv, bi):
      better, tie = c.compare(av, bv, direction), c.compare(av, bv, "EQ")
      if is_float:
        a_nan, b_nan = c.is_nan(av), c.is_nan(bv)
        better = c.or_(better, c.and_(a_nan, c.not_(b_nan)))
        tie = c.or_(tie, c.and_(a_nan, b_nan))
      pick_a = c.or_(better, c.and_(tie, c.compare(ai, bi, "LT")))
      return [c.select(pick_a, av, bv), c.select(pick_a, ai, bi)]

    comp = ctx.region(f"{name}_combine", [vdt, index_dtype, vdt, index_dtype], combine)
    init = _identity(np.maximum if direction == "GT" else np.minimum, vdt)
    inits = [ctx.constant(init, vdt), ctx.constant(0, index_dtype)]
    return ctx.reduce([x, ctx.iota(index_dtype, x.dims, axis)], inits, axes, comp)[1]
  return rule


argmax_p.lower = _argminmax_lowering("argmax", "GT")
argmin_p.lower = _argminmax_lowering("argmin", "LT")


# --- cumulative -------------------------------------------------------------------------

def _cumulative(name: str, kinds: str, accumulate, float_scan=None):
  def abstract_eval(x, *, axis, reverse):
    check_dtype(name, x, kinds, "operand")
    if not 0 <= axis < x.ndim:
      raise ValueError(f"axis {axis} is out of bounds for array of shape {x.shape}")
    return x

  def impl(x, *, axis, reverse):
    if float_scan is not None and dtype_kind(x.dtype) in "fc":
      return float_scan(x, axis, reverse)
    y = np.flip(x, axis) if reverse else x
    with np.errstate(over="ignore", invalid="ignore"):
      out = accumulate(y.astype(compute_dtype(x.dtype)), axis).astype(x.dtype)
    return np.flip(out, axis) if reverse else out

  prim = declare(name, abstract_eval, impl)
  prim.batch = batching.cumulative(prim)

  def fn(operand, axis: int = 0, reverse: bool = False):
    axis = operator.index(axis)
    if axis < 0:
      raise ValueError("XLA operations do not allow negative axes")
    return prim.bind(operand, axis=axis, reverse=bool(reverse))
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"lax.{name}: inclusive scan along `axis` (from the end if `reverse`)."
  return prim, fn


def _accumulate_in_dtype(ufunc):
  return lambda y, axis: ufunc.accumulate(y, axis=axis, dtype=y.dtype)


def _in_xla_order(ufunc, init):
  """A float scan whose rounding depends on the grouping (sum, product, logaddexp), in
  XLA:CPU's order, rounding to the operand's dtype at each step (reference/scans.py)."""
  def scan(x, axis, reverse):
    dt = x.dtype
    if ufunc is np.logaddexp:   # NumPy has no 16-bit logaddexp: in float32, then rounded
      combine = lambda a, b: np.logaddexp(a, b, dtype=compute_dtype(dt)).astype(dt)
    else:
      combine = lambda a, b: ufunc(a, b, dtype=dt)
    return xla_scan(x, axis, reverse, combine, init)
  return scan


def _accumulate_extremal(ufunc):
  def accumulate(y, axis):
    out = ufunc.accumulate(y, axis=axis, dtype=y.dtype)
    if dtype_kind(y.dtype) != "f":
      return out
    return xla_zero_order(ufunc, out, np.logical_or.accumulate(is_zero_winner(ufunc, y), axis))
  return accumulate


cumsum_p, cumsum = _cumulative("cumsum", NUMERIC, _accumulate_in_dtype(np.add),
                                _in_xla_order(np.add, 0))
cumprod_p, cumprod = _cumulative("cumprod", NUMERIC, _accumulate_in_dtype(np.multiply),
                                  _in_xla_order(np.multiply, 1))
cummax_p, cummax = _cumulative("cummax", NUMERIC, _accumulate_extremal(np.maximum))
cummin_p, cummin = _cumulative("cummin", NUMERIC, _accumulate_extremal(np.minimum))
cumlogsumexp_p, cumlogsumexp = _cumulative("cumlogsumexp", FLOAT,
                                           _accumulate_in_dtype(np.logaddexp),
                                           _in_xla_order(np.logaddexp, -np.inf))


def _logaddexp(ctx, a, b):
  """log(exp(a) + exp(b)) without overflow; a + b where a - b is NaN (equal infinities
  or a NaN operand), as np.logaddexp."""
  d = ctx.sub(a, b)
  neg_abs = ctx.elementwise("negate", ctx.elementwise("abs", d))
  out = ctx.add(ctx.max(a, b), ctx.elementwise("log-plus-one", ctx.elementwise("exponential",
                                                                               neg_abs)))
  return ctx.select(ctx.is_nan(d), ctx.add(a, b), out)


def _cumulative_lowering(name: str, opcode: str | None, identity):
  """An inclusive scan as one reduce-window whose window spans the whole axis, padded by
  n - 1 identities before it (after it when `reverse`), as JAX lowers it. Backends
  recognize the shape (hlo.scan_window) and run it as a scan along the axis, never as n
  windows of n: in XLA:CPU's order and rounding where grouping matters (float sums and
  products: reference/scans.py, the scan_expansion pass). It runs in the operand's dtype
  (a bfloat16 sum rounds at every step, as XLA's). `identity(dt)` is the init (+0.0 for
  sums, JAX's: a cumsum of -0.0 is +0.0); max/min use theirs."""
  def rule(ctx, x, *, axis, reverse):
    n = x.shape.dims[axis]
    if n == 0:
      return x
    dt = x.dtype
    comp = (ctx.scalar_computation(opcode, dt) if opcode is not None else
            ctx.region(f"{name}_combine", [dt, dt], _logaddexp))
    init = ctx.constant(identity(dt) if identity else _identity(
        np.maximum if opcode == "maximum" else np.minimum, dt), dt)
    rank = x.shape.rank
    pad = (0, n - 1) if reverse else (n - 1, 0)
    window = {"window_dimensions": [n if d == axis else 1 for d in range(rank)],
              "window_strides": [1] * rank,
              "padding": [pad if d == axis else (0, 0) for d in range(rank)],
              "base_dilation": [1] * rank, "window_dilation": [1] * rank}
    return ctx.reduce_window([x], [init], comp, x.dims, window)[0]
  return rule


cumsum_p.lower = _cumulative_lowering("cumsum", "add", lambda dt: 0)
cumprod_p.lower = _cumulative_lowering("cumprod", "multiply", lambda dt: 1)
cummax_p.lower = _cumulative_lowering("cummax", "maximum", None)
cummin_p.lower = _cumulative_lowering("cummin", "minimum", None)
cumlogsumexp_p.lower = _cumulative_lowering("cumlogsumexp", None, lambda dt: -np.inf)


# --- differentiation rules -------------------------------------------------------------
# argmax/argmin and the logical reductions have integer/bool results: zero tangents.

def _kept(ndim, axes):
  return tuple(i for i in range(ndim) if i not in axes)


def _reduce_sum_transpose(ct, x, *, axes, out_sharding=None):
  shape = x.aval.shape
  return [structural.broadcast_in_dim(ct, shape, _kept(len(shape), axes))]


def _reduce_chooser_jvp(prim):
  """The tangent at the extremal elements, averaged over ties (JAX's rule)."""
  def rule(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    ans = prim.bind(x, **params)
    shape = _shape_of(x)
    where = ew.convert_element_type(
        ew.eq(x, structural.broadcast_in_dim(ans, shape, _kept(len(shape), params["axes"]))),
        dtypes.dtype(x, canonicalize=True))
    counts = reduce_sum(where, params["axes"])
    return ans, ew.div(reduce_sum(ew.mul(t, where), params["axes"]), counts)
  return rule


def _shape_of(x):
  return get_aval(x).shape


def _reduce_prod_jvp(primals, tangents, *, axes):
  """d prod = sum_i t_i * prod_{j != i} x_j, the products from exclusive prefix and suffix
  products (exact with zeros among the x)."""
  (x,), (t,) = primals, tangents
  ans = reduce_prod_p.bind(x, axes=axes)
  shape = _shape_of(x)
  kept = _kept(len(shape), axes)
  n = int(np.prod([shape[a] for a in axes], dtype=np.int64))
  if n == 0:
    return ans, structural.full_like(ans, 0)
  flat = lambda v: structural.reshape(structural.transpose(v, kept + tuple(axes)),
                                      tuple(shape[i] for i in kept) + (n,))
  xf, tf = flat(x), flat(t)
  last = len(kept)
  one = np.ones((), dtypes.dtype(x, canonicalize=True))
  no_pad = [(0, 0, 0)] * last
  left = cumprod(structural.pad(structural.slice_in_dim(xf, 0, n - 1, axis=last), one,
                                no_pad + [(1, 0, 0)]), axis=last)
  right = cumprod(structural.pad(structural.slice_in_dim(xf, 1, n, axis=last), one,
                                 no_pad + [(0, 1, 0)]), axis=last, reverse=True)
  return ans, reduce_sum(ew.mul(tf, ew.mul(left, right)), (last,))


def _scan_jvp(combine):
  """JAX's rule: the jvp of `associative_scan(combine)` (its odd/even recursion), so ties,
  NaNs and infinities get JAX's tangents: the combining op's own jvp (max/min split ties in
  halves) applied along the same tree. `combine()` returns the binary function; the tangent
  is linear in the input tangents (the values are residuals)."""
  def rule(primals, tangents, *, axis, reverse):
    # deferred: cycle among the primitive families
    from ember._src.primitives.control import associative_scan
    (x,), (t,) = primals, tangents
    scan = lambda v: associative_scan(combine(), v, reverse=reverse, axis=axis)
    if type(t) is ad.Zero:
      out = scan(x)
      return out, ad.Zero.from_value(out)
    return ad.jvp(scan, (x,), (t,))
  return rule


reduce_sum_p.jvp = ad.linear_jvp(reduce_sum_p)
reduce_sum_p.transpose = _reduce_sum_transpose
reduce_max_p.jvp = _reduce_chooser_jvp(reduce_max_p)
reduce_min_p.jvp = _reduce_chooser_jvp(reduce_min_p)
reduce_prod_p.jvp = _reduce_prod_jvp
ad.deflinear(cumsum_p, lambda ct, *, axis, reverse: [cumsum(ct, axis, not reverse)])
cumprod_p.jvp = _scan_jvp(lambda: ew.mul)
cummax_p.jvp = _scan_jvp(lambda: ew.max)
cummin_p.jvp = _scan_jvp(lambda: ew.min)
# cumlogsumexp's jvp scans jnp.logaddexp: library/numpy/ufuncs.py registers it


# --- lax.reduce: a monoid (add/mul/max/min/bitwise with its identity) becomes reduce_sum
# etc. as in JAX; any other computation is a generic `reduce` carrying it as a jaxpr. -------

def match_monoid(computation, inits, table):
  """The result paired with `computation` in `table(dtype)` = [(lax op, result, identity),
  ...] when the single init value is a concrete scalar equal to that op's identity, else
  None (JAX's _get_monoid_reducer; reduce_window uses it too)."""
  if len(inits) != 1:
    return None
  x = inits[0]
  aval = core.get_aval(x)
  if aval.shape != () or isinstance(x, core.Tracer):
    return None
  val = core.to_numpy(x, aval) if not isinstance(x, (int, float, bool, complex)) else x
  computation = getattr(computation, "__wrapped__", computation)  # ember.lax's strict forms
  for op, result, identity in table(aval.dtype):
    if computation is op:
      with np.errstate(all="ignore"):
        return result if np.equal(val, identity()) else None
  return None


def _monoid_reducers(dt):
  """reduce_sum etc. by the lax op they reduce with, and that op's identity."""
  table = [(ew.add, reduce_sum, lambda: 0), (ew.mul, reduce_prod, lambda: 1),
           (ew.max, reduce_max, lambda: _identity(np.maximum, dt)),
           (ew.min, reduce_min, lambda: _identity(np.minimum, dt))]
  if np.dtype(dt) == np.bool_ or dtype_kind(dt) in INTS:
    table += [(ew.bitwise_or, reduce_or, lambda: 0), (ew.bitwise_xor, reduce_xor, lambda: 0),
              (ew.bitwise_and, reduce_and, lambda: np.array(_all_ones(dt)).astype(dt))]
  return table


def _generic_reduce_abstract_eval(*avals, computation, jaxpr, dimensions):
  n = len(avals) // 2
  ops, inits = avals[:n], avals[n:]
  if any(a.shape != ops[0].shape for a in ops):
    raise ValueError(f"reduce operands must have the same shape, got "
                     f"{[a.shape for a in ops]}")
  if [a.dtype for a in ops] != [a.dtype for a in inits]:
    raise TypeError(f"reduce operand dtypes should match corresponding initial value "
                    f"dtypes, got operands={list(ops)} and initial_values={list(inits)}")
  shape = _reduced_shape(ops[0], dimensions)
  outs = [v.aval for v in jaxpr.outvars]
  if len(outs) != n or any(o.shape != () or o.dtype != a.dtype for o, a in zip(outs, ops)):
    raise TypeError(f"reduction computation must return {n} scalars of the operand dtypes, "
                    f"got {[o.str_short() for o in outs]}")
  return [ShapedArray(shape, a.dtype) for a in ops]


def _generic_reduce_impl(*vals, computation, jaxpr, dimensions):
  """A left fold of the computation along the reduced dimensions, vectorized over the kept
  elements (the computation's equations are elementwise on scalars, so they run on
  vectors of lanes)."""
  n = len(vals) // 2
  ops, inits = vals[:n], vals[n:]
  nd = ops[0].ndim
  kept = [i for i in range(nd) if i not in dimensions]
  out_shape = tuple(ops[0].shape[i] for i in kept)
  flat = [np.transpose(x, kept + list(dimensions)).reshape(
      (int(np.prod(out_shape, dtype=np.int64)), -1)) for x in ops]
  acc = [np.broadcast_to(np.asarray(i), flat[0].shape[:1]).astype(x.dtype)
         for i, x in zip(inits, ops)]
  for j in range(flat[0].shape[1]):
    acc = [np.asarray(core.to_numpy(o)) for o in core.eval_jaxpr(
        jaxpr, jaxpr.consts, *acc, *[f[:, j] for f in flat])]
    acc = [np.broadcast_to(a, flat[0].shape[:1]) for a in acc]
  return [np.asarray(a, x.dtype).reshape(out_shape) for a, x in zip(acc, ops)]


reduce_p = declare("reduce", _generic_reduce_abstract_eval, _generic_reduce_impl,
                   multiple_results=True)


def _generic_reduce_batch(axis_data, vals, dims, *, computation, jaxpr, dimensions):
  n = len(vals) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("vmap of lax.reduce over batched init_values is not "
                              "supported; pass unbatched init values.")
  size = batching.batch_size(vals, dims)
  ops = [batching.bdim_at_front(x, d, size) for x, d in zip(vals[:n], dims[:n])]
  outs = reduce_p.bind(*ops, *vals[n:], computation=computation, jaxpr=jaxpr,
                       dimensions=tuple(d + 1 for d in dimensions))
  return outs, [0] * n


def _generic_reduce_lower(ctx, *xs, computation, jaxpr, dimensions):
  n = len(xs) // 2
  comp = ctx.lower_computation(jaxpr, "reducer")
  return ctx.reduce(list(xs[:n]), list(xs[n:]), dimensions, comp)


reduce_p.batch = _generic_reduce_batch
reduce_p.lower = _generic_reduce_lower


def flatten_operands(operands, init_values):
  """The leaves and treedefs of lax.reduce's (and reduce_window's) operands and init values,
  checked to have one structure."""
  flat_ops, op_tree = tree_util.tree_flatten(operands)
  flat_inits, init_tree = tree_util.tree_flatten(init_values)
  if op_tree != init_tree:
    raise ValueError(f"Operands must have the same tree structure as init_values: "
                     f"{op_tree} vs. {init_tree}")
  if len(flat_ops) != len(flat_inits):
    raise ValueError(f"Must have same total number of operands as init_values: "
                     f"{len(flat_ops)} vs. {len(flat_inits)}")
  return flat_ops, op_tree, flat_inits, init_tree


def reduce(operands, init_values, computation, dimensions):
  """Reduce `operands` (a pytree of arrays) over `dimensions` with `computation`, a
  function of (accumulators, values) pytrees shaped like `init_values` (jax.lax.reduce)."""
  flat_ops, op_tree, flat_inits, init_tree = flatten_operands(operands, init_values)
  dimensions = _axes(dimensions)
  monoid = match_monoid(computation, flat_inits, _monoid_reducers)
  if monoid is not None:
    weak = all(core.get_aval(x).weak_type for x in flat_ops + flat_inits)
    x = flat_ops[0]
    if dtypes.is_python_scalar(x):
      x = convert_element_type(x, core.get_aval(x).dtype, weak_type=True)
    out = monoid(x, dimensions)
    return convert_element_type(out, core.get_aval(out).dtype, weak_type=weak)
  init_avals = [core.get_aval(x).update(weak_type=False) for x in flat_inits]

  def flat_comp(*xs):
    n = len(init_avals)
    out = computation(tree_util.tree_unflatten(init_tree, list(xs[:n])),
                      tree_util.tree_unflatten(init_tree, list(xs[n:])))
    leaves, out_tree = tree_util.tree_flatten(out)
    return leaves, out_tree
  jaxpr, out_tree = core.trace_to_jaxpr(flat_comp, init_avals + init_avals)
  if any(isinstance(c, core.Tracer) for c in jaxpr.consts):
    raise TypeError("the computation of lax.reduce closes over a traced value; pass it as "
                    "an operand instead.")
  if out_tree != init_tree:
    raise TypeError(f"reduction computation must return the structure of init_values "
                    f"{init_tree}, got {out_tree}")
  flat_inits = [convert_element_type(i, a.dtype) if dtypes.is_python_scalar(i) else i
                for i, a in zip(flat_inits, init_avals)]
  outs = reduce_p.bind(*flat_ops, *flat_inits, computation=computation, jaxpr=jaxpr,
                       dimensions=dimensions)
  return tree_util.tree_unflatten(out_tree, outs)


# Reductions and scans by max, min or logic: the NumPy reference computes the compiled bits,
# so eager calls may switch to compiled code at any time (core/primitive.py's
# `reference_exact`)
for _p in (reduce_max_p, reduce_min_p, reduce_and_p, reduce_or_p, reduce_xor_p, argmax_p,
           argmin_p, cummax_p, cummin_p):
  _p.reference_exact = True

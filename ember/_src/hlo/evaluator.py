"""The reference evaluator of ember's HLO IR: XLA's semantics on NumPy arrays.

It is the oracle of the backend's tests, the engine of constant folding and of the
"checked" mode (run the optimized module here too and compare instruction by instruction).
Correctness beats speed, but nothing here is quadratic: elementwise ops are NumPy calls,
and computations that apply a scalar computation many times (reduce's `to_apply`, sort's
comparator, scatter's combiner) run it once per step on whole vectors of "lanes".

Elementwise opcodes run the NumPy kernels the corresponding lax primitives' impls run
(`ember/_src/reference/elementwise.py`), so eager mode and this evaluator agree on XLA's
edge semantics by construction: integer div/rem truncate (x/0 = -1, x%0 = x, INT_MIN/-1 =
INT_MIN), shifts by out-of-range amounts, saturating float->int converts with NaN -> 0,
NaN-propagating max/min, transcendentals computed in float64 and rounded. Structural ops
run the structural/indexing/linalg/sorting kernels of `reference/` where their parameters
map one to one.

Every result has exactly the dtype and dims of its instruction's shape (a shape mismatch
means malformed IR and raises `HloEvalError` naming the instruction).

Subnormals: a module run (`evaluate`, `evaluate_intermediates`) computes as the compiled
code runs it, with subnormal operands read and results written as zeros (XLA:CPU's
flush-to-zero, base/denormals.py); `eval_instr` and `evaluate_computation` compute in the
caller's modes: constant folding's (IEEE, as XLA folds on the compiling thread).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ember._src.hlo import graph as hlo
from ember._src.base import denormals
from ember._src.base.dtypes import dtype_kind
from ember._src.reference import (
    convolution, elementwise as ew, fft, indexing as ix, lapack, linalg, reductions, scans,
    sorting, structural as st, threefry, windows)

__all__ = ["evaluate", "evaluate_intermediates", "evaluate_computation", "eval_instr",
           "HloEvalError"]


class HloEvalError(ValueError):
  """An instruction the evaluator cannot run (custom-call), or malformed IR."""


# --------------------------------------------------------------------------------------
# Elementwise opcodes: opcode -> (NumPy kernel, its params)
# --------------------------------------------------------------------------------------

_RM = ew.RoundingMethod
_ELEMENTWISE_KERNELS: dict[str, tuple[Any, dict]] = {
    "abs": (ew.abs, {}), "negate": (ew.neg, {}), "sign": (ew.sign, {}),
    "floor": (ew.floor, {}), "ceil": (ew.ceil, {}),
    "round-nearest-afz": (ew.round, {"rounding_method": _RM.AWAY_FROM_ZERO}),
    "round-nearest-even": (ew.round, {"rounding_method": _RM.TO_NEAREST_EVEN}),
    "exponential": (ew.exp, {}), "exponential-minus-one": (ew.expm1, {}),
    "log": (ew.log, {}), "log-plus-one": (ew.log1p, {}), "tanh": (ew.tanh, {}),
    "logistic": (ew.logistic, {}), "sine": (ew.sin, {}), "cosine": (ew.cos, {}),
    "tan": (ew.tan, {}), "sqrt": (ew.sqrt, {}), "rsqrt": (ew.rsqrt, {}),
    "cbrt": (ew.cbrt, {}), "erf": (ew.erf, {}), "erfc": (ew.erfc, {}),
    "erf-inv": (ew.erf_inv, {}), "fma": (ew.fma, {}), "lgamma": (ew.lgamma, {}),
    "digamma": (ew.digamma, {}),
    "asin": (ew.asin, {}), "acos": (ew.acos, {}), "atan": (ew.atan, {}),
    "sinh": (ew.sinh, {}), "cosh": (ew.cosh, {}), "asinh": (ew.asinh, {}),
    "acosh": (ew.acosh, {}), "atanh": (ew.atanh, {}), "is-finite": (ew.is_finite, {}),
    "not": (ew.bitwise_not, {}), "popcnt": (ew.population_count, {}),
    "count-leading-zeros": (ew.clz, {}), "real": (ew.real, {}), "imag": (ew.imag, {}),
    "add": (ew.add, {}), "subtract": (ew.sub, {}), "multiply": (ew.mul, {}),
    "divide": (ew.div, {}), "remainder": (ew.rem, {}), "power": (ew.pow, {}),
    "maximum": (ew.max, {}), "minimum": (ew.min, {}), "atan2": (ew.atan2, {}),
    "and": (ew.bitwise_and, {}), "or": (ew.bitwise_or, {}), "xor": (ew.bitwise_xor, {}),
    "shift-left": (ew.shift_left, {}),
    "shift-right-arithmetic": (ew.shift_right_arithmetic, {}),
    "shift-right-logical": (ew.shift_right_logical, {}),
    "complex": (ew.complex, {}), "next-after": (ew.nextafter, {}),
}


def _quiet(fn):
  def wrapped(*args, **kw):
    with np.errstate(all="ignore"):
      return fn(*args, **kw)
  return wrapped


@_quiet
def _integer_power(x, y):
  """XLA:CPU's integer power (checked against it): square-and-multiply over the low 6
  bits of the exponent; an exponent >= 64 gives 0 for an even base (x**64 wraps to 0);
  a negative exponent gives 1 for base 1, +-1 for base -1 and 0 otherwise."""
  acc, base, e = np.ones_like(x), x.copy(), y.copy()
  for _ in range(6):
    acc = np.where((e & 1) == 1, acc * base, acc)
    base, e = base * base, e >> 1
  acc = np.where((y >= 64) & (x % 2 == 0), 0, acc).astype(x.dtype)
  if x.dtype.kind == "u":
    return acc
  neg = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 0, 1, -1), 0))
  return np.where(y >= 0, acc, neg).astype(x.dtype)


def _total_order_key(x):
  """Floats as signed integers ordered like XLA's TOTALORDER compare:
  -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN."""
  s = ew.as_signed(x)
  fill = s >> (ew.bits(x.dtype) - 1)                    # all ones for negative values
  return s ^ (fill & np.array(np.iinfo(s.dtype).max, s.dtype))


_DIRECTIONS = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
               "GT": np.greater, "GE": np.greater_equal}


@_quiet
def _compare(x, y, *, direction, compare_type=None):
  """XLA's compare. The compare_type matters only for floats (TOTALORDER vs IEEE FLOAT):
  integers compare by their element type's signedness whatever it says, as XLA:CPU does."""
  kind = dtype_kind(x.dtype)
  if compare_type == "TOTALORDER" and kind == "f":
    x, y = _total_order_key(x), _total_order_key(y)
  if kind == "c" and direction not in ("EQ", "NE"):
    raise HloEvalError(f"compare direction {direction} is not defined for complex operands")
  return _DIRECTIONS[direction](x, y)


def _elementwise(instr: hlo.Instr, vals: list) -> np.ndarray:
  op, dt = instr.opcode, np.dtype(instr.dtype)
  if len(vals) > 1 and len({v.shape for v in vals}) > 1:
    vals = np.broadcast_arrays(*vals)   # scalar operands of select/clamp; lanes of constants
  if op == "convert":
    return ew.convert_element_type(vals[0], new_dtype=dt, weak_type=False)
  if op == "bitcast-convert":
    return ew.bitcast_convert_type(vals[0], new_dtype=dt)
  if op == "reduce-precision":
    return ew.reduce_precision(vals[0], exponent_bits=instr.attrs["exponent_bits"],
                               mantissa_bits=instr.attrs["mantissa_bits"])
  if op == "copy":
    return np.array(vals[0])
  if op == "compare":
    return _compare(*vals, direction=instr.attrs["direction"],
                    compare_type=instr.attrs.get("compare_type"))
  if op == "select":
    return np.where(vals[0], vals[1], vals[2])
  if op == "clamp":
    return ew.clamp(*vals)   # NaN propagates, as XLA's clamp
  if op == "power" and dtype_kind(vals[0].dtype) in "iu":
    return _integer_power(*vals)
  kernel, params = _ELEMENTWISE_KERNELS[op]
  return kernel(*vals, **params)


# --------------------------------------------------------------------------------------
# Scalar computations applied to vectors of lanes (reduce, sort, scatter)
# --------------------------------------------------------------------------------------

_LANE_STRUCTURAL = {"parameter", "constant", "tuple", "get-tuple-element", "broadcast",
                    "reshape", "call", "fusion", "optimization-barrier"}


def _lane_ok(comp: hlo.Computation) -> bool:
  """Whether every instruction of the scalar computation `comp` is elementwise (or a
  scalar no-op), so running it on 1-D arrays computes it for every lane at once."""
  for i in comp.instrs:
    if isinstance(i.shape, hlo.Shape) and i.shape.dims:
      return False
    if i.opcode in hlo.ELEMENTWISE:
      if i.opcode == "bitcast-convert" and \
          np.dtype(i.dtype).itemsize != np.dtype(i.operands[0].dtype).itemsize:
        return False
    elif i.opcode not in _LANE_STRUCTURAL or not all(_lane_ok(c) for c in i.called):
      return False
  return True


def _flat(value) -> list:
  if isinstance(value, tuple):
    return [a for v in value for a in _flat(v)]
  return [value]


def _apply_lanes(comp: hlo.Computation, args: Sequence[np.ndarray]) -> list[np.ndarray]:
  """Apply the scalar computation `comp` to each lane of the 1-D arrays `args` (all the
  same length); returns its outputs (a tuple root flattened) as 1-D arrays."""
  n = max((a.shape[0] for a in args), default=0)
  args = [np.broadcast_to(a, (n,)) for a in args]
  if _lane_ok(comp):
    outs = _flat(evaluate_computation(comp, args, _lanes=True))
    return [np.broadcast_to(o, (n,)) for o in outs]
  results = [_flat(evaluate_computation(comp, [a[k:k + 1].reshape(()) for a in args]))
             for k in range(n)]
  dts = [np.dtype(s.dtype) for s in _shapes(comp.root.shape)]
  return [np.array([r[j] for r in results], dtype=dt).reshape(n)
          for j, dt in enumerate(dts)]


def _shapes(shape) -> list:
  if isinstance(shape, hlo.TupleShape):
    return [s for e in shape.elements for s in _shapes(e)]
  return [shape]


def _binary_root(comp: hlo.Computation) -> str | None:
  """The opcode when `comp` is `op(p0, p1)` (in either order for commutative ops), as in
  the reduce and scatter computations lowering builds for sum, max, ..."""
  r, ps = comp.root, comp.params
  if len(ps) != 2 or r.opcode not in hlo.BINARY or r.opcode == "compare":
    return None
  if r.operands == ps or (r.opcode in _COMMUTATIVE and r.operands == ps[::-1]):
    return r.opcode
  return None


_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "and", "or", "xor"}
_REDUCE_UFUNCS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
                  "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
                  "xor": np.bitwise_xor}


# --------------------------------------------------------------------------------------
# reduce
# --------------------------------------------------------------------------------------

def _reduce(instr: hlo.Instr, vals: list):
  n = len(vals) // 2
  xs, inits = vals[:n], vals[n:]
  dims = tuple(instr.attrs["dimensions"])
  comp = instr.called[0]
  shapes = _shapes(instr.shape)
  out_dims = tuple(d for i, d in enumerate(xs[0].shape) if i not in dims)
  n_red = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64))
  if n_red == 0:
    outs = [np.broadcast_to(v, out_dims) for v in inits]
  elif n == 1 and _binary_root(comp) in _REDUCE_UFUNCS and not (
      dtype_kind(xs[0].dtype) == "c" and _binary_root(comp) in ("maximum", "minimum")):
    op = _binary_root(comp)
    x = xs[0]
    cdt = reductions.compute_dtype(x.dtype) if op in ("add", "multiply") else x.dtype
    with np.errstate(all="ignore"):
      ufunc = _REDUCE_UFUNCS[op]
      part = ufunc.reduce(x.astype(cdt), axis=dims, dtype=cdt)
      if ufunc in (np.maximum, np.minimum):
        part = reductions.xla_zero_order(ufunc, np.asarray(part),
                                         np.any(reductions.is_zero_winner(ufunc, x), axis=dims))
      out = _elementwise(comp.root, [np.asarray(inits[0]).astype(cdt), np.asarray(part)])
    outs = [np.asarray(out)]
  else:
    outs = _reduce_generic(comp, xs, inits, dims, out_dims)
  outs = [np.asarray(o).astype(s.dtype, copy=False).reshape(s.dims) for o, s in zip(outs, shapes)]
  return tuple(outs) if isinstance(instr.shape, hlo.TupleShape) else outs[0]


def _reduce_generic(comp, xs, inits, dims, out_dims) -> list:
  """Any reduction computation: combine neighbouring partial results pairwise (XLA leaves
  the order unspecified and assumes an associative computation), earlier elements on the
  left, then fold the result into the init values."""
  rank = xs[0].ndim
  n_out = int(np.prod(out_dims, dtype=np.int64))
  n_red = int(np.prod([xs[0].shape[d] for d in dims], dtype=np.int64))
  dest = tuple(range(rank - len(dims), rank))
  parts = [np.moveaxis(x, dims, dest).reshape(n_out, n_red) for x in xs]
  while parts[0].shape[1] > 1:
    m = parts[0].shape[1]
    h = m // 2
    combined = _apply_lanes(comp, [p[:, :h].reshape(-1) for p in parts] +
                            [p[:, h:2 * h].reshape(-1) for p in parts])
    combined = [c.astype(p.dtype, copy=False).reshape(n_out, h) for c, p in zip(combined, parts)]
    if m % 2:
      combined = [np.concatenate([c, p[:, 2 * h:]], axis=1) for c, p in zip(combined, parts)]
    parts = combined
  init_lanes = [np.broadcast_to(np.asarray(v), (n_out,)) for v in inits]
  return [o.reshape(out_dims) for o in
          _apply_lanes(comp, init_lanes + [p.reshape(n_out) for p in parts])]


def _scan_window(instr: hlo.Instr, vals: list, axis: int, reverse: bool) -> np.ndarray:
  """A reduce-window that is an inclusive scan (hlo.scan_window), in O(n). A combine any
  grouping of which gives the same bits (hlo.regroupable) folds the elements along `axis`
  (from the end when `reverse`) with NumPy's accumulate (max/min with XLA's signed zeros);
  any other (float sums and products, logaddexp) runs in XLA:CPU's order and rounding
  (reference/scans.py), its binary op by NumPy in the operand's dtype, else the
  computation on all positions at once (lanes)."""
  x, init = vals
  comp = instr.called[0]
  op = _binary_root(comp)
  if not hlo.regroupable(comp, x.dtype):
    if op in ("add", "multiply"):
      ufunc = _REDUCE_UFUNCS[op]
      combine = lambda a, b: ufunc(a, b, dtype=x.dtype)
    else:
      def combine(a, b):
        a, b = np.broadcast_arrays(a, b)
        return _apply_lanes(comp, [a.reshape(-1), b.reshape(-1)])[0].reshape(a.shape)
    return scans.xla_scan(x, axis, reverse, combine, init).astype(instr.dtype, copy=False)
  y = np.moveaxis(x, axis, 0)
  y = y[::-1] if reverse else y
  seq = np.concatenate([np.broadcast_to(np.asarray(init).astype(x.dtype), (1,) + y.shape[1:]),
                        y])
  with np.errstate(all="ignore"):
    ufunc = _REDUCE_UFUNCS[op]
    out = ufunc.accumulate(seq, axis=0, dtype=x.dtype)[1:]
    if op in ("maximum", "minimum"):
      won = np.logical_or.accumulate(reductions.is_zero_winner(ufunc, seq), axis=0)
      out = reductions.xla_zero_order(ufunc, out, won[1:])
  out = out[::-1] if reverse else out
  return np.moveaxis(out, 0, axis).astype(instr.dtype, copy=False)


def _reduce_window(instr: hlo.Instr, vals: list):
  """Every window's elements (padding and holes hold the init value) folded in window
  order into the init value; a max/min/sum with a binary root reduces them with NumPy."""
  scan = hlo.scan_window(instr)
  if scan is not None:
    return _scan_window(instr, vals, *scan)
  n = len(vals) // 2
  xs, inits = vals[:n], vals[n:]
  a = instr.attrs
  window = (a["window_dimensions"], a["window_strides"], a["padding"], a["base_dilation"],
            a["window_dilation"])
  comp = instr.called[0]
  shapes = _shapes(instr.shape)
  op = _binary_root(comp)
  if n == 1 and op in ("add", "maximum", "minimum") and dtype_kind(xs[0].dtype) != "c":
    ufunc = _REDUCE_UFUNCS[op]
    cdt = reductions.compute_dtype(xs[0].dtype) if op == "add" else xs[0].dtype
    p = windows.patches(xs[0].astype(cdt), np.asarray(inits[0]).astype(cdt), *window)
    with np.errstate(all="ignore"):
      part = np.asarray(ufunc.reduce(p, axis=-1))
      if op != "add":
        part = reductions.xla_zero_order(ufunc, part,
                                         np.any(reductions.is_zero_winner(ufunc, p), axis=-1))
      outs = [_elementwise(comp.root, [np.asarray(inits[0]).astype(cdt), part])]
  else:
    ps = [windows.patches(x, v, *window) for x, v in zip(xs, inits)]
    out_dims = ps[0].shape[:-1]
    acc = [np.broadcast_to(np.asarray(v), (int(np.prod(out_dims, dtype=np.int64)),))
           for v in inits]
    for k in range(ps[0].shape[-1]):
      acc = _apply_lanes(comp, acc + [p[..., k].reshape(-1) for p in ps])
    outs = [o.reshape(out_dims) for o in acc]
  outs = [np.asarray(o).astype(s.dtype, copy=False).reshape(s.dims) for o, s in zip(outs, shapes)]
  return tuple(outs) if isinstance(instr.shape, hlo.TupleShape) else outs[0]


# --------------------------------------------------------------------------------------
# sort and top-k
# --------------------------------------------------------------------------------------

def _sort(instr: hlo.Instr, vals: list):
  dim = instr.attrs["dimension"]
  shapes = _shapes(instr.shape)
  num_keys = instr.attrs.get("num_keys", 1)
  if vals[0].ndim == 0 or vals[0].shape[dim] <= 1:
    outs = list(vals)
  elif not instr.called:   # no comparator: JAX's order over the first `num_keys` operands
    outs = sorting.sort(*vals, dimension=dim, is_stable=True, num_keys=num_keys)
  else:
    perm = _comparator_sort_perm(instr.called[0], vals, dim, num_keys)
    outs = [np.take_along_axis(v, perm, axis=dim) for v in vals]
  outs = [np.asarray(o).astype(s.dtype, copy=False) for o, s in zip(outs, shapes)]
  return tuple(outs) if isinstance(instr.shape, hlo.TupleShape) else outs[0]


def _comparator_sort_perm(comp, vals: list, dim: int, num_keys: int) -> np.ndarray:
  """The stable sorting permutation along `dim` under the comparator `comp` (params lhs_0,
  rhs_0, lhs_1, rhs_1, ...; returns lhs < rhs; XLA requires a strict weak order).

  Most comparators are JAX's ascending or descending order: NumPy sorts with those first,
  and the comparator itself checks the guess (no adjacent pair inverted, equivalent
  neighbours in input order: then it is *the* stable sort). Otherwise a merge sort."""
  moved = [np.moveaxis(v, dim, -1) for v in vals]
  shape = moved[0].shape
  rows2d = [m.reshape(-1, shape[-1]) for m in moved]
  keys = [k for x in rows2d[:num_keys] for k in sorting.sort_keys(x)]
  up = np.lexsort(keys[::-1], axis=-1)
  n = shape[-1]
  down = (n - 1 - np.lexsort([k[:, ::-1] for k in keys[::-1]], axis=-1))[:, ::-1]
  for guess in (up, down):
    if _is_stable_sort(comp, rows2d, guess):
      perm = guess
      break
  else:
    perm = _merge_sort_perm(comp, rows2d)
  return np.moveaxis(perm.reshape(shape), -1, dim)


def _is_stable_sort(comp, rows2d: list, perm: np.ndarray) -> bool:
  s = [np.take_along_axis(r, perm, axis=1) for r in rows2d]
  a, b = [x[:, :-1].reshape(-1) for x in s], [x[:, 1:].reshape(-1) for x in s]
  pairs = lambda x, y: [v for xy in zip(x, y) for v in xy]
  inverted = _apply_lanes(comp, pairs(b, a))[0].astype(bool)
  if inverted.any():
    return False
  equivalent = ~_apply_lanes(comp, pairs(a, b))[0].astype(bool)
  return bool((perm[:, 1:] > perm[:, :-1]).reshape(-1)[equivalent].all())


def _merge_sort_perm(comp, rows2d: list) -> np.ndarray:
  """A bottom-up merge sort of every row in which each element finds its place in the
  partner run by a binary search, all elements of all rows at once: about log2(n)^2 / 2
  comparator applications, each on whole vectors."""
  rows, n = rows2d[0].shape
  flat = [r.reshape(-1) for r in rows2d]
  p = np.tile(np.arange(n), rows)                      # position within the row
  row0 = np.repeat(np.arange(rows) * n, n)             # flat index of the row's start
  perm = p.copy()                                      # perm[row0 + j]: source of slot j
  w = 1
  while w < n:
    cur = [f[row0 + perm] for f in flat]
    pair = (p // (2 * w)) * (2 * w)
    left = (p // w) % 2 == 0
    own_start = np.where(left, pair, pair + w)
    partner = row0 + np.where(left, pair + w, pair)
    plen = np.clip(np.where(left, n - pair - w, w), 0, w)
    last = np.minimum(partner + np.maximum(plen - 1, 0), row0 + n - 1)   # stays in the row
    # Left elements count the partner's elements strictly below them (comp(b, a)); right
    # ones count those not above them (!comp(b, a)), so equal keys keep their order.
    lo, hi = np.zeros_like(p), plen.copy()
    for _ in range(int(w).bit_length()):
      mid = (lo + hi) >> 1
      other = [c[np.minimum(partner + mid, last)] for c in cur]
      args = []
      for o, me in zip(other, cur):
        args += [np.where(left, o, me), np.where(left, me, o)]
      raw = _apply_lanes(comp, args)[0].astype(bool)
      pred = raw == left
      active = lo < hi
      lo = np.where(active & pred, mid + 1, lo)
      hi = np.where(active & ~pred, mid, hi)
    new_perm = np.empty_like(perm)
    new_perm[row0 + pair + (p - own_start) + lo] = perm
    perm = new_perm
    w *= 2
  return perm.reshape(rows, n)


def _top_k(instr: hlo.Instr, vals: list):
  x = vals[0]
  axis = instr.attrs.get("axis", x.ndim - 1)
  values, idx = sorting.top_k(x, k=instr.attrs["k"], axis=axis, is_stable=True)
  vshape, ishape = instr.shape.elements
  return values.astype(vshape.dtype, copy=False), idx.astype(ishape.dtype)


# --------------------------------------------------------------------------------------
# dot, gather, scatter
# --------------------------------------------------------------------------------------

def _dot(instr: hlo.Instr, vals: list):
  a = instr.attrs
  dn = ((tuple(a.get("lhs_contracting_dims", ())), tuple(a.get("rhs_contracting_dims", ()))),
        (tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))))
  lhs, rhs = vals
  dt = np.dtype(instr.dtype)
  try:
    return linalg.dot_general(lhs, rhs, dimension_numbers=dn, preferred_element_type=dt)
  except TypeError:   # an output type lax would not produce: compute in it directly
    return linalg.dot_general(lhs.astype(dt), rhs.astype(dt), dimension_numbers=dn)


def _convolution(instr: hlo.Instr, vals: list):
  a = instr.attrs
  params = {k: a[k] for k in ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                              "dimension_numbers", "feature_group_count", "batch_group_count")}
  return convolution.conv_general_dilated(*vals, preferred_element_type=np.dtype(instr.dtype),
                                          **params)


def _index_vector_last(indices, ivd: int, batching_dims) -> tuple:
  """XLA's `index_vector_dim` moved to the last dimension (as the lax impls expect); an
  index_vector_dim equal to the rank means scalar indices (a trailing 1 is added)."""
  if ivd >= indices.ndim:
    return indices[..., None], tuple(batching_dims)
  return (np.moveaxis(indices, ivd, -1),
          tuple(d if d < ivd else d - 1 for d in batching_dims))


def _gather(instr: hlo.Instr, vals: list):
  a = instr.attrs
  operand, indices = vals
  indices, ibatch = _index_vector_last(indices, a["index_vector_dim"],
                                       a.get("start_indices_batching_dims", ()))
  dn = ix.GatherDimensionNumbers(tuple(a["offset_dims"]), tuple(a["collapsed_slice_dims"]),
                                 tuple(a["start_index_map"]),
                                 tuple(a.get("operand_batching_dims", ())), ibatch)
  # XLA's gather clamps every window into bounds.
  return ix.gather(operand, indices, dimension_numbers=dn,
                   slice_sizes=tuple(a["slice_sizes"]), unique_indices=False,
                   indices_are_sorted=False, mode=ix.GatherScatterMode.CLIP,
                   fill_value=None)


def _scatter(instr: hlo.Instr, vals: list):
  a = instr.attrs
  n = (len(vals) - 1) // 2
  operands, indices, updates = vals[:n], vals[n], vals[n + 1:]
  indices, ibatch = _index_vector_last(indices, a["index_vector_dim"],
                                       a.get("scatter_indices_batching_dims", ()))
  dn = ix.ScatterDimensionNumbers(tuple(a["update_window_dims"]),
                                  tuple(a["inserted_window_dims"]),
                                  tuple(a["scatter_dims_to_operand_dims"]),
                                  tuple(a.get("input_batching_dims", ())), ibatch)
  # C order: a copy of a broadcast operand may come out Fortran-ordered, and reshape(-1)
  # of that is a copy, which would lose the writes below
  outs = [np.array(o, order="C") for o in operands]
  if outs[0].size and updates[0].size:   # XLA skips windows not fully in bounds
    windows = [ix.scatter_windows(outs[0].shape, indices, u, dn,
                                  ix.GatherScatterMode.FILL_OR_DROP) for u in updates]
    _scatter_combine(instr.called[0], [o.reshape(-1) for o in outs], windows[0][0],
                     [v for _, v in windows])
  return tuple(outs) if isinstance(instr.shape, hlo.TupleShape) else outs[0]


def _scatter_combine(comp: hlo.Computation, flats: list, pos: np.ndarray, upd: list) -> None:
  """flats[pos[j]] = comp(flats[pos[j]], upd[j]) for every update j, in update order."""
  op = _binary_root(comp) if len(flats) == 1 else None
  ps = comp.params
  if len(flats) == 1 and comp.root is ps[1]:          # plain overwrite: the last update wins
    flats[0][pos] = upd[0]
    return
  if op in _REDUCE_UFUNCS or (op == "subtract" and comp.root.operands == ps):
    with np.errstate(all="ignore"):
      (np.subtract if op == "subtract" else _REDUCE_UFUNCS[op]).at(flats[0], pos, upd[0])
    return
  # General combiner: round r applies the r-th update of every position, all positions
  # at once (positions are unique within a round, so order within a position is kept).
  order = np.argsort(pos, kind="stable")
  sorted_pos = pos[order]
  first = np.r_[True, sorted_pos[1:] != sorted_pos[:-1]] if len(pos) else np.zeros(0, bool)
  group_start = np.maximum.accumulate(np.where(first, np.arange(len(pos)), 0))
  rank = np.empty(len(pos), np.int64)
  rank[order] = np.arange(len(pos)) - group_start
  for r in range(int(rank.max(initial=-1)) + 1):
    sel = np.nonzero(rank == r)[0]
    at = pos[sel]
    res = _apply_lanes(comp, [f[at] for f in flats] + [u[sel] for u in upd])
    for f, v in zip(flats, res):
      f[at] = v


# --------------------------------------------------------------------------------------
# Control flow and calls
# --------------------------------------------------------------------------------------

def _while(instr: hlo.Instr, vals: list):
  cond, body = instr.called
  state = list(vals)
  while bool(np.asarray(evaluate_computation(cond, state))):
    out = evaluate_computation(body, state)
    state = list(out) if len(state) > 1 else [out]
  return tuple(state) if len(state) > 1 else state[0]


def _conditional(instr: hlo.Instr, vals: list):
  sel, ops, branches = vals[0], vals[1:], instr.called
  if sel.dtype == np.bool_:
    b = 0 if bool(sel) else 1        # (pred, true_computation, false_computation)
  else:
    b = int(sel)
    b = b if 0 <= b < len(branches) else len(branches) - 1   # out of range: last branch
  # XLA's forms pass branch i its own operand (pred, true_op, false_op) / (index, op_0, ...);
  # otherwise every branch takes all the operands.
  per_branch = len(ops) == len(branches) and all(len(c.params) == 1 for c in branches)
  comp, args = branches[b], ([ops[b]] if per_branch else list(ops))
  return evaluate_computation(comp, args)


def _custom_call(instr: hlo.Instr, vals: list):
  fn = lapack.CUSTOM_CALL_TARGETS.get(instr.attrs.get("target"))
  if fn is not None:
    outs = fn(instr.attrs.get("backend_config", ()), *vals)
    return tuple(outs) if isinstance(instr.shape, hlo.TupleShape) else outs[0]
  raise HloEvalError(
      f"custom-call %{instr.name} (target {instr.attrs.get('target')!r}) has no reference "
      "semantics: the HLO evaluator cannot run custom calls. Evaluate the module before the "
      "pass that introduced it, or give the custom call's target a lowering to HLO ops.")


def _rng_bit_generator(instr: hlo.Instr, vals: list):
  raise HloEvalError(
      f"rng-bit-generator %{instr.name}: its bits depend on the backend's algorithm, so it "
      "has no reference value; ember draws random bits with threefry2x32 instead.")


# --------------------------------------------------------------------------------------
# The opcode table
# --------------------------------------------------------------------------------------

def _slice(instr, vals):
  a = instr.attrs
  strides = a.get("strides") or (1,) * len(a["start"])
  return st.slice(vals[0], start_indices=a["start"], limit_indices=a["limit"],
                  strides=strides)


def _pad(instr, vals):
  a = instr.attrs
  return st.pad(vals[0], vals[1], padding_config=tuple(zip(a["low"], a["high"],
                                                           a["interior"])))


def _iota(instr, vals):
  """A broadcast view of one converted arange (an iota feeding a fused compare can be
  large; it is never materialized here)."""
  dims, d = tuple(instr.dims), instr.attrs["iota_dimension"]
  line = np.arange(dims[d]).astype(instr.dtype)
  return np.broadcast_to(line.reshape([-1 if i == d else 1 for i in range(len(dims))]), dims)


def _broadcast(instr, vals):
  return st.broadcast_in_dim(vals[0], shape=tuple(instr.dims),
                             broadcast_dimensions=tuple(instr.attrs["dimensions"]))


def _optimization_barrier(instr, vals):
  return vals[0] if len(vals) == 1 else tuple(vals)


_OPS = {
    "constant": lambda i, v: np.asarray(i.attrs["value"]),
    "iota": _iota,
    "broadcast": _broadcast,
    "reshape": lambda i, v: np.reshape(v[0], i.dims),
    "transpose": lambda i, v: np.transpose(v[0], i.attrs["dimensions"]),
    "reverse": lambda i, v: np.flip(v[0], tuple(i.attrs["dimensions"])),
    "slice": _slice,
    "dynamic-slice": lambda i, v: ix.dynamic_slice(v[0], *v[1:],
                                                   slice_sizes=tuple(i.attrs["sizes"])),
    "dynamic-update-slice": lambda i, v: ix.dynamic_update_slice(*v),
    "concatenate": lambda i, v: np.concatenate(v, axis=i.attrs["dimension"]),
    "pad": _pad,
    "reduce": _reduce,
    "reduce-window": _reduce_window,
    "dot": _dot,
    "convolution": _convolution,
    "gather": _gather,
    "scatter": _scatter,
    "sort": _sort,
    "top-k": _top_k,
    "tuple": lambda i, v: tuple(v),
    "get-tuple-element": lambda i, v: v[0][i.attrs["index"]],
    "while": _while,
    "conditional": _conditional,
    "optimization-barrier": _optimization_barrier,
    "custom-call": _custom_call,
    "fft": lambda i, v: fft.fft(v[0], i.attrs["fft_type"], i.attrs["fft_length"]),
    "rng-bit-generator": _rng_bit_generator,
    "threefry2x32": lambda i, v: tuple(threefry.threefry2x32(*v)),
}
_LANE_NOOPS = {"broadcast", "reshape"}   # on scalars: the operand itself


def _conform(value, shape, instr, lanes: bool):
  """`value` with exactly the dtype (and, unless running lanes, the dims) of `shape`."""
  if isinstance(shape, hlo.TupleShape):
    if not isinstance(value, tuple) or len(value) != len(shape.elements):
      raise HloEvalError(f"%{instr.name} = {instr.opcode} produced "
                         f"{type(value).__name__} for tuple shape {shape.to_hlo(False)}")
    return tuple(_conform(v, s, instr, lanes) for v, s in zip(value, shape.elements))
  value = np.asarray(value)
  dt = np.dtype(shape.dtype)
  if value.dtype != dt:
    value = value.astype(dt)
  if not lanes and value.shape != tuple(shape.dims):
    if instr.opcode in hlo.ELEMENTWISE and value.size == 1:
      return np.broadcast_to(value.reshape(()), shape.dims)
    raise HloEvalError(f"%{instr.name} = {instr.opcode} produced dims {value.shape}, but "
                       f"its shape is {shape.to_hlo(False)}: malformed IR")
  return value


def eval_instr(instr: hlo.Instr, operand_values: Sequence, *, _lanes: bool = False):
  """The value of `instr` given the values of its operands (called computations are
  evaluated recursively): an np.ndarray of exactly the instruction's shape, or a tuple of
  them for a tuple shape. `parameter` has no value of its own (see evaluate_computation)."""
  vals = [v if isinstance(v, tuple) else np.asarray(v) for v in operand_values]
  op = instr.opcode
  if op == "parameter":
    raise HloEvalError(f"parameter %{instr.name} has no value of its own: evaluate its "
                       "computation with evaluate_computation(comp, args)")
  if _lanes and op in _LANE_NOOPS:
    out = vals[0]
  elif op in ("call", "fusion"):
    out = evaluate_computation(instr.called[0], vals, _lanes=_lanes)
  elif op in hlo.ELEMENTWISE:
    out = _elementwise(instr, vals)
  else:
    out = _OPS[op](instr, vals)
  return _conform(out, instr.shape, instr, _lanes)


# --------------------------------------------------------------------------------------
# Computations and modules
# --------------------------------------------------------------------------------------

def _check_arg(p: hlo.Instr, arg, lanes: bool):
  if isinstance(p.shape, hlo.TupleShape):
    if not isinstance(arg, tuple):
      raise TypeError(f"parameter %{p.name} has tuple shape {p.shape.to_hlo(False)}; pass "
                      f"a tuple of arrays, got {type(arg).__name__}")
    return arg
  if type(arg) in (bool, int, float, complex):
    arg = np.asarray(arg, np.dtype(p.dtype))
  arg = np.asarray(arg)
  if arg.dtype != np.dtype(p.dtype) or (not lanes and arg.shape != tuple(p.dims)):
    raise TypeError(f"parameter {p.attrs['number']} (%{p.name}) expects "
                    f"{p.shape.to_hlo(False)}, got {np.dtype(arg.dtype).name}"
                    f"{list(arg.shape)}")
  return arg


def evaluate_computation(comp: hlo.Computation, args: Sequence, *,
                         record: dict | None = None, _lanes: bool = False):
  """Run `comp` on `args` (one value per parameter, in parameter-number order) and return
  its root's value: an np.ndarray, or a tuple for a tuple-shaped root. When `record` is a
  dict it receives every instruction's value (`record[instr] = value`), which is what the
  checked mode compares against the compiled program."""
  params = comp.params
  if len(args) != len(params):
    raise TypeError(f"computation %{comp.name} takes {len(params)} arguments, got "
                    f"{len(args)}")
  env: dict[int, Any] = {p.id: _check_arg(p, a, _lanes) for p, a in zip(params, args)}
  for instr in comp.instrs:
    if instr.opcode != "parameter":
      try:
        env[instr.id] = eval_instr(instr, [env[o.id] for o in instr.operands], _lanes=_lanes)
      except HloEvalError:
        raise
      except KeyError as e:
        raise HloEvalError(f"%{instr.name} in %{comp.name} uses an operand that is not "
                           "before it in the computation") from e
      except Exception as e:
        raise HloEvalError(f"evaluating %{instr.name} = {instr.opcode}"
                           f"{instr.shape.to_hlo(False)} in %{comp.name}: "
                           f"{type(e).__name__}: {e}") from e
    if record is not None:
      record[instr] = env[instr.id]
  return env[comp.root.id]


def evaluate(module: hlo.Module, args: Sequence, *, record: dict | None = None
             ) -> list[np.ndarray]:
  """Run the module's entry computation on `args` (one array per parameter); returns one
  array per output (a tuple root is flattened), each of the exact dtype of its shape."""
  with denormals.flushed():
    out = evaluate_computation(module.entry, list(args), record=record)
    return [np.array(v) for v in _flat(out)]


def evaluate_intermediates(module: hlo.Module, args: Sequence) -> dict[str, Any]:
  """Every entry-computation instruction's value by instruction name (np.ndarray, or a
  tuple for tuple shapes): what the checked mode compares with the compiled program."""
  record: dict = {}
  with denormals.flushed():
    evaluate_computation(module.entry, list(args), record=record)
  return {instr.name: value for instr, value in record.items()}

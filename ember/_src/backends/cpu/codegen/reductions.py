"""Reductions: reduce and reduce-window inside a fusion (index rules: an inner loop that
applies the `to_apply` computation to scalars), and the loop nest of a fusion whose root is a
reduce keeping the input's minor dim (column sums, argmax over axis 0: `ColumnReduceNests`,
a part of KernelBuilder): the outputs are initialized, then accumulated with the minor dim
innermost, so the input is read contiguously and the accumulation vectorizes across output
elements.

A float sum/product/max/min over the contiguous minor dim of a short prologue
(`fixed_lanes_prologue`: row sums, x*x, (x - mean)**2, exp(x - max)) is explicit vector IR,
FIXED_LANES vector accumulators in a fixed order: the quick tier's code and the optimized
code compute the same bits, both at vector speed. Other float add/multiply combiners are
marked `reassoc` and max/min use llvm.maximum/minimum, so LLVM vectorizes them with vector
accumulators: the summation order then depends only on the code (vector width and
interleave chosen at compile time for the host). Either way a compiled module sums each
output element in the same order every run, for any split of the outer loop (threads split
only the outer dim); f32 sums of n terms stay within n*eps of the exact sum (sqrt(n)*eps
typical). Other combiners (argmax's variadic reduce, narrow floats) over the minor dim
accumulate VLANES interleaved lanes in stack slots, an element-wise lane loop LLVM
vectorizes, combined in lane order at the end. A reduce-window folds its window (unrolled
when small: pooling's output loop over channels then vectorizes) with padding and dilation
as selects. The prologues' vector code (`vector_prologue`, `_vector_value`) also fills the
emitter's row buffers (softmax's exp(x - max)).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import host
from ember._src.backends.cpu.codegen.index_maps import (_contiguous_slice, keeps_minor_dim,
                                                         reshape_index, slice_index)
from ember._src.backends.cpu.codegen.ir_helpers import (Inner, _flatten_vals, _select_value,
                                                         _unflatten_vals)
from ember._src.backends.cpu.codegen.ir_types import (F32, F64, I1, I32, const_of, is_narrow,
                                                       kind, reg_type)
from ember._src.passes.fusion import column_reduce_root


VLANES = 16  # lanes (stack slots) of reductions LLVM cannot vectorize itself (argmax)


def combiner_kind(comp: hlo.Computation) -> str | None:
  """The opcode of a reduce's to_apply when it is `op(p0, p1)` on its two parameters."""
  root = comp.root
  ps = comp.params
  if len(ps) == 2 and root.opcode in ("add", "multiply", "maximum", "minimum", "and", "or") \
      and {o.id for o in root.operands} == {p.id for p in ps} and len(root.operands) == 2:
    return root.opcode
  return None


def _reduce(em, instr, idx):
  n = len(instr.operands) // 2
  inputs, inits = instr.operands[:n], instr.operands[n:]
  rdims = sorted(instr.attrs["dimensions"])
  in_dims = inputs[0].shape.dims
  comp = instr.called[0]
  reassoc = reassociable(instr)
  if reassoc and int(np.prod([in_dims[d] for d in rdims])) <= SEQUENTIAL_MAX:
    reassoc = False           # a few terms: in order (tier-stable) costs next to nothing
  acc0 = [em.emit(i, ()) for i in inits]
  kept = iter(idx)
  full = [None if d in rdims else next(kept) for d in range(len(in_dims))]
  # A float reduction of a short prologue over the contiguous minor dim: explicit vector
  # lanes in a fixed order (`fixed_lanes`), no `reassoc` (its module may start quick)
  lanes_n = _fixed_lanes(em, inputs[0], in_dims, rdims, tuple(full)) \
      if reassoc or _float_max_min(instr) else 0
  reassoc = reassoc and not lanes_n

  def step(carried):
    em.push()
    index = tuple(full)
    vals = [em.emit(x, index) for x in inputs]
    out = em.apply(comp, _unflatten_vals(carried, acc0) + vals, reassoc=reassoc)
    em.pop()
    return _flatten_vals(out)

  # A combiner LLVM cannot vectorize by itself (variadic like argmax, or rounding to a
  # narrow float at every step) over the contiguous minor dim: VLANES independent
  # accumulators take interleaved elements (XLA leaves the reduction order unspecified),
  # breaking the loop-carried dependency chain; they are combined at the end (`lanes`).
  lanes_ok = (combiner_kind(comp) is None or is_narrow(inputs[0].dtype)) and \
      rdims and rdims[-1] == len(in_dims) - 1 and in_dims[-1] >= 2 * VLANES

  def lanes(d, carried):
    """Reduce the minor dim in blocks of VLANES: lane l of every block accumulates into
    slot l of a stack array per accumulator (an element-wise loop over the lanes, which
    LLVM vectorizes like a column reduction); then the lanes are combined in order, then
    the tail."""
    n = in_dims[d]
    blocks = n // VLANES
    b = em.b
    cur_block = b.block
    b.position_at_start(b.function.entry_basic_block)
    slots = [b.alloca(v.type, size=em.i64(VLANES)) for v in carried]
    b.position_at_end(cur_block)

    def at(slot, lane):
      return b.gep(slot, [lane], inbounds=True, source_etype=slot.type.pointee
                   if not getattr(slot.type, "is_opaque", True) else None)

    def init(lane, _c):
      for s_, v in zip(slots, carried):
        b.store(v, at(s_, lane))
      return []
    em.loop(em.i64(0), em.i64(VLANES), [], init)

    def block(jb, _c):
      base = em.mul_idx(jb, VLANES)

      def lane(l, _c2):
        full[d] = em.add_idx(base, l)
        ptrs = [at(s_, l) for s_ in slots]
        cur = [b.load(p_, typ=v.type) for p_, v in zip(ptrs, carried)]
        for p_, v in zip(ptrs, step(cur)):
          b.store(v, p_)
        return []
      em.loop(em.i64(0), em.i64(VLANES), [], lane)
      return []
    em.loop(em.i64(0), em.i64(blocks), [], block)

    def combine(l, acc):
      other = [b.load(at(s_, l), typ=v.type) for s_, v in zip(slots, carried)]
      return _flatten_vals(em.apply(comp, _unflatten_vals(acc, acc0) +
                                    _unflatten_vals(other, acc0)))
    first = [b.load(at(s_, em.i64(0)), typ=v.type) for s_, v in zip(slots, carried)]
    acc = em.loop(em.i64(1), em.i64(VLANES), first, combine)

    def tail(j, c):
      full[d] = j
      return step(c)
    return em.loop(em.i64(blocks * VLANES), em.i64(n), acc, tail)

  def fixed_lanes(d, carried):
    """The minor dim in blocks of FIXED_LANES vectors of `lanes_n` elements, vector u of a
    block into accumulator u (lane 0 of the first starts from the carried value, every other
    lane from the identity), the prologue computed on vectors (`_vector_value`); then the
    accumulators u < FIXED_LANES. The tail: its whole vectors into accumulators 0, 1, ..,
    then one vector ending at n (its lanes before the tail as the identity) into the next;
    then the accumulators and the halves of the vector combine pairwise. Explicit vector IR
    without fast-math flags: quick and optimized code add in this order (max and min, exact
    in any order, take this path for the quick tier's speed). A scalar tail was a chain of
    dependent steps (softmax's 1000-wide rows: 40 of them, a row max took twice the time of
    a 1024-wide one)."""
    b, n = em.b, in_dims[d]

    def op(x, y):
      return em.apply(comp, [x, y])[0]
    vt = ir.VectorType(carried[0].type, lanes_n)
    step_n = lanes_n * FIXED_LANES
    kind_ = combiner_kind(comp)
    ident = const_of(inputs[0].dtype, _IDENTITY[kind_])
    splat = ir.Constant(vt, [ident.constant] * lanes_n)
    first = b.insert_element(splat, carried[0], ir.Constant(I32, 0))
    # max/min on zmm: one vrange per vector, the NaNs in accumulators of their own (the
    # last NaN of each lane), merged back before the lanes combine: same bits, 3 not 6 ops
    ranged = kind_ in ("maximum", "minimum") and range_lanes_ok(vt)
    inits = [first] + [splat] * (FIXED_LANES - 1)

    def add_vectors(base, accs, count, first=0, keep_from=0):
      """Vectors k < count at base + k * lanes_n into accumulators first + k (and their
      NaNs'); lanes below `keep_from` (elements counted already) as the identity."""
      out, nans = list(accs[:FIXED_LANES]), list(accs[FIXED_LANES:])
      for u in range(first, first + count):
        full[d] = em.add_idx(base, em.i64((u - first) * lanes_n))
        em.push()
        x = _vector_value(em, inputs[0], tuple(full), vt)
        if keep_from:
          keep = ir.Constant(ir.VectorType(I1, lanes_n), [k >= keep_from for k in range(lanes_n)])
          x = b.select(keep, x, splat)
        if ranged:
          out[u] = em.fmax_number(out[u], x, kind_ == "maximum")
          nans[u] = b.select(b.fcmp_unordered("uno", x, x), x, nans[u])
        else:
          out[u] = op(out[u], x)
        em.pop()
      return out + nans

    def block(jb, accs):
      return add_vectors(em.mul_idx(jb, step_n), accs, FIXED_LANES)
    accs = em.loop(em.i64(0), em.i64(n // step_n), inits + (inits if ranged else []), block)
    done = n // step_n * step_n
    if done < n:
      # the tail's whole vectors, then one vector ending at n whose lanes seen already count
      # as the identity (max/min: exact in any order and idempotent, so they count twice),
      # into the next accumulators: no scalar loop (a dependent chain of up to 63 steps)
      whole = (n - done) // lanes_n
      accs = add_vectors(em.i64(done), accs, whole)
      rest = n - done - whole * lanes_n
      if rest:
        accs = add_vectors(em.i64(n - lanes_n), accs, 1, whole,
                           0 if kind_ in ("maximum", "minimum") else lanes_n - rest)
    if ranged:
      accs = [b.select(b.fcmp_unordered("uno", q, q), q, v)
              for v, q in zip(accs[:FIXED_LANES], accs[FIXED_LANES:])]
    while len(accs) > 1:
      half = len(accs) // 2
      accs = [op(accs[k], accs[k + half]) for k in range(half)]
    v, width = accs[0], lanes_n
    while width > 1:
      width //= 2
      upper = ir.Constant(ir.VectorType(I32, lanes_n),
                          [width + k if k < width else 0 for k in range(lanes_n)])
      v = op(v, b.shuffle_vector(v, ir.Constant(vt, None), upper))

    return [b.extract_element(v, ir.Constant(I32, 0))]

  def nest(level, carried):
    if level == len(rdims):
      return step(carried)
    d = rdims[level]
    if lanes_ok and level == len(rdims) - 1:
      return lanes(d, carried)
    if lanes_n and level == len(rdims) - 1:
      return fixed_lanes(d, carried)

    def body(i, c):
      full[d] = i
      return nest(level + 1, c)
    return em.loop(em.i64(0), em.i64(in_dims[d]), carried, body)

  em.hoist([(x, tuple(Inner() if v is None else v for v in full)) for x in inputs])

  res = _unflatten_vals(nest(0, _flatten_vals(acc0)), acc0)
  return res if isinstance(instr.shape, hlo.TupleShape) else res[0]


WINDOW_UNROLL = 64   # windows of at most this many elements are straight-line code


def _reduce_window(em, instr, idx):
  """XLA ReduceWindow at one output index: the window's elements folded in window order
  into the init values. Along each dim the operand position is (i * stride + k *
  window_dilation - pad_low) / base_dilation; off the grid of the base dilation or out of
  range the element is the init value (the position read is clamped into range and the
  value replaced by a select, so no branch is taken). Windows of at most WINDOW_UNROLL
  elements are unrolled: the output's minor loop, which usually indexes no window dim
  (pooling over H, W of NHWC), then vectorizes; larger windows are loops."""
  n = len(instr.operands) // 2
  inputs, inits = instr.operands[:n], instr.operands[n:]
  a = instr.attrs
  comp = instr.called[0]
  in_dims = inputs[0].shape.dims
  acc0 = [em.emit(i, ()) for i in inits]
  b = em.b
  windows = list(zip(in_dims, idx, a["window_dimensions"], a["window_strides"], a["padding"],
                     a["base_dilation"], a["window_dilation"], _out_dims(instr)))

  def read(ks):
    """The inputs' values at window offsets `ks` (Python ints or i64 values)."""
    if 0 in in_dims:     # an empty operand: every window holds only padding
      return list(acc0)
    ok, src = None, []
    for (d, i, w, s, (lo, hi), bd, wd, o), k in zip(windows, ks):
      static = isinstance(k, int)
      p = em.add_idx(em.mul_idx(i, s), em.i64(k * wd - lo) if static else
                     em.add_idx(em.mul_idx(k, wd), em.i64(-lo)))
      span = (d - 1) * bd + 1
      top = (o - 1) * s + (w - 1) * wd - lo
      if bd == 1 and lo <= 0 and top < span:      # always inside the operand
        src.append(p)
        continue
      inside = b.and_(b.icmp_signed(">=", p, em.i64(0)), b.icmp_signed("<", p, em.i64(span)))
      if bd != 1:
        safe = em.clamp_idx(p, 0, span - 1)
        inside = b.and_(inside, b.icmp_unsigned("==", b.urem(safe, em.i64(bd)), em.i64(0)))
        src.append(b.udiv(safe, em.i64(bd)))
      else:
        src.append(em.clamp_idx(p, 0, d - 1))
      ok = inside if ok is None else b.and_(ok, inside)
    vals = [em.emit(x, tuple(src)) for x in inputs]
    return vals if ok is None else [_select_value(em, ok, v, i) for v, i in zip(vals, acc0)]

  def step(carried, ks):
    em.push()
    out = em.apply(comp, _unflatten_vals(carried, acc0) + read(ks))
    em.pop()
    return _flatten_vals(out)

  wdims = a["window_dimensions"]
  carried = _flatten_vals(acc0)
  if int(np.prod(wdims, dtype=np.int64)) <= WINDOW_UNROLL:
    for ks in np.ndindex(*wdims):
      carried = step(carried, [int(k) for k in ks])
  else:
    ks = [None] * len(wdims)

    def nest(level, c):
      if level == len(wdims):
        return step(c, list(ks))

      def body(k, c2):
        ks[level] = k
        return nest(level + 1, c2)
      return em.loop(em.i64(0), em.i64(wdims[level]), c, body)
    carried = nest(0, carried)
  res = _unflatten_vals(carried, acc0)
  return res if isinstance(instr.shape, hlo.TupleShape) else res[0]


def _out_dims(instr: hlo.Instr) -> tuple:
  s = instr.shape
  return tuple(s.elements[0].dims if isinstance(s, hlo.TupleShape) else s.dims)


# Fixed-order lanes (`_reduce`'s fixed_lanes): FIXED_LANES vectors of 64 bytes (AVX-512
# zmm) of accumulators, as many independent add chains as LLVM's interleaved loop
# vectorizer kept in flight. Only a short prologue of vector-friendly ops qualifies (row
# sums, x*x, (x - mean)**2, softmax's sum of its row buffer, logsumexp's exp(x - max)):
# parameters read along the minor dim, row buffers (`fill_row_caches`), values invariant
# along it (broadcasts, scalar constants), float add/subtract/multiply/divide/negate and
# the math library's functions (which take vector types).
FIXED_LANES = 4
FIXED_LANES_BYTES = 64
FIXED_LANES_MAX_OPS = 6
SEQUENTIAL_MAX = 16     # float sums of at most this many terms per output: in order
_VECTOR_OPS = {"add", "subtract", "multiply", "divide", "negate"}


def range_lanes_ok(vt: ir.VectorType) -> bool:
  """Whether fixed-lanes max/min may use `fmax_number` (vrange: AVX-512DQ) on vectors of
  type `vt`: one zmm of float32 or float64."""
  el = vt.element
  return host.is_x86() and host.has("avx512dq") and \
      (el == F32 and vt.count == 16 or el == F64 and vt.count == 8)


def fixed_lanes_prologue(x: hlo.Instr, in_dims: Sequence[int], rdims: Sequence[int],
                         is_leaf: Callable = lambda i: False) -> list | None:
  """The ops `_vector_value` computes for a fixed-order float reduction of `x`, or None
  when there is none (reassociate instead): the reduction covers the minor dim, which is
  long enough, and x is made of vector-friendly ops down to values read along the minor dim
  (parameters, through reshapes that keep it; `is_leaf`: the emitter's row buffers) or
  invariant along it (scalars, broadcasts that do not map it)."""
  minor = len(in_dims) - 1
  if not rdims or rdims[-1] != minor or \
      in_dims[minor] < FIXED_LANES * FIXED_LANES_BYTES // np.dtype(x.dtype).itemsize:
    return None
  return vector_prologue(x, is_leaf)


def vector_prologue(x: hlo.Instr, is_leaf: Callable = lambda i: False) -> list | None:
  """The ops `_vector_value` computes for `x` on vectors along the minor dim (at most
  FIXED_LANES_MAX_OPS of them), or None when x is not made of vector-friendly ops down to
  values read along the minor dim (parameters, through reshapes that keep it and slices
  with stride 1 there; `is_leaf`: the emitter's row buffers) or invariant along it
  (scalars, broadcasts that do not map it)."""
  from ember._src.backends.cpu import mathlib   # deferred: its import costs ~20 ms
  ops, todo, seen = [], [(x, False)], set()
  while todo:
    i, reshaped = todo.pop()
    if (i.id, reshaped) in seen:
      continue
    seen.add((i.id, reshaped))
    if not i.shape.dims or i.opcode == "parameter" or \
        i.opcode == "broadcast" and len(i.shape.dims) - 1 not in i.attrs["dimensions"] or \
        is_leaf(i) and not reshaped:
      continue
    if i.opcode == "reshape" and keeps_minor_dim(i) or _contiguous_slice(i):
      todo.append((i.operands[0], True))
      continue
    if i.opcode not in _VECTOR_OPS and i.opcode not in mathlib.OPCODES or i.dtype != x.dtype:
      return None
    ops.append(i)
    todo.extend((o, reshaped) for o in i.operands)
  return ops if len(ops) <= FIXED_LANES_MAX_OPS else None


def _fixed_lanes(em, x: hlo.Instr, in_dims: Sequence[int], rdims: Sequence[int],
                 index: tuple) -> int:
  """The vector width of a fixed-order float reduction of `x` in this kernel (at `index`,
  the reduced dims unset), or 0."""
  if em.param_address is None or fixed_lanes_prologue(
      x, in_dims, rdims, lambda i: em.cached_row(i, index) is not None) is None:
    return 0
  return FIXED_LANES_BYTES // np.dtype(x.dtype).itemsize


_IDENTITY = {"add": -0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}


def column_lanes(reduce: hlo.Instr) -> int:
  """The vector width (FIXED_LANES_BYTES) at which a column reduction (a kernel root:
  `_column_reduce`) accumulates explicit vectors of output elements, or 0 (scalar code that
  LLVM may vectorize): a float (not narrow) sum, product, max or min of a vector-friendly
  prologue (`vector_prologue`). Each output element is still reduced in order, so the
  values are those of the scalar loop, and quick-tier code is vector code too."""
  x = reduce.operands[0]
  if len(reduce.operands) != 2 or combiner_kind(reduce.called[0]) not in _IDENTITY or \
      is_narrow(x.dtype) or kind(x.dtype) != "f" or x.dtype != reduce.dtype or \
      vector_prologue(x) is None:
    return 0
  return FIXED_LANES_BYTES // np.dtype(x.dtype).itemsize


def _float_max_min(reduce: hlo.Instr) -> bool:
  x = reduce.operands[0]
  return combiner_kind(reduce.called[0]) in ("maximum", "minimum") and \
      not is_narrow(x.dtype) and kind(x.dtype) == "f"


def reassociable(reduce: hlo.Instr) -> bool:
  """A float (not narrow) sum or product: LLVM vectorizes it only with `reassoc`."""
  x = reduce.operands[0]
  return combiner_kind(reduce.called[0]) in ("add", "multiply") and \
      not is_narrow(x.dtype) and kind(x.dtype) == "f"


def vector_transcendentals(comp: hlo.Computation) -> float:
  """The transcendentals fixed-order reductions compute on vectors in `comp` (fusions
  included): the quick tier runs them at vector speed (cost_model.quick_pays)."""
  n = 0.0
  for i in comp.instrs:
    if i.opcode == "reduce" and (reassociable(i) or _float_max_min(i)):
      x = i.operands[0]
      ops = fixed_lanes_prologue(x, x.shape.dims, sorted(i.attrs["dimensions"]))
      n += sum(o.opcode in hlo.TRANSCENDENTAL for o in ops or ()) * x.shape.size
    elif i.opcode in ("fusion", "call"):
      n += sum(vector_transcendentals(c) for c in i.called)
  return n


def _vector_value(em, x: hlo.Instr, index: tuple, vt: ir.VectorType,
                  reshaped: bool = False) -> ir.Value:
  """`x` at `index` and the next vt.count - 1 positions of the minor dim, as one vector
  (`_fixed_lanes` checked that x is made of what this computes)."""
  b = em.b
  cached = None if reshaped else em.cached_row(x, index)   # a row buffer (softmax's exp)
  if x.opcode == "parameter" and x.shape.dims or cached:
    ptr = b.gep(cached[1], [index[-1]], inbounds=True, source_etype=vt.element) if cached \
        else em.param_address(x.attrs["number"], index)
    v = b.load(ptr, typ=vt)
    v.align = np.dtype(x.dtype).itemsize
    return v
  if not x.shape.dims or x.opcode == "broadcast":     # invariant along the minor dim
    s = em.emit(x, index if x.shape.dims else ())
    one = b.insert_element(ir.Constant(vt, None), s, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(vt, None),
                            ir.Constant(ir.VectorType(I32, vt.count), [0] * vt.count))
  if x.opcode == "reshape":
    return _vector_value(em, x.operands[0], reshape_index(em, x, index), vt, True)
  if x.opcode == "slice":   # _contiguous_slice: consecutive along the minor dim
    return _vector_value(em, x.operands[0], slice_index(em, x, index), vt, True)
  return em.scalar_op(x, [_vector_value(em, o, index, vt, reshaped) for o in x.operands])


# Column reductions add this many input rows per pass over the output row: each output
# element is loaded and stored once per COLUMN_ROWS rows (the order of the terms is the
# same as one row per pass: bit-identical).
COLUMN_ROWS = 4


class ColumnReduceNests:
  """KernelBuilder's loop nest for a reduce root that keeps the input's minor dim; mixed
  into kernels.KernelBuilder."""

  # --- column reductions: accumulate into the output, the kept minor dim innermost ------
  def _column_reduce_plan(self, comp: hlo.Computation):
    """A reduce root (a simple combiner, or variadic like argmax) whose input keeps its
    minor dimension (`fusion.column_reduce_root`): the loop order (kept outer dims, reduced
    dims, minor dim) reads the input contiguously and vectorizes across output elements."""
    return comp.root if column_reduce_root(comp.root) else None

  def _column_reduce(self, em, root, out_dims, out_ptrs, out_shapes, start, stop):
    n_in = len(root.operands) // 2
    xs, inits = root.operands[:n_in], root.operands[n_in:]
    comp = root.called[0]
    rdims = sorted(root.attrs["dimensions"])
    in_dims = xs[0].shape.dims
    reassoc = False   # element-wise accumulation: no reordering needed to vectorize
    outer_dims = list(out_dims[:-1])
    minor = out_dims[-1]
    kept_in = [d for d in range(len(in_dims)) if d not in rdims]   # last is the minor dim
    init_vs = [em.emit(i, ()) for i in inits]
    oidx = [None] * len(out_dims)
    lanes = column_lanes(root) if em.param_address is not None else 0
    vt = ir.VectorType(reg_type(root.dtype), lanes) if lanes else None

    def minor_loop(lo, hi, fn):
      def body(j, _c):
        em.push()
        oidx[-1] = j
        fn(j)
        em.pop()
        return []
      em.loop(lo, hi, [], body)

    def with_outer(level, fn):
      """Loops over the output's non-minor dims (the first over [start, stop))."""
      if level == len(outer_dims):
        fn()
        return

      def body(i, _c):
        oidx[level] = i
        with_outer(level + 1, fn)
        return []
      lo, hi = (start, stop) if level == 0 else (em.i64(0), em.i64(outer_dims[level]))
      em.loop(lo, hi, [], body)

    full = [None] * len(in_dims)

    def work():
      jlo, jhi = ((start, stop) if not outer_dims else (em.i64(0), em.i64(minor)))

      def init_store(j):
        lin = em.linear(oidx, out_dims)
        for p, s, v in zip(out_ptrs, out_shapes, init_vs):
          em.store(p, lin, s.dtype, v)
      minor_loop(jlo, jhi, init_store)

      def rows(firsts, count):
        """Accumulate `count` consecutive indices of the innermost reduced dim from each of
        `firsts` into the output row, in order (one load and store of it per `count`):
        explicit vectors of `lanes` output elements (vt), then the rest one by one."""
        def acc_vector(jb, _c):
          oidx[-1] = em.add_idx(jlo, em.mul_idx(jb, lanes))
          for k, d in enumerate(kept_in):
            full[d] = oidx[k]
          ptr = em.b.gep(out_ptrs[0], [em.linear(oidx, out_dims)], inbounds=True,
                         source_etype=vt.element)
          cur = em.b.load(ptr, typ=vt)
          cur.align = np.dtype(out_shapes[0].dtype).itemsize
          for u in range(count):
            full[rdims[-1]] = em.add_idx(firsts, em.i64(u))
            em.push()
            cur = em.apply(comp, [cur, _vector_value(em, xs[0], tuple(full), vt)])[0]
            em.pop()
          em.b.store(cur, ptr).align = np.dtype(out_shapes[0].dtype).itemsize
          return []

        def acc(j):
          for k, d in enumerate(kept_in):
            full[d] = oidx[k]
          lin = em.linear(oidx, out_dims)
          cur = [em.load(p, lin, s.dtype) for p, s in zip(out_ptrs, out_shapes)]
          for u in range(count):
            full[rdims[-1]] = em.add_idx(firsts, em.i64(u))
            vals = [em.emit(x, tuple(full)) for x in xs]
            cur = em.apply(comp, cur + vals, reassoc=reassoc)
          for p, s, v in zip(out_ptrs, out_shapes, cur):
            em.store(p, lin, s.dtype, v)
        if not lanes:
          minor_loop(jlo, jhi, acc)
          return
        nvec = em.b.udiv(em.b.sub(jhi, jlo), em.i64(lanes))
        em.loop(em.i64(0), nvec, [], acc_vector)
        minor_loop(em.add_idx(jlo, em.mul_idx(nvec, lanes)), jhi, acc)

      def red(level):
        n = in_dims[rdims[level]]
        if level == len(rdims) - 1:
          # COLUMN_ROWS rows per pass over the output row, then the rest one at a time
          em.loop(em.i64(0), em.i64(n // COLUMN_ROWS), [], lambda i, _c: (
              rows(em.mul_idx(i, COLUMN_ROWS), COLUMN_ROWS), [])[1])
          em.loop(em.i64(n // COLUMN_ROWS * COLUMN_ROWS), em.i64(n), [],
                  lambda i, _c: (rows(i, 1), [])[1])
          return

        def body(i, _c):
          full[rdims[level]] = i
          em.push()
          red(level + 1)
          em.pop()
          return []
        em.loop(em.i64(0), em.i64(n), [], body)
      red(0)

    with_outer(0, work)

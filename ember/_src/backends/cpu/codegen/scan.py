"""Scans: the kernel of a scan-shaped reduce-window (hlo.scan_window: cumsum, cumprod,
cummax, cummin, cumlogsumexp), one sequential pass along the axis (a reverse scan whose
grouping matters: each window folded in window order, as XLA's; scan_expansion blocks the
long ones first, so its windows are short).

A reduce-window evaluated element by element (reductions._reduce_window) would fold a
window of n elements per output: O(n^2). A scan instead carries each lane's running value
along the axis: output i = combine(output i - 1, x[i]), starting from combine(init, x[0])
(from the end when reversed). The order is NumPy's accumulate order, so sums and products
equal the reference's bit for bit. The operand is a parameter (the fusion pass never fuses
a scan: fusion._fusible). Viewed as [outer, n, inner] (the axis in the middle), the lanes
are independent and the kernel's range [start, stop) runs over units of them:

- the axis is not minor (inner > 1): a unit is up to SCAN_LANES contiguous lanes of one
  outer index; each step along the axis is a contiguous loop over them reading the previous
  output row (in L1), which LLVM vectorizes;
- the axis is minor (inner == 1): a unit is ROW_GROUP rows, their running values carried in
  registers through one loop along the axis, unrolled over the rows: ROW_GROUP independent
  dependency chains per step instead of one (a scan is bound by its combine's latency);
- fewer rows than that, long ones (a 1-D cummax), and a combine any grouping of which gives
  the same bits (max/min, integer add/multiply and bitwise ops: `regroupable`): a unit is
  one row cut into ROW_GROUP segments scanned as independent chains, then each segment
  after the first combined with the running value before it (a vectorized second pass).
  Float sums and products keep one chain: regrouping would change their rounding.

The units split across threads like any kernel's outer range.
"""
from __future__ import annotations

import numpy as np

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu.codegen.ir_helpers import _flatten_vals, _unflatten_vals

SCAN_LANES = 256   # contiguous lanes a unit scans when the axis is not minor
ROW_GROUP = 8      # rows (or segments of a row) a unit scans together: independent chains
SEGMENT_MIN = 512  # elements per segment below which a row is not cut into segments




def scan_layout(dims, axis: int) -> tuple[int, int, int]:
  """(outer, n, inner): the operand as [outer, n, inner], the scanned axis in the middle."""
  prod = lambda ds: int(np.prod(ds, dtype=np.int64))
  return prod(dims[:axis]), dims[axis], prod(dims[axis + 1:])


class ScanNests:
  """KernelBuilder's nests for a scan root (a mixin: needs nothing of KernelBuilder)."""

  def _scan_nest(self, em, root: hlo.Instr, x_ptr, out_ptr, start, stop) -> int:
    """Emit the scan of `root` (reading its operand from `x_ptr`, writing `out_ptr`) over
    units [start, stop); returns the number of units (the kernel's outer range)."""
    axis, reverse = hlo.scan_window(root)
    x, init_instr = root.operands
    outer, n, inner = scan_layout(x.shape.dims, axis)
    if outer == 0 or inner == 0:
      return 0
    dt, comp = x.dtype, root.called[0]
    b = em.b
    init = em.emit(init_instr, ())
    combine = lambda acc, v: em.apply(comp, [acc, v])[0]
    last = em.i64(n - 1)
    along = (lambda p: b.sub(last, p, flags=("nsw",))) if reverse else (lambda p: p)

    def step(lin, acc):   # out[lin] = combine(acc, x[lin])
      v = combine(acc, em.load(x_ptr, lin, dt))
      em.store(out_ptr, lin, dt, v)
      return v

    def chains(bases, length: int, firsts=None) -> list:
      """Scan `length` elements from each of `bases` (offsets of position 0 along the axis),
      the running values (from `firsts`, else the init) in registers; returns them."""
      count = len(bases)
      starts = firsts or [init] * count

      def body(p, carried):
        i = along(p)
        accs = _unflatten_vals(carried, starts)
        return _flatten_vals([step(em.add_idx(base, i), acc) for base, acc in zip(bases, accs)])
      out = em.loop(em.i64(0), em.i64(length), _flatten_vals(starts), body)
      return _unflatten_vals(out, starts)

    def rows(first, count: int) -> None:
      """`count` whole rows from row `first`."""
      chains([em.mul_idx(em.add_idx(first, em.i64(g)), n) for g in range(count)], n)

    def segments(row) -> None:
      """One row cut into ROW_GROUP segments (the last one longer by n % ROW_GROUP), scanned
      as chains, then each later segment combined with the running value before it."""
      seg, start = n // ROW_GROUP, em.mul_idx(row, n)
      # segment k: scan positions [k * seg, (k + 1) * seg) (`along` maps them when reversed)
      at = lambda k: em.add_idx(start, em.i64(-k * seg if reverse else k * seg))
      accs = chains([at(k) for k in range(ROW_GROUP)], seg)
      if n % ROW_GROUP:       # the last segment's extra positions, on its own chain
        shift = em.i64(-seg if reverse else seg)
        accs[-1] = chains([em.add_idx(at(ROW_GROUP - 1), shift)], n % ROW_GROUP, accs[-1:])[0]
      carry = accs[0]
      for k in range(1, ROW_GROUP):
        size = seg if k < ROW_GROUP - 1 else n - k * seg
        lo = em.add_idx(start, em.i64(n - k * seg - size if reverse else k * seg))

        def fix(j, _c, lo=lo, carry=carry):
          lin = em.add_idx(lo, j)
          em.store(out_ptr, lin, dt, combine(carry, em.load(out_ptr, lin, dt)))
          return []
        em.loop(em.i64(0), em.i64(size), [], fix)
        carry = combine(carry, accs[k])

    def lanes(base, count: int) -> None:
      """`count` contiguous lanes from `base`; each step reads the previous output row."""
      def row(p, prev):
        def lane(j, _c):
          acc = init if prev is None else em.load(out_ptr, em.add_idx(prev, j), dt)
          step(em.add_idx(em.add_idx(base, em.mul_idx(along(p), inner)), j), acc)
          return []
        em.loop(em.i64(0), em.i64(count), [], lane)
      row(em.i64(0), None)

      def later(p, _c):
        before = along(b.sub(p, em.i64(1), flags=("nsw",)))
        row(p, em.add_idx(base, em.mul_idx(before, inner)))
        return []
      em.loop(em.i64(1), em.i64(n), [], later)

    def windows(base) -> None:
      """A reverse scan whose grouping matters, as XLA's reduce-window: output i folds its
      window x[i], x[i + 1], ..., x[n - 1] left to right (n <= BASE after scan_expansion)."""
      at = lambda k: em.add_idx(base, em.mul_idx(k, inner))

      def output(i, _c):
        def fold(k, carried):
          acc = _unflatten_vals(carried, [init])[0]
          return _flatten_vals([combine(acc, em.load(x_ptr, at(k), dt))])
        acc = _unflatten_vals(em.loop(i, em.i64(n), _flatten_vals([init]), fold), [init])[0]
        em.store(out_ptr, at(i), dt, acc)
        return []
      em.loop(em.i64(0), em.i64(n), [], output)

    if reverse and not hlo.regroupable(comp, dt):
      units = outer * inner

      def unit(u, _c):
        o, j = (u, em.i64(0)) if inner == 1 else (
            b.udiv(u, em.i64(inner)), b.urem(u, em.i64(inner)))
        windows(em.add_idx(em.mul_idx(o, n * inner), j))
        return []
    elif inner == 1 and outer < ROW_GROUP and n >= ROW_GROUP * SEGMENT_MIN and \
        hlo.regroupable(comp, dt):
      units = outer

      def unit(u, _c):
        segments(u)
        return []
    elif inner == 1:
      group = min(ROW_GROUP, outer)
      full, rem = divmod(outer, group)
      units = full + (rem > 0)

      def unit(u, _c):
        if not rem:
          rows(em.mul_idx(u, group), group)
        else:
          with b.if_else(b.icmp_signed("<", u, em.i64(full))) as (whole, tail):
            with whole:
              rows(em.mul_idx(u, group), group)
            with tail:
              rows(em.i64(full * group), rem)
        return []
    else:
      width = min(inner, SCAN_LANES)
      chunks = -(-inner // width)
      tail_width = inner - (chunks - 1) * width
      units = outer * chunks

      def unit(u, _c):
        o, c = (u, em.i64(0)) if chunks == 1 else (
            b.udiv(u, em.i64(chunks)), b.urem(u, em.i64(chunks)))
        base = em.add_idx(em.mul_idx(o, n * inner), em.mul_idx(c, width))
        if tail_width == width:
          lanes(base, width)
        else:
          with b.if_else(b.icmp_signed("<", c, em.i64(chunks - 1))) as (whole, tail):
            with whole:
              lanes(base, width)
            with tail:
              lanes(base, tail_width)
        return []
    em.loop(start, stop, [], unit)
    return units

"""scan_expansion: a long scan whose rounding depends on the grouping (a float cumsum,
cumprod or cumlogsumexp: hlo.scan_window with a combine that is not hlo.regroupable)
becomes the blocks XLA:CPU's ReduceWindowRewriter makes of it, so compiled scans give
JAX's bits (reference/scans.py defines them; BASE is XLA:CPU's base length):

    scan(x) along an axis of length n > BASE      (a reverse scan mirrors the choices)
      -> blocks = reshape(pad(x, init) to rows * BASE, [..., rows, BASE, ...])
         part   = scan(blocks) along BASE        (a window of BASE, folded in window order)
         totals = part[..., :, BASE - 1, ...]    (reverse: the first column)
         incl   = scan(totals) along rows        (expanded the same way while rows > BASE)
         before = incl shifted by one, the init first (reverse: last)
         out    = slice(reshape(combine(part, broadcast(before))), [0, n))

Value-preserving: XLA:CPU's order is the definition of such a scan (the HLO evaluator and
the primitives' reference implementations compute it directly). It runs always, before the
pipeline: the backend's scan kernel folds each window in window order, which is XLA's
only up to BASE elements.
"""
from __future__ import annotations

from ember._src.hlo import graph as hlo
from ember._src.hlo.graph import Instr, Shape
from ember._src.reference.scans import BASE


def run(module: hlo.Module, flags=None) -> hlo.Module:
  for comp in module.computations:
    scans = [i for i in comp.instrs if _expandable(i)]
    for scan in scans:
      comp.replace_all_uses(scan, _Expander(comp, scan).expand(scan))
    if scans:
      comp.sort_and_prune()
  return module


def _expandable(instr: Instr) -> bool:
  scan = hlo.scan_window(instr)
  if scan is None or hlo.regroupable(instr.called[0], instr.dtype):
    return False
  return instr.operands[0].dims[scan[0]] > BASE and _elementwise(instr.called[0])


def _elementwise(comp: hlo.Computation) -> bool:
  """Whether the combine applies to whole arrays op by op (its blocks are combined so)."""
  return all(i.opcode in ("parameter", "constant") or i.is_elementwise() for i in comp.instrs)


class _Expander:
  """Appends the blocks of scans to `comp`, with the scan's metadata."""

  def __init__(self, comp: hlo.Computation, scan: Instr):
    self.comp, self.metadata = comp, scan.metadata
    self.combine, self.init = scan.called[0], scan.operands[1]

  def add(self, opcode, dims, operands, attrs=None, called=()) -> Instr:
    dtype = operands[0].dtype if operands else self.init.dtype
    return self.comp.add(Instr(opcode, Shape(dtype, tuple(dims)), operands, attrs, called,
                               metadata=self.metadata))

  def expand(self, scan: Instr) -> Instr:
    x = scan.operands[0]
    axis, reverse = hlo.scan_window(scan)
    dims, n = x.dims, x.dims[axis]
    if n <= BASE:
      return scan
    rows = -(-n // BASE)
    blocks = self.add("reshape", dims[:axis] + (rows, BASE) + dims[axis + 1:],
                      [self._pad_axis(x, axis, 0, rows * BASE - n)])
    part = self.scan(blocks, axis + 1, reverse)
    col = 0 if reverse else BASE - 1
    totals = self.add("reshape", dims[:axis] + (rows,) + dims[axis + 1:],
                      [self._slice_axis(part, axis + 1, col, col + 1)])
    incl = self.expand(self.scan(totals, axis, reverse))
    before = (self._pad_axis(self._slice_axis(incl, axis, 1, rows), axis, 0, 1) if reverse
              else self._pad_axis(self._slice_axis(incl, axis, 0, rows - 1), axis, 1, 0))
    spread = self.add("broadcast", blocks.dims, [before],
                      {"dimensions": tuple(d for d in range(len(blocks.dims)) if d != axis + 1)})
    out = self.add("reshape", dims[:axis] + (rows * BASE,) + dims[axis + 1:],
                   [self.apply(part, spread)])
    return self._slice_axis(out, axis, 0, n)

  def scan(self, x: Instr, axis: int, reverse: bool) -> Instr:
    """A scan-shaped reduce-window of `x` along `axis` (hlo.scan_window)."""
    rank, n = len(x.dims), x.dims[axis]
    pad = (0, n - 1) if reverse else (n - 1, 0)
    attrs = {"window_dimensions": tuple(n if d == axis else 1 for d in range(rank)),
             "window_strides": (1,) * rank,
             "padding": tuple(pad if d == axis else (0, 0) for d in range(rank)),
             "base_dilation": (1,) * rank, "window_dilation": (1,) * rank}
    return self.add("reduce-window", x.dims, [x, self.init], attrs, [self.combine])

  def apply(self, a: Instr, b: Instr) -> Instr:
    """combine(a, b) elementwise: the scalar computation's ops on whole arrays."""
    env = {p.id: v for p, v in zip(self.combine.params, (a, b))}
    for i in self.combine.instrs:
      if i.opcode == "parameter":
        continue
      if i.opcode == "constant":
        env[i.id] = self.add("broadcast", a.dims, [self.comp.add(Instr(
            "constant", i.shape, [], dict(i.attrs), metadata=self.metadata))],
            {"dimensions": ()})
        continue
      env[i.id] = self.comp.add(Instr(i.opcode, Shape(i.dtype, a.dims),
                                      [env[o.id] for o in i.operands], dict(i.attrs),
                                      metadata=self.metadata))
    return env[self.combine.root.id]

  def _pad_axis(self, x: Instr, axis: int, low: int, high: int) -> Instr:
    if not (low or high):
      return x
    rank = len(x.dims)
    dims = tuple(d + (low + high if k == axis else 0) for k, d in enumerate(x.dims))
    return self.add("pad", dims, [x, self.init],
                    {"low": tuple(low if k == axis else 0 for k in range(rank)),
                     "high": tuple(high if k == axis else 0 for k in range(rank)),
                     "interior": (0,) * rank})

  def _slice_axis(self, x: Instr, axis: int, start: int, limit: int) -> Instr:
    if (start, limit) == (0, x.dims[axis]):
      return x
    rank = len(x.dims)
    dims = tuple(limit - start if k == axis else d for k, d in enumerate(x.dims))
    return self.add("slice", dims, [x],
                    {"start": tuple(start if k == axis else 0 for k in range(rank)),
                     "limit": tuple(limit if k == axis else d for k, d in enumerate(x.dims)),
                     "strides": (1,) * rank})


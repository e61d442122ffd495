"""reduction_splitter: large reductions over the leading dimension run in two stages, so
the first stage runs on every core.

    reduce(x[R, ...], dimensions ⊇ {0})                      R = K * r + q, q < K, x large
      -> reduce(concatenate(
             reduce(reshape(x[:K*r], [K, r, ...]), dimensions={1} ∪ rest+1),    # K partials
             reshape(reduce(x[K*r:], dimensions), [1, ...])),   # the last q rows (q > 0 only)
           dimensions={0})

The backend splits a kernel only along its outermost output dimension. A column sum
(`x.sum(0)`) or a full reduction (`logsumexp(x)`) has no outer dimension worth splitting (a
column chunk re-walks every row; a scalar has none), so it ran on one core. After the
rewrite, stage 1's outermost dimension is K blocks of consecutive rows: each core reduces
whole blocks, streaming through memory, and stage 2 combines K partial results.

K is a constant, not the thread count, so the order of the terms depends on the module and
the shape only: results are the same run to run and for any EMBER_NUM_THREADS. For float
add and multiply the order differs from a one-stage reduction (as in XLA's tree reduction
rewriter): K partial sums (plus, when K does not divide R, one of the last R mod K rows,
combined last) instead of one, which if anything lowers the rounding error: each partial
sums at most ceil(R/K) terms in order, then K+1 partials in order, so the error bound of
an f32 sum of n terms drops from ~n*eps to ~(n/K + K)*eps times the sum of magnitudes.
max/min/and/or are exact in any order.
"""
from __future__ import annotations

import numpy as np

from ember._src.hlo import graph as hlo

K = 8                     # partial results per reduction (blocks of rows)
MIN_ELEMENTS = 1 << 20    # below this one core finishes before a fork/join pays off
_COMBINERS = ("add", "multiply", "maximum", "minimum", "and", "or")


def _simple_combiner(comp: hlo.Computation) -> bool:
  root, params = comp.root, comp.params
  return (len(params) == 2 and root.opcode in _COMBINERS and len(root.operands) == 2
          and {o.id for o in root.operands} == {p.id for p in params})


_IDENTITY = {"add": 0, "multiply": 1}   # the other combiners are idempotent


def _init_reusable(op: str, init: hlo.Instr) -> bool:
  """Both stages start from `init`: fine for max/min/and/or (idempotent: applying the init
  twice changes nothing), and for add/multiply only when it is their identity (a
  `lax.reduce(x, 5.0, lax.add, ...)` must add 5 once)."""
  if op not in _IDENTITY:
    return True
  return init.opcode == "constant" and np.all(np.asarray(init.attrs["value"]) == _IDENTITY[op])


def _splittable(r: hlo.Instr) -> bool:
  if r.opcode != "reduce" or len(r.operands) != 2 or not _simple_combiner(r.called[0]):
    return False
  x, init = r.operands
  dims = x.shape.dims
  return (0 in r.attrs["dimensions"] and x.shape.rank >= 1 and dims[0] >= 2 * K
          and x.shape.size >= MIN_ELEMENTS
          and _init_reusable(r.called[0].root.opcode, init))


def _split(comp: hlo.Computation, r: hlo.Instr) -> None:
  x, init = r.operands
  dims, rdims = x.shape.dims, set(r.attrs["dimensions"])
  rows = dims[0] // K * K          # the first K * (R // K) rows: K equal blocks
  blocks = comp.add(hlo.Instr("reshape", hlo.Shape(x.dtype, (K, dims[0] // K) + dims[1:]),
                              [_leading_rows(comp, x, 0, rows, r)], metadata=r.metadata))
  stage1_dims = (1,) + tuple(d + 1 for d in sorted(rdims - {0}))
  kept = tuple(n for d, n in enumerate(dims) if d not in rdims)
  partial = comp.add(hlo.Instr("reduce", hlo.Shape(r.dtype, (K,) + kept), [blocks, init],
                               {"dimensions": stage1_dims}, list(r.called),
                               metadata=r.metadata))
  partial = _fusion_boundary(comp, partial)
  if rows < dims[0]:               # the last R mod K rows: one more partial, combined last
    rest = comp.add(hlo.Instr("reduce", r.shape, [_leading_rows(comp, x, rows, dims[0], r),
                                                  init],
                              {"dimensions": tuple(sorted(rdims))}, list(r.called),
                              metadata=r.metadata))
    rest = comp.add(hlo.Instr("reshape", hlo.Shape(r.dtype, (1,) + kept), [rest],
                              metadata=r.metadata))
    partial = comp.add(hlo.Instr("concatenate", hlo.Shape(r.dtype, (K + 1,) + kept),
                                 [partial, rest], {"dimension": 0}, metadata=r.metadata))
  total = comp.add(hlo.Instr("reduce", r.shape, [partial, init], {"dimensions": (0,)},
                             list(r.called), metadata=r.metadata))
  comp.replace_all_uses(r, total)


def _leading_rows(comp: hlo.Computation, x: hlo.Instr, lo: int, hi: int,
                  r: hlo.Instr) -> hlo.Instr:
  """x[lo:hi] (x itself when that is all of it)."""
  dims = x.shape.dims
  if (lo, hi) == (0, dims[0]):
    return x
  return comp.add(hlo.Instr("slice", hlo.Shape(x.dtype, (hi - lo,) + dims[1:]), [x],
                            {"start": (lo,) + (0,) * (len(dims) - 1),
                             "limit": (hi,) + dims[1:], "strides": (1,) * len(dims)},
                            metadata=r.metadata))


def _fusion_boundary(comp: hlo.Computation, x: hlo.Instr) -> hlo.Instr:
  """x through an optimization barrier: fusion would otherwise merge the stages back into
  one kernel (a reduce feeding a reduce fuses)."""
  shape = hlo.TupleShape((x.shape,))
  t = comp.add(hlo.Instr("tuple", shape, [x], metadata=x.metadata))
  b = comp.add(hlo.Instr("optimization-barrier", shape, [t], metadata=x.metadata))
  return comp.add(hlo.Instr("get-tuple-element", x.shape, [b], {"index": 0},
                            metadata=x.metadata))


def run(module: hlo.Module, flags=None) -> hlo.Module:
  comp = module.entry     # fusion kernels are the entry's; loop bodies keep their order
  targets = [i for i in comp.instrs if _splittable(i)]
  for r in targets:
    _split(comp, r)
  if targets:
    comp.sort_and_prune()
  return module

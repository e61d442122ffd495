"""dot_split_k: a dot with a long contraction and a small result runs as S partial dots, one
per index of its leading contracting dimension, then a sum of the S partial results.

    dot(A[S, K..., M...], B[S, K..., N...])   contracting dims leading in both, no batch
      -> reduce(dot(A, B, batch {0} x {0}, contracting the other K dims),   # [S, M..., N...]
                dimensions={0}, add)

The backend splits a dot over the threads by rows of its result (batch x M). A convolution's
kernel gradient (M = taps x input features and N = output features, tens to hundreds;
contracted: the batch S x the output positions, thousands to tens of thousands) has few
rows, each a long dot product reading all of A and B: it ran on one core, at a fraction of
the memory bandwidth. After the rewrite the batch's S partial dots are rows of the result
the threads share; no operand moves (the leading dimension becomes a batch dimension of the
same arrays), and the partial results are small (S*M*N elements against S*K*(M+N) read).

S is the operand's own leading dimension, so the order of the terms depends on the module and
the shape only: results are the same run to run and for any EMBER_NUM_THREADS. Each element
becomes S partial sums of K products in order, added in order: a float dot's summation
order, which no dot implementation fixes (BLAS blocks the contraction too); the error bound
of an f32 sum of S*K products drops from ~S*K*eps to ~(K + S)*eps times the sum of
magnitudes. Only float32/float64 (and complex) dots are split.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src.hlo import graph as hlo

MIN_S, MAX_S = 2, 64      # partial dots: enough to share, few enough to add up cheaply
MIN_SLICE = 128          # contraction length of each partial dot, at least
MIN_FLOPS = 1 << 22      # below this one core finishes before a fork/join pays off
MAX_PARTIAL_RATIO = 8    # the partials (S*M*N) at most 1/8 of what the dot reads (S*K*(M+N))
# float16/bfloat16 dots accumulate in float32 and round once: partial results in their
# own type would round S more times
_SPLIT_DTYPES = frozenset(map(np.dtype, (np.float32, np.float64, np.complex64,
                                         np.complex128)))


def _splittable(d: hlo.Instr) -> bool:
  a = d.attrs
  if (d.opcode != "dot" or a.get("lhs_batch_dims") or a.get("rhs_batch_dims")
      or np.dtype(d.dtype) not in _SPLIT_DTYPES):
    return False
  lhs, rhs = d.operands
  lc, rc = tuple(a["lhs_contracting_dims"]), tuple(a["rhs_contracting_dims"])
  if len(lc) < 2 or lc != tuple(range(len(lc))) or rc != lc:
    return False
  s, k = lhs.dims[0], math.prod(lhs.dims[1:len(lc)])
  m, n = math.prod(lhs.dims[len(lc):]), math.prod(rhs.dims[len(rc):])
  return (MIN_S <= s <= MAX_S and k >= MIN_SLICE and 2 * m * n * s * k >= MIN_FLOPS
          and m * n * MAX_PARTIAL_RATIO <= k * (m + n))


def _split(comp: hlo.Computation, module: hlo.Module, d: hlo.Instr) -> None:
  lhs, rhs = d.operands
  rest = tuple(range(1, len(d.attrs["lhs_contracting_dims"])))
  partial = comp.add(hlo.Instr(
      "dot", hlo.Shape(d.dtype, (lhs.dims[0],) + d.dims), [lhs, rhs],
      dict(d.attrs, lhs_batch_dims=(0,), rhs_batch_dims=(0,), lhs_contracting_dims=rest,
           rhs_contracting_dims=rest), metadata=d.metadata))
  zero = comp.add(hlo.Instr("constant", hlo.scalar_shape(d.dtype), [],
                            {"value": np.zeros((), d.dtype)}, metadata=d.metadata))
  total = comp.add(hlo.Instr("reduce", d.shape, [partial, zero], {"dimensions": (0,)},
                             [_add(module, d.dtype)], metadata=d.metadata))
  comp.replace_all_uses(d, total)


def _add(module: hlo.Module, dtype) -> hlo.Computation:
  """(a, b) -> a + b on scalars of `dtype`: the sum's combiner."""
  comp = module.new_computation(f"add_{hlo.scalar_shape(dtype).hlo_type()}")
  shape = hlo.scalar_shape(dtype)
  a, b = (comp.add(hlo.Instr("parameter", shape, [], {"number": i}, name=f"Arg_{i}"))
          for i in range(2))
  comp.root = comp.add(hlo.Instr("add", shape, [a, b]))
  return comp


def run(module: hlo.Module, flags=None) -> hlo.Module:
  comp = module.entry     # the dots the threads share are the entry's
  targets = [i for i in comp.instrs if _splittable(i)]
  for d in targets:
    _split(comp, module, d)
  if targets:
    comp.sort_and_prune()
  return module

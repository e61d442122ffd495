"""conv_expansion: rewrite each `convolution` as im2col + one GEMM, ops the backend runs fast.

    convolution(x, w)   (any layout, strides, padding, dilations, feature/batch groups)
      -> xt  = transpose(x) to [N, S..., C]
         xp  = pad(xt, 0), low/high = the padding, interior = lhs_dilation - 1
         tap = slice(xp) per kernel tap: start tap * rhs_dilation, stride window_strides
         col = concatenate(taps, last dim)           [N, O..., T * C]  (one loop fusion)
         k   = reshape(transpose(w) to [K..., I, O]) [T * I, O]
         out = dot(reshape(col) [M, T * C], k)       (groups: a batch dim G of the dot)
         transpose(reshape(out)) to the output layout

With G feature groups the patches' features split (group major) into [G, T * C/G] rows
and the kernel's output features into [G, O/G] columns: one dot with batch dim G. With G
batch groups the patches' batch splits (group major) instead. An output with no elements,
or a contraction of length 0, is a broadcast zero.

Value-preserving: every output element is the sum over the same (tap, feature) products
XLA's Conv defines, each product of an input element (or a padding/dilation zero) with the
kernel element of that tap; the dot only orders the summation (as any Conv implementation
does). It runs at every optimization level: the backend has no convolution kernel.
reference/convolution.py computes the same plan in NumPy.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src import hlo
from ember._src.hlo import Instr, Shape
from ember._src.reference import convolution as reference_conv


class _Builder:
  """Appends instructions (with the convolution's metadata) to a computation, skipping
  identity transposes and reshapes."""

  def __init__(self, comp: hlo.Computation, metadata: hlo.Metadata):
    self.comp, self.metadata = comp, metadata

  def add(self, opcode, dtype, dims, operands, attrs=None) -> Instr:
    return self.comp.add(Instr(opcode, Shape(np.dtype(dtype), tuple(dims)), operands, attrs,
                               metadata=self.metadata))

  def transpose(self, x: Instr, perm) -> Instr:
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(len(perm))):
      return x
    return self.add("transpose", x.dtype, [x.dims[p] for p in perm], [x],
                    {"dimensions": perm})

  def reshape(self, x: Instr, dims) -> Instr:
    dims = tuple(int(d) for d in dims)
    return x if dims == x.dims else self.add("reshape", x.dtype, dims, [x])

  def zero(self, dtype) -> Instr:
    return self.add("constant", dtype, (), [], {"value": np.zeros((), dtype)})


def _patches(b: _Builder, x: Instr, a: dict, kernel_spatial, out_spatial) -> Instr:
  """[N, O..., T * C]: the padded, dilated input's window of every tap at every output
  position, taps major."""
  lhs_perm, _, _ = reference_conv.canonical_perms(a["dimension_numbers"])
  x = b.transpose(x, lhs_perm)
  low = (0,) + tuple(lo for lo, _ in a["padding"]) + (0,)
  high = (0,) + tuple(hi for _, hi in a["padding"]) + (0,)
  interior = (0,) + tuple(d - 1 for d in a["lhs_dilation"]) + (0,)
  if any(low) or any(high) or any(interior):
    dims = (x.dims[0],) + tuple(
        d + lo + hi for d, lo, hi in zip(reference_conv.dilate_shape(x.dims[1:-1],
                                                                     a["lhs_dilation"]),
                                         low[1:-1], high[1:-1])) + (x.dims[-1],)
    x = b.add("pad", x.dtype, dims, [x, b.zero(x.dtype)],
              {"low": low, "high": high, "interior": interior})
  n, c = x.dims[0], x.dims[-1]
  taps = []
  for window in reference_conv.tap_windows(kernel_spatial, out_spatial, a["window_strides"],
                                           a["rhs_dilation"]):
    start = (0,) + tuple(w[0] for w in window) + (0,)
    limit = (n,) + tuple(w[1] for w in window) + (c,)
    strides = (1,) + tuple(w[2] for w in window) + (1,)
    if start == (0,) * len(start) and limit == x.dims and set(strides) == {1}:
      taps.append(x)
    else:
      taps.append(b.add("slice", x.dtype, (n,) + tuple(out_spatial) + (c,), [x],
                        {"start": start, "limit": limit, "strides": strides}))
  if len(taps) == 1:
    return taps[0]
  dims = (n,) + tuple(out_spatial) + (len(taps) * c,)
  return b.add("concatenate", x.dtype, dims, taps, {"dimension": len(dims) - 1})


def _expand(comp: hlo.Computation, conv: Instr) -> Instr:
  a, (x, w) = conv.attrs, conv.operands
  b = _Builder(comp, conv.metadata)
  dt = conv.dtype
  _, rhs_perm, out_canonical = reference_conv.canonical_perms(a["dimension_numbers"])
  kernel = b.transpose(w, rhs_perm)                       # [K..., I, O]
  nsp = kernel.shape.rank - 2
  kernel_spatial, (i_feat, o_feat) = kernel.dims[:nsp], kernel.dims[nsp:]
  taps = math.prod(kernel_spatial)
  canonical_dims = tuple(conv.dims[d] for d in out_canonical)  # [Nb, O..., F]
  if conv.shape.size == 0 or taps * i_feat == 0:
    return b.add("broadcast", dt, conv.dims, [b.zero(dt)], {"dimensions": ()})
  out_spatial = canonical_dims[1:-1]
  positions = math.prod(out_spatial)
  col = _patches(b, x, a, kernel_spatial, out_spatial)
  n, c = col.dims[0], col.dims[-1] // taps
  fgc, bgc = a["feature_group_count"], a["batch_group_count"]
  groups = max(fgc, bgc)
  k = taps * i_feat
  if groups == 1:
    lhs = b.reshape(col, (n * positions, k))
    rhs = b.reshape(kernel, (k, o_feat))
    out = b.add("dot", dt, (n * positions, o_feat), [lhs, rhs],
                {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,),
                 "lhs_batch_dims": (), "rhs_batch_dims": ()})
    out = b.reshape(out, canonical_dims)
  else:
    nb = n // bgc
    if fgc > 1:     # [N * O, T, G, C/G] -> [G, N * O, T * C/G]
      lhs = b.reshape(col, (n * positions, taps, groups, c // groups))
      lhs = b.reshape(b.transpose(lhs, (2, 0, 1, 3)), (groups, n * positions, k))
    else:           # batch groups: [G * Nb, O, T * C] -> [G, Nb * O, T * C]
      lhs = b.reshape(col, (groups, nb * positions, k))
    rhs = b.reshape(kernel, (k, groups, o_feat // groups))
    rhs = b.transpose(rhs, (1, 0, 2))
    out = b.add("dot", dt, (groups, nb * positions, o_feat // groups), [lhs, rhs],
                {"lhs_contracting_dims": (2,), "rhs_contracting_dims": (1,),
                 "lhs_batch_dims": (0,), "rhs_batch_dims": (0,)})
    out = b.reshape(out, (groups, nb) + tuple(out_spatial) + (o_feat // groups,))
    out = b.transpose(out, tuple(range(1, nsp + 2)) + (0, nsp + 2))
    out = b.reshape(out, canonical_dims)
  return b.transpose(out, np.argsort(out_canonical))


def run(module: hlo.Module, flags=None) -> hlo.Module:
  for comp in module.computations:
    convs = [i for i in comp.instrs if i.opcode == "convolution"]
    for conv in convs:
      comp.replace_all_uses(conv, _expand(comp, conv))
    if convs:
      comp.sort_and_prune()
  return module

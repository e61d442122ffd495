"""conv_expansion: rewrite each `convolution` as im2col + one GEMM, ops the backend runs fast.

    convolution(x, w)   (any layout, strides, padding, dilations, feature/batch groups)
      -> xt  = transpose(x) to [N, S..., C]
         xp  = pad(xt, 0), low/high = the padding, interior = lhs_dilation - 1
         tap = slice(xp) per kernel tap: start tap * rhs_dilation, stride window_strides
               (or per output position, all taps, where positions are fewer)
         col = concatenate(taps, new dim T)          [N, O..., T, C]  (one loop fusion)
         k   = reshape(transpose(w) to [K..., I, O]) [T, I, F]
         out = dot(col, k), contracting (T, C) x (T, I) -> [N, O..., F]
         transpose(out) to the output layout

A kernel gradient (more taps than output positions, no groups) builds the patches of the
forward conv it is the gradient of, the same instructions (CSE shares them with the
forward's), and contracts their leading (batch, position) dims with the output gradient
(`_kernel_gradient`).

An input dilated by D with stride 1 (lhs gradients, conv_transpose) first splits into D
phases per such dim (`_expand_phases`): each output phase is a conv of the undilated input
with every D-th kernel tap, so no product with a dilation zero is formed.

With G feature groups the patches' features split (group major) into [G, C/G] and the
kernel's output features into [G, F/G]: G becomes a batch dim of the dot. With G batch
groups the patches' batch splits (group major) instead. An output with no elements,
or a contraction of length 0, is a broadcast zero.

Value-preserving: every output element is the sum over the same (tap, feature) products
XLA's Conv defines, each product of an input element (or a padding zero) with the kernel
element of that tap, less the products with dilation zeros (exact zeros for finite
kernels); the dot only orders the summation (as any Conv implementation does). It runs at every optimization level: the backend has no convolution kernel.
reference/convolution.py computes the same plan in NumPy.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src.hlo import graph as hlo
from ember._src.hlo.graph import Instr, Shape
from ember._src.reference import convolution as reference_conv

MAX_OPERANDS = 32   # operands of one concatenate (nested beyond)


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


def _concatenate(b: _Builder, xs: list[Instr], dim: int) -> Instr:
  """concatenate along `dim`, nested in chunks of MAX_OPERANDS (the emitter selects among
  a concatenate's operands by a chain as long as their count)."""
  if len(xs) == 1:
    return xs[0]
  if len(xs) > MAX_OPERANDS:
    xs = [_concatenate(b, xs[k:k + MAX_OPERANDS], dim) for k in range(0, len(xs), MAX_OPERANDS)]
  dims = list(xs[0].dims)
  dims[dim] = sum(x.dims[dim] for x in xs)
  return b.add("concatenate", xs[0].dtype, dims, xs, {"dimension": dim})


def _padded_input(b: _Builder, x: Instr, a: dict, feature_major: bool = False) -> Instr:
  """x as [N, S..., C] (`feature_major`: [C, S..., N]), lhs-dilated and padded (negative
  padding crops)."""
  lhs_perm, _, _ = reference_conv.canonical_perms(a["dimension_numbers"])
  if feature_major:
    lhs_perm = (lhs_perm[-1],) + tuple(lhs_perm[1:-1]) + (lhs_perm[0],)
  x = b.transpose(x, lhs_perm)
  low = (0,) + tuple(lo for lo, _ in a["padding"]) + (0,)
  high = (0,) + tuple(hi for _, hi in a["padding"]) + (0,)
  interior = (0,) + tuple(d - 1 for d in a["lhs_dilation"]) + (0,)
  if not (any(low) or any(high) or any(interior)):
    return x
  dilated = reference_conv.dilate_shape(x.dims[1:-1], a["lhs_dilation"])
  dims = ((x.dims[0],) + tuple(d + lo + hi for d, lo, hi in zip(dilated, low[1:-1], high[1:-1]))
          + (x.dims[-1],))
  return b.add("pad", x.dtype, dims, [x, b.zero(x.dtype)],
               {"low": low, "high": high, "interior": interior})


def _window_slice(b: _Builder, x: Instr, window, sizes) -> Instr:
  """x[:, window..., :] ((start, limit, stride) per spatial dim) with spatial `sizes`."""
  n, c = x.dims[0], x.dims[-1]
  start = (0,) + tuple(w[0] for w in window) + (0,)
  limit = (n,) + tuple(w[1] for w in window) + (c,)
  strides = (1,) + tuple(w[2] for w in window) + (1,)
  if start == (0,) * len(start) and limit == x.dims and set(strides) == {1}:
    return x
  return b.add("slice", x.dtype, (n,) + tuple(sizes) + (c,), [x],
               {"start": start, "limit": limit, "strides": strides})


def _patches(b: _Builder, x: Instr, a: dict, kernel_spatial, out_spatial,
             feature_major: bool = False) -> Instr:
  """[N, O..., T, C]: the padded, dilated input's window of every tap at every output
  position (`feature_major`: x's dimension numbers name its features as the batch and its
  batch as the features, as a kernel gradient's do: read it as [C, S..., N]). Built from
  one strided slice per tap (all positions), or per output position (all taps) where those
  are fewer (a large kernel, few positions).
  Taps or positions stack on a dim before the features: the concatenate's choice of
  operand is then invariant in the emitter's inner (feature) loop, which vectorizes."""
  x = _padded_input(b, x, a, feature_major)
  n, c = x.dims[0], x.dims[-1]
  strides, rhs_dil = a["window_strides"], a["rhs_dilation"]
  taps, positions = math.prod(kernel_spatial), math.prod(out_spatial)
  if taps <= positions:
    parts = [b.reshape(_window_slice(b, x, window, out_spatial),
                       (n,) + tuple(out_spatial) + (1, c))
             for window in reference_conv.tap_windows(kernel_spatial, out_spatial, strides,
                                                      rhs_dil)]
    return _concatenate(b, parts, len(out_spatial) + 1)
  # the same windows read the other way: output position p meets taps p*s + t*r
  parts = [b.reshape(_window_slice(b, x, window, kernel_spatial), (n, 1, taps, c))
           for window in reference_conv.tap_windows(out_spatial, kernel_spatial, rhs_dil,
                                                    strides)]
  return b.reshape(_concatenate(b, parts, 1), (n,) + tuple(out_spatial) + (taps, c))


def _kernel_gradient(b: _Builder, x: Instr, w: Instr, a: dict, dtype, out_spatial) -> Instr:
  """[N, O..., F] of a conv with more taps than output positions and no groups (a kernel
  gradient: the "kernel" w is the output gradient, its "taps" the forward's positions, the
  contracted features the forward's batch; its strides are the forward's kernel dilation
  and its kernel dilation the forward's strides). It is read as the forward conv it is the
  gradient of: the patches are the forward's, [Nf, P..., T, Cf] (`_patches` with the
  forward's strides, the forward's batch and features in place: `feature_major`), the same
  instructions as the forward conv's own, which CSE then computes once for both; the dot
  contracts their leading (batch, position) dims with the output gradient's [Nf, P..., F]
  (the forward's output layout: no transpose for NHWC), a transposed-A matrix product."""
  _, rhs_perm, _ = reference_conv.canonical_perms(a["dimension_numbers"])
  nsp = w.shape.rank - 2
  g = b.transpose(w, (rhs_perm[nsp],) + tuple(rhs_perm[:nsp]) + (rhs_perm[nsp + 1],))
  forward = dict(a, window_strides=a["rhs_dilation"], rhs_dilation=a["window_strides"])
  col = _patches(b, x, forward, out_spatial, g.dims[1:-1], feature_major=True)
  contract = tuple(range(nsp + 1))
  out = _dot(b, dtype, col, g, (contract, ()), (contract, ()))      # [T, Cf, F]
  out = b.reshape(out, tuple(out_spatial) + out.dims[1:])
  return b.transpose(out, (nsp,) + tuple(range(nsp)) + (nsp + 1,))  # [Cf, O..., F]


def _dot(b: _Builder, dtype, lhs: Instr, rhs: Instr, lhs_dims, rhs_dims) -> Instr:
  """dot_general with XLA's output order: batch, lhs free, rhs free."""
  (lc, lb), (rc, rb) = lhs_dims, rhs_dims
  free = lambda x, used: [d for i, d in enumerate(x.dims) if i not in used]
  dims = ([lhs.dims[i] for i in lb] + free(lhs, lc + lb) + free(rhs, rc + rb))
  return b.add("dot", dtype, dims, [lhs, rhs],
               {"lhs_contracting_dims": lc, "rhs_contracting_dims": rc,
                "lhs_batch_dims": lb, "rhs_batch_dims": rb})


def _phased_dims(a: dict) -> list[int]:
  """Spatial dims whose lhs dilation splits into phases: dilated, stride 1, undilated kernel
  (the lhs gradient of a strided conv, conv_transpose)."""
  return [i for i, (d, s, r) in enumerate(zip(a["lhs_dilation"], a["window_strides"],
                                              a["rhs_dilation"])) if d > 1 and s == r == 1]


def _phase(d, lo, n, k, r, out_max):
  """Phase r of a dim dilated by d: outputs o = r + d*m read input m + j + e through the
  kernel taps t0 + d*j. Returns (t0, tap count, (low, high) padding of the undilated input
  giving out_max outputs)."""
  t0 = (lo - r) % d
  taps = len(range(t0, k, d))
  low = -((r + t0 - lo) // d)
  return t0, taps, (low, out_max + taps - 1 - n - low)


def _expand_phases(comp: hlo.Computation, conv: Instr, phased: list[int]) -> Instr:
  """A conv whose input is dilated by D (stride 1) as D convolutions of the undilated input
  per phased dim, one per output phase (output index mod D), each with the kernel taps that
  meet input elements (every D-th): no product with a dilation zero is formed. The phase
  results interleave into the output (a concatenate on a new dim after the spatial dim and a
  reshape), cropped to its size. Each phase is a `convolution` in the canonical layouts,
  expanded by `_expand`."""
  a, (x, w) = conv.attrs, conv.operands
  b = _Builder(comp, conv.metadata)
  lhs_perm, rhs_perm, out_canonical = reference_conv.canonical_perms(a["dimension_numbers"])
  x, w = b.transpose(x, lhs_perm), b.transpose(w, rhs_perm)   # [N, S..., C], [K..., I, O]
  nsp = x.shape.rank - 2
  out_dims = [conv.dims[d] for d in out_canonical]            # [Nb, O..., F]
  sizes = list(out_dims)
  for i in phased:
    sizes[1 + i] = -(-out_dims[1 + i] // a["lhs_dilation"][i])
  canonical = (tuple([0, nsp + 1] + list(range(1, nsp + 1))),
               tuple([nsp + 1, nsp] + list(range(nsp))),
               tuple([0, nsp + 1] + list(range(1, nsp + 1))))

  def phase_result(rs: dict) -> Instr:
    padding, lhs_dil, start, stride = list(a["padding"]), list(a["lhs_dilation"]), [0] * nsp, \
        [1] * nsp
    for i, r in rs.items():
      start[i], taps, padding[i] = _phase(a["lhs_dilation"][i], a["padding"][i][0],
                                          x.dims[1 + i], w.dims[i], r, sizes[1 + i])
      if not taps:
        return b.add("broadcast", conv.dtype, sizes, [b.zero(conv.dtype)], {"dimensions": ()})
      lhs_dil[i], stride[i] = 1, a["lhs_dilation"][i]
    kdims = [len(range(st, k, sd)) for st, k, sd in zip(start, w.dims[:nsp], stride)]
    kernel = b.add("slice", w.dtype, kdims + list(w.dims[nsp:]), [w],
                   {"start": tuple(start) + (0, 0), "limit": w.dims,
                    "strides": tuple(stride) + (1, 1)})
    attrs = dict(a, padding=tuple(map(tuple, padding)), lhs_dilation=tuple(lhs_dil),
                 dimension_numbers=canonical)
    sub = b.add("convolution", conv.dtype, sizes, [x, kernel], attrs)
    return _expand(comp, sub)

  def interleave(k: int, rs: dict) -> Instr:
    if k == len(phased):
      return phase_result(rs)
    i, d = phased[k], a["lhs_dilation"][phased[k]]
    parts = [interleave(k + 1, {**rs, i: r}) for r in range(d)]
    parts = [b.reshape(p, p.dims[:2 + i] + (1,) + p.dims[2 + i:]) for p in parts]
    out = _concatenate(b, parts, 2 + i)
    return b.reshape(out, out.dims[:1 + i] + (out.dims[1 + i] * d,) + out.dims[3 + i:])

  out = interleave(0, {})
  if tuple(out.dims) != tuple(out_dims):
    out = b.add("slice", conv.dtype, out_dims, [out],
                {"start": (0,) * len(out_dims), "limit": tuple(out_dims),
                 "strides": (1,) * len(out_dims)})
  return b.transpose(out, np.argsort(out_canonical))


def _expand(comp: hlo.Computation, conv: Instr) -> Instr:
  a, (x, w) = conv.attrs, conv.operands
  b = _Builder(comp, conv.metadata)
  dt = conv.dtype
  phased = _phased_dims(a)
  if phased and conv.shape.size:
    return _expand_phases(comp, conv, phased)
  _, rhs_perm, out_canonical = reference_conv.canonical_perms(a["dimension_numbers"])
  kernel = b.transpose(w, rhs_perm)                       # [K..., I, O]
  nsp = kernel.shape.rank - 2
  kernel_spatial, (i_feat, o_feat) = kernel.dims[:nsp], kernel.dims[nsp:]
  taps = math.prod(kernel_spatial)
  canonical_dims = tuple(conv.dims[d] for d in out_canonical)  # [Nb, O..., F]
  if conv.shape.size == 0 or taps * i_feat == 0:
    return b.add("broadcast", dt, conv.dims, [b.zero(dt)], {"dimensions": ()})
  out_spatial = canonical_dims[1:-1]
  fgc, bgc = a["feature_group_count"], a["batch_group_count"]
  if fgc == bgc == 1 and taps > math.prod(out_spatial):
    out = _kernel_gradient(b, x, w, a, dt, out_spatial)
    return b.transpose(out, np.argsort(out_canonical))
  col = _patches(b, x, a, kernel_spatial, out_spatial)   # [N, O..., T, C]
  n, c = col.dims[0], col.dims[-1]
  groups = max(fgc, bgc)
  t_axis = nsp + 1
  if groups == 1:     # [N, O..., T, C] . [T, C, F] -> [N, O..., F]
    out = _dot(b, dt, col, b.reshape(kernel, (taps, i_feat, o_feat)),
               ((t_axis, t_axis + 1), ()), ((0, 1), ()))
    return b.transpose(out, np.argsort(out_canonical))
  og = o_feat // groups
  rhs = b.reshape(kernel, (taps, i_feat, groups, og))
  if fgc > 1:         # [N, O..., T, G, C/G] . [T, C/G, G, F/G] -> [G, N, O..., F/G]
    lhs = b.reshape(col, col.dims[:-1] + (groups, c // groups))
    out = _dot(b, dt, lhs, rhs, ((t_axis, t_axis + 2), (t_axis + 1,)), ((0, 1), (2,)))
  else:               # [G, Nb, O..., T, C] . [T, C, G, F/G] -> [G, Nb, O..., F/G]
    lhs = b.reshape(col, (groups, n // groups) + col.dims[1:])
    out = _dot(b, dt, lhs, rhs, ((t_axis + 1, t_axis + 2), (0,)), ((0, 1), (2,)))
  out = b.transpose(out, tuple(range(1, nsp + 2)) + (0, nsp + 2))   # [Nb, O..., G, F/G]
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

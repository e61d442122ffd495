"""conv_general_dilated in NumPy with XLA's semantics (the Conv HLO): the primitive's impl
and hlo_eval's `convolution`.

`dimension_numbers = (lhs_spec, rhs_spec, out_spec)`: lhs_spec and out_spec list the
(batch, feature, spatial...) dimensions of the input and the output, rhs_spec the
(output feature, input feature, spatial...) dimensions of the kernel. Padding is applied
after the lhs dilation (negative padding crops), the kernel is dilated by rhs_dilation.
With G = feature_group_count the lhs features split into G groups (group major) and
kernel output features too; with G = batch_group_count the lhs batch splits into G groups
(group major) matched with the G groups of kernel output features. The result dtype is
dot_general's (reference/linalg.py), computed in the same dtype.

The computation is im2col + GEMM: the patches of every window (reference/windows.py) as
[groups, positions, taps * features], which one batched matmul contracts with the kernel. The CPU backend expands the `convolution` HLO into the
same plan (passes/conv_expansion.py).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ember._src.base.dtypes import dtype_kind
from ember._src.reference import windows
from ember._src.reference.linalg import dot_compute_dtype, dot_dtype


def dilate_shape(shape, dilation) -> tuple:
  """windows.dilate_dim of each dim."""
  return tuple(windows.dilate_dim(d, r) for d, r in zip(shape, dilation))


def canonical_perms(dimension_numbers):
  """Transposes to the kernel-friendly layouts (lhs [N, S..., C], rhs [K..., I, O]) and the
  output's canonical order [N, S..., F] (output dim of each canonical dim)."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_perm = (lhs_spec[0],) + tuple(lhs_spec[2:]) + (lhs_spec[1],)
  rhs_perm = tuple(rhs_spec[2:]) + (rhs_spec[1], rhs_spec[0])
  out_canonical = (out_spec[0],) + tuple(out_spec[2:]) + (out_spec[1],)
  return lhs_perm, rhs_perm, out_canonical


def tap_windows(kernel_spatial, out_spatial, window_strides, rhs_dilation):
  """(start, limit, stride) per spatial dim of each kernel tap, taps in row-major order:
  the input positions that tap meets at every output position."""
  for tap in itertools.product(*(range(k) for k in kernel_spatial)):
    yield [(t * r, t * r + (o - 1) * s + 1 if o else t * r, s)
           for t, r, o, s in zip(tap, rhs_dilation, out_spatial, window_strides)]


def conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                         dimension_numbers, feature_group_count, batch_group_count,
                         precision=None, preferred_element_type=None, out_sharding=None):
  out_dt = dot_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  cdt = dot_compute_dtype(lhs.dtype, rhs.dtype, out_dt)
  lhs_perm, rhs_perm, out_canonical = canonical_perms(dimension_numbers)
  x = np.transpose(np.asarray(lhs), lhs_perm).astype(cdt)      # [N, S..., C]
  k = np.transpose(np.asarray(rhs), rhs_perm).astype(cdt)      # [K..., I, O]
  nsp = x.ndim - 2
  one, no_pad = (1,), ((0, 0),)
  patches = windows.patches(x, 0, one + k.shape[:nsp] + one, one + tuple(window_strides) + one,
                            no_pad + tuple(map(tuple, padding)) + no_pad,
                            one + tuple(lhs_dilation) + one, one + tuple(rhs_dilation) + one)
  patches = np.swapaxes(patches, -1, -2)                      # [N, O..., T, C]
  n, out_sp, t, c = patches.shape[0], patches.shape[1:-2], patches.shape[-2], x.shape[-1]
  g = max(feature_group_count, batch_group_count)
  positions = math.prod(out_sp)
  if feature_group_count > 1:     # [N, O..., T, G, Cg] -> [G, N * O, T * Cg]
    patches = patches.reshape((n, positions, t, g, c // g))
    patches = patches.transpose(3, 0, 1, 2, 4).reshape((g, n * positions, t * (c // g)))
  else:                           # batch groups: [G, Nb, O..., T, C] -> [G, Nb * O, T * C]
    patches = patches.reshape((g, (n // g) * positions, t * c))
  o = k.shape[-1]
  kernel = k.reshape((t * k.shape[-2], g, o // g)).transpose(1, 0, 2)
  with np.errstate(over="ignore", invalid="ignore"):
    out = np.matmul(patches, kernel)                            # [G, Nb * O, Og]
  out = out.reshape((g, n // batch_group_count) + out_sp + (o // g,))
  out = np.moveaxis(out, 0, -2).reshape((n // batch_group_count,) + out_sp + (o,))
  if dtype_kind(cdt) == "c" and dtype_kind(out_dt) != "c":
    out = out.real
  return np.transpose(out, np.argsort(out_canonical)).astype(out_dt)

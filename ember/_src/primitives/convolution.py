"""conv_general_dilated (XLA's Conv) and the `lax` functions on it: conv, conv_with_general_
padding, conv_transpose, conv_dimension_numbers, ConvDimensionNumbers.

`dimension_numbers` is a ConvDimensionNumbers `(lhs_spec, rhs_spec, out_spec)`: the lhs and
output list their (batch, feature, spatial...) dimensions, the kernel its (output feature,
input feature, spatial...) ones; the public functions also take JAX's string form
(`('NHWC', 'HWIO', 'NHWC')`) or None (`NCHW`/`OIHW`). Any number of spatial dims. The NumPy
impl is reference/convolution.py (im2col + matmul); the lowering emits one `convolution` HLO
that the pass conv_expansion rewrites into pads, strided slices and one dot for the backend.

Differentiation is JAX's: the op is bilinear; the lhs transpose is a convolution of the
cotangent with the spatially reversed kernel (lhs and window dilations swapped), the rhs
transpose a convolution of the lhs with the cotangent, feature groups becoming batch groups
and back. Batching folds the vmapped dim into the batch, feature or output-feature dim.
"""
from __future__ import annotations

import operator
from typing import NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.primitives import check_same_dtypes, declare
from ember._src.primitives.elementwise import convert_element_type
from ember._src.primitives.linalg import canonicalize_precision, dot_general
from ember._src.primitives.structural import full, padtype_to_pads, reshape, rev, transpose
from ember._src.reference import (
    convolution as reference_conv, linalg as reference_linalg, windows as reference_windows)
from ember._src.transforms import ad

__all__ = ["conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
           "conv_dimension_numbers", "conv_general_permutations", "ConvDimensionNumbers",
           "ConvGeneralDilatedDimensionNumbers", "conv_shape_tuple", "conv_general_shape_tuple",
           "conv_transpose_shape_tuple", "conv_general_dilated_patches", "conv_general_dilated_local",
           "conv_general_dilated_p"]


class ConvDimensionNumbers(NamedTuple):
  """Batch, feature and spatial dimensions of a convolution: lhs_spec and out_spec are
  (batch, feature, spatial...), rhs_spec is (out feature, in feature, spatial...)."""
  lhs_spec: Sequence[int]
  rhs_spec: Sequence[int]
  out_spec: Sequence[int]


# what the public functions accept as dimension_numbers (JAX's alias)
ConvGeneralDilatedDimensionNumbers = tuple | ConvDimensionNumbers | None


# --- dimension numbers --------------------------------------------------------------------

def conv_general_permutations(dimension_numbers):
  """The (lhs, rhs, out) dimension permutations of a string spec such as
  ('NHWC', 'HWIO', 'NHWC'); spatial dims ordered as they appear in the rhs spec."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (a, b) in enumerate(charpairs):
    if not dimension_numbers[i].count(a) == dimension_numbers[i].count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                      f"'{a}' and '{b}' exactly once, got {dimension_numbers[i]}.")
    if len(dimension_numbers[i]) != len(set(dimension_numbers[i])):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, "
                      f"got {dimension_numbers[i]}.")
  spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, charpairs)]
  if not spatial[0] == spatial[1] == spatial[2]:
    raise TypeError(f"convolution dimension_numbers elements must each have the same set of "
                    f"spatial characters, got {tuple(dimension_numbers)}.")

  def perm(spec, pair):
    sp = [i for i, ch in enumerate(spec) if ch not in pair]
    if spec is not rhs_spec:
      sp.sort(key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(sp)
  return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """None, a ConvDimensionNumbers or a triple of spec strings -> ConvDimensionNumbers."""
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return ConvDimensionNumbers(*(tuple(map(operator.index, s)) for s in dimension_numbers))
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                    f"{len(lhs_shape)} and {len(rhs_shape)}.")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if not isinstance(dimension_numbers, (list, tuple)):
    raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")
  if len(dimension_numbers) != 3:
    raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                    f"{len(dimension_numbers)}.")
  if not all(isinstance(s, str) for s in dimension_numbers):
    raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                    f"{tuple(map(type, dimension_numbers))}.")
  for i, s in enumerate(dimension_numbers):
    if len(s) != len(lhs_shape):
      raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim of "
                      f"lhs and rhs, got {len(s)} for lhs and rhs shapes {tuple(lhs_shape)} "
                      f"and {tuple(rhs_shape)}.")
  return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


# --- shape and dtype rule -------------------------------------------------------------------

def _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count):
  lhs_feat, rhs_in, rhs_out = (lhs.shape[dn.lhs_spec[1]], rhs.shape[dn.rhs_spec[1]],
                               rhs.shape[dn.rhs_spec[0]])
  if not feature_group_count > 0:
    raise ValueError(f"conv_general_dilated feature_group_count must be a positive integer, "
                     f"got {feature_group_count}.")
  if lhs_feat % feature_group_count:
    raise ValueError(f"conv_general_dilated feature_group_count must divide lhs feature "
                     f"dimension size, but {feature_group_count} does not divide {lhs_feat}.")
  if lhs_feat // feature_group_count != rhs_in:
    raise ValueError(f"conv_general_dilated lhs feature dimension size divided by "
                     f"feature_group_count must equal the rhs input feature dimension size, "
                     f"but {lhs_feat} // {feature_group_count} != {rhs_in}.")
  if rhs_out % feature_group_count:
    raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of feature_group_count, but {rhs_out} is not a multiple of "
                     f"{feature_group_count}.")
  if not batch_group_count > 0:
    raise ValueError(f"conv_general_dilated batch_group_count must be a positive integer, "
                     f"got {batch_group_count}.")
  lhs_batch = lhs.shape[dn.lhs_spec[0]]
  if batch_group_count > 1 and lhs_batch % batch_group_count:
    raise ValueError(f"conv_general_dilated batch_group_count must divide lhs batch "
                     f"dimension size, but {batch_group_count} does not divide {lhs_batch}.")
  if rhs_out % batch_group_count:
    raise ValueError(f"conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of batch_group_count, but {rhs_out} is not a multiple of "
                     f"{batch_group_count}.")
  if batch_group_count > 1 and feature_group_count > 1:
    raise ValueError(f"At most one of batch_group_count and feature_group_count may be > 1, "
                     f"got batch_group_count={batch_group_count} and "
                     f"feature_group_count={feature_group_count}")


def _check_window(name, values, nsp):
  if len(values) != nsp:
    raise ValueError(f"conv_general_dilated {name} must have one entry per spatial "
                     f"dimension ({nsp}), got {tuple(values)}.")
  if name != "padding" and any(v < 1 for v in values):
    raise ValueError(f"conv_general_dilated {name} must be positive, got {tuple(values)}.")


def _conv_shape(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count) -> tuple:
  dn = dimension_numbers
  if lhs.ndim != rhs.ndim:
    raise ValueError(f"conv_general_dilated lhs and rhs must have the same number of "
                     f"dimensions, but got {lhs.shape} and {rhs.shape}.")
  for spec in dn:
    if sorted(spec) != list(range(lhs.ndim)):
      raise ValueError(f"conv_general_dilated dimension_numbers {tuple(dn)} must each be a "
                       f"permutation of the {lhs.ndim} dimensions of lhs {lhs.shape} and rhs "
                       f"{rhs.shape}.")
  _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count)
  nsp = lhs.ndim - 2
  if len(window_strides) != nsp:
    raise ValueError(f"conv_general_dilated window and window_strides must have the same "
                     f"number of dimensions, but got {nsp} and {len(window_strides)}")
  for name, values in (("window_strides", window_strides), ("padding", padding),
                       ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
    _check_window(name, values, nsp)
  lhs_sp = [lhs.shape[i] for i in dn.lhs_spec[2:]]
  dilated = reference_conv.dilate_shape(lhs_sp, lhs_dilation)
  if any(d + lo + hi < 0 for d, (lo, hi) in zip(dilated, padding)):
    raise ValueError(f"Negative padding is larger than the size of the corresponding "
                     f"dimension: got padding={tuple(padding)} for lhs_shape[2:]="
                     f"{tuple(lhs_sp)}")
  out_sp = reference_windows.output_shape(lhs_sp, [rhs.shape[i] for i in dn.rhs_spec[2:]],
                                          window_strides, padding, lhs_dilation, rhs_dilation)
  canonical = (lhs.shape[dn.lhs_spec[0]] // batch_group_count,
               rhs.shape[dn.rhs_spec[0]]) + out_sp
  return tuple(np.take(canonical, np.argsort(dn.out_spec)).tolist())


def _conv_abstract_eval(lhs, rhs, *, precision=None, preferred_element_type=None,
                        out_sharding=None, **params):
  check_same_dtypes("conv_general_dilated", (lhs, rhs))
  shape = _conv_shape(lhs, rhs, **params)
  dt = reference_linalg.dot_dtype(lhs.dtype, rhs.dtype, preferred_element_type)
  return ShapedArray(shape, dt, lhs.weak_type and rhs.weak_type)


conv_general_dilated_p = declare("conv_general_dilated", _conv_abstract_eval,
                                 reference_conv.conv_general_dilated)


# --- lowering -------------------------------------------------------------------------------

def _conv_lower(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision=None,
                preferred_element_type=None, out_sharding=None):
  """One `convolution` (XLA's Conv attributes), on operands converted to the impl's compute
  dtype, and a convert of the result where that differs from the output dtype."""
  out_dt = ctx.avals_out[0].dtype
  cdt = reference_linalg.dot_compute_dtype(lhs.dtype, rhs.dtype, out_dt)
  lhs, rhs = ctx.convert(lhs, cdt), ctx.convert(rhs, cdt)
  attrs = {"window_strides": tuple(window_strides), "padding": tuple(map(tuple, padding)),
           "lhs_dilation": tuple(lhs_dilation), "rhs_dilation": tuple(rhs_dilation),
           "dimension_numbers": tuple(tuple(s) for s in dimension_numbers),
           "feature_group_count": feature_group_count, "batch_group_count": batch_group_count,
           "precision": tuple(p.name for p in precision) if precision else None}
  out = ctx.emit("convolution", ctx.out_shape()._replace(dtype=cdt), [lhs, rhs], attrs)
  if dtypes.dtype_kind(cdt) == "c" and dtypes.dtype_kind(out_dt) != "c":
    out = ctx.elementwise("real", out, dtype=np.float64 if cdt.itemsize == 16 else np.float32)
  return ctx.convert(out, out_dt)


conv_general_dilated_p.lower = _conv_lower


# --- the lax functions --------------------------------------------------------------------

def _shape(x):
  return core.get_aval(x).shape


def _explicit_padding(padding, lhs_shape, rhs_shape, dn, window_strides, rhs_dilation):
  if isinstance(padding, str):
    lhs_sp = [lhs_shape[i] for i in dn.lhs_spec[2:]]
    window = reference_conv.dilate_shape([rhs_shape[i] for i in dn.rhs_spec[2:]],
                                         rhs_dilation)
    if padding.upper() not in ("SAME", "SAME_LOWER", "VALID"):
      raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                         f"'SAME_LOWER', got {padding}.")
    return tuple(padtype_to_pads(lhs_sp, window, window_strides, padding))
  try:
    return tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
  except (ValueError, TypeError) as e:
    raise ValueError(f"padding argument to conv_general_dilated should be a string or a "
                     f"sequence of (low, high) pairs, got {padding}") from e


def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General n-dimensional convolution with optional dilation (XLA's Conv)."""
  ls, rs = _shape(lhs), _shape(rhs)
  dn = conv_dimension_numbers(ls, rs, dimension_numbers)
  nsp = len(ls) - 2
  if lhs_dilation is None:
    lhs_dilation = (1,) * nsp
  elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
    raise ValueError("String padding is not implemented for transposed convolution using "
                     "this op. Please either exactly specify the required padding or use "
                     "conv_transpose.")
  rhs_dilation = (1,) * nsp if rhs_dilation is None else rhs_dilation
  strides = tuple(map(operator.index, window_strides))
  rhs_dilation = tuple(map(operator.index, rhs_dilation))
  padding = _explicit_padding(padding, ls, rs, dn, strides, rhs_dilation)
  pet = (None if preferred_element_type is None
         else dtypes.check_user_dtype(preferred_element_type, "conv_general_dilated"))
  return conv_general_dilated_p.bind(
      lhs, rhs, window_strides=strides, padding=padding,
      lhs_dilation=tuple(map(operator.index, lhs_dilation)), rhs_dilation=rhs_dilation,
      dimension_numbers=dn, feature_group_count=operator.index(feature_group_count),
      batch_group_count=operator.index(batch_group_count),
      precision=canonicalize_precision(precision), preferred_element_type=pet,
      out_sharding=None)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """conv_general_dilated in NCHW/OIHW layout without dilation."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """conv_general_dilated in NCHW/OIHW layout."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def _conv_transpose_padding(k, s, padding):
  """(before, after) padding of one dim of the fractionally strided conv that transposes a
  forward conv of kernel size k, stride s and `padding` ('SAME', 'VALID' or a pair)."""
  if padding == "SAME":
    pad_len = k + s - 2
    pad_a = k - 1 if s > k - 1 else int(np.ceil(pad_len / 2))
  elif padding == "VALID":
    pad_len = k + s - 2 + max(k - s, 0)
    pad_a = k - 1
  elif isinstance(padding, tuple):
    pads = tuple(k - p - 1 for p in padding)
    pad_a, pad_len = pads[0], sum(pads)
  else:
    raise ValueError(f"Invalid padding mode: {padding}")
  return pad_a, pad_len - pad_a


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """The N-d convolution "transpose" as a fractionally strided conv (lhs dilated by
  `strides`); TensorFlow's layouts by default. transpose_kernel flips the kernel's spatial
  dims and swaps its feature dims (the gradient of conv, Keras' Conv2DTranspose)."""
  ls, rs = _shape(lhs), _shape(rhs)
  if len(ls) != len(rs) or len(ls) < 2:
    raise ValueError(f"conv_transpose requires lhs and rhs of equal rank >= 2, got shapes "
                     f"{ls} and {rs}.")
  if dimension_numbers is None:
    if len(ls) not in _TRANSPOSE_LAYOUTS:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = _TRANSPOSE_LAYOUTS[len(ls)]
  dn = conv_dimension_numbers(ls, rs, dimension_numbers)
  k_sdims = [rs[i] for i in dn.rhs_spec[2:]]
  rhs_dilation = (1,) * (len(rs) - 2) if rhs_dilation is None else tuple(rhs_dilation)
  if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
    effective = reference_conv.dilate_shape(k_sdims, rhs_dilation)
    per_dim = [padding] * len(strides) if isinstance(padding, str) else \
        [tuple(p) for p in padding]
    pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(effective, strides,
                                                                    per_dim))
  else:
    pads = padding
  if transpose_kernel:
    rhs = rev(rhs, dn.rhs_spec[2:])
    perm = list(range(len(rs)))
    perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
    rhs = transpose(rhs, perm)
  return conv_general_dilated(lhs, rhs, (1,) * (len(ls) - 2), pads, strides, rhs_dilation,
                              dn, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                 lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                                 precision=None, preferred_element_type=None):
  """The patches a conv with a kernel of `filter_shape` sees: output feature c * S + s is
  input feature c at kernel tap s (S taps, row-major in the rhs spec's spatial order). A
  depthwise conv with a one-hot kernel, as JAX computes it."""
  ls, filter_shape = _shape(lhs), tuple(filter_shape)
  dn = conv_dimension_numbers(ls, (1, 1) + filter_shape, dimension_numbers)
  taps, channels = int(np.prod(filter_shape)), ls[dn.lhs_spec[1]]
  one_hot = np.broadcast_to(np.eye(taps, dtype=core.get_aval(lhs).dtype), (channels, taps, taps))
  kernel = np.moveaxis(one_hot.reshape((channels * taps, 1) + filter_shape), (0, 1),
                       (dn.rhs_spec[0], dn.rhs_spec[1]))
  return conv_general_dilated(
      lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation, dn,
      feature_group_count=channels,
      precision=None if precision is None else (precision, "default"),
      preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """An unshared convolution: its own kernel at every output position. `rhs` is laid out by
  the rhs spec as (out features, in features * taps, *output spatial); the input's patches
  (conv_general_dilated_patches) are contracted with it position by position: a dot batched
  over the output's spatial dims. `precision`: one for both, or (patches', dot's)."""
  lhs_precision, rhs_precision = (precision if isinstance(precision, (tuple, list))
                                  and len(precision) == 2 else (precision, precision))
  patches = conv_general_dilated_patches(lhs, filter_shape, window_strides, padding,
                                         lhs_dilation, rhs_dilation, dimension_numbers,
                                         precision=lhs_precision)
  dn = conv_dimension_numbers(_shape(lhs), (1, 1) + tuple(filter_shape), dimension_numbers)
  # batch dims in the order they stand in the output, so the result's leading dims are the
  # output's spatial dims in order, followed by (batch, out features)
  order = sorted(range(len(filter_shape)), key=lambda i: dn.out_spec[2 + i])
  batch = ([dn.out_spec[2 + i] for i in order], [dn.rhs_spec[2 + i] for i in order])
  out = dot_general(patches, rhs, (([dn.out_spec[1]], [dn.rhs_spec[1]]), batch),
                    precision=rhs_precision)
  rank = len(dn.out_spec)
  spatial = [d for d in range(rank) if d not in dn.out_spec[:2]]
  perm = [0] * rank
  for position, source in zip([dn.out_spec[0], dn.out_spec[1], *spatial],
                              [rank - 2, rank - 1, *range(rank - 2)]):
    perm[position] = source
  return transpose(out, perm)


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The output shape of a conv in NC... / OI... layout ('SAME'/'VALID' or explicit pads)."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  ones = (1,) * len(pads)
  out_sp = reference_windows.output_shape(lhs_shape[2:], rhs_shape[2:], strides, pads, ones,
                                          ones)
  return (lhs_shape[0] // batch_group_count, rhs_shape[0]) + out_sp


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers):
  """The output shape of a conv with string dimension numbers."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(tuple(np.take(lhs_shape, lhs_perm).tolist()),
                         tuple(np.take(rhs_shape, rhs_perm).tolist()), window_strides, padding)
  return tuple(np.take(out, np.argsort(out_perm)).tolist())


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  """The output shape of conv_transpose (no kernel dilation)."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(int(k), s, padding)
               for k, s in zip(rhs_t[2:], window_strides)]
  out_sp = [(int(i) - 1) * s - int(k) + 2 + sum(p)
            for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
  out = (int(lhs_t[0]), int(rhs_t[0])) + tuple(out_sp)
  return tuple(np.take(out, np.argsort(out_perm)).tolist())


# --- differentiation (JAX's rules) ----------------------------------------------------------

def _spec_transpose(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def _reshape_axis_into(src, dst, x):
  """Merge dim `src` into dim `dst` (numbered after `src` is removed) as its major part."""
  shape = _shape(x)
  perm = [i for i in range(len(shape)) if i != src]
  perm.insert(dst, src)
  new = list(np.delete(np.array(shape, dtype=np.int64), src).tolist())
  new[dst] *= shape[src]
  return reshape(x, new, perm)


def _reshape_axis_out_of(src, size1, x):
  """Split dim `src` into (size1, rest)."""
  shape = list(_shape(x))
  shape[src:src + 1] = [size1, shape[src] // size1]
  return reshape(x, shape)


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
  lhs_d = reference_conv.dilate_shape(in_shape, lhs_dil)
  rhs_d = reference_conv.dilate_shape(window, rhs_dil)
  out_d = reference_conv.dilate_shape(out_shape, strides)
  before = [r - lo - 1 for r, (lo, _) in zip(rhs_d, padding)]
  after = [l + r - 1 - o - b for l, r, o, b in zip(lhs_d, rhs_d, out_d, before)]
  return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dil, rhs_dil):
  lhs_d = reference_conv.dilate_shape(in_shape, lhs_dil)
  rhs_d = reference_conv.dilate_shape(window, rhs_dil)
  out_d = reference_conv.dilate_shape(out_shape, strides)
  return tuple((lo, o - l + r - lo - 1)
               for (lo, _), o, l, r in zip(padding, out_d, lhs_d, rhs_d))


def _conv_transpose_lhs(g, rhs, lhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision, preferred_element_type, **_):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  rhs_shape, g_shape = _shape(rhs), _shape(g)
  if feature_group_count > 1 or batch_group_count > 1:
    # move the group from the kernel's output features into its input features
    groups = max(feature_group_count, batch_group_count)
    rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    feature_group_count = groups
  padding = _vjp_lhs_padding([lhs_aval.shape[i] for i in lhs_spec[2:]],
                             [rhs_shape[i] for i in rhs_spec[2:]], window_strides,
                             [g_shape[i] for i in out_spec[2:]], padding, lhs_dilation,
                             rhs_dilation)
  kernel = convert_element_type(rev(rhs, rhs_spec[2:]), core.get_aval(g).dtype)
  out = conv_general_dilated(
      g, kernel, window_strides=lhs_dilation, padding=padding, lhs_dilation=window_strides,
      rhs_dilation=rhs_dilation,
      dimension_numbers=ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec),
      feature_group_count=feature_group_count, batch_group_count=1, precision=precision,
      preferred_element_type=preferred_element_type)
  out = convert_element_type(out, lhs_aval.dtype)
  if batch_group_count > 1:
    out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
    out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
  return out


def _conv_transpose_rhs(g, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision, preferred_element_type, **_):
  if np.prod(_shape(g)) == 0:   # no degenerate conv with a kernel of spatial size 0
    return ad.Zero(ad.tangent_aval(rhs_aval))
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_shape, g_shape = _shape(lhs), _shape(g)
  # feature groups of the forward conv are batch groups of this one, and back
  feature_group_count, batch_group_count = batch_group_count, feature_group_count
  padding = _vjp_rhs_padding([lhs_shape[i] for i in lhs_spec[2:]],
                             [rhs_aval.shape[i] for i in rhs_spec[2:]], window_strides,
                             [g_shape[i] for i in out_spec[2:]], padding, lhs_dilation,
                             rhs_dilation)
  lhs = convert_element_type(lhs, core.get_aval(g).dtype)
  out = conv_general_dilated(
      lhs, g, window_strides=rhs_dilation, padding=padding, lhs_dilation=lhs_dilation,
      rhs_dilation=window_strides,
      dimension_numbers=ConvDimensionNumbers(*map(_spec_transpose, (lhs_spec, out_spec,
                                                                    rhs_spec))),
      feature_group_count=feature_group_count, batch_group_count=batch_group_count,
      precision=precision, preferred_element_type=preferred_element_type)
  return convert_element_type(out, rhs_aval.dtype)


def _conv_transpose_rule(ct, lhs, rhs, **params):
  if ad.is_undefined_primal(lhs) and ad.is_undefined_primal(rhs):
    raise ValueError("conv_general_dilated of two linear values is not linear: cannot "
                     "transpose it")
  if ad.is_undefined_primal(lhs):
    return [_conv_transpose_lhs(ct, rhs, lhs.aval, **params), None]
  return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]


ad.defbilinear(conv_general_dilated_p, _conv_transpose_rule)


# --- batching (JAX's rule) ------------------------------------------------------------------

def _conv_batch(axis_data, vals, dims, **params):
  (lhs, rhs), (lbd, rbd) = vals, dims
  dn = params["dimension_numbers"]
  lhs_spec, rhs_spec, out_spec = dn
  fgc, bgc = params["feature_group_count"], params["batch_group_count"]
  bind = lambda x, y, **kw: conv_general_dilated_p.bind(x, y, **{**params, **kw})
  size = _shape(lhs)[lbd] if lbd is not None else _shape(rhs)[rbd]
  if size == 0:
    lhs_aval, rhs_aval = core.get_aval(lhs), core.get_aval(rhs)
    unbatched = lambda a, d: a if d is None else a.update(
        shape=tuple(s for i, s in enumerate(a.shape) if i != d))
    aval = _conv_abstract_eval(unbatched(lhs_aval, lbd), unbatched(rhs_aval, rbd), **params)
    return full((0,) + aval.shape, 0, aval.dtype), 0
  if lbd is not None and rbd is not None:
    if bgc > 1:
      new_lhs, kw = _reshape_axis_into(lbd, lhs_spec[0], lhs), {"batch_group_count": bgc * size}
    else:
      new_lhs = _reshape_axis_into(lbd, lhs_spec[1], lhs)
      kw = {"feature_group_count": fgc * size}
    out = bind(new_lhs, _reshape_axis_into(rbd, rhs_spec[0], rhs), **kw)
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  if lbd is not None:
    if bgc == 1:
      out = bind(_reshape_axis_into(lbd, lhs_spec[0], lhs), rhs)
    else:   # the groups stay outermost in the batch dim, the vmapped dim goes inside them
      new = _reshape_axis_out_of(lhs_spec[0] + int(lbd <= lhs_spec[0]), bgc, lhs)
      new = _reshape_axis_into(lbd + int(lhs_spec[0] < lbd), lhs_spec[0] + 1, new)
      out = bind(_reshape_axis_into(lhs_spec[0], lhs_spec[0], new), rhs)
    return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
  if fgc == 1 and bgc == 1:
    out = bind(lhs, _reshape_axis_into(rbd, rhs_spec[0], rhs))
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  # groups outermost in the kernel's output features, the vmapped dim inside them
  groups = max(fgc, bgc)
  new = _reshape_axis_out_of(rhs_spec[0] + int(rbd <= rhs_spec[0]), groups, rhs)
  new = _reshape_axis_into(rbd + int(rhs_spec[0] < rbd), rhs_spec[0] + 1, new)
  out = bind(lhs, _reshape_axis_into(rhs_spec[0], rhs_spec[0], new))
  out = _reshape_axis_out_of(out_spec[1], groups, out)
  out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
  return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


conv_general_dilated_p.batch = _conv_batch

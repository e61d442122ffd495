"""lax.conv_general_dilated and its wrappers (ember/_src/primitives/convolution.py).

- Values: against direct float64 sums of XLA's Conv definition (`conv_loops` below), for
  1D/2D/3D, strides, explicit/SAME/SAME_LOWER/VALID padding (negative too), lhs and rhs
  dilation, feature groups (depthwise), batch groups and several layouts; eager (the NumPy
  reference) and jit (the convolution HLO expanded into pad + tap slices + one dot).
- Derivatives: jvp and vjp against finite differences (check_grads), groups included.
- vmap over lhs, rhs or both.
- conv_transpose against values recorded from JAX 0.12 (data/conv_transpose_jax.npz).
- dtypes, the lowered/compiled text, and the errors users hit.
"""
import itertools
import os
import sys

import numpy as np
import pytest

import ember
from ember import lax
from ember._src.reference import convolution as reference_conv
from ember.test_util import check_grads

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from conv_transpose_cases import CASES as TRANSPOSE_CASES, operand  # noqa: E402

rng = np.random.default_rng(0)
F32_RTOL = 2e-6   # float32 sums of up to ~100 products, against float64


def conv_loops(lhs, rhs, strides, padding, lhs_dil, rhs_dil, dn, fgc=1, bgc=1):
  """XLA's Conv written out: every output element a direct float64 sum over its window."""
  lhs_spec, rhs_spec, out_spec = dn
  x = np.transpose(np.asarray(lhs, np.float64), lhs_spec)         # [N, C, S...]
  w = np.transpose(np.asarray(rhs, np.float64), rhs_spec)         # [O, I, K...]
  n, c, *sp = x.shape
  o, i, *ks = w.shape
  xd = np.zeros((n, c) + tuple(0 if d == 0 else (d - 1) * r + 1 for d, r in zip(sp, lhs_dil)))
  xd[(slice(None), slice(None)) + tuple(slice(None, None, r) for r in lhs_dil)] = x
  xp = np.pad(xd, [(0, 0), (0, 0)] + [(max(lo, 0), max(hi, 0)) for lo, hi in padding])
  xp = xp[(slice(None), slice(None)) + tuple(
      slice(max(-lo, 0), xp.shape[2 + j] - max(-hi, 0)) for j, (lo, hi) in enumerate(padding))]
  kd = [(k - 1) * r + 1 for k, r in zip(ks, rhs_dil)]
  osp = [(p - k) // s + 1 if p >= k else 0 for p, k, s in zip(xp.shape[2:], kd, strides)]
  nb = n // bgc
  out = np.zeros((nb, o) + tuple(osp))
  for b, f, pos in itertools.product(range(nb), range(o), itertools.product(*map(range, osp))):
    group = f // (o // max(fgc, bgc))
    batch = group * nb + b if bgc > 1 else b
    chans = range(group * i, (group + 1) * i) if fgc > 1 else range(c)
    acc = 0.0
    for ii, ch in enumerate(chans):
      for tap in itertools.product(*map(range, ks)):
        at = tuple(p * s + t * r for p, s, t, r in zip(pos, strides, tap, rhs_dil))
        acc += xp[(batch, ch) + at] * w[(f, ii) + tap]
    out[(b, f) + pos] = acc
  return np.transpose(out, np.argsort(out_spec))


def _canonical(x_shape, w_shape, kw):
  """The explicit arguments of conv_loops for a conv_general_dilated call."""
  dn = lax.conv_dimension_numbers(x_shape, w_shape, kw.get("dimension_numbers"))
  nsp = len(x_shape) - 2
  ld = kw.get("lhs_dilation") or (1,) * nsp
  rd = kw.get("rhs_dilation") or (1,) * nsp
  pad = kw["padding"]
  if isinstance(pad, str):
    window = reference_conv.dilate_shape([w_shape[d] for d in dn.rhs_spec[2:]], rd)
    pad = lax.padtype_to_pads([x_shape[d] for d in dn.lhs_spec[2:]], window,
                              kw["window_strides"], pad)
  return (kw["window_strides"], pad, ld, rd, dn, kw.get("feature_group_count", 1),
          kw.get("batch_group_count", 1))


# (id, lhs shape, rhs shape, conv_general_dilated keyword arguments)
CASES = [
    ("1d", (2, 3, 9), (4, 3, 3), dict(window_strides=(1,), padding="VALID")),
    ("1d_stride_same", (2, 3, 9), (4, 3, 3), dict(window_strides=(2,), padding="SAME")),
    ("1d_same_lower", (1, 2, 8), (2, 2, 4), dict(window_strides=(3,), padding="SAME_LOWER")),
    ("2d_nchw", (2, 3, 6, 5), (4, 3, 3, 2), dict(window_strides=(1, 2), padding=((1, 0), (2, 1)))),
    ("2d_nhwc", (2, 6, 5, 3), (3, 3, 3, 4), dict(
        window_strides=(2, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("2d_odd_layouts", (5, 3, 2, 6), (3, 4, 2, 2), dict(
        window_strides=(1, 1), padding="VALID", dimension_numbers=("HNCW", "HOWI", "WCNH"))),
    ("2d_rhs_dilation", (1, 2, 7, 7), (3, 2, 3, 2), dict(
        window_strides=(1, 2), padding="SAME", rhs_dilation=(2, 3))),
    ("2d_lhs_dilation", (2, 2, 4, 3), (3, 2, 2, 3), dict(
        window_strides=(1, 1), padding=((1, 1), (2, 0)), lhs_dilation=(2, 3))),
    # lhs dilation 3 with a 1-tap kernel: two of the three output phases meet no input
    ("1d_lhs_dilation_phases_without_taps", (1, 2, 4), (3, 2, 1), dict(
        window_strides=(1,), padding=((-1, 2),), lhs_dilation=(3,))),
    ("3d_lhs_dilation_mixed", (1, 2, 3, 3, 2), (2, 2, 2, 3, 2), dict(
        window_strides=(1, 2, 1), padding=((1, 1), (0, 1), (1, -1)), lhs_dilation=(2, 2, 1))),
    ("2d_negative_padding", (1, 2, 7, 6), (2, 2, 2, 2), dict(
        window_strides=(2, 1), padding=((-1, 0), (1, -2)))),
    ("2d_depthwise", (2, 5, 5, 4), (3, 3, 1, 8), dict(
        window_strides=(1, 1), padding="SAME", feature_group_count=4,
        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("2d_feature_groups", (2, 4, 5, 4), (6, 2, 2, 2), dict(
        window_strides=(1, 1), padding="VALID", feature_group_count=2)),
    ("2d_batch_groups", (4, 3, 5, 4), (6, 3, 2, 2), dict(
        window_strides=(1, 1), padding=((1, 1), (0, 0)), batch_group_count=2,
        rhs_dilation=(1, 2))),
    ("3d_ndhwc", (1, 4, 5, 3, 2), (2, 3, 2, 2, 3), dict(
        window_strides=(1, 2, 1), padding=((0, 1), (1, 1), (0, 0)),
        dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    ("0d", (3, 4), (5, 4), dict(window_strides=(), padding=())),
    # more taps than output positions (a kernel gradient's shape): one slice per position
    ("2d_big_kernel", (2, 3, 9, 8), (2, 3, 7, 7), dict(window_strides=(1, 2), padding="VALID")),
    # kernel-gradient shapes in NHWC (feature-major patches, conv_expansion._kernel_gradient):
    # rhs dilation, and an lhs dilation with stride 2 (no phase split)
    ("2d_big_kernel_nhwc_rhs_dilation", (2, 9, 10, 3), (4, 4, 3, 5), dict(
        window_strides=(1, 1), padding=((0, 0), (1, 0)), rhs_dilation=(2, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("2d_big_kernel_lhs_dilation_strided", (3, 2, 4, 4), (2, 2, 5, 5), dict(
        window_strides=(2, 2), padding=((0, 0), (1, 1)), lhs_dilation=(2, 2))),
    # 40 taps: the tap concatenate nests (conv_expansion.MAX_OPERANDS)
    ("1d_many_taps", (1, 2, 50), (2, 2, 40), dict(window_strides=(1,), padding=((20, 19),))),
    ("empty_output", (2, 3, 2, 2), (4, 3, 3, 3), dict(window_strides=(1, 1), padding="VALID")),
]


def _operands(ls, rs, dtype=np.float32):
  return rng.normal(size=ls).astype(dtype), rng.normal(size=rs).astype(dtype)


@pytest.mark.parametrize("name,ls,rs,kw", CASES, ids=[c[0] for c in CASES])
def test_values_eager_and_jit(name, ls, rs, kw):
  x, w = _operands(ls, rs)
  want = conv_loops(x, w, *_canonical(ls, rs, kw))
  fn = lambda x, w: lax.conv_general_dilated(x, w, **kw)
  for got in (fn(x, w), ember.jit(fn)(x, w)):
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=F32_RTOL, atol=2e-6)


def test_float64_and_conv_dimension_numbers_objects():
  x, w = _operands((2, 3, 6), (4, 3, 2), np.float64)
  dn = lax.ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
  want = conv_loops(x, w, (2,), ((1, 1),), (1,), (1,), dn)
  with ember.enable_x64():
    for fn in (lax.conv_general_dilated, ember.jit(lax.conv_general_dilated,
                                                  static_argnums=(2, 3, 4, 5, 6))):
      got = fn(x, w, (2,), ((1, 1),), None, None, dn)
      assert got.dtype == np.float64
      np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13)


def test_conv_and_conv_with_general_padding():
  x, w = _operands((2, 3, 6, 5), (4, 3, 3, 2))
  np.testing.assert_allclose(np.asarray(lax.conv(x, w, (1, 2), "SAME")),
                             conv_loops(x, w, *_canonical(x.shape, w.shape, dict(
                                 window_strides=(1, 2), padding="SAME"))), rtol=F32_RTOL,
                             atol=2e-6)
  got = ember.jit(lambda x, w: lax.conv_with_general_padding(
      x, w, (2, 1), ((1, 2), (0, 1)), (1, 2), (2, 1)))(x, w)
  want = conv_loops(x, w, (2, 1), ((1, 2), (0, 1)), (1, 2), (2, 1),
                    lax.conv_dimension_numbers(x.shape, w.shape, None))
  np.testing.assert_allclose(np.asarray(got), want, rtol=F32_RTOL, atol=2e-6)


def test_conv_dimension_numbers_from_strings():
  dn = lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 4), ("NHWC", "HWIO", "NHWC"))
  assert dn == lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
  assert lax.conv_dimension_numbers((1, 2, 3), (4, 2, 1), None) == \
      lax.ConvDimensionNumbers((0, 1, 2), (0, 1, 2), (0, 1, 2))
  # spatial dims follow the order of the kernel spec
  assert lax.conv_general_permutations(("NWHC", "HWIO", "NCHW")) == \
      ((0, 3, 2, 1), (3, 2, 0, 1), (0, 1, 2, 3))


def test_shape_tuples_as_jax_computes_them():
  # values from JAX 0.12
  assert lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), "SAME") == (2, 4, 5, 8)
  assert lax.conv_shape_tuple((4, 3, 9, 8), (4, 3, 3, 2), (1, 1), ((1, 0), (2, 2)), 2) == \
      (2, 4, 8, 11)
  nhwc = ("NHWC", "HWIO", "NHWC")
  assert lax.conv_general_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 1), "VALID", nhwc) == \
      (2, 4, 7, 4)
  assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), "SAME", nhwc) == \
      (2, 18, 24, 4)
  assert lax.conv_transpose_shape_tuple((2, 9, 8, 3), (3, 2, 3, 4), (2, 3), ((1, 2), (0, 1)),
                                        nhwc) == (2, 18, 22, 4)


def test_conv_general_dilated_patches():
  x = rng.normal(size=(2, 3, 6, 5)).astype(np.float32)
  # feature c * 6 + tap (i * 3 + j) at output (h, w) is x[:, c, h + i, w + j]
  want = np.stack([x[:, :, i:i + 5, j:j + 3] for i in range(2) for j in range(3)], 2)
  want = want.reshape(2, 3 * 6, 5, 3)
  for fn in (lax.conv_general_dilated_patches,
             ember.jit(lax.conv_general_dilated_patches, static_argnums=(1, 2, 3))):
    got = fn(x, (2, 3), (1, 1), "VALID")
    assert got.shape == (2, 18, 5, 3)
    np.testing.assert_array_equal(np.asarray(got), want)


# --- dtypes -------------------------------------------------------------------------------

def test_integer_and_preferred_element_type():
  x = rng.integers(-5, 5, (2, 3, 6)).astype(np.int8)
  w = rng.integers(-5, 5, (4, 3, 3)).astype(np.int8)
  want = conv_loops(x, w, (1,), ((1, 1),), (1,), (1,), lax.conv_dimension_numbers(
      x.shape, w.shape, None))
  for fn in (lambda x, w: lax.conv(x, w, (1,), "SAME", preferred_element_type=np.int32),
             ember.jit(lambda x, w: lax.conv(x, w, (1,), "SAME",
                                             preferred_element_type=np.int32))):
    got = fn(x, w)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), want.astype(np.int32))


def test_float16_inputs_keep_their_dtype_and_accumulate_in_float32():
  x, w = _operands((1, 2, 7), (3, 2, 3))
  x16, w16 = x.astype(np.float16), w.astype(np.float16)
  want = conv_loops(x16, w16, (1,), ((0, 0),), (1,), (1,), lax.conv_dimension_numbers(
      x.shape, w.shape, None))
  for fn in (lax.conv, ember.jit(lax.conv, static_argnums=(2, 3))):
    got = fn(x16, w16, (1,), "VALID")
    assert got.dtype == np.float16
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-3, atol=1e-3)
  got = lax.conv(x16, w16, (1,), "VALID", preferred_element_type=np.float32)
  assert got.dtype == np.float32
  np.testing.assert_allclose(np.asarray(got), want, rtol=F32_RTOL, atol=2e-6)


def test_complex():
  x = (rng.normal(size=(1, 2, 5)) + 1j * rng.normal(size=(1, 2, 5))).astype(np.complex64)
  w = (rng.normal(size=(2, 2, 2)) + 1j * rng.normal(size=(2, 2, 2))).astype(np.complex64)
  dn = lax.conv_dimension_numbers(x.shape, w.shape, None)
  want = sum(conv_loops(a, b, (1,), ((0, 1),), (1,), (1,), dn) * s
             for a, b, s in ((x.real, w.real, 1), (x.imag, w.imag, -1),
                             (x.real, w.imag, 1j), (x.imag, w.real, 1j)))
  for fn in (lax.conv, ember.jit(lax.conv, static_argnums=(2, 3))):
    got = fn(x, w, (1,), ((0, 1),))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


# --- derivatives and vmap -----------------------------------------------------------------

GRAD_CASES = [
    ("strided_padded", (1, 2, 5, 4), (3, 2, 2, 3), dict(
        window_strides=(2, 1), padding=((1, 0), (0, 1)))),
    ("dilated_nhwc", (2, 5, 4, 2), (2, 2, 2, 3), dict(
        window_strides=(1, 2), padding=((1, 0), (0, 1)), lhs_dilation=(2, 1), rhs_dilation=(1, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ("feature_groups", (2, 4, 5), (6, 2, 2), dict(
        window_strides=(1,), padding="VALID", feature_group_count=2)),
    ("batch_groups", (4, 3, 5), (4, 3, 2), dict(
        window_strides=(2,), padding=((1, 1),), batch_group_count=2)),
]


@pytest.mark.parametrize("name,ls,rs,kw", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_jvp_and_vjp_against_finite_differences(name, ls, rs, kw):
  x, w = _operands(ls, rs, np.float64)
  with ember.enable_x64():
    check_grads(lambda x, w: lax.conv_general_dilated(x, w, **kw), (x, w), order=2,
                modes=("fwd", "rev"))


def test_grad_under_jit_equals_eager():
  x, w = _operands((2, 4, 5, 2), (3, 3, 2, 4))
  kw = dict(window_strides=(2, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  loss = lambda x, w: (lax.conv_general_dilated(x, w, **kw) ** 2).sum()
  eager = ember.grad(loss, argnums=(0, 1))(x, w)
  jitted = ember.jit(ember.grad(loss, argnums=(0, 1)))(x, w)
  for e, j in zip(eager, jitted):
    np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-5, atol=1e-5)


def test_cnn_sized_gradients_under_jit_equal_eager():
  """A CNN layer's gradients (stride 2, SAME, NHWC): the kernel gradient contracts batch and
  positions as one dimension of a matrix product, the input gradient splits phases."""
  x, w = _operands((4, 16, 16, 8), (3, 3, 8, 16), np.float64)
  kw = dict(window_strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
  loss = lambda x, w: (ember.nn.relu(lax.conv_general_dilated(x, w, **kw)) ** 2).sum()
  with ember.enable_x64():
    eager = ember.grad(loss, argnums=(0, 1))(x, w)
    jitted = ember.jit(ember.grad(loss, argnums=(0, 1)))(x, w)
    for e, j in zip(eager, jitted):
      np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-12, atol=1e-12)


VMAP_CASES = [
    ("plain", dict(window_strides=(1, 2), padding="SAME")),
    ("feature_groups", dict(window_strides=(1, 1), padding="VALID", feature_group_count=2)),
    ("batch_groups", dict(window_strides=(1, 1), padding=((1, 0), (0, 1)),
                          batch_group_count=2)),
]


@pytest.mark.parametrize("name,kw", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
@pytest.mark.parametrize("axes", [(0, None), (None, 2), (1, 0)])
def test_vmap(name, kw, axes):
  xs = rng.normal(size=(3, 4, 4, 5, 4)).astype(np.float32)     # [B, N, C, H, W]
  ws = rng.normal(size=(3, 4, 2, 3, 2)).astype(np.float32)     # [B, O, I, H, W]
  if kw.get("feature_group_count", 1) == 1:
    ws = rng.normal(size=(3, 4, 4, 3, 2)).astype(np.float32)
  fn = lambda x, w: lax.conv_general_dilated(x, w, **kw)
  # an unbatched operand is the batch's first element
  x_in = xs[0] if axes[0] is None else np.moveaxis(xs, 0, axes[0])
  w_in = ws[0] if axes[1] is None else np.moveaxis(ws, 0, axes[1])
  pick = lambda a, axis, b: a[0] if axis is None else a[b]
  want = np.stack([np.asarray(fn(pick(xs, axes[0], b), pick(ws, axes[1], b)))
                   for b in range(3)])
  got = ember.vmap(fn, in_axes=axes)(x_in, w_in)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
  got = ember.jit(ember.vmap(fn, in_axes=axes))(x_in, w_in)
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


# --- conv_transpose -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax_transposes():
  return np.load(os.path.join(os.path.dirname(__file__), "data", "conv_transpose_jax.npz"))


@pytest.mark.parametrize("name", list(TRANSPOSE_CASES))
def test_conv_transpose_matches_jax(name, jax_transposes):
  ls, rs, kw = TRANSPOSE_CASES[name]
  x, w = operand(ls, 0), operand(rs, 1)
  want = jax_transposes[name]
  for fn in (lambda x, w: lax.conv_transpose(x, w, **kw),
             ember.jit(lambda x, w: lax.conv_transpose(x, w, **kw))):
    got = fn(x, w)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


def test_conv_transpose_with_transpose_kernel_is_the_gradient_of_conv():
  x, w = _operands((1, 6, 6, 2), (3, 3, 2, 3))
  dn = ("NHWC", "HWIO", "NHWC")
  y, vjp = ember.vjp(lambda x: lax.conv_general_dilated(x, w, (2, 2), "SAME",
                                                        dimension_numbers=dn), x)
  ct = rng.normal(size=y.shape).astype(np.float32)
  got = lax.conv_transpose(ct, w, (2, 2), "SAME", dimension_numbers=dn,
                           transpose_kernel=True)
  np.testing.assert_allclose(np.asarray(got), np.asarray(vjp(ct)[0]), rtol=1e-5, atol=1e-5)


# --- text and compiled structure ----------------------------------------------------------

def test_lowered_text_is_jax_stablehlo_and_compiled_has_one_dot():
  x, w = _operands((2, 5, 6, 3), (3, 3, 3, 4))
  f = ember.jit(lambda x, w: lax.conv_general_dilated(
      x, w, (1, 2), ((1, 1), (0, 2)), rhs_dilation=(2, 1),
      dimension_numbers=("NHWC", "HWIO", "NHWC")))
  text = f.lower(x, w).as_text()
  assert ("stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->"
          "[b, 0, 1, f], window = {stride = [1, 2], pad = [[1, 1], [0, 2]], lhs_dilate = "
          "[1, 1], rhs_dilate = [2, 1], reverse = [false, false]} {batch_group_count = 1 : "
          "i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision "
          "DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x5x6x3xf32>, "
          "tensor<3x3x3x4xf32>) -> tensor<2x3x3x4xf32>") in text
  compiled = f.lower(x, w).compile().as_text()
  assert " convolution(" not in compiled and compiled.count(" dot(") == 1


def test_hlo_text_of_a_convolution_uses_xla_attribute_syntax():
  from ember._src.hlo import graph as hlo
  from ember._src.lower import lower_jaxpr
  x, w = _operands((2, 5, 6, 4), (3, 3, 2, 4))
  jaxpr = ember.make_jaxpr(lambda x, w: lax.conv_general_dilated(
      x, w, (1, 2), ((1, 1), (0, 2)), rhs_dilation=(2, 1), feature_group_count=2,
      dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w)
  text = hlo.to_text(lower_jaxpr(jaxpr.jaxpr, "f"))
  assert ("window={size=3x3 stride=1x2 pad=1_1x0_2 rhs_dilate=2x1}, "
          "dim_labels=b01f_01io->b01f, feature_group_count=2") in text


def test_jaxpr_params_as_jax_prints_them():
  x, w = _operands((2, 5, 6, 3), (3, 3, 3, 4))
  text = str(ember.make_jaxpr(lambda x, w: lax.conv_general_dilated(
      x, w, (1, 2), ((1, 1), (0, 2)), dimension_numbers=("NHWC", "HWIO", "NHWC")))(x, w))
  assert ("dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, "
          "1), out_spec=(0, 3, 1, 2))") in text
  assert "padding=((1, 1), (0, 2))" in text and "window_strides=(1, 2)" in text


# --- errors -------------------------------------------------------------------------------

ERRORS = [
    ((2, 3, 5), (4, 2, 2), {}, ValueError,
     r"lhs feature dimension size divided by feature_group_count must equal the rhs input "
     r"feature dimension size, but 3 // 1 != 2"),
    ((2, 4, 5), (3, 2, 2), dict(feature_group_count=2), ValueError,
     r"rhs output feature dimension size must be a multiple of feature_group_count, but 3 is "
     r"not a multiple of 2"),
    ((2, 3, 5), (4, 1, 2), dict(feature_group_count=2), ValueError,
     r"feature_group_count must divide lhs feature dimension size, but 2 does not divide 3"),
    ((3, 3, 5), (4, 3, 2), dict(batch_group_count=2), ValueError,
     r"batch_group_count must divide lhs batch dimension size, but 2 does not divide 3"),
    ((2, 3, 5), (4, 3, 2), dict(feature_group_count=0), ValueError,
     r"feature_group_count must be a positive integer, got 0"),
    ((2, 3, 5), (4, 3, 2, 2), {}, TypeError,
     r"convolution requires lhs and rhs ndim to be equal, got 3 and 4"),
    ((2, 3, 5), (4, 3, 2), dict(window_strides=(1, 1)), ValueError,
     r"window and window_strides must have the same number of dimensions, but got 1 and 2"),
    ((2, 3, 5), (4, 3, 2), dict(padding=((1, 1), (0, 0))), ValueError,
     r"padding must have one entry per spatial dimension \(1\)"),
    ((2, 3, 5), (4, 3, 2), dict(padding="FULL"), RuntimeError,
     r"Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got FULL"),
    ((2, 3, 5), (4, 3, 2), dict(padding=(1, 1)), ValueError,
     r"padding argument to conv_general_dilated should be a string or a sequence of \(low, "
     r"high\) pairs"),
    ((2, 3, 5), (4, 3, 2), dict(padding=((-4, -3),)), ValueError,
     r"Negative padding is larger than the size of the corresponding dimension"),
    ((2, 3, 5), (4, 3, 2), dict(dimension_numbers=("NCH", "OIW", "NCH")), TypeError,
     r"dimension_numbers elements must each have the same set of spatial characters"),
    ((2, 3, 5), (4, 3, 2), dict(dimension_numbers=("NCHW", "OIH", "NCH")), TypeError,
     r"dimension_numbers\[0\] must have len equal to the ndim of lhs and rhs, got 4"),
    ((2, 3, 5), (4, 3, 2), dict(dimension_numbers=("NCC", "OIH", "NCH")), TypeError,
     r"dimension_numbers\[0\] must contain the characters 'N' and 'C' exactly once"),
    ((2, 3, 5), (4, 3, 2), dict(lhs_dilation=(2,), padding="SAME"), ValueError,
     r"String padding is not implemented for transposed convolution"),
    ((2, 3, 5), (4, 3, 2), dict(window_strides=(0,)), ValueError,
     r"window_strides must be positive, got \(0,\)"),
]


@pytest.mark.parametrize("ls,rs,kw,exc,match", ERRORS)
def test_errors(ls, rs, kw, exc, match):
  kw = {"window_strides": (1,) * (len(ls) - 2), "padding": "VALID", **kw}
  x, w = np.zeros(ls, np.float32), np.zeros(rs, np.float32)
  with pytest.raises(exc, match=match):
    lax.conv_general_dilated(x, w, **kw)


def test_dtype_mismatch_names_the_operation():
  with pytest.raises(TypeError, match=r"lax.conv_general_dilated requires arguments to have "
                                      r"the same dtypes, got float32, float16"):
    lax.conv(np.zeros((1, 2, 3), np.float32), np.zeros((1, 2, 2), np.float16), (1,), "VALID")


def _local_conv_reference(x, w, strides, pads, fs):
  """float64 unshared conv, NHWC / HWIO with I = channels * taps (channel-major, as JAX)."""
  x = np.pad(x.astype(np.float64), ((0, 0), *pads, (0, 0)))
  oh, ow = w.shape[:2]
  out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
  for i in range(oh):
    for j in range(ow):
      win = x[:, i * strides[0]:i * strides[0] + fs[0], j * strides[1]:j * strides[1] + fs[1]]
      feats = np.moveaxis(win, 3, 1).reshape(x.shape[0], -1)   # (N, C * taps)
      out[:, i, j] = feats @ w[i, j].astype(np.float64)
  return out


@pytest.mark.parametrize("strides,pads", [((1, 1), ((0, 0), (0, 0))), ((2, 1), ((1, 1), (0, 1))),
                                          ((1, 2), ((1, 0), (0, 1)))])
def test_conv_general_dilated_local_matches_numpy(strides, pads):
  rng = np.random.RandomState(0)
  x, fs = rng.randn(2, 7, 6, 3).astype(np.float32), (3, 2)
  oh = (7 + sum(pads[0]) - fs[0]) // strides[0] + 1
  ow = (6 + sum(pads[1]) - fs[1]) // strides[1] + 1
  w = rng.randn(oh, ow, 3 * 6, 4).astype(np.float32)
  dn = ("NHWC", "HWIO", "NHWC")
  f = lambda x, w: lax.conv_general_dilated_local(x, w, strides, pads, fs, dimension_numbers=dn)
  want = _local_conv_reference(x, w, strides, pads, fs)
  for got in (f(x, w), ember.jit(f)(x, w)):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)
  # NCHW / OIHW layout: the same numbers, moved
  xn, wn = np.moveaxis(x, 3, 1), np.transpose(w, (3, 2, 0, 1))
  got = lax.conv_general_dilated_local(xn, wn, strides, pads, fs)
  np.testing.assert_allclose(np.moveaxis(np.asarray(got), 1, 3), want, rtol=1e-5, atol=1e-5)

"""lax structural, reduction, cumulative, dot_general, sort/top_k and control primitives:
values against NumPy (float64), eager and jit, dtypes and weak types, printed jaxprs
(strings copied from JAX 0.12's make_jaxpr) and the errors users hit."""
import re

import ml_dtypes
import numpy as np
import pytest

import ember
from ember import lax

f32, i32, i8, u8 = np.float32, np.int32, np.int8, np.uint8
bf16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(f32): 1e-6, bf16: 1e-2, np.dtype(np.float16): 1e-3}


def modes(f):
  return [f, ember.jit(f)]


def data(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    return rng.integers(-5 if dtype.kind == "i" else 0, 10, shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def check(out, expected, dtype=None, weak=False, rtol=None):
  expected = np.asarray(expected)
  dtype = np.dtype(dtype if dtype is not None else expected.dtype)
  assert isinstance(out, ember.Array)
  assert out.dtype == dtype, (out.dtype, dtype)
  assert out.weak_type == weak
  assert out.shape == expected.shape, (out.shape, expected.shape)
  got = np.asarray(out)
  if dtype.kind in "fc" or dtype == bf16:
    wide = np.complex128 if dtype.kind == "c" else np.float64
    np.testing.assert_allclose(got.astype(wide), expected.astype(wide),
                               rtol=rtol or TOL.get(dtype, 1e-6), atol=1e-6)
  else:
    np.testing.assert_array_equal(got, expected)


def jaxpr_str(f, *args):
  return str(ember.make_jaxpr(f)(*args))


# --- structural ---------------------------------------------------------------------------

def np_pad(x, value, config):
  """Reference lax.pad: one axis at a time (dilate, then add or crop each edge)."""
  for ax, (lo, hi, interior) in enumerate(config):
    n = x.shape[ax]
    dil = 0 if n == 0 else n + (n - 1) * interior
    shape = list(x.shape)
    shape[ax] = dil
    y = np.full(shape, value, x.dtype)
    idx = [slice(None)] * x.ndim
    idx[ax] = slice(0, dil, interior + 1)
    y[tuple(idx)] = x
    for amount, front in ((lo, True), (hi, False)):
      if amount >= 0:
        shape = list(y.shape)
        shape[ax] = amount
        fill = np.full(shape, value, x.dtype)
        y = np.concatenate([fill, y] if front else [y, fill], axis=ax)
      else:
        idx = [slice(None)] * x.ndim
        idx[ax] = slice(-amount, None) if front else slice(0, y.shape[ax] + amount)
        y = y[tuple(idx)]
    x = y
  return x


STRUCTURAL = [
    # name, lax fn, numpy reference, input shapes
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
     lambda x: np.broadcast_to(x[None], (2, 3, 4)), [(3, 1)]),
    ("broadcast_in_dim_permuted", lambda x: lax.broadcast_in_dim(x, (3, 4, 2), (2, 0)),
     lambda x: np.broadcast_to(x.T[:, None, :], (3, 4, 2)), [(2, 3)]),
    ("broadcast_in_dim_0d", lambda x: lax.broadcast_in_dim(x, (2, 2), ()),
     lambda x: np.broadcast_to(x, (2, 2)), [()]),
    ("broadcast", lambda x: lax.broadcast(x, (2, 1)), lambda x: np.broadcast_to(x, (2, 1, 3)),
     [(3,)]),
    ("broadcast_to_rank", lambda x: lax.broadcast_to_rank(x, 3), lambda x: x[None, None],
     [(4,)]),
    ("reshape", lambda x: lax.reshape(x, (4, 6)), lambda x: x.reshape(4, 6), [(2, 3, 4)]),
    ("reshape_dimensions", lambda x: lax.reshape(x, (6, 4), (2, 0, 1)),
     lambda x: x.transpose(2, 0, 1).reshape(6, 4), [(2, 3, 4)]),
    ("reshape_empty", lambda x: lax.reshape(x, (3, 0)), lambda x: x.reshape(3, 0), [(0, 3)]),
    ("reshape_0d", lambda x: lax.reshape(x, (1, 1)), lambda x: x.reshape(1, 1), [()]),
    ("collapse", lambda x: lax.collapse(x, 1, 3), lambda x: x.reshape(2, 12), [(2, 3, 4)]),
    ("transpose", lambda x: lax.transpose(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1),
     [(2, 3, 4)]),
    ("squeeze", lambda x: lax.squeeze(x, (0, -1)), lambda x: x[0, :, :, 0], [(1, 2, 3, 1)]),
    ("expand_dims", lambda x: lax.expand_dims(x, (0, -1)), lambda x: x[None, :, :, None],
     [(2, 3)]),
    ("rev", lambda x: lax.rev(x, (0, 2)), lambda x: x[::-1, :, ::-1], [(2, 3, 4)]),
    ("rev_none", lambda x: lax.rev(x, ()), lambda x: x, [(2, 3)]),
    ("slice", lambda x: lax.slice(x, (0, 1, 1), (2, 3, 4)), lambda x: x[0:2, 1:3, 1:4],
     [(2, 3, 4)]),
    ("slice_strided", lambda x: lax.slice(x, (1, 0), (5, 5), (2, 3)),
     lambda x: x[1:5:2, 0:5:3], [(5, 5)]),
    ("slice_empty", lambda x: lax.slice(x, (2,), (2,)), lambda x: x[2:2], [(4,)]),
    ("slice_in_dim", lambda x: lax.slice_in_dim(x, -3, None, 2, axis=1),
     lambda x: x[:, -3::2], [(2, 5)]),
    ("index_in_dim", lambda x: lax.index_in_dim(x, -1, axis=1, keepdims=False),
     lambda x: x[:, -1], [(2, 5, 2)]),
    ("index_in_dim_keep", lambda x: lax.index_in_dim(x, 1), lambda x: x[1:2], [(3, 2)]),
    ("concatenate", lambda x, y, z: lax.concatenate([x, y, z], 1),
     lambda x, y, z: np.concatenate([x, y, z], 1), [(2, 1, 3), (2, 0, 3), (2, 4, 3)]),
    ("pad", lambda x: lax.pad(x, lax.convert_element_type(0, x.dtype),
                              ((1, 2, 0), (0, -1, 1), (-1, 1, 2))),
     lambda x: np_pad(x, 0, ((1, 2, 0), (0, -1, 1), (-1, 1, 2))), [(2, 3, 2)]),
    ("pad_crop_interior", lambda x: lax.pad(x, lax.convert_element_type(1, x.dtype),
                                            ((-2, -1, 2),)),
     lambda x: np_pad(x, 1, ((-2, -1, 2),)), [(5,)]),
    ("pad_empty", lambda x: lax.pad(x, lax.convert_element_type(1, x.dtype),
                                    ((1, 1, 3), (0, 0, 0))),
     lambda x: np_pad(x, 1, ((1, 1, 3), (0, 0, 0))), [(0, 2)]),
    ("stack", lambda x, y: lax.stack([x, y], axis=-1), lambda x, y: np.stack([x, y], -1),
     [(2, 3), (2, 3)]),
    ("tile", lambda x: lax.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), [(1, 2, 2)]),
]


@pytest.mark.parametrize("dtype", [f32, i32, np.bool_, bf16], ids=str)
@pytest.mark.parametrize("name,fn,ref,shapes", STRUCTURAL, ids=[c[0] for c in STRUCTURAL])
def test_structural_values(name, fn, ref, shapes, dtype):
  args = [data(s, dtype, seed=i) for i, s in enumerate(shapes)]
  expected = ref(*args)
  for f in modes(fn):
    check(f(*args), expected, dtype)


def test_multiple_result_structural():
  x = data((2, 5, 3), f32)
  for f in modes(lambda x: lax.split(x, (1, 0, 4), axis=1)):
    outs = f(x)
    assert [o.shape for o in outs] == [(2, 1, 3), (2, 0, 3), (2, 4, 3)]
    for o, e in zip(outs, np.split(x, [1, 1], axis=1)):
      check(o, e)
  for f in modes(lambda x: lax.unstack(x, axis=2)):
    outs = f(x)
    assert isinstance(outs, tuple) and len(outs) == 3
    for i, o in enumerate(outs):
      check(o, x[:, :, i])


@pytest.mark.parametrize("dtype", [i32, f32, np.uint8, np.complex64, bf16], ids=str)
def test_iota(dtype):
  for f in modes(lambda: lax.iota(dtype, 5)):
    check(f(), np.arange(5).astype(dtype), dtype)
  for f in modes(lambda: lax.broadcasted_iota(dtype, (2, 3, 4), 1)):
    check(f(), np.broadcast_to(np.arange(3)[:, None], (2, 3, 4)).astype(dtype), dtype)


def test_full_and_full_like_dtypes_and_weak_types():
  check(lax.full((2, 3), 1.5), np.full((2, 3), 1.5, f32), weak=True)
  check(lax.full((2,), 7), np.full(2, 7, i32), weak=True)
  check(lax.full((2,), 1.0, np.float16), np.ones(2, np.float16))
  check(lax.full((2,), np.float16(1)), np.ones(2, np.float16))
  check(lax.full((), True), np.array(True))
  x = np.ones((2, 3), f32)
  check(lax.full_like(x, 2), np.full((2, 3), 2, f32))
  check(lax.full_like(x, 2, shape=(4,)), np.full((4,), 2, f32))
  check(lax.full_like(x, 2.7, dtype=i32), np.full((2, 3), 2, i32))
  check(lax.full_like(1.0, 3), np.array(3, f32), weak=True)
  for f in modes(lambda x: lax.full_like(x, 0)):
    check(f(lax.full((3,), 1.0)), np.zeros(3, f32), weak=True)
  with pytest.raises(TypeError, match=r"full must be called with scalar fill_value"):
    lax.full((2,), np.ones(2))


WEAK_STRUCTURAL = [
    ("reshape", lambda x: lax.reshape(x, (3, 1)), True),
    ("transpose", lambda x: lax.transpose(x, (0,)), True),
    ("rev", lambda x: lax.rev(x, (0,)), True),
    ("slice", lambda x: lax.slice(x, (0,), (1,)), True),
    ("pad_weak_value", lambda x: lax.pad(x, 0.0, [(1, 1, 0)]), True),
    ("pad_strong_value", lambda x: lax.pad(x, np.float32(0), [(1, 1, 0)]), False),
    ("concat_weak", lambda x: lax.concatenate([x, x], 0), True),
    ("concat_mixed", lambda x: lax.concatenate([x, np.ones(3, f32)], 0), False),
    ("broadcast_in_dim", lambda x: lax.broadcast_in_dim(x, (2, 3), (1,)), True),
    ("tile", lambda x: lax.tile(x, (2,)), True),
    ("stack", lambda x: lax.stack([x, x]), True),
]


@pytest.mark.parametrize("name,fn,weak", WEAK_STRUCTURAL, ids=[c[0] for c in WEAK_STRUCTURAL])
def test_structural_weak_types(name, fn, weak):
  x = lax.full((3,), 2.0)  # weakly typed f32
  for f in modes(fn):
    out = f(x)
    assert out.dtype == f32 and out.weak_type == weak


def test_identity_ops_stage_nothing():
  x = np.ones((2, 3), f32)
  for f in [lambda x: lax.reshape(x, (2, 3)), lambda x: lax.transpose(x, (0, 1)),
            lambda x: lax.concatenate([x], 0), lambda x: lax.squeeze(x, ()),
            lambda x: lax.broadcast(x, ()), lambda x: lax.broadcast_in_dim(x, (2, 3), (0, 1))]:
    assert jaxpr_str(f, x) == "{ lambda ; a:f32[2,3]. let  in (a,) }"


# --- reductions ---------------------------------------------------------------------------

REDUCTIONS = [
    # lax fn, numpy fn, dtypes
    (lax.reduce_sum, np.sum, [f32, i32, bf16]),
    (lax.reduce_prod, np.prod, [f32, i32]),
    (lax.reduce_max, np.max, [f32, i32, np.bool_, bf16]),
    (lax.reduce_min, np.min, [f32, i32, np.bool_, np.uint8]),
    (lax.reduce_and, np.logical_and.reduce, [np.bool_]),
    (lax.reduce_or, np.logical_or.reduce, [np.bool_]),
    (lax.reduce_xor, np.logical_xor.reduce, [np.bool_]),
    (lax.reduce_and, np.bitwise_and.reduce, [i32, np.uint8]),
    (lax.reduce_or, np.bitwise_or.reduce, [i32]),
    (lax.reduce_xor, np.bitwise_xor.reduce, [i32]),
]
_RED_CASES = [(f, r, d, axes) for f, r, ds in REDUCTIONS for d in ds
              for axes in [(0, 2), (1,), (), (0, 1, 2)]]


@pytest.mark.parametrize("lax_fn,np_fn,dtype,axes", _RED_CASES,
                         ids=[f"{c[0].__name__}-{np.dtype(c[2]).name}-{c[3]}" for c in _RED_CASES])
def test_reductions(lax_fn, np_fn, dtype, axes):
  x = data((2, 3, 4), dtype)
  expected = np_fn(x.astype(np.float64) if np.dtype(dtype).kind == "f" or dtype == bf16 else x,
                   axis=axes)
  if lax_fn in (lax.reduce_sum, lax.reduce_prod) and np.dtype(dtype).kind == "i":
    expected = np_fn(x, axis=axes, dtype=dtype)  # integer sums wrap in the input dtype
  for f in modes(lambda x: lax_fn(x, axes)):
    check(f(x), np.asarray(expected).astype(dtype), dtype, rtol=2e-2 if dtype == bf16 else 1e-5)


def test_reduction_edge_values():
  empty = np.zeros((0, 2), f32)
  check(lax.reduce_sum(empty, (0,)), np.zeros(2, f32))
  check(lax.reduce_prod(empty, (0,)), np.ones(2, f32))
  check(lax.reduce_max(empty, (0,)), np.full(2, -np.inf, f32))
  check(lax.reduce_min(empty, (0,)), np.full(2, np.inf, f32))
  check(lax.reduce_max(np.zeros(0, i32), (0,)), np.array(np.iinfo(i32).min, i32))
  check(lax.reduce_min(np.zeros(0, u8), (0,)), np.array(255, u8))
  check(lax.reduce_max(np.zeros(0, bool), (0,)), np.array(False))
  check(lax.reduce_and(np.zeros(0, i32), (0,)), np.array(-1, i32))
  check(lax.reduce_and(np.zeros(0, u8), (0,)), np.array(255, u8))
  check(lax.reduce_or(np.zeros(0, i32), (0,)), np.array(0, i32))
  nan = np.array([np.nan, 1.0, 2.0], f32)
  check(lax.reduce_max(nan, (0,)), np.array(np.nan, f32))
  check(lax.reduce_min(nan[::-1].copy(), (0,)), np.array(np.nan, f32))
  check(lax.reduce_sum(np.array([100, 100, 100], i8), (0,)), np.array(44, i8))  # wraps
  check(lax.reduce_sum(2.0, ()), np.array(2.0, f32), weak=True)
  check(lax.reduce_and(np.array([6, 3], u8), (0,)), np.array(2, u8))


def test_reduction_weak_types():
  w = lax.full((3,), 2.0)
  for f in modes(lambda x: lax.reduce_sum(x, (0,))):
    assert f(w).weak_type
  wi = lax.full((3,), 2)
  for f in modes(lambda x: (lax.reduce_and(x, (0,)), lax.argmax(x, 0, i32))):
    a, b = f(wi)
    assert not a.weak_type and not b.weak_type


ARG_CASES = [
    (np.array([1.0, np.nan, 3.0, np.nan], f32), 1, 1),   # the first NaN wins both ways
    (np.array([1, 3, 3, 0], i32), 1, 3),                 # ties: the first index
    (np.array([np.nan, -np.inf, np.nan], f32), 0, 0),
    (np.array([False, True, True]), 1, 0),
    (np.array([-0.0, 0.0], f32), 0, 0),                  # -0 == 0
]


@pytest.mark.parametrize("x,amax,amin", ARG_CASES)
def test_argmax_argmin_special_values(x, amax, amin):
  for f in modes(lambda x: (lax.argmax(x, 0, i32), lax.argmin(x, 0, i32))):
    a, b = f(x)
    check(a, np.array(amax, i32))
    check(b, np.array(amin, i32))


@pytest.mark.parametrize("dtype", [f32, i32, bf16], ids=str)
def test_argmax_argmin_axes(dtype):
  x = data((2, 3, 4), dtype)
  for axis in range(3):
    for f in modes(lambda x: (lax.argmax(x, axis, i32), lax.argmin(x, axis, np.uint8))):
      a, b = f(x)
      check(a, np.argmax(x.astype(np.float64), axis).astype(i32))
      check(b, np.argmin(x.astype(np.float64), axis).astype(np.uint8))


# --- cumulative ---------------------------------------------------------------------------

def _np_cum(ufunc):
  def ref(x, axis, reverse):
    y = np.flip(x, axis) if reverse else x
    out = ufunc.accumulate(y, axis=axis)
    return np.flip(out, axis) if reverse else out
  return ref


CUMULATIVE = [(lax.cumsum, _np_cum(np.add), [f32, i32, bf16]),
              (lax.cumprod, _np_cum(np.multiply), [f32, i32]),
              (lax.cummax, _np_cum(np.maximum), [f32, i32, bf16]),
              (lax.cummin, _np_cum(np.minimum), [f32, u8]),
              (lax.cumlogsumexp, _np_cum(np.logaddexp), [f32, bf16])]
_CUM_CASES = [(f, r, d, axis, rev) for f, r, ds in CUMULATIVE for d in ds
              for axis in (0, 2) for rev in (False, True)]


@pytest.mark.parametrize("lax_fn,ref,dtype,axis,reverse", _CUM_CASES,
                         ids=[f"{c[0].__name__}-{np.dtype(c[2]).name}-{c[3]}-{c[4]}"
                              for c in _CUM_CASES])
def test_cumulative(lax_fn, ref, dtype, axis, reverse):
  x = data((2, 3, 4), dtype)
  x64 = x.astype(np.float64) if np.dtype(dtype).kind == "f" or dtype == bf16 else x
  expected = ref(x64, axis, reverse).astype(dtype)
  for f in modes(lambda x: lax_fn(x, axis, reverse=reverse)):
    # bf16: the reference accumulates in float64; ember rounds at every step, as XLA's scan
    # (its bits: test_xla_scans.py), a few bfloat16 ulps where a logsumexp cancels
    check(f(x), expected, dtype, rtol=6e-2 if dtype == bf16 else 1e-5)


def test_cumulative_special_values():
  check(lax.cumprod(np.array([100, 2, 3], i8), 0), np.array([100, -56, 88], i8))  # wraps
  check(lax.cummax(np.array([1.0, np.nan, 3.0], f32), 0), np.array([1, np.nan, np.nan], f32))
  check(lax.cummin(np.array([3, 1, 2], i32), 0, reverse=True), np.array([1, 1, 2], i32))
  check(lax.cumsum(np.array([1.0, np.inf, -np.inf, 2.0], f32), 0),
        np.array([1, np.inf, np.nan, np.nan], f32))
  check(lax.cumlogsumexp(np.array([-np.inf, -np.inf, 0.0], f32), 0),
        np.array([-np.inf, -np.inf, 0.0], f32))
  check(lax.cumsum(np.zeros((0, 3), f32), 1), np.zeros((0, 3), f32))
  w = lax.full((3,), 2.0)
  for f in modes(lambda x: lax.cumsum(x)):
    check(f(w), np.array([2.0, 4.0, 6.0], f32), weak=True)


# --- dot_general --------------------------------------------------------------------------

DOTS = [
    # lhs shape, rhs shape, dimension_numbers, einsum spec
    ((2, 3), (3, 4), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((3,), (3,), (((0,), (0,)), ((), ())), "i,i->"),
    ((2, 3), (4,), (((), ()), ((), ())), "ij,k->ijk"),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ((3, 2, 4), (4, 3, 2), (((0, 2), (1, 0)), ((1,), (2,))), "cbk,kcb->b"),
    ((2, 0), (0, 3), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((4, 2, 3), (3, 2, 5), (((2,), (0,)), ((1,), (1,))), "ibj,jbk->bik"),
]


@pytest.mark.parametrize("dtype", [f32, i32, bf16], ids=str)
@pytest.mark.parametrize("case", range(len(DOTS)))
def test_dot_general_values(case, dtype):
  ls, rs, dims, spec = DOTS[case]
  lhs, rhs = data(ls, dtype, 1), data(rs, dtype, 2)
  expected = np.einsum(spec, lhs.astype(np.float64), rhs.astype(np.float64))
  for f in modes(lambda a, b: lax.dot_general(a, b, dims)):
    check(f(lhs, rhs), expected.astype(dtype), dtype, rtol=2e-2 if dtype == bf16 else 1e-5)


def test_dot_general_dtypes():
  a8 = np.array([[100, 100]], i8)
  b8 = np.array([[1], [1]], i8)
  dims = (((1,), (0,)), ((), ()))
  check(lax.dot_general(a8, b8, dims), np.array([[-56]], i8))  # accumulates in int8 (wraps)
  check(lax.dot_general(a8, b8, dims, preferred_element_type=i32), np.array([[200]], i32))
  x = data((2, 3), f32)
  xb = x.astype(bf16)
  check(lax.dot_general(xb, xb.T, dims, preferred_element_type=f32),
        xb.astype(np.float64) @ xb.astype(np.float64).T, f32, rtol=1e-5)
  check(lax.dot_general(x, np.ones((3, 2), i32), dims), x.astype(np.float64).sum(1)[:, None]
        .repeat(2, 1), f32, rtol=1e-5)  # mixed inputs: the higher-precision type (f32)
  check(lax.dot_general(np.ones((1, 2), i8), np.ones((2, 1), u8), dims),
        np.array([[2]], i8))  # XLA's HigherPrecisionType: signed wins over unsigned
  check(lax.dot_general(np.array([[True, False]]), np.array([[True], [True]]), dims),
        np.array([[True]]))
  w = lax.full((3,), 2.0)
  assert lax.dot_general(w, w, (((0,), (0,)), ((), ()))).weak_type
  assert not lax.dot_general(w, np.ones(3, f32), (((0,), (0,)), ((), ()))).weak_type


def test_dot_and_batch_matmul():
  a, b, v = data((2, 3), f32), data((3, 4), f32, 1), data((3,), f32, 2)
  for f in modes(lambda a, b, v: (lax.dot(a, b), lax.dot(a, v), lax.dot(v, v),
                                  lax.dot(a, b, precision=lax.Precision.HIGHEST),
                                  lax.dot(a, b, precision="float32"))):
    ab, av, vv, ab2, ab3 = f(a, b, v)
    ref = a.astype(np.float64) @ b
    check(ab, ref, f32, rtol=1e-5)
    check(ab2, ref, f32, rtol=1e-5)
    check(ab3, ref, f32, rtol=1e-5)
    check(av, a.astype(np.float64) @ v, f32, rtol=1e-5)
    check(vv, np.array(v.astype(np.float64) @ v), f32, rtol=1e-5)
  x, y = data((2, 3, 4), f32), data((2, 4, 5), f32, 1)
  for f in modes(lax.batch_matmul):
    check(f(x, y), x.astype(np.float64) @ y, f32, rtol=1e-5)


# --- sort / top_k -------------------------------------------------------------------------

def test_sort_float_order():
  x = np.array([np.nan, 1.0, -0.0, 0.0, -np.inf, -np.nan, np.inf, 0.0, -0.0], f32)
  for f in modes(lambda x: lax.sort(x)):
    out = np.asarray(f(x))
    np.testing.assert_array_equal(out, [-np.inf, 0, 0, 0, 0, 1, np.inf, np.nan, np.nan])
    # -0.0 == 0.0 and the sort is stable: the zeros keep their input order
    np.testing.assert_array_equal(np.signbit(out[1:5]), [True, False, False, True])


@pytest.mark.parametrize("dtype", [f32, i32, np.uint8, np.bool_, bf16], ids=str)
def test_sort_values(dtype):
  x = data((3, 4, 5), dtype)
  for dim in (0, 1, -1):
    for f in modes(lambda x: lax.sort(x, dimension=dim)):
      check(f(x), np.sort(x.astype(np.float64) if dtype == bf16 else x, axis=dim)
            .astype(dtype), dtype)


def test_sort_multiple_operands_and_keys():
  k1 = np.array([1, 1, 0, 1, 0], i32)
  k2 = np.array([3, 2, 5, 2, 5], i32)
  v = np.array([10., 20., 30., 40., 50.], f32)
  for f in modes(lambda a, b, c: lax.sort((a, b, c), num_keys=2)):
    a, b, c = f(k1, k2, v)
    check(a, np.array([0, 0, 1, 1, 1], i32))
    check(b, np.array([5, 5, 2, 2, 3], i32))
    check(c, np.array([30., 50., 20., 40., 10.], f32))   # stable within equal keys
  for f in modes(lambda k, v: lax.sort_key_val(k, v)):
    k, vals = f(k2, v)
    order = np.argsort(k2, kind="stable")
    check(k, k2[order])
    check(vals, v[order])
  c = np.array([1 + 2j, 1 + 1j, 0 + 5j, np.nan + 0j], np.complex64)
  check(lax.sort(c), np.array([5j, 1 + 1j, 1 + 2j, np.nan], np.complex64))


def test_top_k():
  cases = [
      (np.array([1.0, np.nan, 3.0, 3.0], f32), 3, [np.nan, 3, 3], [1, 2, 3]),
      (np.array([5, -2**31, 2**31 - 1], i32), 3, [2**31 - 1, 5, -2**31], [2, 0, 1]),
      (np.array([5, 0, 255], u8), 2, [255, 5], [2, 0]),
      (np.array([False, True, True]), 2, [True, True], [1, 2]),
      (np.array([0.0, -0.0, 0.0], f32), 3, [0, 0, -0.0], [0, 2, 1]),  # -0 ranks below 0
      (np.array([1.0, 2.0], f32), 0, [], []),
  ]
  for x, k, vals, idx in cases:
    for f in modes(lambda x: lax.top_k(x, k)):
      v, i = f(x)
      check(v, np.array(vals, x.dtype))
      check(i, np.array(idx, i32))
  x = data((2, 3, 6), f32)
  for f in modes(lambda x: lax.top_k(x, 2, axis=1)):
    v, i = f(x)
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    check(i, order.astype(i32))
    check(v, np.take_along_axis(x, order, 1))
  v, i = lax.top_k(lax.full((3,), 2.0), 1)
  assert v.weak_type and i.weak_type  # JAX builds the index aval from the operand's


# --- control ------------------------------------------------------------------------------

def test_stop_gradient_and_optimization_barrier_are_identities():
  x = data((2, 3), f32)
  tree = {"a": x, "b": (np.arange(3, dtype=i32), 2.0)}
  for fn in (lax.stop_gradient, lax.optimization_barrier):
    for f in modes(fn):
      out = f(tree)
      check(out["a"], x)
      check(out["b"][0], np.arange(3, dtype=i32))
      check(out["b"][1], np.array(2.0, f32), weak=True)


# --- printed jaxprs (strings from JAX 0.12's make_jaxpr) -------------------------------------

X23 = np.ones((2, 3), f32)
JAXPRS = [
    (lambda x: lax.reshape(x, (6,)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[6] = reshape[dimensions=None new_sizes=(6,) "
     "sharding=None] a\n  in (b,) }"),
    (lambda x: lax.reshape(x, (3, 2), (1, 0)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = reshape[dimensions=(1, 0) new_sizes=(3, 2) "
     "sharding=None] a\n  in (b,) }"),
    (lambda x: lax.broadcast_in_dim(x, (4, 2, 3), (1, 2)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[4,2,3] = broadcast_in_dim[broadcast_dimensions=(1, "
     "2)] a\n  in (b,) }"),
    (lambda: lax.full((2,), 3, np.int8), None,
     "{ lambda ; . let a:i8[2] = broadcast_in_dim 3:i8[] in (a,) }"),
    (lambda x: lax.squeeze(lax.expand_dims(x, (0,)), (0,)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[1,2,3] = broadcast_in_dim[broadcast_dimensions=(1, "
     "2)] a\n    c:f32[2,3] = squeeze[dimensions=(0,)] b\n  in (c,) }"),
    (lambda x: lax.slice(x, (0, 1), (2, 3)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,2] = slice[limit_indices=(2, 3) "
     "start_indices=(0, 1) strides=None] a\n  in (b,) }"),
    (lambda x: lax.index_in_dim(x, -1, axis=0, keepdims=False), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[1,3] = slice[limit_indices=(2, 3) start_indices=(1, "
     "0) strides=(1, 1)] a\n    c:f32[3] = squeeze[dimensions=(0,)] b\n  in (c,) }"),
    (lambda x: lax.concatenate([x, x], 0), X23,
     "{ lambda ; a:f32[2,3]. let b:f32[4,3] = concatenate[dimension=0] a a in (b,) }"),
    (lambda x: lax.pad(x, 0.0, ((1, 2, 0), (0, -1, 1))), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[5,4] = pad[padding_config=((1, 2, 0), (0, -1, 1))] "
     "a 0.0:f32[]\n  in (b,) }"),
    (lambda x: lax.rev(x, ()), X23,
     "{ lambda ; a:f32[2,3]. let b:f32[2,3] = rev[dimensions=()] a in (b,) }"),
    (lambda: lax.iota(np.int32, 4), None,
     "{ lambda ; . let\n    a:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] "
     "\n  in (a,) }"),
    (lambda x: lax.reduce_sum(x, (0,)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a\n"
     "  in (b,) }"),
    (lambda x: lax.reduce_or(x, (0, 1)), X23 > 0,
     "{ lambda ; a:bool[2,3]. let b:bool[] = reduce_or[axes=(0, 1)] a in (b,) }"),
    (lambda x: lax.argmax(x, 0, np.int32), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:i32[3] = argmax[axes=(0,) index_dtype=int32] a\n"
     "  in (b,) }"),
    (lambda x: lax.cumsum(x, 1, reverse=True), X23,
     "{ lambda ; a:f32[2,3]. let b:f32[2,3] = cumsum[axis=1 reverse=True] a in (b,) }"),
    (lambda x: lax.dot_general(x, lax.transpose(x, (1, 0)), (((1,), (0,)), ((), ()))), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = transpose[permutation=(1, 0)] a\n"
     "    c:f32[2,2] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n  in (c,) }"),
    (lambda x: lax.dot_general(x, lax.transpose(x, (1, 0)), (((1,), (0,)), ((), ())),
                               preferred_element_type=np.float32), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = transpose[permutation=(1, 0)] a\n"
     "    c:f32[2,2] = dot_general[\n      dimension_numbers=(([1], [0]), ([], []))\n"
     "      preferred_element_type=float32\n    ] a b\n  in (c,) }"),
    (lambda x: lax.dot(x, x, precision="highest"), np.ones(3, f32),
     "{ lambda ; a:f32[3]. let\n    b:f32[] = dot_general[\n      dimension_numbers=(([0], "
     "[0]), ([], []))\n      precision=(Precision.HIGHEST, Precision.HIGHEST)\n    ] a a\n"
     "  in (b,) }"),
    (lambda x: lax.sort((x, x), num_keys=1), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] c:f32[2,3] = sort[dimension=1 is_stable=True "
     "num_keys=1] a a\n  in (b, c) }"),
    (lambda x: lax.top_k(x, 2), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,2] c:i32[2,2] = top_k[axis=1 is_stable=True "
     "k=2] a\n  in (b, c) }"),
    (lambda x: lax.optimization_barrier((x, x)), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] c:f32[2,3] = optimization_barrier a a\n"
     "  in (b, c) }"),
    (lambda x: lax.stop_gradient(x), X23,
     "{ lambda ; a:f32[2,3]. let b:f32[2,3] = stop_gradient a in (b,) }"),
    (lambda x: lax.split(x, (1, 2), 1), X23,
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,1] c:f32[2,2] = split[axis=1 sizes=(1, 2)] a\n"
     "  in (b, c) }"),
    (lambda x: lax.tile(x, (1, 2)), X23,
     "{ lambda ; a:f32[2,3]. let b:f32[2,6] = tile[reps=(1, 2)] a in (b,) }"),
    (lambda x: lax.stack([x, x], 1), X23,
     "{ lambda ; a:f32[2,3]. let b:f32[2,2,3] = stack[axis=1] a a in (b,) }"),
]


@pytest.mark.parametrize("case", range(len(JAXPRS)))
def test_printed_jaxprs_match_jax(case):
  fn, x, expected = JAXPRS[case]
  assert jaxpr_str(fn, *([] if x is None else [x])) == expected


# --- errors -------------------------------------------------------------------------------

ERRORS = [
    (lambda: lax.reshape(X23, (4,)), TypeError,
     r"reshape total size must be unchanged, got new_sizes \(4,\) .* for shape \(2, 3\)"),
    (lambda: lax.reshape(X23, (-1,)), TypeError, r"reshape new_sizes must all be positive"),
    (lambda: lax.reshape(X23, (6,), (0, 0)), TypeError,
     r"reshape dimensions must be a permutation of operand dimensions"),
    (lambda: lax.transpose(X23, (0, 0)), TypeError,
     r"transpose permutation isn't a permutation of operand dimensions, got permutation "
     r"\(0, 0\) for operand shape \(2, 3\)"),
    (lambda: lax.concatenate([X23, X23[0]], 0), TypeError,
     r"Cannot concatenate arrays with different numbers of dimensions: got \(2, 3\), \(3,\)"),
    (lambda: lax.concatenate([X23, X23[:, :2]], 0), TypeError,
     r"differ in dimensions other than the one being concatenated"),
    (lambda: lax.concatenate([X23, X23.astype(i32)], 0), TypeError,
     r"lax.concatenate requires arguments to have the same dtypes, got float32, int32"),
    (lambda: lax.concatenate([X23, X23], 2), TypeError, r"concatenate dimension out of bounds"),
    (lambda: lax.concatenate([], 0), ValueError, r"non-empty"),
    (lambda: lax.dot_general(X23, X23, (((1,), (0,)), ((), ()))), TypeError,
     r"dot_general requires contracting dimensions to have the same shape, got \(3,\) and "
     r"\(2,\)"),
    (lambda: lax.dot_general(X23, X23[:1], (((1,), (1,)), ((0,), (0,)))), TypeError,
     r"batch dimensions to have the same shape, got \(2,\) and \(1,\)"),
    (lambda: lax.dot_general(X23, X23, (((2,), (1,)), ((), ()))), TypeError,
     r"lhs dimension numbers to be nonnegative and less than the number of axes"),
    (lambda: lax.dot_general(X23.astype(i32), X23.astype(i32), (((1,), (1,)), ((), ())),
                             preferred_element_type=i8), TypeError,
     r"`preferred_element_type` must not be narrower than the original type"),
    (lambda: lax.dot(X23, X23), ValueError, r"dimension_numbers must be specified"),
    (lambda: lax.dot(X23, X23.T, precision="bogus"), ValueError, r"Precision argument"),
    (lambda: lax.slice(X23, (0, 0), (3, 3)), TypeError,
     r"slice limit_indices must be less than or equal to operand shape"),
    (lambda: lax.slice(X23, (2, 0), (1, 3)), TypeError,
     r"limit_indices must be greater than or equal to start_indices"),
    (lambda: lax.slice(X23, (0,), (2,)), TypeError, r"start_indices must have length equal"),
    (lambda: lax.slice(X23, (0, 0), (2, 3), (0, 1)), TypeError, r"strides must be positive"),
    (lambda: lax.squeeze(X23, (0,)), ValueError,
     r"cannot select an axis to squeeze out which has size not equal to one"),
    (lambda: lax.squeeze(X23, (5,)), ValueError, r"axis 5 is out of bounds"),
    (lambda: lax.expand_dims(X23, (5,)), ValueError, r"axis 5 is out of bounds"),
    (lambda: lax.rev(X23, (2,)), TypeError, r"rev dimensions must all be less than operand"),
    (lambda: lax.rev(X23, (0, 0)), TypeError, r"rev dimensions must be unique"),
    (lambda: lax.pad(X23, 0.0, ((-3, 0, 0), (0, 0, 0))), ValueError,
     r"Dimension size after padding is not at least 0"),
    (lambda: lax.pad(X23, 0, ((0, 0, 0), (0, 0, 0))), TypeError,
     r"pad operand and padding_value must be same dtype: got float32 and int32"),
    (lambda: lax.pad(X23, 0.0, ((0, 0, -1), (0, 0, 0))), ValueError,
     r"interior padding in padding_config must be nonnegative"),
    (lambda: lax.pad(X23, 0.0, ((0, 0, 0),)), ValueError, r"length of padding_config"),
    (lambda: lax.broadcast_in_dim(X23, (3, 3), (0, 1)), TypeError,
     r"operand dimension sizes must either be 1, or be equal"),
    (lambda: lax.broadcast_in_dim(X23, (2, 3, 3), (1, 1)), TypeError,
     r"broadcast_in_dim operand dimension sizes"),
    (lambda: lax.broadcast_in_dim(X23, (2, 3), (0,)), TypeError,
     r"broadcast_dimensions must have length equal to operand ndim"),
    (lambda: lax.iota(np.bool_, 3), TypeError, r"iota does not accept dtype bool"),
    (lambda: lax.iota(i32, -1), TypeError, r"nonnegative"),
    (lambda: lax.broadcasted_iota(i32, (2, 3), 2), ValueError, r"iota dimension must be"),
    (lambda: lax.reduce_sum(X23 > 0, (0,)), TypeError, r"reduce_sum does not accept dtype bool"),
    (lambda: lax.reduce_and(X23, (0,)), TypeError,
     r"logical reduction requires operand dtype bool or int, got float32"),
    (lambda: lax.reduce_sum(X23, (2,)), ValueError, r"contains out-of-bounds indices"),
    (lambda: lax.reduce_sum(X23, (-1,)), ValueError, r"contains out-of-bounds indices"),
    (lambda: lax.reduce_sum(X23, (0, 0)), ValueError, r"duplicate value in 'axes'"),
    (lambda: lax.argmax(X23, 2, i32), ValueError, r"Invalid axis 2 for operand shape \(2, 3\)"),
    (lambda: lax.argmax(X23, 0, f32), TypeError, r"index_dtype must be an integer type"),
    (lambda: lax.argmax(np.zeros((0, 3), f32), 0, i32), ValueError, r"non-empty reduced"),
    (lambda: lax.cumsum(X23 > 0, 0), TypeError, r"cumsum does not accept dtype bool"),
    (lambda: lax.cumlogsumexp(X23.astype(i32), 0), TypeError, r"cumlogsumexp does not accept"),
    (lambda: lax.cumsum(X23, 2), ValueError, r"axis 2 is out of bounds for array of shape"),
    (lambda: lax.cumsum(X23, -1), ValueError, r"XLA operations do not allow negative axes"),
    (lambda: lax.sort((X23, X23[:1])), TypeError, r"Arguments to sort must have equal shapes"),
    (lambda: lax.sort(X23, dimension=2), ValueError, r"axis 2 is out of bounds"),
    (lambda: lax.sort((X23, X23), num_keys=3), ValueError, r"num_keys=3 must be between 1"),
    (lambda: lax.sort(X23, num_keys=2), ValueError, r"must equal 1 for a single operand"),
    (lambda: lax.sort([]), TypeError, r"Sort requires at least one operand"),
    (lambda: lax.top_k(X23, 4), ValueError, r"must be no larger than size along axis"),
    (lambda: lax.top_k(X23, -1), ValueError, r"must be nonnegative"),
    (lambda: lax.top_k(X23.astype(np.complex64), 1), ValueError, r"not compatible with complex"),
    (lambda: lax.split(X23, (1, 2)), ValueError, r"Sum of sizes 3 must be equal to dimension 0"),
    (lambda: lax.tile(X23, (2,)), TypeError, r"reps length must be equal to the ndim"),
    (lambda: lax.stack([X23, X23[:1]]), ValueError, r"All input arrays must have the same shape"),
    (lambda: lax.unstack(np.float32(1)), ValueError, r"out of bounds|rank > 0"),
    (lambda: lax.reshape(X23, (2.0, 3)), TypeError, r"Shapes must be 1D sequences of concrete"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
  fn, exc, pattern = ERRORS[case]
  with pytest.raises(exc, match=pattern):
    fn()


def test_errors_also_raise_while_tracing():
  with pytest.raises(TypeError, match=r"reshape total size must be unchanged"):
    ember.jit(lambda x: lax.reshape(x, (4,)))(X23)
  with pytest.raises(TypeError, match=r"dot_general requires contracting dimensions"):
    ember.make_jaxpr(lambda x: lax.dot_general(x, x, (((1,), (0,)), ((), ()))))(X23)


def test_traced_shape_argument_is_a_concretization_error():
  with pytest.raises(TypeError, match=re.escape("static_argnums")):
    ember.jit(lambda x, n: lax.reshape(x, (n,)))(X23, 6)


def test_reshape_with_dimensions_transposes_back_through_the_permutation():
  """vjp of reshape(x, sizes, dimensions) = transpose(reshape(ct, permuted shape), inverse)
  (the rule used to ignore `dimensions`); checked against NumPy's adjoint."""
  x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  ct = np.random.default_rng(0).normal(size=(3, 8)).astype(np.float32)
  _, vjp = ember.vjp(lambda x: lax.reshape(x, (3, 8), (1, 0, 2)), x)
  want = np.transpose(ct.reshape(3, 2, 4), (1, 0, 2))
  np.testing.assert_array_equal(np.asarray(vjp(ct)[0]), want)
  np.testing.assert_array_equal(np.asarray(ember.jit(vjp)(ct)[0]), want)

"""Indexing: the lax gather/scatter/dynamic-slice primitives and NumPy indexing on ember
arrays (`x[idx]`, `x.at[idx]`, jnp.take & co.).

Values are checked against NumPy (float64) and, for XLA's gather/scatter, against a
brute-force element-by-element implementation of XLA's published semantics written
here. Where JAX deliberately differs from NumPy (out-of-bounds indices clamp on reads
and are dropped on writes), the expected values were checked with JAX 0.12.
"""
import itertools

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors, lax

I32 = np.int32


def both(f):
  """f eagerly and under ember.jit: the two must agree."""
  return (f, ember.jit(f))


def arr(shape, dtype=np.float32, start=0):
  return np.arange(start, start + int(np.prod(shape)), dtype=np.float64).reshape(shape).astype(dtype)


def check(got, want, dtype=None):
  got_np = np.asarray(got)
  assert got_np.shape == np.shape(want), (got_np.shape, np.shape(want))
  if dtype is not None:
    assert got.dtype == dtype
  np.testing.assert_array_equal(got_np.astype(np.float64), np.asarray(want, np.float64))


# ======================================================================================
# x[idx] against NumPy
# ======================================================================================

A = np.array
IDX_CASES = [
    # (operand shape, index)
    ((5,), 0), ((5,), -1), ((5,), 4), ((5,), np.int32(-2)), ((5,), slice(1, 4)),
    ((5,), slice(None, None, 2)), ((5,), slice(None, None, -1)), ((5,), slice(4, 0, -2)),
    ((5,), slice(-2, None)), ((5,), slice(3, 1)), ((5,), slice(10, 20)), ((5,), ()),
    ((5,), None), ((5,), Ellipsis), ((5,), (None, Ellipsis, None)),
    ((2, 3, 4), 1), ((2, 3, 4), (1, 2)), ((2, 3, 4), (-1, slice(1, 3))),
    ((2, 3, 4), (slice(None), slice(None, None, 2))), ((2, 3, 4), (Ellipsis, 1)),
    ((2, 3, 4), (None, Ellipsis, 1)), ((2, 3, 4), (0, None, 1, None, 2)),
    ((2, 3, 4), (slice(None), slice(3, 0, -2))), ((2, 3, 4), (Ellipsis, slice(None, None, -3))),
    # integer arrays
    ((5,), A([0, 4, -1, 2])), ((5,), A([[0, 1], [3, -5]])), ((5,), A([], I32)),
    ((2, 3, 4), A([1, 0])), ((2, 3, 4), (A([0, 1]), slice(None), A([1, 2]))),
    ((2, 3, 4), (A([[0], [1]]), A([0, 1, 2]))), ((2, 3, 4), (slice(None), A([0, 1]), None)),
    ((2, 3, 4), (1, A([0, 2]))), ((2, 3, 4), (slice(None), A([2, 0]), A([[1], [3]]))),
    ((2, 3, 4), (A([1, 0]), None, A([2, 2]))), ((2, 3, 4), (Ellipsis, A([[0, 1, 2]]))),
    ((2, 3, 4), (A([0, 1]), slice(None, None, -1), A([0, 3]))),
    ((2, 3, 4), (A([0, 1, 1]), slice(None, None, 2))), ((2, 3, 4), (slice(1, None), A([0, 2]))),
    ((2, 3, 4, 2), (A([1, 0]), 1, slice(None), A([0, 1]))),
    ((2, 3, 4, 2), (slice(None), A([[0, 2]]), slice(1, 3), A([[1], [0]]))),
    # boolean masks (concrete)
    ((5,), A([True, False, True, True, False])), ((2, 3), A([[True, False, True], [False, False, True]])),
    ((2, 3, 4), (slice(None), A([False, True, True]))), ((2, 3, 4), (A([True, False]), Ellipsis, 0)),
    ((2, 3), True), ((2, 3), False), ((2, 3), (0, True)), ((5,), A([False] * 5)),
    # lists inside a tuple are arrays
    ((2, 3, 4), ([0, 1], slice(None), [1, 2])), ((5,), ([True, False, True, False, True],)),
    # 0-d operands and empty arrays
    ((), ()), ((), None), ((), Ellipsis), ((), (None, None)), ((), True),
    ((0,), slice(None)), ((0, 3), (slice(None), 1)), ((3, 0), A([0, 2])), ((0,), A([], I32)),
]


@pytest.mark.parametrize("shape,idx", IDX_CASES, ids=[f"{s}-{i!r}" for s, i in IDX_CASES])
def test_getitem_matches_numpy(shape, idx):
  xn = arr(shape)
  want = xn[idx]
  for f in both(lambda x: x[idx]):
    check(f(jnp.asarray(xn)), want, np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float16, np.uint8,
                                   ember.dtypes.bfloat16])
def test_getitem_dtypes_and_weak_types(dtype):
  xn = (arr((3, 4)) % 3).astype(dtype)
  x = jnp.asarray(xn)
  for f in both(lambda x: (x[1], x[A([2, 0])], x[:, ::-2], x[x.shape[0] - 1, A([1, 1])])):
    outs = f(x)
    for o, w in zip(outs, (xn[1], xn[A([2, 0])], xn[:, ::-2], xn[2, A([1, 1])])):
      check(o, w, np.dtype(dtype))
      assert not o.weak_type
  # weak types survive indexing (checked with JAX: jnp.array(3.0)[()] stays weak)
  w = ember.jit(lambda s: (s[()], s[None], s[None][A([0, 0])]))(2.5)
  assert all(o.weak_type and o.dtype == np.float32 for o in w)


# --- traced (dynamic) indices --------------------------------------------------------

DYN_CASES = [
    # (operand shape, index builder from the traced index args, numpy args)
    ((5,), lambda i: i, (2,)), ((5,), lambda i: i, (-1,)),
    ((2, 3, 4), lambda i: i, (1,)), ((2, 3, 4), lambda i, j: (i, slice(None), j), (1, -2)),
    ((2, 3, 4), lambda i: (slice(None), i, None), (2,)),
    ((2, 3, 4), lambda i: (i, slice(None, None, -1)), (0,)),
    ((2, 3, 4), lambda i: i, (A([1, 0, 1]),)), ((2, 3, 4), lambda i, j: (i, 0, j), (A([1, 0]), A([[3], [-1]]))),
    ((2, 3, 4), lambda i: (Ellipsis, i), (A([[0, 3], [2, 1]]),)),
    ((2, 3, 4), lambda i: (slice(None), i, slice(None, None, 2)), (A([2, 2, 0]),)),
]


@pytest.mark.parametrize("shape,build,args", DYN_CASES)
def test_traced_indices_under_jit(shape, build, args):
  xn = arr(shape)
  want = xn[build(*args)]
  f = ember.jit(lambda x, *ix: x[build(*ix)])
  check(f(jnp.asarray(xn), *args), want, np.float32)
  check(f(jnp.asarray(xn), *[jnp.asarray(a) for a in args]), want)


def test_jaxpr_of_basic_and_dynamic_indexing():
  x = jnp.asarray(arr((2, 3, 4)))
  jaxpr = str(ember.make_jaxpr(lambda x: x[0])(x))
  assert "slice[" in jaxpr and "squeeze[dimensions=(0,)]" in jaxpr and "gather" not in jaxpr
  assert "rev[dimensions=(0,)]" in str(ember.make_jaxpr(lambda x: x[::-1])(x))
  j = str(ember.make_jaxpr(lambda x, i: x[i])(x, 1))
  assert "dynamic_slice[slice_sizes=(1, 3, 4)]" in j and "select_n" in j
  # the printed gather of x[i, :, j], checked against JAX 0.12's make_jaxpr
  j = str(ember.make_jaxpr(lambda x: x[A([0, 1]), :, A([1, 2])])(x))
  assert ("gather[\n      dimension_numbers=GatherDimensionNumbers(offset_dims=(1,), "
          "collapsed_slice_dims=(0, 2), start_index_map=(0, 2), operand_batching_dims=(), "
          "start_indices_batching_dims=())\n      fill_value=None\n      "
          "indices_are_sorted=False\n      mode=GatherScatterMode.PROMISE_IN_BOUNDS\n      "
          "slice_sizes=(1, 3, 1)\n      unique_indices=False\n    ] c l") in j


# --- out of bounds ---------------------------------------------------------------------

def test_out_of_bounds_reads_clamp():
  xn = arr((4,))
  x = jnp.asarray(xn)
  for f in both(lambda x: (x[10], x[-10], x[A([10, -10, 2])], x[A([[5]])])):
    outs = f(x)
    check(outs[0], 3.0), check(outs[1], 0.0)
    check(outs[2], [3.0, 0.0, 2.0]), check(outs[3], [[3.0]])
  check(ember.jit(lambda x, i: x[i])(x, 7), 3.0)
  x2 = jnp.asarray(arr((3, 4)))
  check(x2[A([10, -10])], arr((3, 4))[[2, 0]])
  # .at[].get modes (values checked with JAX)
  check(x.at[20].get(), 3.0)
  assert np.isnan(np.asarray(x.at[20].get(mode="fill")))
  check(x.at[20].get(mode="fill", fill_value=-1), -1.0)
  check(x.at[A([1, 9, -1])].get(mode="fill", fill_value=-1), [1.0, -1.0, 3.0])
  check(x.at[A([1, 9, -1])].get(mode="clip"), [1.0, 3.0, 3.0])
  check(jnp.asarray(arr((3, 4))).at[5].get(mode="fill", fill_value=-1), [-1.0] * 4)
  check(x.at[-1].get(wrap_negative_indices=False, mode="fill", fill_value=7), 7.0)


def test_out_of_bounds_updates_are_dropped():
  x = jnp.asarray(arr((4,)))
  for f in both(lambda x: (x.at[10].set(9.0), x.at[A([1, 7, -9])].add(100.0),
                           x.at[20].add(10.0, mode="clip"), x.at[-1].set(99.0),
                           x.at[-1].set(99.0, wrap_negative_indices=False, mode="drop"))):
    o = f(x)
    check(o[0], [0, 1, 2, 3]), check(o[1], [0, 101, 2, 3]), check(o[2], [0, 1, 2, 13])
    check(o[3], [0, 1, 2, 99]), check(o[4], [0, 1, 2, 3])


# --- .at[] updates --------------------------------------------------------------------

AT_CASES = [
    ((6,), A([1, 1, 4, 1])), ((6,), 2), ((6,), slice(1, 5, 2)), ((6,), slice(None, None, -2)),
    ((3, 4), (A([0, 2, 0]), A([1, 1, 1]))), ((3, 4), (slice(None), A([3, 0, 3]))),
    ((2, 3, 4), (A([[1], [0]]), None, A([0, 0, 2]))), ((2, 3, 4), (Ellipsis, 1)),
    ((2, 3, 4), A([True, False])), ((3, 4), (A([1, 1]), slice(None, None, -1))),
]
UFUNC_AT = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
            "min": np.minimum, "max": np.maximum}


@pytest.mark.parametrize("shape,idx", AT_CASES)
@pytest.mark.parametrize("op", list(UFUNC_AT))
def test_at_accumulating_ops_match_ufunc_at(shape, idx, op):
  xn = arr(shape) - 5.0
  yshape = xn[idx].shape
  yn = (np.arange(np.prod(yshape), dtype=np.float64).reshape(yshape) % 5) - 1.5
  want = xn.copy()
  UFUNC_AT[op].at(want, idx, yn)   # np.<op>.at accumulates repeated indices, as .at[] does
  for f in both(lambda x, y: getattr(x.at[idx], op)(y)):
    check(f(jnp.asarray(xn), jnp.asarray(yn.astype(np.float32))), want, np.float32)


@pytest.mark.parametrize("shape,idx", AT_CASES)
def test_at_set_and_get(shape, idx):
  xn = arr(shape)
  yshape = xn[idx].shape
  want = xn.copy()
  if isinstance(idx, np.ndarray) and idx.dtype != bool and len(set(idx.tolist())) < idx.size:
    idx = np.unique(idx)   # set with duplicates has no defined winner
    yshape = xn[idx].shape
  yn = -1.0 - np.arange(np.prod(yshape)).reshape(yshape)
  want[idx] = yn
  for f in both(lambda x, y: (x.at[idx].set(y), x.at[idx].get(), x.at[idx].set(7.0))):
    s, g, s7 = f(jnp.asarray(xn), jnp.asarray(yn.astype(np.float32)))
    check(s, want, np.float32), check(g, xn[idx])
    w7 = xn.copy()
    w7[idx] = 7.0
    check(s7, w7)


def test_at_divide_power_apply():
  xn = arr((5,)) + 1.0
  x = jnp.asarray(xn)
  idx = A([0, 3, 3])
  for f in both(lambda x: (x.at[idx].divide(2.0), x.at[idx].power(2.0),
                           x.at[idx].apply(lambda v: v * 3.0))):
    d, p, a = f(x)
    wd, wp, wa = xn.copy(), xn.copy(), xn.copy()
    np.divide.at(wd, idx, 2.0), np.power.at(wp, idx, 2.0), np.multiply.at(wa, idx, 3.0)
    np.testing.assert_allclose(np.asarray(d), wd, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(p), wp, rtol=1e-6)
    check(a, wa)


def test_at_dtype_handling():
  xi = jnp.asarray(np.arange(4, dtype=np.int32))
  # Python int updates keep the integer dtype; float updates warn (as JAX) and truncate
  check(xi.at[1].add(5), [0, 6, 2, 3], np.int32)
  with pytest.warns(FutureWarning, match="scatter inputs have incompatible types"):
    out = xi.at[1].set(2.7)
  check(out, [0, 2, 2, 3], np.int32)
  xb = jnp.asarray(np.zeros(3, bool))
  check(xb.at[A([0, 2])].set(True), [1, 0, 1], np.bool_)
  w = ember.jit(lambda: jnp.asarray(np.zeros(3, np.float32)).at[0].set(1.0))()
  assert w.dtype == np.float32 and not w.weak_type
  # a weakly typed operand stays weak
  assert ember.jit(lambda s: s.at[()].set(3.0))(1.0).weak_type


def test_at_jaxpr_matches_jax():
  x = jnp.asarray(arr((2, 3, 4)))
  j = str(ember.make_jaxpr(lambda x: x.at[A([1, 0])].add(3.0))(x))
  assert ("scatter-add[\n      dimension_numbers=ScatterDimensionNumbers(update_window_dims="
          "(1, 2), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), "
          "operand_batching_dims=(), scatter_indices_batching_dims=())\n      "
          "indices_are_sorted=False\n      mode=GatherScatterMode.FILL_OR_DROP\n      "
          "unique_indices=False\n      update_consts=()\n      update_jaxpr={ lambda ; "
          "i:f32[] j:f32[]. let k:f32[] = add i j in (k,) }\n    ] b f g") in j
  j = str(ember.make_jaxpr(lambda x: x.at[1].set(3.0))(x))
  assert "indices_are_sorted=True" in j and "unique_indices=True" in j
  assert "update_jaxpr=None" in j and "b:i32[1] = broadcast_in_dim 1:i32[]" in j


# --- errors ----------------------------------------------------------------------------

def test_boolean_mask_under_jit_raises():
  x = jnp.asarray(arr((4,)))
  f = ember.jit(lambda x, m: x[m])
  with pytest.raises(errors.NonConcreteBooleanIndexError) as e:
    f(x, jnp.asarray(A([True, False, True, False])))
  msg = str(e.value)
  assert "bool[4]" in msg and "jnp.where" in msg and "size=" in msg
  assert "argument m" in msg
  with pytest.raises(errors.NonConcreteBooleanIndexError):
    ember.jit(lambda x: x[x > 1.0])(x)
  with pytest.raises(errors.NonConcreteBooleanIndexError):
    ember.jit(lambda x: x.at[x > 1.0].set(0.0))(x)


def test_index_errors():
  x = jnp.asarray(arr((2, 3, 4)))
  with pytest.raises(IndexError, match=r"Too many indices: array is 3-dimensional \(shape "
                     r"\(2, 3, 4\)\), but 4 were indexed"):
    x[0, 0, 0, 0]
  with pytest.raises(IndexError, match="Too many indices"):
    jnp.asarray(np.float32(1.0))[0]
  with pytest.raises(TypeError, match="Indexer must have integer or boolean type, got "
                     "indexer with type float64"):
    x[1.0]
  with pytest.raises(TypeError, match="got indexer with type float32"):
    x[jnp.asarray(A([0.0, 1.0], np.float32))]
  with pytest.raises(TypeError, match="non-tuple sequence"):
    x[[0, 1]]
  with pytest.raises(IndexError, match="single ellipsis"):
    x[..., ...]
  with pytest.raises(IndexError, match="boolean index did not match"):
    x[A([True, False, True])]
  with pytest.raises(TypeError, match="string indexing"):
    x["a"]
  with pytest.raises(IndexError, match="out of bounds for axis 0 with size 0"):
    jnp.asarray(np.zeros((0, 2), np.float32))[0]
  with pytest.raises(IndexError, match="static start/stop/step") as e:
    ember.jit(lambda x, i: x[i:i + 2])(x, 1)
  assert "dynamic_slice" in str(e.value)


# ======================================================================================
# lax: dynamic_slice & co.
# ======================================================================================

def test_dynamic_slice_clamps_like_xla():
  xn = arr((3, 4))
  x = jnp.asarray(xn)
  cases = [((1, 1), (2, 3), xn[1:3, 1:4]), ((1, 1), (2, 4), xn[1:3, 0:4]),
           ((5, -1), (1, 2), xn[2:3, 2:4]), ((-2, 0), (2, 2), xn[1:3, 0:2]),
           ((0, 0), (0, 4), xn[0:0])]
  for starts, sizes, want in cases:
    for f in both(lambda x, *s: lax.dynamic_slice(x, s, sizes)):
      check(f(x, *[I32(s) for s in starts]), want, np.float32)
    check(lax.dynamic_slice(x, starts, sizes), want)
  # documented examples of jax.lax.dynamic_update_slice
  z = jnp.asarray(np.zeros(6, np.float32))
  for f in both(lambda z, s: lax.dynamic_update_slice(z, jnp.asarray(np.ones(3, np.float32)), (s,))):
    check(f(z, 2), [0, 0, 1, 1, 1, 0]), check(f(z, 3), [0, 0, 0, 1, 1, 1])
    check(f(z, 5), [0, 0, 0, 1, 1, 1]), check(f(z, -3), [0, 0, 0, 1, 1, 1])
  z2 = jnp.asarray(np.zeros((4, 4), np.float32))
  want = np.zeros((4, 4))
  want[1:3, 2:4] = 1
  check(lax.dynamic_update_slice(z2, jnp.asarray(np.ones((2, 2), np.float32)), (1, 2)), want)


def test_dynamic_in_dim_wrappers():
  xn = arr((3, 4))
  x = jnp.asarray(xn)
  for f in both(lambda x, i: (lax.dynamic_slice_in_dim(x, i, 2, axis=1),
                              lax.dynamic_index_in_dim(x, i, 1),
                              lax.dynamic_index_in_dim(x, i, 0, keepdims=False),
                              lax.dynamic_update_slice_in_dim(x, jnp.asarray(np.ones((3, 1), np.float32)), i, 1),
                              lax.dynamic_update_index_in_dim(x, jnp.asarray(np.zeros(4, np.float32)), i, 0))):
    a, b, c, d, e = f(x, 1)
    check(a, xn[:, 1:3]), check(b, xn[:, 1:2]), check(c, xn[1])
    wd = xn.copy()
    wd[:, 1] = 1
    we = xn.copy()
    we[1] = 0
    check(d, wd), check(e, we)
  assert "name=dynamic_index_in_dim" in str(
      ember.make_jaxpr(lambda x: lax.dynamic_index_in_dim(x, 1, 1))(x))


def test_dynamic_slice_errors():
  x = jnp.asarray(arr((3, 4)))
  with pytest.raises(ValueError, match="Length of slice indices must match"):
    lax.dynamic_slice(x, (0,), (1, 1))
  with pytest.raises(TypeError, match="slice_sizes"):
    lax.dynamic_slice(x, (0, 0), (4, 1))
  with pytest.raises(TypeError, match="must be integers of the same type"):
    lax.dynamic_slice(x, (I32(0), np.int16(0)), (1, 1))
  with pytest.raises(TypeError, match="same rank"):
    lax.dynamic_update_slice(x, jnp.asarray(np.ones(2, np.float32)), (0, 0))
  with pytest.raises(TypeError, match="same dtypes"):
    lax.dynamic_update_slice(x, jnp.asarray(np.ones((1, 1), np.int32)), (0, 0))
  with pytest.raises(errors.TracerIntegerConversionError):
    ember.jit(lambda x, n: lax.dynamic_slice(x, (0, 0), (n, 1)))(x, 1)


# ======================================================================================
# lax.gather / lax.scatter against a brute-force reading of XLA's semantics
# ======================================================================================

def ref_gather(operand, indices, dn, slice_sizes, mode, fill):
  """XLA Gather, one output element at a time."""
  batch_rank = indices.ndim - 1
  out_rank = len(dn.offset_dims) + batch_rank
  dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
  window_dims = [d for d in range(operand.ndim) if d not in dropped]
  bshape = indices.shape[:-1]
  out_shape, b_it, w_it = [], iter(bshape), iter(window_dims)
  for i in range(out_rank):
    out_shape.append(slice_sizes[next(w_it)] if i in dn.offset_dims else next(b_it))
  out = np.zeros(out_shape, np.float64)
  for oi in itertools.product(*map(range, out_shape)):
    b = tuple(v for i, v in enumerate(oi) if i not in dn.offset_dims)
    w = [v for i, v in enumerate(oi) if i in dn.offset_dims]
    vec = indices[b]
    start = [0] * operand.ndim
    for k, d in enumerate(dn.start_index_map):
      start[d] = int(vec[k])
    for od, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims):
      start[od] = b[idim]
    oob = any(not 0 <= start[d] <= operand.shape[d] - slice_sizes[d] for d in dn.start_index_map)
    if oob and mode == "fill":
      out[oi] = fill
      continue
    start = [min(max(s, 0), operand.shape[d] - slice_sizes[d]) for d, s in enumerate(start)]
    full = [0] * operand.ndim
    for d, v in zip(window_dims, w):
      full[d] = v
    out[oi] = operand[tuple(s + f for s, f in zip(start, full))]
  return out


def ref_scatter(operand, indices, updates, dn, combine, mode):
  """XLA Scatter, one update element at a time (whole windows out of bounds dropped)."""
  out = operand.astype(np.float64).copy()
  inserted = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
  window_dims = [d for d in range(operand.ndim) if d not in inserted]
  wsize = [1] * operand.ndim
  for d, ud in zip(window_dims, dn.update_window_dims):
    wsize[d] = updates.shape[ud]
  for ui in itertools.product(*map(range, updates.shape)):
    b = tuple(v for i, v in enumerate(ui) if i not in dn.update_window_dims)
    w = [ui[i] for i in dn.update_window_dims]
    vec = indices[b]
    start = [0] * operand.ndim
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
      start[d] = int(vec[k])
    for od, idim in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
      start[od] = b[idim]
    if mode == "clip":
      start = [min(max(s, 0), operand.shape[d] - wsize[d]) for d, s in enumerate(start)]
    elif any(not 0 <= start[d] <= operand.shape[d] - wsize[d] for d in range(operand.ndim)):
      continue
    full = [0] * operand.ndim
    for d, v in zip(window_dims, w):
      full[d] = v
    at = tuple(s + f for s, f in zip(start, full))
    out[at] = combine(out[at], updates[ui])
  return out


GD = lax.GatherDimensionNumbers
SD = lax.ScatterDimensionNumbers
GATHER_CASES = [
    # operand shape, indices, dnums, slice_sizes
    ((5,), A([[0], [4], [7], [-2]]), GD((), (0,), (0,)), (1,)),
    ((4, 5), A([[0, 1], [3, 4], [2, -1], [9, 0]]), GD((1,), (0,), (0, 1)), (1, 3)),
    ((2, 3, 4), A([[[1], [0]], [[1], [1]]]), GD((2, 3), (0,), (0,)), (1, 2, 4)),
    ((3, 4), A([[2], [0]]), GD((0,), (1,), (1,)), (3, 1)),
    ((3, 4), A([[1, 2]]), GD((1, 2), (), (1, 0)), (2, 2)),
    # batching dims (take_along_axis style)
    ((3, 4), A([[[1], [3]], [[0], [0]], [[2], [5]]]), GD((), (1,), (1,), (0,), (0,)), (1, 1)),
    ((2, 3, 4), A([[[0], [2]], [[1], [1]]]), GD((2,), (1,), (1,), (0,), (0,)), (1, 1, 4)),
    ((3, 5), np.zeros((0, 1), I32), GD((1,), (0,), (0,)), (1, 5)),
]


@pytest.mark.parametrize("shape,idx,dn,ss", GATHER_CASES)
@pytest.mark.parametrize("mode", ["clip", "fill", "promise_in_bounds"])
def test_gather_matches_xla_semantics(shape, idx, dn, ss, mode):
  xn = arr(shape, start=1)
  want = ref_gather(xn, idx, dn, ss, "fill" if mode == "fill" else "clip", -7.0)
  fill = -7.0 if mode == "fill" else None
  for f in both(lambda x, i: lax.gather(x, i, dn, ss, mode=mode, fill_value=fill)):
    check(f(jnp.asarray(xn), jnp.asarray(idx.astype(I32))), want, np.float32)


def test_gather_default_fill_values_and_jaxpr():
  dn = GD((), (0,), (0,))
  idx = A([[0], [9]], I32)
  assert np.isnan(np.asarray(lax.gather(jnp.asarray(arr((3,))), idx, dn, (1,), mode="fill"))[1])
  check(lax.gather(jnp.asarray(np.arange(3, dtype=np.int32)), idx, dn, (1,), mode="fill"),
        [0, np.iinfo(np.int32).min])
  check(lax.gather(jnp.asarray(np.arange(3, dtype=np.uint8)), idx, dn, (1,), mode="fill"),
        [0, 255])
  check(lax.gather(jnp.asarray(np.zeros(3, bool)), idx, dn, (1,), mode="fill"), [0, 1])
  j = str(ember.make_jaxpr(lambda x: lax.gather(x, idx, dn, (1,), mode="fill"))(jnp.asarray(arr((3,)))))
  assert "fill_value=nan" in j and "mode=GatherScatterMode.FILL_OR_DROP" in j


def test_gather_errors():
  x, idx = jnp.asarray(arr((3, 4))), A([[0]], I32)
  with pytest.raises(ValueError, match="indices must have an integer type"):
    lax.gather(x, A([[0.0]], np.float32), GD((1,), (0,), (0,)), (1, 4))
  with pytest.raises(TypeError, match="can only collapse slice dims with bound 1"):
    lax.gather(x, idx, GD((1,), (0,), (0,)), (2, 4))
  with pytest.raises(TypeError, match="one slice size for every input dimension"):
    lax.gather(x, idx, GD((1,), (0,), (0,)), (1,))
  with pytest.raises(TypeError, match="start_index_map"):
    lax.gather(x, idx, GD((1,), (0,), (0, 1)), (1, 4))
  with pytest.raises(ValueError, match='Unknown gather mode "bogus"'):
    lax.gather(x, idx, GD((1,), (0,), (0,)), (1, 4), mode="bogus")


SCATTER_CASES = [
    ((6,), A([[1], [1], [4], [9], [-1]]), SD((), (0,), (0,)), (5,)),
    ((4, 5), A([[0, 1], [3, 3], [0, 1], [2, -1]]), SD((1,), (0,), (0, 1)), (4, 2)),
    ((4, 5), A([[3], [0], [3]]), SD((1,), (0,), (0,)), (3, 5)),
    ((2, 3, 4), A([[1], [0]]), SD((1, 2), (0,), (0,)), (2, 3, 4)),
    ((3, 4), A([[[1], [3]], [[0], [0]], [[2], [5]]]), SD((), (1,), (1,), (0,), (0,)), (3, 2)),
]
COMBINE = {"scatter": lambda a, b: b, "scatter_add": np.add, "scatter_sub": np.subtract,
           "scatter_mul": np.multiply, "scatter_min": np.minimum, "scatter_max": np.maximum}


def _has_duplicate_targets(idx):
  return len(np.unique(idx.reshape(idx.shape[0], -1), axis=0)) < idx.shape[0]


# plain scatter with duplicate targets has no defined winner: only the other ops get those
SCATTER_PARAMS = [(*case, op) for case in SCATTER_CASES for op in COMBINE
                  if not (op == "scatter" and _has_duplicate_targets(case[1]))]


@pytest.mark.parametrize("shape,idx,dn,ushape,op", SCATTER_PARAMS)
@pytest.mark.parametrize("mode", ["fill", "clip"])
def test_scatter_matches_xla_semantics(shape, idx, dn, ushape, op, mode):
  xn = arr(shape, start=1) % 7
  un = (np.arange(np.prod(ushape)).reshape(ushape) % 5) - 2.0
  want = ref_scatter(xn, idx, un, dn, COMBINE[op], mode)
  for f in both(lambda x, i, u: getattr(lax, op)(x, i, u, dn, mode=mode)):
    check(f(jnp.asarray(xn), jnp.asarray(idx.astype(I32)), jnp.asarray(un.astype(np.float32))),
          want, np.float32)


def test_scatter_apply_and_errors():
  x = jnp.asarray(np.zeros(5, np.float32))
  dn = SD((), (0,), (0,))
  idx = A([[1], [1], [3], [7]], I32)
  for f in both(lambda x: lax.scatter_apply(x, idx, lambda v: v + 2.0, dn, update_shape=(4,))):
    check(f(x), [0, 4, 0, 2, 0])
  with pytest.raises(TypeError, match="Updates tensor must be of rank 1"):
    lax.scatter_add(x, idx, jnp.asarray(np.float32(1.0)), dn)
  with pytest.raises(TypeError, match="same dtypes"):
    lax.scatter_add(x, idx, jnp.asarray(np.ones(4, np.int32)), dn)
  with pytest.raises(TypeError, match="Bounds of the scatter dimensions"):
    lax.scatter(x, idx, jnp.asarray(np.ones(3, np.float32)), dn)


# ======================================================================================
# jnp index functions
# ======================================================================================

def test_take():
  xn = arr((3, 4))
  x = jnp.asarray(xn)
  for f in both(lambda x: (jnp.take(x, A([0, 5, -1]), axis=1), jnp.take(x, A([0, 15, -1])),
                           jnp.take(x, A([0, 15, -1]), mode="clip"),
                           jnp.take(x, A([0, 15, -1]), mode="wrap"),
                           jnp.take(x, A([0, 15, -1]), fill_value=-2),
                           jnp.take(x, A([[2, 0]]), axis=0), jnp.take(x, A([], I32), axis=1))):
    a, b, c, d, e, g, h = f(x)
    # values checked with JAX: out-of-bounds read NaN by default
    np.testing.assert_array_equal(np.asarray(a), [[0, np.nan, 3], [4, np.nan, 7], [8, np.nan, 11]])
    np.testing.assert_array_equal(np.asarray(b), [0, np.nan, 11])
    check(c, [0, 11, 0]), check(d, [0, 3, 11]), check(e, [0, -2, 11])
    check(g, np.take(xn, [[2, 0]], axis=0)), check(h, np.zeros((3, 0)))
  with pytest.raises(ValueError, match="Invalid mode"):
    jnp.take(x, A([0]), mode="bogus")
  with pytest.raises(TypeError, match="integer type"):
    jnp.take(x, A([0.0]))


def test_take_along_axis_and_put_along_axis():
  rng = np.random.default_rng(0)
  xn = rng.normal(size=(3, 4, 2))
  x = jnp.asarray(xn.astype(np.float32))
  for axis, ishape in [(1, (3, 2, 2)), (0, (1, 4, 2)), (2, (3, 1, 5)), (-1, (3, 4, 1))]:
    idx = rng.integers(0, xn.shape[axis], size=ishape).astype(I32)
    for f in both(lambda x, i: jnp.take_along_axis(x, i, axis=axis)):
      np.testing.assert_allclose(np.asarray(f(x, jnp.asarray(idx))),
                                 np.take_along_axis(xn, idx, axis=axis), rtol=1e-6)
  m = jnp.asarray(arr((3, 4)))
  out = jnp.take_along_axis(m, A([[0], [3], [9]]), axis=1)
  np.testing.assert_array_equal(np.asarray(out), [[0.0], [7.0], [np.nan]])   # JAX's fill
  check(jnp.take_along_axis(m, A([5, -1]), axis=None), [5, 11])
  want = arr((3, 4))
  np.put_along_axis(want, A([[0], [3], [1]]), 99.0, axis=1)
  for f in both(lambda m: jnp.put_along_axis(m, A([[0], [3], [1]]), 99.0, axis=1, inplace=False)):
    check(f(m), want)
  with pytest.raises(ValueError, match="inplace=False"):
    jnp.put_along_axis(m, A([[0]]), 1.0, axis=1)
  with pytest.raises(ValueError, match="same number of dimensions"):
    jnp.take_along_axis(m, A([0]), axis=1)


def test_nonzero_family():
  xn = arr((3, 4)) % 5 - 2 * (arr((3, 4)) > 8)
  x = jnp.asarray(xn)
  for got, want in zip(jnp.nonzero(x), np.nonzero(xn)):
    check(got, want, np.int32)
  check(jnp.flatnonzero(x), np.flatnonzero(xn), np.int32)
  check(jnp.argwhere(x), np.argwhere(xn), np.int32)
  check(jnp.argwhere(jnp.asarray(np.float32(2.0))), np.argwhere(np.float64(2.0)))
  yn = arr((3, 4))
  mask = yn > 5
  for f in both(lambda x: (jnp.nonzero(x > 5.0, size=8, fill_value=-1),
                           jnp.nonzero(x > 5.0, size=2), jnp.flatnonzero(x > 5.0, size=7),
                           jnp.argwhere(x > 9.0, size=3))):
    (r, c), (r2, c2), flat, aw = f(jnp.asarray(yn))
    nr, nc = np.nonzero(mask)
    pad = lambda v, n, fv: np.concatenate([v, np.full(n - len(v), fv)])[:n]
    check(r, pad(nr, 8, -1), np.int32), check(c, pad(nc, 8, -1))
    check(r2, nr[:2]), check(c2, nc[:2])
    check(flat, pad(np.flatnonzero(mask), 7, 0))
    check(aw, [[2, 2], [2, 3], [0, 0]])   # JAX pads with index 0
  check(jnp.nonzero(jnp.asarray(np.zeros((2, 0), np.float32)), size=2)[0], [0, 0])
  with pytest.raises(ValueError, match="0d arrays"):
    jnp.nonzero(jnp.asarray(np.float32(1.0)))
  with pytest.raises(errors.ConcretizationTypeError, match="size argument of jnp.nonzero"):
    ember.jit(lambda x: jnp.nonzero(x))(x)


def test_compress_extract_place_put():
  xn = arr((3, 4))
  x = jnp.asarray(xn)
  cond = A([True, False, True])
  check(jnp.compress(cond, x, axis=0), np.compress(cond, xn, axis=0))
  check(jnp.compress(cond, x), np.compress(cond, xn))
  check(jnp.compress(A([0, 1]), x, axis=1), np.compress([0, 1], xn, axis=1))
  check(jnp.extract(xn > 8, x), np.extract(xn > 8, xn))
  for f in both(lambda x: (jnp.compress(cond, x, axis=1, size=3, fill_value=-1),
                           jnp.extract(x > 8.0, x, size=4, fill_value=0.5))):
    a, b = f(x)
    check(a, [[0, 2, -1], [4, 6, -1], [8, 10, -1]]), check(b, [9, 10, 11, 0.5])
  with pytest.raises(ValueError, match="out of bounds"):
    jnp.compress(A([True, False, False, True]), x, axis=0)
  vals = A([10.0, 20.0])
  want = arr((6,), np.float64)
  np.place(want, np.arange(6) % 2 == 0, vals)
  for f in both(lambda v: jnp.place(v, A([True, False] * 3), vals, inplace=False)):
    check(f(jnp.asarray(arr((6,)))), want)
  want = xn.copy()
  np.put(want, [0, 5, 11], [-1.0, -2.0])
  for f in both(lambda x: jnp.put(x, A([0, 5, 11]), A([-1.0, -2.0]), inplace=False)):
    check(f(x), want)
  check(jnp.put(x, A([20]), 5.0, mode="clip", inplace=False)[2, 3], 5.0)
  check(jnp.put(x, A([-1, 13]), 5.0, mode="wrap", inplace=False)[np.array([2, 0]), np.array([3, 1])],
        [5.0, 5.0])
  with pytest.raises(ValueError, match="inplace=False"):
    jnp.place(x, xn > 1, 0.0)


def test_choose_and_select():
  choices = [arr((4,)), arr((4,)) * 10, arr((4,)) * 100]
  a = A([0, 1, 2, 1])
  check(jnp.choose(a, choices), np.choose(a, choices))
  for f in both(lambda a: (jnp.choose(a, choices[:2], mode="clip"),
                           jnp.choose(a, choices[:2], mode="wrap"))):
    c, w = f(jnp.asarray(A([0, 5, -1, 1])))
    check(c, np.choose([0, 5, -1, 1], choices[:2], mode="clip"))
    check(w, np.choose([0, 5, -1, 1], choices[:2], mode="wrap"))
  with pytest.raises(ValueError, match="invalid entry in choice array"):
    jnp.choose(A([0, 3]), choices[:2])
  with pytest.raises(errors.ConcretizationTypeError, match="mode='wrap'"):
    ember.jit(lambda a: jnp.choose(a, choices))(a)
  xn = arr((3, 4))
  for f in both(lambda x: jnp.select([x > 8.0, x < 2.0], [x, -x], default=7.0)):
    check(f(jnp.asarray(xn)), np.select([xn > 8, xn < 2], [xn, -xn], default=7.0))
  check(jnp.select([xn > 5], [1]), np.select([xn > 5], [1]))
  with pytest.raises(ValueError, match="condlist must have length equal to choicelist"):
    jnp.select([xn > 1], [xn, xn])
  with pytest.raises(ValueError, match="non-empty"):
    jnp.select([], [])


def test_index_generators():
  for got, want in zip(jnp.diag_indices(3, 2), np.diag_indices(3, 2)):
    check(got, want, np.int32)
  check(jnp.diag_indices_from(jnp.asarray(np.zeros((2, 2, 2))))[2], [0, 1])
  for k, m in [(0, None), (1, None), (-1, 4), (2, 2)]:
    for fn in ("tril_indices", "triu_indices"):
      for got, want in zip(getattr(jnp, fn)(3, k=k, m=m), getattr(np, fn)(3, k=k, m=m)):
        check(got, want, np.int32)
  x = jnp.asarray(arr((3, 4)))
  for got, want in zip(jnp.triu_indices_from(x, k=1), np.triu_indices_from(arr((3, 4)), k=1)):
    check(got, want)
  check(jnp.indices((2, 3)), np.indices((2, 3)), np.int32)
  for got, want in zip(jnp.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
    check(got, want)
  assert jnp.indices((2, 3), dtype=np.int16).dtype == np.int16
  for got, want in zip(jnp.ix_(A([0, 1]), A([2, 3, 1])), np.ix_([0, 1], [2, 3, 1])):
    check(got, want)
  xn = arr((3, 4))
  check(x[jnp.ix_(A([0, 2]), A([3, 1]))], xn[np.ix_([0, 2], [3, 1])])
  with pytest.raises(ValueError, match="1-dimensional"):
    jnp.ix_(A([[0]]))


def test_unravel_and_ravel_multi_index():
  for f in both(lambda i: jnp.unravel_index(i, (3, 4))):
    r, c = f(jnp.asarray(A([5, 7, 100, -1, -13], I32)))
    check(r, [1, 1, 2, 2, 0], np.int32), check(c, [1, 3, 3, 3, 0])   # JAX clamps (checked)
  for got, want in zip(jnp.unravel_index(A([0, 13, 23]), (2, 3, 4)),
                       np.unravel_index([0, 13, 23], (2, 3, 4))):
    check(got, want)
  mi = (A([1, 2]), A([3, 1]))
  check(jnp.ravel_multi_index(mi, (3, 4)), np.ravel_multi_index(mi, (3, 4)), np.int32)
  check(jnp.ravel_multi_index(mi, (3, 4), order="F"), np.ravel_multi_index(mi, (3, 4), order="F"))
  for f in both(lambda a, b: (jnp.ravel_multi_index((a, b), (3, 4), mode="clip"),
                              jnp.ravel_multi_index((a, b), (3, 4), mode="wrap"))):
    c, w = f(A([1, 5, -1]), A([3, 1, 1]))
    check(c, np.ravel_multi_index(([1, 5, -1], [3, 1, 1]), (3, 4), mode="clip"))
    check(w, np.ravel_multi_index(([1, 5, -1], [3, 1, 1]), (3, 4), mode="wrap"))
  with pytest.raises(ValueError, match="invalid entry in coordinates array"):
    jnp.ravel_multi_index((A([3]), A([0])), (3, 4))

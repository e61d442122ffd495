"""ember.numpy sorting, searching, unique and counting vs NumPy, eager and under ember.jit.
Orders, result dtypes and padding rules were checked against JAX 0.12."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors

RNG = np.random.RandomState(2)
F32 = RNG.randn(3, 4, 5).astype(np.float32)
I32 = RNG.randint(-3, 3, size=(3, 6)).astype(np.int32)
V = np.array([3., 1., np.nan, 2., 1., -0., 0., 5.], np.float32)  # NaN, ties, signed zeros


def both(f, *args):
  return [f(*args), ember.jit(f)(*args)]


def check(out, expected, dtype, weak=False):
  assert out.dtype == np.dtype(dtype), (out.dtype, dtype)
  assert out.weak_type == weak
  np.testing.assert_array_equal(np.asarray(out), np.asarray(expected))


# --- sort / argsort / lexsort ---------------------------------------------------------------

@pytest.mark.parametrize("x", [F32, I32, I32 > 0, F32.astype(np.float16)],
                         ids=["f32", "i32", "bool", "f16"])
@pytest.mark.parametrize("axis", [None, 0, -1, 1])
def test_sort_argsort(x, axis):
  if axis == 1 and x.ndim < 2:
    pytest.skip("no axis 1")
  for out in both(lambda x: jnp.sort(x, axis=axis), x):
    check(out, np.sort(x, axis=axis), x.dtype)
  for out in both(lambda x: jnp.argsort(x, axis=axis), x):
    check(out, np.argsort(x, axis=axis, kind="stable"), "int32")
  for out in both(lambda x: jnp.sort(x, axis=axis, descending=True), x):
    check(out, np.flip(np.sort(x, axis=axis), axis=0 if axis is None else axis), x.dtype)
  # stable descending: equal elements keep their input order
  flat = x.ravel() if axis is None else x
  ax = 0 if axis is None else axis
  expected = np.flip(np.argsort(np.flip(flat, ax), axis=ax, kind="stable"), ax)
  expected = flat.shape[ax] - 1 - expected
  for out in both(lambda x: jnp.argsort(x, axis=axis, descending=True), x):
    check(out, expected, "int32")


def test_sort_nan_and_options():
  for out in both(jnp.sort, V):
    check(out, np.sort(V), "float32")                 # NaN last
  for out in both(jnp.argsort, V):
    check(out, np.argsort(V, kind="stable"), "int32")  # -0.0 == 0.0, stable
  check(jnp.argsort(V, dtype=jnp.int16), np.argsort(V, kind="stable"), "int16")
  w = ember.lax.broadcast(2.0, (3,))
  assert jnp.sort(w).weak_type and not jnp.argsort(w).weak_type
  with pytest.raises(TypeError, match="'kind' argument to sort is not supported"):
    jnp.sort(V, kind="stable")
  with pytest.raises(TypeError, match="'order' argument to argsort is not supported"):
    jnp.argsort(V, order="x")
  with pytest.raises(ValueError, match="axis -1 is out of bounds for array of dimension 0"):
    jnp.sort(1.0)
  with pytest.raises(ValueError, match="axis 3 is out of bounds"):
    jnp.argsort(I32, 3)


def test_lexsort():
  a, b = RNG.randint(0, 3, 10), RNG.randint(0, 3, 10)
  for out in both(lambda a, b: jnp.lexsort((a, b)), a, b):
    check(out, np.lexsort((a, b)), "int32")
  keys = RNG.randint(0, 2, size=(3, 4, 5))
  for axis in (0, -1):
    for out in both(lambda k: jnp.lexsort(k, axis=axis), keys):
      check(out, np.lexsort(keys, axis=axis), "int32")
  check(jnp.lexsort((np.array(1.0),)), 0, "int32")
  with pytest.raises(ValueError, match="all keys need to be the same shape"):
    jnp.lexsort((np.ones(2), np.ones(3)))
  with pytest.raises(TypeError, match="need sequence of keys with len > 0"):
    jnp.lexsort(())


@pytest.mark.parametrize("kth", [0, 2, -1])
@pytest.mark.parametrize("axis", [0, -1])
def test_partition(kth, axis):
  x = I32
  n = x.shape[axis]
  k = kth % n
  for out in both(lambda x: jnp.partition(x, kth, axis=axis), x):
    o = np.asarray(out)
    assert out.dtype == np.int32
    kth_vals = np.take(o, [k], axis=axis)
    np.testing.assert_array_equal(kth_vals, np.take(np.sort(x, axis=axis), [k], axis=axis))
    assert np.all(np.take(o, range(k), axis=axis) <= kth_vals)
    assert np.all(np.take(o, range(k + 1, n), axis=axis) >= kth_vals)
    np.testing.assert_array_equal(np.sort(o, axis=axis), np.sort(x, axis=axis))
  for out in both(lambda x: jnp.argpartition(x, kth, axis=axis), x):
    assert out.dtype == np.int32
    idx = np.asarray(out)
    np.testing.assert_array_equal(np.take_along_axis(x, idx, axis).take([k], axis),
                                  np.sort(x, axis=axis).take([k], axis))
    np.testing.assert_array_equal(np.sort(idx, axis=axis),
                                  np.sort(np.indices(x.shape)[axis], axis=axis))


def test_partition_matches_jax_order():
  x = np.array([5., 1., 4., 2., 3.], np.float32)
  check(jnp.partition(x, 2), [1., 2., 3., 5., 4.], "float32")  # JAX: top part descending
  check(jnp.argpartition(x, 2), [1, 3, 4, 0, 2], "int32")      # rest in index order
  with pytest.raises(ValueError, match="does not support complex inputs"):
    jnp.partition(x * 1j, 0)


# --- searchsorted / digitize ---------------------------------------------------------------------

A_SORTED = np.sort(np.array([3., 1., np.nan, 2., 1., 0., 5.], np.float32))
QUERIES = np.array([[0., 1., np.nan], [2.5, -1, 9]], np.float32)


@pytest.mark.parametrize("method", ["scan", "sort", "compare_all", "scan_unrolled"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(method, side):
  expected = np.searchsorted(A_SORTED, QUERIES, side=side)
  for out in both(lambda a, q: jnp.searchsorted(a, q, side=side, method=method), A_SORTED,
                  QUERIES):
    check(out, expected, "int32")
  ints = np.arange(0, 10, 2)
  check(jnp.searchsorted(ints, np.array([0.5, 2.0, 7.0, 11.0]), side=side, method=method),
        np.searchsorted(ints, [0.5, 2.0, 7.0, 11.0], side=side), "int32")
  check(jnp.searchsorted(ints, 4, side=side, method=method),
        np.searchsorted(ints, 4, side=side), "int32")
  unsorted = RNG.randint(-5, 5, 8)
  sorter = np.argsort(unsorted, kind="stable")
  q = np.array([-6, -2, 0, 3, 9])
  for out in both(lambda a, q, s: jnp.searchsorted(a, q, side=side, sorter=s, method=method),
                  unsorted, q, sorter):
    check(out, np.searchsorted(unsorted, q, side=side, sorter=sorter), "int32")


def test_searchsorted_large_uses_sort_ranking():
  a = np.sort(RNG.randint(0, 50, 400)).astype(np.float32)
  v = RNG.randint(-5, 55, 300).astype(np.float32)  # 120000 pairs: ranked by sorting
  for side in ("left", "right"):
    for out in both(lambda a, v: jnp.searchsorted(a, v, side=side), a, v):
      check(out, np.searchsorted(a, v, side=side), "int32")
  names = [e.primitive.name for e in ember.make_jaxpr(
      lambda a, v: jnp.searchsorted(a, v))(a, v).eqns[0].params["jaxpr"].eqns]
  assert "sort" in names


def test_searchsorted_errors():
  with pytest.raises(ValueError, match=r"a should be 1-dimensional, got shape \(3, 6\)"):
    jnp.searchsorted(I32, 1)
  with pytest.raises(ValueError, match="side='middle' is not supported"):
    jnp.searchsorted(A_SORTED, 1.0, side="middle")
  with pytest.raises(ValueError, match="method='bisect' is not supported"):
    jnp.searchsorted(A_SORTED, 1.0, method="bisect")


@pytest.mark.parametrize("bins", [np.array([-1., 0., 1.], np.float32),
                                  np.array([1., 0., -1.], np.float32),
                                  np.array([0.], np.float32)], ids=["inc", "dec", "one"])
@pytest.mark.parametrize("right", [False, True])
def test_digitize(bins, right):
  x = np.array([-2., -1., -0.5, 0., 0.5, 1., 3.], np.float32)
  for out in both(lambda x, b: jnp.digitize(x, b, right=right), x, bins):
    check(out, np.digitize(x, bins, right=right), "int32")


def test_digitize_edge_cases():
  check(jnp.digitize(np.ones((2, 2)), np.zeros(0)), np.zeros((2, 2)), "int32")
  with pytest.raises(ValueError, match="bins must be a 1-dimensional array"):
    jnp.digitize(np.ones(2), np.ones((2, 2)))


# --- unique ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("x", [I32, I32 > 0, np.array([2.5, -1., 2.5, 0.], np.float32),
                               np.zeros(0, np.float32)], ids=["i32", "bool", "f32", "empty"])
def test_unique_eager(x):
  check(jnp.unique(x), np.unique(x), x.dtype)
  outs = jnp.unique(x, return_index=True, return_inverse=True, return_counts=True)
  exp = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
  for o, e, dt in zip(outs, exp, [x.dtype, "int32", "int32", "int32"]):
    check(o, np.reshape(e, o.shape), dt)
  assert outs[2].shape == x.shape  # inverse indices in the input's shape (NumPy 2, JAX)


def test_unique_nan_and_axis():
  values, index, inverse, counts = jnp.unique(V, return_index=True, return_inverse=True,
                                              return_counts=True)
  check(values, [-0., 1., 2., 3., 5., np.nan], "float32")
  check(index, [5, 1, 3, 0, 7, 2], "int32")
  check(inverse, [3, 1, 5, 2, 1, 0, 0, 4], "int32")
  check(counts, [2, 2, 1, 1, 1, 1], "int32")
  two_nans = np.array([1., np.nan, np.nan], np.float32)
  check(jnp.unique(two_nans), [1., np.nan], "float32")
  check(jnp.unique(two_nans, equal_nan=False), [1., np.nan, np.nan], "float32")
  rows = np.array([[1, 2], [0, 5], [1, 2], [0, 1]])
  outs = jnp.unique(rows, axis=0, return_index=True, return_inverse=True, return_counts=True)
  exp = np.unique(rows, axis=0, return_index=True, return_inverse=True, return_counts=True)
  for o, e in zip(outs, exp):
    np.testing.assert_array_equal(np.asarray(o), np.reshape(e, o.shape))
  cols = np.array([[1, 2, 1], [0, 5, 0]])
  np.testing.assert_array_equal(np.asarray(jnp.unique(cols, axis=1)), np.unique(cols, axis=1))


def test_unique_with_size_under_jit():
  x = np.array([3, 1, 2, 3, 1, 5], np.int32)

  @ember.jit
  def f(x):
    return jnp.unique(x, size=6, fill_value=-1, return_index=True, return_inverse=True,
                      return_counts=True)
  values, index, inverse, counts = f(x)
  check(values, [1, 2, 3, 5, -1, -1], "int32")
  check(index, [1, 2, 0, 5, 1, 1], "int32")   # JAX pads indices with the first one
  check(inverse, [2, 0, 1, 2, 0, 3], "int32")
  check(counts, [2, 1, 2, 1, 0, 0], "int32")
  # default fill: the smallest unique value; a size below the count truncates
  check(ember.jit(lambda x: jnp.unique(x, size=6))(x), [1, 2, 3, 5, 1, 1], "int32")
  v, c = ember.jit(lambda x: jnp.unique(x, size=2, return_counts=True))(x)
  check(v, [1, 2], "int32")
  check(c, [2, 1], "int32")
  # size larger than the input
  check(ember.jit(lambda x: jnp.unique(x, size=9, fill_value=0))(x[:3]),
        [1, 2, 3, 0, 0, 0, 0, 0, 0], "int32")
  vals, cnts = ember.jit(lambda x: jnp.unique_counts(x, size=4))(V[:5])
  check(vals, [1., 2., 3., np.nan], "float32")
  check(cnts, [2, 1, 1, 1], "int32")


def test_unique_array_api_variants():
  x = np.array([[3, 1], [2, 3]])
  r = jnp.unique_all(x)
  check(r.values, [1, 2, 3], "int32")
  check(r.indices, [1, 2, 0], "int32")
  check(r.inverse_indices, [[2, 0], [1, 2]], "int32")
  check(r.counts, [1, 1, 2], "int32")
  check(jnp.unique_values(x), [1, 2, 3], "int32")
  check(jnp.unique_inverse(x).inverse_indices, [[2, 0], [1, 2]], "int32")
  check(jnp.unique_counts(x).counts, [1, 1, 2], "int32")


def test_unique_without_size_under_jit_raises():
  with pytest.raises(errors.ConcretizationTypeError, match="specify a concrete value for the "
                                                           "size argument"):
    ember.jit(jnp.unique)(I32)
  with pytest.raises(errors.ConcretizationTypeError, match="size="):
    ember.jit(lambda x: jnp.unique_values(x))(I32)


# --- bincount / histogram ------------------------------------------------------------------------

def test_bincount():
  x = np.array([0, 1, 1, 3, 2, 1, 7], np.int32)
  check(jnp.bincount(x), np.bincount(x), "int32")
  check(jnp.bincount(x, minlength=10), np.bincount(x, minlength=10), "int32")
  w = RNG.rand(7).astype(np.float32)
  np.testing.assert_allclose(np.asarray(jnp.bincount(x, w)), np.bincount(x, w), rtol=1e-6)
  for out in both(lambda x: jnp.bincount(x, length=5), x):
    check(out, np.bincount(x)[:5], "int32")  # values >= length are dropped
  for out in both(lambda x, w: jnp.bincount(x, w, length=9), x, w):
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), np.bincount(x, w, minlength=9), rtol=1e-6)
  check(jnp.bincount(np.array([-1, 2])), [1, 0, 1], "int32")  # negatives count in bin 0
  check(jnp.bincount(np.array([True, False, True])), [1, 2], "int32")
  with pytest.raises(errors.ConcretizationTypeError, match="pass a static `length` argument"):
    ember.jit(jnp.bincount)(x)
  with pytest.raises(TypeError, match="x argument to bincount must have an integer type"):
    jnp.bincount(np.ones(3))
  with pytest.raises(ValueError, match="only 1-dimensional input supported"):
    jnp.bincount(np.ones((2, 2), np.int32))


@pytest.mark.parametrize("bins,range_", [(5, None), (4, (-1, 1)), (3, (0., 0.)),
                                         (np.array([-2., -0.5, 0., 3.]), None)])
def test_histogram(bins, range_):
  x = F32.ravel()
  e_counts, e_edges = np.histogram(x, bins, range=range_)
  for counts, edges in both(lambda x: jnp.histogram(x, bins, range=range_), x):
    check(counts, e_counts.astype(np.float32), "float32")
    np.testing.assert_allclose(np.asarray(edges), e_edges, rtol=1e-6, atol=1e-6)
    assert edges.dtype == np.float32
  check(jnp.histogram_bin_edges(x, bins, range_), np.asarray(
      jnp.histogram(x, bins, range_)[1]), "float32")


def test_histogram_weights_density_ints():
  x, w = F32[0].ravel(), np.abs(F32[1].ravel())
  c, e = jnp.histogram(x, 3, weights=w, density=True)
  ec, ee = np.histogram(x, 3, weights=w, density=True)
  np.testing.assert_allclose(np.asarray(c), ec, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(e), ee, rtol=1e-6)
  c, e = jnp.histogram(I32, 3)
  ec, ee = np.histogram(I32, 3)
  check(c, ec.astype(np.float32), "float32")
  np.testing.assert_allclose(np.asarray(e), ee, rtol=1e-6)  # edges rounded to float32
  with pytest.raises(ValueError, match="weights should have the same shape as a"):
    jnp.histogram(x, 3, weights=w[:3])
  with pytest.raises(ValueError, match="string bins='auto' are not supported"):
    jnp.histogram(x, "auto")


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("method", ["scan", "sort", "compare_all"])
def test_searchsorted_complex_is_lexicographic_with_nans_last(dtype, method):
  """Complex values order by real part, then imaginary part, NaN parts last (lax.sort's
  order); values from JAX 0.12. The pairwise method used to raise TypeError (lt)."""
  a = np.array([1 + 2j, 1 + np.nan * 1j, 3 - 1j, 0j, np.nan + 0j, 1 - 1j, 1 + 2j], dtype)
  v = np.array([1 + 2j, 1 + 0j, np.nan + 1j, 1 + np.nan * 1j, -1 + 5j, 3 - 1j, 0j], dtype)
  want = {"left": [2, 2, 6, 6, 0, 4, 0], "right": [4, 2, 6, 7, 0, 5, 1]}
  s = jnp.sort(a)
  for side, expected in want.items():
    f = lambda s, v: jnp.searchsorted(s, v, side=side, method=method)
    np.testing.assert_array_equal(np.asarray(f(s, v)), expected)
    np.testing.assert_array_equal(np.asarray(ember.jit(f)(s, v)), expected)


_SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45,
                     3.4e38, -3.4e38])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "uint32", "int8",
                                   "uint8", "int16", "uint16", "bool"])
@pytest.mark.parametrize("shape,dim", [((1000,), 0), ((7, 300), 1), ((300, 7), 0),
                                       ((3, 50, 4), 1)])
def test_radix_sort_keeps_lexsorts_order(dtype, shape, dim):
  """One key of <= 32 bits sorts by two stable 16-bit passes (reference/sorting.py); it must
  give the permutation the lexsort of sort_keys gives: NaNs last in input order, -0 == 0,
  ties stable."""
  from ember._src.reference import sorting
  rng = np.random.default_rng(0)
  dt = jnp.dtype(dtype)
  if dt.kind in "fV":
    x = np.where(rng.random(shape) < 0.5, rng.choice(_SPECIAL, shape),
                 rng.standard_normal(shape) * 10).astype(np.float32)
    with np.errstate(over="ignore"):
      x = np.where(rng.random(shape) < 0.3, np.round(x), x).astype(dt)
  elif dt.kind == "b":
    x = rng.random(shape) < 0.5
  else:
    info = np.iinfo(dt)
    x = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    x[..., :3] = info.min
  payload = np.arange(x.size).reshape(shape)
  got = sorting.sort(x, payload, dimension=dim, is_stable=True, num_keys=1)
  keys = sorting.sort_keys(x)
  perm = np.lexsort(keys[::-1], axis=dim)
  np.testing.assert_array_equal(got[1], np.take_along_axis(payload, perm, axis=dim))

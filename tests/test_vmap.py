"""vmap: every primitive batched along different axes against a Python loop of eager
ember calls (whose values other tests check against NumPy), eager and under jit with the
compiled result checked against the reference interpreter; in_axes / out_axes pytrees,
nested vmap, vmap of jit and jit of vmap, named-axis collectives, the jnp functions built
on vmap, the seed's pairwise-distance program, printed jaxprs (copied from JAX 0.12) and
the errors users hit."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax, random
from ember._src.primitives.prng import threefry2x32

f32, i32, u8, c64 = np.float32, np.int32, np.uint8, np.complex64


pytestmark = pytest.mark.usefixtures("check_compiled")


def data(shape, dtype=f32, seed=0, lo=None):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    return rng.integers(0 if dtype.kind == "u" or lo == 0 else -5, 10, shape).astype(dtype)
  if dtype.kind == "c":
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
  x = rng.standard_normal(shape)
  return (np.abs(x) + 0.5 if lo == 0 else x).astype(dtype)


def loop(f, args, in_axes, out_axes=0):
  """The reference: call `f` eagerly on each example and stack the results."""
  axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
  size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
  outs = [f(*[jnp.asarray(a if ax is None else np.take(a, i, ax)) for a, ax in zip(args, axes)])
          for i in range(size)]
  leaves = [ember.tree_util.tree_leaves(o) for o in outs]
  treedef = ember.tree_util.tree_structure(outs[0])
  oaxes = ember.tree_util.tree_leaves(out_axes, is_leaf=lambda x: x is None) \
      if not isinstance(out_axes, int) else [out_axes] * len(leaves[0])
  stacked = []
  for j, ax in enumerate(oaxes):
    col = [l[j] for l in leaves]
    stacked.append((np.asarray(col[0]), col[0]) if ax is None
                   else (np.stack([np.asarray(c) for c in col], ax), col[0]))
  return treedef, stacked


def assert_matches(out, ref, rtol=1e-6):
  treedef, stacked = ref
  assert ember.tree_util.tree_structure(out) == treedef
  for got, (want, example) in zip(ember.tree_util.tree_leaves(out), stacked):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.weak_type == example.weak_type
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "fc":
      np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=rtol)
    else:
      np.testing.assert_array_equal(np.asarray(got), want)


def check_vmap(f, args, in_axes=0, out_axes=0, rtol=1e-6, jit=True):
  ref = loop(f, args, in_axes, out_axes)
  args = [jnp.asarray(a) for a in args]
  v = ember.vmap(f, in_axes=in_axes, out_axes=out_axes)
  assert_matches(v(*args), ref, rtol)
  if jit:
    assert_matches(ember.jit(v)(*args), ref, rtol)


# --- elementwise ------------------------------------------------------------------------

UNARY = [  # (fn, dtype, positive inputs)
    (jnp.sin, f32, False), (jnp.exp, f32, False), (jnp.log, f32, True), (jnp.tanh, f32, False),
    (lax.neg, i32, False), (jnp.abs, f32, False), (lax.sqrt, f32, True), (jnp.floor, f32, False),
    (lax.round, f32, False), (lax.is_finite, f32, False), (lax.logistic, f32, False),
    (lax.erf, f32, False), (lax.lgamma, f32, True), (lax.sign, f32, False),
    (lax.square, f32, False), (lambda x: lax.integer_pow(x, 3), f32, False),
    (lax.real, c64, False), (lax.imag, c64, False), (lax.conj, c64, False),
    (lax.bitwise_not, i32, False), (lax.population_count, i32, False), (lax.clz, i32, False),
    (lambda x: lax.convert_element_type(x, np.int32), f32, False),
    (lambda x: lax.reduce_precision(x, 5, 10), f32, False),
    (lambda x: lax.bitcast_convert_type(x, np.int32), f32, False),
    (lax.stop_gradient, f32, False), (lax.cbrt, f32, False), (lax.exp2, f32, False),
]


@pytest.mark.parametrize("fn,dtype,pos", UNARY)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_unary(fn, dtype, pos, axis):
  check_vmap(fn, [data((3, 4, 2), dtype, lo=0 if pos else None)], axis)


ALL_UNARY_F32 = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "cos",
                 "cosh", "digamma", "erf", "erf_inv", "erfc", "exp", "exp2", "expm1", "floor",
                 "is_finite", "lgamma", "log", "log1p", "logistic", "neg", "round", "rsqrt",
                 "sign", "sin", "sinh", "sqrt", "square", "tan", "tanh", "bessel_i0e"]


@pytest.mark.parametrize("name", ALL_UNARY_F32)
def test_every_unary_eager(name):
  x = np.clip(data((4, 3), lo=0), 0.1, 0.9)  # inside every domain (acosh's: shifted below)
  fn = getattr(lax, name)
  f = (lambda v: fn(v + 1.0)) if name == "acosh" else fn
  assert_matches(ember.vmap(f, in_axes=1)(x), loop(f, [x], 1))


def test_every_lax_primitive_has_a_batching_rule():
  prims = {n: p for n, p in vars(lax).items()
           if n.endswith("_p") and isinstance(p, ember._src.core.Primitive)}
  assert len(prims) > 100
  # iota has no operands, so it is never batched; rng_uniform (a stateful draw) has no
  # batching rule in JAX either
  assert sorted(n for n, p in prims.items() if p.batch is None) == ["iota_p", "rng_uniform_p"]


@pytest.mark.parametrize("new,shape,axis", [(u8, (3, 2), 1), (u8, (3, 2), 0),
                                            (f32, (4, 3), 1), (f32, (3, 4), 0)])
def test_bitcast_width_change(new, shape, axis):
  # the added/removed bytes dimension is the last one: the batch dim must stay off it
  x = data(shape, f32 if new == u8 else u8)
  check_vmap(lambda v: lax.bitcast_convert_type(v, new), [x], axis)


BINARY = [(lax.add, f32), (lax.sub, i32), (lax.mul, f32), (lax.div, f32), (lax.rem, i32),
          (lax.max, f32), (lax.min, i32), (lax.pow, f32), (lax.atan2, f32),
          (lax.nextafter, f32), (lax.bitwise_and, i32), (lax.bitwise_xor, np.bool_),
          (lax.shift_left, i32), (lax.shift_right_logical, i32), (lax.eq, f32), (lax.lt, i32),
          (lax.ge, f32), (lax.complex, f32)]


@pytest.mark.parametrize("fn,dtype", BINARY)
@pytest.mark.parametrize("in_axes,shapes", [
    ((0, 0), ((3, 4), (3, 4))), ((1, 0), ((4, 3), (3, 4))), ((0, None), ((3, 4), (4,))),
    ((None, 1), ((4,), (4, 3))), ((0, 0), ((3,), (3, 2, 4))), ((None, 2), ((), (2, 4, 3)))])
def test_binary(fn, dtype, in_axes, shapes):
  pos = fn in (lax.pow, lax.div, lax.rem)
  args = [data(s, dtype, seed=i, lo=0 if pos else None) for i, s in enumerate(shapes)]
  if fn in (lax.shift_left, lax.shift_right_logical):
    args[1] = np.abs(args[1]) % 8
  if fn in (lax.rem,):
    args[1] = args[1] + 1
  if shapes[0] == (3,) and shapes[1] == (3, 2, 4):  # a per-example scalar with an array
    check_vmap(lambda a, b: fn(lax.broadcast(a, (2, 4)), b), args, in_axes)
  else:
    check_vmap(fn, args, in_axes)


def test_weak_scalar_operand():
  out = ember.vmap(lambda x: x * 2.0)(data((3,)))
  assert out.dtype == f32 and not out.weak_type
  out = ember.vmap(lambda x: x + 1, in_axes=0)(jnp.arange(3.0))
  np.testing.assert_allclose(np.asarray(out), [1, 2, 3])


@pytest.mark.parametrize("in_axes,shapes", [
    ((0, 0, 0), ((3, 4), (3, 4), (3, 4))), ((0, None, 1), ((3,), (2, 4), (2, 3, 4))),
    ((0, 1, None), ((3,), (2, 3), (2,))), ((None, 0, 0), ((), (3, 4), (3, 4))),
    ((0, 0, 1), ((3, 4), (3, 4), (4, 3)))])
def test_select_n(in_axes, shapes):
  which = data(shapes[0], np.bool_, seed=5)
  args = [which, data(shapes[1], seed=1), data(shapes[2], seed=2)]
  def f(w, a, b):
    a, b = jnp.broadcast_arrays(a, b)
    return lax.select_n(w, a, b)
  check_vmap(f, args, in_axes)


def test_select_n_integer_which():
  which = np.array([[0, 1, 2], [2, 2, 0]], np.int32)
  check_vmap(lambda w, a, b, c: lax.select_n(w, a, b, c),
             [which, data((3,)), data((3,), seed=1), data((2, 3), seed=2)], (0, None, None, 0))


@pytest.mark.parametrize("in_axes,shapes", [
    ((None, 0, None), ((), (3, 4), ())), ((0, 0, 0), ((3,), (3, 4), (3,))),
    ((0, 0, 0), ((3, 4), (3, 4), (3, 4))), ((None, 1, 0), ((4,), (4, 3), (3, 4))),
    ((0, None, None), ((3,), (4,), ()))])
def test_clamp(in_axes, shapes):
  lo, x, hi = (data(s, seed=i) for i, s in enumerate(shapes))
  def f(lo, x, hi):
    if np.ndim(lo) and np.ndim(x) == 0 or np.ndim(hi) and np.ndim(x) == 0:
      x = jnp.broadcast_to(x, jnp.shape(lo) or jnp.shape(hi))
    return lax.clamp(lo - 1, x, hi + 1)
  check_vmap(f, [lo, x, hi], in_axes)


# --- structural -------------------------------------------------------------------------

STRUCT = [
    (lambda x: lax.broadcast_in_dim(x, (2, 4, 3), (1, 2)), (4, 3)),
    (lambda x: jnp.reshape(x, (3, 4)), (4, 3)),
    (lambda x: lax.reshape(x, (12,), dimensions=(1, 0)), (4, 3)),
    (lambda x: lax.transpose(x, (2, 0, 1)), (2, 3, 4)),
    (lambda x: lax.squeeze(x, (1,)), (4, 1, 3)),
    (lambda x: lax.expand_dims(x, (0, 2)), (4, 3)),
    (lambda x: lax.rev(x, (0, 1)), (4, 3)),
    (lambda x: lax.slice(x, (1, 0), (4, 3), (2, 2)), (4, 3)),
    (lambda x: lax.slice(x, (1, 1), (3, 2)), (4, 3)),
    (lambda x: lax.concatenate([x, 2 * x, jnp.ones((1, 3))], 0), (4, 3)),
    (lambda x: lax.pad(x, 0.5, ((1, 2, 1), (-1, 0, 0))), (4, 3)),
    (lambda x: lax.tile(x, (2, 1)), (4, 3)),
    (lambda x: jnp.stack([x, x + 1], axis=1), (4, 3)),
    (lambda x: jnp.split(x, [1, 3], axis=0), (4, 3)),
    (lambda x: lax.unstack(x, axis=1), (4, 3)),
    (lambda x: x + lax.broadcasted_iota(np.float32, (4, 3), 1), (4, 3)),
    (lambda x: lax.optimization_barrier((x, 2 * x)), (4, 3)),
    (lambda x: x[1:, ::-1], (4, 3)),
    (lambda x: jnp.flip(jnp.moveaxis(x, 0, 1)), (4, 3)),
]


@pytest.mark.parametrize("fn,shape", STRUCT)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_structural(fn, shape, axis):
  x = data(shape[:axis] + (3,) + shape[axis:] if axis <= len(shape) else shape)
  check_vmap(fn, [x], axis)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (1, 0)])
def test_concatenate_mixed(in_axes):
  a, b = data((3, 2, 4)), data((3, 5, 4), seed=1)
  a = a if in_axes[0] != 1 else np.moveaxis(a, 0, 1)
  a = a[0] if in_axes[0] is None else a
  b = b[0] if in_axes[1] is None else b
  check_vmap(lambda x, y: lax.concatenate([x, y], 0), [a, b], in_axes)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (1, 0)])
def test_pad_batched_value(in_axes):
  x = data((3, 4)) if in_axes[0] is not None else data((4,))
  x = x.T.copy() if in_axes[0] == 1 else x
  check_vmap(lambda v, p: lax.pad(v, p, ((1, 2, 1),)), [x, data((3,), seed=1)], in_axes)


# --- reductions, cumulative, dot, sort --------------------------------------------------

REDUCE = [
    (lambda x: jnp.sum(x, axis=1), f32), (lambda x: jnp.max(x, axis=(0, 1)), f32),
    (lambda x: jnp.min(x), i32), (lambda x: jnp.prod(x, axis=0), f32),
    (lambda x: jnp.all(x, axis=1), np.bool_), (lambda x: jnp.any(x), np.bool_),
    (lambda x: lax.reduce_xor(x, (0,)), i32), (lambda x: jnp.argmax(x, axis=1), f32),
    (lambda x: jnp.argmin(x, axis=0), i32), (lambda x: jnp.cumsum(x, axis=1), f32),
    (lambda x: lax.cumprod(x, axis=0, reverse=True), f32),
    (lambda x: lax.cummax(x, axis=1), i32), (lambda x: lax.cummin(x, axis=0), f32),
    (lambda x: lax.cumlogsumexp(x, axis=1), f32), (lambda x: jnp.mean(x, axis=0), f32),
]


@pytest.mark.parametrize("fn,dtype", REDUCE)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_reductions(fn, dtype, axis):
  check_vmap(fn, [data((3, 4, 2)[:axis] + (5,) + (3, 4, 2)[axis:2], dtype)], axis, rtol=1e-5)


@pytest.mark.parametrize("dims,shapes,in_axes", [
    ((((1,), (0,)), ((), ())), ((2, 3), (3, 4)), (0, 0)),      # matmul, both batched
    ((((1,), (0,)), ((), ())), ((2, 3), (3, 4)), (1, None)),   # lhs batched only
    ((((1,), (0,)), ((), ())), ((2, 3), (3, 4)), (None, 2)),   # rhs batched only
    ((((2,), (1,)), ((0,), (0,))), ((2, 3, 4), (2, 4, 5)), (1, 3)),  # with dot batch dims
    ((((0,), (0,)), ((), ())), ((3,), (3,)), (0, 1)),          # vector dot
])
def test_dot_general(dims, shapes, in_axes):
  args = []
  for i, (s, ax) in enumerate(zip(shapes, in_axes)):
    s = s if ax is None else s[:ax] + (5,) + s[ax:]
    args.append(data(s, seed=i))
  check_vmap(lambda a, b: lax.dot_general(a, b, dims), args, in_axes, rtol=1e-5)


def test_matmul_vmap_is_one_dot():
  f = ember.vmap(lambda a, b: a @ b, in_axes=(0, None))
  jaxpr = ember.make_jaxpr(f)(data((5, 2, 3)), data((3, 4)))
  assert [e.primitive.name for e in jaxpr.eqns] == ["dot_general"]


@pytest.mark.parametrize("axis", [0, 1])
def test_sort_and_top_k(axis):
  x, y = data((3, 5)), data((3, 5), seed=1)
  x, y = (np.moveaxis(v, 0, axis).copy() for v in (x, y))
  check_vmap(jnp.sort, [x], axis)
  check_vmap(lambda a, b: lax.sort((a, b), num_keys=1), [x, y], axis)
  check_vmap(lambda a, b: lax.sort((a, b), num_keys=1), [x, y[0] if axis == 0 else y[:, 0]],
             (axis, None))
  check_vmap(lambda a: lax.top_k(a, 2), [x], axis)
  check_vmap(jnp.argsort, [x], axis)


# --- indexing: dynamic_slice / update, gather, scatter ----------------------------------

@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 0)])
def test_dynamic_slice(in_axes):
  x = data((4, 6))
  x = x if in_axes[0] is not None else x[0]
  x = x.T.copy() if in_axes[0] == 1 else x
  i = np.array([0, 3, 5, -1], np.int32) if in_axes[1] is not None else np.int32(2)
  check_vmap(lambda v, s: lax.dynamic_slice(v, (s,), (2,)), [x, i], in_axes)
  check_vmap(lambda v, s: lax.dynamic_index_in_dim(v, s, keepdims=False), [x, i], in_axes)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (None, 0, 0), (0, None, 0), (0, 0, None),
                                     (1, None, None)])
def test_dynamic_update_slice(in_axes):
  x, u = data((4, 6)), data((4, 2), seed=1)
  i = np.array([0, 3, 5, -1], np.int32)
  x = x if in_axes[0] is not None else x[0]
  x = x.T.copy() if in_axes[0] == 1 else x
  u = u if in_axes[1] is not None else u[0]
  i = i if in_axes[2] is not None else np.int32(4)
  check_vmap(lambda v, w, s: lax.dynamic_update_slice(v, w, (s,)), [x, u, i], in_axes)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 1)])
def test_gather_indexing(in_axes):
  x = data((3, 5, 2))
  idx = np.array([[4, 0], [1, 1], [-1, 2]], np.int32)
  x = x if in_axes[0] is not None else x[0]
  x = np.moveaxis(x, 0, 1).copy() if in_axes[0] == 1 else x
  idx = idx if in_axes[1] is not None else idx[0]
  idx = idx.T.copy() if in_axes[1] == 1 else idx
  check_vmap(lambda v, j: v[j], [x, idx], in_axes)
  check_vmap(lambda v, j: jnp.take(v, j, axis=1, mode="fill", fill_value=-1.0), [x, idx],
             in_axes)
  check_vmap(lambda v, j: v[j[0], 1:], [x, idx], in_axes)


SCATTER = [lambda v, j, u: v.at[j].set(u), lambda v, j, u: v.at[j].add(u),
           lambda v, j, u: v.at[j].mul(u), lambda v, j, u: v.at[j].min(u),
           lambda v, j, u: v.at[j].max(u), lambda v, j, u: v.at[j, 1].set(u[:, 0])]


@pytest.mark.parametrize("fn", SCATTER)
@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, None), (None, 0, 0), (None, None, 0),
                                     (1, 0, 1)])
def test_scatter(fn, in_axes):
  x, u = data((3, 5, 2)), data((3, 2, 2), seed=1)
  idx = np.array([[4, 0], [1, 1], [2, 2]], np.int32)   # duplicates accumulate
  x = x if in_axes[0] is not None else x[0]
  x = np.moveaxis(x, 0, 1).copy() if in_axes[0] == 1 else x
  idx = idx if in_axes[1] is not None else idx[0]
  u = u if in_axes[2] is not None else u[0]
  u = np.moveaxis(u, 0, 1).copy() if in_axes[2] == 1 else u
  check_vmap(fn, [x, idx, u], in_axes)


# --- random (threefry2x32) --------------------------------------------------------------

def test_random_under_vmap():
  keys = random.split(random.key(0), 4)
  out = ember.vmap(lambda k: random.normal(k, (3,)))(keys)
  ref = np.stack([np.asarray(random.normal(k, (3,))) for k in keys])
  np.testing.assert_array_equal(np.asarray(out), ref)
  out = ember.jit(ember.vmap(lambda k: random.uniform(k, (2, 2))))(keys)
  ref = np.stack([np.asarray(random.uniform(k, (2, 2))) for k in keys])
  np.testing.assert_array_equal(np.asarray(out), ref)
  data_ = np.stack([np.asarray(random.key_data(k)) for k in keys])
  check_vmap(lambda d: threefry2x32(d[0], d[1], np.uint32(7), d[0] ^ d[1]),
             [data_], 0)


# --- in_axes / out_axes / axis_size / nesting -------------------------------------------

def test_in_axes_pytrees_and_none():
  p = {"w": data((3, 4)), "b": data((4, 3), seed=1)}
  x = data((4,), seed=2)
  f = lambda p, x: p["w"] @ x + p["b"][:3]
  in_axes = ({"w": None, "b": 1}, None)
  out = ember.vmap(f, in_axes=in_axes)(p, x)
  ref = loop(lambda b: f({"w": p["w"], "b": b}, x), [p["b"]], 1)
  assert_matches(out, ref, 1e-5)
  # a list in_axes is a tuple; keyword arguments map along axis 0
  out = ember.vmap(lambda a, b=None: a * b, in_axes=[1])(data((2, 3)), b=data((3, 2)))
  assert out.shape == (3, 2)
  # pytree outputs, out_axes pytrees, negative and None
  f2 = lambda a: {"s": a.sum(), "m": (a * 2, jnp.zeros(2))}
  out = ember.vmap(f2, out_axes={"s": 0, "m": (-1, None)})(data((5, 3)))
  assert out["s"].shape == (5,) and out["m"][0].shape == (3, 5) and out["m"][1].shape == (2,)
  check_vmap(lambda a: (a * 2, a.sum()), [data((5, 3))], 0, out_axes=(1, 0))
  check_vmap(lambda a, b: (a + b, b), [data((5, 3)), data((3,))], (0, None), out_axes=(0, None))


def test_unbatched_output_is_broadcast():
  out = ember.vmap(lambda x: 1.0, axis_size=3, in_axes=None)(data((2,)))
  assert out.shape == (3,) and out.dtype == f32 and out.weak_type
  out = ember.vmap(lambda: jnp.arange(2), axis_size=4)()
  np.testing.assert_array_equal(np.asarray(out), np.tile(np.arange(2), (4, 1)))
  out = ember.vmap(lambda x, y: y, in_axes=(0, None), out_axes=1)(data((3,)), data((2,)))
  assert out.shape == (2, 3)


def test_nested_vmap():
  x = data((2, 3, 4))
  out = ember.vmap(ember.vmap(jnp.sum, in_axes=1), in_axes=2)(x)
  np.testing.assert_allclose(np.asarray(out), x.sum(0).T, rtol=1e-6)
  f = ember.vmap(ember.vmap(lambda a, b: a * b, in_axes=(0, None)), in_axes=(None, 0))
  a, b = data((3,)), data((4,), seed=1)
  np.testing.assert_allclose(np.asarray(f(a, b)), b[:, None] * a[None, :], rtol=1e-6)
  g = ember.jit(ember.vmap(ember.vmap(lambda m: m @ m.T)))
  x = data((2, 3, 4, 5))
  np.testing.assert_allclose(np.asarray(g(x)), np.einsum("abij,abkj->abik", x, x), rtol=1e-5)


def test_vmap_of_jit_and_jit_of_vmap():
  inner = ember.jit(lambda x, y: (jnp.sin(x) + y, y))
  x, y = data((3, 4)), np.float32(1.5)
  out = ember.vmap(inner, in_axes=(0, None))(x, y)
  np.testing.assert_allclose(np.asarray(out[0]), np.sin(x) + y, rtol=1e-6)
  assert out[1].shape == (3,)
  jaxpr = ember.make_jaxpr(ember.vmap(inner, in_axes=(0, None)))(x, y)
  assert [e.primitive.name for e in jaxpr.eqns] == ["jit", "broadcast_in_dim"]
  # batched along axis 1 through a jit, inside another jit
  f = ember.jit(ember.vmap(ember.jit(lambda v: jnp.cumsum(v) * 2), in_axes=1, out_axes=1))
  np.testing.assert_allclose(np.asarray(f(x)), np.cumsum(x, 0) * 2, rtol=1e-6)
  # the jitted function also runs un-batched afterwards
  np.testing.assert_allclose(np.asarray(inner(x[0], y)[0]), np.sin(x[0]) + y, rtol=1e-6)


def test_batched_jit_with_rule_constants():
  # a batching rule that makes a constant (the empty index vector of a 0-d dynamic_slice):
  # the batched sub-jaxpr gets it as a leading argument, and stays cached
  f = ember.vmap(ember.jit(lambda x: lax.dynamic_slice(x, (), ()) * 2))
  x = np.arange(3.0, dtype=f32)
  for run in (f, ember.jit(f), f):
    np.testing.assert_array_equal(np.asarray(run(x)), 2 * x)
  jaxpr = ember.make_jaxpr(f)(x)
  assert len(jaxpr.constvars) == 1 and jaxpr.eqns[0].primitive.name == "jit"


def test_negative_axes_and_kwargs():
  x = data((2, 3, 4))
  check_vmap(lambda v: v * 2, [x], -1, out_axes=-2)
  out = ember.vmap(lambda a, *, b: a + b)(data((3, 2)), b=data((3, 2), seed=1))
  np.testing.assert_allclose(np.asarray(out), data((3, 2)) + data((3, 2), seed=1), rtol=1e-6)


def test_closure_over_outer_tracer():
  def f(x):
    return ember.vmap(lambda y: x * y + jnp.sum(x))(jnp.arange(3.0))
  x = data((3,))
  ref = np.stack([x * i + x.sum() for i in range(3)])
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), ref, rtol=1e-6)
  np.testing.assert_allclose(np.asarray(ember.vmap(f)(np.stack([x, 2 * x]))[1]),
                             np.stack([2 * x * i + 2 * x.sum() for i in range(3)]), rtol=1e-6)


# --- printed jaxprs (from JAX 0.12) -----------------------------------------------------

PAIR_V0 = """{ lambda ; a:f32[5,3] b:f32[4,3]. let
    c:f32[5,1,3] = broadcast_in_dim[broadcast_dimensions=(0, np.int64(2))] a
    d:f32[1,4,3] = broadcast_in_dim[
      broadcast_dimensions=(np.int64(1), np.int64(2))
    ] b
    e:f32[5,4,3] = sub c d
    f:f32[5,4,3] = integer_pow[y=2] e
    g:f32[5,4] = reduce_sum[axes=(np.int64(2),) out_sharding=None] f
    h:f32[5,4] = sqrt g
  in (h,) }"""

PSUM_TUPLE_AXIS1 = """{ lambda ; a:f32[3,4]. let
    b:f32[3,4] = mul 2.0:f32[] a
    c:f32[4,3] = transpose[permutation=(1, 0)] a
    d:f32[3] = psum[axes=(0,) axis_index_groups=None] c
    e:f32[4,3] = transpose[permutation=(1, 0)] b
    f:f32[3] = psum[axes=(0,) axis_index_groups=None] e
    g:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] d
    h:f32[4,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] f
  in (g, h) }"""

VMAP_JIT = """{ lambda ; a:f32[3,4] b:f32[]. let
    c:f32[3,4] d:f32[] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[3,4] b:f32[]. let
          e:f32[3,4] = sin a
          f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
          c:f32[3,4] = add e f
        in (c, b) }
    ] a b
    g:f32[3] = broadcast_in_dim d
  in (c, g) }"""

DYNAMIC_SLICE = """{ lambda ; a:f32[3,4] b:i32[3]. let
    c:bool[3] = lt b 0:i32[]
    d:i32[3] = add b 4:i32[]
    e:i32[3] = select_n c b d
    f:i32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
    g:f32[3,2] = gather[
      dimension_numbers=GatherDimensionNumbers(offset_dims=(np.int64(1),), collapsed_slice_dims=(), start_index_map=(np.int64(1),), operand_batching_dims=(0,), start_indices_batching_dims=(0,))
      fill_value=None
      indices_are_sorted=True
      mode=GatherScatterMode.CLIP
      slice_sizes=(1, 2)
      unique_indices=True
    ] a f
  in (g,) }"""

STACK = """{ lambda ; a:f32[3,4]. let
    b:f32[2,3,4] = stack[axis=0] a a
    c:f32[3,2,4] = transpose[permutation=(1, 0, 2)] b
  in (c,) }"""


def pair_dist(x, y):
  return jnp.sqrt(jnp.sum((x - y) ** 2))


def pairwise_v0(X, Y):
  return ember.vmap(lambda x: ember.vmap(lambda y: pair_dist(x, y))(Y))(X)


def pairwise_v1(X, Y):
  diff = X[:, None, :] - Y[None, :, :]
  return jnp.sqrt(jnp.sum(diff ** 2, axis=-1))


def test_printed_jaxprs():
  X, Y = data((5, 3)), data((4, 3), seed=1)
  assert str(ember.make_jaxpr(pairwise_v0)(X, Y)) == PAIR_V0
  f = ember.vmap(lambda x: lax.psum((x, 2 * x), "i"), axis_name="i", in_axes=1)
  assert str(ember.make_jaxpr(f)(data((3, 4)))) == PSUM_TUPLE_AXIS1
  g = ember.vmap(ember.jit(lambda x, y: (jnp.sin(x) + y, y)), in_axes=(0, None))
  assert str(ember.make_jaxpr(g)(data((3, 4)), 1.0)) == VMAP_JIT
  h = ember.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,)))
  assert str(ember.make_jaxpr(h)(data((3, 4)), np.arange(3, dtype=i32))) == DYNAMIC_SLICE
  k = ember.vmap(lambda x: jnp.stack([x, x]))
  assert str(ember.make_jaxpr(k)(data((3, 4)))) == STACK


def test_seed_pairwise_distance_compiles_like_broadcast():
  """Seed 002 section 2.8: the two-level vmap compiles to the same program as the
  explicit-broadcast version: one fusion, the same flops."""
  X, Y = data((40, 16)), data((30, 16), seed=1)
  reports = []
  for fn in (pairwise_v0, pairwise_v1):
    c = ember.jit(fn).lower(X, Y).compile()
    reports.append((c.cost_analysis()["flops"], c.as_text().count(" fusion(")))
  assert reports[0] == reports[1]
  assert reports[0][1] == 1 and reports[0][0] > 0
  ref = np.sqrt(((X[:, None].astype(np.float64) - Y[None]) ** 2).sum(-1))
  np.testing.assert_allclose(np.asarray(ember.jit(pairwise_v0)(X, Y)), ref, rtol=1e-5)
  np.testing.assert_allclose(np.asarray(pairwise_v0(X, Y)), ref, rtol=1e-5)


# --- collectives --------------------------------------------------------------------------

@pytest.mark.parametrize("in_axes", [0, 1])
def test_collectives(in_axes):
  x = data((3, 4)) if in_axes == 0 else data((4, 3))
  xs = x if in_axes == 0 else x.T
  cases = [
      (lambda v: lax.psum(v, "i"), lambda: np.broadcast_to(xs.sum(0), (3, 4))),
      (lambda v: lax.pmean(v, "i"), lambda: np.broadcast_to(xs.mean(0), (3, 4))),
      (lambda v: lax.pmax(v, "i"), lambda: np.broadcast_to(xs.max(0), (3, 4))),
      (lambda v: lax.pmin(v, "i"), lambda: np.broadcast_to(xs.min(0), (3, 4))),
      (lambda v: lax.all_gather(v, "i"), lambda: np.broadcast_to(xs, (3, 3, 4))),
      (lambda v: lax.all_gather(v, "i", axis=1), lambda: np.broadcast_to(xs.T, (3, 4, 3))),
      (lambda v: lax.all_gather(v, "i", tiled=True), lambda: np.broadcast_to(xs.ravel(), (3, 12))),
      (lambda v: v - lax.axis_index("i"), lambda: xs - np.arange(3)[:, None]),
      (lambda v: lax.psum(v, "i") / lax.psum(1, "i"), lambda: np.broadcast_to(xs.mean(0), (3, 4))),
      (lambda v: v / lax.psum(jnp.sum(v), "i"), lambda: xs / xs.sum()),
      (lambda v: lax.psum(2.0, "i") * v, lambda: 6 * xs),
      (lambda v: lax.pmax(jnp.ones(()), "i") * v, lambda: xs),
  ]
  for f, ref in cases:
    for run in (ember.vmap(f, axis_name="i", in_axes=in_axes),
                ember.jit(ember.vmap(f, axis_name="i", in_axes=in_axes))):
      np.testing.assert_allclose(np.asarray(run(x)), ref(), rtol=1e-5, atol=1e-6)


def test_nested_collectives_and_jit_inside():
  x = data((3, 4))
  both = ember.vmap(ember.vmap(lambda v: lax.psum(v, ("i", "j")), axis_name="j"),
                    axis_name="i")
  np.testing.assert_allclose(np.asarray(both(x)), np.full((3, 4), x.sum()), rtol=1e-5)
  outer = ember.vmap(ember.vmap(lambda v: lax.psum(v, "i"), axis_name="j"), axis_name="i")
  np.testing.assert_allclose(np.asarray(outer(x)), np.broadcast_to(x.sum(0), (3, 4)), rtol=1e-5)
  inner = ember.vmap(ember.vmap(lambda v: lax.psum(v, "j"), axis_name="j"), axis_name="i")
  np.testing.assert_allclose(np.asarray(inner(x)), np.broadcast_to(x.sum(1, keepdims=True),
                                                                  (3, 4)), rtol=1e-5)
  # a collective staged inside a jit inside vmap is batched with the jit
  f = ember.vmap(ember.jit(lambda v: v / lax.psum(v, "i")), axis_name="i")
  np.testing.assert_allclose(np.asarray(f(x)), x / x.sum(0), rtol=1e-5)
  # the same name bound twice: the innermost vmap wins
  g = ember.vmap(ember.vmap(lambda v: lax.axis_index("i"), axis_name="i"), axis_name="i")
  np.testing.assert_array_equal(np.asarray(g(x)), np.tile(np.arange(4), (3, 1)))


def test_collective_errors():
  with pytest.raises(NameError, match=r"^unbound axis name: i\. Collectives such as psum must "
                                      r"run inside a function mapped with `vmap\(\.\.\., "
                                      r"axis_name='i'\)`"):
    lax.psum(1.0, "i")
  with pytest.raises(NameError, match="Found an unbound axis name: i"):
    ember.jit(lambda v: lax.psum(v, "i"))(1.0)
  with pytest.raises(NameError, match="unbound axis name: j"):
    ember.vmap(lambda v: lax.pmax(v, "j"), axis_name="i")(data((3,)))
  with pytest.raises(NameError, match="unbound axis name: k. Collectives such as axis_index"):
    ember.vmap(lambda v: lax.axis_index("k"), axis_name="i")(data((3,)))


# --- jnp functions built on vmap ------------------------------------------------------------

def test_vectorize():
  mv = jnp.vectorize(lambda m, v: m @ v, signature="(n,k),(k)->(n)")
  m, v = data((5, 2, 3)), data((4, 1, 3), seed=1)
  out = mv(m, v)
  np.testing.assert_allclose(np.asarray(out), np.einsum("bnk,abk->abn", m, v), rtol=1e-5)
  add = jnp.vectorize(lambda a, b: a + 2 * b)
  out = add(data((3, 1)), data((4,), seed=1))
  np.testing.assert_allclose(np.asarray(out), data((3, 1)) + 2 * data((4,), seed=1), rtol=1e-6)
  f = jnp.vectorize(lambda a, p: a ** p, excluded={1})
  np.testing.assert_allclose(np.asarray(f(data((2, 3)), 2)), data((2, 3)) ** 2, rtol=1e-6)
  two = jnp.vectorize(lambda a: (a.sum(), a[0]), signature="(n)->(),()")
  s, first = two(data((4, 3)))
  np.testing.assert_allclose(np.asarray(s), data((4, 3)).sum(1), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(first), data((4, 3))[:, 0], rtol=1e-6)
  # keyword arguments pass through unmapped (JAX 0.12 drops them here)
  out = jnp.vectorize(lambda a, b=1.0: a * b)(np.ones(3, f32), b=5.0)
  np.testing.assert_array_equal(np.asarray(out), [5.0, 5.0, 5.0])
  out = jnp.fromfunction(lambda i, j, k=0: i + j + k, (2, 2), k=3)
  np.testing.assert_array_equal(np.asarray(out), [[3.0, 4.0], [4.0, 5.0]])
  with pytest.raises(ValueError, match="inconsistent size for core dimension 'k'"):
    mv(data((2, 3)), data((4,)))
  with pytest.raises(ValueError, match="not a valid gufunc signature"):
    jnp.vectorize(lambda a: a, signature="(n->")(data((3,)))
  with pytest.raises(ValueError, match="output shape .* does not match core dimensions"):
    jnp.vectorize(lambda a: a, signature="(n)->()")(data((3,)))


def test_apply_along_and_over_axes_fromfunction():
  x = data((2, 3, 4))
  for axis in (0, 1, -1):
    f = lambda v: v.sum() * v[0]
    np.testing.assert_allclose(np.asarray(jnp.apply_along_axis(f, axis, x)),
                               np.apply_along_axis(f, axis, x), rtol=1e-5)
  g = lambda v: jnp.stack([v.min(), v.max()])
  np.testing.assert_allclose(np.asarray(jnp.apply_along_axis(g, 1, x)),
                             np.apply_along_axis(lambda v: np.stack([v.min(), v.max()]), 1, x))
  np.testing.assert_allclose(np.asarray(jnp.apply_over_axes(jnp.sum, x, [0, 2])),
                             np.apply_over_axes(np.sum, x, [0, 2]), rtol=1e-5)
  out = jnp.fromfunction(lambda i, j: i * 10 + j, (3, 4))
  np.testing.assert_array_equal(np.asarray(out), np.fromfunction(lambda i, j: i * 10 + j, (3, 4)))
  assert out.dtype == f32
  out = jnp.fromfunction(lambda i, j: i - j, (2, 2), dtype=np.int32)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(np.asarray(out), [[0, -1], [1, 0]])
  with pytest.raises(ValueError, match="function is not returning an array of the correct"):
    jnp.apply_over_axes(lambda a, ax: a.sum(), x, [0])


# --- errors -------------------------------------------------------------------------------

def test_errors():
  x, y = data((3, 4)), data((5,))
  with pytest.raises(ValueError, match=(
      r"vmap got inconsistent sizes for array axes to be mapped:\n"
      r"  \* one axis had size 3: axis 0 of argument a of type float32\[3,4\];\n"
      r"  \* one axis had size 5: axis 0 of argument b of type float32\[5\]$")):
    ember.vmap(lambda a, b: a + b.sum())(x, y)
  with pytest.raises(ValueError, match=r"the `axis_size` argument was 4;\n  \* one axis had "
                                       r"size 3: axis 0 of argument a of type float32\[3,4\]"):
    ember.vmap(lambda a: a, axis_size=4)(x)
  with pytest.raises(ValueError, match=r"axis 0 of argument a\['p'\] of type float32\[3,4\]"):
    ember.vmap(lambda a, b: a)({"p": x, "q": np.ones(2)}, np.ones((4, 5)))
  with pytest.raises(ValueError, match=r"vmap in_axes specification must be a tree prefix "):
    ember.vmap(lambda a, b: a, in_axes=(0, (0, 0)))(x, y)
  with pytest.raises(ValueError, match=r"but got len\(in_axes\)=3, len\(args\)=2\."):
    ember.vmap(lambda a, b: a, in_axes=(0, 0, 0))(x, y)
  with pytest.raises(TypeError, match=r"vmap in_axes must be an int, None, or \(nested\) "
                                      r"container with those types as leaves, but got \(0.5,\)"):
    ember.vmap(lambda a: a, in_axes=[0.5])
  with pytest.raises(TypeError, match="vmap in_axes must be an int, None, or a tuple"):
    ember.vmap(lambda a: a, in_axes="a")
  with pytest.raises(TypeError, match="vmap out_axes must be an int, None, or"):
    ember.vmap(lambda a: a, out_axes="a")
  with pytest.raises(ValueError, match=r"along axis 2, which implies that its rank should be "
                                       r"at least 3, but is only 2 \(its shape is \(3, 4\)\)"):
    ember.vmap(lambda a: a, in_axes=2)(x)
  with pytest.raises(ValueError, match="along axis -3, .* at least 3"):
    ember.vmap(lambda a: a, in_axes=-3)(x)
  with pytest.raises(ValueError, match="must have at least one non-None value in in_axes"):
    ember.vmap(lambda a: a, in_axes=None)(x)
  with pytest.raises(ValueError, match="must be passed at least one argument containing an "
                                       "array or axis_size must be specified"):
    ember.vmap(lambda: 1.0)()
  with pytest.raises(ValueError, match=r"at vmap out_axes, got axis spec None but output was "
                                       r"batched on axis 0"):
    ember.vmap(lambda a: a, out_axes=None)(x)
  with pytest.raises(ValueError, match=r"at vmap out_axes\[1\], got axis spec None"):
    ember.vmap(lambda a: (a, a), out_axes=(0, None))(x)
  with pytest.raises(ValueError, match=r"vmap has mapped output \(axis_name=i\) but out_axes "
                                       "is None"):
    ember.vmap(lambda a: a, out_axes=None, axis_name="i")(x)
  with pytest.raises(ValueError, match="axis 3 is out of bounds for array of dimension 2"):
    ember.vmap(lambda a: a, out_axes=3)(x)
  with pytest.raises(ValueError, match=r"rank should be at least 1, but is only 0"):
    ember.vmap(lambda a: a)(1.0)
  with pytest.raises(TypeError, match="Argument 's' of type <class 'str'> is not a valid"):
    ember.vmap(lambda a: a)("s")
  with pytest.raises(TypeError, match="Output from batched function 's' with type <class "
                                      "'str'> is not a valid JAX type"):
    ember.vmap(lambda a: "s")(x)
  with pytest.raises(TypeError, match="Expected a callable value, got 3"):
    ember.vmap(3)
  # a shape error inside the batched function names the per-example shapes
  with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                      r"\(3,\), \(4,\)"):
    ember.vmap(lambda a, b: lax.add(a, b), in_axes=(1, None))(x, np.ones(4, f32))


def test_spmd_axis_name_is_accepted():
  out = ember.vmap(lambda a: a * 2, spmd_axis_name="x")(data((3,)))
  np.testing.assert_allclose(np.asarray(out), 2 * data((3,)))


@ember.tree_util.register_pytree_node_class
class _ConvertingBox:
  """A pytree whose unflatten converts its child with jnp.asarray (as many libraries' do)."""
  def __init__(self, x):
    self.x = jnp.asarray(x)

  def tree_flatten(self):
    return (self.x,), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children)


def test_vmap_over_a_pytree_whose_unflatten_converts_its_children():
  xs = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  out = ember.vmap(lambda b, c: _ConvertingBox(b.x * c), in_axes=(0, None))(
      _ConvertingBox(xs), 2.0)
  np.testing.assert_array_equal(np.asarray(out.x), xs * 2)
  g = ember.vmap(ember.grad(lambda b: (b.x ** 2).sum()))(_ConvertingBox(xs))
  np.testing.assert_allclose(np.asarray(g.x), 2 * xs, rtol=1e-6)


def test_vmap_in_axes_prefix_must_match_dict_keys():
  with pytest.raises(ValueError, match=r"the specification \({'a': 0},\) does not match the "
                     r"structure of the arguments PyTreeDef\(\({'b': \*},\)\)"):
    ember.vmap(lambda a: a, in_axes=({"a": 0},))({"b": jnp.ones(2)})

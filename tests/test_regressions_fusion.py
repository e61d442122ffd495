"""Regressions (issue 15, "never a wrong answer") in the optimizing passes and the CPU backend
around fusion: dots whose transposes are absorbed or swapped, dots fused with consumers,
concatenates of empty operands, scans feeding dots under vmap(grad). Each case runs eager
and under jit and is compared with NumPy in float64 (or the reference interpreter)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags
from ember._src.base.config import config

RTOL = ATOL = 2e-5     # float32 results against float64 NumPy


def _both(fn, *args):
  """(eager result, jitted result) of fn(*args), as NumPy arrays."""
  return np.asarray(fn(*args)), np.asarray(ember.jit(fn)(*args))


def _rand(rng, shape):
  return rng.standard_normal(shape).astype(np.float32)


# --------------------------------------------------------------------------------------
# 1. transposes swapped/absorbed into dots without contracting dims
# --------------------------------------------------------------------------------------

EINSUMS = [
    ("ab,dc->cd", (2, 3), (4, 5)),     # sum(p) * q.T: a dot of a scalar and a matrix
    ("dc,ab->cd", (4, 5), (2, 3)),     # the matrix on the lhs
    ("ab,dc->dc", (2, 3), (4, 5)),
    (",dc->cd", (), (4, 5)),
    ("dc,->cd", (4, 5), ()),
    ("a,b->ba", (3,), (4,)),           # outer product, transposed
    ("a,b->ab", (3,), (4,)),
    ("ab,c->cab", (2, 3), (4,)),
    ("ab,c->bca", (2, 3), (4,)),
    ("ab,cd->dcba", (2, 3), (4, 5)),
    ("ab,cd->cadb", (2, 3), (4, 5)),
    ("ab,bc->ca", (3, 4), (4, 5)),     # contraction, output transposed
    ("ba,bc->ca", (4, 3), (4, 5)),
    ("ab,cb->ca", (3, 4), (5, 4)),
    ("xab,xcd->xdb", (2, 3, 4), (2, 5, 6)),   # batch dims, no contraction
    ("xab,xbc->xca", (2, 3, 4), (2, 4, 5)),   # batch dims, contraction, transposed
    ("xab,xbc->cxa", (2, 3, 4), (2, 4, 5)),
    ("bxa,xbc->cax", (4, 2, 3), (2, 4, 5)),
    ("a,->a", (5,), ()),
    (",a->a", (), (5,)),
    (",->", (), ()),
]


@pytest.mark.parametrize("spec,ls,rs", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum_transposed_layouts(spec, ls, rs):
  rng = np.random.default_rng(0)
  p, q = _rand(rng, ls), _rand(rng, rs)
  want = np.einsum(spec, p.astype(np.float64), q.astype(np.float64))
  for got in _both(lambda p, q: jnp.einsum(spec, p, q), p, q):
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


DOT_GENERALS = [   # (lhs shape, rhs shape, dimension numbers, transpose of the dot's output)
    ((), (4, 5), (((), ()), ((), ())), (1, 0)),
    ((4, 5), (), (((), ()), ((), ())), (1, 0)),
    ((4, 5), (3,), (((), ()), ((), ())), (2, 0, 1)),
    ((4,), (3, 5), (((), ()), ((), ())), (2, 1, 0)),
    ((4,), (5,), (((), ()), ((), ())), (1, 0)),
    ((4, 3), (3,), (((1,), (0,)), ((), ())), (0,)),
    ((3, 4), (3, 5), (((0,), (0,)), ((), ())), (1, 0)),
    ((2, 3, 4), (2, 4), (((2,), (1,)), ((0,), (0,))), (1, 0)),
    ((2, 3, 4), (2, 5), (((), ()), ((0,), (0,))), (3, 0, 2, 1)),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), (0, 2, 1)),
]


@pytest.mark.parametrize("ls,rs,dn,perm", DOT_GENERALS)
def test_dot_general_then_transpose(ls, rs, dn, perm):
  rng = np.random.default_rng(1)
  p, q = _rand(rng, ls), _rand(rng, rs)
  (lc, rc), (lb, rb) = dn
  # NumPy: batch dims first, then the lhs free dims, then the rhs free dims
  lf = [d for d in range(len(ls)) if d not in lc + lb]
  rf = [d for d in range(len(rs)) if d not in rc + rb]
  letters = iter("abcdefghijklmnop")
  lsub, rsub = [None] * len(ls), [None] * len(rs)
  for l, r in zip(lb, rb):
    lsub[l] = rsub[r] = next(letters)
  for l, r in zip(lc, rc):
    lsub[l] = rsub[r] = next(letters)
  for d in lf:
    lsub[d] = next(letters)
  for d in rf:
    rsub[d] = next(letters)
  out = [lsub[d] for d in lb] + [lsub[d] for d in lf] + [rsub[d] for d in rf]
  want = np.einsum(f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}",
                   p.astype(np.float64), q.astype(np.float64)).transpose(perm)
  f = lambda p, q: jnp.transpose(lax.dot_general(p, q, dn), perm) * 2.0
  for got in _both(f, p, q):
    np.testing.assert_allclose(got, 2 * want, rtol=RTOL, atol=ATOL)


def test_outer_product_transposed_feeds_another_dot():
  rng = np.random.default_rng(2)
  s, q, w = _rand(rng, ()), _rand(rng, (4, 5)), _rand(rng, (4, 3))
  want = (float(s) * q.astype(np.float64)).T @ w
  for got in _both(lambda s, q, w: jnp.dot(jnp.einsum(",dc->cd", s, q), w), s, q, w):
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


# --------------------------------------------------------------------------------------
# 2. dots with scalar operands fused with elementwise consumers (dot_epilogue)
# --------------------------------------------------------------------------------------

SCALAR_DOTS = [
    ("a,->a", (6,), ()),
    (",a->a", (), (6,)),
    ("ab,->ab", (3, 4), ()),
    ("ab,->ba", (3, 4), ()),
    (",ab->ab", (), (3, 4)),
    (",->", (), ()),
]
CONSUMERS = {
    "eq": lambda d: d == 0.5,                       # bool output: the dot's value off-place
    "lt": lambda d: d < 0.0,
    "int": lambda d: (d * 4).astype(jnp.int32),
    "f64ish": lambda d: jnp.tanh(d) + 1.0,          # same dtype: computed in place
}


@pytest.mark.parametrize("consumer", sorted(CONSUMERS))
@pytest.mark.parametrize("spec,ls,rs", SCALAR_DOTS, ids=[e[0] for e in SCALAR_DOTS])
def test_scalar_dot_fused_with_consumer(spec, ls, rs, consumer):
  rng = np.random.default_rng(3)
  # values that make `== 0.5` true somewhere: halves times one
  p = (rng.integers(-2, 3, ls) / 2).astype(np.float32)
  q = np.ones(rs, np.float32) if rs == () else (rng.integers(-2, 3, rs) / 2).astype(np.float32)
  c = CONSUMERS[consumer]
  want = np.asarray(c(np.einsum(spec, p.astype(np.float64), q.astype(np.float64))))
  for got in _both(lambda p, q: c(jnp.einsum(spec, p, q)), p, q):
    assert got.shape == want.shape
    if want.dtype.kind == "f":
      np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    else:
      np.testing.assert_array_equal(got, want)


def test_scalar_dot_compare_issue_repro():
  a = np.array([1.0, 0.5, -0.5, 0.25], np.float32)
  s = np.float32(1.0)
  for got in _both(lambda a, s: jnp.einsum("a,->a", a, s) == 0.5, a, s):
    np.testing.assert_array_equal(got, [False, True, False, False])


EMPTY_DOTS = [   # dots with an empty output fused with a consumer; the first runs on BLAS
    ((2, 1, 2), (0, 2, 3), (((0,), (1,)), ((), ()))),    # (rhs free dims not flattenable)
    ((3, 4), (0, 3, 2), (((0,), (1,)), ((), ()))),
    ((3, 4, 5), (4, 0, 6), (((1,), (0,)), ((), ()))),
    ((0, 3), (3, 4), (((1,), (0,)), ((), ()))),
    ((2, 0, 3), (2, 3, 4), (((2,), (1,)), ((0,), (0,)))),
]


@pytest.mark.parametrize("consumer", ["f64ish", "eq"])
@pytest.mark.parametrize("ls,rs,dn", EMPTY_DOTS)
def test_empty_dot_fused_with_consumer(ls, rs, dn, consumer):
  a, b = np.ones(ls, np.float32), np.ones(rs, np.float32)
  c = CONSUMERS[consumer]
  want = np.asarray(c(np.asarray(lax.dot_general(a, b, dn))))
  for got in _both(lambda a, b: c(lax.dot_general(a, b, dn)), a, b):
    assert got.shape == want.shape and got.dtype == want.dtype and got.size == 0


# --------------------------------------------------------------------------------------
# 4. concatenate with empty operands
# --------------------------------------------------------------------------------------

def _concat_cases():
  for axis, base in ((0, (3, 2)), (1, (2, 3)), (2, (2, 3, 4)), (-1, (2, 3))):
    ax = axis % len(base)
    sizes_list = [(0, 2, 3), (2, 0, 3), (2, 3, 0), (0, 0, 2), (0, 0, 0), (0,), (0, 2)]
    for sizes in sizes_list:
      shapes = [tuple(n if d == ax else s for d, s in enumerate(base)) for n in sizes]
      yield axis, shapes


CONCATS = list(_concat_cases())


@pytest.mark.parametrize("disable", [(), ("algsimp",)])   # algsimp drops empty operands
@pytest.mark.parametrize("axis,shapes", CONCATS)
def test_concatenate_empty_operands(axis, shapes, disable):
  rng = np.random.default_rng(4)
  xs = [_rand(rng, s) for s in shapes]
  # operands computed in the kernel too, so the concatenate fuses with its producers
  f = lambda *xs: jnp.concatenate([jnp.log(jnp.abs(x) + 0.5) if k % 2 else x
                                   for k, x in enumerate(xs)], axis=axis) * 3.0
  want = 3.0 * np.concatenate([np.log(np.abs(x.astype(np.float64)) + 0.5) if k % 2 else x
                               for k, x in enumerate(xs)], axis=axis)
  with flags.override(disable_passes=frozenset(disable)):
    for got in _both(f, *xs):
      assert got.shape == want.shape
      np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("shape", [(5, 3, 0), (0,), (0, 4), (2, 0, 3)])
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_concatenate_all_empty_issue_repro(shape, axis):
  x = np.zeros(shape, np.float32)
  f = lambda x: jnp.concatenate([x, jnp.log(jnp.abs(x) + .5)], axis=axis)
  want = np.concatenate([x, np.log(np.abs(x) + .5)], axis=axis)
  for got in _both(f, x):
    assert got.shape == want.shape and got.dtype == np.float32


def test_concatenate_empty_operands_other_dim_empty():
  # the output is empty through another dim; the concatenated dim is not
  x, y = np.zeros((0, 2), np.float32), np.zeros((0, 3), np.float32)
  for got in _both(lambda x, y: jnp.concatenate([jnp.sin(x), y], axis=1), x, y):
    assert got.shape == (0, 5)


# --------------------------------------------------------------------------------------
# 3. jit(vmap(grad(f))) of a scan followed by a dot
# --------------------------------------------------------------------------------------

def _scan_dot_fns(W, V):
  """Losses of x [T, ...]: W multiplies the scan's outputs, V has their shape."""
  scan_ys = lambda x: lax.scan(lambda c, a: (c * a + jnp.sin(a), c), x[0], x)[1]
  # the full contraction's scalar cotangent times V comes back through a transpose: the
  # dot of a scalar and a matrix that fusion's transpose swap got wrong (bug 1's cause)
  yield lambda x: jnp.einsum("td,dt->", scan_ys(x), V.T) if V.ndim == 2 else \
      jnp.einsum("t,t->", scan_ys(x), V)
  yield lambda x: jnp.sum(jnp.dot(scan_ys(x), W))
  yield lambda x: jnp.sum(jnp.tanh(jnp.dot(scan_ys(x), W)))
  yield lambda x: jnp.sum(jnp.dot(scan_ys(x).T, scan_ys(x)) * 0.5)
  yield lambda x: jnp.sum(jnp.dot(lax.scan(lambda c, a: (jnp.cos(c) * a, c + a),
                                           x[0], x)[1], W) ** 2)


SCAN_SHAPES = [((4,), (4,)), ((4,), (4, 3)), ((4, 3), (3, 2)), ((5, 3), (3,)),
               ((3, 2), (2, 4)), ((6, 1), (1, 3)), ((4, 3), (3, 3)), ((6, 6), (6, 6))]


def _reference(fn, *args):
  with config._override("ember_jit_backend", "interpreter"):
    return np.asarray(ember.jit(fn)(*args))


@pytest.mark.parametrize("xs,ws", SCAN_SHAPES)
@pytest.mark.parametrize("disable", [(), ("fusion",)])
def test_vmap_grad_scan_then_dot(xs, ws, disable):
  rng = np.random.default_rng(5)
  W, V = _rand(rng, ws), _rand(rng, xs)
  X = _rand(rng, (3,) + xs)
  with flags.override(disable_passes=frozenset(disable)):
    for f in _scan_dot_fns(W, V):
      for g in (ember.vmap(ember.grad(f)), ember.grad(lambda x: f(x[0]))):
        want = _reference(g, X)
        for got in _both(g, X):
          np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

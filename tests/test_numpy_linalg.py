"""ember.numpy products, einsum and ember.numpy.linalg vs NumPy (float64 references), eager
and under ember.jit. Result dtypes, weak types and jaxprs were checked against JAX 0.12."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp

RNG = np.random.RandomState(1)


def rand(*shape, dtype=np.float32):
  if np.dtype(dtype).kind in "iu":
    return RNG.randint(-3, 4, size=shape).astype(dtype)
  if np.dtype(dtype) == np.bool_:
    return RNG.rand(*shape) > 0.5
  return np.asarray(RNG.randn(*shape)).astype(dtype)


def both(f, *args):
  return [f(*args), ember.jit(f)(*args)]


def check(out, expected, dtype, rtol=1e-5, weak=False):
  assert out.dtype == np.dtype(dtype), (out.dtype, dtype)
  assert out.weak_type == weak
  assert out.shape == np.shape(expected), (out.shape, np.shape(expected))
  # float32 products of K terms: the rounding error grows like sqrt(K) * eps
  np.testing.assert_allclose(np.asarray(out, np.float64), np.asarray(expected, np.float64),
                             rtol=rtol, atol=rtol)


def f64(*xs):
  return [np.asarray(x, np.float64) for x in xs]


# --- dot / matmul / friends --------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (7, 3, 4)),
    ((1, 2, 3), (6, 3, 2)), ((2, 1, 2, 3), (1, 1, 3, 2)), ((0, 2, 3), (3, 4)), ((2, 0), (0, 3)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_shapes(sa, sb):
  a, b = rand(*sa), rand(*sb)
  expected = np.matmul(*f64(a, b))
  for out in both(jnp.matmul, a, b):
    check(out, expected, "float32")
  for out in both(lambda a, b: a @ b, jnp.asarray(a), jnp.asarray(b)):
    check(out, expected, "float32")


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float16", "complex64"])
@pytest.mark.parametrize("sa,sb", [((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 3)),
                                   ((5, 7), (7, 3)), ((300, 301), (301,))])
def test_matmul_fast_path_matches_general_path(sa, sb, dtype):
  """`a @ b` of two Arrays of one dtype (matmul's fast path: one dot_general bound directly)
  gives what the general path gives (preferred_element_type takes it): bits, dtype, weak
  type; weakly typed or mixed operands take the general path."""
  a, b = (jnp.asarray(rand(*s, dtype=dtype if dtype != "complex64" else np.float32))
          .astype(dtype) for s in (sa, sb))
  fast, general = a @ b, jnp.matmul(a, b, preferred_element_type=dtype)
  assert fast.dtype == general.dtype == np.dtype(dtype) and not fast.weak_type
  np.testing.assert_array_equal(np.asarray(fast), np.asarray(general))
  weak = ember.lax.broadcast(jnp.asarray(2.0), sa[-1:])   # a weakly typed float vector
  assert weak.weak_type
  if dtype in ("float16", "complex64"):    # the weak operand takes the strong one's dtype
    out = a @ weak
    assert out.dtype == np.dtype(dtype) and not out.weak_type
    a64, w64 = np.asarray(a, np.complex128), np.full(sa[-1:], 2.0)
    bound = (2e-3 if dtype == "float16" else 1e-5) * (np.abs(a64) @ w64)   # cancellation
    assert np.all(np.abs(np.asarray(out, np.complex128) - a64 @ w64) <= bound)


DTYPE_CASES = [  # (a dtype, b dtype, result dtype)
    ("float32", "float32", "float32"), ("int32", "int32", "int32"), ("bool", "bool", "bool"),
    ("float32", "int32", "float32"), ("int8", "int8", "int8"), ("int8", "int32", "int32"),
    ("float16", "float16", "float16"), ("float16", "float32", "float32"),
    ("complex64", "float32", "complex64"),
]


@pytest.mark.parametrize("da,db,dout", DTYPE_CASES)
def test_product_dtypes(da, db, dout):
  a = rand(3, 4, dtype=da if da != "complex64" else np.float32)
  if da == "complex64":
    a = (a + 1j * rand(3, 4)).astype(np.complex64)
  b = rand(4, 2, dtype=db)
  rtol = 2e-3 if "float16" in (da, db) and dout == "float16" else 1e-5
  exp = np.matmul(a.astype(np.complex128), b.astype(np.complex128))
  if dout == "bool":
    exp = exp != 0
  elif np.dtype(dout).kind in "iu":  # integer products wrap like the dtype
    exp = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dout)
  for fn in (jnp.dot, jnp.matmul, lambda a, b: jnp.einsum("ij,jk->ik", a, b),
             lambda a, b: jnp.tensordot(a, b, 1)):
    for out in both(fn, a, b):
      assert out.dtype == np.dtype(dout), (fn, out.dtype)
      np.testing.assert_allclose(np.asarray(out), exp, rtol=rtol, atol=rtol)


def test_weak_types():
  w = ember.lax.broadcast(2.0, (2, 3))
  s = jnp.ones((3, 2))
  for fn in (lambda x: jnp.dot(x, x.T), lambda x: x @ x.T, lambda x: jnp.einsum("ij,kj", x, x),
             lambda x: jnp.tensordot(x, x.T, 1), lambda x: jnp.vdot(x, x),
             lambda x: jnp.inner(x, x),
             lambda x: jnp.kron(x, x), lambda x: jnp.vecdot(x, x)):
    for out in both(fn, w):
      assert out.weak_type and out.dtype == np.float32
  assert not jnp.dot(w, s).weak_type
  assert jnp.dot(2.0, 3.0).weak_type
  assert not jnp.cross(np.ones(3), w[0]).weak_type  # JAX stacks the components: strong


def test_dot_rules():
  a, b, c = rand(2, 3, 4), rand(5, 4, 6), rand(4)
  for out in both(jnp.dot, a, b):
    check(out, np.dot(*f64(a, b)), "float32")
  for out in both(jnp.dot, a, c):
    check(out, np.dot(*f64(a, c)), "float32")
  for out in both(jnp.dot, a, 2.5):
    check(out, a * 2.5, "float32")
  check(jnp.dot(c, c), np.dot(*f64(c, c)), "float32")
  check(jnp.dot(np.int8(3), np.int8(4)), 12, "int8")


def test_vdot_inner_outer_vecdot():
  a, b = rand(2, 3), rand(2, 3)
  for out in both(jnp.vdot, a, b):
    check(out, np.vdot(*f64(a, b)), "float32")
  z = (rand(4) + 1j * rand(4)).astype(np.complex64)
  out = jnp.vdot(z, z)
  assert out.dtype == np.complex64
  np.testing.assert_allclose(np.asarray(out), np.vdot(z, z), rtol=1e-5)
  for out in both(jnp.inner, a, b):
    check(out, np.inner(*f64(a, b)), "float32")
  check(jnp.inner(a, 2.0), a * 2.0, "float32")
  x1, x2 = rand(4), rand(5)
  for out in both(jnp.outer, a, x1):  # N-D inputs are flattened
    check(out, np.outer(*f64(a, x1)), "float32")
  for out in both(jnp.outer, x1, x2):
    check(out, np.outer(*f64(x1, x2)), "float32")
  x, y = rand(2, 3, 4), rand(3, 4)
  for out in both(lambda x, y: jnp.vecdot(x, y), x, y):
    check(out, np.sum(x.astype(np.float64) * y, -1), "float32")
  for out in both(lambda x, y: jnp.vecdot(x, y, axis=0), rand(3, 5), rand(3, 5)):
    assert out.shape == (5,)
  zz = (rand(2, 3) + 1j * rand(2, 3)).astype(np.complex64)
  np.testing.assert_allclose(np.asarray(jnp.vecdot(zz, zz)), np.sum(np.conj(zz) * zz, -1),
                             rtol=1e-5)


def test_matvec_vecmat():
  m, v = rand(4, 2, 3), rand(3)
  for out in both(jnp.matvec, m, v):
    check(out, np.einsum("bij,j->bi", *f64(m, v)), "float32")
  for out in both(jnp.vecmat, rand(2), rand(5, 2, 3)):
    assert out.shape == (5, 3)
  u, m2 = rand(5, 2), rand(5, 2, 3)
  check(jnp.vecmat(u, m2), np.einsum("bi,bij->bj", *f64(u, m2)), "float32")
  with pytest.raises(ValueError, match=r"matvec: the contracted axes must match, got "
                                       r"operands of shapes \(2, 3\) and \(2,\)"):
    jnp.matvec(rand(2, 3), rand(2))


def test_tensordot():
  a, b = rand(2, 3, 4), rand(4, 3, 5)
  for axes in (1, ([1, 2], [1, 0]), (2, 0), ((2,), (0,)), 0):
    expected = np.tensordot(*f64(a, b), axes=axes)
    for out in both(lambda a, b: jnp.tensordot(a, b, axes), a, b):
      check(out, expected, "float32")
  c, d = rand(3, 4), rand(3, 4)
  check(jnp.tensordot(c, d), np.tensordot(*f64(c, d)), "float32")  # default axes=2
  ci, di = rand(3, 4, dtype=np.int32), rand(4, 2, dtype=np.int8)
  check(jnp.tensordot(ci, di, 1), np.tensordot(ci, di.astype(np.int32), 1), "int32")


def test_kron_cross():
  for sa, sb in (((2, 3), (3, 2)), ((2,), (2, 3)), ((2, 2, 1), (3,))):
    a, b = rand(*sa), rand(*sb)
    for out in both(jnp.kron, a, b):
      check(out, np.kron(*f64(a, b)), "float32")
  ki, kj = rand(2, dtype=np.int32), rand(2, 2, dtype=np.int8)
  check(jnp.kron(ki, kj), np.kron(ki, kj.astype(np.int32)), "int32")
  a, b = rand(4, 3), rand(4, 3)
  for out in both(jnp.cross, a, b):
    check(out, np.cross(*f64(a, b)), "float32")
  a2, b2 = rand(3, 5), rand(2, 3, 1)
  for out in both(lambda a, b: jnp.cross(a, b, axisa=0, axisb=1, axisc=0), a2, b2):
    check(out, np.cross(*f64(a2, b2), axisa=0, axisb=1, axisc=0), "float32")
  with pytest.raises(ValueError, match="Dimension must be 3 for cross product"):
    jnp.cross(np.ones(2), np.ones(2))


def test_product_errors():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(TypeError, match=r"dot_general requires contracting dimensions to have "
                                      r"the same shape, got \(3,\) and \(2,\): matmul got "
                                      r"operands of shapes \(2, 3\) and \(2, 3\)"):
    jnp.matmul(x, x)
  with pytest.raises(TypeError, match=r"matmul got operands of shapes \(3,\) and \(4,\)"):
    jnp.matmul(np.ones(3), np.ones(4))
  with pytest.raises(TypeError, match=r"dot got operands of shapes \(2, 3\) and \(2, 3\)"):
    ember.jit(jnp.dot)(x, x)
  with pytest.raises(ValueError, match="matmul input operand 1 must have ndim at least 1, "
                                       "but it has ndim 0"):
    jnp.matmul(x, 2.0)
  with pytest.raises(ValueError, match=r"Incompatible types for matmul arguments: "
                                       r"float32\[5,2,3\] and float32\[4,3,4\]"):
    jnp.matmul(np.ones((5, 2, 3)), np.ones((4, 3, 4)))
  with pytest.raises(TypeError, match=r"Number of tensordot axes \(axes 3\) exceeds input "
                                      r"ranks"):
    jnp.tensordot(x, x, 3)
  with pytest.raises(TypeError, match="tensordot requires axes lists to have equal length"):
    jnp.tensordot(x, x, ((0, 1), (0,)))
  with pytest.raises(TypeError, match=r"tensordot: contracting axis 1 of a \(shape \(2, 3\)\) "
                                      r"has size 3"):
    jnp.tensordot(x, x, 1)
  with pytest.raises(ValueError, match=r"axes must match; got shapes \(3,\) and \(4,\)"):
    jnp.vecdot(np.ones(3), np.ones(4))


# --- einsum -----------------------------------------------------------------------------------

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),                 # implicit output
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ii", [(3, 3)]),                            # trace
    ("ii->i", [(3, 3)]),                         # diagonal
    ("iij->j", [(3, 3, 2)]),
    ("iji->ij", [(2, 3, 2)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk", [(1, 3, 4), (6, 4, 5)]),     # broadcasting ellipsis
    ("...i,...i->...", [(3, 4), (2, 1, 4)]),
    ("i...->...", [(3, 2, 2)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,cd,bd->ac", [(2, 3), (4, 5), (3, 5)]),
    ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,ij->i", [(2, 3), (2, 3)]),
    ("i,i,i->i", [(4,), (4,), (4,)]),
    ("ij,kl->ijkl", [(2, 2), (2, 3)]),
    ("ii,jj->ij", [(2, 2), (3, 3)]),
    ("i,jj->", [(2,), (3, 3)]),
    ("ijk", [(2, 3, 4)]),
    ("kji", [(2, 3, 4)]),
    ("ab,b->a", [(3, 0), (0,)]),                 # empty contraction: zeros
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
]


@pytest.mark.parametrize("spec,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_vs_numpy(spec, shapes):
  ops = [rand(*s) for s in shapes]
  expected = np.einsum(spec, *f64(*ops))
  for out in both(lambda *xs: jnp.einsum(spec, *xs), *ops):
    check(out, expected, "float32", rtol=2e-5)
  for optimize in (False, True, "greedy"):
    check(jnp.einsum(spec, *ops, optimize=optimize), expected, "float32", rtol=2e-5)


def test_einsum_forms_and_dtypes():
  a, b = rand(2, 3), rand(3, 4)
  check(jnp.einsum(a, [0, 1], b, [1, 2], [0, 2]), np.einsum("ij,jk->ik", *f64(a, b)),
        "float32")
  b2 = rand(3, 2)
  check(jnp.einsum(a, [Ellipsis, 1], b2, [1, Ellipsis]),
        np.einsum(f64(a)[0], [Ellipsis, 1], f64(b2)[0], [1, Ellipsis]), "float32")
  check(jnp.einsum(" ij , jk -> ik ", a, b), np.einsum("ij,jk->ik", *f64(a, b)), "float32")
  i8 = np.array([[100, 100]], np.int8)
  check(jnp.einsum("ij,kj->ik", i8, i8, preferred_element_type=jnp.int32), [[20000]],
        "int32")
  ii, ff = rand(2, 3, dtype=np.int32), rand(2, 3)
  check(jnp.einsum("ij,kj->ik", ii, ff), np.einsum("ij,kj->ik", *f64(ii, ff)), "float32")
  bb = np.array([True, False, True])
  check(jnp.einsum("i,i->", bb, bb), True, "bool")
  check(jnp.einsum("i->", bb), True, "bool")
  check(jnp.einsum("i->", np.arange(4, dtype=np.int8)), 6, "int8")


def test_einsum_labels_are_any_characters():
  # JAX 0.12.1 (opt_einsum's parser) takes digits and symbols as labels; an implicit
  # output sorts them by code point ('1' before 'i'); flax's GQA attention writes '...kh1d'
  a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
  for fn in (jnp.einsum, ember.jit(jnp.einsum, static_argnums=0)):
    check(fn("i1,1j->ij", a, b), a @ b, "float32")
    check(fn("i#,#j", a, b), a @ b, "float32")
    check(fn("i1", a), a.T, "float32")
    check(fn("i1->i", a), a.sum(1), "float32")
    check(fn("i1,1j->ij1", a, b), np.einsum("ik,kj->ijk", a, b), "float32")
    q, k = np.ones((2, 5, 3, 2, 4)), np.ones((2, 6, 3, 1, 4))
    out = fn("...qhgd,...kh1d->...hgqk", q, k)
    assert out.shape == (2, 3, 2, 5, 6) and float(out.sum()) == 1440.0


def test_einsum_errors():
  x = np.ones((2, 3))
  with pytest.raises(ValueError, match="Size of label 'j' for operand 1"):
    jnp.einsum("ij,jk->ik", x, x)
  with pytest.raises(ValueError, match="Einstein sum subscript 'ijk' does not contain the "
                                       "correct number of indices for operand 0"):
    jnp.einsum("ijk->i", x)
  with pytest.raises(ValueError, match="Output character 'k' did not appear in the input"):
    jnp.einsum("ij->k", x)
  with pytest.raises(ValueError, match="Number of einsum subscripts, 2, must be equal to the "
                                       "number of operands, 1"):
    jnp.einsum("ij,jk->ik", x)
  with pytest.raises(ValueError, match="output subscript 'ii' repeats a character"):
    jnp.einsum("ij->ii", x)
  # JAX 0.12.1 (opt_einsum's parser): any character but ',', '.' and '->' is a label
  for spec in ("ij->i->j", "i-j->i", "i>j->i"):
    with pytest.raises(ValueError, match="Subscripts can only contain one '->'."):
      jnp.einsum(spec, x)
  with pytest.raises(ValueError, match="Output character ',' did not appear in the input"):
    jnp.einsum("ij->i,j", x)
  with pytest.raises(ValueError, match="invalid ellipsis"):
    jnp.einsum("i..j->i", x)


# --- jaxprs (checked against JAX 0.12) ------------------------------------------------------------

def test_staged_products_match_jax():
  assert str(ember.make_jaxpr(jnp.dot)(np.ones((2, 3), np.float32),
                                       np.ones((3, 4), np.int32))) == """\
{ lambda ; a:f32[2,3] b:i32[3,4]. let
    c:f32[2,4] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
  in (c,) }"""
  assert str(ember.make_jaxpr(jnp.matmul)(np.ones((5, 1, 2, 3), np.float32),
                                          np.ones((7, 3, 4), np.float32))) == """\
{ lambda ; a:f32[5,1,2,3] b:f32[7,3,4]. let
    c:f32[5,2,3] = squeeze[dimensions=(1,)] a
    d:f32[5,2,7,4] = dot_general[
      dimension_numbers=(([2], [1]), ([], []))
      preferred_element_type=float32
    ] c b
    e:f32[5,7,2,4] = transpose[permutation=(0, 2, 1, 3)] d
  in (e,) }"""
  assert str(ember.make_jaxpr(lambda a, b: jnp.einsum("bij,bkj->bik", a, b))(
      np.ones((4, 2, 3), np.float32), np.ones((4, 5, 3), np.float32))) == """\
{ lambda ; a:f32[4,2,3] b:f32[4,5,3]. let
    c:f32[4,2,5] = dot_general[
      dimension_numbers=(([2], [2]), ([0], [0]))
      preferred_element_type=float32
    ] a b
  in (c,) }"""
  names = [e.primitive.name for e in ember.make_jaxpr(
      lambda a, b, c: jnp.einsum("ij,jk,kl->il", a, b, c))(
          np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))).eqns]
  assert names == ["dot_general", "dot_general"]
  top = [(e.primitive.name, e.params.get("name")) for e in ember.make_jaxpr(jnp.kron)(
      np.ones(2), np.ones(2)).eqns]
  assert top == [("jit", "kron")]


# --- ember.numpy.linalg ---------------------------------------------------------------------------

NORM_CASES = [  # (ord, axis)
    (None, None), (None, 1), (None, (0, 2)), (1, -1), (3, 0), (0.5, 1), (np.inf, 2),
    (-np.inf, 1), (0, 1), (-2, 0), ("fro", (1, 2)), (1, (0, 1)), (-1, (2, 0)),
    (np.inf, (1, 0)), (-np.inf, (0, 2)), (None, (2, 1)),
]


@pytest.mark.parametrize("ord,axis", NORM_CASES)
def test_norm(ord, axis):
  x = rand(3, 4, 5)
  x_np = x.astype(np.float64)
  expected = np.linalg.norm(x_np, ord, axis)
  for keepdims in (False, True):
    exp = expected
    if keepdims:
      exp = np.expand_dims(expected, tuple(range(3)) if axis is None else axis)
    for out in both(lambda x: jnp.linalg.norm(x, ord, axis, keepdims), x):
      check(out, exp, "float32", rtol=2e-5)


def test_norm_variants():
  x = rand(2, 3, 4)
  x_np = x.astype(np.float64)
  check(jnp.linalg.vector_norm(x), np.linalg.norm(x_np.ravel()), "float32")
  check(jnp.linalg.vector_norm(x, axis=(0, 1), ord=1), np.sum(np.abs(x_np), (0, 1)),
        "float32")
  check(jnp.linalg.vector_norm(np.arange(-3, 3), ord=1), 9, "int32")  # ints stay ints
  check(jnp.linalg.vector_norm(np.arange(-3, 3)), np.sqrt(19), "float32")
  check(jnp.linalg.matrix_norm(x), np.linalg.norm(x_np, axis=(-2, -1)), "float32")
  check(jnp.linalg.matrix_norm(x, ord=1, keepdims=True),
        np.linalg.norm(x_np, 1, axis=(-2, -1), keepdims=True), "float32")
  check(jnp.linalg.norm(np.arange(6)), np.linalg.norm(np.arange(6)), "float32")
  z = (rand(3, 4) + 1j * rand(3, 4)).astype(np.complex64)
  check(jnp.linalg.norm(z), np.linalg.norm(z), "float32")
  check(jnp.linalg.norm(z, 1, axis=1), np.linalg.norm(z, 1, axis=1), "float32")
  check(jnp.linalg.norm(np.ones(0, np.float32), np.inf), 0.0, "float32")
  for ord in ("nuc", 2, -2):   # through the SVD (tests/test_linalg_decompositions.py)
    check(jnp.linalg.norm(x, ord, axis=(1, 2)), np.linalg.norm(x_np, ord, axis=(1, 2)),
          "float32")
  with pytest.raises(ValueError, match="Invalid order '3' for matrix norm"):
    jnp.linalg.norm(x, 3, axis=(1, 2))
  with pytest.raises(ValueError, match="Improper number of axes for norm"):
    jnp.linalg.norm(x, 2, axis=(0, 1, 2))
  with pytest.raises(ValueError, match="Improper number of axes for norm"):
    jnp.linalg.norm(x, 1)  # an ord with axis=None means all axes: a 3-D "matrix"
  check(jnp.linalg.norm(x[0], np.inf), np.linalg.norm(x_np[0], np.inf), "float32")
  with pytest.raises(ValueError, match="Invalid order 'inf' for vector norm.Use "
                                       "'jax.numpy.inf' instead."):
    jnp.linalg.vector_norm(x, ord="inf")


def test_linalg_namespace():
  x = rand(2, 3, 4)
  check(jnp.linalg.trace(x), np.trace(x.astype(np.float64), axis1=-2, axis2=-1), "float32")
  check(jnp.linalg.trace(x, offset=1, dtype=jnp.float16),
        np.trace(x.astype(np.float64), 1, -2, -1), "float16", rtol=2e-3)
  check(jnp.linalg.diagonal(x, offset=-1), np.diagonal(x, -1, -2, -1), "float32")
  check(jnp.linalg.matrix_transpose(x), np.swapaxes(x, -1, -2), "float32")
  m = rand(4, 2)
  check(jnp.linalg.matmul(x, m), np.matmul(*f64(x, m)), "float32")
  a, b = rand(3), rand(3)
  check(jnp.linalg.cross(a, b), np.cross(*f64(a, b)), "float32")
  check(jnp.linalg.outer(a, b), np.outer(*f64(a, b)), "float32")
  check(jnp.linalg.vecdot(x, x), np.sum(x.astype(np.float64) ** 2, -1), "float32")
  t = rand(3, 4)
  check(jnp.linalg.tensordot(x, t, axes=2), np.tensordot(*f64(x, t), 2), "float32")
  with pytest.raises(ValueError, match="matrix_transpose requires at least 2 dimensions"):
    jnp.linalg.matrix_transpose(np.ones(3))
  for name in ("norm", "vector_norm", "matrix_norm", "matmul", "tensordot", "vecdot", "outer",
               "trace", "diagonal", "cross", "matrix_transpose"):
    assert callable(getattr(jnp.linalg, name))

"""ember.numpy logic helpers: where (3- and 1-argument forms), isclose, allclose,
array_equal, array_equiv, iscomplex, isreal, isin.

EXPECTED and the printed jaxprs were produced with JAX 0.12 (x64 off and on). Each case runs
eagerly and under ember.jit; values are also compared with NumPy.
"""
import numpy as np
import pytest

import ember
import ember.numpy as jnp

X = np.ones(3, np.float32)
NAN, INF = float("nan"), float("inf")
nan = NAN

CASES = {
    "where_scalars": lambda: jnp.where(True, 1, 2.0),
    "where_int_cond": lambda: jnp.where(jnp.array([1, 0, 2]), 1, 2),
    "where_float_cond": lambda: jnp.where(jnp.array([0.0, -0.5, NAN]), 1.5, -1.5),
    "where_strong_weak": lambda: jnp.where(jnp.array([True, False]), jnp.ones(2, jnp.int8), 2),
    "where_promote": lambda: jnp.where(jnp.array([True, False]), jnp.ones(2, jnp.int8), jnp.zeros(2, jnp.float16)),
    "where_bool_int": lambda: jnp.where(jnp.array([True, False]), True, jnp.arange(2, dtype=jnp.uint8)),
    "where_broadcast3": lambda: jnp.where(jnp.arange(2).reshape(2, 1) > 0, jnp.arange(3.0), jnp.zeros((4, 1, 1))),
    "where_scalar_cond_array": lambda: jnp.where(False, jnp.arange(3), -jnp.arange(3)),
    "where_empty": lambda: jnp.where(jnp.zeros((0, 3)), 1.0, 2.0),
    "where_complex": lambda: jnp.where(jnp.array([True, False]), 1j, jnp.ones(2)),
    "where_f64": lambda: jnp.where(jnp.array([True, False]), np.float64(1.5), 2),
    "where_one_arg": lambda: jnp.where(jnp.array([0.0, 2.0, 0.0, 3.0])),
    "where_one_arg_size": lambda: jnp.where(jnp.array([[0, 1], [1, 0]]), size=3, fill_value=-1),
    "isclose_scalar": lambda: jnp.isclose(1.0, 1.0 + 1e-6),
    "isclose_specials": lambda: jnp.isclose(jnp.array([1.0, NAN, INF, -INF, 1e-9, 1.0]), jnp.array([1.0, NAN, INF, INF, 0.0, 1.1])),
    "isclose_equal_nan": lambda: jnp.isclose(jnp.array([1.0, NAN]), jnp.array([1.0, NAN]), equal_nan=True),
    "isclose_ints": lambda: jnp.isclose(jnp.arange(3), 1),
    "isclose_complex": lambda: jnp.isclose(jnp.array([1 + 1j, 1 + 2j]), 1 + 1j),
    "isclose_f16": lambda: jnp.isclose(jnp.ones(2, jnp.float16), 1.0001),
    "isclose_tols": lambda: jnp.isclose(jnp.array([1.0, 1.05, 1.2]), 1.0, rtol=0.0, atol=0.1),
    "isclose_bcast": lambda: jnp.isclose(jnp.arange(6.0).reshape(2, 3), jnp.array([0.0, 1.0, 0.0])),
    "allclose_true": lambda: jnp.allclose(jnp.ones(3), 1.0),
    "allclose_false": lambda: jnp.allclose(jnp.ones(3), 1.1),
    "allclose_ints": lambda: jnp.allclose(1, 1),
    "allclose_nan": lambda: jnp.allclose(jnp.array([1.0, NAN]), jnp.array([1.0, NAN]), equal_nan=True),
    "array_equal_true": lambda: jnp.array_equal(jnp.ones(3), jnp.ones(3)),
    "array_equal_shape": lambda: jnp.array_equal(jnp.ones(3), jnp.ones(2)),
    "array_equal_nan": lambda: jnp.array_equal(jnp.array([NAN]), jnp.array([NAN]), equal_nan=True),
    "array_equal_nan_false": lambda: jnp.array_equal(jnp.array([NAN]), jnp.array([NAN])),
    "array_equal_scalars": lambda: jnp.array_equal(1, 1.0),
    "array_equal_bcast": lambda: jnp.array_equal(jnp.ones((2, 3)), jnp.ones(3)),
    "array_equiv_true": lambda: jnp.array_equiv(jnp.ones(3), 1),
    "array_equiv_bcast": lambda: jnp.array_equiv(jnp.ones((2, 3)), jnp.ones(3)),
    "array_equiv_false": lambda: jnp.array_equiv(jnp.arange(3), jnp.array([0, 1, 3])),
    "iscomplex": lambda: jnp.iscomplex(jnp.array([1 + 1j, 2, 3j])),
    "isreal": lambda: jnp.isreal(jnp.array([1 + 1j, 2, 3j])),
    "iscomplex_real": lambda: jnp.iscomplex(jnp.arange(2)),
    "isreal_real": lambda: jnp.isreal(jnp.ones((2, 2))),
    "isin": lambda: jnp.isin(jnp.array([1, 2, 3]), jnp.array([2, 5])),
    "isin_2d_invert": lambda: jnp.isin(jnp.array([[1, 2], [3, 4]]), jnp.array([2, 3]), invert=True),
    "isin_scalar": lambda: jnp.isin(2, jnp.array([1, 2])),
    "isin_float": lambda: jnp.isin(jnp.array([1.0, 2.0]), 2),
    "isin_sort": lambda: jnp.isin(jnp.array([1, 2, 7]), jnp.array([7, 1]), method="sort"),
    "isin_empty": lambda: jnp.isin(jnp.array([1, 2]), jnp.zeros(0)),
    "isin_empty_invert": lambda: jnp.isin(jnp.array([1, 2]), jnp.zeros(0), invert=True),
}

EAGER_ONLY = {"where_one_arg"}  # its result shape depends on values: JAX refuses it in jit too

# (dtype, weak_type, shape, values) with x64 off, then on; a tuple of them for tuple results.
EXPECTED = {
    'where_scalars':
        [('float32', True, (), 1.0), ('float64', True, (), 1.0)],
    'where_int_cond':
        [('int32', True, (3,), [1, 2, 1]), ('int64', True, (3,), [1, 2, 1])],
    'where_float_cond':
        [('float32', True, (3,), [-1.5, 1.5, 1.5]), ('float64', True, (3,), [-1.5, 1.5, 1.5])],
    'where_strong_weak':
        [('int8', False, (2,), [1, 2]), ('int8', False, (2,), [1, 2])],
    'where_promote':
        [('float16', False, (2,), [1.0, 0.0]), ('float16', False, (2,), [1.0, 0.0])],
    'where_bool_int':
        [('uint8', False, (2,), [1, 1]), ('uint8', False, (2,), [1, 1])],
    'where_broadcast3':
        [('float32', False, (4, 2, 3),
          [[[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]], [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]],
           [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]], [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]]]),
         ('float64', False, (4, 2, 3),
          [[[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]], [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]],
           [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]], [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0]]])],
    'where_scalar_cond_array':
        [('int32', False, (3,), [0, -1, -2]), ('int64', False, (3,), [0, -1, -2])],
    'where_empty':
        [('float32', True, (0, 3), []), ('float64', True, (0, 3), [])],
    'where_complex':
        [('complex64', False, (2,), [1j, (1+0j)]), ('complex128', False, (2,), [1j, (1+0j)])],
    'where_f64':
        [('float32', False, (2,), [1.5, 2.0]), ('float64', False, (2,), [1.5, 2.0])],
    'where_one_arg':
        [(('int32', False, (2,), [1, 3]),), (('int64', False, (2,), [1, 3]),)],
    'where_one_arg_size':
        [(('int32', False, (3,), [0, 1, -1]), ('int32', False, (3,), [1, 0, -1])),
         (('int64', False, (3,), [0, 1, -1]), ('int64', False, (3,), [1, 0, -1]))],
    'isclose_scalar':
        [('bool', False, (), True), ('bool', False, (), True)],
    'isclose_specials':
        [('bool', False, (6,), [True, False, True, False, True, False]),
         ('bool', False, (6,), [True, False, True, False, True, False])],
    'isclose_equal_nan':
        [('bool', False, (2,), [True, True]), ('bool', False, (2,), [True, True])],
    'isclose_ints':
        [('bool', False, (3,), [False, True, False]), ('bool', False, (3,), [False, True, False])],
    'isclose_complex':
        [('bool', False, (2,), [True, False]), ('bool', False, (2,), [True, False])],
    'isclose_f16':
        [('bool', False, (2,), [True, True]), ('bool', False, (2,), [True, True])],
    'isclose_tols':
        [('bool', False, (3,), [True, True, False]), ('bool', False, (3,), [True, True, False])],
    'isclose_bcast':
        [('bool', False, (2, 3), [[True, True, False], [False, False, False]]),
         ('bool', False, (2, 3), [[True, True, False], [False, False, False]])],
    'allclose_true':
        [('bool', False, (), True), ('bool', False, (), True)],
    'allclose_false':
        [('bool', False, (), False), ('bool', False, (), False)],
    'allclose_ints':
        [('bool', False, (), True), ('bool', False, (), True)],
    'allclose_nan':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_equal_true':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_equal_shape':
        [('bool', False, (), False), ('bool', False, (), False)],
    'array_equal_nan':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_equal_nan_false':
        [('bool', False, (), False), ('bool', False, (), False)],
    'array_equal_scalars':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_equal_bcast':
        [('bool', False, (), False), ('bool', False, (), False)],
    'array_equiv_true':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_equiv_bcast':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_equiv_false':
        [('bool', False, (), False), ('bool', False, (), False)],
    'iscomplex':
        [('bool', False, (3,), [True, False, True]), ('bool', False, (3,), [True, False, True])],
    'isreal':
        [('bool', False, (3,), [False, True, False]), ('bool', False, (3,), [False, True, False])],
    'iscomplex_real':
        [('bool', False, (2,), [False, False]), ('bool', False, (2,), [False, False])],
    'isreal_real':
        [('bool', False, (2, 2), [[True, True], [True, True]]),
         ('bool', False, (2, 2), [[True, True], [True, True]])],
    'isin':
        [('bool', False, (3,), [False, True, False]), ('bool', False, (3,), [False, True, False])],
    'isin_2d_invert':
        [('bool', False, (2, 2), [[True, False], [False, True]]),
         ('bool', False, (2, 2), [[True, False], [False, True]])],
    'isin_scalar':
        [('bool', False, (), True), ('bool', False, (), True)],
    'isin_float':
        [('bool', False, (2,), [False, True]), ('bool', False, (2,), [False, True])],
    'isin_sort':
        [('bool', False, (3,), [True, False, True]), ('bool', False, (3,), [True, False, True])],
    'isin_empty':
        [('bool', False, (2,), [False, False]), ('bool', False, (2,), [False, False])],
    'isin_empty_invert':
        [('bool', False, (2,), [True, True]), ('bool', False, (2,), [True, True])],
}


JAXPRS = [  # (name, function, example args, JAX 0.12's printed jaxpr)
    ('where', lambda x: jnp.where(x > 0, x, 0.0), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:bool[3] = gt a 0.0:f32[]\n'
      '    c:f32[3] = jit[\n'
      '      name=_where\n'
      '      jaxpr={ lambda ; b:bool[3] a:f32[3] d:f32[]. let\n'
      '          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] d\n'
      '          f:f32[3] = broadcast_in_dim e\n'
      '          c:f32[3] = select_n b f a\n'
      '        in (c,) }\n'
      '    ] b a 0.0:f32[]\n'
      '  in (c,) }')),
    ('where_int_cond', lambda x: jnp.where(x, 1, 2), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:i32[3] = jit[\n'
      '      name=_where\n'
      '      jaxpr={ lambda ; a:f32[3] c:i32[] d:i32[]. let\n'
      '          e:bool[3] = ne a 0.0:f32[]\n'
      '          f:i32[3] = broadcast_in_dim c\n'
      '          g:i32[3] = broadcast_in_dim d\n'
      '          b:i32[3] = select_n e g f\n'
      '        in (b,) }\n'
      '    ] a 1:i32[] 2:i32[]\n'
      '  in (b,) }')),
    ('where_scalar_cond', lambda x: jnp.where(True, x, 2), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[3] = jit[\n'
      '      name=_where\n'
      '      jaxpr={ lambda ; c:bool[] a:f32[3] d:i32[]. let\n'
      '          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] d\n'
      '          f:f32[3] = broadcast_in_dim e\n'
      '          b:f32[3] = select_n c f a\n'
      '        in (b,) }\n'
      '    ] True:bool[] a 2:i32[]\n'
      '  in (b,) }')),
    ('where_broadcast', lambda x: jnp.where(x > 1, x[:, None], 2), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:bool[3] = gt a 1.0:f32[]\n'
      '    c:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] a\n'
      '    d:f32[3,3] = jit[\n'
      '      name=_where\n'
      '      jaxpr={ lambda ; b:bool[3] c:f32[3,1] e:i32[]. let\n'
      '          f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e\n'
      '          g:bool[3,3] = broadcast_in_dim[broadcast_dimensions=(1,)] b\n'
      '          h:f32[3,3] = broadcast_in_dim[broadcast_dimensions=(0, 1)] c\n'
      '          i:f32[3,3] = broadcast_in_dim f\n'
      '          d:f32[3,3] = select_n g i h\n'
      '        in (d,) }\n'
      '    ] b c 2:i32[]\n'
      '  in (d,) }')),
    ('isclose', lambda x: jnp.isclose(x, 1.0), (X,),
     ('let isclose = { lambda ; a:f32[3] b:f32[]. let\n'
      '    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n'
      '    d:bool[3] = ne a a\n'
      '    e:bool[] = ne c c\n'
      '    f:bool[3] = and d e\n'
      '    g:bool[] = is_finite c\n'
      '    h:f32[3] = sub a c\n'
      '    i:f32[3] = abs h\n'
      '    j:f32[] = abs c\n'
      '    k:f32[] = mul 9.999999747378752e-06:f32[] j\n'
      '    l:f32[] = add 9.99999993922529e-09:f32[] k\n'
      '    m:bool[3] = le i l\n'
      '    n:bool[3] = eq a c\n'
      '    o:bool[3] = and g m\n'
      '    p:bool[3] = or n o\n'
      '  in (p,) } in\n'
      '{ lambda ; q:f32[3]. let\n'
      '    r:bool[3] = jit[name=isclose jaxpr=isclose] q 1.0:f32[]\n'
      '  in (r,) }')),
    ('allclose', lambda x: jnp.allclose(x, 1.0), (X,),
     ('let isclose = { lambda ; a:f32[3] b:f32[] c:f32[] d:f32[]. let\n'
      '    e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n'
      '    f:f32[] = convert_element_type[new_dtype=float32 weak_type=False] c\n'
      '    g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] d\n'
      '    h:bool[3] = ne a a\n'
      '    i:bool[] = ne e e\n'
      '    j:bool[3] = and h i\n'
      '    k:bool[] = is_finite e\n'
      '    l:f32[3] = sub a e\n'
      '    m:f32[3] = abs l\n'
      '    n:f32[] = abs e\n'
      '    o:f32[] = mul f n\n'
      '    p:f32[] = add g o\n'
      '    q:bool[3] = le m p\n'
      '    r:bool[3] = eq a e\n'
      '    s:bool[3] = and k q\n'
      '    t:bool[3] = or r s\n'
      '  in (t,) } in\n'
      '{ lambda ; u:f32[3]. let\n'
      '    v:bool[] = jit[\n'
      '      name=allclose\n'
      '      jaxpr={ lambda ; u:f32[3] w:f32[]. let\n'
      '          x:bool[3] = jit[name=isclose jaxpr=isclose] u w 1e-05:f32[] 1e-08:f32[]\n'
      '          v:bool[] = reduce_and[axes=(0,)] x\n'
      '        in (v,) }\n'
      '    ] u 1.0:f32[]\n'
      '  in (v,) }')),
    ('array_equal', lambda x: jnp.array_equal(x, x), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:bool[3] = eq a a\n'
      '    c:bool[] = reduce_and[axes=(0,)] b\n'
      '  in (c,) }')),
    ('array_equiv', lambda x: jnp.array_equiv(x, 1.0), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:bool[3] = eq a 1.0:f32[]\n'
      '    c:bool[] = reduce_and[axes=(0,)] b\n'
      '  in (c,) }')),
    ('iscomplex', lambda x: jnp.iscomplex(x), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:bool[3] = jit[\n'
      '      name=iscomplex\n'
      '      jaxpr={ lambda ; a:f32[3]. let\n'
      '          c:f32[3] = broadcast_in_dim 0.0:f32[]\n'
      '          b:bool[3] = ne c 0.0:f32[]\n'
      '        in (b,) }\n'
      '    ] a\n'
      '  in (b,) }')),
    ('isreal', lambda x: jnp.isreal(x), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:bool[3] = jit[\n'
      '      name=isreal\n'
      '      jaxpr={ lambda ; a:f32[3]. let\n'
      '          c:f32[3] = broadcast_in_dim 0.0:f32[]\n'
      '          b:bool[3] = eq c 0.0:f32[]\n'
      '        in (b,) }\n'
      '    ] a\n'
      '  in (b,) }')),
    ('isin', lambda x: jnp.isin(x, jnp.array([1.0, 2.0])), (X,),
     ('{ lambda a:f32[2]; b:f32[3]. let\n'
      '    c:bool[3] = jit[\n'
      '      name=_in1d\n'
      '      jaxpr={ lambda ; b:f32[3] a:f32[2]. let\n'
      '          d:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] b\n'
      '          e:f32[1,2] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
      '          f:bool[3,2] = eq d e\n'
      '          c:bool[3] = reduce_or[axes=(1,)] f\n'
      '        in (c,) }\n'
      '    ] b a\n'
      '  in (c,) }')),
]

MODES = [False, True]


def _check(got, want, name):
  if isinstance(want, tuple) and (not want or isinstance(want[0], tuple)):
    assert isinstance(got, tuple) and len(got) == len(want), name
    for g, w in zip(got, want):
      _check(g, w, name)
    return
  dt, weak, shape, values = want
  assert isinstance(got, ember.Array), (name, type(got))
  assert (got.dtype.name, got.weak_type, got.shape) == (dt, weak, shape), name
  np.testing.assert_array_equal(np.asarray(got), np.asarray(values).reshape(shape), err_msg=name)


@pytest.mark.parametrize("name, x64, mode", [
    (n, x64, m) for n in CASES for x64 in MODES for m in ("eager", "jit")
    if not (m == "jit" and n in EAGER_ONLY)])
def test_matches_jax(name, x64, mode):
  fn = CASES[name] if mode == "eager" else ember.jit(CASES[name])
  with ember.enable_x64(x64):
    got = fn()
  _check(got, EXPECTED[name][x64], name)


@pytest.mark.parametrize("name, fn, args, want", JAXPRS, ids=[c[0] for c in JAXPRS])
def test_printed_jaxprs(name, fn, args, want):
  assert str(ember.make_jaxpr(fn)(*args)) == want


# --- against NumPy ---------------------------------------------------------------------------

SHAPES = [((), (), ()), ((4,), (4,), (4,)), ((2, 3), (3,), ()), ((2, 1, 3), (4, 1), (1, 3)),
          ((0, 2), (2,), ()), ((3, 1), (2, 1, 1), (3,))]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.bool_])
def test_where_vs_numpy(shapes, dtype):
  rng = np.random.default_rng(0)
  c = rng.random(shapes[0]) > 0.5
  x = (rng.random(shapes[1]) * 10).astype(dtype)
  y = (rng.random(shapes[2]) * 10).astype(dtype)
  want = np.where(c, x, y)
  for f in (jnp.where, ember.jit(jnp.where)):
    got = f(c, x, y)
    assert got.dtype == want.dtype and got.shape == want.shape and not got.weak_type
    np.testing.assert_array_equal(got, want)


def test_where_traced_weak_and_promotion():
  f = ember.jit(lambda c, x: jnp.where(c, x, 0.5))
  r = f(np.array([True, False]), np.ones(2, np.float16))
  assert r.dtype == np.float16 and not r.weak_type
  np.testing.assert_array_equal(r, [1.0, 0.5])
  r = ember.jit(lambda x: jnp.where(x > 1, 1.0, 2.0))(np.arange(3))
  assert r.dtype == np.float32 and r.weak_type
  np.testing.assert_array_equal(r, [2.0, 2.0, 1.0])
  r = ember.jit(lambda x: jnp.where(x, x, -x))(np.array([0, 3], np.int8))
  assert r.dtype == np.int8
  np.testing.assert_array_equal(r, [0, 3])


def test_where_one_argument():
  x = np.array([[0, 2, 0], [1, 0, 3]])
  for got, want in zip(jnp.where(x), np.where(x)):
    np.testing.assert_array_equal(got, want)
  f = ember.jit(lambda x: jnp.where(x, size=4, fill_value=9))
  got = f(x)
  assert len(got) == 2
  np.testing.assert_array_equal(got[0], [0, 1, 1, 9])
  np.testing.assert_array_equal(got[1], [1, 0, 2, 9])


def np_isclose(a, b, rtol, atol, equal_nan):
  """np.isclose as NumPy 2 (and JAX) define it, on every supported NumPy: NumPy 1.26
  multiplies complex infinities by ones (inf+0j becomes inf+nanj), so there not even
  inf+0j is close to itself."""
  with np.errstate(invalid="ignore"):
    close = (np.abs(a - b) <= atol + rtol * np.abs(b)) & np.isfinite(b) | (a == b)
  return close | (np.isnan(a) & np.isnan(b)) if equal_nan else close


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 1e-5), (np.float16, 1e-3),
                                         (np.float64, 1e-5), (np.complex64, 1e-5)])
def test_isclose_allclose_vs_numpy(dtype, rtol):
  a = np.array([[1.0, 1.0 + 2 * rtol, np.nan, np.inf, -np.inf, 0.0],
                [1e-3, 2.0, np.nan, np.inf, 1.0, -1e-9]]).astype(dtype)
  b = np.array([1.0, 1.0, np.nan, np.inf, np.inf, 1e-9]).astype(dtype)
  for equal_nan in (False, True):
    want = np_isclose(a, b, rtol=rtol, atol=1e-8, equal_nan=equal_nan)
    for f in (jnp.isclose, ember.jit(jnp.isclose, static_argnames="equal_nan")):
      got = f(a, b, rtol=rtol, atol=1e-8, equal_nan=equal_nan)
      assert got.dtype == np.bool_ and got.shape == want.shape
      np.testing.assert_array_equal(got, want)
    for x, y in ((a, b), (a[:, 1:2], b[1:2]), (b[:2], b[:2])):
      got = jnp.allclose(x, y, rtol, 1e-8, equal_nan)
      assert got.shape == () and got.dtype == np.bool_  # a bool array, as in JAX
      assert bool(got) == np_isclose(x, y, rtol, 1e-8, equal_nan).all()


def test_array_equal_equiv_vs_numpy():
  pairs = [(np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3)),
           (np.arange(3), np.arange(3.0)), (np.ones((2, 3)), np.ones(3)),
           (np.ones(3), np.ones(2)), (np.zeros((2, 0)), np.zeros((2, 0))), (1, np.ones((2, 2)))]
  for a, b in pairs:
    assert bool(jnp.array_equal(a, b)) == np.array_equal(a, b)
    assert bool(jnp.array_equiv(a, b)) == np.array_equiv(a, b)
  r = ember.jit(jnp.array_equal)(np.ones(3), np.ones(3))
  assert r.shape == () and bool(r)


def test_isin_vs_numpy():
  rng = np.random.default_rng(1)
  e = rng.integers(0, 6, (2, 3, 2))
  t = rng.integers(0, 6, (4,))
  for invert in (False, True):
    want = np.isin(e, t, invert=invert)
    for method in ("auto", "compare_all", "binary_search", "sort"):
      got = jnp.isin(e, t, invert=invert, method=method)
      assert got.shape == e.shape and got.dtype == np.bool_
      np.testing.assert_array_equal(got, want)


# --- errors --------------------------------------------------------------------------------

ERRORS = [
    (lambda: jnp.where(jnp.array([True, False]), 1), TypeError, "NoneType at position 2"),
    (lambda: jnp.where(jnp.array([True]), None, 2), TypeError, "NoneType at position 1"),
    (lambda: jnp.where([True, False], 1, 2), TypeError, "where requires ndarray or scalar"),
    (lambda: jnp.where(jnp.array([True, False]), 1, 2, size=2), ValueError,
     "size and fill_value arguments cannot be used in three-term where"),
    (lambda: jnp.where(jnp.ones(2), jnp.ones(3), 0), ValueError, r"\(2,\), \(3,\)"),
    (lambda: jnp.isin(jnp.array([1, 2]), jnp.array([1]), method="foo"), ValueError,
     "method='foo' is not implemented"),
    (lambda: jnp.isin(jnp.array([1, 2]), [1]), TypeError, "isin requires"),
    (lambda: jnp.allclose([1.0], 1.0), TypeError, "allclose requires"),
]


@pytest.mark.parametrize("fn, exc, match", ERRORS)
def test_errors(fn, exc, match):
  with pytest.raises(exc, match=match):
    fn()

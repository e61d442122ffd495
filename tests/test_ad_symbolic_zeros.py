"""Autodiff where JAX 0.12's symbolic zeros decide the result (issue 32), and the weak types
of loop, cond and gradient results. Every expected value, jaxpr text and (dtype, weak_type)
is JAX 0.12's, printed by it for the same program.

- A tangent no output needs never reaches a transpose: JAX stages linear jaxprs with dead
  code elimination inside jit, checkpoint, cond, scan and while, so the cotangent of an
  input such an equation does not really use stays a symbolic zero and is never multiplied
  by a residual. A residual infinity (integer_pow(v, -2) at 0) made ember's gradient NaN
  where JAX's is finite.
- A linear while loop whose results nothing needs goes with its error; one that is needed
  still raises JAX's error.
- jnp.unique without `size` (and the set operations built on it) works on the concrete
  values, as JAX's concrete_or_error: under grad its results carry no tangent.
- max/min differentiate with JAX's strongly typed `_balanced_cmp`, nextafter passes x's
  tangent; a convert's transpose passes a cotangent already of the operand's type.
- Loop results take the body's weak types, cond results the first branch's; a scan's carry
  cotangent keeps the incoming cotangent's type.
"""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

nan = np.nan
XS = jnp.array([[0., 1.], [0., -1.], [-1., -2.]])
ip = lambda a: lax.integer_pow(a, -2)   # an infinity at 0


# --- symbolic zero cotangents: no NaN from a residual infinity ------------------------------

def l_jit(v):        # the jitted function reads b only through floor: a zero tangent
  return jnp.sum(ember.jit(lambda a, b: a * 2 + jnp.floor(b))(v, ip(v)))


def l_jit_unused_output(v):
  return jnp.sum(ember.jit(lambda a, b: (a * 2, b))(v, ip(v))[0])


def l_remat_unused_output(v):
  return jnp.sum(ember.checkpoint(lambda a, b: (a * 2, b * 3))(v, ip(v))[0])


def l_cond_floor(v):
  b = ip(v)
  return jnp.sum(lax.cond(jnp.max(v) > 0, lambda a, b: a * 2, lambda a, b: a + jnp.floor(b),
                          v, b))


def l_cond_unused_branch_input(v):
  b = ip(v)
  return jnp.sum(lax.cond(jnp.max(v) > 0, lambda a, b: a * 2, lambda a, b: a, v, b))


def l_cond_unused_output(v):
  b = ip(v)
  return jnp.sum(lax.cond(jnp.max(v) > 0, lambda a, b: (a * 2, b), lambda a, b: (a, b * 3),
                          v, b)[0])


def l_switch(v):
  b = ip(v)
  return jnp.sum(lax.switch(jnp.argmax(v), [lambda a, b: a * 2, lambda a, b: a + jnp.sign(b)],
                            v, b))


def l_scan_const(v):
  b = ip(v)
  return jnp.sum(lax.scan(lambda c, x: (c * 2 + jnp.floor(b), None), v, None, length=2)[0])


def l_scan_unused_ys(v):
  b = ip(v)
  return jnp.sum(lax.scan(lambda c, x: (c * 2, c + b), v, None, length=2)[0])


def l_scan_unused_carry(v):
  (c, _), _ = lax.scan(lambda c, x: ((c[0] * 2, c[1] * 3), None), (v, ip(v)), None, length=2)
  return jnp.sum(c)


def l_fori_unused_carry(v):
  return jnp.sum(lax.fori_loop(0, 2, lambda i, c: (c[0] * 2, c[1]), (v, ip(v)))[0])


def l_map(v):
  return jnp.sum(lax.map(lambda ab: ab[0] * 2 + jnp.floor(ab[1]), (v, ip(v))))


def l_nested_jit_in_cond(v):
  b = ip(v)
  return jnp.sum(lax.cond(jnp.max(v) > 0, lambda a, b: ember.jit(lambda x, y: x * 2)(a, b),
                          lambda a, b: a, v, b))


def l_cond_in_scan(v):
  b = ip(v)
  body = lambda c, x: (lax.cond(jnp.max(c) > 0, lambda a, b: a * 2, lambda a, b: a, c, b), None)
  return jnp.sum(lax.scan(body, v, None, length=2)[0])


def l_where(v):      # NaN in JAX too: select's transpose gives zeros, times the infinity
  return jnp.sum(jnp.where(v > 5, ip(v), v))


ZERO_CASES = {   # loss -> JAX's gradient at each row of XS
    l_jit: [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]],
    l_jit_unused_output: [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]],
    l_remat_unused_output: [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]],
    l_cond_floor: [[2.0, 2.0], [1.0, 1.0], [1.0, 1.0]],
    l_cond_unused_branch_input: [[2.0, 2.0], [1.0, 1.0], [1.0, 1.0]],
    l_cond_unused_output: [[2.0, 2.0], [1.0, 1.0], [1.0, 1.0]],
    l_switch: [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]],
    l_scan_const: [[4.0, 4.0], [4.0, 4.0], [4.0, 4.0]],
    l_scan_unused_ys: [[4.0, 4.0], [4.0, 4.0], [4.0, 4.0]],
    l_scan_unused_carry: [[4.0, 4.0], [4.0, 4.0], [4.0, 4.0]],
    l_fori_unused_carry: [[4.0, 4.0], [4.0, 4.0], [4.0, 4.0]],
    l_map: [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]],
    l_nested_jit_in_cond: [[2.0, 2.0], [1.0, 1.0], [1.0, 1.0]],
    l_cond_in_scan: [[4.0, 4.0], [1.0, 1.0], [1.0, 1.0]],
    l_where: [[nan, 1.0], [nan, 1.0], [1.0, 1.0]],
}
_MODES = {
    "vmap": lambda f: ember.vmap(ember.grad(f))(XS),
    "jit_vmap": lambda f: ember.jit(ember.vmap(ember.grad(f)))(XS),
    "eager": lambda f: np.stack([np.asarray(ember.grad(f)(x)) for x in XS]),
    "jit": lambda f: np.stack([np.asarray(ember.jit(ember.grad(f))(x)) for x in XS]),
}


@pytest.mark.parametrize("mode", sorted(_MODES))
@pytest.mark.parametrize("loss", list(ZERO_CASES), ids=lambda f: f.__name__)
def test_symbolic_zero_cotangents_as_jax(loss, mode):
  np.testing.assert_array_equal(np.asarray(_MODES[mode](loss)), np.float32(ZERO_CASES[loss]))


JAXPR_GRAD_JIT = """\
{ lambda ; a:f32[2]. let
    b:f32[2] = integer_pow[y=-2] a
    c:f32[2] = integer_pow[y=-3] a
    _:f32[2] = mul -2.0:f32[] c
    d:f32[2] = jit[
      name=<lambda>
      jaxpr={ lambda ; a:f32[2] b:f32[2]. let
          e:f32[2] = mul a 2.0:f32[]
          f:f32[2] = floor b
          d:f32[2] = add e f
        in (d,) }
    ] a b
    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] d
    g:f32[2] = broadcast_in_dim 1.0:f32[]
    h:f32[2] = jit[
      name=<lambda>
      jaxpr={ lambda ; g:f32[2]. let h:f32[2] = mul g 2.0:f32[] in (h,) }
    ] g
  in (h,) }"""


def test_grad_jaxpr_has_no_dead_tangent_work_as_jax():
  # the transposed jit takes only the cotangent its output needs, as JAX's
  assert str(ember.make_jaxpr(ember.grad(l_jit))(jnp.ones(2))) == JAXPR_GRAD_JIT


# --- while loops ---------------------------------------------------------------------------

R = jnp.arange(4.0)
_WHILE_ERROR = "Reverse-mode differentiation does not work for lax.while_loop"


def _replacing_loop(x):   # the body replaces the differentiated carry
  return lax.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, jnp.sum(R).reshape(1, 1)),
                        (0, x))


@pytest.mark.parametrize("transform", [lambda g: g, ember.jit], ids=["eager", "jit"])
def test_while_whose_tangents_nothing_needs_is_dropped(transform):
  loss = lambda x: jnp.sum(x) + 0 * _replacing_loop(x)[0]
  np.testing.assert_array_equal(transform(ember.grad(loss))(jnp.ones((1, 1))), [[1.0]])
  loss_unique = lambda x: jnp.sum(_replacing_loop(jnp.unique(x).reshape(1, 1))[1]) + jnp.sum(x)
  np.testing.assert_array_equal(ember.grad(loss_unique)(jnp.ones((1, 1))), [[1.0]])


@pytest.mark.parametrize("transform", [lambda g: g, ember.jit], ids=["eager", "jit"])
def test_while_whose_tangents_are_needed_raises_jax_error(transform):
  loss = lambda x: jnp.sum(_replacing_loop(x)[1])
  with pytest.raises(ValueError, match=_WHILE_ERROR):
    transform(ember.grad(loss))(jnp.ones((1, 1)))
  loss_times_zero = lambda x: jnp.sum(_replacing_loop(x)[1]) * 0
  with pytest.raises(ValueError, match=_WHILE_ERROR):
    transform(ember.grad(loss_times_zero))(jnp.ones((1, 1)))


# --- unique and the set operations: constants under grad, as JAX's -------------------------

A = jnp.array([3., 1., 2., 1.])
B = jnp.array([2., 5.])
SET_CASES = {   # name -> (loss of a, JAX's gradient, JAX's value)
    "unique": (lambda a: jnp.sum(jnp.unique(a) ** 2), [0, 0, 0, 0], 14.0),
    "unique_size": (lambda a: jnp.sum(jnp.unique(a, size=3) ** 2), [6, 2, 4, 0], 14.0),
    "unique_counts": (lambda a: jnp.sum(jnp.unique_counts(a).values ** 2), [0, 0, 0, 0], 14.0),
    "unique_axis": (lambda a: jnp.sum(jnp.unique(a.reshape(2, 2), axis=0) ** 2), [0, 0, 0, 0],
                    15.0),
    "union1d": (lambda a: jnp.sum(jnp.union1d(a, B) ** 2), [0, 0, 0, 0], 39.0),
    "intersect1d": (lambda a: jnp.sum(jnp.intersect1d(a, B) ** 2), [0, 0, 0, 0], 4.0),
    "intersect1d_unique": (lambda a: jnp.sum(jnp.intersect1d(a, B, assume_unique=True) ** 2),
                           [0, 2, 4, 0], 5.0),
    "setdiff1d": (lambda a: jnp.sum(jnp.setdiff1d(a, B) ** 2), [0, 0, 0, 0], 10.0),
    "setxor1d": (lambda a: jnp.sum(jnp.setxor1d(a, B) ** 2), [0, 0, 0, 0], 35.0),
    "bool_index": (lambda a: jnp.sum(a[a > 1.5] ** 2), [6, 0, 4, 0], 13.0),
}


@pytest.mark.parametrize("name", sorted(SET_CASES))
def test_set_operation_gradients_as_jax(name):
  loss, grad, value = SET_CASES[name]
  v, g = ember.value_and_grad(loss)(A)
  assert float(v) == value
  np.testing.assert_array_equal(g, np.float32(grad))


# --- elementwise rules ---------------------------------------------------------------------

def test_nextafter_and_spacing_gradients_as_jax():
  cases = [(lambda x: jnp.nextafter(x, 0.), 1.0), (lambda x: jnp.nextafter(2., x), 0.0),
           (lambda x: jnp.spacing(x), 0.0)]
  for f, want in cases:
    for g in (ember.grad(f), ember.jit(ember.grad(f))):
      assert float(g(3.0)) == want
    assert float(ember.jvp(f, (3.0,), (1.0,))[1]) == want


def test_ldexp_and_frexp_gradients_as_jax():
  cases = [(lambda x: jnp.ldexp(x, 2), 4.0), (lambda x: jnp.frexp(x)[0], 0.25),
           (lambda x: jnp.ldexp(x, -3) * x, 0.75)]
  for f, want in cases:
    for g in (ember.grad(f), ember.jit(ember.grad(f))):
      assert float(g(3.0)) == want
    assert float(ember.jvp(f, (3.0,), (1.0,))[1]) == want
  v = jnp.array([0.3, -5.0, 1e3])
  np.testing.assert_array_equal(ember.vmap(ember.grad(lambda x: jnp.frexp(x)[0]))(v),
                                np.float32([2.0, 0.125, 2.0 ** -10]))


def test_vmapped_grad_of_an_integer_argument_under_jit():
  # float0 cotangents broadcast over the batch: a constant, as JAX's zeros
  f = lambda x: jnp.sum(x).astype(jnp.float32)
  out = ember.jit(ember.vmap(ember.grad(f, allow_int=True)))(jnp.ones((2, 1, 1), jnp.int32))
  assert out.dtype == ember.dtypes.float0 and out.shape == (2, 1, 1)


JAXPR_GRAD_MIN = """\
{ lambda ; a:f32[]. let
    b:f32[] = min a 1.0:f32[]
    c:bool[] = gt 1.0:f32[] a
    d:bool[] = eq 1.0:f32[] a
    e:f32[] = select_n d 0.0:f32[] 0.5:f32[]
    f:f32[] = select_n c e 1.0:f32[]
    g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    _:f32[] = mul g 2.0:f32[]
    h:f32[] = mul 1.0:f32[] 2.0:f32[]
    i:f32[] = mul h f
  in (i,) }"""


def test_min_gradient_jaxpr_as_jax():
  # strongly typed shares, and no convert of a cotangent already of the operand's type
  f = lambda c: jnp.minimum(c, 1.0) * jnp.float32(2)
  assert str(ember.make_jaxpr(ember.grad(f))(0.5)) == JAXPR_GRAD_MIN
  assert not ember.grad(f)(0.5).weak_type


def test_max_min_shares_at_ties_and_nan():
  for f, x, y, want in ((jnp.maximum, 1.0, 1.0, (0.5, 0.5)), (jnp.minimum, 2.0, 1.0, (0., 1.)),
                        (jnp.maximum, nan, 1.0, (0., 0.)), (jnp.minimum, 1.0, nan, (0., 0.))):
    got = ember.grad(f, argnums=(0, 1))(jnp.float32(x), jnp.float32(y))
    assert tuple(map(float, got)) == want


# --- weak types ----------------------------------------------------------------------------

X = jnp.ones((3, 1), jnp.float32)      # strong float32
cos_b = lambda i: jnp.broadcast_to(jnp.cos(i), (3, 1))   # weak: a weak scalar's cosine
CARRY_CASES = {   # name -> (fn(x), JAX's (dtype, weak_type) of each output leaf)
    "fori_static_weak_body": (lambda x: lax.fori_loop(1, 3, lambda i, c: cos_b(i), x),
                              [("float32", True)]),
    "fori_dynamic_weak_body": (lambda x: lax.fori_loop(
        1, jnp.int32(3) + 0 * jnp.int32(x[0, 0]), lambda i, c: cos_b(i), x), [("float32", True)]),
    "scan_weak_body": (lambda x: lax.scan(lambda c, _: (cos_b(1.0), None), x, None, length=2)[0],
                       [("float32", True)]),
    "while_weak_body": (lambda x: lax.while_loop(lambda c: c[0] < 2,
                                                 lambda c: (c[0] + 1, cos_b(1.0)), (0, x))[1],
                        [("float32", True)]),
    "scan_weak_init_strong_body": (lambda x: lax.scan(lambda c, _: (x, None), jnp.broadcast_to(
        1.0, (3, 1)), None, length=2)[0], [("float32", False)]),
    "fori_weak_init_weak_body": (lambda x: lax.fori_loop(0, 2, lambda i, c: c + 1, 1.0),
                                 [("float32", True)]),
    "fori_weak_init_strong_body": (lambda x: lax.fori_loop(0, 2, lambda i, c: c + x[0, 0], 1.0),
                                   [("float32", False)]),
    "cond_false_branch_weak": (lambda x: lax.cond(x[0, 0] > 0, lambda: x, lambda: cos_b(1.0)),
                               [("float32", True)]),
    "cond_false_branch_strong": (lambda x: lax.cond(x[0, 0] > 0, lambda: cos_b(1.0), lambda: x),
                                 [("float32", False)]),
    "switch_first_weak": (lambda x: lax.switch(jnp.int32(x[0, 0]), [lambda: cos_b(1.0),
                                                                    lambda: x]),
                          [("float32", True)]),
    "switch_first_strong": (lambda x: lax.switch(jnp.int32(x[0, 0]), [lambda: x,
                                                                      lambda: cos_b(1.0)]),
                            [("float32", False)]),
    "scan_weak_ys": (lambda x: lax.scan(lambda c, _: (c, jnp.cos(1.0)), x, None, length=2),
                     [("float32", False), ("float32", True)]),
    "vmap_fori": (ember.vmap(lambda r: lax.fori_loop(1, 3, lambda i, c: jnp.cos(i) + c * 0, r)),
                  [("float32", False)]),
}


def _leaves(out):
  return [(str(v.dtype), bool(v.weak_type)) for v in ember.tree_util.tree_leaves(out)]


@pytest.mark.parametrize("name", sorted(CARRY_CASES))
def test_loop_and_cond_weak_types_as_jax(name):
  f, want = CARRY_CASES[name]
  assert _leaves(f(X)) == want
  assert _leaves(ember.jit(f)(X)) == want
  assert [(str(a.dtype), a.weak_type) for a in ember.make_jaxpr(f)(X).out_avals] == want


def test_fori_weak_body_gradients_are_strong_as_jax():
  loss = lambda x: jnp.sum(lax.fori_loop(1, 3, lambda i, c: cos_b(i), x) * x)
  assert _leaves(ember.grad(loss)(X)) == [("float32", False)]
  assert _leaves(ember.jit(ember.vmap(ember.grad(loss)))(X[None])) == [("float32", False)]


GRAD_CASES = {   # name -> (loss(a, b, c), JAX's weak types of (value, grad b, grad c), grad c)
    "mul": (lambda a, b, c: jnp.sum(a * b * c), (False, False, True), 1.46999990940094),
    "minimum": (lambda a, b, c: jnp.minimum(c, 1.0) + jnp.sum(b), (False, False, False), 1.0),
    "maximum": (lambda a, b, c: jnp.maximum(c, 0.0) * jnp.sum(b), (False, False, False),
                2.0999999046325684),
    "cond_weak_false_branch": (lambda a, b, c: lax.cond(True, lambda c: c * jnp.sum(b),
                                                        lambda c: c, c),
                               (True, False, True), 2.0999999046325684),
    "fori_weak_carry_strong_body": (lambda a, b, c: lax.fori_loop(
        0, 2, lambda i, y: y * jnp.sum(b), c), (False, False, False), 4.409999370574951),
    "scan_weak_carry_strong_body": (lambda a, b, c: lax.scan(
        lambda y, _: (y * jnp.sum(b), None), c, None, length=2)[0], (False, False, False),
        4.409999370574951),
    "scan_xs_times_weak": (lambda a, b, c: jnp.sum(lax.scan(
        lambda s, xx: (s + xx * c, None), jnp.float32(0), b[:, 0])[0]), (False, False, True),
        2.0999999046325684),
}


@pytest.mark.parametrize("transform", [lambda g: g, ember.jit], ids=["eager", "jit"])
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_value_and_grad_weak_types_as_jax(name, transform):
  loss, weak, grad_c = GRAD_CASES[name]
  v, (gb, gc) = transform(ember.value_and_grad(loss, argnums=(1, 2)))(X * 0.7, X * 0.7, 0.5)
  assert (v.weak_type, gb.weak_type, gc.weak_type) == weak
  assert float(gc) == np.float32(grad_c)

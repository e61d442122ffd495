"""Control flow (lax.cond, switch, while_loop, fori_loop, scan, map, associative_scan):
eager vs jit vs NumPy loops, gradients, vmap, errors, and jaxpr/StableHLO text as JAX 0.12
prints it (expected strings checked with the JAX oracle)."""
import collections

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src import core

RTOL = 1e-6   # float32 against float64 NumPy loops


def both(f):
  return (f, ember.jit(f))


def close(a, b, rtol=RTOL, atol=1e-6):
  np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                             rtol=rtol, atol=atol)


# --- jaxpr printing (JAX 0.12's text) --------------------------------------------------

X3 = np.ones(3, np.float32)
W3 = jnp.ones(3)

PRINTED = {
  "cond": (lambda p, x: lax.cond(p, lambda x: jnp.sin(x), lambda x: x * 2., x), (True, X3), """\
{ lambda ; a:bool[] b:f32[3]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:f32[3] = cond[
      branches=(
        { lambda ; e:f32[3]. let f:f32[3] = mul e 2.0:f32[] in (f,) }
        { lambda ; g:f32[3]. let h:f32[3] = sin g in (h,) }
      )
    ] c b
  in (d,) }"""),
  "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda x: x + 1.], x), (1, X3), """\
{ lambda ; a:i32[] b:f32[3]. let
    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    d:i32[] = clamp 0:i32[] c 2:i32[]
    e:f32[3] = cond[
      branches=(
        { lambda ; f:f32[3]. let g:f32[3] = sin f in (g,) }
        { lambda ; h:f32[3]. let i:f32[3] = cos h in (i,) }
        { lambda ; j:f32[3]. let k:f32[3] = add j 1.0:f32[] in (k,) }
      )
    ] d b
  in (e,) }"""),
  "while": (lambda x: lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.),
                                     (0, x)), (X3,), """\
{ lambda ; a:f32[3]. let
    b:i32[] c:f32[3] = while[
      body_jaxpr={ lambda ; d:i32[] e:f32[3]. let
          f:i32[] = add d 1:i32[]
          g:f32[3] = mul e 2.0:f32[]
        in (f, g) }
      body_nconsts=0
      cond_jaxpr={ lambda ; h:i32[] i:f32[3]. let
          j:bool[] = lt h 10:i32[]
        in (j,) }
      cond_nconsts=0
    ] 0:i32[] a
  in (b, c) }"""),
  "fori_static": (lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2., x), (X3,), """\
{ lambda ; a:f32[3]. let
    _:i32[] b:f32[3] = scan[
      ft_in=((), (None, None), ())
      ft_out=((None, None), ())
      jaxpr={ lambda ; c:i32[] d:f32[3]. let
          e:i32[] = add c 1:i32[]
          f:f32[3] = mul d 2.0:f32[]
        in (e, f) }
      length=5
      reverse=False
      unroll=1
    ] 0:i32[] a
  in (b,) }"""),
  "fori_dynamic": (lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 2., x), (X3, 5), """\
{ lambda ; a:f32[3] b:i32[]. let
    _:i32[] _:i32[] c:f32[3] = while[
      body_jaxpr={ lambda ; d:i32[] e:i32[] f:f32[3]. let
          g:i32[] = add d 1:i32[]
          h:f32[3] = mul f 2.0:f32[]
        in (g, e, h) }
      body_nconsts=0
      cond_jaxpr={ lambda ; i:i32[] j:i32[] k:f32[3]. let
          l:bool[] = lt i j
        in (l,) }
      cond_nconsts=0
    ] 0:i32[] b a
  in (c,) }"""),
  "scan_reverse": (lambda c, xs: lax.scan(lambda c, x: (c + x, jnp.sin(c)), c, xs,
                                          reverse=True, unroll=2), (1., X3), """\
{ lambda ; a:f32[] b:f32[3]. let
    c:f32[] d:f32[3] = scan[
      ft_in=((), (None,), (None,))
      ft_out=((None,), (RightsOnly(Right(None)),))
      jaxpr={ lambda ; e:f32[] f:f32[]. let
          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
          h:f32[] = add g f
          i:f32[] = sin e
        in (h, i) }
      length=3
      reverse=True
      unroll=2
    ] a b
  in (c, d) }"""),
  "map": (lambda xs: lax.map(jnp.sin, xs), (X3,), """\
{ lambda ; a:f32[3]. let
    b:f32[3] = scan[
      ft_in=((), (), (None,))
      ft_out=((), (RightsOnly(Right(None)),))
      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }
      length=3
      reverse=False
      unroll=1
    ] a
  in (b,) }"""),
  "scan_consts_forwarding": (
      lambda c, xs: lax.scan(lambda c, x: (c * W3 + x, (x, {'a': c})), c, xs),
      (X3, np.ones((4, 3), np.float32)), """\
{ lambda a:f32[3]; b:f32[3] c:f32[4,3]. let
    d:f32[3] e:f32[4,3] = scan[
      ft_in=((None,), (None,), (None,))
      ft_out=((None,), (RightsOnly(Left(None)), RightsOnly(Right(None))))
      jaxpr={ lambda ; f:f32[3] g:f32[3] h:f32[3]. let
          i:f32[3] = mul g f
          j:f32[3] = add i h
        in (j, g) }
      length=4
      reverse=False
      unroll=1
    ] a b c
  in (d, c, e) }"""),
  "scan_carry_to_const": (
      lambda a, b, xs: lax.scan(lambda c, x: ((c[0], c[1] + x * c[0]), c[0] * x), (a, b), xs),
      (X3, X3, np.ones((4, 3), np.float32)), """\
{ lambda ; a:f32[3] b:f32[3] c:f32[4,3]. let
    d:f32[3] e:f32[4,3] = scan[
      ft_in=((None,), (None,), (None,))
      ft_out=((None,), (RightsOnly(Right(None)),))
      jaxpr={ lambda ; f:f32[3] g:f32[3] h:f32[3]. let
          i:f32[3] = mul h f
          j:f32[3] = add g i
          k:f32[3] = mul f h
        in (j, k) }
      length=4
      reverse=False
      unroll=1
    ] a b c
  in (a, d, e) }"""),
  "cond_forwarding_float_pred": (
      lambda p, x: lax.cond(p > 0, lambda x: x, lambda x: x * 2, x), (1.0, 1.0), """\
{ lambda ; a:f32[] b:f32[]. let
    c:bool[] = gt a 0.0:f32[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f32[] = cond[
      branches=(
        { lambda ; f:f32[]. let g:f32[] = mul f 2.0:f32[] in (g,) }
        { lambda ; h:f32[]. let  in (h,) }
      )
    ] d b
  in (e,) }"""),
}


@pytest.mark.parametrize("name", sorted(PRINTED))
def test_jaxpr_printing_matches_jax(name):
  f, args, want = PRINTED[name]
  assert str(ember.make_jaxpr(f)(*args)) == want


def _histogram(f, *args):
  counts = collections.Counter()

  def walk(j):
    for e in j.eqns:
      counts[e.primitive.name] += 1
      for sub in core.jaxprs_in_params(e.params):
        walk(sub)
  walk(ember.make_jaxpr(f)(*args))
  return dict(counts)


def test_seed_002_exercise_1_probe():
  def probe(x):
    c, _ = lax.scan(lambda c, _: (jnp.sin(c) * 2.0, None), x, None, length=3)
    y, _ = lax.while_loop(lambda s: s[1] < 5, lambda s: (jnp.cos(s[0]), s[1] + 1), (c, 0))
    return ember.jit(lambda t: jnp.exp(jnp.exp(t)))(y).sum()
  assert _histogram(probe, jnp.ones(4)) == {"scan": 1, "sin": 1, "mul": 1, "while": 1,
                                            "lt": 1, "cos": 1, "add": 1, "jit": 1,
                                            "exp": 2, "reduce_sum": 1}
  c = np.ones(4)
  for _ in range(3):
    c = np.sin(c) * 2.0
  for _ in range(5):
    c = np.cos(c)
  close(probe(jnp.ones(4)), np.exp(np.exp(c)).sum(), rtol=1e-5)  # exp(exp) amplifies


def test_lowered_text_uses_stablehlo_case_and_while():
  g = ember.jit(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x)).lower(True, 0.5).as_text()
  assert '"stablehlo.case"(%0) ({' in g and "stablehlo.cosine %arg1" in g
  h = ember.jit(lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])),
                                         (0, x))).lower(0.5).as_text()
  assert "stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<f32>" in h
  assert "} do {" in h
  # unroll=2 over 5 iterations: a loop of 2-iteration blocks, then one for the remainder
  s = ember.jit(lambda c, xs: lax.scan(lambda c, x: (c + x, c), c, xs, unroll=2)).lower(
      0.0, np.ones(5, np.float32)).as_text()
  assert s.count("stablehlo.while") == 2 and s.count("stablehlo.dynamic_slice") == 3


# --- values: eager and jit against NumPy loops ----------------------------------------


def _np_scan(f, c, xs, reverse=False):
  idx = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
  out = [None] * len(xs)
  for i in idx:
    c, y = f(c, xs[i])
    out[i] = y
  return c, np.stack(out) if len(xs) else np.zeros((0,))


@pytest.mark.parametrize("reverse,unroll", [(False, 1), (True, 1), (False, 2), (True, 3),
                                            (True, True), (False, 0)])
@pytest.mark.parametrize("shape", [(5,), (4, 2, 3)])
def test_scan_matches_numpy(reverse, unroll, shape):
  xs = np.random.default_rng(0).normal(size=shape).astype(np.float32)
  body = lambda c, x: (c * 0.5 + x, np.sin(c) + x)
  cw, yw = _np_scan(body, np.zeros(shape[1:]), xs.astype(np.float64), reverse)
  f = lambda c, xs: lax.scan(lambda c, x: (c * 0.5 + x, jnp.sin(c) + x), c, xs,
                             reverse=reverse, unroll=unroll)
  for fn in both(f):
    c, y = fn(jnp.zeros(shape[1:], jnp.float32), xs)
    close(c, cw)
    close(y, yw)
    assert c.dtype == np.float32 and y.dtype == np.float32 and y.shape == shape


def test_scan_pytrees_length_and_empty():
  def body(carry, x):
    a, (b, n) = carry
    return (a + x["u"], (b * x["v"], n + 1)), {"s": a, "t": (b, n)}
  xs = {"u": np.arange(4, dtype=np.float32), "v": np.full((4, 2), 2.0, np.float32)}
  f = lambda c, xs: lax.scan(body, c, xs)
  for fn in both(f):
    (a, (b, n)), ys = fn((0.0, (jnp.ones(2), 0)), xs)
    close(a, 6.0)
    close(b, [16, 16])
    assert int(n) == 4 and n.dtype == np.int32
    close(ys["s"], [0, 0, 1, 3])
    close(ys["t"][0], [[1, 1], [2, 2], [4, 4], [8, 8]])
    np.testing.assert_array_equal(np.asarray(ys["t"][1]), [0, 1, 2, 3])
  for fn in both(lambda c: lax.scan(lambda c, _: (c * 2.0, c), c, None, length=3)):
    c, ys = fn(1.0)
    close(c, 8.0)
    close(ys, [1, 2, 4])
  for fn in both(lambda c, xs: lax.scan(lambda c, x: (c + x, c), c, xs)):
    c, ys = fn(jnp.float32(1.0), np.zeros((0,), np.float32))
    close(c, 1.0)
    assert ys.shape == (0,) and ys.dtype == np.float32


def test_scan_weak_types_as_jax():
  xs = np.arange(5.0, dtype=np.float32)
  c, ys = lax.scan(lambda c, x: (c * 0.5 + x, jnp.sin(c)), 1.0, xs)
  assert (c.dtype, c.weak_type, ys.weak_type) == (np.float32, False, True)
  c, ys = ember.jit(lambda c, xs: lax.scan(lambda c, x: (c * 0.5, c), c, xs))(1.0, xs)
  assert c.weak_type and ys.weak_type


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_while_and_fori_match_numpy(dtype):
  x = np.arange(1, 7, dtype=dtype).reshape(2, 3)
  f = lambda x: lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * 3 - c[0]),
                               (0, x))
  want = x.astype(np.float64)
  for i in range(4):
    want = want * 3 - i
  for fn in both(f):
    n, out = fn(x)
    assert int(n) == 4
    close(out, want)
    assert out.dtype == dtype
  g = lambda x, lo, hi: lax.fori_loop(lo, hi, lambda i, c: c * 2 + i, x)
  want = x.astype(np.float64)
  for i in range(2, 6):
    want = want * 2 + i
  for fn in (lambda x: g(x, 2, 6), ember.jit(lambda x: g(x, 2, 6)),
             lambda x: ember.jit(g)(x, 2, 6)):   # static bounds: scan; traced: while
    out = fn(x)
    close(out, want)
    assert out.dtype == dtype


def test_while_scalar_results_and_zero_trip():
  r = lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1)
  assert int(r) == 16 and r.dtype == np.int32 and r.weak_type
  for fn in both(lambda x: lax.while_loop(lambda c: c > 100.0, lambda c: c + 1.0, x)):
    close(fn(jnp.float32(3.0)), 3.0)
  r = lax.fori_loop(0, 3, lambda i, c: c + i, 0.0)
  assert float(r) == 3.0 and r.dtype == np.float32 and r.weak_type
  close(lax.fori_loop(5, 2, lambda i, c: c + 1.0, 0.0), 0.0)


def test_cond_and_switch():
  x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
  f = lambda p, x: lax.cond(p, lambda x: jnp.sin(x), lambda x: x * 2.0, x)
  for fn in both(f):
    close(fn(True, x), np.sin(x.astype(np.float64)))
    close(fn(False, x), x * 2.0)
    close(fn(3, x), np.sin(x.astype(np.float64)))   # numbers: nonzero is true (JAX)
  s = lambda i, x: lax.switch(i, [lambda x: x, lambda x: -x, lambda x: x * 10], x)
  for fn in both(s):
    for i, want in [(0, x), (1, -x), (2, 10 * x), (7, 10 * x), (-3, x)]:  # clamped
      close(fn(i, x), want)
  r = lax.cond(True, lambda: 1.0, lambda: 2.0)
  assert r.dtype == np.float32 and r.weak_type
  for fn in both(lambda p: lax.cond(p, lambda: 1.0, lambda: jnp.float32(2.0))):
    r = fn(True)   # weak only where every branch is weak (JAX)
    assert float(r) == 1.0 and r.dtype == np.float32 and not r.weak_type
  # pytrees, several operands, closures (consts shared by the branches)
  w = jnp.arange(3.0)
  g = lambda p, a, b: lax.cond(p, lambda a, b: {"s": a + w, "t": (b,)},
                               lambda a, b: {"s": a * w, "t": (b * 2,)}, a, b)
  for fn in both(g):
    out = fn(False, jnp.ones(3), 1)
    close(out["s"], [0, 1, 2])
    assert int(out["t"][0]) == 2


def test_a_function_given_as_several_branches_is_traced_once():
  # JAX 0.12.1 traces f once for cond(p, f, f, x) and for switch(i, (f, f, g), x) (its
  # trace cache; flax's nnx.cond/switch count on it), eagerly and under jit; the values
  # are each branch's
  counts = collections.Counter()

  def f(x):
    counts["f"] += 1
    return x + 1.0

  def g(x):
    counts["g"] += 1
    return x - 1.0
  x = jnp.float32(1.0)
  assert float(lax.cond(jnp.array(False), f, f, x)) == 2.0 and counts["f"] == 1
  counts.clear()
  assert float(ember.jit(lambda p, x: lax.cond(p, g, g, x))(True, x)) == 0.0
  assert counts == {"g": 1}
  counts.clear()
  out = ember.jit(lambda i, x: lax.switch(i, (f, g, f), x))
  assert [float(out(i, x)) for i in range(3)] == [2.0, 0.0, 2.0]
  assert counts == {"f": 1, "g": 1}
  # grad through a cond whose branches are one function
  assert float(ember.grad(lambda x: lax.cond(x > 0, jnp.sin, jnp.sin, x))(0.5)) == \
      pytest.approx(np.cos(0.5), rel=1e-6)


def test_map_and_associative_scan():
  xs = np.arange(7, dtype=np.float32)
  for bs in (None, 3, 7):
    for fn in both(lambda xs: lax.map(lambda x: x * 2 + 1, xs, batch_size=bs)):
      close(fn(xs), xs * 2 + 1)
  x = np.random.default_rng(1).normal(size=(5, 4)).astype(np.float32)
  for fn in both(lambda x: lax.associative_scan(jnp.add, x)):
    close(fn(x), np.cumsum(x.astype(np.float64), 0), rtol=1e-5)  # reassociated sums
  for fn in both(lambda x: lax.associative_scan(jnp.add, x, axis=1, reverse=True)):
    close(fn(x), np.cumsum(x[:, ::-1].astype(np.float64), 1)[:, ::-1], rtol=1e-5)
  close(lax.associative_scan(jnp.multiply, jnp.arange(1., 6.), reverse=True),
        [120, 120, 60, 20, 5])
  b = np.array([True, False, False, True, False])
  np.testing.assert_array_equal(lax.associative_scan(jnp.logical_or, b),
                                np.logical_or.accumulate(b))


# --- differentiation ------------------------------------------------------------------


def _fd(f, x, eps=1e-6):
  return (f(x + eps) - f(x - eps)) / (2 * eps)


def test_grad_through_scan():
  xs = np.array([0.3, -1.2, 0.7, 2.0], np.float32)
  x64 = xs.astype(np.float64)

  def ref(c, xs):
    c, ys = _np_scan(lambda c, x: (np.sin(c) * x + c, np.cos(c) * x), c, xs)
    return c + ys.sum()
  eye = np.eye(4) * 1e-6
  want_c = _fd(lambda c: ref(c, x64), 0.5)
  want_x = [(ref(0.5, x64 + eye[k]) - ref(0.5, x64 - eye[k])) / 2e-6 for k in range(4)]

  def f(c, xs):
    carry, ys = lax.scan(lambda c, x: (jnp.sin(c) * x + c, jnp.cos(c) * x), c, xs)
    return carry + ys.sum()
  for fn in both(ember.grad(f, argnums=(0, 1))):
    gc, gx = fn(0.5, xs)
    close(gc, want_c, rtol=1e-5)   # float32 loop vs float64 finite differences
    close(gx, want_x, rtol=1e-5)
  close(ember.grad(lambda xs: f(0.5, xs))(xs), want_x, rtol=1e-5)  # constant carry init


def test_grad_through_fori_and_cond():
  f = lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * (i + 1.0), x)
  nf = lambda x: np.sin(np.sin(np.sin(x)) * 2.0) * 3.0
  for fn in both(ember.grad(f)):
    close(fn(0.5), _fd(nf, 0.5), rtol=1e-5)
  g = lambda x: lax.cond(x > 0, jnp.sin, lambda x: x ** 3, x)
  for fn in both(ember.grad(g)):
    close(fn(0.5), np.cos(0.5))
    close(fn(-0.5), 3 * 0.25)
  h = lambda x, i: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x * 2.0)
  for i, want in [(0, 2 * np.cos(1.0)), (1, -2 * np.sin(1.0)), (2, 2 * np.exp(1.0))]:
    close(ember.grad(h)(0.5, i), want)


def test_forward_mode_through_while_and_reverse_error():
  f = lambda x: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, jnp.sin(c[1])),
                               (0, x))[1]
  y, t = ember.jvp(f, (0.5,), (1.0,))
  a = np.sin(0.5)
  b = np.sin(a)
  close(y, np.sin(b))
  close(t, np.cos(b) * np.cos(a) * np.cos(0.5))
  close(ember.jacfwd(f)(0.5), t)
  with pytest.raises(ValueError, match="Reverse-mode differentiation does not work for "
                                       "lax.while_loop or lax.fori_loop with dynamic"):
    ember.grad(f)(0.5)


# --- vmap -------------------------------------------------------------------------------


def test_vmap_of_control_flow():
  x = np.array([0.5, -0.5, 2.0], np.float32)
  close(ember.vmap(lambda x: lax.cond(x > 0, jnp.sin, jnp.cos, x))(x),
        np.where(x > 0, np.sin(x), np.cos(x)))
  close(ember.vmap(lambda p, x: lax.cond(p, jnp.sin, jnp.cos, x), in_axes=(None, 0))(True, x),
        np.sin(x))
  close(ember.vmap(lambda x: lax.while_loop(lambda c: c < 10, lambda c: c * 2, x))(
      np.array([1., 3., 20.], np.float32)), [16, 12, 20])
  xs = np.arange(10, dtype=np.float32).reshape(5, 2)
  f = lambda c, xs: lax.scan(lambda c, x: (c + x, c * x), c, xs)
  c, ys = ember.jit(ember.vmap(f, in_axes=(0, 1)))(np.array([1., 2.], np.float32), xs)
  for k in range(2):
    wc, wy = _np_scan(lambda c, x: (c + x, c * x), float(k + 1), xs[:, k].astype(np.float64))
    close(c[k], wc)
    close(ys[k], wy)


# --- errors -----------------------------------------------------------------------------


def test_errors():
  x = jnp.ones(3)
  with pytest.raises(TypeError, match=r"(?s)cond branches must have equal output types.*"
                     r"The output of true_fun has type float32\[3\] but the corresponding "
                     r"output of false_fun has type int32\[3\], so the dtypes do not match"):
    lax.cond(True, lambda x: x, lambda x: x.astype(jnp.int32), x)
  with pytest.raises(TypeError, match=r"(?s)branch 0.*float32\[3\].*branch1 has type "
                     r"float32\[2\], so the shapes do not match"):
    lax.switch(1, [lambda x: x, lambda x: x[:2]], x)
  with pytest.raises(TypeError, match=r"Pred must be a scalar, got .* of shape \(2,\)"):
    lax.cond(jnp.ones(2) > 0, lambda x: x, lambda x: x, x)
  with pytest.raises(TypeError, match=r"The input carry component c\[1\] has type "
                     r"float32\[3\] but the corresponding output carry component has type "
                     r"int32\[3\], so the dtypes do not match"):
    lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1].astype(jnp.int32)), (0, x))
  with pytest.raises(TypeError, match=r"(?s)scan body function carry input and carry output "
                     r"must have equal types.*The input carry c has type float32\[3\]"):
    lax.scan(lambda c, x: (c.astype(jnp.int32), x), x, x)
  with pytest.raises(TypeError, match=r"cond_fun must return a boolean scalar"):
    lax.while_loop(lambda c: c, lambda c: c, x)
  with pytest.raises(ValueError, match="scan got `length` argument of 4 which disagrees"):
    lax.scan(lambda c, x: (c, x), x, jnp.ones(3), length=4)
  with pytest.raises(TypeError, match=r"scan body output must be a pair, got float32\[3\]"):
    lax.scan(lambda c, x: c, x, jnp.ones(3))
  with pytest.raises(ValueError, match="Empty branch sequence"):
    lax.switch(1, [], x)
  with pytest.raises(TypeError, match="pytree structure"):
    lax.cond(True, lambda x: (x, x), lambda x: x, x)


def test_compiled_loop_bodies_are_native():
  f = ember.jit(lambda x: lax.fori_loop(0, 50, lambda i, c: c * 0.5 + 1.0, x))
  close(f(jnp.float32(0.0)), 2.0 - 2.0 ** -49)
  thunks = f.lower(jnp.float32(0.0)).compile().runtime_executable().thunks
  loops = [t for t in thunks if t.kind == "while"]
  assert loops and all(all(t.native) for t in loops)
  assert all(t.loop is not None for t in loops)   # one generated loop: no Python per step


def test_a_program_of_thunks_alone_skips_llvm(cache):
  """A loop's outer program holds no kernel: no LLVM compile, no engine; it still runs, and
  its persistent-cache entry (written, then loaded) runs too."""
  from ember._src.backends.cpu import llvm_jit
  newton = lambda c: lax.while_loop(lambda c: c[0] < 50,
                                    lambda c: (c[0] + 1, 0.5 * (c[1] + 2.0 / c[1])), (0, c))
  exe = ember.jit(newton).lower(jnp.float32(0.5)).compile().runtime_executable()
  assert not llvm_jit.defines_code(exe.llvm_ir) and exe.engine is None
  assert llvm_jit.compile_whole(exe.llvm_ir, 3, {}) == (0, exe.llvm_ir, llvm_jit.NO_CODE)
  assert llvm_jit.load_object(llvm_jit.NO_CODE, 3)[0] is None
  with pytest.raises(ValueError, match="defines no function"):
    llvm_jit.load_object(llvm_jit.NO_CODE, 3)[1]("fusion")
  for _ in range(2):     # compiled and written, then loaded
    ember.clear_caches()
    close(ember.jit(newton)(jnp.float32(0.5))[1], np.sqrt(2.0))
  assert list(cache.iterdir())


@pytest.mark.parametrize("n", [8, 64])
def test_compiled_loop_with_matmul_body(n):
  rng = np.random.default_rng(2)
  w = (rng.normal(size=(n, n)) / np.sqrt(n)).astype(np.float32)
  x0 = rng.normal(size=(n,)).astype(np.float32)
  f = ember.jit(lambda w, x: lax.fori_loop(0, 4, lambda i, x: jnp.tanh(w @ x), x))
  want = x0.astype(np.float64)
  for _ in range(4):
    want = np.tanh(w.astype(np.float64) @ want)
  close(f(w, x0), want, rtol=1e-5, atol=1e-5)   # float32 dot sums: rounding of n terms


def test_disable_jit_runs_python_control_flow():
  calls = []

  def body(c, x):
    calls.append(x)
    return c + x, c * x
  with ember.disable_jit():
    c, ys = lax.scan(body, 0.0, jnp.arange(4.0), reverse=True)
    assert len(calls) == 4   # the body ran once per element, in Python
    close(c, 6.0)
    close(ys, [0, 5, 6, 0])
    close(lax.cond(True, lambda x: x + 1, lambda x: x - 1, 1.0), 2.0)
    close(lax.switch(3, [lambda x: x + 1, lambda x: x - 1], 1.0), 0.0)
    assert int(lax.while_loop(lambda c: c < 10, lambda c: c * 2, 1)) == 16
    with pytest.raises(ValueError, match="zero-length scan"):
      lax.scan(body, 0.0, jnp.zeros(0))


def test_higher_order_and_batched_derivatives():
  xs = np.array([[0.3, -1.2], [0.7, 2.0], [0.1, 0.5]], np.float32)
  c0 = np.array([0.1, 0.2], np.float32)

  def f(w, c):   # `w` is a closed-over const of the body: its cotangent is accumulated
    c, ys = lax.scan(lambda c, x: (jnp.tanh(c * w + x), (c * w).sum()), c, xs)
    return c.sum() + ys.sum()

  def ref(w, c):
    total = 0.0
    for x in xs.astype(np.float64):
      total += (c * w).sum()
      c = np.tanh(c * w + x)
    return c.sum() + total
  w = np.array([0.5, -0.3], np.float32)
  eye = np.eye(2) * 1e-6
  w64, c64 = w.astype(np.float64), c0.astype(np.float64)
  want_w = [(ref(w64 + e, c64) - ref(w64 - e, c64)) / 2e-6 for e in eye]
  want_c = [(ref(w64, c64 + e) - ref(w64, c64 - e)) / 2e-6 for e in eye]
  for fn in both(ember.grad(f, argnums=(0, 1))):
    gw, gc = fn(w, c0)
    close(gw, want_w, rtol=1e-5)
    close(gc, want_c, rtol=1e-5)
  lin = lambda w: lax.scan(lambda c, x: (c * w + x, c), c0, xs)[1]
  close(ember.jacrev(lin)(w), ember.jacfwd(lin)(w))
  h = ember.hessian(lambda x: lax.cond(x > 0, lambda x: x ** 3, jnp.sin, x))
  close(h(0.5), 3.0)
  close(h(-0.5), -np.sin(-0.5))
  g = ember.vmap(ember.grad(lambda x: lax.fori_loop(0, 2, lambda i, c: jnp.sin(c) * 2, x)))
  x = np.array([0.1, 0.2])
  close(g(x.astype(np.float32)), 2 * np.cos(2 * np.sin(x)) * 2 * np.cos(x))


def test_jit_of_vmap_with_batched_predicates():
  close(ember.jit(ember.vmap(lambda x: lax.while_loop(lambda c: c < 10, lambda c: c * 2, x)))(
      np.array([1., 3., 20.], np.float32)), [16, 12, 20])
  close(ember.jit(ember.vmap(lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], x)))(
      np.array([0, 1, 2, 5]), np.full(4, 0.5, np.float32)),
      [np.sin(0.5), np.cos(0.5), np.exp(0.5), np.exp(0.5)])


def test_compiled_nested_control_flow():
  # the scan's body holds a conditional and a loop (thunks that are not kernels): the outer
  # loop steps through its sub-executables, the inner one is a generated loop
  xs = np.linspace(-1, 1, 6).astype(np.float32)

  def f(c, xs):
    def body(c, x):
      c = lax.cond(x > 0, lambda c: c * x + 1.0, lambda c: c - x, c)
      return lax.fori_loop(0, 3, lambda i, s: s * 0.9, c), jnp.tanh(c)
    return lax.scan(body, c, xs)
  want_c, want_y = 0.5, []
  for x in xs.astype(np.float64):
    want_c = want_c * x + 1.0 if x > 0 else want_c - x
    want_y.append(np.tanh(want_c))
    want_c *= 0.9 ** 3
  for fn in both(f):
    c, ys = fn(jnp.float32(0.5), xs)
    close(c, want_c)
    close(ys, want_y)
  outer = [t for t in ember.jit(f).lower(jnp.float32(0.5), xs).compile()
           .runtime_executable().thunks if t.kind == "while"][0]
  assert outer.loop is None and all(outer.native)
  inner = [t for t in outer.subs[1].exe.thunks if getattr(t, "kind", "") == "while"][0]
  assert inner.loop is not None

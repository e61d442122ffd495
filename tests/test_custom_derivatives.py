"""custom_jvp / custom_vjp: the user's rule is what differentiation uses (eager, under jit,
through a nested jit, at higher order), the functions themselves run unchanged, the
staged equations print as JAX 0.12 prints them (ember.nn.relu, jnp.logaddexp), and the
errors users hit."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import custom_jvp, custom_vjp

f32 = np.float32


pytestmark = pytest.mark.usefixtures("check_compiled")


def _ways(g):
  """g eagerly, jitted, and differentiated through a jit of the function."""
  return (g, ember.jit(g))


# A rule that differs from the true derivative, so tests can tell which one ran.
@custom_jvp
def scaled(x, y):
  return jnp.sin(x) * y


@scaled.defjvp
def scaled_jvp(primals, tangents):
  x, y = primals
  tx, ty = tangents
  return scaled(x, y), 10.0 * jnp.cos(x) * y * tx + jnp.sin(x) * ty


def test_custom_jvp_rule_is_used():
  x, y = 0.5, 2.0
  expected = (10 * np.cos(x) * y, np.sin(x))
  for g in (ember.grad(scaled, argnums=(0, 1)), ember.jit(ember.grad(scaled, argnums=(0, 1))),
            ember.grad(ember.jit(scaled), argnums=(0, 1))):
    gx, gy = g(x, y)
    np.testing.assert_allclose([float(gx), float(gy)], expected, rtol=1e-6)
  out, t = ember.jvp(scaled, (x, y), (1.0, 0.0))
  np.testing.assert_allclose([float(out), float(t)], [np.sin(x) * y, expected[0]], rtol=1e-6)
  np.testing.assert_allclose(scaled(x, y), np.sin(x) * y, rtol=1e-6)  # eager: just runs
  # second order differentiates the rule: d/dx 10 cos(x) y = -10 sin(x) y
  np.testing.assert_allclose(float(ember.grad(ember.grad(scaled))(x, y)), -10 * np.sin(x) * y,
                             rtol=1e-6)
  np.testing.assert_allclose(ember.jacfwd(scaled)(np.array([0.1, 0.2], f32), 1.0),
                             np.diag(10 * np.cos([0.1, 0.2])), rtol=1e-6)


def test_custom_jvp_staged_equation_as_jax():
  assert str(ember.make_jaxpr(scaled)(1., 2.)) == """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] = custom_jvp_call[
      name=scaled
      call_jaxpr={ lambda ; d:f32[] e:f32[]. let
          f:f32[] = sin d
          g:f32[] = mul f e
        in (g,) }
      jvp=scaled_jvp
      symbolic_zeros=False
    ] a b
  in (c,) }"""


def test_defjvps_nondiff_argnums_kwargs_pytrees():
  @custom_jvp
  def f(x, y):
    return x * y
  f.defjvps(lambda g, ans, x, y: g * y * 3, None)
  assert float(ember.grad(f)(2.0, 5.0)) == 15.0
  assert float(ember.grad(f, argnums=1)(2.0, 5.0)) == 0.0   # no rule: zero
  assert float(ember.grad(lambda x: f(x, y=5.0))(2.0)) == 15.0

  @ember.custom_jvp
  def apply(fn, x):
    return fn(x)

  @apply.defjvp
  def apply_jvp(fn, primals, tangents):
    (x,), (t,) = primals, tangents
    return apply(fn, x), 2 * t
  apply = custom_jvp(apply.fun, nondiff_argnums=(0,))
  apply.defjvp(apply_jvp)
  assert float(ember.grad(lambda x: apply(jnp.sin, x))(1.0)) == 2.0

  @custom_jvp
  def tree_fn(d):
    return {"s": d["a"] * d["b"]}

  @tree_fn.defjvp
  def tree_fn_jvp(primals, tangents):
    (d,), (t,) = primals, tangents
    return tree_fn(d), {"s": t["a"] + t["b"]}
  g = ember.grad(lambda d: tree_fn(d)["s"])({"a": 2.0, "b": 3.0})
  assert float(g["a"]) == 1.0 and float(g["b"]) == 1.0


def test_custom_rules_under_vmap():
  x = np.array([0.1, 0.5, 1.0], f32)
  np.testing.assert_allclose(ember.vmap(scaled, in_axes=(0, None))(x, 2.0), np.sin(x) * 2,
                             rtol=1e-6)
  for g in (ember.vmap(ember.grad(scaled), in_axes=(0, None)),
            ember.grad(lambda x, y: ember.vmap(scaled, in_axes=(0, None))(x, y).sum())):
    np.testing.assert_allclose(g(x, 2.0), 10 * np.cos(x) * 2, rtol=1e-6)
  # grad of a vmapped relu uses relu's rule (0 at 0), not max's (1/2 at a tie)
  r = np.array([-1., 0., 2.], f32)
  for g in _ways(ember.grad(lambda x: ember.vmap(ember.nn.relu)(x).sum())):
    np.testing.assert_allclose(g(r), [0., 0., 1.])
  y = np.array([[-1., 0.5], [2., 3.]], f32)
  clip = lambda v: clip_gradient(v * 3, -0.5, 0.5)
  for g in _ways(ember.grad(lambda y: ember.vmap(ember.vmap(clip))(y).sum())):
    np.testing.assert_allclose(g(y), np.full((2, 2), 1.5))
  np.testing.assert_allclose(ember.vmap(clip)(y), y * 3)



@custom_jvp
def checked(x, failed):
  """equinox's error_if pattern: a cond on an unbatched predicate whose true branch runs a
  host callback (the check); the callback counts the times it runs."""
  return ember.lax.cond(failed, lambda v: ember.pure_callback(
      _count_call, ember.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential"),
      lambda v: v, x)


@checked.defjvp
def checked_jvp(primals, tangents):
  return checked(*primals), tangents[0] * 2   # not the true derivative: tests see the rule


_CALLS = []


def _count_call(v):
  _CALLS.append(v)
  return v


def test_custom_jvp_under_vmap_keeps_unbatched_inputs_unbatched():
  # vmap batches the call with only the mapped inputs batched (JAX): the predicate stays
  # unbatched, so the cond stays a cond and the check's callback does not run
  x = np.array([0.5, 1.0, 2.0], f32)
  f = ember.vmap(lambda v: checked(v, jnp.isnan(jnp.float32(1.0))))
  for g in _ways(f):
    _CALLS.clear()
    np.testing.assert_array_equal(g(x), x)
    assert _CALLS == []
  assert "cond[" in str(ember.make_jaxpr(f)(x)) and "select_n" not in str(ember.make_jaxpr(f)(x))
  # a failing predicate runs the branch once per example (sequential)
  _CALLS.clear()
  np.testing.assert_array_equal(ember.vmap(lambda v: checked(v, True))(x), x)
  assert len(_CALLS) == 3
  # the rule is batched the same way, for either order of grad and vmap, and for jvp
  w = f32(3.0)
  for g in (ember.vmap(ember.grad(lambda v, w: checked(v * w, False)), in_axes=(0, None)),
            ember.grad(lambda v, w: ember.vmap(lambda e: checked(e * w, False))(v).sum())):
    np.testing.assert_allclose(g(x, w), np.full(3, 2 * w), rtol=1e-6)
  gw = ember.grad(lambda w: ember.vmap(lambda e: checked(e * w, False))(x).sum())(w)
  np.testing.assert_allclose(gw, 2 * x.sum(), rtol=1e-6)
  out, tan = ember.jvp(ember.vmap(lambda v, w: checked(v * w, False), in_axes=(0, None)),
                       (x, w), (np.ones(3, f32), f32(1.0)))
  np.testing.assert_allclose(out, x * w, rtol=1e-6)
  np.testing.assert_allclose(tan, 2 * (w + x), rtol=1e-6)

@custom_vjp
def clip_gradient(x, lo, hi):
  return x


def _clip_fwd(x, lo, hi):
  return x, (lo, hi)


def _clip_bwd(res, g):
  lo, hi = res
  return (jnp.clip(g, lo, hi), None, None)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_bwd_is_used():
  f = lambda x: jnp.sum(clip_gradient(x, -0.5, 0.5) * np.array([2.0, 0.1, -3.0], f32))
  x = np.ones(3, f32)
  for g in (ember.grad(f), ember.jit(ember.grad(f)), ember.grad(ember.jit(f))):
    np.testing.assert_allclose(g(x), [0.5, 0.1, -0.5])
  np.testing.assert_allclose(clip_gradient(x, 0., 1.), x)
  _, vjp_fn = ember.vjp(lambda x: clip_gradient(x, -1.0, 1.0), x)
  np.testing.assert_allclose(vjp_fn(np.array([3., -0.2, -5.], f32))[0], [1., -0.2, -1.])


def test_custom_vjp_residuals_second_order_and_nondiff():
  @custom_vjp
  def f(x):
    return jnp.sin(x)

  f.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda cos_x, g: (cos_x * g * 2,))
  assert float(ember.grad(f)(0.0)) == 2.0
  # the bwd rule is differentiable: d/dx 2 cos(x) = -2 sin(x)
  np.testing.assert_allclose(float(ember.grad(ember.grad(f))(0.3)), -2 * np.sin(0.3), rtol=1e-6)

  @ember.custom_vjp
  def scale(k, x):
    return k * x

  def scale_fwd(k, x):
    return k * x, None

  def scale_bwd(k, res, g):
    return (g * k * 100,)
  scale = custom_vjp(scale.fun, nondiff_argnums=(0,))
  scale.defvjp(scale_fwd, scale_bwd)
  assert float(ember.grad(lambda x: scale(3.0, x))(1.0)) == 300.0


def test_custom_vjp_staged_equation_and_grad_jaxpr_as_jax():
  @custom_vjp
  def g(x):
    return jnp.sin(x)
  g.defvjp(lambda x: (jnp.sin(x), jnp.cos(x)), lambda r, ct: (r * ct,))
  assert str(ember.make_jaxpr(g)(1.)) == """\
{ lambda ; a:f32[]. let
    b:f32[] = custom_vjp_call[
      name=g
      bwd=<lambda>
      call_jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c in (d,) }
      fwd=<lambda>
      symbolic_zeros=False
    ] a
  in (b,) }"""
  assert str(ember.make_jaxpr(ember.grad(g))(1.)) == """\
{ lambda ; a:f32[]. let
    _:f32[] = sin a
    b:f32[] = cos a
    c:f32[] = mul b 1.0:f32[]
  in (c,) }"""


def test_relu_and_logaddexp_are_custom_jvp_as_jax():
  assert str(ember.make_jaxpr(ember.nn.relu)(jnp.ones(3))) == """\
{ lambda ; a:f32[3]. let
    b:f32[3] = custom_jvp_call[
      name=relu
      call_jaxpr={ lambda ; c:f32[3]. let
          d:f32[3] = jit[
            name=relu
            jaxpr={ lambda ; c:f32[3]. let d:f32[3] = max c 0.0:f32[] in (d,) }
          ] c
        in (d,) }
      jvp=jvp
      symbolic_zeros=False
    ] a
  in (b,) }"""
  assert str(ember.make_jaxpr(ember.grad(ember.nn.relu))(1.)) == """\
{ lambda ; a:f32[]. let
    _:f32[] = custom_jvp_call[
      name=relu
      call_jaxpr={ lambda ; b:f32[]. let
          c:f32[] = jit[
            name=relu
            jaxpr={ lambda ; b:f32[]. let c:f32[] = max b 0.0:f32[] in (c,) }
          ] b
        in (c,) }
      jvp=jvp
      symbolic_zeros=False
    ] a
    d:bool[] = gt a 0.0:f32[]
    e:f32[] = select_n d 0.0:f32[] 1.0:f32[]
  in (e,) }"""
  assert str(ember.make_jaxpr(jnp.logaddexp)(jnp.ones(3), 2.)) == """\
{ lambda ; a:f32[3] b:f32[]. let
    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    d:f32[3] = custom_jvp_call[
      name=logaddexp
      call_jaxpr={ lambda ; e:f32[3] f:f32[]. let
          g:f32[3] = max e f
          h:f32[3] = sub e f
          i:bool[3] = ne h h
          j:f32[3] = add e f
          k:f32[3] = abs h
          l:f32[3] = neg k
          m:f32[3] = exp l
          n:f32[3] = log1p m
          o:f32[3] = add g n
          p:f32[3] = select_n i o j
        in (p,) }
      jvp=_logaddexp_jvp
      symbolic_zeros=False
    ] a c
  in (d,) }"""
  # long call_jaxprs are printed up front under JAX's name for them
  assert str(ember.make_jaxpr(jnp.logaddexp2)(1., 2.)).startswith("let jaxpr = {")


@pytest.mark.parametrize("x1, x2", [(0.3, -1.2), (5.0, 5.0), (-30.0, 2.0)])
def test_logaddexp_values_and_gradients(x1, x2):
  for fn, base in ((jnp.logaddexp, np.e), (jnp.logaddexp2, 2.0)):
    out = np.log(base ** x1 + base ** x2) / np.log(base)
    w1, w2 = base ** x1 / (base ** x1 + base ** x2), base ** x2 / (base ** x1 + base ** x2)
    for g in _ways(ember.grad(fn, argnums=(0, 1))):
      g1, g2 = g(x1, x2)
      np.testing.assert_allclose([float(g1), float(g2)], [w1, w2], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(float(fn(x1, x2)), out, rtol=1e-6)
  x = np.array([[0.5, -1.0, 2.0]], f32)
  g = ember.grad(lambda x: jnp.sum(jnp.logaddexp(x, 0.25)))(x)
  np.testing.assert_allclose(g, 1 / (1 + np.exp(0.25 - x.astype(np.float64))), rtol=1e-6)


def test_relu_gradients():
  x = np.array([-1.0, 0.0, 2.0], f32)
  for g in _ways(ember.grad(lambda x: jnp.sum(ember.nn.relu(x) * 3))):
    np.testing.assert_allclose(g(x), [0.0, 0.0, 3.0])
  np.testing.assert_array_equal(ember.nn.relu(np.array([-2, 3], np.int32)), [0, 3])


def test_closure_convert_and_custom_derivatives_module():
  from ember import custom_derivatives as cd
  assert cd.custom_jvp is custom_jvp and cd.custom_vjp is custom_vjp
  w = jnp.asarray(np.array([1.0, 2.0], f32))
  fn, consts = cd.closure_convert(lambda x: x * w, np.ones(2, f32))
  assert len(consts) == 1
  np.testing.assert_allclose(fn(np.ones(2, f32), *consts), [1.0, 2.0])


@pytest.mark.parametrize("call, cls, msg", [
    (lambda: custom_jvp(lambda x: x)(1.0), AttributeError,
     "No JVP defined for custom_jvp function <lambda> using defjvp."),
    (lambda: custom_vjp(lambda x: x)(1.0), AttributeError,
     "No VJP defined for custom_vjp function <lambda> using defvjp."),
    (lambda: ember.jvp(clip_gradient, (1.0, 0.0, 1.0), (1.0, 0.0, 0.0)), TypeError,
     "can't apply forward-mode autodiff (jvp) to a custom_vjp function."),
])
def test_errors(call, cls, msg):
  with pytest.raises(cls) as e:
    call()
  assert msg in str(e.value)


def test_bad_rules_raise():
  @custom_vjp
  def g(x):
    return x
  g.defvjp(lambda x: (x, None), lambda r, ct: (ct, ct))
  with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the "
                                      "same container"):
    ember.grad(g)(1.0)

  @custom_jvp
  def h(x):
    return x
  h.defjvp(lambda p, t: p[0])
  with pytest.raises(TypeError, match="Custom JVP rule must produce a pair"):
    ember.grad(h)(1.0)

  @custom_jvp
  def k(x):
    return x
  k.defjvp(lambda p, t: (p[0], jnp.ones(3)))
  with pytest.raises(TypeError, match="must produce primal and tangent outputs with "
                                      "corresponding shapes and dtypes"):
    ember.grad(k)(1.0)


def test_symbolic_zeros():
  from ember.custom_derivatives import SymbolicZero
  seen = []

  @custom_jvp
  def f(x, y):
    return x * y

  def f_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    seen.append((type(tx) is SymbolicZero, type(ty) is SymbolicZero))
    out = tx * y if type(ty) is SymbolicZero else tx * y + x * ty
    return f(x, y), out
  f.defjvp(f_jvp, symbolic_zeros=True)
  assert float(ember.grad(f)(2.0, 3.0)) == 3.0
  assert seen[-1] == (False, True)


def test_custom_gradient():
  @ember.custom_gradient
  def f(x):
    return x ** 2, lambda g: (g * x * 10,)
  assert float(f(3.0)) == 9.0
  for g in _ways(ember.grad(f)):
    assert float(g(3.0)) == 30.0
  np.testing.assert_allclose(ember.grad(lambda x: ember.vmap(f)(x).sum())(np.ones(2, f32)),
                             [10.0, 10.0])

  @ember.custom_gradient
  def h(x, y):
    return x * y, lambda g: (g * y, g * x * 2)
  gx, gy = ember.grad(h, argnums=(0, 1))(2.0, 3.0)
  assert (float(gx), float(gy)) == (3.0, 4.0)


def _quant_and_use(calls):
  """flax's fp8 pattern: a custom_vjp whose bwd ignores its cotangent and sends a side value
  back (the new amax history), feeding one whose bwd gives no cotangent for it."""
  @custom_vjp
  def quant(x, h):
    return jnp.round(x), h + 1

  def qbwd(new_h, g):
    calls.append("q")
    return None, new_h * 10
  quant.defvjp(lambda x, h: ((jnp.round(x), h + 1), h + 1), qbwd)

  @custom_vjp
  def use(x, qx):
    return x * qx

  def ubwd(res, g):
    calls.append("u")
    return g * res[1], None
  use.defvjp(lambda x, qx: (x * qx, (x, qx)), ubwd)
  return quant, use


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit], ids=["eager", "jit"])
def test_custom_vjp_bwd_runs_for_zero_cotangents_of_used_outputs(wrap):
  calls = []
  quant, use = _quant_and_use(calls)

  def loss(x, h):
    qx, _ = quant(x, h)
    return jnp.sum(use(x, qx))
  gx, gh = wrap(ember.grad(loss, (0, 1)))(jnp.array([1.2, 2.7]), jnp.arange(2.0))
  # JAX 0.12.1: (Array([1., 3.]), Array([10., 20.])), both bwds called: use's, then quant's
  np.testing.assert_allclose(gx, [1.0, 3.0], rtol=1e-6)
  np.testing.assert_array_equal(gh, [10.0, 20.0])
  assert calls == ["u", "q"]


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit], ids=["eager", "jit"])
def test_custom_vjp_bwd_skipped_for_unused_outputs(wrap):
  calls = []
  quant, _ = _quant_and_use(calls)

  def loss(x, h):
    qx, nh = quant(x, h)
    return jnp.sum(ember.lax.stop_gradient(qx)) + jnp.sum(ember.lax.stop_gradient(nh))
  gx, gh = wrap(ember.grad(loss, (0, 1)))(jnp.array([1.2, 2.7]), jnp.arange(2.0))
  # JAX 0.12.1: zeros, and quant's bwd is not called
  np.testing.assert_array_equal(gx, [0.0, 0.0])
  np.testing.assert_array_equal(gh, [0.0, 0.0])
  assert calls == []


def test_custom_derivative_rules_keep_no_tracer_of_the_caller():
  # the rules a custom_jvp call stages keep only its nondiff arguments, never the traced
  # ones: with leak checking on, tracing again finds no tracer of a finished trace (flax's
  # tabulate of a scanned LSTM; JAX 0.12.1 runs this without a leak error)
  def body(c, x):
    return ember.nn.relu(c * x), ember.nn.sigmoid(c)

  def f(c, xs):
    return ember.lax.scan(body, c, xs)
  with ember.checking_leaks():
    assert ember.eval_shape(f, jnp.ones(3), jnp.ones((4, 3)))[0].shape == (3,)
    g = ember.eval_shape(ember.grad(lambda c, xs: f(c, xs)[0].sum()), jnp.ones(3),
                         jnp.ones((4, 3)))
    assert g.shape == (3,)
    np.testing.assert_allclose(ember.jit(jnp.cos)(1.0), np.cos(np.float32(1.0)), rtol=1e-6)
    assert ember.eval_shape(f, jnp.ones(3), jnp.ones((4, 3)))[0].shape == (3,)

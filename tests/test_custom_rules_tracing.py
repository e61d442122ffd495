"""What runs when a custom_jvp / custom_vjp function is transformed, as in JAX 0.12.1: under
differentiation only the rule runs (the function itself is never traced, so Python control
flow on its inputs works); under vmap the function and rules run on the vmap's tracers;
integer and key arguments get float0 zero tangents; key outputs take float0 cotangents of
the key's shape. With the neighbouring behaviours JAX's libraries lean on: a jvp trace
gives the primal itself for an output with a zero tangent (equinox's filter_jvp),
linear_transpose takes ShapeDtypeStruct/ShapedArray primals, vmap's axis specs match
containers by their number of children (a list spec for a tuple). Expected values and
logs were recorded from JAX 0.12.1."""
import functools

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import custom_jvp, custom_vjp
from ember.extend.core import Primitive
from ember.interpreters import ad

f32 = np.float32
float0 = ember.dtypes.float0


def _kind(x):
  return "T" if isinstance(x, ember.core.Tracer) else "v"


def _logged_rules():
  """(f, g, log): a custom_jvp f and a custom_vjp g whose primal functions branch in Python
  on their input (they fail when traced) and whose rules are not the true derivative (10x),
  each logging what it is called with (value 'v' or tracer 'T')."""
  log = []

  @custom_jvp
  def f(x):
    log.append(("f", _kind(x)))
    return jnp.sin(x) if x > 0 else x

  @f.defjvp
  def f_jvp(p, t):
    log.append(("jvp", _kind(p[0]), _kind(t[0])))
    return jnp.sin(p[0]), 10 * jnp.cos(p[0]) * t[0]

  @custom_vjp
  def g(x):
    log.append(("g", _kind(x)))
    return jnp.sin(x) if x > 0 else x

  def g_fwd(x):
    log.append(("fwd", _kind(x)))
    return jnp.sin(x), jnp.cos(x)

  def g_bwd(c, ct):
    log.append(("bwd", _kind(c), _kind(ct)))
    return (10 * c * ct,)
  g.defvjp(g_fwd, g_bwd)
  return f, g, log


_XS = np.array([0.5, 1.0], f32)
_D = 10 * np.cos(0.5)
_CASES = {   # name -> (computation of fn, expected value)
    "grad": (lambda fn: ember.grad(fn)(0.5), _D),
    "value_and_grad": (lambda fn: ember.value_and_grad(fn)(0.5)[1], _D),
    "vjp": (lambda fn: ember.vjp(fn, 0.5)[1](1.0)[0], _D),
    "jit_grad": (lambda fn: ember.jit(ember.grad(fn))(0.5), _D),
    "vmap_grad": (lambda fn: ember.vmap(ember.grad(fn))(_XS), 10 * np.cos(_XS)),
    "grad_vmap": (lambda fn: ember.grad(lambda v: ember.vmap(fn)(v).sum())(_XS),
                  10 * np.cos(_XS)),
    "grad_grad": (lambda fn: ember.grad(ember.grad(fn))(0.5), -10 * np.sin(0.5)),
    "jvp": (lambda fn: ember.jvp(fn, (0.5,), (1.0,))[1], _D),
    "linearize": (lambda fn: ember.linearize(fn, 0.5)[1](1.0), _D),
}
# JAX 0.12.1's logs (jit_grad's bwd there gets the seed cotangent as a tracer; ember's jit
# gives the constant seed as a value: only the residual's kind is compared)
_JVP_LOGS = {
    "grad": [("jvp", "v", "T")], "value_and_grad": [("jvp", "v", "T")],
    "vjp": [("jvp", "v", "T")], "jit_grad": [("jvp", "T", "T")],
    "vmap_grad": [("jvp", "T", "T")], "grad_vmap": [("jvp", "T", "T")],
    "grad_grad": [("jvp", "T", "T")], "jvp": [("jvp", "v", "v")],
    "linearize": [("jvp", "v", "T")],
}
_VJP_LOGS = {
    "grad": [("fwd", "v"), ("bwd", "v", "v")], "value_and_grad": [("fwd", "v"), ("bwd", "v", "v")],
    "vjp": [("fwd", "v"), ("bwd", "v", "v")], "jit_grad": [("fwd", "T"), ("bwd", "T")],
    "vmap_grad": [("fwd", "T"), ("bwd", "T", "v")], "grad_vmap": [("fwd", "T"), ("bwd", "T", "T")],
    "grad_grad": [("fwd", "T"), ("bwd", "T", "v")],
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_custom_jvp_runs_only_its_rule_under_differentiation(case):
  f, _, log = _logged_rules()
  run, expected = _CASES[case]
  np.testing.assert_allclose(run(f), expected, rtol=1e-6)
  assert log == _JVP_LOGS[case]


@pytest.mark.parametrize("case", sorted(_VJP_LOGS))
def test_custom_vjp_runs_only_fwd_and_bwd_under_differentiation(case):
  _, g, log = _logged_rules()
  run, expected = _CASES[case]
  np.testing.assert_allclose(run(g), expected, rtol=1e-6)
  if case == "jit_grad":
    log[1] = log[1][:2]
  assert log == _VJP_LOGS[case]


def test_the_function_itself_runs_where_jax_runs_it():
  f, g, log = _logged_rules()
  for fn, name in ((f, "f"), (g, "g")):
    log.clear()
    np.testing.assert_allclose(fn(0.5), np.sin(0.5), rtol=1e-6)   # eager: the function
    assert log == [(name, "v")]
    # an input with no tangent: the function, on the value, not the rule
    log.clear()
    np.testing.assert_allclose(ember.grad(lambda y: fn(2.0) * y)(1.0), np.sin(2.0), rtol=1e-6)
    assert log == [(name, "v")]
    # jit traces the function (JAX: TracerBoolConversionError from its `if`), as does vmap
    for transformed, arg in ((ember.jit(fn), 0.5), (ember.jit(ember.grad(ember.jit(fn))), 0.5),
                             (ember.vmap(fn), _XS)):
      with pytest.raises(ember.errors.TracerBoolConversionError):
        transformed(arg)
  with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
    ember.jvp(g, (0.5,), (1.0,))
  assert log[-1] == ("fwd", "v")


def test_a_staged_call_still_uses_the_rule():
  log = []

  @custom_jvp
  def smooth(x):
    log.append(("smooth", _kind(x)))
    return jnp.sin(x)
  smooth.defjvp(lambda p, t: (smooth(p[0]), 10 * jnp.cos(p[0]) * t[0]))
  np.testing.assert_allclose(ember.grad(ember.jit(smooth))(0.5), _D, rtol=1e-6)
  # JAX: the function traced by jit, then the rule (whose primal call is traced once more)
  assert log == [("smooth", "T"), ("smooth", "T")]
  log.clear()
  np.testing.assert_allclose(ember.vmap(ember.grad(smooth))(_XS), 10 * np.cos(_XS), rtol=1e-6)
  assert log == [("smooth", "T")]    # from inside the rule only


# --- integer and key arguments; key cotangents -------------------------------------------

@custom_vjp
def _scale(x, n):
  return x * n


_scale.defvjp(lambda x, n: (x * n, n), lambda n, g: (g * n * 10, None))


@custom_vjp
def _noisy(x, key):
  return x + ember.random.normal(key)


_noisy.defvjp(lambda x, key: (_noisy(x, key), None), lambda _, g: (g * 10, None))


def test_custom_vjp_with_int_and_key_arguments():
  for g in (ember.grad(_scale), ember.jit(ember.grad(_scale))):
    assert float(g(2.0, 3)) == 30.0
  gx, gn = ember.grad(_scale, (0, 1), allow_int=True)(2.0, 3)
  assert float(gx) == 30.0 and gn.dtype == float0 and gn.shape == ()
  ct_x, ct_n = ember.vjp(_scale, 2.0, 3)[1](1.0)
  assert float(ct_x) == 30.0 and ct_n.dtype == float0
  np.testing.assert_allclose(ember.vmap(ember.grad(_scale), (0, None))(np.array([1., 2.], f32), 3),
                             [30.0, 30.0])
  key = ember.random.key(0)
  for g in (ember.grad(_noisy), ember.jit(ember.grad(_noisy))):
    assert float(g(2.0, key)) == 10.0
  assert float(ember.grad(_noisy)(2.0, ember.random.PRNGKey(0))) == 10.0   # raw key
  ct_x, ct_k = ember.vjp(_noisy, 2.0, key)[1](1.0)
  assert float(ct_x) == 10.0 and (ct_k.shape, ct_k.dtype) == ((), float0)


def test_vjp_of_key_outputs_takes_float0_of_the_key_shape():
  key = ember.random.key(0)
  (ct,) = ember.vjp(lambda k: ember.random.split(k), key)[1](np.zeros((2,), float0))
  assert (ct.shape, ct.dtype) == ((), float0)
  ct_k, ct_x = ember.vjp(lambda k, x: (k, x * 2), key, 1.0)[1](
      (np.zeros((), float0), 1.0))
  assert (ct_k.shape, ct_k.dtype) == ((), float0) and float(ct_x) == 2.0
  # linearize: a key's tangent in and out is a float0 array of its shape
  f_jvp = ember.linearize(lambda k, x: (ember.random.split(k), x * 2), key, 1.0)[1]
  t_k, t_x = f_jvp(np.zeros((), float0), 1.0)
  assert (t_k.shape, t_k.dtype) == ((2,), float0) and float(t_x) == 2.0
  with pytest.raises(ValueError, match=r"unexpected JAX type \(e.g. shape/dtype\) for argument "
                     r"to VJP function: got float0\[3\], but expected float0\[2\] because the "
                     r"corresponding output of the differentiated function had JAX type "
                     r"key<fry>\[2\]"):
    ember.vjp(lambda k: ember.random.split(k), key)[1](np.zeros((3,), float0))


# --- jvp: the primal for outputs with zero tangents; rules see the values given -----------

def test_jvp_trace_gives_primals_for_outputs_with_zero_tangents():
  seen = {}

  def probe(x):
    n = jnp.int32(2)
    outs = (x * 2, n * 3, jnp.floor(n), x.astype(jnp.int32), ember.lax.stop_gradient(x),
            n > 1, x + n)
    seen["tracers"] = tuple(isinstance(o, ad.JVPTracer) for o in outs)
    return x
  ember.jvp(probe, (1.0,), (1.0,))
  assert seen["tracers"] == (True, False, False, False, False, False, True)


def test_custom_jvp_rule_sees_python_scalars_given_to_jvp():
  @custom_jvp
  def sq(x):
    return x * x

  @sq.defjvp
  def sq_jvp(p, t):
    return p[0] * p[0], 2 * p[0] * t[0]
  out, tan = ember.jvp(sq, (3.0,), (1.0,))
  assert (type(out), type(tan), out, tan) == (float, float, 9.0, 6.0)
  # ... and the primitives' rules then meet those scalars held as Arrays (optax's
  # scale_gradient: a fwd returning its Python-float input, squared after)
  assert float(ember.grad(lambda x: sq(x) ** 2)(3.0)) == 108.0

  @custom_vjp
  def ident(x):
    return x
  ident.defvjp(lambda x: (x, None), lambda _, g: (g * 3,))
  assert float(ember.grad(lambda x: ident(x) ** 2)(2.0)) == 12.0
  out, tan = ember.jvp(lambda x: sq(x) * 1, (3.0,), (1.0,))
  assert isinstance(out, ember.Array) and isinstance(tan, ember.Array)
  assert (float(out), float(tan)) == (9.0, 6.0)
  out, tan = ember.jvp(sq, (jnp.float32(3.0),), (jnp.float32(1.0),))
  assert isinstance(out, ember.Array) and isinstance(tan, ember.Array)
  # an operation's result is an Array; only an input returned as it is keeps its type
  out, tan = ember.jvp(lambda x: x + 1, (1.0,), (1.0,))
  assert isinstance(out, ember.Array) and isinstance(tan, ember.Array)
  assert ember.jvp(lambda x: x, (1.0,), (2.0,)) == (1.0, 2.0)


# --- vmap of custom rules ------------------------------------------------------------------

@custom_vjp
def _shared(x, y):
  return x * y, y * 2


_shared.defvjp(lambda x, y: (_shared(x, y), (x, y)),
               lambda r, g: (g[0] * r[1], g[0] * r[0] + 2 * g[1]))


@custom_jvp
def _shared_jvp(x, y):
  return x * y, y * 2


@_shared_jvp.defjvp
def _shared_jvp_rule(p, t):
  (x, y), (tx, ty) = p, t
  return _shared_jvp(x, y), (tx * y + x * ty, 2 * ty)


def test_vmap_keeps_unbatched_outputs_of_custom_functions_unbatched():
  xs = np.array([1.0, 2.0, 3.0], f32)
  for fn in (_shared, _shared_jvp):
    a, b = ember.vmap(fn, (0, None), out_axes=(0, None))(xs, 5.0)
    np.testing.assert_allclose(a, [5., 10., 15.])
    assert float(b) == 10.0
  (a, b), (ta, tb) = ember.jvp(
      lambda y: ember.vmap(_shared_jvp, (0, None), out_axes=(0, None))(xs, y), (5.0,), (1.0,))
  np.testing.assert_allclose(ta, [1., 2., 3.])
  assert float(tb) == 2.0
  assert float(ember.grad(lambda y: ember.vmap(_shared_jvp, (0, None), out_axes=(0, None))(
      xs, y)[1])(5.0)) == 2.0


def test_vmapped_bwd_of_a_shared_output():
  xs = np.array([1.0, 2.0, 3.0], f32)
  # the unbatched output's cotangent is zero: the batched one's is summed (JAX: 6 and 5s)
  assert float(ember.grad(lambda y: ember.vmap(_shared, (0, None))(xs, y)[0].sum())(5.0)) == 6.0
  np.testing.assert_allclose(ember.grad(lambda x: ember.vmap(
      _shared, (0, None), out_axes=(0, None))(x, 5.0)[0].sum())(xs), [5., 5., 5.])
  # a nonzero cotangent of an unbatched output would be counted once per example: JAX's error
  both = lambda y: (lambda o: o[0].sum() + o[1].sum())(
      ember.vmap(_shared, (0, None), out_axes=(0, None))(xs, y))
  with pytest.raises(ValueError, match="under vmap, the custom_vjp function _shared has a primal "
                     "output that is shared across the batch"):
    ember.grad(both)(5.0)


def test_vmap_batches_custom_rules_lazily_at_every_order():
  xs = np.array([0.1, 0.5, 1.0], f32)
  for fn in _logged_rules()[:2]:
    expected = 10 * np.cos(xs)
    for g in (ember.grad(lambda x: ember.vmap(fn)(x).sum()),
              ember.jit(ember.grad(lambda x: ember.vmap(fn)(x).sum())),
              ember.grad(lambda x: ember.vmap(ember.vmap(fn))(x[None]).sum())):
      np.testing.assert_allclose(g(xs).reshape(-1), expected, rtol=1e-6)
    two = np.stack([xs, xs * 2])
    np.testing.assert_allclose(
        ember.grad(lambda x: ember.vmap(fn, 1)(x).sum())(two.T), 10 * np.cos(two.T), rtol=1e-6)
    np.testing.assert_allclose(
        ember.vmap(ember.grad(lambda x: ember.vmap(fn)(x).sum()))(two), 10 * np.cos(two),
        rtol=1e-6)
  f = _logged_rules()[0]
  np.testing.assert_allclose(ember.jvp(lambda x: ember.vmap(f)(x), (xs,), (np.ones(3, f32),))[1],
                             10 * np.cos(xs), rtol=1e-6)


# --- linear_transpose and vmap's axis specs ---------------------------------------------

def test_linear_transpose_takes_types():
  double = lambda x: 2 * x
  for primal in (ember.ShapeDtypeStruct((2,), jnp.float32),
                 ember.core.ShapedArray((2,), jnp.float32), jnp.zeros(2)):
    (ct,) = ember.linear_transpose(double, primal)(jnp.ones(2))
    np.testing.assert_array_equal(ct, [2., 2.])
  t = ember.linear_transpose(lambda x: x * 2, ember.ShapeDtypeStruct((2,), jnp.int32))
  (ct,) = t(jnp.ones(2, jnp.int32))
  assert ct.dtype == jnp.int32 and ct.tolist() == [2, 2]
  t = ember.linear_transpose(lambda d: d["a"] * 3, {"a": ember.ShapeDtypeStruct((), jnp.float32)})
  assert float(t(2.0)[0]["a"]) == 6.0
  assert ember.tree_util.tree_leaves(t) == []   # a pytree (JAX's Partial), here with no consts
  assert float(ember.jit(lambda t, c: t(c))(t, 2.0)[0]["a"]) == 6.0
  with pytest.raises(TypeError, match=r"linear_transpose only supports \[float, complex, or "
                     r"float0\] -> \[float, complex, or float0\], and integer -> integer "
                     r"functions, but got \[dtype\('float32'\), dtype\('int32'\)\] -> "
                     r"\[dtype\('float32'\)\]\."):
    ember.linear_transpose(lambda x, y: x + y.astype(jnp.float32), 1.0, 1)
  with pytest.raises(TypeError, match=r"cotangent type does not match function output, expected "
                     r"\(ShapedArray\(float32\[2\]\),\) but got"):
    ember.linear_transpose(double, jnp.zeros(2))(jnp.ones(3))


def test_vmap_axis_specs_match_containers_by_arity():
  xs = jnp.arange(6.).reshape(2, 3)
  pair = lambda x: (x, x * 2)
  for spec in ((0, 1), [0, 1]):
    a, b = ember.vmap(pair, out_axes=spec)(xs)
    assert (a.shape, b.shape) == ((2, 3), (3, 2))
  a, b = ember.vmap(lambda x: [x, x * 2], out_axes=(0, 1))(xs)
  assert (a.shape, b.shape) == ((2, 3), (3, 2))
  out = ember.vmap(lambda a: a[0] + a[1], in_axes=((0, 1),))([xs, xs.T])
  np.testing.assert_array_equal(out, xs * 2)
  out = ember.vmap(lambda d: d["a"][0] + d["a"][1], in_axes=({"a": (0, 1)},))({"a": [xs, xs.T]})
  np.testing.assert_array_equal(out, xs * 2)
  d = ember.vmap(lambda x: {"a": x, "b": x}, out_axes=[0, 1])(xs)   # children in key order
  assert (d["a"].shape, d["b"].shape) == ((2, 3), (3, 2))
  a, b = ember.vmap(lambda x: (x, [x, x]), out_axes=[0, (1, 0)])(xs)
  assert (b[0].shape, b[1].shape) == ((3, 2), (2, 3))
  a, b = ember.vmap(lambda x: (x, 1.0), out_axes=[0, None])(xs)
  assert float(b) == 1.0
  for bad in (lambda: ember.vmap(lambda x: [x, x, x], out_axes=(0, 1))(xs),
              lambda: ember.vmap(lambda x: {"a": x, "b": x}, out_axes={"a": 0, "c": 1})(xs),
              lambda: ember.vmap(lambda x: x, out_axes=(0, 1))(xs)):
    with pytest.raises(ValueError, match="vmap out_axes specification must be a tree prefix"):
      bad()


def test_traced_nondiff_arguments():
  """JAX 0.12.1: a custom_jvp's nondiff argument may be traced (it is not differentiated);
  a custom_vjp's may not (UnexpectedTracerError)."""
  @functools.partial(custom_jvp, nondiff_argnums=(0,))
  def f(a, x):
    return a * x

  @f.defjvp
  def f_jvp(a, p, t):
    return f(a, p[0]), a * t[0] * 10
  assert float(ember.jit(lambda a, x: ember.grad(lambda x: f(a, x))(x))(2.0, 3.0)) == 20.0
  assert float(ember.grad(lambda a: f(a, 3.0))(2.0)) == 0.0
  np.testing.assert_array_equal(ember.vmap(lambda a: f(a, 3.0))(jnp.arange(3.)), [0., 3., 6.])
  assert float(ember.grad(lambda a: ember.grad(lambda x: f(a, x))(3.0))(2.0)) == 0.0

  @functools.partial(custom_vjp, nondiff_argnums=(0,))
  def g(a, x):
    return a * x
  g.defvjp(lambda a, x: (a * x, None), lambda a, r, ct: (a * ct * 10,))
  assert float(ember.grad(lambda x: g(2.0, x))(3.0)) == 20.0
  for call in (lambda: ember.jit(lambda a, x: ember.grad(lambda x: g(a, x))(x))(2.0, 3.0),
               lambda: ember.grad(lambda a: g(a, 3.0))(2.0)):
    with pytest.raises(ember.errors.UnexpectedTracerError, match="Found a JAX Tracer object "
                       "passed as an argument to a custom_vjp function in a position indicated "
                       "by nondiff_argnums as non-differentiable"):
      call()


def test_a_jvp_rule_set_through_jax_registry_sees_values_as_given():
  # JAX 0.12.1: the rule sees ('float', 'float'); jvp gives (1.0, 2.0), the tangent a float
  p = Primitive("ident_given")
  p.def_impl(lambda x: x)
  p.def_abstract_eval(lambda a: a)
  seen = []

  def rule(primals, tangents):
    seen.append((type(primals[0]).__name__, type(tangents[0]).__name__))
    return p.bind(primals[0]), tangents[0]
  ad.primitive_jvps[p] = rule
  assert ad.primitive_jvps[p] is rule
  out, tan = ember.jvp(p.bind, (1.0,), (2.0,))
  assert float(out) == 1.0 and type(tan) is float and tan == 2.0
  assert seen == [("float", "float")]
  # under grad the rule sees ember's Arrays (JAX's own scalar type there)
  seen.clear()
  assert float(ember.grad(lambda x: p.bind(x) * 3)(1.0)) == 3.0
  assert seen[0][0] == "Array"

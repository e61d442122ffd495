"""Primitives defined outside ember with JAX's API (jax.extend.core.Primitive, the
jax.interpreters registries), under jit, grad, vmap and their compositions; and the style
equinox uses (filter primitives whose params carry treedefs and objects)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember.extend.core import Primitive, ShapedArray
from ember.interpreters import ad, batching, mlir

RTOL = 1e-6   # float32


def _close(got, want, rtol=RTOL):
  np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=1e-6)


# --- a "scaled sine" y = a*sin(x), defined in full: impl, abstract eval, jvp, batching ----

scaled_sin_p = Primitive("scaled_sin")
scaled_sin_p.def_impl(lambda x, *, a: a * jnp.sin(x))
scaled_sin_p.def_abstract_eval(lambda x, *, a: ShapedArray(x.shape, x.dtype))
ad.defjvp(scaled_sin_p, lambda g, x, *, a: g * a * jnp.cos(x))
batching.defvectorized(scaled_sin_p)


def scaled_sin(x, a=2.0):
  return scaled_sin_p.bind(x, a=a)


X = np.linspace(-1.5, 2.0, 5).astype(np.float32)
X64 = X.astype(np.float64)


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit], ids=["eager", "jit"])
def test_user_primitive_value_grad_vmap(wrap):
  _close(wrap(scaled_sin)(X), 2 * np.sin(X64))
  _close(wrap(ember.grad(lambda x: scaled_sin(x).sum()))(X), 2 * np.cos(X64))
  _close(wrap(ember.vmap(scaled_sin))(np.stack([X, X + 1])),
         2 * np.sin(np.stack([X64, X64 + 1])))
  _close(wrap(ember.vmap(ember.grad(lambda x: scaled_sin(x))))(X), 2 * np.cos(X64))
  _close(wrap(ember.jacfwd(scaled_sin))(X), np.diag(2 * np.cos(X64)))


def test_user_primitive_in_jaxpr_and_registries():
  jaxpr = ember.make_jaxpr(scaled_sin)(X)
  assert "scaled_sin[a=2.0]" in str(jaxpr)
  assert scaled_sin_p in ad.primitive_jvps and scaled_sin_p in batching.primitive_batchers
  assert scaled_sin_p not in ad.primitive_transposes
  # the registries are views onto ember's own rules
  assert ad.primitive_jvps[lax.sin_p] is lax.sin_p.jvp
  assert lax.sin_p in list(ad.primitive_jvps)


def test_no_lowering_runs_impl_as_host_callback():
  lowered = ember.jit(scaled_sin).lower(X).as_text()
  assert "ember_host_callback" in lowered
  p = Primitive("host_only")
  p.def_impl(lambda x: np.asarray(x) ** 2)   # NumPy on the impl's Arrays: host-only code
  p.def_abstract_eval(lambda x: x)
  _close(ember.jit(lambda x: p.bind(x) + 1)(X), X64 ** 2 + 1)


def test_lower_fun_lowers_with_ember():
  p = Primitive("cube")
  p.def_impl(lambda x: x * x * x)
  p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(p, mlir.lower_fun(lambda x: x * x * x, multiple_results=False))
  text = ember.jit(p.bind).lower(X).as_text()
  assert "ember_host_callback" not in text and "stablehlo.multiply" in text
  _close(ember.jit(p.bind)(X), X64 ** 3)


def test_foreign_lowering_falls_back_to_impl():
  # a rule building JAX's MLIR reads what ember's values lack (ir.Value.type here)
  jax_style = lambda ctx, x: [x.type]
  p = Primitive("foreign")
  p.def_impl(lambda x: x + 1)
  p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(p, jax_style)
  _close(ember.jit(p.bind)(X), X64 + 1)
  q = Primitive("foreign_no_impl")
  q.def_abstract_eval(lambda x: x)
  mlir.register_lowering(q, jax_style)
  with pytest.raises(NotImplementedError, match="foreign_no_impl.*failed on ember's IR"):
    ember.jit(q.bind)(X)
  mlir.register_lowering(q, jax_style, platform="cuda")   # other platforms: ignored


def test_foreign_lowering_that_emits_a_python_callback():
  """A rule written against JAX's MLIR whose only op is `mlir.emit_python_callback`
  (equinox's noinline) runs in ember: compiled code calls the callback (JAX 0.12.1: jit
  gives [3, 6, 9], the impl eagerly [2, 3, 4]); its exception is a JaxRuntimeError."""
  p = Primitive("tripled")
  p.def_impl(lambda x: x + 1)
  p.def_abstract_eval(lambda x: x)
  seen = []

  def host(a):
    seen.append(type(a))
    if a[0] < 0:
      raise ValueError("negative")
    return (np.asarray(a) * 3,)

  def rule(ctx, x):
    res, _, keep = mlir.emit_python_callback(ctx, host, None, [x], ctx.avals_in,
                                             ctx.avals_out, has_side_effect=False)
    ctx.module_context.add_keepalive(keep)
    return res
  mlir.register_lowering(p, rule)
  x = np.arange(1, 4, dtype=np.float32)
  np.testing.assert_array_equal(np.asarray(ember.jit(p.bind)(x)), [3, 6, 9])
  np.testing.assert_array_equal(np.asarray(p.bind(x)), [2, 3, 4])
  assert seen == [np.ndarray]
  with pytest.raises(ember.errors.JaxRuntimeError, match="ValueError: negative"):
    ember.block_until_ready(ember.jit(p.bind)(-x))


def test_linear_primitive_transpose():
  double_p = Primitive("double")
  double_p.def_impl(lambda x: 2 * x)
  double_p.def_abstract_eval(lambda x: x)
  ad.deflinear2(double_p, lambda ct, x: [2 * ct])
  batching.primitive_batchers[double_p] = lambda vals, dims: (double_p.bind(vals[0]), dims[0])
  f = lambda x: (double_p.bind(x) * x).sum()
  for wrap in (lambda g: g, ember.jit):
    _close(wrap(ember.grad(f))(X), 4 * X64)
    _close(wrap(ember.vmap(ember.grad(lambda x: double_p.bind(x) * x)))(X), 4 * X64)
  (ct,) = ember.linear_transpose(double_p.bind, X)(np.ones(5, np.float32))
  _close(ct, np.full(5, 2.0))


def test_explicit_jvp_and_transpose_registries():
  """A primitive whose jvp binds a second, linear primitive with a transpose (the JAX
  pattern for reverse mode of a custom primitive)."""
  mul_p, mul_t_p = Primitive("my_mul"), Primitive("my_mul_tangent")
  for p in (mul_p, mul_t_p):
    p.def_impl(lambda x, y: x * y)
    p.def_abstract_eval(lambda x, y: x)

  def mul_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    out = mul_p.bind(x, y)
    t = ad.Zero.from_primal_value(out)
    if type(tx) is not ad.Zero:
      t = ad.add_tangents(t, mul_t_p.bind(tx, y))
    if type(ty) is not ad.Zero:
      t = ad.add_tangents(t, mul_t_p.bind(x, ty))
    return out, t

  def mul_t_transpose(ct, x, y):
    assert ad.is_undefined_primal(x) != ad.is_undefined_primal(y)
    if type(ct) is ad.Zero:
      return [None, None]
    if ad.is_undefined_primal(x):
      return [mul_t_p.bind(ct, y), None]
    return [None, mul_t_p.bind(x, ct)]

  ad.primitive_jvps[mul_p] = mul_jvp
  ad.primitive_transposes[mul_t_p] = mul_t_transpose
  f = lambda x, y: mul_p.bind(x, y).sum()
  gx, gy = ember.jit(ember.grad(f, argnums=(0, 1)))(X, X + 1)
  _close(gx, X64 + 1)
  _close(gy, X64)
  with pytest.raises(NotImplementedError, match="Batching rule for 'my_mul'"):
    ember.vmap(mul_p.bind)(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
  del ad.primitive_transposes[mul_t_p]
  with pytest.raises(NotImplementedError, match="Transpose rule.*my_mul_tangent"):
    ember.grad(f)(X, X)


def test_abstract_eval_errors_name_the_rule():
  p = Primitive("bad_aval")
  p.def_abstract_eval(lambda x: 3)
  with pytest.raises(TypeError, match="abstract_eval rule must return avals"):
    ember.make_jaxpr(p.bind)(X)


def test_effectful_abstract_eval_keeps_equation():
  from ember._src import core

  class Log(core.Effect):
    pass

  seen = []
  p = Primitive("log_value")
  p.multiple_results = True
  p.def_impl(lambda x: seen.append(float(x)) or [])
  p.def_effectful_abstract_eval(lambda x: ([], {Log()}))
  ember.jit(lambda x: (p.bind(x), x * 2)[1])(3.0)
  assert seen == [3.0]


# --- equinox's style: filter primitives ----------------------------------------------------
# The pattern of equinox/internal/_primitive.py, written afresh: arbitrary pytrees in and
# out, the static part (treedef, non-array leaves, an output-structure recorder) in params.

_MISSING = object()


def _is_dynamic(x) -> bool:
  return isinstance(x, (ShapedArray, np.ndarray, np.generic)) or hasattr(x, "aval")


class Flatten:
  """Splits a rule's output into its array leaves (returned) and the static rest (kept)."""

  def __call__(self, out):
    leaves, self.tree = ember.tree_util.tree_flatten(out)
    self.static = tuple(_MISSING if _is_dynamic(x) else x for x in leaves)
    return [x for x in leaves if _is_dynamic(x)]


def _combine(dynamic, static):
  it = iter(dynamic)
  return [next(it) if x is _MISSING else x for x in static]


def filter_def(rule):
  def wrapper(*dynamic, treedef, static, flatten):
    return flatten(rule(*ember.tree_util.tree_unflatten(treedef, _combine(dynamic, static))))
  return wrapper


def filter_jvp(rule):
  def wrapper(primals, tangents, *, treedef, static, flatten):
    tangents = [None if type(t) is ad.Zero else t for t in tangents]
    p = ember.tree_util.tree_unflatten(treedef, _combine(primals, static))
    t = ember.tree_util.tree_unflatten(
        treedef, _combine(tangents, [None if x is not _MISSING else x for x in static]))
    p_out, t_out = rule(p, t)
    return flatten(p_out), ember.tree_util.tree_leaves(t_out)
  return wrapper


def filter_batching(rule):
  def wrapper(axis_size, axis_name, trace_type, dynamic, dims, *, treedef, static, flatten):
    out, out_dims = rule(ember.tree_util.tree_unflatten(treedef, _combine(dynamic, static)),
                         ember.tree_util.tree_unflatten(treedef, _combine(dims, [
                             None if x is not _MISSING else x for x in static])), axis_size)
    leaves = ember.tree_util.tree_leaves(out)
    dims = ember.tree_util.tree_leaves(out_dims, is_leaf=lambda x: x is None)
    return flatten(out), [d for x, d in zip(leaves, dims) if _is_dynamic(x)]
  return wrapper


def filter_bind(prim, *args):
  leaves, treedef = ember.tree_util.tree_flatten(args)
  dynamic = [x for x in leaves if _is_dynamic(x)]
  static = tuple(_MISSING if _is_dynamic(x) else x for x in leaves)
  flatten = Flatten()
  out = prim.bind(*dynamic, treedef=treedef, static=static, flatten=flatten)
  return ember.tree_util.tree_unflatten(flatten.tree, _combine(out, flatten.static))


def _affine_impl(params, x):
  return {"y": params["w"] * x + params["b"], "tag": params["tag"]}


def _affine_abstract(params, x):
  return {"y": ShapedArray(x.shape, x.dtype), "tag": params["tag"]}


def _affine_jvp(primals, tangents):
  (params, x), (tparams, tx) = primals, tangents
  out = _affine_impl(params, x)
  t = 0.0 if tx is None else params["w"] * tx
  if tparams["w"] is not None:
    t = t + tparams["w"] * x
  if tparams["b"] is not None:
    t = t + tparams["b"]
  return out, {"y": jnp.broadcast_to(t, x.shape), "tag": None}


def _affine_batch(inputs, dims, axis_size):
  params, x = inputs
  moved = {k: (jnp.moveaxis(v, dims[0][k], 0) if dims[0][k] is not None else v)
           for k, v in params.items() if k != "tag"}
  x = jnp.moveaxis(x, dims[1], 0) if dims[1] is not None else x
  y = ember.vmap(lambda w, b, x: w * x + b,
                 in_axes=(0 if dims[0]["w"] is not None else None,
                          0 if dims[0]["b"] is not None else None,
                          0 if dims[1] is not None else None),
                 axis_size=axis_size)(moved["w"], moved["b"], x)
  return {"y": y, "tag": params["tag"]}, {"y": 0, "tag": None}


affine_p = Primitive("affine")
affine_p.multiple_results = True
affine_p.def_impl(filter_def(_affine_impl))
affine_p.def_abstract_eval(filter_def(_affine_abstract))
ad.primitive_jvps[affine_p] = filter_jvp(_affine_jvp)
batching.axis_primitive_batchers[affine_p] = filter_batching(_affine_batch)
mlir.register_lowering(affine_p, mlir.lower_fun(filter_def(_affine_impl), multiple_results=True))


def affine(w, b, x):
  return filter_bind(affine_p, {"w": w, "b": b, "tag": "affine"}, x)


def test_equinox_style_filter_primitive():
  w, b = np.float32(1.5), np.float32(-0.5)
  want = 1.5 * X64 - 0.5
  for wrap in (lambda f: f, ember.jit):
    _close(wrap(lambda w, b, x: affine(w, b, x)["y"])(w, b, X), want)
    g = wrap(ember.grad(lambda w, x: affine(w, b, x)["y"].sum(), argnums=(0, 1)))(w, X)
    _close(g[0], X64.sum(), rtol=1e-5)
    _close(g[1], np.full(5, 1.5))
    ys = wrap(ember.vmap(lambda x: affine(w, b, x)["y"]))(np.stack([X, 2 * X]))
    _close(ys, np.stack([1.5 * X64 - 0.5, 3 * X64 - 0.5]))
    ws = wrap(ember.vmap(lambda w: affine(w, b, X)["y"]))(np.array([1.0, 2.0], np.float32))
    _close(ws, np.stack([X64 - 0.5, 2 * X64 - 0.5]))
  assert affine(w, b, X)["tag"] == "affine"      # the static output leaf comes back
  assert "ember_host_callback" not in ember.jit(lambda x: affine(w, b, x)["y"]).lower(X).as_text()


def test_equinox_style_nontraceable():
  """equinox's nontraceable: the rules themselves raise when a transformation reaches it."""
  def error(what):
    def rule(*args, name):
      raise RuntimeError(f"Detected {what} of {name}")
    return rule

  p = Primitive("nontraceable")
  p.def_impl(lambda x, *, name: x)
  p.def_abstract_eval(lambda x, *, name: x)
  ad.primitive_jvps[p] = error("differentiation")
  batching.primitive_batchers[p] = error("batching")
  mlir.register_lowering(p, mlir.lower_fun(lambda x, *, name: x, multiple_results=False))
  f = lambda x: p.bind(x, name="op")
  _close(ember.jit(f)(X), X64)
  with pytest.raises(RuntimeError, match="Detected differentiation of op"):
    ember.grad(lambda x: f(x).sum())(X)
  with pytest.raises(RuntimeError, match="Detected batching of op"):
    ember.vmap(f)(np.ones((2, 3), np.float32))


def test_tangent_avals_for_symbolic_zeros():
  """equinox builds symbolic zeros as `ad.Zero(jax.typeof(x).to_tangent_aval())`."""
  z = ad.Zero(ember.typeof(np.arange(3)).to_tangent_aval())
  assert z.aval.shape == (3,) and z.aval.dtype == ember.dtypes.float0
  assert ember.typeof(X).to_tangent_aval() == ember.typeof(X)
  assert ad.zeros_like_aval(ember.typeof(X)).shape == (5,)
  assert np.asarray(ad.instantiate_zeros(ad.Zero(ember.typeof(X)))).sum() == 0


def test_params_named_prim_or_self_and_get_bind_params():
  # equinox's vprim binds with a param named `prim`; interpreters of jaxprs (equinox's
  # finalise_jaxpr) re-bind each equation with `primitive.get_bind_params(params)`
  p = Primitive("takes_prim")
  p.def_impl(lambda x, *, prim, self: x * 2)
  p.def_abstract_eval(lambda x, *, prim, self: x)
  assert float(p.bind(jnp.float32(3), prim="a", self="b")) == 6.0
  assert float(ember.jit(lambda x: p.bind(x, prim="a", self="b"))(jnp.float32(3))) == 6.0
  closed = ember.make_jaxpr(lambda x: p.bind(jnp.sin(x), prim="a", self="b") + 1)(1.0)
  env = {}
  for v, a in zip(closed.jaxpr.invars, [jnp.float32(0.5)]):
    env[v] = a
  for eqn in closed.jaxpr.eqns:
    params = eqn.primitive.get_bind_params(eqn.params)
    assert isinstance(params, dict)
    args = [getattr(v, "val", None) if type(v).__name__ == "Literal" else env[v]
            for v in eqn.invars]
    out = eqn.primitive.bind(*args, **params)
    env[eqn.outvars[0]] = out
    assert eqn.effects == frozenset()
  np.testing.assert_allclose(env[closed.jaxpr.outvars[0]], 2 * np.sin(0.5) + 1, rtol=1e-6)


def test_closed_jaxpr_of_jaxpr_and_consts():
  # JAX 0.12: ClosedJaxpr(jaxpr, consts) is a Jaxpr with those consts; effects are a property
  from ember.extend.core import ClosedJaxpr, Jaxpr
  j = ember.make_jaxpr(lambda x: x * 2 + 1)(1.0)
  c = ClosedJaxpr(j.jaxpr, [])
  assert isinstance(c, Jaxpr) and c.consts == [] and str(c) == str(j)
  assert c.effects == frozenset()
  with pytest.raises(TypeError, match="pass constvars, invars, outvars and eqns"):
    Jaxpr([], [])


def test_custom_jvp_call_get_bind_params_gives_the_call_as_a_function():
  @ember.custom_jvp
  def f(x):
    return jnp.sin(x)
  f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * t[0]))
  j = ember.make_jaxpr(f)(1.0)
  (eqn,) = j.eqns
  params = eqn.primitive.get_bind_params(eqn.params)
  fun, _ = params["subfuns"]
  np.testing.assert_allclose(fun.call_wrapped(jnp.float32(1.0))[0], np.sin(1.0), rtol=1e-6)
  out = eqn.primitive.bind(jnp.float32(1.0), **params)   # binding again ignores subfuns
  np.testing.assert_allclose(out[0], np.sin(1.0), rtol=1e-6)

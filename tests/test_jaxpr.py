"""Jaxprs: structure, printing (golden strings produced by JAX 0.12.0.1), walking, and
running a jaxpr as a function. Includes the asserts of seed 002 §2.2."""
from collections import Counter

import numpy as np
import pytest

import ember as jax
import ember.extend as je
import ember.numpy as jnp
from ember import lax


def f32(*shape):
  return jnp.asarray(np.ones(shape, np.float32))


def example_function(x, y):
  a = jnp.sin(x)
  b = jnp.cos(y)
  return a + b * 2.0


def count_primitives(jaxpr, counter=None):
  counter = Counter() if counter is None else counter
  for eqn in jaxpr.eqns:
    counter[eqn.primitive.name] += 1
    for sub in je.core.jaxprs_in_params(eqn.params):
      count_primitives(sub, counter)
  return counter


def test_example_function_structure_and_printing():
  closed = jax.make_jaxpr(example_function)(f32(10), f32(10))
  j = closed.jaxpr
  assert type(closed) is je.core.ClosedJaxpr is type(j) and closed.jaxpr is closed
  assert [e.primitive.name for e in j.eqns] == ["sin", "cos", "mul", "add"]
  assert len(j.invars) == 2 and len(j.outvars) == 1 and j.constvars == []
  assert type(j.eqns[2].invars[1]).__name__ == "Literal"
  assert [v.aval.str_short() for v in j.invars] == ["float32[10]", "float32[10]"]
  assert str(closed) == """\
{ lambda ; a:f32[10] b:f32[10]. let
    c:f32[10] = sin a
    d:f32[10] = cos b
    e:f32[10] = mul d 2.0:f32[]
    f:f32[10] = add c e
  in (f,) }"""


def test_short_jaxpr_prints_on_one_line():
  assert str(jax.make_jaxpr(lambda x: x * 2)(1.0)) == \
      "{ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }"
  assert str(jax.make_jaxpr(lambda x: jnp.sin(2.0) * x)(1.0)) == \
      "{ lambda ; a:f32[]. let b:f32[] = sin 2.0:f32[]; c:f32[] = mul b a in (c,) }"


def test_empty_jaxpr_and_pytree_outputs():
  assert str(jax.make_jaxpr(lambda x: x)(1.0)) == "{ lambda ; a:f32[]. let  in (a,) }"
  def two(x, y):
    return x + 1, {"a": y * 2, "b": (x,)}
  assert str(jax.make_jaxpr(two)(f32(2, 3), 2)) == """\
{ lambda ; a:f32[2,3] b:i32[]. let
    c:f32[2,3] = add a 1.0:f32[]
    d:i32[] = mul b 2:i32[]
  in (c, d, a) }"""


def test_long_binder_lists_wrap_like_jax():
  y = f32(1000, 1000)
  text = str(jax.make_jaxpr(lambda a, b, c, d, e, f, g, h: a + b + c + d + e + f + g + h)(*[y] * 8))
  assert text.splitlines()[:2] == [
      "{ lambda ; a:f32[1000,1000] b:f32[1000,1000] c:f32[1000,1000] d:f32[1000,1000] e:f32[1000,1000]",
      "    f:f32[1000,1000] g:f32[1000,1000] h:f32[1000,1000]. let"]
  assert text.splitlines()[-1] == "  in (o,) }"


def test_closure_array_is_constvar_and_python_scalar_is_literal():
  W_small = jnp.arange(9.0).reshape(3, 3)
  def uses_closure(v):
    return jnp.dot(W_small, v) + jnp.pi
  cj = jax.make_jaxpr(uses_closure)(jnp.ones(3))
  assert len(cj.jaxpr.constvars) == 1 and cj.consts[0].shape == (3, 3)
  assert type(cj.jaxpr.eqns[1].invars[1]).__name__ == "Literal"
  assert str(cj) == """\
{ lambda a:f32[3,3]; b:f32[3]. let
    c:f32[3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
    d:f32[3] = add c 3.1415927410125732:f32[]
  in (d,) }"""
  np.testing.assert_allclose(je.core.jaxpr_as_fun(cj)(jnp.ones(3))[0],
                             np.arange(9.0).reshape(3, 3).sum(1) + np.pi, rtol=1e-6)


@jax.jit
def inner(x):
  return jnp.maximum(x, 0.0) * 2.0


def test_nested_jit_is_one_eqn_named_after_the_function():
  def outer(x):
    return inner(x) + 1.0
  co = jax.make_jaxpr(outer)(f32(3))
  top = co.jaxpr.eqns[0]
  assert top.primitive.name == "jit" and top.params["name"] == "inner"
  subs = je.core.jaxprs_in_params(top.params)
  assert len(subs) == 1 and [e.primitive.name for e in subs[0].eqns] == ["max", "mul"]
  cnt = count_primitives(co.jaxpr)
  assert cnt == Counter({"jit": 1, "max": 1, "mul": 1, "add": 1}) and "pjit" not in cnt
  assert str(co) == """\
{ lambda ; a:f32[3]. let
    b:f32[3] = jit[
      name=inner
      jaxpr={ lambda ; a:f32[3]. let
          c:f32[3] = max a 0.0:f32[]
          b:f32[3] = mul c 2.0:f32[]
        in (b,) }
    ] a
    d:f32[3] = add b 1.0:f32[]
  in (d,) }"""


def test_jaxpr_used_twice_is_printed_once_up_front():
  def outer(x):
    return inner(x) + inner(x * 3.0)
  assert str(jax.make_jaxpr(outer)(f32(3))) == """\
let inner = { lambda ; a:f32[3]. let
    b:f32[3] = max a 0.0:f32[]
    c:f32[3] = mul b 2.0:f32[]
  in (c,) } in
{ lambda ; d:f32[3]. let
    e:f32[3] = jit[name=inner jaxpr=inner] d
    f:f32[3] = mul d 3.0:f32[]
    g:f32[3] = jit[name=inner jaxpr=inner] f
    h:f32[3] = add e g
  in (h,) }"""


def test_inner_jit_closure_values_become_explicit_arguments():
  W = jnp.asarray(np.arange(6.0, dtype=np.float32).reshape(2, 3))
  def g(x):
    @jax.jit
    def h(y):
      return y * W + x
    return h(x)
  x = f32(2, 3)
  assert str(jax.make_jaxpr(g)(x)) == """\
{ lambda a:f32[2,3]; b:f32[2,3]. let
    c:f32[2,3] = jit[
      name=h
      jaxpr={ lambda ; a:f32[2,3] b:f32[2,3] d:f32[2,3]. let
          e:f32[2,3] = mul d a
          c:f32[2,3] = add e b
        in (c,) }
    ] a b b
  in (c,) }"""
  for fn in (g, jax.jit(g)):
    np.testing.assert_array_equal(fn(x), np.arange(6.0).reshape(2, 3) + 1)


def test_static_argnums_select_the_traced_branch():
  def value_branch_static(x, flag):
    return jnp.sin(x) if flag > 0.5 else jnp.cos(x)
  jp_hi = jax.make_jaxpr(value_branch_static, static_argnums=1)(jnp.ones(3), 0.7)
  jp_lo = jax.make_jaxpr(value_branch_static, static_argnums=1)(jnp.ones(3), 0.3)
  assert [e.primitive.name for e in jp_hi.jaxpr.eqns] == ["sin"]
  assert [e.primitive.name for e in jp_lo.jaxpr.eqns] == ["cos"]
  jit_static = jax.jit(value_branch_static, static_argnums=1)
  np.testing.assert_allclose(jit_static(jnp.ones(3), 0.7), np.sin(np.ones(3)), rtol=1e-6)
  np.testing.assert_allclose(jit_static(jnp.ones(3), flag=0.3), np.cos(np.ones(3)), rtol=1e-6)


def test_jaxpr_as_fun_and_eval_jaxpr_match_the_function():
  x, y = f32(4) * 0.5, f32(4) * 2.0
  cj = jax.make_jaxpr(example_function)(x, y)
  out = je.core.jaxpr_as_fun(cj)(x, y)
  expected = np.sin(0.5) + np.cos(2.0) * 2.0
  np.testing.assert_allclose(out[0], np.full(4, expected), rtol=1e-6)
  np.testing.assert_allclose(je.core.eval_jaxpr(cj.jaxpr, cj.consts, x, y)[0], out[0])


def test_eqn_fields_and_avals():
  j = jax.make_jaxpr(example_function)(f32(10), f32(10)).jaxpr
  eqn = j.eqns[2]
  assert eqn.primitive.name == "mul" and eqn.params == {"out_dtype": None}  # as JAX 0.12
  lit = eqn.invars[1]
  # promotion against a strongly typed f32 makes the literal strong too (as JAX 0.12)
  assert lit.val == 2.0 and lit.aval.dtype == np.float32 and not lit.aval.weak_type
  weak_lit = jax.make_jaxpr(lambda x: x * 2.0)(1.0).eqns[0].invars[1]
  assert weak_lit.aval.weak_type
  assert j.outvars[0].aval.shape == (10,) and not j.outvars[0].aval.weak_type
  assert "sin" in repr(j.eqns[0])


def test_weak_type_of_python_scalar_argument_is_kept():
  j = jax.make_jaxpr(lambda x: x * 2)(1.0)
  assert j.in_avals[0].weak_type and j.out_avals[0].weak_type
  j = jax.make_jaxpr(lambda x: x * 2)(jnp.float32(1.0))
  assert not j.in_avals[0].weak_type


def test_make_jaxpr_of_non_array_argument_names_the_fix():
  with pytest.raises(TypeError, match="static_argnums"):
    jax.make_jaxpr(lambda x, s: x)(1.0, "hello")


def test_lax_ops_stage_with_jax_params():
  j = jax.make_jaxpr(lambda x: lax.convert_element_type(x, jnp.int32))(f32(2))
  assert str(j) == ("{ lambda ; a:f32[2]. let\n    b:i32[2] = convert_element_type[new_dtype=int32 "
                    "weak_type=False] a\n  in (b,) }")


def test_tracers_print_as_jax_0_12s():
  """Strings recorded from JAX 0.12 (its JitTracer, GradTracer, JVPTracer, VmapTracer)."""
  seen = []

  def show(x):
    seen.append(repr(x))
    return x
  jax.jit(show)(jnp.float32(1.0))
  jax.make_jaxpr(show)(1.0)
  jax.jit(show)(1)
  jax.grad(lambda x: show(x) * 1.0)(1.0)
  jax.grad(lambda x: show(x).sum())(jnp.ones(3))
  jax.jit(jax.grad(lambda x: show(x) * 1.0))(1.0)
  jax.grad(jax.grad(lambda x: show(x) * x))(1.0)
  jax.vjp(show, 1.0)
  jax.linearize(show, 1.0)
  jax.jvp(show, (1.0,), (1.0,))
  jax.jvp(show, (jnp.ones(2),), (jnp.ones(2),))
  jax.vmap(show)(jnp.ones((3, 2), jnp.int32))
  jax.vmap(jax.vmap(show))(jnp.ones((3, 2)))
  jax.jit(jax.vmap(show))(jnp.ones((3, 2)))
  jax.grad(lambda x: show(jnp.sin(x)) * 1.0)(1.0)
  assert seen == [
      "JitTracer(float32[])", "JitTracer(~float32[])", "JitTracer(~int32[])",
      "GradTracer(primal=1.0, typeof(tangent)=f32[])",
      "GradTracer(primal=[1. 1. 1.], typeof(tangent)=f32[3])",
      "GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[])",
      "GradTracer(primal=GradTracer(primal=1.0, typeof(tangent)=f32[]), typeof(tangent)=f32[])",
      "GradTracer(primal=1.0, typeof(tangent)=f32[])",
      "GradTracer(primal=1.0, typeof(tangent)=f32[])",
      "JVPTracer(primal=1.0, tangent=1.0)", "JVPTracer(primal=[1. 1.], tangent=[1. 1.])",
      "VmapTracer(aval=int32[2], batched=int32[3,2])",
      "VmapTracer(aval=float32[], batched=float32[2])",
      "VmapTracer(aval=float32[2], batched=float32[3,2])",
      "GradTracer(primal=0.84147096, typeof(tangent)=f32[])"]
  assert str(jax.typeof(1.0)) == "~float32[]" and str(jax.typeof(jnp.float32(1))) == "float32[]"


def test_jax_core_names_of_jax_0_12():
  import ember.core as c
  # dir(jax.core) in JAX 0.12, all present
  for name in ["AbstractValue", "Atom", "ParamDict", "ShapedArray", "Trace", "Tracer", "Value",
               "ensure_compile_time_eval", "eval_context", "eval_jaxpr", "max_dim", "min_dim"]:
    assert hasattr(c, name), name
  assert jax.core is c and isinstance(c.ShapedArray((), np.float32), c.AbstractValue)
  assert c.max_dim(2, 3) == 3 and c.min_dim(2, 3) == 2


def test_extend_core_helpers():
  xc = je.core
  f32 = np.dtype(np.float32)
  assert str(xc.mapped_aval(3, 0, xc.ShapedArray((3, 2), f32))) == "float32[2]"
  assert str(xc.unmapped_aval(3, 1, xc.ShapedArray((2,), f32))) == "float32[2,3]"
  assert xc.mapped_aval(3, None, xc.ShapedArray((2,), f32)).shape == (2,)
  with pytest.raises(ValueError, match=r"axis 0 of float32\[2\] has size 2, not 3"):
    xc.mapped_aval(3, 0, xc.ShapedArray((2,), f32))
  assert xc.valid_jaxtype(1.0) and xc.valid_jaxtype(np.zeros(2)) and not xc.valid_jaxtype("a")
  assert np.ndarray in xc.array_types and np.float32 in xc.array_types
  assert xc.primal_dtype_to_tangent_dtype(np.dtype(np.int32)) == jax.dtypes.float0
  assert xc.primal_dtype_to_tangent_dtype(f32) == f32
  # build a jaxpr by hand from gensym'd vars and new_jaxpr_eqn, and run it
  a, b = xc.gensym()(xc.ShapedArray((), f32)), xc.gensym()(xc.ShapedArray((), f32))
  add_p = jax.make_jaxpr(lambda x, y: x + y)(1.0, 2.0).eqns[0].primitive
  eqn = xc.new_jaxpr_eqn([a, a], [b], add_p, {}, set())
  jaxpr = xc.Jaxpr([], [a], [b], [eqn])
  assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = add a a in (b,) }"
  assert float(xc.jaxpr_as_fun(jaxpr)(np.float32(1.5))[0]) == 3.0
  with pytest.raises(ValueError, match="ember's jaxprs have no effects"):
    xc.new_jaxpr_eqn([a], [b], add_p, {}, {"io"})


@pytest.mark.parametrize("jit", [False, True])
def test_ensure_compile_time_eval_computes_constants_while_tracing(jit):
  seen = []

  def f(x):
    with jax.ensure_compile_time_eval():
      y = jnp.sin(2.0)
      n = int(jnp.arange(3)[2] * 2)   # concrete: int() works under jit
      w = x + 1                       # a tracer's operation still stages
    seen.append((isinstance(y, jax.core.Tracer), n, isinstance(w, jax.core.Tracer) == jit))
    return x + y
  out = (jax.jit(f) if jit else f)(1.0)
  np.testing.assert_allclose(float(out), 1.0 + np.sin(np.float32(2.0)), rtol=1e-6)
  assert seen == [(False, 4, True)]
  assert jax.core.eval_context is jax.core.ensure_compile_time_eval

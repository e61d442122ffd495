"""jax.extend.core's jaxpr checker, trace queries and call primitives; jax.interpreters.ad's
jvp / jvp_jaxpr / defbilinear / add_jaxvals; jax.interpreters.batching's batch_jaxpr_axes
and defreducer; jax.extend.random's threefry_2x32. Expected values and jaxpr texts are
what JAX 0.12.1 gives for the same code."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors, extend
from ember.extend import core as ec
from ember.extend import random as erandom
from ember.interpreters import ad, batching, mlir


def _close(got, want):
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


# --- extend.core ----------------------------------------------------------------------

def test_check_jaxpr_accepts_a_traced_jaxpr_and_names_an_undefined_variable():
  j = ember.make_jaxpr(lambda x: jnp.sin(x) * 2)(1.0).jaxpr
  assert ec.check_jaxpr(j) is None
  swapped = j.replace(eqns=[j.eqns[1], j.eqns[0]])
  with pytest.raises(ec.JaxprTypeError, match=r"(?s)Variable 'c' not defined.*in equation:"
                     r".*= mul c 2.0.*while checking jaxpr"):
    ec.check_jaxpr(swapped)
  assert issubclass(ec.JaxprTypeError, TypeError) and errors.JaxprTypeError is ec.JaxprTypeError
  assert issubclass(ec.InconclusiveDimensionOperation, Exception)


def test_check_jaxpr_finds_rebinding_and_wrong_result_types():
  j = ember.make_jaxpr(lambda x: jnp.sin(x) + 1.0)(1.0).jaxpr
  rebound = j.replace(eqns=[j.eqns[0], j.eqns[1].replace(outvars=j.eqns[0].outvars)])
  with pytest.raises(ec.JaxprTypeError, match="already bound"):
    ec.check_jaxpr(rebound)
  i = ember.make_jaxpr(lambda x: x + 1)(np.int32(1)).jaxpr
  mistyped = j.replace(eqns=[j.eqns[0], j.eqns[1].replace(outvars=i.eqns[0].outvars)],
                       outvars=i.eqns[0].outvars)
  with pytest.raises(ec.JaxprTypeError, match="inconsistently typed as f32.. for "
                     "let-binder of type i32"):
    ec.check_jaxpr(mistyped)
  nested = ember.make_jaxpr(ember.jit(lambda x: jnp.cos(x)))(1.0).jaxpr
  assert ec.check_jaxpr(nested) is None


def _queries():
  return (ec.unsafe_am_i_under_a_jit_DO_NOT_USE(), ec.unsafe_am_i_under_a_vmap_DO_NOT_USE(),
          ec.unsafe_get_axis_names_DO_NOT_USE(), ec.nonempty_axis_env_DO_NOT_USE())


def test_trace_queries_as_jax_answers_them():
  seen = []
  probe = lambda x: (seen.append(_queries()), x)[1]
  ember.vmap(probe)(jnp.ones(2))
  ember.vmap(ember.vmap(probe, axis_name="j"), axis_name="i")(jnp.ones((2, 2)))
  ember.jit(ember.vmap(probe, axis_name="i"))(jnp.ones(2))
  ember.jvp(probe, (1.0,), (1.0,))
  ember.jit(lambda x: ember.grad(probe)(x))(1.0)
  seen.append(_queries())
  assert seen == [(False, True, [], False), (False, True, ["i", "j"], True),
                  (True, True, ["i"], True), (False, False, [], False),
                  (True, False, [], False), (False, False, [], False)]


def test_take_and_set_current_trace():
  with ec.take_current_trace() as top:
    assert type(top).__name__ == "EvalTrace"
  kinds = []

  @ember.jit
  def f(x):
    with ec.take_current_trace() as t:
      kinds.append(type(t).__name__)
    with ember.ensure_compile_time_eval():
      a = jnp.sin(jnp.float32(1.0))
      with ec.set_current_trace(t):
        b = jnp.sin(jnp.float32(1.0))
    with ec.set_current_trace(top):         # the eval trace: runs at once inside jit
      d = jnp.cos(jnp.float32(1.0))
    kinds.append([isinstance(v, ember.core.Tracer) for v in (a, b, d)])
    return x + a + b + d
  _close(f(1.0), 3.2232442)                 # JAX 0.12.1: 3.2232442, no value a tracer
  assert kinds[0] != "EvalTrace" and kinds[1] == [False, False, False]


def test_trace_tag_effects_and_primitives_module():
  assert ec.TraceTag() == ec.TraceTag() and hash(ec.TraceTag()) == hash(ec.TraceTag())
  assert ec.TraceTag() != object()
  assert isinstance(frozenset(), ec.Effects.__origin__)
  eqn, = ember.make_jaxpr(jnp.sin)(1.0).jaxpr.eqns
  assert eqn.primitive is ec.primitives.sin_p
  assert ec.primitives.add_jaxvals_p is ad.add_jaxvals_p


def test_call_primitive_eager_jit_grad_vmap():
  cp = ec.create_call_primitive("my_call")
  inner = ember.make_jaxpr(lambda x, y: (jnp.sin(x) * y, x + 1.0))(1.0, 2.0)
  f = lambda x, y: cp.bind(x, y, call_jaxpr=inner)
  for g in (f, ember.jit(f)):
    a, b = g(1.0, 2.0)
    _close(a, 1.6829419)
    _close(b, 2.0)
  dx, dy = ember.grad(lambda x, y: f(x, y)[0], argnums=(0, 1))(1.0, 2.0)
  _close(dx, 1.0806046)
  _close(dy, 0.84147096)
  s, t = ember.vmap(f)(jnp.arange(3.0), jnp.ones(3))
  _close(s, [0.0, 0.84147096, 0.9092974])
  _close(t, [1.0, 2.0, 3.0])
  assert str(ember.make_jaxpr(f)(1.0, 2.0)) == """\
{ lambda ; a:f32[] b:f32[]. let
    c:f32[] d:f32[] = my_call[
      call_jaxpr={ lambda ; e:f32[] f:f32[]. let
          g:f32[] = sin e
          h:f32[] = mul g f
          i:f32[] = add e 1.0:f32[]
        in (h, i) }
    ] a b
  in (c, d) }"""
  linear = ember.make_jaxpr(lambda x: [x * 3.0])(1.0)
  ct, = ec.eval_jaxpr_transpose(cp, [np.float32(2.0)],
                                ad.UndefinedPrimal(ec.ShapedArray((), np.float32)),
                                call_jaxpr=linear)
  _close(ct, 6.0)


# --- interpreters.ad ------------------------------------------------------------------

def test_add_jaxvals_and_defbilinear():
  _close(ad.add_jaxvals(1.0, 2.0), 3.0)
  assert ad.add_jaxvals_p.name == "add_any"
  q = ec.Primitive("bmul")
  q.def_impl(lambda x, y: x * y)
  q.def_abstract_eval(lambda x, y: x)
  ad.defbilinear(q, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
  gx, gy = ember.grad(lambda x, y: q.bind(x, y), argnums=(0, 1))(3.0, 4.0)
  _close([gx, gy], [4.0, 3.0])                        # JAX 0.12.1: (4., 3.)
  out, tan = ember.jvp(lambda x, y: q.bind(x, y), (3.0, 4.0), (1.0, 2.0))
  _close([out, tan], [12.0, 10.0])
  assert ad.annotations.compiler_flag   # `from __future__ import annotations`, as JAX's


def test_jvp_on_flat_sequences():
  zero = ad.Zero(ec.ShapedArray((), np.float32))
  (p1, p2), (t1, t2) = ad.jvp(lambda x, y: [jnp.sin(x) * y, y], [1.0, 2.0], [1.0, zero],
                              instantiate=False)
  _close([p1, p2, t1], [1.6829419, 2.0, 1.0806046])
  assert type(t2) is ad.Zero
  _, (_, t2) = ad.jvp(lambda x, y: [x, y], [1.0, 2.0], [1.0, zero])
  _close(t2, 0.0)


def test_jvp_jaxpr_as_jax_prints_it():
  jx = ember.make_jaxpr(lambda x, y: (jnp.sin(x) * y, x, 3.0 * y))(1.0, 2.0)
  j, nz = ad.jvp_jaxpr(jx, [True, False], instantiate=False)
  assert nz == [True, True, False]
  assert str(j) == """\
{ lambda ; a:f32[] b:f32[] c:f32[]. let
    d:f32[] = sin a
    e:f32[] = cos a
    f:f32[] = mul c e
    g:f32[] = mul d b
    h:f32[] = mul f b
    i:f32[] = mul 3.0:f32[] b
  in (g, a, i, h, c) }"""
  _close(ember.core.eval_jaxpr(j.jaxpr, j.consts, 1.0, 2.0, 1.0),
         [1.6829419, 1.0, 6.0, 1.0806046, 1.0])
  j, nz = ad.jvp_jaxpr(jx, [False, False], instantiate=[True, False, False])
  assert nz == [True, False, False]
  assert str(j).endswith("in (d, a, e, 0.0:f32[]) }")


# --- interpreters.batching ------------------------------------------------------------

def test_batch_jaxpr_axes_as_jax_prints_it():
  jx = ember.make_jaxpr(lambda x, y: (jnp.sin(x) * y, y, 2.0 * y))(jnp.ones(3), 2.0)
  axis = batching.AxisData(None, 4, None)
  j, batched = batching.batch_jaxpr_axes(jx, axis, [1, None],
                                         [0, 0, batching.zero_if_mapped])
  assert batched == [True, True, False]
  assert str(j) == """\
{ lambda ; a:f32[3,4] b:f32[]. let
    c:f32[3,4] = sin a
    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b
    e:f32[3,4] = mul c d
    f:f32[] = mul 2.0:f32[] b
    g:f32[4,3] = transpose[permutation=(1, 0)] e
    h:f32[4] = broadcast_in_dim b
  in (g, h, f) }"""
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  g, h, f = ember.core.eval_jaxpr(j.jaxpr, j.consts, x, 2.0)
  _close(g, 2 * np.sin(x.astype(np.float64)).T)
  _close(h, [2.0] * 4)
  _close(f, 4.0)


def test_batch_subtrace_on_a_wrapped_fun():
  f = extend.linear_util.wrap_init(lambda x, y: [jnp.sin(x) * y, y + 1.0])
  g, dims = batching.batch_subtrace(f, ec.TraceTag(), batching.AxisData(None, 3, None),
                                    [0, None])
  a, b = g.call_wrapped(jnp.arange(3.0), 2.0)
  _close(a, [0.0, 1.6829419, 1.8185948])             # JAX 0.12.1's values and dims
  assert b == 3.0 and dims() == (0, None)


def test_defreducer():
  rsum = ec.Primitive("my_reduce_sum")
  rsum.def_impl(lambda x, *, axes: jnp.sum(x, axis=axes))
  rsum.def_abstract_eval(lambda x, *, axes: ec.ShapedArray(
      tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype))
  batching.defreducer(rsum)
  x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
  out = ember.vmap(lambda v: rsum.bind(v, axes=(1,)), in_axes=1)(x)
  _close(out, x.sum(axis=2).T)


# --- extend, extend.random ------------------------------------------------------------

def test_extend_submodules_and_threefry_2x32():
  assert extend.lowering.LoweringRuleContext is mlir.LoweringRuleContext
  assert extend.linear_util.wrap_init and extend.source_info_util.current
  key = (jnp.uint32(1), jnp.uint32(2))
  # JAX 0.12.1's values
  np.testing.assert_array_equal(erandom.threefry_2x32(key, jnp.arange(5, dtype=jnp.uint32)),
                                [2052595727, 3504730591, 2527474599, 1880214352, 1914734168])
  got = ember.jit(erandom.threefry_2x32)(key, jnp.arange(6, dtype=jnp.uint32).reshape(2, 3))
  np.testing.assert_array_equal(got, [[2052595727, 3504730591, 1038787879],
                                      [1880214352, 1914734168, 1027009547]])
  assert erandom.threefry2x32_p.name == "threefry2x32"
  with pytest.raises(TypeError, match="threefry_2x32 requires uint32 arguments"):
    erandom.threefry_2x32(key, jnp.arange(4))


def test_extend_backend():
  from ember.extend import backend
  assert list(backend.backends()) == ["cpu"] and backend.get_backend().platform == "cpu"
  assert backend.get_default_device() == ember.devices()[0]
  with ember.default_device(ember.devices("cpu")[0]):
    assert backend.get_default_device() == ember.devices("cpu")[0]
  assert backend.backend_xla_version() is None         # as JAX's on CPU
  with pytest.raises(RuntimeError, match="Unknown backend"):
    backend.backend_xla_version("gpu")
  backend.clear_in_memory_compilation_cache()

"""jax.interpreters.mlir's lowering-rule vocabulary on ember's IR: a primitive defined
outside ember whose rule uses `mlir.ir_constant`, `aval_to_ir_type`, ember's emitters,
`lower_fun`, `jaxpr_subcomp`, `core_call_lowering` compiles under jit and gives JAX's
values (and JAX's StableHLO text); the helpers; whole-module lowering and its text."""
import functools

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.extend.core import Primitive, ShapedArray
from ember.interpreters import mlir

X = np.arange(3.0, dtype=np.float32)
Y = np.ones(3, np.float32)


def _close(got, want):
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-6)


# --- a rule written with ir_constant and HLO ops (JAX's: hlo.broadcast_in_dim, add, ...) ---

def _scale_add_rule(ctx, x, y):
  aval, = ctx.avals_out
  t = mlir.aval_to_ir_type(ctx.module_context, aval)
  two = mlir.ir_constant(np.array(2, aval.dtype))
  b = ctx.emit("broadcast", t, [two], {"dimensions": mlir.dense_int_array([])})
  return [ctx.emit("add", t, [ctx.emit("multiply", t, [x, b]), y])]


scale_add_p = Primitive("scale_add")          # no impl: only its lowering can compute it
scale_add_p.def_abstract_eval(lambda x, y: x)
mlir.register_lowering(scale_add_p, _scale_add_rule)

# JAX 0.12.1 with the same rule written with jaxlib's hlo dialect
JAX_SCALE_ADD_TEXT = """\
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<3xf32>
    %2 = stablehlo.add %1, %arg1 : tensor<3xf32>
    return %2 : tensor<3xf32>
  }
}
"""


def test_rule_with_ir_constant_lowers_a_custom_primitive_under_jit():
  f = ember.jit(lambda x, y: scale_add_p.bind(x, y))
  _close(f(X, Y), [1.0, 3.0, 5.0])                 # JAX 0.12.1: [1. 3. 5.]
  assert f.lower(X, Y).as_text() == JAX_SCALE_ADD_TEXT
  # inside a larger program, and vmapped through jit's batching of the staged call
  _close(ember.jit(lambda x: scale_add_p.bind(jnp.sin(x), x) * 2)(X),
         2 * (2 * np.sin(X.astype(np.float64)) + X))


def test_identity_rule_and_lower_fun_inside_a_rule():
  ident = Primitive("ident_rule")
  ident.def_impl(lambda x: x + 100)               # never used by jit: the rule lowers it
  ident.def_abstract_eval(lambda x: x)
  mlir.register_lowering(ident, lambda ctx, x: [x])    # JAX: jit gives x
  _close(ember.jit(ident.bind)(X), X)

  cube = Primitive("cube_via_lower_fun")
  cube.def_abstract_eval(lambda x: x)
  inner = mlir.lower_fun(lambda x: x * x * x, multiple_results=False)
  mlir.register_lowering(cube, lambda ctx, x: inner(ctx, x))   # a sequence, as JAX's
  _close(ember.jit(cube.bind)(X), X.astype(np.float64) ** 3)


def test_multiple_results_and_jaxpr_subcomp():
  two = Primitive("sin_and_cos")
  two.multiple_results = True
  two.def_abstract_eval(lambda x: [x, x])
  closed = ember.make_jaxpr(lambda x: (jnp.sin(x), jnp.cos(x) + 1.0))(X)

  def rule(ctx, x):
    consts = [mlir.ir_constant(c) for c in closed.consts]
    outs, tokens = mlir.jaxpr_subcomp(ctx.module_context, closed.jaxpr, ctx.name_stack,
                                      mlir.TokenSet(), consts, x,
                                      dim_var_values=ctx.dim_var_values)
    assert len(tokens) == 0
    return outs
  mlir.register_lowering(two, rule)
  s, c = ember.jit(two.bind)(X)
  _close(s, np.sin(X.astype(np.float64)))
  _close(c, np.cos(X.astype(np.float64)) + 1)


def test_core_call_lowering_and_shape_tensor():
  call = Primitive("my_core_call")
  call.multiple_results = True
  call.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)
  mlir.register_lowering(call, functools.partial(mlir.core_call_lowering, name="inner"))
  inner = ember.make_jaxpr(lambda x: [x * 3.0])(X)
  f = ember.jit(lambda x: call.bind(x, call_jaxpr=inner.jaxpr, name="inner")[0])
  _close(f(X), 3 * X)

  shape_p = Primitive("shape_of")
  shape_p.def_abstract_eval(lambda x: ShapedArray((x.ndim,), np.int32))
  mlir.register_lowering(shape_p, lambda ctx, x: [mlir.shape_tensor(ctx.module_context,
                                                                    ctx.avals_in[0].shape)])
  np.testing.assert_array_equal(ember.jit(shape_p.bind)(np.zeros((2, 5))), [2, 5])


def test_a_rule_that_fails_on_embers_ir_with_no_impl_names_the_primitive():
  p = Primitive("jax_mlir_only")
  p.def_abstract_eval(lambda x: x)
  mlir.register_lowering(p, lambda ctx, x: [x.type])   # ir.Value.type: JAX's MLIR
  with pytest.raises(NotImplementedError, match="jax_mlir_only.*failed on ember's IR"):
    ember.jit(p.bind)(X)
  wrong = Primitive("wrong_shape")
  wrong.def_impl(lambda x: x)
  wrong.def_abstract_eval(lambda x: x)
  mlir.register_lowering(wrong, lambda ctx, x: [mlir.ir_constant(np.float32(1))])
  _close(ember.jit(wrong.bind)(X), X)    # a result of the wrong type: the impl runs instead


def test_types_attributes_and_value_lists():
  aval = ShapedArray((2, 3), np.float32)
  assert mlir.dtype_to_ir_type(np.dtype(np.float32)) == np.float32
  assert mlir.aval_to_ir_type(aval).to_mlir() == "tensor<2x3xf32>"
  assert [t.to_mlir() for t in mlir.aval_to_ir_types(None, aval)] == ["tensor<2x3xf32>"]
  assert mlir.i32_attr(3) == 3 and mlir.i64_attr(2**40) == 2**40
  assert mlir.dense_int_array(np.array([1, 2])) == (1, 2)
  np.testing.assert_array_equal(mlir.dense_int_elements([1, 2]), np.array([1, 2], np.int64))
  assert mlir.ir_attribute([1, (2.5, "a")]) == (1, (2.5, "a"))
  t = mlir.aval_to_ir_type(aval)
  assert mlir.flatten_ir_types([t, [t, t]]) == [t, t, t]
  assert mlir.unflatten_ir_values_like_types(["a", "b", "c"], [t, [t, t]]) == ["a", ["b", "c"]]
  with pytest.raises(ValueError, match="lowering rule"):
    mlir.ir_constant(1.0)                           # no rule is being lowered


def test_lower_jaxpr_to_module_prints_what_jit_lowers():
  def f(x):
    return jnp.sin(x) * 2.0
  closed = ember.make_jaxpr(f)(X)
  result = mlir.lower_jaxpr_to_module("jit_f", closed)   # the name as given, as JAX's
  text = mlir.module_to_string(result.module)
  assert text.startswith("module @jit_f ")
  assert "stablehlo.sine" in text and "func.func public @main" in text
  assert text == ember.jit(f).lower(X).as_text()
  other = mlir.lower_jaxpr_to_module("cos", ember.make_jaxpr(jnp.cos)(X)).module
  assert mlir.module_to_string(other).startswith("module @cos ")
  name = mlir.merge_mlir_modules(result.module, "cos_fn", other)
  assert name == "cos_fn" and any(c.name == "cos_fn" for c in result.module.computations)

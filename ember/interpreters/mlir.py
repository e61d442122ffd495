"""ember.interpreters.mlir: lowering rules of primitives (jax.interpreters.mlir).

`register_lowering(p, rule)` sets how `p` compiles. `lower_fun(fun)` lowers `p` as ember's
lowering of `fun`. Any other rule is called as JAX calls it, `rule(ctx, *operands,
**params)` returning one value per result, on ember's IR (ember/_src/lower/rule_api.py):
the operands are ember's StableHLO-style instructions, `ctx` is a `LoweringRuleContext`
(`ctx.avals_in`, `ctx.avals_out`, and ember's emitters: `ctx.emit(opcode, shape,
operands, attrs)`, `ctx.add`, `ctx.broadcast_in_dim`, ...), `ir_constant(x)` a constant,
`aval_to_ir_type(aval)` a tensor type (`hlo.Shape`), `dtype_to_ir_type(dtype)` an element
type (a NumPy dtype). A rule that builds JAX's own MLIR (jaxlib's dialects) cannot run in
ember: compiled code then calls `p`'s impl on the host instead, unless all the rule emits
is `emit_python_callback` (a host call of the callback).

Left out: what exists only with MLIR's Python bindings (`make_ir_context`,
`module_to_bytecode`, `ir_tree_registry`), tokens and host transfer channels
(`token_type`, `SEND_TO_HOST_TYPE`, ...: ember's IR orders effects without tokens)."""
from ember._src.lower import LowerFun, lower_fun  # noqa: F401
from ember._src.lower.rule_api import (  # noqa: F401
    AxisContext, ConstantHandler, LoweringParameters, LoweringResult, LoweringRule,
    LoweringRuleContext, Mesh, MeshAxisName, ModuleContext, ShapePolyLoweringState,
    ShardingContext, SPMDAxisContext, Token, TokenSet, Value, aval_to_ir_type,
    aval_to_ir_types, core_call_lowering, dense_int_array, dense_int_elements,
    dtype_to_ir_type, flatten_ir_types, flatten_ir_values, i32_attr, i64_attr, ir_attribute,
    ir_constant, ir_constants, ir_type_handlers, jaxpr_subcomp, lower_jaxpr_to_fun,
    lower_jaxpr_to_module, lowerable_effects, merge_mlir_modules, module_to_string,
    register_constant_handler, register_lowering, shape_tensor,
    unflatten_ir_values_like_types)
from ember._src.primitives.callbacks import emit_python_callback  # noqa: F401

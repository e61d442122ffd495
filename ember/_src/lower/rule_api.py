"""JAX's lowering-rule vocabulary (jax.interpreters.mlir) on ember's IR.

A library that defines a primitive registers a rule `rule(ctx, *operands, **params)` that
builds the primitive's computation from values, returning one value per result. In JAX
the values are MLIR `ir.Value`s; here they are the `hlo.Instr`s of ember's StableHLO-style
IR (ember/_src/hlo/graph.py), and the IR's types are `hlo.Shape`s (a tensor type: dtype
and dims) whose element type is a NumPy dtype. Attributes are plain Python values (ints,
tuples, arrays), as the IR's `Instr.attrs` hold them.

`LoweringRuleContext` is what such a rule receives: JAX's fields (`avals_in`,
`avals_out`, `module_context`, `primitive`, `tokens_in`, ...) and, by delegation, the
methods of ember's `LoweringContext` (`ctx.emit(opcode, shape, operands, attrs)`,
`ctx.add`, `ctx.broadcast_in_dim`, `ctx.convert`, ...). `ir_constant(value)` emits into the
context of the rule being run, as JAX's emits at the current MLIR insertion point.

A rule that builds JAX's own MLIR (jaxlib's dialects) fails on these values; then ember
calls the primitive's impl on the host instead (`foreign_rule`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import threading
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core.sharding import Mesh  # noqa: F401 (jax.interpreters.mlir.Mesh)
from ember._src.hlo import graph as hlo
from ember._src.hlo.graph import Instr, Shape, TupleShape
from ember._src import lower as lower_lib
from ember._src.lower import mlir as mlir_text

Value = Instr          # an SSA value of ember's IR (JAX: ir.Value)
LoweringRule = Callable[..., Sequence[Any]]
MeshAxisName = Any


# --------------------------------------------------------------------------------------
# Contexts
# --------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class ShardingContext:
  """The sharding context of a lowering: ember lowers one program for `num_devices`."""
  num_devices: int = 1
  device_assignment: Any = None


@dataclasses.dataclass(frozen=True)
class SPMDAxisContext:
  """The context of a lowering under a mesh (shard_map): its mesh and the manual axes."""
  mesh: Any
  manual_axes: frozenset = frozenset()


AxisContext = SPMDAxisContext | ShardingContext


@dataclasses.dataclass(frozen=True)
class ShapePolyLoweringState:
  """The dimension variables of a shape-polymorphic lowering: ember's shapes are static, so
  there are none."""
  dim_vars: tuple = ()
  uses_dim_vars: bool = False


@dataclasses.dataclass(frozen=True)
class LoweringParameters:
  """Options of a lowering (JAX's): the platforms a rule may check."""
  override_lowering_rules: tuple | None = None
  global_constant_computation: bool = False
  for_export: bool = False
  export_ignore_forward_compatibility: bool = False
  hoist_constants_as_args: bool = False


class TokenSet:
  """The tokens that order a rule's effects, by effect. ember orders effectful equations by
  keeping them in program order, so a lowering's token sets are empty."""

  def __init__(self, *args, **kwargs):
    self._tokens = dict(*args, **kwargs)

  def __len__(self):
    return len(self._tokens)

  def effects(self):
    return set(self._tokens)

  def get(self, effect):
    return self._tokens.get(effect)

  def items(self):
    return tuple(self._tokens.items())

  def update_tokens(self, tokens: "TokenSet") -> "TokenSet":
    return TokenSet({**self._tokens, **tokens._tokens})


Token = Instr


class ModuleContext:
  """What the rules lowering into one module share: the module (ember's `hlo.Module`),
  the platforms, and the objects compiled code keeps alive (host callbacks)."""

  def __init__(self, ember_context: "lower_lib.LoweringContext | None" = None,
               module: hlo.Module | None = None, platforms: Sequence[str] = ("cpu",),
               axis_context: AxisContext | None = None,
               lowering_parameters: LoweringParameters | None = None):
    self.ember_context = ember_context
    self.module = module if module is not None else getattr(ember_context, "module", None)
    self.platforms = tuple(platforms)
    self.axis_context = axis_context if axis_context is not None else ShardingContext()
    self.lowering_parameters = lowering_parameters or LoweringParameters()
    self.shape_poly_state = ShapePolyLoweringState()
    self.keepalives: list = []
    self.host_callbacks: list = []
    self.name_stack = ""

  def add_keepalive(self, keepalive) -> None:
    self.keepalives.append(keepalive)

  def add_host_callback(self, host_callback) -> None:
    self.host_callbacks.append(host_callback)

  def replace(self, **changes) -> "ModuleContext":
    new = object.__new__(ModuleContext)
    new.__dict__.update(self.__dict__, **changes)
    return new


class LoweringRuleContext:
  """The context a lowering rule receives: the equation's avals, the module context, and
  ember's `LoweringContext` (`ember_context`), whose methods it offers as its own."""

  def __init__(self, ember_context: "lower_lib.LoweringContext", primitive=None,
               module_context: ModuleContext | None = None, avals_in=None, avals_out=None):
    self.ember_context = ember_context
    self.primitive = primitive
    self.module_context = module_context or ModuleContext(ember_context)
    self.avals_in = list(ember_context.avals_in if avals_in is None else avals_in)
    self.avals_out = list(ember_context.avals_out if avals_out is None else avals_out)
    self.name_stack = ember_context.metadata.op_name
    self.traceback = None
    self.tokens_in = TokenSet()
    self.tokens_out: TokenSet | None = None
    self.axis_size_env = None
    self.dim_var_values: tuple = ()
    self.jaxpr_eqn_ctx = None
    self.platforms = None
    self.called_back = False   # set by emit_python_callback: the rule's results are ours

  def set_tokens_out(self, tokens_out: TokenSet) -> None:
    if self.tokens_out is not None:
      raise AssertionError("Should only set `tokens_out` once.")
    self.tokens_out = tokens_out

  def replace(self, **changes) -> "LoweringRuleContext":
    new = object.__new__(LoweringRuleContext)
    new.__dict__.update(self.__dict__, **changes)
    return new

  def __getattr__(self, name):   # ember's emission methods: ctx.emit, ctx.add, ...
    if name.startswith("__") or name == "ember_context":
      raise AttributeError(name)
    return getattr(self.ember_context, name)


# The rule contexts being run, innermost last (ir_constant emits into the innermost).
class _Current(threading.local):
  def __init__(self):
    self.stack: list = []


_current = _Current()


@contextlib.contextmanager
def running(ctx) -> Any:
  """`ctx` (a LoweringRuleContext or ember LoweringContext) is where ir_constant emits."""
  _current.stack.append(ctx)
  try:
    yield ctx
  finally:
    _current.stack.pop()


def _emitter(what: str) -> "lower_lib.LoweringContext":
  if not _current.stack:
    raise ValueError(f"{what} emits into the lowering rule being run: call it from a "
                     "lowering rule (registered with mlir.register_lowering)")
  ctx = _current.stack[-1]
  return getattr(ctx, "ember_context", ctx)


def _ember(ctx) -> "lower_lib.LoweringContext":
  if isinstance(ctx, (LoweringRuleContext, ModuleContext)):
    inner = ctx.ember_context
    return inner if inner is not None else _emitter("this lowering helper")
  return ctx


# --------------------------------------------------------------------------------------
# Types, constants and attributes
# --------------------------------------------------------------------------------------

def dtype_to_ir_type(dtype) -> np.dtype:
  """The IR element type of `dtype`: ember's IR types its elements with NumPy dtypes (a
  user's extended dtype: its physical element)."""
  if dtypes.has_rules(dtype):
    return dtypes.physical_element(dtype)[1]
  return np.dtype(dtype)


def _array_ir_types(aval) -> tuple:
  return (Shape.of(aval),)


# aval type -> (aval -> tuple of IR types), as JAX's table (a library adds its own avals)
ir_type_handlers: dict[type, Callable] = {core.ShapedArray: _array_ir_types}


def aval_to_ir_types(*args) -> tuple:
  """The IR types (tensor `Shape`s) of an aval; JAX's `(ctx, aval)` form is accepted."""
  aval = args[-1]
  for t in type(aval).__mro__:
    handler = ir_type_handlers.get(t)
    if handler is not None:
      return tuple(handler(aval))
  raise TypeError(f"No ir_type_handler for aval type: {type(aval)}")


def aval_to_ir_type(*args) -> Shape:
  """The IR type (a tensor `Shape`) of an array aval; JAX's `(ctx, aval)` form too."""
  aval = args[-1]
  types = aval_to_ir_types(aval)
  if len(types) != 1:
    raise TypeError(f"aval_to_ir_type called on {aval}, which has {len(types)} IR types")
  return types[0]


ConstantHandler = Callable[[Any], np.ndarray]
_constant_handlers: dict[type, ConstantHandler] = {}


def register_constant_handler(type_: type, handler_fun: ConstantHandler) -> None:
  """How ir_constant turns values of `type_` into arrays (one array or a sequence)."""
  _constant_handlers[type_] = handler_fun


def _constant_arrays(val) -> list[np.ndarray]:
  for t in type(val).__mro__:
    handler = _constant_handlers.get(t)
    if handler is not None:
      out = handler(val)
      return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]
  if core.is_concrete_array(val):
    return [core.to_numpy(val)]
  if isinstance(val, (bool, int, float, complex)):   # Python scalars: the default dtype
    return [np.asarray(val, dtypes.canonicalize_dtype(type(val)))]
  arr = np.asarray(val)
  if arr.dtype == object:
    raise TypeError(f"No constant handler for type: {type(val)}")
  return [np.asarray(arr, dtypes.canonicalize_dtype(arr.dtype))]


def ir_constants(val, *, const_lowering=None, aval=None) -> tuple:
  """`val` as constant instructions of the rule being lowered (one per array it holds)."""
  del const_lowering, aval   # ember emits every constant where it is used
  ctx = _emitter("ir_constant")
  return tuple(ctx.constant(a) for a in _constant_arrays(val))


def ir_constant(val, *, const_lowering=None, aval=None) -> Instr:
  """`val` (an array, NumPy or Python scalar) as one `constant` instruction."""
  values = ir_constants(val, const_lowering=const_lowering, aval=aval)
  if len(values) != 1:
    raise TypeError(f"ir_constant of {type(val)} gives {len(values)} values")
  return values[0]


def i32_attr(i) -> int:
  """A 32-bit integer attribute: an int in ember's IR."""
  return int(np.int32(i))


def i64_attr(i) -> int:
  return int(np.int64(i))


def dense_int_array(xs) -> tuple:
  """An array-of-integers attribute (`broadcast_dimensions`, ...): a tuple of ints."""
  return tuple(int(x) for x in xs)


def dense_int_elements(xs) -> np.ndarray:
  """A dense integer elements attribute: an int64 array."""
  return np.asarray(xs, np.int64)


def ir_attribute(val):
  """`val` as an attribute of ember's IR: ints, floats, bools, strings stay; sequences
  become tuples; arrays stay arrays."""
  if isinstance(val, (bool, int, float, str, np.ndarray)) or val is None:
    return val
  if isinstance(val, np.generic):
    return val.item()
  if isinstance(val, (list, tuple)):
    return tuple(ir_attribute(v) for v in val)
  raise TypeError(f"Unsupported attribute type: {type(val)}")


def flatten_ir_values(xs) -> list:
  """Values and sequences of values as one flat list."""
  out: list = []
  for x in xs:
    if isinstance(x, Instr):
      out.append(x)
    else:
      out.extend(x)
  return out


def flatten_ir_types(xs) -> list:
  out: list = []
  for x in xs:
    if isinstance(x, (Shape, TupleShape)):
      out.append(x)
    else:
      out.extend(x)
  return out


def unflatten_ir_values_like_types(xs, ys) -> list:
  """Regroup the flat values `xs` as the types `ys` are grouped (a type or a sequence)."""
  xs = iter(xs)
  out: list = []
  for y in ys:
    if isinstance(y, (Shape, TupleShape)):
      out.append(next(xs))
    else:
      out.append([next(xs) for _ in y])
  if next(xs, None) is not None:
    raise ValueError("unflatten_ir_values_like_types: more values than types")
  return out


def shape_tensor(ctx, sizes: Sequence) -> Instr:
  """A 1-D int32 tensor of `sizes` (ints, or scalar/size-1 int values)."""
  ectx = _ember(ctx)
  parts = []
  for s in sizes:
    if isinstance(s, Instr):
      parts.append(ectx.reshape(ectx.convert(s, np.int32), (1,)))
    else:
      parts.append(ectx.constant(np.asarray([s], np.int32)))
  if not parts:
    return ectx.constant(np.zeros((0,), np.int32))
  return ectx.concatenate(parts, 0)


# --------------------------------------------------------------------------------------
# Lowering jaxprs
# --------------------------------------------------------------------------------------

def jaxpr_subcomp(ctx, jaxpr, name_stack, tokens, consts_for_constvars, *args,
                  dim_var_values=(), const_lowering=None, outer_traceback=None):
  """Emit `jaxpr`'s equations where the rule being lowered emits, its invars bound to
  `args` and its constvars to `consts_for_constvars`; returns (outputs, tokens)."""
  del name_stack, dim_var_values, const_lowering, outer_traceback
  outs = lower_lib.emit_jaxpr(_ember(ctx), jaxpr, _one_each(consts_for_constvars),
                              _one_each(args))
  return outs, tokens


def _one_each(values) -> list[Instr]:
  """JAX passes a value, or a sequence of one value, per variable."""
  return [v if isinstance(v, Instr) else v[0] for v in values]


def lower_jaxpr_to_fun(ctx, name: str, jaxpr, effects=(), **_options) -> hlo.Computation:
  """`jaxpr` as a new computation of the module (JAX: a `func.func`; its consts become
  constants), to be called with `ctx.emit("call", shape, args, called=[computation])`."""
  del effects
  return _ember(ctx).lower_computation(jaxpr, name)


class LoweringResult(NamedTuple):
  module: hlo.Module
  keepalive: Any
  host_callbacks: list
  shape_poly_state: ShapePolyLoweringState


def lower_jaxpr_to_module(module_name: str, jaxpr, *, donated_args=(), arg_names=None,
                          result_names=None, **_options) -> LoweringResult:
  """A whole module named `module_name` (jit's: `jit_f`) whose `main` computes `jaxpr`
  (its consts become constants); `module_to_string(result.module)` prints it."""
  fun_name = module_name[4:] if module_name.startswith("jit_") else module_name
  module = lower_lib.lower_jaxpr(jaxpr, fun_name, arg_names=arg_names,
                                 result_names=result_names, donated=donated_args)
  module.name = module_name
  return LoweringResult(module, None, [], ShapePolyLoweringState())


def core_call_lowering(ctx, *args, name, backend=None, inline_jax_late=False,
                       call_jaxpr, **params):
  """The rule of a call primitive: a `call` of `call_jaxpr` (JAX's returns one result per
  output, as this does)."""
  del backend, inline_jax_late, params
  return _ember(ctx).call(call_jaxpr, name, _one_each(args))


def module_to_string(module: hlo.Module, enable_debug_info=None) -> str:
  """The module as StableHLO MLIR text (what `Lowered.as_text()` prints)."""
  return mlir_text.to_mlir_text(module, debug_info=bool(enable_debug_info))


def merge_mlir_modules(dst_module: hlo.Module, sym_name: str, src_module: hlo.Module,
                       dst_symtab=None) -> str:
  """Move `src_module`'s computations into `dst_module`, its entry renamed `sym_name`
  (made unique); returns the entry's name there."""
  del dst_symtab
  if not dst_module.name_taken(sym_name):
    src_module.entry.name = sym_name
  entry = hlo.adopt(dst_module, src_module)
  return entry.name


# The effects a lowering can order: ember keeps every effectful equation in program order.
lowerable_effects: frozenset = frozenset()


# --------------------------------------------------------------------------------------
# Running a rule written with this vocabulary
# --------------------------------------------------------------------------------------

def _results(outs, prim, avals_out) -> list[Instr]:
  """A rule's results (JAX's: a sequence with one value, or a sequence of values, per
  result; ember's own: a value) as one Instr per output, checked against the avals."""
  if isinstance(outs, Instr):
    outs = [outs]
  flat = []
  for o in outs:
    if isinstance(o, Instr):
      flat.append(o)
    elif isinstance(o, (list, tuple)) and len(o) == 1 and isinstance(o[0], Instr):
      flat.append(o[0])
    else:
      raise TypeError(f"lowering rule of {prim.name} returned {type(o).__name__}, not a "
                      "value of ember's IR")
  if len(flat) != len(avals_out):
    raise ValueError(f"lowering rule of {prim.name} returned {len(flat)} values for "
                     f"{len(avals_out)} results")
  for o, a in zip(flat, avals_out):
    if o.shape != Shape.of(a):
      raise TypeError(f"lowering rule of {prim.name} returned {o.shape.to_mlir()} where "
                      f"the result is {Shape.of(a).to_mlir()}")
  return flat


def foreign_rule(prim: core.Primitive) -> Callable:
  """The ember rule that runs `prim`'s registered rule on a LoweringRuleContext: its
  results are taken when they are values of ember's IR (or when all it emitted is a Python
  callback); a rule that builds JAX's MLIR fails here, and then the primitive's impl runs
  on the host instead."""
  def rule(ctx, /, *args, **params):
    pending = list(ctx._pending)
    rctx = LoweringRuleContext(ctx, prim)
    failure = None
    try:
      with running(rctx):
        outs = prim.foreign_lowering(rctx, *args, **params)
      if rctx.called_back:   # JAX's rules return one result or more
        return outs if prim.multiple_results else outs[0]
      flat = _results(outs, prim, rctx.avals_out)
      return flat if prim.multiple_results else flat[0]
    except Exception as e:  # noqa: BLE001 - JAX's MLIR is not here: call the impl instead
      failure = e
    if not (prim.impl_on_arrays and lower_lib.host_impl_lowering is not None):
      raise NotImplementedError(
          f"ember cannot compile the primitive `{prim.name}`: its lowering rule failed on "
          f"ember's IR ({type(failure).__name__}: {failure}) and it has no impl to call "
          "back instead. Write the rule with mlir.ir_constant and ctx.emit (ember's IR), "
          "register `mlir.lower_fun(fun)`, or give it an impl with `def_impl`."
      ) from failure
    ctx._pending[:] = pending           # what the rule emitted is dropped
    return lower_lib.host_impl_lowering(prim, ctx, *args, **params)
  return rule


def register_lowering(prim: core.Primitive, rule: Callable, platform: str | None = None,
                      **_options):
  """JAX's `mlir.register_lowering`: a `lower_fun` rule becomes the primitive's lowering;
  any other rule runs on a LoweringRuleContext (`foreign_rule`). Rules for other platforms
  than the CPU are ignored."""
  if platform not in (None, "cpu"):
    return rule
  if isinstance(rule, lower_lib.LowerFun):
    prim.lower, prim.foreign_lowering = rule, None
  else:
    prim.lower, prim.foreign_lowering = foreign_rule(prim), rule
  return rule

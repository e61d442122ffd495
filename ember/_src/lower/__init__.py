"""Lowering: a jaxpr becomes an `hlo.Module` (ember's compiler IR, `ember/_src/hlo/graph.py`).

`lower_jaxpr(jaxpr, name)` walks the equations in order and calls each primitive's
`prim.lower` rule, which lives beside the primitive's declaration in its family module:

    rule(ctx, *operands: hlo.Instr, **eqn.params) -> hlo.Instr | list[hlo.Instr]

The `LoweringContext` a rule receives emits instructions into the current computation
(`ctx.emit`), with the equation's metadata attached (`jit(f)/scope/prim`, source line), and
offers the small vocabulary rules share: constants, lax-style broadcasting of elementwise
operands, compare/select/convert, reductions with cached scalar computations, regions,
and calls to sub-jaxprs. The instruction that produces an equation's result is named after
the primitive (`sin`, `mul.1`); helpers keep their opcode names (`constant.3`).

Semantics are XLA's (hlo.OPCODES), chosen so the module computes what the primitive's
NumPy reference implementation computes; `Lowered.as_text()` prints the module as
StableHLO MLIR (`lower/mlir.py`).
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.hlo import graph as hlo
from ember._src.hlo.graph import Instr, Shape, TupleShape

__all__ = ["lower_jaxpr", "LoweringContext", "elementwise", "compare_type", "sanitize_name",
           "lower_fun"]


# --------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------

def sanitize_name(name: str) -> str:
  """An argument/computation name as an HLO identifier: `params['w']` -> `params_w`."""
  name = str(name)
  lead = "_" * (len(name) - len(name.lstrip("_")))   # keep a private name's underscores
  s = lead + re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")
  if not s:
    return "arg"
  return s if not s[0].isdigit() else "_" + s


def module_name(name: str) -> str:
  """JAX's module name: `jit_f`; `<lambda>` gives `jit__lambda`."""
  return re.sub(r"[^\w.-]", "_", f"jit_{name}").rstrip("_")


def _default_result_names(n: int) -> list[str]:
  return ["result"] if n == 1 else [f"result[{i}]" for i in range(n)]


def compare_type(dtype) -> str:
  """XLA's comparison type for a dtype: FLOAT (also complex), SIGNED, or UNSIGNED (bool)."""
  kind = "f" if np.dtype(dtype) == dtypes.bfloat16 else np.dtype(dtype).kind
  return {"f": "FLOAT", "c": "FLOAT", "i": "SIGNED"}.get(kind, "UNSIGNED")


# --------------------------------------------------------------------------------------
# The lowering context
# --------------------------------------------------------------------------------------

class _ModuleState:
  """What all contexts lowering into one module share: the module, the lowered sub-jaxprs
  (one computation per jaxpr object, so `call`s of the same jitted function share it),
  and the cached scalar computations of reductions."""

  def __init__(self, module: hlo.Module):
    self.module = module
    self.calls: dict[int, hlo.Computation] = {}
    self.keep: list = []                      # keep lowered jaxprs alive (ids stay valid)
    self.scalar_comps: dict[tuple, hlo.Computation] = {}


class LoweringContext:
  """Emits instructions into one computation. `avals_in`/`avals_out` are the current
  equation's abstract values (for rules that need the result dtype or shape)."""

  def __init__(self, state: _ModuleState, comp: hlo.Computation, op_prefix: str = ""):
    self.state = state
    self.module = state.module
    self.comp = comp
    self.op_prefix = op_prefix                # "jit(f)", "jit(f)/jit(inner)"
    self.metadata = hlo.Metadata()
    self.avals_in: list = []
    self.avals_out: list = []
    self._pending: list[Instr] | None = None  # instrs of the equation being lowered

  # --- emission -------------------------------------------------------------------------

  def emit(self, opcode: str, shape, operands: Sequence[Instr] = (), attrs: dict | None = None,
           called: Sequence[hlo.Computation] = (), name: str | None = None) -> Instr:
    """Append one instruction (with the current equation's metadata)."""
    instr = Instr(opcode, shape, operands, attrs, called, name=name, metadata=self.metadata)
    if self._pending is not None:
      self._pending.append(instr)   # named when the equation is done (see _lower_eqn)
    else:
      self.comp.add(instr)
    return instr

  def out_shape(self, i: int = 0) -> Shape:
    """The HLO shape of the current equation's i-th output."""
    return Shape.of(self.avals_out[i])

  def sub_context(self, comp: hlo.Computation, op_prefix: str | None = None) -> "LoweringContext":
    return LoweringContext(self.state, comp, self.op_prefix if op_prefix is None else op_prefix)

  # --- constants --------------------------------------------------------------------------

  def constant(self, value, dtype=None) -> Instr:
    """A `constant` holding `value` (a scalar or array) in `dtype`."""
    arr = np.asarray(value) if dtype is None else _as_dtype(value, dtype)
    return self.emit("constant", Shape(arr.dtype, arr.shape), attrs={"value": arr})

  def full(self, value, dtype, dims=()) -> Instr:
    """A scalar constant broadcast to `dims` (as lax's `full`)."""
    return self.broadcast_to(self.constant(value, dtype), tuple(dims))

  def full_like(self, value, x: Instr) -> Instr:
    return self.full(value, x.dtype, x.dims)

  def zeros_of(self, aval) -> Instr:
    """Zeros of the stored type of `aval` (a user's extended dtype: its physical one), the
    filler of a buffer the program then writes."""
    shape = Shape.of(aval)
    return self.full(0, shape.dtype, shape.dims)

  # --- shapes ---------------------------------------------------------------------------

  def broadcast_in_dim(self, x: Instr, dims: Sequence[int], mapping: Sequence[int]) -> Instr:
    """`broadcast` with lax's broadcast_in_dim semantics: operand dim i goes to output dim
    mapping[i], and a size-1 operand dim may expand (dropped by a reshape first, since an
    XLA broadcast maps dimensions of equal size only)."""
    dims, mapping = tuple(dims), tuple(mapping)
    if x.dims == dims and mapping == tuple(range(len(dims))):
      return x
    keep = [i for i, m in enumerate(mapping) if x.dims[i] == dims[m]]
    if len(keep) < x.shape.rank:
      x = self.reshape(x, [x.dims[i] for i in keep])
      mapping = tuple(mapping[i] for i in keep)
    return self.emit("broadcast", Shape(x.dtype, dims), [x], {"dimensions": mapping})

  def broadcast_to(self, x: Instr, dims: Sequence[int]) -> Instr:
    """lax's implicit broadcasting of elementwise operands: rank 0, or equal rank with
    size-1 dimensions."""
    dims = tuple(dims)
    if x.dims == dims:
      return x
    if x.shape.rank == 0:
      return self.emit("broadcast", Shape(x.dtype, dims), [x], {"dimensions": ()})
    if x.shape.rank != len(dims):
      raise ValueError(f"cannot broadcast {x.shape.to_hlo()} to {dims}")
    return self.broadcast_in_dim(x, dims, range(len(dims)))

  def reshape(self, x: Instr, dims: Sequence[int]) -> Instr:
    dims = tuple(dims)
    return x if x.dims == dims else self.emit("reshape", Shape(x.dtype, dims), [x])

  def transpose(self, x: Instr, perm: Sequence[int]) -> Instr:
    perm = tuple(perm)
    if perm == tuple(range(len(perm))):
      return x
    return self.emit("transpose", Shape(x.dtype, tuple(x.dims[p] for p in perm)), [x],
                     {"dimensions": perm})

  def slice(self, x: Instr, start, limit, strides=None) -> Instr:
    start, limit = tuple(start), tuple(limit)
    strides = tuple(strides) if strides else (1,) * len(start)
    if start == (0,) * len(start) and limit == x.dims and strides == (1,) * len(start):
      return x
    dims = tuple(0 if l <= s else (l - s - 1) // st + 1 for s, l, st in zip(start, limit, strides))
    return self.emit("slice", Shape(x.dtype, dims), [x],
                     {"start": start, "limit": limit, "strides": strides})

  def slice_in_dim(self, x: Instr, start: int, limit: int, axis: int) -> Instr:
    starts, limits = [0] * x.shape.rank, list(x.dims)
    starts[axis], limits[axis] = start, limit
    return self.slice(x, starts, limits)

  def concatenate(self, xs: Sequence[Instr], dimension: int) -> Instr:
    xs = list(xs)
    if len(xs) == 1:
      return xs[0]
    dims = list(xs[0].dims)
    dims[dimension] = sum(x.dims[dimension] for x in xs)
    return self.emit("concatenate", Shape(xs[0].dtype, tuple(dims)), xs,
                     {"dimension": dimension})

  def pad(self, x: Instr, value: Instr, low, high, interior=None) -> Instr:
    """XLA's pad (negative low/high crop); `value` is a scalar of x's dtype."""
    interior = tuple(interior) if interior else (0,) * len(low)
    dims = tuple(lo + hi + (0 if d == 0 else (d - 1) * (i + 1) + 1)
                 for d, lo, hi, i in zip(x.dims, low, high, interior))
    return self.emit("pad", Shape(x.dtype, dims), [x, value],
                     {"low": tuple(low), "high": tuple(high), "interior": interior})

  def rev(self, x: Instr, dimensions) -> Instr:
    dimensions = tuple(dimensions)
    return self.emit("reverse", x.shape, [x], {"dimensions": dimensions}) if dimensions else x

  def iota(self, dtype, dims, dimension: int) -> Instr:
    dt = np.dtype(dtype)
    if dt.kind == "c":  # XLA iota is integer or real: count in the real type, then convert
      return self.convert(self.iota(np.float64 if dt.itemsize == 16 else np.float32, dims,
                                    dimension), dt)
    return self.emit("iota", Shape(dt, tuple(dims)), attrs={"iota_dimension": dimension})

  def tuple(self, xs: Sequence[Instr]) -> Instr:
    return self.emit("tuple", TupleShape(tuple(x.shape for x in xs)), list(xs))

  def gte(self, t: Instr, index: int) -> Instr:
    return self.emit("get-tuple-element", t.shape.elements[index], [t], {"index": index})

  def unpack(self, t: Instr) -> list[Instr]:
    """The elements of a tuple-shaped instruction (the instruction itself if it is not)."""
    if not isinstance(t.shape, TupleShape):
      return [t]
    return [self.gte(t, i) for i in range(len(t.shape.elements))]

  # --- elementwise ----------------------------------------------------------------------

  def elementwise(self, opcode: str, *xs: Instr, dtype=None, attrs: dict | None = None) -> Instr:
    """An elementwise op; operands broadcast to a common shape as lax's rule allows
    (rank 0 or size-1 dims). The result dtype is the first operand's unless given."""
    dims = _broadcast_dims([x.dims for x in xs])
    xs = [self.broadcast_to(x, dims) for x in xs]
    return self.emit(opcode, Shape(np.dtype(xs[0].dtype if dtype is None else dtype), dims),
                     xs, attrs)

  def add(self, x, y):
    return self.elementwise("add", x, y)

  def sub(self, x, y):
    return self.elementwise("subtract", x, y)

  def mul(self, x, y):
    return self.elementwise("multiply", x, y)

  def div(self, x, y):
    return self.elementwise("divide", x, y)

  def max(self, x, y):
    return self.elementwise("maximum", x, y)

  def and_(self, x, y):
    return self.elementwise("and", x, y)

  def or_(self, x, y):
    return self.elementwise("or", x, y)

  def not_(self, x):
    return self.elementwise("not", x)

  def compare(self, x: Instr, y: Instr, direction: str) -> Instr:
    return self.elementwise("compare", x, y, dtype=np.bool_,
                            attrs={"direction": direction, "compare_type": compare_type(x.dtype)})

  def is_nan(self, x: Instr) -> Instr:
    return self.compare(x, x, "NE")

  def select(self, pred: Instr, on_true: Instr, on_false: Instr) -> Instr:
    dims = _broadcast_dims([pred.dims, on_true.dims, on_false.dims])
    return self.emit("select", Shape(on_true.dtype, dims),
                     [self.broadcast_to(v, dims) for v in (pred, on_true, on_false)])

  def convert(self, x: Instr, dtype) -> Instr:
    dt = np.dtype(dtype)
    return x if x.dtype == dt else self.emit("convert", Shape(dt, x.dims), [x])

  # --- reductions -----------------------------------------------------------------------

  def scalar_computation(self, opcode: str, dtype) -> hlo.Computation:
    """The computation `(a, b) -> opcode(a, b)` on scalars of `dtype` (a reduction's or
    scatter's combiner), one per module and key."""
    shape = hlo.scalar_shape(dtype)
    key = (opcode, shape.dtype)
    comp = self.state.scalar_comps.get(key)
    if comp is None:
      comp = self.region(f"{opcode}_{shape.hlo_type()}", [shape, shape],
                         lambda c, a, b: c.emit(opcode, shape, [a, b]))
      self.state.scalar_comps[key] = comp
    return comp

  def region(self, name: str, param_shapes: Sequence, body: Callable) -> hlo.Computation:
    """A new computation whose parameters have `param_shapes` (Shapes, or dtypes for
    scalars); `body(ctx, *params)` emits
    its instructions and returns the root (a list of roots becomes a tuple)."""
    comp = self.module.new_computation(sanitize_name(name))
    sub = self.sub_context(comp)
    shapes = [s if isinstance(s, (Shape, TupleShape)) else hlo.scalar_shape(s)
              for s in param_shapes]
    params = [sub.emit("parameter", s, attrs={"number": i}, name=f"Arg_{i}")
              for i, s in enumerate(shapes)]
    root = body(sub, *params)
    comp.root = sub.tuple(root) if isinstance(root, (list, tuple)) else root
    return comp

  def reduce(self, operands: Sequence[Instr], inits: Sequence[Instr], axes: Sequence[int],
             computation: hlo.Computation) -> list[Instr]:
    """XLA's (variadic) reduce over `axes`; returns one result per operand."""
    axes = tuple(sorted(axes))
    dims = tuple(d for i, d in enumerate(operands[0].dims) if i not in axes)
    shapes = [Shape(x.dtype, dims) for x in operands]
    shape = shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))
    out = self.emit("reduce", shape, [*operands, *inits], {"dimensions": axes}, [computation])
    return self.unpack(out)

  def reduce_window(self, operands: Sequence[Instr], inits: Sequence[Instr],
                    computation: hlo.Computation, out_dims: Sequence[int], window: dict
                    ) -> list[Instr]:
    """XLA's (variadic) reduce-window; `window`: the hlo.OPCODES attributes
    (window_dimensions, window_strides, padding, base_dilation, window_dilation).
    Returns one result per operand."""
    shapes = [Shape(x.dtype, tuple(out_dims)) for x in operands]
    shape = shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))
    attrs = {k: tuple(tuple(p) for p in v) if k == "padding" else tuple(v)
             for k, v in window.items()}
    out = self.emit("reduce-window", shape, [*operands, *inits], attrs, [computation])
    return self.unpack(out)

  # --- sub-jaxprs -------------------------------------------------------------------------

  def lower_computation(self, jaxpr: core.Jaxpr, name: str, op_prefix: str | None = None,
                        param_names: Sequence[str] | None = None) -> hlo.Computation:
    """`jaxpr` as a new computation of the module (parameters = its invars)."""
    comp = self.module.new_computation(sanitize_name(name))
    sub = self.sub_context(comp, op_prefix)
    _lower_body(sub, jaxpr, param_names)
    return comp

  def call(self, jaxpr: core.Jaxpr, name: str, args: Sequence[Instr]) -> list[Instr]:
    """A `call` of `jaxpr` (lowered once per jaxpr object and module); one result per
    output. The inline pass replaces calls by their bodies."""
    comp = self.state.calls.get(id(jaxpr))
    if comp is None:
      prefix = f"{self.op_prefix}/jit({name})" if self.op_prefix else f"jit({name})"
      comp = self.lower_computation(jaxpr, name, prefix)
      self.state.calls[id(jaxpr)] = comp
      self.state.keep.append(jaxpr)
    out = self.emit("call", comp.root.shape, list(args), called=[comp])
    return self.unpack(out) if len(jaxpr.outvars) != 1 else [out]

  # --- equations ----------------------------------------------------------------------------

  def _eqn_metadata(self, eqn: core.JaxprEqn) -> hlo.Metadata:
    si = eqn.source_info
    prim = eqn.primitive.name
    if prim == "jit":
      prim = f"jit({eqn.params.get('name')})"
    parts = [self.op_prefix, *si.name_stack, prim]
    return hlo.Metadata("/".join(p for p in parts if p), si.file, si.line)


def _as_dtype(value, dtype) -> np.ndarray:
  """`value` as an array of `dtype` (ints wrap: -1 is all ones in an unsigned type)."""
  with np.errstate(all="ignore"):
    return np.asarray(np.asarray(value).astype(np.dtype(dtype)))


def _broadcast_dims(shapes: Sequence[tuple]) -> tuple:
  ranked = [s for s in shapes if s]
  if not ranked:
    return ()
  out = []
  for ds in zip(*ranked):
    non1 = {d for d in ds if d != 1}
    out.append(non1.pop() if non1 else 1)
  return tuple(out)


# --------------------------------------------------------------------------------------
# Walking a jaxpr
# --------------------------------------------------------------------------------------

def _read(ctx: LoweringContext, env: dict, atom) -> Instr:
  if isinstance(atom, core.Literal):
    return ctx.constant(atom.val, atom.aval.dtype)
  return env[id(atom)]


# `host_impl_lowering(prim, ctx, *operands, **params)`: a user primitive's impl run as a
# host callback. Callbacks are primitives, a layer above: primitives/callbacks.py sets it.
host_impl_lowering: Callable | None = None


def _rule_of(prim: core.Primitive) -> Callable:
  if prim.lower is not None:
    return prim.lower
  if prim.impl_on_arrays and host_impl_lowering is not None:
    return lambda ctx, /, *args, **params: host_impl_lowering(prim, ctx, *args, **params)
  raise NotImplementedError(
      f"ember cannot compile the primitive `{prim.name}` yet: it has no lowering rule. "
      "Run it outside `ember.jit` (eagerly) instead.")


def _lower_eqn(ctx: LoweringContext, eqn: core.JaxprEqn, env: dict) -> list[Instr]:
  prim = eqn.primitive
  rule = _rule_of(prim)
  saved = ctx.metadata, ctx.avals_in, ctx.avals_out
  ctx.metadata = ctx._eqn_metadata(eqn)
  ctx.avals_in = [v.aval for v in eqn.invars]
  ctx.avals_out = [v.aval for v in eqn.outvars]
  outer = ctx._pending    # a rule's jaxpr_subcomp lowers equations inside its own
  metadata, ctx._pending = ctx.metadata, []
  try:
    args = [_read(ctx, env, a) for a in eqn.invars]  # literals get the eqn's metadata
    out = rule(ctx, *args, **eqn.params)
  finally:
    pending, ctx._pending = ctx._pending, outer
    ctx.metadata = hlo.Metadata() if outer is None else metadata
  outs = list(out) if prim.multiple_results else [out]
  if len(outs) != len(eqn.outvars):
    raise AssertionError(f"lowering of {prim.name} returned {len(outs)} values for "
                         f"{len(eqn.outvars)} outputs")
  results = {id(o) for o in outs}
  for instr in pending:
    if id(instr) in results and prim.name != "jit":
      instr.name = prim.name
    ctx.comp.add(instr) if outer is None else outer.append(instr)
  if outer is not None:   # back to the enclosing equation's avals
    _, ctx.avals_in, ctx.avals_out = saved
  for o, v in zip(outs, eqn.outvars):
    want = Shape.of(v.aval)
    if o.shape != want:
      raise AssertionError(f"lowering of {prim.name} produced {o.shape.to_hlo()} where the "
                           f"jaxpr has {want.to_hlo()}")
  return outs


def _emit_eqns(ctx: LoweringContext, jaxpr: core.Jaxpr, env: dict) -> list[Instr]:
  """Emit the jaxpr's consts (those `env` lacks) and equations; returns its outputs."""
  for v, c in zip(jaxpr.constvars, jaxpr.consts):
    if id(v) not in env:
      env[id(v)] = ctx.constant(core.to_numpy(c, v.aval), v.aval.dtype)
  for eqn in jaxpr.eqns:
    outs = _lower_eqn(ctx, eqn, env)
    for v, o in zip(eqn.outvars, outs):
      if not isinstance(v, core.DropVar):
        env[id(v)] = o
  return [_read(ctx, env, v) for v in jaxpr.outvars]


def emit_jaxpr(ctx: LoweringContext, jaxpr: core.Jaxpr, consts: Sequence[Instr],
               args: Sequence[Instr]) -> list[Instr]:
  """Emit `jaxpr` inline where `ctx` emits (inside a rule too), its constvars bound to
  `consts` (or, where none are given, its own consts) and invars to `args`."""
  if len(args) != len(jaxpr.invars):
    raise TypeError(f"the jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  env = {id(v): c for v, c in zip(jaxpr.constvars, consts)}
  env.update((id(v), a) for v, a in zip(jaxpr.invars, args))
  return _emit_eqns(ctx, jaxpr, env)


def _lower_body(ctx: LoweringContext, jaxpr: core.Jaxpr,
                param_names: Sequence[str] | None = None) -> None:
  """Emit `jaxpr` into ctx.comp: parameters for the invars, constants for the consts,
  the equations, and the root (a tuple unless there is exactly one output)."""
  env: dict[int, Instr] = {}
  names = list(param_names) if param_names else [f"Arg_{i}" for i in range(len(jaxpr.invars))]
  for i, (v, n) in enumerate(zip(jaxpr.invars, names)):
    env[id(v)] = ctx.emit("parameter", Shape.of(v.aval), attrs={"number": i},
                          name=sanitize_name(n))
  outs = _emit_eqns(ctx, jaxpr, env)
  ctx.comp.root = outs[0] if len(outs) == 1 else ctx.tuple(outs)


def _donated_params(donated, n: int) -> list[int]:
  """Parameter numbers to donate: `donated` is per-argument flags or a list of indices."""
  donated = list(donated or ())
  if donated and all(isinstance(d, (bool, np.bool_)) for d in donated):
    return [i for i, d in enumerate(donated) if d]
  return sorted({int(d) for d in donated if 0 <= int(d) < n})


def _arg_names(jaxpr: core.Jaxpr, arg_names) -> list[str]:
  n = len(jaxpr.invars)
  if arg_names is not None:
    names = [str(a) for a in arg_names]
  else:
    dbg = getattr(jaxpr, "debug_info", None)
    names = list(getattr(dbg, "arg_names", None) or [])
  if not names:
    names = [f"Arg_{i}" for i in range(n)]
  elif len(names) < n:  # hoisted consts lead the arguments
    names = [f"const_{i}" for i in range(n - len(names))] + names
  return names[-n:] if n else []


def lower_jaxpr(jaxpr: core.Jaxpr, name: str, *, arg_names: Sequence[str] | None = None,
                result_names: Sequence[str] | None = None, donated=()) -> hlo.Module:
  """Lower a jaxpr to a module `jit_<name>` whose entry computation `main` takes the
  jaxpr's invars (callers hoist constvars into invars first; any remaining consts become
  `constant`s). `donated`: per-argument flags (or indices) of donated arguments; each is
  aliased to the first unaliased output of the same shape, as XLA does."""
  module = hlo.Module(module_name(name))
  state = _ModuleState(module)
  main = module.new_computation("main")
  module.entry = main
  ctx = LoweringContext(state, main, f"jit({name})")
  names = _arg_names(jaxpr, arg_names)
  _lower_body(ctx, jaxpr, names)
  module.arg_names = names
  n_out = len(jaxpr.outvars)
  module.result_names = (list(result_names) if result_names is not None
                         else _default_result_names(n_out))
  out_shapes = [Shape.of(v.aval) for v in jaxpr.outvars]
  taken: set[int] = set()
  for p in _donated_params(donated, len(jaxpr.invars)):
    want = Shape.of(jaxpr.invars[p].aval)
    for o, s in enumerate(out_shapes):
      if o not in taken and s == want:
        module.input_output_alias[o] = p
        taken.add(o)
        break
  module.prune_computations()
  return module


# --------------------------------------------------------------------------------------
# Rule factories shared by the family modules
# --------------------------------------------------------------------------------------

def elementwise(opcode: str) -> Callable:
  """The rule of a primitive that is one elementwise HLO op (result dtype from the jaxpr)."""
  def rule(ctx: LoweringContext, *xs: Instr, **_):
    return ctx.elementwise(opcode, *xs, dtype=ctx.avals_out[0].dtype)
  rule.__name__ = f"lower_{opcode.replace('-', '_')}"
  return rule


# --------------------------------------------------------------------------------------
# Lowering rules of primitives defined outside ember (jax.interpreters.mlir)
# --------------------------------------------------------------------------------------

class LowerFun:
  """`mlir.lower_fun(fun, multiple_results)`: the primitive lowers as ember's lowering of
  `fun(*operands, **params)` (traced on the equation's input types; inlined by the inline
  pass)."""

  def __init__(self, fun: Callable, multiple_results: bool = True):
    self.fun, self.multiple_results = fun, multiple_results

  def __call__(self, ctx: LoweringContext, *args: Instr, **params) -> list[Instr] | Instr:
    inner = getattr(ctx, "ember_context", None)
    if inner is not None:   # called by a rule (JAX's way): its results as a sequence
      return self._lower(inner, *args, **params) if self.multiple_results else [
          self._lower(inner, *args, **params)]
    return self._lower(ctx, *args, **params)

  def _lower(self, ctx: LoweringContext, *args: Instr, **params) -> list[Instr] | Instr:
    def flat(*xs):
      out = self.fun(*xs, **params)
      return (list(out) if self.multiple_results else [out]), None
    jaxpr, _ = core.trace_to_jaxpr(flat, ctx.avals_in)
    name = getattr(self.fun, "__name__", None) or "lower_fun"
    outs = ctx.call(jaxpr, name, args)
    return outs if self.multiple_results else outs[0]


def lower_fun(fun: Callable, multiple_results: bool = True) -> LowerFun:
  return LowerFun(fun, multiple_results)

"""The tracing core: abstract values, jaxprs, primitives, tracers and the interpreter stack.

The design is JAX's "Autodidax": `bind(prim, *args, **params)` finds the innermost
interpreter (trace) among its arguments and the dynamic (staging) trace, raises every
argument into it, and lets that trace process the primitive. Level 0 is the eval trace
(eager execution through each primitive's NumPy implementation); `make_jaxpr` / `jit`
push a `JaxprTrace` that records equations; jvp, batching and partial evaluation push
their own traces on the same stack.
"""
from __future__ import annotations

import collections
import collections.abc
import contextlib
import functools
import inspect
import itertools
import operator
import re
import sys
import threading
import weakref
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src.base import basearray, dtypes, errors
from ember._src.base import pretty_printer as pp
from ember._src.base import traceback_util, tree_util

# ------------------------------------------------------------------------------------
# Abstract values
# ------------------------------------------------------------------------------------


class AbstractValue:
  """The base of abstract values (`jax.core.AbstractValue`); ember's one kind is ShapedArray."""
  __slots__ = ()


Value = Any                    # jax.core.Value: any concrete value
ParamDict = dict[str, Any]     # jax.core.ParamDict: a primitive's parameters


class ShapedArray(AbstractValue):
  """The type of an array value: shape, dtype and whether the dtype is weak."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type: bool = False):
    self.shape = tuple(int(d) for d in shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    self.weak_type = bool(weak_type)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def to_tangent_aval(self) -> "ShapedArray":
    """The type of this value's tangents: itself for floats and complex numbers, float0 of
    the same shape for integers and bools (JAX's)."""
    if not isinstance(self.dtype, dtypes.ExtendedDType) and dtypes.dtype_kind(self.dtype) in "fc":
      return self
    return ShapedArray(self.shape, dtypes.float0, False)

  def str_short(self, short_dtypes: bool = False) -> str:
    dt = dtypes.short_dtype_name(self.dtype) if short_dtypes else self.dtype.name
    return f"{dt}[{','.join(map(str, self.shape))}]"

  def __eq__(self, other):
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))

  def __repr__(self):
    w = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({self.dtype.name}[{','.join(map(str, self.shape))}]{w})"

  def __str__(self):  # JAX's `jax.typeof(1.0)` prints `~float32[]`: `~` marks a weak type
    return ("~" if self.weak_type else "") + self.str_short()


def _python_scalar_aval(x) -> ShapedArray:
  dt = dtypes.default_dtype_for(type(x))
  if type(x) is int:
    info = np.iinfo(dt)
    if not info.min <= x <= info.max:
      raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
  return ShapedArray((), dt, weak_type=type(x) is not bool)


def get_aval(x) -> ShapedArray:
  """The abstract value of any array-like argument: Array, Tracer, NumPy value or scalar."""
  aval = getattr(x, "aval", None)
  if isinstance(aval, ShapedArray):
    return aval
  if type(x) in (bool, int, float, complex):
    return _python_scalar_aval(x)
  if isinstance(x, (np.ndarray, np.generic)):
    dt = dtypes.canonicalize_dtype(x.dtype) if x.dtype in dtypes.jax_dtypes else None
    if dt is None:
      raise TypeError(f"Value of dtype {x.dtype} is not a valid ember array type; only "
                      "numeric and bool dtypes are supported.")
    return ShapedArray(x.shape, dt, False)
  if hasattr(x, "__jax_array__"):
    return get_aval(x.__jax_array__())
  mixed = real_jax_mixing_note(x)
  if mixed:
    raise TypeError(f"Value of type {type(x).__name__} (from {type(x).__module__}) is not a "
                    f"valid ember type: {mixed}")
  raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid ember type: "
                  "pass arrays, NumPy arrays or Python scalars (mark other arguments "
                  "static with static_argnums).")


def real_jax_mixing_note(x) -> str:
  """Why `x` cannot be used, when it is a value of the real JAX: "" for anything else."""
  if not _is_real_jax_value(x):
    return ""
  return ("it is an array of the real JAX, which was imported beside ember (e.g. `import "
          "ember as jax` and then `import jax.numpy as jnp`). Mixing the two does not work. "
          "Import ember's modules (`import ember.numpy as jnp`), or run the program with "
          "`python -m ember script.py` (or call ember.compat.install() before anything "
          "imports jax) so that every `import jax` resolves to ember.")


def _is_real_jax_value(x) -> bool:
  """Whether `x` comes from the real jax/jaxlib packages (never ember's alias of them)."""
  module = type(x).__module__ or ""
  return module.split(".")[0] in ("jax", "jaxlib")


def canonicalize_shape(shape, context: str = "") -> tuple[int, ...]:
  """A shape argument as a tuple of Python ints; a traced dimension is a
  ConcretizationTypeError that names the argument it came from and suggests static_argnums."""
  if isinstance(shape, (int, np.integer)) or (isinstance(shape, Tracer) and shape.ndim == 0):
    shape = (shape,)
  try:
    dims = tuple(shape)
  except TypeError:
    raise TypeError(f"{context}shapes must be 1D sequences of integers, got {shape!r}") from None
  out = []
  for d in dims:
    if isinstance(d, Tracer) and d.to_concrete_value() is None:
      raise errors.ConcretizationTypeError(
          f"{context}Shapes must be 1D sequences of concrete values of integer type, got "
          f"{dims}. If using `jit`, try using `static_argnums` or applying `jit` to smaller "
          f"subfunctions.\n{d._origin_msg()}")
    try:
      out.append(operator.index(d))
    except TypeError:
      raise TypeError(f"{context}Shapes must be 1D sequences of concrete values of integer "
                      f"type, got {dims}.") from None
  if any(d < 0 for d in out):
    raise ValueError(f"{context}shape {tuple(out)} has a negative dimension; all dimensions "
                     "must be >= 0.")
  return tuple(out)


def valid_jaxtype(x) -> bool:
  """Whether `x` can be an argument or result of a traced function (it has an aval)."""
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


# jax.extend.core.array_types: the NumPy types that are arrays to ember
array_types = frozenset({np.ndarray, *(t.type for t in map(np.dtype, dtypes.jax_dtypes)
                                       if not isinstance(t, dtypes.ExtendedDType))})


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` without its mapped axis `axis` (of size `size`), as vmap's body sees it."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size "
                     f"{aval.shape[axis]}, not {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` with a mapped axis of size `size` inserted at `axis` (None: unchanged)."""
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def max_dim(d1, d2) -> int:
  """The larger of two dimension sizes (jax.core.max_dim; ember's shapes are concrete)."""
  return max(operator.index(d1), operator.index(d2))


def min_dim(d1, d2) -> int:
  return min(operator.index(d1), operator.index(d2))


def is_arraylike(x) -> bool:
  return (isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex))
          or isinstance(getattr(x, "aval", None), ShapedArray) or hasattr(x, "__jax_array__"))


# ------------------------------------------------------------------------------------
# Jaxprs
# ------------------------------------------------------------------------------------


class Var:
  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  def __repr__(self):
    return f"Var(id={id(self)}):{self.aval.str_short(True)}"


class DropVar(Var):
  """An equation output that is never read (printed `_`)."""
  __slots__ = ()

  def __repr__(self):
    return "_"


class Literal:
  """A scalar constant written inline in a jaxpr (`mul d 2.0:f32[]`)."""
  __slots__ = ("val", "aval")

  def __init__(self, val, aval: ShapedArray):
    self.val, self.aval = val, aval

  def __repr__(self):
    return f"Literal({self.val})"

  def pp(self) -> str:
    return f"{np.asarray(self.val).item()}:{self.aval.str_short(short_dtypes=True)}"


Atom = Var | Literal


class SourceInfo(NamedTuple):
  file: str | None
  line: int | None
  function: str | None
  name_stack: tuple = ()


def new_jaxpr_eqn(invars, outvars, primitive, params, effects=None, source_info=None,
                  ctx=None) -> "JaxprEqn":
  """A JaxprEqn (jax.extend.core.new_jaxpr_eqn). ember tracks no effects: pass none."""
  if effects:
    raise ValueError(f"new_jaxpr_eqn: ember's jaxprs have no effects; got {effects!r}")
  return JaxprEqn(invars, outvars, primitive, params, source_info)


def gensym(suffix: str = "") -> Callable[[ShapedArray], Var]:
  """A function making fresh Vars from avals (names are given when a jaxpr prints)."""
  return Var


class JaxprEqn:
  __slots__ = ("invars", "outvars", "primitive", "params", "source_info")

  def __init__(self, invars, outvars, primitive, params, source_info=None):
    self.invars, self.outvars = list(invars), list(outvars)
    self.primitive, self.params = primitive, dict(params)
    self.source_info = source_info or SourceInfo(None, None, None, ())

  def replace(self, **kw) -> "JaxprEqn":
    d = {k: getattr(self, k) for k in self.__slots__}
    d.update(kw)
    return JaxprEqn(**d)

  def __repr__(self):
    return _pp_eqn(self, _PpContext()).format().rstrip()


class Jaxpr:
  """A closed jaxpr: the program and the values of its constvars.

  As in JAX 0.12, `ClosedJaxpr` is this same class and `.jaxpr` returns the object itself.
  """
  __slots__ = ("constvars", "invars", "outvars", "eqns", "consts", "debug_info", "__weakref__")

  def __init__(self, constvars, invars, outvars, eqns, consts=(), debug_info=None):
    self.constvars, self.invars = list(constvars), list(invars)
    self.outvars, self.eqns = list(outvars), list(eqns)
    self.consts = list(consts)
    self.debug_info = debug_info
    if len(self.consts) not in (0, len(self.constvars)):
      raise ValueError("Jaxpr: consts and constvars differ in length")

  @property
  def jaxpr(self) -> "Jaxpr":
    return self

  literals = property(lambda self: self.consts)
  in_avals = property(lambda self: [v.aval for v in self.invars])
  out_avals = property(lambda self: [v.aval for v in self.outvars])

  def replace(self, **kw) -> "Jaxpr":
    d = {k: getattr(self, k) for k in ("constvars", "invars", "outvars", "eqns",
                                       "consts", "debug_info")}
    d.update(kw)
    return Jaxpr(**d)

  def pretty_print(self, width: int = 80) -> str:
    return pp_toplevel_jaxpr(self).format(width)

  def __str__(self):
    return self.pretty_print()

  def __repr__(self):
    return self.pretty_print()

  def _repr_pretty_(self, p, cycle):
    p.text(self.pretty_print())

  def __hash__(self):
    return id(self)

  def __eq__(self, other):
    return self is other


ClosedJaxpr = Jaxpr


def jaxprs_in_params(params) -> list[Jaxpr]:
  """The sub-jaxprs held in an equation's params (jit's `jaxpr`, cond's `branches`, ...)."""
  out = []
  for v in params.values():
    vals = v if isinstance(v, (tuple, list)) else (v,)
    out.extend(j for j in vals if isinstance(j, Jaxpr))
  return out


def subjaxprs(jaxpr: Jaxpr):
  """All sub-jaxprs at any depth (not counting `jaxpr` itself)."""
  for eqn in jaxpr.eqns:
    for sub in jaxprs_in_params(eqn.params):
      yield sub
      yield from subjaxprs(sub)


# --- printing, in JAX's exact format ------------------------------------------------


def _encode_alpha(n: int) -> str:
  s = ""
  while not s or n:
    n, i = divmod(n, 26)
    s = chr(97 + i) + s
  return s


class _PpContext:
  def __init__(self):
    self.names: dict[int, str] = {}
    self.shared: dict[int, str] = {}  # id(jaxpr) -> name, for jaxprs printed once up front
    self._counter = itertools.count()
    self._keep: list = []  # keep vars alive so ids stay unique while printing

  def name(self, v: Var) -> str:
    if isinstance(v, DropVar):
      return "_"
    n = self.names.get(id(v))
    if n is None:
      taken = set(self.shared.values())
      n = _encode_alpha(next(self._counter))
      while n in taken:
        n = _encode_alpha(next(self._counter))
      self.names[id(v)] = n
      self._keep.append(v)
    return n

  def suggest_same_names(self, for_vars, like_vars):
    """Name the vars of a sub-jaxpr after the outer vars bound to them (JAX's jit rule)."""
    if len(for_vars) != len(like_vars):
      return
    used = set()
    for f, l in zip(for_vars, like_vars):
      if (isinstance(l, Var) and isinstance(f, Var) and id(l) not in used
          and id(f) not in self.names):
        used.add(id(l))
        self.names[id(f)] = self.name(l)
        self._keep.append(f)


def _pp_atom(a, ctx: _PpContext) -> str:
  return a.pp() if isinstance(a, Literal) else ctx.name(a)


def _pp_vars(vs, ctx, *, separator="", print_shapes=False) -> pp.Doc:
  docs = [pp.text(_pp_atom(v, ctx) + (":" + v.aval.str_short(True) if print_shapes else ""))
          for v in vs]
  return pp.nest(2, pp.group(pp.join(pp.text(separator) + pp.group(pp.brk()), docs)))


def _pp_param_value(v, ctx) -> pp.Doc:
  if isinstance(v, tuple) and v and all(isinstance(j, Jaxpr) for j in v):
    return pp.group(pp.concat([
        pp.nest(2, pp.concat([pp.text("("), pp.brk(""),
                              pp.join(pp.brk(), [pp_jaxpr(j, ctx) for j in v])])),
        pp.brk(""), pp.text(")")]))
  if isinstance(v, Jaxpr):
    return pp_jaxpr(v, ctx)
  if isinstance(v, np.dtype):
    return pp.text(v.name)
  text = _numpy2_repr(v) if _NUMPY1 and isinstance(v, (tuple, list)) else str(v)
  # addresses vary from run to run: JAX prints `<function f at 0xXXXXXXXXXXXX>`
  return pp.text(re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                        text))


_NUMPY1 = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def _numpy2_repr(v) -> str:
  """repr(v) as NumPy 2 writes the NumPy scalars in it (`(0, np.int64(2))`, as JAX's
  jaxprs show them); NumPy 1 writes a scalar as its bare value."""
  # a namedtuple that keeps the repr collections.namedtuple wrote for it
  if isinstance(v, tuple) and getattr(type(v).__repr__, "__module__", None) == "collections":
    return type(v).__name__ + "(" + ", ".join(
        f"{k}={_numpy2_repr(x)}" for k, x in zip(v._fields, v)) + ")"
  if type(v) in (tuple, list):
    items = [_numpy2_repr(x) for x in v]
    if type(v) is list:
      return "[" + ", ".join(items) + "]"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
  if isinstance(v, np.bool_):
    return f"np.{bool(v)}_"
  if isinstance(v, np.number) and type(v).__module__ == "numpy":
    value = repr(v)
    if isinstance(v, np.complexfloating):
      value = value[1:-1] if value.startswith("(") else value  # np.complex64(1+2j)
    return f"np.{type(v).__name__}({value})"
  return repr(v)


def _pp_params(params: Sequence[tuple[str, Any]], ctx) -> pp.Doc:
  if not params:
    return pp.nil()
  kvs = [pp.text(f"{k}=") + _pp_param_value(v, ctx) for k, v in params]
  return pp.group(pp.concat([
      pp.nest(2, pp.concat([pp.text("["), pp.brk(""), pp.join(pp.brk(), kvs)])),
      pp.brk(""), pp.text("]")]))


def _pp_eqn(eqn: JaxprEqn, ctx: _PpContext, params: dict | None = None,
            order: Sequence[str] | None = None) -> pp.Doc:
  params = eqn.params if params is None else params
  order = sorted(params) if order is None else order
  lhs = _pp_vars(eqn.outvars, ctx, print_shapes=True)
  rhs = [pp.text(eqn.primitive.name), _pp_params([(k, params[k]) for k in order], ctx),
         pp.text(" ") + _pp_vars(eqn.invars, ctx)]
  if eqn.outvars:
    return pp.concat([lhs, pp.text(" = "), *rhs])
  return pp.concat(rhs)


def pp_eqn(eqn: JaxprEqn, ctx: _PpContext) -> pp.Doc:
  rule = eqn.primitive.pp_rule
  return rule(eqn, ctx) if rule else _pp_eqn(eqn, ctx)


def pp_toplevel_jaxpr(top: Jaxpr) -> pp.Doc:
  """Print `top`; sub-jaxprs used more than once (or long ones) are printed first as
  `let name = { ... } in` and referred to by name, as JAX does."""
  ctx = _PpContext()
  _name_dropped_vars(top, ctx)
  counts: collections.Counter = collections.Counter()
  names: dict[int, str] = {}
  objs: dict[int, Jaxpr] = {}
  queue = collections.deque([top])
  while queue:
    j = queue.popleft()
    counts[id(j)] += 1 + (j is not top and len(j.eqns) > 10)
    objs[id(j)] = j
    for eqn in j.eqns:
      name = eqn.params.get("name") if eqn.primitive.name == "jit" else None  # custom_jvp_call
      # also has a `name`, but JAX names its shared jaxprs `jaxpr`
      subs = jaxprs_in_params(eqn.params)
      queue.extend(subs)
      if isinstance(name, str):
        for sub in subs:
          names.setdefault(id(sub), name.strip("<>"))
  used: collections.Counter = collections.Counter()
  for jid, c in counts.items():
    if c == 1:
      continue
    name = names.get(jid, "jaxpr")
    if used[name]:
      used[name] += 1
      name += str(used[name] - 1)
    used[name] += 1
    ctx.shared[jid] = name
  # Name every shared jaxpr before printing any: a shared one may refer to a later one.
  docs = [pp.concat([pp.text(f"let {name} = "), _pp_jaxpr_body(objs[jid], ctx),
                     pp.text(" in"), pp.brk()]) for jid, name in ctx.shared.items()]
  docs.append(pp_jaxpr(top, ctx))
  return pp.concat(docs)


def _name_dropped_vars(top: Jaxpr, ctx: _PpContext) -> None:
  """Outputs of the top-level jaxpr's equations that nothing reads print as `_` (JAX's
  `_dropvars`; sub-jaxprs keep their names)."""
  used = {id(a) for a in top.outvars}
  for e in reversed(top.eqns):
    for v in e.outvars:
      if id(v) not in used:
        ctx.names[id(v)] = "_"
        ctx._keep.append(v)
    used.update(id(a) for a in e.invars)


def pp_jaxpr(jaxpr: Jaxpr, ctx: _PpContext) -> pp.Doc:
  name = ctx.shared.get(id(jaxpr))
  return pp.text(name) if name is not None else _pp_jaxpr_body(jaxpr, ctx)


def _pp_jaxpr_body(jaxpr: Jaxpr, ctx: _PpContext) -> pp.Doc:
  constvars = _pp_vars(jaxpr.constvars, ctx, print_shapes=True)
  invars = _pp_vars(jaxpr.invars, ctx, print_shapes=True)
  eqns = pp.join(pp.brk("; "), [pp_eqn(e, ctx) for e in jaxpr.eqns])
  outvars = pp.concat([pp.text("("), _pp_vars(jaxpr.outvars, ctx, separator=","),
                       pp.text(")" if len(jaxpr.outvars) != 1 else ",)")])
  return pp.group(pp.nest(2, pp.concat([
      pp.text("{ "), pp.text("lambda "), constvars, pp.text("; "), invars,
      pp.text(". "), pp.text("let"), pp.nest(2, pp.brk() + eqns), pp.brk(),
      pp.text("in "), outvars])) + pp.text(" }"))


# ------------------------------------------------------------------------------------
# Primitives
# ------------------------------------------------------------------------------------


class Primitive:
  """A named operation. Its rules live as attributes, set once beside its declaration:

  - `abstract_eval(*avals, **params) -> aval | list[aval]`: shape/dtype rule (required)
  - `impl(*np_arrays, **params) -> ndarray | list`: NumPy reference implementation
  - `eval_rule(*values, **params)`: for higher-order primitives, runs them eagerly on values
  - `jvp`, `transpose`, `batch`, `lower`: added by the transformation/compiler issues
  - `pp_rule(eqn, ctx) -> Doc`: custom jaxpr printing (hides default params as JAX does)
  - `fold_literals`: when True, applying it to literals while staging folds to a literal
  - `effects_rule(*avals, **params) -> frozenset`: effects (host callbacks, checks): an
    equation with effects is not dead code (see `effects`)

  Primitives defined outside ember use JAX's API on the same attributes: `def_impl`,
  `def_abstract_eval`, `def_effectful_abstract_eval`, and the registries of
  ember.interpreters (`ad.primitive_jvps[p] = rule` sets `p.jvp`, ...).
  """

  def __init__(self, name: str, multiple_results: bool = False):
    self.name = name
    self.multiple_results = multiple_results
    self.abstract_eval: Callable | None = None
    self.impl: Callable | None = None
    self.eval_rule: Callable | None = None
    self.jvp = self.transpose = self.batch = self.lower = None
    self.pp_rule: Callable | None = None
    self.fold_literals = False
    # `named_trace(trace, params) -> trace`: collectives run in the trace of the vmap that
    # binds their axis name, even when no argument comes from it (transforms/batching.py)
    self.named_trace: Callable | None = None
    # `effects_rule(*avals, **params) -> frozenset`: the effects of an application (callbacks)
    self.effects_rule: Callable | None = None
    self.impl_on_arrays = False   # set by def_impl: `impl` takes Arrays, not NumPy arrays
    self.foreign_lowering = None  # a lowering rule written for JAX (mlir.register_lowering)
    _all_primitives.add(self)

  def bind(self, *args, **params):
    return bind(self, *args, **params)

  def __repr__(self):
    return self.name

  def out_avals(self, avals, params) -> list[ShapedArray]:
    out = self.abstract_eval(*avals, **params)
    return list(out) if self.multiple_results else [out]

  # --- the public API for primitives defined outside ember (jax.extend.core.Primitive) ---

  def def_impl(self, impl: Callable) -> Callable:
    """Eager evaluation: `impl(*arrays, **params)` gets ember Arrays (not NumPy arrays, as
    JAX's impls get jax Arrays). Inside compiled code a primitive without a lowering runs
    `impl` as a host callback (primitives/callbacks.py)."""
    self.impl = impl
    self.eval_rule = functools.partial(_run_user_impl, self)
    self.impl_on_arrays = True
    return impl

  def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
    """`abstract_eval(*avals, **params)` -> an aval (a list of them with multiple_results);
    anything with `.shape` and `.dtype` (ShapeDtypeStruct) is accepted as an aval."""
    self.abstract_eval = functools.partial(_user_abstract_eval, self, abstract_eval)
    return abstract_eval

  def def_effectful_abstract_eval(self, effectful_abstract_eval: Callable) -> Callable:
    """`fn(*avals, **params)` -> (out avals, effects): an equation with effects is never
    dropped as dead code, and keeps its place among the other effectful ones."""
    self.abstract_eval = functools.partial(
        _user_abstract_eval, self, lambda *a, **p: effectful_abstract_eval(*a, **p)[0])
    self.effects_rule = lambda *a, **p: frozenset(effectful_abstract_eval(*a, **p)[1])
    return effectful_abstract_eval

  def effects(self, avals, params) -> frozenset:
    """The effects of one application: its own rule's, else those of its sub-jaxprs."""
    if self.effects_rule is not None:
      return self.effects_rule(*avals, **params)
    return frozenset().union(*map(jaxpr_effects, jaxprs_in_params(params)))


_all_primitives: "weakref.WeakSet[Primitive]" = weakref.WeakSet()


class RuleRegistry(collections.abc.MutableMapping):
  """A dict view onto one rule attribute of every primitive: JAX's registries
  (`ad.primitive_jvps[p] = rule`, `batching.primitive_batchers`, ...) set the rule ember's
  transformations read. `wrap(prim, rule)` adapts a rule of JAX's signature to ember's as
  it is set; `unwrap(prim, rule)` the other way as it is read."""

  def __init__(self, attr: str, wrap=lambda p, r: r, unwrap=lambda p, r: r):
    self.attr, self.wrap, self.unwrap = attr, wrap, unwrap

  def __getitem__(self, prim):
    rule = getattr(prim, self.attr, None) if isinstance(prim, Primitive) else None
    if rule is None:
      raise KeyError(prim)
    return self.unwrap(prim, rule)

  def __setitem__(self, prim, rule):
    if not isinstance(prim, Primitive):
      raise TypeError(f"rule registries are keyed by Primitive, got {type(prim).__name__}")
    setattr(prim, self.attr, self.wrap(prim, rule))

  def __delitem__(self, prim):
    self[prim]   # KeyError when unset
    setattr(prim, self.attr, None)

  def __iter__(self):
    return iter([p for p in list(_all_primitives) if getattr(p, self.attr) is not None])

  def __len__(self):
    return len(list(iter(self)))

  def __repr__(self):
    return f"<rule registry of Primitive.{self.attr}>"


def _as_aval(a) -> ShapedArray:
  if isinstance(a, ShapedArray):
    return a
  try:
    return ShapedArray(a.shape, a.dtype, getattr(a, "weak_type", False))
  except AttributeError:
    raise TypeError(f"an abstract_eval rule must return avals (ShapedArray, or objects with "
                    f".shape and .dtype), got {a!r}") from None


def _user_abstract_eval(prim, rule, *avals, **params):
  out = rule(*avals, **params)
  return [_as_aval(a) for a in out] if prim.multiple_results else _as_aval(out)


def _run_user_impl(prim, *vals, **params):
  """A user primitive's impl on concrete values as Arrays (Python scalars included)."""
  vals = [v if isinstance(v, Tracer) or is_concrete_array(v)
          else new_array(to_numpy(v), weak_type=get_aval(v).weak_type) for v in vals]
  out = prim.impl(*vals, **params)
  return list(out) if prim.multiple_results else out


class Effect:
  """The base class of effects (jax.core.Effect): an equation whose primitive reports any is
  kept by dead-code elimination and ordered among the other effectful equations."""


no_effects: frozenset = frozenset()
_effects_cache: "weakref.WeakKeyDictionary[Jaxpr, frozenset]" = weakref.WeakKeyDictionary()


def eqn_effects(eqn: JaxprEqn) -> frozenset:
  return eqn.primitive.effects([v.aval for v in eqn.invars], eqn.params)


def jaxpr_effects(jaxpr: Jaxpr) -> frozenset:
  """The effects of a jaxpr's equations, at any depth."""
  out = _effects_cache.get(jaxpr)
  if out is None:
    out = _effects_cache[jaxpr] = frozenset().union(*map(eqn_effects, jaxpr.eqns))
  return out


def declare(name: str, abstract_eval: Callable, impl: Callable | None = None, *,
            multiple_results: bool = False) -> Primitive:
  """Create a primitive with its shape/dtype rule and its NumPy reference impl."""
  p = Primitive(name, multiple_results)
  p.abstract_eval = abstract_eval
  p.impl = impl
  return p


# ------------------------------------------------------------------------------------
# Traces and tracers
# ------------------------------------------------------------------------------------


class MainTrace(NamedTuple):
  level: int
  trace_type: type
  global_data: Any


class Trace:
  """The interface of an interpreter (eval, jaxpr building, jvp, batching): each subclass
  defines `pure`/`lift` and `process_primitive`."""
  def __init__(self, main: MainTrace):
    self.main = main

  def pure(self, val):
    raise NotImplementedError(f"{type(self).__name__} must define pure (an abstract method)")

  lift = pure

  def process_primitive(self, primitive, tracers, params):
    raise NotImplementedError(f"{type(self).__name__} must define process_primitive "
                              "(an abstract method)")


class Tracer:
  """A value flowing through a trace. Array methods and operators are attached to this
  class and to `Array` by `ember._src.library.numpy.array_methods`."""
  __array_priority__ = 1000
  __slots__ = ("_trace", "__weakref__")

  @property
  def aval(self) -> ShapedArray:
    raise NotImplementedError(f"{type(self).__name__} must define aval (an abstract property)")

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)
  nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

  def full_lower(self):
    return self

  def to_concrete_value(self):
    """The concrete value this tracer stands for, or None while it is abstract."""
    return None

  def _origin_msg(self) -> str:
    return ""

  def _concrete(self, err_cls, what: str):
    v = self.to_concrete_value()
    if v is None:
      raise err_cls(_concretization_message(self, err_cls, what))
    return v

  def __bool__(self):
    return bool(self._concrete(errors.TracerBoolConversionError, "bool"))

  def __int__(self):
    return int(self._concrete(errors.TracerIntegerConversionError, "int"))

  def __index__(self):
    return self._concrete(errors.TracerIntegerConversionError, "__index__").__index__()

  def __float__(self):
    return float(self._concrete(errors.ConcretizationTypeError, "float"))

  def __complex__(self):
    return complex(self._concrete(errors.ConcretizationTypeError, "complex"))

  def item(self, *args):
    return self._concrete(errors.ConcretizationTypeError, "item").item(*args)

  def tolist(self):
    return self._concrete(errors.ConcretizationTypeError, "tolist").tolist()

  def __array__(self, dtype=None, copy=None):
    v = self.to_concrete_value()
    if v is None:
      raise errors.TracerArrayConversionError(_concretization_message(
          self, errors.TracerArrayConversionError, "__array__"))
    return np.asarray(v, dtype=dtype)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self).__name__}. Traced arrays cannot be "
                    "used as dict keys or static arguments.")

  jax_name = "Tracer"   # the class name JAX 0.12 prints for this kind of tracer

  def __repr__(self):
    return f"{self.jax_name}({self.aval})"


basearray.Array.register(Tracer)   # isinstance(tracer, jax.Array) is True, as in JAX


def concrete_or_error(force, val, context: str = ""):
  """`force(val)` on val's concrete value (JAX's helper): a tracer that is abstract raises
  ConcretizationTypeError naming `context` (the argument that must be static) and the fix."""
  if isinstance(val, Tracer):
    v = val.to_concrete_value()
    if v is None:
      raise errors.ConcretizationTypeError(
          f"Abstract tracer value encountered where concrete value is expected: "
          f"{val.aval.str_short(short_dtypes=False)}\n{context}\nPass it as a static "
          "argument (static_argnums / static_argnames) or a Python value.")
    val = v
  return val if force is None else force(val)


def _concretization_message(tracer: Tracer, err_cls, what: str) -> str:
  shape = tracer.aval.str_short(short_dtypes=False)
  head = {
      errors.TracerBoolConversionError:
          f"Attempted boolean conversion of traced array with shape {shape}.",
      errors.TracerIntegerConversionError:
          f"The {what}() method was called on traced array with shape {shape}.",
      errors.TracerArrayConversionError:
          f"The numpy.ndarray conversion method __array__() was called on traced array "
          f"with shape {shape}.",
  }.get(err_cls, f"Abstract tracer value encountered where concrete value is expected: "
                 f"traced array with shape {shape}. The problem arose with the `{what}` "
                 "function.")
  fix = {
      errors.TracerBoolConversionError:
          "Python control flow (`if`, `while`, `and`/`or`, `bool()`) cannot depend on a traced "
          "value. Use lax.cond / jnp.where for value-dependent branches, or mark the "
          "argument static with static_argnums / static_argnames.",
      errors.TracerIntegerConversionError:
          "A traced value cannot be used as a Python int (a shape, a Python index, range()). "
          "Mark the argument static with static_argnums / static_argnames, or use "
          "lax.dynamic_slice / lax.fori_loop for value-dependent indexing and loops.",
      errors.TracerArrayConversionError:
          "Use ember.numpy instead of numpy inside transformed functions; NumPy functions "
          "need concrete values.",
  }.get(err_cls, "Mark the argument static with static_argnums / static_argnames, or "
                 "restructure the code so that the value is not needed in Python.")
  origin = tracer._origin_msg()
  return "\n".join(p for p in (head, origin, fix) if p)


# The driver's runner of eager primitives on accelerator arrays (pjrt_dispatch fills it when
# the first PJRT array is made): `(primitive, values, params) -> outputs`, None for an
# application that runs here.
eager_on_device: list = [None]


class EvalTrace(Trace):
  """Level 0: run each primitive eagerly through its NumPy implementation."""

  def pure(self, val):
    return val

  lift = pure

  def process_primitive(self, primitive, vals, params):
    on_device = eager_on_device[0]
    if on_device is not None:
      outs = on_device(primitive, vals, params)
      if outs is not None:
        return outs
    if primitive.eval_rule is not None:
      out = primitive.eval_rule(*vals, **params)
      outs = out if primitive.multiple_results else [out]
      if any(not isinstance(o, Tracer) and getattr(o, "_value", None) is None for o in outs):
        # Literal or passed-through outputs of a sub-jaxpr come back as raw Python/NumPy
        # values (`jit(lambda x: (x, 2.0))(1)`): return them as Arrays of their out avals.
        out_avals = primitive.out_avals([get_aval(v) for v in vals], params)
        outs = [o if isinstance(o, Tracer) or getattr(o, "_value", None) is not None
                else _wrap_result(np.asarray(o, a.dtype), a) for o, a in zip(outs, out_avals)]
      return outs
    in_avals = [get_aval(v) for v in vals]
    out_avals = primitive.out_avals(in_avals, params)
    np_args = [to_numpy(v, a) for v, a in zip(vals, in_avals)]
    out = primitive.impl(*np_args, **params)
    outs = out if primitive.multiple_results else [out]
    return [_wrap_result(o, a) for o, a in zip(outs, out_avals)]


def to_numpy(v, aval: ShapedArray | None = None) -> np.ndarray:
  """A concrete value as a NumPy array in its (canonical) dtype."""
  val = getattr(v, "_value", None)
  if val is not None:
    return val
  aval = aval or get_aval(v)
  return np.asarray(v, dtype=aval.dtype)


def _wrap_result(x, aval: ShapedArray):
  x = np.asarray(x)
  if x.dtype != aval.dtype:
    x = x.astype(aval.dtype)
  if x.shape != aval.shape:
    raise AssertionError(f"impl produced shape {x.shape}, abstract_eval said {aval.shape}")
  return new_array(x, weak_type=aval.weak_type)


# The concrete array type (runtime/array.Array) sits a layer above core and registers
# itself here when its module is imported: eager evaluation returns arrays of it, and
# staging writes its 0-d ones inline as literals.
_array_type: type | None = None


def register_array_type(cls: type) -> None:
  global _array_type
  _array_type = cls


def new_array(value: np.ndarray, weak_type: bool = False):
  """A concrete array (of the registered type) holding the NumPy array `value`."""
  return _array_type(value, weak_type=weak_type)


def is_concrete_array(x) -> bool:
  return _array_type is not None and isinstance(x, _array_type)


class _TraceState(threading.local):
  """The interpreter stack and the staging trace of the calling thread. Each thread traces
  on its own (two threads may jit at once); a new thread starts at the eval trace.
  `named_scope`'s stack and the equation eval_jaxpr is re-binding live here too."""

  def __init__(self):
    self.trace_stack: list[MainTrace] = [MainTrace(0, EvalTrace, None)]
    self.dynamic_trace: MainTrace | None = None
    self.name_stack: list[str] = []
    self.replayed = None   # the source of the equation eval_jaxpr is re-binding, if any


_state = _TraceState()

# the old module attributes, read as this thread's state (`core.trace_stack`, ...)
_STATE_ATTRS = {"trace_stack": "trace_stack", "dynamic_trace": "dynamic_trace",
                "_name_stack": "name_stack"}


def __getattr__(name):
  if name in _STATE_ATTRS:
    return getattr(_state, _STATE_ATTRS[name])
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# How many new_main / new_dynamic blocks are open in all threads: while none is, every
# thread is at the eval trace, which cur_level_is_eval (on every jitted call) then knows
# without reading the thread-local state (~0.3 us on a slow box).
_open_traces = 0
_open_lock = threading.Lock()


def _count_open(delta: int) -> None:
  global _open_traces
  with _open_lock:
    _open_traces += delta


@contextlib.contextmanager
def new_main(trace_type: type, global_data=None):
  stack = _state.trace_stack
  level = len(stack)
  main = MainTrace(level, trace_type, global_data)
  _count_open(1)
  stack.append(main)
  try:
    yield main
  finally:
    stack.pop()
    _count_open(-1)


@contextlib.contextmanager
def new_dynamic(main: MainTrace):
  """Make `main` the staging trace that captures even constant-only computations."""
  state = _state
  _count_open(1)
  prev, state.dynamic_trace = state.dynamic_trace, main
  try:
    yield
  finally:
    state.dynamic_trace = prev
    _count_open(-1)


def _check_alive(val: "Tracer") -> None:
  main, stack = val._trace.main, _state.trace_stack
  if main.level >= len(stack) or stack[main.level] is not main:
    raise errors.UnexpectedTracerError(
        f"Encountered an unexpected tracer ({val!r}): a value computed inside a "
        "transformed function (jit, grad, vmap, ...) was kept after that function "
        "returned (a leaked tracer), e.g. stored in a global, a list or an object "
        "attribute. Return it as an output of the function instead.")


def find_top_trace(xs) -> Trace:
  tracers = [x for x in xs if isinstance(x, Tracer)]
  for t in tracers:
    _check_alive(t)
  state = _state
  top = max((x._trace.main for x in tracers), default=state.trace_stack[0],
            key=lambda m: m.level)
  dynamic = state.dynamic_trace
  if dynamic is not None and dynamic.level > top.level:
    top = dynamic
  return top.trace_type(top)


class OpaqueTraceState:
  """The trace in context, comparable only for identity (what
  jax.extend.core.get_opaque_trace_state gives): libraries check with it that code runs
  under the same transformation as when they set something up (flax's scopes)."""
  __slots__ = ("_main",)
  __hash__ = None  # as JAX's: equality only

  def __init__(self, main: MainTrace):
    self._main = main

  def __eq__(self, other):
    return isinstance(other, OpaqueTraceState) and other._main is self._main


def get_opaque_trace_state(convention=None) -> OpaqueTraceState:
  """The innermost trace in context (the eval trace outside every transformation)."""
  del convention  # JAX's argument naming the caller's convention ("flax"); one state here
  return OpaqueTraceState(_state.trace_stack[-1])


def full_raise(trace: Trace, val):
  if not isinstance(val, Tracer):
    return trace.pure(val)
  vmain = val._trace.main
  if vmain is trace.main:
    return val
  if vmain.level < trace.main.level:
    return trace.lift(val)
  raise errors.UnexpectedTracerError(
      f"Different traces at the same level: {val!r} cannot be used in {trace!r}.")


def full_lower(val):
  return val.full_lower() if isinstance(val, Tracer) else val


def bind(prim: Primitive, *args, **params):
  trace = find_top_trace(args)
  if prim.named_trace is not None:
    trace = prim.named_trace(trace, params)
  tracers = [full_raise(trace, a) for a in args]
  outs = trace.process_primitive(prim, tracers, params)
  if prim.multiple_results:
    return [full_lower(o) for o in outs]
  return full_lower(outs[0])


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Inside this block, operations whose inputs are all concrete run at once, even while
  jit traces: they give concrete arrays rather than staging into the jaxpr. Operations on
  tracers still stage."""
  with new_dynamic(None):
    yield


# jax.core.eval_context: the same thing under JAX's older name
eval_context = ensure_compile_time_eval


def cur_level_is_eval() -> bool:
  if not _open_traces:   # no trace open in any thread
    return True
  state = _state
  return len(state.trace_stack) == 1 and state.dynamic_trace is None


# ------------------------------------------------------------------------------------
# Staging: the jaxpr-building trace
# ------------------------------------------------------------------------------------

@contextlib.contextmanager
def named_scope(name: str):
  """Prefix the names of the operations traced inside the block (`jax.named_scope`)."""
  if not isinstance(name, str):
    raise TypeError(f"named_scope name must be a str, got {type(name).__name__}")
  stack = _state.name_stack
  stack.append(name)
  try:
    yield
  finally:
    stack.pop()


def named_call(fun, *, name: str | None = None):
  """`fun`, tracing its operations inside `named_scope(name)` (`jax.named_call`; the name
  defaults to `fun.__name__`): they show as `name/...` in lowered text's locations."""
  name = fun.__name__ if name is None else name

  @functools.wraps(fun)
  def named(*args, **kwargs):
    with named_scope(name):
      return fun(*args, **kwargs)
  return named


def current_source_info() -> SourceInfo:
  """The innermost user frame (outside the ember package) and the named_scope stack; while
  eval_jaxpr re-binds an equation (a transformation re-tracing a jaxpr), that equation's
  own source, so transformed jaxprs keep the user's lines as JAX's do."""
  replayed, name_stack = _state.replayed, _state.name_stack
  if replayed is not None:
    return replayed._replace(name_stack=tuple(name_stack) + replayed.name_stack)
  f, excluded = sys._getframe(1), traceback_util.source_info_exclusions
  while f is not None and f.f_code.co_filename.startswith(excluded):
    f = f.f_back
  if f is None:
    return SourceInfo(None, None, None, tuple(name_stack))
  return SourceInfo(f.f_code.co_filename, f.f_lineno, f.f_code.co_name, tuple(name_stack))


class DebugInfo(NamedTuple):
  """Where a traced function came from, and the names of its flattened arguments."""
  traced_for: str            # "jit", "make_jaxpr", ...
  func_name: str
  func_src: str | None       # "file:line"
  arg_names: tuple | None    # one per flat input


def debug_info(traced_for: str, fun: Callable, args, kwargs, static_argnums=(),
               static_argnames=()) -> DebugInfo:
  name = getattr(fun, "__name__", None) or type(fun).__name__
  src = None
  code = getattr(fun, "__code__", None)
  if code is not None:
    src = f"{code.co_filename}:{code.co_firstlineno}"
  try:
    sig = inspect.signature(fun)
    ba = sig.bind(*args, **kwargs)
    names = []
    for i, (pname, val) in enumerate(ba.arguments.items()):
      param = sig.parameters[pname]
      if pname in static_argnames or (param.kind in (param.POSITIONAL_ONLY,
                                      param.POSITIONAL_OR_KEYWORD) and i in static_argnums):
        continue
      if param.kind == param.VAR_POSITIONAL:
        val = {f"{pname}[{j}]": v for j, v in enumerate(val)}
        for k, v in val.items():
          names += [k + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(v)[0]]
        continue
      names += [pname + tree_util.keystr(p) for p, _ in tree_util.tree_flatten_with_path(val)[0]]
    arg_names = tuple(names)
  except (TypeError, ValueError):
    arg_names = None
  return DebugInfo(traced_for, name, src, arg_names)


class JaxprBuilder:
  """Records the equations of one staged function."""

  def __init__(self, dbg: DebugInfo | None = None):
    self.eqns: list[JaxprEqn] = []
    self.tracer_to_var: dict[int, Atom] = {}
    self.const_tracers: dict[int, "JaxprTracer"] = {}   # id(const value) -> tracer
    self.constvals: dict[int, Any] = {}                 # id(var) -> const value
    self.invars: list[Var] = []
    self.keep: list = []                                # keep consts alive (ids stay valid)
    self.dbg = dbg

  def new_var(self, tracer) -> Var:
    v = self.tracer_to_var[id(tracer)] = Var(tracer.aval)
    return v

  def getvar(self, tracer) -> Atom:
    return self.tracer_to_var[id(tracer)]

  def add_eqn(self, eqn: JaxprEqn):
    self.eqns.append(eqn)

  def build(self, in_tracers, out_tracers) -> Jaxpr:
    invars = [self.getvar(t) for t in in_tracers]
    outvars = [self.getvar(t) for t in out_tracers]
    used = {id(a) for e in self.eqns for a in e.invars} | {id(a) for a in outvars}
    constvars = [v for v in self.tracer_to_var.values()
                 if id(v) in self.constvals and id(v) in used]
    consts = [self.constvals[id(v)] for v in constvars]
    return Jaxpr(constvars, invars, outvars, self.eqns, consts, self.dbg)

  def origin_of(self, tracer) -> str:
    """Which function arguments a traced value depends on, for error messages."""
    dbg = self.dbg
    if dbg is None:
      return ""
    var = self.tracer_to_var.get(id(tracer))
    where = (f"The error occurred while tracing the function {dbg.func_name}"
             + (f" at {dbg.func_src}" if dbg.func_src else "") + f" for {dbg.traced_for}.")
    if var is None or dbg.arg_names is None:
      return where
    deps = {id(var)}
    for eqn in reversed(self.eqns):
      if any(id(o) in deps for o in eqn.outvars):
        deps |= {id(a) for a in eqn.invars if isinstance(a, Var)}
    names = [n for v, n in zip(self.invars, dbg.arg_names) if id(v) in deps]
    if not names:
      return where
    if len(names) == 1:
      dep = f"the value of the argument {names[0]}"
    else:
      dep = "the values of the arguments " + ", ".join(names)
    return where + f" This concrete value was not available in Python because it depends on {dep}."


class JaxprTracer(Tracer):
  __slots__ = ("_aval", "_literal")
  jax_name = "JitTracer"   # JAX's name for the tracers of jit, make_jaxpr and eval_shape

  def __init__(self, trace, aval, literal=None):
    self._trace, self._aval, self._literal = trace, aval, literal

  @property
  def aval(self):
    return self._aval

  def _origin_msg(self):
    return self._trace.main.global_data.origin_of(self)


def _is_literalable(val) -> bool:
  """Scalars are written inline in jaxprs; larger constants become constvars."""
  if type(val) in (bool, int, float, complex):
    return True
  if isinstance(val, (np.generic, np.ndarray)):
    return val.ndim == 0 and val.dtype in dtypes.jax_dtypes
  return is_concrete_array(val) and val.ndim == 0


class JaxprTrace(Trace):
  """Stages primitives into the equations of a jaxpr (make_jaxpr, jit)."""

  @property
  def builder(self) -> JaxprBuilder:
    return self.main.global_data

  def new_arg(self, aval: ShapedArray) -> JaxprTracer:
    t = JaxprTracer(self, aval)
    self.builder.invars.append(self.builder.new_var(t))
    self.builder.keep.append(t)
    return t

  def pure(self, val):
    b = self.builder
    t = b.const_tracers.get(id(val))
    if t is not None:
      return t
    aval = get_aval(val)
    if _is_literalable(val):
      # A Python scalar keeps its value, as in JAX: a weak `0.1:f32[]` prints as 0.1.
      lit = Literal(val if type(val) in (bool, int, float, complex) else to_numpy(val, aval)[()],
                    aval)
      t = JaxprTracer(self, aval, literal=lit)
      b.tracer_to_var[id(t)] = lit
    else:
      t = JaxprTracer(self, aval)
      var = b.new_var(t)
      b.constvals[id(var)] = val
    b.const_tracers[id(val)] = t
    b.keep += [t, val]
    return t

  lift = pure

  def process_primitive(self, primitive, tracers, params):
    b = self.builder
    in_avals = [t.aval for t in tracers]
    out_avals = primitive.out_avals(in_avals, params)
    if primitive.fold_literals and all(t._literal is not None for t in tracers):
      vals = [np.asarray(t._literal.val, t.aval.dtype) for t in tracers]
      outs = primitive.impl(*vals, **params)
      outs = outs if primitive.multiple_results else [outs]
      return [self.pure_literal(np.asarray(o, a.dtype)[()], a) for o, a in zip(outs, out_avals)]
    out_tracers = [JaxprTracer(self, a) for a in out_avals]
    invars = [b.getvar(t) for t in tracers]
    outvars = [b.new_var(t) for t in out_tracers]
    b.keep.extend(out_tracers)
    b.add_eqn(JaxprEqn(invars, outvars, primitive, params, current_source_info()))
    return out_tracers

  def pure_literal(self, val, aval) -> JaxprTracer:
    lit = Literal(val, aval)
    t = JaxprTracer(self, aval, literal=lit)
    self.builder.tracer_to_var[id(t)] = lit
    self.builder.keep.append(t)
    return t


def trace_to_jaxpr(flat_fun: Callable, in_avals: Sequence[ShapedArray],
                   dbg: DebugInfo | None = None) -> tuple[Jaxpr, Any]:
  """Stage `flat_fun(*tracers) -> (flat outputs, aux)` into a closed jaxpr.

  Constants the function closes over (concrete arrays, or tracers of an outer trace)
  are consts of the returned jaxpr; callers that bind the jaxpr as a primitive hoist
  them into explicit arguments (see `hoist_consts`).
  """
  builder = JaxprBuilder(dbg)
  with new_main(JaxprTrace, builder) as main:
    with new_dynamic(main):
      trace = JaxprTrace(main)
      in_tracers = [trace.new_arg(a) for a in in_avals]
      outs, aux = flat_fun(*in_tracers)
      out_tracers = [full_raise(trace, o) for o in outs]
      jaxpr = builder.build(in_tracers, out_tracers)
  return jaxpr, aux


def hoist_consts(jaxpr: Jaxpr) -> tuple[Jaxpr, list]:
  """Turn constvars into leading invars: returns the const-free jaxpr and the values to
  pass for them. Closed-over values of an outer trace (tracers) must become explicit
  arguments of a staged call; concrete ones are hoisted too, as JAX does for jit."""
  if not jaxpr.constvars:
    return jaxpr, []
  return (jaxpr.replace(constvars=[], consts=[], invars=jaxpr.constvars + jaxpr.invars),
          list(jaxpr.consts))


# ------------------------------------------------------------------------------------
# The reference interpreter
# ------------------------------------------------------------------------------------


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence, *args) -> list:
  """Run a jaxpr equation by equation with `bind` (so it also works under any trace)."""
  env: dict[int, Any] = {}

  def read(a):
    if isinstance(a, Literal):
      return literal_value(a)
    return env[id(a)]

  # as JAX's: the consts and the arguments together bind constvars + invars (a jaxpr whose
  # consts were hoisted into leading invars takes them as `consts`)
  binders, values = jaxpr.constvars + jaxpr.invars, [*consts, *args]
  if len(values) != len(binders):
    raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
  for v, x in zip(binders, values):
    env[id(v)] = x
  state = _state
  saved = state.replayed
  try:
    for eqn in jaxpr.eqns:
      state.replayed = eqn.source_info if eqn.source_info.file else saved
      outs = bind(eqn.primitive, *map(read, eqn.invars), **eqn.params)
      outs = outs if eqn.primitive.multiple_results else [outs]
      for v, o in zip(eqn.outvars, outs):
        if not isinstance(v, DropVar):
          env[id(v)] = o
  finally:
    state.replayed = saved
  return [read(v) for v in jaxpr.outvars]


def literal_value(lit: Literal):
  """The value a literal stands for; a weakly typed one as an array (a bare NumPy scalar
  would lose the weak type)."""
  if lit.aval.weak_type:
    return new_array(np.asarray(lit.val, lit.aval.dtype), weak_type=True)
  return lit.val


def jaxpr_as_fun(jaxpr: Jaxpr) -> Callable:
  """A Python function that interprets the closed jaxpr (jax.extend.core.jaxpr_as_fun)."""
  def fun(*args):
    return eval_jaxpr(jaxpr, jaxpr.consts, *args)
  return fun

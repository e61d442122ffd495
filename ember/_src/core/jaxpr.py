"""Jaxprs: Var, Literal, JaxprEqn, Jaxpr (= ClosedJaxpr) and their printing.

The data structures a trace records and every later stage reads, and their printer, which
writes JAX's exact format (`{ lambda ; a:f32[10]. let b:f32[10] = sin a in (b,) }`): names
given as a jaxpr prints, shared sub-jaxprs printed once up front, dropped outputs as `_`.
Primitives' `pp_rule`s build on `_pp_eqn` and `_PpContext`.
"""
from __future__ import annotations

import collections
import itertools
import re
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src.base import pretty_printer as pp
from ember._src.core.avals import ShapedArray


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

  @property
  def effects(self) -> frozenset:
    """The effects of this application (its primitive's rule; JAX stores them on the eqn)."""
    return self.primitive.effects([v.aval for v in self.invars], self.params)

  def __repr__(self):
    return _pp_eqn(self, _PpContext()).format().rstrip()


class Jaxpr:
  """A closed jaxpr: the program and the values of its constvars.

  As in JAX 0.12, `ClosedJaxpr` is this same class and `.jaxpr` returns the object itself.
  """
  __slots__ = ("constvars", "invars", "outvars", "eqns", "consts", "debug_info", "__weakref__")

  def __init__(self, constvars, invars=None, outvars=None, eqns=None, effects=None,
               debug_info=None, is_high=False, consts=None):
    """JAX 0.12's two forms: `Jaxpr(constvars, invars, outvars, eqns, effects, debug_info,
    consts=...)` and ClosedJaxpr's `ClosedJaxpr(jaxpr, consts)` (the same program with
    these consts). `effects` is accepted and not stored: an equation's effects are its
    primitive's rule (`JaxprEqn.effects`)."""
    if isinstance(constvars, Jaxpr):
      jaxpr = constvars
      consts = invars if invars is not None else consts
      constvars, invars, outvars, eqns = jaxpr.constvars, jaxpr.invars, jaxpr.outvars, jaxpr.eqns
      debug_info = debug_info if debug_info is not None else jaxpr.debug_info
    if invars is None or outvars is None or eqns is None:
      raise TypeError("Jaxpr: pass constvars, invars, outvars and eqns (or ClosedJaxpr's "
                      "(jaxpr, consts))")
    consts = () if consts is None else consts
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
  effects = property(lambda self: frozenset().union(*(e.effects for e in self.eqns)))
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


"""Automatic differentiation: forward mode, linearize, reverse mode, and the user API
(jvp, linearize, vjp, grad, value_and_grad; the Jacobians, built on these with jnp, are
in library/jacobians.py).

JAX's design, in Autodidax's structure:

- Forward mode: a `JVPTrace` carries (primal, tangent) pairs; each primitive's `jvp`
  rule (beside its declaration) maps primals and tangents to outputs. A tangent may be
  a symbolic `Zero` (it costs nothing and is never materialized unless a rule needs it).
- linearize: the tangent inputs are tracers of a `JaxprTrace` placed *below* the JVP
  trace and never made the dynamic trace. Primal operations therefore run where the
  primals live (eagerly, or staged into an enclosing jit), while every tangent operation
  (linear in the tangents, by construction of the jvp rules) is recorded into a linear
  jaxpr whose consts are the residuals (`cos x` for `sin`).
- Reverse mode: `backward_pass` transposes that linear jaxpr equation by equation in
  reverse order with each linear primitive's `transpose` rule, accumulating cotangents
  with `add_any`. So one jvp rule per primitive plus transpose rules for the linear ones
  serve jvp, linearize, vjp and grad.

Call-like primitives (jit, checkpoint) are differentiated as wholes. In forward mode
(`jvp`) a call becomes one call of its jvp jaxpr, as in JAX; under linearize (and inside
the jvp of a sub-jaxpr, which may itself be split later: `is_linearizing`) `call_jvp`
(ad_calls.py) splits the jvp of the sub-jaxpr by partial evaluation into a known call
(primal outputs and residuals) and an unknown call (tangents), and `call_transpose`
transposes the sub-jaxpr into a new call, so a nested jit stays one `jit` equation in the
differentiated jaxpr. Loops and cond follow the same rule (primitives/control/).

`vjp` returns a `VJP` and `linearize` a `tree_util.Partial`: pytrees whose leaves are the
residuals, so they pass through `jit` as arguments and results (JAX 0.12's types).
"""
from __future__ import annotations

import contextlib
import functools
import operator
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import Literal, ShapedArray, api_util, declare, refs
from ember._src.base.dtypes import dtype_kind
from ember._src.transforms import ad_keys, batching
from ember._src.transforms.partial_eval import dce_deep

# ------------------------------------------------------------------------------------
# Tangent types and symbolic zeros
# ------------------------------------------------------------------------------------


def is_differentiable(dt) -> bool:
  """Float and complex values have tangents; integers, bools and keys have float0 ones; a
  user's extended dtype has those its rules name."""
  if isinstance(dt, dtypes.ExtendedDType):
    return dtypes.has_rules(dt) and dt._rules.tangent_dtype(dt) != dtypes.float0
  return dtype_kind(dt) in "fc"


def primal_dtype_to_tangent_dtype(primal_dtype):
  """The dtype of a value's tangents: its own for floats and complexes, its rules' for a
  user's extended dtype, else float0."""
  if dtypes.has_rules(primal_dtype):
    return primal_dtype._rules.tangent_dtype(primal_dtype)
  return primal_dtype if is_differentiable(primal_dtype) else dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
  return aval.to_tangent_aval()


class Zero:
  """A symbolic zero tangent or cotangent of type `aval`."""
  __slots__ = ("aval",)

  def __init__(self, aval: ShapedArray):
    self.aval = aval

  @staticmethod
  def from_value(x) -> "Zero":
    return Zero(tangent_aval(core.get_aval(x)))

  from_primal_value = from_value   # JAX's name

  def __repr__(self):
    return f"Zero({self.aval})"


# aval type -> the function building its zeros (JAX's `ad_util.aval_zeros_likers`). They
# bind primitives, a layer above: primitives/structural.py registers ShapedArray's.
aval_zeros_likers: dict[type, Callable] = {}


def zeros_like_aval(aval: ShapedArray):
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  return aval_zeros_likers[type(aval)](aval)


def instantiate_zeros(t):
  return zeros_like_aval(t.aval) if type(t) is Zero else t


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return add_any_p.bind(x, y)


# `add_any` accumulates tangents and cotangents (JAX's add_jaxvals): operands of one type.
def _add_any_impl(x, y):
  with np.errstate(all="ignore"):  # inf + -inf is NaN silently, as compiled code does
    return np.add(x, y).astype(x.dtype)


add_any_p = declare("add_any", lambda x, y: x, _add_any_impl)


def _add_any_lower(ctx, x, y):
  dt = ctx.avals_in[0].dtype
  if isinstance(dt, np.dtype) or not dtypes.has_rules(dt):
    return ctx.add(x, y)
  # a user's extended dtype accumulates by its rules (a scan's transpose binds add_any)
  jaxpr, _ = core.trace_to_jaxpr(lambda a, b: ([_rules_add(dt, a, b)], None),
                                 ctx.avals_in)
  return ctx.call(jaxpr, "add_any", [x, y])[0]


add_any_p.lower = _add_any_lower
# eagerly too (a scan's transposed body runs step by step): the rules' add
add_any_p.extended_eval = lambda x, y: _rules_add(core.get_aval(x).dtype, x, y)


def _rules_add(dt, x, y):
  if not dtypes.has_rules(dt):
    raise TypeError(f"add_any: values of dtype {dt} have no rules to add them by")
  return dt._rules.add(dt, x, y)


def _add_any_batch(axis_data, vals, dims):
  if dims[0] == dims[1]:
    return add_any_p.bind(*vals), dims[0]
  return add_any_p.bind(*[batching.bdim_at_front(x, d, axis_data.size)
                          for x, d in zip(vals, dims)]), 0


add_any_p.batch = _add_any_batch


# ------------------------------------------------------------------------------------
# Rule factories (used beside each primitive's declaration)
# ------------------------------------------------------------------------------------


def defjvp(prim, *jvp_fns):
  """jvp from one function per operand, `fn(g, *primals, **params)` -> that operand's
  contribution to the output tangent (None: the output does not depend on it smoothly)."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero.from_value(out)
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, fn(t, *primals, **params))
    return out, t_out
  prim.jvp = rule
  return rule


def defjvp2(prim, *jvp_fns):
  """As `defjvp`, with the primal output too: `fn(g, ans, *primals, **params)`."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero.from_value(out)
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, fn(t, out, *primals, **params))
    return out, t_out
  prim.jvp = rule
  return rule


def defjvp_zero(prim):
  """A piecewise-constant (or integer-valued) primitive: zero tangents."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [Zero.from_value(o) for o in out]
    return out, Zero.from_value(out)
  prim.jvp = rule
  return rule


def linear_jvp(prim):
  """The jvp of a primitive linear in all operands: apply it to the tangents."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if all(type(t) is Zero for t in tangents):
      t_out = [Zero.from_value(o) for o in out] if prim.multiple_results else Zero.from_value(out)
    else:
      t_out = prim.bind(*map(instantiate_zeros, tangents), **params)
    return out, t_out
  return rule


def deflinear(prim, transpose_fn):
  """A linear primitive; `transpose_fn(ct, **params)` -> one cotangent per operand."""
  prim.jvp = linear_jvp(prim)
  prim.transpose = lambda ct, *args, **params: transpose_fn(ct, **params)


def deflinear2(prim, transpose_fn):
  """A linear primitive whose transpose needs the operands (UndefinedPrimal carry avals):
  `transpose_fn(ct, *args, **params)`."""
  prim.jvp = linear_jvp(prim)
  prim.transpose = transpose_fn


def defbilinear(prim, transpose_fn):
  """A primitive linear in each of its two operands (dot_general, conv): the jvp binds it
  with each tangent in its operand's place; `transpose_fn(ct, lhs, rhs, **params)`."""
  bind = lambda lhs, rhs, params: prim.bind(lhs, rhs, **params)
  defjvp(prim, lambda g, x, y, **params: bind(g, y, params),
         lambda g, x, y, **params: bind(x, g, params))
  prim.transpose = transpose_fn


# JAX's registries (jax.interpreters.ad): views onto the rules ember's transformations read.
# A jvp rule is `rule(primals, tangents, **params) -> (out, tangent_out)` (Zero: symbolic
# zero), a transpose rule `rule(ct, *args, **params) -> one cotangent per arg`, as in JAX.
def _from_jax_jvp(prim, rule):
  """A jvp rule set through JAX's registry (a primitive defined outside ember): it sees the
  values given to jvp as JAX's rules do (`as_given`: a Python scalar stays one)."""
  def jvp_as_jax(primals, tangents, **params):
    return rule(primals, tangents, **params)
  jvp_as_jax.jax_rule = rule
  return jvp_as_jax


primitive_jvps = core.RuleRegistry("jvp", _from_jax_jvp,
                                   lambda prim, rule: getattr(rule, "jax_rule", rule))
primitive_transposes = core.RuleRegistry("transpose")


def get_primitive_transpose(prim):
  return primitive_transposes[prim]


# ------------------------------------------------------------------------------------
# Forward mode
# ------------------------------------------------------------------------------------


class JVPTracer(core.Tracer):
  __slots__ = ("primal", "tangent")
  jax_name = "JVPTracer"

  def __repr__(self):
    if self._trace.main.global_data.linearizing:  # grad, vjp, linearize: as JAX's
      tangent = self.tangent.aval.str_short(short_dtypes=True)
      return f"GradTracer(primal={self.primal!s}, typeof(tangent)={tangent})"
    return f"JVPTracer(primal={self.primal!s}, tangent={self.tangent!s})"

  def __init__(self, trace, primal, tangent):
    self._trace, self.primal, self.tangent = trace, primal, tangent

  @property
  def aval(self):
    return core.get_aval(self.primal)

  def to_concrete_value(self):
    p = self.primal
    return p.to_concrete_value() if isinstance(p, core.Tracer) else core.to_numpy(p)

  def _origin_msg(self):
    p = self.primal
    return p._origin_msg() if isinstance(p, core.Tracer) else ""

  def ref_value(self, ref_aval):
    """The value to store in a ref from outside this differentiation (core/refs.py): the
    primal when nothing is differentiated through it, else JAX's error."""
    if type(self.tangent) is Zero:
      return self.primal
    raise Exception(f"performing a set/swap operation with a differentiated value on a "
                    f"non-differentiated array reference of type {ref_aval}. Move the array "
                    "reference to be an argument of the differentiated function?")


class JVPTrace(core.Trace):
  def pure(self, val):
    return JVPTracer(self, val, Zero.from_value(val))

  lift = pure

  def process_primitive(self, prim, tracers, params):
    primals = [t.primal for t in tracers]
    tangents = [t.tangent for t in tracers]
    if all(type(t) is Zero for t in tangents):
      outs = prim.bind(*primals, **params)
      return outs if prim.multiple_results else [outs]
    rule = prim.jvp
    if rule is None:
      out_avals = prim.out_avals([core.get_aval(p) for p in primals], params)
      if any(is_differentiable(a.dtype) for a in out_avals):
        raise NotImplementedError(f"Differentiation rule for '{prim.name}' not implemented")
      outs = prim.bind(*primals, **params)
      return outs if prim.multiple_results else [outs]
    output = jvp_output
    if getattr(rule, "jax_rule", None) is not None:   # a rule written for JAX
      primals, tangents = rule_inputs(tracers)
      output = given_jvp_output
    p_out, t_out = rule(primals, tangents, **params)
    if not prim.multiple_results:
      return [output(self, p_out, t_out)]
    return [output(self, p, t) for p, t in zip(p_out, t_out)]


def jvp_output(trace: JVPTrace, primal, tangent):
  """An output of a jvp rule as the trace gives it (JAX's `maybe_jvp_tracer`): a JVPTracer,
  or the primal itself when its tangent is zero (symbolically, or a float0 one of an
  integer value), so code can tell which outputs depend on the differentiated inputs."""
  if type(tangent) is Zero or not is_differentiable(core.get_aval(primal).dtype):
    return primal
  return JVPTracer(trace, primal, tangent)


def given_jvp_output(trace: JVPTrace, primal, tangent):
  """`jvp_output` for a rule handed values as given (a custom rule, a rule written for JAX),
  which may return Python scalars: held as Arrays, given back by `as_given`."""
  if type(tangent) is Zero or not is_differentiable(core.get_aval(primal).dtype):
    return primal
  return given_jvp_tracer(trace, primal, tangent)


class _JvpData(NamedTuple):
  """A JVPTrace's global data: whether its tangents are staged into a linear jaxpr (grad,
  vjp, linearize: its tracers print as JAX's GradTracer), and its tracers that stand for
  values given as Python scalars (jvp's inputs, a custom rule's outputs), which hold
  Arrays: `id(tracer) -> (tracer, primal, tangent)` as given."""
  linearizing: bool
  given: dict


def jvp_flat(fun: Callable, primals: Sequence, tangents: Sequence, linearizing: bool = False):
  """`fun(*flat) -> (flat outs, aux)` under a JVPTrace: (primal outs, tangent outs
  (Zero where symbolically zero), aux flattened with its tracers replaced by their
  primals: `_strip_aux`)."""
  with core.new_main(JVPTrace, _JvpData(linearizing, {})) as main:
    trace = JVPTrace(main)
    try:
      ins = [given_jvp_tracer(trace, p, t) for p, t in zip(primals, tangents)]
      outs, aux = fun(*ins)
      outs = [core.full_raise(trace, o) for o in outs]
      aux = _strip_aux(aux, main)
      # an input returned as it is comes out as the caller's value, a Python scalar
      # included (`jvp(lambda x: x, (1.0,), (1.0,))` is `(1.0, 1.0)`, as JAX's)
      pairs = [as_given(o) for o in outs]
    finally:
      # the table's tracers refer back to `main`: a cycle that would keep them (and the
      # values they stand for) alive until the next gc, seen as a leak by checking_leaks
      main.global_data.given.clear()
    return [p for p, _ in pairs], [t for _, t in pairs], aux


def given_jvp_tracer(trace: JVPTrace, primal, tangent) -> JVPTracer:
  """A tracer of (primal, tangent), Python scalars held as (weakly typed) Arrays so the
  primitives' rules never see two bare Python numbers; `as_given` gives them back."""
  p, t = _as_array(primal), _as_array(tangent)
  tracer = JVPTracer(trace, p, t)
  if p is not primal or t is not tangent:
    trace.main.global_data.given[id(tracer)] = (tracer, primal, tangent)
  return tracer


def as_given(tracer: JVPTracer) -> tuple:
  """(primal, tangent) of `tracer` as given (JAX's tracers hold Python scalars: an input
  returned as it is comes back as one)."""
  given = tracer._trace.main.global_data.given.get(id(tracer))
  return (tracer.primal, tracer.tangent) if given is None else given[1:]


def rule_inputs(tracers) -> tuple[list, list]:
  """(primals, tangents) of `tracers` as a rule written for JAX (a custom rule, a rule set
  through `primitive_jvps`) sees them: under jvp, as given (JAX's rules see the Python
  scalars given to jvp); under grad/vjp/linearize, the Arrays ember holds (JAX's hold its
  own scalar type there, and as ember's no-op conversions (`jnp.asarray(x)`) keep a tracer
  where JAX's make one holding an Array, code that converts before calling a rule would
  otherwise see scalars)."""
  if tracers and tracers[0]._trace.main.global_data.linearizing:
    return [t.primal for t in tracers], [t.tangent for t in tracers]
  pairs = [as_given(t) for t in tracers]
  return [p for p, _ in pairs], [t for _, t in pairs]


def _as_array(x):
  """Python scalars as (weakly typed) Arrays."""
  if type(x) in (bool, int, float, complex):
    aval = core.get_aval(x)
    return core.new_array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)
  return x


def _strip_aux(aux, main):
  """`aux`'s leaves with the tracers of `main` replaced by their primals, and its tree:
  (leaves, treedef), unflattened by `_unflatten_aux` once the transformation's traces are
  closed (as JAX: flax's Variables in an aux output record the trace they are made in)."""
  def strip(x):
    while isinstance(x, JVPTracer) and x._trace.main is main:
      x = x.primal
    return x
  if aux is None:
    return None
  leaves, treedef = tree_util.tree_flatten(aux)
  return [strip(x) for x in leaves], treedef


def _unflatten_aux(flat_aux):
  return None if flat_aux is None else tree_util.tree_unflatten(flat_aux[1], flat_aux[0])


# ------------------------------------------------------------------------------------
# linearize: primal computation runs, tangent computation is staged into a linear jaxpr
# ------------------------------------------------------------------------------------


def linearize_flat(fun: Callable, primals: Sequence):
  """Linearize `fun(*flat) -> (flat outs, aux)` at `primals`.

  Returns (primal outs, linear jaxpr, out_nonzero, aux): the jaxpr's invars are the
  tangents of the differentiable primals (in order), its consts the residuals, and its
  outvars the tangents of the outputs whose tangent is not symbolically zero."""
  avals = [core.get_aval(p) for p in primals]
  builder = core.JaxprBuilder()
  with core.new_main(core.JaxprTrace, builder) as tmain:
    ttrace = core.JaxprTrace(tmain)
    tan_in = [ttrace.new_arg(a) if is_differentiable(a.dtype) else Zero(tangent_aval(a))
              for a in avals]
    p_out, t_out, aux = jvp_flat(fun, primals, tan_in, linearizing=True)
    nonzero = [type(t) is not Zero for t in t_out]
    outs = [core.full_raise(ttrace, t) for t in t_out if type(t) is not Zero]
    jaxpr = builder.build([t for t in tan_in if type(t) is not Zero], outs)
  builder.release()
  return p_out, _prune_linear(jaxpr), nonzero, aux


def _prune_linear(jaxpr: core.Jaxpr) -> core.Jaxpr:
  """The linear jaxpr without the tangent work no output needs, inside sub-jaxprs too, and
  without the residuals only that work read (JAX's tangent trace stages with `auto_dce`)."""
  jaxpr, _ = dce_deep(jaxpr)
  read = {id(v) for e in jaxpr.eqns for v in e.invars} | {id(v) for v in jaxpr.outvars}
  keep = [id(v) in read for v in jaxpr.constvars]
  if all(keep):
    return jaxpr
  return jaxpr.replace(constvars=[v for v, k in zip(jaxpr.constvars, keep) if k],
                       consts=[c for c, k in zip(jaxpr.consts, keep) if k])


_jvp_jaxpr_depth = [0]


@contextlib.contextmanager
def tracing_jvp_jaxpr():
  """Around the tracing of a sub-jaxpr's jvp (a loop body, a branch, a call): such jaxprs
  may be split into known and unknown parts by partial evaluation, so the rules of the
  primitives inside must keep primal and tangent work in separate equations."""
  _jvp_jaxpr_depth[0] += 1
  try:
    yield
  finally:
    _jvp_jaxpr_depth[0] -= 1


def is_linearizing(primals: Sequence, nz_tangents: Sequence) -> bool:
  """For a jvp rule: whether primal and tangent work must go into separate equations:
  the tangents are being staged into a linear jaxpr of their own (linearize/grad/vjp:
  the tangent trace sits above the primals'), or this is the jvp of a sub-jaxpr (which
  may be partially evaluated). Otherwise (jvp) loops and checkpoint bind one equation
  computing both, as JAX does."""
  if _jvp_jaxpr_depth[0]:
    return True
  if not any(isinstance(t, core.Tracer) for t in nz_tangents):
    return False
  t_main = core.find_top_trace(nz_tangents).main
  return t_main.trace_type is core.JaxprTrace and \
      t_main.level > core.find_top_trace(primals).main.level


# ------------------------------------------------------------------------------------
# Transposition
# ------------------------------------------------------------------------------------


class UndefinedPrimal:
  """A linear input of a transposed equation: only its type is known."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval})"


def is_undefined_primal(x) -> bool:
  return type(x) is UndefinedPrimal


def backward_pass(jaxpr: core.Jaxpr, consts: Sequence, args: Sequence, cts_out: Sequence):
  """Transpose `jaxpr`, linear in the inputs given as UndefinedPrimal: returns one
  cotangent per input (Zero where none flows; None for defined inputs).

  Equations whose inputs are all defined (residual computations, e.g. recomputed in a
  checkpoint) are evaluated forward first; the others are transposed in reverse order."""
  primal_env: dict[int, Any] = {}

  def read_primal(v):
    if isinstance(v, Literal):  # as eval_jaxpr: a bare NumPy scalar would lose a weak type
      return core.literal_value(v)
    return primal_env.get(id(v), _undefined(v))

  for v, x in zip(jaxpr.constvars, consts):
    primal_env[id(v)] = x
  for v, x in zip(jaxpr.invars, args):   # an UndefinedPrimal too: its aval may be the caller's
    primal_env[id(v)] = x
  linear_eqns = []
  for eqn in jaxpr.eqns:
    ins = [read_primal(v) for v in eqn.invars]
    if any(is_undefined_primal(x) for x in ins):
      linear_eqns.append(eqn)
      continue
    outs = core.bind(eqn.primitive, *ins, **eqn.params)
    for v, o in zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]):
      primal_env[id(v)] = o

  ct_env: dict[int, Any] = {}
  reached: set[int] = set()   # the vars a transposed equation gave a cotangent, zero or not

  def write_ct(v, ct):
    if isinstance(v, Literal) or ct is None:
      return
    reached.add(id(v))
    if type(ct) is Zero:
      return
    ct_env[id(v)] = add_tangents(ct_env[id(v)], ct) if id(v) in ct_env else ct

  for v, ct in zip(jaxpr.outvars, cts_out):
    write_ct(v, ct)
  for eqn in reversed(linear_eqns):
    cts = [ct_env.pop(id(v), None) for v in eqn.outvars]
    if all(c is None for c in cts) and not (eqn.primitive.transpose_zero_cotangents and any(
        id(v) in reached for v in eqn.outvars)):
      continue
    cts = [Zero(tangent_aval(v.aval)) if c is None else c for v, c in zip(eqn.outvars, cts)]
    rule = eqn.primitive.transpose
    if rule is None:
      raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                f"'{eqn.primitive.name}' not implemented")
    ins = [read_primal(v) for v in eqn.invars]
    cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *ins, **eqn.params)
    for v, x, ct in zip(eqn.invars, ins, cts_in):
      if is_undefined_primal(x):
        write_ct(v, ct)
  return [ct_env.get(id(v), Zero(tangent_aval(v.aval))) if is_undefined_primal(x) else None
          for v, x in zip(jaxpr.invars, args)]


def _undefined(v):
  return UndefinedPrimal(v.aval)


# ------------------------------------------------------------------------------------
# The user API
# ------------------------------------------------------------------------------------


def _check_callable(fun, name):
  if not callable(fun):
    raise TypeError(f"{name} requires a callable argument, got {type(fun).__name__}: {fun!r}")


def _check_arg(x, what="argument"):
  if not core.is_arraylike(x) or isinstance(x, (str, bytes)):
    raise TypeError(f"Argument '{x!r}' of type {type(x)} is not a valid JAX type"
                    + (f": {core.real_jax_mixing_note(x)}" if core.real_jax_mixing_note(x) else ""))


def _flat_fun(fun, in_tree, has_aux, store: dict, name: str):
  """A flat version of `fun` for the transformations: flat args -> (flat outs, aux);
  the output tree goes into `store['out_tree']`."""
  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    aux = None
    if has_aux:
      if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise TypeError(f"expected function with aux output to return a two-element "
                        f"tuple, but got type {type(out)} with value {out!r}")
      out, aux = out
    leaves, store["out_tree"] = tree_util.tree_flatten(out)
    for leaf in leaves:
      if not core.is_arraylike(leaf):
        raise TypeError(f"{name}: function returned a value of type {type(leaf).__name__} "
                        f"({leaf!r}), which is not a valid JAX type.")
    return leaves, aux
  return flat


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
  """Forward-mode: (fun(*primals), the directional derivative along `tangents`)."""
  _check_callable(fun, "jvp")
  if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
    raise TypeError("primal and tangent arguments to jax.jvp must be tuples or lists; found "
                    f"{type(primals).__name__} and {type(tangents).__name__}.")
  # as users' pytrees (a typed key is one leaf, its tangent one float0 array), then each
  # key as its data, with float0 tangents of the data's shape
  p_flat, tree = tree_util.public.tree_flatten(tuple(primals))
  t_flat, t_tree = tree_util.public.tree_flatten(tuple(tangents))
  if tree != t_tree:
    raise TypeError("primal and tangent arguments to jax.jvp must have the same tree "
                    f"structure; primals have tree structure {tree} whereas tangents have "
                    f"tree structure {t_tree}.")
  p_flat, t_flat = ad_keys.keys_as_data(p_flat, t_flat)
  tree = tree_util.tree_structure(tuple(primals))
  tans = []
  for p, t in zip(p_flat, t_flat):
    _check_arg(p)
    pa = core.get_aval(p)
    ta = (ShapedArray(np.shape(t), t.dtype)
          if isinstance(t, np.ndarray) and t.dtype == dtypes.float0 else core.get_aval(t))
    expected = tangent_aval(pa).dtype
    if ta.dtype != expected:
      raise TypeError("primal and tangent arguments to jax.jvp do not match; dtypes must be "
                      "equal, or in case of int/bool primal dtype the tangent dtype must be "
                      f"float0. Got primal dtype {pa.dtype.name} and so expected tangent "
                      f"dtype {np.dtype(expected).name}, but got tangent dtype "
                      f"{np.dtype(ta.dtype).name} instead.")
    if ta.shape != pa.shape:
      raise ValueError("jvp called with different primal and tangent shapes; Got primal shape "
                       f"{pa.shape} and tangent shape as {ta.shape}")
    tans.append(t if is_differentiable(pa.dtype) else Zero(tangent_aval(pa)))
  store: dict = {}
  flat = _flat_fun(fun, tree, has_aux, store, "jvp")
  p_out, t_out, aux = jvp_flat(flat, p_flat, tans)
  t_out = [instantiate_zeros(t) for t in t_out]
  out_tree = store["out_tree"]
  res = (tree_util.tree_unflatten(out_tree, p_out),
         ad_keys.key_tangents(tree_util.tree_unflatten(out_tree, t_out)))
  return (*res, _unflatten_aux(aux)) if has_aux else res


def _lift_linearized(jaxpr, tree, key_specs, p_avals, out_avals, nonzero, out_tree, residuals,
                     *tangents):
  """The linearized function of `linearize`: evaluates the linear jaxpr (its consts are
  the `residuals`) on the tangents (structured as users see the primals: a key is one leaf,
  its tangent a float0 array of its shape)."""
  t_flat, t_tree = tree_util.public.tree_flatten(tangents)
  if t_tree != tree:
    raise TypeError(f"linearized function called on tangent values inconsistent with the "
                    f"original primal values: expected tree structure {tree}, got {t_tree}.")
  t_flat = ad_keys.key_leaves_as_data(t_flat, key_specs, ad_keys.linearized_key_error)
  for pa, t in zip(p_avals, t_flat):
    ta = core.get_aval(t)
    if is_differentiable(pa.dtype) and (ta.shape, ta.dtype) != (pa.shape, pa.dtype):
      raise ValueError(f"linearized function called on tangent values inconsistent with "
                       f"the original primal values: got tangent {ta.str_short()} for "
                       f"primal {pa.str_short()}.")
  diff = [t for pa, t in zip(p_avals, t_flat) if is_differentiable(pa.dtype)]
  outs = iter(core.eval_jaxpr(jaxpr, residuals, *diff))
  t_out = [next(outs) if nz else zeros_like_aval(a) for a, nz in zip(out_avals, nonzero)]
  return ad_keys.key_tangents(tree_util.tree_unflatten(out_tree, t_out))


class _Shim:
  """Holds a functools.partial as Partial's function (functools.partial would merge a
  partial's arguments into its own, making the static parts leaves); JAX's
  `_HashableCallableShim`."""
  __slots__ = ("fun",)

  def __init__(self, fun):
    self.fun = fun

  def __call__(self, *args):
    return self.fun(*args)

  def __repr__(self):
    return f"_HashableCallableShim({self.fun})"


def linearize(fun: Callable, *primals, has_aux: bool = False):
  """(fun(*primals), f_jvp): f_jvp(*tangents) evaluates the linear jaxpr of the jvp.
  f_jvp is a `tree_util.Partial` whose leaves are the residuals, so it can be passed to
  and returned from jitted functions (as JAX's)."""
  _check_callable(fun, "linearize")
  p_flat, tree = tree_util.tree_flatten(primals)
  for p in p_flat:
    _check_arg(p)
  store: dict = {}
  p_out, jaxpr, nonzero, aux = linearize_flat(_flat_fun(fun, tree, has_aux, store, "linearize"),
                                              p_flat)
  out_avals = [tangent_aval(core.get_aval(p)) for p in p_out]
  static = functools.partial(_lift_linearized, jaxpr.replace(consts=[]),
                             tree_util.public.tree_structure(primals),
                             ad_keys.key_specs(primals),
                             [core.get_aval(p) for p in p_flat], out_avals, nonzero,
                             store["out_tree"])
  f_jvp = tree_util.Partial(_Shim(static), list(jaxpr.consts))
  out = tree_util.tree_unflatten(store["out_tree"], p_out)
  return (out, f_jvp, _unflatten_aux(aux)) if has_aux else (out, f_jvp)


class VJP:
  """The function returned by `vjp` (JAX 0.12's `jax._src.api.VJP`): a pytree whose
  leaves are the residuals, so it can be passed to and returned from jitted functions.
  Called with one cotangent (the structure of the function's output), it returns one
  cotangent per primal argument (a tuple)."""
  __slots__ = ("fun", "in_tree", "out_tree", "residuals")

  def __init__(self, fun, in_tree, out_tree, residuals):
    self.fun, self.in_tree, self.out_tree, self.residuals = fun, in_tree, out_tree, residuals

  def __call__(self, out_ct, *extra_args):
    if extra_args:
      raise TypeError(_vjp_too_many_args(self.fun.args[0], len(extra_args) + 1))
    return self.fun(self.in_tree, self.out_tree, self.residuals, out_ct)

  def __repr__(self):
    return f"VJP(fun={self.fun.args[0]}, in_tree={self.in_tree}, out_tree={self.out_tree})"


tree_util.register_pytree_node(
    VJP, lambda v: ((v.residuals,), (v.fun, v.in_tree, v.out_tree)),
    lambda meta, xs: VJP(*meta, xs[0]))


def _vjp_too_many_args(name, n):
  return (f"The function returned by `jax.vjp` applied to {name} was called with {n} "
          "arguments,\nbut functions returned by `jax.vjp` must be called with a single "
          "argument\ncorresponding to the single value returned by the function being "
          "differentiated\n(even if that returned value is a tuple or other container).\n\n"
          "For example, if we have:\n\n  def f(x):\n    return (x, x)\n  _, f_vjp = "
          "jax.vjp(f, 1.0)\n\nthe function `f` returns a single tuple as output, and so we "
          "call `f_vjp` with a\nsingle tuple as its argument:\n\n  x_bar, = f_vjp((2.0, "
          "2.0))\n\nIf we instead call `f_vjp(2.0, 2.0)`, with the values 'splatted out' as"
          "\narguments rather than in a tuple, this error can arise.")


def _vjp_pullback(name, jaxpr, nonzero, in_avals, out_avals, key_specs, in_tree, out_tree,
                  residuals, ct):
  ct_flat, ct_tree = tree_util.public.tree_flatten(ct)
  if ct_tree != out_tree:
    raise ValueError(f"unexpected tree structure.\n\nThe argument to a VJP function "
                     f"returned by `jax.vjp` must match the pytree structure of the "
                     f"differentiated function {name}: expected {out_tree}, got {ct_tree}.")
  ct_flat = ad_keys.key_leaves_as_data(ct_flat, key_specs, ad_keys.vjp_key_error)
  for c, a in zip(ct_flat, out_avals):
    ca = core.get_aval(c) if not (isinstance(c, np.ndarray) and c.dtype == dtypes.float0) \
        else ShapedArray(c.shape, dtypes.float0)
    if ca.shape != a.shape:
      raise ValueError(f"unexpected JAX type (e.g. shape/dtype) for argument to VJP "
                       f"function: got {ad_keys.type_str(ca)}, but expected "
                       f"{ad_keys.type_str(tangent_aval(a))} because the corresponding "
                       f"output of the differentiated function had JAX type "
                       f"{ad_keys.type_str(a)}")
    if ca.dtype != tangent_aval(a).dtype and not dtypes.is_python_scalar(c):
      raise ValueError(f"Type of cotangent input to vjp pullback function "
                       f"({np.dtype(ca.dtype).name}) is not the expected tangent type "
                       f"({np.dtype(tangent_aval(a).dtype).name}) of corresponding primal "
                       f"output with dtype {a.dtype.name}.")
  cts = [c for c, nz in zip(ct_flat, nonzero) if nz]
  cts_in = iter(backward_pass(jaxpr, residuals,
                              [UndefinedPrimal(v.aval) for v in jaxpr.invars], cts))
  out = [instantiate_zeros(next(cts_in)) if is_differentiable(a.dtype)
         else zeros_like_aval(tangent_aval(a)) for a in in_avals]
  return tuple(ad_keys.key_tangents(tree_util.tree_unflatten(in_tree, out)))


def _vjp(fun, primals, has_aux, name="vjp"):
  p_flat, in_tree = tree_util.tree_flatten(primals)
  for p in p_flat:
    _check_arg(p)
  store: dict = {}
  p_out, jaxpr, nonzero, aux = linearize_flat(_flat_fun(fun, in_tree, has_aux, store, name),
                                              p_flat)
  out = tree_util.tree_unflatten(store["out_tree"], p_out)
  static = functools.partial(_vjp_pullback, name, jaxpr.replace(consts=[]), nonzero,
                             [core.get_aval(p) for p in p_flat],
                             [core.get_aval(p) for p in p_out], ad_keys.key_specs(out))
  # the pullback takes cotangents structured as users see the outputs (a key is one leaf)
  vjp_fn = VJP(static, in_tree, tree_util.public.tree_structure(out), list(jaxpr.consts))
  return out, vjp_fn, _unflatten_aux(aux)


def vjp(fun: Callable, *primals, has_aux: bool = False, reduce_axes=()):
  """(fun(*primals), vjp_fn): vjp_fn(cotangent) -> one cotangent per primal (a tuple).
  vjp_fn is a pytree (its leaves are the residuals): jitted functions take and return it."""
  _check_callable(fun, "vjp")
  out, vjp_fn, aux = _vjp(fun, primals, has_aux, getattr(fun, "__name__", "fun"))
  return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _argnums_tuple(argnums):
  if isinstance(argnums, (int, np.integer)):
    return (operator.index(argnums),)
  return tuple(operator.index(a) for a in argnums)


def _split_argnums(fun, args, kwargs, argnums, name):
  nums = _argnums_tuple(argnums)
  if any(not -len(args) <= i < len(args) for i in nums):
    raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                    f"{max(nums) + 1} positional arguments to be passed by the caller, but "
                    f"got only {len(args)} positional arguments.")
  nums = tuple(i % len(args) for i in nums)

  def partial_fun(*dyn):
    full = list(args)
    for i, x in zip(nums, dyn):
      full[i] = x
    return fun(*full, **kwargs)
  return partial_fun, tuple(args[i] for i in nums)


def _check_input_dtype(name, x, holomorphic, allow_int):
  aval = core.get_aval(x)
  dt = aval.dtype
  if isinstance(dt, dtypes.ExtendedDType):
    raise TypeError(f"{name} does not support differentiating with respect to key arrays "
                    f"(dtype {dt}); pass them as non-differentiated arguments.")
  kind = dtype_kind(dt)
  if holomorphic and kind != "c":
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but "
                    f"got {dt.name}.")
  if kind in "biu" and not allow_int:
    raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but got {dt.name}. If you want to use "
                    "Boolean- or integer-valued inputs, use vjp or set allow_int to True.")


def _check_output(name, aval, holomorphic):
  if aval.shape != ():
    raise TypeError(f"Gradient only defined for scalar-output functions. Output had shape: "
                    f"{aval.shape}. To get the gradient, reduce the output to a scalar with "
                    "output.sum(), or use jax.jacobian to differentiate a function with a "
                    "non-scalar output.")
  kind = dtype_kind(aval.dtype)
  if holomorphic:
    if kind != "c":
      raise TypeError(f"{name} with holomorphic=True requires outputs with complex dtype, "
                      f"but got {aval.dtype.name}.")
  elif kind in "biu":
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                    f"of np.floating), but got {aval.dtype.name}. For differentiation of "
                    "functions with integer outputs, use jax.vjp directly.")
  elif kind != "f":
    raise TypeError(f"{name} requires real-valued outputs (output dtype that is a sub-dtype "
                    f"of np.floating), but got {aval.dtype.name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex outputs, use jax.vjp "
                    "directly.")


def _one(aval):
  """The seed cotangent 1 of a scalar output, weakly typed when the output is (as JAX)."""
  return core.new_array(np.ones((), aval.dtype), weak_type=aval.weak_type)


_GRAD_DOC = ("Gradient of {fun} with respect to positional argument(s) {argnums}. Takes the "
             "same arguments as {fun} but returns the gradient, which has the same shape as "
             "the arguments at positions {argnums}.")
_VALUE_AND_GRAD_DOC = (
    "Value and gradient of {fun} with respect to positional argument(s) {argnums}. Takes the "
    "same arguments as {fun} but returns a two-element tuple where the first element is the "
    "value of {fun} and the second element is the gradient, which has the same shape as the "
    "arguments at positions {argnums}.")


_REF_GRAD_ARG = (
    "grad cannot differentiate with respect to a Ref-typed argument, because the gradient for "
    "a ref must itself be accumulated into a ref. Instead, use `jax.vjp` and bind a gradient "
    "ref using the returned VJP function's `with_refs` method. (Ref arguments not selected by "
    "grad's argnums are fine: they are treated as plumbing, and are not differentiated.)")


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
                   allow_int: bool = False, reduce_axes=()):
  """A function returning (fun(*args), the gradient of fun with respect to `argnums`)."""
  _check_callable(fun, "value_and_grad")
  _argnums_tuple(argnums)

  @api_util.wraps(fun, docstr=_VALUE_AND_GRAD_DOC, argnums=argnums)
  def value_and_grad_f(*args, **kwargs):
    f_partial, dyn = _split_argnums(fun, args, kwargs, argnums, "value_and_grad")
    for x in tree_util.tree_leaves(dyn):
      if refs.is_ref(x):
        raise TypeError(_REF_GRAD_ARG)
      _check_arg(x)
      _check_input_dtype("grad", x, holomorphic, allow_int)
    ans, vjp_fn, aux = _vjp(f_partial, dyn, has_aux, getattr(fun, "__name__", "fun"))
    if not core.is_arraylike(ans):
      raise TypeError(f"Gradient only defined for scalar-output functions. Output was {ans!r}.")
    aval = core.get_aval(ans)
    _check_output("grad", aval, holomorphic)
    g = vjp_fn(_one(aval))
    g = g[0] if isinstance(argnums, (int, np.integer)) else g
    return ((ans, aux), g) if has_aux else (ans, g)

  return value_and_grad_f


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False, reduce_axes=()):
  """The gradient of scalar-valued `fun` with respect to the `argnums` arguments."""
  _check_callable(fun, "grad")
  vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

  @api_util.wraps(fun, docstr=_GRAD_DOC, argnums=argnums)
  def grad_f(*args, **kwargs):
    out, g = vg(*args, **kwargs)
    return (g, out[1]) if has_aux else g
  return grad_f


deflinear(add_any_p, lambda ct: [ct, ct])


def linear_transpose(fun: Callable, *primals, reduce_axes=()):
  """The transpose of the linear function `fun` at the types of `primals` (only their shape
  and dtype are read: arrays, ShapeDtypeStructs or ShapedArrays): a function mapping output
  cotangents to a tuple of input cotangents (a `tree_util.Partial`, as JAX's)."""
  _check_callable(fun, "linear_transpose")
  p_flat, in_tree = tree_util.tree_flatten(primals)
  in_avals = [_shaped_aval(p) for p in p_flat]
  store: dict = {}
  flat = _flat_fun(fun, in_tree, False, store, "linear_transpose")
  jaxpr, _ = core.trace_to_jaxpr(lambda *xs: (flat(*xs)[0], None), in_avals)
  out_avals = [v.aval for v in jaxpr.outvars]
  _check_linear_transpose_dtypes([a.dtype for a in in_avals], [a.dtype for a in out_avals])
  static = functools.partial(_linear_transposed, jaxpr.replace(consts=[]), in_tree,
                             store["out_tree"], in_avals, out_avals)
  return tree_util.Partial(_Shim(static), list(jaxpr.consts))


def _shaped_aval(x) -> ShapedArray:
  """The type of `x`: a ShapedArray itself, else any value's or ShapeDtypeStruct's aval."""
  return x if isinstance(x, ShapedArray) else core.get_aval(x)


def _check_linear_transpose_dtypes(in_dtypes, out_dtypes):
  dts = [*in_dtypes, *out_dtypes]
  if not (all(d == dtypes.float0 or dtype_kind(d) in "fc" for d in dts)
          or all(d == dtypes.float0 or dtype_kind(d) in "iu" for d in dts)):
    raise TypeError("linear_transpose only supports [float, complex, or float0] -> "
                    "[float, complex, or float0], and integer -> integer functions, "
                    f"but got {[np.dtype(d) for d in in_dtypes]} -> "
                    f"{[np.dtype(d) for d in out_dtypes]}.")


def _linear_transposed(jaxpr, in_tree, out_tree, in_avals, out_avals, consts, out_ct):
  ct_flat, ct_tree = tree_util.tree_flatten(out_ct)
  if ct_tree != out_tree:
    raise TypeError(f"cotangent tree does not match function output, expected {out_tree} "
                    f"but got {ct_tree}")
  for a, c in zip(out_avals, ct_flat):
    ca = core.get_aval(c)
    if (ca.shape, ca.dtype) != (a.shape, a.dtype):
      raise TypeError(f"cotangent type does not match function output, expected "
                      f"{tuple(out_avals)} but got {ct_flat}")
  # float0 has one value: a symbolic zero, so no transpose rule meets float0 arrays
  ct_flat = [Zero(a) if a.dtype == dtypes.float0 else c for a, c in zip(out_avals, ct_flat)]
  cts = backward_pass(jaxpr, consts, [UndefinedPrimal(a) for a in in_avals], ct_flat)
  return tuple(tree_util.tree_unflatten(in_tree, [instantiate_zeros(c) for c in cts]))

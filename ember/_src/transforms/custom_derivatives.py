"""custom_jvp and custom_vjp: functions with user-defined derivative rules.

What a call runs is the innermost trace's choice, as in JAX (`_bind_custom`): with no
trace the function simply runs; under a jvp trace (jvp, grad, vjp, linearize) only the
rule runs, on the primals, so the function is never traced while differentiating; under
vmap the call goes one trace down batched (`_BatchedCall`); under a staging trace (jit,
make_jaxpr) the function is traced into ONE equation holding its jaxpr, as JAX's:
`custom_jvp_call[name=f call_jaxpr={...} jvp=f_jvp symbolic_zeros=False]` or
`custom_vjp_call[name=f bwd=f_bwd call_jaxpr={...} fwd=f_fwd symbolic_zeros=False]`.
Evaluating the equation runs the function's jaxpr; differentiating it runs the rule:

- custom_jvp_call's jvp rule calls the user's jvp on (primals, tangents);
- custom_vjp_call's jvp rule runs `fwd` on the primals (primal outputs and residuals) and
  returns as tangents a `custom_lin` of the input tangents: a linear primitive that
  cannot be evaluated (forward mode over custom_vjp is an error, as in JAX) and whose
  transpose calls `bwd(residuals, cotangents)`. Under linearize it lands in the linear
  jaxpr, so grad/vjp call `bwd`.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors, tree_util
from ember._src.core import declare
from ember._src.transforms import ad, ad_calls, batching

__all__ = ["custom_jvp", "custom_vjp", "custom_gradient", "custom_jvp_call_p",
           "custom_vjp_call_p", "custom_lin_p", "SymbolicZero", "zero_from_primal",
           "closure_convert", "CustomVJPPrimal", "custom_vjp_primal_tree_values"]


class _Rule:
  """A Python rule held in an equation's params; it prints as the rule's name, as JAX's."""
  __slots__ = ("fn", "name")

  def __init__(self, fn: Callable, name: str):
    self.fn, self.name = fn, name

  def __call__(self, *args, **kwargs):
    return self.fn(*args, **kwargs)

  def __repr__(self):
    return self.name

  __str__ = __repr__


def _fun_name(f) -> str:
  while isinstance(f, functools.partial):
    f = f.func
  return getattr(f, "__name__", type(f).__name__)


def _signature(fun):
  """fun's signature (cached: this runs on every call), None for a builtin without one."""
  try:
    return _cached_signature(fun)
  except TypeError:                 # an unhashable callable
    return _cached_signature.__wrapped__(fun)


@functools.lru_cache(maxsize=1024)
def _cached_signature(fun):
  try:
    return inspect.signature(fun)
  except (TypeError, ValueError):
    return None


def _resolve_kwargs(fun, args, kwargs) -> tuple:
  """Keyword arguments bound to their positions and defaults filled in, as JAX does (custom
  rules take positional args, and a defaulted `nondiff_argnums` argument must be there)."""
  sig = _signature(fun)
  if sig is None and not kwargs:
    return tuple(args)
  try:
    if sig is None:
      raise TypeError("its signature is unknown")
    ba = sig.bind(*args, **kwargs)
  except (TypeError, ValueError) as e:
    raise TypeError(f"The function {_fun_name(fun)} was called with arguments that do not "
                    f"fit its signature or cannot be resolved to positions ({e}); "
                    "custom_jvp/custom_vjp functions need positional arguments.") from None
  ba.apply_defaults()
  if ba.kwargs:
    raise TypeError(f"keyword-only arguments {sorted(ba.kwargs)} are not supported by "
                    f"custom_jvp/custom_vjp function {_fun_name(fun)}")
  return ba.args


def _split_nondiff(args, nondiff_argnums, custom_vjp: bool):
  """(the nondiff arguments, the differentiable ones, `merge`: differentiable -> all). As
  JAX's: a custom_jvp's nondiff arguments may be traced, and are not differentiated; a
  custom_vjp's may hold no tracer."""
  nums = {i % len(args) for i in nondiff_argnums} if args else set()
  args = list(args)
  for i in nums:
    if any(isinstance(x, core.Tracer) for x in tree_util.tree_leaves(args[i])):
      if custom_vjp:
        raise errors.UnexpectedTracerError(_NONDIFF_TRACER_MESSAGE)
      args[i] = tree_util.tree_map(
          lambda x: stop_gradient(x) if isinstance(x, core.Tracer) else x, args[i])
  nondiff = [args[i] for i in sorted(nums)]
  dyn_idx = [i for i in range(len(args)) if i not in nums]
  # merge keeps only the nondiff values: the call (with merge) lives on in the jaxpr's
  # equation, and holding the differentiable ones would keep a finished trace's tracers
  template = [a if i in nums else None for i, a in enumerate(args)]

  def merge(dyn):
    full, it = list(template), iter(dyn)
    for i in dyn_idx:
      full[i] = next(it)
    return full
  return nondiff, tuple(args[i] for i in dyn_idx), merge


_NONDIFF_TRACER_MESSAGE = (
    "Found a JAX Tracer object passed as an argument to a custom_vjp function in a position "
    "indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as "
    "non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should "
    "only be used for arguments that can't be or contain JAX tracers, e.g. function-valued "
    "arguments. In particular, array-valued arguments should typically not be indicated as "
    "nondiff_argnums.")

# lax's `stop_gradient`, for a custom_jvp's traced nondiff arguments. It binds a primitive,
# a layer above transforms: primitives/control/barriers.py registers it here at its import.
stop_gradient: Callable | None = None


# ------------------------------------------------------------------------------------
# One call, and which of its functions runs: the innermost trace's choice
# ------------------------------------------------------------------------------------


class _CustomCall:
  """One call of a custom_jvp/custom_vjp function on flat arguments, before a trace has
  chosen what runs (JAX's `process_custom_jvp_call` / `process_custom_vjp_call`): the eval
  trace runs `fun`; a jvp trace runs only the rule, on the primals (`jvp`: under grad the
  function itself is never traced); a vmap passes down a batched call (`batched`) whose
  functions run the inner ones batched; a staging trace traces `fun` into one equation
  that keeps the rules (`stage`). `out_tree` is set by whichever function runs first.

  Subclasses give `prim`, `fun(*args) -> outs`, `rule_params()` (the rules the equation
  keeps) and `batched_cls`."""
  prim: Any
  batched_cls: type

  def __init__(self, name: str, symbolic_zeros: bool):
    self.name, self.symbolic_zeros = name, symbolic_zeros

  def fun(self, *args) -> list:
    raise NotImplementedError

  def rule_params(self) -> dict:
    raise NotImplementedError

  def jvp(self, primals, tangents):
    """(primal outs, tangent outs) from the rule alone (the equation's jvp rule with no
    jaxpr: it never reads one)."""
    return self.prim.jvp(primals, tangents, call_jaxpr=None, num_consts=0,
                         **self.rule_params(), symbolic_zeros=self.symbolic_zeros,
                         name=self.name)

  def stage(self, args) -> list:
    """Trace `fun` and bind one equation holding its jaxpr and the rules."""
    jaxpr, consts = ad_calls.trace_closed(self.fun, [core.get_aval(a) for a in args])
    return self.prim.bind(*consts, *args, call_jaxpr=jaxpr, **self.rule_params(),
                          num_consts=len(consts), symbolic_zeros=self.symbolic_zeros,
                          name=self.name)

  def batched(self, trace, in_dims) -> "_CustomCall":
    return self.batched_cls(self, trace, in_dims)


class _UserCall(_CustomCall):
  """A call of the user's custom function `custom` (custom_jvp or custom_vjp): its
  arguments are `nondiff` (passed to the rules first) and the flat leaves of the others
  (`in_tree`; `merge` puts them back among all the arguments)."""

  def __init__(self, custom, nondiff, merge, in_tree):
    super().__init__(_fun_name(custom.fun), custom.symbolic_zeros)
    self.custom, self.nondiff, self.merge, self.in_tree = custom, nondiff, merge, in_tree
    self.out_tree = None

  def fun(self, *leaves) -> list:
    out = self.custom.fun(*self.merge(tree_util.tree_unflatten(self.in_tree, leaves)))
    out_leaves, self.out_tree = tree_util.tree_flatten(out)
    return out_leaves


def _bind_custom(call: _CustomCall, args: list, trace=None) -> list:
  """The flat outputs of `call` on the flat `args`, run as the innermost trace of `args`
  (`trace`, when the caller found it) chooses."""
  trace = core.find_top_trace(args) if trace is None else trace
  if trace.main.level == 0:
    return call.fun(*args)
  if isinstance(trace, ad.JVPTrace):
    return _custom_call_under_jvp(trace, call, [core.full_raise(trace, a) for a in args])
  if isinstance(trace, batching.BatchTrace):
    return _custom_call_under_vmap(trace, call, [core.full_raise(trace, a) for a in args])
  return call.stage(args)


def _custom_call_under_jvp(trace, call: _CustomCall, tracers) -> list:
  """The rule on the primals and tangents; with every tangent zero, the call itself on
  the primals, one trace down."""
  primals, tangents = ad.rule_inputs(tracers)
  if all(type(t) is ad.Zero for t in tangents):
    return _bind_custom(call, primals)
  p_out, t_out = call.jvp(primals, tangents)
  return [ad.given_jvp_output(trace, p, t) for p, t in zip(p_out, t_out)]


def _custom_call_under_vmap(trace, call: _CustomCall, tracers) -> list:
  """The batched call on the batched values, one trace down; when that trace stages, the
  equation is traced here, per example, and batched by its rule (`_custom_jvp_call_batch`)
  so values the function closes over keep their batching."""
  vals = [t.val for t in tracers]
  dims = [t.batch_dim for t in tracers]
  if all(d is None for d in dims):
    return _bind_custom(call, vals)
  below = core.find_top_trace(vals)
  if isinstance(below, core.JaxprTrace):
    return call.stage(tracers)
  batched = call.batched(trace, dims)
  outs = _bind_custom(batched, vals, below)
  return [batching.BatchTracer(trace, o, d) for o, d in zip(outs, batched.out_dims)]


class _BatchedCall(_CustomCall):
  """`inner` under a vmap, on the batched values of its inputs (batched at `in_dims`).
  Each function runs the inner one on the vmap's tracers (`batching.batch_subtrace`) and
  returns the batched values; the batch dims of the outputs are fixed by the first function
  to run (`out_dims`), and the others move theirs to match (a rule run after the function
  was staged must give outputs laid out as the staged ones)."""

  def __init__(self, inner: _CustomCall, trace, in_dims):
    super().__init__(inner.name, inner.symbolic_zeros)
    self.inner, self.prim, self.batched_cls = inner, inner.prim, type(self)
    self.trace, self.axis_data, self.in_dims = trace, trace.axis_data, list(in_dims)
    self.out_dims: list | None = None

  @property
  def out_tree(self):
    return self.inner.out_tree

  def fun(self, *vals) -> list:
    outs, dims = batching.batch_subtrace(self.inner.fun, self.axis_data, vals, self.in_dims,
                                         self.trace)
    return self._fix_out_dims(outs, dims)

  def _fix_out_dims(self, outs, dims) -> list:
    """`outs` (batched at `dims`) moved to the recorded out dims, or recorded."""
    if self.out_dims is None:
      self.out_dims = list(dims)
      return list(outs)
    return [_match_batch_dim(self.axis_data, o, d, e, self.name)
            for o, d, e in zip(outs, dims, self.out_dims)]


def _match_batch_dim(axis_data, x, src, dst, name: str):
  """`x` (batched at `src`) batched at `dst`: moved, or broadcast when unbatched."""
  if src == dst:
    return x
  if isinstance(x, SymbolicZero):
    return SymbolicZero(_batched_aval(_unbatched_aval(x.aval, src), dst, axis_data.size))
  if src is None:
    return batching.broadcast(x, axis_data.size, dst)
  if dst is None:
    raise ValueError(f"under vmap, a custom derivative rule of {name} gave a batched output "
                     "where the function's output is unbatched (the same for every "
                     "example); the function and its rules must agree on which outputs "
                     "depend on the mapped inputs.")
  return batching.moveaxis(x, src, dst)


def _batched_aval(aval, dim, size: int):
  if dim is None:
    return aval
  return aval.update(shape=aval.shape[:dim] + (size,) + aval.shape[dim:])


def _unbatched_aval(aval, dim):
  if dim is None:
    return aval
  return aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1:])


def _sym_zeros_per_example(xs, dims):
  """SymbolicZero tangents/cotangents of batched values, as the per-example rule sees them."""
  return [SymbolicZero(_unbatched_aval(x.aval, d)) if isinstance(x, SymbolicZero) else x
          for x, d in zip(xs, dims)]


class _BatchedJvpCall(_BatchedCall):
  def __init__(self, inner, trace, in_dims):
    super().__init__(inner, trace, in_dims)
    self.jvp_rule = _Rule(self.rule, inner.rule_params()["jvp"].name)

  def rule_params(self) -> dict:
    return {"jvp": self.jvp_rule}

  def rule(self, primals, tangents):
    n = len(primals)
    tangents = _sym_zeros_per_example(tangents, self.in_dims)

    def per_example(*xs):
      p_out, t_out = self.inner.rule(list(xs[:n]), list(xs[n:]))
      return list(p_out) + list(t_out)
    outs, dims = batching.batch_subtrace(per_example, self.axis_data, [*primals, *tangents],
                                         self.in_dims * 2, self.trace)
    m = len(outs) // 2
    p_dims, t_dims = dims[:m], dims[m:]
    merged = [p if p is not None else t for p, t in zip(p_dims, t_dims)]
    if self.out_dims is None:
      self.out_dims = merged
    size, name = self.axis_data.size, self.name
    p_out = [_match_batch_dim(self.axis_data, o, d, e, name)
             for o, d, e in zip(outs[:m], p_dims, self.out_dims)]
    t_out = [_match_batch_dim(self.axis_data, o, d, e, name)
             if not isinstance(o, SymbolicZero) else
             SymbolicZero(_batched_aval(o.aval, e, size))
             for o, d, e in zip(outs[m:], t_dims, self.out_dims)]
    return p_out, t_out


class _BatchedVjpCall(_BatchedCall):
  def __init__(self, inner, trace, in_dims):
    super().__init__(inner, trace, in_dims)
    self.res_dims: list | None = None
    rules = inner.rule_params()
    self.fwd_rule = _Rule(self.fwd, rules["fwd"].name)
    self.bwd_rule = _Rule(self.bwd, rules["bwd"].name)

  def rule_params(self) -> dict:
    return {"fwd": self.fwd_rule, "bwd": self.bwd_rule}

  def fwd(self, primals, perturbed=None):
    n_out = []

    def per_example(*xs):
      p_out, res = self.inner.fwd(list(xs), perturbed)
      n_out[:] = [len(p_out)]
      return list(p_out) + list(res)
    outs, dims = batching.batch_subtrace(per_example, self.axis_data, primals, self.in_dims,
                                         self.trace)
    m = n_out[0]
    self.res_dims = dims[m:]
    return self._fix_out_dims(outs[:m], dims[:m]), outs[m:]

  def bwd(self, res, cts):
    """The cotangents of the batched inputs: each per-example one moved to its input's
    batch dim, or summed over the batch for an unbatched input (as JAX, an error when an
    unbatched output's cotangent would be counted once per example)."""
    cts = _sym_zeros_per_example(cts, self.out_dims)
    n_res = len(res)
    in_avals = []

    def per_example(*xs):
      cts_in = self.inner.bwd(list(xs[:n_res]), list(xs[n_res:]))
      in_avals[:] = [c.aval if type(c) is ad.Zero else None for c in cts_in]
      return [None if type(c) is ad.Zero else c for c in cts_in]
    outs, dims = batching.batch_subtrace(per_example, self.axis_data, [*res, *cts],
                                         self.res_dims + self.out_dims)
    shared = any(d is None and not isinstance(c, SymbolicZero)
                 for c, d in zip(cts, self.out_dims))
    if shared and any(o is not None and d is not None and e is None
                      for o, d, e in zip(outs, dims, self.in_dims)):
      raise ValueError(_shared_cotangent_message(self.name))
    size = self.axis_data.size
    return [ad.Zero(_batched_aval(a, e, size)) if o is None else
            batching.sum_batch_dim(o, d) if e is None else
            _match_batch_dim(self.axis_data, o, d, e, self.name)
            for o, d, e, a in zip(outs, dims, self.in_dims, in_avals)]


def _shared_cotangent_message(name: str) -> str:
  return (f"under vmap, the custom_vjp function {name} has a primal output that is shared "
          "across the batch (unbatched) with a nonzero right cotangent, and its bwd rule "
          "produced a batched left cotangent for an unbatched primal input. Summing that "
          "left cotangent over the batch would count the shared primal output's right "
          "cotangent once per example.")


def _check_tangents(name, primal_out, tangent_out):
  for p, t in zip(primal_out, tangent_out):
    pa = core.get_aval(p)
    ta = t.aval if isinstance(t, SymbolicZero) else core.get_aval(t)
    expected = ad.tangent_aval(pa)
    if ta.shape != pa.shape or (ta.dtype != expected.dtype):
      raise TypeError(f"Custom JVP rule {name} must produce primal and tangent outputs with "
                      f"corresponding shapes and dtypes, but got {pa.str_short()} for the "
                      f"primal and {ta.str_short()} for the tangent (expected "
                      f"{expected.str_short()}).")


# ------------------------------------------------------------------------------------
# custom_jvp
# ------------------------------------------------------------------------------------


def _custom_call_pp(order):
  def pp(eqn, ctx):
    params = {k: eqn.params[k] for k in order}
    return core._pp_eqn(eqn, ctx, params, order)
  return pp


def _custom_call_eval(*args, call_jaxpr, **_):
  return core.eval_jaxpr(call_jaxpr, (), *args)


_batched_calls: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _batched_call_jaxpr(call_jaxpr, axis_data, in_batched: tuple):
  """The call jaxpr vmapped with the inputs `in_batched` marks batched at 0 (the others
  unbatched) and every output batched at 0: (jaxpr, consts)."""
  per = _batched_calls.setdefault(call_jaxpr, {})
  key = (axis_data.size, axis_data.name, in_batched)
  if key not in per:
    size = axis_data.size
    in_dims = [0 if b else None for b in in_batched]
    bj, out_dims = batching.batch_jaxpr(call_jaxpr, axis_data, in_dims)

    def fun(*xs):
      outs = core.eval_jaxpr(bj, bj.consts, *xs)
      return [batching.bdim_at_front(o, d, size) for o, d in zip(outs, out_dims)]
    avals = [a.update(shape=(size,) + a.shape) if b else a
             for a, b in zip(call_jaxpr.in_avals, in_batched)]
    per[key] = ad_calls.trace_closed(fun, avals)
  return per[key]


def _vmapped(fn, axis_data, pair: bool, in_axes=0):
  """`fn(*lists)` (-> a pair of lists, or one list) mapped over the arguments as `in_axes`
  says (a prefix of the lists: 0 or None), every result batched at axis 0."""
  def dense(x):  # symbolic zeros cannot be mapped over: materialize them
    if isinstance(x, SymbolicZero):
      return x.instantiate()
    return ad.instantiate_zeros(x) if type(x) is ad.Zero else x

  def mapped(*lists, **static):  # `static` (e.g. fwd's `perturbed`) is not mapped
    def per_example(*ls):
      out = fn(*map(list, ls), **static)
      return tuple(tuple(map(dense, r)) for r in out) if pair else tuple(map(dense, out))
    out = batching.vmap(per_example, in_axes=in_axes, axis_name=axis_data.name)(
        *[tuple(map(dense, l)) for l in lists])
    return tuple(map(list, out)) if pair else list(out)
  return mapped


def _custom_jvp_call_batch(axis_data, vals, dims, *, call_jaxpr, jvp, num_consts, **params):
  """vmap of a custom_jvp call, as JAX batches it: the call jaxpr batched with only the
  batched inputs batched (an unbatched predicate inside stays a cond, not a select that
  runs both branches), and the jvp rule vmapped the same way (primals and their tangents
  share batching) when a derivative asks for it. Every output is batched at 0, so the
  call and the rule agree."""
  in_batched = tuple(d is not None for d in dims)
  vals = [v if d is None else batching.moveaxis(v, d, 0) for v, d in zip(vals, dims)]
  bj, consts = _batched_call_jaxpr(call_jaxpr, axis_data, in_batched)
  arg_axes = tuple(0 if b else None for b in in_batched[num_consts:])
  rule = _Rule(_vmapped(jvp, axis_data, True, in_axes=(arg_axes, arg_axes)), jvp.name)
  outs = custom_jvp_call_p.bind(*consts, *vals, call_jaxpr=bj, jvp=rule,
                                num_consts=len(consts) + num_consts, **params)
  return outs, [0] * len(outs)


def _custom_vjp_call_batch(axis_data, vals, dims, *, call_jaxpr, fwd, bwd, num_consts,
                           **params):
  """vmap of a custom_vjp call: one call of the batched function whose fwd and bwd are
  vmapped (everything batched at axis 0), so vmap keeps the custom derivative."""
  vals = [batching.bdim_at_front(v, d, axis_data.size) for v, d in zip(vals, dims)]
  bj, consts = _batched_call_jaxpr(call_jaxpr, axis_data, (True,) * len(vals))
  outs = custom_vjp_call_p.bind(
      *consts, *vals, call_jaxpr=bj, fwd=_Rule(_vmapped(fwd, axis_data, True), fwd.name),
      bwd=_Rule(_vmapped(bwd, axis_data, False), bwd.name),
      num_consts=len(consts) + num_consts, **params)
  return outs, [0] * len(outs)


def _custom_call_lower(ctx, *args, call_jaxpr, name, **_):
  return ctx.call(call_jaxpr, name, args)


custom_jvp_call_p = declare("custom_jvp_call", lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals,
                            multiple_results=True)
custom_jvp_call_p.eval_rule = _custom_call_eval
custom_jvp_call_p.pp_rule = _custom_call_pp(["name", "call_jaxpr", "jvp", "symbolic_zeros"])
custom_jvp_call_p.batch = _custom_jvp_call_batch
custom_jvp_call_p.lower = _custom_call_lower


def _custom_jvp_call_jvp(primals, tangents, *, call_jaxpr, jvp, num_consts, symbolic_zeros,
                         name):
  args = primals[num_consts:]
  if symbolic_zeros:  # the rule sees SymbolicZero for zero tangents, and may return them
    t_args = [SymbolicZero(t.aval) if type(t) is ad.Zero else t for t in tangents[num_consts:]]
  else:
    t_args = [ad.instantiate_zeros(t) for t in tangents[num_consts:]]
  p_out, t_out = jvp(args, t_args)
  return p_out, [ad.Zero(ad.tangent_aval(t.aval)) if isinstance(t, SymbolicZero) else t
                 for t in t_out]


custom_jvp_call_p.jvp = _custom_jvp_call_jvp


class _CallJaxpr:
  """A call jaxpr as a function, with JAX's `lu.WrappedFun` spelling `call_wrapped`."""
  def __init__(self, jaxpr):
    self.jaxpr = jaxpr

  def call_wrapped(self, *args):
    return core.eval_jaxpr(self.jaxpr, (), *args)

  __call__ = call_wrapped


def _custom_jvp_get_bind_params(params) -> dict:
  """JAX's form: the params with `subfuns = (call, jvp)`, the call as a function that
  interpreters of jaxprs (equinox's finalise_jaxpr) run directly. Binding again with these
  params ignores `subfuns` (the call jaxpr is still among them)."""
  return {**params, "subfuns": (_CallJaxpr(params["call_jaxpr"]), params["jvp"])}


def _custom_jvp_bind(*args, subfuns=None, **params):
  return core.Primitive.bind(custom_jvp_call_p, *args, **params)


custom_jvp_call_p.get_bind_params = _custom_jvp_get_bind_params
custom_jvp_call_p.bind = _custom_jvp_bind


def forward_def_attr(self, name: str):
  """JAX's attribute forwarding of the custom_* wrappers: `defjvp`, `defvjp`, `def_vmap`
  of the function wrapped (`custom_vjp(custom_vmap(f)).def_vmap`); nothing else."""
  fun = self.__dict__.get("fun")
  if name.startswith("def") and fun is not None:
    return getattr(fun, name)
  raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


class custom_jvp:
  """A function with a custom JVP rule (`@custom_jvp`, then `f.defjvp(rule)` where
  `rule(primals, tangents) -> (primal_out, tangent_out)`, or `f.defjvps(*per_arg_rules)`)."""

  __getattr__ = forward_def_attr

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.jvp = None
    self.symbolic_zeros = False

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
    self.jvp = jvp
    self.symbolic_zeros = symbolic_zeros
    return jvp

  def defjvps(self, *jvps: Callable | None) -> None:
    """One rule per argument, `rule(g, ans, *primals)` -> that argument's tangent term."""
    if self.nondiff_argnums:
      raise TypeError("Can't use ``defjvps`` with ``nondiff_argnums``.")

    def jvp(primals, tangents):
      primal_out = self(*primals)
      zeros = tree_util.tree_map(lambda x: np.zeros(core.get_aval(x).shape,
                                                    core.get_aval(x).dtype), primal_out)
      terms = [rule(t, primal_out, *primals) if rule else zeros
               for t, rule in zip(tangents, jvps)]
      tangent_out = tree_util.tree_map(lambda *ts: functools.reduce(lax_add, ts), *terms) \
          if terms else zeros
      return primal_out, tangent_out
    self.defjvp(jvp)

  def __call__(self, *args, **kwargs):
    if self.jvp is None:
      raise AttributeError(f"No JVP defined for custom_jvp function {_fun_name(self.fun)} "
                           "using defjvp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nondiff, dyn, merge = _split_nondiff(args, self.nondiff_argnums, False)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    trace = core.find_top_trace(leaves)
    if trace.main.level == 0:   # no trace above: the function itself
      return self.fun(*merge(dyn))
    call = _JvpCall(self, nondiff, merge, in_tree)
    outs = _bind_custom(call, leaves, trace)
    return tree_util.tree_unflatten(call.out_tree, outs)


class _JvpCall(_UserCall):
  """A call of a custom_jvp function: `fun` runs it, `rule(primals, tangents)` its rule
  (flat lists in, flat lists out, checked as JAX checks them)."""
  prim = custom_jvp_call_p

  def __init__(self, custom: custom_jvp, nondiff, merge, in_tree):
    super().__init__(custom, nondiff, merge, in_tree)
    self.jvp_rule = _Rule(self.rule, _fun_name(custom.jvp))

  def rule_params(self) -> dict:
    return {"jvp": self.jvp_rule}

  def rule(self, primals, tangents):
    p = tree_util.tree_unflatten(self.in_tree, primals)
    t = tree_util.tree_unflatten(self.in_tree, tangents)
    out = self.custom.jvp(*self.nondiff, tuple(p), tuple(t))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom JVP rule must produce a pair (list or tuple of length two) "
                      f"representing primal and tangent outputs, but got {out!r}.")
    p_leaves, p_tree = tree_util.tree_flatten(out[0])
    t_leaves, t_tree = tree_util.tree_flatten(
        out[1], is_leaf=lambda v: isinstance(v, SymbolicZero))
    if self.out_tree is not None and p_tree != self.out_tree:
      raise TypeError(f"Custom JVP rule must produce primal outputs with the same container "
                      f"(pytree) structure as the function {self.name}, but got {p_tree} and "
                      f"{self.out_tree} respectively.")
    if t_tree != p_tree:
      raise TypeError("Custom JVP rule must produce primal and tangent outputs with equal "
                      f"container (pytree) structures, but got {p_tree} and {t_tree} "
                      "respectively.")
    _check_tangents(self.jvp_rule.name, p_leaves, t_leaves)
    self.out_tree = p_tree
    return p_leaves, t_leaves


_JvpCall.batched_cls = _BatchedJvpCall

# lax's `add`, which sums the per-argument terms of `defjvps` rules. It binds a primitive,
# a layer above transforms: primitives/elementwise/arithmetic.py registers it here at its import.
lax_add: Callable | None = None


# ------------------------------------------------------------------------------------
# custom_vjp
# ------------------------------------------------------------------------------------


def _custom_lin_abstract_eval(*avals, num_res, bwd, out_avals, symbolic_zeros):
  return list(out_avals)


def _custom_lin_forward_error(*args, **params):
  raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.")


custom_lin_p = declare("custom_lin", _custom_lin_abstract_eval, multiple_results=True)
custom_lin_p.eval_rule = _custom_lin_forward_error
custom_lin_p.jvp = lambda primals, tangents, **params: _custom_lin_forward_error()


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, symbolic_zeros):
  res = args[:num_res]
  # zero cotangents reach the rule as SymbolicZero (a vmapped rule tells an output nobody
  # uses from one shared by the batch); the user's bwd sees them only with symbolic_zeros
  cts = [SymbolicZero(c.aval) if type(c) is ad.Zero else c for c in cts]
  cts_in = bwd(res, cts)
  # a None from the user's bwd is a zero cotangent (its input still reached, as in JAX)
  return [None] * num_res + [ad.Zero(ad.tangent_aval(x.aval)) if c is None and
                             ad.is_undefined_primal(x) else c
                             for x, c in zip(args[num_res:], cts_in)]


custom_lin_p.transpose = _custom_lin_transpose
custom_lin_p.transpose_zero_cotangents = True   # bwd runs for zero cotangents too (JAX's)

custom_vjp_call_p = declare("custom_vjp_call", lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals,
                            multiple_results=True)
custom_vjp_call_p.eval_rule = _custom_call_eval
custom_vjp_call_p.pp_rule = _custom_call_pp(["name", "bwd", "call_jaxpr", "fwd", "symbolic_zeros"])
custom_vjp_call_p.batch = _custom_vjp_call_batch
custom_vjp_call_p.lower = _custom_call_lower


def _custom_vjp_call_jvp(primals, tangents, *, call_jaxpr, fwd, bwd, num_consts,
                         symbolic_zeros, name):
  args = primals[num_consts:]
  t_args = tangents[num_consts:]
  if symbolic_zeros:  # fwd sees CustomVJPPrimal(value, perturbed) leaves
    out, res = fwd(args, perturbed=[type(t) is not ad.Zero for t in t_args])
  else:
    out, res = fwd(args)
  if all(type(t) is ad.Zero for t in t_args):
    return out, [ad.Zero.from_value(o) for o in out]
  out_avals = tuple(ad.tangent_aval(core.get_aval(o)) for o in out)
  t_out = custom_lin_p.bind(*res, *map(ad.instantiate_zeros, t_args), num_res=len(res),
                            bwd=bwd, out_avals=out_avals, symbolic_zeros=symbolic_zeros)
  return out, t_out


custom_vjp_call_p.jvp = _custom_vjp_call_jvp


class custom_vjp:
  """A function with a custom VJP: `f.defvjp(fwd, bwd)` where `fwd(*args) -> (out, res)`
  and `bwd(res, ct) -> tuple of cotangents, one per (non-nondiff) argument`."""

  __getattr__ = forward_def_attr

  def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.nondiff_argnums = tuple(nondiff_argnums)
    self.fwd = self.bwd = None
    self.symbolic_zeros = False

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
             optimize_remat: bool = False) -> None:
    """`fwd(*args) -> (out, residuals)`, `bwd(residuals, ct) -> one cotangent per arg`.

    symbolic_zeros=True: fwd's argument leaves are `CustomVJPPrimal(value, perturbed)`
    (perturbed: whether that input's tangent is nonzero), and bwd may receive
    `SymbolicZero` cotangents and return None or SymbolicZero for zero ones.
    optimize_remat (JAX: re-derive residuals under remat) is accepted; ember's remat
    recomputes the fwd rule as it is, with the same values."""
    self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

  def __call__(self, *args, **kwargs):
    if self.fwd is None:
      raise AttributeError(f"No VJP defined for custom_vjp function {_fun_name(self.fun)} "
                           "using defvjp.")
    args = _resolve_kwargs(self.fun, args, kwargs)
    nondiff, dyn, merge = _split_nondiff(args, self.nondiff_argnums, True)
    leaves, in_tree = tree_util.tree_flatten(dyn)
    trace = core.find_top_trace(leaves)
    if trace.main.level == 0:   # no trace above: the function itself
      return self.fun(*args)
    call = _VjpCall(self, nondiff, dyn, merge, in_tree)
    outs = _bind_custom(call, leaves, trace)
    return tree_util.tree_unflatten(call.out_tree, outs)


class _VjpCall(_UserCall):
  """A call of a custom_vjp function: `fun` runs it, `fwd(primals, perturbed)` its fwd rule
  (-> primal outs, residuals), `bwd(residuals, cts)` its bwd rule (-> one cotangent per
  input leaf, Zero for none), on flat lists, checked as JAX checks them. `dyn`: the
  differentiable arguments (their structure and types check bwd's output)."""
  prim = custom_vjp_call_p

  def __init__(self, custom: custom_vjp, nondiff, dyn, merge, in_tree):
    super().__init__(custom, nondiff, merge, in_tree)
    self.dyn, self.res_tree = dyn, None
    self.fwd_rule = _Rule(self.fwd, _fun_name(custom.fwd))
    self.bwd_rule = _Rule(self.bwd, _fun_name(custom.bwd))

  def rule_params(self) -> dict:
    return {"fwd": self.fwd_rule, "bwd": self.bwd_rule}

  def fwd(self, primals, perturbed=None):
    if perturbed is not None:
      primals = [CustomVJPPrimal(p, bool(z)) for p, z in zip(primals, perturbed)]
    fwd, name = self.custom.fwd, self.name
    out = fwd(*self.merge(tree_util.tree_unflatten(self.in_tree, primals)))
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise TypeError(f"Custom VJP fwd rule {_fun_name(fwd)} for function {name} must "
                      "produce a pair (list or tuple of length two) where the first element "
                      "represents the primal output (equal to the output of the "
                      f"custom_vjp-decorated function {name}) and the second element "
                      f"represents residuals (i.e. values stored from the forward pass for "
                      f"use on the backward pass), but instead the fwd rule output's type "
                      f"was {type(out).__name__}.")
    p_leaves, p_tree = tree_util.tree_flatten(out[0])
    if self.out_tree is not None and p_tree != self.out_tree:
      raise TypeError(f"Custom VJP fwd rule {_fun_name(fwd)} for function {name} must "
                      f"produce a pair where the first element represents the primal output "
                      f"(equal to the output of the custom_vjp-decorated function {name}), "
                      f"but the fwd rule's primal output structure {p_tree} differs from "
                      f"the function's {self.out_tree}.")
    self.out_tree = p_tree
    res_leaves, self.res_tree = tree_util.tree_flatten(out[1])
    return p_leaves, res_leaves

  def bwd(self, res, cts) -> list:
    if not self.symbolic_zeros:
      cts = [c.instantiate() if isinstance(c, SymbolicZero) else c for c in cts]
    res = tree_util.tree_unflatten(self.res_tree, res)
    ct = tree_util.tree_unflatten(self.out_tree, cts)
    cts_in = self.custom.bwd(*self.nondiff, res, ct)
    dyn, name = self.dyn, self.name
    if not isinstance(cts_in, (tuple, list)):
      raise TypeError(f"Custom VJP bwd rule must produce a tuple, got "
                      f"{type(cts_in).__name__} (for function {name}).")
    if len(cts_in) != len(dyn):
      raise TypeError("Custom VJP bwd rule must produce an output with the same container "
                      "(pytree) structure as the args tuple of the primal function, and in "
                      "particular must produce a tuple of length equal to the number of "
                      "arguments to the primal function, but got bwd output structure "
                      f"{tree_util.tree_structure(tuple(cts_in))} for primal input structure "
                      f"{tree_util.tree_structure(tuple(dyn))}.")
    out = []
    for ct_i, x in zip(cts_in, dyn):
      x_leaves = tree_util.tree_leaves(x)
      cts = _bwd_cts_for_argument(ct_i, x)
      out += [ad.Zero(ad.tangent_aval(core.get_aval(v)))
              if c is None or isinstance(c, SymbolicZero)
              or ad.tangent_aval(core.get_aval(v)).dtype == dtypes.float0 else c
              for c, v in zip(cts, x_leaves)]
    return out


_VjpCall.batched_cls = _BatchedVjpCall

def _bwd_cts_for_argument(ct, x) -> list:
  """The cotangents a bwd rule gave for one primal argument `x`, one per leaf of `x`. As in
  JAX, `ct` is a tree prefix of `x`: a None (or SymbolicZero) stands for zeros of the
  whole subtree below it, and any other leaf is used for each leaf of its subtree (none
  when that subtree is empty, e.g. a None argument)."""
  out = []

  def put(c, sub):
    out.extend([c] * len(tree_util.tree_leaves(sub)))
    return c
  try:
    tree_util.tree_map(put, ct, x, is_leaf=lambda v: v is None or isinstance(v, SymbolicZero))
  except ValueError:
    raise TypeError(f"Custom VJP bwd rule must produce an output with the same container "
                    f"(pytree) structure as the args tuple of the primal function, got "
                    f"{tree_util.tree_structure(ct)} for an argument of structure "
                    f"{tree_util.tree_structure(x)}.") from None
  return out


# ------------------------------------------------------------------------------------
# The rest of jax.custom_derivatives' surface
# ------------------------------------------------------------------------------------


class SymbolicZero:
  """A symbolic zero tangent, as handed to rules defined with symbolic_zeros=True; its
  other attributes (shape, dtype, ndim, ...) are its aval's."""

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return "SymbolicZero"

  def __getattr__(self, name):
    if name == "aval":  # not set yet (e.g. while unpickling)
      raise AttributeError(name)
    return getattr(self.aval, name)

  @staticmethod
  def from_primal_value(val) -> "SymbolicZero":
    return SymbolicZero(ad.tangent_aval(core.get_aval(val)))

  def instantiate(self):
    return ad.zeros_like_aval(self.aval)


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
  """A primal argument of a custom_vjp's fwd rule when symbolic_zeros is set: its
  value, and whether it is perturbed (has a nonzero tangent)."""
  value: Any
  perturbed: bool


def custom_vjp_primal_tree_values(tree):
  """`tree` with each CustomVJPPrimal leaf replaced by its value."""
  def value(leaf):
    if type(leaf) is not CustomVJPPrimal:
      raise TypeError(f"unexpected leaf type {type(leaf)}")
    return leaf.value
  return tree_util.tree_map(value, tree)


def zero_from_primal(val, symbolic_zeros: bool = False):
  return tree_util.tree_map(
      lambda x: SymbolicZero(ad.tangent_aval(core.get_aval(x))) if symbolic_zeros
      else ad.zeros_like_aval(ad.tangent_aval(core.get_aval(x))), val)


def closure_convert(fun: Callable, *example_args):
  """(converted, consts): `converted(*args, *consts)` is `fun(*args)` with the arrays it
  closes over (including traced ones) passed explicitly."""
  leaves, in_tree = tree_util.tree_flatten(example_args)
  store = {}

  def flat(*xs):
    out = fun(*tree_util.tree_unflatten(in_tree, xs))
    out_leaves, store["out_tree"] = tree_util.tree_flatten(out)
    return out_leaves, None
  closed, _ = core.trace_to_jaxpr(flat, [core.get_aval(x) for x in leaves])
  jaxpr, consts = core.hoist_consts(closed)
  n = len(consts)

  def converted(*args):
    args_leaves = tree_util.tree_leaves(args[:len(args) - n])
    outs = core.eval_jaxpr(jaxpr, (), *args[len(args) - n:], *args_leaves)
    return tree_util.tree_unflatten(store["out_tree"], outs)
  return converted, list(consts)


def custom_gradient(fun: Callable) -> Callable:
  """`fun(*args) -> (output, vjp_fn)`; the result computes `output` and differentiates
  with `vjp_fn(ct) -> tuple of cotangents` (a custom_vjp whose residuals are the values
  `vjp_fn` closes over, found by tracing it)."""
  @functools.wraps(fun, updated=())
  def primal(*args):
    return fun(*args)[0]
  wrapped = custom_vjp(primal)

  def fwd(*args):
    ans, rule = fun(*args)
    ct_leaves, ct_tree = tree_util.tree_flatten(ans)
    store = {}

    def flat_rule(*cts):
      out = rule(tree_util.tree_unflatten(ct_tree, cts))
      leaves, store["tree"] = tree_util.tree_flatten(tuple(out) if isinstance(out, list) else out)
      return leaves, None
    closed, _ = core.trace_to_jaxpr(flat_rule, [core.get_aval(x) for x in ct_leaves])
    jaxpr, consts = core.hoist_consts(closed)
    return ans, (list(consts), _Static((jaxpr, store["tree"])))

  def bwd(res, ct):
    consts, static = res
    jaxpr, out_tree = static.value
    outs = core.eval_jaxpr(jaxpr, (), *consts, *tree_util.tree_leaves(ct))
    return tuple(tree_util.tree_unflatten(out_tree, outs))
  wrapped.defvjp(fwd, bwd)
  return wrapped


class _Static:
  """A non-array residual: a pytree node with no leaves (it travels as aux data)."""
  __slots__ = ("value",)

  def __init__(self, value):
    self.value = value


tree_util.register_pytree_node(_Static, lambda s: ((), s), lambda s, _: s)

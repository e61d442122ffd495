"""jit and make_jaxpr: stage a Python function into a jaxpr.

`jit` is a higher-order primitive: inside a trace, calling a jitted function stages ONE
`jit` equation that carries the function's sub-jaxpr (`params["name"]` is its name). At
the top level, a call traces the function and runs its jaxpr through `jit_p.eval_rule`,
the reference interpreter. The compiler replaces that rule with compiled code; nothing
else here needs to change.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, NamedTuple, Sequence

from ember._src import core, tree_util
from ember._src.config import config
from ember._src.stages import Lowered, Staged, Traced
from ember._src.core import Jaxpr

# --- the jit primitive --------------------------------------------------------------------

jit_p = core.Primitive("jit", multiple_results=True)
jit_p.abstract_eval = lambda *avals, jaxpr, **_: jaxpr.out_avals


def _jit_eval(*args, jaxpr: Jaxpr, name: str, **_):
  """A top-level jitted call: compile the jaxpr once (cached per jaxpr) and run it."""
  if config.read("jax_disable_jit") or config.read("ember_jit_backend") == "interpreter":
    return core.eval_jaxpr(jaxpr, jaxpr.consts, *args)
  from ember._src.stages import compiled_for_jaxpr
  return compiled_for_jaxpr(jaxpr, name).run(args)


jit_p.eval_rule = _jit_eval


def _jit_pp(eqn, ctx):
  """JAX's printing of a jit eqn: name first, default params hidden, and the sub-jaxpr's
  variables named after the outer variables bound to them."""
  params = dict(eqn.params)
  del params["inline"]
  if not any(params["donated_invars"]):
    del params["donated_invars"]
  if not params["keep_unused"]:
    del params["keep_unused"]
  if id(params["jaxpr"]) not in ctx.shared:
    ctx.suggest_same_names(params["jaxpr"].invars, eqn.invars)
    ctx.suggest_same_names(params["jaxpr"].outvars, eqn.outvars)
  return core._pp_eqn(eqn, ctx, params, ["name"] + sorted(k for k in params if k != "name"))


jit_p.pp_rule = _jit_pp


# --- argument handling shared by jit and make_jaxpr ---------------------------------------

def _normalize_static(fun, static_argnums, static_argnames):
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  if isinstance(static_argnames, str):
    static_argnames = (static_argnames,)
  static_argnums = tuple(static_argnums or ())
  static_argnames = tuple(static_argnames or ())
  try:
    sig = inspect.signature(fun)
  except (TypeError, ValueError):
    return static_argnums, static_argnames
  params = list(sig.parameters.values())
  positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  for n in static_argnums:  # name the positional static args too, so keywords find them
    if -len(positional) <= n < len(positional) and positional[n] not in static_argnames:
      static_argnames += (positional[n],)
  for name in static_argnames:  # ... and vice versa
    if name in positional and positional.index(name) not in static_argnums:
      static_argnums += (positional.index(name),)
  return static_argnums, static_argnames


def _split_static(args, kwargs, static_argnums, static_argnames):
  """(dynamic args, dynamic kwargs, static values) for one call."""
  n = len(args)
  snums = {i % n for i in static_argnums if -n <= i < n}
  dyn_args = tuple(a for i, a in enumerate(args) if i not in snums)
  statics = tuple((i, args[i]) for i in sorted(snums))
  dyn_kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
  statics += tuple((k, kwargs[k]) for k in sorted(kwargs) if k in static_argnames)
  return dyn_args, dyn_kwargs, statics


def _rebuild_call(fun, args, kwargs, static_argnums, static_argnames, statics):
  """A flat function of the dynamic leaves that calls `fun` with statics put back."""
  n = len(args) + sum(1 for k, _ in statics if isinstance(k, int))
  static_pos = {k: v for k, v in statics if isinstance(k, int)}
  static_kw = {k: v for k, v in statics if isinstance(k, str)}
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))

  def flat_fun(*flat):
    dyn_args, dyn_kwargs = in_tree.unflatten(flat)
    it = iter(dyn_args)
    full = [static_pos[i] if i in static_pos else next(it) for i in range(n)]
    out = fun(*full, **dyn_kwargs, **static_kw)
    out_leaves, out_tree = tree_util.tree_flatten(out)
    for leaf in out_leaves:
      if not core.is_arraylike(leaf):
        raise TypeError(f"{getattr(fun, '__name__', 'function')} returned a value of type "
                        f"{type(leaf).__name__} ({leaf!r}), which is not a valid ember "
                        "type; transformed functions must return arrays or pytrees of arrays.")
    return out_leaves, out_tree
  return flat_fun, leaves, in_tree


def _check_hashable(statics, fname):
  for k, v in statics:
    try:
      hash(v)
    except TypeError as e:
      which = f"static argument {k}" if isinstance(k, int) else f"static argument {k!r}"
      raise TypeError(
          f"Non-hashable static arguments are not supported: {which} of {fname} is of type "
          f"{type(v).__name__}, which is unhashable ({e}). Static arguments are part of the "
          "cache key: pass a hashable value (a tuple instead of a list), or pass arrays as "
          "ordinary (non-static) arguments.") from None


def _trace_flat(fun, args, kwargs, static_argnums, static_argnames, traced_for):
  dyn_args, dyn_kwargs, statics = _split_static(args, kwargs, static_argnums, static_argnames)
  flat_fun, leaves, in_tree = _rebuild_call(fun, dyn_args, dyn_kwargs, static_argnums,
                                            static_argnames, statics)
  in_avals = [core.get_aval(x) for x in leaves]
  dbg = core.debug_info(traced_for, fun, args, kwargs, static_argnums, static_argnames)
  jaxpr, out_tree = core.trace_to_jaxpr(flat_fun, in_avals, dbg)
  return jaxpr, out_tree, leaves, statics


# --- make_jaxpr -----------------------------------------------------------------------------

def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False, axis_env=None, abstracted_axes=None):
  """`make_jaxpr(f)(*args)` returns the closed jaxpr of `f` at the types of `args`."""
  if not callable(fun):
    raise TypeError(f"make_jaxpr expects a callable, got {type(fun).__name__}")
  snums, snames = _normalize_static(fun, static_argnums, ())

  @functools.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    jaxpr, out_tree, _, _ = _trace_flat(fun, args, kwargs, snums, snames, "make_jaxpr")
    if return_shape:
      from ember._src.api_util import ShapeDtypeStruct
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in jaxpr.out_avals]
      return jaxpr, out_tree.unflatten(shapes)
    return jaxpr

  make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
  return make_jaxpr_f


# --- jit ------------------------------------------------------------------------------------

class TraceKey(NamedTuple):
  """What a traced jaxpr depends on (the full signature cache comes with the runtime)."""
  in_tree: Any
  in_avals: tuple
  statics: tuple
  x64: bool


class JitWrapped:
  """The object `ember.jit(f)` returns: callable like `f`, plus `.trace(...)`."""

  def __init__(self, fun, static_argnums=(), static_argnames=(), donate_argnums=(),
               donate_argnames=(), keep_unused=False, inline=False):
    if not callable(fun):
      raise TypeError(f"jit expects a callable, got {type(fun).__name__}: {fun!r}")
    self.fun = fun
    self.static_argnums, self.static_argnames = _normalize_static(fun, static_argnums, static_argnames)
    self.donate_argnums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums or ())
    self.donate_argnames = (donate_argnames,) if isinstance(donate_argnames, str) else tuple(donate_argnames or ())
    self.keep_unused, self.inline = keep_unused, inline
    self._cache: dict[TraceKey, Staged] = {}
    self.__name__ = getattr(fun, "__name__", type(fun).__name__)
    functools.update_wrapper(self, fun)

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return functools.partial(self, obj)

  def _staged(self, args, kwargs) -> tuple[Staged, list]:
    """The staged signature of this call and its flat dynamic arguments, reusing an
    earlier trace of the same signature when its constants are concrete."""
    dyn_args, dyn_kwargs, statics = _split_static(args, kwargs, self.static_argnums,
                                                  self.static_argnames)
    _check_hashable(statics, self.__name__)
    leaves, in_tree = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    key = TraceKey(in_tree, tuple(core.get_aval(x) for x in leaves), statics,
                   config.values()["jax_enable_x64"])
    staged = self._cache.get(key)
    if staged is not None:
      return staged, leaves
    closed, out_tree, leaves, _ = _trace_flat(self.fun, args, kwargs, self.static_argnums,
                                              self.static_argnames, "jit")
    jaxpr, consts = core.hoist_consts(closed)
    names = closed.debug_info.arg_names if closed.debug_info else None
    arg_names = ("const",) * len(consts) + tuple(names or ("arg",) * len(leaves))
    staged = Staged(jaxpr, consts, in_tree, out_tree, self.__name__, arg_names, closed)
    if not any(isinstance(c, core.Tracer) for c in consts):
      self._cache[key] = staged
    return staged, leaves

  def trace(self, *args, **kwargs) -> Traced:
    return Traced(self._staged(args, kwargs)[0])

  def lower(self, *args, **kwargs) -> Lowered:
    return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs):
    return self.trace(*args, **kwargs).out_info

  def __call__(self, *args, **kwargs):
    if config.read("jax_disable_jit"):
      return self.fun(*args, **kwargs)
    staged, leaves = self._staged(args, kwargs)
    donated = (False,) * len(staged.jaxpr.invars)
    outs = jit_p.bind(*staged.consts, *leaves, jaxpr=staged.jaxpr, name=self.__name__,
                      donated_invars=donated, inline=self.inline, keep_unused=self.keep_unused)
    return staged.out_tree.unflatten(outs)

  def __repr__(self):
    return f"<ember.jit({self.__name__})>"


def jit(fun: Callable | None = None, *, static_argnums=(), static_argnames=(),
        donate_argnums=(), donate_argnames=(), keep_unused: bool = False, inline: bool = False,
        **kwargs):
  """Stage `fun` as one jitted computation. Usable as `@jit` or `@jit(static_argnums=...)`."""
  for k in kwargs:
    if k not in ("device", "backend", "in_shardings", "out_shardings", "abstracted_axes",
                 "compiler_options"):
      raise TypeError(f"jit() got an unexpected keyword argument {k!r}")
  opts = dict(static_argnums=static_argnums, static_argnames=static_argnames,
              donate_argnums=donate_argnums, donate_argnames=donate_argnames,
              keep_unused=keep_unused, inline=inline)
  if fun is None:
    return lambda f: JitWrapped(f, **opts)
  return JitWrapped(fun, **opts)


# --- lowering: a nested jit is a `call` (one computation per sub-jaxpr; the inline pass
# replaces calls by their bodies) -----------------------------------------------------------

jit_p.lower = lambda ctx, *args, jaxpr, name, **_: ctx.call(jaxpr, name, args)

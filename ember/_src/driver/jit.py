"""jit and make_jaxpr: stage a Python function into a jaxpr.

`jit` is a higher-order primitive: inside a trace, calling a jitted function stages ONE
`jit` equation that carries the function's sub-jaxpr (`params["name"]` is its name).

At the top level, a call looks its signature up (a `CacheKey`) in the cache of the
underlying function (shared by every `jit(f)` of the same `f`); a miss traces (and explains
itself under `jax_explain_cache_misses`), and the first top-level run of an entry lowers
and compiles it (logged under `jax_log_compiles`: one `Compiling jit(...)` record per real
compilation). A hit does only: flatten, build the key, look up, dispatch. Donated Array
arguments are deleted once the call is dispatched (those an output can use: JAX's rule).
A signature whose function takes or touches jax.Refs threads them: their values are extra
inputs and their new values extra outputs, written back after each call (core/refs.py).
"""
from __future__ import annotations

import functools
import inspect
import operator
import os
import threading
import time
import types
import weakref
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

# (eager: imported for its eager hook, which it installs in core)
from ember._src.driver import cache_miss, compilation, eager, pjrt_dispatch  # noqa: F401
from ember._src.driver import execution_checks  # (after eager: it wraps eager's hook when on)
from ember._src import core
from ember._src.base import dtypes, monitoring, profiler_events as _profiler, tree_util
from ember._src.core import api_util, earray, hitypes, refs
from ember._src.core.api_util import Inline, ShapeDtypeStruct, canonical_inline
from ember._src.base.config import TRACE_CONFIG, config
from ember._src.driver.compilation import Lowered, Staged, Traced
from ember._src.core import Jaxpr
from ember._src.core import trace as trace_lib
from ember._src.driver.dispatch import NATIVE_MISS, NUMPY_SCALAR_TYPES
from ember._src.primitives import eager_jit
from ember._src.core.array import Array, PlacedArray, guard_host_arguments
from ember._src.runtime.pjrt_array import PjrtArray
from ember._src.driver.sharding_propagation import constraint_sharding
from ember._src.transforms import ad_calls, batching
from ember._src.transforms import partial_eval as pe

# --- the jit primitive --------------------------------------------------------------------

jit_p = core.Primitive("jit", multiple_results=True)
jit_p.abstract_eval = lambda *avals, jaxpr, **_: jaxpr.out_avals


def _jit_eval(*args, jaxpr: Jaxpr, name: str, donated_invars=(), **_):
  """A top-level jitted call: compile the jaxpr once (cached per jaxpr) and run it."""
  if config.read("jax_disable_jit") or config.read("ember_jit_backend") == "interpreter":
    return core.eval_jaxpr(jaxpr, jaxpr.consts, *args)
  return compilation.compiled_for_jaxpr(jaxpr, name, donated=donated_invars).run(args)


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


def _jit_batch(axis_data, vals, dims, *, jaxpr: Jaxpr, donated_invars=(), **params):
  """A batched nested jit stays one `jit` equation, of the batched sub-jaxpr; outputs
  keep the batch dims the body gives them (unbatched ones stay unbatched)."""
  new_jaxpr, consts, out_dims = batching.batch_jaxpr_hoisted(jaxpr, axis_data, dims)
  donated = (False,) * len(consts) + tuple(donated_invars)
  return jit_p.bind(*consts, *vals, jaxpr=new_jaxpr, donated_invars=donated,
                    **params), out_dims


jit_p.batch = _jit_batch


# --- argument handling shared by jit and make_jaxpr ---------------------------------------

def _normalize_static(fun, static_argnums, static_argnames):
  """(argnums, argnames), each completed from the other where that one is None (not
  given), as JAX does: given both, they are taken as they are (flax's nn.jit passes
  static_argnums for its own leading arguments and static_argnames for the module's)."""
  given_both = static_argnums is not None and static_argnames is not None
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  if isinstance(static_argnames, str):
    static_argnames = (static_argnames,)
  static_argnums = tuple(static_argnums or ())
  static_argnames = tuple(static_argnames or ())
  if given_both:
    return static_argnums, static_argnames
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
    if any(map(refs.is_ref, out_leaves)):
      refs.check_not_returned(out_leaves, "jit", _fun_and_source(fun), leaves,
                              core.debug_info("jit", fun, args, kwargs).arg_names or ())
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
  """(jaxpr, out_tree, leaves, statics, threaded): `threaded` is None, or for a function
  that takes or touches refs (core/refs.py) a `ThreadedRefs`: the jaxpr then takes the
  refs' values (those of the ref arguments at their leaves, the captured ones after the
  leaves) and returns their new values after its outputs (out_tree is then the tree of
  (outputs, [new values])). A ref's value is its flat leaves (one for a ref argument; a
  typed key's is its data)."""
  dyn_args, dyn_kwargs, statics = _split_static(args, kwargs, static_argnums, static_argnames)
  flat_fun, leaves, in_tree = _rebuild_call(fun, dyn_args, dyn_kwargs, static_argnums,
                                            static_argnames, statics)
  dbg = core.debug_info(traced_for, fun, args, kwargs, static_argnums, static_argnames)
  positions = tuple(i for i, x in enumerate(leaves) if refs.is_ref(x))
  if positions:
    names = dbg.arg_names or ("arg",) * len(leaves)
    refs.check_distinct([leaves[i] for i in positions], [names[i] for i in positions],
                        traced_for, _fun_and_source(fun))
  in_avals = [core.get_aval(_ref_leaf(x) if refs.is_ref(x) else x) for x in leaves]
  captured: list = []
  while True:   # again with the refs from outside it touched threaded too, until none is new
    frame = refs.Frame(f"{traced_for} of {_fun_name(fun)}", threads=True)
    threaded = [leaves[i] for i in positions] + captured
    trees = [tree_util.tree_structure(refs.read(r)) for r in threaded]
    extra = [core.get_aval(v) for r in captured for v in tree_util.tree_leaves(refs.read(r))]
    jaxpr, out_tree = core.trace_to_jaxpr(
        _threading(flat_fun, leaves, positions, threaded, trees, frame), in_avals + extra,
        dbg._replace(arg_names=dbg.arg_names and dbg.arg_names + ("ref",) * len(extra)),
        ref_frame=frame)
    new = [r for r in frame.touched() if not any(r is t for t in threaded)]
    if not new:
      break
    captured += new
  if not threaded:
    return jaxpr, out_tree, leaves, statics, None
  n_new = sum(t.num_leaves for t in trees)
  out_tree = tree_util.treedef_tuple([out_tree, tree_util.tree_structure([0] * n_new)])
  return jaxpr, out_tree, leaves, statics, ThreadedRefs(positions, tuple(captured),
                                                        tuple(trees))


class ThreadedRefs(NamedTuple):
  """The refs a traced signature threads: leaf positions of its ref arguments, the refs it
  captured (read or wrote from outside), in the order the jaxpr takes them, and the pytree
  structure of each one's value (ref arguments first)."""
  positions: tuple
  captured: tuple
  trees: tuple


def _ref_leaf(ref):
  """The one flat leaf of a ref argument's value (a typed key's: its data)."""
  value = tree_util.tree_leaves(refs.read(ref))
  if len(value) != 1:
    raise NotImplementedError(
        f"jit: a jax.Ref argument holding {len(value)} arrays is not supported (ember passes "
        "a ref argument holding one array): pass one ref per array")
  return value[0]


def _threading(flat_fun, leaves, positions, threaded, trees, frame):
  """`flat_fun` with `threaded` refs' values as inputs (at `positions`, then after the
  leaves) and their final values as outputs after flat_fun's; the function sees the refs."""
  n = len(leaves)

  def traced(*xs):
    ins = list(xs[:n])
    for i in positions:
      ins[i] = leaves[i]
    rest, values = iter(xs[n:]), [[xs[i]] for i in positions]
    values += [[next(rest) for _ in range(t.num_leaves)] for t in trees[len(positions):]]
    frame.seed(threaded, [t.unflatten(v) for t, v in zip(trees, values)])
    outs, out_tree = flat_fun(*ins)
    new = [tree_util.tree_leaves(frame.value(r)) for r in threaded]
    for r, t, v in zip(threaded, trees, new):
      if len(v) != t.num_leaves:
        raise TypeError(f"a jax.Ref of type {r.aval} was written a value of another "
                        "structure inside jit")
    return list(outs) + [x for v in new for x in v], out_tree
  return traced


# --- make_jaxpr -----------------------------------------------------------------------------

def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               return_shape: bool = False, axis_env=None, abstracted_axes=None):
  """`make_jaxpr(f)(*args)` returns the closed jaxpr of `f` at the types of `args`."""
  if not callable(fun):
    raise TypeError(f"make_jaxpr expects a callable, got {type(fun).__name__}")
  snums, snames = _normalize_static(fun, static_argnums, None)

  @functools.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    jaxpr, out_tree, _, _, threaded = _trace_flat(fun, args, kwargs, snums, snames,
                                                  "make_jaxpr")
    if return_shape:
      shapes = out_tree.unflatten([ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                   for a in jaxpr.out_avals])
      return jaxpr, shapes if threaded is None else shapes[0]   # not the refs' new values
    return jaxpr

  make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
  return make_jaxpr_f


# (aval of an extended dtype, _Abstract) -> a stand-in value of that type whose pytree
# children are _Abstracts (a typed PRNG key over its data), filled by library/random/keys.py
abstract_extended: list = [None]


def eval_shape(fun, *args, **kwargs):
  """The output shapes/dtypes of `fun(*args)` as ShapeDtypeStructs, without computing.
  Typed PRNG keys (arguments, ShapeDtypeStructs of a key dtype, results) are one leaf each,
  as in JAX."""
  leaves, tree = tree_util.public.tree_flatten((args, kwargs))
  stand_ins = [_abstract_arg(x) for x in leaves]

  def flat(*xs):
    a, k = tree.unflatten(xs)
    return fun(*a, **k)
  _, shapes = make_jaxpr(flat, return_shape=True)(*stand_ins)
  return tree_util.public.tree_map(_key_shape, shapes)


def _abstract_arg(x):
  if refs.is_ref(x):   # its value is read, never written back
    return x
  hitype = x if isinstance(x, hitypes.HiType) else hitypes.hitype_of(x)
  if hitype is not None:   # a hi value (or type): its value over stand-ins of its lo values
    return hitype.raise_val(*(_Abstract(a) for a in hitype.lo_ty()))
  aval = x.aval if isinstance(x, ShapeDtypeStruct) else x if isinstance(
      x, core.ShapedArray) else _duck_aval(x)   # an aval itself: flax's eval_shape(conv, *avals)
  if isinstance(aval.dtype, dtypes.ExtendedDType) and abstract_extended[0] is not None:
    return abstract_extended[0](aval, _Abstract)
  return _Abstract(aval)


def _duck_aval(x):
  """The aval of a value, or of any object with `shape` and `dtype` (JAX's eval_shape takes
  those as abstract arguments)."""
  try:
    return core.get_aval(x)
  except TypeError:
    if hasattr(x, "shape") and hasattr(x, "dtype"):
      return core.ShapedArray(tuple(x.shape), x.dtype, weak_type=getattr(x, "weak_type", False))
    raise


def _key_shape(x):
  """A result that is a typed key over a ShapeDtypeStruct: the key's ShapeDtypeStruct; a
  hi value over ShapeDtypeStructs: its hi type (as JAX's eval_shape gives it)."""
  if hitypes.is_hi(x):
    return hitypes.hitype_of(x)
  if type(x) in tree_util._transform_nodes:
    return ShapeDtypeStruct(x.shape, x.dtype)
  return x


class _Abstract:
  """An argument that only has an aval (traced by make_jaxpr, never computed)."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval


# --- jit ------------------------------------------------------------------------------------

class CacheKey(NamedTuple):
  """Everything a traced (and compiled) call signature depends on."""
  fun: int                 # id of the underlying function (the cache is also keyed by it)
  in_tree: Any             # pytree structure of (dynamic args, dynamic kwargs)
  in_avals: tuple          # one (shape, dtype, weak_type) per dynamic leaf
  statics: tuple           # ((position or name, value), ...) of static arguments
  donate: tuple            # (donate_argnums, donate_argnames, keep_unused, inline)
  trace_config: tuple      # config values that change what tracing produces


TraceKey = CacheKey  # the old name

_trace_config = operator.itemgetter(*TRACE_CONFIG)   # config._values -> their values


class _Entry:
  """One cache entry: the staged signature, its compiled computation once a top-level call
  needed it, which flat leaves are donated, and the leaves' names (miss explanations)."""
  __slots__ = ("staged", "compiled", "donated_leaves", "leaf_names", "donate_pos", "cached",
               "hit", "pjrt", "placed", "programs", "plans", "refs")

  def __init__(self, staged, donated_leaves, leaf_names):
    self.staged, self.compiled, self.cached = staged, None, False
    self.donated_leaves, self.leaf_names = donated_leaves, leaf_names
    n_consts = len(staged.consts)
    self.donate_pos = tuple(i + n_consts for i in donated_leaves)  # in the computation's args
    self.hit = None   # flat leaves -> the call's result, once compiled (hit_runner)
    self.pjrt: dict = {}   # PjrtDevice -> its pjrt_dispatch.PjrtComputation
    # whether the body constrains a value over several devices (then calls are partitioned,
    # spmd.call_placed), and the partitioned programs by (mesh, input and output splits)
    self.placed = constraint_sharding(staged.jaxpr) is not None
    self.programs = None
    # placement of the arguments (and mesh in context, config) -> how such calls run
    # (spmd.call_placed's plans)
    self.plans = None
    self.refs: ThreadedRefs | None = None   # the refs its calls thread (_trace_flat)

  def hit_runner(self) -> Callable:
    staged = self.staged
    consts = _const_arrays(staged.consts, staged.jaxpr.invars)
    finish, kind = _finisher(staged)
    self.hit = self.compiled.hit_runner(consts, self.donate_pos, finish, kind)
    return self.hit


def _finisher(staged) -> tuple[Callable[[list], Any], int | None]:
  """The function that makes a call's flat outputs its result, and the native hit's result
  kind (None: no builtin). float0 outputs (the tangents of integers) hold no data: as in
  JAX, a call returns them as NumPy zeros of dtype float0, never as Arrays."""
  unflatten = _unflattener(staged.out_tree)
  float0 = [i for i, v in enumerate(staged.jaxpr.outvars)
            if isinstance(v.aval.dtype, np.dtype) and v.aval.dtype == dtypes.float0]
  extended = [(i, v.aval) for i, v in enumerate(staged.jaxpr.outvars)
              if not isinstance(v.aval.dtype, np.dtype)]
  if not float0 and not extended:
    return unflatten, _result_kind(staged.out_tree)

  def finish(outs):
    outs = list(outs)
    for i in float0:
      outs[i] = np.zeros(np.shape(outs[i]), dtypes.float0)
    for i, aval in extended:   # a user's extended dtype: an EArray over the stored data
      outs[i] = earray.EArray(aval, outs[i])
    return unflatten(outs)
  return finish, None


def _const_arrays(consts: list, invars: list) -> list:
  """A signature's captured constants as the cache hits pass them: each NumPy value as an
  Array, made once (a NumPy argument sends every call down the asynchronous path, ~16 us
  instead of ~2; only Arrays run inline or natively), of the dtype the trace gave it (int64
  is int32 without x64). A writable one is copied: the trace saw its value then, which JAX
  embeds in the program, and the caller's array stays writable."""
  def as_array(c, var):
    if not isinstance(c, (np.ndarray, np.generic)):
      return c
    value = np.asarray(c, var.aval.dtype)
    if value is c and c.flags.writeable:
      value = c.copy()
    return Array(value, var.aval.weak_type)
  return [as_array(c, v) for c, v in zip(consts, invars)]


# The signature cache, keyed by the underlying function (weakly where it can be), so that
# `jit(f)` re-created in a loop hits the entries of earlier `jit(f)` wrappers.
_caches: "weakref.WeakKeyDictionary[Callable, dict]" = weakref.WeakKeyDictionary()
_strong_caches: dict = {}   # functions that cannot be weakly referenced
# Tracing uses global state (the trace stack): one thread traces and compiles at a time.
_lock = threading.RLock()
_wrappers: "weakref.WeakSet[PjitFunction]" = weakref.WeakSet()   # their _fast caches


def _cache_for(fun) -> dict:
  with _lock:
    try:
      return _caches.setdefault(fun, {})
    except TypeError:  # not weakly referenceable (or unhashable)
      return _strong_caches.setdefault(id(fun), (fun, {}))[1]


def clear_caches() -> None:
  """Forget every traced and compiled jit signature (`jax.clear_caches`)."""
  with _lock:
    for c in list(_caches.values()):
      c.clear()
    for _, c in _strong_caches.values():
      c.clear()
    for w in list(_wrappers):
      w._fast.clear()
      w._native, w._native_tries = None, NATIVE_TRIES
    compilation._executables.clear()
    compilation._compiled_by_jaxpr.clear()
    cache_miss._seen_locations.clear()


def _drop_natives_after_fork() -> None:
  # the child's executables have new frame locks, which their builtins' guards do not know:
  # make them again from the child's next hits
  for w in list(_wrappers):
    w._native, w._native_tries = None, NATIVE_TRIES


os.register_at_fork(after_in_child=_drop_natives_after_fork)


def _donated_leaves(args, kwargs, donate_argnums, donate_argnames, static_argnums) -> tuple:
  """Indices of the flat dynamic leaves that belong to donated arguments; a typed key's data
  never does (JAX donates no key: neither deleted nor reported unusable)."""
  if not donate_argnums and not donate_argnames:
    return ()
  n = len(args)
  snums = {i % n for i in static_argnums if -n <= i < n}
  dnums = {i % n for i in donate_argnums if -n <= i < n}

  def flags(tree, donated: bool):   # a key, one leaf to users, is its one data leaf here
    return tree_util.public.tree_map(
        lambda x: donated and type(x) not in tree_util._transform_nodes, tree)
  pos = [flags(a, i in dnums) for i, a in enumerate(args) if i not in snums]
  kw = {k: flags(v, k in donate_argnames) for k, v in kwargs.items()}
  leaves = tree_util.tree_leaves((pos, kw))
  return tuple(i for i, d in enumerate(leaves) if d)


def _compile(entry: _Entry) -> Any:
  """Lower and compile a cache entry (a real compilation, logged: compilation.compile_staged),
  unless `jit(f).lower(...).compile()` already compiled it with the same flags."""
  entry.compiled = comp = compilation.compile_staged(entry.staged)
  return comp


class PjitFunction:
  """The object `ember.jit(f)` returns: callable like `f`, plus `.trace(...)`. Named, printed
  and bound to instances as JAX's jitted functions (`<PjitFunction of <function f ...>>`, a
  bound method): libraries recognise a jitted function by its type's name or its repr (chex's
  assert_max_traces refuses to wrap one)."""

  def __init__(self, fun, static_argnums=None, static_argnames=None, donate_argnums=None,
               donate_argnames=None, keep_unused=False, inline=False, in_shardings=None,
               out_shardings=None):
    if not callable(fun):
      raise TypeError(f"jit expects a callable, got {type(fun).__name__}: {fun!r}")
    self.fun = fun
    self.static_argnums, self.static_argnames = _normalize_static(fun, static_argnums, static_argnames)
    self.donate_argnums, self.donate_argnames = _normalize_static(fun, donate_argnums, donate_argnames)
    overlap = set(self.donate_argnames) & set(self.static_argnames)
    if overlap:
      raise ValueError(f"jit: arguments {sorted(overlap)} of {getattr(fun, '__name__', fun)} "
                       "are both static and donated; static arguments cannot be donated.")
    # JAX_EARLY: a nested call's equations go straight into the caller's jaxpr
    self._inline_early = inline is Inline.JAX_EARLY
    inline = canonical_inline(inline)
    self.keep_unused, self.inline = keep_unused, inline
    # (in_shardings, out_shardings), None when neither is given: calls then run where
    # their committed arguments are (spmd.call_placed), never through the hit path
    self._shardings = (None if in_shardings is None and out_shardings is None
                       else (in_shardings, out_shardings))
    self._donate = (self.donate_argnums, self.donate_argnames, keep_unused, inline)
    self._cache: dict[CacheKey, _Entry] = _cache_for(fun)
    # The hit path's cache: a flat tuple of the arguments' structure, leaf types and trace
    # config -> the hit runner of the compiled entry of self._cache it stands for (see
    # _fast_key, _Entry.hit_runner).
    self._fast: dict[tuple, Callable] = {}
    # One signature's hits as a builtin (dispatch.hit_runner's `native`), tried first on
    # every call with positional arguments only; made from the first hits of the latest
    # signature compiled (`_native_tries` of them: the executable's prologue is made by
    # the first call that runs inline)
    self._native: Callable | None = None
    self._native_tries = NATIVE_TRIES
    self._has_static = bool(self.static_argnums or self.static_argnames)
    _wrappers.add(self)
    functools.update_wrapper(self, fun, updated=())  # not __dict__: a wrapped custom_jvp's
    # fun (or another jit's cache) would replace ours
    self.__name__ = _fun_name(fun)

  def __getattr__(self, name):
    """The attributes the user set on the jitted function (`f.attr = 1`), as JAX's jit
    copies its __dict__: looked up there, never copied over this object's state."""
    fun = self.__dict__.get("fun") if not name.startswith("__") else None
    attrs = api_util._user_attrs(fun) if fun is not None else {}
    if name in attrs:
      return attrs[name]
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return types.MethodType(self, obj)

  @property
  def __signature__(self):
    """The wrapped function's signature, as JAX's jitted functions report it: without it,
    `inspect.signature(f, follow_wrapped=False)` (chex's fake pmap) takes this object
    (it has __get__) for a builtin method descriptor and fails."""
    try:
      return inspect.signature(self.fun)
    except (TypeError, ValueError):
      return None

  def _cache_size(self) -> int:
    """How many signatures of the underlying function are cached."""
    return len(self._cache)

  def _lookup(self, args, kwargs) -> tuple[_Entry, list]:
    """The cache entry of this call's signature (tracing on a miss) and its flat leaves."""
    if self.static_argnums or self.static_argnames:
      dyn_args, dyn_kwargs, statics = _split_static(args, kwargs, self.static_argnums,
                                                    self.static_argnames)
      _check_hashable(statics, self.__name__)
    else:
      dyn_args, dyn_kwargs, statics = args, kwargs, ()
    leaves, in_tree = _flatten_args(dyn_args, dyn_kwargs)
    cv = config._values
    key = CacheKey(id(self.fun), in_tree, tuple(map(_leaf_type, leaves)), statics,
                   self._donate, _trace_config(cv))
    entry = self._cache.get(key)
    if entry is None:
      with _lock:
        entry = self._cache.get(key)
        if entry is None:
          entry = self._miss(key, args, kwargs, leaves)
    return entry, leaves

  def _miss(self, key, args, kwargs, leaves) -> _Entry:
    if config._values["jax_no_tracing"]:
      raise RuntimeError(f"re-tracing function {self.__name__} at "
                         f"{cache_miss.fun_location(self.fun)} for `jit`, but 'no_tracing' is set")
    if config._values["jax_explain_cache_misses"]:
      cache_miss.explain_miss(self.fun, self.__name__, key, self._cache)
    t0 = time.perf_counter()
    with cache_miss.timed("jax_log_compiles", "Finished tracing %s for jit in %.9f sec", self.__name__), \
        compilation.gc_paused():
      closed, out_tree, leaves, _, threaded = _trace_flat(
          self.fun, args, kwargs, self.static_argnums, self.static_argnames, "jit")
    trace_secs = time.perf_counter() - t0
    if _profiler.active:
      _profiler.record_secs(f"trace jit({self.__name__})", t0, trace_secs)
    monitoring.record_stage(monitoring.JAXPR_TRACE_EVENT, t0, trace_secs, self.__name__)
    if config._values["jax_enable_checks"]:
      core.check_jaxpr(closed)
    jaxpr, consts = core.hoist_consts(closed)
    names = closed.debug_info.arg_names if closed.debug_info else None
    n_in = len(jaxpr.invars) - len(consts)   # the leaves, then any captured refs' values
    arg_names = ("const",) * len(consts) + tuple(names or ("arg",) * n_in)
    donated_leaves = _donated_leaves(args, kwargs, self.donate_argnums, self.donate_argnames,
                                     self.static_argnums)
    donated = tuple(i - len(consts) in donated_leaves for i in range(len(jaxpr.invars)))
    unusable = ()
    requested = tuple(i in donated_leaves for i in range(key.in_tree.num_leaves))
    if donated_leaves:   # as JAX, only the donations an output can use delete the argument
      donated, unusable = compilation.usable_donations(
          jaxpr, donated, self.keep_unused, tree_util.leaves_of_transform_nodes(out_tree))
      donated_leaves = tuple(i for i in donated_leaves if donated[i + len(consts)])
    staged = Staged(jaxpr, consts, key.in_tree, out_tree, self.__name__, arg_names, closed,
                    donated, trace_secs, unusable, requested)
    entry = _Entry(staged, donated_leaves, names)
    entry.refs = threaded
    if not any(isinstance(c, core.Tracer) for c in consts):
      self._cache[key] = entry
      entry.cached = True
    return entry

  def trace(self, *args, **kwargs) -> Traced:
    entry, leaves = self._lookup(args, kwargs)
    return Traced(entry.staged, self._pjrt_compile(entry, leaves))

  def _pjrt_compile(self, entry, leaves) -> Callable | None:
    """For arguments that place the call on a PJRT device (committed there, or the default
    device): a function making that device's Compiled of the signature; else None."""
    cv = config._values
    if cv["ember_jit_backend"] != "cpu" or not _top_level(leaves) or \
        not pjrt_dispatch.in_play(cv):
      return None
    device, committed = pjrt_dispatch.placement(leaves, entry.leaf_names, self.__name__)
    if device is None:
      return None

    def compile_on():
      with _lock:
        comp = pjrt_dispatch.compiled_for(entry, device)
      return pjrt_dispatch.PjrtCompiled(comp, entry.staged, committed, entry.donated_leaves)
    return compile_on

  def lower(self, *args, **kwargs) -> Lowered:
    return self.trace(*args, **kwargs).lower()

  def eval_shape(self, *args, **kwargs):
    return self.trace(*args, **kwargs).out_info

  def __call__(self, *args, **kwargs):
    native = self._native
    if native is not None and not kwargs:
      out = native(*args)
      if out is not NATIVE_MISS:
        return out
    if _profiler.active and _profiler.wrap_call():   # a `PjitFunction(f)` span
      return _profiler.dispatch(self, args, kwargs)
    key = None
    trace_key = config._jit_trace_key   # None: jit disabled, or not the CPU backend
    if trace_key is not None and (not trace_lib._open_traces or core.cur_level_is_eval()):
      # the hit path: flatten, build the key, look up, dispatch
      if self._has_static:
        dyn_args, dyn_kwargs, statics = _split_static(args, kwargs, self.static_argnums,
                                                      self.static_argnames)
        key, leaves = _fast_key(dyn_args, dyn_kwargs, trace_key)
        if key is not None:
          key += statics          # compared by == and hash, as CacheKey.statics are
      else:
        key, leaves = _fast_key(args, kwargs, trace_key)
      try:
        hit = self._fast.get(key) if key is not None else None
      except TypeError:         # an unhashable static argument: _lookup says so
        hit = key = None
      if hit is not None:
        if self._native_tries and native is None:
          return self._hit_then_native(hit, key, leaves)
        return hit(leaves)
    cv = config._values
    if cv["jax_disable_jit"]:
      return self.fun(*args, **kwargs)
    entry, leaves = self._lookup(args, kwargs)
    guard_host_arguments(leaves)   # (transfer guard; a set guard keeps calls off the fast path)
    if entry.refs is not None:
      return self._call_threading_refs(entry, leaves)
    if cv["jax_debug_nans"] or cv["jax_debug_infs"] or cv["jax_no_execution"]:
      return execution_checks.checked_jit_call(self, lambda: self._run(entry, leaves, key),
                                               args, kwargs)
    return self._run(entry, leaves, key)

  def _call_threading_refs(self, entry, leaves):
    """A call of a signature that threads refs: their values in, the new ones written back
    (core/refs.py), outside this call's trace (at top level: into the refs)."""
    positions, captured, trees = entry.refs
    arg_refs = [leaves[i] for i in positions]
    refs.check_distinct(arg_refs, positions, "jit", self.__name__)
    flat = [_ref_leaf(x) if refs.is_ref(x) else x for x in leaves]
    flat += [v for r in captured for v in tree_util.tree_leaves(refs.read(r))]
    out, new_values = self._run(entry, flat, None)
    new_values = iter(new_values)
    for r, t in zip(arg_refs + list(captured), trees):
      refs.write(r, t.unflatten([next(new_values) for _ in range(t.num_leaves)]), r.aval)
    return out

  def _run(self, entry, leaves, key):
    """Run `entry` on its flat arguments, at top level or staged into the trace in context;
    `key`: the hit path's key of the call (None: not cached for the hit path)."""
    cv = config._values
    if cv["ember_jit_backend"] == "cpu" and _top_level(leaves):
      if pjrt_dispatch.in_play(cv):
        device, committed = pjrt_dispatch.placement(leaves, entry.leaf_names, self.__name__)
        if device is not None:   # a PJRT device: compiled and run by its client
          comp = entry.pjrt.get(device)
          if comp is None:
            with _lock:
              comp = pjrt_dispatch.compiled_for(entry, device)
          finish = _finisher(entry.staged)[0]
          if key is not None and entry.cached and self._shardings is None and not entry.placed:
            self._fast[key] = comp.hit_runner(committed, entry.donated_leaves, finish)
          return finish(comp.run(leaves, committed, entry.donated_leaves))
      if self._shardings is not None or entry.placed or _any_placed(leaves):
        out = call_placed[0](self, entry, leaves, self._shardings)
        if out is not None:
          # later calls placed alike run the same plan (the key holds the shardings); with
          # in/out_shardings or a constraint in the function the mesh in context counts too
          if key is not None and entry.cached and self._shardings is None \
              and not entry.placed:
            run = placed_runner[0](self, entry, leaves)
            if run is not None:
              self._fast[key] = run
          return out
      # the fast path: run the compiled computation directly (the key fixed the arguments'
      # types; donated Arrays are deleted by run, their buffers reused when unshared)
      if entry.compiled is None:
        _compile_locked(entry)
      hit = entry.hit or entry.hit_runner()
      if key is not None and entry.cached and self._shardings is None and not entry.placed:
        self._fast[key] = hit
        self._native, self._native_tries = None, NATIVE_TRIES   # the newest signature's
      return hit(leaves)
    staged = entry.staged
    if self._inline_early:
      return staged.out_tree.unflatten(core.eval_jaxpr(staged.jaxpr, (), *staged.consts,
                                                       *leaves))
    outs = jit_p.bind(*staged.consts, *leaves, jaxpr=staged.jaxpr, name=self.__name__,
                      donated_invars=staged.donated, inline=self.inline,
                      keep_unused=self.keep_unused)
    return staged.out_tree.unflatten(outs)

  def _hit_then_native(self, hit, key: tuple, leaves):
    """A cache hit through `hit`, then its builtin form made for later calls of the same
    signature when it has one (all the arguments Arrays, no static ones)."""
    out = hit(leaves)
    self._native_tries -= 1
    make = getattr(hit, "native", None)
    if make is None or self._has_static or type(key[0]) is not int:
      return out
    n = key[0]
    arg_types = [key[1 + 3 * i:4 + 3 * i] for i in range(n)]
    trace_key = config._jit_trace_key
    if all(type(w) is bool for _, _, w in arg_types) and key[1 + 3 * n:] == trace_key:
      self._native = make(arg_types, trace_key)
    return out

  def __repr__(self):
    return f"<PjitFunction of {self.fun!r}>"


# spmd.call_placed (spmd builds on jit and fills this at import; pmap imports spmd, and
# ember imports pmap): runs a call over committed or split arguments where they live
call_placed: list = [None]
# spmd.placed_runner (filled alike): the cached plan's runner of a call placed like `leaves`
placed_runner: list = [None]

NATIVE_TRIES = 3   # hits of a new signature that may make its builtin form (PjitFunction)
# (a NumPy scalar's type fixes its shape, dtype and weak type, as a Python scalar's does)
_LEAF_TYPES = {Array, PjrtArray, np.ndarray, float, int, bool, complex} | NUMPY_SCALAR_TYPES
_trees_by_shape: dict = {}   # _structure(...) of arguments -> their PyTreeDef


class _NotPlain(Exception):
  pass


def _structure(x, leaves: list):
  """A hashable description of a pytree of plain tuples, lists, dicts and arrays (appending
  its leaves in tree_util's order); _NotPlain for anything else. Equal descriptions mean
  equal PyTreeDefs, so the fast path never builds one. A node of leaves only (the common
  one) is described by its leaf count, checked and collected by C loops: this runs on every
  call."""
  t = type(x)
  if t in _LEAF_TYPES:
    leaves.append(x)
    return 0
  if t is tuple or t is list:
    children = x
  elif t is dict:
    try:
      keys = sorted(x)
    except TypeError:
      raise _NotPlain from None
    children = list(map(x.__getitem__, keys))
  else:
    raise _NotPlain
  tag = tuple(keys) if t is dict else t is tuple
  if _LEAF_TYPES.issuperset(map(type, children)):
    leaves += children
    return tag, len(children)
  desc = []
  for c in children:
    if type(c) in _LEAF_TYPES:
      leaves.append(c)
      desc.append(0)
    else:
      desc.append(_structure(c, leaves))
  return tag, tuple(desc)


def _flatten_args(args, kwargs) -> tuple[list, Any]:
  """tree_flatten((args, kwargs)), with the PyTreeDef of plain containers cached."""
  leaves: list = []
  try:
    shape = _structure((args, kwargs), leaves)
  except _NotPlain:
    return tree_util.tree_flatten((args, kwargs))
  in_tree = _trees_by_shape.get(shape)
  if in_tree is None:
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    _trees_by_shape[shape] = in_tree
  return leaves, in_tree


def _fast_key(args, kwargs, trace_key: tuple) -> tuple:
  """(key, flat leaves) for the hit path's cache, key None when the arguments are not plain
  (Arrays, PjrtArrays, NumPy arrays, Python scalars in tuples, lists and dicts). The key
  holds what determines the CacheKey and where the call runs: the container structure, each
  leaf's shape, dtype and weak type (NumPy dtypes and scalar types uncanonicalized: the x64
  flag is in the key too; a PjrtArray's device and commitment, a committed or split Array's
  sharding, with its weak type), the
  trace config and the default device when one is set. Its first item says which form the
  rest has: the number of positional leaves, "tree" (positional containers) or "kw"
  (keyword arguments)."""
  if not kwargs:   # the common call: positional leaves only, no structure to describe
    key = [len(args)]
    for a in args:
      t = type(a)
      if t is Array:
        key += (a._shape, a._dtype, a._weak_type)
      elif t is np.ndarray:
        key += (a.shape, a.dtype, None)
      elif t is PjrtArray:
        key += (a._shape, a._dtype, (a._weak_type, a._device, a._committed))
      elif t is PlacedArray:
        key += (a._shape, a._dtype, (a._weak_type, a._sharding))
      elif t in _LEAF_TYPES:
        key += (t, None, None)
      else:
        break
    else:
      key += trace_key
      return tuple(key), args
  leaves: list = []
  try:
    key = ["kw", _structure((args, kwargs), leaves)] if kwargs else \
        ["tree", _structure(args, leaves)]
  except _NotPlain:
    return None, None
  for a in leaves:
    t = type(a)
    if t is Array:
      key += (a._shape, a._dtype, a._weak_type)
    elif t is np.ndarray:
      key += (a.shape, a.dtype, None)
    elif t is PjrtArray:
      key += (a._shape, a._dtype, (a._weak_type, a._device, a._committed))
    elif t is PlacedArray:
      key += (a._shape, a._dtype, (a._weak_type, a._sharding))
    else:
      key += (t, None, None)
  key += trace_key
  return tuple(key), leaves


def _result_kind(tree) -> int | None:
  """What a native cache hit builds for this output tree (native_hit.RESULT_*: one leaf,
  a tuple or a list of leaves), None for anything else."""
  if tree.kind == "leaf":
    return 0
  if tree.kind in ("tuple", "list") and tree.children and \
      all(c.kind == "leaf" for c in tree.children):
    return 1 if tree.kind == "tuple" else 2
  return None


def _unflattener(tree) -> Callable[[list], Any]:
  """`tree.unflatten` for a call's fresh list of outputs, without its checks and recursion
  (the computation fixed the count) for a leaf or one tuple, list or dict of leaves."""
  kind = tree.kind
  if kind == "leaf":
    return operator.itemgetter(0)
  if all(c.kind == "leaf" for c in tree.children):
    if kind in ("tuple", "list"):
      return tuple if kind == "tuple" else list
    if kind == "dict" and tree.aux[0] is dict:
      keys = tree.aux[1]
      return lambda outs: dict(zip(keys, outs))
  return tree.unflatten


def _leaf_type(x) -> tuple:
  """(shape, dtype, weak_type) of an argument leaf, an Array's read without building an aval."""
  if type(x) is Array:  # known without waiting for a pending (asynchronous) result
    return x._shape, x._dtype, x._weak_type
  if refs.is_ref(x):    # a ref argument is not an array argument of its type
    a = x.aval.inner_aval
    return a.shape, a.dtype, "ref"
  a = core.get_aval(x)
  return a.shape, a.dtype, a.weak_type


def _fun_and_source(fun) -> str:
  """`f at file:line`, as JAX's errors name a traced function."""
  code = getattr(fun, "__code__", None)
  where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
  return _fun_name(fun) + where


def _fun_name(fun) -> str:
  """JAX's name for a jitted function: a functools.partial is named after what it wraps."""
  while isinstance(fun, functools.partial):
    fun = fun.func
  return getattr(fun, "__name__", type(fun).__name__)


def _top_level(leaves) -> bool:
  """Whether this call runs now (no trace active, no tracer among the arguments). Another
  thread's trace makes the (global) trace stack look busy: wait for it."""
  if not core.cur_level_is_eval():
    with _lock:  # re-entrant: this thread's own trace passes straight through
      if not core.cur_level_is_eval():
        return False
  for x in leaves:
    if isinstance(x, core.Tracer):
      return False
    if type(x) is Array and x._deleted:
      x._check_alive()
  return True


def _any_placed(leaves) -> bool:
  """Whether an argument is committed to devices (device_put to a device or sharding)."""
  for x in leaves:
    if type(x) is PlacedArray:
      return True
  return False


def _compile_locked(entry: _Entry):
  with _lock:
    return entry.compiled or _compile(entry)


def jit(fun: Callable | None = None, *, static_argnums=None, static_argnames=None,
        donate_argnums=None, donate_argnames=None, keep_unused: bool = False,
        inline: bool = False,
        **kwargs):
  """Stage `fun` as one jitted computation. Usable as `@jit` or `@jit(static_argnums=...)`."""
  for k in kwargs:
    if k not in ("device", "backend", "in_shardings", "out_shardings", "abstracted_axes",
                 "compiler_options"):
      raise TypeError(f"jit() got an unexpected keyword argument {k!r}")
  opts = dict(static_argnums=static_argnums, static_argnames=static_argnames,
              donate_argnums=donate_argnums, donate_argnames=donate_argnames,
              keep_unused=keep_unused, inline=inline,
              in_shardings=kwargs.get("in_shardings"), out_shardings=kwargs.get("out_shardings"))
  if fun is None:
    return lambda f: PjitFunction(f, **opts)
  return PjitFunction(fun, **opts)


eager_jit.jit = jit   # eager loops, samplers, one-op computations, lax.dynamic_index_in_dim


# --- lowering: a nested jit is a `call` (one computation per sub-jaxpr; the inline pass
# replaces calls by their bodies) -----------------------------------------------------------

jit_p.lower = lambda ctx, *args, jaxpr, name, **_: ctx.call(jaxpr, name, args)


# --- differentiation: the jvp of a nested jit is a known jit (primal outputs and residuals)
# and an unknown jit (tangents); its transpose is a jit of the transposed jaxpr, so the
# differentiated jaxpr keeps `jit` equations as JAX's does ----------------------------------

def _jit_params(params, jaxpr):
  return dict(params, jaxpr=jaxpr, donated_invars=(False,) * len(jaxpr.invars))


def _install_ad_rules():
  jit_p.jvp = ad_calls.call_jvp(jit_p, _jit_params)
  jit_p.transpose = ad_calls.call_transpose(jit_p, _jit_params)
  jit_p.dce = pe.call_dce(("donated_invars",))


_install_ad_rules()

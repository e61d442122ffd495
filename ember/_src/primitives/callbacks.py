"""Host callbacks: Python code that compiled code calls while it runs.

- `pure_callback_p` (`ember.pure_callback`): a pure function of its operands, run on NumPy
  arrays; dead code when its results are unused; vmapped as `vmap_method` says; no jvp
  (wrap it in custom_jvp).
- `io_callback_p` (`ember.experimental.io_callback`): may have side effects, so it is never
  dropped and never duplicated; vmapped one example at a time (not when `ordered`).
- `debug_callback_p` / `debug_print_p` (`ember.debug.callback` / `ember.debug.print`): no
  results; under vmap they run once per example, under jvp/grad on the primal values.

Each lowers to a custom call of reference/host_callbacks.py's target, whose host function
(the same one the eager impl runs) checks the callback's results against the declared
shapes and dtypes. The side-effecting ones are marked `has_side_effect`, which the HLO
passes respect: they stay, in program order (hlo.has_side_effect); at the jaxpr level
their effects keep them from dead-code elimination (partial_eval.dce_jaxpr).

A user primitive (`def_impl` + `def_abstract_eval`) with no lowering ember can run (see
`mlir.register_lowering`) runs its impl in compiled code the same way
(`impl_as_host_callback`, the lowering hook of lower/__init__.py).
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import os
import sys
import traceback
from typing import Any, Callable, Sequence

import numpy as np

from ember._src import core, lower
from ember._src.base import denormals, dtypes, errors, tree_util
from ember._src.core import ShapedArray, declare
from ember._src.hlo.graph import Shape, TupleShape
from ember._src.primitives import structural
from ember._src.reference import host_callbacks
from ember._src.transforms import batching

# ------------------------------------------------------------------------------------
# Effects
# ------------------------------------------------------------------------------------


# jax.debug.log's logger: "ember" (driver/cache_miss.py forwards its records to "jax"'s
# handlers); the package's directory, to find the user's frame
_log = logging.getLogger("ember")
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _NamedEffect(core.Effect):
  def __init__(self, name: str):
    self.name = name

  def __repr__(self):
    return self.name


IOEffect, OrderedIOEffect = _NamedEffect("IO"), _NamedEffect("OrderedIO")


class DebugEffect(core.Effect):
  """The effect of a debug callback (`jax.debug.DebugEffect`): may be dropped with no
  output using it, reordered, run again."""
  def __repr__(self):
    return "Debug"


class OrderedDebugEffect(core.Effect):
  """The effect of an ordered debug callback (`jax.debug.OrderedDebugEffect`): runs in
  program order."""
  def __repr__(self):
    return "OrderedDebug"


debug_effect, ordered_debug_effect = DebugEffect(), OrderedDebugEffect()

# ------------------------------------------------------------------------------------
# Host functions: what the impl (eagerly) and the custom call (compiled) both run
# ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _FlatCallback:
  """The user's callback on flat operands, returning flat results (JAX's)."""
  callback_func: Callable
  in_tree: Any

  def __call__(self, *flat_args):
    args, kwargs = tree_util.tree_unflatten(self.in_tree, flat_args)
    return tree_util.tree_leaves(self.callback_func(*args, **kwargs))


def _callback_name(callback) -> str:
  fn = getattr(callback, "callback_func", callback)
  return getattr(fn, "__name__", None) or repr(fn)


def check_results(what: str, outs, avals: Sequence[ShapedArray]) -> list[np.ndarray]:
  """The callback's results as NumPy arrays of the declared dtypes; a wrong count or shape
  is a JaxRuntimeError naming the callback and both shapes."""
  outs = list(outs)
  if len(outs) != len(avals):
    raise errors.JaxRuntimeError(
        f"{what} returned {len(outs)} values, but its result_shape_dtypes describes "
        f"{len(avals)}: {[a.str_short() for a in avals]}.")
  checked = []
  for i, (o, a) in enumerate(zip(outs, avals)):
    o = np.asarray(o)
    if o.shape != a.shape:
      raise errors.JaxRuntimeError(
          f"{what}: incorrect output shape for return value #{i}: expected {a.shape}, got "
          f"{o.shape}. The callback's results must match result_shape_dtypes.")
    checked.append(o.astype(a.dtype, copy=False))
  return checked


# JAX's loggers and messages of a failed callback (libraries filter them: equinox)
_JAX_LOGS = {"pure_callback": ("jax._src.callback", "jax.pure_callback failed"),
             "io_callback": ("jax._src.callback", "jax.io_callback failed"),
             "debug_callback": ("jax._src.debugging", "jax.debug.callback failed")}


def _calling(callback, api: str, *args, compiled: bool = True):
  """Call the user's callback of `api` (pure_callback, ...); its exception is logged and
  raised as JAX's: from compiled code a JaxRuntimeError whose message is the exception's
  traceback, else (an eager debug.callback, which JAX calls directly) the exception."""
  try:
    return callback(*args)
  except errors.JaxRuntimeError:
    raise
  except Exception as e:
    name, msg = _JAX_LOGS[api]
    logging.getLogger(name).exception(msg)
    if not compiled:
      raise
    raise errors.JaxRuntimeError("INTERNAL: CpuCallback error calling callback: "
                                 f"{_traceback_text(e)}") from e


def _traceback_text(e: Exception) -> str:
  """The stack where `e` was raised, from the outermost frame, as jaxlib's CPU callback
  writes it: `Traceback (most recent call last):`, one `  File "f", line n, in fn` per
  frame, then `ValueError: message`."""
  tb = e.__traceback__
  frames = traceback.extract_stack(tb.tb_frame.f_back) + traceback.extract_tb(tb)
  lines = [f'  File "{f.filename}", line {f.lineno}, in {f.name}' for f in frames]
  return "\n".join(["Traceback (most recent call last):", *lines,
                    *traceback.format_exception_only(e)]).rstrip("\n")


def _result_callback_host(prim_name: str):
  """pure_callback / io_callback: NumPy arrays in, checked NumPy arrays out (eagerly too,
  as compiled code: JAX runs them eagerly as compiled calls)."""
  def host_fn(*, callback, result_avals, compiled=True, **_):
    what = f"{prim_name} {_callback_name(callback)}"
    return lambda *arrays: check_results(what, _calling(callback, prim_name, *arrays),
                                         result_avals)
  return host_fn


def _debug_callback_host(*, callback, compiled=True, **_):
  """debug.callback gets Arrays (JAX hands it jax Arrays); it returns nothing. `compiled`:
  called from compiled code (else eagerly: its exception is raised as it is)."""
  def run(*arrays):
    _calling(callback, "debug_callback", *[core.new_array(np.asarray(a)) for a in arrays],
             compiled=compiled)
    return []
  return run


def _debug_print_host(*, fmt, in_tree, static_args, np_printoptions, logging_record=None,
                      compiled=True, **_):
  def run(*arrays):
    leaves = _merge_static(arrays, static_args)
    args, kwargs = tree_util.tree_unflatten(in_tree, leaves)
    with np.printoptions(**dict(np_printoptions)):
      msg = fmt.format(*args, **kwargs)
    if logging_record is None:
      print(msg)
    else:   # jax.debug.log: the record made at the call, with the message it ran with
      record = copy.copy(logging_record)
      record.msg = msg
      _log.handle(record)
    return []
  return run


def _declare_callback(name: str, host_fn: Callable, effects: Callable) -> core.Primitive:
  """A callback primitive: its impl runs `host_fn(**params)` on the NumPy operands, its
  lowering a custom call of the same function."""
  def abstract_eval(*avals, result_avals=(), **params):
    return list(result_avals)

  def impl(*arrays, **params):
    with denormals.flushed(False):   # the user's Python keeps IEEE subnormals, as in JAX
      return host_fn(compiled=False, **params)(*arrays)

  p = declare(name, abstract_eval, impl, multiple_results=True)
  p.effects_rule = lambda *avals, **params: effects(**params)
  p.lower = lambda ctx, *args, **params: emit_host_call(
      ctx, host_fn(**params), args, ctx.avals_out, bool(effects(**params)))
  return p


def emit_host_call(ctx, fn: Callable, args, out_avals, side_effect: bool,
                   collective: tuple | None = None, user_code: bool = True) -> list:
  """A custom call of the host function `fn` (registered for the module's lifetime).
  `collective`: (kind, start, done) for a call that runs a collective between devices:
  `start(*args)` starts it and returns [ticket], `done(ticket)` returns fn's results
  (passes/async_collectives.py may run the call as those two). `user_code`: `fn` runs the
  user's Python (a program calling it runs synchronously: host_callbacks.runs_user_code)."""
  extra = {}
  if collective is not None:
    kind, start, done = collective
    extra = dict(collective=kind, start=host_callbacks.register(start),
                 done=host_callbacks.register(done))
  attrs = {"target": host_callbacks.TARGET,
           "backend_config": host_callbacks.backend_config(
               host_callbacks.register(fn, user_code), **extra)}
  if side_effect:
    attrs["has_side_effect"] = True
  shape = TupleShape(tuple(Shape.of(a) for a in out_avals))
  return ctx.unpack(ctx.emit("custom-call", shape, list(args), attrs))


pure_callback_p = _declare_callback("pure_callback", _result_callback_host("pure_callback"),
                                    lambda **_: frozenset())
io_callback_p = _declare_callback(
    "io_callback", _result_callback_host("io_callback"),
    lambda *, ordered, **_: frozenset([OrderedIOEffect if ordered else IOEffect]))
debug_callback_p = _declare_callback("debug_callback", _debug_callback_host,
                                     lambda *, effect, **_: frozenset([effect]))
debug_print_p = _declare_callback(
    "debug_print", _debug_print_host,
    lambda *, ordered, **_: frozenset([ordered_debug_effect if ordered else debug_effect]))

# ------------------------------------------------------------------------------------
# Differentiation
# ------------------------------------------------------------------------------------


def _no_jvp(message: str):
  def rule(primals, tangents, **params):
    raise ValueError(message)
  return rule


pure_callback_p.jvp = _no_jvp("Pure callbacks do not support JVP. Please use "
                              "`jax.custom_jvp` to use callbacks while taking gradients.")
io_callback_p.jvp = _no_jvp("IO callbacks do not support JVP.")


def _debug_jvp(prim):
  """Debugging sees the primal values; it has no outputs, hence no tangents."""
  def rule(primals, tangents, **params):
    return prim.bind(*primals, **params), []
  return rule


debug_callback_p.jvp = _debug_jvp(debug_callback_p)
debug_print_p.jvp = _debug_jvp(debug_print_p)

# ------------------------------------------------------------------------------------
# Batching
# ------------------------------------------------------------------------------------


def _stack_results(outs: list, avals, size: int) -> list:
  if size == 0:
    return [structural.broadcast(np.zeros(a.shape, a.dtype), (0,)) for a in avals]
  return [structural.stack(xs, 0) for xs in zip(*outs)]


def _one_example_at_a_time(prim):
  """Bind `prim` on each example in turn and stack the results (JAX runs a loop)."""
  def rule(axis_data, vals, dims, **params):
    outs = []
    for i in range(axis_data.size):
      outs.append(prim.bind(*[x if d is None else structural.index_in_dim(x, i, d, False)
                              for x, d in zip(vals, dims)], **params))
    avals = params.get("result_avals", ())
    return _stack_results(outs, avals, axis_data.size), [0] * len(avals)
  return rule


_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized")
_sequential_pure_callback = _one_example_at_a_time(pure_callback_p)


def _pure_callback_batch(axis_data, vals, dims, *, vmap_method, **params):
  if vmap_method not in _VMAP_METHODS:
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
  if vmap_method.startswith("sequential"):
    return _sequential_pure_callback(axis_data, vals, dims, vmap_method=vmap_method, **params)
  size = axis_data.size
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(vals, dims)]
  if vmap_method != "legacy_vectorized":   # unbatched operands get a leading axis too
    n = size if vmap_method == "broadcast_all" else 1
    args = [batching.broadcast(x, n, 0) if d is None else x for x, d in zip(args, dims)]
  result_avals = tuple(a.update(shape=(size,) + a.shape) for a in params.pop("result_avals"))
  outs = pure_callback_p.bind(*args, vmap_method=vmap_method, result_avals=result_avals,
                              **params)
  return outs, [0] * len(outs)


pure_callback_p.batch = _pure_callback_batch
_sequential_io_callback = _one_example_at_a_time(io_callback_p)


def _io_callback_batch(axis_data, vals, dims, *, ordered, **params):
  if ordered:
    raise ValueError("Cannot `vmap` ordered IO callback.")
  return _sequential_io_callback(axis_data, vals, dims, ordered=ordered, **params)


io_callback_p.batch = _io_callback_batch
debug_callback_p.batch = _one_example_at_a_time(debug_callback_p)
debug_print_p.batch = _one_example_at_a_time(debug_print_p)

# ------------------------------------------------------------------------------------
# The public functions
# ------------------------------------------------------------------------------------


def _result_avals(result_shape_dtypes):
  leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
  avals = []
  for s in leaves:
    if not (hasattr(s, "shape") and hasattr(s, "dtype")):
      raise TypeError(f"result_shape_dtypes must be a pytree of objects with .shape and "
                      f".dtype (jax.ShapeDtypeStruct), got {s!r}")
    avals.append(ShapedArray(s.shape, dtypes.canonicalize_dtype(s.dtype)))
  return tuple(avals), tree


def _check_callable(callback, what: str):
  if not callable(callback):
    raise TypeError(f"first argument to {what} must be callable, but got an object of "
                    f"type {type(callback)}")


def pure_callback(callback: Callable, result_shape_dtypes, *args, sharding=None,
                  vmap_method: str | None = None, **kwargs):
  """Call the pure Python function `callback` on NumPy arrays from inside traced code
  (jax.pure_callback); `result_shape_dtypes` (ShapeDtypeStructs) describe its results."""
  _check_callable(callback, "jax.pure_callback")
  if vmap_method is not None and vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be one of {_VMAP_METHODS} or None, got "
                     f"{vmap_method!r}")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  result_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = pure_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                              result_avals=result_avals, sharding=sharding,
                              vmap_method=vmap_method)
  return tree_util.tree_unflatten(out_tree, outs)


def io_callback(callback: Callable, result_shape_dtypes, *args, sharding=None,
                ordered: bool = False, **kwargs):
  """Call `callback` (which may have side effects) from traced code, never dropped or
  duplicated (jax.experimental.io_callback); `ordered` keeps program order under jit."""
  _check_callable(callback, "jax.experimental.io_callback")
  flat_args, in_tree = tree_util.tree_flatten((args, kwargs))
  result_avals, out_tree = _result_avals(result_shape_dtypes)
  outs = io_callback_p.bind(*flat_args, callback=_FlatCallback(callback, in_tree),
                            ordered=bool(ordered), result_avals=result_avals,
                            sharding=sharding)
  return tree_util.tree_unflatten(out_tree, outs)


def _split_static(args, kwargs):
  """Flat leaves of (args, kwargs): the array-like ones (operands) and the others, by
  position (static: strings and other Python objects travel with the primitive)."""
  leaves, in_tree = tree_util.tree_flatten((args, kwargs))
  dynamic = [x for x in leaves if core.is_arraylike(x)]
  static = tuple((i, x) for i, x in enumerate(leaves) if not core.is_arraylike(x))
  return dynamic, static, in_tree


def _merge_static(dynamic, static) -> list:
  """The flat leaves again: the static ones at their positions, the operands between."""
  it, fixed = iter(dynamic), dict(static)
  return [fixed[i] if i in fixed else next(it) for i in range(len(dynamic) + len(fixed))]


def _with_static(flat_callback, static) -> Callable:
  return lambda *dynamic: flat_callback(*_merge_static(dynamic, static))


def debug_callback(callback: Callable, *args, ordered: bool = False,
                   partitioned: bool = False, **kwargs) -> None:
  """Call `callback(*args, **kwargs)` (on Arrays) when the program runs (jax.debug.callback);
  its result is ignored."""
  _check_callable(callback, "jax.debug.callback")
  dynamic, static, in_tree = _split_static(args, kwargs)

  def flat_callback(*leaves):
    a, kw = tree_util.tree_unflatten(in_tree, leaves)
    callback(*a, **kw)

  flat_callback.__name__ = _callback_name(callback)
  debug_callback_p.bind(
      *dynamic, callback=_with_static(flat_callback, static),
      effect=ordered_debug_effect if ordered else debug_effect, partitioned=partitioned)


def debug_log(fmt: str, *args, ordered: bool = False, **kwargs) -> None:
  """`jax.debug.print`, logged on the "ember" logger at INFO (forwarded to the "jax" logger's
  handlers), with the caller's file and line (jax.debug.log)."""
  if not isinstance(fmt, str):
    raise TypeError(f"jax.debug.log: fmt must be a str, got {type(fmt).__name__}")
  file, line = _user_frame()
  record = _log.makeRecord(_log.name, logging.INFO, file, line, "", (), None)
  dynamic, static, in_tree = _split_static(args, kwargs)
  debug_print_p.bind(*dynamic, fmt=fmt, has_placeholders="{" in fmt, in_tree=in_tree,
                     logging_record=record,
                     np_printoptions=tuple(np.get_printoptions().items()), ordered=ordered,
                     partitioned=False, static_args=static)


def _user_frame() -> tuple[str, int]:
  """(file, line) of the innermost caller outside ember."""
  frame = sys._getframe(1)
  while frame is not None and frame.f_code.co_filename.startswith(_EMBER_DIR):
    frame = frame.f_back
  return ("(unknown file)", 0) if frame is None else (frame.f_code.co_filename, frame.f_lineno)


def debug_print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:
  """Print `fmt.format(*args, **kwargs)` with the values the program computes, when it runs
  (jax.debug.print): values are NumPy arrays, printed with the NumPy print options in
  force at the call."""
  if not isinstance(fmt, str):
    raise TypeError(f"jax.debug.print: fmt must be a str, got {type(fmt).__name__}")
  dynamic, static, in_tree = _split_static(args, kwargs)
  debug_print_p.bind(*dynamic, fmt=fmt, has_placeholders="{" in fmt, in_tree=in_tree,
                     logging_record=None,
                     np_printoptions=tuple(np.get_printoptions().items()), ordered=ordered,
                     partitioned=False, static_args=static)

# ------------------------------------------------------------------------------------
# User primitives without a lowering ember can run
# ------------------------------------------------------------------------------------


def impl_as_host_callback(prim: core.Primitive, ctx, /, *args, **params):
  """Lower `prim` (a user primitive with `def_impl`) to a host call of its impl on Arrays."""
  out_avals = list(ctx.avals_out)
  in_avals = list(ctx.avals_in)
  what = f"the impl of primitive {prim.name!r} (run as a host callback)"

  def run(*arrays):
    ins = [core.new_array(np.asarray(a, av.dtype), weak_type=av.weak_type)
           for a, av in zip(arrays, in_avals)]
    outs = _calling_impl(lambda *xs: prim.impl(*xs, **params), what, *ins)
    outs = list(outs) if prim.multiple_results else [outs]
    return check_results(what, [core.to_numpy(o) if core.is_concrete_array(o) else o
                                for o in outs], out_avals)

  side_effect = bool(prim.effects(in_avals, params))
  outs = emit_host_call(ctx, run, args, out_avals, side_effect)
  return outs if prim.multiple_results else outs[0]


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, returns_token: bool = True,
                         partitioned: bool = False, sharding=None, **_):
  """JAX's `mlir.emit_python_callback`, for lowering rules written against JAX's MLIR that
  only call back into Python (equinox's noinline): a host call of `callback` on NumPy
  arrays, its results checked against `result_avals`. Returns (results, token,
  keepalive), as JAX's."""
  ectx = getattr(ctx, "ember_context", ctx)
  if ectx is not ctx:
    ctx.called_back = True
  avals = list(result_avals)
  what = f"python callback {_callback_name(callback)}"

  def run(*arrays):
    outs = _calling_impl(callback, what, *arrays)
    return check_results(what, outs, avals)
  return emit_host_call(ectx, run, list(operands), avals, has_side_effect), token, None


def _calling_impl(impl, what: str, *args):
  """A user primitive's impl run from compiled code; its exception is a JaxRuntimeError."""
  try:
    return impl(*args)
  except errors.JaxRuntimeError:
    raise
  except Exception as e:
    raise errors.JaxRuntimeError(f"INTERNAL: CpuCallback error calling {what}: "
                                 f"{type(e).__name__}: {e}") from e


lower.host_impl_lowering = impl_as_host_callback

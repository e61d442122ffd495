"""The options that check what runs: `jax_debug_nans` / `jax_debug_infs` (a nan, an inf,
made by a primitive raises FloatingPointError naming it) and `jax_no_execution` (running
anything raises RuntimeError).

Eager: while one is on, the eager hook checks each primitive (installed when an option turns
on, so eager dispatch pays nothing otherwise). Jit: the options send every call down the
slow path (config's `_jit_trace_key` is None), which refuses to run it (no_execution) or
checks its outputs and, on a nan, runs the function again op by op (as if without `jit`) so
the eager check names the primitive, as JAX does.
"""
from __future__ import annotations

import numpy as np

from ember._src.base import config as config_lib
from ember._src.base import tree_util
from ember._src.base.config import config
from ember._src.core import trace as trace_lib


def _invalid_kind(x) -> str | None:
  """"nan" or "inf" when `x` is a float or complex array holding one the options look for."""
  dtype = getattr(x, "dtype", None)
  try:
    if dtype is None or not np.issubdtype(dtype, np.inexact):
      return None
  except TypeError:   # an extended dtype (keys): never a float
    return None
  v = config._values
  value = np.asarray(x)
  if v["jax_debug_nans"] and np.isnan(value).any():
    return "nan"
  if v["jax_debug_infs"] and np.isinf(value).any():
    return "inf"
  return None


def check_outputs(name: str, outs) -> None:
  """Raise FloatingPointError when one of `outs` holds a nan (an inf) the options look for."""
  for out in outs:
    kind = _invalid_kind(out)
    if kind is not None:
      raise FloatingPointError(f"invalid value ({kind}) encountered in {name}")


_unchecked_hook: list = [None]   # the eager hook the check wraps, while it is installed


def refuse_execution(name: str) -> None:
  raise RuntimeError(f"JAX tried to execute function {name}, but the no_execution config "
                     "option is set")


def _checked_eager(prim, vals, params):
  v = config._values
  if v["jax_no_execution"]:
    refuse_execution(f"jit({prim.name})")
  hook = _unchecked_hook[0]
  outs = hook(prim, vals, params) if hook is not None else None
  if outs is None:
    outs = trace_lib.eval_reference(prim, vals, params)
  if v["jax_debug_nans"] or v["jax_debug_infs"]:
    check_outputs(prim.name, outs)
  return outs


def _on_option_change(_value) -> None:
  """Install the eager check while an option is on; take it out when all are off."""
  v = config._values
  on = v["jax_debug_nans"] or v["jax_debug_infs"] or v["jax_no_execution"]
  installed = trace_lib.eager_hook[0] is _checked_eager
  if on and not installed:
    _unchecked_hook[0], trace_lib.eager_hook[0] = trace_lib.eager_hook[0], _checked_eager
  elif not on and installed:
    trace_lib.eager_hook[0] = _unchecked_hook[0]


def checked_jit_call(jitted, run, args, kwargs):
  """A jitted call's slow path while an option is on: refused (no_execution), else `run()`,
  whose result, when it holds a nan (inf) the options look for, is re-run op by op, which
  raises at the primitive that made it. Inside a trace the call runs unchecked (staged)."""
  v = config._values
  top = not trace_lib._open_traces or trace_lib.cur_level_is_eval()
  if top and v["jax_no_execution"]:
    refuse_execution(f"jit({jitted.__name__})")
  out = run()
  if not top or not (v["jax_debug_nans"] or v["jax_debug_infs"]):
    return out
  kind = next(filter(None, map(_invalid_kind, tree_util.tree_leaves(out))), None)
  if kind is None:
    return out
  print("Invalid nan value encountered in the output of a jax.jit function. Calling the "
        "de-optimized version.")
  with config._override("jax_disable_jit", True):
    jitted.fun(*args, **kwargs)
  raise FloatingPointError(
      f"invalid value ({kind}) encountered in jit({jitted.__name__}). Because "
      "jax_config.debug_nans.value and/or config.jax_debug_infs is set, the de-optimized "
      "function (i.e., the function as if the `jit` decorator were removed) was called in an "
      "attempt to get a more precise error message. However, the de-optimized function did "
      "not produce invalid values during its execution. This behavior can result from `jit` "
      "optimizations causing the invalid value to be produced. It may also arise from having "
      "nan/inf literals as inputs or outputs, like `jax.jit(lambda ...: jax.numpy.nan)(...)`.")


for _name in ("jax_debug_nans", "jax_debug_infs", "jax_no_execution"):
  config_lib._listeners[_name] = _on_option_change
_on_option_change(None)   # on from the start (JAX_DEBUG_NANS=1): eager's hook is set by now

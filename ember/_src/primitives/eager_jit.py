"""Functions called outside jit that run as one compiled call, as JAX runs them.

Run op by op, a loop called eagerly (`lax.scan`, `while_loop`, `fori_loop`, `cond`,
`switch`, `map`, `associative_scan`) would run its body's primitives through their NumPy
references once per step, and a PRNG sampler its dozens of primitives one by one. JAX traces
such a function once per (function identity, argument types) and runs it compiled; so does
ember here:

- `call(fun, static, body, *args)`: `body(fun, static, *args)` under ember.jit, the jitted
  function made once per (`fun`, `static`) while `fun` lives (held weakly, as JAX's
  weakref_lru_cache holds it) and cached per argument types by jit. The control-flow
  functions call it with the user's function.
- `@compiled(static_argnames=...)`: a library function (a sampler) run jitted when called
  outside any trace; under a trace it is called as it is, so jaxprs are unchanged.

Both apply only at the eval level (no trace open, jit not disabled) to arguments that are all
array-like, so what jit traces is what the caller passed. As with jit, values a function
closes over are read when it is first traced.
"""
from __future__ import annotations

import functools
import inspect
import weakref
from typing import Callable

from ember._src import core
from ember._src.base import tree_util
from ember._src.base.config import config

# ember's `jit`: driver/jit.py, which sits above the primitives, registers it when imported.
jit: Callable | None = None

_by_fun: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # fun -> {static: jitted}


def applies(args) -> bool:
  """Whether a call on `args` (a pytree) runs compiled: outside every trace, with jit on,
  and only array-like leaves (no tracers)."""
  if jit is None or not core.cur_level_is_eval() or config.read("jax_disable_jit"):
    return False
  return all(core.is_arraylike(x) and not isinstance(x, core.Tracer)
             for x in tree_util.tree_leaves(args))


def call(fun: Callable, static: tuple, body: Callable, *args):
  """`body(fun, static, *args)` as one compiled call (see the module's docstring). `body`
  is a module-level function; `static` (hashable) is held for as long as `fun` lives."""
  try:
    per_fun = _by_fun.get(fun)
    if per_fun is None:
      per_fun = _by_fun[fun] = {}
    jitted = per_fun.get(static)
  except TypeError:   # `fun` cannot be weakly referenced, or `static` does not hash
    return body(fun, static, *args)
  if jitted is None:
    jitted = per_fun[static] = _jit_body(weakref.ref(fun), static, body)
  return jitted(*args)


def _jit_body(fun_ref, static, body):
  def run(*args):
    return body(fun_ref(), static, *args)
  run.__name__ = run.__qualname__ = body.__name__.lstrip("_")
  return jit(run)


def compiled(static_argnames: tuple = (), static_if_int: tuple = ()):
  """Decorate a library function to run jitted when called outside any trace on array-like
  arguments; elsewhere it runs as written. `static_argnames` are static; `static_if_int`
  are static when given as a Python int (a population size, `permutation(key, 10)`) and
  traced otherwise. A static list is passed as a tuple (jit's static arguments must hash);
  an unhashable static argument runs the function as written."""
  def wrap(fn):
    jitted: dict = {}    # (static argument names, their types) -> fn jitted with them
    signature = inspect.signature(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
      try:
        bound = dict(signature.bind(*args, **kwargs).arguments)
      except TypeError:   # the plain call raises Python's error
        return fn(*args, **kwargs)
      static = static_argnames + tuple(k for k in static_if_int if type(bound.get(k)) is int)
      if not applies([v for k, v in bound.items() if k not in static]):
        return fn(*args, **kwargs)
      for k in static:
        if isinstance(bound.get(k), list):
          bound[k] = tuple(bound[k])
      # keyed by the static values' types too: jit's cache would take `split(key, 2.0)`
      # for the `split(key, 2)` it saw, as 2.0 == 2, where the function raises
      key = (static, tuple(type(bound.get(k)) for k in static))
      try:
        hash(tuple(bound.get(k) for k in static))
        f = jitted.get(key)
      except TypeError:
        return fn(*args, **kwargs)
      if f is None:
        f = jitted[key] = jit(fn, static_argnames=static)
      return f(**bound)
    return wrapper
  return wrap

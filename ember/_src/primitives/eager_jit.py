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
- `@compiled(static_argnames=...)`: a library function (a sampler) whose op-by-op run
  gives the jitted bits: called outside any trace it rents, then buys, as driver/eager.py's
  exact primitives do: it runs op by op until those runs add up to COMPILE_SECONDS, then
  jitted. Under a trace it is called as it is, so jaxprs are unchanged. `x[idx]` by an
  integer Array (library/numpy/getitem.py) rents per argument shapes (`per_shape`).

Both apply only at the eval level (no trace open, jit not disabled) to arguments that are all
array-like, so what jit traces is what the caller passed. As with jit, values a function
closes over are read when it is first traced.
"""
from __future__ import annotations

import functools
import inspect
import math
import time
import weakref
from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import tree_util
from ember._src.base.config import config
from ember._src.core.array import Array

# ember's `jit`: driver/jit.py, which sits above the primitives, registers it when imported
# (the one slot: slicing's jitted helpers and driver/eager.py's one-op jits read it too).
jit: Callable | None = None

_by_fun: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # fun -> {static: jitted}
_PLAIN = (Array, np.ndarray, float, int, bool)   # leaves that need no closer look
_JITTED_LIMIT = 1024   # jitted forms kept per decorated function; past it they start over
COMPILE_SECONDS = 0.02   # what compiling costs (a one-op module or a sampler: ~10-100 ms)
EAGER_COMPILE_ELEMENTS = 1 << 16   # operands (a draw) this large: compiled at once


def applies(args) -> bool:
  """Whether a call on `args` (a pytree) runs compiled: outside every trace, with jit on,
  and only array-like leaves (no tracers)."""
  return _eval_level() and _plain(tree_util.tree_leaves(args))


def _eval_level() -> bool:
  return jit is not None and core.cur_level_is_eval() and not config.read("jax_disable_jit")


def _plain(leaves) -> bool:
  return all(type(x) in _PLAIN or (core.is_arraylike(x) and not isinstance(x, core.Tracer))
             for x in leaves)


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


def compiled(static_argnames: tuple = (), static_if_int: tuple = (), per_shape: bool = False):
  """Decorate a library function to run jitted when called outside any trace on array-like
  arguments; elsewhere it runs as written. `static_argnames` are static; `static_if_int`
  are static when given as a Python int (a population size, `permutation(key, 10)`) and
  traced otherwise. A static list is passed as a tuple (jit's static arguments must hash);
  an unhashable static argument runs the function as written. Each set of static values
  gets a jitted function of the dynamic arguments' leaves, so calls take jit's fast path,
  once its op-by-op runs have taken COMPILE_SECONDS (a one-off small draw never compiles),
  or at once for a `shape` of EAGER_COMPILE_ELEMENTS or more (op by op, its large inexact
  operations would each compile: driver/eager.py). `per_shape`: each set of the dynamic
  leaves' shapes and dtypes rents on its own (a function called with ever new shapes, as
  indexing is, would otherwise compile at each new one)."""
  def wrap(fn):
    jitted: dict = {}    # (dynamic names, static items, their types) -> jitted function
    spent: dict = {}     # the same keys -> seconds run op by op so far
    bind = _binder(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
      bound = bind(args, kwargs) if _eval_level() else None
      if bound is None:   # under a trace; or arguments that do not fit: Python's error
        return fn(*args, **kwargs)
      static = static_argnames + tuple(k for k in static_if_int if type(bound.get(k)) is int)
      dynamic = tuple(k for k in bound if k not in static)
      values = [bound[k] for k in dynamic]
      leaves, tree = (values, None) if all(type(v) in _PLAIN for v in values) else \
          tree_util.tree_flatten(values)
      if tree is not None and not _plain(leaves):
        return fn(*args, **kwargs)
      fixed = tuple((k, tuple(v) if isinstance(v, list) else v)
                    for k, v in bound.items() if k in static)
      # keyed by the static values' types too: `split(key, 2.0)` is not the `split(key, 2)`
      # seen before (2.0 == 2), and raises
      key = (dynamic, tree, fixed, tuple(type(v) for _, v in fixed))
      if per_shape:
        key += tuple((np.shape(x), getattr(x, "dtype", type(x)), getattr(x, "weak_type", None))
                     for x in leaves)
      try:
        f = jitted.get(key)
      except TypeError:   # an unhashable static argument
        return fn(*args, **kwargs)
      if f is None:
        if spent.get(key, 0.0) < COMPILE_SECONDS and not _large(bound.get("shape")):  # rent
          t0 = time.perf_counter()
          out = fn(*args, **kwargs)
          if len(spent) >= _JITTED_LIMIT:
            spent.clear()
          spent[key] = spent.get(key, 0.0) + time.perf_counter() - t0
          return out
        if len(jitted) >= _JITTED_LIMIT:
          jitted.clear()
        f = jitted[key] = _jit_with_static(fn, dynamic, tree, dict(fixed))
      return f(*leaves)   # flat: jit's fast path (a key array is a pytree node)
    return wrapper
  return wrap


def _jit_with_static(fn, dynamic: tuple, tree, fixed: dict):
  """`fn` jitted as a function of the flat leaves of its dynamic arguments (`tree`; None:
  the arguments are their own leaves)."""
  def run(*leaves):
    values = leaves if tree is None else tree_util.tree_unflatten(tree, leaves)
    return fn(**fixed, **dict(zip(dynamic, values)))
  run.__name__ = run.__qualname__ = fn.__name__
  return jit(run)


def _binder(fn):
  """`bind(args, kwargs) -> {name: value}` of the arguments a call passes, None when they do
  not fit `fn`'s signature of named parameters (inspect's bind costs more than a compiled
  call)."""
  params = inspect.signature(fn).parameters
  if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY)
         for p in params.values()):
    raise TypeError(f"eager_jit.compiled: {fn.__name__} must take named parameters only")
  positional = [n for n, p in params.items() if p.kind == p.POSITIONAL_OR_KEYWORD]
  required = {n for n, p in params.items() if p.default is p.empty}

  def bind(args, kwargs):
    if len(args) > len(positional):
      return None
    bound = dict(zip(positional, args))
    for k, v in kwargs.items():
      if k not in params or k in bound:
        return None
      bound[k] = v
    return bound if required.issubset(bound) else None
  return bind


def _large(shape) -> bool:
  """Whether a `shape` argument asks for EAGER_COMPILE_ELEMENTS values or more."""
  try:
    return math.prod(shape if isinstance(shape, (tuple, list)) else (shape,)) >= \
        EAGER_COMPILE_ELEMENTS
  except TypeError:   # None (the parameters' shape) or not a shape: the function says
    return False

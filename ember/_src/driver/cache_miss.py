"""Compile logging and cache-miss explanations (`jax_log_compiles`, `jax_explain_cache_misses`).

Records go to the `logging` logger "ember" (WARNING when the option is on, DEBUG otherwise),
with JAX 0.12's message texts. So that JAX code run as `import ember as jax` can count
compilations with a handler on `logging.getLogger("jax")` (seed 002's CompileCounter), a
filter on the "ember" logger also hands each record to the handlers of the "jax" logger
(only to its handlers: the record still propagates once, through "ember", to the root).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time

from ember._src.base.config import config
from ember._src.core import ShapedArray

logger = logging.getLogger("ember")
# the ember package: this file is ember/_src/driver/cache_miss.py
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _forward_to_jax(record: logging.LogRecord) -> bool:
  jax_logger = logging.getLogger("jax")
  for h in jax_logger.handlers:
    if record.levelno >= h.level:
      h.handle(record)
  return True


if _forward_to_jax not in logger.filters:
  logger.addFilter(_forward_to_jax)


def log_compiles(enable: bool = True):
  """Context manager: log every compilation (and its stages' times) inside the block."""
  return config._override("jax_log_compiles", bool(enable))


def log(option: str, msg: str, *args) -> None:
  """Log on "ember": WARNING when `option` is on, else DEBUG (JAX's levels)."""
  level = logging.WARNING if config._values[option] else logging.DEBUG
  if logger.isEnabledFor(level):
    logger.log(level, msg, *args)


def log_enabled(option: str) -> bool:
  return config._values[option] or logger.isEnabledFor(logging.DEBUG)


# --- cache-miss explanations ------------------------------------------------------------------

_seen_locations: set[str] = set()   # "file:line" of every function seen by a cache miss


def fun_location(fun) -> str:
  code = getattr(getattr(fun, "func", fun), "__code__", None)
  return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "<unknown>"


def _caller() -> str:
  """`file:line (function)` of the first frame outside ember."""
  f = sys._getframe(1)
  while f is not None and f.f_code.co_filename.startswith(_EMBER_DIR):
    f = f.f_back
  if f is None:
    return "<unknown>"
  return f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"


def _aval_str(a, with_weak: bool) -> str:
  s = a.str_short(short_dtypes=True)
  return s + f"{{weak_type={a.weak_type}}}" if with_weak else s


_WEAK_HINT = "https://docs.jax.dev/en/latest/101/type_promotion.html#weak-types"


def _node_type(t) -> str:
  k = t.kind
  cls = {"tuple": tuple, "list": list, "none": type(None), "leaf": "leaf"}.get(k)
  if cls is None:
    cls = t.aux[0] if k in ("dict", "custom") else t.aux
  return str(cls)


def _children_keys(t) -> list:
  return list(t.aux[1]) if t.kind == "dict" else list(range(len(t.children)))


def _tree_difference(new, old, path: str) -> str:
  """JAX's description of the first place two pytree structures differ."""
  nk, ok = _children_keys(new), _children_keys(old)
  if new.kind == old.kind and nk == ok and (new.kind in ("dict", "tuple", "list") or
                                            new.aux == old.aux):
    for key, a, b in zip(nk, new.children, old.children):
      if a != b:
        return _tree_difference(a, b, path + f"[{key!r}]")
  where = f"* at input path {path or '[]'}, now {_node_type(new)}"
  if new.kind != old.kind or _node_type(new) != _node_type(old):
    return where + f" and before {_node_type(old)}, so their node types do not match"
  n, o = len(new.children), len(old.children)
  kids = lambda k: f"{k} child" + ("ren" if k != 1 else "")
  if n != o:
    msg = (f"{where} with {kids(n)} and before {_node_type(old)} with {kids(o)}, so the "
           "numbers of children do not match")
    if new.kind == "dict":
      msg += f", with the symmetric difference of key sets: {set(nk) ^ set(ok)}"
    return msg
  if new.kind == "dict":
    return (f"{where} and before {_node_type(old)}, so their keys do not match, with the "
            f"symmetric difference of key sets: {set(nk) ^ set(ok)}")
  return (f"{where} with auxiliary data {new.aux!r} and before {_node_type(old)} with "
          f"auxiliary data {old.aux!r}, so their auxiliary data do not match")


def _differences(key, old, leaf_names) -> list[str]:
  """The lines explaining how cache key `key` differs from `old` (both CacheKeys)."""
  out = []
  if key.in_tree != old.in_tree:
    out += ["different input pytree:", _tree_difference(key.in_tree, old.in_tree, "")]
  elif key.in_avals != old.in_avals:
    out.append("different input types:")
    for i, (a, b) in enumerate(zip(key.in_avals, old.in_avals)):
      if a != b:
        a, b = ShapedArray(*a), ShapedArray(*b)
        name = leaf_names[i] if leaf_names and i < len(leaf_names) else f"args[{i}]"
        weak_only = a.strip_weak_type() == b.strip_weak_type()
        out.append(f"* at {name}, now {_aval_str(a, weak_only)} and before "
                   f"{_aval_str(b, weak_only)}" + (_WEAK_HINT if weak_only else ""))
  if key.donate != old.donate:
    out.append(f"different donation: now {key.donate} and before {old.donate}")
  if key.trace_config != old.trace_config:
    out.append(f"different config values affecting tracing: now {key.trace_config} and "
               f"before {old.trace_config}")
  # JAX 0.12 cannot name a changed static argument value: it says so (seed 002 §2.5)
  return out or ["cache miss explanation unavailable"]


def _distance(key, old) -> int:
  d = 0 if key.in_tree == old.in_tree else 100
  d += sum(a != b for a, b in zip(key.in_avals, old.in_avals))
  d += (key.statics != old.statics) + (key.donate != old.donate)
  return d + (key.trace_config != old.trace_config)


def explain_miss(fun, name: str, key, previous: dict) -> None:
  """Log why `key` missed, given this function's earlier `previous` entries
  (CacheKey -> cache entry with a `leaf_names` attribute)."""
  where = _caller()
  loc = fun_location(fun)
  if not previous:
    lines = ["never seen function:", f"  {name} id={id(fun)} defined at {loc}"]
    if loc in _seen_locations:
      lines += ["but seen another function defined on the same line; maybe the function is",
                "being re-defined repeatedly, preventing caching?"]
  else:
    old = min(previous, key=lambda k: _distance(key, k))
    diff = _differences(key, old, previous[old].leaf_names)
    lines = [f"for {name} defined at {loc}",
             "all previously seen cache keys differ. For the closest previous key:"]
    lines += diff or ["explanation unavailable! please open an issue at ember's tracker"]
  _seen_locations.add(loc)
  log("jax_explain_cache_misses", "TRACING CACHE MISS at %s:\n  %s", where, "\n  ".join(lines))


@contextlib.contextmanager
def timed(option: str, fmt: str, *args):
  """Log `fmt % (*args, seconds)` after the block when `option` (or DEBUG) is on."""
  t0 = time.perf_counter()
  yield
  if log_enabled(option):
    log(option, fmt, *args, time.perf_counter() - t0)

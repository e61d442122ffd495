"""Host callbacks: Python functions that compiled code calls (pure_callback, io_callback,
debug.print, and user primitives that have an impl but no lowering).

A callback lowers to a `custom-call` of target `TARGET` whose backend config holds the id
`register` gave its host function; hlo_eval and the CPU backend's custom-call thunks look
the function up by that id and call it with the operands as NumPy arrays
(`run(config, *arrays) -> list of arrays`, the signature of every custom-call target in
reference/lapack.py's table, where this one is registered). The ids live only in this
process, so a module holding a callback never goes to the persistent cache.
"""
from __future__ import annotations

import itertools
from typing import Callable

from ember._src.base import denormals
from ember._src.reference import lapack

TARGET = "ember_host_callback"

_functions: dict[int, Callable] = {}
_ids = itertools.count(1)
_user_code: set[int] = set()   # the ids of functions that run the user's Python


def register(fn: Callable, user_code: bool = False) -> int:
  """Keep `fn` for the compiled code that calls it; returns its id. `user_code`: `fn` runs
  the user's Python (a callback, a primitive's impl), not one of ember's collectives."""
  i = next(_ids)
  _functions[i] = fn
  if user_code:
    _user_code.add(i)
  return i


def runs_user_code(instr) -> bool:
  """Whether the HLO instruction `instr` calls a function that runs the user's Python: a
  program holding one runs synchronously, as JAX's, so that the user's exception is raised
  by the call."""
  return (instr.opcode == "custom-call" and instr.attrs.get("target") == TARGET
          and dict(instr.attrs["backend_config"])["callback_id"] in _user_code)


def backend_config(callback_id: int, **extra) -> tuple:
  """The custom call's config: the function's id and `extra` facts. A call that runs a
  collective between devices has `collective` (its kind: "all-reduce", "all-gather", ...)
  and the ids of its `start` and `done` halves (passes/async_collectives.py splits the
  call into those; the halves' own calls say "all-reduce-start", ...)."""
  return (("callback_id", callback_id),) + tuple(extra.items())


def async_halves(instr) -> tuple[str, int, int] | None:
  """(kind, start id, done id) of a host call running a collective that can be split into
  a start and a done; None for any other instruction."""
  if instr.opcode != "custom-call" or instr.attrs.get("target") != TARGET:
    return None
  config = dict(instr.attrs.get("backend_config", ()))
  if "start" not in config:
    return None
  return config["collective"], config["start"], config["done"]


def run(config, *arrays) -> list:
  """The custom-call target: call the registered function on the operands, with IEEE
  subnormals (the kernels around it flush them: base/denormals.py; JAX's callbacks run the
  user's Python without)."""
  with denormals.flushed(False):
    return list(_functions[dict(config)["callback_id"]](*arrays))


lapack.CUSTOM_CALL_TARGETS[TARGET] = run

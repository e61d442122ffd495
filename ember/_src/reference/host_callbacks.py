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

from ember._src.reference import lapack

TARGET = "ember_host_callback"

_functions: dict[int, Callable] = {}
_ids = itertools.count(1)


def register(fn: Callable) -> int:
  """Keep `fn` for the compiled code that calls it; returns its id."""
  i = next(_ids)
  _functions[i] = fn
  return i


def function(callback_id: int) -> Callable:
  return _functions[callback_id]


def backend_config(callback_id: int, collective: str | None = None) -> tuple:
  """The custom call's config: the function's id, and for a call that runs a collective
  between devices its kind ("all-reduce", "all-gather", ...; passes/async_collectives.py
  splits those calls into a start and a done, and marks the kind "all-reduce-start" ...)."""
  config = (("callback_id", callback_id),)
  return config + ((("collective", collective),) if collective else ())


def collective_kind(instr) -> str | None:
  """The collective a host-callback custom call runs, None if it is not one."""
  if instr.opcode != "custom-call" or instr.attrs.get("target") != TARGET:
    return None
  return dict(instr.attrs.get("backend_config", ())).get("collective")


def run(config, *arrays) -> list:
  """The custom-call target: call the registered function on the operands."""
  return list(_functions[dict(config)["callback_id"]](*arrays))


lapack.CUSTOM_CALL_TARGETS[TARGET] = run

"""The base classes and decorators of JAX's hijax API (`jax.experimental.hijax`): user-defined
high-level types (HiType) and primitives over them (HiPrim).

Libraries define their hi types and primitives at import (flax.nnx's variablelib does, for
its optional `flax_hijax_variable` mode), so the classes, decorators and the type registry
are real here. Running a HiPrim needs the hijax machinery (lowering hi types to arrays
through every transformation), which ember does not have yet: calling one raises
NotImplementedError naming hijax.
"""
from __future__ import annotations

from typing import Callable

from ember._src import core
from ember._src.transforms.ad import Zero, instantiate_zeros  # noqa: F401 (re-exported)

_HITYPES: dict[type, Callable] = {}


def _unsupported(what: str) -> NotImplementedError:
  return NotImplementedError(
      f"{what}: ember does not support jax.experimental.hijax primitives yet (high-level "
      "types lowered through jit/grad/vmap). With flax, leave the `flax_hijax_variable` "
      "config off (its default).")


class HiType(core.AbstractValue):
  """The base of a high-level type: subclasses give `lo_ty()` (the array types it stands
  for) and `raise_val(*lo_vals)`; `aval_method` / `aval_property` members act on values."""
  __slots__ = ()


class HiPrim:
  """The base of a primitive over hi types: subclasses set `in_avals`, `out_aval`, `params`
  and give `expand` (its meaning in lower-level operations) and its AD rules."""

  def __init__(self):
    self.params = getattr(self, "params", {})

  def __getattr__(self, name):  # params read as attributes, as in JAX (self.treedef, ...)
    params = self.__dict__.get("params", {})
    if name in params:
      return params[name]
    raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

  def __call__(self, *args):
    raise _unsupported(f"calling the hijax primitive {type(self).__name__}")


class aval_method:  # noqa: N801 (JAX's name)
  """Marks `fun` as a method of a hi type that applies to its values (`x.fun(...)`)."""

  def __init__(self, fun: Callable):
    self.fun = fun

  def __get__(self, instance, owner=None):
    return self if instance is None else self.fun.__get__(instance, owner)


class aval_property(property):  # noqa: N801 (JAX's name)
  """Marks a property of a hi type that applies to its values (`x.prop`)."""


def register_hitype(cls: type, to_aval: Callable) -> None:
  """Values of class `cls` have the hi type `to_aval(value)` (what `jax.typeof` gives)."""
  _HITYPES[cls] = to_aval


def hitype_of(x):
  """The registered hi type of `x`, or None when its class is not registered."""
  to_aval = _HITYPES.get(type(x))
  return None if to_aval is None else to_aval(x)

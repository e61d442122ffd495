"""High-level types (jax.experimental.hijax's HiType): types a library defines whose values
stand for a list of arrays (its "lo" values: `lo_ty()` their types, `lower_val(x)` them,
`raise_val(*lo)` the value back).

ember lowers a hi value wherever a transformation flattens its arguments and results: each
registered hi class is a transform node of tree_util (a leaf to users' pytrees, a node whose
children are its lo values to jit, grad, vmap, ...), so jaxprs only ever hold lo values.
Inside the transformation the function sees a `HiTracer`: a tracer whose aval is the hi type
and which holds the lo tracers; its attributes and operators go to the type's
`aval_method`s, `aval_property`s and `_getitem`, `_add`, ... (as JAX's tracers), which bind
the library's HiPrims (library/hijax.py), and those run their `expand` on the raised value.
"""
from __future__ import annotations

import types
from collections import namedtuple
from typing import Any, Callable

from ember._src.base import tree_util
from ember._src.core.avals import AbstractValue
from ember._src.core.tracers import Tracer


class HiType(AbstractValue):
  """The base of a high-level type: subclasses give `lo_ty()`, `lower_val(x)`,
  `raise_val(*lo)`, `__eq__`/`__hash__` and, for autodiff, `to_tangent_aval()`."""
  __slots__ = ()
  is_high = True

  def to_ct_aval(self):
    return self.to_tangent_aval()


# a member of a hi type that applies to its values (`x.fun(...)`, `x.prop` on a HiTracer):
# plain records as JAX's, so reading one off the type gives the record
aval_method = namedtuple("aval_method", ["fun"])
aval_property = namedtuple("aval_property", ["fget"])

_HITYPES: dict[type, Callable] = {}


def register_hitype(cls: type, to_aval: Callable) -> None:
  """Values of class `cls` have the hi type `to_aval(value)` (what `jax.typeof` gives), and
  transformations take and return them as their lo values."""
  _HITYPES[cls] = to_aval
  tree_util.register_transform_node(cls, _lower, hi_value)


def hitype_of(x):
  """The hi type of `x` (a value of a registered class, or a HiTracer), else None."""
  if type(x) is HiTracer:
    return x.aval
  to_aval = _HITYPES.get(type(x))
  return None if to_aval is None else to_aval(x)


def any_registered() -> bool:
  """Whether any hi type is registered (else no value is hi: checks can be skipped)."""
  return bool(_HITYPES)


def is_hi(x) -> bool:
  return type(x) is HiTracer or type(x) in _HITYPES


def _lower(x) -> tuple[list, Any]:
  aval = _HITYPES[type(x)](x)
  return list(aval.lower_val(x)), aval


def hi_value(aval: HiType, lo: list):
  """The hi value of type `aval` over `lo`: a HiTracer while any of them is traced."""
  lo = list(lo)
  tracers = [x for x in lo if isinstance(x, Tracer)]
  if not tracers:
    return aval.raise_val(*lo)
  # the innermost transformation's tracer names it (grad inside jit: a JVPTracer's)
  return HiTracer(aval, lo, max(tracers, key=lambda t: t._trace.main.level))


def raised(x):
  """A HiTracer as the library's value over its lo tracers (what `expand` rules take)."""
  return x.aval.raise_val(*x.lo) if type(x) is HiTracer else x


def as_tracer(x):
  """A hi value over traced lo values as a HiTracer (what a traced HiPrim returns)."""
  if type(x) in _HITYPES:
    aval = _HITYPES[type(x)](x)
    return hi_value(aval, aval.lower_val(x))
  return x


def _forward(name: str):
  """HiTracer's `__name__`, which calls the hi type's `_name`, as JAX's tracers do."""
  def op(self, *args):
    return getattr(self.aval, "_" + name)(self, *args)
  op.__name__ = f"__{name}__"
  return op


_OPERATORS = (
    "getitem setitem len iter add sub mul matmul truediv floordiv mod divmod pow lshift "
    "rshift and xor or radd rsub rmul rmatmul rtruediv rfloordiv rmod rdivmod rpow rlshift "
    "rrshift rand rxor ror neg pos abs invert complex int float index round trunc floor ceil "
    "eq ne lt le gt ge bool").split()


class HiTracer(Tracer):
  """A hi value inside a transformation: `aval` is its hi type, `lo` its lo values (tracers
  of the transformation). It never reaches a primitive: users act on it through its type."""
  __slots__ = ("_aval", "lo", "_jax_name")

  def __init__(self, aval: HiType, lo: list, tracer: Tracer):
    self._aval, self.lo, self._trace = aval, lo, tracer._trace
    self._jax_name = tracer.jax_name   # JAX prints it as its trace's tracers: JitTracer(...)

  stands_for_array = False   # core.unwrap_jax_array reads its type's __jax_array__
  aval = property(lambda self: self._aval)
  jax_name = property(lambda self: self._jax_name)
  __jax_array__ = property(lambda self: _forward_jax_array(self))

  def __getattribute__(self, name):
    # the array methods ember attaches to Tracer (copy, sum, astype, ...) are not a hi
    # value's: a name that is not HiTracer's own or the object protocol's is its type's
    if name in _OWN or name.startswith("__"):
      return object.__getattribute__(self, name)
    return HiTracer.__getattr__(self, name)

  def __getattr__(self, name):
    try:
      attr = getattr(self._aval, name)
    except AttributeError as err:
      raise AttributeError(f"{type(self).__name__} has no attribute {name}") from err
    if type(attr) is aval_property:
      return attr.fget(self)
    if type(attr) is aval_method:
      return types.MethodType(attr.fun, self)
    return attr

  def __repr__(self):
    return f"{self.jax_name}({self._aval!r})"

  __str__ = __repr__


def _forward_jax_array(tracer: HiTracer):
  method = getattr(tracer.aval, "__jax_array__", None)
  return None if method is None else (lambda: method.fun(tracer))


for _name in _OPERATORS:
  setattr(HiTracer, f"__{_name}__", _forward(_name))
_OWN = frozenset(HiTracer.__dict__) | {"_trace", "stands_for_array"}
tree_util.register_transform_node(HiTracer, lambda t: (t.lo, t.aval), hi_value)

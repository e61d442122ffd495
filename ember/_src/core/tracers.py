"""Tracer, the value that flows through a trace, and the errors that its misuse raises.

A tracer stands for an array while a function is transformed (each interpreter of trace.py
and transforms/ subclasses it). Using one where Python needs a concrete value (`bool()`,
`int()`, `np.asarray`, a static argument) raises JAX's error classes with a message that
names the argument and the fix: the conversions and their messages are one unit. This
module sits below the rest of core: avals.py recognises tracers (get_aval,
canonicalize_shape), and nothing here needs the other modules at run time.
"""
from __future__ import annotations

import numpy as np

from ember._src.base import basearray, errors

# `aval` is annotated ShapedArray (avals.py, which imports this module): annotations stay
# unevaluated strings here (`from __future__ import annotations`).


class Tracer:
  """A value flowing through a trace. Array methods and operators are attached to this
  class and to `Array` by `ember._src.library.numpy.array_methods`."""
  __array_priority__ = 1000
  __slots__ = ("_trace", "__weakref__")

  @property
  def aval(self) -> ShapedArray:
    raise NotImplementedError(f"{type(self).__name__} must define aval (an abstract property)")

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: self.aval.ndim)
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)
  nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)

  def full_lower(self):
    return self

  def to_concrete_value(self):
    """The concrete value this tracer stands for, or None while it is abstract."""
    return None

  def _origin_msg(self) -> str:
    return ""

  def _concrete(self, err_cls, what: str):
    v = self.to_concrete_value()
    if v is None:
      raise err_cls(_concretization_message(self, err_cls, what))
    return v

  def __bool__(self):
    return bool(self._concrete(errors.TracerBoolConversionError, "bool"))

  def __int__(self):
    return int(self._concrete(errors.TracerIntegerConversionError, "int"))

  def __index__(self):
    return self._concrete(errors.TracerIntegerConversionError, "__index__").__index__()

  def __float__(self):
    return float(self._concrete(errors.ConcretizationTypeError, "float"))

  def __complex__(self):
    return complex(self._concrete(errors.ConcretizationTypeError, "complex"))

  def item(self, *args):
    return self._concrete(errors.ConcretizationTypeError, "item").item(*args)

  def tolist(self):
    return self._concrete(errors.ConcretizationTypeError, "tolist").tolist()

  def __array__(self, dtype=None, copy=None):
    v = self.to_concrete_value()
    if v is None:
      raise errors.TracerArrayConversionError(_concretization_message(
          self, errors.TracerArrayConversionError, "__array__"))
    return np.asarray(v, dtype=dtype)

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))

  def __hash__(self):
    raise TypeError(f"unhashable type: {type(self).__name__}. Traced arrays cannot be "
                    "used as dict keys or static arguments.")

  jax_name = "Tracer"   # the class name JAX 0.12 prints for this kind of tracer
  stands_for_array = True   # False for a hi value's tracer (core/hitypes.py)

  def __repr__(self):
    return f"{self.jax_name}({self.aval})"


basearray.Array.register(Tracer)   # isinstance(tracer, jax.Array) is True, as in JAX


def concrete_or_error(force, val, context: str = ""):
  """`force(val)` on val's concrete value (JAX's helper): a tracer that is abstract raises
  ConcretizationTypeError naming `context` (the argument that must be static) and the fix."""
  if isinstance(val, Tracer):
    v = val.to_concrete_value()
    if v is None:
      raise errors.ConcretizationTypeError(
          f"Abstract tracer value encountered where concrete value is expected: "
          f"{val.aval.str_short(short_dtypes=False)}\n{context}\nPass it as a static "
          "argument (static_argnums / static_argnames) or a Python value.")
    val = v
  return val if force is None else force(val)


def _concretization_message(tracer: Tracer, err_cls, what: str) -> str:
  shape = tracer.aval.str_short(short_dtypes=False)
  head = {
      errors.TracerBoolConversionError:
          f"Attempted boolean conversion of traced array with shape {shape}.",
      errors.TracerIntegerConversionError:
          f"The {what}() method was called on traced array with shape {shape}.",
      errors.TracerArrayConversionError:
          f"The numpy.ndarray conversion method __array__() was called on traced array "
          f"with shape {shape}.",
  }.get(err_cls, f"Abstract tracer value encountered where concrete value is expected: "
                 f"traced array with shape {shape}. The problem arose with the `{what}` "
                 "function.")
  fix = {
      errors.TracerBoolConversionError:
          "Python control flow (`if`, `while`, `and`/`or`, `bool()`) cannot depend on a traced "
          "value. Use lax.cond / jnp.where for value-dependent branches, or mark the "
          "argument static with static_argnums / static_argnames.",
      errors.TracerIntegerConversionError:
          "A traced value cannot be used as a Python int (a shape, a Python index, range()). "
          "Mark the argument static with static_argnums / static_argnames, or use "
          "lax.dynamic_slice / lax.fori_loop for value-dependent indexing and loops.",
      errors.TracerArrayConversionError:
          "Use ember.numpy instead of numpy inside transformed functions; NumPy functions "
          "need concrete values.",
  }.get(err_cls, "Mark the argument static with static_argnums / static_argnames, or "
                 "restructure the code so that the value is not needed in Python.")
  origin = tracer._origin_msg()
  return "\n".join(p for p in (head, origin, fix) if p)


# The driver's runner of eager primitives on accelerator arrays (pjrt_dispatch fills it when

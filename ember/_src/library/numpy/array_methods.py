"""The operators and methods shared by `Array` and `Tracer`, each a call into ember.numpy.

Both classes get the same table, so eager code and traced code behave the same.
"""
from __future__ import annotations

from ember._src import core
from ember._src.library.numpy import (
    bit_packing, comparison, creation, differences, einsum, getitem, index_tricks, index_update,
    indexing, logic, polynomial, products, reductions, scalar_types, set_ops, shape, signal,
    sorting, statistics, ufuncs, vectorize)
from ember._src.core.array import Array, device_put

# ember.numpy's namespace, as ember/numpy/__init__.py gathers it (a later module's name wins)
_JNP = {name: getattr(mod, name)
        for mod in (scalar_types, ufuncs, creation, shape, reductions, products, einsum, sorting,
                    logic, comparison, indexing, differences, signal, statistics, set_ops,
                    polynomial, bit_packing, index_tricks, vectorize)
        for name in mod.__all__}


def _fn(name):
  def method(*args, **kwargs):
    return _JNP[name](*args, **kwargs)
  method.__name__ = name
  return method


def _swapped(name):
  def method(self, other):
    return _JNP[name](other, self)
  method.__name__ = f"r{name}"
  return method


# Operand types a binary operator takes as they are (others may define __jax_array__)
_PLAIN_OPERANDS = frozenset({Array, float, int, bool, complex})


def _operand(other):
  """A binary operator's other operand: an object with `__jax_array__` (equinox's
  modules, flax's variables) as the array it stands for, as JAX's operators do; None
  when the operator should return NotImplemented."""
  if not core.is_arraylike(other):
    return None
  # (even one with an `aval`: a flax Variable forwards attributes to its value)
  return core.unwrap_jax_array(other)


def _binop(name):
  def method(self, other):
    if type(other) not in _PLAIN_OPERANDS:
      other = _operand(other)
      if other is None:
        return NotImplemented
    return _JNP[name](self, other)
  method.__name__ = name
  return method


def _rbinop(name):
  def method(self, other):
    if type(other) not in _PLAIN_OPERANDS:
      other = _operand(other)
      if other is None:
        return NotImplemented
    return _JNP[name](other, self)
  method.__name__ = f"r{name}"
  return method


# dunder -> ember.numpy function
_BINOPS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift", "divmod": "divmod",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "invert"}
_METHODS = [
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
    "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "flatten",
    "max", "mean", "min", "nonzero", "prod", "ptp", "ravel", "repeat", "reshape", "round",
    "searchsorted", "sort", "squeeze", "std", "sum", "swapaxes", "take", "trace",
    "transpose", "var", "view",
]
_METHOD_FUNCS = {"flatten": "ravel", "view": "_view", "reshape": "_reshape_method",
                 "transpose": "_transpose_method"}


def _getitem(self, idx):
  return getitem.getitem(self, idx)


def _at(self):
  return index_update.IndexUpdateHelper(self)


def _set_array_methods(cls):
  for dunder, name in _BINOPS.items():
    setattr(cls, f"__{dunder}__", _binop(name))
    setattr(cls, f"__r{dunder}__", _rbinop(name))
  for dunder, name in _COMPARISONS.items():
    setattr(cls, f"__{dunder}__", _binop(name))
  for dunder, name in _UNARY.items():
    setattr(cls, f"__{dunder}__", _fn(name))
  for name in _METHODS:
    setattr(cls, name, _fn(_METHOD_FUNCS.get(name, name)))
  cls.__getitem__ = _getitem
  cls.__round__ = lambda self, ndigits=None: _JNP["round"](self, ndigits or 0)
  cls.at = property(_at)
  cls.T = property(lambda self: _JNP["transpose"](self))
  cls.mT = property(lambda self: _JNP["matrix_transpose"](self))
  cls.real = property(lambda self: _JNP["real"](self))
  cls.imag = property(lambda self: _JNP["imag"](self))
  cls.flat = property(lambda self: _JNP["ravel"](self))


for _cls in (Array, core.Tracer):
  _set_array_methods(_cls)


# Array's own copy/device methods, on tracers too (JAX's tracers have them: optax calls
# `x.copy()` on a traced array under jit).
def _tracer_copy(self):
  return _JNP["array"](self, copy=True)


def _tracer_to_device(self, device, *, stream=None):
  if stream is not None:
    raise ValueError("to_device: ember's CPU device has no streams; pass stream=None.")
  return self if device is None else device_put(self, device)


core.Tracer.copy = _tracer_copy
core.Tracer.__copy__ = _tracer_copy
core.Tracer.__deepcopy__ = lambda self, memo: _tracer_copy(self)
core.Tracer.to_device = _tracer_to_device
core.Tracer.itemsize = property(lambda self: self.aval.dtype.itemsize)

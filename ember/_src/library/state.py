"""Mutable arrays (`jax.Ref`, `jax.new_ref`) and their type (`AbstractRef`), eagerly.

A Ref holds an array that `ref[idx] = value` replaces in place and `ref[idx]` reads. JAX also
lets refs flow through jit and grad as effects; ember does not yet: creating or writing a
ref with a traced value is a NotImplementedError, and a Ref is not an argument jit accepts.
Libraries that only test `isinstance(x, jax.Ref)` / `jax.typeof(x)` (flax.nnx) work as with
JAX.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.library.numpy.creation import asarray


class AbstractRef(core.AbstractValue):
  """The type of a Ref: a mutable array of type `inner_aval` (prints `Ref{float32[3]}`)."""
  __slots__ = ("inner_aval",)

  def __init__(self, inner_aval: core.ShapedArray):
    self.inner_aval = inner_aval

  shape = property(lambda self: self.inner_aval.shape)
  dtype = property(lambda self: self.inner_aval.dtype)
  ndim = property(lambda self: len(self.inner_aval.shape))

  def str_short(self, short_dtypes: bool = False) -> str:
    return f"Ref{{{self.inner_aval.str_short(short_dtypes)}}}"

  def __repr__(self) -> str:
    return self.str_short()

  def __eq__(self, other) -> bool:
    return type(other) is AbstractRef and self.inner_aval == other.inner_aval

  def __hash__(self) -> int:
    return hash((AbstractRef, self.inner_aval))


def _untraced(what: str, value):
  if isinstance(value, core.Tracer):
    raise NotImplementedError(
        f"{what} with a traced value (inside jit, grad or vmap): ember's jax.Ref is eager "
        "only for now (JAX threads refs through transformations as effects). Create and "
        "update refs outside the traced function, or pass arrays in and out instead.")


class Ref:
  """A mutable array (`jax.Ref`): `ref[...]` reads it, `ref[idx] = value` writes in place."""
  __slots__ = ("_value",)

  def __init__(self, value):
    self._value = value

  @property
  def aval(self) -> AbstractRef:
    return AbstractRef(core.get_aval(self._value))

  shape = property(lambda self: self._value.shape)
  dtype = property(lambda self: self._value.dtype)
  ndim = property(lambda self: self._value.ndim)
  size = property(lambda self: self._value.size)

  def __getitem__(self, idx):
    return self._value if idx is Ellipsis else self._value[idx]

  def __setitem__(self, idx, value):
    _untraced("writing a jax.Ref", value)
    inner, new = self.aval.inner_aval, core.get_aval(value)
    target = self._value[idx] if idx is not Ellipsis else self._value
    if not new.weak_type and new.dtype != inner.dtype:
      raise ValueError(f"Invalid dtype for `swap`. Ref dtype: {inner.dtype}. Value dtype: "
                       f"{new.dtype}.")
    if new.shape != target.shape:
      raise ValueError(f"Invalid shape for `swap`. Ref shape: {inner.shape}. Expected shape: "
                       f"{target.shape}. Value shape: {new.shape}.")
    self._value = (asarray(value, inner.dtype) if idx is Ellipsis
                   else self._value.at[idx].set(value))

  def __repr__(self) -> str:
    return "Ref(" + repr(np.asarray(self._value))[len("array("):]


def new_ref(init_val) -> Ref:
  """A new mutable array holding `init_val` (`jax.new_ref`)."""
  _untraced("jax.new_ref", init_val)
  return Ref(asarray(init_val))

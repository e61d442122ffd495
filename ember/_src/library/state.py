"""Mutable arrays (`jax.Ref`, `jax.new_ref`, the `jax.ref` functions) and their type
(`AbstractRef`).

A Ref holds an array that `ref[idx] = value` replaces and `ref[idx]` reads, eagerly and in
traced code: jit, grad, vmap, lax.scan / while_loop / fori_loop / cond / switch. A ref the
traced code creates is a cell of that trace's values; a ref from outside a jitted function or
a loop body or branch is threaded through it (its value an extra input, its new value an
extra output written back after the call: core/refs.py), as JAX discharges refs. A jitted
function may take refs as arguments (each once) but not return one, as in JAX.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.core import refs
from ember._src.library.numpy.creation import asarray, zeros


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


class Ref:
  """A mutable array (`jax.Ref`): `ref[...]` reads it, `ref[idx] = value` writes it. `_frame`
  and `_main`: the staging scope and trace it was created in (core/refs.py)."""
  __slots__ = ("_value", "_frame", "_main", "__weakref__")

  def __init__(self, value):
    self._value = value
    self._frame, self._main = refs.scope()

  @property
  def aval(self) -> AbstractRef:
    a = core.get_aval(self._value)
    return AbstractRef(core.ShapedArray(a.shape, a.dtype))

  shape = property(lambda self: core.get_aval(self._value).shape)
  dtype = property(lambda self: core.get_aval(self._value).dtype)
  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  def __getitem__(self, idx):
    value = refs.read(self)
    return value if idx is Ellipsis else value[idx]

  def __setitem__(self, idx, value):
    inner, new = self.aval.inner_aval, core.get_aval(value)
    current = refs.read(self)
    target = current if idx is Ellipsis else core.get_aval(current[idx])
    if not new.weak_type and new.dtype != inner.dtype:
      raise ValueError(f"Invalid dtype for `swap`. Ref dtype: {inner.dtype}. Value dtype: "
                       f"{new.dtype}.")
    if new.shape != target.shape:
      raise ValueError(f"Invalid shape for `swap`. Ref shape: {inner.shape}. Expected shape: "
                       f"{target.shape}. Value shape: {new.shape}.")
    refs.write(self, asarray(value, inner.dtype) if idx is Ellipsis
               else current.at[idx].set(value), self.aval)

  def __repr__(self) -> str:
    value = refs.read(self)
    if isinstance(value, core.Tracer):
      return f"Ref({value})"
    return "Ref(" + repr(np.asarray(value))[len("array("):]


refs.register_ref_type(Ref)


def new_ref(init_val, *, memory_space=None) -> Ref:
  """A new mutable array holding `init_val` (`jax.new_ref`)."""
  del memory_space   # one memory here
  return Ref(asarray(init_val))


def empty_ref(ty, *, memory_space=None) -> Ref:
  """A new mutable array of type `ty` (its initial values unspecified: zeros here)."""
  del memory_space
  return Ref(zeros(ty.shape, ty.dtype))


def free_ref(ref: Ref) -> None:
  """JAX's hint that `ref` is no longer used: nothing to do here."""
  del ref


def freeze(ref: Ref):
  """The value of `ref` (JAX's freeze, which also retires the ref)."""
  return ref[...]


def get(ref: Ref, idx=()):
  return ref[idx]


def set(ref: Ref, idx, value) -> None:  # noqa: A001 - jax.ref's name
  ref[idx] = value


def swap(ref: Ref, idx, value):
  """Write `value` at `idx` and return what was there."""
  old = ref[idx]
  ref[idx] = value
  return old


def addupdate(ref: Ref, idx, x) -> None:
  """Add `x` into `ref` at `idx`."""
  ref[idx] = ref[idx] + x

"""jnp.ufunc and jnp.frompyfunc: a scalar Python function made into a NumPy-style universal
function, as jax/_src/numpy/ufunc_api.py does it: calling it vectorizes the function
(nested vmaps); reduce, accumulate, at and reduceat loop over the axis (fori_loop / scan,
so they trace and jit); outer is two vmaps. ember's own jnp.add & co stay plain functions
(JAX 0.12 makes them ufunc instances)."""
from __future__ import annotations

import math
import operator
from functools import partial
from typing import Any, Callable

import numpy as np

from ember._src.base import dtypes
from ember._src.driver.jit import eval_shape, jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, indexing, logic
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.numpy.reductions import asarray_arg, aval
from ember._src.library.numpy.util import canonicalize_axis
from ember._src.library.numpy.vectorize import vectorize
from ember._src.primitives.control.loops import fori_loop
from ember._src.primitives.control.scans import scan
from ember._src.transforms.batching import vmap

__all__ = ["ufunc", "frompyfunc"]

_AT_INPLACE = ("Because arrays are immutable, jnp.ufunc.at() cannot operate inplace like "
               "np.ufunc.at(). Pass inplace=False and use the result; e.g.\n"
               ">>> arr = jnp.add.at(arr, ind, val, inplace=False)")


def _one(x):
  """A scalar 1 of x's dtype: a probe for the result dtype of the ufunc's function."""
  return creation.ones((), aval(asarray_arg("ufunc", x)).dtype)


class ufunc:  # noqa: N801 - NumPy's and JAX's name
  """A universal function from a scalar function of `nin` arguments and `nout` results.
  Its fields are read-only, so that a ufunc is hashable and may be a static argument."""

  def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
               name: str | None = None, nargs: int | None = None, identity: Any = None,
               call=None, reduce=None, accumulate=None, at=None, reduceat=None):
    self.__doc__ = func.__doc__
    self.__name__ = name or func.__name__
    self.__props = {"func": func, "nin": operator.index(nin), "nout": operator.index(nout),
                    "nargs": operator.index(nargs or nin), "identity": identity,
                    "call": call, "reduce": reduce, "accumulate": accumulate, "at": at,
                    "reduceat": reduceat}

  _func = property(lambda self: self.__props["func"])
  nin = property(lambda self: self.__props["nin"])
  nout = property(lambda self: self.__props["nout"])
  nargs = property(lambda self: self.__props["nargs"])
  identity = property(lambda self: self.__props["identity"])

  def _key(self):
    return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

  def __hash__(self) -> int:
    return hash(self._key())

  def __eq__(self, other: Any) -> bool:
    return isinstance(other, ufunc) and self._key() == other._key()

  def __repr__(self) -> str:
    return f"<jnp.ufunc '{self.__name__}'>"

  def __call__(self, *args, out=None, where=None):
    for a in args:
      asarray_arg(self.__name__, a)
    if out is not None:
      raise NotImplementedError(f"out argument of {self}")
    if where is not None:
      raise NotImplementedError(f"where argument of {self}")
    return (self.__props["call"] or self._call_vectorized)(*args)

  @partial(jit, static_argnames=["self"])
  def _call_vectorized(self, *args):
    return vectorize(self._func)(*args)

  def _check_binary(self, method: str):
    if self.nin != 2:
      raise ValueError(f"{method} only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError(f"{method} only supported for functions returning a single value")

  def _result_dtype(self, *args):
    return eval_shape(self._func, *(_one(a) for a in args)).dtype

  # --- reduce -------------------------------------------------------------------------

  @partial(jit, static_argnames=["self", "axis", "dtype", "out", "keepdims"])
  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    """Fold the function over `axis` (None: all axes), from `initial` (or the identity)
    if given, else from the first element."""
    asarray_arg(f"{self.__name__}.reduce", a)
    self._check_binary("reduce")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if where is not None:
      asarray_arg(f"{self.__name__}.reduce", where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, "
                         "so to use a where mask one has to specify 'initial'.")
      if aval(asarray_arg("where", where)).dtype != np.bool_:
        raise ValueError("where argument must have dtype=bool; got "
                         f"dtype={aval(asarray_arg('where', where)).dtype}")
    fn = self.__props["reduce"] or self._reduce_via_loop
    return fn(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

  def _reduce_via_loop(self, arr, axis=0, dtype=None, keepdims=False, initial=None,
                       where=None):
    arr = asarray_arg(f"{self.__name__}.reduce", arr)
    initial = self.identity if initial is None else initial
    dtype = self._result_dtype(arr, arr) if dtype is None else dtype
    shape = aval(arr).shape
    if where is not None:
      where = shape_ops.broadcast_to(where, shape)
    if isinstance(axis, tuple):
      raise NotImplementedError("tuple of axes")   # as JAX 0.12
    if axis is None:
      final_shape = (1,) * len(shape) if keepdims else ()
      arr, axis = arr.ravel(), 0
      where = None if where is None else where.ravel()
    else:
      axis = canonicalize_axis(axis, len(shape))
      final_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
    if axis != 0:
      arr = shape_ops.moveaxis(arr, axis, 0)
      where = None if where is None else shape_ops.moveaxis(where, axis, 0)
    n = aval(arr).shape[0]
    if n == 0:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                         "no identity")
      return lax.full(final_shape, initial, dtype)

    def body(i, acc):
      new = self(acc, arr[i].astype(dtype))
      return new if where is None else logic.where(where[i], new, acc)
    start, first = (1, arr[0]) if initial is None else (0, initial)
    first = shape_ops.broadcast_to(creation.asarray(first).astype(dtype), aval(arr).shape[1:])
    result = fori_loop(start, n, body, first)
    return result.reshape(final_shape) if keepdims else result

  # --- accumulate ---------------------------------------------------------------------

  @partial(jit, static_argnames=["self", "axis", "dtype"])
  def accumulate(self, a, axis: int = 0, dtype=None, out=None):
    """The running fold along `axis` (out[0] = a[0], out[i] = f(out[i-1], a[i]))."""
    self._check_binary("accumulate")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    fn = self.__props["accumulate"] or self._accumulate_via_scan
    return fn(a, axis=axis, dtype=dtype)

  def _accumulate_via_scan(self, arr, axis=0, dtype=None):
    arr = asarray_arg(f"{self.__name__}.accumulate", arr)
    if dtype is None:
      dtype = self._result_dtype(arr, arr)
    else:
      dtype = dtypes.check_user_dtype(dtype, f"{self.__name__}.accumulate")
    if axis is None or isinstance(axis, tuple):
      raise ValueError("accumulate does not allow multiple axes")
    axis = canonicalize_axis(axis, aval(arr).ndim)
    if math.prod(aval(arr).shape) == 0:
      return lax.full(aval(arr).shape, 0, dtype)
    arr = shape_ops.moveaxis(arr, axis, 0).astype(dtype)

    def step(carry, x):
      i, acc = carry
      y = logic.where(i == 0, x, self._func(acc, x).astype(dtype))
      return (i + 1, y), y
    _, result = scan(step, (0, arr[0]), arr)
    return shape_ops.moveaxis(result, 0, axis)

  # --- at -----------------------------------------------------------------------------

  @partial(jit, static_argnums=[0], static_argnames=["inplace"])
  def at(self, a, indices, b=None, /, *, inplace: bool = True):
    """a with f(a[idx], b) written at each index in turn (repeated indices apply again).
    Only inplace=False: arrays are immutable."""
    if inplace:
      raise NotImplementedError(_AT_INPLACE)
    fn = self.__props["at"] or self._at_via_scan
    return fn(a, indices) if b is None else fn(a, indices, b)

  def _at_via_scan(self, a, indices, *args):
    asarray_arg(f"{self.__name__}.at", a)
    dtype = self._result_dtype(a, *args)
    a = asarray_arg(f"{self.__name__}.at", a).astype(dtype)
    args = tuple(asarray_arg(f"{self.__name__}.at", x).astype(dtype) for x in args)
    indices = indices if isinstance(indices, tuple) else (indices,)
    if not indices:
      return a
    shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
    shape = shapes and np.broadcast_shapes(*shapes)
    if not shape:
      return a.at[indices].set(self(a.at[indices].get(), *args))
    size = math.prod(shape)
    if args:
      rest = aval(args[0]).shape[len(shape):]
      args = (shape_ops.broadcast_to(args[0], (*shape, *rest)).reshape(size, *rest),)
    indices = [i if isinstance(i, slice) else shape_ops.broadcast_to(i, shape).ravel()
               for i in indices]

    def step(carry, _):
      i, acc = carry
      idx = tuple(ind if isinstance(ind, slice) else ind[i] for ind in indices)
      acc = acc.at[idx].set(self(acc.at[idx].get(), *(x[i] for x in args)))
      return (i + 1, acc), None
    (_, out), _ = scan(step, (0, a), None, size)
    return out

  # --- reduceat -----------------------------------------------------------------------

  @partial(jit, static_argnames=["self", "axis", "dtype"])
  def reduceat(self, a, indices, axis: int = 0, dtype=None, out=None):
    """Folds over the slices indices[i]:indices[i+1] of `axis` (the last to the end); an
    index not below the next gives a[indices[i]], as NumPy."""
    self._check_binary("reduceat")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    fn = self.__props["reduceat"] or self._reduceat_via_loop
    return fn(a, indices, axis=axis, dtype=dtype)

  def _reduceat_via_loop(self, a, indices, axis=0, dtype=None):
    a = asarray_arg(f"{self.__name__}.reduceat", a)
    indices = asarray_arg(f"{self.__name__}.reduceat", indices)
    if aval(a).ndim == 0:
      raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={aval(a).shape}")
    if aval(indices).ndim != 1:
      raise ValueError("reduceat: indices must be one-dimensional, got "
                       f"indices.shape={aval(indices).shape}")
    if dtype is not None:
      a = a.astype(dtype)
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError("reduceat requires a single integer axis.")
    axis = canonicalize_axis(axis, aval(a).ndim)
    n = aval(a).shape[axis]
    out = indexing.take(a, indices, axis=axis)
    other = [d for d in range(aval(out).ndim) if d != axis]
    bounds = lax.expand_dims(shape_ops.append(indices, n), other)
    m = aval(bounds).shape[axis]
    start = lax.slice_in_dim(bounds, 0, m - 1, axis=axis)
    end = lax.slice_in_dim(bounds, 1, m, axis=axis)

    def body(i, acc):
      inside = (i > start) & (i < end)
      return logic.where(inside, self(acc, indexing.take(a, lax.expand_dims(i, (0,)),
                                                          axis=axis)), acc)
    return fori_loop(0, n, body, out)

  # --- outer --------------------------------------------------------------------------

  @partial(jit, static_argnums=[0])
  def outer(self, A, B, /):
    """f(A[i...], B[j...]) for every pair: shape A.shape + B.shape."""
    self._check_binary("outer")
    A = asarray_arg(f"{self.__name__}.outer", A)
    B = asarray_arg(f"{self.__name__}.outer", B)
    flat = vmap(vmap(self, (None, 0)), (0, None))(A.ravel(), B.ravel())
    return flat.reshape(*aval(A).shape, *aval(B).shape)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *, identity: Any = None):
  """A jnp.ufunc from a scalar function of `nin` arguments and `nout` results."""
  return ufunc(func, nin, nout, identity=identity)

"""pmap: map a function over the leading axis of its arguments, one example per device.

ember runs on one CPU device, so a pmap computes what JAX's does on that many devices with
the same program: `jit(vmap(f, in_axes, out_axes, axis_name=...))`, the named axis usable
by the collectives. Like JAX, a mapped size above the device count is an error.
"""
from __future__ import annotations

import functools
from typing import Callable

from ember._src import sharding, tree_util
from ember._src.jit import jit
from ember._src.transforms import batching


def _as_argnums(argnums) -> tuple[int, ...]:
  return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _check_size(name: str, args, in_axes) -> None:
  """The mapped size must fit the devices (JAX needs one device per example)."""
  flat, tree = tree_util.tree_flatten(args)
  dims = batching.flatten_axes("pmap in_axes", tree, in_axes)
  sizes = {batching.shape_of(x)[d] for x, d in zip(flat, dims) if d is not None}
  n = len(sharding.devices())
  for size in sizes:
    if size > n:
      raise ValueError(f"pmap of {name}: the mapped axis has size {size}, but there are only "
                       f"{n} devices (jax.device_count()); pmap runs one example per device. "
                       "Use jax.vmap to map over more examples than devices.")


def pmap(fun: Callable, axis_name=None, *, in_axes=0, out_axes=0,
         static_broadcasted_argnums=(), devices=None, backend=None, axis_size=None,
         donate_argnums=()):
  """`fun` mapped over axis `in_axes` of its arguments, one example per device, compiled
  once (`jit(vmap(...))`); `axis_name` names the mapped axis for collectives.
  `static_broadcasted_argnums` are static (hashable) arguments given to every example.
  `devices` and `backend` are accepted: ember has one CPU device."""
  static = _as_argnums(static_broadcasted_argnums)
  name = getattr(fun, "__name__", repr(fun))

  def dynamic(seq, nargs):
    """The entries of `seq` (the arguments, or in_axes) at the non-static positions."""
    fixed = {i % nargs for i in static} if nargs else set()
    return tuple(a for i, a in enumerate(seq) if i not in fixed)

  def dynamic_axes(nargs):
    return dynamic(in_axes, nargs) if isinstance(in_axes, (tuple, list)) else in_axes

  @functools.partial(jit, static_argnums=static, donate_argnums=donate_argnums)
  def mapped(*args):
    def example(*dyn):
      it = iter(dyn)
      fixed = {i % len(args) for i in static}
      return fun(*(args[i] if i in fixed else next(it) for i in range(len(args))))
    return batching.vmap(example, dynamic_axes(len(args)), out_axes, axis_name=axis_name,
                         axis_size=axis_size)(*dynamic(args, len(args)))

  @functools.wraps(fun)
  def pmap_f(*args):
    _check_size(name, dynamic(args, len(args)), dynamic_axes(len(args)))
    return mapped(*args)
  return pmap_f

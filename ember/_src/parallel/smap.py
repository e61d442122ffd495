"""smap (jax.smap): shard_map over one mesh axis, specs given as vmap-style axes."""
from __future__ import annotations

import functools
from typing import Any, Callable

from ember._src.base import tree_util
from ember._src.core.sharding import (
    AxisType, NamedSharding, PartitionSpec, context_mesh)
from ember._src.parallel.pmap import shard_map

_INFER = type("Infer", (), {"__repr__": lambda self: "jax.sharding.Infer"})()


def _axis_spec(axis_name, axis) -> PartitionSpec:
  """Axis `axis` split over `axis_name` (None: not split)."""
  return PartitionSpec() if axis is None else PartitionSpec(*[None] * axis, axis_name)


def _inferred_specs(args, axis_name) -> tuple:
  """Each argument's spec from its sharding, as JAX reads it from Explicit types: an
  array placed by a NamedSharding keeps that spec's use of `axis_name`; others are
  whole."""
  def spec_of(x):
    sharding = getattr(x, "sharding", None)
    if isinstance(sharding, NamedSharding):
      return PartitionSpec(*[p if p == axis_name else None for p in sharding.spec])
    return PartitionSpec()
  return tuple(tree_util.tree_map(spec_of, a) for a in args)


def smap(f: Callable | None = None, /, *, in_axes: Any = _INFER, out_axes: Any,
         axis_name) -> Callable:
  """`f` run once per device along mesh axis `axis_name` of the mesh in context
  (`jax.smap`): `in_axes` (an int, None, or a tuple with one per positional argument) says
  which axis of each input is split over it, `out_axes` where the outputs' pieces join. A
  decorator when `f` is omitted."""
  if f is None:
    return lambda g: smap(g, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name)
  if isinstance(axis_name, (list, tuple)):
    raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
  if in_axes is not None and in_axes is not _INFER and not isinstance(in_axes, (int, tuple)):
    raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                    "entries corresponding to the positional arguments passed to the "
                    f"function, but got {in_axes}.")
  if in_axes is not _INFER and not all(isinstance(a, int)
                                        for a in tree_util.tree_leaves(in_axes)):
    raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or (nested) "
                    f"container with those types as leaves, but got {in_axes}.")
  if not all(isinstance(a, int) for a in tree_util.tree_leaves(out_axes)):
    raise TypeError("smap out_axes must be an int, None, or (nested) container with those "
                    f"types as leaves, but got {out_axes}.")
  to_spec = functools.partial(_axis_spec, axis_name)
  out_specs = tree_util.tree_map(to_spec, out_axes, is_leaf=lambda a: a is None)
  in_specs = None if in_axes is _INFER else tree_util.tree_map(
      to_spec, in_axes, is_leaf=lambda a: a is None)

  @functools.wraps(f)
  def mapped(*args):
    specs = in_specs
    if specs is None:
      mesh = context_mesh()
      if mesh is not None and axis_name in mesh.axis_names:
        kind = dict(zip(mesh.axis_names, mesh.axis_types))[axis_name]
        if kind != AxisType.Explicit:
          raise TypeError(f"in_axes was not specified when axis_name="
                          f"{frozenset({axis_name})} was of type AxisType.{kind.name}")
      specs = _inferred_specs(args, axis_name)
    elif isinstance(specs, PartitionSpec):
      specs = (specs,) * len(args)
    return shard_map(f, in_specs=specs, out_specs=out_specs,
                     axis_names=frozenset({axis_name}))(*args)
  return mapped

"""Small parts of jax.lax written with other lax functions: broadcast_like, empty,
index_take, shape_as_value, dce_sink, platform_dependent; and the type names lax
exports for annotations (PrecisionLike, DotDimensionNumbers) and RandomAlgorithm."""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.library.lax import api as lax
from ember._src.primitives.prng import RandomAlgorithm  # noqa: F401 (lax.RandomAlgorithm)

__all__ = ["broadcast_like", "empty", "index_take", "shape_as_value", "dce_sink",
           "platform_dependent", "PrecisionLike", "DotDimensionNumbers", "RandomAlgorithm"]

PrecisionLike = Union[None, str, lax.Precision, tuple[str, str],
                      tuple[lax.Precision, lax.Precision]]
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


def broadcast_like(arr, like_arr):
  """`arr` broadcast (NumPy's trailing alignment) to the shape of `like_arr`."""
  shape = core.get_aval(like_arr).shape
  aval = core.get_aval(arr)
  if len(aval.shape) > len(shape):
    raise ValueError(f"broadcast_like: cannot broadcast shape {aval.shape} to {shape}")
  lead = len(shape) - len(aval.shape)
  return lax.broadcast_in_dim(arr, shape, tuple(range(lead, len(shape))))


def empty(shape, dtype, *, out_sharding=None):
  """An array whose values are unspecified: zeros here (as JAX on the CPU)."""
  shape = (shape,) if isinstance(shape, int) else tuple(shape)
  return lax.full(shape, 0, dtypes.check_user_dtype(dtype, "empty"), sharding=out_sharding)


def index_take(src, idxs, axes: Sequence[int]):
  """src[idxs[0], idxs[1], ...] along `axes` (indices wrap modulo the axis size), the
  remaining dimensions kept: a gather."""
  axes = tuple(axes)
  src_shape = core.get_aval(src).shape
  indices = lax.concatenate([lax.expand_dims(i, (1,)) for i in idxs], 1)
  sizes = np.array([[src_shape[ax] for ax in axes]], dtype=core.get_aval(indices).dtype)
  indices = lax.rem(lax.add(lax.rem(indices, sizes), sizes), sizes)   # Python's modulo
  slice_sizes = tuple(1 if d in axes else n for d, n in enumerate(src_shape))
  dnums = lax.GatherDimensionNumbers(
      offset_dims=tuple(range(1, len(src_shape) - len(axes) + 1)),
      collapsed_slice_dims=axes, start_index_map=axes)
  return lax.gather(src, indices, dimension_numbers=dnums, slice_sizes=slice_sizes)


def shape_as_value(shape):
  """A (static) shape as an int32 vector."""
  return np.asarray(tuple(shape), dtype=np.int32).reshape(len(tuple(shape)))


def dce_sink(val, *, prevent_mlir_dce: bool = False):
  """Marks `val` (a pytree) as used. ember's DCE removes only computations whose results
  nothing observes, so there is nothing to keep: this checks the leaves and returns None."""
  for leaf in tree_util.tree_leaves(val):
    core.get_aval(leaf)


def platform_dependent(*args: Any, default: Callable | None = None,
                       **per_platform: Callable):
  """`per_platform['cpu'](*args)` (ember compiles for the CPU), else `default(*args)`."""
  branch = per_platform.get("cpu", default)
  if branch is None:
    raise ValueError(f"Unsupported platform cpu: platform_dependent has branches for "
                     f"{sorted(per_platform)} and no default.")
  return branch(*args)

"""jax.ops: the segment reductions (segment_sum, segment_prod, segment_max, segment_min), as
one scatter of the data into an array of num_segments identities."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, reductions
from ember._src.library.numpy.index_update import _scatter_update
from ember._src.reference.indexing import GatherScatterMode


def _identity(scatter_op: Callable, dtype):
  """What an empty segment holds: the identity of the reduction in `dtype`."""
  if scatter_op is lax.scatter_add:
    return 0
  if scatter_op is lax.scatter_mul:
    return 1
  if dtype == np.bool_:
    return scatter_op is lax.scatter_min
  if dtypes.is_integer(dtype):
    info = np.iinfo(dtype)
    return info.max if scatter_op is lax.scatter_min else info.min
  return np.inf if scatter_op is lax.scatter_min else -np.inf


def _segment_update(name: str, data, segment_ids, scatter_op: Callable, num_segments,
                    indices_are_sorted: bool, unique_indices: bool, bucket_size,
                    reducer: Callable, mode):
  for arg_name, arg in (("data", data), ("segment_ids", segment_ids)):
    if not core.is_arraylike(arg) or isinstance(arg, (list, tuple)):
      raise TypeError(f"{name} requires ndarray or scalar arguments, got {type(arg)} at "
                      f"position {0 if arg_name == 'data' else 1}.")
  mode = GatherScatterMode.FILL_OR_DROP if mode is None else mode
  data, segment_ids = creation.asarray(data), creation.asarray(segment_ids)
  dtype = data.dtype
  if num_segments is None:
    num_segments = int(np.max(core.concrete_or_error(
        np.asarray, segment_ids, f"{name}() with num_segments=None")) + 1)
  num_segments = int(core.concrete_or_error(
      int, num_segments, f"{name}() `num_segments` argument."))
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  identity = _identity(scatter_op, dtype)
  if bucket_size is None:
    out = creation.full((num_segments,) + data.shape[1:], identity, dtype=dtype)
    return _scatter_update(out, segment_ids, data, scatter_op,
                           indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices, mode=mode, normalize_indices=False)
  # per bucket of `bucket_size` consecutive ids, then the buckets reduced: sums and products
  # of fewer terms each, for accuracy (JAX's scheme)
  num_buckets = -(-segment_ids.size // bucket_size)
  out = creation.full((num_buckets, num_segments) + data.shape[1:], identity, dtype=dtype)
  buckets = creation.arange(segment_ids.shape[0]) // bucket_size
  out = _scatter_update(out, np.index_exp[buckets, segment_ids[None, :]], data, scatter_op,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                        mode=mode, normalize_indices=False)
  return reducer(out, axis=0).astype(dtype)


def segment_sum(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None):
  """The sum of `data`'s rows per segment (`out[i] = sum of data[j] with segment_ids[j] ==
  i`); ids outside [0, num_segments) are dropped; num_segments=None: max(segment_ids) + 1
  (concrete ids only)."""
  return _segment_update("segment_sum", data, segment_ids, lax.scatter_add, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, reductions.sum,
                         mode)


def segment_prod(data, segment_ids, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode=None):
  """The product of `data`'s rows per segment (1 for an empty one), as segment_sum."""
  return _segment_update("segment_prod", data, segment_ids, lax.scatter_mul, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, reductions.prod,
                         mode)


def segment_max(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None):
  """The maximum of `data`'s rows per segment (-inf, or the dtype's minimum, for an empty
  one), as segment_sum."""
  return _segment_update("segment_max", data, segment_ids, lax.scatter_max, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, reductions.max,
                         mode)


def segment_min(data, segment_ids, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode=None):
  """The minimum of `data`'s rows per segment (inf, or the dtype's maximum, for an empty
  one), as segment_sum."""
  return _segment_update("segment_min", data, segment_ids, lax.scatter_min, num_segments,
                         indices_are_sorted, unique_indices, bucket_size, reductions.min,
                         mode)

"""ember.scipy.stats.mode, rankdata and sem (jax.scipy.stats's summary functions), jitted with
the same static arguments as JAX 0.12.1."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import ember.numpy as jnp
from ember._src.base import dtypes
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.transforms.batching import vmap

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_NAN_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
  mode: object
  count: object


def _check_nan_policy(name, nan_policy):
  if nan_policy not in _NAN_POLICIES:
    raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                     "{'propagate', 'omit', 'raise'}")
  if nan_policy == "omit":
    raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
  if nan_policy == "raise":
    raise NotImplementedError(
        f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
        f"Please check if nans exist in `x` outside of the `{name}` function.")


def _mode_output_shape(shape, axis, keepdims):
  if axis is None:
    return tuple(1 for _ in shape) if keepdims else ()
  if keepdims:
    return tuple(1 if i == axis else s for i, s in enumerate(shape))
  return tuple(s for i, s in enumerate(shape) if i != axis)


def _mode_of_column(x):
  """(the most frequent value, the smallest on ties, and its count) of a 1-D array."""
  if x.size == 0:
    nan = jnp.array(np.nan, dtype=dtypes.default_float_dtype())
    return nan, jnp.array(0, dtype=dtypes.default_float_dtype())
  values, counts = jnp.unique(x, return_counts=True, size=x.size)
  return values[jnp.argmax(counts)], counts.max()


@jit(static_argnames=("axis", "nan_policy", "keepdims"))
def mode(a, axis=0, nan_policy="propagate", keepdims=False):
  """The modal value along `axis` (all of `a` for None) and how often it occurs."""
  util.check_arraylike("mode", a)
  x = jnp.atleast_1d(a)
  _check_nan_policy("mode", nan_policy)
  if axis is not None:
    axis = util.canonicalize_axis(axis, x.ndim)
  output_shape = _mode_output_shape(x.shape, axis, keepdims)
  if axis is None:
    axis, x = 0, x.ravel()
  x = jnp.moveaxis(x, axis, 0)
  x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
  values, counts = vmap(_mode_of_column, in_axes=1)(x)
  return ModeResult(values.reshape(output_shape), counts.reshape(output_shape))


def _invert_permutation(i):
  return jnp.empty_like(i).at[i].set(jnp.arange(i.size, dtype=i.dtype))


def _ranks(a, method, out_dtype):
  """Ranks of a 1-D array without NaNs: sort once, then count distinct values."""
  sorted_a, sorter = lax.sort_key_val(a, jnp.arange(a.size))
  inverse = _invert_permutation(sorter)
  if method == "ordinal":
    return (inverse + 1).astype(out_dtype)
  new_value = jnp.concatenate([jnp.array([True]), sorted_a[1:] != sorted_a[:-1]])
  dense = new_value.cumsum()[inverse]
  if method == "dense":
    return dense.astype(out_dtype)
  # count[j]: how many elements are smaller than the j-th distinct value
  count = jnp.nonzero(new_value, size=sorted_a.size + 1,
                      fill_value=new_value.size)[0].astype(out_dtype)
  if method == "max":
    return count[dense]
  if method == "min":
    return count[dense - 1] + 1
  return 0.5 * (count[dense] + count[dense - 1] + 1)   # average


@jit(static_argnames=("method", "axis", "nan_policy"))
def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
  """Ranks from 1, ties resolved by `method` (average, min, max, dense, ordinal), in the
  default float dtype; all NaN if `a` has a NaN (nan_policy='propagate')."""
  util.check_arraylike("rankdata", a)
  _check_nan_policy("rankdata", nan_policy)
  if method not in ("average", "min", "max", "dense", "ordinal"):
    raise ValueError(f"unknown method '{method}'")
  if axis is not None:
    return jnp.apply_along_axis(rankdata, axis, a, method)
  a = jnp.ravel(a)
  out_dtype = dtypes.default_float_dtype()
  return lax.cond(jnp.any(jnp.isnan(a)), lambda a: jnp.full_like(a, jnp.nan, out_dtype),
                  lambda a: _ranks(a, method, out_dtype), a)


@jit(static_argnames=("axis", "nan_policy", "keepdims"))
def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
  """The standard error of the mean, std(ddof) / sqrt(n), along `axis`; nan_policy='omit'
  leaves NaNs out of both."""
  b, = util.promote_args_inexact("sem", a)
  if nan_policy == "propagate":
    size = b.size if axis is None else b.shape[axis]
    return b.std(axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(size).astype(b.dtype)
  if nan_policy == "omit":
    count = (~jnp.isnan(b)).sum(axis, keepdims=keepdims)
    return jnp.nanstd(b, axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(count).astype(b.dtype)
  raise ValueError(f"{nan_policy} is not supported")

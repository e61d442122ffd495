"""ember.numpy reductions: sum/prod/max/min/any/all, statistics (mean, var, std, median,
quantile, average), their nan* variants, arg-reductions and cumulative reductions.

Ported from jax/_src/numpy/reductions.py so the staged primitives, dtypes and weak types
match JAX: every reduction goes through `_reduction` (cast to the computation dtype, mask
with `where=`, one lax reduce primitive, combine with `initial=`, keepdims, cast back).
Functions JAX wraps in a named `jit` (`_var`, `cumsum`, `nanmax`, ...) are wrapped the
same way here, so jaxprs show the same `jit[name=...]` equations.
"""
from __future__ import annotations

import builtins
import math
import operator
from functools import partial
from typing import Any, Callable, NamedTuple

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import logic, util
from ember._src.library.numpy.creation import _ensure_arraylike, _zero, asarray, eye
from ember._src.primitives.elementwise import convert_element_type
from ember._src.primitives.structural import broadcast_in_dim
from ember._src.core.array import Array

__all__ = [
    "sum", "prod", "max", "min", "amax", "amin", "minmax", "any", "all", "mean", "average",
    "var", "std", "ptp", "median", "quantile", "percentile", "nanmedian", "nanquantile",
    "nanpercentile", "nansum", "nanprod", "nanmean", "nanmax", "nanmin", "nanvar",
    "nanstd", "argmax", "argmin", "nanargmax", "nanargmin", "count_nonzero", "cumsum",
    "cumprod", "nancumsum", "nancumprod", "cumulative_sum", "cumulative_prod", "trace",
    "diagonal", "diag", "diagflat",
]

_all, _any, _max, _min = builtins.all, builtins.any, builtins.max, builtins.min

# ---------------------------------------------------------------------------------------
# Helpers shared with ember/_src/library/numpy's products, einsum, linalg_*, sorting & co.
# ---------------------------------------------------------------------------------------


def asarray_arg(fun_name: str, x):
  """JAX's `ensure_arraylike` for one argument: Arrays and tracers pass through; Python
  scalars and NumPy values become constant Arrays (scalars stay weakly typed)."""
  util.check_arraylike(fun_name, x)
  if isinstance(x, Array) or isinstance(x, core.Tracer) and x.stands_for_array:
    return x
  if hasattr(x, "__jax_array__"):
    return asarray_arg(fun_name, x.__jax_array__())
  aval = core.get_aval(x)
  return Array(np.asarray(x, aval.dtype), weak_type=aval.weak_type)


def asarray_args(fun_name: str, *xs):
  return [asarray_arg(fun_name, x) for x in xs]


def aval(x) -> core.ShapedArray:
  return core.get_aval(x)


def check_out(fun_name: str, out) -> None:
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{fun_name} is not supported.")


def static_axes(axis, fun_name: str = ""):
  """`axis` as None, an int or a tuple of ints; traced axes raise ConcretizationTypeError."""
  if axis is None:
    return None
  leaves = axis if isinstance(axis, (tuple, list)) else (axis,)
  if _any(isinstance(a, core.Tracer) for a in leaves):
    raise errors.ConcretizationTypeError(
        f"Abstract tracer value encountered where concrete value is expected: the axis "
        f"argument{' of jnp.' + fun_name if fun_name else ''} must be known statically. "
        "Pass it as a Python int (mark it static with static_argnums / static_argnames).")
  if isinstance(axis, (tuple, list)):
    return tuple(operator.index(a) for a in axis)
  return operator.index(axis)


def reduction_dims(ndim: int, axis) -> tuple:
  """Canonical (non-negative) reduction axes; ValueError for out-of-range or repeats."""
  if axis is None:
    return tuple(range(ndim))
  axes = axis if isinstance(axis, (tuple, list, np.ndarray)) else (axis,)
  canon = tuple(util.canonicalize_axis(a, ndim) for a in axes)
  if len(canon) != len(set(canon)):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return canon


def moveaxes(x, source, destination):
  """jnp.moveaxis with lax.transpose (no-op when nothing moves)."""
  nd = aval(x).ndim
  source = [util.canonicalize_axis(s, nd) for s in source]
  destination = [util.canonicalize_axis(d, nd) for d in destination]
  perm = [i for i in range(nd) if i not in source]
  for dest, src in sorted(zip(destination, source)):
    perm.insert(dest, src)
  return x if perm == list(range(nd)) else lax.transpose(x, tuple(perm))


def isnan(x):
  return lax.ne(x, x)


def _promote_integer_dtype(dt):
  """Sums and products of small integers accumulate in the default int (uint) width."""
  if dt == np.bool_:
    return dtypes.default_int_dtype()
  for kind, default in (("u", dtypes.default_dtype_for("u")), ("i", dtypes.default_int_dtype())):
    if np.dtype(dt).kind == kind and np.dtype(dt).itemsize < default.itemsize:
      return default
  return dt


def _upcast_f16(dt):
  return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else np.dtype(dt)


def check_where(name: str, where):
  if where is None:
    return None
  where = asarray_arg(name, where)
  if aval(where).dtype != np.bool_:
    raise ValueError(f"jnp.{name}: where must be None or a boolean array; got "
                     f"where.dtype={aval(where).dtype!r}.")
  return where


def _init_value(dt, val) -> np.ndarray:
  """The identity `val` (0, 1, +-inf, True) as a 0-d NumPy value of dtype `dt`; for
  integers +-inf saturate to the dtype's extremes."""
  if dt == np.bool_:
    return np.array(val > 0, dtype=dt)
  if np.isinf(val) and np.dtype(dt).kind in "iu":
    info = dtypes.iinfo(dt)
    return np.array(info.min if val < 0 else info.max, dtype=dt)
  return np.array(val, dtype=dt)


# ---------------------------------------------------------------------------------------
# The generic reduction
# ---------------------------------------------------------------------------------------


class _Monoid(NamedTuple):
  reduce: Callable      # (x, axes) -> reduced x: one lax reduce primitive
  combine: Callable     # binary op, used to fold in `initial`
  identity: Any         # value that masked-out (`where=False`) elements take


_SUM = _Monoid(lambda x, a: lax.reduce_sum(x, a), lambda x, y: lax.add(x, y), 0)
_PROD = _Monoid(lambda x, a: lax.reduce_prod(x, a), lambda x, y: lax.mul(x, y), 1)
_MAX = _Monoid(lambda x, a: lax.reduce_max(x, a), lambda x, y: lax.max(x, y), -np.inf)
_MIN = _Monoid(lambda x, a: lax.reduce_min(x, a), lambda x, y: lax.min(x, y), np.inf)
_OR = _Monoid(lambda x, a: lax.reduce_or(x, a), lambda x, y: lax.bitwise_or(x, y), False)
_AND = _Monoid(lambda x, a: lax.reduce_and(x, a), lambda x, y: lax.bitwise_and(x, y), True)


def _cast_to_numeric(x):
  return util.promote_dtypes_numeric(x)[0]


def _cast_to_bool(x):
  if dtypes.is_complex(aval(x).dtype):
    x = lax.real(x)
  return convert_element_type(x, np.bool_)


_PLAIN_FLOATS = frozenset(map(np.dtype, ("float32", "float64")))


def _reduction(a, name: str, monoid: _Monoid, *, has_identity: bool = True,
               preproc: Callable | None = None, bool_monoid: _Monoid | None = None,
               upcast_f16_for_computation: bool = False, axis=None, dtype=None, out=None,
               keepdims: bool = False, initial=None, where_=None,
               promote_integers: bool = False):
  if type(a) is Array and a._dtype in _PLAIN_FLOATS and not a._weak_type and \
      dtype is out is initial is where_ is None and not keepdims and \
      preproc in (None, _cast_to_numeric):
    # the common eager call (a float32/64 array, no options): its reduce alone (its numeric
    # preproc and converts are no-ops for it); ~4 us of a small reduction's ~10
    dims = reduction_dims(len(a._shape), static_axes(axis, name))
    if has_identity or _all(a._shape[d] >= 1 for d in dims):
      return monoid.reduce(a, dims)
  check_out(name, out)
  a = asarray_arg(name, a)
  where_ = check_where(name, where_)
  axis = static_axes(axis, name)
  if initial is None and not has_identity and where_ is not None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                     f"where mask one has to specify 'initial'")
  a = preproc(a) if preproc else a
  shape = aval(a).shape
  dims = reduction_dims(len(shape), axis)
  if initial is None and not has_identity and not _all(shape[d] >= 1 for d in dims):
    raise ValueError(f"zero-size array to reduction operation {name} which has no identity")

  if dtype is None:
    result_dtype = aval(a).dtype
    if promote_integers:
      result_dtype = _promote_integer_dtype(result_dtype)
  else:
    result_dtype = dtypes.check_user_dtype(dtype, name)
  computation_dtype = (_upcast_f16(result_dtype) if upcast_f16_for_computation
                       and dtypes.is_inexact(result_dtype) else result_dtype)
  a = convert_element_type(a, computation_dtype)
  op = (bool_monoid or monoid) if computation_dtype == np.bool_ else monoid
  if where_ is not None:
    a = logic.where(where_, a, _init_value(computation_dtype, op.identity))
  result = op.reduce(a, dims)
  if initial is not None:
    initial_arr = convert_element_type(initial, aval(a).dtype)
    if aval(initial_arr).shape != ():
      raise ValueError(f"initial value must be a scalar. Got array of shape "
                       f"{aval(initial_arr).shape}")
    result = op.combine(initial_arr, result)
  if keepdims:
    result = lax.expand_dims(result, dims)
  return convert_element_type(result, result_dtype)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
        promote_integers=True):
  """Sum of array elements over the given axes (bool and small ints sum in the default
  int width unless `promote_integers=False`; float16/bfloat16 accumulate in float32)."""
  return _reduction(a, "sum", _SUM, preproc=_cast_to_numeric, bool_monoid=_OR,
                    upcast_f16_for_computation=dtype is None, axis=axis, dtype=dtype,
                    out=out, keepdims=keepdims, initial=initial, where_=where,
                    promote_integers=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of array elements over the given axes."""
  return _reduction(a, "prod", _PROD, preproc=_cast_to_numeric, bool_monoid=_AND,
                    upcast_f16_for_computation=dtype is None, axis=axis, dtype=dtype,
                    out=out, keepdims=keepdims, initial=initial, where_=where,
                    promote_integers=promote_integers)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum over the given axes; empty reductions need `initial`."""
  return _reduction(a, "max", _MAX, has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where_=where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum over the given axes; empty reductions need `initial`."""
  return _reduction(a, "min", _MIN, has_identity=False, axis=axis, out=out,
                    keepdims=keepdims, initial=initial, where_=where)


amax, amin = max, min


def minmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """(min, max) over the given axes; `initial` is one scalar for both or a tuple
  (the min's upper bound, the max's lower bound)."""
  init_min, init_max = initial if isinstance(initial, tuple) else (initial, initial)
  if (init_min is None or init_max is None) and where is not None:
    raise ValueError("reduction operation minmax does not have an identity, so to use a "
                     "where mask one has to specify 'initial'")
  return (_reduction(a, "minmax", _MIN, has_identity=False, axis=axis, out=out,
                     keepdims=keepdims, initial=init_min, where_=where),
          _reduction(a, "minmax", _MAX, has_identity=False, axis=axis, out=out,
                     keepdims=keepdims, initial=init_max, where_=where))


def all(a, axis=None, out=None, keepdims=False, *, where=None):
  """Whether all elements along the axes are true (nonzero)."""
  return _reduction(a, "all", _AND, preproc=_cast_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where_=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
  """Whether any element along the axes is true (nonzero)."""
  return _reduction(a, "any", _OR, preproc=_cast_to_bool, axis=axis, out=out,
                    keepdims=keepdims, where_=where)


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------


def _axis_size(shape, axis) -> int:
  return math.prod(shape[d] for d in reduction_dims(len(shape), axis))


def _count(a, axis, keepdims, where, dtype):
  """Number of elements reduced (per output element when `where` is given)."""
  if where is None:
    return convert_element_type(_axis_size(aval(a).shape, axis), dtype)
  return sum(util.broadcast_to_shape(where, aval(a).shape), axis, dtype=dtype,
             keepdims=keepdims)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Arithmetic mean; integer inputs give the default float dtype."""
  check_out("mean", out)
  a = asarray_arg("mean", a)
  where = check_where("mean", where)
  axis = static_axes(axis, "mean")
  if dtype is None:
    result_dtype = util.to_inexact_dtype(aval(a).dtype)
  else:
    result_dtype = dtypes.check_user_dtype(dtype, "mean")
  computation_dtype = _upcast_f16(result_dtype) if dtypes.is_inexact(result_dtype) \
      else result_dtype
  normalizer = _count(a, axis, keepdims, where, computation_dtype)
  total = sum(a, axis, dtype=computation_dtype, keepdims=keepdims, where=where)
  return convert_element_type(lax.div(total, normalizer), result_dtype)


def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted average; `returned=True` also returns the sum of the weights."""
  axis = static_axes(axis, "average")
  if weights is None:
    a, = util.promote_dtypes_inexact(asarray_arg("average", a))
    avg = mean(a, axis=axis, keepdims=keepdims)
    weights_sum = lax.full((), _axis_size(aval(a).shape, axis), aval(avg).dtype)
  else:
    a, weights = util.promote_dtypes_inexact(*asarray_args("average", a, weights))
    a_shape, w_shape = aval(a).shape, aval(weights).shape
    if a_shape != w_shape:
      if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
      axes = reduction_dims(len(a_shape), axis)
      if w_shape != tuple(a_shape[d] for d in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along "
                         "specified axis.")
      new_shape = tuple(d if i in axes else 1 for i, d in enumerate(a_shape))
      weights = lax.reshape(weights, new_shape,
                            dimensions=tuple(int(i) for i in np.argsort(axes)))
    weights_sum = sum(weights, axis=axis, keepdims=keepdims)
    avg = lax.div(sum(lax.mul(a, weights), axis=axis, keepdims=keepdims), weights_sum)
  if returned:
    if aval(avg).shape != aval(weights_sum).shape:
      weights_sum = util.broadcast_to_shape(weights_sum, aval(avg).shape)
    return avg, weights_sum
  return avg


def _var_promote_types(a_dtype, dtype):
  """(computation dtype, result dtype) of var/std: ints -> default float, complex ->
  its real dtype, float16 computed in float32."""
  if dtype is not None:
    if not dtypes.is_complex(dtype) and dtypes.is_complex(a_dtype):
      raise ValueError("jax.numpy.var does not yet support real dtype parameters when "
                       "computing the variance of an array of complex values.")
    computation_dtype = dtype
  elif not dtypes.is_inexact(a_dtype):
    dtype = computation_dtype = util.to_inexact_dtype(a_dtype)
  else:
    dtype = np.array(0, a_dtype).real.dtype
    computation_dtype = a_dtype
  return _upcast_f16(computation_dtype), np.dtype(dtype)


def _correction(ddof, correction):
  if correction is None:
    return ddof
  if not isinstance(ddof, int) or ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
  """Variance; `ddof`/`correction` is subtracted from the element count."""
  a = asarray_arg("var", a)
  return _var(a, axis=static_axes(axis, "var"), dtype=dtype, out=out,
              correction=_correction(ddof, correction), keepdims=keepdims, where=where,
              a_mean=mean)


_mean = mean


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def _var(a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None,
         a_mean=None):
  where = check_where("var", where)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "var")
  check_out("var", out)
  computation_dtype, dtype = _var_promote_types(aval(a).dtype, dtype)
  a = convert_element_type(a, computation_dtype)
  if a_mean is None:
    a_mean = _mean(a, axis, dtype=computation_dtype, keepdims=True, where=where)
  else:
    a_mean = convert_element_type(asarray_arg("var", a_mean), computation_dtype)
  centered = lax.sub(a, a_mean)
  if dtypes.is_complex(computation_dtype):
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
    computation_dtype = aval(centered).dtype
  else:
    centered = lax.square(centered)
  normalizer = _count(a, axis, keepdims, where, computation_dtype)
  normalizer = lax.sub(normalizer, convert_element_type(correction, computation_dtype))
  result = sum(centered, axis, dtype=computation_dtype, keepdims=keepdims, where=where)
  result = convert_element_type(lax.div(result, normalizer), dtype)
  return logic.where(lax.gt(normalizer, 0.0), result, np.nan)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
  """Standard deviation: sqrt(var)."""
  a = asarray_arg("std", a)
  return _std(a, axis=static_axes(axis, "std"), dtype=dtype, out=out,
              correction=_correction(ddof, correction), keepdims=keepdims, where=where,
              mean=mean)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def _std(a, *, axis=None, dtype=None, out=None, correction=0, keepdims=False, where=None,
         mean=None):
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "std")
    if not dtypes.is_inexact(dtype):
      raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
  check_out("std", out)
  return lax.sqrt(var(a, axis=axis, dtype=dtype, correction=correction,
                      keepdims=keepdims, where=where, mean=mean))


def ptp(a, axis=None, out=None, keepdims=False):
  """Peak to peak: max - min along the axes."""
  a = asarray_arg("ptp", a)
  return _ptp(a, static_axes(axis, "ptp"), out, keepdims)


@partial(jit, static_argnames=("axis", "keepdims"))
def _ptp(a, axis=None, out=None, keepdims=False):
  check_out("ptp", out)
  return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis, keepdims=keepdims))


@partial(jit, static_argnames=("axis", "keepdims"))
def count_nonzero(a, axis=None, keepdims=False):
  """Number of nonzero elements along the axes (default int dtype)."""
  a = asarray_arg("count_nonzero", a)
  zero = convert_element_type(0, aval(a).dtype)
  return sum(lax.ne(a, zero), axis=axis, dtype=dtypes.default_int_dtype(),
             keepdims=keepdims)


# ---------------------------------------------------------------------------------------
# nan-ignoring reductions
# ---------------------------------------------------------------------------------------


def _nan_reduction(a, name, jnp_reduction, init_val, nan_if_all_nan, axis=None,
                   keepdims=False, where=None, **kwargs):
  a = asarray_arg(name, a)
  where = check_where(name, where)
  if not dtypes.is_inexact(aval(a).dtype):
    return jnp_reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
  out = jnp_reduction(logic.where(isnan(a), _init_value(aval(a).dtype, init_val), a),
                      axis=axis, keepdims=keepdims, where=where, **kwargs)
  if nan_if_all_nan:
    return logic.where(all(isnan(a), axis=axis, keepdims=keepdims),
                       np.array(np.nan, aval(a).dtype), out)
  return out


@partial(jit, static_argnames=("axis", "keepdims"))
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """min ignoring NaNs (NaN where a slice is all-NaN and no `initial`)."""
  return _nan_reduction(a, "nanmin", min, np.inf, initial is None, axis=axis, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@partial(jit, static_argnames=("axis", "keepdims"))
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """max ignoring NaNs (NaN where a slice is all-NaN and no `initial`)."""
  return _nan_reduction(a, "nanmax", max, -np.inf, initial is None, axis=axis, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """sum treating NaNs as zero."""
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nansum")
  return _nan_reduction(a, "nansum", sum, 0, False, axis=axis, dtype=dtype, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """prod treating NaNs as one."""
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nanprod")
  return _nan_reduction(a, "nanprod", prod, 1, False, axis=axis, dtype=dtype, out=out,
                        keepdims=keepdims, initial=initial, where=where)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  """mean over the non-NaN elements."""
  a = asarray_arg("nanmean", a)
  where = check_where("nanmean", where)
  check_out("nanmean", out)
  if not dtypes.is_inexact(aval(a).dtype):
    return mean(a, axis, dtype, out, keepdims, where=where)
  dtype = (util.to_inexact_dtype(aval(a).dtype) if dtype is None
           else dtypes.check_user_dtype(dtype, "nanmean"))
  normalizer = sum(lax.bitwise_not(isnan(a)), axis=axis, dtype=dtype, keepdims=keepdims,
                   where=where)
  return lax.div(nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where), normalizer)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
  """var over the non-NaN elements."""
  a = asarray_arg("nanvar", a)
  where = check_where("nanvar", where)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nanvar")
  check_out("nanvar", out)
  computation_dtype, dtype = _var_promote_types(aval(a).dtype, dtype)
  a = convert_element_type(a, computation_dtype)
  if mean is None:
    a_mean = nanmean(a, axis, dtype=computation_dtype, keepdims=True, where=where)
  else:
    a_mean = convert_element_type(asarray_arg("nanvar", mean), computation_dtype)
  centered = logic.where(isnan(a), 0, lax.sub(a, a_mean))
  if dtypes.is_complex(aval(centered).dtype):
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
  else:
    centered = lax.square(centered)
  normalizer = sum(lax.bitwise_not(isnan(a)), axis=axis, keepdims=keepdims, where=where)
  normalizer = lax.sub(normalizer, convert_element_type(ddof, aval(normalizer).dtype))
  normalizer_mask = lax.le(normalizer, 0)
  result = sum(centered, axis, keepdims=keepdims, where=where)
  result = logic.where(normalizer_mask, np.nan, result)
  divisor = logic.where(normalizer_mask, 1, normalizer)
  result = lax.div(result, convert_element_type(divisor, aval(result).dtype))
  return convert_element_type(result, dtype)


@partial(jit, static_argnames=("axis", "dtype", "keepdims"))
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None,
           mean=None):
  """std over the non-NaN elements."""
  check_out("nanstd", out)
  return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                         where=where, mean=mean))


# ---------------------------------------------------------------------------------------
# Arg-reductions
# ---------------------------------------------------------------------------------------


def _ravel(a):
  shape = aval(a).shape
  return a if len(shape) == 1 else lax.reshape(a, (math.prod(shape),))


def _arg_reduction(name, lax_fn, a, axis, keepdims):
  if axis is None:
    dims = tuple(range(aval(a).ndim))
    a, axis = _ravel(a), 0
  else:
    dims = (util.canonicalize_axis(axis, aval(a).ndim),)
  axis = util.canonicalize_axis(axis, aval(a).ndim)
  if aval(a).shape[axis] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence")
  result = lax_fn(a, axis, dtypes.default_int_dtype())
  return lax.expand_dims(result, dims) if keepdims else result


def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the (first) maximum along `axis` (of the flattened array when None)."""
  check_out("argmax", out)
  a = asarray_arg("argmax", a)
  return _arg_reduction("argmax", lambda x, ax, dt: lax.argmax(x, ax, dt), a,
                        static_axes(axis, "argmax"), bool(keepdims))


def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the (first) minimum along `axis` (of the flattened array when None)."""
  check_out("argmin", out)
  a = asarray_arg("argmin", a)
  return _arg_reduction("argmin", lambda x, ax, dt: lax.argmin(x, ax, dt), a,
                        static_axes(axis, "argmin"), bool(keepdims))


def nanargmax(a, axis=None, out=None, keepdims=None):
  """argmax ignoring NaNs; -1 where a slice is all-NaN."""
  check_out("nanargmax", out)
  return _nanargmax(asarray_arg("nanargmax", a), static_axes(axis, "nanargmax"),
                    bool(keepdims))


def nanargmin(a, axis=None, out=None, keepdims=None):
  """argmin ignoring NaNs; -1 where a slice is all-NaN."""
  check_out("nanargmin", out)
  return _nanargmin(asarray_arg("nanargmin", a), static_axes(axis, "nanargmin"),
                    bool(keepdims))


def _nan_arg_reduction(arg_fn, fill, a, axis, keepdims):
  if not dtypes.is_inexact(aval(a).dtype):
    return arg_fn(a, axis=axis, keepdims=keepdims)
  nan_mask = isnan(a)
  res = arg_fn(logic.where(nan_mask, fill, a), axis=axis, keepdims=keepdims)
  return logic.where(all(nan_mask, axis=axis, keepdims=keepdims), -1, res)


@partial(jit, static_argnames=("axis", "keepdims"))
def _nanargmax(a, axis=None, keepdims=False):
  return _nan_arg_reduction(argmax, -np.inf, a, axis, keepdims)


@partial(jit, static_argnames=("axis", "keepdims"))
def _nanargmin(a, axis=None, keepdims=False):
  return _nan_arg_reduction(argmin, np.inf, a, axis, keepdims)


# ---------------------------------------------------------------------------------------
# Cumulative reductions
# ---------------------------------------------------------------------------------------


def _cumulative_reduction(name, reduction, a, axis, dtype, out=None, fill_nan=False,
                          fill_value=0, promote_integers=False):
  a = asarray_arg(name, a)
  check_out(name, out)
  if axis is None:
    a, axis = _ravel(a), 0
  axis = util.canonicalize_axis(axis, aval(a).ndim)
  if fill_nan:
    a = logic.where(isnan(a), _init_value(aval(a).dtype, fill_value), a)
  if dtype is None:
    a_dtype = aval(a).dtype
    result_type = _promote_integer_dtype(a_dtype) if (promote_integers or a_dtype == np.bool_) \
        else a_dtype
    computation_type = result_type
  elif np.dtype(dtype) == np.bool_:
    result_type = np.dtype(np.bool_)
    if aval(a).dtype != np.bool_:
      a = lax.ne(a, convert_element_type(0, aval(a).dtype))
    computation_type = _promote_integer_dtype(result_type)
  else:
    result_type = computation_type = dtypes.check_user_dtype(dtype, name)
  a = convert_element_type(a, computation_type)
  return convert_element_type(reduction(a, axis), result_type)


def _lax_cumsum(x, axis):
  return lax.cumsum(x, axis)


def _lax_cumprod(x, axis):
  return lax.cumprod(x, axis)


@partial(jit, static_argnames=("axis", "dtype"))
def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along `axis` (of the flattened array when None)."""
  return _cumulative_reduction("cumsum", _lax_cumsum, a, axis, dtype, out)


@partial(jit, static_argnames=("axis", "dtype"))
def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along `axis` (of the flattened array when None)."""
  return _cumulative_reduction("cumprod", _lax_cumprod, a, axis, dtype, out)


@partial(jit, static_argnames=("axis", "dtype"))
def nancumsum(a, axis=None, dtype=None, out=None):
  """cumsum treating NaNs as zero."""
  return _cumulative_reduction("nancumsum", _lax_cumsum, a, axis, dtype, out,
                               fill_nan=True, fill_value=0)


@partial(jit, static_argnames=("axis", "dtype"))
def nancumprod(a, axis=None, dtype=None, out=None):
  """cumprod treating NaNs as one."""
  return _cumulative_reduction("nancumprod", _lax_cumprod, a, axis, dtype, out,
                               fill_nan=True, fill_value=1)


@partial(jit, static_argnames=("axis", "dtype"))
def _cumsum_with_promotion(a, axis=None, dtype=None, out=None):
  return _cumulative_reduction("_cumsum_with_promotion", _lax_cumsum, a, axis, dtype, out,
                               promote_integers=True)


def _cumulative_array_api(name, x, axis, dtype, include_initial, reduce, identity):
  x = asarray_arg(name, x)
  ndim = aval(x).ndim
  if ndim == 0:
    raise ValueError(f"The input must be non-scalar to take a {name.replace('_', ' ')}, "
                     "however a scalar value or scalar array was given.")
  if axis is None:
    if ndim > 1:
      raise ValueError(f"The input array has rank {ndim}, however axis was not set to an "
                       "explicit value. The axis argument is only optional for "
                       "one-dimensional arrays.")
    axis = 0
  axis = util.canonicalize_axis(axis, ndim)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, name)
  out = reduce(x, axis, dtype)
  if include_initial:
    zeros_shape = list(aval(x).shape)
    zeros_shape[axis] = 1
    out = lax.concatenate([lax.full(zeros_shape, identity, aval(out).dtype), out], axis)
  return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative sum (small ints accumulate in the default int width)."""
  return _cumulative_array_api(
      "cumulative_sum", x, axis, dtype, include_initial,
      lambda x, ax, dt: _cumsum_with_promotion(x, axis=ax, dtype=dt), 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Array-API cumulative product."""
  return _cumulative_array_api(
      "cumulative_prod", x, axis, dtype, include_initial,
      lambda x, ax, dt: _cumulative_reduction("cumulative_prod", _lax_cumprod, x, ax, dt), 1)


# ---------------------------------------------------------------------------------------
# Quantiles
# ---------------------------------------------------------------------------------------

_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _take_along(a, idx, axis: int, q_ndim: int):
  """out[q..., r...] = a[r... with a[axis] = idx[q..., r...]], with `idx` of shape
  q_shape + a.shape with size 1 at `axis`. A compare-select-sum over `axis` (only lax
  elementwise ops and one reduce_sum), so it also runs staged without gather."""
  a_shape = aval(a).shape
  q_shape = aval(idx).shape[:q_ndim]
  full_shape = q_shape + a_shape
  a_b = broadcast_in_dim(a, full_shape, tuple(range(q_ndim, len(full_shape))))
  idx_b = broadcast_in_dim(idx, full_shape, tuple(range(len(full_shape))))
  iota = lax.broadcasted_iota(aval(idx).dtype, full_shape, q_ndim + axis)
  picked = lax.select(lax.eq(iota, idx_b), a_b, lax.full(full_shape, 0, aval(a).dtype))
  return lax.reduce_sum(picked, (q_ndim + axis,))


def _quantile(a, q, axis, method, keepdims, squash_nans, weights=None):
  if method not in _QUANTILE_METHODS + ("inverted_cdf",):
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', "
                     "'nearest' or 'inverted_cdf'")
  if method == "inverted_cdf" or weights is not None:
    raise ValueError("jnp.quantile: method='inverted_cdf' and weights= are not supported "
                     "in ember; use one of " + ", ".join(map(repr, _QUANTILE_METHODS)) + ".")
  a, = util.promote_dtypes_inexact(a)
  q, = util.promote_dtypes_inexact(q)
  if dtypes.is_complex(aval(a).dtype):
    raise ValueError("quantile does not support complex input, as the operation is poorly "
                     "defined.")
  keepdim = []
  if axis is None:
    if keepdims:
      keepdim = [1] * aval(a).ndim
    a, axis = _ravel(a), 0
  elif isinstance(axis, tuple):
    nd = aval(a).ndim
    axis = reduction_dims(nd, axis)
    keepdim = [1 if d in axis else s for d, s in enumerate(aval(a).shape)]
    keep = [d for d in range(nd) if d not in axis]
    shape = aval(a).shape
    a = lax.reshape(a, tuple(shape[d] for d in keep) + (math.prod(shape[d] for d in axis),),
                    dimensions=tuple(keep) + tuple(axis))
    axis = aval(a).ndim - 1
  else:
    axis = util.canonicalize_axis(axis, aval(a).ndim)

  q_shape, q_ndim = aval(q).shape, aval(q).ndim
  if q_ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q_shape}")
  a_shape = aval(a).shape
  red_shape_k = tuple(1 if d == axis else s for d, s in enumerate(a_shape))
  qf = aval(q).dtype

  if squash_nans and a_shape[axis] == 0:
    result_shape = list(a_shape)
    if keepdims:
      result_shape[axis] = 1
    else:
      result_shape.pop(axis)
    return lax.full(tuple(keepdim) if keepdims and keepdim else tuple(result_shape),
                np.nan, aval(a).dtype)

  if squash_nans:
    a = lax.sort(a, dimension=axis, is_stable=False)  # NaNs sort to the end
    counts = sum(lax.bitwise_not(isnan(a)), axis=axis, dtype=qf, keepdims=True)
    counts = broadcast_in_dim(counts, q_shape + red_shape_k,
                              tuple(range(q_ndim, q_ndim + len(red_shape_k))))
    qb = broadcast_in_dim(q, q_shape + red_shape_k, tuple(range(q_ndim)))
    n_minus_1 = lax.sub(counts, convert_element_type(1, qf))
  else:
    a = logic.where(any(isnan(a), axis=axis, keepdims=True), np.nan, a)
    a = lax.sort(a, dimension=axis, is_stable=False)
    qb = broadcast_in_dim(q, q_shape + red_shape_k, tuple(range(q_ndim)))
    n_minus_1 = convert_element_type(a_shape[axis] - 1, qf)
  pos = lax.mul(qb, n_minus_1)
  low, high = lax.floor(pos), lax.ceil(pos)
  high_weight = lax.sub(pos, low)
  low_weight = lax.sub(convert_element_type(1, qf), high_weight)
  zero = convert_element_type(0, qf)
  low = lax.max(zero, lax.min(low, n_minus_1))
  high = lax.max(zero, lax.min(high, n_minus_1))
  idx_dtype = dtypes.default_int_dtype()
  low_value = _take_along(a, convert_element_type(low, idx_dtype), axis, q_ndim)
  high_value = _take_along(a, convert_element_type(high, idx_dtype), axis, q_ndim)
  low_weight, high_weight = (lax.reshape(w, aval(low_value).shape)
                             for w in (low_weight, high_weight))
  if method == "linear":
    result = lax.add(lax.mul(convert_element_type(low_value, qf), low_weight),
                     lax.mul(convert_element_type(high_value, qf), high_weight))
  elif method == "lower":
    result = low_value
  elif method == "higher":
    result = high_value
  elif method == "nearest":
    result = lax.select(lax.le(high_weight, convert_element_type(0.5, qf)), low_value,
                        high_value)
  else:  # midpoint
    result = lax.mul(lax.add(low_value, high_value),
                     convert_element_type(0.5, aval(low_value).dtype))
  if keepdims:
    result = lax.expand_dims(result, (q_ndim + axis,))
    if keepdim:
      result = lax.reshape(result, tuple(q_shape) + tuple(keepdim))
  return convert_element_type(result, aval(a).dtype)


def _quantile_args(name, a, q, out, overwrite_input, weights):
  a, q = asarray_args(name, a, q)
  if weights is not None:
    weights = asarray_arg(name, weights)
  if overwrite_input or out is not None:
    raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or "
                     "out != None")
  return a, q, weights


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
  """q-th quantiles (q in [0, 1]) along the axes, interpolated by `method`."""
  a, q, weights = _quantile_args("quantile", a, q, out, overwrite_input, weights)
  return _quantile(a, q, axis, method, keepdims, False, weights)


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
  """quantile ignoring NaNs."""
  a, q, weights = _quantile_args("nanquantile", a, q, out, overwrite_input, weights)
  return _quantile(a, q, axis, method, keepdims, True, weights)


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None):
  """q-th percentiles (q in [0, 100])."""
  a, q, weights = _quantile_args("percentile", a, q, out, overwrite_input, weights)
  q, = util.promote_dtypes_inexact(q)
  return quantile(a, lax.div(q, convert_element_type(100, aval(q).dtype)), axis=axis,
                  method=method, keepdims=keepdims, weights=weights)


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  """percentile ignoring NaNs."""
  a, q, weights = _quantile_args("nanpercentile", a, q, out, overwrite_input, weights)
  q, = util.promote_dtypes_inexact(q)
  return nanquantile(a, lax.div(q, convert_element_type(100, aval(q).dtype)), axis=axis,
                     method=method, keepdims=keepdims, weights=weights)


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims"))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """Median along the axes (mean of the two middle values for even counts)."""
  a = asarray_arg("median", a)
  if _any(aval(a).shape[d] == 0 for d in reduction_dims(aval(a).ndim, axis)):
    raise ValueError("jax.numpy.median reduction axis must be non-empty")
  return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                  keepdims=keepdims, method="midpoint")


@partial(jit, static_argnames=("axis", "overwrite_input", "keepdims"))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """median ignoring NaNs."""
  a = asarray_arg("nanmedian", a)
  return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                     keepdims=keepdims, method="midpoint")


# ---------------------------------------------------------------------------------------
# trace and diagonal (ember.numpy's; the jnp.linalg versions of these two names, over the
# last two axes, are linalg_norms.py's)
# ---------------------------------------------------------------------------------------


@partial(jit, static_argnames=("axis1", "axis2", "dtype"))
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  """Sum along the `offset` diagonal of the (axis1, axis2) planes."""
  a = asarray_arg("trace", a)
  check_out("trace", out)
  nd = aval(a).ndim
  if nd < 2:
    raise ValueError(f"trace requires an array of at least two dimensions, got shape "
                     f"{aval(a).shape}.")
  if util.canonicalize_axis(axis1, nd) == util.canonicalize_axis(axis2, nd):
    raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "trace")
  a = moveaxes(a, [axis1, axis2], [-2, -1])
  n, m = aval(a).shape[-2:]
  rows = lax.broadcasted_iota(dtypes.default_int_dtype(), (n, m), 0)
  cols = lax.broadcasted_iota(dtypes.default_int_dtype(), (n, m), 1)
  on_diag = lax.eq(lax.add(rows, offset), cols)
  a = logic.where(on_diag, a, lax.full(aval(a).shape, 0, aval(a).dtype))
  return sum(a, axis=(-2, -1), dtype=dtype)


@partial(jit, static_argnames=("offset", "axis1", "axis2"))
def diagonal(a, offset=0, axis1=0, axis2=1):
  """The `offset` diagonal of the (axis1, axis2) planes, as the last axis of the result.
  Staged as reshape + strided slice: element (i, i + offset) of an (n, m) plane sits at
  flat position i * (m + 1) + offset."""
  a = asarray_arg("diagonal", a)
  if aval(a).ndim < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  offset = operator.index(offset)
  a = moveaxes(a, [axis1, axis2], [-2, -1])
  *batch, n, m = aval(a).shape
  size = _max(0, _min(n + _min(offset, 0), m - _max(offset, 0)))
  flat = lax.reshape(a, (*batch, n * m))
  start = offset if offset >= 0 else -offset * m
  limit = start + (size - 1) * (m + 1) + 1 if size else start
  stride = m + 1
  nb = len(batch)
  return lax.slice(flat, (0,) * nb + (start if size else 0,),
                   tuple(batch) + (limit if size else 0,), (1,) * nb + (stride,))


def diag(v, k=0):
  """The k-th diagonal of a 2-D array, or a 2-D array with 1-D `v` on its k-th diagonal."""
  v = _ensure_arraylike("diag", v)
  return _diag(v, operator.index(k))


@jit(static_argnames=("k",))
def _diag(v, k):
  shape = v.shape
  if len(shape) == 1:
    zero = _zero(v)
    n = shape[0] + abs(k)
    v = lax.pad(v, zero, ((builtins.max(0, -k), builtins.max(0, k), 0),))
    return logic.where(eye(n, k=k, dtype=np.bool_), lax.expand_dims(v, (1,)), zero)
  if len(shape) == 2:
    return diagonal(v, offset=k)
  raise ValueError("diag input must be 1d or 2d")



def diagflat(v, k=0):
  """A 2-D array with the flattened input on its k-th diagonal."""
  util.check_arraylike("diagflat", v)
  v = asarray(v)
  flat = lax.reshape(v, (v.size,))
  return lax.convert_element_type(diag(flat, k), v.dtype)  # strongly typed, as JAX's

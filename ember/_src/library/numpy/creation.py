"""ember.numpy array creation: array/asarray, zeros/ones/full(_like), arange, linspace &
co, eye/tri/tril/triu/diag, meshgrid, astype and the bitcasting `Array.view`.

Each function follows jax.numpy 0.12 step for step, so dtypes, weak types and staged
jaxprs match: constants built from Python/NumPy data are made eagerly (they become
literals or constvars when traced); everything that touches an ember array goes through
lax. Functions JAX wraps in an inner `jit` (linspace, tril, diag, ...) are wrapped in an
`ember.jit` of the same name, so their jaxprs show the same nested `jit` equations.
"""
from __future__ import annotations

import builtins
import operator
import types
import warnings

import numpy as np

from ember._src import core
from ember._src.base import dtypes, errors, transfer_guard
from ember._src.base.config import config
from ember._src.library.lax import api as lax
from ember._src.driver.jit import jit
from ember._src.library.numpy import ufuncs, util
from ember._src.primitives.elementwise import convert_element_type_p
from ember._src.core import trace as trace_lib
from ember._src.core.array import Array
from ember._src.library.random.keys import PRNGKeyArray

__all__ = [
    "array", "asarray", "copy", "astype", "frombuffer", "_view",  # _view: Array.view
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "arange", "linspace", "logspace", "geomspace",
    "eye", "identity", "tri", "tril", "triu", "meshgrid",
]

_PY_SCALARS = (builtins.bool, int, float, complex)


# --- argument helpers -------------------------------------------------------------------

def _is_float0(dtype) -> bool:
  """Whether a dtype argument asks for float0: such arrays hold no data, and JAX makes them
  as NumPy zeros of dtype float0 (inside jit too: they are constants)."""
  try:
    return dtype is not None and np.dtype(dtype) == dtypes.float0
  except TypeError:
    return False


def _user_dtype(dtype, fun_name: str):
  """Validate and canonicalize a `dtype=` argument; warn, as JAX does, when an explicitly
  requested 64-bit dtype is truncated because x64 is off."""
  dt = dtypes.check_user_dtype(dtype, fun_name)
  if isinstance(dt, dtypes.ExtendedDType) or (isinstance(dtype, type) and dtype in _PY_SCALARS):
    return dt
  requested = np.dtype(dtype)
  if requested != dt:
    warnings.warn(
        f"Explicitly requested dtype {requested.name} requested in {fun_name} is not "
        f"available, and will be truncated to dtype {dt.name}. To enable more dtypes, set "
        "the jax_enable_x64 configuration option (ember.config.update('jax_enable_x64', "
        "True)) or the JAX_ENABLE_X64 shell environment variable.", stacklevel=3)
  return dt


def _concrete_or_error(x, context: str):
  """The concrete value of `x`: ConcretizationTypeError when it is an abstract tracer."""
  if not isinstance(x, core.Tracer):
    return x
  v = x.to_concrete_value()
  if v is None:
    origin = x._origin_msg()
    raise errors.ConcretizationTypeError(
        "Abstract tracer value encountered where concrete value is expected: traced array "
        f"with shape {x.aval.str_short()}\n{context}\n" + (f"{origin}\n" if origin else "")
        + "This value must be known while tracing: pass it as a static argument "
        "(static_argnums / static_argnames of jit) or as a Python / NumPy value.")
  return v


def _dim(d, context: str) -> int:
  return operator.index(_concrete_or_error(d, context))


def _shape_arg(shape, context: str = "") -> tuple:
  """jnp's shape argument: an int, a 0-d array or a sequence of them."""
  if not isinstance(shape, (tuple, list)) and (getattr(shape, "ndim", None) == 0
                                               or np.ndim(shape) == 0):
    shape = (shape,)
  return core.canonicalize_shape(shape, context)


def _check_forgot_shape_tuple(name, shape, dtype):
  if isinstance(dtype, int) and isinstance(shape, int):
    raise TypeError(f"Cannot interpret '{dtype}' as a data type.\n\nDid you accidentally "
                    f"write `jnp.{name}({shape}, {dtype})` when you meant "
                    f"`jnp.{name}(({shape}, {dtype}))`, i.e. with a single tuple argument "
                    "for the shape?")


def _is_array(x) -> bool:
  return isinstance(x, (Array, core.Tracer))


def _ensure_arraylike(fun_name: str, *args):
  util.check_arraylike(fun_name, *args)
  out = [asarray(a) for a in args]
  return out[0] if len(out) == 1 else out


def _np_to_array(x, dtype, weak_type: bool) -> Array:
  """An Array holding (a copy of) NumPy data cast to `dtype` with lax's conversion
  semantics; the copy leaves the caller's array writeable and unshared."""
  x = np.asarray(x)
  if x.dtype != dtype:
    x = np.asarray(convert_element_type_p.impl(x, new_dtype=dtype, weak_type=weak_type), dtype)
  else:
    x = x.copy()
  return Array(x, weak_type=weak_type)


def _stage(x) -> Array:
  """A Python/NumPy scalar or ndarray as an Array of its canonical dtype (scalars weak)."""
  aval = core.get_aval(x)
  return _np_to_array(x, aval.dtype, aval.weak_type)


def _in_current_trace(x):
  """A new constant Array as a value of the staging trace when one is active: JAX binds
  every op to the current trace, so under jit `jnp.array(5)` / `jnp.int32(5)` are tracers
  (not concrete: `int()` of them raises, `fori_loop` bounds made from them are dynamic).
  Eagerly, and under grad/vmap alone, the Array itself."""
  if trace_lib.dynamic_trace is None or not isinstance(x, Array):
    return x
  return core.find_top_trace(()).pure(x)


# --- array / asarray --------------------------------------------------------------------

def _flatten_sequences(obj, leaves: list):
  if isinstance(obj, (list, tuple)):
    for o in obj:
      _flatten_sequences(o, leaves)
  else:
    leaves.append(obj)
  return leaves


def _valid_leaf(leaf):
  """Leaves whose dtype ember can read pass; others go through NumPy (memoryview, range)
  and must come out numeric."""
  if _is_array(leaf) or isinstance(leaf, (np.ndarray, np.generic) + _PY_SCALARS):
    return leaf
  arr = np.asarray(leaf)
  if arr.dtype not in dtypes.jax_dtypes:
    raise TypeError(f"Value {leaf!r} with dtype {arr.dtype} is not a valid ember array "
                    "type. Only arrays of numeric types are supported.")
  return arr


def _check_ints_fit(leaves, dtype, in_sequence: bool):
  """NumPy 2's OverflowError for an integer that `dtype` cannot hold, raised here so that
  NumPy 1.26 (which wraps with a DeprecationWarning) behaves the same. NumPy 2 converts by
  value Python ints, and NumPy integer scalars that sit in a list bound for a signed type;
  every other integer cast wraps."""
  dtype = np.dtype(dtype)
  if dtype.kind not in "iu":
    return
  info = np.iinfo(dtype)
  for leaf in leaves:
    by_value = ((isinstance(leaf, int) and not isinstance(leaf, bool)) or
                (in_sequence and dtype.kind == "i" and isinstance(leaf, np.integer)))
    if by_value and not info.min <= int(leaf) <= info.max:
      raise OverflowError(f"Python integer {leaf} out of bounds for {dtype.name}")


def _stack_leading(arrs):
  """Stack along a new leading axis: expand_dims + concatenate in trees of 16, as JAX does
  (`arrs` may be a generator: each element is converted, then expanded, in turn)."""
  out = [lax.expand_dims(a, (0,)) for a in arrs]
  while len(out) > 16:
    out = [lax.concatenate(out[i:i + 16], 0) for i in range(0, len(out), 16)]
  return lax.concatenate(out, 0)


def _replace_leaves(obj, it):
  if isinstance(obj, (list, tuple)):
    return [_replace_leaves(o, it) for o in obj]
  return next(it)


def array(object, dtype=None, *, copy: bool = True, order: str | None = "K",  # noqa: A002
          ndmin: int = 0, device=None, out_sharding=None):
  """Create an ember array from an array, scalar, or (nested) list/tuple of them."""
  if order is not None and order != "K":
    raise NotImplementedError(f"jnp.array: only order='K' (or None) is supported, got "
                              f"order={order!r}; ember arrays are always row-major")
  if config._values["jax_transfer_guard_host_to_device"] is not None:
    _guard_transfer(object)
  # Fast paths: nothing to convert.
  obj_dtype = getattr(object, "dtype", None)
  if (ndmin == 0 and isinstance(obj_dtype, dtypes.ExtendedDType)
      and (dtype is None or dtype == obj_dtype)):
    return object  # a PRNG key array (dtype None or its own): immutable, as in JAX
  if dtype is None and ndmin == 0:
    if isinstance(object, core.Tracer) or (isinstance(object, Array) and not copy):
      return object  # tracers are immutable: a copy would be the same value
    if isinstance(object, _PY_SCALARS + (np.generic, np.ndarray)):
      if isinstance(object, np.ndarray) and object.dtype == dtypes.float0:
        return object.copy() if copy else object   # float0 stays NumPy, as in JAX
      return _in_current_trace(_stage(object))
  if dtype is not None:
    dtype = _user_dtype(dtype, "array")
  # Weak only when the input is weak: asarray(x) is a no-op for weak x, and
  # array([1, 2]) is not weak.
  weak_type = dtype is None and dtypes.is_weakly_typed(object)
  if isinstance(object, _PY_SCALARS):
    if dtype is None:
      core.get_aval(object)  # OverflowError for ints out of range
    else:
      _check_ints_fit([object], dtype, in_sequence=False)
      np.asarray(object, dtype=dtype)  # NumPy's TypeError (a complex to an int, ...)
  elif not _is_array(object) and hasattr(object, "__jax_array__"):
    object = object.__jax_array__()

  leaves = _flatten_sequences(object, [])
  if any(leaf is None for leaf in leaves):
    raise ValueError("None is not a valid value for jnp.array")
  leaves = [leaf.__jax_array__() if not _is_array(leaf) and hasattr(leaf, "__jax_array__")
            else leaf for leaf in leaves]
  if dtype is None:
    leaves = [_valid_leaf(leaf) for leaf in leaves]
    dtype = dtypes.canonicalize_dtype(
        dtypes.lattice_result_type(*leaves)[0] if leaves else dtypes.default_float_dtype())
  _check_ints_fit(leaves, dtype, in_sequence=isinstance(object, (list, tuple)))
  object_ = (_replace_leaves(object, iter(leaves)) if isinstance(object, (list, tuple))
             else leaves[0])

  out = None
  if _is_array(object_):
    out = object_
    if copy and isinstance(out, Array):
      out = Array(out._value, out.weak_type)
  elif not any(_is_array(l) for l in leaves):
    # Pure data: build with NumPy; traced, it is a constant (a literal or a constvar).
    out = _np_to_array(np.asarray(object_, dtype=dtype), dtype, weak_type)
  elif core.cur_level_is_eval() and not any(isinstance(l, core.Tracer) for l in leaves):
    # Eager lists of concrete Arrays: the same values as stacking, in one NumPy call (each
    # Array read as NumPy first: NumPy converts a 0-d object to ml_dtypes' types through
    # float(), which a bfloat16 Array scalar refuses)
    try:
      host = _replace_leaves(object_, iter([np.asarray(l) if _is_array(l) else l
                                            for l in leaves]))
      out = _np_to_array(np.asarray(host, dtype=dtype), dtype, weak_type)
    except ValueError:  # ragged: stacking below raises lax.concatenate's TypeError
      pass
  if out is None:
    out = _stack_leading(array(elt, dtype=dtype, copy=False) for elt in object_)
  out = lax.convert_element_type(out, dtype, weak_type)
  nd = core.get_aval(out).ndim
  if ndmin > nd:
    out = lax.expand_dims(out, tuple(range(ndmin - nd)))
  return out if out is object else _in_current_trace(out)


def _guard_transfer(object):  # noqa: A002
  """A host value made an Array at top level is an implicit host-to-device transfer."""
  if (not isinstance(object, (Array, core.Tracer)) and core.cur_level_is_eval()
      and not isinstance(getattr(object, "dtype", None), dtypes.ExtendedDType)):
    try:
      aval = core.get_aval(np.asarray(object) if isinstance(object, (list, tuple))
                           else object)
    except Exception:   # (not array-like: array() raises its own error below)
      return
    transfer_guard.host_to_device(aval, explicit=False)


def asarray(a, dtype=None, order: str | None = None, *, copy: bool | None = None,
            device=None, out_sharding=None):
  """Convert `a` to an ember array; a no-op for ember arrays of the requested dtype."""
  if dtype is not None:
    dtype = _user_dtype(dtype, "asarray")
  return array(a, dtype=dtype, copy=builtins.bool(copy), order=order)


def copy(a, order: str | None = None):
  util.check_arraylike("copy", a)
  return array(a, copy=True, order=order)


def frombuffer(buffer, dtype=float, count: int = -1, offset: int = 0):
  """An array from the bytes of `buffer` (NumPy's frombuffer, then asarray)."""
  return asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def astype(x, dtype, /, *, copy: bool = False, device=None):
  """Cast `x` to `dtype` (default: the default float dtype)."""
  if isinstance(x, PRNGKeyArray):   # keys cast only to their own dtype: the keys themselves
    if dtype is not None and dtype == x.dtype:
      return x
    target = dtypes.default_float_dtype() if dtype is None else _user_dtype(dtype, "astype")
    raise ValueError(f"Cannot convert_element_type from {x.dtype} to {target}")
  x = _ensure_arraylike("astype", x)
  dtype = dtypes.default_float_dtype() if dtype is None else _user_dtype(dtype, "astype")
  if dtypes.is_complex(x.dtype):
    if dtypes.is_integer(dtype) or dtypes.is_float(dtype):
      warnings.warn("Casting from complex to real dtypes will soon raise a ValueError. "
                    "Please first use jnp.real or jnp.imag to take the real/imaginary "
                    "component of your input.", DeprecationWarning, stacklevel=2)
    elif dtype == np.bool_:
      # convert_element_type(complex, bool) would look at the real part only
      x = lax.ne(x, _zero(x))
  out = lax.convert_element_type(x, dtype)
  if copy and out is x and isinstance(out, Array):
    out = Array(out._value, out.weak_type)
  return out


def _zero(x):
  """A 0-d zero of x's dtype (a literal when traced)."""
  return lax.full_like(x, 0, shape=())


def _view(x, dtype=None, type=None):  # noqa: A002 - NumPy's `type` argument
  """`Array.view(dtype)`: reinterpret the bits (bitcast_convert_type plus reshapes)."""
  if type is not None:
    raise ValueError("The `type` argument of Array.view() is not supported by ember.")
  if dtype is None:
    return x
  dtype = _user_dtype(dtype, "view")
  aval = core.get_aval(x)
  bits_in, bits_out = 8 * aval.dtype.itemsize, 8 * dtype.itemsize
  if aval.ndim == 0:
    if bits_in != bits_out:
      raise ValueError("view() of a 0d array is only supported if the itemsize is unchanged.")
    return lax.squeeze(_view(lax.expand_dims(x, (0,)), dtype), (0,))
  if (aval.shape[-1] * bits_in) % bits_out != 0:
    raise ValueError("When changing to a larger dtype, its size must be a divisor of the "
                     "total size in bytes of the last axis of the array.")
  if aval.dtype == dtype:
    return x
  last = aval.ndim - 1
  # bitcast_convert_type takes neither bool nor complex: go through uint8 / (re, im) pairs.
  if aval.dtype == np.bool_:
    return _view(lax.convert_element_type(x, np.uint8), dtype)
  if dtypes.is_complex(aval.dtype):  # interleave (re, im) along the last axis
    re, im = (lax.expand_dims(part(x), (aval.ndim,)) for part in (lax.real, lax.imag))
    pairs = lax.concatenate([re, im], aval.ndim)
    return _view(lax.reshape(pairs, (*aval.shape[:-1], 2 * aval.shape[-1])), dtype)
  if dtype == np.bool_:
    return lax.convert_element_type(_view(x, np.uint8), np.bool_)
  if dtypes.is_complex(dtype):
    parts = lax.convert_element_type(_view(x, dtypes.finfo(dtype).dtype), dtype)
    re = lax.slice_in_dim(parts, 0, None, 2, axis=last)
    im = lax.slice_in_dim(parts, 1, None, 2, axis=last)
    return lax.add(re, lax.mul(im, lax.convert_element_type(1j, dtype)))
  if bits_in < bits_out:
    factor = bits_out // bits_in
    grouped = lax.reshape(x, (*aval.shape[:-1], aval.shape[-1] // factor, factor))
    return lax.bitcast_convert_type(grouped, dtype)
  out = lax.bitcast_convert_type(x, dtype)
  if bits_in > bits_out:
    s = core.get_aval(out).shape
    out = lax.reshape(out, (*s[:-2], s[-2] * s[-1]))
  return out


# --- zeros / ones / full ------------------------------------------------------------------

def _filled(name: str, value):
  def fn(shape, dtype=None, *, device=None, out_sharding=None):
    if isinstance(shape, types.GeneratorType):
      raise TypeError("expected sequence object with len >= 0 or a single integer")
    _check_forgot_shape_tuple(name, shape, dtype)
    if _is_float0(dtype):
      return np.zeros(_shape_arg(shape), dtypes.float0)
    dtype = _user_dtype(float if dtype is None else dtype, name)
    return lax.full(_shape_arg(shape), value, dtype)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"An array of `shape` filled with {value} (default dtype: float)."
  return fn


zeros = _filled("zeros", 0)
ones = _filled("ones", 1)
empty = _filled("empty", 0)  # ember has no uninitialized memory: zeros, as JAX gives eagerly


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """An array of `shape` filled with `fill_value` (broadcast when it is an array)."""
  if dtype is not None:
    dtype = _user_dtype(dtype, "full")
  util.check_arraylike("full", fill_value)
  if np.ndim(fill_value) == 0:
    return lax.full(_shape_arg(shape), fill_value, dtype)
  return util.broadcast_to_shape(asarray(fill_value, dtype=dtype), _shape_arg(shape))


def _like_prelude(name, a, dtype, shape):
  if not (hasattr(a, "dtype") and hasattr(a, "shape")):  # duck-typed arrays pass
    if hasattr(a, "__jax_array__"):
      a = a.__jax_array__()
    util.check_arraylike(name, a)
  dtype = None if dtype is None else _user_dtype(dtype, name)
  shape = None if shape is None else _shape_arg(shape)
  return a, dtype, shape


def _filled_like(name: str, value):
  def fn(a, dtype=None, shape=None, *, device=None, out_sharding=None):
    if _is_float0(dtype) or (dtype is None and _is_float0(getattr(a, "dtype", None))):
      return np.zeros(np.shape(a) if shape is None else _shape_arg(shape), dtypes.float0)
    a, dtype, shape = _like_prelude(name, a, dtype, shape)
    return lax.full_like(a, value, dtype, shape)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = f"An array filled with {value} with the shape and dtype of `a` unless given."
  return fn


zeros_like = _filled_like("zeros_like", 0)
ones_like = _filled_like("ones_like", 1)
empty_like = _filled_like("empty_like", 0)


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array filled with `fill_value` with the shape and dtype of `a` unless given."""
  if hasattr(a, "dtype") and hasattr(a, "shape"):
    util.check_arraylike("full_like", 0, fill_value)
  else:
    util.check_arraylike("full_like", a, fill_value)
  a, dtype, shape = _like_prelude("full_like", a, dtype, shape)
  if np.ndim(fill_value) == 0:
    return lax.full_like(a, fill_value, dtype, shape)
  shape = core.get_aval(a).shape if shape is None else shape
  dtype = dtypes.result_type(a) if dtype is None else dtype
  return util.broadcast_to_shape(asarray(fill_value, dtype=dtype), shape)


# --- ranges ---------------------------------------------------------------------------------

def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in [start, stop) (JAX: integers by default, bounds must be static)."""
  if dtype is not None:
    dtype = _user_dtype(dtype, "arange")
  for pos, v in enumerate((start, stop, step)):
    if v is not None and not core.is_arraylike(v):
      raise TypeError(f"arange requires ndarray, scalar, or None arguments, got "
                      f"{builtins.type(v)} at position {pos}.")
  start_name = "stop" if stop is None and step is None else "start"
  start = _concrete_or_error(start, f"It arose in the jnp.arange argument '{start_name}'")
  stop = _concrete_or_error(stop, "It arose in the jnp.arange argument 'stop'")
  step = _concrete_or_error(step, "It arose in the jnp.arange argument 'step'")
  for name, val in ((start_name, start), ("stop", stop), ("step", step)):
    if val is not None and np.ndim(val) != 0:
      raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={val}")
  if dtype is None:
    dtype = dtypes.result_type(start, *(x for x in (stop, step) if x is not None))
  if any(dtypes.is_complex(dtypes.dtype(v)) for v in (start, stop, step) if v is not None):
    raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                     "starting in JAX v0.10.0.")
  # Size arithmetic on NumPy scalars, as JAX does it on concrete values.
  start, stop, step = (np.asarray(v)[()] if isinstance(v, Array) else v
                       for v in (start, stop, step))
  if stop is None:
    start, stop = 0, start
  if step is not None:
    narrow = dtypes.is_float(dtype) and dtypes.finfo(dtype).bits < 32
    working = np.dtype(np.float32) if narrow else dtype  # f16/bf16 steps accumulate in f32
    size = max(0, int(np.ceil((stop - start) / step)))
    out = lax.add(lax.convert_element_type(start, working),
                  lax.mul(lax.convert_element_type(step, working),
                          lax.broadcasted_iota(working, (size,), 0)))
    return lax.convert_element_type(out, dtype)
  if start == 0:
    return lax.broadcasted_iota(dtype, (max(0, int(np.ceil(stop))),), 0)
  size = max(0, int(np.ceil(stop - start)))
  return lax.add(lax.convert_element_type(start, dtype), lax.broadcasted_iota(dtype, (size,), 0))


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype=None, axis: int = 0, *, device=None):
  """`num` evenly spaced values from start to stop (arrays broadcast; values along `axis`)."""
  num = _dim(num, "'num' argument of jnp.linspace")
  axis = _dim(axis, "'axis' argument of jnp.linspace")
  return _linspace(start, stop, num, endpoint, retstep, dtype, axis)


@jit(static_argnames=("num", "endpoint", "retstep", "dtype", "axis"))
def _linspace(start, stop, num, endpoint, retstep, dtype, axis):
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  start, stop = _ensure_arraylike("linspace", start, stop)
  if dtype is None:
    dtype = util.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = _user_dtype(dtype, "linspace")
  cdtype = util.to_inexact_dtype(dtype)
  start, stop = astype(start, cdtype), astype(stop, cdtype)
  bounds_shape = list(util.broadcast_shapes(start.shape, stop.shape))
  b_start = util.broadcast_to_shape(start, bounds_shape)
  b_stop = util.broadcast_to_shape(stop, bounds_shape)
  axis = len(bounds_shape) + axis + 1 if axis < 0 else axis
  bounds_shape.insert(axis, 1)
  div = (num - 1) if endpoint else num
  if num > 1:
    delta = lax.convert_element_type(stop - start, cdtype) / asarray(div, dtype=cdtype)
    iota_shape = [1] * len(bounds_shape)
    iota_shape[axis] = div
    # endpoints come out exactly in float arithmetic (integer outputs may round)
    real_dtype = dtypes.finfo(cdtype).dtype
    iota = lax.reshape(lax.iota(real_dtype, div), iota_shape)
    step = astype(iota / asarray(div, real_dtype), cdtype)
    out = (lax.reshape(b_start, bounds_shape) * (1 - step)
           + (lax.reshape(b_stop, bounds_shape) / asarray(div, cdtype)) * astype(iota, cdtype))
    if endpoint:
      out = lax.concatenate([out, lax.expand_dims(b_stop, (axis,))],
                            util.canonicalize_axis(axis, out.ndim))
  elif num == 1:
    delta = asarray(np.nan if endpoint else stop - start, dtype=cdtype)
    out = lax.reshape(b_start, bounds_shape)
  else:  # num == 0, as NumPy
    empty_shape = list(util.broadcast_shapes(start.shape, stop.shape))
    empty_shape.insert(axis, 0)
    delta = full((), np.nan, cdtype)
    out = empty(empty_shape, dtype)
  if dtypes.is_integer(dtype) and not dtypes.is_integer(out.dtype):
    out = lax.floor(out)
  result = lax.convert_element_type(out, dtype)
  return (result, delta) if retstep else result



def logspace(start, stop, num: int = 50, endpoint: bool = True, base=10.0, dtype=None,
             axis: int = 0):
  """`base ** linspace(start, stop, num)`."""
  num = _dim(num, "'num' argument of jnp.logspace")
  axis = _dim(axis, "'axis' argument of jnp.logspace")
  return _logspace(start, stop, num, endpoint, base, dtype, axis)


@jit(static_argnames=("num", "endpoint", "dtype", "axis"))
def _logspace(start, stop, num, endpoint, base, dtype, axis):
  if dtype is None:
    dtype = util.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = _user_dtype(dtype, "logspace")
  cdtype = util.to_inexact_dtype(dtype)
  start, stop = _ensure_arraylike("logspace", start, stop)
  start, stop = astype(start, cdtype), astype(stop, cdtype)
  lin = linspace(start, stop, num, endpoint=endpoint, retstep=False, dtype=None, axis=axis)
  return lax.convert_element_type(ufuncs.power(base, lin), dtype)



def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0):
  """Geometrically spaced values from start to stop (same sign)."""
  num = _dim(num, "'num' argument of jnp.geomspace")
  axis = _dim(axis, "'axis' argument of jnp.geomspace")
  return _geomspace(start, stop, num, endpoint, dtype, axis)


@jit(static_argnames=("num", "endpoint", "dtype", "axis"))
def _geomspace(start, stop, num, endpoint, dtype, axis):
  if dtype is None:
    dtype = util.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = _user_dtype(dtype, "geomspace")
  cdtype = util.to_inexact_dtype(dtype)
  start, stop = _ensure_arraylike("geomspace", start, stop)
  start, stop = astype(start, cdtype), astype(stop, cdtype)
  sign = ufuncs.sign(start)
  res = sign * logspace(ufuncs.log10(start / sign), ufuncs.log10(stop / sign), num,
                        endpoint=endpoint, base=10.0, dtype=cdtype, axis=0)
  axis = util.canonicalize_axis(axis, res.ndim)
  if axis != 0:
    res = lax.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, res.ndim)))
  return lax.convert_element_type(res, dtype)



# --- matrices ---------------------------------------------------------------------------------

def eye(N, M=None, k=0, dtype=None, *, device=None):
  """A 2-D array with ones on the k-th diagonal."""
  dtype = _user_dtype(float if dtype is None else dtype, "eye")
  if isinstance(k, int):
    info = np.iinfo(np.int32)
    k = builtins.min(builtins.max(k, int(info.min)), int(info.max))
  offset = _ensure_arraylike("eye", k)
  if not (offset.shape == () and dtypes.is_integer(offset.dtype)):
    raise ValueError(f"k must be a scalar integer; got {k}")
  n = _dim(N, "argument 'N' of jnp.eye()")
  m = n if M is None else _dim(M, "argument 'M' of jnp.eye()")
  if n < 0 or m < 0:
    raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
  i = lax.broadcasted_iota(offset.dtype, (n, m), 0)
  j = lax.broadcasted_iota(offset.dtype, (n, m), 1)
  return astype(lax.eq(lax.add(i, offset), j), dtype)


def identity(n, dtype=None):
  """The n x n identity matrix."""
  if dtype is not None:
    dtype = _user_dtype(dtype, "identity")
  return eye(n, dtype=dtype)


def _tri_mask(dtype, shape, k):
  """lax._tri: ones where column <= row + k."""
  offset = asarray(k)
  if not dtypes.is_integer(offset.dtype):
    raise TypeError(f"offset must be an integer, got {k!r}")
  shape_dtype = np.dtype(np.int32) if builtins.max(shape, default=0) < 2**31 else np.dtype(np.int64)
  rows = lax.add(lax.broadcasted_iota(shape_dtype, shape, 0), astype(offset, shape_dtype))
  mask = lax.ge(rows, lax.broadcasted_iota(shape_dtype, shape, 1))
  return lax.convert_element_type(mask, dtype)


def tri(N, M=None, k=0, dtype=None):
  """An N x M array with ones at and below the k-th diagonal."""
  dtype = dtypes.default_float_dtype() if dtype is None else _user_dtype(dtype, "tri")
  n = _dim(N, "argument 'N' of jnp.tri()")
  m = n if M is None else _dim(M, "argument 'M' of jnp.tri()")
  return _tri_mask(dtype, (n, m), k)


def _tri_select(name: str, lower: bool):
  def fn(m, k=0):
    m = _ensure_arraylike(name, m)
    if m.ndim < 2:
      raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D")
    n_rows, n_cols = m.shape[-2:]
    mask = lax.broadcast(tri(n_rows, n_cols, k=k if lower else k - 1, dtype=np.bool_),
                         m.shape[:-2])
    zeros_ = zeros_like(m)
    return lax.select(mask, m, zeros_) if lower else lax.select(mask, zeros_, m)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"The {'lower' if lower else 'upper'} triangle of (a stack of) matrices, "
                "relative to the k-th diagonal; the rest zeroed.")
  return jit(fn, static_argnames=("k",))


tril = _tri_select("tril", lower=True)
triu = _tri_select("triu", lower=False)


def meshgrid(*xi, copy: bool = True, sparse: bool = False, indexing: str = "xy"):
  """Coordinate arrays from 1-D coordinate vectors ('xy': Cartesian, 'ij': matrix)."""
  util.check_arraylike("meshgrid", *xi)
  args = [asarray(x) for x in xi]
  if not copy:
    raise ValueError("jax.numpy.meshgrid only supports copy=True")
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  if any(a.ndim != 1 for a in args):
    raise ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                     f"{[a.shape for a in args]}")
  swap = indexing == "xy" and len(args) >= 2
  if swap:
    args[0], args[1] = args[1], args[0]
  shape = [1 if sparse else a.shape[0] for a in args]

  def a_shape(i, a):
    return [*shape[:i], a.shape[0], *shape[i + 1:]] if sparse else shape
  out = [lax.broadcast_in_dim(a, a_shape(i, a), (i,)) for i, a in enumerate(args)]
  if swap:
    out[0], out[1] = out[1], out[0]
  return tuple(out)

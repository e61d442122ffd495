"""Helpers shared by the ember.numpy modules: argument checks, dtype promotion and
NumPy-style rank broadcasting, all built on lax primitives."""
from __future__ import annotations

import warnings

from typing import Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.base.config import config
from ember._src.core.array import Array
from ember._src.primitives.elementwise import convert_element_type
from ember._src.primitives.structural import broadcast_in_dim


def check_arraylike(fun_name: str, *args) -> None:
  for pos, arg in enumerate(args):
    if not core.is_arraylike(arg):
      msg = (f"{fun_name} requires ndarray or scalar arguments, got {type(arg).__name__} "
             f"at position {pos}.")
      if isinstance(arg, (list, tuple)):
        msg += " Convert it with jnp.asarray() first."
      elif core.real_jax_mixing_note(arg):
        msg = (f"{fun_name}: the argument at position {pos}, of type {type(arg).__name__} "
               f"(from {type(arg).__module__}), is not a valid ember type: "
               f"{core.real_jax_mixing_note(arg)}")
      raise TypeError(msg)


def check_no_float0s(fun_name: str, *args) -> None:
  """float0 values (the tangents of integers) take part in no operation, as in JAX."""
  for a in args:
    dt = getattr(a, "dtype", None)
    if isinstance(dt, np.dtype) and dt == dtypes.float0:
      raise TypeError(
          f"Called {fun_name} with a float0 array. float0s do not support any operations by "
          "design because they are not compatible with non-trivial vector spaces. No implicit "
          "dtype conversion is done. You can use np.zeros_like(arr, dtype=np.float) to cast "
          "a float0 array to a regular zeros array. \nIf you didn't expect to get a float0 "
          "you might have accidentally taken a gradient with respect to an integer argument.")


def promote_dtypes(*args):
  """Convert arguments to their common dtype under JAX's promotion rules."""
  if len(args) < 2:
    return list(args)
  to_dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  return [convert_element_type(x, to_dtype, weak) for x in args]


def promote_dtypes_inexact(*args):
  """Like promote_dtypes, then integers/bools go to a float dtype (`to_inexact_dtype`)."""
  to_dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  to_dtype = to_inexact_dtype(to_dtype)
  return [convert_element_type(x, to_dtype, weak) for x in args]


def to_inexact_dtype(dt):
  """JAX's rule: bool and integers up to 32 bits -> float32, 64-bit integers -> float64
  (canonicalized, so float32 without x64); inexact dtypes are kept."""
  if dtypes.is_inexact(dt):
    return dt
  return dtypes.canonicalize_dtype(np.float64 if np.dtype(dt).itemsize == 8 else np.float32)


def promote_dtypes_numeric(*args):
  """Like promote_dtypes, then bools go to int32 (JAX's `to_numeric_dtype`)."""
  if len(args) == 1 and type(args[0]) is Array and args[0]._dtype.kind in "fiuc":
    return [args[0]]   # (jnp.sum's preamble: one Array, already numeric)
  to_dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  if to_dtype == np.bool_:
    to_dtype = np.dtype(np.int32)
  return [convert_element_type(x, to_dtype, weak) for x in args]


def broadcast_shapes(*shapes: Sequence[int]) -> tuple:
  """NumPy broadcasting of shapes; ValueError naming the shapes when they are incompatible."""
  if not shapes:
    return ()
  ndim = max(len(s) for s in shapes)
  out = []
  for dims in zip(*[(1,) * (ndim - len(s)) + tuple(s) for s in shapes]):
    non1 = {d for d in dims if d != 1}
    if len(non1) > 1:
      raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                       f"{[tuple(s) for s in shapes]}")
    out.append(non1.pop() if non1 else 1)
  return tuple(out)


def broadcast_to_rank(x, ndim: int):
  """Prepend size-1 dimensions (lax broadcasts size-1 dimensions and 0-d operands)."""
  shape = core.get_aval(x).shape
  if len(shape) == ndim:
    return x
  k = ndim - len(shape)
  return broadcast_in_dim(x, (1,) * k + shape, tuple(range(k, ndim)))


def broadcast_arrays_rank(*args):
  """NumPy rank promotion for elementwise ops (JAX's `_promote_shapes`): 0-d operands and
  equal ranks go to lax as they are; lower-rank operands get leading size-1 dims."""
  shapes = [core.get_aval(a).shape for a in args]
  nonscalar_ranks = {len(s) for s in shapes if s}
  if len(nonscalar_ranks) < 2:
    broadcast_shapes(*shapes)  # still report incompatible shapes here, with jnp's message
    return list(args)
  if config.jax_numpy_rank_promotion != "allow":
    msg = (f"Operands could not be broadcast together with shapes {shapes}: implicit rank "
           "promotion is disabled by jax_numpy_rank_promotion; add explicit "
           "expand_dims or reshape.")
    if config.jax_numpy_rank_promotion == "raise":
      raise ValueError(msg)
    warnings.warn(msg)
  broadcast_shapes(*shapes)
  nd = max(nonscalar_ranks)
  return [broadcast_to_rank(a, nd) if core.get_aval(a).shape else a for a in args]


def broadcast_to_shape(x, shape):
  """Broadcast `x` to `shape` with NumPy's rules (one broadcast_in_dim)."""
  aval = core.get_aval(x)
  shape = tuple(shape)
  if aval.shape == shape:
    return x
  nlead = len(shape) - aval.ndim
  if nlead < 0 or any(d not in (1, s) for d, s in zip(aval.shape, shape[nlead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {aval.shape} and requested "
                     f"shape {shape}")
  return broadcast_in_dim(x, shape, tuple(range(nlead, len(shape))))


def jax_array_protocol(args) -> tuple:
  """`args` with each object that defines `__jax_array__` (flax's Variables, equinox's
  modules) replaced by the array it stands for, as JAX's jnp functions read them: left as
  it is, it would reach `bind` as a constant, and under a trace that constant would hold
  the trace's tracer."""
  return tuple(a if isinstance(a, Array) else core.unwrap_jax_array(a) for a in args)


def promote_args(fun_name: str, *args):
  """Check, promote dtypes and broadcast: the standard preamble of a jnp function."""
  if len(args) == 2:
    fast = _promote_pair_fast(*args)
    if fast is not None:
      return fast
  check_arraylike(fun_name, *args)
  args = jax_array_protocol(args)
  check_no_float0s(fun_name, *args)
  return broadcast_arrays_rank(*promote_dtypes(*args))


def _promote_pair_fast(x, y) -> list | None:
  """The pairs eager code promotes most, answered without the promotion lattice (what it
  would answer): two Arrays of one type and shape, unchanged; a float Array and a Python
  number, the number as an array of the Array's dtype and weak type (a weak Python scalar
  never widens a float). None for anything else."""
  if type(x) is Array:
    if type(y) is Array:
      if x._dtype == y._dtype and x._weak_type == y._weak_type and x._shape == y._shape \
          and x._dtype.kind != "V":   # (float0: check_no_float0s raises)
        return [x, y]
      return None
    if type(y) in (float, int) and _is_float(x._dtype):
      return [x, _number_operand(y, x._dtype, x._weak_type)]
  elif type(y) is Array and type(x) in (float, int) and _is_float(y._dtype):
    return [_number_operand(x, y._dtype, y._weak_type), y]
  return None


# (type, number, dtype, weak type) -> its Array: eager code converts the same few constants
# over and over (`x + 1.0` in a loop); an operand of a binary op never reaches the user
# (nothing returns it or a view of it), and an Array never changes
_number_operands: dict = {}
_NUMBER_OPERANDS_LIMIT = 512


def _number_operand(number, dtype, weak_type: bool):
  """`convert_element_type(number, dtype, weak_type)`, kept for the next time under the
  eval trace (not 0.0, which equals -0.0 as a key, nor NaN, which equals nothing; nor a
  64-bit dtype, which the x64 flag canonicalizes)."""
  if not core.cur_level_is_eval() or dtype.itemsize > 4:
    return convert_element_type(number, dtype, weak_type)
  key = (type(number), number, dtype, weak_type)
  out = _number_operands.get(key)
  if out is None or out._deleted:   # (deleted: should one ever reach a user who can)
    out = convert_element_type(number, dtype, weak_type)
    if (number or type(number) is int) and number == number:
      if len(_number_operands) >= _NUMBER_OPERANDS_LIMIT:
        _number_operands.clear()
      _number_operands[key] = out
  return out


def _is_float(dt) -> bool:
  return isinstance(dt, np.dtype) and dtypes.dtype_kind(dt) == "f"


def promote_args_inexact(fun_name: str, *args):
  if len(args) == 1:   # (jnp.sin's preamble: one Array or tracer, already inexact)
    x = args[0]
    if type(x) is Array and x._dtype.kind in "fc" or \
        isinstance(x, core.Tracer) and x.stands_for_array and x.aval.dtype.kind in "fc":
      return [x]
  check_arraylike(fun_name, *args)
  args = jax_array_protocol(args)
  check_no_float0s(fun_name, *args)
  return broadcast_arrays_rank(*promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name: str, *args):
  check_arraylike(fun_name, *args)
  args = jax_array_protocol(args)
  check_no_float0s(fun_name, *args)
  return broadcast_arrays_rank(*promote_dtypes_numeric(*args))


def canonicalize_axis(axis: int, ndim: int, fun_name: str = "") -> int:
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"{fun_name + ': ' if fun_name else ''}axis {axis} is out of bounds "
                     f"for array of dimension {ndim}")
  return axis % ndim

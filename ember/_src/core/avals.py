"""Abstract values: ShapedArray (shape, dtype, weak type) and how a value gets one.

`get_aval` gives the type of any argument (Array, Tracer, NumPy value, Python scalar) and
explains values that are not arrays (among them the real JAX's arrays); shapes are
canonicalized here (a traced dimension is a ConcretizationTypeError), and vmap's mapped and
unmapped avals are computed here.
"""
from __future__ import annotations

import dataclasses
import enum
import operator
from typing import Any

import numpy as np

from ember._src.base import dtypes, errors
from ember._src.core.tracers import Tracer


class AbstractValue:
  """The base of abstract values (`jax.core.AbstractValue`); ember's one kind is ShapedArray."""
  __slots__ = ()


Value = Any                    # jax.core.Value: any concrete value
ParamDict = dict[str, Any]     # jax.core.ParamDict: a primitive's parameters


class ShapedArray(AbstractValue):
  """The type of an array value: shape, dtype and whether the dtype is weak."""
  __slots__ = ("shape", "dtype", "weak_type")

  def __init__(self, shape, dtype, weak_type: bool = False, *, sharding=None,
               manual_axis_type=None, memory_space=None, layout=None):
    self.shape = tuple(int(d) for d in shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    self.weak_type = bool(weak_type)
    # JAX's types also carry a sharding, the mesh axes a value varies over, a memory space
    # and a layout; ember's carry none of them (one layout, device memory; `.sharding` is
    # the unsplit one), so a given sharding is checked as JAX checks it, then not kept
    if sharding is not None:
      check_type_sharding[0](sharding, self.shape)

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @property
  def sharding(self):
    """The sharding in the type (`jax.typeof(x).sharding`): ember's types carry none, so it
    is JAX's for an array no explicit axis splits, a NamedSharding over the abstract mesh in
    context (empty without `jax.set_mesh`) with a None per dimension (`P(None, None)`)."""
    return type_sharding[0](self)

  def update(self, shape=None, dtype=None, weak_type=None, **kwargs) -> "ShapedArray":
    """This type with the given fields changed (JAX's `sharding=`, `manual_axis_type=`,
    `memory_space=`, `layout=` are taken as the constructor takes them)."""
    return ShapedArray(self.shape if shape is None else shape,
                       self.dtype if dtype is None else dtype,
                       self.weak_type if weak_type is None else weak_type, **kwargs)

  def strip_weak_type(self) -> "ShapedArray":
    return self.update(weak_type=False) if self.weak_type else self

  def to_tangent_aval(self) -> "ShapedArray":
    """The type of this value's tangents: itself for floats and complex numbers, float0 of
    the same shape for integers and bools (JAX's)."""
    dt = self.dtype
    if not isinstance(dt, dtypes.ExtendedDType) and dtypes.dtype_kind(dt) in "fc":
      return self
    if dtypes.has_rules(dt):   # a user's extended dtype names its tangents' dtype
      return ShapedArray(self.shape, dt._rules.tangent_dtype(dt), False)
    return ShapedArray(self.shape, dtypes.float0, False)

  # as a hi type's part (core/hitypes.py): an array is its own one lo value
  def lo_ty(self) -> list:
    return [self]

  def lower_val(self, x) -> list:
    return [x]

  def raise_val(self, x):
    return x

  def str_short(self, short_dtypes: bool = False) -> str:
    dt = dtypes.short_dtype_name(self.dtype) if short_dtypes else dtypes.dtype_name(self.dtype)
    return f"{dt}[{','.join(map(str, self.shape))}]"

  def __eq__(self, other):
    return (type(other) is ShapedArray and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))

  def __repr__(self):
    w = ", weak_type=True" if self.weak_type else ""
    return f"ShapedArray({dtypes.dtype_name(self.dtype)}[{','.join(map(str, self.shape))}]{w})"

  def __str__(self):  # JAX's `jax.typeof(1.0)` prints `~float32[]`: `~` marks a weak type
    return ("~" if self.weak_type else "") + self.str_short()


# aval -> the sharding in its type, and the check of a sharding given to ShapedArray; filled
# by core/sharding.py (which imports this module)
type_sharding: list = [None]
check_type_sharding: list = [None]


def physical_aval(aval: ShapedArray) -> ShapedArray:
  """The type a value of a user's extended dtype is stored as (JAX's `core.physical_aval`):
  its shape followed by the physical element's shape, of that element's dtype."""
  if not dtypes.has_rules(aval.dtype):
    return aval
  elt_shape, elt_dtype = dtypes.physical_element(aval.dtype)
  return ShapedArray((*aval.shape, *elt_shape), elt_dtype)


def _python_scalar_aval(x) -> ShapedArray:
  dt = dtypes.default_dtype_for(type(x))
  if type(x) is int:
    info = np.iinfo(dt)
    if not info.min <= x <= info.max:
      raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
  return ShapedArray((), dt, weak_type=type(x) is not bool)


def unwrap_jax_array(x):
  """`x`, or the array it stands for when it defines `__jax_array__` (flax's Variables,
  equinox's modules, a hi value's tracer: JAX's operators and jnp functions read them so);
  array tracers as they are."""
  if isinstance(x, Tracer) and x.stands_for_array or not hasattr(x, "__jax_array__"):
    return x
  return x.__jax_array__()


def get_aval(x) -> ShapedArray:
  """The abstract value of any array-like argument: Array, Tracer, NumPy value or scalar."""
  aval = getattr(x, "aval", None)
  if isinstance(aval, ShapedArray):
    return aval
  if type(x) in (bool, int, float, complex):
    return _python_scalar_aval(x)
  if isinstance(x, (np.ndarray, np.generic)):
    dt = dtypes.canonicalize_dtype(x.dtype) if x.dtype in dtypes.jax_dtypes else None
    if x.dtype == dtypes.float0:  # the tangents of integers (grad with allow_int, vjp)
      return ShapedArray(x.shape, dtypes.float0, False)
    if dt is None:
      raise TypeError(f"Value of dtype {x.dtype} is not a valid ember array type; only "
                      "numeric and bool dtypes are supported.")
    return ShapedArray(x.shape, dt, False)
  if hasattr(x, "__jax_array__"):
    return get_aval(x.__jax_array__())
  mixed = real_jax_mixing_note(x)
  if mixed:
    raise TypeError(f"Value of type {type(x).__name__} (from {type(x).__module__}) is not a "
                    f"valid ember type: {mixed}")
  raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid ember type: "
                  "pass arrays, NumPy arrays or Python scalars (mark other arguments "
                  "static with static_argnums).")


def real_jax_mixing_note(x) -> str:
  """Why `x` cannot be used, when it is a value of the real JAX: "" for anything else."""
  if not _is_real_jax_value(x):
    return ""
  return ("it is an array of the real JAX, which was imported beside ember (e.g. `import "
          "ember as jax` and then `import jax.numpy as jnp`). Mixing the two does not work. "
          "Import ember's modules (`import ember.numpy as jnp`), or run the program with "
          "`python -m ember script.py` (or call ember.compat.install() before anything "
          "imports jax) so that every `import jax` resolves to ember.")


def _is_real_jax_value(x) -> bool:
  """Whether `x` comes from the real jax/jaxlib packages (never ember's alias of them)."""
  module = type(x).__module__ or ""
  return module.split(".")[0] in ("jax", "jaxlib")


def canonicalize_shape(shape, context: str = "") -> tuple[int, ...]:
  """A shape argument as a tuple of Python ints; a traced dimension is a
  ConcretizationTypeError that names the argument it came from and suggests static_argnums."""
  if isinstance(shape, (int, np.integer)) or (isinstance(shape, Tracer) and shape.ndim == 0):
    shape = (shape,)
  try:
    dims = tuple(shape)
  except TypeError:
    raise TypeError(f"{context}shapes must be 1D sequences of integers, got {shape!r}") from None
  out = []
  for d in dims:
    if isinstance(d, Tracer) and d.to_concrete_value() is None:
      raise errors.ConcretizationTypeError(
          f"{context}Shapes must be 1D sequences of concrete values of integer type, got "
          f"{dims}. If using `jit`, try using `static_argnums` or applying `jit` to smaller "
          f"subfunctions.\n{d._origin_msg()}")
    try:
      out.append(operator.index(d))
    except TypeError:
      raise TypeError(f"{context}Shapes must be 1D sequences of concrete values of integer "
                      f"type, got {dims}.") from None
  if any(d < 0 for d in out):
    raise ValueError(f"{context}shape {tuple(out)} has a negative dimension; all dimensions "
                     "must be >= 0.")
  return tuple(out)


def valid_jaxtype(x) -> bool:
  """Whether `x` can be an argument or result of a traced function (it has an aval)."""
  try:
    get_aval(x)
  except TypeError:
    return False
  return True


# jax.extend.core.array_types: the NumPy types that are arrays to ember
array_types = frozenset({np.ndarray, *(t.type for t in map(np.dtype, dtypes.jax_dtypes)
                                       if not isinstance(t, dtypes.ExtendedDType))})


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` without its mapped axis `axis` (of size `size`), as vmap's body sees it."""
  if axis is None:
    return aval
  if aval.shape[axis] != size:
    raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size "
                     f"{aval.shape[axis]}, not {size}")
  return aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
  """`aval` with a mapped axis of size `size` inserted at `axis` (None: unchanged)."""
  if axis is None:
    return aval
  return aval.update(shape=aval.shape[:axis] + (size,) + aval.shape[axis:])


def max_dim(d1, d2) -> int:
  """The larger of two dimension sizes (jax.core.max_dim; ember's shapes are concrete)."""
  return max(operator.index(d1), operator.index(d2))


def min_dim(d1, d2) -> int:
  return min(operator.index(d1), operator.index(d2))


def is_arraylike(x) -> bool:
  return (isinstance(x, (Tracer, np.ndarray, np.generic, bool, int, float, complex))
          or isinstance(getattr(x, "aval", None), ShapedArray) or hasattr(x, "__jax_array__"))



@dataclasses.dataclass(frozen=True, slots=True)
class AvalDType:
  """A dtype that makes types by indexing (`jax.avals.f32[3, 4]` is `ShapedArray((3, 4),
  float32)`)."""
  dtype: Any

  def __getitem__(self, dims) -> ShapedArray:
    dims = dims if isinstance(dims, tuple) else (dims,)
    return ShapedArray(dims, self.dtype)


class MemorySpace(enum.Enum):
  """Where a value lives (`jax.memory.Space`): ember's CPU backend has one memory, so the
  spaces name the same place."""
  Device = enum.auto()
  Host = enum.auto()
  Any = enum.auto()

  def __repr__(self):
    return f"MemorySpace.{self.name}"

  __hash__ = object.__hash__

"""ShapeDtypeStruct: a shape and dtype without a value (eval_shape is in driver/jit.py); wrapped
functions (WrappedFun, wrap_init, flatten_fun_nokwargs) for libraries that stage their own."""
from __future__ import annotations

import enum
import functools
import types

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util


class ShapeDtypeStruct:
  """A shape and dtype without a value (`jax.ShapeDtypeStruct`)."""
  __slots__ = ("shape", "dtype", "weak_type", "sharding")

  def __init__(self, shape, dtype, *, weak_type: bool = False, sharding=None):
    self.shape = tuple(shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    self.weak_type, self.sharding = weak_type, sharding

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

  @property
  def aval(self):
    return core.ShapedArray(self.shape, dtypes.canonicalize_dtype(self.dtype), self.weak_type)

  def __repr__(self):
    w = ", weak_type=True" if self.weak_type else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{w})"

  def __eq__(self, other):
    return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
            and self.dtype == other.dtype and self.weak_type == other.weak_type)

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))



def _user_attrs(fun) -> dict:
  """The attributes a user set on `fun`: its __dict__, or for an ember transformation object
  (a jit, custom_jvp, ... instance, which keeps its own state in __dict__) those of the
  function it wraps."""
  seen = 0
  while (not isinstance(fun, (types.FunctionType, functools.partial))
         and type(fun).__module__.startswith("ember.") and hasattr(fun, "__wrapped__")
         and seen < 32):
    fun, seen = fun.__wrapped__, seen + 1
  if not isinstance(fun, (types.FunctionType, functools.partial)) and \
      type(fun).__module__.startswith("ember."):
    return {}
  return dict(getattr(fun, "__dict__", {}))


def wraps(wrapped, docstr: str | None = None, **kwargs):
  """Decorator: a transformation's wrapper function takes `wrapped`'s metadata as JAX's
  transformations do: its attributes (__dict__), __annotations__, __name__ (that of a
  functools.partial's function), __module__, __doc__ (`docstr.format(fun=name, doc=doc, **kwargs)`
  when given), __qualname__ and __wrapped__. As in JAX, metadata that cannot be set (a
  __name__ that is not a string) stops the copying there, silently."""
  def wrapper(fun):
    try:
      name = getattr(wrapped, "__name__", None)
      inner = wrapped
      while name is None and isinstance(inner, functools.partial):
        inner = inner.func
        name = getattr(inner, "__name__", None)
      name = "<unnamed function>" if name is None else name
      doc = getattr(wrapped, "__doc__", "") or ""
      fun.__dict__.update(_user_attrs(wrapped))
      fun.__annotations__ = dict(getattr(wrapped, "__annotations__", {}) or {})
      fun.__name__ = name
      fun.__module__ = getattr(wrapped, "__module__", "<unknown module>")
      fun.__doc__ = doc if docstr is None else docstr.format(fun=name, doc=doc, **kwargs)
      fun.__qualname__ = getattr(wrapped, "__qualname__", fun.__name__)
      fun.__wrapped__ = wrapped
    except Exception:  # noqa: BLE001  (JAX's: best effort)
      pass
    return fun
  return wrapper


# --- wrapped functions (jax.extend.linear_util, jax.api_util) ---------------------------------
# A library stages a function by wrapping it, flattening its inputs and outputs, and tracing
# the flat function (flax's nn.scan does it for the broadcast part of its body).


class StoreException(Exception):
  """A Store read before its function ran, or written twice."""


class Store:
  """A value a wrapped function leaves behind when it runs (e.g. its output tree)."""
  __slots__ = ("_val",)
  _EMPTY = object()

  def __init__(self):
    self._val = Store._EMPTY

  def store(self, val) -> None:
    if self._val is not Store._EMPTY:
      raise StoreException("Store occupied: the wrapped function ran twice")
    self._val = val

  @property
  def val(self):
    if self._val is Store._EMPTY:
      raise StoreException("Store empty: call the wrapped function first")
    return self._val


class WrappedFun:
  """A function with the layers put around it (`transforms`, outermost last), its fixed
  keyword parameters and its DebugInfo (jax.extend.linear_util.WrappedFun)."""
  __slots__ = ("f", "f_transformed", "transforms", "params", "debug_info")

  def __init__(self, f, f_transformed, transforms: tuple, params: tuple,
               debug_info: core.DebugInfo | None):
    self.f, self.f_transformed, self.transforms = f, f_transformed, transforms
    self.params, self.debug_info = params, debug_info

  @property
  def __name__(self):
    return getattr(self.f, "__name__", type(self.f).__name__)

  def call_wrapped(self, *args, **kwargs):
    return self.f_transformed(*args, **dict(self.params), **kwargs)

  def wrap(self, name: str, layer) -> "WrappedFun":
    """A WrappedFun whose function is `layer(inner)`: `inner` calls this one."""
    return WrappedFun(self.f, layer(self.f_transformed), self.transforms + (name,),
                      self.params, self.debug_info)

  def __repr__(self):
    layers = "".join(f"{i}   : {t}\n" for i, t in enumerate(reversed(self.transforms)))
    return f"Wrapped function:\n{layers}Core: {self.__name__}\n"


def wrap_init(f, params=None, *, debug_info: core.DebugInfo | None = None) -> WrappedFun:
  """`f` as a WrappedFun; `params` (a dict) are keyword arguments every call passes."""
  params = () if params is None else tuple(sorted(dict(params).items()))
  return WrappedFun(f, f, (), params, debug_info)


def flatten_fun_nokwargs(f: WrappedFun, in_tree) -> tuple[WrappedFun, object]:
  """`f` taking the leaves of `in_tree` and returning the leaves of its result; the second
  value is a thunk giving the result's tree once the function has run."""
  out_tree = Store()

  def layer(inner):
    def flat_fun(*leaves):
      out = inner(*tree_util.tree_unflatten(in_tree, leaves))
      flat, tree = tree_util.tree_flatten(out)
      out_tree.store(tree)
      return flat
    return flat_fun

  return f.wrap("flatten_fun_nokwargs", layer), lambda: out_tree.val


class Inline(enum.Enum):
  """When a nested jitted function is inlined into its caller (`jax.Inline`, jit's `inline=`):
  during tracing or lowering (JAX_*), by the compiler (XLA_*), or as it decides (AUTO).
  ember's compiler inlines every call, so they differ only in whether the caller's jaxpr
  keeps the call: `inline=True` is JAX_LATE, False is AUTO, as in JAX."""
  JAX_EARLY = "jax_early"
  JAX_LATE = "jax_late"
  XLA_EARLY = "xla_early"
  XLA_LATE = "xla_late"
  AUTO = "auto"


def canonical_inline(inline) -> bool:
  """jit's `inline=` (a bool or an Inline) as the bool the jit equation holds."""
  if isinstance(inline, Inline):
    return inline in (Inline.JAX_EARLY, Inline.JAX_LATE)
  if inline is True or inline is False:
    return inline
  raise ValueError(f"Invalid inline option: {inline!r}")

"""The jnp functions built on vmap: vectorize, apply_along_axis, apply_over_axes,
fromfunction. As in JAX, each is sugar for nested `vmap`s (no Python loop over elements),
so the function they wrap sees per-example (core-shaped) arrays.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Collection, Sequence

import numpy as np

from ember._src import core
from ember._src.library.numpy import creation, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.driver.jit import jit
from ember._src.library.numpy import reductions
from ember._src.primitives.control.conditionals import switch
from ember._src.transforms.batching import vmap

__all__ = ["vectorize", "apply_along_axis", "apply_over_axes", "fromfunction", "piecewise"]

_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = "(?:{0:}(?:,{0:})*)?".format(_DIMENSION_NAME)
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_ARGUMENT_LIST = "{0:}(?:,{0:})*".format(_ARGUMENT)
_SIGNATURE = "^{0:}->{0:}$".format(_ARGUMENT_LIST)


def _parse_gufunc_signature(signature: str):
  """`(m,n),(n)->(m)` -> ([('m', 'n'), ('n',)], [('m',)])."""
  if not re.match(_SIGNATURE, signature):
    raise ValueError(f"not a valid gufunc signature: {signature}")
  return ([tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, part)]
          for part in signature.split("->"))


def _update_dim_sizes(dim_sizes: dict, shape: tuple, core_dims: tuple, error_context: str,
                      *, is_input: bool) -> None:
  n = len(core_dims)
  if is_input and len(shape) < n:
    raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all "
                     f"core dimensions {core_dims!r} {error_context}")
  if not is_input and len(shape) != n:
    raise ValueError(f"output shape {shape!r} does not match core dimensions {core_dims!r} "
                     f"{error_context}")
  for dim, size in zip(core_dims, shape[len(shape) - n:] if n else ()):
    if dim not in dim_sizes:
      dim_sizes[dim] = size
    elif size != dim_sizes[dim]:
      raise ValueError(f"inconsistent size for core dimension {dim!r}: {size!r} vs "
                       f"{dim_sizes[dim]!r} {error_context}")


def _check_output_dims(func, dim_sizes, expected, error_context):
  def wrapped(*args):
    out = func(*args)
    shapes = [np.shape(o) if not isinstance(o, core.Tracer) else o.shape
              for o in (out if isinstance(out, tuple) else [out])]
    if len(expected) > 1 and not isinstance(out, tuple):
      raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                      f"{out!r}\n{error_context}")
    if len(shapes) != len(expected):
      raise TypeError(f"wrong number of output arguments: expected {len(expected)!r}, got "
                      f"{len(shapes)!r} {error_context}")
    sizes = dict(dim_sizes)
    for shape, dims in zip(shapes, expected):
      _update_dim_sizes(sizes, shape, dims, error_context, is_input=False)
    return out
  return wrapped


def _apply_excluded(func, excluded, args, kwargs):
  """Partially apply the positional / keyword arguments in `excluded`."""
  if not excluded:
    return func, args, kwargs
  dyn_args = [a for i, a in enumerate(args) if i not in excluded]
  dyn_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
  static_args = [(i, args[i]) for i in sorted(e for e in excluded if isinstance(e, int))
                 if i < len(args)]
  static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}

  def new_func(*a, **kw):
    a = list(a)
    for i, v in static_args:
      a.insert(i, v)
    return func(*a, **kw, **static_kwargs)
  return new_func, dyn_args, dyn_kwargs


def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(),
              signature: str | None = None) -> Callable:
  """A vectorized `pyfunc` with NumPy broadcasting (generalized-ufunc style), as nested
  `vmap`s over the broadcast (non-core) dimensions. `signature` (e.g. `(m,n),(n)->(m)`)
  names the core dimensions `pyfunc` sees; without it `pyfunc` sees scalars. `excluded`
  positional indices / keyword names are passed through unvectorized."""
  if any(not isinstance(e, (str, int)) for e in excluded):
    raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, "
                    f"but excluded={excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded):
    raise ValueError(f"excluded={excluded!r} contains negative numbers")

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    error_context = (f"on vectorized function with excluded={excluded!r} and "
                     f"signature={signature!r}")
    func, args, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
    if signature is not None:
      in_core, out_core = _parse_gufunc_signature(signature)
    else:
      in_core, out_core = [()] * len(args), None
    none_args = {i for i, a in enumerate(args) if a is None}
    if none_args:
      if any(in_core[i] != () for i in none_args):
        raise ValueError(f"Cannot pass None at locations {none_args} with "
                         f"signature={signature!r}")
      func, args, _ = _apply_excluded(func, none_args, args, {})
      in_core = [d for i, d in enumerate(in_core) if i not in none_args]
    args = tuple(map(creation.asarray, args))
    if len(args) != len(in_core):
      raise TypeError(f"wrong number of positional arguments: expected {len(in_core)!r}, "
                      f"got {len(args)!r} {error_context}")
    dim_sizes: dict = {}
    noncore = []
    for a, dims in zip(args, in_core):
      _update_dim_sizes(dim_sizes, a.shape, dims, error_context, is_input=True)
      noncore.append(a.shape[:a.ndim - len(dims)])
    broadcast_shape = util.broadcast_shapes(*noncore)
    checked = func if out_core is None else _check_output_dims(func, dim_sizes, out_core,
                                                                error_context)
    if kwargs:
      checked = functools.partial(checked, **kwargs)
    # Size-1 (and missing) broadcast dims are squeezed and not mapped: vmap only what varies.
    squeezed, rev_filled = [], []
    for a, shape in zip(args, noncore):
      filled = (1,) * (len(broadcast_shape) - len(shape)) + shape
      rev_filled.append(filled[::-1])
      squeezed.append(shape_ops.squeeze(a, axis=tuple(i for i, s in enumerate(shape) if s == 1)))
    fn, expand = checked, []
    for negdim, sizes in enumerate(zip(*rev_filled)):
      in_axes = tuple(None if s == 1 else 0 for s in sizes)
      if all(ax is None for ax in in_axes):
        expand.append(len(broadcast_shape) - 1 - negdim)
      else:
        fn = vmap(fn, in_axes)
    result = fn(*squeezed)
    if not expand:
      return result
    if isinstance(result, tuple):
      return tuple(shape_ops.expand_dims(r, axis=expand) for r in result)
    return shape_ops.expand_dims(result, axis=expand)

  return wrapped


def apply_along_axis(func1d: Callable, axis: int, arr, *args, **kwargs):
  """`func1d` applied to every 1-D slice of `arr` along `axis` (nested vmaps)."""
  util.check_arraylike("apply_along_axis", arr)
  nd = np.ndim(arr) if not isinstance(arr, core.Tracer) else arr.ndim
  axis = util.canonicalize_axis(axis, nd, "apply_along_axis")
  func = lambda a: func1d(a, *args, **kwargs)
  for i in range(1, nd - axis):
    func = vmap(func, in_axes=i, out_axes=-1)
  for _ in range(axis):
    func = vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func: Callable, a, axes: Sequence[int]):
  """`func(a, axis)` applied for each axis in turn; results that lost `axis` get it back
  as a size-1 dimension."""
  util.check_arraylike("apply_over_axes", a)
  a = creation.asarray(a)
  for axis in axes:
    b = func(a, axis)
    if b.ndim == a.ndim:
      a = b
    elif b.ndim == a.ndim - 1:
      a = shape_ops.expand_dims(b, axis)
    else:
      raise ValueError("function is not returning an array of the correct shape")
  return a


def fromfunction(function: Callable, shape: Any, *, dtype=float, **kwargs):
  """The array whose element at index (i, j, ...) is `function(i, j, ...)`: `function`
  sees scalar indices (of `dtype`) through nested vmaps; `kwargs` pass through."""
  shape = core.canonicalize_shape(shape, "shape argument of jnp.fromfunction(): ")
  if kwargs:
    function = functools.partial(function, **kwargs)
  for i in range(len(shape)):
    in_axes = [0 if i == j else None for j in range(len(shape))]
    function = vmap(function, in_axes=tuple(in_axes[::-1]))
  return function(*(creation.arange(s, dtype=dtype) for s in shape))


def piecewise(x, condlist, funclist, *args, **kw):
  """Each element of x through the function (or constant) of its first true condition in
  `condlist`; elements with none take the extra last function (or 0). Results take x's
  dtype. As in JAX, the choice is a vectorized `switch` (each function sees scalars)."""
  util.check_arraylike("piecewise", x)
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    funclist = funclist[-1:] + funclist[:-1]   # the "otherwise" function becomes branch 0
  elif nf == nc:
    funclist = [0] + list(funclist)
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc+1} functions are expected; "
                     f"got {nf}")
  consts = {i: c for i, c in enumerate(funclist) if not callable(c)}
  funcs = frozenset((i, f) for i, f in enumerate(funclist) if callable(f))
  return _piecewise(creation.asarray(x), creation.asarray(condlist, dtype=bool), consts,
                    funcs, *args, **kw)


@functools.partial(jit, static_argnames=["funcs"])
def _piecewise(x, condlist, consts, funcs, *args, **kw):
  by_index = dict(funcs)
  branches = [consts.get(i, by_index.get(i)) for i in range(condlist.shape[0] + 1)]
  # the branch of each element: 1 + the first true condition, 0 when none holds
  first_true = creation.zeros_like(condlist[:1])
  counts = reductions.cumsum(shape_ops.concatenate([first_true, condlist], 0), 0)
  index = reductions.argmax(counts, 0)
  dtype = x.dtype

  def call(f):
    return lambda v: creation.asarray(f(v, *args, **kw)).astype(dtype)

  def const(c):
    return lambda v: creation.array(c, dtype=dtype)
  branches = [call(b) if callable(b) else const(b) for b in branches]
  return vectorize(switch, excluded=(1,))(index, branches, x)

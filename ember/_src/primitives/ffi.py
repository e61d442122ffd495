"""jax.ffi: foreign functions written against XLA's FFI (a `XLA_FFI_Handler`, C or C++ with
ffi.h), registered by name and called from ember programs, eagerly and under jit and vmap.

`ffi_call_p` is the primitive: its impl (eager) and its lowering (a host call of the same
function, compiled code calling back into the host) run runtime/ffi_api.py's C API, which
hands the handler XLA's call frame over the NumPy buffers of the operands and results.
Buffers are row-major (the default layouts of jax.ffi); a handler may keep state per call
site (the instantiate stage), complete asynchronously (a future) and report errors, which
surface as JaxRuntimeError with XLA's status code name, as in JAX.
"""
from __future__ import annotations

import ctypes
import dataclasses
import itertools
import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ember._src import core
from ember._src.base import errors
from ember._src.core.primitive import declare
from ember._src.primitives import control
from ember._src.primitives.callbacks import IOEffect, emit_host_call
from ember._src.runtime import ffi_api
from ember._src.transforms import ad, batching

_VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                 "legacy_vectorized", None)
_CODE_NAMES = {0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT",
               4: "DEADLINE_EXCEEDED", 5: "NOT_FOUND", 6: "ALREADY_EXISTS",
               7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION",
               10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL",
               14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED"}
_batch_partitionable: set = set()   # names marked by register_ffi_target_as_batch_partitionable

# ------------------------------------------------------------------------------------
# Registration
# ------------------------------------------------------------------------------------


def pycapsule(funcptr):
  """A PyCapsule holding the address of a ctypes function pointer, or an address (what the
  register_* functions take)."""
  destructor = ctypes.CFUNCTYPE(None, ctypes.py_object)
  new = ctypes.pythonapi.PyCapsule_New
  new.restype = ctypes.py_object
  new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, destructor)
  address = funcptr if isinstance(funcptr, int) else ctypes.cast(funcptr, ctypes.c_void_p)
  return new(address, None, destructor(0))


def _capsule_address(obj, what: str) -> int:
  get_name = ctypes.pythonapi.PyCapsule_GetName
  get_name.restype, get_name.argtypes = ctypes.c_char_p, (ctypes.py_object,)
  get = ctypes.pythonapi.PyCapsule_GetPointer
  get.restype, get.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
  if type(obj).__name__ != "PyCapsule":
    raise TypeError(f"{what} must be a PyCapsule (see jax.ffi.pycapsule), got {type(obj)}")
  return get(obj, get_name(obj))


def include_dir() -> str:
  """The directory of XLA's FFI headers (xla/ffi/api/c_api.h, api.h, ffi.h) to compile
  handlers against."""
  return os.path.join(os.path.dirname(os.path.abspath(ffi_api.__file__)), "ffi_include")


def register_ffi_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                        **kwargs: Any) -> None:
  """Register a foreign function target: `fn` a PyCapsule of an XLA_FFI_Handler, or a dict
  of them by stage ("instantiate", "prepare", "initialize", "execute")."""
  del kwargs   # XLA's extra registration options (none changes a CPU handler's call)
  if api_version != 1:
    raise ValueError(f"register_ffi_target({name!r}): ember runs typed FFI handlers "
                     f"(api_version=1); the legacy custom call API (api_version={api_version})"
                     " has no call frame to build")
  stages = fn if isinstance(fn, dict) else {"execute": fn}
  unknown = set(stages) - set(ffi_api.STAGES)
  if unknown or "execute" not in stages:
    raise ValueError(f"register_ffi_target({name!r}): the stages must be among "
                     f"{ffi_api.STAGES} and include 'execute', got {sorted(stages)}")
  bundle = {s: _capsule_address(f, f"the {s} handler of {name!r}") for s, f in stages.items()}
  ffi_api.register_handler(name, bundle, platform.lower())


def register_ffi_type_id(name: str, obj: Any, platform: str = "cpu") -> None:
  """Register a user type (for FFI state) whose XLA_FFI_TypeId `obj` points at."""
  del platform
  addr = _capsule_address(obj, f"the type id of {name!r}")
  ffi_api.register_type(name, ffi_api.TypeId.from_address(addr))


def register_ffi_type(name: str, obj: Mapping[str, Any], platform: str = "cpu") -> None:
  """Register a user type: `obj` {"type_id": capsule of its XLA_FFI_TypeId, "type_info":
  optional capsule of its XLA_FFI_TypeInfo}."""
  del platform
  addr = _capsule_address(obj["type_id"], f"the type id of {name!r}")
  info = obj.get("type_info")
  ffi_api.register_type(name, ffi_api.TypeId.from_address(addr),
                        _capsule_address(info, "type_info") if info is not None else None)


def register_ffi_target_as_batch_partitionable(name: str) -> None:
  """Mark a target as batch-partitionable (JAX's sharding hint). ember runs FFI calls on
  the host of the calling program, so the mark only records the intent."""
  _batch_partitionable.add(name)


# ------------------------------------------------------------------------------------
# The primitive
# ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class _Attr:
  """An attribute value made hashable (arrays and dicts) for the primitive's params."""
  value: Any

  def _key(self):
    v = self.value
    if isinstance(v, np.ndarray):
      return ("array", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, dict):
      return ("dict", tuple((k, _Attr(x)._key()) for k, x in sorted(v.items())))
    return (type(v).__name__, v)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, _Attr) and self._key() == other._key()


_sites = itertools.count(1)
_site_tokens: dict = {}


def _site_address(site: int) -> int:
  """A distinct address per call site (the handler's XLA_FFI_ExecutionContext*)."""
  token = _site_tokens.get(site)
  if token is None:
    token = _site_tokens[site] = ctypes.create_string_buffer(1)
  return ctypes.addressof(token)


def _run(target_name, platform, site, attributes, result_avals, input_output_aliases):
  """The host function of one ffi_call: NumPy operands in, NumPy results out."""
  def run(*arrays):
    bundle = ffi_api.handler_bundle(target_name, platform)
    if bundle is None:
      raise errors.JaxRuntimeError(
          f"NOT_FOUND: No FFI handler registered for {target_name} on a platform {platform}")
    ins = [np.ascontiguousarray(a) for a in arrays]
    outs = [np.zeros(a.shape, a.dtype) for a in result_avals]
    for i, o in input_output_aliases:
      outs[o][...] = ins[i]
    try:
      ffi_api.call_handler(bundle, _site_address(site), ins, outs,
                           {k: v.value for k, v in attributes})
    except ffi_api.FfiError as e:
      raise errors.JaxRuntimeError(f"{_CODE_NAMES.get(e.code, 'UNKNOWN')}: {e}") from None
    return outs
  return run


def _abstract_eval(*avals, result_avals, **_):
  return list(result_avals)


def _impl(*arrays, target_name, platform, site, attributes, result_avals,
          input_output_aliases, **_):
  return _run(target_name, platform, site, attributes, result_avals,
              input_output_aliases)(*arrays)


def _lower(ctx, *args, target_name, platform, site, attributes, result_avals,
           input_output_aliases, has_side_effect, **_):
  fn = _run(target_name, platform, site, attributes, result_avals, input_output_aliases)
  return emit_host_call(ctx, fn, args, ctx.avals_out, has_side_effect)


ffi_call_p = declare("ffi_call", _abstract_eval, _impl, multiple_results=True)
ffi_call_p.effects_rule = lambda *avals, has_side_effect, **_: (
    frozenset([IOEffect]) if has_side_effect else frozenset())
ffi_call_p.lower = _lower


def _no_derivative(*args, target_name, **_):
  raise ValueError(f"The FFI call to `{target_name}` cannot be differentiated. You can use "
                   "`jax.custom_jvp` or `jax.custom_vjp` to add support.")


ad.primitive_jvps[ffi_call_p] = _no_derivative


def _batch(vals, dims, *, vmap_method, result_avals, **params):
  size = next(np.shape(v)[d] for v, d in zip(vals, dims) if d is not None)
  if vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
    if vmap_method == "expand_dims":
      vals = [batching.moveaxis(v, d, 0) if d is not None else batching.broadcast(v, 1, 0)
              for v, d in zip(vals, dims)]
    else:
      vals = [batching.bdim_at_front(v, d, size) for v, d in zip(vals, dims)]
    avals = tuple(core.ShapedArray((size, *a.shape), a.dtype) for a in result_avals)
    outs = ffi_call_p.bind(*vals, vmap_method=vmap_method, result_avals=avals, **params)
    return outs, [0] * len(outs)
  if vmap_method in ("sequential", "sequential_unrolled"):
    batched = [d is not None for d in dims]
    xs = [batching.moveaxis(v, d, 0) for v, d in zip(vals, dims) if d is not None]
    fixed = [v for v, d in zip(vals, dims) if d is None]

    def one(x_slices):
      it_x, it_f = iter(x_slices), iter(fixed)
      args = [next(it_x) if b else next(it_f) for b in batched]
      return ffi_call_p.bind(*args, vmap_method=vmap_method, result_avals=result_avals,
                             **params)
    outs = control.map(one, xs)
    return list(outs), [0] * len(outs)
  raise NotImplementedError(
      "vmap is only supported for the ffi_call primitive when vmap_method is one of "
      "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
      f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")


batching.primitive_batchers[ffi_call_p] = _batch

# ------------------------------------------------------------------------------------
# ffi_call and lowering rules
# ------------------------------------------------------------------------------------


def _result_avals(specs) -> tuple:
  return tuple(core.ShapedArray(tuple(s.shape), np.dtype(s.dtype)) for s in specs)


def _check_layouts(layouts, avals, what: str) -> None:
  if layouts is None:
    return
  for layout, aval in zip(layouts, avals):
    if layout is None:
      continue
    major_to_minor = tuple(layout)
    if major_to_minor not in (tuple(range(len(aval.shape))),
                              tuple(reversed(range(len(aval.shape))))):
      raise ValueError(f"ffi_call: ember passes row-major {what} buffers only; got the "
                       f"layout {layout} for an operand of shape {aval.shape}")


def _attributes(kwargs: dict) -> tuple:
  out = []
  for k, v in sorted(kwargs.items()):
    if isinstance(v, (core.Tracer,)) or (hasattr(v, "shape") and not isinstance(
        v, (np.ndarray, np.generic))):
      raise TypeError(f"ffi_call attribute {k} must be static (a Python or NumPy value), "
                      f"got {type(v).__name__}")
    out.append((k, _Attr(np.asarray(v) if isinstance(v, (list, tuple)) else v)))
  return tuple(out)


def ffi_call(target_name: str, result_shape_dtypes, *deprecated_args, has_side_effect=False,
             vmap_method: str | None = None, input_layouts=None, output_layouts=None,
             input_output_aliases: dict[int, int] | None = None,
             custom_call_api_version: int = 4, legacy_backend_config: str | None = None,
             vectorized=None, platform: str = "cpu") -> Callable:
  """A function calling the FFI target `target_name` on its array arguments, keyword
  arguments passed as the handler's attributes; results as `result_shape_dtypes` (one
  ShapeDtypeStruct: one array; a sequence: a list)."""
  if deprecated_args:
    raise TypeError("ffi_call takes the arguments of the call in the function it returns: "
                    "ffi_call(target_name, result_shape_dtypes)(*args, **attributes)")
  if vmap_method not in _VMAP_METHODS:
    raise ValueError(f"vmap_method must be on of the allowed methods {list(_VMAP_METHODS)}, "
                     f"but got: {vmap_method}")
  if vectorized is not None and vmap_method is None:
    vmap_method = "legacy_vectorized" if vectorized else "sequential"
  if custom_call_api_version != 4:
    raise ValueError(f"ffi_call: ember calls typed FFI handlers (custom_call_api_version=4)"
                     f", not custom_call_api_version={custom_call_api_version}")
  if legacy_backend_config is not None:
    raise ValueError("The use of the legacy_backend_config parameter requires "
                     f"custom_call_api_version < 4; got {custom_call_api_version}.")
  multiple = isinstance(result_shape_dtypes, Sequence)
  result_avals = _result_avals(result_shape_dtypes if multiple else [result_shape_dtypes])
  site = next(_sites)

  def wrapped(*args, **kwargs):
    in_avals = [core.get_aval(x) for x in args]
    _check_layouts(input_layouts, in_avals, "input")
    _check_layouts(output_layouts if multiple else [output_layouts], result_avals, "output")
    aliases = []
    for i, o in sorted((input_output_aliases or {}).items()):
      if i >= len(args):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with input "
                         f"index {i} outside the range [0, {len(args)}).")
      if o >= len(result_avals):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' with output "
                         f"index {o} outside the range [0, {len(result_avals)}).")
      if (in_avals[i].shape, in_avals[i].dtype) != (result_avals[o].shape,
                                                    result_avals[o].dtype):
        raise ValueError(f"input_output_aliases contains the mapping '{i}:{o}' referring to "
                         f"an input with abstract value {in_avals[i]} and an output with a "
                         f"different abstract value {result_avals[o]}.")
      aliases.append((i, o))
    outs = ffi_call_p.bind(*args, target_name=target_name, platform=platform.lower(),
                           site=site, attributes=_attributes(kwargs),
                           result_avals=result_avals, has_side_effect=bool(has_side_effect),
                           vmap_method=vmap_method, input_output_aliases=tuple(aliases))
    if multiple:
      return type(result_shape_dtypes)(outs) if isinstance(result_shape_dtypes, tuple) \
          else list(outs)
    return outs[0]
  return wrapped


def build_ffi_lowering_function(call_target_name: str, *, operand_layouts=None,
                                result_layouts=None, backend_config=None,
                                skip_ffi_layout_processing: bool = False,
                                **lowering_args: Any) -> Callable:
  """A lowering rule (for ember.interpreters.mlir.register_lowering) that calls the FFI
  target with the primitive's operands, its params as the handler's attributes. It returns
  the list of results (JAX's returns the custom call operation, whose results these are)."""
  del skip_ffi_layout_processing
  has_side_effect = bool(lowering_args.pop("has_side_effect", False))
  if backend_config not in (None, {}):
    if not isinstance(backend_config, dict):
      raise ValueError("ffi_lowering: backend_config must be a dict of attributes for the "
                       "typed FFI")
  site = next(_sites)

  def rule(ctx, *operands, **params):
    # registered with mlir.register_lowering, the rule gets the context JAX's rules get:
    # ember's own is behind it, and the call back into the host is what the rule emits
    ectx = getattr(ctx, "ember_context", ctx)
    if ectx is not ctx:
      ctx.called_back = True
    avals_in, avals_out = list(ctx.avals_in), list(ctx.avals_out)
    _check_layouts(operand_layouts, avals_in, "input")
    _check_layouts(result_layouts, avals_out, "output")
    attrs = dict(backend_config or {}, **params)
    fn = _run(call_target_name, "cpu", site, _attributes(attrs), avals_out, ())
    return emit_host_call(ectx, fn, list(operands), avals_out, has_side_effect)
  return rule


def ffi_lowering(call_target_name: str, *, operand_layouts=None, result_layouts=None,
                 backend_config=None, skip_ffi_layout_processing: bool = False,
                 **lowering_args: Any) -> Callable:
  """A lowering rule calling the FFI target (see build_ffi_lowering_function): the list
  of its results, as JAX's rule returns them."""
  build = build_ffi_lowering_function(
      call_target_name, operand_layouts=operand_layouts, result_layouts=result_layouts,
      backend_config=backend_config, skip_ffi_layout_processing=skip_ffi_layout_processing,
      **lowering_args)

  def rule(ctx, *operands, **params):
    return list(build(ctx, *operands, **params))
  return rule


__all__ = ["build_ffi_lowering_function", "ffi_call", "ffi_lowering", "include_dir",
           "pycapsule", "register_ffi_target", "register_ffi_target_as_batch_partitionable",
           "register_ffi_type", "register_ffi_type_id"]

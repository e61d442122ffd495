"""XLA's FFI C API (xla/ffi/api/c_api.h, API version 0.5), served from Python with ctypes, so
that a handler compiled for JAX's `jax.ffi` (a `XLA_FFI_Handler*`: C, or C++ with ffi.h's
`Ffi::Bind()`) runs on ember unchanged.

`call_handler` builds an `XLA_FFI_CallFrame` (buffers of the arguments and results,
attributes sorted by name as XLA sorts them) and calls the handler. The `XLA_FFI_Api` table
the frame points to implements: errors (create, details, destroy), handler and type
registration, per-call-site state (`State_Set/Get`, for instantiate-stage state), host
memory allocation, futures (a handler may complete asynchronously: the call waits), the run
id and device ordinal. What a CPU host has no counterpart for answers with an error the
handler can report: streams (GPU), the intra-op thread pool, user data in the execution
context, invoke-context extensions and custom options.
"""
from __future__ import annotations

import ctypes
import itertools
import threading
from ctypes import POINTER, Structure, c_char_p, c_int, c_int32, c_int64, c_size_t, c_uint32
from ctypes import c_void_p

import numpy as np

API_MAJOR, API_MINOR = 0, 5
EXTENSION_METADATA = 1
STAGES = ("instantiate", "prepare", "initialize", "execute")
ARG_BUFFER = RET_BUFFER = 1
ATTR_ARRAY, ATTR_DICTIONARY, ATTR_SCALAR, ATTR_STRING = 1, 2, 3, 4
ERR_INVALID_ARGUMENT, ERR_NOT_FOUND, ERR_ALREADY_EXISTS = 3, 5, 6
ERR_UNIMPLEMENTED, ERR_INTERNAL = 12, 13

# XLA_FFI_DataType of NumPy dtypes (by name; ml_dtypes' names for the narrow floats)
DATA_TYPES = {
  "bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6, "uint16": 7,
  "uint32": 8, "uint64": 9, "float16": 10, "float32": 11, "float64": 12, "complex64": 15,
  "bfloat16": 16, "complex128": 18, "float8_e5m2": 19, "float8_e4m3fn": 20, "int4": 21,
  "uint4": 22, "float8_e4m3b11fnuz": 23, "float8_e5m2fnuz": 24, "float8_e4m3fnuz": 25,
  "int2": 26, "uint2": 27, "float8_e4m3": 28, "float8_e3m4": 29, "float4_e2m1fn": 32,
  "float8_e8m0fnu": 33,
}


def _size_to(struct, last: str) -> int:
  """XLA_FFI_STRUCT_SIZE: the struct's size up to and including its `last` field."""
  field = getattr(struct, last)
  return field.offset + field.size


class ByteSpan(Structure):
  _fields_ = [("ptr", c_void_p), ("len", c_size_t)]


class Buffer(Structure):
  _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("dtype", c_int),
              ("data", c_void_p), ("rank", c_int64), ("dims", POINTER(c_int64))]


class _List(Structure):   # XLA_FFI_Args and XLA_FFI_Rets
  _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("size", c_int64),
              ("types", POINTER(c_int)), ("items", POINTER(c_void_p))]


class Attrs(Structure):
  _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("size", c_int64),
              ("types", POINTER(c_int)), ("names", POINTER(POINTER(ByteSpan))),
              ("attrs", POINTER(c_void_p))]


class Scalar(Structure):
  _fields_ = [("dtype", c_int), ("value", c_void_p)]


class Array(Structure):
  _fields_ = [("dtype", c_int), ("size", c_size_t), ("data", c_void_p)]


class ApiVersion(Structure):
  _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p),
              ("major_version", c_int), ("minor_version", c_int)]


class TypeId(Structure):
  _fields_ = [("type_id", c_int64)]


class InternalExtension(Structure):
  _fields_ = [("struct_size", c_size_t), ("type", c_int), ("next", c_void_p)]


class Metadata(Structure):
  _fields_ = [("struct_size", c_size_t), ("api_version", ApiVersion), ("traits", c_uint32),
              ("state_type_id", TypeId)]


class MetadataExtension(Structure):
  _fields_ = [("extension_base", InternalExtension), ("metadata", POINTER(Metadata))]


_FN = ctypes.CFUNCTYPE(c_void_p, c_void_p)          # XLA_FFI_Error* f(Args*)
_VOID_FN = ctypes.CFUNCTYPE(None, c_void_p)         # void f(Args*)
HANDLER = ctypes.CFUNCTYPE(c_void_p, c_void_p)      # XLA_FFI_Handler
_API_FUNCTIONS = ("Error_Create", "Error_GetDetails", "Error_Destroy", "Handler_Register",
                  "Stream_Get", "Type_Register", "InvokeContext_Get", "State_Set",
                  "State_Get", "DeviceMemory_Allocate", "DeviceMemory_Free",
                  "ThreadPool_Schedule", "ThreadPool_NumThreads", "Future_Create",
                  "Future_SetAvailable", "Future_SetError", "RunId_Get", "DeviceOrdinal_Get",
                  "InvokeContext_FindExtension", "CustomOptions_Get")


class Api(Structure):
  _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p),
              ("api_version", ApiVersion), ("internal_api", c_void_p)] + \
             [(name, c_void_p) for name in _API_FUNCTIONS]


class CallFrame(Structure):
  _fields_ = [("struct_size", c_size_t), ("extension_start", c_void_p), ("api", c_void_p),
              ("ctx", c_void_p), ("stage", c_int), ("args", _List), ("rets", _List),
              ("attrs", Attrs), ("future", c_void_p)]


def _args_struct(*fields):
  return type("Args", (Structure,), {"_fields_": [("struct_size", c_size_t),
                                                 ("extension_start", c_void_p), *fields]})


_ErrorCreate = _args_struct(("message", c_char_p), ("errc", c_int))
_ErrorDetails = _args_struct(("error", c_void_p), ("message", c_void_p), ("errc", c_int))
_ErrorDestroy = _args_struct(("error", c_void_p))
_Bundle = [(s, c_void_p) for s in ("instantiate", "prepare", "initialize", "execute", "record")]
_HandlerRegister = _args_struct(("name", ByteSpan), ("platform", ByteSpan),
                                *_Bundle, ("traits", c_uint32))
_TypeRegister = _args_struct(("name", ByteSpan), ("type_id", POINTER(TypeId)),
                             ("type_info", c_void_p))
_State = _args_struct(("ctx", c_void_p), ("stage", c_int), ("type_id", POINTER(TypeId)),
                      ("state", c_void_p))
_Allocate = _args_struct(("ctx", c_void_p), ("size", c_size_t), ("alignment", c_size_t),
                         ("data", c_void_p))
_Free = _args_struct(("ctx", c_void_p), ("size", c_size_t), ("data", c_void_p))
_Future = _args_struct(("future", c_void_p))
_FutureError = _args_struct(("future", c_void_p), ("error", c_void_p))
_RunId = _args_struct(("ctx", c_void_p), ("run_id", c_int64))
_Ordinal = _args_struct(("ctx", c_void_p), ("device_ordinal", c_int32))


class FfiError(RuntimeError):
  """An error a handler returned: its XLA_FFI_Error_Code and message."""
  def __init__(self, code: int, message: str):
    super().__init__(message)
    self.code = code


# ------------------------------------------------------------------------------------
# The runtime's state: errors, registered handlers and types, call sites' state, futures
# ------------------------------------------------------------------------------------

_lock = threading.Lock()
_errors: dict = {}        # address -> (code, message buffer)
_handlers: dict = {}      # (name, platform) -> {stage: address}, "traits": int
_type_ids: dict = {}      # name -> id
_next_type_id = itertools.count(1)
_states: dict = {}        # (ctx address, type id) -> state pointer
_state_deleters: dict = {}  # type id -> deleter address (XLA_FFI_TypeInfo)
_allocations: dict = {}   # address -> buffer
_futures: dict = {}       # address -> [threading.Event, error or None]
_run_ids = itertools.count()


def _new_error(code: int, message: str) -> int:
  buf = ctypes.create_string_buffer(message.encode("utf-8", "replace"))
  addr = ctypes.addressof(buf)
  with _lock:
    _errors[addr] = (code, buf)
  return addr


def _struct(ptr, cls):
  return ctypes.cast(ptr, POINTER(cls)).contents


def _error_create(p):
  a = _struct(p, _ErrorCreate)
  return _new_error(a.errc, (a.message or b"").decode("utf-8", "replace"))


def _error_details(p):
  a = _struct(p, _ErrorDetails)
  code, buf = _errors.get(a.error, (ERR_INTERNAL, None))
  a.errc = code
  a.message = ctypes.addressof(buf) if buf is not None else None


def _error_destroy(p):
  with _lock:
    _errors.pop(_struct(p, _ErrorDestroy).error, None)


def _span(s: ByteSpan) -> str:
  return ctypes.string_at(s.ptr, s.len).decode("utf-8")


def _handler_register(p):
  a = _struct(p, _HandlerRegister)
  bundle = {s: getattr(a, s) for s in STAGES if getattr(a, s)}
  if "execute" not in bundle:
    return _new_error(ERR_INVALID_ARGUMENT, "an FFI handler bundle needs an execute handler")
  register_handler(_span(a.name), bundle, _span(a.platform).lower(), a.traits)
  return None


def _type_register(p):
  a = _struct(p, _TypeRegister)
  name = _span(a.name)
  try:
    register_type(name, a.type_id.contents, a.type_info)
  except ValueError as e:
    return _new_error(ERR_ALREADY_EXISTS, str(e))
  return None


def _state_set(p):
  a = _struct(p, _State)
  key = (a.ctx, a.type_id.contents.type_id)
  with _lock:
    if key in _states:
      return _new_error(ERR_ALREADY_EXISTS, "FFI state is already set for this call site")
    _states[key] = a.state
  return None


def _state_get(p):
  a = _struct(p, _State)
  state = _states.get((a.ctx, a.type_id.contents.type_id))
  if state is None:
    return _new_error(ERR_NOT_FOUND, "no FFI state of this type for this call site")
  a.state = state
  return None


def _allocate(p):
  a = _struct(p, _Allocate)
  align = max(int(a.alignment), 1)
  raw = ctypes.create_string_buffer(int(a.size) + align)
  addr = ctypes.addressof(raw)
  aligned = (addr + align - 1) // align * align
  with _lock:
    _allocations[aligned] = raw
  a.data = aligned
  return None


def _free(p):
  with _lock:
    _allocations.pop(_struct(p, _Free).data, None)
  return None


def _future_create(p):
  a = _struct(p, _Future)
  token = ctypes.create_string_buffer(1)
  addr = ctypes.addressof(token)
  with _lock:
    _futures[addr] = [threading.Event(), None, token]
  a.future = addr
  return None


def _future_set(p, error=None):
  entry = _futures.get(_struct(p, _Future).future)
  if entry is None:
    return _new_error(ERR_INVALID_ARGUMENT, "unknown XLA_FFI_Future")
  entry[1] = error
  entry[0].set()
  return None


def _future_set_error(p):
  a = _struct(p, _FutureError)
  return _future_set(p, a.error)


def _run_id(p):
  _struct(p, _RunId).run_id = next(_run_ids)
  return None


def _device_ordinal(p):
  _struct(p, _Ordinal).device_ordinal = 0
  return None


def _unavailable(what: str):
  def fn(p):
    return _new_error(ERR_UNIMPLEMENTED, f"ember's FFI runtime (CPU) has no {what}")
  return fn


_IMPLS = {
  "Error_Create": _error_create, "Error_GetDetails": _error_details,
  "Error_Destroy": _error_destroy, "Handler_Register": _handler_register,
  "Stream_Get": _unavailable("device stream (streams are a GPU notion)"),
  "Type_Register": _type_register,
  "InvokeContext_Get": _unavailable("user data in the execution context"),
  "State_Set": _state_set, "State_Get": _state_get, "DeviceMemory_Allocate": _allocate,
  "DeviceMemory_Free": _free,
  "ThreadPool_Schedule": _unavailable("intra-op thread pool for FFI handlers"),
  "ThreadPool_NumThreads": _unavailable("intra-op thread pool for FFI handlers"),
  "Future_Create": _future_create, "Future_SetAvailable": _future_set,
  "Future_SetError": _future_set_error, "RunId_Get": _run_id,
  "DeviceOrdinal_Get": _device_ordinal,
  "InvokeContext_FindExtension": _unavailable("invoke-context extensions"),
  "CustomOptions_Get": _unavailable("custom options"),
}
_VOID = ("Error_GetDetails", "Error_Destroy")
_callbacks = {name: (_VOID_FN if name in _VOID else _FN)(fn) for name, fn in _IMPLS.items()}
API = Api()
API.struct_size = _size_to(Api, "CustomOptions_Get")
API.api_version.struct_size = _size_to(ApiVersion, "minor_version")
API.api_version.major_version, API.api_version.minor_version = API_MAJOR, API_MINOR
for _name, _cb in _callbacks.items():
  setattr(API, _name, ctypes.cast(_cb, c_void_p).value)


def api_address() -> int:
  """The address of the XLA_FFI_Api table (what XLA_FFI_GetApi() returns in XLA)."""
  return ctypes.addressof(API)


# ------------------------------------------------------------------------------------
# Registration
# ------------------------------------------------------------------------------------

def register_handler(name: str, bundle: dict, platform: str, traits: int = 0) -> None:
  """Register the handlers of `name` (stage -> function address), after asking the
  execute handler for its metadata (the API version it was built for), as XLA does."""
  version = query_api_version(bundle["execute"])
  if version is not None and version[0] != API_MAJOR:
    raise ValueError(f"FFI handler {name!r} was built for XLA FFI API version "
                     f"{version[0]}.{version[1]}; ember serves {API_MAJOR}.{API_MINOR}")
  with _lock:
    _handlers[(name, platform)] = dict(bundle, traits=traits)


def handler_bundle(name: str, platform: str) -> dict | None:
  return _handlers.get((name, platform))


def register_type(name: str, type_id: TypeId, type_info_address=None) -> int:
  """Give `name` a type id (kept if the handler's library set one), written to type_id."""
  with _lock:
    if name in _type_ids:
      if type_id.type_id in (0, _type_ids[name]):
        type_id.type_id = _type_ids[name]
        return type_id.type_id
      raise ValueError(f"FFI type {name!r} is already registered with another type id")
    if type_id.type_id == 0:
      type_id.type_id = next(_next_type_id) + (1 << 32)   # clear of ids libraries pick
    _type_ids[name] = type_id.type_id
    if type_info_address:
      deleter = ctypes.cast(type_info_address, POINTER(ctypes.c_size_t * 3)).contents[2]
      _state_deleters[type_id.type_id] = deleter
  return type_id.type_id


def query_api_version(handler_address: int) -> tuple | None:
  """(major, minor) a handler reports through the metadata extension; None when it does
  not answer (a handler not built with ffi.h's binding may not)."""
  meta = Metadata()
  meta.struct_size = _size_to(Metadata, "traits")
  meta.api_version.struct_size = _size_to(ApiVersion, "minor_version")
  ext = MetadataExtension()
  ext.extension_base.struct_size = _size_to(MetadataExtension, "metadata")
  ext.extension_base.type = EXTENSION_METADATA
  ext.metadata = ctypes.pointer(meta)
  frame = _empty_frame()
  frame.extension_start = ctypes.addressof(ext)
  frame.stage = STAGES.index("execute")
  err = HANDLER(handler_address)(ctypes.addressof(frame))
  if err:
    _take_error(err)   # not a metadata-aware handler: no version to check
    return None
  if meta.api_version.major_version == 0 and meta.api_version.minor_version == 0:
    return None
  return meta.api_version.major_version, meta.api_version.minor_version


# ------------------------------------------------------------------------------------
# Calling a handler
# ------------------------------------------------------------------------------------

def _empty_frame() -> CallFrame:
  frame = CallFrame()
  frame.struct_size = _size_to(CallFrame, "attrs")
  frame.api = api_address()
  for part, last in (("args", "items"), ("rets", "items"), ("attrs", "attrs")):
    getattr(frame, part).struct_size = _size_to(type(getattr(frame, part)), last)
  return frame


def _take_error(addr: int) -> FfiError:
  with _lock:
    code, buf = _errors.pop(addr, (ERR_INTERNAL, None))
  return FfiError(code, buf.value.decode("utf-8", "replace") if buf is not None
                  else "FFI handler failed with an unknown error")


def _buffer(array: np.ndarray, keep: list) -> int:
  dt = DATA_TYPES.get(array.dtype.name)
  if dt is None:
    raise TypeError(f"FFI buffers cannot hold {array.dtype}")
  dims = (c_int64 * max(array.ndim, 1))(*array.shape)
  b = Buffer(_size_to(Buffer, "dims"), None, dt, array.ctypes.data, array.ndim, dims)
  keep += [dims, b]
  return ctypes.addressof(b)


def _list(struct: _List, addresses: list, type_code: int, keep: list) -> None:
  types = (c_int * max(len(addresses), 1))(*([type_code] * len(addresses)))
  items = (c_void_p * max(len(addresses), 1))(*addresses)
  keep += [types, items]
  struct.size, struct.types, struct.items = len(addresses), types, items


def encode_attrs(attrs: dict, keep: list) -> Attrs:
  """XLA_FFI_Attrs of `attrs`, sorted by name (XLA's order, which ffi.h's decoding uses):
  scalars (NumPy scalars, Python bool/int/float as PRED/S64/F32, as JAX lowers them), 1-D
  arrays, strings and dictionaries of these."""
  out = Attrs()
  out.struct_size = _size_to(Attrs, "attrs")
  names = sorted(attrs)
  n = max(len(names), 1)
  types, spans, values = (c_int * n)(), (POINTER(ByteSpan) * n)(), (c_void_p * n)()
  for i, name in enumerate(names):
    types[i], values[i] = _encode_attr(name, attrs[name], keep)
    raw = name.encode("utf-8")
    span = ByteSpan(ctypes.cast(ctypes.c_char_p(raw), c_void_p), len(raw))
    keep += [raw, span]
    spans[i] = ctypes.pointer(span)
  keep += [types, spans, values]
  out.size, out.types, out.names, out.attrs = len(names), types, spans, values
  return out


def _attr_array(value) -> np.ndarray:
  if isinstance(value, (np.generic, np.ndarray)):   # NumPy values keep their dtype
    return np.array(value)
  if isinstance(value, bool):
    return np.asarray(value, np.bool_)
  if isinstance(value, int):
    return np.asarray(value, np.int64)
  if isinstance(value, float):
    return np.asarray(value, np.float32)
  return np.array(value)   # a contiguous copy (ascontiguousarray would make a scalar 1-D)


def _encode_attr(name: str, value, keep: list) -> tuple:
  if isinstance(value, str):
    raw = value.encode("utf-8")
    span = ByteSpan(ctypes.cast(ctypes.c_char_p(raw), c_void_p), len(raw))
    keep += [raw, span]
    return ATTR_STRING, ctypes.addressof(span)
  if isinstance(value, dict):
    d = encode_attrs(value, keep)
    keep.append(d)
    return ATTR_DICTIONARY, ctypes.addressof(d)
  arr = _attr_array(value)
  dt = DATA_TYPES.get(arr.dtype.name)
  if dt is None or arr.ndim > 1:
    raise TypeError(f"FFI attribute {name!r}: unsupported value {value!r} (scalars, 1-D "
                    "arrays, strings and dicts of these are supported)")
  keep.append(arr)
  if arr.ndim == 0:
    s = Scalar(dt, arr.ctypes.data)
    keep.append(s)
    return ATTR_SCALAR, ctypes.addressof(s)
  a = Array(dt, arr.size, arr.ctypes.data)
  keep.append(a)
  return ATTR_ARRAY, ctypes.addressof(a)


def call_handler(bundle: dict, site: int, args: list, results: list, attrs: dict) -> None:
  """Run the handlers of `bundle` on NumPy `args`, writing into the NumPy `results`:
  instantiate once per call site `site` (its state lives with the site), then prepare,
  initialize and execute. Raises FfiError with the handler's message."""
  keep: list = []
  frame = _empty_frame()
  frame.ctx = site
  _list(frame.args, [_buffer(a, keep) for a in args], ARG_BUFFER, keep)
  _list(frame.rets, [_buffer(r, keep) for r in results], RET_BUFFER, keep)
  frame.attrs = encode_attrs(attrs, keep)
  stages = [s for s in STAGES if s in bundle and (s != "instantiate" or
                                                  (site, "instantiated") not in _states)]
  for stage in stages:
    frame.stage, frame.future = STAGES.index(stage), None
    err = HANDLER(bundle[stage])(ctypes.addressof(frame))
    if err:
      raise _take_error(err)
    if frame.future:
      _wait(frame.future)
    if stage == "instantiate":
      _states[(site, "instantiated")] = True


def _wait(future: int) -> None:
  entry = _futures.get(future)
  if entry is None:
    raise FfiError(ERR_INTERNAL, "FFI handler returned an unknown XLA_FFI_Future")
  entry[0].wait()
  with _lock:
    _futures.pop(future, None)
  if entry[1]:
    raise _take_error(entry[1])

"""The array API standard's namespace pieces of ember.numpy: `__array_api_version__`,
`__array_namespace_info__()`, `from_dlpack`, and `Array.__array_namespace__` (JAX 0.12's).

ember/numpy/__init__.py registers the public module as the namespace arrays hand out
(`register_namespace`): _src never imports the public package.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base.config import x64_enabled
from ember._src.library.numpy import creation
from ember._src.core.array import Array, devices

__all__ = ["__array_api_version__", "__array_namespace_info__", "from_dlpack"]

__array_api_version__ = "2025.12"   # JAX 0.12's

_namespace: list = []


def register_namespace(module) -> None:
  """ember/numpy/__init__.py hands in itself: what `x.__array_namespace__()` returns."""
  _namespace[:] = [module]


def _array_namespace(self, *, api_version: str | None = None):
  if api_version is not None and api_version != __array_api_version__:
    raise ValueError(f"api_version={api_version!r} is not available; available versions "
                     f"are: {[__array_api_version__]}")
  return _namespace[0]


for _cls in (Array, core.Tracer):
  _cls.__array_namespace__ = _array_namespace


def from_dlpack(x, /, *, device=None, copy: bool | None = None):
  """An ember array from a DLPack-exporting object (CPU tensors, through NumPy's
  np.from_dlpack): ember arrays are immutable, so the data is copied in."""
  # NumPy < 2.1's from_dlpack takes no keywords
  host = np.from_dlpack(x) if copy is None else np.from_dlpack(x, copy=copy)
  out = creation.array(host)
  return out if device is None else out.to_device(device)


_KINDS = {
    "bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
    "real floating": "f", "complex floating": "c", "numeric": "iufc"}
_API_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float32", "float64", "complex64", "complex128"]
_X64_ONLY = {"int64", "uint64", "float64", "complex128"}


class ArrayNamespaceInfo:
  """What `__array_namespace_info__()` returns: the library's capabilities, devices and
  dtypes (64-bit types only under enable_x64, as JAX)."""

  def capabilities(self) -> dict:
    return {"boolean indexing": False, "data-dependent shapes": False,
            "max dimensions": 64}

  def default_device(self):
    return None

  def devices(self) -> tuple:
    return (None, *devices())

  def _check_device(self, device):
    if device is not None and device not in devices():
      raise ValueError(f"Unknown device {device!r}; ember's devices are {devices()}.")

  def default_dtypes(self, *, device=None) -> dict:
    self._check_device(device)
    x64 = x64_enabled()
    f, c, i = ((np.float64, np.complex128, np.int64) if x64 else
               (np.float32, np.complex64, np.int32))
    return {"real floating": np.dtype(f), "complex floating": np.dtype(c),
            "integral": np.dtype(i), "indexing": np.dtype(i)}

  def dtypes(self, *, device=None, kind=None) -> dict:
    self._check_device(device)
    x64 = x64_enabled()
    have = {n: np.dtype(n) for n in _API_DTYPES if x64 or n not in _X64_ONLY}
    if kind is None:
      return have
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    for k in kinds:
      if k not in _KINDS:
        raise ValueError(f"Unrecognized data type kind: {k!r}; expected one of "
                         f"{sorted(_KINDS)}.")
    letters = "".join(_KINDS[k] for k in kinds)
    return {n: d for n, d in have.items() if d.kind in letters}


def __array_namespace_info__() -> ArrayNamespaceInfo:
  return ArrayNamespaceInfo()

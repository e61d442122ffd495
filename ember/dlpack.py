"""ember.dlpack (jax.dlpack): arrays from DLPack-exporting objects."""
import ml_dtypes as _ml_dtypes
import numpy as _np

from ember._src.library.numpy.array_api import from_dlpack  # noqa: F401

# the dtypes DLPack exchanges (JAX's list)
SUPPORTED_DTYPES = tuple(_np.dtype(t) for t in (
    _np.int8, _np.int16, _np.int32, _np.int64, _np.uint8, _np.uint16, _np.uint32, _np.uint64,
    _np.float16, _ml_dtypes.bfloat16, _np.float32, _np.float64, _np.complex64,
    _np.complex128, _np.bool_))
_SUPPORTED = frozenset(SUPPORTED_DTYPES)


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of `dtype` pass through DLPack."""
  if dtype is None:   # (NumPy would read None as float64)
    raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
  return _np.dtype(dtype) in _SUPPORTED

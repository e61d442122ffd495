"""The semantics of XLA's `fft` op in NumPy (pocketfft): the primitive's impl, hlo_eval's
`fft` and the CPU backend's fft thunk (backends/cpu/fft_thunks.py) all run `fft` here.

The transform runs over the trailing len(fft_length) dimensions. NumPy (>= 2.0) computes
complex64/float32 transforms in single precision, so a complex64 result is what a
float32 FFT library gives (within f32 tolerance of a float64 reference), as XLA's.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")


def complex_dtype(dt) -> np.dtype:
  """complex128 for 64-bit floats, else complex64 (float16/bfloat16 included)."""
  wide = np.dtype(dt) in (np.dtype(np.float64), np.dtype(np.complex128))
  return np.dtype(np.complex128 if wide else np.complex64)


def real_dtype(dt) -> np.dtype:
  return np.empty(0, dt).real.dtype


def out_shape(shape: Sequence[int], fft_type: str, fft_length: Sequence[int]) -> tuple:
  """The result's shape: RFFT keeps n // 2 + 1 entries of the last axis, IRFFT restores
  fft_length's; FFT and IFFT keep the shape."""
  shape, k = tuple(shape), len(fft_length)
  if fft_type == "RFFT":
    return shape[:-1] + (fft_length[-1] // 2 + 1,)
  if fft_type == "IRFFT":
    return shape[:len(shape) - k] + tuple(fft_length)
  return shape


def out_dtype(dt, fft_type: str) -> np.dtype:
  return real_dtype(dt) if fft_type == "IRFFT" else complex_dtype(dt)


def fft(x: np.ndarray, fft_type: str, fft_length: Sequence[int]) -> np.ndarray:
  """XLA's fft of `x` (fft_type one of FFT_TYPES): IFFT and IRFFT divide by the
  product of the lengths (NumPy's 'backward' norm); IRFFT reads the first
  fft_length[-1] // 2 + 1 entries of the last axis, as NumPy's irfftn."""
  fft_length = tuple(int(n) for n in fft_length)
  shape, dt = out_shape(x.shape, fft_type, fft_length), out_dtype(x.dtype, fft_type)
  if not fft_length:
    return np.asarray(x, dt)
  if 0 in shape or 0 in x.shape:   # pocketfft rejects zero lengths; XLA gives zeros
    return np.zeros(shape, dt)
  axes = tuple(range(x.ndim - len(fft_length), x.ndim))
  if fft_type == "FFT":
    out = np.fft.fftn(x, axes=axes)
  elif fft_type == "IFFT":
    out = np.fft.ifftn(x, axes=axes)
  elif fft_type == "RFFT":
    out = np.fft.rfftn(x, axes=axes)
  elif fft_type == "IRFFT":
    out = np.fft.irfftn(x, s=fft_length, axes=axes)
  else:
    raise ValueError(f"fft: unknown fft_type {fft_type!r}; expected one of {FFT_TYPES}")
  return np.asarray(out).astype(dt, copy=False)

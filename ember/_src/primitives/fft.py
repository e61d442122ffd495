"""The fast Fourier transform (jax.lax.fft): one primitive, `fft`, with XLA's four
transform types over the trailing len(fft_lengths) dimensions (at most 3, as XLA).

It lowers to HLO's `fft` op (`fft_type=RFFT, fft_length={8}`; `stablehlo.fft` in
Lowered.as_text()); hlo_eval and the CPU backend's fft thunk run reference/fft.py's NumPy
pocketfft transform in the operand's precision. The transform is linear: its jvp applies
it to the tangent, and its transposes are JAX's (FFT and IFFT are their own transposes
since the DFT matrix is symmetric; RFFT and IRFFT transpose to each other, weighting the
bins that stand for two conjugate frequencies by 2).
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.core import ShapedArray
from ember._src.primitives import declare
from ember._src.primitives.elementwise import conj, convert_element_type, mul
from ember._src.reference import fft as reference_fft
from ember._src.transforms import ad, batching

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
  """Which transform `fft` computes (JAX's enum; jaxprs print its value)."""
  FFT = 0      # complex -> complex, forward
  IFFT = 1     # complex -> complex, inverse (divides by the product of the lengths)
  RFFT = 2     # real -> complex half-spectrum (last axis n // 2 + 1)
  IRFFT = 3    # complex half-spectrum -> real


_BY_NAME = {t.name: t for t in FftType}


def _fft_type(fft_type) -> FftType:
  if isinstance(fft_type, str):
    if fft_type.upper() not in _BY_NAME:
      raise ValueError(f"Unknown FFT type '{fft_type}'; expected one of "
                       f"{', '.join(_BY_NAME)} (or their lower-case names).")
    return _BY_NAME[fft_type.upper()]
  if isinstance(fft_type, FftType):
    return fft_type
  raise TypeError(f"Unknown FFT type value '{fft_type}'; pass a lax.FftType or one of "
                  f"{', '.join(_BY_NAME)}.")


def _fft_abstract_eval(x, *, fft_type, fft_lengths):
  k = len(fft_lengths)
  if not 1 <= k <= 3:
    raise ValueError(f"fft: fft_lengths must name 1, 2 or 3 trailing dimensions (XLA's "
                     f"limit), got fft_lengths={fft_lengths}; split a larger transform "
                     "into several calls.")
  if k > x.ndim:
    raise ValueError(f"FFT input shape {x.shape} must have at least as many input "
                     f"dimensions as fft_lengths {fft_lengths}.")
  dt, name = np.dtype(x.dtype), fft_type.name
  minor = x.shape[-k:]
  if fft_type == FftType.RFFT:
    if dt not in (np.float32, np.float64):
      raise ValueError(f"RFFT input must be float32 or float64, got {dt.name}")
    ok = minor == fft_lengths
  else:
    if dt.kind != "c":
      raise ValueError(f"{name} input must be complex64 or complex128, got {dt.name}")
    ok = minor[:-1] == fft_lengths[:-1] if fft_type == FftType.IRFFT else minor == fft_lengths
  if not ok:
    which = "all except the last fft_length" if fft_type == FftType.IRFFT else "fft_lengths"
    raise ValueError(f"{name} input shape {x.shape} minor dimensions must be equal to "
                     f"{which}, got fft_lengths={fft_lengths}")
  return ShapedArray(reference_fft.out_shape(x.shape, name, fft_lengths),
                     reference_fft.out_dtype(dt, name))


def _fft_impl(x, *, fft_type, fft_lengths):
  return reference_fft.fft(x, fft_type.name, fft_lengths)


fft_p = declare("fft", _fft_abstract_eval, _fft_impl)
fft_p.batch = batching.all_at_front(fft_p)   # it transforms trailing dimensions only
fft_p.lower = lambda ctx, x, *, fft_type, fft_lengths: ctx.emit(
    "fft", ctx.out_shape(), [x], {"fft_type": fft_type.name, "fft_length": fft_lengths})


def _bin_weights(fft_lengths, ndim: int, dtype) -> np.ndarray:
  """Per half-spectrum bin of the last axis: 1 for DC (and Nyquist when the length is
  even), 2 for the bins that stand for a frequency and its conjugate; shaped to broadcast
  against an array of rank `ndim`."""
  n = fft_lengths[-1]
  w = np.full(n // 2 + 1, 2.0)
  w[0] = 1.0
  if n % 2 == 0:
    w[-1] = 1.0
  return w.astype(dtype).reshape((1,) * (ndim - 1) + (-1,))


def _rfft_transpose(ct, fft_lengths):
  # ct: complex half-spectrum -> real signal: N * irfft(conj(ct) / w)
  inv_w = 1.0 / _bin_weights(fft_lengths, ct.ndim, core.get_aval(ct).dtype)
  scaled = mul(conj(ct), np.broadcast_to(inv_w, ct.shape))
  out = fft_p.bind(scaled, fft_type=FftType.IRFFT, fft_lengths=fft_lengths)
  n = np.asarray(math.prod(fft_lengths), core.get_aval(out).dtype)
  return mul(out, np.broadcast_to(n, out.shape))


def _irfft_transpose(ct, fft_lengths):
  # ct: real signal -> complex half-spectrum: conj(w * rfft(ct) / N)
  x = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
  w = _bin_weights(fft_lengths, x.ndim, core.get_aval(x).dtype) / math.prod(fft_lengths)
  return conj(mul(x, np.broadcast_to(w, x.shape)))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


ad.deflinear2(fft_p, _fft_transpose)


def fft(x, fft_type, fft_lengths):
  """lax.fft: the `fft_type` transform over x's trailing len(fft_lengths) dimensions
  (RFFT converts x to its inexact dtype, the others to its complex dtype)."""
  typ = _fft_type(fft_type)
  lengths = tuple(operator.index(n) for n in fft_lengths)
  dt = np.dtype(core.get_aval(x).dtype)
  real = dt if dt.kind == "f" else dtypes.default_float_dtype()   # ints: the default float
  if typ == FftType.RFFT:
    if dt.kind == "c":
      raise ValueError("only real valued inputs supported for rfft")
    target = real           # float16 stays float16, which fft_p rejects (as JAX)
  else:
    target = dt if dt.kind == "c" else reference_fft.complex_dtype(real)
  if dt != target:
    x = convert_element_type(x, target)
  if not lengths:
    return x
  return fft_p.bind(x, fft_type=typ, fft_lengths=lengths)


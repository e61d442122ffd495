"""jax.numpy.fft: NumPy's FFT API on ember arrays, built on lax.fft (the `fft` primitive,
at most 3 trailing dimensions per call; larger transforms are split into calls).

Each n-dimensional transform moves its axes to the end, crops or zero-pads them to `s`,
transforms, scales per `norm` and moves the axes back, as JAX does. `norm` is NumPy's:
'backward' (default: the inverse divides by n), 'ortho' (both by sqrt(n)), 'forward'.
"""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, ufuncs, util
from ember._src.library.numpy import shape as shape_ops
from ember._src.primitives.fft import FftType

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
           "irfft2", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq", "rfftfreq", "fftshift",
           "ifftshift"]

_NORMS = ("backward", "ortho", "forward")


def _norm_scale(s: Sequence[int], func_name: str, norm: str | None) -> float | None:
  """The factor the result is multiplied by (None: none); inverse transforms (names
  starting with 'i') scale the other way."""
  if norm is not None and norm not in _NORMS:
    raise ValueError(f'Invalid norm value {norm}; should be "backward","ortho" or "forward".')
  if norm is None or norm == "backward":
    return None
  n = float(math.prod(s))
  factor = math.sqrt(n) if norm == "ortho" else n
  return factor if func_name.startswith("i") else 1.0 / factor


def _resize(x, axes, sizes):
  """x cropped or zero-padded at the end of each axis to its size."""
  for ax, n in zip(axes, sizes):
    have = x.shape[ax]
    if n < have:
      x = lax.slice_in_dim(x, 0, n, axis=ax)
    elif n > have:
      cfg = [(0, 0, 0)] * x.ndim
      cfg[ax] = (0, n - have, 0)
      x = lax.pad(x, creation.zeros((), x.dtype), cfg)
  return x


def _transform(x, fft_type: FftType, s: tuple):
  """lax.fft over the trailing len(s) axes; beyond 3 axes (XLA's limit), the last 2 or 3
  in one call and the leading ones by complex transforms (real transforms' real axis last
  in, first out)."""
  if len(s) <= 3:
    return lax.fft(x, fft_type, s)
  k = 2 if len(s) == 4 else 3
  lead = tuple(range(x.ndim - len(s), x.ndim - k))
  back = tuple(range(x.ndim - len(s) + k, x.ndim))
  if fft_type in (FftType.FFT, FftType.RFFT):
    x = lax.fft(x, fft_type, s[-k:])
    x = shape_ops.moveaxis(x, lead, back)
    return shape_ops.moveaxis(_transform(x, FftType.FFT, s[:-k]), back, lead)
  x = shape_ops.moveaxis(x, lead, back)
  x = shape_ops.moveaxis(_transform(x, FftType.IFFT, s[:-k]), back, lead)
  return lax.fft(x, fft_type, s[-k:])


def _fftn(func_name: str, fft_type: FftType, a, s, axes, norm):
  """The n-dimensional transform every jnp.fft function runs."""
  full = f"jax.numpy.fft.{func_name}"
  util.check_arraylike(full, a)
  x = creation.asarray(a)
  if s is not None:
    s = tuple(operator.index(n) for n in s)
    if any(n <= 0 for n in s):
      raise ValueError(f"{full}: the output shape s should be positive, got s={s}.")
    if axes is not None and len(s) != len(axes):
      raise ValueError(f"{full}: shape and axes have different lengths: s={s}, "
                       f"axes={tuple(axes)}.")
  given = axes is not None
  if axes is None:
    axes = range(x.ndim) if s is None else range(x.ndim - len(s), x.ndim)
  axes = tuple(util.canonicalize_axis(operator.index(ax), x.ndim, full) for ax in axes)
  if len(set(axes)) != len(axes):
    raise ValueError(f"{full} does not support repeated axes. Got axes {axes}.")
  last = tuple(range(x.ndim - len(axes), x.ndim))
  if given:
    x = shape_ops.moveaxis(x, axes, last)
  if s is None:
    s = tuple(x.shape[ax] for ax in last)
    if fft_type == FftType.IRFFT and s:
      s = s[:-1] + (max(0, 2 * (s[-1] - 1)),)
  else:
    in_sizes = s[:-1] + (s[-1] // 2 + 1,) if fft_type == FftType.IRFFT else s
    x = _resize(x, last, in_sizes)
  out = _transform(x, fft_type, s)
  scale = _norm_scale(s, func_name, norm)
  if scale is not None:
    out = ufuncs.multiply(out, np.asarray(scale, np.finfo(out.dtype).dtype))
  return shape_ops.moveaxis(out, last, axes) if given else out


def _one_axis(func_name, axis):
  if isinstance(axis, (list, tuple)):
    raise ValueError(f"jax.numpy.fft.{func_name} does not support multiple axes. Please use "
                     f"jax.numpy.fft.{func_name}n. Got axis = {axis!r}.")
  return [axis]


def _two_axes(func_name, axes):
  if len(axes) != 2:
    raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
  return axes


def _1d(func_name, fft_type, a, n, axis, norm):
  return _fftn(func_name, fft_type, a, None if n is None else [n],
               _one_axis(func_name, axis), norm)


def fft(a, n=None, axis: int = -1, norm=None):
  """The 1-D discrete Fourier transform along `axis` (cropped/padded to n)."""
  return _1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n=None, axis: int = -1, norm=None):
  """The 1-D inverse discrete Fourier transform along `axis`."""
  return _1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n=None, axis: int = -1, norm=None):
  """The 1-D transform of real input: the n // 2 + 1 non-negative frequencies."""
  return _1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n=None, axis: int = -1, norm=None):
  """The inverse of rfft: n real samples (default 2 * (m - 1)) from m half-spectrum bins."""
  return _1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n=None, axis: int = -1, norm=None):
  """The transform of a signal with Hermitian symmetry given by its half (a real result)."""
  _one_axis("hfft", axis)
  util.check_arraylike("jax.numpy.fft.hfft", a)
  conj_a = ufuncs.conj(creation.asarray(a))
  nn = 2 * (conj_a.shape[axis] - 1) if n is None else n
  return ufuncs.multiply(_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm), nn)


def ihfft(a, n=None, axis: int = -1, norm=None):
  """The inverse of hfft: the half spectrum of a real signal."""
  _one_axis("ihfft", axis)
  util.check_arraylike("jax.numpy.fft.ihfft", a)
  a = creation.asarray(a)
  nn = a.shape[axis] if n is None else n
  out = _1d("ihfft", FftType.RFFT, a, n, axis, norm)
  return ufuncs.multiply(ufuncs.conj(out), 1 / nn)


def fftn(a, s=None, axes=None, norm=None):
  """The n-dimensional transform over `axes` (default: all, or the last len(s))."""
  return _fftn("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s=None, axes=None, norm=None):
  return _fftn("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s=None, axes=None, norm=None):
  return _fftn("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s=None, axes=None, norm=None):
  return _fftn("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a, s=None, axes=(-2, -1), norm=None):
  return _fftn("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None):
  return _fftn("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None):
  return _fftn("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None):
  return _fftn("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def _check_freq_args(func_name, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of jax.numpy.fft.{func_name} only takes an int. "
                     f"Got n = {list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of jax.numpy.fft.{func_name} only takes a single "
                     f"value. Got d = {list(d)}.")


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of fft's bins: [0, 1, ..., n//2 - 1 (or n//2), -n//2, ..., -1]
  / (d n)."""
  _check_freq_args("fftfreq", n, d)
  out_dtype = dtypes.default_float_dtype() if dtype is None else dtype
  dt = util.to_inexact_dtype(dtypes.canonicalize_dtype(out_dtype))
  i = creation.arange(n, dtype=dt)
  k = ufuncs.subtract(ufuncs.remainder(ufuncs.add(i, n // 2), n), n // 2)
  out = ufuncs.divide(k, creation.asarray(d * n, dtype=dt))
  return _placed(out.astype(out_dtype), device)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of rfft's bins: [0, 1, ..., n//2] / (d n)."""
  _check_freq_args("rfftfreq", n, d)
  dt = dtypes.default_float_dtype() if dtype is None else dtype
  k = creation.arange(0, n // 2 + 1, dtype=dt)
  return _placed(ufuncs.divide(k, creation.asarray(d * n, dtype=dt)), device)


def _placed(x, device):
  return x if device is None else x.to_device(device)


def _shifted(func_name, x, axes, sign):
  util.check_arraylike(func_name, x)
  x = creation.asarray(x)
  if axes is None:
    axes = tuple(range(x.ndim))
  half = lambda ax: (x.shape[ax] // 2) if sign > 0 else -(x.shape[ax] // 2)
  shift = half(axes) if isinstance(axes, int) else [half(ax) for ax in axes]
  return shape_ops.roll(x, shift, axes)


def fftshift(x, axes=None):
  """Move the zero-frequency bin to the centre (roll by n // 2 along each axis)."""
  return _shifted("fftshift", x, axes, +1)


def ifftshift(x, axes=None):
  """The inverse of fftshift (roll by -(n // 2))."""
  return _shifted("ifftshift", x, axes, -1)

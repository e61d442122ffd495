"""jax.scipy.fft: the type-2 discrete cosine transform and its inverse (dct, idct, dctn,
idctn) with norm None/'backward' or 'ortho', as JAX 0.12 provides them (other types raise
NotImplementedError, as in JAX). Makhoul's method: the even/odd interleaved input's real FFT
times a quarter-wave twiddle; the inverse undoes each step."""
from __future__ import annotations

import math
import operator

import numpy as np

from ember._src.base import dtypes
from ember._src.library.numpy import util
from ember._src.library.scipy import _jnp as jnp

__all__ = ["dct", "dctn", "idct", "idctn"]


def _check(name, x, type, norm):
  util.check_arraylike(name, x)
  if type != 2:
    raise NotImplementedError("Only DCT type 2 is implemented.")
  if norm is not None and norm not in ("backward", "ortho"):
    raise ValueError(f"jax.scipy.fft.{name}: {norm=!r} is not implemented")
  return jnp.asarray(x)


def _real_float(x):
  if dtypes.issubdtype(x.dtype, np.floating) and x.dtype in (np.float32, np.float64):
    return x
  return x.astype(np.float64 if x.dtype == np.float64 else jnp.result_type(float))


def _resize(x, n, axis: int):
  """x zero-padded or truncated to length n along axis (SciPy's `n`)."""
  if n is None:
    return x
  n = operator.index(n)
  if n < 1:
    raise ValueError(f"invalid number of data points ({n}) specified")
  size = x.shape[axis]
  if n <= size:
    return jnp.take(x, np.arange(n), axis=axis)
  widths = [(0, 0)] * x.ndim
  widths[axis] = (0, n - size)
  return jnp.pad(x, widths)


def _along(v, axis: int, ndim: int):
  return v.reshape(tuple(-1 if i == axis else 1 for i in range(ndim)))


def _twiddle(n: int, k):
  """exp(-i pi k / (2n))."""
  return jnp.exp(-0.5j * np.pi * k / n)


def _ortho_scale(n: int):
  """1/sqrt(4n) for k = 0, 1/sqrt(2n) otherwise: the 'ortho' factors of DCT-II."""
  scale = np.full(n, 1 / math.sqrt(2 * n))
  scale[0] = 1 / math.sqrt(4 * n)
  return scale


def _split_complex(fn, x, **kw):
  return jnp.real(fn(jnp.real(x), **kw)) + 1j * jnp.real(fn(jnp.imag(x), **kw))


def dct(x, type=2, n=None, axis=-1, norm=None):
  """Type-2 DCT along `axis` (scipy.fft.dct): 2 sum_j x_j cos(pi k (2j+1) / 2N)."""
  x = _check("dct", x, type, norm)
  if jnp.iscomplexobj(x):
    return _split_complex(dct, x, n=n, axis=axis, norm=norm)
  axis = util.canonicalize_axis(axis, x.ndim, "dct")
  x = _real_float(_resize(x, n, axis))
  size = x.shape[axis]
  idx = np.concatenate([np.arange(0, size, 2), np.arange(1, size, 2)[::-1]])
  v = jnp.take(x, idx, axis=axis)
  spec = jnp.fft.rfft(v, axis=axis)
  k = _along(np.arange(spec.shape[axis]), axis, x.ndim)
  spec = spec * _twiddle(size, k).astype(spec.dtype)
  # the upper half of the real parts is minus the mirrored imaginary parts
  tail = -jnp.imag(jnp.take(spec, np.arange((size + 1) // 2 - 1, 0, -1), axis=axis))
  out = 2 * jnp.concatenate([jnp.real(spec), tail], axis=axis)
  if norm == "ortho":
    out = out * _along(_ortho_scale(size), axis, x.ndim).astype(out.dtype)
  return out


def idct(x, type=2, n=None, axis=-1, norm=None):
  """Inverse of the type-2 DCT (scipy.fft.idct, i.e. a scaled type-3 DCT)."""
  x = _check("idct", x, type, norm)
  if jnp.iscomplexobj(x):
    return _split_complex(idct, x, n=n, axis=axis, norm=norm)
  axis = util.canonicalize_axis(axis, x.ndim, "idct")
  x = _real_float(_resize(x, n, axis))
  size = x.shape[axis]
  if norm == "ortho":
    x = x / _along(_ortho_scale(size), axis, x.ndim).astype(x.dtype)
  bins = size // 2 + 1
  re = jnp.take(x, np.arange(bins), axis=axis)
  im = jnp.take(x, np.arange(size - 1, (size + 1) // 2 - 1, -1), axis=axis)
  widths = [(0, 0)] * x.ndim
  widths[axis] = (1, bins - 1 - im.shape[axis])
  im = jnp.pad(im, widths)
  k = _along(np.arange(bins), axis, x.ndim)
  spec = (re - 1j * im) * (0.5 * jnp.conj(_twiddle(size, k)))
  v = jnp.fft.irfft(spec.astype(jnp.result_type(x.dtype, np.complex64)), n=size, axis=axis)
  # undo the interleave: v holds x[0], x[2], ... then x[..., 3], x[1] reversed
  order = np.empty(size, int)
  order[0::2] = np.arange((size + 1) // 2)
  order[1::2] = np.arange(size - 1, (size + 1) // 2 - 1, -1)
  return jnp.take(v, order, axis=axis)


def _axes_and_sizes(name, x, s, axes):
  if s is not None:
    s = [operator.index(s)] if np.ndim(s) == 0 else list(s)
    if len(s) > x.ndim:
      raise ValueError(f"{name}: s must have at most x.ndim ({x.ndim}) elements, "
                       f"got {len(s)}")
  if axes is None:
    axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
  else:
    axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    axes = tuple(util.canonicalize_axis(a, x.ndim, name) for a in axes)
  sizes = [None] * len(axes) if s is None else s
  if len(sizes) != len(axes):
    raise ValueError(f"{name}: when given, axes and s must have the same length")
  return axes, sizes


def dctn(x, type=2, s=None, axes=None, norm=None):
  """Type-2 DCT over several axes (scipy.fft.dctn): the 1-d transform along each."""
  x = _check("dctn", x, type, norm)
  axes, sizes = _axes_and_sizes("dctn", x, s, axes)
  for axis, n in zip(axes, sizes):
    x = dct(x, n=n, axis=axis, norm=norm)
  return x


def idctn(x, type=2, s=None, axes=None, norm=None):
  """Inverse of dctn (scipy.fft.idctn)."""
  x = _check("idctn", x, type, norm)
  axes, sizes = _axes_and_sizes("idctn", x, s, axes)
  for axis, n in zip(axes, sizes):
    x = idct(x, n=n, axis=axis, norm=norm)
  return x

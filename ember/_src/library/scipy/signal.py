"""jax.scipy.signal: N-d convolution and correlation (direct through conv_general_dilated, or
FFT), detrend, and the windowed-FFT family (stft, istft, csd, welch) with SciPy's options and
JAX 0.12's conventions: convolve2d/correlate2d take only boundary='fill', fillvalue=0; the
'auto' method is the direct one; window names other than 'hann' come from
scipy.signal.get_window (SciPy must then be installed, as in JAX)."""
from __future__ import annotations

import operator
import warnings
from functools import partial

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.scipy import _jnp as jnp
from ember._src.transforms.batching import vmap

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve", "detrend",
           "stft", "istft", "csd", "welch"]

_MODES = ("full", "same", "valid")


def _inexact_pair(name, in1, in2):
  util.check_arraylike(name, in1, in2)
  return util.promote_dtypes_inexact(jnp.asarray(in1), jnp.asarray(in2))


def _complex_dtype(dt):
  """The complex dtype whose parts have dt's precision (complex64 for f32 and below)."""
  return np.dtype(np.complex128) if np.dtype(dt) in (np.float64, np.complex128) else \
      np.dtype(np.complex64)


def _static_int(value, what: str) -> int:
  return core.concrete_or_error(operator.index, value, what)


# ---------------------------------------------------------------------------------------------
# Convolution and correlation


def _valid_order(in1, in2, what: str):
  """(in1, in2) with in1 the larger in every dimension, as 'valid' mode needs."""
  bigger = all(a >= b for a, b in zip(in1.shape, in2.shape))
  smaller = all(a <= b for a, b in zip(in1.shape, in2.shape))
  if not (bigger or smaller):
    raise ValueError(f"{what}: for mode='valid' one input must be at least as large as the "
                     f"other in every dimension, got shapes {in1.shape} and {in2.shape}")
  return (in1, in2) if bigger else (in2, in1)


def _fftconvolve_core(in1, in2, mode: str):
  full = tuple(a + b - 1 for a, b in zip(in1.shape, in2.shape))
  if mode == "valid":
    in1, in2 = _valid_order(in1, in2, "fftconvolve")
  if all(a == 1 or b == 1 for a, b in zip(in1.shape, in2.shape)):
    conv = in1 * in2   # an outer product: no transform needed
  elif jnp.iscomplexobj(in1):
    conv = jnp.fft.ifftn(jnp.fft.fftn(in1, full) * jnp.fft.fftn(in2, full), full)
  else:
    conv = jnp.fft.irfftn(jnp.fft.rfftn(in1, full) * jnp.fft.rfftn(in2, full), full)
  if mode == "full":
    out = full
  elif mode == "same":
    out = in1.shape
  else:
    out = tuple(a - b + 1 for a, b in zip(in1.shape, in2.shape))
  start = tuple((f - o) // 2 for f, o in zip(full, out))
  return lax.slice(conv, start, tuple(s + o for s, o in zip(start, out)))


def fftconvolve(in1, in2, mode="full", axes=None):
  """N-d convolution through FFTs (scipy.signal.fftconvolve); `axes` picks the convolved
  axes, the others are batch axes of equal size."""
  in1, in2 = _inexact_pair("fftconvolve", in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError("fftconvolve: in1 and in2 should have the same dimensionality, got "
                     f"{in1.ndim} and {in2.ndim}")
  if mode not in _MODES:
    raise ValueError(f"fftconvolve: mode must be one of {list(_MODES)}, got {mode!r}")
  fn = partial(_fftconvolve_core, mode=mode)
  if axes is None:
    return fn(in1, in2)
  axes = (axes,) if isinstance(axes, int) else tuple(axes)
  axes = {util.canonicalize_axis(a, in1.ndim, "fftconvolve") for a in axes}
  batch = sorted(set(range(in1.ndim)) - axes)
  if any(in1.shape[i] != in2.shape[i] for i in batch):
    raise ValueError(f"fftconvolve: mapped axes must have same shape; got {in1.shape=} "
                     f"{in2.shape=} axes={sorted(axes)}")
  for ax in batch:
    fn = vmap(fn, in_axes=ax, out_axes=ax)
  return fn(in1, in2)


def _convolve_direct(in1, in2, mode: str, precision, name: str):
  if mode not in _MODES:
    raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")
  in1, in2 = _inexact_pair(name, in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                     f"{in1.ndim} and {in2.ndim}")
  if in1.size == 0 or in2.size == 0:
    raise ValueError(f"{name}: zero-size arrays not supported in convolutions, got shapes "
                     f"{in1.shape} and {in2.shape}.")
  kernel_shape_in = in2.shape
  if mode == "valid":
    in1, in2 = _valid_order(in1, in2, name)
  elif all(a <= b for a, b in zip(in1.shape, in2.shape)):
    in1, in2 = in2, in1   # slide the smaller one (the 'same' crop still follows in1's shape)
  k = in2.shape
  if mode == "valid":
    padding = [(0, 0)] * len(k)
  elif mode == "same":
    padding = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2)
               for s, so in zip(k, kernel_shape_in)]
  else:
    padding = [(s - 1, s - 1) for s in k]
  kernel = jnp.flip(in2)
  out = lax.conv_general_dilated(in1[None, None], kernel[None, None], (1,) * len(k), padding,
                                 precision=precision)
  return out[0, 0]


def convolve(in1, in2, mode="full", method="auto", precision=None):
  """N-d convolution (scipy.signal.convolve); method 'auto' and 'direct' slide the kernel
  (lax.conv_general_dilated), 'fft' is fftconvolve."""
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  if method in ("direct", "auto"):
    return _convolve_direct(in1, in2, mode, precision, "convolve")
  raise ValueError(f"convolve: got {method=}; expected 'auto', 'fft', or 'direct'.")


def _check_2d(name, in1, in2, boundary, fillvalue):
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
  if np.ndim(in1) != 2 or np.ndim(in2) != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-d convolution (scipy.signal.convolve2d); only boundary='fill' with fillvalue=0."""
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_direct(in1, in2, mode, precision, "convolve2d")


def correlate(in1, in2, mode="full", method="auto", precision=None):
  """N-d cross-correlation (scipy.signal.correlate): convolution with in2 flipped and
  conjugated."""
  util.check_arraylike("correlate", in1, in2)
  return convolve(in1, jnp.flip(jnp.conj(jnp.asarray(in2))), mode, method=method,
                  precision=precision)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-d cross-correlation (scipy.signal.correlate2d); only boundary='fill', fillvalue=0.
  As SciPy, an in1 smaller than in2 swaps the roles of the two inputs."""
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  in1, in2 = _inexact_pair("correlate2d", in1, in2)
  swap = all(a <= b for a, b in zip(in1.shape, in2.shape))
  if mode == "same":
    swap = False
  elif mode == "valid":
    swap = swap and in1.shape != in2.shape
  if swap:
    out = _convolve_direct(jnp.flip(in2), jnp.conj(in1), mode, precision, "correlate2d")
    return out if mode == "valid" else jnp.conj(out)
  return jnp.flip(_convolve_direct(jnp.flip(in1), jnp.conj(in2), mode, precision,
                                   "correlate2d"))


# ---------------------------------------------------------------------------------------------
# Detrending


def _remove_linear_trend(seg, n: int):
  """seg (n, m) minus its least-squares line over t = 1..n (closed form of the 2x2 normal
  equations: slope = cov(t, y) / var(t))."""
  t = jnp.arange(1, n + 1, dtype=seg.dtype) / n
  t_mean = t.mean()
  dt = t - t_mean
  y_mean = seg.mean(axis=0, keepdims=True)
  denom = (dt * dt).sum()
  slope = (dt[:, None] * (seg - y_mean)).sum(axis=0, keepdims=True) / jnp.where(
      denom == 0, 1, denom)
  return seg - (y_mean + slope * dt[:, None])


def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):
  """Remove the mean ('constant') or a least-squares line ('linear', piecewise between the
  breakpoints `bp`) along `axis` (scipy.signal.detrend)."""
  if overwrite_data is not None:
    raise NotImplementedError("detrend: overwrite_data argument not implemented.")
  if type not in ("constant", "linear"):
    raise ValueError("detrend: trend type must be 'linear' or 'constant'.")
  util.check_arraylike("detrend", data)
  (data,) = util.promote_dtypes_inexact(jnp.asarray(data))
  if type == "constant":
    return data - data.mean(axis, keepdims=True)
  n = data.shape[axis]
  bps = np.sort(np.unique(np.r_[0, bp, n]))
  if bps[0] < 0 or bps[-1] > n:
    raise ValueError("detrend: breakpoints must be non-negative and less than length of "
                     "data along given axis.")
  moved = jnp.moveaxis(data, axis, 0)
  flat = moved.reshape(n, -1)
  pieces = [_remove_linear_trend(flat[lo:hi], int(hi - lo)) for lo, hi in zip(bps, bps[1:])]
  out = jnp.concatenate(pieces, axis=0) if len(pieces) > 1 else pieces[0]
  return jnp.moveaxis(out.reshape(moved.shape), 0, axis)


# ---------------------------------------------------------------------------------------------
# Windowed FFTs


def _hann(n: int, dtype):
  if n == 1:
    return jnp.ones((1,), dtype)
  return (jnp.sin(np.pi * jnp.linspace(0, 1, n, endpoint=False)) ** 2).astype(dtype)


def _named_window(window, n: int, dtype):
  if isinstance(window, str) and window == "hann":
    return _hann(n, dtype)
  try:
    from scipy.signal import get_window  # optional dependency, as in JAX
  except ImportError as err:
    raise ImportError(f"scipy must be available to use {window=}") from err
  return jnp.asarray(get_window(window, n), dtype=dtype)


def _window_and_length(window, nperseg, input_length: int, dtype):
  """(window array, segment length) from SciPy's window/nperseg arguments."""
  if isinstance(window, (str, tuple)):
    n = 256 if nperseg is None else nperseg
    if n > input_length:
      warnings.warn(f"nperseg={n} is greater than {input_length=}, using "
                    f"nperseg={input_length}")
      n = input_length
    return _named_window(window, n, dtype), n
  win = jnp.asarray(window, dtype=dtype)
  if win.ndim != 1:
    raise ValueError("window must be 1-D")
  if input_length < win.size:
    raise ValueError("window is longer than input signal")
  n = win.size if nperseg is None else nperseg
  if n != win.size:
    raise ValueError("value specified for nperseg is different from length of window")
  return win, n


def _odd_ext(x, n: int):
  """x extended by n points at both ends of its last axis by point reflection."""
  if n < 1:
    return x
  if n > x.shape[-1] - 1:
    raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                     f"x.shape[axis]-1, which is {x.shape[-1] - 1}.")
  left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], axis=-1)
  right = 2 * x[..., -1:] - jnp.flip(x[..., -(n + 1):-1], axis=-1)
  return jnp.concatenate((left, x, right), axis=-1)


def _extend(x, n: int, boundary):
  widths = [(0, 0)] * (x.ndim - 1) + [(n, n)]
  if boundary == "even":
    return jnp.pad(x, widths, mode="reflect")
  if boundary == "odd":
    return _odd_ext(x, n)
  if boundary == "constant":
    return jnp.pad(x, widths, mode="edge")
  if boundary == "zeros":
    return jnp.pad(x, widths)
  return x


_BOUNDARIES = ("even", "odd", "constant", "zeros", None)


def _segments(x, nperseg: int, noverlap: int):
  """(..., nseg, nperseg): the overlapping segments of x's last axis."""
  if nperseg == 1 and noverlap == 0:
    return x[..., None]
  step = nperseg - noverlap
  nseg = (x.shape[-1] - nperseg) // step + 1
  index = np.arange(nseg)[:, None] * step + np.arange(nperseg)[None, :]
  return x[..., index]


def _windowed_fft(x, win, detrend_fn, nperseg, noverlap, nfft, twosided):
  if dtypes.issubdtype(x.dtype, np.integer):
    x = x.astype(win.dtype)
  segs = detrend_fn(_segments(x, nperseg, noverlap))
  if jnp.iscomplexobj(win):
    segs = segs.astype(_complex_dtype(segs.dtype))
  segs = win * segs
  if twosided:
    return jnp.fft.fft(segs, n=nfft)
  return jnp.fft.rfft(jnp.real(segs), n=nfft)


def _detrend_fn(detrend_type, axis):
  if isinstance(detrend_type, str):
    return partial(detrend, type=detrend_type, axis=-1)
  if callable(detrend_type):
    if axis != -1:
      return lambda d: jnp.moveaxis(detrend_type(jnp.moveaxis(d, axis, -1)), -1, axis)
    return detrend_type
  if not detrend_type:
    return lambda d: d
  raise ValueError(f"Unsupported detrend type: {detrend_type}")


def _pad_last_to(x, n: int):
  return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, n - x.shape[-1])])


def _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend_type, return_onesided,
              scaling, axis, mode, boundary=None, padded=False):
  """SciPy's _spectral_helper: (freqs, times, result) with y=None meaning auto-spectra."""
  if mode not in ("psd", "stft"):
    raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
  if boundary not in _BOUNDARIES:
    raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                     f"{list(_BOUNDARIES)}")
  if y is None:
    util.check_arraylike("spectral_helper", x)
    (x,) = util.promote_dtypes_inexact(jnp.asarray(x))
  else:
    util.check_arraylike("spectral_helper", x, y)
    x, y = util.promote_dtypes_inexact(jnp.asarray(x), jnp.asarray(y))
    if x.ndim != y.ndim:
      raise ValueError(f"two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
  axis = util.canonicalize_axis(_static_int(axis, "axis of windowed-FFT"), x.ndim)
  result_dtype = _complex_dtype(x.dtype)
  freq_dtype = np.finfo(result_dtype).dtype
  if nperseg is not None:
    nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
    if nperseg < 1:
      raise ValueError("nperseg must be a positive integer")
  win, nperseg = _window_and_length(window, nperseg, x.shape[axis], x.dtype)
  noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap, "noverlap")
  nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
  if x.size == 0 or (y is not None and y.size == 0):
    shape = x.shape if y is None else tuple(np.broadcast_shapes(x.shape, y.shape))
    return (jnp.zeros(shape, freq_dtype), jnp.zeros(shape, freq_dtype),
            jnp.zeros(shape, result_dtype))
  x = jnp.moveaxis(x, axis, -1)
  if y is not None:
    y = jnp.moveaxis(y, axis, -1)
    length = max(x.shape[-1], y.shape[-1])
    x, y = _pad_last_to(x, length), _pad_last_to(y, length)
  if nfft < nperseg:
    raise ValueError("nfft must be greater than or equal to nperseg.")
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  nstep = nperseg - noverlap
  if boundary is not None:
    x = _extend(x, nperseg // 2, boundary)
    y = None if y is None else _extend(y, nperseg // 2, boundary)
  if padded:
    nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
    x = _pad_last_to(x, x.shape[-1] + nadd)
    y = None if y is None else _pad_last_to(y, y.shape[-1] + nadd)
  detrend_fn = _detrend_fn(detrend_type, axis)
  if scaling == "density":
    scale = 1.0 / (fs * (win * win).sum())
  elif scaling == "spectrum":
    scale = 1.0 / win.sum() ** 2
  else:
    raise ValueError(f"Unknown scaling: {scaling}")
  if mode == "stft":
    scale = jnp.sqrt(scale)
  twosided = not return_onesided
  if return_onesided and (jnp.iscomplexobj(x) or (y is not None and jnp.iscomplexobj(y))):
    twosided = True
    warnings.warn("Input data is complex, switching to return_onesided=False")
  if twosided:
    freqs = jnp.fft.fftfreq(nfft, 1 / fs).astype(freq_dtype)
  else:
    freqs = jnp.fft.rfftfreq(nfft, 1 / fs).astype(freq_dtype)
  result = _windowed_fft(x, win, detrend_fn, nperseg, noverlap, nfft, twosided)
  if y is not None:
    result = jnp.conj(result) * _windowed_fft(y, win, detrend_fn, nperseg, noverlap, nfft,
                                              twosided)
  elif mode == "psd":
    result = jnp.conj(result) * result
  result = result * scale
  if not twosided and mode == "psd":
    end = None if nfft % 2 else -1
    result = result.at[..., 1:end].multiply(2)
  time = jnp.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nstep,
                    dtype=freq_dtype) / fs
  if boundary is not None:
    time = time - (nperseg / 2) / fs
  result = result.astype(result_dtype)
  if y is None and mode != "stft":
    result = jnp.real(result)
  return freqs, time, jnp.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
  """Short-time Fourier transform (scipy.signal.stft): (freqs, segment times, Zxx)."""
  return _spectral(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided,
                   "spectrum", axis, "stft", boundary, padded)


def _median_bias(n: int):
  ii = np.arange(2.0, n, 2)
  return 1 + np.sum(1.0 / (ii + 1) - 1.0 / ii)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
  """Cross power spectral density by Welch's method (scipy.signal.csd): (freqs, Pxy).
  `y=None` is the auto-spectrum of x."""
  freqs, _, pxy = _spectral(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                            return_onesided, scaling, axis, "psd")
  if y is not None:
    pxy = pxy.astype(_complex_dtype(pxy.dtype))   # complex even when x is y
  if pxy.ndim >= 2 and pxy.size > 0:
    if pxy.shape[-1] > 1:
      if average == "median":
        bias = _median_bias(pxy.shape[-1])
        if jnp.iscomplexobj(pxy):
          pxy = (jnp.median(jnp.real(pxy), axis=-1)
                 + 1j * jnp.median(jnp.imag(pxy), axis=-1))
        else:
          pxy = jnp.median(pxy, axis=-1)
        pxy = pxy / jnp.asarray(bias, pxy.dtype)
      elif average == "mean":
        pxy = pxy.mean(axis=-1)
      else:
        raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
      pxy = pxy.reshape(pxy.shape[:-1])
  return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
  """Power spectral density by Welch's method (scipy.signal.welch): (freqs, Pxx)."""
  freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, jnp.real(pxx)


def _overlap_and_add(frames, step: int):
  """(..., nframes, length) frames summed at offsets step*i: (..., step*(nframes-1)+length).
  Each frame is padded to its place and the frames summed (nframes pads, no scatter)."""
  nframes, length = frames.shape[-2:]
  total = step * (nframes - 1) + length
  lead = [(0, 0)] * (frames.ndim - 2)
  placed = [jnp.pad(frames[..., i, :], lead + [(i * step, total - i * step - length)])
            for i in range(nframes)]
  return sum(placed[1:], placed[0])


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """Inverse short-time Fourier transform (scipy.signal.istft): (times, x)."""
  util.check_arraylike("istft", Zxx)
  Zxx = jnp.asarray(Zxx)
  if Zxx.ndim < 2:
    raise ValueError("Input stft must be at least 2d!")
  freq_axis = util.canonicalize_axis(freq_axis, Zxx.ndim, "istft")
  time_axis = util.canonicalize_axis(time_axis, Zxx.ndim, "istft")
  if freq_axis == time_axis:
    raise ValueError("Must specify differing time and frequency axes!")
  Zxx = Zxx.astype(_complex_dtype(Zxx.dtype))
  n_default = 2 * (Zxx.shape[freq_axis] - 1) if input_onesided else Zxx.shape[freq_axis]
  nperseg = _static_int(nperseg or n_default, "nperseg: segment length of STFT")
  if nperseg < 1:
    raise ValueError("nperseg must be a positive integer")
  if nfft is None:
    nfft = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
  else:
    nfft = _static_int(nfft, "nfft of STFT")
  if nfft < nperseg:
    raise ValueError(f"FFT length ({nfft}) must be longer than nperseg ({nperseg}).")
  noverlap = _static_int(noverlap or nperseg // 2, "noverlap of STFT")
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  nstep = nperseg - noverlap
  outer = tuple(i for i in range(Zxx.ndim) if i not in (time_axis, freq_axis))
  Zxx = jnp.transpose(Zxx, outer + (freq_axis, time_axis))
  inverse = jnp.fft.irfft if input_onesided else jnp.fft.ifft
  xsubs = inverse(Zxx, n=nfft, axis=-2)[..., :nperseg, :]
  if isinstance(window, (str, tuple)):
    win = _named_window(window, nperseg, xsubs.dtype)
  else:
    win = jnp.asarray(window)
    if win.ndim != 1:
      raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
      raise ValueError(f"window must have length of {nperseg}")
  xsubs = xsubs * win.sum()   # undoes stft's 'spectrum' scaling
  win_col = win.reshape((1,) * (xsubs.ndim - 2) + (nperseg, 1))
  x = _overlap_and_add(jnp.swapaxes(xsubs * win_col, -2, -1), nstep)
  nseg = xsubs.shape[-1]
  norm = _overlap_and_add(jnp.broadcast_to(win * win, (nseg, nperseg)), nstep)
  if boundary:
    half = nperseg // 2
    x = x[..., half:-half]
    norm = norm[..., half:-half]
  x = x / jnp.where(norm > 1e-10, norm, 1.0)
  if x.ndim > 1 and time_axis != Zxx.ndim - 1:
    if freq_axis < time_axis:
      time_axis -= 1
    x = jnp.moveaxis(x, -1, time_axis)
  time = jnp.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
  return time, x


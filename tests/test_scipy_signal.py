"""ember.scipy.signal against scipy.signal in float64 (eager and under jit), float32
tolerances, and the errors JAX raises for bad arguments."""
import numpy as np
import pytest

import ember
import ember.scipy.signal as es

ss = pytest.importorskip("scipy.signal")   # (the oldest-dependencies venv has no SciPy)

RNG = np.random.default_rng(0)
X1, Y1 = RNG.normal(size=7), RNG.normal(size=4)
A, B, C = RNG.normal(size=(5, 6)), RNG.normal(size=(3, 2)), RNG.normal(size=(6, 7))
SIG, SIG2 = RNG.normal(size=(2, 50)), RNG.normal(size=(2, 50))
MODES = ["full", "same", "valid"]


def close(a, b, tol=1e-12):
  a, b = np.asarray(a), np.asarray(b)
  assert a.shape == b.shape
  np.testing.assert_allclose(a, b, rtol=tol, atol=tol * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("mode", MODES)
def test_convolve_correlate_1d_2d(mode):
  with ember.enable_x64():
    for x, y in [(X1, Y1), (Y1, X1), (A, B), (A, C)]:
      close(es.convolve(x, y, mode), ss.convolve(x, y, mode))
      close(es.correlate(x, y, mode), ss.correlate(x, y, mode))
      close(es.fftconvolve(x, y, mode), ss.fftconvolve(x, y, mode))
      close(es.convolve(x, y, mode, method="fft"), ss.convolve(x, y, mode))
    for x, y in [(A, B), (A, C), (B, A)]:
      close(es.convolve2d(x, y, mode), ss.convolve2d(x, y, mode))
      close(es.correlate2d(x, y, mode), ss.correlate2d(x, y, mode))
    k = RNG.normal(size=(5, 3))
    close(es.fftconvolve(A, k, mode, axes=1), ss.fftconvolve(A, k, mode, axes=1))


def test_convolve_jit_f32_complex():
  jitted = ember.jit(lambda a, b: es.convolve2d(a, b, "same"))
  close(jitted(A.astype(np.float32), B.astype(np.float32)), ss.convolve2d(A, B, "same"), 1e-5)
  assert jitted(A.astype(np.float32), B.astype(np.float32)).dtype == np.float32
  assert es.convolve(np.arange(3), np.arange(2)).dtype == np.float32
  with ember.enable_x64():
    z = X1 + 1j * RNG.normal(size=7)
    close(es.correlate(z, Y1 - 2j), ss.correlate(z, Y1 - 2j))
    close(ember.jit(es.fftconvolve)(z, Y1), ss.fftconvolve(z, Y1))


def test_detrend():
  d = RNG.normal(size=(3, 20)) + np.arange(20)
  with ember.enable_x64():
    close(es.detrend(d), ss.detrend(d))
    close(es.detrend(d, type="constant"), ss.detrend(d, type="constant"))
    close(es.detrend(d, bp=[5, 12]), ss.detrend(d, bp=[5, 12]))
    close(es.detrend(d.T, axis=0), ss.detrend(d.T, axis=0))
    close(ember.jit(es.detrend)(d), ss.detrend(d))


STFT_CASES = [dict(nperseg=8), dict(nperseg=9, noverlap=3, nfft=12),
              dict(nperseg=8, boundary="even"), dict(nperseg=8, boundary="odd", padded=False),
              dict(nperseg=8, boundary=None, detrend="linear", return_onesided=False),
              dict(nperseg=8, boundary="constant", window="hamming")]


def test_stft_istft():
  with ember.enable_x64():
    for kw in STFT_CASES:
      for ours, ref in zip(es.stft(SIG, **kw), ss.stft(SIG, **kw)):
        close(ours, ref)
    for kw in [dict(nperseg=8), dict(nperseg=10, noverlap=7, nfft=12)]:
      _, _, z = ss.stft(SIG, **kw)
      for ours, ref in zip(es.istft(z, **kw), ss.istft(z, **kw)):
        close(ours, ref)
    close(ember.jit(lambda s: es.stft(s, nperseg=8)[2])(SIG), ss.stft(SIG, nperseg=8)[2])
    _, _, z = ss.stft(SIG, nperseg=8)
    close(ember.jit(lambda z: es.istft(z, nperseg=8)[1])(z)[:, :50], SIG)  # padded to 52
  z32 = es.stft(SIG.astype(np.float32), nperseg=8)[2]
  assert z32.dtype == np.complex64
  close(z32, ss.stft(SIG, nperseg=8)[2], 1e-5)


WELCH_CASES = [dict(nperseg=8), dict(nperseg=9, scaling="spectrum", average="median"),
               dict(nperseg=16, detrend="linear", nfft=20),
               dict(nperseg=8, return_onesided=False, window="hamming", axis=-1)]


def test_welch_csd():
  with ember.enable_x64():
    for kw in WELCH_CASES:
      for ours, ref in zip(es.welch(SIG, **kw), ss.welch(SIG, **kw)):
        close(ours, ref)
      for ours, ref in zip(es.csd(SIG, SIG2, **kw), ss.csd(SIG, SIG2, **kw)):
        close(ours, ref)
    for ours, ref in zip(es.welch(SIG.T, nperseg=8, axis=0), ss.welch(SIG.T, nperseg=8, axis=0)):
      close(ours, ref)
    close(ember.jit(lambda a, b: es.csd(a, b, nperseg=8)[1])(SIG, SIG2),
          ss.csd(SIG, SIG2, nperseg=8)[1])
  p32 = es.welch(SIG.astype(np.float32), nperseg=8)[1]
  assert p32.dtype == np.float32
  close(p32, ss.welch(SIG, nperseg=8)[1], 1e-5)


def test_errors():
  with pytest.raises(ValueError, match="mode"):
    es.convolve(X1, Y1, "bad")
  with pytest.raises(ValueError, match="method"):
    es.convolve(X1, Y1, method="bad")
  with pytest.raises(ValueError, match="same number of dimensions"):
    es.convolve(A, Y1)
  with pytest.raises(ValueError, match="2-dimensional"):
    es.convolve2d(X1, Y1)
  with pytest.raises(NotImplementedError, match="boundary"):
    es.correlate2d(A, B, boundary="wrap")
  with pytest.raises(ValueError, match="valid"):
    es.convolve(np.ones((2, 5)), np.ones((3, 2)), "valid")
  with pytest.raises(ValueError, match="noverlap"):
    es.stft(SIG, nperseg=8, noverlap=8)
  with pytest.raises(ValueError, match="Trend type|trend type"):
    es.detrend(SIG, type="quadratic")
  with pytest.raises(ValueError, match="boundary"):
    es.stft(SIG, nperseg=8, boundary="bad")
  with pytest.raises(ValueError, match="average"):
    es.welch(SIG, nperseg=8, average="mode")

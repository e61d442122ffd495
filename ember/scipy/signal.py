"""ember.scipy.signal (jax.scipy.signal)."""
from ember._src.library.scipy.signal import (  # noqa: F401
    convolve, convolve2d, correlate, correlate2d, csd, detrend, fftconvolve, istft, stft, welch)

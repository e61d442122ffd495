"""ember.numpy.fft (jax.numpy.fft)."""
from ember._src.library.numpy.fft import (  # noqa: F401
    fft, fft2, fftfreq, fftn, fftshift, hfft, ifft, ifft2, ifftn, ifftshift, ihfft, irfft, irfft2,
    irfftn, rfft, rfft2, rfftfreq, rfftn)

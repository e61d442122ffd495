"""ember.scipy.fft (jax.scipy.fft)."""
from ember._src.library.scipy.fft import dct, dctn, idct, idctn  # noqa: F401

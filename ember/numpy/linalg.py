"""ember.numpy.linalg (jax.numpy.linalg)."""
from ember._src.library.numpy import linalg as _impl

globals().update({_n: getattr(_impl, _n) for _n in _impl.LINALG_ALL})

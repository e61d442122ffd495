"""jax._src.dtypes's names that libraries use (flax's fp8_ops: extended, ExtendedDType, DType,
finfo, supports_inf): ember's dtypes."""
import numpy as np

from ember._src.dtypes import ExtendedDType, extended, finfo, supports_inf  # noqa: F401

DType = np.dtype  # JAX's alias for a (NumPy) dtype in annotations

"""jax._src.dtypes's names that libraries use (flax's fp8_ops: extended, ExtendedDType, DType,
finfo, supports_inf; equinox's nn.Embedding: TypePromotionError): ember's dtypes."""
import numpy as np

from ember._src.base.dtypes import (  # noqa: F401
    ExtendedDType, TypePromotionError, extended, finfo, supports_inf)

DType = np.dtype  # JAX's alias for a (NumPy) dtype in annotations

"""jax._src.dtypes's names that libraries use (flax's fp8_ops: extended, ExtendedDType, DType,
finfo, supports_inf; equinox's nn.Embedding: TypePromotionError): ember's dtypes."""
import numpy as np

from ember._src.base.dtypes import (  # noqa: F401
    ExtendedDType, TypePromotionError, extended, finfo, supports_inf)

# the narrow floats' scalar types, as jax._src.dtypes names them (flax's fp8_ops)
from ml_dtypes import (  # noqa: E402,F401
    bfloat16, float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz)

DType = np.dtype  # JAX's alias for a (NumPy) dtype in annotations

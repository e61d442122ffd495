"""ember.dtypes: dtype utilities (jax.dtypes)."""
import ml_dtypes as _ml_dtypes

from ember._src.base.dtypes import (  # noqa: F401
    ExtendedDType, TypePromotionError, canonicalize_dtype, extended, finfo, float0,
    iinfo, issubdtype, itemsize_bits, prng_key, promote_types, result_type, scalar_type_of)
from ember._src.base.dtypes import dtype as _dtype

# As jax.dtypes.bfloat16: the scalar TYPE (ml_dtypes.bfloat16), not a dtype instance, so
# `isinstance(np_scalar, dtypes.bfloat16)` works; np.dtype(dtypes.bfloat16) and comparisons
# with a dtype (`x.dtype == dtypes.bfloat16`) behave as for NumPy's scalar types.
bfloat16 = _ml_dtypes.bfloat16


def dtype(x, *, canonicalize: bool = False):
  return _dtype(x, canonicalize=canonicalize)

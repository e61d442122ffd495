"""ember.dtypes: dtype utilities (jax.dtypes)."""
from ember._src.base.dtypes import (  # noqa: F401
    ExtendedDType, TypePromotionError, bfloat16, canonicalize_dtype, extended, finfo, float0,
    iinfo, issubdtype, prng_key, promote_types, result_type)
from ember._src.base.dtypes import dtype as _dtype

def dtype(x, *, canonicalize: bool = False):
  return _dtype(x, canonicalize=canonicalize)

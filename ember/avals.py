"""ember.avals (jax.avals): dtypes that make types by indexing, `f32[3, 4]` for
`ShapedArray((3, 4), float32)`. (JAX's `MeshAxis`, for sharded dimensions `f32[4@x]`, is not
here: ember's types carry no sharding.)"""
import ml_dtypes as _ml_dtypes
import numpy as _np

from ember._src.base.dtypes import float0 as _float0
from ember._src.core.avals import AvalDType  # noqa: F401

bool_ = bool = AvalDType(_np.dtype(_np.bool_))  # noqa: A001 (JAX's names)
i2, i4 = AvalDType(_np.dtype(_ml_dtypes.int2)), AvalDType(_np.dtype(_ml_dtypes.int4))
i8, i16 = AvalDType(_np.dtype(_np.int8)), AvalDType(_np.dtype(_np.int16))
i32, i64 = AvalDType(_np.dtype(_np.int32)), AvalDType(_np.dtype(_np.int64))
u2, u4 = AvalDType(_np.dtype(_ml_dtypes.uint2)), AvalDType(_np.dtype(_ml_dtypes.uint4))
u8, u16 = AvalDType(_np.dtype(_np.uint8)), AvalDType(_np.dtype(_np.uint16))
u32, u64 = AvalDType(_np.dtype(_np.uint32)), AvalDType(_np.dtype(_np.uint64))
bf16 = AvalDType(_np.dtype(_ml_dtypes.bfloat16))
f16, f32 = AvalDType(_np.dtype(_np.float16)), AvalDType(_np.dtype(_np.float32))
f64 = AvalDType(_np.dtype(_np.float64))
c64, c128 = AvalDType(_np.dtype(_np.complex64)), AvalDType(_np.dtype(_np.complex128))
float0 = AvalDType(_float0)

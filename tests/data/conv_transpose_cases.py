"""lax.conv_transpose cases shared by make_conv_transpose.py (real JAX) and
tests/test_convolution.py (ember): name -> (lhs shape, rhs shape, keyword arguments)."""
import numpy as np

CASES = {
    "2d_same_s2": ((1, 4, 5, 2), (3, 3, 2, 3), dict(strides=(2, 2), padding="SAME")),
    "2d_valid_s2_transpose_kernel": ((1, 4, 5, 2), (3, 3, 3, 2), dict(
        strides=(2, 2), padding="VALID", transpose_kernel=True)),
    "1d_pairs": ((2, 5, 2), (3, 2, 2), dict(strides=(3,), padding=((1, 2),))),
    "1d_pairs_consistent": ((2, 5, 2), (3, 2, 2), dict(
        strides=(2,), padding=((1, 0),), use_consistent_padding=True)),
    "2d_dilated_nchw": ((1, 2, 3, 4), (3, 2, 2, 2), dict(
        strides=(1, 2), padding="SAME", rhs_dilation=(2, 1),
        dimension_numbers=("NCHW", "OIHW", "NCHW"))),
    "3d_valid": ((1, 2, 3, 2, 1), (2, 1, 2, 1, 2), dict(strides=(2, 1, 2), padding="VALID")),
}


def operand(shape, k):
  """Deterministic float32 values in [-1.25, 1.25] (exact in binary)."""
  return ((np.arange(np.prod(shape)) * (k + 3) % 11 - 5) / 4).astype(np.float32).reshape(shape)

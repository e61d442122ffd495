"""ember.numpy creation functions: array/asarray, scalar types, zeros/ones/full(_like),
arange, linspace/logspace/geomspace, eye/identity/tri/tril/triu/diag/diagflat, meshgrid,
astype/view/copy/frombuffer.

EXPECTED and the printed jaxprs below were produced with JAX 0.12 (x64 off and on); each
case runs eagerly and under ember.jit and must give JAX's dtype, weak type, shape and values.
Values of the math-heavy functions are also checked against NumPy in float64.
"""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors

X = np.ones(3, np.float32)
nan = float("nan")

CASES = {
    "array_float": lambda: jnp.array(1.0),
    "array_int": lambda: jnp.array(1),
    "array_bool": lambda: jnp.array(True),
    "array_complex": lambda: jnp.array(1j),
    "array_list_int": lambda: jnp.array([1, 2]),
    "array_list_mixed": lambda: jnp.array([1, 2.0]),
    "array_list_complex": lambda: jnp.array([1, 2.0, 1j]),
    "array_list_bool_int": lambda: jnp.array([True, 2]),
    "array_nested_tuple": lambda: jnp.array(((1, 2), [3, 4])),
    "array_np_f16_scalar_list": lambda: jnp.array([np.float16(1), 2.0]),
    "array_np_f64": lambda: jnp.array(np.arange(3.0)),
    "array_np_i64_wrap": lambda: jnp.array(np.array([2**40 + 5, 7])),
    "array_np_u8": lambda: jnp.array(np.arange(3, dtype=np.uint8)),
    "array_np_scalar_f64": lambda: jnp.array(np.float64(1.5)),
    "array_empty": lambda: jnp.array([]),
    "array_empty_2d": lambda: jnp.array([[]]),
    "array_ndmin": lambda: jnp.array([1, 2], ndmin=3),
    "array_dtype_int8": lambda: jnp.array(5, dtype=jnp.int8),
    "array_dtype_trunc": lambda: jnp.array([1.5, -2.7], dtype=jnp.int32),
    "array_dtype_pyfloat": lambda: jnp.array(1.5, dtype=float),
    "array_dtype_bf16": lambda: jnp.array([1.5, 2.25], dtype=jnp.bfloat16),
    "array_range": lambda: jnp.array(range(3)),
    "array_of_arrays": lambda: jnp.array([jnp.arange(2), jnp.ones(2)]),
    "array_of_scalar_arrays": lambda: jnp.array([jnp.float16(1), 2.0]),
    "array_of_weak_arrays": lambda: jnp.array([jnp.asarray(1.0), jnp.asarray(2.0)]),
    "array_of_weak_array": lambda: jnp.array(jnp.asarray(2.0)),
    "array_3d": lambda: jnp.array([[[1, 2]], [[3, 4]]]),
    "asarray_float": lambda: jnp.asarray(1.0),
    "asarray_int": lambda: jnp.asarray(1),
    "asarray_dtype": lambda: jnp.asarray(1.0, dtype=jnp.float16),
    "asarray_pydtype": lambda: jnp.asarray(1.0, dtype=float),
    "asarray_list": lambda: jnp.asarray([1.0, 2.0]),
    "asarray_array_cast": lambda: jnp.asarray(jnp.arange(3), dtype=jnp.float32),
    "asarray_f64_dtype": lambda: jnp.asarray([1.25], dtype=jnp.float64),
    "asarray_i64_dtype": lambda: jnp.asarray(7, dtype=jnp.int64),
    "scalar_float32": lambda: jnp.float32(1.5),
    "scalar_float32_int": lambda: jnp.float32(3),
    "scalar_int8_floats": lambda: jnp.int8(np.array([300, 1.5, -2.5])),
    "scalar_int32_list": lambda: jnp.int32([1.7, -2.2]),
    "scalar_bool": lambda: jnp.bool_(3),
    "scalar_bf16": lambda: jnp.bfloat16(1.5),
    "scalar_float64": lambda: jnp.float64(1.5),
    "scalar_int64": lambda: jnp.int64(7),
    "scalar_uint64": lambda: jnp.uint64(7),
    "scalar_complex128": lambda: jnp.complex128(1 + 2j),
    "scalar_cast_array": lambda: jnp.float16(jnp.arange(3)),
    "scalar_str": lambda: jnp.float32("1.5"),
    "zeros": lambda: jnp.zeros(3),
    "zeros_tuple": lambda: jnp.zeros((2, 3)),
    "zeros_list": lambda: jnp.zeros([2, 1, 2]),
    "zeros_np_int": lambda: jnp.zeros(np.int64(2)),
    "zeros_0d_array": lambda: jnp.zeros(jnp.array(2)),
    "zeros_scalar": lambda: jnp.zeros(()),
    "zeros_empty": lambda: jnp.zeros((0, 2)),
    "zeros_int": lambda: jnp.zeros(3, dtype=int),
    "zeros_bool": lambda: jnp.zeros((2,), bool),
    "zeros_f64": lambda: jnp.zeros(2, jnp.float64),
    "zeros_str_dtype": lambda: jnp.zeros(2, dtype="int16"),
    "ones_bf16": lambda: jnp.ones(2, jnp.bfloat16),
    "ones_c64": lambda: jnp.ones((1, 2), jnp.complex64),
    "ones_u8": lambda: jnp.ones((2, 2), jnp.uint8),
    "empty": lambda: jnp.empty(2),
    "empty_int": lambda: jnp.empty((2, 1), int),
    "full_float": lambda: jnp.full(3, 1.5),
    "full_int": lambda: jnp.full((2, 2), 2),
    "full_bool": lambda: jnp.full(3, True),
    "full_np64": lambda: jnp.full(3, np.float64(2)),
    "full_f16": lambda: jnp.full(2, jnp.float16(2)),
    "full_dtype": lambda: jnp.full(3, 1.5, int),
    "full_array": lambda: jnp.full((2, 3), jnp.arange(3)),
    "full_array_dtype": lambda: jnp.full((2, 2), jnp.array([1.5, 2.5]), jnp.int32),
    "zeros_like": lambda: jnp.zeros_like(jnp.ones((2, 3), jnp.int8)),
    "zeros_like_weak": lambda: jnp.zeros_like(2.0),
    "zeros_like_int": lambda: jnp.zeros_like(2),
    "zeros_like_np": lambda: jnp.zeros_like(np.ones(2)),
    "zeros_like_shape": lambda: jnp.zeros_like(jnp.ones((2, 3)), shape=(4,)),
    "ones_like_dtype": lambda: jnp.ones_like(jnp.ones(2, jnp.int8), dtype=float),
    "ones_like_bool": lambda: jnp.ones_like(jnp.zeros(3, bool)),
    "empty_like": lambda: jnp.empty_like(jnp.ones((2, 2), jnp.float16)),
    "full_like_wrap": lambda: jnp.full_like(jnp.ones(2, jnp.int8), 300),
    "full_like_trunc": lambda: jnp.full_like(jnp.ones(2, jnp.int8), 3.7),
    "full_like_np": lambda: jnp.full_like(np.ones(2), 3),
    "full_like_weak": lambda: jnp.full_like(2.0, 3),
    "full_like_array": lambda: jnp.full_like(jnp.ones((2, 3)), jnp.arange(3)),
    "full_like_array_shape": lambda: jnp.full_like(jnp.ones((2, 3), jnp.int8), jnp.arange(3.0), shape=(4, 3)),
    "full_like_shape_dtype": lambda: jnp.full_like(jnp.ones(3), 2, dtype=jnp.uint8, shape=(2, 2)),
    "arange_int": lambda: jnp.arange(4),
    "arange_float": lambda: jnp.arange(4.0),
    "arange_start_stop": lambda: jnp.arange(1, 4),
    "arange_start_float": lambda: jnp.arange(1.0, 4),
    "arange_step": lambda: jnp.arange(0, 1, 0.25),
    "arange_neg_step": lambda: jnp.arange(5, 1, -1),
    "arange_empty": lambda: jnp.arange(5, 1),
    "arange_negative": lambda: jnp.arange(-3),
    "arange_frac": lambda: jnp.arange(2.5),
    "arange_np_i64": lambda: jnp.arange(np.int64(3)),
    "arange_np_f16": lambda: jnp.arange(np.float16(3)),
    "arange_dtype_f16": lambda: jnp.arange(3, dtype=jnp.float16),
    "arange_step_f16": lambda: jnp.arange(0, 1, 0.1, dtype=jnp.float16),
    "arange_step_int": lambda: jnp.arange(0, 1, 0.3, dtype=jnp.int32),
    "arange_pyfloat_dtype": lambda: jnp.arange(1, 3, dtype=float),
    "arange_array": lambda: jnp.arange(jnp.array(3)),
    "arange_weak_array": lambda: jnp.arange(jnp.asarray(3.0)),
    "arange_u8": lambda: jnp.arange(2, 8, 2, jnp.uint8),
    "arange_bf16": lambda: jnp.arange(1, 5, dtype=jnp.bfloat16),
    "arange_step_bf16": lambda: jnp.arange(0, 1, 0.25, dtype=jnp.bfloat16),
    "linspace_bf16": lambda: jnp.linspace(0, 1, 3, dtype=jnp.bfloat16),
    "arange_float_neg_empty": lambda: jnp.arange(0, -1.0, 0.3),
    "arange_i64": lambda: jnp.arange(3, dtype=jnp.int64),
    "linspace": lambda: jnp.linspace(0, 1, 5),
    "linspace_int": lambda: jnp.linspace(0, 10, 5, dtype=int),
    "linspace_no_endpoint": lambda: jnp.linspace(0, 1, 4, endpoint=False),
    "linspace_retstep": lambda: jnp.linspace(0, 1, 5, retstep=True),
    "linspace_one": lambda: jnp.linspace(0, 1, 1),
    "linspace_one_retstep": lambda: jnp.linspace(0, 1, 1, retstep=True),
    "linspace_one_no_endpoint": lambda: jnp.linspace(2, 5, 1, endpoint=False, retstep=True),
    "linspace_zero": lambda: jnp.linspace(0, 1, 0, retstep=True),
    "linspace_array": lambda: jnp.linspace(jnp.array([0.0, 1.0]), 3.0, 3),
    "linspace_array_axis": lambda: jnp.linspace(jnp.array([0.0, 1.0]), 3.0, 3, axis=-1),
    "linspace_3d": lambda: jnp.linspace(jnp.zeros((2, 1)), jnp.ones((1, 3)), 4, axis=1),
    "linspace_f16": lambda: jnp.linspace(0, 1, 3, dtype=jnp.float16),
    "linspace_complex": lambda: jnp.linspace(0, 1 + 1j, 3),
    "linspace_f16_arg": lambda: jnp.linspace(jnp.float16(0), 1, 3),
    "linspace_f64": lambda: jnp.linspace(0, 1, 4, dtype=jnp.float64),
    "logspace": lambda: jnp.logspace(0, 2, 3),
    "logspace_base": lambda: jnp.logspace(0, 2, 3, base=2),
    "logspace_int": lambda: jnp.logspace(0, 2, 3, dtype=int),
    "logspace_no_endpoint": lambda: jnp.logspace(0.0, 1.0, 4, endpoint=False),
    "geomspace": lambda: jnp.geomspace(1, 16, 5),
    "geomspace_neg": lambda: jnp.geomspace(-1, -16, 5),
    "geomspace_no_endpoint": lambda: jnp.geomspace(1, 16, 4, endpoint=False),
    "geomspace_axis": lambda: jnp.geomspace(jnp.array([1.0, 10.0]), jnp.array([8.0, 1000.0]), 4, axis=1),
    "eye": lambda: jnp.eye(3),
    "eye_rect_k": lambda: jnp.eye(3, 2, 1),
    "eye_int": lambda: jnp.eye(2, dtype=int),
    "eye_far_k": lambda: jnp.eye(2, k=-5),
    "eye_empty": lambda: jnp.eye(0),
    "eye_bool": lambda: jnp.eye(2, 3, -1, dtype=bool),
    "identity": lambda: jnp.identity(2, jnp.int8),
    "identity_default": lambda: jnp.identity(3),
    "tri": lambda: jnp.tri(3, 2, -1),
    "tri_int": lambda: jnp.tri(2, dtype=int),
    "tri_k": lambda: jnp.tri(3, 4, 1),
    "tril": lambda: jnp.tril(jnp.arange(12.0).reshape(3, 4)),
    "tril_k": lambda: jnp.tril(jnp.arange(1, 19).reshape(2, 3, 3), 1),
    "triu_neg_k": lambda: jnp.triu(jnp.arange(9).reshape(3, 3), -1),
    "triu_rect": lambda: jnp.triu(jnp.arange(1.0, 7.0).reshape(3, 2), 1),
    "tril_weak": lambda: jnp.tril(jnp.full((2, 2), 1.5)),
    "diag_1d": lambda: jnp.diag(jnp.arange(1, 4)),
    "diag_1d_k": lambda: jnp.diag(jnp.arange(1, 4), 1),
    "diag_1d_negk": lambda: jnp.diag(jnp.array([1.5, 2.5]), -2),
    "diagflat": lambda: jnp.diagflat(jnp.array([[1, 2], [3, 4]]), -1),
    "diagflat_k": lambda: jnp.diagflat(jnp.array([1.0, 2.0]), 1),
    "meshgrid_xy": lambda: jnp.meshgrid(jnp.arange(2), jnp.arange(3.0)),
    "meshgrid_ij_sparse": lambda: jnp.meshgrid(jnp.arange(2), jnp.arange(3.0), indexing="ij", sparse=True),
    "meshgrid_3": lambda: jnp.meshgrid(jnp.arange(2), jnp.arange(3), jnp.arange(4.0)),
    "meshgrid_3_ij": lambda: jnp.meshgrid(jnp.arange(2), jnp.arange(3), jnp.arange(4.0), indexing="ij"),
    "meshgrid_1": lambda: jnp.meshgrid(jnp.arange(3)),
    "meshgrid_0": lambda: jnp.meshgrid(),
    "astype_f16": lambda: jnp.astype(jnp.arange(3), jnp.float16),
    "astype_method": lambda: jnp.arange(3).astype(float),
    "astype_complex_bool": lambda: jnp.astype(jnp.array([1 + 2j, 0, 1j]), bool),
    "astype_pyscalar": lambda: jnp.astype(2, float),
    "astype_none": lambda: jnp.astype(2.0, None),
    "astype_float_int": lambda: jnp.astype(jnp.array([1.7, -1.7, np.nan, 1e10]), jnp.int32),
    "astype_float_u8": lambda: jnp.astype(jnp.array([1.7, 300.0, -5.0]), jnp.uint8),
    "astype_bool_f": lambda: jnp.astype(jnp.array([True, False]), jnp.float32),
    "view_f32_i32": lambda: jnp.arange(3.0, dtype=jnp.float32).view(jnp.int32),
    "view_i8_i16": lambda: jnp.arange(4, dtype=jnp.int8).view(jnp.int16),
    "view_i16_i8": lambda: jnp.arange(2, dtype=jnp.int16).view(jnp.int8),
    "view_i32_i16_2d": lambda: jnp.arange(6).reshape(2, 3).view(jnp.int16),
    "view_none": lambda: jnp.arange(3).view(),
    "view_bool_u8": lambda: jnp.ones(3, bool).view(jnp.uint8),
    "view_u8_bool": lambda: jnp.arange(3, dtype=jnp.uint8).view(bool),
    "view_c64_f32": lambda: jnp.array([1 + 2j, 3 - 4j], dtype=jnp.complex64).view(jnp.float32),
    "view_f32_c64": lambda: jnp.array([1.0, 2.0, 3.0, 4.0], dtype=jnp.float32).view(jnp.complex64),
    "view_0d": lambda: jnp.array(1.0, dtype=jnp.float32).view(jnp.uint32),
    "view_f16_bf16": lambda: jnp.array([1.0, -2.0], dtype=jnp.float16).view(jnp.bfloat16),
    "copy": lambda: jnp.copy(jnp.arange(2)),
    "copy_weak": lambda: jnp.copy(2.0),
    "frombuffer": lambda: jnp.frombuffer(b"\x01\x02\x03\x04", dtype=jnp.uint8),
    "frombuffer_i16": lambda: jnp.frombuffer(b"\x01\x02\x03\x04", dtype=jnp.int16, count=1, offset=2),
}

# (dtype, weak_type, shape, values) with x64 off, then on; a tuple of them for tuple results.
EXPECTED = {
    'array_float':
        [('float32', True, (), 1.0), ('float64', True, (), 1.0)],
    'array_int':
        [('int32', True, (), 1), ('int64', True, (), 1)],
    'array_bool':
        [('bool', False, (), True), ('bool', False, (), True)],
    'array_complex':
        [('complex64', True, (), 1j), ('complex128', True, (), 1j)],
    'array_list_int':
        [('int32', False, (2,), [1, 2]), ('int64', False, (2,), [1, 2])],
    'array_list_mixed':
        [('float32', False, (2,), [1.0, 2.0]), ('float64', False, (2,), [1.0, 2.0])],
    'array_list_complex':
        [('complex64', False, (3,), [(1+0j), (2+0j), 1j]),
         ('complex128', False, (3,), [(1+0j), (2+0j), 1j])],
    'array_list_bool_int':
        [('int32', False, (2,), [1, 2]), ('int64', False, (2,), [1, 2])],
    'array_nested_tuple':
        [('int32', False, (2, 2), [[1, 2], [3, 4]]), ('int64', False, (2, 2), [[1, 2], [3, 4]])],
    'array_np_f16_scalar_list':
        [('float16', False, (2,), [1.0, 2.0]), ('float16', False, (2,), [1.0, 2.0])],
    'array_np_f64':
        [('float32', False, (3,), [0.0, 1.0, 2.0]), ('float64', False, (3,), [0.0, 1.0, 2.0])],
    'array_np_i64_wrap':
        [('int32', False, (2,), [5, 7]), ('int64', False, (2,), [1099511627781, 7])],
    'array_np_u8':
        [('uint8', False, (3,), [0, 1, 2]), ('uint8', False, (3,), [0, 1, 2])],
    'array_np_scalar_f64':
        [('float32', False, (), 1.5), ('float64', False, (), 1.5)],
    'array_empty':
        [('float32', False, (0,), []), ('float64', False, (0,), [])],
    'array_empty_2d':
        [('float32', False, (1, 0), [[]]), ('float64', False, (1, 0), [[]])],
    'array_ndmin':
        [('int32', False, (1, 1, 2), [[[1, 2]]]), ('int64', False, (1, 1, 2), [[[1, 2]]])],
    'array_dtype_int8':
        [('int8', False, (), 5), ('int8', False, (), 5)],
    'array_dtype_trunc':
        [('int32', False, (2,), [1, -2]), ('int32', False, (2,), [1, -2])],
    'array_dtype_pyfloat':
        [('float32', False, (), 1.5), ('float64', False, (), 1.5)],
    'array_dtype_bf16':
        [('bfloat16', False, (2,), [1.5, 2.25]), ('bfloat16', False, (2,), [1.5, 2.25])],
    'array_range':
        [('int32', False, (3,), [0, 1, 2]), ('int64', False, (3,), [0, 1, 2])],
    'array_of_arrays':
        [('float32', False, (2, 2), [[0.0, 1.0], [1.0, 1.0]]),
         ('float64', False, (2, 2), [[0.0, 1.0], [1.0, 1.0]])],
    'array_of_scalar_arrays':
        [('float16', False, (2,), [1.0, 2.0]), ('float16', False, (2,), [1.0, 2.0])],
    'array_of_weak_arrays':
        [('float32', False, (2,), [1.0, 2.0]), ('float64', False, (2,), [1.0, 2.0])],
    'array_of_weak_array':
        [('float32', True, (), 2.0), ('float64', True, (), 2.0)],
    'array_3d':
        [('int32', False, (2, 1, 2), [[[1, 2]], [[3, 4]]]),
         ('int64', False, (2, 1, 2), [[[1, 2]], [[3, 4]]])],
    'asarray_float':
        [('float32', True, (), 1.0), ('float64', True, (), 1.0)],
    'asarray_int':
        [('int32', True, (), 1), ('int64', True, (), 1)],
    'asarray_dtype':
        [('float16', False, (), 1.0), ('float16', False, (), 1.0)],
    'asarray_pydtype':
        [('float32', False, (), 1.0), ('float64', False, (), 1.0)],
    'asarray_list':
        [('float32', False, (2,), [1.0, 2.0]), ('float64', False, (2,), [1.0, 2.0])],
    'asarray_array_cast':
        [('float32', False, (3,), [0.0, 1.0, 2.0]), ('float32', False, (3,), [0.0, 1.0, 2.0])],
    'asarray_f64_dtype':
        [('float32', False, (1,), [1.25]), ('float64', False, (1,), [1.25])],
    'asarray_i64_dtype':
        [('int32', False, (), 7), ('int64', False, (), 7)],
    'scalar_float32':
        [('float32', False, (), 1.5), ('float32', False, (), 1.5)],
    'scalar_float32_int':
        [('float32', False, (), 3.0), ('float32', False, (), 3.0)],
    'scalar_int8_floats':
        [('int8', False, (3,), [44, 1, -2]), ('int8', False, (3,), [44, 1, -2])],
    'scalar_int32_list':
        [('int32', False, (2,), [1, -2]), ('int32', False, (2,), [1, -2])],
    'scalar_bool':
        [('bool', False, (), True), ('bool', False, (), True)],
    'scalar_bf16':
        [('bfloat16', False, (), 1.5), ('bfloat16', False, (), 1.5)],
    'scalar_float64':
        [('float32', False, (), 1.5), ('float64', False, (), 1.5)],
    'scalar_int64':
        [('int32', False, (), 7), ('int64', False, (), 7)],
    'scalar_uint64':
        [('uint32', False, (), 7), ('uint64', False, (), 7)],
    'scalar_complex128':
        [('complex64', False, (), (1+2j)), ('complex128', False, (), (1+2j))],
    'scalar_cast_array':
        [('float16', False, (3,), [0.0, 1.0, 2.0]), ('float16', False, (3,), [0.0, 1.0, 2.0])],
    'scalar_str':
        [('float32', False, (), 1.5), ('float32', False, (), 1.5)],
    'zeros':
        [('float32', False, (3,), [0.0, 0.0, 0.0]), ('float64', False, (3,), [0.0, 0.0, 0.0])],
    'zeros_tuple':
        [('float32', False, (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]),
         ('float64', False, (2, 3), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])],
    'zeros_list':
        [('float32', False, (2, 1, 2), [[[0.0, 0.0]], [[0.0, 0.0]]]),
         ('float64', False, (2, 1, 2), [[[0.0, 0.0]], [[0.0, 0.0]]])],
    'zeros_np_int':
        [('float32', False, (2,), [0.0, 0.0]), ('float64', False, (2,), [0.0, 0.0])],
    'zeros_0d_array':
        [('float32', False, (2,), [0.0, 0.0]), ('float64', False, (2,), [0.0, 0.0])],
    'zeros_scalar':
        [('float32', False, (), 0.0), ('float64', False, (), 0.0)],
    'zeros_empty':
        [('float32', False, (0, 2), []), ('float64', False, (0, 2), [])],
    'zeros_int':
        [('int32', False, (3,), [0, 0, 0]), ('int64', False, (3,), [0, 0, 0])],
    'zeros_bool':
        [('bool', False, (2,), [False, False]), ('bool', False, (2,), [False, False])],
    'zeros_f64':
        [('float32', False, (2,), [0.0, 0.0]), ('float64', False, (2,), [0.0, 0.0])],
    'zeros_str_dtype':
        [('int16', False, (2,), [0, 0]), ('int16', False, (2,), [0, 0])],
    'ones_bf16':
        [('bfloat16', False, (2,), [1.0, 1.0]), ('bfloat16', False, (2,), [1.0, 1.0])],
    'ones_c64':
        [('complex64', False, (1, 2), [[(1+0j), (1+0j)]]),
         ('complex64', False, (1, 2), [[(1+0j), (1+0j)]])],
    'ones_u8':
        [('uint8', False, (2, 2), [[1, 1], [1, 1]]), ('uint8', False, (2, 2), [[1, 1], [1, 1]])],
    'empty':
        [('float32', False, (2,), [0.0, 0.0]), ('float64', False, (2,), [0.0, 0.0])],
    'empty_int':
        [('int32', False, (2, 1), [[0], [0]]), ('int64', False, (2, 1), [[0], [0]])],
    'full_float':
        [('float32', True, (3,), [1.5, 1.5, 1.5]), ('float64', True, (3,), [1.5, 1.5, 1.5])],
    'full_int':
        [('int32', True, (2, 2), [[2, 2], [2, 2]]), ('int64', True, (2, 2), [[2, 2], [2, 2]])],
    'full_bool':
        [('bool', False, (3,), [True, True, True]), ('bool', False, (3,), [True, True, True])],
    'full_np64':
        [('float32', False, (3,), [2.0, 2.0, 2.0]), ('float64', False, (3,), [2.0, 2.0, 2.0])],
    'full_f16':
        [('float16', False, (2,), [2.0, 2.0]), ('float16', False, (2,), [2.0, 2.0])],
    'full_dtype':
        [('int32', False, (3,), [1, 1, 1]), ('int64', False, (3,), [1, 1, 1])],
    'full_array':
        [('int32', False, (2, 3), [[0, 1, 2], [0, 1, 2]]),
         ('int64', False, (2, 3), [[0, 1, 2], [0, 1, 2]])],
    'full_array_dtype':
        [('int32', False, (2, 2), [[1, 2], [1, 2]]), ('int32', False, (2, 2), [[1, 2], [1, 2]])],
    'zeros_like':
        [('int8', False, (2, 3), [[0, 0, 0], [0, 0, 0]]),
         ('int8', False, (2, 3), [[0, 0, 0], [0, 0, 0]])],
    'zeros_like_weak':
        [('float32', True, (), 0.0), ('float64', True, (), 0.0)],
    'zeros_like_int':
        [('int32', True, (), 0), ('int64', True, (), 0)],
    'zeros_like_np':
        [('float32', False, (2,), [0.0, 0.0]), ('float64', False, (2,), [0.0, 0.0])],
    'zeros_like_shape':
        [('float32', False, (4,), [0.0, 0.0, 0.0, 0.0]), ('float64', False, (4,), [0.0, 0.0, 0.0, 0.0])],
    'ones_like_dtype':
        [('float32', False, (2,), [1.0, 1.0]), ('float64', False, (2,), [1.0, 1.0])],
    'ones_like_bool':
        [('bool', False, (3,), [True, True, True]), ('bool', False, (3,), [True, True, True])],
    'empty_like':
        [('float16', False, (2, 2), [[0.0, 0.0], [0.0, 0.0]]),
         ('float16', False, (2, 2), [[0.0, 0.0], [0.0, 0.0]])],
    'full_like_wrap':
        [('int8', False, (2,), [44, 44]), ('int8', False, (2,), [44, 44])],
    'full_like_trunc':
        [('int8', False, (2,), [3, 3]), ('int8', False, (2,), [3, 3])],
    'full_like_np':
        [('float32', False, (2,), [3.0, 3.0]), ('float64', False, (2,), [3.0, 3.0])],
    'full_like_weak':
        [('float32', True, (), 3.0), ('float64', True, (), 3.0)],
    'full_like_array':
        [('float32', False, (2, 3), [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]),
         ('float64', False, (2, 3), [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]])],
    'full_like_array_shape':
        [('int8', False, (4, 3), [[0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2]]),
         ('int8', False, (4, 3), [[0, 1, 2], [0, 1, 2], [0, 1, 2], [0, 1, 2]])],
    'full_like_shape_dtype':
        [('uint8', False, (2, 2), [[2, 2], [2, 2]]), ('uint8', False, (2, 2), [[2, 2], [2, 2]])],
    'arange_int':
        [('int32', False, (4,), [0, 1, 2, 3]), ('int64', False, (4,), [0, 1, 2, 3])],
    'arange_float':
        [('float32', False, (4,), [0.0, 1.0, 2.0, 3.0]), ('float64', False, (4,), [0.0, 1.0, 2.0, 3.0])],
    'arange_start_stop':
        [('int32', False, (3,), [1, 2, 3]), ('int64', False, (3,), [1, 2, 3])],
    'arange_start_float':
        [('float32', False, (3,), [1.0, 2.0, 3.0]), ('float64', False, (3,), [1.0, 2.0, 3.0])],
    'arange_step':
        [('float32', False, (4,), [0.0, 0.25, 0.5, 0.75]),
         ('float64', False, (4,), [0.0, 0.25, 0.5, 0.75])],
    'arange_neg_step':
        [('int32', False, (4,), [5, 4, 3, 2]), ('int64', False, (4,), [5, 4, 3, 2])],
    'arange_empty':
        [('int32', False, (0,), []), ('int64', False, (0,), [])],
    'arange_negative':
        [('int32', False, (0,), []), ('int64', False, (0,), [])],
    'arange_frac':
        [('float32', False, (3,), [0.0, 1.0, 2.0]), ('float64', False, (3,), [0.0, 1.0, 2.0])],
    'arange_np_i64':
        [('int32', False, (3,), [0, 1, 2]), ('int64', False, (3,), [0, 1, 2])],
    'arange_np_f16':
        [('float16', False, (3,), [0.0, 1.0, 2.0]), ('float16', False, (3,), [0.0, 1.0, 2.0])],
    'arange_dtype_f16':
        [('float16', False, (3,), [0.0, 1.0, 2.0]), ('float16', False, (3,), [0.0, 1.0, 2.0])],
    'arange_step_f16':
        [('float16', False, (10,),
          [0.0, 0.0999755859375, 0.199951171875, 0.300048828125, 0.39990234375, 0.5, 0.60009765625,
           0.7001953125, 0.7998046875, 0.89990234375]),
         ('float16', False, (10,),
          [0.0, 0.0999755859375, 0.199951171875, 0.300048828125, 0.39990234375, 0.5, 0.60009765625,
           0.7001953125, 0.7998046875, 0.89990234375])],
    'arange_step_int':
        [('int32', False, (4,), [0, 0, 0, 0]), ('int32', False, (4,), [0, 0, 0, 0])],
    'arange_pyfloat_dtype':
        [('float32', False, (2,), [1.0, 2.0]), ('float64', False, (2,), [1.0, 2.0])],
    'arange_array':
        [('int32', False, (3,), [0, 1, 2]), ('int64', False, (3,), [0, 1, 2])],
    'arange_weak_array':
        [('float32', False, (3,), [0.0, 1.0, 2.0]), ('float64', False, (3,), [0.0, 1.0, 2.0])],
    'arange_u8':
        [('uint8', False, (3,), [2, 4, 6]), ('uint8', False, (3,), [2, 4, 6])],
    'arange_bf16':
        [('bfloat16', False, (4,), [1.0, 2.0, 3.0, 4.0]),
         ('bfloat16', False, (4,), [1.0, 2.0, 3.0, 4.0])],
    'arange_step_bf16':
        [('bfloat16', False, (4,), [0.0, 0.25, 0.5, 0.75]),
         ('bfloat16', False, (4,), [0.0, 0.25, 0.5, 0.75])],
    'linspace_bf16':
        [('bfloat16', False, (3,), [0.0, 0.5, 1.0]), ('bfloat16', False, (3,), [0.0, 0.5, 1.0])],
    'arange_float_neg_empty':
        [('float32', False, (0,), []), ('float64', False, (0,), [])],
    'arange_i64':
        [('int32', False, (3,), [0, 1, 2]), ('int64', False, (3,), [0, 1, 2])],
    'linspace':
        [('float32', False, (5,), [0.0, 0.25, 0.5, 0.75, 1.0]),
         ('float64', False, (5,), [0.0, 0.25, 0.5, 0.75, 1.0])],
    'linspace_int':
        [('int32', False, (5,), [0, 2, 5, 7, 10]), ('int64', False, (5,), [0, 2, 5, 7, 10])],
    'linspace_no_endpoint':
        [('float32', False, (4,), [0.0, 0.25, 0.5, 0.75]),
         ('float64', False, (4,), [0.0, 0.25, 0.5, 0.75])],
    'linspace_retstep':
        [(('float32', False, (5,), [0.0, 0.25, 0.5, 0.75, 1.0]), ('float32', False, (), 0.25)),
         (('float64', False, (5,), [0.0, 0.25, 0.5, 0.75, 1.0]), ('float64', False, (), 0.25))],
    'linspace_one':
        [('float32', False, (1,), [0.0]), ('float64', False, (1,), [0.0])],
    'linspace_one_retstep':
        [(('float32', False, (1,), [0.0]), ('float32', False, (), nan)),
         (('float64', False, (1,), [0.0]), ('float64', False, (), nan))],
    'linspace_one_no_endpoint':
        [(('float32', False, (1,), [2.0]), ('float32', False, (), 3.0)),
         (('float64', False, (1,), [2.0]), ('float64', False, (), 3.0))],
    'linspace_zero':
        [(('float32', False, (0,), []), ('float32', False, (), nan)),
         (('float64', False, (0,), []), ('float64', False, (), nan))],
    'linspace_array':
        [('float32', False, (3, 2), [[0.0, 1.0], [1.5, 2.0], [3.0, 3.0]]),
         ('float64', False, (3, 2), [[0.0, 1.0], [1.5, 2.0], [3.0, 3.0]])],
    'linspace_array_axis':
        [('float32', False, (2, 3), [[0.0, 1.5, 3.0], [1.0, 2.0, 3.0]]),
         ('float64', False, (2, 3), [[0.0, 1.5, 3.0], [1.0, 2.0, 3.0]])],
    'linspace_3d':
        [('float32', False, (2, 4, 3),
          [[[0.0, 0.0, 0.0], [0.3333333432674408, 0.3333333432674408, 0.3333333432674408],
            [0.6666666865348816, 0.6666666865348816, 0.6666666865348816], [1.0, 1.0, 1.0]],
           [[0.0, 0.0, 0.0], [0.3333333432674408, 0.3333333432674408, 0.3333333432674408],
            [0.6666666865348816, 0.6666666865348816, 0.6666666865348816], [1.0, 1.0, 1.0]]]),
         ('float64', False, (2, 4, 3),
          [[[0.0, 0.0, 0.0], [0.3333333333333333, 0.3333333333333333, 0.3333333333333333],
            [0.6666666666666666, 0.6666666666666666, 0.6666666666666666], [1.0, 1.0, 1.0]],
           [[0.0, 0.0, 0.0], [0.3333333333333333, 0.3333333333333333, 0.3333333333333333],
            [0.6666666666666666, 0.6666666666666666, 0.6666666666666666], [1.0, 1.0, 1.0]]])],
    'linspace_f16':
        [('float16', False, (3,), [0.0, 0.5, 1.0]), ('float16', False, (3,), [0.0, 0.5, 1.0])],
    'linspace_complex':
        [('complex64', False, (3,), [0j, (0.5+0.5j), (1+1j)]),
         ('complex128', False, (3,), [0j, (0.5+0.5j), (1+1j)])],
    'linspace_f16_arg':
        [('float16', False, (3,), [0.0, 0.5, 1.0]), ('float16', False, (3,), [0.0, 0.5, 1.0])],
    'linspace_f64':
        [('float32', False, (4,), [0.0, 0.3333333432674408, 0.6666666865348816, 1.0]),
         ('float64', False, (4,), [0.0, 0.3333333333333333, 0.6666666666666666, 1.0])],
    'logspace':
        [('float32', False, (3,), [1.0, 10.0, 100.0]), ('float64', False, (3,), [1.0, 10.0, 100.0])],
    'logspace_base':
        [('float32', False, (3,), [1.0, 2.0, 4.0]), ('float64', False, (3,), [1.0, 2.0, 4.0])],
    'logspace_int':
        [('int32', False, (3,), [1, 10, 100]), ('int64', False, (3,), [1, 10, 100])],
    'logspace_no_endpoint':
        [('float32', False, (4,), [1.0, 1.778279423713684, 3.1622776985168457, 5.6234130859375]),
         ('float64', False, (4,), [1.0, 1.7782794100389228, 3.1622776601683795, 5.623413251903491])],
    'geomspace':
        [('float32', False, (5,), [1.0, 2.0, 4.000000476837158, 8.0, 16.000001907348633]),
         ('float64', False, (5,), [1.0, 2.0, 4.0, 7.999999999999999, 16.0])],
    'geomspace_neg':
        [('float32', False, (5,), [-1.0, -2.0, -4.000000476837158, -8.0, -16.000001907348633]),
         ('float64', False, (5,), [-1.0, -2.0, -4.0, -7.999999999999999, -16.0])],
    'geomspace_no_endpoint':
        [('float32', False, (4,), [1.0, 2.0, 4.000000476837158, 8.0]),
         ('float64', False, (4,), [1.0, 2.0, 4.0, 7.999999999999999])],
    'geomspace_axis':
        [('float32', False, (2, 4),
          [[1.0, 2.0, 4.000000476837158, 8.0], [10.0, 46.41588592529297, 215.4434356689453, 1000.0]]),
         ('float64', False, (2, 4),
          [[1.0, 1.9999999999999998, 3.999999999999999, 7.999999999999999],
           [10.0, 46.4158883361278, 215.44346900318845, 1000.0]])],
    'eye':
        [('float32', False, (3, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
         ('float64', False, (3, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])],
    'eye_rect_k':
        [('float32', False, (3, 2), [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]),
         ('float64', False, (3, 2), [[0.0, 1.0], [0.0, 0.0], [0.0, 0.0]])],
    'eye_int':
        [('int32', False, (2, 2), [[1, 0], [0, 1]]), ('int64', False, (2, 2), [[1, 0], [0, 1]])],
    'eye_far_k':
        [('float32', False, (2, 2), [[0.0, 0.0], [0.0, 0.0]]),
         ('float64', False, (2, 2), [[0.0, 0.0], [0.0, 0.0]])],
    'eye_empty':
        [('float32', False, (0, 0), []), ('float64', False, (0, 0), [])],
    'eye_bool':
        [('bool', False, (2, 3), [[False, False, False], [True, False, False]]),
         ('bool', False, (2, 3), [[False, False, False], [True, False, False]])],
    'identity':
        [('int8', False, (2, 2), [[1, 0], [0, 1]]), ('int8', False, (2, 2), [[1, 0], [0, 1]])],
    'identity_default':
        [('float32', False, (3, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
         ('float64', False, (3, 3), [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])],
    'tri':
        [('float32', False, (3, 2), [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]),
         ('float64', False, (3, 2), [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]])],
    'tri_int':
        [('int32', False, (2, 2), [[1, 0], [1, 1]]), ('int64', False, (2, 2), [[1, 0], [1, 1]])],
    'tri_k':
        [('float32', False, (3, 4), [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]),
         ('float64', False, (3, 4), [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])],
    'tril':
        [('float32', False, (3, 4),
          [[0.0, 0.0, 0.0, 0.0], [4.0, 5.0, 0.0, 0.0], [8.0, 9.0, 10.0, 0.0]]),
         ('float64', False, (3, 4),
          [[0.0, 0.0, 0.0, 0.0], [4.0, 5.0, 0.0, 0.0], [8.0, 9.0, 10.0, 0.0]])],
    'tril_k':
        [('int32', False, (2, 3, 3),
          [[[1, 2, 0], [4, 5, 6], [7, 8, 9]], [[10, 11, 0], [13, 14, 15], [16, 17, 18]]]),
         ('int64', False, (2, 3, 3),
          [[[1, 2, 0], [4, 5, 6], [7, 8, 9]], [[10, 11, 0], [13, 14, 15], [16, 17, 18]]])],
    'triu_neg_k':
        [('int32', False, (3, 3), [[0, 1, 2], [3, 4, 5], [0, 7, 8]]),
         ('int64', False, (3, 3), [[0, 1, 2], [3, 4, 5], [0, 7, 8]])],
    'triu_rect':
        [('float32', False, (3, 2), [[0.0, 2.0], [0.0, 0.0], [0.0, 0.0]]),
         ('float64', False, (3, 2), [[0.0, 2.0], [0.0, 0.0], [0.0, 0.0]])],
    'tril_weak':
        [('float32', True, (2, 2), [[1.5, 0.0], [1.5, 1.5]]),
         ('float64', True, (2, 2), [[1.5, 0.0], [1.5, 1.5]])],
    'diag_1d':
        [('int32', False, (3, 3), [[1, 0, 0], [0, 2, 0], [0, 0, 3]]),
         ('int64', False, (3, 3), [[1, 0, 0], [0, 2, 0], [0, 0, 3]])],
    'diag_1d_k':
        [('int32', False, (4, 4), [[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3], [0, 0, 0, 0]]),
         ('int64', False, (4, 4), [[0, 1, 0, 0], [0, 0, 2, 0], [0, 0, 0, 3], [0, 0, 0, 0]])],
    'diag_1d_negk':
        [('float32', False, (4, 4),
          [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.5, 0.0, 0.0, 0.0], [0.0, 2.5, 0.0, 0.0]]),
         ('float64', False, (4, 4),
          [[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.5, 0.0, 0.0, 0.0], [0.0, 2.5, 0.0, 0.0]])],
    'diagflat':
        [('int32', False, (5, 5),
          [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 4, 0]]),
         ('int64', False, (5, 5),
          [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [0, 2, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 4, 0]])],
    'diagflat_k':
        [('float32', False, (3, 3), [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]),
         ('float64', False, (3, 3), [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]])],
    'meshgrid_xy':
        [(('int32', False, (3, 2), [[0, 1], [0, 1], [0, 1]]),
          ('float32', False, (3, 2), [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])),
         (('int64', False, (3, 2), [[0, 1], [0, 1], [0, 1]]),
          ('float64', False, (3, 2), [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]))],
    'meshgrid_ij_sparse':
        [(('int32', False, (2, 1), [[0], [1]]), ('float32', False, (1, 3), [[0.0, 1.0, 2.0]])),
         (('int64', False, (2, 1), [[0], [1]]), ('float64', False, (1, 3), [[0.0, 1.0, 2.0]]))],
    'meshgrid_3':
        [(('int32', False, (3, 2, 4),
           [[[0, 0, 0, 0], [1, 1, 1, 1]], [[0, 0, 0, 0], [1, 1, 1, 1]], [[0, 0, 0, 0], [1, 1, 1, 1]]]),
          ('int32', False, (3, 2, 4),
           [[[0, 0, 0, 0], [0, 0, 0, 0]], [[1, 1, 1, 1], [1, 1, 1, 1]], [[2, 2, 2, 2], [2, 2, 2, 2]]]),
          ('float32', False, (3, 2, 4),
           [[[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]], [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]],
            [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]])),
         (('int64', False, (3, 2, 4),
           [[[0, 0, 0, 0], [1, 1, 1, 1]], [[0, 0, 0, 0], [1, 1, 1, 1]], [[0, 0, 0, 0], [1, 1, 1, 1]]]),
          ('int64', False, (3, 2, 4),
           [[[0, 0, 0, 0], [0, 0, 0, 0]], [[1, 1, 1, 1], [1, 1, 1, 1]], [[2, 2, 2, 2], [2, 2, 2, 2]]]),
          ('float64', False, (3, 2, 4),
           [[[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]], [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]],
            [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]]))],
    'meshgrid_3_ij':
        [(('int32', False, (2, 3, 4),
           [[[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]]),
          ('int32', False, (2, 3, 4),
           [[[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]], [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]]]),
          ('float32', False, (2, 3, 4),
           [[[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]],
            [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]])),
         (('int64', False, (2, 3, 4),
           [[[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], [[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]]),
          ('int64', False, (2, 3, 4),
           [[[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]], [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2]]]),
          ('float64', False, (2, 3, 4),
           [[[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]],
            [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]]))],
    'meshgrid_1':
        [(('int32', False, (3,), [0, 1, 2]),), (('int64', False, (3,), [0, 1, 2]),)],
    'meshgrid_0':
        [(), ()],
    'astype_f16':
        [('float16', False, (3,), [0.0, 1.0, 2.0]), ('float16', False, (3,), [0.0, 1.0, 2.0])],
    'astype_method':
        [('float32', False, (3,), [0.0, 1.0, 2.0]), ('float64', False, (3,), [0.0, 1.0, 2.0])],
    'astype_complex_bool':
        [('bool', False, (3,), [True, False, True]), ('bool', False, (3,), [True, False, True])],
    'astype_pyscalar':
        [('float32', False, (), 2.0), ('float64', False, (), 2.0)],
    'astype_none':
        [('float32', False, (), 2.0), ('float64', False, (), 2.0)],
    'astype_float_int':
        [('int32', False, (4,), [1, -1, 0, 2147483647]), ('int32', False, (4,), [1, -1, 0, 2147483647])],
    'astype_float_u8':
        [('uint8', False, (3,), [1, 255, 0]), ('uint8', False, (3,), [1, 255, 0])],
    'astype_bool_f':
        [('float32', False, (2,), [1.0, 0.0]), ('float32', False, (2,), [1.0, 0.0])],
    'view_f32_i32':
        [('int32', False, (3,), [0, 1065353216, 1073741824]),
         ('int32', False, (3,), [0, 1065353216, 1073741824])],
    'view_i8_i16':
        [('int16', False, (2,), [256, 770]), ('int16', False, (2,), [256, 770])],
    'view_i16_i8':
        [('int8', False, (4,), [0, 0, 1, 0]), ('int8', False, (4,), [0, 0, 1, 0])],
    'view_i32_i16_2d':
        [('int16', False, (2, 6), [[0, 0, 1, 0, 2, 0], [3, 0, 4, 0, 5, 0]]),
         ('int16', False, (2, 12),
          [[0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0], [3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0]])],
    'view_none':
        [('int32', False, (3,), [0, 1, 2]), ('int64', False, (3,), [0, 1, 2])],
    'view_bool_u8':
        [('uint8', False, (3,), [1, 1, 1]), ('uint8', False, (3,), [1, 1, 1])],
    'view_u8_bool':
        [('bool', False, (3,), [False, True, True]), ('bool', False, (3,), [False, True, True])],
    'view_c64_f32':
        [('float32', False, (4,), [1.0, 2.0, 3.0, -4.0]),
         ('float32', False, (4,), [1.0, 2.0, 3.0, -4.0])],
    'view_f32_c64':
        [('complex64', False, (2,), [(1+2j), (3+4j)]), ('complex64', False, (2,), [(1+2j), (3+4j)])],
    'view_0d':
        [('uint32', False, (), 1065353216), ('uint32', False, (), 1065353216)],
    'view_f16_bf16':
        [('bfloat16', False, (2,), [0.0078125, -2.0]), ('bfloat16', False, (2,), [0.0078125, -2.0])],
    'copy':
        [('int32', False, (2,), [0, 1]), ('int64', False, (2,), [0, 1])],
    'copy_weak':
        [('float32', True, (), 2.0), ('float64', True, (), 2.0)],
    'frombuffer':
        [('uint8', False, (4,), [1, 2, 3, 4]), ('uint8', False, (4,), [1, 2, 3, 4])],
    'frombuffer_i16':
        [('int16', False, (1,), [1027]), ('int16', False, (1,), [1027])],
}


JAXPRS = [  # (name, function, example args, JAX 0.12's printed jaxpr)
    ('zeros', lambda: jnp.zeros(3), (),
     '{ lambda ; . let a:f32[3] = broadcast_in_dim 0.0:f32[] in (a,) }'),
    ('zeros_plus_x', lambda x: jnp.zeros(3) + x, (1.0,),
     ('{ lambda ; a:f32[]. let\n'
      '    b:f32[3] = broadcast_in_dim 0.0:f32[]\n'
      '    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '    d:f32[3] = add b c\n'
      '  in (d,) }')),
    ('ones_int8', lambda: jnp.ones((2, 3), jnp.int8), (),
     '{ lambda ; . let a:i8[2,3] = broadcast_in_dim 1:i8[] in (a,) }'),
    ('full_traced', lambda x: jnp.full((2, 3), x), (1.0,),
     '{ lambda ; a:f32[]. let b:f32[2,3] = broadcast_in_dim a in (b,) }'),
    ('zeros_like_shape', lambda x: jnp.zeros_like(x, shape=(2, 2)), (X,),
     '{ lambda ; a:f32[3]. let b:f32[2,2] = broadcast_in_dim 0.0:f32[] in (b,) }'),
    ('full_like', lambda x: jnp.full_like(x, 2), (X,),
     '{ lambda ; a:f32[3]. let b:f32[3] = broadcast_in_dim 2.0:f32[] in (b,) }'),
    ('arange', lambda: jnp.arange(4), (),
     ('{ lambda ; . let\n'
      '    a:i32[4] = iota[dimension=0 dtype=int32 shape=(4,) sharding=None] \n'
      '  in (a,) }')),
    ('arange_float', lambda: jnp.arange(4.0), (),
     ('{ lambda ; . let\n'
      '    a:f32[4] = iota[dimension=0 dtype=float32 shape=(4,) sharding=None] \n'
      '  in (a,) }')),
    ('arange_step', lambda: jnp.arange(1, 10, 2), (),
     ('{ lambda ; . let\n'
      '    a:i32[5] = iota[dimension=0 dtype=int32 shape=(5,) sharding=None] \n'
      '    b:i32[5] = mul 2:i32[] a\n'
      '    c:i32[5] = add 1:i32[] b\n'
      '  in (c,) }')),
    ('arange_frac_step', lambda: jnp.arange(0, 1, 0.1), (),
     ('{ lambda ; . let\n'
      '    a:f32[10] = iota[dimension=0 dtype=float32 shape=(10,) sharding=None] \n'
      '    b:f32[10] = mul 0.10000000149011612:f32[] a\n'
      '    c:f32[10] = add 0.0:f32[] b\n'
      '  in (c,) }')),
    ('arange_f16_step', lambda: jnp.arange(0, 1, 0.5, dtype=jnp.float16), (),
     ('{ lambda ; . let\n'
      '    a:f32[2] = iota[dimension=0 dtype=float32 shape=(2,) sharding=None] \n'
      '    b:f32[2] = mul 0.5:f32[] a\n'
      '    c:f32[2] = add 0.0:f32[] b\n'
      '    d:f16[2] = convert_element_type[new_dtype=float16 weak_type=False] c\n'
      '  in (d,) }')),
    ('array_scalar', lambda x: jnp.array(1.0), (1.0,),
     '{ lambda ; a:f32[]. let  in (1.0:f32[],) }'),
    ('array_const', lambda x: jnp.array([1.0, 2.0]), (1.0,),
     '{ lambda a:f32[2]; b:f32[]. let  in (a,) }'),
    ('array_of_tracers', lambda x: jnp.array([x, x]), (1.0,),
     ('{ lambda ; a:f32[]. let\n'
      '    b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '    c:f32[1] = broadcast_in_dim b\n'
      '    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '    e:f32[1] = broadcast_in_dim d\n'
      '    f:f32[2] = concatenate[dimension=0] c e\n'
      '  in (f,) }')),
    ('array_of_tracer_vectors', lambda x: jnp.array([x, x]), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
      '    c:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
      '    d:f32[2,3] = concatenate[dimension=0] b c\n'
      '  in (d,) }')),
    ('array_mixed', lambda x: jnp.array((x[0], np.float32(1), 2)), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] a\n'
      '    c:f32[] = squeeze[dimensions=(0,)] b\n'
      '    d:f32[1] = broadcast_in_dim c\n'
      '    e:f32[1] = broadcast_in_dim 1.0:f32[]\n'
      '    f:f32[1] = broadcast_in_dim 2.0:f32[]\n'
      '    g:f32[3] = concatenate[dimension=0] d e f\n'
      '  in (g,) }')),
    ('array_nested', lambda x: jnp.array([[x[0], 2], [3, 4]]), (X,),
     ('{ lambda a:f32[2]; b:f32[3]. let\n'
      '    c:f32[1] = slice[limit_indices=(1,) start_indices=(0,) strides=None] b\n'
      '    d:f32[] = squeeze[dimensions=(0,)] c\n'
      '    e:f32[1] = broadcast_in_dim d\n'
      '    f:f32[1] = broadcast_in_dim 2.0:f32[]\n'
      '    g:f32[2] = concatenate[dimension=0] e f\n'
      '    h:f32[1,2] = broadcast_in_dim[broadcast_dimensions=(1,)] g\n'
      '    i:f32[1,2] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
      '    j:f32[2,2] = concatenate[dimension=0] h i\n'
      '  in (j,) }')),
    ('scalar_type_cast', lambda x: jnp.float32(x), (1,),
     ('{ lambda ; a:i32[]. let\n'
      '    b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '  in (b,) }')),
    ('astype', lambda x: jnp.astype(x, jnp.int32), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a\n'
      '  in (b,) }')),
    ('view_same_size', lambda x: x.view(jnp.int32), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:i32[3] = bitcast_convert_type[new_dtype=int32] a\n'
      '  in (b,) }')),
    ('view_smaller', lambda x: x.view(jnp.int8), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:i8[3,4] = bitcast_convert_type[new_dtype=int8] a\n'
      '    c:i8[12] = reshape[dimensions=None new_sizes=(12,) sharding=None] b\n'
      '  in (c,) }')),
    ('eye_k_int', lambda: jnp.eye(2, 3, 1, dtype=int), (),
     ('{ lambda ; . let\n'
      '    a:i32[2,3] = iota[dimension=0 dtype=int32 shape=(2, 3) sharding=None] \n'
      '    b:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None] \n'
      '    c:i32[2,3] = add a 1:i32[]\n'
      '    d:bool[2,3] = eq c b\n'
      '    e:i32[2,3] = convert_element_type[new_dtype=int32 weak_type=False] d\n'
      '  in (e,) }')),
    ('tri', lambda: jnp.tri(2), (),
     ('{ lambda ; . let\n'
      '    a:i32[2,2] = iota[dimension=0 dtype=int32 shape=(2, 2) sharding=None] \n'
      '    b:i32[2,2] = add a 0:i32[]\n'
      '    c:i32[2,2] = iota[dimension=1 dtype=int32 shape=(2, 2) sharding=None] \n'
      '    d:bool[2,2] = ge b c\n'
      '    e:f32[2,2] = convert_element_type[new_dtype=float32 weak_type=False] d\n'
      '  in (e,) }')),
    ('tril', lambda x: jnp.tril(x.reshape(1, 3)), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[1,3] = reshape[dimensions=None new_sizes=(1, 3) sharding=None] a\n'
      '    c:f32[1,3] = jit[\n'
      '      name=tril\n'
      '      jaxpr={ lambda ; b:f32[1,3]. let\n'
      '          d:i32[1,3] = iota[dimension=0 dtype=int32 shape=(1, 3) sharding=None] \n'
      '          e:i32[1,3] = add d 0:i32[]\n'
      '          f:i32[1,3] = iota[dimension=1 dtype=int32 shape=(1, 3) sharding=None] \n'
      '          g:bool[1,3] = ge e f\n'
      '          h:f32[1,3] = broadcast_in_dim 0.0:f32[]\n'
      '          c:f32[1,3] = select_n g h b\n'
      '        in (c,) }\n'
      '    ] b\n'
      '  in (c,) }')),
    ('triu', lambda x: jnp.triu(jnp.ones((2, 2, 3)) * x, 1), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[2,2,3] = broadcast_in_dim 1.0:f32[]\n'
      '    c:f32[1,1,3] = broadcast_in_dim[broadcast_dimensions=(2,)] a\n'
      '    d:f32[2,2,3] = mul b c\n'
      '    e:f32[2,2,3] = jit[\n'
      '      name=triu\n'
      '      jaxpr={ lambda ; d:f32[2,2,3]. let\n'
      '          f:i32[2,3] = iota[dimension=0 dtype=int32 shape=(2, 3) sharding=None] \n'
      '          g:i32[2,3] = add f 0:i32[]\n'
      '          h:i32[2,3] = iota[dimension=1 dtype=int32 shape=(2, 3) sharding=None] \n'
      '          i:bool[2,3] = ge g h\n'
      '          j:bool[2,2,3] = broadcast_in_dim[broadcast_dimensions=(1, 2)] i\n'
      '          k:f32[2,2,3] = broadcast_in_dim 0.0:f32[]\n'
      '          e:f32[2,2,3] = select_n j d k\n'
      '        in (e,) }\n'
      '    ] d\n'
      '  in (e,) }')),
    ('meshgrid', lambda x: jnp.meshgrid(x, x[:2]), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[2] = slice[limit_indices=(2,) start_indices=(0,) strides=None] a\n'
      '    c:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(0,)] b\n'
      '    d:f32[2,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
      '  in (d, c) }')),
    ('linspace', lambda x: jnp.linspace(0, 1, 5), (1.0,),
     ('let _linspace = { lambda ; a:i32[] b:i32[]. let\n'
      '    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n'
      '    e:f32[] = sub d c\n'
      '    f:f32[] = div e 4.0:f32[]\n'
      '    g:f32[4] = iota[dimension=0 dtype=float32 shape=(4,) sharding=None] \n'
      '    h:f32[4] = div g 4.0:f32[]\n'
      '    i:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] c\n'
      '    j:f32[4] = sub 1.0:f32[] h\n'
      '    k:f32[4] = mul i j\n'
      '    l:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] d\n'
      '    m:f32[1] = div l 4.0:f32[]\n'
      '    n:f32[4] = mul m g\n'
      '    o:f32[4] = add k n\n'
      '    p:f32[1] = broadcast_in_dim d\n'
      '    q:f32[5] = concatenate[dimension=0] o p\n'
      '  in (q,) } in\n'
      '{ lambda ; r:f32[]. let\n'
      '    s:f32[5] = jit[name=_linspace jaxpr=_linspace] 0:i32[] 1:i32[]\n'
      '  in (s,) }')),
    ('linspace_traced', lambda x: jnp.linspace(x, 2 * x, 3, endpoint=False), (1.0,),
     ('let _linspace = { lambda ; a:f32[] b:f32[]. let\n'
      '    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n'
      '    e:f32[] = sub d c\n'
      '    f:f32[] = div e 3.0:f32[]\n'
      '    g:f32[3] = iota[dimension=0 dtype=float32 shape=(3,) sharding=None] \n'
      '    h:f32[3] = div g 3.0:f32[]\n'
      '    i:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] c\n'
      '    j:f32[3] = sub 1.0:f32[] h\n'
      '    k:f32[3] = mul i j\n'
      '    l:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] d\n'
      '    m:f32[1] = div l 3.0:f32[]\n'
      '    n:f32[3] = mul m g\n'
      '    o:f32[3] = add k n\n'
      '  in (o,) } in\n'
      '{ lambda ; p:f32[]. let\n'
      '    q:f32[] = mul 2.0:f32[] p\n'
      '    r:f32[3] = jit[name=_linspace jaxpr=_linspace] p q\n'
      '  in (r,) }')),
    ('logspace', lambda x: jnp.logspace(0.0, 2.0, 3), (X,),
     ('let _linspace = { lambda ; a:f32[] b:f32[]. let\n'
      '    c:f32[] = sub b a\n'
      '    d:f32[] = div c 2.0:f32[]\n'
      '    e:f32[2] = iota[dimension=0 dtype=float32 shape=(2,) sharding=None] \n'
      '    f:f32[2] = div e 2.0:f32[]\n'
      '    g:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] a\n'
      '    h:f32[2] = sub 1.0:f32[] f\n'
      '    i:f32[2] = mul g h\n'
      '    j:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] b\n'
      '    k:f32[1] = div j 2.0:f32[]\n'
      '    l:f32[2] = mul k e\n'
      '    m:f32[2] = add i l\n'
      '    n:f32[1] = broadcast_in_dim b\n'
      '    o:f32[3] = concatenate[dimension=0] m n\n'
      '  in (o,) } in\n'
      '{ lambda ; p:f32[3]. let\n'
      '    q:f32[3] = jit[\n'
      '      name=_logspace\n'
      '      jaxpr={ lambda ; r:f32[] s:f32[] t:f32[]. let\n'
      '          u:f32[] = convert_element_type[new_dtype=float32 weak_type=False] r\n'
      '          v:f32[] = convert_element_type[new_dtype=float32 weak_type=False] s\n'
      '          w:f32[3] = jit[name=_linspace jaxpr=_linspace] u v\n'
      '          x:f32[] = convert_element_type[new_dtype=float32 weak_type=False] t\n'
      '          q:f32[3] = pow x w\n'
      '        in (q,) }\n'
      '    ] 0.0:f32[] 2.0:f32[] 10.0:f32[]\n'
      '  in (q,) }')),
    ('geomspace', lambda x: jnp.geomspace(1.0, 2.0, 3), (X,),
     ('let _geomspace = { lambda ; a:f32[] b:f32[]. let\n'
      '    c:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n'
      '    d:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n'
      '    e:f32[] = sign c\n'
      '    f:f32[] = div c e\n'
      '    g:f32[] = log f\n'
      '    h:f32[] = mul g 0.4342944920063019:f32[]\n'
      '    i:f32[] = div d e\n'
      '    j:f32[] = log i\n'
      '    k:f32[] = mul j 0.4342944920063019:f32[]\n'
      '    l:f32[3] = jit[\n'
      '      name=_logspace\n'
      '      jaxpr={ lambda ; h:f32[] k:f32[] m:f32[]. let\n'
      '          n:f32[3] = jit[name=_linspace jaxpr=_linspace] h k\n'
      '          o:f32[] = convert_element_type[new_dtype=float32 weak_type=False] m\n'
      '          l:f32[3] = pow o n\n'
      '        in (l,) }\n'
      '    ] h k 10.0:f32[]\n'
      '    p:f32[3] = mul e l\n'
      '  in (p,) } in\n'
      'let _linspace = { lambda ; q:f32[] r:f32[]. let\n'
      '    s:f32[] = sub r q\n'
      '    t:f32[] = div s 2.0:f32[]\n'
      '    u:f32[2] = iota[dimension=0 dtype=float32 shape=(2,) sharding=None] \n'
      '    v:f32[2] = div u 2.0:f32[]\n'
      '    w:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] q\n'
      '    x:f32[2] = sub 1.0:f32[] v\n'
      '    y:f32[2] = mul w x\n'
      '    z:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] r\n'
      '    ba:f32[1] = div z 2.0:f32[]\n'
      '    bb:f32[2] = mul ba u\n'
      '    bc:f32[2] = add y bb\n'
      '    bd:f32[1] = broadcast_in_dim r\n'
      '    be:f32[3] = concatenate[dimension=0] bc bd\n'
      '  in (be,) } in\n'
      '{ lambda ; bf:f32[3]. let\n'
      '    bg:f32[3] = jit[name=_geomspace jaxpr=_geomspace] 1.0:f32[] 2.0:f32[]\n'
      '  in (bg,) }')),
    ('diag', lambda x: jnp.diag(x), (X,),
     ('{ lambda ; a:f32[3]. let\n'
      '    b:f32[3,3] = jit[\n'
      '      name=_diag\n'
      '      jaxpr={ lambda ; a:f32[3]. let\n'
      '          c:f32[3] = pad[padding_config=((0, 0, 0),)] a 0.0:f32[]\n'
      '          d:i32[3,3] = iota[dimension=0 dtype=int32 shape=(3, 3) sharding=None] \n'
      '          e:i32[3,3] = iota[dimension=1 dtype=int32 shape=(3, 3) sharding=None] \n'
      '          f:i32[3,3] = add d 0:i32[]\n'
      '          g:bool[3,3] = eq f e\n'
      '          h:f32[3,1] = broadcast_in_dim[broadcast_dimensions=(0,)] c\n'
      '          b:f32[3,3] = jit[\n'
      '            name=_where\n'
      '            jaxpr={ lambda ; g:bool[3,3] h:f32[3,1] i:f32[]. let\n'
      '                j:f32[3,3] = broadcast_in_dim[broadcast_dimensions=(0, 1)] h\n'
      '                k:f32[3,3] = broadcast_in_dim i\n'
      '                b:f32[3,3] = select_n g k j\n'
      '              in (b,) }\n'
      '          ] g h 0.0:f32[]\n'
      '        in (b,) }\n'
      '    ] a\n'
      '  in (b,) }')),
]

# Tolerances for comparing with JAX's values: the same algorithm, so only rounding differs.
RTOL = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 2e-6, "float64": 1e-12,
         "complex64": 2e-6, "complex128": 1e-12}

MODES = [False, True]  # x64 off / on


def _check(got, want, name):
  if isinstance(want, tuple) and (not want or isinstance(want[0], tuple)):
    assert isinstance(got, tuple) and len(got) == len(want), name
    for g, w in zip(got, want):
      _check(g, w, name)
    return
  dt, weak, shape, values = want
  assert isinstance(got, ember.Array), (name, type(got))
  assert (got.dtype.name, got.weak_type, got.shape) == (dt, weak, shape), name
  val, ref = np.asarray(got), np.asarray(values).reshape(shape)
  if dt in RTOL:
    wide = np.complex128 if "complex" in dt else np.float64
    np.testing.assert_allclose(val.astype(wide), ref.astype(wide), rtol=RTOL[dt],
                               atol=RTOL[dt], equal_nan=True, err_msg=name)
  else:
    np.testing.assert_array_equal(val, ref.astype(val.dtype), err_msg=name)


# Cases whose jnp.array argument is built inside the function: under jit it is a tracer (as
# in JAX, every op binds to the current trace), so a shape / arange bound made from it is
# abstract and JAX 0.12 raises.
RAISE_UNDER_JIT = {
    "zeros_0d_array": (TypeError, "Shapes must be 1D sequences of concrete values of "
                                  "integer type"),
    "arange_array": (errors.ConcretizationTypeError, "jnp.arange argument 'stop'"),
    "arange_weak_array": (errors.ConcretizationTypeError, "jnp.arange argument 'stop'"),
}


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("x64", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax(name, x64, mode):
  if mode == "jit" and name in RAISE_UNDER_JIT:
    err, msg = RAISE_UNDER_JIT[name]
    with pytest.raises(err, match=msg), ember.enable_x64(x64):
      ember.jit(CASES[name])()
    return
  fn = CASES[name] if mode == "eager" else ember.jit(CASES[name])
  with warnings.catch_warnings(), ember.enable_x64(x64):
    warnings.simplefilter("ignore")  # explicit 64-bit dtypes warn with x64 off
    got = fn()
  _check(got, EXPECTED[name][x64], name)


@pytest.mark.parametrize("name, fn, args, want", JAXPRS, ids=[c[0] for c in JAXPRS])
def test_printed_jaxprs(name, fn, args, want):
  assert str(ember.make_jaxpr(fn)(*args)) == want


# --- values against NumPy (float64) ------------------------------------------------------

@pytest.mark.parametrize("args", [(5,), (0, 5), (2, 11, 3), (10, 2, -3), (0.5, 3.0),
                                  (-1.0, 1.0, 0.25), (0, 1, 0.1), (3, 3), (7, 1, 2)])
def test_arange_vs_numpy(args):
  want = np.arange(*args)
  for fn in (lambda: jnp.arange(*args), ember.jit(lambda: jnp.arange(*args))):
    got = fn()
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-6)


LINSPACE = [  # start, stop, num, endpoint, axis
    (0.0, 1.0, 7, True, 0), (-2.0, 3.5, 4, False, 0), (1.0, 1.0, 3, True, 0),
    (np.array([0.0, 1.0, 2.0]), 5.0, 6, True, 0), (np.array([0.0, 1.0]), 5.0, 6, True, 1),
    (np.zeros((2, 1)), np.arange(1.0, 4.0), 5, False, -1),
    (np.zeros((2, 3)), np.ones((2, 3)), 4, True, 1),
]


@pytest.mark.parametrize("start, stop, num, endpoint, axis", LINSPACE)
def test_linspace_vs_numpy(start, stop, num, endpoint, axis):
  want, want_step = np.linspace(start, stop, num, endpoint=endpoint, axis=axis, retstep=True)
  for fn in (jnp.linspace, ember.jit(jnp.linspace, static_argnums=(2, 3, 4, 5, 6))):
    got, step = fn(start, stop, num, endpoint, True, None, axis)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(step, np.float64), want_step, rtol=1e-6)


@pytest.mark.parametrize("start, stop, num, endpoint, base", [
    (0.0, 2.0, 5, True, 10.0), (-1.0, 1.0, 4, False, 2.0), (1.0, 3.0, 3, True, np.e)])
def test_logspace_vs_numpy(start, stop, num, endpoint, base):
  want = np.logspace(start, stop, num, endpoint=endpoint, base=base)
  for fn in (jnp.logspace, ember.jit(jnp.logspace, static_argnums=(2, 3))):
    got = fn(start, stop, num, endpoint, base)
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-6)


@pytest.mark.parametrize("start, stop, num, endpoint, axis", [
    (1.0, 1000.0, 4, True, 0), (-2.0, -32.0, 5, False, 0), (0.5, 8.0, 3, True, 0),
    (np.array([1.0, 2.0]), np.array([100.0, 4.0]), 3, True, 1)])
def test_geomspace_vs_numpy(start, stop, num, endpoint, axis):
  want = np.geomspace(start, stop, num, endpoint=endpoint, axis=axis)
  for fn in (jnp.geomspace, ember.jit(jnp.geomspace, static_argnums=(2, 3, 4, 5))):
    got = fn(start, stop, num, endpoint, None, axis)
    # f32 log10/pow round trips lose a few ulps (JAX gives 4.0000005 for 4).
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=5e-6)


@pytest.mark.parametrize("n, m, k", [(3, None, 0), (3, 5, 1), (4, 2, -1), (2, 3, 7), (0, 3, 0),
                                     (1, 1, 0)])
def test_matrices_vs_numpy(n, m, k):
  for dtype in (jnp.float32, jnp.int32, jnp.bool_):
    for fn, ref in ((jnp.eye, np.eye), (jnp.tri, np.tri)):
      for f in (lambda: fn(n, m, k, dtype), ember.jit(lambda: fn(n, m, k, dtype))):
        got = f()
        assert got.dtype == dtype.dtype and not got.weak_type
        np.testing.assert_array_equal(got, ref(n, m, k, dtype.dtype))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (2, 3, 4), (2, 1, 3, 3), (0, 2)])
@pytest.mark.parametrize("k", [-2, 0, 1])
def test_tril_triu_vs_numpy(shape, k):
  x = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
  for fn, ref in ((jnp.tril, np.tril), (jnp.triu, np.triu)):
    for f in (fn, ember.jit(lambda x: fn(x, k))):
      got = f(x, k) if f is fn else f(x)
      assert got.dtype == np.float32 and got.shape == shape
      np.testing.assert_array_equal(got, ref(x, k))


@pytest.mark.parametrize("k", [-2, -1, 0, 1, 3])
def test_diag_diagflat_vs_numpy(k):
  v = np.arange(1, 4, dtype=np.int32)
  m = np.arange(12, dtype=np.float32).reshape(3, 4)
  for f in (jnp.diag, ember.jit(jnp.diag, static_argnums=1)):
    np.testing.assert_array_equal(f(v, k), np.diag(v, k))
    np.testing.assert_array_equal(f(m, k), np.diag(m, k))
  np.testing.assert_array_equal(jnp.diagflat(m[:2, :2], k), np.diagflat(m[:2, :2], k))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid_vs_numpy(indexing, sparse):
  xs = [np.arange(2.0), np.arange(3, dtype=np.int32), np.linspace(0.0, 1.0, 4)]
  for n in (1, 2, 3):
    want = np.meshgrid(*xs[:n], indexing=indexing, sparse=sparse)
    for f in (jnp.meshgrid, ember.jit(lambda *a: jnp.meshgrid(*a, indexing=indexing, sparse=sparse))):
      got = f(*xs[:n], indexing=indexing, sparse=sparse) if f is jnp.meshgrid else f(*xs[:n])
      assert len(got) == n
      for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(np.asarray(g, np.float64), w, rtol=1e-6)


def test_full_and_friends_high_rank():
  for shape in [(), (0,), (2, 3, 4), (1, 2, 1, 3)]:
    for f, ref in ((jnp.zeros, np.zeros), (jnp.ones, np.ones), (jnp.empty, np.zeros)):
      np.testing.assert_array_equal(f(shape), ref(shape, np.float32))
    np.testing.assert_array_equal(jnp.full(shape, 2.5, jnp.float16), np.full(shape, 2.5))
    x = np.ones(shape, np.int8)
    for f, v in ((jnp.zeros_like, 0), (jnp.ones_like, 1), (jnp.empty_like, 0)):
      got = f(x)
      assert got.dtype == np.int8 and got.shape == shape
      np.testing.assert_array_equal(got, np.full(shape, v, np.int8))
  got = jnp.full((2, 3, 4), jnp.arange(4.0))
  np.testing.assert_array_equal(got, np.broadcast_to(np.arange(4.0), (2, 3, 4)))


# --- inside jit, with traced arguments -----------------------------------------------------

def test_creation_with_traced_arguments():
  f = ember.jit(lambda x: jnp.zeros(3) + x)
  r = f(2.0)
  assert r.dtype == np.float32 and not r.weak_type
  np.testing.assert_array_equal(r, [2.0, 2.0, 2.0])
  r = ember.jit(lambda x: jnp.array([x, 2 * x, 3]))(np.float32(1.5))
  assert r.dtype == np.float32 and r.shape == (3,)
  np.testing.assert_array_equal(r, [1.5, 3.0, 3.0])
  r = ember.jit(lambda x: jnp.array([[x, x], [x, 1]], ndmin=3))(np.int8(4))
  assert r.dtype == np.int8 and r.shape == (1, 2, 2)  # the weak 1 takes x's int8
  np.testing.assert_array_equal(r, [[[4, 4], [4, 1]]])
  r = ember.jit(lambda x: jnp.full_like(x, 7, shape=(2,)))(np.ones(3, np.int16))
  assert r.dtype == np.int16 and r.shape == (2,)
  r = ember.jit(lambda a, b: jnp.linspace(a, b, 5))(0.0, 2.0)
  np.testing.assert_allclose(r, np.linspace(0.0, 2.0, 5), rtol=1e-6)
  r = ember.jit(lambda x: jnp.tril(x) + jnp.eye(3))(np.ones((3, 3), np.float32))
  np.testing.assert_array_equal(r, np.tril(np.ones((3, 3))) + np.eye(3))
  r = ember.jit(lambda n: jnp.arange(n), static_argnums=0)(4)
  np.testing.assert_array_equal(r, np.arange(4))
  r = ember.jit(lambda x: x.view(jnp.uint32))(np.float32([1.0, -2.0]))
  np.testing.assert_array_equal(r, np.float32([1.0, -2.0]).view(np.uint32))
  r = ember.jit(lambda x: jnp.asarray(x, jnp.float16))(np.arange(3))
  assert r.dtype == np.float16


# --- object identity, copies and NumPy inputs ----------------------------------------------

def test_asarray_identity_and_copies():
  x = jnp.arange(3)
  assert jnp.asarray(x) is x and jnp.asarray(x, dtype=jnp.int32) is x
  y = jnp.array(x)
  assert y is not x and isinstance(y, ember.Array)
  np.testing.assert_array_equal(y, x)
  z = jnp.copy(x)
  assert z is not x and z.dtype == x.dtype
  c = jnp.astype(x, jnp.int32, copy=True)
  assert c is not x
  n = np.arange(3.0)
  a = jnp.asarray(n)
  assert n.flags.writeable  # the caller's array is left alone ...
  n[0] = 100.0
  assert float(a[0]) == 0.0  # ... and later writes do not reach the ember array


def test_dtype_warnings():
  with pytest.warns(UserWarning, match="float64 requested in zeros .* truncated to dtype float32"):
    assert jnp.zeros(2, jnp.float64).dtype == np.float32
  with pytest.warns(UserWarning, match="int64 requested in arange"):
    jnp.arange(3, dtype="int64")
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert jnp.zeros(2, float).dtype == np.float32  # Python types are not "explicit" 64-bit
    assert jnp.array([1], int).dtype == np.int32
    with ember.enable_x64():
      assert jnp.zeros(2, jnp.float64).dtype == np.float64
  with pytest.warns(DeprecationWarning, match="complex to real"):
    assert jnp.astype(jnp.array([1 + 2j]), jnp.float32).dtype == np.float32


def test_frombuffer_and_empty_inputs():
  np.testing.assert_array_equal(jnp.frombuffer(b"\x01\x02", dtype=jnp.uint8), [1, 2])
  assert jnp.array([]).shape == (0,) and jnp.array([[]]).shape == (1, 0)
  assert jnp.array(np.zeros((2, 0, 3))).shape == (2, 0, 3)
  assert jnp.linspace(0, 1, 0).shape == (0,) and jnp.arange(0).shape == (0,)


# --- errors --------------------------------------------------------------------------------

ERRORS = [
    (lambda: jnp.zeros((2, -1)), ValueError, r"\(2, -1\)"),
    (lambda: jnp.ones(-3), ValueError, r"\(-3,\)"),
    (lambda: jnp.zeros(3, 4), TypeError, "Did you accidentally write"),
    (lambda: jnp.zeros(2.0), TypeError, "Shapes must be 1D sequences"),
    (lambda: jnp.zeros(x for x in range(2)), TypeError, "sequence"),
    (lambda: jnp.zeros(2, dtype="foo"), TypeError, "foo"),
    (lambda: jnp.zeros(2, dtype=object), TypeError, "object"),
    (lambda: jnp.zeros(2, dtype=jnp.ones(2)), ValueError, "dtype=arr.dtype"),
    (lambda: jnp.array([1, "a"]), TypeError, "not a valid ember array type"),
    (lambda: jnp.array("a"), TypeError, "not a valid ember array type"),
    (lambda: jnp.array(np.array(["a"])), TypeError, "not a valid ember array type"),
    (lambda: jnp.array(np.array([1, "a"], dtype=object)), TypeError, "object"),
    (lambda: jnp.array({1: 2}), TypeError, "object"),
    (lambda: jnp.array(None), ValueError, "None is not a valid value"),
    (lambda: jnp.array([1, None]), ValueError, "None is not a valid value"),
    (lambda: jnp.array([[1, 2], [3]]), ValueError, "inhomogeneous"),
    (lambda: jnp.array([jnp.ones(2), jnp.ones(3)]), TypeError, "concatenate"),
    (lambda: jnp.array(2**40), OverflowError, "int32"),
    (lambda: jnp.array([2**40]), OverflowError, "int32"),
    (lambda: jnp.array([np.int64(2**40)]), OverflowError, "int32"),
    (lambda: jnp.array([7, -1], dtype=jnp.uint8), OverflowError, "-1 out of bounds for uint8"),
    (lambda: jnp.array(300, dtype=jnp.uint8), OverflowError, "uint8"),
    (lambda: jnp.array([1.0], order="F"), NotImplementedError, "order='K'"),
    (lambda: jnp.arange(1j), ValueError, "complex"),
    (lambda: jnp.arange([3]), TypeError, "arange requires ndarray, scalar, or None"),
    (lambda: jnp.arange(jnp.ones(2)), ValueError, "arguments must be scalars"),
    (lambda: jnp.arange(0, 10, 0), ZeroDivisionError, "division by zero"),
    (lambda: jnp.arange(3, dtype=bool), TypeError, "iota does not accept dtype bool"),
    (lambda: jnp.linspace(0, 1, -1), ValueError, "Number of samples, -1, must be non-negative"),
    (lambda: jnp.eye(-1), ValueError, "negative dimensions are not allowed"),
    (lambda: jnp.eye(2, k=1.5), ValueError, "k must be a scalar integer"),
    (lambda: jnp.tri(2, k=0.5), TypeError, "offset must be an integer"),
    (lambda: jnp.tril(jnp.ones(3)), ValueError, "tril must be at least 2D"),
    (lambda: jnp.triu(jnp.ones(3)), ValueError, "triu must be at least 2D"),
    (lambda: jnp.diag(jnp.ones((2, 2, 2))), ValueError, "diag input must be 1d or 2d"),
    (lambda: jnp.meshgrid(jnp.ones((2, 2))), ValueError, r"must be 1D, got shapes \[\(2, 2\)\]"),
    (lambda: jnp.meshgrid(jnp.arange(2), indexing="foo"), ValueError, "'xy' and 'ij'"),
    (lambda: jnp.meshgrid(jnp.arange(2), copy=False), ValueError, "copy=True"),
    (lambda: jnp.ones((), jnp.int16).view(jnp.int8), ValueError, "0d array"),
    (lambda: jnp.ones(3, jnp.int8).view(jnp.int16), ValueError, "divisor"),
    (lambda: jnp.ones(3).view(jnp.int32, np.ndarray), ValueError, "type"),
    (lambda: jnp.full((2, 2), [1, 2]), TypeError, "full requires ndarray or scalar"),
    (lambda: jnp.full((2,), jnp.arange(3)), ValueError, r"\(3,\).*\(2,\)"),
    (lambda: jnp.zeros_like([1, 2]), TypeError, "zeros_like requires ndarray or scalar"),
    (lambda: jnp.full_like(jnp.ones(3), [1, 2, 3]), TypeError, "full_like requires"),
    (lambda: jnp.astype([1, 2], jnp.float32), TypeError, "astype requires"),
    (lambda: jnp.float32(None), ValueError, "None is not a valid value"),
]


@pytest.mark.parametrize("fn, exc, match", ERRORS)
def test_errors(fn, exc, match):
  with pytest.raises(exc, match=match):
    fn()


@pytest.mark.parametrize("fn, what", [
    (lambda n: jnp.arange(n), "jnp.arange argument 'stop'"),
    (lambda n: jnp.arange(0, n), "jnp.arange argument 'stop'"),
    (lambda n: jnp.arange(n, 10), "jnp.arange argument 'start'"),
    (lambda n: jnp.arange(0, 10, n), "jnp.arange argument 'step'"),
    (lambda n: jnp.linspace(0, 1, n), "'num' argument of jnp.linspace"),
    (lambda n: jnp.eye(n), "argument 'N' of jnp.eye()"),
])
def test_traced_static_arguments(fn, what):
  with pytest.raises(errors.ConcretizationTypeError) as info:
    ember.jit(fn)(3)
  msg = str(info.value)
  assert what in msg and "static_argnums" in msg and "int32[]" in msg
  assert "argument n" in msg  # names the jit argument the value came from


def test_traced_shape_arguments():
  for fn in (lambda n: jnp.zeros(n), lambda n: jnp.full((n,), 1),
             lambda n: jnp.ones_like(jnp.ones(2), shape=(n, 2))):
    with pytest.raises(TypeError, match="static_argnums"):
      ember.jit(fn)(3)


def test_integer_casts_that_wrap():
  # NumPy integer scalars wrap when cast (JAX 0.12 values), except in a list bound for a
  # signed type (OverflowError above), on NumPy 1.26 as on NumPy 2
  np.testing.assert_array_equal(jnp.array([np.int64(300)], dtype=jnp.uint8), [44])
  np.testing.assert_array_equal(jnp.array(np.int64(300), dtype=jnp.uint8), 44)
  np.testing.assert_array_equal(jnp.array(np.int64(2**40)), 0)
  np.testing.assert_array_equal(jnp.array([np.int64(-1)], dtype=jnp.uint32), [2**32 - 1])


def test_array_of_bfloat16_array_scalars():
  # JAX 0.12: a list of bfloat16 Array scalars (or arrays) stacks as bfloat16
  a = jnp.asarray([1.5, -2.0], jnp.bfloat16)
  for out, want in [(jnp.array([a[0], a[1]]), [1.5, -2.0]), (jnp.array([a, a]), [[1.5, -2.0]] * 2),
                    (jnp.array([a[0], 1.0]), [1.5, 1.0])]:
    assert out.dtype == jnp.bfloat16 and not out.weak_type
    np.testing.assert_array_equal(np.asarray(out, np.float32), want)
  out = ember.jit(lambda x: jnp.array([x[0], x[1]]))(a)
  assert out.dtype == jnp.bfloat16
  np.testing.assert_array_equal(np.asarray(out, np.float32), [1.5, -2.0])


def test_jax_array_objects_in_binary_operators():
  # an object with __jax_array__ is the array it stands for on either side of an Array's
  # operator (JAX 0.12); with a Python number it has no operator of its own
  class Wrapped:
    def __init__(self, x):
      self.x = x

    def __jax_array__(self):
      return self.x
  w = Wrapped(jnp.arange(3.0))
  np.testing.assert_array_equal(jnp.ones(3) + w, [1.0, 2.0, 3.0])
  np.testing.assert_array_equal(w - jnp.ones(3), [-1.0, 0.0, 1.0])
  np.testing.assert_array_equal(jnp.ones(3) < w, [False, False, True])
  assert float(jnp.ones(3) @ w) == 3.0
  np.testing.assert_array_equal(ember.jit(lambda x: x * w)(jnp.ones(3)), [0.0, 1.0, 2.0])
  with pytest.raises(TypeError, match="unsupported operand"):
    w + 1

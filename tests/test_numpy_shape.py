"""ember.numpy shape manipulation against NumPy: each case is written once as
`lambda m, *xs: m.func(...)` and run with m=numpy (the reference) and m=ember.numpy
(eager and under jit), over several dtypes; plus weak types, Array methods, printed
jaxprs (strings from JAX 0.12) and the errors users hit."""
import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from numpy2 import np2

f32, i32 = np.float32, np.int32
bf16 = np.dtype(ml_dtypes.bfloat16)


def data(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    return rng.integers(-5, 10, shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


def check(out, expected, weak=False):
  expected = np.asarray(expected)
  assert isinstance(out, ember.Array), type(out)
  assert out.dtype == expected.dtype, (out.dtype, expected.dtype)
  assert out.weak_type == weak
  assert out.shape == expected.shape, (out.shape, expected.shape)
  # Pure data movement: results are bit-exact (compare as float64 so NaNs and bf16 compare).
  got = np.asarray(out)
  if expected.dtype == bf16 or expected.dtype.kind == "f":
    got, expected = got.astype(np.float64), expected.astype(np.float64)
  np.testing.assert_array_equal(got, expected)


def run(case, args):
  """The case with ember.numpy, eager and jitted, against NumPy."""
  expected = case(np2, *args)
  outs = [case(jnp, *args), ember.jit(lambda *a: case(jnp, *a))(*args)]
  for out in outs:
    if isinstance(expected, (list, tuple)):
      assert isinstance(out, (list, tuple)) and len(out) == len(expected)
      for o, e in zip(out, expected):
        check(o, e)
    else:
      check(out, expected)


CASES = [
    # id, case, input shapes
    ("reshape", lambda m, x: m.reshape(x, (4, -1)), [(2, 3, 4)]),
    ("reshape_F", lambda m, x: m.reshape(x, (3, 8), order="F"), [(2, 3, 4)]),
    ("reshape_int", lambda m, x: m.reshape(x, 24), [(2, 3, 4)]),
    ("reshape_0d", lambda m, x: m.reshape(x, (1, 1, 1)), [()]),
    ("reshape_empty", lambda m, x: m.reshape(x, (-1, 3)), [(0, 3)]),
    ("ravel", lambda m, x: m.ravel(x), [(2, 3, 4)]),
    ("ravel_F", lambda m, x: m.ravel(x, order="F"), [(2, 3, 4)]),
    ("transpose", lambda m, x: m.transpose(x), [(2, 3, 4)]),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, -1, 0)), [(2, 3, 4)]),
    ("permute_dims", lambda m, x: m.permute_dims(x, (2, 0, 1)), [(2, 3, 4)]),
    ("matrix_transpose", lambda m, x: m.matrix_transpose(x), [(2, 3, 4)]),
    ("swapaxes", lambda m, x: m.swapaxes(x, -1, 0), [(2, 3, 4)]),
    ("moveaxis", lambda m, x: m.moveaxis(x, (0, 1), (-1, 0)), [(2, 3, 4)]),
    ("rollaxis", lambda m, x: m.rollaxis(x, 2, 1), [(2, 3, 4)]),
    ("expand_dims", lambda m, x: m.expand_dims(x, (0, -1)), [(2, 3)]),
    ("squeeze_all", lambda m, x: m.squeeze(x), [(1, 2, 1, 3)]),
    ("squeeze_axis", lambda m, x: m.squeeze(x, axis=-2), [(1, 2, 1, 3)]),
    ("concatenate", lambda m, x, y: m.concatenate([x, y, x], axis=1), [(2, 3), (2, 0)]),
    ("concatenate_neg", lambda m, x, y: m.concatenate((x, y), axis=-1), [(2, 3), (2, 1)]),
    ("concatenate_none", lambda m, x, y: m.concatenate([x, y], axis=None), [(2, 3), (4,)]),
    ("concatenate_array", lambda m, x: m.concatenate(x, axis=1), [(2, 3, 4)]),
    ("concat", lambda m, x, y: m.concat([x, y], axis=0), [(2, 3), (1, 3)]),
    ("stack", lambda m, x, y: m.stack([x, y], axis=-1), [(2, 3), (2, 3)]),
    ("stack_0d", lambda m, x, y: m.stack([x, y]), [(), ()]),
    ("stack_array", lambda m, x: m.stack(x, axis=1), [(2, 3)]),
    ("hstack", lambda m, x, y: m.hstack([x, y]), [(2, 3), (2, 1)]),
    ("hstack_1d", lambda m, x, y: m.hstack([x, y]), [(3,), ()]),
    ("vstack", lambda m, x, y: m.vstack([x, y]), [(3,), (2, 3)]),
    ("dstack", lambda m, x, y: m.dstack([x, y]), [(3,), (1, 3)]),
    ("column_stack", lambda m, x, y: m.column_stack([x, y]), [(3,), (3, 2)]),
    ("append", lambda m, x, y: m.append(x, y), [(2, 3), (2,)]),
    ("append_axis", lambda m, x, y: m.append(x, y, axis=1), [(2, 3), (2, 2)]),
    ("split", lambda m, x: m.split(x, 2, axis=1), [(2, 4, 3)]),
    ("split_indices", lambda m, x: m.split(x, [1, -2, 10], axis=0), [(5, 2)]),
    ("array_split", lambda m, x: m.array_split(x, 3), [(5, 2)]),
    ("hsplit", lambda m, x: m.hsplit(x, [1]), [(2, 3)]),
    ("hsplit_1d", lambda m, x: m.hsplit(x, 2), [(4,)]),
    ("vsplit", lambda m, x: m.vsplit(x, 2), [(4, 3)]),
    ("dsplit", lambda m, x: m.dsplit(x, [1]), [(1, 2, 3)]),
    ("unstack", lambda m, x: m.unstack(x, axis=1), [(2, 3, 1)]),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), [(3, 1)]),
    ("broadcast_to_int", lambda m, x: m.broadcast_to(x, 5), [()]),
    ("broadcast_arrays", lambda m, x, y: m.broadcast_arrays(x, y), [(3, 1), (1, 4)]),
    ("tile", lambda m, x: m.tile(x, (2, 1, 2)), [(2, 3)]),
    ("tile_int", lambda m, x: m.tile(x, 3), [(2, 2)]),
    ("tile_0d", lambda m, x: m.tile(x, (2, 2)), [()]),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=1), [(2, 3)]),
    ("repeat_flat", lambda m, x: m.repeat(x, 3), [(2, 2)]),
    ("repeat_array", lambda m, x: m.repeat(x, np.array([1, 0, 3]), axis=0), [(3, 2)]),
    ("repeat_zero", lambda m, x: m.repeat(x, 0, axis=0), [(3, 2)]),
    ("flip", lambda m, x: m.flip(x), [(2, 3, 4)]),
    ("flip_axes", lambda m, x: m.flip(x, (0, -1)), [(2, 3, 4)]),
    ("fliplr", lambda m, x: m.fliplr(x), [(2, 3)]),
    ("flipud", lambda m, x: m.flipud(x), [(2, 3)]),
    ("roll_flat", lambda m, x: m.roll(x, 4), [(2, 3)]),
    ("roll_axis", lambda m, x: m.roll(x, -1, axis=1), [(2, 3, 4)]),
    ("roll_multi", lambda m, x: m.roll(x, (1, 7), axis=(0, 2)), [(2, 3, 4)]),
    ("roll_empty", lambda m, x: m.roll(x, 2, axis=0), [(0, 3)]),
    ("rot90", lambda m, x: m.rot90(x), [(2, 3, 4)]),
    ("rot90_k2", lambda m, x: m.rot90(x, 2, axes=(1, 2)), [(2, 3, 4)]),
    ("rot90_k3", lambda m, x: m.rot90(x, -1, axes=(2, 0)), [(2, 3, 4)]),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), [()]),
    ("atleast_2d", lambda m, x, y: m.atleast_2d(x, y), [(), (3,)]),
    ("atleast_3d", lambda m, x, y, z: m.atleast_3d(x, y, z), [(), (3,), (2, 3)]),
    ("atleast_3d_4d", lambda m, x: m.atleast_3d(x), [(1, 2, 3, 4)]),
    ("resize", lambda m, x: m.resize(x, (3, 5)), [(2, 3)]),
    ("resize_smaller", lambda m, x: m.resize(x, 4), [(2, 3)]),
    ("delete", lambda m, x: m.delete(x, 1, axis=1), [(2, 3)]),
    ("delete_many", lambda m, x: m.delete(x, np.array([0, -1, 2])), [(2, 3)]),
    ("delete_slice", lambda m, x: m.delete(x, slice(1, None, 2), axis=0), [(5, 2)]),
    ("insert", lambda m, x, v: m.insert(x, 1, v, axis=1), [(2, 3), (2,)]),
    ("insert_many", lambda m, x, v: m.insert(x, np.array([3, 0, 3]), v), [(3,), (3,)]),
    ("insert_flat", lambda m, x, v: m.insert(x, -1, v), [(2, 2), ()]),
    ("block", lambda m, a, b, c: m.block([[a, b], [c]]), [(2, 2), (2, 1), (1, 3)]),
    ("block_1d", lambda m, a, b: m.block([a, b]), [(2,), ()]),
    ("pad_constant", lambda m, x: m.pad(x, ((1, 0), (2, 3))), [(2, 3)]),
    ("pad_constant_int", lambda m, x: m.pad(x, 2, constant_values=1), [(2, 3)]),
    ("pad_constant_pairs", lambda m, x: m.pad(x, 1, constant_values=((1, 2), (3, 0))), [(2, 3)]),
    ("pad_edge", lambda m, x: m.pad(x, ((1, 2), (0, 3)), mode="edge"), [(2, 3)]),
    ("pad_wrap", lambda m, x: m.pad(x, ((4, 7), (1, 0)), mode="wrap"), [(3, 2)]),
    ("pad_reflect", lambda m, x: m.pad(x, ((5, 2), (1, 1)), mode="reflect"), [(3, 2)]),
    ("pad_reflect_1", lambda m, x: m.pad(x, 2, mode="reflect"), [(1,)]),
    ("pad_symmetric", lambda m, x: m.pad(x, ((4, 7), (2, 2)), mode="symmetric"), [(3, 2)]),
    ("pad_empty_axis", lambda m, x: m.pad(x, ((0, 0), (1, 1)), mode="edge"), [(0, 2)]),
]

_DTYPES = [f32, i32, np.bool_, bf16]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
@pytest.mark.parametrize("name,case,shapes", CASES, ids=[c[0] for c in CASES])
def test_shape_functions(name, case, shapes, dtype):
  args = [data(s, dtype, seed=i) for i, s in enumerate(shapes)]
  run(case, args)


ARITH_PADS = [
    ("reflect_odd", lambda m, x: m.pad(x, ((5, 3),), mode="reflect", reflect_type="odd")),
    ("symmetric_odd", lambda m, x: m.pad(x, 4, mode="symmetric", reflect_type="odd")),
    ("linear_ramp", lambda m, x: m.pad(x, ((3, 2),), mode="linear_ramp", end_values=(5, -1))),
    ("linear_ramp_0", lambda m, x: m.pad(x, 2, mode="linear_ramp")),
]


@pytest.mark.parametrize("dtype", [f32, i32], ids=str)
@pytest.mark.parametrize("name,case", ARITH_PADS, ids=[c[0] for c in ARITH_PADS])
def test_pad_modes_with_arithmetic(name, case, dtype):
  x = (np.arange(4) ** 2 * 3).astype(dtype)
  expected = case(np, x)
  for out in (case(jnp, x), ember.jit(lambda x: case(jnp, x))(x)):
    assert out.dtype == dtype and not out.weak_type
    # linear_ramp: NumPy computes the float ramp in float64, ember in float32
    np.testing.assert_allclose(np.asarray(out, np.float64), expected, rtol=1e-6)


def test_repeat_total_repeat_length():
  x = np.arange(3, dtype=i32)
  reps = np.array([1, 0, 2], i32)
  for total, expected in [(None, [0, 2, 2]), (5, [0, 2, 2, 2, 2]), (2, [0, 2])]:
    check(jnp.repeat(x, reps, total_repeat_length=total), np.array(expected, i32))
  check(jnp.repeat(x, 2, total_repeat_length=4), np.array([0, 0, 1, 1], i32))
  # traced repeats need a static total length
  f = ember.jit(lambda x, r: jnp.repeat(x, r, total_repeat_length=5))
  check(f(x, reps), np.array([0, 2, 2, 2, 2], i32))
  with pytest.raises(ember.errors.ConcretizationTypeError, match="total_repeat_length"):
    ember.jit(lambda x, r: jnp.repeat(x, r))(x, reps)


def test_repeat_many_pieces_uses_take():
  x = data((40, 2), f32)
  reps = np.arange(40) % 3
  check(jnp.repeat(x, reps, axis=0), np.repeat(x, reps, axis=0))


def test_roll_with_traced_shift():
  x = data((2, 5), f32)
  for shift in (2, -7, 0):
    out = ember.jit(lambda x, s: jnp.roll(x, s, axis=1))(x, shift)
    check(out, np.roll(x, shift, axis=1))
  out = ember.jit(lambda x, s: jnp.roll(x, s))(x, 3)
  check(out, np.roll(x, 3))


def test_scalars_and_python_values():
  check(jnp.reshape(2.0, (1, 1)), np.full((1, 1), 2.0, f32), weak=True)
  check(jnp.stack([1.0, 2.0]), np.array([1.0, 2.0], f32), weak=True)
  check(jnp.hstack([1.0, 2.0]), np.array([1.0, 2.0], f32), weak=True)
  check(jnp.atleast_1d(3), np.array([3], i32), weak=True)
  check(jnp.tile(2.0, 3), np.full(3, 2.0, f32), weak=True)
  check(jnp.concatenate([np.arange(2.0), np.arange(2, dtype=i32)]), np.array([0, 1, 0, 1], f32))
  check(jnp.concatenate([np.ones(2, f32)], dtype=i32), np.ones(2, i32))
  check(jnp.stack([np.ones(2, i32), np.ones(2, f32)]), np.ones((2, 2), f32))
  check(jnp.pad(np.arange(3, dtype=i32), 1, constant_values=2.7), np.array([2, 0, 1, 2, 2], i32))
  w = jnp.atleast_1d(1.0)
  check(jnp.concatenate([w, w]), np.ones(2, f32), weak=True)
  check(jnp.concatenate([w, np.ones(1, f32)]), np.ones(2, f32))
  check(jnp.pad(w, 1), np.array([0, 1, 0], f32), weak=True)
  check(jnp.squeeze(jnp.expand_dims(w, 0)), np.array(1, f32), weak=True)
  a, b = jnp.broadcast_arrays(np.ones((2, 1), f32), 1.0)
  assert not a.weak_type and b.weak_type and b.shape == (2, 1)
  assert jnp.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
  assert jnp.broadcast_shapes(4, (1,)) == (4,)
  assert jnp.shape(np.ones((2, 3))) == (2, 3) and jnp.shape(2.0) == ()
  assert jnp.ndim(np.ones((2, 3))) == 2 and jnp.ndim(1.0) == 0
  x = data((2, 3, 4), f32)
  assert jnp.size(x) == 24 and jnp.size(x, 1) == 3 and jnp.size(x, (0, 2)) == 8
  assert jnp.shape(ember.numpy.ones((2, 0))) == (2, 0)


def test_bf16_and_x64_dtypes_preserved():
  x = data((2, 3), bf16)
  check(jnp.transpose(x), x.T)
  with ember.enable_x64():
    x64 = np.arange(6, dtype=np.int64).reshape(2, 3)
    check(jnp.reshape(x64, (3, 2)), x64.reshape(3, 2))
    check(jnp.concatenate([x64, np.ones((1, 3), np.float64)]),
          np.concatenate([x64, np.ones((1, 3))]))


def test_array_methods():
  x = data((2, 3, 4), f32)
  a = ember.numpy.asarray(x)
  for f in (lambda a: a, ember.jit(lambda a: a)):
    check(f(a).reshape(4, 6), x.reshape(4, 6))
    check(f(a).reshape((4, -1)), x.reshape(4, -1))
    check(f(a).reshape([24]), x.reshape(24))
    check(f(a).reshape(24), x.reshape(24))
    check(f(a).reshape((6, 4), order="F"), x.reshape((6, 4), order="F"))
    check(f(a).transpose(), x.transpose())
    check(f(a).transpose(2, 0, 1), x.transpose(2, 0, 1))
    check(f(a).transpose((1, 0, 2)), x.transpose((1, 0, 2)))
    check(f(a).transpose(None), x.transpose())
    check(f(a).T, x.T)
    check(f(a).mT, np.swapaxes(x, -1, -2))
    check(f(a).swapaxes(0, 2), x.swapaxes(0, 2))
    check(f(a).flatten(), x.flatten())
    check(f(a).ravel(), x.ravel())
    check(f(a)[:1].squeeze(0), x[0])
    check(f(a).repeat(2, axis=2), x.repeat(2, axis=2))
  a0 = ember.numpy.asarray(np.float32(3))
  check(a0.reshape(()), np.float32(3))
  check(a0.reshape(1, 1), np.full((1, 1), 3, f32))


# --- printed jaxprs (strings from JAX 0.12's make_jaxpr) -------------------------------------

X = np.ones((2, 3), f32)
JAXPRS = [
    (lambda x: jnp.reshape(x, (3, 2), order="F"),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,3] = reshape[dimensions=(1, 0) new_sizes=(2, 3) "
     "sharding=None] a\n    c:f32[3,2] = transpose[permutation=(1, 0)] b\n  in (c,) }"),
    (lambda x: jnp.ravel(x),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[6] = reshape[dimensions=None new_sizes=(6,) "
     "sharding=None] a\n  in (b,) }"),
    (lambda x: x.reshape(2, 3), "{ lambda ; a:f32[2,3]. let  in (a,) }"),
    (lambda x: x.transpose(0, 1), "{ lambda ; a:f32[2,3]. let  in (a,) }"),
    (lambda x: jnp.moveaxis(x, 0, 1),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = transpose[permutation=(1, 0)] a\n"
     "  in (b,) }"),
    (lambda x: jnp.expand_dims(x, (0, 2)),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[1,2,1,3] = broadcast_in_dim[broadcast_dimensions=(1,"
     " 3)] a\n  in (b,) }"),
    (lambda x: jnp.squeeze(x[None]),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[1,2,3] = broadcast_in_dim[broadcast_dimensions=(1, "
     "2)] a\n    c:f32[2,3] = squeeze[dimensions=(0,)] b\n  in (c,) }"),
    (lambda x: jnp.stack([x, x], 1),
     "{ lambda ; a:f32[2,3]. let b:f32[2,2,3] = stack[axis=1] a a in (b,) }"),
    (lambda x: jnp.tile(x, (2, 1, 1)),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[1,2,3] = broadcast_in_dim[broadcast_dimensions=(1, "
     "2)] a\n    c:f32[2,2,3] = tile[reps=(2, 1, 1)] b\n  in (c,) }"),
    (lambda x: jnp.repeat(x, 2, axis=0),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[2,2,3] = broadcast_in_dim[broadcast_dimensions=(0, "
     "2)] a\n    c:f32[4,3] = reshape[dimensions=None new_sizes=(4, 3) sharding=None] b\n"
     "  in (c,) }"),
    (lambda x: jnp.broadcast_to(x, (4, 2, 3)),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[4,2,3] = broadcast_in_dim[broadcast_dimensions=(1, "
     "2)] a\n  in (b,) }"),
    (lambda x: jnp.swapaxes(x, 0, 1),
     "{ lambda ; a:f32[2,3]. let\n    b:f32[3,2] = transpose[permutation=(1, 0)] a\n"
     "  in (b,) }"),
    (lambda x: jnp.concatenate([x, np.ones((1, 3), i32)]),
     "{ lambda a:i32[1,3]; b:f32[2,3]. let\n    c:f32[1,3] = convert_element_type["
     "new_dtype=float32 weak_type=False] a\n    d:f32[3,3] = concatenate[dimension=0] b c\n"
     "  in (d,) }"),
]


@pytest.mark.parametrize("case", range(len(JAXPRS)))
def test_printed_jaxprs(case):
  fn, expected = JAXPRS[case]
  assert str(ember.make_jaxpr(fn)(X)) == expected


# --- errors -------------------------------------------------------------------------------

ERRORS = [
    (lambda: jnp.reshape(X, (4,)), TypeError,
     r"cannot reshape array of shape \(2, 3\) \(size 6\) into shape \(4,\) \(size 4\)"),
    (lambda: jnp.reshape(X, (-1, -1)), TypeError, r"can only specify one unknown axis size"),
    (lambda: jnp.reshape(X, (-1, 4)), TypeError,
     r"the product of specified axis sizes \(4\) does not evenly divide 6"),
    (lambda: jnp.reshape(np.zeros((0, 3)), (0, -1)), TypeError, r"cannot reshape array"),
    (lambda: jnp.reshape(X, (6,), order="A"), ValueError, r"order='A' is not supported"),
    (lambda: jnp.ravel(X, order="K"), ValueError, r"order='K' is not supported"),
    (lambda: jnp.reshape([1, 2], (2,)), TypeError,
     r"reshape requires ndarray or scalar arguments, got list at position 0"),
    (lambda: jnp.reshape(X, (6.0,)), TypeError, r"Shapes must be 1D sequences of concrete"),
    (lambda: jnp.transpose(X, (0, 0)), TypeError,
     r"transpose permutation isn't a permutation of operand dimensions"),
    (lambda: jnp.transpose(X, (0,)), TypeError, r"isn't a permutation"),
    (lambda: jnp.transpose(X, (0, 5)), ValueError, r"axis 5 is out of bounds"),
    (lambda: jnp.matrix_transpose(np.ones(3)), ValueError, r"at least two-dimensional"),
    (lambda: jnp.swapaxes(X, 0, 2), ValueError, r"axis 2 is out of bounds for array of dim"),
    (lambda: jnp.moveaxis(X, (0, 1), (0,)), ValueError, r"Inconsistent number of elements"),
    (lambda: jnp.moveaxis(X, (0, 0), (0, 1)), ValueError, r"repeated axis"),
    (lambda: jnp.squeeze(X, 0), ValueError,
     r"cannot select an axis to squeeze out which has size not equal to one"),
    (lambda: jnp.squeeze(np.ones((1, 2)), (0, 0)), ValueError, r"dimensions are not unique"),
    (lambda: jnp.expand_dims(X, 4), ValueError, r"axis 4 is out of bounds"),
    (lambda: jnp.expand_dims(X, (0, 0)), ValueError, r"repeated axis"),
    (lambda: jnp.concatenate([X, X[0]]), TypeError,
     r"Cannot concatenate arrays with different numbers of dimensions: got \(2, 3\), \(3,\)"),
    (lambda: jnp.concatenate([X, X], axis=2), ValueError, r"axis 2 is out of bounds"),
    (lambda: jnp.concatenate([]), ValueError, r"Need at least one array to concatenate"),
    (lambda: jnp.concatenate([1.0, 2.0]), ValueError, r"Zero-dimensional arrays cannot be"),
    (lambda: jnp.concatenate([[1, 2], [3]]), TypeError, r"requires ndarray or scalar"),
    (lambda: jnp.stack([X, X[0]]), ValueError, r"Cannot stack arrays with different numbers"),
    (lambda: jnp.stack([X, X[:1]]), ValueError, r"All input arrays must have the same shape"),
    (lambda: jnp.stack([]), ValueError, r"Need at least one array to stack"),
    (lambda: jnp.stack([X], out=X), ValueError, r"'out' argument"),
    (lambda: jnp.split(np.arange(5), 2), ValueError,
     r"array split does not result in an equal division: rest is 1"),
    (lambda: jnp.split(np.arange(5), [3, 1]), ValueError, r"Sizes passed to split must be "),
    (lambda: jnp.split(np.arange(5), 0), ValueError, r"larger than 0"),
    (lambda: jnp.dsplit(X, 1), ValueError, r"at least 3 dimensions"),
    (lambda: jnp.unstack(np.float32(1)), ValueError, r"rank > 0"),
    (lambda: jnp.broadcast_to(X, (3, 3)), ValueError,
     r"Incompatible types for broadcasting: input type=.*\[2,3\] and requested type=.*\[3,3\]"),
    (lambda: jnp.broadcast_to(X, (3,)), ValueError, r"Cannot broadcast to shape with fewer"),
    (lambda: jnp.broadcast_shapes((2, 3), (4,)), ValueError, r"Incompatible shapes for broad"),
    (lambda: jnp.broadcast_arrays(X, np.ones(2)), ValueError, r"Incompatible shapes"),
    (lambda: jnp.tile(np.arange(3), -1), TypeError, r"nonnegative"),
    (lambda: jnp.repeat(np.arange(3), -1), TypeError, r"nonnegative"),
    (lambda: jnp.repeat(np.arange(3), np.array([1, 2])), ValueError,
     r"one entry per element along axis 0"),
    (lambda: jnp.repeat(np.arange(3), [1, 2, 0]), TypeError, r"requires ndarray or scalar"),
    (lambda: jnp.flip(X, 2), ValueError, r"axis 2 is out of bounds"),
    (lambda: jnp.fliplr(np.ones(3)), ValueError, r"axis 1 is out of bounds"),
    (lambda: jnp.rot90(np.ones(3)), ValueError, r"rot90 requires its first argument"),
    (lambda: jnp.rot90(X, axes=(0, 0)), ValueError, r"Axes must be different"),
    (lambda: jnp.roll(X, 1, axis=2), ValueError, r"axis 2 is out of bounds"),
    (lambda: jnp.pad(X, 1, mode="foo"), ValueError, r"mode 'foo' is not supported"),
    (lambda: jnp.pad(X, -1), ValueError, r"index can't contain negative values"),
    (lambda: jnp.pad(X, ((1, 2, 3),)), ValueError, r"pad_width with nd=2 has unsupported shape"),
    (lambda: jnp.pad(X, 1.5), TypeError, r"`pad_width` must be of integral type"),
    (lambda: jnp.pad(X, 1, mode="edge", constant_values=3), ValueError,
     r"unsupported keyword arguments for mode 'edge': \{'constant_values'\}"),
    (lambda: jnp.pad(np.zeros((0,)), 2, mode="edge"), ValueError,
     r"Cannot apply 'edge' padding to empty axis"),
    (lambda: jnp.pad(X, 1, mode="reflect", reflect_type="bogus"), ValueError, r"reflect_type"),
    (lambda: jnp.block([[X], X]), ValueError, r"Mismatched list depths"),
    (lambda: jnp.block((X, X)), ValueError, r"does not allow tuples"),
    (lambda: jnp.block([]), ValueError, r"does not allow empty list"),
    (lambda: jnp.delete(np.arange(5), 7), IndexError, r"out of bounds"),
    (lambda: jnp.insert(np.arange(5), 7, 1), IndexError, r"out of bounds"),
    (lambda: jnp.resize(X, (-1,)), ValueError, r"non-negative"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
  fn, exc, pattern = ERRORS[case]
  with pytest.raises(exc, match=pattern):
    fn()


def test_traced_static_arguments_raise_concretization_errors():
  with pytest.raises(TypeError, match="static_argnums"):
    ember.jit(lambda x, n: jnp.reshape(x, (n,)))(X, 6)
  with pytest.raises(ember.errors.ConcretizationTypeError, match="static"):
    ember.jit(lambda x, i: jnp.split(x, i))(np.arange(4), np.array([1]))

"""The CPU backend: fusions compiled to LLVM kernels, run by the executable, compared with
the reference HLO evaluator (ember._src.hlo.evaluator) on the same module: exactly for integers
and bools (and for float ops that are exact or correctly rounded), within a tolerance where
the generated code may round differently (reductions reassociate; transcendentals come
from ember's math library)."""
import re

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.backends.cpu import dot_kernels
from ember._src.backends.cpu.codegen import ir_types
from ember._src.backends.cpu.compiler import CodegenError
from ember._src.driver.compilation import compile_executable
from ember._src.lower import lower_jaxpr
from ember._src.passes.pipeline import optimize

bf16 = np.dtype(ml_dtypes.bfloat16)
f16, f32, f64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
i8, i32, i64, u8, u32 = (np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.uint32))
b1 = np.dtype(np.bool_)


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def data(shape, dtype, seed=0, special=True):
  """Random values of `dtype`; floats include NaN, +-inf and -0.0, integers their extremes."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == b1:
    return rng.random(shape) > 0.5
  if dtype.kind in "iu":
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True)
    x = x.astype(dtype)
    if special and x.size >= 4:
      x.reshape(-1)[:4] = [info.min, info.max, 0, info.max // 2 + 1]
    return x
  x = (rng.standard_normal(shape) * 3).astype(dtype)
  if special and x.size >= 6:
    x.reshape(-1)[:6] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5]).astype(dtype)
  return x


def build(f, *args, x64=False):
  """(executable, optimized module, reference outputs of the lowered module) for f on args:
  jaxpr -> lower_jaxpr -> the pass pipeline -> compile_executable."""
  def go():
    jaxpr = ember.make_jaxpr(f)(*args)
    module = lower_jaxpr(jaxpr, "f")
    expected = hlo_eval.evaluate(module, list(args))
    module = optimize(module)
    return compile_executable(module), module, expected
  if x64:
    with ember.enable_x64():
      return go()
  return go()


def assert_same(got, expected, rtol=0.0, atol=0.0):
  assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
  assert got.shape == expected.shape, (got.shape, expected.shape)
  if ir_types.kind(expected.dtype) in "fc":
    with np.errstate(invalid="ignore"):
      g = got.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
      e = expected.astype(g.dtype)
    if rtol == 0 and atol == 0:   # bit-exact, NaN == NaN
      np.testing.assert_array_equal(g, e)
    else:
      np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
  else:
    np.testing.assert_array_equal(got, expected)


def check(f, *args, rtol=0.0, atol=0.0, x64=False):
  exe, module, expected = build(f, *args, x64=x64)
  got = exe.execute(list(args))
  assert len(got) == len(expected)
  for g, e in zip(got, expected):
    assert_same(g, e, rtol, atol)
  return exe, module


def n_fusions(module):
  return sum(i.opcode == "fusion" for i in module.entry.instrs)


# --------------------------------------------------------------------------------------
# Elementwise chains, every dtype
# --------------------------------------------------------------------------------------

ARITH_DTYPES = [f32, f16, bf16, i8, i32, u8, u32]


@pytest.mark.parametrize("dt", ARITH_DTYPES, ids=str)
def test_arith_chain(dt):
  x, y = data((7, 9), dt, 1), data((7, 9), dt, 2)
  check(lambda x, y: (x + y) * x - lax.max(x, y) + lax.min(y, x) * y, x, y)


@pytest.mark.parametrize("dt", [f64, i64, np.dtype(np.uint64)], ids=str)
def test_arith_chain_x64(dt):
  with ember.enable_x64():
    x, y = data((5, 8), dt, 1), data((5, 8), dt, 2)
  check(lambda x, y: (x + y) * x - lax.max(x, y) + lax.min(y, x) * y, x, y, x64=True)


@pytest.mark.parametrize("dt", [f32, f16, bf16], ids=str)
def test_float_ops(dt):
  x, y = data((6, 11), dt, 3), data((6, 11), dt, 4)
  ops = lambda x, y: [x / y, lax.rem(x, y), -x, lax.abs(x), lax.sign(x), lax.floor(x),
                      lax.ceil(x), lax.round(x), lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
                      lax.is_finite(x), lax.sqrt(lax.abs(y)), lax.rsqrt(lax.abs(y)) * 0 + 1,
                      lax.nextafter(x, y), x == y, x != y, x < y, x >= y]
  check(ops, x, y)


def test_float_ops_f64():
  with ember.enable_x64():
    x, y = data((4, 7), f64, 3), data((4, 7), f64, 4)
  check(lambda x, y: [x / y, lax.rem(x, y), lax.sign(x), lax.round(x), lax.sqrt(lax.abs(x)),
                      lax.nextafter(x, y), lax.max(x, y)], x, y, x64=True)


TRANSCENDENTAL = {
    "exp": lambda x: lax.exp(x), "log": lambda x: lax.log(lax.abs(x) + 0.5),
    "sin": lax.sin, "cos": lax.cos, "tanh": lax.tanh, "logistic": lax.logistic,
    "expm1": lax.expm1, "log1p": lambda x: lax.log1p(lax.abs(x)), "erf": lax.erf,
    "atan2": lambda x: lax.atan2(x, x[::-1] + 0.25), "pow": lambda x: lax.pow(lax.abs(x) + 0.5, x),
    "cbrt": lax.cbrt, "asinh": lax.asinh, "sinh": lax.sinh,
}
# Relative tolerance per dtype: a few ulp of float32/float64 (ember's math library against
# the float64 reference rounded to the dtype); one ulp of the narrow types, where the float32
# result is rounded once more.
TRANS_TOL = {f32: 5e-7 * 8, f64: 2.3e-16 * 8, f16: 2 ** -10, bf16: 2 ** -7}


_LIBM_CALL = re.compile(r"call [^@\n]*@\"?(sin|cos|tan|exp|exp2|log|pow|atan2|erf|tanh|cbrt|"
                        r"asinh|sinh|expm1|log1p)f?\"?\(")


@pytest.mark.parametrize("dt", [f32, f16, bf16, f64], ids=str)
@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_transcendentals_use_the_math_library(name, dt):
  x = np.linspace(-3.0, 3.0, 37).astype(dt)
  exe, _ = check(TRANSCENDENTAL[name], x, rtol=TRANS_TOL[dt], atol=TRANS_TOL[dt], x64=dt == f64)
  assert not _LIBM_CALL.search(exe.llvm_ir_optimized)    # no libm call in the kernel


def test_seed_elementwise_with_transcendental_is_one_vectorized_kernel():
  x = data((100, 64), f32, 14, special=False)
  exe, module = check(lambda x, a, b: jnp.sin(x) * a + b, x, np.float32(2.0), np.float32(1.0),
                      rtol=4e-7, atol=4e-7)
  assert n_fusions(module) == 1
  assert _PACKED_F32.search(exe.asm)          # the math library's code vectorizes


def test_max_min_nan_and_signed_zero():
  x = np.array([np.nan, 1.0, -0.0, 0.0, -np.inf, 2.0], f32)
  y = np.array([1.0, np.nan, 0.0, -0.0, 3.0, np.nan], f32)
  exe, _ = check(lambda x, y: [lax.max(x, y), lax.min(x, y)], x, y)
  mx, mn = exe.execute([x, y])
  assert np.signbit(mn[2]) and np.signbit(mn[3]) and not np.signbit(mx[2])
  assert np.isnan(mx[[0, 1, 5]]).all()


@pytest.mark.parametrize("dt", [i8, i32, u8, u32], ids=str)
def test_integer_division_edges(dt):
  info = np.iinfo(dt)
  x = np.array([7, -7 if dt.kind == "i" else 250, info.min, info.min, 5, 0, info.max, 3], dt)
  y = np.array([2, 2, -1 if dt.kind == "i" else 1, 0, 0, 0, -1 if dt.kind == "i" else 7, -3
                if dt.kind == "i" else 3], dt)
  exe, _ = check(lambda x, y: [lax.div(x, y), lax.rem(x, y)], x, y)
  q, r = exe.execute([x, y])
  assert q[3] == np.array(-1).astype(dt) and r[3] == x[3]   # x / 0 = -1, x % 0 = x
  if dt.kind == "i":
    assert q[2] == info.min and r[2] == 0                    # INT_MIN / -1


@pytest.mark.parametrize("dt", [i8, i32, u8, u32], ids=str)
def test_bitwise_and_shifts(dt):
  bits = dt.itemsize * 8
  x = data((3, 16), dt, 5)
  s = np.resize(np.arange(-2, bits + 3), (3, 16)).astype(dt)
  check(lambda x, s: [x & s, x | s, x ^ s, ~x, lax.shift_left(x, s),
                      lax.shift_right_logical(x, s), lax.shift_right_arithmetic(x, s),
                      lax.population_count(x), lax.clz(x), lax.abs(x) if dt.kind == "i" else x,
                      lax.sign(x), -x], x, s)


def test_bool_ops():
  p, q = data((5, 6), b1, 1), data((5, 6), b1, 2)
  check(lambda p, q: [p & q, p | ~q, p ^ q, lax.select(p, q, ~q), p == q, p < q,
                      lax.max(p, q), lax.min(p, q), lax.convert_element_type(p, np.float32),
                      lax.convert_element_type(p, np.int32)], p, q)


def test_compare_and_select_with_nan():
  x, y = data((4, 8), f32, 6), data((4, 8), f32, 7)
  y[0, :3] = x[0, :3]
  check(lambda x, y: [lax.select(x < y, x, y), jnp.where(x == y, 1.0, x), x <= y, x > y,
                      lax.clamp(-1.0, x, 2.0), lax.clamp(y * 0 - 1, x, y * 0 + 1)], x, y)


CONVERT_DTYPES = [b1, i8, u8, i32, u32, f16, bf16, f32]


@pytest.mark.parametrize("src", CONVERT_DTYPES, ids=str)
def test_convert_every_pair(src):
  x = data((4, 10), src, 8)
  if src.kind == "f" or src == bf16:
    with np.errstate(over="ignore"):
      x.reshape(-1)[6:12] = np.array([3e9, -3e9, 255.7, -128.9, 0.5, 65504.0]).astype(src)
  outs = lambda x: [lax.convert_element_type(x, d) for d in CONVERT_DTYPES]
  check(outs, x)


def test_convert_x64_and_rounding_to_narrow():
  with ember.enable_x64():
    x = np.array([1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-30, 1e300, -1e-300, np.nan, 2.0**63,
                  -2.0**63, 4e9], f64)
    y = np.array([2**62 + 1, -5, 2**53 + 1, 0, 7, -2**63, 1, 3], i64)
  check(lambda x, y: [x.astype(np.float16), x.astype(bf16), x.astype(np.float32),
                      x.astype(np.int64), x.astype(np.uint32), y.astype(np.float32),
                      y.astype(np.float64), y.astype(np.float16), y.astype(np.int8)],
        x, y, x64=True)


def test_bitcast_convert_same_and_different_widths():
  x = data((3, 4), f32, 9)
  y = data((3, 4, 2), np.int16, 10)
  check(lambda x, y: [lax.bitcast_convert_type(x, np.int32),
                      lax.bitcast_convert_type(x, np.uint8),
                      lax.bitcast_convert_type(y, np.float32),
                      lax.bitcast_convert_type(x.astype(np.float16), np.int16),
                      lax.bitcast_convert_type(x.astype(bf16), np.uint16)], x, y)


def test_reduce_precision():
  x = data((5, 7), f32, 11)
  check(lambda x: [lax.reduce_precision(x, 5, 10), lax.reduce_precision(x, 8, 7),
                   lax.reduce_precision(x, 4, 3)], x)


def test_integer_pow_and_square():
  x = data((4, 6), f32, 12, special=False)
  n = data((4, 6), i32, 13, special=False)
  check(lambda x, n: [lax.integer_pow(x, 3), lax.integer_pow(x, -2), lax.square(n), n * n * n],
        x, n, rtol=1e-6)


# --------------------------------------------------------------------------------------
# Structural ops inside fusions (index maps)
# --------------------------------------------------------------------------------------

X345 = data((3, 4, 5), f32, 20, special=False)

STRUCTURAL = {
    "broadcast": lambda x: lax.broadcast_in_dim(x[:, 0, :], (3, 2, 4, 5), (0, 3)) * 2,
    "broadcast_scalar_param": lambda x: x * x[0, 0, 0],
    "transpose": lambda x: jnp.transpose(x, (2, 0, 1)) + 1,
    "transpose_chain": lambda x: jnp.transpose(jnp.transpose(x, (1, 2, 0)) * 2, (0, 2, 1)),
    "reshape_merge": lambda x: x.reshape(12, 5) * 2,
    "reshape_split": lambda x: x.reshape(3, 2, 2, 5, 1) - 1,
    "reshape_any": lambda x: x.reshape(6, 10) + x.reshape(60)[::-1].reshape(6, 10),
    "reshape_after_transpose": lambda x: jnp.transpose(x, (1, 0, 2)).reshape(4, 15) * 3,
    # a root reshape to shorter rows: the nest runs over its operand's longer ones
    "reshape_root_shorter_rows": lambda x: (jnp.sin(x) * 2).reshape(3, 10, 2),
    "reshape_root_of_transpose": lambda x: jnp.transpose(x * 3, (0, 2, 1)).reshape(3, 5, 2, 2),
    "reverse": lambda x: lax.rev(x, (0, 2)) + x,
    "slice_strided": lambda x: lax.slice(x, (0, 1, 0), (3, 4, 5), (2, 2, 3)) * 2,
    "slice_index": lambda x: x[1:, ::-2, 3] + 1,
    "concatenate": lambda x: jnp.concatenate([x, x * 2, x[:, :1]], axis=1),
    "concatenate_last": lambda x: jnp.concatenate([x[..., :2], -x], axis=-1),
    "pad": lambda x: lax.pad(x, -1.0, ((1, 2, 0), (0, 0, 1), (2, -1, 2))),
    "pad_negative": lambda x: lax.pad(x * 2, 0.5, ((-1, 1, 0), (2, -2, 0), (0, 0, 0))),
    "iota": lambda x: x + lax.broadcasted_iota(np.float32, (3, 4, 5), 1)
                      + lax.broadcasted_iota(np.int32, (3, 4, 5), 2).astype(np.float32),
    "dynamic_slice": lambda x: lax.dynamic_slice(x, (1, jnp.int32(3), -1), (2, 2, 3)) * 2,
    "dynamic_update_slice": lambda x: lax.dynamic_update_slice(x, x[:1, :2, :2] * 10,
                                                               (2, jnp.int32(3), 4)),
    "gather_take": lambda x: jnp.take(x, jnp.array([2, 0, 4, 4, 1]), axis=2) + 1,
    "gather_fancy": lambda x: x[jnp.array([[0, 2], [1, 1]]), :, jnp.array([[4, 0], [3, 3]])],
    "gather_clip": lambda x: jnp.take(x, jnp.array([-1, 7, 2]), axis=1, mode="clip"),
    "gather_fill": lambda x: jnp.take(x, jnp.array([-1, 7, 2]), axis=1, mode="fill",
                                      fill_value=-5.0),
    "mixed_chain": lambda x: jnp.sum(jnp.transpose(x, (1, 0, 2))[::2] * 2, axis=2),
}


@pytest.mark.parametrize("name", sorted(STRUCTURAL))
def test_structural(name):
  # mixed_chain sums 5 terms: the vectorized reduction may associate them differently from
  # the reference evaluator (f32: within n * eps of the magnitude sum)
  check(STRUCTURAL[name], X345, **({"rtol": 1e-6, "atol": 1e-6} if name == "mixed_chain" else {}))


@pytest.mark.parametrize("dt", [i8, u32, b1, f16, bf16], ids=str)
def test_structural_other_dtypes(dt):
  x = data((3, 4, 5), dt, 21)
  check(lambda x: [jnp.transpose(x, (2, 1, 0)), jnp.concatenate([x, x[:, ::-1]], axis=1),
                   lax.pad(x, x[0, 0, 0], ((1, 0, 1), (0, 2, 0), (0, 0, 0))),
                   x.reshape(4, 15)[::3], jnp.take(x, jnp.array([1, 0, 1]), axis=0)], x)


def test_expensive_operands_of_concatenate_pad_and_update_are_branched():
  # integer division, reductions and gathers are "expensive": computed only where selected
  n = data((4, 6), i32, 22)
  x = data((4, 6), f32, 23, special=False)
  exe, module = check(lambda n, x: [
      jnp.concatenate([n // 3, n % 5, n[:, :2] // -2], axis=1),
      jnp.concatenate([jnp.sum(x, axis=1), jnp.max(x, axis=0), x[:, 0]]),
      lax.pad(n // 7, -1, ((1, 1, 1), (0, 2, 0))),
      lax.dynamic_update_slice(n, n[:2, :3] % 4, (1, 2)),
      jnp.concatenate([jnp.take(x, jnp.array([3, 1]), axis=1), x], axis=1)], n, x,
      rtol=1e-6)
  assert ".else:" in exe.llvm_ir   # if/else blocks, not only selects
  cheap = build(lambda n: jnp.concatenate([n * 3, n + 5], axis=1), n)[0]
  assert ".else:" not in cheap.llvm_ir   # cheap operands: selects (vectorizable)


# --------------------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [0, 1, 2, (0, 1), (0, 2), (1, 2), None])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_reduce_axes(op, axis):
  x = data((6, 7, 9), f32, 30, special=False)
  fn = getattr(jnp, op)
  check(lambda x: fn(x * 1.5, axis=axis), x, rtol=2e-6, atol=1e-5)


@pytest.mark.parametrize("dt", [i32, u8, i8, b1, f16, bf16], ids=str)
def test_reduce_dtypes(dt):
  x = data((5, 8, 3), dt, 31)
  if dt == b1:
    fns = lambda x: [jnp.any(x, axis=1), jnp.all(x, axis=(0, 2)), jnp.any(x)]
  else:
    fns = lambda x: [jnp.sum(x, axis=1, dtype=dt), jnp.max(x, axis=0),
                     jnp.min(x, axis=(1, 2)), jnp.max(x)]
  check(fns, x, rtol=1e-2 if dt in (f16, bf16) else 0)


def test_reduce_nan_propagates():
  x = data((4, 9), f32, 32)
  check(lambda x: [jnp.max(x, axis=1), jnp.min(x, axis=0), jnp.sum(x, axis=1)], x,
        rtol=1e-6)   # the sum reassociates


def test_argmax_argmin_variadic_reduce():
  x = data((7, 10), f32, 33, special=False)
  x[2, 3] = x[2, 7] = 50.0          # ties: first index wins
  x[4, 5] = np.nan                  # NaN wins
  check(lambda x: [jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(x)], x)
  n = data((7, 10), i32, 34)
  check(lambda n: [jnp.argmax(n, axis=0), jnp.argmin(n, axis=1)], n)


def test_long_minor_reductions_interleave_accumulators():
  # minor dims >= 2 * VLANES take the interleaved-accumulator path, with a tail
  x = data((5, 45), f32, 38, special=False)
  x[0, [3, 11, 44]] = 99.0          # ties in different lanes and in the tail
  x[1, 40] = np.nan                 # NaN in the tail
  x[2, [5, 21]] = np.nan            # two NaNs: the first wins
  x[3, :] = 1.0
  check(lambda x: [jnp.argmax(x, axis=1), jnp.argmin(x, axis=1)], x)
  y = data((3, 50), bf16, 39, special=False)
  check(lambda y: [jnp.max(y, axis=-1), lax.reduce_precision(jnp.sum(y, axis=-1), 8, 7)], y,
        rtol=2e-2, atol=1e-1)   # bfloat16 sums round at every step (8-bit mantissa)


def test_long_variadic_reductions_in_lanes_and_columns():
  # rows of 70 (4 blocks of VLANES lanes + a tail of 6) and argmax over axis 0 (the column
  # plan with two accumulating outputs): ties, NaNs in lanes, blocks and tails
  x = data((40, 70), f32, 40, special=False)
  x[0, [1, 17, 33, 69]] = 99.0      # ties across lanes, blocks and the tail: first wins
  x[1, [20, 4]] = np.nan            # NaNs in two lanes: the first index wins
  x[2, 66] = np.nan                 # NaN in the tail
  x[[5, 9, 30], 3] = 77.0           # column ties
  x[[12, 7], 8] = np.nan            # column NaNs
  check(lambda x: [jnp.argmax(x, axis=1), jnp.argmin(x, axis=1), jnp.argmax(x, axis=0),
                   jnp.argmin(x, axis=0)], x)
  check(lambda x: jnp.argmax(x.reshape(4, 10, 70), axis=1), x)
  n = data((33, 50), i8, 41)
  check(lambda n: [jnp.argmax(n, axis=1), jnp.argmin(n, axis=0)], n)


@pytest.mark.parametrize("case", ["softmax", "layernorm", "logsumexp", "row_and_scalar",
                                  "3d_middle", "transposed_stat"])
def test_hoisted_row_statistics(case):
  # reductions read through broadcasts fuse into their consumers and are computed once per
  # row before the minor loop (ElementalEmitter.hoist)
  x = data((6, 40), f32, 42, special=False)
  f = {
      "softmax": lambda x: (lambda e: e / e.sum(-1, keepdims=True))(
          jnp.exp(x - x.max(-1, keepdims=True))),
      "layernorm": lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(
          x.var(-1, keepdims=True) + 1e-5),
      "logsumexp": lambda x: jnp.log(jnp.exp(x - x.max(-1, keepdims=True)).sum(-1)) +
      x.max(-1),
      "row_and_scalar": lambda x: x * jnp.sum(x, 1, keepdims=True) - jnp.max(x),
      "3d_middle": lambda x: (lambda y: y - jnp.tanh(y.sum(1, keepdims=True)))(
          x.reshape(2, 3, 40)),
      "transposed_stat": lambda x: (x.T - jnp.sin(x).sum(1)).T,
  }[case]
  # sums reassociate: their error is ~ n * eps * sum(|x|), ~1e-5 here for row_and_scalar
  exe, module = check(f, x, rtol=2e-6, atol=1e-4 if case == "row_and_scalar" else 2e-6)
  assert len(exe.thunks) <= 2


def test_pairwise_distance_is_one_fusion():
  X = data((13, 8), f32, 35, special=False)
  Y = data((9, 8), f32, 36, special=False)
  exe, module = check(lambda X, Y: jnp.sqrt(jnp.sum((X[:, None, :] - Y[None, :, :]) ** 2, -1)),
                      X, Y, rtol=1e-6)
  assert n_fusions(module) == 1 and len(exe.thunks) == 1
  assert exe.assignment.temp_size == 0


def test_softmax_and_reductions_feeding_elementwise():
  x = data((6, 10), f32, 37, special=False)
  check(lambda x: x - jnp.max(x, axis=1, keepdims=True) + jnp.sum(x, 0) / 3, x, rtol=1e-6,
        atol=1e-6)


def test_empty_and_scalar_shapes():
  e = np.zeros((0, 4), f32)
  check(lambda e: [e * 2, jnp.sum(e, axis=0), jnp.max(e, axis=1), e.T], e)
  s = np.float32(2.5)
  check(lambda s: [s * 3 + 1, jnp.sum(s), lax.broadcast(s, (3,))], s)


# --------------------------------------------------------------------------------------
# Dots, sort, top_k, scatter, copies
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["mm", "lhsT", "rhsT", "batched", "vec", "int", "f16"])
def test_dot(case):
  a, b = data((5, 7), f32, 40, False), data((7, 3), f32, 41, False)
  f = {"mm": lambda a, b: a @ b,
       "lhsT": lambda a, b: a.T.T @ b * 1,
       "rhsT": lambda a, b: a @ (b.T * 2).T,
       "batched": lambda a, b: jnp.einsum("bij,bjk->bik", jnp.stack([a, a + 1]),
                                          jnp.stack([b, -b])),
       "vec": lambda a, b: a @ b[:, 0],
       "int": lambda a, b: a.astype(np.int32) @ b.astype(np.int32),
       "f16": lambda a, b: a.astype(np.float16) @ b.astype(np.float16)}[case]
  check(f, a, b, rtol=1e-2 if case == "f16" else 1e-6, atol=1e-5)


DOT_GENERAL = {
    "batch_dim_in_the_middle": (((2,), (0,)), ((1,), (1,))),
    "two_contracting_dims": (((1, 2), (1, 0)), ((), ())),
    "outer_product": (((), ()), ((), ())),
}


@pytest.mark.parametrize("name", sorted(DOT_GENERAL))
@pytest.mark.parametrize("dt", [f32, bf16, i8], ids=str)
def test_dot_general_dimension_numbers(name, dt):
  a, b = data((3, 4, 5), dt, 44, False), data((5, 4, 3), dt, 45, False)
  pet = np.int32 if dt == i8 else None
  check(lambda a, b: lax.dot_general(a, b, DOT_GENERAL[name], preferred_element_type=pet),
        a, b, rtol=1e-2 if dt == bf16 else 1e-6, atol=1e-5)


def test_dot_transposed_operand_needs_no_copy(monkeypatch):
  # On the BLAS path (the generated kernel reads strides itself: dot_kernels).
  monkeypatch.setattr(dot_kernels, "MAX_A_BYTES", 0)
  a, b = data((300, 200), f32, 42, False), data((300, 150), f32, 43, False)
  exe, _, _ = build(lambda a, b: a.T @ b, a, b)
  (got,) = exe.execute([a, b])
  # against float64, relative to sum |a| |b|: where the 300 products cancel, float32's
  # rounding error is that large compared with |a.T @ b| (the float32 reference evaluator
  # was off by 1.5e-4 relative there, ember by 1e-5); ~sqrt(K) eps at most in practice
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  err = np.abs(got - a64.T @ b64) / (np.abs(a64).T @ np.abs(b64))
  assert got.dtype == f32 and err.max() < 1e-6, err.max()
  dots = [t for t in exe.thunks if t.kind == "dot"]
  assert len(dots) == 1 and dots[0].lperm == (1, 0)


def test_sort_and_top_k():
  x = data((4, 9), f32, 44)
  x[1, :4] = [0.0, -0.0, 0.0, -0.0]
  check(lambda x: [jnp.sort(x, axis=1), jnp.argsort(x, axis=0), lax.top_k(x, 3)[0],
                   lax.top_k(x, 3)[1]], x)
  k, v = data((10,), i32, 45), data((10,), f32, 46)
  k[:4] = 3
  exe, _ = check(lambda k, v: lax.sort((k, v), num_keys=1), k, v)
  (sort,) = [t for t in exe.thunks if t.kind == "sort"]
  assert sort.num_keys == 1      # JAX's comparator recognised: NumPy's stable lexsort


def test_sort_with_other_comparator_runs_it():
  S = hlo.Shape
  m = hlo.Module("jit_sort")
  cmp = m.new_computation("descending")
  a = cmp.add(hlo.Instr("parameter", S(f32, ()), attrs={"number": 0}, name="a"))
  b = cmp.add(hlo.Instr("parameter", S(f32, ()), attrs={"number": 1}, name="b"))
  cmp.root = cmp.add(hlo.Instr("compare", S(b1, ()), [a, b], {"direction": "GT"}))
  entry = m.new_computation("main")
  m.entry = entry
  p = entry.add(hlo.Instr("parameter", S(f32, (3, 7)), attrs={"number": 0}, name="x"))
  entry.root = entry.add(hlo.Instr("sort", S(f32, (3, 7)), [p],
                                   {"dimension": 1, "is_stable": True}, [cmp]))
  x = data((3, 7), f32, 47, special=False)
  exe = compile_executable(m)
  assert exe.thunks[0].num_keys is None
  assert_same(exe.execute([x])[0], -np.sort(-x, axis=1))


def test_scatter():
  x = data((6, 4), f32, 47, special=False)
  idx = np.array([0, 5, 2, 5, 9, -1], np.int32)
  upd = data((6, 4), f32, 48, special=False)
  check(lambda x, i, u: [x.at[i].add(u), x.at[i].set(u), x.at[i].max(u), x.at[i, 1].mul(2.0),
                         x.at[2:4].set(0.0)], x, idx, upd, rtol=1e-6)


def test_donated_argument_receives_the_output():
  x, y = data((5, 6), f32, 58, special=False), data((5, 6), f32, 59, special=False)
  f = lambda x, y: (jnp.sum(y, axis=0), x * y + 1.0)
  jaxpr = ember.make_jaxpr(f)(x, y)
  module = lower_jaxpr(jaxpr, "f", donated=(True, False))
  expected = hlo_eval.evaluate(module, [x, y])
  exe = compile_executable(optimize(module))
  assert exe.output_slots[1].kind == "parameter"
  donated = x.copy()
  got = exe.execute([donated, y])
  assert np.shares_memory(got[1], donated)
  for g, e in zip(got, expected):
    assert_same(g, e, rtol=1e-6)


def test_outputs_that_are_inputs_or_repeated():
  x = data((3, 4), f32, 49)
  exe, _ = check(lambda x: (x, x * 2, x * 2, x), x)
  outs = exe.execute([x])
  assert outs[0] is not x and not np.shares_memory(outs[1], outs[2])


# --------------------------------------------------------------------------------------
# Without the pass pipeline: lone ops become kernels of their own
# --------------------------------------------------------------------------------------

def test_unfused_module_compiles_every_op():
  x, y = data((4, 6), f32, 50), data((6,), f32, 51)
  jaxpr = ember.make_jaxpr(lambda x, y: jnp.sum(lax.abs(x * 0) * y + x.T.T, axis=0))(x, y)
  module = lower_jaxpr(jaxpr, "f")
  expected = hlo_eval.evaluate(module, [x, y])
  got = compile_executable(module).execute([x, y])
  assert_same(got[0], expected[0], rtol=1e-6, atol=1e-6)


def test_in_place_kernels_without_fusion():
  from ember._src.base import flags
  x, y = data((40, 33), f32, 56, special=False), data((40, 33), f32, 57, special=False)
  with flags.override(disable_passes=["fusion"]):
    exe, module = check(lambda x, y: ((x * 2 + y) - 1) * y + jnp.max(x, axis=1)[:, None], x, y)
  in_place = [t for t in exe.thunks if t.kind == "kernel" and
              set(t.slots[:-1]) & {t.slots[-1]}]
  assert len(in_place) >= 2   # the chain is computed in the output's buffer


# --------------------------------------------------------------------------------------
# Hand-built modules: ops and forms lowering does not produce directly
# --------------------------------------------------------------------------------------

def _module(build_fusion, params, kind="kLoop"):
  """A module whose entry is one fusion of `build_fusion(comp, param_instrs) -> root`."""
  m = hlo.Module("jit_hand")
  entry = m.new_computation("main")
  m.entry = entry
  fused = m.new_computation("fused_computation")
  fused.is_fusion = True
  ps = [fused.add(hlo.Instr("parameter", s, attrs={"number": k}, name=f"param_{k}"))
        for k, s in enumerate(params)]
  fused.root = build_fusion(fused, ps)
  eps = [entry.add(hlo.Instr("parameter", s, attrs={"number": k}, name=f"p{k}"))
         for k, s in enumerate(params)]
  entry.root = entry.add(hlo.Instr("fusion", fused.root.shape, eps, {"kind": kind}, [fused],
                                   name="fusion"))
  return m


def _run_both(module, args, rtol=0.0):
  expected = hlo_eval.evaluate(module, args)
  got = compile_executable(module).execute(args)
  for g, e in zip(got, expected):
    assert_same(g, e, rtol=rtol)


def test_total_order_compare_and_gather_batching_dims():
  S = hlo.Shape
  x = np.array([np.nan, -np.nan, -0.0, 0.0, -np.inf, 1.0], f32)
  y = np.array([0.0, 0.0, 0.0, -0.0, np.nan, 1.0], f32)

  def fusion(c, ps):
    outs = [c.add(hlo.Instr("compare", S(b1, (6,)), ps, {"direction": d,
                                                          "compare_type": "TOTALORDER"}))
            for d in ("LT", "EQ", "GE")]
    return c.add(hlo.Instr("tuple", hlo.TupleShape(tuple(o.shape for o in outs)), outs))
  _run_both(_module(fusion, [S(f32, (6,)), S(f32, (6,))]), [x, y])

  # gather with operand batching dims: out[b, j] = op[b, idx[b, j]]
  op = data((3, 5), f32, 52)
  idx = np.array([[4, 0], [2, 9], [-3, 1]], np.int32)

  def gfusion(c, ps):
    return c.add(hlo.Instr("gather", S(f32, (3, 2)), ps, {
        "offset_dims": (), "collapsed_slice_dims": (1,), "start_index_map": (1,),
        "operand_batching_dims": (0,), "start_indices_batching_dims": (0,),
        "index_vector_dim": 2, "slice_sizes": (1, 1), "indices_are_sorted": False}))
  _run_both(_module(gfusion, [S(f32, (3, 5)), S(i32, (3, 2))]), [op, idx])


def test_multi_output_fusion_and_different_root_shapes():
  S = hlo.Shape
  x = data((4, 5), f32, 53, special=False)
  add = hlo.Computation("add")
  a0 = add.add(hlo.Instr("parameter", S(f32, ()), attrs={"number": 0}, name="a"))
  a1 = add.add(hlo.Instr("parameter", S(f32, ()), attrs={"number": 1}, name="b"))
  add.root = add.add(hlo.Instr("add", S(f32, ()), [a0, a1]))

  def fusion(c, ps):
    e = c.add(hlo.Instr("multiply", S(f32, (4, 5)), [ps[0], ps[0]]))
    z = c.add(hlo.Instr("constant", S(f32, ()), attrs={"value": np.array(0, f32)}))
    r = c.add(hlo.Instr("reduce", S(f32, (4,)), [e, z], {"dimensions": (1,)}, [add]))
    return c.add(hlo.Instr("tuple", hlo.TupleShape((e.shape, r.shape)), [e, r]))
  m = _module(fusion, [S(f32, (4, 5))], kind="kInput")
  m.computations.append(add)
  _run_both(m, [x], rtol=1e-6)


def test_constant_array_inside_fusion_and_bool_parameter():
  S = hlo.Shape
  table = np.array([[1.5, -2.0, 3.25], [0.0, 7.0, -1.0]], f32)
  p = np.array([[True, False, True], [False, False, True]])

  def fusion(c, ps):
    k = c.add(hlo.Instr("constant", S(f32, (2, 3)), attrs={"value": table}))
    return c.add(hlo.Instr("select", S(f32, (2, 3)), [ps[0], k, ps[1]]))
  _run_both(_module(fusion, [S(b1, (2, 3)), S(f32, (2, 3))]), [p, data((2, 3), f32, 54)])


def test_complex_arithmetic():
  S = hlo.Shape
  c64 = np.dtype(np.complex64)
  rng = np.random.default_rng(55)
  x = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(c64)
  y = (rng.standard_normal(8) + 1j * rng.standard_normal(8)).astype(c64)
  x[:3] = [0, -4 + 0j, 2 - 3j]
  y[:3] = [0, -4 + 1j, 2 - 3j]
  p = np.array([True, False] * 4)

  def fusion(c, ps):
    cx, cy, pred = ps
    outs = [c.add(hlo.Instr(op, S(c64, (8,)), [cx, cy]))
            for op in ("add", "subtract", "multiply", "divide", "maximum", "minimum")]
    outs += [c.add(hlo.Instr(op, S(c64, (8,)), [cx])) for op in ("negate", "sign", "sqrt")]
    outs += [c.add(hlo.Instr(op, S(f32, (8,)), [cx])) for op in ("abs", "real", "imag")]
    outs.append(c.add(hlo.Instr("select", S(c64, (8,)), [pred, cx, cy])))
    outs += [c.add(hlo.Instr("compare", S(b1, (8,)), [cx, cy], {"direction": d}))
             for d in ("EQ", "NE")]
    re = c.add(hlo.Instr("real", S(f32, (8,)), [cy]))
    outs.append(c.add(hlo.Instr("convert", S(c64, (8,)), [re])))
    outs.append(c.add(hlo.Instr("complex", S(c64, (8,)), [re, re])))
    return c.add(hlo.Instr("tuple", hlo.TupleShape(tuple(o.shape for o in outs)), outs))
  _run_both(_module(fusion, [S(c64, (8,)), S(c64, (8,)), S(b1, (8,))]), [x, y, p], rtol=1e-6)


def test_unsupported_op_is_a_clear_error():
  S = hlo.Shape
  m = hlo.Module("jit_cc")
  entry = m.new_computation("main")
  m.entry = entry
  p = entry.add(hlo.Instr("parameter", S(f32, (3,)), attrs={"number": 0}, name="x"))
  entry.root = entry.add(hlo.Instr("custom-call", S(f32, (3,)), [p], {"target": "my_fn"}))
  with pytest.raises(CodegenError, match="custom-call.*my_fn"):
    compile_executable(m)


# --------------------------------------------------------------------------------------
# Generated code: vector instructions, sub-ranges, dumps
# --------------------------------------------------------------------------------------

# A packed (vector) float instruction: addps/vaddps/vfmadd231ps/... on xmm (SSE: 4 lanes),
# ymm (AVX) or zmm (AVX-512) registers; scalar code would use the `ss` forms.
_PACKED_F32 = re.compile(r"\bv?(add|mul|sub|max|fmadd\w*)ps\s+[^\n]*%[xyz]mm")


def test_kernels_are_vectorized():
  from ember._src.base import flags
  x = data((64, 256), f32, 60, special=False)
  # a row sum of x*x is vector IR at every level (codegen's fixed-order lanes); one of a
  # longer prologue is left to LLVM's vectorizers
  long = lambda x: jnp.sum((((((x + 1) * 2 - 3) * x + 4) * x - 5) * x + 6) * x, axis=1)
  for f, explicit in ((lambda x: x * 2.0 + 1.0, False),
                      (lambda x: jnp.sum(x * x, axis=1), True), (long, False)):
    exe, module = check(f, x, rtol=1e-5)
    assert _PACKED_F32.search(exe.asm), exe.asm[:3000]
    assert exe.code_size > 0 and "define void @" in exe.llvm_ir
    # the control: LLVM's vectorizers only run from opt_level 2
    scalar = compile_executable(module, flags=flags.get()._replace(opt_level=1))
    assert bool(_PACKED_F32.search(scalar.asm)) == explicit


@pytest.mark.parametrize("level", [0, 1, 2])
def test_every_opt_level_computes_the_same(level):
  from ember._src.base import flags
  x = data((6, 40), f32, 63)
  f = lambda x: [jnp.argmax(x, axis=1), jnp.sum(x[:, ::2] * 2, axis=0),
                 jnp.concatenate([x, -x], axis=0).T, (x > 0).astype(np.int8)]
  jaxpr = ember.make_jaxpr(f)(x)
  module = optimize(lower_jaxpr(jaxpr, "f"))
  expected = hlo_eval.evaluate(module, [x])
  exe = compile_executable(module, flags=flags.get()._replace(opt_level=level))
  for g, e in zip(exe.execute([x]), expected):
    assert_same(g, e, rtol=1e-6)


SUB_RANGE_CASES = {
    "row_reduce": lambda x: jnp.sum(x[:, ::-1] * 2, axis=1) + x[:, 0],
    "column_reduce": lambda x: jnp.max(x * 3, axis=0),
    "flat_elementwise": lambda x: x * x - 1.0,
    "nest": lambda x: jnp.concatenate([x, x[:, :3]], axis=1).T,
}


@pytest.mark.parametrize("case", sorted(SUB_RANGE_CASES))
def test_kernel_runs_any_sub_range(case):
  x = data((9, 33), f32, 61, special=False)
  exe, _, expected = build(SUB_RANGE_CASES[case], x)
  (t,) = [t for t in exe.thunks if t.kind == "kernel"]
  assert t.splittable and t.outer == expected[0].shape[0]
  frame = exe._frame([x])
  cuts = sorted({0, t.outer // 3, t.outer // 2 + 1, t.outer})
  for lo, hi in reversed(list(zip(cuts, cuts[1:]))):
    t.run(frame, lo, hi)
  assert_same(exe._results(frame)[0], expected[0], rtol=1e-6, atol=1e-5)


def test_dumps_and_intermediates(tmp_path):
  from ember._src.base import flags
  x = data((8, 8), f32, 62, special=False)
  with flags.override(dump_to=str(tmp_path)):
    jaxpr = ember.make_jaxpr(lambda x: jnp.sum(x @ x + 1, axis=0))(x)
    module = optimize(lower_jaxpr(jaxpr, "dumped"))
    exe = compile_executable(module, flags=flags.get())
  names = sorted(p.name for p in tmp_path.iterdir())
  assert any(n.endswith(".jit_dumped.s") for n in names), names
  assert any(n.endswith("ir-with-opt.ll") for n in names)
  assert any(n.endswith("buffer-assignment.txt") for n in names)
  vals = exe.execute_keep_intermediates([x])
  assert set(vals) == {t.name for t in exe.thunks}


def test_row_cached_value_with_its_own_minor_extent():
  # exp(x) [n, k] read by two reductions over k inside an [n, m] output (m != k): its row
  # buffer spans k, not m
  x = data((5, 7), f32, 43, special=False)
  w = data((7, 3), f32, 44, special=False)
  f = lambda x, w: jnp.sum(jnp.exp(x)[:, :, None] * w[None], axis=1) + \
      jnp.max(jnp.exp(x), axis=1, keepdims=True)
  check(f, x, w, rtol=2e-6, atol=2e-6)
  g = lambda x: (lambda e: e / e.sum(-1, keepdims=True) - e.max(-1, keepdims=True))(jnp.exp(x))
  exe, _ = check(g, x, rtol=2e-6, atol=2e-6)
  assert len(exe.thunks) == 1

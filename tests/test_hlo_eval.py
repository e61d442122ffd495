"""The HLO reference evaluator (ember/_src/hlo/evaluator.py): every opcode against NumPy float64
or the lax primitives' eager results, XLA's edge semantics (the integer/convert/compare
tables below were produced by running the same StableHLO on XLA:CPU through jaxlib and are
stored as data; XLA:CPU's flush of subnormals to zero is deliberately not reproduced: ember
keeps subnormals as NumPy does), dtype preservation, called computations, errors."""
import math

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.hlo.evaluator import (
    HloEvalError, eval_instr, evaluate, evaluate_computation, evaluate_intermediates)

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32, U32, I8 = np.dtype(np.int32), np.dtype(np.uint32), np.dtype(np.int8)
NAN, INF = float("nan"), float("inf")
IMIN, IMAX = -2**31, 2**31 - 1
RTOL = {F32: 2e-6, F64: 1e-13, F16: 1e-3, BF16: 8e-3}


def S(dt, *dims):
  return hlo.Shape(np.dtype(dt), tuple(dims))


class Builder:
  """A module built instruction by instruction (what lowering does), run with evaluate."""

  def __init__(self):
    self.m = hlo.Module("test")
    self.c = self.m.new_computation("main")
    self.m.entry = self.c

  def param(self, dt, *dims):
    n = len(self.c.params)
    return self.c.add(hlo.Instr("parameter", S(dt, *dims), attrs={"number": n}, name=f"p{n}"))

  def const(self, value, dt=None):
    v = np.asarray(value, dt)
    return self.c.add(hlo.Instr("constant", S(v.dtype, *v.shape), attrs={"value": v}))

  def op(self, opcode, shape, *operands, called=(), **attrs):
    return self.c.add(hlo.Instr(opcode, shape, operands, attrs, called))

  def run(self, root, *args):
    self.c.root = root
    return evaluate(self.m, list(args))


def scalar_comp(m, name, param_dts, body):
  """A computation of scalar parameters; body(comp, *params) returns the root."""
  c = m.new_computation(name)
  ps = [c.add(hlo.Instr("parameter", S(dt), attrs={"number": i})) for i, dt in enumerate(param_dts)]
  c.root = body(c, *ps)
  return c


def binary_comp(m, opcode, dt):
  return scalar_comp(m, opcode, [dt, dt],
                     lambda c, a, b: c.add(hlo.Instr(opcode, S(dt), [a, b])))


def run_op(opcode, out_dtype, *args, **attrs):
  """One elementwise instruction on parameters `args` (all of the same dims)."""
  b = Builder()
  ps = [b.param(a.dtype, *a.shape) for a in args]
  out, = b.run(b.op(opcode, S(out_dtype, *args[0].shape), *ps, **attrs), *args)
  return out


def wide(a):
  a = np.asarray(a)
  return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def assert_close(got, want, dtype):
  got, want = wide(got), wide(want)
  np.testing.assert_allclose(got, want, rtol=RTOL[np.dtype(dtype)],
                             atol=RTOL[np.dtype(dtype)] * 1e-3, equal_nan=True)


# --- every opcode has an evaluation rule --------------------------------------------------

def test_every_opcode_has_a_rule():
  handled = set(hlo_eval._OPS) | set(hlo_eval._ELEMENTWISE_KERNELS) | {
      "parameter", "call", "fusion", "convert", "bitcast-convert", "reduce-precision", "copy",
      "compare",
      "select", "clamp"}
  assert set(hlo.OPCODES) <= handled
  assert set(hlo.ELEMENTWISE) <= set(hlo_eval._ELEMENTWISE_KERNELS) | {
      "convert", "bitcast-convert", "reduce-precision", "copy", "compare", "select", "clamp"}


# --- unary float opcodes against NumPy float64 ------------------------------------------

def _vec(fn):
  return np.vectorize(fn, otypes=[np.float64])


def _erfinv64(y):
  if abs(y) >= 1:
    return math.copysign(INF, y) if abs(y) == 1 else NAN
  lo, hi = -6.0, 6.0
  for _ in range(200):
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if math.erf(mid) < y else (lo, mid)
  return (lo + hi) / 2


def _digamma64(x):
  """psi(x) = psi(x + 10) - sum 1/(x + k): psi(x + 10) = (log Gamma)' by a 4th-order central
  difference, far from the poles (error ~1e-11)."""
  h, y, lg = 1e-3, x + 10, math.lgamma
  fd = (-lg(y + 2 * h) + 8 * lg(y + h) - 8 * lg(y - h) + lg(y - 2 * h)) / (12 * h)
  return fd - sum(1 / (x + k) for k in range(10))


ANY = np.array([-3.7, -2.5, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 4.2])
POS = np.array([0.01, 0.3, 0.5, 1.0, 1.5, 2.5, 7.9, 30.0])
UNIT = np.array([-0.99, -0.7, -0.2, 0.0, 0.1, 0.5, 0.9, 0.999])
GE1 = np.array([1.0, 1.2, 2.0, 5.5, 40.0])

UNARY_FLOAT = [  # opcode, float64 reference, inputs
    ("abs", np.abs, ANY), ("negate", np.negative, ANY), ("sign", np.sign, ANY),
    ("floor", np.floor, ANY), ("ceil", np.ceil, ANY),
    ("round-nearest-afz", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5), ANY),
    ("round-nearest-even", np.rint, ANY),
    ("exponential", np.exp, ANY), ("exponential-minus-one", np.expm1, ANY),
    ("log", np.log, POS), ("log-plus-one", np.log1p, UNIT), ("tanh", np.tanh, ANY),
    ("logistic", lambda x: 1 / (1 + np.exp(-x)), ANY), ("sine", np.sin, ANY),
    ("cosine", np.cos, ANY), ("tan", np.tan, ANY), ("sqrt", np.sqrt, POS),
    ("rsqrt", lambda x: 1 / np.sqrt(x), POS), ("cbrt", np.cbrt, ANY),
    ("erf", _vec(math.erf), ANY), ("erfc", _vec(math.erfc), ANY),
    ("erf-inv", _vec(_erfinv64), UNIT), ("lgamma", _vec(math.lgamma), POS),
    ("digamma", _vec(_digamma64), POS), ("asin", np.arcsin, UNIT), ("acos", np.arccos, UNIT),
    ("atan", np.arctan, ANY), ("sinh", np.sinh, ANY), ("cosh", np.cosh, ANY),
    ("asinh", np.arcsinh, ANY), ("acosh", np.arccosh, GE1), ("atanh", np.arctanh, UNIT),
]


@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16], ids=str)
@pytest.mark.parametrize("opcode,ref,xs", UNARY_FLOAT, ids=[u[0] for u in UNARY_FLOAT])
def test_unary_float(opcode, ref, xs, dtype):
  x = xs.astype(dtype).reshape(1, -1)
  got = run_op(opcode, dtype, x)
  assert got.dtype == dtype and got.shape == x.shape
  with np.errstate(divide="ignore"):   # atanh(1.0): bfloat16 rounds 0.999 up to 1
    want = ref(wide(x))
  rtol = RTOL[dtype] if not (opcode == "digamma" and dtype == F64) else 1e-9  # finite-diff ref
  np.testing.assert_allclose(wide(got), want, rtol=rtol, atol=rtol * 1e-3)


def test_unary_special_values():
  x = np.array([NAN, INF, -INF, -0.0], F32)
  assert np.array_equal(run_op("is-finite", np.bool_, x), [False, False, False, True])
  s = run_op("sign", F32, np.array([-2.0, -0.0, 0.0, 3.0, NAN], F32))
  assert np.array_equal(s[:4], [-1, 0, 0, 1]) and np.signbit(s[1]) and np.isnan(s[4])
  afz = run_op("round-nearest-afz", F32, np.array([0.5, 1.5, 2.5, -0.5, -2.5], F32))
  even = run_op("round-nearest-even", F32, np.array([0.5, 1.5, 2.5, -0.5, -2.5], F32))
  assert afz.tolist() == [1, 2, 3, -1, -3] and even.tolist() == [0, 2, 2, -0.0, -2]
  assert np.isnan(run_op("sqrt", F32, np.array([-1.0], F32))[0])
  assert run_op("log", F32, np.array([0.0], F32))[0] == -INF
  assert run_op("erf-inv", F32, np.array([1.0, -1.0], F32)).tolist() == [INF, -INF]
  assert run_op("digamma", F32, np.array([0.0], F32))[0] == -INF          # XLA's psi(0)


@pytest.mark.parametrize("opcode,ref,out", [
    ("negate", np.negative, None), ("exponential", np.exp, None), ("log", np.log, None),
    ("sqrt", np.sqrt, None), ("sine", np.sin, None), ("cosine", np.cos, None),
    ("tanh", np.tanh, None), ("sign", lambda z: z / np.abs(z), None),
    ("abs", np.abs, F32), ("real", np.real, F32), ("imag", np.imag, F32)])
def test_unary_complex(opcode, ref, out):
  z = np.array([[1 + 2j, -1 - 0.5j, 3j, -2 + 0.25j]], np.complex64)
  got = run_op(opcode, out or z.dtype, z)
  assert got.dtype == (out or z.dtype)
  np.testing.assert_allclose(wide(got), ref(wide(z)), rtol=2e-6)


# --- integer unary and bitwise ----------------------------------------------------------

def test_integer_unary_ops():
  x = np.array([0, 1, -1, 256, IMIN, IMAX, 7], I32)
  assert run_op("not", I32, x).tolist() == (~x).tolist()
  assert run_op("popcnt", I32, x).tolist() == [0, 1, 32, 1, 1, 31, 3]
  assert run_op("count-leading-zeros", I32, x).tolist() == [32, 31, 0, 23, 0, 1, 29]
  assert run_op("abs", I32, x).tolist() == [0, 1, 1, 256, IMIN, IMAX, 7]     # |INT_MIN| wraps
  assert run_op("negate", I32, x).tolist() == [0, -1, 1, -256, IMIN, -IMAX, -7]
  assert run_op("sign", I32, x).tolist() == [0, 1, -1, 1, -1, 1, 1]
  u = np.array([0, 1, 2**32 - 1, 16], U32)
  assert run_op("count-leading-zeros", U32, u).tolist() == [32, 31, 0, 27]
  b = np.array([True, False])
  assert run_op("not", np.bool_, b).tolist() == [False, True]


# XLA:CPU results for int32 (x op y), produced with jaxlib from the same inputs.
INT_X = np.array([7, -7, 7, -7, IMIN, 5, 0, 1, -1, 3], I32)
INT_Y = np.array([2, 2, -2, 0, -1, 0, 0, 31, 32, -3], I32)
INT_XLA = {
    "divide": [3, -3, -3, -1, IMIN, -1, -1, 0, 0, -1],
    "remainder": [1, -1, 1, -7, 0, 5, 0, 1, -1, 0],
    "shift-left": [28, -28, 0, -7, 0, 5, 0, IMIN, 0, 0],
    "shift-right-arithmetic": [1, -2, 0, -7, -1, 5, 0, 0, -1, 0],
    "shift-right-logical": [1, 1073741822, 0, -7, 0, 5, 0, 0, 0, 0],
    "power": [49, 49, 0, 1, 0, 1, 1, 1, 1, 0],
    "maximum": [7, 2, 7, 0, -1, 5, 0, 31, 32, 3],
    "minimum": [2, -7, -2, -7, IMIN, 0, 0, 1, -1, -3],
    "add": [9, -5, 5, -7, IMAX, 5, 0, 32, 31, 0],
    "multiply": [14, -14, -14, 0, IMIN, 0, 0, 31, -32, -9],
    "and": [2, 0, 6, 0, IMIN, 0, 0, 1, 32, 1],
    "or": [7, -5, -1, -7, -1, 5, 0, 31, -1, -1],
    "xor": [5, -5, -7, -7, IMAX, 5, 0, 30, -33, -2],
}


@pytest.mark.parametrize("opcode", sorted(INT_XLA))
def test_integer_binary_xla_semantics(opcode):
  got = run_op(opcode, I32, INT_X, INT_Y)
  assert got.dtype == I32 and got.tolist() == INT_XLA[opcode]


def test_unsigned_edge_semantics():
  u = lambda *v: np.array(v, U32)
  assert run_op("divide", U32, u(7, 7), u(0, 2)).tolist() == [2**32 - 1, 3]      # x/0 = ~0
  assert run_op("remainder", U32, u(7, 7), u(0, 2)).tolist() == [7, 1]
  # shift-right-arithmetic shifts the bit pattern: the sign fill also for unsigned types
  assert run_op("shift-right-arithmetic", U32, u(2**31, 2**31), u(40, 4)).tolist() == \
      [2**32 - 1, 0xF8000000]
  assert run_op("shift-left", U32, u(1, 1), u(31, 32)).tolist() == [2**31, 0]


def test_integer_power_xla_semantics():
  # Checked against XLA:CPU: 6 exponent bits; an exponent >= 64 zeroes even bases;
  # negative exponents give 1 for base 1, +-1 for base -1, 0 otherwise.
  x = np.array([2, 3, 3, 2, 0, -1, -1, 1, 0, -2, 5, 2], I32)
  y = np.array([31, 100, 64, 64, 0, -3, -4, -5, -1, -2, 1000, 2**31 - 1], I32)
  want = [IMIN, -1953380655, 1, 0, 1, -1, 1, 1, 0, 0, -1413876383, 0]
  assert run_op("power", I32, x, y).tolist() == want
  ux = np.array([2, 3, 0, 255, 3, 1, 2, 5], np.uint8)
  uy = np.array([7, 5, 0, 2, 200, 255, 8, 3], np.uint8)
  assert run_op("power", np.uint8, ux, uy).tolist() == [128, 243, 1, 1, 161, 1, 0, 125]


# --- binary float ------------------------------------------------------------------------

X2 = np.array([-3.5, -1.0, -0.25, 0.0, 0.5, 2.0, 7.25, 100.0])
Y2 = np.array([2.0, -3.0, 0.75, 1.5, -0.5, 3.0, -2.5, 0.3])

BINARY_FLOAT = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("divide", np.divide), ("remainder", np.fmod), ("maximum", np.maximum),
    ("minimum", np.minimum), ("atan2", np.arctan2),
    ("power", lambda x, y: np.power(np.abs(x), y)),
]


@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16], ids=str)
@pytest.mark.parametrize("opcode,ref", BINARY_FLOAT, ids=[b[0] for b in BINARY_FLOAT])
def test_binary_float(opcode, ref, dtype):
  x, y = X2.astype(dtype), Y2.astype(dtype)
  if opcode == "power":
    x = np.abs(x)
  got = run_op(opcode, dtype, x, y)
  assert got.dtype == dtype
  want = ref(wide(x), wide(y))
  if opcode in ("add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder"):
    assert np.array_equal(wide(got), wide(want.astype(dtype)))   # exact, correctly rounded
  else:
    assert_close(got, want, dtype)


def test_float_edge_semantics():
  f = lambda *v: np.array(v, F32)
  assert np.isnan(run_op("maximum", F32, f(1.0, NAN), f(NAN, 1.0))).all()   # NaN propagates
  assert np.isnan(run_op("minimum", F32, f(1.0, NAN), f(NAN, 1.0))).all()
  assert run_op("divide", F32, f(1.0, -1.0), f(0.0, 0.0)).tolist() == [INF, -INF]
  assert np.isnan(run_op("divide", F32, f(0.0), f(0.0))[0])
  nxt = run_op("next-after", F32, f(1.0, 0.0), f(2.0, -1.0))
  assert nxt[0] == np.nextafter(np.float32(1), np.float32(2)) and nxt[1] == -np.float32(1.4e-45)
  z = run_op("complex", np.complex64, f(1.0, INF), f(-2.0, 0.5))
  assert z.dtype == np.complex64 and z.tolist() == [1 - 2j, complex(INF, 0.5)]


# --- compare, select, clamp ---------------------------------------------------------------

TOTAL = np.array([-NAN, -INF, -1.0, -0.0, 0.0, 1e-3, 1.0, INF, NAN], F32)   # ascending


@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16], ids=str)
def test_compare_totalorder_and_float(dtype):
  x = np.asarray(TOTAL, dtype)
  x[0] = -np.abs(x[0])   # keep the sign of -NaN through the cast
  lo, hi = x[:-1], x[1:]
  lt = lambda a, b, ct: run_op("compare", np.bool_, a, b, direction="LT", compare_type=ct)
  assert lt(lo, hi, "TOTALORDER").all() and not lt(hi, lo, "TOTALORDER").any()
  eq = lambda a, b, ct: run_op("compare", np.bool_, a, b, direction="EQ", compare_type=ct)
  z = np.array([-0.0, NAN], dtype)
  w = np.array([0.0, NAN], dtype)
  assert eq(z, w, "FLOAT").tolist() == [True, False]
  assert eq(z, w, "TOTALORDER").tolist() == [False, True]


@pytest.mark.parametrize("direction,op", [("EQ", np.equal), ("NE", np.not_equal),
                                          ("LT", np.less), ("LE", np.less_equal),
                                          ("GT", np.greater), ("GE", np.greater_equal)])
@pytest.mark.parametrize("dtype", [F32, I32, U32, np.dtype(np.bool_)], ids=str)
def test_compare_directions(direction, op, dtype):
  x = np.array([0, 1, 2, 3, 1, 0]).astype(dtype)
  y = np.array([1, 1, 0, 3, 0, 0]).astype(dtype)
  got = run_op("compare", np.bool_, x, y, direction=direction)
  assert got.dtype == np.bool_ and got.tolist() == op(x, y).tolist()


def test_integer_compare_ignores_compare_type():
  # XLA:CPU compares integers by their element type, whatever compare_type says.
  x, y = np.array([-1, 0], I32), np.array([0, -1], I32)
  assert run_op("compare", np.bool_, x, y, direction="LT",
                compare_type="UNSIGNED").tolist() == [True, False]
  u, v = np.array([2**32 - 1, 0], U32), np.array([0, 1], U32)
  assert run_op("compare", np.bool_, u, v, direction="LT",
                compare_type="SIGNED").tolist() == [False, True]


def test_select_and_clamp():
  b = Builder()
  p, x, y = b.param(np.bool_, 2, 3), b.param(F32, 2, 3), b.param(F32, 2, 3)
  pred = np.array([[True, False, True], [False, False, True]])
  xv, yv = np.arange(6, dtype=F32).reshape(2, 3), -np.ones((2, 3), F32)
  out, = b.run(b.op("select", S(F32, 2, 3), p, x, y), pred, xv, yv)
  assert np.array_equal(out, np.where(pred, xv, yv))
  # clamp with scalar bounds (XLA allows them) and NaN propagation
  b = Builder()
  lo, x, hi = b.param(F32), b.param(F32, 5), b.param(F32)
  out, = b.run(b.op("clamp", S(F32, 5), lo, x, hi), np.float32(-1),
               np.array([-5, -1, 0.5, 3, NAN], F32), np.float32(2))
  assert out.shape == (5,) and np.array_equal(out[:4], [-1, -1, 0.5, 2]) and np.isnan(out[4])


# --- conversions ---------------------------------------------------------------------------

def test_convert_xla_semantics():
  f = np.array([NAN, 3e9, -3e9, 2.7, -2.7, INF, -INF], F32)
  assert run_op("convert", I32, f).tolist() == [0, IMAX, IMIN, 2, -2, IMAX, IMIN]
  assert run_op("convert", np.uint8, f).tolist() == [0, 255, 0, 2, 0, 255, 0]
  assert run_op("convert", np.bool_, np.array([0.0, -0.0, NAN, 0.5], F32)).tolist() == \
      [False, False, True, True]
  assert run_op("convert", np.bool_, np.array([0, 3, -1], I32)).tolist() == [False, True, True]
  assert run_op("convert", F32, np.array([1 + 2j, -3j], np.complex64)).tolist() == [1.0, 0.0]
  h = run_op("convert", F16, np.array([70000.0, 1.0 + 2**-11, 1e-8], F32))   # f16 rounding
  assert h.dtype == F16 and h.tolist() == [INF, 1.0, 0.0]
  bf = run_op("convert", BF16, np.array([1.0 + 2**-8, 3.0e38], F32))
  assert bf.dtype == BF16 and float(bf[0]) == 1.0 and float(bf[1]) == float(BF16.type(3.0e38))
  i = run_op("convert", F32, np.array([2**24 + 1, -7], I32))
  assert i.tolist() == [2.0**24, -7.0]


def test_bitcast_convert():
  x = np.array([1.0, -2.0], F32)
  assert run_op("bitcast-convert", I32, x).tolist() == [0x3F800000, -0x40000000]
  b = Builder()
  p = b.param(F32, 2)
  u8 = b.op("bitcast-convert", S(np.uint8, 2, 4), p)
  back = b.op("bitcast-convert", S(F32, 2), u8)
  bytes_, again = b.run(b.op("tuple", hlo.TupleShape((u8.shape, back.shape)), u8, back), x)
  assert bytes_.tolist() == list(map(list, x.view(np.uint8).reshape(2, 4))) and \
      np.array_equal(again, x)


@pytest.mark.parametrize("bits,ref", [((8, 7), BF16), ((5, 10), F16)])
def test_reduce_precision_matches_narrow_formats(bits, ref):
  x = np.array([1.0, 1 + 2**-9, 3.14159, -2.71828, 1 / 3, 1e4, 1234.5678], F32)
  got = run_op("reduce-precision", F32, x, exponent_bits=bits[0], mantissa_bits=bits[1])
  assert np.array_equal(got, x.astype(ref).astype(F32))


def test_reduce_precision_overflow_and_nan():
  x = np.array([70000.0, -70000.0, NAN, 65504.0], F32)
  got = run_op("reduce-precision", F32, x, exponent_bits=5, mantissa_bits=10)
  assert got[:2].tolist() == [INF, -INF] and np.isnan(got[2]) and got[3] == 65504.0


def test_copy_and_dtype_preservation():
  for dt in (F16, BF16, np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.complex64)):
    x = np.arange(6).reshape(2, 3).astype(dt)
    assert run_op("copy", dt, x).dtype == dt
    if dt.kind != "c":
      out = run_op("add", dt, x, x)
      assert out.dtype == dt and np.array_equal(wide(out), wide((x + x).astype(dt)))


# --- structural ----------------------------------------------------------------------------

def test_broadcast_reshape_transpose_reverse():
  b = Builder()
  x = b.param(F32, 2, 3)
  xv = np.arange(6, dtype=F32).reshape(2, 3)
  bc = b.op("broadcast", S(F32, 3, 4, 2), x, dimensions=(2, 0))     # operand dim i -> dims[i]
  rs = b.op("reshape", S(F32, 3, 2), x)
  tr = b.op("transpose", S(F32, 3, 2), x, dimensions=(1, 0))
  rv = b.op("reverse", S(F32, 2, 3), x, dimensions=(0, 1))
  sc = b.op("broadcast", S(F32, 2, 2), b.const(np.float32(5)), dimensions=())
  outs = b.run(b.op("tuple", hlo.TupleShape(tuple(i.shape for i in (bc, rs, tr, rv, sc))),
                    bc, rs, tr, rv, sc), xv)
  assert np.array_equal(outs[0], np.broadcast_to(xv.T[:, None, :], (3, 4, 2)))
  assert np.array_equal(outs[1], xv.reshape(3, 2))
  assert np.array_equal(outs[2], xv.T)
  assert np.array_equal(outs[3], xv[::-1, ::-1])
  assert np.array_equal(outs[4], np.full((2, 2), 5, F32))


def test_slice_concatenate_iota():
  b = Builder()
  x = b.param(I32, 4, 6)
  xv = np.arange(24, dtype=I32).reshape(4, 6)
  sl = b.op("slice", S(I32, 2, 2), x, start=(1, 0), limit=(4, 6), strides=(2, 3))
  sl1 = b.op("slice", S(I32, 2, 3), x, start=(0, 3), limit=(2, 6), strides=None)
  cc = b.op("concatenate", S(I32, 4, 9), x, b.op("slice", S(I32, 4, 3), x, start=(0, 0),
                                                  limit=(4, 3), strides=(1, 1)), dimension=1)
  io = b.op("iota", S(F32, 2, 3), iota_dimension=1)
  io0 = b.op("iota", S(np.uint8, 3, 2), iota_dimension=0)
  outs = b.run(b.op("tuple", hlo.TupleShape(tuple(i.shape for i in (sl, sl1, cc, io, io0))),
                    sl, sl1, cc, io, io0), xv)
  assert np.array_equal(outs[0], xv[1:4:2, 0:6:3])
  assert np.array_equal(outs[1], xv[0:2, 3:6])
  assert np.array_equal(outs[2], np.concatenate([xv, xv[:, :3]], 1))
  assert outs[3].dtype == F32 and outs[3].tolist() == [[0, 1, 2], [0, 1, 2]]
  assert outs[4].dtype == np.uint8 and outs[4].tolist() == [[0, 0], [1, 1], [2, 2]]


@pytest.mark.parametrize("config", [((1, 2, 0), (0, 1, 1)), ((-1, 1, 2), (2, -2, 0)),
                                    ((0, 0, 1), (-1, -1, 3))])
def test_pad_negative_and_interior(config):
  xv = np.arange(12, dtype=F32).reshape(3, 4)
  want = np.asarray(lax.pad(xv, np.float32(-1), config))
  b = Builder()
  x, v = b.param(F32, 3, 4), b.param(F32)
  low, high, interior = zip(*config)
  out, = b.run(b.op("pad", S(F32, *want.shape), x, v, low=low, high=high, interior=interior),
               xv, np.float32(-1))
  assert np.array_equal(out, want)


def test_dynamic_slice_and_update_clamp():
  xv = np.arange(20, dtype=F32).reshape(4, 5)
  b = Builder()
  x, i, j = b.param(F32, 4, 5), b.param(I32), b.param(I32)
  ds = b.op("dynamic-slice", S(F32, 2, 3), x, i, j, sizes=(2, 3))
  upd = b.const(-np.ones((2, 3), F32))
  dus = b.op("dynamic-update-slice", S(F32, 4, 5), x, upd, i, j)
  for iv, jv in [(1, 1), (-3, 7), (3, 4)]:   # starts clamp so the window stays inside
    got_ds, got_dus = b.run(b.op("tuple", hlo.TupleShape((ds.shape, dus.shape)), ds, dus),
                            xv, np.int32(iv), np.int32(jv))
    ci, cj = min(max(iv, 0), 2), min(max(jv, 0), 2)
    assert np.array_equal(got_ds, xv[ci:ci + 2, cj:cj + 3])
    want = xv.copy()
    want[ci:ci + 2, cj:cj + 3] = -1
    assert np.array_equal(got_dus, want)


# --- reduce ------------------------------------------------------------------------------

def _reduce_module(opcode, dt, shape, dims, init):
  b = Builder()
  x = b.param(dt, *shape)
  out_dims = tuple(d for i, d in enumerate(shape) if i not in dims)
  r = b.op("reduce", S(dt, *out_dims), x, b.const(init, dt), dimensions=dims,
           called=[binary_comp(b.m, opcode, dt)])
  b.c.root = r
  return b


@pytest.mark.parametrize("opcode,np_fn,dt,init", [
    ("add", np.sum, F32, 0.0), ("add", np.sum, F32, 10.0), ("multiply", np.prod, I32, 1),
    ("maximum", np.max, F32, -INF), ("minimum", np.min, I32, IMAX),
    ("and", np.all, np.bool_, True), ("or", np.any, np.bool_, False),
    ("xor", lambda x, axis: np.bitwise_xor.reduce(x, axis=axis), I32, 0),
    ("add", np.sum, BF16, 0.0), ("add", np.sum, np.dtype(np.complex64), 0)])
@pytest.mark.parametrize("dims", [(1,), (0, 2), (0, 1, 2)])
def test_reduce_known_ops(opcode, np_fn, dt, init, dims):
  rng = np.random.default_rng(0)
  xv = (rng.random((3, 4, 5)) < 0.8 if dt == np.bool_
        else (rng.normal(size=(3, 4, 5)) * 3).astype(dt))
  b = _reduce_module(opcode, dt, (3, 4, 5), dims, init)
  out, = evaluate(b.m, [xv])
  want = np_fn(wide(xv) if np.dtype(dt).kind in "fcV" else xv, axis=dims)
  if opcode == "add":
    want = want + init
  assert out.dtype == dt and out.shape == np.shape(want)
  if np.dtype(dt).kind in "fcV":
    assert_close(out, want, dt if dt in RTOL else F32)
  else:
    assert np.array_equal(out, want)


def test_reduce_nan_empty_and_int_wrap():
  xv = np.array([[1.0, NAN, 3.0], [4.0, 5.0, -1.0]], F32)
  out, = evaluate(_reduce_module("maximum", F32, (2, 3), (1,), -INF).m, [xv])
  assert np.isnan(out[0]) and out[1] == 5.0
  out, = evaluate(_reduce_module("add", F32, (0, 3), (0,), 2.5).m, [np.zeros((0, 3), F32)])
  assert out.tolist() == [2.5, 2.5, 2.5]                                 # empty: the init
  out, = evaluate(_reduce_module("multiply", I32, (3,), (0,), 1).m,
                  [np.array([65536, 65536, 3], I32)])
  assert out.dtype == I32 and out == 0                                   # wraps like XLA


def _generic_add(m, dt, form):
  """`a + b` in forms the evaluator does not recognize as a plain add: `copy(a) + b`, a
  `call` of an add computation (both run on whole vectors of lanes), or (loop) through
  rank-1 broadcasts, which forces the per-element fallback."""
  if form == "call":
    inner = binary_comp(m, "add", dt)
    return scalar_comp(m, "gadd", [dt, dt], lambda c, a, bb: c.add(hlo.Instr(
        "call", S(dt), [a, bb], called=[inner])))

  def body(c, a, bb):
    if form == "loop":
      a = c.add(hlo.Instr("reshape", S(dt), [c.add(hlo.Instr("broadcast", S(dt, 1), [a],
                                                             {"dimensions": ()}))]))
    else:
      a = c.add(hlo.Instr("copy", S(dt), [a]))
    return c.add(hlo.Instr("add", S(dt), [a, bb]))
  return scalar_comp(m, "gadd", [dt, dt], body)


@pytest.mark.parametrize("form", ["copy", "call", "loop"])
def test_reduce_generic_computation(form):
  xv = np.arange(2 * 7 * 3, dtype=I32).reshape(2, 7, 3) * 3 - 40
  b = Builder()
  x = b.param(I32, 2, 7, 3)
  b.c.root = b.op("reduce", S(I32, 3), x, b.const(5, I32), dimensions=(0, 1),
                  called=[_generic_add(b.m, I32, form)])
  out, = evaluate(b.m, [xv])
  assert out.tolist() == (xv.sum(axis=(0, 1)) + 5).tolist()


def _argmax_comp(m, vdt, idt):
  """Lowering's argmax combiner: larger value wins, NaN beats numbers, ties -> lower index."""
  def body(c, av, ai, bv, bi):
    cmp = lambda x, y, d: c.add(hlo.Instr("compare", S(np.bool_), [x, y], {"direction": d}))
    bo = lambda op, x, y: c.add(hlo.Instr(op, S(np.bool_), [x, y]))
    a_nan, b_nan = cmp(av, av, "NE"), cmp(bv, bv, "NE")
    not_b_nan = c.add(hlo.Instr("not", S(np.bool_), [b_nan]))
    better = bo("or", cmp(av, bv, "GT"), bo("and", a_nan, not_b_nan))
    tie = bo("or", cmp(av, bv, "EQ"), bo("and", a_nan, b_nan))
    pick = bo("or", better, bo("and", tie, cmp(ai, bi, "LT")))
    v = c.add(hlo.Instr("select", S(vdt), [pick, av, bv]))
    i = c.add(hlo.Instr("select", S(idt), [pick, ai, bi]))
    return c.add(hlo.Instr("tuple", hlo.TupleShape((S(vdt), S(idt))), [v, i]))
  return scalar_comp(m, "argmax", [vdt, idt, vdt, idt], body)


def test_variadic_reduce_argmax():
  xv = np.array([[1, 5, 5, 2, 0, 5, 3], [NAN, 1, NAN, 9, 2, 2, 1], [-1, -1, -1, -1, -1, -1, -1],
                 [0, 2, 7, 7, 7, 1, 7]], F32)
  b = Builder()
  x = b.param(F32, 4, 7)
  io = b.op("iota", S(I32, 4, 7), iota_dimension=1)
  r = b.op("reduce", hlo.TupleShape((S(F32, 4), S(I32, 4))), x, io, b.const(-INF, F32),
           b.const(0, I32), dimensions=(1,), called=[_argmax_comp(b.m, F32, I32)])
  vals, idx = b.run(b.op("tuple", r.shape, b.op("get-tuple-element", S(F32, 4), r, index=0),
                         b.op("get-tuple-element", S(I32, 4), r, index=1)), xv)
  assert idx.tolist() == np.argmax(xv, axis=1).tolist() == [1, 0, 0, 2]
  assert vals[0] == 5 and np.isnan(vals[1]) and vals[3] == 7


# --- dot -----------------------------------------------------------------------------------

@pytest.mark.parametrize("lhs_shape,rhs_shape,attrs,spec", [
    ((3, 4), (4, 5), dict(lhs_contracting_dims=(1,), rhs_contracting_dims=(0,)), "ik,kj->ij"),
    ((4, 3), (4, 5), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,)), "ki,kj->ij"),
    ((2, 3, 4), (2, 5, 4), dict(lhs_contracting_dims=(2,), rhs_contracting_dims=(2,),
                                lhs_batch_dims=(0,), rhs_batch_dims=(0,)), "bik,bjk->bij"),
    ((3, 2, 4), (4, 2), dict(lhs_contracting_dims=(2,), rhs_contracting_dims=(0,),
                             lhs_batch_dims=(1,), rhs_batch_dims=(1,)), "ibk,kb->bi"),
    ((4,), (4,), dict(lhs_contracting_dims=(0,), rhs_contracting_dims=(0,)), "k,k->"),
])
def test_dot(lhs_shape, rhs_shape, attrs, spec):
  rng = np.random.default_rng(1)
  lv, rv = rng.normal(size=lhs_shape).astype(F32), rng.normal(size=rhs_shape).astype(F32)
  want = np.einsum(spec, wide(lv), wide(rv))
  b = Builder()
  l, r = b.param(F32, *lhs_shape), b.param(F32, *rhs_shape)
  out, = b.run(b.op("dot", S(F32, *want.shape), l, r, **attrs), lv, rv)
  assert out.dtype == F32 and out.shape == want.shape
  np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_dot_integer_output_type():
  lv = np.full((2, 8), 100, I8)
  b = Builder()
  l, r = b.param(I8, 2, 8), b.param(I8, 8, 2)
  out, = b.run(b.op("dot", S(I32, 2, 2), l, r, lhs_contracting_dims=(1,),
                    rhs_contracting_dims=(0,)), lv, lv.T.copy())
  assert out.dtype == I32 and (out == 80000).all()


# --- gather / scatter (index_vector_dim anywhere; cases checked against XLA:CPU) --------------

def _gather(op, idx, out_shape, **attrs):
  b = Builder()
  o, i = b.param(op.dtype, *op.shape), b.param(idx.dtype, *idx.shape)
  out, = b.run(b.op("gather", S(op.dtype, *out_shape), o, i, **attrs), op, idx)
  return out


def test_gather_index_vector_dim_first_and_clamping():
  op = np.arange(15, dtype=F32).reshape(5, 3)
  out = _gather(op, np.array([[0, 4, 7, -2]], I32), (4, 3), offset_dims=(1,),
                collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=0,
                slice_sizes=(1, 3))
  assert np.array_equal(out, op[[0, 4, 4, 0]])           # out-of-bounds starts clamp


@pytest.mark.parametrize("ivd", [0, 1, 2])
def test_gather_matches_lax_gather(ivd):
  rng = np.random.default_rng(ivd)
  op = np.arange(120, dtype=F32).reshape(4, 5, 6)
  last = rng.integers(-1, 6, size=(3, 2, 2)).astype(I32)       # index vectors last
  idx = np.moveaxis(last, -1, ivd)
  dn = lax.GatherDimensionNumbers(offset_dims=(2,), collapsed_slice_dims=(0, 2),
                                  start_index_map=(0, 2))
  want = np.asarray(lax.gather(op, last, dn, (1, 5, 1), mode="clip"))
  out = _gather(op, idx, want.shape, offset_dims=(2,), collapsed_slice_dims=(0, 2),
                start_index_map=(0, 2), index_vector_dim=ivd, slice_sizes=(1, 5, 1))
  assert np.array_equal(out, want)


def test_gather_scalar_indices_and_batching_dims():
  op = np.arange(120, dtype=F32).reshape(4, 5, 6)
  idx = np.array([[0, 4, 9], [-1, 2, 3]], I32)         # index_vector_dim = rank: scalars
  out = _gather(op, idx, (2, 3, 2, 6), offset_dims=(2, 3), collapsed_slice_dims=(1,),
                start_index_map=(1,), index_vector_dim=2, slice_sizes=(2, 1, 6))
  clamped = np.clip(idx, 0, 4)
  assert np.array_equal(out, np.moveaxis(op[:2][:, clamped], 0, 2))
  op3 = np.arange(30, dtype=F32).reshape(3, 5, 2)
  idx3 = np.array([[[0, 4, 1, 2], [3, 3, 0, 9], [1, 2, 3, 4]]], I32)   # ivd=0, batch dim 1
  out = _gather(op3, idx3, (3, 4, 2), offset_dims=(2,), collapsed_slice_dims=(1,),
                start_index_map=(1,), operand_batching_dims=(0,),
                start_indices_batching_dims=(1,), index_vector_dim=0, slice_sizes=(1, 1, 2))
  rows = np.clip(idx3[0], 0, 4)
  assert np.array_equal(out, op3[np.arange(3)[:, None], rows])


def _scatter(op, idx, upd, comp_fn, **attrs):
  b = Builder()
  ps = [b.param(v.dtype, *v.shape) for v in (op, idx, upd)]
  out, = b.run(b.op("scatter", S(op.dtype, *op.shape), *ps, called=[comp_fn(b.m)], **attrs),
               op, idx, upd)
  return out


SC_ATTRS = dict(update_window_dims=(1,), inserted_window_dims=(0,),
                scatter_dims_to_operand_dims=(0,), index_vector_dim=0)


def test_scatter_add_duplicates_and_out_of_bounds():
  op = np.arange(15, dtype=F32).reshape(5, 3)
  idx = np.array([[0, 4, 0, 7, -1, 2]], I32)
  upd = np.arange(18, dtype=F32).reshape(6, 3) / 4
  out = _scatter(op, idx, upd, lambda m: binary_comp(m, "add", F32), **SC_ATTRS)
  want = op.copy()
  for k, r in enumerate(idx[0]):
    if 0 <= r < 5:                                     # XLA drops out-of-bounds windows
      want[r] += upd[k]
  assert np.array_equal(out, want)


def test_scatter_sequential_general_combiner():
  """old*2 + new, applied once per update in update order (checked against XLA:CPU)."""
  def comp(m):
    def body(c, a, bb):
      two = c.add(hlo.Instr("constant", S(F32), attrs={"value": np.float32(2)}))
      return c.add(hlo.Instr("add", S(F32), [c.add(hlo.Instr("multiply", S(F32), [a, two])), bb]))
    return scalar_comp(m, "lin", [F32, F32], body)
  op = np.ones((4, 2), F32)
  idx = np.array([[1, 3, 1, 1, 5]], I32)
  upd = np.arange(10, dtype=F32).reshape(5, 2)
  out = _scatter(op, idx, upd, comp, **SC_ATTRS)
  want = op.copy()
  for k, r in enumerate(idx[0]):
    if r < 4:
      want[r] = want[r] * 2 + upd[k]
  assert np.array_equal(out, want)


def test_scatter_overwrite_and_scalar_indices():
  op = np.zeros((5, 3), I32)
  idx = np.array([[0, 1, 0], [4, 2, 4]], I32)      # index_vector_dim=2: scalar indices
  upd = np.arange(18, dtype=I32).reshape(2, 3, 3)
  overwrite = lambda m: scalar_comp(m, "set", [I32, I32], lambda c, a, bb: bb)
  out = _scatter(op, idx.reshape(2, 3)[:, :2].copy(), upd[:, :2].copy(), overwrite,
                 update_window_dims=(2,), inserted_window_dims=(0,),
                 scatter_dims_to_operand_dims=(0,), index_vector_dim=2)
  assert out.tolist() == [[0, 1, 2], [3, 4, 5], [12, 13, 14], [0] * 3, [9, 10, 11]]


def test_variadic_scatter():
  def comp(m):   # (old0, old1, new0, new1) -> (old0 + new0, max(old1, new1))
    def body(c, a0, a1, b0, b1):
      s = c.add(hlo.Instr("add", S(F32), [a0, b0]))
      mx = c.add(hlo.Instr("maximum", S(I32), [a1, b1]))
      return c.add(hlo.Instr("tuple", hlo.TupleShape((S(F32), S(I32))), [s, mx]))
    return scalar_comp(m, "pair", [F32, I32, F32, I32], body)
  b = Builder()
  o0, o1, i, u0, u1 = b.param(F32, 3), b.param(I32, 3), b.param(I32, 4, 1), b.param(F32, 4), \
      b.param(I32, 4)
  shape = hlo.TupleShape((S(F32, 3), S(I32, 3)))
  r = b.op("scatter", shape, o0, o1, i, u0, u1, called=[comp(b.m)], update_window_dims=(),
           inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
  s, mx = b.run(r, np.zeros(3, F32), np.zeros(3, I32), np.array([[0], [2], [0], [2]], I32),
                np.array([1, 2, 3, 4], F32), np.array([5, -1, 2, 7], I32))
  assert s.tolist() == [4, 0, 6] and mx.tolist() == [5, 0, 7]


# --- sort / top-k ------------------------------------------------------------------------

def _jax_comparator(m, dtypes_, num_keys=1, descending=False):
  """JAX's comparator: canonicalize -0.0 -> 0.0 and NaN -> NaN, then TOTALORDER LT,
  lexicographically over the first num_keys operands."""
  def body(c, *ps):
    def canon(x, dt):
      if np.dtype(dt).kind != "f":
        return x
      zero = c.add(hlo.Instr("constant", S(dt), attrs={"value": np.zeros((), dt)}))
      nan = c.add(hlo.Instr("constant", S(dt), attrs={"value": np.full((), NAN, dt)}))
      x = c.add(hlo.Instr("select", S(dt), [c.add(hlo.Instr(
          "compare", S(np.bool_), [x, zero], {"direction": "EQ"})), zero, x]))
      return c.add(hlo.Instr("select", S(dt), [c.add(hlo.Instr(
          "compare", S(np.bool_), [x, x], {"direction": "NE"})), nan, x]))
    result = None
    for k in reversed(range(num_keys)):
      dt = dtypes_[k]
      a, bb = canon(ps[2 * k], dt), canon(ps[2 * k + 1], dt)
      if descending:
        a, bb = bb, a
      ct = "TOTALORDER" if np.dtype(dt).kind == "f" else None
      cmp = lambda d: c.add(hlo.Instr("compare", S(np.bool_), [a, bb],
                                      {"direction": d, "compare_type": ct}))
      lt = cmp("LT")
      if result is None:
        result = lt
      else:
        tie = c.add(hlo.Instr("and", S(np.bool_), [cmp("EQ"), result]))
        result = c.add(hlo.Instr("or", S(np.bool_), [lt, tie]))
    return result
  return scalar_comp(m, "compare", [dt for dt in dtypes_ for _ in (0, 1)], body)


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_sort_with_jax_comparator(n):
  rng = np.random.default_rng(n)
  xv = rng.integers(-3, 4, size=(3, n)).astype(F32)
  xv[rng.random((3, n)) < 0.2] = NAN
  xv[rng.random((3, n)) < 0.2] = -0.0
  b = Builder()
  x = b.param(F32, 3, n)
  out, = b.run(b.op("sort", S(F32, 3, n), x, dimension=1, is_stable=True,
                    called=[_jax_comparator(b.m, [F32])]), xv)
  want = np.asarray(lax.sort(xv, dimension=1))
  assert np.array_equal(out, want, equal_nan=True)
  assert np.array_equal(np.signbit(out), np.signbit(want))      # -0.0/0.0 keep input order


def test_sort_key_value_stable_along_dim0_and_descending():
  keys = np.array([[3, 1], [1, 1], [3, 0], [2, 1], [1, 0]], I32)
  vals = np.arange(10, dtype=F32).reshape(5, 2)
  b = Builder()
  k, v = b.param(I32, 5, 2), b.param(F32, 5, 2)
  shape = hlo.TupleShape((S(I32, 5, 2), S(F32, 5, 2)))
  r = b.op("sort", shape, k, v, dimension=0, is_stable=True,
           called=[_jax_comparator(b.m, [I32, F32])])
  ks, vs = b.run(r, keys, vals)
  wk, wv = lax.sort_key_val(keys, vals, dimension=0)
  assert np.array_equal(ks, wk) and np.array_equal(vs, wv)
  b = Builder()
  k = b.param(I32, 6)
  out, = b.run(b.op("sort", S(I32, 6), k, dimension=0, is_stable=True,
                    called=[_jax_comparator(b.m, [I32], descending=True)]),
               np.array([3, -1, 7, 3, 0, 9], I32))
  assert out.tolist() == [9, 7, 3, 3, 0, -1]


def test_sort_two_keys_and_no_comparator():
  k1 = np.array([2, 1, 2, 1, 0], I32)
  k2 = np.array([5.0, 3.0, 1.0, NAN, 4.0], F32)
  b = Builder()
  a, c = b.param(I32, 5), b.param(F32, 5)
  shape = hlo.TupleShape((S(I32, 5), S(F32, 5)))
  s1, s2 = b.run(b.op("sort", shape, a, c, dimension=0, is_stable=True,
                      called=[_jax_comparator(b.m, [I32, F32], num_keys=2)]), k1, k2)
  assert s1.tolist() == [0, 1, 1, 2, 2] and s2[:2].tolist() == [4, 3] and np.isnan(s2[2])
  b = Builder()   # a sort without comparator: JAX's order over `num_keys` (default 1)
  a = b.param(F32, 4)
  out, = b.run(b.op("sort", S(F32, 4), a, dimension=0, is_stable=True, num_keys=1),
               np.array([NAN, 2, -INF, 0], F32))
  assert out[:3].tolist() == [-INF, 0, 2] and np.isnan(out[3])


def _unary_key_comparator(m, dt, key_op, compare_type=None):
  """lhs < rhs on key_op(x) (e.g. abs): an order NumPy's guesses do not match, so the
  evaluator's merge sort runs."""
  def body(c, a, bb):
    if key_op:
      a, bb = (c.add(hlo.Instr(key_op, S(dt), [v])) for v in (a, bb))
    return c.add(hlo.Instr("compare", S(np.bool_), [a, bb],
                           {"direction": "LT", "compare_type": compare_type}))
  return scalar_comp(m, "cmp", [dt, dt], body)


@pytest.mark.parametrize("shape,dim", [((40,), 0), ((3, 17), 1), ((9, 4, 2), 0)])
def test_sort_general_comparator_merge_sort(shape, dim):
  rng = np.random.default_rng(len(shape))
  xv = rng.integers(-5, 6, size=shape).astype(I32)
  b = Builder()
  x = b.param(I32, *shape)
  out, = b.run(b.op("sort", S(I32, *shape), x, dimension=dim, is_stable=True,
                    called=[_unary_key_comparator(b.m, I32, "abs")]), xv)
  perm = np.argsort(np.abs(xv), axis=dim, kind="stable")
  assert np.array_equal(out, np.take_along_axis(xv, perm, axis=dim))


def test_sort_raw_totalorder_comparator():
  """TOTALORDER without JAX's canonicalization orders -NaN < -0.0 < 0.0 < NaN."""
  xv = np.array([NAN, 0.0, -0.0, 1.0, -NAN, -1.0, 0.0, -0.0], F32)
  xv[4] = -np.abs(xv[4])
  b = Builder()
  x = b.param(F32, 8)
  out, = b.run(b.op("sort", S(F32, 8), x, dimension=0, is_stable=True,
                    called=[_unary_key_comparator(b.m, F32, None, "TOTALORDER")]), xv)
  assert np.isnan(out[0]) and np.signbit(out[0]) and np.isnan(out[7]) and not np.signbit(out[7])
  assert out[1:7].tolist() == [-1.0, -0.0, -0.0, 0.0, 0.0, 1.0]
  assert np.signbit(out[2:4]).all() and not np.signbit(out[4:6]).any()


def test_top_k():
  xv = np.array([[1, 5, NAN, 5, -2], [0, -0.0, 3, 3, 1]], F32)
  b = Builder()
  x = b.param(F32, 2, 5)
  shape = hlo.TupleShape((S(F32, 2, 3), S(I32, 2, 3)))
  vals, idx = b.run(b.op("top-k", shape, x, k=3), xv)
  wv, wi = lax.top_k(xv, 3)
  assert np.array_equal(vals, wv, equal_nan=True) and np.array_equal(idx, wi)
  assert idx.dtype == I32 and idx.tolist() == [[2, 1, 3], [2, 3, 4]]


# --- tuples, calls, control flow -----------------------------------------------------------

def _sub_comp(m, name, shapes, body):
  c = m.new_computation(name)
  ps = [c.add(hlo.Instr("parameter", s, attrs={"number": i})) for i, s in enumerate(shapes)]
  c.root = body(c, *ps)
  return c


def test_call_fusion_tuple_barrier():
  b = Builder()
  x, y = b.param(F32, 3), b.param(F32, 3)
  f = _sub_comp(b.m, "f", [S(F32, 3), S(F32, 3)], lambda c, p, q: c.add(hlo.Instr(
      "multiply", S(F32, 3), [c.add(hlo.Instr("sine", S(F32, 3), [p])), q])))
  f.is_fusion = True
  call = b.op("call", S(F32, 3), x, y, called=[f])
  fus = b.op("fusion", S(F32, 3), y, x, called=[f], kind="kLoop")
  tup = b.op("tuple", hlo.TupleShape((S(F32, 3), S(F32, 3))), call, fus)
  bar = b.op("optimization-barrier", tup.shape, tup)
  g0 = b.op("get-tuple-element", S(F32, 3), bar, index=0)
  g1 = b.op("get-tuple-element", S(F32, 3), bar, index=1)
  xv, yv = np.array([0.5, 1.0, 2.0], F32), np.array([2.0, -1.0, 3.0], F32)
  record = {}
  b.c.root = b.op("tuple", tup.shape, g0, b.op("copy", S(F32, 3), g1))
  a, c = evaluate(b.m, [xv, yv], record=record)
  assert_close(a, np.sin(wide(xv)) * yv, F32)
  assert_close(c, np.sin(wide(yv)) * xv, F32)
  assert isinstance(record[bar], tuple) and np.array_equal(record[g0], a)
  assert set(record) == set(b.c.instrs)
  by_name = evaluate_intermediates(b.m, [xv, yv])
  assert set(by_name) == {i.name for i in b.c.instrs}
  assert np.array_equal(by_name[call.name], a) and np.array_equal(by_name["p1"], yv)


def test_while_loop():
  # state (i, acc): while i < 10: acc += i; i += 1
  b = Builder()
  st = hlo.TupleShape((S(I32), S(I32)))
  def cond(c, s):
    i = c.add(hlo.Instr("get-tuple-element", S(I32), [s], {"index": 0}))
    ten = c.add(hlo.Instr("constant", S(I32), attrs={"value": np.int32(10)}))
    return c.add(hlo.Instr("compare", S(np.bool_), [i, ten], {"direction": "LT"}))
  def body(c, s):
    i = c.add(hlo.Instr("get-tuple-element", S(I32), [s], {"index": 0}))
    acc = c.add(hlo.Instr("get-tuple-element", S(I32), [s], {"index": 1}))
    one = c.add(hlo.Instr("constant", S(I32), attrs={"value": np.int32(1)}))
    return c.add(hlo.Instr("tuple", st, [c.add(hlo.Instr("add", S(I32), [i, one])),
                                         c.add(hlo.Instr("add", S(I32), [acc, i]))]))
  cc, bc = _sub_comp(b.m, "cond", [st], cond), _sub_comp(b.m, "body", [st], body)
  init = b.op("tuple", st, b.param(I32), b.const(0, I32))
  w = b.op("while", st, init, called=[cc, bc])
  i, acc = b.run(w, np.int32(3))
  assert i == 10 and acc == sum(range(3, 10))


def _scale_comp(m, k):
  """x -> x * k on f32[2]."""
  def body(c, a):
    kc = c.add(hlo.Instr("constant", S(F32), attrs={"value": np.float32(k)}))
    kb = c.add(hlo.Instr("broadcast", S(F32, 2), [kc], {"dimensions": ()}))
    return c.add(hlo.Instr("multiply", S(F32, 2), [a, kb]))
  return _sub_comp(m, f"scale{k}", [S(F32, 2)], body)


def test_conditional_pred_and_index_forms():
  xv, yv = np.array([0.0, 1.0], F32), np.array([2.0, -3.0], F32)
  b = Builder()   # XLA's (pred, true_operand, false_operand)
  p, x, y = b.param(np.bool_), b.param(F32, 2), b.param(F32, 2)
  neg = _sub_comp(b.m, "neg", [S(F32, 2)],
                  lambda c, a: c.add(hlo.Instr("negate", S(F32, 2), [a])))
  ex = _sub_comp(b.m, "exp", [S(F32, 2)],
                 lambda c, a: c.add(hlo.Instr("exponential", S(F32, 2), [a])))
  root = b.op("conditional", S(F32, 2), p, x, y, called=[neg, ex])
  assert b.run(root, np.bool_(True), xv, yv)[0].tolist() == [-0.0, -1.0]   # true: branch 0
  assert_close(b.run(root, np.bool_(False), xv, yv)[0], np.exp(wide(yv)), F32)
  b = Builder()   # an index and one operand shared by every branch
  i, x = b.param(I32), b.param(F32, 2)
  root = b.op("conditional", S(F32, 2), i, x, called=[_scale_comp(b.m, k) for k in (1, 2, 3)])
  for iv, factor in [(0, 1), (1, 2), (2, 3), (7, 3), (-1, 3)]:   # out of range: last branch
    assert b.run(root, np.int32(iv), xv)[0].tolist() == (xv * factor).tolist()
  b = Builder()   # XLA's (index, operand_0, operand_1): branch k gets operand k
  i, x, y = b.param(I32), b.param(F32, 2), b.param(F32, 2)
  root = b.op("conditional", S(F32, 2), i, x, y, called=[_scale_comp(b.m, k) for k in (1, 2)])
  assert b.run(root, np.int32(1), xv, yv)[0].tolist() == (yv * 2).tolist()


def test_threefry2x32_known_answer():
  # Random123's known-answer vector (also JAX's threefry test).
  b = Builder()
  ps = [b.param(U32, 1) for _ in range(4)]
  shape = hlo.TupleShape((S(U32, 1), S(U32, 1)))
  r = b.op("threefry2x32", shape, *ps)
  x1, x2 = b.run(r, *(np.array([v], U32) for v in (0x13198a2e, 0x03707344, 0x243f6a88,
                                                   0x85a308d3)))
  assert (int(x1[0]), int(x2[0])) == (0xc4923a9c, 0x483df7a0)


# --- errors ----------------------------------------------------------------------------------

def test_custom_call_and_rng_raise_clear_errors():
  b = Builder()
  x = b.param(F32, 2)
  with pytest.raises(HloEvalError, match="custom-call .*my_kernel"):
    b.run(b.op("custom-call", S(F32, 2), x, target="my_kernel"), np.zeros(2, F32))
  b = Builder()
  with pytest.raises(HloEvalError, match="rng-bit-generator"):
    b.run(b.op("rng-bit-generator", S(U32, 2), b.param(U32, 2)), np.zeros(2, U32))


def test_argument_errors():
  b = Builder()
  x = b.param(F32, 2, 3)
  b.c.root = b.op("negate", S(F32, 2, 3), x)
  with pytest.raises(TypeError, match=r"parameter 0 \(%p0\) expects f32\[2,3\], got float64"):
    evaluate(b.m, [np.zeros((2, 3))])
  with pytest.raises(TypeError, match=r"expects f32\[2,3\], got float32\[3, 2\]"):
    evaluate(b.m, [np.zeros((3, 2), F32)])
  with pytest.raises(TypeError, match="takes 1 arguments, got 2"):
    evaluate(b.m, [np.zeros((2, 3), F32)] * 2)
  assert evaluate(b.m, [jnp.ones((2, 3))])[0].tolist() == [[-1.0] * 3] * 2


def test_malformed_ir_is_reported_with_the_instruction():
  b = Builder()
  x = b.param(F32, 2, 3)
  bad = b.op("transpose", S(F32, 2, 3), x, dimensions=(1, 0))   # dims should be [3,2]
  with pytest.raises(HloEvalError, match=r"%transpose .*dims \(3, 2\).*f32\[2,3\]"):
    b.run(bad, np.zeros((2, 3), F32))
  with pytest.raises(HloEvalError, match="parameter"):
    eval_instr(x, [])


def test_evaluate_computation_and_eval_instr_directly():
  m = hlo.Module("m")
  comp = binary_comp(m, "maximum", F32)
  out = evaluate_computation(comp, [np.float32(1), np.float32(NAN)])
  assert out.dtype == F32 and out.shape == () and np.isnan(out)
  i = hlo.Instr("add", S(F16, 2), [comp.params[0], comp.params[1]])
  r = eval_instr(i, [np.array([1, 2], F16), np.array([0.5, 0.25], F16)])
  assert r.dtype == F16 and r.tolist() == [1.5, 2.25]


# --- lowered modules (jaxpr -> HLO by ember's lowering) -------------------------------------

def _lowered(f, *args):
  lower = pytest.importorskip("ember._src.lower")
  from ember._src import core
  jaxpr, consts = core.hoist_consts(ember.make_jaxpr(f)(*args))
  return lower.lower_jaxpr(jaxpr, "f"), list(consts)


XL = np.array([[1.5, -2.0, 0.25, 3.0], [0.0, 7.0, -1.0, 2.0], [4.0, 4.0, -3.5, 0.5]], F32)
IL = np.array([[3, -7, 0, 2], [9, 1, -1, 5], [2, 2, 8, -4]], I32)

LOWERED = [   # (name, function, argument): the lowered module evaluated vs eager ember
    ("sin_mul", lambda x: jnp.sin(x) * 2.0 + 1.0, XL),
    ("sum_max", lambda x: (x.sum(0), x.max(1)), XL),
    ("argmax_argmin", lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), XL),
    ("sort", lambda x: jnp.sort(x, axis=0), XL),
    ("sort_multi", lambda x: lax.sort((x[0], x[1]), num_keys=1), XL),
    ("top_k", lambda x: lax.top_k(x, 2), XL),
    ("cumulative", lambda x: (jnp.cumsum(x, axis=1), jnp.cumprod(x, axis=0),
                              lax.cummax(x, axis=1)), XL),
    ("reductions", lambda x: (jnp.prod(x), jnp.min(x), jnp.any(x > 3), jnp.all(x > -4)), XL),
    ("take", lambda x: x[jnp.array([2, 0, -1])], XL),
    ("gather2", lambda x: x[jnp.array([0, 2]), jnp.array([3, 1])], XL),
    ("scatter", lambda x: (x.at[jnp.array([0, 2, 0])].add(1.0), x.at[1, 2].set(9.0)), XL),
    ("dot", lambda x: x @ x.T, XL),
    ("softmax", lambda x: ember.nn.softmax(x, axis=1), XL),
    ("special", lambda x: (lax.erf(x), lax.lgamma(jnp.abs(x) + 0.5)), XL),
    ("int_div_rem", lambda i: (lax.div(i, 3), lax.rem(i, -3), i // 3, i % 3), IL),
    ("shifts", lambda i: (lax.shift_left(i, 3), lax.shift_right_arithmetic(i, 1),
                          lax.shift_right_logical(i, 2)), IL),
    ("rounding", lambda x: (jnp.round(x), lax.round(x), jnp.floor(x)), XL),
    ("convert", lambda x: ((x * 50).astype(jnp.int8), (x * 50).astype(jnp.uint8),
                           x.astype(jnp.bfloat16), x.astype(bool)), XL),
    ("clip_where", lambda x: (jnp.clip(x, -1, 2), jnp.where(x > 0, x, -x * 2)), XL),
    ("pad_concat", lambda x: (lax.pad(x, 0.0, [(1, -1, 1), (0, 2, 0)]),
                              jnp.concatenate([x[::-1], x[:, ::2].T.reshape(3, 2)], axis=1)),
     XL),
    ("dynamic_slices", lambda x: (lax.dynamic_slice(x, (1, 2), (2, 2)),
                                  lax.dynamic_update_slice(x, jnp.ones((2, 2)), (2, 3))), XL),
    ("powers", lambda x: (x ** 2, lax.pow(jnp.abs(x), 0.5), lax.integer_pow(x, 3)), XL),
    ("bits", lambda x: (lax.bitcast_convert_type(x, jnp.int32), lax.reduce_precision(x, 5, 2)),
     XL),
    ("select_n", lambda i: lax.select_n(jnp.clip(i, 0, 2), i, i * 2, i * 3), IL),
    ("complex", lambda x: (lax.complex(x, x * 2) * (1 + 2j)).real, XL),
    ("random", lambda x: ember.random.uniform(ember.random.key(0), (3,)) + x[0, :3], XL),
]


@pytest.mark.parametrize("name,f,x", LOWERED, ids=[c[0] for c in LOWERED])
def test_lowered_modules_match_eager(name, f, x):
  module, consts = _lowered(f, x)
  got = evaluate(module, consts + [x])
  want = f(jnp.asarray(x))
  want = [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else (want,))]
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.dtype == w.dtype and g.shape == w.shape
    np.testing.assert_allclose(wide(g), wide(w), rtol=2e-6, atol=1e-6)

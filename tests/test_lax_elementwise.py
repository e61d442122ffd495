"""ember.lax elementwise primitives: values against NumPy float64 and against JAX 0.12
(XLA semantics tables produced with JAX and stored as data), printed jaxprs, dtype and
weak-type rules, eager and jit, errors."""
import ml_dtypes
import numpy as np
import pytest

import ember
from ember import lax
import ember.numpy as jnp

NAN, INF = float("nan"), float("inf")
BF16 = np.dtype(ml_dtypes.bfloat16)
RTOL = {np.dtype(np.float32): 2e-6, np.dtype(np.complex64): 2e-6, np.dtype(np.float16): 1e-3,
        BF16: 8e-3, np.dtype(np.float64): 1e-14, np.dtype(np.complex128): 1e-14}


def arr(x, dtype=np.float32):
  return ember.device_put(np.asarray(x, dtype))


def both(f):
  """The function eagerly and under ember.jit: every check runs on both."""
  return [f, ember.jit(f)]


def wide(a):
  a = np.asarray(a)
  if a.dtype.kind == "c":
    return a.astype(np.complex128)
  return a.astype(np.float64) if a.dtype.kind in "fV" else a


def _dt(name):
  return BF16 if name == "bfloat16" else np.dtype(name)


# --- printed jaxprs ---------------------------------------------------------------------------

PRINTED = [  # (function, argument kinds, jaxpr printed by JAX 0.12.0.1)
    ('lax.neg', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = neg a in (b,) }'),
    ('lax.abs', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = abs a in (b,) }'),
    ('lax.sign', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = sign a in (b,) }'),
    ('lax.floor', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = floor a in (b,) }'),
    ('lax.ceil', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = ceil a in (b,) }'),
    ('lax.round', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = round[rounding_method=0] a in (b,) }'),
    ('lax.exp', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = exp a in (b,) }'),
    ('lax.exp2', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = exp2 a in (b,) }'),
    ('lax.log', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = log a in (b,) }'),
    ('lax.log2', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = log2 a in (b,) }'),
    ('lax.log1p', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = log1p a in (b,) }'),
    ('lax.expm1', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = expm1 a in (b,) }'),
    ('lax.tanh', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = tanh a in (b,) }'),
    ('lax.logistic', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = logistic a in (b,) }'),
    ('lax.sin', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = sin a in (b,) }'),
    ('lax.cos', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = cos a in (b,) }'),
    ('lax.tan', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = tan a in (b,) }'),
    ('lax.asin', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = asin a in (b,) }'),
    ('lax.acos', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = acos a in (b,) }'),
    ('lax.atan', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = atan a in (b,) }'),
    ('lax.sinh', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = sinh a in (b,) }'),
    ('lax.cosh', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = cosh a in (b,) }'),
    ('lax.asinh', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = asinh a in (b,) }'),
    ('lax.acosh', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = acosh a in (b,) }'),
    ('lax.atanh', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = atanh a in (b,) }'),
    ('lax.sqrt', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = sqrt a in (b,) }'),
    ('lax.rsqrt', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = rsqrt a in (b,) }'),
    ('lax.cbrt', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = cbrt a in (b,) }'),
    ('lax.erf', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = erf a in (b,) }'),
    ('lax.erfc', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = erfc a in (b,) }'),
    ('lax.erf_inv', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = erf_inv a in (b,) }'),
    ('lax.lgamma', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = lgamma a in (b,) }'),
    ('lax.digamma', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = digamma a in (b,) }'),
    ('lax.is_finite', 'F',
     '{ lambda ; a:f32[2]. let b:bool[2] = is_finite a in (b,) }'),
    ('lax.square', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = square a in (b,) }'),
    ('lax.bessel_i0e', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = bessel_i0e a in (b,) }'),
    ('lax.real', 'C',
     '{ lambda ; a:c64[2]. let b:f32[2] = real a in (b,) }'),
    ('lax.imag', 'C',
     '{ lambda ; a:c64[2]. let b:f32[2] = imag a in (b,) }'),
    ('lax.conj', 'C',
     '{ lambda ; a:c64[2]. let b:c64[2] = conj[input_dtype=complex64] a in (b,) }'),
    ('lax.conj', 'F',
     '{ lambda ; a:f32[2]. let b:c64[2] = conj[input_dtype=float32] a in (b,) }'),
    ('lax.add', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = add a b in (c,) }'),
    ('lax.sub', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = sub a b in (c,) }'),
    ('lax.mul', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = mul a b in (c,) }'),
    ('lax.div', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = div a b in (c,) }'),
    ('lax.rem', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = rem a b in (c,) }'),
    ('lax.pow', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = pow a b in (c,) }'),
    ('lax.max', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = max a b in (c,) }'),
    ('lax.min', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = min a b in (c,) }'),
    ('lax.nextafter', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = nextafter a b in (c,) }'),
    ('lax.atan2', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = atan2 a b in (c,) }'),
    ('lax.complex', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:c64[2] = complex a b in (c,) }'),
    ('lax.eq', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:bool[2] = eq a b in (c,) }'),
    ('lax.ne', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:bool[2] = ne a b in (c,) }'),
    ('lax.lt', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:bool[2] = lt a b in (c,) }'),
    ('lax.le', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:bool[2] = le a b in (c,) }'),
    ('lax.gt', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:bool[2] = gt a b in (c,) }'),
    ('lax.ge', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:bool[2] = ge a b in (c,) }'),
    ('lax.bitwise_and', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = and a b in (c,) }'),
    ('lax.bitwise_or', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = or a b in (c,) }'),
    ('lax.bitwise_xor', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = xor a b in (c,) }'),
    ('lax.shift_left', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = shift_left a b in (c,) }'),
    ('lax.shift_right_arithmetic', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let\n    c:i32[2] = shift_right_arithmetic a b\n  in (c,) }'),
    ('lax.shift_right_logical', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = shift_right_logical a b in (c,) }'),
    ('lax.bitwise_not', 'I',
     '{ lambda ; a:i32[2]. let b:i32[2] = not a in (b,) }'),
    ('lax.population_count', 'I',
     '{ lambda ; a:i32[2]. let b:i32[2] = population_count a in (b,) }'),
    ('lax.clz', 'I',
     '{ lambda ; a:i32[2]. let b:i32[2] = clz a in (b,) }'),
    ('lax.bitwise_not', 'B',
     '{ lambda ; a:bool[2]. let b:bool[2] = not a in (b,) }'),
    ('lax.eq', 'BB',
     '{ lambda ; a:bool[2] b:bool[2]. let c:bool[2] = eq a b in (c,) }'),
    ('lax.max', 'II',
     '{ lambda ; a:i32[2] b:i32[2]. let c:i32[2] = max a b in (c,) }'),
    ('lambda x: lax.integer_pow(x, 3)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = integer_pow[y=3] a in (b,) }'),
    ('lambda x: lax.integer_pow(x, -2)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = integer_pow[y=-2] a in (b,) }'),
    ('lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = round[rounding_method=1] a in (b,) }'),
    ('lambda p, x: lax.select_n(p, x, x)', 'BF',
     '{ lambda ; a:bool[2] b:f32[2]. let c:f32[2] = select_n a b b in (c,) }'),
    ('lambda p, x: lax.select_n(p, x, x, x)', 'IF',
     '{ lambda ; a:i32[2] b:f32[2]. let c:f32[2] = select_n a b b b in (c,) }'),
    ('lambda p, x, y: lax.select(p, x, y)', 'BFF',
     '{ lambda ; a:bool[2] b:f32[2] c:f32[2]. let d:f32[2] = select_n a c b in (d,) }'),
    ('lambda x: lax.select_n(True, x, x)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = select_n True:bool[] a a in (b,) }'),
    ('lambda x: lax.clamp(0., x, 1.)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = clamp 0.0:f32[] a 1.0:f32[] in (b,) }'),
    ('lambda lo, x: lax.clamp(lo, x, x)', 'FF',
     '{ lambda ; a:f32[2] b:f32[2]. let c:f32[2] = clamp a b b in (c,) }'),
    ('lambda x: lax.bitcast_convert_type(x, np.int32)', 'F',
     '{ lambda ; a:f32[2]. let\n    b:i32[2] = bitcast_convert_type[new_dtype=int32] a\n  in (b,) }'),
    ('lambda x: lax.bitcast_convert_type(x, np.int16)', 'F',
     '{ lambda ; a:f32[2]. let\n    b:i16[2,2] = bitcast_convert_type[new_dtype=int16] a\n  in (b,) }'),
    ('lambda x: lax.bitcast_convert_type(x, np.float64)', 'U',
     '{ lambda ; a:u32[2]. let\n    b:f32[2] = bitcast_convert_type[new_dtype=float32] a\n  in (b,) }'),
    ('lambda x: lax.reduce_precision(x, 5, 10)', 'F',
     '{ lambda ; a:f32[2]. let\n    b:f32[2] = reduce_precision[exponent_bits=5 mantissa_bits=10] a\n  in (b,) }'),
    ('lambda x: lax.convert_element_type(x, np.int32)', 'F',
     '{ lambda ; a:f32[2]. let\n    b:i32[2] = convert_element_type[new_dtype=int32 weak_type=False] a\n  in (b,) }'),
    ('lambda x: lax.pow(x, 2)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = pow a 2:i32[] in (b,) }'),
    ('lambda x, n: lax.pow(x, n)', 'FI',
     '{ lambda ; a:f32[2] b:i32[2]. let c:f32[2] = pow a b in (c,) }'),
    ('lambda x: lax.reciprocal(x)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = integer_pow[y=-1] a in (b,) }'),
    ('lambda x: lax.add(x, 2.0)', 'F',
     '{ lambda ; a:f32[2]. let b:f32[2] = add a 2.0:f32[] in (b,) }'),
    ('lambda x: lax.mul(2, x)', 'I',
     '{ lambda ; a:i32[2]. let b:i32[2] = mul 2:i32[] a in (b,) }'),
    ('lambda x: lax.lt(x, 0.0)', 'F',
     '{ lambda ; a:f32[2]. let b:bool[2] = lt a 0.0:f32[] in (b,) }'),
]

_ARG = {"F": np.ones(2, np.float32), "I": np.ones(2, np.int32), "C": np.ones(2, np.complex64),
        "B": np.ones(2, np.bool_), "U": np.ones(2, np.uint32)}


@pytest.mark.parametrize("src,kinds,expected", PRINTED, ids=[p[0] for p in PRINTED])
def test_jaxpr_printing_matches_jax(src, kinds, expected):
  fn = eval(src, {"lax": lax, "np": np})
  assert str(ember.make_jaxpr(fn)(*[_ARG[k] for k in kinds])) == expected


def test_accuracy_param_is_printed_only_when_set():
  x = np.ones(2, np.float32)
  assert str(ember.make_jaxpr(lambda x: lax.exp(x, accuracy=lax.AccuracyMode.HIGHEST))(x)) == \
      "{ lambda ; a:f32[2]. let\n    b:f32[2] = exp[accuracy=AccuracyMode.HIGHEST] a\n  in (b,) }"
  eqn = ember.make_jaxpr(lambda x: lax.tan(x, accuracy=lax.Tolerance(atol=1e-3)))(x).eqns[0]
  assert isinstance(eqn.params["accuracy"], lax.Tolerance)
  np.testing.assert_allclose(np.asarray(lax.sin(x, accuracy=lax.AccuracyMode.DEFAULT)),
                             np.sin(1.0), rtol=1e-6)
  with pytest.raises(TypeError, match="accuracy"):
    lax.sin(x, accuracy="high")
  with pytest.raises(ValueError):
    lax.Tolerance()


def test_literal_operands_are_not_folded_except_conversions():
  assert str(ember.make_jaxpr(lambda: lax.sin(2.0))()) == \
      "{ lambda ; . let a:f32[] = sin 2.0:f32[] in (a,) }"
  assert str(ember.make_jaxpr(lambda x: lax.add(x, lax.convert_element_type(2, np.float32)))(
      np.float32(1))) == "{ lambda ; a:f32[]. let b:f32[] = add a 2.0:f32[] in (b,) }"


# --- values against NumPy ------------------------------------------------------------------------

def _sample(domain, dtype, shape, seed=0):
  rng = np.random.default_rng(seed)
  lo, hi = {"real": (-3, 3), "pos": (0.05, 4), "unit": (-0.95, 0.95), "ge1": (1.05, 4),
            "nonzero": (0.25, 3), "big": (-60, 60)}[domain]
  n = int(np.prod(shape))
  v = rng.uniform(lo, hi, n)
  if domain == "nonzero":
    v = v * rng.choice([-1, 1], n)
  if np.dtype(dtype).kind == "c":
    v = v + 0.5j * rng.uniform(lo, hi, n)
  return v.astype(dtype).reshape(shape)


def np_sign(v):
  """np.sign as NumPy 2 and lax define it: x / |x| for complex x (NumPy 1.26 gave the
  sign of the real part)."""
  if not np.iscomplexobj(v):
    return np.sign(v)
  with np.errstate(invalid="ignore", divide="ignore"):
    return np.where(v == 0, 0, v / np.abs(v))


# lax function -> (NumPy float64 reference, domain, accepts complex)
UNARY = {
    "neg": (np.negative, "real", True), "abs": (np.abs, "real", True),
    "sign": (np_sign, "real", True), "floor": (np.floor, "real", False),
    "ceil": (np.ceil, "real", False), "round": (lambda v: np.trunc(v + np.copysign(0.5, v)), "real", False),
    "is_finite": (np.isfinite, "real", False), "exp": (np.exp, "real", True),
    "exp2": (np.exp2, "real", True), "log": (np.log, "pos", True), "log2": (np.log2, "pos", True),
    "log1p": (np.log1p, "pos", True), "expm1": (np.expm1, "real", True),
    "tanh": (np.tanh, "real", True), "logistic": (lambda v: 1 / (1 + np.exp(-v)), "big", True),
    "sin": (np.sin, "real", True), "cos": (np.cos, "real", True), "tan": (np.tan, "unit", True),
    "asin": (np.arcsin, "unit", True), "acos": (np.arccos, "unit", True),
    "atan": (np.arctan, "real", True), "sinh": (np.sinh, "real", True),
    "cosh": (np.cosh, "real", True), "asinh": (np.arcsinh, "real", True),
    "acosh": (np.arccosh, "ge1", True), "atanh": (np.arctanh, "unit", True),
    "sqrt": (np.sqrt, "pos", True), "rsqrt": (lambda v: 1 / np.sqrt(v), "pos", True),
    "cbrt": (np.cbrt, "real", False), "square": (np.square, "real", True),
    "reciprocal": (lambda v: 1 / v, "nonzero", True),
    "real": (np.real, "real", "only"), "imag": (np.imag, "real", "only"),
    "conj": (np.conj, "real", "f32+"),   # float32/float64 or complex (a complex result)
}
SHAPES = [(), (0,), (2, 3, 4)]


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_numpy(name):
  ref, domain, cplx = UNARY[name]
  dtypes = {"only": [np.complex64], "f32+": [np.float32, np.complex64]}.get(
      cplx, [np.float32, np.float16, BF16] + ([np.complex64] if cplx else []))
  for dt in dtypes:
    for shape in SHAPES:
      x = _sample(domain, dt, shape)
      want = ref(wide(x))
      for f in both(getattr(lax, name)):
        got = f(ember.device_put(x))
        assert got.shape == shape
        out_dt = np.dtype(got.dtype)
        if name not in ("is_finite", "real", "imag", "conj", "abs"):
          assert out_dt == np.dtype(dt)
        rtol = RTOL.get(out_dt, 0)
        np.testing.assert_allclose(wide(got), want, rtol=rtol, atol=rtol * 1e-3)


def test_unary_values_in_float64_with_x64():
  with ember.enable_x64():
    x = _sample("pos", np.float64, (2, 3, 4))
    for name in ("exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "cbrt", "log1p", "expm1",
                 "asinh", "logistic", "atan"):
      ref = UNARY[name][0]
      for f in both(getattr(lax, name)):
        got = f(ember.device_put(x))
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), ref(x), rtol=1e-14)


BINARY = {  # lax function -> (NumPy reference, domain of y, dtypes)
    "add": (np.add, "real", ("f32", "f16", "bf16", "i32", "c64", "u8")),
    "sub": (np.subtract, "real", ("f32", "f16", "i32", "c64")),
    "mul": (np.multiply, "real", ("f32", "bf16", "i32", "c64")),
    "div": (np.divide, "nonzero", ("f32", "f16", "bf16", "c64")),
    "rem": (np.fmod, "nonzero", ("f32", "f16", "bf16")),
    "pow": (np.power, "real", ("f32", "f16", "c64")),
    "max": (np.maximum, "real", ("f32", "f16", "bf16", "i32", "u8")),
    "min": (np.minimum, "real", ("f32", "f16", "bf16", "i32", "u8")),
    "atan2": (np.arctan2, "real", ("f32", "f16", "bf16")),
    "eq": (np.equal, "real", ("f32", "i32", "c64")), "ne": (np.not_equal, "real", ("f32", "c64")),
    "lt": (np.less, "real", ("f32", "i32", "u8")), "le": (np.less_equal, "real", ("f32",)),
    "gt": (np.greater, "real", ("f32", "bf16")), "ge": (np.greater_equal, "real", ("f32",)),
}
DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": BF16, "i32": np.int32, "u8": np.uint8,
          "c64": np.complex64}
SHAPE_PAIRS = [((2, 3, 4), (2, 3, 4)), ((2, 1, 4), (2, 3, 1)), ((), (2, 3)), ((3, 0), ())]


def _int_sample(dt, shape, seed, nonzero=False):
  rng = np.random.default_rng(seed)
  lo = 0 if np.dtype(dt).kind == "u" else -20
  v = rng.integers(lo, 20, int(np.prod(shape)))
  if nonzero:
    v[v == 0] = 3
  return v.astype(dt).reshape(shape)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_match_numpy(name):
  ref, y_domain, keys = BINARY[name]
  for key in keys:
    dt = DTYPES[key]
    for sx, sy in SHAPE_PAIRS:
      if np.dtype(dt).kind in "iu":
        x, y = _int_sample(dt, sx, 1), _int_sample(dt, sy, 2, nonzero=True)
        want = ref(x, y)
      else:
        x = _sample("pos" if name == "pow" else "real", dt, sx, 1)
        y = _sample(y_domain, dt, sy, 2)
        want = ref(wide(x), wide(y))
      for f in both(getattr(lax, name)):
        got = f(ember.device_put(x), ember.device_put(y))
        assert got.shape == np.broadcast_shapes(sx, sy)
        rtol = RTOL.get(np.dtype(got.dtype), 0)
        np.testing.assert_allclose(wide(got), want, rtol=rtol, atol=rtol * 1e-3)


def test_bitwise_values_match_numpy():
  x, y = _int_sample(np.int32, (2, 3, 4), 1), _int_sample(np.int32, (2, 3, 4), 2)
  u, v = _int_sample(np.uint8, (5,), 3), _int_sample(np.uint8, (5,), 4)
  b, c = x > 0, y > 0
  for name, ref in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor)]:
    for f in both(getattr(lax, name)):
      for p, q in ((x, y), (u, v), (b, c)):
        got = f(ember.device_put(p), ember.device_put(q))
        assert got.dtype == p.dtype
        np.testing.assert_array_equal(np.asarray(got), ref(p, q))
  for f in both(lax.bitwise_not):
    for p in (x, u, b):
      np.testing.assert_array_equal(np.asarray(f(ember.device_put(p))), np.invert(p))
  s = np.abs(y) % 8
  for f, ref in [(lax.shift_left, np.left_shift), (lax.shift_right_arithmetic, np.right_shift)]:
    for g in both(f):
      np.testing.assert_array_equal(np.asarray(g(arr(x, np.int32), arr(s, np.int32))), ref(x, s))
  for g in both(lax.shift_right_logical):
    np.testing.assert_array_equal(np.asarray(g(arr(x, np.int32), arr(s, np.int32))),
                                  (x.view(np.uint32) >> s.astype(np.uint32)).view(np.int32))
  for g in both(lax.population_count):
    np.testing.assert_array_equal(
        np.asarray(g(arr(x, np.int32))),
        np.vectorize(lambda t: bin(int(t) & 0xFFFFFFFF).count("1"))(x))
  for g in both(lax.clz):
    np.testing.assert_array_equal(
        np.asarray(g(arr(x, np.int32))),
        np.vectorize(lambda t: 32 - (int(t) & 0xFFFFFFFF).bit_length())(x))


def test_integer_pow_matches_repeated_multiplication():
  x = _sample("real", np.float32, (2, 3, 4))
  for y in (0, 1, 2, 3, 7, -1, -3):
    for f in both(lambda a, y=y: lax.integer_pow(a, y)):
      got = f(arr(x))
      assert got.dtype == np.float32
      np.testing.assert_allclose(np.asarray(got), wide(x) ** y, rtol=4e-6)
  for f in both(lambda a: lax.integer_pow(a, 5)):
    np.testing.assert_array_equal(np.asarray(f(arr([-3, 2, 7], np.int32))), [-243, 32, 16807])
    np.testing.assert_allclose(np.asarray(f(arr([1 + 1j], np.complex64))), [(1 + 1j) ** 5],
                               rtol=1e-6)


def test_convert_element_type_between_dtypes():
  x = np.array([-2.75, -0.5, 0., 1.5, 200.25], np.float32)
  for f in both(lambda a: (lax.convert_element_type(a, np.int32),
                           lax.convert_element_type(a, np.float16),
                           lax.convert_element_type(a, BF16),
                           lax.convert_element_type(a, np.complex64),
                           lax.convert_element_type(a, np.bool_))):
    i, h, b, c, t = f(arr(x))
    np.testing.assert_array_equal(np.asarray(i), [-2, 0, 0, 1, 200])
    np.testing.assert_array_equal(np.asarray(h), x.astype(np.float16))
    np.testing.assert_array_equal(wide(b), wide(x.astype(BF16)))
    np.testing.assert_array_equal(np.asarray(c), x.astype(np.complex64))
    np.testing.assert_array_equal(np.asarray(t), x != 0)
  out = lax.convert_element_type(arr([1 + 2j], np.complex64), np.float32)  # drops imag
  assert out.dtype == np.float32 and np.asarray(out).tolist() == [1.0]
  w = lax.convert_element_type(3, np.float32, weak_type=True)
  assert (w.dtype, w.weak_type) == (np.float32, True)
  with ember.enable_x64():
    assert lax.convert_element_type(arr([1.5]), np.float64).dtype == np.float64
  assert lax.convert_element_type(arr([1.5]), np.float64).dtype == np.float32  # canonicalized


# --- special functions ----------------------------------------------------------------------

# reference values computed with SciPy (float64) at points exact in float32
SPECIAL = {
    'erf': ([-3.0, -1.0, -0.5, -0.0009765625, 0.0, 7.450580596923828e-09, 0.3125, 1.0, 2.5, 5.0],
            [-0.9999779095030014, -0.8427007929497148, -0.5204998778130465, -0.0011019324300718147, 0.0, 8.407079928334896e-09, 0.34146863350159495, 0.8427007929497148, 0.999593047982555, 0.9999999999984626]),
    'erfc': ([-2.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 9.0],
             [1.9953222650189528, 1.5204998778130465, 1.0, 0.4795001221869535, 0.15729920705028516, 2.2090496998585445e-05, 2.1519736712498913e-17, 4.137031746513811e-37]),
    'erf_inv': ([-0.9990234375, -0.5, -9.5367431640625e-07, 0.0, 0.125, 0.5, 0.875, 0.9921875, 0.9999990463256836],
                [-2.3314677736219473, -0.4769362762044699, -8.451718573121729e-07, 0.0, 0.11123545184094996, 0.4769362762044699, 1.084787040069283, 1.8809517454731395, 3.4655050258033304]),
    'lgamma': ([-2.5, -0.5, 0.125, 0.5, 1.5, 3.75, 10.0, 100.0, 100000.0],
               [-0.05624371649767401, 1.2655121234846454, 2.0194183575537963, 0.5723649429247, -0.12078223763524526, 1.4868155785934172, 12.801827480081469, 359.1342053695754, 1051287.7089736569]),
    'digamma': ([-2.5, -0.5, 0.125, 0.5, 1.0, 2.0, 3.75, 10.0, 100.0, 100000.0],
                [1.1031566406452433, 0.03648997397857651, -8.388492663295855, -1.9635100260214235, -0.5772156649015329, 0.42278433509846713, 1.1825373886117962, 2.251752589066721, 4.600161852738088, 11.512920464961896]),
    'bessel_i0e': ([-30.0, -5.0, -1.0, 0.0, 0.125, 1.0, 5.0, 19.875, 20.125, 30.0, 100.0, 10000.0],
                   [0.0731459464822373, 0.18354081260932834, 0.46575960759364043, 1.0, 0.885947524030331, 0.46575960759364043, 0.18354081260932834, 0.0900659308030051, 0.08949739411287085, 0.0731459464822373, 0.03994437929909668, 0.0039894726746047314]),
}


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_functions_match_reference_values(name):
  xs, want = SPECIAL[name]
  for f in both(getattr(lax, name)):
    got = f(arr(xs, np.float32))
    assert got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-30)
    got16 = f(arr(xs[:4], np.float16))
    assert got16.dtype == np.float16
    np.testing.assert_allclose(wide(got16), want[:4], rtol=1e-3, atol=1e-7)
    with ember.enable_x64():
      got64 = f(arr(xs, np.float64))
      assert got64.dtype == np.float64
      np.testing.assert_allclose(np.asarray(got64), want, rtol=1e-13, atol=1e-300)


def test_special_function_identities():
  y = np.linspace(-0.999, 0.999, 41).astype(np.float64)
  with ember.enable_x64():
    for f in both(lambda v: lax.erf(lax.erf_inv(v))):
      np.testing.assert_allclose(np.asarray(f(arr(y, np.float64))), y, rtol=1e-14)
    x = np.linspace(0.1, 30, 50)
    for f in both(lambda v: lax.sub(lax.lgamma(lax.add(v, 1.0)), lax.lgamma(v))):
      np.testing.assert_allclose(np.asarray(f(arr(x, np.float64))), np.log(x), rtol=1e-12,
                                 atol=1e-13)
    for f in both(lambda v: lax.sub(lax.digamma(lax.add(v, 1.0)), lax.digamma(v))):
      np.testing.assert_allclose(np.asarray(f(arr(-x - 0.5, np.float64))), 1 / (-x - 0.5),
                                 rtol=1e-12)


# --- XLA semantics, checked against JAX ------------------------------------------------------

XLA_SEMANTICS = [  # (name, lax function, inputs, JAX 0.12 result dtype, result)
    ('div', 'lax.div', [([7, -7, 7, -7, 5, -2147483648, 0], 'int32'), ([2, 2, -2, -2, 0, -1, 0], 'int32')], 'int32', [3, -3, -3, 3, -1, -2147483648, -1]),
    ('rem', 'lax.rem', [([7, -7, 7, -7, 5, -2147483648, 0], 'int32'), ([2, 2, -2, -2, 0, -1, 0], 'int32')], 'int32', [1, -1, 1, -1, 5, 0, 0]),
    ('div_i8', 'lax.div', [([-128, 100, -7, 7], 'int8'), ([-1, 0, 2, -2], 'int8')], 'int8', [-128, -1, -3, -3]),
    ('rem_i8', 'lax.rem', [([-128, 100, -7, 7], 'int8'), ([-1, 0, 2, -2], 'int8')], 'int8', [0, 100, -1, 1]),
    ('div_u32', 'lax.div', [([7, 5, 0], 'uint32'), ([2, 0, 0], 'uint32')], 'uint32', [3, 4294967295, 4294967295]),
    ('rem_u32', 'lax.rem', [([7, 5, 0], 'uint32'), ([2, 0, 0], 'uint32')], 'uint32', [1, 5, 0]),
    ('shift_left', 'lax.shift_left', [([1, -8, 255, -1, 3], 'int32'), ([1, 33, 32, -1, 31], 'int32')], 'int32', [2, 0, 0, 0, -2147483648]),
    ('shift_right_arithmetic', 'lax.shift_right_arithmetic', [([1, -8, 255, -1, -2147483648], 'int32'), ([1, 33, 32, -1, 31], 'int32')], 'int32', [0, -1, 0, -1, -1]),
    ('shift_right_logical', 'lax.shift_right_logical', [([1, -8, 255, -1, -2147483648], 'int32'), ([1, 33, 32, -1, 31], 'int32')], 'int32', [0, 0, 0, 0, 1]),
    ('sra_u8', 'lax.shift_right_arithmetic', [([128, 128, 3, 127], 'uint8'), ([1, 9, 1, 8], 'uint8')], 'uint8', [192, 255, 1, 0]),
    ('shl_i8', 'lax.shift_left', [([1, -1, 64, 3], 'int8'), ([7, 1, 2, 8], 'int8')], 'int8', [-128, -2, 0, 0]),
    ('population_count_i8', 'lax.population_count', [([-1, 7, 0, -128], 'int8')], 'int8', [8, 3, 0, 1]),
    ('population_count_u16', 'lax.population_count', [([65535, 7, 0, 256], 'uint16')], 'uint16', [16, 3, 0, 1]),
    ('clz_i8', 'lax.clz', [([-1, 1, 0, 64], 'int8')], 'int8', [0, 7, 8, 1]),
    ('clz_u32', 'lax.clz', [([1, 0, 2147483648, 12345], 'uint32')], 'uint32', [31, 32, 0, 18]),
    ('clz_i32', 'lax.clz', [([1, 0, -1, 65536], 'int32')], 'int32', [31, 32, 0, 15]),
    ('integer_pow_wrap', 'lambda x: lax.integer_pow(x, 31)', [([2, 3, -1], 'int32')], 'int32', [-2147483648, 1264544299, -1]),
    ('abs_int_min', 'lax.abs', [([-2147483648, -3, 5], 'int32')], 'int32', [-2147483648, 3, 5]),
    ('neg_u8', 'lax.neg', [([1, 0, 255], 'uint8')], 'uint8', [255, 0, 1]),
    ('not_u8', 'lax.bitwise_not', [([0, 5, 255], 'uint8')], 'uint8', [255, 250, 0]),
    ('convert_f32_i32', 'lambda x: lax.convert_element_type(x, np.int32)', [([NAN, 10000000000.0, -10000000000.0, 2.7, -2.7, INF, -INF], 'float32')], 'int32', [0, 2147483647, -2147483648, 2, -2, 2147483647, -2147483648]),
    ('convert_f32_u8', 'lambda x: lax.convert_element_type(x, np.uint8)', [([NAN, 10000000000.0, -10000000000.0, 2.7, -2.7, 300, 255.9], 'float32')], 'uint8', [0, 255, 0, 2, 0, 255, 255]),
    ('convert_f32_bool', 'lambda x: lax.convert_element_type(x, np.bool_)', [([NAN, 0.0, -0.0, 2.0], 'float32')], 'bool', [True, False, False, True]),
    ('convert_i32_i8', 'lambda x: lax.convert_element_type(x, np.int8)', [([300, -200, 127], 'int32')], 'int8', [44, 56, 127]),
    ('convert_bf16_i32', 'lambda x: lax.convert_element_type(x, np.int32)', [([NAN, 1e+20, -3.5], 'bfloat16')], 'int32', [0, 2147483647, -3]),
    ('select_n_int', 'lambda w: lax.select_n(w, np.zeros(5, np.float32), np.ones(5, np.float32), np.full(5, 2, np.float32))', [([0, 1, 2, 5, -1], 'int32')], 'float32', [0.0, 1.0, 2.0, 2.0, 0.0]),
    ('select_n_uint', 'lambda w: lax.select_n(w, np.zeros(4, np.float32), np.ones(4, np.float32), np.full(4, 2, np.float32))', [([0, 1, 2, 200], 'uint8')], 'float32', [0.0, 1.0, 2.0, 2.0]),
    ('sign', 'lax.sign', [([-0.0, 0.0, NAN, -2.0, INF, 1e-30], 'float32')], 'float32', [-0.0, 0.0, NAN, -1.0, 1.0, 1.0]),
    ('sign_c64', 'lax.sign', [([0j, (3+4j), (-0-2j)], 'complex64')], 'complex64', [0j, (0.6000000238418579+0.800000011920929j), (-0-1j)]),
    ('sign_u8', 'lax.sign', [([0, 5, 255], 'uint8')], 'uint8', [0, 1, 1]),
    ('sign_i16', 'lax.sign', [([0, 5, -3], 'int16')], 'int16', [0, 1, -1]),
    ('round_away', 'lax.round', [([0.5, 1.5, 2.5, -0.5, -1.5, 0.49999997, -2.5000002, 100000001.0], 'float32')], 'float32', [1.0, 2.0, 3.0, -1.0, -2.0, 0.0, -3.0, 100000000.0]),
    ('round_even', 'lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)', [([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997], 'float32')], 'float32', [0.0, 2.0, 2.0, -0.0, -2.0, 0.0]),
    ('max', 'lax.max', [([NAN, 1.0, -0.0, 0.0, 3.0], 'float32'), ([0.0, NAN, 0.0, -0.0, -3.0], 'float32')], 'float32', [NAN, NAN, 0.0, 0.0, 3.0]),
    ('min', 'lax.min', [([NAN, 1.0, -0.0, 0.0, 3.0], 'float32'), ([0.0, NAN, 0.0, -0.0, -3.0], 'float32')], 'float32', [NAN, NAN, -0.0, -0.0, -3.0]),
    ('max_c64', 'lax.max', [([(1+2j), (1+0j), (2-1j)], 'complex64'), ([(1+1j), 5j, (2+0j)], 'complex64')], 'complex64', [(1+2j), (1+0j), (2+0j)]),
    ('min_c64', 'lax.min', [([(1+2j), (1+0j), (2-1j)], 'complex64'), ([(1+1j), 5j, (2+0j)], 'complex64')], 'complex64', [(1+1j), 5j, (2-1j)]),
    ('max_bool', 'lax.max', [([True, False, False], 'bool'), ([False, False, True], 'bool')], 'bool', [True, False, True]),
    ('nextafter', 'lax.nextafter', [([0.0, 1.0, 1.0, -INF], 'float32'), ([1.0, 0.0, 1.0, 0.0], 'float32')], 'float32', [1.401298464324817e-45, 0.9999999403953552, 1.0, -3.4028234663852886e+38]),
    ('nextafter_bf16', 'lax.nextafter', [([1.0, 0.0], 'bfloat16'), ([2.0, -1.0], 'bfloat16')], 'bfloat16', [1.0078125, -9.183549615799121e-41]),
    ('atan2', 'lax.atan2', [([0.0, -0.0, 1.0, -1.0, 0.0], 'float32'), ([-1.0, -1.0, 0.0, 0.0, 0.0], 'float32')], 'float32', [3.1415927410125732, -3.1415927410125732, 1.5707963705062866, -1.5707963705062866, 0.0]),
    ('logistic', 'lax.logistic', [([-50.0, 0.0, 50.0, -1000.0, 2.0, 1000.0], 'float32')], 'float32', [1.9287498933537385e-22, 0.5, 1.0, 0.0, 0.8807970285415649, 1.0]),
    ('reduce_precision_f16', 'lambda x: lax.reduce_precision(x, 5, 10)', [([1.0001, 70000.0, 1e-06, NAN, INF, 3.14159265, -65519.0, 65520.0, -0.0], 'float32')], 'float32', [1.0, INF, 0.0, NAN, INF, 3.140625, -65504.0, INF, -0.0]),
    ('reduce_precision_e2m0', 'lambda x: lax.reduce_precision(x, 2, 0)', [([NAN, 1.5, 1.75, 1.25, 3.9, -1.5], 'float32')], 'float32', [NAN, 2.0, 2.0, 1.0, INF, -2.0]),
    ('reduce_precision_bf16', 'lambda x: lax.reduce_precision(x, 8, 7)', [([1.0001, 3.14159265, 1.00390625, 1.01171875], 'float32')], 'float32', [1.0, 3.140625, 1.0, 1.015625]),
    ('reduce_precision_on_f16', 'lambda x: lax.reduce_precision(x, 4, 3)', [([1.0001, 3.14159265, 300.0, 0.01], 'float16')], 'float16', [1.0, 3.25, INF, 0.0]),
    ('bitcast_f32_u8', 'lambda x: lax.bitcast_convert_type(x, np.uint8)', [([1.0, -2.0], 'float32')], 'uint8', [[0, 0, 128, 63], [0, 0, 0, 192]]),
    ('bitcast_u8_f32', 'lambda x: lax.bitcast_convert_type(x, np.float32)', [([[0, 0, 128, 63], [0, 0, 0, 192]], 'uint8')], 'float32', [1.0, -2.0]),
    ('bitcast_f32_i32', 'lambda x: lax.bitcast_convert_type(x, np.int32)', [([1.0, -2.0, -0.0], 'float32')], 'int32', [1065353216, -1073741824, -2147483648]),
    ('bitcast_f32_u16_scalar', 'lambda x: lax.bitcast_convert_type(x, np.uint16)', [(1.0, 'float32')], 'uint16', [0, 16256]),
    ('clamp', 'lambda x: lax.clamp(np.float32(0), x, np.float32(1))', [([NAN, -1.0, 2.0, 0.5], 'float32')], 'float32', [NAN, 0.0, 1.0, 0.5]),
    ('clamp_arrays', 'lambda lo, x, hi: lax.clamp(lo, x, hi)', [([2.0, 0.0, -1.0], 'float32'), ([0.5, 3.0, 0.0], 'float32'), ([1.0, 1.0, 1.0], 'float32')], 'float32', [1.0, 1.0, 0.0]),
    ('is_finite', 'lax.is_finite', [([INF, NAN, 1.0, -INF, 3e+38], 'float32')], 'bool', [False, False, True, False, True]),
    ('rem_f32', 'lax.rem', [([5.0, -5.0, 5.0, INF, 5.5, -0.0, 1.0], 'float32'), ([3.0, 3.0, 0.0, 2.0, -2.0, 1.0, INF], 'float32')], 'float32', [2.0, -2.0, NAN, NAN, 1.5, -0.0, 1.0]),
    ('div_f32', 'lax.div', [([1.0, -1.0, 0.0, 1.0], 'float32'), ([0.0, 0.0, 0.0, INF], 'float32')], 'float32', [INF, -INF, NAN, 0.0]),
    ('pow_int_exp', 'lax.pow', [([0.0, -2.0, 2.0, 0.0, -1.5], 'float32'), ([-1, 3, -2, 0, 2], 'int32')], 'float32', [INF, -8.0, 0.25, 1.0, 2.25]),
    ('pow_f32', 'lax.pow', [([-2.0, 0, 2.0, 0.0, 4.0], 'float32'), ([0.5, -1.0, 10.0, 0.0, 0.5], 'float32')], 'float32', [NAN, INF, 1024.0, 1.0, 2.0]),
    ('integer_pow_neg', 'lambda x: lax.integer_pow(x, -2)', [([2.0, 0.0, -0.5], 'float32')], 'float32', [0.25, INF, 4.0]),
    ('integer_pow_zero', 'lambda x: lax.integer_pow(x, 0)', [([2.0, 0.0, NAN], 'float32')], 'float32', [1.0, 1.0, 1.0]),
    ('complex', 'lax.complex', [([1.0, INF, -0.0], 'float32'), ([2.0, 0.0, NAN], 'float32')], 'complex64', [(1+2j), complex(INF, 0), complex(-0.0, NAN)]),
    ('conj_f32', 'lax.conj', [([1.0, -2.0], 'float32')], 'complex64', [(1+0j), (-2+0j)]),
    ('cbrt', 'lax.cbrt', [([-8.0, 27.0, -0.0, 1e-30], 'float32')], 'float32', [-2.0, 3.0, -0.0, 1.000000013351432e-10]),
    ('rsqrt', 'lax.rsqrt', [([4.0, 0.0, -1.0, INF], 'float32')], 'float32', [0.5, INF, NAN, 0.0]),
    ('erf_inv_edges', 'lax.erf_inv', [([1.0, -1.0, 1.5, -2.0, NAN, 0.0], 'float32')], 'float32', [INF, -INF, NAN, NAN, NAN, 0.0]),
    ('lgamma_edges', 'lax.lgamma', [([0.0, -1.0, -2.0, INF, -INF, NAN, 1.0, 2.0], 'float32')], 'float32', [INF, INF, INF, INF, INF, NAN, 0.0, 0.0]),
    ('digamma_edges', 'lax.digamma', [([0.0, -0.0, -1.0, -3.0, INF, -INF, NAN, 1e-30], 'float32')], 'float32', [-INF, -INF, NAN, NAN, INF, NAN, NAN, -1.0000000150474662e+30]),
    ('erfc_edges', 'lax.erfc', [([-INF, INF, NAN, -10.0], 'float32')], 'float32', [2.0, 0.0, NAN, 2.0]),
    ('bessel_i0e_edges', 'lax.bessel_i0e', [([0.0, INF, -INF, NAN], 'float32')], 'float32', [1.0000001192092896, 0.0, 0.0, NAN]),
]


@pytest.mark.parametrize("name,src,inputs,out_dtype,expected", XLA_SEMANTICS,
                         ids=[c[0] for c in XLA_SEMANTICS])
def test_xla_semantics_match_jax(name, src, inputs, out_dtype, expected):
  fn = eval(src, {"lax": lax, "np": np})
  args = [arr(v, _dt(d)) for v, d in inputs]
  for f in both(fn):
    got = f(*args)
    assert np.dtype(got.dtype) == _dt(out_dtype)
    if _dt(out_dtype).kind in "fcV":
      # transcendental results may differ from XLA's approximations in the last bit; results
      # below float32's normal range are flushed to zero by XLA's CPU backend (not by ember)
      np.testing.assert_allclose(wide(got), expected, rtol=2e-7, atol=1.2e-38)
      real = np.real(np.asarray(expected))
      keep = ~np.isnan(real)                  # signed zeros must match too (NaN signs don't)
      np.testing.assert_array_equal(np.signbit(wide(got).real)[keep], np.signbit(real)[keep])
    else:
      np.testing.assert_array_equal(np.asarray(got), expected)


# --- dtype and weak-type rules ----------------------------------------------------------------

def test_result_dtypes_and_weak_types_follow_jax():
  wf = ember.device_put(1.0)             # weakly typed float32
  wc = ember.device_put(1j)              # weakly typed complex64
  f32 = arr(1.0)
  cases = [   # (result, dtype, weak_type), as JAX 0.12
      (lax.eq(wf, wf), np.bool_, True), (lax.lt(f32, 2.0), np.bool_, False),
      (lax.is_finite(wf), np.bool_, True), (lax.real(wc), np.float32, True),
      (lax.abs(wc), np.float32, True), (lax.complex(wf, wf), np.complex64, True),
      (lax.conj(wf), np.complex64, True), (lax.sin(wf), np.float32, True),
      (lax.sin(1.0), np.float32, True), (lax.add(1.0, 2.0), np.float32, True),
      (lax.add(f32, 2.0), np.float32, False), (lax.mul(2, arr(3, np.int32)), np.int32, False),
      (lax.pow(wf, 2), np.float32, True), (lax.pow(f32, 2), np.float32, False),
      (lax.integer_pow(wf, 2), np.float32, True), (lax.select_n(True, wf, wf), np.float32, True),
      (lax.select_n(True, wf, f32), np.float32, False), (lax.clamp(wf, wf, wf), np.float32, True),
      (lax.clamp(0., f32, 2.), np.float32, False),
      (lax.bitcast_convert_type(wf, np.int32), np.int32, False),
      (lax.reduce_precision(wf, 5, 10), np.float32, True), (lax.round(wf), np.float32, True),
      (lax.convert_element_type(wf, np.int32), np.int32, False),
      (lax.population_count(ember.device_put(1)), np.int32, True),
      (lax.shift_left(ember.device_put(1), 1), np.int32, True),
      (lax.nextafter(f32, 1.), np.float32, False), (lax.atan2(f32, 1.), np.float32, False),
      (lax.pow(f32, arr(2, np.int8)), np.float32, False),
      (lax.pow(arr(2, np.float16), arr(2, np.int8)), np.float16, False),
      (lax.mul(arr([2.]), arr([3.]), out_dtype=np.float16), np.float16, False),
  ]
  for i, (out, dtype, weak) in enumerate(cases):
    assert (np.dtype(out.dtype), out.weak_type) == (np.dtype(dtype), weak), i


def test_weak_types_are_the_same_under_jit():
  def f(x, y):
    return lax.eq(x, y), lax.add(x, y), lax.sin(x), lax.select_n(lax.lt(x, y), x, y)
  for g in both(f):
    for out in g(1.0, 2.0):
      assert out.weak_type
    for out in g(arr(1.0), arr(2.0)):
      assert not out.weak_type


# --- selection -------------------------------------------------------------------------------

def test_select_and_clamp_broadcast_scalars():
  x = _sample("real", np.float32, (2, 3, 4))
  y = _sample("real", np.float32, (2, 3, 4), seed=5)
  p = x > y
  for f in both(lax.select):
    np.testing.assert_array_equal(np.asarray(f(arr(p, np.bool_), arr(x), arr(y))), np.where(p, x, y))
    np.testing.assert_array_equal(np.asarray(f(True, arr(x), arr(y))), x)
  w = (np.arange(24) % 3).reshape(2, 3, 4).astype(np.int32)
  for f in both(lambda w, a, b, c: lax.select_n(w, a, b, c)):
    np.testing.assert_array_equal(np.asarray(f(arr(w, np.int32), arr(x), arr(y), arr(x + y))),
                                  np.choose(w, [x, y, x + y]))
  assert np.asarray(lax.select_n(arr(0, np.int32), arr([5.]))).tolist() == [5.]
  for f in both(lambda a: lax.clamp(-1., a, 1.)):
    np.testing.assert_array_equal(np.asarray(f(arr(x))), np.clip(x, -1, 1))
  for f in both(lax.clamp):
    np.testing.assert_array_equal(np.asarray(f(arr(-x), arr(x), arr(np.abs(x) + 1))),
                                  np.minimum(np.maximum(x, -x), np.abs(x) + 1))
  assert lax.select(arr(np.zeros((0, 2), bool), np.bool_), arr(np.ones((0, 2))),
                    arr(np.ones((0, 2)))).shape == (0, 2)


# --- errors ------------------------------------------------------------------------------------

ERRORS = [
    (lambda: lax.add(arr([1.]), arr([1], np.int32)), TypeError,
     r"lax.add requires arguments to have the same dtypes, got float32, int32"),
    (lambda: lax.sub(arr([1.]), arr([1], np.int32)), TypeError,
     r"lax.sub requires .* got float32, int32. \(Tip: jnp.subtract"),
    (lambda: lax.sin(arr([1], np.int32)), TypeError, r"sin does not accept dtype int32"),
    (lambda: lax.floor(arr([1], np.int32)), TypeError, r"floor does not accept dtype int32"),
    (lambda: lax.erf(arr([1j], np.complex64)), TypeError, r"erf does not accept dtype complex64"),
    (lambda: lax.abs(arr([1], np.uint8)), TypeError, r"abs does not accept dtype uint8"),
    (lambda: lax.neg(arr([True], np.bool_)), TypeError, r"neg does not accept dtype bool"),
    (lambda: lax.add(arr(np.ones((2, 3))), arr(np.ones((3, 2)))), TypeError,
     r"add got incompatible shapes for broadcasting: \(2, 3\), \(3, 2\)"),
    (lambda: lax.mul(arr(np.ones((2, 3))), arr(np.ones(3))), TypeError,
     r"mul: arrays must have the same number of dimensions.*\(2, 3\), \(3,\)"),
    (lambda: lax.bitwise_and(arr([1.]), arr([1.])), TypeError, r"and does not accept dtype float32"),
    (lambda: lax.shift_left(arr([1.]), arr([1.])), TypeError, r"shift_left does not accept"),
    (lambda: lax.rem(arr([1j], np.complex64), arr([1j], np.complex64)), TypeError,
     r"rem does not accept dtype complex64"),
    (lambda: lax.lt(arr([1j], np.complex64), arr([1j], np.complex64)), TypeError,
     r"lt does not accept dtype complex64"),
    (lambda: lax.pow(arr([1], np.int32), arr([1], np.int32)), TypeError,
     r"pow does not accept dtype int32"),
    (lambda: lax.pow(arr([1j], np.complex64), arr([1.])), TypeError,
     r"first argument to pow must have an inexact dtype.*complex64 and float32"),
    (lambda: lax.integer_pow(arr([2], np.int32), -1), TypeError,
     r"Integers cannot be raised to negative powers"),
    (lambda: lax.integer_pow(arr([2.]), 1.5), TypeError, r"integer exponent"),
    (lambda: lax.complex(arr([1.], np.float16), arr([1.], np.float16)), TypeError,
     r"complex does not accept dtype float16 at position 0"),
    (lambda: lax.conj(arr([1], np.int32)), TypeError, r"conj does not accept dtype int32"),
    (lambda: lax.real(arr([1.])), TypeError, r"real does not accept dtype float32"),
    (lambda: lax.select_n(arr([1.]), arr([1.]), arr([1.])), TypeError,
     r"select `which` must be boolean or integer type, got float32"),
    (lambda: lax.select_n(arr([True, False], np.bool_), arr([1.]), arr([1.])), TypeError,
     r"`which` must be scalar or have the same shape as cases.*\(2,\).*\(1,\)"),
    (lambda: lax.select_n(True, arr([1.]), arr([1.]), arr([1.])), TypeError,
     r"boolean `which` cannot have > 2 cases"),
    (lambda: lax.select_n(True, arr([1.]), arr([1], np.int32)), TypeError,
     r"lax.select requires arguments to have the same dtypes, got float32, int32.*jnp.where"),
    (lambda: lax.select_n(True, arr([1.]), arr([1., 2.])), TypeError,
     r"select cases must have the same shapes, got \[\(1,\), \(2,\)\]"),
    (lambda: lax.select_n(True), ValueError, r"select_n\(\) must have at least one case"),
    (lambda: lax.clamp(arr(np.ones(3)), arr(np.ones(2)), 1.), TypeError,
     r"clamp requires min.shape == operand.shape or min.shape == \(\), got min.shape=\(3,\)"),
    (lambda: lax.clamp(arr(0, np.int32), arr([1.]), arr(1.)), TypeError,
     r"lax.clamp requires arguments to have the same dtypes, got int32, float32, float32"),
    (lambda: lax.bitcast_convert_type(arr(np.ones((2, 3)), np.float16), np.float32), ValueError,
     r"Attempting to convert array of shape \(2, 3\) from float16"),
    (lambda: lax.bitcast_convert_type(arr([1.]), np.bool_), TypeError,
     r"does not support bool or complex"),
    (lambda: lax.reduce_precision(arr([1.]), 0, 3), ValueError, r"exponent_bits must be positive"),
    (lambda: lax.reduce_precision(arr([1], np.int32), 5, 3), TypeError,
     r"reduce_precision does not accept dtype int32"),
    (lambda: lax.round(arr([1.]), 2), ValueError, r"2 is not a valid RoundingMethod"),
    (lambda: lax.nextafter(arr([1], np.int32), arr([1], np.int32)), TypeError,
     r"nextafter does not accept dtype int32"),
    (lambda: lax.add(1, 2.0), TypeError, r"got int32, float32"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_name_the_operation_and_the_problem(i):
  fn, cls, pattern = ERRORS[i]
  with pytest.raises(cls, match=pattern):
    fn()
  with pytest.raises(cls, match=pattern):  # the same check while tracing
    ember.make_jaxpr(fn)()


# --- fma (ember's own primitive: x * y + z rounded once; the random samplers use it) -----

def _exact_fma32(x, y, z):
  """Correctly rounded x * y + z from exact rational arithmetic."""
  from fractions import Fraction
  out = []
  for a, b, c in zip(x.ravel(), y.ravel(), z.ravel()):
    if not (np.isfinite(a) and np.isfinite(b) and np.isfinite(c)):
      out.append(np.float32(np.float64(a) * np.float64(b) + np.float64(c)))
      continue
    v = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    f = np.float32(float(v))             # nearest f32 of the double nearest v ...
    lo, hi = np.nextafter(f, np.float32(-np.inf)), np.nextafter(f, np.float32(np.inf))
    best = min((abs(Fraction(float(g)) - v), int(np.float32(g).view(np.uint32)) & 1, g)
               for g in (lo, f, hi) if np.isfinite(g))   # ... corrected: ties to even
    out.append(np.float32(best[2]))
  return np.array(out, np.float32).reshape(x.shape)


def test_fma_rounds_once_eager_and_compiled():
  from ember._src.primitives.elementwise import fma
  rng = np.random.default_rng(7)
  x = rng.standard_normal(400).astype(np.float32)
  y = (1 + rng.integers(0, 4096, 400) * np.float32(2 ** -23)).astype(np.float32)
  z = (-x * y).astype(np.float32)         # cancellation: the product's rounding error shows
  x = np.concatenate([x, np.float32([1 + 2 ** -23, 1e-30, np.inf, 3e-20])])
  y = np.concatenate([y, np.float32([1 - 2 ** -23, 1e-20, 0.0, 3e-20])])
  z = np.concatenate([z, np.float32([-1, 0.0, 1.0, 1e-45])])   # a subnormal result ...
  want = _exact_fma32(x, y, z)
  assert 0 < want[-1] < np.finfo(np.float32).tiny
  want[-1] = 0.0   # ... flushed to zero, as XLA:CPU's runtime flushes it (base/denormals.py)
  for f in (fma, ember.jit(fma)):
    got = np.asarray(f(x, y, z))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.isnan(got[np.isnan(want)]).all()
    # signed zeros and overflow follow IEEE: 0 * -0 + -0 = -0; 3e38 * 10 - 3e38 = inf
    edge = np.asarray(f(np.float32([0.0, 3e38]), np.float32([-0.0, 10]), np.float32([-0.0, -3e38])))
    assert np.signbit(edge[0]) and edge[0] == 0 and edge[1] == np.inf
  assert float(fma(np.float32(1 + 2 ** -23), np.float32(1 - 2 ** -23), np.float32(-1))) == -2.0 ** -46


def test_fma_jvp_vmap_and_dtype_error():
  from ember._src.primitives.elementwise import fma
  x = np.linspace(-2, 2, 6, dtype=np.float32)
  g = ember.grad(lambda v: jnp.sum(fma(v, v, np.float32(3))))(x)
  np.testing.assert_allclose(np.asarray(g), 2 * x, rtol=1e-6)
  m = np.arange(12, dtype=np.float32).reshape(3, 4)
  np.testing.assert_array_equal(np.asarray(ember.vmap(lambda r: fma(r, r, r))(m)), m * m + m)
  assert "fma" in str(ember.make_jaxpr(fma)(x, x, x))
  with pytest.raises(TypeError, match="fma is defined for float32"):
    fma(x.astype(np.float16), x.astype(np.float16), x.astype(np.float16))

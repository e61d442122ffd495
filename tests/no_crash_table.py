"""The no-crash table: ~760 cases (an op and its arguments) over ember.numpy, ember.lax,
ember.nn, ember.random and ember.numpy.linalg, across every dtype (x64 on), 0-size arrays,
scalars and rank-8 arrays, with edge values (nan, inf, integer division by zero, shifts
past the width, out-of-range float->int conversion).

Run as a script (tests/test_no_crash.py does, in a subprocess, so that a crash names the
op): each case runs eagerly (each primitive's NumPy implementation) and under `jit`
(compiled code), and the two must agree: same structure, dtypes, shapes and values (to a
per-dtype tolerance), or both raise the same kind of error. Prints `START <name>` before
each case, `MISMATCH <name>: <why>` for each disagreement (`KNOWN` for a tracked one,
`FIXED` for a tracked one that agrees now) and `DONE <count>` at the end.

    python tests/no_crash_table.py [substring]   # only the cases whose name contains it
"""
from __future__ import annotations

import faulthandler
import sys
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np

import ember
import ember.numpy as jnp
from ember import lax, nn, random
from ember._src.base.config import enable_x64

FLOATS = ("float16", "bfloat16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
COMPLEX = ("complex64", "complex128")
ALL = FLOATS + INTS + ("bool",) + COMPLEX


class Case(NamedTuple):
  name: str
  fn: Callable
  args: tuple
  x64: bool = True          # run with jax_enable_x64 (False: 64-bit inputs canonicalize)
  known: str | None = None  # a known, tracked disagreement (not a crash): the reason
  tol: tuple | None = None  # (rtol, atol) where summation order legitimately differs


CASES: list[Case] = []


def case(name, fn, *args, x64=True, known=None, tol=None):
  CASES.append(Case(name, fn, args, x64, known, tol))


def arr(shape, dtype, seed=0, kind="any"):
  """Deterministic test data: `kind` "pos" (> 0.5), "unit" (|x| < 0.9), "small" ints."""
  rng = np.random.default_rng(seed + 7 * len(shape) + sum(shape))
  dt = np.dtype(jnp.dtype(dtype))
  if dt == np.bool_:
    return rng.random(shape) < 0.5
  if np.issubdtype(dt, np.integer):
    lo, hi = (0, 100) if np.issubdtype(dt, np.unsignedinteger) else (-50, 50)
    if kind == "pos":
      lo = 1
    if kind == "small":
      lo, hi = max(lo, 0), 8
    return rng.integers(lo, hi, shape).astype(dt)
  x = rng.standard_normal(shape) * 2
  if np.issubdtype(dt, np.complexfloating):
    x = x + 1j * rng.standard_normal(shape)
  if kind == "pos":
    x = np.abs(x) + 0.5
  elif kind == "unit":
    x = np.tanh(x) * 0.9
  return np.asarray(x).astype(dt)


SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.5, 2.5, 1e30, -1e30, 3e9,
                    -3e9, 65504.0, 7e4])

# --- elementwise, floating ----------------------------------------------------------

UNARY_FLOAT = {
    "sin": (jnp.sin, "any"), "cos": (jnp.cos, "any"), "tan": (jnp.tan, "unit"),
    "exp": (jnp.exp, "any"), "expm1": (jnp.expm1, "any"), "exp2": (jnp.exp2, "any"),
    "log": (jnp.log, "pos"), "log1p": (jnp.log1p, "pos"), "log2": (jnp.log2, "pos"),
    "log10": (jnp.log10, "pos"), "sqrt": (jnp.sqrt, "pos"), "rsqrt": (lax.rsqrt, "pos"),
    "cbrt": (jnp.cbrt, "any"), "tanh": (jnp.tanh, "any"), "sinh": (jnp.sinh, "any"),
    "cosh": (jnp.cosh, "any"), "arcsin": (jnp.arcsin, "unit"), "arccos": (jnp.arccos, "unit"),
    "arctan": (jnp.arctan, "any"), "arctanh": (jnp.arctanh, "unit"),
    "arcsinh": (jnp.arcsinh, "any"), "erf": (lax.erf, "any"), "erfc": (lax.erfc, "any"),
    "erf_inv": (lax.erf_inv, "unit"), "logistic": (lax.logistic, "any"),
    "lgamma": (lax.lgamma, "pos"), "digamma": (lax.digamma, "pos"), "abs": (jnp.abs, "any"),
    "negative": (jnp.negative, "any"), "floor": (jnp.floor, "any"), "ceil": (jnp.ceil, "any"),
    "round": (jnp.round, "any"), "rint": (jnp.rint, "any"), "trunc": (jnp.trunc, "any"),
    "sign": (jnp.sign, "any"), "reciprocal": (jnp.reciprocal, "pos"),
    "square": (jnp.square, "any"), "isnan": (jnp.isnan, "any"),
    "isfinite": (jnp.isfinite, "any"), "signbit": (jnp.signbit, "any"),
}
for opname, (fn, kind) in UNARY_FLOAT.items():
  case(f"{opname}[f32,(3,5)]", fn, arr((3, 5), "float32", kind=kind))
for opname in ("sin", "exp", "log", "sqrt", "tanh", "abs", "floor", "round", "sign",
               "reciprocal", "erf", "logistic", "square"):
  fn, kind = UNARY_FLOAT[opname]
  for dt in ("float16", "bfloat16", "float64"):
    case(f"{opname}[{dt},(7,)]", fn, arr((7,), dt, kind=kind))
for opname in ("sin", "exp", "log", "sqrt", "tanh", "floor", "sign", "abs", "round",
               "isnan", "isfinite", "reciprocal", "square", "signbit"):
  fn, _ = UNARY_FLOAT[opname]
  for dt in ("float32", "float64", "float16"):
    with np.errstate(over="ignore"):   # 1e30 -> inf in float16, on purpose
      case(f"{opname}[{dt},special]", fn, SPECIAL.astype(dt))

BINARY_FLOAT = {
    "add": jnp.add, "subtract": jnp.subtract, "multiply": jnp.multiply, "divide": jnp.divide,
    "maximum": jnp.maximum, "minimum": jnp.minimum, "power": jnp.power,
    "arctan2": jnp.arctan2, "fmod": jnp.fmod, "remainder": jnp.remainder,
    "floor_divide": jnp.floor_divide, "hypot": jnp.hypot, "logaddexp": jnp.logaddexp,
    "nextafter": jnp.nextafter, "copysign": jnp.copysign, "less": jnp.less,
    "equal": jnp.equal,
}
for opname, fn in BINARY_FLOAT.items():
  case(f"{opname}[f32,(4,3)x(3,)]", fn, arr((4, 3), "float32", kind="pos"),
       arr((3,), "float32", 1, kind="pos"))
EXACT = (0.0, 0.0)   # one correctly rounded operation: the same bits eagerly and compiled
for opname in ("add", "subtract", "multiply", "divide", "maximum", "power", "remainder",
               "arctan2"):
  for dt in ("float16", "bfloat16", "float64"):
    exact = opname in ("add", "subtract", "multiply", "divide", "maximum")
    case(f"{opname}[{dt},(5,)]", BINARY_FLOAT[opname], arr((5,), dt, kind="pos"),
         arr((5,), dt, 1, kind="pos"), tol=EXACT if exact else None)
for opname in ("add", "multiply", "divide", "maximum", "minimum", "remainder", "power"):
  case(f"{opname}[f32,special x special]", BINARY_FLOAT[opname],
       SPECIAL.astype("float32"), SPECIAL[::-1].astype("float32"))
# each operation rounds to 16 bits, as XLA's: a fused chain must not keep f32 in between
for dt in ("bfloat16", "float16"):
  case(f"chain (x*y+x)/y-x[{dt}]", lambda x, y: (x * y + x) / y - x, arr((64,), dt),
       arr((64,), dt, 1, kind="pos"), tol=EXACT)
  case(f"chain sum(x*y)[{dt}]", lambda x, y: jnp.sum(x * y + y), arr((64,), dt),
       arr((64,), dt, 1))
  case(f"chain exp(x)*y-x[{dt}]", lambda x, y: jnp.exp(x) * y - x, arr((9,), dt),
       arr((9,), dt, 1))

# --- complex ------------------------------------------------------------------------

for dt in COMPLEX:
  for opname, fn in {"exp": jnp.exp, "log": jnp.log, "sqrt": jnp.sqrt, "sin": jnp.sin,
                     "tanh": jnp.tanh, "abs": jnp.abs, "conj": jnp.conj, "real": jnp.real,
                     "imag": jnp.imag, "angle": jnp.angle, "square": jnp.square,
                     "negative": jnp.negative}.items():
    case(f"{opname}[{dt},(2,3)]", fn, arr((2, 3), dt))
  case(f"multiply[{dt}]", jnp.multiply, arr((4,), dt), arr((4,), dt, 1))
  case(f"divide[{dt}]", jnp.divide, arr((4,), dt), arr((4,), dt, 1))
  case(f"matmul[{dt}]", jnp.matmul, arr((3, 4), dt), arr((4, 2), dt, 1))
  case(f"sum[{dt}]", jnp.sum, arr((3, 4), dt))
  case(f"lax.complex[{dt}]", lax.complex, arr((3,), "float32" if dt == "complex64" else
                                              "float64"),
       arr((3,), "float32" if dt == "complex64" else "float64", 1))

# --- integers and bool --------------------------------------------------------------

for dt in INTS:
  x, y = arr((6,), dt), arr((6,), dt, 1, kind="pos")
  case(f"add[{dt}]", jnp.add, x, y)
  case(f"multiply[{dt}]", jnp.multiply, x, y)
  case(f"floor_divide[{dt}]", jnp.floor_divide, x, y)
  case(f"remainder[{dt}]", jnp.remainder, x, y)
  case(f"abs[{dt}]", jnp.abs, x)
  case(f"bitwise_xor[{dt}]", jnp.bitwise_xor, x, y)
  case(f"shift_left[{dt}]", jnp.left_shift, x, arr((6,), dt, 2, kind="small"))
  case(f"sum+max[{dt}]", lambda a: (jnp.sum(a), jnp.max(a), jnp.argmin(a)), x)
  case(f"cumsum[{dt}]", jnp.cumsum, x)
  case(f"sort[{dt}]", jnp.sort, x)
  case(f"astype f32[{dt}]", lambda a: a.astype(jnp.float32), x)
  case(f"population_count[{dt}]", lax.population_count, x)
  case(f"clz[{dt}]", lax.clz, x)
  info = np.iinfo(dt)
  # division by zero and the overflowing MIN / -1: defined in XLA (x/0 = -1 or all ones,
  # x%0 = x), a trap (SIGFPE) in plain machine division
  num = np.array([7, info.min, info.max, 0, 5], dt)
  den = np.array([0, -1 if info.min < 0 else 1, 0, 0, 2], dt)
  case(f"lax.div by zero[{dt}]", lax.div, num, den)
  case(f"lax.rem by zero[{dt}]", lax.rem, num, den)
  width = info.bits
  sh = np.array([0, 1, width - 1, width, width + 3], dt)
  v = np.array([1, info.max, info.min, 3, info.max], dt)
  case(f"shift_left past width[{dt}]", lax.shift_left, v, sh)
  case(f"shift_right_logical past width[{dt}]", lax.shift_right_logical, v, sh)
  case(f"shift_right_arithmetic past width[{dt}]", lax.shift_right_arithmetic, v, sh)
  case(f"integer_pow[{dt}]", lambda a: lax.integer_pow(a, 3), x)
for dt in INTS + ("bool", "float16", "bfloat16", "float64"):
  case(f"f32 special -> {dt}", lambda a, dt=dt: a.astype(dt),
       np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 300.7, -300.7, 2.5],
                np.float32))
for dt in ALL:
  case(f"{dt} -> f32", lambda a: a.astype(jnp.float32), arr((5,), dt))
  case(f"{dt} -> complex64", lambda a: a.astype(jnp.complex64), arr((5,), dt))
b1, b2 = arr((4, 3), "bool"), arr((4, 3), "bool", 1)
case("logical_and[bool]", jnp.logical_and, b1, b2)
case("logical_not[bool]", jnp.logical_not, b1)
case("sum/any/all[bool]", lambda b: (jnp.sum(b), jnp.any(b, axis=0), jnp.all(b, axis=1)), b1)
case("where[bool]", lambda b, x: jnp.where(b, x, -x), b1, arr((4, 3), "float32"))
case("add[bool]", jnp.add, b1, b2)
case("matmul[bool]", jnp.matmul, b1, b2.T)
case("argmax[bool]", jnp.argmax, b1)
case("cumsum[bool]", jnp.cumsum, b1)

# --- shapes: scalars, 0-size, rank 8 ------------------------------------------------

R8 = (1, 2, 1, 3, 1, 2, 1, 2)
x8 = arr(R8, "float32")
case("sum rank8", lambda a: jnp.sum(a, axis=(1, 3, 7)), x8)
case("transpose rank8", lambda a: jnp.transpose(a, (7, 6, 5, 4, 3, 2, 1, 0)) * 2, x8)
case("reshape rank8", lambda a: a.reshape(6, 4) + 1, x8)
case("squeeze rank8", lambda a: jnp.squeeze(a) * a.sum(), x8)
case("broadcast rank8", lambda a, b: a + b, x8, arr((2,), "float32"))
case("max rank8 int8", lambda a: jnp.max(a, axis=(0, 3)), arr(R8, "int8"))
case("softmax rank8", lambda a: nn.softmax(a, axis=3), x8)
case("cumsum rank8", lambda a: jnp.cumsum(a, axis=5), x8)
case("flip rank8", lambda a: jnp.flip(a, (1, 3)), x8)
for dt in ("float32", "int32", "bool", "float16", "complex64"):
  s = arr((), dt)
  case(f"scalar add[{dt}]", lambda a: a + a, s)
  case(f"scalar sum[{dt}]", jnp.sum, s)
  case(f"scalar reshape[{dt}]", lambda a: a.reshape(1, 1), s)
case("python scalar weak", lambda a: a * 2 + 1.5, np.float16(3.0))
for shape in ((0,), (0, 3), (3, 0), (2, 0, 4)):
  for dt in ("float32", "int32", "bool", "float16"):
    z = arr(shape, dt)
    case(f"sum 0-size {shape}[{dt}]", lambda a: jnp.sum(a, axis=-1), z)
  z = arr(shape, "float32")
  case(f"exp 0-size {shape}", jnp.exp, z)
  case(f"max 0-size {shape}", lambda a: jnp.max(a, axis=0), z)
  case(f"max initial 0-size {shape}", lambda a: jnp.max(a, axis=0, initial=-1.0), z)
  case(f"mean 0-size {shape}", lambda a: jnp.mean(a, axis=0), z)
  case(f"prod 0-size {shape}", lambda a: jnp.prod(a, axis=0), z)
  case(f"argmax 0-size {shape}", lambda a: jnp.argmax(a, axis=-1), z)
  case(f"cumsum 0-size {shape}", lambda a: jnp.cumsum(a, axis=0), z)
  case(f"sort 0-size {shape}", jnp.sort, z)
  case(f"reshape 0-size {shape}", lambda a: a.reshape(-1, 1) + 1, z)
  case(f"transpose 0-size {shape}", lambda a: a.T * 2, z)
  case(f"pad 0-size {shape}", lambda a: jnp.pad(a, 1), z)
  case(f"lax.reduce 0-size {shape}", lambda a: lax.reduce(a, 0.0, lax.add, (0,)), z)
  case(f"lax.reduce max 0-size {shape}",
       lambda a: lax.reduce(a, -np.inf, lax.max, tuple(range(a.ndim))), z)
case("matmul 0-K", jnp.matmul, arr((3, 0), "float32"), arr((0, 4), "float32"))
case("matmul 0-M", jnp.matmul, arr((0, 5), "float32"), arr((5, 4), "float32"))
case("concatenate with 0-size", lambda a, b: jnp.concatenate([a, b, a]) + 1,
     arr((0, 3), "float32"), arr((2, 3), "float32"))
case("concatenate all 0-size", lambda a, b: jnp.concatenate([a, b]), arr((0,), "float32"),
     arr((0,), "float32"))
case("stack 0-size", lambda a, b: jnp.stack([a, b]), arr((0,), "float32"), arr((0,), "float32"))
case("where 0-size", lambda a: jnp.where(a > 0, a, 0), arr((0, 2), "float32"))
case("take 0 indices", lambda a, i: jnp.take(a, i, axis=0), arr((4, 3), "float32"),
     np.zeros((0,), np.int32))
case("index 0-size", lambda a: a[2:2] + 1, arr((4, 3), "float32"))
case("dot 0-size", jnp.dot, arr((0,), "float32"), arr((0,), "float32"))
case("random.uniform 0-size", lambda k: random.uniform(k, (0, 3)), random.key(0))
case("one_hot 0-size", lambda i: nn.one_hot(i, 4), np.zeros((0,), np.int32))
case("softmax 0-size", nn.softmax, arr((0, 3), "float32"))
case("logsumexp 0-size", lambda a: nn.logsumexp(a, axis=0), arr((0, 3), "float32"))

# more ops on empty operands, batches and axes (each checked against JAX's behaviour)
z03, z0 = np.zeros((0, 3), np.float32), np.zeros((0,), np.float32)
case("custom fn 0-size", lambda a: lax.reduce(a, np.float32(0), lambda x, y: x * 0.5 + y, (0,)),
     z03)
case("custom fn all axes 0-size",
     lambda a: lax.reduce(a, np.float32(1), lambda x, y: jnp.maximum(x, y) + 1, (0, 1)),
     np.zeros((2, 0), np.float32))
case("multi-operand 0-size", lambda a, b: lax.reduce(
    (a, b), (np.float32(-np.inf), np.int32(0)),
    lambda x, y: (jnp.maximum(x[0], y[0]), x[1] + y[1]), (0,)), z03, np.zeros((0, 3), np.int32))
case("custom fn", lambda a: lax.reduce(a, np.float32(0), lambda x, y: x + y * y, (1,)),
     np.arange(6, dtype=np.float32).reshape(2, 3))
case("bf16 reduce add", lambda a: lax.reduce(a, jnp.bfloat16(0), lax.add, (0,)),
     np.linspace(0, 3, 40).astype(jnp.bfloat16))
case("int reduce 0-size", lambda a: lax.reduce(a, np.int32(7), lax.min, (0,)),
     np.zeros((0,), np.int32))
case("reduce_precision 0-size", lambda a: lax.reduce_precision(a, 5, 10), z0)
case("argmin 0-size rows", lambda a: jnp.argmin(a, axis=1), z03)
case("cumlogsumexp 0-size", lambda a: lax.cumlogsumexp(a, axis=0), np.zeros((0, 2), np.float32))
case("sort 2 ops 0-size", lambda a: lax.sort((a, a), num_keys=1), z0)
case("top_k 0-size rows", lambda a: lax.top_k(a, 2), z03)
case("scan over 0-size xs", lambda a: lax.scan(lambda c, x: (c + x.sum(), x), 0.0, a), z03)
case("while 0-size carry", lambda a: lax.while_loop(
    lambda c: c[1] < 3, lambda c: (c[0] * 2, c[1] + 1), (a, 0)), z03)
case("gather 0-size operand", lambda a, i: a[i], z03, np.array([0, 1], np.int32))
case("scatter 0-size operand", lambda a, i: a.at[i].set(1.0), z03, np.array([0, 1], np.int32))
case("dynamic_slice 0-size",
     lambda a: lax.dynamic_slice(a, (np.int32(0), np.int32(1)), (0, 2)), z03)
case("dot 0 batch", lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
     np.zeros((0, 2, 3), np.float32), np.zeros((0, 3, 4), np.float32))
case("linalg inv 0 batch", jnp.linalg.inv, np.zeros((0, 3, 3), np.float32))
case("cholesky 0 batch", jnp.linalg.cholesky, np.zeros((0, 2, 2), np.float32))
case("svd 0x3", lambda a: jnp.linalg.svd(a, compute_uv=False), z03)
case("qr 3x0", lambda a: jnp.linalg.qr(a)[1], np.zeros((3, 0), np.float32))
case("eigh 0x0", lambda a: jnp.linalg.eigh(a)[0], np.zeros((0, 0), np.float32))
case("solve 0", jnp.linalg.solve, np.zeros((0, 0), np.float32), z0)
case("random normal 0 on key batch", lambda: random.normal(random.key(1), (0, 0, 4)))
case("random split 0", lambda: random.key_data(random.split(random.key(1), 0)))
case("random permutation 0", lambda: random.permutation(random.key(1), 0))
case("random choice 0 from 5", lambda: random.choice(random.key(1), 5, (0,)))
case("one_hot 0 classes", lambda i: nn.one_hot(i, 0), np.array([1, 2], np.int32))
case("softmax 0 last", lambda a: nn.softmax(a, axis=-1), np.zeros((3, 0), np.float32))
case("unique 0", lambda a: jnp.unique(a, size=2, fill_value=0.0), z0)
case("histogram 0", lambda a: jnp.histogram(a, bins=3, range=(0, 1))[0], z0)
case("median 0", jnp.median, z0)
case("bincount 0", lambda a: jnp.bincount(a, length=3), np.zeros((0,), np.int32))
case("searchsorted 0 sorted", jnp.searchsorted, z0, np.ones(3, np.float32))
case("repeat 0 times", lambda a: jnp.repeat(a, 0, axis=0), np.ones((3, 2), np.float32))
case("tile 0", lambda a: jnp.tile(a, (0, 2)), np.ones((3, 2), np.float32))
case("pad 0-size to nonempty",
     lambda a: jnp.pad(a, ((1, 1), (0, 0)), constant_values=3.0), np.zeros((0, 2), np.float32))
case("roll 0-size", lambda a: jnp.roll(a, 3), z0)
case("diff 0-size", jnp.diff, np.zeros((1,), np.float32))
case("convolve same", lambda a, b: jnp.convolve(a, b, mode="same"), np.ones(5, np.float32),
     np.ones(3, np.float32))
case("cumsum 0-size bool", jnp.cumsum, np.zeros((0,), np.bool_))
case("cumprod int8 wraps", jnp.cumprod, np.full((20,), 3, np.int8))
case("var 1 elem ddof1", lambda a: jnp.var(a, ddof=1), np.ones((1,), np.float32))
case("mean int8", jnp.mean, np.arange(5, dtype=np.int8))
case("reshape 0 -1", lambda a: a.reshape(0, -1), np.zeros((0, 4), np.float32))

# --- structural and indexing --------------------------------------------------------

m = arr((4, 5), "float32")
idx = np.array([3, 0, -1, 2], np.int32)
case("concatenate axis1", lambda a, b: jnp.concatenate([a, b], axis=1), m, arr((4, 2), "float32"))
case("stack/split", lambda a: jnp.split(jnp.stack([a, a * 2]), 2, axis=1)[0], m)
case("pad negative", lambda a: lax.pad(a, np.float32(0), [(-1, 2, 1), (2, -1, 0)]), m)
case("roll", lambda a: jnp.roll(a, (2, -7), (0, 1)), m)
case("tile/repeat", lambda a: (jnp.tile(a, (2, 1)), jnp.repeat(a, 2, axis=1)), m)
case("take clip/wrap", lambda a, i: (jnp.take(a, i * 3, axis=1, mode="clip"),
                                     jnp.take(a, i * 3, axis=1, mode="wrap")), m, idx)
case("take fill OOB", lambda a, i: jnp.take(a, i * 3, axis=1, mode="fill"), m, idx)
case("getitem int array", lambda a, i: a[i], m, idx)
case("getitem mixed", lambda a, i: a[i, 1:4:2], m, idx)
case("getitem OOB clamps", lambda a, i: a[i + 10], m, idx)
case("getitem bool mask const", lambda a: a[np.array([True, False, True, False])], m)
case("at set/add/mul", lambda a, i: (a.at[i].set(0.0), a.at[i].add(1.0), a.at[i, 2].mul(3.0)),
     m, idx)
case("at min/max dup", lambda a: (a.at[np.array([1, 1, 2])].min(-5.0),
                                  a.at[np.array([1, 1, 2])].max(5.0)), m)
case("at OOB dropped", lambda a: a.at[np.array([9, -9])].set(7.0), m)
case("take_along_axis", lambda a: jnp.take_along_axis(a, jnp.argsort(a, axis=1), axis=1), m)
case("dynamic_slice OOB", lambda a, i: lax.dynamic_slice(a, (i, i), (3, 3)), m, np.int32(3))
case("dynamic_slice neg", lambda a, i: lax.dynamic_slice(a, (i, i + 7), (2, 2)), m,
     np.int32(-7))
case("dynamic_update_slice OOB", lambda a, i: lax.dynamic_update_slice(
    a, jnp.ones((2, 2), jnp.float32), (i, i)), m, np.int32(9))
case("slice strided", lambda a: lax.slice(a, (0, 1), (4, 5), (3, 2)), m)
case("rev", lambda a: lax.rev(a, (0, 1)), m)
case("transpose+reshape", lambda a: a.T.reshape(2, 10)[:, ::3], m)
case("broadcast_in_dim", lambda a: lax.broadcast_in_dim(a[0], (3, 5), (1,)), m)
case("expand/squeeze", lambda a: jnp.squeeze(jnp.expand_dims(a, (0, 2)), 0), m)
case("diagonal/trace", lambda a: (jnp.diagonal(a, 1), jnp.trace(a)), m)
case("tril/triu", lambda a: (jnp.tril(a, -1), jnp.triu(a, 2)), m)
case("clip", lambda a: jnp.clip(a, -0.5, 0.5), m)
case("diff", lambda a: jnp.diff(a, n=2, axis=1), m)
case("argsort stable dup", lambda a: jnp.argsort(jnp.round(a), axis=1, stable=True), m)
case("sort descending int", lambda a: jnp.sort(a)[::-1], arr((9,), "int16"))
case("top_k", lambda a: lax.top_k(a, 3), m)
case("searchsorted", lambda a, v: jnp.searchsorted(jnp.sort(a), v), arr((8,), "float32"),
     arr((5,), "float32", 1))
for dt in COMPLEX:   # lexicographic (real, imag) order with NaNs last, as lax.sort's
  cs = np.array([1 + 2j, 1 + np.nan * 1j, 3 - 1j, 0j, np.nan + 0j, 1 - 1j, 1 + 2j], dt)
  cq = np.array([1 + 2j, 1 + 0j, np.nan + 1j, 1 + np.nan * 1j, -1 + 5j, 3 - 1j, 0j], dt)
  for side in ("left", "right"):
    for how in ("compare_all", "sort"):
      case(f"searchsorted {side} {how}[{dt}]",
           lambda a, v, side=side, how=how: jnp.searchsorted(jnp.sort(a), v, side=side,
                                                             method=how), cs, cq)
case("sort multi-operand", lambda a, b: lax.sort((a, b), num_keys=1), arr((6,), "int32"),
     arr((6,), "float32"))
case("einsum", lambda a, b: jnp.einsum("ij,kj->ik", a, b), m, arr((3, 5), "float32"))
case("tensordot", lambda a, b: jnp.tensordot(a, b, axes=([1], [0])), m, arr((5, 2), "float32"))
case("dot_general batch", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
     arr((2, 3, 4), "float32"), arr((2, 4, 5), "float32"))
for dt in ("float16", "bfloat16", "float64", "int8", "int32", "uint8"):
  case(f"matmul[{dt}]", jnp.matmul, arr((3, 4), dt), arr((4, 2), dt, 1))
case("matmul large f32", jnp.matmul, arr((64, 48), "float32"), arr((48, 80), "float32"),
     tol=(1e-5, 2e-5))   # 48-term sums of |x| ~ 4 in another order
case("matvec", jnp.matmul, m, arr((5,), "float32"))
case("outer/kron", lambda a, b: (jnp.outer(a, b), jnp.kron(a[:2], b[:3])),
     arr((4,), "float32"), arr((5,), "float32"))
case("iota/arange", lambda: (lax.iota(jnp.int8, 5), jnp.arange(3, 10, 2, dtype=jnp.float16)))
case("linspace/eye", lambda: (jnp.linspace(0, 1, 7), jnp.eye(3, 4, k=1, dtype=jnp.int32)))
case("full/zeros_like", lambda a: (jnp.full((2, 3), 7, dtype=jnp.uint8), jnp.zeros_like(a)), m)
case("bitcast f32->i32", lambda a: lax.bitcast_convert_type(a, jnp.int32), m)
case("bitcast f32->u8", lambda a: lax.bitcast_convert_type(a, jnp.uint8), m)
case("bitcast u16->bf16", lambda a: lax.bitcast_convert_type(a, jnp.bfloat16),
     np.array([0, 0x3F80, 0x7FC0, 0xFF80, 0x0001], np.uint16))
case("select_n", lambda i, a, b, c: lax.select_n(i, a, b, c), np.array([0, 1, 2, 1], np.int32),
     arr((4,), "float32"), arr((4,), "float32", 1), arr((4,), "float32", 2))
case("clamp", lambda a: lax.clamp(np.float32(-1.0), a, np.float32(1.0)), m)  # x64: 1.0 is f64
case("reduce_precision", lambda a: lax.reduce_precision(a, exponent_bits=5, mantissa_bits=10), m)
case("cummax/cumlogsumexp", lambda a: (lax.cummax(a, axis=1), lax.cumlogsumexp(a, axis=0)), m)
case("cumprod reverse", lambda a: lax.cumprod(a, axis=1, reverse=True), m)
case("std/var/median", lambda a: (jnp.std(a, axis=0), jnp.var(a, ddof=1), jnp.median(a)), m)
case("quantile", lambda a: jnp.quantile(a, 0.3, axis=1), m)
case("nan reductions", lambda a: (jnp.nansum(a), jnp.nanmax(a, axis=0), jnp.nanmean(a)),
     np.where(m > 1, np.nan, m))
case("unique size", lambda a: jnp.unique(jnp.round(a), size=6, fill_value=0.0), m)
case("bincount length", lambda i: jnp.bincount(i, length=5), np.array([0, 1, 1, 4, 7], np.int32))
case("histogram", lambda a: jnp.histogram(a, bins=4, range=(-2, 2)), m)
case("polyval/convolve", lambda a, b: (jnp.polyval(a, b), jnp.convolve(a, b)),
     arr((3,), "float32"), arr((5,), "float32"))
case("isclose/allclose", lambda a, b: (jnp.isclose(a, b), jnp.allclose(a, b)), m, m + 1e-7)
case("nonzero size", lambda a: jnp.nonzero(a > 0, size=8, fill_value=-1), m)
case("meshgrid", lambda a, b: jnp.meshgrid(a, b), arr((3,), "float32"), arr((2,), "float32"))
case("packbits", jnp.packbits, arr((11,), "bool"))

# --- edge values through reductions, sorts and large (thread-split) kernels ----------

nanm = np.where(arr((6, 7), "float32") > 1.5, np.nan, arr((6, 7), "float32"))
nanm[2, 3], nanm[4, 1] = -0.0, np.inf
case("max/min nan", lambda a: (jnp.max(a, axis=1), jnp.min(a), jnp.maximum(a, 0.0)), nanm)
case("argmax/argmin nan", lambda a: (jnp.argmax(a, axis=1), jnp.argmin(a, axis=0)), nanm)
case("sort nan/-0", lambda a: (jnp.sort(a, axis=1), jnp.argsort(a, axis=0)), nanm)
case("cumsum/cummax nan", lambda a: (jnp.cumsum(a, axis=1), lax.cummax(a, axis=0)), nanm)
case("top_k nan", lambda a: lax.top_k(a, 2), nanm)
case("sum int8 wraps", lambda a: jnp.sum(a, dtype=jnp.int8), np.full((300,), 100, np.int8))
case("cumsum uint8 wraps", lambda a: jnp.cumsum(a, dtype=jnp.uint8), np.full((40,), 9, np.uint8))
case("prod int32 overflow", lambda a: jnp.prod(a), np.full((40,), 7, np.int32))
BIG = arr((300, 257), "float32")
case("big elementwise fusion", lambda a: jnp.tanh(a) * 2 + jnp.exp(-a * a), BIG)
case("big row sums", lambda a: (jnp.sum(a, axis=1), jnp.max(a, axis=0)), BIG, tol=(1e-5, 1e-4))
case("big total sum", jnp.sum, BIG, tol=(1e-5, 1e-3))
case("big softmax", lambda a: nn.softmax(a, axis=-1), BIG)
case("big transpose copy", lambda a: a.T + 1, BIG)
case("big f16 sum", lambda a: jnp.sum(a, axis=0), BIG.astype(np.float16), tol=(4e-3, 4e-2))
case("big bf16 mean", lambda a: jnp.mean(a, axis=1), BIG.astype("bfloat16"),
     tol=(1.6e-2, 2e-2))
case("big int64 sum", jnp.sum, arr((300, 257), "int64"))
case("big argmax", lambda a: jnp.argmax(a, axis=1), BIG)
case("big matmul f64", jnp.matmul, BIG.astype(np.float64)[:64], BIG.astype(np.float64).T[:, :40],
     tol=(1e-12, 1e-11))
case("big gather", lambda a, i: a[i], BIG, np.arange(0, 300, 7, dtype=np.int32))
case("big scatter-add dup", lambda a, i: jnp.zeros(20).at[i % 20].add(a[:, 0][i]),
     BIG, np.arange(0, 300, 3, dtype=np.int32), tol=(1e-5, 1e-5))
case("multi-output fusion", lambda a: (a * 2, jnp.sum(a * 2, axis=1), jnp.exp(a)[:, :3]), BIG,
     tol=(1e-5, 1e-4))

# --- control flow -------------------------------------------------------------------

case("while_loop", lambda n: lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] * 2.0),
                                            (0, 1.0)), np.int32(5))
case("while_loop zero trips", lambda n: lax.while_loop(lambda c: c < n, lambda c: c + 1, 10),
     np.int32(5))
case("fori_loop", lambda a: lax.fori_loop(0, 4, lambda i, c: c * 2 + i, a), m)
case("scan", lambda a: lax.scan(lambda c, x: (c + x, c * x), jnp.zeros(5), a), m)
case("scan length 0", lambda a: lax.scan(lambda c, x: (c + x, c), jnp.zeros(5), a[:0]), m)
case("scan reverse unroll", lambda a: lax.scan(lambda c, x: (c * 0.5 + x, c), a[0], a,
                                                reverse=True, unroll=3), m)
case("cond", lambda p, a: lax.cond(p, lambda x: x * 2, lambda x: -x, a), np.bool_(True), m)
case("cond int pred", lambda p, a: lax.cond(p, jnp.sin, jnp.cos, a), np.int32(0), m)
case("switch clamps", lambda i, a: lax.switch(i, [jnp.sin, jnp.cos, jnp.exp], a), np.int32(7), m)
case("switch negative", lambda i, a: lax.switch(i, [jnp.sin, jnp.cos], a), np.int32(-3), m)
case("map", lambda a: lax.map(lambda r: r.sum() * r, a), m)
case("associative_scan", lambda a: lax.associative_scan(jnp.add, a, axis=1), m)
case("vmap of jit", lambda a: ember.vmap(ember.jit(lambda r: r @ r))(a), m)
case("grad", ember.grad(lambda a: jnp.sum(jnp.tanh(a) ** 2)), m)
case("grad through while", ember.grad(
    lambda a: lax.fori_loop(0, 3, lambda i, c: c * jnp.sin(c), a).sum()), m)
case("jvp", lambda a: ember.jvp(jnp.exp, (a,), (jnp.ones_like(a),)), m)

# --- nn -----------------------------------------------------------------------------

for opname in ("relu", "relu6", "gelu", "silu", "sigmoid", "softplus", "elu", "selu",
               "log_sigmoid", "leaky_relu", "hard_tanh", "mish", "celu", "soft_sign"):
  case(f"nn.{opname}", getattr(nn, opname), m)
case("nn.gelu exact", lambda a: nn.gelu(a, approximate=False), m)
for dt in ("float16", "bfloat16", "float32", "float64"):
  case(f"nn.softmax[{dt}]", lambda a: nn.softmax(a, axis=-1), arr((3, 6), dt))
  case(f"nn.log_softmax[{dt}]", nn.log_softmax, arr((3, 6), dt))
case("nn.logsumexp", lambda a: nn.logsumexp(a, axis=1, keepdims=True), m)
case("nn.logsumexp -inf", lambda a: nn.logsumexp(a, axis=0),
     np.array([[-np.inf, 1.0], [-np.inf, 2.0]], np.float32))
case("nn.softmax where", lambda a: nn.softmax(a, where=a > 0), m)
case("nn.one_hot", lambda i: nn.one_hot(i, 5), np.array([0, 4, 7, -1], np.int32))
case("nn.standardize", nn.standardize, m)
case("nn.glu", nn.glu, arr((3, 6), "float32"))
case("nn.dot_product_attention", lambda q, k, v: nn.dot_product_attention(q, k, v),
     arr((2, 4, 2, 8), "float32"), arr((2, 5, 2, 8), "float32", 1),
     arr((2, 5, 2, 8), "float32", 2))
case("nn.dot_product_attention causal", lambda q: nn.dot_product_attention(q, q, q,
                                                                           is_causal=True),
     arr((1, 4, 1, 8), "float32"))

# --- random -------------------------------------------------------------------------

K = random.key(42)
case("random.split/fold_in", lambda k: (random.key_data(random.split(k, 3)),
                                        random.key_data(random.fold_in(k, 7))), K)
case("random.PRNGKey raw", lambda: random.uniform(random.PRNGKey(3), (4,)))
for dt in ("float16", "bfloat16", "float32", "float64"):
  case(f"random.uniform[{dt}]", lambda k, dt=dt: random.uniform(k, (5,), dtype=dt), K)
  case(f"random.normal[{dt}]", lambda k, dt=dt: random.normal(k, (5,), dtype=dt), K)
for dt in ("int8", "uint8", "int32", "uint32", "int64", "uint64"):
  case(f"random.randint[{dt}]", lambda k, dt=dt: random.randint(k, (6,), -5, 120, dtype=dt), K)
case("random.bits", lambda k: random.bits(k, (4,), dtype=jnp.uint16), K)
case("random.bernoulli", lambda k: random.bernoulli(k, 0.3, (8,)), K)
case("random.categorical", lambda k, lg: random.categorical(k, lg, axis=-1), K, m)
case("random.permutation", lambda k: random.permutation(k, 10), K)
case("random.choice", lambda k: random.choice(k, 10, (4,), replace=False), K)
# (beta and dirichlet: gamma's rejection loop, seconds eagerly; gamma covers it)
case("random.gamma", lambda k: random.gamma(k, np.array([0.5, 4.0], np.float32)), K)
case("random.poisson", lambda k: random.poisson(k, 3.0, (3,)), K)
case("random.truncated_normal", lambda k: random.truncated_normal(k, -1.0, 2.0, (5,)), K)
case("random.exponential/gumbel", lambda k: (random.exponential(k, (3,)),
                                             random.gumbel(k, (3,))), K)
case("random.multivariate_normal", lambda k: random.multivariate_normal(
    k, np.zeros(2, np.float32), np.eye(2, dtype=np.float32), (3,)), K)

# --- linalg (decompositions compared through what they determine: signs are free) -----

la = jnp.linalg
for dt in ("float32", "float64"):
  a = arr((4, 4), dt) + 4 * np.eye(4, dtype=dt)
  spd = (a @ a.T).astype(dt)
  case(f"inv[{dt}]", la.inv, a)
  case(f"solve[{dt}]", la.solve, a, arr((4, 2), dt, 1))
  case(f"det/slogdet[{dt}]", lambda x: (la.det(x), la.slogdet(x)), a)
  case(f"cholesky[{dt}]", la.cholesky, spd)
  case(f"qr[{dt}]", lambda x: jnp.matmul(*la.qr(x)), a)
  case(f"svd[{dt}]", lambda x: la.svd(x, compute_uv=False), a)
  case(f"eigh[{dt}]", lambda x: la.eigh(x)[0], spd)
  case(f"norm[{dt}]", lambda x: (la.norm(x), la.norm(x, ord=2), la.norm(x[0], ord=1)), a)
  case(f"pinv[{dt}]", la.pinv, arr((4, 3), dt))
  case(f"matrix_power[{dt}]", lambda x: la.matrix_power(x, 3), a)
case("lstsq", lambda a, b: la.lstsq(a, b)[0], arr((5, 3), "float32"), arr((5,), "float32"))
case("inv batched", la.inv, arr((2, 3, 3), "float32") + 3 * np.eye(3, dtype=np.float32))
case("inv singular", la.inv, np.zeros((3, 3), np.float32))
case("cholesky not PD", la.cholesky, -np.eye(3, dtype=np.float32))
case("inv 0x0", la.inv, np.zeros((0, 0), np.float32))
case("det 0x0", la.det, np.zeros((0, 0), np.float32))
case("inv complex64", la.inv, arr((3, 3), "complex64") + 3 * np.eye(3, dtype=np.complex64))

# --- x64 off: 64-bit inputs canonicalize to 32 bits -----------------------------------

for dt in ("float64", "int64", "uint64", "complex128"):
  case(f"x64 off add[{dt}]", lambda a: a + a, arr((4,), dt), x64=False)
  case(f"x64 off sum[{dt}]", jnp.sum, arr((4,), dt), x64=False)
case("x64 off arange/astype", lambda a: (jnp.arange(4) * a, a.astype(jnp.float64)),
     arr((4,), "float32"), x64=False)
case("x64 off random.randint", lambda k: random.randint(k, (4,), 0, 9), K, x64=False)

# --- errors (both sides must raise the same kind) ------------------------------------

case("error: matmul shape", jnp.matmul, arr((2, 3), "float32"), arr((4, 2), "float32"))
case("error: reshape size", lambda a: a.reshape(7), m)
case("error: bad axis", lambda a: jnp.sum(a, axis=3), m)
case("error: add shapes", jnp.add, arr((2, 3), "float32"), arr((4,), "float32"))
case("error: pad dtype", lambda a: lax.pad(a, 0.0, [(1, 1, 0)] * 2), m)
case("error: dynamic_slice index dtypes", lambda a, i: lax.dynamic_slice(a, (i, 0), (2, 2)), m,
     np.int32(1))
case("error: concatenate ranks", lambda a, b: jnp.concatenate([a, b]), m, arr((5,), "float32"))


# ------------------------------------------------------------------------------------
# Running and comparing
# ------------------------------------------------------------------------------------

def tolerance(dtype: np.dtype) -> tuple[float, float]:
  """(rtol, atol) between the NumPy implementation and compiled code."""
  name = np.dtype(dtype).name
  return {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-5, 1e-6),
          "complex64": (2e-5, 1e-6)}.get(name, (1e-12, 1e-14))


def _values_equal(e: np.ndarray, j: np.ndarray, tol=None) -> str | None:
  if e.dtype != j.dtype:
    return f"dtype {e.dtype} (eager) vs {j.dtype} (jit)"
  if e.shape != j.shape:
    return f"shape {e.shape} (eager) vs {j.shape} (jit)"
  if e.dtype.kind in "biu" or e.dtype == np.bool_:
    if not np.array_equal(e, j):
      return f"values differ: eager {e.ravel()[:8]} jit {j.ravel()[:8]}"
    return None
  rtol, atol = tol or tolerance(e.dtype)
  wide = np.complex128 if e.dtype.kind == "c" else np.float64
  e64, j64 = e.astype(wide), j.astype(wide)
  if not np.allclose(e64, j64, rtol=rtol, atol=atol, equal_nan=True):
    bad = ~np.isclose(e64, j64, rtol=rtol, atol=atol, equal_nan=True)
    return (f"values differ at {np.argwhere(bad)[:3].tolist()}: eager {e64[bad][:4]} "
            f"jit {j64[bad][:4]}")
  return None


def compare(eager, jitted, tol=None) -> str | None:
  """None when the two results agree, else what differs."""
  e_leaves, e_tree = ember.tree_util.tree_flatten(eager)
  j_leaves, j_tree = ember.tree_util.tree_flatten(jitted)
  if e_tree != j_tree:
    return f"structure {e_tree} (eager) vs {j_tree} (jit)"
  for k, (e, j) in enumerate(zip(e_leaves, j_leaves)):
    if isinstance(e, ember.Array) and jnp.issubdtype(e.dtype, ember.dtypes.prng_key):
      e, j = random.key_data(e), random.key_data(j)
    why = _values_equal(np.asarray(e), np.asarray(j), tol)
    if why:
      return f"output {k}: {why}"
  return None


def _outcome(fn: Callable, args: tuple) -> tuple[Any, BaseException | None]:
  try:
    out = fn(*args)
    ember.block_until_ready(out)
    return ember.tree_util.tree_map(np.asarray, out, is_leaf=_is_key), None
  except Exception as e:  # noqa: BLE001 - an error is an outcome to compare
    return None, e


def _is_key(x) -> bool:
  return isinstance(x, ember.Array) and jnp.issubdtype(x.dtype, ember.dtypes.prng_key)


def run_case(c: Case) -> str | None:
  with enable_x64(c.x64), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    # eager on ember Arrays (NumPy inputs would run NumPy's own methods and indexing)
    eager_args = [jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a
                  for a in c.args]
    eager, e_err = _outcome(c.fn, eager_args)
    jitted, j_err = _outcome(ember.jit(c.fn), c.args)
  if e_err or j_err:
    if e_err and j_err and _kind(e_err) == _kind(j_err):
      print(f"RAISED {c.name}: {_describe(e_err)}", flush=True)
      return None
    return (f"eager {'raised ' + _describe(e_err) if e_err else 'returned'}, jit "
            f"{'raised ' + _describe(j_err) if j_err else 'returned'}")
  return compare(eager, jitted, c.tol)


def _kind(e: BaseException) -> type:
  """Errors agree when of the same class (TypeError vs ValueError do not)."""
  return type(e)


def _describe(e: BaseException) -> str:
  return f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"


CASE_DEADLINE_S = 60.0   # one case running longer is a hang (each takes well under 1 s)


def main(argv: list[str]) -> int:
  faulthandler.enable(all_threads=True)
  ember.config.update("jax_enable_x64", True)
  only = argv[0] if argv else ""
  shard, shards = 0, 1   # `--shard=i/n`: every n-th case from the i-th (tests run n at once)
  if only.startswith("--shard="):
    shard, shards = map(int, only[len("--shard="):].split("/"))
    only = ""
  names = [c.name for c in CASES]
  dup = {n for n in names if names.count(n) > 1}
  assert not dup, f"duplicate case names: {sorted(dup)}"
  ran = 0
  for i, c in enumerate(CASES):
    if only not in c.name or i % shards != shard:
      continue
    print(f"START {c.name}", flush=True)
    faulthandler.dump_traceback_later(CASE_DEADLINE_S, exit=True)   # a hang: stacks, exit
    why = run_case(c)
    ran += 1
    if c.known:   # still expected to disagree; one that agrees now must lose its marker
      print(f"KNOWN {c.name}: {c.known}" if why else f"FIXED {c.name}", flush=True)
    elif why:
      print(f"MISMATCH {c.name}: {why}", flush=True)
  faulthandler.cancel_dump_traceback_later()
  print(f"DONE {ran}", flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))

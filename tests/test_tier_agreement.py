"""Tiers never change results (issue 15): every program of a broad table gives the same bits
from its quick-tier code (the first calls of a tiered module), its optimized code (after the
background tier-up), and a compile at `--opt_level=0` (`jax_disable_most_optimizations`:
fewer HLO passes, no constant folding); and, where the value is defined exactly (IEEE
arithmetic, conversions, integer ops), the same bits as eager ember. NaNs compare as "both
NaN" (payloads are not specified). Float sums that LLVM reassociates never start at the
quick tier (tiering.qualifies); against opt_level=0 they agree within rounding only."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags

bf16 = np.dtype(ml_dtypes.bfloat16)
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 1e-30, 1e-310, 3e38, -3e38, 1e300, np.inf, -np.inf,
           np.nan, 2.0**31, -2.0**31, 2.0**32, 2.0**63, -2.0**63, 2.0**64, 127.5, -128.5, 255.5,
           65504.0, 65520.0, 7e4, 88.7, -104.0, 709.7, 710.5, 1e-8, 3.141592653589793]


def _floats(dt):
  with np.errstate(all="ignore"):
    return np.array(SPECIAL, np.float64).astype(dt)


def _ints(dt):
  i = np.iinfo(dt)
  v = [0, 1, 2, 3, 7, i.max] + ([-1, -2, -7, i.min] if i.min < 0 else [])
  return np.array(v, dt)


def _pairs(x):
  return np.repeat(x, len(x)), np.tile(x, len(x))


INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64]
FLOAT_DTYPES = [np.float64, np.float32, np.float16, bf16]
UNARY = [jnp.exp, jnp.exp2, jnp.expm1, jnp.log, jnp.log2, jnp.log10, jnp.log1p, jnp.sin,
         jnp.cos, jnp.tan, jnp.arcsin, jnp.arccos, jnp.arctan, jnp.sinh, jnp.cosh, jnp.tanh,
         jnp.arcsinh, jnp.arccosh, jnp.arctanh, jnp.cbrt, jnp.sqrt, lax.rsqrt, lax.logistic,
         lax.erf, lax.erfc, lax.erf_inv, lax.lgamma, lax.digamma]


def _int_programs():
  for dt in INT_DTYPES:
    n = np.dtype(dt).name
    a, b = _pairs(_ints(dt))
    yield f"{n} div/rem", lambda x, y: (x // y, x % y, lax.div(x, y), lax.rem(x, y)), (a, b)
    yield f"{n} x // x", lambda x: (x // x, x % x, x // 0, x % 0), (_ints(dt),)
    shifts = np.array([0, 1, 7, 8, 15, 16, 31, 32, 63, 64, 100, 127], np.int64)
    s = np.tile(shifts, len(_ints(dt))).astype(dt, copy=False) if dt != np.uint8 else \
        np.tile(shifts, len(_ints(dt))).astype(np.uint8)
    x = np.repeat(_ints(dt), len(shifts))
    yield f"{n} shifts", lambda x, s: (lax.shift_left(x, s), lax.shift_right_logical(x, s),
                                        lax.shift_right_arithmetic(x, s)), (x, s)
    yield f"{n} arithmetic", lambda x, y: (x + y, x - y, x * y, -x, abs(x), jnp.sign(x),
                                           jnp.maximum(x, y), x & y, x ^ y, ~x,
                                           lax.integer_pow(x, 3)), (a, b)
    yield f"{n} reductions", lambda x: (x.sum(), x.prod(), x.max(), x.min(), jnp.cumsum(x)), (a,)
    yield f"{n} to floats", lambda x: tuple(x.astype(d) for d in FLOAT_DTYPES), (_ints(dt),)


def _float_programs():
  for dt in FLOAT_DTYPES:
    n = np.dtype(dt).name
    x = _floats(dt)
    a, b = _pairs(x)
    yield f"{n} to ints", lambda v: tuple(v.astype(d) for d in INT_DTYPES + [np.bool_]), (x,)
    yield f"{n} to floats", lambda v: tuple(v.astype(d) for d in FLOAT_DTYPES), (x,)
    yield f"{n} rounding", lambda v: (jnp.round(v), jnp.floor(v), jnp.ceil(v), jnp.trunc(v),
                                      lax.round(v), jnp.sign(v), jnp.isnan(v)), (x,)
    yield f"{n} arithmetic", lambda x, y: (x + y, x - y, x * y, x / y, jnp.maximum(x, y),
                                           jnp.minimum(x, y), lax.rem(x, y), x < y, x == y,
                                           jnp.nextafter(x, y), jnp.sqrt(x), -x, abs(x),
                                           x * y + x), (a, b)
    yield f"{n} floor_divide/mod/pow/atan2", lambda x, y: (
        x // y, x % y, jnp.power(x, y), jnp.arctan2(x, y)), (a, b)


def _other_programs():
  rng = np.random.default_rng(0)
  for dt in FLOAT_DTYPES:
    n = np.dtype(dt).name
    x = _floats(dt)
    for i in range(0, len(UNARY), 7):
      fns = UNARY[i:i + 7]
      yield f"{n} {'/'.join(f.__name__ for f in fns)}", \
          lambda v, fns=fns: tuple(f(v) for f in fns), (x,)
    m = (rng.standard_normal((16, 24)) * 3).astype(dt)
    w = rng.standard_normal((24, 8)).astype(dt)
    yield f"{n} reductions", lambda v: (v.sum(0), v.sum(1), v.max(0), v.min(1), v.prod(1),
                                        jnp.argmax(v, 1), jnp.cumsum(v, 0)), (m,)
    yield f"{n} dots", lambda v, u: (v @ u, jnp.tanh(v @ u), v[0] @ u, v @ u[:, 0]), (m, w)
    if dt in (np.float32, np.float64):   # rows long enough for the fixed-order vector lanes
      rows = np.resize(x, (7, 131))
      yield f"{n} vector lanes", lambda v: (
          v.max(1), v.min(1), v.max(), jnp.exp(v - 1.0).sum(1),
          jnp.exp(v - jnp.max(v, 1, keepdims=True)).sum(1),
          ember.nn.softmax(v, axis=1)), (rows,)
  for dt in (np.complex64, np.complex128):
    g = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 0.5])
    z = np.empty(g.size ** 2, dt)
    z.real, z.imag = _pairs(g)
    yield f"{np.dtype(dt).name} unary", lambda v: (
        jnp.exp(v), jnp.log(v), jnp.sqrt(v), jnp.sin(v), jnp.tanh(v), jnp.arccos(v),
        jnp.arctanh(v), jnp.expm1(v), jnp.log1p(v), abs(v), jnp.sign(v), 1 / v, v * v), (z,)


PROGRAMS = {name: (f, args) for gen in (_int_programs, _float_programs, _other_programs)
            for name, f, args in gen()}
# programs whose eager value is the same IEEE/integer operation, bit for bit
EAGER_EXACT = ("div/rem", "x // x", "shifts", "arithmetic", "to ints", "to floats",
               "rounding", "reductions")


def _bits(a):
  """(comparable integer view, NaN mask): NaNs count as equal whatever their payloads."""
  a = np.asarray(a)
  if a.dtype.kind == "c":
    a = a.view(np.float32 if a.dtype == np.complex64 else np.float64)
  if a.dtype.kind == "f" or a.dtype == bf16:
    nan = np.isnan(a.astype(np.float64))
    return np.where(nan, 0, a.view(f"u{a.dtype.itemsize}")), nan
  return a, np.zeros(a.shape, bool)


def _assert_same_bits(got, want, what):
  for k, (g, w) in enumerate(zip(got, want)):
    assert np.asarray(g).dtype == np.asarray(w).dtype, (what, k)
    (gb, gn), (wb, wn) = _bits(g), _bits(w)
    bad = np.flatnonzero((gb != wb).ravel() | (gn != wn).ravel())
    assert bad.size == 0, f"{what} output {k}: at {bad[:5]}: {np.ravel(g)[bad[:5]]} != " \
                          f"{np.ravel(w)[bad[:5]]}"


def _executable(f, args):
  return ember.jit(f).lower(*args).compile()._computation.executable


def _reassociated(name):
  return ("reductions" in name or "dots" in name) and "int" not in name


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_quick_and_optimized_tiers_agree(name):
  f, args = PROGRAMS[name]
  with ember.enable_x64(True), warnings.catch_warnings(), np.errstate(all="ignore"):
    warnings.simplefilter("ignore")
    exe = _executable(f, args)
    quick = [o.copy() for o in exe.execute(list(args))]
    if exe.tier_up_pending is not None:
      exe.tier_up_pending.wait()
    optimized = exe.execute(list(args))
    _assert_same_bits(quick, optimized, "quick-tier code vs its tier-up")
    if not _reassociated(name):
      assert exe.tier_up_pending is not None, "expected this module to start at the quick tier"
      with flags.override(opt_level=0):
        _assert_same_bits(_executable(f, args).execute(list(args)), optimized,
                          "opt_level=0 vs default")
    if any(k in name for k in EAGER_EXACT) and not _reassociated(name):
      eager = ember.tree_util.tree_leaves(f(*[jnp.asarray(a) for a in args]))
      _assert_same_bits([np.asarray(e) for e in eager], optimized, "eager vs compiled")

"""ember.numpy reductions vs NumPy (float64 references), eager and under ember.jit.

Result dtypes, weak types, printed jaxprs and error messages were checked against JAX 0.12
and are hard-coded below.
"""
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors

RNG = np.random.RandomState(0)
F32 = RNG.randn(2, 3, 4).astype(np.float32)
I32 = RNG.randint(-2, 3, size=(2, 3, 4)).astype(np.int32)  # |prod| <= 2**24 fits int32
BOOL = RNG.rand(2, 3, 4) > 0.5
F16 = F32.astype(np.float16)
BF16 = F32.astype(ml_dtypes.bfloat16)
INPUTS = {"float32": F32, "int32": I32, "bool": BOOL, "float16": F16, "bfloat16": BF16}
# float32 accumulates in float32 (rtol ~1e-6 per op, a little more over 24 terms);
# float16/bfloat16 results are rounded to their 11/8-bit mantissas.
RTOL = {"float32": 2e-5, "int32": 0, "bool": 0, "float16": 2e-3, "bfloat16": 1.6e-2}
# tolerance by result dtype (integer inputs of mean/var are computed in float32)
AXES = [None, 0, -1, (0, 2), (2, 0, 1)]


def both(f, *args):
  """f's result eagerly and under ember.jit."""
  return [f(*args), ember.jit(f)(*args)]


def np_quiet(fn, *args, **kwargs):
  """A NumPy reference, without its all-NaN / zero-dof RuntimeWarnings."""
  with warnings.catch_warnings(), np.errstate(all="ignore"):
    warnings.simplefilter("ignore", RuntimeWarning)
    return fn(*args, **kwargs)


def check(out, expected, dtype, rtol=2e-5, atol=None):
  out_np = np.asarray(out)
  assert out.dtype == np.dtype(dtype), (out.dtype, dtype)
  assert out_np.shape == np.shape(expected), (out_np.shape, np.shape(expected))
  if atol is None:
    atol = rtol
  np.testing.assert_allclose(out_np.astype(np.float64), np.asarray(expected, np.float64),
                             rtol=rtol, atol=atol, equal_nan=True)


# --- result dtypes (JAX 0.12, 32-bit mode) ------------------------------------------------

DT = ["bool", "int8", "uint8", "int16", "int32", "uint32", "float16", "bfloat16", "float32"]
_SUMLIKE = "int32 int32 uint32 int32 int32 uint32 float16 bfloat16 float32"
_SAME = "bool int8 uint8 int16 int32 uint32 float16 bfloat16 float32"
_FLOAT = "float32 float32 float32 float32 float32 float32 float16 bfloat16 float32"
_INT = " ".join(["int32"] * 9)
_CUM = "int32 int8 uint8 int16 int32 uint32 float16 bfloat16 float32"
OUT_DTYPES = {
    "sum": _SUMLIKE, "prod": _SUMLIKE, "nansum": _SUMLIKE, "nanprod": _SUMLIKE,
    "max": _SAME, "min": _SAME, "nanmax": _SAME, "nanmin": _SAME,
    "mean": _FLOAT, "var": _FLOAT, "std": _FLOAT, "median": _FLOAT, "average": _FLOAT,
    "nanmean": _FLOAT, "nanvar": _FLOAT, "nanstd": _FLOAT, "nanmedian": _FLOAT,
    "quantile": _FLOAT, "percentile": _FLOAT,
    "argmax": _INT, "argmin": _INT, "nanargmax": _INT, "count_nonzero": _INT,
    "any": " ".join(["bool"] * 9), "all": " ".join(["bool"] * 9),
    "cumsum": _CUM, "cumprod": _CUM, "nancumsum": _CUM, "cumulative_prod": _CUM,
    "cumulative_sum": _SUMLIKE,
    "ptp": "ERR int8 uint8 int16 int32 uint32 float16 bfloat16 float32",
}
_FN = {"quantile": lambda x: jnp.quantile(x, 0.5), "percentile": lambda x: jnp.percentile(x, 50),
       "cumulative_sum": lambda x: jnp.cumulative_sum(x, axis=0),
       "cumulative_prod": lambda x: jnp.cumulative_prod(x, axis=0)}


@pytest.mark.parametrize("name", sorted(OUT_DTYPES))
def test_result_dtypes_match_jax(name):
  fn = _FN.get(name) or getattr(jnp, name)
  for dt, expected in zip(DT, OUT_DTYPES[name].split()):
    x = jnp.ones((2, 3), dt)
    if expected == "ERR":  # ptp of bool subtracts bools
      with pytest.raises(TypeError, match="sub does not accept dtype bool"):
        fn(x)
      continue
    out = fn(x)
    assert out.dtype == np.dtype(expected), (name, dt, out.dtype)
    assert not out.weak_type


WEAK_F = ember.lax.broadcast(2.0, (2, 3))
WEAK_I = ember.lax.broadcast(2, (2, 3))


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "mean", "var", "std", "argmax",
                                  "cumsum", "cumprod", "any", "ptp", "median", "nansum",
                                  "nanmax", "nanmean", "nanvar", "average", "count_nonzero"])
def test_weak_inputs_give_strong_results(name):
  # JAX 0.12: every reduction casts its operand to the computation dtype, dropping the weak
  # type (float stays float32, int stays int32 unless the op makes it float).
  fn = getattr(jnp, name)
  assert WEAK_F.weak_type and WEAK_I.weak_type
  for w in (WEAK_F, WEAK_I):
    for out in both(fn, w):
      assert not out.weak_type, name


def test_x64_dtypes():
  with ember.enable_x64():
    i32 = jnp.ones((2, 3), jnp.int32)
    assert jnp.sum(i32).dtype == np.int64
    assert jnp.sum(jnp.ones(3, jnp.uint32)).dtype == np.uint64
    assert jnp.mean(i32).dtype == np.float32  # JAX maps int32 -> float32 even with x64
    assert jnp.mean(jnp.ones(3, jnp.int64)).dtype == np.float64
    assert jnp.argmax(i32).dtype == np.int64
    assert jnp.cumsum(jnp.ones(3, bool)).dtype == np.int64
    assert jnp.count_nonzero(i32).dtype == np.int64
    check(jnp.sum(np.arange(10.0)), 45.0, np.float64, rtol=0)


# --- values vs NumPy ------------------------------------------------------------------------

def _np_ptp(x, axis=None, keepdims=False):
  return np.max(x, axis, keepdims=keepdims) - np.min(x, axis, keepdims=keepdims)


# name, ember fn, numpy fn, dtypes, result dtype per input dtype
VALUE_OPS = [
    ("sum", jnp.sum, np.sum, ["float32", "int32", "bool", "float16", "bfloat16"],
     {"bool": "int32"}),
    ("prod", jnp.prod, np.prod, ["float32", "int32", "bool"], {"bool": "int32"}),
    ("max", jnp.max, np.max, ["float32", "int32", "bool", "bfloat16"], {}),
    ("min", jnp.min, np.min, ["float32", "int32", "bool", "float16"], {}),
    ("amax", jnp.amax, np.max, ["float32"], {}),
    ("amin", jnp.amin, np.min, ["int32"], {}),
    ("any", jnp.any, np.any, ["float32", "int32", "bool"], "bool"),
    ("all", jnp.all, np.all, ["float32", "int32", "bool"], "bool"),
    ("mean", jnp.mean, np.mean, ["float32", "int32", "bool", "float16"],
     {"int32": "float32", "bool": "float32"}),
    ("var", jnp.var, np.var, ["float32", "int32", "float16"], {"int32": "float32"}),
    ("std", jnp.std, np.std, ["float32", "int32"], {"int32": "float32"}),
    ("ptp", jnp.ptp, _np_ptp, ["float32", "int32"], {}),
    ("count_nonzero", jnp.count_nonzero,
     lambda x, axis=None, keepdims=False: np.sum(x != 0, axis=axis, keepdims=keepdims),
     ["float32", "int32", "bool"], "int32"),
]


def _cases():
  for name, fn, np_fn, dts, out_dt in VALUE_OPS:
    for dt in dts:
      for axis in AXES:
        yield pytest.param(fn, np_fn, dt, out_dt, axis, id=f"{name}-{dt}-{axis}")


@pytest.mark.parametrize("fn,np_fn,dt,out_dt,axis", list(_cases()))
def test_reduction_values(fn, np_fn, dt, out_dt, axis):
  x = INPUTS[dt]
  dtype = out_dt if isinstance(out_dt, str) else out_dt.get(dt, dt)
  for keepdims in (False, True):
    expected = np_fn(x.astype(np.float64), axis=axis, keepdims=keepdims)
    rtol = RTOL.get(dtype, 0)
    for out in both(lambda x: fn(x, axis=axis, keepdims=keepdims), x):
      check(out, expected, dtype, rtol=rtol, atol=rtol * 4)


@pytest.mark.parametrize("name,np_fn", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("dt", ["float32", "int32", "bool", "float16"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_arg_reductions(name, np_fn, dt, axis):
  x = INPUTS[dt]
  for keepdims in (False, True):
    expected = np_fn(x, axis=axis, keepdims=keepdims)  # first occurrence on ties
    for out in both(lambda x: getattr(jnp, name)(x, axis=axis, keepdims=keepdims), x):
      check(out, expected, "int32", rtol=0)


def test_scalars_and_python_inputs():
  check(jnp.sum(3.0), 3.0, "float32")
  assert not jnp.sum(3.0).weak_type  # JAX: a reduction strips the weak type
  check(jnp.max(np.float32(2.5)), 2.5, "float32")
  check(jnp.argmax(7), 0, "int32")
  check(jnp.mean(np.arange(5)), 2.0, "float32")
  check(jnp.prod(np.array([1.5, 2.0, 4.0], np.float32)), 12.0, "float32")


def test_where_and_initial():
  x, mask = F32, F32 > 0
  x64 = x.astype(np.float64)
  for axis in (None, 1, (0, 2)):
    cases = [
        (lambda x, m: jnp.sum(x, axis, where=m), np.sum(x64, axis, where=mask)),
        (lambda x, m: jnp.sum(x, axis, where=m, initial=1.5),
         np.sum(x64, axis, where=mask, initial=1.5)),
        (lambda x, m: jnp.prod(x, axis, where=m), np.prod(x64, axis, where=mask)),
        (lambda x, m: jnp.max(x, axis, where=m, initial=-5.0),
         np.max(x64, axis, where=mask, initial=-5.0)),
        (lambda x, m: jnp.min(x, axis, where=m, initial=5.0),
         np.min(x64, axis, where=mask, initial=5.0)),
        (lambda x, m: jnp.max(x, axis, initial=0.5), np.max(x64, axis, initial=0.5)),
        (lambda x, m: jnp.mean(x, axis, where=m), np.mean(x64, axis, where=mask)),
        (lambda x, m: jnp.var(x, axis, where=m), np.var(x64, axis, where=mask)),
        (lambda x, m: jnp.std(x, axis, where=m, ddof=1),
         np_quiet(np.std, x64, axis, where=mask, ddof=1)),
        (lambda x, m: jnp.any(x > 1, axis, where=m), np.any(x64 > 1, axis, where=mask)),
        (lambda x, m: jnp.all(x > 0, axis, where=m), np.all(x64 > 0, axis, where=mask)),
    ]
    for fn, expected in cases:
      for out in both(fn, x, mask):
        check(out, expected, np.result_type(expected) == np.bool_ and "bool" or "float32")
  # integer max with a where mask: the masked-out identity saturates to iinfo.min
  for out in both(lambda x: jnp.max(x, 1, where=x > 0, initial=-100), I32):
    check(out, np.max(I32, 1, where=I32 > 0, initial=-100), "int32", rtol=0)
  # a where mask broadcasts against the operand
  for out in both(lambda x: jnp.sum(x, 0, where=np.array([True, False, True, True])), F32):
    check(out, np.sum(x64 * np.array([1, 0, 1, 1]), 0), "float32")


def test_dtype_argument_and_promote_integers():
  check(jnp.sum(I32, dtype=jnp.float32), np.sum(I32), "float32")
  check(jnp.sum(F32, dtype=jnp.int16), np.sum(F32.astype(np.int16)), "int16", rtol=0)
  check(jnp.sum(np.array([1, 0, 2]), dtype=bool), True, "bool")
  check(jnp.prod(np.array([True, False]), dtype=bool), False, "bool")
  i8 = np.array([100, 100], np.int8)
  check(jnp.sum(i8), 200, "int32")                               # promoted to int32
  check(jnp.sum(i8, promote_integers=False), -56, "int8", rtol=0)  # wraps in int8
  check(jnp.mean(F32, dtype=jnp.float16), np.mean(F32), "float16", rtol=2e-3)
  check(jnp.var(I32, dtype=jnp.float32), np.var(I32), "float32")


def test_var_std_ddof_correction_and_complex():
  x64 = F32.astype(np.float64)
  for out in both(lambda x: jnp.var(x, axis=1, ddof=2), F32):
    check(out, np.var(x64, axis=1, ddof=2), "float32")
  for out in both(lambda x: jnp.std(x, axis=(0, 2), correction=1.5, keepdims=True), F32):
    check(out, np.std(x64, axis=(0, 2), ddof=1.5, keepdims=True), "float32")
  # more degrees of freedom removed than elements: NaN, not inf
  check(jnp.var(F32, axis=0, ddof=2), np.full((3, 4), np.nan), "float32")
  c = F32 * (1 + 2j)
  check(jnp.var(c, axis=1), np.var(c.astype(np.complex128), axis=1), "float32")
  check(jnp.std(c), np.std(c.astype(np.complex128)), "float32")
  s = jnp.sum(c, axis=0)
  assert s.dtype == np.complex64
  np.testing.assert_allclose(np.asarray(s), np.sum(c.astype(np.complex128), 0), rtol=1e-5)
  mean = jnp.mean(F32, axis=1, keepdims=True)
  check(jnp.var(F32, axis=1, mean=mean), np.var(x64, axis=1), "float32")


def test_average():
  x, w = F32, np.abs(F32) + 0.1
  x64, w64 = x.astype(np.float64), w.astype(np.float64)
  for axis in (None, 1, (2, 0)):
    for out in both(lambda x, w: jnp.average(x, axis, weights=w), x, w):
      check(out, np.average(x64, axis, weights=w64), "float32")
  w1 = w[0, :, 0]  # 1-D weights along axis 1
  avg, wsum = jnp.average(x, axis=1, weights=w1, returned=True)
  e_avg, e_wsum = np.average(x64, axis=1, weights=w1.astype(np.float64), returned=True)
  check(avg, e_avg, "float32")
  check(wsum, e_wsum, "float32")
  avg, wsum = jnp.average(I32, returned=True)
  check(avg, np.average(I32), "float32")
  check(wsum, I32.size, "float32")
  with pytest.raises(ValueError, match="Axis must be specified"):
    jnp.average(x, weights=w1)
  with pytest.raises(ValueError, match="Shape of weights must be consistent"):
    jnp.average(x, axis=0, weights=w1)


# --- empty reductions and errors ------------------------------------------------------------

def test_empty_reductions():
  e = np.ones((0, 3), np.float32)
  for out in both(jnp.sum, e):
    check(out, 0.0, "float32")
  for out in both(jnp.prod, e):
    check(out, 1.0, "float32")
  check(jnp.sum(e, axis=0), np.zeros(3), "float32")
  check(jnp.max(e, axis=1), np.zeros(0), "float32")       # nothing reduced is empty
  check(jnp.max(e, initial=-2.0), -2.0, "float32")
  check(jnp.max(np.ones(0, np.int8), initial=3), 3, "int8")
  check(jnp.any(e), False, "bool")
  check(jnp.all(e), True, "bool")
  check(jnp.mean(e), np.nan, "float32")
  check(jnp.var(e, axis=0), np.full(3, np.nan), "float32")
  check(jnp.argmax(e, axis=1), np.zeros(0), "int32")
  check(jnp.cumsum(e), np.zeros(0), "float32")
  for name in ("max", "min", "amax", "amin"):
    with pytest.raises(ValueError, match=f"zero-size array to reduction operation "
                                         f"{name.lstrip('a')} which has no identity"):
      getattr(jnp, name)(e)
    with pytest.raises(ValueError, match="zero-size array"):
      ember.jit(lambda e: getattr(jnp, name)(e, axis=0))(e)
  for name in ("argmax", "argmin"):
    with pytest.raises(ValueError, match=f"attempt to get {name} of an empty sequence"):
      getattr(jnp, name)(e)
    with pytest.raises(ValueError, match=f"attempt to get {name} of an empty sequence"):
      getattr(jnp, name)(e, axis=0)
  with pytest.raises(ValueError, match="median reduction axis must be non-empty"):
    jnp.median(e)


def test_reduction_errors():
  x = jnp.ones((2, 3))
  with pytest.raises(ValueError, match="axis 5 is out of bounds for array of dimension 2"):
    jnp.sum(x, 5)
  with pytest.raises(ValueError, match="axis -3 is out of bounds for array of dimension 2"):
    jnp.mean(x, axis=(0, -3))
  with pytest.raises(ValueError, match=r"duplicate value in 'axis': \(0, -2\)"):
    jnp.max(x, (0, -2))
  with pytest.raises(ValueError, match="axis 2 is out of bounds"):
    jnp.argmax(x, 2)
  with pytest.raises(ValueError, match="axis 5 is out of bounds"):
    jnp.cumsum(x, 5)
  with pytest.raises(ValueError, match="where must be None or a boolean array"):
    jnp.sum(x, where=x)
  with pytest.raises(ValueError, match=r"initial value must be a scalar. Got array of shape "
                                       r"\(2, 3\)"):
    jnp.sum(x, initial=x)
  with pytest.raises(ValueError, match="max does not have an identity, so to use a where "
                                       "mask one has to specify 'initial'"):
    jnp.max(x, where=x > 0)
  with pytest.raises(ValueError, match="ddof and correction can't be provided"):
    jnp.var(x, ddof=1, correction=1)
  with pytest.raises(ValueError, match="dtype argument to jnp.std must be inexact"):
    jnp.std(x, dtype=jnp.int32)
  with pytest.raises(NotImplementedError, match="The 'out' argument to jnp.sum"):
    jnp.sum(x, out=x)
  with pytest.raises(TypeError, match="sum requires ndarray or scalar arguments"):
    jnp.sum([1, 2])
  with pytest.raises(errors.ConcretizationTypeError, match="axis argument of jnp.sum must "
                                                           "be known statically"):
    ember.jit(lambda x, a: jnp.sum(x, a))(x, 0)


# --- cumulative reductions ------------------------------------------------------------------

@pytest.mark.parametrize("name,np_fn", [("cumsum", np.cumsum), ("cumprod", np.cumprod),
                                        ("nancumsum", np.nancumsum),
                                        ("nancumprod", np.nancumprod)])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumulative(name, np_fn, axis):
  xf = F32 / 2
  xf = np.where(RNG.rand(*xf.shape) < 0.2, np.nan, xf).astype(np.float32) \
      if name.startswith("nan") else xf
  fn = getattr(jnp, name)
  for x, dt in ((xf, "float32"), (I32, "int32"), (BOOL, "int32")):
    expected = np_fn(x.astype(np.float64), axis=axis)
    for out in both(lambda x: fn(x, axis=axis), x):
      check(out, expected, dt, rtol=1e-5 if dt == "float32" else 0, atol=1e-5)


def test_cumulative_dtypes_and_array_api():
  check(jnp.cumsum(np.array([1, 0, 2]), dtype=bool), [True, True, True], "bool")
  check(jnp.cumsum(I32, axis=2, dtype=jnp.float32), np.cumsum(I32, axis=2), "float32")
  check(jnp.cumprod(np.array([True, False, True])), [1, 0, 0], "int32")
  i8 = np.array([100, 100, 100], np.int8)
  check(jnp.cumsum(i8), np.cumsum(i8).astype(np.int8), "int8", rtol=0)  # no promotion
  for out in both(lambda x: jnp.cumulative_sum(x, axis=1, include_initial=True), i8[None]):
    check(out, [[0, 100, 200, 300]], "int32", rtol=0)  # the array-API version promotes
  for out in both(lambda x: jnp.cumulative_prod(x, axis=0, include_initial=True), F32[0]):
    check(out, np.concatenate([np.ones((1, 4)), np.cumprod(F32[0], 0)]), "float32")
  check(jnp.cumulative_sum(np.arange(4.0)), [0, 1, 3, 6], "float32")
  with pytest.raises(ValueError, match="must be non-scalar to take a cumulative sum"):
    jnp.cumulative_sum(np.float32(1))
  with pytest.raises(ValueError, match="axis was not set to an explicit value"):
    jnp.cumulative_sum(F32)


# Shapes that reach every path of the CPU scan kernel (backends/cpu/codegen/scan.py): long
# rows (max/min and integer sums cut into 8 segments, the last one longer); rows in groups
# of 8 with a tail group (13 rows); contiguous lanes in chunks of 256 with a tail chunk
# (300, 260 lanes); both directions.
_SCAN_CASES = [((100_003,), 0), ((2, 5001), 1), ((13, 37), 1), ((5, 300), 0),
               ((3, 50, 260), 1), ((4, 9, 3), 2), ((2, 1), 1)]


@pytest.mark.parametrize("shape,axis", _SCAN_CASES)
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_scan_shapes(shape, axis, reverse):
  from ember import lax
  x = RNG.rand(*shape).astype(np.float32)   # positive: relative errors stay meaningful
  flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
  ref = lambda ufunc, v: flip(ufunc.accumulate(flip(v.astype(np.float64)), axis=axis))
  # float32 sums fold in float32: ~n * eps / 2 worst case, far less typically; over
  # 100,003 terms ~1e-3 worst case, a few 1e-5 in practice (rtol 1e-4)
  rtol = 1e-4 if max(shape) > 1000 else 2e-6
  for out in both(lambda v: lax.cumsum(v, axis, reverse=reverse), x):
    check(out, ref(np.add, x), "float32", rtol=rtol, atol=0)
  for out in both(lambda v: lax.cumprod(1 + v / 1e5, axis, reverse=reverse), x):
    check(out, ref(np.multiply, 1 + x.astype(np.float64) / 1e5), "float32", rtol=rtol, atol=0)
  for fn, ufunc in ((lax.cummax, np.maximum), (lax.cummin, np.minimum)):
    for out in both(lambda v: fn(v, axis, reverse=reverse), x):
      check(out, ref(ufunc, x), "float32", rtol=0)
  for out in both(lambda v: lax.cumlogsumexp(v, axis, reverse=reverse), x):
    check(out, ref(np.logaddexp, x), "float32", rtol=rtol, atol=0)
  xi = RNG.randint(-9, 10, size=shape).astype(np.int32)
  for out in both(lambda v: lax.cumsum(v, axis, reverse=reverse), xi):
    check(out, ref(np.add, xi), "int32", rtol=0)
  # the scan folds in NumPy's accumulate order: compiled sums equal eager ones exactly
  eager, jitted = both(lambda v: lax.cumsum(v, axis, reverse=reverse), x)
  np.testing.assert_array_equal(np.asarray(jitted), np.asarray(eager))


def test_cumulative_scan_edge_values():
  from ember import lax
  big = np.full(6, 2 ** 30, np.int32)       # int32 sums wrap around
  for out in both(jnp.cumsum, big):
    check(out, np.cumsum(big, dtype=np.int32), "int32", rtol=0)
  zeros = np.array([-0.0] * 20 + [0.0, -0.0], np.float32)
  for rev in (False, True):                 # JAX's scans start from +0.0: sums of -0.0 are +0.0
    for out in both(lambda v: lax.cumsum(v, 0, reverse=rev), zeros):
      assert not np.signbit(np.asarray(out)).any()
  x = np.array([1, 3, np.nan, 5, -np.inf, 7, 2], np.float32)   # NaN propagates from its place
  for fn, ufunc in ((lax.cummax, np.maximum), (lax.cummin, np.minimum)):
    for rev in (False, True):
      expect = np.flip(ufunc.accumulate(np.flip(x))) if rev else ufunc.accumulate(x)
      for out in both(lambda v: fn(v, 0, reverse=rev), x):
        np.testing.assert_array_equal(np.asarray(out), expect)
  zs = RNG.choice(np.array([-0.0, 0.0, -1.0, -2.0], np.float32), 9000)  # XLA: -0.0 < +0.0
  zs[:100] = -3
  for fn in (lax.cummax, lax.cummin):
    eager, jitted = both(lambda v: fn(v, 0), zs)
    np.testing.assert_array_equal(np.signbit(np.asarray(jitted)), np.signbit(np.asarray(eager)))
  for out in both(lambda v: jnp.cumsum(v, 0), np.stack([x, x])):
    check(out, np.cumsum(np.stack([x, x]).astype(np.float64), 0), "float32", rtol=2e-6)


# --- nan reductions ---------------------------------------------------------------------------

XN = F32.copy()
XN[0, 1, 2] = np.nan
XN[1, :, 3] = np.nan  # an all-NaN slice along axis 1


@pytest.mark.parametrize("name", ["nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar",
                                  "nanstd", "nanmedian"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2)])
def test_nan_reductions(name, axis):
  expected = np_quiet(getattr(np, name), XN.astype(np.float64), axis=axis)
  for out in both(lambda x: getattr(jnp, name)(x, axis=axis), XN):
    check(out, expected, "float32", rtol=3e-5, atol=3e-5)
  # integer inputs have no NaNs: the plain reduction
  check(getattr(jnp, name)(I32, axis=axis), getattr(np, name[3:] if name != "nanmedian"
                                                    else "median")(I32.astype(float), axis=axis),
        OUT_DTYPES[name].split()[4], rtol=1e-6, atol=1e-6)


def test_nan_arg_reductions():
  for name in ("nanargmax", "nanargmin"):
    for axis in (None, 2):
      expected = getattr(np, name)(XN, axis=axis)
      for out in both(lambda x: getattr(jnp, name)(x, axis=axis), XN):
        check(out, expected, "int32", rtol=0)
    # an all-NaN slice gives -1 (NumPy raises)
    out = getattr(jnp, name)(XN, axis=1)
    assert (np.asarray(out)[1, 3] == -1) and out.dtype == np.int32
  check(jnp.nanargmax(I32, axis=0), np.argmax(I32, axis=0), "int32", rtol=0)


# --- quantiles ----------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("axis", [None, 1, -1, (0, 2)])
def test_quantile(method, axis):
  # no q puts the index exactly halfway between two elements: there 'nearest' rounds down
  # in JAX and half-to-even in NumPy (see test_quantile_nearest_ties)
  q = np.array([0.0, 0.15, 0.55, 0.87, 1.0], np.float32)
  x64 = F32.astype(np.float64)
  for keepdims in (False, True):
    expected = np.quantile(x64, q.astype(np.float64), axis=axis, method=method,
                           keepdims=keepdims)
    for out in both(lambda x, q: jnp.quantile(x, q, axis=axis, method=method,
                                              keepdims=keepdims), F32, q):
      check(out, expected, "float32", rtol=1e-5, atol=1e-6)
  # scalar q, and percentile with q in [0, 100]
  check(jnp.quantile(F32, 0.3, axis=axis, method=method),
        np.quantile(x64, 0.3, axis=axis, method=method), "float32", rtol=1e-5, atol=1e-6)
  check(jnp.percentile(F32, 30.0, axis=axis, method=method),
        np.percentile(x64, 30.0, axis=axis, method=method), "float32", rtol=1e-5, atol=1e-6)


def test_quantile_nearest_ties():
  x = np.arange(4, dtype=np.float32)  # index (n - 1) * q = 1.5 and 0.5: JAX takes the lower
  check(jnp.quantile(x, 0.5, method="nearest"), 1.0, "float32")
  check(jnp.quantile(x, 1 / 6, method="nearest"), 0.0, "float32")
  check(jnp.quantile(x, 0.5, method="midpoint"), 1.5, "float32")


def test_median_and_nan_quantiles():
  for axis in (None, 0, 2, (1, 2)):
    for x, dt in ((F32, "float32"), (I32, "float32")):
      for out in both(lambda x: jnp.median(x, axis=axis), x):
        check(out, np.median(x.astype(np.float64), axis=axis), dt, rtol=1e-6)
  check(jnp.median(np.array([1., 4., 2., 3.], np.float32)), 2.5, "float32")
  check(jnp.median(XN, axis=2), np.median(XN.astype(np.float64), axis=2), "float32")  # NaN
  expected = np_quiet(np.nanquantile, XN.astype(np.float64), [0.2, 0.7], axis=1)
  for out in both(lambda x: jnp.nanquantile(x, np.array([0.2, 0.7], np.float32), axis=1), XN):
    check(out, expected, "float32", rtol=1e-5, atol=1e-6)
  check(jnp.nanpercentile(XN, 40, axis=(0, 2)),
        np.nanpercentile(XN.astype(np.float64), 40, axis=(0, 2)), "float32", rtol=1e-5)
  check(jnp.quantile(F16, 0.5), np.quantile(F16.astype(np.float64), 0.5), "float16",
        rtol=2e-3)
  with pytest.raises(ValueError, match="method can only be 'linear', 'lower', 'higher', "
                                       "'midpoint', 'nearest' or 'inverted_cdf'"):
    jnp.quantile(F32, 0.5, method="foo")
  with pytest.raises(ValueError, match="inverted_cdf"):
    jnp.quantile(F32, 0.5, method="inverted_cdf")
  with pytest.raises(ValueError, match=r"q must be have rank <= 1, got shape \(2, 2\)"):
    jnp.quantile(F32, np.full((2, 2), 0.5))
  with pytest.raises(ValueError, match="quantile does not support complex input"):
    jnp.quantile(F32 * 1j, 0.5)


# --- trace and diagonal (ember.numpy) --------------------------------------------------------------

@pytest.mark.parametrize("offset", [0, 1, -2, 5])
@pytest.mark.parametrize("axes", [(0, 1), (2, 0), (-1, 1)])
def test_trace_diagonal(offset, axes):
  x = RNG.randn(3, 4, 5).astype(np.float32)
  a1, a2 = axes
  for out in both(lambda x: jnp.diagonal(x, offset, a1, a2), x):
    check(out, np.diagonal(x, offset, a1, a2), "float32", rtol=0)
    assert not out.weak_type
  for out in both(lambda x: jnp.trace(x, offset, a1, a2), x):
    check(out, np.trace(x.astype(np.float64), offset, a1, a2), "float32", rtol=1e-5,
          atol=1e-5)
  check(jnp.trace(I32, offset, a1, a2), np.trace(I32, offset, a1, a2), "int32", rtol=0)
  check(jnp.trace(BOOL, offset, a1, a2, dtype=jnp.float32),
        np.trace(BOOL, offset, a1, a2, dtype=np.float64), "float32")


def test_trace_diagonal_misc():
  w = ember.lax.broadcast(2.0, (3, 3))
  assert jnp.diagonal(w).weak_type            # structural: keeps the weak type
  assert not jnp.trace(w).weak_type           # a reduction: strong
  check(jnp.trace(np.eye(3, dtype=np.int8)), 3, "int32")
  assert jnp.diagonal(np.ones((2, 3, 0))).shape == (0, 2)
  # a traced offset works for trace (it builds an iota mask)
  f = ember.jit(lambda x, k: jnp.trace(x, k))
  check(f(F32[0], 1), np.trace(F32[0].astype(np.float64), 1), "float32")
  with pytest.raises(ValueError, match="diagonal requires an array of at least two"):
    jnp.diagonal(np.ones(3))
  with pytest.raises(ValueError, match="axis1 and axis2 can not be same. axis1=0 and "
                                       "axis2=-2"):
    jnp.trace(np.ones((2, 2)), 0, 0, -2)


# --- staged primitives (printed jaxprs checked against JAX 0.12) ------------------------------

JAXPRS = {
    "sum0": (lambda x: jnp.sum(x, 0), """\
{ lambda ; a:f32[2,3]. let
    b:f32[3] = reduce_sum[axes=(0,) out_sharding=None] a
  in (b,) }"""),
    "max_keep": (lambda x: jnp.max(x, 1, keepdims=True), """\
{ lambda ; a:f32[2,3]. let
    b:f32[2] = reduce_max[axes=(1,) out_sharding=None] a
    c:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] b
  in (c,) }"""),
    "argmax": (lambda x: jnp.argmax(x, 0), """\
{ lambda ; a:f32[2,3]. let
    b:i32[3] = argmax[axes=(0,) index_dtype=int32] a
  in (b,) }"""),
    "argmax_flat": (jnp.argmax, """\
{ lambda ; a:f32[2,3]. let
    b:f32[6] = reshape[dimensions=None new_sizes=(6,) sharding=None] a
    c:i32[] = argmax[axes=(0,) index_dtype=int32] b
  in (c,) }"""),
    "mean_int": (lambda x: jnp.mean(x.astype(jnp.int32)), """\
{ lambda ; a:f32[2,3]. let
    b:i32[2,3] = convert_element_type[new_dtype=int32 weak_type=False] a
    c:f32[2,3] = convert_element_type[new_dtype=float32 weak_type=False] b
    d:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] c
    e:f32[] = div d 6.0:f32[]
  in (e,) }"""),
    "any": (jnp.any, """\
{ lambda ; a:f32[2,3]. let
    b:bool[2,3] = convert_element_type[new_dtype=bool weak_type=False] a
    c:bool[] = reduce_or[axes=(0, 1)] b
  in (c,) }"""),
    "prod_init": (lambda x: jnp.prod(x, initial=2.0), """\
{ lambda ; a:f32[2,3]. let
    b:f32[] = reduce_prod[axes=(0, 1)] a
    c:f32[] = mul 2.0:f32[] b
  in (c,) }"""),
    "cumsum": (lambda x: jnp.cumsum(x, 1), """\
{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = jit[
      name=cumsum
      jaxpr={ lambda ; a:f32[2,3]. let
          b:f32[2,3] = cumsum[axis=1 reverse=False] a
        in (b,) }
    ] a
  in (b,) }"""),
}


@pytest.mark.parametrize("name", sorted(JAXPRS))
def test_staged_jaxpr_matches_jax(name):
  fn, expected = JAXPRS[name]
  assert str(ember.make_jaxpr(fn)(np.ones((2, 3), np.float32))) == expected


def test_var_and_count_nonzero_are_named_jits():
  x = np.ones((2, 3), np.float32)
  top = lambda f: [(e.primitive.name, e.params.get("name"))
                   for e in ember.make_jaxpr(f)(x).eqns]
  assert top(jnp.var) == [("jit", "_var")]
  assert top(jnp.std) == [("jit", "_std")]
  assert top(jnp.count_nonzero) == [("jit", "count_nonzero")]
  assert top(jnp.nanmax) == [("jit", "nanmax")]
  assert top(jnp.median) == [("jit", "median")]
  assert top(lambda x: jnp.cumulative_sum(x, axis=1)) == [("jit", "_cumsum_with_promotion")]

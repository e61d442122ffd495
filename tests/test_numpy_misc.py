"""ember.numpy's differences, signal helpers, statistics, set operations, polynomials, bit
packing and index tricks (ember/_src/library/numpy/{differences,signal,statistics,set_ops,
polynomial,bit_packing,index_tricks}.py, sort_complex in sorting.py) vs NumPy in float64, eager
and under ember.jit (array arguments traced). Result dtypes, weak types, error classes and
the values where JAX differs from NumPy were checked against JAX 0.12."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import errors, lax
from numpy2 import np2

RNG = np.random.RandomState(7)
F7 = RNG.randn(7).astype(np.float32)
F3 = RNG.randn(3).astype(np.float32)
M34 = RNG.randn(3, 4).astype(np.float32)
M345 = RNG.randn(3, 4, 5).astype(np.float32)
I6 = RNG.randint(-5, 5, 6).astype(np.int32)
I4 = RNG.randint(-5, 5, 4).astype(np.int32)
B6 = np.array([True, False, False, True, True, False])
C4 = (RNG.randn(4) + 1j * RNG.randn(4)).astype(np.complex64)
C6 = (RNG.randn(6) + 1j * RNG.randn(6)).astype(np.complex64)
U8 = RNG.randint(0, 256, (3, 5)).astype(np.uint8)
F16 = RNG.randn(5).astype(np.float16)
XP = np.sort(RNG.rand(6) * 10).astype(np.float32)
FP = RNG.randn(6).astype(np.float32)
XQ = np.linspace(-2, 12, 11).astype(np.float32)
S1 = np.array([1, 2, 2, 3, 5, 8, 8], np.int32)
S2 = np.array([2, 3, 3, 4, 8, 9], np.int32)

TOL = {np.dtype(np.float16): 2e-3, np.dtype(np.float32): 2e-6, np.dtype(np.complex64): 2e-6,
       np.dtype(np.float64): 1e-12, np.dtype(np.complex128): 1e-12}


def both(f, *args, **kwargs):
  """f(...) eagerly and under ember.jit (the array arguments become tracers)."""
  return [f(*args, **kwargs), ember.jit(f)(*args, **kwargs)]


def weak(n=4):
  return lax.broadcast(2.0, (n,))  # a weakly typed f32 array


def check(out, expected, dtype, weak_type=False, rtol=None):
  assert out.dtype == np.dtype(dtype), (out.dtype, dtype)
  assert out.weak_type == weak_type, out.weak_type
  expected = np.asarray(expected)
  assert out.shape == expected.shape, (out.shape, expected.shape)
  rtol = TOL.get(np.dtype(dtype), 0) if rtol is None else rtol
  np.testing.assert_allclose(np.asarray(out).astype(expected.dtype) if expected.dtype != bool
                             else np.asarray(out), expected, rtol=rtol, atol=rtol,
                             equal_nan=True)


def f64(x):
  return np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)


# --- diff, ediff1d ----------------------------------------------------------------------

@pytest.mark.parametrize("x,kw", [
    (F7, {}), (M345, dict(n=2, axis=1)), (M34, dict(axis=0)), (I6, dict(n=3)),
    (U8, dict(axis=0)), (B6, {}), (F3, dict(n=5)), (np.zeros((0, 3), np.float32), dict(axis=0)),
    (F16, {}), (I6, dict(n=0)),
], ids=["f32", "n2-3d", "axis0", "int-n3", "uint8-wraps", "bool-ne", "n>len", "empty",
        "f16", "n0"])
def test_diff(x, kw):
  # NumPy computes in the input dtype too (uint8 wraps, bools compare with !=)
  for out in both(lambda x: jnp.diff(x, **kw), x):
    check(out, np.diff(x, **kw), x.dtype)


def test_diff_prepend_append():
  for out in both(lambda x, a: jnp.diff(x, prepend=1.0, append=a), M34, M34[:, :2]):
    check(out, np.diff(M34, prepend=1.0, append=M34[:, :2]), np.float32)
  # a weak scalar prepend joins an int array: float32, weak (as JAX)
  for out in both(lambda x: jnp.diff(x, prepend=0.5), I6):
    check(out, np.diff(I6, prepend=0.5), np.float32, weak_type=True)
  check(jnp.diff(weak()), np.zeros(3), np.float32, weak_type=True)


def test_diff_errors():
  with pytest.raises(ValueError, match="order must be non-negative but got -1"):
    jnp.diff(F7, n=-1)
  with pytest.raises(ValueError, match="diff requires input that is at least one dimensional"):
    jnp.diff(np.float32(1.0))
  with pytest.raises(ValueError, match="axis 1 is out of bounds for array of dimension 1"):
    jnp.diff(F7, axis=1)
  with pytest.raises(TypeError, match="concatenate"):
    jnp.diff(M34, axis=0, prepend=np.zeros((1, 3)))


def test_ediff1d():
  for out in both(jnp.ediff1d, M34):
    check(out, np.ediff1d(M34), np.float32)
  for out in both(lambda x, e, b: jnp.ediff1d(x, to_end=e, to_begin=b), I6,
                  np.array([7, 8]), np.float32(-1.5)):
    check(out, np.r_[-1, np.ediff1d(I6), 7, 8], np.int32)  # to_begin cast to int32
  check(jnp.ediff1d(weak()), np.zeros(3), np.float32, weak_type=True)
  check(jnp.ediff1d(weak(), to_begin=np.float32(1)), [1, 0, 0, 0], np.float32)
  with pytest.raises(TypeError, match="ediff1d requires ndarray or scalar arguments"):
    jnp.ediff1d([1, 2])


# --- convolve, correlate ----------------------------------------------------------------

@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("a,v", [(F7, F3), (F3, F7), (F7[:4], F7[3:]), (F7, F7[:1]),
                                 (C4, F7), (C6, C4)],
                         ids=["7x3", "3x7", "4x4", "7x1", "complex-real", "complex"])
def test_convolve_correlate(mode, a, v):
  dt = np.result_type(a, v)
  # sums of up to 7 products in f32: a few ulps of the largest term
  for out in both(lambda a, v: jnp.convolve(a, v, mode=mode), a, v):
    check(out, np.convolve(f64(a), f64(v), mode=mode), dt, rtol=1e-5)
  for out in both(lambda a, v: jnp.correlate(a, v, mode=mode), a, v):
    check(out, np.correlate(f64(a), f64(v), mode=mode), dt, rtol=1e-5)


def test_convolve_dtypes():
  for out in both(jnp.convolve, I6, I4):  # integers convolve in float32, as JAX
    check(out, np.convolve(I6, I4), np.float32)
  for out in both(lambda a, v: jnp.convolve(a, v, preferred_element_type=np.int32), I6, I4):
    check(out, np.convolve(I6, I4), np.int32)
  check(jnp.correlate(I6, I4, preferred_element_type=np.float32), np.correlate(I6, I4),
        np.float32)
  check(jnp.convolve(weak(), weak(2)), [4, 8, 8, 8, 4], np.float32, weak_type=True)
  check(jnp.correlate(weak(), weak(2), "full"), [4, 8, 8, 8, 4], np.float32, weak_type=True)
  check(jnp.convolve(F16, F16[:2]), np.convolve(f64(F16), f64(F16[:2])), np.float16)


def test_convolve_errors():
  with pytest.raises(ValueError, match=r"convolve: inputs cannot be empty, got shapes \(0,\) "
                     r"and \(7,\)"):
    jnp.convolve(np.zeros(0, np.float32), F7)
  with pytest.raises(ValueError, match="correlate: inputs cannot be empty"):
    jnp.correlate(F7, np.zeros(0, np.float32))
  with pytest.raises(ValueError, match=r"convolve\(\) only support 1-dimensional inputs"):
    jnp.convolve(M34, F7)
  with pytest.raises(ValueError, match=r"correlate\(\) only support 1-dimensional inputs"):
    jnp.correlate(2.0, F7)
  with pytest.raises(ValueError, match=r"mode must be one of \['full', 'same', 'valid'\]"):
    jnp.convolve(F7, F3, mode="bad")


# --- cov, corrcoef ----------------------------------------------------------------------

FW, AW = np.array([1, 2, 1, 3]), np.array([.5, 1., 2., 1.])


@pytest.mark.parametrize("kw", [
    {}, dict(rowvar=False), dict(bias=True), dict(ddof=0), dict(fweights=FW),
    dict(aweights=AW), dict(fweights=FW, aweights=AW), dict(fweights=FW, ddof=0),
], ids=["plain", "rowvar", "bias", "ddof0", "fweights", "aweights", "both-weights",
        "fw-ddof0"])
def test_cov(kw):
  arrays = {k: v for k, v in kw.items() if k.endswith("weights")}
  static = {k: v for k, v in kw.items() if k not in arrays}
  for out in both(lambda m, **w: jnp.cov(m, **static, **w), M34, **arrays):
    check(out, np.cov(f64(M34), **kw), np.float32, rtol=1e-5)


def test_cov_shapes_and_dtypes():
  for out in both(jnp.cov, F7):
    check(out, np.cov(f64(F7)), np.float32, rtol=1e-5)
  for out in both(jnp.cov, F7[:4], M34[0]):
    check(out, np.cov(f64(F7[:4]), f64(M34[0])), np.float32, rtol=1e-5)
  check(jnp.cov(I6), np.cov(I6), np.float32, rtol=1e-6)
  c = np.stack([C4, C6[:4]])
  check(jnp.cov(c), np.cov(c.astype(np.complex128)), np.complex64, rtol=1e-5)
  check(jnp.cov(F16), np.cov(f64(F16)), np.float16, rtol=5e-3)
  check(jnp.cov(weak()), np.float32(0), np.float32)
  check(jnp.cov(M34, dtype=np.float32), np.cov(f64(M34)), np.float32, rtol=1e-5)
  check(jnp.cov(np.zeros((2, 0), np.float32)), np.full((2, 2), np.nan), np.float32)
  check(jnp.cov(np.zeros((0, 3), np.float32)), np.zeros((0, 0)), np.float32)


def test_cov_errors():
  with pytest.raises(ValueError, match="m has more than 2 dimensions"):
    jnp.cov(M345)
  with pytest.raises(ValueError, match="cov: dtype must be a subclass of float or complex"):
    jnp.cov(M34, dtype=np.int32)
  with pytest.raises(TypeError, match="fweights must be integer"):
    jnp.cov(M34, fweights=np.ones(4, np.float32))
  with pytest.raises(RuntimeError, match="incompatible numbers of samples and fweights"):
    jnp.cov(M34, fweights=np.ones(3, np.int32))
  with pytest.raises(RuntimeError, match="cannot handle multidimensional aweights"):
    jnp.cov(M34, aweights=np.ones((4, 1)))


def test_corrcoef():
  for out in both(jnp.corrcoef, M34):
    check(out, np.corrcoef(f64(M34)), np.float32, rtol=1e-5)
  for out in both(jnp.corrcoef, F7[:4], M34[1]):
    check(out, np.corrcoef(f64(F7[:4]), f64(M34[1])), np.float32, rtol=1e-5)
  check(jnp.corrcoef(F7), 1.0, np.float32)  # one variable: c / c
  ints = np.array([[1, 2], [3, 5], [4, 4]])
  check(jnp.corrcoef(ints, rowvar=False), np.corrcoef(ints, rowvar=False), np.float32,
        rtol=1e-6)
  c = np.stack([C4, C6[:4]])
  check(jnp.corrcoef(c), np.corrcoef(c.astype(np.complex128)), np.complex64, rtol=1e-5)
  with pytest.raises(ValueError, match="corrcoef: dtype must be a subclass of float"):
    jnp.corrcoef(M34, dtype=np.int32)


# --- interp -----------------------------------------------------------------------------

def _extrapolated(x, xp, fp):
  lo = fp[0] + (x - xp[0]) * (fp[1] - fp[0]) / (xp[1] - xp[0])
  hi = fp[-1] + (x - xp[-1]) * (fp[-1] - fp[-2]) / (xp[-1] - xp[-2])
  return np.where(x < xp[0], lo, np.where(x > xp[-1], hi, np.interp(x, xp, fp)))


@pytest.mark.parametrize("kw", [{}, dict(left=-1.0, right=99.0), dict(period=5.0),
                                dict(period=-5.0)],
                         ids=["default", "left-right", "period", "negative-period"])
def test_interp(kw):
  for out in both(lambda x, xp, fp: jnp.interp(x, xp, fp, **kw), XQ, XP, FP):
    check(out, np.interp(f64(XQ), f64(XP), f64(FP), **kw), np.float32, rtol=1e-5)


def test_interp_cases():
  for out in both(lambda x, xp, fp: jnp.interp(x, xp, fp, "extrapolate", "extrapolate"),
                  XQ, XP, FP):
    check(out, _extrapolated(f64(XQ), f64(XP), f64(FP)), np.float32, rtol=1e-5)
  for out in both(lambda x, xp, fp, l: jnp.interp(x, xp, fp, left=l), XQ, XP, FP,
                  np.float32(-3)):  # a traced `left`
    check(out, np.interp(f64(XQ), f64(XP), f64(FP), left=-3), np.float32, rtol=1e-5)
  check(jnp.interp(np.array([0, 1, 2, 3]), np.array([0, 2, 4]), np.array([1, 5, 3])),
        [1, 3, 5, 4], np.float32)
  check(jnp.interp(2.5, XP, FP), np.interp(2.5, f64(XP), f64(FP)), np.float32, rtol=1e-5)
  # repeated xp: the right value at the step, no 0/0 (JAX's value)
  check(jnp.interp(np.float32([1, 2, 3]), np.float32([1, 2, 2, 3]), np.float32([0, 1, 5, 6])),
        [0, 5, 6], np.float32)
  check(jnp.interp(1.0, weak(2), weak(2)), 2.0, np.float32, weak_type=True)
  check(jnp.interp(F16, np.float16([-1, 0, 1]), np.float16([0, 1, 4])),
        np.interp(f64(F16), [-1, 0, 1], [0, 1, 4]), np.float16)


def test_interp_errors():
  with pytest.raises(ValueError, match="xp and fp must be one-dimensional arrays of equal size"):
    jnp.interp(XQ, XP, FP[:3])
  with pytest.raises(ValueError, match="the only valid string value of `left` is 'extrapolate'"):
    jnp.interp(XQ, XP, FP, left="bad")
  with pytest.raises(ValueError, match="complex x values not supported"):
    jnp.interp(C4, XP[:4], FP[:4])
  with pytest.raises(ValueError, match="period must be a scalar"):
    jnp.interp(XQ, XP, FP, period=np.ones(2))


# --- set operations ---------------------------------------------------------------------

SF1 = np.array([1., 2., np.nan, 2., 3.], np.float32)
SF2 = np.array([2., np.nan, 4.], np.float32)


@pytest.mark.parametrize("name", ["intersect1d", "union1d", "setdiff1d", "setxor1d"])
@pytest.mark.parametrize("a,b", [(S1, S2), (SF1, SF2), (np.array([[3, 1], [2, 2]], np.int32), S2),
                                 (np.zeros(0, np.int32), S2)],
                         ids=["int", "float-nan", "2d", "empty"])
def test_set_ops_eager(name, a, b):
  out = getattr(jnp, name)(a, b)
  expected = getattr(np, name)(a, b)
  if name in ("union1d",) and np.isnan(expected).sum() > 1:
    expected = expected[:np.argmax(np.isnan(expected)) + 1]  # NaNs collapse, as jnp.unique
  check(out, expected, np.result_type(a, b))


@pytest.mark.parametrize("assume_unique", [False, True])
def test_set_ops_sized_under_jit(assume_unique):
  a, b = (S1, S2) if not assume_unique else (np.array([1, 4, 3, 9]), np.array([3, 7, 1]))
  inter, union = np.intersect1d(a, b), np.union1d(a, b)
  diff, xor = np.setdiff1d(a, b), np.setxor1d(a, b)

  def padded(v, size, fill):
    return np.concatenate([v, np.full(size - v.size, fill, v.dtype)])[:size]

  for out in both(lambda a, b: jnp.intersect1d(a, b, assume_unique, size=5), a, b):
    check(out, padded(inter, 5, inter.min()), np.int32)  # default fill: smallest result
  for out in both(lambda a, b: jnp.setxor1d(a, b, assume_unique, size=6, fill_value=-1), a, b):
    check(out, padded(xor, 6, -1), np.int32)
  for out in both(lambda a, b: jnp.setxor1d(a, b, assume_unique, size=2), a, b):
    check(out, xor[:2], np.int32)
  for out in both(lambda a, b: jnp.setdiff1d(a, b, assume_unique, size=4), a, b):
    check(out, padded(diff, 4, 0), np.int32)  # default fill: 0
  for out in both(lambda a, b: jnp.union1d(a, b, size=10, fill_value=0), a, b):
    check(out, padded(union, 10, 0), np.int32)


def test_intersect1d_indices():
  vals, i1, i2 = np.intersect1d(S1, S2, return_indices=True)
  for out in [jnp.intersect1d(S1, S2, return_indices=True)]:
    for o, e in zip(out, (vals, i1, i2)):
      check(o, e, np.int32)
  # sized: padding with fill_value and the out-of-range indices len(ar1) / len(ar2)
  for out in both(lambda a, b: jnp.intersect1d(a, b, return_indices=True, size=5,
                                               fill_value=-1), S1, S2):
    for o, e in zip(out, ([2, 3, 8, -1, -1], [1, 3, 5, 7, 7], [0, 1, 4, 6, 6])):
      check(o, e, np.int32)
  a, b = np.array([1, 4, 3]), np.array([3, 7, 1])
  for out in both(lambda a, b: jnp.intersect1d(a, b, True, True, size=4), a, b):
    for o, e in zip(out, ([1, 3, 1, 1], [0, 2, 3, 3], [2, 0, 3, 3])):
      check(o, e, np.int32)


def test_set_ops_weak_and_errors():
  check(jnp.union1d(weak(), weak()), [2.0], np.float32, weak_type=True)
  check(jnp.setxor1d(weak(), weak(), size=2), [0, 0], np.float32)
  check(jnp.intersect1d(S1, SF2), [2.0], np.float32)
  for fn in (jnp.intersect1d, jnp.union1d, jnp.setdiff1d, jnp.setxor1d):
    with pytest.raises(errors.ConcretizationTypeError, match="size"):
      ember.jit(fn)(S1, S2)
  # concrete values inside jit are fine (computed while tracing)
  check(ember.jit(lambda: jnp.setdiff1d(S1, np.array(S2)))(), np.setdiff1d(S1, S2), np.int32)


# --- polynomials ------------------------------------------------------------------------

def test_polyval():
  for out in both(jnp.polyval, F3, F7):
    check(out, np.polyval(f64(F3), f64(F7)), np.float32, rtol=1e-5)
  for out in both(jnp.polyval, M34, F3[:, None]):  # p along axis 0, broadcasting
    check(out, np.polyval(f64(M34), f64(F3[:, None])), np.float32, rtol=1e-5)
  check(jnp.polyval(np.array([1, 2, 3]), I6), np.polyval([1, 2, 3], I6), np.int32)
  check(jnp.polyval(np.array([1, 2, 3]), 2.5), 14.25, np.float32)  # strong, as JAX
  check(jnp.polyval(weak(), weak(3)), [30, 30, 30], np.float32)
  check(jnp.polyval(np.zeros(0, np.float32), F3), np.zeros(3), np.float32)
  check(jnp.polyval(np.float32([1, 2]), np.float32([np.inf, -np.inf, np.nan])),
        [np.inf, -np.inf, np.nan], np.float32)


def test_polyadd_polysub_polymul():
  for out in both(jnp.polyadd, F3, F7):
    check(out, np.polyadd(f64(F3), f64(F7)), np.float32)
  for out in both(jnp.polysub, F7, F3):
    check(out, np.polysub(f64(F7), f64(F3)), np.float32)
  check(jnp.polysub(I6, I4), np.polysub(I6, I4), np.int32)
  check(jnp.polyadd(I6, np.array([1.5, 2.])), np.polyadd(I6, [1.5, 2.]), np.float32)
  # coefficients run along axis 0: the shorter one is added to the last rows
  check(jnp.polyadd(M34, np.float32([[1, 2, 3, 4]])), M34 + [[0] * 4, [0] * 4, [1, 2, 3, 4]],
        np.float32)
  check(jnp.polyadd(weak(), weak(2)), [2, 2, 4, 4], np.float32, weak_type=True)
  for out in both(jnp.polymul, F3, F7):
    check(out, np.polymul(f64(F3), f64(F7)), np.float32, rtol=1e-5)
  check(jnp.polymul(I6, I4), np.convolve(I6, I4), np.float32)  # no trimming by default
  check(jnp.polymul(np.float32([0, 0, 1, 2]), np.float32([0, 3, 1]), trim_leading_zeros=True),
        [3, 7, 2], np.float32)
  check(jnp.polymul(np.zeros(0, np.float32), F3), np.zeros(3), np.float32)


def test_polyder_polyint():
  for out in both(jnp.polyder, F7):
    check(out, np.polyder(f64(F7)), np.float32, rtol=1e-5)
  for out in both(lambda p: jnp.polyder(p, 3), I6):
    check(out, np.polyder(I6, 3), np.float32)
  check(jnp.polyder(I6, 0), I6, np.float32)
  for out in both(jnp.polyint, F3):
    check(out, np.polyint(f64(F3)), np.float32, rtol=1e-6)
  for out in both(lambda p, k: jnp.polyint(p, 2, k=k), I6, np.float32([1, 2])):
    check(out, np.polyint(I6, 2, k=[1, 2]), np.float32, rtol=1e-6)
  check(jnp.polyint(I6, 3, k=5), np.polyint(I6, 3, k=5), np.float32, rtol=1e-6)
  check(jnp.polyint(F16), np.polyint(f64(F16)), np.float16)
  check(jnp.polyint(weak()), [0.5, 2 / 3, 1, 2, 0], np.float32)
  with pytest.raises(ValueError, match="Order of derivative must be positive"):
    jnp.polyder(F7, -1)
  with pytest.raises(ValueError, match="Order of integral must be positive"):
    jnp.polyint(F7, -1)
  with pytest.raises(ValueError, match="k must be a scalar or a rank-1 array of length 1 or m"):
    jnp.polyint(F7, 2, k=np.ones(3))
  with pytest.raises(TypeError, match="polyint requires ndarray or scalar arguments, got list "
                     "at position 1"):
    jnp.polyint(F7, 2, k=[1., 2.])


def test_polydiv_poly_vander():
  u, v = np.float32([1, -3, 2, 5]), np.float32([2, -1, 1])
  for out in both(jnp.polydiv, u, v):
    q, r = np.polydiv(f64(u), f64(v))
    check(out[0], q, np.float32)
    check(out[1], np.r_[0, 0, r], np.float32, rtol=1e-6)  # JAX keeps u's length
  q, r = jnp.polydiv(u, v, trim_leading_zeros=True)
  check(r, np.polydiv(f64(u), f64(v))[1], np.float32, rtol=1e-6)
  for out in both(jnp.poly, F3):
    check(out, np.poly(f64(F3)), np.float32, rtol=1e-5)
  check(jnp.poly(np.array([1, 2, 3])), [1, -6, 11, -6], np.float32)
  check(jnp.poly(C4), np.poly(C4.astype(np.complex128)), np.complex64, rtol=1e-5)
  check(jnp.poly(np.zeros(0, np.float32)), 1.0, np.float32)
  check(jnp.poly(np.eye(2)), np.complex64([1, -2, 1]), np.complex64)  # char. polynomial (JAX)
  for out in both(jnp.vander, F3):
    check(out, np.vander(f64(F3)), np.float32, rtol=1e-6)
  for out in both(lambda x: jnp.vander(x, 3, increasing=True), I6):
    check(out, np.vander(I6, 3, increasing=True), np.int32)
  check(jnp.vander(F3, 0), np.zeros((3, 0)), np.float32)
  with pytest.raises(ValueError, match="x must be a one-dimensional array"):
    jnp.vander(M34)
  with pytest.raises(ValueError, match="N must be nonnegative"):
    jnp.vander(F7, -1)


# --- trapezoid, gradient, unwrap --------------------------------------------------------

@pytest.mark.parametrize("y,kw", [
    (M345, {}), (M345, dict(dx=0.5, axis=0)), (M34, dict(x=np.float32([0, 1, 3, 7]))),
    (M34, dict(x=np.cumsum(np.abs(M34), 0), axis=0)), (I6, {}), (F7, dict(dx=2)),
    (I6, dict(x=np.arange(6))),
], ids=["default", "dx-axis0", "x-1d", "x-nd", "int", "int-dx", "int-x"])
def test_trapezoid(y, kw):
  arrays = {k: v for k, v in kw.items() if k == "x"}
  static = {k: v for k, v in kw.items() if k != "x"}
  for out in both(lambda y, **a: jnp.trapezoid(y, **static, **a), y, **arrays):
    check(out, np2.trapezoid(f64(y), **kw), np.float32, rtol=1e-5)


def test_trapezoid_dtypes():
  # a 1-D dx is one spacing per interval along the axis
  check(jnp.trapezoid(M34, dx=np.float32([1., 2., 3.])),
        np2.trapezoid(f64(M34), dx=np.float64([1., 2., 3.])), np.float32, rtol=1e-5)
  check(jnp.trapezoid(weak()), 6.0, np.float32)  # strong, as JAX
  check(jnp.trapezoid(F16), np2.trapezoid(f64(F16)), np.float16, rtol=5e-3)


@pytest.mark.parametrize("edge_order", [None, 1, 2])
@pytest.mark.parametrize("f,spacing,axis", [
    (F7, (), None), (F7, (0.5,), None), (F7, (np.cumsum(np.abs(F7) + .1),), None),
    (M34, (), None), (M34, (2.0, np.float32([0, 1, 3, 4])), None), (M345, (), -1),
    (M345, (), (0, 2)), (I6, (2,), None),
], ids=["1d", "step", "coords", "2d", "2d-mixed", "axis", "axes", "int"])
def test_gradient(f, spacing, axis, edge_order):
  kw = {} if axis is None else dict(axis=axis)
  expected = np.gradient(f64(f), *[f64(s) if np.ndim(s) else s for s in spacing],
                         edge_order=edge_order or 1, **kw)
  for out in both(lambda f, *s: jnp.gradient(f, *s, edge_order=edge_order, **kw), f, *spacing):
    if isinstance(expected, (list, tuple)):
      assert isinstance(out, list) and len(out) == len(expected)
      for o, e in zip(out, expected):
        check(o, e, np.float32, rtol=1e-5)
    else:
      check(out, expected, np.float32, rtol=1e-5)


def test_gradient_cases():
  assert jnp.gradient(M34, axis=()) == []
  check(jnp.gradient(weak()), np.zeros(4), np.float32, weak_type=True)
  with pytest.raises(ValueError, match="at least 2 elements are required"):
    jnp.gradient(np.ones((1, 3), np.float32))
  with pytest.raises(ValueError, match=r"at least \(edge_order \+ 1\) elements"):
    jnp.gradient(np.ones(2, np.float32), edge_order=2)
  with pytest.raises(TypeError, match="Invalid number of spacing arguments 3"):
    jnp.gradient(M34, 1.0, 2.0, 3.0)
  with pytest.raises(ValueError, match="Spacing arrays must have the same length"):
    jnp.gradient(F7, np.ones(3, np.float32))
  with pytest.raises(ValueError, match="Spacing arrays must be 1D arrays or scalars"):
    jnp.gradient(F7, np.ones((7, 1), np.float32))
  with pytest.raises(ValueError, match="edge_order must be 1 or 2"):
    jnp.gradient(F7, edge_order=3)


def test_unwrap():
  ph = np.cumsum(RNG.rand(3, 8) * 4, axis=1).astype(np.float32)
  for kw in ({}, dict(discont=4.0), dict(axis=0)):
    for out in both(lambda p: jnp.unwrap(p, **kw), ph):
      check(out, np.unwrap(f64(ph), **kw), np.float32, rtol=1e-5)
  ints = np.array([0, 3, 5, 8, 1, 4])
  for out in both(lambda p: jnp.unwrap(p, period=6), ints):
    check(out, np.unwrap(ints, period=6), np.int32)
  check(jnp.unwrap(ints), np.unwrap(ints), np.float32, rtol=1e-6)
  check(jnp.unwrap(np.zeros((2, 0), np.float32)), np.zeros((2, 0)), np.float32)
  with pytest.raises(ValueError, match="jnp.unwrap does not support complex inputs"):
    jnp.unwrap(C4)


# --- histogram2d, histogramdd -----------------------------------------------------------

@pytest.mark.parametrize("kw", [
    dict(bins=3), dict(bins=(2, 4), range=[(-1, 1), (-2, 2)]),
    dict(bins=np.float32([-2, 0, 1, 3])), dict(bins=3, weights=np.arange(7.), density=True),
    dict(bins=[np.float32([-2, 0, 2]), 3]),
], ids=["int", "range", "edges", "weights-density", "mixed"])
def test_histogram2d(kw):
  x, y = F7, F7[::-1].copy()
  h, ex, ey = jnp.histogram2d(x, y, **kw)
  eh, eex, eey = np.histogram2d(f64(x), f64(y), **kw)
  check(h, eh, np.float32 if kw.get("weights") is not None else np.int32, rtol=1e-5)
  check(ex, eex, np.float32, rtol=1e-6)
  check(ey, eey, np.float32, rtol=1e-6)


def test_histogramdd():
  sample = M345.reshape(-1, 3)
  for out in both(lambda s: jnp.histogramdd(s, bins=(2, 3, 2), density=True), sample):
    h, edges = out
    eh, eedges = np.histogramdd(f64(sample), bins=(2, 3, 2), density=True)
    check(h, eh, np.float32, rtol=1e-5)
    for e, ee in zip(edges, eedges):
      check(e, ee, np.float32, rtol=1e-6)
  h, _ = jnp.histogramdd(np.array([[0, 1], [2, 2], [1, 0]]), bins=[2, 3])
  check(h, np.histogramdd(np.array([[0, 1], [2, 2], [1, 0]]), bins=[2, 3])[0], np.int32)
  with pytest.raises(ValueError, match="should have one weight for each sample"):
    jnp.histogramdd(M34.T, weights=np.ones(3))
  with pytest.raises(ValueError, match="range must be a sequence of 3 pairs or Nones"):
    jnp.histogramdd(M34.T, range=[(0, 1)])
  with pytest.raises(ValueError, match="should be a bin for each dimension"):
    jnp.histogramdd(M34.T, bins=[2, 2])


# --- bits, trim_zeros, sort_complex, mask_indices, fill_diagonal -----------------------

@pytest.mark.parametrize("x,kw", [
    (B6, {}), (U8 > 100, dict(axis=1)), (np.arange(20).reshape(2, 10) % 3,
                                          dict(axis=-1, bitorder="little")),
    (np.arange(27).reshape(9, 3) % 2, dict(axis=0)), (np.zeros(0, bool), {}), (U8, {}),
], ids=["bool", "axis1", "little", "axis0", "empty", "uint8"])
def test_packbits(x, kw):
  for out in both(lambda x: jnp.packbits(x, **kw), x):
    check(out, np.packbits(x, **kw), np.uint8)


@pytest.mark.parametrize("kw", [{}, dict(axis=1, bitorder="little"), dict(axis=0, count=5),
                                dict(count=45), dict(axis=1, count=-3)])
def test_unpackbits(kw):
  for out in both(lambda x: jnp.unpackbits(x, **kw), U8):
    check(out, np.unpackbits(U8, **kw), np.uint8)


def test_bits_errors():
  with pytest.raises(TypeError, match="Expected an input array of integer or boolean"):
    jnp.packbits(F7)
  with pytest.raises(ValueError, match="'order' must be either 'little' or 'big'"):
    jnp.packbits(B6, bitorder="middle")
  with pytest.raises(TypeError, match="Expected an input array of unsigned byte data type"):
    jnp.unpackbits(I6)


PADDED = np.pad(np.ones((2, 2)), 1)  # a 2x2 block of ones inside a border of zeros


@pytest.mark.parametrize("x,kw,want", [
    (np.array([0, 0, 1, 2, 0, 3, 0]), {}, None),
    (np.array([0, 0, 1, 2, 0, 3, 0.]), dict(trim="f"), None),
    (np.array([0, 0, 1, 2, 0, 3, 0]), dict(trim="b"), None), (np.zeros(4), {}, None),
    # n-d arrays: np.trim_zeros takes them only from NumPy 2.2 on, so the results are written
    (PADDED, {}, np.ones((2, 2))), (PADDED, dict(axis=1), PADDED[:, 1:3]),
])
def test_trim_zeros(x, kw, want):
  out = jnp.trim_zeros(x, **kw)
  check(out, np.trim_zeros(x, **kw) if want is None else want, jnp.asarray(x).dtype)
  with pytest.raises(errors.ConcretizationTypeError, match="trim_zeros"):
    ember.jit(jnp.trim_zeros)(x)


def test_sort_complex():
  for out in both(jnp.sort_complex, C6):
    check(out, np.sort_complex(C6), np.complex64)
  check(jnp.sort_complex(I6), np.sort_complex(I6), np.complex64)  # NumPy: complex128
  check(jnp.sort_complex(F16), np.sort_complex(F16), np.complex64)
  with ember.enable_x64():
    check(jnp.sort_complex(np.arange(3)), [0j, 1, 2], np.complex128)
    check(jnp.sort_complex(np.arange(3, dtype=np.int16)), [0j, 1, 2], np.complex64)


def test_mask_indices():
  for k in (0, 1, -1):
    for fn, npfn in ((jnp.triu, np.triu), (jnp.tril, np.tril)):
      out = jnp.mask_indices(4, fn, k)
      for o, e in zip(out, np.mask_indices(4, npfn, k)):
        check(o, e, np.int32)
  out = ember.jit(lambda: jnp.mask_indices(3, jnp.triu, 1, size=5))()
  for o, e in zip(out, ([0, 0, 1, 0, 0], [1, 2, 2, 0, 0])):
    check(o, e, np.int32)


@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")  # as JAX
@pytest.mark.parametrize("shape,val,wrap", [
    ((3, 4), 9.0, False), ((4, 4), np.array([1, 2]), False), ((3, 3, 3), 1, False),
    ((5, 2), np.float32([1, 2, 3]), False), ((7, 3), np.float32([1, 2]), True),
    ((2, 3), np.float32([7, 8, 9, 10]), False), ((3, 3), 2.7, False),
], ids=["scalar", "cycled", "3d", "tall", "tall-wrap", "long-val", "cast"])
def test_fill_diagonal(shape, val, wrap):
  a = RNG.randint(-3, 3, shape).astype(np.int32 if shape == (3, 3) else np.float32)
  expected = a.copy()
  np.fill_diagonal(expected, val, wrap=wrap)
  for out in both(lambda a, v: jnp.fill_diagonal(a, v, wrap=wrap, inplace=False), a, val):
    check(out, expected, a.dtype)


def test_fill_diagonal_errors():
  with pytest.raises(NotImplementedError, match="must use inplace=False"):
    jnp.fill_diagonal(M34, 1.0)
  with pytest.raises(ValueError, match="array must be at least 2-d"):
    jnp.fill_diagonal(F7, 1.0, inplace=False)
  with pytest.raises(ValueError, match="All dimensions of input must be of equal length"):
    jnp.fill_diagonal(M345, 1.0, inplace=False)
  check(jnp.fill_diagonal(lax.broadcast(2.0, (2, 2)), 5, inplace=False), [[5, 2], [2, 5]],
        np.float32, weak_type=True)


# --- windows ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
@pytest.mark.parametrize("M", [0, 1, 2, 7, 8])
def test_windows(name, M):
  for out in both(lambda: getattr(jnp, name)(M)):
    check(out, getattr(np, name)(M), np.float32, rtol=1e-6)
  with ember.enable_x64():
    check(getattr(jnp, name)(M), getattr(np, name)(M), np.float64, rtol=1e-12)


def test_kaiser():
  for M, beta in [(0, 1.0), (1, 2.0), (6, 3.0), (9, 0.0)]:
    # i0 is evaluated in float32 twice and divided: a few ulps
    check(jnp.kaiser(M, beta), np.kaiser(M, beta), np.float32, rtol=1e-5)
  for out in both(lambda b: jnp.kaiser(5, b), np.float32(2.5)):
    check(out, np.kaiser(5, 2.5), np.float32, rtol=1e-5)
  with pytest.raises(errors.ConcretizationTypeError, match="jnp.hamming"):
    ember.jit(jnp.hamming)(4)


# --- index tricks, printing -------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:the matrix subclass")  # NumPy's r_['r', ...]
@pytest.mark.parametrize("expr", [
    lambda m: m.mgrid[0:4, 0:3], lambda m: m.mgrid[0:1:5j], lambda m: m.mgrid[0:2:3j, 1:4],
    lambda m: m.mgrid[-1:5:2], lambda m: m.mgrid[0.5:2, 0:3],
    lambda m: m.r_[-1:3, 0, 0, np.array([1, 2, 3])], lambda m: m.r_[-1:1:5j, 0.5, [1, 2]],
    lambda m: m.r_["0,2", [1, 2, 3], [4, 5, 6]], lambda m: m.r_["0,2,0", [1, 2, 3], [4, 5, 6]],
    lambda m: m.r_["0,2,-2", [1, 2, 3], [4, 5, 6]], lambda m: m.r_["r", [1, 2, 3], [4, 5, 6]],
    lambda m: m.r_["c", [1, 2, 3], [4, 5, 6]], lambda m: m.r_[M34, M34],
    lambda m: m.c_[np.array([1, 2, 3]), np.array([4, 5, 6])], lambda m: m.c_[M34, M34],
    lambda m: m.c_["0,2,-1", [1, 2, 3], [4, 5, 6]], lambda m: m.c_["r", [1, 2, 3], [4, 5, 6]],
])
def test_grids_and_concat(expr):
  out, expected = expr(jnp), expr(np)
  kind = expected.dtype.kind
  check(out, expected, {"i": np.int32, "f": np.float32}[kind], rtol=1e-6)


def test_index_tricks_details():
  for o, e in zip(jnp.ogrid[0:3, 0:2:4j], np.ogrid[0:3, 0:2:4j]):
    check(o, e, np.float32, rtol=1e-6)  # promoted to a common dtype, as JAX
  check(jnp.ogrid[2:5], [2, 3, 4], np.int32)
  check(jnp.mgrid[()], np.zeros(0), np.int32)
  assert jnp.ogrid[()] == []
  check(jnp.r_[1.5, 2], [1.5, 2], np.float32, weak_type=True)
  check(jnp.r_[weak(2), 1.0], [2, 2, 1], np.float32, weak_type=True)
  with ember.enable_x64():
    check(jnp.mgrid[0:2, 0:1:3j], np.mgrid[0:2, 0:1:3j], np.float64)
  assert jnp.s_[1:2, ::3] == np.s_[1:2, ::3] and jnp.index_exp[2:] == np.index_exp[2:]
  with pytest.raises(ValueError, match="could not understand directive 'a,b'"):
    jnp.r_["a,b", [1]]
  with pytest.raises(ValueError, match="string directive must be placed at the beginning"):
    jnp.r_[[1], "r"]
  with pytest.raises(errors.ConcretizationTypeError, match="jnp.mgrid"):
    ember.jit(lambda n: jnp.mgrid[0:n])(3)
  assert len(jnp.r_) == 0 and len(jnp.c_) == 0


def test_array_repr_str_and_warning():
  a = jnp.arange(3.0)
  assert jnp.array_str(a) == "[0. 1. 2.]"
  assert jnp.array_repr(a) == "Array([0., 1., 2.], dtype=float32)"
  assert jnp.ComplexWarning is np.exceptions.ComplexWarning


# --- dtype / weak-type table (checked with JAX 0.12) -----------------------------------

@pytest.mark.parametrize("fn,dtype,weak_type", [
    (lambda: jnp.trapezoid(weak()), np.float32, False),
    (lambda: jnp.trapezoid(weak(), x=weak()), np.float32, False),
    (lambda: jnp.gradient(weak(), weak()), np.float32, True),
    (lambda: jnp.unwrap(weak()), np.float32, False),
    (lambda: jnp.cov(weak()), np.float32, False),
    (lambda: jnp.corrcoef(weak()), np.float32, False),
    (lambda: jnp.interp(weak(), XP, FP), np.float32, False),
    (lambda: jnp.polysub(weak(), weak(2)), np.float32, True),
    (lambda: jnp.polymul(weak(), weak(2)), np.float32, True),
    (lambda: jnp.polyder(weak()), np.float32, False),
    (lambda: jnp.polyint(F3, k=2.0), np.float32, False),
    (lambda: jnp.poly(weak()), np.float32, False),
    (lambda: jnp.vander(weak()), np.float32, False),
    (lambda: jnp.sort_complex(weak()), np.complex64, False),
    (lambda: jnp.trim_zeros(weak()), np.float32, True),
    (lambda: jnp.intersect1d(weak(), weak()), np.float32, True),
    (lambda: jnp.setdiff1d(weak(), np.float32([1.])), np.float32, True),
    (lambda: jnp.c_[weak(), weak()], np.float32, True),
    (lambda: jnp.histogram2d(weak(), weak(), bins=2)[0], np.int32, False),
    (lambda: jnp.polydiv(weak(), weak(2))[1], np.float32, True),
    (lambda: jnp.convolve(I6, I6, preferred_element_type=np.int32), np.int32, False),
])
def test_result_types(fn, dtype, weak_type):
  out = fn()
  assert (out.dtype, out.weak_type) == (np.dtype(dtype), weak_type)


def test_x64_dtypes():
  with ember.enable_x64():
    cases = [(jnp.convolve(np.arange(4), np.arange(3)), np.float64),
             (jnp.cov(np.arange(4)), np.float64), (jnp.gradient(np.arange(4)), np.float64),
             (jnp.interp(1.5, np.arange(4), np.arange(4) ** 2), np.float64),
             (jnp.vander(np.arange(3)), np.int64), (jnp.kaiser(4, 2.0), np.float64),
             (jnp.histogram2d(np.arange(5), np.arange(5), bins=2)[0], np.int64),
             (jnp.intersect1d(np.arange(5), np.arange(3, 8), return_indices=True)[1],
              np.int64),
             (jnp.mask_indices(3, jnp.triu)[0], np.int64)]
    for out, dt in cases:
      assert out.dtype == np.dtype(dt) and not out.weak_type


# --- ember.lax additions ----------------------------------------------------------------

def test_lax_primitives_and_helpers():
  assert lax.add_p.name == "add" and lax.reduce_sum_p.name == "reduce_sum"
  assert lax.scatter_add_p.name == "scatter-add" and lax.dot_general_p.name == "dot_general"
  assert isinstance(lax.sin_p, ember._src.core.Primitive)
  jaxpr = ember.make_jaxpr(lambda x: lax.sin(x) + 1.0)(1.0)
  assert [e.primitive for e in jaxpr.eqns] == [lax.sin_p, lax.add_p]
  assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
  assert lax.broadcast_shapes([2, 1], (1, 3)) == (2, 3)
  with pytest.raises(ValueError, match="Incompatible shapes for broadcasting"):
    lax.broadcast_shapes((2,), (3,))
  assert lax.dtype(1.0) == np.float32 and lax.dtype(True) == np.bool_
  assert lax.dtype(np.float64) == np.float32 and lax.dtype(np.ones(2, np.int8)) == np.int8
  with ember.enable_x64():
    assert lax.dtype(1) == np.int64


def test_everything_exported():
  from ember._src.library.numpy import (
      bit_packing, differences, index_tricks, polynomial, scalar_types, set_ops, signal, sorting,
      statistics)
  for mod in (differences, signal, statistics, set_ops, polynomial, bit_packing, index_tricks,
              sorting, scalar_types):
    for name in mod.__all__:
      assert getattr(jnp, name) is getattr(mod, name)

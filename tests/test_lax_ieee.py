"""lax's IEEE 754-2019 and exact-arithmetic operations (JAX 0.12): sinpi ... atan2pi,
exp2m1, log2p1, one_minus_square, mulhi, fma, fmuladd, polynomial and the total-order
comparisons eq_to_p/le_to_p/lt_to_p, against values jax 0.12.1 produced, NumPy float64 and
exact integer arithmetic; eager, jit, grad and vmap."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

NAN, INF = math.nan, math.inf
_X = np.array([-2., -1.5, -1, -0.75, -0.5, -0.25, -0., 0, 0.1, 0.25, 0.5, 0.7, 1, 1.5, 2, 3.3,
               1e10, np.inf, np.nan], np.float32)
_UNARY = ["sinpi", "cospi", "tanpi", "asinpi", "acospi", "atanpi", "exp2m1", "log2p1",
          "one_minus_square"]

_JAX = {  # jax.lax 0.12.1 on CPU, float32, at _X (atan2pi: at _X, _X[::-1])
    "sinpi": [
        -0.0, 1.0, -0.0, -0.7071067690849304, -1.0, -0.7071067690849304, -0.0, 0.0,
        0.30901700258255005, 0.7071067690849304, 1.0, 0.80901700258255, 0.0, -1.0, 0.0,
        -0.8090168833732605, 0.0, NAN, NAN
    ],
    "cospi": [
        1.0, 0.0, -1.0, -0.7071067690849304, 0.0, 0.7071067690849304, 1.0, 1.0,
        0.9510565400123596, 0.7071067690849304, 0.0, -0.5877852439880371, -1.0, 0.0, 1.0,
        -0.5877853631973267, 1.0, NAN, NAN
    ],
    "tanpi": [
        -0.0, INF, 0.0, 1.0, -INF, -1.0, -0.0, 0.0, 0.3249197006225586, 1.0, INF,
        -1.3763819932937622, -0.0, -INF, 0.0, 1.376381516456604, 0.0, NAN, NAN
    ],
    "asinpi": [
        NAN, NAN, -0.5, -0.26994654536247253, -0.1666666716337204, -0.08043062686920166, -0.0,
        0.0, 0.03188427910208702, 0.08043062686920166, 0.1666666716337204, 0.24681667983531952,
        0.5, NAN, NAN, NAN, NAN, NAN, NAN
    ],
    "acospi": [
        NAN, NAN, 1.0, 0.7699465751647949, 0.6666666865348816, 0.5804306268692017, 0.5, 0.5,
        0.4681157171726227, 0.41956937313079834, 0.3333333134651184, 0.2531833052635193, 0.0, NAN,
        NAN, NAN, NAN, NAN, NAN
    ],
    "atanpi": [
        -0.35241639614105225, -0.31283295154571533, -0.25, -0.2048327624797821,
        -0.14758361876010895, -0.07797913253307343, -0.0, 0.0, 0.03172551840543747,
        0.07797913253307343, 0.14758361876010895, 0.1944001019001007, 0.25, 0.31283295154571533,
        0.35241639614105225, 0.40634220838546753, 0.5, 0.5, NAN
    ],
    "exp2m1": [
        -0.75, -0.6464465856552124, -0.5, -0.405396431684494, -0.2928932309150696,
        -0.15910358726978302, -0.0, 0.0, 0.071773461997509, 0.18920712172985077,
        0.4142135679721832, 0.624504804611206, 1.0, 1.8284270763397217, 3.0, 8.84915542602539,
        INF, INF, NAN
    ],
    "log2p1": [
        NAN, NAN, -INF, -2.0, -1.0, -0.41503751277923584, -0.0, 0.0, 0.137503519654274,
        0.32192808389663696, 0.5849624872207642, 0.7655347585678101, 1.0, 1.3219281435012817,
        1.5849624872207642, 2.104336738586426, 33.21928024291992, INF, NAN
    ],
    "one_minus_square": [
        -3.0, -1.25, 0.0, 0.4375, 0.75, 0.9375, 1.0, 1.0, 0.9900000095367432, 0.9375, 0.75,
        0.5100000500679016, 0.0, -1.25, -3.0, -9.890000343322754, -1.0000000200408773e+20, -INF,
        NAN
    ],
    "atan2pi": [
        NAN, -0.0, -3.183098923331684e-11, -0.07113481312990189, -0.07797913253307343,
        -0.0525684580206871, -0.0, 0.0, 0.06283295899629593, 0.25, 0.43716704845428467, 0.5, 0.5,
        0.5525684356689453, 0.5779791474342346, 0.5711348056793213, 0.5, 0.5, NAN
    ],
}
_JAX_GRAD_AT_0_3 = {
    "sinpi": 1.8465818166732788,
    "cospi": -2.5416018962860107,
    "tanpi": 9.093111991882324,
    "asinpi": 0.3336794376373291,
    "acospi": -0.3336794376373291,
    "atanpi": 0.29202741384506226,
    "exp2m1": 0.8533642888069153,
    "log2p1": 1.1097655296325684,
    "one_minus_square": -0.6000000238418579,
}
_JAX_GRAD_ATAN2PI = [-0.3841670751571655, -0.1646430492401123]  # at (0.3, -0.7)


def _assert_like_jax(got, want):
  """Within 2 ulp of JAX (JAX's float32 kernels are not correctly rounded; ember's are),
  the same NaNs, infinities and signs of zero."""
  got, want = np.asarray(got), np.asarray(want, np.float32)
  np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
  ok = ~np.isnan(want)
  np.testing.assert_allclose(got[ok], want[ok], rtol=2.5e-7, atol=0)
  zero = ok & (want == 0)
  np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


@pytest.mark.parametrize("name", _UNARY + ["atan2pi"])
def test_values_match_jax_eager_and_jit(name):
  f = getattr(lax, name)
  args = (_X,) if name != "atan2pi" else (_X, _X[::-1])
  _assert_like_jax(f(*args), _JAX[name])
  _assert_like_jax(ember.jit(f)(*args), _JAX[name])
  _assert_like_jax([f(*(a[i] for a in args)) for i in range(len(_X))], _JAX[name])  # scalars


_F64 = {  # NumPy float64 definitions on reduced arguments
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x),
    "tanpi": lambda x: np.tan(np.pi * x), "asinpi": lambda x: np.arcsin(x) / np.pi,
    "acospi": lambda x: np.arccos(x) / np.pi, "atanpi": lambda x: np.arctan(x) / np.pi,
    "exp2m1": lambda x: np.expm1(x * np.log(2)), "log2p1": lambda x: np.log1p(x) / np.log(2),
    "one_minus_square": lambda x: 1 - x * x}


@pytest.mark.parametrize("name", _UNARY)
def test_float64_against_numpy(name):
  x = np.linspace(-0.95, 0.95, 41)
  with ember.enable_x64():
    got = ember.jit(getattr(lax, name))(x)
    assert got.dtype == np.float64
    # rtol: NumPy's f(pi * x) rounds pi * x, ~10 ulp near a zero of cos/tan (ember reduces
    # x exactly); a few ulp elsewhere
    np.testing.assert_allclose(got, _F64[name](x), rtol=1e-14, atol=1e-300)


def test_grads_match_jax_and_vmap():
  for name, want in _JAX_GRAD_AT_0_3.items():
    f = getattr(lax, name)
    np.testing.assert_allclose(ember.grad(f)(0.3), want, rtol=1e-6)
    np.testing.assert_allclose(ember.jit(ember.grad(f))(np.float32(0.3)), want, rtol=1e-6)
  np.testing.assert_allclose(ember.grad(lax.atan2pi, (0, 1))(0.3, -0.7), _JAX_GRAD_ATAN2PI,
                             rtol=1e-6)
  np.testing.assert_array_equal(ember.vmap(lax.sinpi)(_X[:6]), lax.sinpi(_X[:6]))
  # one_minus_square's derivative is -2x even where 1 - x and 1 + x round to 1
  with ember.enable_x64():
    assert ember.grad(lax.one_minus_square)(1e-300) == -2e-300


def test_float16_and_integer_dtypes():
  h = np.array([0.25, 0.5, 1.5], np.float16)
  out = lax.sinpi(h)
  assert out.dtype == np.float16
  np.testing.assert_array_equal(out, np.array([0.7071, 1.0, -1.0], np.float16))
  assert lax.one_minus_square(jnp.int32(3)) == -8
  with pytest.raises(TypeError, match="sinpi does not accept dtype int32"):
    lax.sinpi(jnp.int32(3))
  with pytest.raises(TypeError, match="exp2m1 does not accept dtype int32"):
    lax.exp2m1(jnp.int32(3))


def _mulhi_exact(x, y, bits):
  return np.array([(int(a) * int(b)) >> bits for a, b in zip(x, y)], dtype=object)


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64])
def test_mulhi_exact(dt):
  info = np.iinfo(dt)
  x = np.array([info.min, info.max, -7 if info.min else 7, 12345 % info.max, 1, 0], dt)
  y = np.array([info.max, info.max, info.max // 3, info.min, info.min, 5], dt)
  want = _mulhi_exact(x, y, np.dtype(dt).itemsize * 8).astype(dt)
  with ember.enable_x64():
    np.testing.assert_array_equal(lax.mulhi(x, y), want)
    if dt in (np.int32, np.int64):
      np.testing.assert_array_equal(ember.jit(lax.mulhi)(x, y), want)
  assert lax.mulhi(jnp.int32(-7), jnp.int32(1 << 30)) == -2            # as JAX
  # compiled without x64: the 64-bit product still exact
  np.testing.assert_array_equal(ember.jit(lax.mulhi)(np.array([-7, 5], np.int32),
                                                     np.array([1 << 30] * 2, np.int32)), [-2, 1])
  np.testing.assert_array_equal(ember.vmap(lax.mulhi)(np.array([5, -7], np.int32),
                                                      np.array([1 << 30, 2**31 - 1], np.int32)),
                                [1, -4])
  with pytest.raises(TypeError, match="mulhi does not accept dtype float32"):
    lax.mulhi(1.0, 2.0)


def test_fma_and_fmuladd_round_once():
  a, b, c = np.float32(1 + 2**-23), np.float32(1 - 2**-23), np.float32(-1)
  want = np.float32(-2.0**-46)        # exact; a * b rounds to 1 and a * b + c to 0
  for f in (lax.fma, lax.fmuladd, ember.jit(lax.fma), ember.jit(lax.fmuladd)):
    assert f(a, b, c) == want
  assert lax.fma(np.float32(1), 2.0, 3.0) == 5.0
  assert lax.fmuladd(np.float16(1.1), np.float16(2.3), np.float16(-0.7)) == np.float16(1.83)
  x = np.array([3.5, -0.5, 2.0], np.float32)
  np.testing.assert_array_equal(ember.vmap(lax.fmuladd)(x, x, x), [15.75, -0.25, 6.0])
  np.testing.assert_allclose(ember.grad(lax.fmuladd, (0, 1, 2))(2.0, 3.0, 4.0), (3., 2., 1.))
  assert str(ember.make_jaxpr(lambda x: lax.fmuladd(x, x, 1.0))(1.0)) == (
      "{ lambda ; a:f32[]. let b:f32[] = fmuladd a a 1.0:f32[] in (b,) }")
  with pytest.raises(TypeError, match="same dtypes"):
    lax.fma(1.0, 2, 3.0)


def test_polynomial():
  x = np.array([3.5, -0.5, 2.0], np.float32)
  np.testing.assert_array_equal(lax.polynomial(x, [1., 2., 3.]), [44.75, 0.75, 17.])
  np.testing.assert_array_equal(ember.jit(lambda x: lax.polynomial(x, [1., 2., 3.]))(x),
                                [44.75, 0.75, 17.])
  np.testing.assert_array_equal(ember.vmap(lambda x: lax.polynomial(x, [1., 2., 3.]))(x),
                                [44.75, 0.75, 17.])
  assert lax.polynomial(jnp.int32(3), [jnp.int32(1), jnp.int32(2)]) == 7
  # JAX's values: d/dx = c + 6x, d/dc = x
  g = ember.grad(lambda x, c: lax.polynomial(x, [1., c, 3.]), (0, 1))(2., 5.)
  np.testing.assert_allclose(g, (17., 2.))
  np.testing.assert_allclose(ember.jit(ember.grad(lambda x: lax.polynomial(x, [1., 2., 3.])))(
      2.), 14.)
  np.testing.assert_allclose(ember.jacfwd(lambda c: lax.polynomial(np.array([1., 2.], np.float32),
                                                                    [c, 2., 3.]))(0.5), [1., 1.])
  with pytest.raises(ValueError, match="at least one coefficient"):
    lax.polynomial(x, [])


def test_total_order_comparisons():
  a = np.array([0., -0., np.nan, -np.nan, 1.], np.float32)
  b = np.array([-0., 0., np.inf, -np.inf, 2.], np.float32)
  for bind in (lambda p, x, y: p.bind(x, y), lambda p, x, y: ember.jit(p.bind)(x, y)):
    np.testing.assert_array_equal(bind(lax.eq_to_p, a, a), [True] * 5)
    np.testing.assert_array_equal(bind(lax.eq_to_p, a, b), [False] * 5)
    np.testing.assert_array_equal(bind(lax.lt_to_p, a, b), [False, True, False, True, True])
    np.testing.assert_array_equal(bind(lax.le_to_p, b, a), [True, False, True, False, False])
  assert lax.lt_to_p.bind(jnp.int32(-3), jnp.int32(2))

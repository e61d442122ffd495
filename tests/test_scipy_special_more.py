"""ember.scipy.special's incomplete gamma/beta, polygamma, zeta and order 0/1 Bessel functions
and the lax functions under them (lax.igamma, igammac, igamma_grad_a, random_gamma_grad,
betainc, polygamma, zeta, bessel_i1e) vs SciPy in float64, eager, under jit and vmap, their
derivatives, and the edge values real JAX 0.12.1 gives (recorded below)."""
import numpy as np
import pytest

import ember
import ember.lax as lax
import ember.numpy as jnp
import ember.scipy.special as sp
from ember._src.base.config import enable_x64

ss = pytest.importorskip("scipy.special")

nan, inf = np.nan, np.inf
# float64: the series and continued fractions stop at a relative change below eps and the
# prefactor x^a e^-x / Gamma(a) goes through exp(lgamma) (a few ulps of a ~100 exponent),
# so ~1e-13 relative is what is achieved; 1e-10 leaves headroom for large a and x.
RTOL64, ATOL64 = 1e-10, 1e-14
# float32: the same algorithms at eps = 1.2e-7, with exp of a log-prefactor of magnitude up
# to ~100 (its rounding alone is ~100 * eps relative).
RTOL32, ATOL32 = 3e-5, 1e-6


@pytest.fixture
def x64():
  with enable_x64(True):
    yield


def both(f, *args):
  """f's result eager and under jit."""
  return [np.asarray(f(*args)), np.asarray(ember.jit(f)(*args))]


def close(out, expected, rtol=RTOL64, atol=ATOL64):
  np.testing.assert_allclose(np.asarray(out, np.float64), np.asarray(expected, np.float64),
                             rtol=rtol, atol=atol, equal_nan=True)


A_GRID, X_GRID = [g.ravel() for g in np.meshgrid(
    [0.01, 0.1, 0.5, 1.0, 2.5, 7.0, 20.0, 80.0, 150.0],
    [1e-5, 0.05, 0.5, 1.0, 1.5, 3.0, 9.0, 30.0, 100.0, 200.0])]


# --- incomplete gamma -----------------------------------------------------------------------

@pytest.mark.parametrize("name, ref", [("gammainc", ss.gammainc), ("gammaincc", ss.gammaincc)])
def test_incomplete_gamma_float64(x64, name, ref):
  for out in both(getattr(sp, name), A_GRID, X_GRID):
    assert out.dtype == np.float64
    close(out, ref(A_GRID, X_GRID))


@pytest.mark.parametrize("name, ref", [("gammainc", ss.gammainc), ("gammaincc", ss.gammaincc)])
def test_incomplete_gamma_float32(name, ref):
  a, x = A_GRID.astype(np.float32), X_GRID.astype(np.float32)
  for out in both(getattr(sp, name), a, x):
    assert out.dtype == np.float32
    close(out, ref(a.astype(np.float64), x.astype(np.float64)), RTOL32, ATOL32)


def test_incomplete_gamma_edges_match_jax(x64):
  # a, x = 0/0, 0/1, 1/0, -1/1, 1/-1, inf/1, inf/inf, 2/inf, nan/1, 1/nan, 3/1e-300
  a = np.array([0., 0., 1., -1., 1., inf, inf, 2., nan, 1., 3.])
  x = np.array([0., 1., 0., 1., -1., 1., inf, inf, 1., nan, 1e-300])
  p = [nan, 1.0, 0.0, nan, nan, 0.0, nan, 1.0, nan, nan, 0.0]   # JAX 0.12.1
  for out in both(sp.gammainc, a, x):
    close(out, p)
  for out in both(sp.gammaincc, a, x):
    close(out, 1 - np.array(p))
  grad_a = [nan, nan, 0.0, nan, nan, nan, nan, nan, nan, nan, 0.0]   # JAX 0.12.1
  for out in both(lax.igamma_grad_a, a, x):
    close(out, grad_a)


def test_incomplete_gamma_grads(x64):
  a, x = A_GRID[X_GRID < 150], X_GRID[X_GRID < 150]
  da, dx = ember.vmap(ember.grad(sp.gammainc, argnums=(0, 1)))(a, x)
  # d/dx: the gamma density; d/da: central differences of SciPy (h = 1e-6: error ~1e-10)
  close(dx, np.exp((a - 1) * np.log(x) - x - ss.gammaln(a)), 1e-10, 1e-300)
  h = 1e-6 * np.maximum(a, 1)
  fd = (ss.gammainc(a + h, x) - ss.gammainc(a - h, x)) / (2 * h)
  close(da, fd, 1e-5, 1e-9)
  dqa, dqx = ember.vmap(ember.grad(sp.gammaincc, argnums=(0, 1)))(a, x)
  close(dqa, -np.asarray(da), 1e-12, 1e-300)
  close(dqx, -np.asarray(dx), 1e-12, 1e-300)
  close(both(lax.igamma_grad_a, a, x)[1], da, 1e-12, 1e-300)


def test_incomplete_gamma_vmap_and_broadcast(x64):
  a = np.array([0.5, 2.0, 9.0])
  x = np.array([[0.3], [4.0]])
  close(sp.gammainc(a, x), ss.gammainc(a, x))
  close(ember.vmap(sp.gammainc, in_axes=(None, 0))(a, x), ss.gammainc(a, x))
  close(ember.jit(ember.vmap(sp.gammaincc, in_axes=(0, None)))(a, 1.5), ss.gammaincc(a, 1.5))


def test_random_gamma_grad(x64):
  # d sample / d a of Gamma(a) sampling: -(dP/da) / (dP/dx)
  a, x = np.array([0.3, 1.0, 4.0, 20.0]), np.array([0.2, 2.0, 3.0, 25.0])
  dens = np.exp((a - 1) * np.log(x) - x - ss.gammaln(a))
  h = 1e-6 * a
  dpda = (ss.gammainc(a + h, x) - ss.gammainc(a - h, x)) / (2 * h)
  close(lax.random_gamma_grad(a, x), -dpda / dens, 1e-5)


def test_lax_rejects_integer_operands():
  with pytest.raises(TypeError, match="igamma does not accept dtype int"):
    lax.igamma(np.int32(1), 2.0)
  with pytest.raises(TypeError):
    lax.igammac(1, 2.0)


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_narrow_floats_compute_in_float32(dtype):
  a, x = jnp.array([0.5, 3.0], dtype), jnp.array([1.0, 2.0], dtype)
  out = sp.gammainc(a, x)
  assert out.dtype == dtype
  close(out, ss.gammainc([0.5, 3.0], [1.0, 2.0]), 1e-2)   # 8 / 11 mantissa bits
  assert sp.i1(jnp.asarray(2.0, dtype)).dtype == dtype


def test_integer_inputs_promote(x64):
  assert sp.gammainc(1, 2).dtype == np.float64
  assert sp.gammainc(jnp.float32(1), 2).dtype == np.float32
  assert sp.i0e(1).dtype == np.float64


# --- incomplete beta ------------------------------------------------------------------------

def test_betainc_float64_and_float32(x64):
  rng = np.random.RandomState(0)
  a = np.exp(rng.uniform(-3, 4, 60))
  b = np.exp(rng.uniform(-3, 4, 60))
  x = rng.uniform(0, 1, 60)
  ref = ss.betainc(a, b, x)
  for out in both(sp.betainc, a, b, x):
    close(out, ref, 1e-10, 1e-14)
  with enable_x64(False):
    out32 = sp.betainc(a.astype(np.float32), b.astype(np.float32), x.astype(np.float32))
    assert out32.dtype == np.float32
    # a continued fraction at eps32 and a prefactor exp(a log x + b log1p(-x) - lbeta)
    close(out32, ss.betainc(*(v.astype(np.float32).astype(np.float64) for v in (a, b, x))),
          2e-4, 2e-6)


def test_betainc_edges_match_jax(x64):
  a = np.array([0., 1., 2., 0., -1., inf, 2., 1.])
  b = np.array([1., 0., 3., 0., 1., 1., inf, 1.])
  x = np.array([0.5, 0.5, 0., .5, .5, .5, .5, 1.])
  expected = [1.0, 0.0, 0.0, nan, nan, 0.0, 1.0, 1.0]   # JAX 0.12.1
  for out in both(sp.betainc, a, b, x):
    close(out, expected)
  close(sp.betainc(2.0, 3.0, np.array([-0.1, 1.1, nan])), [nan, nan, nan])


def test_betainc_grad(x64):
  a, b, x = np.array([0.5, 2.0, 7.0]), np.array([1.5, 3.0, 0.7]), np.array([0.2, 0.5, 0.9])
  g = ember.vmap(ember.grad(sp.betainc, argnums=2))(a, b, x)
  close(g, x ** (a - 1) * (1 - x) ** (b - 1) / ss.beta(a, b), 1e-10)
  with pytest.raises(ValueError, match="Betainc gradient with respect to a and b"):
    ember.grad(sp.betainc)(1.0, 2.0, 0.5)


# --- polygamma and zeta ---------------------------------------------------------------------

def test_polygamma(x64):
  m = np.repeat(np.arange(5), 6)
  x = np.tile([0.01, 0.7, 2.0, 13.5, 120.0, -1.5], 5)
  for out in both(sp.polygamma, m, x):
    close(out, ss.polygamma(m, x), 1e-11)
  with enable_x64(False):
    out32 = sp.polygamma(m.astype(np.int32), x.astype(np.float32))
    assert out32.dtype == np.float32
    close(out32, ss.polygamma(m, x.astype(np.float32).astype(np.float64)), 1e-4)


def test_polygamma_edges_match_jax(x64):
  m = np.array([1, 2, 3, 4, 2, 0, -1, 1, 0, 1])
  x = np.array([-1., -1., -1., -2., 0., -1., 2., nan, 0., 0.])
  expected = [inf, nan, inf, nan, nan, nan, nan, nan, -inf, inf]   # JAX 0.12.1
  close(sp.polygamma(m, x), expected)
  with pytest.raises(ValueError, match="must be of integer type"):
    sp.polygamma(1.0, 2.0)


def test_polygamma_grad(x64):
  m, x = np.array([0, 1, 3]), np.array([0.5, 2.0, 7.0])
  g = ember.vmap(ember.grad(lambda m, x: sp.polygamma(m, x), argnums=1))(m, x)
  close(g, ss.polygamma(m + 1, x), 1e-11)


def test_zeta(x64):
  x = np.repeat([1.01, 1.5, 2.0, 3.0, 7.5, 30.0], 5)
  q = np.tile([0.02, 0.5, 1.0, 6.0, 1e4], 6)
  for out in both(sp.zeta, x, q):
    close(out, ss.zeta(x, q), 1e-12)
  # q < 0 (not a pole) with an integer x
  close(sp.zeta(np.array([3., 3., 4.]), np.array([-2.5, -0.5, -1.5])),
        ss.zeta(np.array([3., 3., 4.]), np.array([-2.5, -0.5, -1.5])), 1e-12)
  with pytest.raises(NotImplementedError, match="Riemann zeta"):
    sp.zeta(2.0)


def test_zeta_edges_match_jax(x64):
  x = np.array([1., 0.5, 2., 2., 2.5, 3., nan, inf, 2., 3., 3., 5.])
  q = np.array([1., 1., 0., -2., -1.5, -1.5, 1., 2., inf, -1., 0., -1.])
  expected = [inf, nan, inf, inf, nan, 0.11810202582086413, nan, nan, 0.0,
              nan, nan, nan]   # JAX 0.12.1
  for out in both(sp.zeta, x, q):
    close(out, expected, 1e-12)


def test_zeta_grads(x64):
  x, q = np.array([1.5, 3.0, 6.0]), np.array([0.3, 2.0, 11.0])
  dx, dq = ember.vmap(ember.grad(sp.zeta, argnums=(0, 1)))(x, q)
  close(dq, -x * ss.zeta(x + 1, q), 1e-10)
  h = 1e-6
  close(dx, (ss.zeta(x + h, q) - ss.zeta(x - h, q)) / (2 * h), 1e-6)
  close(ember.grad(lambda x: sp.zeta(x, 2.0))(3.0), -0.19812624288563682, 1e-12)   # JAX


# --- Bessel functions of orders 0 and 1 -----------------------------------------------------

BESSEL_X = np.array([0., 1e-9, 0.3, -1.0, 2.5, 7.9, 8.1, -14.0, 29.0, 32.0, 100.0, -700.0])


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_float64(x64, name):
  for out in both(getattr(sp, name), BESSEL_X):
    assert out.dtype == np.float64
    close(out, getattr(ss, name)(BESSEL_X), 1e-13, 1e-300)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_float32(name):
  x = BESSEL_X[np.abs(BESSEL_X) < 80].astype(np.float32)   # I(x) overflows float32 past ~88
  for out in both(getattr(sp, name), x):
    assert out.dtype == np.float32
    close(out, getattr(ss, name)(x.astype(np.float64)), 1e-5, 1e-30)   # a few eps32, exp


def test_bessel_edges_match_jax(x64):
  close(sp.i1e(np.array([0., -0., inf, -inf, nan, -2.])),
        [0.0, -0.0, 0.0, -0.0, nan, -0.21526928924893765])   # JAX 0.12.1
  close(sp.i1(np.array([800., -800., 0., nan])), [inf, -inf, 0.0, nan])
  close(sp.i0(np.array([800., -800.])), [inf, inf])
  close(sp.i0(np.array([709.5])), ss.i0(709.5), 1e-13)   # exp(|x|) alone would overflow


def test_bessel_grads(x64):
  x = np.array([1e-12, 0.4, -3.0, 12.0, 40.0])
  close(ember.vmap(ember.grad(sp.i0))(x), ss.i1(x), 1e-12, 1e-300)
  close(ember.vmap(ember.grad(sp.i1))(x), ss.i0(x) - ss.i1(x) / x, 1e-12, 1e-300)
  close(ember.vmap(ember.grad(sp.i1e))(x),
        ss.i0e(x) - ss.i1e(x) * (np.sign(x) + 1 / x), 1e-9, 1e-15)
  close(ember.vmap(ember.grad(sp.i0e))(x), ss.i1e(x) - np.sign(x) * ss.i0e(x), 1e-12, 1e-300)
  for f in (sp.i1, sp.i1e):
    close(ember.grad(f)(0.0), 0.5)   # JAX: the limit, not 0/0
  close(ember.grad(sp.i0)(0.0), 0.0)
  close(ember.grad(ember.grad(sp.i1))(0.5), (ss.i1(0.5 + 1e-5) + ss.i1(0.5 - 1e-5)
                                             - 2 * ss.i1(0.5)) / 1e-10, 1e-5)


# --- erfcx ----------------------------------------------------------------------------------

ERFCX_X = np.array([-26.0, -3.0, -0.5, 0.0, 0.3, 1.0, 2.0, 4.99, 5.0, 5.1, 7.0, 30.0, 1e5,
                    1e200])


def test_erfcx_float64_and_float32(x64):
  for out in both(sp.erfcx, ERFCX_X):
    assert out.dtype == np.float64
    close(out, ss.erfcx(ERFCX_X), 1e-14, 0)   # erfc and exp of an exactly split x^2
  with enable_x64(False):
    x = ERFCX_X[(ERFCX_X > -9) & (ERFCX_X < 1e30)].astype(np.float32)
    out = sp.erfcx(x)
    assert out.dtype == np.float32
    close(out, ss.erfcx(x.astype(np.float64)), 1e-6, 0)   # a few eps32


def test_erfcx_edges_match_jax(x64):
  close(sp.erfcx(np.array([-30., inf, -inf, nan, 0., -27.])),
        [inf, 0., inf, nan, 1., inf])   # JAX 0.12.1
  close(ember.grad(sp.erfcx)(inf), 0.0)
  close(ember.grad(sp.erfcx)(-inf), -inf)
  with pytest.raises(NotImplementedError, match="complex"):
    sp.erfcx(np.complex128(1 + 1j))
  assert sp.erfcx(jnp.bfloat16(2.0)).dtype == jnp.bfloat16


def test_erfcx_grads(x64):
  x = ERFCX_X[:12]
  # erfcx' = 2 x erfcx - 2 / sqrt(pi): in float64 SciPy this cancels ~2 x^2 ulps (x <= 30)
  close(ember.vmap(ember.grad(sp.erfcx))(x), 2 * x * ss.erfcx(x) - 2 / np.sqrt(np.pi), 1e-11)
  for v in (1.0, 4.9, 5.0, 7.0):   # erfcx'' = 2 erfcx + 2 x erfcx'
    d1 = 2 * v * ss.erfcx(v) - 2 / np.sqrt(np.pi)
    close(ember.grad(ember.grad(sp.erfcx))(v), 2 * ss.erfcx(v) + 2 * v * d1, 1e-9)


# --- exponential integrals ------------------------------------------------------------------

EXP_X = np.array([1e-8, 0.1, 0.9, 1.49, 1.5, 2.0, 5.0, 20.0, 39.0, 41.0, 100.0, 600.0, 700.0])


def test_exp1_expi_float64(x64):
  for out in both(sp.exp1, EXP_X):
    close(out, ss.exp1(EXP_X), 1e-14, 0)   # series cancel < 20 ulps below 1.5
  for out in both(sp.expi, -EXP_X):
    close(out, ss.expi(-EXP_X), 1e-14, 0)
  # Ei(x > 0): exp(x - log x) rounds ~x ulps of its argument (7e-14 at 700)
  for out in both(sp.expi, EXP_X):
    close(out, ss.expi(EXP_X), 2e-13, 0)


def test_exp1_expi_float32():
  x = EXP_X[EXP_X < 60].astype(np.float32)   # E1(100) and Ei(100) leave float32's range
  ref = x.astype(np.float64)
  close(sp.exp1(x), ss.exp1(ref), 5e-6, 0)   # the series cancels ~20 eps32 near 1.5
  close(sp.expi(x), ss.expi(ref), 5e-6, 0)
  assert sp.exp1(x).dtype == np.float32 and sp.expi(x).dtype == np.float32


def test_exp1_expi_edges_match_jax(x64):
  x = np.array([0., -0., -1., inf, -inf, nan, 1e-300, 800., -800.])
  close(sp.exp1(x), [inf, inf, nan, 0., nan, nan, 690.19831223, 0., nan], 1e-9)   # JAX
  close(sp.expi(x), [-inf, -inf, -0.21938393439552029, inf, -0.0, nan, -690.19831223, inf,
                     -0.0], 1e-9)   # JAX 0.12.1
  assert sp.exp1(1).dtype == np.float64
  assert sp.expi(jnp.float16(1.0)).dtype == np.float16


def test_exp1_expi_grads(x64):
  x = np.array([0.2, 1.0, 3.0, 50.0])
  close(ember.vmap(ember.grad(sp.exp1))(x), -np.exp(-x) / x, 1e-14, 0)
  close(ember.vmap(ember.grad(sp.expi))(x), np.exp(x) / x, 1e-14, 0)
  close(ember.vmap(ember.grad(sp.expi))(-x), np.exp(-x) / -x, 1e-14, 0)
  close(ember.grad(ember.grad(sp.exp1))(1.0), 2 * np.exp(-1.0), 1e-14)   # e^-x (1/x + 1/x^2)


def test_expn_float64(x64):
  # SciPy switches to a ~1e-7 uniform asymptotic expansion for n > 50: compare below that
  n, x = [g.ravel() for g in np.meshgrid([0, 1, 2, 3, 5, 10, 30, 50],
                                         [1e-6, 0.1, 0.9, 1.5, 1.6, 3.0, 10.0, 50.0, 300.0])]
  for out in both(sp.expn, n, x):
    close(out, ss.expn(n, x), 2e-14, 0)   # the series cancels ~30 ulps at x = 1.5
  # n = 100, x = 50: JAX 0.12.1 and quadrature of int_1^inf e^(-x t) t^-n dt agree
  close(sp.expn(100, 50.0), 1.2915478777847485e-24, 1e-14)
  close(sp.expn(1000, 0.9), ss.expn(1000, 0.9), 1e-14)


def test_expn_float32():
  n, x = np.array([0, 1, 2, 5, 20], np.float32), np.array([0.3, 1.2, 2.0, 7.0, 30.0], np.float32)
  out = sp.expn(n, x)
  assert out.dtype == np.float32
  close(out, ss.expn(n.astype(int), x.astype(np.float64)), 1e-5, 0)   # ~30 eps32 near 1.5


def test_expn_edges_match_jax(x64):
  n = np.array([0, 0, 1, 2, 3, -1, 2, 2, 2.5, 5, 2, 0, 50, 2])
  x = np.array([0., 1., 0., 0., 0., 1., -1., inf, 1., 1e-300, nan, 800., 1.2, 1e4])
  expected = [inf, 0.3678794411714423, inf, 1.0, 0.5, nan, nan, 0.0, 0.14849550677592194,
              0.25, nan, 0.0, 0.00599697394226555, 0.0]   # JAX 0.12.1 (n = 2.5 -> 2)
  for out in both(sp.expn, n, x):
    close(out, expected, 1e-13)


def test_expn_grads(x64):
  dx = lambda n, x: ember.grad(sp.expn, argnums=1)(n, x)
  close(dx(0.0, 1.0), -2 * np.exp(-1.0))     # -(x + 1) e^-x / x^2
  close(dx(3.0, 1.0), -ss.expn(2, 1.0))
  close(dx(2.0, 0.0), -inf)                  # JAX: -E_1(0)
  close(ember.grad(sp.expn)(2.0, 1.0), 0.0)  # no derivative in the order (JAX: zero)
  x = np.array([0.5, 2.0, 9.0])
  close(ember.vmap(ember.grad(lambda x: sp.expn(4, x)))(x), -ss.expn(3, x), 1e-13)


def test_expn_broadcasts_a_scalar_order(x64):
  x = np.array([[0.5, 2.0, 9.0]])
  for out in both(sp.expn, 3, x):
    assert out.shape == (1, 3)
    close(out, ss.expn(3, x), 1e-14)
  close(sp.expn(np.array([[1], [4]]), x), ss.expn(np.array([[1], [4]]), x), 1e-14)


def test_grads_under_jit(x64):
  da, dx = ember.jit(ember.grad(sp.gammainc, argnums=(0, 1)))(2.0, 3.0)
  close(da, -0.19742542, 1e-7)   # JAX 0.12.1 (printed to 8 digits)
  close(dx, 3.0 * np.exp(-3.0), 1e-13)
  close(ember.jit(ember.grad(sp.betainc, argnums=2))(2.0, 3.0, 0.4), 0.4 * 0.6 ** 2 * 12, 1e-13)
  close(ember.jit(ember.grad(sp.expn, argnums=1))(3.0, 1.0), -ss.expn(2, 1.0), 1e-13)
  close(ember.jit(ember.grad(sp.erfcx))(7.0), 14 * ss.erfcx(7.0) - 2 / np.sqrt(np.pi), 1e-11)

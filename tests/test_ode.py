"""jax.experimental.ode: odeint against analytic solutions, SciPy's solve_ivp and values real
JAX 0.12.1 produced; its adjoint gradient against analytic derivatives and JAX's; the
helpers against JAX's values."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import config
from ember.experimental import ode
from ember.experimental.ode import odeint


@pytest.fixture(autouse=True)
def x64():
  with config._override("jax_enable_x64", True):
    yield


def forced(y, t, k):
  return -k * y + jnp.sin(t)


Y0 = [1.0, 2.0]
T = np.linspace(0., 3., 5)
# real JAX 0.12.1: odeint(forced, Y0, T, 0.7)
JAX_YS = [[1.0, 2.0], [0.8177390112526235, 1.4092943750504954],
          [1.0059424761037399, 1.355880222909039], [1.1330695666243222, 1.340077124198381],
          [0.9353644540995031, 1.0578208849834843]]


def test_odeint_matches_jax_and_scipy():
  ys = odeint(forced, jnp.array(Y0), jnp.array(T), 0.7)
  assert ys.shape == (5, 2) and ys.dtype == np.float64
  np.testing.assert_allclose(ys, JAX_YS, rtol=1e-12)
  scipy_integrate = pytest.importorskip("scipy.integrate")
  ref = scipy_integrate.solve_ivp(lambda t, y: -0.7 * y + np.sin(t), (0, 3), Y0, t_eval=T,
                                  rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(ys, ref.y.T, rtol=1e-7)


def test_odeint_pytree_state_and_jit():
  def oscillator(state, t, w):   # x'' = -w^2 x as a dict state
    return {"x": state["v"], "v": -w ** 2 * state["x"]}
  t = jnp.linspace(0., 2., 4)
  run = ember.jit(lambda w: odeint(oscillator, {"x": 1.0, "v": 0.0}, t, w))
  out = run(1.5)
  np.testing.assert_allclose(out["x"], np.cos(1.5 * np.asarray(t)), rtol=1e-7, atol=1e-8)
  np.testing.assert_allclose(out["v"], -1.5 * np.sin(1.5 * np.asarray(t)), rtol=1e-7,
                             atol=1e-8)


def test_odeint_float32_and_vmap():
  with config._override("jax_enable_x64", False):
    t = jnp.linspace(0., 1., 3)
    ks = jnp.array([0.5, 1.0, 2.0], jnp.float32)
    ys = ember.vmap(lambda k: odeint(lambda y, t: -k * y, jnp.float32(1.0), t))(ks)
    assert ys.dtype == np.float32 and ys.shape == (3, 3)
    # f32 with the default tolerances (1.4e-8, below f32's eps): a few ulps of error
    np.testing.assert_allclose(ys, np.exp(-np.outer(ks, t)), rtol=2e-6)


def test_adjoint_gradients():
  # y' = -k y: y(t) = y0 exp(-k t); d/dk = -t y, d/dy0 = exp(-k t), d/dt = -k y
  t = jnp.array([0., 0.5, 1.5])
  def total(y0, k, t):   # k closed over: closure_convert makes it an argument of the vjp
    return odeint(lambda y, t: -k * y, y0, t).sum()
  gy0, gk, gt = ember.grad(total, argnums=(0, 1, 2))(2.0, 0.8, t)
  e = np.exp(-0.8 * np.asarray(t))
  np.testing.assert_allclose(gy0, e.sum(), rtol=1e-7)
  np.testing.assert_allclose(gk, (-np.asarray(t) * 2.0 * e).sum(), rtol=1e-7)
  np.testing.assert_allclose(gt[1:], -0.8 * 2.0 * e[1:], rtol=1e-7)
  np.testing.assert_allclose(gt[0], 0.8 * 2.0 * e[1:].sum(), rtol=1e-7)


def test_closure_and_hmax_mxstep():
  k = jnp.array(0.3)
  t = jnp.array([0., 1.])
  ys = odeint(lambda y, t: -k * y, 1.0, t, hmax=0.05)   # a closed-over array
  np.testing.assert_allclose(ys[-1], np.exp(-0.3), rtol=1e-8)
  short = odeint(lambda y, t: -k * y, 1.0, jnp.array([0., 10.]), mxstep=1)
  assert abs(float(short[-1]) - np.exp(-3.0)) > 1e-3   # one step cannot reach t = 10


def test_helpers_match_jax():
  f = lambda y, t: -0.7 * y + jnp.sin(t)   # noqa: E731
  y0 = jnp.array(Y0)
  f0 = f(y0, 0.)
  np.testing.assert_allclose(ode.initial_step_size(f, 0., y0, 4, 1.4e-8, 1.4e-8, f0),
                             0.010706226962054453, rtol=1e-12)
  y1, f1, err, k = ode.runge_kutta_step(f, y0, f0, 0.0, jnp.array(0.1))
  np.testing.assert_allclose(y1, [0.937275059121755, 1.8696688790620033], rtol=1e-14)
  np.testing.assert_allclose(err, [2.344682694527256e-09, 3.276112627727513e-09], rtol=1e-6)
  np.testing.assert_allclose(f1, f(y1, 0.1), rtol=1e-14)
  assert k.shape == (7, 2)
  got = [float(ode.optimal_step_size(0.1, r)) for r in (0.5, 3.0, jnp.array(0.))]
  np.testing.assert_allclose(got, [0.10338285194973316, 0.07224674055842077, 1.0], rtol=1e-14)
  np.testing.assert_allclose(ode.mean_error_ratio(jnp.array([1e-8, 2e-8]), 1e-6, 1e-6, y0, y1),
                             0.005892556509887896, rtol=1e-12)
  np.testing.assert_allclose(ode.abs2(jnp.array([3 + 4j])), [25.0])
  np.testing.assert_allclose(ode.abs2(jnp.array([-3.0])), [9.0])
  # the interpolant passes through y0, y_mid, y1 at s = 0, 1/2, 1 with the end slopes
  a, b, c, d, e = ode.fit_4th_order_polynomial(jnp.array(1.), jnp.array(2.), jnp.array(1.7),
                                               jnp.array(0.5), jnp.array(3.), jnp.array(0.5))
  p = np.array([a, b, c, d, e], float)
  np.testing.assert_allclose(np.polyval(p, [0., .5, 1.]), [1., 1.7, 2.], rtol=1e-14)
  np.testing.assert_allclose(np.polyval(np.polyder(p), [0., 1.]), [0.25, 1.5], rtol=1e-14)
  coeffs = ode.interp_fit_dopri(y0, y1, k, jnp.array(0.1))
  np.testing.assert_allclose(np.polyval(np.asarray(coeffs), 1.0), y1, rtol=1e-14)
  flat = ode.ravel_first_arg(lambda y, s: {"a": y["a"] * s}, lambda v: {"a": v})
  np.testing.assert_allclose(flat(jnp.array([1., 2.]), 3.), [3., 6.])


def test_errors():
  with pytest.raises(TypeError, match="t must be an array of floats"):
    odeint(lambda y, t: -y, 1.0, jnp.array([0, 1]))
  with pytest.raises(TypeError, match="odeint \\*args must be arrays or scalars"):
    odeint(lambda y, t, s: -y, 1.0, jnp.array([0., 1.]), "text")

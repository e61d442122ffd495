"""ember.scipy.stats.gaussian_kde against scipy.stats.gaussian_kde in float64 (evaluate, pdf,
logpdf, integrate_*), bandwidth options and weights, eager and jit (a pytree argument),
resample against values real JAX 0.12.1 drew (the same threefry stream), errors."""
import numpy as np
import pytest

import ember
from ember.scipy.stats import gaussian_kde

st = pytest.importorskip("scipy.stats")   # (the oldest-dependencies venv has no SciPy)

RNG = np.random.default_rng(0)
D1, D2, W = RNG.normal(size=30), RNG.normal(size=(2, 40)), RNG.uniform(size=40)
P1, P2 = np.linspace(-3, 3, 7), RNG.normal(size=(2, 5))
# jax.scipy.stats.gaussian_kde(D2, weights=W).resample(jax.random.key(3), (4,)), x64, 0.12.1
RESAMPLE_JAX = np.array([[1.5966675707, 0.0777109288, 0.3733089922, -1.3758948922],
                         [-0.3071351253, -0.1885517205, -0.8765846718, -1.2632672317]])


def close(a, b, tol=1e-12):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


CASES = [(D1, P1, {}, {}), (D2, P2, {}, {}),
         (D2, P2, dict(bw_method="silverman"), dict(bw_method="silverman")),
         (D2, P2, dict(bw_method=0.4, weights=W), dict(bw_method=0.4, weights=W)),
         (D1, P1, dict(bw_method=lambda kde: 0.3), dict(bw_method=0.3))]


@pytest.mark.parametrize("data,points,kw,scipy_kw", CASES)
def test_matches_scipy(data, points, kw, scipy_kw):
  with ember.enable_x64():
    ours, ref = gaussian_kde(data, **kw), st.gaussian_kde(data, **scipy_kw)
    close(ours.evaluate(points), ref.evaluate(points))
    close(ours.pdf(points), ref.pdf(points))
    close(ours(points), ref(points))
    close(ours.logpdf(points), ref.logpdf(points))
    close(ours.covariance, ref.covariance)
    close(ours.neff, ref.neff)
    mean, cov = np.zeros(ours.d), 0.5 * np.eye(ours.d)
    close(ours.integrate_gaussian(mean, cov), ref.integrate_gaussian(mean, cov))
    other = data[..., :20]
    close(ours.integrate_kde(gaussian_kde(other)), ref.integrate_kde(st.gaussian_kde(other)))
    if ours.d == 1:
      close(ours.integrate_box_1d(-0.5, 1.0), ref.integrate_box_1d(-0.5, 1.0))


def test_jit_float32_and_resample():
  kde32 = gaussian_kde(D2.astype(np.float32))
  assert kde32.evaluate(P2).dtype == np.float32
  close(ember.jit(lambda k, p: k.logpdf(p))(kde32, P2.astype(np.float32)),
        st.gaussian_kde(D2).logpdf(P2), 2e-5)   # exp/log of f32 squared distances
  with ember.enable_x64():
    kde = gaussian_kde(D2, weights=W)
    close(kde.resample(ember.random.key(3), (4,)), RESAMPLE_JAX, 1e-9)
    assert kde.resample(ember.random.key(0), (2, 3)).shape == (2, 2, 3)


def test_errors():
  kde = gaussian_kde(D2)
  with pytest.raises(ValueError, match="points have dimension"):
    kde.evaluate(np.ones((3, 4)))
  with pytest.raises(ValueError, match="1D"):
    kde.integrate_box_1d(0.0, 1.0)
  with pytest.raises(NotImplementedError):
    kde.integrate_box(np.zeros(2), np.ones(2))
  with pytest.raises(NotImplementedError):
    kde.set_bandwidth("scott")
  with pytest.raises(ValueError, match="bw_method"):
    gaussian_kde(D1, bw_method="bogus")
  with pytest.raises(ValueError, match="multiple elements"):
    gaussian_kde(np.ones(1))
  with pytest.raises(ValueError, match="length n"):
    gaussian_kde(D1, weights=np.ones(3))
  with pytest.raises(NotImplementedError, match="complex"):
    gaussian_kde(D1 + 1j)

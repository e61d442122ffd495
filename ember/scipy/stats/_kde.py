"""ember.scipy.stats.gaussian_kde (jax.scipy.stats.gaussian_kde): a Gaussian kernel density
estimate with Scott's or Silverman's bandwidth, a scalar factor or a callable; a pytree (its
arrays are the leaves), so it passes through jit and vmap. As in JAX, integrate_box and
set_bandwidth raise NotImplementedError (only 1-d boxes; no changing the bandwidth)."""
from __future__ import annotations

from functools import partial

import numpy as np

import ember.numpy as jnp
import ember.random as random
import ember.scipy.linalg as linalg
from ember.scipy import special
from ember._src.base import dtypes
from ember._src.base.tree_util import register_pytree_node_class
from ember._src.driver.jit import jit
from ember._src.library.numpy import util
from ember._src.transforms.batching import vmap

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:
  """Gaussian kernel density estimator (scipy.stats.gaussian_kde). dataset: (n,) or (d, n);
  bw_method: None/'scott', 'silverman', a scalar factor, or a callable of the estimator;
  weights: (n,) observation weights."""
  __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

  def __init__(self, dataset, bw_method=None, weights=None):
    util.check_arraylike("gaussian_kde", dataset)
    dataset = jnp.atleast_2d(dataset)
    if dtypes.issubdtype(dataset.dtype, np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not dataset.size > 1:
      raise ValueError("`dataset` input should have multiple elements.")
    d, n = dataset.shape
    if weights is None:
      (dataset,) = util.promote_dtypes_inexact(dataset)
      weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
    else:
      util.check_arraylike("gaussian_kde", weights)
      dataset, weights = util.promote_dtypes_inexact(dataset, jnp.asarray(weights))
      weights = jnp.atleast_1d(weights)
      weights = weights / jnp.sum(weights)
      if weights.ndim != 1:
        raise ValueError("`weights` input should be one-dimensional.")
      if len(weights) != n:
        raise ValueError("`weights` input should be of length n")
    self._set("dataset", dataset)
    self._set("weights", weights)
    neff = self._set("neff", 1 / jnp.sum(weights ** 2))
    factor = self._bandwidth_factor("scott" if bw_method is None else bw_method, neff, d)
    data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=True, bias=False, aweights=weights))
    self._set("covariance", data_cov * factor ** 2)
    self._set("inv_cov", jnp.linalg.inv(data_cov) / factor ** 2)

  def _bandwidth_factor(self, bw_method, neff, d):
    if isinstance(bw_method, str) and bw_method == "scott":
      return jnp.power(neff, -1.0 / (d + 4))
    if isinstance(bw_method, str) and bw_method == "silverman":
      return jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
    if jnp.isscalar(bw_method) and not isinstance(bw_method, str):
      return bw_method
    if callable(bw_method):
      return bw_method(self)
    raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")

  def _set(self, name, value):
    object.__setattr__(self, name, value)
    return value

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    del aux_data
    kde = cls.__new__(cls)
    for name, value in zip(cls.__slots__, children):
      kde._set(name, value)
    return kde

  @property
  def d(self):
    return self.dataset.shape[0]

  @property
  def n(self):
    return self.dataset.shape[1]

  def evaluate(self, points):
    """The estimated density at points ((d, m), or (m,) when d == 1)."""
    util.check_arraylike("evaluate", points)
    points = self._as_points(points)
    return _kernel_sum(False, self.dataset.T, self.weights, points.T, self.inv_cov)

  __call__ = evaluate
  pdf = evaluate

  def logpdf(self, x):
    """log of the estimated density, summed in log space (no underflow far out)."""
    util.check_arraylike("logpdf", x)
    x = self._as_points(x)
    return _kernel_sum(True, self.dataset.T, self.weights, x.T, self.inv_cov)

  def integrate_gaussian(self, mean, cov):
    """The integral of the density times a Gaussian N(mean, cov)."""
    mean = jnp.atleast_1d(jnp.squeeze(mean))
    cov = jnp.atleast_2d(cov)
    if mean.shape != (self.d,):
      raise ValueError(f"mean does not have dimension {self.d}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"covariance does not have dimension {self.d}")
    chol = linalg.cho_factor(self.covariance + cov)
    norm = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
    return _gaussian_overlap(chol, norm, self.dataset, self.weights, mean)

  def integrate_box_1d(self, low, high):
    """The probability mass between low and high (1-d estimates only)."""
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    return _box_1d(self, low, high)

  def integrate_kde(self, other):
    """The integral of the product of this density and another estimate's."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    chol = linalg.cho_factor(self.covariance + other.covariance)
    norm = 1.0 / (jnp.sqrt(2 * np.pi) ** self.d * jnp.prod(jnp.diag(chol[0])))
    small, large = (self, other) if self.n < other.n else (other, self)
    overlap = vmap(partial(_gaussian_overlap, chol, norm, large.dataset, large.weights),
                   in_axes=1)(small.dataset)
    return jnp.sum(overlap * small.weights)

  def resample(self, key, shape=()):
    """(d,) + shape samples from the estimate: a data point drawn by weight plus kernel
    noise."""
    return _resample(self, key, shape)

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    """Not provided (as in JAX): only 1-d boxes, through integrate_box_1d."""
    del low_bounds, high_bounds, maxpts
    raise NotImplementedError("only 1D box integrations are supported; use "
                              "`integrate_box_1d`")

  def set_bandwidth(self, bw_method=None):
    """Not provided (as in JAX): the bandwidth is fixed at construction."""
    del bw_method
    raise NotImplementedError("dynamically changing the bandwidth method is not supported")

  def _as_points(self, points):
    if dtypes.issubdtype(jnp.asarray(points).dtype, np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex coordinates")
    points = jnp.atleast_2d(points)
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        return jnp.reshape(points, (self.d, 1))
      raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    return points


@jit
def _box_1d(kde, low, high):
  sigma = jnp.squeeze(jnp.sqrt(kde.covariance))
  low = jnp.squeeze((low - kde.dataset) / sigma)
  high = jnp.squeeze((high - kde.dataset) / sigma)
  return jnp.sum(kde.weights * (special.ndtr(high) - special.ndtr(low)))


@partial(jit, static_argnames=("shape",))
def _resample(kde, key, shape=()):
  ind_key, eps_key = random.split(key)
  ind = random.choice(ind_key, kde.n, shape=shape, p=kde.weights)
  eps = random.multivariate_normal(eps_key, jnp.zeros(kde.d, kde.covariance.dtype),
                                   kde.covariance, shape=shape, dtype=kde.dataset.dtype)
  # (JAX's .T here breaks batch shapes of rank > 1; moving the last axis is the documented
  # (d,) + shape, the same values for rank <= 1)
  return kde.dataset[:, ind] + jnp.moveaxis(eps, -1, 0)


def _gaussian_overlap(chol, norm, target, weights, mean):
  diff = target - mean[:, None]
  arg = 0.5 * jnp.sum(diff * linalg.cho_solve(chol, diff), axis=0)
  return norm * jnp.sum(jnp.exp(-arg) * weights)


@partial(jit, static_argnums=0)
def _kernel_sum(in_log, points, weights, xi, precision):
  """sum_j w_j N(xi; points_j, precision^-1) for each row of xi (its log when in_log):
  both sets whitened by precision's Cholesky factor, then squared distances."""
  points, weights, xi, precision = util.promote_dtypes_inexact(points, weights, xi, precision)
  d = points.shape[1]
  if xi.shape[1] != d:
    raise ValueError("points and xi must have same trailing dim")
  if precision.shape != (d, d):
    raise ValueError("precision matrix must match data dims")
  whitening = linalg.cholesky(precision, lower=True)
  points, xi = jnp.dot(points, whitening), jnp.dot(xi, whitening)
  log_norm = jnp.sum(jnp.log(jnp.diag(whitening))) - 0.5 * d * np.log(2 * np.pi)
  sq = jnp.sum(jnp.square(xi[:, None, :] - points[None, :, :]), axis=-1)   # (m, n)
  arg = log_norm - 0.5 * sq
  if in_log:
    return special.logsumexp(jnp.log(weights)[None, :] + arg, axis=1)
  return jnp.sum(weights[None, :] * jnp.exp(arg), axis=1)

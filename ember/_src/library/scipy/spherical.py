"""jax.scipy.special.sph_harm_y: spherical harmonics Y_n^m(theta, phi) (theta the polar,
phi the azimuthal angle), from the fully normalized associated Legendre functions of
cos(theta) (Condon-Shortley phase included) computed, as JAX 0.12 does, by the recurrences
P_m^m = -sqrt(1 + 1/(2m)) sin(theta) P_{m-1}^{m-1}, P_m^{m+1} = sqrt(2m + 3) x P_m^m and
P_l^m = d0 x P_{l-1}^m - d1 P_{l-2}^m, for every order up to the static n_max; negative
orders by Y_n^-m = (-1)^m conj(Y_n^m)."""
from __future__ import annotations

from functools import partial

import numpy as np

from ember._src import core
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation, util
from ember._src.library.numpy.logic import where
from ember._src.library.numpy.reductions import aval
from ember._src.library.numpy.shape import stack

__all__ = ["sph_harm_y"]


def _recurrence_coefficients(l_max: int):
  """d0[m, l], d1[m, l] of the three-term recurrence in l (0 where it does not apply)."""
  m, l = np.meshgrid(np.arange(l_max + 1.0), np.arange(l_max + 1.0), indexing="ij")
  with np.errstate(divide="ignore", invalid="ignore"):
    d0 = np.sqrt((4.0 * l * l - 1.0) / (l * l - m * m))
    d1 = np.sqrt(((2.0 * l + 1.0) * ((l - 1.0) ** 2 - m * m))
                 / ((2.0 * l - 3.0) * (l * l - m * m)))
  applies = m <= l - 2
  return np.where(applies, d0, 0.0), np.where(applies, d1, 0.0)


def _normalized_legendre(l_max: int, x):
  """P[m, l, i]: the fully normalized associated Legendre functions at x[i]."""
  dt = aval(x).dtype
  sin = lax.sqrt(1.0 - x * x)
  first = creation.full(aval(x).shape, 0.5 / np.sqrt(np.pi), dt)
  diag = [first]   # P_m^m
  for m in range(1, l_max + 1):
    diag.append(diag[-1] * sin * -np.sqrt(1.0 + 0.5 / m))
  zeros = lax.full_like(x, 0.0)
  d0, d1 = _recurrence_coefficients(l_max)
  columns = []   # columns[l][m]
  for l in range(l_max + 1):
    col = []
    for m in range(l_max + 1):
      if m > l:
        col.append(zeros)
      elif m == l:
        col.append(diag[m])
      elif m == l - 1:
        col.append(np.sqrt(2.0 * m + 3.0) * x * diag[m])
      else:
        col.append(d0[m, l] * x * columns[l - 1][m] - d1[m, l] * columns[l - 2][m])
    columns.append(col)
  return stack([stack(list(row), axis=0) for row in zip(*columns)], axis=0)


@partial(jit, static_argnums=(4,))
def _sph_harm(n, m, theta, phi, n_max: int):
  legendre = _normalized_legendre(n_max, lax.cos(theta))
  size = aval(n).shape[0]
  value = legendre.at[lax.abs(m), n, creation.arange(size)].get(mode="clip")
  angle = lax.abs(m) * phi
  harmonics = lax.complex(value * lax.cos(angle), value * lax.sin(angle))
  sign = where(lax.rem(lax.abs(m), 2) == 1, -1.0, 1.0).astype(aval(value).dtype)
  return where(m < 0, sign * lax.conj(harmonics), harmonics)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
  """Y_n^m(theta, phi) for 1-D n, m, theta, phi of one length (theta may be a scalar).
  n_max (the largest degree, default max(n)) must be static under jit."""
  if diff_n is not None:
    raise NotImplementedError(
        "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
  if np.isscalar(theta):
    theta = creation.array([theta])
  if n_max is None:
    n_max = np.max(np.asarray(core.concrete_or_error(
        None, n, "The `n_max` argument of `jax.scipy.special.sph_harm_y` must be statically "
        "specified to use `sph_harm_y` within JAX transformations.")))
  n_max = core.concrete_or_error(
      int, n_max, "The `n_max` argument of `jax.scipy.special.sph_harm_y` must be statically "
      "specified to use `sph_harm_y` within JAX transformations.")
  n, m = creation.asarray(n), creation.asarray(m)
  theta, phi = util.promote_dtypes_inexact(creation.asarray(theta), creation.asarray(phi))
  return _sph_harm(n, m, theta, phi, int(n_max))

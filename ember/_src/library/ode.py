"""jax.experimental.ode: `odeint`, adaptive-step Dormand-Prince (Runge-Kutta 4(5)) integration
with dense output by a 4th-order interpolant, and its gradient by the adjoint method (the
augmented system integrated backwards: Chen et al. 2018, appendix C), as a custom_vjp.

The helpers are JAX's public names of the module: one RK step (`runge_kutta_step`), the error
norm (`mean_error_ratio`), the step-size controller (`optimal_step_size`,
`initial_step_size`: Hairer, Norsett & Wanner, Solving ODEs I, sec. II.4) and the interpolant
(`interp_fit_dopri`, `fit_4th_order_polynomial`). The tableau is Dormand & Prince's.
"""
from __future__ import annotations

import functools
import operator
from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.driver.jit import jit
from ember._src.library.flatten_util import ravel_pytree
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation as jnp_creation
from ember._src.library.numpy import linalg_norms, logic, polynomial, products, reductions
from ember._src.library.numpy import scalar_types, shape as jnp_shape, ufuncs
from ember._src.library.numpy.util import promote_dtypes_inexact
from ember._src.transforms.ad import vjp
from ember._src.transforms.batching import vmap
from ember._src.transforms.custom_derivatives import closure_convert, custom_vjp

# Dormand-Prince 5(4): nodes, stage coefficients, the 5th-order weights, and their difference
# from the embedded 4th-order weights (the local error estimate)
_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERROR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
            -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.]
# the solution's midpoint from the stages (Shampine's dense output for Dormand-Prince)
_C_MID = [6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
          -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
          -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2]


def _const(values, dtype):
  return jnp_creation.asarray(np.asarray(values), dtype=dtype)


def _dot(a, b):
  return products.dot(a, b, precision=lax.Precision.HIGHEST)


def ravel_first_arg(f: Callable, unravel: Callable) -> Callable:
  """`f(y, *args)` as a function of the flat vector of `y` (`unravel` rebuilds `y`), whose
  result is flattened too."""
  def raveled(y_flat, *args):
    return ravel_pytree(f(unravel(y_flat), *args))[0]
  return raveled


def interp_fit_dopri(y0, y1, k, dt):
  """The coefficients (highest power first) of the 4th-order polynomial on [0, 1] through a
  Dormand-Prince step from `y0` to `y1` with stages `k`."""
  y_mid = y0 + dt.astype(y0.dtype) * _dot(_const(_C_MID, y0.dtype), k)
  return jnp_creation.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  """(a, b, c, d, e): the polynomial a s^4 + ... + e on s in [0, 1] with the values y0, y_mid,
  y1 at 0, 1/2, 1 and the slopes dy0, dy1 (per unit time, over a step of `dt`) at the ends."""
  dt = dt.astype(y0.dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  return a, b, c, dt * dy0, y0


def initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """A first step size for `fun(y, t)` from `(t0, y0)` with slope `f0` (Hairer, Norsett and
  Wanner's starting step algorithm)."""
  y0, f0 = promote_dtypes_inexact(y0, f0)
  dtype = y0.dtype
  scale = (atol + ufuncs.abs(y0) * rtol).astype(dtype)
  d0 = linalg_norms.norm(y0 / scale)
  d1 = linalg_norms.norm(f0 / scale)
  h0 = logic.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
  d2 = linalg_norms.norm((f1 - f0) / scale) / h0
  h1 = logic.where((d1 <= 1e-15) & (d2 <= 1e-15), ufuncs.maximum(1e-6, h0 * 1e-3),
                   (0.01 / ufuncs.maximum(d1, d2)) ** (1. / (order + 1.)))
  return ufuncs.minimum(100. * h0, h1)


def runge_kutta_step(func, y0, f0, t0, dt):
  """One Dormand-Prince step of `func(y, t)` from `(t0, y0)` (slope `f0`) over `dt`:
  (y1, f1 = the slope at y1, the local error estimate, the 7 stages k)."""
  alpha = _const(_ALPHA, dt.dtype)
  beta = _const(_BETA, f0.dtype)
  step = dt.astype(f0.dtype)

  def stage(i, k):
    ti = t0 + dt * alpha[i - 1]
    yi = y0 + step * _dot(beta[i - 1, :], k)
    return k.at[i, :].set(func(yi, ti))
  k = jnp_creation.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = lax.fori_loop(1, 7, stage, k)
  y1 = step * _dot(_const(_C_SOL, f0.dtype), k) + y0
  y1_error = step * _dot(_const(_C_ERROR, f0.dtype), k)
  return y1, k[-1], y1_error, k


def abs2(x):
  """|x|^2, elementwise (real and complex)."""
  if scalar_types.iscomplexobj(x):
    return x.real ** 2 + x.imag ** 2
  return x ** 2


def mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  """The RMS of the error estimate over the tolerance atol + rtol * max(|y0|, |y1|)."""
  err_tol = atol + rtol * ufuncs.maximum(ufuncs.abs(y0), ufuncs.abs(y1))
  ratio = error_estimate / err_tol.astype(error_estimate.dtype)
  return ufuncs.sqrt(reductions.mean(abs2(ratio)))


def optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                      order=5.0):
  """The next step size from the last one and its error ratio: grow at most `ifactor` times,
  shrink at most to `dfactor` of it (never shrink after an accepted step)."""
  dfactor = logic.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = ufuncs.minimum(ifactor, ufuncs.maximum(
      mean_error_ratio ** (-1.0 / order) * safety, dfactor))
  return logic.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
  """The solution of dy/dt = func(y, t, *args), y(t[0]) = y0, at the times `t` (strictly
  increasing floats), with a leading axis of len(t) on every leaf of `y0`'s pytree.
  `rtol`/`atol`: the local error tolerances; `mxstep`: the most steps between two output
  times; `hmax`: the largest step. Differentiable in y0, t and args (adjoint method)."""
  for arg in tree_util.tree_leaves(args):
    if not core.valid_jaxtype(arg):
      raise TypeError(
          f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  t = jnp_creation.asarray(t)
  if not dtypes.issubdtype(t.dtype, np.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@functools.partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  y0, unravel = ravel_pytree(y0)
  out = _odeint(ravel_first_arg(func, unravel), rtol, atol, mxstep, hmax, y0, ts, *args)
  return vmap(unravel)(out)


@functools.partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  def f(y, t):
    return func(y, t, *args)

  def to_output_time(carry, target_t):
    def more_steps(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def step(state):
      i, y, fy, t, dt, last_t, coeffs = state
      next_y, next_f, error, k = runge_kutta_step(f, y, fy, t, dt)
      next_t = t + dt
      ratio = mean_error_ratio(error, rtol, atol, y, next_y)
      next_coeffs = interp_fit_dopri(y, next_y, k, dt)
      dt = ufuncs.clip(optimal_step_size(dt, ratio), min=0., max=hmax)
      # an accepted step (ratio <= 1) moves on; a rejected one retries with the smaller dt
      new = [i + 1, next_y, next_f, next_t, dt, t, next_coeffs]
      old = [i + 1, y, fy, t, dt, last_t, coeffs]
      return [logic.where(ratio <= 1., a, b) for a, b in zip(new, old)]

    _, *carry = lax.while_loop(more_steps, step, [0] + carry)
    _, _, t, _, last_t, coeffs = carry
    s = (target_t - last_t) / (t - last_t)
    return carry, polynomial.polyval(coeffs, s.astype(coeffs.dtype))

  f0 = f(y0, ts[0])
  dt = ufuncs.clip(initial_step_size(f, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
  coeffs = jnp_shape.stack([y0] * 5)
  _, ys = lax.scan(to_output_time, [y0, f0, ts[0], dt, ts[0], coeffs], ts[1:])
  return jnp_shape.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
  ys, ts, args = res

  def aug_dynamics(state, t, *args):
    # the system with the adjoint and the time/args cotangents, in negated time (run forward
    # from -ts[i] to -ts[i-1])
    y, y_bar, *_ = state
    y_dot, pullback = vjp(func, y, -t, *args)
    return (-y_dot, *pullback(y_bar))

  def back_one_interval(carry, i):
    y_bar, t0_bar, args_bar = carry
    t_bar = _dot(func(ys[i], ts[i], *args), g[i]).real   # moving the output time
    t0_bar = t0_bar - t_bar
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar),
        jnp_shape.stack([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_util.tree_map(operator.itemgetter(1),
                                                 (y_bar, t0_bar, args_bar))
    return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

  init = (g[-1], jnp_creation.zeros((), ts.dtype),
          tree_util.tree_map(jnp_creation.zeros_like, args))
  (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(
      back_one_interval, init, jnp_creation.arange(len(ts) - 1, 0, -1))
  ts_bar = jnp_shape.concatenate([t0_bar[None], rev_ts_bar[::-1]])
  return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)

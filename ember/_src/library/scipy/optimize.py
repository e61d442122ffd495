"""jax.scipy.optimize: minimize with method='BFGS' and its OptimizeResults, as JAX 0.12
provides them: BFGS on a 1-d x0 with gradients from value_and_grad, each step's length from
a line search satisfying the strong Wolfe conditions (SciPy's / Nocedal & Wright's
algorithm 3.5 with the cubic/quadratic/bisection zoom of algorithm 3.6). Everything is a
lax.while_loop, so minimize runs under jit and vmap. JAX's undocumented experimental L-BFGS
method name is not provided."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember._src.library.lax import api as lax
from ember._src.library.numpy import util
from ember._src.library.scipy import _jnp as jnp
from ember._src.transforms.ad import value_and_grad

__all__ = ["minimize", "OptimizeResults"]


class OptimizeResults(NamedTuple):
  """Result of minimize: x (the solution), success, status (0 converged, 1 max iterations,
  2 + the line search's code when it failed), fun, jac (gradient at x), hess_inv (BFGS's
  inverse-Hessian estimate), nfev, njev, nit."""
  x: Any
  success: Any
  status: Any
  fun: Any
  jac: Any
  hess_inv: Any
  nfev: Any
  njev: Any
  nit: Any


def _dot(a, b):
  return jnp.dot(a, b, precision="highest")


def _pick(bit, old: dict, new: dict) -> dict:
  """old with the entries of new where bit is set."""
  return {**old, **{k: jnp.where(bit, v, old[k]) for k, v in new.items()}}


# ---------------------------------------------------------------------------------------------
# Line search


def _cubicmin(a, fa, fpa, b, fb, c, fc):
  """Minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
  db, dc = b - a, c - a
  denom = (db * dc) ** 2 * (db - dc)
  r1, r2 = fb - fa - fpa * db, fc - fa - fpa * dc
  A = (dc ** 2 * r1 - db ** 2 * r2) / denom
  B = (-dc ** 3 * r1 + db ** 3 * r2) / denom
  return a + (-B + jnp.sqrt(B * B - 3.0 * A * fpa)) / (3.0 * A)


def _quadmin(a, fa, fpa, b, fb):
  """Minimizer of the parabola through (a, fa) with slope fpa and (b, fb)."""
  db = b - a
  B = (fb - fa - fpa * db) / db ** 2
  return a - fpa / (2.0 * B)


def _zoom(phi_dphi_g, wolfe_one, wolfe_two, lo, hi, g_0, pass_through):
  """Nocedal & Wright's zoom: shrink [a_lo, a_hi] to a step meeting the strong Wolfe
  conditions. lo / hi are (a, phi, dphi); skipped entirely when pass_through."""
  a_lo, phi_lo, dphi_lo = lo
  a_hi, phi_hi, dphi_hi = hi
  state = dict(done=jnp.asarray(False), failed=jnp.asarray(False), j=jnp.asarray(0),
               a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo, a_hi=a_hi, phi_hi=phi_hi,
               dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.0, phi_rec=(phi_lo + phi_hi) / 2.0,
               a_star=jnp.ones_like(a_lo), phi_star=phi_lo, dphi_star=dphi_lo, g_star=g_0,
               nfev=jnp.asarray(0), ngev=jnp.asarray(0))
  threshold = 1e-5 if jnp.finfo(jnp.asarray(a_lo).dtype).bits < 64 else 1e-10

  def body(s):
    dalpha = s["a_hi"] - s["a_lo"]
    a, b = jnp.minimum(s["a_hi"], s["a_lo"]), jnp.maximum(s["a_hi"], s["a_lo"])
    cchk, qchk = 0.2 * dalpha, 0.1 * dalpha
    s = dict(s, failed=s["failed"] | (dalpha <= threshold))
    a_cubic = _cubicmin(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"],
                        s["a_rec"], s["phi_rec"])
    use_cubic = (s["j"] > 0) & (a_cubic > a + cchk) & (a_cubic < b - cchk)
    a_quad = _quadmin(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"])
    use_quad = ~use_cubic & (a_quad > a + qchk) & (a_quad < b - qchk)
    a_j = jnp.where(use_cubic, a_cubic, s["a_rec"])
    a_j = jnp.where(use_quad, a_quad, a_j)
    a_j = jnp.where(~use_cubic & ~use_quad, (s["a_lo"] + s["a_hi"]) / 2.0, a_j)
    phi_j, dphi_j, g_j = phi_dphi_g(a_j)
    phi_j = phi_j.astype(s["phi_lo"].dtype)
    dphi_j = dphi_j.astype(s["dphi_lo"].dtype)
    g_j = g_j.astype(s["g_star"].dtype)
    s = dict(s, nfev=s["nfev"] + 1, ngev=s["ngev"] + 1)
    hi_to_j = wolfe_one(a_j, phi_j) | (phi_j >= s["phi_lo"])
    star_to_j = wolfe_two(dphi_j) & ~hi_to_j
    hi_to_lo = (dphi_j * (s["a_hi"] - s["a_lo"]) >= 0.0) & ~hi_to_j & ~star_to_j
    lo_to_j = ~hi_to_j & ~star_to_j
    s = _pick(hi_to_j, s, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s["a_hi"],
                               phi_rec=s["phi_hi"]))
    s = _pick(star_to_j, s, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j, g_star=g_j))
    s = dict(s, done=star_to_j | s["done"])
    s = _pick(hi_to_lo, s, dict(a_hi=s["a_lo"], phi_hi=s["phi_lo"], dphi_hi=s["dphi_lo"],
                                a_rec=s["a_hi"], phi_rec=s["phi_hi"]))
    s = _pick(lo_to_j & ~hi_to_lo, s, dict(a_rec=s["a_lo"], phi_rec=s["phi_lo"]))
    s = _pick(lo_to_j, s, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j))
    j = s["j"] + 1
    return dict(s, j=j, failed=s["failed"] | (j >= 30))

  return lax.while_loop(lambda s: ~s["done"] & ~pass_through & ~s["failed"], body, state)


class _LineSearchResults(NamedTuple):
  failed: Any
  nit: Any
  nfev: Any
  ngev: Any
  k: Any
  a_k: Any
  f_k: Any
  g_k: Any
  status: Any


def _line_search(f, xk, pk, old_fval, old_old_fval, gfk, c1=1e-4, c2=0.9, maxiter=20):
  """A step length along pk meeting the strong Wolfe conditions (SciPy's line_search_wolfe2
  without its fallbacks)."""
  def phi_dphi_g(t):
    t = jnp.asarray(t, dtype=pk.dtype)
    phi, g = value_and_grad(f)(xk + t * pk)
    return phi, jnp.real(_dot(g, pk)), g

  phi_0, dphi_0 = old_fval, jnp.real(_dot(gfk, pk))
  candidate = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
  start = jnp.where(candidate > 1, 1.0, candidate)

  def wolfe_one(a, phi):   # sufficient decrease
    return phi > phi_0 + c1 * a * dphi_0

  def wolfe_two(dphi):     # curvature
    return jnp.abs(dphi) <= -c2 * dphi_0

  zero = jnp.zeros((), jnp.result_type(pk.dtype, jnp.asarray(phi_0).dtype, float))
  state = dict(done=jnp.asarray(False), failed=jnp.asarray(False), i=jnp.asarray(1),
               a_i1=zero, phi_i1=phi_0, dphi_i1=dphi_0, nfev=jnp.asarray(0),
               ngev=jnp.asarray(0), a_star=zero, phi_star=phi_0, dphi_star=dphi_0,
               g_star=gfk)
  star_keys = ("a_star", "phi_star", "dphi_star", "g_star")

  def body(s):
    a_i = jnp.where(s["i"] == 1, start, s["a_i1"] * 2.0).astype(zero.dtype)
    phi_i, dphi_i, g_i = phi_dphi_g(a_i)
    s = dict(s, nfev=s["nfev"] + 1, ngev=s["ngev"] + 1)
    to_zoom1 = wolfe_one(a_i, phi_i) | ((phi_i >= s["phi_i1"]) & (s["i"] > 1))
    to_i = wolfe_two(dphi_i) & ~to_zoom1
    to_zoom2 = (dphi_i >= 0.0) & ~to_zoom1 & ~to_i
    # JAX runs two zooms, each skipped unless its case holds; at most one case holds, so
    # one zoom on the chosen bracket does the same work (and compiles half the code)
    prev, here = (s["a_i1"], s["phi_i1"], s["dphi_i1"]), (a_i, phi_i, dphi_i)
    lo = tuple(jnp.where(to_zoom1, p, h) for p, h in zip(prev, here))
    hi = tuple(jnp.where(to_zoom1, h, p) for p, h in zip(prev, here))
    to_zoom = to_zoom1 | to_zoom2
    zoom = _zoom(phi_dphi_g, wolfe_one, wolfe_two, lo, hi, gfk, ~to_zoom)
    s = dict(s, nfev=s["nfev"] + zoom["nfev"], ngev=s["ngev"] + zoom["ngev"])
    s = _pick(to_i, s, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i))
    s = _pick(to_zoom, s, {k: zoom[k] for k in star_keys})
    s = dict(s, done=to_zoom | to_i | s["done"],
             failed=(to_zoom & zoom["failed"]) | s["failed"])
    return dict(s, i=s["i"] + 1, a_i1=a_i, phi_i1=phi_i, dphi_i1=dphi_i)

  s = lax.while_loop(lambda s: ~s["done"] & (s["i"] <= maxiter) & ~s["failed"], body, state)
  status = jnp.where(s["failed"], 1, jnp.where(s["i"] > maxiter, 3, 0))
  alpha = s["a_star"]
  if jnp.finfo(alpha.dtype).bits != 64:   # keep a float32 step from vanishing
    alpha = jnp.where(jnp.abs(alpha) < 1e-8, jnp.sign(alpha) * 1e-8, alpha)
  return _LineSearchResults(failed=s["failed"] | ~s["done"], nit=s["i"] - 1, nfev=s["nfev"],
                            ngev=s["ngev"], k=s["i"], a_k=alpha, f_k=s["phi_star"],
                            g_k=s["g_star"], status=status)


# ---------------------------------------------------------------------------------------------
# BFGS


def _norm(g, ord):
  return jnp.linalg.norm(g, ord=ord)


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  """BFGS from x0 (1-d): the state dict at the end of the iteration."""
  if maxiter is None:
    maxiter = np.size(x0) * 200
  d = x0.shape[0]
  f_0, g_0 = value_and_grad(fun)(x0)
  state = dict(converged=_norm(g_0, norm) < gtol, failed=jnp.asarray(False),
               k=jnp.asarray(0), nfev=jnp.asarray(1), ngev=jnp.asarray(1), x=x0, f=f_0,
               g=g_0, H=jnp.eye(d, dtype=x0.dtype), f_prev=f_0 + jnp.linalg.norm(g_0) / 2,
               ls_status=jnp.asarray(0))

  def body(s):
    p = -_dot(s["H"], s["g"])
    ls = _line_search(fun, s["x"], p, s["f"], s["f_prev"], s["g"],
                      maxiter=line_search_maxiter)
    step = ls.a_k.astype(p.dtype) * p
    y = ls.g_k - s["g"]
    rho = jnp.reciprocal(_dot(y, step))
    w = jnp.eye(d, dtype=rho.dtype) - rho * step[:, None] * y[None, :]
    h_new = (jnp.einsum("ij,jk,lk", w, s["H"], w, precision="highest")
             + rho * step[:, None] * step[None, :])
    return dict(s, nfev=s["nfev"] + ls.nfev, ngev=s["ngev"] + ls.ngev, failed=ls.failed,
                ls_status=ls.status, converged=_norm(ls.g_k, norm) < gtol, k=s["k"] + 1,
                x=s["x"] + step, f=ls.f_k, g=ls.g_k,
                H=jnp.where(jnp.isfinite(rho), h_new, s["H"]), f_prev=s["f"])

  s = lax.while_loop(lambda s: ~s["converged"] & ~s["failed"] & (s["k"] < maxiter), body,
                     state)
  status = jnp.where(s["converged"], 0, jnp.where(
      s["k"] == maxiter, 1, jnp.where(s["failed"], 2 + s["ls_status"], -1)))
  return s, status


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
  """Minimize fun(x, *args) over a 1-d x from x0 (scipy.optimize.minimize's interface).
  method: 'BFGS' only (case-insensitive). options: maxiter, norm, gtol,
  line_search_maxiter. `tol` is accepted and unused, as in JAX."""
  del tol
  options = {} if options is None else options
  if not isinstance(args, tuple):
    raise TypeError("args argument to jax.scipy.optimize.minimize must be a tuple, got "
                    f"{args}")
  if method.lower() != "bfgs":
    raise ValueError(f"Method {method} not recognized")
  util.check_arraylike("minimize", x0)
  x0 = jnp.asarray(x0)
  if x0.ndim != 1:
    raise ValueError(f"minimize: x0 must be 1-dimensional, got shape {x0.shape}")
  s, status = _bfgs(lambda x: fun(x, *args), x0, **options)
  return OptimizeResults(x=s["x"], success=s["converged"] & ~s["failed"], status=status,
                         fun=s["f"], jac=s["g"], hess_inv=s["H"], nfev=s["nfev"],
                         njev=s["ngev"], nit=s["k"])

"""lax's incomplete gamma and beta functions, polygamma, Hurwitz zeta and bessel_i1e
(`jax.lax.igamma`, `igammac`, `igamma_grad_a`, `random_gamma_grad`, `betainc`,
`polygamma`, `zeta`, `bessel_i1e`) and their primitives (`igamma_p`, ...,
`regularized_incomplete_beta_p`, as JAX's): each primitive's lowering is a composite of lax
ops, as JAX's lax/special.py lowers them, its NumPy impl that composite compiled, and its
jvp JAX's rule (igamma in a via igamma_grad_a; betainc in x only; polygamma in x only; zeta
and igamma_grad_a by differentiating their composites).

The incomplete gamma function is Cephes' power series (x < 1 or x < a) or Legendre's
continued fraction for Q = 1 - P, each run as a whole-array `while_loop` in which an
element stops updating once it has converged; betainc is the continued fraction of
DLMF 8.17.22 by the modified Lentz method; zeta is Euler-Maclaurin summation. 16-bit
floats are computed in float32, as JAX does.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src import lower as lowering
from ember._src.driver.jit import jit
from ember._src.library.lax import api as lax
from ember._src.primitives import FLOAT, naryop
from ember._src.transforms import ad
from ember._src.library.numpy import util
from ember._src.primitives.elementwise.transcendental import _bessel_i1e

__all__ = ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "betainc",
           "polygamma", "zeta", "bessel_i1e", "igamma_p", "igammac_p", "igamma_grad_a_p",
           "regularized_incomplete_beta_p", "polygamma_p", "zeta_p", "bessel_i1e_p"]


# --- operands ---------------------------------------------------------------------------

def _c(x, v):
  """The constant v in x's dtype (a strong scalar)."""
  return lax.full_like(x, v, shape=())


def _dtype(x):
  return core.get_aval(x).dtype


def _float_operands(name, *args):
  """lax's rule for its float n-ary ops: arrays must be floating (Python scalars take the
  arrays' dtype), then all are broadcast to one shape (the loops carry whole arrays)."""
  for arg in args:   # a Python float is weakly typed; a Python int is an integer operand
    if not isinstance(arg, float) and not dtypes.issubdtype(
        dtypes.dtype(arg), np.floating):
      raise TypeError(f"{name} does not accept dtype {dtypes.dtype(arg)}. Accepted dtypes "
                      "are subtypes of floating.")
  args = util.promote_args_inexact(name, *args)
  shape = util.broadcast_shapes(*(core.get_aval(a).shape for a in args))
  return [util.broadcast_to_shape(a, shape) for a in args]


def _in_float32_if_narrow(impl):
  """Run `impl` in float32 for float16/bfloat16 operands (their eps would stop the series
  too early and their range overflows the recurrences)."""
  def run(*args):
    dt = _dtype(args[0])
    if dt in (dtypes.float16, dtypes.bfloat16):
      up = [lax.convert_element_type(a, np.float32) for a in args]
      return lax.convert_element_type(impl(*up), dt)
    return impl(*args)
  return run


def _any(pred):
  return lax.reduce_or(pred, tuple(range(core.get_aval(pred).ndim)))


def _or(*preds):
  out = preds[0]
  for p in preds[1:]:
    out = lax.bitwise_or(out, p)
  return out


def _isnan(x):
  return lax.ne(x, x)


def _keep(enabled, new, old):
  """Converged elements keep their state, so each result is independent of the others."""
  return tuple(lax.select(enabled, n, o) for n, o in zip(new, old))


def _broadcasting(value_fn):
  """`value_fn` on its operands broadcast to one shape (the loops carry whole arrays; the
  batching rule may hand over size-1 dimensions)."""
  def run(*args):
    shape = util.broadcast_shapes(*(core.get_aval(a).shape for a in args))
    return value_fn(*(util.broadcast_to_shape(a, shape) for a in args))
  run.__name__ = getattr(value_fn, "__name__", "composite")
  return run


def _as_primitive(name, value_fn, *jvp_rules):
  """JAX's primitive `name`, computing `value_fn` (a composite of lax ops): its lowering is
  that composite, its NumPy impl the composite compiled, its batching elementwise; the
  derivative is `jvp_rules` (`rule(g, ans, *operands)`, one per operand) when given, else
  the composite's own derivative."""
  value_fn = _broadcasting(value_fn)
  compiled = jit(value_fn)
  def impl(*xs, **_):
    if not all(dtypes.issubdtype(np.asarray(x).dtype, np.inexact) for x in xs):
      raise TypeError(f"{name} does not accept non-floating operands")
    return np.asarray(compiled(*xs))
  p = naryop(name, impl, FLOAT)
  p.lower = lowering.lower_fun(value_fn, multiple_results=False)
  if jvp_rules:
    ad.defjvp2(p, *jvp_rules)
  else:
    p.jvp = lambda primals, tangents: ad.jvp(
        value_fn, tuple(primals), tuple(ad.instantiate_zeros(t) for t in tangents))
  return p


# --- regularized incomplete gamma -------------------------------------------------------

def igamma_series_sums(x, a, enabled, derivative):
  """(S, dS/da) of P(a, x) = ax / a * S, S = sum_n x^n / ((a+1)...(a+n)), run until each
  enabled element's last term (with `derivative`: its last term of dS/da) is below eps."""
  eps = dtypes.finfo(_dtype(a)).eps

  def body(vals):
    on, r, c, ans, dc_da, dans_da = vals
    r = lax.add(r, _c(r, 1))
    dc_da = lax.sub(lax.mul(dc_da, lax.div(x, r)), lax.div(lax.mul(c, x), lax.mul(r, r)))
    dans_da = lax.add(dans_da, dc_da)
    c = lax.mul(c, lax.div(x, r))
    ans = lax.add(ans, c)
    small = lax.abs(lax.div(dc_da, dans_da)) if derivative else lax.div(c, ans)
    more = lax.bitwise_and(on, lax.gt(small, _c(small, eps)))
    return (more,) + _keep(on, (r, c, ans, dc_da, dans_da), vals[1:])

  one, zero = lax.full_like(a, 1), lax.full_like(a, 0)
  _, _, _, ans, _, dans_da = lax.while_loop(lambda v: _any(v[0]), body,
                                            (enabled, a, one, one, zero, zero))
  return ans, dans_da


def _igamma_series(ax, x, a, enabled, derivative, dlogax_da=None):
  """P(a, x) = ax / a * S (ax = x^a e^-x / Gamma(a)); with `derivative`, dP/da from S
  and dS/da."""
  ans, dans_da = igamma_series_sums(x, a, enabled, derivative)
  if not derivative:
    return lax.div(lax.mul(ans, ax), a)
  return lax.div(lax.mul(ax, lax.add(lax.mul(ans, dlogax_da), dans_da)), a)


def igammac_fraction_terms(x, a, enabled, derivative):
  """(F, dF/da) of Q(a, x) = ax * F, F the continued fraction 1/(x+1-a-) 1(1-a)/(x+3-a-)
  ..., its convergents p/q by the three-term recurrence (rescaled when they grow past
  1/eps), run until each enabled element's F (with `derivative`: dF/da) stops changing."""
  eps = dtypes.finfo(_dtype(a)).eps

  def cond(vals):
    return lax.bitwise_and(lax.lt(vals[4], _c(vals[4], 2000)), _any(vals[0]))

  def body(vals):
    on, ans, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2, dqkm2, dpkm1, dqkm1, dans = vals
    c = lax.add(c, _c(c, 1))
    y = lax.add(y, _c(y, 1))
    z = lax.add(z, _c(z, 2))
    yc = lax.mul(y, c)
    pk = lax.sub(lax.mul(pkm1, z), lax.mul(pkm2, yc))
    qk = lax.sub(lax.mul(qkm1, z), lax.mul(qkm2, yc))
    nonzero = lax.ne(qk, _c(qk, 0))
    r = lax.div(pk, qk)
    rel_change = lax.select(nonzero, lax.abs(lax.div(lax.sub(ans, r), r)), lax.full_like(r, 1))
    ans = lax.select(nonzero, r, ans)
    dpk = lax.add(lax.sub(lax.sub(lax.mul(dpkm1, z), pkm1), lax.mul(dpkm2, yc)),
                  lax.mul(pkm2, c))
    dqk = lax.add(lax.sub(lax.sub(lax.mul(dqkm1, z), qkm1), lax.mul(dqkm2, yc)),
                  lax.mul(qkm2, c))
    dans_new = lax.select(nonzero, lax.div(lax.sub(dpk, lax.mul(ans, dqk)), qk), dans)
    grad_change = lax.select(nonzero, lax.abs(lax.sub(dans_new, dans)), lax.full_like(dans, 1))
    rescale = lax.gt(lax.abs(pk), _c(pk, 1 / eps))
    scaled = [lax.select(rescale, lax.mul(v, _c(v, eps)), v)
              for v in (pk, qk, pkm1, qkm1, dpk, dqk, dpkm1, dqkm1)]
    pk, qk, pkm1, qkm1, dpk, dqk, dpkm1, dqkm1 = scaled
    change = grad_change if derivative else rel_change
    more = lax.bitwise_and(on, lax.gt(change, _c(change, eps)))
    new = (ans, y, z, pk, qk, pkm1, qkm1, dpkm1, dqkm1, dpk, dqk, dans_new)
    kept = _keep(on, new[:3], vals[1:4]) + (c,) + _keep(on, new[3:], vals[5:])
    return (more,) + kept

  y = lax.sub(_c(a, 1), a)
  z = lax.add(lax.add(x, y), _c(x, 1))
  pkm1 = lax.add(x, _c(x, 1))
  qkm1 = lax.mul(z, x)
  ans = lax.div(pkm1, qkm1)
  zero = lax.full_like(x, 0)
  dqkm1 = lax.neg(x)
  dans = lax.neg(lax.div(lax.mul(ans, dqkm1), qkm1))
  init = (enabled, ans, y, z, _c(x, 0), pkm1, qkm1, lax.full_like(x, 1), x,
          zero, zero, zero, dqkm1, dans)
  vals = lax.while_loop(cond, body, init)
  return vals[1], vals[13]


def _igammac_fraction(ax, x, a, enabled, derivative, dlogax_da=None):
  """Q(a, x) = ax * F; with `derivative`, dQ/da from F and dF/da."""
  ans, dans = igammac_fraction_terms(x, a, enabled, derivative)
  if not derivative:
    return lax.mul(ans, ax)
  return lax.mul(ax, lax.add(lax.mul(ans, dlogax_da), dans))


def _log_ax(a, x):
  """log(x^a e^-x / Gamma(a)), and whether exp of it underflows (then P or Q is 0/1)."""
  log_ax = lax.sub(lax.sub(lax.mul(a, lax.log(x)), x), lax.lgamma(a))
  underflow = lax.lt(log_ax, _c(log_ax, -math.log(dtypes.finfo(_dtype(a)).max)))
  return log_ax, underflow


def _igamma_domain(a, x):
  """(NaN inputs or outside the domain, a == 0, x == 0, a == inf, x == inf)."""
  a0, x0 = lax.eq(a, _c(a, 0)), lax.eq(x, _c(x, 0))
  a_inf, x_inf = lax.eq(a, _c(a, np.inf)), lax.eq(x, _c(x, np.inf))
  error = _or(lax.lt(x, _c(x, 0)), lax.lt(a, _c(a, 0)), lax.bitwise_and(a0, x0),
              lax.bitwise_and(a_inf, x_inf), _isnan(a), _isnan(x))
  return error, a0, x0, a_inf, x_inf


def _igamma_value(a, x):
  error, _, x0, a_inf, x_inf = _igamma_domain(a, x)
  log_ax, underflow = _log_ax(a, x)
  ax = lax.exp(log_ax)
  enabled = lax.bitwise_not(_or(x0, error, underflow, x_inf, a_inf))
  use_fraction = lax.bitwise_and(lax.ge(x, _c(x, 1)), lax.gt(x, a))
  out = lax.select(
      use_fraction,
      lax.sub(_c(a, 1), _igammac_fraction(ax, x, a, lax.bitwise_and(enabled, use_fraction),
                                          False)),
      _igamma_series(ax, x, a, lax.bitwise_and(enabled, lax.bitwise_not(use_fraction)), False))
  out = lax.select(lax.bitwise_or(a_inf, x0), lax.full_like(out, 0), out)
  out = lax.select(x_inf, lax.full_like(out, 1), out)
  return lax.select(error, lax.full_like(out, np.nan), out)


def _igammac_value(a, x):
  error, a0, _, a_inf, x_inf = _igamma_domain(a, x)
  log_ax, underflow = _log_ax(a, x)
  ax = lax.exp(log_ax)
  enabled = lax.bitwise_not(_or(error, underflow, x_inf, a0, a_inf))
  use_series = lax.bitwise_or(lax.lt(x, _c(x, 1)), lax.lt(x, a))
  series = _igamma_series(ax, x, a, lax.bitwise_and(enabled, use_series), False)
  fraction = _igammac_fraction(ax, x, a, lax.bitwise_and(enabled, lax.bitwise_not(use_series)),
                               False)
  out = lax.select(use_series, lax.sub(_c(a, 1), series), fraction)
  out = lax.select(a_inf, lax.full_like(out, 1), out)
  out = lax.select(lax.bitwise_or(x_inf, a0), lax.full_like(out, 0), out)
  return lax.select(error, lax.full_like(out, np.nan), out)


def _igamma_grad_a_value(a, x):
  x0 = lax.eq(x, _c(x, 0))
  error = _or(lax.lt(x, _c(x, 0)), lax.le(a, _c(a, 0)), _isnan(a), _isnan(x))
  log_ax, underflow = _log_ax(a, x)
  ax = lax.exp(log_ax)
  enabled = lax.bitwise_not(_or(x0, error, underflow))
  use_fraction = lax.bitwise_and(lax.gt(x, _c(x, 1)), lax.gt(x, a))
  # d log(ax) / da, with the series' ax carrying 1/a: Gamma(a + 1) in place of Gamma(a)
  dlogax_da = lax.sub(lax.log(x), lax.digamma(lax.select(use_fraction, a,
                                                         lax.add(a, _c(a, 1)))))
  out = lax.select(
      use_fraction,
      lax.neg(_igammac_fraction(ax, x, a, lax.bitwise_and(enabled, use_fraction), True,
                                dlogax_da)),
      _igamma_series(ax, x, a, lax.bitwise_and(enabled, lax.bitwise_not(use_fraction)), True,
                     dlogax_da))
  out = lax.select(x0, lax.full_like(out, 0), out)
  return lax.select(error, lax.full_like(out, np.nan), out)


# --- the implicit reparameterization gradient of a Gamma(a, 1) sample ----------------------
# JAX's random_gamma_grad_impl (XLA's RandomGammaGrad): dx/da = -(dP/da) / (dP/dx), from P's
# series (x <= 1 or x <= a) or Q = 1 - P's continued fraction, each without the factor
# x^a e^-x / Gamma(a) that dP/dx shares (so no underflow of it in between).

def random_gamma_grad(a, x):
  """d sample / d a of a Gamma(a, 1) sample x (`jax.lax.random_gamma_grad`)."""
  a, x = util.promote_args_inexact("random_gamma_grad", a, x)
  return _in_float32_if_narrow(_broadcasting(_random_gamma_grad_value))(a, x)


def _random_gamma_grad_value(a, x):
  x0 = lax.eq(x, _c(x, 0))
  error = _or(lax.lt(x, _c(x, 0)), lax.le(a, _c(a, 0)), _isnan(a), _isnan(x))
  _, underflow = _log_ax(a, x)
  enabled = lax.bitwise_not(_or(x0, error, underflow))
  use_fraction = lax.bitwise_and(lax.gt(x, _c(x, 1)), lax.gt(x, a))
  s, ds_da = igamma_series_sums(x, a, lax.bitwise_and(enabled, lax.bitwise_not(use_fraction)),
                                True)
  dlogax_da = lax.sub(lax.log(x), lax.digamma(lax.add(a, _c(a, 1))))
  series = lax.div(lax.mul(lax.neg(lax.add(ds_da, lax.mul(s, dlogax_da))), x), a)
  f, df_da = igammac_fraction_terms(x, a, lax.bitwise_and(enabled, use_fraction), True)
  dlogax_da = lax.sub(lax.log(x), lax.digamma(a))
  fraction = lax.mul(lax.add(df_da, lax.mul(f, dlogax_da)), x)
  out = lax.select(use_fraction, fraction, series)
  out = lax.select(x0, lax.full_like(out, 0), out)
  return lax.select(error, lax.full_like(out, np.nan), out)


def _igamma_dx(a, x):
  """dP/dx = x^(a-1) e^-x / Gamma(a)."""
  return lax.exp(lax.sub(lax.sub(lax.mul(lax.sub(a, _c(a, 1)), lax.log(x)), x), lax.lgamma(a)))


igamma_grad_a_p = _as_primitive("igamma_grad_a", _in_float32_if_narrow(_igamma_grad_a_value))


def igamma_grad_a(a, x):
  """d/da of the regularized lower incomplete gamma function P(a, x)."""
  return igamma_grad_a_p.bind(*_float_operands("igamma_grad_a", a, x))


igamma_p = _as_primitive(
    "igamma", _in_float32_if_narrow(_igamma_value),
    lambda g, ans, a, x: lax.mul(g, igamma_grad_a(a, x)),
    lambda g, ans, a, x: lax.mul(g, _igamma_dx(a, x)))
igammac_p = _as_primitive(
    "igammac", _in_float32_if_narrow(_igammac_value),
    lambda g, ans, a, x: lax.neg(lax.mul(g, igamma_grad_a(a, x))),
    lambda g, ans, a, x: lax.neg(lax.mul(g, _igamma_dx(a, x))))
_igamma, _igammac = igamma_p.bind, igammac_p.bind


def igamma(a, x):
  """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a):
  NaN for x < 0, a < 0, a == x == 0, a == x == inf or NaN inputs."""
  return _igamma(*_float_operands("igamma", a, x))


def igammac(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
  return _igammac(*_float_operands("igammac", a, x))


# --- regularized incomplete beta --------------------------------------------------------

def _lentz(numerator, dtype, iterations):
  """The continued fraction 1 + numerator(1)/(1 + numerator(2)/(1 + ...)) (all partial
  denominators 1) by the modified Lentz method, each element stopping once it converged."""
  tiny = dtypes.finfo(dtype).eps / 2

  def clamp(v):   # Lentz: a zero (or tiny) c or d is replaced by `tiny`
    return lax.select(lax.lt(lax.abs(v), _c(v, tiny)), lax.full_like(v, tiny), v)

  def body(state):
    n, on, c, d, h = state
    a_n = numerator(n)
    c = clamp(lax.add(_c(c, 1), lax.div(a_n, c)))
    d = lax.reciprocal(clamp(lax.add(_c(d, 1), lax.mul(a_n, d))))
    delta = lax.mul(c, d)
    more = lax.bitwise_and(on, lax.ge(lax.abs(lax.sub(delta, _c(delta, 1))), _c(delta, tiny)))
    return (n + 1, more) + _keep(on, (c, d, lax.mul(h, delta)), state[2:])

  def cond(state):
    return lax.bitwise_and(lax.lt(state[0], iterations), _any(state[1]))

  h = lax.full_like(numerator(0), tiny)   # b_0 = 0, clamped to `tiny`
  init = (np.int32(1), lax.full_like(h, True, dtype=np.bool_), h, lax.full_like(h, 0), h)
  return lax.while_loop(cond, body, init)[4]


def _betainc_fraction(a, b, x):
  """DLMF 8.17.22's continued fraction: d_1 = 1, d_{2m+1} = -(a+m)(a+b+m)x / ((a+2m)
  (a+2m+1)), d_{2m} = m(b-m)x / ((a+2m-1)(a+2m)); indexed from 1, d_n is numerator(n+1)."""
  shape = core.get_aval(x).shape

  def numerator(n):
    if isinstance(n, int):   # the first: 0 is the (zero) partial denominator b_0's slot
      return lax.full_like(x, 1 if n == 1 else 0)
    nf = lax.broadcast_in_dim(lax.convert_element_type(n, _dtype(x)), shape, ())
    m = lax.floor(lax.div(lax.sub(nf, _c(x, 1)), _c(x, 2)))
    a2m = lax.add(a, lax.mul(_c(m, 2), m))
    ab = lax.add(a, b)
    even = lax.div(lax.neg(lax.mul(lax.mul(lax.add(a, m), lax.add(ab, m)), x)),
                   lax.mul(a2m, lax.add(a2m, _c(a, 1))))
    # at m == 0 a cancels: -(a+b) x / (a+1), exact for a tiny a
    even = lax.select(lax.eq(m, _c(m, 0)),
                      lax.div(lax.neg(lax.mul(ab, x)), lax.add(a, _c(a, 1))), even)
    odd = lax.div(lax.mul(lax.mul(m, lax.sub(b, m)), x),
                  lax.mul(lax.sub(a2m, _c(a, 1)), a2m))
    is_even = lax.eq(lax.rem(nf, _c(nf, 2)), _c(nf, 0))
    return lax.select(lax.eq(nf, _c(nf, 1)), lax.full_like(x, 1),
                      lax.select(is_even, even, odd))
  iterations = 200 if _dtype(x) == np.float32 else 600
  return _lentz(numerator, _dtype(x), iterations)


def _betainc_value(a, b, x):
  one = _c(x, 1)
  a0 = lax.bitwise_or(lax.eq(a, _c(a, 0)), lax.eq(b, _c(b, np.inf)))
  b0 = lax.bitwise_or(lax.eq(b, _c(b, 0)), lax.eq(a, _c(a, np.inf)))
  x0, x1 = lax.eq(x, _c(x, 0)), lax.eq(x, one)
  is_zero = lax.bitwise_or(lax.bitwise_and(b0, lax.bitwise_not(x1)), lax.bitwise_and(a0, x0))
  is_one = lax.bitwise_or(lax.bitwise_and(a0, lax.bitwise_not(x0)), lax.bitwise_and(b0, x1))
  is_nan = _or(lax.lt(a, _c(a, 0)), lax.lt(b, _c(b, 0)), lax.lt(x, _c(x, 0)), lax.gt(x, one),
               lax.bitwise_and(a0, b0), _isnan(a), _isnan(b), _isnan(x))
  # the fraction converges fast for x < (a+1)/(a+b+2); otherwise I_x(a,b) = 1 - I_1-x(b,a)
  direct = lax.lt(x, lax.div(lax.add(a, one), lax.add(lax.add(a, b), _c(b, 2))))
  a, b = lax.select(direct, a, b), lax.select(direct, b, a)
  x = lax.select(direct, x, lax.sub(one, x))
  fraction = _betainc_fraction(a, b, x)
  # x^a (1-x)^b / (a B(a, b)); for a below 2 * tiny, a Gamma(a) -> Gamma(a + 1) = 1
  lbeta_without_a = lax.sub(lax.lgamma(b), lax.lgamma(lax.add(a, b)))
  tiny_a = lax.lt(a, _c(a, 2 * dtypes.finfo(_dtype(a)).tiny))
  log1m_x = lax.log1p(lax.neg(x))
  factor = lax.select(
      tiny_a, lax.exp(lax.sub(lax.mul(log1m_x, b), lbeta_without_a)),
      lax.div(lax.exp(lax.sub(lax.add(lax.mul(lax.log(x), a), lax.mul(log1m_x, b)),
                              lax.add(lax.lgamma(a), lbeta_without_a))), a))
  out = lax.mul(fraction, factor)
  out = lax.select(direct, out, lax.sub(_c(out, 1), out))
  out = lax.select(is_zero, lax.full_like(out, 0), out)
  out = lax.select(is_one, lax.full_like(out, 1), out)
  return lax.select(is_nan, lax.full_like(out, np.nan), out)


def _no_grad(name, what):
  def rule(g, ans, *args):
    raise ValueError(f"{name} gradient with respect to {what} not supported.")
  return rule


def _betainc_dx(g, ans, a, b, x):
  lbeta = lax.sub(lax.add(lax.lgamma(a), lax.lgamma(b)), lax.lgamma(lax.add(a, b)))
  log_density = lax.add(lax.mul(lax.sub(b, _c(b, 1)), lax.log1p(lax.neg(x))),
                        lax.mul(lax.sub(a, _c(a, 1)), lax.log(x)))
  return lax.mul(g, lax.exp(lax.sub(log_density, lbeta)))


regularized_incomplete_beta_p = _as_primitive(
    "regularized_incomplete_beta", _in_float32_if_narrow(_betainc_value),
    _no_grad("Betainc", "a and b"), _no_grad("Betainc", "a and b"), _betainc_dx)
_betainc = regularized_incomplete_beta_p.bind


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b) (differentiable in x only)."""
  return _betainc(*_float_operands("betainc", a, b, x))


# --- Hurwitz zeta and polygamma ---------------------------------------------------------

_ZETA_TERMS = 12   # terms summed directly before the Euler-Maclaurin tail
# (2k)! / B_2k for k = 1..12: the tail's term k is x(x+1)...(x+2k-2) / w^(x+2k-1) over it
_BERNOULLI_DIVISORS = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                       7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                       -4.5979787224074726105e15, 1.8152105401943546773e17,
                       -7.1661652561756670113e18)


def _zeta_value(x, q):
  """sum_{k>=0} (q + k)^-x: the first terms directly, the rest by Euler-Maclaurin at
  w = q + N: w^(1-x) / (x-1) + w^-x / 2 + sum_k B_2k / (2k)! x^(2k-1 rising) w^(1-x-2k).
  inf at x == 1 and at the poles q = 0, -1, ...; NaN for x < 1 and for q < 0 with a
  non-integer x (a complex power)."""
  one = _c(x, 1)
  total = lax.full_like(x, 0)
  for k in range(_ZETA_TERMS):
    total = lax.add(total, lax.pow(lax.add(q, _c(q, k)), lax.neg(x)))
  w = lax.add(q, _c(q, _ZETA_TERMS))
  w_pow = lax.pow(w, lax.neg(x))
  total = lax.add(total, lax.div(lax.mul(w_pow, w), lax.sub(x, one)))
  total = lax.add(total, lax.mul(w_pow, _c(x, 0.5)))
  rising, term_pow, inv_w = lax.full_like(x, 1), lax.div(w_pow, w), lax.reciprocal(w)
  for k, divisor in enumerate(_BERNOULLI_DIVISORS):
    rising = lax.mul(rising, lax.add(x, _c(x, 2 * k)))
    total = lax.add(total, lax.div(lax.mul(rising, term_pow), _c(x, divisor)))
    rising = lax.mul(rising, lax.add(x, _c(x, 2 * k + 1)))
    term_pow = lax.mul(term_pow, lax.mul(inv_w, inv_w))
  # at a pole q = 0, -1, ... the terms (q + k)^-x are +inf for an even x, else +-inf: NaN
  q_pole = lax.bitwise_and(lax.le(q, _c(q, 0)), lax.eq(q, lax.floor(q)))
  even_x = lax.eq(lax.rem(x, _c(x, 2)), _c(x, 0))
  complex_power = lax.bitwise_and(lax.lt(q, _c(q, 0)), lax.ne(x, lax.floor(x)))
  out = lax.select(lax.bitwise_or(lax.eq(x, one), lax.bitwise_and(q_pole, even_x)),
                   lax.full_like(x, np.inf), total)
  out = lax.select(lax.eq(q, _c(q, np.inf)), lax.full_like(x, 0), out)   # inf * 0 above
  nan = _or(lax.lt(x, one), complex_power, lax.bitwise_and(q_pole, lax.bitwise_not(even_x)),
            _isnan(x), _isnan(q))
  return lax.select(nan, lax.full_like(x, np.nan), out)


zeta_p = _as_primitive("zeta", _in_float32_if_narrow(_zeta_value))


def zeta(x, q):
  """The Hurwitz zeta function zeta(x, q) = sum_{k>=0} (q + k)^-x. Differentiable in both
  (by differentiating the Euler-Maclaurin sum)."""
  return zeta_p.bind(*_float_operands("zeta", x, q))


def _polygamma_value(m, x):
  """psi^(m)(x) = (-1)^(m+1) m! zeta(m+1, x) for integer m >= 1, digamma for m == 0; NaN
  for negative or non-integer m."""
  one = _c(m, 1)
  factorial = lax.exp(lax.lgamma(lax.add(m, one)))
  sign = lax.select(lax.eq(lax.rem(m, _c(m, 2)), _c(m, 0)), lax.full_like(m, -1),
                    lax.full_like(m, 1))
  higher = lax.mul(lax.mul(sign, factorial), _zeta_value(lax.add(m, one), x))
  out = lax.select(lax.eq(m, _c(m, 0)), lax.digamma(x), higher)
  bad_m = lax.bitwise_or(lax.lt(m, _c(m, 0)), lax.ne(m, lax.floor(m)))
  return lax.select(bad_m, lax.full_like(out, np.nan), out)


polygamma_p = _as_primitive(
    "polygamma", _in_float32_if_narrow(_polygamma_value), _no_grad("polygamma", "m"),
    lambda g, ans, m, x: lax.mul(g, polygamma_p.bind(lax.add(m, _c(m, 1)), x)))
_polygamma = polygamma_p.bind


def polygamma(m, x):
  """The m-th derivative of digamma, psi^(m)(x) (differentiable in x)."""
  return _polygamma(*_float_operands("polygamma", m, x))


# --- bessel_i1e -------------------------------------------------------------------------

def _i1e_jvp(g, ans, x):
  """d i1e = i0e - i1e (sign(x) + 1/x); at x == 0 the limit 1/2."""
  zero = lax.eq(x, _c(x, 0))
  safe_x = lax.select(zero, lax.full_like(x, 1), x)
  slope = lax.sub(lax.bessel_i0e(x), lax.mul(ans, lax.add(lax.sign(x), lax.reciprocal(safe_x))))
  return lax.mul(g, lax.select(zero, lax.full_like(x, 0.5), slope))


bessel_i1e_p = _as_primitive("bessel_i1e", _in_float32_if_narrow(_bessel_i1e), _i1e_jvp)
_i1e = bessel_i1e_p.bind


def bessel_i1e(x):
  """The exponentially scaled modified Bessel function of order 1, e^-|x| I1(x)."""
  x, = _float_operands("bessel_i1e", x)
  return _i1e(x)

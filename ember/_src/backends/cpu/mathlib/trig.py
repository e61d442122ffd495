"""sin, cos, tan, and sin(pi z) / cos(pi z) for lgamma's and digamma's reflection formulas.

Cody-Waite (double-word result) inline for |x| < 2**cw (`_cw_limit`: 2**14 in float32, 2**30 in
float64); beyond, an out-of-line Payne-Hanek in double arithmetic on 24-bit chunks of 2/pi
(exact products), called through `outlined._call_if`. float32 evaluates in double
(`_sincos32_in_f64`, `_tan32_in_f64`). A unit: the functions that reduce their argument by
multiples of pi/2 and share its polynomials.
"""
from __future__ import annotations

import functools
import math

from llvmlite import ir

from ember._src.backends.cpu.mathlib.coeffs import COEFFS
from ember._src.backends.cpu.mathlib.doubleword import (_const, _div_dw, _fast_two_sum, _two_prod,
                                                        _two_sum)
from ember._src.backends.cpu.mathlib.emitter import _E, _via_f64
from ember._src.backends.cpu.mathlib.outlined import _call_if


@functools.lru_cache(None)
def _two_over_pi_chunks(nchunks: int) -> tuple:
  """The first nchunks 24-bit digits of 2/pi (integers), computed with Machin's formula."""
  nbits = 24 * nchunks + 64
  scale = 1 << (nbits + 32)

  def arctan_inv(k):                                  # atan(1/k) * scale
    total, term, n, k2 = 0, scale // k, 1, k * k
    while term:
      total += term // n if (n // 2) % 2 == 0 else -(term // n)
      term //= k2
      n += 2
    return total

  pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)        # pi * scale (error of a few units)
  t = (2 * scale << nbits) // pi                       # 2/pi * 2**nbits
  t >>= 64                                             # drop the guard bits
  return tuple((t >> (24 * (nchunks - 1 - i))) & 0xFFFFFF for i in range(nchunks))


_PH_PAD = 4                                           # zero chunks before 2/pi's first


def _ph_table(e64: _E):
  """The global table [0]*PAD + digits of 2/pi as doubles, created once per module."""
  mod = e64.b.module
  name = "ember.two_over_pi_24"
  g = mod.globals.get(name)
  if g is None:
    vals = [0.0] * _PH_PAD + [float(d) for d in _two_over_pi_chunks(56)] + [0.0] * 4
    aty = ir.ArrayType(ir.DoubleType(), len(vals))
    g = ir.GlobalVariable(mod, aty, name)
    g.initializer = ir.Constant(aty, vals)
    g.global_constant = True
    g.linkage = "internal"
  return g


def _gather(e: _E, table, idx):
  """table[idx] for an i32 (vector) index: a load, or per-lane loads for vector types."""
  b = e.b
  zero = ir.Constant(ir.IntType(32), 0)
  if not e.n:
    return b.load(b.gep(table, [zero, idx], inbounds=True))
  out = ir.Constant(e.ty, ir.Undefined)
  for lane in range(e.n):
    li = ir.Constant(ir.IntType(32), lane)
    v = b.load(b.gep(table, [zero, b.extract_element(idx, li)], inbounds=True))
    out = b.insert_element(out, v, li)
  return out


def _payne_hanek(e64: _E, ax, npieces, ndigits):
  """|x| (double, >= 1, finite) -> (n, rh, rl): |x| = n*pi/2 + rh + rl (mod 2pi), |r| <= pi/4.

  x = 2**E0 (x0 + x1 2^-24 + x2 2^-48 + ...), E0 = 24m, 24-bit pieces x_i (npieces of them
  cover the significand for any E0 alignment); 2/pi = sum F_k 2^(-24(k+1)). The digit sums
  q_j = sum_i x_i F_(j-i) are exact (< 2**50); digits of weight >= 4 are dropped, carries
  propagate exactly, and the fraction is assembled from non-negative 24-bit digits
  (complemented when it rounds up), so no cancellation ever happens. ndigits bounds the
  truncation error below 2**-(2p + 10): enough for the closest cases to multiples of pi/2."""
  e = e64
  i32 = ir.IntType(32)
  ivec = e.vec(i32)
  ex = e.b.trunc(e.b.lshr(e.bits(ax), e.ci(52)), ivec)            # biased exponent, >= 1023
  m = e.b.udiv(e.b.sub(ex, e.ci(1023, ivec)), e.ci(24, ivec))
  e0 = e.b.mul(m, e.ci(24, ivec))
  xs = e.mul(ax, e.pow2i(e.b.sext(e.b.neg(e0), e.ity)))         # in [1, 2**24), exact
  pieces = []
  for i in range(npieces):
    d = e.floor(xs)
    pieces.append(d)
    xs = e.mul(e.sub(xs, d), 2.0 ** 24)
  table = _ph_table(e)

  def chunk(k):                                       # F[m - 1 + k] (k may be negative)
    return _gather(e, table, e.b.add(m, e.ci(_PH_PAD - 1 + k, ivec)))

  chunks = {k: chunk(k) for k in range(-(npieces - 1), ndigits + 1)}
  q = []
  for d in range(ndigits + 1):                        # digit of weight 2**(-24 d)
    acc = e.mul(pieces[0], chunks[d])
    for i in range(1, npieces):
      acc = e.fma(pieces[i], chunks[d - i], acc)
    q.append(acc)
  for d in range(ndigits, 0, -1):                     # exact carry propagation
    carry = e.floor(e.mul(q[d], 2.0 ** -24))
    q[d] = e.fma(carry, -(2.0 ** 24), q[d])
    q[d - 1] = e.add(q[d - 1], carry)
  q0 = e.fma(e.floor(e.mul(q[0], 0.125)), -8.0, q[0])            # integer part mod 8
  up = e.ge(q[1], 2.0 ** 23)                          # fraction >= 1/2: round n up
  n = e.add(q0, e.sel(up, 1.0, 0.0))
  g = [e.sel(up, e.sub(2.0 ** 24 - 1, qd), qd) for qd in q[1:]]
  hi = e.fma(g[0], 2.0 ** -24, e.mul(g[1], 2.0 ** -48))            # exact (48 bits)
  lo = e.fma(g[2], 2.0 ** -72, e.mul(g[3], 2.0 ** -96)) if ndigits >= 4 else \
      e.mul(g[2], 2.0 ** -72)
  for d in range(4, ndigits):
    lo = e.fma(g[d], 2.0 ** (-24 * (d + 1)), lo)
  fh, fl = _fast_two_sum(e, hi, lo)
  ph, pl = _const("pio2", True)
  rh, rl = _two_prod(e, fh, ph)
  rl = e.add(rl, e.fma(fh, pl, e.mul(fl, ph)))
  rh, rl = _fast_two_sum(e, rh, rl)
  rh = e.sel(up, e.neg(rh), rh)
  rl = e.sel(up, e.neg(rl), rl)
  return n, rh, rl


def _cw_limit(e):
  return 2.0 ** (30 if e.f64 else 14)


def _cw_reduce(e, x, n=None):
  """x = n*pi/2 + rh + rl, |rh + rl| <= ~pi/4 (or |rh + rl| <= ~pi/2 for a given even/odd n),
  for |x| < _cw_limit (Cody-Waite with a 3-part pi/2: n*c1 is subtracted exactly by the fma,
  n*c2 as an exact product)."""
  c1, c2, c3 = _const("pio2", e.f64, parts=3)
  if n is None:
    n = e.rint(e.mul(x, _const("2opi", e.f64)[0]))
  t = e.fma(e.neg(n), c1, x)                          # exact
  a, b = _two_prod(e, n, c2)
  s, err = _two_sum(e, t, e.neg(a))
  rh, rl = _fast_two_sum(e, s, e.sub(e.sub(err, b), e.mul(n, c3)))
  return e.toint(n), rh, rl


def _ph_reduce(e, x):
  """Payne-Hanek for finite |x| >= 1 (in double arithmetic for both precisions)."""
  e64 = e.like(ir.DoubleType())
  ax = e.abs(x)
  axd = ax if e.f64 else e.b.fpext(ax, e64.ty)
  axd = e64.sel(e64.ge(axd, 1.0), axd, 1.0)
  if e.f64:
    pn, ph, pl = _payne_hanek(e64, axd, 4, 7)
  else:
    pn, ph, pl = _payne_hanek(e64, axd, 2, 4)
    h32 = e.b.fptrunc(ph, e.ty)
    pl = e.b.fptrunc(e64.add(e64.sub(ph, e.b.fpext(h32, e64.ty)), pl), e.ty)
    ph = h32
  pn = e.b.fptosi(pn, e.ity)
  neg = e.lt(x, 0.0)
  return (e.b.select(neg, e.b.neg(pn), pn), e.sel(neg, e.neg(ph), ph),
          e.sel(neg, e.neg(pl), pl))


def _sincos_dw(e, rh, rl):
  """sin and cos of rh + rl (|rh| <= ~pi/4) as unnormalized double-words (hi, lo)."""
  z = e.mul(rh, rh)
  sl = e.fma(e.mul(z, rh), e.poly(z, COEFFS[("sin", e.key)]), rl)
  hz = e.mul(z, 0.5)
  w = e.sub(1.0, hz)
  tail = e.add(e.sub(e.sub(1.0, w), hz),
               e.fma(e.mul(z, z), e.poly(z, COEFFS[("cos", e.key)]), e.neg(e.mul(rh, rl))))
  return (rh, sl), (w, tail)


def _sincos_poly(e, rh, rl):
  """(sin(rh + rl), cos(rh + rl)) for |rh| <= ~pi/4."""
  (sh, sl), (ch, cl) = _sincos_dw(e, rh, rl)
  return e.add(sh, sl), e.add(ch, cl)


def _quadrant(e, n, sp, cp, cos):
  """sin or cos of n*pi/2 + r from (sin r, cos r)."""
  if cos:
    n = e.iadd(n, 1)
  odd = e.icmp("!=", e.iand(n, 1), 0)
  negate = e.icmp("!=", e.iand(n, 2), 0)
  v = e.sel(odd, cp, sp)
  return e.sel(negate, e.neg(v), v)


def _trig_finish(e, which, n, rh, rl):
  if which == "tan":                                  # sin/cos or -cos/sin, corrected quotient
    (sh, sl), (ch, cl) = _sincos_dw(e, rh, rl)
    (sh, sl), (ch, cl) = _fast_two_sum(e, sh, sl), _fast_two_sum(e, ch, cl)
    odd = e.icmp("!=", e.iand(n, 1), 0)
    return _div_dw(e, e.sel(odd, e.neg(ch), sh), e.sel(odd, e.neg(cl), sl),
                   e.sel(odd, sh, ch), e.sel(odd, sl, cl))
  sp, cp = _sincos_poly(e, rh, rl)
  return _quadrant(e, n, sp, cp, which == "cos")


def _trig_huge(which):
  """Body of ember.<which>.huge.*: the function for huge |x| via Payne-Hanek."""
  return lambda e, x: _trig_finish(e, which, *_ph_reduce(e, x))


def _sincos32_in_f64(e, x, cos):
  """float32 sin or cos for |x| < _cw_limit, evaluated in double (e is the double emitter):
  x = h*pi + r, h = m (sin) or m + 1/2 (cos) with m an integer, |r| <= ~pi/2, so
  sin x = (-1)**m sin r and cos x = (-1)**(m+1) sin r. In double a 2-part pi (the first step
  exact in the fma) and one polynomial (~2**-35) leave only the final float32 rounding:
  about half the operations of the float32 Cody-Waite with two polynomials."""
  m = e.rint(e.sub(e.mul(x, _const("1opi", True)[0]), 0.5) if cos
             else e.mul(x, _const("1opi", True)[0]))
  h = e.add(m, 0.5) if cos else m
  p1, p2 = _const("pi", True)
  r = e.fma(h, -p2, e.fma(h, -p1, x))
  z = e.mul(r, r)
  v = e.fma(e.mul(r, z), e.poly(z, COEFFS[("sinpi2", 64)]), r)
  # (-1)**m: m's parity is the last significand bit of m + 1.5*2**52; moved to the sign bit
  odd = e.ishl(e.bits(e.add(m, 1.5 * 2.0 ** 52)), 63)
  v = e.from_bits(e.b.xor(e.bits(v), odd))
  return e.neg(v) if cos else v


def _tan32_in_f64(e, x):
  """float32 tan for |x| < _cw_limit, evaluated in double (e is the double emitter):
  x = n*pi/2 + r (2-part pi/2), tan x = sin r / cos r or -cos r / sin r (~2**-33 polynomials),
  one division in double and the final float32 rounding."""
  n = e.rint(e.mul(x, _const("2opi", True)[0]))
  p1, p2 = _const("pio2", True)
  r = e.fma(e.neg(n), p2, e.fma(e.neg(n), p1, x))
  z = e.mul(r, r)
  sn = e.fma(e.mul(r, z), e.poly(z, COEFFS[("sin32d", 64)]), r)
  cs = e.fma(z, e.poly(z, COEFFS[("cos32d", 64)]), 1.0)
  odd = e.icmp("!=", e.iand(e.bits(e.add(n, 1.5 * 2.0 ** 52)), 1), 0)     # n's parity
  return e.div(e.sel(odd, e.neg(cs), sn), e.sel(odd, sn, cs))


def _trig(e, x, which):
  """sin/cos/tan: below _cw_limit float64 Cody-Waite with double-word results, float32 in
  double (_sincos32_in_f64, _tan32_in_f64); Payne-Hanek beyond (out of line); non-finite x
  give x - x (NaN)."""
  ax = e.abs(x)
  small = e.lt(ax, _cw_limit(e))                      # false for NaN, inf, huge
  big = e.and_(e.not_(small), e.lt(ax, math.inf))
  # the rare call first: fewer values (no constants of the fast path) live across it
  other = _call_if(e, big, f"{which}.huge", _trig_huge(which), x, e.sub(x, x))
  xc = e.sel(small, x, 0.0)
  if e.f64:
    res = _trig_finish(e, which, *_cw_reduce(e, xc))
  else:
    kernel = {"sin": lambda e64, xd: _sincos32_in_f64(e64, xd, False),
              "cos": lambda e64, xd: _sincos32_in_f64(e64, xd, True), "tan": _tan32_in_f64}
    res = _via_f64(e, kernel[which], xc)
  res = e.sel(small, res, other)
  if which != "cos":
    res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 2)), x, res)         # x itself: -0, subnormal
  return res


def _sinpi_cospi(e, z):
  """sin(pi z), cos(pi z) for finite z as normalized double-words ((sh, sl), (ch, cl)), with
  an exact reduction (z - 2*rint(z/2))."""
  r = e.sub(z, e.mul(e.rint(e.mul(z, 0.5)), 2.0))     # [-1, 1], exact
  n = e.rint(e.mul(r, 2.0))
  s = e.sub(r, e.mul(n, 0.5))                         # [-1/4, 1/4], exact
  ph, pl = _const("pi", e.f64)
  th, tl = _two_prod(e, s, ph)
  tl = e.fma(s, pl, tl)
  (sh, sl), (ch, cl) = _sincos_dw(e, th, tl)
  sp, cp = _fast_two_sum(e, sh, sl), _fast_two_sum(e, ch, cl)
  ni = e.toint(n)
  odd = e.icmp("!=", e.iand(ni, 1), 0)

  def quad(n2, a, b):                                 # (a or b, selected by odd) * (-1)**n2
    neg = e.icmp("!=", e.iand(n2, 2), 0)
    return tuple(e.sel(neg, e.neg(v), v) for v in (e.sel(odd, b[0], a[0]),
                                                     e.sel(odd, b[1], a[1])))
  return quad(ni, sp, cp), quad(e.iadd(ni, 1), cp, sp)

"""ember's math library: the transcendental functions as LLVM IR (llvmlite.ir), no libm.

`emit(builder, opcode, args, ty)` returns the value of an HLO transcendental (`hlo.TRANSCENDENTAL`,
plus the helpers exp2/log2/log10) for `ty` = float or double, scalar or `ir.VectorType`. Each
function is an internal `alwaysinline` LLVM function defined once per module (`ember.sin.f32`,
`ember.exp.v4f64`, ...) whose body is straight-line code: arithmetic, `select`, integer bit tricks
and the intrinsics llvm.{fma,fabs,floor,rint,copysign,sqrt,minnum,maxnum} (and llvm.ldexp on
AVX-512 hosts with LLVM 22+, where it is one vscalef). Inlined into a loop, the loop vectorizer
turns it into SIMD code.

One deliberate exception: sin/cos/tan of huge arguments (|x| >= 2**14 in float32, 2**30 in
float64) need a Payne-Hanek reduction (~10x the cost of the whole function), so it lives in an
out-of-line function `ember.<f>.huge.<type>` called behind a branch. The call carries a
`vector-function-abi-variant` attribute naming masked vector variants (for the host's vector
widths; thin wrappers calling the scalar function per active lane, so LLVM compiles the expensive
path once), so the vectorizer still vectorizes the loop: one masked call per vector.

float32 sin, cos, tan, logistic, power, erfc, erf-inv, lgamma and digamma evaluate in double
arithmetic and round once: for the first five with short polynomials fitted for float32 accuracy,
which is both more accurate (~0.5 ulp) and fewer operations than float32 arithmetic with the
double-word corrections it would need (the rest of float32 is computed in float32).

`fma` must be fused (hardware FMA): the error-free transformations (two_prod, Cody-Waite with one
rounding) depend on it. Algorithms, coefficients (fitted by our own Remez, mathlib_fit.py) and the
measured accuracy of each function: docs/mathlib.md. Notation: `e` is the emitter (`_E`) for the
value type, `e.p` its precision (24 / 53 bits); (hi, lo) pairs are double-word values hi + lo.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction as Fr

from llvmlite import binding as llvm
from llvmlite import ir

from ember._src.backends.cpu import host

__all__ = ["emit", "OPCODES"]

# ------------------------------------------------------------------------------------------------
# The emitter: IRBuilder arithmetic on one float type (scalar or vector), constants splatted.
# ------------------------------------------------------------------------------------------------
def _suffix(ty) -> str:
  if isinstance(ty, ir.VectorType):
    return f"v{ty.count}{_suffix(ty.element)}"
  if isinstance(ty, ir.FloatType):
    return "f32"
  if isinstance(ty, ir.DoubleType):
    return "f64"
  if isinstance(ty, ir.IntType):
    return f"i{ty.width}"
  raise TypeError(f"mathlib: unsupported LLVM type {ty}")


class _E:
  """Arithmetic on values of float type `ty` (float/double or a vector of them)."""

  def __init__(self, b: ir.IRBuilder, ty):
    self.b, self.ty = b, ty
    self.n = ty.count if isinstance(ty, ir.VectorType) else None
    el = ty.element if self.n else ty
    if not isinstance(el, (ir.FloatType, ir.DoubleType)):
      raise TypeError(f"mathlib: element type must be float or double, got {el}")
    self.f64 = isinstance(el, ir.DoubleType)
    self.p = 53 if self.f64 else 24                     # precision (significand bits)
    self.w = 64 if self.f64 else 32                     # storage bits
    self.bias = 1023 if self.f64 else 127
    self.key = 64 if self.f64 else 32                   # COEFFS key
    self.ity = self.vec(ir.IntType(self.w))
    self.tiny = 2.0 ** (1 - self.bias)                  # smallest normal
    self.acc32 = False                                  # double code for a float32 result

  def vec(self, el):
    return ir.VectorType(el, self.n) if self.n else el

  def like(self, el) -> "_E":
    """An emitter for another element type with the same vector shape."""
    return _E(self.b, self.vec(el))

  # constants and conversions
  def c(self, v):
    if isinstance(v, ir.Value):
      return v
    el = self.ty.element if self.n else self.ty
    k = ir.Constant(el, float(v))
    return ir.Constant(self.ty, [k] * self.n) if self.n else k

  def ci(self, v, ity=None):
    ity = ity or self.ity
    if isinstance(v, ir.Value):
      return v
    el = ity.element if self.n else ity
    k = ir.Constant(el, int(v))
    return ir.Constant(ity, [k] * self.n) if self.n else k

  def bits(self, a):
    return self.b.bitcast(a, self.ity)

  def from_bits(self, i):
    return self.b.bitcast(i, self.ty)

  def toint(self, a):                                 # a must be an in-range integer value
    return self.b.fptosi(a, self.ity)

  def tofloat(self, i):
    return self.b.sitofp(i, self.ty)

  # float arithmetic (Python numbers are splatted constants)
  def add(self, a, b):
    return self.b.fadd(self.c(a), self.c(b))

  def sub(self, a, b):
    return self.b.fsub(self.c(a), self.c(b))

  def mul(self, a, b):
    return self.b.fmul(self.c(a), self.c(b))

  def div(self, a, b):
    return self.b.fdiv(self.c(a), self.c(b))

  def neg(self, a):
    return self.b.fneg(self.c(a))

  def _intr(self, name, *args):
    mod = self.b.module
    full = f"llvm.{name}.{_suffix(self.ty)}"
    fn = mod.globals.get(full)
    if fn is None:
      fn = ir.Function(mod, ir.FunctionType(self.ty, [self.ty] * len(args)), full)
    return self.b.call(fn, [self.c(a) for a in args])

  def fma(self, a, b, c):
    return self._intr("fma", a, b, c)

  def abs(self, a):
    return self._intr("fabs", a)

  def floor(self, a):
    return self._intr("floor", a)

  def rint(self, a):
    return self._intr("rint", a)

  def trunc(self, a):
    return self._intr("trunc", a)

  def sqrt(self, a):
    return self._intr("sqrt", a)

  def copysign(self, mag, sgn):
    return self._intr("copysign", mag, sgn)

  def min(self, a, b):
    return self._intr("minnum", a, b)

  def max(self, a, b):
    return self._intr("maxnum", a, b)

  def clamp(self, a, lo, hi):                         # NaN -> lo (minnum/maxnum drop NaN)
    return self.min(self.max(a, lo), hi)

  def clamp_keep_nan(self, a, lo, hi):                # NaN -> NaN (x86 maxps/minps)
    a = self.sel(self.lt(a, lo), lo, a)
    return self.sel(self.gt(a, hi), hi, a)

  # comparisons (ordered: false on NaN) and select
  def cmp(self, op, a, b):
    return self.b.fcmp_ordered(op, self.c(a), self.c(b))

  def lt(self, a, b):
    return self.cmp("<", a, b)

  def le(self, a, b):
    return self.cmp("<=", a, b)

  def gt(self, a, b):
    return self.cmp(">", a, b)

  def ge(self, a, b):
    return self.cmp(">=", a, b)

  def eq(self, a, b):
    return self.cmp("==", a, b)

  def isnan(self, a):
    return self.b.fcmp_unordered("uno", a, a)

  def isinf(self, a):
    return self.eq(self.abs(a), math.inf)

  def signbit(self, a):
    return self.b.icmp_signed("<", self.bits(a), self.ci(0))

  def sel(self, cond, a, b):
    return self.b.select(cond, self.c(a), self.c(b))

  def or_(self, a, b):
    return self.b.or_(a, b)

  def and_(self, a, b):
    return self.b.and_(a, b)

  def not_(self, a):
    return self.b.not_(a)

  # integer helpers (on self.ity)
  def iadd(self, a, b):
    return self.b.add(self.ci(a), self.ci(b))

  def isub(self, a, b):
    return self.b.sub(self.ci(a), self.ci(b))

  def ishl(self, a, b):
    return self.b.shl(self.ci(a), self.ci(b))

  def iashr(self, a, b):
    return self.b.ashr(self.ci(a), self.ci(b))

  def iand(self, a, b):
    return self.b.and_(self.ci(a), self.ci(b))

  def icmp(self, op, a, b):
    return self.b.icmp_signed(op, self.ci(a), self.ci(b))

  # composite helpers
  def poly(self, x, coeffs):
    """Horner with fma: sum coeffs[k] * x**k."""
    acc = self.c(coeffs[-1])
    for ck in reversed(coeffs[:-1]):
      acc = self.fma(acc, x, ck)
    return acc

  def poly_estrin(self, x, coeffs):
    """sum coeffs[k] * x**k by Estrin's scheme: pairs c0 + c1 x, then powers x^2, x^4, ...:
    about half the dependent fma chain of Horner (for long polynomials that the loop
    vectorizer cannot overlap across iterations)."""
    terms = [self.c(c) for c in coeffs]
    p = x
    while len(terms) > 1:
      nxt = [self.fma(terms[i + 1], p, terms[i]) for i in range(0, len(terms) - 1, 2)]
      if len(terms) % 2:
        nxt.append(terms[-1])
      terms = nxt
      if len(terms) > 1:
        p = self.mul(p, p)
    return terms[0]

  def pow2i(self, k):
    """2**k for an integer vector k in the normal exponent range (built from bits)."""
    return self.from_bits(self.ishl(self.iadd(k, self.bias), self.p - 1))

  def scale(self, a, k):
    """a * 2**k for |k| <= 2*bias: two exact steps, so only the last one rounds; one
    `llvm.ldexp` (vscalef) where the host has AVX-512 and LLVM vectorizes it (elsewhere
    ldexp is a libm call). Both give the same bits."""
    if _vector_ldexp():
      ity = self.vec(ir.IntType(32))
      kk = self.b.trunc(k, ity) if self.f64 else k
      name = f"llvm.ldexp.{_suffix(self.ty)}.{_suffix(ity)}"
      mod = self.b.module
      fn = mod.globals.get(name) or ir.Function(
          mod, ir.FunctionType(self.ty, [self.ty, ity]), name)
      return self.b.call(fn, [self.c(a), kk])
    k1 = self.iashr(k, 1)
    return self.mul(self.mul(a, self.pow2i(k1)), self.pow2i(self.isub(k, k1)))

  def has_scalef(self) -> bool:
    """A zmm vector on AVX-512 (where `scale` is vscalef): `scalef` may be used."""
    return bool(self.n) and self.n * self.w == 512 and _vector_ldexp()

  def scalef(self, a, kf):
    """`scale(a, toint(kf))` for an integer-valued float kf with |kf| <= 2*bias
    (`has_scalef` only): one vscalef of kf itself, the instruction `scale` ends in, without
    LLVM's round trip of kf through an integer vector (same bits, two ops less); a NaN in
    a or kf gives NaN."""
    name = f"llvm.x86.avx512.mask.scalef.{'pd' if self.f64 else 'ps'}.512"
    mask = ir.IntType(self.n)
    mod = self.b.module
    fn = mod.globals.get(name) or ir.Function(
        mod, ir.FunctionType(self.ty, [self.ty, self.ty, self.ty, mask, ir.IntType(32)]), name)
    return self.b.call(fn, [self.c(a), kf, ir.Constant(self.ty, None), ir.Constant(mask, -1),
                            ir.Constant(ir.IntType(32), 4)])

  def select_coeffs(self, conds, tables):
    """Per-element coefficients: tables[i] where conds[i] holds (first match), else last."""
    deg = max(len(t) for t in tables)
    tables = [list(t) + [0.0] * (deg - len(t)) for t in tables]
    out = []
    for k in range(deg):
      v = self.c(tables[-1][k])
      for cond, t in reversed(list(zip(conds, tables[:-1]))):
        v = self.sel(cond, t[k], v)
      out.append(v)
    return out

  def poly_v(self, x, coeffs):
    """Horner with per-element (already splatted/selected) coefficients."""
    acc = coeffs[-1]
    for ck in reversed(coeffs[:-1]):
      acc = self.fma(acc, x, ck)
    return acc


# ------------------------------------------------------------------------------------------------
# Error-free transformations (need a fused fma).
# ------------------------------------------------------------------------------------------------
def _two_sum(e, a, b):
  s = e.add(a, b)
  bb = e.sub(s, a)
  return s, e.add(e.sub(a, e.sub(s, bb)), e.sub(b, bb))


def _fast_two_sum(e, a, b):                          # |a| >= |b| or a == 0
  s = e.add(a, b)
  return s, e.sub(b, e.sub(s, a))


def _two_prod(e, a, b):
  p = e.mul(a, b)
  return p, e.fma(a, b, e.neg(p))


# Exact values (80 digits) of the constants; _const splits them into float/double parts.
_DIGITS = {
    "pi": "3.1415926535897932384626433832795028841971693993751058209749445923078164062862090",
    "ln2": "0.69314718055994530941723212145817656807550013436025525412068000949339362196969472",
    "ln10": "2.3025850929940456840179914546843642076011014886287729760333279009675726096773525",
    "sqrtpi": "1.7724538509055160272981674833411451827975494561223871282138077898529112845910322",
    "hl2pi": "0.91893853320467274178032973640561763986139747363778341281715154048276569592726039",
    "x0": "1.4616321449683623412626595423257213284681962040064463512959884085987864403538018",
}


@functools.lru_cache(None)
def _const(name: str, f64: bool, parts: int = 2, nbits: int | None = None) -> tuple:
  """Constant `name` as `parts` floats of the precision (hi first, each rounded to nearest);
  with nbits the hi part keeps only nbits bits (so k * hi is exact for small integers k)."""
  d = {k: Fr(v) for k, v in _DIGITS.items()}
  v = {"pi": d["pi"], "pio2": d["pi"] / 2, "pio4": d["pi"] / 4, "3pio4": 3 * d["pi"] / 4,
       "2opi": 2 / d["pi"], "1opi": 1 / d["pi"], "ln2": d["ln2"], "log2e": 1 / d["ln2"], "log10e": 1 / d["ln10"],
       "log10_2": d["ln2"] / d["ln10"], "2osqrtpi": 2 / d["sqrtpi"], "hl2pi": d["hl2pi"],
       "2o3": Fr(2, 3), "x0": d["x0"]}[name]
  out = []
  for i in range(parts):
    bits = nbits if (i == 0 and nbits) else (53 if f64 else 24)
    if v == 0:
      out.append(0.0)
      continue
    q = Fr(2) ** (math.floor(math.log2(abs(v))) - bits + 1)
    out.append(float(round(v / q) * q))
    v -= Fr(out[-1])
  return tuple(out)


# ------------------------------------------------------------------------------------------------
# exp / expm1 / exp2 and the scaled core shared by sinh, cosh, erfc, pow.
# ------------------------------------------------------------------------------------------------
def _expm1_poly(e, r):
  """expm1(r) - r for |r| <= ln2/2 (so expm1(r) = r + _expm1_poly)."""
  r2 = e.mul(r, r)
  return e.fma(e.mul(r2, r), e.poly(r, COEFFS[("expm1", e.key)]), e.mul(r2, 0.5))


def _exp_reduce(e, x, xl=None):
  """x (+ xl) = k*ln2 + (r + rl), |r| <= ~ln2/2, for finite x with |k| <= 2*bias."""
  l2h, l2l = _const("ln2", e.f64)
  k = e.rint(e.mul(x, _const("log2e", e.f64)[0]))
  t = e.fma(e.neg(k), l2h, x)                         # exact (Cody-Waite with a fused fma)
  r = e.fma(e.neg(k), l2l, t)
  rl = e.fma(e.neg(k), l2l, e.sub(t, r))              # the rounding error of r
  if xl is not None:
    rl = e.add(rl, xl)
  return k, r, rl


def _exp_core(e, x, xl=None, in_range=False):
  """(k, m) with exp(x + xl) = m * 2**k, m in [0.7, 1.42] (x clamped: NaN -> finite;
  `in_range`: the caller's x is finite and within the limits already, no clamp to emit)."""
  lim = _exp_limit(e)
  k, r, rl = _exp_reduce(e, x if in_range else e.clamp(x, -lim, lim), xl)
  q = _expm1_poly(e, r)                               # exp(r + rl) = (1 + r + q)(1 + rl)
  m = e.add(1.0, e.add(r, e.add(q, e.fma(rl, e.add(r, q), rl))))
  return e.toint(k), m


def _exp_core_dw(e, x, lim=None, xl=None):
  """(k, mh, ml) with exp(x + xl) = (mh + ml) * 2**k to ~2**-(p+4): m as a double-word."""
  lim = _exp_limit(e) if lim is None else lim
  k, r, rl = _exp_reduce(e, e.clamp(x, -lim, lim), xl)
  q = _expm1_poly(e, r)
  vh, vl = _fast_two_sum(e, r, e.add(q, e.fma(rl, e.add(r, q), rl)))     # expm1(r + rl)
  mh, t = _fast_two_sum(e, 1.0, vh)
  return e.toint(k), mh, e.add(t, vl)


def _div_dw(e, nh, nl, dh, dl):
  """(nh + nl) / (dh + dl) (normalized double-words: |dl| <= ulp(dh)) to ~0.5 ulp: one
  division, then a Markstein correction with the exact remainder (fma)."""
  inv = e.div(1.0, dh)
  q = e.mul(nh, inv)
  rem = e.add(e.fma(e.neg(q), dh, nh), e.fma(e.neg(q), dl, nl))
  return e.fma(rem, inv, q)


def _exp_limit(e):
  return (e.bias + e.p + 10) * math.log(2)            # beyond: 2**k over/underflows anyway


def _exp(e, x):
  if e.f64:
    k, m = _exp_core(e, x)
  else:     # float32: r's rounding error (<= 2**-27 relative) costs ~0.1 ulp; not worth 4 ops
    lim = _exp_limit(e)
    if e.has_scalef():     # zmm: a NaN flows through every op (no select of x at the end)
      k, r, _ = _exp_reduce(e, e.clamp_keep_nan(x, -lim, lim))
      return e.scalef(e.add(1.0, e.add(r, _expm1_poly(e, r))), k)
    k, r, _ = _exp_reduce(e, e.clamp(x, -lim, lim))
    m = e.add(1.0, e.add(r, _expm1_poly(e, r)))
    k = e.toint(k)
  return e.sel(e.isnan(x), x, e.scale(m, k))


def _exp2(e, x):
  lim = e.bias + e.p + 10
  xc = e.clamp(x, -lim, lim)
  k = e.rint(xc)
  f = e.sub(xc, k)                                    # exact
  l2h, l2l = _const("ln2", e.f64)
  th, tl = _two_prod(e, f, l2h)
  tl = e.fma(f, l2l, tl)
  q = _expm1_poly(e, th)
  m = e.add(1.0, e.add(th, e.add(q, e.fma(tl, e.add(th, q), tl))))
  return e.sel(e.isnan(x), x, e.scale(m, e.toint(k)))


def _expm1(e, x):
  lo, hi = -(e.p + 4) * math.log(2), (e.bias + 2) * math.log(2)
  k, r, rl = _exp_reduce(e, e.clamp(x, lo, hi))
  q = _expm1_poly(e, r)
  em = e.add(r, e.add(q, e.fma(rl, e.add(r, q), rl)))             # expm1(r + rl)
  ki = e.toint(k)
  big = e.gt(k, e.p + 8)                              # 2**k - 1 == 2**k to working precision
  safe_k = e.b.select(big, e.ci(0), ki)
  pk = e.pow2i(safe_k)
  small_res = e.fma(pk, em, e.sub(pk, 1.0))           # 2**k*em + (2**k - 1), one rounding
  res = e.sel(big, e.scale(e.add(em, 1.0), ki), small_res)
  res = e.sel(e.lt(e.abs(x), 2.0 ** -(e.p + 1)), x, res)         # keeps -0 and subnormals
  return e.sel(e.isnan(x), x, res)


# ------------------------------------------------------------------------------------------------
# log / log1p / log2 / log10.
# ------------------------------------------------------------------------------------------------
def _log_split(e, x):
  """x > 0 (finite, subnormals too) -> (k, f): x = 2**k (1 + f), 1 + f in [sqrt(1/2), sqrt2)."""
  sub = e.lt(x, e.tiny)
  xs = e.sel(sub, e.mul(x, 2.0 ** e.p), x)
  ix = e.bits(xs)
  half = e.bits(e.c(math.sqrt(0.5)))
  k = e.iashr(e.isub(ix, half), e.p - 1)
  m = e.from_bits(e.isub(ix, e.ishl(k, e.p - 1)))
  k = e.b.select(sub, e.isub(k, e.p), k)
  return e.tofloat(k), e.sub(m, 1.0)


def _log1p_kernel(e, f):
  """(hfsq, tail): log(1 + f) = f - (hfsq - tail) for f in [sqrt(1/2) - 1, sqrt2 - 1], with
  s = f/(2+f), hfsq = f*f/2, tail = s*(hfsq + R), 2atanh(s) = 2s + s*R (fdlibm's form)."""
  s = e.div(f, e.add(f, 2.0))
  z = e.mul(s, s)
  hfsq = e.mul(e.mul(f, f), 0.5)
  R = e.mul(z, e.poly(z, COEFFS[("log", e.key)]))     # 2atanh(s) = 2s + s*R
  return hfsq, e.mul(s, e.add(hfsq, R))


def _ln2_parts(e):
  return _const("ln2", e.f64, nbits=e.p - 12)         # k*hi exact for |k| < 2**12


def _log_finish(e, x, res):
  res = e.sel(e.eq(x, math.inf), math.inf, res)
  res = e.sel(e.eq(x, 0.0), -math.inf, res)
  res = e.sel(e.lt(x, 0.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _log_core(e, x):
  """log(x) for finite x > 0."""
  k, f = _log_split(e, x)
  hfsq, t = _log1p_kernel(e, f)
  h, l = _ln2_parts(e)
  return e.fma(k, h, e.sub(f, e.sub(hfsq, e.fma(k, l, t))))


def _log(e, x):
  return _log_finish(e, x, _log_core(e, x))


def _log_hl(e, x):
  """log(x) as (hi, lo), about p + 5 bits (used where log is multiplied by a big number)."""
  k, f = _log_split(e, x)
  hfsq, t = _log1p_kernel(e, f)
  h, l = _ln2_parts(e)
  a = e.mul(k, h)                                     # exact
  s, err = _two_sum(e, a, f)
  b = e.sub(e.fma(k, l, t), hfsq)
  hi, err2 = _two_sum(e, s, b)
  return hi, e.add(err, err2)


def _log1p_core(e, x, xl=None):
  """log(1 + x + xl) for x > -1 (finite; xl a small low part, as from a double-word)."""
  u = e.add(x, 1.0)
  k, f = _log_split(e, e.max(u, e.tiny))
  # c = (1 + x) - u exactly (u's rounding error; Fast2Sum with the larger of 1, |x| first),
  # divided by u: log(1 + x) = log(u) + c/u.
  big = e.gt(e.abs(x), 1.0)
  c = e.sub(e.sel(big, 1.0, x), e.sub(u, e.sel(big, x, 1.0)))
  if xl is not None:
    c = e.add(c, xl)
  c = e.div(c, u)
  hfsq, t = _log1p_kernel(e, f)
  h, l = _ln2_parts(e)
  return e.fma(k, h, e.sub(f, e.sub(hfsq, e.add(t, e.fma(k, l, c)))))


def _log1p(e, x):
  res = _log1p_core(e, x)
  res = e.sel(e.lt(e.abs(x), 2.0 ** -(e.p + 1)), x, res)         # -0, subnormals, tiny
  res = e.sel(e.eq(x, math.inf), math.inf, res)
  res = e.sel(e.eq(x, -1.0), -math.inf, res)
  res = e.sel(e.lt(x, -1.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _log_base(e, x, name):
  """log2 / log10: (log(x) as hi+lo) * constant with the k term kept exact."""
  k, f = _log_split(e, x)
  hfsq, t = _log1p_kernel(e, f)
  hi = e.sub(f, hfsq)
  lo = e.add(e.sub(e.sub(f, hi), hfsq), t)            # log(1+f) = hi + lo
  ch, cl = _const("log2e" if name == "log2" else "log10e", e.f64)
  vh, vl = _two_prod(e, hi, ch)
  vl = e.add(vl, e.fma(lo, ch, e.mul(hi, cl)))
  if name == "log2":
    kh, kl = k, e.c(0.0)
  else:
    kch, kcl = _const("log10_2", e.f64, nbits=e.p - 12)
    kh, kl = e.mul(k, kch), e.mul(k, kcl)
  w, err = _two_sum(e, kh, vh)
  res = e.add(w, e.add(err, e.add(vl, kl)))
  return _log_finish(e, x, res)


# ------------------------------------------------------------------------------------------------
# sin / cos / tan: Cody-Waite (double-word result) inline for |x| < 2**cw; beyond, an out-of-line
# Payne-Hanek in double arithmetic on 24-bit chunks of 2/pi (exact products).
# ------------------------------------------------------------------------------------------------
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


@functools.lru_cache(None)
def _vector_ldexp() -> bool:
  """Whether `scale` may use llvm.ldexp: one vscalef on AVX-512, but the loop vectorizer
  widens llvm.ldexp only in newer LLVMs (LLVM 22 does; LLVM 20, llvmlite 0.45, leaves the
  whole loop scalar)."""
  return host.has("avx512f") and llvm.llvm_version_info >= (22,)


@functools.lru_cache(None)
def _vfabi_widths(bits: int) -> tuple:
  """Vector widths (lanes of `bits`-bit floats) the host's loop vectorizer can choose: each
  masked variant we name costs compile time, so only the host's register widths
  (host.vector_register_bits)."""
  return tuple(r // bits for r in host.vector_register_bits())


def _call_if(e, cond, short, impl, x, fallback):
  """cond ? f(x) : fallback, where f = ember.<short>.<type> is a rarely needed, expensive
  function kept out of line (noinline). Scalar: a branch around the call, which carries the
  `vector-function-abi-variant` attribute naming masked vector variants, so the loop
  vectorizer turns the predicated call into one call per vector (the variant calls f for the
  active lanes only). Vector types: the same branch on any(cond)."""
  b = e.b
  mod = b.module
  if e.n:
    callee = _outlined(mod, short, impl, e.ty, masked=True)
    i1v = cond.type
    rname = f"llvm.vector.reduce.or.{_suffix(i1v)}"
    red = mod.globals.get(rname) or ir.Function(mod, ir.FunctionType(ir.IntType(1), [i1v]),
                                               rname)
    any_ = b.call(red, [cond])
    args = [x, cond]
  else:
    callee = _outlined(mod, short, impl, e.ty, masked=False)
    any_ = cond
    args = [x]
  here = b.block
  slow = b.append_basic_block(f"{short}.slow")
  done = b.append_basic_block(f"{short}.done")
  b.cbranch(any_, slow, done)
  b.position_at_end(slow)
  val = b.call(callee, args)
  if not e.n:
    variants = []
    for vf in _vfabi_widths(64 if e.f64 else 32):
      vty = ir.VectorType(e.ty, vf)
      vfn = _outlined(mod, short, impl, vty, masked=True)
      variants.append(f"_ZGV_LLVM_M{vf}v_{callee.name}({vfn.name})")
    # llvmlite only knows a fixed list of call attributes; this one is a string attribute.
    if variants:
      set.add(val.attributes, '"vector-function-abi-variant"="%s"' % ",".join(variants))
  b.branch(done)
  b.position_at_end(done)
  phi = b.phi(e.ty)
  phi.add_incoming(fallback, here)
  phi.add_incoming(val, slow)
  return e.sel(cond, phi, fallback) if e.n else phi


def _outlined(module, short, impl, ty, masked):
  """ember.<short>.<type>: a noinline, cold, side-effect-free function (weak_odr: it must
  survive until the vectorizer looks the variants up by name). Only the scalar function holds
  the code, so LLVM optimizes the expensive path once per module. A masked vector variant
  (<N x i1> mask) returns at once when no lane is active, else calls ember.<short>.<type>.lanes,
  which calls the scalar function for each active lane. The vectorized loop calls the variant
  once per vector; both are marked "no_caller_saved_registers" (x86: a call to them clobbers
  no register, so the loop keeps its constants in registers across it, and the variant's fast
  exit saves nothing; .lanes saves what the scalar calls clobber, only when a lane is huge)."""
  name = f"ember.{short}.{_suffix(ty)}"
  fn = module.globals.get(name)
  if fn is not None:
    return fn
  args = [ty] + ([ir.VectorType(ir.IntType(1), ty.count)] if masked else [])

  def define(fname, extra=(), attrs=("noinline", "nounwind", "readnone", "cold", "optsize")):
    f = ir.Function(module, ir.FunctionType(ty, args), fname)
    f.linkage = "weak_odr"
    for attr in attrs:
      f.attributes.add(attr)
    for attr in extra:                                # string attributes: not in llvmlite's list
      set.add(f.attributes, attr)
    return f, ir.IRBuilder(f.append_basic_block("entry"))

  if not masked:
    fn, b = define(name)
    b.ret(impl(_E(b, ty), fn.args[0]))
    return fn
  scalar = _outlined(module, short, impl, ty.element, False)
  ncsr = ['"no_caller_saved_registers"']
  lanes, b = define(name + ".lanes", ncsr)            # saves every register itself (rare path)
  # for (i = 0; i < N; i++) if (mask[i]) r[i] = f(x[i]): a loop (one call site, small code)
  i32 = ir.IntType(32)
  entry = b.block
  loop, call, latch, done = (lanes.append_basic_block(n)
                             for n in ("loop", "call", "latch", "done"))
  b.branch(loop)
  b.position_at_end(loop)
  i, acc = b.phi(i32), b.phi(ty)
  i.add_incoming(ir.Constant(i32, 0), entry)
  acc.add_incoming(ir.Constant(ty, None), entry)
  b.cbranch(b.extract_element(lanes.args[1], i), call, latch)
  b.position_at_end(call)
  upd = b.insert_element(acc, b.call(scalar, [b.extract_element(lanes.args[0], i)]), i)
  b.branch(latch)
  b.position_at_end(latch)
  acc2 = b.phi(ty)
  acc2.add_incoming(acc, loop)
  acc2.add_incoming(upd, call)
  i2 = b.add(i, ir.Constant(i32, 1))
  i.add_incoming(i2, latch)
  acc.add_incoming(acc2, latch)
  b.cbranch(b.icmp_unsigned("<", i2, ir.Constant(i32, ty.count)), loop, done)
  ir.IRBuilder(done).ret(acc2)
  fn, b = define(name, ncsr, ("noinline", "nounwind", "readnone"))
  i1v = args[1]                                       # the common case: no lane active
  rname = f"llvm.vector.reduce.or.{_suffix(i1v)}"
  red = module.globals.get(rname) or ir.Function(module, ir.FunctionType(ir.IntType(1), [i1v]),
                                                 rname)
  work, skip = fn.append_basic_block("work"), fn.append_basic_block("skip")
  b.cbranch(b.call(red, [fn.args[1]]), work, skip)
  ir.IRBuilder(skip).ret(ir.Constant(ty, None))
  b = ir.IRBuilder(work)
  b.ret(b.call(lanes, list(fn.args)))
  return fn


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


def _div_dw2(e, nh, nl, dh, dl):
  """(nh + nl) / (dh + dl) as a double-word (q, ql) (see _div_dw)."""
  inv = e.div(1.0, dh)
  q = e.mul(nh, inv)
  rem = e.add(e.fma(e.neg(q), dh, nh), e.fma(e.neg(q), dl, nl))
  return _fast_two_sum(e, q, e.mul(rem, inv))


# ------------------------------------------------------------------------------------------------
# Hyperbolic functions and logistic.
# ------------------------------------------------------------------------------------------------
def _exp_half_scaled(e, ax):
  """exp(ax) / 2 for ax >= 0 without intermediate overflow (ax up to the overflow limit)."""
  k, m = _exp_core(e, ax)
  return e.scale(m, e.isub(k, 1))


def _hyp_limit(e):
  return 20.0 if e.f64 else 10.0                      # beyond: exp(-2|x|) < 2**-(p+2)


def _sinh(e, x):
  ax = e.abs(x)
  z = e.mul(x, x)
  small = e.fma(e.mul(z, x), e.poly(z, COEFFS[("sinh", e.key)]), x)            # |x| < 1
  em = _expm1(e, e.min(ax, 64.0))
  mid = e.mul(0.5, e.add(em, e.div(em, e.add(em, 1.0))))          # (e - 1/e)/2 via expm1
  large = e.sel(e.lt(ax, _hyp_limit(e)), mid, _exp_half_scaled(e, ax))
  res = e.sel(e.lt(ax, 1.0), small, e.copysign(large, x))
  return e.sel(e.isnan(x), x, res)


def _cosh(e, x):
  ax = e.abs(x)
  k, m = _exp_core(e, e.min(ax, 64.0))
  ex = e.scale(m, k)
  mid = e.mul(0.5, e.add(ex, e.div(1.0, ex)))
  res = e.sel(e.lt(ax, _hyp_limit(e)), mid, _exp_half_scaled(e, ax))
  return e.sel(e.isnan(x), x, res)


def _exp_neg_dw(e, ax, lim):
  """exp(-ax) for ax >= 0 as a double-word (eh, el) (ax clamped at lim)."""
  k, mh, ml = _exp_core_dw(e, e.neg(e.min(ax, lim)))
  if lim / math.log(2) < e.bias - 2:                  # 2**k normal: one exact scaling
    pk = e.pow2i(k)
    return e.mul(mh, pk), e.mul(ml, pk)
  return e.scale(mh, k), e.scale(ml, k)


def _exp32_in_f64(e, t):
  """(2**k, expm1(r)) with exp(t) = 2**k (1 + expm1(r)) for |t| <= ~1000, in double to
  ~2**-31 (float32 accuracy: a one-part ln2 reduction, a degree-7 polynomial)."""
  k = e.rint(e.mul(t, _const("log2e", True)[0]))
  r = e.fma(e.neg(k), _const("ln2", True)[0], t)     # error <= |k| 2**-54
  p = e.fma(e.mul(r, r), e.fma(r, e.poly(r, COEFFS[("expm1_32d", 64)]), 0.5), r)
  return e.pow2i(e.toint(k)), p


def _tanh32(e, x):
  """float32 tanh in float32 (~1 ulp, ~28 vector ops): |x| < 0.8: x + x^3 P(x^2) (deg 6,
  ~2**-32); beyond: 1 - 2/(1 + E), E = exp(2|x|), whose rounding errors are scaled down by
  2/(1 + E) <= 0.34 (|x| clamped at 9.5, where float32 tanh is 1); NaN takes the first."""
  ax = e.abs(x)
  z = e.mul(ax, ax)
  small = e.fma(e.mul(z, ax), e.poly(z, COEFFS[("tanh32", 32)]), ax)
  return e.copysign(e.sel(e.ge(ax, 0.8), _tanh32_big(e, e.min(ax, 9.5)), small), x)


def _tanh32_big(e, t):
  """1 - 2/(1 + exp(2t)) for 0 <= t <= 9.5: 2t = k ln2 + r, exp(r) = 1 + r Q(r) (~2**-26,
  plenty once scaled down); k is rounded by adding a magic number whose sum's bits, shifted
  into the exponent field, are 2**k (its +127 is the exponent bias)."""
  magic = 1.5 * 2.0 ** 23 + 127
  tm = e.fma(t, 2 * _const("log2e", False)[0], magic)     # 2t log2(e), rounded to an integer
  k = e.sub(tm, magic)                                        # in [0, 28]
  l2h, l2l = _const("ln2", False)
  r = e.add(e.fma(e.neg(k), l2h, e.add(t, t)), e.mul(e.neg(k), l2l))
  em = e.fma(r, e.poly(r, COEFFS[("expm1q", 32)]), 1.0)
  ex = e.mul(em, e.from_bits(e.ishl(e.bits(tm), 23)))
  return e.sub(1.0, e.div(2.0, e.add(ex, 1.0)))


def _tanh(e, x):
  if not e.f64:
    return _tanh32(e, x)
  # (1 - E) / (1 + E), E = exp(-2|x|) as a double-word: 1 - E has no rounding error to
  # cancel, and the quotient is corrected (~0.6 ulp in all).
  ax = e.abs(x)
  eh, el = _exp_neg_dw(e, e.add(ax, ax), 40.0)
  nh, nl = _fast_two_sum(e, 1.0, e.neg(eh))
  dh, dl = _fast_two_sum(e, 1.0, eh)
  res = _div_dw(e, nh, e.sub(nl, el), dh, e.add(dl, el))
  res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 2)), ax, res)            # x itself: -0, subnormals
  res = e.copysign(res, x)
  return e.sel(e.isnan(x), x, res)


def _logistic32_in_f64(e, x):
  """float32 logistic in double: E = exp(-|x|), 1/(1 + E) or E/(1 + E) (|x| <= 110: beyond,
  the float32 result is 1 or 0 anyway)."""
  pk, p = _exp32_in_f64(e, e.neg(e.min(e.abs(x), 110.0)))
  ex = e.fma(pk, p, pk)
  return e.div(e.sel(e.lt(x, 0.0), ex, 1.0), e.add(ex, 1.0))


def _logistic(e, x):
  if not e.f64:
    return e.sel(e.isnan(x), x, _via_f64(e, _logistic32_in_f64, x))
  # E = exp(-|x|) as a double-word; 1/(1 + E) (x >= 0) or E/(1 + E), corrected quotient.
  ax = e.abs(x)
  eh, el = _exp_neg_dw(e, ax, _exp_limit(e))
  dh, dl = _fast_two_sum(e, 1.0, eh)
  neg = e.lt(x, 0.0)
  res = _div_dw(e, e.sel(neg, eh, 1.0), e.sel(neg, el, 0.0), dh, e.add(dl, el))
  return e.sel(e.isnan(x), x, res)


# ------------------------------------------------------------------------------------------------
# Inverse trigonometric / hyperbolic.
# ------------------------------------------------------------------------------------------------
def _atan_core(e, t):
  z = e.mul(t, t)
  return e.mul(e.mul(z, t), e.poly(z, COEFFS[("atan", e.key)]))     # atan(t) - t


_TAN_PI8 = 0.41421356237309503


def _atan(e, x):
  ax = e.abs(x)
  r0 = e.le(ax, _TAN_PI8)
  r1 = e.le(ax, 1 / _TAN_PI8)
  nh, nl = _two_sum(e, ax, -1.0)                      # (|x| - 1) / (|x| + 1), exact operands
  dh, dl = _two_sum(e, ax, 1.0)
  t = e.sel(r0, ax, e.sel(r1, _div_dw(e, nh, nl, dh, dl), e.div(-1.0, ax)))
  p4h, p4l = _const("pio4", e.f64)
  p2h, p2l = _const("pio2", e.f64)
  bh = e.sel(r0, 0.0, e.sel(r1, p4h, p2h))
  bl = e.sel(r0, 0.0, e.sel(r1, p4l, p2l))
  res = e.add(bh, e.add(t, e.add(_atan_core(e, t), bl)))
  return e.sel(e.isnan(x), x, e.copysign(res, x))


def _atan2(e, y, x):
  ax, ay = e.abs(x), e.abs(y)
  swap = e.gt(ay, ax)
  hi, lo = e.max(ax, ay), e.min(ax, ay)
  ratio = e.div(lo, hi)
  direct = e.le(ratio, _TAN_PI8)
  h2 = 2.0 ** (e.bias // 2)                           # exact scalings: lo + hi must not
  s = e.sel(e.gt(hi, 1.0), 0.5, e.sel(e.lt(hi, 1 / h2), h2, 1.0))     # overflow, 1/(lo+hi) too
  ls, hs = e.mul(lo, s), e.mul(hi, s)
  nh, nl = _two_sum(e, ls, e.neg(hs))                 # (lo - hi) / (lo + hi), exact operands
  dh, dl = _fast_two_sum(e, hs, ls)
  t = e.sel(direct, ratio, _div_dw(e, nh, nl, dh, dl))
  tp = e.add(t, _atan_core(e, t))                     # atan(t)
  neg_x = e.signbit(x)
  # theta = B + sigma * atan(t), B in {0, pi/4, pi/2, 3pi/4, pi} (hi, lo); sigma = +-1.
  consts = {k: _const(k, e.f64) for k in ("pio4", "pio2", "3pio4", "pi")}
  base = e.sel(direct, 0.0, 1.0)                      # 0 -> angle 0, 1 -> pi/4 (in units pi/4)
  base = e.sel(swap, e.sub(2.0, base), base)
  base = e.sel(neg_x, e.sub(4.0, base), base)
  sigma = e.sel(e.b.xor(swap, neg_x), -1.0, 1.0)

  def pick(part):
    v = e.c(0.0)
    for units, name in ((1.0, "pio4"), (2.0, "pio2"), (3.0, "3pio4"), (4.0, "pi")):
      v = e.sel(e.eq(base, units), consts[name][part], v)
    return v

  theta = e.add(pick(0), e.fma(sigma, tp, pick(1)))
  both0 = e.and_(e.eq(ax, 0.0), e.eq(ay, 0.0))
  theta = e.sel(both0, e.sel(neg_x, consts["pi"][0], 0.0), theta)
  bothinf = e.and_(e.isinf(x), e.isinf(y))
  theta = e.sel(bothinf, e.sel(neg_x, consts["3pio4"][0], consts["pio4"][0]), theta)
  res = e.copysign(theta, y)
  return e.sel(e.or_(e.isnan(x), e.isnan(y)), e.add(x, y), res)


def _asin_parts(e, ax):
  """For ax in [0, 1]: (big, s, tail) with asin(s) = s + tail and
  asin(ax) = s + tail (ax <= 1/2) or pi/2 - 2*(s + tail) (ax > 1/2, s = sqrt((1-ax)/2))."""
  big = e.gt(ax, 0.5)
  z = e.sel(big, e.mul(e.sub(1.0, ax), 0.5), e.mul(ax, ax))
  s = e.sel(big, e.sqrt(z), ax)
  c = e.sel(big, e.div(e.fma(e.neg(s), s, z), e.max(e.add(s, s), e.tiny)), 0.0)  # sqrt's error
  tail = e.fma(e.mul(s, z), e.poly(z, COEFFS[("asin", e.key)]), c)
  return big, s, tail


def _asin(e, x):
  ax = e.abs(x)
  big, s, tail = _asin_parts(e, ax)
  ph, pl = _const("pio2", e.f64)
  far = e.add(e.sub(ph, e.mul(s, 2.0)), e.sub(pl, e.mul(tail, 2.0)))
  res = e.sel(big, far, e.add(s, tail))
  res = e.sel(e.gt(ax, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, e.copysign(res, x))


def _acos(e, x):
  ax = e.abs(x)
  big, s, tail = _asin_parts(e, ax)
  ph, pl = _const("pio2", e.f64)
  pih, pil = _const("pi", e.f64)
  small = e.add(e.sub(ph, x), e.sub(pl, e.copysign(tail, x)))     # pi/2 - asin(x)
  pos = e.mul(e.add(s, tail), 2.0)
  negv = e.add(e.sub(pih, e.mul(s, 2.0)), e.sub(pil, e.mul(tail, 2.0)))
  res = e.sel(big, e.sel(e.lt(x, 0.0), negv, pos), small)
  res = e.sel(e.gt(ax, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _asinh(e, x):
  ax = e.abs(x)
  z = e.mul(ax, ax)
  q = e.div(z, e.add(e.sqrt(e.add(z, 1.0)), 1.0))     # x^2 / (1 + sqrt(1 + x^2)) <= |x|
  small = _log1p_core(e, *_fast_two_sum(e, ax, q))
  mid = _log(e, e.add(e.mul(ax, 2.0), e.div(1.0, e.add(e.sqrt(e.add(z, 1.0)), ax))))
  huge_ = e.add(_log(e, ax), _const("ln2", e.f64)[0])
  lim = 2.0 ** (e.p // 2 + 1)
  res = e.sel(e.lt(ax, 2.0), small, e.sel(e.lt(ax, lim), mid, huge_))
  res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 1)), ax, res)
  return e.sel(e.isnan(x), x, e.copysign(res, x))


def _acosh(e, x):
  t = e.sub(x, 1.0)
  # log1p(t + sqrt(2t + t^2)) with the sqrt's argument and result as double-words
  t2, t2l = _two_prod(e, t, t)
  ah, al = _fast_two_sum(e, e.mul(t, 2.0), t2)        # 2t >= t^2 for t < 2
  sq = e.sqrt(ah)
  sql = e.div(e.add(e.fma(e.neg(sq), sq, ah), e.add(al, t2l)), e.max(e.add(sq, sq), e.tiny))
  gh, gl = _fast_two_sum(e, sq, t)                    # sqrt(2t + t^2) >= t
  small = _log1p_core(e, gh, e.add(gl, sql))
  mid = _log(e, e.sub(e.mul(x, 2.0), e.div(1.0, e.add(x, e.sqrt(e.fma(x, x, -1.0))))))
  huge_ = e.add(_log(e, x), _const("ln2", e.f64)[0])
  lim = 2.0 ** (e.p // 2 + 1)
  res = e.sel(e.lt(x, 2.0), small, e.sel(e.lt(x, lim), mid, huge_))
  res = e.sel(e.lt(x, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, res)


def _atanh(e, x):
  ax = e.abs(x)
  # (1/2) log1p(2|x| / (1 - |x|)), the quotient as a double-word (1 - |x| = om + oml exactly)
  om, oml = _fast_two_sum(e, 1.0, e.neg(ax))
  inv = e.div(1.0, e.max(om, e.tiny))
  ax2 = e.add(ax, ax)
  q = e.mul(ax2, inv)
  ql = e.mul(e.sub(e.fma(e.neg(q), om, ax2), e.mul(q, oml)), inv)
  res = e.mul(_log1p_core(e, e.sel(e.lt(ax, 1.0), q, 0.0), ql), 0.5)
  res = e.sel(e.eq(ax, 1.0), math.inf, res)
  res = e.sel(e.lt(ax, 2.0 ** -(e.p // 2 + 1)), ax, res)
  res = e.sel(e.gt(ax, 1.0), math.nan, res)
  return e.sel(e.isnan(x), x, e.copysign(res, x))


# ------------------------------------------------------------------------------------------------
# sqrt / rsqrt / cbrt.
# ------------------------------------------------------------------------------------------------
def _sqrt(e, x):
  return e.sqrt(x)


def _rsqrt(e, x):
  return e.div(1.0, e.sqrt(x))


def _cbrt(e, x):
  ax = e.abs(x)
  sub, big = e.lt(ax, e.tiny), e.ge(ax, 2.0 ** (e.bias - 1))
  k = 18 if e.f64 else 8                              # subnormals: * 2**(3k), result * 2**-k
  kb = (e.bias - 1) // 3                              # huge: * 2**(-3kb) (y**3 must not overflow)
  a = e.sel(sub, e.mul(ax, 2.0 ** (3 * k)), e.sel(big, e.mul(ax, 2.0 ** (-3 * kb)), ax))
  # Initial guess from the exponent bits / 3 (in 32-bit integers: the high word for f64).
  i32 = e.vec(ir.IntType(32))
  bits = e.bits(a)
  hi = e.b.trunc(e.b.lshr(bits, e.ci(32)), i32) if e.f64 else bits
  magic = round((2 * (e.bias - 0.03)) / 3 * 2 ** (20 if e.f64 else 23))
  g = e.b.add(e.b.udiv(hi, e.ci(3, i32)), e.ci(magic, i32))
  y = e.from_bits(e.b.shl(e.b.zext(g, e.ity), e.ci(32))) if e.f64 else e.from_bits(g)
  for _ in range(3 if e.f64 else 2):                  # Newton: y <- (2y + a/y^2) / 3
    y = e.mul(e.add(e.add(y, y), e.div(a, e.mul(y, y))), 1.0 / 3.0)
  # Last step with the residual a - y^3 computed in double-word arithmetic.
  y2, y2l = _two_prod(e, y, y)
  y3, y3l = _two_prod(e, y2, y)
  y3l = e.fma(y2l, y, y3l)
  resid = e.sub(e.sub(a, y3), y3l)
  y = e.add(y, e.div(resid, e.mul(y2, 3.0)))
  y = e.sel(sub, e.mul(y, 2.0 ** -k), e.sel(big, e.mul(y, 2.0 ** kb), y))
  res = e.copysign(y, x)
  res = e.sel(e.or_(e.eq(ax, 0.0), e.isinf(x)), x, res)
  return e.sel(e.isnan(x), x, res)


# ------------------------------------------------------------------------------------------------
# erf / erfc / erfinv.
# ------------------------------------------------------------------------------------------------
def _erf_small(e, x):
  """erf(x) for |x| <= 1 (odd, keeps -0)."""
  return e.fma(x, e.poly(e.mul(x, x), COEFFS[("erf", e.key)]), x)


def _via_f64(e, fn, *args):
  """fn evaluated in double arithmetic for float32 arguments (one final rounding): for the
  special functions, whose float32 evaluation would lose 2-3 ulp to intermediate roundings."""
  if e.f64:
    return fn(e, *args)
  e64 = e.like(ir.DoubleType())
  e64.acc32 = True                                    # may skip double-word refinements
  return e.b.fptrunc(fn(e64, *[e.b.fpext(a, e64.ty) for a in args]), e.ty)


def _erfc_pos(e, z):
  """erfc(z) for z >= 0.5 (z up to +inf): t * exp(-z^2 + P(t)), t = 2/(2+z)."""
  return _via_f64(e, _erfc_pos64 if e.f64 else _erfc_pos32, z)


def _erfc_pos_dw(e, z, coeffs=("erfc", 64)):
  """(k, rh, rl): erfc(z) = (rh + rl) * 2**k for z >= 0.5. Every rounding that would enter
  the exponent or the product unscaled is kept: t = 2/(2+z) as tq + tl (P's slope at t
  approximated by its linear coefficient), P = c0 + u Q(u) summed with -z^2 as a
  multi-word, exp's mantissa as a double-word, the product t*m with an fma."""
  zc = e.min(z, 30.0)                                 # erfc underflows to 0 before that
  sh, sl = _two_sum(e, 2.0, zc)
  inv = e.div(1.0, sh)
  tq = e.mul(inv, 2.0)
  tl = e.mul(e.sub(e.fma(e.neg(tq), sh, 2.0), e.mul(tq, sl)), inv)
  c = COEFFS[coeffs]
  u = e.sub(tq, 0.434)
  qh, ql = _two_prod(e, u, e.poly(u, c[1:]))          # u Q(u)
  h, l = _two_prod(e, zc, zc)
  a, b = _two_sum(e, e.neg(h), c[0])
  a, b2 = _two_sum(e, a, qh)
  b = e.add(e.add(b, b2), e.sub(e.fma(tl, c[1], ql), l))
  k, mh, ml = _exp_core_dw(e, a, xl=b)
  ph, pl = _two_prod(e, tq, mh)
  pl = e.add(pl, e.fma(tq, ml, e.mul(tl, mh)))
  return k, ph, pl


def _erfc_pos64(e, z, coeffs=("erfc", 64)):
  k, ph, pl = _erfc_pos_dw(e, z, coeffs)
  return e.scale(e.add(ph, pl), k)


def _erfc_pos32(e, z, coeffs=("erfc32", 64)):
  """erfc(z), z >= 0.5, t exp(-z^2 + P(t)) with only -z^2 kept exact: float32 erfc in double
  with float32's degree (the double roundings vanish in the float32 one), and float64 erf
  (erfc <= 0.16 there: its error shrinks by 1 - erfc)."""
  zc = e.min(z, 30.0)
  t = e.div(2.0, e.add(zc, 2.0))
  p = e.poly(e.sub(t, 0.434), COEFFS[coeffs])
  h, l = _two_prod(e, zc, zc)
  k, m = _exp_core(e, e.sub(p, h), e.neg(l))
  return e.scale(e.mul(m, t), k)


def _erfc_mid32(e, z):
  """float32 erfc(z) for 1 <= z <= 3.93 to ~2**-23 relative, in float32: exp(-z^2 + P(z))
  with -z^2 exact (two_prod) and P ~ log(erfc(z)) + z^2 (only for erf = 1 - erfc, where
  erfc's error shrinks by erfc/erf <= 0.19; beyond 3.93 float32 erf is 1)."""
  zc = e.clamp(z, 1.0, 3.93)
  p = e.poly(e.sub(zc, 2.5), COEFFS[("erf32big", 32)])
  h, l = _two_prod(e, zc, zc)
  a, b = _fast_two_sum(e, e.neg(h), p)                # z^2 > |P|
  k, m = _exp_core(e, a, e.sub(b, l))
  return e.scale(m, k)


def _erf(e, x):
  ax = e.abs(x)
  za = e.max(ax, 0.5)
  big = e.sub(1.0, _erfc_pos32(e, za, ("erfc", 64)) if e.f64 else _erfc_mid32(e, ax))
  res = e.sel(e.le(ax, 1.0), _erf_small(e, e.sel(e.le(ax, 1.0), x, 0.0)), e.copysign(big, x))
  return e.sel(e.isnan(x), x, res)


def _erfc(e, x):
  ax = e.abs(x)
  pos = _erfc_pos(e, e.max(ax, 0.5))
  small = e.sub(1.0, _erf_small(e, e.sel(e.lt(ax, 0.5), x, 0.0)))
  res = e.sel(e.lt(ax, 0.5), small, e.sel(e.lt(x, 0.0), e.sub(2.0, pos), pos))
  return e.sel(e.isnan(x), x, res)


def _erfinv_approx(e, ay):
  """erfinv(ay) for ay in [0, 1) to ~2**-30: ay * P(u), u = w - 2.5 (w < 5), sqrt(w) - 3
  (sqrt(w) < 4.1) or sqrt(w) - 5, w = -log(1 - ay^2) (Giles' variables, our fits)."""
  om = e.sub(1.0, ay)                                 # exact for ay >= 1/2
  w = e.neg(_log_core(e, e.max(e.mul(om, e.add(ay, 1.0)), e.tiny)))
  sw = e.sqrt(w)
  r0, r1 = e.lt(w, 5.0), e.lt(sw, 4.1)
  u = e.sel(r0, e.sub(w, 2.5), e.sub(sw, e.sel(r1, 3.0, 5.0)))
  x0 = e.mul(ay, e.poly_v(u, e.select_coeffs([r0, r1], COEFFS[("erfinv", 64)])))
  if e.acc32:                                         # float32: the approximation suffices
    return x0
  # float64: one Halley step on f(x) = erf(x) - ay, without a rounding error as large as f:
  # x0 <= 1: (x0 - ay) + x0 P(x0^2) (x0 - ay exact: x0/ay in [0.88, 1.2]); x0 > 1 (ay > 1/2):
  # (1 - ay) - erfc(x0) with erfc as a double-word (1 - ay and the first difference exact).
  xs = e.min(x0, 1.0)
  f_small = e.fma(xs, e.poly(e.mul(xs, xs), COEFFS[("erf", 64)]), e.sub(xs, ay))
  k, ch, cl = _erfc_pos_dw(e, e.max(x0, 1.0))
  f_big = e.sub(e.sub(om, e.scale(ch, k)), e.scale(cl, k))
  f = e.sel(e.le(x0, 1.0), f_small, f_big)
  k, m = _exp_core(e, e.neg(e.mul(x0, x0)))
  d = e.div(f, e.mul(e.scale(m, k), _const("2osqrtpi", True)[0]))         # f / f'
  return e.sub(x0, e.div(d, e.fma(x0, d, 1.0)))


def _erfinv(e, y):
  ay = e.abs(y)
  x = _via_f64(e, _erfinv_approx, ay)                 # float32: the approximation, in double
  res = e.copysign(x, y)
  res = e.sel(e.eq(ay, 1.0), e.copysign(e.c(math.inf), y), res)
  res = e.sel(e.gt(ay, 1.0), math.nan, res)
  res = e.sel(e.eq(ay, 0.0), y, res)
  return e.sel(e.isnan(y), y, res)


# ------------------------------------------------------------------------------------------------
# lgamma / digamma.
# ------------------------------------------------------------------------------------------------
_LGAMMA_CENTERS = (1.0, 1.625, 2.5)                  # pieces [0.75, 1.25), [1.25, 2), [2, 3]


def _poly_dw(e, x, coeffs):
  """sum coeffs[k] x**k (per-element coefficients) as (hi, lo): the last Horner step
  c0 + x*Q(x) without rounding, so only Q's rounding (scaled by |x Q / P|) remains."""
  qh, ql = _two_prod(e, x, e.poly_v(x, coeffs[1:]))
  h, l = _two_sum(e, coeffs[0], qh)
  return h, e.add(l, ql)


def _lgamma_pos(e, z):
  """lgamma(z) for z > 0 (finite or +inf).

  lgamma(x) = (x - 1)(x - 2) G(x) on [0.75, 3] (G fitted in 3 pieces: relative accuracy at
  the zeros 1 and 2); z < 0.75 uses lgamma(1 + z) - log z, 3 <= z < 8 lgamma(2 + f) + log of
  the product (z - 1)...(2 + f) (exact factors, double-word product), z >= 8 Stirling."""
  r0, r1, r3 = e.lt(z, 0.75), e.lt(z, 3.0), e.lt(z, 8.0)
  fl = e.floor(z)
  f = e.sub(z, fl)
  off = e.sel(r0, 1.0, e.sel(r1, 0.0, e.sub(2.0, fl)))           # G's argument: z + off
  xg = e.add(z, off)
  p0, p1 = e.lt(xg, 1.25), e.lt(xg, 2.0)
  coeffs = e.select_coeffs([p0, p1], COEFFS[("lgamma", e.key)])
  c0, c1, c2 = _LGAMMA_CENTERS
  u = e.add(e.sub(z, e.sel(p0, c0, e.sel(p1, c1, c2))), off)
  fa = e.sel(r0, z, e.sel(r1, e.sub(z, 1.0), f))                  # (x - 1) and (x - 2) at
  fb_a, fb_b = e.sel(r1, z, f), e.sel(r0, -1.0, e.sel(r1, -2.0, 1.0))        # x = z + off
  if e.acc32:                                         # float32 results: plain double
    core = e.mul(e.mul(fa, e.add(fb_a, fb_b)), e.poly_v(u, coeffs))
  else:                                               # fa exact, fb and fa*fb double-words
    fbh, fbl = _two_sum(e, fb_a, fb_b)
    wh, wl = _two_prod(e, fa, fbh)
    wl = e.fma(fa, fbl, wl)
    gh, gl = _poly_dw(e, u, coeffs)
    core = e.fma(wh, gh, e.fma(wh, gl, e.mul(wl, gh)))
  # log term: -log z (z < 0.75), 0 (z < 3), +log prod_{j=1}^{floor(z)-2} (z - j) (z < 8).
  ph, pl = e.c(1.0), e.c(0.0)
  for j in range(1, 6):
    take = e.and_(e.not_(r1), e.le(j + 2.0, fl))
    fac = e.sel(take, e.sub(z, float(j)), 1.0)         # exact
    nh, nl = _two_prod(e, ph, fac)
    ph, pl = nh, e.fma(pl, fac, nl)
  ph = e.sel(r0, z, ph)
  pl = e.sel(r0, 0.0, pl)
  sg = e.sel(r0, -1.0, 1.0)
  if e.acc32:
    small = e.fma(sg, _log_core(e, ph), core)
  else:
    lgh, lgl = _log_hl(e, ph)                         # log(ph + pl) = lgh + lgl + pl/ph
    lgl = e.add(lgl, e.div(pl, ph))
    sh_, sl_ = _two_sum(e, core, e.mul(sg, lgh))
    small = e.add(sh_, e.fma(sg, lgl, sl_))
  # Stirling for z >= 8: (z - 1/2) log z - z + log(2pi)/2 + S(1/z^2)/z, written as
  # t (log z - 1) - 1/2 + ... with t = z - 1/2 (no overflow before the result does).
  zs = e.max(z, 8.0)
  lh, ll = _log_hl(e, zs)
  t = e.sub(zs, 0.5)
  a, b = _two_prod(e, t, e.sub(lh, 1.0))              # lh - 1 is exact (lh >= 2)
  b = e.fma(t, ll, b)
  v = e.div(1.0, zs)
  corr = e.mul(v, e.poly(e.mul(v, v), COEFFS[("stirling", e.key)]))
  stir = e.add(e.sub(a, 0.5), e.add(b, e.add(_const("hl2pi", e.f64)[0], corr)))
  stir = e.sel(e.isinf(a), math.inf, stir)            # overflow (and z = inf)
  return e.sel(r3, small, stir)


def _lgamma(e, x):
  ax = e.abs(x)
  fin = e.sel(e.or_(e.isnan(x), e.isinf(x)), 1.0, ax)
  pos = _lgamma_pos(e, e.max(fin, 2.0 ** (2 - e.bias - e.p)))
  pos = e.sel(e.isinf(x), math.inf, pos)
  # Reflection for x < 0: lgamma(x) = log(pi / |x sin(pi x)|) - lgamma(-x).
  (sh, sl), _ = _sinpi_cospi(e, fin)
  sp = sh
  if e.acc32:
    q = e.div(_const("pi", True)[0], e.abs(e.mul(ax, sh)))
    refl = e.sub(_log_core(e, q), pos)
  else:
    dh, dl = _two_prod(e, ax, e.abs(sh))              # |x sin(pi x)| as a double-word
    dh, dl = _fast_two_sum(e, dh, e.fma(ax, e.copysign(sl, sh), dl))
    qh, ql = _div_dw2(e, *_const("pi", e.f64), dh, dl)
    lh, ll = _log_hl(e, e.max(qh, e.tiny))
    rh, rl = _two_sum(e, lh, e.neg(pos))              # cancels near the zeros: exact
    refl = e.add(rh, e.add(rl, e.add(ll, e.div(ql, qh))))
  refl = e.sel(e.lt(ax, 2.0 ** -(e.p + 1)), pos, refl)            # tiny: -log|x|
  res = e.sel(e.lt(x, 0.0), refl, pos)
  res = e.sel(e.or_(e.eq(x, 0.0), e.isinf(x)), math.inf, res)
  res = e.sel(e.and_(e.lt(x, 0.0), e.eq(sp, 0.0)), math.inf, res)
  return e.sel(e.isnan(x), x, res)


def _digamma_pos(e, z):
  """digamma(z) for z > 0 (finite)."""
  r0, r1, r2, r3 = e.lt(z, 1.0), e.lt(z, 2.0), e.lt(z, 3.0), e.lt(z, 8.0)
  fl = e.floor(z)
  u = e.sel(r0, z, e.sel(r1, e.sub(z, 1.0), e.sel(r2, e.sub(z, 2.0), e.sub(z, fl))))
  near_root = r1                                      # psi(1 + u) = (u - u0) * D(u)
  lo = e.lt(u, 0.5)
  d1, d2 = COEFFS[("digamma1", e.key)], COEFFS[("digamma2", e.key)]
  coeffs = e.select_coeffs([e.and_(near_root, lo), near_root, lo], [d1[0], d1[1], d2[0], d2[1]])
  ph, pl = _poly_dw(e, e.sub(u, e.sel(lo, 0.25, 0.75)), coeffs)
  x0h, x0l = _const("x0", e.f64)
  du = e.sub(e.sub(u, x0h - 1.0), x0l)                # u - (x0 - 1); x0h - 1 is exact
  base = e.sel(near_root, e.fma(du, ph, e.mul(du, pl)), e.add(ph, pl))
  # z in [3, 8): psi(2 + u) + sum_{j=1}^{floor(z)-2} 1/(z - j);  z < 1: psi(1 + z) - 1/z.
  acc = e.c(0.0)
  for j in range(1, 6):
    take = e.and_(e.not_(r2), e.le(j + 2.0, fl))
    acc = e.add(acc, e.sel(take, e.div(1.0, e.sub(z, float(j))), 0.0))
  small = e.sel(r0, e.sub(base, e.div(1.0, z)), e.add(base, acc))
  # Asymptotic for z >= 8: log z - 1/(2z) - v A(v), v = 1/z^2.
  zs = e.max(z, 8.0)
  iz = e.div(1.0, zs)
  v = e.mul(iz, iz)
  asym = e.sub(e.sub(_log_core(e, zs), e.mul(iz, 0.5)),
               e.mul(v, e.poly(v, COEFFS[("digamma_asym", e.key)])))
  return e.sel(r3, small, asym)


def _digamma(e, x):
  fin = e.sel(e.or_(e.isnan(x), e.isinf(x)), 1.0, x)
  z = e.sel(e.lt(fin, 0.0), e.add(e.neg(fin), 1.0), fin)     # reflection uses psi(1 - x)
  z = e.max(z, 2.0 ** (2 - e.bias - e.p))
  pos = _digamma_pos(e, z)
  (sh, sl), (ch, cl) = _sinpi_cospi(e, e.sel(e.lt(fin, 0.0), e.neg(fin), 0.5))
  pih, pil = _const("pi", e.f64)
  if e.acc32:                                         # psi(1-x) - pi cot(pi x)
    refl = e.add(pos, e.mul(pih, e.div(ch, sh)))
  else:
    nh, nl = _two_prod(e, pih, ch)
    nh, nl = _fast_two_sum(e, nh, e.add(nl, e.fma(pil, ch, e.mul(pih, cl))))
    ch_, cl_ = _div_dw2(e, nh, nl, sh, sl)            # pi cot(pi x) as a double-word
    rh, rl = _two_sum(e, pos, ch_)
    refl = e.add(rh, e.add(rl, cl_))
  res = e.sel(e.lt(fin, 0.0), refl, pos)
  res = e.sel(e.eq(x, math.inf), math.inf, res)
  res = e.sel(e.eq(x, 0.0), -math.inf, res)           # psi(+-0) = -inf (as XLA / ember's eager)
  res = e.sel(e.and_(e.lt(x, 0.0), e.eq(e.floor(x), x)), math.nan, res)     # poles and -inf
  return e.sel(e.isnan(x), x, res)


# ------------------------------------------------------------------------------------------------
# power.
# ------------------------------------------------------------------------------------------------
def _log_dd64(e, x):
  """log(x) for finite x > 0 in double as hi + lo with ~2**-66 relative error."""
  k, f = _log_split(e, x)
  u = e.add(f, 2.0)
  ul = e.sub(f, e.sub(u, 2.0))                        # 2 + f = u + ul exactly
  inv = e.div(1.0, u)                                 # one division: s = f/(2+f) = sh + sl
  sh = e.mul(f, inv)
  sl = e.mul(e.sub(e.fma(e.neg(sh), u, f), e.mul(sh, ul)), inv)
  sh, sl = _fast_two_sum(e, sh, sl)
  a, al = _two_prod(e, sh, sh)
  s3, s3l = _two_prod(e, a, sh)
  s3l = e.fma(al, sh, e.fma(e.mul(a, 3.0), sl, s3l))
  th, tl = _const("2o3", True)
  c3, c3l = _two_prod(e, s3, th)
  c3l = e.add(c3l, e.fma(s3, tl, e.mul(s3l, th)))
  tail = e.mul(e.mul(s3, a), e.poly(a, COEFFS[("logpow", 64)]))
  h, l = _fast_two_sum(e, e.mul(sh, 2.0), c3)
  h, l = _fast_two_sum(e, h, e.add(l, e.add(e.mul(sl, 2.0), e.add(c3l, tail))))
  kh, kl = _ln2_parts(e)
  lh, err = _two_sum(e, e.mul(k, kh), h)
  return _fast_two_sum(e, lh, e.add(err, e.fma(k, kl, l)))


def _pow_special(e, x, y, mag):
  """C99 pow special cases around mag = |x|**y (computed for finite nonzero |x|)."""
  ax, ay = e.abs(x), e.abs(y)
  yinf = e.eq(ay, math.inf)
  # |x| = 0 or inf, or y = +-inf: inf when (|x| > 1) == (y > 0), else 0; 1 for |x| = 1.
  spec = e.or_(e.or_(e.eq(ax, 0.0), e.eq(ax, math.inf)), yinf)
  mag = e.sel(spec, e.sel(e.b.xor(e.gt(ax, 1.0), e.gt(y, 0.0)), 0.0, math.inf), mag)
  mag = e.sel(e.and_(yinf, e.eq(ax, 1.0)), 1.0, mag)
  # negative x: odd integer y flips the sign (y - 2 floor(y/2) == 1 only for odd integers),
  # a finite x with non-integer y gives NaN (floor(+-inf) == +-inf counts as an integer).
  yodd = e.eq(e.fma(e.floor(e.mul(y, 0.5)), -2.0, y), 1.0)
  res = e.sel(e.and_(e.signbit(x), yodd), e.neg(mag), mag)
  nonint = e.b.fcmp_unordered("!=", e.floor(y), y)
  res = e.sel(e.and_(e.and_(e.lt(x, 0.0), e.gt(x, -math.inf)), nonint), math.nan, res)
  res = e.sel(e.b.fcmp_unordered("uno", x, y), e.add(x, y), res)
  return e.sel(e.or_(e.eq(x, 1.0), e.eq(y, 0.0)), 1.0, res)


def _pow32_in_f64(e, ax, y):
  """|x|**y for float32 |x| in (0, inf) and finite y, in double: log|x| to ~2**-37 relative
  (2 atanh(s) = 2s + s^3 P(s^2), s = f/(2+f)), y log|x| clamped where the float32 result is
  inf or 0 anyway, exp to ~2**-31; only the final float32 rounding is visible."""
  ix = e.bits(ax)                                     # float32 values: normal doubles
  half = e.bits(e.c(math.sqrt(0.5)))
  ki = e.iashr(e.isub(ix, half), 52)
  f = e.sub(e.from_bits(e.isub(ix, e.ishl(ki, 52))), 1.0)     # 1 + f in [sqrt(1/2), sqrt 2)
  s = e.div(f, e.add(f, 2.0))
  z = e.mul(s, s)
  lf = e.fma(e.mul(s, z), e.poly(z, COEFFS[("log32d", 64)]), e.add(s, s))
  lx = e.fma(e.tofloat(ki), _const("ln2", True)[0], lf)
  pk, p = _exp32_in_f64(e, e.clamp(e.mul(y, lx), -110.0, 100.0))
  return e.fma(pk, p, pk)


def _power(e, x, y):
  ax = e.abs(x)
  ok = e.and_(e.gt(ax, 0.0), e.lt(ax, math.inf))
  axs = e.sel(ok, ax, 1.0)
  ys = e.sel(e.or_(e.isnan(y), e.isinf(y)), 0.0, y)
  if e.f64:
    lh, ll = _log_dd64(e, axs)
    ph, pl = _two_prod(e, ys, lh)
    pl = e.fma(ys, ll, pl)
    inrange = e.lt(e.abs(ph), _exp_limit(e))
    k, m = _exp_core(e, ph, e.sel(inrange, pl, 0.0))
    mag = e.scale(m, k)
  else:                                               # float32: log and exp in double
    mag = _via_f64(e, _pow32_in_f64, axs, ys)
  return _pow_special(e, x, y, mag)


# ------------------------------------------------------------------------------------------------
# Dispatch.
# ------------------------------------------------------------------------------------------------
_UNARY = {
    "exponential": ("exp", _exp), "exponential-minus-one": ("expm1", _expm1),
    "log": ("log", _log), "log-plus-one": ("log1p", _log1p), "tanh": ("tanh", _tanh),
    "logistic": ("logistic", _logistic),
    "sine": ("sin", lambda e, x: _trig(e, x, "sin")),
    "cosine": ("cos", lambda e, x: _trig(e, x, "cos")),
    "tan": ("tan", lambda e, x: _trig(e, x, "tan")),
    "sqrt": ("sqrt", _sqrt), "rsqrt": ("rsqrt", _rsqrt), "cbrt": ("cbrt", _cbrt),
    "erf": ("erf", _erf), "erfc": ("erfc", _erfc), "erf-inv": ("erfinv", _erfinv),
    "lgamma": ("lgamma", lambda e, x: _via_f64(e, _lgamma, x)),
    "digamma": ("digamma", lambda e, x: _via_f64(e, _digamma, x)),
    "asin": ("asin", _asin), "acos": ("acos", _acos), "atan": ("atan", _atan),
    "sinh": ("sinh", _sinh), "cosh": ("cosh", _cosh), "asinh": ("asinh", _asinh),
    "acosh": ("acosh", _acosh), "atanh": ("atanh", _atanh),
    "exp2": ("exp2", _exp2), "log2": ("log2", lambda e, x: _log_base(e, x, "log2")),
    "log10": ("log10", lambda e, x: _log_base(e, x, "log10")),
}
_BINARY = {"power": ("pow", _power), "atan2": ("atan2", _atan2)}
OPCODES = frozenset(_UNARY) | frozenset(_BINARY)


class _RenderedFunction(ir.Function):
  """A function of the library whose text was rendered once per process (`_rendered`)."""

  def __init__(self, module, fty, name, text):
    super().__init__(module, fty, name)
    self.text = text

  def __str__(self):
    return self.text


class _RenderedGlobal(ir.GlobalVariable):
  """A global variable of the library (a reduction table) rendered once per process."""

  def __init__(self, module, ty, name, text):
    super().__init__(module, ty, name)
    self.text = text

  def __str__(self):
    return self.text


# (function name, host CPU) -> what defining it adds to a module: (name, function type or
# None for a variable, its value type, its text or None for a declaration) per global
_RENDERED: dict = {}


def _function(module: ir.Module, short: str, impl, arity: int, ty) -> ir.Function:
  """The internal alwaysinline function ember.<short>.<type>, defined on first use: built
  once per process (`_define`, in a module of its own) and copied as text into every module
  that uses it, with the functions, declarations and tables it needs. Building sin's IR
  (its huge-argument path and vector variants included) and printing it took ~3-5 ms of
  Python per compile."""
  name = f"ember.{short}.{_suffix(ty)}"
  fn = module.globals.get(name)
  if fn is not None:
    return fn
  key = (name, host.cpu())
  parts = _RENDERED.get(key)
  if parts is None:
    scratch = ir.Module()
    _define(scratch, short, impl, arity, ty)
    parts = _RENDERED[key] = [
        (g.name, g.function_type, None, None if g.is_declaration else str(g))
        if isinstance(g, ir.Function) else (g.name, None, g.value_type, str(g))
        for g in scratch.globals.values()]
  for gname, fty, vty, text in parts:
    if gname in module.globals:
      continue
    if fty is None:
      _RenderedGlobal(module, vty, gname, text)
    elif text is None:
      ir.Function(module, fty, gname)
    else:
      _RenderedFunction(module, fty, gname, text)
  return module.globals[name]


def _define(module: ir.Module, short: str, impl, arity: int, ty) -> ir.Function:
  """Build ember.<short>.<type> (internal, alwaysinline) in `module`."""
  name = f"ember.{short}.{_suffix(ty)}"
  fn = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)
  fn.linkage = "internal"
  fn.attributes.add("alwaysinline")
  fn.attributes.add("nounwind")
  builder = ir.IRBuilder(fn.append_basic_block("entry"))
  builder.ret(impl(_E(builder, ty), *fn.args))
  return fn


def function(module: ir.Module, short: str, ty) -> ir.Function:
  """The function ember.<short>.<type> that `emit` calls (short: exp, log, sin, pow, ...),
  defined in `module` on first use: for copies compiled outside the kernels
  (compiler._library_math)."""
  for table, arity in ((_UNARY, 1), (_BINARY, 2)):
    for name, impl in table.values():
      if name == short:
        return _function(module, short, impl, arity, ty)
  raise ValueError(f"mathlib.function: no math function {short!r}")


def vector_widths(ty) -> tuple:
  """The vector widths (lanes) of float type `ty` the host's loop vectorizer can choose."""
  return _vfabi_widths(64 if isinstance(ty, ir.DoubleType) else 32)


def emit(builder: ir.IRBuilder, opcode: str, args, ty) -> ir.Value:
  """Emit `opcode` (an HLO transcendental, or exp2/log2/log10) applied to `args` of type `ty`."""
  if opcode in _UNARY:
    (short, impl), arity = _UNARY[opcode], 1
  elif opcode in _BINARY:
    (short, impl), arity = _BINARY[opcode], 2
  else:
    raise ValueError(f"mathlib.emit: unsupported opcode {opcode!r}; supported: "
                     f"{', '.join(sorted(OPCODES))}")
  if len(args) != arity:
    raise TypeError(f"mathlib.emit: {opcode} takes {arity} operand(s), got {len(args)}")
  for a in args:
    if a.type != ty:
      raise TypeError(f"mathlib.emit: {opcode} operand has type {a.type}, expected {ty}")
  _E(builder, ty)                                     # validates ty
  fn = _function(builder.module, short, impl, arity, ty)
  return builder.call(fn, list(args))


# ------------------------------------------------------------------------------------------------
# Coefficients (generated by mathlib_fit.py; do not edit by hand).
# ------------------------------------------------------------------------------------------------
# BEGIN COEFFS
COEFFS = {
    ('asin', 32): (
        0.16666659712791443, 0.07500503957271576, 0.04451695457100868, 0.03180772438645363,
        0.014438576996326447, 0.03751648962497711,
    ),
    ('asin', 64): (
        0.1666666666666676, 0.07499999999970798, 0.04464285717461373, 0.030381942707710042,
        0.022372214989363, 0.017351611988113108, 0.013980820803150638, 0.011398910431347211,
        0.01078026174070046, 0.0037063775172596625, 0.021707519065678815, -0.020999160740345992,
        0.032628683725109256,
    ),
    ('atan', 32): (
        -0.33333316445350647, 0.19998471438884735, -0.14243529736995697, 0.10593786835670471,
        -0.06078150123357773,
    ),
    ('atan', 64): (
        -0.333333333333332, 0.19999999999953236, -0.1428571428016519, 0.11111110782083414,
        -0.09090897723114079, 0.07692059678140199, -0.0666309874402597, 0.05847855839968914,
        -0.05039174586485865, 0.03806172867823751, -0.017904580113536645,
    ),
    ('cos', 32): (
        0.04166664555668831, -0.0013887278037145734, 2.442878576403018e-05,
    ),
    ('cos', 64): (
        0.04166666666666659, -0.001388888888887209, 2.4801587288234434e-05,
        -2.7557313997300615e-07, 2.087567563518089e-09, -1.1357208582820474e-11,
    ),
    ('cos32d', 64): (
        -0.49999999679467194, 0.0416666186702619, -0.0013886628612054847, 2.4378600309173708e-05,
    ),
    ('digamma1', 64): [
        (1.0747589096650145, -0.5791664818235408, 0.4002392309428256, -0.2998194686580714,
         0.2322665015315722, -0.18277734913036336, 0.1449583675093288, -0.11542832749883085,
         0.09210989867669432, -0.07358552253619051, 0.05882366239357599, -0.04706414034350197,
         0.03764570285754443, -0.02968428855183012, 0.023715429242770713, -0.022888438626819954,
         0.018431594091487855),
        (0.8581832171262995, -0.3262546278681057, 0.15712011335204246, -0.0822855863557796,
         0.044799654452788065, -0.024890048488611462, 0.013985786183759993, -0.007910468813603522,
         0.004491813722628603, -0.002556684648236748, 0.001457373642427486, -0.0008315513501364601,
         0.0004747137086754523, -0.00027017890383518013, 0.000154280020259401,
         -9.653833763155816e-05, 5.534632760139477e-05),
    ],
    ('digamma2', 64): [
        (0.5725464666237345, 0.5573291545071107, -0.15186996876846018, 0.054090668198066114,
         -0.021294526580566988, 0.008804064010747062, -0.0037399995723473582,
         0.0016145490190606422, -0.0007039960402939635, 0.0003089322824971501,
         -0.00013613556541106913, 6.015646642155067e-05, -2.660307069261819e-05,
         1.1779983897418581e-05, -5.501920503839269e-06, 2.4924888013896858e-06),
        (0.8189010249754326, 0.43757125764893073, -0.09435731651565062, 0.02676935458157823,
         -0.00843981139048204, 0.002806739012918559, -0.0009624684430003474, 0.0003363590505763136,
         -0.00011900140198440527, 4.244883911400249e-05, -1.522712252344126e-05,
         5.483570939577874e-06, -1.97924600760658e-06, 7.158720007790075e-07,
         -2.6828128521729404e-07, 9.831231346390012e-08),
    ],
    ('digamma_asym', 64): (
        0.08333333333333333, -0.008333333333333276, 0.003968253968154789, -0.004166666600310752,
        0.007575735249303611, -0.021088546449974602, 0.08285190157677556, -0.4105993785622765,
        1.7756581648155159,
    ),
    ('erf', 32): (
        0.12837916612625122, -0.3761262595653534, 0.1128358542919159, -0.026853812858462334,
        0.005188327748328447, -0.0008010193705558777, 7.853861461626366e-05,
    ),
    ('erf', 64): (
        0.1283791670955126, -0.3761263890318375, 0.11283791670954857, -0.0268661706450729,
        0.005223977624780895, -0.0008548326978743708, 0.00012055331036950067,
        -1.4925593507992747e-05, 1.6460972832969894e-06, -1.6350025374024024e-07,
        1.4657880749108518e-08, -1.1365669070473199e-09, 5.945266393894223e-11,
    ),
    ('erf32big', 32): (
        -1.556815266609192, -0.3526807427406311, 0.056106336414813995, -0.010858247056603432,
        0.00216522254049778, -0.0004205591103527695, 7.734077371424064e-05,
        -1.3074642083665822e-05, 1.6282543811030337e-06, -4.400637365620241e-08,
    ),
    ('erfc', 64): (
        -0.7596535614828037, 1.3155939575426525, 0.2587552506553296, -0.3220030115623975,
        -0.24088270980108875, 0.2117956241459061, 0.23824098418480877, -0.22557447117501842,
        -0.24199740736829295, 0.30898437533080153, 0.21686945074780556, -0.4517538063341421,
        -0.10563538883199997, 0.616423672473186, -0.15933745808660346, -0.6903196482257289,
        0.591596010520326, 0.4807498670535277, -1.029324836816552, 0.13260021532130897,
        1.0949012151810849, -0.8293296527507091, -0.5551575844496627, 0.7843669735059863,
        -0.04567165736158447,
    ),
    ('erfc32', 64): (
        -0.7596535608233285, 1.3155938393573907, 0.25875494027973023, -0.32198469678281516,
        -0.240858660145844, 0.2109951223712742, 0.2375510936048037, -0.2110048905341174,
        -0.23299079340339854, 0.18665665871117443, 0.16314440660785756,
    ),
    ('erfinv', 64): [
        (1.5014093516923923, 0.24664027578566522, -0.004177324635602977, -0.0012527048768651667,
         0.00021826355701115474, -4.998759795488951e-06, -3.4260120410955613e-06,
         4.796988652926597e-07, 1.6457220529703658e-08, -1.1023215694790544e-08,
         4.370311458956676e-10, 1.3285904557078575e-10),
        (2.8329767986707917, 1.0016752487090275, 0.009445520835838887, -0.007642991450259524,
         0.005685078809687408, -0.003565502722786695, 0.0014860934347879278,
         -0.0001260787088980747, -0.0002964887789774934, 0.0001719995002010384,
         -1.7811852431437008e-05, -8.07066869923849e-06),
        (4.8499064014794335, 1.010300465110062, -0.00013872282769503125, -0.0002150340592043399,
         7.602368883669809e-05, -1.966824213472851e-05, 4.444623239636921e-06,
         -9.99642245091508e-07, 3.219071427091425e-07, -8.805146954430352e-08),
    ],
    ('expm1', 32): (
        0.1666666567325592, 0.04166647419333458, 0.008333423174917698, 0.0013934136368334293,
        0.00019823787442874163,
    ),
    ('expm1', 64): (
        0.16666666666666674, 0.04166666666666667, 0.008333333333321294, 0.0013888888888880292,
        0.00019841269889351839, 2.4801587335924584e-05, 2.7557239244458533e-06,
        2.7557262106206804e-07, 2.511120397630789e-08, 2.091896228697882e-09,
    ),
    ('expm1_32d', 64): (
        0.16666666276748587, 0.041666475248385494, 0.008333423110310507, 0.0013934136060571151,
        0.00019823787173689565,
    ),
    ('expm1q', 32): (
        1.0, 0.4999999701976776, 0.1666650027036667, 0.0416671559214592, 0.00836978666484356,
        0.0013888871762901545,
    ),
    ('lgamma', 64): [
        (0.5772156649015329, -0.2452513685225804, 0.15543426586395126, -0.11514654256380057,
         0.09223900846474153, -0.07731816854179159, 0.06673172825618139, -0.05877794011470616,
         0.0525563225474898, -0.04754321368802506, 0.043411003508187926, -0.03993970219553048,
         0.0369853079483166, -0.03452223039835877, 0.032318708259237265, -0.029152074312930428,
         0.02732129384668418, -0.035537024560544604, 0.03431332528899854),
        (0.46580963736232694, -0.13157899128683392, 0.05257942622043393, -0.024194436430698584,
         0.011991915956990814, -0.0062154504137748225, 0.0033172708600001464,
         -0.001807064011406416, 0.0009992727371380713, -0.0005589500288722736,
         0.00031549480179340574, -0.00017938338519527005, 0.00010262015025204564,
         -5.9096036211607184e-05, 3.414530152036219e-05, -1.9244011282290302e-05,
         1.1152095215447595e-05, -8.479457148279394e-06, 5.03156716573062e-06),
        (0.37957716063055885, -0.07466357415449942, 0.019905154304743215, -0.006018768527033153,
         0.0019490574889448667, -0.0006586397067759397, 0.00022905363755697193,
         -8.130228877056187e-05, 2.929928106498469e-05, -1.0682329991189222e-05,
         3.930613466470085e-06, -1.4570177089048254e-06, 5.434013175005345e-07,
         -2.0382159828986628e-07, 7.674833275088114e-08, -2.8568994200674153e-08,
         1.0810816866701081e-08, -4.9808070848007024e-09, 1.91750496992714e-09),
    ],
    ('log', 32): (
        0.6666677594184875, 0.39977559447288513, 0.2987135350704193,
    ),
    ('log', 64): (
        0.6666666666666734, 0.3999999999941525, 0.28571428742290744, 0.22222198580184807,
        0.18183564110842723, 0.1531405238623416, 0.14795966812275502,
    ),
    ('log32d', 64): (
        0.6666666564733666, 0.4000033485851763, 0.2853732481532818, 0.23581919890768063,
    ),
    ('logpow', 64): (
        0.40000000000002256, 0.2857142857010063, 0.22222222519770438, 0.18181784377504812,
        0.1538675697881239, 0.13256823235976015, 0.1319630123505034,
    ),
    ('sin', 32): (
        -0.16666653752326965, 0.008332133293151855, -0.00019511461141519248,
    ),
    ('sin', 64): (
        -0.16666666666666627, 0.008333333333321442, -0.00019841269829028939,
        2.7557313421097595e-06, -2.5050715565242184e-08, 1.589431878555043e-10,
    ),
    ('sin32d', 64): (
        -0.16666666639552222, 0.008333329160606324, -0.00019839265913805065, 2.717680205952521e-06,
    ),
    ('sinh', 32): (
        0.1666666716337204, 0.008333349600434303, 0.0001983615948120132, 2.8169513370812638e-06,
    ),
    ('sinh', 64): (
        0.16666666666666669, 0.008333333333333148, 0.00019841269841431873, 2.755731915707185e-06,
        2.5052123136726025e-08, 1.6057259768593718e-10, 7.758748802500955e-13,
    ),
    ('sinpi2', 64): (
        -0.16666666625315993, 0.008333331072207252, -0.00019840863312531543, 2.752512675406348e-06,
        -2.388426791512957e-08,
    ),
    ('stirling', 64): (
        0.08333333333333333, -0.0027777777777776786, 0.0007936507935156563, -0.0005952380249331947,
        0.0008417328012066418, -0.0019149916219642754, 0.0062093316058241385, -0.02087764110023277,
    ),
    ('tanh32', 32): (
        -0.3333333134651184, 0.1333322525024414, -0.05395331606268883, 0.021770503371953964,
        -0.008504699915647507, 0.002847460564225912, -0.0005695234867744148,
    ),
}
# END COEFFS

"""The emitter `_E`: IRBuilder arithmetic on one float type (scalar or vector).

Every function of the math library is written against `_E` (`e` in the code; `e.p` its
precision, 24 / 53 bits): float and integer arithmetic, the intrinsics it may use
(llvm.{fma,fabs,floor,rint,trunc,copysign,sqrt,minnum,maxnum}), ordered comparisons and
`select`, polynomial evaluation (Horner, Estrin, per-element coefficient tables) and exact
scaling by powers of two (`scale`: llvm.ldexp where the host has AVX-512 and LLVM vectorizes it,
`_vector_ldexp`). `_via_f64` evaluates a function in double arithmetic for float32 arguments.
A unit because it is the one place that turns arithmetic into IRBuilder calls: the function
families only compose its operations.
"""
from __future__ import annotations

import math

from llvmlite import binding as llvm
from llvmlite import ir

from ember._src.backends.cpu import host


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


def _vector_ldexp() -> bool:
  """Whether `scale` may use llvm.ldexp: one vscalef on AVX-512, but the loop vectorizer
  widens llvm.ldexp only in newer LLVMs (LLVM 22 does; LLVM 20, llvmlite 0.45, leaves the
  whole loop scalar)."""
  return host.has("avx512f") and llvm.llvm_version_info >= (22,)


def _via_f64(e, fn, *args):
  """fn evaluated in double arithmetic for float32 arguments (one final rounding): for the
  special functions, whose float32 evaluation would lose 2-3 ulp to intermediate roundings."""
  if e.f64:
    return fn(e, *args)
  e64 = e.like(ir.DoubleType())
  e64.acc32 = True                                    # may skip double-word refinements
  return e.b.fptrunc(fn(e64, *[e.b.fpext(a, e64.ty) for a in args]), e.ty)

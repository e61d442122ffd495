"""Fit the polynomial coefficients used by mathlib/ (needs mpmath; not imported by ember).

Run `python3 ember/_src/backends/cpu/mathlib_fit.py [names...]` with any Python that has mpmath
and numpy (a few minutes for all) and paste the printed `COEFFS` table between the BEGIN/END
COEFFS markers in mathlib/coeffs.py. Each approximation is written as

    F(x) ~= A(x) + B(x) * P(u(x)),      P(u) = sum_k c_k u**k

and P is the minimax polynomial for the *relative* error of F on [a, b], found by a plain Remez
exchange on the linear basis psi_k = B u**k / F (target (F - A) / F), at 60 digits. The
coefficients are then rounded to float32 / float64 and the rounded error is reported (in units of
2**-p, p the precision: 0.5 ulp = 2**-p is the budget one final rounding would use).
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 60


def remez(target, basis, a, b, n_iter=40, grid=1500, tol=1e-3):
  """Minimise max |target - sum c_k basis_k| on [a, b] (linear Remez); returns (c, max error)."""
  n = len(basis)
  a, b = mp.mpf(a), mp.mpf(b)

  def node(i, m):
    x = (a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * i / (m - 1))
    return x if abs(x) > mp.mpf(10) ** -40 else mp.mpf(10) ** -40       # removable 0/0 points

  def err_at(c, x):
    return target(x) - mp.fsum(ck * f(x) for ck, f in zip(c, basis))

  pts = [node(i, n + 1) for i in range(n + 1)]
  xs = [node(i, grid) for i in range(grid)]
  tx = [target(x) for x in xs]
  bx = [[f(x) for f in basis] for x in xs]
  best = None
  for _ in range(n_iter):
    A = mp.matrix(n + 1, n + 1)
    rhs = mp.matrix(n + 1, 1)
    for i, x in enumerate(pts):
      for k, f in enumerate(basis):
        A[i, k] = f(x)
      A[i, n] = (-1) ** i
      rhs[i] = target(x)
    sol = mp.lu_solve(A, rhs)
    c = [sol[k] for k in range(n)]
    level = abs(sol[n])
    err = [t - mp.fsum(ck * bk for ck, bk in zip(c, row)) for t, row in zip(tx, bx)]
    runs = []                                   # (sign, index of the largest |err| in the run)
    for i, e in enumerate(err):
      if runs and runs[-1][0] == (e >= 0):
        if abs(e) > abs(err[runs[-1][1]]):
          runs[-1][1] = i
      else:
        runs.append([e >= 0, i])
    idx = [r[1] for r in runs]
    while len(idx) > n + 1:
      idx.pop(0 if abs(err[idx[0]]) < abs(err[idx[-1]]) else -1)
    emax = max(abs(e) for e in err)
    if best is None or emax < best[1]:
      best = (c, emax)
    if len(idx) < n + 1 or emax <= level * (1 + tol):
      break
    pts = []
    for i in idx:                                # refine each extremum on a finer local grid
      lo, hi = xs[max(i - 1, 0)], xs[min(i + 1, grid - 1)]
      for _ in range(3):
        sub = [lo + (hi - lo) * j / 12 for j in range(13)]
        j = max(range(13), key=lambda j: abs(err_at(c, sub[j])))
        lo, hi = sub[max(j - 1, 0)], sub[min(j + 1, 12)]
      pts.append(sub[j])
  return best


def fit(F, A, B, u, a, b, deg, rel=True, grid=1500):
  w = (lambda x: 1 / F(x)) if rel else (lambda x: 1)
  target = lambda x: (F(x) - A(x)) * w(x)
  basis = [(lambda k: lambda x: B(x) * u(x) ** k * w(x))(k) for k in range(deg + 1)]
  return remez(target, basis, a, b, grid=grid)


def rounded_error(F, A, B, u, a, b, c, rel=True, grid=3000):
  """Max relative (or absolute) error of A + B*P(u) with coefficients c, on a grid."""
  worst = mp.mpf(0)
  for i in range(grid):
    x = a + (b - a) * mp.mpf(i + 0.5) / grid
    p = mp.fsum(mp.mpf(ck) * u(x) ** k for k, ck in enumerate(c))
    worst = max(worst, abs((A(x) + B(x) * p - F(x)) / (F(x) if rel else 1)))
  return worst


one = lambda x: mp.mpf(1)
zero = lambda x: mp.mpf(0)
ident = lambda x: x
sq = lambda x: x * x
cube = lambda x: x ** 3
shift = lambda c: (lambda x: x - c)
X0 = mp.findroot(mp.digamma, mp.mpf("1.4616321449683623"))    # positive zero of digamma
DELTA = mp.mpf(10) ** -30                                      # keeps removable 0/0 off the ends


def _erfinv_w(w):                      # erfinv(y)/y as a function of w = -log(1 - y*y)
  y = mp.sqrt(-mp.expm1(-w))
  return mp.erfinv(y) / y


def _erfinv_s(s):                      # same as a function of s = sqrt(w)
  return _erfinv_w(s * s)


def _lgamma12(x):                      # lgamma(x) / ((x - 1)(x - 2)): removable zeros at 1, 2
  if abs(x - 1) < DELTA:
    return +mp.euler
  if abs(x - 2) < DELTA:
    return 1 - mp.euler
  return mp.loggamma(x) / ((x - 1) * (x - 2))


def _digamma1(u):                      # digamma(1 + u) / (u - (x0 - 1))
  d = u - (X0 - 1)
  return mp.digamma(1 + u) / d if abs(d) > DELTA else mp.zeta(2, 1 + u)


def _stirling(v):                      # x * (lgamma(x) - Stirling's leading terms), v = 1/x^2
  x = 1 / mp.sqrt(v)
  return x * (mp.loggamma(x) - (x - mp.mpf(0.5)) * mp.log(x) + x - mp.log(2 * mp.pi) / 2)


def _digamma_asym(v):                  # (log x - 1/(2x) - digamma(x)) / v, v = 1/x^2
  x = 1 / mp.sqrt(v)
  return (mp.log(x) - 1 / (2 * x) - mp.digamma(x)) / v


def _erfc_log(t):                     # log(erfc(z)/t) + z^2 as a function of t = 2/(2+z)
  z = 2 / t - 2
  return mp.log(mp.erfc(z) / t) + z * z


LN2H = mp.log(2) / 2
# name: (F, A, B, u, a, b, {precision: degree}) or a list of such pieces (same degree per piece).
SPECS = {
    "expm1": (mp.expm1, lambda x: x + x * x / 2, cube, ident, -LN2H * 1.01, LN2H * 1.01 + DELTA,
              {32: 4, 64: 9}),
    # float32 tanh's exp(2|x|) = 1 + r Q(r) (its error is scaled down: ~2**-26 is plenty)
    "expm1q": (mp.expm1, zero, ident, ident, -LN2H * 1.01, LN2H * 1.01 + DELTA, {32: 5}),
    # float32 logistic and power evaluated in double: expm1 on the same interval to ~2**-32
    "expm1_32d": (mp.expm1, lambda x: x + x * x / 2, cube, ident, -LN2H * 1.01,
                  LN2H * 1.01 + DELTA, {64: 4}),
    "log": (lambda s: 2 * mp.atanh(s), lambda s: 2 * s, cube, sq, DELTA, mp.mpf("0.1716"),
            {32: 2, 64: 6}),
    # float32 power evaluated in double: log to ~2**-40 (y log x must be good to ~2**-31)
    "log32d": (lambda s: 2 * mp.atanh(s), lambda s: 2 * s, cube, sq, DELTA, mp.mpf("0.1716"),
               {64: 3}),
    "sin": (mp.sin, ident, cube, sq, DELTA, mp.mpf("0.79"), {32: 2, 64: 5}),
    # float32 sin/cos (evaluated in double) reduce by multiples of pi: one polynomial on
    # [-pi/2, pi/2] for both, ~2**-35 (double coefficients, float32 accuracy)
    "sinpi2": (mp.sin, ident, cube, sq, DELTA, mp.pi / 2 * mp.mpf("1.002"), {64: 4}),
    # float32 tan evaluated in double: sin and cos on [0, pi/4] to ~2**-32
    "sin32d": (mp.sin, ident, cube, sq, DELTA, mp.mpf("0.79"), {64: 3}),
    "cos32d": (mp.cos, one, sq, sq, DELTA, mp.mpf("0.79"), {64: 3}),
    "cos": (mp.cos, lambda x: 1 - x * x / 2, lambda x: x ** 4, sq, DELTA, mp.mpf("0.79"),
            {32: 2, 64: 5}),
    "atan": (mp.atan, ident, cube, sq, DELTA, mp.mpf("0.41422"), {32: 4, 64: 10}),
    "asin": (mp.asin, ident, cube, sq, DELTA, mp.mpf("0.5000001"), {32: 5, 64: 12}),
    "erf": (mp.erf, ident, ident, sq, DELTA, mp.mpf(1), {32: 6, 64: 12}),
    # float32 tanh for |x| < 0.8 (beyond: 1 - 2/(1 + exp(2|x|)))
    "tanh32": (mp.tanh, ident, cube, sq, DELTA, mp.mpf("0.8001"), {32: 6}),
    "sinh": (mp.sinh, ident, cube, sq, DELTA, mp.mpf(1), {32: 3, 64: 6}),
    "logpow": (lambda s: 2 * mp.atanh(s), lambda s: 2 * s + 2 * s ** 3 / 3, lambda s: s ** 5, sq,
               DELTA, mp.mpf("0.1716"), {64: 6}),
    "stirling": (_stirling, zero, one, ident, DELTA, mp.mpf(1) / 64, {64: 7}),
    "digamma_asym": (_digamma_asym, zero, one, ident, DELTA, mp.mpf(1) / 64, {64: 8}),
    # erfc(z) = t * exp(-z^2 + P(t)), t = 2/(2+z), z >= 0.5: one piece; P's absolute error is the
    # relative error of erfc (marked by rel=False, the 8th field).
    "erfc": (_erfc_log, zero, one, shift(0.434), mp.mpf("0.0683"), mp.mpf(0.8), {64: 24}, False),
    # float32 erf for 1 <= |x| <= 3.93 (beyond, float32 erf is 1): 1 - exp(-x^2 + P(x)),
    # P ~ log(erfc(x)) + x^2 to ~2**-24 absolute (erfc's relative error shrinks by erfc/erf)
    "erf32big": (lambda x: mp.log(mp.erfc(x)) + x * x, zero, one, shift(2.5), 1, mp.mpf("3.93"),
                 {32: 9}, False),
    # float32 erfc is evaluated in double arithmetic: the float32 degree, double coefficients.
    "erfc32": (_erfc_log, zero, one, shift(0.434), mp.mpf("0.0683"), mp.mpf(0.8), {64: 10},
               False),
    # erfinv's initial approximation (~2**-30; float32 evaluates it in double, float64 adds a
    # Halley step), in Giles' variables w = -log(1 - y^2) and sqrt(w).
    "erfinv": [(_erfinv_w, zero, one, shift(2.5), DELTA, 5, {64: 11}),
               (_erfinv_s, zero, one, shift(3), mp.sqrt(5), 4.1, {64: 11}),
               (_erfinv_s, zero, one, shift(5), 4.1, 6.1, {64: 9})],
    "lgamma": [(_lgamma12, zero, one, shift(c), lo, hi, {64: 18})
               for lo, hi, c in ((0.75, 1.25, 1.0), (1.25, 2.0, 1.625), (2.0, 3.0, 2.5))],
    "digamma1": [(_digamma1, zero, one, shift(0.25), 0, 0.5, {64: 16}),
                 (_digamma1, zero, one, shift(0.75), 0.5, 1.0, {64: 16})],
    "digamma2": [(lambda u: mp.digamma(2 + u), zero, one, shift(0.25), 0, 0.5, {64: 15}),
                 (lambda u: mp.digamma(2 + u), zero, one, shift(0.75), 0.5, 1.0, {64: 15})],
}


def _round(c, bits):
  t = np.float32 if bits == 32 else np.float64
  return [float(t(float(ck))) if bits == 32 else float(mp.mpf(ck)) for ck in c]


def run(names=None, bits_list=(32, 64)):
  out = {}
  for name, spec in SPECS.items():
    if names and name not in names:
      continue
    pieces = spec if isinstance(spec, list) else [spec]
    for bits in bits_list:
      if bits not in pieces[0][6]:
        continue
      rows = []
      for F, A, B, u, a, b, degs, *rel in pieces:
        rel = rel[0] if rel else True
        c, e = fit(F, A, B, u, mp.mpf(a), mp.mpf(b), degs[bits], rel)
        cr = _round(c, bits)
        er = rounded_error(F, A, B, u, mp.mpf(a), mp.mpf(b), cr, rel)
        p = 24 if bits == 32 else 53
        print(f"# {name} f{bits} deg {degs[bits]} on [{float(a):.4g}, {float(b):.4g}]: "
              f"minimax 2^{float(mp.log(e, 2)):.1f}, rounded {float(er * 2 ** p):.3g} ulp",
              file=sys.stderr)
        rows.append(tuple(cr))
      out[(name, bits)] = rows if isinstance(spec, list) else rows[0]
  return out


def _wrap(cs, indent, first, last):
  out, cur = [], indent + first
  for i, c in enumerate(cs):
    piece = repr(c) + (", " if i < len(cs) - 1 else last)
    if len(cur) + len(piece.rstrip()) > 99:
      out.append(cur.rstrip())
      cur = indent + " " * len(first)
    cur += piece
  out.append(cur.rstrip())
  return out


def format_table(table):
  """The COEFFS literal as mathlib/coeffs.py holds it (keys sorted, lines <= 99 columns)."""
  lines = ["COEFFS = {"]
  for key in sorted(table):
    v = table[key]
    if isinstance(v, list):
      lines.append(f"    {key!r}: [")
      for row in v:
        lines += _wrap(row, "        ", "(", "),")
      lines.append("    ],")
    else:
      lines.append(f"    {key!r}: (")
      lines += _wrap(v, "        ", "", ",")
      lines.append("    ),")
  return "\n".join(lines + ["}"])


if __name__ == "__main__":
  print(format_table(run(sys.argv[1:] or None)))

"""Double-word arithmetic and exact constants, shared by every function family.

The error-free transformations (`_two_sum`, `_fast_two_sum`, `_two_prod`: they need a fused
fma), the double-word quotient with a Markstein correction (`_div_dw`, `_div_dw2`), and
`_const`, which splits constants kept as 80-digit strings (pi, ln2, ...) exactly into
float/double parts. (hi, lo) pairs are double-word values hi + lo. A unit: the numerics the
families use to keep their last bits, independent of any one function.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction as Fr


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
# Double-word quotients (one division and a Markstein correction).
# ------------------------------------------------------------------------------------------------
def _div_dw(e, nh, nl, dh, dl):
  """(nh + nl) / (dh + dl) (normalized double-words: |dl| <= ulp(dh)) to ~0.5 ulp: one
  division, then a Markstein correction with the exact remainder (fma)."""
  inv = e.div(1.0, dh)
  q = e.mul(nh, inv)
  rem = e.add(e.fma(e.neg(q), dh, nh), e.fma(e.neg(q), dl, nl))
  return e.fma(rem, inv, q)


def _div_dw2(e, nh, nl, dh, dl):
  """(nh + nl) / (dh + dl) as a double-word (q, ql) (see _div_dw)."""
  inv = e.div(1.0, dh)
  q = e.mul(nh, inv)
  rem = e.add(e.fma(e.neg(q), dh, nh), e.fma(e.neg(q), dl, nl))
  return _fast_two_sum(e, q, e.mul(rem, inv))

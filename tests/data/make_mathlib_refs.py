"""Generate tests/data/mathlib_refs.npz: mpmath reference values for tests/test_mathlib.py.

NumPy has no erf/erfc/erfinv/lgamma/digamma, so the accuracy tests of those mathlib functions
compare against values computed here with mpmath at 50 digits. Run from the repository root
with any Python that has numpy and mpmath (not needed by the tests themselves):

    python3 tests/data/make_mathlib_refs.py

Options `--n N --seed S --out PATH` make a larger set for measuring (docs/mathlib.md's table
used `--n 16384 --seed 777 --out /tmp/refs16k.npz`: every piece of the input mix scaled by
N/1024; the defaults reproduce the stored file).

For each function F and precision (f32, f64) the file holds `F.f32.x` / `F.f64.x` (inputs, in
that precision) and `F.f32.ref` / `F.f64.ref` (the exact value rounded to float64), plus for f64
`F.f64.lo`: the rounding error of that float64 in units of its ulp (float16), so the test
measures f64 errors against the unrounded value.
"""
import argparse
import os

import mpmath as mp
import numpy as np

mp.mp.dps = 50
N = 1024


def _loggamma_abs(x):
  return mp.re(mp.loggamma(x)) if x != mp.floor(x) or x > 0 else mp.inf


def _digamma(x):
  if x <= 0 and x == mp.floor(x):
    return mp.nan if x < 0 else -mp.inf
  return mp.digamma(x)


FUNCS = {"erf": mp.erf, "erfc": mp.erfc, "erfinv": mp.erfinv, "lgamma": _loggamma_abs,
         "digamma": _digamma}


def _mix(rng, parts, n):
  """Concatenate sampled pieces: ('lin', a, b, k) uniform on [a, b], ('log', a, b, k[, signed])
  log-uniform magnitudes (with random signs when signed)."""
  out = []
  for kind, a, b, k, *sign in parts:
    if kind == "lin":
      v = rng.uniform(a, b, k)
    else:
      v = np.exp(rng.uniform(np.log(a), np.log(b), k))
      if sign and sign[0]:
        v *= rng.choice([-1.0, 1.0], k)
    out.append(v)
  return np.concatenate(out)[:n]


def inputs(name, f64, rng, n=N):
  big = 1e300 if f64 else 1e37
  tiny = 1e-300 if f64 else 1e-40
  if name == "erf":
    parts = [("lin", -6.5, 6.5, 600), ("log", tiny, 6.0, 424, True)]
  elif name == "erfc":
    parts = [("lin", -6.0, 27.3 if f64 else 10.1, 700), ("log", tiny, 1.0, 324, True)]
  elif name == "erfinv":
    parts = [("lin", -1.0, 1.0, 500), ("log", tiny, 0.5, 174, True),
             ("log", 2.0 ** -53 if f64 else 2.0 ** -24, 0.5, 350)]
  elif name in ("lgamma", "digamma"):
    parts = [("lin", -12.0, 12.0, 450), ("lin", 0.5, 3.5, 150), ("log", tiny, big, 224),
             ("log", 1e-6, 1e6 if f64 else 1e4, 200)]
  m = n // N                                                        # scale of the mix
  parts = [(kind, a, b, k * m, *rest) for kind, a, b, k, *rest in parts]
  v = _mix(rng, parts, n)
  if name == "erfinv":
    k = 350 * m
    v[-k:] = (1.0 - v[-k:]) * rng.choice([-1.0, 1.0], k)           # near +-1
  if name in ("lgamma", "digamma"):
    v[-200 * m:] = -v[-200 * m:]                                    # negative, off the poles
  v = v.astype(np.float64 if f64 else np.float32)
  return v


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--n", type=int, default=N, help="points per function and precision "
                  "(a multiple of 1024)")
  ap.add_argument("--seed", type=int, default=2024)
  ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "mathlib_refs.npz"))
  args = ap.parse_args()
  rng = np.random.default_rng(args.seed)
  out = {}
  for name, fn in FUNCS.items():
    for f64 in (False, True):
      x = inputs(name, f64, rng, args.n)
      if name in ("lgamma", "digamma"):                 # keep off the poles exactly
        x = x[~((x <= 0) & (x == np.floor(x)))]
      vals = [fn(mp.mpf(float(v))) for v in x]
      ref = np.array([float(v) for v in vals])
      key = f"{name}.{'f64' if f64 else 'f32'}"
      out[key + ".x"] = x
      out[key + ".ref"] = ref
      if f64:
        with np.errstate(all="ignore"):
          ulp = np.spacing(np.abs(ref))
          lo = np.array([float((v - mp.mpf(r)) / mp.mpf(u)) if np.isfinite(r) and u
                         else 0.0 for v, r, u in zip(vals, ref, ulp)])
        out[key + ".lo"] = lo.astype(np.float16)
      print(key, len(x))
  path = args.out
  np.savez_compressed(path, **out)
  print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
  main()

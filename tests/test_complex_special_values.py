"""Complex functions at special values (issue 15): eager and jit agree on every element of
the grid {0, -0, 1, -1, inf, -inf, nan, tiny, huge}^2, and both give C99 Annex G's values
(NumPy's, which follows it through the C library) except where noted in NUMPY_DIFFERS."""
import warnings

import numpy as np
import pytest

import ember
import ember.numpy as jnp

FUNCS = {
    "exp": jnp.exp, "log": jnp.log, "log1p": jnp.log1p, "expm1": jnp.expm1, "sqrt": jnp.sqrt,
    "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "sinh": jnp.sinh, "cosh": jnp.cosh,
    "tanh": jnp.tanh, "arcsin": jnp.arcsin, "arccos": jnp.arccos, "arctan": jnp.arctan,
    "arcsinh": jnp.arcsinh, "arccosh": jnp.arccosh, "arctanh": jnp.arctanh, "log2": jnp.log2,
    "log10": jnp.log10, "exp2": jnp.exp2, "abs": jnp.abs, "sign": jnp.sign,
    "square": jnp.square, "reciprocal": jnp.reciprocal,
}

# Where ember (eager and jit, as XLA or C99) deliberately differs from NumPy's loops:
# - expm1: NumPy's complex loop computes expm1(a) cos b - 2 sin^2(b/2) + i e^a sin b without
#   special cases, so expm1(inf + 0j) = inf + nanj; ember keeps exp(z) - 1's (inf + 0j);
# - log1p: NumPy's is log(1 + z), which loses a tiny z entirely (log1p(1e-300) = 0);
# - sign: each part over |z|, as XLA (sign(inf + 0j) = nan + 0j, sign(-0 + 0j) = -0 + 0j);
#   NumPy 2 returns 1 + 0j there;
# - square: z * z as the compiled complex product (re = a*a - b*b); NumPy's loops disagree
#   with each other at overflow (np.square(1e300+1e300j) is -inf + infj as an array, nan +
#   infj as a scalar);
# - reciprocal: 1 / z with Smith's algorithm, as np.divide (np.reciprocal's own loop gives
#   other signed zeros, and nan + nanj for 1 / 0j where np.divide and XLA give inf + nanj).
NUMPY_DIFFERS = {"expm1", "log1p", "sign", "square", "reciprocal"}


def _grid(dt):
  big, tiny = (1e300, 1e-300) if dt == np.complex128 else (None, 1e-30)
  g = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, tiny, -tiny] + \
      ([big, -big] if big else [])
  part = np.float64 if dt == np.complex128 else np.float32
  z = np.empty(len(g) ** 2, dt)
  z.real = np.repeat(g, len(g)).astype(part)
  z.imag = np.tile(g, len(g)).astype(part)
  return z


def _part_equal(u, v, exact, eps):
  """Both NaN; or equal infinities; or zeros of the same sign (any sign unless `exact`); or
  finite values within a few ulps (the compiled math library against NumPy's)."""
  if np.isnan(u) or np.isnan(v):
    return bool(np.isnan(u) and np.isnan(v))
  if np.isinf(u) or np.isinf(v):
    return bool(u == v)
  if u == 0 and v == 0:
    return bool(not exact or np.signbit(u) == np.signbit(v))
  return bool(abs(u - v) <= 8 * eps * max(abs(u), abs(v)))


def _mismatches(z, got, want, exact_inputs_only=True):
  bad = []
  eps = np.finfo(z.dtype).eps
  for k in range(z.size):
    # zeros' signs count where the grid point is made of 0, +-1, inf and nan (with a tiny
    # part, a result that underflows may round to either zero)
    special = all(v == 0 or abs(v) in (1.0, np.inf) or np.isnan(v)
                  for v in (z[k].real, z[k].imag))
    exact = special or not exact_inputs_only
    g, w = complex(got[k]), complex(want[k])
    if not (_part_equal(g.real, w.real, exact, eps) and
            _part_equal(g.imag, w.imag, exact, eps)):
      bad.append(f"{z[k]}: {got[k]} != {want[k]}")
  return bad


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(FUNCS))
def test_eager_and_jit_agree_at_special_values(name, dt):
  with ember.enable_x64(dt == np.complex128):
    z = _grid(dt)
    fn = FUNCS[name]
    eager = np.asarray(fn(jnp.asarray(z)))
    jitted = np.asarray(ember.jit(fn)(z))
    assert eager.dtype == jitted.dtype
    assert not _mismatches(z, jitted, eager), _mismatches(z, jitted, eager)[:10]


@pytest.mark.parametrize("name", sorted(set(FUNCS) - NUMPY_DIFFERS))
def test_special_values_are_c99s(name):
  with ember.enable_x64(True):
    z = _grid(np.complex128)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
      warnings.simplefilter("ignore")
      want = getattr(np, name)(z)
    got = np.asarray(ember.jit(FUNCS[name])(z))
    bad = _mismatches(z, got, want)
    assert not bad, bad[:10]


# C99 Annex G's (and the Array API's) values, written out for the cases the issue named
CASES = [
    (jnp.arccos, complex(np.inf, np.inf), complex(np.pi / 4, -np.inf)),
    (jnp.arccos, complex(-np.inf, np.inf), complex(3 * np.pi / 4, -np.inf)),
    (jnp.exp, complex(np.inf, 0.0), complex(np.inf, 0.0)),
    (jnp.exp, complex(-np.inf, np.inf), complex(0.0, 0.0)),
    (jnp.cosh, complex(np.inf, 0.0), complex(np.inf, 0.0)),
    (jnp.cosh, complex(0.0, np.inf), complex(np.nan, 0.0)),
    (jnp.tanh, complex(np.inf, np.inf), complex(1.0, 0.0)),
    (jnp.tanh, complex(np.inf, 1.0), complex(1.0, 0.0)),
    (jnp.arcsinh, complex(1.0, np.inf), complex(np.inf, np.pi / 2)),
    (jnp.arcsinh, complex(np.inf, np.inf), complex(np.inf, np.pi / 4)),
    (jnp.arctanh, complex(1.0, np.inf), complex(0.0, np.pi / 2)),
    (jnp.arctanh, complex(np.nan, np.inf), complex(0.0, np.pi / 2)),
    (jnp.arctanh, complex(1.0, 1e-300), complex(345.73433753938677, np.pi / 4)),
    (jnp.expm1, complex(np.inf, 0.0), complex(np.inf, 0.0)),
    (jnp.log1p, complex(1e-300, 0.0), complex(1e-300, 0.0)),
    (jnp.log2, complex(np.inf, 0.0), complex(np.inf, 0.0)),
    (jnp.exp2, complex(-np.inf, 1.0), complex(0.0, 0.0)),
    (jnp.sign, complex(np.inf, 0.0), complex(np.nan, 0.0)),
    (jnp.reciprocal, complex(0.0, 0.0), complex(np.inf, np.nan)),
]


@pytest.mark.parametrize("fn,z,want", CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_named_special_values(fn, z, want):
  with ember.enable_x64(True):
    x = np.array([z], np.complex128)
    for got in (np.asarray(fn(jnp.asarray(x))), np.asarray(ember.jit(fn)(x))):
      assert not _mismatches(x, got, np.array([want]), exact_inputs_only=False), (got, want)

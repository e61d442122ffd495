"""ember.random against JAX 0.12's threefry2x32 (partitionable) numbers.

The reference outputs in data/random_jax_vectors.json were produced by real JAX with
data/make_random_vectors.py (see its docstring); every case is replayed eagerly and under
ember.jit and compared bit for bit.
"""
import json
import math
import os
from fractions import Fraction

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import random
from ember._src.library.random import samplers as prng
from ember._src.library.random.xla_math import erf as xla_erf, exp_log, pow as xla_pow
from ember._src.library.random.xla_math import tan as xla_tan
from ember._src.primitives.prng import threefry2x32

_DATA = os.path.join(os.path.dirname(__file__), "data", "random_jax_vectors.json")
with open(_DATA) as f:
  _VECTORS = json.load(f)
CASES, MATH = _VECTORS["cases"], _VECTORS["math"]

# Samplers built on transcendentals evaluate them exactly as XLA:CPU does (xla_math's _xla_*
# and _glibc_*: XLA's own formulas and the glibc functions XLA calls, with the same fused
# multiply-adds), so every case, every sampler and dtype, is compared bit for bit.


def _case_id(c):
  kw = ",".join(f"{k}={v}" for k, v in c["kwargs"].items())
  path = "".join(f"/{p[0]}{p[1:]}" for p in c["path"])
  return f"{'x64' if c['x64'] else 'x32'}-{c['op']}-{'key' if c['typed'] else 'PRNGKey'}" \
         f"({c['seed']}){path}[{kw}]"


def _derive(key, path):
  for step, *args in path:
    key = random.split(key, args[0])[args[1]] if step == "split" else random.fold_in(key, args[0])
  return key


def _kwarg(v):
  """A case kwarg: {"array": values, "dtype": name} is an array argument (as the generator)."""
  return np.asarray(v["array"], dtype=jnp.dtype(v["dtype"])) if isinstance(v, dict) else v


def _op(c):
  """The case's operation as a function of the (derived) key."""
  kw = dict(c["kwargs"])
  if "shape" in kw:
    kw["shape"] = tuple(kw["shape"])
  if "dtype" in kw:
    kw["dtype"] = jnp.dtype(kw["dtype"])
  kw = {k: _kwarg(v) for k, v in kw.items()}
  op = c["op"]
  if op == "uniform":
    for b in ("minval", "maxval"):
      if b in kw:
        kw[b] = np.asarray(kw[b], np.float64 if c["x64"] else np.float32)
  if op == "split":
    num = kw.get("num", 2)
    return lambda k: random.key_data(random.split(k, tuple(num) if isinstance(num, list) else num))
  if op == "fold_in":
    return lambda k: random.key_data(random.fold_in(k, kw["data"]))
  return lambda k: getattr(random, op)(k, **kw)


def _replay(c, jit: bool):
  ctor = random.key if c["typed"] else random.PRNGKey
  if c["op"] in ("PRNGKey", "key_data"):
    fn = lambda s: random.key_data(ctor(s))
    if not jit:
      return fn(c["seed"])
    seed = np.int64(c["seed"]).astype(np.int64 if c["x64"] else np.int32)  # JAX's wrap
    return ember.jit(fn)(seed)
  op = _op(c)
  fn = lambda k: op(_derive(k, c["path"]))
  base = ctor(c["seed"])
  return ember.jit(fn)(base) if jit else fn(base)


def _as_bits(a):
  flat = np.asarray(a).reshape(-1)
  return flat if flat.dtype.kind == "u" else flat.view(f"uint{flat.dtype.itemsize * 8}")


def _jit_representatives():
  """Compiling is the slow part: replay under ember.jit the largest case of each
  (op, dtype) group (and every case eagerly)."""
  best = {}
  for i, c in enumerate(CASES):
    g = (c["op"], c["dtype"])
    if g not in best or len(c["data"]) > len(CASES[best[g]]["data"]):
      best[g] = i
  return set(best.values())


_JIT_CASES = _jit_representatives()
_REPLAYS = [pytest.param(c, False, id=_case_id(c) + "-eager") for c in CASES] + [
    pytest.param(CASES[i], True, id=_case_id(CASES[i]) + "-jit") for i in sorted(_JIT_CASES)]


@pytest.mark.parametrize("c, jit", _REPLAYS)
def test_matches_jax_vectors(c, jit):
  with ember.enable_x64(c["x64"]):
    out = _replay(c, jit)
    assert isinstance(out, ember.Array)
    assert out.dtype == jnp.dtype(c["dtype"]) and out.shape == tuple(c["shape"])
    assert not out.weak_type
    got = _as_bits(out)
    np.testing.assert_array_equal(got, np.array(c["data"], dtype=got.dtype))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_normal_is_sqrt2_erf_inv_of_exact_uniform(dtype):
  dt = jnp.dtype(dtype)
  with ember.enable_x64(dtype == "float64"):
    k = random.key(3)
    lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    u = random.uniform(k, (50,), dt, lo, 1.0)
    assert float(np.min(np.asarray(u, np.float32))) >= float(lo)
    assert float(np.max(np.asarray(u, np.float32))) < 1.0
    # float32/float64 use XLA:CPU's erf_inv formulas (bit-exact with JAX); the others lax's
    erf_inv = {"float32": xla_erf._xla_erf_inv_f32, "float64": xla_erf._xla_erf_inv_f64}.get(
        dtype, ember.lax.erf_inv)
    expected = ember.lax.mul(np.array(np.sqrt(2), dt), erf_inv(u))
    np.testing.assert_array_equal(_as_bits(random.normal(k, (50,), dt)), _as_bits(expected))
    jitted = ember.jit(random.normal, static_argnums=(1, 2))(k, (50,), dt)
    np.testing.assert_array_equal(_as_bits(jitted), _as_bits(expected))


@pytest.mark.parametrize("fn, ref, lo, hi", [
    (exp_log._xla_log_f32, np.log, 1e-30, 50.0),
    (exp_log._xla_log1p_f32, np.log1p, -0.999, 50.0),
    (exp_log._xla_exp_f32, np.exp, -80.0, 80.0),
    (xla_erf._xla_erf_f32, np.vectorize(math.erf), -5.0, 5.0),
    (xla_erf._xla_erf_inv_f32, None, -1.0, 1.0)])
def test_xla_float32_math_is_accurate_and_handles_edges(fn, ref, lo, hi):
  """The XLA-formula helpers are few-ulp accurate (values checked against JAX in the
  vectors above) and agree eagerly and compiled, bit for bit."""
  x = np.concatenate([np.linspace(lo, hi, 3001, dtype=np.float32),
                      np.geomspace(1e-7, min(hi, 1.0), 200).astype(np.float32)])
  got = np.asarray(fn(x))
  np.testing.assert_array_equal(_as_bits(np.asarray(ember.jit(fn)(x))), _as_bits(got))
  if ref is None:  # erf_inv: check erf(got) == x
    ok = np.abs(x) < 1
    np.testing.assert_allclose(np.vectorize(math.erf)(got[ok].astype(np.float64)), x[ok],
                               rtol=2e-6, atol=2e-7)
  else:
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=4e-7, atol=1e-7)
  edges = {exp_log._xla_log_f32: ([0.0, -1.0, np.inf, np.nan, 1e-40], [-np.inf, np.nan, np.inf, np.nan, -np.inf]),
           exp_log._xla_log1p_f32: ([-1.0, 0.0, np.inf, -2.0], [-np.inf, 0.0, np.inf, np.nan]),
           xla_erf._xla_erf_inv_f32: ([-1.0, 1.0, 0.0], [-np.inf, np.inf, 0.0]),
           exp_log._xla_exp_f32: ([-np.inf, np.inf, 0.0, -100.0, 100.0], [0.0, np.inf, 1.0, 0.0, np.inf]),
           xla_erf._xla_erf_f32: ([0.0, 5.0, -5.0, np.inf, -np.inf], [0.0, 1.0, -1.0, 1.0, -1.0])}[fn]
  np.testing.assert_array_equal(np.asarray(fn(np.array(edges[0], np.float32))),
                                np.array(edges[1], np.float32))


# The rebuilt XLA:CPU math against JAX's own results (data/make_random_vectors.py "math":
# branch boundaries, zeros, infinities, NaN, subnormals (XLA:CPU reads them as zero) and
# random values). The float32 ones run in 32-bit mode: glibc's tanf/powf reduce and
# evaluate in float64, which they switch on internally.
_MATH_FNS = {"log_f64": exp_log._glibc_log, "log1p_f64": exp_log._xla_log1p_f64,
             "exp_f64": exp_log._xla_exp_f64, "erf_inv_f64": xla_erf._xla_erf_inv_f64,
             "tan_f32": xla_tan._glibc_tanf, "pow_f32": xla_pow._xla_pow_f32,
             "pow_f64": xla_pow._glibc_pow, "tan_f64": xla_tan._glibc_tan,
             "erf_f64": xla_erf._glibc_erf}


@pytest.mark.parametrize("name", sorted(_MATH_FNS))
def test_xla_math_is_bit_exact_with_jax(name):
  m = MATH[name]
  dt = np.dtype(m["dtype"])
  u = f"uint{dt.itemsize * 8}"
  args = [np.array(m[k], u).view(dt) for k in ("x", "y") if k in m]
  want = np.array(m["out"], u).view(dt)
  nan = np.isnan(want)
  with ember.enable_x64(dt == np.float64):
    for fn in (_MATH_FNS[name], ember.jit(_MATH_FNS[name])):
      got = np.asarray(fn(*args))
      assert got.dtype == dt and got.shape == want.shape
      np.testing.assert_array_equal(np.isnan(got), nan)
      np.testing.assert_array_equal(got[~nan].view(u), want[~nan].view(u))


@pytest.mark.parametrize("fn, ref, lo, hi, rtol", [
    (exp_log._glibc_log, np.log, 1e-300, 1e300, 1e-15),
    (exp_log._xla_log1p_f64, np.log1p, -0.999, 1e3, 1e-15),
    (exp_log._xla_exp_f64, np.exp, -700.0, 700.0, 1e-15),
    (xla_erf._xla_erf_inv_f64, None, -1.0, 1.0, 1e-15),
    (xla_tan._glibc_tanf, np.tan, -1.5, 1.5, 2.4e-7),
    (xla_pow._xla_pow_f32, lambda x: np.power(x, 0.37), 0.0, 50.0, 2.4e-7),
    (xla_pow._glibc_pow, lambda x: np.power(x, 0.37), 0.0, 50.0, 1e-15),
    (xla_tan._glibc_tan, np.tan, -25.0, 25.0, 1e-15),
    (xla_erf._glibc_erf, np.vectorize(math.erf), -6.0, 6.0, 1e-15)])
def test_rebuilt_math_is_accurate(fn, ref, lo, hi, rtol):
  """Independent of JAX: the rebuilt functions agree with NumPy float64 / math.erf to a few
  ulp (the references' own errors included; bit-exactness is the JAX vectors' job), on a
  grid, eagerly and compiled alike."""
  f32 = fn in (xla_tan._glibc_tanf, xla_pow._xla_pow_f32)
  dt = np.float32 if f32 else np.float64
  grid = (np.geomspace if lo > 0 else np.linspace)(lo, hi, 4001)
  x = np.concatenate([grid, np.linspace(max(lo, -0.5), min(hi, 0.5), 1001)]).astype(dt)
  call = (lambda f: (lambda v: f(v, np.full_like(v, 0.37)))) \
      if fn in (xla_pow._xla_pow_f32, xla_pow._glibc_pow) else (lambda f: f)
  with ember.enable_x64(not f32):
    got = np.asarray(call(fn)(x))
    np.testing.assert_array_equal(_as_bits(np.asarray(call(ember.jit(fn))(x))), _as_bits(got))
  if ref is None:  # erf_inv: erf(got) == x
    ok = np.abs(x) < 1 - 1e-9
    np.testing.assert_allclose(np.vectorize(math.erf)(got[ok]), x[ok], rtol=rtol, atol=1e-16)
  else:
    np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=rtol, atol=1e-300)


@pytest.mark.parametrize("x64, fn, at, want", [
    # d/dparam of sum(sampler(key(0), param, shape=(3,))), values from JAX 0.12
    (False, lambda k, v: random.lognormal(k, v, (3,)), 0.5, 8.878513),
    (False, lambda k, v: random.weibull_min(k, 1.0, v, (3,)), 1.5, -2.237096),
    (False, lambda k, v: random.pareto(k, v, (3,)), 2.0, -9.91275),
    (False, lambda k, v: random.truncated_normal(k, v, 2.0, (3,)), -1.0, 0.5701862),
    (False, lambda k, v: random.uniform(k, (3,), minval=v, maxval=2.0), -1.0, 0.74146175),
    (True, lambda k, v: random.lognormal(k, v, (3,), jnp.float64), 0.5, 3.7871488344753135),
    (True, lambda k, v: random.weibull_min(k, 1.0, v, (3,), jnp.float64), 1.5,
     -0.7834758734590147),
    (True, lambda k, v: random.pareto(k, v, (3,), jnp.float64), 2.0, -4.7594798092510056),
    (True, lambda k, v: random.truncated_normal(k, v, 2.0, (3,), jnp.float64), -1.0,
     0.9527300279563479)])
def test_sampler_gradients_follow_lax_rules(x64, fn, at, want):
  """The rebuilt XLA:CPU math differentiates as lax's functions do (custom JVPs), so
  reparameterized samples have JAX's gradients."""
  f = lambda v: jnp.sum(fn(random.key(0), v))
  with ember.enable_x64(x64):
    v = np.asarray(at, np.float64 if x64 else np.float32)
    for g in (ember.grad(f), ember.jit(ember.grad(f))):
      np.testing.assert_allclose(float(g(v)), want, rtol=1e-12 if x64 else 2e-6)


def _flushed(v: np.ndarray) -> np.ndarray:
  """v with its subnormals as zeros of their sign: XLA:CPU's flush-to-zero (a correctly
  rounded fma whose result is subnormal writes 0)."""
  tiny = np.finfo(v.dtype).tiny
  return np.where(np.abs(v) < tiny, np.copysign(np.zeros_like(v), v), v)


def test_fma_float64_rounds_once_eager_and_compiled():
  """ember's fma primitive in float64 (the samplers' contracted multiply-adds): exact
  rational arithmetic decides, including products that cancel, tiny and huge operands,
  signed zeros and infinities."""
  from ember._src.primitives.elementwise import fma
  rng = np.random.default_rng(3)
  x = rng.standard_normal(300) * 2.0 ** rng.integers(-40, 40, 300)
  y = rng.standard_normal(300)
  z = np.where(np.arange(300) % 2 == 0, -x * y, rng.standard_normal(300))  # cancellation
  x = np.concatenate([x, [1 + 2.0**-52, 1e-200, 1e300, 2.0**-600, 0.0, np.inf, 1e300, 3.0]])
  y = np.concatenate([y, [1 - 2.0**-52, 1e-200, 1e10, 2.0**-500, -1.0, 0.0, 10.0, 5e-324]])
  z = np.concatenate([z, [-1.0, 5e-324, -1e308, 2.0**-1074, -0.0, 1.0, -np.inf, 0.0]])
  def exact(a, b, c):
    if not all(map(math.isfinite, (a, b, c))) or 0.0 in (a, b):
      return a * b + c
    v = Fraction(a) * Fraction(b) + Fraction(c)
    try:
      return float(v)
    except OverflowError:
      return math.inf if v > 0 else -math.inf

  want = [exact(a, b, c) for a, b, c in zip(x.tolist(), y.tolist(), z.tolist())]
  want[-3] = np.nan  # inf * 0 + 1
  want[-2] = -np.inf  # 1e300 * 10 overflows the product only; c = -inf decides
  want = _flushed(np.array(want))   # subnormal results are zeros, as XLA:CPU writes them
  with ember.enable_x64():
    for f in (fma, ember.jit(fma)):
      got = np.asarray(f(x, y, z))
      assert got.dtype == np.float64
      nan = np.isnan(want)
      np.testing.assert_array_equal(np.isnan(got), nan)
      np.testing.assert_array_equal(got[~nan].view(np.uint64), want[~nan].view(np.uint64))
    assert float(fma(np.float64(1 + 2**-52), np.float64(1 - 2**-52), np.float64(-1))) == -2.0**-104
    assert np.signbit(np.asarray(fma(np.float64(0.0), np.float64(-1.0), np.float64(-0.0))))


# --- seeds and keys ---------------------------------------------------------------------

def test_seed_002_key_types():
  raw = random.PRNGKey(0)
  assert raw.dtype == jnp.uint32 and raw.shape == (2,)
  k = random.key(0)
  assert jnp.issubdtype(k.dtype, ember.dtypes.prng_key) and k.shape == ()
  assert jnp.issubdtype(k.dtype, ember.dtypes.extended)
  assert not jnp.issubdtype(raw.dtype, ember.dtypes.prng_key)
  assert not jnp.issubdtype(k.dtype, np.integer)
  with pytest.raises(TypeError, match="key_data"):
    k + 1  # noqa: B018


def test_typed_key_metadata_and_printing():
  k = random.key(42)
  assert str(k.dtype) == repr(k.dtype) == k.dtype.name == "key<fry>"
  assert k.dtype == random.key(7).dtype == random.key_dtype() == random.key_dtype("threefry2x32")
  assert k.ndim == 0 and k.size == 1 and k.dtype.itemsize == 8
  assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[ 0 42]"
  assert random.key_impl(k) == random.key_impl(random.PRNGKey(1)) == "threefry2x32"
  assert isinstance(random.key_data(k), ember.Array) and random.key_data(k).dtype == np.uint32


@pytest.mark.parametrize("op", [
    lambda k: k + 1, lambda k: 1 + k, lambda k: k * 2, lambda k: k - k, lambda k: -k,
    lambda k: k << 1, lambda k: k < k, lambda k: abs(k), lambda k: k.astype(np.uint32),
    lambda k: np.asarray(k), lambda k: int(k), lambda k: jnp.add(k, 1),
])
def test_key_arithmetic_raises(op):
  with pytest.raises(TypeError):
    op(random.key(0))


@pytest.mark.parametrize("seed", [2**63, -2**63 - 1])
def test_seed_out_of_int64_range(seed):
  with pytest.raises(OverflowError):
    random.PRNGKey(seed)


@pytest.mark.parametrize("seed, x64, want", [
    # Integer-array seeds: low word = the seed's low 32 bits (sign-extended); high word =
    # the upper 32 bits of a 64-bit seed, else 0 (checked with JAX 0.12).
    (np.int8(-3), False, [0, 4294967293]),
    (np.uint32(2**32 - 1), False, [0, 4294967295]),
    (np.int16(-5), True, [0, 4294967291]),
    (np.int64(-2**40), True, [4294967040, 0]),
    (np.uint64(2**64 - 1), True, [4294967295, 4294967295]),
])
def test_seed_dtypes(seed, x64, want):
  with ember.enable_x64(x64):
    for fn in (random.PRNGKey, ember.jit(random.PRNGKey)):
      np.testing.assert_array_equal(np.asarray(fn(seed)), np.array(want, np.uint32))


@pytest.mark.parametrize("seed, exc, match", [
    (1.0, TypeError, "must be an integer"),
    (np.float32(2), TypeError, "must be an integer"),
    (np.arange(2), TypeError, "scalar seed"),
    (random.key(0), TypeError, "given a PRNG key"),
])
def test_seed_errors(seed, exc, match):
  for ctor in (random.key, random.PRNGKey):
    with pytest.raises(exc, match=match):
      ctor(seed)


def test_impl_argument():
  assert random.key(1, impl="threefry2x32").dtype == random.key_dtype()
  with pytest.raises(ValueError, match="not supported by ember"):
    random.key(1, impl="rbg")
  with pytest.raises(ValueError, match="unrecognized PRNG implementation"):
    random.PRNGKey(1, impl="foo")
  with pytest.raises(ValueError, match="both"):
    random.key(1, impl="threefry2x32", dtype=random.key_dtype())


def test_wrap_and_key_data_roundtrip():
  raw = random.key_data(random.split(random.key(5), (2, 3)))
  keys = random.wrap_key_data(raw)
  assert keys.shape == (2, 3) and keys.dtype == random.key_dtype()
  np.testing.assert_array_equal(np.asarray(random.key_data(keys)), np.asarray(raw))
  assert random.key_data(random.PRNGKey(3)) is not None
  np.testing.assert_array_equal(np.asarray(random.key_data(random.PRNGKey(3))), [0, 3])
  assert bool(random.wrap_key_data(np.array([0, 5], np.uint32)) == random.key(5))
  assert bool(random.key(5) != random.key(6))


@pytest.mark.parametrize("data, match", [
    (np.zeros(3, np.uint32), r"end with \(2,\)"),
    (np.zeros(2, np.int32), "uint32"),
    (np.zeros((), np.uint32), r"end with \(2,\)"),
    ("ab", "uint32 key data"),
])
def test_wrap_key_data_errors(data, match):
  with pytest.raises(TypeError, match=match):
    random.wrap_key_data(data)


# --- key arrays: indexing, iteration, reshape, pytrees, jit ------------------------------

_INDICES = [0, -1, (1, 2), (slice(None), 1), (Ellipsis, slice(None, None, 2)), (None, 0),
            (1, slice(2, 0)), slice(None), (Ellipsis,)]


@pytest.mark.parametrize("idx", _INDICES, ids=repr)
def test_key_indexing_matches_data_indexing(idx):
  keys = random.split(random.key(9), (2, 3))
  data = np.asarray(random.key_data(keys))
  tup = idx if isinstance(idx, tuple) else (idx,)
  want = data[tup + ((slice(None),) if Ellipsis in tup else (Ellipsis, slice(None)))]
  for fn in (lambda k: k[idx], ember.jit(lambda k: k[idx])):
    got = fn(keys)
    assert isinstance(got, random.PRNGKeyArray) and got.shape == want.shape[:-1]
    np.testing.assert_array_equal(np.asarray(random.key_data(got)), want)


def test_key_index_errors():
  keys = random.split(random.key(9), 3)
  with pytest.raises(IndexError, match="out of bounds"):
    keys[3]  # noqa: B018
  with pytest.raises(IndexError, match="too many indices"):
    keys[0, 0]  # noqa: B018
  with pytest.raises(TypeError, match="len"):
    len(random.key(0))


def test_key_iteration_reshape_transpose():
  keys = random.split(random.key(1), (2, 3))
  data = np.asarray(random.key_data(keys))
  assert len(keys) == 2 and keys.ndim == 2 and keys.size == 6
  rows = list(keys)
  assert len(rows) == 2 and all(r.shape == (3,) for r in rows)
  np.testing.assert_array_equal(np.asarray(random.key_data(rows[1])), data[1])
  np.testing.assert_array_equal(np.asarray(random.key_data(keys.reshape(3, 2))),
                                data.reshape(3, 2, 2))
  np.testing.assert_array_equal(np.asarray(random.key_data(keys.reshape(-1))),
                                data.reshape(6, 2))
  np.testing.assert_array_equal(np.asarray(random.key_data(keys.T)), data.transpose(1, 0, 2))
  with pytest.raises(TypeError, match="reshape"):
    keys.reshape(4)
  k1, k2 = random.split(random.PRNGKey(0))  # raw keys iterate as arrays
  assert k1.shape == (2,) and k2.dtype == np.uint32


def test_keys_are_leaves_through_jit_and_tree_map():
  k = random.key(11)
  leaves = ember.tree_util.tree_leaves(k)   # a leaf, as in JAX (PyTreeDef(*))
  assert len(leaves) == 1 and leaves[0] is k
  assert str(ember.tree_util.tree_structure(k)) == "PyTreeDef(*)"
  same = ember.tree_util.tree_map(lambda x: x, k)
  assert same is k
  out = ember.jit(lambda k: {"keys": random.split(k, 4), "x": random.uniform(k)})(k)
  assert isinstance(out["keys"], random.PRNGKeyArray) and out["keys"].shape == (4,)
  np.testing.assert_array_equal(np.asarray(random.key_data(out["keys"])),
                                np.asarray(random.key_data(random.split(k, 4))))
  assert out["x"].dtype == np.float32 and out["x"].shape == ()


def test_jaxpr_shows_threefry2x32():
  j = ember.make_jaxpr(lambda k: random.bits(k, (3,)))(random.key(0))
  assert [str(v.aval.str_short(True)) for v in j.invars] == ["u32[2]"]
  eqn = [e for e in j.eqns if e.primitive.name == "threefry2x32"]
  assert len(eqn) == 1 and eqn[0].params == {}
  assert [v.aval.str_short(True) for v in eqn[0].outvars] == ["u32[3]", "u32[3]"]
  text = str(j)
  assert "u32[3] = threefry2x32 " in text and "xor" in text
  u = str(ember.make_jaxpr(lambda k: random.uniform(k, (3,)))(random.key(0)))
  assert "shift_right_logical" in u and "1065353216:u32[]" in u
  assert "bitcast_convert_type[new_dtype=float32]" in u


# --- the threefry2x32 primitive ------------------------------------------------------------

@pytest.mark.parametrize("key, ctr, want", [
    # Known-answer tests of Threefry-2x32-20 from the Random123 distribution (kat_vectors).
    ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
    ((0xFFFFFFFF,) * 2, (0xFFFFFFFF,) * 2, (0x1CB996FC, 0xBB002BE7)),
    ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
])
def test_threefry2x32_known_answers(key, ctr, want):
  u = lambda v: np.array([v], np.uint32)
  for fn in (threefry2x32, ember.jit(threefry2x32)):
    out = fn(u(key[0]), u(key[1]), u(ctr[0]), u(ctr[1]))
    assert [int(np.asarray(o)[0]) for o in out] == list(want)


def test_threefry2x32_broadcasting_and_dtype_errors():
  z = np.uint32(0)
  out = threefry2x32(z, z, z, np.arange(5, dtype=np.uint32))
  assert [o.shape for o in out] == [(5,), (5,)] and all(o.dtype == np.uint32 for o in out)
  with pytest.raises(TypeError, match="threefry2x32 requires uint32"):
    threefry2x32(z, z, z, np.arange(5, dtype=np.int32))
  with pytest.raises(TypeError, match="threefry2x32"):
    threefry2x32(z, z, np.zeros(3, np.uint32), np.zeros(4, np.uint32))


# --- properties -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_partitionable_prefix_property(dtype):
  k = random.key(123)
  big = np.asarray(random.bits(k, (40,), dtype))
  for n in (1, 7, 16):
    np.testing.assert_array_equal(np.asarray(random.bits(k, (n,), dtype)), big[:n])
  np.testing.assert_array_equal(np.asarray(random.bits(k, (5, 8), dtype)).reshape(-1), big)
  np.testing.assert_array_equal(np.asarray(random.key_data(random.split(k, 3))),
                                np.asarray(random.key_data(random.split(k, 5)))[:3])
  u = random.uniform(k, (40,))
  np.testing.assert_array_equal(np.asarray(random.uniform(k, (4, 10))).reshape(-1), np.asarray(u))


def test_eager_and_jit_give_identical_bits():
  def draws(k):
    a, b = random.split(k)
    return (random.bits(a, (4, 3), jnp.uint16), random.uniform(b, (7,), jnp.bfloat16, -3, 5),
            random.normal(random.fold_in(k, 99), (2, 2)),
            random.uniform(k, (5,), minval=np.float32(0.1), maxval=np.float32(0.7)))
  k = random.key(2024)
  for i, (x, y) in enumerate(zip(draws(k), ember.jit(draws)(k))):
    assert x.dtype == y.dtype and x.shape == y.shape
    if i == 2:  # normal: compiled erf_inv is a few-ulp polynomial (see above)
      np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=4e-6)
    else:
      np.testing.assert_array_equal(_as_bits(x), _as_bits(y))


def test_uniform_traced_bounds_match_concrete():
  k = random.key(8)
  f = ember.jit(lambda k, lo, hi: random.uniform(k, (6, 2), minval=lo, maxval=hi))
  lo, hi = np.float32(-1.7), np.array([2.3, 9.1], np.float32)
  np.testing.assert_array_equal(_as_bits(f(k, lo, hi)),
                                _as_bits(random.uniform(k, (6, 2), minval=lo, maxval=hi)))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("lo, hi", [(0.0, 1.0), (-2.5, 7.0), (3.0, 3.0), (1e-3, 2e-3)])
def test_uniform_range(dtype, lo, hi):
  dt = jnp.dtype(dtype)
  x = np.asarray(random.uniform(random.key(4), (500,), dt, lo, hi)).astype(np.float64)
  lo_d, hi_d = float(np.array(lo, dt).astype(np.float64)), float(np.array(hi, dt).astype(np.float64))
  assert x.min() >= lo_d and (x.max() < hi_d or lo_d == hi_d)
  assert x.max() <= hi_d


def test_scale_and_shift_is_correctly_rounded():
  """uniform's x * scale + offset == RN(x*y + z) computed with exact rationals (one fused
  multiply-add, as XLA:CPU contracts it), eagerly and compiled."""
  rng = np.random.default_rng(0)

  def rn(fr, dt):
    c = dt.type(float(fr))
    near = [np.nextafter(c, dt.type(-np.inf)), c, np.nextafter(c, dt.type(np.inf))]
    odd = lambda v: int(np.array(v).view(f"uint{dt.itemsize * 8}")) & 1
    return min(near, key=lambda v: (abs(Fraction(float(v)) - fr), odd(v)))

  for dt, nmant in ((np.dtype(np.float32), 23), (np.dtype(np.float64), 52)):
    n = 400
    x = (rng.integers(0, 2**nmant, n, dtype=np.uint64) / 2.0**nmant).astype(dt)
    y = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 31, n)).astype(dt)
    z = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 31, n)).astype(dt)
    z[:100] = -(x[:100].astype(np.float64) * y[:100]).astype(dt)  # heavy cancellation
    want = _flushed(np.array([rn(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)),
                                 dt) for a, b, c in zip(x, y, z)], dt))
    f = lambda a, b, c: prng._scale_and_shift(a, b, c, jnp.dtype(dt))
    with ember.enable_x64(dt == np.float64):
      for fn in (f, ember.jit(f)):
        np.testing.assert_array_equal(_as_bits(np.asarray(fn(x, y, z))), _as_bits(want))


def test_default_dtypes_follow_x64():
  k = random.key(0)
  assert random.bits(k).dtype == np.uint32 and random.uniform(k).dtype == np.float32
  assert random.normal(k, (2,)).dtype == np.float32
  with ember.enable_x64():
    assert random.bits(k).dtype == np.uint64 and random.uniform(k).dtype == np.float64
    assert random.normal(k).dtype == np.float64
  assert random.uniform(k, (2,), jnp.float64).dtype == np.float32  # canonicalized in x32


# --- argument errors ----------------------------------------------------------------------

@pytest.mark.parametrize("bad", [5, "a", 1.5, None, np.arange(3, dtype=np.uint32),
                                 np.zeros(2, np.int32), [0, 1]])
@pytest.mark.parametrize("fn", [random.split, lambda k: random.fold_in(k, 1), random.bits,
                                random.uniform, random.normal, random.key_data])
def test_non_key_arguments_raise_type_error(fn, bad):
  with pytest.raises(TypeError, match="PRNG key|key data"):
    fn(bad)


@pytest.mark.parametrize("fn", [random.split, random.bits, random.uniform, random.normal,
                                lambda k: random.fold_in(k, 3)])
def test_batched_keys_need_vmap(fn):
  for keys in (random.split(random.key(0), 2), random.split(random.PRNGKey(0), 2)):
    with pytest.raises(ValueError, match="accepts a single key.*vmap"):
      fn(keys)


@pytest.mark.parametrize("call", [
    lambda k: random.split(k, 2.0), lambda k: random.split(k, (2.0,)),
    lambda k: random.split(k, "ab"), lambda k: random.bits(k, (3.0,)),
    lambda k: random.bits(k, "ab"), lambda k: random.uniform(k, (2, None)),
    lambda k: random.normal(k, 2.5),
])
def test_shape_arguments_must_be_int_tuples(call):
  with pytest.raises(TypeError, match="[Ss]hape"):
    call(random.key(0))


def test_shape_argument_forms_and_negative_dims():
  k = random.key(0)
  assert random.bits(k, 3).shape == (3,) and random.bits(k, [2, 1]).shape == (2, 1)
  assert random.bits(k, (np.int64(2),)).shape == (2,) and random.split(k, [2, 2]).shape == (2, 2)
  with pytest.raises(ValueError, match="negative"):
    random.split(k, -1)
  with pytest.raises(ValueError, match="negative"):
    random.uniform(k, (2, -3))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_normal_as_jax(dtype):
  # JAX 0.12: real and imaginary parts are real normals of the two halves of split(key),
  # divided by sqrt(2) with XLA's complex division ((a*c) / (c*c) for d = 0), so each part
  # has variance 1/2 (checked against JAX: the same bits given the same real normals)
  dt = jnp.dtype(dtype)
  with ember.enable_x64(dtype == "complex128"):
    rdt = np.array(0, dt).real.dtype
    for k in (random.key(0), random.PRNGKey(7)):
      kre, kim = random.split(k)
      c = np.array(np.sqrt(2), rdt)
      want = [(np.asarray(random.normal(kk, (6,), rdt)) * c) / (c * c) for kk in (kre, kim)]
      for fn in (random.normal, ember.jit(random.normal, static_argnums=(1, 2))):
        z = np.asarray(fn(k, (6,), dt))
        assert z.dtype == dt
        np.testing.assert_array_equal(_as_bits(z.real), _as_bits(want[0]))
        np.testing.assert_array_equal(_as_bits(z.imag), _as_bits(want[1]))
    z = np.asarray(random.normal(random.key(1), (20000,), dt))
    assert abs(z.real.var() - 0.5) < 0.03 and abs(z.imag.var() - 0.5) < 0.03
    assert abs(np.mean(np.abs(z) ** 2) - 1.0) < 0.05


@pytest.mark.parametrize("call, exc, match", [
    (lambda k: random.bits(k, (2,), jnp.int32), ValueError, "unsigned int dtype"),
    (lambda k: random.bits(k, (2,), jnp.float32), ValueError, "unsigned int dtype"),
    (lambda k: random.uniform(k, (2,), jnp.int32), ValueError, "float dtype"),
    (lambda k: random.normal(k, (2,), jnp.uint8), ValueError, "float"),
    (lambda k: random.fold_in(k, np.arange(2)), TypeError, "accepts a scalar"),
    (lambda k: random.fold_in(k, -1), OverflowError, "out of bounds for uint32"),
    (lambda k: random.fold_in(k, 2**32), OverflowError, "out of bounds for uint32"),
])
def test_dtype_and_data_errors(call, exc, match):
  for k in (random.key(0), random.PRNGKey(0)):
    with pytest.raises(exc, match=match):
      call(k)


def test_fold_in_data_conversions():
  k = random.key(1)
  want = np.asarray(random.key_data(random.fold_in(k, 2**32 - 1)))
  for data in (np.int32(-1), np.uint32(2**32 - 1), ember.numpy.asarray(np.int32(-1))):
    for fn in (random.fold_in, ember.jit(random.fold_in)):
      np.testing.assert_array_equal(np.asarray(random.key_data(fn(k, data))), want)
  np.testing.assert_array_equal(np.asarray(random.key_data(random.fold_in(k, 7.9))),
                                np.asarray(random.key_data(random.fold_in(k, 7))))


# --- every sampler: eager == jit == vmap over keys, bit for bit ----------------------------

_P = np.array([0.25, 0.125, 0.5, 0.0625, 0.0625], np.float32)
_LOGITS = np.array([[0.0, 1.0, 2.0], [-1.0, 0.5, 0.25]], np.float32)
SAMPLERS = {
    "bits": lambda k: random.bits(k, (3, 2), jnp.uint8),
    "uniform": lambda k: random.uniform(k, (5,), minval=-2.0, maxval=3.0),
    "normal": lambda k: random.normal(k, (2, 3)),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 2.0, (4,)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (6,)),
    "bernoulli_high": lambda k: random.bernoulli(k, _P, mode="high"),
    "randint": lambda k: random.randint(k, (2, 3), -4, 300, jnp.int16),
    "choice": lambda k: random.choice(k, 7, (3,)),
    "choice_noreplace": lambda k: random.choice(k, 7, (3,), replace=False),
    "choice_p": lambda k: random.choice(k, 5, (4,), p=_P),
    "choice_p_noreplace": lambda k: random.choice(k, jnp.arange(10, 15), (3,), False, _P),
    "permutation": lambda k: random.permutation(k, 6),
    "permutation_array": lambda k: random.permutation(k, jnp.arange(12.0).reshape(3, 4), 1),
    "permutation_independent": lambda k: random.permutation(
        k, jnp.arange(12).reshape(3, 4), independent=True),
    "categorical": lambda k: random.categorical(k, _LOGITS),
    "categorical_noreplace": lambda k: random.categorical(k, _LOGITS, shape=(2, 2),
                                                         replace=False),
    "gumbel": lambda k: random.gumbel(k, (4,)),
    "gumbel_high": lambda k: random.gumbel(k, (4,), mode="high"),
    "gumbel_highest": lambda k: random.gumbel(k, (4,), mode="highest"),
    "exponential": lambda k: random.exponential(k, (4,)),
    "laplace": lambda k: random.laplace(k, (4,)),
    "logistic": lambda k: random.logistic(k, (4,)),
    "cauchy": lambda k: random.cauchy(k, (4,)),
    "rademacher": lambda k: random.rademacher(k, (5,)),
    "pareto": lambda k: random.pareto(k, 3.0, (4,)),
    "rayleigh": lambda k: random.rayleigh(k, 2.0, (4,)),
    "weibull_min": lambda k: random.weibull_min(k, 2.0, 1.5, (4,)),
    "geometric": lambda k: random.geometric(k, 0.4, (4,)),
    "triangular": lambda k: random.triangular(k, 0.0, 1.0, 3.0, (4,)),
    "lognormal": lambda k: random.lognormal(k, 0.5, (4,)),
    "maxwell": lambda k: random.maxwell(k, (4,)),
    "double_sided_maxwell": lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (4,)),
    "split": lambda k: random.key_data(random.split(k, 3)),
    "fold_in": lambda k: random.key_data(random.fold_in(k, 12)),
}
# Every sampler's transcendentals are XLA:CPU's formulas rebuilt from lax ops
# (xla_math's _xla_*, _glibc_*), so eager, vmapped and compiled draws are the same bits.
_JIT_VMAP = {"bits", "randint", "choice_p", "permutation_independent", "categorical",
             "normal", "split", "truncated_normal", "cauchy", "weibull_min"}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_eager_jit_vmap_agree(name):
  fn = SAMPLERS[name]
  keys = random.split(random.key(31), 3)
  eager = [fn(keys[i]) for i in range(3)]
  assert all(e.shape == eager[0].shape and e.dtype == eager[0].dtype for e in eager)
  stacked = np.stack([np.asarray(e) for e in eager])
  runs = [ember.vmap(fn)(keys), ember.vmap(fn)(random.key_data(keys))]
  if name in _JIT_VMAP:  # compiling is slow; the vector tests compile every op
    runs.append(ember.jit(ember.vmap(fn))(keys))
  for batched in runs:
    assert batched.shape == (3, *eager[0].shape) and batched.dtype == eager[0].dtype
    np.testing.assert_array_equal(_as_bits(batched), _as_bits(stacked))
  # raw and typed keys give the same draws
  raw = random.key_data(keys[1])
  np.testing.assert_array_equal(_as_bits(fn(raw)), _as_bits(eager[1]))


def test_keys_in_scan_carry_and_vmapped_split():
  def body(k, _):
    k, sub = random.split(k)
    return k, random.uniform(sub, (2,))
  k0 = random.key(5)
  k_end, xs = ember.lax.scan(body, k0, None, length=4)
  k, want = k0, []
  for _ in range(4):
    k, sub = random.split(k)
    want.append(np.asarray(random.uniform(sub, (2,))))
  assert isinstance(k_end, random.PRNGKeyArray) and bool(k_end == k)
  np.testing.assert_array_equal(np.asarray(xs), np.stack(want))
  both = ember.vmap(random.split)(random.split(k0, 2))
  assert isinstance(both, random.PRNGKeyArray) and both.shape == (2, 2)
  assert bool(both[1, 0] == random.split(random.split(k0, 2)[1])[0])


def test_clone_and_public_names():
  k = random.key(3)
  assert random.clone(k) is k
  public = {"Key", "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical",
            "cauchy", "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell",
            "exponential", "f", "fold_in", "gamma", "generalized_normal", "geometric",
            "gumbel", "key", "key_data", "key_dtype", "key_impl", "laplace", "loggamma",
            "logistic", "lognormal", "maxwell", "multinomial", "multivariate_normal",
            "normal", "orthogonal", "pareto", "permutation", "poisson", "rademacher",
            "randint", "rayleigh", "split", "t", "triangular", "truncated_normal",
            "uniform", "wald", "weibull_min", "wrap_key_data"}
  assert set(random.__all__) == public  # jax.random's public names but random_gamma_p
  assert all(callable(getattr(random, n)) for n in public)
  assert not hasattr(random, "shuffle")  # removed in JAX 0.12, use permutation


# --- distributions: large samples against their CDFs (Kolmogorov-Smirnov) ----------------

_N = 20000
_erf = np.vectorize(math.erf, otypes=[np.float64])
_phi = lambda x: 0.5 * (1 + _erf(x / np.sqrt(2)))


def _maxwell_cdf(x):
  x = np.maximum(x, 0)
  return _erf(x / np.sqrt(2)) - np.sqrt(2 / np.pi) * x * np.exp(-x * x / 2)


def _tri_cdf(x, a=-1.0, c=0.5, b=3.0):
  x = np.clip(x, a, b)
  return np.where(x < c, (x - a) ** 2 / ((b - a) * (c - a)),
                  1 - (b - x) ** 2 / ((b - a) * (b - c)))


CONTINUOUS = {  # name: (draw(key, n), cdf, mean, variance)
    "uniform": (lambda k, n: random.uniform(k, (n,), minval=-1.0, maxval=3.0),
                lambda x: (x + 1) / 4, 1.0, 16 / 12),
    "normal": (lambda k, n: random.normal(k, (n,)), _phi, 0.0, 1.0),
    "truncated_normal": (lambda k, n: random.truncated_normal(k, -0.5, 1.5, (n,)),
                         lambda x: (_phi(x) - _phi(-0.5)) / (_phi(1.5) - _phi(-0.5)), None, None),
    "exponential": (lambda k, n: random.exponential(k, (n,)), lambda x: 1 - np.exp(-x),
                    1.0, 1.0),
    "gumbel": (lambda k, n: random.gumbel(k, (n,)), lambda x: np.exp(-np.exp(-x)),
               np.euler_gamma, np.pi ** 2 / 6),
    "gumbel_high": (lambda k, n: random.gumbel(k, (n,), mode="high"),
                    lambda x: np.exp(-np.exp(-x)), np.euler_gamma, np.pi ** 2 / 6),
    "gumbel_highest": (lambda k, n: random.gumbel(k, (n,), mode="highest"),
                       lambda x: np.exp(-np.exp(-x)), np.euler_gamma, np.pi ** 2 / 6),
    "laplace": (lambda k, n: random.laplace(k, (n,)),
                lambda x: np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)),
                                   1 - 0.5 * np.exp(-np.maximum(x, 0))), 0.0, 2.0),
    "logistic": (lambda k, n: random.logistic(k, (n,)), lambda x: 1 / (1 + np.exp(-x)),
                 0.0, np.pi ** 2 / 3),
    "cauchy": (lambda k, n: random.cauchy(k, (n,)), lambda x: 0.5 + np.arctan(x) / np.pi,
               None, None),
    "pareto": (lambda k, n: random.pareto(k, 3.0, (n,)),
               lambda x: 1 - np.maximum(x, 1) ** -3.0, 1.5, 0.75),
    "rayleigh": (lambda k, n: random.rayleigh(k, 2.0, (n,)),
                 lambda x: 1 - np.exp(-x * x / 8), 2 * np.sqrt(np.pi / 2), (4 - np.pi) / 2 * 4),
    "weibull_min": (lambda k, n: random.weibull_min(k, 2.0, 1.5, (n,)),
                    lambda x: 1 - np.exp(-(np.maximum(x, 0) / 2.0) ** 1.5),
                    2.0 * math.gamma(1 + 1 / 1.5),
                    4.0 * (math.gamma(1 + 2 / 1.5) - math.gamma(1 + 1 / 1.5) ** 2)),
    "triangular": (lambda k, n: random.triangular(k, -1.0, 0.5, 3.0, (n,)), _tri_cdf,
                   2.5 / 3, (1 + 0.25 + 9 + 0.5 + 3 - 1.5) / 18),
    "lognormal": (lambda k, n: random.lognormal(k, 0.5, (n,)),
                  lambda x: _phi(np.log(np.maximum(x, 1e-300)) / 0.5),
                  np.exp(0.125), (np.exp(0.25) - 1) * np.exp(0.25)),
    "maxwell": (lambda k, n: random.maxwell(k, (n,)), _maxwell_cdf, 2 * np.sqrt(2 / np.pi),
                3 - 8 / np.pi),
    "double_sided_maxwell": (lambda k, n: random.double_sided_maxwell(k, 1.0, 2.0, (n,)),
                             lambda x: 0.5 + 0.5 * np.sign(x - 1) * _maxwell_cdf(np.abs(x - 1) / 2),
                             1.0, 12.0),
}


@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_continuous_distribution(name):
  draw, cdf, mean, var = CONTINUOUS[name]
  x = np.sort(np.asarray(draw(random.key(2024), _N), np.float64))
  assert np.isfinite(x).all()
  f = cdf(x)
  i = np.arange(1, _N + 1)
  d = max(np.max(i / _N - f), np.max(f - (i - 1) / _N))
  assert d < 1.63 / np.sqrt(_N), d  # the KS statistic's 1% critical value
  if mean is not None:  # the sample mean within 5 standard errors
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / _N), (x.mean(), mean)
    assert abs(x.var() / var - 1) < 0.08, (x.var(), var)


def _chi2_ok(counts, probs):
  """Pearson's chi-squared statistic below df + 5 sqrt(2 df) (far beyond its 1% point)."""
  counts, probs = np.asarray(counts, np.float64), np.asarray(probs, np.float64)
  expect = counts.sum() * probs
  stat = np.sum((counts - expect) ** 2 / expect)
  df = len(counts) - 1
  return stat < df + 5 * np.sqrt(2 * df), stat


@pytest.mark.parametrize("name, draw, probs", [
    ("randint", lambda k: random.randint(k, (_N,), -3, 7), np.full(10, 0.1)),
    ("randint_int8", lambda k: random.randint(k, (_N,), 0, 256, jnp.uint8) // 32,
     np.full(8, 1 / 8)),
    ("choice", lambda k: random.choice(k, 6, (_N,)), np.full(6, 1 / 6)),
    ("choice_p", lambda k: random.choice(k, 5, (_N,), p=_P), _P),
    ("categorical", lambda k: random.categorical(k, np.log(_P), shape=(_N,)), _P),
    ("bernoulli", lambda k: random.bernoulli(k, 0.3, (_N,)).astype(jnp.int32), [0.7, 0.3]),
    ("bernoulli_high", lambda k: random.bernoulli(k, 0.3, (_N,), "high").astype(jnp.int32),
     [0.7, 0.3]),
    ("rademacher", lambda k: (random.rademacher(k, (_N,)) + 1) // 2, [0.5, 0.5]),
    ("geometric", lambda k: jnp.minimum(random.geometric(k, 0.35, (_N,)), 9) - 1,
     [0.35 * 0.65 ** i for i in range(8)] + [0.65 ** 8]),
])
def test_discrete_distribution(name, draw, probs):
  x = np.asarray(draw(random.key(77)))
  counts = np.bincount(x.astype(np.int64) - (x.min() if name == "randint" else 0),
                       minlength=len(probs))
  assert len(counts) == len(probs)
  ok, stat = _chi2_ok(counts, probs)
  assert ok, (stat, counts)


def test_permutation_and_choice_without_replacement_are_uniform():
  keys = random.split(random.key(8), 3000)
  perms = np.asarray(ember.vmap(lambda k: random.permutation(k, 4))(keys))
  assert (np.sort(perms, axis=1) == np.arange(4)).all()
  codes = perms @ np.array([64, 16, 4, 1])
  _, counts = np.unique(codes, return_counts=True)
  assert len(counts) == 24 and _chi2_ok(counts, np.full(24, 1 / 24))[0]
  picks = np.asarray(ember.vmap(lambda k: random.choice(k, 6, (3,), replace=False))(keys))
  assert all(len(set(row)) == 3 for row in picks)
  assert _chi2_ok(np.bincount(picks.ravel(), minlength=6), np.full(6, 1 / 6))[0]
  # Gumbel top-k with p: the first pick follows p
  first = np.asarray(ember.vmap(lambda k: random.choice(k, 5, (2,), False, _P))(keys))[:, 0]
  assert _chi2_ok(np.bincount(first, minlength=5), _P)[0]


def test_sampler_ranges():
  k = random.key(4)
  assert np.asarray(random.truncated_normal(k, -0.1, 0.1, (2000,))).min() > -0.1
  assert np.asarray(random.truncated_normal(k, -0.1, 0.1, (2000,))).max() < 0.1
  assert np.asarray(random.pareto(k, 2.0, (2000,))).min() >= 1.0
  tri = np.asarray(random.triangular(k, 1.0, 1.5, 2.0, (2000,)))
  assert tri.min() >= 1.0 and tri.max() <= 2.0
  assert set(np.unique(np.asarray(random.rademacher(k, (200,), jnp.float32)))) == {-1.0, 1.0}
  r = np.asarray(random.randint(k, (3000,), 0, 256, jnp.uint8))
  assert r.min() == 0 and r.max() == 255  # maxval one past the dtype's range
  r = np.asarray(random.randint(k, (3000,), -128, 128, jnp.int8))
  assert r.min() == -128 and r.max() == 127
  assert (np.asarray(random.randint(k, (50,), 9, 2)) == 9).all()  # empty range: minval
  assert (np.asarray(random.geometric(k, 0.9, (500,))) >= 1).all()


# --- result dtypes and shapes (checked with JAX 0.12) ---------------------------------------

@pytest.mark.parametrize("call, shape, dtype, x64_dtype", [
    (lambda k: random.randint(k, (2,), 0, 5), (2,), "int32", "int64"),
    (lambda k: random.bernoulli(k), (), "bool", "bool"),
    (lambda k: random.bernoulli(k, np.full((2, 3), 0.5, np.float16)), (2, 3), "bool", "bool"),
    (lambda k: random.rademacher(k, (3,)), (3,), "int32", "int64"),
    (lambda k: random.geometric(k, 0.5), (), "int32", "int64"),
    (lambda k: random.choice(k, 5, (2, 2)), (2, 2), "int32", "int64"),
    (lambda k: random.choice(k, jnp.ones((3, 4), jnp.float16), (2,), axis=1), (3, 2),
     "float16", "float16"),
    (lambda k: random.choice(k, 5, (0, 2)), (0, 2), "int32", "int64"),
    (lambda k: random.permutation(k, 5), (5,), "int32", "int64"),
    (lambda k: random.categorical(k, jnp.zeros((2, 3, 4)), axis=1), (2, 4), "int32", "int64"),
    (lambda k: random.categorical(k, jnp.zeros((2, 3)), shape=(5, 2)), (5, 2), "int32", "int64"),
    (lambda k: random.truncated_normal(k, jnp.zeros(3), 1.0), (3,), "float32", "float64"),
    (lambda k: random.pareto(k, jnp.ones((2, 1)), (2, 3)), (2, 3), "float32", "float64"),
    (lambda k: random.double_sided_maxwell(k, jnp.zeros(3), 1.0, (2,)), (2, 3), "float32",
     "float64"),
    (lambda k: random.double_sided_maxwell(k, jnp.zeros(3), 1.0), (3, 3), "float32", "float64"),
    (lambda k: random.gumbel(k, (2,), jnp.bfloat16), (2,), "bfloat16", "bfloat16"),
    (lambda k: random.weibull_min(k, 1.0, 2.0, (2, 2), jnp.float16), (2, 2), "float16",
     "float16"),
])
def test_result_dtypes_and_shapes(call, shape, dtype, x64_dtype):
  for x64, want in ((False, dtype), (True, x64_dtype)):
    with ember.enable_x64(x64):
      out = call(random.key(0))
      assert out.shape == shape and out.dtype == jnp.dtype(want) and not out.weak_type


# --- errors users hit (classes and messages as JAX 0.12) ------------------------------------

_ERRORS = [
    (lambda k: random.randint(k, (3,), 0, 5, jnp.float32), TypeError,
     "randint only accepts integer dtypes, got float32"),
    (lambda k: random.randint(k, (3,), np.zeros(4, np.int32), 5), ValueError,
     "Incompatible shapes for broadcasting"),
    (lambda k: random.uniform(k, (3,), minval=np.zeros(4, np.float32)), TypeError,
     "incompatible shapes"),
    (lambda k: random.bernoulli(k, 1, (3,)), TypeError, "`p` must have a floating dtype"),
    (lambda k: random.bernoulli(k, np.full(4, 0.5, np.float32), (3,)), ValueError,
     "Incompatible shapes"),
    (lambda k: random.bernoulli(k, 0.5, (3,), mode="mid"), ValueError, "expected 'high' or 'low'"),
    (lambda k: random.choice(k, 3, (4,), replace=False), ValueError,
     r"Cannot take a larger sample \(size 4\) than population \(size 3\)"),
    (lambda k: random.choice(k, 3, (2,), p=np.ones(4, np.float32) / 4), ValueError,
     "p must be None or a 1D vector"),
    (lambda k: random.choice(k, 3, 2), TypeError, "must be a sequence"),
    (lambda k: random.choice(k, 0, (2,)), ValueError, "a must be greater than 0"),
    (lambda k: random.permutation(k, 3.0), TypeError, "x must be an integer or at least 1-d"),
    (lambda k: random.categorical(k, np.zeros((2, 3), np.float32), shape=(4, 2), replace=False),
     ValueError, "cannot exceed number of categories"),
    (lambda k: random.categorical(k, np.zeros((2, 3), np.float32), shape=(3,)), ValueError,
     "Incompatible shapes"),
    (lambda k: random.gumbel(k, (2,), mode="x"), ValueError, "valid mode for gumbel"),
    (lambda k: random.geometric(k, 0.5, (2,), jnp.float32), ValueError, "must be an int dtype"),
    (lambda k: random.truncated_normal(k, 0.0, 1.0, (2,), jnp.int32), ValueError,
     "must be a float dtype"),
    (lambda k: random.exponential(k, (2,), jnp.int32), ValueError, "must be a float dtype"),
    (lambda k: random.pareto(k, np.ones(3, np.float32), (2,)), ValueError, "Incompatible shapes"),
    (lambda k: random.randint(random.split(k), (2,), 0, 3), ValueError,
     "accepts a single key.*vmap"),
    (lambda k: random.wrap_key_data(k), TypeError, "invalid PRNG key data"),
    (lambda k: random.randint(np.zeros(3, np.uint32), (2,), 0, 3), TypeError,
     "invalid PRNG key data"),
    (lambda k: random.gumbel(np.zeros(2, np.int32), (2,)), TypeError, "invalid PRNG key data"),
    (lambda k: random.randint(k, (3,), 0, 2 ** 32 - 1, jnp.uint32), OverflowError, "int32"),
]


@pytest.mark.parametrize("i", range(len(_ERRORS)))
def test_sampler_errors(i):
  call, exc, match = _ERRORS[i]
  with pytest.raises(exc, match=match):
    call(random.key(0))


def test_stack_and_concatenate_of_typed_keys_join_their_data():
  k1, k2 = random.split(random.key(0))
  for fn in (lambda a, b: jnp.stack([a, b]), ember.jit(lambda a, b: jnp.stack([a, b]))):
    ks = fn(k1, k2)
    assert ks.shape == (2,) and jnp.issubdtype(ks.dtype, ember.dtypes.prng_key)
    # JAX 0.12: the stacked keys' data are the two keys' data, row by row
    np.testing.assert_array_equal(np.asarray(random.key_data(ks)),
                                  [[1797259609, 2579123966], [928981903, 3453687069]])
  grid = random.split(random.key(1), 4).reshape(2, 2)
  assert jnp.concatenate([grid, grid], axis=1).shape == (2, 4)
  assert jnp.concatenate([grid, grid], axis=None).shape == (8,)
  assert jnp.stack([grid, grid], axis=-1).shape == (2, 2, 2)
  np.testing.assert_array_equal(np.asarray(random.key_data(jnp.stack([grid, grid], axis=-1)))[..., 1, :],
                                np.asarray(random.key_data(grid)))
  with pytest.raises(TypeError, match="stack"):
    jnp.stack([k1, jnp.zeros(2, jnp.uint32)])


def test_typed_keys_are_arrays_with_a_key_type():
  # JAX 0.12: a key array is a jax.Array whose type prints key<fry>[...], inside jit and vmap
  k = random.key(0)
  assert isinstance(k, jnp.ndarray) and isinstance(k, ember.Array)
  assert str(ember.typeof(k)) == "key<fry>[]" and repr(ember.typeof(k)) == "ShapedArray(key<fry>[])"
  assert str(ember.typeof(random.split(k))) == "key<fry>[2]"
  assert jnp.issubdtype(k.dtype, ember.dtypes.prng_key)
  assert jnp.asarray(k) is k
  seen = []
  ember.jit(lambda k: seen.append((isinstance(k, ember.Array), str(ember.typeof(k)), repr(k))))(k)
  ember.vmap(lambda k: seen.append((isinstance(k, ember.Array), str(ember.typeof(k)))))(
      random.split(k, 3))
  assert seen == [(True, "key<fry>[]", "JitTracer(key<fry>[])"), (True, "key<fry>[]")]
  assert isinstance(jnp.ones(2), ember.Array) and not isinstance(np.ones(2), ember.Array)
  with pytest.raises(TypeError, match=r"concatenate: cannot join PRNG key arrays with other "
                     r"arrays \(dtypes key<fry>, uint32\)"):
    jnp.concatenate([random.split(k, 1), jnp.zeros((1, 2), jnp.uint32)])

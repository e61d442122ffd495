"""ember.random against JAX 0.12's threefry2x32 (partitionable) numbers.

The reference outputs in data/random_jax_vectors.json were produced by real JAX with
data/make_random_vectors.py (see its docstring); every case is replayed eagerly and under
ember.jit and compared bit for bit.
"""
import json
import os
from fractions import Fraction

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import random
from ember._src import prng

_DATA = os.path.join(os.path.dirname(__file__), "data", "random_jax_vectors.json")
with open(_DATA) as f:
  CASES = json.load(f)["cases"]

# normal = sqrt(2) * erf_inv(u). The uniform u is bit-exact (checked below), but XLA:CPU
# evaluates float32/float64 erf_inv with Giles' polynomial (fused multiply-adds, its own
# log1p), a few-ulp approximation (up to ~2e-6 relative in float32 tails), while
# lax.erf_inv is accurate to the last bit. float16/bfloat16 round those differences away
# and are compared exactly.
_NORMAL_RTOL = {"float32": 4e-6, "float64": 2e-15}


def _case_id(c):
  kw = ",".join(f"{k}={v}" for k, v in c["kwargs"].items())
  path = "".join(f"/{p[0]}{p[1:]}" for p in c["path"])
  return f"{'x64' if c['x64'] else 'x32'}-{c['op']}-{'key' if c['typed'] else 'PRNGKey'}" \
         f"({c['seed']}){path}[{kw}]"


def _derive(key, path):
  for step, *args in path:
    key = random.split(key, args[0])[args[1]] if step == "split" else random.fold_in(key, args[0])
  return key


def _op(c):
  """The case's operation as a function of the (derived) key."""
  kw = dict(c["kwargs"])
  if "shape" in kw:
    kw["shape"] = tuple(kw["shape"])
  if "dtype" in kw:
    kw["dtype"] = jnp.dtype(kw["dtype"])
  for b in ("minval", "maxval"):
    if b in kw:
      kw[b] = np.asarray(kw[b], np.float64 if c["x64"] else np.float32)
  op = c["op"]
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


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("c", CASES, ids=_case_id)
def test_matches_jax_vectors(c, jit):
  with ember.enable_x64(c["x64"]):
    out = _replay(c, jit)
    assert isinstance(out, ember.Array)
    assert out.dtype == jnp.dtype(c["dtype"]) and out.shape == tuple(c["shape"])
    assert not out.weak_type
    got = _as_bits(out)
    want = np.array(c["data"], dtype=got.dtype)
    if c["op"] == "normal" and c["dtype"] in _NORMAL_RTOL:
      np.testing.assert_allclose(np.asarray(out).reshape(-1), want.view(out.dtype),
                                 rtol=_NORMAL_RTOL[c["dtype"]], atol=0)
    else:
      np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_normal_is_sqrt2_erf_inv_of_exact_uniform(dtype):
  dt = jnp.dtype(dtype)
  k = random.key(3)
  lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
  u = random.uniform(k, (50,), dt, lo, 1.0)
  assert float(np.min(np.asarray(u, np.float32))) >= float(lo)
  assert float(np.max(np.asarray(u, np.float32))) < 1.0
  expected = ember.lax.mul(np.array(np.sqrt(2), dt), ember.lax.erf_inv(u))
  np.testing.assert_array_equal(_as_bits(random.normal(k, (50,), dt)), _as_bits(expected))
  # Compiled, erf_inv is ember's polynomial (a few ulp from the correctly rounded eager
  # value, as XLA's is): compare within that, in the dtype's own precision.
  jitted = ember.jit(random.normal, static_argnums=(1, 2))(k, (50,), dt)
  rtol = {"float32": 4e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
  np.testing.assert_allclose(np.asarray(jitted, np.float64), np.asarray(expected, np.float64),
                             rtol=rtol)


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


def test_keys_are_pytrees_through_jit_and_tree_map():
  k = random.key(11)
  leaves = ember.tree_util.tree_leaves(k)
  assert len(leaves) == 1 and leaves[0].shape == (2,) and leaves[0].dtype == np.uint32
  same = ember.tree_util.tree_map(lambda x: x, k)
  assert isinstance(same, random.PRNGKeyArray) and bool(same == k)
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
  for fn in (prng.threefry2x32, ember.jit(prng.threefry2x32)):
    out = fn(u(key[0]), u(key[1]), u(ctr[0]), u(ctr[1]))
    assert [int(np.asarray(o)[0]) for o in out] == list(want)


def test_threefry2x32_broadcasting_and_dtype_errors():
  z = np.uint32(0)
  out = prng.threefry2x32(z, z, z, np.arange(5, dtype=np.uint32))
  assert [o.shape for o in out] == [(5,), (5,)] and all(o.dtype == np.uint32 for o in out)
  with pytest.raises(TypeError, match="threefry2x32 requires uint32"):
    prng.threefry2x32(z, z, z, np.arange(5, dtype=np.int32))
  with pytest.raises(TypeError, match="threefry2x32"):
    prng.threefry2x32(z, z, np.zeros(3, np.uint32), np.zeros(4, np.uint32))


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


def test_fma_emulation_is_correctly_rounded():
  """_fma(x, y, z) == RN(x*y + z) computed with exact rationals, for uniform-shaped x."""
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
    with ember.enable_x64(dt == np.float64):
      got = np.asarray(prng._fma(x, y, z, dt))
    want = np.array([rn(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), dt)
                     for a, b, c in zip(x, y, z)], dt)
    np.testing.assert_array_equal(_as_bits(got), _as_bits(want))


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


@pytest.mark.parametrize("call, exc, match", [
    (lambda k: random.bits(k, (2,), jnp.int32), ValueError, "unsigned int dtype"),
    (lambda k: random.bits(k, (2,), jnp.float32), ValueError, "unsigned int dtype"),
    (lambda k: random.uniform(k, (2,), jnp.int32), ValueError, "float dtype"),
    (lambda k: random.normal(k, (2,), jnp.uint8), ValueError, "float"),
    (lambda k: random.normal(k, (2,), jnp.complex64), ValueError, "complex"),
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

"""Control flow called outside jit runs as one compiled call, traced once per (function
identity, argument types) as JAX runs it, and the PRNG's samplers rent, then buy their
compile (primitives/eager_jit.py): the jitted bits, no retrace on a second call, the
reference's values, and the errors of the traced path."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax, random
from ember._src.primitives import eager_jit
from test_jit_cache import CompileCounter


class Compiles(CompileCounter):
  """test_jit_cache's counter on the "ember" logger: `names` of the jits compiled."""

  def __init__(self):
    super().__init__(logger="ember")

  @property
  def names(self):
    return [m[len("Compiling jit("):].split(")")[0] for m in self.records]


def _same(a, b):
  for x, y in zip(ember.tree_util.tree_leaves(a), ember.tree_util.tree_leaves(b)):
    if jnp.issubdtype(x.dtype, ember.dtypes.prng_key):   # (typed keys are leaves: their data)
      assert x.dtype == y.dtype
      x, y = ember.random.key_data(x), ember.random.key_data(y)
    assert np.asarray(x).dtype == np.asarray(y).dtype
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


V = jnp.asarray(np.linspace(-2, 2, 50, dtype=np.float32))
M = jnp.asarray(np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32))


def _scan_body(c, x):
  return c * 0.999 + jnp.sin(x), c + x


def _fori_body(i, v):
  return v * 0.5 + jnp.cos(v) * i


def _cond(s):
  return s[0] < 20


def _body(s):
  return s[0] + 1, 0.5 * (s[1] + 2.0 / s[1])


def _grow(c, _):
  return c * 1.5, c


def _t(x):
  return jnp.tanh(x) + 1


def _f(x):
  return jnp.exp(-x) - 1


CONTROL = {
    "scan": lambda v: lax.scan(_scan_body, v[0], v),
    "scan reverse unroll": lambda v: lax.scan(_scan_body, v[0], v, reverse=True, unroll=3),
    "scan length": lambda v: lax.scan(_grow, v[:3], None, length=4),
    "fori": lambda v: lax.fori_loop(0, 7, _fori_body, v),
    "fori dynamic bounds": lambda v: lax.fori_loop(jnp.int32(1), jnp.int32(6), _fori_body, v),
    "while": lambda v: lax.while_loop(_cond, _body, (0, v + 3.0)),
    "cond": lambda v: lax.cond(v[0] > 0, _t, _f, v),
    "switch": lambda v: lax.switch(jnp.int32(2), [_t, _f, jnp.sin], v),
    "map": lambda v: lax.map(_t, v.reshape(-1, 5)),
    "map batched": lambda v: lax.map(_f, v.reshape(-1, 5), batch_size=3),
    "associative_scan": lambda v: lax.associative_scan(jnp.add, v),
    "associative_scan reverse": lambda v: lax.associative_scan(jnp.maximum, v.reshape(5, -1),
                                                               reverse=True, axis=1),
}


@pytest.mark.parametrize("name", CONTROL)
def test_eager_control_flow_is_the_jitted_bits_and_the_reference(name):
  f = CONTROL[name]
  eager = f(V)
  _same(eager, ember.jit(f)(V))
  with ember.disable_jit():      # the Python loop: the same values (math in float64)
    ref = f(V)
  for x, y in zip(ember.tree_util.tree_leaves(eager), ember.tree_util.tree_leaves(ref)):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", CONTROL)
def test_eager_control_flow_traces_and_compiles_once(name):
  f = CONTROL[name]
  f(V)
  with Compiles() as c:
    for _ in range(3):
      f(V)
  assert c.names == []
  with Compiles() as c:          # new argument types: one new compile
    f(V[:40] * 2)
  assert len(c.names) <= 1


def test_the_body_is_traced_once_per_function_and_types():
  traced = []

  def body(c, x):
    traced.append(1)
    return c + x, c
  lax.scan(body, V[0], V)
  n = len(traced)
  for _ in range(3):
    lax.scan(body, V[0], V)
  assert len(traced) == n
  lax.scan(body, M[0], M)        # other types: traced again
  assert len(traced) > n


def test_a_new_lambda_each_call_is_still_right():
  for k in range(3):
    out = lax.fori_loop(0, 4, lambda i, v: v + k, V)
    want = np.asarray(V)
    for _ in range(4):
      want = want + np.float32(k)
    np.testing.assert_array_equal(np.asarray(out), want)


def test_closed_over_arrays_are_read_when_first_traced():
  w = jnp.asarray(np.float32(2.0))
  body = lambda c, x: (c * w + x, None)      # noqa: E731
  assert float(lax.scan(body, 1.0, V[:2])[0]) == float((1 * 2 + V[0]) * 2 + V[1])


def test_eager_control_flow_errors_are_the_traced_paths():
  with pytest.raises(TypeError, match="scan body output must be a pair"):
    lax.scan(lambda c, x: c, 0.0, V)
  with pytest.raises(TypeError, match="carry input and carry output must have equal types"):
    lax.while_loop(lambda s: s[0] < 3, lambda s: jnp.stack([s, s]), V[:1])
  with pytest.raises(TypeError, match="cond branches must have equal output types"):
    lax.cond(True, lambda x: x, lambda x: x[0], V)


def test_control_flow_under_transformations_is_traced_as_before():
  g = ember.grad(lambda v: lax.scan(_scan_body, v[0], v)[0])(V)
  _same(g, ember.jit(ember.grad(lambda v: lax.scan(_scan_body, v[0], v)[0]))(V))
  out = ember.vmap(lambda v: lax.fori_loop(0, 3, _fori_body, v))(M)
  _same(out, ember.jit(ember.vmap(lambda v: lax.fori_loop(0, 3, _fori_body, v)))(M))


KEY = random.key(3)
SAMPLERS = {
    "bits": lambda k: random.bits(k, (7, 3)),
    "uniform": lambda k: random.uniform(k, (1000,), minval=-2.0, maxval=3.0),
    "normal": lambda k: random.normal(k, (64, 3)),
    "normal f64": lambda k: random.normal(k, [5], dtype=jnp.float64),
    "randint": lambda k: random.randint(k, (100,), -5, 17),
    "split": lambda k: random.split(k, 5),
    "split shape": lambda k: random.split(k, (2, 3)),
    "bernoulli": lambda k: random.bernoulli(k, 0.3, (100,)),
    "gamma": lambda k: random.gamma(k, jnp.asarray([0.5, 2.0, 9.0]), (2, 3)),
    "beta": lambda k: random.beta(k, 2.0, 3.0, (10,)),
    "poisson": lambda k: random.poisson(k, 3.5, (20,)),
    "permutation int": lambda k: random.permutation(k, 20),
    "permutation array": lambda k: random.permutation(k, M, axis=1),
    "choice int": lambda k: random.choice(k, 30, (5,), replace=False),
    "choice p": lambda k: random.choice(k, M[0], (9,), p=jnp.asarray([.1, .2, .3, .2, .2])),
    "categorical": lambda k: random.categorical(k, M, axis=1),
    "truncated_normal": lambda k: random.truncated_normal(k, -1.0, 2.0, (50,)),
    "multivariate_normal": lambda k: random.multivariate_normal(
        k, jnp.zeros(2), jnp.asarray([[2.0, 0.5], [0.5, 1.0]]), (4,)),
    "orthogonal": lambda k: random.orthogonal(k, 3),
}


@pytest.mark.parametrize("name", SAMPLERS)
def test_eager_samplers_rent_then_buy_the_jitted_bits(name, monkeypatch):
  f = SAMPLERS[name]
  with ember.enable_x64(name.endswith("f64")):
    want = ember.jit(f)(KEY)
    with Compiles() as c:
      _same(f(KEY), want)                           # op by op: the jitted bits
    assert not {n for n in c.names if n == _sampler_name(name)}   # a first call: no compile
    monkeypatch.setattr(eager_jit, "COMPILE_SECONDS", 0.0)   # the rent is paid
    with Compiles() as c:
      for _ in range(3):
        _same(f(KEY), want)                         # bought: compiled once
    # (the case's own eager ops, M[0] and the like, buy their one-op compiles too)
    assert [n for n in c.names if n == _sampler_name(name)] == [_sampler_name(name)]


def test_a_large_draw_compiles_at_once():
  # op by op, its large inexact operations would each compile (driver/eager.py)
  with Compiles() as c:
    out = random.normal(random.key(11), (300, 300))
  assert "normal" in c.names
  _same(out, ember.jit(lambda k: random.normal(k, (300, 300)))(random.key(11)))


def _sampler_name(case: str) -> str:
  return {"split shape": "split", "normal f64": "normal", "permutation int": "permutation",
          "permutation array": "permutation", "choice int": "choice",
          "choice p": "choice"}.get(case, case)


def test_samplers_take_old_style_keys_and_lists_as_shapes():
  k = random.PRNGKey(0)
  _same(random.normal(k, [2, 3]), random.normal(k, (2, 3)))
  _same(random.uniform(k, (3,)), ember.jit(lambda k: random.uniform(k, (3,)))(k))


def test_sampler_errors_are_raised_eagerly():
  with pytest.raises(TypeError, match="[Ss]hape"):
    random.split(KEY, 2.0)       # not the cached `split(key, 2)`: 2.0 == 2
  with pytest.raises(TypeError, match="incompatible shapes"):
    random.uniform(KEY, (3,), minval=np.zeros(4, np.float32))
  with pytest.raises(ValueError, match="Cannot take a larger sample"):
    random.choice(KEY, 3, (4,), replace=False)


@pytest.mark.parametrize("idx", [[3, -1, 0, 49, -50, 7], [[1, 2], [48, -3]], [60, -70]],
                         ids=["negative", "2-d", "out of bounds"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_indexing_by_an_integer_array_rents_then_buys_the_jitted_bits(idx, dtype, monkeypatch):
  """x[idx] outside jit: op by op (normalize, gather) until its runs have cost a compile,
  then one compiled call, always jit's values (NumPy's where the indices are in bounds;
  out of bounds they are clamped, as jit's gather does). Each shape rents on its own."""
  idx = np.asarray(idx)
  if dtype == np.uint8:
    idx = idx % 50
  with ember.enable_x64(dtype == np.int64):
    i = jnp.asarray(idx.astype(dtype))
    want = ember.jit(lambda x, i: x[i])(V, i)
    in_bounds = np.clip(np.where(idx < 0, idx + 50, idx), 0, 49)   # == idx when in bounds
    np.testing.assert_array_equal(np.asarray(want), np.asarray(V)[in_bounds])
    with Compiles() as c:
      _same(V[i], want)                               # a first call: op by op
    assert "_take_by_array" not in c.names
    monkeypatch.setattr(eager_jit, "COMPILE_SECONDS", 0.0)   # the rent is paid
    with Compiles() as c:
      for _ in range(3):
        _same(V[i], want)
    assert c.names.count("_take_by_array") == 1     # bought: compiled once
    assert V[i].weak_type == want.weak_type and V[i].dtype == want.dtype


def test_indexing_by_other_indices_stays_as_written():
  mask = V > 0
  _same(V[mask], jnp.asarray(np.asarray(V)[np.asarray(V) > 0]))   # a data-dependent shape
  with pytest.raises(IndexError):
    V[jnp.asarray(np.int32(3)), 0]                  # too many indices: the user's error

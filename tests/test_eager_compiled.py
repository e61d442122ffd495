"""Eager primitives through the compiler (driver/eager.py): the rent-or-buy rule for
primitives whose NumPy reference computes the compiled bits (checked here, primitive by
primitive, on values that tell implementations apart: signed zeros, NaN, infinities,
ties, out-of-range casts and shifts), the other elementwise primitives compiled at every
size over flat buckets (jit's bits), the choose-once rule for the rest, and the fallbacks
(disable_jit, traces, callbacks)."""
import time

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.core import Literal
from ember._src.core import trace as trace_lib
from ember._src.driver import eager
from ember._src.primitives import eager_jit
from ember._src.primitives.elementwise import fma

F32, F64, I32, U8, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.uint8,
                                                   np.bool_))
BF16, F16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)
_SPECIAL = [0.0, -0.0, 1.5, -2.5, 2.5, 0.5, -0.5, np.inf, -np.inf, np.nan, 3e38, -1e-39,
            7.0, 1e10, -3.0, 2.0 ** 31, -2.0 ** 31 - 1, 255.5, 1e-45]


def _values(dtype, n=len(_SPECIAL), seed=0):
  """Values of `dtype` that tell implementations apart, then random ones."""
  rng = np.random.default_rng(seed)
  if dtype.kind == "b":
    return rng.integers(0, 2, n).astype(bool)
  if dtype.kind in "iu":
    info = np.iinfo(dtype)
    edge = np.array([0, 1, -1, 7, info.max, info.min, 31, 32, -33, 3], np.int64)
    vals = np.concatenate([edge, rng.integers(info.min, info.max, max(n - len(edge), 0),
                                              dtype=np.int64)])[:n]
    return vals.astype(dtype)   # (wraps the negative edges of unsigned types)
  with np.errstate(over="ignore"):
    vals = np.array(_SPECIAL, np.float64).astype(dtype)
  return np.concatenate([vals, rng.standard_normal(max(n - len(vals), 0)).astype(dtype)])[:n]


def _bits(x):
  x = np.asarray(x)
  return x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" or x.dtype == BF16 else x


def assert_same_bits(ref, comp):
  ref, comp = np.asarray(ref), np.asarray(comp)
  assert ref.dtype == comp.dtype and ref.shape == comp.shape
  if ref.dtype.kind == "f" or ref.dtype == BF16:
    nan = np.isnan(ref.astype(np.float64))
    np.testing.assert_array_equal(nan, np.isnan(comp.astype(np.float64)))
    np.testing.assert_array_equal(_bits(ref)[~nan], _bits(comp)[~nan])   # -0 is not 0
  else:
    np.testing.assert_array_equal(ref, comp)


def _both_ways(prim, vals, params):
  """(the reference's outputs, the one-op computation's outputs)."""
  ref = trace_lib.eval_reference(prim, vals, params)
  out = eager._one_op(prim, params)(*vals)
  return ref, (list(out) if prim.multiple_results else [out])


def _arity(p):
  """How many operands an elementwise primitive takes (its reference says)."""
  for n in (1, 2, 3):
    try:
      with np.errstate(all="ignore"):
        p.impl(*[np.ones(3, np.int32)] * n)
      return n
    except TypeError:
      continue
  return None


def _elementwise_cases(wanted, dtypes):
  """(primitive, dtype) for every primitive of ember.lax that `wanted(p)` picks and each
  of `dtypes` that it accepts (at its arity)."""
  prims = {p for p in vars(lax).values() if isinstance(p, type(lax.add_p))}
  cases = []
  for p in sorted(prims, key=lambda p: p.name):
    n = _arity(p) if wanted(p) else None
    for dt in dtypes if n else ():
      try:
        p.abstract_eval(*[ember.core.ShapedArray((3,), dt)] * n)
      except (TypeError, ValueError):
        continue
      cases.append((p, dt))
  return cases


# every exact elementwise primitive, and every other elementwise one (its reference rounds
# from float64)
_EXACT = _elementwise_cases(lambda p: p.reference_exact and p.name not in (
    "convert_element_type", "bitcast_convert_type", "select_n", "clamp"),
    (F32, F64, BF16, F16, I32, U8, BOOL))
_INEXACT = _elementwise_cases(lambda p: p.elementwise and not p.reference_exact,
                              (F32, F64, BF16, F16, np.dtype(np.complex64)))


@pytest.mark.parametrize("prim,dtype", _EXACT,
                         ids=lambda c: getattr(c, "name", str(c)))
def test_exact_elementwise_reference_is_the_compiled_bits(prim, dtype):
  n = _arity(prim)
  with ember.enable_x64(dtype == F64):
    vals = [_values(dtype, seed=i) for i in range(n)]
    if prim.name.startswith("shift"):
      vals[1] = (np.arange(len(vals[1])) % (8 * dtype.itemsize + 4)).astype(dtype)
    ref, comp = _both_ways(prim, vals, {})
  for r, c in zip(ref, comp):
    assert_same_bits(r, c)


@pytest.mark.parametrize("src", [F32, F64, BF16, F16, I32, U8, BOOL], ids=str)
@pytest.mark.parametrize("dst", [F32, F64, BF16, F16, I32, U8, BOOL], ids=str)
def test_casts_reference_is_the_compiled_bits(src, dst):
  with ember.enable_x64(F64 in (src, dst)):
    x = _values(src)
    ref, comp = _both_ways(lax.convert_element_type_p, [x],
                           dict(new_dtype=dst, weak_type=False))
  assert_same_bits(ref[0], comp[0])


_M = np.array(_SPECIAL[:16], np.float32).reshape(4, 4)
_STRUCTURAL = [
    (lax.reshape_p, [_M], dict(new_sizes=(2, 8), dimensions=None, sharding=None)),
    (lax.transpose_p, [_M], dict(permutation=(1, 0))),
    (lax.rev_p, [_M], dict(dimensions=(0, 1))),
    (lax.slice_p, [_M], dict(start_indices=(1, 0), limit_indices=(4, 4), strides=(2, 3))),
    (lax.pad_p, [_M, np.float32(-0.0)], dict(padding_config=((1, -1, 1), (0, 2, 0)))),
    (lax.concatenate_p, [_M, _M[:2]], dict(dimension=0)),
    (lax.broadcast_in_dim_p, [_M[0]], dict(shape=(3, 4), broadcast_dimensions=(1,),
                                           sharding=None)),
    (lax.select_n_p, [np.arange(16).reshape(4, 4) % 3 == 0, _M, -_M], {}),
    (lax.clamp_p, [np.float32(-1.0), _M, np.float32(2.0)], {}),
    (lax.reduce_max_p, [_M], dict(axes=(1,), out_sharding=None)),
    (lax.reduce_min_p, [_M], dict(axes=(0,), out_sharding=None)),
    (lax.argmax_p, [_M], dict(axes=(1,), index_dtype=np.int32)),
    (lax.argmin_p, [_M], dict(axes=(0,), index_dtype=np.int32)),
    (lax.cummax_p, [_M], dict(axis=1, reverse=False)),
    (lax.cummin_p, [_M], dict(axis=0, reverse=True)),
    (lax.sort_p, [_values(F32, 64)], dict(dimension=0, is_stable=True, num_keys=1)),
    (lax.dynamic_slice_p, [_M, np.int32(3), np.int32(-1)], dict(slice_sizes=(2, 2))),
    (lax.dynamic_update_slice_p, [_M, -_M[:2, :2], np.int32(1), np.int32(9)], {}),
]


@pytest.mark.parametrize("prim,vals,params", _STRUCTURAL, ids=[c[0].name for c in _STRUCTURAL])
def test_exact_structural_reference_is_the_compiled_bits(prim, vals, params):
  assert prim.reference_exact
  ref, comp = _both_ways(prim, vals, params)
  for r, c in zip(ref, comp):
    assert_same_bits(r, c)


def _each_equation_both_ways(f, *args) -> set:
  """Run `f`'s jaxpr equation by equation by the references; each equation whose primitive
  declares `reference_exact` also runs as its one-op computation, with the same bits. The
  names of the primitives checked."""
  closed = ember.make_jaxpr(f)(*args)
  env = dict(zip(map(id, closed.jaxpr.invars), args))
  read = lambda v: v.val if isinstance(v, Literal) else env[id(v)]   # noqa: E731
  checked = set()
  for e in closed.jaxpr.eqns:
    vals = [read(v) for v in e.invars]
    ref = trace_lib.eval_reference(e.primitive, vals, e.params)
    if e.primitive.reference_exact:
      _, comp = _both_ways(e.primitive, vals, e.params)
      for r, c in zip(ref, comp):
        assert_same_bits(r, c)
      checked.add(e.primitive.name)
    env.update(zip(map(id, e.outvars), ref))
  return checked


@pytest.mark.parametrize("f", [
    lambda x, i: x[i[:, 0]], lambda x, i: x[i[:, 0], i[:, 1]],
    lambda x, i: x.at[i[:, 0]].set(-0.0), lambda x, i: x.at[i[:, 0], 1].set(jnp.nan),
    lambda x, i: jnp.take_along_axis(x[:4], jnp.abs(i) % 5, axis=1, mode="clip")])
def test_gather_and_scatter_reference_is_the_compiled_bits(f):
  x = jnp.asarray(_values(F32, 40).reshape(8, 5))
  idx = jnp.asarray(np.array([[0, 1], [7, 4], [3, 3], [9, -2]], np.int32))
  checked = _each_equation_both_ways(f, x, idx)
  assert checked & {"gather", "scatter"}


# --- the rule ---------------------------------------------------------------------------------

@pytest.fixture
def fresh(monkeypatch):
  """Empty signature tables, and a compile bought after the first reference call."""
  monkeypatch.setattr(eager, "_signatures", {})
  monkeypatch.setattr(eager_jit, "COMPILE_SECONDS", 0.0)


def _sig(name):
  return [s for k, s in eager._signatures.items() if k[0].name == name]


def test_exact_primitive_rents_then_buys_with_the_same_bits(fresh):
  x = jnp.asarray(_values(F32, 100))
  outs = [np.asarray(lax.mul(x, x)) for _ in range((2 + eager.TIMED_CALLS) * eager.BUY_ROUNDS)]
  sig, = _sig("mul")
  assert sig.mode in (eager.COMPILED, eager.REFERENCE)
  for o in outs[1:]:
    assert_same_bits(outs[0], o)
  assert_same_bits(outs[0], ember.jit(lax.mul)(x, x))


def test_a_round_the_reference_wins_is_tried_again():
  # the compiled calls are timed in one moment of a shared machine: a slow moment must not
  # keep the reference for good (driver/eager.py: BUY_ROUNDS)
  x = jnp.asarray(np.ones(3, np.float32))
  sig = eager._Signature(eager.BUYING)
  slow = lambda *xs: (time.sleep(0.002), lax.neg(*xs))[1]
  for rounds in range(eager.BUY_ROUNDS):
    sig.mode, sig.fn, sig.ref_seconds, sig.ref_calls, sig.ran = eager.BUYING, slow, 1e-6, 1, True
    for _ in range(eager.TIMED_CALLS):
      np.testing.assert_array_equal(np.asarray(eager._buy(sig, lax.neg_p, [x], {})[0]), -1)
    done = rounds + 1 == eager.BUY_ROUNDS
    assert sig.mode == (eager.REFERENCE if done else eager.RENTING) and sig.rounds == min(
        rounds + 1, eager.BUY_ROUNDS - 1) and (sig.fn is None) == done
  sig = eager._Signature(eager.BUYING)   # a round the compiled calls win: bought
  sig.fn, sig.ref_seconds, sig.ref_calls, sig.ran = slow, 1.0, 1, True
  for _ in range(eager.TIMED_CALLS):
    eager._buy(sig, lax.neg_p, [x], {})
  assert sig.mode == eager.COMPILED and sig.rounds == 0


def test_first_call_of_a_small_op_runs_the_reference():
  x = jnp.asarray(np.arange(7, dtype=np.float32))
  before = len(eager._one_op_fns)
  y = x * 3.0 + 1.0
  np.testing.assert_array_equal(np.asarray(y), np.arange(7, dtype=np.float32) * 3 + 1)
  assert len(eager._one_op_fns) == before      # nothing compiled for a first small call


@pytest.mark.parametrize("op", [
    lambda x: jnp.sum(x), lambda x: jnp.sum(x.reshape(4, 25), axis=0),
    lambda x: jnp.prod(x[:9]), lambda x: x.reshape(10, 10) @ x[:10], lambda x: jnp.cumsum(x),
    lambda x: jnp.max(x.reshape(4, 25), axis=1)], ids=["sum", "sum0", "prod", "dot",
                                                        "cumsum", "max1"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_inexact_non_elementwise_ops_are_the_jitted_bits(fresh, op, dtype):
  """NumPy's pairwise sums and OpenBLAS's dots round differently from the compiled code: such
  a primitive compiles at its first eager call, at every size, and keeps jit's bits."""
  x = jnp.asarray(np.random.default_rng(1).standard_normal(100).astype(dtype))
  first = op(x)
  assert_same_bits(first, ember.jit(op)(x))
  assert_same_bits(first, op(x))


def test_inexact_primitive_compiles_at_first_sight(fresh):
  small = jnp.asarray(np.linspace(-3, 3, 100, dtype=np.float32))
  jnp.sum(small)
  assert _sig("reduce_sum")[0].mode == eager.COMPILED
  jnp.tanh(small)
  assert _sig("tanh")[0].mode == eager.BUCKETED          # elementwise: one compile per bucket
  big = jnp.asarray(np.linspace(-3, 3, eager.EAGER_COMPILE_ELEMENTS, dtype=np.float32))
  first = np.asarray(jnp.sum(big))
  assert [s.mode for s in _sig("reduce_sum")] == [eager.COMPILED, eager.COMPILED]
  assert_same_bits(first, ember.jit(jnp.sum)(big))
  assert_same_bits(first, jnp.sum(big))


def test_a_signature_that_fails_to_compile_keeps_the_reference(fresh, monkeypatch):
  def broken(prim, params):
    def fail(*xs):
      raise NotImplementedError(f"no lowering of {prim.name} here")
    return fail
  monkeypatch.setattr(eager, "_one_op", broken)
  big = np.linspace(-3, 3, eager.EAGER_COMPILE_ELEMENTS, dtype=np.float32)
  want = np.tanh(big.astype(np.float64)).astype(np.float32)   # the float64 reference
  np.testing.assert_array_equal(np.asarray(jnp.tanh(big)), want)
  assert [s.mode for s in _sig("tanh")] == [eager.REFERENCE]


def test_disable_jit_traces_and_callbacks_keep_the_reference(fresh):
  big = np.linspace(-3, 3, eager.EAGER_COMPILE_ELEMENTS, dtype=np.float32)
  want = np.tanh(big.astype(np.float64)).astype(np.float32)   # the float64 reference
  with ember.disable_jit():
    np.testing.assert_array_equal(np.asarray(jnp.tanh(big)), want)
  g = ember.grad(lambda v: jnp.tanh(v).sum())(big)
  np.testing.assert_allclose(np.asarray(g), 1 - np.tanh(big.astype(np.float64)) ** 2,
                             rtol=1e-5, atol=1e-6)
  seen = []
  ember.debug.callback(lambda v: seen.append(np.asarray(v)), jnp.asarray(big))
  assert len(seen) == 1                                   # callbacks never compile
  assert [s.mode for s in _sig("debug_callback")] == [eager.REFERENCE]


@pytest.mark.parametrize("prim,dtype", _INEXACT,
                         ids=lambda c: getattr(c, "name", str(c)))
def test_small_inexact_elementwise_is_the_jitted_bits(prim, dtype):
  # run over a flat power-of-two bucket (driver/eager.py: BUCKETED), sliced back: the
  # compiled kernel's bits at every shape, as jit(prim) of that shape computes them
  n = _arity(prim)
  with ember.enable_x64(dtype == F64):
    for shape in [(7,), (3, 5), (eager.BUCKET_MIN + 1,)]:
      size = int(np.prod(shape))
      vals = [_values(dtype, size, seed=i).reshape(shape) for i in range(n)]
      if dtype.kind == "c":
        with np.errstate(invalid="ignore"):   # (inf * 1j: a NaN real part, kept)
          vals = [(v + 1j * _values(F32, size, seed=9).reshape(shape)).astype(dtype)
                  for v in vals]
      args = [jnp.asarray(v) for v in vals]
      with np.errstate(all="ignore"):
        out = prim.bind(*args)
      assert out.shape == shape
      assert_same_bits(out, ember.jit(lambda *xs: prim.bind(*xs))(*args))


def test_a_shape_called_often_compiles_its_own_with_the_same_bits(fresh, monkeypatch):
  x = jnp.asarray(np.linspace(-4, 4, 1000, dtype=np.float32).reshape(10, 100))
  first = jnp.tanh(x)
  (sig,) = _sig("tanh")
  assert sig.mode == eager.BUCKETED and 0 < sig.ref_seconds < eager.BUCKETED_RENT_SECONDS
  # the copies' time adds up: bought once it reaches a compile's cost
  monkeypatch.setattr(eager, "BUCKETED_RENT_SECONDS", sig.ref_seconds * 3)
  outs = [first]
  while sig.mode == eager.BUCKETED and len(outs) < 1000:
    outs.append(jnp.tanh(x))
  assert sig.mode == eager.COMPILED and 2 <= len(outs) < 1000
  assert sig.ref_seconds >= eager.BUCKETED_RENT_SECONDS
  outs.append(jnp.tanh(x))     # its own shape
  for out in outs:
    assert_same_bits(out, outs[-1])
  assert_same_bits(outs[0], ember.jit(jnp.tanh)(x))


def test_concrete_values_under_jvp_and_vmap_run_compiled(fresh):
  # jvp applies sin to its concrete primal at the eval level while its own trace is open:
  # the compiled call runs as at top level (trace.at_eval_level), with jit's bits
  x = jnp.asarray(np.linspace(-4, 4, 1000, dtype=np.float32))
  primal, tangent = ember.jvp(jnp.sin, (x,), (2 * x,))
  assert [s.mode for s in _sig("sin")] == [eager.BUCKETED]
  assert_same_bits(primal, ember.jit(jnp.sin)(x))
  assert_same_bits(tangent, ember.jit(lambda v: jnp.cos(v) * (2 * v))(x))
  w = jnp.asarray(np.linspace(0.5, 2, 7, dtype=np.float32))
  rows = ember.vmap(lambda r: jnp.exp(w) * r)(jnp.ones((3, 7), jnp.float32))
  assert_same_bits(rows[1], ember.jit(jnp.exp)(w))       # exp(w): concrete under vmap
  assert trace_lib.cur_level_is_eval() and len(trace_lib._state.trace_stack) == 1


BIG = (eager.EAGER_COMPILE_ELEMENTS // 64, 64)
MATH = [("tanh", jnp.tanh, np.tanh, (-4, 4)),
        ("exp", jnp.exp, np.exp, (-20, 20)),
        ("log1p", jnp.log1p, np.log1p, (-0.9, 50)),
        ("sin", jnp.sin, np.sin, (-100, 100)),
        ("erf", ember.scipy.special.erf, None, (-3, 3)),
        ("pow", lambda x: jnp.power(x, 2.5), lambda x: np.power(x, 2.5), (0, 10))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref,dom", MATH, ids=[c[0] for c in MATH])
def test_large_eager_math_is_the_jitted_bits(name, fn, ref, dom, dtype):
  x = np.random.default_rng(0).uniform(*dom, BIG).astype(dtype)
  with ember.enable_x64(dtype == np.float64):
    out, jitted = np.asarray(fn(jnp.asarray(x))), np.asarray(ember.jit(fn)(x))
  assert out.dtype == dtype and out.shape == BIG
  np.testing.assert_array_equal(out, jitted)          # the compiled one-op computation
  if ref is not None:
    # the math library is within 2 ulp of the correctly rounded value
    np.testing.assert_allclose(out, ref(x.astype(np.float64)),
                               rtol=4 * np.finfo(dtype).eps, atol=np.finfo(dtype).tiny)


def test_compiled_once_per_signature():
  x = jnp.asarray(np.ones(BIG, np.float32))
  jnp.tanh(x)
  key = next(k for k in eager._one_op_fns if k[0].name == "tanh")
  fn = eager._one_op_fns[key]
  size = fn._cache_size()
  for _ in range(3):
    jnp.tanh(x * 2)
  assert fn._cache_size() == size


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_eager_fma_is_the_jitted_bits_both_ways(dtype, fresh):
  # fma rounds once: compiled (llvm.fma) and the NumPy reference (error-free
  # transformations, what disable_jit runs) give the same bits, so it rents, then buys
  rng = np.random.default_rng(1)
  x, y, z = (jnp.asarray(rng.standard_normal(BIG).astype(dtype)) for _ in range(3))
  with ember.enable_x64(dtype == np.float64):
    outs = [np.asarray(fma(x, y, z)) for _ in range(3)]
    assert _sig("fma")[0].fn is not None                  # it ran compiled
    for o in outs:
      np.testing.assert_array_equal(o, np.asarray(ember.jit(fma)(x, y, z)))


def test_compiled_eager_results_are_ready():
  z = jnp.tanh(jnp.asarray(np.ones(eager.EAGER_COMPILE_ELEMENTS, np.float32)))
  assert z.is_ready()          # eager ops are synchronous (tests/test_async_dispatch.py)


def test_threads_rent_and_buy_the_same_signatures_at_once(fresh):
  import threading
  errors = []

  def work(seed):
    rng = np.random.default_rng(seed)
    for i in range(60):
      x = jnp.asarray(rng.standard_normal(100 * (1 + i % 3)).astype(np.float32))
      y = x * 2.0 + 1.0
      if not np.array_equal(np.asarray(y), np.asarray(x) * np.float32(2) + np.float32(1)):
        errors.append((seed, i))
  threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert errors == []
  assert {s.mode for s in _sig("mul")} <= {eager.COMPILED, eager.REFERENCE}

"""Compile latency (issue 4 item 6): the quick tier (`jax_disable_most_optimizations`,
`EMBER_FLAGS=--opt_level=0..3`) computes what the default tier computes; per-stage compile
times exist and are logged; `Lowered.compile()` logs like a real compilation, once; long
functions compile. Structure only: no timing assertions."""
import logging

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.driver import compilation
from ember._src.base import flags
from ember._src.backends.cpu import compiler, llvm_jit

f32, f64, i32 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)


@pytest.fixture(autouse=True)
def _default_tier():
  yield
  ember.config.update("jax_disable_most_optimizations", False)


def _x(shape, seed, dtype=f32):
  return np.random.default_rng(seed).uniform(-3, 3, shape).astype(dtype)


# name -> (function, NumPy float64 reference, argument shapes)
CASES = {
    "sin*2+1": (lambda x: jnp.sin(x) * 2 + 1, lambda x: np.sin(x) * 2 + 1, [(7, 33)]),
    "selu": (lambda x: 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67),
             lambda x: 1.05 * np.where(x > 0, x, 1.67 * np.exp(x) - 1.67), [(5, 3, 17)]),
    "softmax": (lambda x: jax_softmax(jnp, x), lambda x: jax_softmax(np, x), [(9, 40)]),
    "row and column sums": (lambda x: (x.sum(1), (x * x).sum(0)),
                            lambda x: (x.sum(1), (x * x).sum(0)), [(31, 65)]),
    "mlp": (lambda x, w1, w2: jnp.maximum(x @ w1, 0.0) @ w2,
            lambda x, w1, w2: np.maximum(x @ w1, 0.0) @ w2, [(6, 20), (20, 16), (16, 3)]),
    "broadcast, transpose, slice": (lambda x, y: (x[:, None, ::2] - y.T[None]).sum(-1),
                                    lambda x, y: (x[:, None, ::2] - y.T[None]).sum(-1),
                                    [(5, 8), (4, 6)]),
    "scalar": (lambda x: jnp.tanh(x) + jnp.log1p(x * x), lambda x: np.tanh(x) + np.log1p(x * x),
               [()]),
    "empty": (lambda x: jnp.exp(x) + 1, lambda x: np.exp(x) + 1, [(0, 4)]),
}


def jax_softmax(np_mod, x):
  e = np_mod.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def _check(got, want, rtol):
  got, want = np.asarray(got), np.asarray(want)
  assert got.dtype == f32 and got.shape == want.shape
  np.testing.assert_allclose(got.astype(f64), want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_tier_computes_the_same(name):
  f, ref, shapes = CASES[name]
  args = [_x(s, k) for k, s in enumerate(shapes)]
  want = ref(*[a.astype(f64) for a in args])
  results = []
  for level in (0, 1, 2, 3):
    with flags.override(opt_level=level):
      got = ember.jit(f).lower(*args).compile()(*args)
    results.append(got)
  ember.config.update("jax_disable_most_optimizations", True)
  results.append(ember.jit(f)(*args))
  for got in results:
    for g, w in zip(*(ember.tree_util.tree_leaves(t) for t in (got, want))):
      # f32 math library and reassociated reductions: a few ulp, summed over <= 65 terms
      _check(g, w, 2e-5)
  # the tiers differ in code, not in values: bitwise equal where no reduction reassociates
  if name in ("sin*2+1", "selu", "scalar", "empty"):
    for got in results[1:]:
      np.testing.assert_array_equal(np.asarray(got), np.asarray(results[0]))


def test_quick_tier_selects_opt_level_0_and_skips_llvm_passes():
  x = _x((64, 64), 3)
  f = lambda x: x * 2.0 + 1.0
  default = ember.jit(f).lower(x).compile()
  ember.config.update("jax_disable_most_optimizations", True)
  quick = ember.jit(lambda x: x * 2.0 + 1.0).lower(x).compile()
  dexe, qexe = default.runtime_executable(), quick.runtime_executable()
  assert dexe.cache_payload["opt_level"] == 3 and qexe.cache_payload["opt_level"] == 0
  assert "vector.body" in dexe.llvm_ir_optimized          # the vectorizer ran
  assert "vector.body" not in qexe.llvm_ir_optimized      # no IR pass did
  assert compilation.compile_flags().opt_level == 0
  # one LLVM function per kernel, none left for the math library (always inlined)
  assert qexe.llvm_ir_optimized.count("define ") == 1
  np.testing.assert_array_equal(np.asarray(quick(x)), np.asarray(default(x)))
  # the config is read when a compilation starts: what was compiled stays compiled
  ember.config.update("jax_disable_most_optimizations", False)
  assert compilation.compile_flags().opt_level == 3


def test_llvm_tiers_table():
  assert sorted(llvm_jit.LLVM_TIERS) == [0, 1, 2, 3]
  assert llvm_jit.LLVM_TIERS[0] == llvm_jit.LLVMTier(0, False, 0)
  assert not llvm_jit.LLVM_TIERS[1].vectorize and llvm_jit.LLVM_TIERS[3].vectorize
  with pytest.raises(ValueError, match="optimization level 0, 1, 2 or 3"):
    flags.parse("--opt_level=4")
  assert flags.parse("--xla_backend_optimization_level=0").opt_level == 0


_STAGES = ("trace", "lower", "hlo_passes", "buffer_assignment", "backend", "codegen",
           "llvm_ir", "llvm_parse", "llvm_optimize", "llvm_emit_object", "llvm_load", "compile")


def test_compile_times_per_stage():
  x = _x((8, 8), 4)
  c = ember.jit(lambda x: jnp.exp(x) - x).lower(x).compile()
  times = c.compile_times
  assert set(_STAGES) <= set(times)
  assert all(isinstance(v, float) and v >= 0 for v in times.values())
  assert times["compile"] >= times["backend"]
  # a structurally equal function reuses the native code: no LLVM stage, backend ~0
  c2 = ember.jit(lambda y: jnp.exp(y) - y).lower(x).compile()
  assert "llvm_optimize" not in c2.compile_times and "hlo_passes" in c2.compile_times
  assert c2.runtime_executable() is c.runtime_executable()
  c.compile_times["trace"] = -1.0                       # a copy: the record is unchanged
  assert c.compile_times["trace"] >= 0


def test_parallel_llvm_parts_compute_what_one_module_does(monkeypatch):
  """A module compiled as two halves on two threads (compiler._parallel_parts): every
  kernel found, the same bits as the one-module compile, its assembly covers both halves,
  and the persistent cache's bytes (two object files) load back."""
  from ember._src.passes.buffer_assignment import assign_buffers
  from ember._src.passes.pipeline import optimize
  x, w = _x((40, 30), 1), _x((30, 20), 2)
  f = lambda x, w: (jnp.tanh(x @ w) + 1.0, jnp.sum(jnp.exp(x), axis=1), jnp.sin(w) * 2.0)
  module = optimize(compilation.clone_module(ember.jit(f).lower(x, w).compiler_ir()))
  assignment = assign_buffers(module)
  monkeypatch.setattr(compiler, "PARALLEL_MIN_IR_CHARS", 10 ** 12)
  whole = compiler.compile_module(module, assignment)
  monkeypatch.setattr(compiler, "PARALLEL_MIN_IR_CHARS", 0)
  parts = compiler._parallel_parts(whole.llvm_ir)
  assert parts and all(parts) and not set(parts[0]) & set(parts[1])
  split = compiler.compile_module(module, assignment)
  assert split.llvm_ir_optimized.count(llvm_jit._PART_MARK) == 1
  for name in parts[0] + parts[1]:
    assert f"{name}:" in split.asm or f'"{name}":' in split.asm
  again = compiler.deserialize_executable(module, assignment,
                                          compiler.serialize_executable(split))
  for exe in (split, again):
    for a, b in zip(exe.execute([x, w]), whole.execute([x, w])):
      np.testing.assert_array_equal(a, b)
  assert llvm_jit._unpack_objects(b"\x7fELF...") == [b"\x7fELF..."]


def test_compile_times_are_logged(caplog):
  caplog.set_level(logging.DEBUG, logger="ember._src.compiler")
  x = _x((5,), 5)
  ember.jit(lambda x: jnp.cos(x) * 3)(x)
  msgs = [r.getMessage() for r in caplog.records if r.name == "ember._src.compiler"
          and r.getMessage().startswith("Compile times of ")]
  assert len(msgs) == 1
  head, _, rest = msgs[0].partition(": ")
  assert head == "Compile times of jit(<lambda>)"
  parts = [p.split(" ") for p in rest.split(", ")]
  assert [p[0] for p in parts][:5] == ["trace", "lower", "hlo_passes", "buffer_assignment",
                                       "backend"]
  assert parts[-1][0] == "compile" and all(p[2] == "ms" and float(p[1]) >= 0 for p in parts)


class CompileCounter(logging.Handler):
  """Seed 002's helper: records of the "jax" logger while the block runs."""

  def __init__(self):
    super().__init__()
    self.msgs = []

  def emit(self, record):
    self.msgs.append(record.getMessage())

  def __enter__(self):
    logging.getLogger("jax").addHandler(self)
    self._ctx = ember.log_compiles(True)
    self._ctx.__enter__()
    return self

  def __exit__(self, *exc):
    self._ctx.__exit__(*exc)
    logging.getLogger("jax").removeHandler(self)

  def take(self, prefix="Compiling jit(aot)"):
    n = sum(m.startswith(prefix) for m in self.msgs)
    self.msgs.clear()
    return n


def test_lowered_compile_logs_once_per_real_compilation():
  x = _x((3,), 6)

  def aot(x):
    return x * 4.0

  f = ember.jit(aot)
  with CompileCounter() as cc:
    lowered = f.lower(x)
    assert cc.take() == 0                              # lowering compiles nothing
    compiled = lowered.compile()
    msgs = list(cc.msgs)
    assert cc.take() == 1
    assert msgs[-2] == ("Compiling jit(aot) with global shapes and types "
                        "(ShapedArray(float32[3]),). Argument mapping: (UnspecifiedValue,).")
    assert msgs[-1].startswith("Finished XLA compilation of jit(aot) in ")
    assert lowered.compile() is compiled and cc.take() == 0
    np.testing.assert_array_equal(np.asarray(f(x)), x * 4)   # the call runs it
    assert cc.take() == 0
    f.lower(x).compile()                                # another Lowered: compiles again
    assert cc.take() == 1
    # another tier is another compilation, for the call too
    ember.config.update("jax_disable_most_optimizations", True)
    g = ember.jit(aot)
    g.lower(x).compile()
    assert cc.take() == 1


def test_call_then_aot_then_other_signature():
  def aot(x):
    return x - 1.0
  f = ember.jit(aot)
  with CompileCounter() as cc:
    f(np.ones(2, f32))
    f(np.ones(2, f32))
    assert cc.take() == 1
    f.lower(np.ones(5, f32)).compile()
    f(np.ones(5, f32))                                  # compiled by the AOT call
    assert cc.take() == 1


def _chain(n, sin_every=0):
  def f(x):
    for i in range(n):
      if sin_every and i % sin_every == 0:
        x = jnp.sin(x)
      elif i % 2:
        x = x * 1.0001 + 0.5
      else:
        x = x - 0.25
    return x
  return f


def _chain_ref(n, x, sin_every=0):
  x = x.astype(f64)
  for i in range(n):
    if sin_every and i % sin_every == 0:
      x = np.sin(x)
    elif i % 2:
      x = x * 1.0001 + 0.5
    else:
      x = x - 0.25
  return x


def test_3000_equation_chain_compiles_and_is_correct():
  n, x = 3000, _x((16,), 7)
  f = _chain(n)
  jaxpr = ember.make_jaxpr(f)(x)
  assert len(jaxpr.eqns) == 4500                        # x*c+d counts two equations
  got = np.asarray(ember.jit(f)(x))
  # 3000 f32 roundings compound: relative error grows ~n * 2^-24
  np.testing.assert_allclose(got, _chain_ref(n, x), rtol=3e-4)
  ember.config.update("jax_disable_most_optimizations", True)
  quick = np.asarray(ember.jit(_chain(n))(x))
  np.testing.assert_array_equal(quick, got)


def test_long_chain_with_transcendentals_compiles():
  n, x = 1200, _x((16,), 8)
  ember.config.update("jax_disable_most_optimizations", True)   # keep the test quick
  got = np.asarray(ember.jit(_chain(n, sin_every=7))(x))
  np.testing.assert_allclose(got, _chain_ref(n, x, 7), rtol=1e-4, atol=1e-4)


def test_3000_small_constants():
  cs = [np.full((4,), k % 97, f32) for k in range(3000)]

  def f(x):
    for c in cs:
      x = x + c
    return x
  x = _x((4,), 9)
  ember.config.update("jax_disable_most_optimizations", True)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x)),
                             x.astype(f64) + sum(c.astype(f64) for c in cs), rtol=1e-6)


def test_clone_module_is_independent():
  x = _x((4, 4), 10)
  lowered = ember.jit(lambda x: (jnp.sort(x, axis=1) + lax.iota(np.float32, 4)) * 2).lower(x)
  module = lowered.compiler_ir()
  before = lowered.as_text(dialect="hlo")
  clone = compilation.clone_module(module)
  assert lowered.as_text(dialect="hlo") == before
  from ember._src.hlo import graph as hlo
  assert hlo.to_text(clone) == hlo.to_text(module)
  ids = {i.id for c in module.computations for i in c.instrs}
  assert not any(i.id in ids for c in clone.computations for i in c.instrs)
  lowered.compile()                                     # passes rewrite a clone only
  assert lowered.as_text(dialect="hlo") == before
  np.testing.assert_allclose(np.asarray(lowered.compile()(x)),
                             (np.sort(x, axis=1) + np.arange(4)) * 2, rtol=1e-6)


def test_preload_backend_then_compile():
  compilation.preload_backend()
  compilation.preload_backend()                              # idempotent
  x = _x((3, 5), 11)
  np.testing.assert_allclose(np.asarray(ember.jit(lambda x: jnp.exp(-x) + 1)(x)),
                             np.exp(-x.astype(f64)) + 1, rtol=2e-6)

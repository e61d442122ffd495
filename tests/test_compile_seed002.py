"""End to end through the compiler: the behaviours seed 002 (§2.3, §2.4, §2.6, §2.8)
asserts, with ember's jit compiling to native code."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax


@pytest.fixture(autouse=True)
def _compiled_backend():
  with jax.config._override("ember_jit_backend", "cpu"):
    yield


def count_fusions(text):
  return len(re.findall(r" fusion\(", text))


def compiled_hlo(f, *args, **kw):
  return jax.jit(f, **kw).lower(*args).compile().as_text()


def simple_computation(x, a, b):
  y = jnp.sin(x)
  z = a * y
  return z + b


XS = jnp.ones((1000, 1000))


def test_lowered_text_is_stablehlo_and_compiled_text_is_hlo():
  lowered = jax.jit(simple_computation).lower(XS, 2.0, 1.0)
  txt = lowered.as_text()
  assert "stablehlo.sine" in txt and "HloModule" not in txt
  assert "func.func public @main" in txt
  opt = lowered.compile().as_text()
  assert opt.startswith("HloModule jit_simple_computation")
  assert "entry_computation_layout={(f32[1000,1000]{1,0}, f32[], f32[])->f32[1000,1000]{1,0}}" in opt
  assert count_fusions(opt) == 1
  assert re.search(r"%fusion\S* = f32\[1000,1000\]\{1,0\} fusion\(.*kind=kLoop, calls=", opt)


def test_cost_and_memory_analysis_simple_computation():
  compiled = jax.jit(simple_computation).lower(XS, 2.0, 1.0).compile()
  ca = compiled.cost_analysis()
  n = 1000 * 1000
  assert isinstance(ca, dict)
  assert ca["flops"] == 2 * n
  assert ca["transcendentals"] == n
  assert ca["bytes accessed"] == 2 * 4 * n + 8
  ma = compiled.memory_analysis()
  assert ma.output_size_in_bytes == 4 * n and ma.temp_size_in_bytes == 0
  assert ma.argument_size_in_bytes == 4 * n + 8 and ma.alias_size_in_bytes == 0


def test_compiled_result_matches_numpy():
  x = jax.random.normal(jax.random.key(0), (300, 200))
  out = jax.jit(simple_computation)(x, 2.0, 1.0)
  ref = np.sin(np.asarray(x, np.float64)) * 2.0 + 1.0
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)
  assert out.dtype == np.float32 and out.shape == (300, 200)


def test_constant_folding_and_algebraic_simplification():
  fold = lambda v: v * jnp.sin(2.0) + jnp.arange(4.0).sum()
  v4 = jnp.ones(4)
  low_txt = jax.jit(fold).lower(v4).as_text()
  opt_txt = compiled_hlo(fold, v4)
  assert "stablehlo.sine" in low_txt and " sine(" not in opt_txt and " reduce(" not in opt_txt
  np.testing.assert_allclose(jax.jit(fold)(v4), np.sin(2.0) + 6.0, rtol=1e-6)
  simp = compiled_hlo(lambda v: v * 1.0 + 0.0, XS)
  assert " multiply(" not in simp and " add(" not in simp
  alg = compiled_hlo(lambda p, q: (p + q) - p, XS, XS)
  assert " subtract(" in alg and " add(" in alg
  via = jax.jit(lambda p, q: (p + q) - p)(jnp.float32(1e8), jnp.float32(1.0))
  assert float(via) != 1.0


def test_transpose_absorbed_into_dot():
  a, b = jnp.ones((4, 8)), jnp.ones((4, 3))
  txt = compiled_hlo(lambda a, b: a.T @ b, a, b)
  assert " transpose(" not in txt and "lhs_contracting_dims={0}" in txt
  rng = np.random.default_rng(0)
  an, bn = rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
  np.testing.assert_allclose(jax.jit(lambda a, b: a.T @ b)(an, bn), an.T.astype(np.float64) @ bn,
                             rtol=1e-5, atol=1e-5)


def test_fusion_bytes_with_and_without_fusion():
  def f(x, y):
    return jnp.exp(jnp.log(x) + y)
  x = jnp.ones((1000, 1000))
  c = jax.jit(f).lower(x, x).compile()
  assert count_fusions(c.as_text()) == 1 and c.cost_analysis()["bytes accessed"] == 12_000_000
  from ember._src.base import flags
  with flags.override(disable_passes=frozenset({"fusion"})):
    c2 = jax.jit(f).lower(x, x).compile()
  txt = c2.as_text()
  kernels = len(re.findall(r" (fusion|log|exponential|add)\(", txt.split("ENTRY")[-1]))
  assert kernels == 3 and c2.cost_analysis()["bytes accessed"] == 28_000_000


def pairwise_v1(X, Y):
  return jnp.sqrt(jnp.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1))


def pairwise_barrier(X, Y):
  diff = lax.optimization_barrier(X[:, None, :] - Y[None, :, :])
  return jnp.sqrt(jnp.sum(diff ** 2, axis=-1))


def test_pairwise_distance_is_one_fusion_without_the_big_intermediate():
  N, M, d = 100, 150, 64
  kx, ky = jax.random.split(jax.random.key(1))
  X, Y = jax.random.normal(kx, (N, d)), jax.random.normal(ky, (M, d))
  c = jax.jit(pairwise_v1).lower(X, Y).compile()
  assert count_fusions(c.as_text()) == 1
  assert c.memory_analysis().temp_size_in_bytes < N * M * d * 4 // 10
  cb = jax.jit(pairwise_barrier).lower(X, Y).compile()
  assert cb.memory_analysis().temp_size_in_bytes >= N * M * d * 4
  Xn, Yn = np.asarray(X, np.float64), np.asarray(Y, np.float64)
  ref = np.sqrt(((Xn[:, None, :] - Yn[None, :, :]) ** 2).sum(-1))
  for fn in (pairwise_v1, pairwise_barrier):
    np.testing.assert_allclose(np.asarray(jax.jit(fn)(X, Y)), ref, rtol=2e-5)


def test_named_scope_in_metadata_and_debug_info():
  @jax.jit
  def annotated_step(x, y):
    with jax.named_scope("my_matmul"):
      z = x @ y
    with jax.named_scope("my_epilogue"):
      out = jnp.mean(jnp.sin(z))
    return out
  a = jnp.ones((8, 8))
  low = annotated_step.lower(a, a)
  assert "my_epilogue" in low.as_text(debug_info=True) and "loc(" in low.as_text(debug_info=True)
  opt = low.compile().as_text()
  assert 'op_name="jit(annotated_step)/my_epilogue/sin"' in opt
  assert "my_matmul" in opt


def test_closure_constant_matmul_then_reduce_is_correct():
  # seed 002 §2.3: jaxlib 0.12.0.1 returned wrong numbers here; ember must not
  rng = np.random.default_rng(0)
  n = 128
  W_np = rng.standard_normal((n, n)).astype(np.float32)
  X_np = rng.standard_normal((n, n)).astype(np.float32)
  ref = float(np.sum(W_np.astype(np.float64) @ X_np.astype(np.float64)))
  W_const = jnp.asarray(W_np)
  closure_fn = jax.jit(lambda x: jnp.sum(W_const @ x))
  param_fn = jax.jit(lambda x, w: jnp.sum(w @ x))
  assert abs(float(closure_fn(jnp.asarray(X_np))) - ref) < 1e-2 * max(1.0, abs(ref)) ** 0.5
  assert abs(float(param_fn(jnp.asarray(X_np), W_const)) - ref) < 1e-2 * max(1.0, abs(ref)) ** 0.5


def test_dump_to_writes_before_and_after_files(tmp_path):
  code = textwrap.dedent("""
      import ember as jax, ember.numpy as jnp
      jax.config.update("ember_jit_backend", "cpu")
      def simple_computation(x, y):
          return jnp.exp(jnp.log(x) + y)
      x = jnp.ones((100, 100))
      print(float(jax.jit(simple_computation)(x, x).sum()))
  """)
  env = dict(os.environ, XLA_FLAGS=f"--xla_dump_to={tmp_path} --xla_dump_hlo_as_text")
  p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
  assert p.returncode == 0, p.stderr
  mine = [f for f in os.listdir(tmp_path) if "jit_simple_computation" in f]
  before = [f for f in mine if f.endswith("before_optimizations.txt")]
  after = [f for f in mine if f.endswith("cpu_after_optimizations.txt")]
  assert before and after
  assert count_fusions(open(tmp_path / before[0]).read()) == 0
  assert count_fusions(open(tmp_path / after[0]).read()) == 1
  assert any(f.endswith(".ll") for f in mine) and any(f.endswith(".s") for f in mine)


def test_checked_mode_runs_reference_too():
  with jax.config._override("ember_check_compiled", True):
    out = jax.jit(lambda x: jnp.tanh(x) * 3 + jnp.sum(x))(jnp.arange(6.0))
  np.testing.assert_allclose(out, np.tanh(np.arange(6.0)) * 3 + 15, rtol=1e-6)


def test_softmax_in_few_kernels_and_correct():
  def sm(x):
    return jax.nn.softmax(x, axis=-1)
  x = jax.random.normal(jax.random.key(2), (64, 128))
  c = jax.jit(sm).lower(x).compile()
  assert count_fusions(c.as_text()) <= 4
  xn = np.asarray(x, np.float64)
  ref = np.exp(xn - xn.max(-1, keepdims=True))
  ref /= ref.sum(-1, keepdims=True)
  np.testing.assert_allclose(np.asarray(jax.jit(sm)(x)), ref, rtol=1e-5, atol=1e-7)

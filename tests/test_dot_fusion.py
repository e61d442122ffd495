"""Dot output fusion (passes/dot_epilogue.py) and the CPU backend's dots
(backends/cpu/dot_kernels.py: generated kernels for small dots, BLAS + epilogue blocks for
large ones, executable.DotEpilogueThunk).

Tolerances. A dot's result depends on the order its K products are summed: BLAS blocks K,
the generated kernel sums in increasing k with fused multiply-adds, NumPy's float64
reference is (almost) exact. The rounding error of a K-term float32 sum is bounded by about
K * eps32 * sum_k |a_k b_k|, so values are compared with `atol = K * eps * max|a| * max|b|`
scaled by K (plus f32's rtol for the elementwise epilogue), never with a fixed 1e-6.
"""
import re

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags as flags_lib
from ember._src.backends.cpu import cost_model, dot_kernels, executable as ex, host
from ember._src.backends.cpu.compiler import (compile_module, deserialize_executable,
                                              serialize_executable)
from ember._src.passes.buffer_assignment import assign_buffers
from ember._src.passes.pipeline import optimize
from ember._src.driver.compilation import clone_module

F32, F64 = np.float32, np.float64
RNG = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("check_compiled")


def data(shape, dtype=F32, positive=False):
  x = RNG.standard_normal(shape)
  return (np.abs(x) + 0.1 if positive else x).astype(dtype)


def dot_atol(k: int, dtype, *operands) -> float:
  """The rounding error a K-term dot of these operands may carry (module docstring)."""
  eps = np.finfo(dtype).eps
  scale = np.prod([float(np.max(np.abs(o), initial=1.0)) for o in operands])
  return 2 * max(k, 1) * eps * scale


def check(f, args, k, rtol=None, dtype=F32):
  """f eager and jitted against NumPy float64 on the same function."""
  ref = np.asarray(f(*[np.asarray(a, F64) for a in args], xp=np), F64)
  rtol = rtol or 4 * np.finfo(dtype).eps
  for fn in (lambda *a: f(*a, xp=jnp), ember.jit(lambda *a: f(*a, xp=jnp))):
    out = fn(*args)
    assert out.dtype == np.dtype(dtype) or f.__name__.endswith("_f16")
    np.testing.assert_allclose(np.asarray(out, F64), ref, rtol=rtol,
                               atol=dot_atol(k, dtype, *args) * 4)


def compiled(f, *args):
  return ember.jit(f).lower(*args).compile()


def thunks(c):
  return [type(t).__name__ for t in c._computation.executable.thunks]


# --------------------------------------------------------------------------------------
# Workloads: (function of (args..., xp), shapes, K)
# --------------------------------------------------------------------------------------

def relu_bias(x, w, b, xp):
  return xp.maximum(x @ w + b, 0.0)


def tanh_scale(x, w, xp):
  return xp.tanh(x @ w) * 2.0 + 0.1


def pairwise(X, Y, xp):
  d2 = xp.sum(X * X, 1)[:, None] + xp.sum(Y * Y, 1)[None, :] - 2 * (X @ Y.T)
  return xp.sqrt(xp.maximum(d2, 0.0))


def square_plus(x, w, xp):            # the dot's value read twice by the epilogue
  d = x @ w
  return d * d + d


def transposed_lhs(x, w, xp):
  return xp.exp(-xp.abs(x.T @ w))


def batched(a, b, xp):
  return xp.tanh(xp.einsum("bij,bjk->bik", a, b)) - 1.0


def matvec(x, v, b, xp):
  return xp.maximum(x @ v + b, 0.0)


def vecmat(v, w, xp):                 # dimension 0 of the output is an rhs dimension
  return xp.sin(v @ w) + 1.0


CASES = [
    (relu_bias, [(8, 20), (20, 30), (30,)], 20),
    (relu_bias, [(1, 5), (5, 3), (3,)], 5),
    (relu_bias, [(70, 33), (33, 70), (70,)], 33),                 # MR / panel tails
    (relu_bias, [(150, 120), (120, 200), (200,)], 120),           # BLAS blocks
    (tanh_scale, [(64, 64), (64, 64)], 64),
    (tanh_scale, [(2, 64), (64, 17)], 64),
    (pairwise, [(40, 16), (50, 16)], 16),
    (pairwise, [(300, 64), (400, 64)], 64),                      # BLAS + kInput epilogue
    (square_plus, [(9, 7), (7, 11)], 7),
    (transposed_lhs, [(13, 6), (13, 10)], 13),
    (batched, [(3, 5, 7), (3, 7, 9)], 7),
    (batched, [(2, 130, 80), (2, 80, 150)], 80),
    (matvec, [(10, 6), (6,), ()], 6),
    (vecmat, [(6,), (6, 10)], 6),
]


@pytest.mark.parametrize("f, shapes, k", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_values_f32(f, shapes, k):
  check(f, [data(s) for s in shapes], k)


@pytest.mark.parametrize("f, shapes, k", CASES[:6] + CASES[8:11],
                         ids=lambda c: getattr(c, "__name__", None))
def test_values_f64(f, shapes, k):
  with ember.enable_x64():
    check(f, [data(s, F64) for s in shapes], k, dtype=F64)


@pytest.mark.parametrize("shape", [(0, 5, 4), (3, 0, 4), (3, 5, 0)])
def test_empty_dimensions(shape):
  m, k, n = shape
  check(tanh_scale, [data((m, k)), data((k, n))], k)


def test_epilogue_changes_dtype_uses_a_scratch_tile():
  """An epilogue ending in a convert cannot compute the dot in the output: small dots use
  a stack tile, large ones a block of scratch."""
  def f(x, w):
    return (jnp.tanh(x @ w) + 1).astype(jnp.float16)
  for m, k, n in ((6, 5, 7), (200, 90, 300)):
    x, w = data((m, k)), data((k, n))
    out = ember.jit(f)(x, w)
    assert out.dtype == np.float16
    ref = np.tanh(x.astype(F64) @ w) + 1
    np.testing.assert_allclose(np.asarray(out, F64), ref, rtol=2e-3, atol=2e-3)


# --------------------------------------------------------------------------------------
# The pass: when it fuses and what the optimized module looks like
# --------------------------------------------------------------------------------------

def test_output_fusion_in_optimized_hlo():
  x, w, b = data((8, 20)), data((20, 30)), data((30,))
  c = compiled(lambda x, w, b: relu_bias(x, w, b, jnp), x, w, b)
  text = c.as_text()
  entry = text[text.index("ENTRY"):]
  assert "kind=kOutput" in entry and " dot(" not in entry
  assert "ROOT %fusion = f32[8,30]{1,0} fusion(%x, %w, %b), kind=kOutput" in entry
  fused = text[:text.index("ENTRY")]
  assert " dot(%param_0" in fused and "maximum(" in fused


def test_output_fusion_of_x_at_x_has_one_parameter():
  x = data((16, 16))
  text = compiled(lambda x: jnp.tanh(x @ x), x).as_text()
  assert re.search(r"dot\(%(param_0[.\d]*), %\1\)", text) and "kind=kOutput" in text


def test_switch_off_by_name():
  x, w, b = data((8, 20)), data((20, 30)), data((30,))
  lowered = ember.jit(lambda x, w, b: relu_bias(x, w, b, jnp)).lower(x, w, b).compiler_ir()
  with flags_lib.override(disable_passes=frozenset({"dot_epilogue"})):
    m = optimize(clone_module(lowered))
  text = ember._src.hlo.graph.to_text(m)
  assert "kOutput" not in text and " dot(%x, %w)" in text
  assert "dot_epilogue" in flags_lib.parse("--disable_passes=dot_epilogue").disable_passes


def test_only_the_sole_user_is_fused():
  x, w = data((6, 5)), data((5, 6))
  for f, fused in ((lambda x, w: (x @ w, jnp.tanh(x @ w)), False),
                   (lambda x, w: (x @ w).T + 1.0, True),  # the dot becomes w.T @ x.T
                   (lambda x, w: jnp.sum(x @ w, axis=1), False),
                   (lambda x, w: jnp.tanh(x @ w).T + 1.0, False),  # row i needs column i
                   (lambda x, w: jnp.tanh(x @ w) * (x @ w), True)):  # one dot after cse
    entry = compiled(f, x, w).as_text().split("ENTRY")[1]
    assert ("kind=kOutput" in entry) == fused, entry
    assert (" dot(" in entry) == (not fused)
    out, ref = ember.jit(f)(x, w), f(jnp.asarray(x), jnp.asarray(w))
    for o, r in zip(ember.tree_util.tree_leaves(out), ember.tree_util.tree_leaves(ref)):
      np.testing.assert_allclose(np.asarray(o), np.asarray(r), rtol=1e-5, atol=1e-5)


def test_cost_analysis_counts_no_round_trip_of_the_dot():
  x, w, b = data((128, 64)), data((64, 32)), data((32,))
  f = lambda x, w, b: relu_bias(x, w, b, jnp)
  cost = compiled(f, x, w, b).cost_analysis()
  out_bytes = 128 * 32 * 4
  assert cost["bytes accessed"] == x.nbytes + w.nbytes + b.nbytes + out_bytes
  assert cost["bytes accessedout{}"] == out_bytes
  assert cost["flops"] == 2 * 128 * 64 * 32 + 2 * 128 * 32      # dot, add, max


# --------------------------------------------------------------------------------------
# Backend: which thunk runs what, and the persistent-cache replay
# --------------------------------------------------------------------------------------

def test_small_dots_get_a_generated_kernel_large_ones_blas():
  small = compiled(lambda x, w: jnp.tanh(x @ w), data((64, 64)), data((64, 64)))
  assert thunks(small) == ["KernelThunk"]
  bare = compiled(lambda x, w: x @ w, data((64, 64)), data((64, 64)))
  assert thunks(bare) == ["KernelThunk"]
  # A is 2.25 MB: more than L2 holds, and C has several column panels (or one mostly
  # masked, N = 10 of a 16-lane micro-kernel): BLAS on every host
  for n in (160, 10):
    large = compiled(lambda x, w: jnp.tanh(x @ w), data((1100, 512)), data((512, n)))
    assert thunks(large) == ["DotEpilogueThunk"]
  # ... but with C one full panel wide (of the 4-, 2- or 1-vector micro-kernel) the AVX-512
  # kernel streams A once (dot_kernels.streams_a)
  for n in (64, 32, 16):
    narrow = compiled(lambda x, w: jnp.tanh(x @ w), data((1100, 512)), data((512, n)))
    assert thunks(narrow) == (["KernelThunk"] if host.vector_bytes() == 64
                              else ["DotEpilogueThunk"])
  complex_dot = compiled(lambda x, w: x @ w, data((4, 4)).astype(np.complex64),
                         data((4, 4)).astype(np.complex64))
  assert thunks(complex_dot) == ["DotThunk"]


def test_small_kernel_choice():
  lay = lambda m, k, n, dt=F32: dot_kernels.DotLayout(1, m, k, n, (0, k, 1), (0, n, 1),
                                                      np.dtype(dt), m, 1)
  assert dot_kernels.generated_kernel_ok(lay(64, 64, 64))
  assert dot_kernels.generated_kernel_ok(lay(3, 5, 7, F64))
  avx512 = host.vector_bytes() == 64     # the kernel outruns BLAS while A is in L2
  assert dot_kernels.generated_kernel_ok(lay(128, 784, 512)) == avx512
  assert dot_kernels.generated_kernel_ok(lay(128, 128, 64)) == avx512
  assert dot_kernels.generated_kernel_ok(lay(128, 128, 64), fused=True)  # saves a thunk too
  # A: 9 MB: the large body on AVX-512 (dot_kernels.large_dot), BLAS elsewhere, and BLAS
  # with an epilogue, past MAX_LARGE_A_BYTES, for a small side or a double
  large = dot_kernels.large_config() is not None
  assert dot_kernels.generated_kernel_ok(lay(1500, 1500, 1500)) == large
  assert not dot_kernels.generated_kernel_ok(lay(1500, 1500, 1500), fused=True)
  assert not dot_kernels.generated_kernel_ok(lay(2000, 2000, 2000))      # A: 16 MB
  assert not dot_kernels.generated_kernel_ok(lay(20000, 1000, 100))
  assert not dot_kernels.generated_kernel_ok(lay(1000, 1000, 1000, F64))
  assert not dot_kernels.generated_kernel_ok(lay(8, 8, 8, np.complex64))
  assert not dot_kernels.generated_kernel_ok(lay(8, 8, 8)._replace(a_strides=None))


_BLOCKED = [  # (A, B, dot) with K past one K block, partial panels, rows past MR blocks
    ((13, 300), (300, 70), lambda a, b: a @ b),
    ((130, 257), (200, 257), lambda a, b: a @ b.T),
    ((70, 148), (130, 148), lambda a, b: a @ b.T),     # transposed blocks + leftover k's
    ((257, 40), (257, 100), lambda a, b: a.T @ b),
    ((3, 9, 200), (3, 200, 65), lambda a, b: a @ b),
    ((5, 300), (300, 130), lambda a, b: a @ b),        # M <= MR: B read in place
]


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("case", range(len(_BLOCKED)))
def test_generated_kernel_k_blocks(case, dtype, monkeypatch):
  """Dots of the generated kernel whose K spans several packed blocks: against NumPy in
  float64, and the same bits for any block size (partial sums resume from C)."""
  sa, sb, dot = _BLOCKED[case]
  a, b = data(sa, dtype), data(sb, dtype)
  monkeypatch.setattr(dot_kernels, "generated_kernel_ok", lambda *a, **k: True)
  ref = dot(a.astype(F64), b.astype(F64))
  outs, panels = [], []
  for panel in (dot_kernels.PANEL_BYTES, 1 << 12):
    monkeypatch.setattr(dot_kernels, "PANEL_BYTES", panel)
    with ember.enable_x64(dtype == F64):   # compiled afresh (a jit would hit its cache)
      module = optimize(clone_module(ember.jit(dot).lower(a, b).compiler_ir()))
      exe = compile_module(module, assign_buffers(module))
      assert [type(t).__name__ for t in exe.thunks] == ["KernelThunk"]
      panels.append(re.findall(r"@\"?(ember_dot_body_\w+)", exe.llvm_ir))   # _p<PANEL_BYTES>
      outs.append(np.asarray(exe.execute([a, b])[0]))
    assert outs[-1].dtype == dtype
    np.testing.assert_allclose(outs[-1], ref, rtol=4 * np.finfo(dtype).eps,
                               atol=dot_atol(300, dtype, a, b) * 4)
  assert panels[0] and panels[0] != panels[1]     # the two bodies block K differently
  np.testing.assert_array_equal(outs[0], outs[1])


_LARGE = [  # (A, B): rows past whole 8-row blocks, partial last panels, several K blocks
    ((700, 800), (800, 1001)),
    ((1029, 600), (600, 300)),           # last panel 12 columns: the one-vector kernel
    ((256, 2100), (2100, 400)),          # few rows: threads split C by column panels
    ((2, 600, 1000), (2, 1000, 500)),    # batched
]


@pytest.mark.parametrize("case", range(len(_LARGE)))
def test_large_body(case, monkeypatch):
  """Large float32 dots (dot_kernels.large_dot) run the large body (its tile, K blocks and
  prefetches; on a host without one, the AVX-512 one's blocking with this ISA's vectors):
  NumPy's values, and the default body's bits (the blocking changes none) for any number
  of chunks, eager or jitted."""
  sa, sb = _LARGE[case]
  a, b = data(sa), data(sb)
  vb = host.vector_bytes()
  monkeypatch.setitem(dot_kernels.LARGE_BODIES, vb,
                      dot_kernels.LARGE_BODIES.get(vb, (4, 3, 48 << 10, True)))
  ref = a.astype(F64) @ b
  module = optimize(clone_module(ember.jit(lambda a, b: a @ b).lower(a, b).compiler_ir()))
  outs = []
  for chunks in (1, 2, 3):
    with cost_model.forced_chunks(chunks):
      exe = compile_module(module, assign_buffers(module))
    assert [type(t).__name__ for t in exe.thunks] == ["KernelThunk"]
    assert re.findall(r"@\"?(ember_dot_body_float32\w*_pf_\w*)", exe.llvm_ir)
    outs.append(np.asarray(exe.execute([a, b])[0]))
    np.testing.assert_allclose(outs[-1], ref, rtol=4 * np.finfo(F32).eps,
                               atol=dot_atol(sa[-1], F32, a, b) * 4)
  monkeypatch.setattr(dot_kernels, "LARGE_BODIES", {})    # the default body
  monkeypatch.setattr(dot_kernels, "generated_kernel_ok", lambda *a, **k: True)
  exe = compile_module(module, assign_buffers(module))
  assert not re.findall(r"ember_dot_body_float32\w*_pf_", exe.llvm_ir)
  outs.append(np.asarray(exe.execute([a, b])[0]))
  for out in outs[1:]:
    np.testing.assert_array_equal(out, outs[0])
  monkeypatch.undo()
  if dot_kernels.large_config() is not None:    # this host's own: eager and jit alike
    x, y = jnp.asarray(a), jnp.asarray(b)
    # (unchecked: the reference evaluator's dot is OpenBLAS's, a few ulps away, and sums of
    # 1000 normal terms that cancel are off by more than checked mode's absolute 1e-5)
    with ember.config._override("ember_check_compiled", False):
      np.testing.assert_array_equal(np.asarray(x @ y), outs[0])
      np.testing.assert_array_equal(np.asarray(ember.jit(lambda a, b: a @ b)(x, y)), outs[0])


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("epilogue", [None, "relu_bias", "to_f16"])
def test_few_rows_split_by_column_panels(dtype, epilogue, monkeypatch):
  """A dot with few rows is split across threads by column panels (each thread packs only
  its panels of B); an epilogue then runs as a kernel of its own after the dot, unless the
  dot's value needs a tile (another dtype): that one keeps the row split. Same bits for any
  number of chunks, and NumPy's values. (K = 200: a dot too small for the pool to split
  keeps its epilogue fused, test_small_dots_get_a_generated_kernel_large_ones_blas.)"""
  x, w, bias = data((100, 200), dtype), data((200, 300), dtype), data((300,), dtype)
  monkeypatch.setattr(dot_kernels, "generated_kernel_ok", lambda *a, **k: True)
  f = {None: lambda x, w, b: x @ w,
       "relu_bias": lambda x, w, b: relu_bias(x, w, b, jnp),
       "to_f16": lambda x, w, b: (x @ w + b).astype(jnp.float16)}[epilogue]
  ref = {None: x.astype(F64) @ w, "relu_bias": np.maximum(x.astype(F64) @ w + bias, 0),
         "to_f16": x.astype(F64) @ w + bias}[epilogue]
  lay = dot_kernels.DotLayout(1, 100, 200, 300, None, None, np.dtype(dtype), 100, 1)
  panels = dot_kernels.column_panels(lay)
  width = dot_kernels.micro_tile()[1] * host.vector_lanes(dtype)
  assert panels >= dot_kernels.MIN_SPLIT_PANELS and 300 % width != 0   # a partial last panel
  outs = []
  with ember.enable_x64(dtype == F64):
    module = optimize(clone_module(ember.jit(f).lower(x, w, bias).compiler_ir()))
    for chunks in (1, 3):
      with cost_model.forced_chunks(chunks):
        exe = compile_module(module, assign_buffers(module))
      kernels = [(t.outer, t.nchunks) for t in exe.thunks]
      if epilogue == "to_f16":
        assert kernels == [(100, chunks)]                      # rows, epilogue fused
      else:
        assert kernels[0] == (panels, chunks)                  # the dot, by column panels
        assert len(kernels) == (1 if epilogue is None else 2)  # then the epilogue
      outs.append(np.asarray(exe.execute([x, w, bias])[0]))
  np.testing.assert_array_equal(outs[0], outs[1])
  if epilogue == "to_f16":
    np.testing.assert_allclose(outs[0].astype(F64), ref, rtol=1e-3, atol=1e-2)
  else:
    np.testing.assert_allclose(outs[0], ref, rtol=4 * np.finfo(dtype).eps,
                               atol=dot_atol(200, dtype, x, w) * 4)


def test_dot_loops_are_compiled_once_per_process():
  """Every dot kernel calls its dtype's shared body by name: a module declares it and holds
  no copy of its loops; the body is compiled once (dot_kernels.ensure_shared_bodies)."""
  a, b = data((40, 70)), data((70, 30))
  ref = a.astype(F64) @ b
  for f, want in ((lambda a, b: a @ b, ref), (lambda a, b: jnp.tanh(a @ b) * 2, np.tanh(ref) * 2)):
    c = compiled(f, a, b)
    ir_text = c._computation.executable.llvm_ir
    (name,) = set(re.findall(r"declare void @\"?(ember_dot_body_float32\w*)", ir_text))
    assert f"define void @{name}" not in ir_text and f'define void @"{name}"' not in ir_text
    assert dot_kernels._shared_bodies.get(name) is not None
    np.testing.assert_allclose(np.asarray(c(a, b)), want, rtol=1e-5,
                               atol=dot_atol(70, F32, a, b) * 4)


@pytest.mark.parametrize("m, k, n", [(5, 7, 3), (64, 64, 64), (150, 120, 200)])
def test_serialized_executable_replays(m, k, n):
  """deserialize_executable rebuilds the dot kernels and DotEpilogueThunks from the module
  and the recorded kernel facts."""
  x, w, b = data((m, k)), data((k, n)), data((n,))
  f = lambda x, w, b: relu_bias(x, w, b, jnp) * 0.5
  module = optimize(clone_module(ember.jit(f).lower(x, w, b).compiler_ir()))
  assignment = assign_buffers(module)
  exe = compile_module(module, assignment)
  again = deserialize_executable(module, assignment, serialize_executable(exe))
  assert [type(t) for t in again.thunks] == [type(t) for t in exe.thunks]
  np.testing.assert_array_equal(again.execute([x, w, b])[0], exe.execute([x, w, b])[0])
  ref = np.maximum(x.astype(F64) @ w + b, 0) * 0.5
  np.testing.assert_allclose(again.execute([x, w, b])[0], ref, rtol=1e-5,
                             atol=dot_atol(k, F32, x, w))


def test_dot_epilogue_blocks(monkeypatch):
  """Several row blocks (a small block size) give the same result as one."""
  x, w = data((100, 30)), data((30, 50))
  monkeypatch.setattr(dot_kernels, "generated_kernel_ok", lambda *a, **k: False)
  monkeypatch.setattr(ex.DotEpilogueThunk, "BLOCK_BYTES", 7 * 50 * 4)
  f = lambda x, w: (jnp.tanh(x @ w) * 3).astype(jnp.float16)
  module = optimize(clone_module(ember.jit(f).lower(x, w).compiler_ir()))
  ref = (np.tanh(x.astype(F64) @ w) * 3).astype(np.float16)
  for chunks in (1, 3):                  # the epilogue of a block split by the thread pool
    with cost_model.forced_chunks(chunks):
      exe = compile_module(module, assign_buffers(module))
    (t,) = exe.thunks
    assert isinstance(t, ex.DotEpilogueThunk) and t.units == 7 and t.nchunks == chunks
    np.testing.assert_allclose(exe.execute([x, w])[0].astype(F64), ref.astype(F64),
                               rtol=2e-3, atol=2e-3)


def test_mlp_forward_matches_numpy():
  # weights scaled as an MLP's initializer does: outputs O(1), so the checked mode's
  # absolute tolerance is not defeated by cancellation in sums of terms of size ~100
  x, w1, w2, w3 = data((32, 78)), data((78, 51)) / 9, data((51, 51)) / 7, data((51, 10)) / 7
  def mlp(x, w1, w2, w3, xp):
    h = xp.maximum(x @ w1, 0.0)
    h = xp.maximum(h @ w2, 0.0)
    return h @ w3
  check(mlp, [x, w1, w2, w3], 78, rtol=1e-4)


def test_lax_dot_general_batch_and_contracting_dims():
  """A dot whose operands need transposed strides in the kernel (contracting dim first on
  the lhs, batch dim in the middle of the rhs)."""
  a, b = data((7, 3, 5)), data((7, 3, 4))
  def f(a, b):
    d = lax.dot_general(a, b, (((0,), (0,)), ((1,), (1,))))     # (3, 5, 4) from (k, b, m)
    return jnp.tanh(d) + 1
  out = ember.jit(f)(a, b)
  ref = np.tanh(np.einsum("kbm,kbn->bmn", a.astype(F64), b)) + 1
  np.testing.assert_allclose(np.asarray(out, F64), ref, rtol=1e-5, atol=dot_atol(7, F32, a, b))


@pytest.mark.parametrize("m, k, n", [(6, 5, 7), (150, 120, 200)])
def test_complex_and_bfloat16_dots_with_epilogues(m, k, n):
  x, w = data((m, k)) * 0.3, data((k, n)) * 0.3
  xc, wc = (x + 0.5j * x[::-1]).astype(np.complex64), w.astype(np.complex64)
  out = ember.jit(lambda a, b: jnp.exp(a @ b * 0.1) + 1)(xc, wc)
  assert out.dtype == np.complex64
  ref = np.exp(xc.astype(np.complex128) @ wc * 0.1) + 1
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-5, atol=dot_atol(k, F32, xc, wc))
  xb, wb = x.astype(jnp.bfloat16), w.astype(jnp.bfloat16)
  out = ember.jit(lambda a, b: jnp.tanh(a @ b) * 2)(xb, wb)
  assert out.dtype == jnp.bfloat16
  ref = np.tanh(xb.astype(F64) @ wb.astype(F64)) * 2
  np.testing.assert_allclose(np.asarray(out, F64), ref, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("n", [16, 150])
def test_donated_operand_is_not_overwritten_while_read(n):
  """The output fusion writes the dot's rows into the output while BLAS/the kernel still
  reads the operands: a donated operand must not share the output's buffer."""
  x, w = data((n, n)), data((n, n))
  ref = np.tanh(x.astype(F64) @ w)
  out = ember.jit(lambda x, w: jnp.tanh(x @ w), donate_argnums=0)(jnp.asarray(x), w)
  np.testing.assert_allclose(np.asarray(out, F64), ref, rtol=1e-5,
                             atol=dot_atol(n, F32, x, w))


@pytest.mark.parametrize("to_f16", [False, True], ids=["in-place", "tile"])
def test_small_kernel_split_across_threads(to_f16):
  """The generated kernel runs any [start, stop) of the output's rows (the pool's chunks
  start mid-matrix and mid-block)."""
  x, w, b = data((37, 20)), data((20, 45)), data((45,))
  def f(x, w, b):
    y = relu_bias(x, w, b, jnp)
    return y.astype(jnp.float16) if to_f16 else y
  module = optimize(clone_module(ember.jit(f).lower(x, w, b).compiler_ir()))
  with cost_model.forced_chunks(5):
    exe = compile_module(module, assign_buffers(module))
  (t,) = exe.thunks
  assert isinstance(t, ex.KernelThunk) and t.nchunks == 5
  ref = np.maximum(x.astype(F64) @ w + b, 0)
  np.testing.assert_allclose(exe.execute([x, w, b])[0].astype(F64), ref,
                             rtol=1e-3 if to_f16 else 1e-5, atol=1e-2 if to_f16 else 1e-4)

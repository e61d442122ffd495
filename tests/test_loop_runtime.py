"""Runtime of the training-step and loop workloads (issue 6): pooled BLAS dots
(backends/cpu/blas_pool.py), `transpose(dot)` as a swapped dot and column reductions kept as
kernel roots (passes/fusion.py), the seed-001 MLP step, double-buffered generated loops and
loop sub-executables in the persistent cache (backends/cpu/control_flow.py). Values are
checked against NumPy in float64."""
import os
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.driver import compilation
from ember._src.backends.cpu import blas_pool, control_flow, dot_kernels, host
from ember._src.backends.cpu import executable as ex

RNG = np.random.default_rng(6)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def data(shape, dtype=np.float32):
  return RNG.standard_normal(shape).astype(dtype)


def thunks(f, *args):
  return ember.jit(f).lower(*args).compile().runtime_executable().thunks


def loop_thunks(f, *args):
  return [t for t in thunks(f, *args) if isinstance(t, control_flow.ControlFlowThunk)]


# ---------------------------------------------------------------------------------------
# Dots: single-threaded BLAS chunks on ember's pool
# ---------------------------------------------------------------------------------------

# (lhs shape, rhs shape, function): every transpose combination, odd sizes (chunks not a
# multiple of the 16-row alignment), splits by rows (M >= N) and by columns (N > M)
DOTS = [((257, 200), (200, 129), lambda a, b: a @ b),
        ((200, 257), (200, 129), lambda a, b: a.T @ b),
        ((257, 200), (129, 200), lambda a, b: a @ b.T),
        ((200, 131), (300, 200), lambda a, b: a.T @ b.T),
        ((64, 300), (300, 517), lambda a, b: a @ b),
        ((8, 600), (600, 900), lambda a, b: a @ b)]


@pytest.fixture
def blas_dots(monkeypatch):
  """Mid-size dots on the BLAS path (on AVX-512 hosts the generated kernel takes every dot
  whose A fits in L2 or whose C is one column panel: dot_kernels.generated_kernel_ok)."""
  monkeypatch.setattr(dot_kernels, "MAX_A_BYTES", 0)
  monkeypatch.setattr(dot_kernels, "STREAM_A_PANELS", 0)


@pytest.mark.usefixtures("blas_dots")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ls,rs,f", DOTS)
def test_pooled_dot_matches_numpy(ls, rs, f, dtype):
  if blas_pool._native() is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  a, b = data(ls, dtype), data(rs, dtype)
  with ember.enable_x64(dtype == np.float64):
    out = ember.jit(f)(a, b)
    assert out.dtype == dtype and out.shape == f(a, b).shape
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    # rounding of K-term sums: ~ sqrt(K) eps * sum |a||b| (cancellation defeats rtol)
    K = max(set(ls) & set(rs))
    bound = 4 * np.finfo(dtype).eps * np.sqrt(K) * f(np.abs(a64), np.abs(b64))
    assert np.all(np.abs(np.asarray(out) - f(a64, b64)) <= bound)
    dots = [t for t in thunks(f, a, b) if isinstance(t, ex.DotThunk)]
  assert dots and all(t.gemm is not None for t in dots)


def test_pooled_dots_leave_numpys_blas_thread_count_alone():
  """OpenBLAS's count is 1 only while ember's dots run (concurrent chunks once left it at 1
  for good: NumPy's own matmuls then ran on one core)."""
  found = blas_pool._openblas()
  if found is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  get = found[2]
  before = get()
  f = ember.jit(lambda a, b: a @ b)
  a, b = data((128, 784)), data((784, 512))
  for _ in range(10):
    f(a, b).block_until_ready()
  assert get() == before


def test_small_gram_products_keep_numpys_syrk():
  m = data((blas_pool.GRAM_ROWS, 200))     # one row block: nothing to split
  for f in (lambda x: x @ x.T, lambda x: x.T @ x):
    dots = [t for t in thunks(f, m) if isinstance(t, ex.DotThunk)]
    assert dots and all(t.gemm is None for t in dots)
    np.testing.assert_allclose(np.asarray(ember.jit(f)(m)), f(m.astype(np.float64)),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.usefixtures("blas_dots")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(300, 200), (1000, 77), (2 * 256 + 1, 40)])
def test_gram_products_split_over_the_pool(shape, dtype):
  """m @ m.T and m.T @ m above one row block: blocks of C's lower part on the pool, each
  mirrored, so C is exactly symmetric."""
  if blas_pool._gram_native() is None or host.num_threads() <= 1:
    pytest.skip("no OpenBLAS omatcopy, or one thread")
  m = data(shape, dtype)
  with ember.enable_x64(dtype == np.float64):
    for f, n in ((lambda x: x @ x.T, shape[0]), (lambda x: x.T @ x, shape[1])):
      if n <= blas_pool.GRAM_ROWS:
        continue
      out = np.asarray(ember.jit(f)(m))
      m64 = m.astype(np.float64)
      K = m.size // n
      bound = 4 * np.finfo(dtype).eps * np.sqrt(K) * f(np.abs(m64))
      assert out.dtype == dtype and np.all(np.abs(out - f(m64)) <= bound)
      assert np.array_equal(out, out.T)
      dots = [t for t in thunks(f, m) if isinstance(t, ex.DotThunk)]
      assert dots and all(isinstance(t.gemm, blas_pool.Gram) for t in dots)


@pytest.mark.parametrize("columns", [False, True])
def test_gram_units_give_the_same_bits_for_any_thread_count(columns):
  """However many units the lower part is cut into (one per row block on one thread, single
  tiles on many), every element comes from the same K-loop: the same bits, C symmetric."""
  if blas_pool._gram_native() is None:
    pytest.skip("no OpenBLAS omatcopy")
  n, K = 3 * blas_pool.GRAM_ROWS + 17, 70
  a = data((K, n) if columns else (n, K))
  outs = []
  for threads in (1, 2, 3, 5, 13):
    units = blas_pool.gram_units(n, threads)
    covered = sorted((b, j + t) for b, j0, tiles in units for t, j in enumerate([j0] * tiles))
    assert covered == [(b, j) for b in range(4) for j in range(b + 1)]   # each tile once
    c = np.full((n, n), np.nan, np.float32)
    gram = blas_pool.Gram(blas_pool._gram_native(), False, columns, n, K, n if columns else K,
                          4, threads=threads)
    gram.run(a.ctypes.data, a.ctypes.data, c.ctypes.data)
    outs.append(c)
  a64 = a.astype(np.float64)
  want = a64.T @ a64 if columns else a64 @ a64.T
  np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-4)
  assert np.array_equal(outs[0], outs[0].T)
  assert all(np.array_equal(o, outs[0]) for o in outs[1:])


@pytest.mark.usefixtures("blas_dots")
def test_gram_product_with_an_epilogue():
  """A Gram product feeding a fused epilogue (a dot output fusion) on the pooled path."""
  if blas_pool._gram_native() is None or host.num_threads() <= 1:
    pytest.skip("no OpenBLAS omatcopy, or one thread")
  m = data((600, 300))
  f = lambda m: jnp.tanh(m @ m.T * 0.01) + 1
  m64 = m.astype(np.float64)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(m)), np.tanh(m64 @ m64.T * 0.01) + 1,
                             **TOL[np.float32])
  fused = [t for t in thunks(f, m) if type(t).__name__ == "DotEpilogueThunk"]
  assert fused and all(isinstance(t.dot.gemm, blas_pool.Gram) for t in fused)


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("columns", [False, True])
def test_gram_chunks(threads, columns):
  """Any chunk count computes the same bits (a unit is the same calls whoever runs it)."""
  native = blas_pool._gram_native()
  if native is None:
    pytest.skip("NumPy is not linked to an OpenBLAS with omatcopy")
  n, K = 5 * blas_pool.GRAM_ROWS - 7, 33
  a = data((K, n) if columns else (n, K))
  outs = []
  for t in (1, threads):
    g = blas_pool.Gram(native, False, columns, n, K, a.shape[1], 4, threads=t)
    c = np.full((n, n), np.nan, np.float32)
    g.run(a.ctypes.data, 0, c.ctypes.data)
    outs.append(c)
  A = (a.T if columns else a).astype(np.float64)
  bound = 2e-7 * np.sqrt(K) * (np.abs(A) @ np.abs(A.T)) + 1e-7
  assert np.all(np.abs(outs[1] - A @ A.T) <= bound)
  assert np.array_equal(outs[0], outs[1])


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)])
@pytest.mark.parametrize("M,N,K", [(150, 97, 300), (97, 150, 300), (1, 400, 9000),
                                   (1001, 37, 400), (37, 1001, 400)])
def test_gemm_chunks(threads, trans_a, trans_b, M, N, K):
  """Any chunk count computes the same product (rows or columns of C per chunk)."""
  native = blas_pool._native()
  if native is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  a = data((K, M) if trans_a else (M, K))
  b = data((N, K) if trans_b else (K, N))
  g = blas_pool.Gemm(native, False, trans_a, trans_b, M, N, K, a.shape[1], b.shape[1], 4,
                     threads=threads)
  c = np.full((M, N), np.nan, np.float32)
  g.run(a.ctypes.data, b.ctypes.data, c.ctypes.data)
  A, B = (a.T if trans_a else a).astype(np.float64), (b.T if trans_b else b)
  # f32 sums of K terms: error bound ~ sqrt(K) eps * sum |a||b| (cancellation at K=9000)
  bound = 2e-7 * np.sqrt(K) * (np.abs(A) @ np.abs(B)) + 1e-7
  assert np.all(np.abs(c - A @ B) <= bound)
  assert g.nchunks == (1 if threads == 1 or 2 * M * N * K < blas_pool.MIN_SPLIT_FLOPS
                       else min(threads, g.outer))


@pytest.mark.usefixtures("blas_dots")
def test_pooled_dot_with_epilogue_and_blas_threads_untouched():
  """A dot output fusion (bias + relu) on the pooled path; NumPy's own matmul afterwards
  still works (the per-call BLAS thread count is restored)."""
  x, w, b = data((300, 200)), data((200, 256)), data((256,))
  f = lambda x, w, b: jnp.maximum(x @ w + b, 0.0)
  ref = np.maximum(x.astype(np.float64) @ w + b, 0.0)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x, w, b)), ref, **TOL[np.float32])
  assert any(type(t).__name__ == "DotEpilogueThunk" for t in thunks(f, x, w, b))
  np.testing.assert_allclose(x @ w, x.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)


# (lhs shape, rhs shape, ((lhs contracting), (rhs contracting))): dots that read as 2-D
# matrices without a copy, with several contracting dims (a convolution's (taps, channels),
# a kernel gradient's leading (batch, positions)), contracting dims at either end
MATRIX_DOTS = [((7, 9, 10, 9, 16), (9, 16, 33), ((3, 4), (0, 1))),
               ((16, 32, 9, 24), (16, 32, 40), ((0, 1), (0, 1))),
               ((5, 40, 3, 24), (40, 5, 40), ((1, 0), (2, 1))),
               ((200, 6, 7), (150, 6, 7), ((1, 2), (1, 2))),
               ((6, 7, 200), (6, 7, 150), ((0, 1), (0, 1)))]


@pytest.mark.usefixtures("blas_dots")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ls,rs,dims", MATRIX_DOTS)
def test_dots_with_several_contracting_dims_take_the_pooled_gemm(ls, rs, dims, dtype):
  if blas_pool._native() is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  a, b = data(ls, dtype), data(rs, dtype)
  f = lambda a, b: lax.dot_general(a, b, (dims, ((), ())))
  (lc, rc) = dims
  letters = "abcdefgh"
  ls_, rs_ = list(letters[:len(ls)]), list(letters[len(ls):len(ls) + len(rs)])
  for i, j in zip(lc, rc):
    rs_[j] = ls_[i]
  spec = "".join(ls_) + "," + "".join(rs_) + "->" + \
      "".join(c for k, c in enumerate(ls_) if k not in lc) + \
      "".join(c for k, c in enumerate(rs_) if k not in rc)
  with ember.enable_x64(dtype == np.float64):
    out = ember.jit(f)(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    K = int(np.prod([ls[i] for i in lc]))
    bound = 4 * np.finfo(dtype).eps * np.sqrt(K) * np.einsum(spec, np.abs(a64), np.abs(b64))
    assert out.dtype == dtype
    assert np.all(np.abs(np.asarray(out) - np.einsum(spec, a64, b64)) <= bound)
    dots = [t for t in thunks(f, a, b) if isinstance(t, ex.DotThunk)]
  assert dots and all(t.gemm is not None for t in dots)


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)])
@pytest.mark.parametrize("B,M,N,K", [(7, 40, 33, 300), (16, 144, 32, 256), (1, 97, 150, 300)])
def test_batched_gemm_chunks(threads, trans_a, trans_b, B, M, N, K):
  """One BLAS call per batch, any number of batches per chunk: every batch's product."""
  native = blas_pool._native()
  if native is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  a = data((B, K, M) if trans_a else (B, M, K))
  b = data((B, N, K) if trans_b else (B, K, N))
  g = blas_pool.BatchedGemm(native, False, trans_a, trans_b, B, M, N, K, a.shape[2],
                            b.shape[2], 4, threads=threads)
  c = np.full((B, M, N), np.nan, np.float32)
  g.run(a.ctypes.data, b.ctypes.data, c.ctypes.data)
  A = (np.swapaxes(a, 1, 2) if trans_a else a).astype(np.float64)
  Bm = (np.swapaxes(b, 1, 2) if trans_b else b).astype(np.float64)
  bound = 2e-7 * np.sqrt(K) * (np.abs(A) @ np.abs(Bm)) + 1e-7
  assert np.all(np.abs(c - A @ Bm) <= bound)
  assert g.nchunks == (1 if threads == 1 or 2 * B * M * N * K < blas_pool.MIN_SPLIT_FLOPS
                       else min(threads, B))


# (lhs shape, rhs shape, dimension numbers, einsum spec): batch dims leading in both
BATCHED_DOTS = [((8, 60, 70), (8, 70, 50), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
                ((4, 3, 50, 64), (4, 3, 40, 64), (((3,), (3,)), ((0, 1), (0, 1))),
                 "abik,abjk->abij"),
                ((16, 256, 144), (16, 256, 32), (((1,), (1,)), ((0,), (0,))),
                 "bki,bkj->bij")]


@pytest.mark.usefixtures("blas_dots")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ls,rs,dims,spec", BATCHED_DOTS)
def test_batched_dots_take_the_pooled_gemm(ls, rs, dims, spec, dtype):
  """A batched dot (attention's scores, a split kernel gradient) runs its batches on the
  pool, eager and jit against NumPy float64."""
  if blas_pool._native() is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  a, b = data(ls, dtype), data(rs, dtype)
  f = lambda a, b: lax.dot_general(a, b, dims)
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  K = ls[dims[0][0][0]]
  bound = 4 * np.finfo(dtype).eps * np.sqrt(K) * np.einsum(spec, np.abs(a64), np.abs(b64))
  with ember.enable_x64(dtype == np.float64):
    for out in (f(a, b), ember.jit(f)(a, b)):
      assert out.dtype == dtype
      assert np.all(np.abs(np.asarray(out) - np.einsum(spec, a64, b64)) <= bound)
    dots = [t for t in thunks(f, a, b) if isinstance(t, ex.DotThunk)]
  assert dots and all(isinstance(t.gemm, blas_pool.BatchedGemm) for t in dots)


@pytest.mark.usefixtures("blas_dots")
@pytest.mark.parametrize("ls,rs,dims,spec", [
    ((6, 60, 7), (6, 7, 50), ((0, 2), (0, 1)), "ijk,ikl->jl"),   # split around a free dim
    ((16, 32, 60), (32, 16, 50), ((0, 1), (1, 0)), "ijk,jil->kl")])  # pairs out of order
def test_dots_needing_a_copy_keep_numpy(ls, rs, dims, spec):
  """Contracting dims that do not read as one matrix dimension without a copy."""
  a, b = data(ls), data(rs)
  f = lambda a, b: lax.dot_general(a, b, (dims, ((), ())))
  dots = [t for t in thunks(f, a, b) if isinstance(t, ex.DotThunk)]
  assert dots and all(t.gemm is None for t in dots)
  a64, b64 = a.astype(np.float64), b.astype(np.float64)
  # rounding of K-term sums: ~ sqrt(K) eps * sum |a||b| (cancellation defeats rtol)
  bound = 4 * np.finfo(np.float32).eps * np.sqrt(512) * np.einsum(spec, np.abs(a64), np.abs(b64))
  assert np.all(np.abs(np.asarray(ember.jit(f)(a, b)) - np.einsum(spec, a64, b64)) <= bound)


@pytest.mark.usefixtures("blas_dots")
def test_numpy_matmul_dots_run_openblas_on_one_thread(monkeypatch):
  """A dot the pooled gemm does not take (a layout that needs a copy, a Gram of one block)
  runs NumPy's matmul with OpenBLAS's thread count 1 (its own threads stall on a loaded
  machine), restored after."""
  found = blas_pool._openblas()
  if found is None:
    pytest.skip("NumPy is not linked to an OpenBLAS")
  get, seen, matmul = found[2], [], np.matmul

  def spy(*args, **kw):
    seen.append(get())
    return matmul(*args, **kw)
  before = get()
  a, b, m = data((6, 60, 7)), data((6, 7, 50)), data((200, 300))   # a Gram of one block
  # contracting dims around a free one: no matrix view without a copy
  batched = ember.jit(lambda a, b: lax.dot_general(a, b, (((0, 2), (0, 1)), ((), ()))))
  gram = ember.jit(lambda m: m @ m.T)
  batched(a, b).block_until_ready(), gram(m).block_until_ready()   # compiled outside
  monkeypatch.setattr(np, "matmul", spy)
  got_batched, got_gram = np.asarray(batched(a, b)), np.asarray(gram(m))
  monkeypatch.undo()
  assert len(seen) >= 2 and set(seen) == {1}
  assert get() == before
  np.testing.assert_allclose(got_batched, np.einsum("ijk,ikl->jl", a.astype(np.float64), b),
                             **TOL[np.float32])
  np.testing.assert_allclose(got_gram, m.astype(np.float64) @ m.T, rtol=1e-5, atol=1e-4)


def test_dots_with_a_middle_batch_dim_and_integer_dots():
  a, b = data((40, 3, 50)), data((3, 50, 60))
  f = lambda a, b: jnp.einsum("ibj,bjk->bik", a, b)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(a, b)),
                             np.einsum("ibj,bjk->bik", a.astype(np.float64), b),
                             **TOL[np.float32])
  i, j = RNG.integers(-5, 5, (70, 80)).astype(np.int32), RNG.integers(-5, 5, (80, 90)).astype(np.int32)
  out = ember.jit(lambda i, j: i @ j)(i, j)
  assert out.dtype == np.int32
  np.testing.assert_array_equal(np.asarray(out), i @ j)


# ---------------------------------------------------------------------------------------
# Fusion: transpose(dot) -> swapped dot; column reductions stay kernel roots
# ---------------------------------------------------------------------------------------

def test_transposed_dot_is_swapped():
  d, x, w = data((128, 64)), data((128, 96)), data((96, 64))
  f = lambda d, x, w: w - 0.1 * (d.T @ x).T       # the backward pass's dW, as JAX writes it
  entry = ember.jit(f).lower(d, x, w).compile().as_text().split("ENTRY")[1]
  assert "transpose" not in entry, entry
  ref = w - 0.1 * (d.astype(np.float64).T @ x).T
  np.testing.assert_allclose(np.asarray(ember.jit(f)(d, x, w)), ref, **TOL[np.float32])
  # a dot with another user, or a 3-D one, is left alone (values only)
  g = lambda a, b: ((a @ b).T, a @ b + 1.0)
  a, b = data((7, 5)), data((5, 9))
  for o, r in zip(ember.jit(g)(a, b), g(a.astype(np.float64), b)):
    np.testing.assert_allclose(np.asarray(o), r, **TOL[np.float32])
  h = lambda a, b: jnp.swapaxes(jnp.einsum("bij,bjk->bik", a, b), 1, 2)
  a3, b3 = data((2, 4, 5)), data((2, 5, 3))
  np.testing.assert_allclose(np.asarray(ember.jit(h)(a3, b3)),
                             np.swapaxes(a3.astype(np.float64) @ b3, 1, 2), **TOL[np.float32])


@pytest.mark.parametrize("rows,separate", [(128, True), (16, True), (5, False)])
def test_column_reduction_stays_a_root(rows, separate):
  """`b - lr * sum(g, 0)` (an SGD bias update): the column sum is a kernel of its own
  (vectorized over the columns) unless it sums fewer than COLUMN_REDUCE_MIN_ROWS rows."""
  g, b = data((rows, 512)), data((512,))
  f = lambda g, b: b - 0.05 * jnp.sum(g, axis=0)
  entry = ember.jit(f).lower(g, b).compile().as_text().split("ENTRY")[1]
  assert (entry.count("fusion(") == 2) == separate, entry
  np.testing.assert_allclose(np.asarray(ember.jit(f)(g, b)),
                             b - 0.05 * g.astype(np.float64).sum(0), **TOL[np.float32])
  # 3-D, reducing the two leading dims; and a max-reduction
  g3 = data((4, rows, 8))
  f3 = lambda g: jnp.max(g, axis=(0, 1)) * 2.0
  np.testing.assert_allclose(np.asarray(ember.jit(f3)(g3)), g3.max((0, 1)) * 2.0,
                             **TOL[np.float32])


# ---------------------------------------------------------------------------------------
# The seed-001 MLP training step against a NumPy float64 reference
# ---------------------------------------------------------------------------------------

def _numpy_step(params, x, y, n):
  from mlp import INIT_LR, DECAY_RATE, DECAY_STEPS
  params = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
  hs, h = [x.astype(np.float64)], x.astype(np.float64)
  for w, b in params[:-1]:
    h = np.maximum(h @ w + b, 0.0)
    hs.append(h)
  logits = h @ params[-1][0] + params[-1][1]
  z = logits - logits.max(1, keepdims=True)
  logp = z - np.log(np.exp(z).sum(1, keepdims=True))
  loss = -np.mean(np.sum(logp * y, 1))
  delta = (np.exp(logp) * y.sum(1, keepdims=True) - y) / x.shape[0]
  grads = []
  for k in range(len(params) - 1, -1, -1):
    w, _ = params[k]
    grads.append((hs[k].T @ delta, delta.sum(0)))
    if k:
      delta = (delta @ w.T) * (hs[k] > 0)
  lr = INIT_LR * DECAY_RATE ** (n / DECAY_STEPS)
  return [(w - lr * dw, b - lr * db) for (w, b), (dw, db) in zip(params, grads[::-1])], loss


def test_mlp_training_step_matches_numpy():
  sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
  import mlp
  params = mlp.init_params(np.random.default_rng(0))
  x, y = next(mlp.batches(1))
  step = ember.jit(mlp.update)
  p, loss = step(params, x, y, 3)
  ref, ref_loss = _numpy_step(params, x, y, 3)
  assert loss.dtype == np.float32 and abs(float(loss) - ref_loss) < 1e-5 * abs(ref_loss)
  for (w, b), (rw, rb) in zip(p, ref):
    assert w.dtype == np.float32 and b.dtype == np.float32
    np.testing.assert_allclose(np.asarray(w), rw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(b), rb, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------
# Generated loops: double-buffered carries
# ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("length", [0, 1, 2, 3, 8])
def test_scan_carry_parities(length):
  """The result lands in either carry buffer (odd/even trip counts); carries of several
  dtypes, one passed through, two swapped each iteration."""
  x = data((33,)) + 2.0

  def f(x):
    def body(c, _):
      v, i, a, b, keep = c
      return (0.99 * v + jnp.sin(v), i + 1, b, a + 1.0, keep), None
    return lax.scan(body, (x, jnp.int32(0), jnp.float32(1.0), jnp.float32(5.0), x[:3]),
                    None, length=length)[0]
  v, i, a, b = x.astype(np.float64), 0, 1.0, 5.0
  for _ in range(length):
    v, i, a, b = 0.99 * v + np.sin(v), i + 1, b, a + 1.0
  out = ember.jit(f)(x)
  np.testing.assert_allclose(np.asarray(out[0]), v, rtol=1e-5, atol=1e-6)
  assert out[1].dtype == np.int32 and int(out[1]) == i
  assert float(out[2]) == a and float(out[3]) == b
  np.testing.assert_array_equal(np.asarray(out[4]), x[:3])
  [t] = loop_thunks(f, x) if length else [None]
  assert t is None or t.loop is not None


@pytest.mark.parametrize("shape", [(), (5,), (2, 3, 4)])
def test_while_newton_generated(shape):
  a = np.abs(data(shape)) + 0.5

  def newton(a):
    def body(s):
      x, _, n = s
      return 0.5 * (x + a / x), x, n + 1
    def cond(s):
      x, prev, _ = s
      return jnp.max(jnp.abs(x - prev)) > 1e-6 * jnp.max(x)
    return lax.while_loop(cond, body, (a, a + 1.0, 0))
  x, _, n = ember.jit(newton)(a)
  np.testing.assert_allclose(np.asarray(x), np.sqrt(a.astype(np.float64)), rtol=2e-6)
  assert x.dtype == np.float32 and x.shape == shape and 3 <= int(n) < 40
  [t] = loop_thunks(newton, a)
  assert t.loop is not None and t.native == [True, True]


def test_generated_loop_is_reentrant_across_calls():
  """The loop's buffers are reused: consecutive calls with other inputs stay correct."""
  f = ember.jit(lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 2.0 + i, x))
  for n in (0, 1, 4, 5):
    x = data((6,))
    ref = x.astype(np.float64)
    for i in range(n):
      ref = ref * 2.0 + i
    np.testing.assert_allclose(np.asarray(f(x, n)), ref, rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Loop sub-executables in the persistent cache
# ---------------------------------------------------------------------------------------

def loops(x):
  s = lax.scan(lambda c, _: (0.99 * c + jnp.sin(c), None), x, None, length=50)[0]
  w = lax.while_loop(lambda c: c[1] < 7, lambda c: (c[0] * 1.5 - 0.1, c[1] + 1), (s, 0))[0]
  inner = lambda c: lax.fori_loop(0, 3, lambda i, v: v + jnp.cos(v), c)   # nested loop
  return lax.cond(jnp.sum(w) > 0, inner, lambda c: -c, w)


def loops_ref(x):
  s = x.astype(np.float64)
  for _ in range(50):
    s = 0.99 * s + np.sin(s)
  for _ in range(7):
    s = s * 1.5 - 0.1
  if s.sum() > 0:
    for _ in range(3):
      s = s + np.cos(s)
    return s
  return -s


def test_cache_hit_of_loops_runs_no_llvm(cache, monkeypatch):
  x = data((40,)) * 0.1 + 1.0
  compilation._executables.clear()
  first = ember.jit(loops).lower(x).compile()
  np.testing.assert_allclose(np.asarray(first(x)), loops_ref(x), rtol=1e-4)
  assert [n for n in os.listdir(cache) if not n.startswith(".")]
  from ember._src.backends.cpu import compiler, tiering
  from ember._src.backends.cpu.codegen import kernels
  # earlier tests' background tier-ups run LLVM too: drop them (compiles for the persistent
  # cache never tier)
  tiering.drop_pending()
  calls = []

  def no_llvm(*a, **k):
    calls.append(a)
    raise AssertionError("a cache hit must not generate or optimize LLVM IR")
  with monkeypatch.context() as m:
    m.setattr(compiler, "_jit", no_llvm)
    m.setattr(kernels.KernelBuilder, "__init__", no_llvm)
    compilation._executables.clear()
    second = ember.jit(loops).lower(x).compile()
  assert calls == []
  np.testing.assert_allclose(np.asarray(second(x)), loops_ref(x), rtol=1e-4)
  cf = [t for t in second.runtime_executable().thunks
        if isinstance(t, control_flow.ControlFlowThunk)]
  assert len(cf) == 3 and all(all(t.native) for t in cf)
  assert any(t.loop is not None for t in cf)


def test_bad_recorded_sub_executable_is_recompiled(cache):
  """Recorded bytes that do not fit the body (a damaged entry) compile it afresh."""
  x = data((40,)) * 0.1 + 1.0
  compilation._executables.clear()
  c = ember.jit(loops).lower(x).compile()
  t = next(t for t in c.runtime_executable().thunks
           if isinstance(t, control_flow.ControlFlowThunk) and t.loop is not None)
  sub, bad = t.subs[1], b"\x02\x00\x00\x00{}"
  again = control_flow._Sub(sub.comp, sub.assignment, None, recorded=bad)
  assert again.exe is not None and again.serialized not in (None, bad)
  state = [np.full(sh.dims, 1, np.dtype(sh.dtype)) for sh in t.in_shapes]
  # (a body computes its donated state in place: each run gets arrays of its own)
  for a, b in zip(again([s.copy() for s in state]), sub([s.copy() for s in state])):
    np.testing.assert_array_equal(a, b)


# Loop-invariant carries: returned unchanged, never copied
# ---------------------------------------------------------------------------------------

def _sliced_regression(w, images, rows):
  """A fori_loop over row blocks of `images` (closed over: an unchanged carry element)."""
  def body(i, w):
    b = lax.dynamic_slice_in_dim(images, (i % 5) * rows, rows)
    return w - 0.01 * (b.T @ (b @ w))
  return lax.fori_loop(0, 7, body, w)


def _sliced_regression_ref(w, images, rows):
  w, images = w.astype(np.float64), images.astype(np.float64)
  for i in range(7):
    b = images[(i % 5) * rows:(i % 5 + 1) * rows]
    w = w - 0.01 * (b.T @ (b @ w))
  return w


@pytest.mark.parametrize("rows,features,generated", [(4, 6, True), (1000, 512, False)])
def test_invariant_carry_passes_through_without_copies(rows, features, generated):
  """The images the body closes over (JAX's mnist_vae epoch) are a carry element the body
  returns as it got it: read where it lives, never copied (no copy thunk), in the generated
  loop (small kernels) and in the loop over sub-executables (thread-pool kernels) alike."""
  images = data((5 * rows, features)) * 0.1
  w = data((features, 3))
  f = ember.jit(_sliced_regression, static_argnums=2)
  np.testing.assert_allclose(np.asarray(f(w, images, rows)),
                             _sliced_regression_ref(w, images, rows), rtol=1e-4, atol=1e-5)
  [t] = [t for t in f.lower(w, images, rows).compile().runtime_executable().thunks
         if isinstance(t, control_flow.ControlFlowThunk)]
  body = t.subs[1].exe
  k = [tuple(s.dims) for s in body.output_shapes].index(images.shape)
  assert t.state_modes[k] == "invariant"
  assert not [th for th in body.thunks if type(th) is ex.CopyThunk]
  assert (t.loop is not None) == generated


def test_carry_returned_at_another_position_is_copied():
  """Only element k returned as parameter k is invariant: a carry moved to another position
  or returned twice is copied, so no two elements share a buffer."""
  def f(a, b):
    body = lambda i, c: (c[1], c[0], c[0] + c[2], c[3], c[3])
    return lax.fori_loop(0, 5, body, (a, b, a, b, a))
  a, b = data((7,)), data((7,))
  out = [np.asarray(o) for o in ember.jit(f)(a, b)]
  c = [x.astype(np.float64) for x in (a, b, a, b, a)]
  for _ in range(5):
    c = [c[1], c[0], c[0] + c[2], c[3], c[3]]
  for o, r in zip(out, c):
    np.testing.assert_allclose(o, r, rtol=1e-6)
